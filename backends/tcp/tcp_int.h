/*
 * tcp_int.h - the object every file of the tcp backend shares: the fabric.
 *
 *   tcp.c         the ops table; open, close, serve
 *   tcp_client.c  batched one-sided ops and RPCs, the client's handshake
 *   tcp_conn.c    the client's connections to peers, an idle pool per peer
 *   tcp_server.c  the event loop: accept, receive, write responses
 *   tcp_ops.c     one-sided ops emulated on the registered regions
 *   tcp_frame.c   the frame parser: every check on a request's shape
 *   tcp_auth.c    the handshake's secret, nonces and MACs
 *   tcp_rpc.c     the RPC workers
 *   tcp_sock.c    socket helpers both sides use
 *   tcp_proto.h   the wire format
 *
 * Not for: anything the core sees (the core knows only pc_fabric), nor either
 * side's own state, which stays in its file.
 */
#ifndef PC_TCP_INT_H
#define PC_TCP_INT_H

#include <stdint.h>

#include <peercache/pc_fabric.h>

#include "base/log.h"
#include "config/topology.h"
#include "io/region.h"
#include "tcp_auth.h"

/* Ops of at most this many bytes (slot headers, index blocks, CAS values; an exists
 * batch reads a header per way of each key) travel through a buffer at both ends,
 * copied, so that a run of them is one iovec: the kernel's cost per iovec is more
 * than the copy. Pages go from and into their memory as they are. Not part of the
 * wire format: either end may choose otherwise. */
#define TCP_SMALL_OP 512

struct tcp_peer;
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
	struct tcp_peer *peers;		/* per node: the client's connections (tcp_conn.c) */
	struct region_table regions;
	struct tcp_server *server;	/* NULL until serve() */
	uint64_t poll_ns;		/* store.tcp_poll_us, in ns */
	uint64_t idle_ns;		/* store.idle_timeout_s, in ns (0: none) */
	struct tcp_auth auth;		/* the cluster secret, if any */
	uint64_t fingerprint;		/* topology_fingerprint() of this process's config */
	char placement[TOPOLOGY_PLACEMENT_TEXT_MAX];	/* and its text */
	uint32_t placement_len;
	struct log_limit warn_handshake;	/* client side: refused handshakes */
};

static inline struct tcp_fabric *to_tcp(struct pc_fabric *f)
{
	return (struct tcp_fabric *)f;
}

#endif
