/*
 * store_svc.h - what a store shares with its mode and its tiered pool: the topology,
 * this node's index, the fabric and env, the ring, the counters, and the services
 * every mode uses (a phase of ops or RPCs counted as one round trip, one request
 * per peer, registered scratch memory, the caller's registered buffers, scratch
 * arenas).
 *
 * Not for: the facade (store.c), a mode's own state (behind struct store_mode), or
 * membership changes (store_rpc.c swaps the ring; modes only read it).
 */
#ifndef PC_STORE_SVC_H
#define PC_STORE_SVC_H

#include <pthread.h>

#include <peercache/pc_env.h>
#include <peercache/pc_fabric.h>
#include <peercache/pc_storage.h>
#include <peercache/peercache.h>

#include "base/arena.h"
#include "placement/ring.h"

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

struct store_svc {
	struct pc_topology *topo;	/* the store's own copy */
	uint32_t self;			/* node index or PC_PEER_NONE */
	struct pc_fabric *fabric;
	struct pc_env *env;
	const struct pc_storage_ops *storage;	/* the disk backend */
	void *backend_arg;		/* the fabric's and storage's backend argument */
	bool payload_free;		/* headers only, pages not stored (simulator) */
	bool serial;			/* pc_env_serial(env): plain adds for the counters */
	struct ring *ring;		/* replaced whole on membership change (member.c) */
	uint32_t ring_epoch;		/* readers of ring (store_ring_enter) count ... */
	uint64_t ring_readers[2];	/* ... here by epoch, so retired rings can go */
	struct pc_metrics metrics;	/* store_stat_add */
	pthread_mutex_t stage_lock;	/* guards the list only, never held across a call */
	struct store_stage *stages;	/* idle staging areas */
	pthread_rwlock_t bufs_lock;
	struct store_buf *bufs;
	struct arena_pool arenas;	/* scratch for batch calls */
};

/* Locks and arenas of a zeroed svc; fini frees the staging areas and unregisters
 * the caller's buffers too. */
void store_svc_init(struct store_svc *st);
void store_svc_fini(struct store_svc *st);

/* Add to a counter of the store's: atomically, unless every thread of the store is
 * one (serial). */
static inline void store_stat_add(const struct store_svc *st, uint64_t *c, uint64_t v)
{
	if (st->serial)
		*c += v;
	else
		pc_stat_add(c, v);
}

#define METRIC_ADD(st, field, v) store_stat_add((st), &(st)->metrics.field, (uint64_t)(v))

/*
 * Who reads the ring holds a pass: every batch, every RPC a node serves, the
 * membership task's tick, background jobs. A ring replaced by a membership change
 * is freed once no pass taken before the change is left (member.c reclaims them: two
 * epochs, so a node whose membership changes all day keeps two rings at most, not
 * one per change). store_ring() is only called inside a pass.
 */
static inline unsigned store_ring_enter(struct store_svc *st)
{
	unsigned e = __atomic_load_n(&st->ring_epoch, __ATOMIC_SEQ_CST) & 1;

	if (st->serial)
		st->ring_readers[e]++;
	else
		__atomic_fetch_add(&st->ring_readers[e], 1, __ATOMIC_SEQ_CST);
	return e;
}

static inline void store_ring_exit(struct store_svc *st, unsigned pass)
{
	if (st->serial)
		st->ring_readers[pass]--;
	else
		__atomic_fetch_sub(&st->ring_readers[pass], 1, __ATOMIC_SEQ_CST);
}

/* The current ring. */
static inline struct ring *store_ring(struct store_svc *st)
{
	return __atomic_load_n(&st->ring, __ATOMIC_ACQUIRE);
}

/* A fabric phase issued on behalf of a batch: counted as one round trip. A call that
 * fails as a whole gives every op (or RPC) its error. */
int store_post(struct store_svc *st, struct pc_op *ops, size_t n);
int store_call(struct store_svc *st, struct pc_rpc *rpcs, size_t n);

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
struct store_stage *store_stage_take(struct store_svc *st, size_t bytes, uint32_t access);
void store_stage_give(struct store_svc *st, struct store_stage *s);

/* Register caller memory for zero-copy payloads (local access only: peers can never
 * address it); forget it. 0 or -errno. */
int store_buf_add(struct store_svc *st, void *buf, size_t len);
void store_buf_remove(struct store_svc *st, void *buf);

/* The registered caller region holding [p, p+len), or NULL. */
const struct pc_region *store_lreg_find(struct store_svc *st, const void *p, size_t len);

static inline const struct pc_region *store_lreg(struct store_svc *st, const void *p, size_t len)
{
	/* most stores register no buffers: no lock, no call for them */
	if (!__atomic_load_n(&st->bufs, __ATOMIC_ACQUIRE))
		return NULL;
	return store_lreg_find(st, p, len);
}

#endif
