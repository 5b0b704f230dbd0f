/*
 * fuzz_slot_gate.c - libFuzzer target: the slot header codec and the read gate
 * (core/placement/slot.h), the one check between a slot's bytes and a caller.
 *
 * Input: a 64-byte header image, then payload bytes; the key is the first 16
 * bytes of the image (so the fuzzer can make a header name "its" key), the
 * expected length a word of it. The gate must never return a hit whose payload
 * fails the key's checksum or whose length is out of bounds, and the in-place
 * gate (slot_read_local) must agree with the decoded one (slot_matches). Also
 * drives pick_way and next_stamp over a bucket of decoded headers.
 */
#include <stdlib.h>
#include <string.h>

#include "placement/slot.h"

#define MAX_PAYLOAD 8192u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t slot[SLOT_HEADER_BYTES + MAX_PAYLOAD] __attribute__((aligned(64)));
	static uint8_t out[MAX_PAYLOAD];
	struct slot_header h, bucket[8];
	struct pc_keyhash key;
	uint32_t plen = 0, expect, max_len;
	size_t payload;
	enum slot_verdict v1, v2, v3;
	bool evicts;
	int w;

	if (size < SLOT_HEADER_BYTES + 4)
		return 0;
	payload = size - SLOT_HEADER_BYTES - 4;
	if (payload > MAX_PAYLOAD)
		payload = MAX_PAYLOAD;
	memcpy(&key.lo, data + SLOT_HEADER_BYTES, 4);
	key.lo ^= slot_get64(data + 16);	/* often the header's own key */
	key.hi = slot_get64(data + 24);
	if (data[SLOT_HEADER_BYTES + 1] & 1)
		key.lo = slot_get64(data + 16);
	expect = data[SLOT_HEADER_BYTES + 2] & 1 ? slot_get32(data + 32) : 0;
	max_len = (uint32_t)payload;
	memset(slot, 0, sizeof(slot));
	memcpy(slot, data, SLOT_HEADER_BYTES);
	memcpy(slot + SLOT_HEADER_BYTES, data + SLOT_HEADER_BYTES + 4, payload);
	slot_header_decode(slot, &h);

	v1 = slot_header_check(&h, key, expect, max_len);
	v2 = v1 == SLOT_HIT ? slot_matches(&h, slot + SLOT_HEADER_BYTES, key, expect, max_len) : v1;
	v3 = slot_read_local(slot, key, expect, max_len, out, &plen);
	/* the same answer; the miss reasons may differ in order (an odd seq over a
	 * header that is not one: torn in place, absent decoded) */
	if ((v2 == SLOT_HIT) != (v3 == SLOT_HIT) || (v2 != v3 && !(h.seq & 1)))
		abort();
	if (v3 == SLOT_HIT) {
		if (plen > max_len || (expect && plen != expect) || h.seq & 1 ||
		    slot_checksum(key, out, plen) != h.checksum || memcmp(out, slot + SLOT_HEADER_BYTES, plen))
			abort();
	}
	if (slot_matches_virtual(&h, key, expect, max_len) == SLOT_HIT &&
	    h.checksum != slot_checksum_virtual(key, h.payload_len))
		abort();
	/* a bucket made of the input's 8-byte shifts of the header */
	for (int x = 0; x < 8; x++)
		slot_header_decode(slot + (x * 7) % 8, &bucket[x]);
	w = slot_pick_way(bucket, 8, key, (uint32_t)(key.lo % 8), data[SLOT_HEADER_BYTES + 3], &evicts);
	if (w >= 8 || (w >= 0 && data[SLOT_HEADER_BYTES + 3] >> w & 1) ||
	    (w < 0 && data[SLOT_HEADER_BYTES + 3] != 0xff))
		abort();
	if (slot_next_stamp(bucket, 8, h.stamp) < h.stamp)
		abort();
	(void)slot_claim_claimer(h.seq);
	(void)slot_claim_deadline(h.seq);
	return 0;
}
