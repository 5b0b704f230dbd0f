/*
 * pool.c - the host pool's metadata: blocks, LRU, leases (see pool.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hostmem.h"
#include "base/log.h"
#include "pool.h"

#define NONE POOL_NONE

int pool_open(struct pc_env *env, uint32_t nr_blocks, uint32_t block_bytes, uint32_t align,
	      bool payload_free, struct host_pool **out)
{
	struct host_pool *p;
	int ret = -ENOMEM;

	if (!nr_blocks || !block_bytes || !align || align & (align - 1))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->env = env;
	p->nr_blocks = nr_blocks;
	p->block_bytes = block_bytes;
	p->stride = ((uint64_t)block_bytes + align - 1) / align * align;
	pthread_mutex_init(&p->lock, NULL);
	p->meta = calloc(nr_blocks, sizeof(*p->meta));
	p->free_list = malloc(nr_blocks * sizeof(*p->free_list));
	if (!p->meta || !p->free_list || keymap_init(&p->map, nr_blocks) ||
	    lru_init(&p->lru, nr_blocks))
		goto err;
	if (!payload_free) {
		p->mem_bytes = p->stride * nr_blocks;
		ret = hostmem_map(&p->mem, p->mem_bytes, true);
		if (ret)
			goto err;
	}
	for (uint32_t i = 0; i < nr_blocks; i++)
		p->free_list[i] = nr_blocks - 1 - i;
	p->nr_free = nr_blocks;
	*out = p;
	return 0;
err:
	pool_close(p);
	return ret;
}

void pool_close(struct host_pool *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nr_leases; i++)
		free(p->lease[i].blocks);
	free(p->lease);
	hostmem_unmap(p->mem, p->mem_bytes);
	keymap_fini(&p->map);
	lru_fini(&p->lru);
	free(p->meta);
	free(p->free_list);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* ------------------------------------------------------------------ locked helpers */

static void block_free(struct host_pool *p, uint32_t i)
{
	struct pool_meta *m = &p->meta[i];

	*m = (struct pool_meta){ .state = POOL_FREE };
	p->free_list[p->nr_free++] = i;
}

/* A VALID or DEMOTING block leaves the map and the pool. */
static void block_drop(struct host_pool *p, uint32_t i)
{
	struct pool_meta *m = &p->meta[i];

	keymap_del(&p->map, m->key);
	if (m->state == POOL_VALID) {
		lru_unlink(&p->lru, i);
		p->nr_valid--;
	} else {
		p->nr_demoting--;
	}
	block_free(p, i);
}

/* One pin more or fewer; nr_leased counts blocks with any. A DEMOTING block nobody
 * holds any more is left for pool_demoted. */
static void pin(struct host_pool *p, uint32_t i)
{
	if (!p->meta[i].leases++)
		p->nr_leased++;
}

static void unpin(struct host_pool *p, uint32_t i)
{
	if (p->meta[i].leases && !--p->meta[i].leases)
		p->nr_leased--;
}

/* ------------------------------------------------------------------ API */

uint32_t pool_find(struct host_pool *p, struct pc_keyhash key, enum pool_state *state)
{
	uint32_t i;

	pthread_mutex_lock(&p->lock);
	if (!keymap_get(&p->map, key, &i))
		i = NONE;
	else if (state)
		*state = (enum pool_state)p->meta[i].state;
	pthread_mutex_unlock(&p->lock);
	return i;
}

void pool_touch(struct host_pool *p, uint32_t i)
{
	pool_touch_many(p, &i, 1);
}

void pool_touch_many(struct host_pool *p, const uint32_t *v, uint32_t n)
{
	pthread_mutex_lock(&p->lock);
	for (uint32_t k = 0; k < n; k++)
		if (v[k] < p->nr_blocks && p->meta[v[k]].state == POOL_VALID)
			lru_touch(&p->lru, v[k]);
	pthread_mutex_unlock(&p->lock);
}

uint32_t pool_alloc(struct host_pool *p, uint32_t *out, uint32_t n)
{
	uint32_t k = 0;

	pthread_mutex_lock(&p->lock);
	while (k < n && p->nr_free) {
		uint32_t i = p->free_list[--p->nr_free];

		p->meta[i].state = POOL_STAGING;
		out[k++] = i;
	}
	pthread_mutex_unlock(&p->lock);
	return k;
}

int pool_commit(struct host_pool *p, uint32_t i, struct pc_keyhash key, uint32_t len, uint64_t sum,
		bool on_disk, bool want_pin)
{
	struct pool_meta *m = &p->meta[i];
	uint32_t other;
	int ret = 0;

	pthread_mutex_lock(&p->lock);
	if (m->state != POOL_STAGING) {
		ret = -EINVAL;	/* a caller bug: never commit a block twice */
		pc_err("host pool: commit of block %u in state %u refused", i, m->state);
	} else if (keymap_get(&p->map, key, &other)) {
		block_free(p, i);
		ret = -EEXIST;
	} else {
		m->key = key;
		m->len = len;
		m->sum = sum;
		m->on_disk = on_disk;
		m->state = POOL_VALID;
		if (want_pin)
			pin(p, i);
		keymap_put(&p->map, key, i);	/* cannot fail: one entry per block at most */
		lru_push(&p->lru, i);
		p->nr_valid++;
		p->stats.committed++;
	}
	pthread_mutex_unlock(&p->lock);
	return ret;
}

void pool_unstage(struct host_pool *p, uint32_t i)
{
	pthread_mutex_lock(&p->lock);
	block_free(p, i);
	pthread_mutex_unlock(&p->lock);
}

uint32_t pool_pick_victims(struct host_pool *p, uint32_t *out, uint32_t n)
{
	uint32_t k = 0, i, prev;

	pthread_mutex_lock(&p->lock);
	for (i = p->lru.tail; i != NONE && k < n; i = prev) {
		struct pool_meta *m = &p->meta[i];

		prev = lru_newer(&p->lru, i);
		if (m->leases)
			continue;
		lru_unlink(&p->lru, i);
		m->state = POOL_DEMOTING;
		p->nr_valid--;
		p->nr_demoting++;
		out[k++] = i;
	}
	pthread_mutex_unlock(&p->lock);
	return k;
}

bool pool_demoted(struct host_pool *p, uint32_t i, bool on_disk)
{
	struct pool_meta *m = &p->meta[i];
	bool left;

	pthread_mutex_lock(&p->lock);
	left = !m->leases;
	if (!left) {	/* fetched while on its way down: it stays */
		m->state = POOL_VALID;
		m->on_disk = on_disk;
		p->nr_demoting--;
		p->nr_valid++;
		lru_push(&p->lru, i);
	} else {
		if (!on_disk)
			p->stats.dropped++;
		block_drop(p, i);
	}
	pthread_mutex_unlock(&p->lock);
	return left;
}

bool pool_remove(struct host_pool *p, struct pc_keyhash key)
{
	uint32_t i;
	bool removed = false;

	pthread_mutex_lock(&p->lock);
	if (keymap_get(&p->map, key, &i) && p->meta[i].state == POOL_VALID && !p->meta[i].leases) {
		block_drop(p, i);
		removed = true;
	}
	pthread_mutex_unlock(&p->lock);
	return removed;
}

bool pool_remove_at(struct host_pool *p, struct pc_keyhash key, uint32_t i, const uint64_t *tag,
		    uint64_t want)
{
	uint32_t at;
	bool removed = false;

	pthread_mutex_lock(&p->lock);
	/* a VALID block's tag was set before its commit, under this lock */
	if (keymap_get(&p->map, key, &at) && at == i && p->meta[i].state == POOL_VALID &&
	    !p->meta[i].leases && *tag == want) {
		block_drop(p, i);
		removed = true;
	}
	pthread_mutex_unlock(&p->lock);
	return removed;
}

uint32_t pool_find_lease(struct host_pool *p, struct pc_keyhash key, uint32_t *len, uint64_t *sum)
{
	uint32_t i;

	pthread_mutex_lock(&p->lock);
	if (keymap_get(&p->map, key, &i) && p->meta[i].leases < UINT16_MAX) {
		struct pool_meta *m = &p->meta[i];

		pin(p, i);
		*len = m->len;
		*sum = m->sum;
		if (m->state == POOL_VALID) {
			lru_touch(&p->lru, i);
		}
	} else {
		i = NONE;
	}
	pthread_mutex_unlock(&p->lock);
	return i;
}

void pool_unpin(struct host_pool *p, uint32_t i)
{
	pthread_mutex_lock(&p->lock);
	unpin(p, i);
	pthread_mutex_unlock(&p->lock);
}

int pool_lease_pinned(struct host_pool *p, const uint32_t *blocks, uint32_t n, uint64_t ttl_ns,
		      uint64_t *id)
{
	uint32_t *copy = malloc((n ? n : 1) * sizeof(*copy));
	uint64_t now = pc_env_now(p->env), lid = pc_env_random(p->env) | 1;
	int ret = 0;

	pthread_mutex_lock(&p->lock);
	if (copy && p->nr_leases == p->cap_leases) {
		uint32_t cap = p->cap_leases ? p->cap_leases * 2 : 16;
		struct pool_lease *nl = realloc(p->lease, cap * sizeof(*nl));

		if (nl) {
			p->lease = nl;
			p->cap_leases = cap;
		}
	}
	if (!copy || p->nr_leases == p->cap_leases) {
		for (uint32_t k = 0; k < n; k++)
			unpin(p, blocks[k]);
		ret = -ENOMEM;
	} else {
		memcpy(copy, blocks, n * sizeof(*copy));
		p->lease[p->nr_leases++] = (struct pool_lease){ .id = lid, .deadline_ns = now + ttl_ns,
							       .n = n, .blocks = copy };
		p->stats.leases++;
		*id = lid;
		copy = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	free(copy);
	return ret;
}

static void lease_end(struct host_pool *p, uint32_t at)
{
	struct pool_lease *l = &p->lease[at];

	for (uint32_t k = 0; k < l->n; k++)
		unpin(p, l->blocks[k]);
	free(l->blocks);
	p->lease[at] = p->lease[--p->nr_leases];
}

int pool_release(struct host_pool *p, uint64_t id)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&p->lock);
	for (uint32_t i = 0; i < p->nr_leases; i++) {
		if (p->lease[i].id == id) {
			lease_end(p, i);
			p->stats.lease_released++;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
	return ret;
}

uint32_t pool_expire(struct host_pool *p)
{
	uint64_t now = pc_env_now(p->env);
	uint32_t n = 0;

	pthread_mutex_lock(&p->lock);
	for (uint32_t i = 0; i < p->nr_leases;) {
		if (p->lease[i].deadline_ns <= now) {
			lease_end(p, i);
			n++;
		} else {
			i++;
		}
	}
	p->stats.lease_expired += n;
	pthread_mutex_unlock(&p->lock);
	return n;
}

void pool_usage(struct host_pool *p, struct pool_usage *u)
{
	pthread_mutex_lock(&p->lock);
	*u = (struct pool_usage){ .free = p->nr_free, .valid = p->nr_valid, .demoting = p->nr_demoting,
				  .staging = p->nr_blocks - p->nr_free - p->nr_valid - p->nr_demoting,
				  .leased = p->nr_leased };
	pthread_mutex_unlock(&p->lock);
}

void pool_get_stats(struct host_pool *p, struct pool_stats *out)
{
	pthread_mutex_lock(&p->lock);
	*out = p->stats;
	pthread_mutex_unlock(&p->lock);
}
