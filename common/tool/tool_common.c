/*
 * tool_common.c - shared helpers of the command-line programs (tools/ and the
 * simulator's pcsim and pcsimbench).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "base/log.h"
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
	return v;
}

uint64_t tool_uint(const char *tool, const char *flag, const char *value)
{
	char *end;
	unsigned long long v = strtoull(value, &end, 10);

	if (!*value || *end || !v || value[0] == '-')
		tool_die(tool, "%s %s: expected a positive integer", flag, value);
	return v;
}

uint16_t tool_port(const char *tool, const char *flag, const char *value)
{
	char *end;
	unsigned long v = strtoul(value, &end, 10);

	if (!*value || *end || v > 65535 || value[0] == '-')
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
