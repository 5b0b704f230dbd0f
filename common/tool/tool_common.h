/*
 * tool_common.h - what the command-line tools share: loading a topology with
 * --set overrides, one-line usage errors (exit code 2), a log sink with the tool's
 * tag and wall-clock time, and small parsers.
 */
#ifndef PC_TOOL_COMMON_H
#define PC_TOOL_COMMON_H

#include <stdbool.h>
#include <stddef.h>
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

/* The topology's node names, comma-separated, into buf ("n0, n1, n2"; "n0, ... (512
 * nodes)" when they do not fit). */
void tool_node_names(const struct pc_topology *t, char *buf, size_t len);

/* Resolve every node's address and bind_address (getaddrinfo). A name that does not
 * resolve is one line naming the file, line and node: fatal (exit 2) for the node
 * at index self, or for every node when self is -1; a warning for the others.
 * Returns the number of names that did not resolve. */
int tool_resolve_nodes(const char *tool, const struct pc_topology *t, int self);

/* Give every node of t a tcp port that is free on its address now (the system picks
 * them; all are held until every node has one, so they differ), for a local cluster
 * that must not collide with one already running on the topology's ports. Dies with
 * one line when a port cannot be had. */
void tool_free_ports(const char *tool, struct pc_topology *t);

/* Find a data file shipped with the programs, rel being "topologies/rack.yaml" or
 * "plots/hitrate.gp": with cwd, rel under the working directory first; then under
 * <the binary's directory>/../share/peercache/, which is where `cmake --install` puts
 * them and where the build tree mirrors them (no source path is baked in). 0 with the
 * path in buf, or -ENOENT. */
int tool_data_file(const char *rel, bool cwd, char *buf, size_t len);

/* Route library log lines to stderr in the library's line format (base/log.h),
 * with tag (e.g. "pcd n0") as who. */
void tool_log_to_stderr(const char *tag);
/* One line of the tool's own in the same format, whatever PC_LOG_LEVEL says. */
void tool_log(enum pc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "12KiB" etc. into bytes; dies naming the flag on error. */
uint64_t tool_size(const char *tool, const char *flag, const char *value);
/* A positive integer; dies naming the flag on error. */
uint64_t tool_uint(const char *tool, const char *flag, const char *value);
/* The same, at most max: for a flag kept in a narrower type, or one a larger
 * value would overflow further on. */
uint64_t tool_uint_max(const char *tool, const char *flag, const char *value, uint64_t max);

/* A non-negative integer (0 allowed); dies naming the flag on error. */
uint64_t tool_count(const char *tool, const char *flag, const char *value);

/* A port number, 0 to 65535 (0: the system picks); dies naming the flag on error. */
uint16_t tool_port(const char *tool, const char *flag, const char *value);

/* Seconds on the monotonic clock, for timing in tools. */
double tool_now(void);

#endif
