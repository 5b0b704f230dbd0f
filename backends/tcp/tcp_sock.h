/*
 * tcp_sock.h - socket helpers both sides of the tcp backend use: name resolution,
 * socket options, the listening and the connecting socket, and non-blocking
 * scatter/gather I/O over an iovec cursor.
 *
 * Not for: anything that knows the wire format (tcp_proto.h) or a fabric.
 */
#ifndef PC_TCP_SOCK_H
#define PC_TCP_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* host:port (a name or a numeric address) into *ss and *len. 0, or -errno
 * (-EHOSTUNREACH when the name does not resolve). */
int tcp_resolve(const char *host, uint16_t port, struct sockaddr_storage *ss, socklen_t *len);

/* The options every connection of the backend runs with (TCP_NODELAY: frames are
 * small and answered at once). */
void tcp_tune_socket(int fd);

/*
 * The receive buffer of the connections a node accepts, fixed rather than left to
 * the kernel's autotuning: that grows a window only as the reader takes in much per
 * round trip, so a connection that mostly carries small requests (gets' reads,
 * bucket headers) keeps its first window, about 64 KiB, and a page WRITE larger
 * than that waits a round trip for each window update. The kernel caps it at
 * net.core.rmem_max.
 */
#define TCP_RCVBUF_BYTES (4 << 20)

/* Congestion control cc (store.tcp_congestion: a name the kernel knows, or "" for
 * the system's) on socket fd. 0 or -errno (-ENOENT: no such algorithm, -EPERM: not
 * allowed for this process). */
int tcp_set_congestion(int fd, const char *cc);

/* Whether this process can use congestion control cc; otherwise -errno and a
 * one-line message naming the key, what the kernel offers and the fix. */
int tcp_congestion_check(const char *cc, char *err, size_t errlen);

/* Whether the congestion control of fd paces what it sends (BBR). */
bool tcp_paces(int fd);

/* A non-blocking listening socket bound to host:port into *fd, whose connections
 * inherit its receive buffer of TCP_RCVBUF_BYTES and its congestion control cc
 * ("": the system's). 0 or -errno. */
int tcp_listen(const char *host, uint16_t port, const char *cc, int *fd);

/* Whether the socket fd is bound to a loopback address (127/8, ::1, or ::ffff:127/104). */
bool tcp_is_loopback(int fd);

/* A non-blocking socket with congestion control cc ("": the system's) whose connect
 * to ss has started (it may still be in progress: poll for POLLOUT, then read
 * SO_ERROR) into *fd. 0 or -errno. */
int tcp_connect_start(const struct sockaddr_storage *ss, socklen_t len, const char *cc, int *fd);

/* Queue len bytes at base on v (*n entries of *cap, grown as needed); bytes that
 * follow the last entry's in memory extend it (a run of small READs copied into a
 * response, a slot's header and payload): the kernel's cost per iovec is more than
 * that of a byte. 0 or -ENOMEM. */
int tcp_iov_add(struct iovec **v, size_t *n, size_t *cap, void *base, size_t len);

/* Move the cursor *i of v[0..n) past r bytes that went out or came in: whole
 * entries are skipped, a partial one is shortened in place, empty ones passed. */
void tcp_iov_advance(struct iovec *v, size_t n, size_t *i, size_t r);

/* Send v[*i..n) on fd without blocking, advancing *i. 0 when all of it is out,
 * -EAGAIN when the socket is full, or -errno. */
int tcp_sendv(int fd, struct iovec *v, size_t n, size_t *i);

/* Receive up to len bytes into buf without blocking. The bytes received (> 0),
 * -EAGAIN when none are there yet, -ECONNRESET at end of stream, or -errno. */
ssize_t tcp_recv_some(int fd, void *buf, size_t len);

/* The most one receive takes of a bulk transfer (tcp_sock.c says when). */
#define TCP_RECV_SLICE (64u << 10)

/* Receive into v[*i..n) from fd without blocking, advancing *i; *left: the bytes
 * of the transfer still to come, v's and those after v[n) (a caller that takes it a
 * window at a time), which decide how large each receive is, less what came; NULL
 * for a sender that does not pace (tcp_paces), whose receives take all there is. 0
 * when all of v is in, -EAGAIN when nothing more is there yet, -ECONNRESET at end of
 * stream, or -errno. */
int tcp_recvv(int fd, struct iovec *v, size_t n, size_t *i, size_t *left);

#endif
