/*
 * p2p_int.h - what p2p.c (the pool, the directory shard, set, get, exists) and
 * p2p_jobs.c (background work: handoffs, re-publication, notes to publishers) share.
 */
#ifndef PC_P2P_INT_H
#define PC_P2P_INT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "directory.h"
#include "p2p.h"
#include "placement/slot.h"
#include "proto.h"
#include "tier/pool.h"

#define MAX_JOBS 256		/* background jobs running at once */

struct p2p_class {
	struct slot_geometry g;		/* a block is one slot: header, then the page */
	struct host_pool *pool;
	uint64_t *gen;			/* per block: the publication it holds */
	struct pc_region reg;
};

/*
 * A reader's one-sided READ passes no CPU of the publisher, whose LRU would then see
 * only its own reads: a page that only other nodes read would age out as if unread.
 * Readers note the blocks they hit; a background sender tells the publishers (one
 * PC_RPC_P2P_TOUCH each, in one phase) a batch at a time (send_touches). Best effort:
 * past TOUCH_CAP waiting notes, new ones are dropped. One sender that lives while
 * notes come, not a thread per batch of notes. Measured on a 2-core VM: pcbench
 * --mode p2p reads 8-15% fewer pages per second with the notes than without
 * (alternated runs; about the same with a thread per flush, or sending every 5 or
 * 20 ms, so not the sending), for about one point of hit rate at 4x
 * oversubscription.
 */
#define TOUCH_BATCH 1024
#define TOUCH_CAP 2048
#define TOUCH_NAP_MS 10
#define TOUCH_WAIT_MS 200
#define TOUCH_IDLE_MS 1000

struct touch_note {
	uint32_t node;			/* the publisher */
	struct proto_touch t;
};

struct p2p {
	struct pc_store *st;
	uint32_t nr_classes;
	struct p2p_class cls[PC_MAX_CLASSES];
	struct dir dir;			/* this node's shard */
	uint64_t gen;			/* publications so far (atomic) */
	pthread_mutex_t tasks_lock;	/* guards jobs, nr_jobs, closing */
	struct p2p_job *jobs[MAX_JOBS];	/* handoffs and republishes not yet joined */
	uint32_t nr_jobs;
	bool closing;			/* atomic: jobs stop retrying */
	bool handoff_queued;		/* a handoff will look at the shard (atomic) */
	/* remote touches (see send_touches) */
	pthread_mutex_t touch_lock;	/* guards notes, nr_notes, touch_queued */
	struct touch_note notes[TOUCH_CAP];
	uint32_t nr_notes;
	bool touch_queued;		/* a sender runs */
	bool drops_waiting;		/* a drop note is waiting: send at once */
	uint64_t touched;		/* own blocks others' reads moved up (atomic) */
	uint64_t orphans;		/* own blocks freed after a replacement (atomic) */
};

/* A background job: a handoff, or a republish after a leave. */
struct p2p_job {
	struct p2p *p;
	void (*fn)(struct p2p_job *j);
	struct pc_task *task;
	bool done;			/* the job's last act (atomic) */
	struct ring *old;		/* republish: the ring before the leave */
	uint32_t node;			/* republish: the node that left */
};

/* One entry to send a shard: a put or a removal. */
struct upd {
	struct pc_keyhash key;
	struct dir_loc loc;
	bool del;
	size_t page;			/* put: the page of the batch it is for */
};

/* A key of a get batch: its directory answer, then its READ. */
struct pkey {
	struct pc_keyhash key;
	int state;			/* 0 ask, 1 found, 2 done */
	int verdict;
	int err;
	struct dir_loc loc;
	uint8_t hdr[SLOT_HEADER_BYTES];
};

/* ---- p2p.c */

/* Where block b of class c lies, as a directory entry names it. */
struct dir_loc p2p_own_loc(const struct p2p *p, uint32_t c, uint32_t b, uint32_t len);
/* A page this node published: its block, if l names one of this incarnation. */
uint8_t *p2p_own_block(struct p2p *p, const struct dir_loc *l, uint32_t *b);
/* Put an entry into this node's shard (see p2p.c). 0 or -ENOMEM. */
int p2p_shard_put(struct p2p *p, struct pc_keyhash key, const struct dir_loc *l);
/* Send updates to their shards, this node's own directly; status[i] for u[i]. */
void p2p_send_updates(struct p2p *p, const struct upd *u, size_t n, int *status);

/* ---- p2p_jobs.c */

/* Look for entries this shard no longer owns, once more, in the background. */
void p2p_handoff_soon(struct p2p *p);
/* After a get's READs: note its hits on other nodes' pages for their publishers. */
void p2p_note_reads(struct p2p *p, const struct pkey *k, const uint32_t *at,
		    const struct pc_op *ops, uint32_t n);
/* This shard replaced old, another node's publication of key: free that block. */
void p2p_drop_replaced(struct p2p *p, struct pc_keyhash key, const struct dir_loc *old);
/* PC_RPC_P2P_TOUCH: notes from other nodes on this node's blocks. */
int p2p_on_notes(struct p2p *p, const void *req, size_t len);

#endif
