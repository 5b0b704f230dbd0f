/*
 * store_test.c - the store in slotmap mode on the in-process fabric: round trips
 * across nodes, every miss reason, size classes, reservations, evictions, read
 * amplification, and the known failure modes of the Python/C++ slotmap:
 * (a) concurrent writers of one bucket, (b) a failed bucket READ, (c) monotonic
 * stamps, (d) a restarted owner, (e) header-only exists.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <peercache/peercache.h>
#include "builtin.h"
#include "config/topology.h"
#include "inproc/inproc.h"
#include "placement/slot.h"
#include "slotmap/slotmap_int.h"
#include "store.h"
#include "fault.h"
#include "testutil.h"

#define MAXN 4

struct cluster {
	struct pc_topology *topo;
	struct inproc_world *w;
	struct pc_store *s[MAXN];
	uint32_t n;
};

static bool payload_free;	/* open stores without payloads (the simulator's mode) */
static bool shared;		/* stores map each other's slots (the simulator's hit-rate mode) */

static struct pc_store *open_node(struct cluster *C, const char *node, struct pc_env *env)
{
	char err[PC_ERR_MAX] = "";
	struct pc_store_opts o = { .size = sizeof(o), .topo = C->topo, .node = node,
				   .fabric = "inproc", .err = err, .errlen = sizeof(err) };
	struct store_deps x = { .backend_arg = C->w, .env = env, .payload_free = payload_free };
	struct pc_store *s = NULL;

	if (builtin_store_open(&o, &x, &s))
		printf("\n  open %s: %s\n", node ? node : "client", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	return s;
}

/* n nodes named n0.. with the given store section. */
static struct cluster *up(uint32_t n, const char *store)
{
	struct cluster *C = calloc(1, sizeof(*C));
	char text[1024], err[PC_ERR_MAX], name[8];
	int len = snprintf(text, sizeof(text), "store: {%s}\nnodes:\n", store);

	for (uint32_t i = 0; i < n; i++)
		len += snprintf(text + len, sizeof(text) - (size_t)len,
				"  - {name: n%u, address: 127.0.0.1, port: %u}\n", i, 40000 + i);
	if (pc_topology_parse(text, (size_t)len, "test", &C->topo, err, sizeof(err)))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(C->topo);
	C->w = inproc_world_create(n);
	inproc_world_share(C->w, shared);
	C->n = n;
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		C->s[i] = open_node(C, name, NULL);
	}
	return C;
}

static void down(struct cluster *C)
{
	for (uint32_t i = 0; i < C->n; i++)
		pc_store_close(C->s[i]);
	inproc_world_destroy(C->w);
	pc_topology_free(C->topo);
	free(C);
}

static uint32_t owner_of(struct cluster *C, const char *key)
{
	return ring_owner_of(C->s[0]->svc.ring, keyhash_of(key, strlen(key)));
}

/* The next key "<prefix><j>" owned by node. */
static void key_on(struct cluster *C, uint32_t node, const char *prefix, int *j, char *out)
{
	do
		sprintf(out, "%s%d", prefix, (*j)++);
	while (owner_of(C, out) != node);
}

static struct pc_metrics metrics(struct pc_store *s)
{
	struct pc_metrics m = { .size = sizeof(m) };

	pc_store_metrics(s, &m);
	return m;
}

struct batch {
	size_t n;
	char (*keys)[32];
	uint8_t *buf;
	size_t len;
	struct pc_page *pg;
};

static struct batch *batch_new(size_t n, size_t len)
{
	struct batch *b = calloc(1, sizeof(*b));

	b->n = n;
	b->len = len;
	b->keys = calloc(n, 32);
	b->buf = calloc(n, len);
	b->pg = calloc(n, sizeof(*b->pg));
	return b;
}

static void batch_free(struct batch *b)
{
	free(b->keys);
	free(b->buf);
	free(b->pg);
	free(b);
}

/* Pages for set: keys[i], content version v. */
static void batch_for_set(struct batch *b, uint32_t v)
{
	for (size_t i = 0; i < b->n; i++) {
		pc_test_fill(b->buf + i * b->len, b->len, b->keys[i], v);
		b->pg[i] = (struct pc_page){ .key = b->keys[i], .key_len = strlen(b->keys[i]),
					     .data = b->buf + i * b->len, .len = b->len };
	}
}

static void batch_for_get(struct batch *b, size_t expect)
{
	memset(b->buf, 0, b->n * b->len);
	for (size_t i = 0; i < b->n; i++)
		b->pg[i] = (struct pc_page){ .key = b->keys[i], .key_len = strlen(b->keys[i]),
					     .data = b->buf + i * b->len, .cap = b->len,
					     .len = expect };
}

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

/* (e) exists moves header bytes only: ways x 64 B per key; and agrees with get. */
static void test_exists(void)
{
	struct cluster *C = up(2, "slot_size_classes: [64KiB], slot_ways: 4, global_segment_size: 8MiB");
	struct batch *b = batch_new(16, 65536);
	struct pc_page ex[32];
	struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) };
	char other[16][32];
	int remote = 0;

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
	m0 = metrics(C->s[1]);
	CU_ASSERT_EQUAL(pc_batch_exists(C->s[1], ex, 32), 16);
	m1 = metrics(C->s[1]);
	for (size_t i = 0; i < 16; i++) {
		CU_ASSERT_EQUAL(ex[i].status, 0);
		CU_ASSERT_EQUAL(ex[16 + i].status, -ENOENT);
	}
	printf("\n  exists: %llu bytes read for 32 keys (4 ways x 64 B = 256 per key)\n",
	       (unsigned long long)(m1.bytes_read - m0.bytes_read));
	CU_ASSERT_EQUAL(m1.bytes_read - m0.bytes_read, 32 * 4 * 64);
	/* one READ phase, after the layout RPC the first time n1 meets n0 */
	CU_ASSERT_EQUAL(m1.round_trips - m0.round_trips,
			(remote ? 1 : 0) + (m1.layout_fetches - m0.layout_fetches ? 1 : 0));
	CU_ASSERT_EQUAL(m1.exists_hits - m0.exists_hits, 16);
	/* agrees with get */
	batch_for_get(b, 65536);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], b->pg, 16), 16);
	batch_free(b);
	down(C);
}

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
	inproc_world_set_down(C->w, 2, false);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], b->pg, 30), 30);
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

/* Many application threads on one store: every page a get returns is the one its
 * key was written with. A page may be lost (a cache may lose pages): two remote
 * writers that pick the same free way of a bucket at once overwrite each other (the
 * seed's race, closed by slot_cas_claim), and a full bucket evicts its oldest page.
 * Both are rare here: a few pages in a thousand at most. */
struct thread_counts {
	int bad, lost;
};

static void *threads_body(void *p)
{
	struct pc_store *s = ((void **)p)[0];
	int id = (int)(intptr_t)((void **)p)[1];
	struct thread_counts *n = calloc(1, sizeof(*n));
	struct batch *b = batch_new(32, 4096);

	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 32; i++)
			sprintf(b->keys[i], "t%d-%d-%d", id, round, i);
		batch_for_set(b, (uint32_t)round);
		n->lost += 32 - pc_batch_set(s, b->pg, 32);
		batch_for_get(b, 4096);
		pc_batch_get(s, b->pg, 32);
		for (int i = 0; i < 32; i++) {
			if (b->pg[i].status)
				n->lost++;
			else
				n->bad += !pc_test_page_ok(b->buf + i * 4096, 4096, b->keys[i], (uint32_t)round);
		}
	}
	batch_free(b);
	return n;
}

static void test_threads(void)
{
	struct cluster *C = up(3, "slot_size_classes: [4KiB], global_segment_size: 64MiB");
	pthread_t t[4];
	void *args[4][2];
	int bad = 0, lost = 0;

	for (int i = 0; i < 4; i++) {
		args[i][0] = C->s[i % 2];
		args[i][1] = (void *)(intptr_t)i;
		pthread_create(&t[i], NULL, threads_body, args[i]);
	}
	for (int i = 0; i < 4; i++) {
		struct thread_counts *r;

		pthread_join(t[i], (void **)&r);
		bad += r->bad;
		lost += r->lost;
		free(r);
	}
	printf("\n  4 threads x 640 pages: %d wrong pages, %d lost", bad, lost);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(lost <= 2560 / 200);
	down(C);
}

static void test_client_and_open_errors(void)
{
	struct cluster *C = up(2, "slot_size_classes: [4KiB], global_segment_size: 1MiB");
	struct pc_store *cl = open_node(C, NULL, NULL), *s = NULL;
	uint8_t page[100], out[100];
	struct pc_page p = { .key = "c", .key_len = 1, .data = page, .len = 100 };
	char err[PC_ERR_MAX];
	struct pc_store_opts o = { .size = sizeof(o), .topo = C->topo, .node = "n9",
				   .fabric = "inproc", .err = err, .errlen = sizeof(err) };
	struct store_deps x = { .backend_arg = C->w };

	CU_ASSERT_PTR_NULL(pc_store_node(cl));
	CU_ASSERT_STRING_EQUAL(pc_store_node(C->s[1]), "n1");
	pc_test_fill(page, 100, "c", 1);
	CU_ASSERT_EQUAL(pc_batch_set(cl, &p, 1), 1);
	p = (struct pc_page){ .key = "c", .key_len = 1, .data = out, .cap = 100 };
	CU_ASSERT_EQUAL(pc_batch_get(C->s[0], &p, 1), 1);
	CU_ASSERT(pc_test_page_ok(out, 100, "c", 1));
	pc_store_close(cl);
	CU_ASSERT_EQUAL(builtin_store_open(&o, &x, &s), -EINVAL);
	printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no node named 'n9'"));
	o.node = "n1";				/* already open in this world */
	CU_ASSERT(builtin_store_open(&o, &x, &s) < 0);
	printf("  %s\n", err);
	o.fabric = "nosuch";
	o.node = NULL;
	CU_ASSERT_EQUAL(builtin_store_open(&o, &x, &s), -EINVAL);
	printf("  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "fabric 'nosuch': not built into this library"));
	down(C);
}

/* The simulator's payload-free mode makes the same decisions as the real thing:
 * the same workload gives the same hit/miss/eviction outcome per page, with slot
 * memory of headers only. */
static void run_mixed(int *outcome, size_t n, uint64_t *mem, uint64_t *round_trips)
{
	struct cluster *C = up(3, "slot_size_classes: [4KiB, 16KiB], slot_ways: 2, slot_num_buckets: 8, slot_read_policy: predict");
	struct batch *b = batch_new(n, 16384);
	size_t o = 0;

	*mem = 0;
	for (uint32_t i = 0; i < 3; i++) {
		struct store_footprint fp;

		store_footprint(C->s[i], &fp);
		*mem += fp.mem_bytes;
	}
	for (size_t i = 0; i < n; i++)
		sprintf(b->keys[i], "mix-%zu", (i * 7919) % (n / 2));	/* repeats: overwrites */
	for (size_t i = 0; i < n; i += 16) {
		size_t m = n - i < 16 ? n - i : 16;

		for (size_t k = 0; k < m; k++)
			b->pg[i + k] = (struct pc_page){ .key = b->keys[i + k],
							 .key_len = strlen(b->keys[i + k]),
							 .data = payload_free ? NULL : b->buf + (i + k) * 16384,
							 .len = (i + k) % 3 ? 3000 : 12000 };
		pc_batch_set(C->s[i % 3], b->pg + i, m);
		for (size_t k = 0; k < m; k++)
			outcome[o++] = b->pg[i + k].status;
		for (size_t k = 0; k < m; k++)
			b->pg[i + k] = (struct pc_page){ .key = b->keys[(i + k * 5) % n],
							 .key_len = strlen(b->keys[(i + k * 5) % n]),
							 .data = payload_free ? NULL : b->buf + (i + k) * 16384,
							 .cap = 16384 };
		pc_batch_get(C->s[(i + 1) % 3], b->pg + i, m);
		for (size_t k = 0; k < m; k++)
			outcome[o++] = b->pg[i + k].status ? b->pg[i + k].status : (int)b->pg[i + k].len;
	}
	*round_trips = 0;
	for (uint32_t i = 0; i < 3; i++)
		*round_trips += metrics(C->s[i]).round_trips;
	batch_free(b);
	down(C);
}

static void test_payload_free_same_decisions(void)
{
	const size_t n = 400;
	int *a = calloc(2 * n, sizeof(int)), *p = calloc(2 * n, sizeof(int));
	uint64_t mem_a, mem_p, rt;
	size_t hits = 0, diff = 0;

	payload_free = false;
	run_mixed(a, n, &mem_a, &rt);
	payload_free = true;
	run_mixed(p, n, &mem_p, &rt);
	payload_free = false;
	for (size_t i = 0; i < 2 * n; i++) {
		diff += a[i] != p[i];
		hits += a[i] > 0;
	}
	printf("\n  payload-free vs stored: %zu outcomes, %zu differ, %zu hits; slot memory %llu vs %llu bytes\n",
	       2 * n, diff, hits, (unsigned long long)mem_p, (unsigned long long)mem_a);
	CU_ASSERT_EQUAL(diff, 0);
	CU_ASSERT(hits > 0);
	CU_ASSERT(mem_p * 20 < mem_a);
	free(a);
	free(p);
}

/* With peers' slots mapped (pc_fabric_map), every key goes the way an owner's own
 * keys go, in place under the seqlock: the same outcome per page as through ops. */
static void test_direct_same_decisions(void)
{
	const size_t n = 400;
	int *a = calloc(2 * n, sizeof(int)), *d = calloc(2 * n, sizeof(int));
	size_t diff = 0, hits = 0;
	uint64_t mem, rt_ops[2], rt_direct[2];

	for (int pf = 0; pf < 2; pf++) {
		payload_free = pf;
		shared = false;
		run_mixed(a, n, &mem, &rt_ops[pf]);
		shared = true;
		run_mixed(d, n, &mem, &rt_direct[pf]);
		for (size_t i = 0; i < 2 * n; i++) {
			diff += a[i] != d[i];
			hits += a[i] > 0;
		}
		/* the direct run went in place: only layout fetches took round trips */
		CU_ASSERT(rt_direct[pf] * 10 < rt_ops[pf]);
	}
	payload_free = shared = false;
	printf("\n  direct vs ops: %zu outcomes, %zu differ, %zu hits; round trips %llu vs %llu (stored), %llu vs %llu (payload-free)\n",
	       4 * n, diff, hits, (unsigned long long)rt_direct[0], (unsigned long long)rt_ops[0],
	       (unsigned long long)rt_direct[1], (unsigned long long)rt_ops[1]);
	CU_ASSERT_EQUAL(diff, 0);
	CU_ASSERT(hits > 0);
	free(a);
	free(d);
}

/* Writers in place (the owner, and a peer that maps its slots) racing on one bucket:
 * a write claims the slot from the version it chose it on, so none replaces a page
 * it did not see (every stored page is still there or was counted evicted) and a
 * way's tag names the page in it. */
struct direct_writer {
	struct pc_store *s;
	char (*keys)[32];
	int n, stored;
};

static void *direct_writer_body(void *p)
{
	struct direct_writer *d = p;
	uint8_t page[1024];

	for (int i = 0; i < d->n; i++) {
		struct pc_page pg = { .key = d->keys[i], .key_len = strlen(d->keys[i]),
				      .data = page, .len = sizeof(page) };

		pc_test_fill(page, sizeof(page), d->keys[i], 1);
		d->stored += pc_batch_set(d->s, &pg, 1) == 1;
	}
	return NULL;
}

static void test_direct_writers_one_bucket(void)
{
	enum { PER = 3000 };
	struct cluster *C;
	struct direct_writer d[2];
	pthread_t t[2];
	const struct slot_geometry *g;
	uint64_t evicted = 0;
	int j = 0, resident = 0, mistagged = 0;

	shared = true;
	C = up(2, "slot_size_classes: [1KiB], slot_ways: 4, slot_num_buckets: 1, global_segment_size: 1MiB");
	shared = false;
	CU_ASSERT_FATAL(C->s[0]->svc.fabric->maps);
	for (int i = 0; i < 2; i++) {
		d[i] = (struct direct_writer){ .s = C->s[i], .keys = calloc(PER, 32), .n = PER };
		for (int k = 0; k < PER; k++)
			key_on(C, 1, i ? "dwb" : "dwa", &j, d[i].keys[k]);
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, direct_writer_body, &d[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	g = &sm_of(C->s[1]->mode)->own->cls[0].g;
	for (uint64_t b = 0; b < g->nr_buckets; b++) {
		const uint32_t *tags = (const uint32_t *)(sm_of(C->s[1]->mode)->mem[0] + slot_index_offset(g, b));

		for (uint32_t w = 0; w < g->ways; w++) {
			struct slot_header h;

			slot_header_load(sm_of(C->s[1]->mode)->mem[0] + slot_offset(g, b, w), &h);
			if (slot_header_empty(&h))
				continue;
			resident++;
			mistagged += tags[w] != slot_tag(h.key);
		}
	}
	for (int i = 0; i < 2; i++)
		evicted += metrics(C->s[i]).evictions;
	printf("\n  2 direct writers, one bucket: %d + %d stored, %d resident, %llu evicted, %d mistagged\n",
	       d[0].stored, d[1].stored, resident, (unsigned long long)evicted, mistagged);
	CU_ASSERT_EQUAL((uint64_t)d[0].stored + (uint64_t)d[1].stored, (uint64_t)resident + evicted);
	CU_ASSERT_EQUAL(mistagged, 0);
	CU_ASSERT(d[0].stored > 0 && d[1].stored > 0);
	for (int i = 0; i < 2; i++)
		free(d[i].keys);
	down(C);
}

/* A writer that stops right after its write (the copy charge, where the simulator
 * switches processes) while another writer replaces its page: the way's tag is the
 * later page's, since a write tags its way while it holds the slot. */
struct hook_env {
	struct pc_env base;
	struct pc_store *s;		/* the other writer, once */
	struct pc_page *pg;
};

static void hook_copy(struct pc_env *c, uint64_t bytes)
{
	struct hook_env *h = (struct hook_env *)c;
	struct pc_store *s = h->s;

	(void)bytes;
	h->s = NULL;
	if (s)
		CU_ASSERT_EQUAL(pc_batch_set(s, h->pg, 1), 1);
}

static void test_direct_tag_order(void)
{
	static struct pc_env_ops ops;
	struct hook_env hook = { .s = NULL };
	struct cluster *C;
	struct batch *b = batch_new(2, 1024);
	int j = 0;

	ops = *pc_env_posix()->ops;
	ops.copy = hook_copy;
	hook.base.ops = &ops;
	shared = true;
	C = up(2, "slot_size_classes: [1KiB], slot_ways: 1, slot_num_buckets: 1, global_segment_size: 1MiB");
	shared = false;
	pc_store_close(C->s[0]);
	C->s[0] = open_node(C, "n0", &hook.base);
	CU_ASSERT_FATAL(C->s[0]->svc.fabric->maps);
	key_on(C, 1, "to", &j, b->keys[0]);
	key_on(C, 1, "to", &j, b->keys[1]);
	batch_for_set(b, 3);
	hook.s = C->s[1];		/* n1 writes the second key over the first */
	hook.pg = &b->pg[1];
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], &b->pg[0], 1), 1);
	CU_ASSERT_PTR_NULL(hook.s);	/* the hook ran */
	batch_for_get(b, 1024);
	CU_ASSERT_EQUAL(pc_batch_get(C->s[0], b->pg, 2), 1);
	CU_ASSERT_EQUAL(b->pg[0].status, -ENOENT);
	CU_ASSERT_EQUAL(b->pg[1].status, 0);	/* its tag, not the first key's */
	CU_ASSERT(pc_test_page_ok(b->buf + 1024, 1024, b->keys[1], 3));
	batch_free(b);
	down(C);
}

/* The failure cases again with peers' slots mapped: a down owner, a restarted one,
 * racing writers and readers, many threads, a failed READ under fault injection. */
static void test_direct_failures(void)
{
	struct cluster *C;

	shared = true;
	C = up(2, "slot_size_classes: [4KiB], global_segment_size: 1MiB");
	CU_ASSERT(C->s[0]->svc.fabric->maps);
	down(C);
	test_owner_down();
	test_restarted_owner();
	test_concurrent_writers();
	test_threads();
	/* a fabric under fault injection maps nothing: its faults stay testable */
	test_failed_bucket_read();
	shared = false;
}

static CU_TestInfo tests[] = {
	{ "cross-node round trip, byte-identical", test_roundtrip },
	{ "payload-free mode decides the same", test_payload_free_same_decisions },
	{ "clean miss; no dirty hit on length mismatch", test_clean_miss_and_length },
	{ "(e) exists is header-only and agrees with get", test_exists },
	{ "same-bucket keys in one batch do not evict each other", test_same_bucket_batch },
	{ "a collision eviction is a clean miss; oldest first", test_eviction },
	{ "a key twice in one batch keeps the last page", test_duplicate_in_batch },
	{ "size classes; oversize pages skipped and counted", test_oversize_and_classes },
	{ "read amplification at 80% occupancy", test_read_amplification },
	{ "(b) a failed bucket READ never writes blind", test_failed_bucket_read },
	{ "a dead writer's claim: clean misses, taken over after the timeout", test_dead_claim },
	{ "(c) stamps are monotonic across writers' envs", test_monotonic_stamps },
	{ "(d) a restarted owner is re-resolved", test_restarted_owner },
	{ "an owner down: its keys fail, the rest hit", test_owner_down },
	{ "CAS claim", test_cas_claim },
	{ "(a) concurrent writers of one bucket", test_concurrent_writers },
	{ "many threads on one store", test_threads },
	{ "clients and open errors", test_client_and_open_errors },
	{ "direct access to mapped peers decides the same", test_direct_same_decisions },
	{ "direct access: down, restarted, racing owners", test_direct_failures },
	{ "direct writers of one bucket: no page replaced unseen", test_direct_writers_one_bucket },
	{ "a direct write tags its way while it holds the slot", test_direct_tag_order },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "store", NULL, NULL, NULL, NULL, tests })
