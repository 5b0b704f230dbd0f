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

struct pc_store {
	struct pc_topology *topo;	/* owned copy */
	uint32_t self;			/* node index or PC_PEER_NONE */
	struct pc_fabric *fabric;
	bool owns_fabric;
	struct pc_clock *clock;
	struct ring *ring;
	struct slotmap *sm;
	struct pc_metrics metrics;	/* updated with atomics */
};

#define METRIC_ADD(st, field, v) pc_stat_add(&(st)->metrics.field, (uint64_t)(v))

/* A fabric phase issued on behalf of a batch: counted as one round trip. */
int store_post(struct pc_store *st, struct pc_op *ops, size_t n);
int store_call(struct pc_store *st, struct pc_rpc *rpcs, size_t n);

#endif
