/*
 * slotmap_fixture.h - clusters of in-process stores for the slotmap and store tests:
 * n nodes named n0.. on the inproc fabric, keys placed on a chosen owner, batches of
 * checked pages.
 *
 * fixture_payload_free opens stores without payloads (the simulator's mode);
 * fixture_shared makes stores map each other's slots (the simulator's hit-rate mode).
 * Both apply to the stores a later up() or open_node() opens.
 */
#ifndef PC_TEST_SLOTMAP_FIXTURE_H
#define PC_TEST_SLOTMAP_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <peercache/peercache.h>
#include "config/topology.h"
#include "inproc/inproc.h"

#define MAXN 4

struct cluster {
	struct pc_topology *topo;
	struct inproc_world *w;
	struct pc_store *s[MAXN];
	uint32_t n;
};

extern bool fixture_payload_free;
extern bool fixture_shared;

/* Suite init and cleanup: the suite's stores map each other's slots. 0. */
int fixture_map_peers(void);
int fixture_unmap_peers(void);

/* Open node (NULL: a client) of C's topology, with env (NULL: the default). */
struct pc_store *open_node(struct cluster *C, const char *node, struct pc_env *env);

/* n nodes named n0.. with the given store section, all open; down() closes them. */
struct cluster *up(uint32_t n, const char *store);
void down(struct cluster *C);

uint32_t owner_of(struct cluster *C, const char *key);

/* The next key "<prefix><j>" owned by node, into out (32 bytes). */
void key_on(struct cluster *C, uint32_t node, const char *prefix, int *j, char *out);

struct pc_metrics metrics(struct pc_store *s);

/* n pages of len bytes under keys[i], in one buffer. */
struct batch {
	size_t n;
	char (*keys)[32];
	uint8_t *buf;
	size_t len;
	struct pc_page *pg;
};

struct batch *batch_new(size_t n, size_t len);
void batch_free(struct batch *b);

/* Pages for set: keys[i], content version v (pc_test_fill). */
void batch_for_set(struct batch *b, uint32_t v);

/* Pages for get into the zeroed buffer, expecting length expect (0: any). */
void batch_for_get(struct batch *b, size_t expect);

/* A mixed workload of n sets and n gets over 3 nodes, two classes, overwrites: each
 * page's outcome (status, or length on a hit) into outcome[2n]; slot memory of the
 * three nodes and their round trips. Same workload, same outcomes, whatever the mode. */
void run_mixed(int *outcome, size_t n, uint64_t *mem, uint64_t *round_trips);

#endif
