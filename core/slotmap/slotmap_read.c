/*
 * slotmap_read.c - batch_get in slotmap mode.
 *
 * A get reads, in one phase for the whole batch, per key:
 *   bucket:  the whole bucket (the seed's way): one round trip, ways x the page.
 *   index:   the bucket's index block (64 B): a miss is known after one round
 *            trip; a hit reads exactly the tagged slot in a second phase, moving
 *            little more than the page.
 *   predict: the index block, the predicted way's header, and its payload straight
 *            into the caller's buffer. A hit in the predicted way costs one round
 *            trip; a key elsewhere (a third or more at high occupancy, since remote
 *            writers cannot move pages into place) costs a wasted payload and a
 *            second phase.
 *   hinted:  the way a hint names (slotmap_hints.h: this node wrote or read the key,
 *            and saw it there), header and payload, and no index block: one READ.
 *            The hint is right unless the key was evicted or moved since; then the
 *            index block follows in a second phase (and the slot it names in a
 *            third).
 * auto takes bucket where a bucket is small (ways x slot <= 16 KiB), index for large
 * pages, and for the rest hinted for a key with a way hint in a one-class read (a
 * serving engine asks exists, which hints every key it finds and drops the hints of
 * keys gone, then gets the pages that exist: their hints are that fresh), predict
 * for a hinted key of several classes, and for the others predict when the batch
 * has at most two of them, index otherwise: in a bigger batch some key almost surely
 * misses its hashed way, so the batch takes two phases anyway and index moves fewer
 * bytes.
 * Every candidate passes slot_matches(); a failed op fails its key only. Keys in
 * memory this node can address (its own slots, or peers' that the fabric maps:
 * sm_direct) are read in place through the index instead, with no ops at all.
 */
#include <stdlib.h>
#include <string.h>

#include "slotmap_direct.h"
#include "slotmap_hints.h"
#include "slotmap_keys.h"
#include "slotmap_promote.h"

/* A key of a batch, what every path uses first (direct reads touch its first three
 * cache lines for a one-class layout). */
struct gkey {
	struct sm_kc kc;
	uint32_t expect, maxlen;
	int c0;				/* the class read first */
	uint32_t mask;			/* classes whose index block is read */
	int verdict;			/* enum slot_verdict once decided */
	bool first_phase;		/* decided by phase 1 */
	bool from_disk;			/* its owner promoted it from disk */
	bool direct;			/* read in place (sm_direct), not by ops */
	int cand_cls, cand_way;
	uint8_t *slot;			/* direct: the candidate slot */
	uint64_t bucket[PC_MAX_CLASSES];
	uint8_t *idx[PC_MAX_CLASSES];	/* index blocks (direct keys: in place) */
	int policy;			/* how c0 is read in this batch */
	bool hinted;			/* predict in the hinted way without the index */
	bool need_index;		/* hinted, and the way held another key */
	uint32_t pred;
	int hint;			/* the way this node last saw it in (c0), or -1 */
	uint8_t *scratch;		/* a whole bucket (bucket policy) */
	const struct pc_region *lreg;	/* the caller's registered memory holding data */
	uint64_t sum;			/* summed: the payload's checksum, taken as it landed */
	bool summed;
	bool summing;			/* part holds the sum of the pieces arrived so far */
	uint32_t part_len;		/* of the payload the header claims */
	struct slot_sum part;
	uint8_t hdr[SLOT_HEADER_BYTES];
};

/* Bytes to read for a payload of class c: exactly the expected length if given. */
static uint32_t read_len(const struct gkey *k, int c)
{
	uint64_t page = k->kc.lay->cls[c].g.page_bytes;

	if (k->expect)
		return k->expect;
	return (uint32_t)(k->maxlen < page ? k->maxlen : page);
}

static void finish(struct gkey *k, int verdict)
{
	k->verdict = verdict;
	k->kc.state = SM_DONE;
}

/* The most bytes a slot of class c may give key k: the caller's capacity, never more
 * than the class holds (a header that claims more is refused, never copied). */
static uint32_t max_len(const struct gkey *k, const struct sm_class *c)
{
	return k->maxlen < c->g.page_bytes ? k->maxlen : (uint32_t)c->g.page_bytes;
}

/*
 * Keys in memory this node addresses directly (sm_direct) are read in place as a
 * remote reader reads through the index: the first way whose tag names the key
 * decides, under the seqlock (a stale tag is another key's slot: a clean miss). A
 * batch does it in three sweeps, each prefetching what the next one reads, so that
 * its keys' cache misses overlap: past L2 a miss costs more here (~150 ns) than all
 * the rest of a lookup. slotmap_fill.c reads keys in place the same way for the
 * simulator's one-call requests: a rule added here goes there too (unit.sim compares
 * the two page by page).
 */

/* Sweep 1: point the key's index blocks at the owner's memory and prefetch them;
 * false, having decided nothing, when a class's memory cannot be addressed. */
static bool direct_index(struct slotmap *sm, uint64_t epoch, struct gkey *k)
{
	const struct sm_layout *lay = k->kc.lay;

	if (k->mask == 1u << k->c0) {	/* one class to read: the usual case */
		uint8_t *mem = sm_direct(sm, epoch, lay, k->c0);

		if (!mem)
			return false;
		k->idx[k->c0] = mem + slot_index_offset(&lay->cls[k->c0].g, k->bucket[k->c0]);
		__builtin_prefetch(k->idx[k->c0]);
		k->direct = true;
		return true;
	}
	for (int c = k->c0; c >= 0; c--) {
		const struct sm_class *cl = &lay->cls[c];
		uint8_t *mem;

		if (!(k->mask >> c & 1))
			continue;
		mem = sm_direct(sm, epoch, lay, c);
		if (!mem)
			return false;
		k->idx[c] = mem + slot_index_offset(&cl->g, k->bucket[c]);
		__builtin_prefetch(k->idx[c]);
	}
	k->direct = true;
	return true;
}

/* Sweep 2: the tagged slot, prefetched, or the key is absent. Which way (if any)
 * holds the tag follows no pattern, so the ways are compared into a mask, without a
 * branch per way. */
static void direct_find(struct gkey *k, uint64_t *bytes)
{
	const struct sm_layout *lay = k->kc.lay;
	uint32_t tag = slot_tag(k->kc.h);

	for (int c = k->c0; c >= 0; c--) {
		const struct sm_class *cl = &lay->cls[c];
		uint64_t match;
		uint32_t w;

		if (!(k->mask >> c & 1))
			continue;
		*bytes += cl->g.index_stride;
		match = slot_tag_match(k->idx[c], cl->g.ways, tag);
		if (!match)
			continue;
		w = (uint32_t)__builtin_ctzll(match);
		k->cand_cls = c;
		k->cand_way = (int)w;
		/* the region's start is the index block's less its offset */
		k->slot = k->idx[c] - slot_index_offset(&cl->g, k->bucket[c]) +
			  slot_offset(&cl->g, k->bucket[c], w);
		__builtin_prefetch(k->slot);
		return;
	}
	k->first_phase = true;
	finish(k, SLOT_MISS_ABSENT);
}

/* Sweep 3: the gate on the candidate slot; *copied gets a hit's bytes. */
static void direct_check(struct gkey *k, uint64_t *bytes, uint64_t *copied)
{
	const struct sm_class *cl = &k->kc.lay->cls[k->cand_cls];
	/* slot_read_local takes a NULL dst for a payload-free slot; a caller with no
	 * buffer (capacity 0: a page of no bytes) copies its nothing into hdr, so that
	 * the page is summed as through ops, not checked as payload-free */
	void *dst = k->kc.pg->data ? k->kc.pg->data : k->hdr;
	uint32_t len = 0;
	int v = slot_read_local(k->slot, k->kc.h, k->expect, max_len(k, cl),
				slot_has_payload(&cl->g) ? dst : NULL, &len);

	*bytes += SLOT_HEADER_BYTES;
	if (v == SLOT_HIT) {
		k->kc.pg->len = len;
		*bytes += len;
		*copied += len;
	}
	k->first_phase = true;
	finish(k, v == SLOT_MISS_ABSENT ? SLOT_MISS_OTHER_KEY : v);
}

/* The payload length of the header a slot's READ brought, or -1 when the gate
 * refuses the header without a checksum. */
static int64_t landing_len(const struct gkey *k, const struct pc_op *op)
{
	struct slot_header h;

	slot_header_decode(k->hdr, &h);
	if (slot_header_empty(&h) || !keyhash_eq(h.key, k->kc.h) || h.payload_len > op->len)
		return -1;
	return h.payload_len;
}

/* Part of a slot's payload is in (pc_op.arrived: local[0..upto), the header before
 * it): sum its whole pieces now, while they are in cache. */
static void slot_arrived(void *arg, const struct pc_op *op, size_t upto)
{
	struct gkey *k = arg;
	int64_t len;

	if (!k->summing) {
		if ((len = landing_len(k, op)) < 0)
			return;
		slot_sum_begin(&k->part, k->kc.h, (uint32_t)len);
		k->part_len = (uint32_t)len;
		k->summing = true;
	}
	slot_sum_upto(&k->part, op->local, (uint32_t)(upto < k->part_len ? upto : k->part_len));
}

/* A slot's READ landed (pc_op.landed, from fabrics that copy the bytes in
 * themselves): sum the payload the header claims (the rest of it, after the pieces
 * that arrived) now, while it is in cache, not after the batch has pushed it out.
 * The gate then compares the header's checksum with this sum (slot_matches_sum);
 * nothing writes header or payload after this. */
static void slot_landed(void *arg, const struct pc_op *op)
{
	struct gkey *k = arg;
	int64_t len = landing_len(k, op);

	if (len < 0)
		return;		/* the gate refuses it without a checksum */
	k->sum = k->summing ? slot_sum_end(&k->part, op->local, (uint32_t)len) :
			      slot_checksum(k->kc.h, op->local, (uint32_t)len);
	k->summed = true;
}

/* The READ of the slot at addr (class c): header into hdr, payload into the page. */
static struct pc_op slot_read_op(struct gkey *k, int c, uint64_t addr)
{
	const struct sm_class *cl = &k->kc.lay->cls[c];
	struct pc_op op = sm_slot_op(PC_OP_READ, k->kc.lay, cl, addr, k->hdr, k->kc.pg->data,
				     read_len(k, c), k->lreg);

	k->summed = k->summing = false;
	memset(k->hdr, 0, sizeof(k->hdr));	/* a READ that brings nothing: an empty slot */
	if (slot_has_payload(&cl->g)) {
		op.landed = slot_landed;
		op.arrived = slot_arrived;
		op.landed_arg = k;
	}
	return op;
}

/* The gate on the slot whose header h the key's READ brought, with the sum taken
 * as it landed when there is one. */
static int read_gate(const struct gkey *k, int c, const struct slot_header *h, uint32_t max)
{
	const struct sm_class *cl = &k->kc.lay->cls[c];

	if (k->summed && slot_has_payload(&cl->g))
		return slot_matches_sum(h, k->sum, k->kc.h, k->expect, max);
	return sm_gate(cl, h, k->kc.pg->data, k->kc.h, k->expect, max);
}

/* The READ of the key's index block of class c. */
static struct pc_op index_read_op(const struct gkey *k, int c)
{
	const struct sm_class *cl = &k->kc.lay->cls[c];

	return sm_op(PC_OP_READ, k->kc.lay, sm_index_addr(cl, k->bucket[c]), cl->rkey, k->idx[c],
		     (uint32_t)cl->g.index_stride);
}

/* Phase 1 ops for one key; returns how many it appended. */
static uint32_t phase1_ops(struct gkey *k, struct pc_op *ops)
{
	const struct sm_layout *lay = k->kc.lay;
	const struct sm_class *c0 = &lay->cls[k->c0];
	uint32_t n = 0;

	if (k->policy == PC_READ_BUCKET) {
		ops[n] = sm_op(PC_OP_READ, lay, sm_slot_addr(c0, k->bucket[k->c0], 0), c0->rkey,
			       k->scratch, (uint32_t)(c0->g.ways * c0->g.mem_stride));
		ops[n++].virt_len = (uint32_t)(c0->g.ways * (c0->g.stride - c0->g.mem_stride));
	} else {
		if (!k->hinted)
			ops[n++] = index_read_op(k, k->c0);
		if (k->policy == PC_READ_PREDICT) {
			ops[n++] = slot_read_op(k, k->c0, sm_slot_addr(c0, k->bucket[k->c0], k->pred));
		}
	}
	for (int c = k->c0 - 1; c >= 0; c--)
		if (k->mask >> c & 1)
			ops[n++] = index_read_op(k, c);
	return n;
}

/* The first way of a class whose index tag names this key, skipping one way. */
static int tagged_way(const struct gkey *k, int c, int skip)
{
	const struct slot_geometry *g = &k->kc.lay->cls[c].g;
	uint32_t tag = slot_tag(k->kc.h);

	for (uint32_t w = 0; w < g->ways; w++) {
		uint32_t t;

		memcpy(&t, k->idx[c] + w * SLOT_TAG_BYTES, 4);
		if (t == tag && (int)w != skip)
			return (int)w;
	}
	return -1;
}

/* The key's index blocks are in (its predicted way, skip, already read): a candidate
 * slot for phase 2, or a final miss. */
static void index_eval(struct slotmap *sm, struct gkey *k, int skip)
{
	for (int c = k->c0; c >= 0; c--) {
		int w;

		if (!(k->mask >> c & 1) || (c == k->c0 && k->policy == PC_READ_BUCKET))
			continue;
		w = tagged_way(k, c, c == k->c0 ? skip : -1);
		if (w >= 0) {
			k->cand_cls = c;
			k->cand_way = w;
			return;
		}
	}
	if (k->policy == PC_READ_PREDICT && k->hint >= 0)	/* it left the way */
		sm_hint_drop(sm, k->kc.h, k->c0, (uint32_t)k->hint);
	k->first_phase = !k->hinted;
	finish(k, SLOT_MISS_ABSENT);
}

/* Phase 1 landed: a hit, a final miss, a candidate slot for phase 2, or (hinted,
 * the way held another key) the index block to read first. */
static void phase1_eval(struct slotmap *sm, struct gkey *k)
{
	const struct sm_class *c0 = &k->kc.lay->cls[k->c0];
	struct slot_header h;
	int skip = -1;

	if (k->policy == PC_READ_BUCKET) {
		for (uint32_t w = 0; w < c0->g.ways; w++) {
			const uint8_t *slot = k->scratch + w * c0->g.mem_stride;
			int v;

			slot_header_decode(slot, &h);
			if (slot_header_empty(&h) || !keyhash_eq(h.key, k->kc.h))
				continue;
			v = sm_gate(c0, &h, slot + SLOT_HEADER_BYTES, k->kc.h, k->expect, max_len(k, c0));
			if (v == SLOT_HIT) {
				/* a page of no bytes may have no buffer (NULL): memcpy
				 * must not be given one, even for nothing */
				if (slot_has_payload(&c0->g) && h.payload_len)
					memcpy(k->kc.pg->data, slot + SLOT_HEADER_BYTES, h.payload_len);
				k->kc.pg->len = h.payload_len;
			}
			k->first_phase = true;
			finish(k, v);
			return;
		}
	} else if (k->policy == PC_READ_PREDICT) {
		slot_header_decode(k->hdr, &h);
		skip = (int)k->pred;
		if (!slot_header_empty(&h) && keyhash_eq(h.key, k->kc.h)) {
			/* A bucket holds one version of a key: this slot decides. */
			int v = read_gate(k, k->c0, &h,
					  k->maxlen < read_len(k, k->c0) ? k->maxlen : read_len(k, k->c0));

			if (v == SLOT_HIT)
				k->kc.pg->len = h.payload_len;
			k->first_phase = true;
			finish(k, v);
			return;
		}
		if (k->hinted) {
			k->need_index = true;
			return;
		}
	}
	index_eval(sm, k, skip);
}

/* Which classes may hold the key and its buckets; false when no class can hold such
 * a page (the key is then decided: absent). */
static bool plan_classes(struct gkey *k)
{
	const struct sm_layout *lay = k->kc.lay;
	uint64_t want = k->expect ? k->expect : k->maxlen;

	k->cand_cls = -1;
	if (lay->nr_classes == 1 && lay->cls[0].g.page_bytes >= want) {	/* the usual case */
		k->c0 = 0;
		k->mask = 1;
		k->bucket[0] = slot_bucket_of(&lay->cls[0].g, k->kc.h);
		return true;
	}
	k->c0 = sm_class_for(lay, want);
	if (k->c0 < 0) {
		if (k->expect) {	/* no class can hold such a page */
			k->first_phase = true;
			finish(k, SLOT_MISS_ABSENT);
			return false;
		}
		k->c0 = (int)lay->nr_classes - 1;
	}
	/* With an expected length the page can only be in its own class. */
	k->mask = k->expect ? 1u << k->c0 : (2u << k->c0) - 1;
	for (int c = 0; c <= k->c0; c++)
		k->bucket[c] = slot_bucket_of(&lay->cls[c].g, k->kc.h);
	return true;
}

/* How a key read through ops is read (policy, predicted way); returns the bytes of
 * landing space it needs (index blocks, a whole bucket). unhinted is the number of
 * keys the batch reads through ops in this pass without a way hint: auto reads a
 * hinted key in its hinted way (without the index when it reads one class), and the
 * others as predict when they are at most two, else as index. */
static size_t plan_reads(struct gkey *k, size_t unhinted)
{
	const struct sm_layout *lay = k->kc.lay;
	size_t need = 0;

	for (int c = 0; c <= k->c0; c++)
		if (k->mask >> c & 1)
			need += lay->cls[c].g.index_stride;
	k->pred = k->hint >= 0 ? (uint32_t)k->hint : slot_predicted_way(&lay->cls[k->c0].g, k->kc.h);
	k->policy = lay->cls[k->c0].policy;
	k->hinted = k->need_index = false;
	if (k->policy == PC_READ_AUTO) {
		k->hinted = k->hint >= 0 && k->mask == 1u << k->c0;
		k->policy = k->hint >= 0 || unhinted <= 2 ? PC_READ_PREDICT : PC_READ_INDEX;
	}
	if (k->policy == PC_READ_BUCKET)
		need += lay->cls[k->c0].g.ways * lay->cls[k->c0].g.mem_stride;
	return need;
}

/* Point a key's index blocks and bucket scratch into the pass's landing space. */
static void place_key(struct gkey *k, uint8_t *at)
{
	const struct sm_layout *lay = k->kc.lay;

	for (int c = 0; c <= k->c0; c++) {
		k->idx[c] = at;
		if (k->mask >> c & 1)
			at += lay->cls[c].g.index_stride;
	}
	k->scratch = at;
}

/* One pass over the pending keys: direct lookups, phase 1, phase 2. Returns whether
 * it posted ops (only an op can find an owner restarted: sm_retry_stale). */
static bool get_pass(struct slotmap *sm, struct arena *a, struct gkey *keys, size_t n,
		     uint64_t *bytes)
{
	struct store_svc *st = sm->st;
	struct store_stage *sg = NULL;
	struct pc_op *ops = NULL;
	uint8_t *land = NULL;
	size_t nremote = 0, unhinted = 0, ndirect = 0, need = 0, need_index = 0, *at;
	uint64_t epoch = sm_direct_epoch(sm), copied = 0;
	uint32_t nops = 0;

	sm_bind_layouts(sm, keys, sizeof(*keys), n);
	/* Keys in memory this node addresses directly are decided here; the rest
	 * are read through ops. */
	for (size_t i = 0; i < n; i++) {
		struct gkey *k = &keys[i];

		k->direct = false;
		if (k->kc.state != SM_PENDING || !plan_classes(k))
			continue;
		if (direct_index(sm, epoch, k)) {
			ndirect++;
			continue;
		}
		nremote++;
		k->hint = sm_hint_get(sm, k->kc.lay, k->kc.h, k->c0);
		unhinted += k->hint < 0;
	}
	for (size_t i = 0; ndirect && i < n; i++)
		if (keys[i].direct && keys[i].kc.state == SM_PENDING)
			direct_find(&keys[i], bytes);
	for (size_t i = 0; ndirect && i < n; i++)
		if (keys[i].direct && keys[i].kc.state == SM_PENDING)
			direct_check(&keys[i], bytes, &copied);
	if (copied)	/* the pass's local copies, charged once */
		pc_env_copy(st->env, copied);
	if (!nremote)
		return false;
	at = arena_alloc(a, n * sizeof(*at));
	ops = arena_alloc(a, (nremote * (2 + PC_MAX_CLASSES) + 1) * sizeof(*ops));
	/* One landing area for the whole pass, carved per key: reused memory, since
	 * fresh pages fault in under the network copy (25x slower for bucket reads of
	 * 256 KiB pages). */
	for (size_t i = 0; at && ops && i < n; i++) {
		at[i] = need;
		if (keys[i].kc.state == SM_PENDING)
			need += plan_reads(&keys[i], unhinted);
	}
	if (at && ops && (sg = store_stage_take(st, need ? need : 1, 0)))
		land = sg->mem;
	if (!land) {
		for (size_t i = 0; i < n; i++)
			if (keys[i].kc.state == SM_PENDING)
				keys[i].kc.err = -ENOMEM, keys[i].kc.state = SM_DONE;
		return false;
	}
	sm_phase_begin(keys, sizeof(*keys), n);
	for (size_t i = 0; i < n; i++) {
		struct gkey *k = &keys[i];

		if (k->kc.state != SM_PENDING)
			continue;
		place_key(k, land + at[i]);
		k->kc.op0 = nops;
		k->kc.nops = phase1_ops(k, ops + nops);
		for (uint32_t o = nops; o < nops + k->kc.nops; o++)
			if (!ops[o].lreg && (uint8_t *)ops[o].local >= land &&
			    (uint8_t *)ops[o].local < land + need)
				ops[o].lreg = &sg->r;	/* lands in registered scratch */
		nops += k->kc.nops;
	}
	*bytes += sm_phase_post(sm, keys, sizeof(*keys), n, ops, nops);
	for (size_t i = 0; i < n; i++)
		if (keys[i].kc.state == SM_PENDING) {
			phase1_eval(sm, &keys[i]);
			need_index += keys[i].need_index;
		}
	/* Hinted keys whose way held another key: their index blocks. */
	if (need_index) {
		nops = 0;
		sm_phase_begin(keys, sizeof(*keys), n);
		for (size_t i = 0; i < n; i++) {
			struct gkey *k = &keys[i];

			if (k->kc.state != SM_PENDING || !k->need_index)
				continue;
			k->kc.op0 = nops;
			k->kc.nops = 1;
			ops[nops] = index_read_op(k, k->c0);
			ops[nops++].lreg = &sg->r;
		}
		*bytes += sm_phase_post(sm, keys, sizeof(*keys), n, ops, nops);
		for (size_t i = 0; i < n; i++)
			if (keys[i].kc.state == SM_PENDING && keys[i].need_index)
				index_eval(sm, &keys[i], (int)keys[i].pred);
	}
	/* Phase 2: the exact slot the index pointed at. */
	nops = 0;
	sm_phase_begin(keys, sizeof(*keys), n);
	for (size_t i = 0; i < n; i++) {
		struct gkey *k = &keys[i];
		const struct sm_class *cl;

		if (k->kc.state != SM_PENDING)
			continue;
		cl = &k->kc.lay->cls[k->cand_cls];
		k->kc.op0 = nops;
		k->kc.nops = 1;
		ops[nops++] = slot_read_op(k, k->cand_cls,
					   sm_slot_addr(cl, k->bucket[k->cand_cls], (uint32_t)k->cand_way));
	}
	*bytes += sm_phase_post(sm, keys, sizeof(*keys), n, ops, nops);
	for (size_t i = 0; i < n; i++) {
		struct gkey *k = &keys[i];
		struct slot_header h;
		int v;

		if (k->kc.state != SM_PENDING)
			continue;
		slot_header_decode(k->hdr, &h);
		if (slot_header_empty(&h) || !keyhash_eq(h.key, k->kc.h)) {
			finish(k, SLOT_MISS_OTHER_KEY);	/* the tag was stale or collided */
			continue;
		}
		v = read_gate(k, k->cand_cls, &h,
			      k->maxlen < read_len(k, k->cand_cls) ? k->maxlen : read_len(k, k->cand_cls));
		if (v == SLOT_HIT) {
			k->kc.pg->len = h.payload_len;
			sm_hint_put(sm, k->kc.lay, k->kc.h, k->cand_cls, (uint32_t)k->cand_way);
		}
		finish(k, v);
	}
	store_stage_give(st, sg);
	return true;
}

/* ------------------------------------------------------------------ spill fallback */

/* A miss the owner's disk may hold. */
static bool may_be_on_disk(const struct gkey *k)
{
	return k->kc.state == SM_DONE && !k->kc.err && k->kc.lay && k->kc.lay->spill &&
	       !k->kc.pg->status &&
	       (k->verdict == SLOT_MISS_ABSENT || k->verdict == SLOT_MISS_OTHER_KEY);
}

/* Take one answer: the payload (verified against the owner's checksum) for 0, a
 * second look at the slot for -EAGAIN. Returns whether the key reads again. */
static bool take_answer(struct slotmap *sm, struct gkey *k, const struct sm_promote_q *a)
{
	if (a->status == -EAGAIN) {
		k->kc.state = SM_PENDING;
		k->verdict = 0;
		k->first_phase = false;
		k->from_disk = true;
		return true;
	}
	if (a->status)
		return false;
	if (a->len > k->maxlen || (k->expect && a->len != k->expect)) {
		k->verdict = SLOT_MISS_LENGTH;
		return false;
	}
	if (!sm->payload_free) {
		memcpy(k->kc.pg->data, a->payload, a->len);
		if (slot_checksum(k->kc.h, k->kc.pg->data, a->len) != a->checksum) {
			k->verdict = SLOT_MISS_CHECKSUM;
			return false;
		}
	}
	k->kc.pg->len = a->len;
	k->verdict = SLOT_HIT;
	k->from_disk = true;
	return false;
}

/* Ask the owners of misses that spill to disk (slotmap_promote.c); take the pages
 * they answer with. Returns whether any key reads its slot again. */
static bool promote_misses(struct slotmap *sm, struct arena *a, struct gkey *keys, size_t n)
{
	struct sm_promote p = { .n = 0 };
	bool again = false;

	if (!__atomic_load_n(&sm->any_spill, __ATOMIC_RELAXED))
		return false;	/* no node here spills: nothing to ask */
	for (size_t i = 0; i < n; i++)
		p.n += may_be_on_disk(&keys[i]);
	if (!p.n || !(p.q = arena_alloc(a, p.n * sizeof(*p.q))))
		return false;	/* nothing to ask (every key hit), or the misses stand */
	p.n = 0;
	for (size_t i = 0; i < n; i++) {
		const struct gkey *k = &keys[i];

		if (may_be_on_disk(k))
			p.q[p.n++] = (struct sm_promote_q){ .owner = k->kc.owner, .h = k->kc.h,
							    .expect = k->expect, .cap = k->maxlen,
							    .tag = i };
	}
	sm_promote_ask(sm, &p);
	for (size_t j = 0; j < p.n; j++)
		again |= take_answer(sm, &keys[p.q[j].tag], &p.q[j]);
	sm_promote_done(&p);
	return again;
}

/* Without branches on the outcome: hits and misses come in no learnable order. */
static void tally_key(struct sm_get_tally *t, const struct gkey *k)
{
	uint64_t hit;

	if (k->kc.err) {
		t->unreachable++;
		return;
	}
	t->verdict[k->verdict]++;
	hit = k->verdict == SLOT_HIT;
	t->hit_bytes += hit * k->kc.pg->len;
	t->first_phase += hit & k->first_phase;
	t->disk += hit & k->from_disk;
}

int slotmap_get(struct store_mode *m, struct pc_page *pages, size_t n)
{
	struct slotmap *sm = sm_of(m);
	struct store_svc *st = sm->st;
	struct arena *a = arena_take(&st->arenas);
	struct gkey *keys = a ? arena_alloc(a, n * sizeof(*keys)) : NULL;
	struct sm_get_tally tally = { .unreachable = 0 };
	const bool payload_free = sm->payload_free;
	uint64_t bytes = 0;
	int hits = 0;

	if (!keys) {
		arena_give(&st->arenas, a);
		return -ENOMEM;
	}
	sm_keys_init(sm, keys, sizeof(*keys), pages, n);
	for (size_t i = 0; i < n; i++) {
		struct gkey *k = &keys[i];
		const struct pc_page *pg = &pages[i];
		/* read once: the stores below may alias them as far as the compiler knows */
		void *data = pg->data;
		size_t len = pg->len, cap = pg->cap;

		/* what is read before a pass sets it; the rest is set where it is used */
		k->verdict = 0;
		k->first_phase = k->from_disk = k->direct = false;
		if (pg->status)
			continue;
		if ((!data && cap && !payload_free) || len > cap || len > UINT32_MAX) {
			pages[i].status = -EINVAL;
			k->kc.state = SM_DONE;
			continue;
		}
		k->expect = (uint32_t)len;
		k->maxlen = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
		k->lreg = store_lreg(st, data, cap);
	}
	/* A second pass only for keys whose owner restarted under us. */
	for (int pass = 0; pass < 2; pass++) {
		if (!get_pass(sm, a, keys, n, &bytes) ||
		    !sm_retry_stale(sm, keys, sizeof(*keys), n, pass))
			break;
	}
	/* Misses an owner may have on disk: ask it; read again what it put back. A key
	 * whose owner restarted meanwhile fails (-ESTALE): it has no verdict, and the
	 * page it was promoted for is gone with the owner's memory. */
	if (promote_misses(sm, a, keys, n) && get_pass(sm, a, keys, n, &bytes))
		sm_retry_stale(sm, keys, sizeof(*keys), n, 1);
	for (size_t i = 0; i < n; i++) {
		struct gkey *k = &keys[i];

		if (k->kc.pg->status)	/* bad arguments */
			goto next;
		tally_key(&tally, k);
		if (k->kc.err) {
			k->kc.pg->status = k->kc.err;
		} else {
			hits += k->verdict == SLOT_HIT;
			k->kc.pg->status = k->verdict == SLOT_HIT ? 0 : -ENOENT;
		}
next:
		if (k->kc.pg->status)
			k->kc.pg->len = 0;
	}
	sm_get_tally_add(st, &tally);
	METRIC_ADD(st, read_requests, n);
	METRIC_ADD(st, bytes_read, bytes);
	arena_give(&st->arenas, a);
	return hits;
}
