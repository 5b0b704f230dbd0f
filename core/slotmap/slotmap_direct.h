/*
 * slotmap_direct.h - slots this node can address as memory: its own, and peers' that
 * the fabric maps (the in-process world, the simulator without a time model).
 *
 * Not for: the paths that use them (slotmap_read.c, slotmap_write.c, slotmap_exists.c).
 */
#ifndef PC_SLOTMAP_DIRECT_H
#define PC_SLOTMAP_DIRECT_H

#include "slotmap_int.h"

#define SM_DIRECT_ACCESS (PC_ACCESS_REMOTE_READ | PC_ACCESS_REMOTE_WRITE | PC_ACCESS_REMOTE_ATOMIC)

/* sm_direct's answer when the cache does not hold one for this epoch. */
uint8_t *sm_direct_fill(struct slotmap *sm, uint64_t epoch, const struct sm_layout *lay, int c);

/*
 * The memory of class c of lay's node when this node can address it directly: its
 * own slots, or a peer's that the fabric maps (the in-process world, the simulator
 * without a time model). Such memory is read and written as the owner does its own,
 * under the seqlock, with the same gate and the same choice of way, so a key hits or
 * misses alike either way. NULL: use ops.
 *
 * The answer is kept in the layout with the fabric's map epoch it was got at and
 * stands while the epoch does (asking the fabric per owner per batch would be a
 * large share of a simulated lookup); sm_direct_fill gets and stores it. A pass reads the epoch once
 * (sm_direct_epoch) and asks per key (sm_direct).
 */
static inline uint64_t sm_direct_epoch(struct slotmap *sm)
{
	struct pc_fabric *f = sm->st->fabric;

	if (!f->maps)	/* a fault shim clears maps: its faults are in ops */
		return 0;
	return __atomic_load_n(f->map_epoch, __ATOMIC_ACQUIRE);
}

static inline uint8_t *sm_direct(struct slotmap *sm, uint64_t epoch, const struct sm_layout *lay,
				 int c)
{
	const struct sm_direct *d = &lay->cls[c].direct;

	if (lay == sm->own)
		return sm->mem[c];
	if (!epoch)
		return NULL;
	if (__atomic_load_n(&d->epoch, __ATOMIC_ACQUIRE) == epoch)
		return __atomic_load_n(&d->mem, __ATOMIC_RELAXED);
	return sm_direct_fill(sm, epoch, lay, c);
}

/* Make the entry of node's class c stand for this epoch (when the node's layout is
 * known); false when those keys are not in place now (struct sm_near's cl NULL). */
bool sm_near_fill(struct slotmap *sm, uint64_t epoch, uint32_t node, uint32_t c);

/* Forget node's entries: its layout was dropped. */
void sm_near_drop(struct slotmap *sm, uint32_t node);

/* The entry of node's class c. */
static inline struct sm_near *sm_near_at(struct slotmap *sm, uint32_t node, uint32_t c)
{
	return &sm->near[(size_t)c * sm->st->topo->nr_nodes + node];
}

/* The topology's class for a page of len bytes when there are several (0: of
 * unknown length, which names none of them), or -1. */
static inline int sm_near_class(struct slotmap *sm, uint64_t len)
{
	const struct pc_store_cfg *cfg = &sm->st->topo->store;

	for (uint32_t c = 0; len && c < cfg->nr_classes; c++)
		if (cfg->size_classes[c] >= len)
			return (int)c;
	return -1;
}

/* A copy of entry e that stands for this epoch (the seqlock: read, then checked
 * whole); false when it is being written or stands for another epoch. */
static inline bool sm_near_read(const struct sm_near *e, uint64_t epoch, struct sm_near *out)
{
	uint64_t s = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);

	out->epoch = __atomic_load_n(&e->epoch, __ATOMIC_RELAXED);
	out->cl = __atomic_load_n(&e->cl, __ATOMIC_RELAXED);
	out->mem = __atomic_load_n(&e->mem, __ATOMIC_RELAXED);
	out->index = __atomic_load_n(&e->index, __ATOMIC_RELAXED);
	out->nr_buckets = __atomic_load_n(&e->nr_buckets, __ATOMIC_RELAXED);
	out->page_bytes = __atomic_load_n(&e->page_bytes, __ATOMIC_RELAXED);
	out->index_stride = __atomic_load_n(&e->index_stride, __ATOMIC_RELAXED);
	out->ways = __atomic_load_n(&e->ways, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return !(s & 1) && __atomic_load_n(&e->seq, __ATOMIC_RELAXED) == s &&
	       (out->epoch == epoch || out->epoch == SM_NEAR_OWN);
}

/*
 * sm_direct for a key of class c whose owner is node, from the node's entry e
 * (sm_near_at, which the caller has) rather than its layout: true and *out the
 * entry when the layout's classes are the topology's, class c's slots are
 * header-only, there is no disk under them, and this node addresses that memory;
 * false otherwise (a node whose layout is not known yet or is another, payloads, a
 * spill, no mapping: the caller reads the layout). An entry that stands for
 * another epoch is made anew.
 */
static inline bool sm_near(struct slotmap *sm, const struct sm_near *e, uint64_t epoch,
			   uint32_t node, uint32_t c, struct sm_near *out)
{
	if (sm_near_read(e, epoch, out))
		return out->cl;
	return sm_near_fill(sm, epoch, node, c) && sm_near_read(e, epoch, out) && out->cl;
}

#endif
