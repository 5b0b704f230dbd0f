/*
 * limits_test.c - resource exhaustion against a live cluster (n0 in this process,
 * n1 and n2 as pcd), each case with a good client served throughout: a slowloris
 * of 60 connections, 6 requests announcing 200 MiB bodies and 6 that fill the
 * node's buffer budget, a node at its file descriptor limit (setrlimit in the
 * child), a p2p directory flood of 1.3 M forged entries, an OPS frame asking for a
 * response many times its size, and a client pipelining small frames without end.
 * Memory stays within the stated bound and every limit hit is counted and logged.
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <peercache/pc_fabric.h>
#include <peercache/peercache.h>

#include "cluster.h"
#include "proto.h"
#include "rawpeer.h"
#include "store.h"
#include "testutil.h"

/* Under ASan freed memory sits in its quarantine: resident sizes say nothing then. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

#define PAGES 32
#define PAGE 12288
#define MiB (1024.0 * 1024.0)

static const char *pcd_bin(void)
{
	return pc_test_argc > 1 ? pc_test_argv[1] : "./pcd";
}

static const char *secret;

static struct ecl *up(const char *mode, const char *more)
{
	char s[1024];

	secret = raw_secret_file(0, "limits test secret: thirty-two bytes or so");
	snprintf(s, sizeof(s),
		 "mode: %s, slot_size_classes: [16KiB], global_segment_size: 4MiB, idle_timeout_s: 1, max_connections: 24, max_buffered_bytes: 32MiB, auth_secret_file: \"%s\"%s",
		 mode, secret, more);
	return ecl_up(pcd_bin(), "tcp", s, true);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct pc_store *client(struct ecl *E)
{
	return ecl_open_store(E, NULL);
}

/* One read of every page by the good client: all hit, none wrong; the seconds it took. */
static double served(struct pc_store *s)
{
	double t0 = now_s();
	int wrong = 0, bad = 0;

	CU_ASSERT_EQUAL(pc_test_read_pages(s, PAGES, PAGE, &wrong, &bad), PAGES);
	CU_ASSERT_EQUAL(wrong + bad, 0);
	return now_s() - t0;
}

/* Whether the server has closed fd (EOF or reset), without waiting. */
static bool is_closed(int fd)
{
	char b[256];
	ssize_t r = recv(fd, b, sizeof(b), MSG_DONTWAIT);

	return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* CPU seconds process pid used so far. */
static double cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
		return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	return 0;
}

/* 60 connections that send a header a byte at a time, 200 ms apart: every one is
 * closed (at the connection cap or after idle_timeout_s), the good client served. */
static void test_slowloris(void)
{
	struct ecl *E = up("slotmap", "");
	struct pc_store *good = client(E);
	const uint8_t hdr[32] = { 'P', 'C', 'T', 'F' };
	int fd[60], closed = 0;
	double worst = 0, t0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(good);
	CU_ASSERT_EQUAL(pc_test_write_pages(good, 0, PAGES, PAGE), PAGES);
	for (int i = 0; i < 60; i++)
		fd[i] = pc_test_connect(E->port0 + 1);
	t0 = now_s();
	for (int tick = 0; tick < 15 && closed < 60; tick++) {
		double d;

		closed = 0;
		for (int i = 0; i < 60; i++) {
			if (fd[i] >= 0 && is_closed(fd[i])) {
				close(fd[i]);
				fd[i] = -1;
			}
			if (fd[i] < 0) {
				closed++;
				continue;
			}
			send(fd[i], &hdr[tick % 32], 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		d = served(good);
		worst = d > worst ? d : worst;
		usleep(200000);
	}
	printf("\n  slowloris: %d of 60 connections closed by %.1f s; the good client's slowest read of %d pages %.1f ms",
	       closed, now_s() - t0, PAGES, worst * 1e3);
	CU_ASSERT_EQUAL(closed, 60);
	CU_ASSERT(worst < 1.0);
	for (int i = 0; i < 60; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	pc_store_close(good);
	ecl_down(E);
	CU_ASSERT_TRUE(ecl_logged("n1", "store.idle_timeout_s"));
	CU_ASSERT_TRUE(ecl_logged("n1", "store.max_connections (24) reached"));
}

/* Push up to n bytes of junk into fd without blocking; what went out. */
static size_t push(int fd, size_t n)
{
	static char junk[1 << 16];
	size_t sent = 0;

	while (sent < n) {
		ssize_t r = send(fd, junk, n - sent < sizeof(junk) ? n - sent : sizeof(junk),
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (r <= 0)
			break;
		sent += (size_t)r;
	}
	return sent;
}

/* Six authenticated clients announce 200 MiB RPC bodies: refused on the header.
 * Six more send DIR_UPDATE bodies of 7 MiB (within the opcode's maximum) and stall:
 * the node's buffers stay within store.max_buffered_bytes (32 MiB) and whoever
 * would go past it is closed. pcd's resident memory grows by less than that bound
 * plus one 1 MiB receive chunk per connection. */
static void test_big_bodies(void)
{
	struct ecl *E = up("slotmap", "");
	struct pc_store *good = client(E);
	struct tcp_auth a;
	struct raw_peer p[12];
	uint64_t rss0, rss1;
	int closed_big = 0, closed_budget = 0;
	size_t held = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(good);
	raw_auth_of(secret, &a);
	CU_ASSERT_EQUAL(pc_test_write_pages(good, 0, PAGES, PAGE), PAGES);
	served(good);
	rss0 = raw_rss(E->pcd[1]);
	for (int i = 0; i < 12; i++) {
		struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_RPC,
				     .count = i < 6 ? PC_RPC_DIR_GET : PC_RPC_DIR_UPDATE,
				     .body_len = i < 6 ? 200u << 20 : 7u << 20, .seq = 1 };

		raw_hello(&p[i], E->port0 + 1, E->topo, PC_PEER_NONE, 1, true);
		CU_ASSERT_EQUAL(p[i].status, 0);
		raw_auth(&p[i], &a);
		send(p[i].fd, &h, sizeof(h), MSG_NOSIGNAL);
	}
	/* the 200 MiB ones as much as goes, the 7 MiB ones 6 MiB: short of their end */
	for (int round = 0; round < 24; round++) {
		for (int i = 0; i < 12; i++)
			held += push(p[i].fd, i < 6 ? 1u << 20 : 256u << 10);
		usleep(20000);
	}
	usleep(200000);
	rss1 = raw_rss(E->pcd[1]);
	for (int i = 0; i < 12; i++) {
		bool c = raw_next(&p[i], NULL, 200) == 0;

		closed_big += i < 6 && c;
		closed_budget += i >= 6 && c;
	}
	printf("\n  6 x 200 MiB bodies: %d closed on the header; 6 x 7 MiB DIR_UPDATEs stalled: %d closed at the budget; %.0f MiB sent; pcd n1 resident %.1f -> %.1f MiB",
	       closed_big, closed_budget, (double)held / MiB, (double)rss0 / MiB, (double)rss1 / MiB);
	CU_ASSERT_EQUAL(closed_big, 6);
	CU_ASSERT(closed_budget >= 2);		/* 6 x 8 MiB buffers > 32 MiB */
	CU_ASSERT(closed_budget < 6);		/* the budget holds some */
	CU_ASSERT(rss1 < rss0 + (uint64_t)(32 + 12) * (1u << 20) || SANITIZED);
	CU_ASSERT(served(good) < 1.0);
	for (int i = 0; i < 12; i++)
		close(p[i].fd);
	tcp_auth_clear(&a);
	pc_store_close(good);
	ecl_down(E);
	CU_ASSERT_TRUE(ecl_logged("n1", "is larger than the opcode takes"));
	CU_ASSERT_TRUE(ecl_logged("n1", "store.max_buffered_bytes"));
}

/* pcd n2 with RLIMIT_NOFILE 48 (soft and hard) and no connection cap to speak of;
 * 100 connections that never finish their handshake. The node does not spin: it
 * closes the oldest of them to take new ones, or pauses accepting; the good
 * client is served throughout. */
static void test_fd_limit(void)
{
	struct ecl *E = up("slotmap", "");
	struct pc_store *good;
	char log[600], cap[64];
	int fd[100], n = 0;
	double c0, c1, worst = 0;
	pid_t pid;

	ecl_stop_pcd(E, 2, SIGTERM);
	snprintf(log, sizeof(log), "%s/pcd-n2.log", pc_test_tmpdir());
	snprintf(cap, sizeof(cap), "store.max_connections=100000");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { 48, 48 };
		int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		dup2(lfd, 2);
		setrlimit(RLIMIT_NOFILE, &rl);
		execl(pcd_bin(), "pcd", "--topology", E->path, "--node", "n2", "--set", cap,
		      (char *)NULL);
		_exit(127);
	}
	E->pcd[2] = pid;
	usleep(500000);
	good = client(E);
	CU_ASSERT_PTR_NOT_NULL_FATAL(good);
	CU_ASSERT_EQUAL(pc_test_write_pages(good, 0, PAGES, PAGE), PAGES);
	for (int i = 0; i < 100; i++) {
		fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		{
			struct sockaddr_in sa = { .sin_family = AF_INET,
						  .sin_port = htons((uint16_t)(E->port0 + 2)),
						  .sin_addr.s_addr = htonl(0x7f000001) };

			if (connect(fd[i], (struct sockaddr *)&sa, sizeof(sa)) == 0)
				n++;
		}
	}
	c0 = cpu_s(pid);
	for (int k = 0; k < 5; k++) {
		double d = served(good);

		worst = d > worst ? d : worst;
		usleep(200000);
	}
	c1 = cpu_s(pid);
	printf("\n  pcd n2 at 48 descriptors, %d connections held open: %.2f CPU s in 1 s; the good client's slowest read %.1f ms",
	       n, c1 - c0, worst * 1e3);
	CU_ASSERT(c1 - c0 < 0.5);
	CU_ASSERT(worst < 1.0);
	for (int i = 0; i < 100; i++)
		close(fd[i]);
	pc_store_close(good);
	ecl_down(E);
	CU_ASSERT_TRUE(ecl_logged("n2", "accept: Too many open files"));
	CU_ASSERT_TRUE(ecl_logged("n2", "file descriptor limit 48"));
}

/* n1's first slot class, asked of it over p (LAYOUT). */
static struct proto_layout_class layout_of(struct raw_peer *p)
{
	struct proto_layout_class c = { 0 };
	uint8_t buf[4096];
	struct tcp_hdr h;

	raw_send(p, TCP_RPC, PC_RPC_LAYOUT, NULL, 0);
	CU_ASSERT_EQUAL_FATAL(raw_next(p, &h, 5000), TCP_RPC_RESP);
	CU_ASSERT_FATAL(h.status == 0 && h.body_len >= sizeof(struct proto_layout) + sizeof(c) &&
			h.body_len <= sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(recv(p->fd, buf, h.body_len, MSG_WAITALL), (ssize_t)h.body_len);
	memcpy(&c, buf + sizeof(struct proto_layout), sizeof(c));
	return c;
}

/* An authenticated client of n1, with n1's first slot class in *c. */
static void insider(struct ecl *E, struct tcp_auth *a, struct raw_peer *p,
		    struct proto_layout_class *c)
{
	raw_hello(p, E->port0 + 1, E->topo, PC_PEER_NONE, 1, true);
	CU_ASSERT_EQUAL_FATAL(p->status, 0);
	raw_auth(p, a);
	*c = layout_of(p);
}

/* n ops reading len bytes each from places of c's slots. */
static void reads_of(struct tcp_opdesc *d, uint32_t n, const struct proto_layout_class *c,
		     uint32_t len)
{
	uint64_t span = c->nr_buckets * c->ways * c->mem_stride - len;

	for (uint32_t i = 0; i < n; i++)
		d[i] = (struct tcp_opdesc){ .kind = PC_OP_READ, .rkey = c->rkey,
					    .raddr = c->base + ((uint64_t)i * 64) % span, .len = len };
}

/* An OPS frame of 65536 READs of 512 bytes (2.5 MiB) asks for a 32 MiB response,
 * which the node copies: counted against store.max_buffered_bytes (32 MiB) like a
 * request's bytes, it is refused and the connection closed; the good client is
 * served. */
static void test_amplifying_ops(void)
{
	struct ecl *E = up("slotmap", "");
	struct pc_store *good = client(E);
	struct tcp_opdesc *d = calloc(TCP_MAX_OPS, sizeof(*d));
	struct proto_layout_class c;
	struct tcp_auth a;
	struct raw_peer p;
	uint64_t rss0, rss1;
	int next;

	CU_ASSERT_PTR_NOT_NULL_FATAL(good);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	raw_auth_of(secret, &a);
	CU_ASSERT_EQUAL(pc_test_write_pages(good, 0, PAGES, PAGE), PAGES);
	rss0 = raw_rss(E->pcd[1]);
	insider(E, &a, &p, &c);
	reads_of(d, TCP_MAX_OPS, &c, 512);
	raw_send(&p, TCP_OPS, TCP_MAX_OPS, d, TCP_MAX_OPS * sizeof(*d));
	next = raw_next(&p, NULL, 5000);
	rss1 = raw_rss(E->pcd[1]);
	printf("\n  65536 READs of 512 B in one frame: %s; pcd n1 resident %.1f -> %.1f MiB",
	       next == 0 ? "connection closed" : next == TCP_OPS_RESP ? "answered" : "no answer",
	       (double)rss0 / MiB, (double)rss1 / MiB);
	CU_ASSERT_EQUAL(next, 0);
	CU_ASSERT(served(good) < 1.0);
	close(p.fd);
	free(d);
	tcp_auth_clear(&a);
	pc_store_close(good);
	ecl_down(E);
	CU_ASSERT_TRUE(ecl_logged("n1", "the response to its 65536 ops"));
}

struct drain {
	int fd;
	volatile int stop;
	uint64_t bytes;
};

static void *drain_responses(void *arg)
{
	struct drain *dr = arg;
	static uint8_t buf[1 << 16];

	while (!dr->stop) {
		struct pollfd pf = { .fd = dr->fd, .events = POLLIN };
		ssize_t r;

		if (poll(&pf, 1, 50) != 1)
			continue;
		r = recv(dr->fd, buf, sizeof(buf), 0);
		if (r <= 0)
			break;
		dr->bytes += (uint64_t)r;
	}
	return NULL;
}

struct flood {
	int fd;
	volatile int stop;
	const uint8_t *frames;
	size_t len;
	uint64_t sent;
};

static void *send_frames(void *arg)
{
	struct flood *f = arg;

	while (!f->stop) {
		for (size_t at = 0; at < f->len;) {	/* whole frames */
			ssize_t r = send(f->fd, f->frames + at, f->len - at, MSG_NOSIGNAL);

			if (r <= 0)
				return NULL;
			at += (size_t)r;
		}
		f->sent += f->len;
	}
	return NULL;
}

/* A client that pipelines small OPS frames for 2 s, never leaving its socket
 * drained, while another thread takes the answers: the node serves the good client
 * in between (it serves a connection a bounded number of frames at a time). */
static void test_pipelined_flood(void)
{
	struct ecl *E = up("slotmap", "");
	struct pc_store *good = client(E);
	struct proto_layout_class c;
	struct tcp_auth a;
	struct raw_peer p;
	struct drain dr = { .stop = 0 };
	struct flood fl = { .stop = 0 };
	const size_t frame = sizeof(struct tcp_hdr) + sizeof(struct tcp_opdesc), nframes = 1024;
	uint8_t *frames;
	double worst = 0;
	pthread_t th[2];

	CU_ASSERT_PTR_NOT_NULL_FATAL(good);
	raw_auth_of(secret, &a);
	CU_ASSERT_EQUAL(pc_test_write_pages(good, 0, PAGES, PAGE), PAGES);
	insider(E, &a, &p, &c);
	frames = calloc(nframes, frame);
	CU_ASSERT_PTR_NOT_NULL_FATAL(frames);
	for (size_t i = 0; i < nframes; i++) {
		struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS,
				     .count = 1, .body_len = sizeof(struct tcp_opdesc), .seq = i + 10 };

		memcpy(frames + i * frame, &h, sizeof(h));
		reads_of((struct tcp_opdesc *)(void *)(frames + i * frame + sizeof(h)), 1, &c, 64);
	}
	dr.fd = fl.fd = p.fd;
	fl.frames = frames;
	fl.len = nframes * frame;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th[0], NULL, drain_responses, &dr), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th[1], NULL, send_frames, &fl), 0);
	usleep(200000);
	for (int i = 0; i < 6; i++) {
		double dt = served(good);

		worst = dt > worst ? dt : worst;
		usleep(200000);
	}
	fl.stop = 1;
	pthread_join(th[1], NULL);
	dr.stop = 1;
	pthread_join(th[0], NULL);
	printf("\n  pipelined 1-op frames for 1.6 s: %.0f frames sent, %.1f MiB of answers; the good client's slowest read %.1f ms",
	       (double)fl.sent / (double)frame, (double)dr.bytes / MiB, worst * 1e3);
	CU_ASSERT(fl.sent > 0);
	CU_ASSERT(worst < 1.0);
	close(p.fd);
	free(frames);
	tcp_auth_clear(&a);
	pc_store_close(good);
	ecl_down(E);
}

/* p2p: 20 DIR_UPDATEs of 65536 forged entries each, naming node n1, sent to n0 by a
 * connection holding the secret (an insider; an outsider is refused on its handshake,
 * security_test). n0's shard keeps at most its bound per publisher (2 x the pool's
 * blocks) and counts the rest; the good client is served meanwhile. */
static void test_directory_flood(void)
{
	struct ecl *E = up("p2p", "");
	struct pc_store *good = client(E), *pub = E->n0;
	size_t len = sizeof(struct proto_dir_update) + PROTO_DIR_MAX * sizeof(struct proto_dir_put);
	uint8_t *req = calloc(1, len);
	struct pc_metrics m = { .size = sizeof(m) };
	struct tcp_auth a;
	struct raw_peer p;
	uint64_t rss0 = raw_rss(getpid()), rss1;
	static int32_t taken[PROTO_DIR_MAX];
	double worst = 0;
	int answered = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(good);
	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	raw_auth_of(secret, &a);
	CU_ASSERT_EQUAL(pc_test_write_pages(pub, 0, PAGES, PAGE), PAGES);	/* p2p: nodes publish */
	raw_hello(&p, E->port0, E->topo, 1, 0, true);
	CU_ASSERT_EQUAL_FATAL(p.status, 0);
	raw_auth(&p, &a);
	((struct proto_dir_update *)req)->nput = PROTO_DIR_MAX;
	for (int r = 0; r < 20; r++) {
		struct proto_dir_put *e = (struct proto_dir_put *)(req + sizeof(struct proto_dir_update));
		struct tcp_hdr h;
		double d;

		for (uint32_t i = 0; i < PROTO_DIR_MAX; i++)
			e[i] = (struct proto_dir_put){ .lo = (uint64_t)r << 32 | i, .hi = 7,
						       .loc = { .node = 1, .len = 100, .gen = 1 } };
		raw_send(&p, TCP_RPC, PC_RPC_DIR_UPDATE, req, len);
		/* the answer: each put's status */
		if (raw_next(&p, &h, 5000) == TCP_RPC_RESP && h.body_len == sizeof(taken) &&
		    recv(p.fd, taken, sizeof(taken), MSG_WAITALL) == (ssize_t)sizeof(taken))
			answered++;
		d = served(good);
		worst = d > worst ? d : worst;
	}
	rss1 = raw_rss(getpid());
	pc_store_metrics(E->n0, &m);
	printf("\n  1.3 M forged entries: %d updates answered; n0's shard holds %llu entries, %llu refused; this process resident %.1f -> %.1f MiB; the good client's slowest read %.1f ms",
	       answered, (unsigned long long)m.dir_entries, (unsigned long long)m.dir_refused,
	       (double)rss0 / MiB, (double)rss1 / MiB, worst * 1e3);
	CU_ASSERT_EQUAL(answered, 20);
	CU_ASSERT(m.dir_entries <= 2 * 2 * 256 + PAGES);	/* n1's bound, n0's own pages */
	CU_ASSERT(m.dir_refused > 1000000);
	CU_ASSERT(rss1 < rss0 + (uint64_t)(64u << 20) || SANITIZED);
	CU_ASSERT(worst < 1.0);
	close(p.fd);
	free(req);
	tcp_auth_clear(&a);
	pc_store_close(good);
	ecl_down(E);
}

static CU_TestInfo tests[] = {
	{ "slowloris: 60 connections a byte at a time", test_slowloris },
	{ "200 MiB bodies, and bodies past the node's buffer budget", test_big_bodies },
	{ "a node at its file descriptor limit", test_fd_limit },
	{ "a p2p directory flood", test_directory_flood },
	{ "a small OPS frame asking for a response past the budget", test_amplifying_ops },
	{ "pipelined small frames do not starve others", test_pipelined_flood },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "limits", NULL, NULL, NULL, NULL, tests })
