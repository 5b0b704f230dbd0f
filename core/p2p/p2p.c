/*
 * p2p.c - p2p mode, the seed's default: every node publishes pages into its own
 * published pool (registered host memory, fixed-size blocks per size class, LRU),
 * and a distributed directory, sharded over the same ring as slotmap's owners, maps
 * key -> {node, address, region key, length}.
 *
 *   set:    write the page into a block of this node's pool (evicting its LRU tail
 *           when full), then one DIR_UPDATE per directory shard carrying the batch's
 *           entries and the evicted blocks' removals: one round trip.
 *   get:    one DIR_GET per shard, then one batched READ of header and payload from
 *           the publishing nodes, through the same gate as slotmap (a stale entry is
 *           another key's header or a failed checksum: a clean miss): two round trips.
 *   exists: the directory alone: one round trip.
 *
 * Every publication carries a rising number (gen): a shard keeps the newest entry
 * for a key, and a removal names one publication exactly, so updates that cross
 * (an eviction and a new publish into the same block, a handoff and a fresh put)
 * never lose the newer one. Readers remove entries whose block moved on or whose
 * node restarted or refuses connections; a node that is merely slow keeps them.
 *
 * When the ring changes, entries whose shard moved are handed to their new owner
 * (and so is any put that reaches a shard which no longer owns the key), entries
 * naming a departed node are dropped (and not taken again from a late handoff or
 * publish), and each node publishes again its own pages whose shard departed.
 * Slotmap has nothing to move.
 *
 * The pool's LRU sees publishes and this node's own reads directly; other nodes read
 * it one-sided, unseen, and tell the publisher afterwards, in batches (p2p_notes.c).
 *
 * Not for: slotmap (slotmap*.c) or the tiered pool (tier.c).
 */
#include "p2p_int.h"

/* The smallest size class a page of len bytes fits, or -1. */
static int class_for(const struct pc_store_cfg *cfg, uint64_t len)
{
	for (uint32_t c = 0; c < cfg->nr_classes; c++)
		if (cfg->size_classes[c] >= len)
			return (int)c;
	return -1;
}

/* ------------------------------------------------------------------ set */

int p2p_set(struct store_mode *m, struct pc_page *pages, size_t n)
{
	struct p2p *p = p2p_of(m);
	struct store_svc *st = p->st;
	const struct pc_store_cfg *cfg = &st->topo->store;
	struct upd *u = calloc(2 * n + 1, sizeof(*u));
	int *status = malloc((2 * n + 1) * sizeof(*status)), stored = 0;
	size_t nu = 0;

	if (!u || !status) {
		free(u);
		free(status);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct pc_page *pg = &pages[i];
		struct pc_keyhash key;
		struct p2p_class *k;
		uint32_t b;
		int c;

		pg->status = 0;
		if ((!pg->key && pg->key_len) || (!pg->data && pg->len && !st->payload_free)) {
			pg->status = -EINVAL;
			continue;
		}
		if (st->self == PC_PEER_NONE) {
			pg->status = -EOPNOTSUPP;	/* p2p publishes into the writer's own pool */
			METRIC_ADD(st, write_failures, 1);
			continue;
		}
		c = class_for(cfg, pg->len);
		if (c < 0) {
			pg->status = -EFBIG;
			METRIC_ADD(st, skipped_oversize, 1);
			continue;
		}
		key = keyhash_of(pg->key, pg->key_len);
		k = &p->cls[c];
		p2p_unpublish(p, key);
		b = p2p_take_block(p, (uint32_t)c, &u[nu]);
		if (u[nu].del)
			nu++;
		if (b == POOL_NONE || slot_write_local(pool_block(k->pool, b), &k->g, key, pg->data,
						       (uint32_t)pg->len, pc_env_now(st->env))) {
			if (b != POOL_NONE)
				pool_unstage(k->pool, b);
			pg->status = -EBUSY;
			METRIC_ADD(st, write_failures, 1);
			continue;
		}
		pc_env_copy(st->env, pg->len);
		__atomic_store_n(&k->gen[b], __atomic_add_fetch(&p->gen, 1, __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
		if (pool_commit(k->pool, b, key, (uint32_t)pg->len, 0, false, false)) {
			/* another thread published or is evicting the key: busy, not stored */
			pg->status = -EBUSY;
			METRIC_ADD(st, write_failures, 1);
			continue;
		}
		u[nu++] = (struct upd){ .key = key, .page = i,
					.loc = p2p_own_loc(p, (uint32_t)c, b, (uint32_t)pg->len) };
	}
	if (p2p_send_updates(p, u, nu, status))
		p2p_handoff_soon(p);
	for (size_t j = 0; j < nu; j++) {
		struct pc_page *pg;

		if (u[j].del)
			continue;
		pg = &pages[u[j].page];
		if (status[j]) {
			/* no shard knows it: nobody could find it, so free the block if it
			 * still holds this publication (a later page of the batch, or
			 * another thread, may have published the key into it since) */
			pg->status = status[j];
			p2p_free_publication(p, u[j].key, &u[j].loc);
			METRIC_ADD(st, write_failures, 1);
			continue;
		}
		METRIC_ADD(st, write_requests, 1);
		METRIC_ADD(st, bytes_written, pg->len);
	}
	for (size_t i = 0; i < n; i++)
		stored += !pages[i].status;
	free(u);
	free(status);
	return stored;
}

/* ------------------------------------------------------------------ get, exists */

int p2p_get(struct store_mode *m, struct pc_page *pages, size_t n)
{
	struct p2p *p = p2p_of(m);
	struct store_svc *st = p->st;
	struct pkey *k = calloc(n ? n : 1, sizeof(*k));
	struct pc_op *ops = calloc(n ? n : 1, sizeof(*ops));
	struct upd *stale = calloc(n ? n : 1, sizeof(*stale));
	uint32_t *at = calloc(n ? n : 1, sizeof(*at)), nops = 0;
	int hits = 0, *sst = NULL;
	size_t nstale = 0;

	if (!k || !ops || !stale || !at) {
		hits = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct pc_page *pg = &pages[i];

		pg->status = 0;
		if ((!pg->key && pg->key_len) || (!pg->data && pg->cap && !st->payload_free) ||
		    pg->len > pg->cap || pg->len > UINT32_MAX) {
			pg->status = -EINVAL;
			k[i].state = 2;
			continue;
		}
		k[i].key = keyhash_of(pg->key, pg->key_len);
	}
	p2p_lookup(p, k, n);
	/* Phase 2: header and payload from the publishing nodes; own pages locally. */
	for (size_t i = 0; i < n; i++) {
		struct pc_page *pg = &pages[i];
		struct dir_loc *l = &k[i].loc;
		uint32_t cap = pg->cap > UINT32_MAX ? UINT32_MAX : (uint32_t)pg->cap, len = 0, b;
		uint8_t *blk;

		if (k[i].state != 1 || k[i].err)
			continue;
		k[i].state = 2;
		if ((pg->len && l->len != pg->len) || l->len > cap) {
			k[i].verdict = SLOT_MISS_LENGTH;	/* known from the entry: no read */
			continue;
		}
		if (l->node == st->self) {
			blk = p2p_own_block(p, l, &b);
			k[i].verdict = !blk ? SLOT_MISS_ABSENT :
				slot_read_local(blk, k[i].key, (uint32_t)pg->len, l->len,
						st->payload_free ? NULL : pg->data, &len);
			if (k[i].verdict == SLOT_HIT) {
				pg->len = len;
				pool_touch(p->cls[l->cls].pool, b);
				pc_env_copy(st->env, len);
			}
			if (blk)	/* read locally, counted as slotmap counts its own */
				METRIC_ADD(st, bytes_read, SLOT_HEADER_BYTES + len);
			if (k[i].verdict == SLOT_MISS_ABSENT || k[i].verdict == SLOT_MISS_OTHER_KEY)
				stale[nstale++] = (struct upd){ .key = k[i].key, .loc = *l, .del = true };
			continue;
		}
		ops[nops] = (struct pc_op){ .kind = PC_OP_READ, .peer = l->node, .peer_inc = l->inc,
					    .rkey = l->rkey, .raddr = l->addr, .head = k[i].hdr,
					    .head_len = SLOT_HEADER_BYTES, .local = pg->data, .len = l->len,
					    .lreg = store_lreg(st, pg->data, pg->cap) };
		if (st->payload_free) {
			ops[nops] = (struct pc_op){ .kind = PC_OP_READ, .peer = l->node, .peer_inc = l->inc,
						    .rkey = l->rkey, .raddr = l->addr, .local = k[i].hdr,
						    .len = SLOT_HEADER_BYTES, .virt_len = l->len };
		}
		k[i].state = 1;
		at[nops++] = (uint32_t)i;
	}
	if (nops) {
		store_post(st, ops, nops);
		for (uint32_t j = 0; j < nops; j++)
			if (!ops[j].status)
				METRIC_ADD(st, bytes_read, pc_op_bytes(&ops[j]) + ops[j].virt_len);
	}
	for (uint32_t j = 0; j < nops; j++) {
		struct pkey *x = &k[at[j]];
		struct pc_page *pg = &pages[at[j]];
		struct slot_header h;

		x->state = 2;
		if (ops[j].status) {
			/* the node restarted (its pool is new) or nothing listens there any
			 * more: the entry is stale, drop it; a node that is only slow or
			 * unreachable for now keeps its entries */
			if (ops[j].status == -ESTALE || ops[j].status == -ECONNREFUSED)
				stale[nstale++] = (struct upd){ .key = x->key, .loc = x->loc, .del = true };
			if (ops[j].status == -ESTALE)
				x->verdict = SLOT_MISS_ABSENT;
			else
				x->err = ops[j].status;
			continue;
		}
		slot_header_decode(x->hdr, &h);
		if (slot_header_empty(&h) || !keyhash_eq(h.key, x->key)) {
			/* the block moved on: this publication is gone */
			x->verdict = SLOT_MISS_OTHER_KEY;
			stale[nstale++] = (struct upd){ .key = x->key, .loc = x->loc, .del = true };
			continue;
		}
		x->verdict = st->payload_free ?
			slot_matches_virtual(&h, x->key, (uint32_t)pg->len, x->loc.len) :
			slot_matches(&h, pg->data, x->key, (uint32_t)pg->len, x->loc.len);
		if (x->verdict == SLOT_HIT)
			pg->len = h.payload_len;
	}
	p2p_note_reads(p, k, at, ops, nops);
	for (size_t i = 0; i < n; i++) {
		struct pc_page *pg = &pages[i];

		if (pg->status)
			goto next;
		if (k[i].err) {
			pg->status = k[i].err;
			METRIC_ADD(st, miss_unreachable, 1);
		} else if (k[i].verdict == SLOT_HIT) {
			hits++;
			METRIC_ADD(st, hits, 1);
			METRIC_ADD(st, hit_bytes, pg->len);
		} else {
			static const size_t field[SLOT_NR_VERDICTS] = {
				[SLOT_MISS_ABSENT] = offsetof(struct pc_metrics, miss_absent),
				[SLOT_MISS_OTHER_KEY] = offsetof(struct pc_metrics, miss_other_key),
				[SLOT_MISS_TORN] = offsetof(struct pc_metrics, miss_torn),
				[SLOT_MISS_LENGTH] = offsetof(struct pc_metrics, miss_length),
				[SLOT_MISS_CHECKSUM] = offsetof(struct pc_metrics, miss_checksum),
			};

			pg->status = -ENOENT;
			pc_stat_add((uint64_t *)((char *)&st->metrics + field[k[i].verdict]), 1);
		}
next:
		if (pg->status)
			pg->len = 0;
	}
	METRIC_ADD(st, read_requests, n);
	/* entries naming a node that is gone or restarted: tell their shards (rare);
	 * a client's word does not change a shard (store_rpc.c): the nodes' reads will */
	if (nstale && st->self != PC_PEER_NONE && (sst = malloc(nstale * sizeof(*sst))))
		if (p2p_send_updates(p, stale, nstale, sst))
			p2p_handoff_soon(p);
out:
	free(sst);
	free(k);
	free(ops);
	free(stale);
	free(at);
	return hits;
}

int p2p_exists(struct store_mode *m, struct pc_page *pages, size_t n)
{
	struct p2p *p = p2p_of(m);
	struct pkey *k = calloc(n ? n : 1, sizeof(*k));
	int present = 0;

	if (!k)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		pages[i].status = 0;
		if (!pages[i].key && pages[i].key_len) {
			pages[i].status = -EINVAL;
			k[i].state = 2;
			continue;
		}
		k[i].key = keyhash_of(pages[i].key, pages[i].key_len);
	}
	p2p_lookup(p, k, n);
	for (size_t i = 0; i < n; i++) {
		if (pages[i].status)
			continue;
		if (k[i].err)
			pages[i].status = k[i].err;
		else if (k[i].state != 1 || (pages[i].len && k[i].loc.len != pages[i].len))
			pages[i].status = -ENOENT;
		else
			present++;
	}
	METRIC_ADD(p->st, exists_requests, n);
	METRIC_ADD(p->st, exists_hits, present);
	free(k);
	return present;
}

/* ------------------------------------------------------------------ open, close */

/* A shard keeps at most this many entries per publishing node: the blocks of its
 * published pool (every node's pool has the same classes and blocks), times
 * store.dir_entries_per_block for removals still on their way. */
static uint32_t dir_node_cap(const struct pc_store_cfg *cfg)
{
	uint64_t blocks = 0;

	for (uint32_t c = 0; c < cfg->nr_classes; c++)
		blocks += slot_class_blocks(cfg, c);
	blocks *= cfg->dir_entries_per_block;
	return blocks > UINT32_MAX ? UINT32_MAX : (uint32_t)blocks;
}

static void p2p_close(struct store_mode *m);

static int p2p_open(struct store_svc *st, struct store_mode **out, char *err, size_t errlen)
{
	const struct pc_store_cfg *cfg = &st->topo->store;
	struct p2p *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return -ENOMEM;
	p->base.ops = &p2p_mode_ops;
	p->st = st;
	ret = dir_init(&p->dir, st->topo->nr_nodes, dir_node_cap(cfg));
	if (ret) {
		free(p);
		return ret;
	}
	pthread_mutex_init(&p->tasks_lock, NULL);
	pthread_mutex_init(&p->touch_lock, NULL);
	*out = &p->base;
	if (st->self == PC_PEER_NONE)
		return 0;	/* a client: no pool, no shard */
	p->nr_classes = cfg->nr_classes;
	for (uint32_t c = 0; c < cfg->nr_classes; c++) {
		struct p2p_class *k = &p->cls[c];
		uint64_t blocks;

		/* a block is one slot; the same memory per node as slotmap's slots */
		ret = slot_geometry_init(&k->g, c, cfg->size_classes[c], 1, 1, 0);
		blocks = slot_class_blocks(cfg, c);
		if (!ret && (!blocks || blocks > KEYMAP_MAX))
			ret = -EINVAL;
		if (st->payload_free)
			slot_geometry_drop_payload(&k->g);
		if (!ret)
			ret = pool_open(st->env, (uint32_t)blocks, (uint32_t)k->g.mem_stride, 64, false,
					&k->pool);
		if (!ret && !(k->gen = calloc(blocks, sizeof(*k->gen))))
			ret = -ENOMEM;
		if (!ret) {
			k->reg = (struct pc_region){ .addr = k->pool->mem, .len = k->pool->mem_bytes,
						     .access = PC_ACCESS_REMOTE_READ };
			ret = pc_fabric_reg(st->fabric, &k->reg);
			if (ret)
				k->reg.len = 0;
		}
		if (ret) {
			snprintf(err, errlen, "p2p: cannot set up the %llu-byte class of its published pool: %s",
				 (unsigned long long)cfg->size_classes[c], strerror(-ret));
			p2p_close(&p->base);
			*out = NULL;
			return ret;
		}
		pc_info("published pool ready: %llu blocks of %llu B for pages up to %llu B",
			(unsigned long long)blocks, (unsigned long long)k->g.stride,
			(unsigned long long)cfg->size_classes[c]);
	}
	return 0;
}

static void p2p_close(struct store_mode *m)
{
	struct p2p *p = p2p_of(m);

	if (!p)
		return;
	pthread_mutex_lock(&p->tasks_lock);
	__atomic_store_n(&p->closing, true, __ATOMIC_RELEASE);	/* no job starts from here */
	pthread_mutex_unlock(&p->tasks_lock);
	for (uint32_t i = 0; i < p->nr_jobs; i++) {
		pc_env_join(p->st->env, p->jobs[i]->task);
		free(p->jobs[i]);
	}
	for (uint32_t c = 0; c < PC_MAX_CLASSES; c++) {
		if (p->cls[c].reg.len)
			pc_fabric_dereg(p->st->fabric, &p->cls[c].reg);
		pool_close(p->cls[c].pool);
		free(p->cls[c].gen);
	}
	dir_fini(&p->dir);
	pthread_mutex_destroy(&p->tasks_lock);
	pthread_mutex_destroy(&p->touch_lock);
	free(p);
}

static void p2p_metrics(struct store_mode *mode, struct pc_metrics *m)
{
	struct p2p *p = p2p_of(mode);

	for (uint32_t c = 0; c < p->nr_classes; c++) {
		struct pool_usage u;

		pool_usage(p->cls[c].pool, &u);
		m->pool_keys += u.valid;
	}
	m->dir_entries += dir_size(&p->dir);
	m->remote_touches += __atomic_load_n(&p->touched, __ATOMIC_RELAXED);
	m->orphans_freed += __atomic_load_n(&p->orphans, __ATOMIC_RELAXED);
}

static int p2p_rpc(struct store_mode *m, uint32_t from, uint16_t opcode, const void *req, size_t len,
		   struct pc_msg *resp)
{
	struct p2p *p = p2p_of(m);
	bool strays = false;
	int ret;

	switch (opcode) {
	case PC_RPC_DIR_UPDATE:
		ret = p2p_shard_update(p, req, len, &strays, resp);
		if (strays)
			p2p_handoff_soon(p);
		return ret;
	case PC_RPC_P2P_TOUCH:
		return p->st->self == PC_PEER_NONE ? -EOPNOTSUPP : p2p_on_notes(p, from, req, len);
	case PC_RPC_DIR_GET:
		return p2p_shard_get(p, req, len, resp);
	default:
		return -EOPNOTSUPP;
	}
}

static void mode_member_changed(struct store_mode *m, uint32_t node, bool member, struct ring *old)
{
	p2p_member_changed(p2p_of(m), node, member, old);
}

/* The published pool takes the node's slot segment; its blocks are what it maps. */
static void p2p_footprint(struct store_mode *m, struct store_footprint *out)
{
	struct p2p *p = p2p_of(m);

	out->cache_bytes += p->st->topo->store.global_segment_size;
	for (uint32_t c = 0; c < p->nr_classes; c++)
		out->mem_bytes += p->cls[c].pool->mem_bytes;
}

/* No slots: the published pool's size is pool_keys in the counters. */
static void p2p_occupancy(struct store_mode *m, struct store_occupancy *out)
{
	(void)m;
	*out = (struct store_occupancy){ 0 };
}

/* A get and its set are two batch calls here: the pool's placement is the owner's
 * to decide, over RPCs. */
static int p2p_lookup_fill(struct store_mode *m, struct pc_page *pages, size_t n, bool prefix,
			   size_t *filled, uint32_t *owners)
{
	(void)m;
	(void)owners;
	(void)pages;
	(void)n;
	(void)prefix;
	*filled = 0;
	return -EOPNOTSUPP;
}

const struct mode_ops p2p_mode_ops = {
	.name = "p2p",
	.open = p2p_open,
	.close = p2p_close,
	.set = p2p_set,
	.get = p2p_get,
	.exists = p2p_exists,
	.lookup_fill = p2p_lookup_fill,
	.rpc = p2p_rpc,
	.metrics = p2p_metrics,
	.member_changed = mode_member_changed,
	.footprint = p2p_footprint,
	.occupancy = p2p_occupancy,
};
