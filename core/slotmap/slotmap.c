/*
 * slotmap.c - slotmap mode as the store sees it: its ops table, this node's slot
 * regions (mapped, registered, announced), open and close.
 *
 * Not for: the batch paths or layouts (see slotmap_int.h for which file holds what).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hostmem.h"
#include "base/log.h"
#include "proto.h"
#include "slotmap_hints.h"
#include "slotmap_int.h"
#include "slotmap_layout.h"
#include "slotmap_promote.h"
#include "slotmap_spill.h"

static int own_slots(struct slotmap *sm)
{
	struct store_svc *st = sm->st;
	const struct pc_store_cfg *cfg = &st->topo->store;
	const struct pc_node *node = &st->topo->nodes[st->self];
	int ret;

	sm->own = sm_layout_new(cfg->nr_classes);
	if (!sm->own)
		return -ENOMEM;
	sm->own->node = st->self;
	sm->own->inc = st->fabric->incarnation;
	sm->own->nr_classes = cfg->nr_classes;
	for (uint32_t c = 0; c < cfg->nr_classes; c++) {
		struct sm_class *k = &sm->own->cls[c];
		size_t bytes;

		ret = slot_class_geometry(&k->g, cfg, c);
		if (ret)
			return ret;
		if (sm->payload_free)
			slot_geometry_drop_payload(&k->g);
		bytes = slot_region_bytes(&k->g);
		/* Fresh memory is zero: every slot starts empty. Payload-free slots (the
		 * simulator) are small and touched sparsely: not populated. */
		ret = hostmem_map(&sm->mem[c], bytes, !sm->payload_free);
		if (ret)
			return ret;
		/* Readers read slots and the index; remote writers write both and may
		 * claim a slot with CAS: this region needs all three. */
		sm->reg[c] = (struct pc_region){ .addr = sm->mem[c], .len = bytes,
						 .access = PC_ACCESS_REMOTE_READ |
							   PC_ACCESS_REMOTE_WRITE |
							   PC_ACCESS_REMOTE_ATOMIC };
		ret = pc_fabric_reg(st->fabric, &sm->reg[c]);
		if (ret) {
			sm->reg[c].len = 0;
			return ret;
		}
		k->base = (uint64_t)(uintptr_t)sm->mem[c];
		k->rkey = sm->reg[c].key;
		k->policy = sm_resolve_policy(&k->g, cfg->slot_read_policy);
		pc_info("slot region ready: %llu buckets x %u ways x %llu B (=%llu bytes) across %u rail(s)",
			(unsigned long long)k->g.nr_buckets, k->g.ways,
			(unsigned long long)k->g.stride, (unsigned long long)k->g.bytes,
			node->nr_rails);
	}
	sm->layouts[st->self] = sm->own;
	return 0;
}

static void sm_close(struct store_mode *m)
{
	struct slotmap *sm = sm_of(m);

	if (!sm)
		return;
	sm_spill_close(sm);	/* its task reads the slots */
	for (uint32_t c = 0; c < PC_MAX_CLASSES; c++) {
		if (sm->reg[c].len)
			pc_fabric_dereg(sm->st->fabric, &sm->reg[c]);
		if (sm->mem[c])
			hostmem_unmap(sm->mem[c], slot_region_bytes(&sm->own->cls[c].g));
	}
	for (uint32_t i = 0; sm->layouts && i < sm->st->topo->nr_nodes; i++)
		if (sm->layouts[i] && sm->layouts[i] != sm->own)
			free(sm->layouts[i]);
	free(sm->own);
	while (sm->retired) {
		struct sm_layout *l = sm->retired;

		sm->retired = l->retired_next;
		free(l);
	}
	free(sm->layouts);
	free(sm->near);
	sm_hints_free(sm);
	pthread_mutex_destroy(&sm->lock);
	pthread_mutex_destroy(&sm->direct_lock);
	sm_claims_close(sm);
	free(sm);
}

static int sm_open(struct store_svc *st, struct store_mode **out, char *err, size_t errlen)
{
	struct slotmap *sm = calloc(1, sizeof(*sm));
	size_t near;
	int ret;

	if (!sm)
		return -ENOMEM;
	sm->base.ops = &slotmap_mode_ops;
	sm->st = st;
	sm->payload_free = st->payload_free;
	pthread_mutex_init(&sm->lock, NULL);
	pthread_mutex_init(&sm->direct_lock, NULL);
	sm->layouts = calloc(st->topo->nr_nodes, sizeof(*sm->layouts));
	sm->nr_classes = st->topo->store.nr_classes;
	near = (size_t)st->topo->nr_nodes * sm->nr_classes * sizeof(*sm->near);
	sm->near = aligned_alloc(64, near ? near : sizeof(*sm->near));
	if (sm->near)
		memset(sm->near, 0, near);
	if (!sm->layouts || !sm->near || sm_claims_open(sm)) {
		sm_close(&sm->base);
		return -ENOMEM;
	}
	if (st->self != PC_PEER_NONE) {
		ret = own_slots(sm);
		if (ret)
			snprintf(err, errlen, "cannot set up its slots: %s", strerror(-ret));
		else
			ret = sm_spill_open(sm, err, errlen);
		if (ret) {
			sm_close(&sm->base);
			return ret;
		}
	}
	*out = &sm->base;
	return 0;
}

static int sm_rpc(struct store_mode *m, uint32_t from, uint16_t opcode, const void *req, size_t len,
		  struct pc_msg *resp)
{
	struct slotmap *sm = sm_of(m);

	(void)from;
	switch (opcode) {
	case PC_RPC_LAYOUT:
		return len ? -EPROTO : sm_layout_rpc(sm, resp);
	case PC_RPC_SLOT_PROMOTE:
		return sm_promote_rpc(sm, req, len, resp);
	default:
		return -EOPNOTSUPP;
	}
}

static void sm_metrics(struct store_mode *m, struct pc_metrics *out)
{
	sm_spill_metrics(sm_of(m), out);
}

/* Slotmap moves nothing when the ring changes: a departed node's pages are gone with
 * it, and its keys are misses at their new owners until rewritten. */
static void sm_member_changed(struct store_mode *m, uint32_t node, bool member, struct ring *old)
{
	(void)m;
	(void)node;
	(void)member;
	(void)old;
}

static void sm_footprint(struct store_mode *m, struct store_footprint *out)
{
	const struct sm_layout *own = sm_of(m)->own;

	for (uint32_t c = 0; own && c < own->nr_classes; c++) {
		out->cache_bytes += own->cls[c].g.bytes;
		out->mem_bytes += slot_region_bytes(&own->cls[c].g);
	}
}

/* Every slot's header as it is now: a page (magic and version), a write in progress
 * (odd seq, claimed or being rewritten), or empty. Reads race with writers; the
 * counts are a snapshot good to a slot or two. */
static void sm_occupancy(struct store_mode *m, struct store_occupancy *out)
{
	struct slotmap *sm = sm_of(m);
	const struct sm_layout *own = sm->own;

	*out = (struct store_occupancy){ 0 };
	for (uint32_t c = 0; own && c < own->nr_classes; c++) {
		const struct slot_geometry *g = &own->cls[c].g;
		struct store_class_use *u = &out->cls[c];

		u->page_bytes = g->page_bytes;
		u->slots = g->nr_buckets * g->ways;
		for (uint64_t i = 0; i < u->slots; i++) {
			const uint8_t *p = sm->mem[c] + i * g->mem_stride;
			struct slot_header h;

			slot_header_peek(p, &h);
			if (h.seq & 1) {
				u->claims++;
			} else if (!slot_header_empty(&h)) {
				u->used++;
				u->stored_bytes += slot_get32(p + 32);
			}
		}
		out->nr_classes = c + 1;
	}
}

const struct mode_ops slotmap_mode_ops = {
	.name = "slotmap",
	.open = sm_open,
	.close = sm_close,
	.set = slotmap_set,
	.get = slotmap_get,
	.exists = slotmap_exists,
	.lookup_fill = slotmap_lookup_fill,
	.rpc = sm_rpc,
	.metrics = sm_metrics,
	.member_changed = sm_member_changed,
	.footprint = sm_footprint,
	.occupancy = sm_occupancy,
};
