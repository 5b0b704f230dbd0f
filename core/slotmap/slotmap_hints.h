/*
 * slotmap_hints.h - way hints: which way of its bucket a remote key was last seen in.
 *
 * A get through ops reads a key's index block first and its slot second: two round
 * trips, because the way that holds the key is known only from the index. A node
 * that wrote a key, or read it through the index, knows that way; it keeps it here,
 * and its next get of the key reads that way's header and payload alone, in one
 * round trip (slotmap_read.c: hinted). A hint is a guess, never trusted: the slot's
 * header and checksum decide as for any read, and a key no longer in its hinted way
 * reads its index block in a second round trip. So that a key gone costs no such
 * trip where this node knows it is gone: a node's own write that evicts a key drops
 * that key's hint, and exists (which reads the index block alongside a hinted
 * header) drops the hints of the keys it finds absent.
 *
 * One table per store of 2^17 words (1 MiB), in sets of eight (a cache line): a word
 * holds a key's 32-bit check, its class and way. A key lives in the set its hash
 * names; a new key takes an empty word, else one its hash picks, so the table keeps
 * the keys seen last. Only classes whose gets read by prediction (auto and predict:
 * pages below 1 MiB) take hints, and the table is allocated by the first one, so a
 * store that never reads or writes such pages through ops (the simulator's hit-rate
 * mode, every node in place; 2 MiB pages) holds none.
 * Words are read and written atomically, one at a time: batch calls on many threads
 * share the table, and a race between them loses a hint. A hint naming a wrong way
 * (two keys of a set with one check) costs that key a round trip, never a wrong page.
 */
#ifndef PC_SLOTMAP_HINTS_H
#define PC_SLOTMAP_HINTS_H

#include "slotmap_int.h"

#define SM_HINT_BITS 17	/* words in the table */
#define SM_HINT_WAYS 8		/* words in a set */

/* The table, allocated on the first call; NULL when out of memory (no hints). */
uint64_t *sm_hints_table(struct slotmap *sm);
void sm_hints_free(struct slotmap *sm);

/* The key's set: SM_HINT_WAYS words. */
static inline uint64_t *sm_hint_set(uint64_t *t, struct pc_keyhash h)
{
	return &t[(h.hi >> 40) & ((1u << SM_HINT_BITS) - SM_HINT_WAYS)];
}

/* check (bits 63..32, never 0) | class (15..8) | way (7..0) */
static inline uint64_t sm_hint_check(struct pc_keyhash h)
{
	return ((h.lo >> 32) | 1) << 32;
}

static inline uint64_t sm_hint_word(struct pc_keyhash h, int cls, uint32_t way)
{
	return sm_hint_check(h) | (uint64_t)(cls & 0xff) << 8 | (way & 0xff);
}

/* Whether gets of class c of lay read by prediction, and so take hints. */
static inline bool sm_hinted_class(const struct sm_layout *lay, int c)
{
	return lay->cls[c].policy == PC_READ_AUTO || lay->cls[c].policy == PC_READ_PREDICT;
}

/* The way key was last seen in, in class cls of lay, or -1 (none, or a class that
 * takes no hints). */
static inline int sm_hint_get(struct slotmap *sm, const struct sm_layout *lay,
			      struct pc_keyhash h, int cls)
{
	uint64_t *t = __atomic_load_n(&sm->hints, __ATOMIC_ACQUIRE), *set, want = sm_hint_check(h);

	if (!t || !sm_hinted_class(lay, cls))
		return -1;
	set = sm_hint_set(t, h);
	for (int i = 0; i < SM_HINT_WAYS; i++) {
		uint64_t e = __atomic_load_n(&set[i], __ATOMIC_RELAXED);

		if ((e & ~0xffffULL) == want)
			return (int)(e >> 8 & 0xff) == cls ? (int)(e & 0xff) : -1;
	}
	return -1;
}

/* Key was seen in way of class cls of lay (written there, or read there through
 * ops): its word, an empty one, or the one its hash picks. Nothing for a class that
 * takes no hints. */
static inline void sm_hint_put(struct slotmap *sm, const struct sm_layout *lay,
			       struct pc_keyhash h, int cls, uint32_t way)
{
	uint64_t *t = __atomic_load_n(&sm->hints, __ATOMIC_ACQUIRE), *set, want = sm_hint_check(h);
	int at = -1;

	if (!sm_hinted_class(lay, cls) || (!t && !(t = sm_hints_table(sm))))
		return;
	set = sm_hint_set(t, h);
	for (int i = 0; i < SM_HINT_WAYS; i++) {
		uint64_t e = __atomic_load_n(&set[i], __ATOMIC_RELAXED);

		if ((e & ~0xffffULL) == want) {
			at = i;
			break;
		}
		if (!e && at < 0)
			at = i;
	}
	if (at < 0)
		at = (int)(h.hi >> 32 & (SM_HINT_WAYS - 1));
	__atomic_store_n(&set[at], sm_hint_word(h, cls, way), __ATOMIC_RELAXED);
}

/* Key is not in the way its hint names (that slot holds another key, and the index
 * names none): forget the hint, unless a newer one took its word. */
static inline void sm_hint_drop(struct slotmap *sm, struct pc_keyhash h, int cls, uint32_t way)
{
	uint64_t *t = __atomic_load_n(&sm->hints, __ATOMIC_ACQUIRE), *set, e = sm_hint_word(h, cls, way);

	if (!t)
		return;
	set = sm_hint_set(t, h);
	for (int i = 0; i < SM_HINT_WAYS; i++)
		if (__atomic_load_n(&set[i], __ATOMIC_RELAXED) == e) {
			__atomic_compare_exchange_n(&set[i], &e, 0, false, __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED);
			return;
		}
}

#endif
