/*
 * slotmap_direct_test.c - stores that reach slots in place: the payload-free mode and
 * peers' mapped slots decide every page as ops do, in-place writers racing on one
 * bucket replace no page unseen, and the fill's per-node entries stand for their
 * node's layout and map epoch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/peercache.h>
#include <pthread.h>

#include "placement/slot.h"
#include "slotmap/slotmap_direct.h"
#include "slotmap/slotmap_int.h"
#include "slotmap/slotmap_layout.h"
#include "slotmap_fixture.h"
#include "store.h"
#include "testutil.h"

/* The simulator's payload-free mode makes the same decisions as the real thing:
 * the same workload gives the same hit/miss/eviction outcome per page, with slot
 * memory of headers only. */
static void test_payload_free_same_decisions(void)
{
	const size_t n = 400;
	int *a = calloc(2 * n, sizeof(int)), *p = calloc(2 * n, sizeof(int));
	uint64_t mem_a, mem_p, rt;
	size_t hits = 0, diff = 0;

	fixture_payload_free = false;
	run_mixed(a, n, &mem_a, &rt);
	fixture_payload_free = true;
	run_mixed(p, n, &mem_p, &rt);
	fixture_payload_free = false;
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
		fixture_payload_free = pf;
		fixture_shared = false;
		run_mixed(a, n, &mem, &rt_ops[pf]);
		fixture_shared = true;
		run_mixed(d, n, &mem, &rt_direct[pf]);
		for (size_t i = 0; i < 2 * n; i++) {
			diff += a[i] != d[i];
			hits += a[i] > 0;
		}
		/* the direct run went in place: only layout fetches took round trips */
		CU_ASSERT(rt_direct[pf] * 10 < rt_ops[pf]);
	}
	fixture_payload_free = fixture_shared = false;
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

	fixture_shared = true;
	C = up(2, "slot_size_classes: [1KiB], slot_ways: 4, slot_num_buckets: 1, global_segment_size: 1MiB");
	fixture_shared = false;
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
	fixture_shared = true;
	C = up(2, "slot_size_classes: [1KiB], slot_ways: 1, slot_num_buckets: 1, global_segment_size: 1MiB");
	fixture_shared = false;
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

/* Every class of every node of a payload-free cluster that maps its peers: the
 * entry (sm_near) has the layout's class, memory and geometry. */
static void check_near(struct slotmap *sm, uint32_t nodes, uint64_t epoch)
{
	for (uint32_t node = 0; node < nodes; node++) {
		const struct sm_layout *lay = sm_layout_of(sm, node);

		CU_ASSERT_PTR_NOT_NULL_FATAL(lay);
		for (uint32_t c = 0; c < lay->nr_classes; c++) {
			const struct slot_geometry *g = &lay->cls[c].g;
			struct sm_near e;

			CU_ASSERT_TRUE_FATAL(sm_near(sm, sm_near_at(sm, node, c), epoch, node, c, &e));
			CU_ASSERT_PTR_EQUAL(e.cl, &lay->cls[c]);
			CU_ASSERT_PTR_EQUAL(e.mem, sm_direct(sm, epoch, lay, (int)c));
			CU_ASSERT_PTR_EQUAL(e.index, e.mem + slot_index_offset(g, 0));
			CU_ASSERT_EQUAL(e.nr_buckets, g->nr_buckets);
			CU_ASSERT_EQUAL(e.page_bytes, g->page_bytes);
			CU_ASSERT_EQUAL(e.index_stride, g->index_stride);
			CU_ASSERT_EQUAL(e.ways, g->ways);
			CU_ASSERT_EQUAL(e.epoch, lay == sm->own ? SM_NEAR_OWN : epoch);
		}
	}
}

/* The entries a fill finds its keys' slots by: made for each node and class, made
 * anew when the map epoch moves (the node's own stands), forgotten with a dropped
 * layout, and saying "not in place" for a layout whose classes are not the
 * topology's, whose keys the fill then serves from the layout. */
static void test_near_entries(void)
{
	struct cluster *C;
	struct slotmap *sm;
	struct sm_layout *odd;
	struct sm_near e;
	struct batch *b = batch_new(9, 1024);
	uint64_t epoch;
	int j = 0;

	fixture_payload_free = fixture_shared = true;
	C = up(3, "slot_size_classes: [1KiB, 4KiB], slot_ways: 4, slot_num_buckets: 64");
	fixture_payload_free = fixture_shared = false;
	sm = sm_of(C->s[0]->mode);
	for (int i = 0; i < 9; i++)
		key_on(C, (uint32_t)i % 3, "near", &j, b->keys[i]);
	batch_for_get(b, 1024);
	pc_batch_get(C->s[0], b->pg, 9);	/* the peers' layouts */
	batch_for_get(b, 1024);
	CU_ASSERT_EQUAL(store_lookup_fill(C->s[0], b->pg, 9, false, NULL), 0);
	epoch = sm_direct_epoch(sm);
	CU_ASSERT(epoch > 0);
	check_near(sm, 3, epoch);

	/* a node goes down and comes back: the map epoch moves */
	inproc_world_set_down(C->w, 2, true);
	inproc_world_set_down(C->w, 2, false);
	CU_ASSERT_FATAL(sm_direct_epoch(sm) > epoch);
	epoch = sm_direct_epoch(sm);
	CU_ASSERT_FALSE(sm_near_read(sm_near_at(sm, 1, 0), epoch, &e));
	CU_ASSERT_TRUE(sm_near_read(sm_near_at(sm, 0, 0), epoch, &e));
	check_near(sm, 3, epoch);

	/* a dropped layout takes its node's entries with it */
	sm_drop_layout(sm, sm_layout_of(sm, 1));
	CU_ASSERT_PTR_NULL(sm_layout_of(sm, 1));
	for (uint32_t c = 0; c < 2; c++) {
		CU_ASSERT_FALSE(sm_near_read(sm_near_at(sm, 1, c), epoch, &e));
		CU_ASSERT_FALSE(sm_near(sm, sm_near_at(sm, 1, c), epoch, 1, c, &e));
	}

	/* a layout of other classes (a class of 8 KiB where the topology has 4 KiB) */
	odd = sm_layout_new(2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(odd);
	memcpy(odd, sm_layout_of(sm, 2), sizeof(*odd) + 2 * sizeof(odd->cls[0]));
	odd->cls[1].g.page_bytes = 8192;
	sm_drop_layout(sm, sm_layout_of(sm, 2));
	__atomic_store_n(&sm->layouts[2], odd, __ATOMIC_RELEASE);
	CU_ASSERT_FALSE(sm_near(sm, sm_near_at(sm, 2, 0), epoch, 2, 0, &e));
	CU_ASSERT_TRUE(sm_near_read(sm_near_at(sm, 2, 0), epoch, &e));
	CU_ASSERT_PTR_NULL(e.cl);
	pc_batch_get(C->s[0], b->pg, 9);	/* node 1's layout again */
	batch_for_get(b, 1024);
	CU_ASSERT_EQUAL(store_lookup_fill(C->s[0], b->pg, 9, false, NULL), 9);
	batch_free(b);
	down(C);
}

static CU_TestInfo tests[] = {
	{ "payload-free mode decides the same", test_payload_free_same_decisions },
	{ "direct access to mapped peers decides the same", test_direct_same_decisions },
	{ "direct writers of one bucket: no page replaced unseen", test_direct_writers_one_bucket },
	{ "a direct write tags its way while it holds the slot", test_direct_tag_order },
	{ "the fill's per-node entries follow layouts and map epochs", test_near_entries },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "slotmap direct", NULL, NULL, NULL, NULL, tests })
