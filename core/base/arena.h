/*
 * arena.h - scratch memory for one batch call: key tables, op lists, header copies.
 *
 * A batch takes an arena from its store's pool, carves what it needs with bump
 * allocations and gives the arena back whole when it returns. Arenas are reused, and
 * one that overflowed grows before its next use, so a steady stream of batches of
 * one shape allocates nothing: a batch's half-dozen malloc/calloc/free pairs were a
 * tenth of a simulator run. An arena is held by one call at a time (a simulated
 * process that sleeps in the fabric keeps its own), so carving takes no lock; only
 * the pool's take and give do.
 *
 * Not for: memory that outlives the call, or registered memory (store_stage). Under
 * AddressSanitizer every allocation is its own malloc, so overflows stay visible.
 */
#ifndef PC_ARENA_H
#define PC_ARENA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct arena {
	struct arena *next;		/* in the pool's idle list */
	uint8_t *base;
	size_t cap, used;
	size_t want;			/* bytes this use was given, overflow included */
	struct arena_spill *spill;	/* allocations that did not fit, freed at give */
};

struct arena_pool {
	pthread_mutex_t lock;
	struct arena *idle;
	unsigned nr_idle;
};

void arena_pool_init(struct arena_pool *p);
/* Frees every idle arena; none may be taken. */
void arena_pool_fini(struct arena_pool *p);

/* An empty arena, or NULL on ENOMEM. */
struct arena *arena_take(struct arena_pool *p);
/* Back to the pool: everything carved from it is gone. NULL is ignored. */
void arena_give(struct arena_pool *p, struct arena *a);

/* arena_alloc when the block has no room: a spill allocation. */
void *arena_alloc_spill(struct arena *a, size_t n);

/* n bytes aligned to 16, uninitialised (zeroed: arena_zalloc); NULL on ENOMEM. n 0
 * gives a valid pointer too. Freed only by arena_give. Inline: a set carves a few
 * blocks per bucket it touches, and the bump is a few instructions. */
static inline void *arena_alloc(struct arena *a, size_t n)
{
	size_t need = n ? (n + 15) & ~(size_t)15 : 16;	/* 0 bytes: still a pointer */

	if (need >= n && a->cap - a->used >= need) {	/* need < n: wrapped */
		void *p = a->base + a->used;

		a->used += need;
		a->want += need;
		return p;
	}
	return arena_alloc_spill(a, n);
}

void *arena_zalloc(struct arena *a, size_t n);

#endif
