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
#include "placement/ring.h"
#include "slotmap/slotmap_spill.h"
#include "store.h"
#include "fault.h"
#include "duo.h"
#include "testutil.h"
#include "tier/disk.h"

#define PAGE 12288

#define cluster pc_test_duo

/* Two nodes, 16 KiB slots, 4 ways: 15 buckets = 60 slots each. */
static struct cluster *up(uint32_t spill_ways)
{
	char store[160];

	snprintf(store, sizeof(store), "global_segment_size: 1MiB, slot_size_classes: [16KiB], "
		 "slot_ways: 4, slot_spill_ways: %u", spill_ways);
	return pc_test_duo_up(store);
}

#define down pc_test_duo_down

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
	/* 90%: only pages evicted between sweeps miss (a slow run's sweeps fall behind) */
	if (pc_test_precise("90% hits of a working set four times the slots"))
		CU_ASSERT(hits >= 432);
	CU_ASSERT(m0.spill_promoted + m1.spill_promoted >= 300);	/* most came from disk */
	CU_ASSERT(r.disk_hits > 0);
	CU_ASSERT(m0.spill_demoted > 0 && m1.spill_demoted > 0);
	CU_ASSERT(r.promote_rpcs <= 30);	/* at most one per batch and remote owner */
	/* again, through the other node */
	wrong = 0;
	hits = pc_test_read_pages(C->s[0], 480, PAGE, &wrong, &bad);
	if (pc_test_precise("90% hits again, through the other node"))
		CU_ASSERT(hits >= 432);
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

static void test_corrupt_and_failing_disk(void)
{
	struct cluster *C = up(2);
	struct disk_pool *d0 = sm_spill_disk(sm_of(C->s[0]->mode), 0), *d1 = sm_spill_disk(sm_of(C->s[1]->mode), 0);
	struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) }, r = { .size = sizeof(r) };
	struct fault *ft = fault_new();
	int wrong = 0, bad = 0, hits;

	for (uint32_t i = 0; i < 240; i += 8) {
		pc_test_write_pages(C->s[0], i, 8, PAGE);
		pace();
	}
	/* every disk copy now reads back corrupt: misses, never wrong bytes */
	CU_ASSERT_EQUAL_FATAL(fault_wrap_storage(ft, d0->stg), 0);
	CU_ASSERT_EQUAL_FATAL(fault_wrap_storage(ft, d1->stg), 0);
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_READ, .kind = FAULT_CORRUPT, .bit = 62 });
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
	fault_clear(ft);
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_WRITE, .kind = FAULT_FAIL, .err = -EIO });
	for (uint32_t i = 1000; i < 1240; i += 16) {
		pc_test_write_pages(C->s[0], i, 16, PAGE);
		pace();
	}
	pc_store_metrics(C->s[0], &m0);
	pc_store_metrics(C->s[1], &m1);
	CU_ASSERT(m0.spill_failures + m1.spill_failures > 0);
	fault_free(ft);
	down(C);
}

/* The key "<prefix><j>" on, past j, that node owns. */
static void key_owned(struct cluster *C, uint32_t node, const char *prefix, int *j, char *out)
{
	do
		sprintf(out, "%s%d", prefix, (*j)++);
	while (ring_owner_of(C->s[0]->svc.ring, keyhash_of(out, strlen(out))) != node);
}

/* A page promoted from disk that is too big to come back inline (-EAGAIN: read it
 * in its slot again), whose owner then answers that read as restarted (-ESTALE):
 * the key fails or misses, never a hit whose buffer nothing was read into. */
static void test_stale_after_promote(void)
{
	struct cluster *C = pc_test_duo_up("slot_size_classes: [9MiB], slot_ways: 2, slot_num_buckets: 1, "
					   "slot_spill_ways: 1, slot_read_policy: index");
	const size_t len = 9u << 20;
	uint8_t *page = malloc(len), *out = calloc(1, len);
	struct pc_metrics m = { .size = sizeof(m) };
	char k[32], filler[32];
	struct pc_page pg;
	struct fault *ft = fault_new();
	int j = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(page);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	key_owned(C, 0, "big", &j, k);
	key_owned(C, 0, "big", &j, filler);
	pc_test_fill(page, len, k, 1);
	pg = (struct pc_page){ .key = k, .key_len = strlen(k), .data = page, .len = len };
	CU_ASSERT_EQUAL_FATAL(pc_batch_set(C->s[0], &pg, 1), 1);
	pace();
	/* a second page fills the one bucket: the sweep moves the older to disk */
	pc_test_fill(page, len, filler, 1);
	pg = (struct pc_page){ .key = filler, .key_len = strlen(filler), .data = page, .len = len };
	CU_ASSERT_EQUAL_FATAL(pc_batch_set(C->s[0], &pg, 1), 1);
	for (int i = 0; i < 200 && !m.spill_demoted; i++) {
		pace();
		pc_store_metrics(C->s[0], &m);
	}
	CU_ASSERT_EQUAL_FATAL(m.spill_demoted, 1);
	/* n1's first READ (the index block) misses; every READ after the promote RPC
	 * finds the owner restarted */
	CU_ASSERT_EQUAL_FATAL(fault_wrap_fabric(ft, C->s[1]->svc.fabric), 0);
	fault_add(ft, (struct fault_rule){ .site = FAULT_OP_READ, .kind = FAULT_FAIL, .err = -ESTALE,
					   .nth = 2 });
	pg = (struct pc_page){ .key = k, .key_len = strlen(k), .data = out, .cap = len, .len = len };
	CU_ASSERT_EQUAL(pc_batch_get(C->s[1], &pg, 1), 0);
	CU_ASSERT_NOT_EQUAL(pg.status, 0);
	CU_ASSERT_EQUAL(pg.len, 0);
	pc_store_metrics(C->s[1], &m);
	CU_ASSERT_EQUAL(m.promote_rpcs, 1);
	CU_ASSERT_EQUAL(m.hits, 0);
	fault_unwrap_fabric(C->s[1]->svc.fabric);
	fault_free(ft);
	free(page);
	free(out);
	down(C);
}

/* The spill's files together stay within nodes.nvme.capacity (16 MiB in the duo),
 * also for classes that are not a multiple of the 4 KiB a page takes on disk. */
static void test_files_within_capacity(void)
{
	struct cluster *C = pc_test_duo_up("global_segment_size: 1MiB, slot_size_classes: [1KiB, 6KiB], "
					   "slot_ways: 4, slot_spill_ways: 1");
	uint64_t file = 0, cap = 16ull << 20;

	for (uint32_t c = 0; c < 2; c++) {
		struct disk_pool *d = sm_spill_disk(sm_of(C->s[0]->mode), c);

		CU_ASSERT_PTR_NOT_NULL_FATAL(d);
		printf("\n  class %u: %u blocks of %u B, file %llu B", c, d->nr_blocks, d->block_bytes,
		       (unsigned long long)d->stg->bytes);
		CU_ASSERT(d->nr_blocks > 0);
		file += d->stg->bytes;
	}
	printf("\n  spill files %llu B for nvme.capacity %llu B\n", (unsigned long long)file,
	       (unsigned long long)cap);
	CU_ASSERT(file <= cap);
	CU_ASSERT(file > cap / 2);	/* and they use it */
	down(C);
}

static CU_TestInfo tests[] = {
	{ "the spill files stay within nvme.capacity", test_files_within_capacity },
	{ "a working set 4x the slots, read through another node", test_four_times_slots },
	{ "no disk: plain slotmap", test_no_disk_is_plain_slotmap },
	{ "corrupt copies and failing writes", test_corrupt_and_failing_disk },
	{ "a promoted page whose owner restarted is no hit", test_stale_after_promote },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "spill under slotmap", NULL, NULL, NULL, NULL, tests })
