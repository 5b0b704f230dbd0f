/*
 * bench_ref_redis.c - Redis clients for pcbench, raw RESP over one connection:
 *
 *   resp      one MSET a batch, one MGET a batch.
 *   pipeline  a batch is one flight of SET (GET, EXISTS) commands, one a key,
 *             and then their answers.
 *   naive     one SET, GET or EXISTS at a time, each waiting for its answer: the
 *             obvious client, which the others must beat.
 *
 * Values land straight in the caller's pages (bench_ref_io.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_ref_int.h"
#include "bench_ref_io.h"

static int rc_open(void **ctx, const char *host, int port, const struct ref_shape *s,
		   unsigned spin_us)
{
	return refio_conn_open((struct refio_conn **)ctx, host, port, 4 * s->batch + 4, spin_us);
}

static void rc_close(void *ctx)
{
	refio_conn_close(ctx);
}

/* A key argument ("$<len>\r\n<key>\r\n"). */
static int arg_key(struct refio_conn *r, const struct ref_batch *b, size_t i)
{
	return refio_req_fmt(&r->q, "$%zu\r\n%s\r\n", b->klen[i], b->key[i]);
}

/* Page i as an argument: its bytes are sent from the page itself. */
static int arg_page(struct refio_conn *r, const struct ref_batch *b, size_t i)
{
	int ret = refio_req_fmt(&r->q, "$%zu\r\n", b->page);

	if (!ret)
		ret = refio_req_add(&r->q, b->val + i * b->page, b->page);
	return ret ? ret : refio_req_fmt(&r->q, "\r\n");
}

static int expect_line(struct refio_conn *r, const char *want)
{
	char *line;
	size_t len;
	int ret = refio_line(&r->rd, &line, &len);

	return ret ? ret : strcmp(line, want) ? -EPROTO : 0;
}

/* A bulk string answer for key i: its value into page i, or nil (a miss). */
static int take_bulk(struct refio_conn *r, const struct ref_batch *b, size_t i)
{
	char *line;
	size_t len;
	int ret = refio_line(&r->rd, &line, &len);

	if (ret)
		return ret;
	if (!strcmp(line, "$-1"))
		return 0;
	if (line[0] != '$' || strtol(line + 1, NULL, 10) != (long)b->page)
		return -EPROTO;
	ret = refio_value(&r->rd, b->val + i * b->page, b->page);
	if (!ret)
		b->hit[i] = true;
	return ret;
}

/* An integer answer for key i: ":1" a hit, ":0" a miss. */
static int take_int(struct refio_conn *r, const struct ref_batch *b, size_t i)
{
	char *line;
	size_t len;
	int ret = refio_line(&r->rd, &line, &len);

	if (ret)
		return ret;
	if (line[0] != ':')
		return -EPROTO;
	b->hit[i] = strtol(line + 1, NULL, 10) > 0;
	return 0;
}

/* ------------------------------------------------------------------ resp */

static int resp_set(void *ctx, const struct ref_batch *b)
{
	struct refio_conn *r = ctx;
	int ret;

	refio_req_reset(&r->q);
	ret = refio_req_fmt(&r->q, "*%zu\r\n$4\r\nMSET\r\n", 2 * b->n + 1);
	for (size_t i = 0; i < b->n && !ret; i++) {
		ret = arg_key(r, b, i);
		if (!ret)
			ret = arg_page(r, b, i);
	}
	if (!ret)
		ret = refio_req_send(r->rd.fd, &r->q);
	return ret ? ret : expect_line(r, "+OK");
}

static int resp_get(void *ctx, const struct ref_batch *b)
{
	struct refio_conn *r = ctx;
	char want[32];
	int ret;

	refio_req_reset(&r->q);
	ret = refio_req_fmt(&r->q, "*%zu\r\n$4\r\nMGET\r\n", b->n + 1);
	for (size_t i = 0; i < b->n && !ret; i++)
		ret = arg_key(r, b, i);
	if (!ret)
		ret = refio_req_send(r->rd.fd, &r->q);
	snprintf(want, sizeof(want), "*%zu", b->n);
	if (!ret)
		ret = expect_line(r, want);
	for (size_t i = 0; i < b->n && !ret; i++)
		ret = take_bulk(r, b, i);
	return ret;
}

const struct ref_client ref_redis_resp = {
	.peer = "redis", .name = "resp", .open = rc_open, .set = resp_set, .get = resp_get,
	.close = rc_close,
};

/* ------------------------------------------------------------------ pipeline */

enum { SET, GET, EXISTS };

/* The command for key i (SET with its page). */
static int command(struct refio_conn *r, const struct ref_batch *b, size_t i, int cmd)
{
	int ret = refio_req_fmt(&r->q, cmd == SET ? "*3\r\n$3\r\nSET\r\n" :
				       cmd == GET ? "*2\r\n$3\r\nGET\r\n" :
						    "*2\r\n$6\r\nEXISTS\r\n");

	if (!ret)
		ret = arg_key(r, b, i);
	if (!ret && cmd == SET)
		ret = arg_page(r, b, i);
	return ret;
}

static int answer(struct refio_conn *r, const struct ref_batch *b, size_t i, int cmd)
{
	return cmd == SET ? expect_line(r, "+OK") : cmd == GET ? take_bulk(r, b, i) : take_int(r, b, i);
}

static int pipelined(struct refio_conn *r, const struct ref_batch *b, int cmd)
{
	int ret = 0;

	refio_req_reset(&r->q);
	for (size_t i = 0; i < b->n && !ret; i++)
		ret = command(r, b, i, cmd);
	if (!ret)
		ret = refio_req_send(r->rd.fd, &r->q);
	for (size_t i = 0; i < b->n && !ret; i++)
		ret = answer(r, b, i, cmd);
	return ret;
}

static int pipe_set(void *ctx, const struct ref_batch *b) { return pipelined(ctx, b, SET); }
static int pipe_get(void *ctx, const struct ref_batch *b) { return pipelined(ctx, b, GET); }
static int pipe_exists(void *ctx, const struct ref_batch *b) { return pipelined(ctx, b, EXISTS); }

const struct ref_client ref_redis_pipeline = {
	.peer = "redis", .name = "pipeline", .open = rc_open, .set = pipe_set, .get = pipe_get,
	.exists = pipe_exists, .close = rc_close,
};

/* ------------------------------------------------------------------ naive */

static int one_at_a_time(struct refio_conn *r, const struct ref_batch *b, int cmd)
{
	int ret = 0;

	for (size_t i = 0; i < b->n && !ret; i++) {
		refio_req_reset(&r->q);
		ret = command(r, b, i, cmd);
		if (!ret)
			ret = refio_req_send(r->rd.fd, &r->q);
		if (!ret)
			ret = answer(r, b, i, cmd);
	}
	return ret;
}

static int naive_set(void *ctx, const struct ref_batch *b) { return one_at_a_time(ctx, b, SET); }
static int naive_get(void *ctx, const struct ref_batch *b) { return one_at_a_time(ctx, b, GET); }
static int naive_exists(void *ctx, const struct ref_batch *b) { return one_at_a_time(ctx, b, EXISTS); }

const struct ref_client ref_redis_naive = {
	.peer = "redis", .name = "naive", .baseline = true, .open = rc_open, .set = naive_set,
	.get = naive_get, .exists = naive_exists, .close = rc_close,
};
