/*
 * tier.c - the tiered pool a node serves (see tier.h): the G2PB host pool spilling
 * to the G3 disk pool, and the handlers of its protocol.
 *
 * Eviction is demotion: the unleased LRU tail of the host pool goes to disk in one
 * batched write. Fetching a disk-resident block is promotion: room is made, the block
 * is read back and re-verified, and only then is it committed and leased. Remote
 * readers only ever read registered host memory; disk is never remotely addressable.
 * Every failure degrades to a miss: a failed spill drops the block (counted), a
 * corrupt disk copy is removed (counted).
 *
 * Not for: the client side (tier_client.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/sized.h"
#include "config/topology.h"
#include "disk.h"
#include "pool.h"
#include "proto.h"
#include "tier.h"

#define TICK_NS 5000000ULL	/* the background task's period */

struct tier {
	struct pc_fabric *fabric;
	struct pc_env *env;
	struct host_pool *pool;
	struct pc_region reg;		/* the pool's memory, readable by peers */
	struct pc_storage *stg;
	struct disk_pool *disk;		/* NULL: evicted blocks are dropped */
	uint32_t block_bytes;
	uint32_t free_target;		/* background demotion keeps this many free */
	bool inclusive;
	bool payload_free;
	uint64_t lease_ns;
	struct pc_task *task;
	int stop;
	struct pc_tier_metrics m;	/* counters, updated with atomics */
};

#define TSTAT(t, field, v) __atomic_fetch_add(&(t)->m.field, (uint64_t)(v), __ATOMIC_RELAXED)

static double ms_of(uint64_t ns)
{
	return (double)ns / 1e6;
}

static struct pc_keyhash key_of(uint64_t hash)
{
	return (struct pc_keyhash){ .lo = hash, .hi = 0 };
}

/* ------------------------------------------------------------------ demotion */

/*
 * Take up to n unleased blocks off the LRU tail and out of host memory: one batched
 * disk write for those without a current disk copy, none for inclusive copies still
 * on disk. A block leased while on its way down stays (pool_demoted) and is counted
 * neither evicted nor dropped. Returns how many left host memory.
 */
static uint32_t demote(struct tier *t, uint32_t n, bool background, uint32_t *demoted_out)
{
	uint32_t *v = malloc((n ? n : 1) * sizeof(*v));
	struct disk_blk *b = calloc(n ? n : 1, sizeof(*b));
	uint32_t k, nw = 0, demoted = 0, dropped = 0;
	uint64_t t0 = pc_env_now(t->env), el;
	uint32_t *wi = malloc((n ? n : 1) * sizeof(*wi));

	*demoted_out = 0;
	if (!v || !b || !wi) {
		free(v);
		free(b);
		free(wi);
		return 0;
	}
	k = pool_pick_victims(t->pool, v, n);
	for (uint32_t i = 0; i < k && t->disk; i++) {
		const struct pool_meta *m = &t->pool->meta[v[i]];	/* stable while DEMOTING */

		/* an inclusive copy is still there: as recent as the block, so that the
		 * writes below do not drop it first */
		if (m->on_disk && disk_keep(t->disk, m->key, m->sum))
			continue;
		wi[nw] = i;
		/* the sum the block was put with and checked against: a block that changed
		 * in host memory since is caught when promoted, not summed afresh */
		b[nw++] = (struct disk_blk){ .key = m->key, .data = pool_block(t->pool, v[i]),
					     .len = m->len, .sum = m->sum, .sum_given = true };
	}
	if (nw)
		disk_put(t->disk, b, nw);
	for (uint32_t i = 0, w = 0; i < k; i++) {
		bool on_disk = t->disk != NULL;

		if (w < nw && wi[w] == i) {
			on_disk = !b[w].status;
			if (b[w].status) {
				TSTAT(t, spill_failures, 1);
				pc_dbg("tier: spill of block %016llx failed: %s; dropped",
				       (unsigned long long)b[w].key.lo, strerror(-b[w].status));
			}
			w++;
		}
		if (!pool_demoted(t->pool, v[i], on_disk))
			continue;	/* leased meanwhile: still in host memory */
		if (on_disk)
			demoted++;
		else
			dropped++;
	}
	el = pc_env_now(t->env) - t0;
	if (k) {
		TSTAT(t, evicted_blocks, demoted + dropped);
		TSTAT(t, demoted_blocks, demoted);
		TSTAT(t, dropped_blocks, dropped);
		TSTAT(t, demote_batches, 1);
		TSTAT(t, demote_ns, el);
		if (background)
			TSTAT(t, background_demoted, demoted);
	}
	if (demoted && !background)
		pc_info("demoted evicted host blocks to disk demoted_blocks=%u elapsed_ms=%.2f",
			demoted, ms_of(el));
	else if (demoted)
		pc_dbg("background demotion demoted_blocks=%u elapsed_ms=%.2f", demoted, ms_of(el));
	free(v);
	free(b);
	free(wi);
	*demoted_out = demoted;
	return demoted + dropped;
}

uint32_t tier_demote(struct tier *t, uint32_t n, bool background)
{
	uint32_t demoted;

	return demote(t, n, background, &demoted);
}

/*
 * n free host blocks into out, demoting the unleased LRU tail for the shortfall in
 * one batch. Blocks another demotion (the background task's) is writing out right
 * now are not free yet but soon will be: wait for them, briefly, rather than fail.
 * Returns how many were had.
 */
static uint32_t alloc_blocks(struct tier *t, uint32_t *out, uint32_t n, bool staging)
{
	uint32_t got = pool_alloc(t->pool, out, n), from_pool = got, evicted = 0, demoted = 0;
	struct pool_usage u;

	for (int tries = 0; got < n; tries++) {
		uint32_t d = 0;

		evicted += demote(t, n - got, false, &d);
		demoted += d;
		got += pool_alloc(t->pool, out + got, n - got);
		pool_usage(t->pool, &u);
		if (got == n || !u.demoting || tries == 1000)
			break;
		pc_env_sleep(t->env, 1000000);
	}
	if (staging && evicted) {
		pool_usage(t->pool, &u);
		pc_info("reclaimed committed blocks for staging capacity evicted_blocks=%u demoted_blocks=%u pool_blocks=%u remaining_committed_blocks=%u",
			evicted, demoted, from_pool, u.valid + u.demoting);
	}
	return got;
}

/* ------------------------------------------------------------------ background */

static void tier_task(void *arg)
{
	struct tier *t = arg;

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		struct pool_usage u;
		uint32_t expired;

		pc_env_sleep(t->env, TICK_NS);
		expired = pool_expire(t->pool);
		if (expired) {
			TSTAT(t, lease_expired, expired);
			pc_info("tier: %u lease(s) expired; their blocks can be evicted again", expired);
		}
		if (!t->free_target || !t->disk)
			continue;
		pool_usage(t->pool, &u);
		if (u.free < t->free_target)
			tier_demote(t, t->free_target - u.free, true);
	}
}

/* ------------------------------------------------------------------ handlers */

static const uint64_t *keys_req(const void *req, size_t len, struct proto_tier_keys *h)
{
	if (len < sizeof(*h))
		return NULL;
	memcpy(h, req, sizeof(*h));
	if (!h->n || h->n > PROTO_TIER_MAX_BLOCKS || len != sizeof(*h) + (size_t)h->n * 8)
		return NULL;
	return (const uint64_t *)((const uint8_t *)req + sizeof(*h));
}

static enum pc_where where_is(struct tier *t, uint64_t hash)
{
	if (pool_find(t->pool, key_of(hash), NULL) != POOL_NONE)
		return PC_WHERE_HOST;
	if (t->disk && disk_has(t->disk, key_of(hash), NULL, NULL, NULL))
		return PC_WHERE_DISK;
	return PC_WHERE_NONE;
}

static int on_offer(struct tier *t, const void *req, size_t len, struct pc_msg *resp, bool query)
{
	struct proto_tier_keys h;
	const uint64_t *hash = keys_req(req, len, &h);
	uint32_t fresh = 0, host = 0, disk = 0;
	uint8_t *out;

	if (!hash)
		return -EPROTO;
	if (pc_msg_reserve(resp, h.n))
		return -ENOMEM;
	out = resp->data;
	for (uint32_t i = 0; i < h.n; i++) {
		uint64_t x;
		enum pc_where w;

		memcpy(&x, &hash[i], 8);
		w = where_is(t, x);
		out[i] = query ? (uint8_t)w : w == PC_WHERE_NONE;
		fresh += w == PC_WHERE_NONE;
		host += w == PC_WHERE_HOST;
		disk += w == PC_WHERE_DISK;
	}
	resp->len = h.n;
	if (!query) {
		struct pool_usage u;

		TSTAT(t, offers, 1);
		TSTAT(t, offered_blocks, h.n);
		TSTAT(t, offered_new, fresh);
		pool_usage(t->pool, &u);
		pc_info("offer classified blocks=%u new=%u on_host=%u on_disk=%u resident_committed_blocks=%u resident_disk_blocks=%u",
			h.n, fresh, host, disk, u.valid + u.demoting, t->disk ? disk_used(t->disk) : 0);
	}
	return 0;
}

/* stage_put: pull every new block from the caller's region, verify, commit. */
static int on_put(struct tier *t, uint32_t from, const void *req, size_t len, struct pc_msg *resp)
{
	struct proto_tier_xfer x;
	const struct proto_tier_blk *rb;
	struct proto_tier_blk *b = NULL;
	uint32_t *blk = NULL, *idx = NULL, m = 0, got;
	struct pc_op *ops = NULL;
	int32_t *status;
	uint64_t t0;
	int ret = -ENOMEM;

	if (len < sizeof(x))
		return -EPROTO;
	memcpy(&x, req, sizeof(x));
	if (!x.n || x.n > PROTO_TIER_MAX_BLOCKS || len != sizeof(x) + (size_t)x.n * sizeof(*rb))
		return -EPROTO;
	if (from == PC_PEER_NONE)
		return -EOPNOTSUPP;	/* nothing to pull from: the caller is not a node */
	rb = (const void *)((const uint8_t *)req + sizeof(x));
	b = malloc(x.n * sizeof(*b));
	blk = malloc(x.n * sizeof(*blk));
	idx = malloc(x.n * sizeof(*idx));
	ops = calloc(x.n, sizeof(*ops));
	if (!b || !blk || !idx || !ops || pc_msg_reserve(resp, x.n * sizeof(int32_t)))
		goto out;
	memcpy(b, rb, x.n * sizeof(*b));
	status = resp->data;
	resp->len = x.n * sizeof(int32_t);
	TSTAT(t, puts, 1);
	TSTAT(t, put_blocks, x.n);
	for (uint32_t i = 0; i < x.n; i++) {
		status[i] = 0;
		if (b[i].len > t->block_bytes)
			status[i] = -EFBIG;
		else if (where_is(t, b[i].hash) != PC_WHERE_NONE)
			TSTAT(t, put_duplicates, 1);	/* held already: stored */
		else
			idx[m++] = i;
	}
	got = alloc_blocks(t, blk, m, true);
	for (uint32_t k = got; k < m; k++) {
		status[idx[k]] = -ENOSPC;	/* every block is leased */
		TSTAT(t, put_failures, 1);
	}
	for (uint32_t k = 0; k < got; k++) {
		const struct proto_tier_blk *e = &b[idx[k]];

		ops[k] = (struct pc_op){ .kind = PC_OP_READ, .peer = from, .peer_inc = x.incarnation,
					 .rkey = x.rkey, .raddr = e->addr,
					 .local = pool_block(t->pool, blk[k]), .len = e->len,
					 .lreg = &t->reg };
		if (t->payload_free) {
			ops[k].virt_len = e->len;
			ops[k].len = 0;
		}
	}
	if (got && pc_fabric_post(t->fabric, ops, got))
		for (uint32_t k = 0; k < got; k++)
			ops[k].status = ops[k].status ? ops[k].status : -EIO;
	t0 = pc_env_now(t->env);
	for (uint32_t k = 0; k < got; k++) {
		const struct proto_tier_blk *e = &b[idx[k]];
		int st = ops[k].status;

		if (!st && !t->payload_free &&
		    disk_sum(key_of(e->hash), pool_block(t->pool, blk[k]), e->len) != e->sum) {
			st = -EBADMSG;
			TSTAT(t, put_bad_checksum, 1);
		}
		if (st) {
			pool_unstage(t->pool, blk[k]);
			TSTAT(t, put_failures, 1);
		} else if (pool_commit(t->pool, blk[k], key_of(e->hash), e->len, e->sum, false, false) == 0) {
			TSTAT(t, put_bytes, e->len);
		}
		status[idx[k]] = st;
	}
	TSTAT(t, checksum_ns, pc_env_now(t->env) - t0);
	ret = 0;
out:
	free(b);
	free(blk);
	free(idx);
	free(ops);
	return ret;
}

/*
 * Promote the disk-resident keys of a fetch: one batched read (verified by the disk
 * pool) into free host blocks, or, for those there is no free block for yet, into a
 * bounce area; then make room for the rest (after the read, so that in an exclusive
 * pool the blocks just taken off the disk leave room there for the ones demoted in
 * their place, instead of the disk dropping its tail); commit pinned. pin[i] gets the
 * block, or POOL_NONE for a miss.
 */
static void promote(struct tier *t, const uint64_t *hash, const uint32_t *idx, uint32_t m,
		    uint32_t *pin)
{
	struct disk_blk *b = calloc(m ? m : 1, sizeof(*b));
	uint32_t *blk = malloc((m ? m : 1) * sizeof(*blk)), got, more = 0, promoted = 0;
	uint32_t *spare = malloc((m ? m : 1) * sizeof(*spare)), extra = 0;
	uint64_t t0 = pc_env_now(t->env), el, stride = t->pool->stride;
	uint8_t *bounce = NULL;

	if (!b || !blk || !spare)
		goto out;
	got = pool_alloc(t->pool, blk, m);
	if (got < m && !t->payload_free && !(bounce = aligned_alloc(4096, (m - got) * stride)))
		goto unstage;
	for (uint32_t k = 0; k < m; k++) {
		b[k] = (struct disk_blk){ .key = key_of(hash[idx[k]]), .cap = t->block_bytes };
		b[k].data = k < got ? pool_block(t->pool, blk[k]) :
			    bounce ? bounce + (k - got) * stride : NULL;
	}
	disk_get(t->disk, b, m, !t->inclusive);
	if (got < m) {
		uint32_t ok = 0;

		for (uint32_t k = got; k < m; k++)
			ok += !b[k].status;
		more = alloc_blocks(t, spare, ok, false);
	}
	for (uint32_t k = 0; k < m; k++) {
		uint32_t i = idx[k], len;
		uint64_t sum;

		if (b[k].status) {
			if (k < got)
				pool_unstage(t->pool, blk[k]);
			if (b[k].status == -EBADMSG) {
				TSTAT(t, corrupt_on_promote, 1);
				pc_warn("tier: disk copy of block %016llx failed its checksum; it is a miss",
					(unsigned long long)hash[i]);
			}
			/* taken by a concurrent promotion: it may be on host by now */
			pin[i] = pool_find_lease(t->pool, key_of(hash[i]), &len, &sum);
			continue;
		}
		if (k >= got) {
			if (extra == more) {
				/* no host block could be had (all leased): back to disk,
				 * with the sum its bytes were just verified against */
				b[k].sum_given = true;
				if (!t->inclusive && disk_put(t->disk, &b[k], 1) != 1) {
					/* taken off the disk and not put back: gone, as
					 * a failed spill's block is (counted the same) */
					TSTAT(t, spill_failures, 1);
					TSTAT(t, dropped_blocks, 1);
					pc_warn("tier: block %016llx could not go back to disk after its promotion found no host block: %s; dropped",
						(unsigned long long)hash[i], strerror(-b[k].status));
				}
				pin[i] = POOL_NONE;
				continue;
			}
			blk[k] = spare[extra++];
			if (bounce)
				memcpy(pool_block(t->pool, blk[k]), b[k].data, b[k].len);
		}
		if (pool_commit(t->pool, blk[k], b[k].key, b[k].len, b[k].sum, t->inclusive, true))
			pin[i] = pool_find_lease(t->pool, key_of(hash[i]), &len, &sum);
		else
			pin[i] = blk[k];
		promoted++;
	}
	el = pc_env_now(t->env) - t0;
	if (promoted) {
		TSTAT(t, promoted_blocks, promoted);
		TSTAT(t, promote_batches, 1);
		TSTAT(t, promote_ns, el);
		pc_info("promoted disk blocks into host memory promoted_blocks=%u elapsed_ms=%.2f",
			promoted, ms_of(el));
	}
	while (extra < more)	/* had for keys that failed meanwhile */
		pool_unstage(t->pool, spare[extra++]);
	goto out;
unstage:
	for (uint32_t k = 0; k < got; k++)
		pool_unstage(t->pool, blk[k]);
out:
	free(spare);
	free(bounce);
	free(b);
	free(blk);
}

static int on_fetch(struct tier *t, const void *req, size_t len, struct pc_msg *resp)
{
	struct proto_tier_keys h;
	const uint64_t *hreq = keys_req(req, len, &h);
	struct proto_tier_xfer x = { .rkey = t->reg.key, .incarnation = t->fabric->incarnation };
	struct proto_tier_blk *out;
	uint64_t *hash = NULL, ttl;
	uint32_t *pin = NULL, *idx = NULL, *leased = NULL, m = 0, nl = 0;
	int ret = -ENOMEM;

	if (!hreq)
		return -EPROTO;
	hash = malloc(h.n * 8);
	pin = malloc(h.n * sizeof(*pin));
	idx = malloc(h.n * sizeof(*idx));
	leased = malloc(h.n * sizeof(*leased));
	if (!hash || !pin || !idx || !leased ||
	    pc_msg_reserve(resp, sizeof(x) + h.n * sizeof(*out)))
		goto out;
	memcpy(hash, hreq, h.n * 8);
	TSTAT(t, fetches, 1);
	TSTAT(t, fetch_blocks, h.n);
	/* Lease what is on host first, so that making room cannot evict it. */
	for (uint32_t i = 0; i < h.n; i++) {
		uint32_t l;
		uint64_t s;

		pin[i] = pool_find_lease(t->pool, key_of(hash[i]), &l, &s);
		if (pin[i] != POOL_NONE)
			TSTAT(t, fetch_host, 1);
		else if (t->disk && disk_has(t->disk, key_of(hash[i]), NULL, NULL, NULL))
			idx[m++] = i;
	}
	if (m) {
		promote(t, hash, idx, m, pin);
		for (uint32_t k = 0; k < m; k++)
			if (pin[idx[k]] != POOL_NONE)
				TSTAT(t, fetch_disk, 1);
	}
	out = (struct proto_tier_blk *)((uint8_t *)resp->data + sizeof(x));
	for (uint32_t i = 0; i < h.n; i++) {
		const struct pool_meta *pm;

		if (pin[i] == POOL_NONE) {
			out[i] = (struct proto_tier_blk){ .hash = hash[i], .status = -ENOENT };
			TSTAT(t, fetch_miss, 1);
			continue;
		}
		pm = &t->pool->meta[pin[i]];	/* pinned: key, len and sum are stable */
		out[i] = (struct proto_tier_blk){ .hash = hash[i], .len = pm->len, .sum = pm->sum,
						  .addr = (uint64_t)(uintptr_t)pool_block(t->pool, pin[i]) };
		leased[nl++] = pin[i];
	}
	/* the caller may ask for less than the node's lease, never for more */
	ttl = h.lease_ms && (uint64_t)h.lease_ms * 1000000 < t->lease_ns ?
		      (uint64_t)h.lease_ms * 1000000 : t->lease_ns;
	if (nl && pool_lease_pinned(t->pool, leased, nl, ttl, &x.lease)) {
		ret = -ENOMEM;
		goto out;
	}
	if (nl)
		TSTAT(t, leases, 1);
	x.n = h.n;
	memcpy(resp->data, &x, sizeof(x));
	resp->len = sizeof(x) + h.n * sizeof(*out);
	ret = 0;
out:
	free(hash);
	free(pin);
	free(idx);
	free(leased);
	return ret;
}

int tier_rpc(struct tier *t, uint32_t from, uint16_t opcode, const void *req, size_t len,
	     struct pc_msg *resp)
{
	uint64_t lease;

	switch (opcode) {
	case PC_RPC_TIER_OFFER:
		return on_offer(t, req, len, resp, false);
	case PC_RPC_TIER_QUERY:
		return on_offer(t, req, len, resp, true);
	case PC_RPC_TIER_PUT:
		return on_put(t, from, req, len, resp);
	case PC_RPC_TIER_FETCH:
		return on_fetch(t, req, len, resp);
	case PC_RPC_TIER_RELEASE:
		if (len != sizeof(lease))
			return -EPROTO;
		memcpy(&lease, req, sizeof(lease));
		return pool_release(t->pool, lease);
	case PC_RPC_TIER_STATS:
		if (len || pc_msg_reserve(resp, sizeof(struct pc_tier_metrics)))
			return len ? -EPROTO : -ENOMEM;
		tier_metrics(t, resp->data);
		resp->len = sizeof(struct pc_tier_metrics);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

/* ------------------------------------------------------------------ open, close */

int tier_open(const struct tier_params *p, struct tier **out, char *err, size_t errlen)
{
	const struct pc_store_cfg *cfg = p->cfg;
	struct tier *t = calloc(1, sizeof(*t));
	int ret = -ENOMEM;

	if (!t)
		return -ENOMEM;
	t->fabric = p->fabric;
	t->env = p->env;
	t->block_bytes = (uint32_t)cfg->tier_block_bytes;
	t->inclusive = cfg->tier_inclusive;
	t->payload_free = p->payload_free;
	t->lease_ns = (uint64_t)cfg->tier_lease_ms * 1000000;
	t->free_target = (uint32_t)((uint64_t)cfg->tier_host_blocks * cfg->tier_free_percent / 100);
	/* 4 KiB aligned: blocks go to and from disk with O_DIRECT, without a bounce */
	ret = pool_open(p->env, cfg->tier_host_blocks, t->block_bytes, 4096, p->payload_free, &t->pool);
	if (ret) {
		snprintf(err, errlen, "tiered pool: cannot map %u host blocks of %u bytes: %s",
			 cfg->tier_host_blocks, t->block_bytes, strerror(-ret));
		goto err;
	}
	if (!p->payload_free) {
		t->reg = (struct pc_region){ .addr = t->pool->mem, .len = t->pool->mem_bytes,
					     .access = PC_ACCESS_REMOTE_READ };
		ret = pc_fabric_reg(p->fabric, &t->reg);
		if (ret) {
			t->reg.len = 0;
			snprintf(err, errlen, "tiered pool: cannot register %zu bytes of host blocks: %s",
				 t->pool->mem_bytes, strerror(-ret));
			goto err;
		}
	}
	if (cfg->tier_disk_blocks) {
		struct pc_storage_params sp = { .size = sizeof(sp), .dir = p->disk_dir, .direct = true, .env = p->env,
						.backend_arg = p->storage_arg };

		/* room for the blocks at the strictest alignment a file may demand */
		sp.bytes = disk_file_bytes(cfg->tier_disk_blocks, t->block_bytes, 4096);
		ret = pc_storage_open_ops(p->storage, &sp, &t->stg);
		if (!ret)
			ret = disk_open(t->stg, cfg->tier_disk_blocks, t->block_bytes, p->payload_free,
					&t->disk);
		if (ret) {
			snprintf(err, errlen,
				 "tiered pool: disk directory %s: %s; set nodes.nvme.path (pcd --disk-dir) to a writable directory with room for %u blocks of %u bytes",
				 p->disk_dir, strerror(-ret), cfg->tier_disk_blocks, t->block_bytes);
			goto err;
		}
	}
	ret = pc_env_spawn(p->env, "pc-tier", tier_task, t, &t->task);
	if (ret) {
		t->task = NULL;
		snprintf(err, errlen, "tiered pool: cannot start its background task: %s", strerror(-ret));
		goto err;
	}
	pc_info("tiered pool ready: %u host blocks x %u B, %u disk blocks%s%s, watermark %u free%s",
		cfg->tier_host_blocks, t->block_bytes, cfg->tier_disk_blocks,
		t->disk ? " in " : "", t->disk ? p->disk_dir : "", t->free_target,
		t->inclusive ? ", inclusive" : "");
	*out = t;
	return 0;
err:
	tier_close(t);
	return ret;
}

void tier_close(struct tier *t)
{
	if (!t)
		return;
	if (t->task) {
		__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
		pc_env_join(t->env, t->task);
	}
	disk_close(t->disk);
	pc_storage_close(t->stg);
	if (t->reg.len)
		pc_fabric_dereg(t->fabric, &t->reg);
	pool_close(t->pool);
	free(t);
}

void tier_metrics(struct tier *t, struct pc_tier_metrics *m)
{
	struct disk_stats ds = { 0 };
	struct pool_usage u;
	const uint64_t *src = (const uint64_t *)&t->m;
	uint64_t *dst = (uint64_t *)m;

	memset(m, 0, sizeof(*m));
	m->size = sizeof(*m);
	for (size_t i = SIZED_HEAD / 8; i < offsetof(struct pc_tier_metrics, host_blocks) / 8; i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	if (t->disk)
		disk_get_stats(t->disk, &ds);
	m->disk_dropped = ds.dropped;
	m->checksum_ns += ds.sum_ns;
	m->disk_io_ns = ds.io_ns;
	pool_usage(t->pool, &u);
	m->host_blocks = t->pool->nr_blocks;
	m->disk_blocks = t->disk ? t->disk->nr_blocks : 0;
	m->resident_committed_blocks = u.valid + u.demoting;
	m->resident_disk_blocks = t->disk ? disk_used(t->disk) : 0;
	m->free_host_blocks = u.free;
	m->leased_blocks = u.leased;
}

struct disk_pool *tier_disk(struct tier *t)
{
	return t->disk;
}

struct host_pool *tier_pool(struct tier *t)
{
	return t->pool;
}
