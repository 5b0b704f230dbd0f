/*
 * slotmap_read_test.c - slotmap gets and exists on the in-process fabric: round trips
 * across nodes, every miss reason, header-only exists, read amplification per read
 * policy, and owners that restart or go down, through ops and with peers mapped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <peercache/peercache.h>
#include "inproc/inproc.h"
#include "slotmap/slotmap_int.h"
#include "slotmap_fixture.h"
#include "store.h"
#include "testutil.h"

static void test_roundtrip(void)
{
	struct cluster *C = up(3, "slot_size_classes: [16KiB], global_segment_size: 8MiB");
	struct batch *b = batch_new(64, 12288);
	struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) };
	int per[3] = { 0 };

	for (size_t i = 0; i < b->n; i++) {
		sprintf(b->keys[i], "page-%zu", i);
		per[owner_of(C, b->keys[i])]++;
	}
	printf("\n  64 keys: %d on n0, %d on n1, %d on n2\n", per[0], per[1], per[2]);
	batch_for_set(b, 1);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], b->pg, b->n), 64);
	m0 = metrics(C->s[0]);
	CU_ASSERT_EQUAL(m0.write_requests, 64);
	CU_ASSERT_EQUAL(m0.bytes_written, 64 * 12288);
	/* the layout RPC, one READ of the buckets, one WRITE */
	CU_ASSERT_EQUAL(m0.round_trips, 3);
	CU_ASSERT_EQUAL(m0.layout_fetches, 2);
	for (int r = 1; r <= 2; r++) {
		m0 = metrics(C->s[r]);
		batch_for_get(b, 12288);
		CU_ASSERT_EQUAL(pc_batch_get(C->s[r], b->pg, b->n), 64);
		for (size_t i = 0; i < b->n; i++) {
			CU_ASSERT_EQUAL(b->pg[i].status, 0);
			CU_ASSERT_EQUAL(b->pg[i].len, 12288);
			CU_ASSERT(pc_test_page_ok(b->buf + i * b->len, 12288, b->keys[i], 1));
		}
		m1 = metrics(C->s[r]);
		CU_ASSERT_EQUAL(m1.hits - m0.hits, 64);
		CU_ASSERT_EQUAL(m1.read_requests - m0.read_requests, 64);
		/* a batch_get is one READ phase (plus the first layout RPC) */
		CU_ASSERT(m1.round_trips - m0.round_trips - (m1.layout_fetches ? 1 : 0) <= 2);
		printf("  read on n%d: %llu round trips (%llu layout), bytes read per hit byte %.3f, first-phase hits %llu/64\n",
		       r, (unsigned long long)(m1.round_trips - m0.round_trips),
		       (unsigned long long)m1.layout_fetches,
		       (double)(m1.bytes_read - m0.bytes_read) / (double)(m1.hit_bytes - m0.hit_bytes),
		       (unsigned long long)(m1.first_phase_hits - m0.first_phase_hits));
	}
	/* the second get on n2 needs no layout: exactly one round trip */
	m0 = metrics(C->s[2]);
	batch_for_get(b, 12288);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[2], b->pg, b->n), 64);
	m1 = metrics(C->s[2]);
	CU_ASSERT(m1.round_trips - m0.round_trips <= 2);
	batch_free(b);
	down(C);
}

static void test_clean_miss_and_length(void)
{
	struct cluster *C = up(2, "slot_size_classes: [16KiB], global_segment_size: 4MiB");
	uint8_t page[12288], out[16384];
	struct pc_page set = { .key = "A", .key_len = 1, .data = page, .len = sizeof(page) };
	struct pc_page get = { .key = "nope", .key_len = 4, .data = out, .cap = sizeof(out) };
	struct pc_metrics m = { .size = sizeof(m) };

	pc_test_fill(page, sizeof(page), "A", 1);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], &set, 1), 1);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], &get, 1), 0);
	CU_ASSERT_EQUAL(get.status, -ENOENT);
	CU_ASSERT_EQUAL(get.len, 0);
	/* no dirty hit on a length mismatch: expected 8192, stored 12288 */
	get = (struct pc_page){ .key = "A", .key_len = 1, .data = out, .cap = sizeof(out), .len = 8192 };
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], &get, 1), 0);
	CU_ASSERT_EQUAL(get.status, -ENOENT);
	/* a buffer too small is a length miss, never a truncated page */
	get = (struct pc_page){ .key = "A", .key_len = 1, .data = out, .cap = 12000 };
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], &get, 1), 0);
	CU_ASSERT_EQUAL(get.status, -ENOENT);
	/* any length up to the capacity: the true length comes back */
	get = (struct pc_page){ .key = "A", .key_len = 1, .data = out, .cap = sizeof(out) };
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], &get, 1), 1);
	CU_ASSERT_EQUAL(get.len, 12288);
	CU_ASSERT(pc_test_page_ok(out, 12288, "A", 1));
	m = metrics(C->s[1]);
	CU_ASSERT_EQUAL(m.miss_absent, 1);
	CU_ASSERT_EQUAL(m.miss_length, 2);
	CU_ASSERT_EQUAL(m.hits, 1);
	/* the same from the owner's own memory */
	get = (struct pc_page){ .key = "A", .key_len = 1, .data = out, .cap = sizeof(out), .len = 4096 };
	CU_ASSERT_EQUAL(pc_batch_get(C->s[owner_of(C, "A")], &get, 1), 0);
	CU_ASSERT_EQUAL(get.status, -ENOENT);
	/* bad arguments */
	get = (struct pc_page){ .key = NULL, .key_len = 3, .data = out, .cap = 10 };
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], &get, 1), 0);
	CU_ASSERT_EQUAL(get.status, -EINVAL);
	get = (struct pc_page){ .key = "A", .key_len = 1, .data = out, .cap = 10, .len = 20 };
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], &get, 1), 0);
	CU_ASSERT_EQUAL(get.status, -EINVAL);
	down(C);
}

/* A page of no bytes, set and got without a buffer (capacity 0 needs none): a hit of
 * length 0 on its owner, in place, as on the other node, through ops (a bucket read
 * for 1 KiB pages, the index or the predicted way for 16 KiB). */
static void test_empty_page_without_buffer(void)
{
	static const char *const stores[] = {
		"slot_size_classes: [16KiB], global_segment_size: 4MiB",
		"slot_size_classes: [1KiB], global_segment_size: 4MiB",
	};

	for (size_t i = 0; i < 2; i++) {
		struct cluster *C = up(2, stores[i]);
		struct pc_page set = { .key = "Z", .key_len = 1 };
		struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) };

		CU_ASSERT_EQUAL_FATAL(pc_batch_set(C->s[0], &set, 1), 1);
		for (uint32_t r = 0; r < 2; r++) {
			struct pc_page get = { .key = "Z", .key_len = 1 };

			m0 = metrics(C->s[r]);
			CU_ASSERT_EQUAL(pc_batch_get(C->s[r], &get, 1), 1);
			CU_ASSERT_EQUAL(get.status, 0);
			CU_ASSERT_EQUAL(get.len, 0);
			m1 = metrics(C->s[r]);
			CU_ASSERT_EQUAL(m1.miss_checksum - m0.miss_checksum, 0);
		}
		down(C);
	}
}

/* exists of 32 keys of which the first 16 exist, on s: the metrics before it. */
static struct pc_metrics exists_16_of_32(struct pc_store *s, struct pc_page *ex)
{
	struct pc_metrics m0 = metrics(s);

	for (size_t i = 0; i < 32; i++)
		ex[i].status = 0;
	CU_ASSERT_EQUAL(pc_batch_exists(s, ex, 32), 16);
	for (size_t i = 0; i < 16; i++) {
		CU_ASSERT_EQUAL(ex[i].status, 0);
		CU_ASSERT_EQUAL(ex[16 + i].status, -ENOENT);
	}
	return m0;
}

/* (e) exists moves header bytes only: ways x 64 B per key, or for a key hinted its
 * way's header and the index block; and agrees with get. */
static void test_exists(void)
{
	struct cluster *C = up(2, "slot_size_classes: [64KiB], slot_ways: 4, global_segment_size: 8MiB");
	struct batch *b = batch_new(16, 65536);
	struct pc_page ex[32];
	struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) };
	char other[16][32];
	int remote = 0, hinted = 0;
	uint64_t expect = 0;

	for (size_t i = 0; i < 16; i++)
		sprintf(b->keys[i], "e%zu", i);
	batch_for_set(b, 3);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], b->pg, 16), 16);
	for (size_t i = 0; i < 16; i++) {
		sprintf(other[i], "absent%zu", i);
		ex[i] = (struct pc_page){ .key = b->keys[i], .key_len = strlen(b->keys[i]) };
		ex[16 + i] = (struct pc_page){ .key = other[i], .key_len = strlen(other[i]) };
		remote += owner_of(C, b->keys[i]) != 1;
		remote += owner_of(C, other[i]) != 1;
	}
	m0 = exists_16_of_32(C->s[1], ex);
	m1 = metrics(C->s[1]);
	printf("\n  exists: %llu bytes read for 32 keys (4 ways x 64 B = 256 per key)\n",
	       (unsigned long long)(m1.bytes_read - m0.bytes_read));
	CU_ASSERT_EQUAL(m1.bytes_read - m0.bytes_read, 32 * 4 * 64);
	/* one READ phase, after the layout RPC the first time n1 meets n0 */
	CU_ASSERT_EQUAL(m1.round_trips - m0.round_trips,
			(remote ? 1 : 0) + (m1.layout_fetches - m0.layout_fetches ? 1 : 0));
	CU_ASSERT_EQUAL(m1.exists_hits - m0.exists_hits, 16);
	/* n0's keys it found are hinted now (slotmap_hints.h): exists reads their way's
	 * header and the index block, 128 B, and their get takes one round trip */
	for (size_t i = 0; i < 32; i++) {
		expect += i < 16 && owner_of(C, b->keys[i]) == 0 ? 2 * 64 : 4 * 64;
		hinted += i < 16 && owner_of(C, b->keys[i]) == 0;
	}
	m0 = exists_16_of_32(C->s[1], ex);
	m1 = metrics(C->s[1]);
	printf("  exists again: %llu bytes read (%d keys hinted)\n",
	       (unsigned long long)(m1.bytes_read - m0.bytes_read), hinted);
	CU_ASSERT_EQUAL(m1.bytes_read - m0.bytes_read, expect);
	CU_ASSERT_EQUAL(m1.round_trips - m0.round_trips, remote ? 1 : 0);
	/* agrees with get */
	m0 = metrics(C->s[1]);
	batch_for_get(b, 65536);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], b->pg, 16), 16);
	m1 = metrics(C->s[1]);
	CU_ASSERT_EQUAL(m1.round_trips - m0.round_trips, hinted ? 1 : 0);
	batch_free(b);
	down(C);
}

/* Read amplification at about 80% slot occupancy, per read policy. */
static void test_read_amplification(void)
{
	static const char *const policies[] = { "bucket", "predict", "index", "auto" };

	printf("\n");
	for (int p = 0; p < 4; p++) {
		char store[256];
		struct cluster *C;
		struct pc_store *cl;
		struct batch *b;
		struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) };
		const size_t len = 12288, keys = 4 * 256 * 8 / 10;	/* 256 buckets x 4 ways, 80% */
		size_t stored;

		snprintf(store, sizeof(store),
			 "slot_size_classes: [12KiB], slot_ways: 4, slot_num_buckets: 256, slot_read_policy: %s",
			 policies[p]);
		C = up(1, store);
		/* a client: every read goes over the fabric, as it would from another node */
		cl = open_node(C, NULL, NULL);
		b = batch_new(keys, len);
		for (size_t i = 0; i < keys; i++)
			sprintf(b->keys[i], "amp-%zu", i);
		batch_for_set(b, 1);
		/* write in batches of 16 so reservations do not fill buckets artificially */
		for (size_t i = 0; i < keys; i += 16)
			pc_batch_set(cl, b->pg + i, keys - i < 16 ? keys - i : 16);
		stored = metrics(cl).write_requests;
		m0 = metrics(cl);
		batch_for_get(b, len);
		for (size_t i = 0; i < keys; i += 64)
			pc_batch_get(cl, b->pg + i, keys - i < 64 ? keys - i : 64);
		m1 = metrics(cl);
		printf("  read policy %-7s: %zu keys in 1024 slots (%llu stored, %llu evicted): hits %llu, one-phase %.1f%%, round trips per batch %.2f, bytes read per hit byte %.3f\n",
		       policies[p], keys, (unsigned long long)stored,
		       (unsigned long long)m1.evictions, (unsigned long long)(m1.hits - m0.hits),
		       100.0 * (double)(m1.first_phase_hits - m0.first_phase_hits) /
			       (double)(m1.hits - m0.hits),
		       (double)(m1.round_trips - m0.round_trips) / (double)((keys + 63) / 64),
		       (double)(m1.bytes_read - m0.bytes_read) / (double)(m1.hit_bytes - m0.hit_bytes));
		for (size_t i = 0; i < keys; i++)
			if (!b->pg[i].status)
				CU_ASSERT(pc_test_page_ok(b->buf + i * len, len, b->keys[i], 1));
		CU_ASSERT(m1.hits - m0.hits >= stored - m1.evictions);
		/* index (and auto, which picks it for batches) move little more than the page */
		if (p >= 2)
			CU_ASSERT((double)(m1.bytes_read - m0.bytes_read) /
					  (double)(m1.hit_bytes - m0.hit_bytes) <= 1.25);
		if (p == 0)
			CU_ASSERT_EQUAL(m1.round_trips - m0.round_trips, (keys + 63) / 64);
		batch_free(b);
		pc_store_close(cl);
		down(C);
	}
}

/* Round trips of one get of b's first n keys on s; every page checked. */
static uint64_t get_trips(struct pc_store *s, struct batch *b, size_t n, int hits, uint32_t v)
{
	struct pc_metrics m0 = metrics(s), m1;

	batch_for_get(b, 4096);
	CU_ASSERT_EQUAL(pc_batch_get(s, b->pg, n), hits);
	for (size_t i = 0; i < n; i++)
		if (!b->pg[i].status)
			CU_ASSERT(pc_test_page_ok(b->buf + i * b->len, 4096, b->keys[i], v));
	m1 = metrics(s);
	return m1.round_trips - m0.round_trips;
}

/* exists of b's first n keys on s: how many it found; *trips its round trips. */
static int exists_of(struct pc_store *s, struct batch *b, size_t n, uint64_t *trips)
{
	struct pc_page ex[8];
	struct pc_metrics m0 = metrics(s);
	int found;

	for (size_t i = 0; i < n; i++)
		ex[i] = (struct pc_page){ .key = b->keys[i], .key_len = strlen(b->keys[i]) };
	found = pc_batch_exists(s, ex, n);
	*trips = metrics(s).round_trips - m0.round_trips;
	return found;
}

/*
 * Way hints (slotmap_hints.h): a node that wrote a key, or read it through the index,
 * reads it next in one round trip; a key that left its hinted way is found again (or
 * missed cleanly), and never read from the wrong way.
 */
static void test_way_hints(void)
{
	struct cluster *C = up(2, "slot_size_classes: [4KiB], slot_ways: 4, slot_num_buckets: 1");
	struct pc_store *cl = open_node(C, NULL, NULL), *other = open_node(C, NULL, NULL);
	struct batch *b = batch_new(8, 4096), *e = batch_new(4, 4096);
	uint64_t trips;
	int j = 0;

	/* three keys of n0's one bucket; four more fill it */
	for (int i = 0; i < 3; i++)
		key_on(C, 0, "hint-", &j, b->keys[i]);
	for (int i = 0; i < 4; i++)
		key_on(C, 0, "evict-", &j, e->keys[i]);
	batch_for_set(b, 1);
	CU_ASSERT_EQUAL(pc_batch_set(cl, b->pg, 3), 3);
	get_trips(cl, b, 3, 3, 1);	/* n0's layout is known now */
	CU_ASSERT_EQUAL(get_trips(cl, b, 3, 3, 1), 1);	/* the writer knows the ways */
	/* a reader that never saw them: the layout, the index, then the slot; after
	 * that, one round trip */
	CU_ASSERT_EQUAL(get_trips(other, b, 3, 3, 1), 3);
	CU_ASSERT_EQUAL(get_trips(other, b, 3, 3, 1), 1);
	/* evicted by another writer: a clean miss decided at once, the hint forgotten */
	batch_for_set(e, 1);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[1], e->pg, 4), 4);
	CU_ASSERT_EQUAL(exists_of(cl, b, 3, &trips), 0);	/* exists too, at once */
	CU_ASSERT_EQUAL(trips, 1);
	CU_ASSERT_EQUAL(get_trips(cl, b, 3, 0, 1), 1);
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(b->pg[i].status, -ENOENT);
	/* written again by another node, into whatever way it picks: found through the
	 * index (cl's hints are gone or name other keys' ways), then hinted again */
	batch_for_set(b, 2);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[1], b->pg, 3), 3);
	CU_ASSERT_EQUAL(exists_of(other, b, 3, &trips), 3);	/* other's hints: stale ways */
	CU_ASSERT(trips <= 2);
	CU_ASSERT_EQUAL(get_trips(other, b, 3, 3, 2), 1);	/* hinted by exists */
	CU_ASSERT_EQUAL(exists_of(other, b, 3, &trips), 3);
	CU_ASSERT_EQUAL(trips, 1);
	batch_free(b);
	batch_free(e);
	pc_store_close(other);
	pc_store_close(cl);
	down(C);
}

/* READs cl's fabric posted since *ops (updated). */
static uint64_t reads_since(struct pc_store *s, uint64_t *ops)
{
	struct pc_fabric_stats f;
	uint64_t was = *ops;

	pc_fabric_get_stats(s->svc.fabric, &f);
	*ops = f.ops_read;
	return f.ops_read - was;
}

/*
 * A hinted get reads the hinted way alone (slotmap_read.c: hinted): one READ a key.
 * A key that moved reads the index block next and then its slot (three round trips),
 * and is hinted in its new way after; a key this node evicted by its own write has
 * no hint left, so its miss is decided in one round trip.
 */
static void test_hinted_reads(void)
{
	struct cluster *C = up(2, "slot_size_classes: [4KiB], slot_ways: 4, slot_num_buckets: 1");
	struct pc_store *cl = open_node(C, NULL, NULL), *other = open_node(C, NULL, NULL);
	struct batch *b = batch_new(9, 4096);	/* K, F1..F3, G, H1..H4: n0's one bucket */
	uint64_t ops = 0;
	int j = 0;

	for (size_t i = 0; i < b->n; i++)
		key_on(C, 0, "hinted-", &j, b->keys[i]);
	batch_for_set(b, 1);
	CU_ASSERT_EQUAL(pc_batch_set(cl, &b->pg[0], 1), 1);
	get_trips(cl, b, 1, 1, 1);		/* n0's layout is known now */
	reads_since(cl, &ops);
	CU_ASSERT_EQUAL(get_trips(cl, b, 1, 1, 1), 1);
	CU_ASSERT_EQUAL(reads_since(cl, &ops), 1);	/* the slot, no index block */
	/* another writer fills the bucket, evicts K (the oldest) with G, and writes K
	 * again over F1 (the oldest then): K left the way cl saw it in */
	for (size_t i = 1; i <= 4; i++)
		CU_ASSERT_EQUAL(pc_batch_set(other, &b->pg[i], 1), 1);
	batch_for_set(b, 2);
	CU_ASSERT_EQUAL(pc_batch_set(other, &b->pg[0], 1), 1);
	CU_ASSERT_EQUAL(get_trips(cl, b, 1, 1, 2), 3);	/* G's header, the index, K */
	CU_ASSERT_EQUAL(reads_since(cl, &ops), 3);
	CU_ASSERT_EQUAL(get_trips(cl, b, 1, 1, 2), 1);	/* hinted in its new way */
	CU_ASSERT_EQUAL(reads_since(cl, &ops), 1);
	/* cl's own writes evict F2, F3, G and then K: K's hint goes with it */
	batch_for_set(b, 3);
	for (size_t i = 5; i < 9; i++)
		CU_ASSERT_EQUAL(pc_batch_set(cl, &b->pg[i], 1), 1);
	CU_ASSERT_EQUAL(get_trips(cl, b, 1, 0, 2), 1);	/* the index says: absent */
	CU_ASSERT_EQUAL(b->pg[0].status, -ENOENT);
	batch_free(b);
	pc_store_close(other);
	pc_store_close(cl);
	down(C);
}

/* Pages of 1 MiB and more are read index-first: no hints kept for them, no table. */
static void test_no_hints_for_large_pages(void)
{
	struct cluster *C = up(2, "slot_size_classes: [1MiB], slot_ways: 4, slot_num_buckets: 1");
	struct pc_store *cl = open_node(C, NULL, NULL);
	struct batch *b = batch_new(3, 4096);
	int j = 0;

	for (int i = 0; i < 3; i++)
		key_on(C, 0, "big-", &j, b->keys[i]);
	batch_for_set(b, 1);
	CU_ASSERT_EQUAL(pc_batch_set(cl, b->pg, 3), 3);
	get_trips(cl, b, 3, 3, 1);
	CU_ASSERT_EQUAL(get_trips(cl, b, 3, 3, 1), 2);	/* the index, then the slot */
	CU_ASSERT_PTR_NULL(sm_of(cl->mode)->hints);
	batch_free(b);
	pc_store_close(cl);
	down(C);
}

/* (d) an owner that restarts with a new region is re-resolved, never read through a
 * stale address. */
static void test_restarted_owner(void)
{
	struct cluster *C = up(3, "slot_size_classes: [4KiB], global_segment_size: 2MiB");
	struct batch *b = batch_new(8, 4096);
	struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) };
	int j = 0;

	for (int i = 0; i < 8; i++)
		key_on(C, 2, "rs", &j, b->keys[i]);
	batch_for_set(b, 1);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], b->pg, 8), 8);
	batch_for_get(b, 4096);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], b->pg, 8), 8);
	pc_store_close(C->s[2]);
	C->s[2] = open_node(C, "n2", NULL);	/* same name, new region and incarnation */
	m0 = metrics(C->s[1]);
	batch_for_get(b, 4096);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], b->pg, 8), 0);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(b->pg[i].status, -ENOENT);	/* a clean miss: the cache restarted */
	m1 = metrics(C->s[1]);
	CU_ASSERT_EQUAL(m1.layout_fetches - m0.layout_fetches, 1);
	CU_ASSERT_EQUAL(m1.miss_unreachable - m0.miss_unreachable, 0);
	/* writers re-resolve too */
	batch_for_set(b, 2);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], b->pg, 8), 8);
	batch_for_get(b, 4096);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], b->pg, 8), 8);
	CU_ASSERT(pc_test_page_ok(b->buf, 4096, b->keys[0], 2));
	batch_free(b);
	down(C);
}

static void test_owner_down(void)
{
	struct cluster *C = up(3, "slot_size_classes: [4KiB], global_segment_size: 2MiB");
	struct batch *b = batch_new(30, 4096);
	struct pc_metrics m = { .size = sizeof(m) };
	int down_keys = 0;

	for (int i = 0; i < 30; i++)
		sprintf(b->keys[i], "od%d", i);
	batch_for_set(b, 1);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], b->pg, 30), 30);
	inproc_world_set_down(C->w, 2, true);
	batch_for_get(b, 4096);
	pc_batch_get(C->s[1], b->pg, 30);
	for (int i = 0; i < 30; i++) {
		if (owner_of(C, b->keys[i]) == 2) {
			down_keys++;
			CU_ASSERT_EQUAL(b->pg[i].status, -ECONNREFUSED);
		} else {
			CU_ASSERT_EQUAL(b->pg[i].status, 0);
			CU_ASSERT(pc_test_page_ok(b->buf + i * 4096, 4096, b->keys[i], 1));
		}
	}
	m = metrics(C->s[1]);
	CU_ASSERT_EQUAL(m.miss_unreachable, (uint64_t)down_keys);
	CU_ASSERT(down_keys > 0);
	/* while it backs off, its keys fail at once with the same error, counted alike */
	batch_for_get(b, 4096);
	pc_batch_get(C->s[1], b->pg, 30);
	for (int i = 0; i < 30; i++)
		CU_ASSERT_EQUAL(b->pg[i].status, owner_of(C, b->keys[i]) == 2 ? -ECONNREFUSED : 0);
	m = metrics(C->s[1]);
	CU_ASSERT_EQUAL(m.miss_unreachable, 2 * (uint64_t)down_keys);
	inproc_world_set_down(C->w, 2, false);
	usleep(150 * 1000);		/* store.peer_backoff_ms: 100 */
	batch_for_get(b, 4096);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], b->pg, 30), 30);
	batch_free(b);
	down(C);
}

static CU_TestInfo tests[] = {
	{ "cross-node round trip, byte-identical", test_roundtrip },
	{ "clean miss; no dirty hit on length mismatch", test_clean_miss_and_length },
	{ "a page of no bytes, without a buffer", test_empty_page_without_buffer },
	{ "(e) exists is header-only and agrees with get", test_exists },
	{ "read amplification at 80% occupancy", test_read_amplification },
	{ "way hints: one round trip for a key seen, never a wrong way", test_way_hints },
	{ "a hinted get reads the way alone; a key that moved or that this node evicted", test_hinted_reads },
	{ "no way hints for pages read index-first", test_no_hints_for_large_pages },
	{ "(d) a restarted owner is re-resolved", test_restarted_owner },
	{ "an owner down: its keys fail, the rest hit", test_owner_down },
	CU_TEST_INFO_NULL,
};

/* The racing and failing cases again with peers' slots mapped. */
static CU_TestInfo direct_tests[] = {
	{ "a page of no bytes, without a buffer", test_empty_page_without_buffer },
	{ "(d) a restarted owner is re-resolved", test_restarted_owner },
	{ "an owner down: its keys fail, the rest hit", test_owner_down },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "slotmap read", NULL, NULL, NULL, NULL, tests },
	     { "slotmap read, peers mapped", fixture_map_peers, fixture_unmap_peers, NULL, NULL, direct_tests })
