/*
 * store_rpc.c - a node's answers to its peers, routed to the mode, the tiered pool or
 * membership, after the router's table says the caller may ask and the request is no
 * larger than its opcode allows; and membership itself: the ring swapped whole when a
 * node joins or leaves, the mode told, the other nodes told.
 *
 * Not for: the requests' meaning (the modes' and the tier's own handlers).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "config/topology.h"
#include "proto.h"
#include "store.h"
#include "tier/tier.h"

/*
 * Who may send each request, and its largest body. A client (from PC_PEER_NONE)
 * reads, writes and checks pages: it may ask for layouts, directory lookups, promotes,
 * tier offers, queries, fetches, releases and stats, and note its reads to a publisher.
 * Everything that changes the cluster or a node's state on another's behalf is a
 * node's: membership, directory updates and handoffs, tier puts (the node pulls the
 * blocks from the caller's region). With a cluster secret the fabric authenticated
 * from; without one from is what the caller claimed (docs/security.md). An opcode not
 * in the table is refused to clients too.
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
	if (rpc_table[opcode].caller == RPC_NODE && from == PC_PEER_NONE)
		return -EPERM;
	return 0;
}

int store_set_member(struct pc_store *st, uint32_t node, bool member)
{
	struct store_svc *sv = &st->svc;
	struct ring *old, *r;
	int ret = 0;

	if (node >= sv->topo->nr_nodes)
		return -EINVAL;
	pthread_mutex_lock(&st->member_lock);
	old = store_ring(sv);
	if (ring_contains(old, node) == member)
		goto out;
	r = ring_dup(old);
	if (!r) {
		ret = -ENOMEM;
		goto out;
	}
	ret = member ? ring_add(r, node, sv->topo->nodes[node].name) : ring_remove(r, node);
	if (ret) {
		ring_destroy(r);
		goto out;
	}
	__atomic_store_n(&sv->ring, r, __ATOMIC_RELEASE);
	old->retired_next = st->retired;
	st->retired = old;
	pc_info("node %s %s the ring", sv->topo->nodes[node].name, member ? "joined" : "left");
	st->mode_ops->member_changed(st->mode, node, member, old);
out:
	pthread_mutex_unlock(&st->member_lock);
	return ret;
}

int pc_store_set_member(struct pc_store *st, const char *node, bool member)
{
	struct store_svc *sv = st ? &st->svc : NULL;
	int idx = sv && node ? pc_topology_find_node(sv->topo, node) : -1;
	struct proto_member m;
	struct pc_rpc *rpcs;
	uint32_t nr = 0;
	int ret;

	if (idx < 0)
		return st ? -ENXIO : -EINVAL;
	ret = store_set_member(st, (uint32_t)idx, member);
	if (ret || sv->self == PC_PEER_NONE)
		return ret;	/* a client changes its own view: nodes take MEMBER from nodes */
	/* tell every other node; a node leaving is not asked (it may be dead) */
	rpcs = calloc(sv->topo->nr_nodes, sizeof(*rpcs));
	if (!rpcs)
		return -ENOMEM;
	m = (struct proto_member){ .node = (uint32_t)idx, .member = member };
	for (uint32_t i = 0; i < sv->topo->nr_nodes; i++)
		if (i != sv->self && (member || i != (uint32_t)idx))
			rpcs[nr++] = (struct pc_rpc){ .peer = i, .opcode = PC_RPC_MEMBER, .req = &m,
						      .req_len = sizeof(m) };
	pc_fabric_call(sv->fabric, rpcs, nr);
	for (uint32_t r = 0; r < nr; r++) {
		if (rpcs[r].status)
			pc_warn("node %s did not hear that %s %s: %s", sv->topo->nodes[rpcs[r].peer].name,
				node, member ? "joined" : "left", strerror(-rpcs[r].status));
		pc_msg_free(&rpcs[r].resp);
	}
	free(rpcs);
	return 0;
}

/* Every RPC a peer sends this node arrives here. */
int store_rpc(void *arg, uint32_t from, uint16_t opcode, const void *req, size_t len,
	      struct pc_msg *resp)
{
	struct pc_store *st = arg;
	int ret = store_rpc_allowed(from, opcode, len);

	if (ret) {
		if (ret == -EPERM)
			pc_stat_add(&st->svc.metrics.rpc_refused, 1);
		return ret;
	}
	switch (opcode) {
	case PC_RPC_MEMBER: {
		struct proto_member m;

		if (len != sizeof(m))
			return -EPROTO;
		memcpy(&m, req, sizeof(m));
		if (m.member > 1 || m.node >= st->svc.topo->nr_nodes)
			return -EPROTO;
		return store_set_member(st, m.node, m.member);
	}
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
