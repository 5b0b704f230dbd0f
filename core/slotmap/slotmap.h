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

/* Take this node's slots (when the store has a node), register them, and start
 * spilling them to disk when the topology says so. 0, or -errno with err set. */
int slotmap_open(struct pc_store *st, struct slotmap **out, char *err, size_t errlen);
void slotmap_close(struct slotmap *sm);

int slotmap_set(struct slotmap *sm, struct pc_page *pages, size_t n);
int slotmap_get(struct slotmap *sm, struct pc_page *pages, size_t n);
int slotmap_exists(struct slotmap *sm, struct pc_page *pages, size_t n);

/* Answer PC_RPC_LAYOUT: this node's slot regions and geometry. */
int slotmap_layout_rpc(struct slotmap *sm, struct pc_msg *resp);

/* Answer PC_RPC_SLOT_PROMOTE (slotmap_spill.c). */
int sm_spill_rpc(struct slotmap *sm, const void *req, size_t len, struct pc_msg *resp);

/* Add the spill counters kept outside the store's metrics. */
void sm_spill_metrics(struct slotmap *sm, struct pc_metrics *m);

#endif
