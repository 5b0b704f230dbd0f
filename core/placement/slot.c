/*
 * slot.c - the read gate, pick_way and the local seqlock (the header codec is inline
 * in slot.h).
 */
#include <errno.h>
#include <string.h>

#include "base/payload_hash.h"
#include "slot.h"

static const char *const verdict_names[SLOT_NR_VERDICTS] = {
	[SLOT_HIT] = "hit",
	[SLOT_MISS_ABSENT] = "absent",
	[SLOT_MISS_OTHER_KEY] = "other_key",
	[SLOT_MISS_TORN] = "torn",
	[SLOT_MISS_LENGTH] = "length",
	[SLOT_MISS_CHECKSUM] = "checksum",
};

const char *slot_verdict_name(enum slot_verdict v)
{
	return v < SLOT_NR_VERDICTS ? verdict_names[v] : "?";
}

void slot_sum_begin(struct slot_sum *s, struct pc_keyhash key, uint32_t len)
{
	s->h = key.lo ^ (key.hi << 17 | key.hi >> 47) ^ ((uint64_t)len * 0x9E3779B97F4A7C15ULL);
	s->done = 0;
}

void slot_sum_upto(struct slot_sum *s, const void *payload, uint32_t upto)
{
	while (upto > s->done && upto - s->done >= SLOT_SUM_PIECE) {
		s->h = xxh3_payload((const uint8_t *)payload + s->done, SLOT_SUM_PIECE, s->h);
		s->done += SLOT_SUM_PIECE;
	}
}

uint64_t slot_sum_end(struct slot_sum *s, const void *payload, uint32_t len)
{
	if (!len)
		return xxh3_payload(payload, 0, s->h);
	slot_sum_upto(s, payload, len);
	if (s->done < len) {
		s->h = xxh3_payload((const uint8_t *)payload + s->done, len - s->done, s->h);
		s->done = len;
	}
	return s->h;
}

uint64_t slot_checksum(struct pc_keyhash key, const void *payload, uint32_t len)
{
	struct slot_sum s;

	slot_sum_begin(&s, key, len);
	return slot_sum_end(&s, payload, len);
}

enum slot_verdict slot_matches(const struct slot_header *h, const void *payload,
			       struct pc_keyhash key, uint32_t expected_len, uint32_t max_len)
{
	enum slot_verdict v = slot_header_check(h, key, expected_len, max_len);

	if (v != SLOT_HIT)
		return v;
	return slot_matches_sum(h, slot_checksum(key, payload, h->payload_len), key, expected_len,
				max_len);
}

int slot_geometry_init(struct slot_geometry *g, uint32_t class_id, uint64_t page_bytes,
		       uint32_t ways, uint64_t nr_buckets, uint64_t segment_bytes)
{
	memset(g, 0, sizeof(*g));
	if (!ways || ways > SLOT_MAX_WAYS || !page_bytes || page_bytes > UINT32_MAX)
		return -EINVAL;
	g->class_id = class_id;
	g->ways = ways;
	g->page_bytes = page_bytes;
	g->stride = (SLOT_HEADER_BYTES + page_bytes + 63) & ~63ULL;
	g->index_stride = slot_index_stride(ways);
	/* Derived bucket counts size the slots alone, as the seed's log line reports
	 * them; the index is a small addition (64 B per bucket up to 16 ways). */
	g->nr_buckets = nr_buckets ? nr_buckets : segment_bytes / ((uint64_t)ways * g->stride);
	if (!g->nr_buckets)
		return -EINVAL;
	g->bytes = g->nr_buckets * ways * g->stride;
	g->index_bytes = g->nr_buckets * g->index_stride;
	g->mem_stride = g->stride;
	g->mem_bytes = g->bytes;
	return 0;
}

static uint64_t class_segment(const struct pc_store_cfg *cfg)
{
	return cfg->nr_classes ? cfg->global_segment_size / cfg->nr_classes : 0;
}

int slot_class_geometry(struct slot_geometry *g, const struct pc_store_cfg *cfg, uint32_t c)
{
	if (c >= cfg->nr_classes) {
		memset(g, 0, sizeof(*g));
		return -EINVAL;
	}
	return slot_geometry_init(g, c, cfg->size_classes[c], cfg->slot_ways, cfg->slot_num_buckets,
				  class_segment(cfg));
}

uint64_t slot_class_blocks(const struct pc_store_cfg *cfg, uint32_t c)
{
	struct slot_geometry g;

	if (c >= cfg->nr_classes || slot_geometry_init(&g, c, cfg->size_classes[c], 1, 1, 0))
		return 0;
	return class_segment(cfg) / g.stride;
}

void slot_geometry_drop_payload(struct slot_geometry *g)
{
	g->mem_stride = SLOT_HEADER_BYTES;
	g->mem_bytes = g->nr_buckets * g->ways * SLOT_HEADER_BYTES;
}

static inline uint64_t *slot_seq(const void *slot)
{
	return (uint64_t *)slot;
}

int slot_write_local(void *slot, const struct slot_geometry *g, struct pc_keyhash key,
		     const void *page, uint32_t len, uint64_t stamp)
{
	uint64_t s = __atomic_load_n(slot_seq(slot), __ATOMIC_ACQUIRE);

	if (s & 1)
		return -EBUSY;
	return slot_write_local_at(slot, g, key, page, len, stamp, s, s + 1, NULL);
}

int slot_evict_local(void *slot, const struct slot_header *expect, uint32_t *tag)
{
	static const struct slot_header empty;
	uint64_t *sp = slot_seq(slot), s = expect->seq;
	struct slot_header now;

	if (s & 1 || !__atomic_compare_exchange_n(sp, &s, s + 1, false, __ATOMIC_ACQ_REL,
						  __ATOMIC_ACQUIRE))
		return -EBUSY;
	/* A writer that did not claim the slot may have reused this seq for another
	 * page: empty it only if it is still the page the caller copied. */
	slot_header_decode(slot, &now);
	if (!keyhash_eq(now.key, expect->key) || now.checksum != expect->checksum ||
	    now.stamp != expect->stamp || now.payload_len != expect->payload_len) {
		__atomic_store_n(sp, expect->seq, __ATOMIC_RELEASE);
		return -EBUSY;
	}
	if (tag)
		__atomic_store_n(tag, 0, __ATOMIC_RELEASE);
	slot_header_encode_body(&empty, slot);
	__atomic_store_n(sp, expect->seq + 2, __ATOMIC_RELEASE);
	return 0;
}

void slot_header_load(const void *slot, struct slot_header *h)
{
	uint64_t s1 = __atomic_load_n(slot_seq(slot), __ATOMIC_ACQUIRE);

	slot_header_decode(slot, h);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(slot_seq(slot), __ATOMIC_RELAXED) != s1)
		h->seq |= 1;	/* changed under us: report it torn */
	else
		h->seq = s1;
}

