/*
 * ring_test.c - consistent-hash ring: fixed placement vectors, load spread against
 * 1/sqrt(v), and movement on join/leave.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement/ring.h"
#include "testutil.h"

static struct ring *ring_of(uint32_t n, uint32_t v)
{
	struct ring *r = ring_create(v);
	char name[32];

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		CU_ASSERT_EQUAL_FATAL(ring_add(r, i, name), 0);
	}
	return r;
}

static struct pc_keyhash key_hash(uint64_t k)
{
	char key[32];
	int len = snprintf(key, sizeof(key), "key-%llu", (unsigned long long)k);

	return keyhash_of(key, (size_t)len);
}

/* The linked xxhash is the one the placement was designed against. */
static void test_xxhash_sanity(void)
{
	CU_ASSERT_EQUAL(XXH3_64bits("", 0), 0x2D06800538D394C2ULL);
	CU_ASSERT_EQUAL(XXH3_64bits_withSeed("a", 1, 0), XXH3_64bits("a", 1));
}

/* Fixed owners for fixed input, like xxHash's sanity vectors: placement must agree
 * across processes, builds and versions, or readers look on the wrong node. */
static void test_vectors(void)
{
	static const uint32_t expect[16] = {
		0, 2, 3, 3, 0, 1, 3, 2,
		0, 3, 0, 3, 3, 0, 2, 1,
	};
	struct ring *r = ring_of(4, 128);

	for (uint64_t k = 0; k < 16; k++) {
		uint32_t o = ring_owner_of(r, key_hash(k));

		if (o != expect[k])
			printf("\n  key-%llu: owner n%u, expected n%u", (unsigned long long)k, o,
			       expect[k]);
		CU_ASSERT_EQUAL(o, expect[k]);
	}
	ring_destroy(r);
}

static void test_errors(void)
{
	struct ring *r = ring_create(8);
	uint32_t out[4];

	CU_ASSERT_PTR_NULL(ring_create(0));
	CU_ASSERT_EQUAL(ring_owner_at(r, 42), RING_NONE);
	CU_ASSERT_EQUAL(ring_owners(r, 42, out, 4), 0);
	CU_ASSERT_EQUAL(ring_add(r, 1, "a"), 0);
	CU_ASSERT_EQUAL(ring_add(r, 1, "b"), -EEXIST);
	CU_ASSERT_EQUAL(ring_remove(r, 7), -ENOENT);
	CU_ASSERT_EQUAL(ring_owner_at(r, 42), 1);
	CU_ASSERT_EQUAL(ring_remove(r, 1), 0);
	CU_ASSERT_EQUAL(r->nr_points, 0);
	ring_destroy(r);
}

static void test_owners_distinct(void)
{
	struct ring *r = ring_of(8, 64);
	uint32_t out[10];

	for (uint64_t k = 0; k < 1000; k++) {
		struct pc_keyhash h = key_hash(k);
		size_t n = ring_owners(r, keyhash_point(h), out, 3);

		CU_ASSERT_EQUAL(n, 3);
		CU_ASSERT_EQUAL(out[0], ring_owner_of(r, h));
		CU_ASSERT(out[0] != out[1] && out[1] != out[2] && out[0] != out[2]);
	}
	CU_ASSERT_EQUAL(ring_owners(r, 5, out, 10), 8);
	ring_destroy(r);
}

/* std/mean of the per-node key share is close to 1/sqrt(v): within 15%. */
static void test_spread(void)
{
	static const uint32_t vs[] = { 16, 64, 256 };
	const uint32_t n = 128;
	const uint64_t keys = 1000000;

	printf("\n");
	for (size_t i = 0; i < 3; i++) {
		struct ring *r = ring_of(n, vs[i]);
		double *arc = calloc(n, sizeof(double)), *cnt = calloc(n, sizeof(double));
		double mean_k = (double)keys / n, var_k = 0, var_a = 0, want = 1 / sqrt(vs[i]);
		double cv_k, cv_a;

		CU_ASSERT_PTR_NOT_NULL_FATAL(arc);
		CU_ASSERT_PTR_NOT_NULL_FATAL(cnt);
		/* Exact share: each point owns the arc that ends at it. */
		for (size_t p = 0; p < r->nr_points; p++) {
			uint64_t prev = r->points[p ? p - 1 : r->nr_points - 1].point;

			arc[r->points[p].node] += (double)(r->points[p].point - prev) / 0x1p64;
		}
		for (uint64_t k = 0; k < keys; k++)
			cnt[ring_owner_of(r, key_hash(k))]++;
		for (uint32_t j = 0; j < n; j++) {
			var_k += (cnt[j] - mean_k) * (cnt[j] - mean_k);
			var_a += (arc[j] - 1.0 / n) * (arc[j] - 1.0 / n);
		}
		cv_k = sqrt(var_k / n) / mean_k;
		cv_a = sqrt(var_a / n) * n;
		printf("  ring spread: %u nodes, v=%3u: std/mean keys %.4f, arcs %.4f, 1/sqrt(v) %.4f (keys/expected %.3f)\n",
		       n, vs[i], cv_k, cv_a, want, cv_k / want);
		CU_ASSERT(fabs(cv_k / want - 1) <= 0.15);
		CU_ASSERT(fabs(cv_a / want - 1) <= 0.15);
		free(arc);
		free(cnt);
		ring_destroy(r);
	}
}

/* Adding one node to n moves about 1/(n+1) of the keys, all onto the new node;
 * removing it again restores every owner. */
static void test_movement(void)
{
	static const uint32_t ns[] = { 8, 32, 100 };
	const uint64_t keys = 200000;
	uint32_t *before = malloc(keys * sizeof(uint32_t));

	CU_ASSERT_PTR_NOT_NULL_FATAL(before);
	printf("\n");
	for (size_t i = 0; i < 3; i++) {
		uint32_t n = ns[i];
		struct ring *r = ring_of(n, 128);
		uint64_t moved = 0, wrong = 0, back = 0;
		double frac, want = 1.0 / (n + 1);

		for (uint64_t k = 0; k < keys; k++)
			before[k] = ring_owner_of(r, key_hash(k));
		CU_ASSERT_EQUAL(ring_add(r, n, "joiner"), 0);
		for (uint64_t k = 0; k < keys; k++) {
			uint32_t o = ring_owner_of(r, key_hash(k));

			if (o != before[k]) {
				moved++;
				wrong += o != n;
			}
		}
		frac = (double)moved / keys;
		printf("  ring movement: %u -> %u nodes moved %.4f of keys (1/(n+1) = %.4f), %llu to old nodes\n",
		       n, n + 1, frac, want, (unsigned long long)wrong);
		CU_ASSERT_EQUAL(wrong, 0);
		CU_ASSERT(frac > want * 0.7 && frac < want * 1.3);
		CU_ASSERT_EQUAL(ring_remove(r, n), 0);
		for (uint64_t k = 0; k < keys; k++)
			back += ring_owner_of(r, key_hash(k)) != before[k];
		CU_ASSERT_EQUAL(back, 0);
		ring_destroy(r);
	}
	free(before);
}

static void test_dup(void)
{
	struct ring *r = ring_of(5, 32), *d = ring_dup(r);

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(ring_remove(r, 2), 0);
	CU_ASSERT_EQUAL(d->nr_nodes, 5);
	CU_ASSERT_EQUAL(r->nr_nodes, 4);
	for (uint64_t k = 0; k < 100; k++)
		CU_ASSERT(ring_owner_of(d, key_hash(k)) < 5);
	ring_destroy(r);
	ring_destroy(d);
}

static CU_TestInfo tests[] = {
	{ "xxhash sanity", test_xxhash_sanity },
	{ "fixed placement vectors", test_vectors },
	{ "errors and empty ring", test_errors },
	{ "next R distinct owners", test_owners_distinct },
	{ "load spread vs 1/sqrt(v)", test_spread },
	{ "movement on join and leave", test_movement },
	{ "dup is deep", test_dup },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "ring", NULL, NULL, NULL, NULL, tests })
