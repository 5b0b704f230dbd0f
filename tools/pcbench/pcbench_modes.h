/*
 * pcbench_modes.h - pcbench --mode: the modes compared on local clusters of its own
 * (pcbench_modes.c), called by pcbench's main (pcbench.c).
 */
#ifndef PC_PCBENCH_MODES_H
#define PC_PCBENCH_MODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/topology.h"

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
