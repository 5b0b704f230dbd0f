/*
 * run.c - one simulation run on the library's own stores.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <peercache/peercache.h>

#include "base/keyhash.h"
#include "placement/ring.h"
#include "run.h"
#include "store.h"
#include "backend/world.h"

struct cluster {
	const struct run_cfg *cfg;
	struct ring *ring;		/* built once, shared by every store */
	struct sim *s;
	struct sim_world *w;
	struct pc_store **st;
	struct pc_fabric **fab;
	bool *alive;
	uint32_t *inflight;
	uint64_t *owned;		/* pages looked up per owner */
	uint32_t nn, next_node;
	struct wl_gen *gen;
	struct run_result *res;
	uint32_t page_bytes;
	uint64_t stop_ns;
	bool heartbeats;		/* a kill event: membership by heartbeats */
	bool *killed;			/* per node: crashed by a kill event */
	double wall0;
	uint64_t done_requests, expect_requests;
	uint64_t scheduled;		/* requests given an arrival */
	bool gen_done;			/* the workload has no more */
	bool finished;			/* results taken, stores closing */
	struct closing *closing;	/* per node: its closing process's argument */
	uint8_t *buf;			/* page bytes when payloads are kept */
	int *status;			/* on_request's statuses, status_cap long: filled
					 * and handed over with no yield between, so one
					 * buffer serves every process */
	uint32_t status_cap;
	struct req *spare;		/* the last request served, its block kept for
					 * the next (req_new) */
	struct hist point_lat;		/* the last time-series point's latencies, until
					 * a later one starts */
	char err[PC_ERR_MAX];
	int failed;
};

/* A request and, in the same block, its pages, their tokens, the page structs its
 * lookups use and their owners. */
struct req {
	struct cluster *c;
	size_t bytes;			/* the block's */
	uint32_t node;
	uint32_t npages;
	uint64_t *pages;
	uint32_t *tokens;
	uint32_t *owner;
	struct pc_page *pg;
	bool prefix;
	uint64_t t0;
};

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int open_node(struct cluster *c, uint32_t i)
{
	struct pc_fabric_params fp = { .size = sizeof(fp), .topo = c->cfg->topo, .self = i,
				       .env = sim_world_env(c->w, i), .backend_arg = c->w };
	struct pc_store_opts o = { .size = sizeof(o), .topo = c->cfg->topo,
				   .node = c->cfg->topo->nodes[i].name,
				   .err = c->err, .errlen = sizeof(c->err) };
	struct store_deps d = { .env = sim_world_env(c->w, i), .payload_free = c->cfg->payload_free,
				.ring = c->ring, .storage = &sim_storage_ops, .backend_arg = c->w,
				.no_heartbeats = !c->heartbeats };
	int ret = pc_fabric_open_ops(&sim_fabric_ops, &fp, &c->fab[i]);

	if (ret) {
		snprintf(c->err, sizeof(c->err), "node %s: sim fabric: %s", c->cfg->topo->nodes[i].name,
			 strerror(-ret));
		return ret;
	}
	d.use_fabric = c->fab[i];
	ret = store_open(&o, &d, &c->st[i]);
	if (ret) {
		pc_fabric_close(c->fab[i]);
		c->fab[i] = NULL;
	}
	return ret;
}

static void maybe_finish(struct cluster *c);
static void schedule_next(struct cluster *c);

/* Out of c first: closing waits in virtual time for the store's tasks, and the end
 * of the run must not close it a second time meanwhile (close_all). */
static void close_node(struct cluster *c, uint32_t i)
{
	struct pc_store *st = c->st[i];
	struct pc_fabric *f = c->fab[i];

	c->st[i] = NULL;
	c->fab[i] = NULL;
	pc_store_close(st);
	pc_fabric_close(f);
}

/* The last point's latency quantiles, from its histogram, which starts over. */
static void point_close(struct cluster *c)
{
	struct run_point *p;

	if (!c->res->nr_points)
		return;
	p = &c->res->series[c->res->nr_points - 1];
	p->p50_ns = hist_quantile(&c->point_lat, 0.5);
	p->p99_ns = hist_quantile(&c->point_lat, 0.99);
	memset(&c->point_lat, 0, sizeof(c->point_lat));
}

/*
 * The time-series point of a request served at t. Requests are served in time order,
 * so a point is added at the end or is the last one, and only the last needs a
 * histogram: the points before it keep their two quantiles. NULL without a time
 * series, or when memory ran out (the point goes unrecorded).
 */
static struct run_point *point_at(struct cluster *c, uint64_t t)
{
	struct run_result *res = c->res;
	uint64_t k;

	if (!c->cfg->interval_ns)
		return NULL;
	k = t / c->cfg->interval_ns;
	if (res->nr_points && res->series[res->nr_points - 1].k == k)
		return &res->series[res->nr_points - 1];
	if (res->nr_points == res->series_cap) {
		size_t n = res->series_cap ? res->series_cap * 2 : 64;
		struct run_point *p = realloc(res->series, n * sizeof(*p));

		if (!p)
			return NULL;
		res->series = p;
		res->series_cap = n;
	}
	point_close(c);
	res->series[res->nr_points] = (struct run_point){ .k = k };
	return &res->series[res->nr_points++];
}

/* Room for n statuses in c->status; false (the request goes unreported) on ENOMEM. */
static bool status_room(struct cluster *c, uint32_t n)
{
	int *p;

	if (n <= c->status_cap)
		return true;
	p = realloc(c->status, (size_t)n * 2 * sizeof(*p));
	if (!p)
		return false;
	c->status = p;
	c->status_cap = n * 2;
	return true;
}

/* A served request's block: kept as the spare when it is bigger than the one kept. */
static void req_done(struct cluster *c, struct req *r)
{
	if (c->spare && c->spare->bytes >= r->bytes) {
		free(r);
		return;
	}
	free(c->spare);
	c->spare = r;
}

/* One request on its node: look the pages up, then store the ones that missed. */
static void serve(void *arg)
{
	struct req *r = arg;
	struct cluster *c = r->c;
	struct pc_store *st = c->st[r->node];
	struct pc_page *pg = r->pg;
	uint64_t *keys = r->pages, lat, tokens = 0, hit_tokens = 0, hit_pages = 0;
	const uint32_t n = r->npages, *tok = r->tokens, bytes = c->page_bytes;
	const bool prefix = r->prefix;
	uint8_t *buf = c->buf;
	struct ring *ring = store_ring_of(st);
	struct run_point *pt;
	uint32_t i, miss_from, leading;
	int *status;
	bool filled;

	/* (the loops read the request's fields from locals: their stores could alias r) */
	for (i = 0; i < n; i++)
		pg[i] = (struct pc_page){ .key = &keys[i], .key_len = sizeof(keys[i]),
					  .data = buf, .cap = bytes, .len = bytes };
	r->t0 = sim_now(c->s);
	/* Without a time model nothing happens between the lookup and the publishing:
	 * the store decides both in one call where it can (store_lookup_fill), and says
	 * whose every page is. */
	filled = !c->cfg->timing && !c->cfg->batch_calls &&
		 store_lookup_fill(st, pg, n, prefix, r->owner) >= 0;
	c->res->one_call += filled;
	if (filled) {
		uint64_t *owned = c->owned;
		const uint32_t *owner = r->owner;

		for (i = 0; i < n; i++)
			owned[owner[i]]++;
	} else {
		/* Every page's owner from the ring; in timing mode, where every request
		 * comes here, a sample: one page in eight is plenty for max / mean. */
		uint32_t step = c->cfg->timing ? 8 : 1;

		for (i = 0; i < n; i += step)
			c->owned[ring_owner_of(ring, keyhash_of(&keys[i], sizeof(keys[i])))] += step;
		pc_batch_get(st, pg, n);
	}
	lat = sim_now(c->s) - r->t0;
	/* One pass over the outcomes: the statuses the caller asked for, and the hits.
	 * With prefix semantics the lookup stops at the first miss: the hits are the
	 * pages before it. Otherwise hits and misses come in no pattern a branch
	 * predictor can learn: counted without branches. */
	status = c->cfg->on_request && status_room(c, n) ? c->status : NULL;
	for (i = 0, leading = 1; i < n; i++) {
		uint32_t hit = !pg[i].status, counted;

		leading &= hit;
		counted = prefix ? leading : hit;
		hit_pages += counted;
		hit_tokens += counted * tok[i];
		tokens += tok[i];
		if (status)
			status[i] = pg[i].status;
	}
	miss_from = prefix ? (uint32_t)hit_pages : n;
	if (status)
		c->cfg->on_request(c->cfg->on_request_arg, r->t0, keys, status, n, lat);
	c->res->requests++;
	c->res->pages += n;
	c->res->page_hits += hit_pages;
	c->res->pages_host += hit_pages;
	c->res->pages_miss += n - hit_pages;
	c->res->tokens += tokens;
	c->res->token_hits += hit_tokens;
	hist_add(&c->res->lat, lat);
	pt = point_at(c, sim_now(c->s));
	if (pt) {
		pt->requests++;
		pt->pages += n;
		pt->page_hits += hit_pages;
		pt->tokens += tokens;
		pt->token_hits += hit_tokens;
		hist_add(&c->point_lat, lat);
	}
	/* The serving engine computed what missed and publishes it. */
	if (!filled) {
		uint32_t from = prefix ? miss_from : 0, kept = 0;

		for (i = from; i < n; i++) {	/* compacted in place, kept <= i */
			uint32_t keep = prefix || pg[i].status;

			pg[kept] = (struct pc_page){ .key = &keys[i], .key_len = sizeof(keys[i]),
						     .data = buf, .len = bytes };
			kept += keep;
		}
		if (kept)
			pc_batch_set(st, pg, kept);
	}
	c->inflight[r->node]--;
	c->done_requests++;
	req_done(c, r);
	if (c->cfg->closed_loop)
		schedule_next(c);	/* the next request, now */
	else
		maybe_finish(c);
}

/* The run's totals from every store and device, at the end of the run. */
static void collect(struct cluster *c)
{
	struct run_result *res = c->res;
	uint64_t max_owned = 0, sum_owned = 0;
	uint32_t drives = 0;

	res->sim_s = (double)sim_now(c->s) / 1e9;
	point_close(c);
	net_utilisation(c->w->net, (double)sim_now(c->s), &res->nic_util_mean, &res->nic_util_max);
	for (uint32_t i = 0; i < c->nn; i++) {
		struct pc_metrics m = { .size = sizeof(m) };
		bool first = c->w->nvme[i] != NULL;

		/* A mean over the drives: one that a host's nodes share counts once. */
		for (uint32_t j = 0; first && j < i; j++)
			first = c->w->nvme[j] != c->w->nvme[i];
		if (first) {
			double u = nvme_utilisation(c->w->nvme[i], (double)sim_now(c->s));

			res->nvme_util_mean += u;
			res->nvme_util_max = u > res->nvme_util_max ? u : res->nvme_util_max;
			drives++;
		}
		if (c->st[i]) {
			pc_store_metrics(c->st[i], &m);
			res->evictions += (double)m.evictions;
			res->demotions += (double)m.spill_demoted;
			res->promotions += (double)m.spill_promoted;
			res->pages_disk += m.disk_hits;
		}
		sum_owned += c->owned[i];
		max_owned = c->owned[i] > max_owned ? c->owned[i] : max_owned;
	}
	if (drives)
		res->nvme_util_mean /= drives;
	/* Page hits served from disk (counted by the stores, before any prefix cut). */
	if (res->pages_disk > res->pages_host)
		res->pages_disk = res->pages_host;
	res->pages_host -= res->pages_disk;
	res->bytes_moved = net_bytes(c->w->net);
	res->member_rpcs = (double)c->w->member_rpcs;
	res->member_bytes = c->w->member_bytes;
	res->load_max_over_mean = sum_owned ? (double)max_owned * c->nn / (double)sum_owned : 0;
}

struct closing {
	struct cluster *c;
	uint32_t node;
};

static void close_one(void *arg)
{
	struct closing *k = arg;

	close_node(k->c, k->node);
}

/*
 * Close the stores, which stops their background tasks (spill sweeps, lease expiry,
 * heartbeats) so that the run can end. Every node closes at once, as a process of its
 * own: a close waits in virtual time for its tasks to stop, and nodes closed one after
 * the other would each see the ones before them fall silent and take them out of the
 * ring (n^2 / 2 ring changes, and as many warnings, at 512 nodes).
 */
static void close_all(struct cluster *c)
{
	c->closing = calloc(c->nn, sizeof(*c->closing));
	for (uint32_t i = 0; i < c->nn; i++) {
		if (!c->st[i])
			continue;
		if (c->closing) {
			c->closing[i] = (struct closing){ .c = c, .node = i };
			if (sim_spawn(c->s, close_one, &c->closing[i], i, true))
				continue;
		}
		close_node(c, i);	/* out of memory: one after the other, then */
	}
}

/* The last request is done: take the results, then close the stores. */
static void closer(void *arg)
{
	struct cluster *c = arg;

	collect(c);
	close_all(c);
}

static void maybe_finish(struct cluster *c)
{
	if (c->finished || !c->gen_done || c->done_requests != c->scheduled)
		return;
	c->finished = true;
	if (!sim_spawn(c->s, closer, c, 0, true))
		c->failed = -ENOMEM;
}

static uint32_t pick_node(struct cluster *c)
{
	for (uint32_t k = 0; k < c->nn; k++) {
		uint32_t i = (c->next_node + k) % c->nn;

		if (c->alive[i]) {
			c->next_node = i + 1;
			return i;
		}
	}
	return 0;
}

static void arrival(struct sim *s, void *arg);

/* A request's block for npages pages: the spare one when it is big enough (without a
 * time model requests come one at a time, so one block serves them all). */
static struct req *req_new(struct cluster *c, uint32_t npages)
{
	/* pages, pg, tokens, owner */
	size_t bytes = sizeof(struct req) +
		       npages * (sizeof(uint64_t) + sizeof(struct pc_page) + 2 * sizeof(uint32_t));
	struct req *r = c->spare;

	if (r && r->bytes >= bytes) {
		c->spare = NULL;
		bytes = r->bytes;
	} else {
		r = malloc(bytes);
	}
	if (r)
		*r = (struct req){ .c = c, .bytes = bytes };
	return r;
}

/* Take the next request from the workload and schedule its arrival. */
static void schedule_next(struct cluster *c)
{
	struct wl_req wr;
	struct req *r;
	int ret = wl_next(c->gen, &wr);

	if (ret <= 0 || c->failed || (c->stop_ns && wr.t_ns > c->stop_ns)) {
		if (ret < 0)
			c->failed = ret;
		c->gen_done = true;
		maybe_finish(c);
		return;
	}
	r = req_new(c, wr.npages);
	if (!r) {
		c->failed = -ENOMEM;
		c->gen_done = true;
		maybe_finish(c);
		return;
	}
	r->pages = (uint64_t *)(r + 1);
	r->pg = (struct pc_page *)(r->pages + wr.npages);
	r->tokens = (uint32_t *)(r->pg + wr.npages);
	r->owner = r->tokens + wr.npages;
	r->npages = wr.npages;
	r->prefix = wr.prefix;
	for (uint32_t i = 0; i < wr.npages; i++)
		r->pages[i] = wr.pages[i] + c->cfg->key_base;
	memcpy(r->tokens, wr.tokens, wr.npages * sizeof(uint32_t));
	c->scheduled++;
	sim_at(c->s, c->cfg->closed_loop ? sim_now(c->s) : wr.t_ns, arrival, r);
}

static void arrival(struct sim *s, void *arg)
{
	struct req *r = arg;
	struct cluster *c = r->c;
	uint32_t max_inflight = c->cfg->max_inflight ? c->cfg->max_inflight : RUN_MAX_INFLIGHT;

	r->node = c->cfg->pinned ? c->cfg->pin_node : pick_node(c);
	c->inflight[r->node]++;
	if (c->scheduled - c->done_requests > max_inflight && !c->failed) {
		/* Arrivals outpace service: the backlog would grow until memory ran out. */
		snprintf(c->err, sizeof(c->err),
			 "the cluster fell behind: %u requests in flight at %.3f s simulated; lower the workload's rate= (or add nodes or rails)",
			 max_inflight, (double)sim_now(s) * 1e-9);
		c->failed = -EOVERFLOW;
	}
	if (c->cfg->timing) {
		if (!sim_spawn(s, serve, r, r->node, true))
			c->failed = -ENOMEM;
	} else {
		serve(r);
	}
	if (c->cfg->progress && !(c->done_requests & 0x3fff))
		c->cfg->progress(c->cfg->progress_arg,
				 c->expect_requests ? (double)c->done_requests / (double)c->expect_requests :
				 c->stop_ns ? (double)sim_now(s) / (double)c->stop_ns : 0,
				 c->done_requests);
	if (!c->cfg->closed_loop)
		schedule_next(c);
}

struct membership {
	struct cluster *c;
	struct run_event ev;
};

/* A node's old store replaced by a fresh one with empty slots, unless requests still
 * run on the old one (then it stays). In a process: closing waits in virtual time
 * for the old store's tasks (heartbeats). False when the run ended meanwhile or the
 * new store did not open (the run fails then). */
static bool renew_node(struct cluster *c, uint32_t node)
{
	if (c->inflight[node] || c->finished)
		return !c->finished;
	close_node(c, node);
	if (c->finished)
		return false;
	if (open_node(c, node)) {
		c->failed = -EIO;
		return false;
	}
	return true;
}

/* A killed node starts again (renew_node), a new incarnation the others hear. */
static void restart(void *arg)
{
	struct membership *m = arg;
	struct cluster *c = m->c;
	uint32_t node = m->ev.node;
	bool ok = renew_node(c, node);

	sim_world_set_dead(c->w, node, false);
	c->killed[node] = false;
	c->alive[node] = ok;
	free(m);
}

/* A node that left joins again (renew_node), back in every ring. */
static void rejoin(void *arg)
{
	struct membership *m = arg;
	struct cluster *c = m->c;
	uint32_t node = m->ev.node;

	if (!renew_node(c, node)) {
		free(m);
		return;
	}
	sim_world_set_down(c->w, node, false);
	for (uint32_t i = 0; i < c->nn; i++) {
		if (!c->st[i])
			continue;
		store_set_member(c->st[i], node, true);
		for (uint32_t j = 0; j < c->nn; j++)	/* its own ring: who is out now */
			if (i == node && !c->alive[j] && j != node)
				store_set_member(c->st[i], j, false);
	}
	c->alive[node] = true;
	free(m);
}

/* A node leaves (its slots are gone, every ring drops it) or joins again empty. */
static void change_membership(struct sim *s, void *arg)
{
	struct membership *m = arg;
	struct cluster *c = m->c;
	uint32_t node = m->ev.node;

	(void)s;
	if (c->finished) {
		free(m);
		return;
	}
	if (m->ev.kill && c->alive[node]) {
		c->alive[node] = false;
		c->killed[node] = true;
		sim_world_set_dead(c->w, node, true);
	} else if (m->ev.join && c->killed[node]) {
		/* a restart: a new process (new incarnation) the others hear again;
		 * closing waits for the old one's tasks, so a process does it */
		if (sim_spawn(c->s, restart, m, node, true))
			return;
		c->failed = -ENOMEM;
	} else if (!m->ev.join && c->alive[node]) {
		c->alive[node] = false;
		sim_world_set_down(c->w, node, true);
		for (uint32_t i = 0; i < c->nn; i++)
			if (c->st[i])
				store_set_member(c->st[i], node, false);
	} else if (m->ev.join && !c->alive[node]) {
		/* a process too: with heartbeats the old store has a task to wait for */
		if (sim_spawn(c->s, rejoin, m, node, true))
			return;
		c->failed = -ENOMEM;
	}
	free(m);
}

/* The cluster of a run: the engine, the world and every node's store, opened. */
static int cluster_open(struct cluster *c, const struct run_cfg *cfg, struct run_result *res,
			char *err, size_t errlen)
{
	const struct pc_topology *t = cfg->topo;
	int ret = -ENOMEM;

	*c = (struct cluster){ .cfg = cfg, .nn = t->nr_nodes, .res = res };
	memset(res, 0, sizeof(*res));
	c->wall0 = wall_now();
	c->page_bytes = (uint32_t)(t->model.present ? t->model.page_bytes : t->store.slot_max_page_bytes);
	c->stop_ns = cfg->duration_ns;
	c->expect_requests = cfg->wl.requests;
	c->s = sim_create(cfg->seed);
	c->w = c->s ? sim_world_create(c->s, t, cfg->timing) : NULL;
	c->st = calloc(c->nn, sizeof(*c->st));
	c->fab = calloc(c->nn, sizeof(*c->fab));
	c->alive = calloc(c->nn, sizeof(*c->alive));
	c->killed = calloc(c->nn, sizeof(*c->killed));
	c->heartbeats = cfg->heartbeats;
	for (uint32_t e = 0; e < cfg->nr_events; e++)
		c->heartbeats |= cfg->events[e].kill;
	c->inflight = calloc(c->nn, sizeof(*c->inflight));
	c->owned = calloc(c->nn, sizeof(*c->owned));
	if (!c->w || !c->st || !c->fab || !c->alive || !c->killed || !c->inflight || !c->owned)
		return ret;
	c->w->keep_data = !cfg->payload_free;
	if (!cfg->payload_free) {
		c->buf = calloc(1, c->page_bytes);
		if (!c->buf)
			return ret;
	}
	c->ring = ring_create(t->store.vnodes);
	{
		uint32_t *ids = malloc(c->nn * sizeof(*ids));
		const char **names = malloc(c->nn * sizeof(*names));

		for (uint32_t i = 0; ids && names && i < c->nn; i++) {
			ids[i] = i;
			names[i] = t->nodes[i].name;
		}
		ret = c->ring && ids && names ? ring_add_many(c->ring, ids, names, c->nn) : -ENOMEM;
		free(ids);
		free(names);
		if (ret)
			return ret;
	}
	for (uint32_t i = 0; i < c->nn; i++) {
		ret = open_node(c, i);
		if (ret) {
			snprintf(err, errlen, "%s", c->err);
			return ret;
		}
		c->alive[i] = true;
	}
	for (uint32_t i = 0; i < c->nn; i++) {
		struct store_footprint fp;

		store_footprint(c->st[i], &fp);
		res->slot_bytes += fp.cache_bytes;
		res->mem_bytes += fp.mem_bytes;
	}
	return 0;
}

static void cluster_free(struct cluster *c)
{
	for (uint32_t i = 0; c->st && i < c->nn; i++)
		if (c->st[i])
			close_node(c, i);
	wl_close(c->gen);
	ring_destroy(c->ring);
	sim_world_destroy(c->w);
	sim_destroy(c->s);
	free(c->st);
	free(c->fab);
	free(c->alive);
	free(c->killed);
	free(c->inflight);
	free(c->owned);
	free(c->spare);
	free(c->buf);
	free(c->status);
	free(c->closing);
	c->res->wall_s = wall_now() - c->wall0;
}

int run_sim(const struct run_cfg *cfg, struct run_result *res, char *err, size_t errlen)
{
	struct cluster c;
	int ret = cluster_open(&c, cfg, res, err, errlen);

	if (ret)
		goto out;
	if (cfg->pinned && cfg->pin_node >= c.nn) {
		ret = -EINVAL;
		snprintf(err, errlen, "requests pinned to node %u of %u", cfg->pin_node, c.nn);
		goto out;
	}
	ret = wl_open(&cfg->wl, cfg->seed ^ 0x776c,
		      cfg->topo->model.present ? cfg->topo->model.tokens_per_page : 1, &c.gen, err, errlen);
	if (ret)
		goto out;
	for (uint32_t e = 0; e < cfg->nr_events; e++) {
		struct membership *m = calloc(1, sizeof(*m));

		ret = -ENOMEM;
		if (!m)
			goto out;
		m->c = &c;
		m->ev = cfg->events[e];
		sim_at(c.s, m->ev.t_ns, change_membership, m);
	}
	schedule_next(&c);
	res->run_wall_s = wall_now();
	sim_run(c.s, UINT64_MAX);
	res->run_wall_s = wall_now() - res->run_wall_s;
	res->events = sim_events(c.s);
	if (c.failed) {
		ret = c.failed;
		if (c.err[0])
			snprintf(err, errlen, "%s", c.err);
		else
			snprintf(err, errlen, "simulation failed: %s", strerror(-ret));
		goto out;
	}
	if (!c.finished) {	/* the workload never ended by itself */
		ret = -EIO;
		snprintf(err, errlen, "simulation ended with %llu of %llu requests done",
			 (unsigned long long)c.done_requests, (unsigned long long)c.scheduled);
		goto out;
	}
	ret = 0;
out:
	cluster_free(&c);
	return ret;
}

struct on_node {
	struct cluster *c;
	uint32_t node;
	run_node_fn *fn;
	void *arg;
};

static void on_node_proc(void *arg)
{
	struct on_node *o = arg;
	struct cluster *c = o->c;

	o->fn(c->st[o->node], o->arg);
	close_all(c);
}

int run_on_node(const struct run_cfg *cfg, uint32_t node, run_node_fn *fn, void *arg, char *err,
		size_t errlen)
{
	struct run_result res;
	struct cluster c;
	struct on_node o = { .c = &c, .node = node, .fn = fn, .arg = arg };
	int ret = cluster_open(&c, cfg, &res, err, errlen);

	if (!ret && node >= c.nn) {
		ret = -EINVAL;
		snprintf(err, errlen, "node %u of %u", node, c.nn);
	}
	if (!ret && !sim_spawn(c.s, on_node_proc, &o, node, true))
		ret = -ENOMEM;
	if (!ret)
		sim_run(c.s, UINT64_MAX);
	cluster_free(&c);
	return ret;
}

void run_result_free(struct run_result *r)
{
	free(r->series);
	r->series = NULL;
	r->nr_points = r->series_cap = 0;
}
