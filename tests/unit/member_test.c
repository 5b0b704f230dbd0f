/*
 * member_test.c - membership on the in-process fabric, heartbeats every 20 ms and a
 * failure timeout of 150 ms: a node that stops is taken out of every ring (the
 * client's too) and comes back when it restarts; a leave asked for sticks while the
 * node runs; heartbeats that lie about their sender are refused.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <peercache/peercache.h>
#include "member.h"
#include "proto.h"
#include "slotmap_fixture.h"
#include "store.h"
#include "testutil.h"

/* Heartbeats and timeouts, slower under valgrind, where threads wait their turn. */
static double slow = 1;
static char STORE[256];

static int suite_init(void)
{
	slow = pc_test_under_valgrind() ? 10 : 1;
	snprintf(STORE, sizeof(STORE),
		 "slot_size_classes: [4KiB], global_segment_size: 1MiB, heartbeat_ms: %.0f, "
		 "failure_timeout_ms: %.0f", 20 * slow, 150 * slow);
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static enum pc_member_state state(struct pc_store *s, const char *node)
{
	enum pc_member_state st = PC_MEMBER_UP;

	CU_ASSERT_EQUAL(pc_store_member(s, node, &st, NULL), 0);
	return st;
}

/* Whether every store in s[0..n) sees node in state want within limit_ms. */
/* Whether node is in s's ring now, read inside a ring pass: the membership task
 * frees a ring that a change replaced once no pass holds it. */
static bool in_ring(struct pc_store *s, uint32_t node)
{
	unsigned pass = store_ring_enter(&s->svc);
	bool in = ring_contains(store_ring_of(s), node);

	store_ring_exit(&s->svc, pass);
	return in;
}

static bool all_see(struct pc_store **s, int n, const char *node, enum pc_member_state want,
		    double limit_ms)
{
	double t0 = now_ms();

	for (;;) {
		int seen = 0;

		for (int i = 0; i < n; i++)
			seen += state(s[i], node) == want;
		if (seen == n)
			return true;
		if (now_ms() - t0 > limit_ms * slow)
			return false;
		usleep(5000);
	}
}

static void test_stop_and_restart(void)
{
	struct cluster *C = up(3, STORE);
	struct pc_store *cl = open_node(C, NULL, NULL);
	struct pc_store *watch[3] = { C->s[0], C->s[1], cl };
	uint64_t g0 = pc_store_generation(C->s[0]), inc0 = 0, inc1 = 0;
	double t0;

	CU_ASSERT(all_see(watch, 3, "n2", PC_MEMBER_UP, 1000));
	pc_store_member(C->s[0], "n2", NULL, &inc0);
	pc_store_close(C->s[2]);		/* silent from now on */
	C->s[2] = NULL;
	t0 = now_ms();
	CU_ASSERT(all_see(watch, 3, "n2", PC_MEMBER_DOWN, 3000));
	printf("\n  n2 silent: down on both nodes and the client after %.0f ms (timeout %.0f ms)\n",
	       now_ms() - t0, 150 * slow);
	CU_ASSERT(!in_ring(C->s[0], 2));
	CU_ASSERT(!in_ring(cl, 2));
	CU_ASSERT(pc_store_generation(C->s[0]) > g0);
	C->s[2] = open_node(C, "n2", NULL);	/* a restart: a new incarnation */
	CU_ASSERT(all_see(watch, 3, "n2", PC_MEMBER_UP, 3000));
	pc_store_member(C->s[0], "n2", NULL, &inc1);
	CU_ASSERT(inc1 != inc0 && inc1 != 0);
	CU_ASSERT(in_ring(cl, 2));
	pc_store_close(cl);
	down(C);
}

static void test_leave_sticks(void)
{
	struct cluster *C = up(3, STORE);
	struct pc_store *watch[2] = { C->s[0], C->s[1] };

	CU_ASSERT(all_see(watch, 2, "n2", PC_MEMBER_UP, 1000));
	CU_ASSERT_EQUAL(pc_store_set_member(C->s[0], "n2", false), 0);
	CU_ASSERT(all_see(watch, 2, "n2", PC_MEMBER_LEFT, 100));
	usleep((useconds_t)(300 * 1000 * slow));	/* n2 goes on heartbeating: it stays out */
	CU_ASSERT(all_see(watch, 2, "n2", PC_MEMBER_LEFT, 0));
	CU_ASSERT_EQUAL(pc_store_set_member(C->s[1], "n2", true), 0);
	CU_ASSERT(all_see(watch, 2, "n2", PC_MEMBER_UP, 100));
	down(C);
}

/* A node already down that is then said to have left (pcd's SIGTERM after it was
 * taken out for silence, pc_store_set_member) changes no ring, but its state: the view
 * is another, so its generation is too, or a client that holds that generation's view
 * is answered "nothing new" and says down for good. */
static void test_left_while_down_reaches_clients(void)
{
	struct cluster *C = up(3, STORE);
	struct pc_store *cl = open_node(C, NULL, NULL);
	struct pc_store *watch[3] = { C->s[0], C->s[1], cl };

	CU_ASSERT_FATAL(all_see(watch, 3, "n2", PC_MEMBER_UP, 1000));
	pc_store_close(C->s[2]);
	C->s[2] = NULL;
	CU_ASSERT_FATAL(all_see(watch, 3, "n2", PC_MEMBER_DOWN, 3000));
	usleep((useconds_t)(200 * 1000 * slow));	/* the nodes' clocks agree, the client took them */
	CU_ASSERT_EQUAL(pc_store_set_member(C->s[0], "n2", false), 0);
	CU_ASSERT(all_see(watch, 2, "n2", PC_MEMBER_LEFT, 100));
	CU_ASSERT(all_see(watch, 3, "n2", PC_MEMBER_LEFT, 1000));
	pc_store_close(cl);
	down(C);
}

/* A node that joins takes the cluster's view (members_open): one that says n2 left at
 * an older run keeps that run out, not the run it hears next. A restart after a drain
 * is a new incarnation; if the joiner took the incarnation it then hears for the one
 * that left, n2 would stay out here while every other node has it back. */
static void test_left_in_view_is_that_run(void)
{
	struct cluster *C = up(3, STORE);
	struct pc_store *watch[2] = { C->s[0], C->s[1] };
	struct proto_heartbeat hb = { .node = PC_PEER_NONE };
	struct pc_msg resp = { 0 };
	struct proto_view_node *e;
	uint64_t inc = 0;

	CU_ASSERT_FATAL(all_see(watch, 2, "n2", PC_MEMBER_UP, 1000));
	for (int k = 0; k < 200 && !inc; k++) {	/* n0 heard n2 */
		usleep(5000);
		pc_store_member(C->s[0], "n2", NULL, &inc);
	}
	CU_ASSERT_FATAL(inc != 0);
	CU_ASSERT_EQUAL_FATAL(store_rpc(C->s[0], PC_PEER_NONE, PC_RPC_HEARTBEAT, &hb, sizeof(hb),
					&resp), 0);
	CU_ASSERT_EQUAL_FATAL(resp.len, sizeof(struct proto_view) + 3 * sizeof(*e));
	/* as n0 would have answered after n2 drained (an older run) and stopped */
	e = (struct proto_view_node *)((struct proto_view *)resp.data + 1);
	e[2].state = PROTO_LEFT;
	e[2].incarnation = inc ^ 1;
	e[2].silent_ms = 10000;
	members_take_view(C->s[1]->members, resp.data);
	pc_msg_free(&resp);
	/* n2 heartbeats n1 as the run it is: a new one, so it is back */
	CU_ASSERT(all_see(&C->s[1], 1, "n2", PC_MEMBER_UP, 1000));
	CU_ASSERT(in_ring(C->s[1], 2));
	down(C);
}

/* A node told that a node joined whose entry it has not learned yet (a newcomer whose
 * first heartbeat has not arrived here, told to join by one that knows it) does not
 * put the vacant entry in its ring: the entry has no name yet, and a ring point is
 * the hash of the name, so it would place keys unlike every other node for as long
 * as the newcomer runs. The newcomer's heartbeats bring it in, placed alike. */
static void test_member_of_vacant_entry(void)
{
	struct proto_member msg = { .node = 2, .member = 1 };
	struct proto_heartbeat hb = { .node = 2, .incarnation = 99, .port = 40002 };
	struct pc_msg resp = { 0 };
	struct cluster *C;
	char text[1024], err[PC_ERR_MAX];
	int differ = 0, len;
	unsigned pass[2];

	/* n0 and n1 listed, entry 2 vacant: up() without the room's world check */
	len = snprintf(text, sizeof(text), "store: {%s, max_nodes: 3}\nnodes:\n", STORE);
	for (uint32_t i = 0; i < 2; i++)
		len += snprintf(text + len, sizeof(text) - (size_t)len,
				"  - {name: n%u, address: 127.0.0.1, port: %u}\n", i, 40000 + i);
	C = calloc(1, sizeof(*C));
	CU_ASSERT_PTR_NOT_NULL_FATAL(C);
	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, (size_t)len, "test", &C->topo, err, sizeof(err)), 0);
	C->w = inproc_world_create(3);
	C->n = 2;
	C->s[0] = open_node(C, "n0", NULL);
	C->s[1] = open_node(C, "n1", NULL);
	CU_ASSERT_NOT_EQUAL(store_rpc(C->s[0], 1, PC_RPC_MEMBER, &msg, sizeof(msg), &resp), 0);
	pc_msg_free(&resp);
	CU_ASSERT(!in_ring(C->s[0], 2));
	/* the newcomer's heartbeats: both nodes learn it */
	snprintf(hb.name, sizeof(hb.name), "n2");
	snprintf(hb.address, sizeof(hb.address), "127.0.0.1");
	for (int k = 0; k < 2; k++) {
		CU_ASSERT_EQUAL(store_rpc(C->s[k], 2, PC_RPC_HEARTBEAT, &hb, sizeof(hb), &resp), 0);
		pc_msg_free(&resp);
	}
	for (int t = 0; t < 200 && !(in_ring(C->s[0], 2) && in_ring(C->s[1], 2)); t++)
		usleep(1000);
	pass[0] = store_ring_enter(&C->s[0]->svc);
	pass[1] = store_ring_enter(&C->s[1]->svc);
	CU_ASSERT(ring_contains(store_ring_of(C->s[0]), 2) && ring_contains(store_ring_of(C->s[1]), 2));
	for (uint64_t i = 0; i < 4096; i++)
		differ += ring_owner_slow(store_ring_of(C->s[0]), i * (UINT64_MAX / 4096)) !=
			  ring_owner_slow(store_ring_of(C->s[1]), i * (UINT64_MAX / 4096));
	store_ring_exit(&C->s[1]->svc, pass[1]);
	store_ring_exit(&C->s[0]->svc, pass[0]);
	printf("\n  n2 learned by both nodes: %d of 4096 ring positions owned differently", differ);
	CU_ASSERT_EQUAL(differ, 0);
	down(C);
}

/* A heartbeat is taken only from the node it names. */
static void test_heartbeat_checks(void)
{
	struct cluster *C = up(2, STORE);
	struct proto_heartbeat hb = { .node = 1, .incarnation = 77 };
	struct pc_msg resp = { 0 };

	CU_ASSERT_EQUAL(store_rpc(C->s[0], 1, PC_RPC_HEARTBEAT, &hb, sizeof(hb), &resp), 0);
	CU_ASSERT(resp.len >= sizeof(struct proto_view));
	resp.len = 0;
	CU_ASSERT_EQUAL(store_rpc(C->s[0], PC_PEER_NONE, PC_RPC_HEARTBEAT, &hb, sizeof(hb), &resp),
			-EPROTO);
	hb.node = 7;
	CU_ASSERT_EQUAL(store_rpc(C->s[0], 7, PC_RPC_HEARTBEAT, &hb, sizeof(hb), &resp), -EPROTO);
	CU_ASSERT_EQUAL(store_rpc(C->s[0], 1, PC_RPC_HEARTBEAT, &hb, sizeof(hb) - 1, &resp), -EPROTO);
	/* a client (or a tool) gets every node's entry */
	hb.node = PC_PEER_NONE;
	resp.len = 0;
	CU_ASSERT_EQUAL(store_rpc(C->s[0], PC_PEER_NONE, PC_RPC_HEARTBEAT, &hb, sizeof(hb), &resp), 0);
	CU_ASSERT_EQUAL(resp.len, sizeof(struct proto_view) + 2 * sizeof(struct proto_view_node));
	pc_msg_free(&resp);
	/* a client's generation moves nothing: one at the clock's end would make the
	 * next change wrap it, and then every client's view look current */
	{
		uint64_t g = pc_store_generation(C->s[0]);

		hb.flags = PROTO_HB_HAVE_VIEW;
		hb.generation = UINT64_MAX;
		resp.len = 0;
		CU_ASSERT_EQUAL(store_rpc(C->s[0], PC_PEER_NONE, PC_RPC_HEARTBEAT, &hb, sizeof(hb), &resp), 0);
		CU_ASSERT_EQUAL(pc_store_generation(C->s[0]), g);
		/* not this node's generation: the whole view */
		CU_ASSERT_EQUAL(resp.len, sizeof(struct proto_view) + 2 * sizeof(struct proto_view_node));
		pc_msg_free(&resp);
		/* nor does a node's beyond any cluster's */
		hb = (struct proto_heartbeat){ .node = 1, .incarnation = 77, .generation = UINT64_MAX };
		resp.len = 0;
		CU_ASSERT_EQUAL(store_rpc(C->s[0], 1, PC_RPC_HEARTBEAT, &hb, sizeof(hb), &resp), 0);
		CU_ASSERT(pc_store_generation(C->s[0]) < (1ULL << 62));
		pc_msg_free(&resp);
		/* a node's ordinary one does (a Lamport clock) */
		hb.generation = g + 5;
		resp.len = 0;
		CU_ASSERT_EQUAL(store_rpc(C->s[0], 1, PC_RPC_HEARTBEAT, &hb, sizeof(hb), &resp), 0);
		CU_ASSERT(pc_store_generation(C->s[0]) >= g + 5);
		pc_msg_free(&resp);
	}
	CU_ASSERT_EQUAL(pc_store_member(C->s[0], "n9", NULL, NULL), -ENXIO);
	down(C);
}

static int rings(const struct ring *list)
{
	int n = 0;

	for (; list; list = list->retired_next)
		n++;
	return n;
}

/* A node whose membership changes all day keeps a bounded number of old rings (each
 * is a few MiB at 512 nodes), not one per change; a batch in flight keeps the ring it
 * read until it ends. */
static void test_retired_rings_bounded(void)
{
	struct cluster *C = up(3, "slot_size_classes: [16KiB], global_segment_size: 1MiB, heartbeat_ms: 0");
	struct pc_store *s = C->s[0];
	struct ring *held;
	unsigned pass;
	int most = 0;

	for (int i = 0; i < 1000; i++) {
		CU_ASSERT_EQUAL(store_set_member(s, 2, i & 1), 0);
		if (rings(s->retired) + rings(s->retired_before) > most)
			most = rings(s->retired) + rings(s->retired_before);
	}
	printf("\n  1000 ring changes: at most %d old rings kept", most);
	CU_ASSERT(most <= 2);
	/* a reader's pass keeps what it read, however many changes follow */
	pass = store_ring_enter(&s->svc);
	held = store_ring(&s->svc);
	for (int i = 0; i < 10; i++)
		CU_ASSERT_EQUAL(store_set_member(s, 2, i & 1), 0);
	CU_ASSERT(held->nr_nodes >= 2);	/* still a ring (valgrind: not freed) */
	store_ring_exit(&s->svc, pass);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(store_set_member(s, 2, i & 1), 0);
	CU_ASSERT(rings(s->retired) + rings(s->retired_before) <= 2);
	down(C);
}

static CU_TestInfo tests[] = {
	{ "a silent node leaves every ring, a restarted one comes back", test_stop_and_restart },
	{ "a leave asked for sticks while the node runs", test_leave_sticks },
	{ "a leave of a node down reaches the clients", test_left_while_down_reaches_clients },
	{ "a leave in a joiner's view keeps out that run only", test_left_in_view_is_that_run },
	{ "a join of an entry not yet learned waits for its heartbeat", test_member_of_vacant_entry },
	{ "heartbeats are taken only from the node they name", test_heartbeat_checks },
	{ "old rings are freed once no reader holds them", test_retired_rings_bounded },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "membership", suite_init, NULL, NULL, NULL, tests })
