/*
 * tcp_server.c - the node's server thread: one epoll loop that accepts connections,
 * receives their frames, emulates one-sided READ/WRITE/CAS on the registered
 * regions, and writes every response. RPCs it hands to the workers (tcp_rpc.c)
 * unless the handler answers them without blocking.
 *
 * Every frame passes the parser (tcp_frame.c) before the server acts on it, and
 * every op the region table (key, bounds, rights) before memory is touched; a
 * refused op gets its own error status. A malformed frame closes that one
 * connection; the server keeps serving the rest.
 *
 * The response writer is here, not with the workers: only this thread touches a
 * connection's socket and its EPOLLOUT interest, so connections need no lock, and
 * a worker hands its answer back through the done list.
 *
 * Not for: the client side (tcp_client.c), the checks on a frame's shape
 * (tcp_frame.c), running RPC handlers (tcp_rpc.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <stddef.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/log.h"
#include "config/topology.h"
#include "tcp_frame.h"
#include "tcp_proto.h"
#include "tcp_rpc.h"
#include "tcp_server.h"
#include "tcp_sock.h"

#define RX_CHUNK (1u << 20)	/* grow receive buffers as bytes arrive, not as announced */
#define DISCARD_BYTES 65536

/* What a connection waits for: the next frame's header and head, the WRITE payloads
 * of an OPS frame, or (parked) a worker's answer to its RPC. */
enum rx_state { RX_HEAD, RX_PAYLOAD, RX_PARKED };

struct sconn {
	int fd;
	bool hello;
	uint32_t peer;
	enum rx_state rx;
	struct pc_msg head;		/* the frame's header and head, as they arrive */
	size_t need;			/* head bytes to have before parsing again */
	struct tcp_frame fr;		/* the frame being served */
	/* the OPS frame being served */
	uint8_t **where;
	int32_t *status;
	uint32_t cap_ops;
	struct iovec *rxv;		/* where the WRITE payloads go, in order */
	size_t rxn, rxi, rxcap;
	/* the response being sent */
	struct pc_msg out;
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
	/* A connection whose RPC is with a worker is parked: out of epoll until the
	 * loop takes the job back from the done list and answers it. */
	struct tcp_rpc_pool rpc;
	uint8_t discard[DISCARD_BYTES];
};

static struct pc_fabric_stats *stats(struct tcp_server *s)
{
	return &s->tf->base.stats;
}

static void conn_close(struct tcp_server *s, struct sconn *c)
{
	pc_stat_add(&stats(s)->conns_closed, 1);
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pc_msg_free(&c->head);
	pc_msg_free(&c->out);
	pc_msg_free(&c->rpc.resp);
	free(c->where);
	free(c->status);
	free(c->iov);
	free(c->rxv);
	free(c);
}

/* A malformed frame: count it, say why at debug level, close this connection only. */
static int bad_frame(struct tcp_server *s, struct sconn *c, const char *why)
{
	pc_stat_add(&stats(s)->bad_frames, 1);
	pc_dbg("tcp server: closing connection from node %d: %s", (int)c->peer, why);
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

static int iovec_add(struct iovec **v, size_t *n, size_t *cap, void *base, size_t len)
{
	if (!len)
		return 0;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct iovec *nv = realloc(*v, c * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = (struct iovec){ .iov_base = base, .iov_len = len };
	return 0;
}

/* Queue bytes of the response. */
static int iov_push(struct sconn *c, void *base, size_t len)
{
	return iovec_add(&c->iov, &c->iovcnt, &c->iovcap, base, len);
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
	return 0;
}

/* Done with the frame: wait for the next one's header. */
static void rx_next(struct sconn *c)
{
	c->rx = RX_HEAD;
	c->head.len = 0;
	c->need = sizeof(struct tcp_hdr);
}

/* Done with the frame, its response queued (ret 0) or not (ret -errno): wait for
 * the next frame and send what is queued. 0, or -errno to close. */
static int frame_done(struct tcp_server *s, struct sconn *c, int ret)
{
	rx_next(c);
	if (ret)
		return ret;
	ret = flush(s, c);
	return ret == -EAGAIN ? 0 : ret;
}

static int start_response(struct sconn *c, uint8_t type, uint32_t count, int32_t status,
			  uint64_t body_len)
{
	struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = type,
			     .count = count, .status = status, .body_len = body_len,
			     .seq = c->fr.hdr.seq };

	c->out.len = 0;
	c->iovcnt = c->iov_i = 0;
	return pc_msg_append(&c->out, &h, sizeof(h));
}

static int on_hello(struct tcp_server *s, struct sconn *c)
{
	const struct tcp_hello *hello = &c->fr.hello;
	struct tcp_hello_ack ack = { .node = s->tf->base.self,
				     .incarnation = s->tf->base.incarnation };
	int32_t status = 0;

	/* A client that meant another node (stale address, port reuse) is told so; one
	 * that takes whichever node answers (PC_FABRIC_ANY_NODE) is not. */
	if (hello->expect_node != s->tf->base.self && hello->expect_node != PC_PEER_NONE)
		status = -EADDRNOTAVAIL;
	c->hello = true;
	c->peer = hello->node;
	if (start_response(c, TCP_HELLO_ACK, 0, status, sizeof(ack)) ||
	    pc_msg_append(&c->out, &ack, sizeof(ack)) ||
	    iov_push(c, c->out.data, c->out.len))
		return -ENOMEM;
	return 0;
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
	if (op < 64 && (s->tf->base.quick_rpcs >> op & 1)) {
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
			conn_close(s, c);
	}
}

/* The OPS head is in and parsed: check every op against the region table, and
 * say where each WRITE payload lands. */
static int on_ops(struct tcp_server *s, struct sconn *c)
{
	const struct tcp_opdesc *d = (const struct tcp_opdesc *)c->fr.body;
	uint32_t nops = c->fr.nops;

	if (nops > c->cap_ops) {
		uint8_t **w = realloc(c->where, nops * sizeof(*w));
		int32_t *st = w ? realloc(c->status, nops * sizeof(*st)) : NULL;

		if (w)
			c->where = w;
		if (!st)
			return -ENOMEM;
		c->status = st;
		c->cap_ops = nops;
	}
	c->rxn = c->rxi = 0;
	for (uint32_t i = 0; i < nops; i++) {
		c->where[i] = NULL;
		c->status[i] = region_table_check(&s->tf->regions, d[i].rkey, d[i].raddr, d[i].len,
						  region_access_for(d[i].kind), &c->where[i]);
		if (c->status[i])
			region_count_refused(stats(s), c->status[i]);
		if (d[i].kind != PC_OP_WRITE)
			continue;
		/* WRITE payloads land in their regions; refused ones in the discard buffer. */
		for (uint32_t off = 0; off < d[i].len;) {
			uint32_t n = c->status[i] ? (d[i].len - off < DISCARD_BYTES ? d[i].len - off :
							DISCARD_BYTES) : d[i].len;

			if (iovec_add(&c->rxv, &c->rxn, &c->rxcap,
				      c->status[i] ? s->discard : c->where[i], n))
				return -ENOMEM;
			off += n;
		}
	}
	return 0;
}

/* Every WRITE landed: run the CASes and queue statuses, READ bytes, CAS values. */
static int on_ops_done(struct tcp_server *s, struct sconn *c)
{
	const struct tcp_opdesc *d = (const struct tcp_opdesc *)c->fr.body;
	uint32_t nops = c->fr.nops;
	uint64_t body = (uint64_t)nops * 4;
	struct region_tally served = { 0 };
	size_t cas_off;

	for (uint32_t i = 0; i < nops; i++)
		if (!c->status[i])
			body += d[i].kind == PC_OP_READ ? d[i].len : d[i].kind == PC_OP_CAS ? 8 : 0;
	if (start_response(c, TCP_OPS_RESP, nops, 0, body) ||
	    pc_msg_append(&c->out, c->status, (size_t)nops * 4))
		return -ENOMEM;
	cas_off = c->out.len;
	for (uint32_t i = 0; i < nops; i++) {
		uint64_t old;

		if (c->status[i] || d[i].kind != PC_OP_CAS)
			continue;
		old = region_cas(c->where[i], d[i].compare, d[i].swap);
		if (pc_msg_append(&c->out, &old, 8))
			return -ENOMEM;
	}
	/* out.data is final now; point the iovecs into it and into the regions. */
	if (iov_push(c, c->out.data, cas_off))
		return -ENOMEM;
	for (uint32_t i = 0; i < nops; i++) {
		if (c->status[i])
			continue;
		region_tally_op(&served, d[i].kind, d[i].len);
		if (d[i].kind == PC_OP_READ && iov_push(c, c->where[i], d[i].len))
			return -ENOMEM;
		if (d[i].kind == PC_OP_CAS) {
			if (iov_push(c, (char *)c->out.data + cas_off, 8))
				return -ENOMEM;
			cas_off += 8;
		}
	}
	region_tally_flush(stats(s), &served);
	return 0;
}

/* The frame's head is in and valid: act on it. Returns 0, or -errno to close. */
static int on_frame(struct tcp_server *s, struct sconn *c)
{
	int ret;

	switch (c->fr.hdr.type) {
	case TCP_HELLO:
		ret = on_hello(s, c);
		break;
	case TCP_RPC:
		return on_rpc(s, c);	/* parked: rpc_answer_done() resumes it */
	default:
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
	struct tcp_frame_ctx ctx = { .hello = c->hello, .nr_nodes = s->tf->base.nr_peers };

	for (;;) {
		size_t want = c->need - c->head.len;
		ssize_t r;

		if (want > RX_CHUNK)
			want = RX_CHUNK;
		if (pc_msg_reserve(&c->head, want))
			return -ENOMEM;
		r = tcp_recv_some(c->fd, (char *)c->head.data + c->head.len, want);
		if (r < 0)
			return (int)r;
		c->head.len += (size_t)r;
		if (c->head.len < c->need)
			continue;
		r = tcp_frame_parse(&ctx, c->head.data, c->head.len, &c->fr);
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

	ret = tcp_recvv(c->fd, c->rxv, c->rxn, &c->rxi);
	if (ret)
		return ret;
	return frame_done(s, c, on_ops_done(s, c));
}

/* Read and act until the socket is drained, a response is waiting to go out, or
 * an RPC is with a worker (the loop must not touch the connection then). */
static int on_readable(struct tcp_server *s, struct sconn *c)
{
	for (;;) {
		int ret;

		if (c->sending || c->rx == RX_PARKED)
			return 0;	/* one request at a time: read on once it is answered */
		ret = c->rx == RX_HEAD ? rx_head(s, c) : rx_payload(s, c);
		if (ret)
			return ret == -EAGAIN ? 0 : ret;
	}
}

static void on_accept(struct tcp_server *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct sconn *c;

		if (fd < 0)
			return;
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		tcp_tune_socket(fd);
		c->fd = fd;
		c->peer = PC_PEER_NONE;
		rx_next(c);
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
	return epoll_wait(s->epfd, evs, max, -1);
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

			if (evs[i].data.ptr == s)
				return NULL;	/* woken to stop */
			if (evs[i].data.ptr == &s->rpc) {
				rpc_answer_done(s);
				continue;
			}
			if (!c) {
				on_accept(s);
				continue;
			}
			if (evs[i].events & EPOLLOUT)
				ret = flush(s, c);
			if (ret == -EAGAIN)
				ret = 0;
			if (!ret && evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
				ret = on_readable(s, c);
			if (ret)
				conn_close(s, c);
		}
	}
}

static void close_fds(struct tcp_server *s)
{
	if (s->wakefd >= 0)
		close(s->wakefd);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->lfd >= 0)
		close(s->lfd);
}

int tcp_server_start(struct tcp_fabric *tf, pc_rpc_handler *h, void *arg,
		     struct tcp_server **out)
{
	const struct pc_node *node = &tf->base.topo->nodes[tf->base.self];
	struct tcp_server *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->tf = tf;
	s->lfd = s->epfd = s->wakefd = -1;
	ret = tcp_listen(node->address, node->port, &s->lfd);
	if (ret)
		goto err_close;
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
	ret = tcp_rpc_start(&s->rpc, h, arg, &tf->base.stats.served_rpcs);
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
	close_fds(s);
	free(s);
	return ret;
}

void tcp_server_stop(struct tcp_server *s)
{
	uint64_t one = 1;

	if (write(s->wakefd, &one, sizeof(one)) != sizeof(one))
		pc_err("tcp server: cannot wake the server thread: %s", strerror(errno));
	pthread_join(s->thread, NULL);
	tcp_rpc_stop(&s->rpc);	/* handlers running now finish; queued requests are dropped */
	while (s->conns)
		conn_close(s, s->conns);
	close_fds(s);
	free(s);
}
