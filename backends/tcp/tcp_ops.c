/*
 * tcp_ops.c - one-sided ops emulated on the registered regions (tcp_ops.h).
 *
 * Ops of one frame have no order among themselves (pc_fabric.h): every WRITE lands
 * while the payload is received, and the READs and CASes run as the answer is
 * built, each against memory region_table_check() let through.
 */
#include <errno.h>
#include <stdlib.h>

#include "tcp_ops.h"
#include "tcp_sock.h"

/* Whether an op's bytes are copied into the response (TCP_SMALL_OP). */
static bool copied_out(const struct tcp_opdesc *d)
{
	return d->kind == PC_OP_CAS || (d->kind == PC_OP_READ && d->len <= TCP_SMALL_OP);
}

/* The bytes an op answers with. */
static uint32_t answer_len(const struct tcp_opdesc *d)
{
	return d->kind == PC_OP_CAS ? 8 : d->kind == PC_OP_READ ? d->len : 0;
}

/* A small op's bytes (bucket headers, index blocks: scattered over the slots, seldom
 * in cache) are asked for as the frame is checked, so that its ops' cache misses
 * overlap instead of coming one by one as tcp_ops_answer copies them out. */
static void prefetch(const uint8_t *at, uint32_t len)
{
	for (uintptr_t p = (uintptr_t)at & ~(uintptr_t)63; p < (uintptr_t)at + len; p += 64)
		__builtin_prefetch((const void *)p);
}

int tcp_ops_check(struct tcp_ops *o, const struct tcp_frame *fr, struct region_table *rt,
		  struct pc_fabric_stats *st, uint8_t *discard, size_t discard_len)
{
	const struct tcp_opdesc *d = (const struct tcp_opdesc *)fr->body;
	uint32_t nops = fr->nops;

	if (nops > o->cap) {
		uint8_t **w = realloc(o->where, nops * sizeof(*w));
		int32_t *s = w ? realloc(o->status, nops * sizeof(*s)) : NULL;

		if (w)
			o->where = w;
		if (!s)
			return -ENOMEM;
		o->status = s;
		o->cap = nops;
	}
	o->rxn = o->rxi = o->rx_left = 0;
	for (uint32_t i = 0; i < nops; i++) {
		o->where[i] = NULL;
		o->status[i] = region_table_check(rt, d[i].rkey, d[i].raddr, d[i].len,
						  region_access_for(d[i].kind), &o->where[i]);
		if (o->status[i])
			region_count_refused(st, o->status[i]);
		else if (copied_out(&d[i]))
			prefetch(o->where[i], answer_len(&d[i]));
		if (d[i].kind != PC_OP_WRITE)
			continue;
		/* WRITE payloads land in their regions; refused ones in the discard buffer. */
		for (uint32_t off = 0; off < d[i].len;) {
			uint32_t n = o->status[i] ? (d[i].len - off < discard_len ? d[i].len - off :
							(uint32_t)discard_len) : d[i].len;

			if (tcp_iov_add(&o->rxv, &o->rxn, &o->rxcap,
					o->status[i] ? discard : o->where[i], n))
				return -ENOMEM;
			o->rx_left += n;
			off += n;
		}
	}
	return 0;
}

uint64_t tcp_ops_body_len(const struct tcp_ops *o, const struct tcp_frame *fr, uint64_t *copied)
{
	const struct tcp_opdesc *d = (const struct tcp_opdesc *)fr->body;
	uint64_t body = (uint64_t)fr->nops * 4;

	*copied = body;
	for (uint32_t i = 0; i < fr->nops; i++) {
		if (o->status[i])
			continue;
		body += answer_len(&d[i]);
		if (copied_out(&d[i]))
			*copied += answer_len(&d[i]);
	}
	return body;
}

int tcp_ops_answer(struct tcp_ops *o, const struct tcp_frame *fr, struct pc_msg *out,
		   struct iovec **iov, size_t *n, size_t *cap, struct pc_fabric_stats *st)
{
	const struct tcp_opdesc *d = (const struct tcp_opdesc *)fr->body;
	uint32_t nops = fr->nops;
	struct region_tally served = { 0 };
	size_t at;

	if (pc_msg_append(out, o->status, (size_t)nops * 4))
		return -ENOMEM;
	at = out->len;
	for (uint32_t i = 0; i < nops; i++) {
		uint64_t old;
		int ret;

		if (o->status[i] || !copied_out(&d[i]))
			continue;
		if (d[i].kind == PC_OP_CAS) {
			old = region_cas(o->where[i], d[i].compare, d[i].swap);
			ret = pc_msg_append(out, &old, 8);
		} else {
			ret = pc_msg_append(out, o->where[i], d[i].len);
		}
		if (ret)
			return -ENOMEM;
	}
	/* out's data is final now; point the iovecs into it and into the regions. */
	if (tcp_iov_add(iov, n, cap, out->data, at))
		return -ENOMEM;
	for (uint32_t i = 0; i < nops; i++) {
		uint32_t len = answer_len(&d[i]);
		int ret = 0;

		if (o->status[i])
			continue;
		region_tally_op(&served, d[i].kind, d[i].len);
		if (copied_out(&d[i])) {
			ret = tcp_iov_add(iov, n, cap, (uint8_t *)out->data + at, len);
			at += len;
		} else if (d[i].kind == PC_OP_READ) {
			ret = tcp_iov_add(iov, n, cap, o->where[i], len);
		}
		if (ret)
			return -ENOMEM;
	}
	region_tally_flush(st, &served);
	return 0;
}

void tcp_ops_free(struct tcp_ops *o)
{
	free(o->where);
	free(o->status);
	free(o->rxv);
	*o = (struct tcp_ops){ 0 };
}

/* Ops a connection's arrays keep between frames: a batch's (a few per page) */
#define OPS_KEEP 4096u

void tcp_ops_trim(struct tcp_ops *o)
{
	if (o->cap > OPS_KEEP || o->rxcap > OPS_KEEP)
		tcp_ops_free(o);
}
