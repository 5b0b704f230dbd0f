/*
 * rawpeer.h - a peer that speaks the tcp wire format by hand, for the tests that
 * attack a live node: the handshake done right, wrong or not at all, then any frame.
 */
#ifndef PC_TEST_RAWPEER_H
#define PC_TEST_RAWPEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcp/tcp_auth.h"
#include "tcp/tcp_proto.h"

struct pc_topology;

struct raw_peer {
	int fd;
	struct tcp_hello hello;
	struct tcp_hello_ack ack;
	int32_t status;			/* the HELLO_ACK's; 1 when none came */
	uint64_t seq;
};

/* Connect to 127.0.0.1:port and say HELLO as node (PC_PEER_NONE: a client) to the
 * node expect, with t's fingerprint and placement text, claiming a secret when
 * auth_flag; then read the HELLO_ACK into p. p->fd is the connection (fatal when
 * it cannot be made). */
void raw_hello(struct raw_peer *p, uint16_t port, const struct pc_topology *t, uint32_t node,
	       uint32_t expect, bool auth_flag);

/* Send AUTH: the MAC key a computes for this handshake, or a zero MAC with a NULL. */
void raw_auth(struct raw_peer *p, const struct tcp_auth *a);

/* Send one frame: header fields and body. */
void raw_send(struct raw_peer *p, uint8_t type, uint32_t count, const void *body, size_t len);

/* The type of the next frame the server sends within ms (its header in *h if h),
 * or 0 when the server closed the connection, -1 when nothing came. */
int raw_next(struct raw_peer *p, struct tcp_hdr *h, int ms);

/* A secret file in the test's directory holding text; its path (static storage per
 * slot 0..3). */
const char *raw_secret_file(int slot, const char *text);

/* The tcp_auth of a secret file (fatal on error). */
void raw_auth_of(const char *path, struct tcp_auth *a);

/* The resident memory of process pid, in bytes (0 when unknown). */
uint64_t raw_rss(int pid);

#endif
