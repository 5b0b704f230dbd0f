/*
 * metrics_test.c - the node-side counters, the latency histograms, the Prometheus
 * text, the HTTP endpoint and the peer reachability lines, on an in-process
 * cluster: each counter must move by exactly what a known workload causes.
 *
 * The endpoint is asked with curl and the text checked with promtool, the tools
 * an operator would use (ci/install-deps.sh installs both).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inproc/inproc.h"
#include "base/latency.h"
#include "slotmap/slotmap_int.h"
#include "slotmap_fixture.h"
#include "store.h"
#include "testutil.h"

#define NN 3
#define PAGE 4096

static struct pc_store *client;	/* a client store of the cluster up3() opened */

/* Three nodes on the in-process fabric (the slotmap fixture) and a client. */
static struct cluster *up3(void)
{
	struct cluster *C = up(NN, "slot_size_classes: [4KiB, 16KiB], global_segment_size: 8MiB");

	client = open_node(C, NULL, NULL);
	return C;
}

static void down3(struct cluster *C)
{
	pc_store_close(client);
	client = NULL;
	down(C);
}

static struct pc_served_metrics served(struct pc_store *s)
{
	struct pc_served_metrics m = { .size = sizeof(m) };

	CU_ASSERT_EQUAL(pc_store_served_metrics(s, &m), 0);
	return m;
}

static char *text_of(struct pc_store *s)
{
	long n = pc_store_metrics_text(s, NULL, 0);
	char *t;

	CU_ASSERT_FATAL(n > 0);
	t = malloc((size_t)n + 1);
	CU_ASSERT_EQUAL_FATAL(pc_store_metrics_text(s, t, (size_t)n + 1), n);
	CU_ASSERT_EQUAL(strlen(t), (size_t)n);
	return t;
}

/* promtool's verdict on text: 0 when it parses and passes the lint rules. */
static int promtool_check(const char *text)
{
	FILE *f = popen("promtool check metrics", "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	return pclose(f);
}

/* ------------------------------------------------------------------ histograms */

static void test_latency_buckets(void)
{
	static const struct { uint64_t ns; unsigned k; } v[] = {
		{ 0, 0 }, { 1, 0 }, { 1000, 0 }, { 1001, 1 }, { 2000, 1 }, { 2001, 2 },
		{ 4000, 2 }, { 1000000, 10 }, { 1024000, 10 }, { 1024001, 11 },
		{ 16777216000ULL, 24 }, { 16777216001ULL, 25 }, { UINT64_MAX / 2, 25 },
	};
	struct latency_hist h = { 0 }, snap;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		CU_ASSERT_EQUAL(latency_bucket(v[i].ns), v[i].k);
		latency_record(&h, v[i].ns % 100000000000ULL, false);
	}
	CU_ASSERT_EQUAL(latency_snapshot(&h, &snap), sizeof(v) / sizeof(v[0]));
	CU_ASSERT_DOUBLE_EQUAL(latency_bound_s(10), 1.024e-3, 1e-12);
}

/* Set and get batches of a known count: the histograms count exactly those, their
 * cumulative buckets never fall, +Inf is the count, and promtool takes the text. */
static void test_histogram_text(void)
{
	struct cluster *C = up3();
	char *t, pre[160];
	double prev = 0;

	for (int b = 0; b < 7; b++)
		CU_ASSERT_EQUAL(pc_test_write_pages(client, (uint32_t)b * 8, 8, PAGE), 8);
	for (int b = 0; b < 5; b++) {
		int wrong = 0, bad = 0;

		CU_ASSERT_EQUAL(pc_test_read_pages(client, 16, PAGE, &wrong, &bad), 16);
		CU_ASSERT_EQUAL(wrong + bad, 0);
	}
	t = text_of(client);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_batch_duration_seconds_count{node=\"client\",op=\"set\"}"), 7);
	/* pc_test_read_pages reads 16 pages 16 per batch: one batch each time */
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_batch_duration_seconds_count{node=\"client\",op=\"get\"}"), 5);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_batch_duration_seconds_count{node=\"client\",op=\"exists\"}"), 0);
	CU_ASSERT(pc_test_metric(t, "peercache_batch_duration_seconds_sum{node=\"client\",op=\"set\"}") > 0);
	for (unsigned k = 0; k < LAT_BUCKETS - 1; k++) {
		double v;

		snprintf(pre, sizeof(pre),
			 "peercache_batch_duration_seconds_bucket{node=\"client\",op=\"set\",le=\"%.8g\"}",
			 latency_bound_s(k));
		v = pc_test_metric(t, pre);
		CU_ASSERT(v >= prev);
		prev = v;
	}
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_batch_duration_seconds_bucket{node=\"client\",op=\"set\",le=\"+Inf\"}"), 7);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_batches_total{node=\"client\"}"), 12);
	CU_ASSERT_EQUAL(promtool_check(t), 0);
	free(t);
	t = text_of(C->s[1]);
	CU_ASSERT_EQUAL(promtool_check(t), 0);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_ready{node=\"n1\"}"), 1);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_members{node=\"n1\"}"), NN);
	free(t);
	down3(C);
}

/* Every bucket's le label is its bound exactly, to the microsecond: a duration just
 * past a bound (1.048577 s past 2^20 us) is counted by every bucket whose le is at
 * least it and by none below, as a scraper reads the labels. */
static void test_histogram_bounds(void)
{
	static const char pre[] = "peercache_batch_duration_seconds_bucket{node=\"client\",op=\"get\",le=\"";
	const uint64_t ns = 1048577000ULL;
	struct cluster *C = up3();
	const char *p;
	char *t;
	unsigned k = 0;

	latency_record(&client->lat[0], ns, false);
	t = text_of(client);
	for (p = strstr(t, pre); p; p = strstr(p, pre), k++) {
		char *end;
		double le, count;

		p += strlen(pre);
		if (!strncmp(p, "+Inf\"", 5)) {
			CU_ASSERT_EQUAL(k, LAT_BUCKETS - 1);
			continue;
		}
		le = strtod(p, &end);
		CU_ASSERT_FATAL(*end == '"' && k < LAT_BUCKETS - 1);
		CU_ASSERT_DOUBLE_EQUAL(le, latency_bound_s(k), latency_bound_s(k) * 1e-12);
		count = strtod(strchr(p, '}') + 1, NULL);
		CU_ASSERT_EQUAL(count, le * 1e9 >= (double)ns ? 1 : 0);
	}
	CU_ASSERT_EQUAL(k, LAT_BUCKETS);
	free(t);
	down3(C);
}

/* ------------------------------------------------------------------ served counters */

/* What the nodes served, summed, is exactly what the client's ops moved; the slots
 * used are the pages stored; the layout RPCs the client sent are the ones served. */
static void test_served_matches_client(void)
{
	struct cluster *C = up3();
	struct pc_metrics cm = { .size = sizeof(cm) };
	struct pc_served_metrics sum = { 0 }, n0;
	struct pc_fabric_stats f;
	int wrong = 0, bad = 0;
	char *t;

	for (uint32_t b = 0; b < 5; b++)
		CU_ASSERT_EQUAL(pc_test_write_pages(client, b * 10, 10, PAGE), 10);
	CU_ASSERT_EQUAL(pc_test_read_pages(client, 50, PAGE, &wrong, &bad), 50);
	pc_store_metrics(client, &cm);
	pc_fabric_get_stats(client->svc.fabric, &f);
	for (int i = 0; i < NN; i++) {
		struct pc_served_metrics m = served(C->s[i]);

		sum.reads += m.reads;
		sum.writes += m.writes;
		sum.cas += m.cas;
		sum.read_bytes += m.read_bytes;
		sum.write_bytes += m.write_bytes;
		sum.slots_used += m.slots_used;
		sum.slot_stored_bytes += m.slot_stored_bytes;
		sum.rpcs += m.rpcs;
		CU_ASSERT_EQUAL(m.refused_key + m.refused_bounds + m.refused_rights + m.refused_malformed, 0);
		CU_ASSERT(m.slots > 0);
		CU_ASSERT_EQUAL(m.members, NN);
	}
	CU_ASSERT(f.ops_read > 0 && f.ops_write > 0);
	CU_ASSERT_EQUAL(sum.reads, f.ops_read);
	CU_ASSERT_EQUAL(sum.writes, f.ops_write);
	CU_ASSERT_EQUAL(sum.cas, f.ops_cas);
	CU_ASSERT_EQUAL(sum.read_bytes, f.bytes_read);
	CU_ASSERT_EQUAL(sum.write_bytes, f.bytes_written);
	CU_ASSERT_EQUAL(cm.evictions, 0);
	CU_ASSERT_EQUAL(sum.slots_used, 50);
	CU_ASSERT_EQUAL(sum.slot_stored_bytes, 50 * PAGE);
	CU_ASSERT(sum.rpcs >= cm.layout_fetches);	/* and heartbeats, when on */
	/* the text says the same, per size class and per RPC type */
	n0 = served(C->s[0]);
	t = text_of(C->s[0]);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_served_ops_total{node=\"n0\",op=\"read\"}"), (double)n0.reads);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_served_bytes_total{node=\"n0\",op=\"write\"}"),
			(double)n0.write_bytes);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_slots_used{node=\"n0\",class=\"4096\"}"), (double)n0.slots_used);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_slots_used{node=\"n0\",class=\"16384\"}"), 0);
	free(t);
	{
		double layouts = 0;
		char pre[96];

		for (int i = 0; i < NN; i++) {
			t = text_of(C->s[i]);
			snprintf(pre, sizeof(pre), "peercache_served_rpcs_total{node=\"n%d\",type=\"layout\"}", i);
			layouts += pc_test_metric(t, pre);
			free(t);
		}
		CU_ASSERT_EQUAL(layouts, (double)cm.layout_fetches);
	}
	down3(C);
}

/* Each way an op can be refused moves its own counter by one. */
static void test_refused_by_reason(void)
{
	struct cluster *C = up3();
	struct pc_fabric *cf = client->svc.fabric, *nf = C->s[0]->svc.fabric;
	const struct sm_class *k = &sm_of(C->s[0]->mode)->own->cls[0];
	static uint8_t ro[4096] __attribute__((aligned(64)));
	struct pc_region r = { .addr = ro, .len = sizeof(ro), .access = PC_ACCESS_REMOTE_READ };
	uint64_t buf[2] = { 0 };
	struct pc_op ops[5];
	struct pc_served_metrics m;

	CU_ASSERT_EQUAL_FATAL(pc_fabric_reg(nf, &r), 0);
	ops[0] = (struct pc_op){ .kind = PC_OP_READ, .peer = 0, .rkey = k->rkey ^ 0x5a5a5a5a,
				 .raddr = k->base, .local = buf, .len = 8 };
	ops[1] = (struct pc_op){ .kind = PC_OP_READ, .peer = 0, .rkey = k->rkey,
				 .raddr = k->base + slot_region_bytes(&k->g), .local = buf, .len = 8 };
	ops[2] = (struct pc_op){ .kind = PC_OP_WRITE, .peer = 0, .rkey = r.key,
				 .raddr = (uint64_t)(uintptr_t)ro, .local = buf, .len = 8 };
	ops[3] = (struct pc_op){ .kind = PC_OP_CAS, .peer = 0, .rkey = k->rkey, .raddr = k->base + 4,
				 .local = buf, .len = 8 };
	ops[4] = (struct pc_op){ .kind = PC_OP_READ, .peer = 0, .rkey = r.key,
				 .raddr = (uint64_t)(uintptr_t)ro, .local = buf, .len = 16 };
	CU_ASSERT_EQUAL(pc_fabric_post(cf, ops, 5), 0);
	CU_ASSERT_EQUAL(ops[0].status, -ENOKEY);
	CU_ASSERT_EQUAL(ops[1].status, -EFAULT);
	CU_ASSERT_EQUAL(ops[2].status, -EACCES);
	CU_ASSERT_EQUAL(ops[3].status, -EINVAL);
	CU_ASSERT_EQUAL(ops[4].status, 0);
	m = served(C->s[0]);
	CU_ASSERT_EQUAL(m.refused_key, 1);
	CU_ASSERT_EQUAL(m.refused_bounds, 1);
	CU_ASSERT_EQUAL(m.refused_rights, 1);
	CU_ASSERT_EQUAL(m.refused_malformed, 1);
	CU_ASSERT_EQUAL(m.reads, 1);
	CU_ASSERT_EQUAL(m.read_bytes, 16);
	CU_ASSERT_EQUAL(m.writes + m.cas, 0);
	pc_fabric_dereg(nf, &r);
	down3(C);
}

/* ------------------------------------------------------------------ peer lines */

static char lines[16][PC_ERR_MAX];
static int nlines;

static void capture(void *arg, enum pc_log_level level, const char *line)
{
	(void)arg;
	if (level == PC_LOG_WARN && strstr(line, "peer ") && nlines < 16)
		snprintf(lines[nlines++], sizeof(lines[0]), "%s", line);
}

/* A peer going down gives one warning naming it and its address, however many
 * batches fail meanwhile (the backoff skips it); coming back gives one more;
 * peer_up follows. */
static void test_peer_transitions(void)
{
	struct cluster *C = up3();
	int wrong = 0, bad = 0;
	char *t;

	CU_ASSERT_EQUAL(pc_test_write_pages(client, 0, 30, PAGE), 30);
	pc_log_set_sink(capture, NULL);
	nlines = 0;
	inproc_world_set_down(C->w, 2, true);
	for (int i = 0; i < 3; i++)
		pc_test_read_pages(client, 30, PAGE, &wrong, &bad);
	CU_ASSERT(bad > 0);
	CU_ASSERT_EQUAL(nlines, 1);
	CU_ASSERT_NSTRING_EQUAL(lines[0], "peer n2 (127.0.0.1:40002): Connection refused; skipping it for ",
				strlen("peer n2 (127.0.0.1:40002): Connection refused; skipping it for "));
	t = text_of(client);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_peer_up{node=\"client\",peer=\"n2\"}"), 0);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_peer_up{node=\"client\",peer=\"n1\"}"), 1);
	free(t);
	inproc_world_set_down(C->w, 2, false);
	usleep(1100 * 1000);	/* past the peer's backoff */
	wrong = bad = 0;
	CU_ASSERT_EQUAL(pc_test_read_pages(client, 30, PAGE, &wrong, &bad), 30);
	CU_ASSERT_EQUAL(nlines, 2);
	if (nlines == 2)
		CU_ASSERT_NSTRING_EQUAL(lines[1], "peer n2 (127.0.0.1:40002) answers again after ",
					strlen("peer n2 (127.0.0.1:40002) answers again after "));
	pc_log_set_sink(NULL, NULL);
	t = text_of(client);
	CU_ASSERT_EQUAL(pc_test_metric(t, "peercache_peer_up{node=\"client\",peer=\"n2\"}"), 1);
	free(t);
	down3(C);
}

/* ------------------------------------------------------------------ the endpoint */

/* GET url with curl: the status code, and the body's first line in body. */
static int http_get(uint16_t port, const char *path, char *body, size_t len)
{
	char cmd[256], out[4096] = "";
	size_t n;
	FILE *f;
	int code = -1;

	snprintf(cmd, sizeof(cmd), "curl -s --max-time 10 -w '\\n%%{http_code}' http://127.0.0.1:%u%s",
		 port, path);
	f = popen(cmd, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	pclose(f);
	if (strrchr(out, '\n')) {
		code = atoi(strrchr(out, '\n') + 1);
		*strchr(out, '\n') = 0;
	}
	snprintf(body, len, "%s", out);
	return code;
}

/* /readyz is 503 until a store is attached, 200 while it serves and is in its own
 * ring, 503 once it left and 200 again when it is back, 503 after detaching;
 * /healthz is 200 all along. */
static void test_readyz_flips(void)
{
	struct cluster *C = up3();
	struct pc_metrics_server *ms;
	char body[512];
	uint16_t port;

	CU_ASSERT_EQUAL_FATAL(pc_metrics_serve(NULL, "127.0.0.1", 0, &ms), 0);
	port = pc_metrics_server_port(ms);
	CU_ASSERT(port != 0);
	pc_metrics_server_attach(ms, NULL, "starting");
	CU_ASSERT_EQUAL(http_get(port, "/readyz", body, sizeof(body)), 503);
	CU_ASSERT_STRING_EQUAL(body, "not ready: starting");
	CU_ASSERT_EQUAL(http_get(port, "/healthz", body, sizeof(body)), 200);
	CU_ASSERT_EQUAL(http_get(port, "/metrics", body, sizeof(body)), 200);
	pc_metrics_server_attach(ms, C->s[0], NULL);
	CU_ASSERT_EQUAL(http_get(port, "/readyz", body, sizeof(body)), 200);
	CU_ASSERT_STRING_EQUAL(body, "ready");
	CU_ASSERT_EQUAL(pc_store_set_member(C->s[0], "n0", false), 0);
	CU_ASSERT_EQUAL(http_get(port, "/readyz", body, sizeof(body)), 503);
	CU_ASSERT_STRING_EQUAL(body, "not ready: not a member of the ring");
	CU_ASSERT_EQUAL(pc_store_set_member(C->s[0], "n0", true), 0);
	CU_ASSERT_EQUAL(http_get(port, "/readyz", body, sizeof(body)), 200);
	CU_ASSERT_EQUAL(served(C->s[0]).member_changes, 2);
	CU_ASSERT_EQUAL(served(C->s[1]).member_changes, 2);	/* told both times */
	CU_ASSERT_EQUAL(http_get(port, "/nothing", body, sizeof(body)), 404);
	pc_metrics_server_attach(ms, NULL, "shutting down");
	CU_ASSERT_EQUAL(http_get(port, "/readyz", body, sizeof(body)), 503);
	CU_ASSERT_STRING_EQUAL(body, "not ready: shutting down");
	CU_ASSERT_EQUAL(http_get(port, "/healthz", body, sizeof(body)), 200);
	pc_metrics_server_close(ms);
	down3(C);
}

/* A method other than GET and HEAD is 405 with the Allow header that status
 * requires (RFC 9110 15.5.6), so a client learns what to send instead. */
static void test_method_not_allowed(void)
{
	struct pc_metrics_server *ms;
	char cmd[256], out[4096] = "";
	size_t n;
	FILE *f;

	CU_ASSERT_EQUAL_FATAL(pc_metrics_serve(NULL, "127.0.0.1", 0, &ms), 0);
	snprintf(cmd, sizeof(cmd), "curl -s -i --max-time 10 -X POST -d x http://127.0.0.1:%u/metrics",
		 pc_metrics_server_port(ms));
	f = popen(cmd, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	pclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, " 405 "));
	CU_ASSERT_PTR_NOT_NULL(strcasestr(out, "\r\nAllow: GET, HEAD\r\n"));
	pc_metrics_server_close(ms);
}

/* A port in use is an error, not a silent fallback. */
static void test_port_taken(void)
{
	struct pc_metrics_server *a, *b = NULL;

	CU_ASSERT_EQUAL_FATAL(pc_metrics_serve(NULL, NULL, 0, &a), 0);
	CU_ASSERT(pc_metrics_serve(NULL, NULL, pc_metrics_server_port(a), &b) < 0);
	CU_ASSERT_PTR_NULL(b);
	CU_ASSERT_EQUAL(pc_metrics_serve(NULL, "no.such.host.invalid", 0, &b), -EADDRNOTAVAIL);
	pc_metrics_server_close(a);
}

static char url_line[PC_ERR_MAX];

static void capture_url(void *arg, enum pc_log_level level, const char *line)
{
	(void)arg;
	(void)level;
	if (strstr(line, "metrics endpoint on "))
		snprintf(url_line, sizeof(url_line), "%s", line);
}

/* The URL logged for an IPv6 host has it in brackets, or no client can use it
 * (http://::1:PORT/ is no URL). */
static void test_ipv6_url(void)
{
	struct pc_metrics_server *ms;
	char want[64];

	url_line[0] = 0;
	pc_log_set_sink(capture_url, NULL);
	pc_log_set_level(PC_LOG_INFO);
	CU_ASSERT_EQUAL_FATAL(pc_metrics_serve(NULL, "::1", 0, &ms), 0);
	pc_log_set_level(PC_LOG_WARN);
	pc_log_set_sink(NULL, NULL);
	snprintf(want, sizeof(want), "metrics endpoint on http://[::1]:%u/metrics",
		 pc_metrics_server_port(ms));
	CU_ASSERT_NSTRING_EQUAL(url_line, want, strlen(want));
	printf("\n  %s\n", url_line);
	pc_metrics_server_close(ms);
}

static CU_TestInfo histogram_tests[] = {
	{ "log-scale buckets", test_latency_buckets },
	{ "histograms count the batches; promtool takes the text", test_histogram_text },
	{ "bucket bounds are exact in the le labels", test_histogram_bounds },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo served_tests[] = {
	{ "served ops and bytes equal the client's, slots the pages", test_served_matches_client },
	{ "refused ops by reason", test_refused_by_reason },
	{ "a peer's transitions, one line each", test_peer_transitions },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo http_tests[] = {
	{ "readyz flips with the store's state", test_readyz_flips },
	{ "a taken port or bad host fails", test_port_taken },
	{ "other methods: 405 with Allow", test_method_not_allowed },
	{ "an IPv6 host's URL is in brackets", test_ipv6_url },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "histograms", NULL, NULL, NULL, NULL, histogram_tests },
	     { "served", NULL, NULL, NULL, NULL, served_tests },
	     { "http", NULL, NULL, NULL, NULL, http_tests })
