/*
 * slotmap_fixture.c - clusters of in-process stores for the slotmap and store tests
 * (see slotmap_fixture.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "slotmap_fixture.h"
#include "store.h"
#include "testutil.h"

bool fixture_payload_free;
bool fixture_shared;

int fixture_map_peers(void)
{
	fixture_shared = true;
	return 0;
}

int fixture_unmap_peers(void)
{
	fixture_shared = false;
	return 0;
}

struct pc_store *open_node(struct cluster *C, const char *node, struct pc_env *env)
{
	char err[PC_ERR_MAX] = "";
	struct pc_store_opts o = { .size = sizeof(o), .topo = C->topo, .node = node,
				   .fabric = "inproc", .err = err, .errlen = sizeof(err) };
	struct store_deps x = { .backend_arg = C->w, .env = env, .payload_free = fixture_payload_free };
	struct pc_store *s = NULL;

	if (builtin_store_open(&o, &x, &s))
		printf("\n  open %s: %s\n", node ? node : "client", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	return s;
}

/* n nodes named n0.. with the given store section. */
struct cluster *up(uint32_t n, const char *store)
{
	struct cluster *C = calloc(1, sizeof(*C));
	char text[1024], err[PC_ERR_MAX], name[16];
	int len = snprintf(text, sizeof(text), "store: {%s}\nnodes:\n", store);

	for (uint32_t i = 0; i < n; i++)
		len += snprintf(text + len, sizeof(text) - (size_t)len,
				"  - {name: n%u, address: 127.0.0.1, port: %u}\n", i, 40000 + i);
	if (pc_topology_parse(text, (size_t)len, "test", &C->topo, err, sizeof(err)))
		printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL_FATAL(C->topo);
	C->w = inproc_world_create(n);
	inproc_world_share(C->w, fixture_shared);
	C->n = n;
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		C->s[i] = open_node(C, name, NULL);
	}
	return C;
}

void down(struct cluster *C)
{
	for (uint32_t i = 0; i < C->n; i++)
		pc_store_close(C->s[i]);
	inproc_world_destroy(C->w);
	pc_topology_free(C->topo);
	free(C);
}

uint32_t owner_of(struct cluster *C, const char *key)
{
	return ring_owner_of(C->s[0]->svc.ring, keyhash_of(key, strlen(key)));
}

/* The next key "<prefix><j>" owned by node. */
void key_on(struct cluster *C, uint32_t node, const char *prefix, int *j, char *out)
{
	do
		sprintf(out, "%s%d", prefix, (*j)++);
	while (owner_of(C, out) != node);
}

struct pc_metrics metrics(struct pc_store *s)
{
	struct pc_metrics m = { .size = sizeof(m) };

	pc_store_metrics(s, &m);
	return m;
}

struct batch *batch_new(size_t n, size_t len)
{
	struct batch *b = calloc(1, sizeof(*b));

	b->n = n;
	b->len = len;
	b->keys = calloc(n, 32);
	b->buf = calloc(n, len);
	b->pg = calloc(n, sizeof(*b->pg));
	return b;
}

void batch_free(struct batch *b)
{
	free(b->keys);
	free(b->buf);
	free(b->pg);
	free(b);
}

/* Pages for set: keys[i], content version v. */
void batch_for_set(struct batch *b, uint32_t v)
{
	for (size_t i = 0; i < b->n; i++) {
		pc_test_fill(b->buf + i * b->len, b->len, b->keys[i], v);
		b->pg[i] = (struct pc_page){ .key = b->keys[i], .key_len = strlen(b->keys[i]),
					     .data = b->buf + i * b->len, .len = b->len };
	}
}

void batch_for_get(struct batch *b, size_t expect)
{
	memset(b->buf, 0, b->n * b->len);
	for (size_t i = 0; i < b->n; i++)
		b->pg[i] = (struct pc_page){ .key = b->keys[i], .key_len = strlen(b->keys[i]),
					     .data = b->buf + i * b->len, .cap = b->len,
					     .len = expect };
}

void run_mixed(int *outcome, size_t n, uint64_t *mem, uint64_t *round_trips)
{
	struct cluster *C = up(3, "slot_size_classes: [4KiB, 16KiB], slot_ways: 2, slot_num_buckets: 8, slot_read_policy: predict");
	struct batch *b = batch_new(n, 16384);
	size_t o = 0;

	*mem = 0;
	for (uint32_t i = 0; i < 3; i++) {
		struct store_footprint fp;

		store_footprint(C->s[i], &fp);
		*mem += fp.mem_bytes;
	}
	for (size_t i = 0; i < n; i++)
		sprintf(b->keys[i], "mix-%zu", (i * 7919) % (n / 2));	/* repeats: overwrites */
	for (size_t i = 0; i < n; i += 16) {
		size_t m = n - i < 16 ? n - i : 16;

		for (size_t k = 0; k < m; k++)
			b->pg[i + k] = (struct pc_page){ .key = b->keys[i + k],
							 .key_len = strlen(b->keys[i + k]),
							 .data = fixture_payload_free ? NULL : b->buf + (i + k) * 16384,
							 .len = (i + k) % 3 ? 3000 : 12000 };
		pc_batch_set(C->s[i % 3], b->pg + i, m);
		for (size_t k = 0; k < m; k++)
			outcome[o++] = b->pg[i + k].status;
		for (size_t k = 0; k < m; k++)
			b->pg[i + k] = (struct pc_page){ .key = b->keys[(i + k * 5) % n],
							 .key_len = strlen(b->keys[(i + k * 5) % n]),
							 .data = fixture_payload_free ? NULL : b->buf + (i + k) * 16384,
							 .cap = 16384 };
		pc_batch_get(C->s[(i + 1) % 3], b->pg + i, m);
		for (size_t k = 0; k < m; k++)
			outcome[o++] = b->pg[i + k].status ? b->pg[i + k].status : (int)b->pg[i + k].len;
	}
	*round_trips = 0;
	for (uint32_t i = 0; i < 3; i++)
		*round_trips += metrics(C->s[i]).round_trips;
	batch_free(b);
	down(C);
}
