/*
 * store.h - the store facade's object: the shared services (store_svc.h), the mode
 * chosen at open, the tiered pool, and the internal open that in-tree callers (the
 * simulator, tests, benchmarks) use to bring their own environment and backends.
 *
 * Not for: what modes share with the store (store_svc.h), mode internals.
 */
#ifndef PC_STORE_H
#define PC_STORE_H

#include <pthread.h>

#include <peercache/pc_fabric.h>
#include <peercache/peercache.h>

#include "base/latency.h"
#include "mode.h"
#include "proto.h"
#include "store_svc.h"

struct members;
struct registry_ops;
struct tier;

/* Opens the fabric a store runs on, by backend name (NULL: the topology's protocol,
 * with its fallback). 0, or -errno with a one-line reason in err. */
typedef int store_fabric_opener(const char *name, const struct pc_fabric_params *p,
				struct pc_fabric **out, char *err, size_t errlen);

/*
 * Everything a store takes from outside the core. pc_store_open() fills it with the
 * built-in backends (backends/builtin.c); in-tree callers set what they bring and
 * leave the rest to builtin_store_open(). store_open() itself needs env, storage and
 * open_fabric (or use_fabric).
 */
struct store_deps {
	struct pc_env *env;			/* time, randomness, tasks */
	const struct pc_storage_ops *storage;	/* disk backend for spills and tiers */
	store_fabric_opener *open_fabric;
	struct pc_fabric *use_fabric;		/* an open fabric (not closed by the store) */
	void *backend_arg;			/* for backends that take one (in-process world) */
	struct ring *ring;			/* one built ring shared by many stores */
	bool payload_free;			/* keep slot headers only; a hit gives status
						 * and length, never bytes (data may be NULL) */
	const struct registry_ops *registry;	/* store.discovery etcd (member_registry.h) */
	bool no_heartbeats;			/* run no membership task (the simulator: a
						 * task that never ends would keep its event
						 * queue from draining) */
};

enum store_batch_op { STORE_OP_GET, STORE_OP_SET, STORE_OP_EXISTS, STORE_NR_BATCH_OPS };

struct pc_store {
	struct store_svc svc;		/* first: what the mode and the tier share */
	const struct mode_ops *mode_ops;
	struct store_mode *mode;
	struct tier *tier;		/* the tiered pool this node serves, or NULL */
	struct members *members;	/* who is in the ring (member.c) */
	bool owns_fabric;
	bool serving;			/* peers' requests reach store_rpc */
	/* Rings replaced by membership changes, until no reader can hold them
	 * (store_ring_enter): retired in this epoch, and in the one before. */
	struct ring *retired, *retired_before;
	pthread_mutex_t member_lock;	/* serialises membership changes */
	/* Counters the facade keeps for metrics (metrics/expose.c renders them). */
	struct latency_hist lat[STORE_NR_BATCH_OPS];	/* batch calls, by op */
	uint64_t rpc_served[PROTO_NR_RPCS];	/* peers' requests, by opcode */
	uint64_t rpc_failed[PROTO_NR_RPCS];	/* ... answered with an error */
	uint64_t member_changes;	/* ring swaps: the membership generation */
	pthread_mutex_t occ_lock;	/* the occupancy snapshot below */
	uint64_t occ_at_ns;		/* when it was taken (0: never) */
	struct store_occupancy occ;
};

/* Open a store on the given environment and backends (store_env above). */
int store_open(const struct pc_store_opts *o, const struct store_deps *d, struct pc_store **out);

/* A get, then a set of the pages that missed (with prefix, of every page from the
 * first miss on) as one call, for a caller with nothing to do between the two (the
 * simulator without its time model): mode.h's lookup_fill, counted as the batch
 * calls it stands for. The number of hits, or -errno having done nothing: make the
 * two batch calls then. owners: NULL, or n entries for each page's owner (its node
 * index), written on success (in part, or not at all, on failure). */
int store_lookup_fill(struct pc_store *st, struct pc_page *pages, size_t n, bool prefix,
		      uint32_t *owners);

/* The store's counters, whole (pc_store_metrics() without the size check). */
void store_metrics(struct pc_store *st, struct pc_metrics *out);

/* What this node's share of the cache takes (zero for a client). */
void store_footprint(struct pc_store *st, struct store_footprint *out);

/* The store's current ring (who owns which key now). */
static inline struct ring *store_ring_of(struct pc_store *st)
{
	return store_ring(&st->svc);
}

/* ---- metrics/expose.c */

/* Append the store's metrics to out in the Prometheus text exposition format
 * (version 0.0.4). Slot occupancy is recounted at most once a second. 0 or -ENOMEM. */
int store_expose(struct pc_store *st, struct pc_msg *out);

/* Whether the store is ready to serve: 0, or -errno with a one-line reason in why
 * (a node not serving, or not in its own ring). */
int store_ready(struct pc_store *st, const char **why);

/* ---- store_rpc.c */

/* Every RPC a peer sends this node: to membership, the tiered pool or the mode. */
int store_rpc(void *arg, uint32_t from, uint16_t opcode, const void *req, size_t len,
	      struct pc_msg *resp);

/* Whether from may send opcode with a body of len bytes: 0, -EPERM (a node's
 * request from a client or a tool), -EMSGSIZE (larger than the opcode allows) or
 * -EOPNOTSUPP (no such request). */
int store_rpc_allowed(uint32_t from, uint16_t opcode, size_t len);

/* The largest request body opcode takes (0 for one that takes none or is unknown):
 * what a backend may buffer for it (pc_fabric.rpc_max_req; arg unused). */
size_t store_rpc_max_req(void *arg, uint16_t opcode);

/* ---- member.c */

/* Add a node to this store's ring or take it out (join, leave) as if told, in this
 * store only (pc_store_set_member also tells the peers). 0 or -errno. */
int store_set_member(struct pc_store *st, uint32_t node, bool member);

/* Free a list of retired rings (member.c). */
void store_rings_free(struct ring *list);

#endif
