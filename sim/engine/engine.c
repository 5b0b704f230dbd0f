/*
 * engine.c - event heap, virtual clock and coroutine processes.
 *
 * A process runs on its own mmap'd stack; blocking swaps back to the scheduler's
 * context, and a wake schedules an event that swaps into it again. Stacks are
 * recycled, so a million short request processes cost a handful of stacks.
 *
 * A stack's first process starts with makecontext/setcontext; after that every
 * switch is an _setjmp/_longjmp pair, which saves no signal mask: swapcontext and
 * setcontext make a system call each to set it, and a timing run switches at every
 * blocking op and spawns a process per request. So a finished process parks in its
 * trampoline, and the next spawn on its stack jumps back in with its own fn. ASan
 * builds keep swapcontext and a fresh context per spawn, which ASan follows across
 * stacks.
 */
#undef _FORTIFY_SOURCE		/* its longjmp check refuses to jump to another stack */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "engine.h"
#include "workload/rng.h"

#define STACK_BYTES (256u << 10)

#if defined(__SANITIZE_ADDRESS__)
#define FAST_SWITCH 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAST_SWITCH 0
#endif
#endif
#ifndef FAST_SWITCH
#define FAST_SWITCH 1
#endif

struct event {
	uint64_t t, seq;
	sim_event_fn *fn;
	void *arg;
};

/* Events in the order they were queued, a ring (the current time's; a lane's). */
struct fifo {
	struct event *v;
	size_t head, n, cap;
};

/*
 * Lanes: events a fixed delay ahead (sim_after_fixed: a rail's latency, a drive's)
 * are queued in time order, since now only grows, so each delay's events go to the
 * back of its own FIFO instead of through the heap, and the next later event is the
 * first of the heap's top and the lanes' heads. A lane whose FIFO empties is free
 * for another delay; a delay finding no lane takes the heap.
 */
#define LANES 4

struct lane {
	uint64_t delay;
	struct fifo q;
};

struct sim_proc {
	ucontext_t ctx;			/* its start (and every switch without FAST_SWITCH) */
	jmp_buf jb;			/* where it blocked */
	bool started;
	void *stack;
	sim_proc_fn *fn;
	void *arg;
	uint32_t node;
	bool detached, done;
	struct sim_proc *joiner;	/* blocked in sim_join on us */
	struct sim_proc *next_free;
};

struct sim {
	struct sim_clock clock;		/* first: sim_now reads it inline */
	uint64_t seq, events_run;
	struct rng rng;
	struct event *heap;		/* events for later times */
	size_t n, cap;
	struct fifo nowq;		/* events for the current time, in order */
	struct lane lanes[LANES];	/* events for later times, in order per delay */
	ucontext_t sched;
	jmp_buf sched_jb;		/* the scheduler, while a process runs */
	struct sim_proc *current;
	struct sim_proc *free_procs;	/* finished, their stacks reusable */
	struct sim_proc *reap;		/* finished detached process to free after the swap */
	uint32_t alive;
};

uint64_t sim_random(struct sim *s)
{
	return rng_next(&s->rng);
}

double sim_uniform(struct sim *s)
{
	return rng_u01(&s->rng);
}

struct sim *sim_create(uint64_t seed)
{
	struct sim *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	rng_seed(&s->rng, seed);
	return s;
}

static void proc_free(struct sim_proc *p)
{
	munmap(p->stack, STACK_BYTES);
	free(p);
}

void sim_destroy(struct sim *s)
{
	if (!s)
		return;
	while (s->free_procs) {
		struct sim_proc *p = s->free_procs;

		s->free_procs = p->next_free;
		proc_free(p);
	}
	free(s->heap);
	free(s->nowq.v);
	for (int l = 0; l < LANES; l++)
		free(s->lanes[l].q.v);
	free(s);
}

uint64_t sim_events(const struct sim *s)
{
	return s->events_run;
}

uint32_t sim_procs(const struct sim *s)
{
	return s->alive;
}

/* Without branches: which of two events goes first follows no pattern, and a
 * pop compares at every level of the heap. */
static bool before(const struct event *a, const struct event *b)
{
	return (a->t < b->t) | ((a->t == b->t) & (a->seq < b->seq));
}

static void *grow(void *v, size_t *cap, size_t size)
{
	size_t c = *cap ? *cap * 2 : 1024;
	void *n = realloc(v, c * size);

	if (!n)
		abort();	/* the simulation cannot go on without its events */
	*cap = c;
	return n;
}

static void fifo_push(struct fifo *q, const struct event *ev)
{
	if (q->n == q->cap) {
		size_t old = q->cap;

		q->v = grow(q->v, &q->cap, sizeof(*q->v));
		/* unwrap: the part before head moves after the old end */
		memcpy(q->v + old, q->v, q->head * sizeof(*q->v));
	}
	q->v[(q->head + q->n++) % q->cap] = *ev;
}

static struct event fifo_pop(struct fifo *q)
{
	struct event e = q->v[q->head];

	q->head = (q->head + 1) % q->cap;
	q->n--;
	return e;
}

static void heap_push(struct sim *s, const struct event *ev);

/*
 * Events for the current time (wakes, most of them) skip the heap: they go to the
 * back of a FIFO. The order stays exactly (t, seq): an event in the heap or a lane
 * for the current time was scheduled before time got here, so before anything in
 * the FIFO.
 */
void sim_at(struct sim *s, uint64_t t, sim_event_fn *fn, void *arg)
{
	struct event ev = { .t = t < s->clock.now ? s->clock.now : t, .seq = s->seq++, .fn = fn,
			     .arg = arg };

	if (ev.t == s->clock.now)
		fifo_push(&s->nowq, &ev);
	else
		heap_push(s, &ev);
}

void sim_after_fixed(struct sim *s, uint64_t delay, sim_event_fn *fn, void *arg)
{
	struct event ev = { .t = s->clock.now + delay, .seq = s->seq++, .fn = fn, .arg = arg };
	struct lane *free_lane = NULL;

	if (!delay) {
		fifo_push(&s->nowq, &ev);
		return;
	}
	for (int l = 0; l < LANES; l++) {
		struct lane *ln = &s->lanes[l];

		if (ln->q.n && ln->delay == delay) {
			fifo_push(&ln->q, &ev);
			return;
		}
		if (!ln->q.n && !free_lane)
			free_lane = ln;
	}
	if (free_lane) {
		free_lane->delay = delay;
		fifo_push(&free_lane->q, &ev);
		return;
	}
	heap_push(s, &ev);
}

static void heap_push(struct sim *s, const struct event *e)
{
	struct event ev = *e;
	size_t i;

	if (s->n == s->cap)
		s->heap = grow(s->heap, &s->cap, sizeof(*s->heap));
	/* sift up: move parents down into the hole, then drop ev in */
	for (i = s->n++; i && before(&ev, &s->heap[(i - 1) / 2]); i = (i - 1) / 2)
		s->heap[i] = s->heap[(i - 1) / 2];
	s->heap[i] = ev;
}

static struct event heap_pop(struct sim *s)
{
	struct event top = s->heap[0], last = s->heap[--s->n];
	size_t i = 0;

	/* sift the last event down from the root's hole; the smaller child is picked
	 * by arithmetic, not a branch */
	for (;;) {
		size_t l = 2 * i + 1, m;

		if (l >= s->n)
			break;
		m = l + (size_t)((l + 1 < s->n) & before(&s->heap[l + 1], &s->heap[l]));
		if (!before(&s->heap[m], &last))
			break;
		s->heap[i] = s->heap[m];
		i = m;
	}
	if (s->n)
		s->heap[i] = last;
	return top;
}

static void resume(struct sim *s, void *arg)
{
	struct sim_proc *p = arg;

	s->current = p;
#if FAST_SWITCH
	if (!_setjmp(s->sched_jb)) {
		if (p->started)
			_longjmp(p->jb, 1);
		p->started = true;
		setcontext(&p->ctx);
	}
#else
	swapcontext(&s->sched, &p->ctx);
#endif
	s->current = NULL;
	if (s->reap) {		/* a detached process returned: its stack is free now */
		s->reap->next_free = s->free_procs;
		s->free_procs = s->reap;
		s->reap = NULL;
	}
}

/* The first later event: the heap's top or a lane's head; NULL when none. *lane
 * gets the lane's index, or -1 for the heap. */
static const struct event *next_later(const struct sim *s, int *lane)
{
	const struct event *e = s->n ? &s->heap[0] : NULL;

	*lane = -1;
	for (int l = 0; l < LANES; l++) {
		const struct fifo *q = &s->lanes[l].q;

		if (q->n && (!e || before(&q->v[q->head], e))) {
			e = &q->v[q->head];
			*lane = l;
		}
	}
	return e;
}

static struct event pop_later(struct sim *s, int lane)
{
	return lane < 0 ? heap_pop(s) : fifo_pop(&s->lanes[lane].q);
}

uint64_t sim_run(struct sim *s, uint64_t until)
{
	uint64_t ran = 0;

	for (;;) {
		int lane;
		const struct event *later = next_later(s, &lane);
		struct event e;

		if (later && later->t == s->clock.now && s->clock.now <= until) {
			e = pop_later(s, lane);	/* scheduled for now before now came */
		} else if (s->nowq.n && s->clock.now <= until) {
			e = fifo_pop(&s->nowq);
		} else if (later && later->t <= until) {
			e = pop_later(s, lane);
			s->clock.now = e.t;
		} else {
			break;
		}
		e.fn(s, e.arg);
		ran++;
	}
	s->events_run += ran;
	return ran;
}

static struct sim *trampoline_sim;

/* A process's stack runs this from its first start on; with FAST_SWITCH a finished
 * process parks here, and a spawn that reuses its stack resumes it with the new
 * fn: no context to make again. */
static void trampoline(void)
{
	struct sim *s = trampoline_sim;
	struct sim_proc *p = s->current;

	for (;;) {
		p->fn(p->arg);
		p->done = true;
		s->alive--;
		if (p->joiner)
			sim_wake(s, p->joiner);
		if (p->detached)
			s->reap = p;
#if FAST_SWITCH
		if (!_setjmp(p->jb))
			_longjmp(s->sched_jb, 1);
#else
		swapcontext(&p->ctx, &s->sched);	/* never resumed */
#endif
	}
}

struct sim_proc *sim_spawn(struct sim *s, sim_proc_fn *fn, void *arg, uint32_t node, bool detached)
{
	struct sim_proc *p = s->free_procs;

	if (p) {
		s->free_procs = p->next_free;
	} else {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->stack = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
		if (p->stack == MAP_FAILED) {
			free(p);
			return NULL;
		}
	}
	p->fn = fn;
	p->arg = arg;
	p->node = node;
	p->detached = detached;
	p->done = false;
	p->joiner = NULL;
	p->next_free = NULL;
	if (!FAST_SWITCH || !p->started) {	/* parked in trampoline otherwise */
		p->started = false;
		getcontext(&p->ctx);
		p->ctx.uc_stack.ss_sp = p->stack;
		p->ctx.uc_stack.ss_size = STACK_BYTES;
		p->ctx.uc_link = NULL;
		trampoline_sim = s;
		makecontext(&p->ctx, trampoline, 0);
	}
	s->alive++;
	sim_at(s, s->clock.now, resume, p);
	return p;
}

void sim_join(struct sim *s, struct sim_proc *p)
{
	if (!p->done) {
		p->joiner = s->current;
		sim_block(s);
	}
	p->next_free = s->free_procs;
	s->free_procs = p;
}

struct sim_proc *sim_self(struct sim *s)
{
	return s->current;
}

uint32_t sim_proc_node(const struct sim_proc *p)
{
	return p->node;
}

void sim_block(struct sim *s)
{
	struct sim_proc *p = s->current;

#if FAST_SWITCH
	if (!_setjmp(p->jb))
		_longjmp(s->sched_jb, 1);
#else
	swapcontext(&p->ctx, &s->sched);
#endif
}

void sim_wake(struct sim *s, struct sim_proc *p)
{
	sim_at(s, s->clock.now, resume, p);
}

static void wake_event(struct sim *s, void *arg)
{
	resume(s, arg);
}

void sim_sleep(struct sim *s, uint64_t ns)
{
	if (!s->current)
		return;
	sim_at(s, s->clock.now + ns, wake_event, s->current);
	sim_block(s);
}
