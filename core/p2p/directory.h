/*
 * directory.h - one shard of p2p mode's distributed directory: key -> where the page
 * is published (node, address, region key, length, class, the node's incarnation).
 * Shards follow the ring: a key's entry lives on ring(key), like a slotmap key's page.
 *
 * It grows as entries come, up to a bound per publishing node (what that node's
 * published pool can hold, times a slack for entries not yet removed): a node, or a
 * forged flood in its name, cannot make a shard hold more. One mutex guards it
 * (never held across a call out).
 *
 * Not for: the pages themselves (p2p.c publishes them; readers READ them and pass
 * the slot gate, so a stale entry is a clean miss, never wrong data).
 */
#ifndef PC_DIRECTORY_H
#define PC_DIRECTORY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/keyhash.h"
#include "base/keymap.h"

struct dir_loc {
	uint64_t addr;			/* the block on node */
	uint64_t inc;			/* node's fabric incarnation when it published */
	uint64_t gen;			/* node's publication number, rising */
	uint32_t node;
	uint32_t rkey;
	uint32_t len;			/* payload bytes */
	uint32_t cls;			/* size class */
};

struct dir_rec {
	struct pc_keyhash key;
	struct dir_loc loc;
	bool used;
};

struct dir {
	pthread_mutex_t lock;
	struct keymap map;		/* key -> record */
	struct dir_rec *rec;
	uint32_t nr_rec, cap_rec;
	uint32_t *free_rec;		/* indices of unused records */
	uint32_t nr_free;
	uint32_t *per_node;		/* entries naming each node */
	uint32_t nr_nodes;
	uint32_t node_cap;		/* at most this many per node */
};

/* An empty shard for nodes [0, nr_nodes), each publishing at most node_cap entries.
 * 0 or -ENOMEM. */
int dir_init(struct dir *d, uint32_t nr_nodes, uint32_t node_cap);
void dir_fini(struct dir *d);

#define DIR_NO_NODE UINT32_MAX

/* Insert or replace, unless the entry there is a later publication by the same node
 * incarnation (updates may arrive out of order). When another node's publication
 * was replaced, *replaced gets it (its block is an orphan now); otherwise
 * replaced->node is DIR_NO_NODE. 0, -ENOSPC when loc->node has node_cap entries
 * already (nothing changes), -EINVAL for a node out of range, or -ENOMEM. */
int dir_put(struct dir *d, struct pc_keyhash key, const struct dir_loc *loc,
	    struct dir_loc *replaced);
/* true and *out when key has an entry. */
bool dir_get(struct dir *d, struct pc_keyhash key, struct dir_loc *out);
/* Remove key's entry if it is still this publication (node, incarnation, block,
 * gen): anything published since stays. true when removed. */
bool dir_del_if(struct dir *d, struct pc_keyhash key, const struct dir_loc *loc);
/* Remove every entry naming node (it left). Returns how many. */
uint32_t dir_drop_node(struct dir *d, uint32_t node);
/* Remove the entries for which moved(arg, key) says true and return them (the caller
 * frees *out): resharding hands them to their new shard. Returns how many (short of
 * all of them only when memory ran out; the rest stay). */
int dir_take_if(struct dir *d, bool (*moved)(void *arg, struct pc_keyhash key), void *arg,
		struct dir_rec **out);
uint32_t dir_size(struct dir *d);

#endif
