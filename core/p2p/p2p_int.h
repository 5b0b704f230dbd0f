/*
 * p2p_int.h - what the files of p2p mode share: the mode's state and one declaration
 * block per file. p2p.c holds the mode's ops and the batch paths; p2p_pool.c this
 * node's published pool; p2p_shard.c its directory shard and updates to the shards;
 * p2p_notes.c the notes to publishers; p2p_jobs.c membership's background work;
 * p2p_task.c how that work runs.
 */
#ifndef PC_P2P_INT_H
#define PC_P2P_INT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "directory.h"
#include "mode.h"
#include "placement/slot.h"
#include "proto.h"
#include "store_svc.h"
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
 * PC_RPC_P2P_TOUCH each, in one phase) a batch at a time (p2p_notes.c). Best effort:
 * past TOUCH_CAP waiting notes, new ones are dropped. One sender lives while notes
 * come, rather than a thread per batch of notes. The notes cost readers some
 * throughput and buy hit rate under oversubscription.
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
	struct store_mode base;		/* first: the store calls the mode through it */
	struct store_svc *st;
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
	struct log_limit dir_full_log;	/* publishers over their bound */
};

static inline struct p2p *p2p_of(struct store_mode *m)
{
	return (struct p2p *)m;
}

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

/* ---- p2p.c: the batch paths */
int p2p_set(struct store_mode *m, struct pc_page *pages, size_t n);
int p2p_get(struct store_mode *m, struct pc_page *pages, size_t n);
int p2p_exists(struct store_mode *m, struct pc_page *pages, size_t n);

/* ---- p2p_pool.c */

/* Where block b of class c lies, as a directory entry names it. */
struct dir_loc p2p_own_loc(const struct p2p *p, uint32_t c, uint32_t b, uint32_t len);
/* A page this node published: its block, if l names one of this incarnation. */
uint8_t *p2p_own_block(struct p2p *p, const struct dir_loc *l, uint32_t *b);
/* Whether l names a block of ours that still holds publication l->gen. */
bool p2p_own_publication(struct p2p *p, const struct dir_loc *l, uint32_t *b);
/* Free our block of publication l of key, if it still holds that one. */
bool p2p_free_publication(struct p2p *p, struct pc_keyhash key, const struct dir_loc *l);
/* A shard now points key at another node's publication: free ours, if it is still
 * the one the shard replaced. */
void p2p_free_orphan(struct p2p *p, struct pc_keyhash key, const struct dir_loc *l);
/* A free block of class c, evicting the LRU tail when there is none; an evicted
 * block's removal goes into *del (del->del set). POOL_NONE when every block is busy. */
uint32_t p2p_take_block(struct p2p *p, uint32_t c, struct upd *del);
/* Forget key in every class of this node's pool (it is being published again). */
void p2p_unpublish(struct p2p *p, struct pc_keyhash key);

/* ---- p2p_shard.c */

/* Put an entry into this node's shard (see p2p_shard.c). 0 or -ENOMEM. */
int p2p_shard_put(struct p2p *p, struct pc_keyhash key, const struct dir_loc *l);
/* PC_RPC_DIR_UPDATE; resp gets each put's outcome (0 or -ENOSPC); *strays is set
 * when an entry arrived that this shard does not own (its sender's ring is older or
 * newer): hand it on. */
int p2p_shard_update(struct p2p *p, const void *req, size_t len, bool *strays,
		     struct pc_msg *resp);
/* PC_RPC_DIR_GET. */
int p2p_shard_get(struct p2p *p, const void *req, size_t len, struct pc_msg *resp);
/* A get's phase 1: each key's entry from its shard (state 1 found, 2 absent; err
 * when the shard could not say). */
void p2p_lookup(struct p2p *p, struct pkey *k, size_t n);
/* Send updates to their shards, this node's own directly; status[i] for u[i].
 * Returns whether the ring moved while this node's shard took entries: the caller
 * then looks for strays to hand on (p2p_handoff_soon). */
bool p2p_send_updates(struct p2p *p, const struct upd *u, size_t n, int *status);

/* ---- p2p_notes.c */

/* After a get's READs: note its hits on other nodes' pages for their publishers. */
void p2p_note_reads(struct p2p *p, const struct pkey *k, const uint32_t *at,
		    const struct pc_op *ops, uint32_t n);
/* This shard replaced old, another node's publication of key: free that block. */
void p2p_drop_replaced(struct p2p *p, struct pc_keyhash key, const struct dir_loc *old);
/* PC_RPC_P2P_TOUCH: notes from other nodes on this node's blocks. */
int p2p_on_notes(struct p2p *p, uint32_t from, const void *req, size_t len);

/* ---- p2p_jobs.c: membership */

/* Look for entries this shard no longer owns, once more, in the background. */
void p2p_handoff_soon(struct p2p *p);
/* The ring changed from old as node joined or left. Join: hand the entries whose
 * shard moved to their new owner. Leave: drop the entries naming node, and publish
 * again this node's own pages whose shard was node's. Both in the background. */
void p2p_member_changed(struct p2p *p, uint32_t node, bool member, struct ring *old);

/* ---- p2p_task.c */

/* Start fn as a background job (the ring changes from event context in the
 * simulator, where nothing may block), joining the jobs that ended first. A job that
 * cannot start is said, unless it is best effort (quiet). */
bool p2p_spawn(struct p2p *p, const char *name, void (*fn)(struct p2p_job *), struct ring *old,
	       uint32_t node, bool quiet);
/* Sleep ms milliseconds in short steps; false when the store started closing. */
bool p2p_nap(struct p2p *p, uint32_t ms);

#endif
