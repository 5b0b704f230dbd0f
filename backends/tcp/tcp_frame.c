/*
 * tcp_frame.c - the tcp server's frame parser (tcp_frame.h): every check on the
 * shape of a request a peer sends, on a buffer, before the server acts on it.
 *
 * Not for: reading sockets or touching regions (tcp_server.c and tcp_ops.c do, after
 * this has said yes).
 */
#include <errno.h>
#include <string.h>

#include <peercache/pc_fabric.h>

#include "tcp_frame.h"

static ssize_t refuse(struct tcp_frame *out, const char *why)
{
	out->why = why;
	return -EPROTO;
}

static size_t rpc_max(const struct tcp_frame_ctx *ctx, uint16_t op)
{
	size_t m = ctx->rpc_max ? ctx->rpc_max(ctx->rpc_max_arg, op) : TCP_MAX_RPC_BODY;

	return m < TCP_MAX_RPC_BODY ? m : TCP_MAX_RPC_BODY;
}

/* The header alone: is it one this server takes, and how long is its head? */
static ssize_t check_header(const struct tcp_frame_ctx *ctx, struct tcp_frame *out,
			    size_t *head)
{
	const struct tcp_hdr *h = &out->hdr;

	if (h->magic != TCP_MAGIC)
		return refuse(out, "bad magic");
	if (h->version != TCP_VERSION)
		return refuse(out, "unsupported version");
	if (h->flags)
		return refuse(out, "unknown flags");
	if (!ctx->hello && h->type != TCP_HELLO)
		return refuse(out, "frame before HELLO");
	if (ctx->auth_pending && h->type != TCP_AUTH)
		return refuse(out, "frame before AUTH");
	switch (h->type) {
	case TCP_HELLO:
		if (ctx->hello || h->body_len < sizeof(struct tcp_hello) ||
		    h->body_len > sizeof(struct tcp_hello) + TCP_TEXT_MAX)
			return refuse(out, "bad HELLO");
		*head = (size_t)h->body_len;
		break;
	case TCP_AUTH:
		if (!ctx->auth_pending || h->body_len != TCP_MAC_BYTES)
			return refuse(out, "bad AUTH");
		*head = TCP_MAC_BYTES;
		break;
	case TCP_OPS:
		if (!h->count || h->count > TCP_MAX_OPS)
			return refuse(out, "op count out of range");
		if (h->body_len > TCP_MAX_OPS_BODY ||
		    h->body_len < (uint64_t)h->count * sizeof(struct tcp_opdesc))
			return refuse(out, "OPS body length out of range");
		*head = (size_t)h->count * sizeof(struct tcp_opdesc);
		break;
	case TCP_RPC:
		if (h->count > UINT16_MAX)
			return refuse(out, "RPC opcode out of range");
		if (h->body_len > rpc_max(ctx, (uint16_t)h->count)) {
			out->why = "RPC request larger than its opcode takes";
			return -EMSGSIZE;
		}
		*head = (size_t)h->body_len;
		break;
	default:
		return refuse(out, "unknown frame type");
	}
	*head += sizeof(*h);
	return 0;
}

/* Every descriptor is a known kind of a length in range, and the body is exactly
 * the descriptors and the WRITE payloads they announce. */
static ssize_t check_ops(struct tcp_frame *out)
{
	uint64_t writes = 0;

	for (uint32_t i = 0; i < out->nops; i++) {
		struct tcp_opdesc d;

		memcpy(&d, out->body + (size_t)i * sizeof(d), sizeof(d));
		if (d.kind < PC_OP_READ || d.kind > PC_OP_CAS)
			return refuse(out, "unknown op kind");
		if (d.len > TCP_MAX_OP_LEN || (d.kind == PC_OP_CAS && d.len != 8))
			return refuse(out, "op length out of range");
		if (d.kind == PC_OP_WRITE)
			writes += d.len;
	}
	if (out->hdr.body_len != out->body_len + writes)
		return refuse(out, "OPS body length does not match its ops");
	out->payload_len = writes;
	return 0;
}

ssize_t tcp_frame_parse(const struct tcp_frame_ctx *ctx, const uint8_t *buf, size_t len,
			struct tcp_frame *out)
{
	size_t head;
	ssize_t ret;

	out->why = NULL;
	out->need = sizeof(out->hdr);
	if (len < sizeof(out->hdr))
		return 0;
	memcpy(&out->hdr, buf, sizeof(out->hdr));
	ret = check_header(ctx, out, &head);
	if (ret)
		return ret;
	out->need = head;
	if (len < head)
		return 0;
	out->body = buf + sizeof(out->hdr);
	out->body_len = head - sizeof(out->hdr);
	out->nops = 0;
	out->payload_len = 0;
	switch (out->hdr.type) {
	case TCP_HELLO:
		memcpy(&out->hello, out->body, sizeof(out->hello));
		if (out->hello.node != PC_PEER_NONE && out->hello.node != PC_PEER_TOOL &&
		    out->hello.node >= ctx->nr_nodes)
			return refuse(out, "HELLO from an unknown node");
		if (out->hello.text_len != out->body_len - sizeof(out->hello) ||
		    out->hello.flags & ~TCP_HELLO_AUTH)
			return refuse(out, "bad HELLO");
		break;
	case TCP_OPS:
		out->nops = out->hdr.count;
		ret = check_ops(out);
		if (ret)
			return ret;
		break;
	}
	return (ssize_t)head;
}
