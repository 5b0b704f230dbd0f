/*
 * pc_fabric.h - what a fabric backend implements: registered regions, batched
 * one-sided READ/WRITE/CAS spanning many peers, and batched RPC.
 *
 * This is to peercache what driver.h is to rdma-core: the store (core/) is written
 * against these ops only, and tcp, verbs, rxe, the in-process test fabric and the
 * simulator each fill in one static const table. Every call is batched: one post()
 * carries the ops of a whole batch phase for all peers and returns when all of them
 * completed or failed, so a phase costs one round trip, not one per key.
 *
 * Peers are node indices in the topology. Addresses are (peer, region key, remote
 * address); a backend checks each op against the target's region table (key, bounds,
 * access) before memory is touched.
 *
 * Not for: placement, validation or retries. A failed op is reported in its status;
 * what it means for a key is the core's business.
 */
#ifndef PC_FABRIC_H
#define PC_FABRIC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_api.h>

#include <peercache/pc_env.h>
#include <peercache/pc_topology.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PC_FABRIC_MAX_RAILS 8		/* rails per node a fabric counts (PC_MAX_RAILS) */
#define PC_PEER_NONE UINT32_MAX		/* a client that serves nothing */
#define PC_PEER_TOOL (UINT32_MAX - 1)	/* a tool that reached an address (PC_FABRIC_ANY_NODE):
					 * it may ask for views and drain or join the node
					 * it reached, nothing else */

enum pc_access {
	PC_ACCESS_REMOTE_READ = 1u << 0,
	PC_ACCESS_REMOTE_WRITE = 1u << 1,
	PC_ACCESS_REMOTE_ATOMIC = 1u << 2,
};

/* A registered memory region. The caller fills addr/len/access; reg() sets key
 * (what peers name it by) and handle (backend-private, e.g. an ibv_mr). */
struct pc_region {
	void *addr;
	size_t len;
	unsigned access;
	uint32_t key;
	void *handle;
};

enum pc_op_kind { PC_OP_READ = 1, PC_OP_WRITE = 2, PC_OP_CAS = 3 };

/* One one-sided operation. READ copies len bytes of the peer's memory to local;
 * WRITE copies local to the peer; CAS compares the peer's 8 aligned bytes with
 * compare, swaps in swap when equal, and always stores the old value in *local.
 * A READ or WRITE may scatter/gather two pieces: the first head_len bytes of the
 * remote range to/from head, the next len bytes to/from local (a slot's header into
 * a small buffer, its payload straight into the caller's page, in one op). */
struct pc_op {
	uint8_t kind;
	uint32_t peer;
	uint64_t peer_inc;		/* peer incarnation the address came from; 0 = any */
	uint32_t rkey;
	uint64_t raddr;
	void *local;
	uint32_t len;
	void *head;			/* READ/WRITE: optional first piece */
	uint32_t head_len;
	uint32_t virt_len;		/* payload-free simulations: payload bytes the op
					 * stands for but does not move (timing only) */
	const struct pc_region *lreg;	/* region holding local, or NULL (backend copes) */
	uint64_t compare, swap;
	int status;			/* out: 0 or -errno (-ESTALE: peer restarted) */
	/* Optional, READs only: the backend calls landed(landed_arg, op) once all of
	 * this op's bytes are in head and local and the op succeeded, on the thread
	 * inside post(), before post() returns, so that the caller works on them while
	 * the batch's other ops are still moving: a backend that copies the bytes in
	 * itself (tcp) as it copies them (they are in cache), a NIC's (verbs) as it
	 * polls the op's completion. The op it passes may be a copy. A backend that
	 * does not call it (the simulator's, which moves no bytes in time) leaves that
	 * work to the caller after post(). */
	void (*landed)(void *landed_arg, const struct pc_op *op);
	void *landed_arg;
	/* Optional, READs with landed only: arrived(landed_arg, op, upto) says that
	 * head and local[0..upto) are in (0 < upto < len), upto growing call by call,
	 * so that the caller can work on a large payload in pieces while each is in
	 * cache; landed follows as before, on the same thread and with the same op.
	 * A backend that does not take the bytes in pieces itself (verbs, the
	 * simulator's, tcp over a connection that does not pace) never calls it. */
	void (*arrived)(void *landed_arg, const struct pc_op *op, size_t upto);
	/* Optional, WRITEs only: prepare(prepare_arg, op) fills in the last of the
	 * bytes the op sends (a slot header's checksum of the payload), once, before
	 * any of them is read, on the thread inside post(). A backend that sends the
	 * bytes itself (tcp, pc_fabric.prepares) calls it just before the op's bytes
	 * go, so the payload the checksum read is still in cache when it is sent and
	 * the peer takes in earlier ops meanwhile; pc_fabric_post calls the others'
	 * before the post. The op it passes may be a copy: prepare writes through
	 * head and local, never the op's fields. */
	void (*prepare)(void *prepare_arg, const struct pc_op *op);
	void *prepare_arg;
};

/* A growable message buffer. The backend owns the ones it hands to handlers; on
 * the client side the caller frees data with free(). */
struct pc_msg {
	void *data;
	size_t len, cap;
	uint64_t virt_len;		/* payload-free simulations: payload bytes the
					 * message stands for, not in data (the
					 * simulator's fabric moves them in time) */
};

/* Make room for more bytes after len. 0 or -ENOMEM. */
PC_API int pc_msg_reserve(struct pc_msg *m, size_t more);
/* Append n bytes. 0 or -ENOMEM. */
PC_API int pc_msg_append(struct pc_msg *m, const void *p, size_t n);
PC_API void pc_msg_free(struct pc_msg *m);

struct pc_rpc {
	uint32_t peer;
	uint16_t opcode;
	const void *req;
	size_t req_len;
	struct pc_msg resp;		/* out: the response body (caller frees resp.data) */
	int status;			/* out: 0, the handler's -errno, or a transport -errno */
	uint32_t timeout_ms;		/* 0: the fabric's; a phase waits for the longest */
	uint32_t flags;			/* PC_RPC_PROBE */
};

/* A probe (a membership heartbeat) goes to its peer even while the peer backs off,
 * and its failure does not make the peer back off: the data path's own failures
 * decide that. */
#define PC_RPC_PROBE 1u

/* Serves one request. Runs on a backend worker thread (tcp/verbs: several at once,
 * while one-sided ops keep being served), in the caller's thread (in-process) or on
 * a simulated process. It may call storage ops and post one-sided ops, including to
 * the caller (a node that pulls staged data). from is the caller's node index or
 * PC_PEER_NONE. Returns 0 or -errno, which the caller sees as pc_rpc.status. */
typedef int pc_rpc_handler(void *arg, uint32_t from, uint16_t opcode,
			   const void *req, size_t req_len, struct pc_msg *resp);

struct pc_fabric_params {
	uint32_t size;			/* sizeof(struct pc_fabric_params) */
	const struct pc_topology *topo;
	uint32_t self;			/* node index, or PC_PEER_NONE */
	uint32_t timeout_ms;		/* per phase; 0 = topology's store.timeout_ms */
	struct pc_env *env;		/* by name: NULL for the posix env; by ops: required */
	void *backend_arg;		/* backend-specific (in-process world, simulator) */
	uint32_t flags;			/* PC_FABRIC_ANY_NODE */
};

/* The topology's nodes are addresses only: whichever node answers at one is taken
 * (a tool that knows an address of the cluster, not which node it is). */
#define PC_FABRIC_ANY_NODE 1u

struct pc_fabric;

struct pc_fabric_ops {
	uint32_t size;			/* sizeof(struct pc_fabric_ops) the backend was built with */
	const char *name;
	size_t obj_size;		/* bytes the core allocates for the backend's object */
	/* Set up; on error nothing is left to close. */
	int (*open)(struct pc_fabric *f, const struct pc_fabric_params *p);
	void (*close)(struct pc_fabric *f);
	int (*reg)(struct pc_fabric *f, struct pc_region *r);
	void (*dereg)(struct pc_fabric *f, struct pc_region *r);
	/* Start answering peers: one-sided ops on registered regions and RPCs to h.
	 * h NULL stops serving (peers then see this node as down). */
	int (*serve)(struct pc_fabric *f, pc_rpc_handler *h, void *arg);
	/* Run every op; returns 0 when each was attempted (see statuses), or -errno.
	 * Ops within one post have no defined order among themselves. */
	int (*post)(struct pc_fabric *f, struct pc_op *ops, size_t n);
	/* Run every RPC concurrently; 0 when each was attempted, or -errno. */
	int (*call)(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n);
	/* Direct access, for fabrics whose peers share this address space (the
	 * in-process world; the simulator when it models no time): the address of
	 * [raddr, raddr + len) in peer's region rkey, checked as an op with that access
	 * would be (incarnation, key, bounds, rights), which the caller then reads and
	 * writes as its own memory, under the slot seqlock. Only a backend that sets
	 * pc_fabric.maps at open answers other than -EOPNOTSUPP. The address stays good
	 * while the peer keeps the region, which such backends guarantee for as long as
	 * the caller's batch runs. Tables built before this slot existed are smaller
	 * (size) and map nothing. */
	int (*map)(struct pc_fabric *f, uint32_t peer, uint64_t peer_inc, uint32_t rkey,
		   uint64_t raddr, uint64_t len, unsigned access, void **addr);
};

/* Counters. Client side ones are kept by the wrappers, server side ones by backends. */
struct pc_fabric_stats {
	uint64_t post_phases;		/* post() calls that reached at least one peer */
	uint64_t rpc_phases;
	uint64_t ops_read, ops_write, ops_cas;
	uint64_t bytes_read, bytes_written;
	uint64_t op_errors;
	uint64_t rpcs;
	uint64_t served_ops;		/* one-sided ops executed for peers */
	uint64_t refused_ops;		/* region key, bounds or rights violations */
	uint64_t bad_frames;		/* malformed frames; each closed its connection */
	uint64_t served_rpcs;
	uint64_t reconnects;
	uint64_t skipped_ops;		/* failed at once: their peer is backing off */
	uint64_t skipped_rpcs;
	/* server side: peers refused or cut off (docs/security.md); each is logged at
	 * warn, at most once per 10 s per kind */
	uint64_t auth_refused;		/* handshakes refused: secret, identity, fingerprint */
	uint64_t conns_refused;		/* connections over store.max_connections */
	uint64_t idle_closed;		/* no complete frame for store.idle_timeout_s */
	uint64_t oversize_refused;	/* requests larger than their opcode allows */
	uint64_t buffer_refused;	/* requests over store.max_buffered_bytes in all */
	uint64_t accept_backoffs;	/* out of file descriptors: accepting paused */
	/* Serving side, kept by backends that execute one-sided ops themselves (tcp,
	 * in-process; an RDMA NIC serves them in hardware and counts none of these).
	 * served_ops is the sum of the three kinds; bytes are what the ops moved on
	 * this node (head and payload; 8 per CAS). */
	uint64_t served_reads, served_writes, served_cas;
	uint64_t served_read_bytes, served_write_bytes, served_cas_bytes;
	/* refused_ops by reason: unknown region key, out of bounds, missing access
	 * right, malformed op (a CAS that is not 8 aligned bytes) */
	uint64_t refused_key, refused_bounds, refused_rights, refused_malformed;
	/* connections peers opened to this node (backends with connections) */
	uint64_t conns_accepted, conns_closed;
	/* RDMA fabrics (verbs, rxe), client side. rail_bytes: what the ops that
	 * completed moved over each of this node's rails (head and payload; 8 per
	 * CAS). bounce: ops whose local bytes (more than 256: a page, not a slot
	 * header or an index tag) were copied through a registered staging buffer
	 * because they did not lie in registered memory, and the bytes copied (0 for
	 * pages in pc_store_register'ed buffers). qp_errors: queue
	 * pairs torn down after a failed op (peer gone, QP in error, retries
	 * exceeded, the phase deadline); qp_timeouts: of those failures, transport
	 * or RNR retries exceeded. rail_changes: rails seen going down or back up. */
	uint64_t rail_bytes[PC_FABRIC_MAX_RAILS];
	uint64_t bounce_copies, bounce_bytes;
	uint64_t qp_errors, qp_timeouts;
	uint64_t rail_changes;
};

struct pc_fabric_peers;

/* The base every fabric backend embeds first. */
struct pc_fabric {
	const struct pc_fabric_ops *ops;	/* the backend's, stubs where it has none */
	struct pc_fabric_ops full_ops;	/* what ops points to */
	struct pc_env *env;
	const struct pc_topology *topo;
	uint32_t self;
	uint32_t nr_peers;
	uint32_t timeout_ms;
	uint64_t incarnation;		/* random per open: peers see a restart by it */
	uint64_t quick_rpcs;		/* bit o: RPC opcode o (< 64) never blocks, so a
					 * backend may answer it on its event thread
					 * (set by the serving side before serve) */
	bool any_node;			/* PC_FABRIC_ANY_NODE */
	/* The largest request body RPC opcode takes, or 0 for one this node does not
	 * serve (set by the serving side before serve; NULL: any up to the backend's
	 * own limit), called with rpc_max_arg. A backend refuses a larger request
	 * before buffering its body. */
	size_t (*rpc_max_req)(void *arg, uint16_t opcode);
	void *rpc_max_arg;
	bool maps;			/* map() gives peers' memory (set by the backend) */
	bool prepares;			/* post() calls pc_op.prepare itself (set by the
					 * backend); else pc_fabric_post does, before it */
	const uint64_t *map_epoch;	/* with maps: a counter the backend advances whenever
					 * an address map() gave may have stopped being good
					 * (a peer closed, went down or dropped a region); an
					 * answer stands while it shows the value it showed
					 * before the call */
	struct pc_fabric_stats stats;
	struct pc_fabric_peers *peers;	/* the wrappers' per-peer backoff (peer_backoff.h) */
};

/* Bytes an op moves on the remote side. */
static inline uint64_t pc_op_bytes(const struct pc_op *op)
{
	return (uint64_t)op->head_len + op->len;
}

/* Run op's prepare, if any, and clear it: whoever sends the op next (a fabric
 * stacked on this one, a fault shim) does not run it again. */
static inline void pc_op_prepare(struct pc_op *op)
{
	if (op->prepare && op->kind == PC_OP_WRITE)
		op->prepare(op->prepare_arg, op);
	op->prepare = NULL;
}

static inline void pc_stat_add(uint64_t *c, uint64_t v)
{
	__atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

/* Open a fabric of the built-in backend called name ("tcp", "verbs", "rxe",
 * "inproc"). Slots the backend leaves NULL (or that its table predates) are stubs
 * answering -EOPNOTSUPP. -ENOENT: no such backend in this build. */
PC_API int pc_fabric_open(const char *name, const struct pc_fabric_params *p, struct pc_fabric **out);
/* The same with an ops table the caller holds (the simulator, out-of-tree backends). */
PC_API int pc_fabric_open_ops(const struct pc_fabric_ops *ops, const struct pc_fabric_params *p,
		       struct pc_fabric **out);
PC_API void pc_fabric_close(struct pc_fabric *f);

/* The ops table of a built-in backend, or NULL. */
PC_API const struct pc_fabric_ops *pc_fabric_find(const char *name);

PC_API int pc_fabric_post(struct pc_fabric *f, struct pc_op *ops, size_t n);
PC_API int pc_fabric_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n);

static inline int pc_fabric_reg(struct pc_fabric *f, struct pc_region *r)
{
	return f->ops->reg(f, r);
}

static inline void pc_fabric_dereg(struct pc_fabric *f, struct pc_region *r)
{
	f->ops->dereg(f, r);
}

static inline int pc_fabric_serve(struct pc_fabric *f, pc_rpc_handler *h, void *arg)
{
	return f->ops->serve(f, h, arg);
}

/* See pc_fabric_ops.map. A fault shim (tests/fault) clears maps, so that every
 * access stays an op its faults can hit. */
static inline int pc_fabric_map(struct pc_fabric *f, uint32_t peer, uint64_t peer_inc,
				uint32_t rkey, uint64_t raddr, uint64_t len, unsigned access,
				void **addr)
{
	if (!f->maps)
		return -EOPNOTSUPP;
	return f->ops->map(f, peer, peer_inc, rkey, raddr, len, access, addr);
}

/* A snapshot of the counters. */
PC_API void pc_fabric_get_stats(const struct pc_fabric *f, struct pc_fabric_stats *out);

#ifdef __cplusplus
}
#endif
#endif
