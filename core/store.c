/*
 * store.c - the store facade: opens the topology, the fabric and the mode, routes
 * batches to the mode, answers peers' RPCs, keeps the metrics.
 *
 * Not for: placement or slot logic (slotmap*.c), transport (backends/).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/pc_topology.h>

#include "backends.h"
#include "base/hostmem.h"
#include "base/log.h"
#include "base/sized.h"
#include "p2p/p2p.h"
#include "proto.h"
#include "slotmap/slotmap.h"
#include "store.h"
#include "tier/tier.h"

int store_post(struct pc_store *st, struct pc_op *ops, size_t n)
{
	int ret = pc_fabric_post(st->fabric, ops, n);

	METRIC_ADD(st, round_trips, 1);
	if (ret)
		for (size_t i = 0; i < n; i++)
			ops[i].status = ret;
	return ret;
}

int store_call(struct pc_store *st, struct pc_rpc *rpcs, size_t n)
{
	int ret = pc_fabric_call(st->fabric, rpcs, n);

	METRIC_ADD(st, round_trips, 1);
	if (ret)
		for (size_t i = 0; i < n; i++)
			rpcs[i].status = ret;
	return ret;
}

const struct pc_region *store_lreg_find(struct pc_store *st, const void *p, size_t len)
{
	const struct pc_region *found = NULL;
	uintptr_t a = (uintptr_t)p;

	pthread_rwlock_rdlock(&st->bufs_lock);
	for (struct store_buf *b = st->bufs; b && !found; b = b->next)
		if (a >= (uintptr_t)b->r.addr && len <= b->r.len &&
		    a - (uintptr_t)b->r.addr <= b->r.len - len)
			found = &b->r;
	pthread_rwlock_unlock(&st->bufs_lock);
	return found;
}

int store_set_member(struct pc_store *st, uint32_t node, bool member)
{
	struct ring *old, *r;
	int ret = 0;

	if (node >= st->topo->nr_nodes)
		return -EINVAL;
	pthread_mutex_lock(&st->member_lock);
	old = store_ring(st);
	if (ring_contains(old, node) == member)
		goto out;
	r = ring_dup(old);
	if (!r) {
		ret = -ENOMEM;
		goto out;
	}
	ret = member ? ring_add(r, node, st->topo->nodes[node].name) : ring_remove(r, node);
	if (ret) {
		ring_destroy(r);
		goto out;
	}
	__atomic_store_n(&st->ring, r, __ATOMIC_RELEASE);
	old->retired_next = st->retired;
	st->retired = old;
	pc_info("node %s %s the ring", st->topo->nodes[node].name, member ? "joined" : "left");
	if (st->p2p)
		p2p_member_changed(st->p2p, node, member, old);
out:
	pthread_mutex_unlock(&st->member_lock);
	return ret;
}

int pc_store_set_member(struct pc_store *st, const char *node, bool member)
{
	int idx = st ? pc_topology_find_node(st->topo, node) : -1;
	struct proto_member m;
	struct pc_rpc *rpcs;
	uint32_t nr = 0;
	int ret;

	if (idx < 0)
		return st ? -ENXIO : -EINVAL;
	ret = store_set_member(st, (uint32_t)idx, member);
	if (ret)
		return ret;
	/* tell every other node; a node leaving is not asked (it may be dead) */
	rpcs = calloc(st->topo->nr_nodes, sizeof(*rpcs));
	if (!rpcs)
		return -ENOMEM;
	m = (struct proto_member){ .node = (uint32_t)idx, .member = member };
	for (uint32_t i = 0; i < st->topo->nr_nodes; i++)
		if (i != st->self && (member || i != (uint32_t)idx))
			rpcs[nr++] = (struct pc_rpc){ .peer = i, .opcode = PC_RPC_MEMBER, .req = &m,
						      .req_len = sizeof(m) };
	pc_fabric_call(st->fabric, rpcs, nr);
	for (uint32_t r = 0; r < nr; r++) {
		if (rpcs[r].status)
			pc_warn("node %s did not hear that %s %s: %s", st->topo->nodes[rpcs[r].peer].name,
				node, member ? "joined" : "left", strerror(-rpcs[r].status));
		pc_msg_free(&rpcs[r].resp);
	}
	free(rpcs);
	return 0;
}

int pc_store_register(struct pc_store *st, void *buf, size_t len)
{
	struct store_buf *b = calloc(1, sizeof(*b));
	int ret;

	if (!b)
		return -ENOMEM;
	/* Local access only: peers can never address caller memory. */
	b->r = (struct pc_region){ .addr = buf, .len = len, .access = 0 };
	ret = pc_fabric_reg(st->fabric, &b->r);
	if (ret) {
		free(b);
		return ret;
	}
	pthread_rwlock_wrlock(&st->bufs_lock);
	b->next = st->bufs;
	__atomic_store_n(&st->bufs, b, __ATOMIC_RELEASE);	/* store_lreg peeks without the lock */
	pthread_rwlock_unlock(&st->bufs_lock);
	return 0;
}

void pc_store_unregister(struct pc_store *st, void *buf)
{
	struct store_buf **pp, *b = NULL;

	pthread_rwlock_wrlock(&st->bufs_lock);
	for (pp = &st->bufs; *pp; pp = &(*pp)->next) {
		if ((*pp)->r.addr == buf) {
			b = *pp;
			*pp = b->next;
			break;
		}
	}
	pthread_rwlock_unlock(&st->bufs_lock);
	if (b) {
		pc_fabric_dereg(st->fabric, &b->r);
		free(b);
	}
}

/* ------------------------------------------------------------------ one request per peer */

int store_fanout_init(struct store_fanout *f, uint32_t nr_peers, size_t hdr_len, size_t item_len)
{
	*f = (struct store_fanout){ .nn = nr_peers, .hdr_len = hdr_len, .item_len = item_len };
	f->count = calloc(nr_peers, sizeof(*f->count));
	f->filled = calloc(nr_peers, sizeof(*f->filled));
	f->req = calloc(nr_peers, sizeof(*f->req));
	f->rpcs = calloc(nr_peers, sizeof(*f->rpcs));
	if (f->count && f->filled && f->req && f->rpcs)
		return 0;
	store_fanout_fini(f);
	return -ENOMEM;
}

void store_fanout_build(struct store_fanout *f, uint16_t opcode)
{
	for (uint32_t o = 0; o < f->nn; o++) {
		size_t len = f->hdr_len + f->count[o] * f->item_len;

		if (!f->count[o] || !(f->req[o] = malloc(len)))
			continue;
		f->rpcs[f->nr++] = (struct pc_rpc){ .peer = o, .opcode = opcode, .req = f->req[o],
						    .req_len = len };
	}
}

void *store_fanout_item(struct store_fanout *f, uint32_t peer)
{
	if (!f->req[peer] || f->filled[peer] == f->count[peer])
		return NULL;
	return f->req[peer] + f->hdr_len + f->filled[peer]++ * f->item_len;
}

void store_fanout_fini(struct store_fanout *f)
{
	for (uint32_t r = 0; f->rpcs && r < f->nr; r++)
		pc_msg_free(&f->rpcs[r].resp);
	for (uint32_t o = 0; f->req && o < f->nn; o++)
		free(f->req[o]);
	free(f->count);
	free(f->filled);
	free(f->req);
	free(f->rpcs);
	f->count = f->filled = NULL;
	f->req = NULL;
	f->rpcs = NULL;
	f->nr = 0;
}

/* ------------------------------------------------------------------ scratch memory */

#define STORE_IDLE_STAGES 8	/* idle scratch areas kept for reuse */

struct store_stage *store_stage_take(struct pc_store *st, size_t bytes, uint32_t access)
{
	struct store_stage **pp, **best = NULL, *s = NULL;

	pthread_mutex_lock(&st->stage_lock);
	for (pp = &st->stages; *pp; pp = &(*pp)->next)	/* the smallest that fits */
		if ((*pp)->bytes >= bytes && (*pp)->r.access == access &&
		    (!best || (*pp)->bytes < (*best)->bytes))
			best = pp;
	if (best) {
		s = *best;
		*best = s->next;
	}
	pthread_mutex_unlock(&st->stage_lock);
	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->bytes = bytes < (1u << 20) ? (1u << 20) : bytes;
	if (hostmem_map(&s->mem, s->bytes, false)) {
		free(s);
		return NULL;
	}
	s->r = (struct pc_region){ .addr = s->mem, .len = s->bytes, .access = access };
	if (pc_fabric_reg(st->fabric, &s->r)) {
		hostmem_unmap(s->mem, s->bytes);
		free(s);
		return NULL;
	}
	return s;
}

static void stage_free(struct pc_store *st, struct store_stage *s)
{
	pc_fabric_dereg(st->fabric, &s->r);
	hostmem_unmap(s->mem, s->bytes);
	free(s);
}

void store_stage_give(struct pc_store *st, struct store_stage *s)
{
	uint32_t idle = 0;

	if (!s)
		return;
	pthread_mutex_lock(&st->stage_lock);
	for (struct store_stage *x = st->stages; x; x = x->next)
		idle++;
	if (idle < STORE_IDLE_STAGES) {
		s->next = st->stages;
		st->stages = s;
		s = NULL;
	}
	pthread_mutex_unlock(&st->stage_lock);
	if (s)
		stage_free(st, s);	/* enough kept already */
}

void store_stages_free(struct pc_store *st)
{
	while (st->stages) {
		struct store_stage *s = st->stages;

		st->stages = s->next;
		stage_free(st, s);
	}
}

/* Every RPC a peer sends this node arrives here. */
static int store_rpc(void *arg, uint32_t from, uint16_t opcode, const void *req, size_t len,
		     struct pc_msg *resp)
{
	struct pc_store *st = arg;

	switch (opcode) {
	case PC_RPC_LAYOUT:
		return !st->sm ? -EOPNOTSUPP : len ? -EPROTO : slotmap_layout_rpc(st->sm, resp);
	case PC_RPC_SLOT_PROMOTE:
		return st->sm ? sm_spill_rpc(st->sm, req, len, resp) : -EOPNOTSUPP;
	case PC_RPC_DIR_UPDATE:
	case PC_RPC_DIR_GET:
	case PC_RPC_P2P_TOUCH:
		return st->p2p ? p2p_rpc(st->p2p, from, opcode, req, len, resp) : -EOPNOTSUPP;
	case PC_RPC_MEMBER: {
		struct proto_member m;

		if (len != sizeof(m))
			return -EPROTO;
		memcpy(&m, req, sizeof(m));
		if (m.member > 1 || m.node >= st->topo->nr_nodes)
			return -EPROTO;
		return store_set_member(st, m.node, m.member);
	}
	case PC_RPC_TIER_OFFER:
	case PC_RPC_TIER_QUERY:
	case PC_RPC_TIER_PUT:
	case PC_RPC_TIER_FETCH:
	case PC_RPC_TIER_RELEASE:
	case PC_RPC_TIER_STATS:
		return st->tier ? tier_rpc(st->tier, from, opcode, req, len, resp) : -EOPNOTSUPP;
	default:
		return -EOPNOTSUPP;
	}
}

__attribute__((format(printf, 2, 3)))
static int open_error(const struct pc_store_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (o->err && o->errlen) {
		va_start(ap, fmt);
		vsnprintf(o->err, o->errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* The backend a topology's protocol asks for, falling back to tcp (with one line)
 * when this build or this machine has no RDMA device and the topology allows it. */
static int open_fabric(struct pc_store *st, const struct pc_store_opts *o,
		       const struct store_open_ext *x)
{
	static const char *const by_proto[] = { [PC_PROTO_TCP] = "tcp", [PC_PROTO_RDMA] = "verbs",
						[PC_PROTO_RXE] = "rxe" };
	const struct pc_store_cfg *cfg = &st->topo->store;
	const char *name = o->fabric ? o->fabric : by_proto[cfg->protocol];
	struct pc_fabric_params p = { .topo = st->topo, .self = st->self, .env = st->env,
				      .backend_arg = x->backend_arg };
	int ret = -ENOENT;

	if (pc_fabric_find(name))
		ret = pc_fabric_open(name, &p, &st->fabric);
	if (!ret)
		return 0;
	if (o->fabric || !strcmp(name, "tcp") || cfg->fallback == PC_FALLBACK_NONE)
		return open_error(o, "%s: fabric '%s': %s%s", st->topo->source, name,
				  ret == -ENOENT ? "not built into this library" : strerror(-ret),
				  cfg->fallback == PC_FALLBACK_NONE && !o->fabric ?
					  " (store.fallback is none; set it to tcp to run without RDMA)" :
					  "");
	pc_warn("protocol %s: %s; falling back to tcp", cfg->protocol == PC_PROTO_RXE ? "rxe" : "rdma",
		ret == -ENOENT ? "no RDMA backend in this build" :
		ret == -ENODEV ? "no usable RDMA device" : strerror(-ret));
	ret = pc_fabric_open("tcp", &p, &st->fabric);
	return ret ? open_error(o, "%s: fabric tcp: %s", st->topo->source, strerror(-ret)) : 0;
}

int pc_store_open(const struct pc_store_opts *o, struct pc_store **out)
{
	return store_open(o, NULL, out);
}

int store_open(const struct pc_store_opts *o, const struct store_open_ext *x, struct pc_store **out)
{
	static const struct store_open_ext none;
	char err[PC_ERR_MAX];
	struct pc_store *st;
	int ret, idx;

	if (!o || o->size < sizeof(*o) || (!o->topology && !o->topo))
		return -EINVAL;
	if (!x)
		x = &none;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->env = x->env ? x->env : pc_env_posix();
	st->payload_free = x->payload_free;
	st->storage = x->storage;
	st->backend_arg = x->backend_arg;
	pthread_rwlock_init(&st->bufs_lock, NULL);
	pthread_mutex_init(&st->stage_lock, NULL);
	pthread_mutex_init(&st->member_lock, NULL);
	arena_pool_init(&st->arenas);
	if (o->topo) {
		st->topo = pc_topology_dup(o->topo);
		ret = st->topo ? 0 : -ENOMEM;
	} else {
		ret = pc_topology_load(o->topology, &st->topo, err, sizeof(err));
		if (ret)
			open_error(o, "%s", err);
	}
	for (const char *const *a = o->set; !ret && a && *a; a++) {
		ret = pc_topology_set(st->topo, *a, err, sizeof(err));
		if (ret)
			open_error(o, "%s", err);
	}
	if (ret)
		goto err_topo;
	st->self = PC_PEER_NONE;
	if (o->node) {
		idx = pc_topology_find_node(st->topo, o->node);
		if (idx < 0) {
			ret = open_error(o, "%s: no node named '%s'; pick one of the names under nodes:",
					 st->topo->source, o->node);
			goto err_topo;
		}
		st->self = (uint32_t)idx;
	}
	st->ring = ring_create(st->topo->store.vnodes);
	if (!st->ring) {
		ret = -ENOMEM;
		goto err_topo;
	}
	if (x->ring) {		/* a ring the caller built once for many stores */
		ring_destroy(st->ring);
		st->ring = ring_ref(x->ring);
	} else {
		uint32_t *ids = malloc(st->topo->nr_nodes * sizeof(*ids));
		const char **names = malloc(st->topo->nr_nodes * sizeof(*names));

		ret = ids && names ? 0 : -ENOMEM;
		for (uint32_t i = 0; !ret && i < st->topo->nr_nodes; i++) {
			ids[i] = i;
			names[i] = st->topo->nodes[i].name;
		}
		if (!ret)
			ret = ring_add_many(st->ring, ids, names, st->topo->nr_nodes);
		free(ids);
		free(names);
		if (ret)
			goto err_ring;
	}
	if (x->use_fabric) {
		st->fabric = x->use_fabric;
		if (st->fabric->self != st->self || st->fabric->topo->nr_nodes != st->topo->nr_nodes) {
			ret = open_error(o, "the fabric given was opened for another node or topology");
			goto err_ring;
		}
	} else {
		ret = open_fabric(st, o, x);
		if (ret)
			goto err_ring;
		st->owns_fabric = true;
	}
	ret = st->topo->store.mode == PC_MODE_P2P ? p2p_open(st, &st->p2p, err, sizeof(err)) :
						      slotmap_open(st, &st->sm, err, sizeof(err));
	if (ret) {
		open_error(o, "%s: node %s: %s", st->topo->source, o->node ? o->node : "-", err);
		goto err_fabric;
	}
	if (st->self != PC_PEER_NONE && st->topo->store.tier_host_blocks) {
		struct tier_params tp = { .fabric = st->fabric, .env = st->env,
					  .cfg = &st->topo->store,
					  .disk_dir = st->topo->nodes[st->self].nvme.path,
					  .storage = st->storage, .storage_arg = st->backend_arg,
					  .payload_free = st->payload_free };

		ret = tier_open(&tp, &st->tier, err, sizeof(err));
		if (ret) {
			open_error(o, "%s: node %s: %s", st->topo->source, o->node, err);
			goto err_slotmap;
		}
	}
	if (st->self != PC_PEER_NONE) {
		st->fabric->quick_rpcs = PROTO_QUICK_RPCS;
		ret = pc_fabric_serve(st->fabric, store_rpc, st);
		if (ret) {
			const struct pc_node *n = &st->topo->nodes[st->self];

			open_error(o, "%s: node %s: cannot serve on %s port %u: %s", st->topo->source,
				   n->name, n->address, n->port, strerror(-ret));
			goto err_tier;
		}
	}
	*out = st;
	return 0;
err_tier:
	tier_close(st->tier);
err_slotmap:
	slotmap_close(st->sm);
	p2p_close(st->p2p);
err_fabric:
	if (st->owns_fabric)
		pc_fabric_close(st->fabric);
err_ring:
	ring_destroy(st->ring);
err_topo:
	pc_topology_free(st->topo);
	pthread_rwlock_destroy(&st->bufs_lock);
	pthread_mutex_destroy(&st->stage_lock);
	pthread_mutex_destroy(&st->member_lock);
	arena_pool_fini(&st->arenas);
	free(st);
	return ret;
}

void pc_store_close(struct pc_store *st)
{
	if (!st)
		return;
	/* Stop answering peers before the slots they address go away. */
	if (st->self != PC_PEER_NONE)
		pc_fabric_serve(st->fabric, NULL, NULL);
	tier_close(st->tier);
	store_stages_free(st);
	slotmap_close(st->sm);
	p2p_close(st->p2p);
	while (st->bufs)
		pc_store_unregister(st, st->bufs->r.addr);
	if (st->owns_fabric)
		pc_fabric_close(st->fabric);
	ring_destroy(st->ring);
	while (st->retired) {
		struct ring *r = st->retired;

		st->retired = r->retired_next;
		ring_destroy(r);
	}
	pc_topology_free(st->topo);
	pthread_rwlock_destroy(&st->bufs_lock);
	pthread_mutex_destroy(&st->stage_lock);
	pthread_mutex_destroy(&st->member_lock);
	arena_pool_fini(&st->arenas);
	free(st);
}

int pc_batch_set(struct pc_store *st, struct pc_page *pages, size_t n)
{
	if (!st || (!pages && n))
		return -EINVAL;
	METRIC_ADD(st, batches, 1);
	return st->p2p ? p2p_set(st->p2p, pages, n) : slotmap_set(st->sm, pages, n);
}

int pc_batch_get(struct pc_store *st, struct pc_page *pages, size_t n)
{
	if (!st || (!pages && n))
		return -EINVAL;
	METRIC_ADD(st, batches, 1);
	return st->p2p ? p2p_get(st->p2p, pages, n) : slotmap_get(st->sm, pages, n);
}

int pc_batch_exists(struct pc_store *st, struct pc_page *pages, size_t n)
{
	if (!st || (!pages && n))
		return -EINVAL;
	METRIC_ADD(st, batches, 1);
	return st->p2p ? p2p_exists(st->p2p, pages, n) : slotmap_exists(st->sm, pages, n);
}

void store_metrics(struct pc_store *st, struct pc_metrics *out)
{
	const uint64_t *src = (const uint64_t *)&st->metrics;
	uint64_t *dst = (uint64_t *)out;

	for (size_t i = SIZED_HEAD / 8; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	out->size = sizeof(*out);
	out->reserved = 0;
	sm_spill_metrics(st->sm, out);
	p2p_metrics(st->p2p, out);
}

int pc_store_metrics(struct pc_store *st, struct pc_metrics *out)
{
	struct pc_metrics m;

	if (!st)
		return -EINVAL;
	store_metrics(st, &m);
	return sized_fill(out, &m, sizeof(m));
}

const char *pc_store_node(const struct pc_store *st)
{
	return !st || st->self == PC_PEER_NONE ? NULL : st->topo->nodes[st->self].name;
}
