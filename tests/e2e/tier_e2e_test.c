/*
 * tier_e2e_test.c - tiers across processes. The tiered pool: pcd serves 8 host + 64
 * disk blocks (--host-blocks/--disk-blocks/--disk-dir); this process is node n0 and
 * runs the seed's three smoke runs against it, asserting bytes, counters and pcd's
 * log lines; then 9x capacity, and a disk directory pcd cannot use. Spill under
 * slotmap: a working set 4x the cluster's slots written through n0, read through a
 * client.
 *
 *   tier_e2e_test PCD [PROTOCOL]
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "testutil.h"
#include "tier_smoke.h"

static const char *pcd_bin(void)
{
	return pc_test_argc > 1 ? pc_test_argv[1] : "pcd";
}

static const char *protocol(void)
{
	return pc_test_argc > 2 ? pc_test_argv[2] : "tcp";
}

static struct ecl *up(void)
{
	char args[512];

	snprintf(args, sizeof(args), "--host-blocks 8 --disk-blocks 64 --disk-dir %s --set store.tier_free_percent=0",
		 pc_test_tmpdir());
	return ecl_up_args(pcd_bin(), protocol(),
			   "tier_block_bytes: 12288, slot_size_classes: [16KiB], global_segment_size: 16MiB",
			   true, args);
}

/* How many lines of node's pcd log contain all of the words (a NULL: print the
 * lines that contain b). */
static int log_lines(uint32_t node, const char *a, const char *b)
{
	char path[600], line[1024];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s/pcd-n%u.log", pc_test_tmpdir(), node);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!a && strstr(line, b))
			printf("  | %s", line);
		n += a && strstr(line, a) && (!b || strstr(line, b));
	}
	if (f)
		fclose(f);
	return n;
}

static void test_smoke_runs(void)
{
	struct ecl *E = up();
	char path[600];

	snprintf(path, sizeof(path), "%s/pcd-n1.log", pc_test_tmpdir());
	truncate(path, 0);
	smoke_runs(E->n0, "n1");
	printf("\n");
	log_lines(1, NULL, "blocks=");
	/* the seed's log lines, from the peer process */
	CU_ASSERT_EQUAL(log_lines(1, "demoted evicted host blocks to disk", "demoted_blocks=4 "), 2);
	CU_ASSERT_EQUAL(log_lines(1, "reclaimed committed blocks for staging capacity",
				  "evicted_blocks=4 demoted_blocks=4 pool_blocks=2 remaining_committed_blocks=2"), 1);
	CU_ASSERT_EQUAL(log_lines(1, "promoted disk blocks into host memory", "promoted_blocks=4 "), 1);
	CU_ASSERT_EQUAL(log_lines(1, "offer classified", "new=0 on_host=2 on_disk=4"), 1);
	ecl_down(E);
}

static void test_nine_times_capacity(void)
{
	struct ecl *E = up();
	struct pc_tier_metrics m = { .size = sizeof(m) };
	int same = 0;

	for (uint32_t i = 0; i < 72; i += 8)
		CU_ASSERT_EQUAL(smoke_put(E->n0, "n2", 'C', i, 8), 8);
	for (uint32_t i = 0; i < 72; i += 4)
		same += smoke_fetch(E->n0, "n2", 'C', i, 4);
	CU_ASSERT_EQUAL(same, 72);
	CU_ASSERT_EQUAL_FATAL(pc_tier_node_metrics(E->n0, "n2", &m), 0);
	CU_ASSERT_EQUAL(m.fetch_miss, 0);
	CU_ASSERT_EQUAL(m.resident_committed_blocks + m.resident_disk_blocks, 72);
	printf("\n  node n2 over %s: 72 blocks in 8 host + 64 disk, all verified; %llu demoted, %llu promoted",
	       protocol(), (unsigned long long)m.demoted_blocks, (unsigned long long)m.promoted_blocks);
	ecl_down(E);
}

/* A disk directory that is missing: one line at start, exit code 1. */
static void test_bad_disk_dir(void)
{
	struct ecl *E = up();
	char cmd[1400], log[600], line[1024], out[1024] = "";
	FILE *f;
	int status, lines = 0;

	ecl_stop_pcd(E, 2, SIGTERM);
	snprintf(log, sizeof(log), "%s/bad-dir.log", pc_test_tmpdir());
	snprintf(cmd, sizeof(cmd),
		 "%s --topology %s --node n2 --host-blocks 8 --disk-blocks 8 --disk-dir /nonexistent/dir 2> %s",
		 pcd_bin(), E->path, log);
	status = system(cmd);
	f = fopen(log, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (strstr(line, "Z info "))
			continue;
		lines++;
		snprintf(out, sizeof(out), "%s", line);
	}
	if (f)
		fclose(f);
	CU_ASSERT_EQUAL(lines, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "/nonexistent/dir"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "--disk-dir"));
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	printf("\n  %s", out);
	ecl_down(E);
}

/* Three nodes of 60 slots keeping 2 ways per bucket free; 720 pages written through
 * n0, 8 at a time, and read through a client that owns no slots. */
static void test_spill_under_slotmap(void)
{
	struct ecl *E = ecl_up(pcd_bin(), protocol(),
			       "slot_size_classes: [16KiB], global_segment_size: 1MiB, slot_spill_ways: 2",
			       true);
	struct pc_store *reader = ecl_open_store(E, NULL);
	struct pc_metrics m = { .size = sizeof(m) };
	int wrong = 0, bad = 0, hits;

	CU_ASSERT_PTR_NOT_NULL_FATAL(reader);
	for (uint32_t i = 0; i < 720; i += 8) {
		pc_test_write_pages(E->n0, i, 8, 12288);
		usleep(30000);	/* the owners' sweeps keep ways free */
	}
	hits = pc_test_read_pages(reader, 720, 12288, &wrong, &bad);
	pc_store_metrics(reader, &m);
	printf("\n  over %s: 720 pages in 3 x 60 slots: %d hits, %llu served from owners' disks, %d wrong, %llu promote RPCs",
	       protocol(), hits, (unsigned long long)m.disk_hits, wrong,
	       (unsigned long long)m.promote_rpcs);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(hits >= 648);			/* 90% */
	CU_ASSERT(m.disk_hits >= 400);		/* most were on disk */
	CU_ASSERT(m.promote_rpcs <= 3 * 45);	/* one per batch and owner at most */
	pc_store_close(reader);
	ecl_down(E);
}

static CU_TestInfo tests[] = {
	{ "the seed's three smoke runs, across processes", test_smoke_runs },
	{ "9x capacity across processes", test_nine_times_capacity },
	{ "a disk directory pcd cannot use", test_bad_disk_dir },
	{ "spill under slotmap: 4x the slots across processes", test_spill_under_slotmap },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "tiered pool across processes", NULL, NULL, NULL, NULL, tests })
