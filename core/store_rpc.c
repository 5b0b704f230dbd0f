/*
 * store_rpc.c - a node's answers to its peers, routed to the mode, the tiered pool or
 * membership; and membership itself: the ring swapped whole when a node joins or
 * leaves, the mode told, the other nodes told.
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
	pc_stat_add(&st->member_changes, 1);
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
	if (ret)
		return ret;
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

static int route(struct pc_store *st, uint32_t from, uint16_t opcode, const void *req, size_t len,
		 struct pc_msg *resp)
{
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
