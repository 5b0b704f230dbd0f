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

/* An entry's writer holds direct_lock; seq is odd while the fields change. */
static void near_store(struct sm_near *e, const struct sm_near *v)
{
	uint64_t s = e->seq;

	__atomic_store_n(&e->seq, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&e->epoch, v->epoch, __ATOMIC_RELAXED);
	__atomic_store_n(&e->cl, v->cl, __ATOMIC_RELAXED);
	__atomic_store_n(&e->mem, v->mem, __ATOMIC_RELAXED);
	__atomic_store_n(&e->index, v->index, __ATOMIC_RELAXED);
	__atomic_store_n(&e->nr_buckets, v->nr_buckets, __ATOMIC_RELAXED);
	__atomic_store_n(&e->page_bytes, v->page_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&e->index_stride, v->index_stride, __ATOMIC_RELAXED);
	__atomic_store_n(&e->ways, v->ways, __ATOMIC_RELAXED);
	__atomic_store_n(&e->seq, s + 2, __ATOMIC_RELEASE);
}

/* lay's classes are the topology's: a page's class follows from its length alone. */
static bool near_classes(const struct slotmap *sm, const struct sm_layout *lay)
{
	const struct pc_store_cfg *cfg = &sm->st->topo->store;

	if (lay->nr_classes != cfg->nr_classes)
		return false;
	for (uint32_t c = 0; c < cfg->nr_classes; c++)
		if (lay->cls[c].g.page_bytes != cfg->size_classes[c])
			return false;
	return true;
}

bool sm_near_fill(struct slotmap *sm, uint64_t epoch, uint32_t node, uint32_t c)
{
	const struct sm_layout *lay = sm_layout_of(sm, node);
	struct sm_near *e = sm_near_at(sm, node, c), v;
	uint8_t *mem = NULL;

	if (!lay)
		return false;	/* not known yet: nothing to keep */
	v = (struct sm_near){ .epoch = lay == sm->own ? SM_NEAR_OWN : epoch };
	if (near_classes(sm, lay) && !lay->spill && !slot_has_payload(&lay->cls[c].g))
		mem = sm_direct(sm, epoch, lay, (int)c);
	if (mem) {
		const struct slot_geometry *g = &lay->cls[c].g;

		v.cl = &lay->cls[c];
		v.mem = mem;
		v.index = mem + slot_index_offset(g, 0);
		v.nr_buckets = g->nr_buckets;
		v.page_bytes = (uint32_t)g->page_bytes;	/* slot_geometry_init: <= 4 GiB */
		v.index_stride = (uint32_t)g->index_stride;
		v.ways = g->ways;
	}
	pthread_mutex_lock(&sm->direct_lock);
	/* Not for a layout dropped meanwhile, nor over a newer epoch's entry (as the
	 * direct cache: the newer stands for this pass too). */
	if (sm_layout_of(sm, node) == lay && e->epoch <= v.epoch)
		near_store(e, &v);
	pthread_mutex_unlock(&sm->direct_lock);
	return mem;
}

void sm_near_drop(struct slotmap *sm, uint32_t node)
{
	static const struct sm_near none;

	pthread_mutex_lock(&sm->direct_lock);
	for (uint32_t c = 0; c < sm->nr_classes; c++)
		near_store(sm_near_at(sm, node, c), &none);
	pthread_mutex_unlock(&sm->direct_lock);
}
