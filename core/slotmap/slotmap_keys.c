/*
 * slotmap_keys.c - what every slotmap path does with a batch's keys: hash them and
 * find their owners, post a phase of ops and give each key its ops' errors, and go
 * round once more for keys whose owner restarted.
 *
 * Not for: what a path does with its keys (slotmap_read.c, _write.c, _exists.c).
 */
#include "slotmap_keys.h"
#include "slotmap_layout.h"

void sm_keys_init(struct slotmap *sm, void *keys, size_t stride, struct pc_page *pages, size_t n)
{
	const struct ring *r = store_ring(sm->st);

	for (size_t i = 0; i < n; i++) {
		struct sm_kc *k = SM_KC(keys, stride, i);
		struct pc_page *pg = &pages[i];

		*k = (struct sm_kc){ .pg = pg };
		pg->status = 0;
		if (!pg->key && pg->key_len) {
			k->state = SM_DONE;
			pg->status = -EINVAL;
			continue;
		}
		k->h = keyhash_of(pg->key, pg->key_len);
		ring_prefetch(r, k->h);
	}
	for (size_t i = 0; i < n; i++) {
		struct sm_kc *k = SM_KC(keys, stride, i);

		if (k->state != SM_PENDING)
			continue;
		k->owner = ring_owner_of(r, k->h);
		if (k->owner == RING_NONE) {
			k->err = -EHOSTUNREACH;
			k->state = SM_DONE;
		}
	}
}

static void take_errors(struct sm_kc *k, const struct pc_op *ops)
{
	for (uint32_t i = 0; i < k->nops; i++) {
		int e = ops[k->op0 + i].status;

		if (!e)
			continue;
		if (sm_stale(e))
			k->stale = true;
		else if (!k->err)
			k->err = e;
		k->state = SM_DONE;
	}
}

void sm_bind_layouts(struct slotmap *sm, void *keys, size_t stride, size_t n)
{
	uint32_t nn = sm->st->topo->nr_nodes;
	uint8_t *want = NULL;
	int *err = NULL;
	bool missing = false;

	for (size_t i = 0; i < n; i++) {
		struct sm_kc *k = SM_KC(keys, stride, i);

		if (k->state != SM_PENDING)
			continue;
		k->lay = sm_layout_of(sm, k->owner);
		missing |= !k->lay;
	}
	if (!missing)
		return;
	want = calloc(nn, 1);
	err = calloc(nn, sizeof(*err));
	for (size_t i = 0; want && i < n; i++) {
		struct sm_kc *k = SM_KC(keys, stride, i);

		if (k->state == SM_PENDING && !k->lay)
			want[k->owner] = 1;
	}
	if (want && err)
		sm_fetch_layouts(sm, want, err);
	for (size_t i = 0; i < n; i++) {
		struct sm_kc *k = SM_KC(keys, stride, i);

		if (k->state != SM_PENDING || k->lay)
			continue;
		k->lay = sm_layout_of(sm, k->owner);
		if (!k->lay) {
			k->err = !want || !err ? -ENOMEM : err[k->owner] ? err[k->owner] : -EHOSTUNREACH;
			k->state = SM_DONE;
		}
	}
	free(want);
	free(err);
}

void sm_get_tally_add(struct store_svc *st, const struct sm_get_tally *t)
{
	static const size_t field[SLOT_NR_VERDICTS] = {
		[SLOT_HIT] = offsetof(struct pc_metrics, hits),
		[SLOT_MISS_ABSENT] = offsetof(struct pc_metrics, miss_absent),
		[SLOT_MISS_OTHER_KEY] = offsetof(struct pc_metrics, miss_other_key),
		[SLOT_MISS_TORN] = offsetof(struct pc_metrics, miss_torn),
		[SLOT_MISS_LENGTH] = offsetof(struct pc_metrics, miss_length),
		[SLOT_MISS_CHECKSUM] = offsetof(struct pc_metrics, miss_checksum),
	};

	for (int v = 0; v < SLOT_NR_VERDICTS; v++)
		if (t->verdict[v])
			store_stat_add(st, (uint64_t *)((char *)&st->metrics + field[v]), t->verdict[v]);
	if (t->unreachable)
		METRIC_ADD(st, miss_unreachable, t->unreachable);
	if (t->hit_bytes)
		METRIC_ADD(st, hit_bytes, t->hit_bytes);
	if (t->first_phase)
		METRIC_ADD(st, first_phase_hits, t->first_phase);
	if (t->disk)
		METRIC_ADD(st, disk_hits, t->disk);
}

void sm_phase_begin(void *keys, size_t stride, size_t n)
{
	for (size_t i = 0; i < n; i++)
		SM_KC(keys, stride, i)->nops = 0;
}

uint64_t sm_phase_post(struct slotmap *sm, void *keys, size_t stride, size_t n, struct pc_op *ops,
		       uint32_t nops)
{
	uint64_t bytes = 0;

	if (!nops)
		return 0;
	store_post(sm->st, ops, nops);
	for (uint32_t i = 0; i < nops; i++)
		if (!ops[i].status && ops[i].kind == PC_OP_READ)
			bytes += pc_op_bytes(&ops[i]);
	for (size_t i = 0; i < n; i++) {
		struct sm_kc *k = SM_KC(keys, stride, i);

		if (k->state == SM_PENDING && k->nops)
			take_errors(k, ops);
	}
	return bytes;
}

bool sm_retry_stale(struct slotmap *sm, void *keys, size_t stride, size_t n, int pass)
{
	bool again = false;

	for (size_t i = 0; i < n; i++) {
		struct sm_kc *k = SM_KC(keys, stride, i);

		if (!k->stale)
			continue;
		if (k->lay)
			sm_drop_layout(sm, k->lay);
		k->stale = false;
		k->lay = NULL;
		if (pass == 0 && !k->err) {
			k->state = SM_PENDING;
			again = true;
		} else if (!k->err) {
			k->err = -ESTALE;
		}
	}
	return again;
}
