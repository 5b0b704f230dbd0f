/*
 * trace.h - the Mooncake trace format: one JSON object per line with timestamp
 * (ms), input_length (tokens), output_length and hash_ids, one id per block of
 * TRACE_BLOCK_TOKENS tokens, the last block partial.
 *
 * Not for: turning blocks into pages or arrival times (workload.c).
 */
#ifndef PC_WORKLOAD_TRACE_H
#define PC_WORKLOAD_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_BLOCK_TOKENS 512	/* a Mooncake hash id covers this many tokens */
/* The latest timestamp: a run's clock counts nanoseconds in 64 bits. */
#define TRACE_MAX_MS (UINT64_MAX / 1000000)

struct trace;

struct trace_req {
	long long timestamp_ms;		/* 0 to TRACE_MAX_MS */
	long long input_length;		/* > 0 */
	size_t nids;			/* > 0 */
	const uint64_t *ids;		/* the hash ids, valid until the next call */
};

/* 0, or -ENOENT with a one-line error naming the file. */
int trace_open(const char *path, struct trace **out, char *err, size_t errlen);
void trace_close(struct trace *t);
/* The next request of the trace. Lines that do not parse, requests without
 * blocks or input tokens, and those whose timestamp or a hash id is not an
 * integer, or whose timestamp is outside 0..TRACE_MAX_MS, are skipped. 1, 0 at the end, or -ENOMEM. */
int trace_next(struct trace *t, struct trace_req *r);
/* One line of a trace (len bytes, no NUL needed): 1 and *r when it is a request
 * (r->ids points into *ids, grown as needed, *cap entries; the caller frees it),
 * 0 when the line is skipped, -ENOMEM. Pure: the fuzzers call it alone. */
int trace_parse_line(const char *line, size_t len, struct trace_req *r, uint64_t **ids,
		     size_t *cap);

/* Read the whole trace at path: *good lines that are requests, *bad lines that are
 * neither blank nor requests, and "line N: why" for the first few bad ones in why
 * ("; "-separated). 0, or -ENOENT / -ENOMEM with a one-line error. */
int trace_check(const char *path, uint64_t *good, uint64_t *bad, char *why, size_t whylen,
		char *err, size_t errlen);

#endif
