/*
 * verbs_conn.c - RC queue pairs and how two nodes connect them: the client creates
 * its QPs, sends their addressing (GID, QPN, PSN) in one CONNECT RPC per peer over
 * the tcp control fabric (all peers in one phase), and the server answers with its
 * own QPs' addressing, its incarnation and its regions' keys per rail. Both sides
 * then move their QPs to RTR and RTS with the topology's QP settings
 * (store.verbs_*). A rail whose port is down at either end gets no QP (QPN 0 on the
 * wire); a connection is rebuilt when this node's rails change and, at most once
 * a second, while it runs on fewer rails than both ends have.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "verbs.h"
#include "verbs_wire.h"

#define MAX_ACCEPTED 1024
#define BACKOFF_NS 200000000ULL
#define RAIL_RETRY_NS 1000000000ULL	/* a degraded connection tries every rail again */

int verbs_qp_create(struct verbs_fabric *vf, uint32_t rail, struct verbs_qp *q)
{
	struct verbs_dev *d = &vf->dev[rail];
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.cap = { .max_send_wr = VERBS_SQ_DEPTH, .max_recv_wr = 1, .max_send_sge = 2,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = d->port,
				 .qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_ATOMIC };

	memset(q, 0, sizeof(*q));
	if (ia.cap.max_send_wr > (uint32_t)d->attr.max_qp_wr)
		ia.cap.max_send_wr = (uint32_t)d->attr.max_qp_wr;
	q->cq = ibv_create_cq(d->ctx, (int)ia.cap.max_send_wr + 8, NULL, NULL, 0);
	if (!q->cq)
		return -ENOMEM;
	ia.send_cq = ia.recv_cq = q->cq;
	q->qp = ibv_create_qp(d->pd, &ia);
	if (!q->qp) {
		ibv_destroy_cq(q->cq);
		q->cq = NULL;
		return -ENOMEM;
	}
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS)) {
		verbs_qp_destroy(q);
		return -EIO;
	}
	q->psn = (uint32_t)pc_env_random(vf->base.env) & 0xffffff;
	return 0;
}

void verbs_qp_destroy(struct verbs_qp *q)
{
	if (q->qp)
		ibv_destroy_qp(q->qp);
	if (q->cq)
		ibv_destroy_cq(q->cq);
	memset(q, 0, sizeof(*q));
}

/* A rail mask of the first n rails. */
static uint32_t rails_of(uint32_t n)
{
	return n >= 32 ? ~0u : (1u << n) - 1;
}

static uint32_t rails_up(struct verbs_fabric *vf)
{
	return __atomic_load_n(&vf->rails_up, __ATOMIC_RELAXED);
}

static uint32_t rd_atomic(const struct verbs_fabric *vf, uint32_t rail)
{
	uint32_t v = (uint32_t)vf->dev[rail].attr.max_qp_rd_atom;

	if (v > 16)
		v = 16;
	if (vf->quirks && vf->quirks->max_rd_atomic && v > vf->quirks->max_rd_atomic)
		v = vf->quirks->max_rd_atomic;
	return v ? v : 1;
}

static void addr_of(const struct verbs_fabric *vf, uint32_t rail, const struct verbs_qp *q,
		    struct wire_addr *w)
{
	const struct verbs_dev *d = &vf->dev[rail];

	memcpy(w->gid, d->gid.raw, 16);
	w->qpn = q->qp->qp_num;
	w->psn = q->psn;
	w->lid = d->lid;
	w->mtu = (uint8_t)d->mtu;
	w->rd_atomic = rd_atomic(vf, rail);
}

/* INIT -> RTR -> RTS against the remote side's addressing, with rail_lock held. The
 * path MTU is the smallest of both ports', the backend's limit and the topology's. */
static int qp_connect(struct verbs_fabric *vf, uint32_t rail, struct verbs_qp *q,
		      const struct wire_addr *r)
{
	const struct verbs_dev *d = &vf->dev[rail];
	const struct pc_store_cfg *cfg = &vf->base.topo->store;
	enum ibv_mtu mtu = d->mtu < (enum ibv_mtu)r->mtu ? d->mtu : (enum ibv_mtu)r->mtu;
	struct ibv_qp_attr a = { 0 };

	if (vf->quirks && vf->quirks->max_mtu && mtu > vf->quirks->max_mtu)
		mtu = vf->quirks->max_mtu;
	if (cfg->verbs_path_mtu && mtu > (enum ibv_mtu)cfg->verbs_path_mtu)
		mtu = (enum ibv_mtu)cfg->verbs_path_mtu;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = r->qpn;
	a.rq_psn = r->psn;
	a.max_dest_rd_atomic = (uint8_t)rd_atomic(vf, rail);
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, r->gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = (uint8_t)cfg->verbs_traffic_class;
	a.ah_attr.dlid = r->lid;
	a.ah_attr.port_num = d->port;
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER))
		return -EIO;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = (uint8_t)cfg->verbs_qp_timeout;
	a.retry_cnt = (uint8_t)cfg->verbs_retry_cnt;
	a.rnr_retry = (uint8_t)cfg->verbs_rnr_retry;
	a.sq_psn = q->psn;
	a.max_rd_atomic = (uint8_t)(r->rd_atomic < rd_atomic(vf, rail) ? r->rd_atomic :
									  rd_atomic(vf, rail));
	if (ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return -EIO;
	return 0;
}

void verbs_conn_down(struct verbs_fabric *vf, struct verbs_conn *c)
{
	for (uint32_t r = 0; r < c->nr_rails; r++) {
		verbs_qp_destroy(&c->q[r]);
		if (c->bounce_mr[r])
			ibv_dereg_mr(c->bounce_mr[r]);
		c->bounce_mr[r] = NULL;
	}
	free(c->bounce);
	c->bounce = NULL;
	c->bounce_len = 0;
	c->nr_rails = 0;
	c->rails = 0;
	c->up = false;
	(void)vf;
}

/* Whether c must be rebuilt before a post: a rail it uses went down here or one
 * came back here, or (once a second) the peer may have its missing rails back. */
static bool rails_changed(struct verbs_fabric *vf, const struct verbs_conn *c, uint64_t now)
{
	uint32_t up = rails_up(vf);

	if (up != c->local_up || __atomic_load_n(&vf->rails_gen, __ATOMIC_RELAXED) != c->rails_gen)
		return true;
	return c->rails != (up & rails_of(c->nr_rails)) && now >= c->retry_rails_at;
}

/* Create the QPs of c on this node's up rails and describe them in q. */
static int conn_prepare(struct verbs_fabric *vf, struct verbs_conn *c, struct wire_req *q)
{
	int ret = 0;

	*q = (struct wire_req){ .magic = CONNECT_MAGIC, .from = vf->base.self,
				.from_inc = vf->base.incarnation, .nr_rails = vf->nr_rails };
	pthread_mutex_lock(&vf->rail_lock);
	c->local_up = rails_up(vf);
	c->rails_gen = __atomic_load_n(&vf->rails_gen, __ATOMIC_RELAXED);
	c->nr_rails = vf->nr_rails;
	for (uint32_t r = 0; r < vf->nr_rails && !ret; r++) {
		if (!(c->local_up & (1u << r)))
			continue;	/* QPN 0: no QP on this rail */
		ret = verbs_qp_create(vf, r, &c->q[r]);
		if (!ret)
			addr_of(vf, r, &c->q[r], &q->a[r]);
	}
	pthread_mutex_unlock(&vf->rail_lock);
	if (!ret && !(c->local_up & rails_of(vf->nr_rails)))
		ret = -ENETDOWN;
	return ret;
}

/* Connect the QPs of c the server answered for; drop the others. */
static int conn_finish(struct verbs_fabric *vf, struct verbs_conn *c, const struct wire_resp *s)
{
	int e = 0;

	pthread_mutex_lock(&vf->rail_lock);
	for (uint32_t r = 0; r < c->nr_rails; r++) {
		if (c->q[r].qp && r < s->nr_rails && s->a[r].qpn && !e) {
			e = qp_connect(vf, r, &c->q[r], &s->a[r]);
			if (!e)
				c->rails |= 1u << r;
		} else {
			verbs_qp_destroy(&c->q[r]);
		}
	}
	pthread_mutex_unlock(&vf->rail_lock);
	if (s->nr_rails < c->nr_rails)	/* use the rails both sides have */
		c->nr_rails = s->nr_rails;
	if (!e && !c->rails)
		e = -ENETDOWN;
	return e;
}

int verbs_connect_peers(struct verbs_fabric *vf, const uint8_t *want, int *err)
{
	uint32_t np = vf->base.nr_peers, nr = 0;
	struct pc_rpc *rpcs = calloc(np, sizeof(*rpcs));
	struct wire_req *reqs = calloc(np, sizeof(*reqs));
	uint64_t now = pc_env_now(vf->base.env);
	int ret = 0;

	if (!rpcs || !reqs) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t p = 0; p < np; p++) {
		struct verbs_conn *c = &vf->conns[p];
		struct wire_req *q = &reqs[nr];

		if (!want[p])
			continue;
		if (c->up && rails_changed(vf, c, now)) {
			pc_dbg("verbs: rails changed; reconnecting to node %u", p);
			verbs_conn_down(vf, c);
		}
		if (c->up)
			continue;
		if (c->down_until > now) {
			err[p] = c->down_err;
			continue;
		}
		err[p] = conn_prepare(vf, c, q);
		if (err[p]) {
			verbs_conn_down(vf, c);
			continue;
		}
		rpcs[nr++] = (struct pc_rpc){ .peer = p, .opcode = VERBS_RPC_CONNECT, .req = q,
					      .req_len = sizeof(*q) };
	}
	if (nr)
		pc_fabric_call(vf->ctl, rpcs, nr);
	for (uint32_t k = 0; k < nr; k++) {
		struct pc_rpc *rpc = &rpcs[k];
		struct verbs_conn *c = &vf->conns[rpc->peer];
		const struct wire_resp *s = rpc->resp.data;
		int e = rpc->status;

		if (!e && (rpc->resp.len != sizeof(*s) || s->magic != CONNECT_MAGIC ||
			   !s->nr_rails || s->nr_rails > PC_MAX_RAILS ||
			   s->nr_regions > VERBS_MAX_REGIONS))
			e = -EPROTO;
		if (!e)
			e = conn_finish(vf, c, s);
		if (e) {
			pc_dbg("verbs: connecting to node %u failed: %s", rpc->peer, strerror(-e));
			verbs_conn_down(vf, c);
			c->down_until = pc_env_now(vf->base.env) + BACKOFF_NS;
			c->down_err = e;
			err[rpc->peer] = e;
		} else {
			c->inc = s->inc;
			c->nr_rr = s->nr_regions;
			for (uint32_t i = 0; i < s->nr_regions; i++) {
				c->rr[i] = (struct verbs_rregion){ .key = s->r[i].key, .addr = s->r[i].addr,
								   .len = s->r[i].len };
				memcpy(c->rr[i].rkey, s->r[i].rkey, sizeof(c->rr[i].rkey));
			}
			c->retry_rails_at = now + RAIL_RETRY_NS;
			c->up = true;
			pc_stat_add(&vf->base.stats.reconnects, 1);
		}
		pc_msg_free(&rpc->resp);
	}
out:
	free(rpcs);
	free(reqs);
	return ret;
}

static void accepted_drop(struct verbs_accepted *a)
{
	for (uint32_t r = 0; r < a->nr_rails; r++)
		verbs_qp_destroy(&a->q[r]);
	free(a);
}

static bool accepted_in_error(const struct verbs_accepted *a)
{
	for (uint32_t r = 0; r < a->nr_rails; r++) {
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		if (a->q[r].qp && !ibv_query_qp(a->q[r].qp, &qa, IBV_QP_STATE, &qi) &&
		    qa.qp_state == IBV_QPS_ERR)
			return true;
	}
	return false;
}

/* Keep the accepted list bounded: a new CONNECT replaces every earlier one of the
 * same node (a node keeps one connection to us; an earlier incarnation is gone) and
 * of the same client fabric (its incarnation is its own); QPs in error and the
 * oldest beyond the cap go too. Called with acc_lock held. */
static void accepted_prune(struct verbs_fabric *vf, uint32_t from, uint64_t from_inc)
{
	struct verbs_accepted **pp = &vf->accepted;
	uint32_t n = 0;

	while (*pp) {
		struct verbs_accepted *a = *pp;
		bool drop = (a->from == from && (from != PC_PEER_NONE || a->from_inc == from_inc)) ||
			    accepted_in_error(a) || ++n > MAX_ACCEPTED;

		if (drop) {
			*pp = a->next;
			accepted_drop(a);
		} else {
			pp = &a->next;
		}
	}
}

/* Connect QPs for the peer that sent q and answer with ours and the regions' rkeys.
 * from is the control connection's peer (authenticated when the cluster has a
 * secret): a request naming another node is refused, so no caller can take over
 * another node's QPs or learn rkeys under its name. */
static int on_connect(struct verbs_fabric *vf, uint32_t from, const void *req, size_t len,
		      struct pc_msg *resp)
{
	const struct wire_req *q = req;
	struct wire_resp *s;
	struct verbs_accepted *a;
	uint32_t rails = 0;
	int ret = 0;

	if (len != sizeof(*q) || q->magic != CONNECT_MAGIC || !q->nr_rails ||
	    q->nr_rails > PC_MAX_RAILS)
		return -EPROTO;
	if (q->from != from) {
		pc_warn("verbs: CONNECT naming node %d came from node %d; refused", (int)q->from,
			(int)from);
		return -EPERM;
	}
	a = calloc(1, sizeof(*a));
	s = calloc(1, sizeof(*s));
	if (!a || !s) {
		free(a);
		free(s);
		return -ENOMEM;
	}
	a->from = q->from;
	a->from_inc = q->from_inc;
	a->nr_rails = q->nr_rails < vf->nr_rails ? q->nr_rails : vf->nr_rails;
	*s = (struct wire_resp){ .magic = CONNECT_MAGIC, .nr_rails = a->nr_rails,
				 .inc = vf->base.incarnation };
	pthread_mutex_lock(&vf->rail_lock);
	for (uint32_t r = 0; r < a->nr_rails && !ret; r++) {
		if (!q->a[r].qpn || !(rails_up(vf) & (1u << r)))
			continue;	/* down at one end: QPN 0 */
		ret = verbs_qp_create(vf, r, &a->q[r]);
		if (!ret)
			ret = qp_connect(vf, r, &a->q[r], &q->a[r]);
		if (!ret)
			addr_of(vf, r, &a->q[r], &s->a[r]);
		rails |= !ret ? 1u << r : 0;
	}
	pthread_mutex_unlock(&vf->rail_lock);
	if (!ret && !rails)
		ret = -ENETDOWN;
	if (ret) {
		accepted_drop(a);
		free(s);
		return ret;
	}
	pthread_mutex_lock(&vf->mr_lock);
	for (uint32_t i = 0; i < vf->nr_mrs; i++) {
		const struct verbs_mr *m = &vf->mrs[i];
		struct wire_region *w = &s->r[s->nr_regions];

		/* Local-only memory (callers' page buffers) is never advertised. */
		if (!m->access)
			continue;
		*w = (struct wire_region){ .key = m->key, .addr = (uint64_t)(uintptr_t)m->mr[0]->addr,
					   .len = m->mr[0]->length };
		for (uint32_t r = 0; r < vf->nr_rails; r++)
			w->rkey[r] = m->mr[r]->rkey;
		s->nr_regions++;
	}
	pthread_mutex_unlock(&vf->mr_lock);
	pthread_mutex_lock(&vf->acc_lock);
	accepted_prune(vf, q->from, q->from_inc);
	a->next = vf->accepted;
	vf->accepted = a;
	pthread_mutex_unlock(&vf->acc_lock);
	ret = pc_msg_append(resp, s, sizeof(*s));
	free(s);
	return ret;
}

size_t verbs_ctl_max_req(void *arg, uint16_t opcode)
{
	struct verbs_fabric *vf = arg;

	if (opcode == VERBS_RPC_CONNECT)
		return sizeof(struct wire_req);
	return vf->base.rpc_max_req ? vf->base.rpc_max_req(vf->base.rpc_max_arg, opcode) :
				      (size_t)-1;
}

/* The control fabric's handler: CONNECT is ours, everything else the store's. */
int verbs_serve_rpc(void *arg, uint32_t from, uint16_t opcode, const void *req, size_t len,
		    struct pc_msg *resp)
{
	struct verbs_fabric *vf = arg;

	if (opcode == VERBS_RPC_CONNECT)
		return on_connect(vf, from, req, len, resp);
	return vf->handler ? vf->handler(vf->handler_arg, from, opcode, req, len, resp) :
			     -EOPNOTSUPP;
}

void verbs_accepted_free(struct verbs_fabric *vf)
{
	while (vf->accepted) {
		struct verbs_accepted *a = vf->accepted;

		vf->accepted = a->next;
		accepted_drop(a);
	}
}
