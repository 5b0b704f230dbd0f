/*
 * slotmap_direct.c - filling the cache of peers' mapped slot memory (see
 * slotmap_direct.h).
 */
#include "slotmap_direct.h"

/*
 * Fills run one at a time and store a whole (mem, epoch) pair, never an older one
 * over a newer: map epochs only grow, and a newer answer stands for an older pass
 * too (it is the peer as it is now). So a reader that sees its epoch gets the
 * pointer stored with it or a newer fill's, never one from before a change. Two
 * threads filling at once without the lock could leave one's pointer next to the
 * other's epoch: a down peer's memory under the epoch that knows it is down.
 */
uint8_t *sm_direct_fill(struct slotmap *sm, uint64_t epoch, const struct sm_layout *lay, int c)
{
	struct sm_direct *d = (struct sm_direct *)&lay->cls[c].direct;	/* a cache, not the layout */
	const struct sm_class *cl = &lay->cls[c];
	void *p;

	pthread_mutex_lock(&sm->direct_lock);
	if (d->epoch >= epoch) {
		p = d->mem;
	} else {
		if (pc_fabric_map(sm->st->fabric, lay->node, lay->inc, cl->rkey, cl->base,
				  slot_region_bytes(&cl->g), SM_DIRECT_ACCESS, &p))
			p = NULL;
		__atomic_store_n(&d->mem, (uint8_t *)p, __ATOMIC_RELAXED);
		__atomic_store_n(&d->epoch, epoch, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sm->direct_lock);
	return p;
}
