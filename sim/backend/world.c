/*
 * world.c - one simulated cluster built and torn down: the network and NVMe models
 * from the topology, the nodes' memory, and an env per node plus one for clients.
 */
#include <stdlib.h>
#include <string.h>

#include "inproc/inproc.h"
#include "world.h"

/* The node before node i whose disk it is: one at the same address that spills to
 * the same directory (two processes of one host, as a laptop's or a test's cluster
 * runs, whose I/O takes turns on that disk's queue); i when none is. */
static uint32_t disk_owner(const struct pc_topology *t, uint32_t i)
{
	const struct pc_node *n = &t->nodes[i];

	for (uint32_t j = 0; j < i; j++) {
		const struct pc_node *o = &t->nodes[j];

		if (o->has_nvme && !strcmp(o->address, n->address) &&
		    !strcmp(o->nvme.path, n->nvme.path))
			return j;
	}
	return i;
}

struct sim_world *sim_world_create(struct sim *s, const struct pc_topology *t, bool timing)
{
	struct sim_world *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->s = s;
	w->topo = t;
	w->timing = timing;
	w->net = net_create(s, t, PORT_PS);
	w->nvme = calloc(t->nr_nodes, sizeof(*w->nvme));
	w->mem = inproc_world_create(t->nr_nodes);
	if (w->mem)	/* no time to model: stores may use each other's memory */
		inproc_world_share(w->mem, !timing);
	w->envs = calloc(t->nr_nodes + 1, sizeof(*w->envs));
	w->peer_ops = calloc(t->nr_nodes, sizeof(*w->peer_ops));
	w->dead = calloc(t->nr_nodes ? t->nr_nodes : 1, sizeof(*w->dead));
	w->quick = calloc(t->nr_nodes ? t->nr_nodes : 1, sizeof(*w->quick));
	if (!w->net || !w->nvme || !w->mem || !w->envs || !w->peer_ops || !w->dead || !w->quick)
		goto err;
	for (uint32_t i = 0; i <= t->nr_nodes; i++) {
		w->envs[i] = (struct sim_env){ .base.ops = &sim_env_ops, .w = w,
						   .node = i < t->nr_nodes ? i : PC_PEER_NONE };
		w->envs[i].copy_rate = (i < t->nr_nodes ? t->nodes[i].memcpy_gbps : 10.0);
		w->envs[i].jitter = i < t->nr_nodes ? t->nodes[i].jitter : 0;
		if (i < t->nr_nodes && timing) {
			w->envs[i].wake_ns = (uint64_t)(t->nodes[i].wake_us * 1000.0);
			w->envs[i].idle_ns = (uint64_t)(t->nodes[i].idle_us * 1000.0);
			w->envs[i].nap_ns = (uint64_t)(t->nodes[i].nap_us * 1000.0);
			w->envs[i].nap_idle_ns = (uint64_t)(t->nodes[i].nap_idle_us * 1000.0);
		}
		if (i < t->nr_nodes && t->nodes[i].has_nvme) {
			uint32_t owner = disk_owner(t, i);

			w->nvme[i] = owner < i ? w->nvme[owner] : nvme_create(s, &t->nodes[i].nvme);
			if (!w->nvme[i])
				goto err;
		}
	}
	return w;
err:
	sim_world_destroy(w);
	return NULL;
}

void sim_world_destroy(struct sim_world *w)
{
	if (!w)
		return;
	for (uint32_t i = 0; w->nvme && i < w->topo->nr_nodes; i++)
		if (!w->nvme[i] || disk_owner(w->topo, i) == i)	/* a shared disk once */
			nvme_destroy(w->nvme[i]);
	free(w->nvme);
	net_destroy(w->net);
	inproc_world_destroy(w->mem);
	free(w->envs);
	free(w->peer_ops);
	free(w->dead);
	free(w->quick);
	free(w);
}

struct pc_env *sim_world_env(struct sim_world *w, uint32_t node)
{
	return &sim_world_senv(w, node)->base;
}

void sim_world_set_down(struct sim_world *w, uint32_t node, bool down)
{
	inproc_world_set_down(w->mem, node, down);
}

void sim_world_set_dead(struct sim_world *w, uint32_t node, bool dead)
{
	sim_world_set_down(w, node, dead);
	if (node < w->topo->nr_nodes)
		w->dead[node] = dead;
}
