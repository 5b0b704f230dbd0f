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
 * Not for: the read and write paths (slotmap_read.c, slotmap_write.c), promotion
 * (slotmap_promote.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "slotmap_spill.h"

#define SWEEP_NS 10000000ULL	/* the task's period */
#define SWEEP_BUCKETS 2048	/* buckets looked at per class and period, at most: */
#define SWEEP_ROUNDS 10		/* a whole class in this many periods, when fewer do */
#define BATCH_PAGES 64		/* pages per disk write, at most... */
#define BATCH_BYTES (8u << 20)	/* ...and about this many bytes */

/* ------------------------------------------------------------------ demotion */

uint32_t sm_spill_demote(struct sm_spill *sp, struct sm_cand *cv, uint32_t n, uint8_t *bounce)
{
	struct slotmap *sm = sp->sm;
	struct store_svc *st = sm->st;
	struct disk_blk b[BATCH_PAGES];
	uint32_t at[BATCH_PAGES], nb = 0, freed = 0;

	for (uint32_t c = 0; c < sp->nr_classes; c++) {
		uint64_t page = sm->own->cls[c].g.page_bytes;

		nb = 0;
		for (uint32_t i = 0; i < n; i++) {
			struct sm_cand *x = &cv[i];
			uint8_t *buf = sm->payload_free ? NULL : bounce + (size_t)nb * sp->page_max;
			struct slot_header now;
			uint32_t len;

			/* a header claiming more than the class holds is never copied */
			if (x->cls != c || x->h.payload_len > page)
				continue;
			/* a page that moved or changed since the sweep saw it stays put */
			if (slot_read_local(sm_spill_slot(sm, c, x->bucket, x->way), x->h.key, x->h.payload_len,
					    x->h.payload_len, buf, &len) != SLOT_HIT)
				continue;
			slot_header_load(sm_spill_slot(sm, c, x->bucket, x->way), &now);
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
			struct sm_cand *x = &cv[at[k]];

			if (b[k].status) {
				METRIC_ADD(st, spill_failures, 1);
				continue;	/* the page stays in its slot: nothing is lost */
			}
			/* rewritten meanwhile: the slot keeps the new page, the disk copy is a
			 * spare that the next sweep drops as stale */
			if (slot_evict_local(sm_spill_slot(sm, c, x->bucket, x->way), &x->h,
					     &sm_spill_tags(sm, c, x->bucket)[x->way]))
				continue;
			METRIC_ADD(st, spill_demoted, 1);
			freed++;
		}
	}
	return freed;
}

/* Look at one bucket: drop disk copies older than the slots' versions, and pick the
 * oldest pages to move when fewer than free_ways ways are empty. */
static uint32_t sweep_bucket(struct sm_spill *sp, uint32_t c, uint64_t bucket, struct sm_cand *out)
{
	struct slotmap *sm = sp->sm;
	const struct slot_geometry *g = &sm->own->cls[c].g;
	struct slot_header h[SLOT_MAX_WAYS];
	uint32_t empty = 0, n = 0, order[SLOT_MAX_WAYS], nv = 0;
	bool check = disk_used(sp->disk[c]) > 0;

	for (uint32_t w = 0; w < g->ways; w++) {
		uint64_t aux;

		slot_header_load(sm_spill_slot(sm, c, bucket, w), &h[w]);
		if (!(h[w].seq & 1) && slot_header_empty(&h[w])) {
			empty++;
			continue;
		}
		if (!sm_spill_valid(&h[w]))
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
		out[n++] = (struct sm_cand){ .cls = c, .way = order[i], .bucket = bucket, .h = h[order[i]] };
	return n;
}

static void spill_task(void *arg)
{
	struct sm_spill *sp = arg;
	struct slotmap *sm = sp->sm;
	struct sm_cand cv[BATCH_PAGES];

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
					sm_spill_demote(sp, cv, n, sp->bounce);
					n = 0;
				}
				n += sweep_bucket(sp, c, sp->cursor[c]++ % g->nr_buckets, cv + n);
			}
			if (n)
				sm_spill_demote(sp, cv, n, sp->bounce);
		}
	}
}

/* ------------------------------------------------------------------ open, close */

int sm_spill_open(struct slotmap *sm, char *err, size_t errlen)
{
	struct store_svc *st = sm->st;
	const struct pc_store_cfg *cfg = &st->topo->store;
	const struct pc_node *node = &st->topo->nodes[st->self];
	struct sm_spill *sp;
	int ret = 0;

	if (!cfg->slot_spill_ways)
		return 0;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	sp->sm = sm;
	sp->free_ways = cfg->slot_spill_ways;
	sp->nr_classes = sm->own->nr_classes;
	for (uint32_t c = 0; c < sp->nr_classes && !ret; c++) {
		uint32_t page = (uint32_t)sm->own->cls[c].g.page_bytes;
		/* a page takes a whole number of 4 KiB blocks of the file (O_DIRECT):
		 * the files together stay within nvme.capacity */
		uint64_t blocks = node->nvme.capacity / sp->nr_classes / disk_file_bytes(1, page, 4096);
		struct pc_storage_params p = { .size = sizeof(p), .dir = node->nvme.path, .direct = true,
					       .env = st->env, .backend_arg = st->backend_arg };

		if (!blocks || blocks > KEYMAP_MAX) {
			snprintf(err, errlen,
				 "spill: nvme.capacity %llu bytes split over %u size classes holds %llu pages of %u bytes (each rounded up to 4 KiB on disk); give the node between one page per class and 2^30",
				 (unsigned long long)node->nvme.capacity, sp->nr_classes,
				 (unsigned long long)blocks, page);
			ret = -EINVAL;
			break;
		}
		p.bytes = disk_file_bytes((uint32_t)blocks, page, 4096);
		ret = pc_storage_open_ops(st->storage, &p, &sp->stg[c]);
		if (!ret && sp->stg[c]->align > sp->align)
			sp->align = sp->stg[c]->align;
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
		sp->bounce = sm_spill_buf(sp, sp->batch * sp->page_max);
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
