/*
 * slotmap_layout.h - this node's layout answer and peers' layouts (slotmap_layout.c).
 */
#ifndef PC_SLOTMAP_LAYOUT_H
#define PC_SLOTMAP_LAYOUT_H

#include "slotmap_int.h"

/* What a class's read policy is known to be from its geometry alone (auto classes
 * that are neither small nor large stay auto and are settled per batch). */
int sm_resolve_policy(const struct slot_geometry *g, enum pc_read_policy p);

/* Answer PC_RPC_LAYOUT: this node's slot regions and geometry. */
int sm_layout_rpc(struct slotmap *sm, struct pc_msg *resp);

/* Decode and check a layout answer from node: a peer's numbers are validated, never
 * trusted. 0 and a new layout in *outp (the caller frees it), -EPROTO, -ENOMEM.
 * Pure: it reads m alone (the fuzzers call it so). */
int sm_layout_decode(const struct pc_msg *m, uint32_t node, enum pc_read_policy policy,
		     struct sm_layout **outp);

/* Fetch the layouts of every node flagged in want[] that has none, in one RPC
 * phase. Nodes that do not answer stay without a layout; their error goes in err[]. */
void sm_fetch_layouts(struct slotmap *sm, const uint8_t *want, int *err);

/* Forget a layout a peer no longer honours (it restarted), if it is still current. */
void sm_drop_layout(struct slotmap *sm, const struct sm_layout *lay);

#endif
