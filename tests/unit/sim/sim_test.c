/*
 * sim_test.c - the simulator checked against results known in closed form, and
 * against itself: deterministic runs; a FIFO station's mean wait against
 * Pollaczek-Khinchine and a processor-sharing station's sojourn against
 * E[S] / (1 - rho); an NVMe device at queue depth 1 as an M/D/1 queue; W-way bucket
 * overflow of the real slot code against the Poisson formula E[(X-W)+] / (aW); the
 * stretch nodes.jitter gives a wait against its lognormal quantiles; the
 * slotmap's insertion-order eviction against the FIFO characteristic-time
 * approximation; p2p's fully associative LRU pool against Che's approximation; an
 * arrival rate past capacity stopping the run; the infinite-cache prefix hit rate of a
 * generated Mooncake trace against an exact count made here; hit-rate mode's one store
 * call per request against the two batch calls, page by page; and nodes.rpc_us on a
 * request a peer hands to a worker, not on one it answers on the spot.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <peercache/peercache.h>
#include "backend/world.h"
#include "builtin.h"
#include "calib/calib.h"
#include "config/topology.h"
#include "engine/engine.h"
#include "inproc/inproc.h"
#include "models/nvme.h"
#include "models/port.h"
#include "placement/ring.h"
#include "run/hist.h"
#include "run/run.h"
#include "store.h"
#include "testutil.h"
#include "workload/trace.h"
#include "workload/workload.h"

/* ---------------------------------------------------------------- determinism */

struct trace {
	uint64_t t[64];
	int who[64];
	int n;
};

struct actor {
	struct sim *s;
	struct trace *tr;
	int id;
};

static void actor(void *arg)
{
	struct actor *a = arg;

	for (int i = 0; i < 5; i++) {
		sim_sleep(a->s, 1 + sim_random(a->s) % 1000);
		if (a->tr->n < 64) {
			a->tr->t[a->tr->n] = sim_now(a->s);
			a->tr->who[a->tr->n++] = a->id;
		}
	}
}

static void run_actors(uint64_t seed, struct trace *tr)
{
	struct sim *s = sim_create(seed);
	struct actor a[4];

	memset(tr, 0, sizeof(*tr));
	for (int i = 0; i < 4; i++) {
		a[i] = (struct actor){ .s = s, .tr = tr, .id = i };
		CU_ASSERT_PTR_NOT_NULL(sim_spawn(s, actor, &a[i], 0, true));
	}
	sim_run(s, UINT64_MAX);
	CU_ASSERT_EQUAL(sim_procs(s), 0);
	sim_destroy(s);
}

static void test_determinism(void)
{
	struct trace a, b, c;

	run_actors(7, &a);
	run_actors(7, &b);
	run_actors(8, &c);
	CU_ASSERT_EQUAL(a.n, 20);
	CU_ASSERT_EQUAL(memcmp(&a, &b, sizeof(a)), 0);
	CU_ASSERT_NOT_EQUAL(memcmp(&a, &c, sizeof(a)), 0);
	for (int i = 1; i < a.n; i++)
		CU_ASSERT(a.t[i] >= a.t[i - 1]);	/* virtual time never goes back */
}

/* ---------------------------------------------------------------- histogram */

static void test_hist(void)
{
	static struct hist h;
	static const double qs[] = { 0.01, 0.5, 0.9, 0.99, 0.999 };

	memset(&h, 0, sizeof(h));
	for (uint64_t v = 1; v <= 100000; v++)
		hist_add(&h, v * 37);
	for (int i = 0; i < 5; i++) {
		double want = qs[i] * 100000 * 37, got = (double)hist_quantile(&h, qs[i]);

		CU_ASSERT(fabs(got / want - 1) < 0.03);
	}
	CU_ASSERT_EQUAL(hist_quantile(&h, 1.0), 3700000);
	CU_ASSERT_EQUAL(h.n, 100000);
}

/* ---------------------------------------------------------------- queues */

struct qrun {
	struct sim *s;
	struct port *p;
	struct sim_nvme *d;
	double lambda;			/* arrivals per ns */
	double mean_s;			/* mean service, ns */
	bool exp_service;
	uint64_t left;
	double sum_sojourn;
	uint64_t done;
	double io_bytes;
};

struct qjob {
	struct qrun *q;
	uint64_t t0;
};

static double expo(struct sim *s, double mean)
{
	return -log(1 - sim_uniform(s)) * mean;
}

static void job_done(struct sim *s, void *arg)
{
	struct qjob *j = arg;

	j->q->sum_sojourn += (double)(sim_now(s) - j->t0);
	j->q->done++;
	free(j);
}

static void arrive(struct sim *s, void *arg)
{
	struct qrun *q = arg;
	struct qjob *j = malloc(sizeof(*j));

	j->q = q;
	j->t0 = sim_now(s);
	if (q->d)
		nvme_io(q->d, false, q->io_bytes, job_done, j);
	else
		port_submit(q->p, q->exp_service ? expo(s, q->mean_s) : q->mean_s, job_done, j);
	if (--q->left)
		sim_at(s, sim_now(s) + (uint64_t)expo(s, 1 / q->lambda), arrive, q);
}

/* Mean sojourn of n jobs through a station (rate 1 byte/ns: work = service ns), and
 * the share of the time it was busy (*util, which should come out as rho). */
static double mean_sojourn(enum port_disc disc, double rho, double mean_s, bool exp_service,
			   uint64_t n, uint64_t seed, double *util)
{
	struct qrun q = { .s = sim_create(seed), .lambda = rho / mean_s, .mean_s = mean_s,
			  .exp_service = exp_service, .left = n };
	struct port_stats st;

	q.p = port_create(q.s, 1.0, disc, 1);
	sim_at(q.s, 0, arrive, &q);
	sim_run(q.s, UINT64_MAX);
	port_get_stats(q.p, &st);
	*util = st.busy_ns / (double)sim_now(q.s);
	port_destroy(q.p);
	sim_destroy(q.s);
	return q.sum_sojourn / (double)q.done;
}

static void test_fifo_pk(void)
{
	static const double rhos[] = { 0.5, 0.7, 0.9 };
	const double S = 1000;	/* ns */
	uint64_t n = pc_test_under_valgrind() ? 20000 : 400000;

	printf("\n");
	for (int e = 0; e < 2; e++) {
		for (int i = 0; i < 3; i++) {
			double rho = rhos[i], lambda = rho / S;
			double es2 = e ? 2 * S * S : S * S;	/* exponential : deterministic */
			double pk = lambda * es2 / (2 * (1 - rho)), util;
			double wq = mean_sojourn(PORT_FIFO, rho, S, e, n, 11 + (uint64_t)i, &util) - S;

			printf("  FIFO M/%c/1 rho %.1f: mean wait %.1f ns, Pollaczek-Khinchine %.1f ns (%+.1f%%); busy %.3f of the time\n",
			       e ? 'M' : 'D', rho, wq, pk, 100 * (wq / pk - 1), util);
			if (pc_test_precise("mean wait within 5% of Pollaczek-Khinchine (too few samples)"))
				CU_ASSERT(fabs(wq / pk - 1) <= 0.05);
			/* a backlog keeps the station busy: counted as such (it was not) */
			CU_ASSERT(fabs(util - rho) <= 0.02);
		}
	}
}

static void test_ps_sojourn(void)
{
	static const double rhos[] = { 0.5, 0.7, 0.9 };
	const double S = 1000;
	uint64_t n = pc_test_under_valgrind() ? 20000 : 400000;

	printf("\n");
	for (int i = 0; i < 3; i++) {
		double util, t = mean_sojourn(PORT_PS, rhos[i], S, true, n, 21 + (uint64_t)i, &util);
		double want = S / (1 - rhos[i]);

		printf("  PS M/M/1 rho %.1f: mean sojourn %.1f ns, E[S]/(1-rho) %.1f ns (%+.1f%%); busy %.3f of the time\n",
		       rhos[i], t, want, 100 * (t / want - 1), util);
		if (pc_test_precise("mean sojourn within 5% of E[S]/(1-rho) (too few samples)"))
			CU_ASSERT(fabs(t / want - 1) <= 0.05);
		CU_ASSERT(fabs(util - rhos[i]) <= 0.02);
	}
}

/* An NVMe device at queue depth 1: each command holds the device for its latency
 * and its transfer, so it is an M/D/1 queue with S = L + bytes / rate. */
static void test_nvme_md1(void)
{
	struct pc_nvme cfg = { .capacity = 1ULL << 30, .read_mbps = 2000, .write_mbps = 1000,
			       .iops = 0, .latency_us = 20, .queue_depth = 1 };
	const double bytes = 16384, S = 20000 + bytes / 2.0;	/* 2000 MB/s = 2 bytes/ns */
	uint64_t n = pc_test_under_valgrind() ? 20000 : 300000;

	printf("\n");
	for (int i = 0; i < 3; i++) {
		double rho = 0.5 + 0.2 * i, lambda = rho / S;
		struct qrun q = { .s = sim_create(31 + (uint64_t)i), .lambda = lambda, .left = n,
				  .io_bytes = bytes };
		double wq, pk = lambda * S * S / (2 * (1 - rho));

		q.d = nvme_create(q.s, &cfg);
		sim_at(q.s, 0, arrive, &q);
		sim_run(q.s, UINT64_MAX);
		wq = q.sum_sojourn / (double)q.done - S;
		printf("  NVMe qd1 rho %.1f: mean wait %.1f us, Pollaczek-Khinchine %.1f us (%+.1f%%)\n",
		       rho, wq / 1000, pk / 1000, 100 * (wq / pk - 1));
		if (pc_test_precise("NVMe mean wait within 5% of Pollaczek-Khinchine (too few samples)"))
			CU_ASSERT(fabs(wq / pk - 1) <= 0.05);
		nvme_destroy(q.d);
		sim_destroy(q.s);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* nodes.jitter: a wait of ns takes ns x e^(s x max(0, Z)): half of them just their
 * time, the 90th and 99th percentiles e^(1.2816 s) and e^(2.3263 s) times it; and a
 * node without jitter draws nothing (the engine's random sequence is untouched). */
static void test_jitter(void)
{
	static const char text[] = "nodes:\n  - {name: a, address: 127.0.0.1, jitter: 0.3}\n"
				   "  - {name: b, address: 127.0.0.1, port: 31999}\n";
	const uint32_t n = pc_test_under_valgrind() ? 20001 : 200001;
	double *f = malloc(n * sizeof(*f));
	char err[PC_ERR_MAX];
	struct pc_topology *t = NULL;
	struct sim *s = sim_create(5), *fresh = sim_create(5);
	struct sim_world *w;
	uint32_t zero = 0;

	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "j.yaml", &t, err, sizeof(err)), 0);
	w = sim_world_create(s, t, true);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	for (int k = 0; k < 1000; k++)
		CU_ASSERT_EQUAL(sim_env_stretch(&w->envs[1], 1000000), 0);
	CU_ASSERT_EQUAL(sim_random(s), sim_random(fresh));	/* node b drew nothing */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t extra = sim_env_stretch(&w->envs[0], 1000000);

		zero += !extra;
		f[i] = 1 + (double)extra / 1e6;
	}
	qsort(f, n, sizeof(*f), cmp_double);
	printf("\n  jitter 0.3: %.3f of the waits as modelled; p90 %.4f (e^(1.2816 x 0.3) = %.4f), p99 %.4f (%.4f)\n",
	       (double)zero / n, f[n * 9 / 10], exp(1.2816 * 0.3), f[n * 99 / 100], exp(2.3263 * 0.3));
	CU_ASSERT(fabs((double)zero / n - 0.5) < 0.01);
	CU_ASSERT(fabs(f[n * 9 / 10] / exp(1.2816 * 0.3) - 1) < 0.01);
	CU_ASSERT(fabs(f[n * 99 / 100] / exp(2.3263 * 0.3) - 1) < 0.03);
	sim_world_destroy(w);
	sim_destroy(s);
	sim_destroy(fresh);
	pc_topology_free(t);
	free(f);
}

/* Nodes at one address that spill to one directory are processes of one host on
 * one disk: the model gives them one NVMe queue; other nodes their own. */
static void test_shared_disk(void)
{
	static const char text[] =
		"node_defaults: {nvme: {path: /var/tmp, capacity: 64MiB}}\n"
		"nodes:\n  - {name: a, address: 127.0.0.1}\n"
		"  - {name: b, address: 127.0.0.1, port: 31999}\n"
		"  - {name: c, address: 127.0.0.1, port: 32000, nvme: {path: /srv, capacity: 64MiB}}\n"
		"  - {name: d, address: 10.0.0.4}\n  - {name: e, address: 127.0.0.1, port: 32001}\n";
	char err[PC_ERR_MAX];
	struct pc_topology *t = NULL;
	struct sim *s = sim_create(5);
	struct sim_world *w;

	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "d.yaml", &t, err, sizeof(err)), 0);
	w = sim_world_create(s, t, true);
	CU_ASSERT_PTR_NOT_NULL_FATAL(w);
	CU_ASSERT_PTR_NOT_NULL(w->nvme[0]);
	CU_ASSERT_PTR_EQUAL(w->nvme[1], w->nvme[0]);
	CU_ASSERT_PTR_EQUAL(w->nvme[4], w->nvme[0]);
	CU_ASSERT(w->nvme[2] && w->nvme[2] != w->nvme[0]);	/* another directory */
	CU_ASSERT(w->nvme[3] && w->nvme[3] != w->nvme[0] && w->nvme[3] != w->nvme[2]);
	sim_world_destroy(w);	/* each disk freed once: valgrind and ASan say so */
	sim_destroy(s);
	pc_topology_free(t);
}

/* ---------------------------------------------------------------- placement */

static struct pc_store *one_node(const char *store, struct inproc_world **w, struct pc_topology **t)
{
	char text[512], err[PC_ERR_MAX];
	struct pc_store *s = NULL;
	struct pc_store_opts o = { .size = sizeof(o), .node = "n0", .fabric = "inproc",
				   .err = err, .errlen = sizeof(err) };
	struct store_deps x = { .payload_free = true };

	snprintf(text, sizeof(text), "store: {%s}\nnodes:\n  - {name: n0, address: 127.0.0.1}\n", store);
	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "t", t, err, sizeof(err)), 0);
	*w = inproc_world_create(1);
	o.topo = *t;
	x.backend_arg = *w;
	if (builtin_store_open(&o, &x, &s))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	return s;
}

static void close_node(struct pc_store *s, struct inproc_world *w, struct pc_topology *t)
{
	pc_store_close(s);
	inproc_world_destroy(w);
	pc_topology_free(t);
}

/* Keys 0..n-1 through batches of 64: set, or count the ones present. */
static uint64_t through(struct pc_store *s, uint64_t first, uint64_t n, bool set)
{
	struct pc_page pg[64];
	uint64_t keys[64], present = 0;

	for (uint64_t i = 0; i < n; i += 64) {
		uint32_t m = (uint32_t)(n - i < 64 ? n - i : 64);

		for (uint32_t k = 0; k < m; k++) {
			keys[k] = first + i + k;
			pg[k] = (struct pc_page){ .key = &keys[k], .key_len = 8, .len = 4096, .cap = 4096 };
		}
		present += (uint64_t)(set ? pc_batch_set(s, pg, m) : pc_batch_get(s, pg, m));
	}
	return present;
}

/* E[(X - W)+] and Var[(X - W)+] for X ~ Poisson(m). */
static void poisson_overflow(double m, uint32_t w, double *mean, double *var)
{
	double p = exp(-m), e = 0, e2 = 0;

	for (uint32_t x = 0; x < 1000; x++) {
		if (x > w) {
			e += (x - w) * p;
			e2 += (double)(x - w) * (x - w) * p;
		}
		p *= m / (x + 1);
	}
	*mean = e;
	*var = e2 - e * e;
}

static void test_bucket_overflow(void)
{
	static const uint32_t ways[] = { 1, 4, 8, 16 };
	static const double loads[] = { 0.7, 0.9 };
	uint32_t slots = pc_test_under_valgrind() ? 4096 : 65536;

	printf("\n");
	for (int i = 0; i < 4; i++) {
		for (int j = 0; j < 2; j++) {
			uint32_t w = ways[i], nb = slots / w;
			uint64_t n = (uint64_t)(loads[j] * w * nb), present;
			double mean, var, lost, want, sigma;
			struct inproc_world *wd;
			struct pc_topology *t;
			struct pc_store *s;
			char store[256];

			snprintf(store, sizeof(store),
				 "slot_size_classes: [4KiB], slot_ways: %u, slot_num_buckets: %u", w, nb);
			s = one_node(store, &wd, &t);
			through(s, 1000000ULL * (w + 10 * j), n, true);
			present = through(s, 1000000ULL * (w + 10 * j), n, false);
			poisson_overflow(loads[j] * w, w, &mean, &var);
			lost = (double)(n - present) / (double)n;
			want = mean / (loads[j] * w);
			sigma = sqrt(var * nb) / (double)n;
			printf("  W=%2u a=%.1f: %llu keys into %u x %u: lost %.4f, Poisson %.4f (+- %.4f)\n",
			       w, loads[j], (unsigned long long)n, nb, w, lost, want, sigma);
			CU_ASSERT(fabs(lost - want) <= 4 * sigma + 1e-4);
			close_node(s, wd, t);
		}
	}
}

/*
 * Characteristic-time approximations for a cache of cap pages under independent
 * Zipf(s) requests over keys, insert on miss: key i (probability p_i) is in the cache
 * with probability  FIFO: p_i T / (1 + p_i T)   LRU (Che): 1 - e^(-p_i T),  where T
 * solves sum_i of that = cap; the hit rate is sum_i p_i times it.
 */
static double in_cache(double pT, bool lru)
{
	return lru ? 1 - exp(-pT) : pT / (1 + pT);
}

static double char_time_hit(uint64_t keys, double s, double cap, bool lru)
{
	double lo = 0, hi = 1e12, *p = malloc(keys * sizeof(double)), z = 0, h = 0;

	for (uint64_t k = 0; k < keys; k++)
		z += p[k] = pow((double)k + 1, -s);
	for (uint64_t k = 0; k < keys; k++)
		p[k] /= z;
	for (int it = 0; it < 200; it++) {
		double T = (lo + hi) / 2, occ = 0;

		for (uint64_t k = 0; k < keys; k++)
			occ += in_cache(p[k] * T, lru);
		if (occ < cap)
			lo = T;
		else
			hi = T;
	}
	for (uint64_t k = 0; k < keys; k++)
		h += p[k] * in_cache(p[k] * lo, lru);
	free(p);
	return h;
}

static double u01(void *ctx)
{
	return sim_uniform(ctx);
}

/* One page per request, Zipf(s) over keys, set on a miss, as a cache in front of a
 * model: the hit rate over the requests after the first quarter (warm-up). */
static double zipf_hit_rate(struct pc_store *st, uint64_t keys, double s, uint64_t reqs,
			    uint64_t seed)
{
	struct sim *rng = sim_create(seed);
	uint64_t hits = 0, counted = 0;
	struct zipf z;

	zipf_init(&z, keys, s);
	for (uint64_t r = 0; r < reqs; r++) {
		uint64_t key = zipf_draw(&z, u01, rng) * 0x9E3779B97F4A7C15ULL;
		struct pc_page pg = { .key = &key, .key_len = 8, .len = 4096, .cap = 4096 };
		bool hit = pc_batch_get(st, &pg, 1) == 1;

		if (!hit) {
			pg = (struct pc_page){ .key = &key, .key_len = 8, .len = 4096 };
			pc_batch_set(st, &pg, 1);
		}
		if (r >= reqs / 4) {
			hits += hit;
			counted++;
		}
	}
	zipf_fini(&z);
	sim_destroy(rng);
	return (double)hits / (double)counted;
}

/* Both Zipf samplers against the exact distribution: the head ranks' frequencies
 * within 4 sigma, the tail's total too. The alias table also exactly: the mass its
 * columns give each key is the key's probability; and its two-sweep batch draws
 * what one draw at a time does. */
static void check_zipf(uint64_t n, double s, bool table)
{
	const uint64_t draws = pc_test_under_valgrind() ? 100000 : 1000000, head = 8;
	struct sim *rng = sim_create(11);
	uint64_t count[9] = { 0 }, batch[64], one;
	double z = 0, worst = 0;
	struct zipf zp;

	CU_ASSERT_EQUAL(zipf_init(&zp, n, s), 0);
	if (!table)
		zipf_fini(&zp);	/* no table: rejection-inversion */
	CU_ASSERT_EQUAL(zp.alias != NULL, table);
	for (uint64_t k = 1; k <= n; k++)
		z += pow((double)k, -s);
	for (uint64_t d = 0; d < draws; d += 64) {
		zipf_draw_many(&zp, u01, rng, batch, 64);
		for (int i = 0; i < 64; i++) {
			CU_ASSERT_FATAL(batch[i] >= 1 && batch[i] <= n);
			count[batch[i] <= head ? batch[i] - 1 : head]++;
		}
	}
	for (uint64_t k = 0; k <= head; k++) {
		double p = 0, sigma, dev;

		if (k < head)
			p = pow((double)(k + 1), -s) / z;
		else
			for (uint64_t j = head + 1; j <= n; j++)
				p += pow((double)j, -s) / z;
		sigma = sqrt(p * (1 - p) * (double)draws);
		dev = ((double)count[k] - p * (double)draws) / sigma;
		worst = fabs(dev) > fabs(worst) ? dev : worst;
		CU_ASSERT(fabs(dev) < 4);
	}
	printf("  Zipf(%.1f) over %llu keys, %s: %llu draws, head ranks and tail within %.2f sigma\n",
	       s, (unsigned long long)n, table ? "alias table" : "rejection-inversion",
	       (unsigned long long)draws, fabs(worst));
	if (table) {	/* every key's mass from the table's columns, against k^-s / z */
		double *mass = calloc(n, sizeof(*mass)), err = 0;

		CU_ASSERT_PTR_NOT_NULL_FATAL(mass);
		for (uint64_t k = 0; k < n; k++) {
			double keep = (double)zp.alias[k].keep * 0x1p-32;

			CU_ASSERT_FATAL(zp.alias[k].alias < n);
			mass[k] += keep / (double)n;
			mass[zp.alias[k].alias] += (1 - keep) / (double)n;
		}
		for (uint64_t k = 0; k < n; k++) {
			double p = pow((double)(k + 1), -s) / z, e = fabs(mass[k] - p) / p;

			err = e > err ? e : err;
		}
		printf("  Zipf(%.1f) over %llu keys: the alias table's mass per key within %.1e of exact\n",
		       s, (unsigned long long)n, err);
		CU_ASSERT(err < 1e-6);
		free(mass);
	}
	/* one draw at a time from the same stream: the same keys (without a table,
	 * zipf_draw_many is zipf_draw in a loop) */
	if (table) {
		struct sim *r1 = sim_create(3), *r2 = sim_create(3);

		zipf_draw_many(&zp, u01, r1, batch, 64);
		for (int i = 0; i < 64; i++) {
			one = zipf_draw(&zp, u01, r2);
			CU_ASSERT_EQUAL(one, batch[i]);
		}
		sim_destroy(r1);
		sim_destroy(r2);
	}
	zipf_fini(&zp);
	sim_destroy(rng);
}

static void test_zipf(void)
{
	printf("\n");
	check_zipf(200000, 1.0, true);
	check_zipf(200000, 1.0, false);
	check_zipf(1000, 0.8, true);
	check_zipf(1000, 0.8, false);
}

/* A workload parameter that its field cannot hold, or that is no number at all
 * (nan, inf), is refused with a line naming it, not cut to something else. */
static void test_wl_numbers(void)
{
	static const char *const bad[] = {
		"zipf:keys=1000,pages=4294967297",	/* would wrap to 1 page */
		"zipf:keys=1000,requests=1.5",		/* would run 1 request */
		"zipf:keys=1e30",			/* past uint64_t */
		"zipf:keys=1000,rate=nan",
		"zipf:keys=1000,rate=inf",
		"zipf:keys=1000,s=nan",
		"prefix:groups=8,prefix=4294967296",	/* would wrap to 0 */
	};
	char err[PC_ERR_MAX];
	struct wl_spec w;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CU_ASSERT_EQUAL(wl_parse(bad[i], &w, err, sizeof(err)), -EINVAL);
		if (!err[0] || strchr(err, '\n') || !strstr(err, "="))
			printf("\n  %s: '%s'\n", bad[i], err);
		CU_ASSERT(err[0] && !strchr(err, '\n') && strstr(err, "="));
	}
	CU_ASSERT_EQUAL(wl_parse("zipf:keys=1e6,s=0.9,pages=16,requests=2000,rate=1500.5", &w, err,
				 sizeof(err)), 0);
	CU_ASSERT_EQUAL(w.keys, 1000000);
	CU_ASSERT_EQUAL(w.pages, 16);
	CU_ASSERT_EQUAL(w.requests, 2000);
	CU_ASSERT(w.rate == 1500.5);
}

/* A trace file NAME in the test's directory holding text; its path in path. */
static void write_trace(char *path, size_t len, const char *name, const char *text)
{
	FILE *f;

	snprintf(path, len, "%s/%s", pc_test_tmpdir(), name);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* A run of workload wl (a spec or a trace's path) on the topology in text (len bytes),
 * with cfg's other settings: run_sim's result, err its line. The topology lives for
 * the run only. */
static int run_text(struct run_cfg *cfg, const char *text, size_t len, const char *wl,
		    struct run_result *r, char *err, size_t errlen)
{
	struct pc_topology *t = NULL;
	int ret;

	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, len, "t", &t, err, errlen), 0);
	CU_ASSERT_EQUAL_FATAL(wl_parse(wl, &cfg->wl, err, errlen), 0);
	cfg->topo = t;
	ret = run_sim(cfg, r, err, errlen);
	cfg->topo = NULL;
	pc_topology_free(t);
	return ret;
}

/* trace_check on a trace of text: its good and bad lines, and why the first three
 * bad ones are (in why, whylen long). */
static void check_trace(const char *name, const char *text, uint64_t good, uint64_t bad, char *why,
			size_t whylen)
{
	char path[256], err[PC_ERR_MAX];
	uint64_t g = 0, b = 0;

	write_trace(path, sizeof(path), name, text);
	CU_ASSERT_EQUAL_FATAL(trace_check(path, &g, &b, why, whylen, err, sizeof(err)), 0);
	printf("\n  %s: %llu good, %llu bad: %s", name, (unsigned long long)g, (unsigned long long)b,
	       why);
	CU_ASSERT_EQUAL(g, good);
	CU_ASSERT_EQUAL(b, bad);
}

/* A trace line whose timestamp is missing or not a whole number of ms, or whose
 * hash_ids hold something other than integers, is not a request: read as 0, it
 * would arrive at the trace's start or name block 0 and hit as another's prefix.
 * Nor is one whose timestamp is further from 0 than the run's clock of 2^64 ns
 * holds, or before it: its arrival would wrap. */
static void test_trace_bad_fields(void)
{
	char why[600];

	check_trace("fields.jsonl",
		    "{\"timestamp\": 10, \"input_length\": 600, \"hash_ids\": [1, 2]}\n"
		    "{\"input_length\": 600, \"hash_ids\": [1, 3]}\n"
		    "{\"timestamp\": \"20\", \"input_length\": 600, \"hash_ids\": [1, 4]}\n"
		    "{\"timestamp\": 30, \"input_length\": 600, \"hash_ids\": [1, \"x\"]}\n"
		    "{\"timestamp\": 40, \"input_length\": 600, \"hash_ids\": [1, 2.5]}\n"
		    "{\"timestamp\": 50, \"input_length\": 600, \"hash_ids\": [7, 8]}\n",
		    2, 4, why, sizeof(why));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 2: timestamp"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 4: hash_ids"));
	check_trace("range.jsonl",
		    "{\"timestamp\": 0, \"input_length\": 600, \"hash_ids\": [1, 2]}\n"
		    "{\"timestamp\": 18446744073710, \"input_length\": 600, \"hash_ids\": [1, 3]}\n"
		    "{\"timestamp\": -1, \"input_length\": 600, \"hash_ids\": [1, 4]}\n"
		    "{\"timestamp\": 18446744073709, \"input_length\": 600, \"hash_ids\": [1, 5]}\n",
		    2, 2, why, sizeof(why));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 2: timestamp outside 0..18446744073709 ms"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "line 3: timestamp outside"));
}

/* A parameter of another kind of workload is refused, not ignored: zipf has no
 * groups, prefix no keys, a trace neither. */
static void test_wl_foreign_keys(void)
{
	static const char *const bad[] = {
		"zipf:keys=1000,groups=4",
		"zipf:keys=1000,file=t.jsonl",
		"prefix:groups=4,keys=1000",
		"prefix:groups=4,s=0.9",
		"mooncake:t.jsonl,pages=4",
	};
	char err[PC_ERR_MAX];
	struct wl_spec w;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CU_ASSERT_EQUAL(wl_parse(bad[i], &w, err, sizeof(err)), -EINVAL);
		CU_ASSERT(err[0] && !strchr(err, '\n'));
	}
	CU_ASSERT_EQUAL(wl_parse("prefix:groups=4,prompts=2,group_s=0.5,requests=10,rate=5", &w, err,
				 sizeof(err)), 0);
	CU_ASSERT_EQUAL(wl_parse("mooncake:t.jsonl,requests=10,rate=5", &w, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(wl_parse("mooncake:file=t.jsonl,requests=10", &w, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(w.trace, "t.jsonl");
}

/* Slotmap evicts by write order (one-sided reads cannot refresh a stamp): FIFO. */
static void test_fifo_hit_rate(void)
{
	static const uint32_t ways[] = { 4, 8, 16 };
	const uint64_t keys = 20000, slots = 2048;
	const double s_exp = 0.9;
	uint64_t reqs = pc_test_under_valgrind() ? 20000 : 400000;
	double want = char_time_hit(keys, s_exp, (double)slots, false);

	printf("\n");
	for (int i = 0; i < 3; i++) {
		struct inproc_world *wd;
		struct pc_topology *t;
		struct pc_store *st;
		char store[256];
		double hit;

		snprintf(store, sizeof(store),
			 "slot_size_classes: [4KiB], slot_ways: %u, slot_num_buckets: %llu", ways[i],
			 (unsigned long long)(slots / ways[i]));
		st = one_node(store, &wd, &t);
		hit = zipf_hit_rate(st, keys, s_exp, reqs, 5);
		printf("  slotmap %2u-way, %llu slots, Zipf(%.1f) over %llu keys: hit rate %.4f; fully associative FIFO (characteristic time) %.4f\n",
		       ways[i], (unsigned long long)slots, s_exp, (unsigned long long)keys, hit, want);
		if (ways[i] == 16 && pc_test_precise("16-way hit rate within 0.02 of FIFO (too few requests)"))
			CU_ASSERT(fabs(hit - want) <= 0.02);
		close_node(st, wd, t);
	}
}

/* p2p's published pool is fully associative and LRU (a node's own reads refresh a
 * page): its hit rate against Che's approximation. */
static void test_lru_che(void)
{
	const uint64_t keys = 20000;
	const double s_exp = 0.9;
	uint64_t reqs = pc_test_under_valgrind() ? 20000 : 400000;
	struct inproc_world *wd;
	struct pc_topology *t;
	struct pc_store *st = one_node("mode: p2p, slot_size_classes: [4KiB], global_segment_size: 8MiB",
				       &wd, &t);
	struct pc_metrics m = { .size = sizeof(m) };

	double hit = zipf_hit_rate(st, keys, s_exp, reqs, 7), want;

	pc_store_metrics(st, &m);	/* the pool is full by now: its size is C */
	want = char_time_hit(keys, s_exp, (double)m.pool_keys, true);
	printf("\n  p2p pool (fully associative LRU), %llu blocks, Zipf(%.1f) over %llu keys: hit rate %.4f; Che %.4f (%+.2f points)",
	       (unsigned long long)m.pool_keys, s_exp, (unsigned long long)keys, hit, want,
	       100 * (hit - want));
	CU_ASSERT(m.pool_keys > 1000 && m.pool_keys < 4096);
	if (pc_test_precise("p2p pool hit rate within 0.005 of Che (too few requests)"))
		CU_ASSERT(fabs(hit - want) <= 0.005);
	close_node(st, wd, t);
}

/* ---------------------------------------------------------------- prefix trace */

static void test_prefix_exact(void)
{
	char path[256], text[512], err[PC_ERR_MAX];
	struct run_cfg cfg = { .timing = false, .payload_free = true };
	struct run_result r;
	uint64_t *seen = calloc(1 << 16, sizeof(uint64_t)), tokens = 0, hit = 0;
	struct sim *rng = sim_create(99);
	uint32_t nseen = 0, nreq = pc_test_under_valgrind() ? 100 : 2000;
	FILE *f;

	snprintf(path, sizeof(path), "%s/trace.jsonl", pc_test_tmpdir());
	f = fopen(path, "w");
	for (uint32_t q = 0; q < nreq; q++) {
		/* a conversation's earlier blocks, then new ones; the last block partial */
		uint64_t conv = sim_random(rng) % 50, shared = sim_random(rng) % 6, fresh = 1 + sim_random(rng) % 4;
		uint64_t n = shared + fresh, in = (n - 1) * 512 + 1 + sim_random(rng) % 512;
		uint64_t rtokens = 0, rhit = 0;
		bool miss = false;

		fprintf(f, "{\"timestamp\": %u, \"input_length\": %llu, \"output_length\": 10, \"hash_ids\": [",
			q * 10, (unsigned long long)in);
		for (uint64_t b = 0; b < n; b++) {
			uint64_t id = b < shared ? conv * 1000 + b : 1000000 + (uint64_t)q * 10 + b;
			uint64_t tok = b + 1 < n ? 512 : in - 512 * (n - 1);
			bool known = false;

			fprintf(f, "%s%llu", b ? ", " : "", (unsigned long long)id);
			for (uint32_t k = 0; k < nseen && !known; k++)
				known = seen[k] == id;
			miss |= !known;
			rtokens += tok;
			if (!miss)
				rhit += tok;
			if (!known)
				seen[nseen++] = id;
		}
		fprintf(f, "]}\n");
		tokens += rtokens;
		hit += rhit;
	}
	fclose(f);
	/* one page per 512-token block; a cache far larger than the trace */
	snprintf(text, sizeof(text),
		 "store: {slot_size_classes: [8KiB], slot_ways: 16, slot_num_buckets: 65536}\n"
		 "model: {layers: 1, kv_heads: 1, head_dim: 8, dtype: int8, tokens_per_page: 512}\n"
		 "nodes:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.2}\n");
	cfg.seed = 1;
	if (run_text(&cfg, text, strlen(text), path, &r, err, sizeof(err)))
		printf("\n  %s\n", err);
	printf("\n  %u requests: simulated token hits %llu of %llu, exact count %llu of %llu (evictions %.0f)\n",
	       nreq, (unsigned long long)r.token_hits, (unsigned long long)r.tokens,
	       (unsigned long long)hit, (unsigned long long)tokens, r.evictions);
	CU_ASSERT_EQUAL(r.tokens, tokens);
	CU_ASSERT_EQUAL(r.token_hits, hit);
	CU_ASSERT_EQUAL(r.evictions, 0);
	run_result_free(&r);
	sim_destroy(rng);
	free(seen);
}

/* A trace's arrivals never go back: a timestamp earlier than one before it (the
 * first's included) arrives with the request before it, not 2^64 ns minus a little
 * after the start. */
static void test_trace_times(void)
{
	static const uint64_t want_ms[] = { 0, 0, 500, 500, 700 };
	char path[256], err[PC_ERR_MAX];
	struct wl_spec spec;
	struct wl_gen *g = NULL;
	struct wl_req r;

	write_trace(path, sizeof(path), "times.jsonl",
		    "{\"timestamp\": 1000, \"input_length\": 600, \"hash_ids\": [1, 2]}\n"
		    "{\"timestamp\": 400, \"input_length\": 600, \"hash_ids\": [1, 3]}\n"
		    "{\"timestamp\": 1500, \"input_length\": 600, \"hash_ids\": [1, 4]}\n"
		    "{\"timestamp\": 1200, \"input_length\": 600, \"hash_ids\": [1, 5]}\n"
		    "{\"timestamp\": 1700, \"input_length\": 600, \"hash_ids\": [1, 6]}\n");
	CU_ASSERT_EQUAL_FATAL(wl_parse(path, &spec, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(wl_open(&spec, 1, 512, &g, err, sizeof(err)), 0);
	for (int i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL_FATAL(wl_next(g, &r), 1);
		CU_ASSERT_EQUAL(r.t_ns, want_ms[i] * 1000000ULL);
	}
	CU_ASSERT_EQUAL(wl_next(g, &r), 0);
	wl_close(g);
}

/* A trace whose second request comes 2^31 intervals of the time series after its
 * first: the run ends with both served and both in the time series, which holds the
 * two intervals with requests and nothing for the gap between them (a point for every
 * interval was 12 KiB each, and 2^31 of them were past what the series could count). */
static void test_trace_far_apart(void)
{
	const char *text = "store: {slot_size_classes: [8KiB], global_segment_size: 8MiB}\n"
			   "nodes:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.2}\n";
	struct run_cfg cfg = { .timing = true, .payload_free = true, .seed = 1,
			       .interval_ns = 1000000000ULL };
	struct run_result r;
	char path[256], err[PC_ERR_MAX];

	write_trace(path, sizeof(path), "far.jsonl",
		    "{\"timestamp\": 0, \"input_length\": 600, \"hash_ids\": [1, 2]}\n"
		    "{\"timestamp\": 2147483653000, \"input_length\": 600, \"hash_ids\": [1, 3]}\n");
	CU_ASSERT_EQUAL(run_text(&cfg, text, strlen(text), path, &r, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(r.requests, 2);
	CU_ASSERT(r.sim_s >= 2147483653.0);
	CU_ASSERT_EQUAL_FATAL(r.nr_points, 2);
	CU_ASSERT(r.series[0].k == 0 && r.series[0].requests == 1 && r.series[0].p50_ns > 0);
	CU_ASSERT(r.series[1].k == 2147483653ULL && r.series[1].requests == 1);
	CU_ASSERT(r.series[1].p99_ns > 0);
	run_result_free(&r);
}

/* ---------------------------------------------------------------- spill */

/* The same Zipf workload on slots that hold an eighth of its keys, with and without a
 * disk under them: spill turns most misses into disk hits, on the NVMe model. */
static void test_spill_adds_hits(void)
{
	struct run_result r[2];
	char err[PC_ERR_MAX];

	for (int spill = 0; spill < 2; spill++) {
		struct run_cfg cfg = { .timing = true, .payload_free = true, .seed = 3 };
			char text[768];

		snprintf(text, sizeof(text),
			 "store: {slot_size_classes: [16KiB], slot_ways: 4, global_segment_size: 4MiB, slot_spill_ways: %d}\n"
			 "node_defaults: {nvme: {path: /unused, capacity: 128MiB, read_mbps: 2000, write_mbps: 1000, latency_us: 80, queue_depth: 32}}\n"
			 "nodes:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.2}\n",
			 spill);
		if (run_text(&cfg, text, strlen(text),
			     pc_test_under_valgrind() ? "zipf:keys=4000,s=0.8,pages=4,requests=300,rate=500" :
							"zipf:keys=4000,s=0.8,pages=4,requests=4000,rate=500",
			     &r[spill], err, sizeof(err)))
			printf("\n  %s\n", err);
	}
	printf("\n  504 slots for 4000 keys: page hits %.3f without a disk; %.3f with one (%.3f from disk; %.0f demoted, %.0f promoted; NVMe busy %.1f%%)",
	       (double)r[0].page_hits / (double)r[0].pages, (double)r[1].page_hits / (double)r[1].pages,
	       (double)r[1].pages_disk / (double)r[1].pages, r[1].demotions, r[1].promotions,
	       100 * r[1].nvme_util_mean);
	CU_ASSERT_EQUAL(r[0].pages_disk, 0);
	CU_ASSERT_EQUAL(r[0].demotions, 0);
	CU_ASSERT(r[1].pages_disk > 0);
	CU_ASSERT(r[1].promotions > 0 && r[1].demotions > 0);
	CU_ASSERT(r[1].nvme_util_mean > 0);
	if (pc_test_precise("spill recovers half the misses (too few requests)"))
		CU_ASSERT(r[1].page_hits - r[0].page_hits > (r[0].pages - r[0].page_hits) / 2);
	run_result_free(&r[0]);
	run_result_free(&r[1]);
}

/* nvme_util_mean is the mean over the drives: a and b, one host's processes
 * spilling to one directory, share a drive; c's own drive is so fast it is all but
 * idle. The mean over the two drives is about half the busiest's, not two thirds
 * (the shared one counted once per node). */
static void test_nvme_util_per_drive(void)
{
	static const char text[] =
		"store: {slot_size_classes: [16KiB], slot_ways: 4, global_segment_size: 4MiB, slot_spill_ways: 2}\n"
		"node_defaults: {nvme: {path: /unused, capacity: 128MiB, read_mbps: 2000, write_mbps: 1000, latency_us: 80, queue_depth: 32}}\n"
		"nodes:\n  - {name: a, address: 127.0.0.1}\n  - {name: b, address: 127.0.0.1, port: 31999}\n"
		"  - {name: c, address: 10.0.0.3, nvme: {path: /fast, capacity: 128MiB, read_mbps: 1000000, write_mbps: 1000000, latency_us: 0, queue_depth: 32}}\n";
	struct run_cfg cfg = { .timing = true, .payload_free = true, .seed = 3 };
	struct run_result r;
	char err[PC_ERR_MAX];

	CU_ASSERT_EQUAL_FATAL(run_text(&cfg, text, strlen(text),
				       "zipf:keys=4000,s=0.8,pages=4,requests=300,rate=500", &r, err,
				       sizeof(err)), 0);
	printf("\n  NVMe busy: mean %.4f, max %.4f\n", r.nvme_util_mean, r.nvme_util_max);
	CU_ASSERT(r.nvme_util_max > 0);
	CU_ASSERT(fabs(r.nvme_util_mean / r.nvme_util_max - 0.5) < 0.05);
	run_result_free(&r);
}

/* ---------------------------------------------------------------- a crash */

struct windows {
	uint64_t kill_ns, failure_ns;
	uint64_t hits[3], pages[3];	/* before the kill, until detected, after */
};

static void count_window(void *arg, uint64_t t_ns, const uint64_t *pages, const int *status,
			 uint32_t n, uint64_t latency_ns)
{
	struct windows *w = arg;
	int k = t_ns < w->kill_ns - 2000000000ULL ? -1 : t_ns < w->kill_ns ? 0 :
		t_ns < w->kill_ns + w->failure_ns ? 1 : t_ns > w->kill_ns + 3 * w->failure_ns ? 2 : -1;

	(void)pages;
	(void)latency_ns;
	if (k < 0)
		return;
	w->pages[k] += n;
	for (uint32_t i = 0; i < n; i++)
		w->hits[k] += !status[i];
}

/* kill: a node crashes and nobody is told: the others' heartbeats (in virtual time,
 * the core's membership task) take it out after the failure timeout; until then
 * its pages miss, after it the hits come back as its keys are rewritten elsewhere. */
static void test_kill_detected(void)
{
	struct windows w = { .kill_ns = 5000000000ULL, .failure_ns = 1000000000ULL };
	struct run_cfg cfg = { .payload_free = true, .seed = 7, .on_request = count_window,
			       .on_request_arg = &w };
	struct run_result r;
	char err[PC_ERR_MAX];
	double h[3];
	static const char text[] =
		"store: {slot_size_classes: [16KiB], slot_ways: 4, global_segment_size: 64MiB, heartbeat_ms: 100, failure_timeout_ms: 1000}\n"
		"nodes:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.2}\n"
		"  - {name: c, address: 10.0.0.3}\n  - {name: d, address: 10.0.0.4}\n";

	cfg.events[cfg.nr_events++] = (struct run_event){ .t_ns = w.kill_ns, .node = 2, .kill = true };
	pc_log_set_level(PC_LOG_ERROR);	/* every node says what its heartbeats found */
	CU_ASSERT_EQUAL(run_text(&cfg, text, strlen(text),
				 "zipf:keys=2000,s=0.9,pages=4,requests=10000,rate=1000", &r, err,
				 sizeof(err)), 0);
	pc_log_set_level(PC_LOG_WARN);
	for (int k = 0; k < 3; k++)
		h[k] = w.pages[k] ? (double)w.hits[k] / (double)w.pages[k] : 0;
	printf("\n  page hits: %.3f before the kill, %.3f until the failure timeout, %.3f after it",
	       h[0], h[1], h[2]);
	CU_ASSERT(w.pages[0] > 0 && w.pages[1] > 0 && w.pages[2] > 0);
	CU_ASSERT(h[1] < h[0] - 0.1);	/* a quarter of the pages live on the dead node */
	CU_ASSERT(h[2] > h[1] + 0.1);
	run_result_free(&r);
}

/* The end of a run with heartbeats: every node stops at once, so none sees another
 * fall silent and takes it out (nodes closed one after the other did: 43 warnings at
 * 64 nodes, 104 421 at 512). What the nodes log goes to a file and is read back. */
static void test_close_no_flaps(void)
{
	struct run_cfg cfg = { .payload_free = true, .seed = 3, .heartbeats = true };
	struct run_result r;
	char err[PC_ERR_MAX], line[512];
	size_t len = 0, flaps = 0;
	char *text = malloc(64 * 64 + 256);
	FILE *log = tmpfile();
	int saved = dup(2);

	CU_ASSERT_FATAL(text && log && saved >= 0);
	len += (size_t)sprintf(text, "store: {slot_size_classes: [16KiB], slot_ways: 4, "
			       "global_segment_size: 4MiB, heartbeat_ms: 100, failure_timeout_ms: 300}\nnodes:\n");
	for (int i = 0; i < 64; i++)
		len += (size_t)sprintf(text + len, "  - {name: n%02d, address: 10.0.%d.%d}\n", i, i / 200,
				       i % 200 + 1);
	fflush(stderr);
	dup2(fileno(log), 2);
	CU_ASSERT_EQUAL(run_text(&cfg, text, len, "zipf:keys=2000,pages=4,requests=2000,rate=1000", &r,
				 err, sizeof(err)), 0);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(log);
	while (fgets(line, sizeof(line), log))
		flaps += strstr(line, "taken out of the ring") != NULL;
	printf("\n  64 nodes, 2 s of heartbeats: %zu taken out of the ring", flaps);
	CU_ASSERT_EQUAL(flaps, 0);
	CU_ASSERT(r.member_rpcs > 0);
	run_result_free(&r);
	fclose(log);
	free(text);
}

/* ---------------------------------------------------------------- one call */

struct outcomes {
	uint8_t *hit;
	size_t n, cap;
};

static void note_outcomes(void *arg, uint64_t t_ns, const uint64_t *pages, const int *status,
			  uint32_t n, uint64_t latency_ns)
{
	struct outcomes *o = arg;

	(void)t_ns;
	(void)pages;
	(void)latency_ns;
	if (o->n + n > o->cap) {
		o->cap = (o->n + n) * 2;
		o->hit = realloc(o->hit, o->cap);
	}
	for (uint32_t i = 0; o->hit && i < n; i++)
		o->hit[o->n++] = status[i] == 0 ? 1 : status[i] == -ENOENT ? 0 : 2;
}

/*
 * Without a time model a request's lookup and publishing are one store call
 * (store_lookup_fill); with batch_calls the same run makes the two batch calls. Every
 * page must come out alike, and the evictions too, where buckets overflow inside one
 * request (one way: a batch's keys never evict each other), a request names a key
 * twice (Zipf over few keys), pages live in one of two size classes, a node leaves
 * and joins, and a node is killed (its keys are not addressable then: those
 * requests take the batch calls).
 */
static void test_one_call_as_two(void)
{
	static const struct {
		const char *store, *wl;
		bool events;
	} cases[] = {
		{ "slot_size_classes: [4KiB], slot_ways: 4, slot_num_buckets: 64", "prefix:groups=60,prompts=10,prefix=16,suffix=4,requests=3000,rate=1000", true },
		{ "slot_size_classes: [4KiB], slot_ways: 1, slot_num_buckets: 256", "prefix:groups=60,prompts=10,prefix=16,suffix=4,requests=3000,rate=1000", false },
		{ "slot_size_classes: [4KiB], slot_ways: 8, slot_num_buckets: 16", "zipf:keys=600,s=1.1,pages=24,requests=3000,rate=1000", true },
		/* the pages' length names their class: read and written there */
		{ "slot_size_classes: [1KiB, 4KiB], slot_ways: 4, slot_num_buckets: 64", "zipf:keys=2000,s=0.9,pages=16,requests=3000,rate=1000", true },
	};

	printf("\n");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct outcomes o[2] = { { 0 } };
		struct run_result r[2];
		struct pc_topology *t = NULL;
		char text[640], err[PC_ERR_MAX];
		size_t differ = 0, hits = 0;

		snprintf(text, sizeof(text),
			 "store: {%s, heartbeat_ms: 100, failure_timeout_ms: 300}\n"
			 "nodes:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.2}\n"
			 "  - {name: c, address: 10.0.0.3}\n  - {name: d, address: 10.0.0.4}\n",
			 cases[c].store);
		CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "t", &t, err, sizeof(err)), 0);
		for (int two = 0; two < 2; two++) {
			struct run_cfg cfg = { .payload_free = true, .seed = 11, .topo = t,
					       .batch_calls = two, .on_request = note_outcomes,
					       .on_request_arg = &o[two] };

			CU_ASSERT_EQUAL_FATAL(wl_parse(cases[c].wl, &cfg.wl, err, sizeof(err)), 0);
			if (cases[c].events) {
				cfg.events[cfg.nr_events++] = (struct run_event){ .t_ns = 800000000, .node = 1 };
				cfg.events[cfg.nr_events++] = (struct run_event){ .t_ns = 1400000000, .node = 1, .join = true };
				cfg.events[cfg.nr_events++] = (struct run_event){ .t_ns = 2000000000, .node = 2, .kill = true };
				cfg.events[cfg.nr_events++] = (struct run_event){ .t_ns = 2600000000, .node = 2, .join = true };
			}
			pc_log_set_level(PC_LOG_ERROR);	/* heartbeats say what they found */
			CU_ASSERT_EQUAL(run_sim(&cfg, &r[two], err, sizeof(err)), 0);
			pc_log_set_level(PC_LOG_WARN);
		}
		CU_ASSERT_EQUAL(o[0].n, o[1].n);
		for (size_t i = 0; i < o[0].n && i < o[1].n; i++) {
			differ += o[0].hit[i] != o[1].hit[i];
			hits += o[0].hit[i] == 1;
		}
		printf("  %s, %s: %zu pages, %zu hits, %.0f and %.0f evictions; %llu of %llu requests in one call; %zu outcomes differ\n",
		       cases[c].store, cases[c].wl, o[0].n, hits, r[0].evictions, r[1].evictions,
		       (unsigned long long)r[0].one_call, (unsigned long long)r[0].requests, differ);
		CU_ASSERT_EQUAL(differ, 0);
		CU_ASSERT_EQUAL(r[0].evictions, r[1].evictions);
		CU_ASSERT_EQUAL(r[0].page_hits, r[1].page_hits);
		CU_ASSERT(hits > 0 && hits < o[0].n && r[0].evictions > 0);
		CU_ASSERT(r[0].one_call > r[0].requests / 2);	/* most in one call ... */
		CU_ASSERT(!cases[c].events || r[0].one_call < r[0].requests);	/* ... not all */
		CU_ASSERT_EQUAL(r[1].one_call, 0);
		run_result_free(&r[0]);
		run_result_free(&r[1]);
		free(o[0].hit);
		free(o[1].hit);
		pc_topology_free(t);
	}
}

/* ---------------------------------------------------------------- rpc hand-off */

/* fn on node 0 of a two-node cluster (16 KiB slots), twice: run i with the node keys
 * nodes[i] and a rail of the keys rails[i]; results[i] (size bytes each) gets it. */
static void two_runs(const char *const nodes[2], const char *const rails[2],
		     void (*fn)(struct pc_store *, void *), void *results, size_t size)
{
	char err[PC_ERR_MAX];

	for (int i = 0; i < 2; i++) {
		struct run_cfg cfg = { .timing = true, .payload_free = true, .seed = 1 };
		struct pc_topology *t = NULL;
		char text[512];

		snprintf(text, sizeof(text),
			 "store: {slot_size_classes: [16KiB], global_segment_size: 4MiB}\n"
			 "node_defaults: {%s%srails: [{device: d, %s}]}\n"
			 "nodes:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.2}\n",
			 nodes[i], *nodes[i] ? ", " : "", rails[i]);
		CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "t", &t, err, sizeof(err)), 0);
		cfg.topo = t;
		CU_ASSERT_EQUAL(run_on_node(&cfg, 0, fn, (char *)results + i * size, err, sizeof(err)), 0);
		pc_topology_free(t);
	}
}

/* two_runs on a rail of 100 Gb/s and 5 us each way, the node keys fixed, once with
 * each of two values of the node key `key`: results[i] gets the run with v[i]. */
static void two_node_runs(const char *fixed, const char *key, const int v[2],
			  void (*fn)(struct pc_store *, void *), void *results, size_t size)
{
	char keys[2][128];
	const char *rail = "gbps: 100, latency_us: 5";

	for (int i = 0; i < 2; i++)
		snprintf(keys[i], sizeof(keys[i]), "%s%s: %d", fixed, key, v[i]);
	two_runs((const char *const[2]){ keys[0], keys[1] }, (const char *const[2]){ rail, rail },
		 fn, results, size);
}

struct rpc_times {
	uint64_t layout_ns, promote_ns;
};

/* From node 0 to node 1: a layout (answered on the spot) and a promotion of a key
 * node 1 does not hold (handed to a worker). */
struct two_rpcs {
	struct {
		struct proto_promote h;
		struct proto_promote_key k;
	} req;
	struct pc_rpc layout, promote;
};

static void two_rpcs_init(struct two_rpcs *r)
{
	r->req.h = (struct proto_promote){ .n = 1 };
	r->req.k = (struct proto_promote_key){ .lo = 7, .hi = 9, .cap = 4096 };
	r->layout = (struct pc_rpc){ .peer = 1, .opcode = PC_RPC_LAYOUT };
	r->promote = (struct pc_rpc){ .peer = 1, .opcode = PC_RPC_SLOT_PROMOTE, .req = &r->req,
				      .req_len = sizeof(r->req) };
}

/* One call's time; its answer freed. */
static uint64_t time_call(struct pc_store *st, struct pc_rpc *r)
{
	uint64_t t0 = pc_env_now(st->svc.env);

	CU_ASSERT_EQUAL(pc_fabric_call(st->svc.fabric, r, 1), 0);
	pc_msg_free(&r->resp);
	return pc_env_now(st->svc.env) - t0;
}

static void time_rpcs(struct pc_store *st, void *arg)
{
	struct rpc_times *t = arg;
	struct two_rpcs r;

	two_rpcs_init(&r);
	t->layout_ns = time_call(st, &r.layout);
	t->promote_ns = time_call(st, &r.promote);
	CU_ASSERT_EQUAL(r.layout.status, 0);
	CU_ASSERT_EQUAL(r.promote.status, -EOPNOTSUPP);	/* node 1 does not spill */
}

/* nodes.rpc_us: a request the peer hands to a worker (a promotion) takes it more,
 * once; one it answers on the spot (a layout: PROTO_QUICK_RPCS) does not. */
static void test_rpc_hand_off(void)
{
	struct rpc_times t[2];

	two_node_runs("", "rpc_us", (const int[2]){ 0, 150 }, time_rpcs, t, sizeof(t[0]));
	printf("\n  layout %.1f / %.1f us, promotion %.1f / %.1f us, at rpc_us 0 / 150",
	       t[0].layout_ns / 1e3, t[1].layout_ns / 1e3, t[0].promote_ns / 1e3, t[1].promote_ns / 1e3);
	CU_ASSERT_EQUAL(t[1].layout_ns, t[0].layout_ns);
	CU_ASSERT_EQUAL(t[1].promote_ns, t[0].promote_ns + 150000);
	CU_ASSERT(t[0].promote_ns >= 10000);	/* a round trip of 5 us each way, at least */
}

/* ---------------------------------------------------------------- write rate */

#define RATE_PAGES 16

struct rate_times {
	uint64_t get_ns, set_ns, get_one_ns;	/* get_one_ns: of the first page alone */
};

/* RATE_PAGES pages of 16 KiB under keys that node 1 owns. */
static void rate_pages(struct pc_store *st, uint64_t keys[RATE_PAGES], struct pc_page pg[RATE_PAGES])
{
	static uint8_t page[16384];
	uint64_t key = 0;

	for (uint32_t i = 0; i < RATE_PAGES; i++, key++) {
		while (ring_owner_of(store_ring_of(st), keyhash_of(&key, sizeof(key))) != 1)
			key++;
		keys[i] = key;
		pg[i] = (struct pc_page){ .key = &keys[i], .key_len = sizeof(keys[i]), .data = page,
					  .len = sizeof(page), .cap = sizeof(page) };
	}
}

/* Node 0 sets RATE_PAGES pages that node 1 owns, gets the first alone, then gets
 * them all, each timed. */
static void time_rates(struct pc_store *st, void *arg)
{
	struct rate_times *t = arg;
	struct pc_env *env = st->svc.env;
	uint64_t keys[RATE_PAGES], t0;
	struct pc_page pg[RATE_PAGES];

	rate_pages(st, keys, pg);
	t0 = pc_env_now(env);
	CU_ASSERT_EQUAL(pc_batch_set(st, pg, RATE_PAGES), RATE_PAGES);
	t->set_ns = pc_env_now(env) - t0;
	t0 = pc_env_now(env);
	CU_ASSERT_EQUAL(pc_batch_get(st, pg, 1), 1);
	t->get_one_ns = pc_env_now(env) - t0;
	t0 = pc_env_now(env);
	CU_ASSERT_EQUAL(pc_batch_get(st, pg, RATE_PAGES), RATE_PAGES);
	t->get_ns = pc_env_now(env) - t0;
}

/* nodes.rails.write_gbps: a WRITE's bytes cross the ports at that rate, a READ's at
 * gbps; 0 is gbps. At 10 Gb/s and write_gbps 5 the set's pages (header and page
 * each) take twice their 10 Gb/s time, the get's no longer. */
static void test_write_rate(void)
{
	struct rate_times t[2];
	const double page_ns = (16384 + 64) * 8 / 10.0;	/* at 10 Gb/s */

	two_runs((const char *const[2]){ "", "" },
		 (const char *const[2]){ "gbps: 10, write_gbps: 0, latency_us: 5",
					 "gbps: 10, write_gbps: 5, latency_us: 5" },
		 time_rates, t, sizeof(t[0]));
	printf("\n  %d pages of 16 KiB at write_gbps 0 / 5 (gbps 10): get %.1f / %.1f us, set %.1f / %.1f us",
	       RATE_PAGES, t[0].get_ns / 1e3, t[1].get_ns / 1e3, t[0].set_ns / 1e3, t[1].set_ns / 1e3);
	CU_ASSERT_EQUAL(t[1].get_ns, t[0].get_ns);
	CU_ASSERT(fabs((double)(t[1].set_ns - t[0].set_ns) - RATE_PAGES * page_ns) <
		  0.01 * RATE_PAGES * page_ns);
}

/* A get of one of RATE_PAGES pages of 16 KiB and of all of them at 10 Gb/s, with the
 * rail key `key` at 0 and at 1: how much longer each takes at 1, in ns. */
static void forward_extra(const char *key, double *one_ns, double *all_ns)
{
	struct rate_times t[2];
	char rail[2][96];

	for (int i = 0; i < 2; i++)
		snprintf(rail[i], sizeof(rail[i]), "gbps: 10, %s: %d, latency_us: 5", key, i);
	two_runs((const char *const[2]){ "", "" }, (const char *const[2]){ rail[0], rail[1] },
		 time_rates, t, sizeof(t[0]));
	printf("\n  a get of 1 / %d pages of 16 KiB at %s 0: %.1f / %.1f us, at 1: %.1f / %.1f us",
	       RATE_PAGES, key, t[0].get_one_ns / 1e3, t[0].get_ns / 1e3, t[1].get_one_ns / 1e3,
	       t[1].get_ns / 1e3);
	*one_ns = (double)(t[1].get_one_ns - t[0].get_one_ns);
	*all_ns = (double)(t[1].get_ns - t[0].get_ns);
}

#define PAGE_NS ((16384 + 64) * 8 / 10.0)	/* a page and its header at 10 Gb/s */

/* nodes.rails.store_forward: a transfer takes that many of its last op's bytes at
 * the rail's rate past its ports, once: a get of one page its page's time more at
 * store_forward 1, a get of sixteen one page's time too, not sixteen. */
static void test_store_forward(void)
{
	double one, all;

	forward_extra("store_forward", &one, &all);
	CU_ASSERT(fabs(one - PAGE_NS) < 0.02 * PAGE_NS);
	CU_ASSERT(fabs(all - PAGE_NS) < 0.02 * PAGE_NS);
}

/* nodes.rails.segment_forward: as many of a segment's bytes (the transfer's,
 * at most 64 KiB): a get of one page its page's time more, a get of sixteen (256
 * KiB) 64 KiB's. */
static void test_segment_forward(void)
{
	const double segment_ns = 65536 * 8 / 10.0;
	double one, all;

	forward_extra("segment_forward", &one, &all);
	CU_ASSERT(fabs(one - PAGE_NS) < 0.02 * PAGE_NS);
	CU_ASSERT(fabs(all - segment_ns) < 0.02 * segment_ns);
}

/* ---------------------------------------------------------------- wake-ups */

struct wake_times {
	uint64_t quick, after_100us, after_1ms, get_after_100us, get_after_1ms, long_rpc;
};

/* Node 0 asks node 1: layouts (answered on the spot) back to back and after idle
 * gaps, a get of node 1's page after a gap, and a promotion (handed to a worker for
 * rpc_us, longer than idle_us) right after. */
static void time_wakes(struct pc_store *st, void *arg)
{
	struct wake_times *t = arg;
	struct pc_env *env = st->svc.env;
	struct two_rpcs r;
	static uint8_t page[16384];
	uint64_t key = 0, t0;
	struct pc_page pg;

	while (ring_owner_of(store_ring_of(st), keyhash_of(&key, sizeof(key))) != 1)
		key++;
	pg = (struct pc_page){ .key = &key, .key_len = sizeof(key), .data = page, .len = sizeof(page),
			       .cap = sizeof(page) };
	two_rpcs_init(&r);
	CU_ASSERT_EQUAL(pc_batch_set(st, &pg, 1), 1);
	time_call(st, &r.layout);
	t->quick = time_call(st, &r.layout);
	pc_env_sleep(env, 100000);
	t->after_100us = time_call(st, &r.layout);
	pc_env_sleep(env, 1000000);
	t->after_1ms = time_call(st, &r.layout);
	pc_env_sleep(env, 100000);
	t0 = pc_env_now(env);
	CU_ASSERT_EQUAL(pc_batch_get(st, &pg, 1), 1);
	t->get_after_100us = pc_env_now(env) - t0;
	pc_env_sleep(env, 1000000);
	t0 = pc_env_now(env);
	CU_ASSERT_EQUAL(pc_batch_get(st, &pg, 1), 1);
	t->get_after_1ms = pc_env_now(env) - t0;
	t->long_rpc = time_call(st, &r.promote);
}

/* time_wakes with key at 0 and at v, the fixed keys the same; both printed. */
static void wake_runs(const char *fixed, const char *key, int v, struct wake_times t[2])
{
	two_node_runs(fixed, key, (const int[2]){ 0, v }, time_wakes, t, sizeof(t[0]));
	printf("\n  at %s 0 / %d: back to back %.1f / %.1f us, after 100 us %.1f / %.1f, after 1 ms %.1f / %.1f, get after 100 us %.1f / %.1f, get after 1 ms %.1f / %.1f, rpc of 300 us %.1f / %.1f",
	       key, v, t[0].quick / 1e3, t[1].quick / 1e3, t[0].after_100us / 1e3,
	       t[1].after_100us / 1e3, t[0].after_1ms / 1e3, t[1].after_1ms / 1e3,
	       t[0].get_after_100us / 1e3, t[1].get_after_100us / 1e3, t[0].get_after_1ms / 1e3,
	       t[1].get_after_1ms / 1e3, t[0].long_rpc / 1e3, t[1].long_rpc / 1e3);
}

/* nodes.wake_us: a node idle for longer than nodes.idle_us (the peer after a gap;
 * a caller that waited that long for its answer) takes wake_us more to start on
 * what wakes it; after a shorter gap, or back to back, nothing. */
static void test_wake(void)
{
	struct wake_times t[2];

	wake_runs("rpc_us: 300, idle_us: 200, ", "wake_us", 40, t);
	CU_ASSERT_EQUAL(t[1].quick, t[0].quick);
	CU_ASSERT_EQUAL(t[1].after_100us, t[0].after_100us);
	CU_ASSERT_EQUAL(t[1].after_1ms, t[0].after_1ms + 40000);
	CU_ASSERT_EQUAL(t[1].get_after_100us, t[0].get_after_100us);
	CU_ASSERT_EQUAL(t[1].get_after_1ms, t[0].get_after_1ms + 40000);
	/* the caller's wake-up, and its copy of the few answer bytes that waited */
	CU_ASSERT(t[1].long_rpc >= t[0].long_rpc + 40000 && t[1].long_rpc < t[0].long_rpc + 40100);
	CU_ASSERT(t[0].quick >= 10000);	/* a round trip of 5 us each way, at least */
}

/* nodes.nap_us: a node idle for longer than nodes.nap_idle_us but not idle_us takes
 * nap_us more to start on a peer's request; a caller waiting for its answer polls
 * (no nap), and past idle_us wake_us alone applies. */
static void test_nap(void)
{
	struct wake_times t[2];

	wake_runs("rpc_us: 300, idle_us: 200, wake_us: 40, nap_idle_us: 50, ", "nap_us", 10, t);
	CU_ASSERT_EQUAL(t[1].quick, t[0].quick);
	CU_ASSERT_EQUAL(t[1].after_100us, t[0].after_100us + 10000);
	/* the peer's wake alone; the caller, whose answer came 60 us later, polled */
	CU_ASSERT_EQUAL(t[0].after_1ms, t[0].quick + 40000);
	CU_ASSERT_EQUAL(t[1].after_1ms, t[0].after_1ms);
	CU_ASSERT_EQUAL(t[1].get_after_100us, t[0].get_after_100us + 10000);	/* the peer's */
	CU_ASSERT_EQUAL(t[1].get_after_1ms, t[0].get_after_1ms);
	CU_ASSERT_EQUAL(t[1].long_rpc, t[0].long_rpc);	/* the caller's wake-up alone */
}

/* pccalibrate's wake-up fit over idle cases whose excesses over a 30 us get back to
 * back are ex[], their gaps as slept slept[] (NULL: as asked, 25 us to 1.6 ms), on
 * nodes that poll poll_us. */
static struct calib_params wake_fit(const double ex[CALIB_NR_GAPS], const double *slept,
				    double poll_us)
{
	static struct calib c;
	const uint32_t page = 16384, batch = 1;

	CU_ASSERT_EQUAL_FATAL(calib_cases(&c, &page, 1, &batch, 1, false, 1), 0);
	for (uint32_t i = 0; i < c.nr_cases; i++) {
		struct calib_case *k = &c.cases[i];

		k->real_us = k->op == CALIB_IDLE ? 30 + ex[k->gap] : 30;
		k->gap_us = k->op == CALIB_IDLE && slept ? slept[k->gap] : 0;
	}
	calib_fit_wake(&c, poll_us);
	return c.fit;
}

/* The fit's two steps: where the excesses step, from the gap as slept (the nap not
 * before the poll window), the nap at most half the wake (the spread of one tier is
 * not two), a step left out where it fits no better, a gap at the edge of two tiers
 * given to one. */
static void test_wake_fit(void)
{
	static const double two[CALIB_NR_GAPS] = { 2, 14, 13, 120, 121, 119, 122 },
			    lone[CALIB_NR_GAPS] = { 14, 0, 0, 120, 121, 119, 122 },
			    from25[CALIB_NR_GAPS] = { 14, 13, 14, 120, 121, 119, 122 },
			    none[CALIB_NR_GAPS] = { 0 },
			    edge[CALIB_NR_GAPS] = { 0, 0, 0, 50, 120, 121, 119 },
			    near[CALIB_NR_GAPS] = { 0, 0, 0, 80, 120, 121, 119 },
			    slept[CALIB_NR_GAPS] = { 45, 70, 121, 234, 435, 836, 1641 };
	struct calib_params p;

	p = wake_fit(two, NULL, 0);
	CU_ASSERT(p.nap_us >= 13 && p.nap_us <= 14 && p.nap_idle_us == 50);
	CU_ASSERT(p.wake_us >= 120 && p.wake_us <= 121 && p.idle_us == 200);
	/* one slow gap before fast ones is not a tier */
	p = wake_fit(lone, NULL, 0);
	CU_ASSERT(p.nap_us == 0 && p.wake_us >= 120 && p.wake_us <= 121 && p.idle_us == 200);
	p = wake_fit(from25, NULL, 0);
	CU_ASSERT(p.nap_us >= 13 && p.nap_us <= 14 && p.nap_idle_us == 25);
	/* a sleep outlasts what it asks: the steps start at the gaps as slept */
	p = wake_fit(from25, slept, 0);
	CU_ASSERT(p.nap_us >= 13 && p.nap_us <= 14 && p.nap_idle_us == 45 && p.idle_us == 234);
	/* but a node that polls 50 us naps no sooner */
	p = wake_fit(from25, slept, 50);
	CU_ASSERT(p.nap_us >= 13 && p.nap_us <= 14 && p.nap_idle_us == 50 && p.idle_us == 234);
	p = wake_fit(none, NULL, 0);
	CU_ASSERT(p.nap_us == 0 && p.wake_us == 0);
	/* a gap between two tiers: to the nap where it is at most half the wake, else
	 * to the wake */
	p = wake_fit(edge, NULL, 0);
	CU_ASSERT(p.nap_us == 50 && p.nap_idle_us == 200 && p.wake_us == 120 && p.idle_us == 400);
	p = wake_fit(near, NULL, 0);
	CU_ASSERT(p.nap_us == 0 && p.wake_us == 119 && p.idle_us == 200);
}

/* The sizes calibrated unless told: every class where their cases fit, else the
 * smallest, the largest and classes evenly between, as many as fit; and the cases
 * of that many sizes do fit. */
static void test_default_pages(void)
{
	static struct calib c;
	const uint64_t classes[8] = { 4096, 8192, 16384, 65536, 131072, 262144, 524288, 1048576 };
	const uint32_t five[5] = { 1, 4, 16, 32, 64 };
	uint32_t pages[8], many[30];

	for (uint32_t i = 0; i < 30; i++)
		many[i] = i + 1;

	CU_ASSERT_EQUAL(calib_default_pages(classes, 0, 5, false, pages), 0);
	CU_ASSERT_EQUAL_FATAL(calib_default_pages(classes + 2, 2, 5, false, pages), 2);
	CU_ASSERT(pages[0] == 16384 && pages[1] == 65536);
	/* 5 batch sizes: 14 cases a size without a disk, 18 with: three fit of 55 */
	CU_ASSERT_EQUAL_FATAL(calib_default_pages(classes + 2, 3, 5, true, pages), 3);
	CU_ASSERT(pages[0] == 16384 && pages[1] == 65536 && pages[2] == 131072);
	CU_ASSERT_EQUAL_FATAL(calib_default_pages(classes, 8, 5, false, pages), 3);
	CU_ASSERT(pages[0] == 4096 && pages[1] == 65536 && pages[2] == 1048576);
	CU_ASSERT_EQUAL(calib_cases(&c, pages, 3, five, 5, true, 1), 0);
	CU_ASSERT_EQUAL_FATAL(calib_default_pages(classes, 8, 1, false, pages), 8);
	CU_ASSERT(pages[0] == 4096 && pages[7] == 1048576);
	CU_ASSERT_EQUAL(calib_cases(&c, pages, 8, five, 1, false, 1), 0);
	/* no size fits: the smallest, and the cases say why */
	CU_ASSERT_EQUAL_FATAL(calib_default_pages(classes, 8, 30, false, pages), 1);
	CU_ASSERT_EQUAL(pages[0], 4096);
	CU_ASSERT_EQUAL(calib_cases(&c, pages, 1, many, 30, false, 1), -E2BIG);
}

/* The rail's times per byte from the cases: a get's and a set's growth from the
 * smallest page to the largest at the largest batch (10 us per KiB read and 15 per
 * KiB written here, on top of any per-op and per-batch time); the other batches
 * decide nothing. One page size, or a set that did not grow: nothing measured. */
static void test_byte_costs(void)
{
	static struct calib c;
	const uint32_t pages[2] = { 16384, 65536 }, batches[2] = { 4, 16 };

	CU_ASSERT_EQUAL_FATAL(calib_cases(&c, pages, 2, batches, 2, false, 1), 0);
	for (uint32_t i = 0; i < c.nr_cases; i++) {
		struct calib_case *k = &c.cases[i];
		double kib = k->page / 1024.0 * k->batch;

		k->real_us = k->op == CALIB_GET ? 30 + 2.0 * k->batch + 10 * kib / 1024 :
			     k->op == CALIB_SET ? 50 + 3.0 * k->batch + 15 * kib / 1024 : 40;
		if (k->batch != 16 || k->where != CALIB_PEER)
			k->real_us *= 3;	/* not the cases it reads */
	}
	calib_byte_costs(&c);
	CU_ASSERT_DOUBLE_EQUAL(c.read_byte_us, 10.0 / (1024 * 1024), 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(c.write_cost, 1.5, 1e-9);
	for (uint32_t i = 0; i < c.nr_cases; i++)
		if (c.cases[i].op == CALIB_SET && c.cases[i].batch == 16 && c.cases[i].page == 65536)
			c.cases[i].real_us = 10;
	calib_byte_costs(&c);
	CU_ASSERT_EQUAL(c.read_byte_us, 0);
	CU_ASSERT_EQUAL(c.write_cost, 1);
	CU_ASSERT_EQUAL_FATAL(calib_cases(&c, pages, 1, batches, 2, false, 1), 0);
	for (uint32_t i = 0; i < c.nr_cases; i++)
		c.cases[i].real_us = 100;
	calib_byte_costs(&c);
	CU_ASSERT_EQUAL(c.read_byte_us, 0);
	CU_ASSERT_EQUAL(c.write_cost, 1);
}

/* ---------------------------------------------------------------- overload */

/* An arrival rate the cluster cannot serve stops the run with a line that says so and
 * what to change, instead of a backlog growing until memory runs out. */
static void test_overload_stops(void)
{
	struct run_cfg cfg = { .timing = true, .payload_free = true, .seed = 5, .max_inflight = 64 };
	const char *text = "store: {slot_size_classes: [1MiB], global_segment_size: 64MiB}\n"
			   "node_defaults: {rails: [{device: d, gbps: 1, latency_us: 5}]}\n"
			   "nodes:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.2}\n";
	struct run_result r;
	char err[PC_ERR_MAX];

	/* 100K requests/s of 4 MiB over 1 Gb/s rails: thousands of times too many */
	CU_ASSERT_EQUAL(run_text(&cfg, text, strlen(text),
				 "zipf:keys=1000,s=0.8,pages=4,requests=2000,rate=100000", &r, err,
				 sizeof(err)), -EOVERFLOW);
	printf("\n  %s", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "64 requests in flight"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "rate="));
}

/* Page lookups per owner, counted by the test from the keys on its own ring. */
struct owner_count {
	struct ring *ring;
	uint64_t per[4];
};

static void count_owners(void *arg, uint64_t t_ns, const uint64_t *pages, const int *status,
			 uint32_t n, uint64_t latency_ns)
{
	struct owner_count *oc = arg;

	(void)t_ns;
	(void)status;
	(void)latency_ns;
	for (uint32_t i = 0; i < n; i++)
		oc->per[ring_owner_of(oc->ring, keyhash_of(&pages[i], sizeof(pages[i])))]++;
}

/* In hit-rate mode the run counts every page's owner (as the store call names it, or
 * from the ring for a request that took the batch calls, e.g. before a node knows its
 * peers' layouts): the run's load (max / mean lookups per owner) is exact. */
static void test_owner_load_exact(void)
{
	static const char *const names[4] = { "a", "b", "c", "d" };
	static const uint32_t ids[4] = { 0, 1, 2, 3 };
	const char *text = "store: {slot_size_classes: [4KiB], slot_ways: 4, slot_num_buckets: 64}\n"
			   "nodes:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.2}\n"
			   "  - {name: c, address: 10.0.0.3}\n  - {name: d, address: 10.0.0.4}\n";
	struct pc_topology *t = NULL;
	struct owner_count oc = { 0 };
	struct run_result r;
	char err[PC_ERR_MAX];
	uint64_t max = 0, sum = 0;

	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "t", &t, err, sizeof(err)), 0);
	oc.ring = ring_create(t->store.vnodes);
	CU_ASSERT_EQUAL_FATAL(ring_add_many(oc.ring, ids, names, 4), 0);
	{
		struct run_cfg cfg = { .payload_free = true, .seed = 5, .topo = t,
				       .on_request = count_owners, .on_request_arg = &oc };

		CU_ASSERT_EQUAL_FATAL(wl_parse("zipf:keys=5000,s=0.8,pages=16,requests=2000,rate=1000",
					       &cfg.wl, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(run_sim(&cfg, &r, err, sizeof(err)), 0);
	}
	for (int i = 0; i < 4; i++) {
		sum += oc.per[i];
		max = oc.per[i] > max ? oc.per[i] : max;
	}
	printf("\n  %llu of %llu requests in one call; lookups per owner %llu %llu %llu %llu: max / mean %.6f, the run's %.6f",
	       (unsigned long long)r.one_call, (unsigned long long)r.requests, (unsigned long long)oc.per[0], (unsigned long long)oc.per[1],
	       (unsigned long long)oc.per[2], (unsigned long long)oc.per[3],
	       (double)max * 4 / (double)sum, r.load_max_over_mean);
	CU_ASSERT(r.one_call > r.requests * 9 / 10);
	CU_ASSERT_EQUAL(sum, r.pages);
	CU_ASSERT_DOUBLE_EQUAL(r.load_max_over_mean, (double)max * 4 / (double)sum, 1e-12);
	run_result_free(&r);
	ring_destroy(oc.ring);
	pc_topology_free(t);
}

/* ---------------------------------------------------------------- serial counters */

struct counted {
	bool serial;
	struct pc_metrics m;
	double get_batches, set_batches;	/* the histograms' counts, from the text */
};

/* 5 sets and 5 gets of 64 keys on node a, then its counters. */
static void count_batches(struct pc_store *st, void *arg)
{
	struct counted *c = arg;
	char text[65536];

	c->serial = st->svc.serial;
	CU_ASSERT_EQUAL(through(st, 0, 320, true), 320);
	CU_ASSERT_EQUAL(through(st, 0, 320, false), 320);
	c->m.size = sizeof(c->m);
	pc_store_metrics(st, &c->m);
	CU_ASSERT_FATAL(pc_store_metrics_text(st, text, sizeof(text)) > 0);
	c->get_batches = pc_test_metric(text, "peercache_batch_duration_seconds_count{node=\"a\",op=\"get\"");
	c->set_batches = pc_test_metric(text, "peercache_batch_duration_seconds_count{node=\"a\",op=\"set\"");
}

/* The simulator's env runs every process on one thread (PC_ENV_SERIAL): the stores
 * count with plain adds, and count exactly what they did. An env built before the
 * flags field, or the posix one, is not serial. */
static void test_serial_counters(void)
{
	static struct pc_env_ops old;
	const char *text = "store: {slot_size_classes: [4KiB], global_segment_size: 8MiB}\n"
			   "nodes:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.2}\n";
	struct run_cfg cfg = { .payload_free = true, .seed = 3 };
	struct pc_env old_env = { .ops = &old };
	struct pc_topology *t = NULL;
	struct counted c = { .serial = false };
	char err[PC_ERR_MAX];

	old = sim_env_ops;
	old.size = (uint32_t)offsetof(struct pc_env_ops, flags);
	CU_ASSERT(!pc_env_serial(&old_env));
	CU_ASSERT(!pc_env_serial(pc_env_posix()));
	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "t", &t, err, sizeof(err)), 0);
	cfg.topo = t;
	CU_ASSERT_EQUAL(run_on_node(&cfg, 0, count_batches, &c, err, sizeof(err)), 0);
	CU_ASSERT(c.serial);
	CU_ASSERT_EQUAL(c.m.write_requests, 320);
	CU_ASSERT_EQUAL(c.m.bytes_written, 320 * 4096);
	CU_ASSERT_EQUAL(c.m.read_requests, 320);
	CU_ASSERT_EQUAL(c.m.hits, 320);
	CU_ASSERT_EQUAL(c.m.batches, 10);
	CU_ASSERT_EQUAL(c.set_batches, 5);
	CU_ASSERT_EQUAL(c.get_batches, 5);
	pc_topology_free(t);
}

static CU_TestInfo tests[] = {
	{ "engine: deterministic for a seed", test_determinism },
	{ "latency histogram quantiles within 3%", test_hist },
	{ "FIFO station vs Pollaczek-Khinchine", test_fifo_pk },
	{ "processor sharing vs E[S]/(1-rho)", test_ps_sojourn },
	{ "NVMe at queue depth 1 vs M/D/1", test_nvme_md1 },
	{ "nodes.jitter stretches waits by e^(s max(0, Z))", test_jitter },
	{ "nodes at one address spilling to one directory share one disk", test_shared_disk },
	{ "W-way bucket overflow vs Poisson", test_bucket_overflow },
	{ "Zipf samplers vs the exact distribution", test_zipf },
	{ "workload parameters their fields cannot hold are refused", test_wl_numbers },
	{ "a parameter of another kind of workload is refused", test_wl_foreign_keys },
	{ "slotmap hit rate vs FIFO approximation", test_fifo_hit_rate },
	{ "p2p pool (LRU) hit rate vs Che approximation", test_lru_che },
	{ "infinite-cache prefix hits vs an exact count", test_prefix_exact },
	{ "a trace's arrivals never go back", test_trace_times },
	{ "a trace line with a bad timestamp or hash id is not a request", test_trace_bad_fields },
	{ "a trace's requests 2^31 intervals apart", test_trace_far_apart },
	{ "spill to the NVMe model adds hits", test_spill_adds_hits },
	{ "nvme_util_mean is the mean over the drives", test_nvme_util_per_drive },
	{ "an arrival rate past capacity stops the run", test_overload_stops },
	{ "a lookup and its publishing in one call decide as two batch calls", test_one_call_as_two },
	{ "hit-rate mode: the load per owner counts every page", test_owner_load_exact },
	{ "the simulator's stores count with plain adds, exactly", test_serial_counters },
	{ "nodes.rpc_us: a request handed to a worker takes it, a quick one not", test_rpc_hand_off },
	{ "nodes.rails.write_gbps: a WRITE's bytes at that rate, a READ's at gbps", test_write_rate },
	{ "nodes.rails.store_forward: a transfer's last op's bytes once more", test_store_forward },
	{ "nodes.rails.segment_forward: a segment's bytes once more", test_segment_forward },
	{ "calibration: every size class, or as many as the cases hold", test_default_pages },
	{ "calibration: the rail's rates from the growth of the largest batches", test_byte_costs },
	{ "nodes.wake_us: what wakes a node idle past idle_us waits for it", test_wake },
	{ "nodes.nap_us: a request to a node idle past nap_idle_us, not idle_us, waits for it",
	  test_nap },
	{ "pccalibrate's wake-up fit: two steps where the idle cases step", test_wake_fit },
	{ "a node killed: heartbeats in virtual time take it out", test_kill_detected },
	{ "a run with heartbeats ends without taking nodes out", test_close_no_flaps },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "sim", NULL, NULL, NULL, NULL, tests })
