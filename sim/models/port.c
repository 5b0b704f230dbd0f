/*
 * port.c - processor-sharing and FIFO stations on the event engine.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "port.h"

#define NOT_ARMED UINT64_MAX

struct job {
	double tag;			/* PS: finish tag; FIFO: work */
	uint64_t arrive;
	port_done_fn *done;
	void *arg;
};

struct port {
	struct sim *s;
	double rate;
	enum port_disc disc;
	uint32_t servers, busy;
	/* PS: heap of jobs by tag; FIFO: ring buffer queue */
	struct job *v;
	size_t n, cap, head;
	double vt;			/* PS virtual time */
	uint64_t last;			/* when vt was last brought up to date */
	uint64_t armed;			/* PS: when the event we rely on fires (NOT_ARMED) */
	bool idle;			/* FIFO: no job in service or waiting */
	uint64_t busy_since;
	struct port_stats st;
};

struct port *port_create(struct sim *s, double rate, enum port_disc disc, uint32_t servers)
{
	struct port *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->s = s;
	p->rate = rate;
	p->disc = disc;
	p->servers = servers ? servers : 1;
	p->armed = NOT_ARMED;
	p->idle = true;
	return p;
}

void port_destroy(struct port *p)
{
	if (!p)
		return;
	free(p->v);
	free(p);
}

double port_rate(const struct port *p)
{
	return p->rate;
}

void port_get_stats(const struct port *p, struct port_stats *out)
{
	*out = p->st;
	if ((p->disc == PORT_PS && p->n) || (p->disc == PORT_FIFO && !p->idle))
		out->busy_ns += (double)(sim_now(p->s) - p->busy_since);
}

static void grow(struct port *p)
{
	size_t cap = p->cap ? p->cap * 2 : 16;
	struct job *v = malloc(cap * sizeof(*v));

	if (!v)
		abort();
	/* FIFO keeps a ring: unroll it into the new array */
	for (size_t i = 0; i < p->n; i++)
		v[i] = p->v[(p->head + i) % (p->cap ? p->cap : 1)];
	free(p->v);
	p->v = v;
	p->cap = cap;
	p->head = 0;
}

static void finish(struct port *p, const struct job *j)
{
	p->st.jobs++;
	p->st.sojourn_ns += (double)(sim_now(p->s) - j->arrive);
	j->done(p->s, j->arg);
}

/* ceil(x) for 0 <= x < 2^63 as an integer: libm's ceil is a call per event, and
 * the truncation and the compare give the same nanosecond. */
static uint64_t ceil_ns(double x)
{
	uint64_t t = (uint64_t)x;

	return t + ((double)t < x);
}

/* ------------------------------------------------------------------ PS */

static void ps_advance(struct port *p)
{
	uint64_t now = sim_now(p->s);

	if (p->n)
		p->vt += (double)(now - p->last) * p->rate / (double)p->n;
	p->last = now;
}

static void heap_up(struct job *h, size_t i)
{
	while (i && h[i].tag < h[(i - 1) / 2].tag) {
		struct job t = h[i];

		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static struct job heap_pop(struct port *p)
{
	struct job top = p->v[0];
	size_t i = 0;

	p->v[0] = p->v[--p->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct job t;

		if (l < p->n && p->v[l].tag < p->v[m].tag)
			m = l;
		if (r < p->n && p->v[r].tag < p->v[m].tag)
			m = r;
		if (m == i)
			break;
		t = p->v[i];
		p->v[i] = p->v[m];
		p->v[m] = t;
		i = m;
	}
	return top;
}

static void ps_event(struct sim *s, void *arg);

/*
 * One event per port at a time, at the earliest moment the head job could finish.
 * An arrival only slows the jobs already in service, so it leaves an armed event in
 * place: that event fires early, finds nothing through and arms the right time. Only
 * an arrival that would finish first (smaller than what the head has left) arms an
 * earlier event; the later one then fires at a time that is not `armed` and is
 * ignored. Events per job: about one; re-arming on every arrival and departure would
 * take two, and leave the superseded ones in the heap.
 */
static void ps_schedule(struct port *p)
{
	double dt;
	uint64_t t;

	if (!p->n)
		return;
	dt = (p->v[0].tag - p->vt) * (double)p->n / p->rate;
	t = sim_now(p->s) + ceil_ns(dt > 0 ? dt : 0);
	if (p->armed <= t)
		return;
	p->armed = t;
	sim_at(p->s, t, ps_event, p);
}

static void ps_event(struct sim *s, void *arg)
{
	struct port *p = arg;

	if (sim_now(s) != p->armed)
		return;		/* superseded by an earlier one */
	p->armed = NOT_ARMED;
	ps_advance(p);
	/* Every job whose tag the virtual clock reached is through (ties together). */
	while (p->n && p->v[0].tag <= p->vt + 1e-9) {
		struct job j = heap_pop(p);

		if (!p->n) {
			p->st.busy_ns += (double)(sim_now(p->s) - p->busy_since);
			p->vt = 0;	/* idle: restart the virtual clock, keeps tags small */
		}
		finish(p, &j);
	}
	ps_schedule(p);
}

/* ------------------------------------------------------------------ FIFO */

static void fifo_start(struct port *p);

struct fifo_ev {
	struct port *p;
	struct job j;
};

static void fifo_event(struct sim *s, void *arg)
{
	struct fifo_ev *e = arg;
	struct port *p = e->p;
	struct job j = e->j;

	(void)s;
	free(e);
	p->busy--;
	/* Busy until nothing is in service or waiting: a departure with jobs queued
	 * starts the next one at once and the busy period goes on. */
	if (!p->busy && !p->n) {
		p->st.busy_ns += (double)(sim_now(p->s) - p->busy_since);
		p->idle = true;
	}
	finish(p, &j);
	fifo_start(p);
}

static void fifo_start(struct port *p)
{
	while (p->busy < p->servers && p->n) {
		struct fifo_ev *e = malloc(sizeof(*e));

		if (!e)
			abort();
		e->p = p;
		e->j = p->v[p->head];
		p->head = (p->head + 1) % p->cap;
		p->n--;
		if (p->idle) {
			p->busy_since = sim_now(p->s);
			p->idle = false;
		}
		p->busy++;
		sim_at(p->s, sim_now(p->s) + ceil_ns(e->j.tag / p->rate), fifo_event, e);
	}
}

void port_submit(struct port *p, double work, port_done_fn *done, void *arg)
{
	struct job j = { .tag = work, .arrive = sim_now(p->s), .done = done, .arg = arg };

	p->st.bytes += work;
	if (p->n == p->cap)
		grow(p);
	if (p->disc == PORT_FIFO) {
		p->v[(p->head + p->n) % p->cap] = j;
		p->n++;
		fifo_start(p);
		return;
	}
	ps_advance(p);
	if (!p->n)
		p->busy_since = sim_now(p->s);
	j.tag = p->vt + work;
	p->v[p->n] = j;
	heap_up(p->v, p->n++);
	ps_schedule(p);
}
