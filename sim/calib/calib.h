/*
 * calib.h - the simulator's model fitted to a real cluster, and checked on workloads
 * it was not fitted on.
 *
 * A calibration runs a fixed set of micro-benchmarks (batches of gets and sets of
 * some page and batch sizes, on pages one peer owns, the node's own, or every node's)
 * on one node of a real cluster, then the same benchmark code on the same node of
 * the simulated cluster.
 * An uncontended batch's simulated time is affine in the model's parameters:
 *   T = a_L * latency + a_B * (8 / gbps) + a_O * op_us + a_M * (1 / memcpy_gbps)
 * (each phase of a get or set is a round trip of latency each way, its bytes at the
 * rail's rate, op_us for each op at the ports, own pages copied at memcpy_gbps), so
 * the coefficients come from simulating at a base point and moving each parameter
 * alone, and the parameters from a non-negative least squares fit of the relative
 * errors over every benchmark. Which measurement pins which parameter: batches of 1
 * page the latency, many small pages op_us, the node's own pages memcpy_gbps. The
 * rail's rates are not fitted but measured (calib_byte_costs): what the largest
 * batch of the largest page takes beyond the same batch of the smallest, a get's for
 * READs (gbps) and a set's for WRITEs (write_gbps).
 *
 * The model's waits are exact where a real host's vary: nodes.jitter stretches the
 * simulated ones (sim_env_stretch), and its value is the one whose simulated cases
 * spread as the measured ones do (the 90th percentile against the median, over the
 * store cases), found by a search on that one key once the others are fitted.
 *
 * The disk cases time batches of block reads and writes through the storage backend
 * the node spills with (a posix file with O_DIRECT on nodes[].nvme.path; in the
 * simulator the node's NVMe model, whose time is affine in its latency, its time per
 * byte read and written and its time per command, four more variables of the same fit).
 * The rpc cases time a request a peer hands to a worker thread (a promotion of keys it
 * does not hold: no disk read), which pins nodes.rpc_us, the hand-off there and back.
 * The idle cases time a get of one peer page after the node slept, gaps of 25 us to
 * 1.6 ms (the peer idles as long): how much longer than back to back it takes, as
 * steps from nothing to nodes.nap_us at gaps over nodes.nap_idle_us and to
 * nodes.wake_us over nodes.idle_us, fitted apart from the rest (the wake-up of a
 * host that idled, which the affine model has not got).
 *
 * Validation replays a workload on the real node (one request at a time, a
 * batch_get timed, then a batch_set of the misses, as the simulator's run.c serves
 * it) and simulates it with the fitted model, requests pinned to the same node.
 *
 * Not for: the command line (pccalibrate.c).
 */
#ifndef PC_SIM_CALIB_H
#define PC_SIM_CALIB_H

#include <stdbool.h>
#include <stdint.h>

#include <peercache/peercache.h>

#include "config/topology.h"
#include "workload/workload.h"

#define CALIB_MAX_CASES 64
#define CALIB_MAX_BATCH 128
#define CALIB_DISK_BATCH 16
#define CALIB_NR_PARAMS 11
#define CALIB_MAX_FORWARD 64		/* store_forward's and segment_forward's largest */
#define CALIB_RPC_KEYS 16		/* keys in the larger rpc case's request */
#define CALIB_NR_GAPS 7			/* idle cases: gaps of 25 us to 1.6 ms */

enum calib_op {
	CALIB_GET, CALIB_SET,			/* batch calls of the store */
	CALIB_DISK_READ, CALIB_DISK_WRITE,	/* batches of block I/O on the node's disk */
	CALIB_RPC,				/* a peer's request that it hands to a worker
						 * (a promotion of absent keys: batch keys) */
	CALIB_IDLE,				/* a get of one peer's page after the node
						 * slept gap_us, and the peer idled as long */
};

enum calib_where {
	CALIB_PEER,			/* pages of one peer */
	CALIB_OWN,			/* the node's own pages */
	CALIB_SPREAD,			/* pages of every node in turn, own included */
};

struct calib_case {
	enum calib_op op;
	uint32_t page;			/* bytes */
	uint32_t batch;			/* pages */
	enum calib_where where;
	uint32_t gap;			/* CALIB_IDLE: the gap's index, shortest first */
	double gap_us;			/* and the gap the real node slept (median): a
					 * sleep outlasts what it asks by a timer's
					 * wake-up; the simulation sleeps the same */
	double real_us, sim_us;		/* medians: measured, and simulated at the fit */
	double real_p90_us, sim_p90_us;	/* 90th percentiles, the same */
};

struct calib_params {			/* the model keys a calibration sets */
	double latency_us;		/* nodes.rails.latency_us */
	double gbps;			/* nodes.rails.gbps */
	double write_gbps;		/* nodes.rails.write_gbps: gbps / write_cost */
	double op_us;			/* nodes.rails.op_us */
	double store_forward;		/* nodes.rails.store_forward */
	double segment_forward;		/* nodes.rails.segment_forward */
	double memcpy_gbps;		/* nodes.memcpy_gbps */
	double nvme_latency_us;		/* nodes.nvme.latency_us */
	double read_mbps, write_mbps;	/* nodes.nvme.read_mbps, write_mbps */
	double iops;			/* nodes.nvme.iops */
	double jitter;			/* nodes.jitter */
	double rpc_us;			/* nodes.rpc_us */
	double wake_us, idle_us;	/* nodes.wake_us, nodes.idle_us */
	double nap_us, nap_idle_us;	/* nodes.nap_us, nodes.nap_idle_us */
};

struct calib {
	struct calib_case cases[CALIB_MAX_CASES];
	uint32_t nr_cases;
	bool disk;			/* the disk cases ran: the nvme keys are fitted */
	uint32_t reps;			/* timed batches per case */
	struct calib_params fit;
	double read_byte_us;		/* the rail's time per byte read, from the cases
					 * (calib_fit; 0: fitted with the rest) */
	double write_cost;		/* and a WRITE's byte over a READ's */
	double rms_error;		/* relative, over the cases, at the fit */
	double max_error;
};

/* "peer", "own", "all"; "get", "set", "read", "write", "rpc"; a case's pages: its
 * where, "disk", or for an idle case its gap (written into buf) */
const char *calib_where_name(enum calib_where w);
const char *calib_op_name(enum calib_op op);
const char *calib_case_pages(const struct calib_case *k, char *buf, size_t len);

/* An idle case's gap, us: as slept on the real node once measured, else as asked. */
double calib_case_gap_us(const struct calib_case *k);

/* The benchmark cases: for each page size, gets and sets of each batch size of one
 * peer's pages, and batches of the largest size of the node's own pages and
 * of every node's (gets and sets); with disk, reads and writes of one block and of
 * CALIB_DISK_BATCH blocks of each page size on the node's nvme.path; then two rpc
 * cases, of 1 and CALIB_RPC_KEYS keys, and the idle cases of the first page size.
 * -EINVAL for a batch of 0 or over CALIB_MAX_BATCH, -E2BIG for more than
 * CALIB_MAX_CASES cases. */
int calib_cases(struct calib *c, const uint32_t *pages, uint32_t npages, const uint32_t *batches,
		uint32_t nbatches, bool disk, uint32_t reps);

/* The page sizes a calibration benchmarks unless told: every size class (of nr, in
 * ascending order) when their cases fit CALIB_MAX_CASES with nbatches batch sizes,
 * else the smallest, the largest and classes evenly spaced between, as many as fit
 * (at least the smallest). Fitting the sizes a workload's pages fall between, not
 * below, is what keeps a prediction of another size an interpolation. Returns how
 * many it wrote to pages (room for nr). */
uint32_t calib_default_pages(const uint64_t *classes, uint32_t nr, uint32_t nbatches, bool disk,
			     uint32_t *pages);

/* The rail's time per byte of a READ and a WRITE from c's measured cases: how much
 * longer a get and a set of one peer's pages at the largest batch take with the
 * largest page than with the smallest, per byte. Both times are the same ops and
 * round trips, so the difference is what the bytes cost; a page read lands in the
 * reader's buffer, a page written in the peer's slot, and on tcp the two differ.
 * Sets c->read_byte_us (us per byte) and c->write_cost (a WRITE's byte over a
 * READ's); without two page sizes, or where a difference is not positive, 0 (the
 * fit finds the rate) and 1. calib_fit calls it. */
void calib_byte_costs(struct calib *c);

/* Run the benchmarks on a real store (a node of a running cluster, not a client):
 * fills real_us. 0, or -errno with a line in err (a get that missed, no peer). */
int calib_measure(struct pc_store *st, struct calib *c, char *err, size_t errlen);

/* How far the machine moved since c was measured: c's gets and sets of one peer's
 * pages of the first size measured again, each as a ratio to its time in c. */
struct calib_drift {
	uint32_t n;			/* cases measured again; 0: none to measure */
	uint32_t page;			/* their page size */
	double lo, median, hi;		/* the ratios */
};

/* 0, or -errno with a line in err. */
int calib_drift(struct pc_store *st, const struct calib *c, struct calib_drift *d, char *err,
		size_t errlen);

/* Simulate the cases on node `node` of topology t with the keys p (calib_apply'd to
 * t): fills sim_us and sim_p90_us. For the fit (calib_fit.c). */
int calib_simulate(struct pc_topology *t, uint32_t node, struct calib *c,
		   const struct calib_params *p, char *err, size_t errlen);

/* Fit the model to real_us: simulates the cases on node `node` of (a copy of)
 * topology t, fills fit, sim_us and the errors. */
int calib_fit(const struct pc_topology *t, uint32_t node, struct calib *c, char *err,
	      size_t errlen);

/* The wake-up's keys (nodes.nap_us, nap_idle_us, wake_us, idle_us) from the idle
 * cases' real_us and gaps against the back-to-back get's, on nodes that poll for
 * poll_us before their threads sleep (store.tcp_poll_us on tcp, else 0): part of
 * calib_fit. */
void calib_fit_wake(struct calib *c, double poll_us);

/* Set the model keys of every node and rail of t (the nvme keys with disk, on the
 * nodes that have one). */
void calib_apply(struct pc_topology *t, const struct calib_params *p, bool disk);

/* What one workload did on the real node and in the simulator. */
struct calib_check {
	char spec[512];
	uint64_t requests;
	double real_p50_us, real_p99_us, real_pages_s, real_hit;	/* mean of two replays */
	double spread_p50, spread_p99, spread_pages_s;	/* |first - second| / mean */
	double sim_p50_us, sim_p99_us, sim_pages_s, sim_hit;
	/* where a request's time goes: its get and its set, means per request */
	double real_get_us, real_set_us, sim_get_us, sim_set_us;
};

/* Replay wl twice on the real store (node `node` of t; the second time on other
 * keys: how far the real cluster is from itself), then simulate it on t as it is
 * (calibrated by the caller), requests back to back in both (run_cfg.closed_loop):
 * one engine thread. Keys are the workload's page ids plus key_base, in the
 * simulator and the first replay. Throughput is pages looked up per second of the
 * whole replay, gets and sets; the mean get and set per request say which of the
 * two a throughput error comes from. */
int calib_validate(struct pc_store *st, const struct pc_topology *t, uint32_t node,
		   const struct wl_spec *wl, uint64_t key_base, struct calib_check *out, char *err,
		   size_t errlen);

/* The calibration file: comments naming the machine, date, commit and cluster, a
 * `calibration:` section with the fit's quality and every case, and `set:` with the
 * model keys in --set form. */
int calib_write(const char *path, const struct calib *c, const struct pc_topology *t,
		const char *topology_path, char *err, size_t errlen);

/* Apply a calibration file's `set:` keys to t (pcsim --calibration). 0, or -errno
 * with "FILE:LINE: ..." in err. */
int calib_read(const char *path, struct pc_topology *t, char *err, size_t errlen);

#endif
