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
	uint32_t len;			/* the length given: what a miss is stored with */
	const struct sm_class *cl;	/* the owner's class that holds it */
	uint8_t *way0;			/* its bucket's first slot header, addressed here */
	uint8_t *index;			/* and the bucket's tags */
	uint8_t *slot;			/* the tagged way, when the index named one */
	uint32_t ways;			/* of cl->g, which the sweeps do not read */
	uint32_t max;			/* the longest page the gate lets through */
};

/* A request's keys up to this many are on the stack, which is warm whichever store
 * runs (a store's arena is cold when the simulator's nodes take turns). */
#define FILL_STACK_KEYS 64

/* A bucket the fill has written, with the ways it took (slot_pick_way's reserved
 * mask: a batch's keys never evict each other). */
struct fbucket {
	const uint8_t *way0;
	uint64_t reserved;
};

/* The key's bucket in a class's header-only slots (mem) and index; page_bytes the
 * class's, cap the caller's buffer. */
static void fill_at(struct fkey *k, uint8_t *mem, uint8_t *index, uint64_t bucket,
		    uint32_t index_stride, uint32_t ways, uint64_t page_bytes, uint64_t cap)
{
	k->way0 = mem + bucket * ways * SLOT_HEADER_BYTES;
	k->index = index + bucket * index_stride;
	k->ways = ways;
	k->max = (uint32_t)(cap < page_bytes ? cap : page_bytes);
	__builtin_prefetch(k->index);
}

/* Key k's class, memory and bucket from its owner's layout (one not in the owner's
 * sm_near entries); false when the key is not the plain case. */
static bool fill_class(struct slotmap *sm, uint64_t epoch, struct fkey *k, uint64_t cap)
{
	const struct sm_layout *lay = sm_layout_of(sm, k->owner);
	const struct slot_geometry *g;
	uint8_t *mem;
	int c;

	if (!lay || lay->spill || (lay->nr_classes > 1 && !k->len))
		return false;
	/* with its length given, a page is in exactly one class, read and written */
	c = lay->nr_classes == 1 ? 0 : sm_class_for(lay, k->len);
	if (c < 0)
		return false;
	g = &lay->cls[c].g;
	k->cl = &lay->cls[c];
	if (slot_has_payload(g) || g->page_bytes < (k->len ? k->len : cap))
		return false;
	mem = sm_direct(sm, epoch, lay, c);
	if (!mem)
		return false;
	fill_at(k, mem, mem + slot_index_offset(g, 0), slot_bucket_of(g, k->h),
		(uint32_t)g->index_stride, g->ways, g->page_bytes, cap);
	return true;
}

/* Sweeps 1 to 3, each prefetching what the next one reads, so that a request's
 * cache misses overlap (at hundreds of nodes a key's ring entry and its owner's
 * entry are each a miss): every key's hash, then its owner, then the owner's class,
 * memory and the key's bucket (sm_near; the index block prefetched). False when a
 * key is not the plain case: nothing decided. A key whose owner's entry does not
 * stand (another layout) reads the layout, unprefetched: the simulator's nodes
 * share the topology's classes, so that is the first use of a node only. */
static bool fill_plan(struct slotmap *sm, struct fkey *keys, const struct pc_page *pages,
		      size_t n, uint32_t *owners)
{
	const struct ring *r = store_ring(sm->st);
	uint64_t epoch = sm_direct_epoch(sm);
	const struct sm_near *near = sm->near;
	const uint32_t nr_classes = sm->nr_classes, nn = sm->st->topo->nr_nodes;
	int c;

	for (size_t i = 0; i < n; i++) {
		const struct pc_page *pg = &pages[i];

		if ((!pg->key && pg->key_len) || pg->len > pg->cap || pg->len > UINT32_MAX)
			return false;
		keys[i].h = keyhash_of(pg->key, pg->key_len);
		keys[i].len = (uint32_t)pg->len;
		ring_prefetch(r, keys[i].h);
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t owner = ring_owner_of(r, keys[i].h);

		if (owner == RING_NONE)
			return false;
		keys[i].owner = owner;
		if (owners)
			owners[i] = owner;
		c = nr_classes == 1 ? 0 : sm_near_class(sm, keys[i].len);
		if (c >= 0)
			__builtin_prefetch(&near[c ? (size_t)c * nn + owner : owner]);
	}
	for (size_t i = 0; i < n; i++) {
		struct fkey *k = &keys[i];
		struct sm_near e;

		c = nr_classes == 1 ? 0 : sm_near_class(sm, k->len);
		if (c < 0 || !sm_near(sm, &near[c ? (size_t)c * nn + k->owner : k->owner], epoch,
				      k->owner, (uint32_t)c, &e)) {
			if (!fill_class(sm, epoch, k, pages[i].cap))
				return false;
		} else {
			if (e.page_bytes < (k->len ? k->len : pages[i].cap))
				return false;
			k->cl = e.cl;
			fill_at(k, e.mem, e.index, slot_bucket_among(e.nr_buckets, k->h),
				e.index_stride, e.ways, e.page_bytes, pages[i].cap);
		}
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
	uint64_t h = ((uintptr_t)k->way0 >> 6) * 0x9E3779B97F4A7C15ULL;
	uint64_t *word = &t->seen[h >> 62], bit = 1ULL << (h >> 56 & 63);

	if (*word & bit)
		for (size_t i = t->n; i--;)
			if (t->v[i].way0 == k->way0)
				return &t->v[i];
	*word |= bit;
	t->v[t->n] = (struct fbucket){ .way0 = k->way0 };
	return &t->v[t->n++];
}

/* Store key k as a set writes a key in place; 0, or -errno (its page not stored).
 * *evicts: it displaced another key. */
static int fill_one(uint64_t now, uint64_t claim, struct fbucket *b, const struct fkey *k,
		    bool *evicts)
{
	const struct slot_geometry *g = &k->cl->g;
	struct slot_choice c = slot_choose_local(k->way0, SLOT_HEADER_BYTES, k->ways, k->h,
						 slot_predicted_way(g, k->h), b->reserved, now);
	int ret;

	*evicts = false;
	if (c.way < 0)
		return c.way;
	/* A slot being written: nothing else runs meanwhile here, so a claim left by a
	 * writer that died; a set would wait it out, this gives the key up. */
	if (c.seq & 1)
		return -EBUSY;
	ret = slot_write_local_at(k->way0 + (uint64_t)c.way * SLOT_HEADER_BYTES, g, k->h, NULL, k->len,
				  c.stamp, c.seq,
				  slot_claim_word(c.seq, slot_claim_claimer(claim),
						  slot_claim_deadline(claim)),
				  (uint32_t *)(void *)k->index + c.way);
	if (ret)
		return ret;
	b->reserved |= 1ULL << c.way;
	*evicts = c.evicts;
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
	struct fkey stack_keys[FILL_STACK_KEYS];
	struct fbucket stack_t[FILL_STACK_KEYS];
	struct arena *a = NULL;
	struct fkey *keys = stack_keys;
	struct fbucket *t = stack_t;
	struct sm_get_tally tally = { .unreachable = 0 };
	uint64_t bytes = 0;
	size_t miss_from = n;

	*filled = 0;
	if (!sm->payload_free || __atomic_load_n(&sm->any_spill, __ATOMIC_RELAXED))
		return -EAGAIN;
	if (n > FILL_STACK_KEYS) {
		a = arena_take(&st->arenas);
		keys = a ? arena_alloc(a, n * sizeof(*keys)) : NULL;
		t = keys ? arena_alloc(a, n * sizeof(*t)) : NULL;
	}
	if (!t || !fill_plan(sm, keys, pages, n, owners)) {
		arena_give(&st->arenas, a);
		return t ? -EAGAIN : -ENOMEM;
	}
	/* sweep 4: the first way whose tag names the key, prefetched; 5: the gate on it */
	for (size_t i = 0; i < n; i++) {
		struct fkey *k = &keys[i];
		uint64_t match = slot_tag_match(k->index, k->ways, slot_tag(k->h));

		k->slot = match ? k->way0 + (uint64_t)__builtin_ctzll(match) * SLOT_HEADER_BYTES : NULL;
		if (k->slot)
			__builtin_prefetch(k->slot);
	}
	for (size_t i = 0; i < n; i++) {
		struct fkey *k = &keys[i];
		struct pc_page *pg = &pages[i];
		uint32_t len = 0;
		int v = SLOT_MISS_ABSENT;

		bytes += slot_index_stride(k->ways);
		if (k->slot) {
			v = slot_read_local(k->slot, k->h, k->len, k->max, NULL, &len);
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
		if (v != SLOT_HIT || (prefix && miss_from < n)) {
			for (uint32_t x = 0; x < k->ways; x++)
				__builtin_prefetch(k->way0 + x * SLOT_HEADER_BYTES);
			__builtin_prefetch(&k->cl->g);
		}
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
