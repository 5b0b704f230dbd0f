/*
 * pool_test.c - the host pool's metadata and the key map under it: the map against a
 * reference under random churn, LRU victim order, leases (a leased block is never a
 * victim; an expired lease frees it), and a block leased while being demoted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/keymap.h"
#include "testutil.h"
#include "tier/pool.h"

/* An env whose clock the test moves by hand. */
struct fake_env {
	struct pc_env base;
	uint64_t now;
};

static uint64_t fc_now(struct pc_env *c)
{
	return ((struct fake_env *)c)->now;
}

static uint64_t fc_random(struct pc_env *c)
{
	(void)c;
	return (uint64_t)rand() << 32 | (uint64_t)rand();
}

static const struct pc_env_ops fake_ops = { .size = sizeof(fake_ops), .name = "fake",
					      .now_ns = fc_now, .random = fc_random };

static struct pc_keyhash key(uint64_t i)
{
	return keyhash_of(&i, sizeof(i));
}

/* Random puts and deletes against a plain array; every lookup must agree. */
static void test_keymap_churn(void)
{
	enum { KEYS = 3000, MAX = 1000, STEPS = 200000 };
	struct keymap m;
	int32_t *ref = malloc(KEYS * sizeof(*ref));
	uint32_t live = 0;

	CU_ASSERT_EQUAL_FATAL(keymap_init(&m, MAX), 0);
	for (int i = 0; i < KEYS; i++)
		ref[i] = -1;
	srand(7);
	for (int s = 0; s < STEPS; s++) {
		uint32_t k = (uint32_t)rand() % KEYS, v;

		if (rand() % 2) {
			int ret = keymap_put(&m, key(k), (uint32_t)s);

			if (ref[k] < 0 && live == MAX) {
				CU_ASSERT_EQUAL(ret, -ENOSPC);
				continue;
			}
			CU_ASSERT_EQUAL(ret, 0);
			live += ref[k] < 0;
			ref[k] = s;
		} else {
			CU_ASSERT_EQUAL(keymap_del(&m, key(k)), ref[k] >= 0);
			live -= ref[k] >= 0;
			ref[k] = -1;
		}
		if (s % 1000 == 0) {
			for (uint32_t i = 0; i < KEYS; i++) {
				bool in = keymap_get(&m, key(i), &v);

				CU_ASSERT_EQUAL(in, ref[i] >= 0);
				if (in && ref[i] >= 0 && v != (uint32_t)ref[i])
					CU_FAIL("keymap returned another value");
			}
		}
	}
	CU_ASSERT_EQUAL(m.n, live);
	keymap_fini(&m);
	free(ref);
}

static struct host_pool *filled(struct fake_env *fc, uint32_t blocks, uint32_t valid)
{
	struct host_pool *p = NULL;
	uint32_t b;

	CU_ASSERT_EQUAL_FATAL(pool_open(&fc->base, blocks, 4096, 4096, false, &p), 0);
	for (uint32_t i = 0; i < valid; i++) {
		CU_ASSERT_EQUAL_FATAL(pool_alloc(p, &b, 1), 1);
		CU_ASSERT_EQUAL(pool_commit(p, b, key(i), 100 + i, i, false, false), 0);
	}
	return p;
}

static void test_lru_victims(void)
{
	struct fake_env fc = { .base.ops = &fake_ops };
	struct host_pool *p = filled(&fc, 8, 8);
	uint32_t v[8], b, len;
	uint64_t sum;
	struct pool_usage u;

	CU_ASSERT_EQUAL(pool_alloc(p, &b, 1), 0);	/* full */
	pool_touch(p, pool_find(p, key(0), NULL));	/* 0 is recent now */
	CU_ASSERT_EQUAL(pool_pick_victims(p, v, 3), 3);
	CU_ASSERT(v[0] == pool_find(p, key(1), NULL) && v[1] == pool_find(p, key(2), NULL) &&
		  v[2] == pool_find(p, key(3), NULL));
	/* DEMOTING blocks are still found; a finished demotion frees them */
	b = pool_find_lease(p, key(1), &len, &sum);
	CU_ASSERT_EQUAL(b, v[0]);
	CU_ASSERT_EQUAL(len, 101);
	for (int i = 0; i < 3; i++)
		pool_demoted(p, v[i], true);
	pool_usage(p, &u);
	CU_ASSERT_EQUAL(u.free, 2);			/* block 1 was leased on its way down */
	CU_ASSERT_EQUAL(u.valid, 6);
	CU_ASSERT_NOT_EQUAL(pool_find(p, key(1), NULL), POOL_NONE);
	CU_ASSERT_EQUAL(pool_find(p, key(2), NULL), POOL_NONE);
	CU_ASSERT_TRUE(p->meta[b].on_disk);
	pool_unpin(p, b);
	pool_close(p);
}

static void test_leases(void)
{
	struct fake_env fc = { .base.ops = &fake_ops, .now = 1000 };
	struct host_pool *p = filled(&fc, 4, 4);
	uint32_t pin[2], v[4], len;
	uint64_t sum, id, id2;
	struct pool_stats st;

	pin[0] = pool_find_lease(p, key(0), &len, &sum);
	pin[1] = pool_find_lease(p, key(1), &len, &sum);
	CU_ASSERT_EQUAL_FATAL(pool_lease_pinned(p, pin, 2, 5000, &id), 0);
	/* pressure: only the two unleased blocks can go */
	CU_ASSERT_EQUAL(pool_pick_victims(p, v, 4), 2);
	pool_demoted(p, v[0], false);
	pool_demoted(p, v[1], false);
	CU_ASSERT_EQUAL(pool_pick_victims(p, v, 4), 0);
	CU_ASSERT_NOT_EQUAL(pool_find(p, key(0), NULL), POOL_NONE);
	/* not expired yet */
	fc.now += 4999;
	CU_ASSERT_EQUAL(pool_expire(p), 0);
	CU_ASSERT_EQUAL(pool_pick_victims(p, v, 4), 0);
	/* expired: both can go */
	fc.now += 1;
	CU_ASSERT_EQUAL(pool_expire(p), 1);
	CU_ASSERT_EQUAL(pool_release(p, id), -ENOENT);
	/* a released lease frees at once */
	pin[0] = pool_find_lease(p, key(0), &len, &sum);
	CU_ASSERT_EQUAL_FATAL(pool_lease_pinned(p, pin, 1, 5000, &id2), 0);
	CU_ASSERT_EQUAL(pool_pick_victims(p, v, 4), 1);		/* key 1 only */
	CU_ASSERT_EQUAL(pool_release(p, id2), 0);
	CU_ASSERT_EQUAL(pool_pick_victims(p, v + 1, 4), 1);	/* and now key 0 */
	pool_demoted(p, v[0], true);
	pool_demoted(p, v[1], true);
	pool_get_stats(p, &st);
	CU_ASSERT_EQUAL(st.leases, 2);
	CU_ASSERT_EQUAL(st.lease_expired, 1);
	CU_ASSERT_EQUAL(st.lease_released, 1);
	CU_ASSERT_EQUAL(st.dropped, 2);
	pool_close(p);
}

static void test_commit_race(void)
{
	struct fake_env fc = { .base.ops = &fake_ops };
	struct host_pool *p = filled(&fc, 4, 1);
	uint32_t b;
	struct pool_usage u;

	CU_ASSERT_EQUAL(pool_alloc(p, &b, 1), 1);
	CU_ASSERT_EQUAL(pool_commit(p, b, key(0), 1, 1, false, false), -EEXIST);
	pool_usage(p, &u);
	CU_ASSERT_EQUAL(u.free, 3);
	CU_ASSERT_EQUAL(u.valid, 1);
	pool_close(p);
}

static CU_TestInfo tests[] = {
	{ "key map against a reference under churn", test_keymap_churn },
	{ "LRU victims; leased while demoting stays", test_lru_victims },
	{ "leases pin blocks until released or expired", test_leases },
	{ "a second commit of one key frees its block", test_commit_race },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "host pool", NULL, NULL, NULL, NULL, tests })
