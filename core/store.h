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

#include "ring.h"

struct slotmap;

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
	struct pc_clock *clock;
	struct ring *ring;
	struct slotmap *sm;
	bool payload_free;		/* headers only, pages not stored (simulator) */
	struct pc_metrics metrics;	/* updated with atomics */
	pthread_rwlock_t bufs_lock;
	struct store_buf *bufs;
};

#define METRIC_ADD(st, field, v) pc_stat_add(&(st)->metrics.field, (uint64_t)(v))

/* The registered region holding [p, p+len), or NULL. */
const struct pc_region *store_lreg(struct pc_store *st, const void *p, size_t len);

/* A fabric phase issued on behalf of a batch: counted as one round trip. */
int store_post(struct pc_store *st, struct pc_op *ops, size_t n);
int store_call(struct pc_store *st, struct pc_rpc *rpcs, size_t n);

#endif
