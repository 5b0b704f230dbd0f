/*
 * disk_test.c - the disk pool on a real unlinked file: batched round trips (direct
 * and buffered, aligned and odd lengths), its own LRU dropping the tail when full,
 * a flipped byte in the file becoming -EBADMSG (never bad bytes), and injected
 * EIO/ENOSPC through the fault shim.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/pc_storage.h>

#include "fault.h"
#include "testutil.h"
#include "tier/disk.h"

#define BLOCK 12288

static struct pc_storage *open_file(uint32_t blocks, bool direct)
{
	struct pc_storage_params p = { .size = sizeof(p), .dir = pc_test_tmpdir(), .direct = direct,
				       .bytes = disk_file_bytes(blocks, BLOCK, 4096) };
	struct pc_storage *s = NULL;

	CU_ASSERT_EQUAL_FATAL(pc_storage_open("posix", &p, &s), 0);
	return s;
}

static struct pc_keyhash key(uint32_t i)
{
	char k[32];

	snprintf(k, sizeof(k), "block-%u", i);
	return keyhash_of(k, strlen(k));
}

static void put_n(struct disk_pool *d, uint32_t from, uint32_t n, uint32_t len, uint32_t version)
{
	struct disk_blk *b = calloc(n, sizeof(*b));
	uint8_t *buf = malloc((size_t)n * len);

	for (uint32_t i = 0; i < n; i++) {
		char k[32];

		snprintf(k, sizeof(k), "block-%u", from + i);
		pc_test_fill(buf + (size_t)i * len, len, k, version);
		b[i] = (struct disk_blk){ .key = key(from + i), .data = buf + (size_t)i * len, .len = len };
	}
	CU_ASSERT_EQUAL(disk_put(d, b, n), (int)n);
	for (uint32_t i = 0; i < n; i++)
		CU_ASSERT_EQUAL(b[i].status, 0);
	free(b);
	free(buf);
}

/* Read blocks [from, from+n) back; returns how many came back byte-identical. */
static int get_n(struct disk_pool *d, uint32_t from, uint32_t n, uint32_t len, uint32_t version,
		 bool take, int *status)
{
	struct disk_blk *b = calloc(n, sizeof(*b));
	uint8_t *buf = malloc((size_t)n * BLOCK);
	int good = 0;

	for (uint32_t i = 0; i < n; i++)
		b[i] = (struct disk_blk){ .key = key(from + i), .data = buf + (size_t)i * BLOCK,
					  .cap = BLOCK };
	disk_get(d, b, n, take);
	for (uint32_t i = 0; i < n; i++) {
		char k[32];

		snprintf(k, sizeof(k), "block-%u", from + i);
		if (status)
			status[i] = b[i].status;
		if (!b[i].status && b[i].len == len && pc_test_page_ok(b[i].data, len, k, version))
			good++;
		else if (!b[i].status)
			CU_FAIL("a block came back with status 0 but the wrong bytes");
	}
	free(b);
	free(buf);
	return good;
}

static void roundtrip(bool direct, uint32_t len)
{
	struct pc_storage *s = open_file(16, direct);
	struct disk_pool *d = NULL;
	struct disk_stats st;

	CU_ASSERT_EQUAL(s->direct, direct);
	CU_ASSERT_EQUAL_FATAL(disk_open(s, 16, BLOCK, false, &d), 0);
	put_n(d, 0, 10, len, 1);
	CU_ASSERT_EQUAL(disk_used(d), 10);
	CU_ASSERT_EQUAL(get_n(d, 0, 10, len, 1, false, NULL), 10);
	CU_ASSERT_EQUAL(disk_used(d), 10);
	/* take: read once more and remove */
	CU_ASSERT_EQUAL(get_n(d, 0, 4, len, 1, true, NULL), 4);
	CU_ASSERT_EQUAL(disk_used(d), 6);
	CU_ASSERT_FALSE(disk_has(d, key(0), NULL, NULL, NULL));
	CU_ASSERT_TRUE(disk_has(d, key(4), NULL, NULL, NULL));
	/* replacing a key: the new bytes win */
	put_n(d, 5, 1, len, 2);
	CU_ASSERT_EQUAL(get_n(d, 5, 1, len, 2, false, NULL), 1);
	disk_get_stats(d, &st);
	CU_ASSERT_EQUAL(st.writes, 11);
	CU_ASSERT_EQUAL(st.reads, 15);
	CU_ASSERT_EQUAL(st.corrupt + st.read_errors + st.write_errors + st.dropped, 0);
	disk_close(d);
	pc_storage_close(s);
}

static void test_roundtrip_direct(void)
{
	roundtrip(true, BLOCK);
}

static void test_roundtrip_direct_odd_length(void)
{
	roundtrip(true, 1000);	/* through the aligned bounce buffer */
}

static void test_roundtrip_buffered(void)
{
	roundtrip(false, 7777);
}

/* A full pool drops its own least recently used block, never one being read. */
static void test_full_drops_lru_tail(void)
{
	struct pc_storage *s = open_file(8, true);
	struct disk_pool *d = NULL;
	struct disk_stats st;
	int status[8];

	CU_ASSERT_EQUAL_FATAL(disk_open(s, 8, BLOCK, false, &d), 0);
	put_n(d, 0, 8, BLOCK, 1);
	CU_ASSERT_EQUAL(get_n(d, 0, 2, BLOCK, 1, false, NULL), 2);	/* 0 and 1 are recent now */
	put_n(d, 8, 4, BLOCK, 1);					/* drops 2, 3, 4, 5 */
	disk_get_stats(d, &st);
	CU_ASSERT_EQUAL(st.dropped, 4);
	CU_ASSERT_EQUAL(disk_used(d), 8);
	CU_ASSERT_EQUAL(get_n(d, 0, 8, BLOCK, 1, false, status), 4);
	CU_ASSERT(status[0] == 0 && status[1] == 0 && status[6] == 0 && status[7] == 0);
	CU_ASSERT(status[2] == -ENOENT && status[3] == -ENOENT && status[4] == -ENOENT &&
		  status[5] == -ENOENT);
	CU_ASSERT_EQUAL(get_n(d, 8, 4, BLOCK, 1, false, NULL), 4);
	disk_close(d);
	pc_storage_close(s);
}

/* Flip one byte of stored block `victim` of `blocks` in the file, then get them all
 * in one batch: that one a miss, counted, gone; the others good. With more blocks
 * than an AIO run of the posix storage, each is checked as its run lands. */
static void flipped_byte(uint32_t blocks, uint32_t victim)
{
	struct pc_storage *s = open_file(blocks, true);
	struct disk_pool *d = NULL;
	uint8_t *page = aligned_alloc(4096, BLOCK);
	struct pc_io io = { .buf = page, .len = BLOCK };
	struct disk_stats st;
	uint32_t blk;
	int *status = calloc(blocks, sizeof(*status));

	CU_ASSERT_EQUAL_FATAL(disk_open(s, blocks, BLOCK, false, &d), 0);
	put_n(d, 0, blocks, BLOCK, 1);
	CU_ASSERT_TRUE_FATAL(keymap_get(&d->map, key(victim), &blk));
	io.off = blk * d->stride;
	CU_ASSERT_EQUAL(pc_storage_read(s, &io, 1), 0);
	page[5000] ^= 0x10;
	CU_ASSERT_EQUAL(pc_storage_write(s, &io, 1), 0);
	CU_ASSERT_EQUAL(get_n(d, 0, blocks, BLOCK, 1, false, status), (int)blocks - 1);
	for (uint32_t i = 0; i < blocks; i++)
		CU_ASSERT_EQUAL(status[i], i == victim ? -EBADMSG : 0);
	disk_get_stats(d, &st);
	CU_ASSERT_EQUAL(st.corrupt, 1);
	CU_ASSERT_FALSE(disk_has(d, key(victim), NULL, NULL, NULL));
	CU_ASSERT_EQUAL(get_n(d, victim, 1, BLOCK, 1, false, status), 0);
	CU_ASSERT_EQUAL(status[0], -ENOENT);
	free(status);
	free(page);
	disk_close(d);
	pc_storage_close(s);
}

static void test_flipped_byte(void)
{
	flipped_byte(3, 1);
	flipped_byte(24, 13);
}

/* A put with the sum its bytes were written with stores that sum: bytes that
 * changed since (here: a sum that does not match) fail it on the way back, and a
 * matching given sum round-trips like a computed one. */
static void test_given_sum(void)
{
	struct pc_storage *s = open_file(4, true);
	struct disk_pool *d = NULL;
	uint8_t *buf = aligned_alloc(4096, 2 * BLOCK);
	struct disk_blk b[2];
	uint64_t sum;
	int status[2];

	CU_ASSERT_EQUAL_FATAL(disk_open(s, 4, BLOCK, false, &d), 0);
	pc_test_fill(buf, BLOCK, "block-0", 1);
	pc_test_fill(buf + BLOCK, BLOCK, "block-1", 1);
	b[0] = (struct disk_blk){ .key = key(0), .data = buf, .len = BLOCK,
				  .sum = disk_sum(key(0), buf, BLOCK), .sum_given = true };
	b[1] = (struct disk_blk){ .key = key(1), .data = buf + BLOCK, .len = BLOCK,
				  .sum = disk_sum(key(1), buf + BLOCK, BLOCK) ^ 1, .sum_given = true };
	CU_ASSERT_EQUAL(disk_put(d, b, 2), 2);
	CU_ASSERT_TRUE(disk_has(d, key(1), NULL, &sum, NULL));
	CU_ASSERT_EQUAL(sum, b[1].sum);			/* stored as given, not recomputed */
	CU_ASSERT_EQUAL(get_n(d, 0, 2, BLOCK, 1, false, status), 1);
	CU_ASSERT_EQUAL(status[0], 0);
	CU_ASSERT_EQUAL(status[1], -EBADMSG);
	disk_close(d);
	pc_storage_close(s);
	free(buf);
}

static void test_injected_errors(void)
{
	struct pc_storage *s = open_file(8, true);
	struct disk_pool *d = NULL;
	struct fault *ft = fault_new();
	struct disk_stats st;
	struct disk_blk b[2];
	uint8_t *buf = aligned_alloc(4096, 2 * BLOCK);
	int status[2];

	CU_ASSERT_EQUAL_FATAL(disk_open(s, 8, BLOCK, false, &d), 0);
	CU_ASSERT_EQUAL_FATAL(fault_wrap_storage(ft, s), 0);
	memset(buf, 7, 2 * BLOCK);
	/* ENOSPC on write: nothing stored, both counted */
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_WRITE, .err = -ENOSPC });
	b[0] = (struct disk_blk){ .key = key(0), .data = buf, .len = BLOCK };
	b[1] = (struct disk_blk){ .key = key(1), .data = buf + BLOCK, .len = BLOCK };
	CU_ASSERT_EQUAL(disk_put(d, b, 2), 0);
	CU_ASSERT(b[0].status == -ENOSPC && b[1].status == -ENOSPC);
	CU_ASSERT_EQUAL(disk_used(d), 0);
	CU_ASSERT_FALSE(disk_has(d, key(0), NULL, NULL, NULL));
	/* EIO on read: a miss, the block is dropped */
	fault_clear(ft);
	put_n(d, 0, 2, BLOCK, 1);
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_READ, .err = -EIO });
	CU_ASSERT_EQUAL(get_n(d, 0, 2, BLOCK, 1, false, status), 0);
	CU_ASSERT(status[0] == -EIO && status[1] == -EIO);
	CU_ASSERT_EQUAL(disk_used(d), 0);
	disk_get_stats(d, &st);
	CU_ASSERT_EQUAL(st.write_errors, 2);
	CU_ASSERT_EQUAL(st.read_errors, 2);
	CU_ASSERT_EQUAL(fault_hits(ft, 0), 2);
	/* the pool works again once the disk does */
	fault_clear(ft);
	put_n(d, 0, 2, BLOCK, 3);
	CU_ASSERT_EQUAL(get_n(d, 0, 2, BLOCK, 3, false, NULL), 2);
	free(buf);
	disk_close(d);
	fault_free(ft);
	pc_storage_close(s);
}

/* Blocks larger than the pool's block, and a file too small for the pool. */
static void test_limits(void)
{
	struct pc_storage *s = open_file(4, true);
	struct disk_pool *d = NULL;
	uint8_t *buf = calloc(1, BLOCK + 1);
	struct disk_blk b = { .key = key(0), .data = buf, .len = BLOCK + 1 };

	CU_ASSERT_EQUAL(disk_open(s, 5, BLOCK, false, &d), -ENOSPC);
	CU_ASSERT_EQUAL_FATAL(disk_open(s, 4, BLOCK, false, &d), 0);
	CU_ASSERT_EQUAL(disk_put(d, &b, 1), 0);
	CU_ASSERT_EQUAL(b.status, -EFBIG);
	free(buf);
	disk_close(d);
	pc_storage_close(s);
}

static CU_TestInfo tests[] = {
	{ "round trip, O_DIRECT, whole blocks", test_roundtrip_direct },
	{ "round trip, O_DIRECT, odd length (bounce)", test_roundtrip_direct_odd_length },
	{ "round trip, buffered", test_roundtrip_buffered },
	{ "a full pool drops its LRU tail", test_full_drops_lru_tail },
	{ "a flipped byte in the file is a miss", test_flipped_byte },
	{ "a given sum is stored as given", test_given_sum },
	{ "injected ENOSPC and EIO", test_injected_errors },
	{ "limits", test_limits },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "disk pool", NULL, NULL, NULL, NULL, tests })
