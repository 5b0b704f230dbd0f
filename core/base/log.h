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

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <peercache/peercache.h>

void pc_log(enum pc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Write one line in the format above to f, with the wall-clock time now. */
void log_write(FILE *f, enum pc_log_level level, const char *who, const char *line);

#define pc_err(...) pc_log(PC_LOG_ERROR, __VA_ARGS__)
#define pc_warn(...) pc_log(PC_LOG_WARN, __VA_ARGS__)
#define pc_info(...) pc_log(PC_LOG_INFO, __VA_ARGS__)
#define pc_dbg(...) pc_log(PC_LOG_DEBUG, __VA_ARGS__)

/*
 * Lines a peer can cause (malformed frames, refused handshakes, limit hits) are
 * rate-limited: at most LOG_LIMIT_BURST per LOG_LIMIT_NS per limiter, each saying
 * how many were left out before it. The caller passes its clock's now (the env's,
 * in core/).
 */
#define LOG_LIMIT_NS 10000000000ULL	/* 10 s */
#define LOG_LIMIT_BURST 5

struct log_limit {
	uint64_t window_ns;		/* the current window ends then */
	uint32_t lines;			/* lines let out in it */
	uint64_t skipped;		/* lines left out since the last one let out */
};

/* Whether a line may go out now; if so, *skipped gets the lines left out before it.
 * Thread-safe, approximately: a race may let one line more through or leave one out. */
bool log_limit_ok(struct log_limit *l, uint64_t now_ns, uint64_t *skipped);

#endif
