/*
 * tcp_sock.c - socket helpers shared by the tcp backend's client and server
 * (tcp_sock.h): resolve, tune, listen, connect, and non-blocking vectored I/O.
 *
 * Not for: frames or connection state; those belong to tcp_client.c and
 * tcp_server.c.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcp_sock.h"

#define IOV_BATCH 1024		/* iovecs per sendmsg/recvmsg (Linux's IOV_MAX) */

/* A transfer with more than RECV_BULK_BYTES to come, from a sender that paces
 * (tcp_paces), is taken in at most TCP_RECV_SLICE (tcp_sock.h) a receive. While a
 * receive copies, the socket is the receiver's: what arrives meanwhile waits in its
 * backlog, and the TCP work on it (the ACKs) runs once the copy has emptied the
 * queue or the call returns. A pacing sender (BBR) sends at the rate the ACKs
 * show it; receives of one loopback or TSO segment kept its megabytes moving where
 * receives of all there was slowed them. A sender that does not pace (cubic) is
 * held back by nothing but its window, and there each receive is one more system
 * call on the transfer's path: its transfers are taken in as few calls as they can
 * be, as is every transfer that fits the sender's buffer. */
#define RECV_BULK_BYTES (1u << 20)

int tcp_resolve(const char *host, uint16_t port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV }, *res;
	char service[8];
	int ret;

	snprintf(service, sizeof(service), "%u", port);
	ret = getaddrinfo(host, service, &hints, &res);
	if (ret)
		return ret == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

void tcp_tune_socket(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int tcp_set_congestion(int fd, const char *cc)
{
	if (!cc || !cc[0])
		return 0;
	return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) ? -errno : 0;
}

bool tcp_paces(int fd)
{
	char cc[16] = "";
	socklen_t len = sizeof(cc) - 1;

	return !getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &len) && !strncmp(cc, "bbr", 3);
}

/* The first line of a /proc/sys file into buf ("?" when it cannot be read). */
static void sysctl_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(buf, (int)len, f))
		snprintf(buf, len, "?");
	buf[strcspn(buf, "\n")] = 0;
	if (f)
		fclose(f);
}

int tcp_congestion_check(const char *cc, char *err, size_t errlen)
{
	char have[256];
	int ret, s;

	if (!cc || !cc[0])
		return 0;
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	ret = tcp_set_congestion(s, cc);
	close(s);
	if (ret == -EPERM) {
		sysctl_line("/proc/sys/net/ipv4/tcp_allowed_congestion_control", have, sizeof(have));
		snprintf(err, errlen, "store.tcp_congestion: '%s' is not allowed for this process (net.ipv4.tcp_allowed_congestion_control: %s); name one of those, or leave the key out for the system's",
			 cc, have);
	} else if (ret) {
		sysctl_line("/proc/sys/net/ipv4/tcp_available_congestion_control", have, sizeof(have));
		snprintf(err, errlen, "store.tcp_congestion: '%s': %s (this kernel offers: %s); name one of those, or leave the key out for the system's",
			 cc, ret == -ENOENT ? "no such congestion control" : strerror(-ret), have);
	}
	return ret;
}

int tcp_listen(const char *host, uint16_t port, const char *cc, int *fd)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	int one = 1, rcvbuf = TCP_RCVBUF_BYTES, ret, s;

	ret = tcp_resolve(host, port, &ss, &len);
	if (ret)
		return ret;
	s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	ret = tcp_set_congestion(s, cc);
	if (ret) {
		close(s);
		return ret;
	}
	if (bind(s, (struct sockaddr *)&ss, len) || listen(s, 128)) {
		ret = -errno;
		close(s);
		return ret;
	}
	*fd = s;
	return 0;
}

bool tcp_is_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return false;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

int tcp_connect_start(const struct sockaddr_storage *ss, socklen_t len, const char *cc, int *fd)
{
	int ret, s = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -errno;
	tcp_tune_socket(s);
	ret = tcp_set_congestion(s, cc);
	if (ret || (connect(s, (const struct sockaddr *)ss, len) && errno != EINPROGRESS)) {
		ret = ret ? ret : -errno;
		close(s);
		return ret;
	}
	*fd = s;
	return 0;
}

int tcp_iov_add(struct iovec **v, size_t *n, size_t *cap, void *base, size_t len)
{
	struct iovec *last = *n ? &(*v)[*n - 1] : NULL;

	if (!len)
		return 0;
	if (last && (uint8_t *)last->iov_base + last->iov_len == (uint8_t *)base) {
		last->iov_len += len;
		return 0;
	}
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

void tcp_iov_advance(struct iovec *v, size_t n, size_t *i, size_t r)
{
	while (r && *i < n) {
		if (r >= v[*i].iov_len) {
			r -= v[*i].iov_len;
			(*i)++;
		} else {
			v[*i].iov_base = (char *)v[*i].iov_base + r;
			v[*i].iov_len -= r;
			r = 0;
		}
	}
	while (*i < n && !v[*i].iov_len)
		(*i)++;
}

static struct msghdr batch_of(struct iovec *v, size_t n, size_t i)
{
	return (struct msghdr){ .msg_iov = v + i, .msg_iovlen = n - i > IOV_BATCH ? IOV_BATCH : n - i };
}

int tcp_sendv(int fd, struct iovec *v, size_t n, size_t *i)
{
	tcp_iov_advance(v, n, i, 0);	/* past empty entries: a send of none would spin */
	while (*i < n) {
		struct msghdr mh = batch_of(v, n, *i);
		ssize_t r = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		}
		tcp_iov_advance(v, n, i, (size_t)r);
	}
	return 0;
}

/* What a recv or recvmsg returned, as this file returns it: the bytes, or -errno
 * (-EAGAIN for would-block, -ECONNRESET for end of stream, -EINTR to try again). */
static ssize_t rx_result(ssize_t r)
{
	if (r > 0)
		return r;
	if (!r)
		return -ECONNRESET;
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

ssize_t tcp_recv_some(int fd, void *buf, size_t len)
{
	ssize_t r;

	do
		r = rx_result(recv(fd, buf, len, MSG_DONTWAIT));
	while (r == -EINTR);
	return r;
}

/* Shorten mh to its first max bytes by cutting the iovec they end in short; that
 * iovec, its whole length in *whole, or NULL when mh holds no more than max. */
static struct iovec *clip(struct msghdr *mh, size_t max, size_t *whole)
{
	size_t sum = 0;

	for (size_t k = 0; k < mh->msg_iovlen; k++) {
		struct iovec *e = &mh->msg_iov[k];

		if (e->iov_len >= max - sum) {
			*whole = e->iov_len;
			e->iov_len = max - sum;
			mh->msg_iovlen = k + 1;
			return e;
		}
		sum += e->iov_len;
	}
	return NULL;
}

int tcp_recvv(int fd, struct iovec *v, size_t n, size_t *i, size_t *left)
{
	size_t unsliced = 0;

	left = left ? left : &unsliced;
	tcp_iov_advance(v, n, i, 0);	/* past empty entries: a receive of none reads as EOF */
	while (*i < n) {
		struct msghdr mh = batch_of(v, n, *i);
		size_t whole = 0;
		struct iovec *cut = *left > RECV_BULK_BYTES ? clip(&mh, TCP_RECV_SLICE, &whole) : NULL;
		ssize_t r = rx_result(recvmsg(fd, &mh, MSG_DONTWAIT));

		if (cut)
			cut->iov_len = whole;
		if (r == -EINTR)
			continue;
		if (r < 0)
			return (int)r;
		*left -= (size_t)r < *left ? (size_t)r : *left;
		tcp_iov_advance(v, n, i, (size_t)r);
	}
	return 0;
}
