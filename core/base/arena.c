/*
 * arena.c - per-call scratch arenas and the pool a store keeps of them.
 */
#include <stdlib.h>
#include <string.h>

#include "arena.h"

#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif
#ifndef ARENA_ASAN
#define ARENA_ASAN 0
#endif

#define ARENA_FIRST (16u << 10)	/* a new arena's block */
#define ARENA_KEEP (16u << 20)	/* an arena that wanted more is not kept that big */
#define ARENA_IDLE 8		/* idle arenas a pool keeps */

struct arena_spill {
	struct arena_spill *next;
	_Alignas(16) unsigned char data[];
};

void arena_pool_init(struct arena_pool *p)
{
	pthread_mutex_init(&p->lock, NULL);
	p->idle = NULL;
	p->nr_idle = 0;
}

static void arena_free(struct arena *a)
{
	free(a->base);
	free(a);
}

void arena_pool_fini(struct arena_pool *p)
{
	while (p->idle) {
		struct arena *a = p->idle;

		p->idle = a->next;
		arena_free(a);
	}
	p->nr_idle = 0;
	pthread_mutex_destroy(&p->lock);
}

struct arena *arena_take(struct arena_pool *p)
{
	struct arena *a;

	pthread_mutex_lock(&p->lock);
	a = p->idle;
	if (a) {
		p->idle = a->next;
		p->nr_idle--;
	}
	pthread_mutex_unlock(&p->lock);
	if (a)
		return a;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	if (!ARENA_ASAN) {
		a->base = malloc(ARENA_FIRST);
		a->cap = a->base ? ARENA_FIRST : 0;
	}
	return a;
}

/* Drop what this use spilled and, when it wanted more than the block holds, make
 * the block big enough for next time. */
static void arena_reset(struct arena *a)
{
	while (a->spill) {
		struct arena_spill *s = a->spill;

		a->spill = s->next;
		free(s);
	}
	if (!ARENA_ASAN && a->want > a->cap && a->want <= ARENA_KEEP) {
		size_t cap = a->cap ? a->cap : ARENA_FIRST;
		uint8_t *b;

		while (cap < a->want)
			cap *= 2;
		b = malloc(cap);
		if (b) {
			free(a->base);
			a->base = b;
			a->cap = cap;
		}
	}
	a->used = 0;
	a->want = 0;
}

void arena_give(struct arena_pool *p, struct arena *a)
{
	if (!a)
		return;
	arena_reset(a);
	pthread_mutex_lock(&p->lock);
	if (p->nr_idle < ARENA_IDLE) {
		a->next = p->idle;
		p->idle = a;
		p->nr_idle++;
		a = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	if (a)
		arena_free(a);
}

void *arena_alloc_spill(struct arena *a, size_t n)
{
	size_t need = n ? (n + 15) & ~(size_t)15 : 16;
	struct arena_spill *s;

	if (need < n || need > PTRDIFF_MAX - sizeof(*s))
		return NULL;	/* more than an object can be (or wrapped, here or in the spill) */
	s = malloc(sizeof(*s) + need);
	if (!s)
		return NULL;
	a->want += need;	/* what was given: a refused size does not grow the block */
	s->next = a->spill;
	a->spill = s;
	return s->data;
}

void *arena_zalloc(struct arena *a, size_t n)
{
	void *p = arena_alloc(a, n);

	if (p)
		memset(p, 0, n);
	return p;
}
