/*
 * topology.c - loads a topology YAML file with libyaml's document API, walks it
 * against the schema tables, and writes it back out.
 *
 * This is the one place in core/ that opens a file: configuration is read before
 * any backend exists, and the simulator reads the very same files.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "topology_fields.h"

static const struct field top_fields[] = {
	{ .name = "name" }, { .name = "store" }, { .name = "model" },
	{ .name = "node_defaults" }, { .name = "nodes" },
};
static const struct section top_section = {
	.name = "the top level", .fields = top_fields,
	.nr_fields = sizeof(top_fields) / sizeof(top_fields[0]),
};

struct loader {
	struct pc_topology *t;
	yaml_document_t doc;
	char *err;
	size_t errlen;
};

static struct pc_mark mark_of(const yaml_node_t *n)
{
	return (struct pc_mark){ (int)n->start_mark.line + 1, (int)n->start_mark.column + 1 };
}

__attribute__((format(printf, 3, 4)))
static int fail(struct loader *L, const yaml_node_t *n, const char *fmt, ...)
{
	struct pc_mark m = n ? mark_of(n) : (struct pc_mark){ 1, 1 };
	va_list ap;
	int k;

	k = snprintf(L->err, L->errlen, "%s:%d:%d: ", L->t->source, m.line, m.col);
	if (k >= 0 && (size_t)k < L->errlen) {
		va_start(ap, fmt);
		vsnprintf(L->err + k, L->errlen - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *kind_name(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_SCALAR_NODE:
		return n->data.scalar.length ? "a scalar" : "nothing";
	default:
		return "nothing";
	}
}

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static bool quoted(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
	       n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
}

static int expect(struct loader *L, const yaml_node_t *n, yaml_node_type_t type,
		  const char *path, const char *what)
{
	/* A double-quoted "\0" puts a NUL inside the scalar: every use of the text
	 * would stop there and take a shorter value than the one written. */
	if (n->type == YAML_SCALAR_NODE && strlen(scalar(n)) != n->data.scalar.length)
		return fail(L, n, "%s: has a NUL character (\\0) in %s; remove it", path, what);
	if (n->type == type && (type != YAML_SCALAR_NODE || n->data.scalar.length || quoted(n)))
		return 0;
	return fail(L, n, "%s: expected %s, got %s", path, what, kind_name(n));
}

/* Reject a key given twice in one mapping (libyaml keeps both silently). */
static int check_duplicate(struct loader *L, const yaml_node_t *map, const yaml_node_pair_t *pair,
			   const char *where)
{
	const char *key = scalar(yaml_document_get_node(&L->doc, pair->key));

	for (const yaml_node_pair_t *p = map->data.mapping.pairs.start; p < pair; p++) {
		const yaml_node_t *k = yaml_document_get_node(&L->doc, p->key);

		if (k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), key))
			return fail(L, yaml_document_get_node(&L->doc, pair->key),
				    "%s.%s: key given twice (first at line %d); keep one", where,
				    key, (int)k->start_mark.line + 1);
	}
	return 0;
}

typedef int nested_fn(struct loader *L, void *base, const char *key, const yaml_node_t *v,
		      const char *path);

/* Walk a mapping, setting fields of base from section s; keys the table lists
 * without a type are handed to nested(). */
static int load_mapping(struct loader *L, const yaml_node_t *map, const struct section *s,
			void *base, const char *where, nested_fn *nested)
{
	char path[160], why[PC_ERR_MAX];

	if (expect(L, map, YAML_MAPPING_NODE, where, "a mapping of keys"))
		return -EINVAL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		const yaml_node_t *k = yaml_document_get_node(&L->doc, p->key);
		const yaml_node_t *v = yaml_document_get_node(&L->doc, p->value);
		const struct field *f;

		if (expect(L, k, YAML_SCALAR_NODE, where, "a key"))
			return -EINVAL;
		if (check_duplicate(L, map, p, where))
			return -EINVAL;
		f = field_find(s, scalar(k));
		if (!f) {
			field_unknown(s, where, scalar(k), why, sizeof(why));
			return fail(L, k, "%s", why);
		}
		snprintf(path, sizeof(path), "%s.%s", where, f->name);
		if (f->type == FT_NESTED) {
			if (!nested)
				return fail(L, k, "%s: not allowed here", path);
			if (nested(L, base, f->name, v, path))
				return -EINVAL;
			continue;
		}
		if (f->type == FT_SIZE_LIST) {
			uint32_t n = 0;

			if (expect(L, v, YAML_SEQUENCE_NODE, path, "a list of sizes"))
				return -EINVAL;
			for (yaml_node_item_t *it = v->data.sequence.items.start;
			     it < v->data.sequence.items.top; it++, n++) {
				const yaml_node_t *e = yaml_document_get_node(&L->doc, *it);

				if (expect(L, e, YAML_SCALAR_NODE, path, "a size") ||
				    field_parse_list_item(f, base, n, scalar(e), quoted(e), why,
							  sizeof(why)))
					return e->type == YAML_SCALAR_NODE ?
						       fail(L, e, "%s[%u]: %s", path, n, why) :
						       -EINVAL;
			}
			if (!n)
				return fail(L, v, "%s: expected at least one size", path);
			*(uint32_t *)((char *)base + f->count_off) = n;
			continue;
		}
		if (expect(L, v, YAML_SCALAR_NODE, path, "a value"))
			return -EINVAL;
		if (field_parse(f, base, scalar(v), quoted(v), why, sizeof(why)))
			return fail(L, v, "%s: %s", path, why);
	}
	return 0;
}

static int node_nested(struct loader *L, void *base, const char *key, const yaml_node_t *v,
		       const char *path)
{
	struct pc_node *n = base;
	char rpath[192];

	if (!strcmp(key, "nvme")) {
		n->has_nvme = true;
		return load_mapping(L, v, &nvme_section, &n->nvme, path, NULL);
	}
	/* rails: a list of rail mappings replaces the defaults wholesale */
	if (expect(L, v, YAML_SEQUENCE_NODE, path, "a list of rails"))
		return -EINVAL;
	n->nr_rails = 0;
	for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
	     it++) {
		const yaml_node_t *e = yaml_document_get_node(&L->doc, *it);

		if (n->nr_rails == PC_MAX_RAILS)
			return fail(L, e, "%s: at most %d rails per node", path, PC_MAX_RAILS);
		snprintf(rpath, sizeof(rpath), "%s[%u]", path, n->nr_rails);
		rail_set_defaults(&n->rails[n->nr_rails]);
		if (load_mapping(L, e, &rail_section, &n->rails[n->nr_rails], rpath, NULL))
			return -EINVAL;
		n->nr_rails++;
	}
	if (!n->nr_rails)
		return fail(L, v, "%s: expected at least one rail", path);
	return 0;
}

static int load_nodes(struct loader *L, const yaml_node_t *seq, const struct pc_node *tmpl)
{
	struct pc_topology *t = L->t;
	size_t count;
	char path[64];

	if (expect(L, seq, YAML_SEQUENCE_NODE, "nodes", "a list of nodes"))
		return -EINVAL;
	count = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
	t->nodes = calloc(count ? count : 1, sizeof(*t->nodes));
	if (!t->nodes)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		const yaml_node_t *e =
			yaml_document_get_node(&L->doc, seq->data.sequence.items.start[i]);
		struct pc_node *n = &t->nodes[i];

		*n = *tmpl;
		n->mark = mark_of(e);
		t->nr_nodes = (uint32_t)i + 1;
		snprintf(path, sizeof(path), "nodes[%zu]", i);
		if (load_mapping(L, e, &node_section, n, path, node_nested))
			return -EINVAL;
	}
	return 0;
}

static int load_document(struct loader *L)
{
	const yaml_node_t *root = yaml_document_get_root_node(&L->doc);
	struct pc_topology *t = L->t;
	const yaml_node_t *nodes = NULL, *defaults = NULL;
	struct pc_node tmpl;
	char why[PC_ERR_MAX];

	if (!root)
		return fail(L, NULL, "the file is empty; a topology needs at least a 'nodes:' list");
	if (expect(L, root, YAML_MAPPING_NODE, "the top level", "a mapping (store:, nodes:, ...)"))
		return -EINVAL;
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = yaml_document_get_node(&L->doc, p->key);
		const yaml_node_t *v = yaml_document_get_node(&L->doc, p->value);
		const char *key;

		if (expect(L, k, YAML_SCALAR_NODE, "the top level", "a key") ||
		    check_duplicate(L, root, p, "(top)"))
			return -EINVAL;
		key = scalar(k);
		if (!strcmp(key, "name")) {
			if (expect(L, v, YAML_SCALAR_NODE, "name", "a string"))
				return -EINVAL;
			if (strlen(scalar(v)) >= sizeof(t->name))
				return fail(L, v, "name: at most %zu characters", sizeof(t->name) - 1);
			if (!text_printable(scalar(v)))
				return fail(L, v, "name: " TEXT_PRINTABLE_WHY);
			strcpy(t->name, scalar(v));
		} else if (!strcmp(key, "store")) {
			if (load_mapping(L, v, &store_section, &t->store, "store", NULL))
				return -EINVAL;
			for (yaml_node_pair_t *q = v->data.mapping.pairs.start;
			     q < v->data.mapping.pairs.top; q++) {
				const yaml_node_t *qk = yaml_document_get_node(&L->doc, q->key);

				if (!strcmp(scalar(qk), "slot_size_classes") ||
				    !strcmp(scalar(qk), "slot_max_page_bytes"))
					t->store.classes_mark = mark_of(qk);
				if (!strcmp(scalar(qk), "slot_size_classes"))
					t->store.classes_explicit = true;
			}
		} else if (!strcmp(key, "model")) {
			t->model.present = true;
			t->model.mark = mark_of(k);
			if (load_mapping(L, v, &model_section, &t->model, "model", NULL))
				return -EINVAL;
		} else if (!strcmp(key, "node_defaults")) {
			defaults = v;
		} else if (!strcmp(key, "nodes")) {
			nodes = v;
		} else {
			field_unknown(&top_section, "the top level", key, why, sizeof(why));
			return fail(L, k, "%s", why);
		}
	}
	/* Defaults first, whatever order the file lists them in. */
	node_set_defaults(&tmpl);
	if (defaults && load_mapping(L, defaults, &node_section, &tmpl, "node_defaults",
				     node_nested))
		return -EINVAL;
	t->nodes_mark = nodes ? mark_of(nodes) : (struct pc_mark){ 1, 1 };
	if (nodes && load_nodes(L, nodes, &tmpl))
		return -EINVAL;
	return topology_validate(t, L->err, L->errlen);
}

static struct pc_topology *topology_new(const char *name)
{
	struct pc_topology *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	snprintf(t->source, sizeof(t->source), "%s", name);
	topology_set_defaults(t);
	return t;
}

int pc_topology_parse(const char *text, size_t len, const char *name,
		      struct pc_topology **out, char *err, size_t errlen)
{
	struct loader L = { .err = err, .errlen = errlen };
	yaml_parser_t parser;
	int ret;

	L.t = topology_new(name);
	if (!L.t)
		return -ENOMEM;
	if (!yaml_parser_initialize(&parser)) {
		free(L.t);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &L.doc)) {
		snprintf(err, errlen, "%s:%zu:%zu: YAML syntax: %s%s%s", name,
			 parser.problem_mark.line + 1, parser.problem_mark.column + 1,
			 parser.problem ? parser.problem : "cannot parse",
			 parser.context ? " " : "", parser.context ? parser.context : "");
		yaml_parser_delete(&parser);
		pc_topology_free(L.t);
		return -EINVAL;
	}
	ret = load_document(&L);
	yaml_document_delete(&L.doc);
	yaml_parser_delete(&parser);
	if (ret) {
		if (ret == -ENOMEM)
			snprintf(err, errlen, "%s: out of memory", name);
		pc_topology_free(L.t);
		return ret;
	}
	*out = L.t;
	return 0;
}

int pc_topology_load(const char *path, struct pc_topology **out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	int ret;

	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot open topology file: %s; check the path and that the file is readable",
			 path, strerror(errno));
		return ret;
	}
	do {
		if (len + 4096 > cap) {
			char *b = realloc(buf, cap = cap ? cap * 2 : 8192);

			if (!b) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = b;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	ret = ferror(f) ? -EIO : 0;
	fclose(f);
	if (ret)
		snprintf(err, errlen, "%s: read error", path);
	else
		ret = pc_topology_parse(buf, len, path, out, err, errlen);
	free(buf);
	return ret;
}

void pc_topology_free(struct pc_topology *t)
{
	if (!t)
		return;
	free(t->nodes);
	free(t);
}

struct pc_topology *pc_topology_dup(const struct pc_topology *t)
{
	struct pc_topology *d = malloc(sizeof(*d));

	if (!d)
		return NULL;
	*d = *t;
	d->nodes = malloc((t->nr_nodes ? t->nr_nodes : 1) * sizeof(*d->nodes));
	if (!d->nodes) {
		free(d);
		return NULL;
	}
	memcpy(d->nodes, t->nodes, t->nr_nodes * sizeof(*d->nodes));
	return d;
}

/* A node name, a host name or an address: ASCII, no space, quote, backslash or
 * control byte (as validate_nodes takes from a file, whether char is signed or not). */
static bool plain_word(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f || *s == '"' || *s == '\\')
			return false;
	return true;
}

int topology_fill_node(struct pc_topology *t, uint32_t i, const char *name, const char *address,
		       uint16_t port)
{
	struct pc_node n;

	if (i >= t->nr_nodes || !t->nodes[i].vacant || !name[0] || !address[0] ||
	    strlen(name) >= sizeof(n.name) || strlen(address) >= sizeof(n.address) ||
	    pc_topology_find_node(t, name) >= 0)
		return -EINVAL;
	/* Both come from peers (a JOIN, a registry, a view) and go into logs and into
	 * the topology text pcctl writes for itself. */
	if (!plain_word(name) || !plain_word(address))
		return -EINVAL;
	node_set_defaults(&n);
	snprintf(n.name, sizeof(n.name), "%s", name);
	snprintf(n.address, sizeof(n.address), "%s", address);
	n.port = port;
	n.vacant = true;
	t->nodes[i] = n;
	__atomic_store_n(&t->nodes[i].vacant, false, __ATOMIC_RELEASE);
	return 0;
}

int pc_topology_find_node(const struct pc_topology *t, const char *name)
{
	for (uint32_t i = 0; i < t->nr_nodes; i++)
		if (!t->nodes[i].vacant && !strcmp(t->nodes[i].name, name))
			return (int)i;
	return -1;
}

/* nodes.count=N: keep the first N nodes, or add nodes like the last one. */
static int set_node_count(struct pc_topology *t, const char *value, char *why, size_t whylen)
{
	char *end;
	unsigned long n = strtoul(value, &end, 10);
	struct pc_node *nodes;

	if (t->store.max_nodes) {
		snprintf(why, whylen, "nodes.count and store.max_nodes do not mix: list the nodes, or make room for them to join");
		return -EINVAL;
	}
	if (!*value || *end || n < 1 || n > 1000000) {
		snprintf(why, whylen, "expected a node count from 1 to 1000000, got '%s'", value);
		return -EINVAL;
	}
	nodes = realloc(t->nodes, n * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	t->nodes = nodes;
	for (uint32_t i = t->nr_nodes; i < n; i++) {
		struct pc_node *last = &nodes[i - 1];
		unsigned k = i;

		nodes[i] = *last;
		/* The port after 65535 is 1: port + 1 is an int, so a test of it for
		 * zero would never see the wrap, and the cast would make it port 0. */
		nodes[i].port = last->port == UINT16_MAX ? 1 : (uint16_t)(last->port + 1);
		do
			snprintf(nodes[i].name, sizeof(nodes[i].name), "node%u", k++);
		while (pc_topology_find_node(t, nodes[i].name) >= 0 &&
		       (uint32_t)pc_topology_find_node(t, nodes[i].name) < i);
	}
	t->nr_nodes = (uint32_t)n;
	return 0;
}

/* A node named by index or by name, as pc_topology_get and pc_topology_set take it:
 * its index, or -1. */
static int node_by_ref(const struct pc_topology *t, const char *ref)
{
	char *end;
	unsigned long i = strtoul(ref, &end, 10);

	return *end || !*ref ? pc_topology_find_node(t, ref) : i < t->nr_nodes ? (int)i : -1;
}

/* nodes.<field>, nodes.rails.<field>, nodes.nvme.<field>: every node (every rail);
 * nodes.<index or name>.<field>, .nvme.<field>, .rails.<index>.<field>: one node
 * (one rail), the names pc_topology_get reads. "rails" and "nvme" are taken as the
 * sections, never as node names. */
static int set_in_nodes(struct pc_topology *t, const char *key, const char *value, char *why,
			size_t whylen)
{
	const struct section *s = &node_section;
	const struct field *f;
	const char *sub = strchr(key, '.');
	uint32_t lo = 0, hi = t->nr_nodes, rail = UINT32_MAX;
	char head[64];

	if (!strcmp(key, "count"))
		return set_node_count(t, value, why, whylen);
	snprintf(head, sizeof(head), "%.*s", sub ? (int)(sub - key) : (int)strlen(key), key);
	if (sub && strcmp(head, "rails") && strcmp(head, "nvme")) {
		int idx = node_by_ref(t, head);

		if (idx < 0 || t->nodes[idx].vacant) {
			snprintf(why, whylen, "no node '%s' (%u nodes); name one by index or name (nodes.0.port), or set every node's (nodes.port)",
				 head, t->nr_nodes);
			return -EINVAL;
		}
		lo = (uint32_t)idx;
		hi = lo + 1;
		key = sub + 1;
		sub = strchr(key, '.');
		snprintf(head, sizeof(head), "%.*s", sub ? (int)(sub - key) : (int)strlen(key), key);
	}
	if (sub && (!strcmp(head, "rails") || !strcmp(head, "nvme"))) {
		s = !strcmp(head, "rails") ? &rail_section : &nvme_section;
		key = sub + 1;
		if (s == &rail_section && hi == lo + 1 && *key >= '0' && *key <= '9') {
			char *end;

			rail = (uint32_t)strtoul(key, &end, 10);
			if (*end != '.' || rail >= t->nodes[lo].nr_rails) {
				snprintf(why, whylen, "rails.%s: name a rail by index (0 to %u), then a field",
					 key, t->nodes[lo].nr_rails - 1);
				return -EINVAL;
			}
			key = end + 1;
		}
	} else if (sub) {
		snprintf(why, whylen, "'%s' has no sub-fields (only rails.* and nvme.* do)", head);
		return -EINVAL;
	}
	f = field_find(s, key);
	if (!f || f->type == FT_NESTED) {
		field_unknown(s, s == &node_section ? "nodes" : s->name, key, why, whylen);
		return -EINVAL;
	}
	for (uint32_t i = lo; i < hi; i++) {
		struct pc_node *n = &t->nodes[i];

		if (n->vacant)
			continue;
		if (s == &nvme_section) {
			n->has_nvme = true;
			if (field_parse(f, &n->nvme, value, false, why, whylen))
				return -EINVAL;
		} else if (s == &rail_section) {
			for (uint32_t r = 0; r < n->nr_rails; r++)
				if ((rail == UINT32_MAX || r == rail) &&
				    field_parse(f, &n->rails[r], value, false, why, whylen))
					return -EINVAL;
		} else if (field_parse(f, n, value, false, why, whylen)) {
			return -EINVAL;
		}
	}
	return 0;
}

static int apply_set(struct pc_topology *t, const char *key, const char *value, char *why,
		     size_t whylen)
{
	const struct field *f;

	if (!strncmp(key, "store.", 6)) {
		f = field_find(&store_section, key + 6);
		if (!f) {
			field_unknown(&store_section, "store", key + 6, why, whylen);
			return -EINVAL;
		}
		/* One of the two class keys replaces the other's derived value. */
		if (!strcmp(f->name, "slot_size_classes")) {
			t->store.slot_max_page_bytes = 0;
			t->store.classes_explicit = true;
		} else if (!strcmp(f->name, "slot_max_page_bytes") && !t->store.classes_explicit) {
			t->store.nr_classes = 0;
		}
		return field_parse(f, &t->store, value, false, why, whylen);
	}
	if (!strncmp(key, "model.", 6)) {
		f = field_find(&model_section, key + 6);
		if (!f) {
			field_unknown(&model_section, "model", key + 6, why, whylen);
			return -EINVAL;
		}
		t->model.present = true;
		return field_parse(f, &t->model, value, false, why, whylen);
	}
	if (!strncmp(key, "nodes.", 6))
		return set_in_nodes(t, key + 6, value, why, whylen);
	if (!strcmp(key, "name")) {
		if (!text_printable(value)) {
			snprintf(why, whylen, TEXT_PRINTABLE_WHY);
			return -EINVAL;
		}
		return snprintf(t->name, sizeof(t->name), "%s", value) >= (int)sizeof(t->name) ?
			       -EINVAL : 0;
	}
	snprintf(why, whylen,
		 "unknown key; use store.<field>, model.<field>, nodes.<field>, nodes.rails.<field>, nodes.nvme.<field>, nodes.<node>.<field> or nodes.count");
	return -EINVAL;
}

int pc_topology_set(struct pc_topology *t, const char *assignment, char *err, size_t errlen)
{
	const char *eq = strchr(assignment, '=');
	struct pc_topology *d;
	char key[128], why[PC_ERR_MAX];
	int ret;

	if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof(key)) {
		snprintf(err, errlen, "--set %s: expected key=value, e.g. store.slot_ways=8",
			 assignment);
		return -EINVAL;
	}
	snprintf(key, sizeof(key), "%.*s", (int)(eq - assignment), assignment);
	d = pc_topology_dup(t);
	if (!d)
		return -ENOMEM;
	ret = apply_set(d, key, eq + 1, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "--set %s: %s", assignment, why);
		pc_topology_free(d);
		return ret;
	}
	ret = topology_validate(d, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "--set %s: %s", assignment, why);
		pc_topology_free(d);
		return ret;
	}
	free(t->nodes);
	*t = *d;
	free(d);
	return 0;
}

/* ------------------------------------------------------------------ reading by name */

/* field's value as text: what field_print() writes, strings unquoted. */
static int print_field(const struct field *f, const void *base, char *buf, size_t len)
{
	char *text = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&text, &n);
	int ret = 0;

	if (!m)
		return -ENOMEM;
	if (f->type == FT_STR)
		fputs((const char *)base + f->off, m);
	else
		field_print(f, base, m);
	if (fclose(m))
		ret = -ENOMEM;
	else if (n >= len)
		ret = -ERANGE;
	else
		memcpy(buf, text, n + 1);
	free(text);
	return ret;
}

static int get_in(const struct section *s, const char *where, const void *base, const char *key,
		  char *buf, size_t len, char *err, size_t errlen)
{
	const struct field *f = field_find(s, key);

	if (f && f->type == FT_REMOVED) {
		snprintf(err, errlen, "%s.%s: %s", where, key, f->doc);
		return -ENOENT;
	}
	if (!f || f->type == FT_NESTED) {
		field_unknown(s, where, key, err, errlen);
		return -ENOENT;
	}
	return print_field(f, base, buf, len);
}

/* nodes.<index or name>.<field>, .nvme.<field>, .rails.<index>.<field> */
static int get_in_node(const struct pc_topology *t, const char *key, char *buf, size_t len, char *err,
		       size_t errlen)
{
	const char *dot = strchr(key, '.');
	char head[PC_NAME_MAX], *end;
	const struct pc_node *n;
	unsigned long i;
	int idx;

	if (!dot || dot - key >= (int)sizeof(head)) {
		snprintf(err, errlen, "nodes.%s: name a node by index or name, then a field (nodes.0.address)",
			 key);
		return -ENOENT;
	}
	snprintf(head, sizeof(head), "%.*s", (int)(dot - key), key);
	idx = node_by_ref(t, head);
	if (idx < 0) {
		snprintf(err, errlen, "nodes.%s: no such node (%u nodes)", head, t->nr_nodes);
		return -ENOENT;
	}
	n = &t->nodes[idx];
	key = dot + 1;
	if (!strncmp(key, "nvme.", 5))
		return get_in(&nvme_section, "nodes.nvme", &n->nvme, key + 5, buf, len, err, errlen);
	if (!strncmp(key, "rails.", 6)) {
		i = strtoul(key + 6, &end, 10);
		if (end == key + 6 || *end != '.' || i >= n->nr_rails) {
			snprintf(err, errlen, "nodes.%s.%s: name a rail by index (0 to %u), then a field",
				 head, key, n->nr_rails - 1);
			return -ENOENT;
		}
		return get_in(&rail_section, "nodes.rails", &n->rails[i], end + 1, buf, len, err, errlen);
	}
	return get_in(&node_section, "nodes", n, key, buf, len, err, errlen);
}

int pc_topology_get(const struct pc_topology *t, const char *name, char *buf, size_t len, char *err,
		    size_t errlen)
{
	char why[PC_ERR_MAX] = "";
	int ret;

	if (!t || !name || !buf || !len)
		return -EINVAL;
	if (!strncmp(name, "store.", 6))
		ret = get_in(&store_section, "store", &t->store, name + 6, buf, len, why, sizeof(why));
	else if (!strcmp(name, "model.page_bytes"))	/* derived from the shape */
		ret = snprintf(buf, len, "%llu", (unsigned long long)t->model.page_bytes) >= (int)len ?
			      -ERANGE : 0;
	else if (!strncmp(name, "model.", 6))
		ret = get_in(&model_section, "model", &t->model, name + 6, buf, len, why, sizeof(why));
	else if (!strncmp(name, "nodes.", 6))
		ret = get_in_node(t, name + 6, buf, len, why, sizeof(why));
	else if (!strcmp(name, "name"))
		ret = snprintf(buf, len, "%s", t->name) >= (int)len ? -ERANGE : 0;
	else {
		snprintf(why, sizeof(why), "use store.<field>, model.<field>, nodes.<node>.<field> or name");
		ret = -ENOENT;
	}
	if (ret == -ERANGE)
		snprintf(why, sizeof(why), "the value does not fit in %zu bytes", len);
	if (ret && err && errlen)
		snprintf(err, errlen, "%s: %s", name, why);
	return ret;
}

uint32_t pc_topology_nr_nodes(const struct pc_topology *t)
{
	return t ? t->nr_nodes : 0;
}

const char *pc_topology_node_name(const struct pc_topology *t, uint32_t i)
{
	return t && i < t->nr_nodes ? t->nodes[i].name : NULL;
}

/* ------------------------------------------------------------------ writing */

static void write_section(FILE *f, const struct section *s, const void *base, const char *indent)
{
	for (size_t i = 0; i < s->nr_fields; i++) {
		if (s->fields[i].type == FT_NESTED || s->fields[i].type == FT_REMOVED)
			continue;	/* nested: written by the caller */
		fprintf(f, "%s%s: ", indent, s->fields[i].name);
		field_print(&s->fields[i], base, f);
		fputc('\n', f);
	}
}

int pc_topology_write(const struct pc_topology *t, FILE *f)
{
	fprintf(f, "# resolved topology (from %s)\nname: ", t->source);
	field_print_string(f, t->name);
	fprintf(f, "\nstore:\n");
	write_section(f, &store_section, &t->store, "  ");
	if (t->model.present) {
		fprintf(f, "model:\n");
		write_section(f, &model_section, &t->model, "  ");
	}
	/* A client of a running cluster lists no node: "nodes:" alone would be a
	 * null, which does not load again; an empty list does. */
	fprintf(f, topology_nr_listed(t) ? "nodes:\n" : "nodes: []\n");
	for (uint32_t i = 0; i < t->nr_nodes; i++) {
		const struct pc_node *n = &t->nodes[i];

		if (n->vacant)
			continue;
		fprintf(f, "  -\n");
		write_section(f, &node_section, n, "    ");
		fprintf(f, "    rails:\n");
		for (uint32_t r = 0; r < n->nr_rails; r++) {
			fprintf(f, "      -\n");
			write_section(f, &rail_section, &n->rails[r], "        ");
		}
		if (n->has_nvme) {
			fprintf(f, "    nvme:\n");
			write_section(f, &nvme_section, &n->nvme, "      ");
		}
	}
	return ferror(f) ? -EIO : 0;
}
