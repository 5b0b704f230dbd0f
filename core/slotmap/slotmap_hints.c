/*
 * slotmap_hints.c - the way-hint table's life (slotmap_hints.h says what it is).
 */
#include <stdlib.h>
#include <string.h>

#include "slotmap_hints.h"

uint64_t *sm_hints_table(struct slotmap *sm)
{
	uint64_t *t = __atomic_load_n(&sm->hints, __ATOMIC_ACQUIRE), *none = NULL;

	if (t)
		return t;
	t = aligned_alloc(64, (1u << SM_HINT_BITS) * sizeof(*t));	/* a set: a line */
	if (!t)
		return NULL;
	memset(t, 0, (1u << SM_HINT_BITS) * sizeof(*t));
	/* two threads' first hints at once: one table wins, the other is freed */
	if (!__atomic_compare_exchange_n(&sm->hints, &none, t, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		free(t);
		return none;
	}
	return t;
}

void sm_hints_free(struct slotmap *sm)
{
	free(sm->hints);
	sm->hints = NULL;
}
