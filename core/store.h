/*
 * store.h - the store object shared by the facade (store.c) and the modes
 * (slotmap.c today): topology, fabric, ring, metrics.
 *
 * Not for: mode internals; a mode keeps its own state behind its own pointer.
 */
#ifndef PC_STORE_H
#define PC_STORE_H

#include <pthread.h>

#include <peercache/pc_fabric.h>
#include <peercache/peercache.h>

#include "base/arena.h"
#include "placement/ring.h"

struct slotmap;
struct p2p;
struct tier;

/* Registered scratch memory, reused across calls and never held by more than one
 * call at a time: staging a client exposes for stage_put (peers READ it), landing
 * space for a batch's reads (local access only). */
struct store_stage {
	struct pc_region r;
	uint8_t *mem;
	size_t bytes;
	struct store_stage *next;
};

/* Caller memory registered for zero-copy payloads. */
struct store_buf {
	struct pc_region r;
	struct store_buf *next;
};

struct pc_store {
	struct pc_topology *topo;	/* owned copy */
	uint32_t self;			/* node index or PC_PEER_NONE */
	struct pc_fabric *fabric;
	bool owns_fabric;
	struct pc_env *env;
	struct ring *ring;		/* replaced whole on membership change */
	struct ring *retired;		/* earlier rings, freed at close (readers may hold them) */
	pthread_mutex_t member_lock;	/* serialises membership changes */
	struct slotmap *sm;		/* mode slotmap */
	struct p2p *p2p;		/* mode p2p */
	struct tier *tier;		/* the tiered pool this node serves, or NULL */
	pthread_mutex_t stage_lock;	/* guards the list only, never held across a call */
	struct store_stage *stages;	/* idle staging areas */
	bool payload_free;		/* headers only, pages not stored (simulator) */
	const struct pc_storage_ops *storage;	/* the disk backend; NULL: posix */
	void *backend_arg;		/* the fabric's and storage's backend argument */
	struct pc_metrics metrics;	/* updated with atomics */
	pthread_rwlock_t bufs_lock;
	struct store_buf *bufs;
	struct arena_pool arenas;	/* scratch for batch calls */
};

/*
 * What in-tree callers (the simulator, tests, benchmarks) hand a store beyond the
 * public options: their own environment and backends. Zero what you do not set.
 */
struct store_open_ext {
	struct pc_fabric *use_fabric;		/* an open fabric (not closed by the store) */
	struct pc_env *env;			/* NULL: the real clock */
	void *backend_arg;			/* for backends that take one (in-process world) */
	const struct pc_storage_ops *storage;	/* disk backend; NULL: files (posix) */
	struct ring *ring;			/* one built ring shared by many stores */
	bool payload_free;			/* keep slot headers only; a hit gives status
						 * and length, never bytes (data may be NULL) */
};

/* pc_store_open() with the in-tree extras; x may be NULL. */
int store_open(const struct pc_store_opts *o, const struct store_open_ext *x, struct pc_store **out);

#define METRIC_ADD(st, field, v) pc_stat_add(&(st)->metrics.field, (uint64_t)(v))

/* The store's counters, whole (pc_store_metrics() without the size check). */
void store_metrics(struct pc_store *st, struct pc_metrics *out);

/* Add a node to this store's ring or take it out (join, leave), in this store only
 * (pc_store_set_member also tells the peers). The ring is swapped whole; batches
 * that already took the old one finish with it. 0 or -errno. */
int store_set_member(struct pc_store *st, uint32_t node, bool member);

/* The current ring. */
static inline struct ring *store_ring(struct pc_store *st)
{
	return __atomic_load_n(&st->ring, __ATOMIC_ACQUIRE);
}

/* The registered region holding [p, p+len), or NULL. */
const struct pc_region *store_lreg_find(struct pc_store *st, const void *p, size_t len);

static inline const struct pc_region *store_lreg(struct pc_store *st, const void *p, size_t len)
{
	/* most stores register no buffers: no lock, no call for them */
	if (!__atomic_load_n(&st->bufs, __ATOMIC_ACQUIRE))
		return NULL;
	return store_lreg_find(st, p, len);
}

/* A fabric phase issued on behalf of a batch: counted as one round trip. */
int store_post(struct pc_store *st, struct pc_op *ops, size_t n);
int store_call(struct pc_store *st, struct pc_rpc *rpcs, size_t n);

/*
 * One request per peer, sent in one phase: a fixed-size header, then fixed-size
 * items in the order they are added. Count each peer's items in count[], build,
 * write each header at req[peer], add the items, store_call(rpcs, nr), read the
 * answers, fini. A peer whose request could not be allocated has req[peer] NULL
 * and store_fanout_item() gives NULL for it.
 */
struct store_fanout {
	uint32_t nn, nr;
	size_t hdr_len, item_len;
	uint32_t *count;		/* per peer: items (set before building) */
	uint32_t *filled;		/* per peer: items written */
	uint8_t **req;			/* per peer: header, then items */
	struct pc_rpc *rpcs;		/* nr requests, in peer order */
};

int store_fanout_init(struct store_fanout *f, uint32_t nr_peers, size_t hdr_len, size_t item_len);
void store_fanout_build(struct store_fanout *f, uint16_t opcode);
void *store_fanout_item(struct store_fanout *f, uint32_t peer);
void store_fanout_fini(struct store_fanout *f);

/* Scratch memory of at least bytes registered with access (PC_ACCESS_*): the
 * smallest idle area that fits, or a new one; NULL when out of memory. Give it back
 * when done (a few idle areas are kept, the rest freed; give takes NULL too). */
struct store_stage *store_stage_take(struct pc_store *st, size_t bytes, uint32_t access);
void store_stage_give(struct pc_store *st, struct store_stage *s);
/* Drop the idle areas (at close). */
void store_stages_free(struct pc_store *st);

#endif
