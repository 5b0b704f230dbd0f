/*
 * verbs_post.c - one post() as RDMA work requests: grouped by peer, striped across
 * the rails both sides have, chained per queue pair with selective signalling, all
 * posted before any completion is awaited; then the completion queues are polled
 * until every op is accounted for or the phase deadline passes.
 *
 * An op whose buffer lies in a region this fabric registered (op.lreg: the store's
 * scratch, pages in pc_store_register'ed memory) goes straight from or to it: the
 * NIC moves the bytes. Any other buffer is staged in a registered bounce buffer
 * per connection (one memcpy each way), counted in stats.bounce_copies/_bytes
 * when larger than metadata (VERBS_SMALL_COPY); a head (a slot header) is staged
 * unless it lies in op.lreg too.
 *
 * A READ with a landed() callback is signalled, and told as its completion is
 * polled (a staged one once its bytes are out of the bounce buffer), so that the
 * caller's work on it (a page's checksum) runs while the NIC moves the others.
 *
 * Ops are spread over the connection's rails (the ones up at both ends) by bytes,
 * and what each rail moved is counted in stats.rail_bytes.
 *
 * A failed op moves its QP to the error state: the ops after it on that QP are
 * flushed and fail too, and the connection is rebuilt on the next post. Remote
 * access errors cannot tell a bad key from bad bounds; both are -EACCES.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "verbs.h"

/* One op of the post, where it runs and where its bytes stage. */
struct vop {
	uint32_t op;			/* index into the caller's ops */
	uint32_t rail;
	uint8_t *stage;			/* local's bytes in the bounce buffer, or NULL (lreg) */
	uint8_t *stage_head;		/* head's bytes in the bounce buffer */
	bool told;			/* landed() was called */
};

/* The ops of one peer. */
struct vpeer {
	uint32_t peer;
	struct verbs_conn *c;
	struct vop *v;
	uint32_t nv;
	int err;			/* the whole peer failed */
	bool broken;			/* rebuild the connection after this post */
	bool faulted;			/* ... because an op failed (not to learn regions) */
	uint32_t rail_of[PC_MAX_RAILS];	/* the k-th rail in use */
	uint32_t nr_used;
	/* per rail: the vops in posting order, how far posted and completed */
	uint32_t *order[PC_MAX_RAILS];
	uint32_t count[PC_MAX_RAILS], posted[PC_MAX_RAILS], done[PC_MAX_RAILS];
	bool failed[PC_MAX_RAILS];
};

static int wc_errno(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_REM_ACCESS_ERR:
		return -EACCES;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
		return -EINVAL;
	case IBV_WC_RETRY_EXC_ERR:
		return -ETIMEDOUT;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return -EHOSTUNREACH;
	case IBV_WC_WR_FLUSH_ERR:
		return -ECONNABORTED;
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_LEN_ERR:
		return -EFAULT;
	default:
		return -EIO;
	}
}

static const struct verbs_rregion *rregion(const struct verbs_conn *c, uint32_t key)
{
	for (uint32_t i = 0; i < c->nr_rr; i++)
		if (c->rr[i].key == key)
			return &c->rr[i];
	return NULL;
}

static bool head_in_lreg(const struct pc_op *op)
{
	uintptr_t h = (uintptr_t)op->head, a;

	if (!op->lreg || !op->head_len)
		return false;
	a = (uintptr_t)op->lreg->addr;
	return h >= a && op->head_len <= op->lreg->len && h - a <= op->lreg->len - op->head_len;
}

/* Staging copies of at most this many bytes are not bounce copies: slot headers,
 * index tags and the like, metadata a NIC would take inline in the work request
 * anyway. A page outside registered memory is always larger. */
#define VERBS_SMALL_COPY 256

static void count_bounce(struct verbs_fabric *vf, uint32_t len)
{
	if (len <= VERBS_SMALL_COPY)
		return;
	pc_stat_add(&vf->base.stats.bounce_copies, 1);
	pc_stat_add(&vf->base.stats.bounce_bytes, len);
}

/* A registered bounce buffer of at least need bytes on every rail of c. */
static int bounce_reserve(struct verbs_fabric *vf, struct verbs_conn *c, size_t need)
{
	size_t len = c->bounce_len ? c->bounce_len : 65536;
	uint8_t *b;

	if (need <= c->bounce_len)
		return 0;
	while (len < need)
		len *= 2;
	for (uint32_t r = 0; r < c->nr_rails; r++) {
		if (c->bounce_mr[r])
			ibv_dereg_mr(c->bounce_mr[r]);
		c->bounce_mr[r] = NULL;
	}
	free(c->bounce);
	c->bounce_len = 0;
	b = aligned_alloc(4096, len);
	if (!b)
		return -ENOMEM;
	c->bounce = b;
	for (uint32_t r = 0; r < c->nr_rails; r++) {
		c->bounce_mr[r] = ibv_reg_mr(vf->dev[r].pd, b, len, IBV_ACCESS_LOCAL_WRITE);
		if (!c->bounce_mr[r])
			return -ENOMEM;
	}
	c->bounce_len = len;
	return 0;
}

/* The rail in use with the fewest bytes given to it so far: a post's bytes, not
 * its ops, are spread evenly (a page and the index read before it differ 1000x). */
static uint32_t lightest_rail(const struct vpeer *vp, const uint64_t *load)
{
	uint32_t best = vp->rail_of[0];

	for (uint32_t u = 1; u < vp->nr_used; u++)
		if (load[vp->rail_of[u]] < load[best])
			best = vp->rail_of[u];
	return best;
}

/* Work requests for one peer's ops; staging copies for WRITEs. */
static int prepare_peer(struct verbs_fabric *vf, struct vpeer *vp, struct pc_op *ops,
			const uint32_t *idx, uint32_t n)
{
	struct verbs_conn *c = vp->c;
	size_t need = 0, off = 0;
	uint64_t load[PC_MAX_RAILS] = { 0 };
	uint32_t kept = 0;
	int ret;

	vp->v = calloc(n, sizeof(*vp->v));
	for (uint32_t r = 0; r < c->nr_rails; r++) {
		vp->order[r] = calloc(n, sizeof(uint32_t));
		if (!vp->order[r])
			return -ENOMEM;
		if (c->rails & (1u << r))
			vp->rail_of[vp->nr_used++] = r;
	}
	if (!vp->v || !vp->nr_used)
		return vp->v ? -ENETDOWN : -ENOMEM;
	for (uint32_t j = 0; j < n; j++) {
		struct pc_op *op = &ops[idx[j]];

		if (op->peer_inc && op->peer_inc != c->inc) {
			op->status = -ESTALE;	/* the peer restarted since */
			continue;
		}
		if (!rregion(c, op->rkey)) {
			/* A region the connect answer did not list: unknown here, or
			 * registered after we connected; reconnect to learn it. */
			op->status = -ENOKEY;
			vp->broken = true;
			continue;
		}
		if (!op->lreg)
			need += (op->len + 63) & ~(size_t)63;
		if (!head_in_lreg(op))
			need += (op->head_len + 63) & ~(size_t)63;
		vp->v[kept++] = (struct vop){ .op = idx[j] };
	}
	vp->nv = kept;
	ret = bounce_reserve(vf, c, need);
	if (ret)
		return ret;
	for (uint32_t k = 0; k < kept; k++) {
		struct vop *v = &vp->v[k];
		struct pc_op *op = &ops[v->op];

		v->rail = lightest_rail(vp, load);
		load[v->rail] += op->kind == PC_OP_CAS ? 8 : pc_op_bytes(op);
		vp->order[v->rail][vp->count[v->rail]++] = k;
		if (op->head_len && !head_in_lreg(op)) {
			v->stage_head = c->bounce + off;
			off += (op->head_len + 63) & ~(size_t)63;
			if (op->kind == PC_OP_WRITE)
				memcpy(v->stage_head, op->head, op->head_len);
		}
		if (op->lreg)
			continue;
		v->stage = c->bounce + off;
		off += (op->len + 63) & ~(size_t)63;
		if (op->kind == PC_OP_WRITE) {
			memcpy(v->stage, op->local, op->len);
			count_bounce(vf, op->len);
		}
	}
	return 0;
}

/* Post the next window of a rail's chain: at most what the send queue holds, the
 * last one signalled (and every VERBS_SIGNAL_EVERY-th, so the queue drains). */
static int post_window(struct verbs_fabric *vf, struct vpeer *vp, struct pc_op *ops, uint32_t r)
{
	uint32_t from = vp->posted[r], to = vp->count[r], n;
	struct ibv_send_wr *wrs, *bad = NULL;
	struct ibv_sge *sges;
	int ret;

	if (from == to || vp->done[r] < from)
		return 0;	/* nothing left, or the previous window is in flight */
	if (to - from > VERBS_SQ_DEPTH - 1)
		to = from + VERBS_SQ_DEPTH - 1;
	n = to - from;
	wrs = calloc(n, sizeof(*wrs));
	sges = calloc(2 * (size_t)n, sizeof(*sges));
	if (!wrs || !sges) {
		free(wrs);
		free(sges);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct vop *v = &vp->v[vp->order[r][from + i]];
		const struct pc_op *op = &ops[v->op];
		const struct verbs_rregion *rr = rregion(vp->c, op->rkey);
		struct ibv_send_wr *w = &wrs[i];

		struct ibv_sge *sg = &sges[2 * i];

		w->sg_list = sg;
		if (op->head_len)
			sg[w->num_sge++] = (struct ibv_sge){
				.addr = (uint64_t)(uintptr_t)(v->stage_head ? v->stage_head : op->head),
				.length = op->head_len,
				.lkey = v->stage_head ? vp->c->bounce_mr[r]->lkey :
							verbs_lkey(vf, op->lreg, r) };
		if (op->len)
			sg[w->num_sge++] = (struct ibv_sge){
				.addr = (uint64_t)(uintptr_t)(v->stage ? v->stage : op->local),
				.length = op->len,
				.lkey = v->stage ? vp->c->bounce_mr[r]->lkey : verbs_lkey(vf, op->lreg, r) };
		w->wr_id = from + i;
		w->next = i + 1 < n ? &wrs[i + 1] : NULL;
		if (i + 1 == n || (i + 1) % VERBS_SIGNAL_EVERY == 0 || op->landed)
			w->send_flags = IBV_SEND_SIGNALED;
		if (op->kind == PC_OP_CAS) {
			w->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
			w->wr.atomic.remote_addr = op->raddr;
			w->wr.atomic.rkey = rr->rkey[r];
			w->wr.atomic.compare_add = op->compare;
			w->wr.atomic.swap = op->swap;
		} else {
			w->opcode = op->kind == PC_OP_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
			w->wr.rdma.remote_addr = op->raddr;
			w->wr.rdma.rkey = rr->rkey[r];
		}
	}
	ret = ibv_post_send(vp->c->q[r].qp, wrs, &bad);
	free(wrs);
	free(sges);
	if (ret)
		return -ret;
	vp->posted[r] = to;
	return 0;
}

/* A READ's bytes are where the caller wants them: tell it (pc_op.landed). */
static void tell(struct vop *v, struct pc_op *op)
{
	if (op->kind != PC_OP_READ || !op->landed || op->status || v->told)
		return;
	v->told = true;
	op->landed(op->landed_arg, op);
}

/* The next op of rail r completed with success; an unstaged READ is told now. */
static void settle_ok(struct vpeer *vp, struct pc_op *ops, uint32_t r)
{
	struct vop *v = &vp->v[vp->order[r][vp->done[r]]];

	ops[v->op].status = 0;
	if (!v->stage && !v->stage_head)
		tell(v, &ops[v->op]);
}

/* Drain one rail's completion queue. Returns how many ops it settled. */
static uint32_t poll_rail(struct verbs_fabric *vf, struct vpeer *vp, struct pc_op *ops, uint32_t r)
{
	struct ibv_wc wc[32];
	uint32_t settled = 0;
	int n;

	if (!vp->count[r])
		return 0;	/* no op of this post on rail r (it may have no QP) */

	while ((n = ibv_poll_cq(vp->c->q[r].cq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			uint32_t pos = (uint32_t)wc[i].wr_id;

			if (pos < vp->done[r] || pos >= vp->posted[r])
				continue;
			if (wc[i].status == IBV_WC_SUCCESS) {
				/* RC completes in order: everything up to pos succeeded. */
				for (; vp->done[r] <= pos; vp->done[r]++, settled++)
					settle_ok(vp, ops, r);
				continue;
			}
			for (; vp->done[r] < pos; vp->done[r]++, settled++)
				settle_ok(vp, ops, r);
			ops[vp->v[vp->order[r][pos]].op].status = wc_errno(wc[i].status);
			vp->done[r] = pos + 1;
			settled++;
			if (wc[i].status == IBV_WC_RETRY_EXC_ERR ||
			    wc[i].status == IBV_WC_RNR_RETRY_EXC_ERR)
				pc_stat_add(&vf->base.stats.qp_timeouts, 1);
			if (!vp->failed[r])
				pc_dbg("verbs: node %u rail %u: %s", vp->peer, r,
				       ibv_wc_status_str(wc[i].status));
			vp->failed[r] = true;
			vp->broken = vp->faulted = true;
		}
	}
	if (vp->failed[r]) {
		/* The QP is in error: whatever was never posted or not flushed yet fails. */
		for (; vp->done[r] < vp->count[r]; vp->done[r]++, settled++)
			ops[vp->v[vp->order[r][vp->done[r]]].op].status = -ECONNABORTED;
		vp->posted[r] = vp->count[r];
	}
	return settled;
}

static int cmp_peer(const void *a, const void *b)
{
	const struct pc_op *x = *(const struct pc_op *const *)a, *y = *(const struct pc_op *const *)b;

	return x->peer < y->peer ? -1 : x->peer > y->peer;
}

int verbs_post(struct pc_fabric *f, struct pc_op *ops, size_t n)
{
	struct verbs_fabric *vf = to_verbs(f);
	uint64_t deadline = pc_env_now(f->env) + (uint64_t)f->timeout_ms * 1000000ULL;
	const struct pc_op **byp = malloc(n * sizeof(*byp));
	uint32_t *idx = malloc(n * sizeof(*idx));
	uint8_t *want = calloc(f->nr_peers, 1);
	int *err = calloc(f->nr_peers, sizeof(*err));
	struct vpeer *vps = calloc(n ? n : 1, sizeof(*vps));
	uint32_t nvp = 0, pending = 0;
	int ret = 0;

	if (!byp || !idx || !want || !err || !vps) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		byp[i] = &ops[i];
	qsort(byp, n, sizeof(*byp), cmp_peer);
	for (size_t i = 0; i < n; i++) {
		idx[i] = (uint32_t)(byp[i] - ops);
		want[byp[i]->peer] = 1;
	}
	/* Lock every peer of the batch in ascending order; connect the ones down. */
	for (uint32_t p = 0; p < f->nr_peers; p++)
		if (want[p])
			pthread_mutex_lock(&vf->conns[p].lock);
	verbs_connect_peers(vf, want, err);
	for (size_t i = 0; i < n;) {
		struct vpeer *vp = &vps[nvp++];
		size_t j = i;

		while (j < n && byp[j]->peer == byp[i]->peer)
			j++;
		vp->peer = byp[i]->peer;
		vp->c = &vf->conns[vp->peer];
		vp->err = err[vp->peer];
		if (!vp->err && !vp->c->up)
			vp->err = -ENOTCONN;
		if (!vp->err)
			vp->err = prepare_peer(vf, vp, ops, &idx[i], (uint32_t)(j - i));
		if (vp->err) {
			for (size_t k = i; k < j; k++)
				ops[idx[k]].status = vp->err;
			vp->nv = 0;
		}
		for (uint32_t r = 0; vp->nv && r < vp->c->nr_rails; r++) {
			int e = post_window(vf, vp, ops, r);

			if (e) {	/* nothing of this rail went out */
				for (uint32_t k = vp->posted[r]; k < vp->count[r]; k++)
					ops[vp->v[vp->order[r][k]].op].status = e;
				vp->done[r] = vp->posted[r] = vp->count[r];
				vp->broken = vp->faulted = true;
			}
		}
		for (uint32_t r = 0; vp->nv && r < vp->c->nr_rails; r++)
			pending += vp->count[r] - vp->done[r];
		i = j;
	}
	/* Poll every queue until all is settled or the deadline. */
	while (pending) {
		for (uint32_t k = 0; k < nvp; k++) {
			struct vpeer *vp = &vps[k];

			for (uint32_t r = 0; vp->nv && r < vp->c->nr_rails; r++) {
				pending -= poll_rail(vf, vp, ops, r);
				if (post_window(vf, vp, ops, r))
					vp->broken = vp->faulted = vp->failed[r] = true;
			}
		}
		if (pending && pc_env_now(f->env) > deadline)
			break;
	}
	for (uint32_t k = 0; k < nvp; k++) {
		struct vpeer *vp = &vps[k];

		for (uint32_t r = 0; vp->nv && r < vp->c->nr_rails; r++) {
			for (uint32_t i = vp->done[r]; i < vp->count[r]; i++)
				ops[vp->v[vp->order[r][i]].op].status = -ETIMEDOUT;
			if (vp->done[r] < vp->count[r])	/* the NIC may still touch the buffers */
				vp->broken = vp->faulted = true;
		}
		/* Results out of the bounce buffer; what each rail moved. */
		for (uint32_t i = 0; i < vp->nv; i++) {
			struct pc_op *op = &ops[vp->v[i].op];

			if (op->status)
				continue;
			pc_stat_add(&f->stats.rail_bytes[vp->v[i].rail],
				    op->kind == PC_OP_CAS ? 8 : pc_op_bytes(op));
			if (op->kind == PC_OP_WRITE)
				continue;
			if (vp->v[i].stage_head)
				memcpy(op->head, vp->v[i].stage_head, op->head_len);
			if (vp->v[i].stage) {
				memcpy(op->local, vp->v[i].stage, op->len);
				count_bounce(vf, op->len);
			}
			tell(&vp->v[i], op);	/* staged: its bytes are out now */
		}
		if (vp->broken && vp->c->up) {
			pc_dbg("verbs: connection to node %u closed after %s", vp->peer,
			       vp->faulted ? "an error" : "a region it did not know");
			if (vp->faulted)
				pc_stat_add(&f->stats.qp_errors, 1);
			verbs_conn_down(vf, vp->c);
		}
		free(vp->v);
		for (uint32_t r = 0; r < PC_MAX_RAILS; r++)
			free(vp->order[r]);
	}
	for (uint32_t p = f->nr_peers; p-- > 0;)
		if (want[p])
			pthread_mutex_unlock(&vf->conns[p].lock);
out:
	free(byp);
	free(idx);
	free(want);
	free(err);
	free(vps);
	return ret;
}
