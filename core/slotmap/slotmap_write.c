/*
 * slotmap_write.c - batch_set in slotmap mode.
 *
 * Own keys (and keys of peers whose memory the fabric maps: sm_direct) are written
 * in place under the seqlock. Remote keys take one batched READ of their buckets'
 * headers, a local pick_way, an optional batched CAS claim on the chosen slot's seq,
 * and one batched WRITE of header, payload (from the caller's buffer) and index tag.
 * A bucket READ that fails fails its keys: nothing is ever written blind. Keys of
 * one batch that share a bucket reserve distinct ways, so they never evict each
 * other; a key given twice keeps its last page.
 *
 * A key alone in its bucket with a way hint (slotmap_hints.h: this node wrote or
 * read it there) reads that way's header alone: one READ where the bucket takes one
 * a way. If the header still holds the key, the set overwrites that way, which is
 * what slot_pick_way would pick (a way holding the key comes before any other), with
 * a stamp newer than that header's and not older than now; else the bucket is read
 * whole in a second round trip, as without the hint.
 */
#include <stdlib.h>
#include <string.h>

#include "slotmap_direct.h"
#include "slotmap_hints.h"
#include "slotmap_keys.h"

/* Looks a direct write takes at a bucket whose chosen slot is being written or has
 * changed, a yield apart, before it gives up with -EBUSY. */
#define SM_WRITE_ATTEMPTS 1000

/* A bucket touched by the batch, with its headers as read. */
struct sbucket {
	uint32_t owner;
	int cls;
	uint64_t bucket;
	uint32_t ways;
	uint8_t *raw;			/* ways x 64 B as READ (remote buckets only) */
	struct slot_header *dec;	/* decoded headers */
	bool decoded;
	uint64_t reserved;		/* ways taken earlier in the batch */
	int32_t *key_at;		/* which batch key took each way */
	uint64_t max_stamp;
	int err;
	bool stale;
	uint32_t op0, nops;
	uint32_t nkeys;			/* remote keys of the batch in it */
	int only;			/* >= 0: the hinted way, the one header read */
	struct pc_keyhash hinted;	/* the key it was read for */
};

struct skey {
	struct sm_kc kc;
	int cls;
	struct sbucket *b;
	int way;
	bool evicts, written;
	bool superseded;		/* a later copy of the key took its way */
	bool raced;			/* lost its slot to a writer or the spill task */
	uint32_t by;			/* that later copy */
	uint64_t old_seq, cas_old;
	uint64_t claim;			/* the word it claims the slot with (CAS) */
	uint32_t tag;
	uint8_t *mem;			/* direct: the owner's memory of class cls */
	uint8_t hdr[SLOT_HEADER_BYTES];	/* the header it writes */
};

struct btable {
	struct arena *a;		/* the batch's: buckets live as long as it */
	struct sbucket *v;
	size_t n;
	int32_t *slots;
	size_t mask;
};

static int btable_init(struct btable *t, struct arena *a, size_t n)
{
	size_t cap = 16;

	t->n = 0;
	t->a = a;
	while (cap < 2 * n)
		cap *= 2;
	t->v = arena_alloc(a, n * sizeof(*t->v));
	t->slots = arena_alloc(a, cap * sizeof(*t->slots));
	if (!t->v || !t->slots)
		return -ENOMEM;
	memset(t->slots, 0xff, cap * sizeof(*t->slots));
	t->mask = cap - 1;
	return 0;
}

static struct sbucket *btable_get(struct btable *t, uint32_t owner, int cls, uint64_t bucket,
				  uint32_t ways)
{
	size_t h = (size_t)((bucket * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)owner << 8) ^ (uint64_t)cls);
	struct sbucket *b;

	for (h &= t->mask; t->slots[h] >= 0; h = (h + 1) & t->mask) {
		b = &t->v[t->slots[h]];
		if (b->owner == owner && b->cls == cls && b->bucket == bucket)
			return b;
	}
	b = &t->v[t->n];
	/* One block: the decoded headers (filled before they are read), then key_at
	 * (read only where reserved says). */
	*b = (struct sbucket){ .owner = owner, .cls = cls, .bucket = bucket, .ways = ways,
			       .only = -1 };
	b->dec = arena_alloc(t->a, (size_t)ways * (sizeof(*b->dec) + sizeof(*b->key_at)));
	if (!b->dec)
		return NULL;
	b->key_at = (int32_t *)(b->dec + ways);
	t->slots[h] = (int32_t)t->n++;
	return b;
}

/* The way for key i: the way an earlier copy of the same key took in this batch (the
 * later page wins; *prev gets that copy), else slot_pick_way over the headers and the
 * reservations (*prev -1). Changes nothing: take_way does, once the way is had. */
static int pick_way(const struct sbucket *b, const struct slot_geometry *g,
		    const struct skey *keys, size_t i, int32_t *prev, bool *evicts)
{
	const struct skey *k = &keys[i];

	*prev = -1;
	for (uint32_t x = 0; b->reserved && x < g->ways; x++) {
		if (b->reserved >> x & 1 && keyhash_eq(keys[b->key_at[x]].kc.h, k->kc.h)) {
			*prev = b->key_at[x];
			*evicts = keys[*prev].evicts;
			return (int)x;
		}
	}
	return slot_pick_way(b->dec, g->ways, k->kc.h, slot_predicted_way(g, k->kc.h), b->reserved,
			     evicts);
}

/* Key i takes way w as pick_way chose it. */
static void take_way(struct sbucket *b, struct skey *keys, size_t i, int w, int32_t prev,
		     bool evicts)
{
	struct skey *k = &keys[i];

	k->evicts = evicts;
	if (prev >= 0) {
		struct skey *e = &keys[prev];

		e->superseded = true;
		e->by = (uint32_t)i;
		e->evicts = false;
		k->old_seq = e->old_seq;
	} else {
		b->reserved |= 1ULL << w;
		k->old_seq = b->dec[w].seq;
	}
	b->key_at[w] = (int32_t)i;
}

static int choose_way(struct sbucket *b, const struct slot_geometry *g, struct skey *keys,
		      size_t i)
{
	bool evicts = false;
	int32_t prev = -1;
	/* read for this key alone, its way holding it: pick_way's choice */
	int w = b->only >= 0 ? b->only : pick_way(b, g, keys, i, &prev, &evicts);

	if (w >= 0)
		take_way(b, keys, i, w, prev, evicts);
	return w;
}

/* now: the clock, read once per pass. */
static uint64_t next_stamp(uint64_t now, struct sbucket *b, uint32_t ways)
{
	uint64_t s = slot_next_stamp(b->dec, ways, now);

	if (s <= b->max_stamp && b->max_stamp < UINT64_MAX)
		s = b->max_stamp + 1;
	b->max_stamp = s;
	return s;
}

/* Keys in memory this node addresses directly (its own slots, or a peer's the fabric
 * maps: sm_direct) are written in place, in two sweeps so that a batch's cache misses
 * overlap: the first finds the memory and prefetches the bucket's headers and tags,
 * the second writes. Returns false when the memory cannot be addressed: use ops. */
static bool direct_prefetch(struct slotmap *sm, uint64_t epoch, struct skey *k)
{
	const struct sm_class *cl = &k->kc.lay->cls[k->cls];
	uint8_t *mem = sm_direct(sm, epoch, k->kc.lay, k->cls);

	if (!mem)
		return false;
	k->mem = mem;
	mem += slot_offset(&cl->g, k->b->bucket, 0);
	for (uint32_t x = 0; x < cl->g.ways; x++)
		__builtin_prefetch(mem + x * cl->g.mem_stride);
	__builtin_prefetch(mem + slot_index_offset(&cl->g, k->b->bucket));
	return true;
}

/* The write itself, under the seqlock. The headers are read without it: they only
 * choose the way, and the write claims that slot from the version the choice was made
 * on (a CAS), tagging it while claimed. A slot that changed since (another writer got
 * there first) or is being written (odd seq) makes it look again, a few times, then
 * give up: never a write over a page it did not choose to replace. A claim its writer
 * left unwritten past the claim timeout is taken over (slotmap_claims.c).
 * slotmap_fill.c's fill_one chooses and writes the same way for the simulator's
 * one-call requests: a rule added here goes there too (unit.sim compares the two). */
static void set_direct(struct slotmap *sm, uint64_t now, struct skey *keys, size_t i)
{
	struct pc_env *env = sm->st->env;
	struct skey *k = &keys[i];
	const struct sm_class *cl = &k->kc.lay->cls[k->cls];
	const struct slot_geometry *g = &cl->g;
	struct sbucket *b = k->b;
	uint8_t *way0 = k->mem + slot_offset(g, b->bucket, 0);
	uint32_t *tags = (uint32_t *)(k->mem + slot_index_offset(g, b->bucket));
	int w = 0, ret = -EBUSY;

	for (int attempt = 0; attempt < SM_WRITE_ATTEMPTS && ret == -EBUSY; attempt++) {
		bool evicts = false;
		int32_t prev;

		if (attempt)
			pc_env_yield(env);
		for (uint32_t x = 0; x < g->ways; x++)
			slot_header_peek(way0 + x * g->mem_stride, &b->dec[x]);
		w = pick_way(b, g, keys, i, &prev, &evicts);
		if (w < 0) {
			ret = w;
			break;
		}
		if (b->dec[w].seq & 1 &&
		    !sm_claim_expired(sm, k->kc.lay->node, k->cls, b->bucket, (uint32_t)w, b->dec[w].seq))
			continue;	/* being written: look again */
		ret = slot_write_local_at(way0 + (uint64_t)w * g->mem_stride, g, k->kc.h,
					  k->kc.pg->data, (uint32_t)k->kc.pg->len,
					  next_stamp(now, b, g->ways), b->dec[w].seq,
					  sm_claim_word(sm, now, b->dec[w].seq), &tags[w]);
		if (!ret)
			take_way(b, keys, i, w, prev, evicts);
	}
	if (!ret) {
		k->way = w;
		k->written = true;
	}
	k->kc.err = ret;
	k->kc.state = SM_DONE;
}

/* The way a key alone in its bucket was last seen in, where its bucket holds pages
 * (a header-only bucket is one READ anyway); -1: read every way. */
static int hinted_way(struct slotmap *sm, const struct skey *k)
{
	const struct sm_class *cl = &k->kc.lay->cls[k->cls];
	int w;

	if (k->b->nkeys != 1 || !slot_has_payload(&cl->g))
		return -1;
	w = sm_hint_get(sm, k->kc.lay, k->kc.h, k->cls);
	return w < (int)cl->g.ways ? w : -1;
}

/* Remote phase A, one round trip: the headers of every bucket not read yet, one
 * READ per way, or with hints the hinted way's alone. Returns whether a hinted
 * header no longer held its key (that bucket is left to read whole). */
static bool read_bucket_ops(struct slotmap *sm, struct btable *t, struct skey *keys, size_t n,
			    bool hints)
{
	struct store_svc *st = sm->st;
	struct pc_op *ops;
	uint32_t nops = 0;
	bool missed = false;

	for (size_t j = 0; j < t->n; j++)
		if (!t->v[j].decoded)
			nops += t->v[j].ways;
	if (!nops)
		return false;
	ops = arena_alloc(t->a, (size_t)nops * sizeof(*ops));
	if (!ops) {
		for (size_t j = 0; j < t->n; j++)
			t->v[j].err = -ENOMEM;
		return false;
	}
	nops = 0;
	for (size_t i = 0; i < n; i++) {
		struct skey *k = &keys[i];
		struct sbucket *b = k->b;
		const struct sm_class *cl;

		if (k->kc.state != SM_PENDING || b->nops || b->decoded || b->err || b->stale)
			continue;
		cl = &k->kc.lay->cls[k->cls];
		if (!b->raw)
			b->raw = arena_alloc(t->a, (size_t)cl->g.ways * SLOT_HEADER_BYTES);
		if (!b->raw) {
			b->err = -ENOMEM;
			continue;
		}
		b->op0 = nops;
		b->only = hints ? hinted_way(sm, k) : -1;
		if (b->only >= 0) {
			b->hinted = k->kc.h;
			ops[nops++] = sm_op(PC_OP_READ, k->kc.lay,
					    sm_slot_addr(cl, b->bucket, (uint32_t)b->only), cl->rkey,
					    b->raw + (uint32_t)b->only * SLOT_HEADER_BYTES,
					    SLOT_HEADER_BYTES);
			b->nops = 1;
		} else if (slot_has_payload(&cl->g)) {
			for (uint32_t w = 0; w < cl->g.ways; w++)
				ops[nops++] = sm_op(PC_OP_READ, k->kc.lay, sm_slot_addr(cl, b->bucket, w),
						    cl->rkey, b->raw + w * SLOT_HEADER_BYTES,
						    SLOT_HEADER_BYTES);
			b->nops = cl->g.ways;
		} else {	/* headers alone lie side by side: one read */
			ops[nops++] = sm_op(PC_OP_READ, k->kc.lay, sm_slot_addr(cl, b->bucket, 0), cl->rkey,
					    b->raw, cl->g.ways * SLOT_HEADER_BYTES);
			b->nops = 1;
		}
	}
	if (nops)
		store_post(st, ops, nops);
	for (size_t j = 0; j < t->n; j++) {
		struct sbucket *b = &t->v[j];

		for (uint32_t x = 0; x < b->nops; x++) {
			int e = ops[b->op0 + x].status;

			if (e && sm_stale(e))
				b->stale = true;
			else if (e && !b->err)
				b->err = e;
		}
		if (b->nops && !b->err && !b->stale && b->only >= 0) {
			struct slot_header *h = &b->dec[b->only];

			memset(b->dec, 0, b->ways * sizeof(*b->dec));	/* the others: unread */
			slot_header_decode(b->raw + (uint32_t)b->only * SLOT_HEADER_BYTES, h);
			b->decoded = !slot_header_empty(h) && keyhash_eq(h->key, b->hinted);
			if (!b->decoded) {
				b->only = -1;
				missed = true;
			}
		} else if (b->nops && !b->err && !b->stale) {
			for (uint32_t x = 0; x < b->ways; x++)
				slot_header_decode(b->raw + x * SLOT_HEADER_BYTES, &b->dec[x]);
			b->decoded = true;
		}
		b->nops = 0;
	}
	return missed;
}

/* Remote phase A: every touched bucket's headers, hinted ways first. */
static void read_buckets(struct slotmap *sm, struct btable *t, struct skey *keys, size_t n)
{
	if (read_bucket_ops(sm, t, keys, n, true))
		read_bucket_ops(sm, t, keys, n, false);
}

/* The slot WRITE's bytes are about to go (pc_op.prepare): the payload's checksum
 * into the header now, so that the sum's read of the page and the send's are one
 * pass through the cache, and over tcp the owner takes in the pages before it
 * meanwhile. Until then the header carries the virtual checksum, which no reader's
 * gate accepts for a real payload: a header sent unprepared is a miss, not a hit. */
static void slot_prepare(void *arg, const struct pc_op *op)
{
	struct skey *k = arg;

	(void)op;
	slot_header_put_checksum(k->hdr, slot_checksum(k->kc.h, k->kc.pg->data,
						       (uint32_t)k->kc.pg->len));
}

/* Remote phases B (optional CAS claim) and C (the writes). */
static void write_remote(struct slotmap *sm, struct arena *a, struct skey *keys, size_t n)
{
	struct store_svc *st = sm->st;
	bool claim = st->topo->store.slot_cas_claim;
	struct pc_op *ops;
	uint32_t nops = 0;
	size_t npend = 0;

	for (size_t i = 0; i < n; i++)
		npend += keys[i].kc.state == SM_PENDING && !keys[i].superseded;
	if (!npend)
		return;
	ops = arena_alloc(a, 2 * npend * sizeof(*ops));
	if (!ops) {
		for (size_t i = 0; i < n; i++)
			if (keys[i].kc.state == SM_PENDING)
				keys[i].kc.err = -ENOMEM, keys[i].kc.state = SM_DONE;
		return;
	}
	if (claim) {
		sm_phase_begin(keys, sizeof(*keys), n);
		for (size_t i = 0; i < n; i++) {
			struct skey *k = &keys[i];
			const struct sm_class *cl;

			if (k->kc.state != SM_PENDING || k->superseded)
				continue;
			/* someone is writing it right now, unless they left it for dead */
			if (k->old_seq & 1 && !sm_claim_expired(sm, k->kc.owner, k->cls, k->b->bucket,
							       (uint32_t)k->way, k->old_seq)) {
				k->kc.err = -EBUSY;
				k->kc.state = SM_DONE;
				k->raced = true;
				continue;
			}
			cl = &k->kc.lay->cls[k->cls];
			k->kc.op0 = nops;
			k->kc.nops = 1;
			ops[nops] = sm_op(PC_OP_CAS, k->kc.lay,
					  sm_slot_addr(cl, k->b->bucket, (uint32_t)k->way), cl->rkey,
					  &k->cas_old, 8);
			ops[nops].compare = k->old_seq;
			ops[nops++].swap = k->claim;
		}
		sm_phase_post(sm, keys, sizeof(*keys), n, ops, nops);
		for (size_t i = 0; i < n; i++) {
			struct skey *k = &keys[i];

			if (k->kc.state != SM_PENDING || k->superseded)
				continue;
			if (k->cas_old != k->old_seq) {
				k->kc.err = -EBUSY;	/* another writer got there first */
				k->kc.state = SM_DONE;
				k->raced = true;
			}
		}
		nops = 0;
	}
	sm_phase_begin(keys, sizeof(*keys), n);
	for (size_t i = 0; i < n; i++) {
		struct skey *k = &keys[i];
		const struct sm_class *cl;
		uint64_t addr;

		if (k->kc.state != SM_PENDING || k->superseded)
			continue;
		cl = &k->kc.lay->cls[k->cls];
		addr = sm_slot_addr(cl, k->b->bucket, (uint32_t)k->way);
		k->tag = slot_tag(k->kc.h);
		k->kc.op0 = nops;
		k->kc.nops = 2;
		ops[nops] = sm_slot_op(PC_OP_WRITE, k->kc.lay, cl, addr, k->hdr, k->kc.pg->data,
				       (uint32_t)k->kc.pg->len,
				       store_lreg(st, k->kc.pg->data, k->kc.pg->len));
		if (slot_has_payload(&cl->g) && k->kc.pg->len) {
			ops[nops].prepare = slot_prepare;
			ops[nops].prepare_arg = k;
		}
		nops++;
		ops[nops++] = sm_op(PC_OP_WRITE, k->kc.lay,
				    sm_index_addr(cl, k->b->bucket) + (uint64_t)k->way * SLOT_TAG_BYTES,
				    cl->rkey, &k->tag, SLOT_TAG_BYTES);
	}
	sm_phase_post(sm, keys, sizeof(*keys), n, ops, nops);
	for (size_t i = 0; i < n; i++) {
		struct skey *k = &keys[i];

		if (k->kc.state == SM_PENDING && !k->superseded) {
			k->written = true;
			k->kc.state = SM_DONE;
			/* a get reads it there, and not the key it displaced */
			if (k->evicts)
				sm_hint_drop(sm, k->b->dec[k->way].key, k->cls, (uint32_t)k->way);
			sm_hint_put(sm, k->kc.lay, k->kc.h, k->cls, (uint32_t)k->way);
		}
	}
}

/* One pass over the pending keys: in place, then through ops. Returns whether it
 * posted ops (only an op can find an owner restarted: sm_retry_stale). */
static bool set_pass(struct slotmap *sm, struct arena *a, struct skey *keys, size_t n)
{
	struct btable t;
	uint64_t now, epoch, copied = 0;
	bool remote = false, claim = sm->st->topo->store.slot_cas_claim;

	if (btable_init(&t, a, n)) {
		for (size_t i = 0; i < n; i++)
			if (keys[i].kc.state == SM_PENDING)
				keys[i].kc.err = -ENOMEM, keys[i].kc.state = SM_DONE;
		return false;
	}
	sm_bind_layouts(sm, keys, sizeof(*keys), n);
	now = pc_env_now(sm->st->env);
	epoch = sm_direct_epoch(sm);
	for (size_t i = 0; i < n; i++) {
		struct skey *k = &keys[i];
		const struct sm_class *cl;

		if (k->kc.state != SM_PENDING)
			continue;
		k->mem = NULL;
		k->cls = sm_class_for(k->kc.lay, k->kc.pg->len);
		if (k->cls < 0) {
			k->kc.err = -EFBIG;
			k->kc.state = SM_DONE;
			continue;
		}
		cl = &k->kc.lay->cls[k->cls];
		k->b = btable_get(&t, k->kc.owner, k->cls, slot_bucket_of(&cl->g, k->kc.h), cl->g.ways);
		if (!k->b) {
			k->kc.err = -ENOMEM;
			k->kc.state = SM_DONE;
			continue;
		}
		/* a bucket's keys all go one way: their headers are known, not read */
		if (direct_prefetch(sm, epoch, k)) {
			k->b->decoded = true;
		} else {
			k->b->nkeys++;
			remote = true;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (keys[i].kc.state == SM_PENDING && keys[i].mem) {
			set_direct(sm, now, keys, i);
			copied += keys[i].written ? keys[i].kc.pg->len : 0;
		}
	}
	if (copied)	/* the pass's local copies, charged once */
		pc_env_copy(sm->st->env, copied);
	if (!remote)	/* every key went in place (superseded ones are done too) */
		return false;
	read_buckets(sm, &t, keys, n);
	for (size_t i = 0; i < n; i++) {
		struct skey *k = &keys[i];
		const struct sm_class *cl;
		struct slot_header h;
		int w;

		if (k->kc.state != SM_PENDING)
			continue;
		if (k->b->err || k->b->stale) {	/* never write blind */
			k->kc.err = k->b->err;
			k->kc.stale = k->b->stale;
			k->kc.state = SM_DONE;
			continue;
		}
		cl = &k->kc.lay->cls[k->cls];
		w = choose_way(k->b, &cl->g, keys, i);
		if (w < 0) {
			k->kc.err = w;	/* the batch filled this bucket */
			k->kc.state = SM_DONE;
			continue;
		}
		k->way = w;
		/* Even seq, past the one we read: with a claim, the one it commits. */
		k->claim = claim ? sm_claim_word(sm, now, k->old_seq) : 0;
		/* the payload's checksum follows as the WRITE goes (slot_prepare) */
		slot_header_make(&h, claim ? k->claim + 1 : (k->old_seq | 1) + 1, (uint32_t)k->cls, k->kc.h,
				 NULL, (uint32_t)k->kc.pg->len, next_stamp(now, k->b, cl->g.ways));
		slot_header_encode(&h, k->hdr);
	}
	write_remote(sm, a, keys, n);
	/* A superseded copy is settled by its successor, in this pass or a retry. */
	for (size_t i = 0; i < n; i++)
		if (keys[i].superseded)
			keys[i].kc.state = SM_DONE;
	return true;
}

/* Keys that lost their slot in the pass (a claim taken, a seq moved: another writer,
 * or the spill task evicting a page meanwhile) look again in a new pass, up to
 * SM_RACE_PASSES times; the slot they chose is no longer the one they read. */
#define SM_RACE_PASSES 3

static bool retry_raced(struct skey *keys, size_t n)
{
	bool again = false;

	for (size_t i = 0; i < n; i++) {
		struct skey *k = &keys[i];

		if (!k->raced)
			continue;
		k->raced = k->evicts = k->written = false;
		k->kc.err = 0;
		k->kc.state = SM_PENDING;
		again = true;
	}
	return again;
}

int slotmap_set(struct store_mode *m, struct pc_page *pages, size_t n)
{
	struct slotmap *sm = sm_of(m);
	struct store_svc *st = sm->st;
	struct arena *a = arena_take(&st->arenas);
	struct skey *keys = a ? arena_alloc(a, n * sizeof(*keys)) : NULL;
	uint64_t evicted = 0, written = 0, oversize = 0, failed = 0;
	int stored = 0;

	if (!keys) {
		arena_give(&st->arenas, a);
		return -ENOMEM;
	}
	sm_keys_init(sm, keys, sizeof(*keys), pages, n);
	for (size_t i = 0; i < n; i++) {
		struct pc_page *pg = &pages[i];

		/* what is read before a pass sets it; the rest is set where it is used */
		keys[i].b = NULL;
		keys[i].mem = NULL;
		keys[i].evicts = keys[i].written = keys[i].superseded = keys[i].raced = false;
		if (pg->status)
			continue;
		if ((!pg->data && pg->len && !sm->payload_free) || pg->len > UINT32_MAX) {
			pg->status = -EINVAL;
			keys[i].kc.state = SM_DONE;
		}
	}
	/* a restarted owner is looked up again once (sm_retry_stale), a lost race a few
	 * times */
	for (int stale_retried = 0, races = 0;;) {
		bool again;

		if (!set_pass(sm, a, keys, n))
			break;
		again = sm_retry_stale(sm, keys, sizeof(*keys), n, stale_retried);
		stale_retried |= again;
		if (races < SM_RACE_PASSES && retry_raced(keys, n)) {
			races++;
			again = true;
		}
		if (!again)
			break;
	}
	for (size_t i = 0; i < n; i++) {
		struct skey *k = &keys[i];
		struct pc_page *pg = k->kc.pg;

		if (pg->status)		/* bad arguments */
			continue;
		if (!k->superseded)
			evicted += k->written && k->evicts;
		while (k->superseded)	/* a later copy of the key decides */
			k = &keys[k->by];
		if (k->written) {
			stored++;
			written += pg->len;
			continue;
		}
		pg->status = k->kc.err ? k->kc.err : -EIO;
		if (pg->status == -EFBIG)
			oversize++;
		else
			failed++;
	}
	/* once per batch: an atomic add per key is a visible share of a simulated set */
	METRIC_ADD(st, evictions, evicted);
	METRIC_ADD(st, write_requests, stored);
	METRIC_ADD(st, bytes_written, written);
	if (oversize)
		METRIC_ADD(st, skipped_oversize, oversize);
	if (failed)
		METRIC_ADD(st, write_failures, failed);
	arena_give(&st->arenas, a);
	return stored;
}
