/*
 * log.h - the library's log lines. Messages go to a sink (stderr by default);
 * tools prefix them with their own tag, the simulator prefixes virtual time.
 * Not for: metrics (see metrics in the store) or per-op tracing.
 */
#ifndef PC_LOG_H
#define PC_LOG_H

#include <peercache/peercache.h>

void pc_log(enum pc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pc_err(...) pc_log(PC_LOG_ERROR, __VA_ARGS__)
#define pc_warn(...) pc_log(PC_LOG_WARN, __VA_ARGS__)
#define pc_info(...) pc_log(PC_LOG_INFO, __VA_ARGS__)
#define pc_dbg(...) pc_log(PC_LOG_DEBUG, __VA_ARGS__)

#endif
