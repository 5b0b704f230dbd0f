/*
 * fabric.c - opening a fabric from an ops table (stubs for the slots it leaves
 * empty), and the wrappers every fabric call goes through: counters, the per-peer
 * backoff (io/peer_backoff.h) and argument checks (fault injection is a wrapping
 * ops table: tests/fault).
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
#include "io/peer_backoff.h"

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
	f->any_node = p->flags & PC_FABRIC_ANY_NODE;
	f->peers = peer_backoff_create(f->nr_peers, p->topo->store.peer_backoff_ms,
				       p->topo->store.peer_backoff_max_ms);
	if (!f->peers) {
		free(f);
		return -ENOMEM;
	}
	do
		f->incarnation = pc_env_random(f->env);
	while (!f->incarnation);
	ret = ops->open(f, p);
	if (ret) {
		peer_backoff_destroy(f->peers);
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
	peer_backoff_destroy(f->peers);
	free(f);
}

/* ------------------------------------------------------------------ backoff */

/*
 * Ops and RPCs to a peer that is backing off fail at once with the error that put
 * it there and never reach the backend; the rest go in one call. Only a batch in
 * which some peer is skipped pays for it: its live entries are copied to a scratch
 * array and back.
 * The helpers below work on either array through the offsets of its peer and
 * status fields.
 */
struct entries {
	char *v;			/* n entries of size bytes */
	size_t size, n, peer_off, status_off;
	size_t flags_off;		/* RPCs: where their flags are; ops: 0 */
};

#define ENTRIES(arr, count) \
	((struct entries){ .v = (char *)(arr), .size = sizeof(*(arr)), .n = (count), \
			   .peer_off = offsetof(__typeof__(*(arr)), peer), \
			   .status_off = offsetof(__typeof__(*(arr)), status) })

static uint32_t entry_peer(const struct entries *e, size_t i)
{
	uint32_t peer;

	memcpy(&peer, e->v + i * e->size + e->peer_off, sizeof(peer));
	return peer;
}

static int *entry_status(const struct entries *e, size_t i)
{
	return (int *)(void *)(e->v + i * e->size + e->status_off);
}

/* Probes are neither skipped nor noted (PC_RPC_PROBE). */
static bool entry_probe(const struct entries *e, size_t i)
{
	return e->flags_off && (*(const uint32_t *)(const void *)(e->v + i * e->size + e->flags_off) &
				PC_RPC_PROBE);
}

static int entry_skips(struct pc_fabric *f, const struct entries *e, size_t i, uint64_t now)
{
	return entry_probe(e, i) ? 0 : peer_backoff_skips(f->peers, entry_peer(e, i), now);
}

static size_t count_skipped(struct pc_fabric *f, const struct entries *e, uint64_t now)
{
	size_t skipped = 0;

	if (!peer_backoff_any(f->peers))
		return 0;
	for (size_t i = 0; i < e->n; i++)
		skipped += entry_skips(f, e, i, now) != 0;
	return skipped;
}

static void note_outcomes(struct pc_fabric *f, const struct entries *e)
{
	bool any = peer_backoff_any(f->peers);
	uint64_t now = pc_env_now(f->env);

	for (size_t i = 0; i < e->n; i++)
		if ((any || *entry_status(e, i)) && !entry_probe(e, i))
			peer_backoff_note(f->peers, f, entry_peer(e, i), *entry_status(e, i), now);
}

/* Fail the skipped entries of e and copy the others into *live (at[j]: where live
 * entry j came from). 0, or -ENOMEM. Room for all of e: another thread may have
 * heard a peer again since skipped was counted, so fewer may skip now. */
static int gather_live(struct pc_fabric *f, const struct entries *e, uint64_t now,
		       struct entries *live, size_t **at)
{
	*live = *e;
	live->n = 0;
	live->v = malloc(e->n * (e->size + sizeof(**at)));
	if (!live->v)
		return -ENOMEM;
	*at = (size_t *)(void *)(live->v + e->n * e->size);
	for (size_t i = 0; i < e->n; i++) {
		int skip = entry_skips(f, e, i, now);

		if (skip) {
			*entry_status(e, i) = skip;
		} else {
			(*at)[live->n] = i;
			memcpy(live->v + live->n++ * e->size, e->v + i * e->size, e->size);
		}
	}
	return 0;
}

static void scatter_live(const struct entries *e, struct entries *live, const size_t *at)
{
	for (size_t j = 0; j < live->n; j++)
		memcpy(e->v + at[j] * e->size, live->v + j * e->size, e->size);
	free(live->v);
}

static int post_all(struct pc_fabric *f, struct pc_op *ops, size_t n)
{
	return n ? f->ops->post(f, ops, n) : 0;
}

static int call_all(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n)
{
	return n ? f->ops->call(f, rpcs, n) : 0;
}

int pc_fabric_post(struct pc_fabric *f, struct pc_op *ops, size_t n)
{
	uint64_t rd = 0, wr = 0, nr = 0, nw = 0, nc = 0, errs = 0, now;
	struct entries e = ENTRIES(ops, n), live;
	size_t skipped, *at;
	int ret;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		assert(ops[i].peer < f->nr_peers);
		assert(ops[i].kind != PC_OP_CAS || (ops[i].len == 8 && !ops[i].head_len));
		ops[i].status = 0;
		if (ops[i].prepare && !f->prepares)
			pc_op_prepare(&ops[i]);
	}
	now = pc_env_now(f->env);
	skipped = count_skipped(f, &e, now);
	if (!skipped) {
		ret = post_all(f, ops, n);
	} else {
		ret = gather_live(f, &e, now, &live, &at);
		if (ret)
			return ret;
		skipped = n - live.n;	/* what really skipped */
		ret = post_all(f, (struct pc_op *)(void *)live.v, live.n);
		scatter_live(&e, &live, at);
	}
	if (ret)
		return ret;
	note_outcomes(f, &e);
	for (size_t i = 0; i < n; i++) {
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
	if (skipped)
		pc_stat_add(&f->stats.skipped_ops, skipped);
	return 0;
}

int pc_fabric_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n)
{
	struct entries e = ENTRIES(rpcs, n), live;
	size_t skipped, *at;
	uint64_t now;

	e.flags_off = offsetof(struct pc_rpc, flags);
	int ret;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		assert(rpcs[i].peer < f->nr_peers);
		rpcs[i].status = 0;
		rpcs[i].resp.len = 0;
		rpcs[i].resp.virt_len = 0;
	}
	now = pc_env_now(f->env);
	skipped = count_skipped(f, &e, now);
	if (!skipped) {
		ret = call_all(f, rpcs, n);
	} else {
		ret = gather_live(f, &e, now, &live, &at);
		if (ret)
			return ret;
		skipped = n - live.n;
		ret = call_all(f, (struct pc_rpc *)(void *)live.v, live.n);
		scatter_live(&e, &live, at);
	}
	if (ret)
		return ret;
	note_outcomes(f, &e);
	pc_stat_add(&f->stats.rpc_phases, 1);
	pc_stat_add(&f->stats.rpcs, n - skipped);
	if (skipped)
		pc_stat_add(&f->stats.skipped_rpcs, skipped);
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
	m->virt_len = 0;
}
