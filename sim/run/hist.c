/* hist.c - log-linear histogram: bucket (p, s) covers [2^p (1 + s/32), 2^p (1 + (s+1)/32)). */
#include <string.h>

#include "hist.h"

/* Bucket p = 0 holds 0..31 exactly; for larger v with its top bit at b, the shift
 * b - 5 keeps the top bit and the five below it: p = shift + 1, s = those five bits. */
static void where(uint64_t v, int *p, int *s)
{
	int shift;

	if (v < HIST_SUB) {
		*p = 0;
		*s = (int)v;
		return;
	}
	shift = 63 - __builtin_clzll(v) - 5;
	if (shift + 1 >= HIST_POW) {	/* beyond the range: the last bucket */
		*p = HIST_POW - 1;
		*s = HIST_SUB - 1;
		return;
	}
	*p = shift + 1;
	*s = (int)(v >> shift) & (HIST_SUB - 1);
}

static uint64_t value_of(int p, int s)
{
	if (!p)
		return (uint64_t)s;
	return ((uint64_t)(HIST_SUB + s) << (p - 1)) + ((1ULL << (p - 1)) >> 1);
}

void hist_add(struct hist *h, uint64_t v)
{
	int p, s;

	where(v, &p, &s);
	h->c[p][s]++;
	h->n++;
	h->sum += (double)v;
	if (v > h->max)
		h->max = v;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t want, seen = 0;

	if (!h->n)
		return 0;
	want = (uint64_t)(q * (double)(h->n - 1)) + 1;
	for (int p = 0; p < HIST_POW; p++)
		for (int s = 0; s < HIST_SUB; s++)
			if ((seen += h->c[p][s]) >= want) {
				uint64_t v = value_of(p, s);

				return v > h->max ? h->max : v;
			}
	return h->max;
}

void hist_merge(struct hist *into, const struct hist *from)
{
	for (int p = 0; p < HIST_POW; p++)
		for (int s = 0; s < HIST_SUB; s++)
			into->c[p][s] += from->c[p][s];
	into->n += from->n;
	into->sum += from->sum;
	if (from->max > into->max)
		into->max = from->max;
}
