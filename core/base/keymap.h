/*
 * keymap.h - a fixed-capacity map from 128-bit block keys to 32-bit indices, for the
 * host and disk pools (which block holds which key).
 *
 * Open addressing with linear probing and backward-shift deletion: no tombstones, so
 * lookups stay short however many blocks come and go. The capacity is fixed at init
 * (pools have a fixed number of blocks); a put beyond it fails with -ENOSPC.
 *
 * Not for: locking. The pool that owns a map serialises access to it.
 */
#ifndef PC_KEYMAP_H
#define PC_KEYMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "keyhash.h"

struct keymap_ent {
	uint64_t lo, hi;
	uint32_t val;
	uint32_t used;
};

struct keymap {
	struct keymap_ent *t;
	uint32_t mask;			/* slots - 1; slots is a power of two */
	uint32_t n, max;
};

#define KEYMAP_MAX (1u << 30)	/* keys a map can hold: its table stays half empty */

/* Room for max keys. 0, -E2BIG beyond KEYMAP_MAX, or -ENOMEM. */
int keymap_init(struct keymap *m, uint32_t max);
void keymap_fini(struct keymap *m);

/* Insert or replace. 0, or -ENOSPC when max keys are already in. */
int keymap_put(struct keymap *m, struct pc_keyhash k, uint32_t val);
/* true and *val when k is in. */
bool keymap_get(const struct keymap *m, struct pc_keyhash k, uint32_t *val);
/* Remove k; true when it was in. */
bool keymap_del(struct keymap *m, struct pc_keyhash k);

#endif
