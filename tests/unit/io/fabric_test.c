/*
 * fabric_test.c - region-table checks, the in-process fabric, the wrappers'
 * counters and fault hooks, that no built-in ops table leaves a slot NULL, and that
 * rxe's table is verbs'.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin.h"
#include "inproc/inproc.h"
#include "io/peer_backoff.h"
#include "io/region.h"
#include "testutil.h"

static void test_region_checks(void)
{
	struct region_table t;
	uint8_t *mem = calloc(1, 4096), *where;
	struct pc_region ro = { .addr = mem, .len = 1024, .access = PC_ACCESS_REMOTE_READ };
	struct pc_region rw = { .addr = mem + 1024, .len = 3072,
				.access = PC_ACCESS_REMOTE_READ | PC_ACCESS_REMOTE_WRITE |
					  PC_ACCESS_REMOTE_ATOMIC };
	uint64_t base = (uint64_t)(uintptr_t)mem;

	CU_ASSERT_EQUAL_FATAL(region_table_init(&t), 0);
	CU_ASSERT_EQUAL(region_table_add(&t, &ro, 0x1234), 0);
	CU_ASSERT_EQUAL(region_table_add(&t, &rw, 0x1234), 0);	/* same random: new key */
	CU_ASSERT(ro.key && rw.key && ro.key != rw.key);
	CU_ASSERT_EQUAL(region_table_check(&t, ro.key, base, 1024, PC_ACCESS_REMOTE_READ, &where), 0);
	CU_ASSERT_PTR_EQUAL(where, mem);
	CU_ASSERT_EQUAL(region_table_check(&t, ro.key, base + 1, 1024, PC_ACCESS_REMOTE_READ, &where), -EFAULT);
	CU_ASSERT_EQUAL(region_table_check(&t, ro.key, base - 1, 1, PC_ACCESS_REMOTE_READ, &where), -EFAULT);
	CU_ASSERT_EQUAL(region_table_check(&t, ro.key, UINT64_MAX - 4, 16, PC_ACCESS_REMOTE_READ, &where), -EFAULT);
	CU_ASSERT_EQUAL(region_table_check(&t, ro.key, base, UINT64_MAX, PC_ACCESS_REMOTE_READ, &where), -EFAULT);
	CU_ASSERT_EQUAL(region_table_check(&t, ro.key, base, 8, PC_ACCESS_REMOTE_WRITE, &where), -EACCES);
	CU_ASSERT_EQUAL(region_table_check(&t, ro.key ^ rw.key ^ 7, base, 8, PC_ACCESS_REMOTE_READ, &where), -ENOKEY);
	CU_ASSERT_EQUAL(region_table_check(&t, rw.key, base + 1028, 8, PC_ACCESS_REMOTE_ATOMIC, &where), -EINVAL);
	CU_ASSERT_EQUAL(region_table_check(&t, rw.key, base + 1032, 8, PC_ACCESS_REMOTE_ATOMIC, &where), 0);
	region_table_del(&t, ro.key);
	CU_ASSERT_EQUAL(region_table_check(&t, ro.key, base, 8, PC_ACCESS_REMOTE_READ, &where), -ENOKEY);
	region_table_fini(&t);
	free(mem);
}

/* ---------------------------------------------------------------- in-process */

#define NODES 3
#define MEM 8192

struct world {
	struct pc_topology *topo;
	struct inproc_world *w;
	struct pc_fabric *f[NODES];
	struct pc_region r[NODES];
	uint8_t *mem[NODES];
	int calls;
};

static int echo_handler(void *arg, uint32_t from, uint16_t opcode, const void *req,
			size_t len, struct pc_msg *resp)
{
	struct world *W = arg;
	char pre[32];

	W->calls++;
	if (opcode == 99)
		return -EPROTO;
	snprintf(pre, sizeof(pre), "from %u op %u: ", from, opcode);
	return pc_msg_append(resp, pre, strlen(pre)) ?: pc_msg_append(resp, req, len);
}

static struct world *world_up_shared(bool share)
{
	static const char text[] = "nodes:\n"
				   "  - {name: a, address: 127.0.0.1, port: 1}\n"
				   "  - {name: b, address: 127.0.0.1, port: 2}\n"
				   "  - {name: c, address: 127.0.0.1, port: 3}\n";
	struct world *W = calloc(1, sizeof(*W));
	char err[PC_ERR_MAX];

	CU_ASSERT_PTR_NOT_NULL_FATAL(W);
	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, sizeof(text) - 1, "w", &W->topo, err, sizeof(err)), 0);
	W->w = inproc_world_create(NODES);
	inproc_world_share(W->w, share);
	for (uint32_t i = 0; i < NODES; i++) {
		struct pc_fabric_params p = { .size = sizeof(p), .topo = W->topo, .self = i, .backend_arg = W->w };

		CU_ASSERT_EQUAL_FATAL(pc_fabric_open("inproc", &p, &W->f[i]), 0);
		W->mem[i] = aligned_alloc(64, MEM);
		memset(W->mem[i], (int)i, MEM);
		W->r[i] = (struct pc_region){ .addr = W->mem[i], .len = MEM,
					      .access = PC_ACCESS_REMOTE_READ | PC_ACCESS_REMOTE_WRITE |
							PC_ACCESS_REMOTE_ATOMIC };
		CU_ASSERT_EQUAL_FATAL(pc_fabric_reg(W->f[i], &W->r[i]), 0);
		CU_ASSERT_EQUAL_FATAL(pc_fabric_serve(W->f[i], echo_handler, W), 0);
	}
	return W;
}

static struct world *world_up(void)
{
	return world_up_shared(false);
}

static void world_down(struct world *W)
{
	for (uint32_t i = 0; i < NODES; i++) {
		pc_fabric_dereg(W->f[i], &W->r[i]);
		pc_fabric_close(W->f[i]);
		free(W->mem[i]);
	}
	inproc_world_destroy(W->w);
	pc_topology_free(W->topo);
	free(W);
}

static uint64_t addr(struct world *W, uint32_t n, size_t off)
{
	return (uint64_t)(uintptr_t)W->mem[n] + off;
}

static void test_inproc_batch(void)
{
	struct world *W = world_up();
	uint8_t rd1[100], rd2[100], wr[64], old[8];
	struct pc_op ops[4] = {
		{ .kind = PC_OP_READ, .peer = 1, .rkey = W->r[1].key, .raddr = addr(W, 1, 10), .local = rd1, .len = 100 },
		{ .kind = PC_OP_READ, .peer = 2, .rkey = W->r[2].key, .raddr = addr(W, 2, 0), .local = rd2, .len = 100 },
		{ .kind = PC_OP_WRITE, .peer = 2, .rkey = W->r[2].key, .raddr = addr(W, 2, 4000), .local = wr, .len = 64 },
		{ .kind = PC_OP_CAS, .peer = 1, .rkey = W->r[1].key, .raddr = addr(W, 1, 64), .local = old, .len = 8,
		  .compare = 0x0101010101010101ULL, .swap = 42 },
	};
	struct pc_fabric_stats st;

	memset(wr, 0xee, sizeof(wr));
	CU_ASSERT_EQUAL(pc_fabric_post(W->f[0], ops, 4), 0);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(ops[i].status, 0);
	CU_ASSERT_EQUAL(rd1[0], 1);
	CU_ASSERT_EQUAL(rd2[99], 2);
	CU_ASSERT_EQUAL(W->mem[2][4000], 0xee);
	CU_ASSERT_EQUAL(*(uint64_t *)old, 0x0101010101010101ULL);
	CU_ASSERT_EQUAL(*(uint64_t *)(W->mem[1] + 64), 42);
	/* a failing CAS leaves memory and reports the current value */
	ops[3].compare = 7;
	ops[3].swap = 8;
	CU_ASSERT_EQUAL(pc_fabric_post(W->f[0], &ops[3], 1), 0);
	CU_ASSERT_EQUAL(*(uint64_t *)old, 42);
	CU_ASSERT_EQUAL(*(uint64_t *)(W->mem[1] + 64), 42);
	pc_fabric_get_stats(W->f[0], &st);
	CU_ASSERT_EQUAL(st.post_phases, 2);
	CU_ASSERT_EQUAL(st.ops_read, 2);
	CU_ASSERT_EQUAL(st.bytes_read, 200);
	CU_ASSERT_EQUAL(st.bytes_written, 64);
	CU_ASSERT_EQUAL(st.ops_cas, 2);
	pc_fabric_get_stats(W->f[1], &st);
	CU_ASSERT_EQUAL(st.served_ops, 3);
	world_down(W);
}

static void test_inproc_refusals(void)
{
	struct world *W = world_up();
	uint8_t buf[64];
	struct pc_region ro = { .addr = W->mem[1] + 4096, .len = 4096, .access = PC_ACCESS_REMOTE_READ };
	struct pc_op ops[5] = {
		{ .kind = PC_OP_READ, .peer = 1, .rkey = W->r[1].key, .raddr = addr(W, 1, MEM - 32), .local = buf, .len = 64 },
		{ .kind = PC_OP_READ, .peer = 1, .rkey = W->r[1].key + 1, .raddr = addr(W, 1, 0), .local = buf, .len = 8 },
		{ .kind = PC_OP_WRITE, .peer = 1, .rkey = 0, .raddr = addr(W, 1, 4096), .local = buf, .len = 8 },
		{ .kind = PC_OP_READ, .peer = 2, .peer_inc = 12345, .rkey = W->r[2].key, .raddr = addr(W, 2, 0), .local = buf, .len = 8 },
		{ .kind = PC_OP_READ, .peer = 2, .peer_inc = 0, .rkey = W->r[2].key, .raddr = addr(W, 2, 0), .local = buf, .len = 8 },
	};
	struct pc_fabric_stats st;

	CU_ASSERT_EQUAL_FATAL(pc_fabric_reg(W->f[1], &ro), 0);
	ops[2].rkey = ro.key;
	CU_ASSERT_EQUAL(pc_fabric_post(W->f[0], ops, 5), 0);
	CU_ASSERT_EQUAL(ops[0].status, -EFAULT);
	CU_ASSERT_EQUAL(ops[1].status, -ENOKEY);
	CU_ASSERT_EQUAL(ops[2].status, -EACCES);
	CU_ASSERT_EQUAL(ops[3].status, -ESTALE);	/* the peer restarted */
	CU_ASSERT_EQUAL(ops[4].status, 0);
	ops[4].peer_inc = W->f[2]->incarnation;
	inproc_world_set_down(W->w, 2, true);
	CU_ASSERT_EQUAL(pc_fabric_post(W->f[0], &ops[4], 1), 0);
	CU_ASSERT_EQUAL(ops[4].status, -ECONNREFUSED);
	inproc_world_set_down(W->w, 2, false);
	/* the refusal made the peer back off: refused at once, without the backend */
	CU_ASSERT_EQUAL(pc_fabric_post(W->f[0], &ops[4], 1), 0);
	CU_ASSERT_EQUAL(ops[4].status, -ECONNREFUSED);
	usleep(150 * 1000);		/* store.peer_backoff_ms: 100 */
	CU_ASSERT_EQUAL(pc_fabric_post(W->f[0], &ops[4], 1), 0);
	CU_ASSERT_EQUAL(ops[4].status, 0);
	pc_fabric_get_stats(W->f[1], &st);
	CU_ASSERT_EQUAL(st.refused_ops, 3);
	pc_fabric_get_stats(W->f[0], &st);
	CU_ASSERT_EQUAL(st.op_errors, 6);
	CU_ASSERT_EQUAL(st.skipped_ops, 1);
	pc_fabric_dereg(W->f[1], &ro);
	world_down(W);
}

struct fault {
	int before, after_op;
};

static int fault_fn(void *arg, int when, struct pc_op *ops, size_t n)
{
	struct fault *f = arg;

	if (when == PC_FAULT_BEFORE)
		return f->before;
	if (f->after_op >= 0 && (size_t)f->after_op < n)
		ops[f->after_op].status = -EIO;
	return 0;
}

/* map() answers only in a shared world, with an op's checks; a faulted fabric maps
 * nothing. */
static void test_inproc_map(void)
{
	struct world *W = world_up();
	const unsigned rw = PC_ACCESS_REMOTE_READ | PC_ACCESS_REMOTE_WRITE;
	struct fault flt = { .before = 0, .after_op = -1 };
	struct pc_region ro;
	void *p = NULL;

	CU_ASSERT_FALSE(W->f[0]->maps);
	CU_ASSERT_EQUAL(pc_fabric_map(W->f[0], 1, 0, W->r[1].key, addr(W, 1, 0), 64, rw, &p),
			-EOPNOTSUPP);
	world_down(W);
	W = world_up_shared(true);
	ro = (struct pc_region){ .addr = W->mem[1] + 4096, .len = 4096, .access = PC_ACCESS_REMOTE_READ };
	CU_ASSERT_EQUAL_FATAL(pc_fabric_reg(W->f[1], &ro), 0);
	CU_ASSERT(W->f[0]->maps);
	CU_ASSERT_EQUAL(pc_fabric_map(W->f[0], 1, W->f[1]->incarnation, W->r[1].key, addr(W, 1, 128),
				      64, rw, &p), 0);
	CU_ASSERT_PTR_EQUAL(p, W->mem[1] + 128);
	CU_ASSERT_EQUAL(pc_fabric_map(W->f[0], 1, 0, W->r[1].key, addr(W, 1, MEM - 32), 64, rw, &p),
			-EFAULT);
	CU_ASSERT_EQUAL(pc_fabric_map(W->f[0], 1, 0, W->r[1].key + 1, addr(W, 1, 0), 8, rw, &p),
			-ENOKEY);
	CU_ASSERT_EQUAL(pc_fabric_map(W->f[0], 1, 0, ro.key, addr(W, 1, 4096), 8, rw, &p), -EACCES);
	CU_ASSERT_EQUAL(pc_fabric_map(W->f[0], 1, 0, ro.key, addr(W, 1, 4096), 8,
				      PC_ACCESS_REMOTE_READ, &p), 0);
	CU_ASSERT_EQUAL(pc_fabric_map(W->f[0], 2, 12345, W->r[2].key, addr(W, 2, 0), 8, rw, &p),
			-ESTALE);
	inproc_world_set_down(W->w, 2, true);
	CU_ASSERT_EQUAL(pc_fabric_map(W->f[0], 2, 0, W->r[2].key, addr(W, 2, 0), 8, rw, &p),
			-ECONNREFUSED);
	inproc_world_set_down(W->w, 2, false);
	W->f[0]->fault = fault_fn;
	W->f[0]->fault_arg = &flt;
	CU_ASSERT_EQUAL(pc_fabric_map(W->f[0], 2, 0, W->r[2].key, addr(W, 2, 0), 8, rw, &p),
			-EOPNOTSUPP);
	W->f[0]->fault = NULL;
	pc_fabric_dereg(W->f[1], &ro);
	world_down(W);
}

static void test_inproc_rpc(void)
{
	struct world *W = world_up();
	struct pc_rpc rpcs[3] = {
		{ .peer = 1, .opcode = 7, .req = "hello", .req_len = 5 },
		{ .peer = 2, .opcode = 99, .req = "x", .req_len = 1 },
		{ .peer = 0, .opcode = 8, .req = "self", .req_len = 4 },
	};

	CU_ASSERT_EQUAL(pc_fabric_call(W->f[0], rpcs, 3), 0);
	CU_ASSERT_EQUAL(rpcs[0].status, 0);
	CU_ASSERT_EQUAL(rpcs[0].resp.len, strlen("from 0 op 7: hello"));
	CU_ASSERT_EQUAL(memcmp(rpcs[0].resp.data, "from 0 op 7: hello", rpcs[0].resp.len), 0);
	CU_ASSERT_EQUAL(rpcs[1].status, -EPROTO);
	CU_ASSERT_EQUAL(rpcs[2].status, 0);
	CU_ASSERT_EQUAL(W->calls, 3);
	for (int i = 0; i < 3; i++)
		pc_msg_free(&rpcs[i].resp);
	world_down(W);
}

static void test_fault_hook(void)
{
	struct world *W = world_up();
	struct fault flt = { .before = -EIO, .after_op = -1 };
	uint8_t wr[8] = { 9, 9, 9, 9, 9, 9, 9, 9 }, rd[8];
	struct pc_op ops[2] = {
		{ .kind = PC_OP_WRITE, .peer = 1, .rkey = W->r[1].key, .raddr = addr(W, 1, 0), .local = wr, .len = 8 },
		{ .kind = PC_OP_READ, .peer = 2, .rkey = W->r[2].key, .raddr = addr(W, 2, 0), .local = rd, .len = 8 },
	};

	W->f[0]->fault = fault_fn;
	W->f[0]->fault_arg = &flt;
	CU_ASSERT_EQUAL(pc_fabric_post(W->f[0], ops, 2), -EIO);
	CU_ASSERT_EQUAL(W->mem[1][0], 1);		/* nothing ran */
	flt.before = 0;
	flt.after_op = 1;
	CU_ASSERT_EQUAL(pc_fabric_post(W->f[0], ops, 2), 0);
	CU_ASSERT_EQUAL(ops[0].status, 0);
	CU_ASSERT_EQUAL(ops[1].status, -EIO);
	CU_ASSERT_EQUAL(W->mem[1][0], 9);
	world_down(W);
}

static void test_open_errors(void)
{
	struct world *W = world_up();
	struct pc_fabric_params p = { .size = sizeof(p), .topo = W->topo, .self = 1, .backend_arg = W->w };
	struct pc_fabric *f = NULL;

	CU_ASSERT_EQUAL(pc_fabric_open("nosuch", &p, &f), -ENOENT);
	CU_ASSERT_EQUAL(pc_fabric_open("inproc", &p, &f), -EADDRINUSE);
	p.self = 17;
	CU_ASSERT_EQUAL(pc_fabric_open("inproc", &p, &f), -EINVAL);
	p.self = PC_PEER_NONE;				/* a client that serves nothing */
	CU_ASSERT_EQUAL(pc_fabric_open("inproc", &p, &f), 0);
	CU_ASSERT_EQUAL(pc_fabric_serve(f, echo_handler, W), -EINVAL);
	pc_fabric_close(f);
	world_down(W);
}

/* A backend fills what it supports; every other slot, and every slot a table built
 * before it existed lacks, is a stub at open: never NULL (rdma-core's dummy ops). */
static int bare_open(struct pc_fabric *f, const struct pc_fabric_params *p)
{
	(void)f;
	(void)p;
	return 0;
}

static void test_ops_tables_complete(void)
{
	static const struct pc_fabric_ops bare = { .size = sizeof(bare), .name = "bare",
						   .obj_size = sizeof(struct pc_fabric),
						   .open = bare_open };
	/* a table from before map() existed: its size ends before the slot */
	static const struct pc_fabric_ops old = { .size = offsetof(struct pc_fabric_ops, map),
						  .name = "old", .obj_size = sizeof(struct pc_fabric),
						  .open = bare_open };
	struct pc_topology *t = NULL;
	char err[PC_ERR_MAX];
	const char *text = "nodes:\n  - {name: n0, address: 127.0.0.1, port: 9}\n";
	struct pc_fabric_params p = { .size = sizeof(p), .self = PC_PEER_NONE, .env = pc_env_posix() };
	struct pc_region r = { .addr = err, .len = sizeof(err) };
	struct pc_op op = { .kind = PC_OP_READ };
	struct pc_rpc rpc = { .peer = 0 };
	struct pc_fabric *f;
	void *addr;

	for (size_t i = 0; builtin_fabrics[i]; i++) {
		const struct pc_fabric_ops *o = builtin_fabrics[i];

		CU_ASSERT_EQUAL(o->size, sizeof(*o));
		CU_ASSERT(o->name && o->open && o->obj_size >= sizeof(struct pc_fabric));
		CU_ASSERT_PTR_EQUAL(pc_fabric_find(o->name), o);
	}
	for (size_t i = 0; builtin_storages[i]; i++) {
		const struct pc_storage_ops *o = builtin_storages[i];

		CU_ASSERT(o->name && o->open && o->obj_size >= sizeof(struct pc_storage));
	}
	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(text, strlen(text), "bare", &t, err, sizeof(err)), 0);
	p.topo = t;
	for (int k = 0; k < 2; k++) {
		CU_ASSERT_EQUAL_FATAL(pc_fabric_open_ops(k ? &old : &bare, &p, &f), 0);
		CU_ASSERT_EQUAL(pc_fabric_reg(f, &r), -EOPNOTSUPP);
		CU_ASSERT_EQUAL(pc_fabric_serve(f, NULL, NULL), -EOPNOTSUPP);
		CU_ASSERT_EQUAL(f->ops->post(f, &op, 1), -EOPNOTSUPP);
		CU_ASSERT_EQUAL(f->ops->call(f, &rpc, 1), -EOPNOTSUPP);
		CU_ASSERT_EQUAL(f->ops->map(f, 0, 0, 0, 0, 1, 0, &addr), -EOPNOTSUPP);
		CU_ASSERT_FALSE(f->maps);
		pc_fabric_dereg(f, &r);
		pc_fabric_close(f);
	}
	p.env = NULL;					/* by ops, the env is the caller's */
	CU_ASSERT_EQUAL(pc_fabric_open_ops(&bare, &p, &f), -EINVAL);
	p.env = pc_env_posix();
	p.size = 0;					/* the params carry their size */
	CU_ASSERT_EQUAL(pc_fabric_open_ops(&bare, &p, &f), -EINVAL);
	pc_topology_free(t);
}

static void test_msg(void)
{
	struct pc_msg m = { 0 };
	char big[5000];

	memset(big, 'x', sizeof(big));
	CU_ASSERT_EQUAL(pc_msg_append(&m, "ab", 2), 0);
	CU_ASSERT_EQUAL(pc_msg_append(&m, big, sizeof(big)), 0);
	CU_ASSERT_EQUAL(m.len, 5002);
	CU_ASSERT(m.cap >= 5002);
	CU_ASSERT_EQUAL(memcmp(m.data, "abxxx", 5), 0);
	pc_msg_free(&m);
	CU_ASSERT_PTR_NULL(m.data);
}

/* rxe runs verbs on a device it finds or makes: every slot but its name and open
 * is verbs'. */
static void test_rxe_is_verbs(void)
{
#if PC_BACKEND_RXE
	const struct pc_fabric_ops *v = &verbs_fabric_ops, *r = &rxe_fabric_ops;

	CU_ASSERT_STRING_EQUAL(r->name, "rxe");
	CU_ASSERT(r->open != v->open);
	CU_ASSERT(r->size == v->size && r->obj_size == v->obj_size);
	CU_ASSERT(r->close == v->close && r->reg == v->reg && r->dereg == v->dereg &&
		  r->serve == v->serve && r->post == v->post && r->call == v->call &&
		  r->map == v->map);
#else
	printf("\n  skipped: built without the rxe backend\n");
#endif
}

/* A sick peer is skipped for a backoff that doubles per failed try up to the cap,
 * and any answer that is not a sickness closes it at once. */
static void test_peer_backoff(void)
{
	struct world *W = world_up();
	struct pc_fabric_peers *p = peer_backoff_create(3, 100, 350);
	const uint64_t ms = 1000000;
	uint64_t t = 1000 * ms;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT(!peer_backoff_skips(p, 2, t));
	peer_backoff_note(p, W->f[0], 2, -ETIMEDOUT, t);
	CU_ASSERT_EQUAL(peer_backoff_skips(p, 2, t + 99 * ms), -ETIMEDOUT);
	CU_ASSERT(!peer_backoff_skips(p, 2, t + 100 * ms));
	CU_ASSERT(!peer_backoff_skips(p, 1, t));		/* other peers untouched */
	/* a note inside the skip changes nothing (one doubling per batch) */
	peer_backoff_note(p, W->f[0], 2, -ETIMEDOUT, t + 50 * ms);
	CU_ASSERT(!peer_backoff_skips(p, 2, t + 100 * ms));
	/* fails again once tried: 200 ms, then the 350 ms cap */
	t += 100 * ms;
	peer_backoff_note(p, W->f[0], 2, -ECONNREFUSED, t);
	CU_ASSERT_EQUAL(peer_backoff_skips(p, 2, t + 199 * ms), -ECONNREFUSED);
	CU_ASSERT(!peer_backoff_skips(p, 2, t + 200 * ms));
	t += 200 * ms;
	peer_backoff_note(p, W->f[0], 2, -ECONNRESET, t);
	CU_ASSERT(peer_backoff_skips(p, 2, t + 349 * ms));
	CU_ASSERT(!peer_backoff_skips(p, 2, t + 350 * ms));
	/* an answer about a key or a region is not a sick peer */
	CU_ASSERT(!peer_backoff_is_sick(-ENOKEY));
	CU_ASSERT(!peer_backoff_is_sick(-ESTALE));
	CU_ASSERT(!peer_backoff_is_sick(0));
	t += 350 * ms;
	peer_backoff_note(p, W->f[0], 2, -ENOKEY, t);
	peer_backoff_note(p, W->f[0], 2, -ETIMEDOUT, t + ms);
	CU_ASSERT(!peer_backoff_skips(p, 2, t + 101 * ms));	/* back to 100 ms */
	peer_backoff_destroy(p);
	/* base 0: never skips */
	p = peer_backoff_create(3, 0, 100);
	peer_backoff_note(p, W->f[0], 2, -ETIMEDOUT, t);
	CU_ASSERT(!peer_backoff_skips(p, 2, t));
	peer_backoff_destroy(p);
	world_down(W);
}

static CU_TestInfo tests[] = {
	{ "region table: key, bounds, rights, CAS alignment", test_region_checks },
	{ "in-process: one batch across peers", test_inproc_batch },
	{ "in-process: refused ops, stale and down peers", test_inproc_refusals },
	{ "a sick peer backs off, doubling to the cap", test_peer_backoff },
	{ "in-process: map() in a shared world, with an op's checks", test_inproc_map },
	{ "in-process: RPC", test_inproc_rpc },
	{ "fault hook before and after", test_fault_hook },
	{ "open errors and client-only endpoints", test_open_errors },
	{ "ops tables have no NULL slot", test_ops_tables_complete },
	{ "rxe's table is verbs' but for name and open", test_rxe_is_verbs },
	{ "message buffers", test_msg },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "fabric", NULL, NULL, NULL, NULL, tests })
