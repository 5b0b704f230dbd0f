/*
 * slot_test.c - slot geometry, header codec, the read gate (every miss reason),
 * pick_way, stamps, the one-pass choice in place and the local seqlock, including a
 * concurrent writer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/payload_hash.h"
#include "placement/slot.h"
#include "testutil.h"

#define KEY(s) keyhash_of(s, strlen(s))

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 31 + (i >> 8));
}

/* The seed's startup line: 1023 buckets x 4 ways x 262208 B (=1072955136 bytes). */
static void test_geometry_seed(void)
{
	struct slot_geometry g;

	CU_ASSERT_EQUAL_FATAL(slot_geometry_init(&g, 0, 256 * 1024, 4, 0, 1ULL << 30), 0);
	CU_ASSERT_EQUAL(g.nr_buckets, 1023);
	CU_ASSERT_EQUAL(g.stride, 262208);
	CU_ASSERT_EQUAL(g.bytes, 1072955136ULL);
	CU_ASSERT_EQUAL(g.index_stride, 64);
	CU_ASSERT_EQUAL(g.index_bytes, 1023 * 64);
	CU_ASSERT_EQUAL(slot_offset(&g, 2, 3), (2 * 4 + 3) * 262208ULL);
	CU_ASSERT_EQUAL(slot_index_offset(&g, 0), g.bytes);
}

static void test_geometry_other(void)
{
	struct slot_geometry g;

	CU_ASSERT_EQUAL(slot_geometry_init(&g, 1, 12288, 8, 100, 0), 0);
	CU_ASSERT_EQUAL(g.nr_buckets, 100);
	CU_ASSERT_EQUAL(g.stride, 12352);
	CU_ASSERT_EQUAL(g.index_stride, 64);
	CU_ASSERT_EQUAL(slot_geometry_init(&g, 0, 1000, 20, 10, 0), 0);
	CU_ASSERT_EQUAL(g.stride, 1088);	/* rounded to 64 */
	CU_ASSERT_EQUAL(g.index_stride, 128);	/* 20 tags of 4 bytes */
	CU_ASSERT_EQUAL(slot_geometry_init(&g, 0, 4096, 0, 10, 0), -EINVAL);
	CU_ASSERT_EQUAL(slot_geometry_init(&g, 0, 4096, 65, 10, 0), -EINVAL);
	CU_ASSERT_EQUAL(slot_geometry_init(&g, 0, 4096, 4, 0, 4096), -EINVAL);
	CU_ASSERT_EQUAL(slot_geometry_init(&g, 0, 0, 4, 10, 0), -EINVAL);
}

/* Bucket and way come from the low hash half, owner from the high half: over many
 * keys, buckets fill evenly and the predicted way is uniform. */
static void test_bucket_spread(void)
{
	struct slot_geometry g;
	unsigned counts[64] = { 0 }, ways[4] = { 0 };
	char key[32];

	slot_geometry_init(&g, 0, 4096, 4, 64, 0);
	for (int k = 0; k < 64000; k++) {
		struct pc_keyhash h = keyhash_of(key, (size_t)snprintf(key, sizeof(key), "k%d", k));

		counts[slot_bucket_of(&g, h)]++;
		ways[slot_predicted_way(&g, h)]++;
	}
	for (int b = 0; b < 64; b++)
		CU_ASSERT(counts[b] > 800 && counts[b] < 1200);
	for (int w = 0; w < 4; w++)
		CU_ASSERT(ways[w] > 15000 && ways[w] < 17000);
}

static void test_header_codec(void)
{
	struct slot_header h = { .seq = 0x0102030405060708ULL, .magic = SLOT_MAGIC,
				 .version = SLOT_VERSION, .class_id = 3,
				 .key = { 0x1111, 0x2222 }, .payload_len = 12288, .flags = 0,
				 .checksum = 0xabcdef, .stamp = 99 }, d;
	uint8_t buf[64];

	slot_header_encode(&h, buf);
	CU_ASSERT_EQUAL(buf[0], 0x08);			/* seq, little-endian at 0 */
	CU_ASSERT_EQUAL(memcmp(buf + 8, "PCS1", 4), 0);	/* magic at 8 */
	CU_ASSERT_EQUAL(buf[14], 3);			/* class at 14 */
	CU_ASSERT_EQUAL(buf[16], 0x11);			/* key at 16 */
	CU_ASSERT_EQUAL(buf[32] | buf[33] << 8, 12288);	/* length at 32 */
	CU_ASSERT_EQUAL(buf[48], 99);			/* stamp at 48 */
	slot_header_decode(buf, &d);
	CU_ASSERT_EQUAL(memcmp(&h, &d, sizeof(h)), 0);
}

/* Fixed checksum vector: the gate must agree across builds and hosts. */
static void test_checksum_vector(void)
{
	uint8_t page[256];
	struct pc_keyhash k = KEY("page-0");

	fill(page, sizeof(page), 7);
	CU_ASSERT_EQUAL(slot_checksum(k, page, sizeof(page)), 0x9a3edaa8120f6f1aULL);
	/* Seeded by key and length: same bytes, other key or length, other sum. */
	CU_ASSERT_NOT_EQUAL(slot_checksum(KEY("page-1"), page, 256), slot_checksum(k, page, 256));
	CU_ASSERT_NOT_EQUAL(slot_checksum(k, page, 255), slot_checksum(k, page, 256));
}

/* A page of more than one piece: xxh3_64 of each piece seeded with the sum before;
 * one of one piece (or none) is xxh3_64 of the whole. Summed in any steps as the
 * bytes come, the same sum. */
static void test_checksum_pieces(void)
{
	static const uint32_t lens[] = { 0, 1, 1000, SLOT_SUM_PIECE - 1, SLOT_SUM_PIECE,
					 SLOT_SUM_PIECE + 1, 2 * SLOT_SUM_PIECE, 300005 };
	static const uint32_t steps[] = { 1, 4096, 60000, SLOT_SUM_PIECE, 100000 };
	struct pc_keyhash k = KEY("page-9");
	uint8_t *page = malloc(300005);
	unsigned bad = 0;

	fill(page, 300005, 3);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint32_t len = lens[i];
		struct slot_sum s;
		uint64_t want, h;

		slot_sum_begin(&s, k, len);
		h = s.h;	/* the seed */
		for (uint32_t at = 0; at < len; at += SLOT_SUM_PIECE) {
			uint32_t n = len - at < SLOT_SUM_PIECE ? len - at : SLOT_SUM_PIECE;

			h = xxh3_payload(page + at, n, h);
		}
		want = len ? h : xxh3_payload(page, 0, s.h);
		bad += slot_checksum(k, page, len) != want;
		for (size_t st = 0; st < sizeof(steps) / sizeof(steps[0]); st++) {
			slot_sum_begin(&s, k, len);
			for (uint32_t upto = steps[st]; upto < len; upto += steps[st])
				slot_sum_upto(&s, page, upto);
			bad += slot_sum_end(&s, page, len) != want;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(slot_checksum(k, page, 300005), 0xdaa43ae5165f21ceULL);	/* across builds */
	free(page);
}

struct image {
	struct slot_header h;
	uint8_t payload[4096];
};

static void make(struct image *im, const char *key, uint8_t seed, uint32_t len)
{
	fill(im->payload, len, seed);
	slot_header_make(&im->h, 2, 0, KEY(key), im->payload, len, 10);
}

static void test_gate_hit(void)
{
	struct image a;

	make(&a, "A", 1, 4096);
	CU_ASSERT_EQUAL(slot_matches(&a.h, a.payload, KEY("A"), 4096, 4096), SLOT_HIT);
	CU_ASSERT_EQUAL(slot_matches(&a.h, a.payload, KEY("A"), 0, 8192), SLOT_HIT);
	CU_ASSERT_EQUAL(slot_header_check(&a.h, KEY("A"), 0, 4096), SLOT_HIT);
}

static void test_gate_misses(void)
{
	struct image a, b, t;
	struct slot_header zero = { 0 };

	make(&a, "A", 1, 4096);
	make(&b, "B", 2, 4096);
	/* empty slot */
	CU_ASSERT_EQUAL(slot_matches(&zero, a.payload, KEY("A"), 0, 4096), SLOT_MISS_ABSENT);
	/* another key */
	CU_ASSERT_EQUAL(slot_matches(&b.h, b.payload, KEY("A"), 0, 4096), SLOT_MISS_OTHER_KEY);
	/* odd seq: a write in progress */
	t = a;
	t.h.seq = 3;
	CU_ASSERT_EQUAL(slot_matches(&t.h, t.payload, KEY("A"), 0, 4096), SLOT_MISS_TORN);
	/* wrong length: expected another, or over the capacity */
	CU_ASSERT_EQUAL(slot_matches(&a.h, a.payload, KEY("A"), 2048, 4096), SLOT_MISS_LENGTH);
	CU_ASSERT_EQUAL(slot_matches(&a.h, a.payload, KEY("A"), 0, 4095), SLOT_MISS_LENGTH);
	/* a flipped byte */
	t = a;
	t.payload[100] ^= 1;
	CU_ASSERT_EQUAL(slot_matches(&t.h, t.payload, KEY("A"), 0, 4096), SLOT_MISS_CHECKSUM);
	/* unknown format version */
	t = a;
	t.h.version = SLOT_VERSION + 1;
	CU_ASSERT_EQUAL(slot_matches(&t.h, t.payload, KEY("A"), 0, 4096), SLOT_MISS_ABSENT);
}

/* Two writers interleaved: the header of key A over the payload of key B. */
static void test_gate_header_a_payload_b(void)
{
	struct image a, b;

	make(&a, "A", 1, 4096);
	make(&b, "B", 2, 4096);
	CU_ASSERT_EQUAL(slot_matches(&a.h, b.payload, KEY("A"), 0, 4096), SLOT_MISS_CHECKSUM);
	CU_ASSERT_EQUAL(slot_matches(&b.h, a.payload, KEY("B"), 0, 4096), SLOT_MISS_CHECKSUM);
}

/* A READ racing a rewrite of the same key: first half new, second half old. */
static void test_gate_torn_middle(void)
{
	struct image v1, v2, mix;

	make(&v1, "A", 1, 4096);
	make(&v2, "A", 9, 4096);
	mix = v2;
	memcpy(mix.payload + 2048, v1.payload + 2048, 2048);
	CU_ASSERT_EQUAL(slot_matches(&mix.h, mix.payload, KEY("A"), 0, 4096), SLOT_MISS_CHECKSUM);
	CU_ASSERT_EQUAL(slot_matches(&v1.h, mix.payload, KEY("A"), 0, 4096), SLOT_MISS_CHECKSUM);
}

static void hdr(struct slot_header *h, const char *key, uint64_t stamp)
{
	uint8_t p[8] = { 0 };

	slot_header_make(h, 2, 0, KEY(key), p, 8, stamp);
}

static void test_pick_way(void)
{
	struct slot_header h[4];
	bool ev;

	memset(h, 0, sizeof(h));
	/* empty bucket: the predicted way */
	CU_ASSERT_EQUAL(slot_pick_way(h, 4, KEY("K"), 2, 0, &ev), 2);
	CU_ASSERT_FALSE(ev);
	/* predicted taken: the first empty */
	hdr(&h[2], "X", 5);
	CU_ASSERT_EQUAL(slot_pick_way(h, 4, KEY("K"), 2, 0, &ev), 0);
	/* the same key wins over empty ways: never two versions in a bucket */
	hdr(&h[3], "K", 6);
	CU_ASSERT_EQUAL(slot_pick_way(h, 4, KEY("K"), 2, 0, &ev), 3);
	CU_ASSERT_FALSE(ev);
	/* full bucket: the oldest stamp is evicted */
	hdr(&h[0], "Y", 7);
	hdr(&h[1], "Z", 4);
	CU_ASSERT_EQUAL(slot_pick_way(h, 4, KEY("Q"), 0, 0, &ev), 1);
	CU_ASSERT_TRUE(ev);
	/* reserved ways (taken earlier in this batch) are never chosen */
	CU_ASSERT_EQUAL(slot_pick_way(h, 4, KEY("Q"), 0, 1u << 1, &ev), 2);
	CU_ASSERT_EQUAL(slot_pick_way(h, 4, KEY("K"), 0, 1u << 3, &ev), 1);
	CU_ASSERT_EQUAL(slot_pick_way(h, 4, KEY("Q"), 0, 0xf, &ev), -ENOSPC);
}

static void test_stamps(void)
{
	struct slot_header h[4];

	memset(h, 0, sizeof(h));
	CU_ASSERT_EQUAL(slot_next_stamp(h, 4, 100), 100);
	hdr(&h[1], "A", 500);
	hdr(&h[3], "B", 200);
	/* a writer whose clock is behind still stamps newer than the bucket */
	CU_ASSERT_EQUAL(slot_next_stamp(h, 4, 100), 501);
	CU_ASSERT_EQUAL(slot_next_stamp(h, 4, 9000), 9000);
}

/* fuzz_slot_gate's crash-8026552f: a header a peer wrote with stamp UINT64_MAX made
 * the next stamp wrap to 0, the oldest in the bucket. The fuzzer's input, whole,
 * but for its shifted header's format version: the slots' of this build. */
static void test_stamp_at_max(void)
{
	uint8_t input[92] = {
		0x0b, 0, 0, 0, 0x07, 0, 0x01, 0, 0x30, 0x53, 0x43, 0x50, 0x8d, 0x50, 0x43, 0x53,
		0x31, 0x01, 0, 0, 0x12, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
		[32 ... 84] = 0xff, [85] = 0, [86] = 0x22, [87] = 0x22,
	};
	struct slot_header h[8];

	input[5 + 12] = SLOT_VERSION;
	for (int x = 0; x < 8; x++)
		slot_header_decode(input + (x * 7) % 8, &h[x]);
	CU_ASSERT(!slot_header_empty(&h[3]) && h[3].stamp == UINT64_MAX);	/* shifted by 5 */
	CU_ASSERT_EQUAL(slot_next_stamp(h, 8, 5), UINT64_MAX);
	memset(h, 0, sizeof(h));
	hdr(&h[2], "A", UINT64_MAX);
	CU_ASSERT_EQUAL(slot_next_stamp(h, 4, 100), UINT64_MAX);
}

/* The reference for slot_choose_local: the batch's own copy of the key among the
 * reserved ways (the last one), else slot_pick_way, and slot_next_stamp, over a
 * decoded copy of the bucket. */
static struct slot_choice choose_by_copies(const struct slot_header *h, uint32_t ways,
					   struct pc_keyhash key, uint32_t predicted,
					   uint64_t reserved, uint64_t now)
{
	struct slot_choice c = { .way = -1 };

	for (uint32_t x = 0; x < ways; x++)
		if (reserved >> x & 1 && keyhash_eq(h[x].key, key))
			c.way = (int)x;
	if (c.way < 0)
		c.way = slot_pick_way(h, ways, key, predicted, reserved, &c.evicts);
	c.seq = c.way >= 0 ? h[c.way].seq : 0;
	c.stamp = slot_next_stamp(h, ways, now);
	return c;
}

/* slot_choose_local decides as the copies do, over 20 000 random buckets: 1 to 64
 * ways, empty ways (no magic, or another format's version, with stale keys and
 * stamps), the key in none, one or several ways (reserved ones too), classes 0 to
 * 3, stamps equal, behind now, ahead of it and at UINT64_MAX, a torn header's odd
 * seq. */
static void test_choose_local(void)
{
	static const char *const names[] = { "K", "A", "B", "C" };
	static const uint64_t stamps[] = { 5, 999, 1000, 1001, 5000, UINT64_MAX };
	static uint8_t mem[SLOT_MAX_WAYS * SLOT_HEADER_BYTES];
	struct slot_header h[SLOT_MAX_WAYS];
	uint64_t r = 0x9E3779B97F4A7C15ULL;
	unsigned differ = 0;

	for (int round = 0; round < 20000; round++) {
		uint32_t ways = 1 + (uint32_t)(r >> 58) % SLOT_MAX_WAYS, predicted;
		uint64_t reserved, now = 1000;
		struct slot_choice want, got;

		for (uint32_t x = 0; x < ways; x++) {
			r = r * 6364136223846793005ULL + 1442695040888963407ULL;
			hdr(&h[x], names[r >> 40 & 3], stamps[(r >> 20) % 6]);
			h[x].class_id = (uint16_t)(r >> 16 & 3);
			h[x].seq = 2 + (r >> 10 & 1);	/* odd: being written */
			if (r >> 61 == 0)	/* empty: no magic, whatever else is left */
				h[x].magic = 0;
			else if (r >> 61 == 1)	/* a format this code does not read */
				h[x].version = SLOT_VERSION + 1;
			slot_header_encode(&h[x], mem + x * SLOT_HEADER_BYTES);
		}
		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		predicted = (uint32_t)(r >> 33) % ways;
		reserved = (r ^ r << 17) & (ways < 64 ? (1ULL << ways) - 1 : ~0ULL) & (r >> 3);
		want = choose_by_copies(h, ways, KEY("K"), predicted, reserved, now);
		got = slot_choose_local(mem, SLOT_HEADER_BYTES, ways, KEY("K"), predicted, reserved,
					now);
		if (want.way < 0)
			want.way = -ENOSPC;
		if (got.way != want.way || got.stamp != want.stamp ||
		    (got.way >= 0 && (got.seq != want.seq || got.evicts != want.evicts))) {
			if (!differ++)
				printf("\n  round %d, %u ways, reserved %#llx: way %d (copies %d), stamp %llu (%llu)\n",
				       round, ways, (unsigned long long)reserved, got.way, want.way,
				       (unsigned long long)got.stamp, (unsigned long long)want.stamp);
		}
	}
	CU_ASSERT_EQUAL(differ, 0);
}

static void test_local_roundtrip(void)
{
	struct slot_geometry g;
	uint8_t *slot, page[4096], out[4096];
	uint32_t len = 0;

	slot_geometry_init(&g, 0, 4096, 1, 1, 0);
	slot = aligned_alloc(64, g.stride);
	CU_ASSERT_PTR_NOT_NULL_FATAL(slot);
	memset(slot, 0, g.stride);
	fill(page, sizeof(page), 3);
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("A"), 0, 4096, out, &len), SLOT_MISS_ABSENT);
	CU_ASSERT_EQUAL(slot_write_local(slot, &g, KEY("A"), page, 3000, 1), 0);
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("A"), 0, 4096, out, &len), SLOT_HIT);
	CU_ASSERT_EQUAL(len, 3000);
	CU_ASSERT_EQUAL(memcmp(out, page, 3000), 0);
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("A"), 2999, 4096, out, &len), SLOT_MISS_LENGTH);
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("A"), 0, 2048, out, &len), SLOT_MISS_LENGTH);
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("B"), 0, 4096, out, &len), SLOT_MISS_OTHER_KEY);
	CU_ASSERT_EQUAL(*(uint64_t *)slot, 2);		/* seq: 0 -> 1 -> 2 */
	CU_ASSERT_EQUAL(slot_write_local(slot, &g, KEY("A"), page, 4097, 1), -EMSGSIZE);
	/* a writer holds the slot (seq odd): writers back off, readers see torn */
	*(uint64_t *)slot = 3;
	CU_ASSERT_EQUAL(slot_write_local(slot, &g, KEY("A"), page, 100, 2), -EBUSY);
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("A"), 0, 4096, out, &len), SLOT_MISS_TORN);
	/* the payload changed behind the header (a remote writer ignoring the claim) */
	*(uint64_t *)slot = 4;
	slot[SLOT_HEADER_BYTES + 10] ^= 0xff;
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("A"), 0, 4096, out, &len), SLOT_MISS_CHECKSUM);
	free(slot);
}

/* A claim word carries its claimer and deadline, and a claim left by a writer that
 * died keeps readers out (torn) until a writer takes it over from that word; the
 * page the taker commits is whole and its seq is new. */
static void test_claim_takeover(void)
{
	struct slot_geometry g;
	struct slot_header h;
	uint8_t *slot, page[4096], out[4096];
	uint64_t dead, mine;
	uint32_t len;

	dead = slot_claim_word(2, 7, 0x80000005ULL);
	CU_ASSERT_EQUAL(dead, 0x0001000700000000ULL | 5u << 1 | 1);	/* deadline wraps at 2^31 ms */
	CU_ASSERT_EQUAL(slot_claim_claimer(dead), 7);
	CU_ASSERT_EQUAL(slot_claim_deadline(dead), 5);
	CU_ASSERT_EQUAL(slot_claim_word(dead + 1, SLOT_CLAIM_ANON, 9) >> 48, 2);
	slot_geometry_init(&g, 0, 4096, 1, 1, 0);
	slot = aligned_alloc(64, g.stride);
	CU_ASSERT_PTR_NOT_NULL_FATAL(slot);
	memset(slot, 0, g.stride);
	fill(page, sizeof(page), 3);
	CU_ASSERT_EQUAL(slot_write_local(slot, &g, KEY("A"), page, 4096, 1), 0);
	/* a writer claims it, writes half a header and half the payload, and dies */
	slot_header_load(slot, &h);
	dead = slot_claim_word(h.seq, 7, 1000);
	CU_ASSERT_FATAL(__atomic_compare_exchange_n((uint64_t *)(void *)slot, &h.seq, dead, false,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	memset(slot + 16, 0x5a, 8);
	memset(slot + SLOT_HEADER_BYTES, 0xee, 2048);
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("A"), 0, 4096, out, &len), SLOT_MISS_TORN);
	CU_ASSERT_EQUAL(slot_write_local(slot, &g, KEY("B"), page, 4096, 2), -EBUSY);
	mine = slot_claim_word(dead, 1, 2000);
	CU_ASSERT_EQUAL(slot_write_local_at(slot, &g, KEY("B"), page, 4096, 2, h.seq, mine, NULL), -EBUSY);
	CU_ASSERT_EQUAL(slot_write_local_at(slot, &g, KEY("B"), page, 4096, 2, dead, dead, NULL), -EINVAL);
	CU_ASSERT_EQUAL(slot_write_local_at(slot, &g, KEY("B"), page, 4096, 2, dead, mine, NULL), 0);
	slot_header_load(slot, &h);
	CU_ASSERT_EQUAL(h.seq, mine + 1);
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("A"), 0, 4096, out, &len), SLOT_MISS_OTHER_KEY);
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("B"), 0, 4096, out, &len), SLOT_HIT);
	CU_ASSERT_EQUAL(memcmp(out, page, 4096), 0);
	free(slot);
}

/* Claims from a known version: a stale seq is refused; eviction empties only the
 * page the caller copied (not another page written under a reused seq). */
static void test_local_claims(void)
{
	struct slot_geometry g;
	struct slot_header h, other;
	uint8_t *slot, page[4096], out[4096];
	uint32_t len, tag = 77, wtag = 5;

	slot_geometry_init(&g, 0, 4096, 1, 1, 0);
	slot = aligned_alloc(64, g.stride);
	CU_ASSERT_PTR_NOT_NULL_FATAL(slot);
	memset(slot, 0, g.stride);
	fill(page, sizeof(page), 5);
	CU_ASSERT_EQUAL(slot_write_local_at(slot, &g, KEY("A"), page, 1000, 1, 2, 3, &wtag), -EBUSY);
	CU_ASSERT_EQUAL(wtag, 5);	/* a refused claim leaves the tag */
	/* a slot that holds payload, given no page: refused before the claim */
	CU_ASSERT_EQUAL(slot_write_local_at(slot, &g, KEY("A"), NULL, 1000, 1, 0, 1, &wtag), -EINVAL);
	CU_ASSERT_EQUAL(wtag, 5);
	CU_ASSERT_EQUAL(slot_write_local_at(slot, &g, KEY("A"), page, 1000, 1, 0, 1, &wtag), 0);
	CU_ASSERT_EQUAL(wtag, slot_tag(KEY("A")));
	slot_header_load(slot, &h);
	CU_ASSERT_EQUAL(h.seq, 2);
	/* another page written over it without a claim, reusing seq 2 */
	slot_header_make(&other, 2, 0, KEY("B"), page, 500, 9);
	slot_header_encode(&other, slot);
	CU_ASSERT_EQUAL(slot_evict_local(slot, &h, &tag), -EBUSY);
	CU_ASSERT_EQUAL(tag, 77);
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("B"), 500, 4096, out, &len), SLOT_HIT);
	/* the page the caller saw: emptied, tag cleared, seq moved on */
	slot_header_load(slot, &h);
	CU_ASSERT_EQUAL(slot_evict_local(slot, &h, &tag), 0);
	CU_ASSERT_EQUAL(tag, 0);
	CU_ASSERT_EQUAL(slot_read_local(slot, KEY("B"), 0, 4096, out, &len), SLOT_MISS_ABSENT);
	CU_ASSERT_EQUAL(*(uint64_t *)slot, 4);
	CU_ASSERT_EQUAL(slot_evict_local(slot, &h, NULL), -EBUSY);	/* seq is 4 now */
	free(slot);
}

struct race {
	uint8_t *slot;
	struct slot_geometry g;
	uint8_t pages[2][2048];
	int stop;
	unsigned long writes;
};

static void *race_writer(void *p)
{
	struct race *r = p;

	struct timespec pause = { 0, 20000 };

	/* Pause between writes so readers also find quiet windows. */
	for (unsigned long i = 0; !__atomic_load_n(&r->stop, __ATOMIC_RELAXED); i++) {
		if (!slot_write_local(r->slot, &r->g, KEY("A"), r->pages[i & 1], 2048, i))
			__atomic_fetch_add(&r->writes, 1, __ATOMIC_RELAXED);
		if (i % 4 == 3)
			nanosleep(&pause, NULL);
	}
	return NULL;
}

/* A reader racing a writer of two versions gets one version whole, or a clean miss. */
static void test_local_race(void)
{
	struct race *r = calloc(1, sizeof(*r));
	unsigned long hits = 0, torn = 0, bad = 0, want = pc_test_under_valgrind() ? 200 : 20000;
	time_t deadline = time(NULL) + 20;
	uint8_t out[2048];
	pthread_t t;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	slot_geometry_init(&r->g, 0, 2048, 1, 1, 0);
	r->slot = aligned_alloc(64, r->g.stride);
	memset(r->slot, 0, r->g.stride);
	fill(r->pages[0], 2048, 1);
	fill(r->pages[1], 2048, 2);
	slot_write_local(r->slot, &r->g, KEY("A"), r->pages[0], 2048, 0);
	pthread_create(&t, NULL, race_writer, r);
	/* Until both sides made progress (a loaded machine may starve either). */
	while ((hits < want || __atomic_load_n(&r->writes, __ATOMIC_RELAXED) < want / 10) &&
	       time(NULL) < deadline) {
		uint32_t len;
		enum slot_verdict v = slot_read_local(r->slot, KEY("A"), 2048, 2048, out, &len);

		if (v == SLOT_HIT) {
			hits++;
			bad += memcmp(out, r->pages[0], 2048) && memcmp(out, r->pages[1], 2048);
		} else {
			torn++;
			bad += v != SLOT_MISS_TORN && v != SLOT_MISS_CHECKSUM;
		}
	}
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	printf("\n  seqlock race: %lu reads hit, %lu clean misses, %lu writes, %lu bad\n", hits,
	       torn, r->writes, bad);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(hits >= want);
	CU_ASSERT(r->writes >= want / 10);
	free(r->slot);
	free(r);
}

static CU_TestInfo tests[] = {
	{ "claim words; a dead writer's claim taken over", test_claim_takeover },
	{ "local claims from a version; eviction checks the page", test_local_claims },
	{ "geometry: the seed's 1 GiB example", test_geometry_seed },
	{ "geometry: explicit buckets, rounding, errors", test_geometry_other },
	{ "bucket and predicted way spread", test_bucket_spread },
	{ "header codec and byte layout", test_header_codec },
	{ "checksum vector", test_checksum_vector },
	{ "checksum of a page in pieces", test_checksum_pieces },
	{ "gate: hit", test_gate_hit },
	{ "gate: absent, other key, torn, length, checksum", test_gate_misses },
	{ "gate: header of A over payload of B", test_gate_header_a_payload_b },
	{ "gate: payload torn in the middle", test_gate_torn_middle },
	{ "pick_way order and reservations", test_pick_way },
	{ "stamps are monotonic in a bucket", test_stamps },
	{ "a stamp at UINT64_MAX does not wrap (fuzz)", test_stamp_at_max },
	{ "choose_local decides as pick_way and next_stamp", test_choose_local },
	{ "local seqlock write and read", test_local_roundtrip },
	{ "local seqlock under a racing writer", test_local_race },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "slot", NULL, NULL, NULL, NULL, tests })
