/*
 * member_e2e_test.c - a cluster that heals itself: three pcd nodes with heartbeats
 * every 100 ms and a failure timeout of 500 ms, a client store in this process, and
 * pcctl. A node killed, stopped, drained or shut down is seen by every node and the
 * client within the failure timeout (and a heartbeat or two), sets go on succeeding,
 * and a node that comes back is in the ring again.
 *
 *   member_e2e_test PCD PCCTL
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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

/* Whether pcctl with args exits with code and its one line of stderr holds want. */
static bool pcctl_fails_with(const char *args, int code, const char *want)
{
	char cmd[700], out[1024] = "";
	size_t n;
	FILE *p;
	int ret;

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1 >/dev/null", pcctl, args);
	p = popen(cmd, "r");
	if (!p)
		return false;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	ret = pclose(p);
	if (WIFEXITED(ret) && WEXITSTATUS(ret) == code && strstr(out, want) &&
	    strchr(out, '\n') == out + n - 1)
		return true;
	printf("\n  pcctl %s: exit %d, said: %s", args, WIFEXITED(ret) ? WEXITSTATUS(ret) : -1, out);
	return false;
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

/* Pages of prefix 0..n-1 that read back whole (written by sets()). */
static int gets(struct pc_store *s, const char *prefix, int n)
{
	static uint8_t buf[64][12288];
	struct pc_page pg[64];
	char keys[64][32];

	for (int i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "%s-%d", prefix, i);
		pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]), .data = buf[i],
					  .cap = sizeof(buf[i]) };
	}
	return pc_batch_get(s, pg, (size_t)n);
}

/* Wait until s has node in its table and sees it up; the time it took, or -1. */
static double wait_joined(struct pc_store *s, const char *node, double limit_ms)
{
	enum pc_member_state st;
	double t0 = now_ms();

	while (now_ms() - t0 < limit_ms) {
		if (!pc_store_member(s, node, &st, NULL) && st == PC_MEMBER_UP)
			return now_ms() - t0;
		usleep(10000);
	}
	return -1;
}

/* A topology that lists only node name (or nothing: a client) and asks at port. */
static struct pc_topology *joiner_topology(const char *name, uint16_t port, uint16_t ask,
					   const char *extra, char *path, size_t len)
{
	struct pc_topology *t = NULL;
	char err[PC_ERR_MAX];
	FILE *f;

	snprintf(path, len, "%s/join-%s.yaml", pc_test_tmpdir(), name ? name : "client");
	f = fopen(path, "w");
	fprintf(f, "store: {protocol: tcp, fallback: none, timeout_ms: 1000, " STORE
		", max_nodes: 4, discovery_addr: \"127.0.0.1:%u\"%s}\n"
		"node_defaults: {nvme: {path: %s, capacity: 64MiB}}\n",
		ask, extra, pc_test_tmpdir());
	if (name)
		fprintf(f, "nodes:\n  - {name: %s, address: 127.0.0.1, port: %u}\n", name, port);
	fclose(f);
	if (pc_topology_load(path, &t, err, sizeof(err)))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	return t;
}

/* pcd for a node of a joiner's topology; its log is pcd-NAME.log. */
static pid_t spawn_joiner(const char *path, const char *name)
{
	char log[600];
	pid_t pid;

	snprintf(log, sizeof(log), "%s/pcd-%s.log", pc_test_tmpdir(), name);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* gone with the test (forked by its main thread) */
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 1);
		dup2(fd, 2);
		execl(pc_test_argv[1], "pcd", "--topology", path, "--node", name, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static struct pc_store *open_topo(struct pc_topology *t, char *err, size_t len)
{
	struct pc_store_opts o = { .size = sizeof(o), .topo = t, .err = err, .errlen = len };
	struct pc_store *s = NULL;

	err[0] = 0;
	pc_store_open(&o, &s);
	return s;
}

/* A node no topology of the cluster lists joins through n1 (which sends it to n0,
 * the lowest member, for an entry), every node and a client that knows only
 * discovery_addr see it up, and it takes its share of new keys; a client with other
 * placement settings is refused with the key named; the table full is refused. */
static void test_join(void)
{
	struct ecl *E = ecl_up(pc_test_argv[1], "tcp", STORE ", max_nodes: 4", false);
	char path[600], err[PC_ERR_MAX];
	struct pc_topology *tn3, *tcl, *tbad, *tn4;
	struct pc_store *cl, *bad;
	int status, hits;
	pid_t n3, n4;
	double t;

	/* entry 3 is vacant (no name): no node pcctl can drain or join, named so */
	{
		char args[128];

		snprintf(args, sizeof(args), "--discovery 127.0.0.1:%u drain ''", E->port0);
		CU_ASSERT(pcctl_fails_with(args, 2, "no node named '' in the cluster"));
	}
	tn3 = joiner_topology("n3", E->port0 + 3, E->port0 + 1, "", path, sizeof(path));
	n3 = spawn_joiner(path, "n3");
	CU_ASSERT_FATAL(n3 > 0);
	tcl = joiner_topology(NULL, 0, E->port0 + 2, "", path, sizeof(path));
	cl = NULL;
	for (int k = 0; k < 100 && !cl; k++) {
		cl = open_topo(tcl, err, sizeof(err));
		if (!cl)
			usleep(50000);
	}
	if (!cl)
		printf("\n  client: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	t = wait_joined(cl, "n3", 5000);
	printf("\n  n3 (listed nowhere) joined: the client, which knows only discovery_addr, saw it up after %.0f ms\n",
	       t);
	CU_ASSERT(t >= 0);
	CU_ASSERT(ecl_logged("n0", "node n3 (127.0.0.1:"));
	CU_ASSERT(ecl_logged("n3", "this node is entry 3"));
	for (uint32_t i = 0; i < NODES; i++)
		CU_ASSERT(pcctl_sees(E, i, "n3", "up", 2000));
	/* every set lands, some on n3: with n3 killed, those miss until it is seen down */
	CU_ASSERT_EQUAL(sets(cl, "joined", 64), 64);
	CU_ASSERT_EQUAL(gets(cl, "joined", 64), 64);
	kill(n3, SIGKILL);
	waitpid(n3, &status, 0);
	hits = gets(cl, "joined", 64);
	printf("  n3 killed: %d of 64 pages still read back (the rest were n3's)\n", hits);
	CU_ASSERT(hits > 0 && hits < 64);
	t = wait_state(cl, "n3", PC_MEMBER_DOWN, 5000);
	CU_ASSERT(t >= 0);
	CU_ASSERT_EQUAL(sets(cl, "after", 64), 64);
	/* other placement settings: refused, the key named here and there */
	tbad = joiner_topology(NULL, 0, E->port0, ", vnodes: 64", path, sizeof(path));
	bad = open_topo(tbad, err, sizeof(err));
	CU_ASSERT_PTR_NULL(bad);
	printf("  a client with vnodes 64: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "store.vnodes is 64 here, 128 there"));
	CU_ASSERT(ecl_logged("n0", "store.vnodes is 128 here, 64 there"));
	pc_store_close(bad);
	/* the table is full (n3's entry stays its own): a fifth node is refused */
	tn4 = joiner_topology("n4", E->port0 + 4, E->port0, "", path, sizeof(path));
	n4 = spawn_joiner(path, "n4");
	CU_ASSERT_EQUAL(waitpid(n4, &status, 0), n4);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	CU_ASSERT(ecl_logged("n4", "raise store.max_nodes"));
	pc_topology_free(tn4);
	pc_topology_free(tbad);
	pc_store_close(cl);
	pc_topology_free(tcl);
	pc_topology_free(tn3);
	ecl_down(E);
}

/* ------------------------------------------------------------------ etcd */

static pid_t etcd_pid;
static uint16_t etcd_port;
static char etcd_dir[600];

static uint16_t free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || getsockname(fd, (struct sockaddr *)&sa, &len))
		sa.sin_port = 0;
	close(fd);
	return ntohs(sa.sin_port);
}

/* A real etcd on loopback, its data in the test's directory (kept across restarts). */
static bool etcd_start(void)
{
	char client[64], peer[64], cluster[96], log[700];
	uint16_t pp = free_port();

	if (!etcd_port)
		etcd_port = free_port();
	snprintf(etcd_dir, sizeof(etcd_dir), "%s/etcd", pc_test_tmpdir());
	snprintf(client, sizeof(client), "http://127.0.0.1:%u", etcd_port);
	snprintf(peer, sizeof(peer), "http://127.0.0.1:%u", pp);
	snprintf(cluster, sizeof(cluster), "default=%s", peer);
	snprintf(log, sizeof(log), "%s/etcd.log", pc_test_tmpdir());
	etcd_pid = fork();
	if (etcd_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* gone with the test (forked by its main thread) */
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(fd, 1);
		dup2(fd, 2);
		execlp("etcd", "etcd", "--data-dir", etcd_dir, "--listen-client-urls", client,
		       "--advertise-client-urls", client, "--listen-peer-urls", peer,
		       "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster,
		       (char *)NULL);
		_exit(127);
	}
	for (int k = 0; k < 200; k++) {
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "curl -sf -X POST %s/v3/kv/range -d '{\"key\":\"eA==\"}' >/dev/null 2>&1",
			 client);
		if (!system(cmd))
			return true;
		usleep(50000);
	}
	return false;
}

static void etcd_stop(void)
{
	if (etcd_pid > 0) {
		kill(etcd_pid, SIGKILL);
		waitpid(etcd_pid, NULL, 0);
	}
	etcd_pid = 0;
}

#define ETCD_STORE STORE_ETCD_TIMES ", max_nodes: 4, discovery: etcd, etcd_prefix: \"/e2e/\", etcd_endpoints: "
#define STORE_ETCD_TIMES "slot_size_classes: [16KiB], global_segment_size: 8MiB, heartbeat_ms: 100, " \
	"failure_timeout_ms: 1000"

static struct pc_store *etcd_client(struct pc_topology **t)
{
	char text[1024], err[PC_ERR_MAX];
	struct pc_store *s;

	snprintf(text, sizeof(text), "store: {protocol: tcp, fallback: none, timeout_ms: 1000, "
		 ETCD_STORE "\"http://127.0.0.1:%u\"}\n", etcd_port);
	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "client.yaml", t, err, sizeof(err)), 0);
	s = open_topo(*t, err, sizeof(err));
	if (!s)
		printf("\n  etcd client: %s\n", err);
	return s;
}

/* The calls etcd has started (its grpc_server_started_total, every method), from its
 * /metrics; -1 when it cannot be read. */
static double etcd_calls(void)
{
	char cmd[128], line[512];
	double total = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "curl -sf http://127.0.0.1:%u/metrics", etcd_port);
	if (!(f = popen(cmd, "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *v = strrchr(line, ' ');

		if (!strncmp(line, "grpc_server_started_total{", 26) && v)
			total += strtod(v + 1, NULL);
	}
	return pclose(f) ? -1 : total;
}

/* Membership in etcd: a client that lists no node learns the table from etcd; a node
 * killed or stopped is down when its lease expires, back on SIGCONT; a node listed
 * nowhere takes a free entry; etcd down: nothing changes and sets go on; etcd back:
 * detection works again. */
static void test_etcd(void)
{
	char store[512], path[600];
	struct pc_topology *tcl, *tn3;
	struct pc_store *cl;
	struct ecl *E;
	pid_t n3;
	double t;

	if (!etcd_start()) {
		CU_FAIL("cannot start etcd (is etcd-server installed? ci/install-deps.sh)");
		etcd_stop();
		return;
	}
	snprintf(store, sizeof(store), ETCD_STORE "\"http://127.0.0.1:%u\"", etcd_port);
	E = ecl_up(pc_test_argv[1], "tcp", store, false);
	cl = etcd_client(&tcl);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	t = wait_joined(cl, "n2", 3000);
	CU_ASSERT(t >= 0);
	CU_ASSERT_EQUAL(sets(cl, "etcd", 64), 64);
	/* the watch: in the steady state, far fewer calls than listing every heartbeat
	 * (three nodes: a keepalive and two ranges, the client: two ranges, ten times a
	 * second: 110 calls/s) */
	{
		double c0, c1;

		usleep(2000 * 1000);	/* past the failure timeout after the nodes opened */
		c0 = etcd_calls();
		usleep(2000 * 1000);
		c1 = etcd_calls();
		printf("\n  etcd: %.1f calls/s from 3 nodes and a client in the steady state (listing "
		       "every heartbeat: 110)", (c1 - c0) / 2);
		CU_ASSERT(c0 >= 0 && c1 >= 0);
		CU_ASSERT((c1 - c0) / 2 < 110.0 / 3);
	}
	ecl_stop_pcd(E, 2, SIGKILL);
	t = wait_state(cl, "n2", PC_MEMBER_DOWN, 6000);
	printf("\n  etcd: n2 killed: the client saw it down after %.0f ms (lease of 1 s, etcd's minimum 2 s)\n", t);
	CU_ASSERT(t >= 0);
	CU_ASSERT_EQUAL(sets(cl, "etcd-after", 64), 64);
	CU_ASSERT(pcctl_sees(E, 0, "n2", "down", 2000));
	/* stopped: its lease expires; SIGCONT: a new lease, up again */
	kill(E->pcd[1], SIGSTOP);
	t = wait_state(cl, "n1", PC_MEMBER_DOWN, 6000);
	printf("  n1 stopped: down after %.0f ms\n", t);
	CU_ASSERT(t >= 0);
	kill(E->pcd[1], SIGCONT);
	t = wait_state(cl, "n1", PC_MEMBER_UP, 6000);
	printf("  n1 continued: up after %.0f ms\n", t);
	CU_ASSERT(t >= 0);
	/* a node listed nowhere joins through etcd */
	snprintf(store, sizeof(store), ", discovery: etcd, etcd_prefix: \"/e2e/\", etcd_endpoints: \"http://127.0.0.1:%u\"",
		 etcd_port);
	tn3 = joiner_topology("n3", E->port0 + 3, 1, store, path, sizeof(path));
	n3 = spawn_joiner(path, "n3");
	t = wait_joined(cl, "n3", 6000);
	printf("  n3 (listed nowhere) joined through etcd: up at the client after %.0f ms\n", t);
	CU_ASSERT(t >= 0);
	CU_ASSERT(pcctl_sees(E, 0, "n3", "up", 3000));
	/* etcd killed: the cluster serves on its last view */
	etcd_stop();
	usleep(3000 * 1000);
	CU_ASSERT_EQUAL(state(cl, "n0"), PC_MEMBER_UP);
	CU_ASSERT_EQUAL(state(cl, "n3"), PC_MEMBER_UP);
	CU_ASSERT_EQUAL(sets(cl, "no-etcd", 64), 64);
	CU_ASSERT(ecl_logged("n0", "the registry cannot be reached"));
	printf("  etcd killed for 3 s: every node still up, 64 of 64 sets\n");
	/* etcd back: a kill is seen again */
	CU_ASSERT_FATAL(etcd_start());
	usleep(2500 * 1000);
	kill(n3, SIGKILL);
	waitpid(n3, NULL, 0);
	t = wait_state(cl, "n3", PC_MEMBER_DOWN, 8000);
	printf("  etcd back, n3 killed: down after %.0f ms\n", t);
	CU_ASSERT(t >= 0);
	CU_ASSERT_EQUAL(state(cl, "n0"), PC_MEMBER_UP);
	pc_store_close(cl);
	pc_topology_free(tcl);
	pc_topology_free(tn3);
	ecl_down(E);
	etcd_stop();
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
	/* a --discovery that is no HOST:PORT is named as the user wrote it, not as the
	 * line of the topology pcctl writes for itself */
	CU_ASSERT(pcctl_fails_with("--discovery 127.0.0.1:abc status", 2,
				   "--discovery 127.0.0.1:abc: expected HOST:PORT"));
	CU_ASSERT(pcctl_fails_with("--discovery 127.0.0.1:99999 status", 2,
				   "--discovery 127.0.0.1:99999: expected HOST:PORT"));
	CU_ASSERT(pcctl_fails_with("--discovery '1\"2:3' status", 2,
				   "--discovery 1\"2:3: expected HOST:PORT"));
}

static CU_TestInfo tests[] = {
	{ "a killed node is seen down, then up when restarted", test_killed },
	{ "a stopped node is seen down; batches do not wait; back on SIGCONT", test_stopped },
	{ "the node a client asks is killed: detection goes on", test_seed_killed },
	{ "drain and SIGTERM: left at once; a restart joins", test_drain_and_leave },
	{ "a node listed nowhere joins; a client from discovery_addr only", test_join },
	{ "etcd: kill, stop, join, etcd down and back", test_etcd },
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
