/*
 * slotmap_int.h - what the files of slotmap mode share: the mode's state, a node's
 * slot layout as readers address it, and small helpers over both.
 *
 * The mode (the seed's peercache-slotmap.txt, with size classes): a key's owner comes
 * from the ring, its slot from an independent hash, so any node reads any page with
 * one-sided READs and no lookup. slotmap.c opens it and holds its ops; the paths are
 * slotmap_read.c (get), slotmap_write.c (set), slotmap_exists.c, slotmap_fill.c (a
 * get and its set in place, key by key); slotmap_keys.c what they do alike;
 * slotmap_hints.c the ways remote keys were last seen in; slotmap_layout.c peers'
 * layouts; slotmap_direct.c slots addressed as memory; slotmap_spill.c and
 * slotmap_promote.c the disk under the slots.
 */
#ifndef PC_SLOTMAP_INT_H
#define PC_SLOTMAP_INT_H

#include <errno.h>
#include <stdlib.h>

#include <pthread.h>

#include "mode.h"
#include "placement/slot.h"
#include "proto.h"
#include "store_svc.h"

/* One node's slots as a reader addresses them, nr_classes classes long (a client of
 * 512 nodes holds 512). Layouts are immutable once published (but for the
 * direct-access cache); a refreshed one replaces the pointer and the old one is
 * retired. */
struct sm_layout {
	uint32_t node;
	uint64_t inc;			/* the node's fabric incarnation */
	uint32_t nr_classes;
	bool spill;			/* the node spills to disk: ask it about misses */
	struct sm_layout *retired_next;
	struct sm_class {		/* each starts a cache line, its geometry first */
		_Alignas(64) struct slot_geometry g;
		uint64_t base;
		uint32_t rkey;
		int policy;		/* read policy; auto only for mid-size classes */
		struct sm_direct {	/* sm_direct's answer: a cache, the one mutable part */
			uint8_t *mem;
			uint64_t epoch;	/* 0: none yet */
		} direct;
	} cls[];
};

/* A layout of n classes, zeroed, at a cache line; NULL on ENOMEM. */
static inline struct sm_layout *sm_layout_new(uint32_t n)
{
	size_t bytes = sizeof(struct sm_layout) + n * sizeof(struct sm_class);
	struct sm_layout *lay = aligned_alloc(64, (bytes + 63) & ~(size_t)63);

	if (lay)
		memset(lay, 0, bytes);
	return lay;
}

/*
 * A class of a node's header-only slots (the simulator's payload-free mode) in
 * place, kept per node and class for keys served in place (slotmap_fill.c,
 * sm_near): a request's keys spread over every node, and reading each key's layout
 * for its class, memory and bucket takes four cache lines one after the other (the
 * pointer, the layout's head, the class, the direct cache). An entry is one cache line with what a key's bucket needs; it
 * stands for the layout it was made from, until sm_drop_layout drops it, and for
 * one map epoch; a seqlock makes it whole to readers. Entries exist for layouts
 * whose classes are the topology's (store.slot_size_classes, which every peer must
 * agree on), so that a page's class follows from its length without the layout.
 */
struct sm_near {
	_Alignas(64) uint64_t seq;	/* odd while written */
	uint64_t epoch;			/* the map epoch; SM_NEAR_OWN: this node's own */
	const struct sm_class *cl;	/* NULL: not in place (use the layout) */
	uint8_t *mem;			/* the class's slots as this node addresses them */
	uint8_t *index;			/* and its index */
	uint64_t nr_buckets;		/* of cl->g, as the fields below (the slots'
					 * stride in memory is a header's) */
	uint32_t page_bytes;
	uint32_t index_stride;
	uint32_t ways;
};

_Static_assert(sizeof(struct sm_near) == 64, "sm_near: one cache line");

#define SM_NEAR_OWN UINT64_MAX

struct slotmap {
	struct store_mode base;		/* first: the store calls the mode through it */
	struct store_svc *st;
	bool payload_free;		/* headers only: the simulator at scale */
	struct sm_layout *own;		/* this node's, when it has one */
	uint8_t *mem[PC_MAX_CLASSES];
	struct pc_region reg[PC_MAX_CLASSES];
	struct sm_layout **layouts;	/* per node; NULL until fetched */
	struct sm_near *near;		/* per class, per node (slotmap_direct.h) */
	uint32_t nr_classes;		/* the topology's, as near is laid out */
	pthread_mutex_t lock;		/* fetch and retire */
	pthread_mutex_t direct_lock;	/* sm_direct_fill, and near's writers */
	struct sm_layout *retired;
	struct sm_spill *spill;		/* this node's disk, when it spills */
	struct sm_claims *claims;	/* claims seen held, to take over (slotmap_claims.c) */
	bool any_spill;			/* some layout known here spills: misses may be
					 * on a disk (set once, never cleared) */
	uint64_t *hints;		/* way hints (slotmap_hints.h); NULL until the first */
};

static inline struct slotmap *sm_of(struct store_mode *m)
{
	return (struct slotmap *)m;
}

/* The layout of node, or NULL when it is not known yet. */
static inline const struct sm_layout *sm_layout_of(struct slotmap *sm, uint32_t node)
{
	return __atomic_load_n(&sm->layouts[node], __ATOMIC_ACQUIRE);
}

/* The smallest class of lay that holds len bytes, or -1. */
static inline int sm_class_for(const struct sm_layout *lay, uint64_t len)
{
	for (uint32_t c = 0; c < lay->nr_classes; c++)
		if (lay->cls[c].g.page_bytes >= len)
			return (int)c;
	return -1;
}

static inline uint64_t sm_slot_addr(const struct sm_class *c, uint64_t bucket, uint32_t way)
{
	return c->base + slot_offset(&c->g, bucket, way);
}

static inline uint64_t sm_index_addr(const struct sm_class *c, uint64_t bucket)
{
	return c->base + slot_index_offset(&c->g, bucket);
}

/* Local memory of this node's class c at a layout offset. */
static inline uint8_t *sm_local(struct slotmap *sm, int c, uint64_t off)
{
	return sm->mem[c] + off;
}

/* A one-sided op on a node's slots, pinned to the layout's incarnation. */
static inline struct pc_op sm_op(uint8_t kind, const struct sm_layout *lay, uint64_t raddr,
				 uint32_t rkey, void *local, uint32_t len)
{
	return (struct pc_op){ .kind = kind, .peer = lay->node, .peer_inc = lay->inc,
			       .rkey = rkey, .raddr = raddr, .local = local, .len = len };
}

/* One op over a whole slot of class c: its header to or from hdr, its payload to or
 * from the caller's page (registered memory when lreg says so). Without payloads
 * (the simulator), the header alone, standing for len more bytes. */
static inline struct pc_op sm_slot_op(uint8_t kind, const struct sm_layout *lay,
				      const struct sm_class *c, uint64_t raddr, void *hdr,
				      void *page, uint32_t len, const struct pc_region *lreg)
{
	struct pc_op op;

	if (!slot_has_payload(&c->g)) {
		op = sm_op(kind, lay, raddr, c->rkey, hdr, SLOT_HEADER_BYTES);
		op.virt_len = len;
		return op;
	}
	op = sm_op(kind, lay, raddr, c->rkey, page, len);
	op.head = hdr;
	op.head_len = SLOT_HEADER_BYTES;
	op.lreg = lreg;
	return op;
}

/* The gate for a slot of class c: the checksum over the payload, or, without
 * payloads, the virtual checksum of key and length. */
static inline enum slot_verdict sm_gate(const struct sm_class *c, const struct slot_header *h,
					const void *payload, struct pc_keyhash key, uint32_t expect,
					uint32_t max)
{
	return slot_has_payload(&c->g) ? slot_matches(h, payload, key, expect, max) :
					 slot_matches_virtual(h, key, expect, max);
}

/* Claims other writers left in slots (slot.h: slot_claim_word). */
int sm_claims_open(struct slotmap *sm);
void sm_claims_close(struct slotmap *sm);
/* The claim word a writer of this node swaps into a slot now at version seq; now
 * is the env's clock as the writer read it for this pass over its batch (a read per
 * key is a visible share of a simulated set; the deadline is in milliseconds). */
uint64_t sm_claim_word(struct slotmap *sm, uint64_t now, uint64_t seq);
/* Whether the odd word seen in node's slot (cls, bucket, way) may be taken over:
 * this node has seen that same word there for store.slot_claim_timeout_ms. The
 * first sighting starts the watch and answers false. Counts each takeover. */
bool sm_claim_expired(struct slotmap *sm, uint32_t node, int cls, uint64_t bucket,
		      uint32_t way, uint64_t word);

/* The batch paths (slotmap_write.c, slotmap_read.c, slotmap_exists.c). */
int slotmap_set(struct store_mode *m, struct pc_page *pages, size_t n);
int slotmap_get(struct store_mode *m, struct pc_page *pages, size_t n);
int slotmap_exists(struct store_mode *m, struct pc_page *pages, size_t n);
/* A get and its fill in place, key by key (slotmap_fill.c; mode.h: lookup_fill). */
int slotmap_lookup_fill(struct store_mode *m, struct pc_page *pages, size_t n, bool prefix,
			size_t *filled, uint32_t *owners);

#endif
