/*
 * proto.h - the RPCs peers send each other, and their wire format. Opcodes are
 * stable numbers; bodies are little-endian structs (peercache runs on little-endian
 * hosts only). Every decoder checks sizes and ranges before it trusts a field.
 *
 * Not for: transport framing (each fabric backend has its own).
 */
#ifndef PC_PROTO_H
#define PC_PROTO_H

#include <stdint.h>

/* The version of these bodies. A node of another version would misread them, so it
 * is in the placement settings every handshake compares (fingerprint.c): raise it
 * with any change of a body's layout. 2: a TOUCH note carries the publisher's
 * incarnation, DIR_UPDATE answers a status per put. */
#define PROTO_WIRE_VERSION 2

enum pc_rpc_opcode {
	PC_RPC_LAYOUT = 1,		/* () -> struct proto_layout + classes */
	/* The tiered pool (tier.c); keys are 64-bit block hashes. */
	PC_RPC_TIER_OFFER = 2,		/* proto_tier_keys -> u8 wanted[n] (1: not held) */
	PC_RPC_TIER_QUERY = 3,		/* proto_tier_keys -> u8 where[n] (enum pc_where) */
	PC_RPC_TIER_PUT = 4,		/* proto_tier_xfer + blk[n] -> i32 status[n]; the
					 * peer pulls each block from the caller's region */
	PC_RPC_TIER_FETCH = 5,		/* proto_tier_keys -> proto_tier_xfer + blk[n]: a
					 * lease and where each block sits for a READ */
	PC_RPC_TIER_RELEASE = 6,	/* u64 lease -> () */
	PC_RPC_TIER_STATS = 7,		/* () -> struct pc_tier_metrics */
	/* Spill under slotmap (slotmap_spill.c). */
	PC_RPC_SLOT_PROMOTE = 8,	/* proto_promote + key[n] -> answer[n] + payloads */
	/* p2p mode's directory (p2p.c). */
	PC_RPC_DIR_UPDATE = 9,		/* proto_dir_update + put[nput] + del[ndel] ->
					 * i32 status[nput] (0, or -ENOSPC: refused) */
	PC_RPC_DIR_GET = 10,		/* proto_dir_get + key[n] -> proto_dir_ans[n] */
	PC_RPC_MEMBER = 11,		/* proto_member -> () */
	PC_RPC_P2P_TOUCH = 12,		/* proto_touch_hdr + proto_touch[n] -> () */
	PC_RPC_HEARTBEAT = 13,		/* proto_heartbeat -> proto_view [+ proto_view_node[nr]] */
	PC_RPC_JOIN = 14,		/* proto_join + text -> proto_join_ans + text + proto_view
					 * + proto_view_node[nr] */
	PROTO_NR_RPCS			/* one past the last opcode */
};

/* The RPCs whose handlers never block (no disk, no pulls from the caller, no waits):
 * a backend may answer them on its event thread instead of a worker. */
#define PROTO_QUICK_RPCS ((1ULL << PC_RPC_LAYOUT) | (1ULL << PC_RPC_DIR_UPDATE) | \
			  (1ULL << PC_RPC_DIR_GET) | (1ULL << PC_RPC_P2P_TOUCH) | \
			  (1ULL << PC_RPC_HEARTBEAT))

#define PROTO_DIR_MAX 65536		/* entries per directory request */

/* Where a p2p page is published. gen orders one node's publications (within one
 * incarnation): a shard keeps the newest, and a removal names exactly one. */
struct proto_dir_loc {
	uint64_t addr;
	uint64_t inc;
	uint64_t gen;
	uint32_t node;
	uint32_t rkey;
	uint32_t len;
	uint32_t cls;
};

struct proto_dir_update {
	uint32_t nput;
	uint32_t ndel;
	/* then struct proto_dir_put[nput], then struct proto_dir_del[ndel] */
};

struct proto_dir_put {
	uint64_t lo, hi;
	struct proto_dir_loc loc;
};

/* Remove the entry only if it is still this publication (node, inc, addr, gen). */
struct proto_dir_del {
	uint64_t lo, hi;
	struct proto_dir_loc loc;
};
_Static_assert(sizeof(struct proto_dir_del) == sizeof(struct proto_dir_put),
	       "a removal is read as a put");

struct proto_dir_get {
	uint32_t n;
	uint32_t pad;
	/* then struct proto_dir_key[n] */
};

struct proto_dir_key {
	uint64_t lo, hi;
};

struct proto_dir_ans {
	int32_t status;			/* 0 or -ENOENT */
	uint32_t pad;
	struct proto_dir_loc loc;
};

/* Notes on blocks of the receiver's published pool, each acted on only if the block
 * still holds that publication: the sender read it (one-sided, so the publisher did
 * not see it): to the front of the LRU; or (PROTO_TOUCH_DROP) a shard replaced its
 * entry with another node's publication of the key: the block is an orphan, free it. */
#define PROTO_TOUCH_MAX 4096
#define PROTO_TOUCH_DROP 1u

struct proto_touch_hdr {
	uint32_t n;
	uint32_t pad;
	/* then struct proto_touch[n] */
};

struct proto_touch {
	uint64_t addr;			/* the block, as in its directory entry */
	uint64_t gen;			/* the publication */
	uint64_t inc;			/* the receiver's incarnation that published it: gen
					 * starts again at a restart */
	uint64_t lo, hi;		/* its key */
	uint32_t cls;
	uint32_t flags;			/* PROTO_TOUCH_DROP or 0 */
};

/* A node joined (member 1) or left (0) the ring: the receiver changes its ring. */
struct proto_member {
	uint32_t node;
	uint32_t member;
};

/* Membership (member.c). A heartbeat says who sends it; the answer is the
 * receiver's view: its header always, every node's entry when the sender is not a
 * node (a client or a tool) and did not say it holds this receiver's view of this
 * generation already (PROTO_HB_HAVE_VIEW). */
#define PROTO_VIEW_MAGIC 0x57564350u	/* "PCVW" */
#define PROTO_HB_HAVE_VIEW 1u

enum proto_member_state { PROTO_UP = 0, PROTO_DOWN = 1, PROTO_LEFT = 2 };

struct proto_heartbeat {
	uint32_t node;			/* the sender's index, or PC_PEER_NONE */
	uint32_t flags;			/* PROTO_HB_HAVE_VIEW */
	uint64_t incarnation;		/* the sender's */
	uint64_t generation;		/* the sender's view's */
	/* A node's own entry, so that a receiver whose table does not hold it yet (it
	 * joined through another node) learns it; zero from clients and tools. */
	uint16_t port;
	uint16_t pad;
	uint32_t pad2;
	char name[64];
	char address[64];
};

struct proto_view {
	uint32_t magic;
	uint32_t nr;			/* entries that follow: 0, or every node */
	uint64_t generation;
	uint64_t incarnation;		/* the answering node's */
	uint32_t self;			/* the answering node's index */
	uint32_t nr_nodes;		/* nodes in its topology */
};

struct proto_view_node {
	uint64_t incarnation;		/* as last heard; 0: never */
	uint64_t silent_ms;		/* since last heard; UINT64_MAX: never */
	uint8_t state;			/* enum proto_member_state */
	uint8_t pad;
	uint16_t port;
	uint32_t pad2;
	char name[64];
	char address[64];
};

/* Joining (member_join.c): a node or client that knows the cluster only by
 * store.discovery_addr asks one node for the node table. A node also asks for an
 * entry: the one its name holds, or a vacant one (given out by the lowest member in
 * the ring; another node answers -EAGAIN naming it). Both sides' placement settings
 * travel as text (topology_placement_text), so a mismatch names the key. */
#define PROTO_JOIN_NODE 1u		/* the sender is a node and wants an entry */
#define PROTO_JOIN_TEXT_MAX 2048	/* TOPOLOGY_PLACEMENT_TEXT_MAX */

struct proto_join {
	uint32_t flags;			/* PROTO_JOIN_NODE */
	uint16_t port;			/* the node's */
	uint16_t text_len;		/* the placement text after this header */
	char name[64];
	char address[64];
};

struct proto_join_ans {
	int32_t status;			/* 0; -ESTALE: placement differs; -ENOSPC: no vacant
					 * entry; -EEXIST: the name is taken at another
					 * address; -EAGAIN: ask node `ask` */
	uint32_t index;			/* the entry the node holds (status 0) */
	uint32_t ask;
	uint16_t text_len;		/* the answering node's placement text follows */
	uint16_t pad;
	/* then the text, zero-padded to 8 bytes, then proto_view + proto_view_node[nr]
	 * (the whole table) */
};
#define PROTO_JOIN_TEXT_PADDED(n) (((size_t)(n) + 7) & ~(size_t)7)

#define PROTO_PROMOTE_MAX_KEYS 4096

struct proto_promote {
	uint32_t n;
	uint32_t budget;		/* payload bytes the reader takes inline */
	/* then struct proto_promote_key[n] */
};

struct proto_promote_key {
	uint64_t lo, hi;		/* the key's xxh3_128 */
	uint32_t expect;		/* expected length, 0 = any up to cap */
	uint32_t cap;
};

/* Per key: 0 (its payload follows, after all answers, in key order), -EAGAIN (back
 * in its slot: read it there), or a miss (-ENOENT, -EMSGSIZE). */
struct proto_promote_ans {
	int32_t status;
	uint32_t len;
	uint64_t checksum;		/* slot_checksum() of the payload */
};

#define PROTO_TIER_MAX_BLOCKS 4096	/* per request */

struct proto_tier_keys {
	uint32_t n;
	uint32_t lease_ms;		/* FETCH: lease length (0 = the peer's default) */
	/* then uint64_t hash[n] */
};

/* PUT request: the caller's region the blocks sit in. FETCH response: the lease and
 * the peer's pool region. */
struct proto_tier_xfer {
	uint32_t n;
	uint32_t rkey;
	uint64_t incarnation;		/* of the region owner's fabric endpoint */
	uint64_t lease;			/* FETCH: the lease to RELEASE; PUT: 0 */
	/* then struct proto_tier_blk[n] */
};

struct proto_tier_blk {
	uint64_t hash;
	uint64_t addr;
	uint64_t sum;			/* disk_sum() of the bytes */
	uint32_t len;
	int32_t status;			/* FETCH response: 0 or -errno (-ENOENT: not held) */
};

#define PROTO_LAYOUT_MAGIC 0x594c4350u	/* "PCLY" */
#define PROTO_LAYOUT_VERSION 1

/* A node's slot layout: what a reader needs to address any slot without asking. */
#define PROTO_LAYOUT_SPILL 1u		/* misses may be on the node's disk: ask it */

struct proto_layout {
	uint32_t magic;
	uint16_t version;
	uint16_t nr_classes;
	uint32_t node;
	uint32_t flags;
	uint64_t incarnation;		/* of the node's fabric endpoint: a restart changes it */
};

struct proto_layout_class {
	uint64_t page_bytes;
	uint64_t stride;
	uint64_t mem_stride;		/* stride, or 64 when pages are not stored */
	uint64_t nr_buckets;
	uint64_t index_stride;
	uint64_t base;			/* address of the region (slots, then index) */
	uint32_t ways;
	uint32_t rkey;
};

#endif
