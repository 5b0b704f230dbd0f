/*
 * duo.c - two in-process nodes with disks, the cluster several suites share (duo.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include <peercache/peercache.h>
#include "builtin.h"
#include "duo.h"
#include "inproc/inproc.h"
#include "testutil.h"

struct pc_test_duo *pc_test_duo_up(const char *store)
{
	struct pc_test_duo *C = calloc(1, sizeof(*C));
	char text[1024], err[PC_ERR_MAX] = "";
	int len = snprintf(text, sizeof(text),
			   "store: {%s}\n"
			   "node_defaults: {address: 127.0.0.1, nvme: {path: %s, capacity: 16MiB}}\n"
			   "nodes:\n  - {name: n0, port: 40000}\n  - {name: n1, port: 40001}\n",
			   store, pc_test_tmpdir());

	CU_ASSERT_PTR_NOT_NULL_FATAL(C);
	if (pc_topology_parse(text, (size_t)len, "duo", &C->topo, err, sizeof(err)))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(C->topo);
	C->w = inproc_world_create(2);
	for (int i = 0; i < 2; i++) {
		struct pc_store_opts o = { .size = sizeof(o), .topo = C->topo, .fabric = "inproc",
					   .node = i ? "n1" : "n0", .err = err, .errlen = sizeof(err) };
		struct store_deps x = { .backend_arg = C->w };

		if (builtin_store_open(&o, &x, &C->s[i]))
			printf("\n  %s\n", err);
		CU_ASSERT_PTR_NOT_NULL_FATAL(C->s[i]);
	}
	return C;
}

void pc_test_duo_down(struct pc_test_duo *C)
{
	pc_store_close(C->s[0]);
	pc_store_close(C->s[1]);
	inproc_world_destroy(C->w);
	pc_topology_free(C->topo);
	free(C);
}
