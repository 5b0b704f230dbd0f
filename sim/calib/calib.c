/*
 * calib.c - micro-benchmarks that run alike on a real store and a simulated one, and
 * the replay of held-back workloads. The fit of the model's keys to the cases is
 * calib_fit.c's.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/pc_storage.h>

#include "base/keyhash.h"
#include "calib.h"
#include "placement/ring.h"
#include "run/hist.h"
#include "run/run.h"
#include "store.h"

#define KEY_SPACE (1ULL << 62)		/* benchmark keys: apart from any workload's */

/* ------------------------------------------------------------------ cases */

const char *calib_where_name(enum calib_where w)
{
	return w == CALIB_OWN ? "own" : w == CALIB_PEER ? "peer" : "all";
}

const char *calib_op_name(enum calib_op op)
{
	static const char *const names[] = { "get", "set", "read", "write", "rpc", "idle" };

	return names[op];
}

/* The idle cases' gaps, as asked of the sleep. */
static const uint32_t gaps_us[CALIB_NR_GAPS] = { 25, 50, 100, 200, 400, 800, 1600 };

double calib_case_gap_us(const struct calib_case *k)
{
	return k->gap_us > 0 ? k->gap_us : gaps_us[k->gap];
}

static bool disk_op(enum calib_op op)
{
	return op == CALIB_DISK_READ || op == CALIB_DISK_WRITE;
}

const char *calib_case_pages(const struct calib_case *k, char *buf, size_t len)
{
	if (k->op != CALIB_IDLE)
		return disk_op(k->op) ? "disk" : calib_where_name(k->where);
	if (k->gap_us > 0)
		snprintf(buf, len, "peer, %.0f us idle (%u asked)", k->gap_us, gaps_us[k->gap]);
	else
		snprintf(buf, len, "peer, %u us idle", gaps_us[k->gap]);
	return buf;
}

/* The cases one page size adds, and those of every calibration. */
static uint32_t cases_per_page(uint32_t nbatches, bool disk)
{
	return 2 * nbatches + 4 + (disk ? 4 : 0);
}

#define FIXED_CASES (2 + CALIB_NR_GAPS)

uint32_t calib_default_pages(const uint64_t *classes, uint32_t nr, uint32_t nbatches, bool disk,
			     uint32_t *pages)
{
	uint32_t fit = (CALIB_MAX_CASES - FIXED_CASES) / cases_per_page(nbatches, disk);
	uint32_t n = nr < fit ? nr : fit ? fit : 1;

	if (!nr)
		return 0;
	for (uint32_t i = 0; i < n; i++)	/* the first and the last among them */
		pages[i] = (uint32_t)classes[n > 1 ? (uint64_t)i * (nr - 1) / (n - 1) : 0];
	return n;
}

int calib_cases(struct calib *c, const uint32_t *pages, uint32_t npages, const uint32_t *batches,
		uint32_t nbatches, bool disk, uint32_t reps)
{
	uint32_t spread = 0;

	memset(c, 0, sizeof(*c));
	c->reps = reps;
	c->disk = disk;
	for (uint32_t b = 0; b < nbatches; b++) {
		if (!batches[b] || batches[b] > CALIB_MAX_BATCH)
			return -EINVAL;
		spread = batches[b] > spread ? batches[b] : spread;	/* the largest */
	}
	if (npages * cases_per_page(nbatches, disk) + FIXED_CASES > CALIB_MAX_CASES)
		return -E2BIG;
	for (uint32_t k = 0; k < npages; k++) {
		for (int op = CALIB_GET; op <= CALIB_SET; op++)
			for (uint32_t b = 0; b < nbatches; b++)
				c->cases[c->nr_cases++] = (struct calib_case){
					.op = (enum calib_op)op, .page = pages[k], .batch = batches[b] };
		/* the node's own pages: the copy rates; every node's: peers at once */
		for (int where = CALIB_OWN; where <= CALIB_SPREAD; where++)
			for (int op = CALIB_GET; op <= CALIB_SET; op++)
				c->cases[c->nr_cases++] = (struct calib_case){
					.op = (enum calib_op)op, .page = pages[k], .batch = spread,
					.where = (enum calib_where)where };
		/* the disk: one block (latency and rate), a batch (the per-command time) */
		for (int op = CALIB_DISK_READ; disk && op <= CALIB_DISK_WRITE; op++)
			for (uint32_t b = 1; b <= CALIB_DISK_BATCH; b += CALIB_DISK_BATCH - 1)
				c->cases[c->nr_cases++] = (struct calib_case){
					.op = (enum calib_op)op, .page = pages[k], .batch = b };
	}
	/* a request handed to a worker and answered: its time there and back */
	for (uint32_t b = 1; b <= CALIB_RPC_KEYS; b += CALIB_RPC_KEYS - 1)
		c->cases[c->nr_cases++] = (struct calib_case){ .op = CALIB_RPC, .batch = b };
	/* a get after the node and its peer idled: what waking them costs */
	for (uint32_t g = 0; g < CALIB_NR_GAPS; g++)
		c->cases[c->nr_cases++] = (struct calib_case){ .op = CALIB_IDLE, .page = pages[0],
							       .batch = 1, .gap = g };
	return 0;
}

/* ------------------------------------------------------------------ the benchmark */

struct bench {
	struct calib *c;
	bool sim;			/* fill sim_us, not real_us */
	uint32_t sim_reps;		/* batches a simulated case times */
	int ret;
	char err[PC_ERR_MAX];
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A case's result: the median and the 90th percentile of its reps timings (t,
 * sorted here), us. */
static void keep_quantiles(struct calib_case *k, double *t, uint32_t reps, bool sim)
{
	qsort(t, reps, sizeof(*t), cmp_double);
	*(sim ? &k->sim_us : &k->real_us) = t[reps / 2];
	*(sim ? &k->sim_p90_us : &k->real_p90_us) = t[reps * 9 / 10];
}

/* n keys from the benchmark's key space at *next: owned by `owner`, or with
 * owner PC_PEER_NONE by every node in turn. -EHOSTUNREACH when a node owns none
 * of a million keys in a row (it is not in the ring). */
static int owned_keys(struct pc_store *st, uint32_t owner, uint64_t *next, uint64_t *keys,
		      uint32_t n)
{
	struct ring *r = store_ring_of(st);
	uint32_t nodes = st->svc.topo->nr_nodes, misses = 0;

	for (uint32_t i = 0; i < n; (*next)++) {
		uint64_t k = KEY_SPACE | *next;
		uint32_t want = owner == PC_PEER_NONE ? i % nodes : owner;

		if (ring_owner_of(r, keyhash_of(&k, sizeof(k))) == want) {
			keys[i++] = k;
			misses = 0;
		} else if (++misses == 1u << 20) {
			return -EHOSTUNREACH;
		}
	}
	return 0;
}

/* What to tell the user when a benchmark batch did not do all it should. */
static const char *why_failed(const struct pc_page *pg, uint32_t n, int got, bool get)
{
	int st = got < 0 ? got : 0;

	for (uint32_t i = 0; i < n && !st; i++)
		if (pg[i].status && pg[i].status != -ENOENT)
			st = pg[i].status;
	switch (st) {
	case -ECONNREFUSED: case -EHOSTDOWN: case -EHOSTUNREACH: case -ETIMEDOUT:
	case -ENETDOWN: case -ECONNRESET:
		return "a peer does not answer; is pcd running every other node of the topology?";
	case 0:
		return get ? "over a tenth of the pages missed; give the cluster more slots "
			     "(store.global_segment_size)" : "not every page stored";
	default:
		return strerror(-st);
	}
}

static uint32_t some_peer(const struct pc_store *st)
{
	const struct store_svc *sv = &st->svc;

	for (uint32_t i = 0; i < sv->topo->nr_nodes; i++)
		if (i != sv->self)
			return i;
	return PC_PEER_NONE;
}

/*
 * One case: store groups of batches, then time reps gets (or sets), a group after
 * the other; the median. The groups hold CASE_BYTES together, more than a server's
 * caches: a batch finds its pages in memory as cold as a workload's (on the machine
 * this was written on, gets of 8 pages of 128 KiB cycling through 8 MiB took 180 us,
 * through 40 MiB 300 us). The case's own keys may overflow a bucket and evict one
 * another, in the simulator alike (same keys, same code): up to a tenth of the
 * timed gets' pages may miss.
 */
#define CASE_BYTES (32u << 20)
#define MAX_GROUPS 4096

static int run_case(struct pc_store *st, struct calib_case *k, uint32_t reps, uint64_t *next,
		    bool sim, char *err, size_t errlen)
{
	struct pc_env *env = st->svc.env;
	uint32_t owner = k->where == CALIB_OWN ? st->svc.self :
			 k->where == CALIB_PEER ? some_peer(st) : PC_PEER_NONE;
	uint64_t groups = CASE_BYTES / ((uint64_t)k->batch * k->page);
	uint64_t misses = 0;
	uint64_t *keys;
	struct pc_page pg[CALIB_MAX_BATCH];
	double *t = calloc(reps, sizeof(*t)), *slept = calloc(reps, sizeof(*slept));
	uint8_t *buf = sim ? NULL : malloc((size_t)k->batch * k->page);
	int ret = 0;

	groups = groups < 1 ? 1 : groups > MAX_GROUPS ? MAX_GROUPS : groups;
	keys = malloc((size_t)groups * k->batch * sizeof(*keys));
	if (!t || !slept || !keys || (!sim && !buf)) {
		free(t);
		free(slept);
		free(keys);
		free(buf);
		return -ENOMEM;
	}
	if (buf)
		memset(buf, 0x5a, (size_t)k->batch * k->page);
	ret = owned_keys(st, owner, next, keys, groups * k->batch);
	if (ret)
		snprintf(err, errlen, "a node owns no keys: it is not in the ring (is every node "
			 "of the topology up?)");
	for (uint32_t r = 0; r < groups + reps && !ret; r++) {	/* the first groups: store them */
		bool timed = r >= groups, get = timed && (k->op == CALIB_GET || k->op == CALIB_IDLE);
		uint64_t *gk = keys + (size_t)(r % groups) * k->batch;
		uint64_t t0;
		int got;

		for (uint32_t i = 0; i < k->batch; i++)
			pg[i] = (struct pc_page){ .key = &gk[i], .key_len = sizeof(gk[i]),
						  .data = buf ? buf + (size_t)i * k->page : NULL,
						  .len = k->page, .cap = k->page };
		if (timed && k->op == CALIB_IDLE) {	/* nothing runs here or at the peer */
			t0 = pc_env_now(env);
			pc_env_sleep(env, (uint64_t)((sim ? calib_case_gap_us(k) : gaps_us[k->gap]) *
						     1000.0));
			slept[r - groups] = (double)(pc_env_now(env) - t0) / 1000.0;
		}
		t0 = pc_env_now(env);
		got = get ? pc_batch_get(st, pg, k->batch) : pc_batch_set(st, pg, k->batch);
		if (timed)
			t[r - groups] = (double)(pc_env_now(env) - t0) / 1000.0;
		if (get && got >= 0)
			misses += k->batch - (uint32_t)got;
		if (got < 0 || (!get && got != (int)k->batch) || misses * 10 > (uint64_t)reps * k->batch) {
			snprintf(err, errlen, "%s of %u pages of %u bytes (%s): %s", get ? "get" : "set",
				 k->batch, k->page, calib_where_name(k->where),
				 why_failed(pg, k->batch, got, get));
			ret = -EIO;
		}
	}
	keep_quantiles(k, t, reps, sim);
	if (!ret && !sim && k->op == CALIB_IDLE) {
		qsort(slept, reps, sizeof(*slept), cmp_double);
		k->gap_us = slept[reps / 2];
	}
	free(t);
	free(slept);
	free(keys);
	free(buf);
	return ret;
}

/*
 * A disk case: batches of block reads (or writes) at random offsets of a DISK_BYTES
 * file on the node's nvme.path, through the storage backend the node spills with
 * (the posix file with O_DIRECT; in the simulator, the node's NVMe model). A read
 * case writes the whole file first.
 */
#define DISK_BYTES (64u << 20)

static int run_disk_case(struct pc_store *st, struct calib_case *k, uint32_t reps, bool sim,
			 char *err, size_t errlen)
{
	const struct pc_node *node = &st->svc.topo->nodes[st->svc.self];
	struct pc_storage_params p = { .size = sizeof(p), .dir = node->nvme.path,
				       .bytes = DISK_BYTES, .direct = true, .env = st->svc.env,
				       .backend_arg = st->svc.backend_arg };
	struct pc_env *env = st->svc.env;
	uint64_t slots = DISK_BYTES / k->page, x = 0x9e3779b97f4a7c15ULL;
	struct pc_io io[CALIB_MAX_BATCH];
	struct pc_storage *s;
	double *t = calloc(reps, sizeof(*t));
	void *buf = NULL;
	int ret = t ? pc_storage_open_ops(st->svc.storage, &p, &s) : -ENOMEM;
	bool opened = !ret;

	if (!ret && !sim && posix_memalign(&buf, 4096, (size_t)k->batch * k->page))
		ret = -ENOMEM;
	if (ret) {
		snprintf(err, errlen, "disk %.200s: %s; set nodes.nvme.path to a writable directory "
			 "with %u MiB free", node->nvme.path, strerror(-ret), DISK_BYTES >> 20);
		if (opened)
			pc_storage_close(s);
		free(t);
		return ret;
	}
	if (buf)
		memset(buf, 0xa5, (size_t)k->batch * k->page);
	for (uint64_t at = 0; k->op == CALIB_DISK_READ && at < slots && !ret; at += k->batch) {
		uint32_t n = 0;

		for (; n < k->batch && at + n < slots; n++)
			io[n] = (struct pc_io){ .off = (at + n) * k->page, .len = k->page,
						.buf = buf ? (uint8_t *)buf + (size_t)n * k->page : NULL };
		ret = pc_storage_write(s, io, n);
	}
	for (uint32_t r = 0; r < reps && !ret; r++) {
		uint64_t t0;

		for (uint32_t i = 0; i < k->batch; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;	/* xorshift64 */
			io[i] = (struct pc_io){ .off = x % slots * k->page, .len = k->page,
						.buf = buf ? (uint8_t *)buf + (size_t)i * k->page : NULL };
		}
		t0 = pc_env_now(env);
		ret = k->op == CALIB_DISK_READ ? pc_storage_read(s, io, k->batch) :
						 pc_storage_write(s, io, k->batch);
		t[r] = (double)(pc_env_now(env) - t0) / 1000.0;
		for (uint32_t i = 0; i < k->batch && !ret; i++)
			ret = io[i].status;
	}
	if (ret)
		snprintf(err, errlen, "disk %.200s: %s of %u blocks of %u bytes: %s", node->nvme.path,
			 calib_op_name(k->op), k->batch, k->page, strerror(-ret));
	keep_quantiles(k, t, reps, sim);
	pc_storage_close(s);
	free(buf);
	free(t);
	return ret;
}

/*
 * An rpc case: a promotion of k->batch keys nobody stored, to one peer: a request
 * its server hands to a worker (it may read the disk), answered at once (no such
 * keys, or -EOPNOTSUPP from a peer that does not spill: the same trip).
 */
static int run_rpc_case(struct pc_store *st, struct calib_case *k, uint32_t reps, bool sim,
			char *err, size_t errlen)
{
	struct pc_env *env = st->svc.env;
	size_t len = sizeof(struct proto_promote) + k->batch * sizeof(struct proto_promote_key);
	uint8_t *req = calloc(1, len);
	double *t = calloc(reps, sizeof(*t));
	struct proto_promote h = { .n = k->batch };
	int ret = req && t ? 0 : -ENOMEM;

	if (req)
		memcpy(req, &h, sizeof(h));
	for (uint32_t i = 0; req && i < k->batch; i++) {
		struct proto_promote_key q = { .lo = KEY_SPACE | i, .hi = ~(uint64_t)i, .cap = 4096 };

		memcpy(req + sizeof(h) + i * sizeof(q), &q, sizeof(q));
	}
	for (uint32_t r = 0; r < reps && !ret; r++) {
		struct pc_rpc rpc = { .peer = some_peer(st), .opcode = PC_RPC_SLOT_PROMOTE,
				      .req = req, .req_len = len };
		uint64_t t0 = pc_env_now(env);

		ret = pc_fabric_call(st->svc.fabric, &rpc, 1);
		t[r] = (double)(pc_env_now(env) - t0) / 1000.0;
		ret = ret ? ret : rpc.status == -EOPNOTSUPP ? 0 : rpc.status;
		pc_msg_free(&rpc.resp);
	}
	if (ret)
		snprintf(err, errlen, "a request of %u keys to a peer: %s", k->batch, strerror(-ret));
	else
		keep_quantiles(k, t, reps, sim);
	free(req);
	free(t);
	return ret;
}

static void bench_all(struct pc_store *st, void *arg)
{
	struct bench *b = arg;
	uint64_t next = 0;

	if (some_peer(st) == PC_PEER_NONE || st->svc.self == PC_PEER_NONE) {
		snprintf(b->err, sizeof(b->err), "calibration needs a node of a cluster of two or more");
		b->ret = -EINVAL;
		return;
	}
	for (uint32_t i = 0; i < b->c->nr_cases && !b->ret; i++) {
		struct calib_case *k = &b->c->cases[i];
		uint32_t reps = b->sim ? b->sim_reps : b->c->reps;

		b->ret = disk_op(k->op) ? run_disk_case(st, k, reps, b->sim, b->err, sizeof(b->err)) :
			 k->op == CALIB_RPC ? run_rpc_case(st, k, reps, b->sim, b->err, sizeof(b->err)) :
			 run_case(st, k, reps, &next, b->sim, b->err, sizeof(b->err));
	}
}

int calib_measure(struct pc_store *st, struct calib *c, char *err, size_t errlen)
{
	struct bench b = { .c = c };

	bench_all(st, &b);
	if (b.ret)
		snprintf(err, errlen, "%s", b.err);
	return b.ret;
}

int calib_drift(struct pc_store *st, const struct calib *c, struct calib_drift *d, char *err,
		size_t errlen)
{
	static struct calib again;
	uint32_t from[CALIB_MAX_CASES];
	double ratio[CALIB_MAX_CASES];
	int ret;

	memset(&again, 0, sizeof(again));
	memset(d, 0, sizeof(*d));
	again.reps = c->reps;
	for (uint32_t i = 0; i < c->nr_cases; i++) {
		const struct calib_case *k = &c->cases[i];

		if ((k->op == CALIB_GET || k->op == CALIB_SET) && k->where == CALIB_PEER &&
		    k->page == c->cases[0].page && k->real_us > 0) {
			from[again.nr_cases] = i;
			again.cases[again.nr_cases] = *k;
			again.cases[again.nr_cases++].real_us = 0;
		}
	}
	if (!again.nr_cases)
		return 0;
	ret = calib_measure(st, &again, err, errlen);
	for (uint32_t i = 0; !ret && i < again.nr_cases; i++)
		if (again.cases[i].real_us > 0)
			ratio[d->n++] = again.cases[i].real_us / c->cases[from[i]].real_us;
	if (ret || !d->n)
		return ret;
	qsort(ratio, d->n, sizeof(*ratio), cmp_double);
	d->page = c->cases[0].page;
	d->lo = ratio[0];
	d->median = ratio[d->n / 2];
	d->hi = ratio[d->n - 1];
	return 0;
}

/* Batches a simulated case times: without jitter every one takes the same time; with
 * it, enough for a 90th percentile. */
#define SIM_REPS 3
#define SIM_REPS_JITTER 41

int calib_simulate(struct pc_topology *t, uint32_t node, struct calib *c,
		   const struct calib_params *p, char *err, size_t errlen)
{
	struct run_cfg cfg = { .topo = t, .seed = 1, .timing = true, .payload_free = true };
	struct bench b = { .c = c, .sim = true,
			   .sim_reps = p->jitter > 0 ? SIM_REPS_JITTER : SIM_REPS };
	int ret;

	calib_apply(t, p, c->disk);
	ret = run_on_node(&cfg, node, bench_all, &b, err, errlen);
	if (!ret && b.ret) {
		ret = b.ret;
		snprintf(err, errlen, "in the simulator: %s", b.err);
	}
	return ret;
}

/* ------------------------------------------------------------------ validation */

struct replay {
	struct hist lat;		/* the gets */
	uint64_t pages, hits;
	double elapsed_s;		/* the whole replay: gets and sets */
	double set_s;			/* its sets */
};

static void sim_record(void *arg, uint64_t t, const uint64_t *pages, const int *status, uint32_t n,
		       uint64_t latency)
{
	struct replay *r = arg;

	(void)t;
	(void)pages;
	hist_add(&r->lat, latency);
	r->pages += n;
	for (uint32_t i = 0; i < n; i++)
		r->hits += !status[i];
}

/* The real node serves the requests as run.c's serve() does, one at a time. */
static int real_replay(struct pc_store *st, const struct pc_topology *t, const struct wl_spec *wl,
		       uint64_t key_base, struct replay *out, char *err, size_t errlen)
{
	uint32_t page = (uint32_t)(t->model.present ? t->model.page_bytes : t->store.slot_max_page_bytes);
	struct pc_env *env = st->svc.env;
	struct wl_gen *g;
	struct wl_req q;
	uint8_t *buf = NULL;
	uint64_t *keys = NULL;
	struct pc_page *pg = NULL;
	int *status = NULL;
	uint32_t cap = 0;
	uint64_t start = pc_env_now(env);
	/* the requests run_sim() makes of the same spec: its workload seed for run seed 1 */
	int ret = wl_open(wl, 1 ^ 0x776c, t->model.present ? t->model.tokens_per_page : 1, &g, err,
			  errlen);

	if (ret)
		return ret;
	while ((ret = wl_next(g, &q)) == 1) {
		uint32_t n = 0, miss_from = q.npages;
		uint64_t t0, lat;

		if (q.npages > cap) {
			cap = q.npages;
			free(buf);
			free(keys);
			free(pg);
			free(status);
			buf = malloc((size_t)cap * page);
			keys = malloc(cap * sizeof(*keys));
			pg = malloc(cap * sizeof(*pg));
			status = malloc(cap * sizeof(*status));
			if (!buf || !keys || !pg || !status) {
				ret = -ENOMEM;
				break;
			}
			memset(buf, 0x3c, (size_t)cap * page);
		}
		for (uint32_t i = 0; i < q.npages; i++) {
			keys[i] = q.pages[i] + key_base;
			pg[i] = (struct pc_page){ .key = &keys[i], .key_len = sizeof(keys[i]),
						  .data = buf + (size_t)i * page, .cap = page, .len = page };
		}
		t0 = pc_env_now(env);
		pc_batch_get(st, pg, q.npages);
		lat = pc_env_now(env) - t0;
		for (uint32_t i = 0; i < q.npages; i++) {
			status[i] = pg[i].status;
			if (status[i] && miss_from == q.npages)
				miss_from = i;
		}
		sim_record(out, 0, q.pages, status, q.npages, lat);
		for (uint32_t i = q.prefix ? miss_from : 0; i < q.npages; i++)
			if (q.prefix || status[i])
				pg[n++] = (struct pc_page){ .key = &keys[i], .key_len = sizeof(keys[i]),
							    .data = buf + (size_t)i * page, .len = page };
		if (n) {
			t0 = pc_env_now(env);
			pc_batch_set(st, pg, n);
			out->set_s += (double)(pc_env_now(env) - t0) * 1e-9;
		}
	}
	out->elapsed_s = (double)(pc_env_now(env) - start) * 1e-9;
	wl_close(g);
	free(buf);
	free(keys);
	free(pg);
	free(status);
	if (ret < 0 && !err[0])
		snprintf(err, errlen, "replay: %s", strerror(-ret));
	return ret < 0 ? ret : 0;
}

static double mean2(double a, double b, double *spread)
{
	double m = (a + b) / 2;

	*spread = m > 0 ? fabs(a - b) / m : 0;
	return m;
}

int calib_validate(struct pc_store *st, const struct pc_topology *t, uint32_t node,
		   const struct wl_spec *wl, uint64_t key_base, struct calib_check *out, char *err,
		   size_t errlen)
{
	/* two real replays and the simulated one, on the heap: 12 KiB of histogram each */
	struct replay *rp = calloc(3, sizeof(*rp)), *real = rp, *sim = rp + 2;
	struct run_cfg cfg = { .topo = t, .wl = *wl, .seed = 1, .timing = true,
			       .payload_free = true, .pinned = true, .pin_node = node,
			       .closed_loop = true, .key_base = key_base,
			       .on_request = sim_record, .on_request_arg = sim };
	struct run_result r;
	double p50[2], p99[2], tput[2], get[2], set[2];
	int ret = rp ? 0 : -ENOMEM;

	err[0] = 0;
	for (int k = 0; k < 2 && !ret; k++)
		ret = real_replay(st, t, wl, key_base + ((uint64_t)k << 39), &real[k], err, errlen);
	/* one request after the other, as the real node served them */
	if (!ret)
		ret = run_sim(&cfg, &r, err, errlen);
	if (ret) {
		free(rp);
		return ret;
	}
	sim->elapsed_s = r.sim_s;
	/* back to back with nothing between: the simulated time that is not a get's is a set's */
	sim->set_s = r.sim_s - sim->lat.sum * 1e-9;
	run_result_free(&r);
	*out = (struct calib_check){ .requests = real[0].lat.n };
	snprintf(out->spec, sizeof(out->spec), "%s", wl->text);
	for (int k = 0; k < 2; k++) {
		p50[k] = (double)hist_quantile(&real[k].lat, 0.5) / 1000.0;
		p99[k] = (double)hist_quantile(&real[k].lat, 0.99) / 1000.0;
		tput[k] = real[k].elapsed_s > 0 ? (double)real[k].pages / real[k].elapsed_s : 0;
		get[k] = real[k].lat.n ? real[k].lat.sum * 1e-3 / (double)real[k].lat.n : 0;
		set[k] = real[k].lat.n ? real[k].set_s * 1e6 / (double)real[k].lat.n : 0;
	}
	out->real_p50_us = mean2(p50[0], p50[1], &out->spread_p50);
	out->real_p99_us = mean2(p99[0], p99[1], &out->spread_p99);
	out->real_pages_s = mean2(tput[0], tput[1], &out->spread_pages_s);
	out->real_hit = real[0].pages ? (double)real[0].hits / (double)real[0].pages : 0;
	out->real_get_us = (get[0] + get[1]) / 2;
	out->real_set_us = (set[0] + set[1]) / 2;
	out->sim_get_us = sim->lat.n ? sim->lat.sum * 1e-3 / (double)sim->lat.n : 0;
	out->sim_set_us = sim->lat.n ? sim->set_s * 1e6 / (double)sim->lat.n : 0;
	out->sim_p50_us = (double)hist_quantile(&sim->lat, 0.5) / 1000.0;
	out->sim_p99_us = (double)hist_quantile(&sim->lat, 0.99) / 1000.0;
	out->sim_pages_s = sim->elapsed_s > 0 ? (double)sim->pages / sim->elapsed_s : 0;
	out->sim_hit = sim->pages ? (double)sim->hits / (double)sim->pages : 0;
	free(rp);
	return 0;
}
