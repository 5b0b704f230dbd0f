/*
 * bench_ref.c - the driver every reference client runs under: the same keys,
 * pages and batches as pcbench, one untimed set pass, then timed passes of set,
 * get and exists with each batch's latency; every value read back is checked
 * (outside the timer) against the page its key names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_ref_int.h"
#include "pcbench_page.h"
#include "tool/tool_common.h"

const struct ref_client *const ref_clients[] = {
	&ref_mc_meta, &ref_mc_multiget,
#ifdef PC_HAVE_LIBMEMCACHED
	&ref_libmemcached,
#endif
	&ref_mc_naive,
	&ref_redis_resp, &ref_redis_pipeline,
#ifdef PC_HAVE_HIREDIS
	&ref_hiredis,
#endif
	&ref_redis_naive,
	NULL,
};

const char *ref_client_peer(const struct ref_client *c) { return c->peer; }
const char *ref_client_name(const struct ref_client *c) { return c->name; }
bool ref_client_is_baseline(const struct ref_client *c) { return c->baseline; }

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double ref_percentile(double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

double ref_gbps(const struct ref_op_result *r)
{
	return r->secs > 0 ? (double)r->bytes / r->secs / 1e9 : 0;
}

double ref_keys_per_s(const struct ref_op_result *r)
{
	return r->secs > 0 ? (double)r->keys / r->secs : 0;
}

enum { OP_SET, OP_GET, OP_EXISTS };

struct drive {
	const struct ref_client *c;
	const struct ref_shape *s;
	void *ctx;
	char **key;
	size_t *klen;
	uint8_t *val, *scratch;
	bool *hit;
	double *lat;
};

/* One pass of op over every key; timed when r is not NULL. */
static int pass(struct drive *d, int op, struct ref_op_result *r, size_t *nlat, uint64_t *bad)
{
	const struct ref_shape *s = d->s;

	for (size_t first = 0; first < s->nkeys; first += s->batch) {
		size_t n = s->nkeys - first < s->batch ? s->nkeys - first : s->batch;
		struct ref_batch b = { .n = n, .page = s->page, .key = d->key + first,
				       .klen = d->klen + first, .val = d->val, .hit = d->hit };
		double t0;
		int ret;

		if (op == OP_SET)
			for (size_t i = 0; i < n; i++)
				pcbench_fill(d->val + i * s->page, s->page, b.key[i]);
		else
			memset(d->hit, 0, n * sizeof(*d->hit));
		t0 = tool_now();
		ret = op == OP_SET ? d->c->set(d->ctx, &b) :
		      op == OP_GET ? d->c->get(d->ctx, &b) : d->c->exists(d->ctx, &b);
		if (ret)
			return ret;
		if (!r)
			continue;
		d->lat[*nlat] = (tool_now() - t0) * 1e6;
		r->secs += d->lat[(*nlat)++] / 1e6;
		r->keys += n;
		for (size_t i = 0; i < n; i++) {
			if (op == OP_SET) {
				r->bytes += s->page;
				continue;
			}
			r->hits += d->hit[i];
			if (op == OP_GET && d->hit[i]) {
				if (pcbench_page_ok(d->val + i * s->page, s->page, s->page, b.key[i],
						    d->scratch))
					r->bytes += s->page;
				else
					++*bad;
			}
		}
	}
	return 0;
}

static int timed(struct drive *d, int op, struct ref_op_result *r, uint64_t *bad)
{
	size_t nlat = 0;
	int ret = 0;

	int passes = op == OP_EXISTS ? ref_exists_passes(d->s->nkeys, d->s->batch, d->s->iters) :
		     d->s->iters;

	r->run = true;
	for (int it = 0; it < passes && !ret; it++)
		ret = pass(d, op, r, &nlat, bad);
	r->p50_us = ref_percentile(d->lat, nlat, 0.5);
	r->p99_us = ref_percentile(d->lat, nlat, 0.99);
	return ret;
}

int ref_run(const struct ref_client *c, const char *host, int port, const struct ref_shape *s,
	    struct ref_result *out)
{
	size_t nb = (s->nkeys + s->batch - 1) / s->batch;
	struct drive d = { .c = c, .s = s };
	const char *what = "open";
	int ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	d.key = calloc(s->nkeys, sizeof(*d.key));
	d.klen = calloc(s->nkeys, sizeof(*d.klen));
	d.val = pcbench_pages_alloc(s->batch, s->page);
	d.scratch = malloc(s->page);
	d.hit = calloc(s->batch, sizeof(*d.hit));
	d.lat = calloc(nb * (size_t)ref_exists_passes(s->nkeys, s->batch, s->iters), sizeof(*d.lat));
	if (!d.key || !d.klen || !d.val || !d.scratch || !d.hit || !d.lat)
		goto out;
	for (size_t i = 0; i < s->nkeys; i++) {
		char name[96];

		d.klen[i] = (size_t)snprintf(name, sizeof(name), "%s-%zu", s->prefix, i);
		if (!(d.key[i] = strdup(name)))
			goto out;
	}
	ret = c->open(&d.ctx, host, port, s, c->baseline ? 0 : REF_SPIN_US);
	if (ret)
		goto out;
	what = "set";
	ret = pass(&d, OP_SET, NULL, NULL, NULL);	/* the keys in place, untimed */
	if (!ret)
		ret = timed(&d, OP_SET, &out->set, &out->bad);
	if (!ret && (what = "get"))
		ret = timed(&d, OP_GET, &out->get, &out->bad);
	if (!ret && c->exists && (what = "exists"))
		ret = timed(&d, OP_EXISTS, &out->exists, &out->bad);
	c->close(d.ctx);
out:
	if (ret)
		fprintf(stderr, "pcbench: %s client '%s' at %s:%d: %s failed: %s\n", c->peer, c->name,
			host, port, what, strerror(-ret));
	for (size_t i = 0; d.key && i < s->nkeys; i++)
		free(d.key[i]);
	free(d.key);
	free(d.klen);
	free(d.val);
	free(d.scratch);
	free(d.hit);
	free(d.lat);
	return ret;
}
