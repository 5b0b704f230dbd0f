/*
 * slotmap_spill.c - spill under slotmap: this node's slots over its disk.
 *
 * A background task sweeps the buckets and keeps store.slot_spill_ways ways of each
 * free by moving its oldest pages to a disk pool (one per size class, in unlinked
 * files in the node's nvme.path), so that one-sided writes land in empty ways instead
 * of evicting. A reader whose slot read misses asks the owner once per batch
 * (PC_RPC_SLOT_PROMOTE); the owner reads the pages back, verifies them, puts them
 * into slots again and answers with their bytes. The hot path stays one READ.
 *
 * A page leaves its slot only after its copy is on disk, and only if the slot still
 * holds that version (slot_evict_local). A disk copy older than the version now in a
 * slot is dropped when the sweep sees the slot, so that a page rewritten and then
 * evicted by a remote writer before the next sweep is the one window in which an
 * older version of a key can come back (keys of KV pages name their content, so
 * serving engines do not rewrite a key with other bytes).
 *
 * Not for: the read and write paths (slotmap_read.c, slotmap_write.c).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "slotmap_int.h"
#include "tier/disk.h"

#define SWEEP_NS 10000000ULL	/* the task's period */
#define SWEEP_BUCKETS 2048	/* buckets looked at per class and period, at most: */
#define SWEEP_ROUNDS 10		/* a whole class in this many periods, when fewer do */
#define BATCH_PAGES 64		/* pages per disk write, at most... */
#define BATCH_BYTES (8u << 20)	/* ...and about this many bytes */
#define PROMOTE_CHUNK (16u << 20)	/* bytes read back from disk at a time */

struct sm_spill {
	struct slotmap *sm;
	uint32_t free_ways;
	uint32_t nr_classes;
	struct pc_storage *stg[PC_MAX_CLASSES];
	struct disk_pool *disk[PC_MAX_CLASSES];
	uint64_t cursor[PC_MAX_CLASSES];
	uint32_t batch;			/* pages per demotion batch */
	uint64_t page_max;		/* the largest class's page */
	uint8_t *bounce;		/* the task's: batch pages of page_max */
	struct pc_task *task;
	int stop;
};

/* A page the sweep decided to move, as it was when seen. */
struct cand {
	uint32_t cls, way;
	uint64_t bucket;
	struct slot_header h;
};

static uint8_t *slot_at(struct slotmap *sm, uint32_t c, uint64_t bucket, uint32_t way)
{
	return sm_local(sm, (int)c, slot_offset(&sm->own->cls[c].g, bucket, way));
}

static uint32_t *tags_of(struct slotmap *sm, uint32_t c, uint64_t bucket)
{
	return (uint32_t *)sm_local(sm, (int)c, slot_index_offset(&sm->own->cls[c].g, bucket));
}

static bool valid(const struct slot_header *h)
{
	return !(h->seq & 1) && !slot_header_empty(h);
}

/* ------------------------------------------------------------------ demotion */

/* Copy the candidates' pages (verified) through bounce (n pages of page_max), write
 * them to disk in one batch per class, and free each slot that still holds the
 * version copied. Returns how many slots it freed. */
static uint32_t demote(struct sm_spill *sp, struct cand *cv, uint32_t n, uint8_t *bounce)
{
	struct slotmap *sm = sp->sm;
	struct pc_store *st = sm->st;
	struct disk_blk b[BATCH_PAGES];
	uint32_t at[BATCH_PAGES], nb = 0, freed = 0;

	for (uint32_t c = 0; c < sp->nr_classes; c++) {
		uint64_t page = sm->own->cls[c].g.page_bytes;

		nb = 0;
		for (uint32_t i = 0; i < n; i++) {
			struct cand *x = &cv[i];
			uint8_t *buf = sm->payload_free ? NULL : bounce + (size_t)nb * sp->page_max;
			struct slot_header now;
			uint32_t len;

			/* a header claiming more than the class holds is never copied */
			if (x->cls != c || x->h.payload_len > page)
				continue;
			/* a page that moved or changed since the sweep saw it stays put */
			if (slot_read_local(slot_at(sm, c, x->bucket, x->way), x->h.key, x->h.payload_len,
					    x->h.payload_len, buf, &len) != SLOT_HIT)
				continue;
			slot_header_load(slot_at(sm, c, x->bucket, x->way), &now);
			if (now.seq != x->h.seq)
				continue;
			b[nb] = (struct disk_blk){ .key = x->h.key, .data = buf, .len = len,
						   .aux = x->h.checksum };
			at[nb++] = i;
		}
		if (!nb)
			continue;
		disk_put(sp->disk[c], b, nb);
		for (uint32_t k = 0; k < nb; k++) {
			struct cand *x = &cv[at[k]];

			if (b[k].status) {
				METRIC_ADD(st, spill_failures, 1);
				continue;	/* the page stays in its slot: nothing is lost */
			}
			/* rewritten meanwhile: the slot keeps the new page, the disk copy is a
			 * spare that the next sweep drops as stale */
			if (slot_evict_local(slot_at(sm, c, x->bucket, x->way), &x->h,
					     &tags_of(sm, c, x->bucket)[x->way]))
				continue;
			METRIC_ADD(st, spill_demoted, 1);
			freed++;
		}
	}
	return freed;
}

/* Look at one bucket: drop disk copies older than the slots' versions, and pick the
 * oldest pages to move when fewer than free_ways ways are empty. */
static uint32_t sweep_bucket(struct sm_spill *sp, uint32_t c, uint64_t bucket, struct cand *out)
{
	struct slotmap *sm = sp->sm;
	const struct slot_geometry *g = &sm->own->cls[c].g;
	struct slot_header h[SLOT_MAX_WAYS];
	uint32_t empty = 0, n = 0, order[SLOT_MAX_WAYS], nv = 0;
	bool check = disk_used(sp->disk[c]) > 0;

	for (uint32_t w = 0; w < g->ways; w++) {
		uint64_t aux;

		slot_header_load(slot_at(sm, c, bucket, w), &h[w]);
		if (!(h[w].seq & 1) && slot_header_empty(&h[w])) {
			empty++;
			continue;
		}
		if (!valid(&h[w]))
			continue;
		order[nv++] = w;
		if (check && disk_has(sp->disk[c], h[w].key, NULL, NULL, &aux) && aux != h[w].checksum &&
		    disk_remove_if(sp->disk[c], h[w].key, aux))
			METRIC_ADD(sm->st, spill_stale, 1);
	}
	if (empty >= sp->free_ways)
		return 0;
	/* oldest stamps first */
	for (uint32_t i = 1; i < nv; i++)
		for (uint32_t j = i; j > 0 && h[order[j]].stamp < h[order[j - 1]].stamp; j--) {
			uint32_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (uint32_t i = 0; i < nv && empty + n < sp->free_ways; i++)
		out[n++] = (struct cand){ .cls = c, .way = order[i], .bucket = bucket, .h = h[order[i]] };
	return n;
}

static void spill_task(void *arg)
{
	struct sm_spill *sp = arg;
	struct slotmap *sm = sp->sm;
	struct cand cv[BATCH_PAGES];

	while (!__atomic_load_n(&sp->stop, __ATOMIC_ACQUIRE)) {
		pc_env_sleep(sm->st->env, SWEEP_NS);
		for (uint32_t c = 0; c < sp->nr_classes; c++) {
			const struct slot_geometry *g = &sm->own->cls[c].g;
			uint64_t todo = (g->nr_buckets + SWEEP_ROUNDS - 1) / SWEEP_ROUNDS;

			if (todo < 64)
				todo = g->nr_buckets < 64 ? g->nr_buckets : 64;
			if (todo > SWEEP_BUCKETS)
				todo = SWEEP_BUCKETS;
			uint32_t n = 0;

			for (uint64_t i = 0; i < todo; i++) {
				if (n + sp->free_ways > sp->batch) {
					demote(sp, cv, n, sp->bounce);
					n = 0;
				}
				n += sweep_bucket(sp, c, sp->cursor[c]++ % g->nr_buckets, cv + n);
			}
			if (n)
				demote(sp, cv, n, sp->bounce);
		}
	}
}

/* ------------------------------------------------------------------ promotion */

/*
 * Put a page back into its bucket: not over a copy of the key already there (a writer
 * got in first: the caller reads that one), into an empty way if there is one, else
 * over the oldest page, which goes to disk first. The slot is claimed only from the
 * version the choice was made on; if it changed, look again. 0, -EEXIST or -EBUSY.
 */
static int install(struct sm_spill *sp, uint32_t c, struct pc_keyhash key, const void *page,
		   uint32_t len)
{
	struct slotmap *sm = sp->sm;
	const struct slot_geometry *g = &sm->own->cls[c].g;
	uint64_t bucket = slot_bucket_of(g, key);
	struct slot_header h[SLOT_MAX_WAYS];
	uint8_t *vb = NULL;
	int ret = -EBUSY;

	for (int attempt = 0; attempt < 16 && ret == -EBUSY; attempt++) {
		bool evicts;
		int w;

		if (attempt)
			sched_yield();
		for (uint32_t x = 0; x < g->ways; x++) {
			slot_header_load(slot_at(sm, c, bucket, x), &h[x]);
			if (valid(&h[x]) && keyhash_eq(h[x].key, key)) {
				free(vb);
				return -EEXIST;
			}
		}
		w = slot_pick_way(h, g->ways, key, slot_predicted_way(g, key), 0, &evicts);
		if (w < 0)
			break;
		if (!slot_header_empty(&h[w]) || h[w].seq & 1) {
			struct cand x = { .cls = c, .way = (uint32_t)w, .bucket = bucket, .h = h[w] };

			/* the oldest page goes to disk first; a slot being written is left */
			if (!valid(&h[w]) || (!vb && !sm->payload_free && !(vb = malloc(sp->page_max))))
				continue;
			if (!demote(sp, &x, 1, vb))
				continue;
			slot_header_load(slot_at(sm, c, bucket, (uint32_t)w), &h[w]);
		}
		ret = slot_write_local_at(slot_at(sm, c, bucket, (uint32_t)w), g, key, page, len,
					  slot_next_stamp(h, g->ways, pc_env_now(sm->st->env)),
					  h[w].seq, &tags_of(sm, c, bucket)[w]);
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
	uint32_t corrupt = 0;

	for (uint32_t i = i0; i < i1; i++)
		if (cls[i] >= 0)
			bytes += sm->own->cls[cls[i]].g.page_bytes;
	if (!sm->payload_free)
		buf = malloc(bytes ? bytes : 1);
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
		int ret;

		if (cls[i] < 0)
			continue;
		if (d->status) {
			corrupt += d->status == -EBADMSG;
			continue;
		}
		ret = install(sp, (uint32_t)cls[i], d->key, d->data, d->len);
		if (ret == -EEXIST) {
			a->status = -EAGAIN;	/* a copy is in its slot: read that one */
			continue;
		}
		if (ret && disk_put(sp->disk[cls[i]], d, 1) != 1)
			METRIC_ADD(sm->st, spill_failures, 1);	/* no slot, no disk: lost */
		if (!ret)
			METRIC_ADD(sm->st, spill_promoted, 1);
		if ((q->expect && d->len != q->expect) || d->len > q->cap) {
			a->status = -EMSGSIZE;	/* not the page this reader can take */
			continue;
		}
		a->len = d->len;
		a->checksum = sm->payload_free ? 0 : slot_checksum(d->key, d->data, d->len);
		if (payloads && (sm->payload_free || *used + d->len <= budget) &&
		    (sm->payload_free || !pc_msg_append(payloads, d->data, d->len))) {
			*used += sm->payload_free ? 0 : d->len;
			a->status = 0;
		} else {
			/* in its slot again: read it there; or, not placed, still on disk */
			a->status = ret ? -EBUSY : -EAGAIN;
		}
	}
	if (corrupt) {
		METRIC_ADD(sm->st, spill_corrupt, corrupt);
		pc_warn("spill: %u page(s) failed their checksum on disk; they are misses", corrupt);
	}
out:
	free(b);
	free(at);
	free(buf);
}

void sm_spill_promote(struct slotmap *sm, const struct proto_promote_key *keys, uint32_t n,
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

int sm_spill_rpc(struct slotmap *sm, const void *req, size_t len, struct pc_msg *resp)
{
	struct proto_promote h;
	struct proto_promote_key *keys;
	struct pc_msg payloads = { 0 };
	int ret;

	if (!sm->spill)
		return -EOPNOTSUPP;
	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, req, sizeof(h));
	if (!h.n || h.n > PROTO_PROMOTE_MAX_KEYS || len != sizeof(h) + (size_t)h.n * sizeof(*keys))
		return -EPROTO;
	keys = malloc(h.n * sizeof(*keys));
	if (!keys || pc_msg_reserve(resp, h.n * sizeof(struct proto_promote_ans))) {
		free(keys);
		return -ENOMEM;
	}
	memcpy(keys, (const uint8_t *)req + sizeof(h), h.n * sizeof(*keys));
	sm_spill_promote(sm, keys, h.n, h.budget, resp->data, &payloads);
	resp->len = h.n * sizeof(struct proto_promote_ans);
	ret = pc_msg_append(resp, payloads.data, payloads.len);
	pc_msg_free(&payloads);
	free(keys);
	return ret;
}

/* ------------------------------------------------------------------ open, close */

int sm_spill_open(struct slotmap *sm, char *err, size_t errlen)
{
	struct pc_store *st = sm->st;
	const struct pc_store_cfg *cfg = &st->topo->store;
	const struct pc_node *node = &st->topo->nodes[st->self];
	struct sm_spill *sp;
	int ret = 0;

	if (!cfg->slot_spill_ways)
		return 0;
	if (sm->payload_free && !st->storage) {
		snprintf(err, errlen, "spill: a payload-free store spills only to the simulator's disk");
		return -EINVAL;
	}
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	sp->sm = sm;
	sp->free_ways = cfg->slot_spill_ways;
	sp->nr_classes = sm->own->nr_classes;
	for (uint32_t c = 0; c < sp->nr_classes && !ret; c++) {
		uint32_t page = (uint32_t)sm->own->cls[c].g.page_bytes;
		uint64_t blocks = node->nvme.capacity / sp->nr_classes / page;
		struct pc_storage_params p = { .dir = node->nvme.path, .direct = true,
					       .env = st->env, .backend_arg = st->backend_arg };

		if (!blocks || blocks > KEYMAP_MAX) {
			snprintf(err, errlen,
				 "spill: nvme.capacity %llu bytes split over %u size classes holds %llu pages of %u bytes; give the node between one page per class and 2^30",
				 (unsigned long long)node->nvme.capacity, sp->nr_classes,
				 (unsigned long long)blocks, page);
			ret = -EINVAL;
			break;
		}
		p.bytes = disk_file_bytes((uint32_t)blocks, page, 4096);
		ret = st->storage ? pc_storage_open_ops(st->storage, &p, &sp->stg[c]) :
				    pc_storage_open("posix", &p, &sp->stg[c]);
		if (!ret)
			ret = disk_open(sp->stg[c], (uint32_t)blocks, page, sm->payload_free, &sp->disk[c]);
		if (ret)
			snprintf(err, errlen,
				 "spill: disk directory %s: %s; set nodes.nvme.path to a writable directory with room for nvme.capacity (%llu bytes)",
				 node->nvme.path, strerror(-ret), (unsigned long long)node->nvme.capacity);
		else
			pc_info("slot spill ready: class %u keeps %u of %u ways free; %llu pages of %u B on disk in %s",
				c, sp->free_ways, sm->own->cls[c].g.ways, (unsigned long long)blocks, page,
				node->nvme.path);
	}
	sp->page_max = sm->own->cls[sp->nr_classes - 1].g.page_bytes;
	sp->batch = (uint32_t)(BATCH_BYTES / sp->page_max);
	if (sp->batch > BATCH_PAGES)
		sp->batch = BATCH_PAGES;
	if (sp->batch < sp->free_ways)
		sp->batch = sp->free_ways;	/* one bucket's worth at least */
	if (!ret && !sm->payload_free) {
		sp->bounce = malloc(sp->batch * sp->page_max);
		ret = sp->bounce ? 0 : -ENOMEM;
	}
	if (!ret) {
		ret = pc_env_spawn(st->env, "pc-spill", spill_task, sp, &sp->task);
		if (ret)
			snprintf(err, errlen, "spill: cannot start its task: %s", strerror(-ret));
	}
	sm->spill = sp;
	sm->own->spill = !ret;
	sm->any_spill |= sm->own->spill;
	if (ret) {
		sp->task = NULL;
		sm_spill_close(sm);
	}
	return ret;
}

void sm_spill_close(struct slotmap *sm)
{
	struct sm_spill *sp = sm->spill;

	if (!sp)
		return;
	if (sp->task) {
		__atomic_store_n(&sp->stop, 1, __ATOMIC_RELEASE);
		pc_env_join(sm->st->env, sp->task);
	}
	for (uint32_t c = 0; c < PC_MAX_CLASSES; c++) {
		disk_close(sp->disk[c]);
		pc_storage_close(sp->stg[c]);
	}
	free(sp->bounce);
	free(sp);
	sm->spill = NULL;
}

void sm_spill_metrics(struct slotmap *sm, struct pc_metrics *m)
{
	struct disk_stats ds;

	if (!sm || !sm->spill)
		return;
	for (uint32_t c = 0; c < sm->spill->nr_classes; c++) {
		disk_get_stats(sm->spill->disk[c], &ds);
		m->spill_dropped += ds.dropped;
	}
}

struct disk_pool *sm_spill_disk(struct slotmap *sm, uint32_t c)
{
	return sm->spill && c < sm->spill->nr_classes ? sm->spill->disk[c] : NULL;
}
