/*
 * pc_env.h - what an environment backend implements: the core's whole view of the
 * machine it runs on: time, sleep, randomness, background tasks, the cost of a copy,
 * giving way to other threads.
 *
 * The core never reads the real clock, calls rand() or starts a thread itself: it asks
 * these ops (SQLite's VFS carries time and randomness for the same reason). The posix
 * backend maps them onto clock_gettime/pthreads; the simulator maps them onto its
 * virtual clock and coroutines, so the same core code runs in both.
 *
 * Not for: locks. The core uses plain mutexes but never holds one across an env,
 * fabric or storage call, which is what keeps it correct on simulated processes.
 */
#ifndef PC_ENV_H
#define PC_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_api.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pc_env;
struct pc_task;

/* A background task body. It runs until it returns; long-running tasks poll a stop
 * flag of their own between pc_env_sleep() calls. */
typedef void pc_task_fn(void *arg);

struct pc_env_ops {
	uint32_t size;		/* sizeof(struct pc_env_ops) the backend was built with */
	const char *name;
	/* Monotonic nanoseconds. Never goes backwards. */
	uint64_t (*now_ns)(struct pc_env *c);
	/* Suspend the caller for at least ns nanoseconds. */
	void (*sleep_ns)(struct pc_env *c, uint64_t ns);
	/* 64 random bits (seeded by the backend; the simulator makes them repeatable). */
	uint64_t (*random)(struct pc_env *c);
	/* Start fn(arg) as a background task. 0 or -errno; *out is joined exactly once. */
	int (*spawn)(struct pc_env *c, const char *name, pc_task_fn *fn, void *arg,
		     struct pc_task **out);
	/* Wait for a spawned task to return and free it. */
	void (*join)(struct pc_env *c, struct pc_task *t);
	/* Account for a local copy of bytes the caller just made (a hit in its own slots):
	 * the simulator charges the node's copy bandwidth, the real clock does nothing. */
	void (*copy)(struct pc_env *c, uint64_t bytes);
	/* Let other threads (simulated processes) run before the caller goes on: a
	 * caller that waits for another writer to leave a slot. */
	void (*yield)(struct pc_env *c);
	/* PC_ENV_* below; a backend built before the field has none (size says). */
	uint32_t flags;
};

/* Every task and every caller of the env runs on one thread, one at a time (the
 * simulator's coroutines): what they share needs no atomic instructions, and the
 * core counts its statistics with plain adds. */
#define PC_ENV_SERIAL 1u

/* The base every env backend embeds first (container_of gets back to the backend). */
struct pc_env {
	const struct pc_env_ops *ops;
};

/* Whether the env runs everything on one thread (PC_ENV_SERIAL). */
static inline bool pc_env_serial(const struct pc_env *c)
{
	return c->ops->size >= offsetof(struct pc_env_ops, flags) + sizeof(c->ops->flags) &&
	       (c->ops->flags & PC_ENV_SERIAL);
}

static inline uint64_t pc_env_now(struct pc_env *c)
{
	return c->ops->now_ns(c);
}

static inline void pc_env_sleep(struct pc_env *c, uint64_t ns)
{
	c->ops->sleep_ns(c, ns);
}

static inline uint64_t pc_env_random(struct pc_env *c)
{
	return c->ops->random(c);
}

static inline int pc_env_spawn(struct pc_env *c, const char *name, pc_task_fn *fn,
				 void *arg, struct pc_task **out)
{
	return c->ops->spawn(c, name, fn, arg, out);
}

static inline void pc_env_join(struct pc_env *c, struct pc_task *t)
{
	c->ops->join(c, t);
}

static inline void pc_env_copy(struct pc_env *c, uint64_t bytes)
{
	c->ops->copy(c, bytes);
}

static inline void pc_env_yield(struct pc_env *c)
{
	c->ops->yield(c);
}

/* The real clock: CLOCK_MONOTONIC, getrandom()-seeded xoshiro, pthreads. One shared
 * instance; it needs no open or close. */
PC_API struct pc_env *pc_env_posix(void);

#ifdef __cplusplus
}
#endif
#endif
