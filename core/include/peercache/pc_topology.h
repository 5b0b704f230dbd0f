/*
 * pc_topology.h - one YAML file describes a cluster: its nodes (address, rails,
 * NVMe), the cache geometry and, optionally, the model shape that fixes
 * the page size. The same file starts a real local cluster and drives a simulation.
 *
 * Loading is strict: an unknown key, a wrong type, a value out of range, a duplicate
 * node or a page larger than the largest size class stops the load with one line that
 * names the file, line and column, the field, what was expected and how to fix it.
 *
 * A loaded topology is opaque: read its settings with pc_topology_get() and change
 * them with pc_topology_set(), by the names the YAML uses (pctopo --write prints
 * every one with its value).
 *
 * Not for: run-time state. A loaded topology is data the caller owns.
 */
#ifndef PC_TOPOLOGY_H
#define PC_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <peercache/pc_api.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pc_topology;

/* Load and validate a topology file. 0, or -EINVAL/-ENOENT/-ENOMEM with a one-line
 * message in err. On success the caller frees *out with pc_topology_free(). */
PC_API int pc_topology_load(const char *path, struct pc_topology **out, char *err, size_t errlen);

/* The same from text in memory; name is used in messages in place of a file name. */
PC_API int pc_topology_parse(const char *text, size_t len, const char *name,
		      struct pc_topology **out, char *err, size_t errlen);

/* Override one field, as flags and sweeps do: "store.slot_ways=8",
 * "nodes.nvme.path=/mnt/nvme" (every node), "nodes.rails.gbps=100" (every rail),
 * "nodes.n1.port=7000" or "nodes.2.rails.0.gbps=25" (one node's, as
 * pc_topology_get names them), "nodes.count=32" (keep the first N nodes or add more
 * like the last one). The whole topology is validated again. 0 or -EINVAL with err
 * set; on error t is unchanged. */
PC_API int pc_topology_set(struct pc_topology *t, const char *assignment, char *err, size_t errlen);

/* Read one setting as text, by the name pc_topology_set() takes: "store.slot_ways",
 * "model.page_bytes", "nodes.2.address" (node 2's), "nodes.n1.port" (node n1's),
 * "nodes.2.nvme.path", "nodes.2.rails.0.gbps". Sizes are plain byte counts, lists
 * "[a, b]", strings unquoted. 0, -ENOENT for a name the schema does not have (err
 * says which are known), -ERANGE when buf is too small. */
PC_API int pc_topology_get(const struct pc_topology *t, const char *name, char *buf, size_t len,
			   char *err, size_t errlen);

/* The entries of the cluster's node table (the nodes listed, in file order, then
 * room for nodes that join at run time: store.max_nodes), and the name of the node
 * entry i holds: "" while it holds none. */
PC_API uint32_t pc_topology_nr_nodes(const struct pc_topology *t);
PC_API const char *pc_topology_node_name(const struct pc_topology *t, uint32_t i);

/* Index of the node called name, or -1. */
PC_API int pc_topology_find_node(const struct pc_topology *t, const char *name);

/* Write the resolved topology as YAML that pc_topology_parse() reads back. */
PC_API int pc_topology_write(const struct pc_topology *t, FILE *f);

/* Deep copy, for callers that change one copy per configuration. NULL on ENOMEM. */
PC_API struct pc_topology *pc_topology_dup(const struct pc_topology *t);

PC_API void pc_topology_free(struct pc_topology *t);

/* Parse "256KiB", "1GiB", "12288", "1.5TB" into bytes: digits, an optional decimal
 * point and a unit; no sign, exponent or hex. 0 or -EINVAL. */
PC_API int pc_parse_size(const char *s, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
