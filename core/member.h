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
struct members;

/* Membership state of an open store (before it serves). 0 or -errno. */
int members_open(struct pc_store *st, struct members **out);

/* Start the task that sends heartbeats and decides who is down (store.heartbeat_ms
 * > 0), once the store serves: its first heartbeat tells the peers it is up. */
int members_start(struct members *m);

/* Stop the task (before the fabric and the mode go away) and free. */
void members_close(struct members *m);

/* PC_RPC_HEARTBEAT from a peer (or a client, from PC_PEER_NONE). Never blocks. */
int members_rpc_heartbeat(struct members *m, uint32_t from, const void *req, size_t len,
			  struct pc_msg *resp);

/* PC_RPC_MEMBER: node joined (member) or left the ring on purpose. */
int members_rpc_member(struct members *m, const void *req, size_t len);

/* Add node to this store's ring or take it out, here only (pc_store_set_member also
 * tells the peers). A leave asked for (told) keeps the node out while it runs with
 * the incarnation it has; one decided by silence lets it back when heard again.
 * The ring is swapped whole; batches that took the old one finish with it. */
int members_set(struct members *m, uint32_t node, bool member, bool told);

#endif
