/*
 * p2p_jobs.c - p2p mode's background work, on tasks of the store's env: handing
 * directory entries to their owners when the ring changes and publishing entries
 * again after a leave (membership); and the notes that tell a publisher what it
 * cannot see, since other nodes read its pool one-sided: which of its blocks were
 * read (LRU), and which a shard replaced with another node's copy (freed).
 *
 * Not for: the pool, the shard or the batch operations (p2p.c).
 */
#include "p2p_int.h"

/* ------------------------------------------------------------------ notes received */

/* Whether l names a block of ours that still holds publication l->gen. */
static bool own_publication(struct p2p *p, const struct dir_loc *l, uint32_t *b)
{
	return p2p_own_block(p, l, b) &&
	       __atomic_load_n(&p->cls[l->cls].gen[*b], __ATOMIC_RELAXED) == l->gen;
}

/* A shard now points key at another node's publication: free ours, if it is still
 * the one the shard replaced. */
static void free_orphan(struct p2p *p, struct pc_keyhash key, const struct dir_loc *l)
{
	uint32_t b;

	if (own_publication(p, l, &b) && pool_remove_at(p->cls[l->cls].pool, key, b))
		__atomic_add_fetch(&p->orphans, 1, __ATOMIC_RELAXED);
}

/* Notes from other nodes on our blocks (proto.h): reads move them up the LRU;
 * replaced publications are freed. */
int p2p_on_notes(struct p2p *p, const void *req, size_t len)
{
	struct proto_touch_hdr h;
	const uint8_t *at = (const uint8_t *)req + sizeof(h);
	uint32_t *blocks, moved = 0;

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, req, sizeof(h));
	if (!h.n || h.n > PROTO_TOUCH_MAX || len != sizeof(h) + (size_t)h.n * sizeof(struct proto_touch))
		return -EPROTO;
	blocks = malloc(h.n * sizeof(*blocks));
	if (!blocks)
		return -ENOMEM;
	/* per class, the blocks that still hold the publication read; one lock each */
	for (uint32_t c = 0; c < p->nr_classes; c++) {
		uint32_t nb = 0;

		for (uint32_t i = 0; i < h.n; i++) {
			struct proto_touch t;
			struct dir_loc l;

			memcpy(&t, at + (size_t)i * sizeof(t), sizeof(t));
			if (t.cls != c)
				continue;
			l = (struct dir_loc){ .addr = t.addr, .inc = p->st->fabric->incarnation,
					      .gen = t.gen, .node = p->st->self, .cls = t.cls };
			if (t.flags & PROTO_TOUCH_DROP)
				free_orphan(p, (struct pc_keyhash){ t.lo, t.hi }, &l);
			else if (own_publication(p, &l, &blocks[nb]))
				nb++;
		}
		if (nb)
			pool_touch_many(p->cls[c].pool, blocks, nb);
		moved += nb;
	}
	free(blocks);
	__atomic_add_fetch(&p->touched, moved, __ATOMIC_RELAXED);
	return 0;
}

/* ------------------------------------------------------------------ membership */

static bool moved(void *arg, struct pc_keyhash key)
{
	struct p2p *p = arg;

	return ring_owner_of(store_ring(p->st), key) != p->st->self;
}

/* Sleep ms milliseconds in short steps; false when the store started closing. */
static bool nap(struct p2p *p, uint32_t ms)
{
	for (uint32_t t = 0; t < ms; t += 50) {
		if (__atomic_load_n(&p->closing, __ATOMIC_ACQUIRE))
			return false;
		pc_env_sleep(p->st->env, 50 * 1000000ULL);
	}
	return !__atomic_load_n(&p->closing, __ATOMIC_ACQUIRE);
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
			p2p_send_updates(p, u, (size_t)n, status);
		for (int i = 0; i < n; i++) {
			if (u && status && !status[i])
				continue;
			lost++;
			p2p_shard_put(p, v[i].key, &v[i].loc);	/* back; a newer entry wins */
		}
		free(v);
		free(u);
		free(status);
		if (!lost || attempt == 4 || !nap(p, 100u << attempt)) {
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
	struct pc_store *st = p->st;
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
		p2p_send_updates(p, u, n, status);
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

static void run_job(void *arg)
{
	struct p2p_job *j = arg;

	j->fn(j);
	__atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
}

/* Start a job in the background (the ring changes from event context in the
 * simulator, where nothing may block), joining the jobs that ended first. A job that
 * cannot start is said, unless it is best effort (quiet). */
static bool spawn(struct p2p *p, const char *name, void (*fn)(struct p2p_job *), struct ring *old,
		  uint32_t node, bool quiet)
{
	struct p2p_job *j = calloc(1, sizeof(*j));
	int ret = j ? 0 : -ENOMEM;
	uint32_t keep = 0;

	pthread_mutex_lock(&p->tasks_lock);
	for (uint32_t i = 0; i < p->nr_jobs; i++) {
		if (__atomic_load_n(&p->jobs[i]->done, __ATOMIC_ACQUIRE)) {
			pc_env_join(p->st->env, p->jobs[i]->task);
			free(p->jobs[i]);
		} else {
			p->jobs[keep++] = p->jobs[i];
		}
	}
	p->nr_jobs = keep;
	if (!ret && (p->closing || p->nr_jobs == MAX_JOBS))
		ret = p->closing ? -ESHUTDOWN : -EBUSY;
	if (!ret) {
		*j = (struct p2p_job){ .p = p, .fn = fn, .old = old, .node = node };
		ret = pc_env_spawn(p->st->env, name, run_job, j, &j->task);
		if (!ret)
			p->jobs[p->nr_jobs++] = j;
	}
	pthread_mutex_unlock(&p->tasks_lock);
	if (ret) {
		free(j);
		if (ret != -ESHUTDOWN && !quiet)
			pc_warn("p2p: cannot start %s (%s): directory entries stay where they are", name,
				strerror(-ret));
	}
	return !ret;
}

/* Look for entries this shard no longer owns, once more, in the background. */
void p2p_handoff_soon(struct p2p *p)
{
	if (p->st->self == PC_PEER_NONE || __atomic_exchange_n(&p->handoff_queued, true, __ATOMIC_SEQ_CST))
		return;
	if (!spawn(p, "pc-p2p-handoff", handoff, NULL, 0, false))
		__atomic_store_n(&p->handoff_queued, false, __ATOMIC_SEQ_CST);
}

void p2p_member_changed(struct p2p *p, uint32_t node, bool member, struct ring *old)
{
	if (!member) {
		if (dir_drop_node(&p->dir, node))
			pc_dbg("p2p: dropped the directory entries naming node %u", node);
		if (p->st->self != PC_PEER_NONE && node != p->st->self)
			spawn(p, "pc-p2p-republish", republish, old, node, false);
	}
	/*
	 * Any change: entries this shard holds but no longer owns move on. After a join,
	 * that is the new node's share; after a leave, the departing node drains its
	 * shard, and strays go home (a put that crossed an earlier change of the ring
	 * can sit on a node that no longer owns it; a valgrind run lost one that way).
	 */
	p2p_handoff_soon(p);
}

/* ------------------------------------------------------------------ notes sent */

/* Tell each publisher its notes, one RPC each in one phase (best effort). */
static void send_notes(struct p2p *p, const struct touch_note *v, uint32_t n)
{
	struct store_fanout f;

	if (store_fanout_init(&f, p->st->topo->nr_nodes, sizeof(struct proto_touch_hdr),
			      sizeof(struct proto_touch)))
		return;
	for (uint32_t i = 0; i < n; i++)
		f.count[v[i].node]++;
	store_fanout_build(&f, PC_RPC_P2P_TOUCH);
	for (uint32_t r = 0; r < f.nr; r++) {
		struct proto_touch_hdr h = { .n = f.count[f.rpcs[r].peer] };

		memcpy(f.req[f.rpcs[r].peer], &h, sizeof(h));
	}
	for (uint32_t i = 0; i < n; i++) {
		void *at = store_fanout_item(&f, v[i].node);

		if (at)
			memcpy(at, &v[i].t, sizeof(v[i].t));
	}
	if (f.nr)
		pc_fabric_call(p->st->fabric, f.rpcs, f.nr);	/* results unused */
	store_fanout_fini(&f);
}

/* The sender: wakes every TOUCH_NAP_MS and sends once TOUCH_BATCH notes gathered, or
 * a drop waits, or the oldest note waited TOUCH_WAIT_MS; after TOUCH_IDLE_MS without
 * notes, or when the store closes, it ends (the next note starts another). */
static void send_touches(struct p2p_job *j)
{
	struct p2p *p = j->p;
	struct touch_note *v = malloc(TOUCH_CAP * sizeof(*v));
	uint32_t idle = 0, waited = 0, n;

	for (;;) {
		bool closing = __atomic_load_n(&p->closing, __ATOMIC_ACQUIRE), go;

		pthread_mutex_lock(&p->touch_lock);
		n = p->nr_notes;
		go = v && n && (n >= TOUCH_BATCH || p->drops_waiting || waited >= TOUCH_WAIT_MS);
		if (go) {
			memcpy(v, p->notes, n * sizeof(*v));
			p->nr_notes = 0;
			p->drops_waiting = false;
		}
		if (!v || closing || (!n && idle >= TOUCH_IDLE_MS)) {
			p->touch_queued = false;
			pthread_mutex_unlock(&p->touch_lock);
			break;
		}
		pthread_mutex_unlock(&p->touch_lock);
		if (go)
			send_notes(p, v, n);
		waited = go || !n ? 0 : waited + TOUCH_NAP_MS;
		idle = n ? 0 : idle + TOUCH_NAP_MS;
		pc_env_sleep(p->st->env, TOUCH_NAP_MS * 1000000ULL);
	}
	free(v);
}

static struct touch_note note_for(struct pc_keyhash key, const struct dir_loc *l, uint32_t flags)
{
	return (struct touch_note){ .node = l->node,
				    .t = { .addr = l->addr, .gen = l->gen, .lo = key.lo, .hi = key.hi,
					   .cls = l->cls, .flags = flags } };
}

/* Under touch_lock, after adding notes: whether a sender must start (none runs);
 * marks it running. */
static bool sender_due(struct p2p *p)
{
	if (p->touch_queued || !p->nr_notes)
		return false;
	p->touch_queued = true;
	return true;
}

static void start_sender(struct p2p *p)
{
	if (!spawn(p, "pc-p2p-touch", send_touches, NULL, 0, true)) {
		pthread_mutex_lock(&p->touch_lock);
		p->touch_queued = false;	/* the next note tries again */
		pthread_mutex_unlock(&p->touch_lock);
	}
}

/* After a batch's READs: note the hits on other nodes' pages, and start a job to send
 * them once there are TOUCH_BATCH. */
void p2p_note_reads(struct p2p *p, const struct pkey *k, const uint32_t *at,
			 const struct pc_op *ops, uint32_t n)
{
	bool start;

	if (!n)
		return;
	pthread_mutex_lock(&p->touch_lock);
	for (uint32_t j = 0; j < n && p->nr_notes < TOUCH_CAP; j++) {
		const struct pkey *x = &k[at[j]];

		if (!ops[j].status && x->verdict == SLOT_HIT)
			p->notes[p->nr_notes++] = note_for(x->key, &x->loc, 0);
	}
	start = sender_due(p);
	pthread_mutex_unlock(&p->touch_lock);
	if (start)
		start_sender(p);
}

/* This shard replaced old, another node's publication of key: that block is an orphan
 * now. Ours is freed here; another node's gets a note, sent at once. */
void p2p_drop_replaced(struct p2p *p, struct pc_keyhash key, const struct dir_loc *old)
{
	bool start;

	if (old->node == p->st->self) {
		free_orphan(p, key, old);
		return;
	}
	pthread_mutex_lock(&p->touch_lock);
	if (p->nr_notes < TOUCH_CAP) {
		p->notes[p->nr_notes++] = note_for(key, old, PROTO_TOUCH_DROP);
		p->drops_waiting = true;
	}
	start = sender_due(p);
	pthread_mutex_unlock(&p->touch_lock);
	if (start)
		start_sender(p);
}
