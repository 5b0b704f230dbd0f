/*
 * verbs.c - the ibverbs fabric's ops table: RC queue pairs for one-sided ops, an
 * embedded tcp fabric for RPC and connection setup.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "base/log.h"
#include "verbs.h"

/* A peer that died is noticed by the QP's retries (verbs_qp_timeout, retry_cnt);
 * when they outlast the phase timeout the phase fails its ops first, and the
 * operator should know the keys disagree. */
static void warn_slow_retries(const struct pc_fabric *f)
{
	const struct pc_store_cfg *s = &f->topo->store;
	double ms = 4.096e-3 * (double)(1ull << s->verbs_qp_timeout) * (s->verbs_retry_cnt + 1);

	if (ms > f->timeout_ms)
		pc_warn("verbs: a lost peer is noticed after %.0f ms of retries (store.verbs_qp_timeout %u, verbs_retry_cnt %u), later than store.timeout_ms %u; lower verbs_qp_timeout to see it within a phase",
			ms, s->verbs_qp_timeout, s->verbs_retry_cnt, f->timeout_ms);
}

int verbs_open_with(struct pc_fabric *f, const struct pc_fabric_params *p,
		    const struct verbs_quirks *q, const char *device)
{
	struct verbs_fabric *vf = to_verbs(f);
	int ret;

	vf->quirks = q;
	vf->events_stop = -1;
	ret = region_table_init(&vf->regions);
	if (ret)
		return ret;
	pthread_mutex_init(&vf->mr_lock, NULL);
	pthread_mutex_init(&vf->acc_lock, NULL);
	pthread_mutex_init(&vf->rail_lock, NULL);
	ret = verbs_devs_open(vf, device);
	if (ret)
		goto err_locks;
	ret = verbs_events_start(vf);
	if (ret)
		goto err_devs;
	vf->conns = calloc(f->nr_peers, sizeof(*vf->conns));
	if (!vf->conns) {
		ret = -ENOMEM;
		goto err_events;
	}
	for (uint32_t i = 0; i < f->nr_peers; i++)
		pthread_mutex_init(&vf->conns[i].lock, NULL);
	ret = pc_fabric_open_ops(&tcp_fabric_ops, p, &vf->ctl);
	if (ret)
		goto err_conns;
	/* Peers learn restarts from the control connection: one incarnation for both. */
	f->incarnation = vf->ctl->incarnation;
	verbs_rails_log(vf);
	warn_slow_retries(f);
	return 0;
err_conns:
	for (uint32_t i = 0; i < f->nr_peers; i++)
		pthread_mutex_destroy(&vf->conns[i].lock);
	free(vf->conns);
err_events:
	verbs_events_stop(vf);
err_devs:
	verbs_devs_close(vf);
err_locks:
	pthread_mutex_destroy(&vf->mr_lock);
	pthread_mutex_destroy(&vf->acc_lock);
	pthread_mutex_destroy(&vf->rail_lock);
	region_table_fini(&vf->regions);
	return ret;
}

static int verbs_open(struct pc_fabric *f, const struct pc_fabric_params *p)
{
	return verbs_open_with(f, p, NULL, NULL);
}

void verbs_close(struct pc_fabric *f)
{
	struct verbs_fabric *vf = to_verbs(f);

	pc_fabric_close(vf->ctl);	/* no more connects arrive */
	verbs_events_stop(vf);
	for (uint32_t i = 0; i < f->nr_peers; i++) {
		verbs_conn_down(vf, &vf->conns[i]);
		pthread_mutex_destroy(&vf->conns[i].lock);
	}
	free(vf->conns);
	verbs_accepted_free(vf);
	for (uint32_t i = 0; i < vf->nr_mrs; i++)
		for (uint32_t r = 0; r < vf->nr_rails; r++)
			ibv_dereg_mr(vf->mrs[i].mr[r]);
	verbs_devs_close(vf);
	pthread_mutex_destroy(&vf->mr_lock);
	pthread_mutex_destroy(&vf->acc_lock);
	pthread_mutex_destroy(&vf->rail_lock);
	region_table_fini(&vf->regions);
}

int verbs_reg(struct pc_fabric *f, struct pc_region *r)
{
	return verbs_mr_add(to_verbs(f), r);
}

void verbs_dereg(struct pc_fabric *f, struct pc_region *r)
{
	verbs_mr_del(to_verbs(f), r);
}

int verbs_serve(struct pc_fabric *f, pc_rpc_handler *h, void *arg)
{
	struct verbs_fabric *vf = to_verbs(f);

	if (f->self == PC_PEER_NONE)
		return -EINVAL;
	if (!h) {	/* the control server stops first: nothing calls the handler after */
		int ret = pc_fabric_serve(vf->ctl, NULL, NULL);

		vf->handler = NULL;
		return ret;
	}
	vf->handler_arg = arg;
	vf->handler = h;
	vf->ctl->quick_rpcs = f->quick_rpcs;	/* RPCs travel on the control channel */
	vf->ctl->rpc_max_req = verbs_ctl_max_req;
	vf->ctl->rpc_max_arg = vf;
	return pc_fabric_serve(vf->ctl, verbs_serve_rpc, vf);
}

int verbs_call(struct pc_fabric *f, struct pc_rpc *rpcs, size_t n)
{
	return pc_fabric_call(to_verbs(f)->ctl, rpcs, n);
}

const struct pc_fabric_ops verbs_fabric_ops = VERBS_FABRIC_OPS("verbs", verbs_open);
