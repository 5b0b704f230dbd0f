/*
 * topology.h - what a loaded topology holds: the cluster's nodes (address, rails,
 * host memory, NVMe), the store settings and the model shape, as the core, the
 * backends, the simulator and the tools read them. Public code sees the topology
 * as opaque (pc_topology.h) and reads settings by name.
 *
 * Not for: loading or validating (topology.c, topology_fields.c).
 */
#ifndef PC_CONFIG_TOPOLOGY_H
#define PC_CONFIG_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_topology.h>

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
	char address[PC_NAME_MAX];	/* IPv4/IPv6 literal or host name peers dial */
	char bind_address[PC_NAME_MAX];	/* what the server listens on; "" = address
					 * (0.0.0.0 or another interface behind NAT) */
	uint16_t port;
	struct pc_rail rails[PC_MAX_RAILS];
	uint32_t nr_rails;
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
	uint32_t peer_backoff_ms;		/* skip a sick peer this long, doubling; 0 = never */
	uint32_t peer_backoff_max_ms;		/* ... up to this */
	uint32_t heartbeat_ms;			/* membership heartbeats; 0 = none */
	uint32_t failure_timeout_ms;		/* a member silent this long leaves the ring */
	bool slot_cas_claim;			/* remote writers claim a slot with CAS */
	uint32_t slot_claim_timeout_ms;		/* a claim seen this long is taken over */
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
	/* Peers (docs/security.md). With a secret every connection authenticates first;
	 * "" = $PEERCACHE_SECRET_FILE, or none: peers are not authenticated. */
	char auth_secret_file[PC_PATH_MAX];
	uint32_t max_connections;		/* a node serves at most this many at once */
	uint32_t idle_timeout_s;		/* no complete frame for this long: closed (0 = never) */
	uint64_t max_buffered_bytes;		/* request bytes a node holds for all peers */
	uint32_t dir_entries_per_block;		/* p2p: a shard keeps at most this many entries
						 * per block of each publisher's pool */
	/* pcd's metrics endpoint (pc_metrics_serve) on the node's address: off unless
	 * asked; port 0 takes an ephemeral one (pcd logs which). */
	bool metrics;
	uint32_t metrics_port;
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

/* ---- fingerprint.c: the settings every peer of a cluster must share */

#define TOPOLOGY_PLACEMENT_TEXT_MAX 2048	/* the text below always fits */

/* Every placement setting (the schema marks them) as "key=value" lines, in schema
 * order, then the node list's size and a hash of its names. 0, or -ERANGE / -ENOMEM. */
int topology_placement_text(const struct pc_topology *t, char *buf, size_t len);

/* xxh3_64 of that text: equal for peers that place and lay out pages alike. Not a
 * MAC: it detects mistakes, the handshake's MAC detects forgeries. */
uint64_t topology_fingerprint(const struct pc_topology *t);

/* Compare two such texts. false when they are the same; true with one line in out
 * naming the first key that differs: "store.vnodes is 128 here, 64 there". */
bool topology_placement_diff(const char *ours, size_t olen, const char *theirs, size_t tlen,
			     char *out, size_t outlen);

#endif
