/*
 * bench_ref_io.c - socket helpers, the line/value reader and the request builder
 * of pcbench's reference clients (bench_ref_io.h).
 */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_ref_io.h"
#include "tool/tool_common.h"

int refio_connect(const char *host, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	char svc[8];
	int fd, one = 1;

	snprintf(svc, sizeof(svc), "%d", port);
	if (getaddrinfo(host, svc, &hints, &res))
		return -EHOSTUNREACH;
	fd = socket(res->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen)) {
		int e = -errno;

		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return e;
	}
	freeaddrinfo(res);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

void refio_pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

int refio_send_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r <= 0)
			return r < 0 ? -errno : -EPIPE;
		p = (const char *)p + r;
		n -= (size_t)r;
	}
	return 0;
}

int refio_recv_all(int fd, void *p, size_t n)
{
	while (n) {
		ssize_t r = recv(fd, p, n, 0);

		if (r <= 0)
			return r < 0 ? -errno : -ECONNRESET;
		p = (char *)p + r;
		n -= (size_t)r;
	}
	return 0;
}

ssize_t refio_recvmsg(int fd, struct msghdr *mh, unsigned spin_us)
{
	double until = 0;

	while (spin_us) {
		ssize_t r = recvmsg(fd, mh, MSG_DONTWAIT);

		if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return r;
		if (!until)
			until = tool_now() + spin_us * 1e-6;
		else if (tool_now() > until)
			break;
	}
	return recvmsg(fd, mh, 0);
}

/* ------------------------------------------------------------------ the reader */

/* Move what is unread to the front: the buffer's whole room is free again. */
static void rd_compact(struct refio_rd *r)
{
	if (r->off) {
		memmove(r->buf, r->buf + r->off, r->len - r->off);
		r->len -= r->off;
		r->off = 0;
	}
}

static int rd_fill(struct refio_rd *r)
{
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	rd_compact(r);
	if (r->len == sizeof(r->buf))
		return -EPROTO;
	iov = (struct iovec){ r->buf + r->len, sizeof(r->buf) - r->len };
	n = refio_recvmsg(r->fd, &mh, r->spin_us);
	if (n <= 0)
		return n < 0 ? -errno : -ECONNRESET;
	r->len += (size_t)n;
	return 0;
}

int refio_line(struct refio_rd *r, char **line, size_t *len)
{
	size_t scanned = 0;

	for (;;) {
		char *s = r->buf + r->off + scanned;
		char *nl = memchr(s, '\n', r->len - r->off - scanned);
		int ret;

		if (nl) {
			size_t n = (size_t)(nl - (r->buf + r->off));

			*line = r->buf + r->off;
			r->off += n + 1;
			if (n && nl[-1] == '\r')
				n--;
			(*line)[n] = 0;
			*len = n;
			return 0;
		}
		scanned = r->len - r->off;
		ret = rd_fill(r);
		if (ret)
			return ret;
	}
}

int refio_value(struct refio_rd *r, void *dst, size_t n)
{
	size_t have = r->len - r->off, take = have < n ? have : n;

	memcpy(dst, r->buf + r->off, take);
	r->off += take;
	if (take < n) {
		/* The rest of a large value straight into dst, and whatever follows it
		 * (its "\r\n", the next header) into the buffer, in one call. A small
		 * value's tail is the whole buffer: the next values come in the same
		 * call and are copied from cache, which costs less than a call each.
		 * A value larger than the buffer comes a buffer's worth at a time, as
		 * the store's client takes a bulk response (tcp_sock.c: the TCP work
		 * on what arrives meanwhile goes on between receives). */
		size_t tail = n > REFIO_RD_BYTES ? 16u << 10 : REFIO_RD_BYTES;
		char *d = (char *)dst + take;
		size_t left = n - take;

		r->off = r->len = 0;
		while (left) {
			size_t ask = left < REFIO_RD_BYTES ? left : REFIO_RD_BYTES;
			struct iovec iov[2] = { { d, ask }, { r->buf, tail } };
			struct msghdr mh = { .msg_iov = iov, .msg_iovlen = ask < left ? 1 : 2 };
			ssize_t got = refio_recvmsg(r->fd, &mh, r->spin_us);

			if (got <= 0)
				return got < 0 ? -errno : -ECONNRESET;
			if ((size_t)got > left) {
				r->len = (size_t)got - left;
				got = (ssize_t)left;
			}
			d += got;
			left -= (size_t)got;
		}
	}
	while (r->len - r->off < 2) {
		int ret = rd_fill(r);

		if (ret)
			return ret;
	}
	if (r->buf[r->off] != '\r' || r->buf[r->off + 1] != '\n')
		return -EPROTO;
	r->off += 2;
	return 0;
}

/* ------------------------------------------------------------------ requests */

#define HDR_MAX 96

int refio_req_init(struct refio_req *q, size_t nhdr)
{
	memset(q, 0, sizeof(*q));
	q->hcap = HDR_MAX * (nhdr + 4);
	q->hdrs = malloc(q->hcap);
	return q->hdrs ? 0 : -ENOMEM;
}

void refio_req_fini(struct refio_req *q)
{
	free(q->iov);
	free(q->hdrs);
	memset(q, 0, sizeof(*q));
}

void refio_req_reset(struct refio_req *q)
{
	q->n = 0;
	q->hoff = 0;
}

int refio_req_add(struct refio_req *q, const void *p, size_t len)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 256;
		struct iovec *iov = realloc(q->iov, cap * sizeof(*iov));

		if (!iov)
			return -ENOMEM;
		q->iov = iov;
		q->cap = cap;
	}
	/* a header right behind the last one extends it: fewer, longer iovecs */
	if (q->n && (const char *)q->iov[q->n - 1].iov_base + q->iov[q->n - 1].iov_len == p) {
		q->iov[q->n - 1].iov_len += len;
		return 0;
	}
	q->iov[q->n++] = (struct iovec){ .iov_base = (void *)p, .iov_len = len };
	return 0;
}

int refio_req_fmt(struct refio_req *q, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (q->hcap - q->hoff < HDR_MAX)
		return -ENOSPC;
	va_start(ap, fmt);
	n = vsnprintf(q->hdrs + q->hoff, HDR_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= HDR_MAX)
		return -ENOSPC;
	q->hoff += (size_t)n;
	return refio_req_add(q, q->hdrs + q->hoff - (size_t)n, (size_t)n);
}

int refio_req_send(int fd, struct refio_req *q)
{
	size_t i = 0;

	while (i < q->n) {
		struct msghdr mh = { .msg_iov = q->iov + i,
				     .msg_iovlen = q->n - i > IOV_MAX ? IOV_MAX : q->n - i };
		ssize_t r = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (r <= 0)
			return r < 0 ? -errno : -EPIPE;
		while (r > 0) {
			if ((size_t)r >= q->iov[i].iov_len) {
				r -= (ssize_t)q->iov[i++].iov_len;
			} else {
				q->iov[i].iov_base = (char *)q->iov[i].iov_base + r;
				q->iov[i].iov_len -= (size_t)r;
				r = 0;
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ connections */

int refio_conn_open(struct refio_conn **out, const char *host, int port, size_t nhdr,
		    unsigned spin_us)
{
	struct refio_conn *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	ret = refio_req_init(&c->q, nhdr);
	if (ret)
		goto err_free;
	c->rd.fd = refio_connect(host, port);
	if (c->rd.fd < 0) {
		ret = c->rd.fd;
		goto err_req;
	}
	c->rd.spin_us = spin_us;
	*out = c;
	return 0;
err_req:
	refio_req_fini(&c->q);
err_free:
	free(c);
	return ret;
}

void refio_conn_close(struct refio_conn *c)
{
	close(c->rd.fd);
	refio_req_fini(&c->q);
	free(c);
}
