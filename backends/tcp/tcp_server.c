/*
 * tcp_server.c - the node's server thread: one epoll loop that accepts connections,
 * receives their frames, has their one-sided READ/WRITE/CAS served on the
 * registered regions (tcp_ops.c), and writes every response. RPCs it hands to the workers (tcp_rpc.c)
 * unless the handler answers them without blocking.
 *
 * Every frame passes the parser (tcp_frame.c) before the server acts on it, and
 * every op the region table (key, bounds, rights) before memory is touched; a
 * refused op gets its own error status. A malformed frame closes that one
 * connection; the server keeps serving the rest.
 *
 * A connection is acted on only once its handshake is through: HELLO (identity,
 * fingerprint, nonce), and with a cluster secret AUTH, whose MAC must check out
 * (tcp_auth.h); until then no op is served and no RPC reaches a handler, and the
 * caller's node identity (what handlers get as from) is what it proved.
 *
 * What a peer can make the node hold is bounded, each limit a store setting: the
 * connections (store.max_connections; at the cap a newcomer displaces the oldest
 * connection still in its handshake, else it is closed), the time without a complete
 * frame (store.idle_timeout_s), an RPC request's bytes (its opcode's own maximum,
 * checked on the header before the body is read) and all connections' buffered
 * request bytes together (store.max_buffered_bytes). Out of file descriptors, the
 * loop stops accepting for a while instead of spinning. Every refusal is counted in
 * the fabric's stats and logged at warn with the peer's address, rate-limited.
 *
 * The response writer is here, not with the workers: only this thread touches a
 * connection's socket and its EPOLLOUT interest, so connections need no lock, and
 * a worker hands its answer back through the done list.
 *
 * Not for: the client side (tcp_client.c), the checks on a frame's shape
 * (tcp_frame.c), running RPC handlers (tcp_rpc.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <stddef.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/log.h"
#include "config/topology.h"
#include "tcp_auth.h"
#include "tcp_frame.h"
#include "tcp_ops.h"
#include "tcp_proto.h"
#include "tcp_rpc.h"
#include "tcp_server.h"
#include "tcp_sock.h"

#define RX_CHUNK (1u << 20)	/* grow receive buffers as bytes arrive, not as announced */
#define RX_KEEP (64u << 10)	/* a receive buffer larger than this is freed after its frame */
#define IOV_KEEP 4096u		/* iovecs a connection keeps between responses */
#define DISCARD_BYTES 65536
#define QUICK_MAX_REQ (64u << 10)	/* a quick RPC larger than this goes to a worker:
					 * the event thread works a bounded slice per frame */
#define READS_PER_PASS 16	/* frames (or payload receives) of one connection a loop pass */
#define TICK_MS 250		/* idle connections and paused accepts are looked at this often */
#define ACCEPT_PAUSE_MIN_NS 10000000ULL		/* out of fds: stop accepting 10 ms, */
#define ACCEPT_PAUSE_MAX_NS 1000000000ULL	/* doubling up to 1 s */

/* What a connection waits for: the next frame's header and head, the WRITE payloads
 * of an OPS frame, or (parked) a worker's answer to its RPC. */
enum rx_state { RX_HEAD, RX_PAYLOAD, RX_PARKED };

struct sconn {
	int fd;
	bool hello;
	bool auth_pending;		/* HELLO answered; AUTH must come next */
	bool ready;			/* the handshake is through: ops and RPCs are served */
	bool closing;			/* close once the queued response is out */
	bool doomed;			/* closed to make room: freed after this loop pass */
	bool paced;			/* its congestion control paces (tcp_paces): the client's
					 * too, which the topology gives both ends */
	uint32_t peer;			/* what it proved (PC_PEER_NONE until then, or a client) */
	uint64_t last_frame_ns;		/* when its last frame was complete (or it connected) */
	char addr[64];			/* the peer's address, for log lines */
	struct tcp_hello hello_msg;	/* the handshake, kept for AUTH's MAC */
	struct tcp_hello_ack ack_msg;
	enum rx_state rx;
	struct pc_msg head;		/* the frame's header and head, as they arrive */
	size_t need;			/* head bytes to have before parsing again */
	struct tcp_frame fr;		/* the frame being served */
	struct tcp_ops ops;		/* the OPS frame being served */
	/* the response being sent */
	struct pc_msg out;
	uint64_t out_held;		/* out's bytes counted in the server's buffered */
	struct tcp_rpc_job rpc;		/* the RPC being answered */
	struct iovec *iov;
	size_t iovcnt, iovcap, iov_i;
	bool sending;
	struct sconn *prev, *next;
};

struct tcp_server {
	struct tcp_fabric *tf;
	int lfd, epfd, wakefd;
	pthread_t thread;
	struct sconn *conns;
	uint32_t nr_conns, max_conns;	/* connections not doomed, and the cap */
	uint32_t nr_doomed;
	uint64_t buffered, max_buffered;	/* receive and copied-response buffers' bytes,
						 * all connections */
	uint64_t next_tick_ns;
	uint64_t accept_resume_ns;	/* accepting paused until then (0: accepting) */
	uint64_t accept_pause_ns;	/* the next pause's length */
	struct log_limit lim_frame, lim_secret, lim_mac, lim_gone, lim_fp, lim_conns, lim_idle, lim_size,
		lim_buf, lim_accept;
	/* A connection whose RPC is with a worker is parked: out of epoll until the
	 * loop takes the job back from the done list and answers it. */
	struct tcp_rpc_pool rpc;
	/* A region going away (tcp_server_forget), asked of this thread through wakefd;
	 * stopping is set under forget_lock before the stop's wake. */
	pthread_mutex_t forget_one;	/* one request at a time */
	pthread_mutex_t forget_lock;
	pthread_cond_t forget_cond;
	uintptr_t forget_addr;
	size_t forget_len;
	bool forget_asked, stopping;
	uint8_t discard[DISCARD_BYTES];
};

static struct pc_fabric_stats *stats(struct tcp_server *s)
{
	return &s->tf->base.stats;
}

static uint64_t now_ns(struct tcp_server *s)
{
	return pc_env_now(s->tf->base.env);
}

/* A warn line about a peer, at most LOG_LIMIT_BURST per 10 s per kind (log.h). */
#define peer_warn(s, lim, c, fmt, ...)                                                   \
	do {                                                                             \
		uint64_t _skipped;                                                       \
		if (log_limit_ok(lim, now_ns(s), &_skipped))                             \
			pc_warn("tcp server %s: %s: " fmt " (%llu more like it not shown)",    \
				(s)->tf->base.topo->nodes[(s)->tf->base.self].name, (c)->addr,  \
				__VA_ARGS__, (unsigned long long)_skipped);              \
	} while (0)

/* Close c's socket and count it gone, but keep the object: the events of this
 * loop pass may still name it (they are skipped), conn_reap frees it after. */
static void conn_doom(struct tcp_server *s, struct sconn *c)
{
	if (c->doomed)
		return;
	pc_stat_add(&stats(s)->conns_closed, 1);
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->doomed = true;
	s->nr_doomed++;
	s->nr_conns--;
}

static void conn_close(struct tcp_server *s, struct sconn *c)
{
	if (c->doomed) {
		s->nr_doomed--;
	} else {
		pc_stat_add(&stats(s)->conns_closed, 1);
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		s->nr_conns--;
	}
	s->buffered -= c->head.cap + c->out_held;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pc_msg_free(&c->head);
	pc_msg_free(&c->out);
	pc_msg_free(&c->rpc.resp);
	tcp_ops_free(&c->ops);
	free(c->iov);
	free(c);
}

/* A malformed frame: count it, say why, close this connection only. */
static int bad_frame(struct tcp_server *s, struct sconn *c, const char *why)
{
	pc_stat_add(&stats(s)->bad_frames, 1);
	peer_warn(s, &s->lim_frame, c, "malformed frame (%s) from node %d; connection closed",
		  why, (int)c->peer);
	return -EPROTO;
}

static void watch(struct tcp_server *s, struct sconn *c, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = c };

	epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static int watch_add(struct tcp_server *s, int fd, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ptr };

	return epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* Queue bytes of the response. */
static int iov_push(struct sconn *c, void *base, size_t len)
{
	return tcp_iov_add(&c->iov, &c->iovcnt, &c->iovcap, base, len);
}

/* The response is out: a buffer that a large one grew is given back (and
 * uncounted), so that what a peer made the node copy once is not held until its
 * next frame; so are iovecs and op arrays a frame of many ops grew. */
static void out_release(struct tcp_server *s, struct sconn *c)
{
	if (c->out.cap > RX_KEEP) {
		s->buffered -= c->out_held;
		c->out_held = 0;
		pc_msg_free(&c->out);
	}
	if (c->iovcap > IOV_KEEP) {
		free(c->iov);
		c->iov = NULL;
		c->iovcap = 0;
	}
	tcp_ops_trim(&c->ops);
}

/* Send what is queued. 0 when all is out, -EAGAIN to wait, other -errno to close. */
static int flush(struct tcp_server *s, struct sconn *c)
{
	int ret = tcp_sendv(c->fd, c->iov, c->iovcnt, &c->iov_i);

	if (ret == -EAGAIN) {
		if (!c->sending)
			watch(s, c, EPOLLOUT);
		c->sending = true;
		return -EAGAIN;
	}
	if (ret)
		return ret;
	if (c->sending)
		watch(s, c, EPOLLIN);
	c->sending = false;
	c->iovcnt = c->iov_i = 0;
	out_release(s, c);
	return 0;
}

/* Done with the frame: wait for the next one's header. A buffer that a large
 * request grew is given back, so that what a peer made the node hold once is not
 * held until it closes. */
static void rx_next(struct tcp_server *s, struct sconn *c)
{
	c->rx = RX_HEAD;
	c->head.len = 0;
	c->need = sizeof(struct tcp_hdr);
	c->last_frame_ns = now_ns(s);
	if (c->head.cap > RX_KEEP) {
		s->buffered -= c->head.cap;
		pc_msg_free(&c->head);
	}
}

/* Done with the frame, its response queued (ret 0) or not (ret -errno): wait for
 * the next frame and send what is queued. 0, or -errno to close (also once a
 * closing connection's last response is out). */
static int frame_done(struct tcp_server *s, struct sconn *c, int ret)
{
	rx_next(s, c);
	if (ret)
		return ret;
	ret = flush(s, c);
	if (!ret && c->closing)
		return -ECONNABORTED;
	return ret == -EAGAIN ? 0 : ret;
}

static int start_response(struct sconn *c, uint8_t type, uint32_t count, int32_t status,
			  uint64_t body_len)
{
	struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = type,
			     .count = count, .status = status, .body_len = body_len,
			     .seq = c->fr.hdr.seq };

	c->out.len = 0;		/* the last response is out by now (out_release) */
	c->iovcnt = c->iov_i = 0;
	return pc_msg_append(&c->out, &h, sizeof(h));
}

/* Queue a HELLO_ACK; a refusal (status < 0) closes the connection once it is out. */
static int send_ack(struct tcp_server *s, struct sconn *c, int32_t status, bool with_text)
{
	struct tcp_fabric *tf = s->tf;
	uint32_t text = with_text ? tf->placement_len : 0;

	c->ack_msg.text_len = text;
	if (status)
		c->closing = true;
	if (start_response(c, TCP_HELLO_ACK, 0, status, sizeof(c->ack_msg) + text) ||
	    pc_msg_append(&c->out, &c->ack_msg, sizeof(c->ack_msg)) ||
	    (text && pc_msg_append(&c->out, tf->placement, text)) ||
	    iov_push(c, c->out.data, c->out.len))
		return -ENOMEM;
	return 0;
}

static const char *role_of(uint32_t node, char *buf, size_t len)
{
	if (node == PC_PEER_NONE)
		return "a client";
	snprintf(buf, len, "node index %u", node);
	return buf;
}

/*
 * HELLO: answer with this node's identity and nonce, and with a secret its MAC; or
 * refuse a caller that meant another node, that disagrees about having a secret, or
 * whose placement settings differ (the line names the first key that does; the
 * caller gets this node's settings to do the same).
 */
static int on_hello(struct tcp_server *s, struct sconn *c)
{
	struct tcp_fabric *tf = s->tf;
	const struct tcp_hello *hello = &c->fr.hello;
	const char *text = (const char *)c->fr.body + sizeof(*hello);
	bool auth = tf->auth.on, theirs = hello->flags & TCP_HELLO_AUTH;
	char who[32], diff[256];

	c->hello = true;
	c->hello_msg = *hello;
	c->ack_msg = (struct tcp_hello_ack){ .node = tf->base.self,
					     .flags = auth ? TCP_HELLO_AUTH : 0,
					     .incarnation = tf->base.incarnation,
					     .fingerprint = tf->fingerprint };
	/* A client that meant another node (stale address, port reuse) is told so. A
	 * tool that reached an address (PC_FABRIC_ANY_NODE) meant whichever node is
	 * there; it has no placement settings, and its requests are a tool's only. */
	if (hello->expect_node != tf->base.self &&
	    !(hello->expect_node == PC_PEER_NONE && hello->node == PC_PEER_TOOL))
		return send_ack(s, c, -EADDRNOTAVAIL, false);
	if (auth != theirs) {
		pc_stat_add(&stats(s)->auth_refused, 1);
		peer_warn(s, &s->lim_secret, c, "%s %s; refused (every node and client of a cluster needs the same store.auth_secret_file)",
			  role_of(hello->node, who, sizeof(who)),
			  auth ? "has no cluster secret but this node has one" :
				 "has a cluster secret but this node has none");
		return send_ack(s, c, -EACCES, false);
	}
	if (hello->fingerprint != tf->fingerprint && hello->node != PC_PEER_TOOL) {
		pc_stat_add(&stats(s)->auth_refused, 1);
		if (!topology_placement_diff(tf->placement, tf->placement_len, text,
					     hello->text_len, diff, sizeof(diff)))
			snprintf(diff, sizeof(diff), "config fingerprint %016llx here, %016llx there",
				 (unsigned long long)tf->fingerprint,
				 (unsigned long long)hello->fingerprint);
		peer_warn(s, &s->lim_fp, c, "%s has other placement settings: %s; refused (give it the cluster's store settings)",
			  role_of(hello->node, who, sizeof(who)), diff);
		return send_ack(s, c, -EBADE, true);
	}
	if (auth) {
		if (tcp_auth_nonce(c->ack_msg.nonce, sizeof(c->ack_msg.nonce)))
			return -EIO;
		tcp_auth_mac(&tf->auth, TCP_AUTH_SERVER, hello, &c->ack_msg, c->ack_msg.mac);
		c->auth_pending = true;
	} else {
		c->peer = hello->node;	/* no secret: what it claims (docs/security.md) */
		c->ready = true;
	}
	return send_ack(s, c, 0, false);
}

/* AUTH: the caller's MAC over this handshake. Until it checks out nothing is served;
 * when it does, the caller is the node (or client) its HELLO named. */
static int on_auth(struct tcp_server *s, struct sconn *c)
{
	struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_REFUSED,
			     .status = -EACCES, .seq = c->fr.hdr.seq };
	char who[32];

	c->auth_pending = false;
	if (tcp_auth_check(&s->tf->auth, TCP_AUTH_CLIENT, &c->hello_msg, &c->ack_msg,
			   c->fr.body)) {
		c->peer = c->hello_msg.node;
		c->ready = true;
		rx_next(s, c);
		return 0;
	}
	pc_stat_add(&stats(s)->auth_refused, 1);
	peer_warn(s, &s->lim_mac, c, "%s failed authentication (wrong cluster secret, or not the identity it claims); refused",
		  role_of(c->hello_msg.node, who, sizeof(who)));
	c->closing = true;
	c->out.len = 0;
	c->iovcnt = c->iov_i = 0;
	if (pc_msg_append(&c->out, &h, sizeof(h)) || iov_push(c, c->out.data, c->out.len))
		return -ENOMEM;
	return frame_done(s, c, 0);
}

/* Send the handler's answer and read on. 0 or -errno to close. */
static int rpc_respond(struct tcp_server *s, struct sconn *c)
{
	int32_t status = c->rpc.status;
	int ret = 0;

	if (c->rpc.resp.len > TCP_MAX_RPC_BODY) {
		status = -EMSGSIZE;
		c->rpc.resp.len = 0;
	}
	if (start_response(c, TCP_RPC_RESP, c->fr.hdr.count, status, c->rpc.resp.len) ||
	    iov_push(c, c->out.data, c->out.len) ||
	    iov_push(c, c->rpc.resp.data, c->rpc.resp.len))
		ret = -ENOMEM;
	return frame_done(s, c, ret);
}

/* An RPC request is in. One the handler answers without blocking (the fabric's
 * quick_rpcs) is answered here and now; any other parks the connection (no reads
 * until it is answered) and goes to a worker. */
static int on_rpc(struct tcp_server *s, struct sconn *c)
{
	uint32_t op = c->fr.hdr.count;
	struct tcp_rpc_job *j = &c->rpc;

	j->from = c->peer;
	j->opcode = (uint16_t)op;
	j->req = c->fr.body;
	j->req_len = c->fr.body_len;
	if (j->resp.cap > RX_KEEP)
		pc_msg_free(&j->resp);	/* the last answer is out: give back what it grew */
	if (op < 64 && (s->tf->base.quick_rpcs >> op & 1) && j->req_len <= QUICK_MAX_REQ) {
		tcp_rpc_run(&s->rpc, j);
		return rpc_respond(s, c);
	}
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	c->rx = RX_PARKED;
	tcp_rpc_submit(&s->rpc, j);
	return 0;
}

/* Answer the connections whose RPCs the workers finished, and read on. */
static void rpc_answer_done(struct tcp_server *s)
{
	struct tcp_rpc_job *j, *next;

	for (j = tcp_rpc_take_done(&s->rpc); j; j = next) {
		struct sconn *c = (struct sconn *)((char *)j - offsetof(struct sconn, rpc));

		next = j->next;
		if (watch_add(s, c->fd, c) || rpc_respond(s, c))
			conn_doom(s, c);
	}
}

/* The OPS head is in and parsed: its ops checked, its WRITE payloads' places set. */
static int on_ops(struct tcp_server *s, struct sconn *c)
{
	return tcp_ops_check(&c->ops, &c->fr, &s->tf->regions, stats(s), s->discard,
			     sizeof(s->discard));
}

/* Every WRITE landed: the response, with each op's status and bytes. */
static int on_ops_done(struct tcp_server *s, struct sconn *c)
{
	/* The bytes copied into the response count against the buffer budget as a
	 * request's do: a small frame of many small READs asks for a large response. */
	uint64_t copied, body = tcp_ops_body_len(&c->ops, &c->fr, &copied);
	int ret;

	if (copied > RX_KEEP && s->buffered + copied > s->max_buffered) {
		pc_stat_add(&stats(s)->buffer_refused, 1);
		peer_warn(s, &s->lim_buf, c, "the response to its %u ops would take the node's buffers past store.max_buffered_bytes (%llu); connection closed",
			  c->fr.nops, (unsigned long long)s->max_buffered);
		return -ENOBUFS;
	}
	if (start_response(c, TCP_OPS_RESP, c->fr.nops, 0, body))
		return -ENOMEM;
	ret = tcp_ops_answer(&c->ops, &c->fr, &c->out, &c->iov, &c->iovcnt, &c->iovcap, stats(s));
	if (c->out.cap > c->out_held) {
		s->buffered += c->out.cap - c->out_held;
		c->out_held = c->out.cap;
	}
	return ret;
}

/* The frame's head is in and valid: act on it. Returns 0, or -errno to close. */
static int on_frame(struct tcp_server *s, struct sconn *c)
{
	int ret;

	switch (c->fr.hdr.type) {
	case TCP_HELLO:
		ret = on_hello(s, c);
		break;
	case TCP_AUTH:
		return on_auth(s, c);
	case TCP_RPC:
		if (!c->ready)
			return bad_frame(s, c, "request before the handshake is through");
		return on_rpc(s, c);	/* parked: rpc_answer_done() resumes it */
	default:
		if (!c->ready)
			return bad_frame(s, c, "request before the handshake is through");
		if (c->peer == PC_PEER_TOOL) {	/* views, drain and join only (store_rpc.c) */
			pc_stat_add(&stats(s)->bad_frames, 1);
			peer_warn(s, &s->lim_frame, c, "a tool (pcctl) sent %u one-sided ops; tools may ask for views, drain and join only; connection closed",
				  c->fr.nops);
			return -EPERM;
		}
		ret = on_ops(s, c);
		if (ret)
			return ret;
		if (c->fr.payload_len) {
			c->rx = RX_PAYLOAD;
			return 0;
		}
		ret = on_ops_done(s, c);
	}
	return frame_done(s, c, ret);
}

/* Receive the next frame's header and head, RX_CHUNK at a time so that buffers
 * grow as bytes arrive, not as a header announces, and parse each time the parser
 * has what it asked for. 0 once the frame is acted on, -EAGAIN to wait for bytes,
 * other -errno to close. */
static int rx_head(struct tcp_server *s, struct sconn *c)
{
	struct tcp_frame_ctx ctx = { .hello = c->hello, .auth_pending = c->auth_pending,
				     .nr_nodes = s->tf->base.nr_peers,
				     .rpc_max = s->tf->base.rpc_max_req,
				     .rpc_max_arg = s->tf->base.rpc_max_arg };

	for (;;) {
		size_t want = c->need - c->head.len, cap = c->head.cap;
		ssize_t r;

		if (want > RX_CHUNK)
			want = RX_CHUNK;
		if (c->head.len + want > cap &&
		    s->buffered + (c->head.len + want > 2 * cap ? c->head.len + want : cap) >
			    s->max_buffered) {
			pc_stat_add(&stats(s)->buffer_refused, 1);
			peer_warn(s, &s->lim_buf, c, "its request would take the node's buffered requests past store.max_buffered_bytes (%llu); connection closed",
				  (unsigned long long)s->max_buffered);
			return -ENOBUFS;
		}
		if (pc_msg_reserve(&c->head, want))
			return -ENOMEM;
		s->buffered += c->head.cap - cap;
		r = tcp_recv_some(c->fd, (char *)c->head.data + c->head.len, want);
		if (r < 0)
			return (int)r;
		c->head.len += (size_t)r;
		if (c->head.len < c->need)
			continue;
		r = tcp_frame_parse(&ctx, c->head.data, c->head.len, &c->fr);
		if (r == -EMSGSIZE) {
			pc_stat_add(&stats(s)->oversize_refused, 1);
			peer_warn(s, &s->lim_size, c, "RPC %u of %llu bytes is larger than the opcode takes; connection closed",
				  c->fr.hdr.count, (unsigned long long)c->fr.hdr.body_len);
			return (int)r;
		}
		if (r < 0)
			return bad_frame(s, c, c->fr.why);
		if (r > 0)
			return on_frame(s, c);
		c->need = c->fr.need;
	}
}

/* Receive WRITE payloads straight into their regions, scattered by recvmsg. */
static int rx_payload(struct tcp_server *s, struct sconn *c)
{
	int ret;

	ret = tcp_recvv(c->fd, c->ops.rxv, c->ops.rxn, &c->ops.rxi,
			c->paced ? &c->ops.rx_left : NULL);
	if (ret)
		return ret;
	return frame_done(s, c, on_ops_done(s, c));
}

/* Read and act until the socket is drained, a response is waiting to go out, an
 * RPC is with a worker (the loop must not touch the connection then), or the
 * connection had its share of this pass: a peer that pipelines small frames has its
 * socket never drained, and would otherwise keep every other connection (heartbeats
 * included) waiting. epoll is level-triggered: what is left comes up next pass. */
static int on_readable(struct tcp_server *s, struct sconn *c)
{
	for (unsigned steps = 0; steps < READS_PER_PASS; steps++) {
		int ret;

		if (c->closing)
			return c->sending ? 0 : -ECONNABORTED;
		if (c->sending || c->rx == RX_PARKED)
			return 0;	/* one request at a time: read on once it is answered */
		ret = c->rx == RX_HEAD ? rx_head(s, c) : rx_payload(s, c);
		if (ret)
			return ret == -EAGAIN ? 0 : ret;
	}
	return 0;
}

static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
	}
	snprintf(buf, len, "%s:%u", host, port);
}

/* The connection that has waited longest in its handshake, or NULL. */
static struct sconn *oldest_unready(struct tcp_server *s)
{
	struct sconn *c, *oldest = NULL;

	for (c = s->conns; c; c = c->next)
		if (!c->ready && !c->doomed)
			oldest = c;	/* the list is newest first */
	return oldest;
}

/* At the connection cap: the oldest connection still in its handshake makes room
 * (a flood of connections that never authenticate cannot keep peers out), else
 * the newcomer is refused. Whether there is room now. */
static bool make_room(struct tcp_server *s, struct sconn *newcomer)
{
	struct sconn *oldest = oldest_unready(s);

	pc_stat_add(&stats(s)->conns_refused, 1);
	if (!oldest) {
		peer_warn(s, &s->lim_conns, newcomer, "store.max_connections (%u) reached; connection refused",
			  s->max_conns);
		return false;
	}
	peer_warn(s, &s->lim_conns, oldest, "store.max_connections (%u) reached; closed this connection, still in its handshake, to make room",
		  s->max_conns);
	conn_doom(s, oldest);
	return true;
}

/* Out of file descriptors: stop accepting for a while (the pending connections
 * wait in the backlog) instead of being woken for them again at once. */
static void accept_pause(struct tcp_server *s, int err)
{
	struct sconn dummy = { .addr = "listener" };

	epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->lfd, NULL);
	s->accept_pause_ns = s->accept_pause_ns ? s->accept_pause_ns * 2 : ACCEPT_PAUSE_MIN_NS;
	if (s->accept_pause_ns > ACCEPT_PAUSE_MAX_NS)
		s->accept_pause_ns = ACCEPT_PAUSE_MAX_NS;
	s->accept_resume_ns = now_ns(s) + s->accept_pause_ns;
	pc_stat_add(&stats(s)->accept_backoffs, 1);
	peer_warn(s, &s->lim_accept, &dummy, "accept: %s; not accepting for %llu ms (raise the file limit: ulimit -n, LimitNOFILE=)",
		  strerror(err), (unsigned long long)(s->accept_pause_ns / 1000000));
}

static void on_accept(struct tcp_server *s)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct sconn *c;

		if (fd < 0) {
			int err = errno;

			/* out of descriptors: one held by a handshake that has not finished
			 * goes first, as at the connection cap; with none, pause */
			if ((err == EMFILE || err == ENFILE) && (c = oldest_unready(s))) {
				pc_stat_add(&stats(s)->conns_refused, 1);
				peer_warn(s, &s->lim_conns, c, "accept: %s; closed this connection, still in its handshake, to make room",
					  strerror(err));
				conn_doom(s, c);
				continue;
			}
			if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM)
				accept_pause(s, err);
			else if (err == EAGAIN || err == EWOULDBLOCK)
				s->accept_pause_ns = 0;
			return;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		tcp_tune_socket(fd);
		c->fd = fd;
		c->paced = tcp_paces(fd);
		c->peer = PC_PEER_NONE;
		addr_text(&ss, c->addr, sizeof(c->addr));
		if (s->nr_conns >= s->max_conns && !make_room(s, c)) {
			close(fd);
			free(c);
			continue;
		}
		rx_next(s, c);
		if (watch_add(s, fd, c)) {
			close(fd);
			free(c);
			continue;
		}
		pc_stat_add(&stats(s)->conns_accepted, 1);
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->nr_conns++;
	}
}

/* Every TICK_MS: close connections without a complete frame for
 * store.idle_timeout_s (not those whose RPC a worker has), and accept again after
 * a pause. */
static void on_tick(struct tcp_server *s)
{
	uint64_t now = now_ns(s), idle = s->tf->idle_ns;
	struct sconn *c, *next;

	s->next_tick_ns = now + TICK_MS * 1000000ULL;
	if (s->accept_resume_ns && now >= s->accept_resume_ns) {
		s->accept_resume_ns = 0;
		watch_add(s, s->lfd, NULL);
	}
	if (!idle)
		return;
	for (c = s->conns; c; c = next) {
		next = c->next;
		if (c->doomed || c->rx == RX_PARKED || now - c->last_frame_ns < idle)
			continue;
		pc_stat_add(&stats(s)->idle_closed, 1);
		/* an authenticated peer between frames is only idle (it reconnects when
		 * it needs to); one that never finished its handshake or stalls inside a
		 * frame is what the limit is for */
		if (!c->ready || c->head.len || c->rx != RX_HEAD)
			peer_warn(s, &s->lim_idle, c, "no complete frame for %llu s (store.idle_timeout_s); connection closed",
				  (unsigned long long)(idle / 1000000000ULL));
		else
			pc_dbg("tcp server: %s: idle for %llu s; connection closed", c->addr,
			       (unsigned long long)(idle / 1000000000ULL));
		conn_doom(s, c);
	}
}

/* The next events; right after serving, polled without sleeping for up to
 * store.tcp_poll_us first (tcp.h): a client in the middle of a batch sends its next
 * phase within microseconds. */
static int next_events(struct tcp_server *s, struct epoll_event *evs, int max, bool served)
{
	struct pc_env *env = s->tf->base.env;
	uint64_t until = served ? pc_env_now(env) + s->tf->poll_ns : 0;
	int n;

	while (served && pc_env_now(env) < until) {
		if ((n = epoll_wait(s->epfd, evs, max, 0)) != 0)
			return n;
		sched_yield();	/* a thread that shares our CPU (the client?) goes first */
	}
	return epoll_wait(s->epfd, evs, max, TICK_MS);
}

/* The system's congestion control, where it paces (BBR), said once at start: what
 * a node sends after an idle spell waits on the pacing (store.tcp_congestion). */
static void say_pacing(int lfd, const char *node)
{
	char cc[16] = "";
	socklen_t len = sizeof(cc) - 1;

	if (tcp_paces(lfd) && !getsockopt(lfd, IPPROTO_TCP, TCP_CONGESTION, cc, &len))
		pc_info("tcp server %s: its connections use %s congestion control (the system's), which paces what a connection sends after it idled; a page transfer after small requests waits on that; store.tcp_congestion: cubic does not pace (docs/deployment.md)",
			node, cc);
}

/* Close the connections with ops in flight on [addr, addr + len): a WRITE payload
 * still arriving, READs and CASes still to answer, or a response still going out
 * straight from the region. Those ops passed the region table before the region
 * left it, and would touch memory its owner has taken back. */
static void forget_now(struct tcp_server *s, uintptr_t addr, size_t len)
{
	for (struct sconn *c = s->conns; c; c = c->next) {
		if (c->doomed || (c->rx != RX_PAYLOAD && !c->sending))
			continue;
		for (uint32_t i = 0; i < c->fr.nops; i++) {
			uintptr_t at = (uintptr_t)c->ops.where[i];

			if (!c->ops.status[i] && at >= addr && at - addr < len) {
				pc_dbg("tcp server: %s: a region its ops were on went away; connection closed",
				       c->addr);
				conn_doom(s, c);
				break;
			}
		}
	}
}

/* The wake eventfd: a stop (true), or a region going away. */
static bool on_wake(struct tcp_server *s)
{
	uint64_t v;
	bool stop;

	if (read(s->wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		pc_err("tcp server: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&s->forget_lock);
	stop = s->stopping;
	if (s->forget_asked) {
		if (!stop)	/* stopping: nothing is served any more */
			forget_now(s, s->forget_addr, s->forget_len);
		s->forget_asked = false;
		pthread_cond_broadcast(&s->forget_cond);
	}
	pthread_mutex_unlock(&s->forget_lock);
	return stop;
}

void tcp_server_forget(struct tcp_server *s, const void *addr, size_t len)
{
	uint64_t one = 1;

	if (pthread_equal(pthread_self(), s->thread)) {	/* a quick RPC's handler */
		forget_now(s, (uintptr_t)addr, len);
		return;
	}
	pthread_mutex_lock(&s->forget_one);
	pthread_mutex_lock(&s->forget_lock);
	if (!s->stopping) {
		s->forget_addr = (uintptr_t)addr;
		s->forget_len = len;
		s->forget_asked = true;
		if (write(s->wakefd, &one, sizeof(one)) != sizeof(one))
			pc_err("tcp server: cannot wake the server thread: %s", strerror(errno));
		while (s->forget_asked)
			pthread_cond_wait(&s->forget_cond, &s->forget_lock);
	}
	pthread_mutex_unlock(&s->forget_lock);
	pthread_mutex_unlock(&s->forget_one);
}

/* Free the connections this pass doomed. */
static void conn_reap(struct tcp_server *s)
{
	struct sconn *c, *next;

	for (c = s->conns; s->nr_doomed && c; c = next) {
		next = c->next;
		if (c->doomed)
			conn_close(s, c);
	}
}

static void *server_main(void *arg)
{
	struct tcp_server *s = arg;
	struct epoll_event evs[64];
	int n = 0;

	pthread_setname_np(pthread_self(), "pc-tcp-server");
	for (;;) {
		n = next_events(s, evs, 64, n > 0);

		for (int i = 0; i < n; i++) {
			struct sconn *c = evs[i].data.ptr;
			int ret = 0;

			if (evs[i].data.ptr == s) {
				if (on_wake(s))
					return NULL;	/* woken to stop */
				continue;
			}
			if (evs[i].data.ptr == &s->rpc) {
				rpc_answer_done(s);
				continue;
			}
			if (!c) {
				on_accept(s);
				continue;
			}
			if (c->doomed)
				continue;	/* closed earlier in this pass */
			if (evs[i].events & EPOLLOUT) {
				ret = flush(s, c);
				if (!ret && c->closing)
					ret = -ECONNABORTED;
			}
			if (ret == -EAGAIN)
				ret = 0;
			if (!ret && evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				ret = on_readable(s, c);
			if (ret && c->auth_pending) {
				char who[32];

				pc_stat_add(&stats(s)->auth_refused, 1);
				peer_warn(s, &s->lim_gone, c, "%s went away before authenticating (it could not check this node's proof: another cluster secret?)",
					  role_of(c->hello_msg.node, who, sizeof(who)));
			}
			if (ret)
				conn_doom(s, c);
		}
		if (now_ns(s) >= s->next_tick_ns)
			on_tick(s);
		conn_reap(s);
	}
}

static void server_free(struct tcp_server *s)
{
	pthread_cond_destroy(&s->forget_cond);
	pthread_mutex_destroy(&s->forget_lock);
	pthread_mutex_destroy(&s->forget_one);
	if (s->wakefd >= 0)
		close(s->wakefd);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->lfd >= 0)
		close(s->lfd);
	free(s);
}

int tcp_server_start(struct tcp_fabric *tf, pc_rpc_handler *h, void *arg,
		     struct tcp_server **out)
{
	const struct pc_node *node = &tf->base.topo->nodes[tf->base.self];
	struct tcp_server *s = calloc(1, sizeof(*s));
	int ret;
	const char *bind = node->bind_address[0] ? node->bind_address : node->address;

	if (!s)
		return -ENOMEM;
	s->tf = tf;
	s->lfd = s->epfd = s->wakefd = -1;
	pthread_mutex_init(&s->forget_one, NULL);
	pthread_mutex_init(&s->forget_lock, NULL);
	pthread_cond_init(&s->forget_cond, NULL);
	s->max_conns = tf->base.topo->store.max_connections;
	s->max_buffered = tf->base.topo->store.max_buffered_bytes;
	ret = tcp_listen(bind, node->port, tf->base.topo->store.tcp_congestion, &s->lfd);
	if (ret)
		goto err_close;
	if (!tf->base.topo->store.tcp_congestion[0])
		say_pacing(s->lfd, node->name);
	if (!tf->auth.on && !tcp_is_loopback(s->lfd))
		pc_warn("tcp server %s: listening on %s port %u without a cluster secret: anyone who can reach it can read and overwrite every page this node holds and act as any node; set store.auth_secret_file (docs/security.md)",
			node->name, bind, node->port);
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->epfd < 0 || s->wakefd < 0) {
		ret = -errno;
		goto err_close;
	}
	/* data.ptr tells the loop what woke it: NULL a connect, s a stop, the pool a
	 * finished RPC, anything else a connection. */
	ret = watch_add(s, s->lfd, NULL);
	if (!ret)
		ret = watch_add(s, s->wakefd, s);
	if (ret)
		goto err_close;
	ret = tcp_rpc_start(&s->rpc, h, arg, tf->base.nr_peers, &tf->base.stats.served_rpcs);
	if (ret)
		goto err_close;
	ret = watch_add(s, s->rpc.done_fd, &s->rpc);
	if (!ret)
		ret = -pthread_create(&s->thread, NULL, server_main, s);
	if (ret)
		goto err_rpc;
	*out = s;
	return 0;
err_rpc:
	tcp_rpc_stop(&s->rpc);
err_close:
	server_free(s);
	return ret;
}

void tcp_server_stop(struct tcp_server *s)
{
	uint64_t one = 1;

	pthread_mutex_lock(&s->forget_lock);
	s->stopping = true;
	pthread_mutex_unlock(&s->forget_lock);
	if (write(s->wakefd, &one, sizeof(one)) != sizeof(one))
		pc_err("tcp server: cannot wake the server thread: %s", strerror(errno));
	pthread_join(s->thread, NULL);
	tcp_rpc_stop(&s->rpc);	/* handlers running now finish; queued requests are dropped */
	while (s->conns)
		conn_close(s, s->conns);
	server_free(s);
}
