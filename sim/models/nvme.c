/*
 * nvme.c - NVMe device model: admission by queue depth, command latency, a FIFO
 * data path with bandwidth and per-command overhead.
 */
#include <stdlib.h>

#include "nvme.h"

struct cmd {
	struct sim_nvme *d;
	double work;
	port_done_fn *done;
	void *arg;
	struct cmd *next;
};

struct sim_nvme {
	struct sim *s;
	struct port *data;
	uint64_t latency;
	uint32_t depth, inflight;
	double write_factor, per_cmd;	/* bytes-equivalent per command (1 / iops) */
	struct cmd *head, *tail;	/* waiting for a queue slot */
	double bytes;
};

struct sim_nvme *nvme_create(struct sim *s, const struct pc_nvme *cfg)
{
	struct sim_nvme *d = calloc(1, sizeof(*d));
	double rate = cfg->read_mbps * 1e6 / 1e9;	/* bytes per ns */

	if (!d)
		return NULL;
	d->s = s;
	d->data = port_create(s, rate, PORT_FIFO, 1);
	if (!d->data) {
		free(d);
		return NULL;
	}
	d->latency = (uint64_t)(cfg->latency_us * 1000.0);
	d->depth = cfg->queue_depth ? cfg->queue_depth : 1;
	d->write_factor = cfg->read_mbps / cfg->write_mbps;
	d->per_cmd = cfg->iops ? rate * 1e9 / cfg->iops : 0;
	return d;
}

void nvme_destroy(struct sim_nvme *d)
{
	if (!d)
		return;
	while (d->head) {
		struct cmd *c = d->head;

		d->head = c->next;
		free(c);
	}
	port_destroy(d->data);
	free(d);
}

static void admit(struct sim_nvme *d);

static void data_done(struct sim *s, void *arg)
{
	struct cmd *c = arg;
	struct sim_nvme *d = c->d;

	d->inflight--;
	c->done(s, c->arg);
	free(c);
	admit(d);
}

static void after_latency(struct sim *s, void *arg)
{
	struct cmd *c = arg;

	(void)s;
	port_submit(c->d->data, c->work, data_done, c);
}

static void admit(struct sim_nvme *d)
{
	while (d->head && d->inflight < d->depth) {
		struct cmd *c = d->head;

		d->head = c->next;
		if (!d->head)
			d->tail = NULL;
		d->inflight++;
		sim_after_fixed(d->s, d->latency, after_latency, c);
	}
}

void nvme_io(struct sim_nvme *d, bool write, double bytes, port_done_fn *done, void *arg)
{
	struct cmd *c = calloc(1, sizeof(*c));

	if (!c)
		abort();
	c->d = d;
	c->work = bytes * (write ? d->write_factor : 1.0) + d->per_cmd;
	c->done = done;
	c->arg = arg;
	d->bytes += bytes;
	if (d->tail)
		d->tail->next = c;
	else
		d->head = c;
	d->tail = c;
	admit(d);
}

double nvme_utilisation(const struct sim_nvme *d, double elapsed_ns)
{
	struct port_stats st;

	port_get_stats(d->data, &st);
	return elapsed_ns > 0 ? st.busy_ns / elapsed_ns : 0;
}

double nvme_bytes(const struct sim_nvme *d)
{
	return d->bytes;
}
