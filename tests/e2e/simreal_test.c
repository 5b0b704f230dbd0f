/*
 * simreal_test.c - the simulator against the real thing: one workload replayed in
 * order on a 3-node tcp cluster of pcd processes and in the simulator on the same
 * topology. Every page of every request must hit or miss alike (the simulator runs
 * the library's own placement, slot and eviction code), and alike in the simulator
 * with its time model (ops through the modelled network) and without (the stores
 * use each other's slots in place, a request's lookup and publishing in one store
 * call); the latency ratio is reported. argv[1] is the pcd binary.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster.h"
#include "run/hist.h"
#include "run/run.h"
#include "testutil.h"
#include "workload/workload.h"

#define STORE "slot_size_classes: [16KiB], slot_ways: 4, slot_num_buckets: 32, global_segment_size: 8MiB"
#define WORKLOAD "zipf:keys=3000,s=0.8,pages=8,requests=400"

struct outcomes {
	size_t n, cap;
	int8_t *hit;
	struct hist lat;
};

static void record(void *arg, uint64_t t, const uint64_t *pages, const int *status, uint32_t n,
		   uint64_t latency)
{
	struct outcomes *o = arg;

	(void)t;
	(void)pages;
	if (o->n + n > o->cap) {
		o->cap = (o->n + n) * 2;
		o->hit = realloc(o->hit, o->cap);
	}
	for (uint32_t i = 0; i < n; i++)
		o->hit[o->n++] = status[i] == 0;
	hist_add(&o->lat, latency);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void test_same_decisions(void)
{
	const char *pcd = pc_test_argc > 1 ? pc_test_argv[1] : "./pcd";
	struct ecl *E = ecl_up(pcd, "tcp", STORE, false);
	struct pc_store *cl = ecl_open_store(E, NULL);
	struct outcomes real = { 0 }, sim = { 0 }, timed = { 0 };
	struct run_cfg cfg = { .topo = E->topo, .seed = 1, .payload_free = true };
	struct run_result r;
	struct wl_gen *g;
	struct wl_req q;
	char err[PC_ERR_MAX];
	size_t diff = 0, tdiff = 0, hits = 0;
	uint32_t page = (uint32_t)E->topo->store.slot_max_page_bytes;
	uint8_t *buf = calloc(64, page);

	CU_ASSERT_PTR_NOT_NULL_FATAL(cl);
	CU_ASSERT_EQUAL_FATAL(wl_parse(WORKLOAD, &cfg.wl, err, sizeof(err)), 0);
	cfg.wl.rate = 200;	/* arrivals far apart: in the time model too, one at a time */
	/* the simulator, requests in order, no time model */
	cfg.on_request = record;
	cfg.on_request_arg = &sim;
	CU_ASSERT_EQUAL_FATAL(run_sim(&cfg, &r, err, sizeof(err)), 0);
	/* untimed, the simulator decides a request in one store call (slotmap_fill.c):
	 * the comparison below is of that path, all but the first few requests */
	CU_ASSERT(r.one_call > r.requests * 9 / 10);
	run_result_free(&r);
	/* the same requests on the real cluster: look up, then store what missed */
	CU_ASSERT_EQUAL_FATAL(wl_open(&cfg.wl, cfg.seed ^ 0x776c, 1, &g, err, sizeof(err)), 0);
	while (wl_next(g, &q) == 1) {
		struct pc_page pg[64];
		int status[64];
		uint32_t n = 0;
		double t0;

		for (uint32_t i = 0; i < q.npages; i++)
			pg[i] = (struct pc_page){ .key = &q.pages[i], .key_len = 8, .data = buf + i * page,
						  .cap = page, .len = page };
		t0 = now_ns();
		pc_batch_get(cl, pg, q.npages);
		for (uint32_t i = 0; i < q.npages; i++)
			status[i] = pg[i].status == -ENOENT ? -ENOENT : pg[i].status;
		record(&real, 0, q.pages, status, q.npages, (uint64_t)(now_ns() - t0));
		for (uint32_t i = 0; i < q.npages; i++)
			if (status[i])
				pg[n++] = (struct pc_page){ .key = &q.pages[i], .key_len = 8,
							    .data = buf + i * page, .len = page };
		if (n)
			pc_batch_set(cl, pg, n);
	}
	wl_close(g);
	CU_ASSERT_EQUAL(real.n, sim.n);
	for (size_t i = 0; i < real.n && i < sim.n; i++) {
		diff += real.hit[i] != sim.hit[i];
		hits += real.hit[i];
	}
	/* the simulator with its time model, one request at a time, for the latency */
	cfg.timing = true;
	cfg.on_request_arg = &timed;
	CU_ASSERT_EQUAL(run_sim(&cfg, &r, err, sizeof(err)), 0);
	run_result_free(&r);
	/* untimed, the stores map each other's slots; timed, they post ops: one answer */
	CU_ASSERT_EQUAL(timed.n, sim.n);
	for (size_t i = 0; i < timed.n && i < sim.n; i++)
		tdiff += timed.hit[i] != sim.hit[i];
	printf("\n  %zu page lookups: %zu hits; %zu decisions differ between the tcp cluster and the simulator, %zu between the simulator with and without its time model\n",
	       real.n, hits, diff, tdiff);
	printf("  lookup latency p50: tcp cluster %.1f us, simulator %.1f us (real / simulated %.2f; the simulator models the topology's rails, %.0f Gb/s and %.1f us each way, not loopback tcp in a VM)\n",
	       hist_quantile(&real.lat, 0.5) / 1000.0, hist_quantile(&timed.lat, 0.5) / 1000.0,
	       (double)hist_quantile(&real.lat, 0.5) / (double)hist_quantile(&timed.lat, 0.5),
	       E->topo->nodes[0].rails[0].gbps, E->topo->nodes[0].rails[0].latency_us);
	CU_ASSERT_EQUAL(diff, 0);
	CU_ASSERT_EQUAL(tdiff, 0);
	CU_ASSERT(hits > real.n / 10 && hits < real.n);	/* both hits and misses happened */
	free(real.hit);
	free(sim.hit);
	free(timed.hit);
	free(buf);
	pc_store_close(cl);
	ecl_down(E);
}

static CU_TestInfo tests[] = {
	{ "tcp cluster and simulator decide alike", test_same_decisions },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "sim vs real", NULL, NULL, NULL, NULL, tests })
