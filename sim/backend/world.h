/*
 * world.h - one simulated cluster: the engine, the network and NVMe models, the
 * nodes' memory (an in-process fabric world, so region checks and one-sided ops are
 * the library's own), and per-node envs. The library's stores run on it through
 * three ops tables: sim_env_ops (env.c), sim_fabric_ops (fabric.c) and
 * sim_storage_ops (storage.c); world.c builds it.
 *
 * Without timing (hit-rate-only mode) ops complete at once and time moves only with
 * arrivals; with timing every fabric, storage and copy cost is modelled.
 */
#ifndef PC_SIM_WORLD_H
#define PC_SIM_WORLD_H

#include <peercache/pc_env.h>
#include <peercache/pc_fabric.h>
#include <peercache/pc_storage.h>

#include "engine/engine.h"
#include "models/nic.h"
#include "models/nvme.h"

struct inproc_world;

struct sim_env {
	struct pc_env base;
	struct sim_world *w;
	uint32_t node;
	double copy_rate;		/* bytes per ns of a local memcpy */
	double jitter;			/* nodes.jitter: the spread of its waits */
	uint64_t wake_ns, idle_ns;	/* nodes.wake_us, nodes.idle_us */
	uint64_t nap_ns, nap_idle_ns;	/* nodes.nap_us, nodes.nap_idle_us */
	uint64_t busy_at;		/* when it last ran or moved bytes: idle since */
};

struct sim_world {
	struct sim *s;
	const struct pc_topology *topo;
	bool timing;
	bool keep_data;			/* storage keeps block bytes (not payload-free) */
	struct sim_net *net;
	struct sim_nvme **nvme;		/* per node; NULL without NVMe; one for the nodes
					 * at one address that spill to one directory */
	struct inproc_world *mem;
	struct sim_env *envs;	/* per node, and one more for clients */
	uint32_t *peer_ops;		/* per node, zero between posts (fabric.c) */
	bool *dead;			/* per node: crashed, sends nothing (sim_world_set_dead) */
	uint64_t *quick;		/* per node: the RPCs it answers without a hand-off
					 * (pc_fabric.quick_rpcs, as it serves) */
	double rpc_bytes;
	/* membership's RPCs (heartbeats, MEMBER, JOIN): calls, and bytes both ways with
	 * the frame headers */
	uint64_t member_rpcs;
	double member_bytes;
};

struct sim_world *sim_world_create(struct sim *s, const struct pc_topology *t, bool timing);
void sim_world_destroy(struct sim_world *w);

/* The env of node (PC_PEER_NONE: a client's), and the same as the simulator's own. */
struct pc_env *sim_world_env(struct sim_world *w, uint32_t node);

static inline struct sim_env *sim_world_senv(struct sim_world *w, uint32_t node)
{
	return &w->envs[node == PC_PEER_NONE ? w->topo->nr_nodes : node];
}

/* What a wait of ns on node e takes beyond its modelled time (env.c): with nodes.jitter
 * s > 0, ns x (e^(s x max(0, Z)) - 1) for a standard normal Z from the engine's seeded
 * randomness; 0 otherwise, with no draw (the engine's random sequence is untouched). */
uint64_t sim_env_stretch(struct sim_env *e, uint64_t ns);

/* The node ran (or moved bytes) just now. */
static inline void sim_env_busy(struct sim_env *e)
{
	uint64_t now = sim_now(e->w->s);

	e->busy_at = now > e->busy_at ? now : e->busy_at;
}

/* Something wakes node e now (a request for it; an answer it waits for, when
 * answer): the time it takes to start on it, nodes.wake_us when it has been idle
 * longer than nodes.idle_us, nodes.nap_us (not for an answer) when longer than
 * nodes.nap_idle_us, else 0 (env.c). It is busy from now on. */
uint64_t sim_env_wake(struct sim_env *e, bool answer);

/* Take node out of the network (its ops and RPCs fail) or put it back. */
void sim_world_set_down(struct sim_world *w, uint32_t node, bool down);
/* The same for a node that crashed: the RPCs it sends fail too (it sends no
 * heartbeats), so the others find out only by its silence. */
void sim_world_set_dead(struct sim_world *w, uint32_t node, bool dead);

extern const struct pc_env_ops sim_env_ops;
extern const struct pc_fabric_ops sim_fabric_ops;
extern const struct pc_storage_ops sim_storage_ops;

#endif
