/*
 * tcp_ops.h - one-sided READ/WRITE/CAS emulated on the node's registered regions:
 * an OPS frame's ops checked against the region table (key, bounds, rights), where
 * its WRITE payloads land, and its response's body: each op's status, then each
 * op's bytes in op order.
 *
 * Not for: the socket, the connection or the frame's shape (tcp_server.c,
 * tcp_frame.c); the server owns one struct tcp_ops per connection.
 */
#ifndef PC_TCP_OPS_H
#define PC_TCP_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tcp_frame.h"
#include "tcp_int.h"

/* The OPS frame a connection serves. */
struct tcp_ops {
	uint8_t **where;		/* each op's bytes in its region */
	int32_t *status;		/* each op's: 0, or the -errno it was refused with */
	uint32_t cap;			/* entries of where and status */
	struct iovec *rxv;		/* where the WRITE payloads go, in order */
	size_t rxn, rxi, rxcap;		/* entries, the receive cursor, capacity */
	size_t rx_left;			/* their bytes not in yet */
};

/* The frame's head is in and parsed: check its ops against rt (refusals counted in
 * st) and say where each WRITE payload lands: in its region, or for a refused op
 * in discard (discard_len bytes, overwritten). 0 or -ENOMEM. */
int tcp_ops_check(struct tcp_ops *o, const struct tcp_frame *fr, struct region_table *rt,
		  struct pc_fabric_stats *st, uint8_t *discard, size_t discard_len);

/* The response's body bytes, statuses included; in *copied the part of them
 * tcp_ops_answer copies into the response buffer (statuses, CAS values, small
 * READs), the rest going out straight from the regions. */
uint64_t tcp_ops_body_len(const struct tcp_ops *o, const struct tcp_frame *fr, uint64_t *copied);

/* Every WRITE landed: append the statuses, each CAS's old value and each small
 * READ's bytes to out (which holds the response's header), then queue on iov (n
 * entries of cap) out's bytes and each page from its region, in op order; the
 * served ops counted in st. 0 or -ENOMEM. */
int tcp_ops_answer(struct tcp_ops *o, const struct tcp_frame *fr, struct pc_msg *out,
		   struct iovec **iov, size_t *n, size_t *cap, struct pc_fabric_stats *st);

void tcp_ops_free(struct tcp_ops *o);

/* Free o's arrays when a frame of many ops grew them past a batch's needs, so that
 * what one frame made the node hold is not held until the connection closes. */
void tcp_ops_trim(struct tcp_ops *o);

#endif
