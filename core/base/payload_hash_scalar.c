/*
 * payload_hash_scalar.c - xxh3_64 in its scalar code (payload_hash.h): a unit of its
 * own, since xxhash.h takes its vector choice once per unit.
 */
#define XXH_VECTOR 0	/* XXH_SCALAR */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/payload_hash.h"

uint64_t xxh3_scalar(const void *p, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(p, len, seed);
}
