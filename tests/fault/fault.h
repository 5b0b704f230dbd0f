/*
 * fault.h - the fault shim every test shares: fabric and storage wrappers that fail,
 * delay, drop, corrupt, tear or stop the Nth matching op, RPC or disk transfer.
 *
 * A shim wraps an open pc_fabric or pc_storage in place: its ops table is replaced by
 * one that applies the plan's rules and hands what is left to the original table,
 * so the core and the backend run unchanged (SQLite's test_vfs.c). A wrapped fabric
 * maps nothing (pc_fabric.maps false), so every access stays an op the rules can hit.
 *
 * Rules count the ops (RPCs, transfers) that match their site, from the moment the
 * rule is added; a rule fires on matches nth .. nth + count - 1 (count 0: every match
 * from nth on). docs/faults.md lists the fault classes and what each must end as.
 *
 * Not for: production. Only tests link it; the core has no fault hooks of its own.
 */
#ifndef PC_TEST_FAULT_H
#define PC_TEST_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#include <peercache/pc_fabric.h>
#include <peercache/pc_storage.h>

/* What a rule matches. */
enum fault_site {
	FAULT_OP_ANY = 0,		/* any one-sided op */
	FAULT_OP_READ = PC_OP_READ,
	FAULT_OP_WRITE = PC_OP_WRITE,
	FAULT_OP_CAS = PC_OP_CAS,
	FAULT_RPC,			/* an RPC (opcode: rule.opcode, 0 = any) */
	FAULT_IO_READ,			/* a storage read transfer */
	FAULT_IO_WRITE,			/* a storage write transfer */
	FAULT_POST,			/* a whole post() call: fails unrun with rule.err */
};

/* What it does to a match. */
enum fault_kind {
	FAULT_FAIL,		/* not run; status rule.err (default -EIO) */
	FAULT_DELAY,		/* run after rule.delay_ns (the whole call waits) */
	FAULT_DROP,		/* not run, reported done: a lost write, a CAS without effect,
				 * a read that leaves the buffer as it was; an RPC: -ETIMEDOUT */
	FAULT_CORRUPT,		/* run with one bit flipped: in what a READ or read transfer
				 * brought back, in what a WRITE or write transfer carries,
				 * in an RPC's response */
	FAULT_TEAR,		/* WRITE: only the first half of its bytes land, reported
				 * done (a writer that died in the middle of a write) */
	FAULT_EXIT,		/* the process _exit()s (FAULT_EXIT_STATUS) in place of the
				 * op: a writer killed at that point (for forked children) */
};

#define FAULT_EXIT_STATUS 86

struct fault_rule {
	enum fault_site site;
	enum fault_kind kind;
	uint64_t nth;		/* first match to hit, from 1 (0 is taken as 1) */
	uint64_t count;		/* matches hit from nth on; 0 = all */
	int err;		/* FAIL, POST: the -errno (0: -EIO) */
	uint64_t delay_ns;	/* DELAY */
	uint32_t only_peer;	/* fabric: 0, or only ops/RPCs to node index only_peer - 1 */
	uint16_t opcode;	/* RPC: only this opcode; 0 = any */
	uint32_t bit;		/* CORRUPT: which bit of the data (taken modulo its size) */
};

struct fault;

/* A plan with no rules. NULL on ENOMEM. */
struct fault *fault_new(void);
/* Detach from everything it wraps, wait for the calls it holds to end, and free. */
void fault_free(struct fault *ft);
/* Add a rule; returns its index (for fault_hits) or -ENOSPC. Thread-safe. */
int fault_add(struct fault *ft, struct fault_rule rule);
/* Drop every rule (hit counts are kept until the next fault_add). */
void fault_clear(struct fault *ft);
/* How many matches rule i has hit so far. */
uint64_t fault_hits(struct fault *ft, int i);

/* Wrap an open fabric or storage object: from now on its calls go through ft's rules.
 * 0, -EBUSY if it is wrapped already, -ENOSPC past the shim's table. */
int fault_wrap_fabric(struct fault *ft, struct pc_fabric *f);
int fault_wrap_storage(struct fault *ft, struct pc_storage *s);
/* Give the object its own ops back; returns when no shimmed call of its fault runs. */
void fault_unwrap_fabric(struct pc_fabric *f);
void fault_unwrap_storage(struct pc_storage *s);

#endif
