/*
 * p2p_shard.c - the directory shard this node holds (DIR_UPDATE and DIR_GET), and
 * talking to the shards: updates, and a get's lookups (this node's
 * own shard directly, the others in one RPC phase).
 *
 * Not for: the entries' store (directory.c) or looking keys up for a get (p2p.c).
 */
#include "p2p_int.h"

static void to_proto(const struct dir_loc *l, struct proto_dir_loc *o)
{
	*o = (struct proto_dir_loc){ .addr = l->addr, .inc = l->inc, .gen = l->gen, .node = l->node,
				     .rkey = l->rkey, .len = l->len, .cls = l->cls };
}

/* A location from a peer: within the topology, its class, its page size. */
static int from_proto(const struct store_svc *st, const struct proto_dir_loc *o, struct dir_loc *l)
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
 * (a handoff or a publish that crossed its leave) is not taken: checked before the
 * put, so that it never takes the place of a member's entry for the key (whose page
 * would then be unreachable, and its block never freed), and again after it, so a
 * leave that swaps the ring and drops the node's entries meanwhile cannot miss it.
 * When the entry replaced another node's publication of the key,
 * that node is told to free the block (it would stay until its LRU got to it).
 * 0, -ENOSPC (the publisher is at its bound in this shard: refused, counted,
 * logged) or -ENOMEM.
 */
int p2p_shard_put(struct p2p *p, struct pc_keyhash key, const struct dir_loc *l)
{
	struct dir_loc old;
	uint64_t skipped;
	int ret;

	if (!ring_contains(store_ring(p->st), l->node))
		return 0;
	ret = dir_put(&p->dir, key, l, &old);
	if (ret == -ENOSPC) {
		METRIC_ADD(p->st, dir_refused, 1);
		if (log_limit_ok(&p->dir_full_log, pc_env_now(p->st->env), &skipped))
			pc_warn("p2p shard: node %s published more entries than its pool holds (%u, store.dir_entries_per_block x its blocks); refused (%llu more not shown)",
				p->st->topo->nodes[l->node].name, p->dir.node_cap,
				(unsigned long long)skipped);
	}
	if (ret)
		return ret;
	if (!ring_contains(store_ring(p->st), l->node))
		dir_del_if(&p->dir, key, l);
	else if (old.node != DIR_NO_NODE)
		p2p_drop_replaced(p, key, &old);	/* a key published by two nodes: one copy */
	return 0;
}

int p2p_shard_update(struct p2p *p, const void *req, size_t len, bool *strays,
		     struct pc_msg *resp)
{
	struct proto_dir_update h;
	const uint8_t *at = (const uint8_t *)req + sizeof(h);
	int32_t *taken;
	size_t n;

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, req, sizeof(h));
	if (h.nput > PROTO_DIR_MAX || h.ndel > PROTO_DIR_MAX ||
	    len != sizeof(h) + (size_t)h.nput * sizeof(struct proto_dir_put) +
			   (size_t)h.ndel * sizeof(struct proto_dir_del))
		return -EPROTO;
	/* puts and removals have one shape: check them all before applying any. Puts
	 * go first: a removal may name a put of the same request (a block the batch
	 * filled, then reused). */
	n = (size_t)h.nput + h.ndel;
	for (size_t i = 0; i < n; i++) {
		struct proto_dir_put e;
		struct dir_loc l;

		memcpy(&e, at + i * sizeof(e), sizeof(e));
		if (from_proto(p->st, &e.loc, &l))
			return -EPROTO;
	}
	/* each put is answered: a refused one's publisher frees its block and says so */
	if (h.nput && pc_msg_reserve(resp, h.nput * sizeof(*taken)))
		return -ENOMEM;
	taken = resp->data;
	for (size_t i = 0; i < n; i++) {
		struct proto_dir_put e;
		struct pc_keyhash key;
		struct dir_loc l;
		int ret;

		memcpy(&e, at + i * sizeof(e), sizeof(e));
		from_proto(p->st, &e.loc, &l);
		key = (struct pc_keyhash){ e.lo, e.hi };
		if (i >= h.nput) {
			dir_del_if(&p->dir, key, &l);
			continue;
		}
		ret = p2p_shard_put(p, key, &l);
		taken[i] = ret;
		if (ret == -ENOSPC)
			continue;	/* counted; the rest of the update stands */
		if (ret)
			return ret;
		if (ring_owner_of(store_ring(p->st), key) != p->st->self)
			*strays = true;	/* sent by a node whose ring is older or newer */
	}
	resp->len = h.nput * sizeof(*taken);
	return 0;
}

int p2p_shard_get(struct p2p *p, const void *req, size_t len, struct pc_msg *resp)
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

/* Send updates to their shards: this node's own directly, the others in one RPC
 * phase. status[i] gets the outcome for u[i]. Returns whether the ring moved while
 * this shard took some (they may be strays now). */
static bool send_chunk(struct p2p *p, const struct upd *u, size_t n, int *status)
{
	struct store_svc *st = p->st;
	uint32_t nn = st->topo->nr_nodes, *owner = malloc((n ? n : 1) * sizeof(*owner));
	uint32_t *nput = calloc(nn, sizeof(*nput));
	struct ring *ring = store_ring(st);
	struct store_fanout f;
	bool moved = false;

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
				moved = true;	/* the ring moved under this batch */
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
	/* a shard answers each put, in the order sent: 0, or -ENOSPC when it refused */
	for (uint32_t r = 0; r < f.nr; r++) {
		uint32_t o = f.rpcs[r].peer, j = 0;
		const int32_t *taken = f.rpcs[r].resp.data;
		int ret = f.rpcs[r].status;

		if (!ret && f.rpcs[r].resp.len != nput[o] * sizeof(*taken))
			ret = -EPROTO;
		for (size_t i = 0; i < n; i++) {
			if (owner[i] != o)
				continue;
			if (!status[i])
				status[i] = ret ? ret : u[i].del ? 0 : taken[j];
			j += !u[i].del;
		}
	}
out:
	store_fanout_fini(&f);
	free(nput);
	free(owner);
	return moved;
}

/* The same for any number of updates (a handoff or republish can be a whole shard). */
bool p2p_send_updates(struct p2p *p, const struct upd *u, size_t n, int *status)
{
	bool moved = false;

	for (size_t at = 0; at < n; at += PROTO_DIR_MAX)
		moved |= send_chunk(p, u + at, n - at < PROTO_DIR_MAX ? n - at : PROTO_DIR_MAX,
				    status + at);
	return moved;
}

/* Phase 1: the directory, one DIR_GET per remote shard, this node's own directly. */
static void lookup_chunk(struct p2p *p, struct pkey *k, size_t n)
{
	struct store_svc *st = p->st;
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

void p2p_lookup(struct p2p *p, struct pkey *k, size_t n)
{
	for (size_t at = 0; at < n; at += PROTO_DIR_MAX)
		lookup_chunk(p, k + at, n - at < PROTO_DIR_MAX ? n - at : PROTO_DIR_MAX);
}
