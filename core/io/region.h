/*
 * region.h - the table of memory a node lets peers touch, and the check every
 * emulated one-sided op passes before memory is touched.
 *
 * The tcp, in-process and simulated fabrics emulate one-sided ops in software, so
 * they must do what an RDMA NIC does in hardware: refuse an op whose region key is
 * unknown, whose range leaves the region, or that needs an access right the region
 * was not registered with.
 *
 * Readers never lock: the table is an immutable array behind an atomic pointer,
 * replaced whole on (rare) registration changes; replaced arrays are kept until the
 * table goes, since a reader may still be scanning one.
 *
 * Not for: registration with hardware (verbs registers with the NIC itself).
 */
#ifndef PC_REGION_H
#define PC_REGION_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/pc_fabric.h>

struct region_entry {
	uint32_t key;
	unsigned access;
	uint8_t *addr;
	size_t len;
};

struct region_set {
	size_t n;
	struct region_set *retired;	/* the set this one replaced */
	struct region_entry v[];
};

struct region_table {
	pthread_mutex_t lock;		/* writers only */
	struct region_set *cur;
};

int region_table_init(struct region_table *t);
void region_table_fini(struct region_table *t);

/* Add r with a fresh random nonzero key (from rnd) stored in r->key. 0 or -ENOMEM. */
int region_table_add(struct region_table *t, struct pc_region *r, uint64_t rnd);
void region_table_del(struct region_table *t, uint32_t key);

/* Where [raddr, raddr+len) of region key may be touched with access, or an error:
 * -ENOKEY (no such region), -EFAULT (out of bounds), -EACCES (not registered for that
 * access), -EINVAL (a CAS that is not 8 bytes, 8-aligned). The memory stays valid
 * while the region is registered; the caller guarantees that for the op's duration. */
int region_table_check(struct region_table *t, uint32_t key, uint64_t raddr, uint64_t len,
		       unsigned access, uint8_t **where);

/* The access an op kind needs. */
static inline unsigned region_access_for(uint8_t kind)
{
	return kind == PC_OP_READ ? PC_ACCESS_REMOTE_READ :
	       kind == PC_OP_WRITE ? PC_ACCESS_REMOTE_WRITE : PC_ACCESS_REMOTE_ATOMIC;
}

/* Run one op against memory the check returned (the in-process and simulated
 * fabrics share this; the tcp server does the same with sockets). CAS is atomic
 * against local CPU writers. */
void region_apply(const struct pc_op *op, uint8_t *where);

/* Served ops of one batch, counted locally and added to the fabric's counters once
 * (region_tally_flush), so that serving a batch costs a few atomic adds, not a few
 * per op. */
struct region_tally {
	uint64_t ops[4], bytes[4];	/* by pc_op_kind */
};

static inline void region_tally_op(struct region_tally *t, uint8_t kind, uint64_t bytes)
{
	t->ops[kind & 3]++;
	t->bytes[kind & 3] += bytes;
}

void region_tally_flush(struct pc_fabric_stats *s, const struct region_tally *t);

/* Count an op region_table_check() refused with status, by reason. */
void region_count_refused(struct pc_fabric_stats *s, int status);

/* CAS on 8 aligned bytes; returns the old value. */
uint64_t region_cas(uint8_t *where, uint64_t compare, uint64_t swap);

#endif
