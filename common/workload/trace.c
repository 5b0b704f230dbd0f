/*
 * trace.c - a Mooncake trace file read line by line with jansson.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"

struct trace {
	FILE *f;
	char *line;
	size_t line_cap;
	uint64_t *ids;
	size_t cap;
};

int trace_open(const char *path, struct trace **out, char *err, size_t errlen)
{
	struct trace *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->f = fopen(path, "r");
	if (!t->f) {
		snprintf(err, errlen, "workload: cannot open trace %s: %s", path, strerror(errno));
		free(t);
		return -ENOENT;
	}
	*out = t;
	return 0;
}

void trace_close(struct trace *t)
{
	if (!t)
		return;
	fclose(t->f);
	free(t->line);
	free(t->ids);
	free(t);
}

int trace_next(struct trace *t, struct trace_req *r)
{
	for (;;) {
		json_error_t jerr;
		json_t *o, *ids;
		size_t n;

		if (getline(&t->line, &t->line_cap, t->f) < 0)
			return 0;
		o = json_loads(t->line, 0, &jerr);
		if (!o)
			continue;	/* a blank or broken line: skip it */
		r->timestamp_ms = json_integer_value(json_object_get(o, "timestamp"));
		r->input_length = json_integer_value(json_object_get(o, "input_length"));
		ids = json_object_get(o, "hash_ids");
		n = json_array_size(ids);
		if (!n || r->input_length <= 0) {
			json_decref(o);
			continue;
		}
		if (n > t->cap) {
			uint64_t *p = realloc(t->ids, n * 2 * sizeof(*p));

			if (!p) {
				json_decref(o);
				return -ENOMEM;
			}
			t->ids = p;
			t->cap = n * 2;
		}
		for (size_t b = 0; b < n; b++)
			t->ids[b] = (uint64_t)json_integer_value(json_array_get(ids, b));
		json_decref(o);
		r->nids = n;
		r->ids = t->ids;
		return 1;
	}
}
