/*
 * bench_ref_stream.c - the ceiling pcbench holds the store and its peers to: one
 * TCP stream from a forked sender to this process over the same loopback, the
 * sender pinned where the servers run and reading a buffer as large as their
 * working set, the receiver landing bytes in a batch-sized buffer as a client
 * does. Three variants, the best of which is the ceiling:
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

/* The sender: accept one connection, say ready, stream total bytes, exit. */
static void sender(enum ref_stream_kind k, int lfd, uint64_t total, size_t chunk, size_t span,
		   int cpu)
{
	size_t io = k == REF_STREAM_PLAIN ? chunk : TUNED_IO, off = 0;
	char *src;
	int c;

	refio_pin(cpu);
	span = span < io ? io : span;
	/* memory like the store's slots: huge pages where the kernel has them */
	src = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED)
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
		size_t n = left < io ? (size_t)left : io;

		if (off + n > span)
			off = 0;
		if (refio_send_all(c, src + off, n))
			_exit(1);
		off += n;
		left -= n;
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

double ref_stream(enum ref_stream_kind k, const char *host, uint64_t total, size_t chunk,
		  size_t span, int cpu)
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
		sender(k, lfd, total, chunk, span, cpu);
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
	if (!ret) {
		t0 = tool_now();
		ret = receive(k, fd, buf, total, chunk);
		t = tool_now() - t0;
	}
	if (fd >= 0)
		close(fd);
	if (ret && pid > 0)
		kill(pid, SIGKILL);
	if (pid > 0)
		waitpid(pid, &status, 0);
	free(buf);
	return ret ? ret : (double)total / t / 1e9;
}
