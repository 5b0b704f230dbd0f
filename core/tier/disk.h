/*
 * disk.h - the disk pool: N fixed-size blocks in one unlinked file, each with the
 * xxh3_64 of its bytes kept beside it, in access (LRU) order.
 *
 * All I/O goes through the storage ops (posix file, simulated NVMe, fault shims).
 * Writing to a full pool drops its own LRU tail for real. Reading a block back
 * re-verifies its checksum: a corrupt copy is removed and reported as -EBADMSG, an
 * I/O error removes the block and reports the error; never are bad bytes returned
 * as good. Blocks being read or written are never chosen for reuse.
 *
 * Buffers may be anywhere: where the file is in direct-I/O mode and a buffer or
 * length is not aligned, the pool goes through an aligned bounce buffer.
 *
 * Thread-safe: one mutex guards the metadata and is never held across I/O.
 *
 * Not for: host memory or the network (pool.c, tier.c).
 */
#ifndef PC_DISK_H
#define PC_DISK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_env.h>
#include <peercache/pc_storage.h>

#include "base/keyhash.h"
#include "base/keymap.h"
#include "base/lru.h"

/* One block of a batched put or get. */
struct disk_blk {
	struct pc_keyhash key;
	void *data;		/* put: the bytes; get: where they go (cap >= len) */
	uint32_t len;		/* put: in; get: out (the stored length) */
	uint32_t cap;		/* get: bytes data holds */
	uint64_t sum;		/* the bytes' checksum (disk_sum): out, or put: in with
				 * sum_given */
	bool sum_given;		/* put: sum is the checksum the bytes were written with
				 * (a copy kept since), stored as is: bytes changed
				 * meanwhile fail it on the way back, not pass it */
	uint64_t aux;		/* put: the caller's tag for this version; get: out */
	int status;		/* out: 0, -ENOENT (not here), -EBADMSG (corrupt),
				 * -EFBIG (over the block size), or the I/O -errno */
};

struct disk_stats {
	uint64_t writes, write_bytes;	/* blocks written */
	uint64_t reads, read_bytes;	/* blocks read back and verified */
	uint64_t dropped;		/* LRU tail dropped to make room */
	uint64_t corrupt;		/* failed their checksum on the way back */
	uint64_t write_errors;		/* put failed (EIO, ENOSPC): nothing stored */
	uint64_t read_errors;		/* get failed with an I/O error: block removed */
	uint64_t sum_ns;		/* time spent computing checksums */
	uint64_t io_ns;			/* time spent in storage calls */
};

enum disk_state { DISK_FREE = 0, DISK_WRITING, DISK_VALID };

struct disk_meta {
	struct pc_keyhash key;
	uint64_t sum;
	uint64_t aux;
	uint32_t len;
	uint8_t state;
	uint32_t readers;		/* gets and puts in flight: not reusable meanwhile */
};

struct disk_pool {
	struct pc_storage *stg;
	struct pc_env *env;
	uint32_t nr_blocks;
	uint32_t block_bytes;		/* largest block */
	uint64_t stride;		/* block_bytes rounded up to the file's alignment */
	bool payload_free;		/* simulations: metadata and timing, no bytes */
	pthread_mutex_t lock;
	struct disk_meta *meta;
	struct keymap map;		/* key -> block (VALID and WRITING) */
	struct lru lru;			/* VALID blocks */
	uint32_t *free_list;
	uint32_t nr_free, nr_valid;
	struct disk_stats stats;	/* under lock, but for the two timers: */
	uint64_t sum_ns, io_ns;		/* moved outside it (atomic adds) */
};

/* The checksum a block is stored and verified with: xxh3_64 of its bytes, seeded
 * by the key, so one key's bytes under another key never verify. */
uint64_t disk_sum(struct pc_keyhash key, const void *data, size_t len);

/* A pool of nr_blocks blocks of up to block_bytes on stg (which it does not own,
 * sized at least nr_blocks x the aligned stride: see disk_file_bytes). */
int disk_open(struct pc_storage *stg, uint32_t nr_blocks, uint32_t block_bytes,
	      bool payload_free, struct disk_pool **out);
void disk_close(struct disk_pool *d);

/* File bytes a pool of this shape needs with the given alignment. */
uint64_t disk_file_bytes(uint32_t nr_blocks, uint32_t block_bytes, size_t align);

/* Store every block (replacing a key already stored); when the pool is full the LRU
 * tail is dropped. Returns the number stored; see each status. */
int disk_put(struct disk_pool *d, struct disk_blk *b, size_t n);

/* Read blocks back, verify them and, when take is set, remove them from the pool
 * (a promotion that keeps no copy). Returns the number read; see each status. */
int disk_get(struct disk_pool *d, struct disk_blk *b, size_t n, bool take);

/* Whether key is stored, with its length, checksum and tag (each may be NULL). */
bool disk_has(struct disk_pool *d, struct pc_keyhash key, uint32_t *len, uint64_t *sum,
	      uint64_t *aux);

/* Whether key is stored with checksum sum; if so it becomes the most recently used
 * (a copy that stands for a block just demoted again, unwritten). */
bool disk_keep(struct disk_pool *d, struct pc_keyhash key, uint64_t sum);

/* Forget key. true when it was stored. */
bool disk_remove(struct disk_pool *d, struct pc_keyhash key);

/* Forget key only if the stored copy carries tag aux (that version, not a newer one
 * put meanwhile). true when removed. */
bool disk_remove_if(struct disk_pool *d, struct pc_keyhash key, uint64_t aux);

/* Blocks stored now. */
uint32_t disk_used(struct disk_pool *d);

void disk_get_stats(struct disk_pool *d, struct disk_stats *out);

#endif
