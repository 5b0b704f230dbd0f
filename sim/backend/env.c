/*
 * env.c - pc_env ops on the engine: virtual time, seeded randomness, background
 * tasks as processes, and local copies charged at the node's memcpy bandwidth.
 *
 * Not for: building the world the envs belong to (world.c).
 */
#include <errno.h>
#include <stdlib.h>

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

/* The other processes due now run first; no simulated time passes. */
static void senv_yield(struct pc_env *c)
{
	sim_sleep(to_senv(c)->w->s, 0);
}

const struct pc_env_ops sim_env_ops = {
	.size = sizeof(struct pc_env_ops),
	.name = "sim",
	.now_ns = senv_now,
	.sleep_ns = senv_sleep,
	.random = senv_random,
	.spawn = senv_spawn,
	.join = senv_join,
	.copy = senv_copy,
	.yield = senv_yield,
};
