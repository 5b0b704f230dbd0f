/*
 * pcctl_stats.c - pcctl stats: every node's counters from its metrics endpoint.
 *
 *   pcctl stats [--json] HOST:PORT ...
 *   pcctl stats [--json] --topology FILE [--set key=value ...]
 *
 * stats fetches /metrics and /readyz of each endpoint (the nodes' pcd
 * --metrics-addr, or with --topology every node's address on store.metrics_port,
 * which must then be a fixed port) and prints one row per node: readiness, what it
 * served (one-sided ops and bytes, refusals, RPCs), its slots, the hits and misses
 * of its own calls, and the peers it could not reach; --json prints every sample
 * instead, per node. An endpoint that does not answer is a row saying why, and the
 * exit code is 1; 0 when every node answered.
 *
 * Not for: membership (pcctl.c: status, drain, join). The nodes' metrics ports are
 * not in the membership view, so the list comes from the command line or the
 * topology.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pcctl_stats.h"
#include "tool/tool_common.h"

#define TIMEOUT_MS 5000
#define MAX_NODES 512


/* One sample: name, labels without the node label, value. */
struct sample {
	char *name, *labels;
	double v;
};

struct node {
	char endpoint[300];
	char name[64];
	char err[128];			/* empty when the scrape worked */
	int ready;			/* HTTP status of /readyz */
	char why[128];			/* its body */
	struct sample *s;
	size_t n, cap;
};

/* GET path from host:port over HTTP/1.0: the status, and the body in *body (malloc'd). */
static int http_get(const char *endpoint, const char *path, char **body, char *err, size_t errlen)
{
	char host[256], req[512], *buf = NULL, *colon;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	size_t len = 0, cap = 0;
	int fd = -1, status = -1, ret;

	snprintf(host, sizeof(host), "%s", endpoint);
	colon = strrchr(host, ':');
	if (!colon) {
		snprintf(err, errlen, "expected HOST:PORT");
		return -1;
	}
	*colon = 0;
	/* [::1]:9100, as pcd --metrics-addr takes an IPv6 address: the brackets
	 * are not part of the host */
	if (host[0] == '[' && colon[-1] == ']') {
		colon[-1] = 0;
		memmove(host, host + 1, strlen(host));
	}
	ret = getaddrinfo(host, colon + 1, &hints, &res);
	if (ret) {
		snprintf(err, errlen, "%s", gai_strerror(ret));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen)) {
		snprintf(err, errlen, "%s", strerror(errno));
		goto out;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, endpoint);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		snprintf(err, errlen, "%s", strerror(errno));
		goto out;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, TIMEOUT_MS) != 1) {
			snprintf(err, errlen, "no answer in %d ms", TIMEOUT_MS);
			goto out;
		}
		if (len + 65536 + 1 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 131072);

			if (!nb)
				goto out;
			buf = nb;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0) {
			snprintf(err, errlen, "%s", strerror(errno));
			goto out;
		}
		if (!r)
			break;
		len += (size_t)r;
	}
	if (buf)	/* before sscanf reads it: the bytes past len were never written */
		buf[len] = 0;
	if (!buf || sscanf(buf, "HTTP/%*s %d", &status) != 1) {
		snprintf(err, errlen, "not an HTTP answer");
		status = -1;
		goto out;
	}
	*body = strstr(buf, "\r\n\r\n") ? strdup(strstr(buf, "\r\n\r\n") + 4) : strdup("");
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return status;
}

/* Parse the exposition text: every sample line, its node label taken out. */
static void parse(struct node *nd, char *text)
{
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *brace = strchr(line, '{'), *close, *sp, *nodel;
		struct sample *s;

		if (*line == '#' || !*line)
			continue;
		close = brace ? strchr(brace, '}') : NULL;
		sp = strrchr(line, ' ');
		if (!sp)
			continue;
		if (nd->n == nd->cap) {
			struct sample *ns = realloc(nd->s, (nd->cap = nd->cap ? nd->cap * 2 : 256) *
							       sizeof(*ns));
			if (!ns)
				return;
			nd->s = ns;
		}
		s = &nd->s[nd->n++];
		s->v = strtod(sp + 1, NULL);
		s->name = strndup(line, (size_t)((brace && close ? brace : sp) - line));
		s->labels = brace && close ? strndup(brace + 1, (size_t)(close - brace - 1)) : strdup("");
		nodel = strstr(s->labels, "node=\"");
		if (nodel) {
			char *end = strchr(nodel + 6, '"');

			if (end && !nd->name[0])
				snprintf(nd->name, sizeof(nd->name), "%.*s", (int)(end - nodel - 6), nodel + 6);
			if (end)
				memmove(nodel, end[1] == ',' ? end + 2 : end + 1,
					strlen(end[1] == ',' ? end + 2 : end + 1) + 1);
		}
	}
}

static void scrape(struct node *nd)
{
	char *body = NULL;
	int st = http_get(nd->endpoint, "/metrics", &body, nd->err, sizeof(nd->err));

	if (st != 200) {
		if (st > 0)
			snprintf(nd->err, sizeof(nd->err), "/metrics: HTTP %d", st);
		free(body);
		return;
	}
	parse(nd, body);
	free(body);
	body = NULL;
	nd->ready = http_get(nd->endpoint, "/readyz", &body, nd->why, sizeof(nd->why));
	if (body) {
		snprintf(nd->why, sizeof(nd->why), "%s", body);
		nd->why[strcspn(nd->why, "\n")] = 0;
	}
	free(body);
}

/* The sum of the samples of name whose labels contain want ("" for all). */
static double sum(const struct node *nd, const char *name, const char *want)
{
	double v = 0;

	for (size_t i = 0; i < nd->n; i++)
		if (!strcmp(nd->s[i].name, name) && strstr(nd->s[i].labels, want))
			v += nd->s[i].v;
	return v;
}

/* The samples of name at 0: peer_up's are the peers this node cannot reach. A
 * count of the nodes less those up would say -1 for a pcd still starting, whose
 * endpoint has neither yet, and miscount a client, which is no node itself. */
static double zeros(const struct node *nd, const char *name)
{
	double v = 0;

	for (size_t i = 0; i < nd->n; i++)
		v += !strcmp(nd->s[i].name, name) && nd->s[i].v == 0;
	return v;
}

static void print_table(const struct node *nodes, size_t n)
{
	printf("%-10s %-5s %10s %10s %10s %10s %8s %8s %15s %10s %10s %6s\n", "node", "ready",
	       "reads", "writes", "read_MB", "write_MB", "refused", "rpcs", "slots_used", "hits",
	       "misses", "peers_down");
	for (size_t i = 0; i < n; i++) {
		const struct node *d = &nodes[i];
		double slots = sum(d, "peercache_slots", ""), used = sum(d, "peercache_slots_used", "");
		char occ[32];

		if (d->err[0]) {
			printf("%-10s %s: %s\n", d->name[0] ? d->name : "?", d->endpoint, d->err);
			continue;
		}
		snprintf(occ, sizeof(occ), "%.0f/%.0f", used, slots);
		printf("%-10s %-5s %10.0f %10.0f %10.1f %10.1f %8.0f %8.0f %15s %10.0f %10.0f %6.0f\n",
		       d->name, d->ready == 200 ? "yes" : "no",
		       sum(d, "peercache_served_ops_total", "op=\"read\""),
		       sum(d, "peercache_served_ops_total", "op=\"write\""),
		       sum(d, "peercache_served_bytes_total", "op=\"read\"") / 1e6,
		       sum(d, "peercache_served_bytes_total", "op=\"write\"") / 1e6,
		       sum(d, "peercache_refused_ops_total", ""),
		       sum(d, "peercache_served_rpcs_total", ""), occ, sum(d, "peercache_hits_total", ""),
		       sum(d, "peercache_misses_total", ""),
		       zeros(d, "peercache_peer_up"));
		if (d->ready != 200)
			printf("%-10s   not ready: %s\n", "", d->why);
	}
}

/* k="v",k2="v2" as a JSON object (label values here never hold quotes or commas). */
static json_t *labels_json(const char *labels)
{
	json_t *o = json_object();
	const char *p = labels;

	while (*p) {
		const char *eq = strchr(p, '='), *end;

		if (!eq || eq[1] != '"' || !(end = strchr(eq + 2, '"')))
			break;
		char key[64];

		snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
		json_object_set_new(o, key, json_stringn(eq + 2, (size_t)(end - eq - 2)));
		p = end[1] == ',' ? end + 2 : end + 1;
	}
	return o;
}

static void print_json(const struct node *nodes, size_t n)
{
	json_t *all = json_array();

	for (size_t i = 0; i < n; i++) {
		const struct node *d = &nodes[i];
		json_t *o = json_object(), *m = json_array();

		json_object_set_new(o, "endpoint", json_string(d->endpoint));
		json_object_set_new(o, "node", d->name[0] ? json_string(d->name) : json_null());
		if (d->err[0]) {
			json_object_set_new(o, "error", json_string(d->err));
		} else {
			json_object_set_new(o, "ready", json_boolean(d->ready == 200));
			json_object_set_new(o, "readyz", json_string(d->why));
		}
		for (size_t k = 0; k < d->n; k++)
			json_array_append_new(m, json_pack("{s:s, s:o, s:f}", "name", d->s[k].name,
							   "labels", labels_json(d->s[k].labels),
							   "value", d->s[k].v));
		json_object_set_new(o, "samples", m);
		json_array_append_new(all, o);
	}
	json_dumpf(all, stdout, JSON_INDENT(1));
	putchar('\n');
	json_decref(all);
}

int pcctl_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "topology", required_argument, NULL, 't' },
		{ "set", required_argument, NULL, 's' },
		{ 0 },
	};
	char **sets = calloc((size_t)argc + 1, sizeof(char *));
	const char *path = NULL;
	struct node *nodes;
	size_t n = 0;
	int c, nsets = 0, json = 0, bad = 0;

	opterr = 0;
	optind = 2;	/* after "pcctl stats" */
	while ((c = getopt_long(argc, argv, "jt:s:", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 't':
			path = optarg;
			break;
		case 's':
			sets[nsets++] = optarg;
			break;
		default:
			tool_die("pcctl", "%s: unknown flag or missing value; see --help", argv[optind - 1]);
		}
	}
	nodes = calloc(MAX_NODES, sizeof(*nodes));
	if (path) {
		struct pc_topology *t = tool_load_topology("pcctl", path, sets, nsets, NULL);

		if (!t->store.metrics || !t->store.metrics_port)
			tool_die("pcctl", "%s: store.metrics is off or store.metrics_port is 0 (ephemeral): "
				 "pass the nodes' HOST:PORT instead", path);
		if (topology_nr_listed(t) > MAX_NODES)
			tool_die("pcctl", "%s: %u nodes, more than the %d stats scrapes at once; pass "
				 "some nodes' HOST:PORT instead", path, topology_nr_listed(t), MAX_NODES);
		for (uint32_t i = 0; i < t->nr_nodes; i++) {
			if (!pc_node_listed(&t->nodes[i]))
				continue;
			snprintf(nodes[n].endpoint, sizeof(nodes[n].endpoint), "%s:%u",
				 t->nodes[i].address, t->store.metrics_port);
			snprintf(nodes[n].name, sizeof(nodes[n].name), "%s", t->nodes[i].name);
			n++;
		}
		pc_topology_free(t);
	}
	/* more than it can hold is said, not left out of the table */
	if (n + (size_t)(argc - optind) > MAX_NODES)
		tool_die("pcctl", "stats: %zu endpoints, more than the %d it scrapes at once; pass fewer",
			 n + (size_t)(argc - optind), MAX_NODES);
	for (; optind < argc; optind++, n++)
		snprintf(nodes[n].endpoint, sizeof(nodes[n].endpoint), "%s", argv[optind]);
	if (!n)
		tool_die("pcctl", "stats: no endpoints; pass HOST:PORT ... or --topology FILE");
	for (size_t i = 0; i < n; i++) {
		scrape(&nodes[i]);
		bad |= nodes[i].err[0] != 0;
	}
	if (json)
		print_json(nodes, n);
	else
		print_table(nodes, n);
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < nodes[i].n; k++) {
			free(nodes[i].s[k].name);
			free(nodes[i].s[k].labels);
		}
		free(nodes[i].s);
	}
	free(nodes);
	free(sets);
	return bad;
}
