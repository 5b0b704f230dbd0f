/*
 * pcsim - capacity planning on the real core.
 *
 *   pcsim --topology FILE --workload SPEC|TRACE --out DIR
 *         [--set key=value ...] [--sweep key=v1,v2,... ...] [--seeds N]
 *         [--mode timing|hitrate] [--duration SECONDS] [--interval SECONDS]
 *         [--event leave:NODE@SECONDS | kill:NODE@SECONDS | join:NODE@SECONDS ...]
 *         [--heartbeats] [--find "hit>=0.8,p99<=2ms"] [--with-payload] [--calibration FILE]
 *
 * Every configuration (the cartesian product of the sweeps) runs once per seed.
 * DIR gets summary.csv (a row per configuration and seed), timeseries.csv (per
 * interval), latency.csv (latency quantiles, for CDFs), config-K.yaml (each resolved
 * topology), find.txt with --find, and PNG plots rendered by the gnuplot scripts in
 * sim/plots. Pages are not stored (payload-free) unless --with-payload.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include <peercache/peercache.h>

#include "calib/calib.h"
#include "placement/slot.h"
#include "run/run.h"
#include "tool/tool_common.h"
#include "tool/tool_help.h"
#include "workload/trace.h"

#define TOOL "pcsim"

static const char *const synopsis[] = {
	"--topology FILE --workload SPEC|TRACE --out DIR [--force] [--set key=value ...]",
	" [--sweep key=v1,v2,... ...] [--seeds N] [--mode timing|hitrate] [--duration SECONDS]",
	" [--interval SECONDS] [--event leave:NODE@SECONDS | kill:NODE@SECONDS | join:NODE@SECONDS ...]",
	" [--heartbeats] [--find \"hit>=0.8,p99<=2ms\"] [--with-payload] [--calibration FILE]",
	NULL,
};

static const struct tool_opt options[] = {
	{ "--topology FILE", NULL, "The cluster to simulate (docs/configuration.md). Required." },
	{ "--workload SPEC|TRACE", NULL,
	  "What the serving engines ask for: zipf:..., prefix:..., mooncake:FILE or a .jsonl "
	  "Mooncake trace (the description gives the syntax). Required." },
	{ "--out DIR", NULL, "Where the results go; created if missing. Required." },
	{ "--force", "refuse a non-empty DIR", "Write into a DIR that already holds files." },
	{ "--set key=value", NULL, "Override one topology key, as pcd does; repeatable." },
	{ "--calibration FILE", NULL,
	  "Take the model keys (rail latency, rate and per-op time, copy rate) from a file "
	  "pccalibrate(1) wrote on a real cluster; --set still overrides them." },
	{ "--sweep key=v1,v2,...", NULL,
	  "Run every value of key (a list value keeps its brackets, values then split at ';'); "
	  "several sweeps multiply." },
	{ "--seeds N", "1", "Runs per configuration, with seeds 1..N." },
	{ "--mode timing|hitrate", "timing",
	  "timing models NIC rails and NVMe drives as queues (latencies, utilisation); hitrate "
	  "only decides hits and misses, about an order of magnitude faster." },
	{ "--duration SECONDS", "the workload's requests", "Stop after this much simulated time." },
	{ "--interval SECONDS", "1 (or a hundredth of --duration)",
	  "The time step of timeseries.csv." },
	{ "--event leave:NODE@SECONDS", NULL,
	  "A node leaves the ring at that simulated time (join:NODE@SECONDS brings it back); "
	  "kill:NODE@SECONDS crashes it instead: nobody is told, the others' heartbeats "
	  "(store.heartbeat_ms, failure_timeout_ms) take it out in virtual time, and a later "
	  "join:NODE restarts it. Repeatable." },
	{ "--heartbeats", "only with kill events",
	  "Run membership's heartbeats (store.heartbeat_ms) on every node for the whole run, so "
	  "that summary.csv's membership_* columns give their traffic." },
	{ "--find \"hit>=0.8,p99<=2ms\"", NULL,
	  "Name the smallest configuration (by cluster slot memory) whose token hit rate and "
	  "p99, averaged over seeds, meet both targets: find.txt." },
	{ "--with-payload", "payload-free", "Store real page bytes (needs the memory)." },
	{ 0 },
};

static const struct tool_example examples[] = {
	{ "pcsim --topology topologies/rack.yaml --workload prefix:groups=2000,prompts=20,prefix=32,suffix=4,requests=50000,rate=1000,group_s=0.8 --sweep store.global_segment_size=4GiB,8GiB,16GiB,32GiB,64GiB --find hit>=0.8,p99<=5ms --out /tmp/plan",
	  "how much slot memory a 16-node rack needs for a shared-prefix workload "
	  "(docs/simulator.md works through it)" },
	{ "pcsim --topology topologies/rack.yaml --workload zipf:keys=200000 --sweep store.mode=slotmap,p2p --out /tmp/modes",
	  "slotmap against p2p on the same cluster and workload" },
	{ 0 },
};

static const struct tool_doc doc = {
	.name = "pcsim",
	.summary = "capacity planning on the real core, in virtual time",
	.synopsis = synopsis,
	.description =
		"pcsim runs a workload against a topology: the nodes are the library's real "
		"stores (ring, slot geometry, eviction, spill); only the fabric, the clock and the "
		"storage are simulated. Every configuration (the cartesian product of the sweeps) "
		"runs once per seed. Pages are not stored unless --with-payload, so a 512-node "
		"cluster fits in a few hundred MiB.\n\n"
		"Workloads (every parameter optional; defaults in brackets):\n\n"
		"  zipf:keys=N[100000],s=S[1.0],pages=P[1],requests=R[100000],rate=Q[1000]\n"
		"      each request looks up P pages drawn Zipf(S) over N keys\n"
		"  prefix:groups=G[16],prompts=P[64],prefix=K[8],suffix=M[4],group_s=S[0],\n"
		"         requests=R[100000],rate=Q[1000]\n"
		"      a request is a group's K shared prefix pages, then M pages of one of its P\n"
		"      prompts (SGLang's generated-shared-prefix benchmark); group_s>0: Zipf groups\n"
		"  mooncake:FILE[,requests=R][,rate=Q]    or just FILE.jsonl\n"
		"      a Mooncake trace, one JSON object a line: {\"timestamp\": ms, \"input_length\":\n"
		"      tokens, \"output_length\": tokens, \"hash_ids\": [one id per 512 tokens]}\n\n"
		"Arrivals are Poisson at rate Q per second, or a trace's own timestamps when it has "
		"no rate=. prefix and mooncake lookups stop at the first miss (prefix semantics). "
		"A trace line that does not parse is counted and the first three are named with "
		"their line numbers; a trace with no request in it is an error.\n\n"
		"DIR gets summary.csv (a row per configuration and seed), timeseries.csv (per "
		"interval), latency.csv (quantiles), config-K.yaml (configuration K resolved; K "
		"counts from 1 as in every file and line), find.txt with --find, and hitrate.png, "
		"timeseries.png and latency_cdf.png (gnuplot) with a legend entry per swept "
		"value. Progress goes to stderr every 2 s, and a line per configuration naming "
		"its swept values. docs/simulator.md lists every column.",
	.opts = options,
	.examples = examples,
	.exit_status = "0 when every configuration ran; 1 when a run failed (e.g. the cluster "
		       "fell behind the arrival rate) or a trace has no request; 2 for a bad flag, "
		       "workload, topology or --out.",
	.environment = "PC_LOG_LEVEL: the library's log level (pcsim sets warn).",
	.see_also = "pcsimbench(1), pctopo(1); docs/simulator.md",
	.needs_args = true,
};

#define MAX_SWEEPS 8
#define MAX_VALUES 64
#define MAX_CONFIGS (1 << 20)	/* configurations a run sweeps, at most */

struct sweep {
	char key[96];
	char *values[MAX_VALUES];
	int n;
};

struct find {
	bool on;
	double min_hit, max_p99_us;
};

static struct sweep sweeps[MAX_SWEEPS];
static int nsweeps;

static void add_sweep(const char *arg)
{
	const char *eq = strchr(arg, '=');
	struct sweep *sw;
	char *vals, *save, *tok;

	if (!eq || eq == arg)
		tool_die(TOOL, "--sweep %s: expected key=v1,v2,... (e.g. store.global_segment_size=8GiB,16GiB)", arg);
	if (nsweeps == MAX_SWEEPS)
		tool_die(TOOL, "--sweep: at most %d sweeps", MAX_SWEEPS);
	sw = &sweeps[nsweeps++];
	snprintf(sw->key, sizeof(sw->key), "%.*s", (int)(eq - arg), arg);
	vals = strdup(eq + 1);
	/* values are comma-separated; a list value keeps its brackets: [a,b];[c] */
	for (tok = strtok_r(vals, strchr(vals, ';') ? ";" : ",", &save); tok;
	     tok = strtok_r(NULL, strchr(eq + 1, ';') ? ";" : ",", &save)) {
		if (sw->n == MAX_VALUES)
			tool_die(TOOL, "--sweep %s: at most %d values", sw->key, MAX_VALUES);
		sw->values[sw->n++] = tok;
	}
	if (!sw->n)
		tool_die(TOOL, "--sweep %s: no values", arg);
}

static void parse_find(const char *arg, struct find *f)
{
	char buf[128], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", arg);
	f->on = true;
	f->min_hit = 0;
	f->max_p99_us = INFINITY;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		double v;

		if (!strncmp(tok, "hit>=", 5)) {
			f->min_hit = strtod(tok + 5, &end);
			if (*end == '%')
				f->min_hit /= 100, end++;
			/* A rate: "hit>=80" (meant as 80%) could never be met, and
			 * "hit>=" with no number would be met by anything. */
			if (end == tok + 5 || !(f->min_hit >= 0 && f->min_hit <= 1))
				tool_die(TOOL, "--find %s: the hit rate is from 0 to 1, or 0%% to 100%% (e.g. hit>=0.8 or hit>=80%%)",
					 arg);
		} else if (!strncmp(tok, "p99<=", 5)) {
			v = strtod(tok + 5, &end);
			if (end == tok + 5 || !(v > 0) || !isfinite(v))
				tool_die(TOOL, "--find %s: p99 takes a positive number and a unit (e.g. p99<=2ms)",
					 arg);
			if (!strcmp(end, "ms"))
				f->max_p99_us = v * 1000, end += 2;
			else if (!strcmp(end, "us"))
				f->max_p99_us = v, end += 2;
			else if (!strcmp(end, "s"))
				f->max_p99_us = v * 1e6, end += 1;
			else
				tool_die(TOOL, "--find %s: give p99 with a unit: us, ms or s", arg);
		} else {
			tool_die(TOOL, "--find %s: expected hit>=X and/or p99<=Y (e.g. \"hit>=0.8,p99<=2ms\")", arg);
		}
		if (*end)
			tool_die(TOOL, "--find %s: cannot read '%s'", arg, tok);
	}
}

static void parse_event(const char *arg, const struct pc_topology *t, struct run_cfg *cfg)
{
	char name[PC_NAME_MAX];
	double at;
	int node, n = 0;
	bool join = !strncmp(arg, "join:", 5), kill = !strncmp(arg, "kill:", 5);
	size_t skip = join || kill ? 5 : 6;

	if ((!join && !kill && strncmp(arg, "leave:", 6)) ||
	    sscanf(arg + skip, "%63[^@]@%lf%n", name, &at, &n) != 2 || arg[skip + n])
		tool_die(TOOL, "--event %s: expected leave:NODE@SECONDS, kill:NODE@SECONDS or join:NODE@SECONDS", arg);
	/* A time the event's nanoseconds cannot hold (negative, nan, inf, past 2^64 ns)
	 * would convert to no time in particular: the event would never happen. */
	if (!(at >= 0) || !(at * 1e9 < 18446744073709549568.0))
		tool_die(TOOL, "--event %s: expected SECONDS from 0 to 1.8e10 of simulated time", arg);
	node = pc_topology_find_node(t, name);
	if (node < 0)
		tool_die(TOOL, "--event %s: no node named '%s' in the topology", arg, name);
	if (cfg->nr_events == RUN_MAX_EVENTS)
		tool_die(TOOL, "--event: at most %d events", RUN_MAX_EVENTS);
	cfg->events[cfg->nr_events++] = (struct run_event){ .t_ns = (uint64_t)(at * 1e9),
							     .node = (uint32_t)node, .join = join,
							     .kill = kill };
}

static bool tty;

/* Progress of one run on stderr, at most every PROGRESS_S of wall time. */
#define PROGRESS_S 2.0

struct progress {
	char label[256];
	double t0, last;
	bool shown;		/* a tty line waits to be cleared */
};

static void progress(void *arg, double frac, uint64_t requests)
{
	struct progress *p = arg;
	double now = tool_now(), el = now - p->t0;

	if (now - p->last < PROGRESS_S || frac <= 0)
		return;
	p->last = now;
	fprintf(stderr, "%spcsim: %s: %5.1f%%, %llu requests, %.0f requests/s, ETA %.0f s%s",
		tty ? "\r" : "", p->label, frac * 100, (unsigned long long)requests,
		(double)requests / el, el * (1 - frac) / frac, tty ? "   " : "\n");
	p->shown = tty;
}

/* Configuration k's swept values, "key=value ..." (store. dropped); with only
 * (sweeps where only[i]), and words without spaces or quotes, for gnuplot's word(). */
static void config_label(int k, const bool *only, bool words, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0, rest = k; i < nsweeps; rest /= sweeps[i].n, i++) {
		const char *key = sweeps[i].key;

		if (only && !only[i])
			continue;
		if (!strncmp(key, "store.", 6))
			key += 6;
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s=%s", n ? (words ? "," : " ") : "",
					      key, sweeps[i].values[rest % sweeps[i].n]);
	}
	for (char *c = buf; words && *c; c++)
		if (*c == ' ' || *c == '\'' || *c == '"')
			*c = '_';
}

/* The cluster's slot bytes, as pcsim's summary reports them. */
static uint64_t cluster_slot_bytes(const struct pc_topology *t)
{
	uint64_t b = 0;

	for (uint32_t c = 0; c < t->store.nr_classes; c++) {
		struct slot_geometry g;

		if (!slot_class_geometry(&g, &t->store, c))
			b += slot_region_bytes(&g);
	}
	return b * t->nr_nodes;
}

/* Which sweeps change the cluster's slot memory (the x axis of hitrate.png) by more
 * than the rounding of whole buckets (5 %); the others make one line each. */
static void capacity_sweeps(const struct pc_topology *base, bool *cap)
{
	char err[PC_ERR_MAX], assign[1200];

	for (int i = 0; i < nsweeps; i++) {
		uint64_t lo = UINT64_MAX, hi = 0;

		for (int v = 0; v < sweeps[i].n; v++) {
			struct pc_topology *t = pc_topology_dup(base);
			uint64_t b;

			snprintf(assign, sizeof(assign), "%.95s=%.1000s", sweeps[i].key, sweeps[i].values[v]);
			pc_topology_set(t, assign, err, sizeof(err));
			b = cluster_slot_bytes(t);
			pc_topology_free(t);
			lo = b < lo ? b : lo;
			hi = b > hi ? b : hi;
		}
		cap[i] = (double)hi > 1.05 * (double)lo;
	}
}

/* 1-based number of configuration k's line in hitrate.png, and how many lines. */
static int series_of(int k, const bool *cap, int *count)
{
	int s = 0, mult = 1;

	*count = 1;
	for (int i = 0, rest = k; i < nsweeps; rest /= sweeps[i].n, i++) {
		if (cap[i])
			continue;
		s += mult * (rest % sweeps[i].n);
		mult *= sweeps[i].n;
	}
	*count = mult;
	return s + 1;
}

/* An existing DIR with anything in it is an earlier run's, unless --force. */
static void check_out_dir(const char *dir, bool force)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d) {
		if (errno != ENOENT)
			tool_die(TOOL, "--out %s: %s", dir, strerror(errno));
		if (mkdir(dir, 0755))
			tool_die(TOOL, "--out %s: cannot create it: %s", dir, strerror(errno));
		return;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !force)
			tool_die(TOOL, "--out %s: not empty (%s, an earlier run?); pick a new directory or pass --force",
				 dir, e->d_name);
	closedir(d);
}

/* A trace's lines that are not requests are counted and named; none at all is an
 * error (exit 1), before any configuration runs. */
static void check_trace(const char *path)
{
	uint64_t good, bad;
	char why[600], err[PC_ERR_MAX];

	if (trace_check(path, &good, &bad, why, sizeof(why), err, sizeof(err)))
		tool_die(TOOL, "%s", err);
	if (bad)
		fprintf(stderr, "pcsim: %s: %llu of %llu lines are not requests and are skipped (%s%s)\n",
			path, (unsigned long long)bad, (unsigned long long)(good + bad), why,
			bad > 3 ? "; ..." : "");
	if (!good) {
		fprintf(stderr, "pcsim: %s: no request in the trace; each line must be a JSON object with timestamp, input_length and hash_ids (docs/simulator.md)\n",
			path);
		exit(1);
	}
}

static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

static void write_summary_header(FILE *f)
{
	fprintf(f, "config,seed,label,series");
	for (int i = 0; i < nsweeps; i++)
		fprintf(f, ",%s", sweeps[i].key);
	fprintf(f, ",nodes,cluster_slot_bytes,workload,mode,requests,pages,page_hit_rate,token_hit_rate,"
		   "page_hit_host_rate,page_hit_disk_rate,page_miss_rate,p50_us,p90_us,p99_us,p999_us,"
		   "nic_util_mean,nic_util_max,nvme_util_mean,nvme_util_max,evictions_per_s,"
		   "demotions_per_s,promotions_per_s,network_bytes,owned_pages_max_over_mean,"
		   "sim_seconds,wall_seconds,sim_memory_bytes,membership_rpcs_per_node_s,"
		   "membership_bytes_per_node_s\n");
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

static void write_summary_row(FILE *f, int config, uint64_t seed, const char *label, int series,
			      char **values, const struct pc_topology *t,
			      const struct run_cfg *cfg, const struct run_result *r)
{
	double secs = r->sim_s > 0 ? r->sim_s : 1;

	fprintf(f, "%d,%llu,\"%s\",%d", config, (unsigned long long)seed, label, series);
	for (int i = 0; i < nsweeps; i++)
		fprintf(f, ",\"%s\"", values[i]);
	fprintf(f, ",%u,%llu,\"%s\",%s,%llu,%llu,%.6f,%.6f,%.6f,%.6f,%.6f,%.2f,%.2f,%.2f,%.2f,%.4f,%.4f,%.4f,%.4f,%.2f,%.2f,%.2f,%.0f,%.3f,%.3f,%.3f,%llu,%.1f,%.0f\n",
		t->nr_nodes, (unsigned long long)r->slot_bytes, cfg->wl.text,
		cfg->timing ? "timing" : "hitrate", (unsigned long long)r->requests,
		(unsigned long long)r->pages, ratio(r->page_hits, r->pages),
		ratio(r->token_hits, r->tokens), ratio(r->pages_host, r->pages),
		ratio(r->pages_disk, r->pages), ratio(r->pages_miss, r->pages),
		us(hist_quantile(&r->lat, 0.5)), us(hist_quantile(&r->lat, 0.9)),
		us(hist_quantile(&r->lat, 0.99)), us(hist_quantile(&r->lat, 0.999)),
		r->nic_util_mean, r->nic_util_max, r->nvme_util_mean, r->nvme_util_max,
		r->evictions / secs, r->demotions / secs, r->promotions / secs, r->bytes_moved,
		r->load_max_over_mean, r->sim_s, r->wall_s, (unsigned long long)r->mem_bytes,
		r->member_rpcs / secs / t->nr_nodes, r->member_bytes / secs / t->nr_nodes);
	fflush(f);
}

static void write_series(FILE *f, int config, uint64_t seed, const struct run_cfg *cfg,
			 const struct run_result *r)
{
	for (size_t i = 0; i < r->nr_points; i++) {
		const struct run_point *p = &r->series[i];

		fprintf(f, "%d,%llu,%.3f,%llu,%.6f,%.6f,%.2f,%.2f\n", config, (unsigned long long)seed,
			(double)p->k * (double)cfg->interval_ns / 1e9, (unsigned long long)p->requests,
			ratio(p->page_hits, p->pages), ratio(p->token_hits, p->tokens), us(p->p50_ns),
			us(p->p99_ns));
	}
	fflush(f);
}

static void write_latency(FILE *f, int config, uint64_t seed, const struct run_result *r)
{
	for (int i = 0; i <= 100; i++) {
		double q = i < 100 ? i / 100.0 : 0.999;

		fprintf(f, "%d,%llu,%.3f,%.2f\n", config, (unsigned long long)seed, q,
			us(hist_quantile(&r->lat, q)));
	}
	fprintf(f, "%d,%llu,%.4f,%.2f\n", config, (unsigned long long)seed, 0.9999,
		us(hist_quantile(&r->lat, 0.9999)));
}

static FILE *out_file(const char *dir, const char *name)
{
	char path[PC_PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		tool_die(TOOL, "%s: cannot write: %s", path, strerror(errno));
	return f;
}

/* The plots; without timing there are no latencies to draw. labels names each
 * configuration, series each line of hitrate.png (words separated by spaces). */
static void plot(const char *dir, bool timing, const char *labels, const char *series)
{
	static const char *const scripts[] = { "hitrate.gp", "timeseries.gp", "latency_cdf.gp" };
	size_t cap = strlen(labels) + strlen(series) + 2 * PC_PATH_MAX + 256;
	char *cmd = malloc(cap), gp[PC_PATH_MAX];
	int failed = 0;

	if (!cmd)
		tool_die(TOOL, "out of memory");

	if (system("command -v gnuplot >/dev/null 2>&1")) {
		fprintf(stderr, "pcsim: gnuplot is not installed; plots skipped (ci/install-deps.sh installs it)\n");
		free(cmd);
		return;
	}
	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]) - !timing; i++) {
		char rel[64];

		snprintf(rel, sizeof(rel), "plots/%s", scripts[i]);
		if (tool_data_file(rel, false, gp, sizeof(gp))) {
			fprintf(stderr, "pcsim: %s not found under %s's ../share/peercache; plots skipped (reinstall, or run from the build tree)\n",
				rel, TOOL);
			break;
		}
		snprintf(cmd, cap, "gnuplot -e \"dir='%s'; labels='%s'; series='%s'\" '%s' 2>>'%s/plots.log'",
			 dir, labels, series, gp, dir);
		failed += system(cmd) != 0;
	}
	free(cmd);
	if (failed)
		fprintf(stderr, "pcsim: %d plot(s) failed; see %s/plots.log\n", failed, dir);
}

/* --duration and --interval: a positive number of seconds, held in nanoseconds: at
 * least one (less would be 0, no time series at all) and fewer than 2^64 (more
 * would convert to no value in particular). */
static double seconds(const char *flag, const char *v)
{
	char *end;
	double d = strtod(v, &end);

	if (end == v || *end || !(d * 1e9 >= 1) || !(d * 1e9 < 18446744073709549568.0))
		tool_die(TOOL, "%s %s: expected a positive number of seconds from 1e-9 to 1.8e10, e.g. 30 or 0.5",
			 flag, v);
	return d;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "topology", required_argument, NULL, 't' }, { "workload", required_argument, NULL, 'w' },
		{ "out", required_argument, NULL, 'o' }, { "set", required_argument, NULL, 's' },
		{ "sweep", required_argument, NULL, 'S' }, { "seeds", required_argument, NULL, 'n' },
		{ "mode", required_argument, NULL, 'm' }, { "duration", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' }, { "event", required_argument, NULL, 'e' },
		{ "find", required_argument, NULL, 'f' }, { "with-payload", no_argument, NULL, 'P' },
		{ "force", no_argument, NULL, 'F' }, { "heartbeats", no_argument, NULL, 'H' },
		{ "calibration", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	const char *path = NULL, *wl = NULL, *dir = NULL, *calibration = NULL;
	char **sets = calloc((size_t)argc, sizeof(char *)), **events = calloc((size_t)argc, sizeof(char *));
	char err[PC_ERR_MAX], p99s[64], evs[48], *labels, *series_labels;
	struct run_cfg cfg = { .timing = true, .payload_free = true };
	struct progress prog = { 0 };
	struct find fnd = { 0 };
	int c, nsets = 0, nevents = 0, seeds = 1, total = 1, nseries = 1;
	bool force = false, cap[MAX_SWEEPS];
	double duration = 0, interval = -1;
	struct pc_topology *base;
	FILE *sum, *ser, *lat, *ff = NULL;
	double best_bytes = INFINITY;
	int best = -1;

	tool_std_flags(&doc, opts, argc, argv);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "t:w:o:s:S:n:m:d:i:e:f:PHC:h", opts, NULL)) != -1) {
		switch (c) {
		case 't': path = optarg; break;
		case 'w': wl = optarg; break;
		case 'o': dir = optarg; break;
		case 's': sets[nsets++] = optarg; break;
		case 'S': add_sweep(optarg); break;
		case 'n': seeds = (int)tool_uint_max(TOOL, "--seeds", optarg, INT_MAX); break;
		case 'm':
			if (strcmp(optarg, "timing") && strcmp(optarg, "hitrate"))
				tool_die(TOOL, "--mode %s: expected timing or hitrate", optarg);
			cfg.timing = !strcmp(optarg, "timing");
			break;
		case 'd': duration = seconds("--duration", optarg); break;
		case 'i': interval = seconds("--interval", optarg); break;
		case 'e': events[nevents++] = optarg; break;
		case 'f': parse_find(optarg, &fnd); break;
		case 'P': cfg.payload_free = false; break;
		case 'F': force = true; break;
		case 'H': cfg.heartbeats = true; break;
		case 'C': calibration = optarg; break;
		default:
			tool_die(TOOL, "%s: unknown flag or missing value; see --help", argv[optind - 1]);
		}
	}
	if (optind < argc)
		tool_die(TOOL, "unexpected argument '%s'; see --help", argv[optind]);
	if (!path || !wl || !dir)
		tool_die(TOOL, "--topology FILE, --workload SPEC and --out DIR are required; see --help");
	if (wl_parse(wl, &cfg.wl, err, sizeof(err)))
		tool_die(TOOL, "%s", err);
	base = tool_load_topology(TOOL, path, sets, nsets, NULL);
	tool_require_listed(TOOL, path, base);
	if (calibration) {	/* the file's keys, then --set again: the user's word is last */
		if (calib_read(calibration, base, err, sizeof(err)))
			tool_die(TOOL, "--calibration %s", err);
		for (int i = 0; i < nsets; i++)
			pc_topology_set(base, sets[i], err, sizeof(err));
	}
	/* Without timing, how a get fetches bytes cannot change what hits: read whole
	 * buckets (headers side by side without payloads), the cheapest on the CPU. */
	if (!cfg.timing && base->store.slot_read_policy == PC_READ_AUTO &&
	    pc_topology_set(base, "store.slot_read_policy=bucket", err, sizeof(err)))
		tool_die(TOOL, "%s", err);
	for (int i = 0; i < nevents; i++)
		parse_event(events[i], base, &cfg);
	/* Check every sweep value before running anything. */
	for (int i = 0; i < nsweeps; i++) {
		for (int v = 0; v < sweeps[i].n; v++) {
			struct pc_topology *t = pc_topology_dup(base);
			char assign[1200];

			snprintf(assign, sizeof(assign), "%.95s=%.1000s", sweeps[i].key, sweeps[i].values[v]);
			if (pc_topology_set(t, assign, err, sizeof(err)))
				tool_die(TOOL, "--sweep: %s", err);
			pc_topology_free(t);
		}
		/* the product in 64 bits: 8 sweeps of 64 values wrap an int (to no run at all) */
		if ((uint64_t)total * (uint64_t)sweeps[i].n > MAX_CONFIGS)
			tool_die(TOOL, "--sweep: more than %d configurations (the product of the sweeps' "
				 "numbers of values); sweep fewer values, or run the sweeps one by one",
				 MAX_CONFIGS);
		total *= sweeps[i].n;
	}
	if (cfg.wl.kind == WL_TRACE)
		check_trace(cfg.wl.trace);
	check_out_dir(dir, force);
	capacity_sweeps(base, cap);
	labels = calloc((size_t)total, 160);
	series_labels = calloc((size_t)total, 160);
	if (!labels || !series_labels)
		tool_die(TOOL, "out of memory");
	cfg.duration_ns = (uint64_t)(duration * 1e9);
	cfg.progress = progress;
	cfg.progress_arg = &prog;
	tty = isatty(2);
	/* with kill events every node logs what its heartbeats find, stamped with the
	 * wall clock: the timeseries says it in simulated time instead */
	pc_log_set_level(PC_LOG_WARN);
	for (uint32_t e = 0; e < cfg.nr_events; e++)
		if (cfg.events[e].kill)
			pc_log_set_level(PC_LOG_ERROR);
	sum = out_file(dir, "summary.csv");
	ser = out_file(dir, "timeseries.csv");
	lat = out_file(dir, "latency.csv");
	write_summary_header(sum);
	fprintf(ser, "config,seed,t_s,requests,page_hit_rate,token_hit_rate,p50_us,p99_us\n");
	fprintf(lat, "config,seed,quantile,latency_us\n");
	for (int k = 0; k < total; k++) {
		struct pc_topology *t = pc_topology_dup(base);
		char *values[MAX_SWEEPS], name[64], label[160], word[150];
		double hit = 0, p99 = 0;
		uint64_t slot_bytes = 0;
		int series = series_of(k, cap, &nseries);
		FILE *cf;

		for (int i = 0, rest = k; i < nsweeps; i++) {
			char assign[1200];

			values[i] = sweeps[i].values[rest % sweeps[i].n];
			rest /= sweeps[i].n;
			snprintf(assign, sizeof(assign), "%.95s=%.1000s", sweeps[i].key, values[i]);
			pc_topology_set(t, assign, err, sizeof(err));
		}
		config_label(k, NULL, false, label, sizeof(label));
		config_label(k, NULL, true, word, sizeof(word));
		snprintf(labels + strlen(labels), 160, "%s%s", k ? " " : "",
			 word[0] ? word : "base");
		snprintf(name, sizeof(name), "config-%d.yaml", k + 1);
		cf = out_file(dir, name);
		pc_topology_write(t, cf);
		fclose(cf);
		cfg.topo = t;
		for (int sd = 0; sd < seeds; sd++) {
			struct run_result r;

			cfg.seed = 1 + (uint64_t)sd;
			/* the series: --interval, else a hundredth of --duration, else 1 s */
			cfg.interval_ns = interval > 0 ? (uint64_t)(interval * 1e9) :
					  duration > 0 ? (uint64_t)(duration * 1e7) : 1000000000ULL;
			snprintf(prog.label, sizeof(prog.label), "config %d/%d%s%s%s seed %d/%d", k + 1,
				 total, label[0] ? " (" : "", label, label[0] ? ")" : "", sd + 1, seeds);
			prog.t0 = prog.last = tool_now();
			if (run_sim(&cfg, &r, err, sizeof(err))) {
				fprintf(stderr, "%spcsim: %s: %s\n", prog.shown ? "\n" : "", prog.label, err);
				return 1;
			}
			if (prog.shown)
				fprintf(stderr, "\r%*s\r", (int)strlen(prog.label) + 72, "");
			prog.shown = false;
			snprintf(p99s, sizeof(p99s), cfg.timing ? "p99 %.1f us" : "no timing",
				 us(hist_quantile(&r.lat, 0.99)));
			evs[0] = 0;
			if (cfg.timing)
				snprintf(evs, sizeof(evs), ", %.1f events per page",
					 r.pages ? (double)r.events / (double)r.pages : 0.0);
			fprintf(stderr, "pcsim: %s: %llu requests, page hit %.4f, token hit %.4f, %s (%.1f s simulated in %.1f s, %.2f M page lookups/s%s)\n",
				prog.label, (unsigned long long)r.requests,
				ratio(r.page_hits, r.pages), ratio(r.token_hits, r.tokens), p99s,
				r.sim_s, r.wall_s, (double)r.pages / r.run_wall_s / 1e6, evs);
			if (r.member_rpcs > 0 && r.sim_s > 0)
				fprintf(stderr, "pcsim: %s: membership: %.0f RPCs/s and %.1f KB/s per node "
					"(heartbeats, MEMBER, JOIN; requests and answers)\n", prog.label,
					r.member_rpcs / r.sim_s / t->nr_nodes,
					r.member_bytes / r.sim_s / t->nr_nodes / 1e3);
			write_summary_row(sum, k + 1, cfg.seed, label, series, values, t, &cfg, &r);
			write_series(ser, k + 1, cfg.seed, &cfg, &r);
			write_latency(lat, k + 1, cfg.seed, &r);
			hit += ratio(r.token_hits, r.tokens) / seeds;
			p99 += us(hist_quantile(&r.lat, 0.99)) / seeds;
			slot_bytes = r.slot_bytes;
			run_result_free(&r);
		}
		/* the smallest cache that meets the targets, averaged over seeds */
		if (fnd.on && hit >= fnd.min_hit && (!cfg.timing || p99 <= fnd.max_p99_us) &&
		    (double)slot_bytes < best_bytes) {
			best_bytes = (double)slot_bytes;
			best = k;
		}
		pc_topology_free(t);
	}
	/* one name per line of hitrate.png: the values of the sweeps that are not its
	 * x axis, taken from the first configuration of each line */
	for (int sidx = 1, n; sidx <= nseries; sidx++) {
		bool only[MAX_SWEEPS];
		char word[150] = "";

		for (int i = 0; i < nsweeps; i++)
			only[i] = !cap[i];
		for (int k = 0; k < total; k++)
			if (series_of(k, cap, &n) == sidx) {
				config_label(k, only, true, word, sizeof(word));
				break;
			}
		snprintf(series_labels + strlen(series_labels), 160, "%s%s", sidx > 1 ? " " : "",
			 word[0] ? word : "all");
	}
	fclose(sum);
	fclose(ser);
	fclose(lat);
	if (fnd.on) {
		ff = out_file(dir, "find.txt");
		if (best < 0) {
			fprintf(ff, "no configuration meets token hit rate >= %.3f and p99 <= %.0f us\n",
				fnd.min_hit, fnd.max_p99_us);
		} else {
			char label[160];

			config_label(best, NULL, false, label, sizeof(label));
			fprintf(ff, "smallest configuration with token hit rate >= %.3f and p99 <= %.0f us: config %d (%.0f bytes of slots): %s\n",
				fnd.min_hit, fnd.max_p99_us, best + 1, best_bytes, label);
		}
		fclose(ff);
		ff = NULL;
		{
			char p[PC_PATH_MAX + 16], line[1024];
			FILE *rf;

			snprintf(p, sizeof(p), "%s/find.txt", dir);
			rf = fopen(p, "r");
			if (rf && fgets(line, sizeof(line), rf))
				printf("pcsim: %s", line);
			if (rf)
				fclose(rf);
		}
	}
	plot(dir, cfg.timing, labels, series_labels);
	{
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "pcsim: results in %s (summary.csv, timeseries.csv, latency.csv, config-1..%d.yaml, plots); peak memory %.1f MiB\n",
			dir, total, (double)ru.ru_maxrss / 1024.0);
	}
	free(labels);
	free(series_labels);
	pc_topology_free(base);
	free(sets);
	free(events);
	return 0;
}
