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
#define PC_MAX_NODES 65535	/* store.max_nodes; node indices stay below PC_PEER_TOOL */
#define PC_MAX_CLASSES 8

enum pc_mode { PC_MODE_SLOTMAP = 0, PC_MODE_P2P = 1 };
enum pc_protocol { PC_PROTO_TCP = 0, PC_PROTO_RDMA = 1, PC_PROTO_RXE = 2 };
enum pc_fallback { PC_FALLBACK_TCP = 0, PC_FALLBACK_NONE = 1 };
/* Who keeps membership (docs/membership.md): the nodes, by heartbeats (embedded);
 * etcd (leases; the node table in etcd); nobody (static: the ring is the list). */
enum pc_discovery { PC_DISCOVERY_EMBEDDED = 0, PC_DISCOVERY_ETCD = 1, PC_DISCOVERY_STATIC = 2 };

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
	double write_gbps;		/* rate of WRITEs' bytes; 0: gbps */
	double latency_us;		/* one-way per-op latency */
	double op_us;			/* port time an op takes beyond its bytes */
	double store_forward;		/* last op's bytes a transfer takes past its ports */
	double segment_forward;		/* and a segment's (up to NET_SEGMENT_BYTES) */
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
	double jitter;			/* the simulator's spread of the node's waits (sigma) */
	double rpc_us;			/* the simulator's hand-off of a peer's RPC to a
					 * worker and back (us) */
	double wake_us;			/* the simulator's wake-up of a node idle longer
					 * than idle_us (us) */
	double idle_us;
	double nap_us;			/* and of one idle longer than nap_idle_us,
					 * not idle_us (us) */
	double nap_idle_us;
	bool has_nvme;
	struct pc_nvme nvme;
	struct pc_mark mark;		/* the node's entry in the file */
	bool vacant;			/* room for a node that joins at run time
					 * (store.max_nodes): no name, never dialed */
};

/* Whether entry n of a topology holds a node (listed, or one that joined: a
 * joiner's entry is filled first, then published by clearing vacant). */
static inline bool pc_node_listed(const struct pc_node *n)
{
	return !__atomic_load_n(&n->vacant, __ATOMIC_ACQUIRE);
}

/* The store keys of the seed (mode, protocol, slot_*, global_segment_size,
 * discovery_addr) plus the ones peercache adds. */
struct pc_store_cfg {
	enum pc_mode mode;
	enum pc_protocol protocol;
	enum pc_fallback fallback;		/* when protocol rdma/rxe finds no device */
	/* Membership (member.c, member_join.c): where a node or client not in the
	 * cluster's list asks to join ("host:port[,host:port...]"), and the room the
	 * node table has for such nodes (0: the nodes listed, nobody joins). */
	char discovery_addr[PC_PATH_MAX];
	uint32_t max_nodes;
	enum pc_discovery discovery;
	char etcd_endpoints[PC_PATH_MAX];	/* "http://host:port[,...]" (discovery: etcd) */
	char etcd_prefix[PC_NAME_MAX];		/* the cluster's keys live under this */
	uint64_t slot_max_page_bytes;		/* largest class when no list is given */
	uint64_t size_classes[PC_MAX_CLASSES];	/* ascending page sizes */
	uint32_t nr_classes;
	uint32_t slot_ways;
	uint64_t slot_num_buckets;		/* per class; 0 = derive from the segment */
	uint64_t global_segment_size;		/* slot bytes per node, split over classes */
	uint32_t vnodes;			/* ring points per node */
	uint32_t timeout_ms;			/* a dead peer fails a call within this */
	uint32_t tcp_poll_us;			/* tcp: poll this long before sleeping */
	char tcp_congestion[16];		/* tcp: TCP_CONGESTION; "" = the system's */
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
	/* RDMA queue pairs of the verbs and rxe fabrics (docs/roce-validate.md), with
	 * defaults for lossless RoCE v2: the local ACK timeout exponent (a try waits
	 * 4.096 us x 2^n), transport retries and RNR retries (7: without end), the
	 * IPv4 traffic class (DSCP << 2 | ECN) and the path MTU (auto: the smaller
	 * active MTU of the two ports). */
	uint32_t verbs_qp_timeout;
	uint32_t verbs_retry_cnt;
	uint32_t verbs_rnr_retry;
	uint32_t verbs_traffic_class;
	int verbs_path_mtu;			/* enum ibv_mtu; 0 = auto */
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
	struct pc_node *nodes;		/* listed first, then joined ones, or vacant */
	uint32_t nr_nodes;		/* entries: store.max_nodes, or the nodes listed */
	struct pc_mark nodes_mark;	/* the nodes: list in the file */
};

/* The entries that hold a node. */
static inline uint32_t topology_nr_listed(const struct pc_topology *t)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->nr_nodes; i++)
		n += pc_node_listed(&t->nodes[i]);
	return n;
}

/* Put a node that joined at run time into vacant entry i: the given name and
 * address, node defaults for the rest (its rails and disk are its own business).
 * 0, or -EINVAL (not vacant, a bad or taken name, no address). */
int topology_fill_node(struct pc_topology *t, uint32_t i, const char *name, const char *address,
		       uint16_t port);

/* ---- fingerprint.c: the settings every peer of a cluster must share */

#define TOPOLOGY_PLACEMENT_TEXT_MAX 2048	/* the text below always fits */

/* Every placement setting (the schema marks them) as "key=value" lines, in schema
 * order, then the node table's size and, when it has no room for nodes to join
 * (a static cluster), a hash of its names: a cluster with room learns its table
 * from membership, which checks names itself. 0, or -ERANGE / -ENOMEM. */
int topology_placement_text(const struct pc_topology *t, char *buf, size_t len);

/* xxh3_64 of that text: equal for peers that place and lay out pages alike. Not a
 * MAC: it detects mistakes, the handshake's MAC detects forgeries. */
uint64_t topology_fingerprint(const struct pc_topology *t);

/* Compare two such texts. false when they are the same; true with one line in out
 * naming the first key that differs: "store.vnodes is 128 here, 64 there". */
bool topology_placement_diff(const char *ours, size_t olen, const char *theirs, size_t tlen,
			     char *out, size_t outlen);

#endif
