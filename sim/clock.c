/*
 * clock.c - pc_clock ops on the engine: virtual time, seeded randomness, background
 * tasks as processes, and local copies charged at the node's memcpy bandwidth.
 */
#include <errno.h>
#include <stdlib.h>

#include "inproc/inproc.h"
#include "world.h"

static struct sim_clock *to_sclock(struct pc_clock *c)
{
	return (struct sim_clock *)c;
}

static uint64_t sclock_now(struct pc_clock *c)
{
	return sim_now(to_sclock(c)->w->s);
}

static void sclock_sleep(struct pc_clock *c, uint64_t ns)
{
	sim_sleep(to_sclock(c)->w->s, ns);
}

static uint64_t sclock_random(struct pc_clock *c)
{
	return sim_random(to_sclock(c)->w->s);
}

static int sclock_spawn(struct pc_clock *c, const char *name, pc_task_fn *fn, void *arg,
			struct pc_task **out)
{
	struct sim_clock *sc = to_sclock(c);
	struct sim_proc *p = sim_spawn(sc->w->s, fn, arg, sc->node, false);

	(void)name;
	if (!p)
		return -ENOMEM;
	*out = (struct pc_task *)p;
	return 0;
}

static void sclock_join(struct pc_clock *c, struct pc_task *t)
{
	sim_join(to_sclock(c)->w->s, (struct sim_proc *)t);
}

/* T = bytes / memcpy bandwidth, on the process that copied. */
static void sclock_copy(struct pc_clock *c, uint64_t bytes)
{
	struct sim_clock *sc = to_sclock(c);

	if (sc->w->timing && sc->copy_rate > 0)
		sim_sleep(sc->w->s, (uint64_t)((double)bytes / sc->copy_rate));
}

static const struct pc_clock_ops sim_clock_ops = {
	.size = sizeof(struct pc_clock_ops),
	.name = "sim",
	.now_ns = sclock_now,
	.sleep_ns = sclock_sleep,
	.random = sclock_random,
	.spawn = sclock_spawn,
	.join = sclock_join,
	.copy = sclock_copy,
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
	w->clocks = calloc(t->nr_nodes + 1, sizeof(*w->clocks));
	w->peer_ops = calloc(t->nr_nodes, sizeof(*w->peer_ops));
	if (!w->net || !w->nvme || !w->mem || !w->clocks || !w->peer_ops)
		goto err;
	for (uint32_t i = 0; i <= t->nr_nodes; i++) {
		w->clocks[i] = (struct sim_clock){ .base.ops = &sim_clock_ops, .w = w,
						   .node = i < t->nr_nodes ? i : PC_PEER_NONE };
		w->clocks[i].copy_rate = (i < t->nr_nodes ? t->nodes[i].memcpy_gbps : 10.0);
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
	free(w->clocks);
	free(w->peer_ops);
	free(w);
}

struct pc_clock *sim_world_clock(struct sim_world *w, uint32_t node)
{
	return &w->clocks[node == PC_PEER_NONE ? w->topo->nr_nodes : node].base;
}

void sim_world_set_down(struct sim_world *w, uint32_t node, bool down)
{
	inproc_world_set_down(w->mem, node, down);
}
