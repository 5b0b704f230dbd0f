/*
 * log.c - formats a log line and hands it to the sink the application chose.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	if (log_sink)
		log_sink(log_sink_arg, level, line);
	else
		fprintf(stderr, "peercache %s: %s\n", level_names[level], line);
}
