/*
 * verbs_wire.h - the CONNECT RPC's request and answer as they travel over the
 * control fabric (host byte order: both ends run this code on x86-64 or another
 * little-endian host). A rail with no QP at one end (its port is down) carries
 * QPN 0. The server refuses a request whose `from` is not the node the control
 * connection authenticated as.
 *
 * Not for: the code around it (verbs_conn.c); tests build requests from it.
 */
#ifndef PC_VERBS_WIRE_H
#define PC_VERBS_WIRE_H

#include <stdint.h>

#include "verbs.h"

#define CONNECT_MAGIC 0x4e435650u	/* "PVCN" */

struct wire_addr {
	uint8_t gid[16];
	uint32_t qpn, psn;
	uint16_t lid;
	uint8_t mtu, pad;
	uint32_t rd_atomic;
};

struct wire_req {
	uint32_t magic;
	uint32_t from;			/* the caller's node index, or PC_PEER_NONE */
	uint64_t from_inc;		/* the caller fabric's incarnation */
	uint32_t nr_rails, pad;
	struct wire_addr a[PC_MAX_RAILS];
};

struct wire_region {
	uint32_t key, pad;
	uint64_t addr, len;
	uint32_t rkey[PC_MAX_RAILS];
};

struct wire_resp {
	uint32_t magic;
	uint32_t nr_rails;
	uint64_t inc;
	uint32_t nr_regions, pad;
	struct wire_addr a[PC_MAX_RAILS];
	struct wire_region r[VERBS_MAX_REGIONS];
};

#endif
