/*
 * tcp_test.c - a network fabric on loopback, "tcp" by default or the one named in
 * argv[1] ("rxe" inside the Soft-RoCE VM): batches across peers, RPC, refused ops,
 * dead and stalled peers (errors within the timeout), restarts (stale addresses
 * refused, the peer used again) and a large transfer; for tcp also every kind of
 * malformed frame (the connection closes, the server keeps serving), and the frame
 * parser alone on buffers: valid, malformed, oversize and truncated frames fed byte
 * by byte.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <peercache/pc_fabric.h>
#include <peercache/peercache.h>

#include "config/topology.h"
#include "tcp/tcp_auth.h"
#include "tcp/tcp_frame.h"
#include "tcp/tcp_proto.h"
#include "tcp/tcp_sock.h"
#include "testutil.h"

#define NODES 3
#define MEM (32u << 20)

struct net {
	struct pc_topology *topo;
	uint16_t port0;
	struct pc_fabric *f[NODES];
	struct pc_region r[NODES];
	uint8_t *mem[NODES];
	int released;			/* OP_WAIT returns once this is set */
};

enum { OP_FAIL = 13, OP_PULL = 20, OP_WAIT = 21, OP_WHO = 22, OP_WHO_QUICK = 23 };

/* OP_PULL: READ the caller's memory named in the request and answer with it. */
struct pull_req {
	uint32_t rkey, len;
	uint64_t raddr;
};

static struct net *the_net;
static uint32_t poll_us = 50;	/* store.tcp_poll_us of the nets brought up */
static char net_extra[700];	/* more store settings of the nets brought up */
static const char *b_extra = "";	/* more settings of their node b */

static int echo(void *arg, uint32_t from, uint16_t opcode, const void *req, size_t len,
		struct pc_msg *resp)
{
	struct pc_fabric *self = the_net->f[(uintptr_t)arg];
	struct pull_req pr;

	switch (opcode) {
	case OP_FAIL:
		return -ENOTSUP;
	case OP_PULL: {
		struct pc_op op = { .kind = PC_OP_READ, .peer = from };

		if (len != sizeof(pr))
			return -EPROTO;
		memcpy(&pr, req, sizeof(pr));
		if (pc_msg_reserve(resp, pr.len))
			return -ENOMEM;
		op.rkey = pr.rkey;
		op.raddr = pr.raddr;
		op.local = resp->data;
		op.len = pr.len;
		if (pc_fabric_post(self, &op, 1) || op.status)
			return op.status ? op.status : -EIO;
		resp->len = pr.len;
		return 0;
	}
	case OP_WAIT:
		for (int i = 0; i < 1000 && !__atomic_load_n(&the_net->released, __ATOMIC_ACQUIRE); i++)
			usleep(1000);
		return __atomic_load_n(&the_net->released, __ATOMIC_ACQUIRE) ? 0 : -ETIMEDOUT;
	case OP_WHO:
	case OP_WHO_QUICK: {	/* the name of the thread answering */
		char name[16] = "";

		pthread_getname_np(pthread_self(), name, sizeof(name));
		return pc_msg_append(resp, name, strlen(name) + 1);
	}
	default:
		return pc_msg_append(resp, req, len);
	}
}

static const char *fabric_name = "tcp";

static bool is_tcp(void)
{
	return !strcmp(fabric_name, "tcp");
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int node_up(struct net *N, uint32_t i)
{
	struct pc_fabric_params p = { .size = sizeof(p), .topo = N->topo, .self = i };
	int ret = pc_fabric_open(fabric_name, &p, &N->f[i]);

	if (ret)
		return ret;
	N->r[i] = (struct pc_region){ .addr = N->mem[i], .len = MEM,
				      .access = PC_ACCESS_REMOTE_READ | PC_ACCESS_REMOTE_WRITE |
						PC_ACCESS_REMOTE_ATOMIC };
	ret = pc_fabric_reg(N->f[i], &N->r[i]);
	if (!ret)
		ret = pc_fabric_serve(N->f[i], echo, (void *)(uintptr_t)i);
	if (ret) {
		pc_fabric_close(N->f[i]);
		N->f[i] = NULL;
	}
	return ret;
}

static void node_down(struct net *N, uint32_t i)
{
	if (!N->f[i])
		return;
	pc_fabric_dereg(N->f[i], &N->r[i]);
	pc_fabric_close(N->f[i]);
	N->f[i] = NULL;
}

/* Three nodes on loopback; node 2 starts down unless all is set. */
static struct net *net_up(int all)
{
	struct net *N = calloc(1, sizeof(*N));
	char text[1536], err[PC_ERR_MAX];

	CU_ASSERT_PTR_NOT_NULL_FATAL(N);
	the_net = N;
	for (uint32_t i = 0; i < NODES; i++) {
		N->mem[i] = aligned_alloc(4096, MEM);
		memset(N->mem[i], (int)i + 1, MEM);
	}
	for (int attempt = 0; attempt < 20; attempt++) {
		int ret = 0;

		N->port0 = pc_test_port_base(attempt);
		snprintf(text, sizeof(text),
			 "store: {timeout_ms: 400, tcp_poll_us: %u%s}\nnodes:\n"
			 "  - {name: a, address: 127.0.0.1, port: %u}\n"
			 "  - {name: b, address: 127.0.0.1, port: %u%s}\n"
			 "  - {name: c, address: 127.0.0.1, port: %u}\n",
			 poll_us, net_extra, N->port0, N->port0 + 1, b_extra, N->port0 + 2);
		CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "net", &N->topo, err,
							sizeof(err)), 0);
		for (uint32_t i = 0; i < (all ? 3u : 2u) && !ret; i++)
			ret = node_up(N, i);
		if (!ret)
			return N;
		for (uint32_t i = 0; i < NODES; i++)
			node_down(N, i);
		pc_topology_free(N->topo);
	}
	CU_FAIL_FATAL("no free ports");
	return NULL;
}

static void net_down(struct net *N)
{
	for (uint32_t i = 0; i < NODES; i++) {
		node_down(N, i);
		free(N->mem[i]);
	}
	pc_topology_free(N->topo);
	free(N);
}

static uint64_t at(struct net *N, uint32_t i, size_t off)
{
	return (uint64_t)(uintptr_t)N->mem[i] + off;
}

static void test_batch(void)
{
	struct net *N = net_up(0);
	uint8_t a[1000], b[3000], w[5000], old[8];
	struct pc_op ops[5] = {
		{ .kind = PC_OP_READ, .peer = 1, .rkey = N->r[1].key, .raddr = at(N, 1, 7), .local = a, .len = sizeof(a) },
		{ .kind = PC_OP_WRITE, .peer = 0, .rkey = N->r[0].key, .raddr = at(N, 0, 100), .local = w, .len = sizeof(w) },
		{ .kind = PC_OP_CAS, .peer = 1, .rkey = N->r[1].key, .raddr = at(N, 1, 4096), .local = old, .len = 8,
		  .compare = 0x0202020202020202ULL, .swap = 77 },
		{ .kind = PC_OP_READ, .peer = 0, .rkey = N->r[0].key, .raddr = at(N, 0, 0), .local = b, .len = sizeof(b) },
		{ .kind = PC_OP_WRITE, .peer = 1, .rkey = N->r[1].key, .raddr = at(N, 1, 0), .local = w, .len = 1 },
	};
	struct pc_fabric_stats st;

	memset(w, 0xab, sizeof(w));
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], ops, 5), 0);
	for (int i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(ops[i].status, 0);
	CU_ASSERT(a[0] == 2 && a[999] == 2);
	CU_ASSERT_EQUAL(N->mem[0][100], 0xab);
	CU_ASSERT_EQUAL(N->mem[0][5099], 0xab);
	CU_ASSERT_EQUAL(N->mem[0][5100], 1);
	CU_ASSERT_EQUAL(*(uint64_t *)old, 0x0202020202020202ULL);
	CU_ASSERT_EQUAL(*(uint64_t *)(N->mem[1] + 4096), 77);
	CU_ASSERT_EQUAL(N->mem[1][0], 0xab);
	/* ops within a post have no defined order: b may or may not see the write */
	CU_ASSERT(b[0] == 1 && (b[100] == 1 || b[100] == 0xab));
	pc_fabric_get_stats(N->f[1], &st);
	if (is_tcp())	/* an RDMA NIC serves one-sided ops without the host counting */
		CU_ASSERT_EQUAL(st.served_ops, 3);
	pc_fabric_get_stats(N->f[0], &st);
	CU_ASSERT_EQUAL(st.post_phases, 1);
	CU_ASSERT_EQUAL(st.bytes_read, 4000);
	net_down(N);
}

static void test_rpc(void)
{
	struct net *N = net_up(0);
	struct pc_rpc r[3] = {
		{ .peer = 1, .opcode = 5, .req = "ping", .req_len = 4 },
		{ .peer = 0, .opcode = OP_FAIL, .req = "x", .req_len = 1 },
		{ .peer = 1, .opcode = 6, .req = NULL, .req_len = 0 },
	};

	CU_ASSERT_EQUAL(pc_fabric_call(N->f[0], r, 3), 0);
	CU_ASSERT_EQUAL(r[0].status, 0);
	CU_ASSERT_EQUAL(r[0].resp.len, 4);
	CU_ASSERT_EQUAL(memcmp(r[0].resp.data, "ping", 4), 0);
	CU_ASSERT_EQUAL(r[1].status, -ENOTSUP);
	CU_ASSERT_EQUAL(r[2].status, 0);
	CU_ASSERT_EQUAL(r[2].resp.len, 0);
	for (int i = 0; i < 3; i++)
		pc_msg_free(&r[i].resp);
	net_down(N);
}

/* A handler may pull from its caller with one-sided READs (stage_put does). */
static void test_rpc_pulls(void)
{
	struct net *N = net_up(0);
	struct pull_req pr = { .rkey = N->r[0].key, .len = 50000, .raddr = at(N, 0, 12345) };
	struct pc_rpc r = { .peer = 1, .opcode = OP_PULL, .req = &pr, .req_len = sizeof(pr) };

	for (uint32_t i = 0; i < pr.len; i++)
		N->mem[0][12345 + i] = (uint8_t)(i * 7);
	CU_ASSERT_EQUAL(pc_fabric_call(N->f[0], &r, 1), 0);
	CU_ASSERT_EQUAL_FATAL(r.status, 0);
	CU_ASSERT_EQUAL_FATAL(r.resp.len, pr.len);
	CU_ASSERT_EQUAL(memcmp(r.resp.data, N->mem[0] + 12345, pr.len), 0);
	pc_msg_free(&r.resp);
	net_down(N);
}

/* An opcode the serving fabric marks quick is answered on the server's event thread;
 * the others on its RPC workers. */
static void test_rpc_quick(void)
{
	struct net *N = net_up(0);
	struct pc_rpc r[2] = {
		{ .peer = 1, .opcode = OP_WHO, .req = "", .req_len = 0 },
		{ .peer = 1, .opcode = OP_WHO_QUICK, .req = "", .req_len = 0 },
	};

	N->f[1]->quick_rpcs = 1ULL << OP_WHO_QUICK;
	CU_ASSERT_EQUAL(pc_fabric_call(N->f[0], r, 2), 0);
	for (int i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(r[i].status, 0);
	printf("\n  answered by %s and, quick, by %s\n", (char *)r[0].resp.data, (char *)r[1].resp.data);
	if (is_tcp()) {
		CU_ASSERT_STRING_EQUAL(r[0].resp.data, "pc-tcp-rpc");
		CU_ASSERT_STRING_EQUAL(r[1].resp.data, "pc-tcp-server");
	}
	for (int i = 0; i < 2; i++)
		pc_msg_free(&r[i].resp);
	net_down(N);
}

static void *call_wait(void *arg)
{
	struct net *N = arg;
	struct pc_rpc *r = calloc(1, sizeof(*r));

	r->peer = 1;
	r->opcode = OP_WAIT;
	pc_fabric_call(N->f[2], r, 1);
	return r;
}

/* While a handler runs, the node keeps serving one-sided ops (the handler here
 * returns only after a READ of the same node completed). */
static void test_rpc_does_not_block_ops(void)
{
	struct net *N = net_up(1);
	uint8_t buf[4096];
	struct pc_op op = { .kind = PC_OP_READ, .peer = 1, .rkey = N->r[1].key,
			    .raddr = at(N, 1, 0), .local = buf, .len = sizeof(buf) };
	struct pc_rpc *r;
	pthread_t t;

	__atomic_store_n(&N->released, 0, __ATOMIC_RELEASE);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, call_wait, N), 0);
	usleep(50000);		/* the handler is waiting now */
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	CU_ASSERT_EQUAL(op.status, 0);
	CU_ASSERT_EQUAL(buf[0], 2);
	__atomic_store_n(&N->released, 1, __ATOMIC_RELEASE);
	pthread_join(t, (void **)&r);
	CU_ASSERT_EQUAL(r->status, 0);
	pc_msg_free(&r->resp);
	free(r);
	net_down(N);
}

/* Eight calls from node a whose handlers wait (as a handler pulling from a stalled
 * caller would) hold two of the workers; another caller's RPC is answered at once. */
/* Eight calls whose handlers wait until released, made from one fabric. */
struct waiter {
	struct net *N;
	struct pc_fabric *from;
};

static void *call_waits(void *arg)
{
	struct waiter *w = arg;
	struct pc_rpc *r = calloc(8, sizeof(*r));

	for (int i = 0; i < 8; i++)
		r[i] = (struct pc_rpc){ .peer = 1, .opcode = OP_WAIT, .req = "", .req_len = 0 };
	pc_fabric_call(w->from, r, 8);
	return r;
}

/* While 8 handlers of one caller (node a, or a client) wait on b, node c's call to
 * b is answered: the caller holds at most its share of b's workers. Returns how
 * long c's call took, in ms. */
static uint64_t workers_shared(struct net *N, struct pc_fabric *from, const char *who_waits)
{
	struct pc_rpc who = { .peer = 1, .opcode = OP_WHO, .req = "", .req_len = 0 }, *r;
	struct waiter w = { .N = N, .from = from };
	uint64_t t0, dt;
	pthread_t t;
	int answered = 0;

	__atomic_store_n(&N->released, 0, __ATOMIC_RELEASE);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, call_waits, &w), 0);
	usleep(100000);		/* the caller's handlers are waiting now */
	t0 = now_ms();
	CU_ASSERT_EQUAL(pc_fabric_call(N->f[2], &who, 1), 0);
	dt = now_ms() - t0;
	__atomic_store_n(&N->released, 1, __ATOMIC_RELEASE);
	pthread_join(t, (void **)&r);
	for (int i = 0; i < 8; i++) {
		answered += !r[i].status;
		pc_msg_free(&r[i].resp);
	}
	printf("\n  8 waiting calls from %s: %d answered within the timeout; c's call in the meantime: %s in %llu ms\n",
	       who_waits, answered, strerror(-who.status), (unsigned long long)dt);
	CU_ASSERT_EQUAL(who.status, 0);
	pc_msg_free(&who.resp);
	free(r);
	return dt;
}

static void test_rpc_workers_shared(void)
{
	struct net *N = net_up(1);

	CU_ASSERT(workers_shared(N, N->f[0], "a") < 200);
	net_down(N);
}

/* The same from a client: clients and tools together hold at most half the
 * workers (nothing bounds how many of them there are), node c is served. */
static void test_rpc_workers_shared_clients(void)
{
	struct net *N;
	struct pc_fabric_params p = { .size = sizeof(p), .self = PC_PEER_NONE };
	struct pc_fabric *client;

	if (!is_tcp())
		return;		/* the tcp server's workers */
	N = net_up(1);
	p.topo = N->topo;
	CU_ASSERT_EQUAL_FATAL(pc_fabric_open(fabric_name, &p, &client), 0);
	workers_shared(N, client, "a client");
	pc_fabric_close(client);
	net_down(N);
}

static void test_refusals_keep_connection(void)
{
	struct net *N = net_up(0);
	struct pc_region ro = { .addr = N->mem[1] + MEM - 4096, .len = 4096,
				.access = PC_ACCESS_REMOTE_READ };
	uint8_t buf[64];
	struct pc_op ops[4] = {
		{ .kind = PC_OP_READ, .peer = 1, .rkey = N->r[1].key, .raddr = at(N, 1, MEM - 8), .local = buf, .len = 64 },
		{ .kind = PC_OP_READ, .peer = 1, .rkey = 12345, .raddr = at(N, 1, 0), .local = buf, .len = 8 },
		{ .kind = PC_OP_WRITE, .peer = 1, .rkey = 0, .raddr = at(N, 1, MEM - 4096), .local = buf, .len = 64 },
		{ .kind = PC_OP_READ, .peer = 1, .rkey = N->r[1].key, .raddr = at(N, 1, 0), .local = buf, .len = 64 },
	};
	struct pc_fabric_stats st;

	CU_ASSERT_EQUAL_FATAL(pc_fabric_reg(N->f[1], &ro), 0);
	ops[2].rkey = ro.key;
	memset(buf, 0xcc, sizeof(buf));
	if (is_tcp()) {		/* refused one by one; the rest of the batch is served */
		CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], ops, 4), 0);
		CU_ASSERT_EQUAL(ops[0].status, -EFAULT);
		CU_ASSERT_EQUAL(ops[1].status, -ENOKEY);
		CU_ASSERT_EQUAL(ops[2].status, -EACCES);
		CU_ASSERT_EQUAL(ops[3].status, 0);
		pc_fabric_get_stats(N->f[1], &st);
		CU_ASSERT_EQUAL(st.refused_ops, 3);
		CU_ASSERT_EQUAL(st.bad_frames, 0);
	} else {
		/* RDMA: a remote access error ends the QP; each refusal alone, then a good
		 * op on the rebuilt connection. */
		for (int i = 0; i < 3; i++) {
			CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &ops[i], 1), 0);
			printf("\n  refused op %d: %s", i, strerror(-ops[i].status));
			CU_ASSERT(ops[i].status < 0);
			CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &ops[3], 1), 0);
			CU_ASSERT_EQUAL(ops[3].status, 0);
		}
	}
	CU_ASSERT_EQUAL(N->mem[1][MEM - 4096], 2);	/* the refused write did not land */
	pc_fabric_dereg(N->f[1], &ro);
	net_down(N);
}

/* ------------------------------------------------------------ malformed frames */

/* Say HELLO on a raw connection as a client with the net's settings and no secret;
 * returns the HELLO_ACK's status. */
static int raw_hello(int fd, uint32_t expect)
{
	char text[TOPOLOGY_PLACEMENT_TEXT_MAX];
	struct tcp_hdr h;
	struct tcp_hello hello = { .node = PC_PEER_NONE, .expect_node = expect };
	uint8_t ack[sizeof(struct tcp_hello_ack) + TCP_TEXT_MAX];

	CU_ASSERT_EQUAL(topology_placement_text(the_net->topo, text, sizeof(text)), 0);
	hello.fingerprint = topology_fingerprint(the_net->topo);
	hello.text_len = (uint32_t)strlen(text);
	h = (struct tcp_hdr){ .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_HELLO,
			      .body_len = sizeof(hello) + hello.text_len };
	CU_ASSERT_EQUAL(send(fd, &h, sizeof(h), 0), sizeof(h));
	CU_ASSERT_EQUAL(send(fd, &hello, sizeof(hello), 0), sizeof(hello));
	CU_ASSERT_EQUAL(send(fd, text, hello.text_len, 0), hello.text_len);
	CU_ASSERT_EQUAL_FATAL(recv(fd, &h, sizeof(h), MSG_WAITALL), sizeof(h));
	CU_ASSERT_FATAL(h.body_len >= sizeof(struct tcp_hello_ack) && h.body_len <= sizeof(ack));
	CU_ASSERT_EQUAL(recv(fd, ack, h.body_len, MSG_WAITALL), (ssize_t)h.body_len);
	return h.status;
}

/* The server hangs up: recv sees EOF (or a reset) within a second. */
static int closed_by_server(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b[256];

	for (int i = 0; i < 20; i++) {
		ssize_t r;

		if (poll(&p, 1, 100) != 1)
			continue;
		r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (r <= 0)
			return 1;
	}
	return 0;
}

struct bad {
	const char *what;
	int hello;		/* say HELLO first */
	struct tcp_hdr h;
	size_t extra;		/* body bytes to send after the header, from b */
	union {
		struct tcp_opdesc d;
		struct tcp_hello hello;
	} b;
};

/* Every way a request can be malformed; each closes its connection. A case without
 * extra is refused on its header alone. */
static const struct bad bad_frames[] = {
	{ .what = "bad magic", .hello = 1, .h = { .magic = 0xdeadbeef, .version = TCP_VERSION, .type = TCP_RPC } },
	{ .what = "bad version", .hello = 1, .h = { .magic = TCP_MAGIC, .version = 9, .type = TCP_RPC } },
	{ .what = "unknown type", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = 77 } },
	{ .what = "a response type", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS_RESP } },
	{ .what = "flags", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_RPC, .flags = 1 } },
	{ .what = "frame before HELLO", .hello = 0, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_RPC } },
	{ .what = "second HELLO", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_HELLO, .body_len = 64 } },
	{ .what = "AUTH without a secret", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_AUTH, .body_len = 32 } },
	{ .what = "HELLO with too much text", .hello = 0, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_HELLO,
				     .body_len = 64 + TCP_TEXT_MAX + 1 } },
	{ .what = "oversized RPC", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_RPC, .body_len = (uint64_t)TCP_MAX_RPC_BODY + 1 } },
	{ .what = "oversized OPS", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS, .count = 1,
				.body_len = TCP_MAX_OPS_BODY + 1 } },
	{ .what = "zero ops", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS, .count = 0, .body_len = 0 } },
	{ .what = "too many ops", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS, .count = TCP_MAX_OPS + 1,
			       .body_len = (uint64_t)(TCP_MAX_OPS + 1) * 40 } },
	{ .what = "OPS body shorter than its descriptors", .hello = 1,
	  .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS, .count = 2, .body_len = 40 } },
	{ .what = "OPS body not matching its writes", .hello = 1,
	  .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS, .count = 1, .body_len = 40 }, .extra = 40, .b.d = { .kind = PC_OP_WRITE, .len = 100 } },
	{ .what = "unknown op kind", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS, .count = 1, .body_len = 40 }, .extra = 40, .b.d = { .kind = 9, .len = 8 } },
	{ .what = "CAS of 4 bytes", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS, .count = 1, .body_len = 40 }, .extra = 40, .b.d = { .kind = PC_OP_CAS, .len = 4 } },
	{ .what = "op over the length limit", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS, .count = 1,
					   .body_len = 40 }, .extra = 40, .b.d = { .kind = PC_OP_READ, .len = TCP_MAX_OP_LEN + 1 } },
	{ .what = "HELLO with a short body", .hello = 0, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_HELLO, .body_len = 8 } },
	{ .what = "HELLO from an unknown node", .hello = 0, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_HELLO, .body_len = 64 },
	  .extra = 64, .b.hello = { .node = NODES, .expect_node = 1 } },
	{ .what = "HELLO whose text is not its body", .hello = 0, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_HELLO, .body_len = 64 },
	  .extra = 64, .b.hello = { .node = PC_PEER_NONE, .expect_node = 1, .text_len = 5 } },
	{ .what = "HELLO with unknown flags", .hello = 0, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_HELLO, .body_len = 64 },
	  .extra = 64, .b.hello = { .node = PC_PEER_NONE, .expect_node = 1, .flags = 6 } },
	{ .what = "RPC opcode over 16 bits", .hello = 1, .h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_RPC, .count = 1u << 16 } },
};

#define NBAD (sizeof(bad_frames) / sizeof(bad_frames[0]))

static void test_bad_frames(void)
{
	struct net *N = net_up(0);
	struct pc_fabric_stats st;
	unsigned closed = 0;

	printf("\n");
	for (size_t i = 0; i < NBAD; i++) {
		int fd = pc_test_connect(N->port0 + 1);
		uint8_t rd[16];
		struct pc_op good = { .kind = PC_OP_READ, .peer = 1, .rkey = N->r[1].key,
				      .raddr = at(N, 1, 0), .local = rd, .len = 16 };
		int c;

		if (bad_frames[i].hello)
			raw_hello(fd, 1);
		CU_ASSERT_EQUAL(send(fd, &bad_frames[i].h, sizeof(bad_frames[i].h), MSG_NOSIGNAL), 32);
		if (bad_frames[i].extra)
			send(fd, &bad_frames[i].b, bad_frames[i].extra, MSG_NOSIGNAL);
		c = closed_by_server(fd);
		closed += c;
		printf("  %-40s -> %s\n", bad_frames[i].what, c ? "connection closed" : "STILL OPEN");
		CU_ASSERT_TRUE(c);
		close(fd);
		/* the server still serves a good client */
		CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &good, 1), 0);
		CU_ASSERT_EQUAL(good.status, 0);
	}
	pc_fabric_get_stats(N->f[1], &st);
	printf("  %u of %zu malformed frames closed their connection; server counted %llu, and %llu over a size limit\n",
	       closed, NBAD, (unsigned long long)st.bad_frames,
	       (unsigned long long)st.oversize_refused);
	CU_ASSERT_EQUAL(st.bad_frames, NBAD - 1);
	CU_ASSERT_EQUAL(st.oversize_refused, 1);	/* the oversized RPC */
	net_down(N);
}

/* A frame cut short, then the client goes away: nothing lands, nothing crashes. */
static void test_truncated(void)
{
	struct net *N = net_up(0);
	struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS, .count = 1,
			     .body_len = 40 + 1000 };
	struct tcp_opdesc d = { .kind = PC_OP_WRITE, .rkey = N->r[1].key, .raddr = at(N, 1, 0),
				.len = 1000 };
	uint8_t junk[500], rd[8];
	struct pc_op good = { .kind = PC_OP_READ, .peer = 1, .rkey = N->r[1].key,
			      .raddr = at(N, 1, 600), .local = rd, .len = 8 };
	int fd = pc_test_connect(N->port0 + 1);

	memset(junk, 0x5a, sizeof(junk));
	raw_hello(fd, 1);
	send(fd, &h, 20, 0);		/* half a header */
	send(fd, (char *)&h + 20, 12, 0);
	send(fd, &d, sizeof(d), 0);
	send(fd, junk, sizeof(junk), 0);	/* half the payload */
	close(fd);
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &good, 1), 0);
	CU_ASSERT_EQUAL(good.status, 0);
	CU_ASSERT_EQUAL(rd[0], 2);	/* bytes past what arrived are untouched */
	net_down(N);
}

/* A region deregistered while a WRITE's payload is still arriving: the rest of the
 * payload lands nowhere (the connection closes), not in memory its owner has
 * taken back. */
static void test_dereg_mid_write(void)
{
	struct net *N = net_up(0);
	uint8_t *mem = aligned_alloc(4096, 65536), pay[4096];
	struct pc_region r = { .addr = mem, .len = 65536, .access = PC_ACCESS_REMOTE_WRITE };
	struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS,
			     .count = 1, .body_len = 40 + 65536 };
	struct tcp_opdesc d = { .kind = PC_OP_WRITE, .raddr = (uint64_t)(uintptr_t)mem, .len = 65536 };
	int fd = pc_test_connect(N->port0 + 1), landed = 0;

	memset(mem, 0x11, 65536);
	memset(pay, 0x66, sizeof(pay));
	CU_ASSERT_EQUAL_FATAL(pc_fabric_reg(N->f[1], &r), 0);
	d.rkey = r.key;
	raw_hello(fd, 1);
	send(fd, &h, sizeof(h), MSG_NOSIGNAL);
	send(fd, &d, sizeof(d), MSG_NOSIGNAL);
	send(fd, pay, sizeof(pay), MSG_NOSIGNAL);
	for (int i = 0; i < 100 && !landed; i++, usleep(10000))
		landed = __atomic_load_n(&mem[4095], __ATOMIC_ACQUIRE) == 0x66;
	CU_ASSERT_TRUE_FATAL(landed);	/* the server is inside the payload */
	pc_fabric_dereg(N->f[1], &r);
	for (int i = 1; i < 16; i++)
		send(fd, pay, sizeof(pay), MSG_NOSIGNAL);
	CU_ASSERT_TRUE(closed_by_server(fd));
	close(fd);
	CU_ASSERT_EQUAL(mem[4096], 0x11);
	CU_ASSERT_EQUAL(mem[65535], 0x11);
	free(mem);
	net_down(N);
}

static void test_dead_and_stalled(void)
{
	struct net *N = net_up(0);
	uint8_t buf[8];
	struct pc_op op = { .kind = PC_OP_READ, .peer = 2, .rkey = 1, .raddr = 0, .local = buf, .len = 8 };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(N->port0 + 2) };
	uint64_t t0 = now_ms(), dt;
	int lfd, one = 1;

	/* dead: nothing listens, connect is refused at once */
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	CU_ASSERT_EQUAL(op.status, -ECONNREFUSED);
	CU_ASSERT(now_ms() - t0 < 100);
	/* and for the back-off period the peer is skipped, without a connect */
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	CU_ASSERT_EQUAL(op.status, -ECONNREFUSED);
	usleep(250000);
	/* stalled: accepts connections (backlog) but never answers */
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	CU_ASSERT_EQUAL_FATAL(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	listen(lfd, 8);
	t0 = now_ms();
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	dt = now_ms() - t0;
	printf("\n  stalled peer: %s after %llu ms (timeout 400 ms)\n", strerror(-op.status),
	       (unsigned long long)dt);
	CU_ASSERT_EQUAL(op.status, -ETIMEDOUT);
	CU_ASSERT(dt >= 390 && dt < 1000);
	/* the next batches do not wait the timeout again while the peer backs off */
	t0 = now_ms();
	for (int i = 0; i < 20; i++) {
		CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
		CU_ASSERT_EQUAL(op.status, -ETIMEDOUT);
	}
	dt = now_ms() - t0;
	printf("  20 more batches to it: %llu ms in all\n", (unsigned long long)dt);
	CU_ASSERT(dt < 100);
	close(lfd);
	net_down(N);
}

static void test_stalled_mid_batch(void)
{
	struct net *N = net_up(0);
	uint8_t a[8], b[8];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(N->port0 + 2) };
	struct pc_op ops[2] = {
		{ .kind = PC_OP_READ, .peer = 1, .rkey = N->r[1].key, .raddr = at(N, 1, 0), .local = a, .len = 8 },
		{ .kind = PC_OP_READ, .peer = 2, .rkey = 1, .raddr = 0, .local = b, .len = 8 },
	};
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	uint64_t t0;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	CU_ASSERT_EQUAL_FATAL(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	listen(lfd, 8);
	t0 = now_ms();
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], ops, 2), 0);
	CU_ASSERT(now_ms() - t0 < 1000);
	CU_ASSERT_EQUAL(ops[0].status, 0);	/* the live peer's result stands */
	CU_ASSERT_EQUAL(a[0], 2);
	CU_ASSERT_EQUAL(ops[1].status, -ETIMEDOUT);
	close(lfd);
	net_down(N);
}

static void test_restart(void)
{
	struct net *N = net_up(1);
	uint8_t buf[8];
	uint64_t inc = N->f[2]->incarnation;
	uint32_t key = N->r[2].key;
	uint64_t t0;
	struct pc_op op = { .kind = PC_OP_READ, .peer = 2, .peer_inc = inc, .rkey = key,
			    .raddr = at(N, 2, 0), .local = buf, .len = 8 };

	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	CU_ASSERT_EQUAL(op.status, 0);
	node_down(N, 2);
	CU_ASSERT_EQUAL_FATAL(node_up(N, 2), 0);
	CU_ASSERT_NOT_EQUAL(N->f[2]->incarnation, inc);
	/* tcp drops the idle connection to the old server and learns the restart at
	 * once; an RDMA QP learns it when its op fails (the peer then backs off for
	 * store.peer_backoff_ms), the reconnect after that */
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	if (!is_tcp() && op.status != -ESTALE) {
		printf("\n  first op after the restart: %s", strerror(-op.status));
		CU_ASSERT(op.status < 0);
		usleep(150 * 1000);
		CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	}
	CU_ASSERT_EQUAL(op.status, -ESTALE);
	/* an address not pinned to an incarnation reaches the new server's check */
	op.peer_inc = 0;
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	CU_ASSERT(op.status == -ENOKEY || (op.status == 0 && N->r[2].key == key));
	if (!is_tcp() && op.status)	/* unknown to this connection: it reconnects */
		pc_fabric_post(N->f[0], &op, 1);
	op.peer_inc = N->f[2]->incarnation;
	op.rkey = N->r[2].key;
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	CU_ASSERT_EQUAL(op.status, 0);
	/* on the live connection, an old incarnation is refused without a round trip */
	op.peer_inc = inc;
	t0 = now_ms();
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	CU_ASSERT_EQUAL(op.status, -ESTALE);
	CU_ASSERT(now_ms() - t0 < 100);
	net_down(N);
}

static void test_wrong_node(void)
{
	struct net *N = net_up(0);
	struct pc_topology *t2 = pc_topology_dup(N->topo);
	struct pc_fabric_params p = { .size = sizeof(p), .topo = t2, .self = 0 };
	struct pc_fabric *f;
	uint8_t buf[8];
	struct pc_op op = { .kind = PC_OP_READ, .peer = 2, .rkey = 1, .local = buf, .len = 8 };

	/* our topology says node 2 lives where node 1 really is */
	t2->nodes[2].port = N->port0 + 1;
	CU_ASSERT_EQUAL_FATAL(pc_fabric_open(fabric_name, &p, &f), 0);
	CU_ASSERT_EQUAL(pc_fabric_post(f, &op, 1), 0);
	CU_ASSERT_EQUAL(op.status, -EADDRNOTAVAIL);
	pc_fabric_close(f);
	pc_topology_free(t2);
	net_down(N);
}

static void test_large(void)
{
	struct net *N = net_up(0);
	const uint32_t n = 64, len = 256 * 1024;
	uint8_t *dst = malloc((size_t)n * len);
	struct pc_op *ops = calloc(n, sizeof(*ops));

	for (uint32_t i = 0; i < (size_t)n * len; i += 4096)
		N->mem[1][i] = (uint8_t)(i / 4096);
	for (uint32_t i = 0; i < n; i++)
		ops[i] = (struct pc_op){ .kind = PC_OP_READ, .peer = 1, .rkey = N->r[1].key,
					 .raddr = at(N, 1, (size_t)i * len), .local = dst + (size_t)i * len,
					 .len = len };
	/* 16 MiB in one phase: more than the 400 ms the stall tests use, under valgrind */
	N->f[0]->timeout_ms = 10000;
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], ops, n), 0);
	for (uint32_t i = 0; i < n; i++)
		CU_ASSERT_EQUAL(ops[i].status, 0);
	CU_ASSERT_EQUAL(memcmp(dst, N->mem[1], (size_t)n * len), 0);
	free(dst);
	free(ops);
	net_down(N);
}

static bool sender_paces;	/* each_sender's current sender (tcp_paces) */

/* body over tcp once with a sender that paces (bbr, where the kernel offers it),
 * whose bulk transfers are received in slices (tcp_sock.c), and once with one that
 * does not (reno), whose are not; over another fabric once. */
static void each_sender(void (*body)(void))
{
	static const char *const ccs[] = { "reno", "bbr" };
	char err[PC_ERR_MAX];

	if (!is_tcp()) {
		body();
		return;
	}
	for (int i = 0; i < 2; i++) {
		if (tcp_congestion_check(ccs[i], err, sizeof(err))) {
			printf("\n  %s not offered here: its receives go untested", ccs[i]);
			continue;
		}
		snprintf(net_extra, sizeof(net_extra), ", tcp_congestion: %s", ccs[i]);
		sender_paces = i == 1;
		body();
		net_extra[0] = 0;
	}
}

/* WRITEs of more than a megabyte in one post, of lengths that end anywhere in a
 * receive's 64 KiB slice (tcp_sock.c), land byte for byte. */
static void large_writes(void)
{
	struct net *N = net_up(0);
	const uint32_t n = 40;
	size_t total = 0, off = 0;
	uint8_t *src;
	struct pc_op *ops = calloc(n, sizeof(*ops));

	for (uint32_t i = 0; i < n; i++)
		total += 100000 + 4099 * i;
	src = malloc(total);
	for (size_t i = 0; i < total; i++)
		src[i] = (uint8_t)(i * 7 + i / 65536);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len = 100000 + 4099 * i;

		ops[i] = (struct pc_op){ .kind = PC_OP_WRITE, .peer = 1, .rkey = N->r[1].key,
					 .raddr = at(N, 1, off), .local = src + off, .len = len };
		off += len;
	}
	N->f[0]->timeout_ms = 10000;
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], ops, n), 0);
	for (uint32_t i = 0; i < n; i++)
		CU_ASSERT_EQUAL(ops[i].status, 0);
	CU_ASSERT_EQUAL(memcmp(N->mem[1], src, total), 0);
	free(src);
	free(ops);
	net_down(N);
}

static void test_large_writes(void)
{
	each_sender(large_writes);
}

/* What a landed() callback saw: whether each op's bytes were all in by then; and
 * arrived() calls: whether upto grew and its bytes were in. */
struct landed_seen {
	const uint8_t *remote;		/* the peer's memory the ops read */
	uint64_t base;			/* its address */
	unsigned calls, complete;
	bool seen[8];
	unsigned arrivals, arrived_bad;
	size_t upto[8];
};

static void on_arrived(void *arg, const struct pc_op *op, size_t upto)
{
	struct landed_seen *w = arg;
	const uint8_t *src = w->remote + (op->raddr - w->base);
	unsigned i = (unsigned)op->compare;

	w->arrivals++;
	w->arrived_bad += w->seen[i] || upto <= w->upto[i] || upto >= op->len ||
			  memcmp(op->head, src, op->head_len) ||
			  memcmp(op->local, src + op->head_len, upto);
	w->upto[i] = upto;
}

static void on_landed(void *arg, const struct pc_op *op)
{
	struct landed_seen *w = arg;
	const uint8_t *src = w->remote + (op->raddr - w->base);

	w->calls++;
	w->complete += !memcmp(op->head, src, op->head_len) &&
		       !memcmp(op->local, src + op->head_len, op->len);
	w->seen[(uintptr_t)op->compare] = true;
}

/* pc_op.landed: called once per successful READ that asks, with its bytes in,
 * before post() returns; never for a refused op or one that does not ask; arrived,
 * where asked, before it with more of the payload in each time (tcp, from a
 * sender that paces). Sizes below and above tcp's receive window, and more than a
 * megabyte in all (tcp then receives in slices, from a sender that paces), so
 * that each takes its turn; over verbs (rxe) as each READ's completion is polled. */
static void landed(void)
{
	static const uint32_t len[8] = { 4096, 262144, 100, 262144, (3u << 20) + 7, 12288, 8, 65536 };
	const size_t most = (3u << 20) + 7;
	struct net *N = net_up(0);
	struct landed_seen w = { .remote = N->mem[1], .base = at(N, 1, 0) };
	uint8_t *dst = calloc(8, most + 64), heads[8][64];
	struct pc_op ops[8];
	size_t off = 0;

	for (size_t i = 0; i < 8u << 20; i++)
		N->mem[1][i] = (uint8_t)(i * 7 + i / 251);
	for (int i = 0; i < 8; i++) {
		ops[i] = (struct pc_op){ .kind = PC_OP_READ, .peer = 1, .rkey = N->r[1].key,
					 .raddr = at(N, 1, off), .head = heads[i], .head_len = 64,
					 .local = dst + (size_t)i * (most + 64), .len = len[i],
					 .compare = (uint64_t)i };	/* only to tell the ops apart */
		if (i % 2) {	/* into registered memory: no staging over verbs */
			ops[i].head = N->mem[0] + (size_t)i * (most + 128);
			ops[i].local = (uint8_t *)ops[i].head + 64;
			ops[i].lreg = &N->r[0];
		}
		if (i != 5) {	/* 5 does not ask */
			ops[i].landed = on_landed;
			ops[i].landed_arg = &w;
		}
		if (i == 3 || i == 4)	/* and these as they arrive */
			ops[i].arrived = on_arrived;
		off += 64 + len[i] + 4096;
	}
	ops[2].rkey ^= 0x5a5a5a5a;	/* refused: its status says so, no call */
	N->f[0]->timeout_ms = 10000;
	CU_ASSERT_EQUAL_FATAL(pc_fabric_post(N->f[0], ops, 8), 0);
	CU_ASSERT_NOT_EQUAL(ops[2].status, 0);
	for (int i = 0; i < 8; i++) {
		if (i != 2)
			CU_ASSERT_EQUAL(ops[i].status, 0);
		CU_ASSERT_EQUAL(w.seen[i], i != 2 && i != 5);
	}
	CU_ASSERT_EQUAL(w.calls, 6);
	CU_ASSERT_EQUAL(w.complete, 6);
	CU_ASSERT_EQUAL(w.arrived_bad, 0);
	/* in pieces of 64 KiB: 3 of 256 KiB, 48 of 3 MiB; otherwise told once in */
	CU_ASSERT(is_tcp() && sender_paces ? w.arrivals >= 3 + 48 : w.arrivals == 0);
	free(dst);
	net_down(N);
}

static void test_landed(void)
{
	each_sender(landed);
}

/* What prepare() callbacks were asked: each WRITE's calls. */
struct prepare_seen {
	unsigned calls[8];
};

/* Fills the op's head: the peer must get the filled bytes, never the old ones. */
static void on_prepare(void *arg, const struct pc_op *op)
{
	struct prepare_seen *w = arg;
	unsigned i = (unsigned)op->compare;

	w->calls[i]++;
	memset(op->head, 0xA0 + (int)i, op->head_len);
}

/* pc_op.prepare: called once per WRITE that asks, before its bytes go (the peer's
 * memory holds what it filled in), never for a READ; tcp calls it as it sends, in
 * windows (sizes below and above one), the others through pc_fabric_post before. */
static void test_prepare(void)
{
	static const uint32_t len[8] = { 4096, 262144, 100, 3u << 20, 300000, 12288, 8, 65536 };
	struct net *N = net_up(0);
	struct prepare_seen w = { { 0 } };
	uint8_t *src = malloc(3u << 20), heads[8][64], got[100];
	uint64_t offs[8], off = 0;
	struct pc_op ops[8];

	CU_ASSERT_EQUAL(N->f[0]->prepares, is_tcp());
	for (size_t i = 0; i < 3u << 20; i++)
		src[i] = (uint8_t)(i * 13 + i / 509);
	memset(heads, 0x11, sizeof(heads));
	for (int i = 0; i < 8; i++) {
		offs[i] = off;
		ops[i] = (struct pc_op){ .kind = i == 2 ? PC_OP_READ : PC_OP_WRITE, .peer = 1,
					 .rkey = N->r[1].key, .raddr = at(N, 1, off), .head = heads[i],
					 .head_len = 64, .local = i == 2 ? got : src, .len = len[i],
					 .compare = (uint64_t)i };	/* only to tell the ops apart */
		if (i != 5) {	/* 5 does not ask */
			ops[i].prepare = on_prepare;
			ops[i].prepare_arg = &w;
		}
		off += 64 + len[i] + 4096;
	}
	N->f[0]->timeout_ms = 10000;
	CU_ASSERT_EQUAL_FATAL(pc_fabric_post(N->f[0], ops, 8), 0);
	for (int i = 0; i < 8; i++) {
		const uint8_t *r = N->mem[1] + offs[i];

		CU_ASSERT_EQUAL(ops[i].status, 0);
		CU_ASSERT_EQUAL(w.calls[i], i != 2 && i != 5 ? 1u : 0u);
		if (i == 2)
			continue;
		for (int b = 0; b < 64; b++)
			CU_ASSERT_EQUAL(r[b], i == 5 ? 0x11 : 0xA0 + i);
		CU_ASSERT_EQUAL(memcmp(r + 64, src, len[i]), 0);
	}
	free(src);
	net_down(N);
}

/* ------------------------------------------------------------ the parser alone */

/* A frame as bytes: the header, then n bytes of body. Returns its length. */
static size_t frame_of(uint8_t *buf, const struct tcp_hdr *h, const void *body, size_t n)
{
	memcpy(buf, h, sizeof(*h));
	if (n)
		memcpy(buf + sizeof(*h), body, n);
	return sizeof(*h) + n;
}

/* Feed frame[0..len) to the parser one byte more at a time, each prefix in a heap
 * block of exactly its size (valgrind sees a read past it). Every call before the
 * last must ask for more, and never for more than the frame holds. Returns the
 * first call's result that is not "more", with *at the prefix it came at; out->body
 * then points into frame. */
static ssize_t feed(const struct tcp_frame_ctx *ctx, const uint8_t *frame, size_t len,
		    struct tcp_frame *out, size_t *at)
{
	for (size_t n = 0; n <= len; n++) {
		uint8_t *b = malloc(n ? n : 1);
		ssize_t r;

		CU_ASSERT_PTR_NOT_NULL_FATAL(b);
		memcpy(b, frame, n);
		r = tcp_frame_parse(ctx, b, n, out);
		if (r > 0) {
			CU_ASSERT_PTR_EQUAL(out->body, b + sizeof(struct tcp_hdr));
			CU_ASSERT_EQUAL(out->body_len + sizeof(struct tcp_hdr), (size_t)r);
			out->body = frame + (out->body - b);
		}
		free(b);
		if (r) {
			*at = n;
			return r;
		}
		CU_ASSERT(out->need > n && out->need <= len);
	}
	*at = len;
	return 0;
}

static const struct tcp_frame_ctx after_hello = { .hello = true, .nr_nodes = NODES };

static void test_parse_valid(void)
{
	const struct tcp_frame_ctx fresh = { .hello = false, .nr_nodes = NODES };
	struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION };
	struct tcp_hello hello = { .node = 2, .expect_node = 1, .incarnation = 9 };
	struct tcp_opdesc d[3] = {
		{ .kind = PC_OP_READ, .rkey = 1, .raddr = 4096, .len = 64 },
		{ .kind = PC_OP_WRITE, .rkey = 1, .raddr = 8192, .len = 100 },
		{ .kind = PC_OP_CAS, .rkey = 1, .raddr = 64, .len = 8, .compare = 1, .swap = 2 },
	};
	uint8_t buf[512], ops[sizeof(d) + 100];
	struct tcp_frame fr;
	size_t len, at, rpc_len;

	/* HELLO, from a node and from a client */
	h.type = TCP_HELLO;
	h.body_len = sizeof(hello);
	len = frame_of(buf, &h, &hello, sizeof(hello));
	CU_ASSERT_EQUAL(feed(&fresh, buf, len, &fr, &at), 96);
	CU_ASSERT_EQUAL(at, 96);
	CU_ASSERT_EQUAL(fr.hdr.type, TCP_HELLO);
	CU_ASSERT(fr.hello.node == 2 && fr.hello.expect_node == 1 && fr.hello.incarnation == 9);
	hello.node = PC_PEER_NONE;
	len = frame_of(buf, &h, &hello, sizeof(hello));
	CU_ASSERT_EQUAL(feed(&fresh, buf, len, &fr, &at), 96);
	CU_ASSERT_EQUAL(fr.hello.node, PC_PEER_NONE);

	/* RPC with a body, and without */
	h.type = TCP_RPC;
	h.count = 7;
	h.seq = 42;
	h.body_len = 9;
	rpc_len = frame_of(buf, &h, "ping-pong", 9);
	CU_ASSERT_EQUAL(feed(&after_hello, buf, rpc_len, &fr, &at), 41);
	CU_ASSERT(fr.hdr.count == 7 && fr.hdr.seq == 42 && fr.body_len == 9);
	CU_ASSERT_EQUAL(memcmp(fr.body, "ping-pong", 9), 0);
	h.body_len = 0;
	len = frame_of(buf + 100, &h, NULL, 0);
	CU_ASSERT_EQUAL(feed(&after_hello, buf + 100, len, &fr, &at), 32);
	CU_ASSERT_EQUAL(fr.body_len, 0);

	/* OPS: the head is the descriptors; the WRITE payload follows unparsed */
	memcpy(ops, d, sizeof(d));
	memset(ops + sizeof(d), 0xab, 100);
	h.type = TCP_OPS;
	h.count = 3;
	h.body_len = sizeof(ops);
	len = frame_of(buf + rpc_len, &h, ops, sizeof(ops));
	CU_ASSERT_EQUAL(feed(&after_hello, buf + rpc_len, len, &fr, &at), 32 + 120);
	CU_ASSERT_EQUAL(at, 32 + 120);
	CU_ASSERT(fr.nops == 3 && fr.body_len == 120 && fr.payload_len == 100);
	CU_ASSERT_EQUAL(memcmp(fr.body, d, sizeof(d)), 0);

	/* Back to back in one buffer: each parse takes one frame's head. */
	CU_ASSERT_EQUAL(tcp_frame_parse(&after_hello, buf, rpc_len + len, &fr), 41);
	CU_ASSERT_EQUAL(tcp_frame_parse(&after_hello, buf + rpc_len, len, &fr), 152);
	CU_ASSERT_EQUAL(fr.payload_len, 100);
}

/* Each malformed frame is refused at the byte that makes it so: on its header
 * alone before any body is asked for, or once its head is in. */
static void test_parse_malformed(void)
{
	for (size_t i = 0; i < NBAD; i++) {
		const struct bad *b = &bad_frames[i];
		struct tcp_frame_ctx ctx = { .hello = b->hello, .nr_nodes = NODES };
		uint8_t buf[sizeof(struct tcp_hdr) + sizeof(b->b)];
		size_t len = frame_of(buf, &b->h, &b->b, b->extra), at;
		struct tcp_frame fr;

		CU_ASSERT_EQUAL(feed(&ctx, buf, len, &fr, &at),
				b->h.type == TCP_RPC && b->h.body_len > TCP_MAX_RPC_BODY ? -EMSGSIZE : -EPROTO);
		CU_ASSERT_EQUAL(at, len);
		CU_ASSERT_PTR_NOT_NULL(fr.why);
		if (at != len || !fr.why)
			printf("\n  %s: refused at %zu of %zu (%s)", b->what, at, len,
			       fr.why ? fr.why : "no reason");
	}
}

/* At the limits: the most ops and the largest RPC are taken, one more is not, and
 * the parser never asks for more than TCP_FRAME_HEAD_MAX. */
static void test_parse_limits(void)
{
	struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS,
			     .count = TCP_MAX_OPS,
			     .body_len = (uint64_t)TCP_MAX_OPS * sizeof(struct tcp_opdesc) };
	size_t len = sizeof(h) + h.body_len;
	uint8_t *buf = calloc(1, len);
	struct tcp_frame fr;

	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	for (uint32_t i = 0; i < TCP_MAX_OPS; i++) {
		struct tcp_opdesc d = { .kind = PC_OP_READ, .len = TCP_MAX_OP_LEN };

		memcpy(buf + sizeof(h) + (size_t)i * sizeof(d), &d, sizeof(d));
	}
	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(tcp_frame_parse(&after_hello, buf, len - 1, &fr), 0);
	CU_ASSERT_EQUAL(fr.need, len);
	CU_ASSERT_EQUAL(tcp_frame_parse(&after_hello, buf, len, &fr), (ssize_t)len);
	CU_ASSERT_EQUAL(fr.nops, TCP_MAX_OPS);
	free(buf);

	h = (struct tcp_hdr){ .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_RPC,
			      .count = UINT16_MAX, .body_len = TCP_MAX_RPC_BODY };
	CU_ASSERT_EQUAL(tcp_frame_parse(&after_hello, (const uint8_t *)&h, sizeof(h), &fr), 0);
	CU_ASSERT_EQUAL(fr.need, TCP_FRAME_HEAD_MAX);
	h.body_len++;
	CU_ASSERT_EQUAL(tcp_frame_parse(&after_hello, (const uint8_t *)&h, sizeof(h), &fr), -EMSGSIZE);
}

/* Random bytes over a valid frame and random cuts, each parse on an exact-size
 * block: whatever comes in, the answer is one of the three and what it says adds up. */
static void test_parse_mutated(void)
{
	struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_OPS,
			     .count = 2, .body_len = 80 + 16 };
	struct tcp_opdesc d[2] = { { .kind = PC_OP_WRITE, .len = 16 }, { .kind = PC_OP_READ, .len = 8 } };
	uint8_t frame[32 + 96];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	unsigned ok = 0, more = 0, refused = 0;

	memcpy(frame, &h, sizeof(h));
	memcpy(frame + 32, d, sizeof(d));
	memset(frame + 112, 0x5a, 16);
	for (int it = 0; it < 20000; it++) {
		uint8_t m[sizeof(frame)], *b;
		size_t len;
		struct tcp_frame fr;
		ssize_t r;

		memcpy(m, frame, sizeof(m));
		for (int k = 0; k < 1 + it % 4; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			m[x % sizeof(m)] = (uint8_t)(x >> 32);
		}
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		len = it % 3 ? sizeof(m) : x % (sizeof(m) + 1);
		b = malloc(len ? len : 1);
		CU_ASSERT_PTR_NOT_NULL_FATAL(b);
		memcpy(b, m, len);
		r = tcp_frame_parse(&after_hello, b, len, &fr);
		if (r > 0) {
			ok++;
			CU_ASSERT((size_t)r <= len && fr.body_len + 32 == (size_t)r);
			if (fr.hdr.type == TCP_OPS)
				CU_ASSERT(fr.nops * 40ULL == fr.body_len &&
					  fr.hdr.body_len == fr.body_len + fr.payload_len);
		} else if (r == 0) {
			more++;
			CU_ASSERT(fr.need > len && fr.need <= TCP_FRAME_HEAD_MAX);
		} else {
			refused++;
			CU_ASSERT((r == -EPROTO || r == -EMSGSIZE) && fr.why);
		}
		free(b);
	}
	printf("\n  20000 mutated frames: %u parsed, %u asked for more, %u refused\n", ok, more, refused);
	CU_ASSERT(ok && more && refused);
}

/* With tcp_poll_us: 0 clients and servers sleep at once: batches, RPCs and the
 * timeouts of dead and stalled peers work the same. */
static void test_no_polling(void)
{
	poll_us = 0;
	test_batch();
	test_rpc();
	test_dead_and_stalled();
	poll_us = 50;
}

/* ------------------------------------------------------------ authentication */

/* A secret file in the test's directory; its path. */
static const char *secret_file(const char *name, const char *text)
{
	static char paths[2][600];
	char *path = paths[name[0] == 'o'];
	FILE *f;

	snprintf(path, 600, "%s/%s", pc_test_tmpdir(), name);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fprintf(f, "%s\n", text);
	fclose(f);
	chmod(path, 0600);
	return path;
}

/* The suites' batches, RPCs (with pulls from the authenticated caller), restarts
 * and wrong nodes, every node holding the secret. */
static void test_auth_net(void)
{
	snprintf(net_extra, sizeof(net_extra), ", auth_secret_file: \"%s\"",
		 secret_file("secret", "the fabric test's cluster secret"));
	test_batch();
	test_rpc();
	test_rpc_pulls();
	test_restart();
	test_wrong_node();
	net_extra[0] = 0;
}

/* A fabric (client or node n2) without the secret, or with another one, reaches no
 * one: every op and RPC fails with -EACCES, and the servers count the refusals. */
static void test_auth_refused(void)
{
	const char *other = secret_file("other", "some other cluster's secret");
	struct net *N;
	struct pc_fabric_stats st;
	char err[PC_ERR_MAX], set[700];
	const char *sets[2] = { "store.auth_secret_file=", set };

	snprintf(net_extra, sizeof(net_extra), ", auth_secret_file: \"%s\"",
		 secret_file("secret", "the fabric test's cluster secret"));
	snprintf(set, sizeof(set), "store.auth_secret_file=%s", other);
	N = net_up(0);
	for (int k = 0; k < 2; k++) {
		struct pc_topology *t = pc_topology_dup(N->topo);
		struct pc_fabric_params p = { .size = sizeof(p), .topo = t, .self = k ? 2 : PC_PEER_NONE };
		struct pc_fabric *f;
		uint8_t rd[16];
		struct pc_op op = { .kind = PC_OP_READ, .peer = 1, .rkey = N->r[1].key,
				    .raddr = at(N, 1, 0), .local = rd, .len = 16 };
		struct pc_rpc r = { .peer = 0, .opcode = 7, .req = "hi", .req_len = 2 };

		CU_ASSERT_EQUAL_FATAL(pc_topology_set(t, sets[k], err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(pc_fabric_open(fabric_name, &p, &f), 0);
		CU_ASSERT_EQUAL(pc_fabric_post(f, &op, 1), 0);
		CU_ASSERT_EQUAL(op.status, -EACCES);
		CU_ASSERT_EQUAL(pc_fabric_call(f, &r, 1), 0);
		CU_ASSERT_EQUAL(r.status, -EACCES);
		printf("\n  %s: READ %s, RPC %s", k ? "node c with another secret" : "a client without one",
		       strerror(-op.status), strerror(-r.status));
		pc_fabric_close(f);
		pc_topology_free(t);
	}
	usleep(200000);	/* the servers see the last connection go */
	for (uint32_t i = 0; i < 2 && is_tcp(); i++) {	/* verbs: its control fabric counts */
		pc_fabric_get_stats(N->f[i], &st);
		CU_ASSERT(st.auth_refused >= 2);
	}
	net_down(N);
	net_extra[0] = 0;
	printf("\n");
}

/* The MACs: each side's depends on every field of the transcript and on the key,
 * and one direction's never passes for the other's. */
static void test_auth_macs(void)
{
	struct net *N = net_up(0);
	char err[PC_ERR_MAX];
	struct pc_topology *t = pc_topology_dup(N->topo);
	struct tcp_auth a, b;
	struct tcp_hello h = { .node = 1, .expect_node = 0, .incarnation = 5, .fingerprint = 9 };
	struct tcp_hello_ack k = { .node = 0, .incarnation = 6, .fingerprint = 9 };
	uint8_t mac[TCP_MAC_BYTES], cmac[TCP_MAC_BYTES];
	char set[700];

	snprintf(set, sizeof(set), "store.auth_secret_file=%s",
		 secret_file("secret", "the fabric test's cluster secret"));
	CU_ASSERT_EQUAL_FATAL(pc_topology_set(t, set, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(tcp_auth_load(t, &a, err, sizeof(err)), 0);
	snprintf(set, sizeof(set), "store.auth_secret_file=%s", secret_file("other", "another one, long enough"));
	CU_ASSERT_EQUAL_FATAL(pc_topology_set(t, set, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL_FATAL(tcp_auth_load(t, &b, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(tcp_auth_nonce(h.nonce, sizeof(h.nonce)), 0);
	CU_ASSERT_EQUAL(tcp_auth_nonce(k.nonce, sizeof(k.nonce)), 0);
	tcp_auth_mac(&a, TCP_AUTH_SERVER, &h, &k, mac);
	tcp_auth_mac(&a, TCP_AUTH_CLIENT, &h, &k, cmac);
	CU_ASSERT_TRUE(tcp_auth_check(&a, TCP_AUTH_SERVER, &h, &k, mac));
	CU_ASSERT_TRUE(tcp_auth_check(&a, TCP_AUTH_CLIENT, &h, &k, cmac));
	CU_ASSERT_FALSE(tcp_auth_check(&a, TCP_AUTH_CLIENT, &h, &k, mac));	/* reflected */
	CU_ASSERT_FALSE(tcp_auth_check(&b, TCP_AUTH_SERVER, &h, &k, mac));	/* another key */
	for (int f = 0; f < 9; f++) {
		struct tcp_hello h2 = h;
		struct tcp_hello_ack k2 = k;

		switch (f) {
		case 0: h2.node = 2; break;
		case 1: h2.node = PC_PEER_NONE; break;
		case 2: h2.expect_node = 1; break;
		case 3: h2.incarnation++; break;
		case 4: h2.fingerprint++; break;
		case 5: h2.nonce[31] ^= 1; break;
		case 6: k2.incarnation++; break;
		case 7: k2.nonce[0] ^= 0x80; break;
		default: k2.node = 2; break;
		}
		CU_ASSERT_FALSE(tcp_auth_check(&a, TCP_AUTH_CLIENT, &h2, &k2, cmac));
		CU_ASSERT_FALSE(tcp_auth_check(&a, TCP_AUTH_SERVER, &h2, &k2, mac));
	}
	mac[7] ^= 4;
	CU_ASSERT_FALSE(tcp_auth_check(&a, TCP_AUTH_SERVER, &h, &k, mac));
	/* a short secret is refused with a line saying how to make one */
	snprintf(set, sizeof(set), "store.auth_secret_file=%s", secret_file("other", "short"));
	CU_ASSERT_EQUAL_FATAL(pc_topology_set(t, set, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(tcp_auth_load(t, &b, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "head -c 32 /dev/urandom"));
	printf("\n  %s\n", err);
	tcp_auth_clear(&a);
	tcp_auth_clear(&b);
	pc_topology_free(t);
	net_down(N);
}

/* A secret of the longest length the message names, written with a newline as echo
 * and base64 write it, is taken; one a byte longer is refused. */
static void test_auth_longest_secret(void)
{
	static char text[TCP_SECRET_MAX + 1];
	struct pc_topology *t;
	struct tcp_auth a;
	char set[700], err[PC_ERR_MAX];
	const char *yaml = "nodes:\n  - {name: x, address: 127.0.0.1}\n";

	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(yaml, strlen(yaml), "secret", &t, err, sizeof(err)), 0);
	memset(text, 'k', TCP_SECRET_MAX - 1);
	snprintf(set, sizeof(set), "store.auth_secret_file=%s", secret_file("other", text));
	CU_ASSERT_EQUAL_FATAL(pc_topology_set(t, set, err, sizeof(err)), 0);
	err[0] = 0;
	CU_ASSERT_EQUAL(tcp_auth_load(t, &a, err, sizeof(err)), 0);
	CU_ASSERT_TRUE(a.on);
	if (err[0])
		printf("\n  %s", err);
	tcp_auth_clear(&a);
	text[TCP_SECRET_MAX - 1] = 'k';
	secret_file("other", text);
	CU_ASSERT_EQUAL(tcp_auth_load(t, &a, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, ": 4096 bytes;"));
	printf("\n  %s\n", err);
	pc_topology_free(t);
}

/* AUTH is taken only right after HELLO on a server that waits for it, and then
 * nothing else is; an RPC larger than its opcode takes is refused on its header. */
static size_t op7_max(void *arg, uint16_t op)
{
	(void)arg;
	return op == 7 ? 100 : 0;
}

static void test_parse_auth_and_sizes(void)
{
	const struct tcp_frame_ctx waiting = { .hello = true, .auth_pending = true, .nr_nodes = NODES };
	const struct tcp_frame_ctx sized = { .hello = true, .nr_nodes = NODES, .rpc_max = op7_max };
	struct tcp_hdr h = { .magic = TCP_MAGIC, .version = TCP_VERSION, .type = TCP_AUTH,
			     .body_len = TCP_MAC_BYTES };
	uint8_t buf[128] = { 0 };
	struct tcp_frame fr;
	size_t at;

	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(feed(&waiting, buf, sizeof(h) + TCP_MAC_BYTES, &fr, &at), 64);
	CU_ASSERT_EQUAL(tcp_frame_parse(&after_hello, buf, 64, &fr), -EPROTO);	/* not waiting */
	h.type = TCP_RPC;
	h.count = 7;
	h.body_len = 0;
	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(tcp_frame_parse(&waiting, buf, 32, &fr), -EPROTO);
	CU_ASSERT_PTR_NOT_NULL(strstr(fr.why, "before AUTH"));
	h.body_len = 100;
	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(tcp_frame_parse(&sized, buf, 32, &fr), 0);
	h.body_len = 101;
	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(tcp_frame_parse(&sized, buf, 32, &fr), -EMSGSIZE);
	h.count = 8;
	h.body_len = 1;
	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(tcp_frame_parse(&sized, buf, 32, &fr), -EMSGSIZE);
}

static CU_TestInfo tests[] = {
	{ "one batch across peers: READ, WRITE, CAS", test_batch },
	{ "RPC: body, handler error, empty body", test_rpc },
	{ "an RPC handler pulls from its caller", test_rpc_pulls },
	{ "quick RPCs on the event thread, the rest on workers", test_rpc_quick },
	{ "one-sided ops are served while a handler runs", test_rpc_does_not_block_ops },
	{ "refused ops, then served again", test_refusals_keep_connection },
	{ "one caller's waiting handlers leave workers for the others", test_rpc_workers_shared },
	{ "clients' waiting handlers leave workers for the nodes", test_rpc_workers_shared_clients },
	{ "dead and stalled peers fail within the timeout", test_dead_and_stalled },
	{ "a stalled peer mid-batch fails only its ops", test_stalled_mid_batch },
	{ "restart: stale addresses refused, the peer used again", test_restart },
	{ "a different node at the address", test_wrong_node },
	{ "64 x 256 KiB in one post", test_large },
	{ "WRITEs of 7 MiB in one post", test_large_writes },
	{ "landed() once per READ that asks, its bytes in", test_landed },
	{ "prepare() once per WRITE that asks, before its bytes go", test_prepare },
	{ "without polling (tcp_poll_us: 0)", test_no_polling },
	CU_TEST_INFO_NULL,
};

static char bind_log[4096];

static void bind_sink(void *arg, enum pc_log_level level, const char *line)
{
	(void)arg;
	if (level <= PC_LOG_WARN && strlen(bind_log) + strlen(line) + 2 < sizeof(bind_log)) {
		strcat(bind_log, line);
		strcat(bind_log, "\n");
	}
}

/* Can a connection to host:port be made? */
static bool reachable(const char *host, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok;

	inet_pton(AF_INET, host, &sa.sin_addr);
	ok = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return ok;
}

/* bind_address: node b listens on every interface (127.0.0.2 reaches it) while peers
 * dial its address; without a secret it says so in one line. Node a, on loopback,
 * says nothing. */
static void test_bind_address(void)
{
	struct net *N;
	uint8_t rd[8];
	struct pc_op op = { .kind = PC_OP_READ, .peer = 1, .local = rd, .len = 8 };

	bind_log[0] = 0;
	pc_log_set_sink(bind_sink, NULL);
	b_extra = ", bind_address: 0.0.0.0";
	N = net_up(0);
	b_extra = "";
	pc_log_set_sink(NULL, NULL);
	op.rkey = N->r[1].key;
	op.raddr = at(N, 1, 0);
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	CU_ASSERT_EQUAL(op.status, 0);
	CU_ASSERT_TRUE(reachable("127.0.0.2", (uint16_t)(N->port0 + 1)));
	CU_ASSERT_FALSE(reachable("127.0.0.2", N->port0));
	printf("\n  %s", bind_log);
	CU_ASSERT_PTR_NOT_NULL(strstr(bind_log, "tcp server b: listening on 0.0.0.0 port"));
	CU_ASSERT_PTR_NOT_NULL(strstr(bind_log, "without a cluster secret"));
	CU_ASSERT_PTR_NULL(strstr(bind_log, "tcp server a:"));
	net_down(N);
}

/* A connection a node accepts has the fixed receive buffer (the kernel reports
 * twice what was set, capped at net.core.rmem_max), not autotuning's first one. */
static void test_accepted_rcvbuf(void)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa), gl = sizeof(int);
	FILE *f = fopen("/proc/sys/net/core/rmem_max", "r");
	long max = 0;
	int lfd, c, a, got = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(fscanf(f, "%ld", &max), 1);
	fclose(f);
	CU_ASSERT_EQUAL_FATAL(tcp_listen("127.0.0.1", 0, "", &lfd), 0);
	CU_ASSERT_EQUAL_FATAL(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_EQUAL_FATAL(connect(c, (struct sockaddr *)&sa, sl), 0);
	a = -1;
	for (int i = 0; i < 100 && a < 0; i++) {
		a = accept(lfd, NULL, NULL);
		if (a < 0)
			usleep(1000);
	}
	CU_ASSERT_FATAL(a >= 0);
	CU_ASSERT_EQUAL(getsockopt(a, SOL_SOCKET, SO_RCVBUF, &got, &gl), 0);
	CU_ASSERT_EQUAL(got, 2 * (max < TCP_RCVBUF_BYTES ? max : TCP_RCVBUF_BYTES));
	close(a);
	close(c);
	close(lfd);
}

/* A listener standing in for a node: it takes the caller's HELLOs, keeps their
 * nonces and answers none (the caller gives the op up). */
struct hello_taker {
	int lfd;
	int seen;
	uint8_t nonce[2][TCP_NONCE_BYTES];
};

static bool read_all(int fd, void *buf, size_t n)
{
	for (size_t got = 0; got < n;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, 3000) <= 0)
			return false;
		r = recv(fd, (uint8_t *)buf + got, n - got, 0);
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

static void *take_hellos(void *arg)
{
	struct hello_taker *h = arg;
	uint64_t end = now_ms() + 5000;

	while (__atomic_load_n(&h->seen, __ATOMIC_RELAXED) < 2 && now_ms() < end) {
		struct pollfd p = { .fd = h->lfd, .events = POLLIN };
		struct tcp_hdr hdr;
		struct tcp_hello hello;
		int c;

		if (poll(&p, 1, 100) <= 0 || (c = accept(h->lfd, NULL, NULL)) < 0)
			continue;
		if (read_all(c, &hdr, sizeof(hdr)) && hdr.type == TCP_HELLO &&
		    read_all(c, &hello, sizeof(hello)))
			memcpy(h->nonce[h->seen], hello.nonce, TCP_NONCE_BYTES),
			__atomic_store_n(&h->seen, h->seen + 1, __ATOMIC_RELEASE);
		close(c);
	}
	return NULL;
}

/* The caller's HELLO carries a fresh nonce on every connection: the node's MAC covers
 * it (test_auth_macs), so a HELLO_ACK recorded from one connection cannot answer
 * another and let a process without the secret pose as the node. */
static void test_hello_nonce_fresh(void)
{
	struct hello_taker h = { .seen = 0 };
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	struct pc_topology *t;
	struct pc_fabric *f;
	struct pc_fabric_params p = { .size = sizeof(p), .self = PC_PEER_NONE };
	char text[1024], err[PC_ERR_MAX];
	static const uint8_t zero[TCP_NONCE_BYTES];
	uint64_t end;
	pthread_t th;

	CU_ASSERT_EQUAL_FATAL(tcp_listen("127.0.0.1", 0, "", &h.lfd), 0);
	CU_ASSERT_EQUAL_FATAL(getsockname(h.lfd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(text, sizeof(text),
		 "store: {timeout_ms: 300, peer_backoff_ms: 10, auth_secret_file: \"%s\"}\nnodes:\n"
		 "  - {name: a, address: 127.0.0.1, port: %u}\n",
		 secret_file("secret", "the fabric test's cluster secret"), ntohs(sa.sin_port));
	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "nonce", &t, err, sizeof(err)), 0);
	p.topo = t;
	CU_ASSERT_EQUAL_FATAL(pc_fabric_open("tcp", &p, &f), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, take_hellos, &h), 0);
	end = now_ms() + 4000;
	while (__atomic_load_n(&h.seen, __ATOMIC_ACQUIRE) < 2 && now_ms() < end) {
		struct pc_rpc r = { .peer = 0, .opcode = 7, .req = "hi", .req_len = 2 };

		pc_fabric_call(f, &r, 1);
		CU_ASSERT(r.status < 0);	/* nothing answers */
		usleep(20000);
	}
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(h.seen, 2);
	CU_ASSERT(memcmp(h.nonce[0], zero, sizeof(zero)) != 0);
	CU_ASSERT(memcmp(h.nonce[0], h.nonce[1], sizeof(zero)) != 0);
	pc_fabric_close(f);
	pc_topology_free(t);
	close(h.lfd);
}

/* The congestion control of every TCP socket this process holds (the test's nodes
 * are all in it: listeners, connections made and accepted): how many are TCP, and
 * how many use cc. */
static void count_congestion(const char *cc, int *tcp, int *with)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	*tcp = *with = 0;
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name), proto = 0;
		socklen_t pl = sizeof(proto), cl;
		char got[16] = "";
		struct stat st;

		if (e->d_name[0] == '.' || fd == dirfd(d) || fstat(fd, &st) || !S_ISSOCK(st.st_mode) ||
		    getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &pl) || proto != IPPROTO_TCP)
			continue;
		(*tcp)++;
		cl = sizeof(got) - 1;
		if (!getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, got, &cl) && !strcmp(got, cc))
			(*with)++;
	}
	closedir(d);
}

/* store.tcp_congestion: every socket of the nodes, the listeners, the connections
 * they make and those they accept, runs it; a name the kernel does not know fails
 * the fabric's open with the key in the message. */
static void test_congestion(void)
{
	struct net *N;
	uint8_t rd[8];
	struct pc_op op = { .kind = PC_OP_READ, .peer = 1, .local = rd, .len = 8 };
	struct pc_fabric_params p = { .size = sizeof(p), .self = 0 };
	struct pc_topology *t;
	struct pc_fabric *f = NULL;
	char err[PC_ERR_MAX];
	const char *bad = "store: {tcp_congestion: nosuchcc}\nnodes:\n"
			  "  - {name: a, address: 127.0.0.1, port: 1}\n";
	int tcp = 0, with = 0;

	snprintf(net_extra, sizeof(net_extra), ", tcp_congestion: reno");
	N = net_up(0);
	net_extra[0] = 0;
	op.rkey = N->r[1].key;
	op.raddr = at(N, 1, 0);
	CU_ASSERT_EQUAL(pc_fabric_post(N->f[0], &op, 1), 0);
	CU_ASSERT_EQUAL(op.status, 0);
	count_congestion("reno", &tcp, &with);
	printf("\n  %d TCP sockets, %d of them reno", tcp, with);
	CU_ASSERT(tcp >= 4);	/* two listeners, a's connection to b, b's end of it */
	CU_ASSERT_EQUAL(with, tcp);
	net_down(N);
	/* which of them pace (tcp_sock.c slices a pacing sender's bulk receives) */
	for (int k = 0; k < 2; k++) {
		const char *cc = k ? "bbr" : "reno";
		int s = socket(AF_INET, SOCK_STREAM, 0);

		CU_ASSERT_FATAL(s >= 0);
		if (!tcp_congestion_check(cc, err, sizeof(err))) {
			CU_ASSERT_EQUAL(tcp_set_congestion(s, cc), 0);
			CU_ASSERT_EQUAL(tcp_paces(s), k == 1);
		}
		close(s);
	}

	CU_ASSERT_EQUAL(tcp_congestion_check("nosuchcc", err, sizeof(err)), -ENOENT);
	printf("\n  %s", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "store.tcp_congestion: 'nosuchcc'"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "this kernel offers"));
	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(bad, strlen(bad), "bad", &t, err, sizeof(err)), 0);
	p.topo = t;
	CU_ASSERT_EQUAL(pc_fabric_open(fabric_name, &p, &f), -ENOENT);
	CU_ASSERT_PTR_NULL(f);
	pc_topology_free(t);
}

static CU_TestInfo auth_tests[] = {
	{ "every node with the secret: batches, RPCs, pulls, restarts", test_auth_net },
	{ "no secret, another secret: refused", test_auth_refused },
	{ "the handshake MACs bind every field", test_auth_macs },
	{ "a secret of 4095 bytes and a newline", test_auth_longest_secret },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo wire_tests[] = {
	{ "every malformed frame closes its connection only", test_bad_frames },
	{ "a truncated frame", test_truncated },
	{ "a region deregistered in the middle of a WRITE", test_dereg_mid_write },
	{ "bind_address 0.0.0.0, address 127.0.0.1", test_bind_address },
	{ "accepted connections take the fixed receive buffer", test_accepted_rcvbuf },
	{ "every HELLO carries a fresh nonce", test_hello_nonce_fresh },
	{ "store.tcp_congestion on every socket; an unknown one refused", test_congestion },
	CU_TEST_INFO_NULL,
};

static CU_TestInfo parser_tests[] = {
	{ "valid frames, fed byte by byte", test_parse_valid },
	{ "malformed frames refused at their first bad byte", test_parse_malformed },
	{ "frames at the size limits", test_parse_limits },
	{ "mutated and cut frames", test_parse_mutated },
	{ "AUTH after HELLO only, RPCs within their opcode's size", test_parse_auth_and_sizes },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	CU_SuiteInfo suites[] = {
		{ "fabric on loopback", NULL, NULL, NULL, NULL, tests },
		{ "authenticated peers", NULL, NULL, NULL, NULL, auth_tests },
		{ "tcp wire format", NULL, NULL, NULL, NULL, wire_tests },
		{ "tcp frame parser, on buffers", NULL, NULL, NULL, NULL, parser_tests },
		CU_SUITE_INFO_NULL,
	};

	if (argc > 1)
		fabric_name = argv[1];
	printf("fabric under test: %s\n", fabric_name);
	if (!is_tcp())
		suites[2] = (CU_SuiteInfo)CU_SUITE_INFO_NULL;
	return pc_test_main(argc, argv, suites);
}
