/*
 * tcp_client.c - the client side of the tcp backend: connections to peers, and
 * batched posting. One post() sends the requests to every peer it names before it
 * waits for any reply, then gathers replies as they come, so a phase costs one
 * round trip whatever the number of peers. Payloads go out of and come into the
 * callers' buffers directly (sendmsg/recvmsg on iovecs); small ops' bytes (slot
 * headers, index blocks) come in as one run and are copied out (rx_small).
 *
 * Connections come from and go back to each peer's idle pool (tcp_conn.c).
 *
 * Failures stay per peer: a refused connect, a reset or the phase deadline fails
 * the ops of that peer alone; its connection is dropped and the next call
 * reconnects (the core's per-peer backoff keeps a dead peer from costing every
 * batch a connect).
 *
 * A new connection's handshake (tcp_proto.h) is part of its first flight: HELLO
 * goes out with the connect, and with a cluster secret the server's MAC is checked
 * and AUTH sent right before the first request, so authenticating costs no round
 * trip beyond HELLO's. A server that cannot prove the secret, or that refuses this
 * process's secret or placement settings, fails that peer's ops with one log line
 * saying why (rate-limited).
 *
 * Not for: serving (tcp_server.c).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/log.h"
#include "config/topology.h"
#include "tcp_client.h"
#include "tcp_conn.h"
#include "tcp_proto.h"
#include "tcp_sock.h"


static int remaining_ms(struct pc_env *env, uint64_t deadline)
{
	uint64_t now = pc_env_now(env);

	return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

/* ------------------------------------------------------------------ flights */

enum { HS_CONNECT, HS_SEND, HS_RECV_HDR, HS_RECV_BODY, HS_AUTH, HS_READY };

#define HS_BUF (sizeof(struct tcp_hdr) + sizeof(struct tcp_hello_ack) + TCP_TEXT_MAX)
enum { ST_HDR, ST_META, ST_DATA, ST_DONE };

struct flight;
typedef int build_fn(struct flight *fl);

/* A READ to be told it landed (pc_op.landed): its place in idx, the rx iovec of
 * its payload, and the one after its last. */
struct landing {
	uint32_t j;
	size_t pay, end;
};

/* Bytes one receive asks for at most while READs wait to be told they landed: each
 * page is then looked at (its checksum, by the core) right after it came in, while
 * it is in cache, not after the whole batch has pushed it out. */
#define RX_WINDOW (256u << 10)

/* A payload larger than this, of a READ that asks to be told as it arrives
 * (pc_op.arrived), comes in pieces of this size, each told as it is in, from a
 * server that paces: a bulk transfer's receive (tcp_sock.c). From one that does
 * not, a piece's receive is one more system call and no faster a transfer: the
 * payload comes with its window, told once it is in (landed). */
#define RX_PIECE TCP_RECV_SLICE

/* A WRITE to be prepared (pc_op.prepare) before its bytes go: its place in idx,
 * and the tx iovec its bytes start at. */
struct readying {
	uint32_t j;
	size_t at;
};

/* Bytes one send takes at most while WRITEs wait to be prepared: each op's last
 * bytes (its header's checksum) are filled just before it goes, so the payload that
 * read is still in cache as the kernel copies it, and the peer takes in the
 * previous window meanwhile instead of waiting for the whole batch's checksums. */
#define TX_WINDOW (1u << 20)

/* One request and its response on one connection, including the connect and HELLO
 * when the connection is new: all of it runs concurrently with the other flights. */
struct flight {
	struct tcp_fabric *tf;
	uint32_t peer;
	struct tcp_conn *conn;
	int err;
	int hs;
	int stage;
	short revents;			/* from the last poll */
	struct tcp_hello hello;		/* what this side said, for the MACs */
	uint8_t *hs_buf;		/* HS_BUF bytes: HELLO out, HELLO_ACK in, AUTH out */
	size_t hs_len, hs_got;
	build_fn *build;		/* makes the request once the peer is known */
	uint8_t expect_type;
	/* request */
	struct tcp_hdr req;
	struct iovec *tx;
	size_t txn, txi;
	struct readying *ready;		/* WRITEs with a prepare(), in tx order */
	uint32_t nready, ready_i;	/* how many; how many prepared */
	/* response */
	struct tcp_hdr resp;
	size_t got;
	void *meta;			/* statuses (ops) or the body (rpc) */
	size_t meta_len;
	struct iovec *rx;
	size_t rxn, rxi;
	size_t rx_left;			/* the data's bytes not in yet */
	struct landing *land;		/* READs with a landed() callback, in rx order */
	uint32_t nland, land_i;		/* how many; how many told */
	uint8_t *small;			/* small ops' bytes, in op order (rx_small) */
	/* what it carries */
	struct pc_op *ops;
	uint32_t *idx;			/* indices into ops of the ops it carries */
	uint32_t nidx;
	struct tcp_opdesc *desc;
	int32_t *status;
	struct pc_rpc *rpc;
};


static bool would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* Send the request, a window at a time while WRITEs wait to be prepared, preparing
 * each just before its window goes. 1: all sent; 0: would block; <0: error. */
static int flight_tx(struct flight *fl)
{
	for (;;) {
		size_t end = fl->txn, bytes = 0;
		int r;

		if (fl->ready_i < fl->nready) {
			end = fl->txi;
			while (end < fl->txn && bytes < TX_WINDOW)
				bytes += fl->tx[end++].iov_len;
			for (; fl->ready_i < fl->nready && fl->ready[fl->ready_i].at < end; fl->ready_i++)
				pc_op_prepare(&fl->ops[fl->idx[fl->ready[fl->ready_i].j]]);
		}
		r = tcp_sendv(fl->conn->fd, fl->tx, end, &fl->txi);
		if (r)
			return r == -EAGAIN ? 0 : r;
		if (fl->txi >= fl->txn)
			return 1;
	}
}

/* Whether op's bytes come in through fl->small (TCP_SMALL_OP), received in op order
 * and copied to their buffers at the end; never one a landed() awaits. */
static bool rx_small(const struct pc_op *op)
{
	return op->kind == PC_OP_CAS ||
	       (op->kind == PC_OP_READ && !op->landed && pc_op_bytes(op) <= TCP_SMALL_OP);
}

/* Queue an iovec of the receive; small ops' bytes join the one before when it is
 * the run of small ops before them (never an op a landed() waits for: it is told
 * once its own iovecs are in). */
static void rx_add(struct flight *fl, void *base, size_t len, bool small)
{
	struct iovec *last = fl->rxn ? &fl->rx[fl->rxn - 1] : NULL;

	if (!len)
		return;
	fl->rx_left += len;
	if (small && last && (uint8_t *)last->iov_base + last->iov_len == (uint8_t *)base)
		last->iov_len += len;
	else
		fl->rx[fl->rxn++] = (struct iovec){ .iov_base = base, .iov_len = len };
}

/* The statuses are in: where does each successful op's data go? */
static int ops_data_layout(struct flight *fl)
{
	uint64_t expect = (uint64_t)fl->nidx * 4;
	size_t small = 0;

	for (uint32_t j = 0; j < fl->nidx; j++) {
		const struct pc_op *op = &fl->ops[fl->idx[j]];

		if (fl->status[j] > 0 || fl->status[j] < -4095)
			return -EPROTO;
		if (!fl->status[j] && op->kind != PC_OP_WRITE && rx_small(op))
			small += op->kind == PC_OP_CAS ? 8 : pc_op_bytes(op);
	}
	fl->rx_left = 0;
	fl->rx = calloc(2 * (size_t)fl->nidx + 1, sizeof(*fl->rx));
	fl->land = calloc(fl->nidx ? fl->nidx : 1, sizeof(*fl->land));
	fl->small = small ? malloc(small) : NULL;
	if (!fl->rx || !fl->land || (small && !fl->small))
		return -ENOMEM;
	small = 0;
	for (uint32_t j = 0; j < fl->nidx; j++) {
		struct pc_op *op = &fl->ops[fl->idx[j]];

		if (fl->status[j] || op->kind == PC_OP_WRITE)
			continue;
		if (rx_small(op)) {
			size_t n = op->kind == PC_OP_CAS ? 8 : pc_op_bytes(op);

			rx_add(fl, fl->small + small, n, true);
			small += n;
			expect += n;
			continue;
		}
		if (op->kind == PC_OP_READ && op->head_len)
			rx_add(fl, op->head, op->head_len, false);
		rx_add(fl, op->local, op->kind == PC_OP_READ ? op->len : 8, false);
		if (op->kind == PC_OP_READ && op->landed)
			fl->land[fl->nland++] = (struct landing){ .j = j, .pay = fl->rxn - 1,
								  .end = fl->rxn };
		expect += pc_op_bytes(op);
	}
	return expect == fl->resp.body_len ? 0 : -EPROTO;
}

/* Every byte is in: the small ops' bytes from fl->small to their buffers. */
static void scatter_small(struct flight *fl)
{
	const uint8_t *p = fl->small;

	for (uint32_t j = 0; p && j < fl->nidx; j++) {
		struct pc_op *op = &fl->ops[fl->idx[j]];

		if (fl->status[j] || op->kind == PC_OP_WRITE || !rx_small(op))
			continue;
		if (op->kind == PC_OP_CAS) {
			memcpy(op->local, p, 8);
			p += 8;
			continue;
		}
		if (op->head_len)
			memcpy(op->head, p, op->head_len);
		p += op->head_len;
		if (op->len)
			memcpy(op->local, p, op->len);
		p += op->len;
	}
}

static int check_resp_hdr(struct flight *fl)
{
	const struct tcp_hdr *h = &fl->resp;

	if (h->magic == TCP_MAGIC && h->version == TCP_VERSION && h->type == TCP_REFUSED) {
		uint64_t skipped;

		if (log_limit_ok(&fl->tf->warn_handshake, pc_env_now(fl->tf->base.env), &skipped))
			pc_warn("tcp: node %s refused this process's authentication: %s; every node and client of a cluster needs the same store.auth_secret_file (%llu more like it not shown)",
				fl->tf->base.topo->nodes[fl->peer].name,
				strerror(h->status < 0 ? -h->status : EACCES),
				(unsigned long long)skipped);
		return h->status < 0 && h->status >= -4095 ? h->status : -EACCES;
	}
	if (h->magic != TCP_MAGIC || h->version != TCP_VERSION || h->type != fl->expect_type ||
	    h->seq != fl->req.seq)
		return -EPROTO;
	if (fl->ops) {
		if (h->count != fl->nidx || h->body_len < (uint64_t)fl->nidx * 4)
			return -EPROTO;
		fl->meta = fl->status;
		fl->meta_len = (size_t)fl->nidx * 4;
		return 0;
	}
	if (h->body_len > TCP_MAX_RPC_BODY)
		return -EPROTO;
	if (pc_msg_reserve(&fl->rpc->resp, h->body_len))
		return -ENOMEM;
	fl->meta = fl->rpc->resp.data;
	fl->meta_len = h->body_len;
	return 0;
}

/* Whether l's payload comes in pieces. */
static bool pieced(const struct flight *fl, const struct landing *l)
{
	return fl->conn->paced && fl->ops[fl->idx[l->j]].arrived &&
	       fl->rx[l->pay].iov_len > RX_PIECE;
}

/* The next piece of the payload at fl->rxi, a READ's that asks to be told as it
 * arrives; its caller told how far it is in. 0 or <0 as tcp_recvv. */
static int recv_piece(struct flight *fl, const struct pc_op *op)
{
	struct iovec *v = &fl->rx[fl->rxi], piece = { v->iov_base, RX_PIECE };
	size_t i = 0, got;
	int ret = tcp_recvv(fl->conn->fd, &piece, 1, &i, &fl->rx_left);

	got = i ? RX_PIECE : RX_PIECE - piece.iov_len;
	if (got) {
		tcp_iov_advance(fl->rx, fl->rxn, &fl->rxi, got);
		op->arrived(op->landed_arg, op, (size_t)((uint8_t *)v->iov_base - (uint8_t *)op->local));
	}
	return ret;
}

/* Receive the ops' data, a window at a time while READs wait to be told they
 * landed, telling each as soon as its bytes are in (a large payload piece by
 * piece, to a READ that asks). 0: all in; <0: -EAGAIN or an error. */
static int recv_data(struct flight *fl)
{
	for (;;) {
		const struct landing *l = fl->land_i < fl->nland ? &fl->land[fl->land_i] : NULL;
		size_t end = fl->rxi, bytes = 0, li = fl->land_i;
		int ret;

		if (l && fl->rxi == l->pay && pieced(fl, l)) {
			ret = recv_piece(fl, &fl->ops[fl->idx[l->j]]);
			if (ret)
				return ret;
			continue;
		}
		if (!l)
			end = fl->rxn;	/* every READ told: the rest at once */
		/* a window ends before a payload that comes in pieces */
		while (end < fl->rxn && bytes < RX_WINDOW) {
			while (li < fl->nland && fl->land[li].end <= end)
				li++;
			if (li < fl->nland && end == fl->land[li].pay && end > fl->rxi &&
			    pieced(fl, &fl->land[li]))
				break;
			bytes += fl->rx[end++].iov_len;
		}
		ret = tcp_recvv(fl->conn->fd, fl->rx, end, &fl->rxi,
				fl->conn->paced ? &fl->rx_left : NULL);
		for (; fl->land_i < fl->nland && fl->land[fl->land_i].end <= fl->rxi; fl->land_i++) {
			const struct pc_op *op = &fl->ops[fl->idx[fl->land[fl->land_i].j]];

			op->landed(op->landed_arg, op);
		}
		if (ret || fl->rxi >= fl->rxn)
			return ret;
	}
}

/* 1: response complete; 0: would block; <0: error. */
static int flight_rx(struct flight *fl)
{
	for (;;) {
		ssize_t r;
		int ret;

		switch (fl->stage) {
		case ST_HDR:
			r = tcp_recv_some(fl->conn->fd, (char *)&fl->resp + fl->got,
					  sizeof(fl->resp) - fl->got);
			if (r < 0)
				return r == -EAGAIN ? 0 : (int)r;
			fl->got += (size_t)r;
			if (fl->got < sizeof(fl->resp))
				continue;
			ret = check_resp_hdr(fl);
			if (ret)
				return ret;
			fl->stage = ST_META;
			fl->got = 0;
			continue;
		case ST_META:
			if (fl->got < fl->meta_len) {
				r = tcp_recv_some(fl->conn->fd, (char *)fl->meta + fl->got,
						  fl->meta_len - fl->got);
				if (r < 0)
					return r == -EAGAIN ? 0 : (int)r;
				fl->got += (size_t)r;
				if (fl->got < fl->meta_len)
					continue;
			}
			if (!fl->ops) {
				fl->rpc->resp.len = fl->meta_len;
				fl->rpc->status = fl->resp.status;
				fl->stage = ST_DONE;
				return 1;
			}
			ret = ops_data_layout(fl);
			if (ret)
				return ret;
			fl->stage = ST_DATA;
			continue;
		case ST_DATA:
			ret = recv_data(fl);
			if (ret)
				return ret == -EAGAIN ? 0 : ret;
			scatter_small(fl);
			fl->stage = ST_DONE;
			return 1;
		default:
			return 1;
		}
	}
}

/* One line about a refused handshake, rate-limited; returns err. */
__attribute__((format(printf, 3, 4)))
static int hs_refused(struct flight *fl, int err, const char *fmt, ...)
{
	struct tcp_fabric *tf = fl->tf;
	const struct pc_node *n = &tf->base.topo->nodes[fl->peer];
	uint64_t skipped;
	char why[512];
	va_list ap;

	if (!log_limit_ok(&tf->warn_handshake, pc_env_now(tf->base.env), &skipped))
		return err;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	pc_warn("tcp: node %s (%s port %u): %s (%llu more like it not shown)", n->name, n->address,
		n->port, why, (unsigned long long)skipped);
	return err;
}

/* Queue HELLO, with a secret a fresh nonce: the server's proof covers it, so a
 * HELLO_ACK answers this connection only and cannot be replayed on another (without
 * a secret nothing is proved; tcp_auth_load seeded the random source). 0 or -EIO. */
static int hs_start(struct flight *fl)
{
	struct tcp_fabric *tf = fl->tf;
	struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_HELLO,
			     .body_len = sizeof(fl->hello) + tf->placement_len };

	fl->hello = (struct tcp_hello){ .node = tf->base.any_node ? PC_PEER_TOOL : tf->base.self,
					.expect_node = tf->base.any_node ? PC_PEER_NONE : fl->peer,
					.incarnation = tf->base.incarnation,
					.fingerprint = tf->fingerprint,
					.flags = tf->auth.on ? TCP_HELLO_AUTH : 0,
					.text_len = tf->placement_len };
	if (tf->auth.on && tcp_auth_nonce(fl->hello.nonce, sizeof(fl->hello.nonce)))
		return hs_refused(fl, -EIO, "no random nonce for the handshake (OpenSSL RAND_bytes failed)");
	memcpy(fl->hs_buf, &h, sizeof(h));
	memcpy(fl->hs_buf + sizeof(h), &fl->hello, sizeof(fl->hello));
	memcpy(fl->hs_buf + sizeof(h) + sizeof(fl->hello), tf->placement, tf->placement_len);
	fl->hs_len = sizeof(h) + (size_t)h.body_len;
	fl->hs_got = 0;
	return 0;
}

/* The HELLO_ACK is in: is the server the node we meant, with our settings, and (with
 * a secret) does it prove the secret? Then queue AUTH. 0 or -errno. */
static int hs_check_ack(struct flight *fl)
{
	struct tcp_fabric *tf = fl->tf;
	struct tcp_hdr h;
	struct tcp_hello_ack ack;
	const char *text = (const char *)fl->hs_buf + sizeof(h) + sizeof(ack);
	char diff[256];

	memcpy(&h, fl->hs_buf, sizeof(h));
	memcpy(&ack, fl->hs_buf + sizeof(h), sizeof(ack));
	if (ack.text_len != h.body_len - sizeof(ack))
		return -EPROTO;
	/* Something else answers at that address: not the node we meant. */
	if (h.status == -EADDRNOTAVAIL || (ack.node != fl->peer && !tf->base.any_node))
		return -EADDRNOTAVAIL;
	if (h.status == -EACCES)
		return hs_refused(fl, -EACCES, "refused this process: %s; every node and client of a cluster needs the same store.auth_secret_file",
				  tf->auth.on ? "it has no cluster secret but this process has one" :
						"it has a cluster secret but this process has none");
	/* a tool (PC_FABRIC_ANY_NODE) knows no placement settings: it is not asked */
	if (h.status == -EBADE ||
	    (!h.status && ack.fingerprint != tf->fingerprint && !tf->base.any_node)) {
		if (!topology_placement_diff(tf->placement, tf->placement_len, text, ack.text_len,
					     diff, sizeof(diff)))
			snprintf(diff, sizeof(diff), "config fingerprint %016llx here, %016llx there",
				 (unsigned long long)tf->fingerprint,
				 (unsigned long long)ack.fingerprint);
		return hs_refused(fl, -EBADE, "refused this process: its placement settings differ: %s; use the cluster's store settings and one peercache version",
				  diff);
	}
	if (h.status)
		return h.status < 0 && h.status >= -4095 ? h.status : -EPROTO;
	if (tf->auth.on != !!(ack.flags & TCP_HELLO_AUTH) ||
	    (tf->auth.on && !tcp_auth_check(&tf->auth, TCP_AUTH_SERVER, &fl->hello, &ack, ack.mac)))
		return hs_refused(fl, -EACCES, "%s; not using it (every node of a cluster needs the same store.auth_secret_file)",
				  tf->auth.on ? "did not prove it holds the cluster secret" :
						"wants authentication but this process has no cluster secret");
	fl->conn->server_inc = ack.incarnation;
	if (!tf->auth.on)
		return 0;
	/* AUTH, sent right before the first request: no round trip of its own */
	h = (struct tcp_hdr){ .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_AUTH,
			      .body_len = TCP_MAC_BYTES };
	memcpy(fl->hs_buf, &h, sizeof(h));
	tcp_auth_mac(&tf->auth, TCP_AUTH_CLIENT, &fl->hello, &ack, fl->hs_buf + sizeof(h));
	fl->hs_len = sizeof(h) + TCP_MAC_BYTES;
	fl->hs_got = 0;
	fl->hs = HS_AUTH;
	return 0;
}

/* Send hs_buf[hs_got..hs_len). 1: all out; 0: would block; <0: error. */
static int hs_send(struct flight *fl)
{
	while (fl->hs_got < fl->hs_len) {
		ssize_t r = send(fl->conn->fd, fl->hs_buf + fl->hs_got, fl->hs_len - fl->hs_got,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (r < 0)
			return would_block() ? 0 : -errno;
		fl->hs_got += (size_t)r;
	}
	return 1;
}

/* Receive into hs_buf up to hs_len. 1: all in; 0: would block; <0: error. */
static int hs_recv(struct flight *fl)
{
	while (fl->hs_got < fl->hs_len) {
		ssize_t r = tcp_recv_some(fl->conn->fd, fl->hs_buf + fl->hs_got,
					  fl->hs_len - fl->hs_got);

		if (r < 0)
			return r == -EAGAIN ? 0 : (int)r;
		fl->hs_got += (size_t)r;
	}
	return 1;
}

/* Connect, HELLO and (with a secret) AUTH for a new connection. 1: ready; 0:
 * waiting; <0: error. */
static int flight_handshake(struct flight *fl)
{
	int r;

	if (fl->hs == HS_CONNECT) {
		int err = 0;
		socklen_t elen = sizeof(err);

		if (!(fl->revents & (POLLOUT | POLLERR | POLLHUP)))
			return 0;
		if (getsockopt(fl->conn->fd, SOL_SOCKET, SO_ERROR, &err, &elen) || err)
			return -(err ? err : errno);
		if (!fl->hs_buf && !(fl->hs_buf = malloc(HS_BUF)))
			return -ENOMEM;
		if ((r = hs_start(fl)))
			return r;
		fl->hs = HS_SEND;
	}
	if (fl->hs == HS_SEND) {
		if ((r = hs_send(fl)) <= 0)
			return r;
		fl->hs = HS_RECV_HDR;
		fl->hs_len = sizeof(struct tcp_hdr);
		fl->hs_got = 0;
	}
	if (fl->hs == HS_RECV_HDR) {
		struct tcp_hdr h;

		if ((r = hs_recv(fl)) <= 0)
			return r;
		memcpy(&h, fl->hs_buf, sizeof(h));
		if (h.magic != TCP_MAGIC || h.version != TCP_VERSION || h.type != TCP_HELLO_ACK ||
		    h.body_len < sizeof(struct tcp_hello_ack) ||
		    h.body_len > sizeof(struct tcp_hello_ack) + TCP_TEXT_MAX)
			return -EPROTO;
		fl->hs = HS_RECV_BODY;
		fl->hs_len = sizeof(h) + (size_t)h.body_len;
	}
	if (fl->hs == HS_RECV_BODY) {
		if ((r = hs_recv(fl)) <= 0)
			return r;
		fl->hs = HS_READY;
		if ((r = hs_check_ack(fl)))
			return r;
	}
	if (fl->hs == HS_AUTH) {
		if ((r = hs_send(fl)) <= 0)
			return r;
		fl->hs = HS_READY;
	}
	return 1;
}

/* Move a flight as far as it goes without blocking. Returns the poll events it
 * waits for, or 0 when it is over (done or failed). */
static short flight_step(struct flight *fl)
{
	int r;

	if (fl->hs != HS_READY) {
		r = flight_handshake(fl);
		if (r < 0) {
			fl->err = r;
			return 0;
		}
		if (!r)
			return fl->hs == HS_RECV_HDR || fl->hs == HS_RECV_BODY ? POLLIN : POLLOUT;
		r = fl->build(fl);
		if (r) {
			fl->err = r;
			return 0;
		}
		if (!fl->txn) {
			fl->stage = ST_DONE;	/* nothing left to send */
			return 0;
		}
	}
	if (fl->txi < fl->txn) {
		r = flight_tx(fl);
		if (r < 0) {
			fl->err = r;
			return 0;
		}
	}
	r = flight_rx(fl);
	if (r) {
		if (r < 0)
			fl->err = r;
		return 0;
	}
	return POLLIN | (fl->txi < fl->txn ? POLLOUT : 0);
}

/* Where a flight's bytes stand: changes whenever a send or receive moved any (a
 * partial one advances its iovec's base). */
static uintptr_t progress_of(const struct flight *fl)
{
	uintptr_t p = fl->txi + fl->got + fl->rxi + ((uintptr_t)fl->stage << 8) + fl->hs_got;

	if (fl->txi < fl->txn)
		p += (uintptr_t)fl->tx[fl->txi].iov_base;
	if (fl->rx && fl->rxi < fl->rxn)
		p += (uintptr_t)fl->rx[fl->rxi].iov_base;
	return p;
}

/* Step the flights without sleeping for up to store.tcp_poll_us (tcp.h) past the
 * last byte that moved: each step's non-blocking send or receive is the poll, one
 * call where poll() and then the I/O would be two. Only flights past their
 * handshake spin (a connect in progress is for poll() to report). Returns whether
 * every flight is over; false also when the time ran out (the spin's or the
 * phase's) or a flight is not ready to spin. */
static bool spin_flights(struct tcp_fabric *tf, struct flight *fls, size_t nf, uint64_t deadline)
{
	uint64_t until = pc_env_now(tf->base.env) + tf->poll_ns;

	if (!tf->poll_ns)
		return false;
	for (unsigned round = 1;; round++) {
		bool live = false, moved = false;
		uint64_t now;

		for (size_t i = 0; i < nf; i++) {
			struct flight *fl = &fls[i];
			uintptr_t before;

			if (!fl->conn || fl->err || fl->stage == ST_DONE)
				continue;
			if (fl->hs != HS_READY)
				return false;
			before = progress_of(fl);
			flight_step(fl);
			live |= !fl->err && fl->stage != ST_DONE;
			moved |= progress_of(fl) != before;
		}
		if (!live)
			return true;
		now = pc_env_now(tf->base.env);
		if (moved)
			until = now + tf->poll_ns;
		/* a peer that trickles bytes still ends its phase at the deadline */
		if (now >= until || now >= deadline)
			return false;
		if (!(round % 16))
			sched_yield();	/* a thread that shares our CPU (the server?) goes first */
	}
}

/* Drive every flight to completion or to the deadline. The first pass sends every
 * ready request before anything waits: a phase is one round trip, not one per peer. */
static void run_flights(struct tcp_fabric *tf, struct flight *fls, size_t nf, uint64_t deadline)
{
	struct pollfd *pfd = calloc(nf ? nf : 1, sizeof(*pfd));
	size_t *map = calloc(nf ? nf : 1, sizeof(*map));

	for (;;) {
		size_t np = 0;
		int ms;

		for (size_t i = 0; i < nf; i++) {
			struct flight *fl = &fls[i];
			short ev;

			if (!fl->conn || fl->err || fl->stage == ST_DONE)
				continue;
			if (!pfd || !map) {
				fl->err = -ENOMEM;
				continue;
			}
			ev = flight_step(fl);
			fl->revents = 0;
			if (!ev)
				continue;
			pfd[np] = (struct pollfd){ .fd = fl->conn->fd, .events = ev };
			map[np++] = i;
		}
		if (!np)
			break;
		ms = remaining_ms(tf->base.env, deadline);
		if (ms && spin_flights(tf, fls, nf, deadline))
			break;
		/* a flight the spin finished is not in pfd's events any more: skip it */
		if (!ms || poll(pfd, np, ms) == 0) {
			for (size_t k = 0; k < np; k++) {
				struct flight *fl = &fls[map[k]];

				if (!fl->err && fl->stage != ST_DONE)
					fl->err = -ETIMEDOUT;
			}
			break;
		}
		for (size_t k = 0; k < np; k++)
			fls[map[k]].revents = pfd[k].revents;
	}
	free(pfd);
	free(map);
}

/* Hand the connection back, or drop it when its stream state is unknown. */
static void flight_finish(struct flight *fl)
{
	free(fl->hs_buf);
	fl->hs_buf = NULL;
	if (!fl->conn)
		return;
	if (fl->err || fl->stage != ST_DONE || fl->hs != HS_READY)
		tcp_conn_drop(fl->conn);
	else
		tcp_conn_put(fl->tf, fl->peer, fl->conn);
	fl->conn = NULL;
}

static int flight_start(struct tcp_fabric *tf, struct flight *fl, uint32_t peer, build_fn *b)
{
	bool fresh;
	int r;

	fl->tf = tf;
	fl->peer = peer;
	fl->build = b;
	r = tcp_conn_get(tf, peer, &fl->conn, &fresh);
	if (r)
		return r;
	fl->hs = fresh ? HS_CONNECT : HS_READY;
	if (fresh)
		return 0;
	r = b(fl);
	if (!r && !fl->txn)
		fl->stage = ST_DONE;	/* nothing left to send */
	return r;
}

static uint64_t deadline_of(struct pc_fabric *f)
{
	return pc_env_now(f->env) + (uint64_t)f->timeout_ms * 1000000ULL;
}

/* Build an OPS request, leaving out ops addressed to an earlier incarnation. */
static int build_ops(struct flight *fl)
{
	struct pc_op *ops = fl->ops;
	uint32_t n = fl->nidx, keep = 0;
	size_t t = 0;

	fl->desc = calloc(n, sizeof(*fl->desc));
	fl->status = calloc(n, sizeof(*fl->status));
	fl->tx = calloc(2 * (size_t)n + 2, sizeof(*fl->tx));
	fl->ready = calloc(n ? n : 1, sizeof(*fl->ready));
	if (!fl->desc || !fl->status || !fl->tx || !fl->ready)
		return -ENOMEM;
	for (uint32_t j = 0; j < n; j++) {
		struct pc_op *op = &ops[fl->idx[j]];

		if (op->peer_inc && op->peer_inc != fl->conn->server_inc) {
			op->status = -ESTALE;	/* the peer restarted since */
			continue;
		}
		fl->idx[keep] = fl->idx[j];
		fl->desc[keep++] = (struct tcp_opdesc){ .kind = op->kind, .rkey = op->rkey,
							.raddr = op->raddr,
							.len = (uint32_t)pc_op_bytes(op),
							.compare = op->compare, .swap = op->swap };
	}
	fl->nidx = keep;
	if (!keep)
		return 0;
	fl->req = (struct tcp_hdr){ .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS,
				    .count = keep, .seq = ++fl->conn->seq,
				    .body_len = (uint64_t)keep * sizeof(*fl->desc) };
	fl->tx[t++] = (struct iovec){ .iov_base = &fl->req, .iov_len = sizeof(fl->req) };
	fl->tx[t++] = (struct iovec){ .iov_base = fl->desc, .iov_len = keep * sizeof(*fl->desc) };
	for (uint32_t j = 0; j < keep; j++) {
		struct pc_op *op = &ops[fl->idx[j]];

		if (op->kind != PC_OP_WRITE)
			continue;
		if (op->prepare)
			fl->ready[fl->nready++] = (struct readying){ .j = j, .at = t };
		if (op->head_len)
			fl->tx[t++] = (struct iovec){ .iov_base = op->head, .iov_len = op->head_len };
		if (op->len)
			fl->tx[t++] = (struct iovec){ .iov_base = op->local, .iov_len = op->len };
		fl->req.body_len += pc_op_bytes(op);
	}
	fl->txn = t;
	fl->expect_type = TCP_OPS_RESP;
	return 0;
}

int tcp_post(struct pc_fabric *f, struct pc_op *ops, size_t n)
{
	struct tcp_fabric *tf = to_tcp(f);
	uint64_t deadline = deadline_of(f);
	uint32_t *count = calloc(f->nr_peers + 1, sizeof(*count));
	uint32_t *order = malloc(n * sizeof(*order));
	struct flight *fls = NULL;
	size_t nf = 0;
	int ret = 0;

	if (!count || !order) {
		ret = -ENOMEM;
		goto out;
	}
	/* Group the ops by peer (a counting sort keeps each peer's ops in order). */
	for (size_t i = 0; i < n; i++)
		count[ops[i].peer + 1]++;
	for (uint32_t p = 0; p < f->nr_peers; p++) {
		nf += count[p + 1] > 0;
		count[p + 1] += count[p];
	}
	for (size_t i = 0; i < n; i++)
		order[count[ops[i].peer]++] = (uint32_t)i;
	fls = calloc(nf, sizeof(*fls));
	if (!fls) {
		ret = -ENOMEM;
		goto out;
	}
	nf = 0;
	for (size_t i = 0; i < n;) {
		struct flight *fl = &fls[nf++];
		size_t j = i;

		while (j < n && ops[order[j]].peer == ops[order[i]].peer)
			j++;
		fl->ops = ops;
		fl->idx = &order[i];
		fl->nidx = (uint32_t)(j - i);
		fl->err = fl->nidx > TCP_MAX_OPS ? -E2BIG :
			  flight_start(tf, fl, ops[order[i]].peer, build_ops);
		i = j;
	}
	run_flights(tf, fls, nf, deadline);
	for (size_t i = 0; i < nf; i++) {
		struct flight *fl = &fls[i];

		for (uint32_t j = 0; j < fl->nidx; j++)
			ops[fl->idx[j]].status = fl->err ? fl->err :
						 fl->stage == ST_DONE ? fl->status[j] : -EIO;
		if (fl->err)
			pc_dbg("tcp: peer %u: %s", fl->peer, strerror(-fl->err));
		flight_finish(fl);
		free(fl->desc);
		free(fl->status);
		free(fl->tx);
		free(fl->ready);
		free(fl->rx);
		free(fl->land);
		free(fl->small);
	}
out:
	free(fls);
	free(order);
	free(count);
	return ret;
}

static int build_rpc(struct flight *fl)
{
	fl->req = (struct tcp_hdr){ .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_RPC,
				    .count = fl->rpc->opcode, .body_len = fl->rpc->req_len,
				    .seq = ++fl->conn->seq };
	fl->tx[0] = (struct iovec){ .iov_base = &fl->req, .iov_len = sizeof(fl->req) };
	fl->tx[1] = (struct iovec){ .iov_base = (void *)fl->rpc->req, .iov_len = fl->rpc->req_len };
	fl->txn = 2;
	fl->expect_type = TCP_RPC_RESP;
	return 0;
}

int tcp_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n)
{
	struct tcp_fabric *tf = to_tcp(f);
	uint32_t wait_ms = 0;
	uint64_t deadline;
	struct flight *fls = calloc(n ? n : 1, sizeof(*fls));
	struct iovec *tx = calloc(2 * (n ? n : 1), sizeof(*tx));

	if (!fls || !tx) {
		free(fls);
		free(tx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t t = rpcs[i].timeout_ms ? rpcs[i].timeout_ms : f->timeout_ms;

		wait_ms = t > wait_ms ? t : wait_ms;
	}
	deadline = pc_env_now(f->env) + (uint64_t)wait_ms * 1000000ULL;
	for (size_t i = 0; i < n; i++) {
		struct flight *fl = &fls[i];

		fl->rpc = &rpcs[i];
		fl->tx = &tx[2 * i];
		fl->err = rpcs[i].req_len > TCP_MAX_RPC_BODY ? -EMSGSIZE :
			  flight_start(tf, fl, rpcs[i].peer, build_rpc);
	}
	run_flights(tf, fls, n, deadline);
	for (size_t i = 0; i < n; i++) {
		if (fls[i].err || fls[i].stage != ST_DONE) {
			rpcs[i].status = fls[i].err ? fls[i].err : -EIO;
			rpcs[i].resp.len = 0;
		}
		flight_finish(&fls[i]);
	}
	free(fls);
	free(tx);
	return 0;
}
