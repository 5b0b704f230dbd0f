/*
 * slotmap.c - this node's slot regions, peers' layouts (fetched once per peer and
 * incarnation, cached), and the layout RPC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hostmem.h"
#include "base/log.h"
#include "proto.h"
#include "slotmap_int.h"

/* What a class's read policy is known to be from its geometry alone; auto classes
 * that are neither small nor large stay auto and are settled per batch. */
static int resolve_policy(const struct slot_geometry *g, enum pc_read_policy p)
{
	if (p != PC_READ_AUTO)
		return p;
	if ((uint64_t)g->ways * g->stride <= 16384)
		return PC_READ_BUCKET;
	if (g->page_bytes >= (1u << 20))
		return PC_READ_INDEX;
	return PC_READ_AUTO;
}

static int own_slots(struct slotmap *sm)
{
	struct pc_store *st = sm->st;
	const struct pc_store_cfg *cfg = &st->topo->store;
	const struct pc_node *node = &st->topo->nodes[st->self];
	uint64_t seg = cfg->global_segment_size / cfg->nr_classes;
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

		ret = slot_geometry_init(&k->g, c, cfg->size_classes[c], cfg->slot_ways,
					 cfg->slot_num_buckets, seg);
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
		k->policy = resolve_policy(&k->g, cfg->slot_read_policy);
		pc_info("slot region ready: %llu buckets x %u ways x %llu B (=%llu bytes) across %u rail(s)",
			(unsigned long long)k->g.nr_buckets, k->g.ways,
			(unsigned long long)k->g.stride, (unsigned long long)k->g.bytes,
			node->nr_rails);
	}
	sm->layouts[st->self] = sm->own;
	return 0;
}

void slotmap_close(struct slotmap *sm)
{
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
	pthread_mutex_destroy(&sm->lock);
	pthread_mutex_destroy(&sm->direct_lock);
	free(sm);
}

int slotmap_open(struct pc_store *st, struct slotmap **out, char *err, size_t errlen)
{
	struct slotmap *sm = calloc(1, sizeof(*sm));
	int ret;

	if (!sm)
		return -ENOMEM;
	sm->st = st;
	sm->payload_free = st->payload_free;
	pthread_mutex_init(&sm->lock, NULL);
	pthread_mutex_init(&sm->direct_lock, NULL);
	sm->layouts = calloc(st->topo->nr_nodes, sizeof(*sm->layouts));
	if (!sm->layouts) {
		slotmap_close(sm);
		return -ENOMEM;
	}
	if (st->self != PC_PEER_NONE) {
		ret = own_slots(sm);
		if (ret)
			snprintf(err, errlen, "cannot set up its slots: %s", strerror(-ret));
		else
			ret = sm_spill_open(sm, err, errlen);
		if (ret) {
			slotmap_close(sm);
			return ret;
		}
	}
	*out = sm;
	return 0;
}

int slotmap_layout_rpc(struct slotmap *sm, struct pc_msg *resp)
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

/* Decode and check a layout answer: a peer's numbers are validated, never trusted.
 * *outp gets a new layout on 0. */
static int decode_layout(const struct pc_msg *m, uint32_t node, enum pc_read_policy policy,
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
		k->policy = resolve_policy(&k->g, policy);
	}
	*outp = out;
	return 0;
}

/* Fetch the layouts of every node flagged in want[] that has none, in one RPC
 * phase. Nodes that do not answer stay without a layout; their error goes in err[]. */
static void fetch_layouts(struct slotmap *sm, const uint8_t *want, int *err)
{
	struct pc_store *st = sm->st;
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
			  decode_layout(&r->resp, r->peer, st->topo->store.slot_read_policy, &l);

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
		fetch_layouts(sm, want, err);
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

void sm_take_errors(struct sm_kc *k, const struct pc_op *ops)
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

/*
 * Fills run one at a time and store a whole (mem, epoch) pair, never an older one
 * over a newer: map epochs only grow, and a newer answer stands for an older pass
 * too (it is the peer as it is now). So a reader that sees its epoch gets the
 * pointer stored with it or a newer fill's, never one from before a change. Two
 * threads filling at once without the lock could leave one's pointer next to the
 * other's epoch: a down peer's memory under the epoch that knows it is down.
 */
uint8_t *sm_direct_fill(struct slotmap *sm, uint64_t epoch, const struct sm_layout *lay, int c)
{
	struct sm_direct *d = (struct sm_direct *)&lay->cls[c].direct;	/* a cache, not the layout */
	const struct sm_class *cl = &lay->cls[c];
	void *p;

	pthread_mutex_lock(&sm->direct_lock);
	if (d->epoch >= epoch) {
		p = d->mem;
	} else {
		if (pc_fabric_map(sm->st->fabric, lay->node, lay->inc, cl->rkey, cl->base,
				  slot_region_bytes(&cl->g), SM_DIRECT_ACCESS, &p))
			p = NULL;
		__atomic_store_n(&d->mem, (uint8_t *)p, __ATOMIC_RELAXED);
		__atomic_store_n(&d->epoch, epoch, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&sm->direct_lock);
	return p;
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
		pc_info("node %s restarted; re-reading its slot layout",
			sm->st->topo->nodes[lay->node].name);
	}
	pthread_mutex_unlock(&sm->lock);
}
