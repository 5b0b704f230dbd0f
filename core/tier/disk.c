/*
 * disk.c - the disk pool (see disk.h): blocks in an unlinked file, checksums beside
 * them in memory, LRU order, batched I/O through the storage ops.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/payload_hash.h"
#include "disk.h"

#define NONE UINT32_MAX

/* For the two timers updated outside the lock. */
static void stat_add(uint64_t *c, uint64_t v)
{
	__atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

uint64_t disk_sum(struct pc_keyhash key, const void *data, size_t len)
{
	return xxh3_payload(data, len, key.lo ^ key.hi);
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return a > 1 ? (v + a - 1) / a * a : v;
}

uint64_t disk_file_bytes(uint32_t nr_blocks, uint32_t block_bytes, size_t align)
{
	return (uint64_t)nr_blocks * round_up(block_bytes, align ? align : 1);
}

int disk_open(struct pc_storage *stg, uint32_t nr_blocks, uint32_t block_bytes,
	      bool payload_free, struct disk_pool **out)
{
	struct disk_pool *d;

	if (!nr_blocks || !block_bytes)
		return -EINVAL;
	if (stg->bytes < disk_file_bytes(nr_blocks, block_bytes, stg->align))
		return -ENOSPC;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->stg = stg;
	d->env = stg->env;
	d->nr_blocks = nr_blocks;
	d->block_bytes = block_bytes;
	d->stride = round_up(block_bytes, stg->align);
	d->payload_free = payload_free;
	pthread_mutex_init(&d->lock, NULL);
	d->meta = calloc(nr_blocks, sizeof(*d->meta));
	d->free_list = malloc(nr_blocks * sizeof(*d->free_list));
	if (!d->meta || !d->free_list || keymap_init(&d->map, nr_blocks) ||
	    lru_init(&d->lru, nr_blocks)) {
		disk_close(d);
		return -ENOMEM;
	}
	/* hand out low blocks first: a young pool's writes stay together */
	for (uint32_t i = 0; i < nr_blocks; i++)
		d->free_list[i] = nr_blocks - 1 - i;
	d->nr_free = nr_blocks;
	*out = d;
	return 0;
}

void disk_close(struct disk_pool *d)
{
	if (!d)
		return;
	pthread_mutex_destroy(&d->lock);
	keymap_fini(&d->map);
	lru_fini(&d->lru);
	free(d->meta);
	free(d->free_list);
	free(d);
}

/* ------------------------------------------------------------------ metadata (locked) */

static void block_free(struct disk_pool *d, uint32_t i)
{
	d->meta[i].state = DISK_FREE;
	d->free_list[d->nr_free++] = i;
}

/* Take block i out of the map (and the LRU when valid). It returns to the free list
 * now, or when its last reader or writer is done with it. */
static void block_forget(struct disk_pool *d, uint32_t i)
{
	struct disk_meta *m = &d->meta[i];
	uint32_t cur;

	if (keymap_get(&d->map, m->key, &cur) && cur == i)
		keymap_del(&d->map, m->key);
	if (m->state == DISK_VALID) {
		lru_unlink(&d->lru, i);
		d->nr_valid--;
	}
	m->state = DISK_WRITING;	/* not valid; not free while pinned */
	m->key = (struct pc_keyhash){ 0 };
	if (!m->readers)
		block_free(d, i);
}

static bool in_map(struct disk_pool *d, uint32_t i)
{
	uint32_t cur;

	return keymap_get(&d->map, d->meta[i].key, &cur) && cur == i;
}

/* A put or get is done with block i. false when the block left the map meanwhile
 * (replaced, removed, dropped): then it is freed if nobody else holds it. */
static bool unpin(struct disk_pool *d, uint32_t i)
{
	struct disk_meta *m = &d->meta[i];

	m->readers--;
	if (in_map(d, i))
		return true;
	if (!m->readers && m->state != DISK_FREE)
		block_free(d, i);
	return false;
}

/* A free block, dropping the least recently used block nobody is reading. */
static uint32_t block_alloc(struct disk_pool *d)
{
	for (uint32_t i = d->lru.tail, newer; !d->nr_free && i != NONE; i = newer) {
		newer = lru_newer(&d->lru, i);
		if (d->meta[i].readers)
			continue;
		block_forget(d, i);
		d->stats.dropped++;
	}
	return d->nr_free ? d->free_list[--d->nr_free] : NONE;
}

/* ------------------------------------------------------------------ I/O */

static bool needs_bounce(const struct disk_pool *d, const void *p, size_t len)
{
	size_t a = d->stg->align;

	return !d->payload_free && a > 1 && ((uintptr_t)p % a || len % a);
}

/* Point each transfer at the caller's buffer or at its share of one bounce area. */
static int io_setup(struct disk_pool *d, struct disk_blk *b, const uint32_t *blk, size_t n,
		    struct pc_io *io, uint8_t **bounce)
{
	size_t a = d->stg->align, need = 0;

	for (size_t i = 0; i < n; i++)
		if (blk[i] != NONE && needs_bounce(d, b[i].data, b[i].len))
			need += round_up(b[i].len, a);
	*bounce = NULL;
	if (need && !(*bounce = aligned_alloc(a, need)))
		return -ENOMEM;
	need = 0;
	for (size_t i = 0; i < n; i++) {
		if (blk[i] == NONE)
			continue;
		io[i].off = (uint64_t)blk[i] * d->stride;
		io[i].len = round_up(b[i].len, a);
		io[i].buf = d->payload_free ? NULL : b[i].data;
		if (needs_bounce(d, b[i].data, b[i].len)) {
			io[i].buf = *bounce + need;
			need += io[i].len;
		}
	}
	return 0;
}

/* A batch's blocks as their transfers go out (pc_storage_write_prepared) or land
 * (pc_storage_read_landed). */
struct landing {
	struct disk_pool *d;
	struct disk_blk *b;		/* the batch */
	const size_t *at;		/* packed transfer -> its block in the batch */
	uint64_t sum_ns;
};

/* A block read back is in: out of its bounce buffer and checked against its sum
 * while the batch's other reads are in flight. A bad copy's transfer gets -EBADMSG. */
static void block_landed(void *arg, struct pc_io *ios, size_t k)
{
	struct landing *l = arg;
	struct disk_blk *b = &l->b[l->at[k]];
	uint64_t t0;

	if (ios[k].status || l->d->payload_free)
		return;
	t0 = pc_env_now(l->d->env);
	if (ios[k].buf != b->data)
		memcpy(b->data, ios[k].buf, b->len);
	if (disk_sum(b->key, b->data, b->len) != b->sum)
		ios[k].status = -EBADMSG;
	l->sum_ns += pc_env_now(l->d->env) - t0;
}

/* A write batch's blocks as they go out (pc_storage_write_prepared): into their
 * bounce buffer and summed while the bytes are in cache, as the blocks before them
 * are being written. */
static void block_prepared(void *arg, struct pc_io *ios, size_t k)
{
	struct landing *l = arg;
	struct disk_blk *b = &l->b[l->at[k]];
	uint64_t t0;

	if (l->d->payload_free)
		return;
	t0 = pc_env_now(l->d->env);
	if (ios[k].buf != b->data) {
		memcpy(ios[k].buf, b->data, b->len);
		memset((uint8_t *)ios[k].buf + b->len, 0, ios[k].len - b->len);
	}
	if (!b->sum_given)
		b->sum = disk_sum(b->key, ios[k].buf, b->len);
	l->sum_ns += pc_env_now(l->d->env) - t0;
}

/* Transfers of the blocks that have one, packed, in one storage call: a write
 * prepares each block as it goes out, a read verifies each as it lands. */
static int io_run(struct disk_pool *d, struct pc_io *io, const uint32_t *blk, size_t n, bool write,
		  struct disk_blk *b)
{
	struct pc_io *packed = malloc((n ? n : 1) * (sizeof(*packed) + sizeof(size_t)));
	struct landing l = { .d = d, .b = b };
	size_t *at, k = 0;
	uint64_t t0;
	int ret;

	if (!packed)
		return -ENOMEM;
	l.at = at = (size_t *)(packed + (n ? n : 1));
	for (size_t i = 0; i < n; i++)
		if (blk[i] != NONE) {
			at[k] = i;
			packed[k++] = io[i];
		}
	t0 = pc_env_now(d->env);
	ret = !k ? 0 : write ? pc_storage_write_prepared(d->stg, packed, k, block_prepared, &l) :
	      pc_storage_read_landed(d->stg, packed, k, block_landed, &l);
	stat_add(&d->io_ns, pc_env_now(d->env) - t0 - l.sum_ns);
	stat_add(&d->sum_ns, l.sum_ns);
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (blk[i] != NONE)
			io[i].status = ret ? ret : packed[k++].status;
	free(packed);
	return 0;
}

int disk_put(struct disk_pool *d, struct disk_blk *b, size_t n)
{
	uint32_t *blk = calloc(n ? n : 1, sizeof(*blk));
	struct pc_io *io = calloc(n ? n : 1, sizeof(*io));
	uint8_t *bounce = NULL;
	int stored = 0, ret;

	if (!blk || !io) {
		ret = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < n; i++) {
		uint32_t old;

		blk[i] = NONE;
		b[i].status = 0;
		if (!b[i].sum_given)
			b[i].sum = 0;	/* computed as the block goes out (block_prepared) */
		if (b[i].len > d->block_bytes) {
			b[i].status = -EFBIG;
			continue;
		}
		if (keymap_get(&d->map, b[i].key, &old))
			block_forget(d, old);	/* replaced: the new bytes win */
		blk[i] = block_alloc(d);
		if (blk[i] == NONE) {
			b[i].status = -ENOSPC;	/* every block is being read */
			continue;
		}
		d->meta[blk[i]] = (struct disk_meta){ .key = b[i].key, .aux = b[i].aux, .len = b[i].len,
						      .state = DISK_WRITING, .readers = 1 };
		keymap_put(&d->map, b[i].key, blk[i]);
	}
	pthread_mutex_unlock(&d->lock);

	ret = io_setup(d, b, blk, n, io, &bounce);
	if (!ret)
		ret = io_run(d, io, blk, n, true, b);

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < n; i++) {
		if (blk[i] == NONE)
			continue;
		b[i].status = ret ? ret : io[i].status;
		if (!unpin(d, blk[i])) {	/* replaced or removed meanwhile */
			if (!b[i].status)
				b[i].status = -ECANCELED;
			continue;
		}
		if (b[i].status) {
			d->stats.write_errors++;
			block_forget(d, blk[i]);
			continue;
		}
		d->meta[blk[i]].sum = b[i].sum;
		d->meta[blk[i]].state = DISK_VALID;
		lru_push(&d->lru, blk[i]);
		d->nr_valid++;
		d->stats.writes++;
		d->stats.write_bytes += b[i].len;
		stored++;
	}
	pthread_mutex_unlock(&d->lock);
out:
	if (ret)
		for (size_t i = 0; i < n; i++)
			b[i].status = b[i].status ? b[i].status : ret;
	free(bounce);
	free(io);
	free(blk);
	return ret ? ret : stored;
}

int disk_get(struct disk_pool *d, struct disk_blk *b, size_t n, bool take)
{
	uint32_t *blk = malloc((n ? n : 1) * sizeof(*blk));
	struct pc_io *io = calloc(n ? n : 1, sizeof(*io));
	uint8_t *bounce = NULL;
	int got = 0, ret;

	if (!blk || !io) {
		ret = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < n; i++) {
		struct disk_meta *m;

		blk[i] = NONE;
		b[i].status = -ENOENT;
		if (!keymap_get(&d->map, b[i].key, &blk[i]) || d->meta[blk[i]].state != DISK_VALID) {
			blk[i] = NONE;
			continue;
		}
		m = &d->meta[blk[i]];
		if (m->len > b[i].cap) {
			b[i].status = -EMSGSIZE;
			blk[i] = NONE;
			continue;
		}
		b[i].status = 0;
		b[i].len = m->len;
		b[i].sum = m->sum;
		b[i].aux = m->aux;
		m->readers++;
		lru_touch(&d->lru, blk[i]);
	}
	pthread_mutex_unlock(&d->lock);

	ret = io_setup(d, b, blk, n, io, &bounce);
	if (!ret)
		ret = io_run(d, io, blk, n, false, b);	/* verified as they land */
	for (size_t i = 0; !ret && i < n; i++)
		if (blk[i] != NONE)
			b[i].status = io[i].status;

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < n; i++) {
		if (blk[i] == NONE)
			continue;
		if (ret)
			b[i].status = ret;
		if (!unpin(d, blk[i])) {	/* removed or replaced while we read */
			if (!b[i].status)
				b[i].status = -ENOENT;
			continue;
		}
		if (ret)
			continue;	/* nothing was read (no memory): the block is fine */
		if (b[i].status == -EBADMSG)
			d->stats.corrupt++;
		else if (b[i].status)
			d->stats.read_errors++;
		else {
			d->stats.reads++;
			d->stats.read_bytes += b[i].len;
			got++;
		}
		if (b[i].status || take)
			block_forget(d, blk[i]);
	}
	pthread_mutex_unlock(&d->lock);
out:
	if (ret)
		for (size_t i = 0; i < n; i++)
			b[i].status = ret;
	free(bounce);
	free(io);
	free(blk);
	return ret ? ret : got;
}

/* The VALID block that holds key, or NONE. Locked. */
static uint32_t valid_block(struct disk_pool *d, struct pc_keyhash key)
{
	uint32_t i;

	return keymap_get(&d->map, key, &i) && d->meta[i].state == DISK_VALID ? i : NONE;
}

bool disk_has(struct disk_pool *d, struct pc_keyhash key, uint32_t *len, uint64_t *sum,
	      uint64_t *aux)
{
	uint32_t i;
	bool found;

	pthread_mutex_lock(&d->lock);
	found = keymap_get(&d->map, key, &i) && d->meta[i].state == DISK_VALID;
	if (found) {
		if (len)
			*len = d->meta[i].len;
		if (sum)
			*sum = d->meta[i].sum;
		if (aux)
			*aux = d->meta[i].aux;
	}
	pthread_mutex_unlock(&d->lock);
	return found;
}

bool disk_keep(struct disk_pool *d, struct pc_keyhash key, uint64_t sum)
{
	uint32_t i;

	pthread_mutex_lock(&d->lock);
	i = valid_block(d, key);
	if (i != NONE && d->meta[i].sum == sum)
		lru_touch(&d->lru, i);
	else
		i = NONE;
	pthread_mutex_unlock(&d->lock);
	return i != NONE;
}

bool disk_remove_if(struct disk_pool *d, struct pc_keyhash key, uint64_t aux)
{
	uint32_t i;
	bool found;

	pthread_mutex_lock(&d->lock);
	found = keymap_get(&d->map, key, &i) && d->meta[i].state == DISK_VALID && d->meta[i].aux == aux;
	if (found)
		block_forget(d, i);
	pthread_mutex_unlock(&d->lock);
	return found;
}

bool disk_remove(struct disk_pool *d, struct pc_keyhash key)
{
	uint32_t i;
	bool found;

	pthread_mutex_lock(&d->lock);
	found = keymap_get(&d->map, key, &i);
	if (found)
		block_forget(d, i);
	pthread_mutex_unlock(&d->lock);
	return found;
}

uint32_t disk_used(struct disk_pool *d)
{
	uint32_t n;

	pthread_mutex_lock(&d->lock);
	n = d->nr_valid;
	pthread_mutex_unlock(&d->lock);
	return n;
}

void disk_get_stats(struct disk_pool *d, struct disk_stats *out)
{
	pthread_mutex_lock(&d->lock);
	*out = d->stats;
	pthread_mutex_unlock(&d->lock);
	/* the two timers move outside the lock (stat_add): read as they are written */
	out->sum_ns = __atomic_load_n(&d->sum_ns, __ATOMIC_RELAXED);
	out->io_ns = __atomic_load_n(&d->io_ns, __ATOMIC_RELAXED);
}
