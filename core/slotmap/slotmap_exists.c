/*
 * slotmap_exists.c - batch_exists in slotmap mode: the headers of each key's bucket
 * (ways x 64 B per class it may be in), read in one phase or in place, and no
 * payload at all.
 *
 * Not for: get (slotmap_read.c), which reads pages.
 */
#include "slotmap_direct.h"
#include "slotmap_keys.h"

struct ekey {
	struct sm_kc kc;
	bool found;			/* a header names the key */
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

/* exists reads the headers of the key's bucket (ways x 64 B per class), nothing
 * else: no payload moves. len, when given, names the one class to look in. */
static bool exists_pass(struct slotmap *sm, struct arena *a, struct ekey *keys, size_t n,
			uint64_t *bytes)
{
	uint64_t epoch = sm_direct_epoch(sm);
	uint8_t *hdrs = NULL;
	struct pc_op *ops = NULL;
	uint32_t nops = 0;

	sm_bind_layouts(sm, keys, sizeof(*keys), n);
	/* Keys in memory this node addresses directly are decided here; header landing
	 * space only for the rest. */
	for (size_t i = 0; i < n; i++) {
		struct ekey *k = &keys[i];
		const struct sm_layout *lay = k->kc.lay;
		int only;

		if (k->kc.state != SM_PENDING || !exists_classes(k, &only) ||
		    exists_direct(sm, epoch, k, only, bytes))
			continue;
		for (uint32_t c = 0; c < lay->nr_classes; c++)
			if (only < 0 || (int)c == only)
				nops += lay->cls[c].g.ways;
	}
	if (!nops)
		return false;
	hdrs = arena_alloc(a, (size_t)nops * SLOT_HEADER_BYTES);
	ops = arena_alloc(a, (size_t)nops * sizeof(*ops));
	if (!hdrs || !ops) {
		for (size_t i = 0; i < n; i++)
			if (keys[i].kc.state == SM_PENDING)
				keys[i].kc.err = -ENOMEM, keys[i].kc.state = SM_DONE;
		return false;
	}
	nops = 0;
	sm_phase_begin(keys, sizeof(*keys), n);
	for (size_t i = 0; i < n; i++) {
		struct ekey *k = &keys[i];
		const struct sm_layout *lay = k->kc.lay;
		int only;

		if (k->kc.state != SM_PENDING)
			continue;
		exists_classes(k, &only);
		k->kc.op0 = nops;
		for (uint32_t c = 0; c < lay->nr_classes; c++) {
			const struct sm_class *cl = &lay->cls[c];
			uint64_t b = slot_bucket_of(&cl->g, k->kc.h);

			if (only >= 0 && (int)c != only)
				continue;
			for (uint32_t w = 0; w < cl->g.ways; w++, nops++)
				ops[nops] = sm_op(PC_OP_READ, lay, sm_slot_addr(cl, b, w), cl->rkey,
						  hdrs + (size_t)nops * SLOT_HEADER_BYTES, SLOT_HEADER_BYTES);
		}
		k->kc.nops = nops - k->kc.op0;
	}
	*bytes += sm_phase_post(sm, keys, sizeof(*keys), n, ops, nops);
	for (size_t i = 0; i < n; i++) {
		struct ekey *k = &keys[i];

		if (k->kc.state != SM_PENDING)
			continue;
		for (uint32_t j = 0; k->kc.state == SM_PENDING && j < k->kc.nops; j++) {
			struct slot_header h;

			slot_header_decode(hdrs + (size_t)(k->kc.op0 + j) * SLOT_HEADER_BYTES, &h);
			if (slot_header_check(&h, k->kc.h, (uint32_t)k->kc.pg->len, UINT32_MAX) ==
			    SLOT_HIT)
				k->found = true;
		}
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
