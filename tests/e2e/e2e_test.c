/*
 * e2e_test.c - the store across processes: this process is node n0 (it embeds the
 * library, as a serving engine does), pcd daemons are n1 and n2, and forked client
 * processes read. Round trips byte for byte, every miss reason, exists, bucket
 * reservations or pool evictions, oversize pages, malformed frames and refused ops
 * against a live pcd, peers stalled, killed mid-batch and restarted, and nodes
 * leaving and joining the ring. In p2p mode also: a publishing node killed.
 *
 * argv[1] is the pcd binary; argv[2] the protocol (tcp by default, rxe in the VM);
 * argv[3] the mode (slotmap by default, or p2p).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <peercache/pc_fabric.h>
#include <peercache/peercache.h>

#include "proto.h"
#include "store.h"
#include "tcp/tcp_proto.h"
#include "cluster.h"
#include "testutil.h"

static const char *pcd_bin(void)
{
	return pc_test_argc > 1 ? pc_test_argv[1] : "./pcd";
}

static const char *protocol(void)
{
	return pc_test_argc > 2 ? pc_test_argv[2] : "tcp";
}

static bool over_tcp(void)
{
	return !strcmp(protocol(), "tcp");
}

static const char *mode(void)
{
	return pc_test_argc > 3 ? pc_test_argv[3] : "slotmap";
}

static bool p2p(void)
{
	return !strcmp(mode(), "p2p");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* n0 in this process, n1 and n2 as pcd. */
static struct ecl *up(const char *store)
{
	char s[512];

	snprintf(s, sizeof(s), "mode: %s, %s", mode(), store);
	return ecl_up(pcd_bin(), protocol(), s, true);
}

static uint32_t owner(struct ecl *E, const char *key)
{
	return ring_owner_of(E->n0->svc.ring, keyhash_of(key, strlen(key)));
}

static void key_on(struct ecl *E, uint32_t node, const char *prefix, int *j, char *out)
{
	do
		sprintf(out, "%s%d", prefix, (*j)++);
	while (owner(E, out) != node);
}

/* Write keys[0..n) of len bytes, version v, from store s. */
static int put(struct pc_store *s, char (*keys)[32], size_t n, size_t len, uint32_t v, int *st)
{
	uint8_t *buf = malloc(n * len);
	struct pc_page *pg = calloc(n, sizeof(*pg));
	int ret;

	for (size_t i = 0; i < n; i++) {
		pc_test_fill(buf + i * len, len, keys[i], v);
		pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]),
					  .data = buf + i * len, .len = len };
	}
	ret = pc_batch_set(s, pg, n);
	for (size_t i = 0; st && i < n; i++)
		st[i] = pg[i].status;
	free(buf);
	free(pg);
	return ret;
}

/* Read them back; st[i] = status, and -EBADMSG for a hit that is not version v. */
static int get(struct pc_store *s, char (*keys)[32], size_t n, size_t len, size_t expect,
	       uint32_t v, int *st)
{
	uint8_t *buf = malloc(n * len);
	struct pc_page *pg = calloc(n, sizeof(*pg));
	int ret;

	for (size_t i = 0; i < n; i++)
		pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]),
					  .data = buf + i * len, .cap = len, .len = expect };
	ret = pc_batch_get(s, pg, n);
	for (size_t i = 0; i < n; i++) {
		st[i] = pg[i].status;
		if (!st[i] && !pc_test_page_ok(pg[i].data, pg[i].len, keys[i], v))
			st[i] = -EBADMSG;
	}
	free(buf);
	free(pg);
	return ret;
}

/* Run fn in a forked process with its own client store; its exit code is fn's. */
static int in_child(struct ecl *E, int (*fn)(struct ecl *, struct pc_store *, void *), void *arg)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct pc_store *s = ecl_open_store(E, NULL);
		int rc = s ? fn(E, s, arg) : 99;

		pc_store_close(s);
		_exit(rc);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 98;
}

struct rt_arg {
	char (*keys)[32];
	size_t n;
};

static int reader(struct ecl *E, struct pc_store *s, void *p)
{
	struct rt_arg *a = p;
	int *st = calloc(a->n, sizeof(int)), bad = 0;

	(void)E;
	get(s, a->keys, a->n, 12288, 12288, 5, st);
	for (size_t i = 0; i < a->n; i++)
		bad += st[i] != 0;
	free(st);
	return bad ? 1 : 0;
}

static void test_roundtrip(void)
{
	struct ecl *E = up("slot_size_classes: [16KiB, 256KiB], global_segment_size: 32MiB");
	char keys[96][32];
	int st[96], on[3] = { 0 };
	struct rt_arg a = { keys, 96 };

	for (int i = 0; i < 96; i++) {
		sprintf(keys[i], "rt-%d", i);
		on[owner(E, keys[i])]++;
	}
	printf("\n  %s over %s, 96 keys: %s %d on n0 (this process), %d on n1, %d on n2 (pcd)\n",
	       mode(), protocol(), p2p() ? "pages on n0, directory entries" : "pages", on[0], on[1], on[2]);
	CU_ASSERT_EQUAL(put(E->n0, keys, 96, 12288, 5, NULL), 96);
	CU_ASSERT_EQUAL(get(E->n0, keys, 96, 12288, 12288, 5, st), 96);
	/* two other processes read every page back */
	CU_ASSERT_EQUAL(in_child(E, reader, &a), 0);
	CU_ASSERT_EQUAL(in_child(E, reader, &a), 0);
	ecl_down(E);
}

static void test_misses_and_exists(void)
{
	struct ecl *E = up("slot_size_classes: [16KiB], slot_ways: 4, global_segment_size: 8MiB");
	char keys[8][32], none[8][32];
	int st[8], j = 0;
	struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) };
	struct pc_page ex[8];

	for (int i = 0; i < 8; i++) {
		key_on(E, (uint32_t)(1 + i % 2), "ms", &j, keys[i]);
		sprintf(none[i], "never-%d", i);
	}
	CU_ASSERT_EQUAL(put(E->n0, keys, 8, 12288, 1, NULL), 8);
	/* clean misses */
	CU_ASSERT_EQUAL(get(E->n0, none, 8, 16384, 0, 1, st), 0);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(st[i], -ENOENT);
	/* no dirty hit on a length mismatch */
	CU_ASSERT_EQUAL(get(E->n0, keys, 8, 16384, 8192, 1, st), 0);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(st[i], -ENOENT);
	CU_ASSERT_EQUAL(get(E->n0, keys, 8, 16384, 0, 1, st), 8);
	/* exists agrees with get in one round trip: slotmap reads header bytes only (n0
	 * wrote these keys, so it knows their ways: the way's header and the bucket's
	 * 64-byte index block per key, not ways x 64), p2p asks the directory and reads
	 * nothing */
	for (int i = 0; i < 8; i++)
		ex[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]) };
	pc_store_metrics(E->n0, &m0);
	CU_ASSERT_EQUAL(pc_batch_exists(E->n0, ex, 8), 8);
	pc_store_metrics(E->n0, &m1);
	printf("\n  %s exists over %s: %llu bytes read for 8 keys, %llu round trip(s)\n", mode(),
	       protocol(), (unsigned long long)(m1.bytes_read - m0.bytes_read),
	       (unsigned long long)(m1.round_trips - m0.round_trips));
	CU_ASSERT_EQUAL(m1.bytes_read - m0.bytes_read, p2p() ? 0 : 8 * 2 * 64);
	CU_ASSERT_EQUAL(m1.round_trips - m0.round_trips, 1);
	CU_ASSERT(m1.miss_length >= 8 && m1.miss_absent >= 8);
	for (int i = 0; i < 8; i++)
		ex[i] = (struct pc_page){ .key = none[i], .key_len = strlen(none[i]) };
	CU_ASSERT_EQUAL(pc_batch_exists(E->n0, ex, 8), 0);
	ecl_down(E);
}

static void test_buckets_and_oversize(void)
{
	struct ecl *E = up("slot_size_classes: [4KiB], slot_ways: 2, slot_num_buckets: 1, global_segment_size: 1MiB");
	char keys[4][32];
	int st[4], j = 0;

	for (int i = 0; i < 4; i++)
		key_on(E, 2, "bk", &j, keys[i]);
	/* three keys for a two-way bucket in one batch: two stored, none evicts the other */
	CU_ASSERT_EQUAL(put(E->n0, keys, 3, 4096, 1, st), 2);
	CU_ASSERT_EQUAL(st[2], -ENOSPC);
	CU_ASSERT_EQUAL(get(E->n0, keys, 2, 4096, 4096, 1, st), 2);
	/* a later batch evicts the oldest: a clean miss, never stale data */
	CU_ASSERT_EQUAL(put(E->n0, &keys[2], 1, 4096, 2, NULL), 1);
	CU_ASSERT_EQUAL(get(E->n0, keys, 1, 4096, 4096, 1, st), 0);
	CU_ASSERT_EQUAL(st[0], -ENOENT);
	CU_ASSERT_EQUAL(get(E->n0, &keys[1], 1, 4096, 4096, 1, st), 1);
	CU_ASSERT_EQUAL(get(E->n0, &keys[2], 1, 4096, 4096, 2, st), 1);
	/* a page over the largest class is skipped and counted */
	{
		uint8_t big[5000] = { 0 };
		struct pc_page p = { .key = "big", .key_len = 3, .data = big, .len = sizeof(big) };
		struct pc_metrics m = { .size = sizeof(m) };

		CU_ASSERT_EQUAL(pc_batch_set(E->n0, &p, 1), 0);
		CU_ASSERT_EQUAL(p.status, -EFBIG);
		pc_store_metrics(E->n0, &m);
		CU_ASSERT_EQUAL(m.skipped_oversize, 1);
	}
	ecl_down(E);
}

/* ---------------------------------------------------------------- against pcd */

static int closed_soon(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b[64];

	for (int i = 0; i < 30; i++)
		if (poll(&p, 1, 100) == 1 && recv(fd, b, sizeof(b), MSG_DONTWAIT) <= 0)
			return 1;
	return 0;
}

static void test_bad_frames_live(void)
{
	struct ecl *E = up("slot_size_classes: [16KiB], global_segment_size: 4MiB");
	struct tcp_hdr bad[] = {
		{ .magic = 0x12345678, .version = TCP_VERSION, .type = TCP_HELLO, .body_len = 16 },
		{ .magic = TCP_MAGIC, .version = 7, .type = TCP_HELLO, .body_len = 16 },
		{ .magic = TCP_MAGIC, .version = TCP_VERSION, .type = 99 },
		{ .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_RPC, .body_len = 1ULL << 40 },
		{ .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS, .count = 3, .body_len = 8 },
	};
	char keys[4][32];
	int st[4], j = 0;

	for (int i = 0; i < 4; i++)
		key_on(E, 1, "bf", &j, keys[i]);
	CU_ASSERT_EQUAL(put(E->n0, keys, 4, 12288, 1, NULL), 4);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int fd = pc_test_connect(E->port0 + 1);

		send(fd, &bad[i], sizeof(bad[i]), MSG_NOSIGNAL);
		CU_ASSERT_TRUE(closed_soon(fd));
		close(fd);
		/* pcd keeps serving everyone else */
		CU_ASSERT_EQUAL(get(E->n0, keys, 4, 12288, 12288, 1, st), 4);
	}
	ecl_down(E);
}

/* Ops outside the region, with a wrong key: refused by pcd, which goes on serving. */
static void test_refused_ops_live(void)
{
	struct ecl *E = up("slot_size_classes: [16KiB], global_segment_size: 4MiB");
	struct pc_fabric_params p = { .size = sizeof(p), .topo = E->topo, .self = PC_PEER_NONE };
	struct pc_rpc r = { .peer = 1, .opcode = PC_RPC_LAYOUT };
	struct proto_layout_class lc;
	struct pc_fabric *f;
	uint8_t buf[256] = { 0 };
	struct pc_op ops[3];

	CU_ASSERT_EQUAL_FATAL(pc_fabric_open(protocol(), &p, &f), 0);
	CU_ASSERT_EQUAL(pc_fabric_call(f, &r, 1), 0);
	CU_ASSERT_EQUAL_FATAL(r.status, 0);
	memcpy(&lc, (char *)r.resp.data + sizeof(struct proto_layout), sizeof(lc));
	ops[0] = (struct pc_op){ .kind = PC_OP_READ, .peer = 1, .rkey = lc.rkey,
				 .raddr = lc.base + lc.stride * lc.nr_buckets * lc.ways + lc.index_stride * lc.nr_buckets - 8,
				 .local = buf, .len = 64 };
	ops[1] = (struct pc_op){ .kind = PC_OP_WRITE, .peer = 1, .rkey = lc.rkey ^ 0x5a5a,
				 .raddr = lc.base, .local = buf, .len = 64 };
	ops[2] = (struct pc_op){ .kind = PC_OP_READ, .peer = 1, .rkey = lc.rkey, .raddr = lc.base,
				 .local = buf, .len = 64 };
	if (over_tcp()) {
		CU_ASSERT_EQUAL(pc_fabric_post(f, ops, 3), 0);
		CU_ASSERT_EQUAL(ops[0].status, -EFAULT);
		CU_ASSERT_EQUAL(ops[1].status, -ENOKEY);
	} else {	/* RDMA: each refusal ends the QP; one at a time */
		for (int i = 0; i < 2; i++) {
			CU_ASSERT_EQUAL(pc_fabric_post(f, &ops[i], 1), 0);
			CU_ASSERT(ops[i].status < 0);
		}
		CU_ASSERT_EQUAL(pc_fabric_post(f, &ops[2], 1), 0);
	}
	CU_ASSERT_EQUAL(ops[2].status, 0);
	pc_msg_free(&r.resp);
	pc_fabric_close(f);
	ecl_down(E);
}

/* A peer stalled (SIGSTOP) or killed in the middle of batches: callers return
 * within the timeout, that peer's keys fail, everyone else's are right; after a
 * restart the peer is used again. */
struct loop {
	struct ecl *E;
	char (*keys)[32];
	size_t n;
	volatile int stop;
	int batches, slow, wrong, n2_failed;
	double worst;
};

static void *get_loop(void *p)
{
	struct loop *L = p;
	int *st = calloc(L->n, sizeof(int));

	while (!L->stop) {
		double t0 = now_s(), dt;

		get(L->E->n0, L->keys, L->n, 65536, 65536, 1, st);
		dt = now_s() - t0;
		L->worst = dt > L->worst ? dt : L->worst;
		L->slow += dt > 1.5;	/* the timeout is 1 s */
		L->batches++;
		for (size_t i = 0; i < L->n; i++) {
			if (owner(L->E, L->keys[i]) == 2)
				L->n2_failed += st[i] != 0;
			else
				L->wrong += st[i] != 0;
		}
	}
	free(st);
	return NULL;
}

static void test_peer_killed_mid_batch(void)
{
	struct ecl *E = up("slot_size_classes: [64KiB], global_segment_size: 16MiB");
	char keys[64][32];
	int st[64];
	struct loop L = { .E = E, .keys = keys, .n = 64 };
	pthread_t t;
	double t0;

	for (int i = 0; i < 64; i++)
		sprintf(keys[i], "kill-%d", i);
	CU_ASSERT_EQUAL(put(E->n0, keys, 64, 65536, 1, NULL), 64);
	pthread_create(&t, NULL, get_loop, &L);
	usleep(200000);
	kill(E->pcd[2], SIGSTOP);		/* stalled */
	usleep(1500000);
	kill(E->pcd[2], SIGCONT);
	usleep(200000);
	ecl_stop_pcd(E, 2, SIGKILL);		/* killed, mid-batch */
	usleep(500000);
	L.stop = 1;
	pthread_join(t, NULL);
	printf("\n  %d batches while n2 was stalled then killed: worst %.3f s, %d over 1.5 s, %d wrong results elsewhere, %d n2 keys failed\n",
	       L.batches, L.worst, L.slow, L.wrong, L.n2_failed);
	CU_ASSERT_EQUAL(L.slow, 0);
	CU_ASSERT_EQUAL(L.wrong, 0);
	CU_ASSERT(L.n2_failed > 0);
	/* restarted under the same name: used again once n0's backoff for it ends (it
	 * doubled while n2 was dead; without heartbeats nothing ends it sooner) */
	E->pcd[2] = ecl_spawn_pcd(E, 2);
	CU_ASSERT_FATAL(E->pcd[2] > 0);
	t0 = now_s();
	for (int i = 0; i < 100 && put(E->n0, keys, 64, 65536, 2, NULL) != 64; i++)
		usleep(100000);
	printf("  n2 used again %.3f s after its restart\n", now_s() - t0);
	t0 = now_s();
	CU_ASSERT_EQUAL(put(E->n0, keys, 64, 65536, 2, NULL), 64);
	CU_ASSERT_EQUAL(get(E->n0, keys, 64, 65536, 65536, 2, st), 64);
	printf("  after the restart: all 64 keys written and read back in %.3f s\n", now_s() - t0);
	ecl_down(E);
}

/* Writers from two stores and readers racing them on one bucket of a remote owner:
 * no reader ever gets another key's page or a torn one. */
static void test_concurrent_readers_writers(void)
{
	struct ecl *E = up("slot_size_classes: [2KiB], slot_ways: 2, slot_num_buckets: 1, global_segment_size: 1MiB");
	struct pc_store *cl[3] = { ecl_open_store(E, NULL), ecl_open_store(E, NULL), ecl_open_store(E, NULL) };
	char keys[6][32];
	struct pc_test_racer r[4];
	unsigned long bad, hits, writes;
	int j = 0;

	for (int i = 0; i < 6; i++)
		key_on(E, 1, "race", &j, keys[i]);
	/* writers: this node and a client (p2p: this node twice, a client cannot
	 * publish); readers: two other clients */
	for (int i = 0; i < 4; i++)
		r[i] = (struct pc_test_racer){ .s = i && !(i == 1 && p2p()) ? cl[i - 1] : E->n0,
					       .writer = i < 2, .keys = (const char (*)[32])keys,
					       .nkeys = 6 };
	pc_test_race(r, 4, 1500, &writes, &hits, &bad);
	printf("\n  %s over %s, 2 writers and 2 readers on %s: %lu writes, %lu reader hits, %lu bad\n",
	       mode(), protocol(), p2p() ? "6 keys n0 publishes again and again" : "one 2-way bucket of n1",
	       writes, hits, bad);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(writes > 0 && hits > 0);
	for (int i = 0; i < 3; i++)
		pc_store_close(cl[i]);
	ecl_down(E);
}

/* ---------------------------------------------------------------- membership */

struct count_arg {
	char (*keys)[32];
	size_t n;
	bool leave_n2;			/* tell this client's ring that n2 left */
};

/* A client in another process: how many of the keys it reads (exit code; 200 when
 * one of them came back wrong). */
static int count_hits(struct ecl *E, struct pc_store *s, void *p)
{
	struct count_arg *a = p;
	int *st = calloc(a->n, sizeof(int)), hits = 0;

	(void)E;
	if (a->leave_n2 && pc_store_set_member(s, "n2", false))
		return 201;
	get(s, a->keys, a->n, 12288, 12288, 5, st);
	for (size_t i = 0; i < a->n; i++) {
		if (st[i] == -EBADMSG)
			return 200;
		hits += !st[i];
	}
	free(st);
	return hits;
}

/* Wait (at most 5 s) until this node reads want of the keys back. */
static int n0_reads(struct ecl *E, char (*keys)[32], size_t n, int want)
{
	int st[96], hits = 0;

	for (int t = 0; t < 100; t++) {
		hits = get(E->n0, keys, n, 12288, 12288, 5, st);
		for (size_t i = 0; i < n; i++)
			CU_ASSERT_NOT_EQUAL(st[i], -EBADMSG);
		if (hits >= want)
			break;
		usleep(50000);
	}
	return hits;
}

/* n2 dies and leaves the ring, then comes back empty and joins it. p2p: the
 * directory follows (entries n2's shard held are published again by their
 * publisher, and handed to n2 when it is back), so every page n0 published stays
 * readable throughout. Slotmap moves nothing: n2's pages are gone with it, the
 * others stay where they are. */
static void test_leave_and_join(void)
{
	struct ecl *E = up("slot_size_classes: [16KiB], global_segment_size: 32MiB");
	char keys[96][32];
	int on_n2 = 0, alive, after_leave, after_join, client_leave, client_join;
	struct count_arg a = { keys, 96, false };

	for (int i = 0; i < 96; i++) {
		sprintf(keys[i], "lj-%d", i);
		on_n2 += owner(E, keys[i]) == 2;
	}
	CU_ASSERT_EQUAL(put(E->n0, keys, 96, 12288, 5, NULL), 96);
	ecl_stop_pcd(E, 2, SIGKILL);
	alive = in_child(E, count_hits, &a);
	CU_ASSERT_EQUAL(alive, 96 - on_n2);	/* before anyone says it left */
	CU_ASSERT_EQUAL(pc_store_set_member(E->n0, "n2", false), 0);
	after_leave = n0_reads(E, keys, 96, p2p() ? 96 : 96 - on_n2);
	a.leave_n2 = true;
	client_leave = in_child(E, count_hits, &a);
	/* n2 is back, empty, and joins */
	E->pcd[2] = ecl_spawn_pcd(E, 2);
	CU_ASSERT_FATAL(E->pcd[2] > 0);
	CU_ASSERT_EQUAL(pc_store_set_member(E->n0, "n2", true), 0);
	after_join = n0_reads(E, keys, 96, p2p() ? 96 : 96 - on_n2);
	a.leave_n2 = false;
	client_join = in_child(E, count_hits, &a);
	printf("\n  %s: 96 pages, %d %s n2; n2 killed: %d readable; n2 left: %d (this node), %d (a client); n2 back and joined: %d, %d\n",
	       mode(), on_n2, p2p() ? "with their directory entry on" : "on", alive, after_leave,
	       client_leave, after_join, client_join);
	if (p2p()) {
		CU_ASSERT_EQUAL(after_leave, 96);
		CU_ASSERT_EQUAL(client_leave, 96);
		CU_ASSERT_EQUAL(after_join, 96);
		CU_ASSERT_EQUAL(client_join, 96);
	} else {
		CU_ASSERT_EQUAL(after_leave, 96 - on_n2);
		CU_ASSERT_EQUAL(client_leave, 96 - on_n2);
		CU_ASSERT_EQUAL(after_join, 96 - on_n2);
		CU_ASSERT_EQUAL(client_join, 96 - on_n2);
	}
	CU_ASSERT(on_n2 > 0);
	ecl_down(E);
}

/* ---------------------------------------------------------------- p2p only */

/* A full published pool evicts its least recently used pages and their directory
 * entries (held by pcd shards): a clean miss for the evicted, never stale bytes. */
static void test_pool_eviction(void)
{
	/* 16 blocks of 4096 + 64 B */
	struct ecl *E = up("slot_size_classes: [4KiB], global_segment_size: 66560");
	char keys[24][32];
	int st[24], hits = 0, j = 0;
	struct pc_metrics m = { .size = sizeof(m) };

	for (int i = 0; i < 24; i++)
		key_on(E, (uint32_t)(1 + i % 2), "ev", &j, keys[i]);
	CU_ASSERT_EQUAL(put(E->n0, keys, 24, 4096, 3, NULL), 24);
	pc_store_metrics(E->n0, &m);
	CU_ASSERT_EQUAL(m.pool_keys, 16);
	CU_ASSERT_EQUAL(m.evictions, 8);
	get(E->n0, keys, 24, 4096, 4096, 3, st);
	for (int i = 0; i < 24; i++) {
		CU_ASSERT_EQUAL(st[i], i < 8 ? -ENOENT : 0);	/* the oldest went */
		hits += !st[i];
	}
	pc_store_metrics(E->n0, &m);
	printf("\n  24 pages into a 16-block pool: %d readable, %llu evicted, %llu other-key misses\n",
	       hits, (unsigned long long)m.evictions, (unsigned long long)m.miss_other_key);
	CU_ASSERT_EQUAL(m.miss_other_key, 0);	/* the shards had dropped their entries */
	/* a page over the largest class is skipped and counted */
	{
		uint8_t big[5000] = { 0 };
		struct pc_page p = { .key = "big", .key_len = 3, .data = big, .len = sizeof(big) };

		CU_ASSERT_EQUAL(pc_batch_set(E->n0, &p, 1), 0);
		CU_ASSERT_EQUAL(p.status, -EFBIG);
		pc_store_metrics(E->n0, &m);
		CU_ASSERT_EQUAL(m.skipped_oversize, 1);
	}
	ecl_down(E);
}

/* n1 is not pcd but a forked store that publishes pages, then waits to be killed. */
static pid_t publisher(struct ecl *E, char (*keys)[32], size_t n)
{
	int fd[2];
	char ok = 0;
	pid_t pid;

	ecl_stop_pcd(E, 1, SIGTERM);
	CU_ASSERT_FATAL(pipe(fd) == 0);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct pc_store *s = ecl_open_store(E, "n1");

		ok = s && put(s, keys, n, 12288, 7, NULL) == (int)n;
		if (write(fd[1], &ok, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fd[1]);
	if (read(fd[0], &ok, 1) != 1)
		ok = 0;
	close(fd[0]);
	CU_ASSERT_FATAL(ok);
	return pid;
}

/* The node that published pages is killed: its pages miss cleanly within the
 * timeout, readers tell the shards, and the entries naming it are gone. */
static void test_publisher_killed(void)
{
	struct ecl *E = up("slot_size_classes: [16KiB], global_segment_size: 8MiB");
	char keys[48][32];
	int st[48], failed = 0, absent = -1, unreachable = 0, shard_n1 = 0, reads;
	struct pc_metrics m0 = { .size = sizeof(m0) }, m1 = { .size = sizeof(m1) };
	pid_t pid;
	double t0, dt;

	for (int i = 0; i < 48; i++) {
		sprintf(keys[i], "pub-%d", i);
		shard_n1 += owner(E, keys[i]) == 1;
	}
	pid = publisher(E, keys, 48);
	CU_ASSERT_EQUAL(get(E->n0, keys, 48, 12288, 12288, 7, st), 48);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	t0 = now_s();
	CU_ASSERT_EQUAL(get(E->n0, keys, 48, 12288, 12288, 7, st), 0);
	dt = now_s() - t0;
	for (int i = 0; i < 48; i++)
		failed += st[i] != 0 && st[i] != -EBADMSG;
	CU_ASSERT_EQUAL(failed, 48);
	CU_ASSERT(dt < 1.5);	/* the timeout is 1 s */
	/* the readers drop the entries naming n1 from the live shards once n1 refuses
	 * (over tcp at once; over RDMA the first failure is the QP's timeout, the next
	 * the refused reconnect): then no read goes to n1 any more, and the keys whose
	 * shard was n1's fail at the directory */
	for (reads = 1; reads <= 4 && absent != 48 - shard_n1; reads++) {
		if (reads > 1)
			usleep(250 * 1000);	/* n1 is tried again after its backoff */
		absent = unreachable = 0;
		pc_store_metrics(E->n0, &m0);
		get(E->n0, keys, 48, 12288, 12288, 7, st);
		pc_store_metrics(E->n0, &m1);
		for (int i = 0; i < 48; i++) {
			absent += owner(E, keys[i]) != 1 && st[i] == -ENOENT;
			unreachable += owner(E, keys[i]) == 1 && st[i] != 0 && st[i] != -ENOENT;
		}
	}
	printf("\n  publisher n1 killed: 48 of 48 pages failed cleanly in %.3f s; %d read(s) later %d absent from the live shards, %d behind n1's own shard; %llu bytes read\n",
	       dt, reads - 1, absent, unreachable, (unsigned long long)(m1.bytes_read - m0.bytes_read));
	CU_ASSERT_EQUAL(absent, 48 - shard_n1);
	CU_ASSERT_EQUAL(unreachable, shard_n1);
	CU_ASSERT_EQUAL(m1.bytes_read, m0.bytes_read);
	/* n1 leaves the ring: every key is a plain miss */
	CU_ASSERT_EQUAL(pc_store_set_member(E->n0, "n1", false), 0);
	CU_ASSERT_EQUAL(get(E->n0, keys, 48, 12288, 12288, 7, st), 0);
	for (int i = 0; i < 48; i++)
		CU_ASSERT_EQUAL(st[i], -ENOENT);
	ecl_down(E);
}

/* Both modes. */
static CU_TestInfo tests[] = {
	{ "cross-process round trip, byte-identical", test_roundtrip },
	{ "concurrent writers and readers of one bucket", test_concurrent_readers_writers },
	{ "clean misses, length mismatch, exists", test_misses_and_exists },
	{ "malformed frames against a live pcd", test_bad_frames_live },
	{ "a peer stalled, killed mid-batch, restarted", test_peer_killed_mid_batch },
	{ "a node leaves and joins the ring", test_leave_and_join },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo slotmap_tests[] = {
	{ "bucket reservations, eviction, oversize", test_buckets_and_oversize },
	{ "refused ops against a live pcd", test_refused_ops_live },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo p2p_tests[] = {
	{ "pool eviction drops directory entries; oversize", test_pool_eviction },
	{ "a publishing node killed", test_publisher_killed },
	CU_TEST_INFO_NULL,
};

static bool wanted(const char *suite, int argc, char **argv)
{
	const char *m = argc > 3 ? argv[3] : "slotmap";

	return !strcmp(suite, "e2e") || !strcmp(suite + 4, m);
}

PC_TEST_MAIN_SOME(wanted, { "e2e", NULL, NULL, NULL, NULL, tests },
		  { "e2e-slotmap", NULL, NULL, NULL, NULL, slotmap_tests },
		  { "e2e-p2p", NULL, NULL, NULL, NULL, p2p_tests })
