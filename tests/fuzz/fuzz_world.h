/*
 * fuzz_world.h - real stores for the RPC fuzzers: three nodes on the in-process
 * fabric, in slotmap mode with spill and a tiered pool, or in p2p mode.
 *
 * Not for: checking behaviour (the unit tests do); a world only has to be real.
 */
#ifndef PC_FUZZ_WORLD_H
#define PC_FUZZ_WORLD_H

#include <stdbool.h>

#include "store.h"

#define FUZZ_NODES 3

struct fuzz_world {
	struct pc_topology *topo;
	struct inproc_world *w;
	struct pc_store *s[FUZZ_NODES];
};

/* A world in p2p mode or in slotmap mode; NULL when it cannot be opened (the
 * fuzzer then stops: a harness that does not run must not pass). */
struct fuzz_world *fuzz_world_up(bool p2p);
void fuzz_world_down(struct fuzz_world *fw);

#endif
