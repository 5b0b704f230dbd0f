/*
 * slotmap.h - directory-free placement: a key's owner comes from the ring, its slot
 * from an independent hash, so any node reads any page with one-sided READs and no
 * lookup. The seed document peercache-slotmap.txt, with size classes and reads that
 * move little more than the page.
 *
 * Not for: choosing owners (ring.c), slot formats (slot.c) or transport (fabrics).
 */
#ifndef PC_SLOTMAP_H
#define PC_SLOTMAP_H

#include <peercache/peercache.h>

#include "store.h"

/* Take this node's slots (when the store has a node) and register them. */
int slotmap_open(struct pc_store *st, struct slotmap **out);
void slotmap_close(struct slotmap *sm);

int slotmap_set(struct slotmap *sm, struct pc_page *pages, size_t n);
int slotmap_get(struct slotmap *sm, struct pc_page *pages, size_t n);
int slotmap_exists(struct slotmap *sm, struct pc_page *pages, size_t n);

/* Answer PC_RPC_LAYOUT: this node's slot regions and geometry. */
int slotmap_layout_rpc(struct slotmap *sm, struct pc_msg *resp);

#endif
