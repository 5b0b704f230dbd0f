/*
 * tcp.h - the tcp backend's objects: the fabric, its client-side peers and the
 * server. tcp_client.c posts batches and RPCs; tcp_server.c answers them; tcp.c
 * holds the ops table and ties the two together.
 *
 * Not for: anything the core sees; the core knows only pc_fabric.
 */
#ifndef PC_TCP_H
#define PC_TCP_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>

#include <peercache/pc_fabric.h>

#include "io/region.h"
#include "tcp_proto.h"

/* One client connection to a peer's server. */
struct tcp_conn {
	int fd;
	uint64_t server_inc;		/* the server's incarnation, from HELLO_ACK */
	uint64_t seq;
	struct tcp_conn *next;		/* idle list */
};

/* What a client knows about a peer. */
struct tcp_peer {
	pthread_mutex_t lock;
	struct tcp_conn *idle;		/* connections not in use */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	bool resolved;
	uint64_t down_until;		/* after a failed connect, fail fast until then */
	int down_err;
};

struct tcp_server;

/*
 * The fabric. poll_ns (store.tcp_poll_us) is how long a client waiting for an
 * answer, and a server that just answered, keep polling without sleeping (yielding
 * to anyone who shares their CPU) before they block. An answer on loopback or a near
 * link comes within tens of microseconds, and a thread that sleeps for it pays a
 * wake-up on every phase, which can cost as much as moving a whole batch; RDMA
 * clients poll their completion queues for the same reason. 0 sleeps at once: for
 * nodes that share their CPUs with the model.
 */
struct tcp_fabric {
	struct pc_fabric base;
	struct tcp_peer *peers;
	struct region_table regions;
	struct tcp_server *server;	/* NULL until serve() */
	uint64_t poll_ns;		/* store.tcp_poll_us, in ns */
};

static inline struct tcp_fabric *to_tcp(struct pc_fabric *f)
{
	return (struct tcp_fabric *)f;
}

/* tcp_client.c */
int tcp_peers_init(struct tcp_fabric *tf);
void tcp_peers_fini(struct tcp_fabric *tf);
int tcp_post(struct pc_fabric *f, struct pc_op *ops, size_t n);
int tcp_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n);

/* tcp_server.c */
int tcp_server_start(struct tcp_fabric *tf, pc_rpc_handler *h, void *arg,
		     struct tcp_server **out);
void tcp_server_stop(struct tcp_server *s);

/* Shared socket helpers (tcp_client.c). */
int tcp_resolve(const char *host, uint16_t port, struct sockaddr_storage *ss, socklen_t *len);
void tcp_tune_socket(int fd);

#endif
