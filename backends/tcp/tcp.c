/*
 * tcp.c - the tcp fabric's ops table: NIC-less one-sided ops and RPC over sockets,
 * the embedded default. Regions are checked in software (region.c); the server
 * starts on serve(); connections are made lazily on first use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/topology.h"
#include "tcp_client.h"
#include "tcp_conn.h"
#include "tcp_int.h"
#include "tcp_server.h"
#include "tcp_sock.h"

static int tcp_open(struct pc_fabric *f, const struct pc_fabric_params *p)
{
	struct tcp_fabric *tf = to_tcp(f);
	char err[PC_ERR_MAX];
	int ret;

	tf->poll_ns = (uint64_t)p->topo->store.tcp_poll_us * 1000;
	tf->idle_ns = (uint64_t)p->topo->store.idle_timeout_s * 1000000000ULL;
	ret = tcp_congestion_check(p->topo->store.tcp_congestion, err, sizeof(err));
	if (ret) {
		pc_err("%s", err);
		return ret;
	}
	ret = tcp_auth_load(p->topo, &tf->auth, err, sizeof(err));
	if (ret) {
		pc_err("%s", err);
		return ret;
	}
	ret = topology_placement_text(p->topo, tf->placement, sizeof(tf->placement));
	if (ret)
		goto err_auth;
	tf->placement_len = (uint32_t)strlen(tf->placement);
	tf->fingerprint = topology_fingerprint(p->topo);
	ret = region_table_init(&tf->regions);
	if (ret)
		goto err_auth;
	ret = tcp_peers_init(tf);
	if (ret)
		goto err_regions;
	f->prepares = true;	/* flight_tx prepares each WRITE as its bytes go */
	return 0;
err_regions:
	region_table_fini(&tf->regions);
err_auth:
	tcp_auth_clear(&tf->auth);
	return ret;
}

static void tcp_close(struct pc_fabric *f)
{
	struct tcp_fabric *tf = to_tcp(f);

	if (tf->server)
		tcp_server_stop(tf->server);
	tcp_peers_fini(tf);
	region_table_fini(&tf->regions);
	tcp_auth_clear(&tf->auth);
}

static int tcp_reg(struct pc_fabric *f, struct pc_region *r)
{
	return region_table_add(&to_tcp(f)->regions, r, pc_env_random(f->env));
}

static void tcp_dereg(struct pc_fabric *f, struct pc_region *r)
{
	struct tcp_fabric *tf = to_tcp(f);

	region_table_del(&tf->regions, r->key);
	if (tf->server)
		tcp_server_forget(tf->server, r->addr, r->len);
}

static int tcp_serve(struct pc_fabric *f, pc_rpc_handler *h, void *arg)
{
	struct tcp_fabric *tf = to_tcp(f);

	if (f->self == PC_PEER_NONE)
		return -EINVAL;
	if (!h) {
		if (tf->server)
			tcp_server_stop(tf->server);
		tf->server = NULL;
		return 0;
	}
	if (tf->server)
		return -EALREADY;
	return tcp_server_start(tf, h, arg, &tf->server);
}

const struct pc_fabric_ops tcp_fabric_ops = {
	.size = sizeof(struct pc_fabric_ops),
	.name = "tcp",
	.obj_size = sizeof(struct tcp_fabric),
	.open = tcp_open,
	.close = tcp_close,
	.reg = tcp_reg,
	.dereg = tcp_dereg,
	.serve = tcp_serve,
	.post = tcp_post,
	.call = tcp_call,
};
