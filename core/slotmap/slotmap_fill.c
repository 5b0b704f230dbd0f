/*
 * slotmap_fill.c - a lookup and its fill, decided key by key in place.
 *
 * A serving engine looks a request's pages up and then stores the ones that missed
 * (with prefix semantics every page from the first miss on). When nothing runs
 * between the two (the simulator without its time model) and every key's slots are
 * memory this node addresses (sm_direct), the pair is the same decisions as
 * slotmap_get then slotmap_set make for keys they read and write in place: the same
 * ring, bucket, tag, gate (slot_read_local), way choice (slot_pick_way, with the
 * ways taken earlier in the batch reserved), stamps (slot_next_stamp) and seqlock
 * write (slot_write_local_at), taken one key after the other without the batch
 * machinery around them (arena blocks per phase, op lists, per-key state for paths
 * a key in place never takes). The counters move as the two batch calls move them.
 *
 * Only the plain case: pages whose length names their size class (or one class),
 * headers only (no payload to copy or hash), no disk under the slots anywhere,
 * valid pages. Anything else answers -EAGAIN before touching a slot, and the caller
 * makes the two batch calls.
 */
#include "slotmap_direct.h"
#include "slotmap_keys.h"

/* A key of the request. */
struct fkey {
	struct pc_keyhash h;
	uint32_t owner;
	const struct sm_layout *lay;	/* the owner's */
	const struct sm_class *cl;	/* the owner's class that holds it */
	uint8_t *mem;			/* that class's memory, addressed here */
	uint64_t bucket;
	uint8_t *slot;			/* the tagged way, when the index named one */
	uint32_t len;			/* the length given: what a miss is stored with */
};

/* A bucket the fill has written, with the ways it took (slot_pick_way's reserved
 * mask: a batch's keys never evict each other). */
struct fbucket {
	const uint8_t *mem;
	uint64_t bucket;
	uint64_t reserved;
};

/* Sweeps 1 to 4, each prefetching what the next one reads, so that a request's
 * cache misses overlap (at hundreds of nodes a key's ring entry, its owner's layout
 * and the layout's class are each a miss): every key's hash, then its owner, then
 * the owner's layout, then class, memory and bucket (the index block prefetched).
 * False when a key is not the plain case: nothing decided. */
static bool fill_plan(struct slotmap *sm, struct fkey *keys, const struct pc_page *pages,
		      size_t n)
{
	const struct ring *r = store_ring(sm->st);
	uint64_t epoch = sm_direct_epoch(sm);

	for (size_t i = 0; i < n; i++) {
		const struct pc_page *pg = &pages[i];

		if ((!pg->key && pg->key_len) || pg->len > pg->cap || pg->len > UINT32_MAX)
			return false;
		keys[i].h = keyhash_of(pg->key, pg->key_len);
		ring_prefetch(r, keys[i].h);
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t owner = ring_owner_of(r, keys[i].h);

		if (owner == RING_NONE)
			return false;
		keys[i].owner = owner;
		__builtin_prefetch(&sm->layouts[owner]);
	}
	for (size_t i = 0; i < n; i++) {
		const struct sm_layout *lay = sm_layout_of(sm, keys[i].owner);

		if (!lay)
			return false;
		keys[i].lay = lay;
		/* its head and first classes, without reading it (that would be the miss) */
		for (size_t off = 0; off < sizeof(*lay) + 2 * sizeof(lay->cls[0]); off += 64)
			__builtin_prefetch((const char *)lay + off);
	}
	for (size_t i = 0; i < n; i++) {
		const struct pc_page *pg = &pages[i];
		struct fkey *k = &keys[i];
		const struct sm_layout *lay = k->lay;
		int c;

		if (lay->spill || (lay->nr_classes > 1 && !pg->len))
			return false;
		/* with its length given, a page is in exactly one class, read and written */
		c = lay->nr_classes == 1 ? 0 : sm_class_for(lay, pg->len);
		if (c < 0 || slot_has_payload(&lay->cls[c].g) ||
		    lay->cls[c].g.page_bytes < (pg->len ? pg->len : pg->cap))
			return false;
		k->mem = sm_direct(sm, epoch, lay, c);
		if (!k->mem)
			return false;
		k->cl = &lay->cls[c];
		k->len = (uint32_t)pg->len;
		k->bucket = slot_bucket_of(&k->cl->g, k->h);
		__builtin_prefetch(k->mem + slot_index_offset(&k->cl->g, k->bucket));
	}
	return true;
}

/*
 * The buckets the fill wrote, in the order it first wrote them, and a filter of
 * 256 bits over them: a bucket whose bit is clear is new without a search. Two
 * keys of a request seldom share a bucket, so the search is rare, and nothing is
 * cleared per request but the filter.
 */
struct fbuckets {
	struct fbucket *v;
	size_t n;
	uint64_t seen[4];
};

/* The bucket's entry, made if new. */
static struct fbucket *fill_bucket(struct fbuckets *t, const struct fkey *k)
{
	uint64_t h = (k->bucket * 0x9E3779B97F4A7C15ULL) ^ (uintptr_t)k->mem;
	uint64_t *word = &t->seen[h >> 62], bit = 1ULL << (h >> 56 & 63);

	if (*word & bit)
		for (size_t i = t->n; i--;)
			if (t->v[i].mem == k->mem && t->v[i].bucket == k->bucket)
				return &t->v[i];
	*word |= bit;
	t->v[t->n] = (struct fbucket){ .mem = k->mem, .bucket = k->bucket };
	return &t->v[t->n++];
}

/* Store key k as a set writes a key in place; 0, or -errno (its page not stored).
 * *evicts: it displaced another key. */
static int fill_one(uint64_t now, uint64_t claim, struct fbucket *b, const struct fkey *k,
		    bool *evicts)
{
	const struct slot_geometry *g = &k->cl->g;
	uint8_t *way0 = k->mem + slot_offset(g, k->bucket, 0);
	uint32_t *tags = (uint32_t *)(k->mem + slot_index_offset(g, k->bucket));
	struct slot_header hdrs[SLOT_MAX_WAYS];
	int w = -1;
	int ret;

	*evicts = false;
	for (uint32_t x = 0; x < g->ways; x++)
		slot_header_peek(way0 + x * g->mem_stride, &hdrs[x]);
	/* a copy of the key earlier in the batch took a way: the later page goes there */
	for (uint32_t x = 0; b->reserved && x < g->ways; x++)
		if (b->reserved >> x & 1 && keyhash_eq(hdrs[x].key, k->h))
			w = (int)x;
	if (w < 0)
		w = slot_pick_way(hdrs, g->ways, k->h, slot_predicted_way(g, k->h), b->reserved,
				  evicts);
	if (w < 0)
		return w;
	/* A slot being written: nothing else runs meanwhile here, so a claim left by a
	 * writer that died; a set would wait it out, this gives the key up. */
	if (hdrs[w].seq & 1)
		return -EBUSY;
	ret = slot_write_local_at(way0 + (uint64_t)w * g->mem_stride, g, k->h, NULL, k->len,
				  slot_next_stamp(hdrs, g->ways, now), hdrs[w].seq,
				  slot_claim_word(hdrs[w].seq, slot_claim_claimer(claim),
						  slot_claim_deadline(claim)),
				  &tags[w]);
	if (ret)
		return ret;
	b->reserved |= 1ULL << w;
	return 0;
}

/* The fill: the pages from..n-1 that missed (all of them with prefix), with room
 * in t for a bucket per page. */
static void fill_misses(struct slotmap *sm, struct fbucket *t, struct fkey *keys,
			struct pc_page *pages, size_t from, size_t n, bool prefix)
{
	struct store_svc *st = sm->st;
	struct fbuckets written_to = { .v = t };
	uint64_t now = pc_env_now(st->env), evicted = 0, written = 0, failed = 0, stored = 0;
	uint64_t claim = sm_claim_word(sm, now, 0);	/* who claims, and until when */

	for (size_t i = from; i < n; i++) {
		const struct fkey *k = &keys[i];
		bool evicts;
		int ret;

		if (!prefix && !pages[i].status)
			continue;
		ret = fill_one(now, claim, fill_bucket(&written_to, k), k, &evicts);
		if (ret) {
			failed++;
			continue;
		}
		stored++;
		evicted += evicts;
		written += k->len;
	}
	if (written)	/* the copies a set in place would make, charged once */
		pc_env_copy(st->env, written);
	/* as slotmap_set counts them: once a call */
	METRIC_ADD(st, evictions, evicted);
	METRIC_ADD(st, write_requests, stored);
	METRIC_ADD(st, bytes_written, written);
	if (failed)
		METRIC_ADD(st, write_failures, failed);
}

int slotmap_lookup_fill(struct store_mode *m, struct pc_page *pages, size_t n, bool prefix,
			size_t *filled, uint32_t *owners)
{
	struct slotmap *sm = sm_of(m);
	struct store_svc *st = sm->st;
	struct arena *a;
	struct fkey *keys;
	struct fbucket *t;
	struct sm_get_tally tally = { .unreachable = 0 };
	uint64_t bytes = 0;
	size_t miss_from = n;

	*filled = 0;
	if (!sm->payload_free || __atomic_load_n(&sm->any_spill, __ATOMIC_RELAXED))
		return -EAGAIN;
	a = arena_take(&st->arenas);
	keys = a ? arena_alloc(a, n * sizeof(*keys)) : NULL;
	t = keys ? arena_alloc(a, n * sizeof(*t)) : NULL;
	if (!t || !fill_plan(sm, keys, pages, n)) {
		arena_give(&st->arenas, a);
		return t ? -EAGAIN : -ENOMEM;
	}
	/* sweep 5: the first way whose tag names the key, prefetched; 6: the gate on it */
	for (size_t i = 0; i < n; i++) {
		struct fkey *k = &keys[i];
		const struct slot_geometry *g = &k->cl->g;
		uint64_t match = slot_tag_match(k->mem + slot_index_offset(g, k->bucket), g->ways,
						slot_tag(k->h));

		bytes += g->index_stride;
		k->slot = match ? k->mem + slot_offset(g, k->bucket, (uint32_t)__builtin_ctzll(match)) :
				  NULL;
		if (k->slot)
			__builtin_prefetch(k->slot);
	}
	for (size_t i = 0; owners && i < n; i++)
		owners[i] = keys[i].owner;
	for (size_t i = 0; i < n; i++) {
		struct fkey *k = &keys[i];
		struct pc_page *pg = &pages[i];
		uint32_t max = pg->cap < k->cl->g.page_bytes ? (uint32_t)pg->cap :
							       (uint32_t)k->cl->g.page_bytes;
		uint32_t len = 0;
		int v = SLOT_MISS_ABSENT;

		if (k->slot) {
			v = slot_read_local(k->slot, k->h, k->len, max, NULL, &len);
			v = v == SLOT_MISS_ABSENT ? SLOT_MISS_OTHER_KEY : v;
			bytes += SLOT_HEADER_BYTES;
		}
		tally.verdict[v]++;
		if (v == SLOT_HIT) {
			bytes += len;
			tally.hit_bytes += len;
			pg->status = 0;
			pg->len = len;
		} else {
			pg->status = -ENOENT;
			pg->len = 0;
			miss_from = miss_from == n ? i : miss_from;
		}
		/* a key the fill will write: its bucket's headers, while the gates go on */
		if (v != SLOT_HIT || (prefix && miss_from < n))
			for (uint32_t x = 0; x < k->cl->g.ways; x++)
				__builtin_prefetch(k->mem + slot_offset(&k->cl->g, k->bucket, x));
	}
	if (tally.hit_bytes)	/* the copies a get in place would make, charged once */
		pc_env_copy(st->env, tally.hit_bytes);
	tally.first_phase = tally.verdict[SLOT_HIT];	/* in place: decided at once */
	sm_get_tally_add(st, &tally);
	METRIC_ADD(st, read_requests, n);
	METRIC_ADD(st, bytes_read, bytes);
	*filled = prefix ? n - miss_from : n - tally.verdict[SLOT_HIT];
	if (*filled)
		fill_misses(sm, t, keys, pages, prefix ? miss_from : 0, n, prefix);
	arena_give(&st->arenas, a);
	return (int)tally.verdict[SLOT_HIT];
}
