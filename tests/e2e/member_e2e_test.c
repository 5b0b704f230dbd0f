/*
 * member_e2e_test.c - a cluster that heals itself: three pcd nodes with heartbeats
 * every 100 ms and a failure timeout of 500 ms, a client store in this process, and
 * pcctl. A node killed, stopped, drained or shut down is seen by every node and the
 * client within the failure timeout (and a heartbeat or two), sets go on succeeding,
 * and a node that comes back is in the ring again.
 *
 *   member_e2e_test PCD PCCTL
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "testutil.h"

#define STORE "slot_size_classes: [16KiB], global_segment_size: 8MiB, heartbeat_ms: 100, " \
	      "failure_timeout_ms: 500"
#define FAILURE_MS 500
#define HEARTBEAT_MS 100

static const char *pcctl;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static struct ecl *up_with_client(struct pc_store **cl)
{
	struct ecl *E = ecl_up(pc_test_argv[1], "tcp", STORE, false);

	*cl = ecl_open_store(E, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*cl);
	return E;
}

static enum pc_member_state state(struct pc_store *s, const char *node)
{
	enum pc_member_state st = PC_MEMBER_UP;

	CU_ASSERT_EQUAL(pc_store_member(s, node, &st, NULL), 0);
	return st;
}

/* Wait until s sees node in state want, at most limit_ms; the time it took, or -1. */
static double wait_state(struct pc_store *s, const char *node, enum pc_member_state want,
			 double limit_ms)
{
	double t0 = now_ms();

	while (now_ms() - t0 < limit_ms) {
		if (state(s, node) == want)
			return now_ms() - t0;
		usleep(10000);
	}
	return -1;
}

/* What pcctl status says of node, asked at node ask: "up", "down", "left" or "". */
static const char *pcctl_says(struct ecl *E, uint32_t ask, const char *node, char *out, size_t len)
{
	char cmd[700], line[256];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s --discovery 127.0.0.1:%u status", pcctl, E->port0 + ask);
	out[0] = 0;
	p = popen(cmd, "r");
	if (!p)
		return out;
	while (fgets(line, sizeof(line), p)) {
		char name[64], addr[96], st[16];

		if (sscanf(line, "%63s %95s %15s", name, addr, st) == 3 && !strcmp(name, node))
			snprintf(out, len, "%s", st);
	}
	pclose(p);
	return out;
}

/* Whether pcctl, asking node ask, says node is want within limit_ms (each node
 * decides by itself, so they may see a change a heartbeat apart). */
static bool pcctl_sees(struct ecl *E, uint32_t ask, const char *node, const char *want,
		       double limit_ms)
{
	char said[16];
	double t0 = now_ms();

	do {
		if (!strcmp(pcctl_says(E, ask, node, said, sizeof(said)), want))
			return true;
		usleep(20000);
	} while (now_ms() - t0 < limit_ms);
	printf("  pcctl at n%u says %s is '%s', not '%s'\n", ask, node, said, want);
	return false;
}

static int sets(struct pc_store *s, const char *prefix, int n)
{
	static uint8_t page[12288];
	struct pc_page pg[64];
	char keys[64][32];

	for (int i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "%s-%d", prefix, i);
		pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]), .data = page,
					  .len = sizeof(page) };
	}
	return pc_batch_set(s, pg, (size_t)n);
}

/* kill -9: every node and the client see it down within the failure timeout; sets
 * then all succeed; restarted, it is up again with a new incarnation. */
static void test_killed(void)
{
	struct pc_store *cl;
	struct ecl *E = up_with_client(&cl);
	uint64_t inc0 = 0, inc1 = 0;
	double t;

	/* the client's first view tells it every node's incarnation */
	for (int i = 0; i < 200 && !inc0; i++) {
		usleep(10000);
		pc_store_member(cl, "n2", NULL, &inc0);
	}
	CU_ASSERT(inc0 != 0);
	CU_ASSERT_EQUAL(state(cl, "n2"), PC_MEMBER_UP);
	ecl_stop_pcd(E, 2, SIGKILL);
	t = wait_state(cl, "n2", PC_MEMBER_DOWN, 5000);
	printf("\n  n2 killed: the client saw it down after %.0f ms (failure timeout %d ms, heartbeat %d ms)\n",
	       t, FAILURE_MS, HEARTBEAT_MS);
	CU_ASSERT(t >= 0 && t <= FAILURE_MS + 4 * HEARTBEAT_MS + 500);
	CU_ASSERT(pcctl_sees(E, 0, "n2", "down", 3 * HEARTBEAT_MS));
	CU_ASSERT(pcctl_sees(E, 1, "n2", "down", 3 * HEARTBEAT_MS));
	CU_ASSERT_EQUAL(sets(cl, "after-kill", 32), 32);
	E->pcd[2] = ecl_spawn_pcd(E, 2);
	CU_ASSERT_FATAL(E->pcd[2] > 0);
	t = wait_state(cl, "n2", PC_MEMBER_UP, 5000);
	pc_store_member(cl, "n2", NULL, &inc1);
	printf("  restarted: up again after %.0f ms, incarnation %016llx -> %016llx\n", t,
	       (unsigned long long)inc0, (unsigned long long)inc1);
	CU_ASSERT(t >= 0);
	CU_ASSERT(inc1 != inc0);
	CU_ASSERT(pcctl_sees(E, 1, "n2", "up", 3 * HEARTBEAT_MS));
	pc_store_close(cl);
	ecl_down(E);
}

/* SIGSTOP: down, and batches do not wait for it; SIGCONT: up again. */
static void test_stopped(void)
{
	struct pc_store *cl;
	struct ecl *E = up_with_client(&cl);
	double t, worst = 0;
	int ok = 0, batches = 0;

	CU_ASSERT_EQUAL(sets(cl, "before-stop", 32), 32);
	kill(E->pcd[1], SIGSTOP);
	t = wait_state(cl, "n1", PC_MEMBER_DOWN, 5000);
	printf("\n  n1 stopped: down after %.0f ms\n", t);
	CU_ASSERT(t >= 0);
	/* with n1 out of the ring, no batch waits on it */
	for (double t0 = now_ms(); now_ms() - t0 < 500; batches++) {
		double b0 = now_ms(), dt;

		ok += sets(cl, "during-stop", 32) == 32;
		dt = now_ms() - b0;
		worst = dt > worst ? dt : worst;
	}
	printf("  %d batches of 32 sets while n1 was stopped: %d whole, worst %.1f ms (timeout 1000 ms)\n",
	       batches, ok, worst);
	CU_ASSERT_EQUAL(ok, batches);
	CU_ASSERT(worst < 200);
	kill(E->pcd[1], SIGCONT);
	t = wait_state(cl, "n1", PC_MEMBER_UP, 5000);
	printf("  continued: up again after %.0f ms\n", t);
	CU_ASSERT(t >= 0);
	pc_store_close(cl);
	ecl_down(E);
}

/* The node the client asks is killed: the client asks another, which saw it go. */
static void test_seed_killed(void)
{
	struct pc_store *cl;
	struct ecl *E = up_with_client(&cl);
	double t;

	usleep(3 * HEARTBEAT_MS * 1000);
	ecl_stop_pcd(E, 0, SIGKILL);
	t = wait_state(cl, "n0", PC_MEMBER_DOWN, 5000);
	printf("\n  n0 (the node the client asked first) killed: down after %.0f ms\n", t);
	CU_ASSERT(t >= 0);
	ecl_stop_pcd(E, 2, SIGKILL);
	t = wait_state(cl, "n2", PC_MEMBER_DOWN, 5000);
	printf("  then n2: down after %.0f ms, as n1 alone sees it\n", t);
	CU_ASSERT(t >= 0);
	CU_ASSERT_EQUAL(state(cl, "n1"), PC_MEMBER_UP);
	CU_ASSERT_EQUAL(sets(cl, "n1-alone", 16), 16);
	pc_store_close(cl);
	ecl_down(E);
}

/* pcctl drain: the node leaves every ring and its pcd stops; SIGTERM: the same,
 * announced; either way the others see "left" at once, not after the timeout. */
static void test_drain_and_leave(void)
{
	struct pc_store *cl;
	struct ecl *E = up_with_client(&cl);
	char cmd[700];
	int status = -1;
	double t;

	usleep(3 * HEARTBEAT_MS * 1000);
	snprintf(cmd, sizeof(cmd), "%s --discovery 127.0.0.1:%u drain n1 >/dev/null", pcctl, E->port0 + 2);
	CU_ASSERT_EQUAL(system(cmd), 0);
	CU_ASSERT_EQUAL(waitpid(E->pcd[1], &status, 0), E->pcd[1]);	/* it stops by itself */
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	E->pcd[1] = 0;
	t = wait_state(cl, "n1", PC_MEMBER_LEFT, 2000);
	printf("\n  n1 drained: its pcd stopped, the client saw it leave after %.0f ms\n", t);
	CU_ASSERT(t >= 0);
	CU_ASSERT(pcctl_sees(E, 0, "n1", "left", 3 * HEARTBEAT_MS));
	t = now_ms();
	ecl_stop_pcd(E, 2, SIGTERM);
	t = wait_state(cl, "n2", PC_MEMBER_LEFT, 2000);
	printf("  n2 shut down (SIGTERM): left after %.0f ms\n", t);
	CU_ASSERT(t >= 0 && t < FAILURE_MS);
	CU_ASSERT(pcctl_sees(E, 0, "n2", "left", 3 * HEARTBEAT_MS));
	/* a restart is a new run: it joins again */
	E->pcd[1] = ecl_spawn_pcd(E, 1);
	CU_ASSERT_FATAL(E->pcd[1] > 0);
	t = wait_state(cl, "n1", PC_MEMBER_UP, 5000);
	printf("  n1 restarted: up after %.0f ms\n", t);
	CU_ASSERT(t >= 0);
	pc_store_close(cl);
	ecl_down(E);
}

/* pcctl's own errors: a bad command line is exit code 2, no cluster is 1. */
static void test_pcctl_errors(void)
{
	char cmd[700];
	int ret;

	snprintf(cmd, sizeof(cmd), "%s --discovery nocolon status 2>/dev/null", pcctl);
	ret = system(cmd);
	CU_ASSERT(WIFEXITED(ret) && WEXITSTATUS(ret) == 2);
	snprintf(cmd, sizeof(cmd), "%s --discovery 127.0.0.1:1 status 2>/dev/null", pcctl);
	ret = system(cmd);
	CU_ASSERT(WIFEXITED(ret) && WEXITSTATUS(ret) == 1);
	snprintf(cmd, sizeof(cmd), "%s --discovery 127.0.0.1:1 frobnicate 2>/dev/null", pcctl);
	ret = system(cmd);
	CU_ASSERT(WIFEXITED(ret) && WEXITSTATUS(ret) == 2);
}

static CU_TestInfo tests[] = {
	{ "a killed node is seen down, then up when restarted", test_killed },
	{ "a stopped node is seen down; batches do not wait; back on SIGCONT", test_stopped },
	{ "the node a client asks is killed: detection goes on", test_seed_killed },
	{ "drain and SIGTERM: left at once; a restart joins", test_drain_and_leave },
	{ "pcctl: bad command lines and no cluster", test_pcctl_errors },
	CU_TEST_INFO_NULL,
};

static int suite_init(void)
{
	if (pc_test_argc < 3) {
		fprintf(stderr, "usage: member_e2e_test PCD PCCTL\n");
		return 1;
	}
	pcctl = pc_test_argv[2];
	return 0;
}

PC_TEST_MAIN({ "membership", suite_init, NULL, NULL, NULL, tests })
