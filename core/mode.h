/*
 * mode.h - what a placement mode (slotmap, p2p) gives the store facade: one ops
 * table, chosen once at open from store.mode. Every slot is filled; a mode with
 * nothing to do for one says so in its own no-op.
 *
 * Not for: the services a mode uses (store_svc.h).
 */
#ifndef PC_MODE_H
#define PC_MODE_H

#include <peercache/peercache.h>

#include "config/topology.h"
#include "store_svc.h"

struct store_mode;

/* What a node's share of the cache takes. */
struct store_footprint {
	uint64_t cache_bytes;		/* page bytes the node can hold, nominal */
	uint64_t mem_bytes;		/* memory mapped for them here (headers only
					 * without payloads) */
};

/* How full this node's slots are, per size class (slotmap; p2p has no slots). */
struct store_class_use {
	uint64_t page_bytes;		/* the class's page size */
	uint64_t slots;			/* nr_buckets x ways */
	uint64_t used;			/* slots holding a page */
	uint64_t stored_bytes;		/* their payload bytes */
	uint64_t claims;		/* slots with a write in progress (odd seq) */
};

struct store_occupancy {
	uint32_t nr_classes;
	struct store_class_use cls[PC_MAX_CLASSES];
};

struct mode_ops {
	const char *name;
	/* Take this node's share (a client takes none). 0, or -errno with err set. */
	int (*open)(struct store_svc *st, struct store_mode **out, char *err, size_t errlen);
	void (*close)(struct store_mode *m);
	/* The batch calls, as pc_batch_set/get/exists say. */
	int (*set)(struct store_mode *m, struct pc_page *pages, size_t n);
	int (*get)(struct store_mode *m, struct pc_page *pages, size_t n);
	int (*exists)(struct store_mode *m, struct pc_page *pages, size_t n);
	/* A get, then a set of the pages that missed (with prefix, of every page from
	 * the first miss on) with the lengths given, as one call for a caller with
	 * nothing to do between the two: the number of hits, the get's statuses and
	 * lengths in pages, *filled the pages handed to the set. -errno, having done
	 * nothing, when the mode does not do it in one (-EOPNOTSUPP) or not for these
	 * pages (-EAGAIN): the caller makes the two batch calls. owners, when not NULL,
	 * gets each page's owner (its node index on the ring) on success (in part, or
	 * not at all, on failure). */
	int (*lookup_fill)(struct store_mode *m, struct pc_page *pages, size_t n, bool prefix,
			   size_t *filled, uint32_t *owners);
	/* A peer's request for this mode; -EOPNOTSUPP for opcodes it does not serve. */
	int (*rpc)(struct store_mode *m, uint32_t from, uint16_t opcode, const void *req, size_t len,
		   struct pc_msg *resp);
	/* Add the counters the mode keeps itself to m (the store filled the rest). */
	void (*metrics)(struct store_mode *m, struct pc_metrics *out);
	/* The ring changed from old (valid until the store closes) to the current one
	 * as node joined (member) or left. */
	void (*member_changed)(struct store_mode *m, uint32_t node, bool member, struct ring *old);
	void (*footprint)(struct store_mode *m, struct store_footprint *out);
	/* Count this node's slots by state, reading every slot header: for metrics
	 * scrapes, never on a batch path. */
	void (*occupancy)(struct store_mode *m, struct store_occupancy *out);
};

/* The base each mode's state embeds first. */
struct store_mode {
	const struct mode_ops *ops;
};

extern const struct mode_ops slotmap_mode_ops;
extern const struct mode_ops p2p_mode_ops;

#endif
