/*
 * zipf.h - Zipf(s) draws over [1, n] (zipf.c), for the simulator's workloads and
 * pcbench's hot-spot workload.
 */
#ifndef PC_ZIPF_H
#define PC_ZIPF_H

#include <stdint.h>

/* Zipf(s) over [1, n] by rejection-inversion (Hoermann and Derflinger 1996): O(1)
 * per draw, no tables, any n. */
struct zipf {
	uint64_t n;
	double s, h_x1, h_n, sv;
};
void zipf_init(struct zipf *z, uint64_t n, double s);
/* u() returns uniform doubles in [0, 1) from ctx's stream. */
uint64_t zipf_draw(const struct zipf *z, double (*u)(void *ctx), void *ctx);

#endif
