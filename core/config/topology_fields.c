/*
 * topology_fields.c - the topology schema tables, scalar parsing and defaults.
 * topology.c feeds it YAML; pc_topology_set() feeds it flags.
 *
 * Not for: checks across fields (topology_check.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "placement/slot.h"
#include "topology_fields.h"

#define KiB 1024.0
#define MiB (1024.0 * 1024.0)
#define GiB (1024.0 * 1024.0 * 1024.0)
#define TiB (GiB * 1024.0)

static const char *const mode_names[] = { "slotmap", "p2p", NULL };
static const char *const protocol_names[] = { "tcp", "rdma", "rxe", NULL };
static const char *const fallback_names[] = { "tcp", "none", NULL };
static const char *const discovery_names[] = { "embedded", "etcd", "static", NULL };
static const char *const read_policy_names[] = { "auto", "bucket", "predict", "index", NULL };
/* Indexed as rdma-core's enum ibv_mtu (IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5). */
static const char *const path_mtu_names[] = { "auto", "256", "512", "1024", "2048", "4096", NULL };
static const char *const dtype_names[] = { "fp32", "bf16", "fp16", "fp8", "int8", NULL };
static const uint32_t dtype_sizes[] = { 4, 2, 2, 1, 1 };

/* A field: its struct, name, type, range and default (as the YAML would write it;
 * NULL: zero), then its reference: DOC(used by, unit, meaning) and, where the default
 * is derived, DEF("in words"). The defaults live here and nowhere else; the
 * reference is docs/configuration.md (pctopo --schema). */
#define F(s, n, t, lo, hi, d, ...) \
	{ .name = #n, .type = t, .off = offsetof(s, n), .min = lo, .max = hi, .def = d, __VA_ARGS__ }
#define FSTR(s, n, d, ...) \
	{ .name = #n, .type = FT_STR, .off = offsetof(s, n), .cap = sizeof(((s *)0)->n), .def = d, \
	  __VA_ARGS__ }
#define FENUM(s, n, v, d, ...) \
	{ .name = #n, .type = FT_ENUM, .off = offsetof(s, n), .names = v, .def = d, __VA_ARGS__ }
/* The same for a placement field (topology_fields.h): every peer of a cluster must
 * agree on it, and the handshake checks that they do. */
#define FP(s, n, t, lo, hi, d, ...) \
	{ .name = #n, .type = t, .off = offsetof(s, n), .min = lo, .max = hi, .def = d, \
	  .placement = true, __VA_ARGS__ }
#define FENUMP(s, n, v, d, ...) \
	{ .name = #n, .type = FT_ENUM, .off = offsetof(s, n), .names = v, .def = d, \
	  .placement = true, __VA_ARGS__ }
/* A key that is gone: loading it fails with why (what to use instead). */
#define FREMOVED(n, why) { .name = #n, .type = FT_REMOVED, .doc = why, .used_by = "-" }
#define DOC(used, u, text) .used_by = used, .unit = u, .doc = text
#define DEF(text) .def_text = text

static const struct field store_fields[] = {
	FENUMP(struct pc_store_cfg, mode, mode_names, "slotmap",
	       DOC("all", NULL, "How pages are placed. slotmap: a key's owner (ring) and slot "
		   "(bucket hash) are computed, so reads are one-sided with no lookup. p2p: each "
		   "node publishes into its own pool and a sharded directory says where.")),
	FENUM(struct pc_store_cfg, protocol, protocol_names, "tcp",
	      DOC("all", NULL, "The fabric. tcp: sockets, any machine. rdma: ibverbs RC queue "
		  "pairs on RoCE or InfiniBand NICs. rxe: Soft-RoCE, creates an rxe device on the "
		  "rail's netdev, then runs rdma.")),
	FENUM(struct pc_store_cfg, fallback, fallback_names, "tcp",
	      DOC("rdma, rxe", NULL, "When no RDMA device opens: tcp carries on over tcp with "
		  "one warning line; none makes it an error (exit 1).")),
	FSTR(struct pc_store_cfg, discovery_addr, NULL,
	     DOC("all", "HOST:PORT[,...]", "Nodes a newcomer asks for the node table (and a "
		 "node for its entry) when store.max_nodes leaves room; its own address is "
		 "skipped. pcctl takes any node as --discovery (docs/membership.md)."),
	     DEF("empty")),
	FP(struct pc_store_cfg, max_nodes, FT_U32, 0, PC_MAX_NODES, NULL,
	   DOC("all", "nodes", "Entries of the node table: the nodes listed, then room for "
	       "nodes that join a running cluster through discovery_addr or etcd. 0: the "
	       "nodes listed, and nobody joins (the node names are then in the fingerprint)."),
	   DEF("0 (the nodes listed)")),
	FENUM(struct pc_store_cfg, discovery, discovery_names, "embedded",
	      DOC("all", NULL, "Who keeps membership. embedded: the nodes, by heartbeats and "
		  "JOIN on their own port. etcd: leases and the node table in etcd "
		  "(etcd_endpoints). static: nobody, the ring is the list.")),
	FSTR(struct pc_store_cfg, etcd_endpoints, "http://127.0.0.1:2379",
	     DOC("discovery: etcd", "URL[,...]", "etcd's client URLs, tried in order (its v3 "
		 "JSON gateway).")),
	FSTR(struct pc_store_cfg, etcd_prefix, "/peercache/",
	     DOC("discovery: etcd", NULL, "The cluster's keys live under this prefix: one "
		 "cluster per prefix.")),
	FP(struct pc_store_cfg, slot_max_page_bytes, FT_SIZE, 64, GiB, NULL,
	   DOC("slotmap, p2p", "bytes", "The largest page kept (the seed's key): one size class "
	       "of this size. Give this or slot_size_classes; a larger page is skipped and "
	       "counted (skipped_oversize)."),
	   DEF("the largest size class; 256KiB when neither is given")),
	{ .name = "slot_size_classes", .type = FT_SIZE_LIST,
	  .off = offsetof(struct pc_store_cfg, size_classes), .cap = PC_MAX_CLASSES,
	  .count_off = offsetof(struct pc_store_cfg, nr_classes), .min = 64, .max = GiB,
	  .placement = true,
	  DOC("slotmap, p2p", "bytes", "Slot sizes, ascending: a page goes to the smallest class "
	      "it fits. Each class gets an equal share of global_segment_size."),
	  DEF("[slot_max_page_bytes]") },
	FP(struct pc_store_cfg, slot_ways, FT_U32, 1, SLOT_MAX_WAYS, "8",
	   DOC("slotmap", "ways", "Ways per bucket. A key whose bucket is full evicts that "
	       "bucket's oldest page while other buckets have room, so more ways keep more "
	       "pages at a given occupancy (pctopo counts the loss for a topology; "
	       "docs/deployment.md, Sizing), at the cost of a larger bucket read "
	       "(slot_read_policy: bucket) and, for a set of a remote key this node has not "
	       "written or read, one header read a way.")),
	FP(struct pc_store_cfg, slot_num_buckets, FT_U64, 0, 1ULL << 40, NULL,
	   DOC("slotmap", "buckets", "Buckets per size class per node; 0 derives them from "
	       "global_segment_size.")),
	FP(struct pc_store_cfg, global_segment_size, FT_SIZE, 4 * KiB, TOPOLOGY_SEGMENT_MAX, "1GiB",
	   DOC("slotmap, p2p, sim", "bytes", "Memory per node for pages: the slot regions "
	       "(slotmap) or the published pool (p2p), split evenly over the size classes. The "
	       "main knob of capacity planning.")),
	FP(struct pc_store_cfg, vnodes, FT_U32, 1, 65536, "128",
	   DOC("all", "points", "Ring points per node: load spread is about 1/sqrt(vnodes).")),
	F(struct pc_store_cfg, timeout_ms, FT_U32, 1, 3600000, "2000",
	  DOC("all", "ms", "How long one batch phase waits for a peer before its keys fail.")),
	F(struct pc_store_cfg, tcp_poll_us, FT_U32, 0, 100000, "50",
	  DOC("tcp", "us", "Poll this long for an answer before sleeping; 0 sleeps at once "
	      "(less CPU, more latency).")),
	FSTR(struct pc_store_cfg, tcp_congestion, NULL,
	     DOC("tcp", NULL, "The congestion control the backend's connections use (cubic, "
		 "reno, bbr, dctcp: one of net.ipv4.tcp_available_congestion_control); empty "
		 "keeps the system's. BBR paces what a connection sends after it idled, so a "
		 "page transfer that follows small requests waits on the pacing; cubic does "
		 "not pace (docs/deployment.md)."),
	     DEF("the system's (net.ipv4.tcp_congestion_control)")),
	F(struct pc_store_cfg, peer_backoff_ms, FT_U32, 0, 3600000, "100",
	  DOC("all", "ms", "A peer that timed out or refused is skipped this long (its keys "
	      "fail at once), doubling while it keeps failing; 0 turns the backoff off.")),
	F(struct pc_store_cfg, peer_backoff_max_ms, FT_U32, 1, 3600000, "10000",
	  DOC("all", "ms", "The longest backoff; the peer's first answer resets it.")),
	F(struct pc_store_cfg, heartbeat_ms, FT_U32, 0, 600000, "200",
	  DOC("all", "ms", "Every node heartbeats every other this often and clients ask a node "
	      "for its view; 0 turns membership off (a fixed ring).")),
	F(struct pc_store_cfg, failure_timeout_ms, FT_U32, 1, 3600000, "2000",
	  DOC("all", "ms", "A member not heard for this long leaves the ring until heard "
	      "again; at least three heartbeats (3 x heartbeat_ms).")),
	F(struct pc_store_cfg, slot_cas_claim, FT_BOOL, 0, 1, NULL,
	  DOC("slotmap", NULL, "Claim a way with a remote compare-and-swap before writing it, so "
	      "two writers of one bucket never pick the same way.")),
	F(struct pc_store_cfg, slot_claim_timeout_ms, FT_U32, 1, 3600000, "4000",
	  DOC("slotmap", "ms", "A claim whose writer died is taken over once seen unchanged "
	      "this long (claims_taken_over).")),
	FENUM(struct pc_store_cfg, slot_read_policy, read_policy_names, "auto",
	      DOC("slotmap", NULL, "How a get reads. bucket: the whole bucket, one round trip. "
		  "index: the 64-byte tag index, then the slot (two). predict: index, predicted "
		  "header and payload at once. auto: bucket for tiny buckets, index for large "
		  "pages and batches, predict for one or two pages, and for every key whose way "
		  "this node learned (it wrote or read the key before: a way hint) that way's "
		  "header and payload alone (the index after, if the key left it).")),
	F(struct pc_store_cfg, slot_spill_ways, FT_U32, 0, SLOT_MAX_WAYS - 1, NULL,
	  DOC("slotmap (spill)", "ways", "Keep this many ways of every bucket free by moving the "
	      "oldest pages to the node's nvme; a get that misses asks the owner to bring them "
	      "back. 0: no spill. Needs nodes.nvme.")),
	F(struct pc_store_cfg, tier_host_blocks, FT_U32, 0, 1u << 30, NULL,
	  DOC("tier", "blocks", "Serve a tiered pool (the KVBM G2PB peer protocol: offer, query, "
	      "stage_put, fetch) of this many pinned host blocks; 0: none. pcd --host-blocks.")),
	F(struct pc_store_cfg, tier_disk_blocks, FT_U32, 0, 1u << 30, NULL,
	  DOC("tier", "blocks", "Demote the tiered pool's LRU tail to this many disk blocks in "
	      "nodes.nvme.path (G3 spill); 0: evicted blocks are dropped. pcd --disk-blocks.")),
	F(struct pc_store_cfg, tier_block_bytes, FT_SIZE, 0, GiB, NULL,
	  DOC("tier", "bytes", "The tiered pool's block size."),
	  DEF("the model's page, else the largest size class")),
	F(struct pc_store_cfg, tier_free_percent, FT_U32, 0, 50, "5",
	  DOC("tier", "percent", "A background task keeps this share of host blocks free, so "
	      "staging rarely waits on the disk.")),
	F(struct pc_store_cfg, tier_inclusive, FT_BOOL, 0, 1, NULL,
	  DOC("tier", NULL, "Keep promoted blocks on disk too, so demoting them again costs no "
	      "write.")),
	F(struct pc_store_cfg, tier_lease_ms, FT_U32, 1, 3600000, "30000",
	  DOC("tier", "ms", "How long a fetch's lease holds a block in host memory.")),
	/* Peers and what they may make a node hold (docs/security.md). */
	FSTR(struct pc_store_cfg, auth_secret_file, NULL,
	     DOC("tcp, rdma", "path", "A file holding the cluster secret (16 bytes or more): "
		 "every connection starts with a mutual HMAC-SHA256 handshake. Empty: "
		 "$PEERCACHE_SECRET_FILE, else no authentication (docs/security.md)."),
	     DEF("empty")),
	F(struct pc_store_cfg, max_connections, FT_U32, 4, 1u << 20, "1024",
	  DOC("pcd", "connections", "Connections a node accepts; at the cap a newcomer displaces "
	      "the oldest one still in its handshake.")),
	F(struct pc_store_cfg, idle_timeout_s, FT_U32, 0, 86400, "120",
	  DOC("pcd", "s", "A connection that sends nothing for this long is closed; 0: never.")),
	F(struct pc_store_cfg, max_buffered_bytes, FT_SIZE, 16 * MiB, 64 * GiB, "256MiB",
	  DOC("pcd", "bytes", "Request bytes a node buffers over all connections; past it the "
	      "connection that would exceed it is closed.")),
	F(struct pc_store_cfg, dir_entries_per_block, FT_U32, 1, 64, "2",
	  DOC("p2p", "entries", "Directory entries a shard keeps per block of a publisher's "
	      "pool, so a publisher cannot fill another node's memory.")),
	F(struct pc_store_cfg, metrics, FT_BOOL, 0, 1, NULL,
	  DOC("pcd", NULL, "Serve /metrics, /healthz and /readyz on the node's address and "
	      "metrics_port (pcd --metrics-addr overrides).")),
	F(struct pc_store_cfg, metrics_port, FT_U32, 0, 65535, "0",
	  DOC("pcd", "port", "The metrics endpoint's port; 0 picks a free one (logged).")),
	/* RDMA queue pairs (verbs, rxe; docs/roce-validate.md). Defaults suit lossless
	 * RoCE v2: 14 is 67 ms per try, so 7 retries give up after ~0.5 s, inside
	 * timeout_ms; rnr_retry 7 waits for a receiver without end (peercache posts no
	 * receives, so RNR never arises from its own traffic); traffic class 106 is
	 * DSCP 26 (the class RoCE deployments commonly map to their PFC priority) with
	 * ECN capable transport, for DCQCN; path MTU auto takes the ports' active MTU. */
	F(struct pc_store_cfg, verbs_qp_timeout, FT_U32, 1, 31, "14",
	  DOC("rdma, rxe", "4.096 us x 2^N", "Local ACK timeout of each try: 14 is 67 ms.")),
	F(struct pc_store_cfg, verbs_retry_cnt, FT_U32, 0, 7, "7",
	  DOC("rdma, rxe", "tries", "Retransmissions before a QP fails with retry-exceeded.")),
	F(struct pc_store_cfg, verbs_rnr_retry, FT_U32, 0, 7, "7",
	  DOC("rdma, rxe", "tries", "Receiver-not-ready retries; 7 waits without end.")),
	F(struct pc_store_cfg, verbs_traffic_class, FT_U32, 0, 255, "106",
	  DOC("rdma, rxe", NULL, "IP traffic class of RoCE v2 packets: DSCP << 2 | ECN; 106 is "
	      "DSCP 26 with ECN capable transport.")),
	FENUM(struct pc_store_cfg, verbs_path_mtu, path_mtu_names, "auto",
	      DOC("rdma, rxe", "bytes", "Path MTU of the QPs; auto: the ports' active MTU.")),
};

static const struct field model_fields[] = {
	F(struct pc_model, layers, FT_U32, 1, 4096, NULL,
	  DOC("all", "layers", "The model's layers. With kv_heads and head_dim (all three "
	      "required when model: is given) it fixes the page size: 2 x layers x kv_heads x "
	      "head_dim x dtype bytes x tokens_per_page."),
	  DEF("required")),
	F(struct pc_model, kv_heads, FT_U32, 1, 4096, NULL,
	  DOC("all", "heads", "KV heads (per TP rank, as pages are stored)."), DEF("required")),
	F(struct pc_model, head_dim, FT_U32, 1, 65536, NULL,
	  DOC("all", "elements", "Elements per head."), DEF("required")),
	F(struct pc_model, tokens_per_page, FT_U32, 1, 1u << 20, "1",
	  DOC("all", "tokens", "Tokens in one KV page (the serving engine's page size).")),
	{ .name = "dtype", .type = FT_ENUM, .off = offsetof(struct pc_model, dtype),
	  .names = dtype_names, .cap = sizeof(((struct pc_model *)0)->dtype), .def = "bf16",
	  DOC("all", NULL, "The KV element type.") },
};

/* rails and nvme are nested; topology.c handles them through their own sections. */
static const struct field node_fields[] = {
	FSTR(struct pc_node, name, NULL,
	     DOC("all", NULL, "The node's name, unique: pcd --node takes it."), DEF("required")),
	FSTR(struct pc_node, address, NULL,
	     DOC("all", "host", "Where peers reach the node: a numeric IPv4/IPv6 address or a "
		 "host name that resolves (checked at load)."),
	     DEF("required")),
	FSTR(struct pc_node, bind_address, NULL,
	     DOC("pcd", "host", "The address the node listens on, when not address (0.0.0.0: "
		 "every interface, e.g. behind NAT or in a container)."),
	     DEF("address")),
	F(struct pc_node, port, FT_PORT, 1, 65535, "31998",
	  DOC("all", "port", "The node's tcp port: data and RPCs over tcp, connection setup over "
	      "rdma.")),
	FREMOVED(host_pool_bytes,
		 "removed: it set nothing; slot memory per node is store.global_segment_size, a "
		 "tiered pool's host memory store.tier_host_blocks x store.tier_block_bytes"),
	F(struct pc_node, memcpy_gbps, FT_DOUBLE, 0.001, 10000, "10",
	  DOC("sim", "GB/s", "The simulator's memory copy rate for a node's own pages.")),
	F(struct pc_node, jitter, FT_DOUBLE, 0, 4, "0",
	  DOC("sim", "sigma", "How much the node's waits vary in the simulator, as a host's "
	      "wake-ups and interrupts stretch real ones: each fabric post, RPC and local copy "
	      "its store waits on takes its modelled time times e^(jitter x max(0, Z)), Z a "
	      "standard normal draw (so half take just their time, one in ten e^(1.28 x "
	      "jitter) times it, one in a hundred e^(2.33 x jitter)). 0: every wait as "
	      "modelled. pccalibrate fits it to the spread of a cluster's batches.")),
	F(struct pc_node, rpc_us, FT_DOUBLE, 0, 1000000, "0",
	  DOC("sim", "us", "The simulator's time for the node to hand a peer's RPC that may "
	      "block (a promotion from disk, the tiered pool's, membership changes: all but "
	      "the quick ones, layouts, heartbeats and p2p's directory) to a worker thread "
	      "and to take its answer back, beyond the handler's own waits: a tcp server "
	      "wakes a worker and is woken by it. pccalibrate fits it.")),
	F(struct pc_node, wake_us, FT_DOUBLE, 0, 1000000, "0",
	  DOC("sim", "us", "The simulator's time for a node that has been idle longer than "
	      "idle_us (none of its threads ran, none of its transfers moved) to start on "
	      "what wakes it: a peer's request, or the answer it waits for. A virtual CPU "
	      "that its hypervisor took off the core after idling, or a core in a deep sleep "
	      "state, takes that long to run again (the whole of it: nap_us does not add); "
	      "about 0 for a node that polls. pccalibrate measures it with gets after idle "
	      "gaps.")),
	F(struct pc_node, idle_us, FT_DOUBLE, 0, 1000000, "200",
	  DOC("sim", "us", "How long a node must have been idle for wake_us to apply; the "
	      "default is a KVM host's halt-polling window (halt_poll_ns). pccalibrate "
	      "measures it with wake_us.")),
	F(struct pc_node, nap_us, FT_DOUBLE, 0, 1000000, "0",
	  DOC("sim", "us", "The simulator's time for a node idle longer than nap_idle_us to "
	      "start on a peer's request: the first, shorter tier of a host's wake-up (its "
	      "threads stopped polling and sleep while its CPU still runs, or the edge of the "
	      "hypervisor's halt-polling window); past idle_us, wake_us instead when it is "
	      "set. Not for an answer the node waits for: a caller polls through a round "
	      "trip. pccalibrate measures it with wake_us.")),
	F(struct pc_node, nap_idle_us, FT_DOUBLE, 0, 1000000, "50",
	  DOC("sim", "us", "How long a node must have been idle for nap_us to apply; the "
	      "default is store.tcp_poll_us's, how long a tcp node polls before its thread "
	      "sleeps. pccalibrate measures it with nap_us.")),
	{ .name = "rails", DOC("all", NULL, "The node's NICs, a list of rails (below); one "
			       "default rail when absent.") },
	{ .name = "nvme", DOC("spill, tier, sim", NULL, "The node's disk (below); needed by "
			      "store.slot_spill_ways.") },
};

static const struct field rail_fields[] = {
	FSTR(struct pc_rail, device, NULL,
	     DOC("rdma, sim", NULL, "The RDMA device (mlx5_0, rxe0); empty: $PC_VERBS_DEVICE, "
		 "else the device whose RoCE v2 GIDs hold the node's address, else the first "
		 "device with an active port."),
	     DEF("empty")),
	FSTR(struct pc_rail, netdev, NULL,
	     DOC("rxe", NULL, "The network interface an rxe device is created on; empty: the "
		 "one carrying the node's address."),
	     DEF("empty")),
	F(struct pc_rail, gbps, FT_DOUBLE, 0.001, 100000, "100",
	  DOC("sim", "Gb/s", "The rail's line rate in the simulator.")),
	F(struct pc_rail, write_gbps, FT_DOUBLE, 0, 100000, "0",
	  DOC("sim", "Gb/s", "The rail's rate for the bytes a WRITE carries (a set's pages) in the "
	      "simulator, where it differs from the rate of a READ's (gbps): on tcp a page "
	      "written lands in a peer's slot, a page read in a buffer the reader keeps "
	      "warm (pccalibrate measures both); 0: gbps.")),
	F(struct pc_rail, latency_us, FT_DOUBLE, 0, 1e6, "2",
	  DOC("sim", "us", "One-way latency of the rail in the simulator.")),
	F(struct pc_rail, op_us, FT_DOUBLE, 0, 1e6, "0",
	  DOC("sim", "us", "Time each operation holds the rail's ports beyond its bytes in the "
	      "simulator: a TCP server's per-frame work (pccalibrate fits it); about 0 for an "
	      "RDMA NIC.")),
	F(struct pc_rail, store_forward, FT_DOUBLE, 0, 64, "0",
	  DOC("sim", "ops", "How long a transfer takes past its ports in the simulator, in its "
	      "last op's bytes at the rail's rate: work on a page that one end finishes "
	      "before the other starts (on tcp a page's checksum, taken by the writer before "
	      "it goes and by the reader once it is in), which a batch overlaps with its "
	      "other pages (pccalibrate fits it); 0 for an RDMA NIC.")),
	F(struct pc_rail, segment_forward, FT_DOUBLE, 0, 64, "0",
	  DOC("sim", "segments", "How long a transfer takes past its ports in the simulator, in "
	      "one segment's bytes (the transfer's, up to 64 KiB: TCP's largest segment with "
	      "segmentation offload and on loopback) at the rail's rate: the receiver copies "
	      "a segment out once all of it is in, so the sender's copy and the receiver's "
	      "overlap across segments but not within one (pccalibrate fits it, about 1 on "
	      "tcp); 0 (cut-through) for an RDMA NIC, which forwards a packet at a time.")),
	F(struct pc_rail, max_outstanding, FT_U32, 1, 1u << 20, "128",
	  DOC("sim", "ops", "Operations in flight per rail in the simulator.")),
};

static const struct field nvme_fields[] = {
	FSTR(struct pc_nvme, path, "/var/tmp",
	     DOC("spill, tier, sim", "path", "A writable directory for the disk pool's unlinked file "
		 "(O_DIRECT where the filesystem allows it). The simulator gives nodes at one "
		 "address with one path one disk, whose I/O takes turns (with the first such "
		 "node's nvme keys).")),
	F(struct pc_nvme, capacity, FT_SIZE, 4 * KiB, 1024 * TiB, "1TiB",
	  DOC("spill, sim", "bytes", "Disk bytes for spilled pages, split over the size "
	      "classes.")),
	F(struct pc_nvme, read_mbps, FT_DOUBLE, 0.001, 1e6, "6000",
	  DOC("sim", "MB/s", "The drive's read bandwidth in the simulator.")),
	F(struct pc_nvme, write_mbps, FT_DOUBLE, 0.001, 1e6, "3000",
	  DOC("sim", "MB/s", "The drive's write bandwidth in the simulator.")),
	F(struct pc_nvme, iops, FT_U32, 1, 1u << 30, "800000",
	  DOC("sim", "IOPS", "The drive's operations per second in the simulator.")),
	F(struct pc_nvme, latency_us, FT_DOUBLE, 0, 1e7, "80",
	  DOC("sim", "us", "The drive's access latency in the simulator.")),
	F(struct pc_nvme, queue_depth, FT_U32, 1, 65536, "128",
	  DOC("sim", "commands", "Commands the drive serves at once in the simulator.")),
};

#define SECTION(n, f) { .name = n, .fields = f, .nr_fields = sizeof(f) / sizeof(f[0]) }
const struct section store_section = SECTION("store", store_fields);
const struct section model_section = SECTION("model", model_fields);
const struct section node_section = SECTION("node", node_fields);
const struct section rail_section = SECTION("rail", rail_fields);
const struct section nvme_section = SECTION("nvme", nvme_fields);

const struct field *field_find(const struct section *s, const char *name)
{
	for (size_t i = 0; i < s->nr_fields; i++)
		if (!strcmp(s->fields[i].name, name))
			return &s->fields[i];
	return NULL;
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (lb >= 63 || la >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(size_t));
	}
	return prev[lb];
}

/* The known keys listed in an unknown key's message, at most: store has more than
 * fit in PC_ERR_MAX, and the caller puts the file, line and column or the --set
 * assignment in front. */
#define KNOWN_ROOM 240

void field_unknown(const struct section *s, const char *where, const char *key, char *buf,
		   size_t len)
{
	const char *best = NULL;
	size_t bestd = 4, n, list;

	for (size_t i = 0; i < s->nr_fields; i++) {
		size_t d = edit_distance(key, s->fields[i].name);

		if (d < bestd) {
			bestd = d;
			best = s->fields[i].name;
		}
	}
	n = (size_t)snprintf(buf, len, "unknown key '%s' in %s; ", key, where);
	if (best && n < len)
		n += (size_t)snprintf(buf + n, len - n, "did you mean '%s'? ", best);
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, "(known:");
	list = n;
	for (size_t i = 0; i < s->nr_fields && n < len; i++) {
		if (s->fields[i].type == FT_REMOVED)
			continue;
		if (n - list + 1 + strlen(s->fields[i].name) > KNOWN_ROOM) {
			snprintf(buf + n, len - n, " ...; docs/configuration.md lists them all)");
			return;
		}
		n += (size_t)snprintf(buf + n, len - n, " %s", s->fields[i].name);
	}
	if (n < len)
		snprintf(buf + n, len - n, ")");
}

int pc_parse_size(const char *s, uint64_t *out)
{
	static const struct { const char *sfx; double mult; } units[] = {
		{ "", 1 }, { "b", 1 },
		{ "k", 1024.0 }, { "kib", 1024.0 }, { "kb", 1e3 },
		{ "m", 1048576.0 }, { "mib", 1048576.0 }, { "mb", 1e6 },
		{ "g", GiB }, { "gib", GiB }, { "gb", 1e9 },
		{ "t", TiB }, { "tib", TiB }, { "tb", 1e12 },
	};
	char *end;
	double v;

	if (!s)
		return -EINVAL;
	/* digits and a decimal point before the unit: strtod alone would also take
	 * leading spaces, a sign, an exponent (1e6), hex (0x1p20), inf and nan */
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || end != s + strspn(s, "0123456789."))
		return -EINVAL;
	while (*end == ' ')
		end++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcasecmp(end, units[i].sfx)) {
			double b = v * units[i].mult;

			if (b > 18e18 || b != floor(b))
				return -EINVAL;
			*out = (uint64_t)b;
			return 0;
		}
	}
	return -EINVAL;
}

/* Does a size end in a decimal suffix (KB, MB, GB, TB)? Those are accepted, as drives
 * are sold in them, with a warning: a cache size almost always means binary. */
bool size_is_decimal(const char *s)
{
	size_t n = strlen(s);

	return n >= 2 && (s[n - 1] == 'b' || s[n - 1] == 'B') && strchr("kKmMgGtT", s[n - 2]) &&
	       n >= 3 && ((s[n - 3] >= '0' && s[n - 3] <= '9') || s[n - 3] == ' ' || s[n - 3] == '.');
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", NULL };
	static const char *const no[] = { "false", "no", "off", NULL };

	for (int i = 0; yes[i]; i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static void range_text(const struct field *f, char *buf, size_t len)
{
	switch (f->type) {
	case FT_SIZE:
	case FT_SIZE_LIST:
		snprintf(buf, len, "a size from %.0f to %.0f bytes (suffixes KiB MiB GiB TiB, or K M G T, "
			 "are binary; KB MB GB TB decimal)", f->min, f->max);
		break;
	case FT_DOUBLE:
		snprintf(buf, len, "a number from %g to %g", f->min, f->max);
		break;
	default:
		snprintf(buf, len, "an integer from %.0f to %.0f", f->min, f->max);
	}
}

static int parse_number(const struct field *f, const char *text, bool quoted, double *v,
			uint64_t *u, char *why, size_t whylen)
{
	char range[160];
	int ret;

	*u = 0;
	*v = 0;
	range_text(f, range, sizeof(range));
	if (quoted) {
		snprintf(why, whylen, "expected %s, got the string \"%s\" (drop the quotes)", range,
			 text);
		return -EINVAL;
	}
	if (f->type == FT_DOUBLE) {
		char *end;

		errno = 0;
		*v = strtod(text, &end);
		ret = (errno || end == text || *end || !isfinite(*v)) ? -EINVAL : 0;
	} else {
		ret = f->type == FT_SIZE || f->type == FT_SIZE_LIST ? pc_parse_size(text, u) :
								       parse_u64(text, u);
		*v = (double)*u;
	}
	if (ret || *v < f->min || *v > f->max) {
		snprintf(why, whylen, "expected %s, got '%s'", range, text);
		return -EINVAL;
	}
	if (f->type != FT_DOUBLE && size_is_decimal(text))
		pc_warn("%s: '%s' is decimal, %llu bytes; write %.*siB for the binary size",
			f->name, text, (unsigned long long)*u, (int)strlen(text) - 1, text);
	return 0;
}

int field_parse_list_item(const struct field *f, void *base, size_t i, const char *text,
			  bool quoted, char *why, size_t whylen)
{
	uint64_t *list = (uint64_t *)((char *)base + f->off);
	double v;
	uint64_t u;

	if (i >= f->cap) {
		snprintf(why, whylen, "at most %zu entries allowed", f->cap);
		return -EINVAL;
	}
	if (parse_number(f, text, quoted, &v, &u, why, whylen))
		return -EINVAL;
	list[i] = u;
	return 0;
}

int field_parse(const struct field *f, void *base, const char *text, bool quoted, char *why,
		size_t whylen)
{
	void *p = (char *)base + f->off;
	double v;
	uint64_t u;

	switch (f->type) {
	case FT_REMOVED:
		snprintf(why, whylen, "%s", f->doc);
		return -EINVAL;
	case FT_STR:
		if (strlen(text) >= f->cap) {
			snprintf(why, whylen, "expected at most %zu characters, got %zu", f->cap - 1,
				 strlen(text));
			return -EINVAL;
		}
		if (!text_printable(text)) {
			snprintf(why, whylen, TEXT_PRINTABLE_WHY);
			return -EINVAL;
		}
		strcpy(p, text);
		return 0;
	case FT_BOOL:
		if (parse_bool(text, p)) {
			snprintf(why, whylen, "expected true or false, got '%s'", text);
			return -EINVAL;
		}
		return 0;
	case FT_ENUM:
		for (int i = 0; f->names[i]; i++) {
			if (!strcmp(text, f->names[i])) {
				if (f->cap)	/* stored by name */
					strcpy(p, text);
				else
					*(int *)p = i;
				return 0;
			}
		}
		{
			size_t n = (size_t)snprintf(why, whylen, "expected one of");

			for (int i = 0; f->names[i] && n < whylen; i++)
				n += (size_t)snprintf(why + n, whylen - n, "%s %s",
						      i ? "," : "", f->names[i]);
			if (n < whylen)
				snprintf(why + n, whylen - n, "; got '%s'", text);
		}
		return -EINVAL;
	case FT_SIZE_LIST: {
		/* From a flag: comma-separated, optionally in brackets. */
		char buf[512], *save, *tok;
		uint32_t n = 0;

		snprintf(buf, sizeof(buf), "%s", text + (text[0] == '['));
		if (strchr(buf, ']'))
			*strchr(buf, ']') = 0;
		for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
			if (field_parse_list_item(f, base, n++, tok, false, why, whylen))
				return -EINVAL;
		*(uint32_t *)((char *)base + f->count_off) = n;
		return 0;
	}
	default:
		break;
	}
	if (parse_number(f, text, quoted, &v, &u, why, whylen))
		return -EINVAL;
	switch (f->type) {
	case FT_U32:
		*(uint32_t *)p = (uint32_t)u;
		break;
	case FT_PORT:
		*(uint16_t *)p = (uint16_t)u;
		break;
	case FT_U64:
	case FT_SIZE:
		*(uint64_t *)p = u;
		break;
	case FT_DOUBLE:
		*(double *)p = v;
		break;
	default:
		break;
	}
	return 0;
}

bool text_printable(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		uint32_t c = *u, min;
		int more;

		if (c < 0x80) {
			if (c < 0x20 || c == 0x7f)
				return false;
			u++;
			continue;
		}
		/* the sequence's length and the least code point it may encode */
		if (c >= 0xc2 && c <= 0xdf)
			more = 1, c &= 0x1f, min = 0x80;
		else if (c >= 0xe0 && c <= 0xef)
			more = 2, c &= 0x0f, min = 0x800;
		else if (c >= 0xf0 && c <= 0xf4)
			more = 3, c &= 0x07, min = 0x10000;
		else
			return false;
		for (u++; more--; u++) {
			if ((*u & 0xc0) != 0x80)
				return false;
			c = c << 6 | (*u & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) ||
		    (c >= 0x80 && c < 0xa0))	/* C1 controls */
			return false;
	}
	return true;
}

void field_print_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

void field_print(const struct field *f, const void *base, FILE *out)
{
	const void *p = (const char *)base + f->off;

	switch (f->type) {
	case FT_NESTED:
	case FT_REMOVED:
		break;
	case FT_STR:
		field_print_string(out, p);
		break;
	case FT_BOOL:
		fputs(*(const bool *)p ? "true" : "false", out);
		break;
	case FT_ENUM:
		fputs(f->cap ? (const char *)p : f->names[*(const int *)p], out);
		break;
	case FT_U32:
		fprintf(out, "%u", *(const uint32_t *)p);
		break;
	case FT_PORT:
		fprintf(out, "%u", *(const uint16_t *)p);
		break;
	case FT_U64:
	case FT_SIZE:
		fprintf(out, "%llu", (unsigned long long)*(const uint64_t *)p);
		break;
	case FT_DOUBLE:
		fprintf(out, "%.17g", *(const double *)p);
		break;
	case FT_SIZE_LIST: {
		const uint64_t *l = p;
		uint32_t n = *(const uint32_t *)((const char *)base + f->count_off);

		fputc('[', out);
		for (uint32_t i = 0; i < n; i++)
			fprintf(out, "%s%llu", i ? ", " : "", (unsigned long long)l[i]);
		fputc(']', out);
		break;
	}
	}
}

/* Zero base, then every field's default from the table. */
static void section_defaults(const struct section *sec, void *base, size_t size)
{
	char why[128];

	memset(base, 0, size);
	for (size_t i = 0; i < sec->nr_fields; i++)
		if (sec->fields[i].def &&
		    field_parse(&sec->fields[i], base, sec->fields[i].def, false, why, sizeof(why)))
			abort();	/* a default the table's own range refuses: a build bug */
}

void rail_set_defaults(struct pc_rail *r)
{
	section_defaults(&rail_section, r, sizeof(*r));
}

void nvme_set_defaults(struct pc_nvme *v)
{
	section_defaults(&nvme_section, v, sizeof(*v));
}

void node_set_defaults(struct pc_node *n)
{
	section_defaults(&node_section, n, sizeof(*n));
	n->nr_rails = 1;
	rail_set_defaults(&n->rails[0]);
	nvme_set_defaults(&n->nvme);
}

void topology_set_defaults(struct pc_topology *t)
{
	section_defaults(&store_section, &t->store, sizeof(t->store));
	section_defaults(&model_section, &t->model, sizeof(t->model));
}

uint32_t model_dtype_bytes(const char *dtype)
{
	for (int i = 0; dtype_names[i]; i++)
		if (!strcmp(dtype, dtype_names[i]))
			return dtype_sizes[i];
	return 0;
}
