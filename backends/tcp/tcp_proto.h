/*
 * tcp_proto.h - the tcp backend's wire format.
 *
 * Every message is a 32-byte header and a body. A connection starts with HELLO /
 * HELLO_ACK (who is calling, which node and incarnation answers); after that the
 * client sends one request at a time and reads its response:
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
#define TCP_VERSION 1

#define TCP_MAX_OPS 65536u		/* ops in one OPS frame */
#define TCP_MAX_OP_LEN (1u << 30)	/* bytes one op moves */
#define TCP_MAX_OPS_BODY (4ULL << 30)	/* an OPS frame's body */
#define TCP_MAX_RPC_BODY (256u << 20)	/* an RPC request or response body */

enum tcp_type {
	TCP_HELLO = 1,
	TCP_HELLO_ACK = 2,
	TCP_OPS = 3,
	TCP_OPS_RESP = 4,
	TCP_RPC = 5,
	TCP_RPC_RESP = 6,
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

struct tcp_hello {
	uint32_t node;			/* the caller's node index, or PC_PEER_NONE */
	uint32_t expect_node;		/* the node the caller meant to reach */
	uint64_t incarnation;		/* the caller's */
};

struct tcp_hello_ack {
	uint32_t node;
	uint32_t pad;
	uint64_t incarnation;		/* the server's: changes when it restarts */
};

#endif
