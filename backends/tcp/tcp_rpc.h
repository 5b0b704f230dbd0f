/*
 * tcp_rpc.h - the tcp server's RPC workers: a queue and a few threads that run
 * the fabric's RPC handler, so that a handler may take its time (disk I/O) or pull
 * from its caller with one-sided READs while the event loop goes on serving
 * one-sided ops. A finished job goes on a done list and done_fd turns readable;
 * the event loop takes the list and writes the responses.
 *
 * Not for: sockets, frames or connections: a job is a request and its answer, and
 * whoever submits it owns it.
 */
#ifndef PC_TCP_RPC_H
#define PC_TCP_RPC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_fabric.h>

#define TCP_RPC_WORKERS 8		/* RPC handlers that may run at once */
/* ... of them for one calling node: a handler that pulls from its caller waits on
 * it, so a caller that stalls holds at most this many workers (the timeout each)
 * and the others go on serving everyone else. Clients' requests never pull. */
#define TCP_RPC_PER_NODE 2
/* ... and for the clients and tools together, whose number nothing bounds: slow
 * requests from many of them (promotions from disk) leave the rest to the nodes. */
#define TCP_RPC_NON_NODES (TCP_RPC_WORKERS / 2)

/* One request and, once run, its answer. The holder owns resp (pc_msg_free). */
struct tcp_rpc_job {
	uint32_t from;			/* the caller's node, or PC_PEER_NONE */
	uint16_t opcode;
	const void *req;		/* must stay valid until the job is done */
	size_t req_len;
	struct pc_msg resp;		/* out: the handler's response body */
	int32_t status;			/* out: the handler's result */
	struct tcp_rpc_job *next;	/* on the queue or the done list */
};

struct tcp_rpc_pool {
	pc_rpc_handler *handler;
	void *handler_arg;
	uint64_t *served;		/* counted per job run */
	int done_fd;			/* an eventfd: readable when jobs are done */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct tcp_rpc_job *jobs, **jobs_tail, *done;
	uint8_t *busy;			/* per calling node, then one for all clients and
					 * tools: their jobs running now */
	uint32_t nr_nodes;
	bool stopping;
	pthread_t workers[TCP_RPC_WORKERS];
	int nr_workers;
};

/* Start the workers of p, which run h(arg) for callers among nr_nodes nodes (and
 * clients) and count each job in *served. 0 or -errno; on error nothing is left to
 * stop. */
int tcp_rpc_start(struct tcp_rpc_pool *p, pc_rpc_handler *h, void *arg, uint32_t nr_nodes,
		  uint64_t *served);

/* Stop the workers: a handler running now finishes, queued and done jobs are left
 * to their holders, done_fd is closed. */
void tcp_rpc_stop(struct tcp_rpc_pool *p);

/* Run j's handler on the calling thread (a request the handler answers without
 * blocking). */
void tcp_rpc_run(struct tcp_rpc_pool *p, struct tcp_rpc_job *j);

/* Queue j for a worker; it comes back from tcp_rpc_take_done once run. Jobs run in
 * order, except that one whose node has TCP_RPC_PER_NODE running waits for them. */
void tcp_rpc_submit(struct tcp_rpc_pool *p, struct tcp_rpc_job *j);

/* The jobs done since the last call, as a list on next (NULL if none); clears
 * done_fd. For the thread that watches done_fd. */
struct tcp_rpc_job *tcp_rpc_take_done(struct tcp_rpc_pool *p);

#endif
