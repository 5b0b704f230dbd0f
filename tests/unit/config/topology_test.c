/*
 * topology_test.c - every shipped topology loads; every mistake a user can make
 * gives one line with file, line, column, field and fix; --set overrides and the
 * writer round-trip.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/topology.h"
#include "placement/slot.h"
#include "testutil.h"

static const char *topo_dir(void)
{
	return pc_test_argc > 1 ? pc_test_argv[1] : "topologies";
}

static struct pc_topology *load_shipped(const char *name)
{
	char path[512], err[PC_ERR_MAX];
	struct pc_topology *t = NULL;

	snprintf(path, sizeof(path), "%s/%s", topo_dir(), name);
	if (pc_topology_load(path, &t, err, sizeof(err)))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	return t;
}

static uint64_t slot_bytes_per_node(const struct pc_topology *t)
{
	uint64_t sum = 0;

	for (uint32_t c = 0; c < t->store.nr_classes; c++) {
		struct slot_geometry g;

		slot_geometry_init(&g, c, t->store.size_classes[c], t->store.slot_ways,
				   t->store.slot_num_buckets,
				   t->store.global_segment_size / t->store.nr_classes);
		sum += g.bytes;
	}
	return sum;
}

/* Every file in topologies/ loads and validates. */
static void test_all_shipped(void)
{
	DIR *d = opendir(topo_dir());
	struct dirent *e;
	int n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (len < 5 || strcmp(e->d_name + len - 5, ".yaml"))
			continue;
		pc_topology_free(load_shipped(e->d_name));
		n++;
	}
	closedir(d);
	printf("\n  %d topology files loaded\n", n);
	CU_ASSERT(n >= 3);
}

static void test_laptop(void)
{
	struct pc_topology *t = load_shipped("laptop.yaml");

	CU_ASSERT_EQUAL(t->nr_nodes, 3);
	for (uint32_t i = 0; i < 3; i++)
		CU_ASSERT_STRING_EQUAL(t->nodes[i].address, "127.0.0.1");
	CU_ASSERT_EQUAL(t->nodes[1].port, 31999);
	CU_ASSERT_EQUAL(t->store.protocol, PC_PROTO_TCP);
	CU_ASSERT_EQUAL(t->store.nr_classes, 3);
	CU_ASSERT_EQUAL(t->store.slot_max_page_bytes, 256 * 1024);
	CU_ASSERT_EQUAL(t->model.page_bytes, 12288);	/* Qwen2.5-0.5B */
	pc_topology_free(t);
}

static void test_rack_large(void)
{
	struct pc_topology *r = load_shipped("rack.yaml"), *l = load_shipped("large.yaml");

	CU_ASSERT_EQUAL(r->nr_nodes, 16);
	CU_ASSERT_EQUAL(r->nodes[15].nr_rails, 2);
	CU_ASSERT_DOUBLE_EQUAL(r->nodes[15].rails[1].gbps, 200, 1e-9);
	CU_ASSERT_TRUE(r->nodes[7].has_nvme);
	CU_ASSERT_EQUAL(r->nodes[7].nvme.capacity, 3840000000000ULL);
	CU_ASSERT_EQUAL(l->nr_nodes, 512);
	printf("\n  large.yaml: %u nodes x %llu slot bytes = %.2f TiB\n", l->nr_nodes,
	       (unsigned long long)slot_bytes_per_node(l),
	       (double)slot_bytes_per_node(l) * l->nr_nodes / (1ULL << 40));
	CU_ASSERT(slot_bytes_per_node(l) * l->nr_nodes >= (1ULL << 40));
	pc_topology_free(r);
	pc_topology_free(l);
}

static int parse(const char *text, struct pc_topology **t, char *err)
{
	*t = NULL;
	return pc_topology_parse(text, strlen(text), "t.yaml", t, err, PC_ERR_MAX);
}

/* The seed's store keys. */
static void test_seed_keys(void)
{
	char err[PC_ERR_MAX];
	struct pc_topology *t;
	int ret = parse("store:\n"
			"  mode: slotmap\n"
			"  protocol: rdma\n"
			"  discovery_addr: 10.0.0.1:31998\n"
			"  slot_max_page_bytes: 262144\n"
			"  slot_ways: 4\n"
			"  slot_num_buckets: 0\n"
			"  global_segment_size: 1GiB\n"
			"nodes:\n"
			"  - {name: a, address: 10.0.0.1}\n", &t, err);

	if (ret)
		printf("\n  %s\n", err);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL(t->store.mode, PC_MODE_SLOTMAP);
	CU_ASSERT_EQUAL(t->store.protocol, PC_PROTO_RDMA);
	CU_ASSERT_STRING_EQUAL(t->store.discovery_addr, "10.0.0.1:31998");
	CU_ASSERT_EQUAL(t->store.nr_classes, 1);
	CU_ASSERT_EQUAL(t->store.size_classes[0], 262144);
	CU_ASSERT_EQUAL(t->store.slot_ways, 4);
	CU_ASSERT_EQUAL(t->store.global_segment_size, 1ULL << 30);
	CU_ASSERT_EQUAL(t->nodes[0].port, 31998);	/* default */
	CU_ASSERT_EQUAL(t->nodes[0].nr_rails, 1);
	pc_topology_free(t);
}

static void test_defaults_and_nesting(void)
{
	char err[PC_ERR_MAX];
	struct pc_topology *t;
	int ret = parse("node_defaults:\n"
			"  memcpy_gbps: 3\n"
			"  rails: [{device: mlx5_0, gbps: 200}, {device: mlx5_1, gbps: 200}]\n"
			"nodes:\n"
			"  - {name: a, address: 10.0.0.1}\n"
			"  - name: b\n"
			"    address: 10.0.0.2\n"
			"    rails: [{device: rxe0, gbps: 10, latency_us: 5}]\n"
			"    nvme: {path: /tmp, capacity: 100GB}\n", &t, err);

	if (ret)
		printf("\n  %s\n", err);
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_DOUBLE_EQUAL(t->nodes[0].memcpy_gbps, 3, 1e-9);
	CU_ASSERT_EQUAL(t->nodes[0].nr_rails, 2);
	CU_ASSERT_STRING_EQUAL(t->nodes[0].rails[1].device, "mlx5_1");
	CU_ASSERT_FALSE(t->nodes[0].has_nvme);
	CU_ASSERT_EQUAL(t->nodes[1].nr_rails, 1);
	CU_ASSERT_DOUBLE_EQUAL(t->nodes[1].rails[0].latency_us, 5, 1e-9);
	CU_ASSERT_EQUAL(t->nodes[1].rails[0].max_outstanding, 128);	/* rail default */
	CU_ASSERT_TRUE(t->nodes[1].has_nvme);
	CU_ASSERT_EQUAL(t->nodes[1].nvme.capacity, 100000000000ULL);
	CU_ASSERT_DOUBLE_EQUAL(t->nodes[1].memcpy_gbps, 3, 1e-9);
	pc_topology_free(t);
}

/* Each user mistake: one line naming file:line:col, the field, and what to do. */
static void expect_error(const char *text, const char *where, const char *what)
{
	char err[PC_ERR_MAX];
	struct pc_topology *t;
	int ret = parse(text, &t, err);

	CU_ASSERT_EQUAL(ret, -EINVAL);
	CU_ASSERT_PTR_NULL(t);
	if (ret != -EINVAL) {
		pc_topology_free(t);
		printf("\n  no error for: %s\n", text);
		return;
	}
	printf("\n  %s", err);
	CU_ASSERT_PTR_NULL(strchr(err, '\n'));
	CU_ASSERT(strncmp(err, where, strlen(where)) == 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, what));
}

#define NODE "nodes:\n  - {name: a, address: 10.0.0.1}\n"

static void test_errors(void)
{
	expect_error("store:\n  slot_wayz: 4\n" NODE, "t.yaml:2:3: ",
		     "unknown key 'slot_wayz' in store; did you mean 'slot_ways'?");
	expect_error("stor:\n  slot_ways: 4\n" NODE, "t.yaml:1:1: ", "did you mean 'store'?");
	/* the class is the default one, in no line of the file: the file, not 0:0 */
	expect_error("store:\n  global_segment_size: 8KiB\n" NODE, "t.yaml: store.global_segment_size",
		     "leaves no bucket");
	expect_error("store:\n  slot_ways: four\n" NODE, "t.yaml:2:14: ",
		     "store.slot_ways: expected an integer from 1 to 64, got 'four'");
	expect_error("store:\n  slot_ways: \"4\"\n" NODE, "t.yaml:2:14: ", "drop the quotes");
	expect_error("store:\n  slot_ways: {a: 1}\n" NODE, "t.yaml:2:14: ",
		     "store.slot_ways: expected a value, got a mapping");
	expect_error("store:\n  slot_ways: 0\n" NODE, "t.yaml:2:14: ", "from 1 to 64, got '0'");
	expect_error("store:\n  slot_ways: 65\n" NODE, "t.yaml:2:14: ", "got '65'");
	expect_error("store:\n  global_segment_size: 12XB\n" NODE, "t.yaml:2:24: ",
		     "store.global_segment_size: expected a size");
	expect_error("store:\n  mode: directory\n" NODE, "t.yaml:2:9: ",
		     "expected one of slotmap, p2p; got 'directory'");
	expect_error("store:\n  slot_cas_claim: maybe\n" NODE, "t.yaml:2:19: ",
		     "expected true or false");
	expect_error("store:\n  slot_ways: 4\n  slot_ways: 8\n" NODE, "t.yaml:3:3: ",
		     "key given twice (first at line 2)");
	expect_error("store:\n  slot_size_classes: [64KiB, 16KiB]\n" NODE, "t.yaml:2:3: ",
		     "expected ascending sizes");
	expect_error("store:\n  slot_size_classes: [16KiB, 64KiB]\n  slot_max_page_bytes: 1MiB\n" NODE,
		     "t.yaml:", "differs from the largest size class");
	expect_error("store:\n  global_segment_size: 64KiB\n  slot_max_page_bytes: 1MiB\n" NODE,
		     "t.yaml:3:3: ", "raise global_segment_size");
	/* 2^40 buckets x 64 ways x 256 KiB is 2^64 bytes: a region that wrapped to 0 */
	expect_error("store: {slot_num_buckets: 1099511627776, slot_ways: 64,\n"
		     "        slot_max_page_bytes: 262080}\n" NODE,
		     "t.yaml:1:1: ", "store.slot_num_buckets: 1099511627776 buckets");
	expect_error("store: {heartbeat_ms: 1000}\n" NODE, "t.yaml:1:1: ",
		     "store.failure_timeout_ms: 2000 ms is less than three heartbeats "
		     "(store.heartbeat_ms: 1000 ms)");
	expect_error("nodes:\n  - {name: a, address: 10.0.0.1}\n  - {name: a, address: 10.0.0.2}\n",
		     "t.yaml:3:5: ", "duplicate node name 'a'");
	expect_error("nodes:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.1}\n",
		     "t.yaml:3:5: ", "duplicate address 10.0.0.1 port 31998");
	expect_error("nodes:\n  - {name: a}\n", "t.yaml:2:5: ", "nodes[0].address: expected an address");
	expect_error("nodes:\n  - {name: a, address: x, wake_us: 100, nap_us: 10, nap_idle_us: 200}\n",
		     "t.yaml:2:5: ", "nodes[0].nap_idle_us: 200 us is not shorter than idle_us (200 us)");
	expect_error("nodes:\n  - {name: a b, address: x}\n", "t.yaml:2:5: ", "nodes[0].name");
	/* a node name goes into addresses, etcd and metrics labels: ASCII only, said so */
	expect_error("nodes:\n  - {name: nœud, address: x}\n", "t.yaml:2:5: ",
		     "nodes[0].name: 'nœud' has a non-ASCII character");
	expect_error("nodes:\n  - {name: a, address: 999.1.1.1}\n", "t.yaml:2:5: ",
		     "nodes[0].address: '999.1.1.1': not an IPv4 address");
	expect_error("nodes:\n  - {name: a, address: 'no_such host'}\n", "t.yaml:2:5: ",
		     "not a host name");
	expect_error("nodes:\n  - {name: a, address: x, bind_address: '[::]'}\n", "t.yaml:2:5: ",
		     "nodes[0].bind_address: '[::]': not an IPv6 address");
	expect_error("node_defaults: {host_pool_bytes: 1GiB}\n" NODE, "t.yaml:1:34: ",
		     "node_defaults.host_pool_bytes: removed: it set nothing; slot memory per node is store.global_segment_size");
	expect_error("nodes:\n  - {name: a, address: x, port: 70000}\n", "t.yaml:2:33: ",
		     "nodes[0].port: expected an integer from 1 to 65535");
	expect_error("nodes:\n  - {name: a, address: x, rails: [{gbps: -1}]}\n", "t.yaml:2:42: ",
		     "nodes[0].rails[0].gbps");
	expect_error("nodes:\n  - {name: a, address: x, nvme: {capacty: 1TB}}\n", "t.yaml:2:34: ",
		     "did you mean 'capacity'?");
	expect_error("model: {layers: 80, kv_heads: 8, head_dim: 128, tokens_per_page: 64}\n"
		     "store: {slot_max_page_bytes: 1MiB}\n" NODE,
		     "t.yaml:1:1: ", "larger than the largest size class (1048576); add a class of at least 20971520");
	expect_error("model: {layers: 2, kv_heads: 1, head_dim: 8, dtype: fp7}\n" NODE, "t.yaml:1:53: ",
		     "model.dtype: expected one of fp32, bf16");
	expect_error("store: {slot_ways: 4}\n", "t.yaml:1:1: ", "nodes: expected at least one node");
	expect_error("", "t.yaml:1:1: ", "the file is empty");
	expect_error("nodes: [\n", "t.yaml:", "YAML syntax");
	expect_error("- a\n- b\n", "t.yaml:1:1: ", "expected a mapping");
	expect_error("nodes: []\n", "t.yaml:1:8: ", "expected at least one node");
	/* a NUL a double-quoted scalar spells out would cut the value short */
	expect_error("nodes:\n  - {name: \"n0\\0evil\", address: 10.0.0.1}\n", "t.yaml:2:12: ",
		     "nodes[0].name: has a NUL character");
	expect_error("store:\n  \"slot_ways\\0\": 4\n" NODE, "t.yaml:2:3: ",
		     "store: has a NUL character");
}

static void test_missing_file(void)
{
	char err[PC_ERR_MAX];
	struct pc_topology *t = NULL;

	CU_ASSERT_EQUAL(pc_topology_load("/nonexistent/x.yaml", &t, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/x.yaml: cannot open topology file"));
	printf("\n  %s\n", err);
}

static void test_set(void)
{
	char err[PC_ERR_MAX], buf[64];
	struct pc_topology *t = load_shipped("laptop.yaml");

	CU_ASSERT_EQUAL(pc_topology_set(t, "store.slot_ways=8", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(t->store.slot_ways, 8);
	CU_ASSERT_EQUAL(pc_topology_set(t, "store.slot_ways=0", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--set store.slot_ways=0: expected an integer"));
	CU_ASSERT_EQUAL(t->store.slot_ways, 8);		/* unchanged on error */
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.memcpy_gbps=2", err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(t->nodes[2].memcpy_gbps, 2, 1e-9);
	/* a removed key says what replaced it */
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.host_pool_bytes=2GiB", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "removed"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "store.global_segment_size"));
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.rails.gbps=100", err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(t->nodes[1].rails[0].gbps, 100, 1e-9);
	/* one node's (one rail's) setting, by the names pc_topology_get reads */
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.n1.port=7000", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(t->nodes[1].port, 7000);
	CU_ASSERT_EQUAL(t->nodes[0].port, 31998);
	CU_ASSERT_EQUAL(pc_topology_get(t, "nodes.n1.port", buf, sizeof(buf), err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "7000");
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.2.rails.0.gbps=25", err, sizeof(err)), 0);
	CU_ASSERT_DOUBLE_EQUAL(t->nodes[2].rails[0].gbps, 25, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(t->nodes[1].rails[0].gbps, 100, 1e-9);
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.n2.nvme.path=/mnt/x", err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(t->nodes[2].nvme.path, "/mnt/x");
	CU_ASSERT_STRING_EQUAL(t->nodes[0].nvme.path, "/var/tmp");
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.n7.port=7001", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no node 'n7'"));
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.n2.rails.1.gbps=1", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "name a rail by index (0 to 0)"));
	CU_ASSERT_EQUAL(pc_topology_set(t, "store.slot_size_classes=[16KiB,1MiB]", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(t->store.nr_classes, 2);
	CU_ASSERT_EQUAL(t->store.slot_max_page_bytes, 1 << 20);
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.count=6", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(t->nr_nodes, 6);
	CU_ASSERT_EQUAL(t->nodes[5].port, 32003);
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.count=2", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(t->nr_nodes, 2);
	CU_ASSERT_EQUAL(pc_topology_set(t, "store.slot_wayz=2", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "did you mean 'slot_ways'"));
	/* store's keys do not fit in one line: cut at a whole name, saying where the rest are */
	printf("\n  %s\n", err);
	CU_ASSERT(strlen(err) < sizeof(err) - 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, " ...; docs/configuration.md lists them all)"));
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.port", err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(pc_topology_set(t, "model.layers=4000", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "larger than the largest size class"));
	pc_topology_free(t);

	/* nodes added after one on the last port wrap around to port 1, never 0 */
	t = NULL;
	CU_ASSERT_EQUAL_FATAL(parse("nodes:\n  - {name: a, address: 10.0.0.1, port: 65534}\n", &t, err), 0);
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.count=4", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(t->nodes[1].port, 65535);
	CU_ASSERT_EQUAL(t->nodes[2].port, 1);
	CU_ASSERT_EQUAL(t->nodes[3].port, 2);
	pc_topology_free(t);

	/* a single class follows slot_max_page_bytes */
	t = NULL;
	CU_ASSERT_EQUAL_FATAL(parse(NODE, &t, err), 0);
	CU_ASSERT_EQUAL(pc_topology_set(t, "store.slot_max_page_bytes=64KiB", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(t->store.nr_classes, 1);
	CU_ASSERT_EQUAL(t->store.size_classes[0], 65536);
	pc_topology_free(t);
}

static void test_write_roundtrip(void)
{
	char err[PC_ERR_MAX], *buf = NULL;
	size_t len = 0;
	struct pc_topology *t = load_shipped("rack.yaml"), *u = NULL;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_EQUAL(pc_topology_write(t, f), 0);
	fclose(f);
	if (pc_topology_parse(buf, len, "written.yaml", &u, err, sizeof(err)))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	CU_ASSERT_EQUAL(u->nr_nodes, t->nr_nodes);
	CU_ASSERT_EQUAL(memcmp(&u->model.page_bytes, &t->model.page_bytes, 8), 0);
	CU_ASSERT_EQUAL(u->store.nr_classes, t->store.nr_classes);
	CU_ASSERT_EQUAL(memcmp(u->store.size_classes, t->store.size_classes,
			       sizeof(t->store.size_classes)), 0);
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		CU_ASSERT_STRING_EQUAL(u->nodes[i].name, t->nodes[i].name);
		CU_ASSERT_EQUAL(u->nodes[i].nr_rails, t->nodes[i].nr_rails);
		CU_ASSERT_EQUAL(memcmp(&u->nodes[i].nvme, &t->nodes[i].nvme, sizeof(struct pc_nvme)), 0);
		CU_ASSERT_EQUAL(memcmp(u->nodes[i].rails, t->nodes[i].rails,
				       sizeof(t->nodes[i].rails)), 0);
	}
	pc_topology_free(t);
	pc_topology_free(u);
	free(buf);
}

/* What a topology holds is written back as YAML that loads again: quotes,
 * backslashes and UTF-8 in text values survive (a plain-scalar name with a
 * backslash, written inside double quotes, must be escaped there); control
 * characters and bytes that are not UTF-8 are refused where they come in. */
static void test_text_roundtrip(void)
{
	static const char text[] = "name: la\\ptop\n"
				   "store: {etcd_prefix: \"/a\\\"b\\\\c/\"}\nnodes:\n  - {name: n0, address: 127.0.0.1}\n";
	static const char ctl[] = "name: \"a\\x01b\"\nnodes:\n  - {name: n0, address: 127.0.0.1}\n";
	char err[PC_ERR_MAX], *buf = NULL;
	size_t len = 0;
	struct pc_topology *t = NULL, *u = NULL;
	FILE *f;

	if (pc_topology_parse(text, strlen(text), "text.yaml", &t, err, sizeof(err)))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_STRING_EQUAL(t->name, "la\\ptop");
	CU_ASSERT_STRING_EQUAL(t->store.etcd_prefix, "/a\"b\\c/");
	CU_ASSERT_EQUAL(pc_topology_set(t, "store.auth_secret_file=/h\xc3\xb6st\\\"x", err, sizeof(err)), 0);
	f = open_memstream(&buf, &len);
	CU_ASSERT_EQUAL(pc_topology_write(t, f), 0);
	fclose(f);
	if (pc_topology_parse(buf, len, "written.yaml", &u, err, sizeof(err)))
		printf("\n  %s\n%s", err, buf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	CU_ASSERT_STRING_EQUAL(u->name, t->name);
	CU_ASSERT_STRING_EQUAL(u->store.etcd_prefix, t->store.etcd_prefix);
	CU_ASSERT_STRING_EQUAL(u->store.auth_secret_file, "/h\xc3\xb6st\\\"x");
	/* refused where they come in, with a line that says what text may be */
	CU_ASSERT_EQUAL(pc_topology_set(t, "store.etcd_prefix=a\tb", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "printable text"));
	CU_ASSERT_EQUAL(pc_topology_set(t, "name=\xff", err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(pc_topology_set(t, "store.etcd_prefix=\xc0\xaf", err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(pc_topology_set(t, "store.etcd_prefix=\xed\xa0\x80", err, sizeof(err)), -EINVAL);
	pc_topology_free(u);
	u = NULL;
	CU_ASSERT_NOT_EQUAL(pc_topology_parse(ctl, strlen(ctl), "ctl.yaml", &u, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(u);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "ctl.yaml:1:7: name: expected printable text"));
	pc_topology_free(t);
	free(buf);
}

static void test_parse_size(void)
{
	uint64_t v;

	CU_ASSERT(!pc_parse_size("12288", &v) && v == 12288);
	CU_ASSERT(!pc_parse_size("256KiB", &v) && v == 262144);
	CU_ASSERT(!pc_parse_size("1GiB", &v) && v == 1ULL << 30);
	CU_ASSERT(!pc_parse_size("1.5KiB", &v) && v == 1536);
	CU_ASSERT(!pc_parse_size("3.84TB", &v) && v == 3840000000000ULL);
	CU_ASSERT(!pc_parse_size("64m", &v) && v == 64ULL << 20);
	CU_ASSERT_EQUAL(pc_parse_size("", &v), -EINVAL);
	CU_ASSERT_EQUAL(pc_parse_size("-1", &v), -EINVAL);
	CU_ASSERT_EQUAL(pc_parse_size("1.3B", &v), -EINVAL);
	CU_ASSERT_EQUAL(pc_parse_size("10 parsecs", &v), -EINVAL);
	/* digits and a decimal point only: strtod's other forms are no size */
	CU_ASSERT_EQUAL(pc_parse_size("1e6", &v), -EINVAL);
	CU_ASSERT_EQUAL(pc_parse_size("1E3KiB", &v), -EINVAL);
	CU_ASSERT_EQUAL(pc_parse_size("0x1p20", &v), -EINVAL);
	CU_ASSERT_EQUAL(pc_parse_size("0x100", &v), -EINVAL);
	CU_ASSERT_EQUAL(pc_parse_size(" 12", &v), -EINVAL);
	expect_error("store:\n  global_segment_size: 0x1p30\n" NODE, "t.yaml:2:24: ",
		     "store.global_segment_size: expected a size");
}

/* The placement settings of laptop.yaml as text, and their hash: fixed values, so a
 * change to what peers must agree on (the messages' version among it) is a change
 * this test sees. Settings that stay local do not move the fingerprint; one that is
 * not local is named by the diff, and so is a build of another wire version. */
static void test_fingerprint(void)
{
	static const char want[] =
		"peercache.wire_version=2\n"
		"store.mode=slotmap\n"
		"store.max_nodes=0\n"
		"store.slot_max_page_bytes=262144\n"
		"store.slot_size_classes=[16384, 65536, 262144]\n"
		"store.slot_ways=8\n"
		"store.slot_num_buckets=0\n"
		"store.global_segment_size=100663296\n"
		"store.vnodes=128\n"
		"nodes.count=3\n"
		"nodes.names=cf6f4cd379c1feac\n";
	struct pc_topology *t = load_shipped("laptop.yaml"), *u = pc_topology_dup(t);
	char a[TOPOLOGY_PLACEMENT_TEXT_MAX], b[TOPOLOGY_PLACEMENT_TEXT_MAX], diff[256], err[PC_ERR_MAX];
	static const char *const local[] = { "store.timeout_ms=7", "store.tcp_poll_us=0",
					     "store.idle_timeout_s=5", "store.max_connections=10",
					     "nodes.bind_address=0.0.0.0", "store.slot_read_policy=index" };

	CU_ASSERT_EQUAL(topology_placement_text(t, a, sizeof(a)), 0);
	CU_ASSERT_STRING_EQUAL(a, want);
	CU_ASSERT_EQUAL(topology_fingerprint(t), 0xfe4688c62afe23d0ULL);
	for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++) {
		CU_ASSERT_EQUAL_FATAL(pc_topology_set(u, local[i], err, sizeof(err)), 0);
		CU_ASSERT_EQUAL(topology_fingerprint(u), topology_fingerprint(t));
	}
	CU_ASSERT_FALSE(topology_placement_diff(a, strlen(a), a, strlen(a), diff, sizeof(diff)));
	CU_ASSERT_EQUAL_FATAL(pc_topology_set(u, "store.vnodes=64", err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(topology_fingerprint(u), topology_fingerprint(t));
	CU_ASSERT_EQUAL(topology_placement_text(u, b, sizeof(b)), 0);
	CU_ASSERT_TRUE(topology_placement_diff(a, strlen(a), b, strlen(b), diff, sizeof(diff)));
	CU_ASSERT_STRING_EQUAL(diff, "store.vnodes is 128 here, 64 there");
	CU_ASSERT_EQUAL_FATAL(pc_topology_set(u, "nodes.count=4", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(topology_placement_text(u, b, sizeof(b)), 0);
	CU_ASSERT_TRUE(topology_placement_diff(b, strlen(b), a, strlen(a), diff, sizeof(diff)));
	CU_ASSERT_STRING_EQUAL(diff, "store.vnodes is 64 here, 128 there");
	CU_ASSERT_TRUE(topology_placement_diff(b, strlen(b), "", 0, diff, sizeof(diff)));
	CU_ASSERT_STRING_EQUAL(diff, "peercache.wire_version is 2 here, not set there");
	/* a build from before the version: the rest the same */
	CU_ASSERT_TRUE(topology_placement_diff(a, strlen(a), strchr(a, '\n') + 1,
					       strlen(strchr(a, '\n') + 1), diff, sizeof(diff)));
	CU_ASSERT_STRING_EQUAL(diff, "peercache.wire_version is 2 here, not set there");
	pc_topology_free(u);
	pc_topology_free(t);
}


/* store.max_nodes: vacant entries after the listed nodes, skipped by lookups and the
 * writer, filled by topology_fill_node; the node list leaves the fingerprint. */
static void test_room_to_join(void)
{
	static const char text[] =
		"store: {max_nodes: 5, discovery_addr: \"127.0.0.1:1\"}\n"
		"nodes:\n"
		"  - {name: a, address: 127.0.0.1, port: 4000}\n"
		"  - {name: b, address: 127.0.0.1, port: 4001}\n";
	char err[PC_ERR_MAX], fp[TOPOLOGY_PLACEMENT_TEXT_MAX], *buf = NULL;
	struct pc_topology *t, *u;
	size_t len = 0;
	FILE *f;

	CU_ASSERT_EQUAL_FATAL(parse(text, &t, err), 0);
	CU_ASSERT_EQUAL(t->nr_nodes, 5);
	CU_ASSERT_EQUAL(topology_nr_listed(t), 2);
	CU_ASSERT_FALSE(pc_node_listed(&t->nodes[2]));
	CU_ASSERT_EQUAL(pc_topology_find_node(t, ""), -1);
	CU_ASSERT_STRING_EQUAL(pc_topology_node_name(t, 4), "");
	/* a static cluster's fingerprint names its nodes, one with room does not */
	CU_ASSERT_EQUAL(topology_placement_text(t, fp, sizeof(fp)), 0);
	CU_ASSERT_PTR_NULL(strstr(fp, "nodes.names="));
	CU_ASSERT_PTR_NOT_NULL(strstr(fp, "store.max_nodes=5\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(fp, "nodes.count=5\n"));
	u = pc_topology_dup(t);
	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	CU_ASSERT_EQUAL(topology_fingerprint(u), topology_fingerprint(t));
	CU_ASSERT_EQUAL(topology_fill_node(u, 3, "c", "127.0.0.1", 4002), 0);
	CU_ASSERT_EQUAL(topology_fingerprint(u), topology_fingerprint(t));
	CU_ASSERT_EQUAL(pc_topology_find_node(u, "c"), 3);
	CU_ASSERT_EQUAL(u->nodes[3].nr_rails, 1);	/* node defaults */
	CU_ASSERT_EQUAL(topology_fill_node(u, 3, "d", "127.0.0.1", 4003), -EINVAL);	/* taken */
	CU_ASSERT_EQUAL(topology_fill_node(u, 2, "a", "127.0.0.1", 4003), -EINVAL);	/* name */
	CU_ASSERT_EQUAL(topology_fill_node(u, 2, "x y", "127.0.0.1", 4003), -EINVAL);
	CU_ASSERT_EQUAL(topology_fill_node(u, 2, "d", "", 4003), -EINVAL);
	CU_ASSERT_EQUAL(topology_fill_node(u, 2, "d", "10.0.0.1\"}", 4003), -EINVAL);
	CU_ASSERT_EQUAL(topology_fill_node(u, 2, "d", "10.0.0.1\nx", 4003), -EINVAL);
	CU_ASSERT_EQUAL(topology_fill_node(u, 9, "d", "127.0.0.1", 4003), -EINVAL);
	/* the writer leaves vacant entries out and reads back the same table */
	f = open_memstream(&buf, &len);
	CU_ASSERT_EQUAL(pc_topology_write(u, f), 0);
	fclose(f);
	pc_topology_free(u);
	CU_ASSERT_EQUAL_FATAL(parse(buf, &u, err), 0);
	CU_ASSERT_EQUAL(u->nr_nodes, 5);
	CU_ASSERT_EQUAL(topology_nr_listed(u), 3);
	CU_ASSERT_EQUAL(pc_topology_find_node(u, "c"), 2);
	free(buf);
	pc_topology_free(u);
	/* --set grows the room; nodes.count does not mix with it */
	CU_ASSERT_EQUAL(pc_topology_set(t, "store.max_nodes=7", err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(t->nr_nodes, 7);
	CU_ASSERT_EQUAL(pc_topology_set(t, "nodes.count=4", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "store.max_nodes"));
	pc_topology_free(t);
	/* a client of a running cluster lists no node at all */
	CU_ASSERT_EQUAL_FATAL(parse("store: {max_nodes: 4, discovery_addr: \"h:1\"}\n", &t, err), 0);
	CU_ASSERT_EQUAL(t->nr_nodes, 4);
	CU_ASSERT_EQUAL(topology_nr_listed(t), 0);
	/* and is written back as a topology that loads again */
	buf = NULL;
	f = open_memstream(&buf, &len);
	CU_ASSERT_EQUAL(pc_topology_write(t, f), 0);
	fclose(f);
	pc_topology_free(t);
	t = NULL;
	if (parse(buf, &t, err))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(t);
	free(buf);
	pc_topology_free(t);
	expect_error("store: {max_nodes: 1}\nnodes:\n  - {name: a, address: h}\n  - {name: b, address: h, port: 2}\n",
		     "t.yaml:1:1: ", "store.max_nodes: 1 is fewer than the 2 nodes listed");
	expect_error("store: {max_nodes: 4}\nnodes: []\n", "t.yaml:2:8: ",
		     "or store.max_nodes and store.discovery_addr");
}

static CU_TestInfo tests[] = {
	{ "every shipped topology loads", test_all_shipped },
	{ "laptop.yaml", test_laptop },
	{ "rack.yaml and large.yaml", test_rack_large },
	{ "the seed's store keys", test_seed_keys },
	{ "node defaults, rails, nvme", test_defaults_and_nesting },
	{ "one-line errors with file:line:col", test_errors },
	{ "missing file", test_missing_file },
	{ "--set overrides", test_set },
	{ "write and parse back", test_write_roundtrip },
	{ "text values written back: escaped, or refused where they come in", test_text_roundtrip },
	{ "sizes", test_parse_size },
	{ "the config fingerprint: fixed text, local settings left out", test_fingerprint },
	{ "store.max_nodes: room for nodes that join", test_room_to_join },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "topology", NULL, NULL, NULL, NULL, tests })
