/*
 * slotmap_keys.h - the part of a key every slotmap path shares, and what the paths
 * do with their keys alike (slotmap_keys.c): hash and place them, post a phase of
 * ops and take its errors per key, retry keys whose owner restarted.
 */
#ifndef PC_SLOTMAP_KEYS_H
#define PC_SLOTMAP_KEYS_H

#include "slotmap_int.h"

enum { SM_PENDING, SM_DONE };

/* Is this error an address from before the owner restarted? Then refresh and retry. */
static inline bool sm_stale(int err)
{
	return err == -ESTALE || err == -ENOKEY;
}

/* What every key of a batch carries, first in each path's own key struct. */
struct sm_kc {
	struct pc_page *pg;
	struct pc_keyhash h;
	uint32_t owner;
	const struct sm_layout *lay;
	int state;
	int err;			/* the owner could not be asked */
	bool stale;			/* the owner restarted: refresh its layout, retry */
	uint32_t op0, nops;		/* the key's ops in the current phase */
};

#define SM_KC(keys, stride, i) ((struct sm_kc *)((char *)(keys) + (i) * (stride)))

/* Hash each page's key and find its owner, in two sweeps (the second reads the ring's
 * jump table, which the first prefetches). keys is an array of n structs of stride
 * bytes, each starting with the struct sm_kc this fills; a page that cannot be a key
 * gets -EINVAL and its key is done. */
void sm_keys_init(struct slotmap *sm, void *keys, size_t stride, struct pc_page *pages, size_t n);

/* Give every pending key its owner's layout (one RPC phase for missing ones); keys
 * whose owner has none are done with its error. keys is an array of structs of
 * stride bytes, each starting with a struct sm_kc. */
void sm_bind_layouts(struct slotmap *sm, void *keys, size_t stride, size_t n);

/*
 * A phase of one-sided ops for a batch: begin (no key has ops yet), then each key
 * that takes part sets kc.op0 and kc.nops as it adds its ops, then post: the ops go
 * out in one fabric call and every pending key with ops in the phase takes their
 * errors (a failed op ends its key with the error, or marks it stale: the owner
 * restarted). post returns the bytes the phase's READs moved.
 */
void sm_phase_begin(void *keys, size_t stride, size_t n);
uint64_t sm_phase_post(struct slotmap *sm, void *keys, size_t stride, size_t n, struct pc_op *ops,
		       uint32_t nops);

/* A get's outcomes, tallied per key and added to the store's metrics once
 * (sm_get_tally_add): an atomic add per key is a visible share of a simulated get. */
struct sm_get_tally {
	uint64_t verdict[SLOT_NR_VERDICTS];	/* [SLOT_HIT] counts hits */
	uint64_t unreachable, hit_bytes, first_phase, disk;
};

void sm_get_tally_add(struct store_svc *st, const struct sm_get_tally *t);

/* After a pass: drop the layouts of stale keys and make them pending again, once;
 * returns whether any key goes round again. */
bool sm_retry_stale(struct slotmap *sm, void *keys, size_t stride, size_t n, int pass);

#endif
