/*
 * calib.c - micro-benchmarks that run alike on a real store and a simulated one, the
 * fit of the model's parameters to them, and the replay of held-back workloads.
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
	if (npages * (2 * nbatches + 4 + (disk ? 4 : 0)) + 2 + CALIB_NR_GAPS > CALIB_MAX_CASES)
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

/* ------------------------------------------------------------------ the fit */

void calib_apply(struct pc_topology *t, const struct calib_params *p, bool disk)
{
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		struct pc_node *n = &t->nodes[i];

		n->memcpy_gbps = p->memcpy_gbps;
		for (uint32_t r = 0; r < n->nr_rails; r++) {
			n->rails[r].latency_us = p->latency_us;
			n->rails[r].gbps = p->gbps;
			n->rails[r].write_gbps = p->write_gbps;
			n->rails[r].op_us = p->op_us;
		}
		n->jitter = p->jitter;
		n->rpc_us = p->rpc_us;
		n->wake_us = p->wake_us;
		n->idle_us = p->idle_us;
		n->nap_us = p->nap_us;
		n->nap_idle_us = p->nap_idle_us;
		if (disk && n->has_nvme) {
			n->nvme.latency_us = p->nvme_latency_us;
			n->nvme.read_mbps = p->read_mbps;
			n->nvme.write_mbps = p->write_mbps;
			n->nvme.iops = (uint32_t)p->iops;
		}
	}
}

/*
 * The parameters as the linear variables of the model, in us and us per byte: the
 * rail's latency, its time per byte, the time per op, the copy time per byte; the
 * disk's latency, its time per byte read and written, the time per command; the
 * hand-off of an rpc.
 */
static void to_vars(const struct calib_params *p, double x[CALIB_NR_PARAMS])
{
	x[0] = p->latency_us;
	x[1] = 8.0 / (p->gbps * 1000.0);
	x[2] = p->op_us;
	x[3] = 1.0 / (p->memcpy_gbps * 1000.0);
	x[4] = p->nvme_latency_us;
	x[5] = 1.0 / p->read_mbps;		/* 1 MB/s is a byte a microsecond */
	x[6] = 1.0 / p->write_mbps;
	x[7] = 1e6 / p->iops;
	x[8] = p->rpc_us;
}

/* Back from the variables; a rate whose time is 0 is the key's largest value. A
 * WRITE's byte costs write_cost times a READ's. */
static void from_vars(const double x[CALIB_NR_PARAMS], double write_cost, struct calib_params *p)
{
	p->latency_us = x[0];
	p->gbps = x[1] > 8e-8 ? 8.0 / (x[1] * 1000.0) : 100000;
	p->write_gbps = x[1] * write_cost > 8e-8 ? 8.0 / (x[1] * write_cost * 1000.0) : 100000;
	p->op_us = x[2];
	p->memcpy_gbps = x[3] > 1e-7 ? 1.0 / (x[3] * 1000.0) : 10000;
	p->nvme_latency_us = x[4];
	p->read_mbps = x[5] > 1e-6 ? 1.0 / x[5] : 1e6;
	p->write_mbps = x[6] > 1e-6 ? 1.0 / x[6] : 1e6;
	p->iops = x[7] > 1e6 / (double)(1u << 30) ? 1e6 / x[7] : (double)(1u << 30);
	p->rpc_us = x[8];
}

/* Batches a simulated case times: without jitter every one takes the same time; with
 * it, enough for a 90th percentile. */
#define SIM_REPS 3
#define SIM_REPS_JITTER 41

static int simulate(struct pc_topology *t, uint32_t node, struct calib *c,
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

/* Solve the k x k system a x = y by Gaussian elimination with pivoting. */
static bool solve(double a[CALIB_NR_PARAMS][CALIB_NR_PARAMS], double *y, double *x, int k)
{
	for (int i = 0; i < k; i++) {
		int piv = i;

		for (int r = i + 1; r < k; r++)
			if (fabs(a[r][i]) > fabs(a[piv][i]))
				piv = r;
		if (fabs(a[piv][i]) < 1e-300)
			return false;
		for (int col = 0; col < k; col++) {
			double tmp = a[i][col];

			a[i][col] = a[piv][col];
			a[piv][col] = tmp;
		}
		{
			double tmp = y[i];

			y[i] = y[piv];
			y[piv] = tmp;
		}
		for (int r = i + 1; r < k; r++) {
			double f = a[r][i] / a[i][i];

			for (int col = i; col < k; col++)
				a[r][col] -= f * a[i][col];
			y[r] -= f * y[i];
		}
	}
	for (int i = k - 1; i >= 0; i--) {
		double s = y[i];

		for (int col = i + 1; col < k; col++)
			s -= a[i][col] * x[col];
		x[i] = s / a[i][i];
	}
	return true;
}

/*
 * min sum_i ((c0_i + A_i . x - y_i) / y_i)^2 over x >= 0: every subset of free
 * variables (the others held at 0) solved by normal equations, the best feasible
 * one kept. Four variables: sixteen subsets.
 */
static double nnls(uint32_t n, double A[][CALIB_NR_PARAMS], const double *c0, const double *y,
		   double x[CALIB_NR_PARAMS])
{
	double best = INFINITY;

	for (unsigned mask = 1; mask < 1u << CALIB_NR_PARAMS; mask++) {
		int idx[CALIB_NR_PARAMS], k = 0;
		double m[CALIB_NR_PARAMS][CALIB_NR_PARAMS] = { { 0 } }, v[CALIB_NR_PARAMS] = { 0 };
		double z[CALIB_NR_PARAMS] = { 0 }, full[CALIB_NR_PARAMS] = { 0 }, sse = 0;
		bool ok = true;

		for (int j = 0; j < CALIB_NR_PARAMS; j++)
			if (mask & (1u << j))
				idx[k++] = j;
		for (uint32_t i = 0; i < n; i++) {
			double w = 1.0 / (y[i] * y[i]), r = y[i] - c0[i];

			for (int a = 0; a < k; a++) {
				v[a] += w * A[i][idx[a]] * r;
				for (int b = 0; b < k; b++)
					m[a][b] += w * A[i][idx[a]] * A[i][idx[b]];
			}
		}
		if (!solve(m, v, z, k))
			continue;
		for (int a = 0; a < k; a++) {
			ok &= z[a] >= 0;
			full[idx[a]] = z[a];
		}
		if (!ok)
			continue;
		for (uint32_t i = 0; i < n; i++) {
			double p = c0[i];

			for (int j = 0; j < CALIB_NR_PARAMS; j++)
				p += A[i][j] * full[j];
			sse += (p - y[i]) * (p - y[i]) / (y[i] * y[i]);
		}
		if (sse < best) {
			best = sse;
			memcpy(x, full, sizeof(full));
		}
	}
	return best;
}

/* How far the simulated cases' spread (log of p90 over median) is from the measured
 * one, summed in squares over the store cases, with jitter j and the other keys at
 * the fit. */
static int jitter_error(struct pc_topology *t, uint32_t node, struct calib *c, double j,
			double *sse, char *err, size_t errlen)
{
	struct calib_params p = c->fit;
	int ret;

	p.jitter = j;
	ret = simulate(t, node, c, &p, err, errlen);
	*sse = 0;
	for (uint32_t i = 0; !ret && i < c->nr_cases; i++) {
		const struct calib_case *k = &c->cases[i];
		double d;

		if (disk_op(k->op) || k->op == CALIB_RPC || k->op == CALIB_IDLE ||
		    !(k->real_us > 0) || !(k->sim_us > 0))
			continue;	/* disk waits are the NVMe model's, not stretched */
		d = log(k->sim_p90_us / k->sim_us) - log(k->real_p90_us / k->real_us);
		*sse += d * d;
	}
	return ret;
}

/* nodes.jitter: a golden-section search over [0, JITTER_MAX] (the simulations draw
 * the same random numbers at every value, so the error is smooth in it). */
#define JITTER_MAX 1.5
#define JITTER_TOL 0.01

static int fit_jitter(struct pc_topology *t, uint32_t node, struct calib *c, char *err,
		      size_t errlen)
{
	const double g = (sqrt(5.0) - 1) / 2;
	double a = 0, b = JITTER_MAX, x1 = b - g * (b - a), x2 = a + g * (b - a), f1, f2;
	int ret = jitter_error(t, node, c, x1, &f1, err, errlen);

	if (!ret)
		ret = jitter_error(t, node, c, x2, &f2, err, errlen);
	while (!ret && b - a > JITTER_TOL) {
		if (f1 <= f2) {
			b = x2, x2 = x1, f2 = f1;
			x1 = b - g * (b - a);
			ret = jitter_error(t, node, c, x1, &f1, err, errlen);
		} else {
			a = x1, x1 = x2, f1 = f2;
			x2 = a + g * (b - a);
			ret = jitter_error(t, node, c, x2, &f2, err, errlen);
		}
	}
	c->fit.jitter = (a + b) / 2 < JITTER_TOL ? 0 : (a + b) / 2;
	return ret;
}

/*
 * The affine keys at a given jitter: the cases simulated at a base point and with
 * each variable doubled (at jitter 0 a case's time is exactly affine in them; with
 * jitter every simulation draws the same stretches in the same order, so a case's
 * median stays affine but for which batch is the median), then the least squares
 * fit; the rail's time per byte, where calib_byte_costs found it, is a constant
 * there, not a variable. Sets c->fit but its jitter, which it keeps.
 */
static int fit_affine(struct pc_topology *t, uint32_t node, struct calib *c, char *err,
		      size_t errlen)
{
	/* the base point and one step for each variable; the result does not depend on
	 * them (the model is affine), they only have to be valid values */
	struct calib_params base = {
		.latency_us = 10, .gbps = 20, .op_us = 1, .memcpy_gbps = 10,
		.nvme_latency_us = 80, .read_mbps = 2000, .write_mbps = 1000, .iops = 100000,
		.rpc_us = 20, .jitter = c->fit.jitter };
	double x0[CALIB_NR_PARAMS], A[CALIB_MAX_CASES][CALIB_NR_PARAMS], c0[CALIB_MAX_CASES];
	double y[CALIB_MAX_CASES], t0[CALIB_MAX_CASES], x[CALIB_NR_PARAMS] = { 0 }, sse;
	uint32_t rows = 0;
	int ret;

	base.write_gbps = base.gbps / c->write_cost;
	to_vars(&base, x0);
	ret = simulate(t, node, c, &base, err, errlen);
	for (uint32_t i = 0; !ret && i < c->nr_cases; i++)
		t0[i] = c->cases[i].sim_us;
	for (int j = 0; !ret && j < CALIB_NR_PARAMS; j++) {
		double xs[CALIB_NR_PARAMS];
		struct calib_params p = base;

		memcpy(xs, x0, sizeof(xs));
		xs[j] *= 2;		/* one variable doubled */
		from_vars(xs, c->write_cost, &p);
		p.jitter = base.jitter;
		ret = simulate(t, node, c, &p, err, errlen);
		for (uint32_t i = 0; !ret && i < c->nr_cases; i++)
			A[i][j] = (c->cases[i].sim_us - t0[i]) / x0[j];
	}
	/* the idle cases are the wake-up's (calib_fit_wake), not the affine model's */
	for (uint32_t i = 0; !ret && i < c->nr_cases; i++) {
		if (c->cases[i].op == CALIB_IDLE)
			continue;
		memmove(A[rows], A[i], sizeof(A[i]));
		c0[rows] = t0[i];
		for (int j = 0; j < CALIB_NR_PARAMS; j++)
			c0[rows] -= A[rows][j] * x0[j];
		if (c->read_byte_us > 0) {	/* known: a constant, not a variable */
			c0[rows] += A[rows][1] * c->read_byte_us;
			A[rows][1] = 0;
		}
		y[rows++] = c->cases[i].real_us;
	}
	sse = ret ? INFINITY : nnls(rows, A, c0, y, x);
	if (c->read_byte_us > 0)	/* the rate the cases gave, not the fit */
		x[1] = c->read_byte_us;
	if (!ret && (!isfinite(sse) || x[1] <= 0 ||
		     (c->disk && (x[5] <= 0 || x[6] <= 0)))) {
		snprintf(err, errlen, "the measurements fit no model with a finite rate (the "
			 "network's and the disk's both needed): measure larger batches");
		ret = -EDOM;
	}
	if (!ret) {
		from_vars(x, c->write_cost, &c->fit);
		c->fit.jitter = base.jitter;
	}
	return ret;
}

/* An excess over back to back and the weight of its deviations: 1 / the case's time. */
struct excess {
	double us, w;
};

static int cmp_excess(const void *a, const void *b)
{
	double x = ((const struct excess *)a)->us, y = ((const struct excess *)b)->us;

	return x < y ? -1 : x > y;
}

/* The level of least weighted absolute deviation from v[0..n-1] (its weighted
 * median), sorted in place; 0 for none, and never below 0. */
static double level_of(struct excess *v, uint32_t n)
{
	double half = 0, sum = 0;
	uint32_t i = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_excess);
	for (uint32_t k = 0; k < n; k++)
		half += v[k].w / 2;
	while (i + 1 < n && (sum += v[i].w) < half)
		i++;
	return v[i].us > 0 ? v[i].us : 0;
}

/*
 * nodes.nap_us, nap_idle_us, wake_us and idle_us from the idle cases: each one's
 * excess over the same get back to back (the batch-of-one get of the first page
 * size, measured), as two steps: nothing at the shortest gaps, nap_us from
 * nap_idle_us on, wake_us from idle_us on. A host's wake-up grows with the idle time
 * in tiers (a thread that stopped polling sleeps; later its CPU halts), and one tier
 * far out must not hide the first. The steps are those of least absolute deviation
 * relative to the cases' times (as the affine fit weighs its cases) over the gaps
 * they may start at, a tier left out where that fits as well (none when no gap is
 * slower; noise makes a tier its size; a lone one is the wake), the nap at most half
 * the wake (two steps closer than that are one wake-up and its spread) and from a
 * shorter gap than the wake's. A gap at a tier's edge mixes the two (the host's own
 * window is no sharper): the fit gives it to one. A step starts at a gap as slept
 * (calib_case_gap_us), not a point between two: the shorter choice would let a
 * wake-up, which lengthens a caller's wait, cause the next one. The nap, though, no
 * sooner than poll_us: the peer idles longer than the node slept (the answer's
 * flight and the request's), and a thread that polls that long does not sleep
 * before; a shorter start would have the model's peer nap between requests where a
 * real one still polls.
 */
void calib_fit_wake(struct calib *c, double poll_us)
{
	struct excess e[CALIB_NR_GAPS] = { 0 };
	double base = 0, best = INFINITY, gap[CALIB_NR_GAPS] = { 0 };
	uint32_t n = 0, page = 0, best_tiers = 0;

	for (uint32_t i = 0; i < c->nr_cases; i++)
		if (c->cases[i].op == CALIB_IDLE && n < CALIB_NR_GAPS && c->cases[i].real_us > 0) {
			gap[n] = calib_case_gap_us(&c->cases[i]);
			e[n].us = c->cases[i].real_us;
			e[n++].w = 1 / c->cases[i].real_us;
			page = c->cases[i].page;
		}
	for (uint32_t i = 0; i < c->nr_cases && !base; i++) {
		const struct calib_case *k = &c->cases[i];

		if (k->op == CALIB_GET && k->where == CALIB_PEER && k->batch == 1 && k->page == page)
			base = k->real_us;
	}
	c->fit.wake_us = c->fit.nap_us = 0;
	c->fit.idle_us = c->fit.nap_idle_us = n ? gap[n - 1] : 0;
	if (!base || n != CALIB_NR_GAPS)
		return;
	for (uint32_t g = 0; g < n; g++)
		e[g].us -= base;
	/* gaps nap..wake-1 nap and wake..n-1 wake the peer; nap == wake: no nap tier,
	 * wake == n: no tier */
	for (uint32_t wake = n + 1; wake-- > 0;)
		for (uint32_t nap = wake + 1; nap-- > 0;) {
			struct excess v[CALIB_NR_GAPS];
			double level[2], cost = 0;
			uint32_t tiers = (nap < wake) + (wake < n);

			memcpy(v, e + nap, (wake - nap) * sizeof(*v));
			level[0] = level_of(v, wake - nap);
			memcpy(v, e + wake, (n - wake) * sizeof(*v));
			level[1] = level_of(v, n - wake);
			if (nap < wake && (wake == n || 2 * level[0] > level[1] || gap[nap] >= gap[wake]))
				continue;	/* a lone tier is the wake's; the nap's the shorter */
			for (uint32_t g = 0; g < n; g++)
				cost += fabs(e[g].us - (g >= wake ? level[1] : g >= nap ? level[0] : 0)) *
					e[g].w;
			if (cost < best || (cost == best && tiers < best_tiers)) {
				best = cost;
				best_tiers = tiers;
				c->fit.nap_us = nap < wake ? level[0] : 0;
				c->fit.wake_us = wake < n ? level[1] : 0;
				c->fit.idle_us = gap[wake < n ? wake : n - 1];
				c->fit.nap_idle_us = nap < wake ? fmax(gap[nap], poll_us) : c->fit.idle_us;
			}
		}
}

/* Rounds of fitting the affine keys and the jitter in turn: the jitter moves the
 * medians the affine keys are fitted to (a batch of several stretched waits has a
 * longer median than its waits' medians added), and they move the spread. */
/* Fitted with the other keys, the rail's rate went to whatever suited the many small
 * cases (it gave time to the per-op time and latency, and large gets came out slow):
 * calib.h says where it comes from instead. */
void calib_byte_costs(struct calib *c)
{
	const struct calib_case *lo[2] = { NULL }, *hi[2] = { NULL };	/* [get, set] */
	uint32_t batch = 0;
	double d[2];

	c->read_byte_us = 0;
	c->write_cost = 1;
	for (uint32_t i = 0; i < c->nr_cases; i++)
		if (c->cases[i].where == CALIB_PEER &&
		    (c->cases[i].op == CALIB_GET || c->cases[i].op == CALIB_SET))
			batch = c->cases[i].batch > batch ? c->cases[i].batch : batch;
	for (uint32_t i = 0; i < c->nr_cases; i++) {
		const struct calib_case *k = &c->cases[i];
		int o = k->op == CALIB_SET;

		if (k->where != CALIB_PEER || (k->op != CALIB_GET && k->op != CALIB_SET) ||
		    k->batch != batch)
			continue;
		lo[o] = !lo[o] || k->page < lo[o]->page ? k : lo[o];
		hi[o] = !hi[o] || k->page > hi[o]->page ? k : hi[o];
	}
	if (!lo[0] || !lo[1] || lo[0]->page == hi[0]->page || lo[1]->page != lo[0]->page ||
	    hi[1]->page != hi[0]->page)
		return;
	d[0] = hi[0]->real_us - lo[0]->real_us;
	d[1] = hi[1]->real_us - lo[1]->real_us;
	if (d[0] > 0 && d[1] > 0) {
		c->read_byte_us = d[0] / ((double)batch * (hi[0]->page - lo[0]->page));
		c->write_cost = d[1] / d[0];
	}
}

#define FIT_ROUNDS 2

int calib_fit(const struct pc_topology *topo, uint32_t node, struct calib *c, char *err,
	      size_t errlen)
{
	struct pc_topology *t = pc_topology_dup(topo);
	int ret = t ? 0 : -ENOMEM;

	c->fit = (struct calib_params){ .jitter = 0 };
	calib_byte_costs(c);
	if (!ret)
		ret = fit_affine(t, node, c, err, errlen);
	for (int round = 0; round < FIT_ROUNDS && !ret; round++) {
		ret = fit_jitter(t, node, c, err, errlen);
		if (!ret && c->fit.jitter > 0)
			ret = fit_affine(t, node, c, err, errlen);
	}
	if (!ret)
		calib_fit_wake(c, topo->store.protocol == PC_PROTO_TCP ? topo->store.tcp_poll_us : 0);
	if (!ret)	/* the model at the fit, simulated again: what it predicts for each case */
		ret = simulate(t, node, c, &c->fit, err, errlen);
	pc_topology_free(t);
	if (ret)
		return ret;
	c->rms_error = c->max_error = 0;
	for (uint32_t i = 0; i < c->nr_cases; i++) {
		double e = fabs(c->cases[i].sim_us / c->cases[i].real_us - 1);

		c->rms_error += e * e / c->nr_cases;
		c->max_error = e > c->max_error ? e : c->max_error;
	}
	c->rms_error = sqrt(c->rms_error);
	return 0;
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
