/*
 * ring.c - consistent-hash ring: sorted vnode points, a jump table for the owner.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

#include <stdio.h>

/* Seed for vnode points; fixed, since placement must agree across processes. */
#define RING_SEED 0x70637269ULL	/* "pcri" */

/* Point i of a node is the hash of "name#i". Hashing distinct strings, rather than
 * one name under seeds i, matters: for short inputs xxh3 only xors the seed into the
 * input word, so (name, seed) pairs collide and pile points onto few nodes. */
static uint64_t vnode_point(const char *name, uint32_t i)
{
	char buf[PC_RING_NAME_MAX + 16];
	int len = snprintf(buf, sizeof(buf), "%s#%u", name, i);

	return XXH3_64bits_withSeed(buf, (size_t)len, RING_SEED);
}

struct ring *ring_create(uint32_t vnodes)
{
	struct ring *r;

	if (!vnodes)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->vnodes = vnodes;
	r->refs = 1;
	return r;
}

void ring_destroy(struct ring *r)
{
	if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL))
		return;
	free(r->points);
	free(r->nodes);
	free(r->lut);
	free(r);
}

/* Index of the first point >= p, or nr_points past the last. */
static size_t lower_bound(const struct ring *r, uint64_t p, size_t lo, size_t hi)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->points[mid].point < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Up to this many entries (1 MiB) the jump table gets about 32 ranges per point, so
 * that one lookup in 32, not one in eight, scans points; past it the table would
 * take the cache the slots need, and a larger ring keeps eight or more. */
#define RING_LUT_FINE (1u << 18)

/* Rebuild the jump table. */
static int build_lut(struct ring *r)
{
	unsigned bits = 1;
	size_t nr;
	uint32_t *lut;

	while (bits < 30 && (1ULL << bits) < 32 * (uint64_t)r->nr_points &&
	       (1ULL << bits) < RING_LUT_FINE)
		bits++;
	while (bits < 30 && (1ULL << bits) < 8 * (uint64_t)r->nr_points)
		bits++;
	nr = (size_t)1 << bits;
	lut = malloc(nr * sizeof(*lut));
	if (!lut)
		return -ENOMEM;
	for (size_t i = 0, p = 0; i < nr; i++) {
		uint64_t end = i + 1 < nr ? (uint64_t)(i + 1) << (64 - bits) : 0;
		size_t first = p;

		/* The points of range i: [i << (64 - bits), end). */
		while (p < r->nr_points && (!end || r->points[p].point < end))
			p++;
		lut[i] = (uint32_t)first;
		/* No point inside the range (and so none at its start, which a lookup of
		 * exactly that position would hit): the next point owns all of it. */
		if (r->nr_points && first == p)
			lut[i] = r->points[p == r->nr_points ? 0 : p].node | RING_LUT_OWNER;
	}
	free(r->lut);
	r->lut = lut;
	r->lut_bits = bits;
	return 0;
}

struct ring *ring_dup(const struct ring *r)
{
	struct ring *d = ring_create(r->vnodes);

	if (!d)
		return NULL;
	d->points = malloc((r->nr_points ? r->nr_points : 1) * sizeof(*d->points));
	d->nodes = malloc((r->nr_nodes ? r->nr_nodes : 1) * sizeof(*d->nodes));
	if (!d->points || !d->nodes) {
		ring_destroy(d);
		return NULL;
	}
	memcpy(d->points, r->points, r->nr_points * sizeof(*d->points));
	memcpy(d->nodes, r->nodes, r->nr_nodes * sizeof(*d->nodes));
	d->nr_points = r->nr_points;
	d->nr_nodes = r->nr_nodes;
	if (build_lut(d)) {
		ring_destroy(d);
		return NULL;
	}
	return d;
}

static int point_cmp(const void *a, const void *b)
{
	const struct ring_point *x = a, *y = b;

	if (x->point != y->point)
		return x->point < y->point ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

int ring_contains(const struct ring *r, uint32_t node)
{
	for (uint32_t i = 0; i < r->nr_nodes; i++)
		if (r->nodes[i] == node)
			return 1;
	return 0;
}

static int node_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int ring_add_many(struct ring *r, const uint32_t *add, const char *const *names, size_t n)
{
	size_t np = r->nr_points + (size_t)r->vnodes * n;
	struct ring_point *pts;
	uint32_t *nodes;

	for (size_t k = 0; k < n; k++) {
		if (ring_contains(r, add[k]))
			return -EEXIST;
		for (size_t j = 0; j < k; j++)
			if (add[j] == add[k])
				return -EEXIST;
	}
	pts = realloc(r->points, (np ? np : 1) * sizeof(*pts));
	if (!pts)
		return -ENOMEM;
	r->points = pts;
	nodes = realloc(r->nodes, (r->nr_nodes + n + 1) * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	r->nodes = nodes;
	/* A node's points depend on its name only, never on the other members. */
	for (size_t k = 0; k < n; k++) {
		for (uint32_t i = 0; i < r->vnodes; i++) {
			pts[r->nr_points].point = vnode_point(names[k], i);
			pts[r->nr_points++].node = add[k];
		}
		nodes[r->nr_nodes++] = add[k];
	}
	qsort(pts, r->nr_points, sizeof(*pts), point_cmp);
	qsort(nodes, r->nr_nodes, sizeof(*nodes), node_cmp);
	return build_lut(r);
}

int ring_add(struct ring *r, uint32_t node, const char *name)
{
	return ring_add_many(r, &node, &name, 1);
}

int ring_remove(struct ring *r, uint32_t node)
{
	size_t i, j;

	if (!ring_contains(r, node))
		return -ENOENT;
	for (i = j = 0; i < r->nr_points; i++)
		if (r->points[i].node != node)
			r->points[j++] = r->points[i];
	r->nr_points = j;
	for (i = j = 0; i < r->nr_nodes; i++)
		if (r->nodes[i] != node)
			r->nodes[j++] = r->nodes[i];
	r->nr_nodes = (uint32_t)j;
	return build_lut(r);
}

/* Index of the first point >= p, wrapping to 0 past the last. A split range of the
 * jump table names its first point: the answer is the first of its few points at or
 * after p, or else the point after them. */
static size_t successor(const struct ring *r, uint64_t p)
{
	uint32_t e = r->lut[p >> (64 - r->lut_bits)];
	size_t i;

	if (e & RING_LUT_OWNER)	/* owner-only range: its index is not kept */
		i = lower_bound(r, p, 0, r->nr_points);
	else
		for (i = e; i < r->nr_points && r->points[i].point < p; i++)
			;
	return i == r->nr_points ? 0 : i;
}

uint32_t ring_owner_slow(const struct ring *r, uint64_t point)
{
	if (!r->nr_points)
		return RING_NONE;
	return r->points[successor(r, point)].node;
}

size_t ring_owners(const struct ring *r, uint64_t point, uint32_t *out, size_t n)
{
	size_t found = 0, i, k;

	if (!r->nr_points)
		return 0;
	if (n > r->nr_nodes)
		n = r->nr_nodes;
	i = successor(r, point);
	for (size_t step = 0; step < r->nr_points && found < n; step++) {
		uint32_t node = r->points[i].node;

		for (k = 0; k < found && out[k] != node; k++)
			;
		if (k == found)
			out[found++] = node;
		i = i + 1 == r->nr_points ? 0 : i + 1;
	}
	return found;
}
