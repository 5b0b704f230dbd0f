/*
 * pcd - the peercache peer daemon: serves one node's slots to the cluster.
 *
 *   pcd --topology FILE --node NAME [--set key=value ...] [--protocol tcp|rdma|rxe]
 *       [--host-blocks N] [--disk-blocks N] [--disk-dir PATH] [--stats SECONDS]
 *       [--metrics-addr HOST:PORT]
 *
 * --host-blocks/--disk-blocks/--disk-dir set store.tier_host_blocks,
 * store.tier_disk_blocks and nodes.nvme.path: a tiered pool of N host blocks that
 * spills to N disk blocks in an unlinked file in PATH.
 *
 * --metrics-addr serves /metrics, /healthz and /readyz over HTTP on HOST:PORT or
 * [IPv6]:PORT (port 0: an ephemeral one, logged); without it, store.metrics: true in
 * the topology serves them on the node's address and store.metrics_port. Off otherwise.
 *
 * Logs to stderr in the library's line format. --stats N logs the counters every N
 * seconds, SIGUSR1 logs them at once (and pcd keeps serving). SIGTERM or SIGINT
 * shuts it down cleanly: /readyz answers 503 first; with heartbeats on
 * (store.heartbeat_ms) it tells the cluster it leaves, then slots are released,
 * connections closed, a last metrics line. A node drained by pcctl (taken out of the
 * ring, its own included) shuts down the same way. A bad flag or topology is one line
 * on stderr and exit code 2; a node that cannot start (port taken, no memory) exits 1.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
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
#include "tool/tool_help.h"

static const char *const synopsis[] = {
	"--topology FILE --node NAME [--set key=value ...] [--protocol tcp|rdma|rxe]",
	" [--host-blocks N] [--disk-blocks N] [--disk-dir PATH] [--stats SECONDS] [--metrics-addr HOST:PORT]",
	NULL,
};

static const struct tool_opt options[] = {
	{ "--topology FILE", NULL,
	  "The cluster's topology YAML, the same file on every node and client (docs/configuration.md). Required." },
	{ "--node NAME", NULL, "Which node of the topology this process serves. Required." },
	{ "--set key=value", NULL,
	  "Override one topology key, e.g. store.timeout_ms=500 or nodes.nvme.path=/mnt/nvme; repeatable." },
	{ "--protocol tcp|rdma|rxe", "the topology's store.protocol",
	  "The fabric: tcp sockets, ibverbs (RoCE/InfiniBand) or Soft-RoCE." },
	{ "--host-blocks N", "0: no tiered pool",
	  "Serve a tiered pool (the KVBM G2PB peer) of N pinned host blocks: store.tier_host_blocks." },
	{ "--disk-blocks N", "0: no spill",
	  "Spill the tiered pool's LRU tail to N disk blocks: store.tier_disk_blocks." },
	{ "--disk-dir PATH", "/var/tmp",
	  "Where the disk pool's unlinked file lives: nodes.nvme.path." },
	{ "--stats SECONDS", "off", "Log the node's counters every SECONDS seconds." },
	{ "--metrics-addr HOST:PORT", "store.metrics / store.metrics_port, else off",
	  "Serve /metrics, /healthz and /readyz over HTTP on HOST:PORT (an IPv6 address in brackets: [::1]:9100); port 0 picks a free one and logs it." },
	{ 0 },
};

static const struct tool_example examples[] = {
	{ "pcd --topology topologies/laptop.yaml --node n0",
	  "serve node n0 of the 3-node loopback cluster (start n1 and n2 the same way)" },
	{ "pcd --topology /etc/peercache/cluster.yaml --node $(hostname) --metrics-addr 0.0.0.0:9100",
	  "a node of a real cluster, scraped by Prometheus (docs/deployment.md)" },
	{ "pcd --topology topologies/laptop.yaml --node n1 --host-blocks 8 --disk-blocks 64 --disk-dir /var/tmp",
	  "a tiered pool of 8 host blocks spilling to 64 disk blocks" },
	{ 0 },
};

static const struct tool_doc doc = {
	.name = "pcd",
	.summary = "the peercache peer daemon: serves one node's slots to the cluster",
	.synopsis = synopsis,
	.description =
		"pcd opens the store of one node of the topology, registers its slot regions "
		"(or its tiered pool) with the fabric and serves them until it is told to stop. "
		"It logs 'slot region ready: N buckets x W ways x S B' per size class, then "
		"'serving on ADDRESS port PORT; ready'.\n\n"
		"SIGUSR1 logs the node's counters (and pcd keeps serving). SIGTERM or SIGINT "
		"shuts it down cleanly: /readyz answers 503 first; with heartbeats on "
		"(store.heartbeat_ms) it tells the cluster it leaves, then releases its slots. "
		"A node drained by pcctl stops the same way.\n\n"
		"Every log line reads 'TIME LEVEL pcd NODE: message' on stderr "
		"(docs/observability.md).",
	.opts = options,
	.examples = examples,
	.exit_status = "0 after a clean shutdown; 1 when the node cannot start (port taken, no "
		       "memory, no RDMA device with store.fallback: none); 2 for a bad flag or "
		       "topology (one line naming the file, line and key).",
	.environment = TOOL_ENV_STORE,
	.see_also = "pcctl(1), pctopo(1), pcdemo(1)",
	.needs_args = true,
};

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
	tool_log(PC_LOG_INFO, "file descriptor limit %llu (hard limit %llu)", (unsigned long long)rl.rlim_cur,
		(unsigned long long)rl.rlim_max);
}

/* What this process asked (a node's own calls are few), what it served, its
 * slots, and its tiered pool: one line each. */
static void log_metrics(struct pc_store *s)
{
	struct pc_served_metrics sv = { .size = sizeof(sv) };
	struct pc_tier_metrics tm = { .size = sizeof(tm) };
	struct pc_metrics m = { .size = sizeof(m) };

	pc_store_metrics(s, &m);
	pc_store_served_metrics(s, &sv);
	tool_log(PC_LOG_INFO,
		 "metrics write_requests=%llu bytes_written=%llu read_requests=%llu hits=%llu bytes_read=%llu evictions=%llu layout_fetches=%llu",
		 (unsigned long long)m.write_requests, (unsigned long long)m.bytes_written,
		 (unsigned long long)m.read_requests, (unsigned long long)m.hits,
		 (unsigned long long)m.bytes_read, (unsigned long long)m.evictions,
		 (unsigned long long)m.layout_fetches);
	tool_log(PC_LOG_INFO,
		 "served reads=%llu read_bytes=%llu writes=%llu write_bytes=%llu cas=%llu refused=%llu bad_frames=%llu rpcs=%llu rpc_errors=%llu conns_open=%llu conns_accepted=%llu",
		 (unsigned long long)sv.reads, (unsigned long long)sv.read_bytes,
		 (unsigned long long)sv.writes, (unsigned long long)sv.write_bytes,
		 (unsigned long long)sv.cas,
		 (unsigned long long)(sv.refused_key + sv.refused_bounds + sv.refused_rights +
				      sv.refused_malformed),
		 (unsigned long long)sv.bad_frames, (unsigned long long)sv.rpcs,
		 (unsigned long long)sv.rpc_errors,
		 (unsigned long long)(sv.conns_accepted - sv.conns_closed),
		 (unsigned long long)sv.conns_accepted);
	tool_log(PC_LOG_INFO, "slots used=%llu of %llu stored_bytes=%llu claims=%llu members=%llu",
		 (unsigned long long)sv.slots_used, (unsigned long long)sv.slots,
		 (unsigned long long)sv.slot_stored_bytes, (unsigned long long)sv.slot_claims,
		 (unsigned long long)sv.members);
	if (!pc_tier_metrics(s, &tm))
		tool_log(PC_LOG_INFO,
			 "tier resident_committed_blocks=%u resident_disk_blocks=%u free_host_blocks=%u evicted_blocks=%llu demoted_blocks=%llu promoted_blocks=%llu dropped_blocks=%llu corrupt_on_promote=%llu spill_failures=%llu lease_expired=%llu",
			 tm.resident_committed_blocks, tm.resident_disk_blocks, tm.free_host_blocks,
			 (unsigned long long)tm.evicted_blocks, (unsigned long long)tm.demoted_blocks,
			 (unsigned long long)tm.promoted_blocks, (unsigned long long)tm.dropped_blocks,
			 (unsigned long long)tm.corrupt_on_promote,
			 (unsigned long long)tm.spill_failures, (unsigned long long)tm.lease_expired);
}

/* HOST:PORT or [IPv6]:PORT. An IPv6 address without brackets is refused: in "::1"
 * or "fd00::1:80" no colon tells the port from the address. A host that does not
 * resolve is a bad flag (exit 2), as a node's address is, not a node that cannot
 * start. */
static void parse_addr(const char *v, char *host, size_t hostlen, uint16_t *port)
{
	const char *h = v + (v[0] == '['), *end, *colon;
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM }, *res;
	size_t n;
	int ret;

	if (v[0] == '[') {
		end = strchr(v, ']');
		colon = end && end[1] == ':' ? end + 1 : NULL;
	} else {
		end = colon = strrchr(v, ':');
	}
	if (!colon || end == h || (v[0] != '[' && memchr(v, ':', (size_t)(end - v))))
		tool_die("pcd", "--metrics-addr %s: expected HOST:PORT or [IPv6]:PORT, e.g. 0.0.0.0:9100 or [::1]:9100 (PORT 0: any free port)",
			 v);
	*port = (uint16_t)tool_port("pcd", "--metrics-addr", colon + 1);
	n = (size_t)(end - h);
	if (n >= hostlen)
		tool_die("pcd", "--metrics-addr %s: host longer than %zu characters", v, hostlen - 1);
	memcpy(host, h, n);
	host[n] = 0;
	ret = getaddrinfo(host, NULL, &hints, &res);
	if (ret)
		tool_die("pcd", "--metrics-addr %s: '%s' does not resolve: %s; use a numeric address or a name in DNS or /etc/hosts",
			 v, host, gai_strerror(ret));
	freeaddrinfo(res);
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
		{ "metrics-addr", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = NULL, *node = NULL, *protocol = NULL, *metrics_addr = NULL;
	struct pc_metrics_server *msrv = NULL;
	char mhost[256];
	uint16_t mport = 0;
	char **sets = calloc((size_t)argc + 3, sizeof(char *)), err[PC_ERR_MAX], tag[96];
	char host_set[64], disk_set[64], dir_set[PC_PATH_MAX + 32];
	struct pc_store_opts o = { .size = sizeof(o), .err = err, .errlen = sizeof(err) };
	struct pc_topology *t;
	struct pc_store *s;
	struct timespec every = { 0 }, tick = { .tv_nsec = 100000000 };
	long waited = 0;
	bool drained = false;
	sigset_t sigs;
	int c, nsets = 0, sig = 0, idx, ret;

	tool_std_flags(&doc, opts, argc, argv);
	opterr = 0;	/* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, "t:n:s:p:S:H:D:d:M:h", opts, NULL)) != -1) {
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
			/* bounded: the loop below counts it in milliseconds */
			every.tv_sec = (time_t)tool_uint_max("pcd", "--stats", optarg, INT32_MAX);
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
		case 'M':
			metrics_addr = optarg;
			parse_addr(optarg, mhost, sizeof(mhost), &mport);
			break;
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
	if (idx < 0) {
		char names[512];

		tool_node_names(t, names, sizeof(names));
		tool_die("pcd", "%s: no node named '%s'; the topology's nodes are: %s", path, node, names);
	}
	snprintf(tag, sizeof(tag), "pcd %s", node);
	tool_log_to_stderr(tag);
	tool_resolve_nodes("pcd", t, idx);

	/* Signals are taken with sigwait: block them before any thread starts. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	raise_fd_limit();
	/* The endpoint first, so that /readyz says "starting" until the node serves. */
	if (!metrics_addr && t->store.metrics) {
		snprintf(mhost, sizeof(mhost), "%s", t->nodes[idx].address);
		mport = (uint16_t)t->store.metrics_port;
	}
	if ((metrics_addr || t->store.metrics) && (ret = pc_metrics_serve(NULL, mhost, mport, &msrv))) {
		tool_log(PC_LOG_ERROR, "cannot serve metrics on %s port %u: %s", mhost, mport,
			 ret == -ENOTSUP ? "this library was built without the metrics endpoint "
			 "(PC_METRICS_HTTP=OFF); build with it, or drop --metrics-addr and "
			 "store.metrics" : strerror(-ret));
		pc_topology_free(t);
		return 1;
	}
	pc_metrics_server_attach(msrv, NULL, "starting");
	o.topo = t;
	o.node = node;
	if (pc_store_open(&o, &s)) {
		tool_log(PC_LOG_ERROR, "%s", err);
		pc_metrics_server_close(msrv);
		pc_topology_free(t);
		return 1;
	}
	pc_metrics_server_attach(msrv, s, NULL);
	tool_log(PC_LOG_INFO, "serving on %s port %u%s%s; ready", t->nodes[idx].address,
		 t->nodes[idx].port, t->nodes[idx].bind_address[0] ? ", listening on " : "",
		 t->nodes[idx].bind_address);
	for (;;) {
		enum pc_member_state ms;

		sig = sigtimedwait(&sigs, NULL, &tick);
		if (sig == SIGUSR1) {
			log_metrics(s);
			continue;
		}
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
			log_metrics(s);
			waited = 0;
		}
	}
	if (drained) {
		tool_log(PC_LOG_INFO, "drained (taken out of the ring); shutting down");
	} else {
		tool_log(PC_LOG_INFO, "%s; shutting down", strsignal(sig));
		/* with heartbeats the others keep this run out once told; without, a
		 * restart under this name could not come back by itself */
		if (t->store.heartbeat_ms && pc_store_set_member(s, node, false) == 0)
			tool_log(PC_LOG_INFO, "told the cluster it leaves");
	}
	pc_metrics_server_attach(msrv, NULL, "shutting down");
	log_metrics(s);
	pc_store_close(s);
	pc_metrics_server_close(msrv);
	pc_topology_free(t);
	tool_log(PC_LOG_INFO, "stopped");
	return 0;
}
