/*
 * tier_smoke.c - the seed's three smoke runs (see tier_smoke.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "testutil.h"
#include "tier_smoke.h"

uint64_t smoke_hash(char set, uint32_t i)
{
	char k[32];

	snprintf(k, sizeof(k), "sequence %c block %u", set, i);
	return XXH3_64bits(k, strlen(k));
}

void smoke_fill(uint8_t *p, char set, uint32_t i)
{
	char k[32];

	snprintf(k, sizeof(k), "%c%u", set, i);
	pc_test_fill(p, SMOKE_BLOCK, k, 1);
}

int smoke_put(struct pc_store *st, const char *node, char set, uint32_t from, uint32_t n)
{
	struct pc_block *b = calloc(n, sizeof(*b));
	uint8_t *buf = malloc((size_t)n * SMOKE_BLOCK);
	int ret;

	for (uint32_t i = 0; i < n; i++) {
		smoke_fill(buf + (size_t)i * SMOKE_BLOCK, set, from + i);
		b[i] = (struct pc_block){ .hash = smoke_hash(set, from + i),
					  .data = buf + (size_t)i * SMOKE_BLOCK, .len = SMOKE_BLOCK };
	}
	ret = pc_tier_put(st, node, b, n);
	free(b);
	free(buf);
	return ret;
}

int smoke_fetch(struct pc_store *st, const char *node, char set, uint32_t from, uint32_t n)
{
	struct pc_block *b = calloc(n, sizeof(*b));
	uint8_t *buf = malloc((size_t)n * SMOKE_BLOCK), *want = malloc(SMOKE_BLOCK);
	int same = 0;

	for (uint32_t i = 0; i < n; i++)
		b[i] = (struct pc_block){ .hash = smoke_hash(set, from + i),
					  .data = buf + (size_t)i * SMOKE_BLOCK, .cap = SMOKE_BLOCK };
	pc_tier_fetch(st, node, b, n);
	for (uint32_t i = 0; i < n; i++) {
		if (b[i].status)
			continue;
		smoke_fill(want, set, from + i);
		if (b[i].len == SMOKE_BLOCK && !memcmp(b[i].data, want, SMOKE_BLOCK))
			same++;
		else
			CU_FAIL("a fetched block is not byte-identical");
	}
	free(b);
	free(buf);
	free(want);
	return same;
}

static int wanted(struct pc_store *st, const char *node, char set, uint32_t n)
{
	uint64_t h[16];
	bool w[16];

	for (uint32_t i = 0; i < n; i++)
		h[i] = smoke_hash(set, i);
	return pc_tier_offer(st, node, h, n, w);
}

static void where(struct pc_store *st, const char *node, char set, uint32_t n, uint8_t *out)
{
	uint64_t h[16];

	for (uint32_t i = 0; i < n; i++)
		h[i] = smoke_hash(set, i);
	CU_ASSERT(pc_tier_query(st, node, h, n, out) >= 0);
}

void smoke_runs(struct pc_store *st, const char *node)
{
	struct pc_tier_metrics m = { .size = sizeof(m) };
	uint8_t w[6];

	/* Run 1: baseline. Six blocks offered, staged, pulled, committed, fetched back. */
	CU_ASSERT_EQUAL(wanted(st, node, 'A', 6), 6);
	CU_ASSERT_EQUAL(smoke_put(st, node, 'A', 0, 6), 6);
	CU_ASSERT_EQUAL(smoke_fetch(st, node, 'A', 0, 6), 6);
	CU_ASSERT_EQUAL_FATAL(pc_tier_node_metrics(st, node, &m), 0);
	CU_ASSERT_EQUAL(m.host_blocks, 8);
	CU_ASSERT_EQUAL(m.disk_blocks, 64);
	CU_ASSERT_EQUAL(m.resident_committed_blocks, 6);
	CU_ASSERT_EQUAL(m.demoted_blocks, 0);

	/* Run 2: overflow. Six more into an 8-block pool: the LRU tail (A0..A3) goes to
	 * disk instead of away. */
	CU_ASSERT_EQUAL(wanted(st, node, 'B', 6), 6);
	CU_ASSERT_EQUAL(smoke_put(st, node, 'B', 0, 6), 6);
	CU_ASSERT_EQUAL_FATAL(pc_tier_node_metrics(st, node, &m), 0);
	CU_ASSERT_EQUAL(m.evicted_blocks, 4);
	CU_ASSERT_EQUAL(m.demoted_blocks, 4);
	CU_ASSERT_EQUAL(m.dropped_blocks, 0);
	CU_ASSERT_EQUAL(m.resident_committed_blocks, 8);
	CU_ASSERT_EQUAL(m.resident_disk_blocks, 4);
	where(st, node, 'A', 6, w);
	CU_ASSERT(w[0] == PC_WHERE_DISK && w[3] == PC_WHERE_DISK && w[4] == PC_WHERE_HOST &&
		  w[5] == PC_WHERE_HOST);

	/* Run 3: the payoff. The peer has every block of A (four on disk): the offer
	 * wants none; the fetch demotes four others, promotes A0..A3, verifies. */
	CU_ASSERT_EQUAL(wanted(st, node, 'A', 6), 0);
	CU_ASSERT_EQUAL(smoke_fetch(st, node, 'A', 0, 6), 6);
	CU_ASSERT_EQUAL_FATAL(pc_tier_node_metrics(st, node, &m), 0);
	CU_ASSERT_EQUAL(m.demoted_blocks, 8);
	CU_ASSERT_EQUAL(m.promoted_blocks, 4);
	CU_ASSERT_EQUAL(m.fetch_disk, 4);
	CU_ASSERT_EQUAL(m.fetch_host, 8);		/* 6 in run 1, 2 now */
	CU_ASSERT_EQUAL(m.fetch_miss, 0);
	CU_ASSERT_EQUAL(m.corrupt_on_promote, 0);
	CU_ASSERT_EQUAL(m.spill_failures, 0);
	CU_ASSERT_EQUAL(m.resident_committed_blocks, 8);
	CU_ASSERT_EQUAL(m.resident_disk_blocks, 4);	/* B0..B3 (A's copies were taken) */
	CU_ASSERT_EQUAL(m.leased_blocks, 0);		/* every lease released */
	where(st, node, 'B', 6, w);
	CU_ASSERT(w[0] == PC_WHERE_DISK && w[3] == PC_WHERE_DISK && w[4] == PC_WHERE_HOST);
	printf("\n  runs 2 and 3: demoted %llu blocks in %llu batches (%.1f ms), promoted %llu in %llu (%.1f ms)",
	       (unsigned long long)m.demoted_blocks, (unsigned long long)m.demote_batches,
	       m.demote_ns / 1e6, (unsigned long long)m.promoted_blocks,
	       (unsigned long long)m.promote_batches, m.promote_ns / 1e6);
}
