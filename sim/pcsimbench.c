/*
 * pcsimbench - the simulator's hit-rate mode against its physical limit.
 *
 *   pcsimbench [--topology FILE] [--workload SPEC] [--set key=value ...] [--runs N]
 *
 * Runs one workload through pcsim's hit-rate mode (the library's own stores, as
 * run.c serves requests: a request's lookup and the publishing of its misses in one
 * store call, slotmap_fill.c, or as a batch_get and a batch_set where that cannot
 * be) and, alternating with it in the same process, through a bare model of the
 * same cache: per node an array of 64-byte slot headers and 64-byte index blocks
 * with the store's geometry, the library's ring and bucket hash, first the tagged
 * way, then a free way, then the oldest, nothing else. The model is what the
 * hardware must do at least (a hash, two cache lines per lookup, a bucket per miss,
 * a request's loads overlapped); the ratio of the two rates says what the store's
 * batch machinery costs on top. Every page's hit or miss must agree between the two
 * (exit code 1 otherwise), which makes this a check of the store's placement and
 * eviction as well.
 *
 * Defaults: topologies/rack.yaml at 16 GiB of slots per node, the shared-prefix
 * workload of docs/simulator.md's worked example, 200 000 requests, 3 runs.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/peercache.h>

#include "base/hostmem.h"
#include "base/keyhash.h"
#include "placement/ring.h"
#include "placement/slot.h"
#include "run/run.h"
#include "tool/tool_common.h"
#include "tool/tool_help.h"
#include "workload/workload.h"

#define TOOL "pcsimbench"
#define MAX_SETS 32

/* ------------------------------------------------------------------ the bare model */

struct bare_slot {			/* laid out as the store's 64-byte header */
	uint64_t seq;
	uint32_t magic, pad;
	struct pc_keyhash key;
	uint64_t stamp;
	uint8_t rest[SLOT_HEADER_BYTES - 40];
};

struct bare {
	uint32_t nn, ways;
	uint64_t nr_buckets, stamp;
	size_t bytes;			/* a node's slots and tags, one mapping as the store's */
	const struct slot_geometry *g;
	struct ring *ring;
	struct bare_slot **slots;	/* per node: nr_buckets x ways */
	uint32_t **tags;		/* per node: nr_buckets x 16 (a 64-byte block each), after
					 * the slots */
};

static int bare_open(struct bare *b, const struct pc_topology *t, const struct slot_geometry *g)
{
	uint32_t *ids = calloc(t->nr_nodes, sizeof(*ids));
	const char **names = calloc(t->nr_nodes, sizeof(*names));
	int ret;

	*b = (struct bare){ .nn = t->nr_nodes, .ways = g->ways, .nr_buckets = g->nr_buckets,
			    .g = g };
	b->bytes = b->nr_buckets * b->ways * sizeof(**b->slots) + b->nr_buckets * 64;
	b->ring = ring_create(t->store.vnodes);
	b->slots = calloc(b->nn, sizeof(*b->slots));
	b->tags = calloc(b->nn, sizeof(*b->tags));
	for (uint32_t i = 0; ids && names && i < b->nn; i++) {
		ids[i] = i;
		names[i] = t->nodes[i].name;
	}
	ret = b->ring && b->slots && b->tags && ids && names ?
	      ring_add_many(b->ring, ids, names, b->nn) : -ENOMEM;
	/* the store's memory as the store maps it (hostmem.h), so that both pay the same
	 * TLB misses */
	for (uint32_t i = 0; !ret && i < b->nn; i++) {
		uint8_t *mem;

		ret = hostmem_map(&mem, b->bytes, false);
		if (ret)
			break;
		b->slots[i] = (struct bare_slot *)mem;
		b->tags[i] = (uint32_t *)(mem + b->nr_buckets * b->ways * sizeof(**b->slots));
	}
	free(ids);
	free(names);
	return ret;
}

static void bare_close(struct bare *b)
{
	for (uint32_t i = 0; b->slots && i < b->nn; i++)
		hostmem_unmap((uint8_t *)b->slots[i], b->bytes);
	free(b->slots);
	free(b->tags);
	ring_destroy(b->ring);
}

struct bare_key {
	struct pc_keyhash h;
	uint32_t node;
	uint64_t bucket;
	uint32_t way;
	bool hit;
};

/* A request as run.c serves one: look every page up, then store the misses (with
 * prefix semantics, every page from the first miss on). hit[] gets the outcomes.
 * Each sweep prefetches what the next one reads (the ring entry, the index block,
 * the tagged header, a missed key's bucket), so that a request's cache misses
 * overlap as the store's do: the model waits on memory no more than it must. */
static void bare_request(struct bare *b, const struct wl_req *r, struct bare_key *k, bool *hit)
{
	uint32_t n = r->npages, miss_from = n;

	for (uint32_t i = 0; i < n; i++) {
		k[i].h = keyhash_of(&r->pages[i], sizeof(r->pages[i]));
		ring_prefetch(b->ring, k[i].h);
	}
	for (uint32_t i = 0; i < n; i++) {
		k[i].node = ring_owner_of(b->ring, k[i].h);
		k[i].bucket = slot_bucket_of(b->g, k[i].h);
		__builtin_prefetch(&b->tags[k[i].node][k[i].bucket * 16]);
	}
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t *tags = &b->tags[k[i].node][k[i].bucket * 16];
		uint32_t tag = slot_tag(k[i].h), w = 0;

		while (w < b->ways && tags[w] != tag)
			w++;
		k[i].way = w;
		if (w < b->ways)
			__builtin_prefetch(&b->slots[k[i].node][k[i].bucket * b->ways + w]);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t w = k[i].way;

		k[i].hit = false;
		if (w < b->ways) {
			const struct bare_slot *s = &b->slots[k[i].node][k[i].bucket * b->ways + w];

			k[i].hit = s->magic == SLOT_MAGIC && keyhash_eq(s->key, k[i].h);
		}
		hit[i] = k[i].hit;
		if (!k[i].hit && miss_from == n)
			miss_from = i;
	}
	for (uint32_t i = r->prefix ? miss_from : 0; i < n; i++) {
		const struct bare_slot *s = &b->slots[k[i].node][k[i].bucket * b->ways];

		if (!r->prefix && k[i].hit)
			continue;
		for (uint32_t x = 0; x < b->ways; x++)
			__builtin_prefetch(&s[x]);
	}
	for (uint32_t i = r->prefix ? miss_from : 0; i < n; i++) {
		struct bare_slot *s = &b->slots[k[i].node][k[i].bucket * b->ways];
		uint32_t *tags = &b->tags[k[i].node][k[i].bucket * 16];
		int empty = -1, oldest = -1, w = -1;

		if (!r->prefix && k[i].hit)
			continue;
		for (uint32_t x = 0; x < b->ways && w < 0; x++) {
			if (s[x].magic != SLOT_MAGIC)
				empty = empty < 0 ? (int)x : empty;
			else if (keyhash_eq(s[x].key, k[i].h))
				w = (int)x;
			else if (oldest < 0 || s[x].stamp < s[oldest].stamp)
				oldest = (int)x;
		}
		w = w >= 0 ? w : empty >= 0 ? empty : oldest;
		s[w] = (struct bare_slot){ .seq = s[w].seq + 2, .magic = SLOT_MAGIC, .key = k[i].h,
					   .stamp = ++b->stamp };
		tags[w] = slot_tag(k[i].h);
	}
}

/* ------------------------------------------------------------------ runs */

struct outcomes {
	bool *hit;
	size_t n, cap;
};

static void record(void *arg, uint64_t t, const uint64_t *pages, const int *status, uint32_t n,
		   uint64_t latency)
{
	struct outcomes *o = arg;

	(void)t;
	(void)pages;
	(void)latency;
	if (o->n + n > o->cap) {
		o->cap = (o->n + n) * 2;
		o->hit = realloc(o->hit, o->cap * sizeof(*o->hit));
		if (!o->hit)
			tool_die(TOOL, "out of memory");
	}
	for (uint32_t i = 0; i < n; i++)
		o->hit[o->n++] = status[i] == 0;
}

/* The workload exactly as run_sim draws it. */
static struct wl_gen *workload_open(const struct run_cfg *cfg)
{
	const struct pc_topology *t = cfg->topo;
	struct wl_gen *gen;
	char err[PC_ERR_MAX];

	if (wl_open(&cfg->wl, cfg->seed ^ 0x776c, t->model.present ? t->model.tokens_per_page : 1,
		    &gen, err, sizeof(err)))
		tool_die(TOOL, "%s", err);
	return gen;
}

/* Room for the outcomes of every page of the workload, touched: neither side's run
 * pays the harness's page faults. */
static void outcomes_init(struct outcomes *o, const struct run_cfg *cfg)
{
	struct wl_gen *gen = workload_open(cfg);
	struct wl_req q;
	size_t n = 0;

	while (wl_next(gen, &q) == 1)
		n += q.npages;
	wl_close(gen);
	o->cap = n ? n : 1;
	o->hit = malloc(o->cap * sizeof(*o->hit));
	if (!o->hit)
		tool_die(TOOL, "out of memory");
	memset(o->hit, 1, o->cap * sizeof(*o->hit));	/* not 0: malloc + memset(0) may
							 * become a calloc that touches nothing */
}

/* The store's run: lookups per second of the run itself, the outcomes in o. */
static double store_run(const struct run_cfg *base, struct outcomes *o, double *token_hit,
			uint64_t *one_call)
{
	struct run_cfg cfg = *base;
	struct run_result r;
	char err[PC_ERR_MAX];
	double rate;

	o->n = 0;
	cfg.on_request = record;
	cfg.on_request_arg = o;
	if (run_sim(&cfg, &r, err, sizeof(err)))
		tool_die(TOOL, "%s", err);
	rate = (double)r.pages / r.run_wall_s;
	*one_call = r.one_call;
	*token_hit = r.tokens ? (double)r.token_hits / (double)r.tokens : 0;
	run_result_free(&r);
	return rate;
}

/* The model's run over the same requests; counts the outcomes that differ from o's. */
static double bare_run(const struct run_cfg *cfg, const struct slot_geometry *g,
		       const struct outcomes *o, size_t *differ, double *token_hit)
{
	const struct pc_topology *t = cfg->topo;
	struct bare b;
	struct wl_gen *gen;
	struct wl_req q;
	struct bare_key *k = NULL;
	bool *hit = NULL;
	uint64_t tokens = 0, token_hits = 0, pages = 0;
	size_t at = 0, cap = 0;
	double t0, secs;

	if (bare_open(&b, t, g))
		tool_die(TOOL, "the bare model: out of memory");
	gen = workload_open(cfg);
	*differ = 0;
	t0 = tool_now();
	while (wl_next(gen, &q) == 1) {
		uint32_t miss_from = q.npages;

		if (q.npages > cap) {
			cap = q.npages * 2;
			free(k);
			free(hit);
			k = malloc(cap * sizeof(*k));
			hit = malloc(cap * sizeof(*hit));
			if (!k || !hit)
				tool_die(TOOL, "out of memory");
		}
		bare_request(&b, &q, k, hit);
		for (uint32_t i = 0; i < q.npages; i++) {
			miss_from = !hit[i] && miss_from == q.npages ? i : miss_from;
			tokens += q.tokens[i];
			token_hits += hit[i] && (!q.prefix || i < miss_from) ? q.tokens[i] : 0;
			*differ += at >= o->n || o->hit[at] != hit[i];
			at++;
		}
		pages += q.npages;
	}
	secs = tool_now() - t0;
	*differ += at != o->n;
	*token_hit = tokens ? (double)token_hits / (double)tokens : 0;
	wl_close(gen);
	free(k);
	free(hit);
	bare_close(&b);
	return (double)pages / secs;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#define DEFAULT_WORKLOAD \
	"prefix:groups=2000,prompts=20,prefix=32,suffix=4,requests=200000,rate=1000,group_s=0.8"

static const char *const synopsis[] = {
	"[--topology FILE] [--workload SPEC] [--set key=value ...] [--runs N]",
	NULL,
};

static const struct tool_opt options[] = {
	{ "--topology FILE", "rack.yaml (found next to the binary or in topologies/)",
	  "The cluster to model (slotmap, one size class, up to 16 ways, no spill)." },
	{ "--workload SPEC", DEFAULT_WORKLOAD,
	  "A generated workload, zipf: or prefix: (pcsim(1) gives the syntax)." },
	{ "--set key=value", "store.global_segment_size=16GiB",
	  "Override one topology key, after the default one; repeatable." },
	{ "--runs N", "3", "Runs of each side, alternated; rates are the best run's." },
	{ 0 },
};

static const struct tool_example examples[] = {
	{ "pcsimbench --runs 5", "rack.yaml at 16 GiB per node, the shared-prefix workload" },
	{ "pcsimbench --runs 5 --workload zipf:keys=200000,s=1.0,pages=32,requests=200000 --set store.global_segment_size=2GiB",
	  "Zipf 1.0 over 200 000 keys at 2 GiB per node" },
	{ 0 },
};

static const struct tool_doc doc = {
	.name = "pcsimbench",
	.summary = "the simulator's hit-rate mode against a bare model of the same cache",
	.synopsis = synopsis,
	.description =
		"pcsimbench runs one workload through pcsim's hit-rate mode (the library's own "
		"stores: a request's lookup and the publishing of its misses in one store call, "
		"or a batch_get and a batch_set where that cannot be) and, alternating with "
		"it in the same process, through a bare model of the same cache: per node an "
		"array of 64-byte slot headers and index blocks with the store's geometry, the "
		"library's ring and bucket hash, nothing else. The model is the least the "
		"hardware must do; the ratio of the two rates says what the store's batch "
		"machinery costs on top. Every page's hit or miss must agree between the two, "
		"which makes this a check of placement and eviction as well.\n\n"
		"With no arguments it prints this usage: give --runs N to run the defaults.",
	.opts = options,
	.examples = examples,
	.exit_status = "0 when every page's outcome agrees; 1 when any differs; 2 for a bad flag, "
		       "workload or topology.",
	.see_also = "pcsim(1); docs/simulator.md",
	.needs_args = true,
};

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "topology", required_argument, NULL, 't' },
		{ "workload", required_argument, NULL, 'w' },
		{ "set", required_argument, NULL, 's' },
		{ "runs", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL, *wl = DEFAULT_WORKLOAD;
	char rack[PC_PATH_MAX];
	char *sets[MAX_SETS + 1] = { "store.global_segment_size=16GiB" }, err[PC_ERR_MAX];
	int nsets = 1, runs = 3, c;
	struct run_cfg cfg = { .seed = 1, .payload_free = true };
	struct slot_geometry g;
	struct pc_topology *t;
	struct outcomes o = { 0 };
	double *store, *bare, *ratio, store_hit = 0, bare_hit = 0;
	size_t differ = 0;
	uint64_t one_call = 0;

	tool_std_flags(&doc, opts, argc, argv);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't': path = optarg; break;
		case 'w': wl = optarg; break;
		case 's':
			if (nsets == MAX_SETS + 1)
				tool_die(TOOL, "--set: at most %d", MAX_SETS);
			sets[nsets++] = optarg;
			break;
		case 'r': {
			uint64_t r = tool_uint(TOOL, "--runs", optarg);

			if (!r || r > 1000)
				tool_die(TOOL, "--runs %s: expected 1 to 1000", optarg);
			runs = (int)r;
			break;
		}
		default: tool_die(TOOL, "%s: unknown flag or missing value; see --help", argv[optind - 1]);
		}
	}
	if (optind < argc)
		tool_die(TOOL, "unexpected argument '%s'; see --help", argv[optind]);
	if (!path) {
		if (tool_data_file("topologies/rack.yaml", true, rack, sizeof(rack)))
			tool_die(TOOL, "no --topology given and rack.yaml not found next to the binary "
				 "(share/peercache/topologies) or in ./topologies; pass --topology FILE");
		path = rack;
	}
	if (wl_parse(wl, &cfg.wl, err, sizeof(err)))
		tool_die(TOOL, "%s", err);
	if (cfg.wl.kind == WL_TRACE)
		tool_die(TOOL, "--workload %s: a generated workload (zipf: or prefix:), not a trace", wl);
	t = tool_load_topology(TOOL, path, sets, nsets, NULL);
	tool_require_listed(TOOL, path, t);
	if (t->store.mode != PC_MODE_SLOTMAP || t->store.nr_classes != 1 ||
	    t->store.slot_spill_ways || t->store.slot_ways > 16)
		tool_die(TOOL, "%s: the bare model covers slotmap with one size class, up to 16 ways and no spill (store.mode, store.slot_size_classes, store.slot_ways, store.slot_spill_ways)",
			 path);
	if (slot_class_geometry(&g, &t->store, 0))
		tool_die(TOOL, "%s: store geometry: no buckets", path);
	cfg.topo = t;
	pc_log_set_level(PC_LOG_WARN);	/* a slot-region line per node and run is noise here */
	store = calloc((size_t)runs, sizeof(double));
	bare = calloc((size_t)runs, sizeof(double));
	ratio = calloc((size_t)runs, sizeof(double));
	if (!store || !bare || !ratio)
		tool_die(TOOL, "out of memory");
	outcomes_init(&o, &cfg);
	printf("%s: '%s' (%s, %u nodes, %llu buckets x %u ways per node), %s, %d runs alternated\n",
	       TOOL, t->name, path, t->nr_nodes, (unsigned long long)g.nr_buckets, g.ways, wl, runs);
	for (int i = 0; i < runs; i++) {
		size_t d;

		store[i] = store_run(&cfg, &o, &store_hit, &one_call);
		bare[i] = bare_run(&cfg, &g, &o, &d, &bare_hit);
		ratio[i] = store[i] / bare[i];
		differ += d;
		printf("  run %d: store %.2f M lookups/s, bare model %.2f M/s, store / bare %.3f\n", i + 1,
		       store[i] / 1e6, bare[i] / 1e6, ratio[i]);
	}
	qsort(store, (size_t)runs, sizeof(double), cmp_double);
	qsort(bare, (size_t)runs, sizeof(double), cmp_double);
	qsort(ratio, (size_t)runs, sizeof(double), cmp_double);
	printf("%s: %zu page lookups a run (%llu requests in one store call); store %.2f M lookups/s (best), bare model %.2f M/s, store / bare %.3f (median); token hit rate %.4f and %.4f, %zu outcomes differ\n",
	       TOOL, o.n, (unsigned long long)one_call, store[runs - 1] / 1e6, bare[runs - 1] / 1e6, ratio[runs / 2], store_hit,
	       bare_hit, differ);
	free(store);
	free(bare);
	free(ratio);
	free(o.hit);
	pc_topology_free(t);
	return differ ? 1 : 0;
}
