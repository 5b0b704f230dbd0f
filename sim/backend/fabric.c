/*
 * fabric.c - the simulator's fabric: one-sided ops and RPCs of the library's own
 * code, applied to nodes' memory by the in-process world (same region checks),
 * at the virtual time the network model says they complete.
 *
 * A post groups its ops by peer and stripes each peer's over the rails both nodes
 * have: READ bytes (and the payload bytes a payload-free op stands for) flow from the
 * peer, WRITE bytes to it. The process that posted sleeps until every peer's
 * transfers are through; each peer's ops take effect then, in order. An RPC crosses
 * the network, runs its handler as a process on the target node (it may sleep on
 * storage there), and its answer crosses back. A node that idled past nodes.idle_us
 * starts wake_us later on what wakes it (env.c): a peer on a post or a request, a
 * caller on its answer. Without a time model, peers' regions
 * are mapped (pc_fabric_map) and the stores use them as their own memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "inproc/inproc.h"
#include "world.h"

#define MSG_OVERHEAD 64.0	/* bytes of framing per message */

struct sim_fabric {
	struct pc_fabric base;
	struct sim_world *w;
	struct pc_fabric *mem;		/* in-process endpoint: regions, handler */
	uint32_t rr;			/* rail rotation */
};

static struct sim_fabric *to_sf(struct pc_fabric *f)
{
	return (struct sim_fabric *)f;
}

static int sf_open(struct pc_fabric *f, const struct pc_fabric_params *p)
{
	struct sim_fabric *sf = to_sf(f);
	struct pc_fabric_params q = *p;
	int ret;

	sf->w = p->backend_arg;
	if (!sf->w)
		return -EINVAL;
	q.backend_arg = sf->w->mem;
	ret = pc_fabric_open_ops(&inproc_fabric_ops, &q, &sf->mem);
	if (ret)
		return ret;
	f->incarnation = sf->mem->incarnation;
	/* Without a time model nothing is gained by moving bytes through ops: the
	 * stores use peers' slots directly, as they use their own. */
	f->maps = sf->mem->maps;
	f->map_epoch = sf->mem->map_epoch;
	return 0;
}

static void sf_close(struct pc_fabric *f)
{
	pc_fabric_close(to_sf(f)->mem);
}

static int sf_reg(struct pc_fabric *f, struct pc_region *r)
{
	return pc_fabric_reg(to_sf(f)->mem, r);
}

static void sf_dereg(struct pc_fabric *f, struct pc_region *r)
{
	pc_fabric_dereg(to_sf(f)->mem, r);
}

static int sf_serve(struct pc_fabric *f, pc_rpc_handler *h, void *arg)
{
	struct sim_fabric *sf = to_sf(f);

	if (f->self != PC_PEER_NONE)	/* which requests it answers without a hand-off */
		sf->w->quick[f->self] = f->quick_rpcs;
	return pc_fabric_serve(sf->mem, h, arg);
}

static int sf_map(struct pc_fabric *f, uint32_t peer, uint64_t peer_inc, uint32_t rkey,
		  uint64_t raddr, uint64_t len, unsigned access, void **addr)
{
	return pc_fabric_map(to_sf(f)->mem, peer, peer_inc, rkey, raddr, len, access, addr);
}

static bool timed(struct sim_fabric *sf)
{
	return sf->w->timing && sf->base.self != PC_PEER_NONE && sim_self(sf->w->s);
}

/* The caller waited since t0 for its post or call: as long again as the node's
 * jitter stretches that wait (0 without). */
static void stretch_wait(struct sim_fabric *sf, uint64_t t0)
{
	struct sim_world *w = sf->w;
	uint64_t extra = sim_env_stretch(&w->envs[sf->base.self], sim_now(w->s) - t0);

	if (extra)
		sim_sleep(w->s, extra);
}

/* ------------------------------------------------------------------ posts */

struct post {
	struct sim_fabric *sf;
	struct sim_proc *proc;
	struct pc_op *ops;
	uint32_t *order;		/* op indices grouped by peer */
	int pending;			/* peers not through yet */
	uint64_t wake;			/* the longest wake-up of an idle peer (ns) */
};

struct peer_part {
	struct post *post;
	uint32_t first, count;		/* its ops in post->order */
	int parts;			/* transfers not through yet */
};

static void peer_through(struct sim *s, void *arg)
{
	struct peer_part *pp = arg;
	struct post *po = pp->post;

	if (--pp->parts)
		return;
	sim_env_busy(sim_world_senv(po->sf->w, po->ops[po->order[pp->first]].peer));
	inproc_world_apply_batch(po->sf->w->mem, po->ops, po->order + pp->first, pp->count);
	if (!--po->pending)
		sim_wake(s, po->proc);
}

/*
 * order[] = the op indices grouped by peer, peers ascending, post order within a
 * peer: a counting sort over the peers the post names (w->peer_ops is all zero
 * between calls; peers[] has room for n).
 */
static void group_by_peer(struct sim_world *w, const struct pc_op *ops, size_t n,
			      uint32_t *order, uint32_t *peers)
{
	uint32_t *cnt = w->peer_ops, np = 0, at = 0;

	for (size_t i = 0; i < n; i++)
		if (!cnt[ops[i].peer]++)
			peers[np++] = ops[i].peer;
	for (uint32_t i = 1; i < np; i++) {	/* few peers: insertion sort */
		uint32_t p = peers[i], j = i;

		for (; j && peers[j - 1] > p; j--)
			peers[j] = peers[j - 1];
		peers[j] = p;
	}
	for (uint32_t i = 0; i < np; i++) {	/* counts become start positions */
		uint32_t c = cnt[peers[i]];

		cnt[peers[i]] = at;
		at += c;
	}
	for (size_t i = 0; i < n; i++)
		order[cnt[ops[i].peer]++] = (uint32_t)i;
	for (uint32_t i = 0; i < np; i++)
		cnt[peers[i]] = 0;
}

static int sf_post(struct pc_fabric *f, struct pc_op *ops, size_t n)
{
	struct sim_fabric *sf = to_sf(f);
	struct sim_world *w = sf->w;
	struct post po = { .sf = sf, .ops = ops };
	struct peer_part *parts;
	uint32_t self = f->self;
	uint64_t t0;

	if (!timed(sf)) {
		inproc_world_apply_batch(w->mem, ops, NULL, n);
		return 0;
	}
	t0 = sim_now(w->s);
	sim_env_busy(sim_world_senv(w, self));
	/* one block: order[n], then peers[n] (group_by_peer's), then one part per peer */
	po.order = malloc(n * (2 * sizeof(*po.order) + sizeof(*parts)));
	if (!po.order)
		return -ENOMEM;
	parts = (struct peer_part *)(po.order + 2 * n);
	group_by_peer(w, ops, n, po.order, po.order + n);
	po.proc = sim_self(w->s);
	for (size_t i = 0; i < n;) {
		uint32_t peer = ops[po.order[i]].peer, rails, nops;
		uint64_t wake;
		double rd = 0, wr = 0;
		struct peer_part *pp;
		size_t j = i;

		while (j < n && ops[po.order[j]].peer == peer) {
			const struct pc_op *op = &ops[po.order[j]];
			double b = (double)pc_op_bytes(op) + op->virt_len;

			if (op->kind == PC_OP_READ)
				rd += b;
			else
				wr += b;
			j++;
		}
		pp = &parts[po.pending];
		*pp = (struct peer_part){ 0 };
		wake = sim_env_wake(sim_world_senv(w, peer), false);	/* the peer's server, if it idled */
		po.wake = wake > po.wake ? wake : po.wake;
		pp->post = &po;
		pp->first = (uint32_t)i;
		pp->count = (uint32_t)(j - i);
		nops = pp->count;
		rails = net_rails(w->net, self, peer);
		po.pending++;
		/*
		 * Stripe over the rails: each carries its share of ops and bytes. The
		 * direction with payload queues on the ports; a READ's request messages
		 * (MSG_OVERHEAD an op, the other way) are counted, not queued: next to
		 * pages they are noise, and queueing them would take as many events again.
		 * A post with payload both ways queues both.
		 */
		for (uint32_t r = 0; r < rails; r++) {
			uint32_t rail = (sf->rr + r) % rails, share = nops / rails + (r < nops % rails);
			double in = rd * share / nops, out = wr * share / nops + MSG_OVERHEAD * share;

			if (!share)
				continue;
			if (in > 0) {
				pp->parts++;
				net_transfer(w->net, self, peer, self, rail, share, in, false,
					     peer_through, pp);
			}
			if (wr > 0 || !(in > 0)) {
				pp->parts++;
				net_transfer(w->net, self, self, peer, rail, share, out, wr > 0,
					     peer_through, pp);
			} else {
				net_count(w->net, out);
			}
		}
		sf->rr++;
		i = j;
	}
	if (po.pending) {
		inproc_world_prefetch(w->mem, ops, n);	/* in cache when the ports are through */
		sim_block(w->s);
		/* a peer that idled started on the ops that much later */
		if (po.wake)
			sim_sleep(w->s, po.wake);
		stretch_wait(sf, t0);
		sim_env_busy(sim_world_senv(w, self));
	}
	free(po.order);
	return 0;
}

/* ------------------------------------------------------------------ RPCs */

static bool membership_rpc(uint16_t opcode)
{
	return opcode == PC_RPC_HEARTBEAT || opcode == PC_RPC_MEMBER || opcode == PC_RPC_JOIN;
}

/* What membership costs the network: counted once an RPC is answered. */
static void count_rpc(struct sim_world *w, const struct pc_rpc *r)
{
	if (!membership_rpc(r->opcode))
		return;
	w->member_rpcs++;
	w->member_bytes += (double)r->req_len + (double)r->resp.len + 2 * MSG_OVERHEAD;
}

struct call {
	struct sim_fabric *sf;
	struct sim_proc *proc;
	int pending;
	uint64_t woken_at;		/* when the caller, if it idled, runs again */
};

struct rpc_run {
	struct call *c;
	struct pc_rpc *rpc;
};

static void wake_caller(struct sim *s, void *arg)
{
	struct call *c = arg;

	sim_wake(s, c->proc);
}

/* An answer is in: the peer sent it until now (its idle time starts here, as after
 * the last byte of a post). A caller that idled meanwhile takes its wake-up to see it
 * (the first answer wakes it, later ones find it up), and then copies out the bytes
 * that waited in its socket; one that was up took them in as they came. */
static void answer_arrived(struct sim *s, void *arg)
{
	struct rpc_run *rr = arg;
	struct call *c = rr->c;
	struct sim_env *e = sim_world_senv(c->sf->w, c->sf->base.self);
	uint64_t up = sim_env_wake(e, true);

	sim_env_busy(sim_world_senv(c->sf->w, rr->rpc->peer));

	if (up && e->copy_rate > 0)
		up += (uint64_t)((double)(rr->rpc->resp.len + rr->rpc->resp.virt_len) / e->copy_rate);
	up += sim_now(s);
	free(rr);
	c->woken_at = up > c->woken_at ? up : c->woken_at;
	if (!--c->pending)
		sim_at(s, c->woken_at, wake_caller, c);
}

/* The handler, as a process on the target node: after nodes.rpc_us for a request
 * it does not answer on the spot (a tcp server hands those to a worker thread and
 * takes the answer back; the caller's jitter stretches the whole call). */
static void serve_rpc(void *arg)
{
	struct rpc_run *rr = arg;
	struct sim_fabric *sf = rr->c->sf;
	struct sim_world *w = sf->w;
	uint32_t peer = rr->rpc->peer;
	uint16_t op = rr->rpc->opcode;
	double hand_off = w->topo->nodes[peer].rpc_us;
	uint64_t wake = sim_env_wake(sim_world_senv(w, peer), false);	/* it idled: it wakes first */

	if (hand_off > 0 && !(op < 64 && w->quick[peer] >> op & 1))
		wake += (uint64_t)(hand_off * 1000.0);
	if (wake)
		sim_sleep(w->s, wake);
	rr->rpc->status = inproc_world_call(w->mem, sf->base.self, rr->rpc);
	sim_env_busy(sim_world_senv(w, peer));
	w->rpc_bytes += (double)rr->rpc->resp.len + (double)rr->rpc->resp.virt_len;
	count_rpc(w, rr->rpc);
	net_transfer(w->net, sf->base.self, peer, sf->base.self, 0, 1,
		     (double)(rr->rpc->resp.len + rr->rpc->resp.virt_len) + MSG_OVERHEAD, false,
		     answer_arrived, rr);
}

static void request_arrived(struct sim *s, void *arg)
{
	struct rpc_run *rr = arg;

	if (!sim_spawn(s, serve_rpc, rr, rr->rpc->peer, true))
		abort();
}

static int sf_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n)
{
	struct sim_fabric *sf = to_sf(f);
	struct call c = { .sf = sf };
	uint64_t t0;

	if (f->self != PC_PEER_NONE && sf->w->dead[f->self]) {
		for (size_t i = 0; i < n; i++)
			rpcs[i].status = -ENETDOWN;	/* a crashed node sends nothing */
		return 0;
	}
	if (!timed(sf)) {
		for (size_t i = 0; i < n; i++) {
			rpcs[i].status = inproc_world_call(sf->w->mem, f->self, &rpcs[i]);
			count_rpc(sf->w, &rpcs[i]);
		}
		return 0;
	}
	c.proc = sim_self(sf->w->s);
	t0 = sim_now(sf->w->s);
	sim_env_busy(sim_world_senv(sf->w, f->self));
	for (size_t i = 0; i < n; i++) {
		struct rpc_run *rr = calloc(1, sizeof(*rr));

		if (!rr)
			abort();
		rr->c = &c;
		rr->rpc = &rpcs[i];
		c.pending++;
		sf->w->rpc_bytes += (double)rpcs[i].req_len;
		net_transfer(sf->w->net, f->self, f->self, rpcs[i].peer, 0, 1,
			     (double)rpcs[i].req_len + MSG_OVERHEAD, false, request_arrived, rr);
	}
	if (c.pending) {
		sim_block(sf->w->s);
		stretch_wait(sf, t0);
		sim_env_busy(sim_world_senv(sf->w, f->self));
	}
	return 0;
}

const struct pc_fabric_ops sim_fabric_ops = {
	.size = sizeof(struct pc_fabric_ops),
	.name = "sim",
	.obj_size = sizeof(struct sim_fabric),
	.open = sf_open,
	.close = sf_close,
	.reg = sf_reg,
	.dereg = sf_dereg,
	.serve = sf_serve,
	.post = sf_post,
	.call = sf_call,
	.map = sf_map,
};
