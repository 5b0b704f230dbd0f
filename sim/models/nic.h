/*
 * nic.h - the network: every node's rails, each an egress and an ingress port.
 *
 * A transfer of b bytes in ops of o bytes from node u to node v on rail r takes
 *     T = L + max(S_egress(u,r), S_ingress(v,r)) + (F o + G min(b, 64 KiB)) / R + L
 * where L is the rail's one-way latency (latency_us) and S the time the b bytes spend
 * in each port, shared fairly (processor sharing) with every other transfer using it:
 * the sender's and receiver's links are crossed at once, and the slower of the two
 * decides. Once the ports are through, the last op's bytes cross F (store_forward)
 * more times at the rail's rate R and a segment's G (segment_forward) times:
 * on tcp a page's checksum is taken by one end before or after the other's work on
 * it, and a segment (NET_SEGMENT_BYTES) is copied into the sender's socket and out of
 * the receiver's one after the other, while a batch's pages and segments overlap.
 * Both are 0 (cut-through) for an RDMA NIC. Ports serve gbps / 8 bytes per ns (a
 * WRITE's bytes write_gbps / 8 where that is set), and each op holds a port op_us
 * more (per-op work: a TCP server's frames; 0 for RDMA NICs). A node keeps at most
 * max_outstanding ops in flight per rail; a transfer of more ops goes in rounds,
 * each with its own drain past the ports.
 *
 * Not for: what the bytes are (backend/fabric.c decides that).
 */
#ifndef PC_SIM_NIC_H
#define PC_SIM_NIC_H

#include <stdbool.h>

#include "config/topology.h"
#include "port.h"

struct sim_net;

struct sim_net *net_create(struct sim *s, const struct pc_topology *t, enum port_disc disc);
void net_destroy(struct sim_net *n);

/* Move bytes from `from` to `to` on `rail` as nops ops, issued by node `by` (whose
 * outstanding-op budget it uses); write: the bytes of WRITEs (at the ports' write
 * rates), else of READs or messages. done(s, arg) runs when the last byte landed. */
void net_transfer(struct sim_net *n, uint32_t by, uint32_t from, uint32_t to, uint32_t rail,
		  uint32_t nops, double bytes, bool write, port_done_fn *done, void *arg);

/* Bytes that cross without queueing anywhere (counted in net_bytes only). */
void net_count(struct sim_net *n, double bytes);

/* The rails two nodes share (both have them). */
uint32_t net_rails(const struct sim_net *n, uint32_t a, uint32_t b);
/* One-way latency of a node's rail, ns. */
uint64_t net_latency(const struct sim_net *n, uint32_t node, uint32_t rail);

/* Utilisation of all ports since the start: mean and the busiest one. */
void net_utilisation(const struct sim_net *n, double elapsed_ns, double *mean, double *max);
double net_bytes(const struct sim_net *n);

#endif
