/*
 * tier_smoke.h - the seed's three smoke runs against one tiered peer (8 host + 64
 * disk blocks), shared by the in-process test and the one across processes.
 */
#ifndef PC_TIER_SMOKE_H
#define PC_TIER_SMOKE_H

#include <stdint.h>

#include <peercache/peercache.h>

#define SMOKE_BLOCK 12288

/* Block i of set `set` ('A', 'B', ...): its hash and its bytes. */
uint64_t smoke_hash(char set, uint32_t i);
void smoke_fill(uint8_t *p, char set, uint32_t i);

/* Put n blocks of a set through client st to node; returns how many were stored. */
int smoke_put(struct pc_store *st, const char *node, char set, uint32_t from, uint32_t n);
/* Fetch them back; returns how many came back byte-identical (a wrong byte fails). */
int smoke_fetch(struct pc_store *st, const char *node, char set, uint32_t from, uint32_t n);

/* Run 1 (store set A, fetch back), run 2 (store set B: 4 demotions), run 3 (offer A
 * again: nothing new; fetch: 4 promoted, 4 others demoted), asserting bytes and the
 * peer's counters. The peer must be fresh, with 8 host and 64 disk blocks. */
void smoke_runs(struct pc_store *st, const char *node);

#endif
