/*
 * fuzz_world.c - real stores for the RPC fuzzers (fuzz_world.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "builtin.h"
#include "fuzz_world.h"
#include "inproc/inproc.h"

struct fuzz_world *fuzz_world_up(bool p2p)
{
	struct fuzz_world *fw = calloc(1, sizeof(*fw));
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char text[1024], err[PC_ERR_MAX] = "", name[8];
	int len;

	if (!fw)
		return NULL;
	/* garbage is warned about per request; a fuzzer wants the crashes only */
	pc_log_set_level(PC_LOG_ERROR);
	len = snprintf(text, sizeof(text),
		       "store: {mode: %s, global_segment_size: 1MiB, slot_size_classes: [4KiB, 16KiB],"
		       " slot_ways: 4, slot_spill_ways: %u, slot_cas_claim: true,"
		       " tier_host_blocks: 16, tier_disk_blocks: 16, tier_block_bytes: 4KiB}\n"
		       "node_defaults: {address: 127.0.0.1, nvme: {path: %s, capacity: 8MiB}}\n"
		       "nodes:\n  - {name: n0, port: 40000}\n  - {name: n1, port: 40001}\n"
		       "  - {name: n2, port: 40002}\n",
		       p2p ? "p2p" : "slotmap", p2p ? 0 : 1, dir);
	if (pc_topology_parse(text, (size_t)len, "fuzz", &fw->topo, err, sizeof(err)))
		goto fail;
	fw->w = inproc_world_create(FUZZ_NODES);
	if (!fw->w)
		goto fail;
	for (int i = 0; i < FUZZ_NODES; i++) {
		struct pc_store_opts o = { .size = sizeof(o), .topo = fw->topo, .fabric = "inproc",
					   .node = name, .err = err, .errlen = sizeof(err) };
		struct store_deps x = { .backend_arg = fw->w };

		snprintf(name, sizeof(name), "n%d", i);
		if (builtin_store_open(&o, &x, &fw->s[i]))
			goto fail;
	}
	return fw;
fail:
	fprintf(stderr, "fuzz_world: %s\n", err);
	fuzz_world_down(fw);
	return NULL;
}

void fuzz_world_down(struct fuzz_world *fw)
{
	if (!fw)
		return;
	for (int i = 0; i < FUZZ_NODES; i++)
		pc_store_close(fw->s[i]);
	if (fw->w)
		inproc_world_destroy(fw->w);
	pc_topology_free(fw->topo);
	free(fw);
}
