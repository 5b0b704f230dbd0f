/*
 * pcbench.h - what pcbench.c (a running cluster) and pcbench_modes.c (--mode: its
 * own local cluster per mode) share.
 */
#ifndef PC_PCBENCH_H
#define PC_PCBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_topology.h>

/* The page pcbench writes for key: deterministic, so any reader can check it. */
void pcbench_fill(uint8_t *p, size_t len, const char *key);

struct pcbench_modes {
	const struct pc_topology *t;	/* ports and sizes; its mode is overridden */
	bool slotmap, p2p;		/* which modes to run */
	size_t page, batch;
	size_t keys;			/* speed phase; 0: a quarter of the capacity */
	int iters;			/* speed phase: get passes over the keys */
	double zipf_s;			/* the hot-spot workload's exponent */
	bool verify;
	uint64_t seed;
};

/* Run the comparison and print it. 0, or 1 when a page read back was wrong. */
int pcbench_run_modes(const struct pcbench_modes *a);

#endif
