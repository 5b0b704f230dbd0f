/*
 * bench_cc_preload.c - preloaded into the benchmark's peers (memcached and
 * redis-server, by ci/bench.sh) so that they run the congestion control the store
 * runs: every TCP socket they listen on gets the one $PC_BENCH_CC names, and their
 * connections inherit it, whatever the machine's net.ipv4.tcp_congestion_control
 * (which the benchmark does not change). Neither server has an option for it.
 *
 *   LD_PRELOAD=build/tools/libpc_bench_cc.so PC_BENCH_CC=cubic memcached ...
 *
 * Without $PC_BENCH_CC, or for a socket that is not TCP, listen() is the C
 * library's. A peer whose socket refuses the name stops with a line saying so
 * rather than run another one and make the comparison say nothing.
 */
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef int (*listen_fn)(int, int);

static bool is_tcp(int fd)
{
	int domain = 0, type = 0;
	socklen_t dl = sizeof(domain), tl = sizeof(type);

	return !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dl) &&
	       !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) &&
	       (domain == AF_INET || domain == AF_INET6) && type == SOCK_STREAM;
}

int listen(int fd, int backlog)
{
	static listen_fn next;
	const char *cc = getenv("PC_BENCH_CC");

	if (!next) {
		void *sym = dlsym(RTLD_NEXT, "listen");

		memcpy(&next, &sym, sizeof(next));
		if (!next) {
			errno = ENOSYS;
			return -1;
		}
	}
	if (cc && *cc && is_tcp(fd) &&
	    setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc))) {
		fprintf(stderr,
			"bench_cc_preload: listening socket %d: congestion control '%s' (PC_BENCH_CC) refused: %s; "
			"load its module (modprobe tcp_%s) or run as root\n",
			fd, cc, strerror(errno), cc);
		_exit(1);
	}
	return next(fd, backlog);
}
