/*
 * pccalibrate - fit the simulator's model to a real cluster, and check it on
 * workloads it was not fitted on.
 *
 *   pccalibrate --topology FILE --node NAME --out FILE [--reps N] [--pages SIZES]
 *               [--batches LIST] [--set key=value ...] [--validate SPEC ...]
 *               [--bounds p50=P,p99=Q,tput=T]
 *
 * This process serves node NAME of a running cluster (pcd runs every other node):
 * it times batches of gets and sets on it, fits the model's rail latency, rate,
 * per-op time and copy rate to them (calib.h says how) and writes FILE for pcsim
 * --calibration. Each --validate workload is then replayed on the node and simulated
 * with the fitted model; a markdown table of predicted against measured p50, p99
 * and throughput goes to stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <peercache/peercache.h>

#include "calib/calib.h"
#include "tool/tool_common.h"
#include "tool/tool_help.h"

#define TOOL "pccalibrate"
#define MAX_ARGS 32

static const char *const synopsis[] = {
	"--topology FILE --node NAME --out FILE [--reps N] [--pages SIZES] [--batches LIST]",
	" [--set key=value ...] [--validate SPEC ...] [--bounds p50=P,p99=Q,tput=T]",
	"--topology FILE --node NAME --calibration FILE --validate SPEC ... [--bounds ...]",
	NULL,
};

static const struct tool_opt options[] = {
	{ "--topology FILE", NULL, "The running cluster (docs/configuration.md). Required." },
	{ "--node NAME", NULL,
	  "The node this process serves while it measures; pcd must run every other node and "
	  "none may run this one. Required." },
	{ "--out FILE", NULL,
	  "The calibration file to write (pcsim --calibration FILE). Required unless "
	  "--calibration." },
	{ "--calibration FILE", NULL,
	  "Measure and fit nothing: validate a calibration made before, on this cluster (say, "
	  "with spill configured) and the --validate workloads." },
	{ "--reps N", "200", "Timed batches per benchmark case; the median counts." },
	{ "--pages SIZES", "every size class of store.slot_size_classes, or as many as fit",
	  "Page sizes to benchmark, comma-separated (16KiB,64KiB); each must fit a size class. "
	  "The rail's rates are measured between the smallest and the largest; with one size "
	  "the fit finds them with the other keys, and store_forward and segment_forward "
	  "stay 0. Without it: every class, or where their cases would pass the limit, the "
	  "smallest, the largest and classes evenly between (three with five batch sizes)." },
	{ "--batches LIST", "1,4,16,32,64",
	  "Batch sizes to benchmark, comma-separated, 1 to 128 pages; span the batches (pages x "
	  "page size) the workloads you plan for send." },
	{ "--set key=value", NULL, "Override one topology key, as pcd does; repeatable." },
	{ "--validate SPEC", NULL,
	  "A workload (pcsim(1)'s syntax) to replay on the node and predict with the fitted "
	  "model; repeatable. Keep its requests to a few hundred: it runs for real." },
	{ "--bounds p50=P,p99=Q,tput=T", NULL,
	  "Exit 1 when a validated workload's prediction is off by more than P, Q or T percent "
	  "(p50 and p99 lookup latency, throughput)." },
	{ 0 },
};

static const struct tool_example examples[] = {
	{ "pccalibrate --topology t.yaml --node n0 --out cal.yaml --validate zipf:keys=500,s=0.9,pages=16,requests=300",
	  "fit on a cluster whose n1 and n2 run in pcd, check one Zipf workload" },
	{ "pcsim --topology t.yaml --calibration cal.yaml --workload zipf:pages=16 --out /tmp/p",
	  "plan with the fitted model" },
	{ 0 },
};

static const struct tool_doc doc = {
	.name = TOOL,
	.summary = "fit the simulator's model to a real cluster, and check it on held-back workloads",
	.synopsis = synopsis,
	.description =
		"pccalibrate serves one node of a running cluster and times, on it, batch gets "
		"and sets of each --pages size and --batches size on one peer's pages, and at "
		"the largest batch gets and sets of its own pages and of pages spread over every "
		"node, each case cycling through 32 MiB of pages (and, where the node has an nvme "
		"section, reads and writes of its disk), and a request a peer hands to a worker "
		"thread (a promotion of keys nobody stored). It runs the same benchmark code on "
		"the same node of the simulated cluster: an uncontended batch's simulated time is "
		"affine in the rail's latency, the time per byte, the time per op, the copy time "
		"per byte, the disk's four keys and the hand-off of such a request, so a "
		"simulation at a base point and one with each of them doubled give the "
		"coefficients. The rail's rates are measured, not fitted: nodes.rails.gbps from "
		"how much longer the largest batch of gets takes with the largest page than with "
		"the smallest, write_gbps the same for sets; at a known rate the time is affine "
		"in nodes.rails.store_forward and segment_forward too (a page alone, and a "
		"transfer of one segment, move slower than a batch). A non-negative least "
		"squares fit of the relative errors gives nodes.rails.latency_us, op_us, "
		"store_forward, segment_forward, nodes.memcpy_gbps, the nvme keys and "
		"nodes.rpc_us. Then nodes.jitter, the spread of the "
		"node's waits, is the value at which the simulated cases' 90th percentiles stand "
		"to their medians as the measured ones do; and nodes.nap_us, nap_idle_us, wake_us "
		"and idle_us, from gets of one page after the node and its peer idled 25 us to "
		"1.6 ms: what waking an idle host adds, as two steps, each from the shortest gap "
		"that shows it, as slept (a sleep outlasts what it asks; the simulation sleeps as "
		"long). Pin "
		"this process and each pcd to cores of "
		"their own (taskset) when they share a machine: the model gives every node its "
		"own. The file records the "
		"machine, the date, the commit, the cluster, every case (measured and predicted) "
		"and the fit's error.\n\n"
		"Each --validate workload then runs twice on the node for real (one request "
		"after the other: a batch_get timed, a batch_set of what missed), on keys of its "
		"own, and once in the simulator with the fitted model, requests at the same node "
		"and back to back; a markdown table compares p50, p99 and throughput (pages "
		"looked up per second of the whole replay), and the mean get and set per request "
		"that it comes from, and shows how far the two real replays differ; the fit's "
		"gets and sets of a peer's pages of the first size, measured again after the "
		"replays, say how far the machine moved meanwhile. "
		"docs/simulator.md says what the model does not have.",
	.opts = options,
	.examples = examples,
	.exit_status = "0 when calibrated (and every prediction within --bounds); 1 when a "
		       "prediction is outside them or the cluster failed a benchmark; 2 for a bad "
		       "flag, topology or workload.",
	.environment = TOOL_ENV_STORE,
	.see_also = "pcsim(1), pcd(1); docs/simulator.md",
	.needs_args = true,
};

struct bounds {
	double p50, p99, tput;		/* percent; 0: not checked */
};

static void parse_bounds(const char *s, struct bounds *b)
{
	char *copy = strdup(s), *save = NULL;

	if (!copy)
		tool_die(TOOL, "out of memory");
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		double v;

		if (!eq)
			tool_die(TOOL, "--bounds %s: expected p50=P,p99=Q,tput=T (percent)", s);
		*eq = 0;
		v = strtod(eq + 1, &end);
		if (*end || !(v > 0))
			tool_die(TOOL, "--bounds %s: '%s' is not a positive percentage", s, eq + 1);
		if (!strcmp(tok, "p50"))
			b->p50 = v;
		else if (!strcmp(tok, "p99"))
			b->p99 = v;
		else if (!strcmp(tok, "tput"))
			b->tput = v;
		else
			tool_die(TOOL, "--bounds: unknown '%s'; use p50, p99 or tput", tok);
	}
	free(copy);
}

/* A comma-separated list of sizes or counts; returns how many. */
static uint32_t parse_list(const char *flag, const char *s, bool sizes, uint32_t *out)
{
	char *copy = strdup(s), *save = NULL;
	uint32_t n = 0;

	if (!copy)
		tool_die(TOOL, "out of memory");
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v = sizes ? tool_size(TOOL, flag, tok) : tool_uint(TOOL, flag, tok);

		if (n == MAX_ARGS || !v || v > UINT32_MAX)
			tool_die(TOOL, "%s %s: up to %d values, each above 0", flag, s, MAX_ARGS);
		out[n++] = (uint32_t)v;
	}
	free(copy);
	if (!n)
		tool_die(TOOL, "%s: a comma-separated list", flag);
	return n;
}

static double off(double predicted, double measured)
{
	return measured > 0 ? 100.0 * (predicted / measured - 1) : 0;
}

static bool outside(double err, double bound)
{
	return bound > 0 && fabs(err) > bound;
}

/* Measure on the node, fit, print the cases, write out and set model's keys; 0, or
 * 1 when a benchmark or the fit failed. */
static int calibrate(struct pc_store *st, const struct pc_topology *t, const char *path,
		     const char *node, int self, struct pc_topology *model, const char *out,
		     uint32_t reps, uint32_t *pages, uint32_t npages, const uint32_t *batches,
		     uint32_t nbatches, struct calib *c)
{
	char err[PC_ERR_MAX], gap[48];

	if (!npages)
		npages = calib_default_pages(t->store.size_classes, t->store.nr_classes, nbatches,
					     t->nodes[self].has_nvme, pages);
	for (uint32_t i = 0; i < npages; i++)
		if (pages[i] > t->store.slot_max_page_bytes)
			tool_die(TOOL, "--pages: %u bytes is larger than the largest size class of %s (%llu)",
				 pages[i], path, (unsigned long long)t->store.slot_max_page_bytes);
	switch (calib_cases(c, pages, npages, batches, nbatches, t->nodes[self].has_nvme, reps)) {
	case 0: break;
	case -EINVAL: tool_die(TOOL, "--batches: 1 to %d pages each", CALIB_MAX_BATCH);
	default:
		tool_die(TOOL, "--pages and --batches: at most %d cases (pages x (2 x batches + 4, + 4 with a disk) + %d)",
			 CALIB_MAX_CASES, 2 + CALIB_NR_GAPS);
	}
	fprintf(stderr, "%s: %u cases of %u timed batches on node %s\n", TOOL, c->nr_cases, reps, node);
	if (calib_measure(st, c, err, sizeof(err))) {
		fprintf(stderr, "%s: node %s: %s\n", TOOL, node, err);
		return 1;
	}
	if (calib_fit(model, (uint32_t)self, c, err, sizeof(err))) {
		fprintf(stderr, "%s: fit: %s\n", TOOL, err);
		for (uint32_t i = 0; i < c->nr_cases; i++)	/* what was measured, still */
			fprintf(stderr, "  %s %u KiB x %u (%s): %.1f us\n",
				calib_op_name(c->cases[i].op), c->cases[i].page >> 10,
				c->cases[i].batch, calib_case_pages(&c->cases[i], gap, sizeof(gap)),
				c->cases[i].real_us);
		return 1;
	}
	printf("## Calibration (%s, node %s)\n\n| op | page | batch | pages | measured | model | p90 measured | p90 model |\n|---|---|---|---|---|---|---|---|\n",
	       path, node);
	for (uint32_t i = 0; i < c->nr_cases; i++) {
		const struct calib_case *k = &c->cases[i];

		char page[32] = "-";

		if (k->page)
			snprintf(page, sizeof(page), "%u KiB", k->page >> 10);
		printf("| %s | %s | %u | %s | %.1f us | %.1f us (%+.0f%%) | %.1f us | %.1f us (%+.0f%%) |\n",
		       calib_op_name(k->op), page, k->batch, calib_case_pages(k, gap, sizeof(gap)), k->real_us,
		       k->sim_us, off(k->sim_us, k->real_us), k->real_p90_us, k->sim_p90_us,
		       off(k->sim_p90_us, k->real_p90_us));
	}
	printf("\nFit: latency_us %.2f, gbps %.2f, write_gbps %.2f, op_us %.2f, store_forward %.2f, segment_forward %.2f, memcpy_gbps %.2f, jitter %.2f, rpc_us %.1f, nap_us %.1f after nap_idle_us %.0f, wake_us %.1f after idle_us %.0f",
	       c->fit.latency_us, c->fit.gbps, c->fit.write_gbps, c->fit.op_us, c->fit.store_forward,
	       c->fit.segment_forward, c->fit.memcpy_gbps, c->fit.jitter, c->fit.rpc_us, c->fit.nap_us,
	       c->fit.nap_idle_us, c->fit.wake_us, c->fit.idle_us);
	if (c->disk)
		printf("; nvme latency_us %.1f, read_mbps %.0f, write_mbps %.0f, iops %.0f",
		       c->fit.nvme_latency_us, c->fit.read_mbps, c->fit.write_mbps, c->fit.iops);
	printf("; error rms %.1f%%, max %.1f%%\n", 100 * c->rms_error, 100 * c->max_error);
	if (calib_write(out, c, t, path, err, sizeof(err)))
		tool_die(TOOL, "--out %s", err);
	fprintf(stderr, "%s: wrote %s\n", TOOL, out);
	calib_apply(model, &c->fit, c->disk);
	return 0;
}

/* How far the machine moved between the fit the predictions come from and the
 * replays they are checked on: a line; fails nothing. */
static void drift(struct pc_store *st, const struct calib *c)
{
	struct calib_drift d;
	char err[PC_ERR_MAX];

	if (calib_drift(st, c, &d, err, sizeof(err))) {
		fprintf(stderr, "%s: measuring again after the replays: %s\n", TOOL, err);
		return;
	}
	if (d.n)
		printf("\nDrift: the fit's %u gets and sets of a peer's %u KiB pages, measured again after the replays, took %.2f to %.2f times as long as at the fit (median %.2f).\n",
		       d.n, d.page >> 10, d.lo, d.hi, d.median);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "topology", required_argument, NULL, 't' }, { "node", required_argument, NULL, 'n' },
		{ "out", required_argument, NULL, 'o' }, { "reps", required_argument, NULL, 'r' },
		{ "set", required_argument, NULL, 's' }, { "validate", required_argument, NULL, 'v' },
		{ "bounds", required_argument, NULL, 'b' }, { "pages", required_argument, NULL, 'p' },
		{ "batches", required_argument, NULL, 'B' },
		{ "calibration", required_argument, NULL, 'C' }, { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = NULL, *node = NULL, *out = NULL, *calibration = NULL, *validate[MAX_ARGS];
	char *sets[MAX_ARGS], err[PC_ERR_MAX];
	int nsets = 0, nval = 0, c, self = -1, failed = 0;
	uint32_t reps = 200, pages[MAX_ARGS], npages = 0, nbatches = 5;
	uint32_t batches[MAX_ARGS] = { 1, 4, 16, 32, 64 };
	uint64_t salt;
	static struct calib cal;
	struct bounds bnd = { 0 };
	struct pc_topology *t, *model;
	struct pc_store *st;

	tool_std_flags(&doc, opts, argc, argv);
	/* the idle cases' gaps nearer to what they ask: a sleep's default timer slack
	 * is longer than the shortest of them */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't': path = optarg; break;
		case 'n': node = optarg; break;
		case 'o': out = optarg; break;
		case 'r': {
			uint64_t r = tool_uint(TOOL, "--reps", optarg);

			if (r < 3 || r > 100000)
				tool_die(TOOL, "--reps %s: expected 3 to 100000", optarg);
			reps = (uint32_t)r;
			break;
		}
		case 's':
		case 'v':
			if ((c == 's' ? nsets : nval) == MAX_ARGS)
				tool_die(TOOL, "%s: at most %d", c == 's' ? "--set" : "--validate", MAX_ARGS);
			if (c == 's')
				sets[nsets++] = optarg;
			else
				validate[nval++] = optarg;
			break;
		case 'b': parse_bounds(optarg, &bnd); break;
		case 'C': calibration = optarg; break;
		case 'p': npages = parse_list("--pages", optarg, true, pages); break;
		case 'B': nbatches = parse_list("--batches", optarg, false, batches); break;
		default: tool_die(TOOL, "%s: unknown flag or missing value; see --help", argv[optind - 1]);
		}
	}
	if (optind < argc)
		tool_die(TOOL, "unexpected argument '%s'; see --help", argv[optind]);
	if (!path || !node || (!out == !calibration))
		tool_die(TOOL, "--topology FILE, --node NAME and --out FILE (or --calibration FILE to "
			 "validate one made before) are required; see --help");
	if (calibration && !nval)
		tool_die(TOOL, "--calibration %s: give workloads to validate it on (--validate SPEC)",
			 calibration);
	t = tool_load_topology(TOOL, path, sets, nsets, NULL);
	tool_require_listed(TOOL, path, t);
	for (uint32_t i = 0; i < t->nr_nodes; i++)
		if (!strcmp(t->nodes[i].name, node))
			self = (int)i;
	if (self < 0) {
		char names[512];

		tool_node_names(t, names, sizeof(names));
		tool_die(TOOL, "--node %s: not in %s; pick one of %s", node, path, names);
	}
	if (t->nr_nodes < 2)
		tool_die(TOOL, "%s: one node; calibration needs a peer to read from", path);
	for (int i = 0; i < nval; i++) {	/* every workload checked before anything runs */
		struct wl_spec w;

		if (wl_parse(validate[i], &w, err, sizeof(err)))
			tool_die(TOOL, "--validate %s", err);
	}
	model = pc_topology_dup(t);	/* the simulator's copy, whose model keys the fit sets */
	if (!model)
		tool_die(TOOL, "out of memory");
	tool_log_to_stderr(TOOL);
	{
		struct pc_store_opts o = { .size = sizeof(o), .topo = t, .node = node, .err = err,
					   .errlen = sizeof(err) };

		if (pc_store_open(&o, &st))
			tool_die(TOOL, "%s: node %s: %s", path, node, err);
	}
	pc_log_set_level(PC_LOG_WARN);
	if (calibration) {	/* validate a calibration made before */
		if (calib_read(calibration, model, err, sizeof(err)))
			tool_die(TOOL, "--calibration %s", err);
	} else if (calibrate(st, t, path, node, self, model, out, reps, pages, npages, batches,
			     nbatches, &cal)) {
		pc_store_close(st);
		pc_topology_free(model);
		pc_topology_free(t);
		return 1;
	}
	/* Each run's workloads get keys of their own: pages an earlier run left in the
	 * cluster must not turn into hits. */
	salt = ((uint64_t)getpid() ^ (uint64_t)time(NULL)) % 0x3fff << 48;
	if (nval) {
		printf("\n## Held-back workloads\n\nMeasured: the mean of two replays on the node, whose difference is the run-to-run spread.\n\n"
		       "| workload | requests | p50 measured / predicted | p99 measured / predicted | pages/s measured / predicted | get + set per request, measured / predicted | run-to-run p50, p99, pages/s | hit rate |\n|---|---|---|---|---|---|---|---|\n");
	}
	for (int i = 0; i < nval; i++) {
		struct wl_spec w;
		struct calib_check k;
		double e50, e99, et;

		wl_parse(validate[i], &w, err, sizeof(err));
		if (calib_validate(st, model, (uint32_t)self, &w, salt + ((uint64_t)(i + 1) << 40), &k,
				   err, sizeof(err))) {
			fprintf(stderr, "%s: --validate %s: %s\n", TOOL, validate[i], err);
			failed = 1;
			continue;
		}
		e50 = off(k.sim_p50_us, k.real_p50_us);
		e99 = off(k.sim_p99_us, k.real_p99_us);
		et = off(k.sim_pages_s, k.real_pages_s);
		printf("| `%s` | %llu | %.0f / %.0f us (%+.0f%%) | %.0f / %.0f us (%+.0f%%) | %.0f / %.0f (%+.0f%%) | %.0f + %.0f / %.0f + %.0f us | %.0f%%, %.0f%%, %.0f%% | %.3f / %.3f |\n",
		       k.spec, (unsigned long long)k.requests, k.real_p50_us, k.sim_p50_us, e50,
		       k.real_p99_us, k.sim_p99_us, e99, k.real_pages_s, k.sim_pages_s, et,
		       k.real_get_us, k.real_set_us, k.sim_get_us, k.sim_set_us,
		       100 * k.spread_p50, 100 * k.spread_p99, 100 * k.spread_pages_s, k.real_hit,
		       k.sim_hit);
		if (outside(e50, bnd.p50) || outside(e99, bnd.p99) || outside(et, bnd.tput)) {
			fprintf(stderr, "%s: %s: predicted p50 %+.0f%%, p99 %+.0f%%, throughput %+.0f%% off; bounds %g/%g/%g%%\n",
				TOOL, k.spec, e50, e99, et, bnd.p50, bnd.p99, bnd.tput);
			failed = 1;
		}
	}
	if (!calibration && nval)
		drift(st, &cal);
	pc_store_close(st);
	pc_topology_free(model);
	pc_topology_free(t);
	return failed;
}
