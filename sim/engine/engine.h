/*
 * engine.h - the discrete-event engine: a virtual clock in nanoseconds, a queue of
 * events ordered by (time, sequence), and simulated processes as coroutines
 * (ucontext), so library code that blocks in a fabric, storage or env op suspends
 * its process until the modelled completion. Everything is deterministic for a given
 * seed: one OS thread, events in a total order, randomness from one seeded stream.
 *
 * Not for: the queueing models (sim/models/) or the core's ops tables in virtual
 * time (sim/backend/), which are built on this.
 */
#ifndef PC_SIM_ENGINE_H
#define PC_SIM_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

struct sim;
struct sim_proc;

typedef void sim_event_fn(struct sim *s, void *arg);
typedef void sim_proc_fn(void *arg);

struct sim *sim_create(uint64_t seed);
/* Every process must have finished. */
void sim_destroy(struct sim *s);

/* The clock, the one field of struct sim read everywhere: first in it, read inline
 * (a call per read was a visible share of a timing run's events). */
struct sim_clock {
	uint64_t now;
};

static inline uint64_t sim_now(const struct sim *s)
{
	return ((const struct sim_clock *)(const void *)s)->now;
}
uint64_t sim_random(struct sim *s);
/* A uniform double in [0, 1). */
double sim_uniform(struct sim *s);

/* Run fn(s, arg) at absolute virtual time t (now when t is in the past). */
void sim_at(struct sim *s, uint64_t t, sim_event_fn *fn, void *arg);
/* Run fn(s, arg) delay ns from now, as sim_at(s, now + delay, ...) in the same
 * order, for callers whose delays are a few fixed values (a rail's latency, a
 * drive's): their events queue per delay without the heap. */
void sim_after_fixed(struct sim *s, uint64_t delay, sim_event_fn *fn, void *arg);

/* Run events until none is left or the next is after until. Returns the number run. */
uint64_t sim_run(struct sim *s, uint64_t until);

/* Start fn(arg) as a process (it first runs at the current time). node tags it for
 * models that charge a node (copies, storage); detached processes free themselves
 * when they return, others are freed by sim_join. NULL on ENOMEM. */
struct sim_proc *sim_spawn(struct sim *s, sim_proc_fn *fn, void *arg, uint32_t node, bool detached);

/* In a process: wait until p has returned, then free it. */
void sim_join(struct sim *s, struct sim_proc *p);

/* The running process, or NULL when called from an event or outside the run. */
struct sim_proc *sim_self(struct sim *s);
uint32_t sim_proc_node(const struct sim_proc *p);

/* In a process: suspend until someone calls sim_wake on it. */
void sim_block(struct sim *s);
/* Make a blocked process run again (at the current time, after current events). */
void sim_wake(struct sim *s, struct sim_proc *p);
/* In a process: let ns of virtual time pass. Outside a process: nothing. */
void sim_sleep(struct sim *s, uint64_t ns);

/* Events run so far, and processes alive now (for progress lines). */
uint64_t sim_events(const struct sim *s);
uint32_t sim_procs(const struct sim *s);

#endif
