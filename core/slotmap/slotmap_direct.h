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

	if (!f->maps || f->fault)	/* faults are injected into ops: use them */
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

#endif
