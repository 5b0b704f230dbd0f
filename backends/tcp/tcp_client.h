/*
 * tcp_client.h - the client side of the tcp fabric (tcp_client.c): batched one-sided
 * ops and RPCs over the connections of tcp_conn.h.
 */
#ifndef PC_TCP_CLIENT_H
#define PC_TCP_CLIENT_H

#include <stddef.h>

#include "tcp_int.h"

/* pc_fabric_ops.post and .call: any thread, concurrently. */
int tcp_post(struct pc_fabric *f, struct pc_op *ops, size_t n);
int tcp_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n);

#endif
