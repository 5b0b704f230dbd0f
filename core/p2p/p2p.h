/*
 * p2p.h - p2p mode: published pools and a distributed directory (see p2p.c).
 *
 * Not for: slotmap (slotmap.h).
 */
#ifndef PC_P2P_H
#define PC_P2P_H

#include <peercache/peercache.h>

#include "store.h"

struct p2p;

/* This node's published pool and directory shard (a client gets neither). 0, or
 * -errno with err set. */
int p2p_open(struct pc_store *st, struct p2p **out, char *err, size_t errlen);
void p2p_close(struct p2p *p);

int p2p_set(struct p2p *p, struct pc_page *pages, size_t n);
int p2p_get(struct p2p *p, struct pc_page *pages, size_t n);
int p2p_exists(struct p2p *p, struct pc_page *pages, size_t n);

/* PC_RPC_DIR_UPDATE and PC_RPC_DIR_GET. */
int p2p_rpc(struct p2p *p, uint32_t from, uint16_t opcode, const void *req, size_t len,
	    struct pc_msg *resp);

/* The ring changed from old (kept until the store closes) to the store's current
 * one, as node joined or left. Join: hand the entries whose shard moved to their new
 * owner. Leave: drop the entries naming node, and publish again this node's own pages
 * whose shard was node's. Both in the background. */
void p2p_member_changed(struct p2p *p, uint32_t node, bool member, struct ring *old);

/* pool_keys and dir_entries. */
void p2p_metrics(struct p2p *p, struct pc_metrics *m);

#endif
