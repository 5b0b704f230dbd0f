/*
 * bench_ref_int.h - what a reference client implements (bench_ref_memcached.c,
 * bench_ref_redis.c, bench_ref_libs.c) for the driver in bench_ref.c.
 *
 * Not for: pcbench itself, which sees bench_ref.h only.
 */
#ifndef PC_BENCH_REF_INT_H
#define PC_BENCH_REF_INT_H

#include "bench_ref.h"

/* One call's keys. set sends val[i * page ..] under key[i]; get lands each hit's
 * value there and sets hit[i] (a value of the wrong length is a protocol error);
 * exists sets hit[i] alone. */
struct ref_batch {
	size_t n, page;
	char *const *key;
	const size_t *klen;
	uint8_t *val;
	bool *hit;
};

struct ref_client {
	const char *peer, *name;
	bool baseline;
	/* Connect; *ctx is the client's. A raw client polls for answers spin_us before
	 * it sleeps (bench_ref_io.h), as the store's client does; the libraries wait
	 * their own way. 0 or -errno. */
	int (*open)(void **ctx, const char *host, int port, const struct ref_shape *s,
		    unsigned spin_us);
	int (*set)(void *ctx, const struct ref_batch *b);
	int (*get)(void *ctx, const struct ref_batch *b);
	int (*exists)(void *ctx, const struct ref_batch *b);	/* NULL: not measured */
	void (*close)(void *ctx);
};

/* How long every client but the obvious one polls: the store's default
 * store.tcp_poll_us. */
#define REF_SPIN_US 50

extern const struct ref_client ref_mc_meta, ref_mc_multiget, ref_mc_naive;
extern const struct ref_client ref_redis_resp, ref_redis_pipeline, ref_redis_naive;
extern const struct ref_client ref_libmemcached, ref_hiredis;

#endif
