/*
 * pctopo - check a topology file and show where keys land.
 *
 *   pctopo --topology FILE [--keys N] [--set key=value ...] [--write]
 *
 * Loads and validates the topology (errors are one line, exit code 2), prints each
 * size class's slot geometry and every node's share of N keys on the ring. --write
 * prints the resolved topology as YAML.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/topology.h"
#include "placement/ring.h"
#include "pctopo_schema.h"
#include "placement/slot.h"
#include "tool/tool_common.h"
#include "tool/tool_help.h"

static const char *const synopsis[] = {
	"--topology FILE [--keys N] [--set key=value ...] [--write]",
	"--schema",
	NULL,
};

static const struct tool_opt options[] = {
	{ "--topology FILE", NULL, "The topology YAML to check. Required unless --schema." },
	{ "--keys N", "100000", "How many keys (\"key-0\", \"key-1\" ...) to place on the ring." },
	{ "--set key=value", NULL, "Override one key before checking, as pcd does; repeatable." },
	{ "--write", NULL,
	  "Print the resolved topology as YAML instead: every key with its value, defaults included." },
	{ "--schema", NULL,
	  "Print the reference of every topology key (type, default, unit, meaning, who uses it) as "
	  "Markdown: the table of docs/configuration.md." },
	{ 0 },
};

static const struct tool_example examples[] = {
	{ "pctopo --topology topologies/rack.yaml",
	  "check rack.yaml, print each size class's slot geometry and every node's share of the keys" },
	{ "pctopo --topology topologies/laptop.yaml --set store.global_segment_size=4GiB --write",
	  "the resolved topology with an override, as YAML" },
	{ 0 },
};

static const struct tool_doc doc = {
	.name = "pctopo",
	.summary = "check a topology file and show where keys land",
	.synopsis = synopsis,
	.description =
		"pctopo loads a topology the way pcd and the library do (the same schema, the same "
		"checks: every mistake is one line naming the file, line, column and key, with a "
		"'did you mean' for a misspelt key), then prints each size class's geometry "
		"(buckets x ways x slot bytes), the slot memory per node and per cluster, and how "
		"N keys spread over the nodes' ring positions.\n\n"
		"Node addresses are checked too: each must be a numeric IPv4/IPv6 address or a "
		"host name that resolves.",
	.opts = options,
	.examples = examples,
	.exit_status = "0 when the topology is valid; 2 for a bad flag or topology (one line).",
	.see_also = "pcd(1), pcsim(1); docs/configuration.md",
	.needs_args = true,
};

static void print_geometry(const struct pc_topology *t)
{
	const struct pc_store_cfg *s = &t->store;
	uint64_t node_bytes = 0;

	for (uint32_t c = 0; c < s->nr_classes; c++) {
		struct slot_geometry g;

		slot_class_geometry(&g, s, c);
		printf("  class %u: pages up to %llu B: %llu buckets x %u ways x %llu B (=%llu bytes) + %llu B index\n",
		       c, (unsigned long long)g.page_bytes, (unsigned long long)g.nr_buckets, g.ways,
		       (unsigned long long)g.stride, (unsigned long long)g.bytes,
		       (unsigned long long)g.index_bytes);
		node_bytes += slot_region_bytes(&g);
	}
	printf("  slot memory per node: %llu bytes; cluster: %llu bytes\n",
	       (unsigned long long)node_bytes, (unsigned long long)node_bytes * t->nr_nodes);
	if (t->model.present)
		printf("  model page: %llu bytes (%u layers x %u kv heads x %u head dim x %s x %u tokens x K,V)\n",
		       (unsigned long long)t->model.page_bytes, t->model.layers, t->model.kv_heads,
		       t->model.head_dim, t->model.dtype, t->model.tokens_per_page);
}

static int print_placement(const struct pc_topology *t, uint64_t nkeys)
{
	struct ring *r = ring_create(t->store.vnodes);
	uint64_t *count = calloc(t->nr_nodes, sizeof(*count));
	double mean, var = 0;
	char key[32];

	if (!r || !count) {
		fprintf(stderr, "pctopo: out of memory\n");
		ring_destroy(r);
		free(count);
		return 1;
	}
	for (uint32_t i = 0; i < t->nr_nodes; i++)
		if (pc_node_listed(&t->nodes[i]))
			ring_add(r, i, t->nodes[i].name);
	printf("placement of %llu keys (\"key-0\" ...), %u vnodes per node:\n",
	       (unsigned long long)nkeys, t->store.vnodes);
	for (uint64_t k = 0; k < nkeys; k++) {
		int len = snprintf(key, sizeof(key), "key-%llu", (unsigned long long)k);
		struct pc_keyhash h = keyhash_of(key, (size_t)len);
		uint32_t owner = ring_owner_of(r, h);

		count[owner]++;
		if (k < 4) {
			struct slot_geometry g;

			slot_class_geometry(&g, &t->store, 0);
			printf("  %-8s -> %-10s class 0 bucket %llu predicted way %u\n", key,
			       t->nodes[owner].name, (unsigned long long)slot_bucket_of(&g, h),
			       slot_predicted_way(&g, h));
		}
	}
	mean = (double)nkeys / topology_nr_listed(t);
	printf("  %-12s %-22s %10s %8s %8s\n", "node", "address", "keys", "share", "/ideal");
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		char addr[96];

		if (!pc_node_listed(&t->nodes[i]))
			continue;
		var += ((double)count[i] - mean) * ((double)count[i] - mean);
		if (t->nr_nodes > 24 && i >= 8 && i + 8 < t->nr_nodes) {
			if (i == 8)
				printf("  ... %u more nodes ...\n", t->nr_nodes - 16);
			continue;
		}
		snprintf(addr, sizeof(addr), "%s:%u", t->nodes[i].address, t->nodes[i].port);
		printf("  %-12s %-22s %10llu %7.2f%% %8.3f\n", t->nodes[i].name, addr,
		       (unsigned long long)count[i], 100.0 * (double)count[i] / (double)nkeys,
		       (double)count[i] / mean);
	}
	printf("  load spread: std/mean = %.4f (1/sqrt(vnodes) = %.4f)\n",
	       sqrt(var / t->nr_nodes) / mean, 1 / sqrt(t->store.vnodes));
	ring_destroy(r);
	free(count);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "topology", required_argument, NULL, 't' },
		{ "keys", required_argument, NULL, 'k' },
		{ "set", required_argument, NULL, 's' },
		{ "write", no_argument, NULL, 'w' },
		{ "schema", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *path = NULL;
	char **sets = calloc((size_t)argc, sizeof(char *));
	unsigned long long nkeys = 100000;
	struct pc_topology *t;
	int c, nsets = 0, write = 0, schema = 0, ret;

	tool_std_flags(&doc, opts, argc, argv);
	opterr = 0;	/* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, "t:k:s:wh", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			path = optarg;
			break;
		case 'k':
			nkeys = tool_uint("pctopo", "--keys", optarg);
			break;
		case 's':
			sets[nsets++] = optarg;
			break;
		case 'w':
			write = 1;
			break;
		case 'D':
			schema = 1;
			break;
		default:
			tool_die("pctopo", "%s: unknown flag or missing value; see --help", argv[optind - 1]);
		}
	}
	if (optind < argc)
		tool_die("pctopo", "unexpected argument '%s'; see --help", argv[optind]);
	if (schema) {
		free(sets);
		return pctopo_schema(stdout);
	}
	t = tool_load_topology("pctopo", path, sets, nsets, NULL);
	free(sets);
	tool_resolve_nodes("pctopo", t, -1);
	if (write) {
		ret = pc_topology_write(t, stdout) ? 1 : 0;
	} else {
		printf("topology '%s' (%s): %u nodes, mode %s, protocol %s\n", t->name, t->source,
		       t->nr_nodes, t->store.mode == PC_MODE_SLOTMAP ? "slotmap" : "p2p",
		       t->store.protocol == PC_PROTO_TCP ? "tcp" :
		       t->store.protocol == PC_PROTO_RDMA ? "rdma" : "rxe");
		print_geometry(t);
		ret = print_placement(t, nkeys);
	}
	pc_topology_free(t);
	return ret;
}
