/*
 * pcbench - drive batch_set / batch_get / batch_exists on a running cluster and
 * compare with references measured in the same run.
 *
 *   pcbench --topology FILE [--node NAME] [--keys N] [--page-size SIZE] [--batch N]
 *           [--iters N] [--ops set,get,exists] [--any-length] [--no-verify]
 *           [--raw-tcp HOST | --no-raw-tcp] [--redis PORT] [--memcached PORT]
 *           [--tries N] [--cpu N] [--server-cpu N] [--prefix STR] [--min-hits PCT]
 *           [--set key=value ...]
 *   pcbench --mode slotmap|p2p|both --topology FILE [--page-size SIZE] [--batch N]
 *           [--keys N] [--iters N] [--zipf S] [--no-verify] [--set key=value ...]
 *
 * Per op it prints pages/s, GB/s, p50/p99 per batch, round trips per batch, bytes
 * read per hit byte and the hit rate; then the references: raw single-connection
 * TCP transfers over the same loopback, as a stream and one batch in flight (and
 * Redis / memcached when given ports), and the store's get throughput as a ratio
 * of each. Exit code 1 when a page read back is not byte-identical to what was
 * written, or fewer gets hit than --min-hits.
 *
 * With --mode it starts a local cluster of its own per measurement (one process per
 * topology node, on the topology's ports) and compares the modes on the same
 * workload, hot-spot (Zipf, --zipf S, 1.1 by default) and uniform: see
 * pcbench_modes.c.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/payload_hash.h"
#include "bench_ref.h"
#include "pcbench_modes.h"
#include "pcbench_page.h"
#include "placement/slot.h"
#include "store.h"
#include "tool/tool_common.h"
#include "tool/tool_help.h"

static const char *const synopsis[] = {
	"--topology FILE [--node NAME] [--keys N] [--page-size SIZE] [--batch N] [--iters N]",
	" [--ops set,get,exists] [--any-length] [--no-verify] [--raw-tcp HOST | --no-raw-tcp]",
	" [--redis PORT] [--memcached PORT] [--tries N] [--cpu N] [--server-cpu N]",
	" [--prefix STR] [--min-hits PCT] [--protocol tcp|rdma|rxe] [--set key=value ...]",
	"--mode slotmap|p2p|both --topology FILE [--page-size SIZE] [--batch N] [--keys N]",
	" [--iters N] [--zipf S] [--no-verify] [--free-ports] [--set key=value ...]",
	NULL,
};

static const struct tool_opt options[] = {
	{ "--topology FILE", NULL, "The cluster's topology. Required." },
	{ "--node NAME", "a client that owns no slots",
	  "Run as this node of the topology (it then serves its own slots)." },
	{ "--keys N", "4096 (--mode: 4x the slots)", "Distinct keys written and read." },
	{ "--page-size SIZE", "the model's page, else 12288", "Bytes per page." },
	{ "--batch N", "64", "Pages per batch call." },
	{ "--iters N", "3", "Passes of set and get over all keys, after one untimed set pass; exists "
			  "runs as many, or more until it makes 512 batches." },
	{ "--ops set,get,exists", "set,get,exists", "Which ops to run, in order." },
	{ "--any-length", "off", "Gets ask for any length up to the buffer, not the exact one." },
	{ "--no-verify", "verify", "Do not compare the bytes read back with those written." },
	{ "--raw-tcp HOST", "127.0.0.1",
	  "Measure a raw single-connection tcp stream to HOST as the reference, and the "
	  "same bytes one batch at a time." },
	{ "--no-raw-tcp", NULL, "Skip the raw tcp reference." },
	{ "--redis PORT", "off", "Also measure a Redis server on 127.0.0.1:PORT." },
	{ "--memcached PORT", "off", "Also measure a memcached server on 127.0.0.1:PORT." },
	{ "--tries N", "2 with --redis or --memcached, else 1",
	  "Interleaved tries of the store's ops and every reference client (store, peers, "
	  "store, peers, ...); each party keeps its best try." },
	{ "--cpu N", "any", "Pin pcbench to CPU N." },
	{ "--server-cpu N", "any", "Pin the raw tcp reference's sender to CPU N." },
	{ "--prefix STR", "bench-PID", "Key prefix, so runs do not read each other's pages." },
	{ "--min-hits PCT", "1",
	  "Fail (exit 1) when fewer than PCT percent of gets hit: a run where nothing hits "
	  "measured nothing." },
	{ "--protocol tcp|rdma|rxe", "the topology's store.protocol", "The fabric." },
	{ "--set key=value", NULL, "Override one topology key; repeatable." },
	{ "--mode slotmap|p2p|both", NULL,
	  "Instead of using a running cluster, start one per measurement (one process per "
	  "topology node) and compare the modes on a hot-spot (Zipf) and a uniform workload." },
	{ "--zipf S", "1.1", "--mode: the hot-spot workload's Zipf exponent." },
	{ "--free-ports", "the topology's ports",
	  "--mode: give every node a port the system picks, next to a cluster already on the "
	  "topology's ports." },
	{ 0 },
};

static const struct tool_example examples[] = {
	{ "pcbench --topology topologies/laptop.yaml --page-size 12KiB --keys 4096",
	  "set, get and exists against the running laptop cluster, with a raw tcp reference" },
	{ "pcbench --mode both --topology topologies/laptop.yaml --page-size 12KiB --iters 5",
	  "slotmap against p2p on clusters of its own (docs/performance.md)" },
	{ 0 },
};

static const struct tool_doc doc = {
	.name = "pcbench",
	.summary = "drive batch_set, batch_get and batch_exists and compare with references",
	.synopsis = synopsis,
	.description =
		"pcbench writes --keys pages, reads them back --iters times and asks whether they "
		"exist, in batches, against a running cluster (pcd processes). Per op it prints "
		"pages/s, GB/s, p50 and p99 per batch, round trips per batch, bytes read per hit "
		"byte and how many succeeded; then the references measured in the same run (a "
		"raw tcp stream and the same bytes one batch in flight, Redis and memcached "
		"when given) and the get throughput as a ratio of each.\n\n"
		"With --mode it starts its own local cluster for every measurement and compares "
		"slotmap with p2p (ci/bench.sh runs both forms; docs/performance.md has the "
		"figures).",
	.opts = options,
	.examples = examples,
	.exit_status = "0 when every page read back was byte-identical and at least --min-hits "
		       "percent of gets hit; 1 otherwise or when the store cannot open; 2 for a bad "
		       "flag or topology.",
	.environment = TOOL_ENV_STORE,
	.see_also = "pcd(1), pcdemo(1); docs/performance.md",
	.needs_args = true,
};

struct bench {
	struct pc_store *s;
	size_t keys, page, batch;
	int iters;
	bool any_length, verify;
	char prefix[64];
	char (*names)[96];
	uint8_t *buf;			/* one batch of pages */
	struct pc_page *pg;
	unsigned long bad;
	unsigned long checked;		/* pages the gets brought back and verify compared */
};

struct result {
	const char *op;
	size_t pages, batches;
	double secs;
	double p50, p99;		/* us per batch */
	struct pc_metrics d;		/* metrics delta */
	size_t ok;
	int first_err;			/* the first page error other than a miss */
};

static void metrics_delta(const struct pc_metrics *a, const struct pc_metrics *b,
			  struct pc_metrics *d)
{
	const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;
	uint64_t *z = (uint64_t *)d;

	for (size_t i = 1; i < sizeof(*d) / 8; i++)	/* past the size field */
		z[i] = y[i] - x[i];
	d->size = sizeof(*d);
}

/* One op over all keys, batch by batch; only the batch calls are timed. A set
 * first runs one untimed pass that puts the keys in place, as every reference does
 * (bench_ref.h): the timed passes then overwrite, the steady state of a cache. */
static void run_op(struct bench *B, const char *op, struct result *r)
{
	size_t nb = (B->keys + B->batch - 1) / B->batch;
	bool set = !strcmp(op, "set");
	int passes = !strcmp(op, "exists") ? ref_exists_passes(B->keys, B->batch, B->iters) : B->iters;
	double *lat = calloc(nb * (size_t)passes, sizeof(double));
	struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) };
	uint8_t *want = malloc(B->page);

	memset(r, 0, sizeof(*r));
	r->op = op;
	for (int it = set ? -1 : 0; it < passes; it++) {
		if (it == 0)
			pc_store_metrics(B->s, &m0);
		for (size_t b = 0; b < nb; b++) {
			size_t n = B->keys - b * B->batch < B->batch ? B->keys - b * B->batch : B->batch;
			double t0, dt;
			int got;

			for (size_t i = 0; i < n; i++) {
				const char *key = B->names[b * B->batch + i];
				struct pc_page *p = &B->pg[i];

				*p = (struct pc_page){ .key = key, .key_len = strlen(key),
						       .data = B->buf + i * B->page };
				if (set) {
					pcbench_fill(p->data, B->page, key);
					p->len = B->page;
				} else if (!strcmp(op, "get")) {
					p->cap = B->page;
					p->len = B->any_length ? 0 : B->page;
				} else {
					p->len = B->page;
				}
			}
			t0 = tool_now();
			got = set ? pc_batch_set(B->s, B->pg, n) :
			      !strcmp(op, "get") ? pc_batch_get(B->s, B->pg, n) :
						   pc_batch_exists(B->s, B->pg, n);
			dt = tool_now() - t0;
			if (it < 0)
				continue;
			lat[r->batches++] = dt * 1e6;
			r->secs += dt;
			r->pages += n;
			r->ok += got > 0 ? (size_t)got : 0;
			for (size_t i = 0; i < n && !r->first_err; i++)
				if (B->pg[i].status && B->pg[i].status != -ENOENT)
					r->first_err = B->pg[i].status;
			if (!strcmp(op, "get") && B->verify && want) {
				for (size_t i = 0; i < n; i++) {
					if (B->pg[i].status)
						continue;
					B->bad += !pcbench_page_ok(B->pg[i].data, B->pg[i].len, B->page,
								   B->pg[i].key, want);
					B->checked++;
				}
			}
		}
	}
	pc_store_metrics(B->s, &m1);
	metrics_delta(&m0, &m1, &r->d);
	r->p50 = ref_percentile(lat, r->batches, 0.5);
	r->p99 = ref_percentile(lat, r->batches, 0.99);
	free(want);
	free(lat);
}

static void print_result(const struct bench *B, const struct result *r)
{
	double bytes = (double)r->ok * (double)B->page;
	bool get = !strcmp(r->op, "get");

	if (r->first_err)
		printf("%-7s first page error: %s\n", r->op, strerror(-r->first_err));
	/* A get's throughput counts the bytes that hit; a set's, the bytes stored (a set
	 * that failed fast moved nothing). */
	if (get)
		bytes = (double)r->d.hit_bytes;
	printf("%-7s %8zu %10.0f %8.3f %9.1f %9.1f %9.2f ", r->op, r->pages, (double)r->pages / r->secs,
	       strcmp(r->op, "exists") ? bytes / r->secs / 1e9 : 0.0, r->p50, r->p99,
	       (double)r->d.round_trips / (double)r->batches);
	if (get)
		printf("%10.3f %7.1f%%\n",
		       r->d.hit_bytes ? (double)r->d.bytes_read / (double)r->d.hit_bytes : 0.0,
		       100.0 * (double)r->ok / (double)r->pages);
	else if (!strcmp(r->op, "exists"))
		printf("%10s %7.1f%%   (%.0f bytes read per key)\n", "-",
		       100.0 * (double)r->ok / (double)r->pages,
		       (double)r->d.bytes_read / (double)r->pages);
	else
		printf("%10s %7.1f%%   (%llu evictions)\n", "-", 100.0 * (double)r->ok / (double)r->pages,
		       (unsigned long long)r->d.evictions);
}

/* The store's figures of one op: the best of its tries. With references, the
 * store and every reference client run in interleaved tries (store, peers,
 * store, peers, ...; --tries) and each keeps its best one, as the ceiling is
 * measured before and after: the machine's drift over a run then decides no
 * ratio, and every party gets the same number of tries. */
struct store_results {
	struct result get, set, exists;
};

static double result_rate(const struct bench *B, const struct result *r)
{
	if (!r->pages || r->secs <= 0)
		return 0;
	if (!strcmp(r->op, "get"))
		return (double)r->d.hit_bytes / r->secs;
	if (!strcmp(r->op, "set"))
		return (double)r->ok * (double)B->page / r->secs;
	return (double)r->pages / r->secs;
}

/* One pass of --ops; each op's result replaces the kept one when it ran faster. */
static void run_store_ops(struct bench *B, const char *ops, struct store_results *keep)
{
	printf("%-7s %8s %10s %8s %9s %9s %9s %10s %8s\n", "op", "pages", "pages/s", "GB/s",
	       "p50_us", "p99_us", "rt/batch", "bytes/hit", "ok");
	for (const char *op = ops; *op;) {
		size_t len = strcspn(op, ",");
		/* static names: a result keeps its op's name past this loop */
		const char *name = len == 3 && !strncmp(op, "set", 3) ? "set" :
				   len == 3 && !strncmp(op, "get", 3) ? "get" :
				   len == 6 && !strncmp(op, "exists", 6) ? "exists" : NULL;
		struct result r, *k;

		if (!name)
			tool_die("pcbench", "--ops: unknown op '%.*s'; use set, get, exists", (int)len, op);
		run_op(B, name, &r);
		print_result(B, &r);
		k = !strcmp(name, "get") ? &keep->get : !strcmp(name, "set") ? &keep->set : &keep->exists;
		if (!k->pages || result_rate(B, &r) > result_rate(B, k))
			*k = r;
		op += len + (op[len] == ',');
	}
}

/* What this process's one-sided ops moved, as the nodes count what they served
 * (their peercache_served_* metrics add up to these when every op succeeded). */
static void print_fabric(const struct bench *B)
{
	struct pc_fabric_stats f;

	pc_fabric_get_stats(B->s->svc.fabric, &f);
	printf("fabric: read_ops=%llu read_bytes=%llu write_ops=%llu write_bytes=%llu cas_ops=%llu op_errors=%llu rpcs=%llu\n",
	       (unsigned long long)f.ops_read, (unsigned long long)f.bytes_read,
	       (unsigned long long)f.ops_write, (unsigned long long)f.bytes_written,
	       (unsigned long long)f.ops_cas, (unsigned long long)f.op_errors,
	       (unsigned long long)f.rpcs);
	/* RDMA fabrics: pages staged through a bounce buffer (0 when the page buffers
	 * are registered) and what each rail moved. */
	printf("fabric: bounce_copies=%llu bounce_bytes=%llu qp_errors=%llu rail_bytes=",
	       (unsigned long long)f.bounce_copies, (unsigned long long)f.bounce_bytes,
	       (unsigned long long)f.qp_errors);
	for (uint32_t r = 0; r < PC_FABRIC_MAX_RAILS; r++)
		printf("%s%llu", r ? "," : "", (unsigned long long)f.rail_bytes[r]);
	printf("\n");
}

static void pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		tool_die("pcbench", "--cpu %d: cannot pin to that CPU", cpu);
}

/*
 * The ceiling: each variant of a raw TCP transfer between the same endpoints, best
 * of its before and after runs (a machine that slows meanwhile shows as a spread),
 * in three shapes: a stream; one batch in flight (ref_round_trips), the sender
 * walking its buffer in order; and one batch in flight sent as the batch's pages
 * from random places of the buffer, as a store's server sends them. The last two
 * add round trips and scattered reads to the stream, so they say what those leave
 * of it; where one of them moves the bytes faster all the same, the stream was no
 * limit, and the ceiling is the fastest of all.
 */
enum { SHAPE_STREAM, SHAPE_BATCHES, SHAPE_PAGES, SHAPE_NR };

static const char *const shape_name[SHAPE_NR] = { "stream", "batches", "pages" };

struct ceiling {
	double gbps[SHAPE_NR][REF_STREAM_NR][2];
	double best[SHAPE_NR];
	enum ref_stream_kind best_kind[SHAPE_NR];
	int top;			/* the shape whose best is the ceiling */
	int err;
};

static double ceiling_gbps(const struct ceiling *c)
{
	return c->best[c->top];
}

static void measure_ceiling(const char *host, const struct bench *b, int server_cpu,
			    struct ceiling *c, int when)
{
	uint64_t total = (uint64_t)b->batch * b->page * 256;
	size_t batch = b->batch * b->page, span = b->keys * b->page;

	total = total < (1ULL << 30) ? 1ULL << 30 : total > (2ULL << 30) ? 2ULL << 30 : total;
	for (int s = 0; s < SHAPE_NR; s++)
		for (int k = 0; k < REF_STREAM_NR; k++) {
			enum ref_stream_kind kind = (enum ref_stream_kind)k;
			double g = s == SHAPE_STREAM ?
					   ref_stream(kind, host, total, batch, span, server_cpu) :
					   ref_round_trips(kind, host, total, batch,
							   s == SHAPE_PAGES ? b->page : 0, span,
							   server_cpu);

			c->gbps[s][k][when] = g;
			if (g < 0)
				c->err = (int)-g;
			if (g > c->best[s]) {
				c->best[s] = g;
				c->best_kind[s] = kind;
			}
			if (c->best[s] > c->best[c->top])
				c->top = s;
		}
}

static void print_ceiling(const char *host, const struct bench *b, const struct ceiling *c)
{
	if (ceiling_gbps(c) <= 0) {
		printf("ceiling: tcp transfers to %s not measured (%s)\n", host, strerror(c->err));
		return;
	}
	for (int s = 0; s < SHAPE_NR; s++)
		for (int k = 0; k < REF_STREAM_NR; k++)
			printf("%-9s %-12s %8.3f GB/s before the ops, %8.3f after\n", shape_name[s],
			       ref_stream_name((enum ref_stream_kind)k), c->gbps[s][k][0],
			       c->gbps[s][k][1]);
	printf("ceiling: %.3f GB/s (%s %s, 1 connection to %s, sent from a %zu-byte buffer)\n",
	       ceiling_gbps(c), ref_stream_name(c->best_kind[c->top]), shape_name[c->top], host,
	       b->keys * b->page);
	printf("of it: the stream %.2f, one %zu-byte batch in flight %.2f, the batch's pages from "
	       "random places %.2f\n", c->best[SHAPE_STREAM] / ceiling_gbps(c), b->batch * b->page,
	       c->best[SHAPE_BATCHES] / ceiling_gbps(c), c->best[SHAPE_PAGES] / ceiling_gbps(c));
}

/* A get rate as a ratio of the ceiling and of one batch of pages in flight. */
static void print_vs_ceiling(const char *who, const char *op, double gbps, const struct ceiling *c)
{
	if (ceiling_gbps(c) > 0 && gbps > 0)
		printf("%s%s / ceiling: %.2f, / one batch of pages in flight: %.2f\n", who, op,
		       gbps / ceiling_gbps(c),
		       c->best[SHAPE_PAGES] > 0 ? gbps / c->best[SHAPE_PAGES] : 0);
}

/* The slots of the size class that holds a page of page bytes, over every node
 * of the topology, and their ways: what a summary's occupancy is of. 0 when no
 * class holds it or the store is not slotmap. */
static uint64_t class_slots(const struct pc_topology *t, size_t page, uint32_t *ways)
{
	*ways = 0;
	if (t->store.mode != PC_MODE_SLOTMAP)
		return 0;
	for (uint32_t c = 0; c < t->store.nr_classes; c++) {
		struct slot_geometry g;

		if (!slot_class_geometry(&g, &t->store, c) && g.page_bytes >= page) {
			*ways = g.ways;
			return g.nr_buckets * g.ways * t->nr_nodes;
		}
	}
	return 0;
}

/* The best of a peer's clients per op. */
struct best {
	double set, get, exists, get_p50;
	double get_hit;			/* the best get client's hits / keys asked for */
	const char *set_by, *get_by, *exists_by;
	bool any;
};

/* Every client of peer at port: a row each, then the best per op so far (best
 * holds the earlier tries'), and each client checked against the obvious one.
 * Returns the values read back wrong. */
static uint64_t run_peer(const char *peer, int port, const struct bench *B, struct best *best)
{
	struct ref_shape sh = { .nkeys = B->keys, .page = B->page, .batch = B->batch,
				.iters = B->iters, .prefix = B->prefix };
	struct ref_result base = { 0 };
	uint64_t bad = 0;

	printf("%-9s %-13s %9s %9s %9s %9s %9s %12s %11s\n", "peer", "client", "set_GB/s", "set_p50",
	       "get_GB/s", "get_p50", "get_p99", "exists_k/s", "get_hits");
	for (const struct ref_client *const *c = ref_clients; *c; c++) {
		struct ref_result r;

		if (strcmp(ref_client_peer(*c), peer))
			continue;
		if (ref_run(*c, "127.0.0.1", port, &sh, &r)) {
			printf("%-9s %-13s not measured (see the line above)\n", peer, ref_client_name(*c));
			continue;
		}
		bad += r.bad;
		printf("%-9s %-13s %9.3f %9.1f %9.3f %9.1f %9.1f %12.0f %5llu/%-5llu\n", peer,
		       ref_client_name(*c), ref_gbps(&r.set), r.set.p50_us, ref_gbps(&r.get),
		       r.get.p50_us, r.get.p99_us, ref_keys_per_s(&r.exists),
		       (unsigned long long)r.get.hits, (unsigned long long)r.get.keys);
		if (ref_client_is_baseline(*c))
			base = r;
		if (ref_gbps(&r.set) > best->set)
			best->set = ref_gbps(&r.set), best->set_by = ref_client_name(*c);
		if (ref_gbps(&r.get) > best->get) {
			best->get = ref_gbps(&r.get), best->get_by = ref_client_name(*c);
			best->get_p50 = r.get.p50_us;
			best->get_hit = r.get.keys ? (double)r.get.hits / (double)r.get.keys : 0;
		}
		if (r.exists.run && ref_keys_per_s(&r.exists) > best->exists)
			best->exists = ref_keys_per_s(&r.exists), best->exists_by = ref_client_name(*c);
		best->any = true;
	}
	if (!best->any)
		return bad;
	printf("best %s so far: set %.3f GB/s (%s), get %.3f GB/s (%s, p50 %.1f us per batch)",
	       peer, best->set, best->set_by, best->get, best->get_by, best->get_p50);
	if (best->exists_by)
		printf(", exists %.0f keys/s (%s)", best->exists, best->exists_by);
	printf("\n");
	/* A reference slower than the obvious client would flatter the store. */
	if (base.get.run && (best->get < ref_gbps(&base.get) || best->set < ref_gbps(&base.set)))
		printf("reference check: FAIL (a pipelined %s client is slower than the naive one)\n",
		       peer);
	return bad;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "topology", required_argument, NULL, 't' }, { "node", required_argument, NULL, 'n' },
		{ "set", required_argument, NULL, 's' }, { "protocol", required_argument, NULL, 'P' },
		{ "keys", required_argument, NULL, 'k' }, { "page-size", required_argument, NULL, 'p' },
		{ "batch", required_argument, NULL, 'b' }, { "iters", required_argument, NULL, 'i' },
		{ "ops", required_argument, NULL, 'o' }, { "any-length", no_argument, NULL, 'a' },
		{ "no-verify", no_argument, NULL, 'V' }, { "raw-tcp", required_argument, NULL, 'r' },
		{ "no-raw-tcp", no_argument, NULL, 'R' }, { "redis", required_argument, NULL, 'd' },
		{ "memcached", required_argument, NULL, 'm' }, { "cpu", required_argument, NULL, 'c' },
		{ "server-cpu", required_argument, NULL, 'C' }, { "prefix", required_argument, NULL, 'x' },
		{ "min-hits", required_argument, NULL, 'H' }, { "help", no_argument, NULL, 'h' },
		{ "mode", required_argument, NULL, 'M' }, { "zipf", required_argument, NULL, 'z' },
		{ "free-ports", no_argument, NULL, 'F' }, { "tries", required_argument, NULL, 'N' },
		{ 0 },
	};
	struct bench B = { .keys = 4096, .batch = 64, .iters = 3, .verify = true };
	const char *path = NULL, *node = NULL, *protocol = NULL, *ops = "set,get,exists";
	const char *raw_host = "127.0.0.1";
	char **sets = calloc((size_t)argc, sizeof(char *)), err[PC_ERR_MAX];
	struct pc_store_opts o = { .size = sizeof(o), .err = err, .errlen = sizeof(err) };
	int c, nsets = 0, cpu = -1, server_cpu = -1, redis = 0, memcached = 0, tries = 0;
	struct store_results sr = { .get = { .pages = 0 } };
	struct best bests[2] = { { .any = false } };
	struct result get_r, set_r, exists_r;
	struct ceiling ceil = { .err = 0 };
	double get_gbps, set_gbps;
	char summary[2048];
	uint64_t slots;
	uint32_t ways;
	struct pc_topology *t;
	double min_hits = 1, zipf_s = 1.1;
	const char *modes = NULL;
	bool keys_given = false, free_ports = false;

	snprintf(B.prefix, sizeof(B.prefix), "bench-%d", getpid());
	tool_std_flags(&doc, opts, argc, argv);
	opterr = 0;	/* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, "t:n:s:P:k:p:b:i:o:aVr:Rd:m:c:C:x:H:hM:z:N:", opts, NULL)) != -1) {
		switch (c) {
		case 't': path = optarg; break;
		case 'n': node = optarg; break;
		case 's': sets[nsets++] = optarg; break;
		case 'P': protocol = optarg; break;
		case 'k': B.keys = tool_uint("pcbench", "--keys", optarg); keys_given = true; break;
		case 'p': B.page = tool_size("pcbench", "--page-size", optarg); break;
		case 'b': B.batch = tool_uint("pcbench", "--batch", optarg); break;
		case 'i': B.iters = (int)tool_uint("pcbench", "--iters", optarg); break;
		case 'o': ops = optarg; break;
		case 'a': B.any_length = true; break;
		case 'V': B.verify = false; break;
		case 'r': raw_host = optarg; break;
		case 'R': raw_host = NULL; break;
		case 'd': redis = (int)tool_uint("pcbench", "--redis", optarg); break;
		case 'm': memcached = (int)tool_uint("pcbench", "--memcached", optarg); break;
		case 'c': cpu = (int)tool_count("pcbench", "--cpu", optarg); break;
		case 'C': server_cpu = (int)tool_count("pcbench", "--server-cpu", optarg); break;
		case 'x': snprintf(B.prefix, sizeof(B.prefix), "%s", optarg); break;
		case 'H':
			min_hits = (double)tool_count("pcbench", "--min-hits", optarg);
			if (min_hits > 100)
				tool_die("pcbench", "--min-hits %s: expected a percentage from 0 to 100", optarg);
			break;
		case 'F': free_ports = true; break;
		case 'N': {
			uint64_t v = tool_uint("pcbench", "--tries", optarg);

			if (v < 1 || v > 100)
				tool_die("pcbench", "--tries %s: give 1 to 100 tries", optarg);
			tries = (int)v;
			break;
		}
		case 'M': modes = optarg; break;
		case 'z':
			zipf_s = strtod(optarg, NULL);
			if (!(zipf_s > 0 && zipf_s < 10))
				tool_die("pcbench", "--zipf %s: give an exponent such as 1.1", optarg);
			break;
		default:
			tool_die("pcbench", "%s: unknown flag or missing value; see --help",
				 argv[optind - 1]);
		}
	}
	if (optind < argc)
		tool_die("pcbench", "unexpected argument '%s'; see --help", argv[optind]);
	t = tool_load_topology("pcbench", path, sets, nsets, protocol);
	free(sets);
	if (!B.page)
		B.page = t->model.present ? t->model.page_bytes : 12288;
	if (B.page > t->store.slot_max_page_bytes)
		tool_die("pcbench", "--page-size %zu: larger than the largest size class (%llu)",
			 B.page, (unsigned long long)t->store.slot_max_page_bytes);
	tool_log_to_stderr("pcbench");
	if (modes) {
		struct pcbench_modes a = { .t = t, .page = B.page, .batch = B.batch, .iters = B.iters,
					   .keys = keys_given ? B.keys : 0, .zipf_s = zipf_s,
					   .verify = B.verify, .seed = 1,
					   .slotmap = !strcmp(modes, "slotmap") || !strcmp(modes, "both"),
					   .p2p = !strcmp(modes, "p2p") || !strcmp(modes, "both") };
		int ret;

		if (!a.slotmap && !a.p2p)
			tool_die("pcbench", "--mode %s: use slotmap, p2p or both", modes);
		if (node)
			tool_die("pcbench", "--mode starts its own cluster: drop --node");
		tool_require_listed("pcbench", path, t);
		if (free_ports)
			tool_free_ports("pcbench", t);
		ret = pcbench_run_modes(&a);
		pc_topology_free(t);
		return ret;
	}
	if (free_ports)
		tool_die("pcbench", "--free-ports is for --mode, which starts its own cluster");
	pin_self(cpu);
	o.topo = t;
	o.node = node;
	if (pc_store_open(&o, &B.s)) {
		fprintf(stderr, "pcbench: %s\n", err);
		return 1;
	}
	B.names = calloc(B.keys, sizeof(*B.names));
	B.buf = pcbench_pages_alloc(B.batch, B.page);
	B.pg = calloc(B.batch, sizeof(*B.pg));
	if (!B.names || !B.buf || !B.pg) {
		fprintf(stderr, "pcbench: out of memory for %zu keys and a batch of %zu pages of %zu bytes; use fewer --keys or a smaller --batch\n",
			B.keys, B.batch, B.page);
		return 1;
	}
	for (size_t i = 0; i < B.keys; i++)
		snprintf(B.names[i], sizeof(B.names[i]), "%s-%zu", B.prefix, i);
	/* Page buffers registered like a serving engine's KV pool: zero copy over RDMA. */
	if (pc_store_register(B.s, B.buf, B.batch * B.page))
		fprintf(stderr, "pcbench: could not register the page buffers; RDMA pages will be staged\n");
	printf("pcbench: topology '%s' (%u nodes, %s), %s, %zu keys x %zu B, batch %zu, %s; placement: pcbench cpu %s, raw-tcp sender cpu %s\n",
	       t->name, t->nr_nodes, t->store.protocol == PC_PROTO_TCP ? "tcp" : "rdma",
	       node ? node : "client", B.keys, B.page, B.batch,
	       B.any_length ? "gets by capacity" : "gets with the expected length",
	       cpu >= 0 ? "pinned" : "any", server_cpu >= 0 ? "pinned" : "any");
	{
		double sum_gbps;
		const char *by = xxh3_payload_impl(&sum_gbps);

		printf("pcbench: page checksums by xxh3 (%s), %.2f GB/s on this CPU\n", by, sum_gbps);
	}
	/* The ceiling before and after the store's ops; the best of them counts. */
	if (raw_host)
		measure_ceiling(raw_host, &B, server_cpu, &ceil, 0);
	if (!tries)
		tries = redis || memcached ? 2 : 1;
	for (int try = 0; try < tries; try++) {
		if (try)
			printf("try %d: the store and the references again (each keeps its best try)\n",
			       try + 1);
		run_store_ops(&B, ops, &sr);
		for (int k = 0; k < 2; k++)
			if (k ? memcached : redis)
				B.bad += run_peer(k ? "memcached" : "redis", k ? memcached : redis, &B,
						  &bests[k]);
	}
	if (raw_host) {
		measure_ceiling(raw_host, &B, server_cpu, &ceil, 1);
		print_ceiling(raw_host, &B, &ceil);
	}
	get_r = sr.get, set_r = sr.set, exists_r = sr.exists;
	get_gbps = result_rate(&B, &get_r) / 1e9;
	set_gbps = result_rate(&B, &set_r) / 1e9;
	if (get_r.pages)
		print_vs_ceiling("", "get", get_gbps, &ceil);
	slots = class_slots(t, B.page, &ways);
	/* One line of every figure, for scripts (ci/bench.sh) */
	snprintf(summary, sizeof(summary), "summary page=%zu keys=%zu batch=%zu get_gbps=%.4f get_p50_us=%.1f set_gbps=%.4f set_p50_us=%.1f exists_kps=%.0f get_hit=%.4f slots=%llu ways=%u ceiling_gbps=%.4f ceiling_by=%s-%s",
		 B.page, B.keys, B.batch, get_gbps, get_r.p50, set_gbps, set_r.p50,
		 result_rate(&B, &exists_r),
		 get_r.pages ? (double)get_r.ok / (double)get_r.pages : 0,
		 (unsigned long long)slots, ways, ceiling_gbps(&ceil),
		 ref_stream_name(ceil.best_kind[ceil.top]), shape_name[ceil.top]);
	for (int sh = 0; sh < SHAPE_NR; sh++) {
		size_t at = strlen(summary);

		snprintf(summary + at, sizeof(summary) - at, " %s_gbps=%.4f %s_by=%s", shape_name[sh],
			 ceil.best[sh], shape_name[sh], ref_stream_name(ceil.best_kind[sh]));
	}
	for (int k = 0; k < 2; k++) {
		const char *peer = k ? "memcached" : "redis";
		struct best best = bests[k];
		size_t at = strlen(summary);

		if (!(k ? memcached : redis))
			continue;
		snprintf(summary + at, sizeof(summary) - at,
			 " %s_get_gbps=%.4f %s_get_by=%s %s_get_p50_us=%.1f %s_get_hit=%.4f %s_set_gbps=%.4f %s_set_by=%s %s_exists_kps=%.0f %s_exists_by=%s",
			 peer, best.get, peer, best.get_by ? best.get_by : "-", peer, best.get_p50,
			 peer, best.get_hit, peer,
			 best.set, peer, best.set_by ? best.set_by : "-", peer, best.exists, peer,
			 best.exists_by ? best.exists_by : "-");
		if (!best.any)
			continue;
		print_vs_ceiling(peer, " best get", best.get, &ceil);
		if (get_r.pages && best.get > 0)
			printf("get / %s: %.2f (p50 %.2f of its)\n", peer, get_gbps / best.get,
			       get_r.p50 / best.get_p50);
		if (set_r.pages && best.set > 0)
			printf("set / %s: %.2f\n", peer, set_gbps / best.set);
		if (exists_r.pages && best.exists > 0)
			printf("exists / %s: %.2f\n", peer, result_rate(&B, &exists_r) / best.exists);
	}
	printf("%s\n", summary);
	if (B.verify && get_r.pages)
		pcbench_print_verify(B.bad, B.checked);
	if (get_r.pages && 100.0 * (double)get_r.ok / (double)get_r.pages < min_hits) {
		printf("hits: FAIL (%.1f%% of gets hit, --min-hits %.0f)\n",
		       100.0 * (double)get_r.ok / (double)get_r.pages, min_hits);
		B.bad++;
	}
	print_fabric(&B);
	pc_store_close(B.s);
	pc_topology_free(t);
	free(B.names);
	free(B.buf);
	free(B.pg);
	return B.bad ? 1 : 0;
}
