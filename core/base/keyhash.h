/*
 * keyhash.h - the one hash of a key everything else is derived from.
 *
 * A key is hashed once with xxh3_128. The high half places it on the ring
 * (owner_of); the low half picks its bucket and predicted way inside the owner's
 * slot region; the full 128 bits go into the slot header and seed the payload
 * checksum. The halves are independent bits of one hash, so owner and bucket are
 * independent, as the seed requires, at the cost of hashing once.
 */
#ifndef PC_KEYHASH_H
#define PC_KEYHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Keys, vnode names and virtual checksums are a few bytes: xxh3 inline, where a call
 * into libxxhash (and its dispatcher) cost more than the hash. Pages take
 * payload_hash.h's xxh3_payload. */
#define XXH_INLINE_ALL
/* gcc 12 sees the long-input branches of an inlined xxh3 run past a short key buffer
 * that a length check keeps them from: a false -Warray-bounds, located in xxhash.h. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#include <xxhash.h>
#pragma GCC diagnostic pop

struct pc_keyhash {
	uint64_t lo, hi;
};

static inline struct pc_keyhash keyhash_of(const void *key, size_t len)
{
	/* 64-bit keys (KVBM's sequence hashes, the simulator's page ids) take xxh3's
	 * constant-length path: the same hash, without the length dispatch. */
	XXH128_hash_t h = len == 8 ? XXH3_128bits(key, 8) : XXH3_128bits(key, len);

	return (struct pc_keyhash){ .lo = h.low64, .hi = h.high64 };
}

static inline bool keyhash_eq(struct pc_keyhash a, struct pc_keyhash b)
{
	return a.lo == b.lo && a.hi == b.hi;
}

/* The ring position of a key. */
static inline uint64_t keyhash_point(struct pc_keyhash h)
{
	return h.hi;
}

/* Map 64 random bits onto [0, n) without a division (Lemire's multiply-shift). */
static inline uint64_t fastrange64(uint64_t x, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

#endif
