/*
 * store_rpc.c - a node's answers to its peers, routed to membership, the tiered pool
 * or the mode.
 *
 * Not for: the requests' meaning (member.c, the tier's and the modes' own handlers).
 */
#include <errno.h>

#include "member.h"
#include "proto.h"
#include "store.h"
#include "tier/tier.h"

static int route(struct pc_store *st, uint32_t from, uint16_t opcode, const void *req, size_t len,
		 struct pc_msg *resp)
{
	switch (opcode) {
	case PC_RPC_MEMBER:
		return members_rpc_member(st->members, req, len);
	case PC_RPC_HEARTBEAT:
		return members_rpc_heartbeat(st->members, from, req, len, resp);
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

/* Every RPC a peer sends this node arrives here, and is counted by opcode (opcodes
 * this build does not know count under 0). */
int store_rpc(void *arg, uint32_t from, uint16_t opcode, const void *req, size_t len,
	      struct pc_msg *resp)
{
	struct pc_store *st = arg;
	int ret = route(st, from, opcode, req, len, resp);
	uint16_t o = opcode < PROTO_NR_RPCS ? opcode : 0;

	pc_stat_add(&st->rpc_served[o], 1);
	if (ret)
		pc_stat_add(&st->rpc_failed[o], 1);
	return ret;
}
