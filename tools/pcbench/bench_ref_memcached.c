/*
 * bench_ref_memcached.c - memcached clients for pcbench (text protocol, memcached
 * 1.6 with -I 1m for pages up to 1 MiB):
 *
 *   meta      a batch is one pipelined flight of meta commands closed by "mn":
 *             "ms <key> <len> q" sets (successes are silent), "mg <key> v q O<i>"
 *             gets (misses are silent, a hit names its key's index), "mg <key> q
 *             O<i>" for exists.
 *   multiget  "set ... noreply" sets closed by "mn", one "get k1 k2 ..." a batch.
 *   naive     one "set" or "get" at a time, each waiting for its answer: the
 *             obvious client, which the others must beat.
 *
 * Values land straight in the caller's pages (bench_ref_io.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_ref_int.h"
#include "bench_ref_io.h"

static int mc_open(void **ctx, const char *host, int port, const struct ref_shape *s,
		   unsigned spin_us)
{
	return refio_conn_open((struct refio_conn **)ctx, host, port, 2 * s->batch + 2, spin_us);
}

static void mc_close(void *ctx)
{
	refio_conn_close(ctx);
}

/* Read lines until "MN"; anything else is an error the server reported. */
static int expect_mn(struct refio_conn *m)
{
	char *line;
	size_t len;
	int ret = refio_line(&m->rd, &line, &len);

	return ret ? ret : strcmp(line, "MN") ? -EPROTO : 0;
}

/* key's value into b's page i after a header announcing len bytes. */
static int take_value(struct refio_conn *m, const struct ref_batch *b, size_t i, long len)
{
	int ret;

	if (len != (long)b->page)
		return -EPROTO;
	ret = refio_value(&m->rd, b->val + i * b->page, b->page);
	if (!ret)
		b->hit[i] = true;
	return ret;
}

/* ------------------------------------------------------------------ meta */

/* One flight of sets closed by "mn": meta "ms ... q" or classic "set ... noreply";
 * either is silent, so "MN" is the whole answer. */
static int silent_sets(struct refio_conn *m, const struct ref_batch *b, bool meta)
{
	int ret = 0;

	refio_req_reset(&m->q);
	for (size_t i = 0; i < b->n && !ret; i++) {
		ret = meta ? refio_req_fmt(&m->q, "ms %s %zu q\r\n", b->key[i], b->page) :
			     refio_req_fmt(&m->q, "set %s 0 0 %zu noreply\r\n", b->key[i], b->page);
		if (!ret)
			ret = refio_req_add(&m->q, b->val + i * b->page, b->page);
		if (!ret)
			ret = refio_req_fmt(&m->q, "\r\n");
	}
	if (!ret)
		ret = refio_req_fmt(&m->q, "mn\r\n");
	if (!ret)
		ret = refio_req_send(m->rd.fd, &m->q);
	return ret ? ret : expect_mn(m);
}

static int meta_set(void *ctx, const struct ref_batch *b)
{
	return silent_sets(ctx, b, true);
}

/* "mg" for every key (with v: values), then "mn"; the answers up to "MN". */
static int meta_get_or_exists(struct refio_conn *m, const struct ref_batch *b, bool values)
{
	int ret = 0;

	refio_req_reset(&m->q);
	for (size_t i = 0; i < b->n && !ret; i++)
		ret = refio_req_fmt(&m->q, "mg %s%s q O%zu\r\n", b->key[i], values ? " v" : "", i);
	if (!ret)
		ret = refio_req_fmt(&m->q, "mn\r\n");
	if (!ret)
		ret = refio_req_send(m->rd.fd, &m->q);
	while (!ret) {
		char *line, *o;
		size_t len, i;
		long vlen = 0;

		ret = refio_line(&m->rd, &line, &len);
		if (ret)
			break;
		if (!strcmp(line, "MN"))
			return 0;
		o = strstr(line, " O");
		if (!o || (strncmp(line, values ? "VA " : "HD", values ? 3 : 2)))
			return -EPROTO;
		i = strtoul(o + 2, NULL, 10);
		if (i >= b->n)
			return -EPROTO;
		if (!values) {
			b->hit[i] = true;
			continue;
		}
		vlen = strtol(line + 3, NULL, 10);
		ret = take_value(m, b, i, vlen);
	}
	return ret;
}

static int meta_get(void *ctx, const struct ref_batch *b)
{
	return meta_get_or_exists(ctx, b, true);
}

static int meta_exists(void *ctx, const struct ref_batch *b)
{
	return meta_get_or_exists(ctx, b, false);
}

const struct ref_client ref_mc_meta = {
	.peer = "memcached", .name = "meta", .open = mc_open, .set = meta_set, .get = meta_get,
	.exists = meta_exists, .close = mc_close,
};

/* ------------------------------------------------------------------ multiget */

static int multi_set(void *ctx, const struct ref_batch *b)
{
	return silent_sets(ctx, b, false);
}

/* "VALUE <key> <flags> <bytes>": the key (NUL-terminated in place) and bytes. */
static int parse_value_line(char *line, char **key, long *bytes)
{
	char *sp, *flags;

	if (strncmp(line, "VALUE ", 6))
		return -EPROTO;
	*key = line + 6;
	sp = strchr(*key, ' ');
	if (!sp)
		return -EPROTO;
	*sp = 0;
	flags = sp + 1;
	sp = strchr(flags, ' ');
	if (!sp)
		return -EPROTO;
	*bytes = strtol(sp + 1, NULL, 10);
	return 0;
}

static int multi_get(void *ctx, const struct ref_batch *b)
{
	struct refio_conn *m = ctx;
	size_t next = 0;
	int ret;

	refio_req_reset(&m->q);
	ret = refio_req_fmt(&m->q, "get");
	for (size_t i = 0; i < b->n && !ret; i++)
		ret = refio_req_fmt(&m->q, " %s", b->key[i]);
	if (!ret)
		ret = refio_req_fmt(&m->q, "\r\n");
	if (!ret)
		ret = refio_req_send(m->rd.fd, &m->q);
	while (!ret) {
		char *line, *key;
		size_t len;
		long vlen;

		ret = refio_line(&m->rd, &line, &len);
		if (ret)
			break;
		if (!strcmp(line, "END"))
			return 0;
		ret = parse_value_line(line, &key, &vlen);
		/* hits come in the order asked, the misses left out */
		while (!ret && next < b->n && strcmp(b->key[next], key))
			next++;
		if (!ret && next == b->n)
			return -EPROTO;
		if (!ret)
			ret = take_value(m, b, next++, vlen);
	}
	return ret;
}

const struct ref_client ref_mc_multiget = {
	.peer = "memcached", .name = "multiget", .open = mc_open, .set = multi_set,
	.get = multi_get, .close = mc_close,
};

/* ------------------------------------------------------------------ naive */

static int naive_set(void *ctx, const struct ref_batch *b)
{
	struct refio_conn *m = ctx;

	for (size_t i = 0; i < b->n; i++) {
		char *line;
		size_t len;
		int ret;

		refio_req_reset(&m->q);
		ret = refio_req_fmt(&m->q, "set %s 0 0 %zu\r\n", b->key[i], b->page);
		if (!ret)
			ret = refio_req_add(&m->q, b->val + i * b->page, b->page);
		if (!ret)
			ret = refio_req_fmt(&m->q, "\r\n");
		if (!ret)
			ret = refio_req_send(m->rd.fd, &m->q);
		if (!ret)
			ret = refio_line(&m->rd, &line, &len);
		if (ret)
			return ret;
		if (strcmp(line, "STORED"))
			return -EPROTO;
	}
	return 0;
}

static int naive_get(void *ctx, const struct ref_batch *b)
{
	struct refio_conn *m = ctx;

	for (size_t i = 0; i < b->n; i++) {
		char *line, *key;
		size_t len;
		long vlen;
		int ret;

		refio_req_reset(&m->q);
		ret = refio_req_fmt(&m->q, "get %s\r\n", b->key[i]);
		if (!ret)
			ret = refio_req_send(m->rd.fd, &m->q);
		if (!ret)
			ret = refio_line(&m->rd, &line, &len);
		if (ret)
			return ret;
		if (!strcmp(line, "END"))
			continue;
		ret = parse_value_line(line, &key, &vlen);
		if (!ret)
			ret = take_value(m, b, i, vlen);
		if (!ret)
			ret = refio_line(&m->rd, &line, &len);
		if (!ret && strcmp(line, "END"))
			ret = -EPROTO;
		if (ret)
			return ret;
	}
	return 0;
}

const struct ref_client ref_mc_naive = {
	.peer = "memcached", .name = "naive", .baseline = true, .open = mc_open,
	.set = naive_set, .get = naive_get, .close = mc_close,
};
