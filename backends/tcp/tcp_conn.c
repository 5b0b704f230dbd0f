/*
 * tcp_conn.c - the client's connections to each peer: a pool of idle ones per peer
 * (taken by a post or call, given back after), the peer's address resolved once,
 * and non-blocking connects that the caller's flight finishes.
 *
 * Not for: what goes over a connection (tcp_client.c: the handshake, requests).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config/topology.h"
#include "tcp_conn.h"
#include "tcp_sock.h"

/* What a client knows about a peer. */
struct tcp_peer {
	pthread_mutex_t lock;
	struct tcp_conn *idle;		/* connections not in use */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	bool resolved;
};

int tcp_peers_init(struct tcp_fabric *tf)
{
	tf->peers = calloc(tf->base.nr_peers, sizeof(*tf->peers));
	if (!tf->peers)
		return -ENOMEM;
	for (uint32_t i = 0; i < tf->base.nr_peers; i++)
		pthread_mutex_init(&tf->peers[i].lock, NULL);
	return 0;
}

void tcp_conn_drop(struct tcp_conn *c)
{
	if (c) {
		close(c->fd);
		free(c);
	}
}

void tcp_peers_fini(struct tcp_fabric *tf)
{
	for (uint32_t i = 0; i < tf->base.nr_peers; i++) {
		struct tcp_peer *p = &tf->peers[i];

		while (p->idle) {
			struct tcp_conn *c = p->idle;

			p->idle = c->next;
			tcp_conn_drop(c);
		}
		pthread_mutex_destroy(&p->lock);
	}
	free(tf->peers);
}

/* Start a non-blocking connect; the flight finishes it and says HELLO. */
static int conn_start(struct tcp_fabric *tf, uint32_t peer, struct tcp_conn **out)
{
	const struct pc_node *node = &tf->base.topo->nodes[peer];
	struct tcp_peer *p = &tf->peers[peer];
	struct tcp_conn *c;
	int ret, fd;

	/* posts and calls of several threads may start connections to the peer at
	 * once: the first resolution is published under the lock, read after the flag */
	if (!__atomic_load_n(&p->resolved, __ATOMIC_ACQUIRE)) {
		struct sockaddr_storage addr;
		socklen_t addrlen;

		ret = tcp_resolve(node->address, node->port, &addr, &addrlen);
		if (ret)
			return ret;
		pthread_mutex_lock(&p->lock);
		if (!p->resolved) {
			p->addr = addr;
			p->addrlen = addrlen;
			__atomic_store_n(&p->resolved, true, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&p->lock);
	}
	ret = tcp_connect_start(&p->addr, p->addrlen, tf->base.topo->store.tcp_congestion, &fd);
	if (ret)
		return ret;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->paced = tcp_paces(fd);
	*out = c;
	return 0;
}

/* An idle connection whose peer went away reads as EOF or an error: drop it. */
static bool conn_alive(struct tcp_conn *c)
{
	char b;
	ssize_t r = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

int tcp_conn_get(struct tcp_fabric *tf, uint32_t peer, struct tcp_conn **out, bool *fresh)
{
	struct tcp_peer *p = &tf->peers[peer];
	uint64_t now = pc_env_now(tf->base.env);
	struct tcp_conn *c;

	pthread_mutex_lock(&p->lock);
	while ((c = p->idle)) {
		p->idle = c->next;
		/* the server closes connections idle for store.idle_timeout_s: one idle
		 * half as long is not taken, lest the close cross the request */
		if ((!tf->idle_ns || now - c->idle_since < tf->idle_ns / 2) && conn_alive(c))
			break;
		tcp_conn_drop(c);
	}
	pthread_mutex_unlock(&p->lock);
	*fresh = !c;
	if (c) {
		*out = c;
		return 0;
	}
	pc_stat_add(&tf->base.stats.reconnects, 1);
	return conn_start(tf, peer, out);
}

void tcp_conn_put(struct tcp_fabric *tf, uint32_t peer, struct tcp_conn *c)
{
	struct tcp_peer *p = &tf->peers[peer];

	c->idle_since = pc_env_now(tf->base.env);
	pthread_mutex_lock(&p->lock);
	c->next = p->idle;
	p->idle = c;
	pthread_mutex_unlock(&p->lock);
}
