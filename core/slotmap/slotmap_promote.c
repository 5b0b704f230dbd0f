/*
 * slotmap_promote.c - PC_RPC_SLOT_PROMOTE, both sides: a reader whose slot read
 * missed asks the owners that spill (one RPC each, in one phase; its own disk in
 * place); an owner reads the pages back from disk, verifies them, puts them into
 * slots again (making room by demoting the oldest) and answers with their bytes, or
 * with -EAGAIN when the page is back in its slot and cheaper read there.
 *
 * Not for: what a get does with the answers (slotmap_read.c), demotion
 * (slotmap_spill.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "slotmap_promote.h"
#include "slotmap_spill.h"

#define PROMOTE_CHUNK (16u << 20)	/* bytes read back from disk at a time */
#define PROMOTE_INLINE (8u << 20)	/* payload bytes an owner may answer with */

/* ------------------------------------------------------------------ the owner's side */

/*
 * Put a page back into its bucket: not over a copy of the key already there (a writer
 * got in first: the caller reads that one), into an empty way if there is one, else
 * over the oldest page, which goes to disk first. The slot is claimed only from the
 * version the choice was made on; if it changed, look again. sum: the page's
 * slot_checksum (NULL: payload-free). 0, -EEXIST or -EBUSY.
 */
static int install(struct sm_spill *sp, uint32_t c, struct pc_keyhash key, const void *page,
		   uint32_t len, const uint64_t *sum)
{
	struct slotmap *sm = sp->sm;
	const struct slot_geometry *g = &sm->own->cls[c].g;
	uint64_t bucket = slot_bucket_of(g, key);
	struct slot_header h[SLOT_MAX_WAYS];
	uint8_t *vb = NULL;
	int ret = -EBUSY;

	for (int attempt = 0; attempt < 16 && ret == -EBUSY; attempt++) {
		uint64_t now;
		bool evicts;
		int w;

		if (attempt)
			pc_env_yield(sm->st->env);
		for (uint32_t x = 0; x < g->ways; x++) {
			slot_header_load(sm_spill_slot(sm, c, bucket, x), &h[x]);
			if (sm_spill_valid(&h[x]) && keyhash_eq(h[x].key, key)) {
				free(vb);
				return -EEXIST;
			}
		}
		w = slot_pick_way(h, g->ways, key, slot_predicted_way(g, key), 0, &evicts);
		if (w < 0)
			break;
		if (h[w].seq & 1 ? !sm_claim_expired(sm, sm->st->self, (int)c, bucket, (uint32_t)w, h[w].seq) :
				   !slot_header_empty(&h[w])) {
			struct sm_cand x = { .cls = c, .way = (uint32_t)w, .bucket = bucket, .h = h[w] };

			/* the oldest page goes to disk first; a slot being written is left */
			if (!sm_spill_valid(&h[w]) ||
			    (!vb && !sm->payload_free && !(vb = sm_spill_buf(sp, sp->page_max))))
				continue;
			if (!sm_spill_demote(sp, &x, 1, vb))
				continue;
			slot_header_load(sm_spill_slot(sm, c, bucket, (uint32_t)w), &h[w]);
		}
		now = pc_env_now(sm->st->env);
		ret = slot_write_local_summed(sm_spill_slot(sm, c, bucket, (uint32_t)w), g, key, page,
					      len, sum, slot_next_stamp(h, g->ways, now), h[w].seq,
					      sm_claim_word(sm, now, h[w].seq),
					      &sm_spill_tags(sm, c, bucket)[w]);
		if (!ret)
			pc_env_copy(sm->st->env, len);
	}
	free(vb);
	return ret;
}

/* The class whose disk holds key (only the class of expect, when given), or -1. */
static int find_class(struct sm_spill *sp, struct pc_keyhash key, uint32_t expect)
{
	for (uint32_t c = 0; c < sp->nr_classes; c++) {
		if (expect && (expect > sp->sm->own->cls[c].g.page_bytes ||
			       (c && expect <= sp->sm->own->cls[c - 1].g.page_bytes)))
			continue;
		if (disk_has(sp->disk[c], key, NULL, NULL, NULL))
			return (int)c;
	}
	return -1;
}

/* Promote keys [i0, i1): they read back from disk at most PROMOTE_CHUNK bytes. */
static void promote_chunk(struct sm_spill *sp, const struct proto_promote_key *keys, const int *cls,
			  uint32_t i0, uint32_t i1, uint32_t budget, uint64_t *used,
			  struct proto_promote_ans *ans, struct pc_msg *payloads)
{
	struct slotmap *sm = sp->sm;
	uint32_t n = i1 - i0;
	struct disk_blk *b = calloc(n, sizeof(*b));
	uint32_t *at = malloc(n * sizeof(*at));
	uint8_t *buf = NULL;
	size_t bytes = 0;
	uint32_t corrupt = 0, unread = 0;

	for (uint32_t i = i0; i < i1; i++)
		if (cls[i] >= 0)
			bytes += sm->own->cls[cls[i]].g.page_bytes;
	if (!sm->payload_free)
		buf = sm_spill_buf(sp, bytes);	/* the disk reads land in it, no bounce */
	if (!b || !at || (!sm->payload_free && !buf))
		goto out;
	bytes = 0;
	for (uint32_t i = i0; i < i1; i++) {
		b[i - i0] = (struct disk_blk){ .key = { .lo = keys[i].lo, .hi = keys[i].hi },
					       .data = buf ? buf + bytes : NULL, .status = -ENOENT };
		if (cls[i] >= 0) {
			b[i - i0].cap = (uint32_t)sm->own->cls[cls[i]].g.page_bytes;
			bytes += b[i - i0].cap;
		}
	}
	/* one batched read per class */
	for (uint32_t c = 0; c < sp->nr_classes; c++) {
		struct disk_blk *g = malloc(n * sizeof(*g));
		uint32_t k = 0;

		for (uint32_t i = i0; g && i < i1; i++)
			if (cls[i] == (int)c) {
				g[k] = b[i - i0];
				at[k++] = i - i0;
			}
		/* taken off the disk as it is read: a copy demoted again later is new */
		if (k)
			disk_get(sp->disk[c], g, k, true);
		for (uint32_t j = 0; j < k; j++)
			b[at[j]] = g[j];
		free(g);
	}
	for (uint32_t i = i0; i < i1; i++) {
		const struct proto_promote_key *q = &keys[i];
		struct disk_blk *d = &b[i - i0];
		struct proto_promote_ans *a = &ans[i];
		uint64_t sum;
		int ret;

		if (cls[i] < 0)
			continue;
		if (d->status) {
			corrupt += d->status == -EBADMSG;
			unread += d->status != -EBADMSG && d->status != -ENOENT;
			continue;
		}
		/* one checksum for the slot's header and the answer */
		sum = sm->payload_free ? 0 : slot_checksum(d->key, d->data, d->len);
		ret = install(sp, (uint32_t)cls[i], d->key, d->data, d->len,
			      sm->payload_free ? NULL : &sum);
		if (ret == -EEXIST) {
			a->status = -EAGAIN;	/* a copy is in its slot: read that one */
			continue;
		}
		if (ret) {
			d->sum_given = true;	/* back with the sum its bytes were verified against */
			if (disk_put(sp->disk[cls[i]], d, 1) != 1)
				METRIC_ADD(sm->st, spill_failures, 1);	/* no slot, no disk: lost */
		}
		if (!ret)
			METRIC_ADD(sm->st, spill_promoted, 1);
		if ((q->expect && d->len != q->expect) || d->len > q->cap) {
			a->status = -EMSGSIZE;	/* not the page this reader can take */
			continue;
		}
		a->len = d->len;
		a->checksum = sum;
		/* the payload after the answers, in room the caller reserved (the answers
		 * live in the same buffer: it must not move) */
		if (payloads && *used + d->len <= budget &&
		    (sm->payload_free || payloads->len + d->len <= payloads->cap)) {
			if (!sm->payload_free) {
				memcpy((uint8_t *)payloads->data + payloads->len, d->data, d->len);
				payloads->len += d->len;
			} else {
				payloads->virt_len += d->len;
			}
			pc_env_copy(sm->st->env, d->len);
			*used += d->len;
			a->status = 0;
		} else {
			/* in its slot again: read it there; or, not placed, still on disk */
			a->status = ret ? -EBUSY : -EAGAIN;
		}
	}
	if (unread)
		METRIC_ADD(sm->st, spill_read_errors, unread);
	if (corrupt) {
		METRIC_ADD(sm->st, spill_corrupt, corrupt);
		pc_warn("spill: %u page(s) failed their checksum on disk; they are misses", corrupt);
	}
out:
	free(b);
	free(at);
	free(buf);
}

/* Promote keys from this node's disk back into its slots; answers get one entry per
 * key and, when payloads is not NULL, the payloads of the 0 answers are appended to it
 * up to budget bytes and its reserved room (later ones are answered -EAGAIN: read them
 * in their slots). */
static void promote(struct slotmap *sm, const struct proto_promote_key *keys, uint32_t n,
		      uint32_t budget, struct proto_promote_ans *ans, struct pc_msg *payloads)
{
	struct sm_spill *sp = sm->spill;
	int *cls = malloc((n ? n : 1) * sizeof(*cls));
	uint64_t bytes = 0, used = 0;
	uint32_t i0 = 0;

	for (uint32_t i = 0; i < n; i++)
		ans[i] = (struct proto_promote_ans){ .status = -ENOENT };
	if (!sp || !cls) {
		free(cls);
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		cls[i] = find_class(sp, (struct pc_keyhash){ .lo = keys[i].lo, .hi = keys[i].hi },
				    keys[i].expect);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t page = cls[i] >= 0 ? sm->own->cls[cls[i]].g.page_bytes : 0;

		if (i > i0 && bytes + page > PROMOTE_CHUNK) {
			promote_chunk(sp, keys, cls, i0, i, budget, &used, ans, payloads);
			i0 = i;
			bytes = 0;
		}
		bytes += page;
	}
	if (n)
		promote_chunk(sp, keys, cls, i0, n, budget, &used, ans, payloads);
	free(cls);
}

int sm_promote_rpc(struct slotmap *sm, const void *req, size_t len, struct pc_msg *resp)
{
	struct proto_promote h;
	struct proto_promote_key *keys;
	size_t answers, room;

	if (!sm->spill)
		return -EOPNOTSUPP;
	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, req, sizeof(h));
	if (!h.n || h.n > PROTO_PROMOTE_MAX_KEYS || len != sizeof(h) + (size_t)h.n * sizeof(*keys))
		return -EPROTO;
	/* the answers, then room for the payloads the budget lets through (never more
	 * than PROMOTE_INLINE, whatever the reader asked): they are copied in once, and
	 * the buffer never moves under the answers */
	if (h.budget > PROMOTE_INLINE)
		h.budget = PROMOTE_INLINE;
	answers = h.n * sizeof(struct proto_promote_ans);
	room = sm->payload_free ? 0 : (size_t)h.n * sm->spill->page_max;
	room = room < h.budget ? room : h.budget;
	keys = malloc(h.n * sizeof(*keys));
	if (!keys || pc_msg_reserve(resp, answers + room)) {
		free(keys);
		return -ENOMEM;
	}
	memcpy(keys, (const uint8_t *)req + sizeof(h), h.n * sizeof(*keys));
	resp->len = answers;
	promote(sm, keys, h.n, h.budget, resp->data, resp);
	free(keys);
	return 0;
}

/* ------------------------------------------------------------------ the reader's side */

void sm_promote_ask(struct slotmap *sm, struct sm_promote *p)
{
	struct store_svc *st = sm->st;
	uint32_t nn = st->topo->nr_nodes, nr, *cnt;
	struct store_fanout *f = &p->f;
	struct pc_rpc *rpcs, *remote;

	for (size_t i = 0; i < p->n; i++)
		p->q[i].status = -ENOENT;	/* until an answer says otherwise */
	if (store_fanout_init(f, nn, sizeof(struct proto_promote), sizeof(struct proto_promote_key)))
		return;
	cnt = f->count;
	for (size_t i = 0; i < p->n; i++)
		cnt[p->q[i].owner]++;
	for (uint32_t o = 0; o < nn; o++)
		if (cnt[o] > PROTO_PROMOTE_MAX_KEYS)
			cnt[o] = 0;	/* more than one request holds: those misses stand */
	/* per owner: the header, then its keys in the order given */
	store_fanout_build(f, PC_RPC_SLOT_PROMOTE);
	rpcs = f->rpcs;
	nr = f->nr;
	for (uint32_t r = 0; r < nr; r++) {
		struct proto_promote h = { .n = cnt[rpcs[r].peer], .budget = PROMOTE_INLINE };

		memcpy(f->req[rpcs[r].peer], &h, sizeof(h));
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct sm_promote_q *q = &p->q[i];
		struct proto_promote_key k = { .lo = q->h.lo, .hi = q->h.hi, .expect = q->expect,
					       .cap = q->cap };
		void *at = store_fanout_item(f, q->owner);

		if (at)
			memcpy(at, &k, sizeof(k));
	}
	/* our own disk in place (its request first), then the remote owners at once */
	remote = rpcs;
	for (uint32_t r = 0; r < nr; r++) {
		struct proto_promote_ans *ans;
		struct pc_rpc t;

		if (rpcs[r].peer != st->self)
			continue;
		ans = malloc(cnt[st->self] * sizeof(*ans));
		if (ans) {
			promote(sm, (const void *)(f->req[st->self] + sizeof(struct proto_promote)),
				cnt[st->self], 0, ans, NULL);
			rpcs[r].resp.data = ans;
			rpcs[r].resp.len = cnt[st->self] * sizeof(*ans);
		}
		rpcs[r].status = ans ? 0 : -ENOMEM;
		t = rpcs[0];
		rpcs[0] = rpcs[r];
		rpcs[r] = t;
		remote = rpcs + 1;
		break;
	}
	if (nr > (uint32_t)(remote - rpcs)) {
		store_call(st, remote, nr - (uint32_t)(remote - rpcs));
		METRIC_ADD(st, promote_rpcs, nr - (uint32_t)(remote - rpcs));
	}
	for (uint32_t r = 0; r < nr; r++) {
		uint32_t o = rpcs[r].peer, m = cnt[o], j = 0;
		const struct proto_promote_ans *ans = rpcs[r].resp.data;
		const uint8_t *payload;
		size_t need = (size_t)m * sizeof(*ans);

		if (rpcs[r].status || rpcs[r].resp.len < need) {
			if (rpcs[r].peer != st->self)
				METRIC_ADD(st, promote_failures, 1);
			continue;	/* the owner could not say: the misses stand */
		}
		payload = (const uint8_t *)rpcs[r].resp.data + need;
		for (uint32_t a = 0; a < m; a++)
			if (!ans[a].status && !sm->payload_free)
				need += ans[a].len;
		if (rpcs[r].resp.len != need) {
			pc_warn("node %s sent a malformed promote answer; its misses stand",
				st->topo->nodes[o].name);
			METRIC_ADD(st, promote_failures, 1);
			continue;
		}
		for (size_t i = 0; i < p->n && j < m; i++) {
			struct sm_promote_q *q = &p->q[i];

			if (q->owner != o)
				continue;
			q->status = ans[j].status;
			q->len = ans[j].len;
			q->checksum = ans[j].checksum;
			q->payload = payload;
			if (!ans[j].status && !sm->payload_free)
				payload += ans[j].len;
			j++;
		}
	}
}

void sm_promote_done(struct sm_promote *p)
{
	store_fanout_fini(&p->f);
}
