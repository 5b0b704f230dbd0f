/*
 * slot.h - slot geometry, the 64-byte slot header and the gate every read passes.
 *
 * A node's slots for one size class form one region of
 *     nr_buckets x ways x stride bytes,   stride = 64-byte header + page bytes,
 * followed by a bucket index of nr_buckets x index_stride bytes (one 32-bit tag per
 * way, a hint of which key sits where). A key's bucket and predicted way come from the
 * low half of its hash, independent of the ring, which uses the high half.
 *
 * slot_matches() is the single gate that guarantees a reader never returns another
 * key's page (key hash), a torn page (odd seq, or a checksum that fails), or a
 * wrong-length page (payload length). The checksum is xxh3_64 of the payload seeded by
 * the key hash and the length, so a header of key A over the payload of key B, or a
 * payload half overwritten by another writer, never validates. Every miss is clean.
 *
 * Not for: the network. This file knows memory images of slots; slotmap.c moves them.
 */
#ifndef PC_SLOT_H
#define PC_SLOT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/keyhash.h"
#include "config/topology.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* seq is both a little-endian header field and a word the CPU and the NIC update
 * atomically in host order; the two agree only on little-endian hosts. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "peercache slots need a little-endian host");

#define SLOT_HEADER_BYTES 64u
#define SLOT_MAGIC 0x31534350u		/* "PCS1" in memory */
#define SLOT_VERSION 2u		/* 2: checksums in 64 KiB pieces (slot_sum) */
#define SLOT_MAX_WAYS 64u
#define SLOT_TAG_BYTES 4u

/* Decoded header. On the wire and in memory it is little-endian at fixed offsets:
 * seq 0, magic 8, version 12, class 14, key.lo 16, key.hi 24, payload_len 32,
 * flags 36, checksum 40, stamp 48, reserved 56. seq comes first so that it is the
 * 8-byte aligned word a CAS claims. */
struct slot_header {
	uint64_t seq;			/* odd: a write is in progress */
	uint32_t magic;
	uint16_t version;
	uint16_t class_id;
	struct pc_keyhash key;		/* xxh3_128 of the key */
	uint32_t payload_len;
	uint32_t flags;
	uint64_t checksum;		/* slot_checksum(key, payload, payload_len) */
	uint64_t stamp;			/* write order inside the bucket: oldest is evicted */
	uint64_t reserved;
};

/* Why a slot did or did not give the caller its page. */
enum slot_verdict {
	SLOT_HIT = 0,
	SLOT_MISS_ABSENT,		/* empty slot, or not this format */
	SLOT_MISS_OTHER_KEY,
	SLOT_MISS_TORN,			/* odd seq, or it changed while we copied */
	SLOT_MISS_LENGTH,		/* not the expected length, or over the capacity */
	SLOT_MISS_CHECKSUM,
	SLOT_NR_VERDICTS
};

const char *slot_verdict_name(enum slot_verdict v);

/* The codec is inline: the gate runs once per key, and a decode the compiler can see
 * loads only the fields its caller reads. Slots are little-endian and so is every
 * host peercache builds for (slot.c asserts it), so a field is a plain copy. */
static inline void slot_put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline void slot_put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void slot_put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

static inline uint64_t slot_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t slot_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint16_t slot_get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

/* Everything but seq, which writers publish on its own. */
static inline void slot_header_encode_body(const struct slot_header *h, void *out)
{
	uint8_t *o = out;

	slot_put32(o + 8, h->magic);
	slot_put16(o + 12, h->version);
	slot_put16(o + 14, h->class_id);
	slot_put64(o + 16, h->key.lo);
	slot_put64(o + 24, h->key.hi);
	slot_put32(o + 32, h->payload_len);
	slot_put32(o + 36, h->flags);
	slot_put64(o + 40, h->checksum);
	slot_put64(o + 48, h->stamp);
	slot_put64(o + 56, h->reserved);
}

static inline void slot_header_encode(const struct slot_header *h, void *out)
{
	slot_put64(out, h->seq);
	slot_header_encode_body(h, out);
}

/* An encoded header's checksum field alone (a writer that sums the payload last). */
static inline void slot_header_put_checksum(void *out, uint64_t checksum)
{
	slot_put64((uint8_t *)out + 40, checksum);
}

/* magic, version and class_id lie in the struct as in the slot: one 8-byte copy.
 * Three narrow stores there made the compiler's one wide load of magic and version
 * (slot_header_empty) wait for them (a failed store forward, ~15 cycles a header). */
_Static_assert(offsetof(struct slot_header, version) == offsetof(struct slot_header, magic) + 4 &&
	       offsetof(struct slot_header, class_id) == offsetof(struct slot_header, magic) + 6,
	       "slot_header: magic, version, class_id must be adjacent as in the slot");

static inline void slot_header_decode_id(const uint8_t *p, struct slot_header *h)
{
	memcpy((char *)h + offsetof(struct slot_header, magic), p + 8, 8);
}

/* The fields a writer chooses a way by (slot_pick_way, slot_next_stamp): seq, magic,
 * version (and class_id), key and stamp; the others are left as they were. */
static inline void slot_header_choice_at(const uint8_t *p, uint64_t seq, struct slot_header *h)
{
	h->seq = seq;
	slot_header_decode_id(p, h);
	h->key.lo = slot_get64(p + 16);
	h->key.hi = slot_get64(p + 24);
	h->stamp = slot_get64(p + 48);
}

static inline void slot_header_decode_choice(const void *in, struct slot_header *h)
{
	slot_header_choice_at(in, slot_get64(in), h);
}

/* decode_choice of a live slot: seq first (acquire), so the fields are as new as seq
 * or newer, and a claim from h->seq fails if they are newer. */
static inline void slot_header_peek(const void *slot, struct slot_header *h)
{
	slot_header_choice_at(slot, __atomic_load_n((const uint64_t *)slot, __ATOMIC_ACQUIRE), h);
}

static inline void slot_header_decode(const void *in, struct slot_header *h)
{
	const uint8_t *p = in;

	slot_header_decode_choice(p, h);
	h->payload_len = slot_get32(p + 32);
	h->flags = slot_get32(p + 36);
	h->checksum = slot_get64(p + 40);
	h->reserved = slot_get64(p + 56);
}

/* A page's checksum: xxh3_64 of each SLOT_SUM_PIECE bytes of the payload in turn
 * (the last piece shorter), each seeded with the sum of the one before and the
 * first with a mix of the key hash and the length. A page of one piece has
 * xxh3_64's sum of the whole; a larger one can be summed as its bytes come in,
 * each piece while it is in cache, with struct slot_sum's 12 bytes of state. */
#define SLOT_SUM_PIECE (64u << 10)

struct slot_sum {
	uint64_t h;			/* the sum so far (the seed before any piece) */
	uint32_t done;			/* payload bytes summed */
};

void slot_sum_begin(struct slot_sum *s, struct pc_keyhash key, uint32_t len);
/* Sum the whole pieces of payload[s->done..upto): the bytes up to upto are in. */
void slot_sum_upto(struct slot_sum *s, const void *payload, uint32_t upto);
/* Sum the rest of the len bytes: the checksum. */
uint64_t slot_sum_end(struct slot_sum *s, const void *payload, uint32_t len);
/* The checksum of len bytes at once. */
uint64_t slot_checksum(struct pc_keyhash key, const void *payload, uint32_t len);

static inline bool slot_header_empty(const struct slot_header *h)
{
	return h->magic != SLOT_MAGIC || h->version != SLOT_VERSION;
}

/* The checksum of a page that is not stored (payload-free mode): a mix of key and
 * length in which a change to any one of the three changes the sum (each step is a
 * bijection of the field it takes in). There are no bytes to hash, and it never
 * leaves the process; a simulator lookup cannot afford a real hash here. */
static inline uint64_t slot_checksum_virtual(struct pc_keyhash key, uint32_t len)
{
	uint64_t x = (key.lo ^ ((uint64_t)len << 32 | len)) * 0x9E3779B97F4A7C15ULL;

	return x ^ (x >> 29) ^ key.hi ^ 0x5643484b53554d31ULL;
}

/* The header half of the gate (exists and header-first reads use it alone).
 * expected_len 0 accepts any length up to max_len. */
static inline enum slot_verdict slot_header_check(const struct slot_header *h,
						  struct pc_keyhash key, uint32_t expected_len,
						  uint32_t max_len)
{
	if (slot_header_empty(h))
		return SLOT_MISS_ABSENT;
	if (h->seq & 1)
		return SLOT_MISS_TORN;
	if (!keyhash_eq(h->key, key))
		return SLOT_MISS_OTHER_KEY;
	if ((expected_len && h->payload_len != expected_len) || h->payload_len > max_len)
		return SLOT_MISS_LENGTH;
	return SLOT_HIT;
}

/* The whole gate for a payload-free slot: the header, and its virtual checksum. */
static inline enum slot_verdict slot_matches_virtual(const struct slot_header *h,
						     struct pc_keyhash key,
						     uint32_t expected_len, uint32_t max_len)
{
	enum slot_verdict v = slot_header_check(h, key, expected_len, max_len);

	if (v == SLOT_HIT && h->checksum != slot_checksum_virtual(key, h->payload_len))
		return SLOT_MISS_CHECKSUM;
	return v;
}

/* The whole gate: header, then the checksum over payload[0, h->payload_len). */
enum slot_verdict slot_matches(const struct slot_header *h, const void *payload,
			       struct pc_keyhash key, uint32_t expected_len, uint32_t max_len);

/* The same gate for a reader that hashed the payload already, while it was in
 * cache: sum is slot_checksum(key, payload, h->payload_len) of exactly the bytes
 * the reader will return, taken after they stopped changing. */
static inline enum slot_verdict slot_matches_sum(const struct slot_header *h, uint64_t sum,
						 struct pc_keyhash key, uint32_t expected_len,
						 uint32_t max_len)
{
	enum slot_verdict v = slot_header_check(h, key, expected_len, max_len);

	if (v == SLOT_HIT && sum != h->checksum)
		return SLOT_MISS_CHECKSUM;
	return v;
}


/* ------------------------------------------------------------------ geometry */

/* The fields a key's lookup reads come first, in 64 bytes: a geometry that starts a
 * cache line (struct sm_class) costs a lookup one line. */
struct slot_geometry {
	uint32_t class_id;
	uint32_t ways;
	uint64_t page_bytes;		/* largest payload of the class */
	uint64_t stride;		/* header + page, rounded up to 64 */
	uint64_t nr_buckets;
	uint64_t index_stride;		/* one bucket's tags, rounded up to 64 */
	uint64_t mem_stride;		/* a slot in memory: stride, or the header alone */
	uint64_t mem_bytes;		/* nr_buckets x ways x mem_stride: the index follows */
	uint64_t bytes;			/* the slots: nr_buckets x ways x stride */
	uint64_t index_bytes;		/* nr_buckets x index_stride, after the slots */
};

_Static_assert(offsetof(struct slot_geometry, mem_bytes) + sizeof(uint64_t) <= 64,
	       "slot_geometry: a lookup's fields must fit one cache line");

/* Fill g for one class. nr_buckets 0 derives it from segment_bytes (the seed's
 * slot_num_buckets = 0). -EINVAL when the geometry is empty or ways is out of range. */
int slot_geometry_init(struct slot_geometry *g, uint32_t class_id, uint64_t page_bytes,
		       uint32_t ways, uint64_t nr_buckets, uint64_t segment_bytes);

/* Keep headers only, not payloads: the simulator's payload-free mode, where memory
 * grows with the number of slots, not with cached bytes. A payload-free slot's
 * checksum derives from its key and length (slot_checksum_virtual). */
/* The slots of size class c of a node configured by cfg: store.slot_ways ways,
 * store.slot_num_buckets buckets or, when 0, as many as the class's share of the
 * node's global_segment_size holds (the segment is split evenly over the classes,
 * here and nowhere else). 0 or -EINVAL as slot_geometry_init. */
int slot_class_geometry(struct slot_geometry *g, const struct pc_store_cfg *cfg, uint32_t c);

/* One-slot blocks of class c that the class's share of the segment holds: p2p's
 * published pool, the same memory per node as slotmap's slots. 0 when none fit. */
uint64_t slot_class_blocks(const struct pc_store_cfg *cfg, uint32_t c);

void slot_geometry_drop_payload(struct slot_geometry *g);

static inline bool slot_has_payload(const struct slot_geometry *g)
{
	return g->mem_stride == g->stride;
}

/* Bytes of the whole region in memory (slots and index). */
static inline uint64_t slot_region_bytes(const struct slot_geometry *g)
{
	return g->mem_bytes + g->index_bytes;
}

/* One bucket's tags, rounded up to 64 bytes. */
static inline uint64_t slot_index_stride(uint32_t ways)
{
	return ((uint64_t)ways * SLOT_TAG_BYTES + 63) & ~63ULL;
}

static inline uint64_t slot_bucket_among(uint64_t nr_buckets, struct pc_keyhash h)
{
	return fastrange64(h.lo, nr_buckets);
}

static inline uint64_t slot_bucket_of(const struct slot_geometry *g, struct pc_keyhash h)
{
	return slot_bucket_among(g->nr_buckets, h);
}

/* The way a writer puts a key when it can; readers look there first. fastrange uses
 * the high bits of h.lo for the bucket, the way uses its low bits. */
static inline uint32_t slot_predicted_way(const struct slot_geometry *g, struct pc_keyhash h)
{
	return (uint32_t)((h.lo & 0xffffffffu) % g->ways);
}

static inline uint64_t slot_offset(const struct slot_geometry *g, uint64_t bucket, uint32_t way)
{
	return (bucket * g->ways + way) * g->mem_stride;
}

static inline uint64_t slot_index_offset(const struct slot_geometry *g, uint64_t bucket)
{
	return g->mem_bytes + bucket * g->index_stride;
}

/* The index tag of a key: 32 bits of the hash not used for bucket or way, never 0
 * (0 marks an empty way). A tag is a hint; only the header decides. */
static inline uint32_t slot_tag(struct pc_keyhash h)
{
	return (uint32_t)h.hi | 1u;
}

/* The ways of an index block whose tag is `tag`, as a bit mask (bit w: way w). The
 * tags are hints a writer may be changing under us, so a torn answer costs at most a
 * header read; the SSE2 path compares four tags a step, reading whole 16-byte groups
 * (an index block is rounded up to 64 bytes, so they stay inside it). */
static inline uint64_t slot_tag_match(const uint8_t *index, uint32_t ways, uint32_t tag)
{
	uint64_t match = 0;

#if defined(__SSE2__)
	const __m128i want = _mm_set1_epi32((int)tag);

	for (uint32_t w = 0; w < ways; w += 4) {
		__m128i t = _mm_loadu_si128((const __m128i *)(const void *)(index + w * 4));

		match |= (uint64_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(t, want)))
			 << w;
	}
	return ways < 64 ? match & ((1ULL << ways) - 1) : match;
#else
	const uint32_t *tags = (const uint32_t *)(const void *)index;

	for (uint32_t w = 0; w < ways; w++)
		match |= (uint64_t)(__atomic_load_n(&tags[w], __ATOMIC_RELAXED) == tag) << w;
	return match;
#endif
}

/* ------------------------------------------------------------------ writing */

/* Choose the way to write key into, given the bucket's decoded headers. Order: the
 * same key (overwrite in place, so a bucket never holds two versions of a key), then
 * the predicted way if empty, then any empty way, then the oldest stamp (evict).
 * Ways in reserved_mask were taken earlier in the same batch and are never chosen.
 * Returns the way (setting *evicts when it displaces another key) or -ENOSPC. */
static inline int slot_pick_way(const struct slot_header *hdrs, uint32_t ways,
				struct pc_keyhash key, uint32_t predicted,
				uint64_t reserved_mask, bool *evicts)
{
	int empty = -1, oldest = -1;

	/* One pass notes all three candidates; the order above decides among them. */
	*evicts = false;
	for (uint32_t w = 0; w < ways; w++) {
		if (reserved_mask >> w & 1)
			continue;
		if (slot_header_empty(&hdrs[w])) {
			if (empty < 0 || w == predicted)
				empty = (int)w;
			continue;
		}
		if (keyhash_eq(hdrs[w].key, key))
			return (int)w;
		if (oldest < 0 || hdrs[w].stamp < hdrs[oldest].stamp)
			oldest = (int)w;
	}
	if (empty >= 0)
		return empty;
	if (oldest < 0)
		return -ENOSPC;
	*evicts = true;
	return oldest;
}

/* A stamp newer than every one in the bucket and not older than now. Stamps come
 * from peers' headers: one at UINT64_MAX gives UINT64_MAX (as new, never 0). */
static inline uint64_t slot_next_stamp(const struct slot_header *hdrs, uint32_t ways,
				       uint64_t now)
{
	uint64_t s = now;

	for (uint32_t w = 0; w < ways; w++)
		if (!slot_header_empty(&hdrs[w]) && hdrs[w].stamp >= s)
			s = hdrs[w].stamp == UINT64_MAX ? UINT64_MAX : hdrs[w].stamp + 1;
	return s;
}

/* What slot_choose_local found in a bucket. */
struct slot_choice {
	int way;			/* -ENOSPC: none */
	bool evicts;			/* it displaces another key */
	uint64_t seq;			/* the way's seq as read: the claim's expected value */
	uint64_t stamp;			/* slot_next_stamp of the bucket */
};

/*
 * For a bucket in local memory (way x at way0 + x * stride): slot_pick_way and
 * slot_next_stamp in one pass over the headers in place, each header read as
 * slot_header_peek reads it, and before them the batch's own copy of the key: a
 * way in reserved_mask (taken earlier in the batch) that holds key is taken again
 * (the last such), never evicting. One pass instead of a copy of every header and
 * two passes over the copies, for the simulator's fill, which runs it for every
 * page it writes.
 */
static inline struct slot_choice slot_choose_local(const uint8_t *way0, uint64_t stride,
						   uint32_t ways, struct pc_keyhash key,
						   uint32_t predicted, uint64_t reserved_mask,
						   uint64_t now)
{
	uint64_t seqs[SLOT_MAX_WAYS], oldest_stamp = 0, s = now;
	int again = -1, same = -1, empty = -1, oldest = -1;
	struct slot_choice c = { .way = -ENOSPC };

	for (uint32_t w = 0; w < ways; w++) {
		const uint8_t *p = way0 + w * stride;
		struct pc_keyhash k;
		uint64_t stamp;
		bool is_empty, is_key;

		seqs[w] = __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_ACQUIRE);
		is_empty = (slot_get64(p + 8) & 0xffffffffffffULL) !=
			   (SLOT_MAGIC | (uint64_t)SLOT_VERSION << 32);
		k.lo = slot_get64(p + 16);
		k.hi = slot_get64(p + 24);
		stamp = slot_get64(p + 48);
		is_key = keyhash_eq(k, key);
		if (!is_empty && stamp >= s)
			s = stamp == UINT64_MAX ? UINT64_MAX : stamp + 1;
		if (reserved_mask >> w & 1) {
			again = is_key ? (int)w : again;
			continue;
		}
		if (is_empty) {
			if (empty < 0 || w == predicted)
				empty = (int)w;
		} else if (is_key) {
			same = same < 0 ? (int)w : same;
		} else if (oldest < 0 || stamp < oldest_stamp) {
			oldest = (int)w;
			oldest_stamp = stamp;
		}
	}
	c.stamp = s;
	c.way = again >= 0 ? again : same >= 0 ? same : empty >= 0 ? empty : oldest;
	c.evicts = again < 0 && same < 0 && empty < 0 && oldest >= 0;
	if (c.way >= 0)
		c.seq = seqs[c.way];
	else
		c.way = -ENOSPC;
	return c;
}

/* The header a writer puts in front of a page whose checksum it has: sum. */
static inline void slot_header_make_sum(struct slot_header *h, uint64_t seq, uint32_t class_id,
					struct pc_keyhash key, uint32_t len, uint64_t sum,
					uint64_t stamp)
{
	*h = (struct slot_header){ .seq = seq, .magic = SLOT_MAGIC, .version = SLOT_VERSION,
				   .class_id = (uint16_t)class_id, .key = key, .payload_len = len,
				   .checksum = sum, .stamp = stamp };
}

/* The header a writer puts in front of a page (page NULL with len > 0: a payload-free
 * slot, checksummed virtually). */
static inline void slot_header_make(struct slot_header *h, uint64_t seq, uint32_t class_id,
				    struct pc_keyhash key, const void *page, uint32_t len,
				    uint64_t stamp)
{
	slot_header_make_sum(h, seq, class_id, key, len,
			     page || !len ? slot_checksum(key, page, len) :
					    slot_checksum_virtual(key, len),
			     stamp);
}

/* Write a page into a slot in local memory under the seqlock: claim seq (even to odd)
 * with a CAS, write header and payload, release seq (odd to even+2). -EBUSY when
 * another writer holds the slot, -EMSGSIZE when len exceeds the class. A payload-
 * free geometry stores the header alone (page may be NULL). */
int slot_write_local(void *slot, const struct slot_geometry *g, struct pc_keyhash key,
		     const void *page, uint32_t len, uint64_t stamp);

/* Read a slot in local memory under the seqlock into dst (capacity max_len) and
 * pass it through the gate. *len gets the payload length on a hit. dst NULL: a
 * payload-free slot, checked against its virtual checksum. Reader side of the
 * seqlock: copy, then confirm seq did not move. The gate reads the header's fields
 * in place, not through a decoded copy; inline, since it runs once per lookup of
 * every key an owner (or a mapped peer) holds. */
static inline enum slot_verdict slot_read_local(const void *slot, struct pc_keyhash key,
				  uint32_t expected_len, uint32_t max_len, void *dst,
				  uint32_t *len)
{
	const uint8_t *p = slot;
	const uint64_t *seq = (const uint64_t *)slot;
	struct pc_keyhash k;
	enum slot_verdict v;
	uint32_t plen;
	uint64_t s1, sum;

	s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
	if (s1 & 1)
		return SLOT_MISS_TORN;
	k.lo = slot_get64(p + 16);
	k.hi = slot_get64(p + 24);
	plen = slot_get32(p + 32);
	sum = slot_get64(p + 40);
	if ((slot_get64(p + 8) & 0xffffffffffffULL) != (SLOT_MAGIC | (uint64_t)SLOT_VERSION << 32))
		v = SLOT_MISS_ABSENT;
	else if (!keyhash_eq(k, key))
		v = SLOT_MISS_OTHER_KEY;
	else if ((expected_len && plen != expected_len) || plen > max_len)
		v = SLOT_MISS_LENGTH;
	else if (!dst && sum != slot_checksum_virtual(key, plen))
		v = SLOT_MISS_CHECKSUM;
	else
		v = SLOT_HIT;
	if (v == SLOT_HIT && dst)
		memcpy(dst, p + SLOT_HEADER_BYTES, plen);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(seq, __ATOMIC_RELAXED) != s1)
		return SLOT_MISS_TORN;
	if (v != SLOT_HIT)
		return v;
	if (dst && slot_checksum(key, dst, plen) != sum)
		return SLOT_MISS_CHECKSUM;
	*len = plen;
	return SLOT_HIT;
}

/* ------------------------------------------------------------------ claims */

/*
 * A claim is the odd seq a writer swaps in (CAS) while it writes a slot, and the
 * write commits by storing claim + 1. The word says who claimed and until when:
 *     bits 63..48  a counter, one past the claimed version's (so a claim, and the
 *                  version it commits, differ from every recent version of the slot)
 *     bits 47..32  the claimer (node index; 0xffff: a client)
 *     bits 31..1   the claimer's deadline, milliseconds of its clock (wrapping)
 *     bit 0        1
 * A writer that dies between claim and commit leaves the word in place; readers keep
 * seeing an odd seq (a clean miss) and the next writer that has watched the same word
 * for the claim timeout takes it over with a CAS from it (slotmap_claims.c). Expiry
 * is judged on the observer's clock, so nodes' clocks need not agree.
 */
#define SLOT_CLAIM_ANON 0xffffu

static inline uint64_t slot_claim_word(uint64_t seq, uint32_t claimer, uint64_t deadline_ms)
{
	return ((seq >> 48) + 1) << 48 | (uint64_t)(claimer & 0xffffu) << 32 |
	       (deadline_ms & 0x7fffffffu) << 1 | 1u;
}

static inline uint32_t slot_claim_claimer(uint64_t word)
{
	return (uint32_t)(word >> 32) & 0xffffu;
}

static inline uint32_t slot_claim_deadline(uint64_t word)
{
	return (uint32_t)(word >> 1) & 0x7fffffffu;
}

/* slot_write_local, claiming the slot only from the version seq (for a caller that
 * chose the slot from headers it read earlier) by swapping in the odd word claim
 * (slot_claim_word), committing claim + 1. seq odd takes over the claim seq (the
 * caller decided it expired). -EBUSY when the slot changed since, -EINVAL when claim
 * is even or a slot that holds payload is given no page. tag (may be NULL): the
 * way's index tag, set to the key's while claimed.
 *
 * The writer side of the seqlock. The CAS makes local writers exclusive among
 * themselves and against remote CAS claims (a claim taken over after its writer
 * died is the one exception: should that writer come back, its page and ours may
 * interleave); a remote WRITE that ignores the claim can still interleave with us,
 * which the checksum turns into a clean miss for readers. Inline: the simulator's
 * fill calls it for every page it writes. slot_write_local_summed is the same with
 * the page's checksum given (sum not NULL: slot_checksum of exactly these bytes, from
 * a caller that needs it too), so that nobody hashes the page twice.
 */
static inline int slot_write_local_summed(void *slot, const struct slot_geometry *g,
					  struct pc_keyhash key, const void *page, uint32_t len,
					  const uint64_t *sum, uint64_t stamp, uint64_t s,
					  uint64_t claim, uint32_t *tag)
{
	uint64_t *seq = (uint64_t *)slot;
	struct slot_header h;

	if (len > g->page_bytes)
		return -EMSGSIZE;
	if (!(claim & 1) || claim == s || (!page && len && slot_has_payload(g)))
		return -EINVAL;	/* (a slot that holds payload needs the page) */
	if (!__atomic_compare_exchange_n(seq, &s, claim, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return -EBUSY;
	if (sum)
		slot_header_make_sum(&h, claim + 1, g->class_id, key, len, *sum, stamp);
	else
		slot_header_make(&h, claim + 1, g->class_id, key,
				 slot_has_payload(g) ? page : NULL, len, stamp);
	slot_header_encode_body(&h, slot);
	if (page && slot_has_payload(g))
		memcpy((uint8_t *)slot + SLOT_HEADER_BYTES, page, len);
	/* Tagged while claimed: writers of one slot publish their tags in claim order,
	 * so the last page written is the one its way's tag names. */
	if (tag)
		__atomic_store_n(tag, slot_tag(key), __ATOMIC_RELEASE);
	__atomic_store_n(seq, claim + 1, __ATOMIC_RELEASE);
	return 0;
}

static inline int slot_write_local_at(void *slot, const struct slot_geometry *g,
				      struct pc_keyhash key, const void *page, uint32_t len,
				      uint64_t stamp, uint64_t s, uint64_t claim, uint32_t *tag)
{
	return slot_write_local_summed(slot, g, key, page, len, NULL, stamp, s, claim, tag);
}

/* Empty a local slot if it still holds exactly the page expect describes (its copy
 * went to disk): claim it from expect->seq, check key, length, checksum and stamp,
 * clear the index tag while claimed (tag may be NULL), write an empty header,
 * release. -EBUSY when the slot changed. */
int slot_evict_local(void *slot, const struct slot_header *expect, uint32_t *tag);

/* Read a local slot's header under the seqlock (torn reads report seq odd). */
void slot_header_load(const void *slot, struct slot_header *h);

#endif
