/*
 * store.c - the store facade: opens the topology, the fabric and the mode chosen by
 * store.mode, routes batches to the mode through its ops, keeps the counters.
 *
 * Not for: placement or slot logic (the modes), peers' requests and membership
 * (store_rpc.c), the services modes share (store_svc.c), transport (backends/).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/sized.h"
#include "config/topology.h"
#include "proto.h"
#include "member.h"
#include "store.h"
#include "tier/tier.h"

static const struct mode_ops *const modes[] = {
	[PC_MODE_SLOTMAP] = &slotmap_mode_ops,
	[PC_MODE_P2P] = &p2p_mode_ops,
};

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

/* The topology: loaded or copied, then the caller's overrides. */
static int open_topology(struct store_svc *sv, const struct pc_store_opts *o)
{
	char err[PC_ERR_MAX];
	int ret;

	if (o->topo) {
		sv->topo = pc_topology_dup(o->topo);
		if (!sv->topo)
			return -ENOMEM;
	} else {
		ret = pc_topology_load(o->topology, &sv->topo, err, sizeof(err));
		if (ret)
			return open_error(o, "%s", err);
	}
	for (const char *const *a = o->set; a && *a; a++)
		if (pc_topology_set(sv->topo, *a, err, sizeof(err)))
			return open_error(o, "%s", err);
	return 0;
}

/* Every node of the topology's table on a new ring, or the caller's shared one. */
static int open_ring(struct store_svc *sv, struct ring *shared)
{
	const struct pc_topology *t = sv->topo;
	uint32_t *ids, n = 0;
	const char **names;
	int ret;

	if (shared) {
		sv->ring = ring_ref(shared);
		return 0;
	}
	sv->ring = ring_create(t->store.vnodes);
	ids = malloc(t->nr_nodes * sizeof(*ids));
	names = malloc(t->nr_nodes * sizeof(*names));
	ret = sv->ring && ids && names ? 0 : -ENOMEM;
	for (uint32_t i = 0; !ret && i < t->nr_nodes; i++) {
		if (!pc_node_listed(&t->nodes[i]))
			continue;
		ids[n] = i;
		names[n++] = t->nodes[i].name;
	}
	if (!ret)
		ret = ring_add_many(sv->ring, ids, names, n);
	free(ids);
	free(names);
	return ret;
}

static int open_fabric(struct pc_store *st, const struct pc_store_opts *o, const struct store_deps *d)
{
	struct store_svc *sv = &st->svc;
	struct pc_fabric_params p = { .size = sizeof(p), .topo = sv->topo, .self = sv->self, .env = sv->env,
				      .backend_arg = d->backend_arg };
	char err[PC_ERR_MAX];

	if (d->use_fabric) {
		sv->fabric = d->use_fabric;
		if (sv->fabric->self != sv->self || sv->fabric->topo->nr_nodes != sv->topo->nr_nodes)
			return open_error(o, "the fabric given was opened for another node or topology");
		return 0;
	}
	if (d->open_fabric(o->fabric, &p, &sv->fabric, err, sizeof(err)))
		return open_error(o, "%s", err);
	st->owns_fabric = true;
	return 0;
}

static int open_tier(struct pc_store *st, const struct pc_store_opts *o)
{
	struct store_svc *sv = &st->svc;
	struct tier_params tp = { .fabric = sv->fabric, .env = sv->env, .cfg = &sv->topo->store,
				  .disk_dir = sv->topo->nodes[sv->self].nvme.path,
				  .storage = sv->storage, .storage_arg = sv->backend_arg,
				  .payload_free = sv->payload_free };
	char err[PC_ERR_MAX];

	if (tier_open(&tp, &st->tier, err, sizeof(err)))
		return open_error(o, "%s: node %s: %s", sv->topo->source, o->node, err);
	return 0;
}

/* Undo what open did, in reverse, from whatever point it reached. */
static void teardown(struct pc_store *st)
{
	struct store_svc *sv = &st->svc;

	/* Stop answering peers before the slots they address go away. */
	if (st->serving)
		pc_fabric_serve(sv->fabric, NULL, NULL);
	members_close(st->members);
	tier_close(st->tier);
	if (st->mode)
		st->mode_ops->close(st->mode);
	store_svc_fini(sv);
	if (st->owns_fabric)
		pc_fabric_close(sv->fabric);
	ring_destroy(sv->ring);
	store_rings_free(st->retired);
	store_rings_free(st->retired_before);
	pc_topology_free(sv->topo);
	pthread_mutex_destroy(&st->member_lock);
	pthread_mutex_destroy(&st->occ_lock);
	free(st);
}

int store_open(const struct pc_store_opts *o, const struct store_deps *d, struct pc_store **out)
{
	char err[PC_ERR_MAX];
	struct store_svc *sv;
	struct member_boot boot = { 0 };
	struct pc_store *st;
	int ret, idx;

	if (!o || o->size < sizeof(*o) || !d || !d->env || !d->storage ||
	    (!d->open_fabric && !d->use_fabric))
		return -EINVAL;
	/* The options are readable from here on: an error says why in o->err. */
	if (!o->topology && !o->topo)
		return open_error(o, "no topology: set pc_store_opts.topology to a YAML file "
				  "or .topo to one pc_topology_load() loaded");
	/* Else a store opened in full would have nowhere to go: written through NULL. */
	if (!out)
		return open_error(o, "no place for the store: pass pc_store_open() a "
				  "struct pc_store ** to fill");
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	sv = &st->svc;
	sv->env = d->env;
	sv->storage = d->storage;
	sv->backend_arg = d->backend_arg;
	sv->payload_free = d->payload_free;
	sv->serial = pc_env_serial(d->env);
	sv->self = PC_PEER_NONE;
	store_svc_init(sv);
	pthread_mutex_init(&st->member_lock, NULL);
	pthread_mutex_init(&st->occ_lock, NULL);
	ret = open_topology(sv, o);
	if (!ret && (ret = members_discover(sv->topo, o->node, d, &boot, err, sizeof(err))))
		open_error(o, "%s", err);
	if (ret)
		goto err;
	if (o->node) {
		idx = pc_topology_find_node(sv->topo, o->node);
		if (idx < 0) {
			ret = open_error(o, "%s: no node named '%s'; pick one of the names under nodes:",
					 sv->topo->source, o->node);
			goto err;
		}
		sv->self = (uint32_t)idx;
	}
	ret = open_ring(sv, d->ring);
	if (!ret)
		ret = open_fabric(st, o, d);
	if (ret)
		goto err;
	st->mode_ops = modes[sv->topo->store.mode];
	ret = st->mode_ops->open(sv, &st->mode, err, sizeof(err));
	if (ret) {
		open_error(o, "%s: node %s: %s", sv->topo->source, o->node ? o->node : "-", err);
		goto err;
	}
	if (sv->self != PC_PEER_NONE && sv->topo->store.tier_host_blocks) {
		ret = open_tier(st, o);
		if (ret)
			goto err;
	}
	ret = members_open(st, &boot, &st->members);
	if (ret)
		goto err;
	if (sv->self != PC_PEER_NONE) {
		sv->fabric->quick_rpcs = PROTO_QUICK_RPCS;
		sv->fabric->rpc_max_req = store_rpc_max_req;
		ret = pc_fabric_serve(sv->fabric, store_rpc, st);
		if (ret) {
			const struct pc_node *n = &sv->topo->nodes[sv->self];

			open_error(o, "%s: node %s: cannot serve on %s port %u: %s", sv->topo->source,
				   n->name, n->address, n->port, strerror(-ret));
			goto err;
		}
		st->serving = true;
	}
	ret = d->no_heartbeats ? 0 : members_start(st->members);
	if (ret) {
		open_error(o, "%s: cannot start the membership task: %s", sv->topo->source,
			   strerror(-ret));
		goto err;
	}
	members_boot_fini(&boot);
	*out = st;
	return 0;
err:
	members_boot_fini(&boot);
	teardown(st);
	return ret;
}

void pc_store_close(struct pc_store *st)
{
	if (st)
		teardown(st);
}

/* A batch call, timed into its latency histogram (two clock reads per batch). */
static int timed(struct pc_store *st, enum store_batch_op op,
		 int (*fn)(struct store_mode *, struct pc_page *, size_t), struct pc_page *pages,
		 size_t n)
{
	uint64_t t0 = pc_env_now(st->svc.env);
	unsigned pass;
	int ret;

	METRIC_ADD(&st->svc, batches, 1);
	pass = store_ring_enter(&st->svc);
	ret = fn(st->mode, pages, n);
	store_ring_exit(&st->svc, pass);
	latency_record(&st->lat[op], pc_env_now(st->svc.env) - t0, st->svc.serial);
	return ret;
}

int pc_batch_set(struct pc_store *st, struct pc_page *pages, size_t n)
{
	if (!st || (!pages && n))
		return -EINVAL;
	return timed(st, STORE_OP_SET, st->mode_ops->set, pages, n);
}

int pc_batch_get(struct pc_store *st, struct pc_page *pages, size_t n)
{
	if (!st || (!pages && n))
		return -EINVAL;
	return timed(st, STORE_OP_GET, st->mode_ops->get, pages, n);
}

int store_lookup_fill(struct pc_store *st, struct pc_page *pages, size_t n, bool prefix,
		      uint32_t *owners)
{
	uint64_t t0 = pc_env_now(st->svc.env), t;
	size_t filled;
	unsigned pass;
	int ret;

	pass = store_ring_enter(&st->svc);
	ret = st->mode_ops->lookup_fill(st->mode, pages, n, prefix, &filled, owners);
	store_ring_exit(&st->svc, pass);
	if (ret < 0)
		return ret;
	/* one call for the two: each is recorded as taking the pair's time */
	t = pc_env_now(st->svc.env) - t0;
	METRIC_ADD(&st->svc, batches, filled ? 2 : 1);
	latency_record(&st->lat[STORE_OP_GET], t, st->svc.serial);
	if (filled)
		latency_record(&st->lat[STORE_OP_SET], t, st->svc.serial);
	return ret;
}

int pc_batch_exists(struct pc_store *st, struct pc_page *pages, size_t n)
{
	if (!st || (!pages && n))
		return -EINVAL;
	return timed(st, STORE_OP_EXISTS, st->mode_ops->exists, pages, n);
}

int pc_store_register(struct pc_store *st, void *buf, size_t len)
{
	return st && buf && len ? store_buf_add(&st->svc, buf, len) : -EINVAL;
}

void pc_store_unregister(struct pc_store *st, void *buf)
{
	if (st)
		store_buf_remove(&st->svc, buf);
}

void store_metrics(struct pc_store *st, struct pc_metrics *out)
{
	const uint64_t *src = (const uint64_t *)&st->svc.metrics;
	uint64_t *dst = (uint64_t *)out;

	for (size_t i = SIZED_HEAD / 8; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	out->size = sizeof(*out);
	out->reserved = 0;
	st->mode_ops->metrics(st->mode, out);
}

int pc_store_metrics(struct pc_store *st, struct pc_metrics *out)
{
	struct pc_metrics m;

	if (!st)
		return -EINVAL;
	store_metrics(st, &m);
	return sized_fill(out, &m, sizeof(m));
}

void store_footprint(struct pc_store *st, struct store_footprint *out)
{
	*out = (struct store_footprint){ 0 };
	if (st->svc.self != PC_PEER_NONE)
		st->mode_ops->footprint(st->mode, out);
}

const char *pc_store_node(const struct pc_store *st)
{
	return !st || st->svc.self == PC_PEER_NONE ? NULL : st->svc.topo->nodes[st->svc.self].name;
}
