/*
 * pctopo - check a topology file and show where keys land.
 *
 *   pctopo --topology FILE [--keys N] [--set key=value ...] [--write]
 *
 * Loads and validates the topology (errors are one line, exit code 2), prints each
 * size class's slot geometry, every node's share of N keys on the ring and the keys
 * a full bucket evicts at 50, 80 and 100 % occupancy. --write prints the resolved
 * topology as YAML.
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
		"(buckets x ways x slot bytes), the slot memory per node and per cluster, how "
		"N keys spread over the nodes' ring positions, and (slotmap) the share of keys "
		"that find their bucket full when as many keys as 50, 80 and 100 % of the "
		"smallest class's slots land on the ring: a full bucket evicts its oldest page "
		"while other buckets have room, so this is what an occupancy costs in hits, "
		"next to what random buckets on an even ring would lose.\n\n"
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

/* The share of keys that find their bucket full when keys land in buckets of `ways`
 * at random, load keys a slot: E[(X - ways)+] / E[X], X ~ Poisson(ways x load). */
static double poisson_overflow(uint32_t ways, double load)
{
	double lam = ways * load, e = 0;

	if (lam <= 0)
		return 0;
	for (uint32_t x = ways + 1; x < ways + 20 + 10 * lam; x++)
		e += (x - ways) * exp(-lam + x * log(lam) - lgamma(x + 1.0));
	return e / lam;
}

#define FULL_MAX_SLOTS (32u << 20)	/* counters pctopo will hold for the count below */

/*
 * Slotmap's buckets hold a fixed number of ways: a key whose bucket is full evicts
 * that bucket's oldest page while other buckets have room. Place "key-0" ... on
 * the ring and into class 0's buckets, as many keys as 50, 80 and 100 % of the
 * cluster's class-0 slots, and count the keys beyond each bucket's ways: the
 * placement's own loss (the ring's imbalance included) next to what random
 * buckets over an even ring would lose.
 */
static int print_full_buckets(const struct pc_topology *t, const struct ring *r)
{
	static const unsigned pct[] = { 50, 80, 100 };
	uint32_t nodes = topology_nr_listed(t);
	struct slot_geometry g;
	uint64_t slots;
	uint32_t *count;
	char key[32];

	if (t->store.mode != PC_MODE_SLOTMAP || slot_class_geometry(&g, &t->store, 0))
		return 0;
	slots = g.nr_buckets * g.ways * nodes;
	if (slots > FULL_MAX_SLOTS) {
		printf("keys a full bucket evicts: not counted (%llu class-0 slots, more than %u)\n",
		       (unsigned long long)slots, FULL_MAX_SLOTS);
		return 0;
	}
	count = malloc(g.nr_buckets * t->nr_nodes * sizeof(*count));
	if (!count) {
		fprintf(stderr, "pctopo: out of memory\n");
		return 1;
	}
	printf("keys a full bucket evicts, class 0 (%u ways, %llu slots over %u nodes):\n", g.ways,
	       (unsigned long long)slots, nodes);
	for (size_t p = 0; p < sizeof(pct) / sizeof(pct[0]); p++) {
		uint64_t nkeys = slots * pct[p] / 100, lost = 0;

		memset(count, 0, g.nr_buckets * t->nr_nodes * sizeof(*count));
		for (uint64_t k = 0; k < nkeys; k++) {
			int len = snprintf(key, sizeof(key), "key-%llu", (unsigned long long)k);
			struct pc_keyhash h = keyhash_of(key, (size_t)len);
			uint32_t *c = &count[ring_owner_of(r, h) * g.nr_buckets + slot_bucket_of(&g, h)];

			lost += ++*c > g.ways;
		}
		printf("  at %3u %% of the slots: %6.2f %% of the keys   (random buckets on an even ring: %.2f %%)\n",
		       pct[p], nkeys ? 100.0 * (double)lost / (double)nkeys : 0.0,
		       100.0 * poisson_overflow(g.ways, pct[p] / 100.0));
	}
	free(count);
	return 0;
}

static int print_placement(const struct pc_topology *t, uint64_t nkeys)
{
	struct ring *r = ring_create(t->store.vnodes);
	uint64_t *count = calloc(t->nr_nodes, sizeof(*count));
	uint32_t listed = topology_nr_listed(t);
	double mean, var = 0;
	char key[32];
	int ret;

	/* Nodes that join at run time (store.max_nodes) are not on the ring here:
	 * the spread is over the listed ones, and with none there is no owner. */
	if (!listed) {
		printf("placement: no nodes listed; they join at run time (store.max_nodes %u)\n",
		       t->store.max_nodes);
		ring_destroy(r);
		free(count);
		return 0;
	}
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
	mean = (double)nkeys / listed;
	printf("  %-12s %-22s %10s %8s %8s\n", "node", "address", "keys", "share", "/ideal");
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		char addr[96];

		if (!pc_node_listed(&t->nodes[i]))
			continue;
		var += ((double)count[i] - mean) * ((double)count[i] - mean);
		if (listed > 24 && i >= 8 && i + 8 < listed) {
			if (i == 8)
				printf("  ... %u more nodes ...\n", listed - 16);
			continue;
		}
		snprintf(addr, sizeof(addr), "%s:%u", t->nodes[i].address, t->nodes[i].port);
		printf("  %-12s %-22s %10llu %7.2f%% %8.3f\n", t->nodes[i].name, addr,
		       (unsigned long long)count[i], 100.0 * (double)count[i] / (double)nkeys,
		       (double)count[i] / mean);
	}
	printf("  load spread: std/mean = %.4f (1/sqrt(vnodes) = %.4f)\n",
	       sqrt(var / listed) / mean, 1 / sqrt(t->store.vnodes));
	free(count);
	ret = print_full_buckets(t, r);
	ring_destroy(r);
	return ret;
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
