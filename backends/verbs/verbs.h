/*
 * verbs.h - the ibverbs fabric's objects. One-sided READ/WRITE/CAS go over RC queue
 * pairs (one per peer and rail); RPC and the exchange of QP addressing (GID, QPN,
 * PSN, region keys) go over an embedded tcp fabric on the same node address, which
 * also carries peers' incarnations and restarts.
 *
 *   verbs_dev.c     devices, protection domains, GIDs, memory registration
 *   verbs_events.c  the devices' async events: rails going down and coming back
 *   verbs_conn.c    queue pairs and the connect RPC (both sides)
 *   verbs_post.c    batched posting across peers and rails, completions, errors
 *   verbs.c         open/close and the ops table (VERBS_FABRIC_OPS, below)
 *
 * Not for: the core, which sees only pc_fabric.
 */
#ifndef PC_VERBS_H
#define PC_VERBS_H

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>

#include <peercache/pc_fabric.h>

#include "config/topology.h"
#include "io/region.h"

#define VERBS_RPC_CONNECT 0xff01	/* RPC opcodes from 0xff00 belong to backends */
#define VERBS_MAX_REGIONS 32
#define VERBS_SQ_DEPTH 1024		/* send queue entries per QP */
#define VERBS_SIGNAL_EVERY 64		/* an unsignaled run is at most this long */

/* Limits a backend built on verbs may lower (rxe does). */
struct verbs_quirks {
	const char *name;
	uint32_t max_rd_atomic;		/* outstanding READ/atomic per QP */
	enum ibv_mtu max_mtu;
};

/* One rail of this process: a device port. gid_index, gid, mtu and up change when
 * the port goes down and comes back: read and written under verbs_fabric.rail_lock. */
struct verbs_dev {
	char name[IBV_SYSFS_NAME_MAX];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	char netdev[32];		/* the GID's Ethernet device ("" on InfiniBand) */
	uint16_t lid;
	enum ibv_mtu mtu;
	bool up;			/* port ACTIVE */
};

/* A registered region: one MR per rail; peers name it by its region-table key. */
struct verbs_mr {
	uint32_t key;
	unsigned access;		/* PC_ACCESS_* it was registered for */
	struct ibv_mr *mr[PC_MAX_RAILS];
};

/* A peer's region as the connect answer described it. */
struct verbs_rregion {
	uint32_t key;
	uint64_t addr, len;
	uint32_t rkey[PC_MAX_RAILS];
};

/* One side of an RC connection on one rail. */
struct verbs_qp {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint32_t psn;
};

/* The client side of a connection to one peer, over the rails both ends have up.
 * Rail r here is connected to rail r of the peer; rails is the set carrying ops. */
struct verbs_conn {
	pthread_mutex_t lock;		/* held for a whole post to this peer */
	bool up;
	uint64_t inc;			/* the peer's incarnation */
	uint32_t nr_rails;		/* rails both ends have (up or not) */
	uint32_t rails;			/* bit r: rail r has a connected QP */
	uint32_t local_up;		/* this node's up rails when it connected */
	uint32_t rails_gen;		/* verbs_fabric.rails_gen then */
	uint64_t retry_rails_at;	/* fewer rails than both have: try all again then */
	struct verbs_qp q[PC_MAX_RAILS];
	struct verbs_rregion rr[VERBS_MAX_REGIONS];
	uint32_t nr_rr;
	uint8_t *bounce;		/* registered staging for callers' buffers */
	size_t bounce_len;
	struct ibv_mr *bounce_mr[PC_MAX_RAILS];
	uint64_t down_until;		/* after a failed connect, fail fast until then */
	int down_err;
};

/* QPs this node accepted for its peers (server side). */
struct verbs_accepted {
	uint32_t from;
	uint64_t from_inc;
	uint32_t nr_rails;
	struct verbs_qp q[PC_MAX_RAILS];
	struct verbs_accepted *next;
};

struct verbs_fabric {
	struct pc_fabric base;
	const struct verbs_quirks *quirks;
	struct pc_fabric *ctl;		/* the embedded tcp fabric */
	uint32_t nr_rails;
	struct verbs_dev dev[PC_MAX_RAILS];
	char route_src[INET_ADDRSTRLEN];	/* a client's: its address towards the nodes */
	pthread_mutex_t rail_lock;	/* the rails' changing state (struct verbs_dev) */
	uint32_t rails_up;		/* bit r: rail r's port is ACTIVE (atomic) */
	uint32_t rails_gen;		/* advances when a rail's state or GID changes */
	pthread_t events;		/* verbs_events.c */
	int events_stop;		/* eventfd that ends it, or -1 */
	struct region_table regions;	/* keys and bounds, for the connect answer */
	pthread_mutex_t mr_lock;
	struct verbs_mr mrs[VERBS_MAX_REGIONS];
	uint32_t nr_mrs;
	struct verbs_conn *conns;	/* per peer */
	pthread_mutex_t acc_lock;
	struct verbs_accepted *accepted;
	pc_rpc_handler *handler;
	void *handler_arg;
};

static inline struct verbs_fabric *to_verbs(struct pc_fabric *f)
{
	return (struct verbs_fabric *)f;
}

/* verbs_dev.c */
int verbs_devs_open(struct verbs_fabric *vf, const char *want_device);
/* The local IPv4 address the kernel sends from to reach the topology's first node
 * with an IPv4 address (a client's address on the cluster's network), into out;
 * false without one. */
bool verbs_route_source(const struct pc_topology *t, char *out, size_t len);
void verbs_devs_close(struct verbs_fabric *vf);
/* Query rail r's port again (state, MTU, GID: a port that came back may have its
 * address at another GID index); with rail_lock held. Returns whether it is up. */
bool verbs_rail_refresh(struct verbs_fabric *vf, uint32_t r);
/* One line per rail: device, port, netdev, GID and its type, MTU, state. */
void verbs_rails_log(struct verbs_fabric *vf);
unsigned verbs_access(unsigned pc_access);
int verbs_mr_add(struct verbs_fabric *vf, struct pc_region *r);
void verbs_mr_del(struct verbs_fabric *vf, struct pc_region *r);
/* The lkey of a region this fabric registered, on a rail, or 0. */
uint32_t verbs_lkey(struct verbs_fabric *vf, const struct pc_region *r, uint32_t rail);

/* verbs_events.c: a thread per fabric that turns port events into rails_up. */
int verbs_events_start(struct verbs_fabric *vf);
void verbs_events_stop(struct verbs_fabric *vf);

/* verbs_conn.c */
int verbs_qp_create(struct verbs_fabric *vf, uint32_t rail, struct verbs_qp *q);
void verbs_qp_destroy(struct verbs_qp *q);
int verbs_connect_peers(struct verbs_fabric *vf, const uint8_t *want, int *err);
void verbs_conn_down(struct verbs_fabric *vf, struct verbs_conn *c);
/* The control fabric's request limits: CONNECT's, and the store's for the rest. */
size_t verbs_ctl_max_req(void *arg, uint16_t opcode);
int verbs_serve_rpc(void *arg, uint32_t from, uint16_t opcode, const void *req, size_t len,
		    struct pc_msg *resp);
void verbs_accepted_free(struct verbs_fabric *vf);

/* verbs_post.c */
int verbs_post(struct pc_fabric *f, struct pc_op *ops, size_t n);

/* verbs.c: open a verbs fabric with quirks on a device (NULL: the first that
 * works), the entry of a backend built on verbs (rxe) */
int verbs_open_with(struct pc_fabric *f, const struct pc_fabric_params *p,
		    const struct verbs_quirks *q, const char *device);
void verbs_close(struct pc_fabric *f);
int verbs_reg(struct pc_fabric *f, struct pc_region *r);
void verbs_dereg(struct pc_fabric *f, struct pc_region *r);
int verbs_serve(struct pc_fabric *f, pc_rpc_handler *h, void *arg);
int verbs_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n);

/*
 * The verbs ops table under another name and open: the one place its slots are
 * listed. verbs.c makes verbs_fabric_ops from it, and a backend that only finds
 * or prepares its device before running verbs (rxe) makes its own, as a static
 * const table like any other:
 *   const struct pc_fabric_ops rxe_fabric_ops = VERBS_FABRIC_OPS("rxe", rxe_open);
 */
#define VERBS_FABRIC_OPS(NAME, OPEN)                                   \
	{                                                              \
		.size = sizeof(struct pc_fabric_ops),                  \
		.name = (NAME),                                        \
		.obj_size = sizeof(struct verbs_fabric),               \
		.open = (OPEN),                                        \
		.close = verbs_close,                                  \
		.reg = verbs_reg,                                      \
		.dereg = verbs_dereg,                                  \
		.serve = verbs_serve,                                  \
		.post = verbs_post,                                    \
		.call = verbs_call,                                    \
	}

#endif
