/*
 * cluster.c - loopback clusters of pcd processes for the end-to-end tests.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster.h"
#include "testutil.h"

static const char *pcd_path;

static int can_connect(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	ok = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return ok;
}

pid_t ecl_spawn_pcd(struct ecl *E, uint32_t i)
{
	char log[600], name[8];
	pid_t pid;

	snprintf(name, sizeof(name), "n%u", i);
	snprintf(log, sizeof(log), "%s/pcd-%s.log", pc_test_tmpdir(), name);
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644), argc = 0;
		char *argv[64], *save, *tok;

		dup2(fd, 1);	/* not the test's stdout: ctest waits for every holder of it */
		dup2(fd, 2);
		if (E->pcd_cpu >= 0) {	/* kept across exec */
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(E->pcd_cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
		argv[argc++] = "pcd";
		argv[argc++] = "--topology";
		argv[argc++] = E->path;
		argv[argc++] = "--node";
		argv[argc++] = name;
		for (tok = strtok_r(E->pcd_args, " ", &save); tok && argc < 63;
		     tok = strtok_r(NULL, " ", &save))
			argv[argc++] = tok;
		argv[argc] = NULL;
		execv(pcd_path, argv);
		_exit(127);
	}
	for (int k = 0; k < 250; k++) {
		if (can_connect(E->port0 + (uint16_t)i))
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

void ecl_stop_pcd(struct ecl *E, uint32_t i, int sig)
{
	int status;

	if (E->pcd[i] <= 0)
		return;
	kill(E->pcd[i], sig);
	waitpid(E->pcd[i], &status, 0);
	if (sig == SIGTERM)
		CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);	/* clean shutdown */
	E->pcd[i] = 0;
}

struct pc_store *ecl_open_store(struct ecl *E, const char *node)
{
	char err[PC_ERR_MAX];
	struct pc_store_opts o = { .size = sizeof(o), .topo = E->topo, .node = node,
				   .err = err, .errlen = sizeof(err) };
	struct pc_store *s = NULL;

	if (pc_store_open(&o, &s))
		printf("\n  open: %s\n", err);
	return s;
}

bool ecl_logged(const char *node, const char *what)
{
	char path[600], *buf = calloc(1, 1 << 20);
	FILE *f;
	size_t n = 0;
	bool yes;

	snprintf(path, sizeof(path), "%s/pcd-%s.log", pc_test_tmpdir(), node);
	f = fopen(path, "r");
	if (f) {
		n = fread(buf, 1, (1 << 20) - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	yes = strstr(buf, what) != NULL;
	if (!yes)
		printf("\n  pcd %s did not log \"%s\"; its log:\n%s", node, what, buf);
	free(buf);
	return yes;
}

/* The last lines of every pcd log, when the cluster would not start. */
static void show_logs(void)
{
	char cmd[700];

	snprintf(cmd, sizeof(cmd), "tail -n 3 %s/pcd-n*.log 2>/dev/null", pc_test_tmpdir());
	if (system(cmd) < 0)
		printf("\n  (could not show the pcd logs)\n");
}

struct ecl *ecl_up(const char *pcd, const char *protocol, const char *store, bool embed_n0)
{
	return ecl_up_args(pcd, protocol, store, embed_n0, NULL);
}

struct ecl *ecl_up_args(const char *pcd, const char *protocol, const char *store, bool embed_n0,
			const char *pcd_args)
{
	struct ecl_opts o = { .pcd_args = pcd_args };

	return ecl_up_opts(pcd, protocol, store, embed_n0, &o);
}

struct ecl *ecl_up_opts(const char *pcd, const char *protocol, const char *store, bool embed_n0,
			const struct ecl_opts *o)
{
	struct ecl *E = calloc(1, sizeof(*E));
	char err[PC_ERR_MAX];

	CU_ASSERT_PTR_NOT_NULL_FATAL(E);
	E->nodes = o->nodes ? o->nodes : NODES;
	CU_ASSERT_FATAL(E->nodes >= 2 && E->nodes <= NODES);
	E->pcd_cpu = o->pcd_cpu - 1;
	if (o->pcd_args)
		snprintf(E->pcd_args, sizeof(E->pcd_args), "%s", o->pcd_args);

	pcd_path = pcd;
	for (int attempt = 0; attempt < 10; attempt++) {
		FILE *f;
		bool ok = true;

		E->port0 = pc_test_port_base(attempt);
		snprintf(E->path, sizeof(E->path), "%s/e2e-%u.yaml", pc_test_tmpdir(), E->port0);
		f = fopen(E->path, "w");
		/* these tests hold the ring fixed unless they ask for heartbeats */
		fprintf(f, "name: e2e\nstore: {protocol: %s, fallback: none, timeout_ms: 1000, %s%s}\n"
			"node_defaults: {nvme: {path: %s, capacity: 64MiB}}\nnodes:\n",
			protocol, strstr(store, "heartbeat_ms") ? "" : "heartbeat_ms: 0, ", store,
			pc_test_tmpdir());
		for (uint32_t i = 0; i < E->nodes; i++)
			fprintf(f, "  - {name: n%u, address: 127.0.0.1, port: %u}\n", i, E->port0 + i);
		fclose(f);
		if (pc_topology_load(E->path, &E->topo, err, sizeof(err))) {
			printf("\n  %s\n", err);
			CU_FAIL_FATAL("bad test topology");
		}
		for (uint32_t i = embed_n0 ? 1 : 0; i < E->nodes && ok; i++)
			ok = (E->pcd[i] = ecl_spawn_pcd(E, i)) > 0;
		if (ok && embed_n0)
			ok = (E->n0 = ecl_open_store(E, "n0")) != NULL;
		if (ok)
			return E;
		for (uint32_t i = 0; i < NODES; i++)
			ecl_stop_pcd(E, i, SIGKILL);
		pc_topology_free(E->topo);
		show_logs();
	}
	CU_FAIL_FATAL("could not start the cluster");
	return NULL;
}

void ecl_down(struct ecl *E)
{
	pc_store_close(E->n0);
	for (uint32_t i = 0; i < NODES; i++)
		ecl_stop_pcd(E, i, SIGTERM);
	pc_topology_free(E->topo);
	free(E);
}
