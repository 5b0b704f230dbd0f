/*
 * member_registry.h - a membership registry outside the cluster (store.discovery:
 * etcd): the node table and who is alive, kept in a service the nodes share instead
 * of learned by heartbeats. The core calls these ops from the membership task
 * (member.c); a backend implements them (backends/etcd/).
 *
 * The registry holds, under the cluster's prefix: the placement text every peer must
 * share, one record per table entry (name, address, port: permanent, given out once),
 * and one record per live node (its entry and incarnation) under a lease that the
 * node keeps alive and that expires when it stops. A registry that can watch the
 * records says when they changed, so that they are not listed every heartbeat.
 *
 * Not for: what membership does with the answers (member.c).
 */
#ifndef PC_MEMBER_REGISTRY_H
#define PC_MEMBER_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/topology.h"

struct registry_entry {
	uint32_t index;			/* in the node table */
	char name[PC_NAME_MAX];
	char address[PC_NAME_MAX];
	uint16_t port;
	bool live;			/* its lease holds */
	uint64_t incarnation;		/* when live */
};

struct registry_ops {
	const char *name;
	/* Connect (the topology's registry settings) and check that the cluster's
	 * placement text is placement (storing it when the cluster has none). 0;
	 * -ESTALE with the differing key in err; -errno with one line in err. */
	int (*open)(const struct pc_topology *t, const char *placement, void **out, char *err,
		    size_t errlen);
	void (*close)(void *r);
	/* Every entry of the node table, live or not: *n of at most cap. 0, or -errno
	 * when the registry cannot be reached (the caller keeps its last view). */
	int (*list)(void *r, struct registry_entry *e, uint32_t cap, uint32_t *n);
	/* The entry of node name: the one it holds, else want when free (its place in
	 * the topology file), else the lowest free one below cap. 0 with *index;
	 * -EEXIST: held at another address; -ENOSPC: none free; -errno. */
	int (*claim)(void *r, const char *name, const char *address, uint16_t port, uint32_t want,
		     uint32_t cap, uint32_t *index);
	/* Node index (incarnation) is alive for ttl_ms more: the first call takes a lease
	 * and writes the live record, later ones keep the lease alive (and write the
	 * record again when the lease had expired). 0 or -errno. */
	int (*alive)(void *r, uint32_t index, const char *name, uint64_t incarnation,
		     uint32_t ttl_ms);
	/* A graceful leave: the live record goes at once. */
	void (*leave)(void *r);
	/* Optional: whether the records may have changed since the last call (true
	 * while the registry cannot tell: its watch is not established). NULL: list
	 * every heartbeat. */
	bool (*changed)(void *r);
};

#endif
