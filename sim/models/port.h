/*
 * port.h - one queueing station: a NIC port's link, an NVMe device's data path.
 *
 * Jobs bring work in bytes; the station serves rate bytes per ns.
 *
 *   ps    processor sharing: n jobs each get rate/n (fair sharing between
 *         concurrent flows). Kept exactly with a virtual clock V that advances at
 *         rate/n: a job of w bytes arriving when V = v finishes when V = v + w, so
 *         completions happen in the order of those tags.
 *         M/G/1-PS mean sojourn: E[T] = E[S] / (1 - rho), rho = lambda E[S].
 *   fifo  first come first served on `servers` identical servers, each at rate.
 *         M/G/1 mean wait (Pollaczek-Khinchine): Wq = lambda E[S^2] / (2 (1 - rho)).
 *
 * Not for: latencies that do not queue (propagation, command latency): callers add
 * those around the station.
 */
#ifndef PC_SIM_PORT_H
#define PC_SIM_PORT_H

#include <stdint.h>

#include "engine/engine.h"

enum port_disc { PORT_PS, PORT_FIFO };

typedef void port_done_fn(struct sim *s, void *arg);

struct port_stats {
	uint64_t jobs;
	double bytes;
	double busy_ns;			/* time with at least one job in service */
	double sojourn_ns;		/* sum over jobs of completion - arrival */
};

struct port;

/* rate in bytes per ns (1 Gb/s = 0.125). servers matters for FIFO only. */
struct port *port_create(struct sim *s, double rate, enum port_disc disc, uint32_t servers);
void port_destroy(struct port *p);

/* Serve work bytes; done(s, arg) runs when they are through. */
void port_submit(struct port *p, double work, port_done_fn *done, void *arg);

void port_get_stats(const struct port *p, struct port_stats *out);
double port_rate(const struct port *p);

#endif
