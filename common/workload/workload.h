/*
 * workload.h - what requests a simulation replays, and when they arrive.
 *
 *   zipf:keys=N,s=S,pages=P,requests=R,rate=Q
 *       each request looks up P independent pages drawn Zipf(S) over N.
 *   prefix:groups=G,prompts=P,prefix=K,suffix=M,requests=R,rate=Q[,group_s=S]
 *       SGLang's generated-shared-prefix shape: a request is a group's K shared
 *       prefix pages followed by M pages of one of the group's P prompts.
 *   mooncake:FILE[,requests=R][,rate=Q]   (or just FILE.jsonl)
 *       Mooncake trace replay (the format: trace.h); a block spans
 *       ceil(tokens / tokens_per_page) pages.
 *
 * Arrivals are Poisson at rate Q per second (zipf and prefix: WL_DEFAULT_RATE when
 * not given), or a trace's timestamps when no rate is given. prefix and mooncake requests have prefix semantics: a lookup stops at its
 * first miss, and only the prefix that hit counts as hit tokens.
 *
 * Not for: what the cluster does with a request (the simulator's run.c).
 */
#ifndef PC_WORKLOAD_H
#define PC_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/topology.h"
#include "zipf.h"

enum wl_kind { WL_ZIPF, WL_PREFIX, WL_TRACE };

/* Requests per second of a generated workload without rate=: one a serving engine's
 * front end could send, so that a spec without it runs. */
#define WL_DEFAULT_RATE 1000.0

struct wl_spec {
	enum wl_kind kind;
	uint64_t keys;
	double s;
	uint32_t pages;
	uint64_t requests;		/* 0 with a trace: all of it */
	double rate;			/* per second; 0: the trace's timestamps */
	uint32_t groups, prompts, prefix, suffix;
	double group_s;			/* Zipf over groups; 0: uniform */
	char trace[PC_PATH_MAX];
	char text[512];			/* as given, for reports */
};

struct wl_req {
	uint64_t t_ns;			/* arrival */
	uint32_t npages;
	uint64_t *pages;		/* page ids */
	uint32_t *tokens;		/* tokens per page */
	bool prefix;
};

/* Parse a spec or a trace file name. 0 or -EINVAL with a one-line error. */
int wl_parse(const char *text, struct wl_spec *out, char *err, size_t errlen);

struct wl_gen;

/* tokens_per_page comes from the topology's model (1 without one). */
int wl_open(const struct wl_spec *spec, uint64_t seed, uint32_t tokens_per_page,
	    struct wl_gen **out, char *err, size_t errlen);
void wl_close(struct wl_gen *g);
/* The next request (valid until the next call). 1, or 0 at the end. */
int wl_next(struct wl_gen *g, struct wl_req *r);

#endif
