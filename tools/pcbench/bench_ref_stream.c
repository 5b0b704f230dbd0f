/*
 * bench_ref_stream.c - the raw transfers pcbench holds the store and its peers to:
 * TCP from a forked sender to this process over the same loopback, the sender
 * pinned where the servers run and reading a buffer as large as their working set,
 * the receiver landing bytes in a batch-sized buffer as a client does. Three
 * variants:
 *
 *   plain  batch-sized send() and recv(), the kernel's buffer autotuning.
 *   tuned  1 MiB writes and reads, TCP_NODELAY, socket buffers forced to 8 MiB
 *          before the connection exists (so the window scales to them), and cubic
 *          congestion control where the kernel has it: a pacing one (BBR, where it
 *          is the system's) spreads the stream out by the rate it has measured, and
 *          a ceiling a peer's pipelined replies can beat is no ceiling.
 *   busy   tuned, and the receiver never sleeps: non-blocking reads in a loop
 *          (SO_BUSY_POLL too, where a device polls), as a client that polls for
 *          its answers does.
 *
 * ref_stream moves the bytes as one stream. ref_round_trips moves them one batch
 * at a time, as every client's get does: the receiver asks for a batch with one
 * byte and the sender answers with the batch's bytes, nothing in flight between the
 * batches; and, given a page size, it sends each batch as that many pages from
 * random places of its buffer, gathered into one sendmsg, as a store's server
 * sends the pages a batch names. Those add round trips and scattered reads to the
 * stream: they say what is left of it for a client that waits for each batch, and
 * where one of them is faster all the same, the stream was no limit (pcbench takes
 * the fastest of all as the ceiling).
 *
 * Not for: anything but moving bytes; no protocol, no checks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_ref.h"
#include "bench_ref_io.h"
#include "tool/tool_common.h"

#define TUNED_IO (1u << 20)
#define TUNED_BUF (8 << 20)

const char *ref_stream_name(enum ref_stream_kind k)
{
	static const char *const names[REF_STREAM_NR] = { "plain", "tuned", "busy" };

	return k < REF_STREAM_NR ? names[k] : "?";
}

/* Forced buffer sizes (root may pass net.core.[rw]mem_max), else the capped ones. */
static void set_buffers(int fd)
{
	int sz = TUNED_BUF;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
}

/* Cubic, which does not pace; left as it is where the kernel has no cubic. */
static void no_pacing(int fd)
{
	static const char cc[] = "cubic";

	setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, sizeof(cc) - 1);
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Batch after batch of pages from random places of src (span bytes): the next
 * page's offset. */
static size_t next_page(uint64_t *rng, size_t span, size_t page)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return (size_t)(*rng % (span / page)) * page;
}

/* The sender: accept one connection, say ready, send total bytes, exit. per_batch:
 * a batch (chunk bytes, the last one what is left) each time the receiver asks;
 * page > 0 as well: each batch gathered from pages at random places. */
static void sender(enum ref_stream_kind k, bool per_batch, size_t page, int lfd, uint64_t total,
		   size_t chunk, size_t span, int cpu)
{
	size_t io = k == REF_STREAM_PLAIN ? chunk : TUNED_IO, off = 0;
	uint64_t rng = 0x9E3779B97F4A7C15ULL;
	struct refio_req q;
	char *src, ask;
	int c;

	refio_pin(cpu);
	span = span < io ? io : span;
	span = span < page ? page : span;
	/* memory like the store's slots: huge pages where the kernel has them */
	src = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED || refio_req_init(&q, 0))
		_exit(1);
	madvise(src, span, MADV_HUGEPAGE);
	memset(src, 0x5a, span);
	c = accept(lfd, NULL, NULL);
	if (c < 0)
		_exit(1);
	nodelay(c);
	if (refio_send_all(c, "R", 1))	/* ready: the receiver's clock starts now */
		_exit(1);
	for (uint64_t left = total; left;) {
		uint64_t batch = !per_batch || left < chunk ? left : chunk;

		if (per_batch && refio_recv_all(c, &ask, 1))
			_exit(1);
		left -= batch;
		if (page) {
			refio_req_reset(&q);
			for (uint64_t o = 0; o < batch; o += page)
				if (refio_req_add(&q, src + next_page(&rng, span, page),
						  batch - o < page ? (size_t)(batch - o) : page))
					_exit(1);
			if (refio_req_send(c, &q))
				_exit(1);
			continue;
		}
		while (batch) {
			size_t n = batch < io ? (size_t)batch : io;

			if (off + n > span)
				off = 0;
			if (refio_send_all(c, src + off, n))
				_exit(1);
			off += n;
			batch -= n;
		}
	}
	_exit(0);
}

/* Receive total bytes into buf (chunk bytes, reused); 0 or -errno. */
static int receive(enum ref_stream_kind k, int fd, char *buf, uint64_t total, size_t chunk)
{
	size_t io = k == REF_STREAM_PLAIN ? chunk : TUNED_IO, off = 0;
	int flags = k == REF_STREAM_BUSY ? MSG_DONTWAIT : 0;

	for (uint64_t got = 0; got < total;) {
		size_t want = chunk - off < io ? chunk - off : io;
		ssize_t r;

		if (total - got < want)
			want = (size_t)(total - got);
		r = recv(fd, buf + off, want, flags);
		if (r < 0 && flags && (errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ECONNRESET;
		got += (uint64_t)r;
		off = off + (size_t)r == chunk ? 0 : off + (size_t)r;
	}
	return 0;
}

static double transfer(enum ref_stream_kind k, bool per_batch, size_t page, const char *host,
		       uint64_t total, size_t chunk, size_t span, int cpu)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), fd = -1, status, ret;
	char *buf = malloc(chunk);
	double t0, t = 0;
	pid_t pid;

	if (lfd >= 0 && k != REF_STREAM_PLAIN) {
		set_buffers(lfd);	/* accepted sockets inherit them */
		no_pacing(lfd);		/* and this */
	}
	if (lfd < 0 || !buf || inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len)) {
		free(buf);
		if (lfd >= 0)
			close(lfd);
		return -EADDRNOTAVAIL;
	}
	memset(buf, 0, chunk);
	pid = fork();
	if (pid == 0)
		sender(k, per_batch, page, lfd, total, chunk, span, cpu);
	close(lfd);
	ret = pid < 0 ? -errno : 0;
	if (!ret) {
		struct sockaddr_in to = sa;

		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && k != REF_STREAM_PLAIN) {
			int us = 50;

			set_buffers(fd);
			no_pacing(fd);
			if (k == REF_STREAM_BUSY)
				setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us));
		}
		if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof(to)))
			ret = -errno;
	}
	if (!ret) {
		nodelay(fd);
		/* not timed: the sender filling its buffer (hundreds of MB for big spans) */
		ret = refio_recv_all(fd, buf, 1);
	}
	t0 = tool_now();
	for (uint64_t got = 0; !ret && got < total;) {
		uint64_t batch = !per_batch || total - got < chunk ? total - got : chunk;

		if (per_batch)
			ret = refio_send_all(fd, "b", 1);
		if (!ret)
			ret = receive(k, fd, buf, batch, chunk);
		got += batch;
	}
	t = tool_now() - t0;
	if (fd >= 0)
		close(fd);
	if (ret && pid > 0)
		kill(pid, SIGKILL);
	if (pid > 0)
		waitpid(pid, &status, 0);
	free(buf);
	return ret ? ret : (double)total / t / 1e9;
}

double ref_stream(enum ref_stream_kind k, const char *host, uint64_t total, size_t chunk,
		  size_t span, int cpu)
{
	return transfer(k, false, 0, host, total, chunk, span, cpu);
}

double ref_round_trips(enum ref_stream_kind k, const char *host, uint64_t total, size_t chunk,
		       size_t page, size_t span, int cpu)
{
	return transfer(k, true, page, host, total, chunk, span, cpu);
}
