/*
 * pcctl - look at a running cluster and change its membership.
 *
 *   pcctl --discovery HOST:PORT [--secret-file F] [--timeout-ms N] status
 *   pcctl --discovery HOST:PORT [--secret-file F] [--timeout-ms N] drain NAME
 *   pcctl --discovery HOST:PORT [--secret-file F] [--timeout-ms N] join NAME
 *   pcctl stats [--json] HOST:PORT ... | --topology FILE   (pcctl_stats.c)
 *
 * HOST:PORT is any node of the cluster (store.discovery_addr). status prints one
 * line per node as that node sees it, `NAME ADDRESS:PORT up|down|left
 * incarnation=N silent_ms=N`, then the generation of its view. drain asks NAME to
 * leave: it takes itself out of its ring and tells the others (a pcd then stops;
 * one that stops before its answer arrives counts once HOST:PORT sees it left);
 * join asks it to come back. A cluster with a secret needs it (--secret-file, or
 * $PEERCACHE_SECRET_FILE). pcctl connects as a tool: it may ask for views and drain
 * or join the node it asks, nothing else. Exit code 0; 1 when the cluster or the
 * node cannot be reached or refuses; 2 for a bad command line.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <peercache/pc_fabric.h>

#include "pcctl_stats.h"
#include "proto.h"
#include "tool/tool_common.h"
#include "tool/tool_help.h"

static const char *const synopsis[] = {
	"--discovery HOST:PORT [--secret-file FILE] [--timeout-ms N] status | drain NAME | join NAME",
	"stats [--json] HOST:PORT ...",
	"stats [--json] --topology FILE [--set key=value ...]",
	NULL,
};

static const struct tool_opt options[] = {
	{ "--discovery HOST:PORT", NULL,
	  "Any node of the cluster (its address and port in the topology). Required for status, "
	  "drain and join." },
	{ "--secret-file FILE", "$PEERCACHE_SECRET_FILE, else none",
	  "The cluster secret, when the cluster has one (store.auth_secret_file)." },
	{ "--timeout-ms N", "2000", "How long to wait for the node's answer." },
	{ "--json", "a table", "stats: print every sample of every node as JSON." },
	{ "--topology FILE", NULL,
	  "stats: scrape every node of the topology on store.metrics_port (which must be fixed)." },
	{ "--set key=value", NULL, "stats: override one topology key; repeatable." },
	{ 0 },
};

static const struct tool_example examples[] = {
	{ "pcctl --discovery 127.0.0.1:31998 status",
	  "one line per node as n0 sees it: up, down or left, incarnation, silence" },
	{ "pcctl --discovery 127.0.0.1:31998 drain n2",
	  "n2 leaves every ring and its pcd stops; join n2 brings a running node back" },
	{ "pcctl stats 127.0.0.1:9101 127.0.0.1:9102", "every node's counters in a table" },
	{ 0 },
};

static const struct tool_doc doc = {
	.name = "pcctl",
	.summary = "look at a running cluster and change its membership",
	.synopsis = synopsis,
	.description =
		"status prints one line per node as the asked node sees it, 'NAME ADDRESS:PORT "
		"up|down|left incarnation=N silent_ms=N', then the generation of its view. drain "
		"asks NAME to leave: it takes itself out of its ring and tells the others (a pcd "
		"then stops; one that stops before its answer arrives counts once the asked node "
		"sees it left); join asks it to come back. pcctl connects as a tool: it may ask for "
		"views and drain or join the node it asks, nothing else.\n\n"
		"stats fetches /metrics and /readyz of each node (pcd --metrics-addr, or "
		"store.metrics) and prints one row per node: readiness, what it served, its "
		"slots, its hits and misses and the peers it could not reach "
		"(docs/observability.md).",
	.opts = options,
	.examples = examples,
	.exit_status = "0 on success; 1 when the cluster, the node or an endpoint cannot be "
		       "reached or refuses; 2 for a bad command line.",
	.environment = "PEERCACHE_SECRET_FILE: the cluster secret when --secret-file is not given.",
	.see_also = "pcd(1); docs/observability.md, docs/deployment.md",
	.needs_args = true,
};

static const char *const state_names[] = { "up", "down", "left" };

struct view {
	struct proto_view hdr;
	struct proto_view_node *nodes;
};

static const char *secret_file;

/* s inside a YAML double-quoted scalar: a quote or a backslash escaped, so that a
 * path holding one (a file may be named sec"ret or sec\x41) is read back as given,
 * not as an escape or the scalar's end. Cut at len - 1, which is more than the
 * field holds: the topology then refuses it as too long. */
static const char *yaml_quoted(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s && n + 2 < len; s++) {
		if (*s == '"' || *s == '\\')
			buf[n++] = '\\';
		buf[n++] = *s;
	}
	buf[n] = 0;
	return buf;
}

/* Whether s is a port, 1 to 65535, in digits only. */
static bool valid_port(const char *s)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return false;
	v = strtoul(s, &end, 10);
	return !*end && v && v <= 65535;
}

/* Whether [s, end) can be a host name or address: no quote, backslash, space or
 * control byte (it goes into a topology's quoted string). */
static bool valid_host(const char *s, const char *end)
{
	for (; s < end; s++)
		if ((unsigned char)*s <= ' ' || *s == '"' || *s == '\\' || *s == 0x7f)
			return false;
	return true;
}

/* A tcp fabric of a tool that reaches whichever node answers at host:port. */
static struct pc_fabric *tool_fabric(const char *host, const char *port, uint32_t timeout_ms,
				     struct pc_topology **t)
{
	char err[PC_ERR_MAX], text[3 * PC_PATH_MAX + 1024], qsecret[2 * PC_PATH_MAX], qhost[600];
	struct pc_fabric_params p = { .size = sizeof(p), .self = PC_PEER_NONE, .timeout_ms = timeout_ms,
				      .flags = PC_FABRIC_ANY_NODE };
	struct pc_fabric *f;
	int ret;

	snprintf(text, sizeof(text), "name: pcctl\nstore: {auth_secret_file: \"%s\"}\n"
		 "nodes:\n  - {name: node, address: \"%s\", port: %s}\n",
		 yaml_quoted(secret_file ? secret_file : "", qsecret, sizeof(qsecret)),
		 yaml_quoted(host, qhost, sizeof(qhost)), port);
	if (pc_topology_parse(text, strlen(text), "pcctl", t, err, sizeof(err)))
		tool_die("pcctl", "%s", err);
	p.topo = *t;
	ret = pc_fabric_open("tcp", &p, &f);
	if (ret)
		tool_die("pcctl", "cannot open a tcp client: %s", strerror(-ret));
	return f;
}

/* Ask peer of f for its whole view. 0 or -errno. */
static int ask_view(struct pc_fabric *f, uint32_t peer, struct view *v)
{
	struct proto_heartbeat hb = { .node = PC_PEER_NONE };
	struct pc_rpc r = { .peer = peer, .opcode = PC_RPC_HEARTBEAT, .req = &hb, .req_len = sizeof(hb),
			    .flags = PC_RPC_PROBE };
	int ret = pc_fabric_call(f, &r, 1);

	ret = ret ? ret : r.status;
	if (!ret && (r.resp.len < sizeof(v->hdr) ||
		     memcmp(&((const struct proto_view *)r.resp.data)->magic,
			    &(uint32_t){ PROTO_VIEW_MAGIC }, 4)))
		ret = -EPROTO;
	if (!ret) {
		memcpy(&v->hdr, r.resp.data, sizeof(v->hdr));
		if (r.resp.len != sizeof(v->hdr) + (size_t)v->hdr.nr * sizeof(*v->nodes) ||
		    v->hdr.nr != v->hdr.nr_nodes || v->hdr.self >= v->hdr.nr) {
			ret = -EPROTO;
		} else {
			v->nodes = malloc((v->hdr.nr ? v->hdr.nr : 1) * sizeof(*v->nodes));
			if (!v->nodes)
				ret = -ENOMEM;
			else
				memcpy(v->nodes, (const char *)r.resp.data + sizeof(v->hdr),
				       v->hdr.nr * sizeof(*v->nodes));
		}
	}
	pc_msg_free(&r.resp);
	return ret;
}

static int status(const struct view *v)
{
	for (uint32_t i = 0; i < v->hdr.nr; i++) {
		const struct proto_view_node *n = &v->nodes[i];
		const char *st = n->state < 3 ? state_names[n->state] : "?";

		if (!n->name[0])
			continue;	/* a vacant entry: room for a node to join */
		printf("%.*s %.*s:%u %s incarnation=%016llx", (int)strnlen(n->name, sizeof(n->name)),
		       n->name, (int)strnlen(n->address, sizeof(n->address)), n->address, n->port, st,
		       (unsigned long long)n->incarnation);
		if (n->silent_ms == UINT64_MAX)
			printf(" silent_ms=never\n");
		else
			printf(" silent_ms=%llu\n", (unsigned long long)n->silent_ms);
	}
	printf("generation %llu (as %.*s sees it)\n", (unsigned long long)v->hdr.generation,
	       (int)strnlen(v->nodes[v->hdr.self].name, sizeof(v->nodes[0].name)),
	       v->nodes[v->hdr.self].name);
	return 0;
}

/* Whether the node at `disc` (HOST, PORT) sees node index i as left, within
 * timeout_ms: a drained node may stop before its answer reaches us. */
static bool seen_left(const char *host, const char *port, uint32_t i, uint32_t timeout_ms)
{
	for (uint32_t waited = 0; waited <= timeout_ms; waited += 100) {
		struct pc_topology *t;
		struct pc_fabric *f = tool_fabric(host, port, timeout_ms, &t);
		struct view v = { .nodes = NULL };
		bool left = !ask_view(f, 0, &v) && i < v.hdr.nr && v.nodes[i].state == PROTO_LEFT;

		free(v.nodes);
		pc_fabric_close(f);
		pc_topology_free(t);
		if (left)
			return true;
		usleep(100 * 1000);
	}
	return false;
}

/* Ask node name (as the view lists it) to join or leave: it changes its own ring
 * and tells the others. A leave whose connection breaks before the answer (the node
 * drained and stopped first) counts when the node at host:port then sees it left.
 * 0, or 1 when it cannot be reached or refuses. */
static int set_member(const struct view *v, const char *name, bool member, uint32_t timeout_ms,
		      const char *host, const char *port_of_disc)
{
	const struct proto_view_node *e = NULL;
	struct proto_member m = { .member = member };
	struct pc_rpc r = { .peer = 0, .opcode = PC_RPC_MEMBER, .req = &m, .req_len = sizeof(m) };
	struct pc_topology *t;
	struct pc_fabric *f;
	char port[8];
	int ret;

	/* a vacant entry (no name, no address) is no node: "" matches none */
	for (uint32_t i = 0; i < v->hdr.nr && !e; i++)
		if (v->nodes[i].name[0] && !strncmp(v->nodes[i].name, name, sizeof(v->nodes[i].name))) {
			e = &v->nodes[i];
			m.node = i;
		}
	if (!e)
		tool_die("pcctl", "no node named '%s' in the cluster; pcctl status lists them", name);
	snprintf(port, sizeof(port), "%u", e->port);
	f = tool_fabric(e->address, port, timeout_ms, &t);
	ret = pc_fabric_call(f, &r, 1);
	ret = ret ? ret : r.status;
	pc_msg_free(&r.resp);
	pc_fabric_close(f);
	pc_topology_free(t);
	if (!member && (ret == -ECONNRESET || ret == -EPIPE || ret == -ECONNABORTED) &&
	    seen_left(host, port_of_disc, m.node, timeout_ms))
		ret = 0;
	if (ret) {
		fprintf(stderr, "pcctl: %s (%.*s:%u) did not %s: %s\n", name,
			(int)strnlen(e->address, sizeof(e->address)), e->address, e->port,
			member ? "join" : "leave", strerror(-ret));
		return 1;
	}
	printf("%s %s the ring and told the others\n", name, member ? "joined" : "left");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "discovery", required_argument, NULL, 'd' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "secret-file", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *disc = NULL, *cmd, *colon;
	uint32_t timeout_ms = 2000;
	char host[256];
	struct pc_topology *t;
	struct pc_fabric *f;
	struct view v = { 0 };
	int c, ret;

	tool_std_flags(&doc, opts, argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "stats"))
		return pcctl_stats(argc, argv);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:T:k:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			disc = optarg;
			break;
		case 'T':
			/* store.timeout_ms's range; a larger value would not fit the u32 */
			timeout_ms = (uint32_t)tool_uint_max("pcctl", "--timeout-ms", optarg, 3600000);
			break;
		case 'k':
			secret_file = optarg;
			break;
		default:
			tool_die("pcctl", "%s: unknown flag or missing value; see --help", argv[optind - 1]);
		}
	}
	if (!disc)
		tool_die("pcctl", "--discovery HOST:PORT is required: any node of the cluster");
	/* checked here, so that a bad one is named as given, not as the line of the
	 * topology tool_fabric writes for itself */
	colon = strrchr(disc, ':');
	if (!colon || colon == disc || !valid_port(colon + 1) || !valid_host(disc, colon))
		tool_die("pcctl", "--discovery %s: expected HOST:PORT with a port from 1 to 65535, e.g. 127.0.0.1:31998",
			 disc);
	if (optind >= argc)
		tool_die("pcctl", "no command: status, drain NAME or join NAME");
	cmd = argv[optind];
	if (strcmp(cmd, "status") && strcmp(cmd, "drain") && strcmp(cmd, "join"))
		tool_die("pcctl", "unknown command '%s': status, drain NAME or join NAME", cmd);
	if (strcmp(cmd, "status") ? optind + 2 != argc : optind + 1 != argc)
		tool_die("pcctl", "%s: wrong arguments; see --help", cmd);
	tool_log_to_stderr("pcctl");

	snprintf(host, sizeof(host), "%.*s", (int)(colon - disc), disc);
	f = tool_fabric(host, colon + 1, timeout_ms, &t);
	ret = ask_view(f, 0, &v);
	pc_fabric_close(f);
	pc_topology_free(t);
	if (ret) {
		fprintf(stderr, "pcctl: %s: no view: %s\n", disc, strerror(-ret));
		return 1;
	}
	if (!strcmp(cmd, "status"))
		ret = status(&v);
	else
		ret = set_member(&v, argv[optind + 1], !strcmp(cmd, "join"), timeout_ms, host, colon + 1);
	free(v.nodes);
	return ret;
}
