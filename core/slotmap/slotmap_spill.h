/*
 * slotmap_spill.h - this node's slots over its disk: what the demotion task
 * (slotmap_spill.c) and promotion (slotmap_promote.c) share.
 */
#ifndef PC_SLOTMAP_SPILL_H
#define PC_SLOTMAP_SPILL_H

#include "slotmap_int.h"
#include "tier/disk.h"

struct sm_spill {
	struct slotmap *sm;
	uint32_t free_ways;
	uint32_t nr_classes;
	struct pc_storage *stg[PC_MAX_CLASSES];
	struct disk_pool *disk[PC_MAX_CLASSES];
	uint64_t cursor[PC_MAX_CLASSES];
	uint32_t batch;			/* pages per demotion batch */
	uint64_t page_max;		/* the largest class's page */
	size_t align;			/* the disks' transfer alignment (largest of the
					 * classes'): buffers so aligned need no bounce */
	uint8_t *bounce;		/* the task's: batch pages of page_max */
	struct pc_task *task;
	int stop;
};

/* A page the sweep (or a promotion making room) decided to move, as it was when seen. */
struct sm_cand {
	uint32_t cls, way;
	uint64_t bucket;
	struct slot_header h;
};

static inline uint8_t *sm_spill_slot(struct slotmap *sm, uint32_t c, uint64_t bucket, uint32_t way)
{
	return sm_local(sm, (int)c, slot_offset(&sm->own->cls[c].g, bucket, way));
}

static inline uint32_t *sm_spill_tags(struct slotmap *sm, uint32_t c, uint64_t bucket)
{
	return (uint32_t *)sm_local(sm, (int)c, slot_index_offset(&sm->own->cls[c].g, bucket));
}

static inline bool sm_spill_valid(const struct slot_header *h)
{
	return !(h->seq & 1) && !slot_header_empty(h);
}

/* A buffer of bytes that the disks read into and write from directly (sm_spill.align;
 * free() it). NULL when out of memory. */
static inline uint8_t *sm_spill_buf(const struct sm_spill *sp, size_t bytes)
{
	size_t a = sp->align > 1 ? sp->align : 64;

	return aligned_alloc(a, bytes ? (bytes + a - 1) / a * a : a);
}

/* Start spilling this node's slots to its disk when the topology asks for it. */
int sm_spill_open(struct slotmap *sm, char *err, size_t errlen);
void sm_spill_close(struct slotmap *sm);

/* Copy the candidates' pages (verified) through bounce (n pages of page_max), write
 * them to disk in one batch per class, and free each slot that still holds the
 * version copied. Returns how many slots it freed. */
uint32_t sm_spill_demote(struct sm_spill *sp, struct sm_cand *cv, uint32_t n, uint8_t *bounce);

/* Add the spill counters the disk pools keep to m. */
void sm_spill_metrics(struct slotmap *sm, struct pc_metrics *m);

/* The disk pool of class c (NULL when not spilling), for tests. */
struct disk_pool *sm_spill_disk(struct slotmap *sm, uint32_t c);

#endif
