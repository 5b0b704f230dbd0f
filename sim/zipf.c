/*
 * zipf.c - Zipf(s) draws over [1, n] by rejection-inversion (Hoermann and Derflinger,
 * "Rejection-inversion to generate variates from monotone discrete distributions",
 * 1996): O(1) per draw, no tables, any n. The simulator's workloads and pcbench's
 * hot-spot workload use it.
 */
#include <math.h>

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

void zipf_init(struct zipf *z, uint64_t n, double s)
{
	z->n = n;
	z->s = s;
	z->h_x1 = zh(z, 1.5) - 1.0;
	z->h_n = zh(z, (double)n + 0.5);
	z->sv = 2 - zh_inv(z, zh(z, 2.5) - zhh(z, 2));
}

uint64_t zipf_draw(const struct zipf *z, double (*rand01)(void *ctx), void *ctx)
{
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
