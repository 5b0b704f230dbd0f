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

static void stderr_sink(void *arg, enum pc_log_level level, const char *line)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	struct timeval tv;
	struct tm tm;

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	fprintf(stderr, "%02d:%02d:%02d.%03ld %s: %s: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
		(long)tv.tv_usec / 1000, (const char *)arg, names[level], line);
}

void tool_log_to_stderr(const char *tag)
{
	static char buf[96];

	snprintf(buf, sizeof(buf), "%s", tag);
	pc_log_set_sink(stderr_sink, buf);
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

double tool_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
