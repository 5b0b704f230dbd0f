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

int trace_parse_line(const char *line, size_t len, struct trace_req *r, uint64_t **ids,
		     size_t *cap)
{
	json_error_t jerr;
	json_t *o = json_loadb(line, len, 0, &jerr), *arr;
	size_t n;

	if (!o)
		return 0;	/* a blank or broken line: skip it */
	r->timestamp_ms = json_integer_value(json_object_get(o, "timestamp"));
	r->input_length = json_integer_value(json_object_get(o, "input_length"));
	arr = json_object_get(o, "hash_ids");
	n = json_array_size(arr);
	if (!n || r->input_length <= 0) {
		json_decref(o);
		return 0;
	}
	if (n > *cap) {
		uint64_t *p = realloc(*ids, n * 2 * sizeof(*p));

		if (!p) {
			json_decref(o);
			return -ENOMEM;
		}
		*ids = p;
		*cap = n * 2;
	}
	for (size_t b = 0; b < n; b++)
		(*ids)[b] = (uint64_t)json_integer_value(json_array_get(arr, b));
	json_decref(o);
	r->nids = n;
	r->ids = *ids;
	return 1;
}

int trace_next(struct trace *t, struct trace_req *r)
{
	for (;;) {
		ssize_t len = getline(&t->line, &t->line_cap, t->f);
		int ret;

		if (len < 0)
			return 0;
		ret = trace_parse_line(t->line, (size_t)len, r, &t->ids, &t->cap);
		if (ret)
			return ret;
	}
}
