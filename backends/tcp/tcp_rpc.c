/*
 * tcp_rpc.c - the tcp server's RPC workers (tcp_rpc.h): a FIFO of jobs, worker
 * threads that run the handler, and a done list signalled through an eventfd.
 *
 * Not for: the response on the wire; the event loop (tcp_server.c) writes it, so
 * that every socket is touched by one thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"
#include "tcp_rpc.h"

void tcp_rpc_run(struct tcp_rpc_pool *p, struct tcp_rpc_job *j)
{
	j->resp.len = 0;
	j->status = p->handler ? p->handler(p->handler_arg, j->from, j->opcode, j->req,
					    j->req_len, &j->resp) : -EOPNOTSUPP;
	pc_stat_add(p->served, 1);
}

void tcp_rpc_submit(struct tcp_rpc_pool *p, struct tcp_rpc_job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&p->lock);
	*p->jobs_tail = j;
	p->jobs_tail = &j->next;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* Whose share a job's caller draws on: its node's, or the clients' and tools'. */
static uint32_t share_of(const struct tcp_rpc_pool *p, const struct tcp_rpc_job *j)
{
	return j->from < p->nr_nodes ? j->from : p->nr_nodes;
}

static unsigned share_cap(const struct tcp_rpc_pool *p, uint32_t share)
{
	return share < p->nr_nodes ? TCP_RPC_PER_NODE : TCP_RPC_NON_NODES;
}

/* The first queued job whose caller is under its share of workers, taken off the
 * queue; NULL if none. Called with the lock held. */
static struct tcp_rpc_job *take_job(struct tcp_rpc_pool *p)
{
	for (struct tcp_rpc_job **jp = &p->jobs; *jp; jp = &(*jp)->next) {
		struct tcp_rpc_job *j = *jp;
		uint32_t sh = share_of(p, j);

		if (p->busy[sh] >= share_cap(p, sh))
			continue;
		*jp = j->next;
		if (!*jp)
			p->jobs_tail = jp;
		p->busy[sh]++;
		return j;
	}
	return NULL;
}

static void *worker(void *arg)
{
	struct tcp_rpc_pool *p = arg;
	uint64_t one = 1;

	pthread_setname_np(pthread_self(), "pc-tcp-rpc");
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct tcp_rpc_job *j = NULL;

		while (!p->stopping && !(j = take_job(p)))
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->stopping)
			break;
		pthread_mutex_unlock(&p->lock);

		tcp_rpc_run(p, j);

		pthread_mutex_lock(&p->lock);
		{
			uint32_t sh = share_of(p, j);

			if (p->busy[sh]-- == share_cap(p, sh))
				pthread_cond_broadcast(&p->cond);	/* its queued jobs may go now */
		}
		j->next = p->done;
		p->done = j;
		if (write(p->done_fd, &one, sizeof(one)) != sizeof(one))
			pc_err("tcp server: cannot wake the server thread: %s", strerror(errno));
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct tcp_rpc_job *tcp_rpc_take_done(struct tcp_rpc_pool *p)
{
	struct tcp_rpc_job *j;
	uint64_t v;

	if (read(p->done_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		pc_err("tcp server: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&p->lock);
	j = p->done;
	p->done = NULL;
	pthread_mutex_unlock(&p->lock);
	return j;
}

int tcp_rpc_start(struct tcp_rpc_pool *p, pc_rpc_handler *h, void *arg, uint32_t nr_nodes,
		  uint64_t *served)
{
	int ret = 0;

	*p = (struct tcp_rpc_pool){ .handler = h, .handler_arg = arg, .served = served,
				    .nr_nodes = nr_nodes };
	p->jobs_tail = &p->jobs;
	p->busy = calloc((size_t)nr_nodes + 1, sizeof(*p->busy));
	if (!p->busy)
		return -ENOMEM;
	p->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->done_fd < 0) {
		ret = -errno;
		free(p->busy);
		return ret;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	for (; p->nr_workers < TCP_RPC_WORKERS; p->nr_workers++) {
		ret = -pthread_create(&p->workers[p->nr_workers], NULL, worker, p);
		if (ret) {
			tcp_rpc_stop(p);
			return ret;
		}
	}
	return 0;
}

void tcp_rpc_stop(struct tcp_rpc_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	while (p->nr_workers)
		pthread_join(p->workers[--p->nr_workers], NULL);
	close(p->done_fd);
	free(p->busy);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
}
