/*
 * tier_client.c - the client side of the tiered pool protocol (pc_tier_* in
 * peercache.h): offer, query, put through a staging area the peer pulls from, and
 * fetch = FETCH (lease) + one-sided READs + verify + RELEASE.
 *
 * Not for: the node's side (tier.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/sized.h"
#include "disk.h"
#include "proto.h"
#include "store.h"
#include "tier.h"

static struct pc_keyhash key_of(uint64_t hash)
{
	return (struct pc_keyhash){ .lo = hash, .hi = 0 };
}

/* The node called name into *node. -ENXIO names no node of the topology. */
static int check_args(struct store_svc *st, const char *name, uint32_t *node, const void *p, size_t n)
{
	int idx;

	if (!st || !name || (!p && n) || n > PROTO_TIER_MAX_BLOCKS)
		return -EINVAL;
	idx = pc_topology_find_node(st->topo, name);
	if (idx < 0)
		return -ENXIO;
	*node = (uint32_t)idx;
	return 0;
}

/* One RPC to node; the response stays in r->resp (caller frees). */
static int call1(struct store_svc *st, uint32_t node, uint16_t opcode, const void *req, size_t len,
		 struct pc_rpc *r)
{
	*r = (struct pc_rpc){ .peer = node, .opcode = opcode, .req = req, .req_len = len };
	store_call(st, r, 1);
	if (r->status)
		pc_msg_free(&r->resp);
	return r->status;
}

static void *keys_msg(uint32_t n, uint32_t lease_ms, size_t *len, uint64_t (*hash_at)(const void *, size_t),
		      const void *src)
{
	struct proto_tier_keys h = { .n = n, .lease_ms = lease_ms };
	uint8_t *m = malloc(sizeof(h) + (size_t)n * 8);

	if (!m)
		return NULL;
	memcpy(m, &h, sizeof(h));
	for (uint32_t i = 0; i < n; i++) {
		uint64_t x = hash_at(src, i);

		memcpy(m + sizeof(h) + (size_t)i * 8, &x, 8);
	}
	*len = sizeof(h) + (size_t)n * 8;
	return m;
}

static uint64_t hash_of_array(const void *src, size_t i)
{
	return ((const uint64_t *)src)[i];
}

static uint64_t hash_of_block(const void *src, size_t i)
{
	return ((const struct pc_block *)src)[i].hash;
}

static int offer_or_query(struct store_svc *st, const char *name, uint16_t opcode,
			  const uint64_t *hashes, size_t n, uint8_t *out)
{
	struct pc_rpc r;
	uint32_t node;
	size_t len;
	void *req;
	int ret, count = 0;

	ret = check_args(st, name, &node, hashes, n);
	if (ret || !n)
		return ret;
	req = keys_msg((uint32_t)n, 0, &len, hash_of_array, hashes);
	if (!req)
		return -ENOMEM;
	ret = call1(st, node, opcode, req, len, &r);
	free(req);
	if (ret)
		return ret;
	if (r.resp.len != n) {
		pc_msg_free(&r.resp);
		return -EPROTO;
	}
	memcpy(out, r.resp.data, n);
	for (size_t i = 0; i < n; i++)
		count += out[i] != 0;
	pc_msg_free(&r.resp);
	return count;
}

int pc_tier_offer(struct pc_store *s, const char *node, const uint64_t *hashes, size_t n, bool *wanted)
{
	struct store_svc *st = s ? &s->svc : NULL;
	uint8_t *w;
	int ret;

	if (!wanted && n)
		return -EINVAL;
	w = malloc(n ? n : 1);
	if (!w)
		return -ENOMEM;
	ret = offer_or_query(st, node, PC_RPC_TIER_OFFER, hashes, n, w);
	for (size_t i = 0; ret >= 0 && i < n; i++)
		wanted[i] = w[i] != 0;
	free(w);
	return ret;
}

int pc_tier_query(struct pc_store *s, const char *node, const uint64_t *hashes, size_t n, uint8_t *where)
{
	struct store_svc *st = s ? &s->svc : NULL;

	if (!where && n)
		return -EINVAL;
	return offer_or_query(st, node, PC_RPC_TIER_QUERY, hashes, n, where);
}

/* ------------------------------------------------------------------ put, fetch */

int pc_tier_put(struct pc_store *s, const char *name, struct pc_block *b, size_t n)
{
	struct store_svc *st = s ? &s->svc : NULL;
	uint32_t node;
	struct proto_tier_xfer x = { .n = (uint32_t)n };
	struct proto_tier_blk *e;
	struct store_stage *sg;
	struct pc_rpc r;
	size_t bytes = 0, len, off = 0;
	uint8_t *req;
	int ret, stored = 0;

	ret = check_args(st, name, &node, b, n);
	if (ret || !n)
		return ret;
	if (st->self == PC_PEER_NONE)
		return -EOPNOTSUPP;	/* the peer pulls: it must be able to address us */
	for (size_t i = 0; i < n; i++) {
		if ((!b[i].data && b[i].len) || b[i].len > UINT32_MAX)
			return -EINVAL;
		bytes += (b[i].len + 63) / 64 * 64;
	}
	sg = store_stage_take(st, bytes ? bytes : 64, PC_ACCESS_REMOTE_READ);
	len = sizeof(x) + n * sizeof(*e);
	req = malloc(len);
	if (!sg || !req) {
		if (sg)
			store_stage_give(st, sg);
		free(req);
		return -ENOMEM;
	}
	x.rkey = sg->r.key;
	x.incarnation = st->fabric->incarnation;
	memcpy(req, &x, sizeof(x));
	e = (struct proto_tier_blk *)(req + sizeof(x));
	for (size_t i = 0; i < n; i++) {
		if (b[i].len)
			memcpy(sg->mem + off, b[i].data, b[i].len);
		e[i] = (struct proto_tier_blk){ .hash = b[i].hash, .len = (uint32_t)b[i].len,
						.addr = (uint64_t)(uintptr_t)(sg->mem + off),
						.sum = disk_sum(key_of(b[i].hash), b[i].data, b[i].len) };
		off += (b[i].len + 63) / 64 * 64;
	}
	ret = call1(st, node, PC_RPC_TIER_PUT, req, len, &r);
	store_stage_give(st, sg);	/* the peer has pulled (or given up) by the time it answers */
	free(req);
	if (!ret && r.resp.len != n * sizeof(int32_t))
		ret = -EPROTO;
	for (size_t i = 0; i < n; i++) {
		int32_t v = ret;

		if (!ret)
			memcpy(&v, (uint8_t *)r.resp.data + i * 4, 4);
		b[i].status = v;
		stored += !v;
	}
	pc_msg_free(&r.resp);
	return stored;
}

int pc_tier_fetch(struct pc_store *s, const char *name, struct pc_block *b, size_t n)
{
	struct store_svc *st = s ? &s->svc : NULL;
	uint32_t node;
	struct proto_tier_xfer x;
	const struct proto_tier_blk *e;
	struct pc_op *ops = NULL;
	uint32_t *at = NULL, nops = 0;
	struct pc_rpc r;
	size_t len;
	void *req;
	int ret, hits = 0;

	ret = check_args(st, name, &node, b, n);
	if (ret || !n)
		return ret;
	for (size_t i = 0; i < n; i++)
		b[i].status = -EPROTO;	/* until an answer says otherwise */
	req = keys_msg((uint32_t)n, 0, &len, hash_of_block, b);
	if (!req)
		return -ENOMEM;
	ret = call1(st, node, PC_RPC_TIER_FETCH, req, len, &r);
	free(req);
	if (ret) {
		for (size_t i = 0; i < n; i++)
			b[i].status = ret;
		return ret;
	}
	if (r.resp.len < sizeof(x)) {
		pc_msg_free(&r.resp);
		return -EPROTO;
	}
	memcpy(&x, r.resp.data, sizeof(x));
	if (r.resp.len != sizeof(x) + n * sizeof(*e)) {
		ret = -EPROTO;	/* still release what it may have leased */
		goto release;
	}
	e = (const struct proto_tier_blk *)((const uint8_t *)r.resp.data + sizeof(x));
	ops = calloc(n, sizeof(*ops));
	at = malloc(n * sizeof(*at));
	if (!ops || !at) {
		ret = -ENOMEM;
		goto release;
	}
	for (size_t i = 0; i < n; i++) {
		b[i].status = e[i].status ? e[i].status : -EPROTO;
		if (e[i].status)
			continue;
		if (e[i].hash != b[i].hash) {
			b[i].status = -EPROTO;
			continue;
		}
		if (e[i].len > b[i].cap || (b[i].len && b[i].len != e[i].len)) {
			b[i].status = -EMSGSIZE;
			continue;
		}
		ops[nops] = (struct pc_op){ .kind = PC_OP_READ, .peer = node, .peer_inc = x.incarnation,
					    .rkey = x.rkey, .raddr = e[i].addr, .local = b[i].data,
					    .len = e[i].len,
					    .lreg = store_lreg(st, b[i].data, e[i].len) };
		at[nops++] = (uint32_t)i;
	}
	if (nops)
		store_post(st, ops, nops);
	for (uint32_t k = 0; k < nops; k++) {
		struct pc_block *p = &b[at[k]];

		p->status = ops[k].status;
		if (p->status)
			continue;
		/* the lease kept the block in place; the checksum proves it */
		if (disk_sum(key_of(p->hash), p->data, e[at[k]].len) != e[at[k]].sum) {
			p->status = -EBADMSG;
			continue;
		}
		p->len = e[at[k]].len;
		hits++;
	}
release:
	if (x.lease) {
		struct pc_rpc rel;

		call1(st, node, PC_RPC_TIER_RELEASE, &x.lease, sizeof(x.lease), &rel);
		pc_msg_free(&rel.resp);
	}
	pc_msg_free(&r.resp);
	free(ops);
	free(at);
	return ret ? ret : hits;
}

int pc_tier_metrics(struct pc_store *s, struct pc_tier_metrics *out)
{
	struct pc_tier_metrics m;

	if (!s || !out)
		return -EINVAL;
	if (!s->tier)
		return -ENOENT;

	tier_metrics(s->tier, &m);
	return sized_fill(out, &m, sizeof(m));
}

int pc_tier_node_metrics(struct pc_store *s, const char *name, struct pc_tier_metrics *out)
{
	struct store_svc *st = s ? &s->svc : NULL;
	struct pc_rpc r;
	uint32_t node;
	int ret = check_args(st, name, &node, out, 1);

	if (ret)
		return ret;
	ret = call1(st, node, PC_RPC_TIER_STATS, NULL, 0, &r);
	if (ret)
		return ret == -EOPNOTSUPP ? -ENOENT : ret;
	/* a node of another build answers with its own struct: what both know is read */
	if (r.resp.len >= SIZED_HEAD)
		ret = sized_fill(out, r.resp.data, r.resp.len);
	else
		ret = -EPROTO;
	pc_msg_free(&r.resp);
	return ret;
}
