/*
 * tcp_auth.h - the tcp handshake's cryptography: the cluster secret, fresh nonces,
 * and the two MACs of the mutual challenge-response (docs/security.md).
 *
 * HELLO carries the caller's nonce, HELLO_ACK the server's nonce and the server's MAC,
 * AUTH the caller's MAC; each MAC is HMAC-SHA256 (OpenSSL libcrypto) over one
 * transcript that names the direction, both sides' node identities, incarnations,
 * nonces and config fingerprints, under a key derived from the secret for the role
 * that proves it (node or client). A MAC of one connection is therefore worthless on
 * another, in the other direction, or for another identity.
 *
 * Not for: sockets, frames or connection state (tcp_client.c, tcp_server.c); it
 * works on buffers alone, so tests and fuzzers can drive it.
 */
#ifndef PC_TCP_AUTH_H
#define PC_TCP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcp_proto.h"

struct pc_topology;

#define TCP_SECRET_MIN 16		/* bytes a secret has at least */
#define TCP_SECRET_MAX 4096

/* A process's authentication state. on false: no secret configured. */
struct tcp_auth {
	bool on;
	char path[256];			/* where the secret came from, for messages */
	uint8_t node_key[TCP_MAC_BYTES];	/* HMAC(secret, "node") */
	uint8_t client_key[TCP_MAC_BYTES];	/* HMAC(secret, "client") */
};

/* The secret of topology t: the file store.auth_secret_file names, else the one
 * $PEERCACHE_SECRET_FILE names, else none (a->on false). Surrounding whitespace in
 * the file is ignored. 0, or -errno with one line in err naming the file and the fix.
 * Warns once when the file is readable by its group or others. */
int tcp_auth_load(const struct pc_topology *t, struct tcp_auth *a, char *err, size_t errlen);

/* Wipe the keys. */
void tcp_auth_clear(struct tcp_auth *a);

/* n fresh random bytes (OpenSSL's CSPRNG). 0 or -EIO. */
int tcp_auth_nonce(uint8_t *out, size_t n);

enum tcp_auth_dir { TCP_AUTH_SERVER = 1, TCP_AUTH_CLIENT = 2 };

/* The MAC one side sends: dir says who proves (the server with the node key; the
 * caller with the key of the role its HELLO claims: client when hello->node is
 * PC_PEER_NONE, node otherwise), over the transcript of hello and ack. */
void tcp_auth_mac(const struct tcp_auth *a, enum tcp_auth_dir dir, const struct tcp_hello *hello,
		  const struct tcp_hello_ack *ack, uint8_t out[TCP_MAC_BYTES]);

/* Whether mac is the MAC dir's side should have sent (constant-time compare). */
bool tcp_auth_check(const struct tcp_auth *a, enum tcp_auth_dir dir, const struct tcp_hello *hello,
		    const struct tcp_hello_ack *ack, const uint8_t mac[TCP_MAC_BYTES]);

#endif
