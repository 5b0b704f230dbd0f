/*
 * topology_check.c - the checks across a topology's fields, once every key is read
 * (topology_validate): size classes and the slots they make, the model's page, the
 * tiered pool and spill, the nodes' names and addresses, and room for nodes that
 * join. Each failure is one line naming the key, where it was given and the fix.
 *
 * Not for: one key's type and range (topology_fields.c checks those as it parses).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "placement/slot.h"
#include "topology_fields.h"

/* The error at mark m of the file, or at the file when the key was not in it (a
 * default, or given by --set): no line and column then, rather than 0:0. */
#define FAIL_AT(m, ...)                                                            \
	do {                                                                       \
		int _n = (m).line ? snprintf(err, errlen, "%s:%d:%d: ", t->source, \
					     (m).line, (m).col) :                  \
				    snprintf(err, errlen, "%s: ", t->source);      \
		if (_n >= 0 && (size_t)_n < errlen)                                \
			snprintf(err + _n, errlen - (size_t)_n, __VA_ARGS__);      \
		return -EINVAL;                                                    \
	} while (0)

static int validate_store(struct pc_topology *t, char *err, size_t errlen)
{
	struct pc_store_cfg *s = &t->store;
	struct pc_mark top = { 1, 1 };
	uint64_t largest;

	if (!s->nr_classes) {
		s->size_classes[0] = s->slot_max_page_bytes ? s->slot_max_page_bytes : 256 * 1024;
		s->nr_classes = 1;
	}
	for (uint32_t i = 1; i < s->nr_classes; i++)
		if (s->size_classes[i] <= s->size_classes[i - 1])
			FAIL_AT(s->classes_mark,
				"store.slot_size_classes: expected ascending sizes, got %llu after %llu; sort the list",
				(unsigned long long)s->size_classes[i],
				(unsigned long long)s->size_classes[i - 1]);
	largest = s->size_classes[s->nr_classes - 1];
	if (s->slot_max_page_bytes && s->slot_max_page_bytes != largest)
		FAIL_AT(s->classes_mark,
			"store.slot_max_page_bytes: %llu differs from the largest size class %llu; drop one or make them equal",
			(unsigned long long)s->slot_max_page_bytes, (unsigned long long)largest);
	s->slot_max_page_bytes = largest;

	for (uint32_t i = 0; i < s->nr_classes && !s->slot_num_buckets; i++) {
		struct slot_geometry g;

		if (slot_class_geometry(&g, s, i))
			FAIL_AT(s->classes_mark,
				"store.global_segment_size: %llu bytes split over %u class%s leaves no bucket of %u ways for the %llu-byte class; raise global_segment_size or set slot_num_buckets",
				(unsigned long long)s->global_segment_size, s->nr_classes, s->nr_classes == 1 ? "" : "es",
				s->slot_ways, (unsigned long long)s->size_classes[i]);
	}
	/* Buckets given outright are not bounded by the segment: a class's region
	 * must still fit what a segment may be, or its size (buckets x ways x
	 * stride) wraps past 2^64 to a small or zero region. */
	for (uint32_t i = 0; i < s->nr_classes && s->slot_num_buckets; i++) {
		struct slot_geometry g;
		uint64_t bytes;

		if (!slot_class_geometry(&g, s, i) &&
		    !__builtin_mul_overflow(g.nr_buckets * g.ways, g.stride, &bytes) &&
		    bytes <= (uint64_t)TOPOLOGY_SEGMENT_MAX)
			continue;
		FAIL_AT(top,
			"store.slot_num_buckets: %llu buckets of %u ways of the %llu-byte class would take more than 64 TiB (%.0f bytes) per node; use fewer buckets, or 0 to derive them from global_segment_size",
			(unsigned long long)s->slot_num_buckets, s->slot_ways,
			(unsigned long long)s->size_classes[i], TOPOLOGY_SEGMENT_MAX);
	}
	/* A member not heard for failure_timeout_ms leaves the ring: with fewer than
	 * three heartbeats in that time one late heartbeat takes a live node out (and
	 * etcd's lease, of the same length, is kept alive at a heartbeat every third
	 * of it). */
	if (s->heartbeat_ms && s->failure_timeout_ms < 3ULL * s->heartbeat_ms)
		FAIL_AT(top,
			"store.failure_timeout_ms: %u ms is less than three heartbeats (store.heartbeat_ms: %u ms): live members would leave the ring between heartbeats; raise failure_timeout_ms to at least %llu or lower heartbeat_ms",
			s->failure_timeout_ms, s->heartbeat_ms, 3ULL * s->heartbeat_ms);
	return 0;
}

static int validate_model(struct pc_topology *t, char *err, size_t errlen)
{
	struct pc_model *m = &t->model;
	uint64_t largest = t->store.size_classes[t->store.nr_classes - 1];

	if (!m->present)
		return 0;
	if (!m->layers || !m->kv_heads || !m->head_dim)
		FAIL_AT(m->mark, "model: layers, kv_heads and head_dim are all required");
	m->dtype_bytes = model_dtype_bytes(m->dtype);
	m->page_bytes = 2ULL * m->layers * m->kv_heads * m->head_dim * m->dtype_bytes *
			m->tokens_per_page;
	if (m->page_bytes > largest)
		FAIL_AT(m->mark,
			"model: a page of this model is %llu bytes, larger than the largest size class (%llu); add a class of at least %llu bytes to store.slot_size_classes",
			(unsigned long long)m->page_bytes, (unsigned long long)largest,
			(unsigned long long)m->page_bytes);
	return 0;
}

/* Room for nodes that join at run time: vacant entries after the listed ones, up to
 * store.max_nodes (again after a --set changed it). */
static int make_room(struct pc_topology *t, uint32_t listed, char *err, size_t errlen)
{
	struct pc_store_cfg *s = &t->store;
	struct pc_mark top = { 1, 1 };
	uint32_t want = s->max_nodes ? s->max_nodes : listed;
	struct pc_node *nodes;

	if (s->max_nodes && s->max_nodes < listed)
		FAIL_AT(top, "store.max_nodes: %u is fewer than the %u nodes listed; raise it or list fewer nodes",
			s->max_nodes, listed);
	if (!listed && !(s->max_nodes && (s->discovery_addr[0] || s->discovery == PC_DISCOVERY_ETCD)))
		FAIL_AT(t->nodes_mark, "nodes: expected at least one node; add a 'nodes:' list (or store.max_nodes and store.discovery_addr or store.discovery: etcd, to learn them from a running cluster)");
	if (want == t->nr_nodes)
		return 0;
	nodes = realloc(t->nodes, (want ? want : 1) * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	for (uint32_t i = t->nr_nodes; i < want; i++)
		nodes[i] = (struct pc_node){ .vacant = true };
	t->nodes = nodes;
	t->nr_nodes = want;
	return 0;
}

/* NULL when a is a numeric IPv4 or IPv6 address or a well-formed host name (RFC 1123
 * labels); else why not. Whether a name resolves is the tools' check (pctopo, pcd):
 * the simulator's topologies name machines that need not exist. */
static const char *address_problem(const char *a)
{
	unsigned char buf[16];
	size_t label = 0;
	bool numeric = true;

	if (inet_pton(AF_INET, a, buf) == 1 || inet_pton(AF_INET6, a, buf) == 1)
		return NULL;
	if (strchr(a, ':'))
		return "not an IPv6 address (write it without brackets or port, e.g. fd00::1)";
	if (strlen(a) > 253)
		return "longer than 253 characters";
	for (const char *c = a;; c++) {
		if (*c == '.' || !*c) {
			if (!label || c[-1] == '-')
				return "an empty label or one ending in '-'";
			if (!*c)
				break;
			label = 0;
			continue;
		}
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || (*c == '-' && label)))
			return "not a host name: only letters, digits, '-' and '.' (or a numeric IPv4/IPv6 address)";
		if (*c < '0' || *c > '9')
			numeric = false;
		if (++label > 63)
			return "a label longer than 63 characters";
	}
	return numeric ? "not an IPv4 address: four numbers from 0 to 255, e.g. 10.0.0.1" : NULL;
}

static int validate_nodes(struct pc_topology *t, char *err, size_t errlen)
{
	uint32_t listed = 0;

	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		const struct pc_node *n = &t->nodes[i];

		if (n->vacant)
			continue;
		listed = i + 1;
		if (!n->name[0])
			FAIL_AT(n->mark, "nodes[%u].name: expected a node name, got none; add 'name: ...'", i);
		/* ASCII only: a name is also a host name (pcd --node $(hostname)), and
		 * topology_fill_node takes no other from a peer */
		for (const unsigned char *c = (const unsigned char *)n->name; *c; c++) {
			if (*c > 0x7f)
				FAIL_AT(n->mark,
					"nodes[%u].name: '%s' has a non-ASCII character; use letters, digits, '-', '_' or '.'",
					i, n->name);
			if (*c <= ' ' || *c == '"' || *c == '\\' || *c == 0x7f)
				FAIL_AT(n->mark,
					"nodes[%u].name: '%s' has a space, quote or control character; use letters, digits, '-', '_' or '.'",
					i, n->name);
		}
		if (!n->address[0])
			FAIL_AT(n->mark, "nodes[%u].address: expected an address, got none; add 'address: 127.0.0.1' or the node's IP", i);
		if (address_problem(n->address))
			FAIL_AT(n->mark, "nodes[%u].address: '%s': %s", i, n->address,
				address_problem(n->address));
		if (n->bind_address[0] && address_problem(n->bind_address))
			FAIL_AT(n->mark, "nodes[%u].bind_address: '%s': %s", i, n->bind_address,
				address_problem(n->bind_address));
		if (!n->nr_rails)
			FAIL_AT(n->mark, "nodes[%u].rails: expected at least one rail", i);
		if (n->nap_us > 0 && n->wake_us > 0 && n->nap_idle_us >= n->idle_us)
			FAIL_AT(n->mark,
				"nodes[%u].nap_idle_us: %g us is not shorter than idle_us (%g us), so nap_us never applies; make it shorter, or nap_us 0",
				i, n->nap_idle_us, n->idle_us);
		for (uint32_t j = 0; j < i; j++) {
			const struct pc_node *o = &t->nodes[j];

			if (o->vacant)
				continue;
			if (!strcmp(o->name, n->name))
				FAIL_AT(n->mark,
					"nodes[%u].name: duplicate node name '%s' (also nodes[%u] at line %d); node names must be unique",
					i, n->name, j, o->mark.line);
			if (!strcmp(o->address, n->address) && o->port == n->port)
				FAIL_AT(n->mark,
					"nodes[%u].address: duplicate address %s port %u (also node '%s' at line %d); give each node its own address or port",
					i, n->address, n->port, o->name, o->mark.line);
		}
	}
	return make_room(t, listed, err, errlen);
}

/* The tiered pool: its block is the model's page unless given. */
static int validate_tier(struct pc_topology *t, char *err, size_t errlen)
{
	struct pc_store_cfg *s = &t->store;
	struct pc_mark top = { 1, 1 };

	if (!s->tier_block_bytes)
		s->tier_block_bytes = t->model.present ? t->model.page_bytes :
							 s->size_classes[s->nr_classes - 1];
	if (s->slot_spill_ways >= s->slot_ways)
		FAIL_AT(top,
			"store.slot_spill_ways: %u free ways of %u would leave no way to write; use fewer than slot_ways",
			s->slot_spill_ways, s->slot_ways);
	for (uint32_t i = 0; s->slot_spill_ways && i < t->nr_nodes; i++)
		if (!t->nodes[i].vacant && !t->nodes[i].has_nvme)
			FAIL_AT(t->nodes[i].mark,
				"nodes[%u] (%s): store.slot_spill_ways spills to disk, but the node has no nvme: {path, capacity}; add one (or node_defaults.nvme)",
				i, t->nodes[i].name);
	if (s->tier_disk_blocks && !s->tier_host_blocks)
		FAIL_AT(top,
			"store.tier_disk_blocks: %u disk blocks but no host blocks; the disk pool holds what the host pool evicts, so set store.tier_host_blocks too",
			s->tier_disk_blocks);
	return 0;
}

int topology_validate(struct pc_topology *t, char *err, size_t errlen)
{
	int ret = validate_store(t, err, errlen);

	if (!ret)
		ret = validate_model(t, err, errlen);
	if (!ret)
		ret = validate_tier(t, err, errlen);
	if (!ret)
		ret = validate_nodes(t, err, errlen);
	return ret;
}
