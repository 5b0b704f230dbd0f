/*
 * slotmap_exists.c - batch_exists in slotmap mode: the headers of each key's bucket
 * (ways x 64 B per class it may be in), read in one phase or in place, and no
 * payload at all.
 *
 * A key with a way hint (slotmap_hints.h) reads that way's header and the bucket's
 * index block instead: the header decides when it names the key; otherwise the index
 * says the key is absent (no other way carries its tag) or which ways to look at in
 * a second phase. A key found in a remote slot is hinted, so that its get (a serving
 * engine asks exists, then gets) takes one round trip.
 *
 * Not for: get (slotmap_read.c), which reads pages.
 */
#include <string.h>

#include "slotmap_direct.h"
#include "slotmap_hints.h"
#include "slotmap_keys.h"

struct ekey {
	struct sm_kc kc;
	bool found;			/* a header names the key */
	int only;			/* the one class to look in, -1 for every class */
	int hint;			/* its hinted way in class only, or -1 */
	uint64_t ways;			/* phase 2: the ways of class only to read */
	uint8_t *land;			/* where its READs land */
};

/* The one class to look in for a key's exists (its length names it), -1 for every
 * class; false when no class holds such a page (the key is then decided). */
static bool exists_classes(struct ekey *k, int *only)
{
	*only = k->kc.pg->len ? sm_class_for(k->kc.lay, k->kc.pg->len) : -1;
	if (k->kc.pg->len && *only < 0) {
		k->kc.state = SM_DONE;	/* no class holds such a page */
		return false;
	}
	if (*only < 0 && k->kc.lay->nr_classes == 1)
		*only = 0;
	return true;
}

/* exists on memory this node addresses directly: the headers under the seqlock.
 * false, having decided nothing, when a class's memory cannot be addressed. */
static bool exists_direct(struct slotmap *sm, uint64_t epoch, struct ekey *k, int only,
			  uint64_t *bytes)
{
	const struct sm_layout *lay = k->kc.lay;
	uint8_t *mem[PC_MAX_CLASSES];

	/* every class's memory first: a key given up on has counted and found nothing */
	for (uint32_t c = 0; c < lay->nr_classes; c++)
		if ((only < 0 || (int)c == only) && !(mem[c] = sm_direct(sm, epoch, lay, (int)c)))
			return false;
	for (uint32_t c = 0; c < lay->nr_classes; c++) {
		const struct sm_class *cl = &lay->cls[c];
		uint64_t b = slot_bucket_of(&cl->g, k->kc.h);

		if (only >= 0 && (int)c != only)
			continue;
		for (uint32_t w = 0; w < cl->g.ways; w++) {
			struct slot_header h;

			slot_header_load(mem[c] + slot_offset(&cl->g, b, w), &h);
			*bytes += SLOT_HEADER_BYTES;
			if (slot_header_check(&h, k->kc.h, (uint32_t)k->kc.pg->len, UINT32_MAX) ==
			    SLOT_HIT)
				k->found = true;
		}
	}
	k->kc.state = SM_DONE;
	return true;
}

/* Whether the header at hdr names the key. */
static bool names_key(const struct ekey *k, const uint8_t *hdr)
{
	struct slot_header h;

	slot_header_decode(hdr, &h);
	return slot_header_check(&h, k->kc.h, (uint32_t)k->kc.pg->len, UINT32_MAX) == SLOT_HIT;
}

/* Landing bytes of a key read through ops: its headers; for a hinted key the hinted
 * way's header and the index block, then (phase 2) the other ways' headers. */
static size_t land_bytes(const struct ekey *k)
{
	const struct sm_layout *lay = k->kc.lay;
	size_t n = 0;

	if (k->hint >= 0) {
		const struct slot_geometry *g = &lay->cls[k->only].g;
		size_t later = (size_t)(g->ways - 1) * SLOT_HEADER_BYTES;

		return SLOT_HEADER_BYTES + (g->index_stride > later ? g->index_stride : later);
	}
	for (uint32_t c = 0; c < lay->nr_classes; c++)
		if (k->only < 0 || (int)c == k->only)
			n += lay->cls[c].g.ways;
	return n * SLOT_HEADER_BYTES;
}

/* Phase 1 ops of a key read through ops; returns how many. */
static uint32_t phase1_ops(struct ekey *k, struct pc_op *ops)
{
	const struct sm_layout *lay = k->kc.lay;
	uint32_t n = 0;

	if (k->hint >= 0) {	/* the hinted way's header, the index block after it */
		const struct sm_class *cl = &lay->cls[k->only];
		uint64_t b = slot_bucket_of(&cl->g, k->kc.h);

		ops[n++] = sm_op(PC_OP_READ, lay, sm_slot_addr(cl, b, (uint32_t)k->hint), cl->rkey,
				 k->land, SLOT_HEADER_BYTES);
		ops[n++] = sm_op(PC_OP_READ, lay, sm_index_addr(cl, b), cl->rkey,
				 k->land + SLOT_HEADER_BYTES, (uint32_t)cl->g.index_stride);
		return n;
	}
	for (uint32_t c = 0; c < lay->nr_classes; c++) {
		const struct sm_class *cl = &lay->cls[c];
		uint64_t b = slot_bucket_of(&cl->g, k->kc.h);

		if (k->only >= 0 && (int)c != k->only)
			continue;
		for (uint32_t w = 0; w < cl->g.ways; w++, n++)
			ops[n] = sm_op(PC_OP_READ, lay, sm_slot_addr(cl, b, w), cl->rkey,
				       k->land + (size_t)n * SLOT_HEADER_BYTES, SLOT_HEADER_BYTES);
	}
	return n;
}

/* Phase 1 landed: found, absent, or (a hinted key that left its way) ways to read. */
static void phase1_eval(struct slotmap *sm, struct ekey *k)
{
	const struct sm_layout *lay = k->kc.lay;
	uint32_t j = 0;

	if (k->hint >= 0) {
		const struct sm_class *cl = &lay->cls[k->only];

		k->found = names_key(k, k->land);
		if (!k->found) {
			k->ways = slot_tag_match(k->land + SLOT_HEADER_BYTES, cl->g.ways,
						 slot_tag(k->kc.h)) & ~(1ULL << k->hint);
			if (!k->ways)	/* gone: no other way carries its tag */
				sm_hint_drop(sm, k->kc.h, k->only, (uint32_t)k->hint);
		}
		if (!k->ways)
			k->kc.state = SM_DONE;
		return;
	}
	for (uint32_t c = 0; c < lay->nr_classes; c++) {
		const struct sm_class *cl = &lay->cls[c];

		if (k->only >= 0 && (int)c != k->only)
			continue;
		for (uint32_t w = 0; w < cl->g.ways; w++, j++)
			if (!k->found && names_key(k, k->land + (size_t)j * SLOT_HEADER_BYTES)) {
				k->found = true;
				sm_hint_put(sm, lay, k->kc.h, (int)c, w);
			}
	}
	k->kc.state = SM_DONE;
}

/* exists reads the headers of the key's bucket (ways x 64 B per class), or a hinted
 * key's way header and index block first; no payload moves. len, when given, names
 * the one class to look in. */
static bool exists_pass(struct slotmap *sm, struct arena *a, struct ekey *keys, size_t n,
			uint64_t *bytes)
{
	uint64_t epoch = sm_direct_epoch(sm);
	uint8_t *land = NULL;
	struct pc_op *ops = NULL;
	size_t room = 0;
	uint32_t nops = 0;

	sm_bind_layouts(sm, keys, sizeof(*keys), n);
	/* Keys in memory this node addresses directly are decided here; landing space
	 * only for the rest. */
	for (size_t i = 0; i < n; i++) {
		struct ekey *k = &keys[i];
		const struct sm_layout *lay = k->kc.lay;
		uint32_t ways;
		size_t bytes_k;

		if (k->kc.state != SM_PENDING || !exists_classes(k, &k->only) ||
		    exists_direct(sm, epoch, k, k->only, bytes))
			continue;
		k->hint = k->only >= 0 ? sm_hint_get(sm, lay, k->kc.h, k->only) : -1;
		k->ways = 0;
		bytes_k = land_bytes(k);
		room += bytes_k;
		if (k->hint < 0) {
			nops += (uint32_t)(bytes_k / SLOT_HEADER_BYTES);
			continue;
		}
		/* a hinted key: two ops, then a phase-2 op per other way at most */
		ways = lay->cls[k->only].g.ways;
		nops += ways > 2 ? ways : 2;
	}
	if (!nops)
		return false;
	land = arena_alloc(a, room);
	ops = arena_alloc(a, (size_t)nops * sizeof(*ops));
	if (land)	/* a READ that brings nothing: empty headers, no tags */
		memset(land, 0, room);
	if (!land || !ops) {
		for (size_t i = 0; i < n; i++)
			if (keys[i].kc.state == SM_PENDING)
				keys[i].kc.err = -ENOMEM, keys[i].kc.state = SM_DONE;
		return false;
	}
	nops = 0;
	sm_phase_begin(keys, sizeof(*keys), n);
	for (size_t i = 0; i < n; i++) {
		struct ekey *k = &keys[i];

		if (k->kc.state != SM_PENDING)
			continue;
		k->land = land;
		k->kc.op0 = nops;
		k->kc.nops = phase1_ops(k, ops + nops);
		land += land_bytes(k);
		nops += k->kc.nops;
	}
	*bytes += sm_phase_post(sm, keys, sizeof(*keys), n, ops, nops);
	for (size_t i = 0; i < n; i++)
		if (keys[i].kc.state == SM_PENDING)
			phase1_eval(sm, &keys[i]);
	/* Phase 2: the other tagged ways of hinted keys that left their way. */
	nops = 0;
	sm_phase_begin(keys, sizeof(*keys), n);
	for (size_t i = 0; i < n; i++) {
		struct ekey *k = &keys[i];
		const struct sm_class *cl;
		uint64_t b;

		if (k->kc.state != SM_PENDING)
			continue;
		cl = &k->kc.lay->cls[k->only];
		b = slot_bucket_of(&cl->g, k->kc.h);
		k->kc.op0 = nops;
		for (uint64_t m = k->ways; m; m &= m - 1, nops++)
			ops[nops] = sm_op(PC_OP_READ, k->kc.lay,
					  sm_slot_addr(cl, b, (uint32_t)__builtin_ctzll(m)), cl->rkey,
					  k->land + (size_t)(nops - k->kc.op0) * SLOT_HEADER_BYTES,
					  SLOT_HEADER_BYTES);
		k->kc.nops = nops - k->kc.op0;
	}
	if (!nops)
		return true;
	*bytes += sm_phase_post(sm, keys, sizeof(*keys), n, ops, nops);
	for (size_t i = 0; i < n; i++) {
		struct ekey *k = &keys[i];
		uint32_t j = 0;

		if (k->kc.state != SM_PENDING)
			continue;
		for (uint64_t m = k->ways; m; m &= m - 1, j++)
			if (!k->found && names_key(k, k->land + (size_t)j * SLOT_HEADER_BYTES)) {
				k->found = true;
				sm_hint_put(sm, k->kc.lay, k->kc.h, k->only,
					    (uint32_t)__builtin_ctzll(m));
			}
		if (!k->found)	/* the other tags were stale: gone */
			sm_hint_drop(sm, k->kc.h, k->only, (uint32_t)k->hint);
		k->kc.state = SM_DONE;
	}
	return true;
}

int slotmap_exists(struct store_mode *m, struct pc_page *pages, size_t n)
{
	struct slotmap *sm = sm_of(m);
	struct store_svc *st = sm->st;
	struct arena *a = arena_take(&st->arenas);
	struct ekey *keys = a ? arena_alloc(a, n * sizeof(*keys)) : NULL;
	uint64_t bytes = 0;
	int present = 0;

	if (!keys) {
		arena_give(&st->arenas, a);
		return -ENOMEM;
	}
	sm_keys_init(sm, keys, sizeof(*keys), pages, n);
	for (size_t i = 0; i < n; i++)
		keys[i].found = false;
	for (int pass = 0; pass < 2; pass++) {
		if (!exists_pass(sm, a, keys, n, &bytes) ||
		    !sm_retry_stale(sm, keys, sizeof(*keys), n, pass))
			break;
	}
	for (size_t i = 0; i < n; i++) {
		struct ekey *k = &keys[i];

		if (k->kc.pg->status)	/* bad arguments */
			continue;
		k->kc.pg->status = k->kc.err ? k->kc.err : k->found ? 0 : -ENOENT;
		present += !k->kc.pg->status;
	}
	METRIC_ADD(st, exists_requests, n);
	METRIC_ADD(st, exists_hits, present);
	METRIC_ADD(st, bytes_read, bytes);
	arena_give(&st->arenas, a);
	return present;
}
