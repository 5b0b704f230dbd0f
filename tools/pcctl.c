/*
 * pcctl - look at a running cluster and change its membership.
 *
 *   pcctl --discovery HOST:PORT [--timeout-ms N] status
 *   pcctl --discovery HOST:PORT [--timeout-ms N] drain NAME
 *   pcctl --discovery HOST:PORT [--timeout-ms N] join NAME
 *   pcctl stats [--json] HOST:PORT ... | --topology FILE   (pcctl_stats.c)
 *
 * HOST:PORT is any node of the cluster (store.discovery_addr). status prints one
 * line per node as that node sees it, `NAME ADDRESS:PORT up|down|left
 * incarnation=N silent_ms=N`, then the generation of its view. drain takes NAME out
 * of the ring of every node that answers, NAME's own included (a pcd then stops);
 * join puts it back. Exit code 0; 1 when the cluster cannot be reached or a node
 * did not take the change; 2 for a bad command line.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/pc_fabric.h>

#include "pcctl_stats.h"
#include "proto.h"
#include "tool/tool_common.h"

static const char usage[] =
	"usage: pcctl --discovery HOST:PORT [--timeout-ms N] status | drain NAME | join NAME\n"
	"       pcctl stats [--json] HOST:PORT ... | --topology FILE [--set key=value ...]\n";

static const char *const state_names[] = { "up", "down", "left" };

struct view {
	struct proto_view hdr;
	struct proto_view_node *nodes;
};

/* A tcp fabric of a client that reaches the nodes of text (a topology); any_node:
 * whichever node answers at an address. */
static struct pc_fabric *client_fabric(const char *text, uint32_t timeout_ms, bool any_node,
				       struct pc_topology **t)
{
	char err[PC_ERR_MAX];
	struct pc_fabric_params p = { .size = sizeof(p), .self = PC_PEER_NONE, .timeout_ms = timeout_ms,
				      .flags = any_node ? PC_FABRIC_ANY_NODE : 0 };
	struct pc_fabric *f;
	int ret;

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

/* The cluster's topology as the view lists it, in its order (node indices). */
static char *topology_of(const struct view *v)
{
	size_t cap = 128 + (size_t)v->hdr.nr * 200, len;
	char *text = malloc(cap);

	if (!text)
		tool_die("pcctl", "out of memory");
	len = (size_t)snprintf(text, cap, "name: pcctl\nnodes:\n");
	for (uint32_t i = 0; i < v->hdr.nr; i++) {
		const struct proto_view_node *n = &v->nodes[i];

		len += (size_t)snprintf(text + len, cap - len, "  - {name: \"%.*s\", address: \"%.*s\", port: %u}\n",
					(int)strnlen(n->name, sizeof(n->name)), n->name,
					(int)strnlen(n->address, sizeof(n->address)), n->address, n->port);
	}
	return text;
}

static int status(const struct view *v)
{
	for (uint32_t i = 0; i < v->hdr.nr; i++) {
		const struct proto_view_node *n = &v->nodes[i];
		const char *st = n->state < 3 ? state_names[n->state] : "?";

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

/* Tell every node the view lists that name joined or left; 0 when all that are up
 * took it. */
static int set_member(const struct view *v, const char *name, bool member, uint32_t timeout_ms)
{
	struct pc_topology *t;
	char *text = topology_of(v);
	struct pc_fabric *f = client_fabric(text, timeout_ms, false, &t);
	struct pc_rpc *rpcs = calloc(v->hdr.nr, sizeof(*rpcs));
	struct proto_member m = { .member = member };
	int idx = pc_topology_find_node(t, name), bad = 0;
	uint32_t n = 0;

	free(text);
	if (idx < 0)
		tool_die("pcctl", "no node named '%s' in the cluster; pcctl status lists them", name);
	if (!rpcs)
		tool_die("pcctl", "out of memory");
	m.node = (uint32_t)idx;
	for (uint32_t i = 0; i < v->hdr.nr; i++)
		if (v->nodes[i].state == PROTO_UP || i == (uint32_t)idx)
			rpcs[n++] = (struct pc_rpc){ .peer = i, .opcode = PC_RPC_MEMBER, .req = &m,
						     .req_len = sizeof(m) };
	pc_fabric_call(f, rpcs, n);
	for (uint32_t k = 0; k < n; k++) {
		const struct proto_view_node *e = &v->nodes[rpcs[k].peer];

		if (rpcs[k].status) {
			bad += rpcs[k].peer != (uint32_t)idx || member;
			fprintf(stderr, "pcctl: %.*s did not take it: %s\n", (int)strnlen(e->name, sizeof(e->name)),
				e->name, strerror(-rpcs[k].status));
		}
		pc_msg_free(&rpcs[k].resp);
	}
	printf("%s %s: told %u node(s), %d failed\n", name, member ? "joined" : "drained", n, bad);
	free(rpcs);
	pc_fabric_close(f);
	pc_topology_free(t);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "discovery", required_argument, NULL, 'd' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *disc = NULL, *cmd, *colon;
	uint32_t timeout_ms = 2000;
	char text[512];
	struct pc_topology *t;
	struct pc_fabric *f;
	struct view v = { 0 };
	int c, ret;

	if (argc >= 2 && !strcmp(argv[1], "stats"))
		return pcctl_stats(argc, argv);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:T:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			disc = optarg;
			break;
		case 'T':
			timeout_ms = (uint32_t)tool_uint("pcctl", "--timeout-ms", optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			tool_die("pcctl", "%s: unknown flag or missing value; see --help", argv[optind - 1]);
		}
	}
	if (!disc)
		tool_die("pcctl", "--discovery HOST:PORT is required: any node of the cluster");
	colon = strrchr(disc, ':');
	if (!colon || colon == disc || !colon[1])
		tool_die("pcctl", "--discovery %s: expected HOST:PORT, e.g. 127.0.0.1:31998", disc);
	if (optind >= argc)
		tool_die("pcctl", "no command: status, drain NAME or join NAME");
	cmd = argv[optind];
	if (strcmp(cmd, "status") && strcmp(cmd, "drain") && strcmp(cmd, "join"))
		tool_die("pcctl", "unknown command '%s': status, drain NAME or join NAME", cmd);
	if (strcmp(cmd, "status") ? optind + 2 != argc : optind + 1 != argc)
		tool_die("pcctl", "%s: wrong arguments; see --help", cmd);
	tool_log_to_stderr("pcctl");

	snprintf(text, sizeof(text), "name: pcctl\nnodes:\n  - {name: discovery, address: \"%.*s\", port: %s}\n",
		 (int)(colon - disc), disc, colon + 1);
	f = client_fabric(text, timeout_ms, true, &t);
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
		ret = set_member(&v, argv[optind + 1], !strcmp(cmd, "join"), timeout_ms);
	free(v.nodes);
	return ret;
}
