/*
 * pcd - the peercache peer daemon: serves one node's slots to the cluster.
 *
 *   pcd --topology FILE --node NAME [--set key=value ...] [--protocol tcp|rdma|rxe]
 *       [--host-blocks N] [--disk-blocks N] [--disk-dir PATH] [--stats SECONDS]
 *
 * --host-blocks/--disk-blocks/--disk-dir set store.tier_host_blocks,
 * store.tier_disk_blocks and nodes.nvme.path: a tiered pool of N host blocks that
 * spills to N disk blocks in an unlinked file in PATH.
 *
 * Logs to stderr. SIGTERM or SIGINT shuts it down cleanly: with heartbeats on
 * (store.heartbeat_ms) it first tells the cluster it leaves, then slots are
 * released, connections closed, a last metrics line. A node drained by pcctl (taken
 * out of the ring, its own included) shuts down the same way. A bad flag or topology is one line on
 * stderr and exit code 2; a node that cannot start (port taken, no memory) exits 1.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/log.h"
#include "tool/tool_common.h"

static const char usage[] =
	"usage: pcd --topology FILE --node NAME [--set key=value ...] [--protocol tcp|rdma|rxe]\n"
	"           [--host-blocks N] [--disk-blocks N] [--disk-dir PATH] [--stats SECONDS]\n";

/* Every connection takes a descriptor: raise the soft limit to the hard one (the
 * server still caps connections at store.max_connections and backs off when the
 * descriptors run out), and say what it is. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t was = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			rl.rlim_cur = was;
	}
	pc_info("file descriptor limit %llu (hard limit %llu)", (unsigned long long)rl.rlim_cur,
		(unsigned long long)rl.rlim_max);
}

static void log_metrics(const char *node, struct pc_store *s)
{
	struct pc_tier_metrics tm = { .size = sizeof(tm) };
	struct pc_metrics m = { .size = sizeof(m) };

	pc_store_metrics(s, &m);
	fprintf(stderr,
		"pcd %s: metrics write_requests=%llu bytes_written=%llu read_requests=%llu hits=%llu bytes_read=%llu evictions=%llu layout_fetches=%llu\n",
		node, (unsigned long long)m.write_requests, (unsigned long long)m.bytes_written,
		(unsigned long long)m.read_requests, (unsigned long long)m.hits,
		(unsigned long long)m.bytes_read, (unsigned long long)m.evictions,
		(unsigned long long)m.layout_fetches);
	if (!pc_tier_metrics(s, &tm))
		fprintf(stderr,
			"pcd %s: tier resident_committed_blocks=%u resident_disk_blocks=%u free_host_blocks=%u evicted_blocks=%llu demoted_blocks=%llu promoted_blocks=%llu dropped_blocks=%llu corrupt_on_promote=%llu spill_failures=%llu lease_expired=%llu\n",
			node, tm.resident_committed_blocks, tm.resident_disk_blocks, tm.free_host_blocks,
			(unsigned long long)tm.evicted_blocks, (unsigned long long)tm.demoted_blocks,
			(unsigned long long)tm.promoted_blocks, (unsigned long long)tm.dropped_blocks,
			(unsigned long long)tm.corrupt_on_promote, (unsigned long long)tm.spill_failures,
			(unsigned long long)tm.lease_expired);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "topology", required_argument, NULL, 't' },
		{ "node", required_argument, NULL, 'n' },
		{ "set", required_argument, NULL, 's' },
		{ "protocol", required_argument, NULL, 'p' },
		{ "stats", required_argument, NULL, 'S' },
		{ "host-blocks", required_argument, NULL, 'H' },
		{ "disk-blocks", required_argument, NULL, 'D' },
		{ "disk-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = NULL, *node = NULL, *protocol = NULL;
	char **sets = calloc((size_t)argc + 3, sizeof(char *)), err[PC_ERR_MAX], tag[96];
	char host_set[64], disk_set[64], dir_set[PC_PATH_MAX + 32];
	struct pc_store_opts o = { .size = sizeof(o), .err = err, .errlen = sizeof(err) };
	struct pc_topology *t;
	struct pc_store *s;
	struct timespec every = { 0 }, tick = { .tv_nsec = 100000000 };
	long waited = 0;
	bool drained = false;
	sigset_t sigs;
	int c, nsets = 0, sig = 0, idx;

	opterr = 0;	/* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, "t:n:s:p:S:H:D:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			path = optarg;
			break;
		case 'n':
			node = optarg;
			break;
		case 's':
			sets[nsets++] = optarg;
			break;
		case 'p':
			protocol = optarg;
			break;
		case 'S':
			every.tv_sec = (time_t)tool_uint("pcd", "--stats", optarg);
			break;
		case 'H':
			snprintf(host_set, sizeof(host_set), "store.tier_host_blocks=%llu",
				 (unsigned long long)tool_uint("pcd", "--host-blocks", optarg));
			sets[nsets++] = host_set;
			break;
		case 'D':
			snprintf(disk_set, sizeof(disk_set), "store.tier_disk_blocks=%llu",
				 (unsigned long long)tool_uint("pcd", "--disk-blocks", optarg));
			sets[nsets++] = disk_set;
			break;
		case 'd':
			if (snprintf(dir_set, sizeof(dir_set), "nodes.nvme.path=%s", optarg) >=
			    (int)sizeof(dir_set))
				tool_die("pcd", "--disk-dir %s: longer than %d characters", optarg,
					 PC_PATH_MAX - 1);
			sets[nsets++] = dir_set;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			tool_die("pcd", "%s: unknown flag or missing value; see --help", argv[optind - 1]);
		}
	}
	if (optind < argc)
		tool_die("pcd", "unexpected argument '%s'; see --help", argv[optind]);
	if (!node)
		tool_die("pcd", "--node NAME is required: the name of this node in the topology");
	t = tool_load_topology("pcd", path, sets, nsets, protocol);
	free(sets);
	idx = pc_topology_find_node(t, node);
	if (idx < 0)
		tool_die("pcd", "%s: no node named '%s'; pick one of the names under nodes:", path, node);
	snprintf(tag, sizeof(tag), "pcd %s", node);
	tool_log_to_stderr(tag);

	/* Signals are taken with sigwait: block them before any thread starts. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	raise_fd_limit();
	o.topo = t;
	o.node = node;
	if (pc_store_open(&o, &s)) {
		fprintf(stderr, "pcd: %s\n", err);
		pc_topology_free(t);
		return 1;
	}
	fprintf(stderr, "pcd %s: serving on %s port %u%s%s; ready\n", node, t->nodes[idx].address,
		t->nodes[idx].port, t->nodes[idx].bind_address[0] ? ", listening on " : "",
		t->nodes[idx].bind_address);
	for (;;) {
		enum pc_member_state ms;

		sig = sigtimedwait(&sigs, NULL, &tick);
		if (sig > 0)
			break;
		if (errno != EAGAIN)
			continue;
		if (!pc_store_member(s, node, &ms, NULL) && ms == PC_MEMBER_LEFT) {
			drained = true;
			break;
		}
		waited += tick.tv_nsec / 1000000;
		if (every.tv_sec && waited >= every.tv_sec * 1000) {
			log_metrics(node, s);
			waited = 0;
		}
	}
	if (drained) {
		fprintf(stderr, "pcd %s: drained (taken out of the ring); shutting down\n", node);
	} else {
		fprintf(stderr, "pcd %s: %s; shutting down\n", node, strsignal(sig));
		/* with heartbeats the others keep this run out once told; without, a
		 * restart under this name could not come back by itself */
		if (t->store.heartbeat_ms && pc_store_set_member(s, node, false) == 0)
			fprintf(stderr, "pcd %s: told the cluster it leaves\n", node);
	}
	log_metrics(node, s);
	pc_store_close(s);
	pc_topology_free(t);
	fprintf(stderr, "pcd %s: stopped\n", node);
	return 0;
}
