/*
 * bench_ref_io.h - what pcbench's reference clients share: blocking socket helpers,
 * a reader that parses protocol lines out of a small buffer and lands values
 * straight in the caller's page (the rest of a value and the bytes behind it come
 * in one recvmsg), and a request built as an iovec over the caller's pages.
 *
 * Not for: the store's own transport (backends/tcp), nor timing (bench_ref.c).
 */
#ifndef PC_BENCH_REF_IO_H
#define PC_BENCH_REF_IO_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* A TCP connection to host:port with TCP_NODELAY: an fd, or -errno. */
int refio_connect(const char *host, int port);
/* Pin the calling thread to cpu (cpu < 0: leave it). */
void refio_pin(int cpu);
int refio_send_all(int fd, const void *p, size_t n);
int refio_recv_all(int fd, void *p, size_t n);
/* recvmsg that polls for up to spin_us before it blocks. */
ssize_t refio_recvmsg(int fd, struct msghdr *mh, unsigned spin_us);

#define REFIO_RD_BYTES (64u << 10)

/* A receive buffer for protocol lines; values bypass it where the stream allows.
 * spin_us > 0: a read that finds nothing polls the socket that long before it
 * sleeps, as the store's client does (store.tcp_poll_us): on a machine where a
 * wake-up costs as much as a small batch, a reference that always sleeps would
 * flatter the store. */
struct refio_rd {
	int fd;
	unsigned spin_us;
	size_t off, len;
	char buf[REFIO_RD_BYTES];
};

/* The next line without its "\r\n": *line points into the buffer (valid until the
 * next call), NUL-terminated. 0 or -errno (-EPROTO: longer than the buffer). */
int refio_line(struct refio_rd *r, char **line, size_t *len);
/* n bytes into dst and then the "\r\n" after them: what the buffer holds already is
 * copied, the rest lands in dst with the following bytes read into the buffer in
 * the same call. 0 or -errno (-EPROTO: no "\r\n"). */
int refio_value(struct refio_rd *r, void *dst, size_t n);

/* A request: an iovec over small header strings (kept in hdrs) and the caller's
 * pages, sent with sendmsg. */
struct refio_req {
	struct iovec *iov;
	size_t n, cap;
	char *hdrs;
	size_t hoff, hcap;
};

/* Room for about nhdr header strings of up to 96 bytes. 0 or -ENOMEM. */
int refio_req_init(struct refio_req *q, size_t nhdr);
void refio_req_fini(struct refio_req *q);
void refio_req_reset(struct refio_req *q);
/* Append p[0..len) (not copied: it must live until the send). 0 or -ENOMEM. */
int refio_req_add(struct refio_req *q, const void *p, size_t len);
/* Append a formatted header string. 0 or -ENOMEM/-ENOSPC. */
__attribute__((format(printf, 2, 3)))
int refio_req_fmt(struct refio_req *q, const char *fmt, ...);
/* Send it all (it consumes the iovec). 0 or -errno. */
int refio_req_send(int fd, struct refio_req *q);

/* A client's connection: its reader and its request. */
struct refio_conn {
	struct refio_rd rd;
	struct refio_req q;
};

/* Connect to host:port with room for requests of about nhdr header strings; the
 * reader polls spin_us. 0 or -errno (nothing left to close). */
int refio_conn_open(struct refio_conn **out, const char *host, int port, size_t nhdr,
		    unsigned spin_us);
void refio_conn_close(struct refio_conn *c);

#endif
