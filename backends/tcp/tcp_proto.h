/*
 * tcp_proto.h - the tcp backend's wire format.
 *
 * Every message is a 32-byte header and a body. A connection starts with the
 * handshake; after it the client sends one request at a time and reads its response.
 *
 *   HELLO     the caller's identity (node or PC_PEER_NONE), the node it means to
 *             reach, its incarnation and config fingerprint, a fresh nonce, and its
 *             placement settings as text (config/fingerprint.c).
 *   HELLO_ACK the server's identity, incarnation, fingerprint and nonce; with a
 *             cluster secret its MAC over both (tcp_auth.h). status: 0, or the
 *             refusal (the connection then closes): -EADDRNOTAVAIL another node
 *             answers here, -EACCES one side has a secret and the other not,
 *             -EBADE the fingerprints differ (the server's settings follow as text).
 *   AUTH      with a secret, the caller's MAC: sent right behind its first request
 *             is built, so the handshake costs the one round trip HELLO already did.
 *             The server acts on nothing else before AUTH checks out.
 *   REFUSED   the server's last word on a connection it closes: status says why
 *             (-EACCES: AUTH did not check out).
 *
 *   OPS      body: count x 40-byte op descriptors, then the payloads of the WRITE ops
 *            in descriptor order.
 *   OPS_RESP body: count x int32 status, then for each op that succeeded, in order:
 *            a READ's bytes, a CAS's 8-byte old value.
 *   RPC      header.count = opcode; body: the request.
 *   RPC_RESP header.status = the handler's result; body: the response.
 *
 * Integers are little-endian; peercache supports little-endian hosts only (slot.c
 * asserts it), so the structs below are sent as they are in memory.
 *
 * The server reads WRITE payloads straight into the target region and sends READ
 * payloads straight from it; the client sends from and receives into the caller's
 * buffers. Anything that does not parse closes the connection it came on.
 */
#ifndef PC_TCP_PROTO_H
#define PC_TCP_PROTO_H

#include <stdint.h>

#define TCP_MAGIC 0x46544350u		/* "PCTF" */
#define TCP_VERSION 2

#define TCP_MAX_OPS 65536u		/* ops in one OPS frame */
#define TCP_MAX_OP_LEN (1u << 30)	/* bytes one op moves */
#define TCP_MAX_OPS_BODY (4ULL << 30)	/* an OPS frame's body */
#define TCP_MAX_RPC_BODY (256u << 20)	/* an RPC request or response body */
#define TCP_TEXT_MAX 2048u		/* placement text in HELLO / HELLO_ACK */
#define TCP_NONCE_BYTES 32
#define TCP_MAC_BYTES 32

enum tcp_type {
	TCP_HELLO = 1,
	TCP_HELLO_ACK = 2,
	TCP_OPS = 3,
	TCP_OPS_RESP = 4,
	TCP_RPC = 5,
	TCP_RPC_RESP = 6,
	TCP_AUTH = 7,
	TCP_REFUSED = 8,
};

struct tcp_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t type;
	uint16_t flags;			/* 0 */
	uint32_t count;			/* OPS: ops; RPC: opcode */
	int32_t status;			/* responses: 0 or -errno */
	uint64_t body_len;
	uint64_t seq;			/* echoed in the response */
};
_Static_assert(sizeof(struct tcp_hdr) == 32, "tcp_hdr is 32 bytes on the wire");

struct tcp_opdesc {
	uint8_t kind;			/* PC_OP_READ / WRITE / CAS */
	uint8_t pad[3];
	uint32_t rkey;
	uint64_t raddr;
	uint32_t len;
	uint32_t pad2;
	uint64_t compare, swap;
};
_Static_assert(sizeof(struct tcp_opdesc) == 40, "tcp_opdesc is 40 bytes on the wire");

#define TCP_HELLO_AUTH 1u		/* flags: this side has the cluster secret */

struct tcp_hello {
	uint32_t node;			/* the caller's node index, or PC_PEER_NONE */
	uint32_t expect_node;		/* the node the caller meant to reach */
	uint64_t incarnation;		/* the caller's */
	uint64_t fingerprint;		/* topology_fingerprint() of the caller's config */
	uint32_t flags;			/* TCP_HELLO_AUTH or 0 */
	uint32_t text_len;		/* bytes of placement text after this struct */
	uint8_t nonce[TCP_NONCE_BYTES];
};
_Static_assert(sizeof(struct tcp_hello) == 64, "tcp_hello is 64 bytes on the wire");

struct tcp_hello_ack {
	uint32_t node;
	uint32_t flags;			/* TCP_HELLO_AUTH: nonce and mac hold */
	uint64_t incarnation;		/* the server's: changes when it restarts */
	uint64_t fingerprint;
	uint32_t text_len;		/* status -EBADE: the server's placement text follows */
	uint32_t pad;
	uint8_t nonce[TCP_NONCE_BYTES];
	uint8_t mac[TCP_MAC_BYTES];	/* tcp_auth_mac(TCP_AUTH_SERVER) */
};
_Static_assert(sizeof(struct tcp_hello_ack) == 96, "tcp_hello_ack is 96 bytes on the wire");

#endif
