/*
 * bench_ref_libs.c - the standard C client libraries as pcbench references, used
 * the way their documentation shows:
 *
 *   libmemcached  memcached_set a key at a time; memcached_mget of a batch, then
 *                 memcached_fetch_result until it runs dry.
 *   hiredis       redisAppendCommand for every key of a batch (SET, GET, EXISTS),
 *                 then redisGetReply for each: one pipelined flight.
 *
 * Both hand values over in their own buffers; the copy into the caller's page is
 * what their APIs cost.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench_ref_int.h"

#ifdef PC_HAVE_LIBMEMCACHED
#include <libmemcached/memcached.h>

static int lm_open(void **ctx, const char *host, int port, const struct ref_shape *s,
		   unsigned spin_us)
{
	memcached_st *mc = memcached_create(NULL);

	(void)s;
	(void)spin_us;
	if (!mc)
		return -ENOMEM;
	if (memcached_server_add(mc, host, (in_port_t)port) != MEMCACHED_SUCCESS) {
		memcached_free(mc);
		return -EHOSTUNREACH;
	}
	memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
	*ctx = mc;
	return 0;
}

static void lm_close(void *ctx)
{
	memcached_free(ctx);
}

static int lm_set(void *ctx, const struct ref_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (memcached_set(ctx, b->key[i], b->klen[i], (const char *)b->val + i * b->page,
				  b->page, 0, 0) != MEMCACHED_SUCCESS)
			return -EIO;
	return 0;
}

static int lm_get(void *ctx, const struct ref_batch *b)
{
	memcached_st *mc = ctx;
	memcached_result_st res, *r;
	memcached_return_t rc;
	size_t next = 0;

	if (memcached_mget(mc, (const char *const *)b->key, b->klen, b->n) != MEMCACHED_SUCCESS)
		return -EIO;
	if (!memcached_result_create(mc, &res))
		return -ENOMEM;
	while ((r = memcached_fetch_result(mc, &res, &rc))) {
		const char *key = memcached_result_key_value(r);
		size_t kl = memcached_result_key_length(r);

		/* hits come in the order asked, the misses left out */
		while (next < b->n && (b->klen[next] != kl || memcmp(b->key[next], key, kl)))
			next++;
		if (next == b->n || memcached_result_length(r) != b->page) {
			memcached_result_free(&res);
			return -EPROTO;
		}
		memcpy(b->val + next * b->page, memcached_result_value(r), b->page);
		b->hit[next++] = true;
	}
	memcached_result_free(&res);
	return rc == MEMCACHED_END || rc == MEMCACHED_SUCCESS || rc == MEMCACHED_NOTFOUND ? 0 : -EIO;
}

const struct ref_client ref_libmemcached = {
	.peer = "memcached", .name = "libmemcached", .open = lm_open, .set = lm_set,
	.get = lm_get, .close = lm_close,
};
#endif

#ifdef PC_HAVE_HIREDIS
#include <hiredis/hiredis.h>

static int hr_open(void **ctx, const char *host, int port, const struct ref_shape *s,
		   unsigned spin_us)
{
	redisContext *c = redisConnect(host, port);

	(void)s;
	(void)spin_us;
	if (!c)
		return -ENOMEM;
	if (c->err) {
		redisFree(c);
		return -EHOSTUNREACH;
	}
	*ctx = c;
	return 0;
}

static void hr_close(void *ctx)
{
	redisFree(ctx);
}

enum { SET, GET, EXISTS };

static int hr_batch(redisContext *c, const struct ref_batch *b, int cmd)
{
	int ret = 0;

	for (size_t i = 0; i < b->n; i++) {
		int r = cmd == SET ? redisAppendCommand(c, "SET %b %b", b->key[i], b->klen[i],
							b->val + i * b->page, b->page) :
			cmd == GET ? redisAppendCommand(c, "GET %b", b->key[i], b->klen[i]) :
				     redisAppendCommand(c, "EXISTS %b", b->key[i], b->klen[i]);

		if (r != REDIS_OK)
			return -ENOMEM;
	}
	/* every reply is taken, even after an error, so the connection stays in step */
	for (size_t i = 0; i < b->n; i++) {
		redisReply *r = NULL;

		if (redisGetReply(c, (void **)&r) != REDIS_OK || !r)
			return -EIO;
		if (cmd == SET && r->type != REDIS_REPLY_STATUS)
			ret = -EPROTO;
		else if (cmd == EXISTS && r->type == REDIS_REPLY_INTEGER)
			b->hit[i] = r->integer > 0;
		else if (cmd == GET && r->type == REDIS_REPLY_STRING && (size_t)r->len == b->page) {
			memcpy(b->val + i * b->page, r->str, b->page);
			b->hit[i] = true;
		} else if (cmd != SET && !(cmd == GET && r->type == REDIS_REPLY_NIL))
			ret = -EPROTO;
		freeReplyObject(r);
	}
	return ret;
}

static int hr_set(void *ctx, const struct ref_batch *b) { return hr_batch(ctx, b, SET); }
static int hr_get(void *ctx, const struct ref_batch *b) { return hr_batch(ctx, b, GET); }
static int hr_exists(void *ctx, const struct ref_batch *b) { return hr_batch(ctx, b, EXISTS); }

const struct ref_client ref_hiredis = {
	.peer = "redis", .name = "hiredis", .open = hr_open, .set = hr_set, .get = hr_get,
	.exists = hr_exists, .close = hr_close,
};
#endif
