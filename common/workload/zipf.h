/*
 * zipf.h - Zipf(s) draws over [1, n] (zipf.c), for the simulator's workloads and
 * pcbench's hot-spot workload.
 */
#ifndef PC_WORKLOAD_ZIPF_H
#define PC_WORKLOAD_ZIPF_H

#include <stdint.h>

/* Zipf(s) over [1, n]. Up to ZIPF_TABLE_MAX keys a draw is one look-up in an alias
 * table (Walker/Vose: 8 bytes a key, built by zipf_init); above that, or when the
 * table cannot be had, rejection-inversion (Hoermann and Derflinger 1996), O(1)
 * without a table but a few logarithms and exponentials a draw. */
#define ZIPF_TABLE_MAX (1u << 22)

/* An alias table's column k (of n, each drawn with probability 1/n): key k + 1 with
 * probability keep / 2^32, else key alias + 1. */
struct zipf_alias {
	uint32_t keep;
	uint32_t alias;
};

struct zipf {
	uint64_t n;
	double s, h_x1, h_n, sv;
	struct zipf_alias *alias;	/* n entries, or NULL */
};
/* 0, or -ENOMEM when the table was wanted and cannot be had (the draws are then
 * by rejection-inversion, still correct). */
int zipf_init(struct zipf *z, uint64_t n, double s);
void zipf_fini(struct zipf *z);
/* u() returns uniform doubles in [0, 1) from ctx's stream; one call per draw with a
 * table, one or more without. */
uint64_t zipf_draw(const struct zipf *z, double (*u)(void *ctx), void *ctx);
/* n draws into out[], the same as n zipf_draw calls, faster from a table. */
void zipf_draw_many(const struct zipf *z, double (*u)(void *ctx), void *ctx, uint64_t *out,
		    uint32_t n);

#endif
