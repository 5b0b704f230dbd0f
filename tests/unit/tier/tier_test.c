/*
 * tier_test.c - the tiered pool on the in-process fabric: the seed's smoke runs, 9x
 * capacity, a flipped byte on disk and in host memory, a full disk pool, injected
 * EIO/ENOSPC, leases under pressure and expiring, inclusive promotion, background
 * demotion, a lying stage_put checksum and malformed requests.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <peercache/peercache.h>
#include "builtin.h"
#include "config/topology.h"
#include "inproc/inproc.h"
#include "proto.h"
#include "store.h"
#include "fault.h"
#include "testutil.h"
#include "tier/disk.h"
#include "tier/pool.h"
#include "tier/tier.h"
#include "tier_smoke.h"

struct cluster {
	struct pc_topology *topo;
	struct inproc_world *w;
	struct pc_store *peer;		/* n0: serves the tiered pool under test */
	struct pc_store *client;	/* n1: a node, so the peer can pull from it */
};

/* n0 with the given tier settings; n1 with none. */
static struct cluster *up(const char *tier)
{
	struct cluster *C = calloc(1, sizeof(*C));
	char text[1024], err[PC_ERR_MAX] = "";
	struct pc_store_opts o = { .size = sizeof(o), .fabric = "inproc", .err = err,
				   .errlen = sizeof(err) };
	struct store_deps x = { 0 };
	int len = snprintf(text, sizeof(text),
			   "store: {global_segment_size: 1MiB, slot_size_classes: [16KiB]}\n"
			   "node_defaults: {address: 127.0.0.1, nvme: {path: %s}}\n"
			   "nodes:\n  - {name: n0, port: 40000}\n  - {name: n1, port: 40001}\n",
			   pc_test_tmpdir());

	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, (size_t)len, "tier", &C->topo, err, sizeof(err)), 0);
	C->w = inproc_world_create(2);
	x.backend_arg = C->w;
	o.topo = C->topo;
	o.node = "n1";
	if (builtin_store_open(&o, &x, &C->client))
		printf("\n  %s\n", err);
	/* the peer's own settings */
	snprintf(text, sizeof(text), "store.tier_block_bytes=%u", SMOKE_BLOCK);
	CU_ASSERT_EQUAL_FATAL(pc_topology_set(C->topo, text, err, sizeof(err)), 0);
	for (const char *p = tier; *p;) {
		const char *sp = strchr(p, ' ');
		size_t n = sp ? (size_t)(sp - p) : strlen(p);

		snprintf(text, sizeof(text), "%.*s", (int)n, p);
		if (pc_topology_set(C->topo, text, err, sizeof(err)))
			printf("\n  %s\n", err);
		p += n + (sp != NULL);
	}
	o.node = "n0";
	if (builtin_store_open(&o, &x, &C->peer))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(C->client);
	CU_ASSERT_PTR_NOT_NULL_FATAL(C->peer);
	return C;
}

static void down(struct cluster *C)
{
	pc_store_close(C->client);
	pc_store_close(C->peer);
	inproc_world_destroy(C->w);
	pc_topology_free(C->topo);
	free(C);
}

#define SEED "store.tier_host_blocks=8 store.tier_disk_blocks=64 store.tier_free_percent=0"

static struct pc_tier_metrics metrics(struct cluster *C)
{
	struct pc_tier_metrics m = { .size = sizeof(m) };

	CU_ASSERT_EQUAL(pc_tier_metrics(C->peer, &m), 0);
	return m;
}

static void test_smoke_runs(void)
{
	struct cluster *C = up(SEED);

	smoke_runs(C->client, "n0");
	down(C);
}

/* 8 host + 64 disk blocks hold 72 distinct blocks, every one fetchable. */
static void test_nine_times_capacity(void)
{
	struct cluster *C = up(SEED);
	struct pc_tier_metrics m = { .size = sizeof(m) };
	int same = 0;

	for (uint32_t i = 0; i < 72; i += 8)
		CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'C', i, 8), 8);
	m = metrics(C);
	CU_ASSERT_EQUAL(m.resident_committed_blocks, 8);
	CU_ASSERT_EQUAL(m.resident_disk_blocks, 64);
	CU_ASSERT_EQUAL(m.disk_dropped, 0);
	for (uint32_t i = 0; i < 72; i += 4)
		same += smoke_fetch(C->client, "n0", 'C', i, 4);
	CU_ASSERT_EQUAL(same, 72);
	m = metrics(C);
	CU_ASSERT_EQUAL(m.fetch_miss, 0);
	CU_ASSERT_EQUAL(m.resident_committed_blocks + m.resident_disk_blocks, 72);
	printf("\n  72 blocks in 8 host + 64 disk: all 72 verified; %llu promoted, %llu demoted",
	       (unsigned long long)m.promoted_blocks, (unsigned long long)m.demoted_blocks);
	down(C);
}

/* Flip a byte of a demoted block in the disk file: its fetch is a miss, counted. */
static void test_flipped_byte_on_disk(void)
{
	struct cluster *C = up(SEED);
	struct disk_pool *d;
	uint8_t *page = aligned_alloc(4096, SMOKE_BLOCK);
	struct pc_io io = { .buf = page, .len = SMOKE_BLOCK };
	struct pc_tier_metrics m = { .size = sizeof(m) };
	uint32_t blk;

	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'D', 0, 8), 8);
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'D', 8, 4), 4);	/* D0..D3 to disk */
	d = tier_disk(C->peer->tier);
	CU_ASSERT_TRUE_FATAL(keymap_get(&d->map, (struct pc_keyhash){ .lo = smoke_hash('D', 2) }, &blk));
	io.off = blk * d->stride;
	CU_ASSERT_EQUAL(pc_storage_read(d->stg, &io, 1), 0);
	page[100] ^= 1;
	CU_ASSERT_EQUAL(pc_storage_write(d->stg, &io, 1), 0);
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'D', 0, 4), 3);	/* never the bad bytes */
	m = metrics(C);
	CU_ASSERT_EQUAL(m.corrupt_on_promote, 1);
	CU_ASSERT_EQUAL(m.fetch_miss, 1);
	CU_ASSERT_EQUAL(m.promoted_blocks, 3);
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'D', 2, 1), 0);	/* gone for good */
	free(page);
	down(C);
}

/* Flip a byte of a block in host memory, then demote it: the disk keeps the sum it
 * was put with, so its fetch is a miss, counted, not the changed bytes. */
static void test_flipped_byte_in_host_memory(void)
{
	struct cluster *C = up(SEED);
	struct host_pool *p = tier_pool(C->peer->tier);
	struct pc_tier_metrics m = { .size = sizeof(m) };
	enum pool_state state;
	uint32_t blk;

	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'H', 0, 8), 8);
	blk = pool_find(p, (struct pc_keyhash){ .lo = smoke_hash('H', 2) }, &state);
	CU_ASSERT_NOT_EQUAL_FATAL(blk, POOL_NONE);
	pool_block(p, blk)[100] ^= 1;
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'H', 8, 4), 4);	/* H0..H3 to disk */
	m = metrics(C);
	CU_ASSERT_EQUAL(m.demoted_blocks, 4);
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'H', 0, 4), 3);	/* never the bad bytes */
	m = metrics(C);
	CU_ASSERT_EQUAL(m.corrupt_on_promote, 1);
	CU_ASSERT_EQUAL(m.fetch_miss, 1);
	down(C);
}

/* More than host + disk: the disk pool drops its own LRU tail, for real. */
static void test_disk_pool_full(void)
{
	struct cluster *C = up("store.tier_host_blocks=8 store.tier_disk_blocks=16 store.tier_free_percent=0");
	struct pc_tier_metrics m = { .size = sizeof(m) };

	for (uint32_t i = 0; i < 32; i += 8)
		CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'E', i, 8), 8);
	m = metrics(C);
	CU_ASSERT_EQUAL(m.demoted_blocks, 24);
	CU_ASSERT_EQUAL(m.disk_dropped, 8);
	CU_ASSERT_EQUAL(m.resident_disk_blocks, 16);
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'E', 0, 8), 0);	/* the oldest: gone */
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'E', 8, 4), 4);
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'E', 28, 4), 4);
	down(C);
}

/* FETCH with a lease of lease_ms and no RELEASE; returns the lease. */
static uint64_t raw_fetch(struct cluster *C, uint64_t hash, uint32_t lease_ms)
{
	struct {
		struct proto_tier_keys h;
		uint64_t hash;
	} req = { .h = { .n = 1, .lease_ms = lease_ms }, .hash = hash };
	struct pc_rpc r = { .peer = 0, .opcode = PC_RPC_TIER_FETCH, .req = &req, .req_len = sizeof(req) };
	struct proto_tier_xfer x = { 0 };

	CU_ASSERT_EQUAL(pc_fabric_call(C->client->svc.fabric, &r, 1), 0);
	CU_ASSERT_EQUAL(r.status, 0);
	if (!r.status && r.resp.len >= sizeof(x))
		memcpy(&x, r.resp.data, sizeof(x));
	pc_msg_free(&r.resp);
	return x.lease;
}

static uint8_t where1(struct cluster *C, char set, uint32_t i)
{
	uint64_t h = smoke_hash(set, i);
	uint8_t w = 0;

	pc_tier_query(C->client, "n0", &h, 1, &w);
	return w;
}

/* A failed spill is delete-and-miss; a failed promotion read is a miss. */
static void test_injected_faults(void)
{
	struct cluster *C = up(SEED);
	struct disk_pool *d = tier_disk(C->peer->tier);
	struct fault *ft = fault_new();
	struct pc_tier_metrics m = { .size = sizeof(m) };

	CU_ASSERT_EQUAL_FATAL(fault_wrap_storage(ft, d->stg), 0);
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_WRITE, .err = -ENOSPC });
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'F', 0, 8), 8);
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'F', 8, 4), 4);	/* F0..F3 cannot spill */
	m = metrics(C);
	CU_ASSERT_EQUAL(m.spill_failures, 4);
	CU_ASSERT_EQUAL(m.dropped_blocks, 4);
	CU_ASSERT_EQUAL(m.demoted_blocks, 0);
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'F', 0, 4), 0);	/* clean misses */
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'F', 4, 8), 8);
	/* the disk works again; then reads fail */
	fault_clear(ft);
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'G', 0, 4), 4);	/* 4 of F to disk */
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_READ, .err = -EIO });
	m = metrics(C);
	CU_ASSERT_EQUAL(m.demoted_blocks, 4);
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'F', 4, 4), 0);
	CU_ASSERT_EQUAL(where1(C, 'F', 4), PC_WHERE_NONE);		/* dropped, not kept */
	m = metrics(C);
	CU_ASSERT_EQUAL(m.resident_disk_blocks, 0);	/* and nothing was demoted for them */
	CU_ASSERT_EQUAL(m.demoted_blocks, 4);
	fault_free(ft);
	down(C);
}

/* A storage whose next write lets a fetch of one block in first: the block is
 * leased on its way down to disk. */
static struct midway {
	struct cluster *C;
	uint64_t hash, lease;
	const struct pc_storage_ops *inner;
	struct pc_storage_ops ops;
} midway;

static int write_after_fetch(struct pc_storage *s, struct pc_io *ios, size_t n,
			     pc_io_prepare_fn prepare, void *arg)
{
	if (!midway.lease)
		midway.lease = raw_fetch(midway.C, midway.hash, 60000);
	return midway.inner->write_prepared(s, ios, n, prepare, arg);
}

/* A block fetched while it is being demoted stays in host memory: it is counted
 * neither evicted nor dropped, whether its disk write works or fails. */
static void demoted_while_fetched(bool fail)
{
	struct cluster *C = up(SEED);
	struct tier *t = C->peer->tier;
	struct pc_storage *s = tier_disk(t)->stg;
	struct fault *ft = fault_new();
	struct pc_tier_metrics m;

	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'Q', 0, 8), 8);	/* Q0 is the LRU tail */
	CU_ASSERT_EQUAL_FATAL(fault_wrap_storage(ft, s), 0);
	if (fail)
		fault_add(ft, (struct fault_rule){ .site = FAULT_IO_WRITE, .err = -ENOSPC });
	midway = (struct midway){ .C = C, .hash = smoke_hash('Q', 0), .inner = s->ops, .ops = *s->ops };
	midway.ops.write_prepared = write_after_fetch;
	s->ops = &midway.ops;
	CU_ASSERT_EQUAL(tier_demote(t, 1, false), 0);	/* none left host memory */
	s->ops = midway.inner;
	CU_ASSERT_NOT_EQUAL(midway.lease, 0);
	CU_ASSERT_EQUAL(where1(C, 'Q', 0), PC_WHERE_HOST);
	m = metrics(C);
	CU_ASSERT_EQUAL(m.evicted_blocks, 0);
	CU_ASSERT_EQUAL(m.dropped_blocks, 0);
	CU_ASSERT_EQUAL(m.demoted_blocks, 0);
	CU_ASSERT_EQUAL(m.spill_failures, fail ? 1 : 0);
	CU_ASSERT_EQUAL(m.resident_committed_blocks, 8);
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'Q', 0, 8), 8);
	fault_free(ft);
	down(C);
}

static void test_demoted_while_fetched(void)
{
	demoted_while_fetched(false);
	demoted_while_fetched(true);
}

/* A promotion that finds every host block leased puts the block back on disk; a
 * put-back that fails has lost the block: counted as a failed spill is. */
static void test_put_back_failure_counted(void)
{
	struct cluster *C = up("store.tier_host_blocks=2 store.tier_disk_blocks=8 store.tier_free_percent=0");
	struct disk_pool *d = tier_disk(C->peer->tier);
	struct fault *ft = fault_new();
	struct pc_tier_metrics m0, m1;

	for (uint32_t i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'P', i, 1), 1);	/* P0, P1 to disk */
	CU_ASSERT_EQUAL(where1(C, 'P', 0), PC_WHERE_DISK);
	CU_ASSERT_NOT_EQUAL(raw_fetch(C, smoke_hash('P', 2), 60000), 0);
	CU_ASSERT_NOT_EQUAL(raw_fetch(C, smoke_hash('P', 3), 60000), 0);	/* host blocks leased */
	m0 = metrics(C);
	CU_ASSERT_EQUAL_FATAL(fault_wrap_storage(ft, d->stg), 0);
	fault_add(ft, (struct fault_rule){ .site = FAULT_IO_WRITE, .err = -ENOSPC });
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'P', 0, 1), 0);	/* a clean miss */
	CU_ASSERT_EQUAL(fault_hits(ft, 0), 1);				/* the put-back */
	CU_ASSERT_EQUAL(where1(C, 'P', 0), PC_WHERE_NONE);
	m1 = metrics(C);
	CU_ASSERT_EQUAL(m1.spill_failures, m0.spill_failures + 1);
	CU_ASSERT_EQUAL(m1.dropped_blocks, m0.dropped_blocks + 1);
	fault_free(ft);
	down(C);
}

static void test_leases(void)
{
	struct cluster *C = up(SEED);
	struct pc_tier_metrics m = { .size = sizeof(m) };
	uint64_t lease;
	struct pc_rpc r = { .peer = 0, .opcode = PC_RPC_TIER_RELEASE, .req = &lease,
			    .req_len = sizeof(lease) };

	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'L', 0, 8), 8);
	lease = raw_fetch(C, smoke_hash('L', 0), 60000);	/* L0 is the LRU tail... */
	CU_ASSERT_NOT_EQUAL(lease, 0);
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'M', 0, 16), 7);	/* ...and stays: 7 fit */
	CU_ASSERT_EQUAL(where1(C, 'L', 0), PC_WHERE_HOST);
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'L', 0, 1), 1);
	CU_ASSERT_EQUAL(pc_fabric_call(C->client->svc.fabric, &r, 1), 0);
	CU_ASSERT_EQUAL(r.status, 0);
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'N', 0, 8), 8);
	CU_ASSERT_EQUAL(where1(C, 'L', 0), PC_WHERE_DISK);	/* released: it can go */

	/* a lease nobody releases expires */
	lease = raw_fetch(C, smoke_hash('N', 0), 50);
	CU_ASSERT_NOT_EQUAL(lease, 0);
	for (int i = 0; i < 300; i++) {
		m = metrics(C);
		if (m.lease_expired)
			break;
		usleep(10000);
	}
	CU_ASSERT_EQUAL(m.lease_expired, 1);
	CU_ASSERT_EQUAL(m.leased_blocks, 0);
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'O', 0, 8), 8);
	CU_ASSERT_EQUAL(where1(C, 'N', 0), PC_WHERE_DISK);
	pc_msg_free(&r.resp);
	down(C);
}

/* Inclusive: a promoted block keeps its disk copy, and demoting it again writes
 * nothing. */
static void test_inclusive(void)
{
	struct cluster *C = up(SEED " store.tier_inclusive=true");
	struct disk_stats ds;
	struct pc_tier_metrics m = { .size = sizeof(m) };

	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'I', 0, 8), 8);
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'I', 8, 4), 4);	/* I0..I3 written */
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'I', 0, 4), 4);	/* promoted, kept */
	m = metrics(C);
	CU_ASSERT_EQUAL(m.promoted_blocks, 4);
	CU_ASSERT_EQUAL(m.resident_disk_blocks, 8);	/* I0..I3 still there, I4..I7 too */
	disk_get_stats(tier_disk(C->peer->tier), &ds);
	CU_ASSERT_EQUAL(ds.writes, 8);
	/* push I0..I3 out again: no rewrite for them */
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'J', 0, 8), 8);
	disk_get_stats(tier_disk(C->peer->tier), &ds);
	CU_ASSERT_EQUAL(ds.writes, 12);		/* only I8..I11 were new to disk */
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'I', 0, 4), 4);
	down(C);
}

/* Inclusive: a block demoted again onto its disk copy is the disk's most recent, so
 * the disk drops blocks that left host memory before it, not that copy. */
static void test_inclusive_demoted_again_is_recent(void)
{
	struct cluster *C = up("store.tier_host_blocks=2 store.tier_disk_blocks=3 "
			       "store.tier_free_percent=0 store.tier_inclusive=true");

	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'R', 0, 2), 2);
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'R', 2, 1), 1);	/* R0 to disk */
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'R', 0, 1), 1);	/* R1 to disk */
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'R', 3, 1), 1);	/* R2 to disk: full */
	CU_ASSERT_EQUAL(where1(C, 'R', 0), PC_WHERE_HOST);
	/* R0 goes down onto its copy, R3 is written: one of R0, R1, R2 is dropped */
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'R', 4, 2), 2);
	CU_ASSERT_EQUAL(where1(C, 'R', 0), PC_WHERE_DISK);
	CU_ASSERT_EQUAL(where1(C, 'R', 1), PC_WHERE_NONE);
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'R', 0, 1), 1);
	down(C);
}

/* The watermark: the background task keeps free blocks so staging does not wait. */
static void test_background_demotion(void)
{
	struct cluster *C = up("store.tier_host_blocks=8 store.tier_disk_blocks=64 store.tier_free_percent=25");
	struct pc_tier_metrics m = { .size = sizeof(m) };

	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'W', 0, 8), 8);
	for (int i = 0; i < 300; i++) {
		m = metrics(C);
		if (m.free_host_blocks >= 2)
			break;
		usleep(10000);
	}
	CU_ASSERT_EQUAL(m.background_demoted, 2);
	CU_ASSERT_EQUAL(m.free_host_blocks, 2);
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'X', 0, 2), 2);
	m = metrics(C);
	CU_ASSERT_EQUAL(m.evicted_blocks, m.background_demoted);	/* none in band */
	CU_ASSERT_EQUAL(smoke_fetch(C->client, "n0", 'W', 0, 8), 8);
	down(C);
}

/* A fetch naming blocks twice, promoted through the bounce path (no free host block):
 * every answer right, and the pool still consistent afterwards. */
static void test_fetch_duplicates(void)
{
	struct cluster *C = up(SEED);
	uint8_t *buf = malloc(4 * SMOKE_BLOCK), *want = malloc(SMOKE_BLOCK);
	uint32_t order[4] = { 0, 0, 1, 2 };
	struct pc_block b[4];
	struct pc_tier_metrics m = { .size = sizeof(m) };
	int same = 0;

	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'U', 0, 8), 8);
	CU_ASSERT_EQUAL(smoke_put(C->client, "n0", 'U', 8, 4), 4);	/* U0..U3 on disk, host full */
	for (int i = 0; i < 4; i++)
		b[i] = (struct pc_block){ .hash = smoke_hash('U', order[i]), .data = buf + i * SMOKE_BLOCK,
					  .cap = SMOKE_BLOCK };
	CU_ASSERT_EQUAL(pc_tier_fetch(C->client, "n0", b, 4), 4);
	for (int i = 0; i < 4; i++) {
		smoke_fill(want, 'U', order[i]);
		same += !b[i].status && !memcmp(b[i].data, want, SMOKE_BLOCK);
	}
	CU_ASSERT_EQUAL(same, 4);
	m = metrics(C);
	CU_ASSERT_EQUAL(m.resident_committed_blocks + m.resident_disk_blocks, 12);
	CU_ASSERT_EQUAL(m.leased_blocks, 0);
	CU_ASSERT_EQUAL(m.free_host_blocks, 0);
	same = 0;
	for (uint32_t i = 0; i < 12; i += 4)
		same += smoke_fetch(C->client, "n0", 'U', i, 4);
	CU_ASSERT_EQUAL(same, 12);
	free(buf);
	free(want);
	down(C);
}

/* A put whose checksum does not match the bytes pulled is refused. */
static void test_put_bad_checksum(void)
{
	struct cluster *C = up(SEED);
	struct {
		struct proto_tier_xfer x;
		struct proto_tier_blk b;
	} req;
	struct pc_region r = { .len = SMOKE_BLOCK, .access = PC_ACCESS_REMOTE_READ };
	struct pc_rpc rpc = { .peer = 0, .opcode = PC_RPC_TIER_PUT, .req = &req, .req_len = sizeof(req) };
	struct pc_tier_metrics m = { .size = sizeof(m) };

	r.addr = calloc(1, SMOKE_BLOCK);
	CU_ASSERT_EQUAL_FATAL(pc_fabric_reg(C->client->svc.fabric, &r), 0);
	req.x = (struct proto_tier_xfer){ .n = 1, .rkey = r.key,
					  .incarnation = C->client->svc.fabric->incarnation };
	req.b = (struct proto_tier_blk){ .hash = 42, .addr = (uint64_t)(uintptr_t)r.addr,
					 .len = SMOKE_BLOCK, .sum = 12345 };
	CU_ASSERT_EQUAL(pc_fabric_call(C->client->svc.fabric, &rpc, 1), 0);
	CU_ASSERT_EQUAL(rpc.status, 0);
	CU_ASSERT_EQUAL_FATAL(rpc.resp.len, 4);
	CU_ASSERT_EQUAL(*(int32_t *)rpc.resp.data, -EBADMSG);
	m = metrics(C);
	CU_ASSERT_EQUAL(m.put_bad_checksum, 1);
	CU_ASSERT_EQUAL(m.resident_committed_blocks, 0);
	pc_msg_free(&rpc.resp);
	pc_fabric_dereg(C->client->svc.fabric, &r);
	free(r.addr);
	down(C);
}

static void test_bad_requests(void)
{
	struct cluster *C = up(SEED);
	uint8_t junk[64] = { 0 };
	struct proto_tier_keys many = { .n = PROTO_TIER_MAX_BLOCKS + 1 };
	struct pc_rpc r[5] = {
		{ .peer = 0, .opcode = PC_RPC_TIER_OFFER, .req = junk, .req_len = 3 },
		{ .peer = 0, .opcode = PC_RPC_TIER_FETCH, .req = &many, .req_len = sizeof(many) },
		{ .peer = 0, .opcode = PC_RPC_TIER_PUT, .req = junk, .req_len = sizeof(junk) },
		{ .peer = 0, .opcode = PC_RPC_TIER_RELEASE, .req = junk, .req_len = 4 },
		{ .peer = 1, .opcode = PC_RPC_TIER_OFFER, .req = junk, .req_len = 3 },
	};
	struct pc_block b = { .hash = 1, .data = junk, .len = sizeof(junk) };
	struct pc_store_opts o = { .size = sizeof(o), .topo = C->topo, .fabric = "inproc" };
	struct store_deps x = { .backend_arg = C->w };
	struct pc_store *anon = NULL;

	CU_ASSERT_EQUAL(pc_fabric_call(C->client->svc.fabric, r, 5), 0);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(r[i].status, -EPROTO);
	CU_ASSERT_EQUAL(r[4].status, -EOPNOTSUPP);	/* n1 serves no tiered pool */
	for (int i = 0; i < 5; i++)
		pc_msg_free(&r[i].resp);
	/* a client that is not a node cannot be pulled from */
	CU_ASSERT_EQUAL_FATAL(builtin_store_open(&o, &x, &anon), 0);
	CU_ASSERT_EQUAL(pc_tier_put(anon, "n0", &b, 1), -EOPNOTSUPP);
	pc_store_close(anon);
	/* over the block size */
	b.len = SMOKE_BLOCK + 1;
	b.data = calloc(1, b.len);
	CU_ASSERT_EQUAL(pc_tier_put(C->client, "n0", &b, 1), 0);
	CU_ASSERT_EQUAL(b.status, -EFBIG);
	free(b.data);
	down(C);
}

/* An offer or a query given no array for its answers is refused, before it asks. */
static void test_no_answer_array(void)
{
	struct cluster *C = up(SEED);
	uint64_t h = 1;

	CU_ASSERT_EQUAL(pc_tier_query(C->client, "n1", &h, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(pc_tier_offer(C->client, "n1", &h, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(pc_tier_query(C->client, "n0", &h, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(pc_tier_offer(C->client, "n0", &h, 1, NULL), -EINVAL);
	/* no blocks: no answers to hold */
	CU_ASSERT_EQUAL(pc_tier_query(C->client, "n0", &h, 0, NULL), 0);
	CU_ASSERT_EQUAL(pc_tier_offer(C->client, "n0", &h, 0, NULL), 0);
	down(C);
}

/* The size of struct pc_tier_metrics in the build n0 answers TIER_STATS as. */
static size_t peer_metrics_size;

static int other_build(void *arg, uint32_t from, uint16_t opcode, const void *req, size_t len,
		       struct pc_msg *resp)
{
	int ret = store_rpc(arg, from, opcode, req, len, resp);

	if (ret || opcode != PC_RPC_TIER_STATS)
		return ret;
	if (peer_metrics_size > resp->len) {	/* counters this build does not know */
		if (pc_msg_reserve(resp, peer_metrics_size - resp->len))
			return -ENOMEM;
		memset((uint8_t *)resp->data + resp->len, 0x5a, peer_metrics_size - resp->len);
	}
	resp->len = peer_metrics_size;
	return 0;
}

/* A node of a newer build (a bigger struct) or an older one (a smaller struct) is
 * read up to the size both know; what the older one lacks is zero. */
static void test_node_metrics_other_build(void)
{
	struct cluster *C = up(SEED);
	const size_t mine = sizeof(struct pc_tier_metrics);
	struct pc_tier_metrics m;
	bool wanted;
	uint64_t h = 7;

	CU_ASSERT_EQUAL(pc_tier_offer(C->client, "n0", &h, 1, &wanted), 1);
	CU_ASSERT_EQUAL_FATAL(pc_fabric_serve(C->peer->svc.fabric, NULL, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(pc_fabric_serve(C->peer->svc.fabric, other_build, C->peer), 0);
	peer_metrics_size = mine + 16;
	memset(&m, 0xff, sizeof(m));
	m.size = sizeof(m);
	CU_ASSERT_EQUAL(pc_tier_node_metrics(C->client, "n0", &m), 0);
	CU_ASSERT_EQUAL(m.offers, 1);
	CU_ASSERT_EQUAL(m.leased_blocks, 0);
	peer_metrics_size = mine - 8;	/* without free_host_blocks and leased_blocks */
	memset(&m, 0xff, sizeof(m));
	m.size = sizeof(m);
	CU_ASSERT_EQUAL(pc_tier_node_metrics(C->client, "n0", &m), 0);
	CU_ASSERT_EQUAL(m.offers, 1);
	CU_ASSERT_EQUAL(m.free_host_blocks, 0);
	CU_ASSERT_EQUAL(m.leased_blocks, 0);
	peer_metrics_size = 4;	/* not even its size field */
	CU_ASSERT_EQUAL(pc_tier_node_metrics(C->client, "n0", &m), -EPROTO);
	down(C);
}

static CU_TestInfo tests[] = {
	{ "the seed's three smoke runs", test_smoke_runs },
	{ "9x capacity: 72 blocks in 8 host + 64 disk", test_nine_times_capacity },
	{ "a flipped byte on disk is a counted miss", test_flipped_byte_on_disk },
	{ "a byte flipped in host memory, then demoted: a miss", test_flipped_byte_in_host_memory },
	{ "a full disk pool drops its LRU tail", test_disk_pool_full },
	{ "injected ENOSPC and EIO: delete-and-miss", test_injected_faults },
	{ "a failed put-back after a promotion is counted", test_put_back_failure_counted },
	{ "a block fetched while being demoted stays, not counted evicted",
	  test_demoted_while_fetched },
	{ "leases survive pressure; expired leases free", test_leases },
	{ "inclusive promotion keeps the disk copy", test_inclusive },
	{ "inclusive: a block demoted again is the disk's most recent",
	  test_inclusive_demoted_again_is_recent },
	{ "background demotion keeps the watermark", test_background_demotion },
	{ "a fetch naming blocks twice, host pool full", test_fetch_duplicates },
	{ "stage_put with a wrong checksum", test_put_bad_checksum },
	{ "malformed requests and bad callers", test_bad_requests },
	{ "offer and query given no array for their answers", test_no_answer_array },
	{ "a node of another build: its metrics up to the common size",
	  test_node_metrics_other_build },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "tiered pool", NULL, NULL, NULL, NULL, tests })
