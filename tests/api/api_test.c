/*
 * api_test.c - the public API as a program outside the tree sees it: built against
 * core/include/peercache/ only and linked with the shared libpeercache.so.
 *
 * Sized structs filled up to the caller's size, settings by name at open, nodes named
 * by name, the version macros against the library's version string.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/peercache.h>
#include <peercache/pc_topology.h>

#include "testutil.h"

static const char topo[] =
	"store: {global_segment_size: 1MiB, slot_size_classes: [4KiB], timeout_ms: 200}\n"
	"nodes:\n  - {name: n0, address: 127.0.0.1, port: 9}\n"
	"  - {name: n1, address: 127.0.0.1, port: 13}\n";

static char *topo_file(void)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/api.yaml", pc_test_tmpdir());
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(topo, f);
	fclose(f);
	return path;
}

static struct pc_store *client(const char *const *set, char *err, size_t errlen, int *ret)
{
	struct pc_store_opts o = { .size = sizeof(o), .topology = topo_file(), .set = set,
				   .err = err, .errlen = errlen };
	struct pc_store *s = NULL;

	*ret = pc_store_open(&o, &s);
	return s;
}

static void test_version(void)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", PC_VERSION_MAJOR, PC_VERSION_MINOR, PC_VERSION_PATCH);
	CU_ASSERT_STRING_EQUAL(pc_version(), want);
	CU_ASSERT(PC_VERSION_NUMBER == PC_VERSION_MAJOR * 10000 + PC_VERSION_MINOR * 100 +
					PC_VERSION_PATCH);
}

static void test_settings_at_open(void)
{
	static const char *const good[] = { "store.slot_ways=8", "store.timeout_ms=100", NULL };
	static const char *const bad[] = { "store.slot_ways=8", "store.slot_wayz=2", NULL };
	char err[PC_ERR_MAX] = "";
	struct pc_store *s;
	int ret;

	s = client(good, err, sizeof(err), &ret);
	CU_ASSERT_EQUAL(ret, 0);
	CU_ASSERT_PTR_NOT_NULL(s);
	pc_store_close(s);
	s = client(bad, err, sizeof(err), &ret);
	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_PTR_NULL(s);
	printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "slot_wayz"));
}

/* An open that fails says why in err, also when the options name no topology at all. */
static void test_open_without_topology(void)
{
	char err[PC_ERR_MAX] = "untouched";
	struct pc_store_opts o = { .size = sizeof(o), .err = err, .errlen = sizeof(err) };
	struct pc_store *s = NULL;

	CU_ASSERT_EQUAL(pc_store_open(&o, &s), -EINVAL);
	CU_ASSERT_PTR_NULL(s);
	printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "topology"));
}

/* A caller that passes no place for the store gets -EINVAL, not a store opened in
 * full and then written through NULL. */
static void test_open_without_out(void)
{
	char err[PC_ERR_MAX] = "";
	struct pc_store_opts o = { .size = sizeof(o), .topology = topo_file(), .err = err,
				   .errlen = sizeof(err) };

	CU_ASSERT_EQUAL(pc_store_open(&o, NULL), -EINVAL);
}

/* A caller built against a shorter or a longer pc_metrics gets what its size holds. */
static void test_sized_metrics(void)
{
	char err[PC_ERR_MAX] = "";
	uint8_t page[4096];
	struct pc_page p = { .key = "k", .key_len = 1, .data = page, .cap = sizeof(page) };
	struct pc_metrics full = { .size = sizeof(full) };
	struct { struct pc_metrics m; uint64_t later[4]; } big;
	struct pc_metrics shorter;
	struct pc_store *s;
	int ret;

	s = client(NULL, err, sizeof(err), &ret);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	/* nothing listens on ports 9 and 13: every get fails and is counted */
	CU_ASSERT_EQUAL(pc_batch_get(s, &p, 1), 0);
	CU_ASSERT_EQUAL(pc_store_metrics(s, &full), 0);
	CU_ASSERT_EQUAL(full.size, sizeof(full));
	CU_ASSERT_EQUAL(full.read_requests, 1);
	CU_ASSERT_EQUAL(full.batches, 1);

	memset(&shorter, 0xee, sizeof(shorter));
	shorter.size = offsetof(struct pc_metrics, read_requests);	/* knows the writes only */
	CU_ASSERT_EQUAL(pc_store_metrics(s, &shorter), 0);
	CU_ASSERT_EQUAL(shorter.write_requests, 0);
	CU_ASSERT_EQUAL(shorter.skipped_oversize, 0);
	CU_ASSERT_EQUAL(shorter.read_requests, 0xeeeeeeeeeeeeeeeeULL);	/* not touched */

	memset(&big, 0xee, sizeof(big));
	big.m.size = sizeof(big);					/* knows more than we do */
	CU_ASSERT_EQUAL(pc_store_metrics(s, &big.m), 0);
	CU_ASSERT_EQUAL(big.m.read_requests, 1);
	CU_ASSERT_EQUAL(big.later[0], 0);
	CU_ASSERT_EQUAL(big.later[3], 0);

	shorter.size = 4;						/* not even the size field */
	CU_ASSERT_EQUAL(pc_store_metrics(s, &shorter), -EINVAL);
	pc_store_close(s);
}

static void test_nodes_by_name(void)
{
	char err[PC_ERR_MAX] = "";
	struct pc_tier_metrics tm = { .size = sizeof(tm) };
	uint64_t h = 1;
	bool w;
	struct pc_store *s;
	int ret;

	s = client(NULL, err, sizeof(err), &ret);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_PTR_NULL(pc_store_node(s));
	CU_ASSERT_EQUAL(pc_tier_offer(s, "n7", &h, 1, &w), -ENXIO);
	CU_ASSERT_EQUAL(pc_tier_node_metrics(s, "n7", &tm), -ENXIO);
	CU_ASSERT_EQUAL(pc_store_set_member(s, "n7", false), -ENXIO);
	CU_ASSERT_EQUAL(pc_store_set_member(s, "n1", false), 0);
	CU_ASSERT_EQUAL(pc_tier_metrics(s, &tm), -ENOENT);	/* a client serves no pool */
	pc_store_close(s);
}

/* The topology is opaque: every setting is read by the name the YAML and -s use. */
static void test_topology_by_name(void)
{
	char err[PC_ERR_MAX] = "", buf[64], tiny[3];
	struct pc_topology *t = NULL;

	CU_ASSERT_EQUAL_FATAL(pc_topology_parse(topo, sizeof(topo) - 1, "api", &t, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(pc_topology_nr_nodes(t), 2);
	CU_ASSERT_STRING_EQUAL(pc_topology_node_name(t, 1), "n1");
	CU_ASSERT_PTR_NULL(pc_topology_node_name(t, 2));

	CU_ASSERT_EQUAL(pc_topology_get(t, "store.global_segment_size", buf, sizeof(buf), err,
					sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "1048576");
	CU_ASSERT_EQUAL(pc_topology_get(t, "nodes.n1.port", buf, sizeof(buf), err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "13");
	CU_ASSERT_EQUAL(pc_topology_get(t, "nodes.0.address", buf, sizeof(buf), err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "127.0.0.1");
	CU_ASSERT_EQUAL(pc_topology_get(t, "store.slot_size_classes", buf, sizeof(buf), err,
					sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "[4096]");
	/* a default comes from the schema, not from the file */
	CU_ASSERT_EQUAL(pc_topology_get(t, "store.slot_ways", buf, sizeof(buf), err, sizeof(err)), 0);
	CU_ASSERT(atoi(buf) > 0);

	CU_ASSERT_EQUAL(pc_topology_set(t, "store.slot_ways=8", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(pc_topology_get(t, "store.slot_ways", buf, sizeof(buf), err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "8");

	CU_ASSERT_EQUAL(pc_topology_get(t, "store.slot_wayz", buf, sizeof(buf), err, sizeof(err)),
			-ENOENT);
	printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "slot_wayz"));
	CU_ASSERT_EQUAL(pc_topology_get(t, "nodes.n7.port", buf, sizeof(buf), err, sizeof(err)),
			-ENOENT);
	CU_ASSERT_EQUAL(pc_topology_get(t, "nodes.n1.address", tiny, sizeof(tiny), err, sizeof(err)),
			-ERANGE);
	pc_topology_free(t);
}

static CU_TestInfo tests[] = {
	{ "version macros match the library", test_version },
	{ "settings by name at open", test_settings_at_open },
	{ "open without a topology says so", test_open_without_topology },
	{ "open without a place for the store", test_open_without_out },
	{ "sized metrics: shorter and longer callers", test_sized_metrics },
	{ "nodes are named by name", test_nodes_by_name },
	{ "topology settings by name", test_topology_by_name },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "api", NULL, NULL, NULL, NULL, tests })
