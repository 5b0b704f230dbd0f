/*
 * zipf.c - Zipf(s) draws over [1, n]: an alias table (Walker 1977, built as Vose
 * 1991 does) up to ZIPF_TABLE_MAX keys, one uniform and one table entry a draw; above
 * that rejection-inversion (Hoermann and Derflinger, "Rejection-inversion to generate
 * variates from monotone discrete distributions", 1996): O(1) per draw, no tables,
 * any n, but a few logarithms and exponentials a draw where the table takes one
 * look-up. The simulator's workloads and pcbench's hot-spot workload use it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zipf.h"

static double helper1(double x)	/* log1p(x) / x */
{
	return fabs(x) > 1e-8 ? log1p(x) / x : 1 - x / 2 + x * x / 3;
}

static double helper2(double x)	/* expm1(x) / x */
{
	return fabs(x) > 1e-8 ? expm1(x) / x : 1 + x / 2 + x * x / 6;
}

static double zh(const struct zipf *z, double x)	/* H(x), integral of x^-s */
{
	double lx = log(x);

	return helper2((1 - z->s) * lx) * lx;
}

static double zh_inv(const struct zipf *z, double x)
{
	double t = x * (1 - z->s);

	if (t < -1)
		t = -1;
	return exp(helper1(t) * x);
}

static double zhh(const struct zipf *z, double x)	/* h(x) = x^-s */
{
	return exp(-z->s * log(x));
}

/* Vose's construction: scaled probabilities n p_i, split into small (< 1) and large;
 * each small entry is topped up from a large one, which becomes its alias. */
static struct zipf_alias *build_alias(uint64_t n, double s)
{
	struct zipf_alias *t = malloc(n * sizeof(*t));
	double *q = malloc(n * sizeof(*q)), sum = 0;
	uint32_t *small = malloc(n * sizeof(*small)), *large = malloc(n * sizeof(*large));
	size_t ns = 0, nl = 0;

	if (!t || !q || !small || !large) {
		free(t);
		t = NULL;
		goto out;
	}
	for (uint64_t i = 0; i < n; i++)
		sum += q[i] = pow((double)(i + 1), -s);
	for (uint64_t i = 0; i < n; i++) {
		q[i] *= (double)n / sum;
		if (q[i] < 1)
			small[ns++] = (uint32_t)i;
		else
			large[nl++] = (uint32_t)i;
	}
	while (ns && nl) {
		uint32_t a = small[--ns], b = large[nl - 1];

		t[a].keep = (uint32_t)(q[a] * 0x1p32);
		t[a].alias = b;
		q[b] -= 1 - q[a];
		if (q[b] < 1) {
			nl--;
			small[ns++] = b;
		}
	}
	/* What is left is 1 up to rounding: always kept. */
	while (nl) {
		t[large[--nl]].keep = UINT32_MAX;
		t[large[nl]].alias = large[nl];
	}
	while (ns) {
		t[small[--ns]].keep = UINT32_MAX;
		t[small[ns]].alias = small[ns];
	}
out:
	free(q);
	free(small);
	free(large);
	return t;
}

int zipf_init(struct zipf *z, uint64_t n, double s)
{
	z->n = n;
	z->s = s;
	z->h_x1 = zh(z, 1.5) - 1.0;
	z->h_n = zh(z, (double)n + 0.5);
	z->sv = 2 - zh_inv(z, zh(z, 2.5) - zhh(z, 2));
	z->alias = NULL;
	if (n && n <= ZIPF_TABLE_MAX) {
		z->alias = build_alias(n, s);
		if (!z->alias)
			return -ENOMEM;
	}
	return 0;
}

void zipf_fini(struct zipf *z)
{
	free(z->alias);
	z->alias = NULL;
}

uint64_t zipf_draw(const struct zipf *z, double (*rand01)(void *ctx), void *ctx)
{
	if (z->alias) {
		uint64_t k;

		zipf_draw_many(z, rand01, ctx, &k, 1);
		return k;
	}
	for (;;) {
		double u = z->h_n + rand01(ctx) * (z->h_x1 - z->h_n), x = zh_inv(z, u);
		uint64_t k = (uint64_t)(x + 0.5);

		if (k < 1)
			k = 1;
		else if (k > z->n)
			k = z->n;
		/* accept: inside the hat's exact part, or under the density */
		if ((double)k - x <= z->sv || u >= zh(z, (double)k + 0.5) - zhh(z, (double)k))
			return k;
	}
}

void zipf_draw_many(const struct zipf *z, double (*rand01)(void *ctx), void *ctx, uint64_t *out,
		    uint32_t n)
{
	if (!z->alias) {
		for (uint32_t i = 0; i < n; i++)
			out[i] = zipf_draw(z, rand01, ctx);
		return;
	}
	/* Two sweeps, the first prefetching the entries the second reads: a table
	 * past L2 costs a miss a draw, and misses in one sweep overlap. */
	for (uint32_t i = 0; i < n; i++) {
		double x = rand01(ctx) * (double)z->n;
		uint64_t k = (uint64_t)x;

		if (k >= z->n)
			k = z->n - 1;
		__builtin_prefetch(&z->alias[k]);
		memcpy(&out[i], &x, sizeof(x));	/* the draw, in the slot its key goes to */
	}
	for (uint32_t i = 0; i < n; i++) {
		double x;
		uint64_t k;

		memcpy(&x, &out[i], sizeof(x));
		k = (uint64_t)x;
		const struct zipf_alias *e;

		if (k >= z->n)
			k = z->n - 1;
		e = &z->alias[k];
		out[i] = ((uint32_t)((x - (double)k) * 0x1p32) < e->keep ? k : e->alias) + 1;
	}
}
