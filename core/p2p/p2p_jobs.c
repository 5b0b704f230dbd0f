/*
 * p2p_jobs.c - what p2p mode does when the ring changes, in the background: hand
 * directory entries to their new shards, and publish again this node's pages whose
 * shard departed.
 *
 * Not for: how jobs run (p2p_task.c), the notes to publishers (p2p_notes.c).
 */
#include "p2p_int.h"

static bool moved(void *arg, struct pc_keyhash key)
{
	struct p2p *p = arg;

	return ring_owner_of(store_ring(p->st), key) != p->st->self;
}

/* Hand the entries whose shard is another node's now to that node. Those that could
 * not be sent (the new node not answering yet: it may have just started) stay here
 * and are tried again a few times, 0.1 s to 1.6 s apart. */
static void handoff(struct p2p_job *j)
{
	struct p2p *p = j->p;

	__atomic_store_n(&p->handoff_queued, false, __ATOMIC_SEQ_CST);
	for (int attempt = 0;; attempt++) {
		struct dir_rec *v = NULL;
		int n = dir_take_if(&p->dir, moved, p, &v), lost = 0;
		struct upd *u;
		int *status;

		if (n <= 0)
			return;
		u = calloc((size_t)n, sizeof(*u));
		status = malloc((size_t)n * sizeof(*status));
		for (int i = 0; u && status && i < n; i++)
			u[i] = (struct upd){ .key = v[i].key, .loc = v[i].loc };
		if (u && status)
			if (p2p_send_updates(p, u, (size_t)n, status))
				p2p_handoff_soon(p);
		for (int i = 0; i < n; i++) {
			if (u && status && !status[i])
				continue;
			lost++;
			p2p_shard_put(p, v[i].key, &v[i].loc);	/* back; a newer entry wins */
		}
		free(v);
		free(u);
		free(status);
		if (!lost || attempt == 4 || !p2p_nap(p, 100u << attempt)) {
			pc_info("p2p: handed %d directory entries to their new shards (%d kept here)",
				n - lost, lost);
			return;
		}
	}
}

/* After a leave: this node's own pages whose shard was the departed node's, published
 * again to their new shards (the entries died with that node). */
static void republish(struct p2p_job *j)
{
	struct p2p *p = j->p;
	struct store_svc *st = p->st;
	uint32_t total = 0;
	struct upd *u;
	int *status;
	size_t n = 0;
	int lost = 0;

	for (uint32_t c = 0; c < p->nr_classes; c++)
		total += p->cls[c].pool->nr_blocks;
	u = calloc(total ? total : 1, sizeof(*u));
	status = malloc((total ? total : 1) * sizeof(*status));
	for (uint32_t c = 0; u && status && c < p->nr_classes; c++) {
		struct p2p_class *k = &p->cls[c];

		pthread_mutex_lock(&k->pool->lock);
		for (uint32_t b = 0; b < k->pool->nr_blocks; b++) {
			const struct pool_meta *m = &k->pool->meta[b];

			if (m->state != POOL_VALID || ring_owner_of(j->old, m->key) != j->node)
				continue;
			u[n++] = (struct upd){ .key = m->key, .loc = p2p_own_loc(p, c, b, m->len) };
		}
		pthread_mutex_unlock(&k->pool->lock);
	}
	if (n) {
		if (p2p_send_updates(p, u, n, status))
			p2p_handoff_soon(p);
		for (size_t i = 0; i < n; i++)
			lost += status[i] != 0;
		pc_info("p2p: published %zu entries again after %s left (%d could not be)", n,
			st->topo->nodes[j->node].name, lost);
	} else if (!u || !status) {
		pc_warn("p2p: out of memory: pages whose shard was %s's stay unreachable",
			st->topo->nodes[j->node].name);
	}
	free(u);
	free(status);
}

/* Look for entries this shard no longer owns, once more, in the background. */
void p2p_handoff_soon(struct p2p *p)
{
	if (p->st->self == PC_PEER_NONE || __atomic_exchange_n(&p->handoff_queued, true, __ATOMIC_SEQ_CST))
		return;
	if (!p2p_spawn(p, "pc-p2p-handoff", handoff, NULL, 0, false))
		__atomic_store_n(&p->handoff_queued, false, __ATOMIC_SEQ_CST);
}

void p2p_member_changed(struct p2p *p, uint32_t node, bool member, struct ring *old)
{
	if (!member) {
		if (dir_drop_node(&p->dir, node))
			pc_dbg("p2p: dropped the directory entries naming node %u", node);
		if (p->st->self != PC_PEER_NONE && node != p->st->self)
			p2p_spawn(p, "pc-p2p-republish", republish, old, node, false);
	}
	/*
	 * Any change: entries this shard holds but no longer owns move on. After a join,
	 * that is the new node's share; after a leave, the departing node drains its
	 * shard, and strays go home (a put that crossed an earlier change of the ring
	 * can sit on a node that no longer owns it, unreachable until it moves).
	 */
	p2p_handoff_soon(p);
}
