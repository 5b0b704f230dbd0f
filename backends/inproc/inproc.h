/*
 * inproc.h - the in-process fabric: every node of a topology lives in one process
 * and one-sided ops are memcpy/CAS against the target's region table, with the same
 * key, bounds and rights checks the tcp server does. Unit tests use it; the
 * simulator builds its fabric on the same world.
 *
 * Not for: concurrency realism. An op completes inside post(); an RPC runs its
 * handler on the caller's thread; with inproc_world_share() a peer's memory is
 * mapped. Stopping a node's service (serve(NULL)) waits until no other thread's post
 * or call is inside it, as the tcp server does.
 */
#ifndef PC_INPROC_H
#define PC_INPROC_H

#include <stdbool.h>
#include <stdint.h>

#include <peercache/pc_fabric.h>

struct inproc_world;

/* A world for nr_nodes nodes; pass it as pc_fabric_params.backend_arg. */
struct inproc_world *inproc_world_create(uint32_t nr_nodes);
/* Every fabric opened on the world must be closed first. */
void inproc_world_destroy(struct inproc_world *w);

/* Make a node unreachable (its ops and RPCs fail with -ECONNREFUSED) or bring it back. */
void inproc_world_set_down(struct inproc_world *w, uint32_t node, bool down);

/* Let endpoints opened from now on map each other's regions (pc_fabric_map): their
 * stores then read and write peers' slots as their own memory, under the seqlock,
 * instead of posting ops. Off by default, so that tests exercise the ops. */
void inproc_world_share(struct inproc_world *w, bool share);

/* Run n ops against their nodes' regions as peers would, in order, each op's status
 * 0 or -errno: ops[idx[i]] when idx is given, else ops[i]. Exposed for the
 * simulator, which decides when the ops happen. */
void inproc_world_apply_batch(struct inproc_world *w, struct pc_op *ops, const uint32_t *idx,
			      size_t n);

/* Bring the memory ops[0..n) will touch at their nodes into cache, for a caller that
 * applies them later (the simulator, after the modelled transfer): the ops' misses
 * then overlap the time between. Changes nothing, counts nothing. */
void inproc_world_prefetch(struct inproc_world *w, const struct pc_op *ops, size_t n);

/* Run one RPC at its target as a peer would. */
int inproc_world_call(struct inproc_world *w, uint32_t from, struct pc_rpc *rpc);

#endif
