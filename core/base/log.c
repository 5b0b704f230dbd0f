/*
 * log.c - formats a log line and hands it to the sink the application chose; a
 * line is always one line (control bytes in it become '?').
 *
 * The line's timestamp is the one read of the real clock in core/: it is for people
 * correlating lines across processes, nothing decides by it, and the simulator
 * installs a sink of its own (virtual time).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static pc_log_sink *log_sink;
static void *log_sink_arg;
static int log_level = -1;	/* -1: not read from PC_LOG_LEVEL yet */

static const char *const level_names[] = { "error", "warn", "info", "debug" };

static int level_from_env(void)
{
	const char *e = getenv("PC_LOG_LEVEL");

	if (e)
		for (int i = 0; i < 4; i++)
			if (!strcmp(e, level_names[i]))
				return i;
	return PC_LOG_INFO;
}

void pc_log_set_sink(pc_log_sink *sink, void *arg)
{
	log_sink = sink;
	log_sink_arg = arg;
}

void pc_log_set_level(enum pc_log_level level)
{
	__atomic_store_n(&log_level, (int)level, __ATOMIC_RELAXED);
}

void pc_log(enum pc_log_level level, const char *fmt, ...)
{
	int cur = __atomic_load_n(&log_level, __ATOMIC_RELAXED);
	char line[1024];
	va_list ap;

	if (cur < 0) {
		cur = level_from_env();
		__atomic_store_n(&log_level, cur, __ATOMIC_RELAXED);
	}
	if ((int)level > cur)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One line, whatever a peer put in the names and text it sent: a control byte
	 * (a newline) in them would otherwise forge lines of its own. */
	for (char *c = line; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	if (log_sink) {
		log_sink(log_sink_arg, level, line);
	} else {
		char who[32];

		snprintf(who, sizeof(who), "peercache[%d]", (int)getpid());
		log_write(stderr, level, who, line);
	}
}

void log_write(FILE *f, enum pc_log_level level, const char *who, const char *line)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(f, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s: %s\n", tm.tm_year + 1900,
		tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
		level_names[level & 3], who, line);
}

bool log_limit_ok(struct log_limit *l, uint64_t now_ns, uint64_t *skipped)
{
	uint64_t end = __atomic_load_n(&l->window_ns, __ATOMIC_RELAXED);

	if (now_ns >= end &&
	    __atomic_compare_exchange_n(&l->window_ns, &end, now_ns + LOG_LIMIT_NS, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		__atomic_store_n(&l->lines, 0, __ATOMIC_RELAXED);
	if (__atomic_fetch_add(&l->lines, 1, __ATOMIC_RELAXED) >= LOG_LIMIT_BURST) {
		__atomic_add_fetch(&l->skipped, 1, __ATOMIC_RELAXED);
		return false;
	}
	*skipped = __atomic_exchange_n(&l->skipped, 0, __ATOMIC_RELAXED);
	return true;
}
