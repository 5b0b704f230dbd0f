/*
 * pcsim - capacity planning on the real core.
 *
 *   pcsim --topology FILE --workload SPEC|TRACE --out DIR
 *         [--set key=value ...] [--sweep key=v1,v2,... ...] [--seeds N]
 *         [--mode timing|hitrate] [--duration SECONDS] [--interval SECONDS]
 *         [--event leave:NODE@SECONDS | kill:NODE@SECONDS | join:NODE@SECONDS ...]
 *         [--find "hit>=0.8,p99<=2ms"] [--with-payload]
 *
 * Every configuration (the cartesian product of the sweeps) runs once per seed.
 * DIR gets summary.csv (a row per configuration and seed), timeseries.csv (per
 * interval), latency.csv (latency quantiles, for CDFs), config-K.yaml (each resolved
 * topology), find.txt with --find, and PNG plots rendered by the gnuplot scripts in
 * sim/plots. Pages are not stored (payload-free) unless --with-payload.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <peercache/peercache.h>

#include "pc_build.h"
#include "run/run.h"
#include "tool/tool_common.h"

#define TOOL "pcsim"

static const char usage[] =
	"usage: pcsim --topology FILE --workload SPEC|TRACE --out DIR [options]\n"
	"  --set key=value          override a topology field (as pcd)\n"
	"  --sweep key=v1,v2,...    run every value; several sweeps multiply\n"
	"  --seeds N                runs per configuration (default 1)\n"
	"  --mode timing|hitrate    timing (default) models NICs and NVMe; hitrate only counts hits\n"
	"  --duration S             stop after S simulated seconds\n"
	"  --interval S             timeseries interval (default 1)\n"
	"  --event leave:NODE@S     a node leaves (or join:NODE@S rejoins) at S seconds;\n"
	"                           kill:NODE@S crashes it: the others find out by heartbeats\n"
	"                           (store.heartbeat_ms, failure_timeout_ms), in virtual time\n"
	"  --find \"hit>=0.8,p99<=2ms\"  report the smallest configuration that meets both\n"
	"  --with-payload           store real page bytes (default: payload-free)\n"
	"workloads:\n"
	"  zipf:keys=N,s=A,pages=P,requests=R,rate=PER_S\n"
	"  prefix:groups=G,prompts=P,prefix=PAGES,suffix=PAGES,group_s=A,requests=R,rate=PER_S\n"
	"  mooncake:FILE[,requests=R,rate=PER_S]   or a .jsonl trace path\n"
	"DIR gets summary.csv, timeseries.csv, latency.csv, config-K.yaml, find.txt and PNG plots.\n";

#define MAX_SWEEPS 8
#define MAX_VALUES 64

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
		tool_die(TOOL, "--sweep %s: expected key=v1,v2,... (e.g. nodes.host_pool_bytes=8GiB,16GiB)", arg);
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
		} else if (!strncmp(tok, "p99<=", 5)) {
			v = strtod(tok + 5, &end);
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

static void progress(void *arg, double frac, uint64_t requests)
{
	const char *label = arg;

	if (tty)
		fprintf(stderr, "\r%s: %5.1f%% (%llu requests)   ", label, frac * 100,
			(unsigned long long)requests);
}

static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

static void write_summary_header(FILE *f)
{
	fprintf(f, "config,seed");
	for (int i = 0; i < nsweeps; i++)
		fprintf(f, ",%s", sweeps[i].key);
	fprintf(f, ",nodes,cluster_slot_bytes,workload,mode,requests,pages,page_hit_rate,token_hit_rate,"
		   "hit_host,hit_disk,miss,p50_us,p90_us,p99_us,p999_us,nic_util_mean,nic_util_max,"
		   "nvme_util_mean,nvme_util_max,evictions_per_s,demotions_per_s,promotions_per_s,"
		   "bytes_moved,load_max_over_mean,sim_seconds,wall_seconds,slot_memory_bytes\n");
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

static void write_summary_row(FILE *f, int config, uint64_t seed, char **values,
			      const struct pc_topology *t, const struct run_cfg *cfg,
			      const struct run_result *r)
{
	double secs = r->sim_s > 0 ? r->sim_s : 1;

	fprintf(f, "%d,%llu", config, (unsigned long long)seed);
	for (int i = 0; i < nsweeps; i++)
		fprintf(f, ",\"%s\"", values[i]);
	fprintf(f, ",%u,%llu,\"%s\",%s,%llu,%llu,%.6f,%.6f,%.6f,%.6f,%.6f,%.2f,%.2f,%.2f,%.2f,%.4f,%.4f,%.4f,%.4f,%.2f,%.2f,%.2f,%.0f,%.3f,%.3f,%.3f,%llu\n",
		t->nr_nodes, (unsigned long long)r->slot_bytes, cfg->wl.text,
		cfg->timing ? "timing" : "hitrate", (unsigned long long)r->requests,
		(unsigned long long)r->pages, ratio(r->page_hits, r->pages),
		ratio(r->token_hits, r->tokens), ratio(r->pages_host, r->pages),
		ratio(r->pages_disk, r->pages), ratio(r->pages_miss, r->pages),
		us(hist_quantile(&r->lat, 0.5)), us(hist_quantile(&r->lat, 0.9)),
		us(hist_quantile(&r->lat, 0.99)), us(hist_quantile(&r->lat, 0.999)),
		r->nic_util_mean, r->nic_util_max, r->nvme_util_mean, r->nvme_util_max,
		r->evictions / secs, r->demotions / secs, r->promotions / secs, r->bytes_moved,
		r->load_max_over_mean, r->sim_s, r->wall_s, (unsigned long long)r->mem_bytes);
	fflush(f);
}

static void write_series(FILE *f, int config, uint64_t seed, const struct run_cfg *cfg,
			 const struct run_result *r)
{
	for (uint32_t k = 0; k < r->nr_points; k++) {
		const struct run_point *p = &r->series[k];

		if (!p->requests)
			continue;
		fprintf(f, "%d,%llu,%.3f,%llu,%.6f,%.6f,%.2f,%.2f\n", config, (unsigned long long)seed,
			(double)k * (double)cfg->interval_ns / 1e9, (unsigned long long)p->requests,
			ratio(p->page_hits, p->pages), ratio(p->token_hits, p->tokens),
			us(hist_quantile(&p->lat, 0.5)), us(hist_quantile(&p->lat, 0.99)));
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

/* The plots; without timing there are no latencies to draw. */
static void plot(const char *dir, bool timing)
{
	static const char *const scripts[] = { "hitrate.gp", "timeseries.gp", "latency_cdf.gp" };
	char cmd[1024];
	int failed = 0;

	if (system("command -v gnuplot >/dev/null 2>&1")) {
		fprintf(stderr, "pcsim: gnuplot is not installed; plots skipped (ci/install-deps.sh installs it)\n");
		return;
	}
	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]) - !timing; i++) {
		snprintf(cmd, sizeof(cmd), "gnuplot -e \"dir='%s'\" '%s/%s' 2>>'%s/plots.log'", dir,
			 PC_SIM_PLOTS_DIR, scripts[i], dir);
		failed += system(cmd) != 0;
	}
	if (failed)
		fprintf(stderr, "pcsim: %d plot(s) failed; see %s/plots.log\n", failed, dir);
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
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	const char *path = NULL, *wl = NULL, *dir = NULL;
	char **sets = calloc((size_t)argc, sizeof(char *)), **events = calloc((size_t)argc, sizeof(char *));
	char err[PC_ERR_MAX], label[128], p99s[64], evs[48];
	struct run_cfg cfg = { .timing = true, .payload_free = true };
	struct find fnd = { 0 };
	int c, nsets = 0, nevents = 0, seeds = 1, total = 1, idx[MAX_SWEEPS] = { 0 };
	double duration = 0, interval = -1;
	struct pc_topology *base;
	FILE *sum, *ser, *lat, *ff = NULL;
	double best_bytes = INFINITY;
	int best = -1;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "t:w:o:s:S:n:m:d:i:e:f:Ph", opts, NULL)) != -1) {
		switch (c) {
		case 't': path = optarg; break;
		case 'w': wl = optarg; break;
		case 'o': dir = optarg; break;
		case 's': sets[nsets++] = optarg; break;
		case 'S': add_sweep(optarg); break;
		case 'n': seeds = (int)tool_uint(TOOL, "--seeds", optarg); break;
		case 'm':
			if (strcmp(optarg, "timing") && strcmp(optarg, "hitrate"))
				tool_die(TOOL, "--mode %s: expected timing or hitrate", optarg);
			cfg.timing = !strcmp(optarg, "timing");
			break;
		case 'd': duration = atof(optarg); break;
		case 'i': interval = atof(optarg); break;
		case 'e': events[nevents++] = optarg; break;
		case 'f': parse_find(optarg, &fnd); break;
		case 'P': cfg.payload_free = false; break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			tool_die(TOOL, "%s: unknown flag or missing value; see --help", argv[optind - 1]);
		}
	}
	if (!path || !wl || !dir)
		tool_die(TOOL, "--topology FILE, --workload SPEC and --out DIR are required");
	if (wl_parse(wl, &cfg.wl, err, sizeof(err)))
		tool_die(TOOL, "%s", err);
	base = tool_load_topology(TOOL, path, sets, nsets, NULL);
	tool_require_listed(TOOL, path, base);
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
		total *= sweeps[i].n;
	}
	if (mkdir(dir, 0755) && errno != EEXIST)
		tool_die(TOOL, "--out %s: %s", dir, strerror(errno));
	cfg.duration_ns = (uint64_t)(duration * 1e9);
	cfg.progress = progress;
	cfg.progress_arg = label;
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
		char *values[MAX_SWEEPS], name[64];
		double hit = 0, p99 = 0;
		uint64_t slot_bytes = 0;
		FILE *cf;

		for (int i = 0, rest = k; i < nsweeps; i++) {
			char assign[1200];

			idx[i] = rest % sweeps[i].n;
			rest /= sweeps[i].n;
			values[i] = sweeps[i].values[idx[i]];
			snprintf(assign, sizeof(assign), "%.95s=%.1000s", sweeps[i].key, values[i]);
			pc_topology_set(t, assign, err, sizeof(err));
		}
		snprintf(name, sizeof(name), "config-%d.yaml", k);
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
			snprintf(label, sizeof(label), "config %d/%d seed %d/%d", k + 1, total, sd + 1, seeds);
			if (run_sim(&cfg, &r, err, sizeof(err)))
				tool_die(TOOL, "config %d seed %d: %s", k, sd + 1, err);
			if (tty)
				fprintf(stderr, "\r%80s\r", "");
			snprintf(p99s, sizeof(p99s), cfg.timing ? "p99 %.1f us" : "no timing",
				 us(hist_quantile(&r.lat, 0.99)));
			snprintf(evs, sizeof(evs), cfg.timing ? ", %.1f events per page" : "",
				 r.pages ? (double)r.events / (double)r.pages : 0.0);
			fprintf(stderr, "pcsim: config %d/%d seed %d: %llu requests, page hit %.4f, token hit %.4f, %s (%.1f s simulated in %.1f s, %.2f M page lookups/s%s)\n",
				k + 1, total, sd + 1, (unsigned long long)r.requests,
				ratio(r.page_hits, r.pages), ratio(r.token_hits, r.tokens), p99s,
				r.sim_s, r.wall_s, (double)r.pages / r.run_wall_s / 1e6, evs);
			write_summary_row(sum, k, cfg.seed, values, t, &cfg, &r);
			write_series(ser, k, cfg.seed, &cfg, &r);
			write_latency(lat, k, cfg.seed, &r);
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
	fclose(sum);
	fclose(ser);
	fclose(lat);
	if (fnd.on) {
		ff = out_file(dir, "find.txt");
		if (best < 0) {
			fprintf(ff, "no configuration meets token hit rate >= %.3f and p99 <= %.0f us\n",
				fnd.min_hit, fnd.max_p99_us);
		} else {
			fprintf(ff, "smallest configuration with token hit rate >= %.3f and p99 <= %.0f us: config %d (%.0f bytes of slots):",
				fnd.min_hit, fnd.max_p99_us, best, best_bytes);
			for (int i = 0, rest = best; i < nsweeps; i++, rest /= sweeps[i - 1].n)
				fprintf(ff, " %s=%s", sweeps[i].key, sweeps[i].values[rest % sweeps[i].n]);
			fputc('\n', ff);
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
	plot(dir, cfg.timing);
	{
		struct rusage ru;

		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "pcsim: results in %s (summary.csv, timeseries.csv, latency.csv); peak memory %.1f MiB\n",
			dir, (double)ru.ru_maxrss / 1024.0);
	}
	pc_topology_free(base);
	free(sets);
	free(events);
	return 0;
}
