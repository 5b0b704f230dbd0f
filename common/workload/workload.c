/*
 * workload.c - the workload generators: Zipf, shared-prefix groups, Mooncake traces
 * (read by trace.c, cut into pages here).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/keyhash.h"
#include "rng.h"
#include "trace.h"
#include "workload.h"

/* ------------------------------------------------------------------ parsing */

/* Each kind's parameters, space-separated and padded, for strstr. */
static const char *const kind_keys[] = {
	[WL_ZIPF] = " keys s pages requests rate ",
	[WL_PREFIX] = " groups prompts prefix suffix group_s requests rate ",
	[WL_TRACE] = " file requests rate ",
};
static const char *const kind_names[] = { [WL_ZIPF] = "zipf", [WL_PREFIX] = "prefix",
					  [WL_TRACE] = "mooncake" };

static int kv(const char *k, const char *v, struct wl_spec *w, char *err, size_t errlen)
{
	char *end, word[40];
	double d = strtod(v, &end);
	bool wide = !strcmp(k, "keys") || !strcmp(k, "requests");

	/* Another kind's parameter would be taken and then ignored: zipf:groups=4
	 * runs as if it were not there. */
	snprintf(word, sizeof(word), " %.30s ", k);
	if (!strstr(kind_keys[w->kind], word) && !strchr(k, ' ')) {
		for (int o = WL_ZIPF; o <= WL_TRACE; o++)
			if (strstr(kind_keys[o], word)) {
				snprintf(err, errlen,
					 "workload: %s is a parameter of %s, not of %s (%s takes %.*s)", k,
					 kind_names[o], kind_names[w->kind], kind_names[w->kind],
					 (int)strlen(kind_keys[w->kind]) - 2, kind_keys[w->kind] + 1);
				return -EINVAL;
			}
	}
	if (!*v || *end) {
		if (!strcmp(k, "file")) {
			snprintf(w->trace, sizeof(w->trace), "%s", v);
			return 0;
		}
		snprintf(err, errlen, "workload: %s=%s: expected a number", k, v);
		return -EINVAL;
	}
	if (!(d >= 0) || !isfinite(d)) {	/* nan fails d >= 0 */
		snprintf(err, errlen, "workload: %s=%s: expected a number >= 0", k, v);
		return -EINVAL;
	}
	/* The counts are whole, and must fit their fields: a cast would cut 1.5
	 * requests to 1 and 2^32 + 1 pages to 1 without a word. */
	if (wide || !strcmp(k, "pages") || !strcmp(k, "groups") || !strcmp(k, "prompts") ||
	    !strcmp(k, "prefix") || !strcmp(k, "suffix")) {
		double max = wide ? 18446744073709549568.0 : (double)UINT32_MAX;

		if (d != floor(d) || d > max) {
			snprintf(err, errlen, "workload: %s=%s: expected a whole number below %s", k, v,
				 wide ? "2^64" : "2^32");
			return -EINVAL;
		}
	}
	if (!strcmp(k, "keys"))
		w->keys = (uint64_t)d;
	else if (!strcmp(k, "s"))
		w->s = d;
	else if (!strcmp(k, "pages"))
		w->pages = (uint32_t)d;
	else if (!strcmp(k, "requests"))
		w->requests = (uint64_t)d;
	else if (!strcmp(k, "rate"))
		w->rate = d;
	else if (!strcmp(k, "groups"))
		w->groups = (uint32_t)d;
	else if (!strcmp(k, "prompts"))
		w->prompts = (uint32_t)d;
	else if (!strcmp(k, "prefix"))
		w->prefix = (uint32_t)d;
	else if (!strcmp(k, "suffix"))
		w->suffix = (uint32_t)d;
	else if (!strcmp(k, "group_s"))
		w->group_s = d;
	else {
		snprintf(err, errlen,
			 "workload: unknown parameter '%s' (zipf: keys s pages requests rate; prefix: groups prompts prefix suffix group_s requests rate; mooncake: requests rate)",
			 k);
		return -EINVAL;
	}
	return 0;
}

int wl_parse(const char *text, struct wl_spec *w, char *err, size_t errlen)
{
	char buf[512], *save, *tok, *colon;
	size_t len = strlen(text);

	memset(w, 0, sizeof(*w));
	snprintf(w->text, sizeof(w->text), "%s", text);
	w->s = 1.0;
	w->pages = 1;
	w->requests = 100000;
	if (len > 6 && !strcmp(text + len - 6, ".jsonl") && !strchr(text, ':')) {
		w->kind = WL_TRACE;
		w->requests = 0;
		snprintf(w->trace, sizeof(w->trace), "%s", text);
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", text);
	colon = strchr(buf, ':');
	if (!colon) {
		snprintf(err, errlen,
			 "workload '%s': expected zipf:..., prefix:..., mooncake:FILE or a .jsonl trace",
			 text);
		return -EINVAL;
	}
	*colon = 0;
	if (!strcmp(buf, "zipf")) {
		w->kind = WL_ZIPF;
		w->keys = 100000;
		w->rate = WL_DEFAULT_RATE;
	} else if (!strcmp(buf, "prefix")) {
		w->kind = WL_PREFIX;
		w->rate = WL_DEFAULT_RATE;
		w->groups = 16;
		w->prompts = 64;
		w->prefix = 8;
		w->suffix = 4;
	} else if (!strcmp(buf, "mooncake")) {
		w->kind = WL_TRACE;
		w->requests = 0;
	} else {
		snprintf(err, errlen, "workload '%s': unknown kind '%s'; use zipf, prefix or mooncake",
			 text, buf);
		return -EINVAL;
	}
	for (tok = strtok_r(colon + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq) {
			if (w->kind == WL_TRACE && !w->trace[0]) {
				snprintf(w->trace, sizeof(w->trace), "%s", tok);
				continue;
			}
			snprintf(err, errlen, "workload '%s': '%s' is not key=value", text, tok);
			return -EINVAL;
		}
		*eq = 0;
		if (kv(tok, eq + 1, w, err, errlen))
			return -EINVAL;
	}
	if (w->kind == WL_TRACE && !w->trace[0]) {
		snprintf(err, errlen, "workload '%s': mooncake needs a trace file", text);
		return -EINVAL;
	}
	if ((w->kind == WL_ZIPF && (!w->keys || !w->pages)) ||
	    (w->kind == WL_PREFIX && (!w->groups || !w->prompts || !(w->prefix + w->suffix)))) {
		snprintf(err, errlen, "workload '%s': keys, pages, groups, prompts and prefix+suffix must be positive",
			 text);
		return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------------ generation */

struct wl_gen {
	struct wl_spec spec;
	struct rng rng;
	uint32_t tpp;			/* tokens per page */
	struct zipf z, zg;
	uint64_t made;
	uint64_t t_ns;
	struct trace *trace;
	long long t0_ms;
	bool have_t0;
	uint64_t *pages;
	uint32_t *tokens;
	size_t cap;
};

static uint64_t rnd(struct wl_gen *g)
{
	return rng_next(&g->rng);
}

static double u01(struct wl_gen *g)
{
	return rng_u01(&g->rng);
}

static double u01_cb(void *g)
{
	return u01(g);
}

/* Page ids: a hash of what the page is, so popularity does not cluster placement. */
static uint64_t pid(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t v[3] = { a, b, c };

	return XXH3_64bits(v, sizeof(v));
}

int wl_open(const struct wl_spec *spec, uint64_t seed, uint32_t tpp, struct wl_gen **out,
	    char *err, size_t errlen)
{
	struct wl_gen *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->spec = *spec;
	g->tpp = tpp ? tpp : 1;
	rng_seed(&g->rng, seed);
	if (spec->kind == WL_ZIPF)
		zipf_init(&g->z, spec->keys, spec->s);
	if (spec->kind == WL_PREFIX && spec->group_s > 0)
		zipf_init(&g->zg, spec->groups, spec->group_s);
	if (spec->kind == WL_TRACE) {
		int ret = trace_open(spec->trace, &g->trace, err, errlen);

		if (ret) {
			free(g);
			return ret;
		}
	}
	*out = g;
	return 0;
}

void wl_close(struct wl_gen *g)
{
	if (!g)
		return;
	trace_close(g->trace);
	zipf_fini(&g->z);
	zipf_fini(&g->zg);
	free(g->pages);
	free(g->tokens);
	free(g);
}

static int reserve(struct wl_gen *g, size_t n)
{
	if (n <= g->cap)
		return 0;
	free(g->pages);
	free(g->tokens);
	g->cap = n * 2;
	g->pages = malloc(g->cap * sizeof(*g->pages));
	g->tokens = malloc(g->cap * sizeof(*g->tokens));
	return g->pages && g->tokens ? 0 : -ENOMEM;
}

/* Poisson arrivals: exponential gaps of mean 1/rate. */
static void next_arrival(struct wl_gen *g)
{
	g->t_ns += (uint64_t)(-log(1 - u01(g)) / g->spec.rate * 1e9);
}

/* The trace's next request in pages: a block spans ceil(its tokens / tpp) pages. */
static int trace_req(struct wl_gen *g, struct wl_req *r)
{
	struct trace_req q;
	size_t n, np = 0;
	int ret = trace_next(g->trace, &q);

	if (ret <= 0)
		return ret;
	n = q.nids;
	if (reserve(g, n * ((TRACE_BLOCK_TOKENS + g->tpp - 1) / g->tpp + 1)))
		return -ENOMEM;
	for (size_t b = 0; b < n; b++) {
		long long tok = b + 1 < n ? TRACE_BLOCK_TOKENS :
			       q.input_length - (long long)TRACE_BLOCK_TOKENS * (long long)(n - 1);
		uint32_t left = (uint32_t)(tok < 1 ? 1 : tok > TRACE_BLOCK_TOKENS ? TRACE_BLOCK_TOKENS : tok);

		for (uint32_t j = 0; left; j++) {
			uint32_t t = left < g->tpp ? left : g->tpp;

			g->pages[np] = pid(q.ids[b], j, 0x6d6f6f6e);
			g->tokens[np++] = t;
			left -= t;
		}
	}
	if (!g->have_t0) {
		g->t0_ms = q.timestamp_ms;
		g->have_t0 = true;
	}
	if (g->spec.rate > 0) {
		next_arrival(g);
	} else {
		/* Arrivals never go back: a request stamped before the one before it
		 * (the first's included) arrives with it, rather than wrapping the
		 * unsigned difference to centuries of virtual time. */
		uint64_t t = q.timestamp_ms > g->t0_ms ?
			     ((uint64_t)q.timestamp_ms - (uint64_t)g->t0_ms) * 1000000ULL : 0;

		if (t > g->t_ns)
			g->t_ns = t;
	}
	r->t_ns = g->t_ns;
	r->npages = (uint32_t)np;
	r->pages = g->pages;
	r->tokens = g->tokens;
	r->prefix = true;
	return 1;
}

int wl_next(struct wl_gen *g, struct wl_req *r)
{
	const struct wl_spec *s = &g->spec;

	if (s->requests && g->made >= s->requests)
		return 0;
	if (s->kind == WL_TRACE) {
		int ret = trace_req(g, r);

		g->made += ret > 0;
		return ret;
	}
	if (s->rate > 0)
		next_arrival(g);
	if (s->kind == WL_ZIPF) {
		if (reserve(g, s->pages))
			return -ENOMEM;
		zipf_draw_many(&g->z, u01_cb, g, g->pages, s->pages);
		for (uint32_t i = 0; i < s->pages; i++) {
			g->pages[i] = pid(g->pages[i], 0, 0x7a697066);
			g->tokens[i] = g->tpp;
		}
		r->npages = s->pages;
		r->prefix = false;
	} else {
		uint64_t grp = s->group_s > 0 ? zipf_draw(&g->zg, u01_cb, g) - 1 :
						 rnd(g) % s->groups;
		uint64_t prompt = rnd(g) % s->prompts;
		uint32_t n = 0;

		if (reserve(g, s->prefix + s->suffix))
			return -ENOMEM;
		for (uint32_t i = 0; i < s->prefix; i++)
			g->pages[n++] = pid(grp, i, 0x70726566);
		for (uint32_t i = 0; i < s->suffix; i++)
			g->pages[n++] = pid(grp, ((uint64_t)prompt << 32) | i, 0x73756666);
		for (uint32_t i = 0; i < n; i++)
			g->tokens[i] = g->tpp;
		r->npages = n;
		r->prefix = true;
	}
	r->t_ns = g->t_ns;
	r->pages = g->pages;
	r->tokens = g->tokens;
	g->made++;
	return 1;
}
