/*
 * ring.h - consistent-hash ring with virtual nodes: which node owns a key.
 *
 * Each node contributes `vnodes` points derived from its name alone, so a node's
 * points do not depend on who else is in the ring: adding a node moves only the keys
 * that now fall on its points (about 1/(n+1) of them) and moves them only onto it.
 * With v points per node the per-node key share has std/mean close to 1/sqrt(v).
 *
 * Not for: locking. A ring is plain data; the store swaps whole rings on membership
 * change.
 */
#ifndef PC_RING_H
#define PC_RING_H

#include <stddef.h>
#include <stdint.h>

#include "base/keyhash.h"

#define RING_NONE UINT32_MAX
#define RING_LUT_OWNER 0x80000000u	/* a jump table entry that is an owner */
#define PC_RING_NAME_MAX 64	/* node names longer than this are cut for hashing */

struct ring_point {
	uint64_t point;
	uint32_t node;
};

struct ring {
	struct ring *retired_next;	/* a store's list of replaced rings */
	uint32_t refs;			/* holders; ring_destroy frees at the last */
	uint32_t vnodes;		/* points per node */
	uint32_t nr_nodes;
	size_t nr_points;
	struct ring_point *points;	/* sorted by point, then node */
	uint32_t *nodes;		/* member node ids, ascending */
	/* A jump table over the top lut_bits of a position, 8 to 32 ranges per point
	 * (ring.c: RING_LUT_FINE). A range no point splits holds its owner, flagged
	 * RING_LUT_OWNER (all but one range in 8 to 32: a lookup is one load); the others
	 * the index of their first point, from which a lookup scans the one or two points
	 * of the range. */
	uint32_t *lut;
	unsigned lut_bits;
};

/* An empty ring with one holder. NULL on ENOMEM or vnodes == 0. */
struct ring *ring_create(uint32_t vnodes);
/* Drop a holder; the last one frees the ring. */
void ring_destroy(struct ring *r);
/* A deep copy, NULL on ENOMEM. */
struct ring *ring_dup(const struct ring *r);

/* Add node id under name. 0, -EEXIST or -ENOMEM (the ring is unchanged on error). */
int ring_add(struct ring *r, uint32_t node, const char *name);
/* Add nodes[0..n) under names[i] with one sort: building a 512-node ring one add at
 * a time re-sorts it 512 times. 0, -EEXIST or -ENOMEM. */
int ring_add_many(struct ring *r, const uint32_t *nodes, const char *const *names, size_t n);

/* Another holder of r (rings are read-only once built and may be shared). */
static inline struct ring *ring_ref(struct ring *r)
{
	__atomic_fetch_add(&r->refs, 1, __ATOMIC_RELAXED);
	return r;
}
/* Remove node id. 0 or -ENOENT. */
int ring_remove(struct ring *r, uint32_t node);
int ring_contains(const struct ring *r, uint32_t node);

/* The node owning ring position point, or RING_NONE for an empty ring. */
uint32_t ring_owner_slow(const struct ring *r, uint64_t point);

static inline uint32_t ring_owner_at(const struct ring *r, uint64_t point)
{
	uint32_t e = r->lut ? r->lut[point >> (64 - r->lut_bits)] : 0;

	return e & RING_LUT_OWNER ? e & ~RING_LUT_OWNER : ring_owner_slow(r, point);
}

/* Bring the jump table entry for h into cache ahead of ring_owner_of(r, h). */
static inline void ring_prefetch(const struct ring *r, struct pc_keyhash h)
{
	if (r->lut)
		__builtin_prefetch(&r->lut[keyhash_point(h) >> (64 - r->lut_bits)]);
}

/* The owner of a key hash. */
static inline uint32_t ring_owner_of(const struct ring *r, struct pc_keyhash h)
{
	return ring_owner_at(r, keyhash_point(h));
}

/* The first n distinct owners clockwise from point (the primary first). Returns how
 * many were found: min(n, number of nodes). */
size_t ring_owners(const struct ring *r, uint64_t point, uint32_t *out, size_t n);

#endif
