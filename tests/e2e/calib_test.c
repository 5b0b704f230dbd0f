/*
 * calib_test.c - the calibration round trip on a 2-node tcp cluster on loopback, a
 * core for each process where the machine has two (as separate hosts would have):
 * pccalibrate serves n0 (pcd serves n1), fits the simulator's model to batches of
 * 16, 64 and 256 KiB pages (every size class), writes the calibration file, then
 * predicts workloads it was not fitted on (128 KiB pages, other batch sizes and
 * skews, a shared-prefix workload and a Mooncake-format trace), then on a second
 * cluster that spills to disk, a workload three times its slots, within the
 * bounds docs/simulator.md states; pcsim takes the file with --calibration. argv:
 * pcd, pccalibrate, pcsim, and "sanitized" in an ASan build, whose timings say
 * nothing (everything runs, no bound is checked, and measurements that fit no
 * model twice are replaced by fixed keys for the rest). With $PC_CALIB_OUT set,
 * the markdown tables and the calibration file are copied there
 * (ci/calibrate-example.sh puts them in the docs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "testutil.h"

/* The model has no pacing: the clusters send without it, whatever the system's
 * congestion control (docs/simulator.md, "Where it cannot be right"). */
#define CUBIC "tcp_congestion: cubic"
#define STORE "slot_size_classes: [16KiB, 64KiB, 256KiB], slot_ways: 8, global_segment_size: 768MiB, " \
	      CUBIC
/* 32 MiB of 256 KiB slots a node, two ways of every bucket kept free by spilling */
#define STORE_SPILL "slot_size_classes: [256KiB], slot_ways: 8, global_segment_size: 32MiB, " \
		    "slot_spill_ways: 2, " CUBIC
/* 2 x 1 layer x 1 head x 128 x 2 B x 256 tokens: 128 KiB pages, two to a trace block */
#define MODEL "model: {layers: 1, kv_heads: 1, head_dim: 128, tokens_per_page: 256}\n"
/* The bounds docs/simulator.md states for this machine, in percent: p50, p99 and
 * throughput, against a target of 10, 25 and 10; the docs say where throughput is
 * off (the replay's sets take longer than the model's) and how far the real
 * cluster moves from one replay to the next. */
#define BOUNDS "p50=45,p99=50,tput=50"
/* With spill the real promotion path is slower than the model's (the docs say where):
 * these bounds catch a broken model (units, a missing phase), not a weak one. */
#define SPILL_BOUNDS "p50=45,p99=80,tput=100"

static int run(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A core for each process where the machine has two: pccalibrate's node on CPU 0,
 * pcd's on CPU 1, as separate hosts would have them (the model has no shared cores;
 * docs/simulator.md shows what sharing them does). */
static bool pinned(void)
{
	return sysconf(_SC_NPROCESSORS_ONLN) >= 2 && run("command -v taskset >/dev/null") == 0;
}

/* A Mooncake trace: 10 prompt groups sharing 4 blocks, each request 1 to 3 blocks
 * of its own after them; a thousand requests, enough for a steady p99. */
static void write_trace(const char *path)
{
	FILE *f = fopen(path, "w");
	unsigned next = 1000, seed = 7;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	for (int r = 0; r < 1000; r++) {
		int g = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 10;
		int own = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 3;

		fprintf(f, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 20, \"hash_ids\": [",
			r * 20, (4 + own) * 512);
		for (int b = 0; b < 4; b++)
			fprintf(f, "%d, ", g * 4 + b);
		for (int b = 0; b < own; b++)
			fprintf(f, "%u%s", next++, b + 1 < own ? ", " : "]}\n");
	}
	fclose(f);
}

/* The number after the first line of path that starts (past blanks) with key; -1. */
static double yaml_number(const char *path, const char *key)
{
	char line[512];
	double v = -1;
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f)) {
		const char *p = line + strspn(line, " ");

		if (!strncmp(p, key, strlen(key))) {
			v = strtod(p + strlen(key), NULL);
			break;
		}
	}
	if (f)
		fclose(f);
	return v;
}

static void show(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");

	while (f && fgets(line, sizeof(line), f))
		printf("  %s", line);
	if (f)
		fclose(f);
}

/*
 * Run a pccalibrate command whose tables go to T/name.md and whose messages go to
 * T/name.err, and show both. A run whose predictions miss the bounds (exit 1 with
 * the "; bounds" line) runs once more: this machine's speed can move by tens of
 * percent between the measurements a prediction is made from and the replays it is
 * checked on, seconds later, and that is not the model's error. So does a run whose
 * measurements fit no model (an ASan build's timings are mostly its own checks, and
 * can leave no rate to fit). A model that is wrong misses twice. Returns the last
 * exit code.
 */
static int run_calibration(const char *cmd, const char *T, const char *name)
{
	char md[600], errf[600], grep[700];
	int ret = 1;

	snprintf(md, sizeof(md), "%s/%s.md", T, name);
	snprintf(errf, sizeof(errf), "%s/%s.err", T, name);
	snprintf(grep, sizeof(grep), "grep -qE '; bounds |fit no model' %s", errf);
	for (int attempt = 0; attempt < 2 && ret == 1; attempt++) {
		ret = run(cmd);
		printf("\n");
		show(md);
		show(errf);
		if (ret == 1 && run(grep) != 0)
			break;	/* failed for another reason: no second try */
		if (ret == 1 && !attempt)
			printf("  outside the bounds or no fit: once more, on a fresh measurement\n");
	}
	return ret;
}

/* A calibration file of fixed keys, for a sanitized build whose measurements fit no
 * model: there the sanitizer's own costs swamp the bytes', and what is under test is
 * that everything after the fit runs clean. */
static void write_fixed_calibration(const char *path)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fprintf(f, "calibration:\n  machine: \"calib_test: fixed keys for a sanitized build\"\n"
		   "set:\n  nodes.rails.latency_us: 10\n  nodes.rails.gbps: 20\n"
		   "  nodes.rails.op_us: 1\n  nodes.memcpy_gbps: 10\n  nodes.jitter: 0.2\n"
		   "  nodes.rpc_us: 5\n");
	fclose(f);
}

static void test_round_trip(void)
{
	const char *pcd = pc_test_argc > 1 ? pc_test_argv[1] : "./pcd";
	const char *cal = pc_test_argc > 2 ? pc_test_argv[2] : "./pccalibrate";
	const char *sim = pc_test_argc > 3 ? pc_test_argv[3] : "./pcsim";
	bool timed = !(pc_test_argc > 4 && !strcmp(pc_test_argv[4], "sanitized"));
	const char *T = pc_test_tmpdir();
	const char *pin = pinned() ? "taskset -c 0 " : "";
	struct ecl_opts two = { .nodes = 2, .pcd_cpu = *pin ? 2 : 0 };
	struct ecl *E = ecl_up_opts(pcd, "tcp", STORE, true, &two);
	char cmd[4096], file[600], topo[600], grep[700];
	double fitted, write_rate, forward, segment;
	int ret;

	/* pccalibrate serves n0 itself */
	pc_store_close(E->n0);
	E->n0 = NULL;
	/* the same cluster with the model whose pages the workloads use */
	snprintf(topo, sizeof(topo), "%s/model.yaml", T);
	snprintf(cmd, sizeof(cmd), "cp %s %s && printf '" MODEL "' >>%s", E->path, topo, topo);
	CU_ASSERT_EQUAL_FATAL(run(cmd), 0);
	snprintf(file, sizeof(file), "%s/trace.jsonl", T);
	write_trace(file);
#define HELD_BACK " --validate zipf:keys=1500,s=0.9,pages=8,requests=1500" \
		  " --validate zipf:keys=1500,s=1.2,pages=24,requests=600" \
		  " --validate prefix:groups=50,prompts=8,prefix=8,suffix=4,requests=1500" \
		  " --validate mooncake:"
	snprintf(cmd, sizeof(cmd),
		 "%s%s --topology %s --node n0 --out %s/cal.yaml --reps 200" HELD_BACK "%s %s"
		 " >%s/cal.md 2>%s/cal.err",
		 pin, cal, topo, T, file, timed ? "--bounds " BOUNDS : "", T, T);
	if (!timed)
		printf("\n  sanitized build: the predictions' bounds are not checked");
	ret = run_calibration(cmd, T, "cal");
	snprintf(grep, sizeof(grep), "grep -q 'fit no model' %s/cal.err", T);
	if (!timed && ret == 1 && run(grep) == 0) {
		printf("  sanitized build, no fit: the held-back workloads with fixed keys\n");
		snprintf(cmd, sizeof(cmd), "%s/cal.yaml", T);
		write_fixed_calibration(cmd);
		snprintf(cmd, sizeof(cmd),
			 "%s%s --topology %s --node n0 --calibration %s/cal.yaml" HELD_BACK "%s"
			 " >%s/cal.md 2>%s/cal.err", pin, cal, topo, T, file, T, T);
		ret = run_calibration(cmd, T, "cal");
	}
	CU_ASSERT_EQUAL(ret, 0);
	if (getenv("PC_CALIB_OUT")) {	/* ci/calibrate-example.sh: the tables for the docs */
		snprintf(cmd, sizeof(cmd), "cp %s/cal.md %s/cal.yaml %s/", T, T, getenv("PC_CALIB_OUT"));
		CU_ASSERT_EQUAL(run(cmd), 0);
	}

	/* pcsim plans with the file's model keys; --set still has the last word */
	snprintf(cmd, sizeof(cmd),
		 "%s --topology %s --calibration %s/cal.yaml --set nodes.rails.gbps=7 "
		 "--workload zipf:keys=300,pages=8,requests=200 --out %s/plan --force >/dev/null 2>&1",
		 sim, E->path, T, T);
	CU_ASSERT_EQUAL(run(cmd), 0);
	snprintf(file, sizeof(file), "%s/cal.yaml", T);
	fitted = yaml_number(file, "nodes.memcpy_gbps:");
	write_rate = yaml_number(file, "nodes.rails.write_gbps:");
	forward = yaml_number(file, "nodes.rails.store_forward:");
	segment = yaml_number(file, "nodes.rails.segment_forward:");
	snprintf(file, sizeof(file), "%s/plan/config-1.yaml", T);
	CU_ASSERT(fitted > 0 && yaml_number(file, "memcpy_gbps:") == fitted);
	CU_ASSERT(yaml_number(file, "gbps:") == 7);
	/* the set's rate, measured with the read rate (two page sizes), goes along */
	CU_ASSERT(write_rate > 0 && yaml_number(file, "write_gbps:") == write_rate);
	/* and so do store_forward and segment_forward, fitted at that rate */
	CU_ASSERT(forward >= 0 && yaml_number(file, "store_forward:") == forward);
	CU_ASSERT(segment >= 0 && yaml_number(file, "segment_forward:") == segment);
	/* a file that is not a calibration: one line naming it, exit code 2 */
	snprintf(cmd, sizeof(cmd),
		 "%s --topology %s --calibration %s --workload zipf:keys=30 --out %s/plan2 2>&1 | "
		 "grep -q 'not a calibration file'", sim, E->path, E->path, T);
	CU_ASSERT_EQUAL(run(cmd), 0);
	ecl_down(E);

	/* With spill: slots for a third of the workload's pages, the rest on each node's
	 * disk (promoted on a get: an RPC and a disk read), predicted with the same file. */
	E = ecl_up_opts(pcd, "tcp", STORE_SPILL, true, &two);
	pc_store_close(E->n0);
	E->n0 = NULL;
	snprintf(cmd, sizeof(cmd), "cp %s %s && printf '" MODEL "' >>%s", E->path, topo, topo);
	CU_ASSERT_EQUAL_FATAL(run(cmd), 0);
	snprintf(cmd, sizeof(cmd),
		 "%s%s --topology %s --node n0 --calibration %s/cal.yaml"
		 " --validate zipf:keys=900,s=0.6,pages=8,requests=1200 %s >%s/spill.md 2>%s/spill.err",
		 pin, cal, topo, T, timed ? "--bounds " SPILL_BOUNDS : "", T, T);
	CU_ASSERT_EQUAL(run_calibration(cmd, T, "spill"), 0);
	if (getenv("PC_CALIB_OUT")) {
		snprintf(cmd, sizeof(cmd), "cp %s/spill.md %s/", T, getenv("PC_CALIB_OUT"));
		CU_ASSERT_EQUAL(run(cmd), 0);
	}
	ecl_down(E);
}

static CU_TestInfo tests[] = {
	{ "calibrate on tcp, predict held-back workloads", test_round_trip },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "calibration", NULL, NULL, NULL, NULL, tests })
