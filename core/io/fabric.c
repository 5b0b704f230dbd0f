/*
 * fabric.c - opening a fabric from an ops table (stubs for the slots it leaves
 * empty), and the wrappers every fabric call goes through: counters, fault
 * injection, argument checks.
 *
 * Not for: which backends exist or which one a topology wants (backends/builtin.c).
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/pc_fabric.h>

#include "base/log.h"
#include "config/topology.h"

/* ------------------------------------------------------------------ stubs */

static void stub_close(struct pc_fabric *f)
{
	(void)f;
}

static int stub_reg(struct pc_fabric *f, struct pc_region *r)
{
	(void)f;
	(void)r;
	return -EOPNOTSUPP;
}

static void stub_dereg(struct pc_fabric *f, struct pc_region *r)
{
	(void)f;
	(void)r;
}

static int stub_serve(struct pc_fabric *f, pc_rpc_handler *h, void *arg)
{
	(void)f;
	(void)h;
	(void)arg;
	return -EOPNOTSUPP;
}

static int stub_post(struct pc_fabric *f, struct pc_op *ops, size_t n)
{
	(void)f;
	(void)ops;
	(void)n;
	return -EOPNOTSUPP;
}

static int stub_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n)
{
	(void)f;
	(void)rpcs;
	(void)n;
	return -EOPNOTSUPP;
}

static int stub_map(struct pc_fabric *f, uint32_t peer, uint64_t peer_inc, uint32_t rkey,
		       uint64_t raddr, uint64_t len, unsigned access, void **addr)
{
	(void)f;
	(void)peer;
	(void)peer_inc;
	(void)rkey;
	(void)raddr;
	(void)len;
	(void)access;
	(void)addr;
	return -EOPNOTSUPP;
}

/* The backend's table over the stubs (rdma-core's verbs_set_ops): every slot the
 * backend fills within the size it was built with, a stub everywhere else, so the
 * core never calls a NULL slot, and a table built before a slot existed still works. */
static void fill_ops(struct pc_fabric_ops *to, const struct pc_fabric_ops *from)
{
	static const struct pc_fabric_ops stubs = {
		.size = sizeof(stubs), .close = stub_close, .reg = stub_reg,
		.dereg = stub_dereg, .serve = stub_serve,
		.post = stub_post, .call = stub_call, .map = stub_map,
	};

	*to = stubs;
	to->name = from->name;
	to->obj_size = from->obj_size;
	to->open = from->open;
#define TAKE(slot)                                                                       \
	do {                                                                             \
		if (from->size >= offsetof(struct pc_fabric_ops, slot) + sizeof(from->slot) && \
		    from->slot)                                                          \
			to->slot = from->slot;                                           \
	} while (0)
	TAKE(close);
	TAKE(reg);
	TAKE(dereg);
	TAKE(serve);
	TAKE(post);
	TAKE(call);
	TAKE(map);
#undef TAKE
}

int pc_fabric_open_ops(const struct pc_fabric_ops *ops, const struct pc_fabric_params *p,
		       struct pc_fabric **out)
{
	struct pc_fabric *f;
	int ret;

	if (!ops || !ops->open || ops->obj_size < sizeof(*f) || !p || p->size < sizeof(*p) ||
	    !p->topo || !p->env)
		return -EINVAL;
	if (p->self != PC_PEER_NONE && p->self >= p->topo->nr_nodes)
		return -EINVAL;
	f = calloc(1, ops->obj_size);
	if (!f)
		return -ENOMEM;
	fill_ops(&f->full_ops, ops);
	f->ops = &f->full_ops;
	f->env = p->env;
	f->topo = p->topo;
	f->self = p->self;
	f->nr_peers = p->topo->nr_nodes;
	f->timeout_ms = p->timeout_ms ? p->timeout_ms : p->topo->store.timeout_ms;
	do
		f->incarnation = pc_env_random(f->env);
	while (!f->incarnation);
	f->peer_down = calloc(f->nr_peers, sizeof(*f->peer_down));
	f->peer_noted_ns = calloc(f->nr_peers, sizeof(*f->peer_noted_ns));
	ret = f->peer_down && f->peer_noted_ns ? ops->open(f, p) : -ENOMEM;
	if (ret) {
		free(f->peer_down);
		free(f->peer_noted_ns);
		free(f);
		return ret;
	}
	if (f->ops->map == stub_map)
		f->maps = false;
	*out = f;
	return 0;
}

void pc_fabric_close(struct pc_fabric *f)
{
	if (!f)
		return;
	f->ops->close(f);
	free(f->peer_down);
	free(f->peer_noted_ns);
	free(f);
}

/* ------------------------------------------------------------------ peer reachability */

#define PEER_NOTE_GAP_NS 1000000000ULL	/* at most one line per peer per second */

/* Errors that say the peer itself could not be reached (as opposed to a refusal or
 * a handler's answer). */
static bool unreachable(int status)
{
	switch (-status) {
	case ECONNREFUSED: case ECONNRESET: case ECONNABORTED: case EHOSTUNREACH:
	case ENETUNREACH: case EHOSTDOWN: case ETIMEDOUT: case EPIPE: case EIO:
	case ENOTCONN: case ESHUTDOWN: case EADDRNOTAVAIL:
		return true;
	default:
		return false;
	}
}

/* A peer's reachability changed: one warning per transition, with the peer's name
 * and address and the reason, and none for a peer whose last line is under a second
 * old (a flapping peer). Concurrent callers agree on who logs by the exchange. */
static void note_peer(struct pc_fabric *f, uint32_t peer, int status)
{
	const struct pc_node *n = &f->topo->nodes[peer];
	uint8_t down = unreachable(status);
	uint64_t now, last;

	if (__atomic_exchange_n(&f->peer_down[peer], down, __ATOMIC_RELAXED) == down)
		return;
	if (down)
		__atomic_fetch_add(&f->nr_down, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_sub(&f->nr_down, 1, __ATOMIC_RELAXED);
	now = pc_env_now(f->env);
	last = __atomic_load_n(&f->peer_noted_ns[peer], __ATOMIC_RELAXED);
	if (last && now - last < PEER_NOTE_GAP_NS)
		return;
	__atomic_store_n(&f->peer_noted_ns[peer], now, __ATOMIC_RELAXED);
	if (down)
		pc_warn("peer %s (%s port %u) unreachable: %s", n->name, n->address, n->port,
			strerror(-status));
	else
		pc_warn("peer %s (%s port %u) reachable again", n->name, n->address, n->port);
}

/* status of one op or RPC to peer: a failure to reach it, or the first answer after
 * one, changes its state. any_down is nr_down as the call began: while no peer is
 * down, an answered op costs nothing here. */
static inline void track_peer(struct pc_fabric *f, uint32_t peer, int status, bool any_down)
{
	if (__builtin_expect(status != 0, 0) ? unreachable(status) || any_down :
	    __builtin_expect(any_down, 0) && __atomic_load_n(&f->peer_down[peer], __ATOMIC_RELAXED))
		note_peer(f, peer, status);
}

int pc_fabric_post(struct pc_fabric *f, struct pc_op *ops, size_t n)
{
	uint64_t rd = 0, wr = 0, nr = 0, nw = 0, nc = 0, errs = 0;
	bool any_down;
	int ret;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		assert(ops[i].peer < f->nr_peers);
		assert(ops[i].kind != PC_OP_CAS || (ops[i].len == 8 && !ops[i].head_len));
		ops[i].status = 0;
	}
	if (f->fault) {
		ret = f->fault(f->fault_arg, PC_FAULT_BEFORE, ops, n);
		if (ret)
			return ret;
	}
	ret = f->ops->post(f, ops, n);
	if (ret)
		return ret;
	if (f->fault)
		f->fault(f->fault_arg, PC_FAULT_AFTER, ops, n);
	any_down = __atomic_load_n(&f->nr_down, __ATOMIC_RELAXED) != 0;
	for (size_t i = 0; i < n; i++) {
		track_peer(f, ops[i].peer, ops[i].status, any_down);
		if (ops[i].status) {
			errs++;
			continue;
		}
		switch (ops[i].kind) {
		case PC_OP_READ:
			nr++;
			rd += pc_op_bytes(&ops[i]);
			break;
		case PC_OP_WRITE:
			nw++;
			wr += pc_op_bytes(&ops[i]);
			break;
		default:
			nc++;
		}
	}
	pc_stat_add(&f->stats.post_phases, 1);
	pc_stat_add(&f->stats.ops_read, nr);
	pc_stat_add(&f->stats.ops_write, nw);
	pc_stat_add(&f->stats.ops_cas, nc);
	pc_stat_add(&f->stats.bytes_read, rd);
	pc_stat_add(&f->stats.bytes_written, wr);
	pc_stat_add(&f->stats.op_errors, errs);
	return 0;
}

int pc_fabric_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n)
{
	bool any_down;
	int ret;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		assert(rpcs[i].peer < f->nr_peers);
		rpcs[i].status = 0;
		rpcs[i].resp.len = 0;
	}
	ret = f->ops->call(f, rpcs, n);
	if (ret)
		return ret;
	any_down = __atomic_load_n(&f->nr_down, __ATOMIC_RELAXED) != 0;
	for (size_t i = 0; i < n; i++)
		track_peer(f, rpcs[i].peer, rpcs[i].status, any_down);
	pc_stat_add(&f->stats.rpc_phases, 1);
	pc_stat_add(&f->stats.rpcs, n);
	return 0;
}

void pc_fabric_get_stats(const struct pc_fabric *f, struct pc_fabric_stats *out)
{
	const uint64_t *src = (const uint64_t *)&f->stats;
	uint64_t *dst = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

int pc_msg_reserve(struct pc_msg *m, size_t more)
{
	size_t need = m->len + more, cap;
	void *d;

	if (need <= m->cap)
		return 0;
	cap = m->cap ? m->cap : 256;
	while (cap < need)
		cap *= 2;
	d = realloc(m->data, cap);
	if (!d)
		return -ENOMEM;
	m->data = d;
	m->cap = cap;
	return 0;
}

int pc_msg_append(struct pc_msg *m, const void *p, size_t n)
{
	int ret = n ? pc_msg_reserve(m, n) : 0;

	if (ret || !n)
		return ret;
	memcpy((char *)m->data + m->len, p, n);
	m->len += n;
	return 0;
}

void pc_msg_free(struct pc_msg *m)
{
	free(m->data);
	m->data = NULL;
	m->len = m->cap = 0;
}
