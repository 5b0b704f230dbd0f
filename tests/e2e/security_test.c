/*
 * security_test.c - attacks on a live cluster with a secret (n0 in this process, n1
 * and n2 as pcd), each of which must be refused while the cluster keeps serving:
 * reading and forging pages, MEMBER, DIR_UPDATE and TIER_PUT from a connection that
 * never authenticated, that authenticated with another secret, that claims another
 * identity or replays another connection's proof, or that is an authenticated client
 * asking what only nodes may; and processes with no secret, another secret or other
 * placement settings (vnodes, mode), refused with a line on both sides that says why.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <peercache/pc_fabric.h>
#include <peercache/peercache.h>

#include "cluster.h"
#include "placement/ring.h"
#include "proto.h"
#include "rawpeer.h"
#include "store.h"
#include "testutil.h"

#define PAGES 32
#define PAGE 12288

static const char *pcd_bin(void)
{
	return pc_test_argc > 1 ? pc_test_argv[1] : "./pcd";
}

static const char *secret, *other_secret;

static struct ecl *up(void)
{
	char s[1024];

	secret = raw_secret_file(0, "correct horse battery staple, thirty-two bytes");
	other_secret = raw_secret_file(1, "another cluster's secret, not this one's at all");
	snprintf(s, sizeof(s),
		 "mode: slotmap, slot_size_classes: [16KiB], global_segment_size: 4MiB, tier_host_blocks: 8, auth_secret_file: \"%s\"",
		 secret);
	return ecl_up(pcd_bin(), "tcp", s, true);
}

/* ---- what this process logs, for the lines that must name the cause */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char logged[16384];

static void sink(void *arg, enum pc_log_level level, const char *line)
{
	(void)arg;
	(void)level;
	pthread_mutex_lock(&log_lock);
	if (strlen(logged) + strlen(line) + 2 < sizeof(logged)) {
		strcat(logged, line);
		strcat(logged, "\n");
	}
	pthread_mutex_unlock(&log_lock);
}

static bool logged_has(const char *what)
{
	bool yes;

	pthread_mutex_lock(&log_lock);
	yes = strstr(logged, what) != NULL;
	pthread_mutex_unlock(&log_lock);
	if (!yes)
		printf("\n  this process did not log \"%s\"; it logged:\n%s", what, logged);
	return yes;
}

/* A client store on topology t (NULL: the cluster's). */
static struct pc_store *client(struct ecl *E, struct pc_topology *t)
{
	char err[PC_ERR_MAX];
	struct pc_store_opts o = { .size = sizeof(o), .topo = t ? t : E->topo, .err = err,
				   .errlen = sizeof(err) };
	struct pc_store *s = NULL;

	if (pc_store_open(&o, &s))
		printf("\n  open: %s\n", err);
	return s;
}

/* The cluster's topology with one setting changed. */
static struct pc_topology *changed(struct ecl *E, const char *set)
{
	struct pc_topology *t = pc_topology_dup(E->topo);
	char err[PC_ERR_MAX];

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	if (pc_topology_set(t, set, err, sizeof(err)))
		printf("\n  %s: %s\n", set, err);
	return t;
}

static void pages_intact(struct pc_store *s)
{
	int wrong = 0, bad = 0;

	CU_ASSERT_EQUAL(pc_test_read_pages(s, PAGES, PAGE, &wrong, &bad), PAGES);
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT_EQUAL(bad, 0);
}

/* The next thing the server sends is a refusal or the end of the connection, never
 * an answer. */
static void refused(struct raw_peer *p, const char *what)
{
	struct tcp_hdr h;
	int t = raw_next(p, &h, 2000);

	printf("\n  %-58s -> %s", what, t == 0 ? "closed" : t == TCP_REFUSED ? "REFUSED, closed" :
	       t < 0 ? "NOTHING (open)" : "ANSWERED");
	CU_ASSERT(t == 0 || t == TCP_REFUSED);
	if (t == TCP_REFUSED) {
		CU_ASSERT_EQUAL(h.status, -EACCES);
		CU_ASSERT_EQUAL(raw_next(p, NULL, 2000), 0);
	}
	close(p->fd);
}

/* The RPC answer on an authenticated raw connection: its status. */
static int rpc_status(struct raw_peer *p, uint16_t op, const void *body, size_t len)
{
	struct tcp_hdr h;
	char junk[4096];

	raw_send(p, TCP_RPC, op, body, len);
	if (raw_next(p, &h, 2000) != TCP_RPC_RESP)
		return 1;
	for (uint64_t left = h.body_len; left;) {
		ssize_t r = recv(p->fd, junk, left < sizeof(junk) ? left : sizeof(junk), 0);

		if (r <= 0)
			return 2;
		left -= (uint64_t)r;
	}
	return h.status;
}

/* n0's slot region, as LAYOUT tells an authenticated client. */
static void n0_region(struct ecl *E, uint32_t *rkey, uint64_t *base)
{
	struct pc_fabric_params fp = { .size = sizeof(fp), .topo = E->topo, .self = PC_PEER_NONE };
	struct pc_rpc r = { .peer = 0, .opcode = PC_RPC_LAYOUT };
	struct proto_layout_class lc;
	struct pc_fabric *f;

	CU_ASSERT_EQUAL_FATAL(pc_fabric_open("tcp", &fp, &f), 0);
	CU_ASSERT_EQUAL(pc_fabric_call(f, &r, 1), 0);
	CU_ASSERT_EQUAL_FATAL(r.status, 0);
	memcpy(&lc, (char *)r.resp.data + sizeof(struct proto_layout), sizeof(lc));
	*rkey = lc.rkey;
	*base = lc.base;
	free(r.resp.data);
	pc_fabric_close(f);
}

static void test_attacks(void)
{
	struct ecl *E = up();
	struct pc_store *good = client(E, NULL);
	uint16_t port = E->port0;	/* n0, this process: its ring and counters are in reach */
	struct tcp_auth right, wrong;
	struct raw_peer p, a;
	struct pc_fabric_stats fs;
	struct pc_metrics m = { .size = sizeof(m) };
	struct proto_member leave = { .node = 1, .member = 0 };
	uint8_t put_req[sizeof(struct proto_dir_update) + sizeof(struct proto_dir_put)] = { 0 };
	uint8_t tier_req[sizeof(struct proto_tier_xfer) + sizeof(struct proto_tier_blk)] = { 0 };
	struct { struct tcp_opdesc d; uint8_t payload[4096]; } forge;
	struct tcp_opdesc rd;
	uint32_t rkey;
	uint64_t base;

	CU_ASSERT_PTR_NOT_NULL_FATAL(good);
	raw_auth_of(secret, &right);
	raw_auth_of(other_secret, &wrong);
	CU_ASSERT_EQUAL(pc_test_write_pages(good, 0, PAGES, PAGE), PAGES);
	pages_intact(good);
	n0_region(E, &rkey, &base);
	rd = (struct tcp_opdesc){ .kind = PC_OP_READ, .rkey = rkey, .raddr = base, .len = 4096 };
	forge.d = (struct tcp_opdesc){ .kind = PC_OP_WRITE, .rkey = rkey, .raddr = base, .len = 4096 };
	memset(forge.payload, 0x66, sizeof(forge.payload));
	((struct proto_dir_update *)put_req)->nput = 1;
	((struct proto_dir_put *)(put_req + sizeof(struct proto_dir_update)))->loc =
		(struct proto_dir_loc){ .node = 1, .len = 100 };
	*(struct proto_tier_xfer *)tier_req = (struct proto_tier_xfer){ .n = 1, .rkey = rkey };

	/* no secret: refused at HELLO */
	raw_hello(&p, port, E->topo, PC_PEER_NONE, 0, false);
	CU_ASSERT_EQUAL(p.status, -EACCES);
	refused(&p, "HELLO without a secret");
	/* claims one, never proves it: nothing is served before AUTH */
	raw_hello(&p, port, E->topo, PC_PEER_NONE, 0, true);
	CU_ASSERT_EQUAL(p.status, 0);
	CU_ASSERT(p.ack.flags & TCP_HELLO_AUTH);
	raw_send(&p, TCP_OPS, 1, &rd, sizeof(rd));
	refused(&p, "READ a page without AUTH");
	raw_hello(&p, port, E->topo, PC_PEER_NONE, 0, true);
	raw_auth(&p, NULL);
	raw_send(&p, TCP_OPS, 1, &forge, sizeof(forge));
	refused(&p, "forge a page after a zero MAC");
	raw_hello(&p, port, E->topo, 1, 0, true);
	raw_auth(&p, &wrong);
	raw_send(&p, TCP_RPC, PC_RPC_MEMBER, &leave, sizeof(leave));
	refused(&p, "MEMBER as node n1, MAC under another secret");
	raw_hello(&p, port, E->topo, 1, 0, true);
	raw_send(&p, TCP_RPC, PC_RPC_DIR_UPDATE, put_req, sizeof(put_req));
	refused(&p, "DIR_UPDATE as node n1 without AUTH");
	raw_hello(&p, port, E->topo, 1, 0, true);
	raw_send(&p, TCP_RPC, PC_RPC_TIER_PUT, tier_req, sizeof(tier_req));
	refused(&p, "TIER_PUT as node n1 without AUTH");

	/* a proof is good for its own connection only: a client's, replayed as n1's */
	raw_hello(&a, port, E->topo, PC_PEER_NONE, 0, true);
	raw_auth(&a, &right);
	CU_ASSERT_EQUAL(rpc_status(&a, PC_RPC_LAYOUT, NULL, 0), 0);	/* it works, as a client */
	raw_hello(&p, port, E->topo, 1, 0, true);
	{
		uint8_t mac[TCP_MAC_BYTES];

		tcp_auth_mac(&right, TCP_AUTH_CLIENT, &a.hello, &a.ack, mac);
		raw_send(&p, TCP_AUTH, 0, mac, sizeof(mac));
	}
	raw_send(&p, TCP_RPC, PC_RPC_MEMBER, &leave, sizeof(leave));
	refused(&p, "MEMBER as node n1 with a client's replayed proof");

	/* a tool holds the secret, yet reads and writes no slots */
	raw_hello(&p, port, E->topo, PC_PEER_TOOL, PC_PEER_NONE, true);
	CU_ASSERT_EQUAL(p.status, 0);
	raw_auth(&p, &right);
	CU_ASSERT_EQUAL(rpc_status(&p, PC_RPC_HEARTBEAT, &(struct proto_heartbeat){ .node = PC_PEER_NONE },
				   sizeof(struct proto_heartbeat)), 0);		/* views: yes */
	raw_send(&p, TCP_OPS, 1, &rd, sizeof(rd));
	refused(&p, "READ a page as a tool (pcctl)");
	raw_hello(&p, port, E->topo, PC_PEER_TOOL, PC_PEER_NONE, true);
	raw_auth(&p, &right);
	raw_send(&p, TCP_OPS, 1, &forge, sizeof(forge));
	refused(&p, "forge a page as a tool (pcctl)");

	/* an authenticated client asks what only nodes may */
	CU_ASSERT_EQUAL(rpc_status(&a, PC_RPC_MEMBER, &leave, sizeof(leave)), -EPERM);
	CU_ASSERT_EQUAL(rpc_status(&a, PC_RPC_DIR_UPDATE, put_req, sizeof(put_req)), -EPERM);
	CU_ASSERT_EQUAL(rpc_status(&a, PC_RPC_TIER_PUT, tier_req, sizeof(tier_req)), -EPERM);
	CU_ASSERT_EQUAL(rpc_status(&a, PC_RPC_LAYOUT, NULL, 0), 0);
	close(a.fd);

	/* nothing changed, everything is served */
	CU_ASSERT_TRUE(ring_contains(store_ring_of(E->n0), 1));
	pc_store_metrics(E->n0, &m);
	pc_fabric_get_stats(E->n0->svc.fabric, &fs);
	printf("\n  n0: %llu handshakes refused, %llu node requests from a client refused\n",
	       (unsigned long long)fs.auth_refused, (unsigned long long)m.rpc_refused);
	CU_ASSERT_EQUAL(m.rpc_refused, 3);
	CU_ASSERT(fs.auth_refused >= 4);
	pages_intact(good);
	CU_ASSERT_EQUAL(pc_test_write_pages(good, PAGES, 8, PAGE), 8);
	pc_store_close(good);
	tcp_auth_clear(&right);
	tcp_auth_clear(&wrong);
	ecl_down(E);
}

/* A process without the secret, or with another, is refused; both sides say why. */
static void test_wrong_secret(void)
{
	struct ecl *E = up();
	struct pc_topology *none = changed(E, "store.auth_secret_file=");
	struct pc_topology *other;
	struct pc_store *s;
	char set[700];
	int wrong = 0, bad = 0;

	snprintf(set, sizeof(set), "store.auth_secret_file=%s", other_secret);
	other = changed(E, set);
	logged[0] = 0;
	pc_log_set_sink(sink, NULL);
	s = client(E, none);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(pc_test_read_pages(s, 16, PAGE, &wrong, &bad), 0);
	CU_ASSERT(bad > 0);
	pc_store_close(s);
	CU_ASSERT_TRUE(logged_has("it has a cluster secret but this process has none"));
	s = client(E, other);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(pc_test_read_pages(s, 16, PAGE, &wrong, &bad), 0);
	pc_store_close(s);
	pc_log_set_sink(NULL, NULL);
	CU_ASSERT_TRUE(logged_has("did not prove it holds the cluster secret"));
	ecl_down(E);	/* the pcds flush their logs */
	CU_ASSERT_TRUE(ecl_logged("n1", "has no cluster secret but this node has one"));
	CU_ASSERT_TRUE(ecl_logged("n1", "went away before authenticating"));
	pc_topology_free(none);
	pc_topology_free(other);
}

/* Other placement settings: refused, the first differing key named on both sides. */
static void test_fingerprint(void)
{
	struct ecl *E = up();
	struct pc_topology *vn = changed(E, "store.vnodes=64");
	struct pc_topology *md = changed(E, "store.mode=p2p");
	struct pc_store *s;
	int wrong = 0, bad = 0;

	logged[0] = 0;
	pc_log_set_sink(sink, NULL);
	s = client(E, vn);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(pc_test_write_pages(s, 0, 8, PAGE), 0);
	pc_store_close(s);
	CU_ASSERT_TRUE(logged_has("its placement settings differ: store.vnodes is 64 here, 128 there"));
	s = client(E, md);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_EQUAL(pc_test_read_pages(s, 8, PAGE, &wrong, &bad), 0);
	CU_ASSERT(bad > 0);
	pc_store_close(s);
	pc_log_set_sink(NULL, NULL);
	CU_ASSERT_TRUE(logged_has("store.mode is p2p here, slotmap there"));
	ecl_down(E);
	CU_ASSERT_TRUE(ecl_logged("n1", "store.vnodes is 128 here, 64 there"));
	CU_ASSERT_TRUE(ecl_logged("n1", "store.mode is slotmap here, p2p there"));
	pc_topology_free(vn);
	pc_topology_free(md);
}

static CU_TestInfo tests[] = {
	{ "attacks without the secret, as another node, as a client", test_attacks },
	{ "no secret, another secret: refused, both sides say why", test_wrong_secret },
	{ "other vnodes, other mode: refused, the key named on both sides", test_fingerprint },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "security", NULL, NULL, NULL, NULL, tests })
