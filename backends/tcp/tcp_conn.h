/*
 * tcp_conn.h - the tcp client's connections to its peers (tcp_conn.c).
 */
#ifndef PC_TCP_CONN_H
#define PC_TCP_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "tcp_int.h"

/* One connection to a peer's server. */
struct tcp_conn {
	int fd;
	bool paced;			/* its congestion control paces (tcp_paces): the
					 * server's too, which the topology gives both ends */
	uint64_t server_inc;		/* the server's incarnation, from HELLO_ACK */
	uint64_t seq;
	uint64_t idle_since;		/* when it went back on the idle list */
	struct tcp_conn *next;		/* idle list */
};

/* The per-peer state of tf (no connection is made yet). 0 or -ENOMEM. */
int tcp_peers_init(struct tcp_fabric *tf);
/* Drop every idle connection and the per-peer state; no post or call may run. */
void tcp_peers_fini(struct tcp_fabric *tf);

/* An idle connection to peer (*fresh false), or a connect just started (*fresh
 * true: the caller finishes it and says HELLO). 0 or -errno; any thread. */
int tcp_conn_get(struct tcp_fabric *tf, uint32_t peer, struct tcp_conn **out, bool *fresh);
/* Give c back to peer's idle pool, for the next post or call. */
void tcp_conn_put(struct tcp_fabric *tf, uint32_t peer, struct tcp_conn *c);
/* Close c and free it (NULL: nothing). */
void tcp_conn_drop(struct tcp_conn *c);

#endif
