/*
 * pcdemo - the main job: a local cluster end to end.
 *
 *   pcdemo --topology FILE [--pages N] [--page-size SIZE] [--batch N] [--protocol P]
 *          [--set key=value ...]     (e.g. --set store.mode=p2p)
 *
 * Starts one process per node of the topology (each embeds the library and serves
 * its slots, as a serving engine would), writes pages from the first node, reads
 * them back from every other node and checks each byte, asks for pages nobody
 * wrote (clean misses), prints hits, misses and throughput, and stops every
 * process it started. Exit code 0 only when every page came back byte-identical.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <xxhash.h>

#include "tool/tool_common.h"
#include "tool/tool_help.h"

#define MAX_NODES 64

static const char *const synopsis[] = {
	"--topology FILE [--pages N] [--page-size SIZE] [--batch N] [--protocol tcp|rdma|rxe]",
	" [--set key=value ...] [--free-ports]",
	NULL,
};

static const struct tool_opt options[] = {
	{ "--topology FILE", NULL, "The cluster to start, 2 to 64 nodes on this machine. Required." },
	{ "--pages N", "1024", "Pages written from the first node." },
	{ "--page-size SIZE", "the model's page, else 12288", "Bytes per page (12KiB, 1MiB ...)." },
	{ "--batch N", "64", "Pages per batch_set / batch_get call." },
	{ "--protocol tcp|rdma|rxe", "the topology's store.protocol", "The fabric." },
	{ "--set key=value", NULL,
	  "Override one topology key, e.g. store.mode=p2p; repeatable." },
	{ "--free-ports", "the topology's ports",
	  "Give every node a port the system picks, so the demo runs next to a cluster already "
	  "on the topology's ports (the tests do this)." },
	{ 0 },
};

static const struct tool_example examples[] = {
	{ "pcdemo --topology topologies/laptop.yaml", "ci/demo.sh's demo: 3 nodes over tcp on loopback" },
	{ "pcdemo --topology topologies/laptop.yaml --set store.mode=p2p",
	  "the same job in p2p mode (a directory says where pages are)" },
	{ "pcdemo --topology topologies/laptop.yaml --free-ports",
	  "the same on ports the system picks, next to a cluster already on laptop.yaml's ports" },
	{ 0 },
};

static const struct tool_doc doc = {
	.name = "pcdemo",
	.summary = "the main job end to end on a local cluster",
	.synopsis = synopsis,
	.description =
		"pcdemo starts one process per node of the topology (each embeds the library and "
		"serves its slots, as a serving engine would), writes pages from the first node, "
		"reads them back from every other node and compares every byte, asks for pages "
		"nobody wrote (each must be a clean miss), prints hits, misses and throughput per "
		"node, and stops every process it started.\n\n"
		"Misses of written pages can only come from bucket collisions (slotmap) or a full "
		"pool (p2p) and are checked against the writer's evictions.",
	.opts = options,
	.examples = examples,
	.exit_status = "0 (PASS) when every page came back byte-identical and every unwritten "
		       "key was a clean miss; 1 (FAIL) otherwise or when a node did not start; 2 "
		       "for a bad flag or topology.",
	.environment = TOOL_ENV_STORE,
	.see_also = "pcd(1), pcbench(1)",
	.needs_args = true,
};

struct report {
	int ok;				/* 0 or the error that stopped the node */
	uint64_t pages, hits, misses, bad, absent_asked, absent_clean;
	double secs;
	struct pc_metrics m;
};

struct child {
	pid_t pid;
	int cmd;			/* parent -> child */
	int res;			/* child -> parent */
};

static struct child kids[MAX_NODES];
static uint32_t nkids;

static void kill_all(void)
{
	for (uint32_t i = 0; i < nkids; i++)
		if (kids[i].pid > 0)
			kill(kids[i].pid, SIGKILL);
	for (uint32_t i = 0; i < nkids; i++)
		if (kids[i].pid > 0)
			waitpid(kids[i].pid, NULL, 0);
}

static void on_signal(int sig)
{
	(void)sig;
	kill_all();
	_exit(1);
}

static void fill(uint8_t *p, size_t len, const char *key)
{
	uint64_t x = XXH3_64bits(key, strlen(key));

	for (size_t i = 0; i < len; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		p[i] = (uint8_t)(x >> 56);
	}
}

/* Wait for one byte (a command or a "ready"), at most ms. */
static int wait_byte(int fd, int ms, char *c)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, ms) != 1)
		return -ETIMEDOUT;
	return read(fd, c, 1) == 1 ? 0 : -EPIPE;
}

static void node_main(const struct pc_topology *t, uint32_t idx, int cmd, int res,
		      size_t pages, size_t page, size_t batch)
{
	char err[PC_ERR_MAX], c, tag[96];
	struct pc_store_opts o = { .size = sizeof(o), .topo = t, .node = t->nodes[idx].name,
				   .err = err, .errlen = sizeof(err) };
	struct report r = { 0 };
	struct pc_store *s;
	uint8_t *buf = malloc(batch * page), *want = malloc(page);
	char (*keys)[64] = calloc(batch, 64);
	struct pc_page *pg = calloc(batch, sizeof(*pg));

	snprintf(tag, sizeof(tag), "pcdemo %s", t->nodes[idx].name);
	tool_log_to_stderr(tag);
	if (pc_store_open(&o, &s)) {
		fprintf(stderr, "pcdemo: %s\n", err);
		_exit(1);
	}
	if (write(res, "R", 1) != 1 || wait_byte(cmd, 60000, &c))
		_exit(1);
	if (c == 'W' || c == 'G') {
		double t0;

		for (size_t b = 0; b < pages; b += batch) {
			size_t n = pages - b < batch ? pages - b : batch;

			for (size_t i = 0; i < n; i++) {
				snprintf(keys[i], 64, "demo-page-%zu", b + i);
				pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]),
							  .data = buf + i * page, .cap = page,
							  .len = page };
				if (c == 'W')
					fill(pg[i].data, page, keys[i]);
			}
			t0 = tool_now();
			if (c == 'W')
				r.hits += (uint64_t)pc_batch_set(s, pg, n);
			else
				r.hits += (uint64_t)pc_batch_get(s, pg, n);
			r.secs += tool_now() - t0;
			r.pages += n;
			for (size_t i = 0; c == 'G' && i < n; i++) {
				if (pg[i].status) {
					r.misses++;
					continue;
				}
				fill(want, page, keys[i]);
				r.bad += pg[i].len != page || memcmp(want, pg[i].data, page);
			}
		}
		/* Pages nobody wrote: each must be a clean miss. */
		for (size_t i = 0; c == 'G' && i < batch; i++) {
			snprintf(keys[i], 64, "never-written-%zu", i);
			pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]),
						  .data = buf + i * page, .cap = page, .len = page };
		}
		if (c == 'G') {
			r.absent_asked = batch;
			pc_batch_get(s, pg, batch);
			for (size_t i = 0; i < batch; i++)
				r.absent_clean += pg[i].status == -ENOENT;
		}
		r.m.size = sizeof(r.m);
		pc_store_metrics(s, &r.m);
		if (write(res, &r, sizeof(r)) != sizeof(r))
			_exit(1);
		if (wait_byte(cmd, 60000, &c))
			_exit(1);
	}
	/* 'S': every reader is done with this node's slots. */
	pc_store_close(s);
	_exit(0);
}

static int read_report(int fd, struct report *r)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 60000) != 1)
		return -ETIMEDOUT;
	return read(fd, r, sizeof(*r)) == sizeof(*r) ? 0 : -EPIPE;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "topology", required_argument, NULL, 't' }, { "pages", required_argument, NULL, 'n' },
		{ "page-size", required_argument, NULL, 'p' }, { "batch", required_argument, NULL, 'b' },
		{ "protocol", required_argument, NULL, 'P' }, { "help", no_argument, NULL, 'h' },
		{ "set", required_argument, NULL, 's' }, { "free-ports", no_argument, NULL, 'F' },
		{ 0 },
	};
	const char *path = NULL, *protocol = NULL;
	char **sets = calloc((size_t)argc, sizeof(char *));
	int nsets = 0;
	bool free_ports = false;
	size_t pages = 1024, page = 0, batch = 64;
	struct pc_topology *t;
	struct report w, r;
	bool pass = true;
	char c;
	int opt;

	tool_std_flags(&doc, opts, argc, argv);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "t:n:p:b:P:s:h", opts, NULL)) != -1) {
		switch (opt) {
		case 't': path = optarg; break;
		case 'n': pages = tool_uint("pcdemo", "--pages", optarg); break;
		case 'p': page = tool_size("pcdemo", "--page-size", optarg); break;
		case 'b': batch = tool_uint("pcdemo", "--batch", optarg); break;
		case 'P': protocol = optarg; break;
		case 's': sets[nsets++] = optarg; break;
		case 'F': free_ports = true; break;
		default:
			tool_die("pcdemo", "%s: unknown flag or missing value; see --help", argv[optind - 1]);
		}
	}
	if (optind < argc)
		tool_die("pcdemo", "unexpected argument '%s'; see --help", argv[optind]);
	t = tool_load_topology("pcdemo", path, sets, nsets, protocol);
	free(sets);
	tool_require_listed("pcdemo", path, t);
	if (t->nr_nodes < 2 || t->nr_nodes > MAX_NODES)
		tool_die("pcdemo", "%s: the demo needs 2 to %d nodes, the topology has %u", path,
			 MAX_NODES, t->nr_nodes);
	if (free_ports)
		tool_free_ports("pcdemo", t);
	if (!page)
		page = t->model.present ? t->model.page_bytes : 12288;
	if (page > t->store.slot_max_page_bytes)
		tool_die("pcdemo", "--page-size %zu: larger than the largest size class", page);
	printf("pcdemo: %u nodes of '%s' (%s) on %s, %s mode, %zu pages of %zu B written from %s, read from the others\n",
	       t->nr_nodes, t->name, path,
	       t->store.protocol == PC_PROTO_TCP ? "tcp" : t->store.protocol == PC_PROTO_RXE ? "rxe" : "rdma",
	       t->store.mode == PC_MODE_P2P ? "p2p" : "slotmap", pages, page, t->nodes[0].name);
	fflush(stdout);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		int cmd[2], res[2];

		if (pipe(cmd) || pipe(res))
			tool_die("pcdemo", "pipe: %s", strerror(errno));
		kids[i].pid = fork();
		if (kids[i].pid == 0) {
			close(cmd[1]);
			close(res[0]);
			node_main(t, i, cmd[0], res[1], pages, page, batch);
		}
		close(cmd[0]);
		close(res[1]);
		kids[i].cmd = cmd[1];
		kids[i].res = res[0];
		nkids = i + 1;
	}
	for (uint32_t i = 0; i < nkids; i++) {
		if (wait_byte(kids[i].res, 10000, &c)) {
			fprintf(stderr, "pcdemo: node %s did not start\n", t->nodes[i].name);
			kill_all();
			return 1;
		}
	}
	if (write(kids[0].cmd, "W", 1) != 1 || read_report(kids[0].res, &w)) {
		fprintf(stderr, "pcdemo: the writer failed\n");
		kill_all();
		return 1;
	}
	printf("  %-4s wrote %llu pages in %.1f ms: %.0f pages/s, %.3f GB/s, %.1f round trips per batch, %llu stored, %llu evicted %s\n",
	       t->nodes[0].name, (unsigned long long)w.pages, w.secs * 1e3, (double)w.pages / w.secs,
	       (double)w.pages * (double)page / w.secs / 1e9,
	       (double)w.m.round_trips / (double)w.m.batches, (unsigned long long)w.hits,
	       (unsigned long long)w.m.evictions,
	       t->store.mode == PC_MODE_P2P ? "from its full pool" : "by bucket collisions");
	pass &= w.hits == w.pages;
	for (uint32_t i = 1; i < nkids; i++) {
		if (write(kids[i].cmd, "G", 1) != 1 || read_report(kids[i].res, &r)) {
			fprintf(stderr, "pcdemo: reader %s failed\n", t->nodes[i].name);
			kill_all();
			return 1;
		}
		printf("  %-4s read  %llu pages in %.1f ms: %.0f pages/s, %.3f GB/s, %llu hits, %llu misses, %llu not byte-identical; %.2f bytes read per hit byte; %llu of %llu unwritten keys were clean misses\n",
		       t->nodes[i].name, (unsigned long long)r.pages, r.secs * 1e3,
		       (double)r.pages / r.secs, (double)r.hits * (double)page / r.secs / 1e9,
		       (unsigned long long)r.hits, (unsigned long long)r.misses,
		       (unsigned long long)r.bad,
		       r.m.hit_bytes ? (double)r.m.bytes_read / (double)r.m.hit_bytes : 0.0,
		       (unsigned long long)r.absent_clean, (unsigned long long)r.absent_asked);
		pass &= r.bad == 0 && r.absent_clean == r.absent_asked && r.hits + r.misses == r.pages;
		/* Misses of written pages come only from collision evictions. */
		pass &= r.misses <= w.m.evictions;
	}
	for (uint32_t i = 0; i < nkids; i++)
		if (write(kids[i].cmd, "S", 1) != 1)
			pass = false;
	for (uint32_t i = 0; i < nkids; i++) {
		int status;

		waitpid(kids[i].pid, &status, 0);
		kids[i].pid = 0;
		pass &= WIFEXITED(status) && !WEXITSTATUS(status);
	}
	printf("pcdemo: %s; all %u node processes stopped\n", pass ? "PASS" : "FAIL", nkids);
	pc_topology_free(t);
	return pass ? 0 : 1;
}
