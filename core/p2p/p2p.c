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
 * it one-sided, unseen, and tell the publisher afterwards, in batches (p2p_jobs.c).
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

static uint64_t block_addr(const struct p2p_class *k, uint32_t b)
{
	return (uint64_t)(uintptr_t)pool_block(k->pool, b);
}

/* The directory entry for block b of class c, holding len bytes. */
struct dir_loc p2p_own_loc(const struct p2p *p, uint32_t c, uint32_t b, uint32_t len)
{
	const struct p2p_class *k = &p->cls[c];

	return (struct dir_loc){ .addr = block_addr(k, b), .inc = p->st->fabric->incarnation,
				 .gen = k->gen[b], .node = p->st->self, .rkey = k->reg.key,
				 .len = len, .cls = c };
}

/* ------------------------------------------------------------------ directory RPCs */

static void to_proto(const struct dir_loc *l, struct proto_dir_loc *o)
{
	*o = (struct proto_dir_loc){ .addr = l->addr, .inc = l->inc, .gen = l->gen, .node = l->node,
				     .rkey = l->rkey, .len = l->len, .cls = l->cls };
}

/* A location from a peer: within the topology, its class, its page size. */
static int from_proto(const struct pc_store *st, const struct proto_dir_loc *o, struct dir_loc *l)
{
	const struct pc_store_cfg *cfg = &st->topo->store;

	if (o->node >= st->topo->nr_nodes || o->cls >= cfg->nr_classes ||
	    o->len > cfg->size_classes[o->cls])
		return -EPROTO;
	*l = (struct dir_loc){ .addr = o->addr, .inc = o->inc, .gen = o->gen, .node = o->node,
			       .rkey = o->rkey, .len = o->len, .cls = o->cls };
	return 0;
}

/*
 * Put an entry into this node's shard. An entry naming a node that is not a member
 * (a handoff or a publish that crossed its leave) is taken back out: checked after
 * the put, so a leave that swaps the ring and drops the node's entries meanwhile
 * cannot miss it. When the entry replaced another node's publication of the key,
 * that node is told to free the block (it would stay until its LRU got to it).
 * 0 or -ENOMEM.
 */
int p2p_shard_put(struct p2p *p, struct pc_keyhash key, const struct dir_loc *l)
{
	struct dir_loc old;
	int ret = dir_put(&p->dir, key, l, &old);

	if (ret)
		return ret;
	if (!ring_contains(store_ring(p->st), l->node))
		dir_del_if(&p->dir, key, l);
	else if (old.node != DIR_NO_NODE)
		p2p_drop_replaced(p, key, &old);	/* a key published by two nodes: one copy */
	return 0;
}

static int on_update(struct p2p *p, const void *req, size_t len)
{
	struct proto_dir_update h;
	const uint8_t *at = (const uint8_t *)req + sizeof(h);
	size_t n;

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, req, sizeof(h));
	if (h.nput > PROTO_DIR_MAX || h.ndel > PROTO_DIR_MAX ||
	    len != sizeof(h) + (size_t)h.nput * sizeof(struct proto_dir_put) +
			   (size_t)h.ndel * sizeof(struct proto_dir_del))
		return -EPROTO;
	/* puts and removals have one shape: check them all before applying any */
	n = (size_t)h.nput + h.ndel;
	for (size_t i = 0; i < n; i++) {
		struct proto_dir_put e;
		struct dir_loc l;

		memcpy(&e, at + i * sizeof(e), sizeof(e));
		if (from_proto(p->st, &e.loc, &l))
			return -EPROTO;
	}
	for (size_t i = 0; i < n; i++) {
		struct proto_dir_put e;
		struct pc_keyhash key;
		struct dir_loc l;

		memcpy(&e, at + i * sizeof(e), sizeof(e));
		from_proto(p->st, &e.loc, &l);
		key = (struct pc_keyhash){ e.lo, e.hi };
		if (i >= h.nput) {
			dir_del_if(&p->dir, key, &l);
			continue;
		}
		if (p2p_shard_put(p, key, &l))
			return -ENOMEM;
		if (ring_owner_of(store_ring(p->st), key) != p->st->self)
			p2p_handoff_soon(p);	/* sent by a node whose ring is older or newer */
	}
	return 0;
}

static int on_get(struct p2p *p, const void *req, size_t len, struct pc_msg *resp)
{
	struct proto_dir_get h;
	const uint8_t *at = (const uint8_t *)req + sizeof(h);
	struct proto_dir_ans *out;

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, req, sizeof(h));
	if (!h.n || h.n > PROTO_DIR_MAX || len != sizeof(h) + (size_t)h.n * sizeof(struct proto_dir_key))
		return -EPROTO;
	if (pc_msg_reserve(resp, h.n * sizeof(*out)))
		return -ENOMEM;
	out = resp->data;
	for (uint32_t i = 0; i < h.n; i++, at += sizeof(struct proto_dir_key)) {
		struct proto_dir_key k;
		struct dir_loc l;

		memcpy(&k, at, sizeof(k));
		out[i] = (struct proto_dir_ans){ .status = -ENOENT };
		if (dir_get(&p->dir, (struct pc_keyhash){ k.lo, k.hi }, &l)) {
			out[i].status = 0;
			to_proto(&l, &out[i].loc);
		}
	}
	resp->len = h.n * sizeof(*out);
	return 0;
}

int p2p_rpc(struct p2p *p, uint32_t from, uint16_t opcode, const void *req, size_t len,
	    struct pc_msg *resp)
{
	(void)from;
	switch (opcode) {
	case PC_RPC_DIR_UPDATE:
		return on_update(p, req, len);
	case PC_RPC_P2P_TOUCH:
		return p->st->self == PC_PEER_NONE ? -EOPNOTSUPP : p2p_on_notes(p, req, len);
	case PC_RPC_DIR_GET:
		return on_get(p, req, len, resp);
	default:
		return -EOPNOTSUPP;
	}
}

/* Send updates to their shards: this node's own directly, the others in one RPC
 * phase. status[i] gets the outcome for u[i]. */
static void send_chunk(struct p2p *p, const struct upd *u, size_t n, int *status)
{
	struct pc_store *st = p->st;
	uint32_t nn = st->topo->nr_nodes, *owner = malloc((n ? n : 1) * sizeof(*owner));
	uint32_t *nput = calloc(nn, sizeof(*nput));
	struct ring *ring = store_ring(st);
	struct store_fanout f;

	/* a removal has the shape of a put (proto.h): one item size for both */
	if (store_fanout_init(&f, nn, sizeof(struct proto_dir_update), sizeof(struct proto_dir_put)) ||
	    !owner || !nput) {
		for (size_t i = 0; i < n; i++)
			status[i] = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		owner[i] = ring_owner_of(ring, u[i].key);
		status[i] = 0;
		if (owner[i] == RING_NONE) {
			status[i] = -EHOSTUNREACH;
			continue;
		}
		if (owner[i] == st->self) {
			if (u[i].del)
				dir_del_if(&p->dir, u[i].key, &u[i].loc);
			else if (!(status[i] = p2p_shard_put(p, u[i].key, &u[i].loc)) &&
				 store_ring(st) != ring)
				p2p_handoff_soon(p);	/* the ring moved under this batch */
			continue;
		}
		f.count[owner[i]]++;
		nput[owner[i]] += !u[i].del;
	}
	store_fanout_build(&f, PC_RPC_DIR_UPDATE);
	for (uint32_t r = 0; r < f.nr; r++) {
		uint32_t o = f.rpcs[r].peer;
		struct proto_dir_update h = { .nput = nput[o], .ndel = f.count[o] - nput[o] };

		memcpy(f.req[f.rpcs[r].peer], &h, sizeof(h));
	}
	/* puts first, then removals, each in batch order */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			struct proto_dir_put e = { .lo = u[i].key.lo, .hi = u[i].key.hi };
			void *at;

			if (owner[i] == RING_NONE || owner[i] == st->self || u[i].del != (pass == 1))
				continue;
			if (!(at = store_fanout_item(&f, owner[i]))) {
				status[i] = -ENOMEM;	/* its shard's request could not be made */
				continue;
			}
			to_proto(&u[i].loc, &e.loc);
			memcpy(at, &e, sizeof(e));
		}
	}
	if (f.nr)
		store_call(st, f.rpcs, f.nr);
	for (uint32_t r = 0; r < f.nr; r++)
		for (size_t i = 0; i < n; i++)
			if (owner[i] == f.rpcs[r].peer && !status[i])
				status[i] = f.rpcs[r].status;
out:
	store_fanout_fini(&f);
	free(nput);
	free(owner);
}

/* The same for any number of updates (a handoff or republish can be a whole shard). */
void p2p_send_updates(struct p2p *p, const struct upd *u, size_t n, int *status)
{
	for (size_t at = 0; at < n; at += PROTO_DIR_MAX)
		send_chunk(p, u + at, n - at < PROTO_DIR_MAX ? n - at : PROTO_DIR_MAX, status + at);
}

/* A page this node published: its block, if addr names one of class cls. */
uint8_t *p2p_own_block(struct p2p *p, const struct dir_loc *l, uint32_t *b)
{
	struct p2p_class *k;
	uint64_t base, off;

	if (l->cls >= p->nr_classes || l->inc != p->st->fabric->incarnation)
		return NULL;
	k = &p->cls[l->cls];
	base = block_addr(k, 0);
	off = l->addr - base;
	if (l->addr < base || off % k->pool->stride || off / k->pool->stride >= k->pool->nr_blocks)
		return NULL;
	*b = (uint32_t)(off / k->pool->stride);
	return pool_block(k->pool, *b);
}

/* ------------------------------------------------------------------ set */

/* A free block of class c, evicting the LRU tail when there is none; an evicted
 * block's removal goes into *del (del->del set). POOL_NONE when every block is busy. */
static uint32_t take_block(struct p2p *p, uint32_t c, struct upd *del)
{
	struct p2p_class *k = &p->cls[c];
	uint32_t b, v;

	del->del = false;
	if (pool_alloc(k->pool, &b, 1))
		return b;
	if (!pool_pick_victims(k->pool, &v, 1))
		return POOL_NONE;
	/* DEMOTING: its key, length and gen are stable until pool_demoted */
	*del = (struct upd){ .key = k->pool->meta[v].key, .del = true,
			     .loc = p2p_own_loc(p, c, v, k->pool->meta[v].len) };
	pool_demoted(k->pool, v, false);
	METRIC_ADD(p->st, evictions, 1);
	return pool_alloc(k->pool, &b, 1) ? b : POOL_NONE;
}

/* Forget key in every class of this node's pool (it is being published again). */
static void unpublish(struct p2p *p, struct pc_keyhash key)
{
	for (uint32_t c = 0; c < p->nr_classes; c++)
		pool_remove(p->cls[c].pool, key);
}

int p2p_set(struct p2p *p, struct pc_page *pages, size_t n)
{
	struct pc_store *st = p->st;
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
		unpublish(p, key);
		b = take_block(p, (uint32_t)c, &u[nu]);
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
	p2p_send_updates(p, u, nu, status);
	for (size_t j = 0; j < nu; j++) {
		struct pc_page *pg;

		if (u[j].del)
			continue;
		pg = &pages[u[j].page];
		if (status[j]) {
			/* no shard knows it: nobody could find it, so free the block (this
			 * one: another thread may have published the key since) */
			uint32_t b;

			pg->status = status[j];
			if (p2p_own_block(p, &u[j].loc, &b))
				pool_remove_at(p->cls[u[j].loc.cls].pool, u[j].key, b);
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

/* Phase 1: the directory, one DIR_GET per remote shard, this node's own directly. */
static void lookup_chunk(struct p2p *p, struct pkey *k, size_t n)
{
	struct pc_store *st = p->st;
	uint32_t *owner = malloc((n ? n : 1) * sizeof(*owner));
	struct ring *ring = store_ring(st);
	struct store_fanout f;

	if (store_fanout_init(&f, st->topo->nr_nodes, sizeof(struct proto_dir_get),
			      sizeof(struct proto_dir_key)) || !owner) {
		for (size_t i = 0; i < n; i++)
			k[i].err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (k[i].state)
			continue;
		owner[i] = ring_owner_of(ring, k[i].key);
		if (owner[i] == RING_NONE) {
			k[i].err = -EHOSTUNREACH;
		} else if (owner[i] == st->self) {
			k[i].state = dir_get(&p->dir, k[i].key, &k[i].loc) ? 1 : 2;
			k[i].verdict = SLOT_MISS_ABSENT;
		} else {
			f.count[owner[i]]++;
		}
	}
	store_fanout_build(&f, PC_RPC_DIR_GET);
	for (uint32_t r = 0; r < f.nr; r++) {
		struct proto_dir_get h = { .n = f.count[f.rpcs[r].peer] };

		memcpy(f.req[f.rpcs[r].peer], &h, sizeof(h));
	}
	for (size_t i = 0; i < n; i++) {
		struct proto_dir_key q = { k[i].key.lo, k[i].key.hi };
		void *at;

		if (k[i].state || k[i].err || owner[i] == st->self)
			continue;
		if ((at = store_fanout_item(&f, owner[i])))
			memcpy(at, &q, sizeof(q));
		else
			k[i].err = -ENOMEM;	/* its shard's request could not be made */
	}
	if (f.nr)
		store_call(st, f.rpcs, f.nr);
	for (uint32_t r = 0; r < f.nr; r++) {
		uint32_t o = f.rpcs[r].peer, j = 0;
		const struct proto_dir_ans *a = f.rpcs[r].resp.data;
		bool ok = !f.rpcs[r].status && f.rpcs[r].resp.len == f.count[o] * sizeof(*a);

		for (size_t i = 0; i < n; i++) {
			if (k[i].state || k[i].err || owner[i] != o)
				continue;
			if (!ok) {
				k[i].err = f.rpcs[r].status ? f.rpcs[r].status : -EPROTO;
				continue;
			}
			k[i].verdict = SLOT_MISS_ABSENT;
			k[i].state = !a[j].status && !from_proto(st, &a[j].loc, &k[i].loc) ? 1 : 2;
			j++;
		}
	}
out:
	store_fanout_fini(&f);
	free(owner);
}

static void lookup(struct p2p *p, struct pkey *k, size_t n)
{
	for (size_t at = 0; at < n; at += PROTO_DIR_MAX)
		lookup_chunk(p, k + at, n - at < PROTO_DIR_MAX ? n - at : PROTO_DIR_MAX);
}

int p2p_get(struct p2p *p, struct pc_page *pages, size_t n)
{
	struct pc_store *st = p->st;
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
	lookup(p, k, n);
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
	/* entries naming a node that is gone or restarted: tell their shards (rare) */
	if (nstale && (sst = malloc(nstale * sizeof(*sst))))
		p2p_send_updates(p, stale, nstale, sst);
out:
	free(sst);
	free(k);
	free(ops);
	free(stale);
	free(at);
	return hits;
}

int p2p_exists(struct p2p *p, struct pc_page *pages, size_t n)
{
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
	lookup(p, k, n);
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

int p2p_open(struct pc_store *st, struct p2p **out, char *err, size_t errlen)
{
	const struct pc_store_cfg *cfg = &st->topo->store;
	struct p2p *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return -ENOMEM;
	p->st = st;
	ret = dir_init(&p->dir);
	if (ret) {
		free(p);
		return ret;
	}
	pthread_mutex_init(&p->tasks_lock, NULL);
	pthread_mutex_init(&p->touch_lock, NULL);
	*out = p;
	if (st->self == PC_PEER_NONE)
		return 0;	/* a client: no pool, no shard */
	p->nr_classes = cfg->nr_classes;
	for (uint32_t c = 0; c < cfg->nr_classes; c++) {
		struct p2p_class *k = &p->cls[c];
		uint64_t blocks;

		/* a block is one slot; the same memory per node as slotmap's slots */
		ret = slot_geometry_init(&k->g, c, cfg->size_classes[c], 1, 1, 0);
		blocks = cfg->global_segment_size / cfg->nr_classes / k->g.stride;
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
			p2p_close(p);
			*out = NULL;
			return ret;
		}
		pc_info("published pool ready: %llu blocks of %llu B for pages up to %llu B",
			(unsigned long long)blocks, (unsigned long long)k->g.stride,
			(unsigned long long)cfg->size_classes[c]);
	}
	return 0;
}

void p2p_close(struct p2p *p)
{
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

void p2p_metrics(struct p2p *p, struct pc_metrics *m)
{
	if (!p)
		return;
	for (uint32_t c = 0; c < p->nr_classes; c++) {
		struct pool_usage u;

		pool_usage(p->cls[c].pool, &u);
		m->pool_keys += u.valid;
	}
	m->dir_entries += dir_size(&p->dir);
	m->remote_touches += __atomic_load_n(&p->touched, __ATOMIC_RELAXED);
	m->orphans_freed += __atomic_load_n(&p->orphans, __ATOMIC_RELAXED);
}
