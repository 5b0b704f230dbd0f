/*
 * slotmap_int.h - what slotmap.c (regions, layouts), slotmap_read.c (get, exists)
 * and slotmap_write.c (set) share.
 */
#ifndef PC_SLOTMAP_INT_H
#define PC_SLOTMAP_INT_H

#include <errno.h>
#include <stdlib.h>

#include "placement/slot.h"
#include "proto.h"
#include "slotmap.h"

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
	struct sm_class {
		struct slot_geometry g;
		uint64_t base;
		uint32_t rkey;
		int policy;		/* read policy; auto only for mid-size classes */
		struct sm_direct {	/* sm_direct's answer: a cache, the one mutable part */
			uint8_t *mem;
			uint64_t epoch;	/* 0: none yet */
		} direct;
	} cls[];
};

/* A layout of n classes, zeroed; NULL on ENOMEM. */
static inline struct sm_layout *sm_layout_new(uint32_t n)
{
	return calloc(1, sizeof(struct sm_layout) + n * sizeof(struct sm_class));
}

struct slotmap {
	struct pc_store *st;
	bool payload_free;		/* headers only: the simulator at scale */
	struct sm_layout *own;		/* this node's, when it has one */
	uint8_t *mem[PC_MAX_CLASSES];
	struct pc_region reg[PC_MAX_CLASSES];
	struct sm_layout **layouts;	/* per node; NULL until fetched */
	pthread_mutex_t lock;		/* fetch and retire */
	pthread_mutex_t direct_lock;	/* sm_direct_fill */
	struct sm_layout *retired;
	struct sm_spill *spill;		/* this node's disk, when it spills */
	bool any_spill;			/* some layout known here spills: misses may be
					 * on a disk (set once, never cleared) */
};

/* The layout of node, or NULL when it is not known yet. */
static inline const struct sm_layout *sm_layout_of(struct slotmap *sm, uint32_t node)
{
	return __atomic_load_n(&sm->layouts[node], __ATOMIC_ACQUIRE);
}

/* Forget a layout a peer no longer honours (it restarted), if it is still current. */
void sm_drop_layout(struct slotmap *sm, const struct sm_layout *lay);

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

#define SM_DIRECT_ACCESS (PC_ACCESS_REMOTE_READ | PC_ACCESS_REMOTE_WRITE | PC_ACCESS_REMOTE_ATOMIC)

/* sm_direct's answer when the cache does not hold one for this epoch. */
uint8_t *sm_direct_fill(struct slotmap *sm, uint64_t epoch, const struct sm_layout *lay, int c);

/*
 * The memory of class c of lay's node when this node can address it directly: its
 * own slots, or a peer's that the fabric maps (the in-process world, the simulator
 * without a time model). Such memory is read and written as the owner does its own,
 * under the seqlock, with the same gate and the same choice of way, so a key hits or
 * misses alike either way. NULL: use ops.
 *
 * The answer is kept in the layout with the fabric's map epoch it was got at and
 * stands while the epoch does (a map per owner per batch was a twentieth of a
 * simulator run); sm_direct_fill gets and stores it. A pass reads the epoch once
 * (sm_direct_epoch) and asks per key (sm_direct).
 */
static inline uint64_t sm_direct_epoch(struct slotmap *sm)
{
	struct pc_fabric *f = sm->st->fabric;

	if (!f->maps || f->fault)	/* faults are injected into ops: use them */
		return 0;
	return __atomic_load_n(f->map_epoch, __ATOMIC_ACQUIRE);
}

static inline uint8_t *sm_direct(struct slotmap *sm, uint64_t epoch, const struct sm_layout *lay,
				 int c)
{
	const struct sm_direct *d = &lay->cls[c].direct;

	if (lay == sm->own)
		return sm->mem[c];
	if (!epoch)
		return NULL;
	if (__atomic_load_n(&d->epoch, __ATOMIC_ACQUIRE) == epoch)
		return __atomic_load_n(&d->mem, __ATOMIC_RELAXED);
	return sm_direct_fill(sm, epoch, lay, c);
}

/* Bytes moved by the successful READs among ops. */
static inline uint64_t sm_read_bytes(const struct pc_op *ops, size_t n)
{
	uint64_t b = 0;

	for (size_t i = 0; i < n; i++)
		if (!ops[i].status && ops[i].kind == PC_OP_READ)
			b += pc_op_bytes(&ops[i]);
	return b;
}

/* Is this error an address from before the owner restarted? Then refresh and retry. */
static inline bool sm_stale(int err)
{
	return err == -ESTALE || err == -ENOKEY;
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

enum { SM_PENDING, SM_DONE };

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

/* After a phase: a failed op of the key fails the key (or marks it stale). */
void sm_take_errors(struct sm_kc *k, const struct pc_op *ops);

/* After a pass: drop the layouts of stale keys and make them pending again, once;
 * returns whether any key goes round again. */
bool sm_retry_stale(struct slotmap *sm, void *keys, size_t stride, size_t n, int pass);

/* ------------------------------------------------------------------ spill (slotmap_spill.c) */

/* Start spilling this node's slots to its disk when the topology asks for it. */
int sm_spill_open(struct slotmap *sm, char *err, size_t errlen);
void sm_spill_close(struct slotmap *sm);

/* Promote keys from this node's disk back into its slots; answers get one entry per
 * key and, when payloads is not NULL, the payloads of the 0 answers are appended to it
 * up to budget bytes (later ones are answered -EAGAIN: read them in their slots). */
void sm_spill_promote(struct slotmap *sm, const struct proto_promote_key *keys, uint32_t n,
		      uint32_t budget, struct proto_promote_ans *ans, struct pc_msg *payloads);

/* The disk pool of class c (NULL when not spilling), for tests. */
struct disk_pool *sm_spill_disk(struct slotmap *sm, uint32_t c);

#endif
