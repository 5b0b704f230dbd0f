/*
 * slotmap_promote.h - asking owners' disks about misses, and answering (see
 * slotmap_promote.c).
 */
#ifndef PC_SLOTMAP_PROMOTE_H
#define PC_SLOTMAP_PROMOTE_H

#include "slotmap_int.h"
#include "store_svc.h"

/* A miss to ask its owner's disk about, and the answer. */
struct sm_promote_q {
	uint32_t owner;
	struct pc_keyhash h;
	uint32_t expect, cap;		/* as the get asks: exact length, or any up to cap */
	size_t tag;			/* the caller's (which key of its batch) */
	/* out */
	int status;			/* 0: the page follows; -EAGAIN: back in its slot,
					 * read it there; any other: the miss stands */
	uint32_t len;
	uint64_t checksum;		/* slot_checksum() of the page, as the owner saw it */
	const uint8_t *payload;		/* status 0 (with payloads): len bytes, good until
					 * sm_promote_done() */
};

struct sm_promote {
	struct sm_promote_q *q;
	size_t n;
	struct store_fanout f;		/* the requests and their answers */
};

/* Ask the owners of q[0..n), one RPC each in one phase, this node's own disk in
 * place; every q gets its answer. Then sm_promote_done() frees the answers. */
void sm_promote_ask(struct slotmap *sm, struct sm_promote *p);
void sm_promote_done(struct sm_promote *p);

/* Answer PC_RPC_SLOT_PROMOTE. */
int sm_promote_rpc(struct slotmap *sm, const void *req, size_t len, struct pc_msg *resp);

#endif
