/*
 * lru.h - access order over a fixed set of numbered blocks: a doubly linked list
 * kept in an array of links beside the blocks, so that moving a block to the front
 * or taking it out is O(1) and allocates nothing. The host and disk pools use it.
 *
 * Not for: locking (the owner's lock covers it).
 */
#ifndef PC_LRU_H
#define PC_LRU_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#define LRU_NONE UINT32_MAX

struct lru_link {
	uint32_t prev, next;		/* prev: more recent, next: older */
};

struct lru {
	struct lru_link *link;
	uint32_t head, tail;		/* most and least recently used */
};

static inline int lru_init(struct lru *l, uint32_t n)
{
	l->link = malloc((n ? n : 1) * sizeof(*l->link));
	if (!l->link)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		l->link[i] = (struct lru_link){ LRU_NONE, LRU_NONE };
	l->head = l->tail = LRU_NONE;
	return 0;
}

static inline void lru_fini(struct lru *l)
{
	free(l->link);
	l->link = NULL;
}

static inline void lru_unlink(struct lru *l, uint32_t i)
{
	struct lru_link *k = &l->link[i];

	if (k->prev != LRU_NONE)
		l->link[k->prev].next = k->next;
	else
		l->head = k->next;
	if (k->next != LRU_NONE)
		l->link[k->next].prev = k->prev;
	else
		l->tail = k->prev;
	*k = (struct lru_link){ LRU_NONE, LRU_NONE };
}

/* i becomes the most recently used (it must not be on the list). */
static inline void lru_push(struct lru *l, uint32_t i)
{
	l->link[i] = (struct lru_link){ LRU_NONE, l->head };
	if (l->head != LRU_NONE)
		l->link[l->head].prev = i;
	l->head = i;
	if (l->tail == LRU_NONE)
		l->tail = i;
}

/* i (on the list) was used just now. */
static inline void lru_touch(struct lru *l, uint32_t i)
{
	lru_unlink(l, i);
	lru_push(l, i);
}

/* The next more recently used than i, walking from the tail. */
static inline uint32_t lru_newer(const struct lru *l, uint32_t i)
{
	return l->link[i].prev;
}

#endif
