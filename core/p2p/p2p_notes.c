/*
 * p2p_notes.c - what a publisher cannot see, since other nodes read its pool
 * one-sided: which of its blocks were read (so they move up its LRU), and which a
 * shard replaced with another node's copy (so they are freed). Readers and shards
 * gather notes; one background sender tells each publisher, in batches; publishers
 * apply the notes they receive.
 *
 * Not for: the directory (p2p_shard.c).
 */
#include "p2p_int.h"

/* Notes from other nodes on our blocks (proto.h): reads move them up the LRU;
 * replaced publications are freed. Only a shard (a node) replaces publications: a
 * client's drop note is refused, the whole request with it. */
int p2p_on_notes(struct p2p *p, uint32_t from, const void *req, size_t len)
{
	struct proto_touch_hdr h;
	const uint8_t *at = (const uint8_t *)req + sizeof(h);
	uint32_t *blocks, moved = 0;

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, req, sizeof(h));
	if (!h.n || h.n > PROTO_TOUCH_MAX || len != sizeof(h) + (size_t)h.n * sizeof(struct proto_touch))
		return -EPROTO;
	for (uint32_t i = 0; from == PC_PEER_NONE && i < h.n; i++) {
		struct proto_touch t;

		memcpy(&t, at + (size_t)i * sizeof(t), sizeof(t));
		if (t.flags & PROTO_TOUCH_DROP)
			return -EPERM;
	}
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
			l = (struct dir_loc){ .addr = t.addr, .inc = t.inc, .gen = t.gen,
					      .node = p->st->self, .cls = t.cls };
			if (t.flags & PROTO_TOUCH_DROP)
				p2p_free_orphan(p, (struct pc_keyhash){ t.lo, t.hi }, &l);
			else if (p2p_own_publication(p, &l, &blocks[nb]))
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
				    .t = { .addr = l->addr, .gen = l->gen, .inc = l->inc, .lo = key.lo,
					   .hi = key.hi, .cls = l->cls, .flags = flags } };
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
	if (!p2p_spawn(p, "pc-p2p-touch", send_touches, NULL, 0, true)) {
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
		p2p_free_orphan(p, key, old);
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
