/*
 * member.h - membership: which nodes are in the ring, kept by heartbeats (member.c).
 *
 * Not for: the ring itself (placement/ring.h) or what a mode does when it changes
 * (mode_ops.member_changed).
 */
#ifndef PC_MEMBER_H
#define PC_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_fabric.h>

struct pc_store;
struct pc_topology;
struct proto_view;
struct registry_ops;
struct store_deps;
struct members;

/* What a store learned before its fabric opened (members_discover): the view of
 * the node that answered a join (free()), or the registry it is to keep. */
struct member_boot {
	struct proto_view *view;
	const struct registry_ops *reg_ops;
	void *reg;
};

/* What members_open did not take. */
void members_boot_fini(struct member_boot *boot);

/* Membership state of an open store (before it serves); takes boot's registry and
 * the states of its view. 0 or -errno. */
int members_open(struct pc_store *st, struct member_boot *boot, struct members **out);

/* Start the task that sends heartbeats and decides who is down (store.heartbeat_ms
 * > 0), once the store serves: its first heartbeat tells the peers it is up. */
int members_start(struct members *m);

/* Stop the task (before the fabric and the mode go away) and free. */
void members_close(struct members *m);

/* PC_RPC_HEARTBEAT from a peer (or a client, from PC_PEER_NONE). Never blocks. */
int members_rpc_heartbeat(struct members *m, uint32_t from, const void *req, size_t len,
			  struct pc_msg *resp);

/* PC_RPC_MEMBER: node joined (member) or left the ring on purpose. From a node:
 * this store changes its ring. From a tool (PC_PEER_TOOL: pcctl drain/join), about
 * this very node only: it joins or leaves and tells the others. */
int members_rpc_member(struct members *m, uint32_t from, const void *req, size_t len);

/* Add node to this store's ring or take it out, here only (pc_store_set_member also
 * tells the peers). A leave asked for (told) keeps the node out while it runs with
 * the incarnation it has; one decided by silence lets it back when heard again.
 * The ring is swapped whole; batches that took the old one finish with it. */
int members_set(struct members *m, uint32_t node, bool member, bool told);

/* PC_RPC_JOIN (member_join.c): a newcomer asks for the node table, a node also for
 * an entry. Never blocks. */
int members_rpc_join(struct pc_store *st, const void *req, size_t len, struct pc_msg *resp);

/* Before a store opens its fabric (member_join.c): ask the cluster for its node
 * table (and, for node self_name, the entry it holds) and put it in *topo: from a
 * node at store.discovery_addr (boot->view: its view), or from the registry of
 * store.discovery etcd (boot->reg: open, for members_open). 0 (also when no node
 * answered but the topology lists this node, or a client's nodes: it starts from
 * them, warned), or -errno with one line in err. */
int members_discover(struct pc_topology *topo, const char *self_name, const struct store_deps *d,
		     struct member_boot *boot, char *err, size_t errlen);

/* The membership states of a node's whole view (a client's pull; a joiner's first). */
void members_take_view(struct members *m, const struct proto_view *v);

/* This node's view into resp: the header, and every entry when whole. */
int members_put_view(struct members *m, bool whole, struct pc_msg *resp);

/* Entry i of the node table is name at address:port, a peer says: fill it when it is
 * vacant. 0, or -EPROTO when it holds another node (warned once). */
int members_learn(struct members *m, uint32_t i, const char *name, size_t name_cap,
		  const char *address, size_t address_cap, uint16_t port);

/* Give the lowest vacant entry to a node that joins. 0 with *index, or -ENOSPC. */
int members_take_entry(struct members *m, const char *name, const char *address, uint16_t port,
		       uint32_t *index);

#endif
