/*
 * hist.h - a log-linear latency histogram (HDR style): 32 sub-buckets per power of
 * two, so any percentile comes out within about 3% of the true value, in constant
 * memory whatever the number of samples.
 */
#ifndef PC_SIM_HIST_H
#define PC_SIM_HIST_H

#include <stdint.h>

#define HIST_SUB 32
#define HIST_POW 48

struct hist {
	uint64_t n;
	double sum;
	uint64_t max;
	uint64_t c[HIST_POW][HIST_SUB];
};

void hist_add(struct hist *h, uint64_t v);
/* The value at quantile q in [0, 1]; 0 when empty. */
uint64_t hist_quantile(const struct hist *h, double q);
void hist_merge(struct hist *into, const struct hist *from);

#endif
