/*
 * slotmap_write_test.c - slotmap sets on the in-process fabric: reservations inside a
 * batch, collision evictions, duplicates, size classes, CAS claims, and the known
 * failure modes of the Python/C++ slotmap: (a) concurrent writers of one bucket,
 * (b) a failed bucket READ, (c) monotonic stamps. The racing and failing cases run
 * again with peers mapped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <peercache/peercache.h>
#include "fault.h"
#include "slotmap/slotmap_int.h"
#include "slotmap_fixture.h"
#include "store.h"
#include "testutil.h"

/* Keys of one batch in one bucket reserve distinct ways; one too many is refused. */
static void test_same_bucket_batch(void)
{
	struct cluster *C = up(2, "slot_size_classes: [4KiB], slot_ways: 4, slot_num_buckets: 1, global_segment_size: 1MiB");
	struct batch *b = batch_new(5, 4096);
	int j = 0;

	for (int i = 0; i < 5; i++)
		key_on(C, 1, "sb", &j, b->keys[i]);
	batch_for_set(b, 7);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], b->pg, 4), 4);	/* remote writer */
	batch_for_get(b, 4096);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[0], b->pg, 4), 4);
	for (int i = 0; i < 4; i++)
		CU_ASSERT(pc_test_page_ok(b->buf + i * 4096, 4096, b->keys[i], 7));
	/* five in one batch: four ways, the fifth is refused, none evicts another */
	down(C);
	C = up(2, "slot_size_classes: [4KiB], slot_ways: 4, slot_num_buckets: 1, global_segment_size: 1MiB");
	batch_for_set(b, 8);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], b->pg, 5), 4);
	CU_ASSERT_EQUAL(b->pg[4].status, -ENOSPC);
	CU_ASSERT_EQUAL(metrics(C->s[0]).evictions, 0);
	batch_for_get(b, 4096);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], b->pg, 5), 4);
	CU_ASSERT_EQUAL(b->pg[4].status, -ENOENT);
	/* the owner's local writes reserve the same way */
	down(C);
	C = up(2, "slot_size_classes: [4KiB], slot_ways: 4, slot_num_buckets: 1, global_segment_size: 1MiB");
	batch_for_set(b, 9);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[1], b->pg, 5), 4);
	CU_ASSERT_EQUAL(b->pg[4].status, -ENOSPC);
	batch_free(b);
	down(C);
}

/* A collision eviction is a clean miss, never stale data; the oldest goes first. */
static void test_eviction(void)
{
	struct cluster *C = up(2, "slot_size_classes: [4KiB], slot_ways: 2, slot_num_buckets: 1, global_segment_size: 1MiB");
	struct batch *b = batch_new(3, 4096);
	int j = 0;

	for (int i = 0; i < 3; i++)
		key_on(C, 1, "ev", &j, b->keys[i]);
	batch_for_set(b, 1);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], &b->pg[0], 1), 1);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], &b->pg[1], 1), 1);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], &b->pg[2], 1), 1);
	CU_ASSERT_EQUAL(metrics(C->s[0]).evictions, 1);
	batch_for_get(b, 4096);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[0], b->pg, 3), 2);
	CU_ASSERT_EQUAL(b->pg[0].status, -ENOENT);		/* the oldest was evicted */
	CU_ASSERT(pc_test_page_ok(b->buf + 4096, 4096, b->keys[1], 1));
	CU_ASSERT(pc_test_page_ok(b->buf + 8192, 4096, b->keys[2], 1));
	/* rewriting a key replaces it in place: no second copy, no eviction */
	batch_for_set(b, 2);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], &b->pg[2], 1), 1);
	CU_ASSERT_EQUAL(metrics(C->s[0]).evictions, 1);
	batch_for_get(b, 4096);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], &b->pg[1], 2), 2);
	CU_ASSERT(pc_test_page_ok(b->buf + 8192, 4096, b->keys[2], 2));
	batch_free(b);
	down(C);
}

static void test_duplicate_in_batch(void)
{
	struct cluster *C = up(2, "slot_size_classes: [4KiB], global_segment_size: 1MiB");
	uint8_t p1[100], p2[200], out[4096];
	struct pc_page s[2] = { { .key = "dup", .key_len = 3, .data = p1, .len = sizeof(p1) },
				{ .key = "dup", .key_len = 3, .data = p2, .len = sizeof(p2) } };
	struct pc_page g = { .key = "dup", .key_len = 3, .data = out, .cap = sizeof(out) };

	pc_test_fill(p1, sizeof(p1), "dup", 1);
	pc_test_fill(p2, sizeof(p2), "dup", 2);
	for (uint32_t w = 0; w < 2; w++) {
		CU_ASSERT_EQUAL(pc_batch_set(C->s[w], s, 2), 2);
		CU_ASSERT_EQUAL(pc_batch_get(C->s[1 - w], &g, 1), 1);
		CU_ASSERT_EQUAL(g.len, 200);
		CU_ASSERT(pc_test_page_ok(out, 200, "dup", 2));
	}
	down(C);
}

static void test_oversize_and_classes(void)
{
	struct cluster *C = up(3, "slot_size_classes: [16KiB, 64KiB, 256KiB], global_segment_size: 24MiB");
	static const size_t sizes[] = { 10000, 16384, 60000, 200000, 262144, 262145 };
	uint8_t *buf = malloc(262145), *out = malloc(262145);
	struct pc_metrics m = { .size = sizeof(m) };
	char key[32];

	for (size_t i = 0; i < 6; i++) {
		struct pc_page p = { .key = key, .data = buf, .len = sizes[i] };

		sprintf(key, "size-%zu", sizes[i]);
		p.key_len = strlen(key);
		pc_test_fill(buf, sizes[i], key, 1);
		CU_ASSERT_EQUAL(pc_batch_set(C->s[i % 3], &p, 1), i < 5 ? 1 : 0);
		if (i == 5)
			CU_ASSERT_EQUAL(p.status, -EFBIG);
	}
	m = metrics(C->s[2]);
	CU_ASSERT_EQUAL(m.skipped_oversize, 1);
	for (size_t i = 0; i < 5; i++) {
		/* only a capacity: the store looks in every class up to it */
		struct pc_page g = { .key = key, .data = out, .cap = 262145 };

		sprintf(key, "size-%zu", sizes[i]);
		g.key_len = strlen(key);
		CU_ASSERT_EQUAL(pc_batch_get(C->s[(i + 1) % 3], &g, 1), 1);
		CU_ASSERT_EQUAL(g.len, sizes[i]);
		CU_ASSERT(pc_test_page_ok(out, sizes[i], key, 1));
		/* with the expected length: exactly its class */
		g.len = sizes[i];
		CU_ASSERT_EQUAL(pc_batch_get(C->s[(i + 2) % 3], &g, 1), 1);
	}
	free(buf);
	free(out);
	down(C);
}

/* (b) a bucket READ that fails fails that key's write: nothing is written blind. */
static void test_failed_bucket_read(void)
{
	struct cluster *C = up(2, "slot_size_classes: [4KiB], slot_ways: 1, slot_num_buckets: 1, global_segment_size: 1MiB");
	struct batch *b = batch_new(2, 4096);
	struct fault *ft = fault_new();
	int j = 0;

	key_on(C, 1, "fb", &j, b->keys[0]);
	key_on(C, 1, "fb", &j, b->keys[1]);
	batch_for_set(b, 1);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], &b->pg[0], 1), 1);	/* also fetches the layout */
	CU_ASSERT_EQUAL_FATAL(fault_wrap_fabric(ft, C->s[0]->svc.fabric), 0);
	fault_add(ft, (struct fault_rule){ .site = FAULT_OP_READ, .count = 1 });
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], &b->pg[1], 1), 0);
	CU_ASSERT_EQUAL(b->pg[1].status, -EIO);
	CU_ASSERT_EQUAL(metrics(C->s[0]).write_failures, 1);
	/* the one slot still holds the first key, untouched */
	batch_for_get(b, 4096);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], b->pg, 2), 1);
	CU_ASSERT(pc_test_page_ok(b->buf, 4096, b->keys[0], 1));
	CU_ASSERT_EQUAL(b->pg[1].status, -ENOENT);
	fault_free(ft);
	batch_free(b);
	down(C);
}

/* (c) a writer whose clock is far behind still stamps newer than the bucket, so the
 * eviction victim is the truly oldest page. */
struct fake_env {
	struct pc_env base;
	uint64_t now;
};

static uint64_t fake_now(struct pc_env *c)
{
	return ((struct fake_env *)c)->now;
}

static void test_monotonic_stamps(void)
{
	static struct pc_env_ops ops;
	struct fake_env slow = { .now = 5 };
	struct cluster *C = up(3, "slot_size_classes: [4KiB], slot_ways: 2, slot_num_buckets: 1, global_segment_size: 1MiB");
	struct pc_store *slow_store;
	struct batch *b = batch_new(3, 4096);
	int j = 0;

	ops = *pc_env_posix()->ops;
	ops.now_ns = fake_now;
	slow.base.ops = &ops;
	/* n2's process runs with a clock far behind the others */
	pc_store_close(C->s[2]);
	C->s[2] = slow_store = open_node(C, "n2", &slow.base);
	for (int i = 0; i < 3; i++)
		key_on(C, 1, "ms", &j, b->keys[i]);
	batch_for_set(b, 1);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], &b->pg[0], 1), 1);	/* oldest */
	CU_ASSERT_EQUAL(pc_batch_set(slow_store, &b->pg[1], 1), 1);	/* clock says 5 */
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], &b->pg[2], 1), 1);	/* evicts one */
	batch_for_get(b, 4096);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], b->pg, 3), 2);
	CU_ASSERT_EQUAL(b->pg[0].status, -ENOENT);	/* the first written went */
	CU_ASSERT_EQUAL(b->pg[1].status, 0);		/* not the one with the small clock */
	batch_free(b);
	down(C);
}

static void test_cas_claim(void)
{
	struct cluster *C = up(2, "slot_size_classes: [8KiB], slot_cas_claim: true, global_segment_size: 2MiB");
	struct batch *b = batch_new(32, 8192);
	struct pc_metrics m = { .size = sizeof(m) };

	for (int i = 0; i < 32; i++)
		sprintf(b->keys[i], "cas%d", i);
	batch_for_set(b, 4);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], b->pg, 32), 32);
	m = metrics(C->s[0]);
	CU_ASSERT_EQUAL(m.round_trips, 4);	/* layout, bucket READ, CAS, WRITE */
	batch_for_get(b, 8192);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], b->pg, 32), 32);
	for (int i = 0; i < 32; i++)
		CU_ASSERT(pc_test_page_ok(b->buf + i * 8192, 8192, b->keys[i], 4));
	batch_free(b);
	down(C);
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Set key to version v through s: the number stored (0 or 1). */
static int set1(struct pc_store *s, struct batch *b, uint32_t v)
{
	batch_for_set(b, v);
	return pc_batch_set(s, b->pg, 1);
}

/* Get key through s: -ENOENT on a miss; on a hit, the version it holds (checked
 * against every version the test wrote), or -EBADMSG for a page no writer wrote. */
static int get1(struct pc_store *s, struct batch *b, uint32_t max_v)
{
	batch_for_get(b, b->len);
	if (pc_batch_get(s, b->pg, 1) != 1)
		return b->pg[0].status ? b->pg[0].status : -EIO;
	for (uint32_t v = 0; v <= max_v; v++)
		if (pc_test_page_ok(b->buf, b->len, b->keys[0], v))
			return (int)v;
	return -EBADMSG;
}

/* A writer that claims a slot and dies before it writes (its WRITE never lands), and
 * one that dies halfway through its WRITE: readers miss cleanly, never a half page,
 * and the slot takes writes again once the claim timeout has passed. */
static void test_dead_claim(void)
{
	struct cluster *C = up(2, "slot_size_classes: [8KiB], slot_ways: 1, slot_num_buckets: 1, "
			       "slot_cas_claim: true, slot_claim_timeout_ms: 300, global_segment_size: 1MiB");
	struct batch *b = batch_new(1, 8192);
	struct fault *ft = fault_new();
	struct pc_metrics m0, m1;
	uint64_t t0, t1 = 0;
	int j = 0, busy = 0, got;

	key_on(C, 1, "dc", &j, b->keys[0]);
	CU_ASSERT_EQUAL(set1(C->s[0], b, 1), 1);
	CU_ASSERT_EQUAL(get1(C->s[1], b, 9), 1);
	/* n0 claims the slot (its CAS lands) and never writes it */
	CU_ASSERT_EQUAL_FATAL(fault_wrap_fabric(ft, C->s[0]->svc.fabric), 0);
	fault_add(ft, (struct fault_rule){ .site = FAULT_OP_WRITE, .kind = FAULT_DROP });
	CU_ASSERT_EQUAL(set1(C->s[0], b, 2), 1);
	fault_unwrap_fabric(C->s[0]->svc.fabric);
	CU_ASSERT(fault_hits(ft, 0) >= 1);
	t0 = ms_now();
	/* until the claim times out every write is refused and every read misses */
	for (;;) {
		CU_ASSERT_EQUAL(get1(C->s[1], b, 9), -ENOENT);
		CU_ASSERT_EQUAL(get1(C->s[0], b, 9), -ENOENT);
		if (set1(C->s[busy & 1], b, 3) == 1) {
			t1 = ms_now();
			break;
		}
		CU_ASSERT_EQUAL(b->pg[0].status, -EBUSY);
		busy++;
		if (ms_now() - t0 > 5000)
			break;
		usleep(20000);
	}
	printf("\n  dead claim: %d writes refused, taken over after %lld ms\n", busy,
	       t1 ? (long long)(t1 - t0) : -1LL);
	CU_ASSERT_FATAL(t1 != 0);	/* the slot is usable again */
	CU_ASSERT(t1 - t0 >= 250);	/* and not before its time */
	CU_ASSERT(busy >= 1);	/* refused at least once before the timeout */
	CU_ASSERT_EQUAL(get1(C->s[1], b, 9), 3);
	CU_ASSERT_EQUAL(get1(C->s[0], b, 9), 3);
	m0 = metrics(C->s[0]);
	m1 = metrics(C->s[1]);
	CU_ASSERT_EQUAL(m0.claims_taken_over + m1.claims_taken_over, 1);
	/* a writer that dies halfway through its WRITE: the header lands, half the page
	 * does; the checksum makes that a clean miss and the slot is free at once */
	fault_clear(ft);
	CU_ASSERT_EQUAL_FATAL(fault_wrap_fabric(ft, C->s[0]->svc.fabric), 0);
	fault_add(ft, (struct fault_rule){ .site = FAULT_OP_WRITE, .kind = FAULT_TEAR, .count = 1 });
	CU_ASSERT_EQUAL(set1(C->s[0], b, 4), 1);
	fault_unwrap_fabric(C->s[0]->svc.fabric);
	got = get1(C->s[1], b, 9);
	CU_ASSERT_EQUAL(got, -ENOENT);
	CU_ASSERT_EQUAL(get1(C->s[0], b, 9), -ENOENT);
	CU_ASSERT(metrics(C->s[1]).miss_checksum + metrics(C->s[0]).miss_checksum >= 2);
	CU_ASSERT_EQUAL(set1(C->s[0], b, 5), 1);
	CU_ASSERT_EQUAL(get1(C->s[1], b, 9), 5);
	fault_free(ft);
	batch_free(b);
	down(C);
}

/* The watch set of node's class 0, way 0, bucket b, as slotmap_claims.c hashes it. */
static uint64_t watch_set(uint32_t node, uint64_t b)
{
	uint64_t where = (uint64_t)node << 32 | 1;

	return (((b * 0x9E3779B97F4A7C15ULL) ^ (where * 0xC2B2AE3D27D4EB4FULL)) >> 40) % 256;
}

/* A claim watched for the timeout is taken over, even when the watch list's set holds,
 * before it, a stale watch of the same node, class and way in another bucket. */
static void test_claim_beside_stale_watch(void)
{
	static struct pc_env_ops ops;
	const uint64_t timeout = 100000000ULL;	/* slot_claim_timeout_ms in ns */
	struct fake_env clock = { .now = 1 };
	struct cluster *C = up(2, "slot_size_classes: [8KiB], slot_cas_claim: true, "
			       "slot_claim_timeout_ms: 100, global_segment_size: 1MiB");
	uint64_t word = slot_claim_word(0, 1, 0), b2 = 1;
	struct slotmap *sm;

	ops = *pc_env_posix()->ops;
	ops.now_ns = fake_now;
	clock.base.ops = &ops;
	pc_store_close(C->s[0]);
	C->s[0] = open_node(C, "n0", &clock.base);
	sm = sm_of(C->s[0]->mode);
	while (watch_set(1, b2) != watch_set(1, 0))
		b2++;
	CU_ASSERT(!sm_claim_expired(sm, 1, 0, 0, 0, word));	/* bucket 0: watched, left */
	clock.now += timeout * 3 / 2;
	CU_ASSERT(!sm_claim_expired(sm, 1, 0, b2, 0, word));	/* b2's watch starts */
	clock.now += timeout;	/* bucket 0's watch is stale now, b2's due */
	CU_ASSERT(sm_claim_expired(sm, 1, 0, b2, 0, word));
	CU_ASSERT_EQUAL(metrics(C->s[0]).claims_taken_over, 1);
	down(C);
}

/* (a) two nodes writing the same bucket at once, and readers racing them: no reader
 * ever gets another key's page or a torn page. */
static void test_concurrent_writers(void)
{
	struct cluster *C = up(3, "slot_size_classes: [2KiB], slot_ways: 2, slot_num_buckets: 1, global_segment_size: 1MiB");
	char keys[6][32];
	struct pc_test_racer r[4];
	int j = 0;
	unsigned long bad, hits, writes;

	for (int i = 0; i < 6; i++)
		key_on(C, 2, "cw", &j, keys[i]);
	/* two remote writers (n0, n1), two readers (n1 remote, n2 the owner) */
	for (int i = 0; i < 4; i++)
		r[i] = (struct pc_test_racer){ .s = C->s[i == 0 ? 0 : i == 3 ? 2 : 1], .writer = i < 2,
					       .keys = (const char (*)[32])keys, .nkeys = 6 };
	pc_test_race(r, 4, 500, &writes, &hits, &bad);
	printf("\n  concurrent writers of one bucket: %lu writes, %lu reader hits, %lu bad\n",
	       writes, hits, bad);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(hits > 0 && writes > 0);
	down(C);
}

/* READs s's fabric posted since *ops (updated). */
static uint64_t reads_since(struct pc_store *s, uint64_t *ops)
{
	struct pc_fabric_stats f;
	uint64_t was = *ops;

	pc_fabric_get_stats(s->svc.fabric, &f);
	*ops = f.ops_read;
	return f.ops_read - was;
}

/* Whether s reads b's key i back as version v; a miss when v is 0. */
static bool reads_as(struct pc_store *s, struct batch *b, size_t i, uint32_t v)
{
	batch_for_get(b, 4096);
	if (pc_batch_get(s, &b->pg[i], 1) != (v ? 1 : 0))
		return false;
	return v ? pc_test_page_ok(b->buf + i * b->len, 4096, b->keys[i], v) :
		   b->pg[i].status == -ENOENT;
}

/*
 * A set of a key this node wrote before reads that way's header alone (one READ,
 * where the bucket takes one a way) and overwrites the key there. A key gone from
 * its hinted way reads the bucket whole next and takes the way slot_pick_way gives,
 * never the one its hint named, which holds another key now; keys that share a
 * bucket in one batch read it whole.
 */
static void test_hinted_sets(void)
{
	struct cluster *C = up(2, "slot_size_classes: [4KiB], slot_ways: 4, slot_num_buckets: 1, global_segment_size: 1MiB");
	struct pc_store *cl = open_node(C, NULL, NULL), *other = open_node(C, NULL, NULL);
	struct batch *b = batch_new(6, 4096);	/* K, F1..F4, L: n0's one bucket */
	uint64_t ops = 0, ev;
	int j = 0;

	for (size_t i = 0; i < b->n; i++)
		key_on(C, 0, "hset-", &j, b->keys[i]);
	batch_for_set(b, 1);
	CU_ASSERT_EQUAL(pc_batch_set(cl, &b->pg[0], 1), 1);
	reads_since(cl, &ops);
	batch_for_set(b, 2);
	CU_ASSERT_EQUAL(pc_batch_set(cl, &b->pg[0], 1), 1);
	CU_ASSERT_EQUAL(reads_since(cl, &ops), 1);	/* K's header, not four */
	CU_ASSERT(reads_as(other, b, 0, 2));
	CU_ASSERT_EQUAL(metrics(cl).evictions, 0);
	/* another writer fills the bucket: F1..F3 take the free ways, F4 evicts K, the
	 * oldest, so K's hinted way holds F4 */
	batch_for_set(b, 1);
	for (size_t i = 1; i <= 4; i++)
		CU_ASSERT_EQUAL(pc_batch_set(other, &b->pg[i], 1), 1);
	CU_ASSERT(reads_as(other, b, 0, 0));
	/* K again: the hinted header names F4, then the whole bucket; F1, the oldest
	 * now, makes room, and F4 stays */
	ev = metrics(cl).evictions;
	reads_since(cl, &ops);
	batch_for_set(b, 3);
	CU_ASSERT_EQUAL(pc_batch_set(cl, &b->pg[0], 1), 1);
	CU_ASSERT_EQUAL(reads_since(cl, &ops), 1 + 4);
	CU_ASSERT_EQUAL(metrics(cl).evictions - ev, 1);
	CU_ASSERT(reads_as(other, b, 0, 3));
	CU_ASSERT(reads_as(other, b, 4, 1));
	CU_ASSERT(reads_as(other, b, 1, 0));
	CU_ASSERT(reads_as(other, b, 2, 1) && reads_as(other, b, 3, 1));
	/* K with L in one batch: one bucket, read whole (a READ a way) */
	reads_since(cl, &ops);
	batch_for_set(b, 4);
	b->pg[1] = b->pg[5];
	CU_ASSERT_EQUAL(pc_batch_set(cl, b->pg, 2), 2);
	CU_ASSERT_EQUAL(reads_since(cl, &ops), 4);
	batch_free(b);
	pc_store_close(other);
	pc_store_close(cl);
	down(C);
}

static CU_TestInfo tests[] = {
	{ "same-bucket keys in one batch do not evict each other", test_same_bucket_batch },
	{ "a collision eviction is a clean miss; oldest first", test_eviction },
	{ "a key twice in one batch keeps the last page", test_duplicate_in_batch },
	{ "size classes; oversize pages skipped and counted", test_oversize_and_classes },
	{ "(b) a failed bucket READ never writes blind", test_failed_bucket_read },
	{ "(c) stamps are monotonic across writers' envs", test_monotonic_stamps },
	{ "CAS claim", test_cas_claim },
	{ "a dead writer's claim: clean misses, taken over after the timeout", test_dead_claim },
	{ "a claim beside a stale watch of its way is taken over in time",
	  test_claim_beside_stale_watch },
	{ "(a) concurrent writers of one bucket", test_concurrent_writers },
	{ "a hinted set reads its way's header alone; a stale hint, the bucket", test_hinted_sets },
	CU_TEST_INFO_NULL,
};

/* The racing and failing cases again with peers' slots mapped. */
static CU_TestInfo direct_tests[] = {
	{ "(a) concurrent writers of one bucket", test_concurrent_writers },
	{ "a fabric under fault injection maps nothing: its faults stay testable", test_failed_bucket_read },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "slotmap write", NULL, NULL, NULL, NULL, tests },
	     { "slotmap write, peers mapped", fixture_map_peers, fixture_unmap_peers, NULL, NULL, direct_tests })
