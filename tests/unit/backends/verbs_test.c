/*
 * verbs_test.c - the verbs fabric on two RDMA rails (two Soft-RoCE devices on two
 * netdevs in the VM ci/rxe-vm.sh boots; two NIC ports on a RoCE host): batches
 * striped over both rails, counted per rail by the fabric and by the devices; a
 * rail taken down mid-run and brought back; pages in registered memory moved
 * without a bounce copy; a QP forced into the error state at either end and a peer
 * that vanished (clean errors within the timeout, the connection rebuilt on the
 * next post, the counters saying so); the QP settings of the topology on the QPs;
 * CONNECT requests that name another node refused.
 *
 * Usage: verbs_test FABRIC DEV0 DEV1 NETDEV1 (e.g. rxe rxe1 rxe2 pc1): rail 0 is
 * DEV0, rail 1 DEV1, and NETDEV1 (DEV1's netdev) is the one taken down; root. Run
 * under ASan as verbs_leak_test, LeakSanitizer fails it for any verbs object (MR,
 * QP, CQ, PD, context) not released by close or by an error path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <peercache/pc_fabric.h>
#include <peercache/peercache.h>

#include "config/topology.h"
#include "testutil.h"
#include "verbs/verbs.h"
#include "verbs/verbs_wire.h"

#define MEM (8u << 20)
#define PAGE 16384u
#define BATCH 64u

static const char *fabric = "rxe", *dev0 = "rxe1", *dev1 = "rxe2", *netdev1 = "pc1";

struct duo {
	struct pc_topology *topo;
	struct pc_fabric *f[3];
	struct pc_region r[3];
	uint8_t *mem[3];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int serve_nothing(void *arg, uint32_t from, uint16_t opcode, const void *req, size_t len,
			 struct pc_msg *resp)
{
	(void)arg, (void)from, (void)opcode, (void)req, (void)len, (void)resp;
	return -EOPNOTSUPP;
}

static int node_up(struct duo *D, uint32_t i)
{
	struct pc_fabric_params p = { .size = sizeof(p), .topo = D->topo, .self = i };
	int ret = pc_fabric_open(fabric, &p, &D->f[i]);

	if (ret)
		return ret;
	D->r[i] = (struct pc_region){ .addr = D->mem[i], .len = MEM,
				      .access = PC_ACCESS_REMOTE_READ | PC_ACCESS_REMOTE_WRITE |
						PC_ACCESS_REMOTE_ATOMIC };
	ret = pc_fabric_reg(D->f[i], &D->r[i]);
	if (!ret)
		ret = pc_fabric_serve(D->f[i], serve_nothing, NULL);
	if (ret) {
		pc_fabric_close(D->f[i]);
		D->f[i] = NULL;
	}
	return ret;
}

static void node_down(struct duo *D, uint32_t i)
{
	if (!D->f[i])
		return;
	pc_fabric_serve(D->f[i], NULL, NULL);
	pc_fabric_dereg(D->f[i], &D->r[i]);
	pc_fabric_close(D->f[i]);
	D->f[i] = NULL;
}

/* Nodes a and b (and c, down) on 127.0.0.1, two rails each; store is more of the
 * store section. Node i's memory holds byte pattern i + 1 + offset. */
static struct duo *duo_up(const char *store)
{
	struct duo *D = calloc(1, sizeof(*D));
	char text[2048], err[PC_ERR_MAX];

	CU_ASSERT_PTR_NOT_NULL_FATAL(D);
	for (uint32_t i = 0; i < 3; i++) {
		D->mem[i] = aligned_alloc(4096, MEM);
		for (size_t k = 0; k < MEM; k++)
			D->mem[i][k] = (uint8_t)(i + 1 + k * 7);
	}
	for (int attempt = 0; attempt < 20; attempt++) {
		uint16_t port = pc_test_port_base(attempt);
		int ret = 0;

		snprintf(text, sizeof(text),
			 "store: {protocol: %s, fallback: none, timeout_ms: 2000, peer_backoff_ms: 100%s}\n"
			 "node_defaults: {address: 127.0.0.1, rails: [{device: %s}, {device: %s}]}\n"
			 "nodes:\n  - {name: a, port: %u}\n  - {name: b, port: %u}\n"
			 "  - {name: c, port: %u}\n",
			 fabric, store, dev0, dev1, port, port + 1, port + 2);
		CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "duo", &D->topo, err,
							sizeof(err)), 0);
		for (uint32_t i = 0; i < 2 && !ret; i++)
			ret = node_up(D, i);
		if (!ret)
			return D;
		for (uint32_t i = 0; i < 2; i++)
			node_down(D, i);
		pc_topology_free(D->topo);
	}
	CU_FAIL_FATAL("cannot bring up two verbs nodes");
	return NULL;
}

static void duo_down(struct duo *D)
{
	for (uint32_t i = 0; i < 3; i++) {
		node_down(D, i);
		free(D->mem[i]);
	}
	pc_topology_free(D->topo);
	free(D);
}

static struct verbs_fabric *vf_of(struct duo *D, uint32_t i)
{
	return to_verbs(D->f[i]);
}

/* A batch from a to b: READs of b's pages into buf (lreg: the region holding buf,
 * or NULL), checked against b's memory. Returns ops that failed; *wrong counts
 * successful ones whose bytes differ. */
static unsigned read_batch(struct duo *D, uint8_t *buf, const struct pc_region *lreg,
			   uint32_t first, unsigned *wrong)
{
	struct pc_op ops[BATCH];
	unsigned failed = 0;

	for (uint32_t k = 0; k < BATCH; k++) {
		size_t off = (size_t)((first + k) % (MEM / PAGE)) * PAGE;

		ops[k] = (struct pc_op){ .kind = PC_OP_READ, .peer = 1, .rkey = D->r[1].key,
					 .raddr = (uint64_t)(uintptr_t)D->mem[1] + off,
					 .local = buf + (size_t)k * PAGE, .len = PAGE, .lreg = lreg };
	}
	memset(buf, 0, (size_t)BATCH * PAGE);
	CU_ASSERT_EQUAL(pc_fabric_post(D->f[0], ops, BATCH), 0);
	for (uint32_t k = 0; k < BATCH; k++) {
		if (ops[k].status)
			failed++;
		else if (memcmp(ops[k].local, D->mem[1] + (ops[k].raddr - (uintptr_t)D->mem[1]), PAGE))
			(*wrong)++;
	}
	return failed;
}

static struct pc_fabric_stats stats(struct duo *D, uint32_t i)
{
	struct pc_fabric_stats s;

	pc_fabric_get_stats(D->f[i], &s);
	return s;
}

/* A device's packet counter (rxe: ports/1/hw_counters/sent_pkts), or -1. */
static long long dev_sent(const char *dev)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/sent_pkts", dev);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static bool within_2x(double x, double y)
{
	return x > 0 && y > 0 && x <= 2 * y && y <= 2 * x;
}

static void test_rails_spread(void)
{
	struct duo *D = duo_up("");
	uint8_t *buf = aligned_alloc(4096, (size_t)BATCH * PAGE);
	long long p0 = dev_sent(dev0), p1 = dev_sent(dev1);
	struct pc_fabric_stats s;
	unsigned failed = 0, wrong = 0;
	struct pc_op w[BATCH];

	CU_ASSERT_EQUAL(vf_of(D, 0)->nr_rails, 2);
	for (uint32_t b = 0; b < 8; b++)
		failed += read_batch(D, buf, NULL, b * BATCH, &wrong);
	for (uint32_t k = 0; k < BATCH; k++)
		w[k] = (struct pc_op){ .kind = PC_OP_WRITE, .peer = 1, .rkey = D->r[1].key,
				       .raddr = (uint64_t)(uintptr_t)D->mem[1] + (size_t)k * PAGE,
				       .local = buf + (size_t)k * PAGE, .len = PAGE };
	CU_ASSERT_EQUAL(pc_fabric_post(D->f[0], w, BATCH), 0);
	for (uint32_t k = 0; k < BATCH; k++)
		CU_ASSERT_EQUAL(w[k].status, 0);
	CU_ASSERT_EQUAL(memcmp(D->mem[1], buf, (size_t)BATCH * PAGE), 0);
	s = stats(D, 0);
	printf("\n  9 batches of %u x %u B: rail 0 moved %llu B, rail 1 %llu B; %s sent %lld packets, %s %lld\n",
	       BATCH, PAGE, (unsigned long long)s.rail_bytes[0], (unsigned long long)s.rail_bytes[1],
	       dev0, dev_sent(dev0) - p0, dev1, dev_sent(dev1) - p1);
	CU_ASSERT_EQUAL(failed, 0);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT(within_2x((double)s.rail_bytes[0], (double)s.rail_bytes[1]));
	CU_ASSERT_EQUAL(s.rail_bytes[0] + s.rail_bytes[1], 9ull * BATCH * PAGE);
	CU_ASSERT(p0 >= 0 && p1 >= 0);	/* the device counters exist */
	CU_ASSERT(within_2x((double)(dev_sent(dev0) - p0), (double)(dev_sent(dev1) - p1)));
	free(buf);
	duo_down(D);
}

static void link_set(const char *dev, const char *state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip link set %s %s", dev, state);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

/* Batches until rail 1's counter stops (want_moving false) or grows again (true)
 * over a whole batch; returns the ms it took, or -1 after limit_ms. */
static long rail1_until(struct duo *D, uint8_t *buf, bool want_moving, long limit_ms,
			unsigned *failed, unsigned *wrong, uint32_t *batches)
{
	uint64_t t0 = now_ms();

	while ((long)(now_ms() - t0) <= limit_ms) {
		uint64_t before = stats(D, 0).rail_bytes[1];
		unsigned f = read_batch(D, buf, NULL, (*batches)++ * BATCH, wrong);
		bool moved = stats(D, 0).rail_bytes[1] != before;

		*failed += f;
		if (moved == want_moving && !f)
			return (long)(now_ms() - t0);
	}
	return -1;
}

static void test_rail_down_and_back(void)
{
	struct duo *D = duo_up("");
	uint8_t *buf = aligned_alloc(4096, (size_t)BATCH * PAGE);
	unsigned failed = 0, wrong = 0, failed_down = 0;
	uint32_t batches = 0;
	struct pc_fabric_stats s0, s1;
	long moved_off, back;

	CU_ASSERT(rail1_until(D, buf, true, 2000, &failed, &wrong, &batches) >= 0);
	CU_ASSERT_EQUAL(failed, 0);
	s0 = stats(D, 0);
	link_set(netdev1, "down");
	moved_off = rail1_until(D, buf, false, (long)D->topo->store.timeout_ms, &failed_down,
				&wrong, &batches);
	/* on rail 0 alone for a while: every batch whole */
	for (int i = 0; i < 10; i++)
		failed += read_batch(D, buf, NULL, batches++ * BATCH, &wrong);
	s1 = stats(D, 0);
	link_set(netdev1, "up");
	back = rail1_until(D, buf, true, 10000, &failed, &wrong, &batches);
	printf("\n  %s down: off rail 1 after %ld ms (%u ops failed cleanly meanwhile); rail 1 used again %ld ms after it came back; %u batches, %u wrong; %llu rail changes seen\n",
	       netdev1, moved_off, failed_down, back, batches, wrong,
	       (unsigned long long)stats(D, 0).rail_changes);
	CU_ASSERT(moved_off >= 0);
	CU_ASSERT(back >= 0);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(failed, 0);
	CU_ASSERT(s1.rail_bytes[0] > s0.rail_bytes[0]);
	CU_ASSERT(stats(D, 0).rail_changes >= 2);
	free(buf);
	duo_down(D);
}

/* Registered memory goes to and from the NIC as it is; other buffers are staged. */
static void test_zero_copy(void)
{
	struct duo *D = duo_up("");
	uint8_t *buf = aligned_alloc(4096, (size_t)BATCH * PAGE);
	struct pc_region lr = { .addr = buf, .len = (size_t)BATCH * PAGE, .access = 0 };
	unsigned wrong = 0, failed;
	struct pc_fabric_stats s0, s1, s2;
	struct pc_op w = { .kind = PC_OP_WRITE, .peer = 1, .rkey = D->r[1].key,
			   .raddr = (uint64_t)(uintptr_t)D->mem[1], .local = buf, .len = PAGE,
			   .lreg = &lr };

	CU_ASSERT_EQUAL_FATAL(pc_fabric_reg(D->f[0], &lr), 0);
	failed = read_batch(D, buf, &lr, 0, &wrong);
	CU_ASSERT_EQUAL(pc_fabric_post(D->f[0], &w, 1), 0);
	CU_ASSERT_EQUAL(w.status, 0);
	s0 = stats(D, 0);
	failed += read_batch(D, buf, &lr, BATCH, &wrong);
	CU_ASSERT_EQUAL(pc_fabric_post(D->f[0], &w, 1), 0);
	s1 = stats(D, 0);
	failed += read_batch(D, buf, NULL, 0, &wrong);
	w.lreg = NULL;
	CU_ASSERT_EQUAL(pc_fabric_post(D->f[0], &w, 1), 0);
	s2 = stats(D, 0);
	printf("\n  registered: %llu bounce copies for %u ops; unregistered: %llu copies, %llu B\n",
	       (unsigned long long)(s1.bounce_copies - s0.bounce_copies), BATCH + 1,
	       (unsigned long long)(s2.bounce_copies - s1.bounce_copies),
	       (unsigned long long)(s2.bounce_bytes - s1.bounce_bytes));
	CU_ASSERT_EQUAL(failed, 0);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(s0.bounce_copies, 0);
	CU_ASSERT_EQUAL(s1.bounce_copies, 0);
	CU_ASSERT_EQUAL(s2.bounce_copies - s1.bounce_copies, BATCH + 1);
	CU_ASSERT_EQUAL(s2.bounce_bytes - s1.bounce_bytes, (uint64_t)(BATCH + 1) * PAGE);
	pc_fabric_dereg(D->f[0], &lr);
	free(buf);
	duo_down(D);
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	return ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) ? -1 : (int)a.qp_state;
}

static void to_error(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	CU_ASSERT_EQUAL(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	CU_ASSERT_EQUAL(qp_state(qp), IBV_QPS_ERR);
}

/* Reads after a fault: the first batch's failures, all clean, within the timeout;
 * the next batch whole over a new connection. */
static void after_fault(struct duo *D, uint8_t *buf, const char *what, uint64_t qp_timeouts_min)
{
	struct pc_fabric_stats s0 = stats(D, 0), s1;
	unsigned wrong = 0, failed, again;
	uint64_t t0 = now_ms(), ms;

	failed = read_batch(D, buf, NULL, 0, &wrong);
	ms = now_ms() - t0;
	/* the store's wrappers skip a peer that just failed for peer_backoff_ms */
	usleep((D->topo->store.peer_backoff_ms + 100) * 1000);
	again = read_batch(D, buf, NULL, BATCH, &wrong);
	s1 = stats(D, 0);
	printf("\n  %s: %u of %u ops failed in %llu ms; then %u failed; qp errors +%llu, retries exceeded +%llu, connects +%llu\n",
	       what, failed, BATCH, (unsigned long long)ms, again,
	       (unsigned long long)(s1.qp_errors - s0.qp_errors),
	       (unsigned long long)(s1.qp_timeouts - s0.qp_timeouts),
	       (unsigned long long)(s1.reconnects - s0.reconnects));
	CU_ASSERT(failed > 0);
	CU_ASSERT(ms <= D->topo->store.timeout_ms + 500);
	CU_ASSERT_EQUAL(again, 0);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(s1.qp_errors - s0.qp_errors, 1);
	CU_ASSERT(s1.qp_timeouts - s0.qp_timeouts >= qp_timeouts_min);
	CU_ASSERT_EQUAL(s1.reconnects - s0.reconnects, 1);
}

/* Short retries, so that a peer's silence is seen well within the phase. */
#define FAST_RETRIES ", verbs_qp_timeout: 12, verbs_retry_cnt: 2"

static void test_qp_error_here(void)
{
	struct duo *D = duo_up(FAST_RETRIES);
	uint8_t *buf = aligned_alloc(4096, (size_t)BATCH * PAGE);
	unsigned wrong = 0;

	CU_ASSERT_EQUAL(read_batch(D, buf, NULL, 0, &wrong), 0);
	to_error(vf_of(D, 0)->conns[1].q[0].qp);
	after_fault(D, buf, "our QP on rail 0 forced to the error state", 0);
	free(buf);
	duo_down(D);
}

static void test_qp_error_there(void)
{
	struct duo *D = duo_up(FAST_RETRIES);
	uint8_t *buf = aligned_alloc(4096, (size_t)BATCH * PAGE);
	struct verbs_fabric *b = vf_of(D, 1);
	unsigned wrong = 0;

	CU_ASSERT_EQUAL(read_batch(D, buf, NULL, 0, &wrong), 0);
	pthread_mutex_lock(&b->acc_lock);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b->accepted);
	to_error(b->accepted->q[1].qp);	/* the peer's QP: ours retry until they give up */
	pthread_mutex_unlock(&b->acc_lock);
	after_fault(D, buf, "the peer's QP on rail 1 forced to the error state", 1);
	free(buf);
	duo_down(D);
}

/* The peer's process is gone while our QPs are connected to its QPs (its control
 * port too: the reconnect fails fast), then a new incarnation serves again. */
static void test_peer_gone(void)
{
	struct duo *D = duo_up(FAST_RETRIES);
	uint8_t *buf = aligned_alloc(4096, (size_t)BATCH * PAGE);
	struct pc_fabric_stats s0;
	unsigned wrong = 0, failed;
	uint64_t t0, ms, inc0 = D->f[1]->incarnation;
	struct pc_op op;

	CU_ASSERT_EQUAL(read_batch(D, buf, NULL, 0, &wrong), 0);
	s0 = stats(D, 0);
	node_down(D, 1);
	t0 = now_ms();
	failed = read_batch(D, buf, NULL, BATCH, &wrong);
	ms = now_ms() - t0;
	CU_ASSERT_EQUAL(failed, BATCH);
	CU_ASSERT(ms <= D->topo->store.timeout_ms + 500);
	CU_ASSERT(stats(D, 0).qp_errors > s0.qp_errors);
	CU_ASSERT(stats(D, 0).qp_timeouts > s0.qp_timeouts);
	CU_ASSERT_EQUAL_FATAL(node_up(D, 1), 0);
	op = (struct pc_op){ .kind = PC_OP_READ, .peer = 1, .peer_inc = inc0, .rkey = D->r[1].key,
			     .raddr = (uint64_t)(uintptr_t)D->mem[1], .local = buf, .len = 64 };
	for (int i = 0; i < 50; i++) {	/* past the connect backoff */
		CU_ASSERT_EQUAL(pc_fabric_post(D->f[0], &op, 1), 0);
		if (op.status == -ESTALE)
			break;
		usleep(20000);
	}
	printf("\n  peer closed: %u of %u ops failed in %llu ms; an address of its last incarnation: %s\n",
	       failed, BATCH, (unsigned long long)ms, strerror(-op.status));
	CU_ASSERT_EQUAL(op.status, -ESTALE);
	CU_ASSERT_EQUAL(read_batch(D, buf, NULL, 0, &wrong), 0);
	CU_ASSERT_EQUAL(wrong, 0);
	free(buf);
	duo_down(D);
}

/* The topology's QP keys on the QPs, and their defaults. */
static void test_qp_settings(void)
{
	struct duo *D = duo_up(", verbs_qp_timeout: 16, verbs_retry_cnt: 5, verbs_rnr_retry: 3, "
			       "verbs_traffic_class: 98, verbs_path_mtu: 1024");
	uint8_t *buf = aligned_alloc(4096, (size_t)BATCH * PAGE);
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct pc_topology *t;
	char v[32], err[PC_ERR_MAX];
	unsigned wrong = 0;
	static const char one[] = "nodes: [{name: x, address: 127.0.0.1}]\n";
	static const char *const defaults[][2] = {
		{ "store.verbs_qp_timeout", "14" }, { "store.verbs_retry_cnt", "7" },
		{ "store.verbs_rnr_retry", "7" }, { "store.verbs_traffic_class", "106" },
		{ "store.verbs_path_mtu", "auto" },
	};

	CU_ASSERT_EQUAL(read_batch(D, buf, NULL, 0, &wrong), 0);
	CU_ASSERT_EQUAL_FATAL(ibv_query_qp(vf_of(D, 0)->conns[1].q[1].qp, &a,
					   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						   IBV_QP_PATH_MTU | IBV_QP_AV, &ia), 0);
	printf("\n  QP: timeout %u, retry_cnt %u, rnr_retry %u, path_mtu %d, traffic class %u\n",
	       a.timeout, a.retry_cnt, a.rnr_retry, 128 << a.path_mtu, a.ah_attr.grh.traffic_class);
	CU_ASSERT_EQUAL(a.timeout, 16);
	CU_ASSERT_EQUAL(a.retry_cnt, 5);
	CU_ASSERT_EQUAL(a.rnr_retry, 3);
	CU_ASSERT_EQUAL(a.path_mtu, IBV_MTU_1024);
	CU_ASSERT_EQUAL(a.ah_attr.grh.traffic_class, 98);
	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(one, strlen(one), "d", &t, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		CU_ASSERT_EQUAL(pc_topology_get(t, defaults[i][0], v, sizeof(v), err, sizeof(err)), 0);
		CU_ASSERT_STRING_EQUAL(v, defaults[i][1]);
	}
	CU_ASSERT_NOT_EQUAL(pc_topology_set(t, "store.verbs_path_mtu=1500", err, sizeof(err)), 0);
	printf("  store.verbs_path_mtu=1500: %s\n", err);
	pc_topology_free(t);
	free(buf);
	duo_down(D);
}

/* A CONNECT over a's own control connection to b that names node c, or one from a
 * client naming a: b refuses both and keeps serving a's real connection. */
static void test_connect_identity(void)
{
	struct duo *D = duo_up("");
	uint8_t *buf = aligned_alloc(4096, (size_t)BATCH * PAGE);
	struct pc_fabric_params p = { .size = sizeof(p), .topo = D->topo, .self = PC_PEER_NONE };
	struct pc_fabric *cl;
	struct wire_req q = { .magic = CONNECT_MAGIC, .from = 2, .from_inc = 7, .nr_rails = 1 };
	struct pc_rpc r = { .peer = 1, .opcode = VERBS_RPC_CONNECT, .req = &q, .req_len = sizeof(q) };
	struct verbs_accepted *before;
	unsigned wrong = 0;

	CU_ASSERT_EQUAL(read_batch(D, buf, NULL, 0, &wrong), 0);
	before = vf_of(D, 1)->accepted;
	CU_ASSERT_EQUAL(pc_fabric_call(vf_of(D, 0)->ctl, &r, 1), 0);
	CU_ASSERT_EQUAL(r.status, -EPERM);
	pc_msg_free(&r.resp);
	CU_ASSERT_EQUAL_FATAL(pc_fabric_open(fabric, &p, &cl), 0);
	q.from = 0;
	r = (struct pc_rpc){ .peer = 1, .opcode = VERBS_RPC_CONNECT, .req = &q, .req_len = sizeof(q) };
	CU_ASSERT_EQUAL(pc_fabric_call(to_verbs(cl)->ctl, &r, 1), 0);
	CU_ASSERT_EQUAL(r.status, -EPERM);
	pc_msg_free(&r.resp);
	printf("\n  CONNECT naming node c from node a, naming node a from a client: %s\n",
	       strerror(-r.status));
	pc_fabric_close(cl);
	CU_ASSERT_PTR_EQUAL(vf_of(D, 1)->accepted, before);
	CU_ASSERT_EQUAL(read_batch(D, buf, NULL, BATCH, &wrong), 0);
	CU_ASSERT_EQUAL(wrong, 0);
	free(buf);
	duo_down(D);
}

/* The same with a cluster secret: every CONNECT rides an authenticated control
 * connection, whose identity is what b compares. */
static void test_connect_identity_auth(void)
{
	char path[512], store[640];
	FILE *f;

	snprintf(path, sizeof(path), "%s/secret", pc_test_tmpdir());
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("the verbs test's cluster secret\n", f);
	fclose(f);
	chmod(path, 0600);
	snprintf(store, sizeof(store), ", auth_secret_file: \"%s\"", path);
	{
		struct duo *D = duo_up(store);
		struct wire_req q = { .magic = CONNECT_MAGIC, .from = 2, .from_inc = 7, .nr_rails = 1 };
		struct pc_rpc r = { .peer = 1, .opcode = VERBS_RPC_CONNECT, .req = &q,
				    .req_len = sizeof(q) };
		uint8_t *buf = aligned_alloc(4096, (size_t)BATCH * PAGE);
		unsigned wrong = 0;

		CU_ASSERT_EQUAL(read_batch(D, buf, NULL, 0, &wrong), 0);
		CU_ASSERT_EQUAL(pc_fabric_call(vf_of(D, 0)->ctl, &r, 1), 0);
		CU_ASSERT_EQUAL(r.status, -EPERM);
		pc_msg_free(&r.resp);
		printf("\n  with a secret, node a's CONNECT naming node c: %s\n", strerror(-r.status));
		CU_ASSERT_EQUAL(read_batch(D, buf, NULL, BATCH, &wrong), 0);
		free(buf);
		duo_down(D);
	}
}

static CU_TestInfo tests[] = {
	{ "batches striped over two rails, counted per rail", test_rails_spread },
	{ "a rail down mid-run and back", test_rail_down_and_back },
	{ "registered memory moved without a bounce copy", test_zero_copy },
	{ "our QP forced into the error state", test_qp_error_here },
	{ "the peer's QP forced into the error state: retries exceeded", test_qp_error_there },
	{ "the peer gone, then a new incarnation", test_peer_gone },
	{ "the topology's QP settings and their defaults", test_qp_settings },
	{ "CONNECT naming another node refused", test_connect_identity },
	{ "CONNECT naming another node refused, with a secret", test_connect_identity_auth },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	CU_SuiteInfo suites[] = {
		{ "verbs on two rails", NULL, NULL, NULL, NULL, tests },
		CU_SUITE_INFO_NULL,
	};

	if (argc > 4) {
		fabric = argv[1];
		dev0 = argv[2];
		dev1 = argv[3];
		netdev1 = argv[4];
	}
	printf("verbs_test: fabric %s, rails %s and %s, %s goes down\n", fabric, dev0, dev1, netdev1);
	return pc_test_main(argc, argv, suites);
}
