/*
 * pool.h - the host pool: fixed-size blocks in one region of pinned host memory that
 * peers read one-sided, a key -> block map, access (LRU) order, and leases.
 *
 * A block is FREE, STAGING (allocated, being filled: not visible), VALID (committed:
 * visible, on the LRU) or DEMOTING (on its way to disk: still readable, off the LRU).
 * A fetch leases blocks; a leased block is never picked for demotion or reuse, and a
 * lease expires at its deadline so that a vanished client cannot pin blocks forever.
 * A DEMOTING block that gets leased meanwhile stays in host memory when its demotion
 * finishes (its disk copy is kept too).
 *
 * Only metadata here, under one mutex that is never held across I/O; the tier (tier.c)
 * moves the bytes.
 */
#ifndef PC_POOL_H
#define PC_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_env.h>

#include "base/keyhash.h"
#include "base/keymap.h"
#include "base/lru.h"

enum pool_state { POOL_FREE = 0, POOL_STAGING, POOL_VALID, POOL_DEMOTING };

struct pool_meta {
	struct pc_keyhash key;
	uint64_t sum;			/* disk_sum() of the bytes, checked when committed */
	uint32_t len;
	uint8_t state;
	bool on_disk;			/* an identical copy is in the disk pool (inclusive) */
	uint16_t leases;
};

struct pool_lease {
	uint64_t id;
	uint64_t deadline_ns;
	uint32_t n;
	uint32_t *blocks;
};

struct pool_stats {
	uint64_t committed;		/* blocks made visible */
	uint64_t leases, lease_expired, lease_released;
	uint64_t dropped;		/* removed from host with no disk copy */
};

struct host_pool {
	struct pc_env *env;
	uint32_t nr_blocks;
	uint32_t block_bytes;
	uint64_t stride;		/* block_bytes rounded up to the alignment asked for */
	uint8_t *mem;
	size_t mem_bytes;
	pthread_mutex_t lock;
	struct pool_meta *meta;
	struct keymap map;		/* key -> VALID or DEMOTING block */
	struct lru lru;			/* VALID blocks */
	uint32_t *free_list;
	uint32_t nr_free, nr_valid, nr_demoting, nr_leased;
	struct pool_lease *lease;	/* live leases */
	uint32_t nr_leases, cap_leases;
	struct pool_stats stats;
};

#define POOL_NONE UINT32_MAX

/* nr_blocks blocks of up to block_bytes, each starting at a multiple of align (a
 * power of two: 4096 for blocks that go to disk with O_DIRECT), zeroed (payload_free:
 * metadata only, mem stays NULL). 0 or -errno. */
int pool_open(struct pc_env *env, uint32_t nr_blocks, uint32_t block_bytes, uint32_t align,
	      bool payload_free, struct host_pool **out);
void pool_close(struct host_pool *p);

static inline uint8_t *pool_block(const struct host_pool *p, uint32_t i)
{
	return p->mem ? p->mem + (uint64_t)i * p->stride : NULL;
}

/* The block holding key (VALID or DEMOTING) and its state, or POOL_NONE. */
uint32_t pool_find(struct host_pool *p, struct pc_keyhash key, enum pool_state *state);

/* Move a VALID block to the head of the LRU (it was used). */
void pool_touch(struct host_pool *p, uint32_t i);
/* The same for n blocks, in order (the last one ends up at the head), one lock. */
void pool_touch_many(struct host_pool *p, const uint32_t *v, uint32_t n);

/* Up to n FREE blocks, now STAGING, into out. Returns how many. */
uint32_t pool_alloc(struct host_pool *p, uint32_t *out, uint32_t n);

/* Make a STAGING block VALID under key, pinned once when want_pin is set (for a
 * lease). -EEXIST (block freed) when key is already there (another put got in
 * first); -EINVAL when the block is not STAGING (a caller bug, refused). */
int pool_commit(struct host_pool *p, uint32_t i, struct pc_keyhash key, uint32_t len, uint64_t sum,
		bool on_disk, bool want_pin);

/* Give a STAGING block back. */
void pool_unstage(struct host_pool *p, uint32_t i);

/* Up to n unleased VALID blocks from the LRU tail, now DEMOTING, into out (their key,
 * len, sum and on_disk stay put while DEMOTING). Returns how many. */
uint32_t pool_pick_victims(struct host_pool *p, uint32_t *out, uint32_t n);

/* A DEMOTING block's demotion finished: on_disk says whether a copy is on disk now.
 * Unless it was leased meanwhile (then it stays VALID), the block is freed. true when
 * it was (the block left host memory). */
bool pool_demoted(struct host_pool *p, uint32_t i, bool on_disk);

/* Forget key if it is VALID and unleased (invalidation). true when removed. */
bool pool_remove(struct host_pool *p, struct pc_keyhash key);
/* The same, only if key's block is block i (not a later one) and *tag, the caller's
 * number for that use of the block, is want: read under the pool's lock, so that a
 * later use of the block (the same key stored again) is never the one removed. */
bool pool_remove_at(struct host_pool *p, struct pc_keyhash key, uint32_t i, const uint64_t *tag,
		    uint64_t want);

/* Find key (VALID or DEMOTING) and pin it as a lease would: from here it is never
 * reused until pool_unpin() or the lease it joins ends. The block, or POOL_NONE. */
uint32_t pool_find_lease(struct host_pool *p, struct pc_keyhash key, uint32_t *len, uint64_t *sum);

/* Group pinned blocks (pool_find_lease) into one lease until now + ttl_ns; *id names
 * it. 0, or -ENOMEM with the pins dropped. */
int pool_lease_pinned(struct host_pool *p, const uint32_t *blocks, uint32_t n, uint64_t ttl_ns,
		      uint64_t *id);

/* Drop one pin of a block taken by pool_find_lease without making a lease. */
void pool_unpin(struct host_pool *p, uint32_t i);

/* End a lease. -ENOENT when there is none by that id (expired, or never). */
int pool_release(struct host_pool *p, uint64_t id);

/* End every lease past its deadline. Returns how many. */
uint32_t pool_expire(struct host_pool *p);

struct pool_usage {
	uint32_t free, valid, demoting, leased, staging;
};
void pool_usage(struct host_pool *p, struct pool_usage *u);
void pool_get_stats(struct host_pool *p, struct pool_stats *out);

#endif
