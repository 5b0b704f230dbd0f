/*
 * slotmap_layout.c - slot layouts: this node's answer to PC_RPC_LAYOUT, and peers'
 * layouts, fetched once per peer and incarnation (one RPC phase for all missing
 * ones), checked, cached, and retired when the peer restarts.
 *
 * Not for: this node's own slots (slotmap.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "slotmap_direct.h"
#include "slotmap_layout.h"

/* What a class's read policy is known to be from its geometry alone; auto classes
 * that are neither small nor large stay auto and are settled per batch. */
int sm_resolve_policy(const struct slot_geometry *g, enum pc_read_policy p)
{
	if (p != PC_READ_AUTO)
		return p;
	if ((uint64_t)g->ways * g->stride <= 16384)
		return PC_READ_BUCKET;
	if (g->page_bytes >= (1u << 20))
		return PC_READ_INDEX;
	return PC_READ_AUTO;
}

int sm_layout_rpc(struct slotmap *sm, struct pc_msg *resp)
{
	struct proto_layout h = { .magic = PROTO_LAYOUT_MAGIC, .version = PROTO_LAYOUT_VERSION,
				  .nr_classes = (uint16_t)sm->own->nr_classes, .node = sm->own->node,
				  .flags = sm->spill ? PROTO_LAYOUT_SPILL : 0,
				  .incarnation = sm->own->inc };
	int ret;

	if (sm->st->self == PC_PEER_NONE)
		return -ENOENT;
	ret = pc_msg_append(resp, &h, sizeof(h));
	for (uint32_t c = 0; c < sm->own->nr_classes && !ret; c++) {
		const struct sm_class *k = &sm->own->cls[c];
		struct proto_layout_class pc = { .page_bytes = k->g.page_bytes, .stride = k->g.stride,
						 .mem_stride = k->g.mem_stride,
						 .nr_buckets = k->g.nr_buckets,
						 .index_stride = k->g.index_stride, .base = k->base,
						 .ways = k->g.ways, .rkey = k->rkey };

		ret = pc_msg_append(resp, &pc, sizeof(pc));
	}
	return ret;
}

int sm_layout_decode(const struct pc_msg *m, uint32_t node, enum pc_read_policy policy,
		     struct sm_layout **outp)
{
	const struct proto_layout *h = m->data;
	const struct proto_layout_class *pc;
	struct sm_layout *out;

	if (m->len < sizeof(*h) || h->magic != PROTO_LAYOUT_MAGIC ||
	    h->version != PROTO_LAYOUT_VERSION || !h->nr_classes ||
	    h->nr_classes > PC_MAX_CLASSES || h->node != node ||
	    m->len != sizeof(*h) + h->nr_classes * sizeof(*pc))
		return -EPROTO;
	pc = (const struct proto_layout_class *)(h + 1);
	out = sm_layout_new(h->nr_classes);
	if (!out)
		return -ENOMEM;
	out->node = node;
	out->inc = h->incarnation;
	out->nr_classes = h->nr_classes;
	out->spill = h->flags & PROTO_LAYOUT_SPILL;
	for (uint32_t c = 0; c < h->nr_classes; c++) {
		struct sm_class *k = &out->cls[c];

		if (slot_geometry_init(&k->g, c, pc[c].page_bytes, pc[c].ways, pc[c].nr_buckets, 0) ||
		    k->g.stride != pc[c].stride || k->g.index_stride != pc[c].index_stride ||
		    (c && pc[c].page_bytes <= pc[c - 1].page_bytes) ||
		    (pc[c].mem_stride != k->g.stride && pc[c].mem_stride != SLOT_HEADER_BYTES)) {
			free(out);
			return -EPROTO;
		}
		if (pc[c].mem_stride != k->g.stride)
			slot_geometry_drop_payload(&k->g);
		k->base = pc[c].base;
		k->rkey = pc[c].rkey;
		k->policy = sm_resolve_policy(&k->g, policy);
	}
	*outp = out;
	return 0;
}

void sm_fetch_layouts(struct slotmap *sm, const uint8_t *want, int *err)
{
	struct store_svc *st = sm->st;
	uint32_t nn = st->topo->nr_nodes, nr = 0;
	struct pc_rpc *rpcs = calloc(nn, sizeof(*rpcs));

	if (!rpcs) {
		for (uint32_t i = 0; i < nn; i++)
			if (want[i])
				err[i] = -ENOMEM;
		return;
	}
	for (uint32_t i = 0; i < nn; i++)
		if (want[i] && !sm_layout_of(sm, i))
			rpcs[nr++] = (struct pc_rpc){ .peer = i, .opcode = PC_RPC_LAYOUT };
	if (nr && !store_call(st, rpcs, nr))
		METRIC_ADD(st, layout_fetches, nr);
	for (uint32_t k = 0; k < nr; k++) {
		struct pc_rpc *r = &rpcs[k];
		struct sm_layout *l = NULL;
		int ret = r->status ? r->status :
			  sm_layout_decode(&r->resp, r->peer, st->topo->store.slot_read_policy, &l);

		if (ret) {
			if (ret == -EPROTO)
				pc_warn("node %s sent a malformed slot layout; its keys miss",
					st->topo->nodes[r->peer].name);
			err[r->peer] = ret;
			free(l);
		} else {
			struct sm_layout *expect = NULL;

			if (l->spill)
				__atomic_store_n(&sm->any_spill, true, __ATOMIC_RELAXED);
			/* Another thread may have installed one meanwhile: keep theirs. */
			if (!__atomic_compare_exchange_n(&sm->layouts[r->peer], &expect, l, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				free(l);
		}
		pc_msg_free(&r->resp);
	}
	free(rpcs);
}

void sm_drop_layout(struct slotmap *sm, const struct sm_layout *lay)
{
	struct sm_layout *cur = (struct sm_layout *)lay;

	if (lay == sm->own)
		return;
	pthread_mutex_lock(&sm->lock);
	/* Readers may still hold it: retire it until close rather than free it. */
	if (__atomic_compare_exchange_n(&sm->layouts[lay->node], &cur, NULL, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		cur->retired_next = sm->retired;
		sm->retired = cur;
		sm_near_drop(sm, lay->node);
		pc_info("node %s restarted; re-reading its slot layout",
			sm->st->topo->nodes[lay->node].name);
	}
	pthread_mutex_unlock(&sm->lock);
}
