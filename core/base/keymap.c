/*
 * keymap.c - open-addressing map from 128-bit keys to block indices (see keymap.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "keymap.h"

int keymap_init(struct keymap *m, uint32_t max)
{
	uint32_t slots = 16;

	if (max > KEYMAP_MAX)
		return -E2BIG;
	while (slots < 2 * (uint64_t)max)
		slots <<= 1;
	m->t = calloc(slots, sizeof(*m->t));
	if (!m->t)
		return -ENOMEM;
	m->mask = slots - 1;
	m->n = 0;
	m->max = max;
	return 0;
}

void keymap_fini(struct keymap *m)
{
	free(m->t);
	m->t = NULL;
}

/* Keys are hashes already: their low bits are the home slot. */
static uint32_t home(const struct keymap *m, uint64_t lo)
{
	return (uint32_t)(lo ^ (lo >> 32)) & m->mask;
}

static bool find(const struct keymap *m, struct pc_keyhash k, uint32_t *at)
{
	for (uint32_t i = home(m, k.lo);; i = (i + 1) & m->mask) {
		const struct keymap_ent *e = &m->t[i];

		if (!e->used) {
			*at = i;
			return false;
		}
		if (e->lo == k.lo && e->hi == k.hi) {
			*at = i;
			return true;
		}
	}
}

int keymap_put(struct keymap *m, struct pc_keyhash k, uint32_t val)
{
	uint32_t at;

	if (!find(m, k, &at)) {
		if (m->n == m->max)
			return -ENOSPC;
		m->n++;
		m->t[at] = (struct keymap_ent){ .lo = k.lo, .hi = k.hi, .used = 1 };
	}
	m->t[at].val = val;
	return 0;
}

bool keymap_get(const struct keymap *m, struct pc_keyhash k, uint32_t *val)
{
	uint32_t at;

	if (!find(m, k, &at))
		return false;
	*val = m->t[at].val;
	return true;
}

/* Backward-shift: pull later members of the probe run into the hole, so that every
 * key stays reachable from its home slot without tombstones. */
bool keymap_del(struct keymap *m, struct pc_keyhash k)
{
	uint32_t hole, i;

	if (!find(m, k, &hole))
		return false;
	m->n--;
	for (i = (hole + 1) & m->mask; m->t[i].used; i = (i + 1) & m->mask) {
		uint32_t h = home(m, m->t[i].lo);

		/* Entry i may move to the hole when its home is not in (hole, i]. */
		if (((i - h) & m->mask) >= ((i - hole) & m->mask)) {
			m->t[hole] = m->t[i];
			hole = i;
		}
	}
	m->t[hole].used = 0;
	return true;
}
