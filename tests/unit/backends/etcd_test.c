/*
 * etcd_test.c - the etcd registry (backends/etcd/etcd.c) against a fake of etcd's v3
 * JSON gateway on loopback, which answers each call as the test tells it: the failures
 * a real etcd gives only at awkward moments (a put that times out right after its
 * lease was granted, a member without quorum answering 503) on demand.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "builtin.h"
#include "config/topology.h"
#include "member_registry.h"
#include "testutil.h"

/* One fake endpoint: a thread answering one request per connection. */
struct fake {
	int fd;
	uint16_t port;
	pthread_t thread;
	int stop;
	pthread_mutex_t lock;
	int status_all;		/* nonzero: every call answers this (a failing member) */
	int fail_puts;		/* puts still to answer 503, as a timed-out request */
	int puts, grants, keepalives, calls;
	char watch[512];	/* the body of the last watch request */
	const char *held_key;	/* a txn on this key (base64) finds it created, ... */
	const char *held_value;	/* ... holding this (base64) */
};

static void answer(int fd, int status, const char *body)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n", status, strlen(body));

	if (write(fd, head, (size_t)n) < 0 || write(fd, body, strlen(body)) < 0)
		return;
}

/* Read one request (headers and a Content-Length body): its path in path (cap >
 * 255), its body in body. */
static bool read_request(int fd, char *path, size_t cap, char *body, size_t body_cap)
{
	char buf[8192], *end, *cl;
	size_t len = 0, want;

	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (r <= 0)
			return false;
		len += (size_t)r;
		buf[len] = 0;
		if ((end = strstr(buf, "\r\n\r\n")))
			break;
		if (len == sizeof(buf) - 1)
			return false;
	}
	cl = strcasestr(buf, "Content-Length:");
	want = (size_t)(end + 4 - buf) + (cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0);
	while (len < want && len < sizeof(buf) - 1) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (r <= 0)
			return false;
		len += (size_t)r;
	}
	buf[len] = 0;
	snprintf(body, body_cap, "%s", end + 4);
	return sscanf(buf, "POST %255s", path) == 1 && cap > 255;
}

static void serve_one(struct fake *f, int fd)
{
	char path[256], req[512], held[1024];
	int status = 200;
	const char *body = "{}";

	if (!read_request(fd, path, sizeof(path), req, sizeof(req)))
		return;
	pthread_mutex_lock(&f->lock);
	f->calls++;
	if (f->status_all) {
		status = f->status_all;
		body = "{\"error\":\"etcdserver: no leader\",\"code\":14}";
	} else if (!strcmp(path, "/v3/watch")) {
		snprintf(f->watch, sizeof(f->watch), "%s", req);
		status = 404;	/* no watch: membership lists every heartbeat */
	} else if (!strcmp(path, "/v3/kv/txn") && f->held_key && strstr(req, f->held_key)) {
		snprintf(held, sizeof(held),
			 "{\"succeeded\":false,\"responses\":[{\"response_range\":{\"kvs\":"
			 "[{\"key\":\"%s\",\"value\":\"%s\"}],\"count\":\"1\"}}]}",
			 f->held_key, f->held_value);
		body = held;
	} else if (!strcmp(path, "/v3/kv/txn")) {
		body = "{\"succeeded\":true}";
	} else if (!strcmp(path, "/v3/lease/grant")) {
		f->grants++;
		body = "{\"ID\":\"7\",\"TTL\":\"30\"}";
	} else if (!strcmp(path, "/v3/lease/keepalive")) {
		f->keepalives++;
		body = "{\"result\":{\"ID\":\"7\",\"TTL\":\"30\"}}";
	} else if (!strcmp(path, "/v3/kv/put")) {
		f->puts++;
		if (f->fail_puts > 0) {
			f->fail_puts--;
			status = 503;
			body = "{\"error\":\"etcdserver: request timed out\",\"code\":14}";
		}
	} else if (!strcmp(path, "/v3/kv/range")) {
		body = "{\"count\":\"0\"}";
	}
	pthread_mutex_unlock(&f->lock);
	answer(fd, status, body);
}

static void *fake_run(void *arg)
{
	struct fake *f = arg;

	while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p = { .fd = f->fd, .events = POLLIN };
		int c;

		if (poll(&p, 1, 50) <= 0 || (c = accept(f->fd, NULL, NULL)) < 0)
			continue;
		serve_one(f, c);
		close(c);
	}
	return NULL;
}

static void fake_start(struct fake *f)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);

	*f = (struct fake){ .fd = socket(AF_INET, SOCK_STREAM, 0) };
	pthread_mutex_init(&f->lock, NULL);
	CU_ASSERT_FATAL(f->fd >= 0);
	CU_ASSERT_FATAL(!bind(f->fd, (struct sockaddr *)&sa, sizeof(sa)));
	CU_ASSERT_FATAL(!listen(f->fd, 16));
	CU_ASSERT_FATAL(!getsockname(f->fd, (struct sockaddr *)&sa, &len));
	f->port = ntohs(sa.sin_port);
	CU_ASSERT_FATAL(!pthread_create(&f->thread, NULL, fake_run, f));
}

static void fake_stop(struct fake *f)
{
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
	pthread_join(f->thread, NULL);
	close(f->fd);
	pthread_mutex_destroy(&f->lock);
}

static int count(struct fake *f, const int *what)
{
	int n;

	pthread_mutex_lock(&f->lock);
	n = *what;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* A client's topology whose registry is at endpoints, its keys under prefix. */
static struct pc_topology *topo_prefix(const char *endpoints, const char *prefix)
{
	char text[512], err[PC_ERR_MAX];
	struct pc_topology *t = NULL;

	snprintf(text, sizeof(text),
		 "store: {max_nodes: 4, discovery: etcd, timeout_ms: 1000, etcd_prefix: \"%s\", "
		 "etcd_endpoints: \"%s\"}\n", prefix, endpoints);
	if (pc_topology_parse(text, strlen(text), "etcd_test.yaml", &t, err, sizeof(err)))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	return t;
}

static struct pc_topology *topo(const char *endpoints)
{
	return topo_prefix(endpoints, "/t/");
}

static void *open_registry(struct pc_topology *t)
{
	char err[PC_ERR_MAX] = "";
	void *r = NULL;
	int ret = etcd_registry_ops.open(t, "placement", &r, err, sizeof(err));

	if (ret)
		printf("\n  open: %s\n", err);
	CU_ASSERT_EQUAL(ret, 0);
	return ret ? NULL : r;
}

/* The put of the live record fails after its lease was granted: the next heartbeat
 * writes it, or the node is alive to itself and gone to everyone while it runs. */
static void test_record_after_failed_put(void)
{
	struct fake f;
	struct pc_topology *t;
	char ep[64];
	void *r;

	fake_start(&f);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%u", f.port);
	t = topo(ep);
	r = open_registry(t);
	if (r) {
		pthread_mutex_lock(&f.lock);
		f.fail_puts = 1;
		pthread_mutex_unlock(&f.lock);
		CU_ASSERT_NOT_EQUAL(etcd_registry_ops.alive(r, 1, "n1", 0x42, 30000), 0);
		CU_ASSERT_EQUAL(count(&f, &f.puts), 1);
		/* the next heartbeat, well within a third of the lease */
		CU_ASSERT_EQUAL(etcd_registry_ops.alive(r, 1, "n1", 0x42, 30000), 0);
		printf("\n  a put that failed after its grant: %d puts, %d grants in all",
		       count(&f, &f.puts), count(&f, &f.grants));
		CU_ASSERT_EQUAL(count(&f, &f.puts), 2);
		/* and once written, the lease is only kept alive */
		CU_ASSERT_EQUAL(etcd_registry_ops.alive(r, 1, "n1", 0x42, 30000), 0);
		CU_ASSERT_EQUAL(count(&f, &f.puts), 2);
		etcd_registry_ops.close(r);
	}
	pc_topology_free(t);
	fake_stop(&f);
}

/* The first endpoint answers 503 (an etcd member cut off from its quorum does): the
 * next one is asked, as for one that does not answer at all, and calls go on there. */
static void test_failing_member_skipped(void)
{
	struct fake bad, good;
	struct pc_topology *t;
	struct registry_entry e[4];
	uint32_t n = 9;
	char ep[128];
	void *r;

	fake_start(&bad);
	fake_start(&good);
	bad.status_all = 503;
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%u,http://127.0.0.1:%u", bad.port, good.port);
	t = topo(ep);
	r = open_registry(t);
	if (r) {
		CU_ASSERT_EQUAL(etcd_registry_ops.list(r, e, 4, &n), 0);
		CU_ASSERT_EQUAL(n, 0);
		CU_ASSERT_EQUAL(etcd_registry_ops.alive(r, 1, "n1", 0x42, 30000), 0);
		CU_ASSERT_EQUAL(count(&good, &good.puts), 1);
		etcd_registry_ops.close(r);
	}
	printf("\n  endpoints %s, the first answering 503: %d calls there, %d at the second",
	       ep, count(&bad, &bad.calls), count(&good, &good.calls));
	pc_topology_free(t);
	/* none that can serve: the line says so, and what to look at */
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%u", bad.port);
	t = topo(ep);
	{
		char err[PC_ERR_MAX] = "";

		r = NULL;
		CU_ASSERT_EQUAL(etcd_registry_ops.open(t, "placement", &r, err, sizeof(err)), -EIO);
		printf("\n  only that one: %s", err);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "HTTP 5xx"));
	}
	pc_topology_free(t);
	fake_stop(&bad);
	fake_stop(&good);
}

/* Two nodes of one name at different addresses claim at once: both list the table
 * before either wrote its entry, and the one whose create loses finds the entry it
 * wanted held by its own name. That is the -EEXIST it would have got a moment later,
 * not a reason to take another entry: two entries of one name split the table. */
static void test_claim_race_same_name(void)
{
	struct fake f;
	struct pc_topology *t;
	uint32_t index = 99;
	char ep[64];
	void *r;

	fake_start(&f);
	f.held_key = "L3QvdGFibGUvMDAwMDE=";	/* "/t/table/00001" */
	/* {"address":"10.0.0.9","name":"n1","port":7001} */
	f.held_value = "eyJhZGRyZXNzIjoiMTAuMC4wLjkiLCJuYW1lIjoibjEiLCJwb3J0Ijo3MDAxfQ==";
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%u", f.port);
	t = topo(ep);
	r = open_registry(t);
	if (r) {
		int ret = etcd_registry_ops.claim(r, "n1", "10.0.0.1", 7001, 1, 4, &index);

		printf("\n  n1 at 10.0.0.1 claims entry 1, just taken by n1 at 10.0.0.9: %s (entry %u)",
		       ret ? strerror(-ret) : "claimed", index);
		CU_ASSERT_EQUAL(ret, -EEXIST);
		/* the same node (its address and port): the entry is its own */
		index = 99;
		CU_ASSERT_EQUAL(etcd_registry_ops.claim(r, "n1", "10.0.0.9", 7001, 1, 4, &index), 0);
		CU_ASSERT_EQUAL(index, 1);
		etcd_registry_ops.close(r);
	}
	pc_topology_free(t);
	fake_stop(&f);
}

/* The watch of prefix, as the registry asked for it: its key and range_end (base64). */
static void watched(const char *prefix, char *key, char *range_end, size_t cap)
{
	struct fake f;
	struct pc_topology *t;
	char ep[64], w[512] = "";
	const char *k, *re;
	void *r;

	fake_start(&f);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%u", f.port);
	t = topo_prefix(ep, prefix);
	r = open_registry(t);
	for (int i = 0; i < 100 && !w[0]; i++) {
		usleep(10000);
		pthread_mutex_lock(&f.lock);
		snprintf(w, sizeof(w), "%s", f.watch);
		pthread_mutex_unlock(&f.lock);
	}
	if (r)
		etcd_registry_ops.close(r);
	pc_topology_free(t);
	fake_stop(&f);
	k = strstr(w, "\"key\":\"");
	re = strstr(w, "\"range_end\":\"");
	snprintf(key, cap, "%.*s", k ? (int)strcspn(k + 7, "\"") : 0, k ? k + 7 : "");
	snprintf(range_end, cap, "%.*s", re ? (int)strcspn(re + 13, "\"") : 0, re ? re + 13 : "");
	printf("\n  etcd_prefix \"%s\": watch %s", prefix, w);
}

/* The watch covers the cluster's keys: [prefix, prefix with its last byte + 1), and
 * for an empty prefix every key (key and range_end "\0"). Before, an empty prefix
 * had its range end computed one byte before the buffer, and watched the one key
 * "": the records' changes never reached membership. */
static void test_watch_range(void)
{
	char key[64], range_end[64];

	watched("/t/", key, range_end, sizeof(key));
	CU_ASSERT_STRING_EQUAL(key, "L3Qv");		/* "/t/" */
	CU_ASSERT_STRING_EQUAL(range_end, "L3Qw");	/* "/t0" */
	watched("", key, range_end, sizeof(key));
	CU_ASSERT_STRING_EQUAL(key, "AA==");		/* "\0" */
	CU_ASSERT_STRING_EQUAL(range_end, "AA==");
}

static CU_TestInfo tests[] = {
	{ "a live record whose put failed is written at the next heartbeat",
	  test_record_after_failed_put },
	{ "an endpoint that answers 503 is passed over", test_failing_member_skipped },
	{ "the watch covers the prefix; an empty one, every key", test_watch_range },
	{ "a claim that loses to its own name is refused, not moved", test_claim_race_same_name },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "etcd", NULL, NULL, NULL, NULL, tests })
