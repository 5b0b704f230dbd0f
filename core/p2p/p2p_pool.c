/*
 * p2p_pool.c - this node's published pool as the rest of p2p mode sees it: where a
 * block lies as a directory entry names it, which block an entry names, taking a
 * block (evicting the LRU tail) and freeing one.
 *
 * Not for: the pool itself (tier/pool.c) or its opening (p2p.c).
 */
#include "p2p_int.h"

static uint64_t block_addr(const struct p2p_class *k, uint32_t b)
{
	return (uint64_t)(uintptr_t)pool_block(k->pool, b);
}

/* The directory entry for block b of class c, holding len bytes. */
struct dir_loc p2p_own_loc(const struct p2p *p, uint32_t c, uint32_t b, uint32_t len)
{
	const struct p2p_class *k = &p->cls[c];

	return (struct dir_loc){ .addr = block_addr(k, b), .inc = p->st->fabric->incarnation,
				 .gen = k->gen[b], .node = p->st->self, .rkey = k->reg.key,
				 .len = len, .cls = c };
}

/* A page this node published: its block, if addr names one of class cls. */
uint8_t *p2p_own_block(struct p2p *p, const struct dir_loc *l, uint32_t *b)
{
	struct p2p_class *k;
	uint64_t base, off;

	if (l->cls >= p->nr_classes || l->inc != p->st->fabric->incarnation)
		return NULL;
	k = &p->cls[l->cls];
	base = block_addr(k, 0);
	off = l->addr - base;
	if (l->addr < base || off % k->pool->stride || off / k->pool->stride >= k->pool->nr_blocks)
		return NULL;
	*b = (uint32_t)(off / k->pool->stride);
	return pool_block(k->pool, *b);
}

/* Whether l names a block of ours that still holds publication l->gen. */
bool p2p_own_publication(struct p2p *p, const struct dir_loc *l, uint32_t *b)
{
	return p2p_own_block(p, l, b) &&
	       __atomic_load_n(&p->cls[l->cls].gen[*b], __ATOMIC_RELAXED) == l->gen;
}

/* Free our block of publication l of key, if it still holds that one. The number is
 * checked with the removal, under the pool's lock: checked before it, a publication
 * of key that took the block in between would be freed in its place. */
bool p2p_free_publication(struct p2p *p, struct pc_keyhash key, const struct dir_loc *l)
{
	uint32_t b;

	return p2p_own_block(p, l, &b) &&
	       pool_remove_at(p->cls[l->cls].pool, key, b, &p->cls[l->cls].gen[b], l->gen);
}

/* A shard now points key at another node's publication: free ours, if it is still
 * the one the shard replaced. */
void p2p_free_orphan(struct p2p *p, struct pc_keyhash key, const struct dir_loc *l)
{
	if (p2p_free_publication(p, key, l))
		__atomic_add_fetch(&p->orphans, 1, __ATOMIC_RELAXED);
}

/* A free block of class c, evicting the LRU tail when there is none; an evicted
 * block's removal goes into *del (del->del set). POOL_NONE when every block is busy. */
uint32_t p2p_take_block(struct p2p *p, uint32_t c, struct upd *del)
{
	struct p2p_class *k = &p->cls[c];
	uint32_t b, v;

	del->del = false;
	if (pool_alloc(k->pool, &b, 1))
		return b;
	if (!pool_pick_victims(k->pool, &v, 1))
		return POOL_NONE;
	/* DEMOTING: its key, length and gen are stable until pool_demoted */
	*del = (struct upd){ .key = k->pool->meta[v].key, .del = true,
			     .loc = p2p_own_loc(p, c, v, k->pool->meta[v].len) };
	pool_demoted(k->pool, v, false);
	METRIC_ADD(p->st, evictions, 1);
	return pool_alloc(k->pool, &b, 1) ? b : POOL_NONE;
}

/* Forget key in every class of this node's pool (it is being published again). */
void p2p_unpublish(struct p2p *p, struct pc_keyhash key)
{
	for (uint32_t c = 0; c < p->nr_classes; c++)
		pool_remove(p->cls[c].pool, key);
}
