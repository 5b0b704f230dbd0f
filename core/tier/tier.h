/*
 * tier.h - the tiered pool a node serves (the KVBM G2PB peer with G3 spill): the host
 * pool (pool.c) over the disk pool (disk.c), demotion and promotion between them, the
 * offer/query/stage_put/fetch/release handlers, and a background task that keeps a
 * free-block watermark and expires leases.
 *
 * Not for: the client side (tier_client.c) or the wire structs (proto.h).
 */
#ifndef PC_TIER_H
#define PC_TIER_H

#include <peercache/pc_fabric.h>
#include <peercache/pc_storage.h>
#include <peercache/peercache.h>

struct tier;

struct tier_params {
	struct pc_fabric *fabric;
	struct pc_env *env;
	const struct pc_store_cfg *cfg;		/* tier_* fields */
	const char *disk_dir;
	const struct pc_storage_ops *storage;	/* the disk backend */
	void *storage_arg;
	bool payload_free;
};

/* 0 or -errno with a one-line reason in err. */
int tier_open(const struct tier_params *p, struct tier **out, char *err, size_t errlen);
void tier_close(struct tier *t);

/* PC_RPC_TIER_* requests. */
int tier_rpc(struct tier *t, uint32_t from, uint16_t opcode, const void *req, size_t len,
	     struct pc_msg *resp);

/* Demote up to n unleased blocks from the LRU tail now (background demotion and
 * tests). Returns how many left host memory. */
uint32_t tier_demote(struct tier *t, uint32_t n, bool background);

void tier_metrics(struct tier *t, struct pc_tier_metrics *m);

/* The disk pool (NULL without one), for tests that flip bytes or inject faults. */
struct disk_pool *tier_disk(struct tier *t);
/* The host pool, for tests that flip bytes in host memory. */
struct host_pool *tier_pool(struct tier *t);

#endif
