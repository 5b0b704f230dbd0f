/*
 * pc_topology.h - one YAML file describes a cluster: its nodes (address, rails,
 * host memory, NVMe), the cache geometry and, optionally, the model shape that fixes
 * the page size. The same file starts a real local cluster and drives a simulation.
 *
 * Loading is strict: an unknown key, a wrong type, a value out of range, a duplicate
 * node or a page larger than the largest size class stops the load with one line that
 * names the file, line and column, the field, what was expected and how to fix it.
 *
 * Not for: run-time state. A loaded topology is plain data the caller owns.
 */
#ifndef PC_TOPOLOGY_H
#define PC_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <peercache/pc_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PC_NAME_MAX 64
#define PC_PATH_MAX 256
#define PC_MAX_RAILS 8
#define PC_MAX_CLASSES 8

enum pc_mode { PC_MODE_SLOTMAP = 0, PC_MODE_P2P = 1 };
enum pc_protocol { PC_PROTO_TCP = 0, PC_PROTO_RDMA = 1, PC_PROTO_RXE = 2 };
enum pc_fallback { PC_FALLBACK_TCP = 0, PC_FALLBACK_NONE = 1 };

/* How a slotmap get reads a size class. auto: whole buckets where a bucket is small
 * (ways x slot <= 16 KiB), index first where pages are large (>= 1 MiB), the
 * predicted way with its bucket index otherwise. bucket is the seed's behaviour. */
enum pc_read_policy { PC_READ_AUTO = 0, PC_READ_BUCKET, PC_READ_PREDICT, PC_READ_INDEX };

/* Where a value came from, for error messages (line and column are 1-based). */
struct pc_mark {
	int line, col;
};

struct pc_rail {
	char device[PC_NAME_MAX];	/* NIC name (mlx5_0, rxe0); "" = first active port */
	char netdev[PC_NAME_MAX];	/* rxe: the Ethernet device to create it on;
					 * "" = the one holding the node's address */
	double gbps;			/* line rate */
	double latency_us;		/* one-way per-op latency */
	uint32_t max_outstanding;	/* ops in flight per port */
};

struct pc_nvme {
	char path[PC_PATH_MAX];		/* directory for the spill file */
	uint64_t capacity;		/* bytes */
	double read_mbps, write_mbps;	/* MB/s (10^6 bytes) */
	uint32_t iops;			/* 4 KiB random IOPS */
	double latency_us;		/* per-request device latency */
	uint32_t queue_depth;
};

struct pc_node {
	char name[PC_NAME_MAX];
	char address[PC_NAME_MAX];	/* IPv4/IPv6 literal or host name the server binds */
	uint16_t port;
	struct pc_rail rails[PC_MAX_RAILS];
	uint32_t nr_rails;
	uint64_t host_pool_bytes;	/* pinned host memory for the cache */
	double memcpy_gbps;		/* host copy bandwidth (GB/s), for the simulator */
	bool has_nvme;
	struct pc_nvme nvme;
	struct pc_mark mark;		/* the node's entry in the file */
};

/* The store keys of the seed (mode, protocol, slot_*, global_segment_size,
 * discovery_addr) plus the ones peercache adds. */
struct pc_store_cfg {
	enum pc_mode mode;
	enum pc_protocol protocol;
	enum pc_fallback fallback;		/* when protocol rdma/rxe finds no device */
	char discovery_addr[PC_NAME_MAX];	/* host:port of a seed node, informational */
	uint64_t slot_max_page_bytes;		/* largest class when no list is given */
	uint64_t size_classes[PC_MAX_CLASSES];	/* ascending page sizes */
	uint32_t nr_classes;
	uint32_t slot_ways;
	uint64_t slot_num_buckets;		/* per class; 0 = derive from the segment */
	uint64_t global_segment_size;		/* slot bytes per node, split over classes */
	uint32_t vnodes;			/* ring points per node */
	uint32_t timeout_ms;			/* a dead peer fails a call within this */
	uint32_t tcp_poll_us;			/* tcp: poll this long before sleeping */
	bool slot_cas_claim;			/* remote writers claim a slot with CAS */
	enum pc_read_policy slot_read_policy;
	/* Spill under slotmap: each node keeps this many ways per bucket free by moving
	 * its oldest pages to disk (nvme.path, nvme.capacity) in the background; a
	 * reader's miss asks the owner, which promotes them back. 0 = off. */
	uint32_t slot_spill_ways;
	bool classes_explicit;			/* slot_size_classes was given */
	struct pc_mark classes_mark;
	/* The tiered pool each node serves (offer/query/stage_put/fetch): host blocks in
	 * pinned memory that spill to disk blocks in an unlinked file in nvme.path. */
	uint32_t tier_host_blocks;		/* 0 = no tiered pool */
	uint32_t tier_disk_blocks;		/* 0 = evicted blocks are dropped */
	uint64_t tier_block_bytes;		/* 0 = the model's page, else the largest class */
	uint32_t tier_free_percent;		/* background demotion keeps this share free */
	bool tier_inclusive;			/* promoted blocks keep their disk copy */
	uint32_t tier_lease_ms;			/* a fetch's lease expires after this */
};

/* Model shape: page bytes = 2 (K and V) x layers x kv_heads x head_dim x dtype bytes
 * x tokens per page. Qwen2.5-0.5B: 2 x 24 x 2 x 64 x 2 x 1 = 12288. */
struct pc_model {
	bool present;
	uint32_t layers, kv_heads, head_dim, tokens_per_page;
	char dtype[16];
	uint32_t dtype_bytes;
	uint64_t page_bytes;
	struct pc_mark mark;
};

struct pc_topology {
	char source[PC_PATH_MAX];	/* file name used in messages */
	char name[PC_NAME_MAX];
	struct pc_store_cfg store;
	struct pc_model model;
	struct pc_node *nodes;
	uint32_t nr_nodes;
};

/* Load and validate a topology file. 0, or -EINVAL/-ENOENT/-ENOMEM with a one-line
 * message in err. On success the caller frees *out with pc_topology_free(). */
PC_API int pc_topology_load(const char *path, struct pc_topology **out, char *err, size_t errlen);

/* The same from text in memory; name is used in messages in place of a file name. */
PC_API int pc_topology_parse(const char *text, size_t len, const char *name,
		      struct pc_topology **out, char *err, size_t errlen);

/* Override one field, as flags and sweeps do: "store.slot_ways=8",
 * "nodes.host_pool_bytes=4GiB" (every node), "nodes.rails.gbps=100" (every rail),
 * "nodes.count=32" (keep the first N nodes or add more like the last one). The whole
 * topology is validated again. 0 or -EINVAL with err set; on error t is unchanged. */
PC_API int pc_topology_set(struct pc_topology *t, const char *assignment, char *err, size_t errlen);

/* Index of the node called name, or -1. */
PC_API int pc_topology_find_node(const struct pc_topology *t, const char *name);

/* Write the resolved topology as YAML that pc_topology_parse() reads back. */
PC_API int pc_topology_write(const struct pc_topology *t, FILE *f);

/* Deep copy, for callers that change one copy per configuration. NULL on ENOMEM. */
PC_API struct pc_topology *pc_topology_dup(const struct pc_topology *t);

PC_API void pc_topology_free(struct pc_topology *t);

/* Parse "256KiB", "1GiB", "12288", "1.5TB" into bytes. 0 or -EINVAL. */
PC_API int pc_parse_size(const char *s, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
