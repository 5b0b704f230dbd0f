/*
 * tool_common.h - what the command-line tools share: loading a topology with
 * --set overrides, one-line usage errors (exit code 2), a log sink with the tool's
 * tag and wall-clock time, and small parsers.
 */
#ifndef PC_TOOL_COMMON_H
#define PC_TOOL_COMMON_H

#include <stdint.h>

#include <peercache/peercache.h>

#include "config/topology.h"

/* Print "tool: message" and exit with code 2 (a usage or configuration error). */
void tool_die(const char *tool, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* Load path, apply each "key=value" of sets[0..nsets), and the protocol override
 * (NULL: none). Dies with a one-line error on any mistake. */
struct pc_topology *tool_load_topology(const char *tool, const char *path, char **sets, int nsets,
				       const char *protocol);

/* Die unless every entry of t's node table holds a listed node: for tools that
 * start or simulate every node themselves (store.max_nodes leaves room for nodes
 * that join a running cluster, which they do not). */
void tool_require_listed(const char *tool, const char *path, const struct pc_topology *t);

/* Route library log lines to stderr in the library's line format (base/log.h),
 * with tag (e.g. "pcd n0") as who. */
void tool_log_to_stderr(const char *tag);
/* One line of the tool's own in the same format, whatever PC_LOG_LEVEL says. */
void tool_log(enum pc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "12KiB" etc. into bytes; dies naming the flag on error. */
uint64_t tool_size(const char *tool, const char *flag, const char *value);
/* A positive integer; dies naming the flag on error. */
uint64_t tool_uint(const char *tool, const char *flag, const char *value);

/* A port number, 0 to 65535 (0: the system picks); dies naming the flag on error. */
uint16_t tool_port(const char *tool, const char *flag, const char *value);

/* Seconds on the monotonic clock, for timing in tools. */
double tool_now(void);

#endif
