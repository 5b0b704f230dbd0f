/*
 * spill_test.c - spill under slotmap on the in-process fabric: a working set four
 * times the slots written through one node and read through another (every page
 * returned byte-identical, hits include pages promoted from disk, misses clean); no
 * disk means plain slotmap; a corrupt disk copy and failing disk writes.
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
#include "slotmap/slotmap_spill.h"
#include "store.h"
#include "testutil.h"
#include "tier/disk.h"

#define PAGE 12288

struct cluster {
	struct pc_topology *topo;
	struct inproc_world *w;
	struct pc_store *s[2];
};

/* Two nodes, 16 KiB slots, 4 ways: 15 buckets = 60 slots each. */
static struct cluster *up(uint32_t spill_ways)
{
	struct cluster *C = calloc(1, sizeof(*C));
	char text[1024], err[PC_ERR_MAX] = "";
	int len = snprintf(text, sizeof(text),
			   "store: {global_segment_size: 1MiB, slot_size_classes: [16KiB], slot_ways: 4, slot_spill_ways: %u}\n"
			   "node_defaults: {address: 127.0.0.1, nvme: {path: %s, capacity: 16MiB}}\n"
			   "nodes:\n  - {name: n0, port: 40000}\n  - {name: n1, port: 40001}\n",
			   spill_ways, pc_test_tmpdir());

	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, (size_t)len, "spill", &C->topo, err, sizeof(err)), 0);
	C->w = inproc_world_create(2);
	for (int i = 0; i < 2; i++) {
		struct pc_store_opts o = { .size = sizeof(o), .topo = C->topo, .fabric = "inproc",
					   .node = i ? "n1" : "n0", .err = err, .errlen = sizeof(err) };
		struct store_deps x = { .backend_arg = C->w };

		if (builtin_store_open(&o, &x, &C->s[i]))
			printf("\n  %s\n", err);
		CU_ASSERT_PTR_NOT_NULL_FATAL(C->s[i]);
	}
	return C;
}

static void down(struct cluster *C)
{
	pc_store_close(C->s[0]);
	pc_store_close(C->s[1]);
	inproc_world_destroy(C->w);
	pc_topology_free(C->topo);
	free(C);
}

static void pace(void)
{
	usleep(pc_test_under_valgrind() ? 200000 : 30000);
}

/* 480 pages into 120 slots, written through n0 and read through n1. Two ways per
 * bucket are kept free, so a batch of 8 pages rarely lands three in one bucket
 * between two sweeps (which is when a write still evicts). */
static void test_four_times_slots(void)
{
	struct cluster *C = up(2);
	struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) }, r = { .size = sizeof(r) };
	int wrong = 0, bad = 0, hits;

	for (uint32_t i = 0; i < 480; i += 8) {
		pc_test_write_pages(C->s[0], i, 8, PAGE);
		pace();
	}
	hits = pc_test_read_pages(C->s[1], 480, PAGE, &wrong, &bad);
	pc_store_metrics(C->s[0], &m0);
	pc_store_metrics(C->s[1], &m1);
	r = m1;
	printf("\n  480 pages in 2 x 60 slots: %d hits, %d wrong; demoted %llu + %llu, promoted %llu + %llu (%llu inline over the fabric), %llu promote RPCs, %llu evictions",
	       hits, wrong, (unsigned long long)m0.spill_demoted, (unsigned long long)m1.spill_demoted,
	       (unsigned long long)m0.spill_promoted, (unsigned long long)m1.spill_promoted,
	       (unsigned long long)r.disk_hits, (unsigned long long)r.promote_rpcs,
	       (unsigned long long)(m0.evictions + m1.evictions));
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(hits >= 432);		/* 90%: only pages evicted between sweeps miss */
	CU_ASSERT(m0.spill_promoted + m1.spill_promoted >= 300);	/* most came from disk */
	CU_ASSERT(r.disk_hits > 0);
	CU_ASSERT(m0.spill_demoted > 0 && m1.spill_demoted > 0);
	CU_ASSERT(r.promote_rpcs <= 30);	/* at most one per batch and remote owner */
	/* again, through the other node */
	wrong = 0;
	CU_ASSERT(pc_test_read_pages(C->s[0], 480, PAGE, &wrong, &bad) >= 432);
	CU_ASSERT_EQUAL(wrong, 0);
	down(C);
}

/* No spill: plain slotmap, no promote RPCs, no disk. */
static void test_no_disk_is_plain_slotmap(void)
{
	struct cluster *C = up(0);
	struct pc_metrics m = { .size = sizeof(m) };
	int wrong = 0, bad = 0, hits;

	for (uint32_t i = 0; i < 480; i += 16)
		pc_test_write_pages(C->s[0], i, 16, PAGE);
	hits = pc_test_read_pages(C->s[1], 480, PAGE, &wrong, &bad);
	pc_store_metrics(C->s[1], &m);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT(hits <= 120);
	CU_ASSERT_EQUAL(m.promote_rpcs, 0);
	CU_ASSERT_EQUAL(m.disk_hits, 0);
	CU_ASSERT_PTR_NULL(sm_spill_disk(sm_of(C->s[0]->mode), 0));
	down(C);
}

/* A shim that runs the real read, then flips a byte of every page it returns. */
static int flip_on_read(void *arg, bool write, struct pc_io *ios, size_t n)
{
	struct pc_storage *s = arg;

	if (write)
		return 0;
	s->ops->read(s, ios, n);
	for (size_t i = 0; i < n; i++)
		if (!ios[i].status && ios[i].buf)
			((uint8_t *)ios[i].buf)[7] ^= 0x40;
	return 1;
}

static int fail_writes(void *arg, bool write, struct pc_io *ios, size_t n)
{
	(void)arg;
	if (!write)
		return 0;
	for (size_t i = 0; i < n; i++)
		ios[i].status = -EIO;
	return 1;
}

static void test_corrupt_and_failing_disk(void)
{
	struct cluster *C = up(2);
	struct disk_pool *d0 = sm_spill_disk(sm_of(C->s[0]->mode), 0), *d1 = sm_spill_disk(sm_of(C->s[1]->mode), 0);
	struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) }, r = { .size = sizeof(r) };
	int wrong = 0, bad = 0, hits;

	for (uint32_t i = 0; i < 240; i += 8) {
		pc_test_write_pages(C->s[0], i, 8, PAGE);
		pace();
	}
	/* every disk copy now reads back corrupt: misses, never wrong bytes */
	d0->stg->fault = flip_on_read;
	d0->stg->fault_arg = d0->stg;
	d1->stg->fault = flip_on_read;
	d1->stg->fault_arg = d1->stg;
	hits = pc_test_read_pages(C->s[1], 240, PAGE, &wrong, &bad);
	pc_store_metrics(C->s[0], &m0);
	pc_store_metrics(C->s[1], &m1);
	pc_store_metrics(C->s[1], &r);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(r.disk_hits, 0);
	CU_ASSERT(m0.spill_corrupt + m1.spill_corrupt > 0);
	CU_ASSERT(hits <= 120);
	/* writes to disk fail: pages stay in their slots, failures are counted */
	d0->stg->fault = fail_writes;
	d1->stg->fault = fail_writes;
	for (uint32_t i = 1000; i < 1240; i += 16) {
		pc_test_write_pages(C->s[0], i, 16, PAGE);
		pace();
	}
	pc_store_metrics(C->s[0], &m0);
	pc_store_metrics(C->s[1], &m1);
	CU_ASSERT(m0.spill_failures + m1.spill_failures > 0);
	d0->stg->fault = NULL;
	d1->stg->fault = NULL;
	down(C);
}

static CU_TestInfo tests[] = {
	{ "a working set 4x the slots, read through another node", test_four_times_slots },
	{ "no disk: plain slotmap", test_no_disk_is_plain_slotmap },
	{ "corrupt copies and failing writes", test_corrupt_and_failing_disk },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "spill under slotmap", NULL, NULL, NULL, NULL, tests })
