/*
 * engine.c - event heap, virtual clock and coroutine processes.
 *
 * A process runs on its own mmap'd stack; blocking swaps back to the scheduler's
 * context, and a wake schedules an event that swaps into it again. Stacks are
 * recycled, so a million short request processes cost a handful of stacks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "engine.h"
#include "rng.h"

#define STACK_BYTES (256u << 10)

struct event {
	uint64_t t, seq;
	sim_event_fn *fn;
	void *arg;
};

struct sim_proc {
	ucontext_t ctx;
	void *stack;
	sim_proc_fn *fn;
	void *arg;
	uint32_t node;
	bool detached, done;
	struct sim_proc *joiner;	/* blocked in sim_join on us */
	struct sim_proc *next_free;
};

struct sim {
	uint64_t now, seq, events_run;
	struct rng rng;
	struct event *heap;
	size_t n, cap;
	ucontext_t sched;
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
	free(s);
}

uint64_t sim_now(const struct sim *s)
{
	return s->now;
}

uint64_t sim_events(const struct sim *s)
{
	return s->events_run;
}

uint32_t sim_procs(const struct sim *s)
{
	return s->alive;
}

static bool before(const struct event *a, const struct event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

void sim_at(struct sim *s, uint64_t t, sim_event_fn *fn, void *arg)
{
	size_t i;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct event *h = realloc(s->heap, cap * sizeof(*h));

		if (!h)
			abort();	/* the simulation cannot go on without its events */
		s->heap = h;
		s->cap = cap;
	}
	i = s->n++;
	s->heap[i] = (struct event){ .t = t < s->now ? s->now : t, .seq = s->seq++, .fn = fn,
				     .arg = arg };
	while (i && before(&s->heap[i], &s->heap[(i - 1) / 2])) {
		struct event e = s->heap[i];

		s->heap[i] = s->heap[(i - 1) / 2];
		s->heap[(i - 1) / 2] = e;
		i = (i - 1) / 2;
	}
}

static struct event pop(struct sim *s)
{
	struct event top = s->heap[0];
	size_t i = 0;

	s->heap[0] = s->heap[--s->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct event e;

		if (l < s->n && before(&s->heap[l], &s->heap[m]))
			m = l;
		if (r < s->n && before(&s->heap[r], &s->heap[m]))
			m = r;
		if (m == i)
			break;
		e = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = e;
		i = m;
	}
	return top;
}

static void resume(struct sim *s, void *arg)
{
	struct sim_proc *p = arg;

	s->current = p;
	swapcontext(&s->sched, &p->ctx);
	s->current = NULL;
	if (s->reap) {		/* a detached process returned: its stack is free now */
		s->reap->next_free = s->free_procs;
		s->free_procs = s->reap;
		s->reap = NULL;
	}
}

uint64_t sim_run(struct sim *s, uint64_t until)
{
	uint64_t ran = 0;

	while (s->n && s->heap[0].t <= until) {
		struct event e = pop(s);

		s->now = e.t;
		e.fn(s, e.arg);
		ran++;
	}
	s->events_run += ran;
	return ran;
}

static struct sim *trampoline_sim;

static void trampoline(void)
{
	struct sim *s = trampoline_sim;
	struct sim_proc *p = s->current;

	p->fn(p->arg);
	p->done = true;
	s->alive--;
	if (p->joiner)
		sim_wake(s, p->joiner);
	if (p->detached)
		s->reap = p;
	swapcontext(&p->ctx, &s->sched);	/* never resumed */
}

struct sim_proc *sim_spawn(struct sim *s, sim_proc_fn *fn, void *arg, uint32_t node, bool detached)
{
	struct sim_proc *p = s->free_procs;

	if (p) {
		s->free_procs = p->next_free;
		void *stack = p->stack;

		memset(p, 0, sizeof(*p));
		p->stack = stack;
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
	getcontext(&p->ctx);
	p->ctx.uc_stack.ss_sp = p->stack;
	p->ctx.uc_stack.ss_size = STACK_BYTES;
	p->ctx.uc_link = NULL;
	trampoline_sim = s;
	makecontext(&p->ctx, trampoline, 0);
	s->alive++;
	sim_at(s, s->now, resume, p);
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

	swapcontext(&p->ctx, &s->sched);
}

void sim_wake(struct sim *s, struct sim_proc *p)
{
	sim_at(s, s->now, resume, p);
}

static void wake_event(struct sim *s, void *arg)
{
	resume(s, arg);
}

void sim_sleep(struct sim *s, uint64_t ns)
{
	if (!s->current)
		return;
	sim_at(s, s->now + ns, wake_event, s->current);
	sim_block(s);
}
