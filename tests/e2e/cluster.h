/*
 * cluster.h - a 3-node cluster on loopback for end-to-end tests (2 nodes where a
 * test asks): a topology file on free ports, pcd processes for some nodes, and
 * stores opened in the test process.
 */
#ifndef PC_TEST_CLUSTER_H
#define PC_TEST_CLUSTER_H

#include <stdbool.h>
#include <sys/types.h>

#include <peercache/peercache.h>
#include "config/topology.h"

#define NODES 3

struct ecl {
	char path[512];
	struct pc_topology *topo;
	uint16_t port0;
	uint32_t nodes;			/* NODES, or fewer (ecl_up_opts) */
	pid_t pcd[NODES];
	struct pc_store *n0;		/* node n0 in this process, when embedded */
	char pcd_args[512];		/* extra pcd flags, space-separated */
	int pcd_cpu;			/* the CPU every pcd is pinned to, or -1 */
};

/* How ecl_up_opts builds a cluster; zeroes are ecl_up's defaults. */
struct ecl_opts {
	uint32_t nodes;			/* 2 or NODES (0: NODES) */
	const char *pcd_args;		/* extra flags for every pcd */
	int pcd_cpu;			/* pin every pcd to this CPU + 1 (0: not pinned) */
};

/* Start the cluster: pcd (binary pcd) for nodes 1 and 2, and for node 0 too unless
 * embed_n0, in which case this process opens n0 itself. store is the inside of the
 * topology's store section; protocol tcp, rxe, ... Fails the test when it cannot. */
struct ecl *ecl_up(const char *pcd, const char *protocol, const char *store, bool embed_n0);
/* The same with extra flags for every pcd (e.g. "--host-blocks 8"). */
struct ecl *ecl_up_args(const char *pcd, const char *protocol, const char *store, bool embed_n0,
			const char *pcd_args);
struct ecl *ecl_up_opts(const char *pcd, const char *protocol, const char *store, bool embed_n0,
			const struct ecl_opts *o);
void ecl_down(struct ecl *E);
pid_t ecl_spawn_pcd(struct ecl *E, uint32_t i);
void ecl_stop_pcd(struct ecl *E, uint32_t i, int sig);
/* Whether pcd node's log holds what (printed with the log when not). */
bool ecl_logged(const char *node, const char *what);
/* A store on the cluster: node name, or NULL for a client. NULL on failure. */
struct pc_store *ecl_open_store(struct ecl *E, const char *node);

#endif
