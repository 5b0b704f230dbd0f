/*
 * env.c - pc_env ops on the engine: virtual time, seeded randomness, background
 * tasks as processes, and local copies charged at the node's memcpy bandwidth; the
 * stretch of a node's waits (nodes.jitter).
 *
 * Not for: building the world the envs belong to (world.c).
 */
#include <errno.h>
#include <math.h>
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
	struct sim_env *sc = to_senv(c);

	sim_env_busy(sc);
	sim_sleep(sc->w->s, ns);
	sim_env_busy(sc);
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

/* A uniform draw in (0, 1]. */
static double unit_draw(struct sim *s)
{
	return (double)((sim_random(s) >> 11) + 1) * 0x1p-53;
}

/*
 * A real host's waits are sometimes longer than the work in them (a wake-up that
 * comes late, an interrupt, the other side's softirq on a shared loopback): half
 * of the waits take their time, the rest e^(s x |Z|) times it (|Z| half-normal, by
 * Box-Muller), so that the median wait is the modelled one, which is what the
 * calibration fits the other keys to, and the tail is a lognormal's.
 */
#define JITTER_MAX_LOG 6.9	/* ln 1000 */

uint64_t sim_env_stretch(struct sim_env *e, uint64_t ns)
{
	struct sim *s = e->w->s;
	double z;

	if (!(e->jitter > 0) || !ns || (sim_random(s) & 1))
		return 0;
	z = sqrt(-2.0 * log(unit_draw(s))) * fabs(cos(2.0 * M_PI * unit_draw(s)));
	/* at most a thousand times the wait: a run's clock never overflows */
	return (uint64_t)((double)ns * expm1(fmin(e->jitter * z, JITTER_MAX_LOG)));
}

/*
 * A node whose threads all wait for long enough is idle, in two tiers: first its
 * threads stop polling and sleep, and waking one takes the scheduler nap_ns; later
 * its virtual CPU halts and the hypervisor deschedules it (or its core sleeps
 * deeply), and what wakes it starts wake_ns later. A caller waiting for its answer
 * polls through the round trip (a tcp client until nothing moved for its poll
 * window, from its request's last byte): only the halt reaches it. Every op of the
 * node's processes marks it busy (the fabric's, the storage's, these), and so do
 * its transfers as they end.
 */
uint64_t sim_env_wake(struct sim_env *e, bool answer)
{
	uint64_t now = sim_now(e->w->s), up = 0;

	if (e->wake_ns && now > e->busy_at + e->idle_ns)
		up = e->wake_ns;
	else if (!answer && e->nap_ns && now > e->busy_at + e->nap_idle_ns)
		up = e->nap_ns;
	e->busy_at = up ? now + up : now > e->busy_at ? now : e->busy_at;
	return up;
}

/* T = bytes / memcpy bandwidth, stretched as any wait, on the process that copied. */
static void senv_copy(struct pc_env *c, uint64_t bytes)
{
	struct sim_env *sc = to_senv(c);
	uint64_t t;

	if (!sc->w->timing || !(sc->copy_rate > 0))
		return;
	t = (uint64_t)((double)bytes / sc->copy_rate);
	sim_sleep(sc->w->s, t + sim_env_stretch(sc, t));
	sim_env_busy(sc);
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
	.flags = PC_ENV_SERIAL,	/* coroutines of one thread (engine.c) */
};
