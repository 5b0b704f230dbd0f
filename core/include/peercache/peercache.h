/*
 * peercache.h - the API applications use: a distributed KV-cache page store.
 *
 * Serving processes publish fixed-size KV pages under byte-string keys; any node
 * reads any page back with as few network round trips as the mode allows. See
 * README.md for the modes and DESIGN.md for the architecture.
 */
#ifndef PEERCACHE_H
#define PEERCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ logging */

enum pc_log_level { PC_LOG_ERROR = 0, PC_LOG_WARN = 1, PC_LOG_INFO = 2, PC_LOG_DEBUG = 3 };

/* Receives every log line (no trailing newline). May be called from any thread. */
typedef void pc_log_sink(void *arg, enum pc_log_level level, const char *line);

/* Route log lines to sink (NULL restores the default: stderr). Not thread-safe:
 * call it before opening anything. */
PC_API void pc_log_set_sink(pc_log_sink *sink, void *arg);
/* Drop lines above level. The default is PC_LOG_INFO, or $PC_LOG_LEVEL
 * (error|warn|info|debug). */
PC_API void pc_log_set_level(enum pc_log_level level);

/* The library version, "MAJOR.MINOR.PATCH". */
PC_API const char *pc_version(void);

#ifdef __cplusplus
}
#endif
#endif
