/*
 * bench_ref_test.c - pcbench's reference clients kept honest: each one, against a
 * memcached and a redis-server this test starts on free loopback ports, sets a few
 * pages, reads every one back byte-identical, finds them with exists, and sees keys
 * never set as misses (the silent-miss paths of meta gets and multi-key gets); the
 * ceiling's three stream variants move their bytes. Small counts: this guards the
 * code, it measures nothing (ci/bench.sh does).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_ref_int.h"
#include "bench_ref_io.h"
#include "testutil.h"

struct server {
	const char *name;
	pid_t pid;
	int port;
};

static struct server servers[2] = { { .name = "memcached" }, { .name = "redis" } };

/* A port nobody listens on now (the server binds it a moment later). */
static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &len))
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static void start(struct server *s)
{
	for (int attempt = 0; attempt < 5 && !s->pid; attempt++) {
		char port[16];
		pid_t pid;

		s->port = free_port();
		snprintf(port, sizeof(port), "%d", s->port);
		pid = fork();
		if (pid == 0) {
			int devnull = open("/dev/null", O_WRONLY);

			prctl(PR_SET_PDEATHSIG, SIGKILL);	/* never outlives the test */
			dup2(devnull, 1);
			dup2(devnull, 2);
			if (!strcmp(s->name, "memcached"))
				execlp("memcached", "memcached", "-p", port, "-l", "127.0.0.1", "-U", "0",
				       "-m", "64", "-I", "1m", "-t", "1", "-u", "root", (char *)NULL);
			else
				execlp("redis-server", "redis-server", "--port", port, "--bind",
				       "127.0.0.1", "--save", "", "--appendonly", "no",
				       "--protected-mode", "no", (char *)NULL);
			_exit(127);
		}
		/* up when it answers a connect; gone when it could not bind */
		for (int i = 0; i < 100; i++) {
			int fd = refio_connect("127.0.0.1", s->port), status;

			if (fd >= 0) {
				close(fd);
				s->pid = pid;
				break;
			}
			if (waitpid(pid, &status, WNOHANG) == pid)
				break;
			nanosleep(&(struct timespec){ .tv_nsec = 50000000 }, NULL);
		}
		if (!s->pid) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	if (!s->pid)
		fprintf(stderr, "bench_ref_test: could not start %s (is it installed? ci/install-deps.sh installs it)\n",
			s->name);
}

static int setup(void)
{
	start(&servers[0]);
	start(&servers[1]);
	return 0;
}

static int teardown(void)
{
	for (int i = 0; i < 2; i++) {
		if (!servers[i].pid)
			continue;
		kill(servers[i].pid, SIGTERM);
		waitpid(servers[i].pid, NULL, 0);
	}
	return 0;
}

static const struct server *server_of(const struct ref_client *c)
{
	return &servers[strcmp(c->peer, "memcached") ? 1 : 0];
}

/* Every client: pages of two sizes read back right, found by exists. */
static void test_clients_read_back(void)
{
	static const size_t pages[] = { 12288, 262144 };
	int clients = 0;

	for (const struct ref_client *const *c = ref_clients; *c; c++) {
		const struct server *sv = server_of(*c);

		CU_ASSERT_FATAL(sv->pid > 0);
		for (size_t p = 0; p < sizeof(pages) / sizeof(pages[0]); p++) {
			char prefix[64];
			struct ref_shape sh = { .nkeys = 11, .page = pages[p], .batch = 4, .iters = 1,
						.prefix = prefix };
			struct ref_result r;

			snprintf(prefix, sizeof(prefix), "t%d-%s-%zu", getpid(), (*c)->name, pages[p]);
			CU_ASSERT_EQUAL_FATAL(ref_run(*c, "127.0.0.1", sv->port, &sh, &r), 0);
			CU_ASSERT_EQUAL(r.bad, 0);
			CU_ASSERT_EQUAL(r.set.keys, 11);
			CU_ASSERT_EQUAL(r.get.keys, 11);
			CU_ASSERT_EQUAL(r.get.hits, 11);
			CU_ASSERT_EQUAL(r.get.bytes, 11 * pages[p]);
			if ((*c)->exists)	/* every pass of exists hits every key */
				CU_ASSERT_EQUAL(r.exists.hits, 11 * (uint64_t)ref_exists_passes(11, 4, 1));
			CU_ASSERT(ref_gbps(&r.get) > 0);
		}
		clients++;
	}
	CU_ASSERT(clients >= 6);
}

/* Keys never set, between keys that are: misses, and the hits in their places. */
static void test_clients_see_misses(void)
{
	enum { N = 6, PAGE = 4096 };

	for (const struct ref_client *const *c = ref_clients; *c; c++) {
		const struct server *sv = server_of(*c);
		char names[N][48], *key[N];
		size_t klen[N];
		uint8_t *val = calloc(N, PAGE);
		bool hit[N];
		struct ref_batch b = { .n = N, .page = PAGE, .key = key, .klen = klen, .val = val,
				       .hit = hit };
		struct ref_shape sh = { .nkeys = N, .page = PAGE, .batch = N, .iters = 1, .prefix = "x" };
		void *ctx;

		CU_ASSERT_FATAL(val != NULL);
		for (int i = 0; i < N; i++) {
			klen[i] = (size_t)snprintf(names[i], sizeof(names[i]), "miss%d-%s-%d-%s", getpid(),
						   (*c)->name, i, i % 2 ? "set" : "never");
			key[i] = names[i];
			memset(val + (size_t)i * PAGE, 'a' + i, PAGE);
		}
		CU_ASSERT_EQUAL_FATAL((*c)->open(&ctx, "127.0.0.1", sv->port, &sh, REF_SPIN_US), 0);
		/* the odd keys only */
		b.n = N / 2;
		for (int i = 0; i < N / 2; i++) {
			key[i] = names[2 * i + 1];
			klen[i] = strlen(key[i]);
			memset(val + (size_t)i * PAGE, 'a' + 2 * i + 1, PAGE);
		}
		CU_ASSERT_EQUAL((*c)->set(ctx, &b), 0);
		b.n = N;
		for (int i = 0; i < N; i++) {
			key[i] = names[i];
			klen[i] = strlen(key[i]);
		}
		memset(val, 0, (size_t)N * PAGE);
		memset(hit, 0, sizeof(hit));
		CU_ASSERT_EQUAL((*c)->get(ctx, &b), 0);
		for (int i = 0; i < N; i++) {
			CU_ASSERT_EQUAL(hit[i], i % 2 == 1);
			CU_ASSERT_EQUAL(val[(size_t)i * PAGE + PAGE - 1], i % 2 ? 'a' + i : 0);
		}
		if ((*c)->exists) {
			memset(hit, 0, sizeof(hit));
			CU_ASSERT_EQUAL((*c)->exists(ctx, &b), 0);
			for (int i = 0; i < N; i++)
				CU_ASSERT_EQUAL(hit[i], i % 2 == 1);
		}
		(*c)->close(ctx);
		free(val);
	}
}

/* Exists runs the get's passes, or more until they make REF_EXISTS_BATCHES batches. */
static void test_exists_passes(void)
{
	CU_ASSERT_EQUAL(ref_exists_passes(21845, 64, 3), 3);	/* 12 KiB pages: 342 batches a pass */
	CU_ASSERT_EQUAL(ref_exists_passes(4096, 64, 3), 8);	/* 64 KiB: 64 a pass */
	CU_ASSERT_EQUAL(ref_exists_passes(1024, 64, 3), 32);	/* 256 KiB: 16 a pass */
	CU_ASSERT_EQUAL(ref_exists_passes(1024, 64, 40), 40);	/* more asked: more run */
	CU_ASSERT_EQUAL(ref_exists_passes(1100, 64, 3), 29);	/* 18 a pass, the last one partial */
	CU_ASSERT_EQUAL(ref_exists_passes(1, 64, 1), REF_EXISTS_BATCHES);
	CU_ASSERT(ref_exists_passes(11, 4, 1) * 3 >= REF_EXISTS_BATCHES);
}

/* A server that is not there: a clean error, not a hang. */
static void test_unreachable(void)
{
	struct ref_shape sh = { .nkeys = 2, .page = 4096, .batch = 2, .iters = 1, .prefix = "u" };
	struct ref_result r;
	int port = free_port();

	CU_ASSERT(ref_run(&ref_mc_meta, "127.0.0.1", port, &sh, &r) < 0);
	CU_ASSERT(ref_run(&ref_redis_resp, "127.0.0.1", port, &sh, &r) < 0);
}

static void test_stream_variants(void)
{
	for (int k = 0; k < REF_STREAM_NR; k++)
		CU_ASSERT(ref_stream((enum ref_stream_kind)k, "127.0.0.1", 32u << 20, 1u << 20,
				     4u << 20, -1) > 0);
}

/* One batch at a time, the last batch shorter than the others, in order and as
 * pages from random places (the last page short too): every byte asked for arrives
 * and the sender stops where the receiver does. */
static void test_round_trips(void)
{
	for (int k = 0; k < REF_STREAM_NR; k++)
		for (size_t page = 0; page <= 12288; page += 12288)
			CU_ASSERT(ref_round_trips((enum ref_stream_kind)k, "127.0.0.1",
						  (8u << 20) + 12345, 768u << 10, page, 4u << 20,
						  -1) > 0);
}

static CU_TestInfo tests[] = {
	{ "every client reads back what it set", test_clients_read_back },
	{ "every client sees misses where keys were never set", test_clients_see_misses },
	{ "an absent server is an error", test_unreachable },
	{ "exists runs at least REF_EXISTS_BATCHES batches", test_exists_passes },
	{ "the stream variants move their bytes", test_stream_variants },
	{ "the stream variants move their bytes one batch at a time", test_round_trips },
	CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
	{ "bench_ref", setup, teardown, NULL, NULL, tests },
	CU_SUITE_INFO_NULL,
};

int main(int argc, char **argv)
{
	return pc_test_main(argc, argv, suites);
}
