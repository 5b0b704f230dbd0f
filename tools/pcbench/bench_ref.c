/*
 * bench_ref.c - reference peers for pcbench: a raw TCP stream and minimal Redis
 * (RESP) and memcached (text protocol) clients, each receiving values straight
 * into page buffers as a fair client would.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_ref.h"
#include "tool/tool_common.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double ref_percentile(double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static int tcp_connect(const char *host, int port)
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

static int send_all(int fd, const void *p, size_t n)
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

static int recv_all(int fd, void *p, size_t n)
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

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

double ref_raw_tcp(const char *host, uint64_t total, size_t chunk, size_t span, int cpu)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), fd, status;
	char *buf = malloc(chunk);
	double t0, t;
	pid_t pid;

	if (lfd < 0 || !buf || inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len)) {
		free(buf);
		if (lfd >= 0)
			close(lfd);
		return -EADDRNOTAVAIL;
	}
	memset(buf, 0x5a, chunk);
	pid = fork();
	if (pid == 0) {		/* the sender: accept one connection, stream, exit */
		int c, one = 1;
		uint64_t left = total;
		size_t off = 0;
		char *src;

		pin(cpu);
		span = span < chunk ? chunk : span;
		/* Memory like the store's slots: huge pages where the kernel has them. */
		src = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (src == MAP_FAILED)
			_exit(1);
		madvise(src, span, MADV_HUGEPAGE);
		memset(src, 0x5a, span);
		c = accept(lfd, NULL, NULL);
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (send_all(c, "R", 1))	/* ready: the receiver's clock starts now */
			_exit(1);
		while (left) {
			size_t n = left < chunk ? left : chunk;

			if (off + n > span)
				off = 0;
			if (send_all(c, src + off, n))
				_exit(1);
			off += n;
			left -= n;
		}
		_exit(0);
	}
	close(lfd);
	fd = tcp_connect(host, ntohs(sa.sin_port));
	if (fd < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		free(buf);
		return fd;
	}
	/* Not timed: the sender filling its buffer (hundreds of MB for big spans). */
	if (recv_all(fd, buf, 1)) {
		close(fd);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		free(buf);
		return -EPIPE;
	}
	t0 = tool_now();
	for (uint64_t got = 0; got < total;) {
		size_t n = total - got < chunk ? total - got : chunk;

		if (recv_all(fd, buf, n))
			break;
		got += n;
	}
	t = tool_now() - t0;
	close(fd);
	waitpid(pid, &status, 0);
	free(buf);
	return (double)total / t / 1e9;
}

/* ------------------------------------------------------------------ buffered reader */

struct rd {
	int fd;
	char buf[65536];
	size_t off, len;
};

static int rd_fill(struct rd *r)
{
	ssize_t n;

	if (r->off == r->len)
		r->off = r->len = 0;
	n = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
	if (n <= 0)
		return n < 0 ? -errno : -ECONNRESET;
	r->len += (size_t)n;
	return 0;
}

/* A line without its "\r\n" into out (NUL-terminated). */
static int rd_line(struct rd *r, char *out, size_t cap)
{
	for (;;) {
		char *nl = memchr(r->buf + r->off, '\n', r->len - r->off);

		if (nl) {
			size_t n = (size_t)(nl - (r->buf + r->off));

			if (n && nl[-1] == '\r')
				n--;
			if (n >= cap)
				return -EPROTO;
			memcpy(out, r->buf + r->off, n);
			out[n] = 0;
			r->off = (size_t)(nl - r->buf) + 1;
			return 0;
		}
		if (r->off) {
			memmove(r->buf, r->buf + r->off, r->len - r->off);
			r->len -= r->off;
			r->off = 0;
		}
		if (r->len == sizeof(r->buf))
			return -EPROTO;
		if (rd_fill(r))
			return -ECONNRESET;
	}
}

/* n bytes (plus the trailing "\r\n") straight into dst. */
static int rd_data(struct rd *r, void *dst, size_t n)
{
	size_t have = r->len - r->off, take = have < n ? have : n;
	char crlf[2];

	memcpy(dst, r->buf + r->off, take);
	r->off += take;
	if (take < n && recv_all(r->fd, (char *)dst + take, n - take))
		return -ECONNRESET;
	for (int i = 0; i < 2; i++) {
		if (r->off == r->len && rd_fill(r))
			return -ECONNRESET;
		crlf[i] = r->buf[r->off++];
	}
	return crlf[0] == '\r' && crlf[1] == '\n' ? 0 : -EPROTO;
}

/* ------------------------------------------------------------------ redis, memcached */

struct req {
	struct iovec *iov;
	size_t n, cap;
	char *hdrs;		/* small header strings, laid out back to back */
	size_t hoff, hcap;
};

static void req_reset(struct req *q)
{
	q->n = 0;
	q->hoff = 0;
}

static void req_add(struct req *q, const void *p, size_t len)
{
	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 256;
		q->iov = realloc(q->iov, q->cap * sizeof(*q->iov));
	}
	q->iov[q->n++] = (struct iovec){ .iov_base = (void *)p, .iov_len = len };
}

__attribute__((format(printf, 2, 3)))
static void req_fmt(struct req *q, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(q->hdrs + q->hoff, q->hcap - q->hoff, fmt, ap);
	va_end(ap);
	req_add(q, q->hdrs + q->hoff, (size_t)n);
	q->hoff += (size_t)n;
}

static int req_send(int fd, struct req *q)
{
	size_t i = 0;

	while (i < q->n) {
		struct msghdr mh = { .msg_iov = q->iov + i,
				     .msg_iovlen = q->n - i > 1024 ? 1024 : q->n - i };
		ssize_t r = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (r <= 0)
			return -errno;
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

enum { REDIS, MEMCACHED };

static int run_ref(int kind, const char *host, int port, size_t page, size_t batch,
		   size_t nkeys, struct ref_result *out)
{
	struct rd *r = calloc(1, sizeof(*r));
	struct req q = { .hcap = 64 * (batch + 4) };
	char *vals = malloc(page * batch), line[256];
	size_t nb = (nkeys + batch - 1) / batch;
	double *lat = calloc(nb, sizeof(double)), t_set = 0, t_get = 0;
	int ret = 0;

	q.hdrs = malloc(q.hcap);
	memset(out, 0, sizeof(*out));
	r->fd = tcp_connect(host, port);
	if (r->fd < 0) {
		ret = r->fd;
		goto out;
	}
	memset(vals, 0x33, page * batch);
	for (int phase = 0; phase < 2 && !ret; phase++) {
		for (size_t b = 0; b < nb && !ret; b++) {
			size_t n = nkeys - b * batch < batch ? nkeys - b * batch : batch;
			double t0 = tool_now();

			req_reset(&q);
			if (kind == REDIS)
				req_fmt(&q, "*%zu\r\n$4\r\n%s\r\n", (phase ? 1 : 2) * n + 1,
					phase ? "MGET" : "MSET");
			else if (phase)
				req_fmt(&q, "get");
			for (size_t i = 0; i < n; i++) {
				char key[32];
				int kl = snprintf(key, sizeof(key), "ref-%zu", b * batch + i);

				if (kind == REDIS) {
					req_fmt(&q, "$%d\r\n%s\r\n", kl, key);
					if (!phase) {
						req_fmt(&q, "$%zu\r\n", page);
						req_add(&q, vals + i * page, page);
						req_fmt(&q, "\r\n");
					}
				} else if (phase) {
					req_fmt(&q, " %s", key);
				} else {
					req_fmt(&q, "set %s 0 0 %zu noreply\r\n", key, page);
					req_add(&q, vals + i * page, page);
					req_fmt(&q, "\r\n");
				}
			}
			if (kind == MEMCACHED)
				req_fmt(&q, phase ? "\r\n" : "mn\r\n");
			ret = req_send(r->fd, &q);
			if (ret)
				break;
			/* The reply: values straight into the page buffers. */
			if (!phase) {
				ret = rd_line(r, line, sizeof(line));
				if (!ret && strcmp(line, kind == REDIS ? "+OK" : "MN"))
					ret = -EPROTO;
			} else if (kind == REDIS) {
				ret = rd_line(r, line, sizeof(line));
				for (size_t i = 0; !ret && i < n; i++) {
					ret = rd_line(r, line, sizeof(line));
					if (ret || !strcmp(line, "$-1"))
						continue;
					if (line[0] != '$' || (size_t)atol(line + 1) != page)
						ret = -EPROTO;
					else
						ret = rd_data(r, vals + i * page, page);
					out->get_hits += !ret;
				}
			} else {
				for (size_t i = 0; !ret; i++) {
					ret = rd_line(r, line, sizeof(line));
					if (ret || !strcmp(line, "END"))
						break;
					if (strncmp(line, "VALUE ", 6) || i >= n) {
						ret = -EPROTO;
						break;
					}
					ret = rd_data(r, vals + i * page, page);
					out->get_hits += !ret;
				}
			}
			if (phase) {
				lat[b] = (tool_now() - t0) * 1e6;
				t_get += tool_now() - t0;
				out->get_pages += n;
			} else {
				t_set += tool_now() - t0;
			}
		}
	}
	if (!ret) {
		out->set_gbps = (double)(nkeys * page) / t_set / 1e9;
		out->get_gbps = (double)(out->get_hits * page) / t_get / 1e9;
		out->get_p50_us = ref_percentile(lat, nb, 0.5);
		out->get_p99_us = ref_percentile(lat, nb, 0.99);
	}
	close(r->fd);
out:
	free(r);
	free(q.iov);
	free(q.hdrs);
	free(vals);
	free(lat);
	return ret;
}

int ref_redis(const char *host, int port, size_t page, size_t batch, size_t nkeys,
	      struct ref_result *out)
{
	return run_ref(REDIS, host, port, page, batch, nkeys, out);
}

int ref_memcached(const char *host, int port, size_t page, size_t batch, size_t nkeys,
		  struct ref_result *out)
{
	return run_ref(MEMCACHED, host, port, page, batch, nkeys, out);
}
