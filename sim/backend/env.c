/*
 * env.c - pc_env ops on the engine: virtual time, seeded randomness, background
 * tasks as processes, and local copies charged at the node's memcpy bandwidth.
 */
#include <errno.h>
#include <stdlib.h>

#include "inproc/inproc.h"
#include "world.h"

static struct sim_env *to_senv(struct pc_env *c)
{
	return (struct sim_env *)c;
}

static uint64_t senv_now(struct pc_env *c)
{
	return sim_now(to_senv(c)->w->s);
}

static void senv_sleep(struct pc_env *c, uint64_t ns)
{
	sim_sleep(to_senv(c)->w->s, ns);
}

static uint64_t senv_random(struct pc_env *c)
{
	return sim_random(to_senv(c)->w->s);
}

static int senv_spawn(struct pc_env *c, const char *name, pc_task_fn *fn, void *arg,
			struct pc_task **out)
{
	struct sim_env *sc = to_senv(c);
	struct sim_proc *p = sim_spawn(sc->w->s, fn, arg, sc->node, false);

	(void)name;
	if (!p)
		return -ENOMEM;
	*out = (struct pc_task *)p;
	return 0;
}

static void senv_join(struct pc_env *c, struct pc_task *t)
{
	sim_join(to_senv(c)->w->s, (struct sim_proc *)t);
}

/* T = bytes / memcpy bandwidth, on the process that copied. */
static void senv_copy(struct pc_env *c, uint64_t bytes)
{
	struct sim_env *sc = to_senv(c);

	if (sc->w->timing && sc->copy_rate > 0)
		sim_sleep(sc->w->s, (uint64_t)((double)bytes / sc->copy_rate));
}

static const struct pc_env_ops sim_env_ops = {
	.size = sizeof(struct pc_env_ops),
	.name = "sim",
	.now_ns = senv_now,
	.sleep_ns = senv_sleep,
	.random = senv_random,
	.spawn = senv_spawn,
	.join = senv_join,
	.copy = senv_copy,
};

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
	if (!w->net || !w->nvme || !w->mem || !w->envs || !w->peer_ops)
		goto err;
	for (uint32_t i = 0; i <= t->nr_nodes; i++) {
		w->envs[i] = (struct sim_env){ .base.ops = &sim_env_ops, .w = w,
						   .node = i < t->nr_nodes ? i : PC_PEER_NONE };
		w->envs[i].copy_rate = (i < t->nr_nodes ? t->nodes[i].memcpy_gbps : 10.0);
		if (i < t->nr_nodes && t->nodes[i].has_nvme) {
			w->nvme[i] = nvme_create(s, &t->nodes[i].nvme);
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
		nvme_destroy(w->nvme[i]);
	free(w->nvme);
	net_destroy(w->net);
	inproc_world_destroy(w->mem);
	free(w->envs);
	free(w->peer_ops);
	free(w);
}

struct pc_env *sim_world_env(struct sim_world *w, uint32_t node)
{
	return &w->envs[node == PC_PEER_NONE ? w->topo->nr_nodes : node].base;
}

void sim_world_set_down(struct sim_world *w, uint32_t node, bool down)
{
	inproc_world_set_down(w->mem, node, down);
}
