/*
 * store_rpc.c - a node's answers to its peers, routed to membership, the tiered pool
 * or the mode, after the router's table says the caller may ask and the request is
 * no larger than its opcode allows.
 *
 * Not for: the requests' meaning (member.c, the tier's and the modes' own handlers).
 */
#include <errno.h>

#include "member.h"
#include "proto.h"
#include "store.h"
#include "tier/tier.h"

/*
 * Who may send each request, and its largest body. A client (from PC_PEER_NONE)
 * reads, writes and checks pages: it may ask for layouts, directory lookups, promotes,
 * tier offers, queries, fetches, releases and stats, and note its reads to a publisher.
 * Everything that changes the cluster or a node's state on another's behalf is a
 * node's: membership, directory updates and handoffs, tier puts (the node pulls the
 * blocks from the caller's region). A tool that reached an address (PC_PEER_TOOL:
 * pcctl) may ask for views (HEARTBEAT) and drain or join the node it reached
 * (MEMBER about that node; member.c checks), nothing else. JOIN is anyone's: a
 * newcomer knows no index yet, and a cluster with a secret has authenticated it. With a cluster secret
 * the fabric authenticated from; without one from is what the caller claimed
 * (docs/security.md). An opcode not in the table is refused to clients too.
 */
enum rpc_caller { RPC_UNKNOWN = 0, RPC_ANY, RPC_NODE };

static const struct {
	uint8_t caller;
	uint32_t max_req;
} rpc_table[] = {
	[PC_RPC_LAYOUT] = { RPC_ANY, 0 },
	[PC_RPC_TIER_OFFER] = { RPC_ANY, sizeof(struct proto_tier_keys) + PROTO_TIER_MAX_BLOCKS * 8 },
	[PC_RPC_TIER_QUERY] = { RPC_ANY, sizeof(struct proto_tier_keys) + PROTO_TIER_MAX_BLOCKS * 8 },
	[PC_RPC_TIER_PUT] = { RPC_NODE, sizeof(struct proto_tier_xfer) +
					 PROTO_TIER_MAX_BLOCKS * sizeof(struct proto_tier_blk) },
	[PC_RPC_TIER_FETCH] = { RPC_ANY, sizeof(struct proto_tier_keys) + PROTO_TIER_MAX_BLOCKS * 8 },
	[PC_RPC_TIER_RELEASE] = { RPC_ANY, sizeof(uint64_t) },
	[PC_RPC_TIER_STATS] = { RPC_ANY, 0 },
	[PC_RPC_SLOT_PROMOTE] = { RPC_ANY, sizeof(struct proto_promote) +
					    PROTO_PROMOTE_MAX_KEYS * sizeof(struct proto_promote_key) },
	[PC_RPC_DIR_UPDATE] = { RPC_NODE, sizeof(struct proto_dir_update) +
					  2 * PROTO_DIR_MAX * sizeof(struct proto_dir_put) },
	[PC_RPC_DIR_GET] = { RPC_ANY, sizeof(struct proto_dir_get) +
				      PROTO_DIR_MAX * sizeof(struct proto_dir_key) },
	[PC_RPC_MEMBER] = { RPC_NODE, sizeof(struct proto_member) },
	[PC_RPC_HEARTBEAT] = { RPC_ANY, sizeof(struct proto_heartbeat) },
	[PC_RPC_JOIN] = { RPC_ANY, sizeof(struct proto_join) + PROTO_JOIN_TEXT_MAX },
	[PC_RPC_P2P_TOUCH] = { RPC_ANY, sizeof(struct proto_touch_hdr) +
					PROTO_TOUCH_MAX * sizeof(struct proto_touch) },
};
#define NR_RPC_TABLE (sizeof(rpc_table) / sizeof(rpc_table[0]))

size_t store_rpc_max_req(void *arg, uint16_t opcode)
{
	(void)arg;
	return opcode < NR_RPC_TABLE && rpc_table[opcode].caller ? rpc_table[opcode].max_req : 0;
}

int store_rpc_allowed(uint32_t from, uint16_t opcode, size_t len)
{
	if (opcode >= NR_RPC_TABLE || !rpc_table[opcode].caller)
		return -EOPNOTSUPP;
	if (len > rpc_table[opcode].max_req)
		return -EMSGSIZE;
	if (from == PC_PEER_TOOL)
		return opcode == PC_RPC_HEARTBEAT || opcode == PC_RPC_MEMBER ||
		       opcode == PC_RPC_JOIN ? 0 : -EPERM;
	if (rpc_table[opcode].caller == RPC_NODE && from == PC_PEER_NONE)
		return -EPERM;
	return 0;
}

static int route(struct pc_store *st, uint32_t from, uint16_t opcode, const void *req, size_t len,
		 struct pc_msg *resp)
{
	switch (opcode) {
	case PC_RPC_MEMBER:
		return members_rpc_member(st->members, from, req, len);
	case PC_RPC_HEARTBEAT:
		return members_rpc_heartbeat(st->members, from, req, len, resp);
	case PC_RPC_JOIN:
		return members_rpc_join(st, req, len, resp);
	case PC_RPC_TIER_OFFER:
	case PC_RPC_TIER_QUERY:
	case PC_RPC_TIER_PUT:
	case PC_RPC_TIER_FETCH:
	case PC_RPC_TIER_RELEASE:
	case PC_RPC_TIER_STATS:
		return st->tier ? tier_rpc(st->tier, from, opcode, req, len, resp) : -EOPNOTSUPP;
	default:
		return st->mode_ops->rpc(st->mode, from, opcode, req, len, resp);
	}
}

/* Every RPC a peer sends this node arrives here: checked against the table, routed,
 * and counted by opcode (opcodes this build does not know count under 0). */
int store_rpc(void *arg, uint32_t from, uint16_t opcode, const void *req, size_t len,
	      struct pc_msg *resp)
{
	struct pc_store *st = arg;
	uint16_t o = opcode < PROTO_NR_RPCS ? opcode : 0;
	int ret = store_rpc_allowed(from, opcode, len);

	if (ret == -EPERM)
		pc_stat_add(&st->svc.metrics.rpc_refused, 1);
	if (!ret) {
		unsigned pass = store_ring_enter(&st->svc);

		ret = route(st, from, opcode, req, len, resp);
		store_ring_exit(&st->svc, pass);
	}

	pc_stat_add(&st->rpc_served[o], 1);
	if (ret)
		pc_stat_add(&st->rpc_failed[o], 1);
	return ret;
}
