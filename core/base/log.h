/*
 * log.h - the library's log lines. Messages go to a sink (stderr by default);
 * tools prefix them with their own tag, the simulator prefixes virtual time.
 *
 * One line format for the library's default sink and the tools' (log_write):
 *     2026-12-04T00:53:11.123Z warn pcd n1: peer n2 (127.0.0.1 port 7002) unreachable: ...
 * UTC wall-clock time to the millisecond, level, who (process or node), message.
 * Not for: metrics (see metrics in the store) or per-op tracing.
 */
#ifndef PC_LOG_H
#define PC_LOG_H

#include <stdio.h>

#include <peercache/peercache.h>

void pc_log(enum pc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Write one line in the format above to f, with the wall-clock time now. */
void log_write(FILE *f, enum pc_log_level level, const char *who, const char *line);

#define pc_err(...) pc_log(PC_LOG_ERROR, __VA_ARGS__)
#define pc_warn(...) pc_log(PC_LOG_WARN, __VA_ARGS__)
#define pc_info(...) pc_log(PC_LOG_INFO, __VA_ARGS__)
#define pc_dbg(...) pc_log(PC_LOG_DEBUG, __VA_ARGS__)

#endif
