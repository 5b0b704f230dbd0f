/*
 * run.h - one simulation: a topology, a workload and a seed in; hit rates, latency
 * percentiles, utilisations and a time series out. The cluster is the library's own
 * stores (one per node) on the simulated fabric, storage and envs; requests arrive
 * from the workload and run as processes on the node they are given to (round
 * robin over live nodes): a batch_get of the request's pages, then a batch_set of the
 * pages that missed (the engine computed them), as a serving engine does.
 *
 * Not for: sweeps, seeds and files (pcsim.c).
 */
#ifndef PC_SIM_RUN_H
#define PC_SIM_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "config/topology.h"
#include "hist.h"
#include "workload/workload.h"

struct pc_store;

#define RUN_MAX_EVENTS 32
/* Requests in flight at once before a run stops as overloaded (each is a process
 * with its own stack: an open-loop rate the cluster cannot serve grows without end). */
#define RUN_MAX_INFLIGHT 16384u

struct run_event {
	uint64_t t_ns;
	uint32_t node;
	bool join;			/* false: the node leaves */
	bool kill;			/* the node crashes: nobody is told, the others'
					 * heartbeats find out (a later join restarts it) */
};

struct run_cfg {
	const struct pc_topology *topo;
	struct wl_spec wl;
	uint64_t seed;
	bool timing;			/* false: hit rates only, no time model */
	bool payload_free;
	bool batch_calls;		/* without timing too, a request's lookup and
					 * publishing are two batch calls (as timed), never
					 * one store_lookup_fill: for comparing the two */
	bool heartbeats;		/* membership's heartbeats without a kill event */
	uint64_t duration_ns;		/* stop arrivals after this; 0: workload's end */
	uint64_t interval_ns;		/* time series step; 0: no series */
	uint32_t max_inflight;		/* stop as overloaded past this; 0: RUN_MAX_INFLIGHT */
	bool pinned;			/* every request arrives at node pin_node (one
					 * serving engine), not round robin */
	uint32_t pin_node;
	bool closed_loop;		/* the next request arrives when one is done (one
					 * engine thread back to back), not at its time */
	uint64_t key_base;		/* added to every page id: runs on one real
					 * cluster kept apart (pccalibrate) */
	struct run_event events[RUN_MAX_EVENTS];
	uint32_t nr_events;
	/* called after each request with its pages' lookup statuses (0 hit) */
	void (*on_request)(void *arg, uint64_t t_ns, const uint64_t *pages, const int *status,
			   uint32_t n, uint64_t latency_ns);
	void *on_request_arg;
	/* called now and then with the fraction done (by requests or time) */
	void (*progress)(void *arg, double frac, uint64_t requests);
	void *progress_arg;
};

struct run_point {			/* a time-series interval that served requests */
	uint64_t k;			/* which: it starts at k * interval_ns */
	uint64_t requests, pages, page_hits, tokens, token_hits;
	uint64_t p50_ns, p99_ns;	/* its requests' lookup latency */
};

struct run_result {
	uint64_t requests, pages, page_hits, tokens, token_hits;
	uint64_t pages_host, pages_disk, pages_miss;	/* every page looked up, by where it was */
	struct hist lat;		/* per-request lookup latency, ns */
	double nic_util_mean, nic_util_max, nvme_util_mean, nvme_util_max;
	double evictions, demotions, promotions;	/* totals */
	double bytes_moved;
	double member_rpcs, member_bytes;	/* membership's RPCs and bytes (both ways) */
	double load_max_over_mean;	/* page lookups per owner node: max / mean */
	double sim_s, wall_s;
	double run_wall_s;		/* wall time of the run itself, without set-up */
	uint64_t events;		/* the engine's events (the simulator's own cost) */
	uint64_t one_call;		/* requests decided in one store call (without
					 * timing: store_lookup_fill), not two batch calls */
	uint64_t slot_bytes;		/* cluster slot memory (nominal) */
	uint64_t mem_bytes;		/* what the slot regions really take here */
	struct run_point *series;	/* in time order; intervals without requests left
					 * out, so a trace's gaps cost nothing */
	size_t nr_points, series_cap;
};

int run_sim(const struct run_cfg *cfg, struct run_result *out, char *err, size_t errlen);
/* The cluster of cfg (its topology, timing and payload settings; no workload) with
 * fn(store, arg) as a process on one node, in virtual time: for benchmarks that run
 * the same code on a real store (pccalibrate). The stores are closed after fn. */
typedef void run_node_fn(struct pc_store *st, void *arg);
int run_on_node(const struct run_cfg *cfg, uint32_t node, run_node_fn *fn, void *arg, char *err,
		size_t errlen);
void run_result_free(struct run_result *r);

#endif
