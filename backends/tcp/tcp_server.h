/*
 * tcp_server.h - the serving side of the tcp fabric (tcp_server.c).
 */
#ifndef PC_TCP_SERVER_H
#define PC_TCP_SERVER_H

#include "tcp_int.h"

/* Listen on the address of tf's own node and serve its regions, and RPCs through
 * h(arg), from a thread of its own until tcp_server_stop. 0 or -errno; on error
 * nothing is left running. */
int tcp_server_start(struct tcp_fabric *tf, pc_rpc_handler *h, void *arg,
		     struct tcp_server **out);
/* Stop serving: after it returns no handler runs and every connection is closed. */
void tcp_server_stop(struct tcp_server *s);
/* [addr, addr + len) left the region table: close the connections whose ops passed
 * the table's check on it and are still in flight (a WRITE payload arriving, a
 * response going out), so that after it returns the server touches none of it.
 * Any thread; waits for the server thread. */
void tcp_server_forget(struct tcp_server *s, const void *addr, size_t len);

#endif
