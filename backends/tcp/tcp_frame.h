/*
 * tcp_frame.h - the tcp server's frame parser: bytes from a peer in, a request that
 * is safe to act on out, or a refusal. This is the backend's security boundary for
 * the shape of a request: magic, version, flags, type, counts, lengths, op kinds,
 * the body adding up, HELLO first and once, AUTH right after it when the server
 * authenticates, the node HELLO names, an RPC request no larger than its opcode
 * takes. It works on a
 * buffer alone (no socket, fabric, allocation or global state), so a fuzzer can
 * drive it as the server does.
 *
 * A frame is a 32-byte header, its head (what the parser must see: HELLO's body,
 * the op descriptors, the RPC request) and, for OPS, the WRITE payloads, which the
 * server receives straight into the regions: the parser never sees them, and says
 * how many follow.
 *
 * Not for: whether an op may touch memory (the region table checks key, bounds and
 * rights), which node a client meant to reach, or anything on the client side.
 */
#ifndef PC_TCP_FRAME_H
#define PC_TCP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tcp_proto.h"

/* The most bytes a head can need: an RPC request at its limit (OPS descriptors are
 * fewer). A peer makes the server buffer no more than this per connection. */
#define TCP_FRAME_HEAD_MAX (sizeof(struct tcp_hdr) + (size_t)TCP_MAX_RPC_BODY)

/* What the parser knows of the connection a frame came on. */
struct tcp_frame_ctx {
	bool hello;			/* it said HELLO already */
	bool auth_pending;		/* the server waits for AUTH: nothing else is taken */
	uint32_t nr_nodes;		/* HELLO names a node below this, or PC_PEER_NONE */
	/* the largest RPC request per opcode (pc_fabric.rpc_max_req), or NULL for
	 * TCP_MAX_RPC_BODY */
	size_t (*rpc_max)(void *arg, uint16_t opcode);
	void *rpc_max_arg;
};

/* A parsed frame. Which fields hold depends on what tcp_frame_parse returned. */
struct tcp_frame {
	struct tcp_hdr hdr;		/* len >= 32: the header, copied out */
	size_t need;			/* returned 0: bytes the frame's head needs in all */
	const char *why;		/* returned -EPROTO: what is wrong, for a log line */
	/* returned > 0, the head is complete and valid: */
	const uint8_t *body;		/* the head after the header, pointing into buf */
	size_t body_len;		/* its bytes: HELLO 64 + text, AUTH 32, OPS nops x 40,
					 * RPC the request */
	struct tcp_hello hello;		/* TCP_HELLO: its fixed part, copied out (the text
					 * is at body + sizeof(hello)) */
	uint32_t nops;			/* TCP_OPS: descriptors at body */
	uint64_t payload_len;		/* TCP_OPS: WRITE payload bytes after the head */
};

/*
 * Parse the frame that starts at buf, of which len bytes are in (more may follow:
 * only the head is read). Returns
 *   > 0      the head's bytes (header and body); out's frame fields hold;
 *   0        more bytes are needed: out->need (> len, <= TCP_FRAME_HEAD_MAX) in all
 *            before the next call can say more;
 *   -EPROTO  the frame is malformed (out->why); the connection must close;
 *   -EMSGSIZE an RPC request larger than its opcode takes (out->why); close too.
 * A header is refused as soon as it is in, before its body is asked for. Reads
 * nothing past buf[len - 1]; buf needs no alignment, but callers that read the OPS
 * descriptors in place at out->body as struct tcp_opdesc need buf 8-byte aligned.
 * Thread-safe: it touches only its arguments.
 */
ssize_t tcp_frame_parse(const struct tcp_frame_ctx *ctx, const uint8_t *buf, size_t len,
			struct tcp_frame *out);

#endif
