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

/* Make node's entry stand for this epoch (when its layout is known); false when
 * the node's keys are not in place now (struct sm_near's cl NULL). */
bool sm_near_fill(struct slotmap *sm, uint64_t epoch, uint32_t node);

/* Forget node's entry: its layout was dropped. */
void sm_near_drop(struct slotmap *sm, uint32_t node);

/*
 * sm_direct for a key whose owner is node, from the node's entry (struct sm_near)
 * rather than its layout: true and *out the entry when the layout has exactly one
 * class, of header-only slots, no disk under it, and this node addresses that
 * memory; false otherwise (a node whose layout is not known yet, several classes,
 * payloads, a spill, no mapping: the caller reads the layout). The copy is checked
 * whole after it is read (the seqlock), and the entry made anew when it stands for
 * another epoch.
 */
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

static inline bool sm_near(struct slotmap *sm, uint64_t epoch, uint32_t node, struct sm_near *out)
{
	if (sm_near_read(&sm->near[node], epoch, out))
		return out->cl;
	return sm_near_fill(sm, epoch, node) && sm_near_read(&sm->near[node], epoch, out) &&
	       out->cl;
}

#endif
