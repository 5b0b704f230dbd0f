/*
 * calib_fit.c - the model's keys fitted to the measured cases: the rail's rates from
 * the cases' growth with the page, the affine keys by least squares, the jitter by a
 * search on the cases' spread, the wake-up steps from the idle cases.
 *
 * Not for: the cases themselves and the replays (calib.c), the file (calib_file.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"

void calib_apply(struct pc_topology *t, const struct calib_params *p, bool disk)
{
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		struct pc_node *n = &t->nodes[i];

		n->memcpy_gbps = p->memcpy_gbps;
		for (uint32_t r = 0; r < n->nr_rails; r++) {
			n->rails[r].latency_us = p->latency_us;
			n->rails[r].gbps = p->gbps;
			n->rails[r].write_gbps = p->write_gbps;
			n->rails[r].op_us = p->op_us;
			n->rails[r].store_forward = p->store_forward;
			n->rails[r].segment_forward = p->segment_forward;
		}
		n->jitter = p->jitter;
		n->rpc_us = p->rpc_us;
		n->wake_us = p->wake_us;
		n->idle_us = p->idle_us;
		n->nap_us = p->nap_us;
		n->nap_idle_us = p->nap_idle_us;
		if (disk && n->has_nvme) {
			n->nvme.latency_us = p->nvme_latency_us;
			n->nvme.read_mbps = p->read_mbps;
			n->nvme.write_mbps = p->write_mbps;
			n->nvme.iops = (uint32_t)p->iops;
		}
	}
}

/*
 * The parameters as the linear variables of the model, in us and us per byte: the
 * rail's latency, its time per byte, the time per op, the copy time per byte; the
 * disk's latency, its time per byte read and written, the time per command; the
 * hand-off of an rpc; the two drains past the ports, as their keys (multiples of a
 * byte's time: linear at a known rate only, fit_affine).
 */
static void to_vars(const struct calib_params *p, double x[CALIB_NR_PARAMS])
{
	x[0] = p->latency_us;
	x[1] = 8.0 / (p->gbps * 1000.0);
	x[2] = p->op_us;
	x[3] = 1.0 / (p->memcpy_gbps * 1000.0);
	x[4] = p->nvme_latency_us;
	x[5] = 1.0 / p->read_mbps;		/* 1 MB/s is a byte a microsecond */
	x[6] = 1.0 / p->write_mbps;
	x[7] = 1e6 / p->iops;
	x[8] = p->rpc_us;
	x[9] = p->store_forward;
	x[10] = p->segment_forward;
}

/* Back from the variables; a rate whose time is 0 is the key's largest value, and
 * store_forward and segment_forward no more than theirs. A WRITE's byte costs
 * write_cost times a READ's. */
static void from_vars(const double x[CALIB_NR_PARAMS], double write_cost, struct calib_params *p)
{
	p->latency_us = x[0];
	p->gbps = x[1] > 8e-8 ? 8.0 / (x[1] * 1000.0) : 100000;
	p->write_gbps = x[1] * write_cost > 8e-8 ? 8.0 / (x[1] * write_cost * 1000.0) : 100000;
	p->op_us = x[2];
	p->memcpy_gbps = x[3] > 1e-7 ? 1.0 / (x[3] * 1000.0) : 10000;
	p->nvme_latency_us = x[4];
	p->read_mbps = x[5] > 1e-6 ? 1.0 / x[5] : 1e6;
	p->write_mbps = x[6] > 1e-6 ? 1.0 / x[6] : 1e6;
	p->iops = x[7] > 1e6 / (double)(1u << 30) ? 1e6 / x[7] : (double)(1u << 30);
	p->rpc_us = x[8];
	p->store_forward = fmin(x[9], CALIB_MAX_FORWARD);
	p->segment_forward = fmin(x[10], CALIB_MAX_FORWARD);
}

/* Solve the k x k system a x = y by Gaussian elimination with pivoting. */
static bool solve(double a[CALIB_NR_PARAMS][CALIB_NR_PARAMS], double *y, double *x, int k)
{
	for (int i = 0; i < k; i++) {
		int piv = i;

		for (int r = i + 1; r < k; r++)
			if (fabs(a[r][i]) > fabs(a[piv][i]))
				piv = r;
		if (fabs(a[piv][i]) < 1e-300)
			return false;
		for (int col = 0; col < k; col++) {
			double tmp = a[i][col];

			a[i][col] = a[piv][col];
			a[piv][col] = tmp;
		}
		{
			double tmp = y[i];

			y[i] = y[piv];
			y[piv] = tmp;
		}
		for (int r = i + 1; r < k; r++) {
			double f = a[r][i] / a[i][i];

			for (int col = i; col < k; col++)
				a[r][col] -= f * a[i][col];
			y[r] -= f * y[i];
		}
	}
	for (int i = k - 1; i >= 0; i--) {
		double s = y[i];

		for (int col = i + 1; col < k; col++)
			s -= a[i][col] * x[col];
		x[i] = s / a[i][i];
	}
	return true;
}

/*
 * min sum_i ((c0_i + A_i . x - y_i) / y_i)^2 over x >= 0: every subset of free
 * variables (the others held at 0) solved by normal equations, the best feasible
 * one kept. Four variables: sixteen subsets.
 */
static double nnls(uint32_t n, double A[][CALIB_NR_PARAMS], const double *c0, const double *y,
		   double x[CALIB_NR_PARAMS])
{
	double best = INFINITY;

	for (unsigned mask = 1; mask < 1u << CALIB_NR_PARAMS; mask++) {
		int idx[CALIB_NR_PARAMS], k = 0;
		double m[CALIB_NR_PARAMS][CALIB_NR_PARAMS] = { { 0 } }, v[CALIB_NR_PARAMS] = { 0 };
		double z[CALIB_NR_PARAMS] = { 0 }, full[CALIB_NR_PARAMS] = { 0 }, sse = 0;
		bool ok = true;

		for (int j = 0; j < CALIB_NR_PARAMS; j++)
			if (mask & (1u << j))
				idx[k++] = j;
		for (uint32_t i = 0; i < n; i++) {
			double w = 1.0 / (y[i] * y[i]), r = y[i] - c0[i];

			for (int a = 0; a < k; a++) {
				v[a] += w * A[i][idx[a]] * r;
				for (int b = 0; b < k; b++)
					m[a][b] += w * A[i][idx[a]] * A[i][idx[b]];
			}
		}
		if (!solve(m, v, z, k))
			continue;
		for (int a = 0; a < k; a++) {
			ok &= z[a] >= 0;
			full[idx[a]] = z[a];
		}
		if (!ok)
			continue;
		for (uint32_t i = 0; i < n; i++) {
			double p = c0[i];

			for (int j = 0; j < CALIB_NR_PARAMS; j++)
				p += A[i][j] * full[j];
			sse += (p - y[i]) * (p - y[i]) / (y[i] * y[i]);
		}
		if (sse < best) {
			best = sse;
			memcpy(x, full, sizeof(full));
		}
	}
	return best;
}

/* How far the simulated cases' spread (log of p90 over median) is from the measured
 * one, summed in squares over the store cases, with jitter j and the other keys at
 * the fit. */
static int jitter_error(struct pc_topology *t, uint32_t node, struct calib *c, double j,
			double *sse, char *err, size_t errlen)
{
	struct calib_params p = c->fit;
	int ret;

	p.jitter = j;
	ret = calib_simulate(t, node, c, &p, err, errlen);
	*sse = 0;
	for (uint32_t i = 0; !ret && i < c->nr_cases; i++) {
		const struct calib_case *k = &c->cases[i];
		double d;

		if ((k->op != CALIB_GET && k->op != CALIB_SET) || !(k->real_us > 0) ||
		    !(k->sim_us > 0))
			continue;	/* disk waits are the NVMe model's, not stretched */
		d = log(k->sim_p90_us / k->sim_us) - log(k->real_p90_us / k->real_us);
		*sse += d * d;
	}
	return ret;
}

/* nodes.jitter: a golden-section search over [0, JITTER_MAX] (the simulations draw
 * the same random numbers at every value, so the error is smooth in it). */
#define JITTER_MAX 1.5
#define JITTER_TOL 0.01

static int fit_jitter(struct pc_topology *t, uint32_t node, struct calib *c, char *err,
		      size_t errlen)
{
	const double g = (sqrt(5.0) - 1) / 2;
	double a = 0, b = JITTER_MAX, x1 = b - g * (b - a), x2 = a + g * (b - a), f1, f2;
	int ret = jitter_error(t, node, c, x1, &f1, err, errlen);

	if (!ret)
		ret = jitter_error(t, node, c, x2, &f2, err, errlen);
	while (!ret && b - a > JITTER_TOL) {
		if (f1 <= f2) {
			b = x2, x2 = x1, f2 = f1;
			x1 = b - g * (b - a);
			ret = jitter_error(t, node, c, x1, &f1, err, errlen);
		} else {
			a = x1, x1 = x2, f1 = f2;
			x2 = a + g * (b - a);
			ret = jitter_error(t, node, c, x2, &f2, err, errlen);
		}
	}
	c->fit.jitter = (a + b) / 2 < JITTER_TOL ? 0 : (a + b) / 2;
	return ret;
}

/*
 * The affine keys at a given jitter: the cases simulated at a base point and with
 * each variable doubled (at jitter 0 a case's time is exactly affine in them; with
 * jitter every simulation draws the same stretches in the same order, so a case's
 * median stays affine but for which batch is the median), then the least squares
 * fit; the rail's time per byte, where calib_byte_costs found it, is a constant
 * there, not a variable, and the base point's. store_forward and segment_forward are
 * fitted only then: they multiply the time per byte, so the model is affine in them
 * at a known rate alone (and with one page size they and the rate are one product).
 * Sets c->fit but its jitter, which it keeps.
 */
static int fit_affine(struct pc_topology *t, uint32_t node, struct calib *c, char *err,
		      size_t errlen)
{
	/* the base point and one step for each variable; the result does not depend on
	 * them (the model is affine), they only have to be valid values */
	struct calib_params base = {
		.latency_us = 10, .gbps = 20, .op_us = 1, .memcpy_gbps = 10,
		.nvme_latency_us = 80, .read_mbps = 2000, .write_mbps = 1000, .iops = 100000,
		.rpc_us = 20, .jitter = c->fit.jitter };
	double x0[CALIB_NR_PARAMS], A[CALIB_MAX_CASES][CALIB_NR_PARAMS], c0[CALIB_MAX_CASES];
	double y[CALIB_MAX_CASES], t0[CALIB_MAX_CASES], x[CALIB_NR_PARAMS] = { 0 }, sse;
	uint32_t rows = 0;
	int ret;

	if (c->read_byte_us > 0) {
		base.gbps = 8.0 / (c->read_byte_us * 1000.0);
		base.store_forward = 0.5;
		base.segment_forward = 0.5;
	}
	base.write_gbps = base.gbps / c->write_cost;
	to_vars(&base, x0);
	ret = calib_simulate(t, node, c, &base, err, errlen);
	for (uint32_t i = 0; !ret && i < c->nr_cases; i++)
		t0[i] = c->cases[i].sim_us;
	for (int j = 0; !ret && j < CALIB_NR_PARAMS; j++) {
		double xs[CALIB_NR_PARAMS];
		struct calib_params p = base;

		if (!x0[j]) {	/* not fitted (the drains without the rate) */
			for (uint32_t i = 0; i < c->nr_cases; i++)
				A[i][j] = 0;
			continue;
		}
		memcpy(xs, x0, sizeof(xs));
		xs[j] *= 2;		/* one variable doubled */
		from_vars(xs, c->write_cost, &p);
		p.jitter = base.jitter;
		ret = calib_simulate(t, node, c, &p, err, errlen);
		for (uint32_t i = 0; !ret && i < c->nr_cases; i++)
			A[i][j] = (c->cases[i].sim_us - t0[i]) / x0[j];
	}
	/* the idle cases are the wake-up's (calib_fit_wake), not the affine model's */
	for (uint32_t i = 0; !ret && i < c->nr_cases; i++) {
		if (c->cases[i].op == CALIB_IDLE)
			continue;
		memmove(A[rows], A[i], sizeof(A[i]));
		c0[rows] = t0[i];
		for (int j = 0; j < CALIB_NR_PARAMS; j++)
			c0[rows] -= A[rows][j] * x0[j];
		if (c->read_byte_us > 0) {	/* known: a constant, not a variable */
			c0[rows] += A[rows][1] * c->read_byte_us;
			A[rows][1] = 0;
		}
		y[rows++] = c->cases[i].real_us;
	}
	sse = ret ? INFINITY : nnls(rows, A, c0, y, x);
	if (c->read_byte_us > 0)	/* the rate the cases gave, not the fit */
		x[1] = c->read_byte_us;
	if (!ret && (!isfinite(sse) || x[1] <= 0 ||
		     (c->disk && (x[5] <= 0 || x[6] <= 0)))) {
		snprintf(err, errlen, "the measurements fit no model with a finite rate (the "
			 "network's and the disk's both needed): measure larger batches");
		ret = -EDOM;
	}
	if (!ret) {
		from_vars(x, c->write_cost, &c->fit);
		c->fit.jitter = base.jitter;
	}
	return ret;
}

/* An excess over back to back and the weight of its deviations: 1 / the case's time. */
struct excess {
	double us, w;
};

static int cmp_excess(const void *a, const void *b)
{
	double x = ((const struct excess *)a)->us, y = ((const struct excess *)b)->us;

	return x < y ? -1 : x > y;
}

/* The level of least weighted absolute deviation from v[0..n-1] (its weighted
 * median), sorted in place; 0 for none, and never below 0. */
static double level_of(struct excess *v, uint32_t n)
{
	double half = 0, sum = 0;
	uint32_t i = 0;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_excess);
	for (uint32_t k = 0; k < n; k++)
		half += v[k].w / 2;
	while (i + 1 < n && (sum += v[i].w) < half)
		i++;
	return v[i].us > 0 ? v[i].us : 0;
}

/*
 * nodes.nap_us, nap_idle_us, wake_us and idle_us from the idle cases: each one's
 * excess over the same get back to back (the batch-of-one get of the first page
 * size, measured), as two steps: nothing at the shortest gaps, nap_us from
 * nap_idle_us on, wake_us from idle_us on. A host's wake-up grows with the idle time
 * in tiers (a thread that stopped polling sleeps; later its CPU halts), and one tier
 * far out must not hide the first. The steps are those of least absolute deviation
 * relative to the cases' times (as the affine fit weighs its cases) over the gaps
 * they may start at, a tier left out where that fits as well (none when no gap is
 * slower; noise makes a tier its size; a lone one is the wake), the nap at most half
 * the wake (two steps closer than that are one wake-up and its spread) and from a
 * shorter gap than the wake's. A gap at a tier's edge mixes the two (the host's own
 * window is no sharper): the fit gives it to one. A step starts at a gap as slept
 * (calib_case_gap_us), not a point between two: the shorter choice would let a
 * wake-up, which lengthens a caller's wait, cause the next one. The nap, though, no
 * sooner than poll_us: the peer idles longer than the node slept (the answer's
 * flight and the request's), and a thread that polls that long does not sleep
 * before; a shorter start would have the model's peer nap between requests where a
 * real one still polls.
 */
void calib_fit_wake(struct calib *c, double poll_us)
{
	struct excess e[CALIB_NR_GAPS] = { 0 };
	double base = 0, best = INFINITY, gap[CALIB_NR_GAPS] = { 0 };
	uint32_t n = 0, page = 0, best_tiers = 0;

	for (uint32_t i = 0; i < c->nr_cases; i++)
		if (c->cases[i].op == CALIB_IDLE && n < CALIB_NR_GAPS && c->cases[i].real_us > 0) {
			gap[n] = calib_case_gap_us(&c->cases[i]);
			e[n].us = c->cases[i].real_us;
			e[n++].w = 1 / c->cases[i].real_us;
			page = c->cases[i].page;
		}
	for (uint32_t i = 0; i < c->nr_cases && !base; i++) {
		const struct calib_case *k = &c->cases[i];

		if (k->op == CALIB_GET && k->where == CALIB_PEER && k->batch == 1 && k->page == page)
			base = k->real_us;
	}
	c->fit.wake_us = c->fit.nap_us = 0;
	c->fit.idle_us = c->fit.nap_idle_us = n ? gap[n - 1] : 0;
	if (!base || n != CALIB_NR_GAPS)
		return;
	for (uint32_t g = 0; g < n; g++)
		e[g].us -= base;
	/* gaps nap..wake-1 nap and wake..n-1 wake the peer; nap == wake: no nap tier,
	 * wake == n: no tier */
	for (uint32_t wake = n + 1; wake-- > 0;)
		for (uint32_t nap = wake + 1; nap-- > 0;) {
			struct excess v[CALIB_NR_GAPS];
			double level[2], cost = 0;
			uint32_t tiers = (nap < wake) + (wake < n);

			memcpy(v, e + nap, (wake - nap) * sizeof(*v));
			level[0] = level_of(v, wake - nap);
			memcpy(v, e + wake, (n - wake) * sizeof(*v));
			level[1] = level_of(v, n - wake);
			if (nap < wake && (wake == n || 2 * level[0] > level[1] || gap[nap] >= gap[wake]))
				continue;	/* a lone tier is the wake's; the nap's the shorter */
			for (uint32_t g = 0; g < n; g++)
				cost += fabs(e[g].us - (g >= wake ? level[1] : g >= nap ? level[0] : 0)) *
					e[g].w;
			if (cost < best || (cost == best && tiers < best_tiers)) {
				best = cost;
				best_tiers = tiers;
				c->fit.nap_us = nap < wake ? level[0] : 0;
				c->fit.wake_us = wake < n ? level[1] : 0;
				c->fit.idle_us = gap[wake < n ? wake : n - 1];
				c->fit.nap_idle_us = nap < wake ? fmax(gap[nap], poll_us) : c->fit.idle_us;
			}
		}
}

/* The rail's rates from the cases (calib.h). Fitted with the other keys, the rate
 * went to whatever suited the many small cases: the fit gave part of the bytes' time
 * to the per-op time and the latency, and large gets came out slow. */
void calib_byte_costs(struct calib *c)
{
	const struct calib_case *lo[2] = { NULL }, *hi[2] = { NULL };	/* [get, set] */
	uint32_t batch = 0;
	double d[2];

	c->read_byte_us = 0;
	c->write_cost = 1;
	for (uint32_t i = 0; i < c->nr_cases; i++)
		if (c->cases[i].where == CALIB_PEER &&
		    (c->cases[i].op == CALIB_GET || c->cases[i].op == CALIB_SET))
			batch = c->cases[i].batch > batch ? c->cases[i].batch : batch;
	for (uint32_t i = 0; i < c->nr_cases; i++) {
		const struct calib_case *k = &c->cases[i];
		int o = k->op == CALIB_SET;

		if (k->where != CALIB_PEER || (k->op != CALIB_GET && k->op != CALIB_SET) ||
		    k->batch != batch)
			continue;
		lo[o] = !lo[o] || k->page < lo[o]->page ? k : lo[o];
		hi[o] = !hi[o] || k->page > hi[o]->page ? k : hi[o];
	}
	if (!lo[0] || !lo[1] || lo[0]->page == hi[0]->page || lo[1]->page != lo[0]->page ||
	    hi[1]->page != hi[0]->page)
		return;
	d[0] = hi[0]->real_us - lo[0]->real_us;
	d[1] = hi[1]->real_us - lo[1]->real_us;
	if (d[0] > 0 && d[1] > 0) {
		c->read_byte_us = d[0] / ((double)batch * (hi[0]->page - lo[0]->page));
		c->write_cost = d[1] / d[0];
	}
}

/* Rounds of fitting the affine keys and the jitter in turn: the jitter moves the
 * medians the affine keys are fitted to (a batch of several stretched waits has a
 * longer median than its waits' medians added), and they move the spread. */
#define FIT_ROUNDS 2

int calib_fit(const struct pc_topology *topo, uint32_t node, struct calib *c, char *err,
	      size_t errlen)
{
	struct pc_topology *t = pc_topology_dup(topo);
	int ret = t ? 0 : -ENOMEM;

	c->fit = (struct calib_params){ .jitter = 0 };
	calib_byte_costs(c);
	if (!ret)
		ret = fit_affine(t, node, c, err, errlen);
	for (int round = 0; round < FIT_ROUNDS && !ret; round++) {
		ret = fit_jitter(t, node, c, err, errlen);
		if (!ret && c->fit.jitter > 0)
			ret = fit_affine(t, node, c, err, errlen);
	}
	if (!ret)
		calib_fit_wake(c, topo->store.protocol == PC_PROTO_TCP ? topo->store.tcp_poll_us : 0);
	if (!ret)	/* the model at the fit, simulated again: what it predicts for each case */
		ret = calib_simulate(t, node, c, &c->fit, err, errlen);
	pc_topology_free(t);
	if (ret)
		return ret;
	c->rms_error = c->max_error = 0;
	for (uint32_t i = 0; i < c->nr_cases; i++) {
		double e = fabs(c->cases[i].sim_us / c->cases[i].real_us - 1);

		c->rms_error += e * e / c->nr_cases;
		c->max_error = e > c->max_error ? e : c->max_error;
	}
	c->rms_error = sqrt(c->rms_error);
	return 0;
}

