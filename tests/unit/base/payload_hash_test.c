/*
 * payload_hash_test.c - every implementation of the payload checksum computes xxh3's
 * own value (the pick may change the speed, never a sum), and the pick is one of them.
 */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/payload_hash.h"
#include "testutil.h"

#define BIG (256u << 10)

static void test_same_hash(void)
{
	const struct xxh3_impl *v;
	size_t n = xxh3_payload_impls(&v);
	uint8_t *buf = malloc(BIG + 64);
	static const size_t lens[] = { 1000, 4095, 4096, 12288, 12301, 65536, BIG + 7 };
	static const uint64_t seeds[] = { 0, 1, 0x9E3779B97F4A7C15ULL };
	int bad = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT(n >= 2);			/* at least the inline and the scalar code */
	for (size_t i = 0; i < BIG + 64; i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 9));
	for (size_t s = 0; s < 3; s++) {
		for (size_t len = 0; len < 600 + 13 * 7; len += len < 600 ? 1 : 13)
			for (size_t k = 0; k < n; k++)
				bad += v[k].fn(buf + 1, len, seeds[s]) != XXH3_64bits_withSeed(buf + 1, len, seeds[s]);
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			uint64_t want = XXH3_64bits_withSeed(buf + 3, lens[l], seeds[s]);

			for (size_t k = 0; k < n; k++)
				bad += v[k].fn(buf + 3, lens[l], seeds[s]) != want;
			bad += xxh3_payload(buf + 3, lens[l], seeds[s]) != want;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
	free(buf);
}

static void test_pick_is_one_of_them(void)
{
	const struct xxh3_impl *v;
	size_t n = xxh3_payload_impls(&v), found = 0;
	double gbps = 0;
	const char *name = xxh3_payload_impl(&gbps);

	for (size_t k = 0; k < n; k++)
		found += !strcmp(v[k].name, name);
	CU_ASSERT_EQUAL(found, 1);
	CU_ASSERT(gbps > 0);
}

static CU_TestInfo tests[] = {
	{ "every implementation computes xxh3's value", test_same_hash },
	{ "the pick is one of them, timed", test_pick_is_one_of_them },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "payload hash", NULL, NULL, NULL, NULL, tests })
