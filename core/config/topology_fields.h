/*
 * topology_fields.h - the topology schema as tables: every field's name, type,
 * range and place in the structs. The YAML loader, --set overrides and the writer all
 * walk these tables, so a field is declared once and behaves the same everywhere.
 *
 * Not for: YAML itself (topology.c walks the document).
 */
#ifndef PC_TOPOLOGY_FIELDS_H
#define PC_TOPOLOGY_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config/topology.h"

enum field_type {
	FT_NESTED = 0,	/* a mapping or list the loader walks itself */
	FT_U32,
	FT_U64,
	FT_SIZE,	/* bytes, with KiB/MiB/GiB/TiB or KB/MB/GB/TB suffixes */
	FT_DOUBLE,
	FT_STR,
	FT_BOOL,
	FT_ENUM,
	FT_PORT,
	FT_SIZE_LIST,	/* a sequence of sizes, ascending */
	FT_REMOVED,	/* a key that no longer exists: loading it fails with .doc */
};

struct field {
	const char *name;
	enum field_type type;
	size_t off;		/* in the section's struct */
	size_t cap;		/* FT_STR: buffer bytes; FT_SIZE_LIST: max entries */
	double min, max;	/* numeric range, inclusive */
	const char *const *names;	/* FT_ENUM: value names, NULL-terminated */
	size_t count_off;	/* FT_SIZE_LIST: offset of its uint32_t count */
	const char *def;	/* the default, as YAML would write it; NULL: zero */
	bool placement;		/* it decides where keys live or how slots are laid out:
				 * part of the config fingerprint (fingerprint.c) */
	/* The reference (docs/configuration.md is `pctopo --schema`): what the key
	 * means, its unit and which mode or program reads it. A key without .doc fails
	 * the docs.configuration test. */
	const char *doc;
	const char *unit;	/* "ms", "bytes", ...; NULL: none */
	const char *used_by;	/* "all", "slotmap", "p2p", "tier", "spill", "sim", ... */
	const char *def_text;	/* the default in words where .def is derived or empty */
};

struct section {
	const char *name;
	const struct field *fields;
	size_t nr_fields;
};

extern const struct section store_section, model_section, node_section, rail_section,
	nvme_section;

const struct field *field_find(const struct section *s, const char *name);

/* Format "unknown key 'x' in <where>; did you mean 'y'? (known: a b c)", the list cut
 * short with " ...; docs/configuration.md lists them all)". */
void field_unknown(const struct section *s, const char *where, const char *key, char *buf,
		   size_t len);

/* Parse text (quoted: it was a quoted YAML string) into the field at base. On error
 * returns -EINVAL and writes "expected ..., got '...'" into why. */
int field_parse(const struct field *f, void *base, const char *text, bool quoted, char *why,
		size_t whylen);

/* Parse one entry of an FT_SIZE_LIST at index i. */
int field_parse_list_item(const struct field *f, void *base, size_t i, const char *text,
			  bool quoted, char *why, size_t whylen);

/* Whether a size's suffix is decimal (KB MB GB TB); loaders warn about those. */
bool size_is_decimal(const char *s);

/* Print the field's value as YAML. */
void field_print(const struct field *f, const void *base, FILE *out);
/* A string as a YAML double-quoted scalar. */
void field_print_string(FILE *out, const char *s);
/* Whether a string may be a text value: valid UTF-8 without control characters,
 * so that what a topology holds can be written back as YAML and read again. */
bool text_printable(const char *s);
#define TEXT_PRINTABLE_WHY "expected printable text (valid UTF-8, no control characters)"

/* Zero, then the schema's defaults (nodes get one rail). */
void topology_set_defaults(struct pc_topology *t);
void node_set_defaults(struct pc_node *n);
void nvme_set_defaults(struct pc_nvme *v);
void rail_set_defaults(struct pc_rail *r);

/* The bytes of one element of a model dtype name, or 0. */
uint32_t model_dtype_bytes(const char *dtype);

/* store.global_segment_size's largest (bytes): a node's slot memory. */
#define TOPOLOGY_SEGMENT_MAX (64.0 * 1024 * 1024 * 1024 * 1024)

/* Cross-field checks and derived values (page bytes, classes); one line into err
 * (topology_check.c). */
int topology_validate(struct pc_topology *t, char *err, size_t errlen);

#endif
