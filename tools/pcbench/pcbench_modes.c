/*
 * pcbench_modes.c - pcbench --mode slotmap|p2p|both: the same workload through each
 * mode, on a local cluster pcbench starts for every measurement: one forked process
 * per topology node, each a node store that serves its slots (slotmap) or its
 * published pool and directory shard (p2p) and runs the workload itself, as the
 * serving engines that embed the library do.
 *
 * Slotmap runs twice: with the topology's read policy (auto: index for 64-page
 * batches, two round trips, about the page's bytes) and with bucket reads (one
 * round trip, ways x the page's bytes); the hit rates do not depend on it.
 *
 * Per mode and workload (hot spots: Zipf(s) over the keys; uniform):
 *   speed   every node publishes its share of the keys (a quarter of the capacity
 *           by default, so that both modes hold them all), then every node reads
 *           batches drawn from the workload at once: pages/s and GB/s over the wall
 *           clock, p50/p99 per batch, round trips per get batch, bytes read per
 *           hit byte, hit rate.
 *   2x, 4x  the key space is 2 or 4 times the capacity; every node reads batches
 *           and publishes the pages that missed (as a serving engine stores what it
 *           had to recompute): the hit rate over the second half of the run, when
 *           the caches are full (p2p's LRU eviction vs slotmap's bucket collisions).
 *
 * The capacity is the same memory per node in both modes (global_segment_size
 * split over the size classes: slots in slotmap, pool blocks in p2p).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_ref.h"
#include "pcbench_modes.h"
#include "pcbench_page.h"
#include "placement/slot.h"
#include "tool/tool_common.h"
#include "workload/rng.h"
#include "workload/zipf.h"

enum { SPEED, OVER2, OVER4, NR_PHASES };

/* What one node process does. */
struct job {
	enum pc_mode mode;
	bool bucket_reads;		/* slotmap: store.slot_read_policy=bucket */
	bool uniform;
	int phase;
	uint64_t keys;			/* the key space */
	uint64_t batches;		/* get batches per node */
	uint32_t node;
};

/* What it reports (then nlat batch latencies in us). */
struct node_res {
	int err;			/* the store did not open */
	uint64_t gets, hits, counted, counted_hits, bad;
	uint64_t hit_bytes, bytes_read, round_trips, batches;
	uint64_t nlat;
};

/* One measurement: the nodes' results added up. */
struct agg {
	struct node_res r;
	double wall;			/* the gets, on the wall clock */
	double p50, p99;
};

static double rnd01(void *ctx)
{
	return rng_u01(ctx);
}

/* ------------------------------------------------------------------ pipes */

static bool put_all(int fd, const void *p, size_t n)
{
	for (const char *c = p; n;) {
		ssize_t w = write(fd, c, n);

		if (w <= 0)
			return false;
		c += w;
		n -= (size_t)w;
	}
	return true;
}

static bool get_all(int fd, void *p, size_t n)
{
	for (char *c = p; n;) {
		ssize_t r = read(fd, c, n);

		if (r <= 0)
			return false;
		c += r;
		n -= (size_t)r;
	}
	return true;
}

/* A node process's word to pcbench (which is gone when it cannot be said). */
static void say(int fd, char c)
{
	if (!put_all(fd, &c, 1))
		_exit(3);
}

static char hear(int fd)
{
	char c = 0;

	return get_all(fd, &c, 1) ? c : 0;
}

/* ------------------------------------------------------------------ a node */

struct node {
	const struct pcbench_modes *a;
	const struct job *j;
	struct pc_store *s;
	char (*names)[32];		/* one batch of key names */
	uint8_t *buf, *want;
	struct pc_page *pg, *set;
	struct zipf z;
	struct rng g;
};

static void key_name(const struct job *j, uint64_t id, char *out)
{
	snprintf(out, 32, "mb%d-%llu", j->phase, (unsigned long long)id);
}

/* Publish the pages named names[0..n) from this node. */
static void publish(struct node *N, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		N->set[i] = (struct pc_page){ .key = N->names[i], .key_len = strlen(N->names[i]),
					      .data = N->buf + i * N->a->page, .len = N->a->page };
		pcbench_fill(N->set[i].data, N->a->page, N->names[i]);
	}
	pc_batch_set(N->s, N->set, n);
}

/* One get batch of n keys drawn from the workload; misses are published when
 * refill. Returns the batch's latency in us. */
static double get_batch(struct node *N, size_t n, bool refill, bool counted, struct node_res *r)
{
	const struct job *j = N->j;
	size_t page = N->a->page, nmiss = 0;
	double t0, dt;

	for (size_t i = 0; i < n; i++) {
		uint64_t id = j->uniform ? (uint64_t)(rnd01(&N->g) * (double)j->keys) :
					   zipf_draw(&N->z, rnd01, &N->g) - 1;

		key_name(j, id, N->names[i]);
		N->pg[i] = (struct pc_page){ .key = N->names[i], .key_len = strlen(N->names[i]),
					     .data = N->buf + i * page, .cap = page, .len = page };
	}
	t0 = tool_now();
	pc_batch_get(N->s, N->pg, n);
	dt = (tool_now() - t0) * 1e6;
	for (size_t i = 0; i < n; i++) {
		bool hit = !N->pg[i].status;

		r->gets++;
		r->hits += hit;
		r->counted += counted;
		r->counted_hits += counted && hit;
		if (hit && N->a->verify) {
			r->bad += !pcbench_page_ok(N->pg[i].data, N->pg[i].len, page, N->names[i],
						   N->want);
		}
	}
	if (!refill)
		return dt;
	/* the misses, once each, to be published */
	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		if (!N->pg[i].status)
			continue;
		for (size_t k = 0; k < nmiss && !dup; k++)
			dup = !strcmp(N->names[k], N->names[i]);
		if (!dup)
			memmove(N->names[nmiss++], N->names[i], 32);
	}
	publish(N, nmiss);
	return dt;
}

static void node_main(const struct pcbench_modes *a, const struct job *j, int cmd, int res)
{
	struct pc_topology *t = pc_topology_dup(a->t);
	char err[PC_ERR_MAX];
	struct pc_store_opts o = { .size = sizeof(o), .err = err, .errlen = sizeof(err) };
	struct node N = { .a = a, .j = j };
	struct node_res r = { 0 };
	struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) };
	double *lat = calloc(j->batches ? j->batches : 1, sizeof(*lat));
	size_t B = a->batch;

	pc_log_set_level(PC_LOG_WARN);
	rng_seed(&N.g, a->seed * 1000003 + j->node * 7919 + (uint64_t)j->phase * 104729);
	N.names = calloc(B, sizeof(*N.names));
	N.buf = pcbench_pages_alloc(B, a->page);
	N.want = malloc(a->page);
	N.pg = calloc(B, sizeof(*N.pg));
	N.set = calloc(B, sizeof(*N.set));
	if (!t || !lat || !N.names || !N.buf || !N.want || !N.pg || !N.set) {
		say(res, 'e');
		_exit(1);
	}
	t->store.mode = j->mode;
	if (j->bucket_reads)
		t->store.slot_read_policy = PC_READ_BUCKET;
	o.topo = t;
	o.node = t->nodes[j->node].name;
	if (pc_store_open(&o, &N.s)) {
		fprintf(stderr, "pcbench: node %s: %s\n", o.node, err);
		say(res, 'e');
		_exit(1);
	}
	pc_store_register(N.s, N.buf, B * a->page);
	zipf_init(&N.z, j->keys, a->zipf_s);
	say(res, 'r');
	if (hear(cmd) != 's')	/* every node serves: start */
		_exit(0);
	if (j->phase == SPEED) {
		/* this node's share of the keys, then every node reads */
		for (uint64_t id = j->node, n = 0;; id += t->nr_nodes) {
			if (id < j->keys)
				key_name(j, id, N.names[n++]);
			if (n == B || (id >= j->keys && n)) {
				publish(&N, n);
				n = 0;
			}
			if (id >= j->keys)
				break;
		}
		say(res, 'p');
	}
	/* speed: 'l' (node 0 alone, for latency), then 'g' (every node at once) */
	for (char c = j->phase == SPEED ? hear(cmd) : 'g'; c == 'l' || c == 'g';
	     c = j->phase == SPEED && c == 'l' ? hear(cmd) : 0) {
		memset(&r, 0, sizeof(r));
		pc_store_metrics(N.s, &m0);
		for (uint64_t b = 0; b < j->batches; b++)
			lat[r.nlat++] = get_batch(&N, B, j->phase != SPEED, b >= j->batches / 2, &r);
		pc_store_metrics(N.s, &m1);
		r.hit_bytes = m1.hit_bytes - m0.hit_bytes;
		r.bytes_read = m1.bytes_read - m0.bytes_read;
		r.round_trips = m1.round_trips - m0.round_trips;
		r.batches = j->batches;
		say(res, 'd');
		if (!put_all(res, &r, sizeof(r)) || !put_all(res, lat, r.nlat * sizeof(*lat)))
			_exit(3);
	}
	hear(cmd);	/* stay up (others read this node's pages) until told */
	zipf_fini(&N.z);
	pc_store_close(N.s);
	pc_topology_free(t);
	_exit(0);
}

/* ------------------------------------------------------------------ one measurement */

/* The results of nodes [from, to) after their last go: added up, with the wall time
 * from now to the last result and the percentiles of all their batches. */
static int collect(int (*res)[2], uint32_t from, uint32_t to, uint64_t batches, double *lat,
		   struct agg *out)
{
	double t0 = tool_now();
	size_t nlat = 0;

	memset(out, 0, sizeof(*out));
	for (uint32_t i = from; i < to; i++) {
		struct node_res r;

		if (hear(res[i][0]) != 'd' || !get_all(res[i][0], &r, sizeof(r)) || r.nlat > batches ||
		    !get_all(res[i][0], lat + nlat, r.nlat * sizeof(*lat)))
			return -1;
		nlat += r.nlat;
		out->r.gets += r.gets;
		out->r.hits += r.hits;
		out->r.counted += r.counted;
		out->r.counted_hits += r.counted_hits;
		out->r.bad += r.bad;
		out->r.hit_bytes += r.hit_bytes;
		out->r.bytes_read += r.bytes_read;
		out->r.round_trips += r.round_trips;
		out->r.batches += r.batches;
	}
	out->wall = tool_now() - t0;
	out->p50 = ref_percentile(lat, nlat, 0.5);
	out->p99 = ref_percentile(lat, nlat, 0.99);
	return 0;
}

/* Start a node process per topology node, run job j on all of them, add up. */
static int measure(const struct pcbench_modes *a, struct job j, struct agg *out)
{
	uint32_t nn = a->t->nr_nodes;
	pid_t *pid = calloc(nn, sizeof(*pid));
	int (*cmd)[2] = calloc(nn, sizeof(*cmd)), (*res)[2] = calloc(nn, sizeof(*res)), ret = 0;
	double *lat = calloc(nn * (j.batches ? j.batches : 1), sizeof(*lat));

	memset(out, 0, sizeof(*out));
	fflush(stdout);
	fflush(stderr);
	for (uint32_t i = 0; i < nn; i++) {
		if (pipe(cmd[i]) || pipe(res[i]))
			tool_die("pcbench", "cannot make pipes: %s", strerror(errno));
		j.node = i;
		pid[i] = fork();
		if (pid[i] < 0)
			tool_die("pcbench", "cannot fork a node process: %s", strerror(errno));
		if (pid[i] == 0) {
			for (uint32_t k = 0; k < i; k++) {	/* the other nodes' ends */
				close(cmd[k][1]);
				close(res[k][0]);
			}
			close(cmd[i][1]);
			close(res[i][0]);
			node_main(a, &j, cmd[i][0], res[i][1]);
		}
		close(cmd[i][0]);
		close(res[i][1]);
	}
	for (uint32_t i = 0; i < nn; i++)
		if (hear(res[i][0]) != 'r')
			ret = -1;
	for (uint32_t i = 0; i < nn && !ret; i++)
		ret = put_all(cmd[i][1], "s", 1) ? 0 : -1;
	if (!ret && j.phase == SPEED) {
		for (uint32_t i = 0; i < nn; i++)
			if (hear(res[i][0]) != 'p')
				ret = -1;
		/* node 0 reads alone: the latency without load */
		if (!ret && put_all(cmd[0][1], "l", 1)) {
			struct agg solo;

			ret = collect(res, 0, 1, j.batches, lat, &solo);
			out->p50 = solo.p50;
			out->p99 = solo.p99;
		}
		for (uint32_t i = 0; i < nn && !ret; i++)
			ret = put_all(cmd[i][1], "g", 1) ? 0 : -1;
	}
	if (!ret) {
		struct agg all;

		ret = collect(res, 0, nn, j.batches, lat, &all);
		all.p50 = j.phase == SPEED ? out->p50 : all.p50;
		all.p99 = j.phase == SPEED ? out->p99 : all.p99;
		*out = all;
	}
	for (uint32_t i = 0; i < nn; i++) {
		close(cmd[i][1]);	/* EOF: the node closes its store and exits */
		close(res[i][0]);
	}
	for (uint32_t i = 0; i < nn; i++) {
		int status;

		waitpid(pid[i], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			ret = -1;
	}
	free(pid);
	free(cmd);
	free(res);
	free(lat);
	return ret;
}

/* ------------------------------------------------------------------ the table */

/* Pages of this size the topology's cluster holds in either mode. */
static uint64_t capacity(const struct pc_topology *t, size_t page, uint64_t *per_node)
{
	const struct pc_store_cfg *c = &t->store;

	for (uint32_t k = 0; k < c->nr_classes; k++)
		if (c->size_classes[k] >= page) {
			*per_node = slot_class_blocks(c, k);
			return *per_node * t->nr_nodes;
		}
	return 0;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

/* The table's columns for one row: speed figures, hit rates at 2x and 4x. */
struct row {
	double pps, gbps, p50, p99, rt, bph, hit, hit2, hit4;
	bool hitrates;
};

static struct row row_of(const struct agg *R, bool hitrates)
{
	const struct agg *s = &R[SPEED];

	return (struct row){ .pps = (double)s->r.gets / s->wall,
			     .gbps = (double)s->r.hit_bytes / s->wall / 1e9, .p50 = s->p50, .p99 = s->p99,
			     .rt = (double)s->r.round_trips / (double)s->r.batches,
			     .bph = s->r.hit_bytes ? (double)s->r.bytes_read / (double)s->r.hit_bytes : 0,
			     .hit = pct(s->r.hits, s->r.gets),
			     .hit2 = pct(R[OVER2].r.counted_hits, R[OVER2].r.counted),
			     .hit4 = pct(R[OVER4].r.counted_hits, R[OVER4].r.counted), .hitrates = hitrates };
}

static void print_row(const char *w, const char *name, const struct row *r)
{
	printf("%-10s %-16s %10.0f %8.3f %9.1f %9.1f %7.2f %9.3f %7.1f ", w, name, r->pps, r->gbps, r->p50,
	       r->p99, r->rt, r->bph, r->hit);
	if (r->hitrates)
		printf("%8.1f %8.1f\n", r->hit2, r->hit4);
	else
		printf("%8s %8s\n", "-", "-");
}

/* x / p2p: ratios, and hit-rate differences in points. */
static void print_ratio(const char *w, const char *name, const struct row *x, const struct row *p)
{
	printf("%-10s %-16s %9.2fx %7.2fx %8.2fx %8.2fx %6.2fx %8.2fx %+7.1f ", w, name, x->pps / p->pps,
	       x->gbps / p->gbps, x->p50 / p->p50, x->p99 / p->p99, x->rt / p->rt,
	       p->bph > 0 ? x->bph / p->bph : 0, x->hit - p->hit);
	if (x->hitrates)
		printf("%+8.1f %+8.1f\n", x->hit2 - p->hit2, x->hit4 - p->hit4);
	else
		printf("%8s %8s\n", "-", "-");
}

int pcbench_run_modes(const struct pcbench_modes *a)
{
	/* the rows: slotmap as configured, slotmap with bucket reads, p2p */
	static const char *const policy[] = { "auto", "bucket", "predict", "index" };
	const char *variant[3] = { NULL, "slotmap/bucket", "p2p" };
	char slotmap_name[32], wname[2][24];
	uint64_t per_node, cap = capacity(a->t, a->page, &per_node), bad = 0, checked = 0;
	struct agg R[2][3][NR_PHASES];	/* workload, row, phase */
	bool run[3] = { a->slotmap, a->slotmap && a->t->store.slot_read_policy != PC_READ_BUCKET, a->p2p };
	struct row rows[3];

	if (!cap)
		tool_die("pcbench", "--page-size %zu: larger than the largest size class", a->page);
	snprintf(slotmap_name, sizeof(slotmap_name), "slotmap/%s", policy[a->t->store.slot_read_policy]);
	variant[0] = slotmap_name;
	snprintf(wname[0], sizeof(wname[0]), "zipf-%.2g", a->zipf_s);
	snprintf(wname[1], sizeof(wname[1]), "uniform");
	printf("pcbench --mode: topology '%s', %u node processes over %s, %zu-byte pages, batch %zu; capacity %llu pages (%llu per node) in either mode\n",
	       a->t->name, a->t->nr_nodes, a->t->store.protocol == PC_PROTO_TCP ? "tcp" : "rdma", a->page,
	       a->batch, (unsigned long long)cap, (unsigned long long)per_node);
	printf("speed: %zu keys published, then every node reads %d x that many pages at once; 2x, 4x: keys = 2 or 4 x the capacity, misses published, hit rate over the second half\n",
	       a->keys ? a->keys : (size_t)(cap / 4), a->iters);
	memset(R, 0, sizeof(R));
	for (int w = 0; w < 2; w++)
		for (int v = 0; v < 3; v++)
			/* bucket reads change no hit rate: the speed phase alone */
			for (int ph = 0; ph < (v == 1 ? 1 : NR_PHASES) && run[v]; ph++) {
				struct job j = { .mode = v == 2 ? PC_MODE_P2P : PC_MODE_SLOTMAP,
						 .bucket_reads = v == 1, .uniform = w == 1, .phase = ph };
				uint64_t per;

				j.keys = ph == SPEED ? (a->keys ? a->keys : cap / 4) : cap * (ph == OVER2 ? 2 : 4);
				if (!j.keys)
					j.keys = 1;
				/* speed: iters passes over the keys; 2x, 4x: 3 draws per key */
				per = ph == SPEED ? j.keys * (uint64_t)a->iters : 3 * j.keys;
				j.batches = (per / a->t->nr_nodes + a->batch - 1) / a->batch;
				if (measure(a, j, &R[w][v][ph]))
					tool_die("pcbench", "%s, %s: a node process failed (its error is above)",
						 variant[v], wname[w]);
				bad += R[w][v][ph].r.bad;
				checked += R[w][v][ph].r.hits;	/* verify compares every hit */
			}
	printf("%-10s %-16s %10s %8s %9s %9s %7s %9s %7s %8s %8s\n", "workload", "mode", "pages/s", "GB/s",
	       "p50_us", "p99_us", "rt/get", "bytes/hit", "hit%", "hit%@2x", "hit%@4x");
	for (int w = 0; w < 2; w++) {
		for (int v = 0; v < 3; v++) {
			if (!run[v])
				continue;
			rows[v] = row_of(R[w][v], v != 1);
			print_row(wname[w], variant[v], &rows[v]);
		}
		for (int v = 0; v < 2 && run[2]; v++) {
			char name[40];

			if (!run[v])
				continue;
			snprintf(name, sizeof(name), "%s/p2p", v ? "bucket" : policy[a->t->store.slot_read_policy]);
			print_ratio(wname[w], name, &rows[v], &rows[2]);
		}
	}
	if (a->verify)
		pcbench_print_verify(bad, checked);
	/* the speed phase reads pages that were all published into a quarter of the
	 * memory: nearly every one must come back */
	for (int w = 0; w < 2; w++)
		for (int v = 0; v < 3; v++) {
			const struct agg *sp = &R[w][v][SPEED];

			if (run[v] && pct(sp->r.hits, sp->r.gets) < 90) {
				printf("hits: FAIL (%s, %s: %.1f%% of the gets of published pages hit)\n",
				       variant[v], wname[w], pct(sp->r.hits, sp->r.gets));
				bad++;
			}
		}
	return bad ? 1 : 0;
}
