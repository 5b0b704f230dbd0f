/*
 * tool_common.c - shared helpers of the command-line programs (tools/ and the
 * simulator's pcsim and pcsimbench).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "base/log.h"
#include "config/topology_fields.h"
#include "tool_common.h"

void tool_die(const char *tool, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

struct pc_topology *tool_load_topology(const char *tool, const char *path, char **sets, int nsets,
				       const char *protocol)
{
	char err[PC_ERR_MAX], assign[64];
	struct pc_topology *t;

	if (!path)
		tool_die(tool, "--topology FILE is required (try topologies/laptop.yaml)");
	if (pc_topology_load(path, &t, err, sizeof(err)))
		tool_die(tool, "%s", err);
	for (int i = 0; i < nsets; i++)
		if (pc_topology_set(t, sets[i], err, sizeof(err)))
			tool_die(tool, "%s", err);
	if (protocol) {
		snprintf(assign, sizeof(assign), "store.protocol=%s", protocol);
		if (pc_topology_set(t, assign, err, sizeof(err)))
			tool_die(tool, "--protocol %s: expected tcp, rdma or rxe", protocol);
	}
	return t;
}

void tool_node_names(const struct pc_topology *t, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		size_t w = strlen(t->nodes[i].name) + (i ? 2 : 0);

		if (n + w + 24 >= len) {
			snprintf(buf + n, len - n, ", ... (%u nodes)", t->nr_nodes);
			return;
		}
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", t->nodes[i].name);
	}
}

static int resolve(const char *tool, const struct pc_topology *t, uint32_t i, const char *key,
		   const char *host, bool fatal)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int ret = getaddrinfo(host, NULL, &hints, &res);

	if (!ret) {
		freeaddrinfo(res);
		return 0;
	}
	if (fatal)
		tool_die(tool, "%s:%d: nodes[%u] (%s).%s: '%s' does not resolve: %s; use a numeric address or a name in DNS or /etc/hosts",
			 t->source, t->nodes[i].mark.line, i, t->nodes[i].name, key, host,
			 gai_strerror(ret));
	tool_log(PC_LOG_WARN, "%s:%d: nodes[%u] (%s).%s: '%s' does not resolve (yet): %s",
		 t->source, t->nodes[i].mark.line, i, t->nodes[i].name, key, host, gai_strerror(ret));
	return 1;
}

int tool_resolve_nodes(const char *tool, const struct pc_topology *t, int self)
{
	int bad = 0;

	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		bool fatal = self < 0 || (uint32_t)self == i;

		/* A vacant entry (store.max_nodes) has no address until a node joins. */
		if (!pc_node_listed(&t->nodes[i]))
			continue;
		bad += resolve(tool, t, i, "address", t->nodes[i].address, fatal);
		if (t->nodes[i].bind_address[0])
			bad += resolve(tool, t, i, "bind_address", t->nodes[i].bind_address, fatal);
	}
	return bad;
}

void tool_free_ports(const char *tool, struct pc_topology *t)
{
	int *fds = calloc(t->nr_nodes, sizeof(*fds));

	if (!fds)
		tool_die(tool, "--free-ports: out of memory");
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV },
				*res;
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		const char *host = t->nodes[i].bind_address[0] ? t->nodes[i].bind_address :
								 t->nodes[i].address;
		int ret = getaddrinfo(host, "0", &hints, &res);

		if (ret)
			tool_die(tool, "--free-ports: node %s: '%s': %s", t->nodes[i].name, host,
				 gai_strerror(ret));
		fds[i] = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fds[i] < 0 || bind(fds[i], res->ai_addr, res->ai_addrlen) ||
		    getsockname(fds[i], (struct sockaddr *)&ss, &len))
			tool_die(tool, "--free-ports: node %s: no free port on %s: %s", t->nodes[i].name,
				 host, strerror(errno));
		freeaddrinfo(res);
		t->nodes[i].port = ntohs(ss.ss_family == AF_INET6 ?
					 ((struct sockaddr_in6 *)&ss)->sin6_port :
					 ((struct sockaddr_in *)&ss)->sin_port);
	}
	for (uint32_t i = 0; i < t->nr_nodes; i++)
		close(fds[i]);
	free(fds);
}

int tool_data_file(const char *rel, bool cwd, char *buf, size_t len)
{
	char exe[4096];
	ssize_t n;
	char *slash;

	if (cwd && !access(rel, R_OK) && snprintf(buf, len, "%s", rel) < (int)len)
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	if (snprintf(buf, len, "%s/../share/peercache/%s", exe, rel) >= (int)len || access(buf, R_OK))
		return -ENOENT;
	return 0;
}

static char log_tag[96] = "tool";

static void stderr_sink(void *arg, enum pc_log_level level, const char *line)
{
	log_write(stderr, level, (const char *)arg, line);
}

void tool_log_to_stderr(const char *tag)
{
	snprintf(log_tag, sizeof(log_tag), "%s", tag);
	pc_log_set_sink(stderr_sink, log_tag);
}

void tool_log(enum pc_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_write(stderr, level, log_tag, line);
}

uint64_t tool_size(const char *tool, const char *flag, const char *value)
{
	uint64_t v;

	if (pc_parse_size(value, &v) || !v)
		tool_die(tool, "%s %s: expected a size such as 12288, 12KiB or 1MiB", flag, value);
	if (size_is_decimal(value))
		tool_log(PC_LOG_WARN, "%s %s is decimal, %llu bytes; write %.*siB for the binary size",
			 flag, value, (unsigned long long)v, (int)strlen(value) - 1, value);
	return v;
}

/* value as digits only, into *v: 0, or -EINVAL. strtoull alone would skip leading
 * spaces and take a sign (" -1" is 2^64 - 1) and saturate past 2^64 - 1. */
static int digits(const char *value, unsigned long long *v)
{
	char *end;

	if (*value < '0' || *value > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(value, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

uint64_t tool_uint(const char *tool, const char *flag, const char *value)
{
	return tool_uint_max(tool, flag, value, UINT64_MAX);
}

uint64_t tool_uint_max(const char *tool, const char *flag, const char *value, uint64_t max)
{
	unsigned long long v;

	if (digits(value, &v) || !v || v > max) {
		if (max == UINT64_MAX)
			tool_die(tool, "%s %s: expected a positive integer", flag, value);
		tool_die(tool, "%s %s: expected an integer from 1 to %llu", flag, value,
			 (unsigned long long)max);
	}
	return v;
}

uint64_t tool_count(const char *tool, const char *flag, const char *value)
{
	unsigned long long v;

	if (digits(value, &v))
		tool_die(tool, "%s %s: expected a whole number (0 or more)", flag, value);
	return v;
}

uint16_t tool_port(const char *tool, const char *flag, const char *value)
{
	unsigned long long v;

	if (digits(value, &v) || v > 65535)
		tool_die(tool, "%s %s: expected a port number 0-65535 (0: any free port)", flag, value);
	return (uint16_t)v;
}

double tool_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void tool_require_listed(const char *tool, const char *path, const struct pc_topology *t)
{
	if (topology_nr_listed(t) != t->nr_nodes)
		tool_die(tool, "%s: store.max_nodes=%u leaves room for nodes that join a running cluster; %s runs the %u nodes listed only: drop store.max_nodes",
			 path, t->store.max_nodes, tool, topology_nr_listed(t));
}
