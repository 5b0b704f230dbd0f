/*
 * nic.c - rails as pairs of processor-sharing ports, a latency each way, and an
 * outstanding-op budget per node and rail.
 */
#include <math.h>
#include <stdlib.h>

#include "nic.h"

/* The most bytes a segment carries: TCP's with segmentation offload, and loopback's
 * MTU. */
#define NET_SEGMENT_BYTES 65536.0

struct rail_ports {
	struct port *egress, *ingress;
	uint64_t latency;		/* ns, one way */
	double op_bytes;		/* an op's port time (op_us), as bytes at its rate */
	double write_scale;		/* a WRITE's byte, as bytes at its rate (gbps /
					 * write_gbps) */
	double op_drain;		/* store_forward / rate: an op's byte past the ports */
	double seg_drain;		/* segment_forward / rate: a segment's byte */
	uint32_t max_outstanding, outstanding;
	struct waiting *wait_head, *wait_tail;
};

struct sim_net {
	struct sim *s;
	uint32_t nr_nodes;
	uint32_t *nr_rails;
	struct rail_ports **rails;	/* [node][rail] */
	double bytes;
	struct xfer *spare;		/* finished transfers, for reuse */
};

/* A transfer waiting for outstanding-op budget. */
struct waiting {
	struct xfer *x;
	struct waiting *next;
};

struct xfer {
	struct sim_net *n;
	struct xfer *next_spare;
	uint32_t by, from, to, rail;
	uint32_t ops_left, round_ops;	/* ops still to send; ops in the current round */
	double bytes_per_op;
	bool write;			/* WRITEs' bytes */
	int parts;			/* ports still serving the current round */
	port_done_fn *done;
	void *arg;
};

struct sim_net *net_create(struct sim *s, const struct pc_topology *t, enum port_disc disc)
{
	struct sim_net *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->s = s;
	n->nr_nodes = t->nr_nodes;
	n->nr_rails = calloc(t->nr_nodes, sizeof(*n->nr_rails));
	n->rails = calloc(t->nr_nodes, sizeof(*n->rails));
	if (!n->nr_rails || !n->rails)
		goto err;
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		const struct pc_node *node = &t->nodes[i];

		n->nr_rails[i] = node->nr_rails;
		n->rails[i] = calloc(node->nr_rails, sizeof(**n->rails));
		if (!n->rails[i])
			goto err;
		for (uint32_t r = 0; r < node->nr_rails; r++) {
			struct rail_ports *rp = &n->rails[i][r];
			double rate = node->rails[r].gbps / 8.0;	/* bytes per ns */

			rp->egress = port_create(s, rate, disc, 1);
			rp->ingress = port_create(s, rate, disc, 1);
			if (!rp->egress || !rp->ingress)
				goto err;
			rp->latency = (uint64_t)(node->rails[r].latency_us * 1000.0);
			rp->op_bytes = node->rails[r].op_us * 1000.0 * rate;
			rp->op_drain = node->rails[r].store_forward / rate;
			rp->seg_drain = node->rails[r].segment_forward / rate;
			rp->write_scale = node->rails[r].write_gbps > 0 ?
					  node->rails[r].gbps / node->rails[r].write_gbps : 1;
			rp->max_outstanding = node->rails[r].max_outstanding;
		}
	}
	return n;
err:
	net_destroy(n);
	return NULL;
}

void net_destroy(struct sim_net *n)
{
	if (!n)
		return;
	for (uint32_t i = 0; n->rails && i < n->nr_nodes; i++) {
		for (uint32_t r = 0; n->rails[i] && r < n->nr_rails[i]; r++) {
			port_destroy(n->rails[i][r].egress);
			port_destroy(n->rails[i][r].ingress);
		}
		free(n->rails[i]);
	}
	free(n->rails);
	free(n->nr_rails);
	while (n->spare) {
		struct xfer *x = n->spare;

		n->spare = x->next_spare;
		free(x);
	}
	free(n);
}

uint32_t net_rails(const struct sim_net *n, uint32_t a, uint32_t b)
{
	uint32_t r = n->nr_rails[a] < n->nr_rails[b] ? n->nr_rails[a] : n->nr_rails[b];

	return r ? r : 1;
}

uint64_t net_latency(const struct sim_net *n, uint32_t node, uint32_t rail)
{
	return n->rails[node][rail].latency;
}

static void start_round(struct xfer *x);

static void budget_release(struct sim_net *n, uint32_t by, uint32_t rail, uint32_t ops)
{
	struct rail_ports *rp = &n->rails[by][rail];

	rp->outstanding -= ops;
	/* Whoever waits goes next, in arrival order, while the budget lasts. */
	while (rp->wait_head) {
		struct waiting *w = rp->wait_head;
		uint32_t want = w->x->ops_left < rp->max_outstanding ? w->x->ops_left :
								       rp->max_outstanding;

		if (rp->outstanding + want > rp->max_outstanding)
			break;
		rp->wait_head = w->next;
		if (!rp->wait_head)
			rp->wait_tail = NULL;
		start_round(w->x);
		free(w);
	}
}

static void round_done(struct sim *s, void *arg)
{
	struct xfer *x = arg;
	struct sim_net *n = x->n;

	(void)s;
	budget_release(n, x->by, x->rail, x->round_ops);
	if (x->ops_left) {
		start_round(x);
		return;
	}
	x->done(n->s, x->arg);
	x->next_spare = n->spare;
	n->spare = x;
}

/* The second latency, after both ports are through, and the last op's and the last
 * segment's bytes through the stages past them (store_forward, segment_forward). */
static void part_done(struct sim *s, void *arg)
{
	struct xfer *x = arg;
	const struct rail_ports *rp = &x->n->rails[x->by][x->rail];
	double seg, drain;

	if (--x->parts)
		return;
	seg = fmin(x->bytes_per_op * x->round_ops, NET_SEGMENT_BYTES);
	drain = (rp->op_drain * x->bytes_per_op + rp->seg_drain * seg) *
		(x->write ? rp->write_scale : 1);
	sim_after_fixed(s, rp->latency + (uint64_t)drain, round_done, x);
}

static void after_request_latency(struct sim *s, void *arg)
{
	struct xfer *x = arg;
	struct sim_net *n = x->n;
	double bytes = x->bytes_per_op * x->round_ops;
	const struct rail_ports *src = &n->rails[x->from][x->rail], *dst = &n->rails[x->to][x->rail];

	(void)s;
	n->bytes += bytes;
	x->parts = 2;
	port_submit(src->egress, bytes * (x->write ? src->write_scale : 1) +
			src->op_bytes * x->round_ops, part_done, x);
	port_submit(dst->ingress, bytes * (x->write ? dst->write_scale : 1) +
			dst->op_bytes * x->round_ops, part_done, x);
}

static void start_round(struct xfer *x)
{
	struct sim_net *n = x->n;
	struct rail_ports *rp = &n->rails[x->by][x->rail];
	uint32_t ops = x->ops_left < rp->max_outstanding ? x->ops_left : rp->max_outstanding;

	if (rp->outstanding + ops > rp->max_outstanding) {
		struct waiting *w = malloc(sizeof(*w));

		if (!w)
			abort();
		w->x = x;
		w->next = NULL;
		if (rp->wait_tail)
			rp->wait_tail->next = w;
		else
			rp->wait_head = w;
		rp->wait_tail = w;
		return;
	}
	rp->outstanding += ops;
	x->round_ops = ops;
	x->ops_left -= ops;
	sim_after_fixed(n->s, rp->latency, after_request_latency, x);
}

void net_transfer(struct sim_net *n, uint32_t by, uint32_t from, uint32_t to, uint32_t rail,
		  uint32_t nops, double bytes, bool write, port_done_fn *done, void *arg)
{
	struct xfer *x = n->spare;

	if (x)
		n->spare = x->next_spare;
	else if (!(x = malloc(sizeof(*x))))
		abort();
	*x = (struct xfer){ .n = n, .by = by, .from = from, .to = to, .rail = rail,
			    .ops_left = nops ? nops : 1, .write = write, .done = done, .arg = arg };
	x->bytes_per_op = bytes / x->ops_left;
	start_round(x);
}

void net_utilisation(const struct sim_net *n, double elapsed_ns, double *mean, double *max)
{
	double sum = 0, top = 0;
	uint32_t ports = 0;

	for (uint32_t i = 0; i < n->nr_nodes; i++) {
		for (uint32_t r = 0; r < n->nr_rails[i]; r++) {
			struct port *pp[2] = { n->rails[i][r].egress, n->rails[i][r].ingress };

			for (int k = 0; k < 2; k++) {
				struct port_stats st;
				double u;

				port_get_stats(pp[k], &st);
				u = elapsed_ns > 0 ? st.busy_ns / elapsed_ns : 0;
				sum += u;
				top = u > top ? u : top;
				ports++;
			}
		}
	}
	*mean = ports ? sum / ports : 0;
	*max = top;
}

void net_count(struct sim_net *n, double bytes)
{
	n->bytes += bytes;
}

double net_bytes(const struct sim_net *n)
{
	return n->bytes;
}
