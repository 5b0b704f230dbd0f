/*
 * arena_test.c - batch scratch arenas: alignment, zeroing, spills past the block,
 * growth so that the next use of that shape spills nothing, and the pool's reuse.
 */
#include <stdint.h>
#include <string.h>

#include "base/arena.h"
#include "testutil.h"

static void test_alloc(void)
{
	struct arena_pool p;
	struct arena *a;
	uint8_t *x, *y, *z;

	arena_pool_init(&p);
	a = arena_take(&p);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	x = arena_alloc(a, 3);
	y = arena_alloc(a, 100);
	z = arena_zalloc(a, 1000);
	CU_ASSERT(x && y && z);
	CU_ASSERT_EQUAL((uintptr_t)x % 16, 0);
	CU_ASSERT_EQUAL((uintptr_t)y % 16, 0);
	CU_ASSERT_EQUAL((uintptr_t)z % 16, 0);
	CU_ASSERT(y >= x + 3 && z >= y + 100);		/* no overlap */
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL_FATAL(z[i], 0);
	memset(x, 1, 3);
	memset(y, 2, 100);
	CU_ASSERT_EQUAL(z[0], 0);
	CU_ASSERT_PTR_NOT_NULL(arena_alloc(a, 0));
	CU_ASSERT_PTR_NULL(arena_alloc(a, SIZE_MAX - 3));	/* wraps: refused */
	CU_ASSERT_PTR_NULL(arena_alloc(a, SIZE_MAX - 20));	/* rounds up fine, a spill of it wraps */
	CU_ASSERT_PTR_NULL(arena_alloc(a, SIZE_MAX / 2));	/* too large for malloc */
	arena_give(&p, a);
	arena_pool_fini(&p);
}

/* A use past the block spills to malloc; the arena then grows, so the same use
 * again fits in its block. */
static void test_grows(void)
{
	struct arena_pool p;
	struct arena *a, *b;
	uint8_t *big[8];

	arena_pool_init(&p);
	a = arena_take(&p);
	for (int i = 0; i < 8; i++) {
		big[i] = arena_alloc(a, 64 << 10);
		CU_ASSERT_PTR_NOT_NULL_FATAL(big[i]);
		memset(big[i], i, 64 << 10);
	}
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(big[i][(64 << 10) - 1], i);
	arena_give(&p, a);
	b = arena_take(&p);
	CU_ASSERT_PTR_EQUAL(b, a);			/* the pool reuses it */
	for (int i = 0; i < 8; i++)
		CU_ASSERT_PTR_NOT_NULL(arena_alloc(b, 64 << 10));
	printf("\n  8 x 64 KiB: block now %zu KiB, spilled on reuse: %s\n", b->cap >> 10,
	       b->spill ? "yes" : "no");
#if !defined(__SANITIZE_ADDRESS__)
	CU_ASSERT_PTR_NULL(b->spill);
	CU_ASSERT(b->cap >= 8 * (64 << 10));
#endif
	arena_give(&p, b);
	arena_pool_fini(&p);
}

/* Two takes at once get two arenas; giving more than the pool keeps frees the rest. */
static void test_pool(void)
{
	struct arena_pool p;
	struct arena *a[12];

	arena_pool_init(&p);
	for (int i = 0; i < 12; i++) {
		a[i] = arena_take(&p);
		CU_ASSERT_PTR_NOT_NULL_FATAL(a[i]);
		for (int j = 0; j < i; j++)
			CU_ASSERT_PTR_NOT_EQUAL(a[i], a[j]);
		memset(arena_alloc(a[i], 256), i, 256);
	}
	for (int i = 0; i < 12; i++)
		arena_give(&p, a[i]);
	CU_ASSERT(p.nr_idle > 0 && p.nr_idle < 12);
	arena_give(&p, NULL);
	arena_pool_fini(&p);
}

static CU_TestInfo tests[] = {
	{ "alignment, zeroing, no overlap", test_alloc },
	{ "an overflowing use grows the block for the next", test_grows },
	{ "the pool: distinct arenas, bounded idle list", test_pool },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "arena", NULL, NULL, NULL, NULL, tests })
