/*
 * tcp_client.h - the client side of the tcp fabric (tcp_client.c): per-peer
 * connections, batched one-sided ops and RPCs.
 */
#ifndef PC_TCP_CLIENT_H
#define PC_TCP_CLIENT_H

#include <stddef.h>

#include "tcp_int.h"

/* The per-peer state of tf (no connection is made yet). 0 or -ENOMEM. */
int tcp_peers_init(struct tcp_fabric *tf);
/* Drop every idle connection and the per-peer state; no post or call may run. */
void tcp_peers_fini(struct tcp_fabric *tf);

/* pc_fabric_ops.post and .call: any thread, concurrently. */
int tcp_post(struct pc_fabric *f, struct pc_op *ops, size_t n);
int tcp_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n);

#endif
