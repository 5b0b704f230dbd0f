/*
 * p2p_test.c - p2p mode on the in-process fabric: a round trip across nodes in two
 * round trips per get, exists from the directory, a stale entry (another key's block)
 * as a clean miss, a full published pool evicting its LRU tail and its entries, a
 * node leaving (entries naming it dropped), and a node joining: p2p hands the moved
 * directory shards over and keeps every page reachable, where slotmap loses the pages
 * whose owner moved.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <peercache/peercache.h>
#include "builtin.h"
#include "config/topology.h"
#include "inproc/inproc.h"
#include "proto.h"
#include "store.h"
#include "testutil.h"

#define PAGE 12288

struct cluster {
	struct pc_topology *topo;
	struct inproc_world *w;
	struct pc_store *s[3];
};

/* Open node i's store (again, after a close: a restart, a new incarnation). */
static void open_node(struct cluster *C, int i)
{
	char name[16], err[PC_ERR_MAX] = "";
	struct pc_store_opts o = { .size = sizeof(o), .topo = C->topo, .fabric = "inproc",
				   .node = name, .err = err, .errlen = sizeof(err) };
	struct store_deps x = { .backend_arg = C->w };

	snprintf(name, sizeof(name), "n%d", i);
	if (builtin_store_open(&o, &x, &C->s[i]))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(C->s[i]);
}

static struct cluster *up(const char *mode, const char *segment)
{
	struct cluster *C = calloc(1, sizeof(*C));
	char text[1024], err[PC_ERR_MAX] = "";
	int len = snprintf(text, sizeof(text),
			   "store: {mode: %s, global_segment_size: %s, slot_size_classes: [16KiB]}\n"
			   "node_defaults: {address: 127.0.0.1}\n"
			   "nodes:\n  - {name: n0, port: 40000}\n  - {name: n1, port: 40001}\n"
			   "  - {name: n2, port: 40002}\n", mode, segment);

	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, (size_t)len, "p2p", &C->topo, err, sizeof(err)), 0);
	C->w = inproc_world_create(3);
	for (int i = 0; i < 3; i++)
		open_node(C, i);
	return C;
}

static void down(struct cluster *C)
{
	for (int i = 0; i < 3; i++)
		pc_store_close(C->s[i]);
	inproc_world_destroy(C->w);
	pc_topology_free(C->topo);
	free(C);
}

static struct pc_metrics metrics(struct pc_store *s)
{
	struct pc_metrics m = { .size = sizeof(m) };

	pc_store_metrics(s, &m);
	return m;
}

/* Write pages [0, n) through node w, 16 per batch. */
static void publish(struct cluster *C, int w, uint32_t from, uint32_t n)
{
	for (uint32_t i = from; i < from + n; i += 16)
		CU_ASSERT_EQUAL(pc_test_write_pages(C->s[w], i, from + n - i < 16 ? from + n - i : 16, PAGE),
				(int)(from + n - i < 16 ? from + n - i : 16));
}

static void test_roundtrip(void)
{
	struct cluster *C = up("p2p", "8MiB");
	struct pc_metrics before = { .size = sizeof(before) }, after = { .size = sizeof(after) };
	int wrong = 0, bad = 0;

	publish(C, 0, 0, 160);		/* half published by n0 */
	publish(C, 1, 160, 160);	/* half by n1 */
	before = metrics(C->s[2]);
	CU_ASSERT_EQUAL(pc_test_read_pages(C->s[2], 320, PAGE, &wrong, &bad), 320);
	after = metrics(C->s[2]);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(bad, 0);
	/* 20 batches of 16: a directory phase and a READ phase each */
	CU_ASSERT_EQUAL(after.round_trips - before.round_trips, 40);
	CU_ASSERT_EQUAL(metrics(C->s[0]).pool_keys + metrics(C->s[1]).pool_keys, 320);
	CU_ASSERT_EQUAL(metrics(C->s[0]).dir_entries + metrics(C->s[1]).dir_entries +
			metrics(C->s[2]).dir_entries, 320);
	/* and from the publishers themselves (own pages locally) */
	CU_ASSERT_EQUAL(pc_test_read_pages(C->s[0], 320, PAGE, &wrong, &bad), 320);
	CU_ASSERT_EQUAL(wrong, 0);
	down(C);
}

static void test_exists_and_misses(void)
{
	struct cluster *C = up("p2p", "8MiB");
	struct pc_page pg[3];
	uint8_t buf[PAGE];
	struct pc_store_opts o = { .size = sizeof(o), .topo = C->topo, .fabric = "inproc" };
	struct store_deps x = { .backend_arg = C->w };
	struct pc_store *client = NULL;

	publish(C, 0, 0, 16);
	pg[0] = (struct pc_page){ .key = "page-3", .key_len = 6 };
	pg[1] = (struct pc_page){ .key = "page-99", .key_len = 7 };
	pg[2] = (struct pc_page){ .key = "page-4", .key_len = 6, .len = PAGE + 1 };
	CU_ASSERT_EQUAL(pc_batch_exists(C->s[1], pg, 3), 1);
	CU_ASSERT(pg[0].status == 0 && pg[1].status == -ENOENT && pg[2].status == -ENOENT);
	/* the wrong length is known from the entry: a clean miss, nothing copied */
	memset(buf, 0x5a, sizeof(buf));
	pg[0] = (struct pc_page){ .key = "page-3", .key_len = 6, .data = buf, .cap = sizeof(buf),
				  .len = 4096 };
	CU_ASSERT_EQUAL(pc_batch_get(C->s[2], pg, 1), 0);
	CU_ASSERT_EQUAL(pg[0].status, -ENOENT);
	CU_ASSERT_EQUAL(buf[0], 0x5a);
	/* a client reads, but publishes nowhere */
	CU_ASSERT_EQUAL_FATAL(builtin_store_open(&o, &x, &client), 0);
	pg[0] = (struct pc_page){ .key = "page-3", .key_len = 6, .data = buf, .cap = sizeof(buf) };
	CU_ASSERT_EQUAL(pc_batch_get(client, pg, 1), 1);
	pg[0] = (struct pc_page){ .key = "new", .key_len = 3, .data = buf, .len = 100 };
	CU_ASSERT_EQUAL(pc_batch_set(client, pg, 1), 0);
	CU_ASSERT_EQUAL(pg[0].status, -EOPNOTSUPP);
	pc_store_close(client);
	down(C);
}

/* An entry naming another key's block (stale, or forged): the gate makes it a miss. */
static void test_stale_entry(void)
{
	struct cluster *C = up("p2p", "8MiB");
	struct pc_keyhash x = keyhash_of("page-1", 6), y = keyhash_of("page-2", 6);
	struct {
		struct proto_dir_get h;
		struct proto_dir_key k;
	} get = { { .n = 1 }, { y.lo, y.hi } };
	struct {
		struct proto_dir_update h;
		struct proto_dir_put p;
	} put = { { .nput = 1 }, { .lo = x.lo, .hi = x.hi } };
	uint32_t shard_y = ring_owner_of(C->s[0]->svc.ring, y), shard_x = ring_owner_of(C->s[0]->svc.ring, x);
	struct pc_rpc r = { .peer = shard_y, .opcode = PC_RPC_DIR_GET, .req = &get, .req_len = sizeof(get) };
	struct pc_metrics m = { .size = sizeof(m) };
	int wrong = 0, bad = 0;

	publish(C, 1, 0, 16);
	CU_ASSERT_EQUAL(pc_fabric_call(C->s[2]->svc.fabric, &r, 1), 0);
	CU_ASSERT_EQUAL_FATAL(r.status, 0);
	memcpy(&put.p.loc, &((struct proto_dir_ans *)r.resp.data)->loc, sizeof(put.p.loc));
	pc_msg_free(&r.resp);
	r = (struct pc_rpc){ .peer = shard_x, .opcode = PC_RPC_DIR_UPDATE, .req = &put,
			     .req_len = sizeof(put) };
	CU_ASSERT_EQUAL(pc_fabric_call(C->s[2]->svc.fabric, &r, 1), 0);
	CU_ASSERT_EQUAL(r.status, 0);
	pc_msg_free(&r.resp);
	/* page-1 now points at page-2's block */
	CU_ASSERT_EQUAL(pc_test_read_pages(C->s[2], 16, PAGE, &wrong, &bad), 15);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(bad, 0);
	m = metrics(C->s[2]);
	CU_ASSERT_EQUAL(m.miss_other_key, 1);
	down(C);
}

/* A published pool of 63 blocks (1 MiB of 16 KiB slots) takes 240 pages from one
 * writer: its LRU tail goes, with its directory entries. */
static void test_pool_eviction(void)
{
	struct cluster *C = up("p2p", "1MiB");
	const uint64_t blocks = (1u << 20) / (64 + 16384);
	struct pc_metrics m = { .size = sizeof(m) };
	uint64_t entries = 0;
	int wrong = 0, bad = 0, hits;

	publish(C, 0, 0, 240);
	m = metrics(C->s[0]);
	CU_ASSERT_EQUAL(m.pool_keys, blocks);
	CU_ASSERT_EQUAL(m.evictions, 240 - blocks);
	for (int i = 0; i < 3; i++)
		entries += metrics(C->s[i]).dir_entries;
	CU_ASSERT_EQUAL(entries, blocks);	/* evicted blocks took their entries along */
	hits = pc_test_read_pages(C->s[1], 240, PAGE, &wrong, &bad);
	CU_ASSERT_EQUAL(hits, (int)blocks);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(bad, 0);
	/* the survivors are the last ones published */
	for (uint32_t i = 0; i < 240; i++) {
		char key[32];
		static uint8_t buf[PAGE];
		struct pc_page pg = { .key = key, .key_len = 0, .data = buf, .cap = PAGE, .len = PAGE };

		pg.key_len = (size_t)snprintf(key, sizeof(key), "page-%u", i);
		pc_batch_get(C->s[1], &pg, 1);
		CU_ASSERT_EQUAL(pg.status, i < 240 - blocks ? -ENOENT : 0);
	}
	down(C);
}

/* How many of pages [0, n) each node can read. */
static int readable(struct cluster *C, int via, uint32_t n)
{
	int wrong = 0, bad = 0, hits = pc_test_read_pages(C->s[via], n, PAGE, &wrong, &bad);

	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(bad, 0);
	return hits;
}

static void member(struct cluster *C, uint32_t node, bool in)
{
	for (int i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(store_set_member(C->s[i], node, in), 0);
}

/* n2 joins a ring of n0 and n1 that holds 240 pages. p2p moves the directory shards
 * n2 now owns and every page stays reachable; slotmap's pages stay where they are,
 * so the keys n2 now owns miss. Then n1 leaves: p2p drops the entries naming it and
 * n0 publishes again the entries n1's shard held, so all of n0's pages stay. */
static void test_join_and_leave(void)
{
	int got[2];

	for (int mode = 0; mode < 2; mode++) {
		struct cluster *C = up(mode ? "slotmap" : "p2p", "8MiB");
		uint64_t on_n2 = 0, want_n2 = 0;

		member(C, 2, false);
		publish(C, 0, 0, 120);
		publish(C, 1, 120, 120);
		/* slotmap may lose a page or two to a full bucket; p2p none */
		CU_ASSERT(readable(C, 0, 240) >= (mode ? 235 : 240));
		member(C, 2, true);
		for (uint32_t i = 0; i < 240; i++) {
			char k[32];

			snprintf(k, sizeof(k), "page-%u", i);
			want_n2 += ring_owner_of(C->s[0]->svc.ring, keyhash_of(k, strlen(k))) == 2;
		}
		for (int t = 0; mode == 0 && t < 500 && on_n2 < want_n2; t++) {
			usleep(10000);	/* the handoffs run in the background */
			on_n2 = metrics(C->s[2]).dir_entries;
		}
		got[mode] = readable(C, 2, 240);
		printf("\n  %s: after n2 joined, %d of 240 pages readable%s", mode ? "slotmap" : "p2p", got[mode],
		       mode ? "" : " (directory shards handed over)");
		if (mode == 0) {
			int moved = 0, after = 0;
			uint64_t entries = 0;

			CU_ASSERT_EQUAL(on_n2, want_n2);
			CU_ASSERT_EQUAL(got[0], 240);
			/* n1 leaves: its pages and the entries its shard held are gone; n0
			 * publishes again the entries of its pages whose shard was n1's, so all
			 * of n0's pages stay readable */
			for (uint32_t i = 0; i < 120; i++) {
				char k[32];

				snprintf(k, sizeof(k), "page-%u", i);
				moved += ring_owner_of(C->s[0]->svc.ring, keyhash_of(k, strlen(k))) == 1;
			}
			member(C, 1, false);
			for (int t = 0; t < 500 && entries < 120; t++) {
				usleep(10000);	/* republished in the background */
				entries = metrics(C->s[0]).dir_entries + metrics(C->s[2]).dir_entries;
			}
			CU_ASSERT_EQUAL(entries, 120);
			after = readable(C, 2, 240);
			CU_ASSERT_EQUAL(after, 120);
			CU_ASSERT(moved > 0);
			printf("; n1 left: %d of n0's 120 pages readable (%d published again: their shard was n1's)",
			       after, moved);
		}
		down(C);
	}
	CU_ASSERT(got[1] < 235 && got[1] > 0);	/* slotmap: the keys n2 now owns miss */
}

/* A join the nodes hear at different times: n1, still on the old ring, publishes
 * to a shard that has already handed its entries over, and publishes into its own
 * shard before it hears: no entry is stranded. Then many leaves and joins: the
 * background jobs are reaped, and the directory keeps up. */
static void test_join_heard_late(void)
{
	struct cluster *C = up("p2p", "8MiB");
	uint64_t want = 0, on_n2 = 0;
	int got;

	member(C, 2, false);
	CU_ASSERT_EQUAL(store_set_member(C->s[0], 2, true), 0);
	CU_ASSERT_EQUAL(store_set_member(C->s[2], 2, true), 0);
	publish(C, 1, 0, 120);
	CU_ASSERT_EQUAL(store_set_member(C->s[1], 2, true), 0);
	for (uint32_t i = 0; i < 120; i++) {
		char k[32];

		snprintf(k, sizeof(k), "page-%u", i);
		want += ring_owner_of(C->s[0]->svc.ring, keyhash_of(k, strlen(k))) == 2;
	}
	for (int t = 0; t < 500 && on_n2 < want; t++) {
		usleep(10000);
		on_n2 = metrics(C->s[2]).dir_entries;
	}
	got = readable(C, 2, 120);
	printf("\n  n1 published 120 pages before it heard that n2 joined: %d readable, n2's shard has %llu of %llu",
	       got, (unsigned long long)on_n2, (unsigned long long)want);
	CU_ASSERT_EQUAL(on_n2, want);
	CU_ASSERT_EQUAL(got, 120);
	/* 300 leaves and joins of n2 */
	for (int r = 0; r < 300; r++) {
		member(C, 2, false);
		member(C, 2, true);
	}
	for (int t = 0; t < 500 && (got = readable(C, 2, 120)) < 120; t++)
		usleep(10000);
	printf("; after 300 more leaves and joins: %d\n", got);
	CU_ASSERT_EQUAL(got, 120);
	down(C);
}

/* Directory requests with bad bodies are refused and change nothing. */
/* A DIR_UPDATE of two puts, as a peer sends it: its length. */
static size_t two_puts(uint8_t *req, const struct proto_dir_put e[2])
{
	struct proto_dir_update h = { .nput = 2 };

	memcpy(req, &h, sizeof(h));
	memcpy(req + sizeof(h), e, 2 * sizeof(*e));
	return sizeof(h) + 2 * sizeof(*e);
}

static void test_bad_requests(void)
{
	struct cluster *C = up("p2p", "8MiB");
	struct proto_dir_put e[2] = { { .lo = 1, .hi = 2, .loc = { .node = 1, .len = 100 } },
				      { .lo = 3, .hi = 4, .loc = { .node = 99, .len = 100 } } };
	uint8_t req[sizeof(struct proto_dir_update) + sizeof(e)];
	struct proto_member bad_member = { .node = 7, .member = 1 };
	struct proto_dir_get g = { .n = 3 };
	struct pc_rpc r[4] = {
		{ .peer = 1, .opcode = PC_RPC_DIR_UPDATE, .req = req, .req_len = sizeof(req) },
		{ .peer = 1, .opcode = PC_RPC_DIR_UPDATE, .req = req, .req_len = sizeof(req) - 1 },
		{ .peer = 1, .opcode = PC_RPC_DIR_GET, .req = &g, .req_len = sizeof(g) },
		{ .peer = 1, .opcode = PC_RPC_MEMBER, .req = &bad_member, .req_len = sizeof(bad_member) },
	};

	two_puts(req, e);
	CU_ASSERT_EQUAL(pc_fabric_call(C->s[0]->svc.fabric, r, 4), 0);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(r[i].status, -EPROTO);
		pc_msg_free(&r[i].resp);
	}
	/* the good first entry of the refused update was not applied either */
	CU_ASSERT_EQUAL(metrics(C->s[1]).dir_entries, 0);
	publish(C, 0, 0, 16);
	CU_ASSERT_EQUAL(readable(C, 1, 16), 16);
	down(C);
}

/* Pages [from, from + n) that via can read, in one batch. */
static int hits_in(struct cluster *C, int via, uint32_t from, uint32_t n)
{
	static uint8_t buf[16][PAGE];
	struct pc_page pg[16];
	char key[16][32];
	int hits = 0;

	CU_ASSERT_FATAL(n <= 16);
	for (uint32_t i = 0; i < n; i++) {
		pg[i] = (struct pc_page){ .key = key[i], .data = buf[i], .cap = PAGE, .len = PAGE };
		pg[i].key_len = (size_t)snprintf(key[i], sizeof(key[i]), "page-%u", from + i);
	}
	hits = pc_batch_get(C->s[via], pg, n);
	return hits;
}

/* A publisher's LRU sees other nodes' reads (one-sided, so told afterwards): pages
 * only n1 reads survive a wave of new publications that evicts older unread ones. */
static void test_remote_reads_refresh_lru(void)
{
	struct cluster *C = up("p2p", "1MiB");
	const uint32_t blocks = (1u << 20) / (64 + 16384);	/* 63 */
	int hot = 0, cold = 0;

	publish(C, 0, 0, blocks);		/* full: page-0 is the LRU tail */
	for (int round = 0; round < 72; round++)	/* n1 reads 0..15: 1152 hits */
		CU_ASSERT_EQUAL(hits_in(C, 1, 0, 16), 16);
	for (int t = 0; t < 500 && metrics(C->s[0]).remote_touches < 1024; t++)
		usleep(10000);		/* 1024 notes went out in the background */
	CU_ASSERT(metrics(C->s[0]).remote_touches >= 1024);
	publish(C, 0, blocks, 32);		/* evicts the 32 least recently used */
	hot = hits_in(C, 1, 0, 16);
	cold = hits_in(C, 1, 16, 16) + hits_in(C, 1, 32, 16);
	printf("\n  after 32 new pages: %d of the 16 pages n1 kept reading survive, %d of the next 32 unread ones",
	       hot, cold);
	CU_ASSERT_EQUAL(hot, 16);
	CU_ASSERT_EQUAL(cold, 0);
	down(C);
}

/* A key published by two nodes keeps one copy: the shard that takes the second
 * publication tells the first publisher, which frees its block. */
static void test_double_publish_frees_orphan(void)
{
	struct cluster *C = up("p2p", "8MiB");
	uint64_t freed = 0;

	publish(C, 0, 0, 16);
	publish(C, 1, 0, 16);		/* the same 16 keys, later */
	for (int t = 0; t < 500 && freed < 16; t++) {
		freed = metrics(C->s[0]).orphans_freed;
		if (freed < 16)
			usleep(10000);	/* the notes go out in the background */
	}
	printf("\n  n0's copies freed after n1 published the same 16 keys: %llu", (unsigned long long)freed);
	CU_ASSERT_EQUAL(freed, 16);
	CU_ASSERT_EQUAL(metrics(C->s[0]).pool_keys, 0);
	CU_ASSERT_EQUAL(metrics(C->s[1]).pool_keys, 16);
	CU_ASSERT_EQUAL(readable(C, 2, 16), 16);	/* n1's copies, byte-identical */
	down(C);
}

/* A directory update that crosses a node's leave (a slow handoff, a publish sent
 * before the sender heard) must not bring back entries naming the departed node: the
 * shard takes those back out. An entry naming a member in the same update stays. */
static void test_entry_crossing_a_leave(void)
{
	struct cluster *C = up("p2p", "8MiB");
	struct proto_dir_put e[2] = { { .lo = 5, .hi = 6, .loc = { .node = 2, .len = 100 } },
				      { .lo = 7, .hi = 8, .loc = { .node = 0, .len = 100 } } };
	uint8_t req[sizeof(struct proto_dir_update) + sizeof(e)];
	struct pc_rpc r = { .peer = 1, .opcode = PC_RPC_DIR_UPDATE, .req = req,
			    .req_len = two_puts(req, e) };

	member(C, 2, false);
	CU_ASSERT_EQUAL(pc_fabric_call(C->s[0]->svc.fabric, &r, 1), 0);
	CU_ASSERT_EQUAL(r.status, 0);
	pc_msg_free(&r.resp);
	CU_ASSERT_EQUAL(metrics(C->s[1]).dir_entries, 1);
	member(C, 2, true);	/* back: now its entries are taken again */
	CU_ASSERT_EQUAL(pc_fabric_call(C->s[0]->svc.fabric, &r, 1), 0);
	CU_ASSERT_EQUAL(r.status, 0);
	pc_msg_free(&r.resp);
	CU_ASSERT(metrics(C->s[1]).dir_entries + metrics(C->s[2]).dir_entries >= 2);
	down(C);
}

/* A put naming a departed node (a publish it sent before it left, a slow handoff)
 * must not take the place of a member's entry for the same key: the shard takes
 * the departed node's entry back out, and the member's page stays reachable. */
static void test_departed_put_keeps_member_entry(void)
{
	struct cluster *C = up("p2p", "8MiB");

	member(C, 2, false);
	publish(C, 0, 0, 16);
	CU_ASSERT_EQUAL(readable(C, 1, 16), 16);
	for (uint32_t i = 0; i < 16; i++) {
		char k[32];
		struct pc_keyhash key;
		struct {
			struct proto_dir_update h;
			struct proto_dir_put p;
		} put = { { .nput = 1 }, { .lo = 0 } };
		struct pc_rpc r = { .opcode = PC_RPC_DIR_UPDATE, .req = &put, .req_len = sizeof(put) };

		snprintf(k, sizeof(k), "page-%u", i);
		key = keyhash_of(k, strlen(k));
		put.p = (struct proto_dir_put){ .lo = key.lo, .hi = key.hi,
						.loc = { .node = 2, .len = PAGE, .gen = 1000 } };
		r.peer = ring_owner_of(C->s[0]->svc.ring, key);
		CU_ASSERT_EQUAL(pc_fabric_call(C->s[2]->svc.fabric, &r, 1), 0);
		CU_ASSERT_EQUAL(r.status, 0);
		pc_msg_free(&r.resp);
	}
	CU_ASSERT_EQUAL(metrics(C->s[0]).dir_entries + metrics(C->s[1]).dir_entries, 16);
	CU_ASSERT_EQUAL(readable(C, 1, 16), 16);
	CU_ASSERT_EQUAL(metrics(C->s[0]).pool_keys, 16);
	down(C);
}

/* The first of n pages "page-<i>" from i = from on whose shard is (or, when want is
 * false, is not) node. */
static uint32_t page_on(struct cluster *C, uint32_t from, uint32_t node, bool want)
{
	for (uint32_t i = from;; i++) {
		char k[32];

		snprintf(k, sizeof(k), "page-%u", i);
		if ((ring_owner_of(C->s[0]->svc.ring, keyhash_of(k, strlen(k))) == node) == want)
			return i;
	}
}

/* Forge entries naming node pub (sent by node via) into shard until it holds bound:
 * pub's bound there, when the shard held nothing before. */
static void fill_shard(struct cluster *C, uint32_t shard, uint32_t pub, uint32_t via, uint32_t bound)
{
	uint32_t at = 0, forged = 0;

	while (metrics(C->s[shard]).dir_entries < bound) {
		struct pc_keyhash f = keyhash_of(&at, sizeof(at));

		at++;
		struct {
			struct proto_dir_update h;
			struct proto_dir_put p;
		} put = { { .nput = 1 }, { .lo = f.lo, .hi = f.hi,
					   .loc = { .node = pub, .len = PAGE, .gen = 1 } } };
		struct pc_rpc r = { .peer = shard, .opcode = PC_RPC_DIR_UPDATE, .req = &put,
				    .req_len = sizeof(put) };

		if (ring_owner_of(C->s[0]->svc.ring, f) != shard)
			continue;
		CU_ASSERT_EQUAL(pc_fabric_call(C->s[via]->svc.fabric, &r, 1), 0);
		CU_ASSERT_EQUAL_FATAL(r.status, 0);
		pc_msg_free(&r.resp);
		CU_ASSERT_FATAL(++forged <= bound);
	}
}

/* A set batch publishes K, then X (which evicts the LRU tail W), then K again: the
 * first put of K is refused by n0's own shard (n0 is at its bound there), W's
 * removal makes room, and the second put of K is taken. Freeing the refused
 * publication must not free the second one, which reuses its block: the page the
 * batch says it stored stays in n0's pool and readable. */
static void test_refused_put_keeps_later_publication(void)
{
	struct cluster *C = up("p2p", "1MiB, dir_entries_per_block: 1");
	const uint32_t blocks = (1u << 20) / (64 + 16384);	/* 63, n0's bound per shard */
	uint32_t w = page_on(C, 0, 0, true), k = page_on(C, w + 1, 0, true);
	uint32_t x = page_on(C, 0, 0, false), y = page_on(C, x + 1, 0, false);
	uint32_t filled = 1;
	static uint8_t buf[3][PAGE];
	char key[3][32];
	struct pc_page pg[3];
	int wrong = 0, bad = 0;

	/* n0's pool: W first (the LRU tail), then others up to one free block */
	CU_ASSERT_EQUAL(pc_test_write_pages(C->s[0], w, 1, PAGE), 1);
	for (uint32_t i = 0; filled < blocks - 1; i++) {
		if (i == w || i == k || i == x || i == y)
			continue;
		CU_ASSERT_EQUAL(pc_test_write_pages(C->s[0], i, 1, PAGE), 1);
		filled++;
	}
	/* n0's shard: entries naming n0 up to its bound */
	fill_shard(C, 0, 0, 1, blocks);
	for (int i = 0; i < 3; i++) {
		snprintf(key[i], sizeof(key[i]), "page-%u", i == 1 ? x : k);
		pc_test_fill(buf[i], PAGE, key[i], 1);
		pg[i] = (struct pc_page){ .key = key[i], .key_len = strlen(key[i]), .data = buf[i],
					  .len = PAGE };
	}
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], pg, 3), 2);
	CU_ASSERT_EQUAL(pg[0].status, -ENOSPC);
	CU_ASSERT_EQUAL(pg[1].status, 0);
	CU_ASSERT_EQUAL(pg[2].status, 0);
	CU_ASSERT_EQUAL(metrics(C->s[0]).pool_keys, blocks);
	/* one page more takes a block: a free one, if K's was freed */
	CU_ASSERT_EQUAL(pc_test_write_pages(C->s[0], y, 1, PAGE), 1);
	CU_ASSERT_EQUAL(pc_test_read_range(C->s[1], k, 1, PAGE, &wrong, &bad), 1);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(bad, 0);
	down(C);
}

/* Another node's shard refuses n0's put (n0 is at its bound there): the batch says
 * so for that page, and n0 keeps no block that no shard knows. */
static void test_remote_refusal_is_said(void)
{
	struct cluster *C = up("p2p", "1MiB, dir_entries_per_block: 1");
	const uint32_t blocks = (1u << 20) / (64 + 16384);	/* 63, n0's bound per shard */
	uint32_t k = page_on(C, 0, 1, true);
	static uint8_t buf[PAGE];
	char key[32];
	struct pc_page pg = { .key = key, .data = buf, .len = PAGE };

	fill_shard(C, 1, 0, 2, blocks);
	pg.key_len = (size_t)snprintf(key, sizeof(key), "page-%u", k);
	pc_test_fill(buf, PAGE, key, 1);
	CU_ASSERT_EQUAL(pc_batch_set(C->s[0], &pg, 1), 0);
	CU_ASSERT_EQUAL(pg.status, -ENOSPC);
	CU_ASSERT_EQUAL(metrics(C->s[1]).dir_refused, 1);
	CU_ASSERT_EQUAL(metrics(C->s[0]).pool_keys, 0);
	CU_ASSERT_EQUAL(metrics(C->s[0]).write_failures, 1);
	down(C);
}

/* Key's entry, from its shard. */
static struct proto_dir_loc entry_of(struct cluster *C, struct pc_keyhash key)
{
	struct {
		struct proto_dir_get h;
		struct proto_dir_key k;
	} get = { { .n = 1 }, { key.lo, key.hi } };
	struct pc_rpc r = { .peer = ring_owner_of(C->s[2]->svc.ring, key), .opcode = PC_RPC_DIR_GET,
			    .req = &get, .req_len = sizeof(get) };
	struct proto_dir_ans a = { .status = -EPROTO };

	CU_ASSERT_EQUAL(pc_fabric_call(C->s[2]->svc.fabric, &r, 1), 0);
	CU_ASSERT_EQUAL_FATAL(r.resp.len, sizeof(a));
	memcpy(&a, r.resp.data, sizeof(a));
	pc_msg_free(&r.resp);
	CU_ASSERT_EQUAL(a.status, 0);
	return a.loc;
}

/* n1 tells n0 that its publication l of key, in the block at addr, is an orphan. */
static void send_drop(struct cluster *C, struct pc_keyhash key, uint64_t addr,
		      const struct proto_dir_loc *l)
{
	struct {
		struct proto_touch_hdr h;
		struct proto_touch t;
	} note = { { .n = 1 }, { .addr = addr, .gen = l->gen, .inc = l->inc, .lo = key.lo,
				 .hi = key.hi, .cls = l->cls, .flags = PROTO_TOUCH_DROP } };
	struct pc_rpc r = { .peer = 0, .opcode = PC_RPC_P2P_TOUCH, .req = &note,
			    .req_len = sizeof(note) };

	CU_ASSERT_EQUAL(pc_fabric_call(C->s[1]->svc.fabric, &r, 1), 0);
	CU_ASSERT_EQUAL(r.status, 0);
	pc_msg_free(&r.resp);
}

/* n0 restarts and publishes K again: its publication numbers start again, so the new
 * entry has the number the old one had, in the same block of the new pool. A drop
 * note a shard sent about the old publication, arriving late, must leave the new one
 * alone. */
static void test_note_from_before_restart(void)
{
	struct cluster *C = up("p2p", "8MiB");
	struct pc_keyhash key = keyhash_of("page-0", 6);
	struct proto_dir_loc old, now;
	int wrong = 0, bad = 0;

	CU_ASSERT_EQUAL(pc_test_write_pages(C->s[0], 0, 1, PAGE), 1);
	old = entry_of(C, key);
	pc_store_close(C->s[0]);
	open_node(C, 0);
	CU_ASSERT_EQUAL(pc_test_write_pages(C->s[0], 0, 1, PAGE), 1);
	now = entry_of(C, key);
	CU_ASSERT_EQUAL(now.gen, old.gen);
	CU_ASSERT_NOT_EQUAL(now.inc, old.inc);
	/* the old note, as if the new pool were mapped where the old one was: then
	 * nothing else tells the two publications apart */
	send_drop(C, key, now.addr, &old);
	CU_ASSERT_EQUAL(metrics(C->s[0]).orphans_freed, 0);
	CU_ASSERT_EQUAL(metrics(C->s[0]).pool_keys, 1);
	CU_ASSERT_EQUAL(pc_test_read_range(C->s[2], 0, 1, PAGE, &wrong, &bad), 1);
	down(C);
}

/* Armed by a test: the next removal from a pool (linked with --wrap) first publishes
 * page publish_page again on n0, as another thread of n0 could at that moment. */
static struct cluster *publish_first;
static uint32_t publish_page;

struct host_pool;
bool __real_pool_remove_at(struct host_pool *p, struct pc_keyhash key, uint32_t i,
			   const uint64_t *tag, uint64_t want);
bool __wrap_pool_remove_at(struct host_pool *p, struct pc_keyhash key, uint32_t i,
			   const uint64_t *tag, uint64_t want);

bool __wrap_pool_remove_at(struct host_pool *p, struct pc_keyhash key, uint32_t i,
			   const uint64_t *tag, uint64_t want)
{
	struct cluster *C = publish_first;

	if (C) {
		publish_first = NULL;
		CU_ASSERT_EQUAL(pc_test_write_pages(C->s[0], publish_page, 1, PAGE), 1);
	}
	return __real_pool_remove_at(p, key, i, tag, want);
}

/* A drop note for n0's publication of page-0 is being applied when n0 publishes
 * page-0 again, into the block the note names (the one just freed): the note frees
 * the publication it names, never the new one. */
static void test_drop_note_spares_newer_publication(void)
{
	struct cluster *C = up("p2p", "8MiB");
	struct pc_keyhash key = keyhash_of("page-0", 6);
	struct proto_dir_loc old, now;

	CU_ASSERT_EQUAL(pc_test_write_pages(C->s[0], 0, 1, PAGE), 1);
	old = entry_of(C, key);
	publish_page = 0;
	publish_first = C;
	send_drop(C, key, old.addr, &old);
	CU_ASSERT_PTR_NULL(publish_first);	/* it stepped in */
	now = entry_of(C, key);
	CU_ASSERT_EQUAL(now.addr, old.addr);
	CU_ASSERT(now.gen > old.gen);
	CU_ASSERT_EQUAL(metrics(C->s[0]).orphans_freed, 0);
	CU_ASSERT_EQUAL(metrics(C->s[0]).pool_keys, 1);
	down(C);
}

static CU_TestInfo tests[] = {
	{ "round trip across nodes, two round trips per get", test_roundtrip },
	{ "exists from the directory; length miss; clients", test_exists_and_misses },
	{ "a stale entry is a clean miss", test_stale_entry },
	{ "a full published pool evicts with its entries", test_pool_eviction },
	{ "join: p2p hands shards over, slotmap moves nothing; leave", test_join_and_leave },
	{ "a join heard late; many leaves and joins", test_join_heard_late },
	{ "bad directory and membership requests", test_bad_requests },
	{ "an entry crossing a leave is not kept", test_entry_crossing_a_leave },
	{ "a departed node's put keeps a member's entry", test_departed_put_keeps_member_entry },
	{ "a refused put frees its own publication only", test_refused_put_keeps_later_publication },
	{ "a remote shard's refusal is the page's status", test_remote_refusal_is_said },
	{ "other nodes' reads move pages up the publisher's LRU", test_remote_reads_refresh_lru },
	{ "a key published twice keeps one copy", test_double_publish_frees_orphan },
	{ "a note from before a restart leaves the new publication", test_note_from_before_restart },
	{ "a drop note spares a newer publication in its block", test_drop_note_spares_newer_publication },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "p2p", NULL, NULL, NULL, NULL, tests })
