/*
 * trace.c - a Mooncake trace file read line by line with jansson.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
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

static bool ids_are_integers(const json_t *arr, size_t n)
{
	for (size_t b = 0; b < n; b++)
		if (!json_is_integer(json_array_get(arr, b)))
			return false;
	return true;
}

/* A timestamp whose distance from any other, in nanoseconds, fits the run's clock:
 * one past it would wrap an arrival to an earlier time. */
static bool timestamp_in_range(long long ms)
{
	return ms >= 0 && (unsigned long long)ms <= TRACE_MAX_MS;
}

int trace_parse_line(const char *line, size_t len, struct trace_req *r, uint64_t **ids,
		     size_t *cap)
{
	json_error_t jerr;
	json_t *o = json_loadb(line, len, 0, &jerr), *arr, *ts;
	size_t n;

	if (!o)
		return 0;	/* a blank or broken line: skip it */
	ts = json_object_get(o, "timestamp");
	r->timestamp_ms = json_integer_value(ts);
	r->input_length = json_integer_value(json_object_get(o, "input_length"));
	arr = json_object_get(o, "hash_ids");
	n = json_array_size(arr);
	/* jansson reads what is not an integer as 0: a timestamp that is not one
	 * would arrive at the trace's start, a hash id that is not one would name
	 * block 0 and hit as another request's prefix. */
	if (!n || r->input_length <= 0 || !json_is_integer(ts) || !ids_are_integers(arr, n) ||
	    !timestamp_in_range(r->timestamp_ms)) {
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

/* Why a line that is not blank is not a request. */
static void line_problem(const char *line, size_t len, char *buf, size_t buflen)
{
	json_error_t jerr;
	json_t *o = json_loadb(line, len, 0, &jerr);

	if (!o) {
		snprintf(buf, buflen, "not JSON (%.100s)", jerr.text);
		return;
	}
	if (!json_is_object(o))
		snprintf(buf, buflen, "not a JSON object");
	else if (!json_array_size(json_object_get(o, "hash_ids")))
		snprintf(buf, buflen, "no hash_ids (a non-empty list of block ids)");
	else if (!ids_are_integers(json_object_get(o, "hash_ids"),
				   json_array_size(json_object_get(o, "hash_ids"))))
		snprintf(buf, buflen, "hash_ids holds something other than integer block ids");
	else if (!json_is_integer(json_object_get(o, "timestamp")))
		snprintf(buf, buflen, "timestamp missing or not a whole number of milliseconds");
	else if (!timestamp_in_range(json_integer_value(json_object_get(o, "timestamp"))))
		snprintf(buf, buflen, "timestamp outside 0..%llu ms", (unsigned long long)TRACE_MAX_MS);
	else
		snprintf(buf, buflen, "input_length missing or not a positive integer");
	json_decref(o);
}

int trace_check(const char *path, uint64_t *good, uint64_t *bad, char *why, size_t whylen,
		char *err, size_t errlen)
{
	struct trace *t;
	struct trace_req r;
	uint64_t lineno = 0;
	size_t n = 0;
	int ret = trace_open(path, &t, err, errlen);

	*good = *bad = 0;
	why[0] = 0;
	if (ret)
		return ret;
	for (;;) {
		ssize_t len = getline(&t->line, &t->line_cap, t->f);
		char reason[160];

		if (len < 0)
			break;
		lineno++;
		ret = trace_parse_line(t->line, (size_t)len, &r, &t->ids, &t->cap);
		if (ret < 0) {
			snprintf(err, errlen, "workload: trace %s: out of memory at line %llu", path,
				 (unsigned long long)lineno);
			trace_close(t);
			return ret;
		}
		if (ret) {
			(*good)++;
			continue;
		}
		if (strspn(t->line, " \t\r\n") == (size_t)len)
			continue;	/* blank */
		if (++*bad <= 3 && n < whylen) {
			line_problem(t->line, (size_t)len, reason, sizeof(reason));
			n += (size_t)snprintf(why + n, whylen - n, "%sline %llu: %s", n ? "; " : "",
					      (unsigned long long)lineno, reason);
		}
	}
	trace_close(t);
	return 0;
}
