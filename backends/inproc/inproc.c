/*
 * inproc.c - in-process fabric: all nodes in one address space, ops applied
 * directly through the shared region-table checks.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "config/topology.h"
#include "inproc.h"
#include "io/region.h"

struct inproc_fabric {
	struct pc_fabric base;
	struct inproc_world *world;
	struct region_table regions;
	pc_rpc_handler *handler;
	void *handler_arg;
	uint32_t busy;			/* this fabric's posts and calls running at it */
};

struct inproc_world {
	pthread_mutex_t lock;
	pthread_cond_t idle;		/* an endpoint's busy fell to 0 */
	uint32_t nr_nodes;
	struct inproc_fabric **nodes;	/* written under lock, read by map() without */
	bool *down;
	bool share;			/* endpoints opened now may map peers' memory */
	uint64_t epoch;			/* map epoch: advanced by every change that can
					 * make a mapped address stale (pc_fabric.map_epoch) */
};

static struct inproc_fabric *to_inproc(struct pc_fabric *f)
{
	return (struct inproc_fabric *)f;
}

/* Addresses map() gave may be stale from now on. */
static void bump_epoch(struct inproc_world *w)
{
	__atomic_add_fetch(&w->epoch, 1, __ATOMIC_ACQ_REL);
}

struct inproc_world *inproc_world_create(uint32_t nr_nodes)
{
	struct inproc_world *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->nodes = calloc(nr_nodes, sizeof(*w->nodes));
	w->down = calloc(nr_nodes, sizeof(*w->down));
	if (!w->nodes || !w->down) {
		free(w->nodes);
		free(w->down);
		free(w);
		return NULL;
	}
	w->nr_nodes = nr_nodes;
	w->epoch = 1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->idle, NULL);
	return w;
}

void inproc_world_destroy(struct inproc_world *w)
{
	if (!w)
		return;
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->idle);
	free(w->nodes);
	free(w->down);
	free(w);
}

void inproc_world_set_down(struct inproc_world *w, uint32_t node, bool down)
{
	pthread_mutex_lock(&w->lock);
	if (node < w->nr_nodes)
		__atomic_store_n(&w->down[node], down, __ATOMIC_RELEASE);
	bump_epoch(w);
	pthread_mutex_unlock(&w->lock);
}

void inproc_world_share(struct inproc_world *w, bool share)
{
	w->share = share;
}

/* An endpoint's handler and its argument as one pair, taken under the world's lock:
 * a stop or a restart of the service (inproc_serve) changes both, and a call made
 * with the handler of one and the argument of the other runs on the wrong store. */
struct handler_ref {
	pc_rpc_handler *h;
	void *arg;
};

/* The live endpoint of node, or NULL when it is closed or down, with its handler
 * (under the world's lock). Endpoints are closed only when no op is in flight
 * (tests and the simulator guarantee that). */
static struct inproc_fabric *endpoint(struct inproc_world *w, uint32_t node, struct handler_ref *hr)
{
	struct inproc_fabric *ep = NULL;

	pthread_mutex_lock(&w->lock);
	if (node < w->nr_nodes && !w->down[node])
		ep = w->nodes[node];
	if (ep)
		*hr = (struct handler_ref){ .h = ep->handler, .arg = ep->handler_arg };
	pthread_mutex_unlock(&w->lock);
	return ep;
}

/* The live, serving endpoint of node, counted busy until leave(): stopping its
 * service waits for that (a node that closes never has another thread inside it).
 * hr (if given) gets its handler as it was when entered. */
static struct inproc_fabric *enter(struct inproc_world *w, uint32_t node, struct handler_ref *hr)
{
	struct inproc_fabric *ep = NULL;

	pthread_mutex_lock(&w->lock);
	if (node < w->nr_nodes && !w->down[node] && w->nodes[node] && w->nodes[node]->handler) {
		ep = w->nodes[node];
		ep->busy++;
		if (hr)
			*hr = (struct handler_ref){ .h = ep->handler, .arg = ep->handler_arg };
	}
	pthread_mutex_unlock(&w->lock);
	return ep;
}

static void leave(struct inproc_world *w, struct inproc_fabric *ep)
{
	pthread_mutex_lock(&w->lock);
	if (!--ep->busy)
		pthread_cond_broadcast(&w->idle);
	pthread_mutex_unlock(&w->lock);
}

/* Whether op may run at ep, and where: 0 or -errno (a refusal is counted). */
static int check_at(struct inproc_fabric *ep, const struct pc_op *op, uint8_t **where)
{
	int ret;

	if (!ep || !ep->handler)
		return -ECONNREFUSED;
	if (op->peer_inc && op->peer_inc != ep->base.incarnation)
		return -ESTALE;
	ret = region_table_check(&ep->regions, op->rkey, op->raddr, pc_op_bytes(op),
				 region_access_for(op->kind), where);
	if (ret)
		region_count_refused(&ep->base.stats, ret);
	return ret;
}

static int apply_at(struct inproc_fabric *ep, struct pc_op *op, struct region_tally *served)
{
	uint8_t *where;
	int ret = check_at(ep, op, &where);

	if (ret)
		return ret;
	region_apply(op, where);
	region_tally_op(served, op->kind, pc_op_bytes(op));
	return 0;
}

static int call_at(struct inproc_fabric *ep, const struct handler_ref *hr, uint32_t from,
		   struct pc_rpc *rpc)
{
	if (!ep || !hr->h)
		return -ECONNREFUSED;
	pc_stat_add(&ep->base.stats.served_rpcs, 1);
	return hr->h(hr->arg, from, rpc->opcode, rpc->req, rpc->req_len, &rpc->resp);
}

/*
 * As n apply_at calls, in order. The world's lock is taken once per chunk,
 * every op of a chunk is checked and its target prefetched before any is applied,
 * and served counts are added once per run of ops to one endpoint: the ops' cache
 * misses overlap, where per-op locks made each wait for the one before.
 */
void inproc_world_apply_batch(struct inproc_world *w, struct pc_op *ops, const uint32_t *idx,
			      size_t n)
{
	enum { CHUNK = 64 };
	struct inproc_fabric *eps[CHUNK];
	struct pc_op *o[CHUNK];
	uint8_t *where[CHUNK];

	for (size_t base = 0; base < n; base += CHUNK) {
		size_t m = n - base < CHUNK ? n - base : CHUNK, i, j;

		for (i = 0; i < m; i++)
			o[i] = &ops[idx ? idx[base + i] : base + i];
		pthread_mutex_lock(&w->lock);
		for (i = 0; i < m; i++) {
			uint32_t node = o[i]->peer;

			eps[i] = node < w->nr_nodes && !w->down[node] ? w->nodes[node] : NULL;
		}
		pthread_mutex_unlock(&w->lock);
		for (i = 0; i < m; i++) {
			o[i]->status = check_at(eps[i], o[i], &where[i]);
			if (!o[i]->status)
				__builtin_prefetch(where[i]);
		}
		for (i = 0; i < m; i++)
			if (!o[i]->status)
				region_apply(o[i], where[i]);
		for (i = 0; i < m; i = j) {
			struct region_tally served = { 0 };

			for (j = i; j < m && eps[j] == eps[i]; j++)
				if (!o[j]->status)
					region_tally_op(&served, o[j]->kind, pc_op_bytes(o[j]));
			if (eps[i])
				region_tally_flush(&eps[i]->base.stats, &served);
		}
	}
}

/* The live endpoint of node without the lock, for map(): the same answer endpoint()
 * gives, read with atomic loads (the world's writers store under the lock). */
static struct inproc_fabric *endpoint_nolock(struct inproc_world *w, uint32_t node)
{
	if (node >= w->nr_nodes || __atomic_load_n(&w->down[node], __ATOMIC_ACQUIRE))
		return NULL;
	return __atomic_load_n(&w->nodes[node], __ATOMIC_ACQUIRE);
}

/* A hint only: an op that will fail, or a region gone by the time the op runs,
 * costs a wasted prefetch. At most the first 512 bytes of an op. */
void inproc_world_prefetch(struct inproc_world *w, const struct pc_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct pc_op *op = &ops[i];
		struct inproc_fabric *ep = endpoint_nolock(w, op->peer);
		uint64_t len = pc_op_bytes(op);
		uint8_t *where;

		if (!ep || region_table_check(&ep->regions, op->rkey, op->raddr, len,
					      region_access_for(op->kind), &where))
			continue;
		for (uint64_t off = 0; off < len && off < 512; off += 64)
			__builtin_prefetch(where + off);
	}
}

static int inproc_map(struct pc_fabric *f, uint32_t peer, uint64_t peer_inc, uint32_t rkey,
		      uint64_t raddr, uint64_t len, unsigned access, void **addr)
{
	struct inproc_fabric *ep = endpoint_nolock(to_inproc(f)->world, peer);
	uint8_t *where;
	int ret;

	if (!ep || !ep->handler)
		return -ECONNREFUSED;
	if (peer_inc && peer_inc != ep->base.incarnation)
		return -ESTALE;
	ret = region_table_check(&ep->regions, rkey, raddr, len, access, &where);
	if (ret)
		return ret;
	*addr = where;
	return 0;
}

int inproc_world_call(struct inproc_world *w, uint32_t from, struct pc_rpc *rpc)
{
	struct handler_ref hr = { 0 };
	struct inproc_fabric *ep = endpoint(w, rpc->peer, &hr);

	return call_at(ep, &hr, from, rpc);
}

static int inproc_open(struct pc_fabric *f, const struct pc_fabric_params *p)
{
	struct inproc_fabric *ep = to_inproc(f);
	struct inproc_world *w = p->backend_arg;
	int ret;

	if (!w || w->nr_nodes < p->topo->nr_nodes)
		return -EINVAL;
	ret = region_table_init(&ep->regions);
	if (ret)
		return ret;
	ep->world = w;
	f->maps = w->share;
	f->map_epoch = &w->epoch;
	if (f->self == PC_PEER_NONE)
		return 0;
	pthread_mutex_lock(&w->lock);
	if (w->nodes[f->self])
		ret = -EADDRINUSE;
	else
		__atomic_store_n(&w->nodes[f->self], ep, __ATOMIC_RELEASE);
	bump_epoch(w);
	pthread_mutex_unlock(&w->lock);
	if (ret)
		region_table_fini(&ep->regions);
	return ret;
}

static void inproc_close(struct pc_fabric *f)
{
	struct inproc_fabric *ep = to_inproc(f);

	if (f->self != PC_PEER_NONE) {
		pthread_mutex_lock(&ep->world->lock);
		__atomic_store_n(&ep->world->nodes[f->self], NULL, __ATOMIC_RELEASE);
		bump_epoch(ep->world);
		pthread_mutex_unlock(&ep->world->lock);
	}
	region_table_fini(&ep->regions);
}

static int inproc_reg(struct pc_fabric *f, struct pc_region *r)
{
	return region_table_add(&to_inproc(f)->regions, r, pc_env_random(f->env));
}

static void inproc_dereg(struct pc_fabric *f, struct pc_region *r)
{
	region_table_del(&to_inproc(f)->regions, r->key);
	bump_epoch(to_inproc(f)->world);
}

static int inproc_serve(struct pc_fabric *f, pc_rpc_handler *h, void *arg)
{
	struct inproc_fabric *ep = to_inproc(f);

	if (f->self == PC_PEER_NONE)
		return -EINVAL;
	pthread_mutex_lock(&ep->world->lock);
	ep->handler_arg = arg;
	ep->handler = h;
	bump_epoch(ep->world);
	while (!h && ep->busy)	/* stopped: wait out the posts and calls inside it */
		pthread_cond_wait(&ep->world->idle, &ep->world->lock);
	pthread_mutex_unlock(&ep->world->lock);
	return 0;
}

/* Each run of ops to one peer enters it once and adds its served counts once. */
static int inproc_post(struct pc_fabric *f, struct pc_op *ops, size_t n)
{
	struct inproc_world *w = to_inproc(f)->world;

	for (size_t i = 0, j; i < n; i = j) {
		struct inproc_fabric *ep = enter(w, ops[i].peer, NULL);
		struct region_tally served = { 0 };

		for (j = i; j < n && ops[j].peer == ops[i].peer; j++)
			ops[j].status = apply_at(ep, &ops[j], &served);
		if (ep) {
			region_tally_flush(&ep->base.stats, &served);
			leave(w, ep);
		}
	}
	return 0;
}

static int inproc_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n)
{
	struct inproc_world *w = to_inproc(f)->world;

	for (size_t i = 0; i < n; i++) {
		struct handler_ref hr = { 0 };
		struct inproc_fabric *ep = enter(w, rpcs[i].peer, &hr);

		rpcs[i].status = call_at(ep, &hr, f->self, &rpcs[i]);
		if (ep)
			leave(w, ep);
	}
	return 0;
}

const struct pc_fabric_ops inproc_fabric_ops = {
	.size = sizeof(struct pc_fabric_ops),
	.name = "inproc",
	.obj_size = sizeof(struct inproc_fabric),
	.open = inproc_open,
	.close = inproc_close,
	.reg = inproc_reg,
	.dereg = inproc_dereg,
	.serve = inproc_serve,
	.post = inproc_post,
	.call = inproc_call,
	.map = inproc_map,
};
