/*
 * bench_ref.h - the references pcbench measures next to the store, in the same
 * process and placement: the ceiling (raw TCP transfers between the same
 * endpoints, plain, tuned and busy-polled, as a stream and batch by batch:
 * bench_ref_stream.c) and clients of memcached and
 * Redis, each the best of its kind we know how to write (pipelined meta commands,
 * multi-key gets, raw RESP), the standard C libraries (libmemcached, hiredis), and
 * the obvious one-request-at-a-time client each of them must beat.
 *
 * Every client sets, gets and checks the same pages as pcbench (pcbench_page.h):
 * a value that comes back wrong is counted, never timed as a hit.
 *
 * Not for: the store's own numbers (pcbench.c).
 */
#ifndef PC_BENCH_REF_H
#define PC_BENCH_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ the ceiling */

enum ref_stream_kind {
	REF_STREAM_PLAIN,	/* batch-sized writes and reads, kernel defaults */
	REF_STREAM_TUNED,	/* 1 MiB writes, TCP_NODELAY, SO_SNDBUF/SO_RCVBUF forced */
	REF_STREAM_BUSY,	/* tuned, and the reader spins on non-blocking reads
				 * (and SO_BUSY_POLL) instead of sleeping */
	REF_STREAM_NR
};

const char *ref_stream_name(enum ref_stream_kind k);

/* Stream total bytes from a forked sender process over one TCP connection to host;
 * the sender walks a span-byte buffer, as the store's server walks its slots, so
 * the source is not cache-hot. GB/s, or a negative errno. cpu >= 0 pins the
 * sender there (the caller pins itself). */
double ref_stream(enum ref_stream_kind k, const char *host, uint64_t total, size_t chunk,
		  size_t span, int cpu);

/* The same bytes one batch in flight: the receiver asks for each chunk-byte batch
 * and receives it before it asks for the next, as a client's batch get does. page
 * 0: the sender walks its buffer in order; else it sends each batch as page-byte
 * pieces from random places of it in one sendmsg, as a store's server sends the
 * pages of a batch. GB/s, or a negative errno. */
double ref_round_trips(enum ref_stream_kind k, const char *host, uint64_t total, size_t chunk,
		       size_t page, size_t span, int cpu);

/* ------------------------------------------------------------------ key-value peers */

/* What every client runs: nkeys pages of page bytes under "<prefix>-<i>", batch
 * keys a call; one untimed set pass puts them in place, then iters timed passes of
 * set and of get, and ref_exists_passes() of exists. */
struct ref_shape {
	size_t nkeys, page, batch;
	int iters;
	const char *prefix;
};

/* Exists moves no payload, so a pass over the keys of a few large pages is short
 * enough for one scheduling hiccup to decide. Its passes are iters, or more, until
 * they make REF_EXISTS_BATCHES batches; the store's and every client's the same. */
#define REF_EXISTS_BATCHES 512

static inline int ref_exists_passes(size_t nkeys, size_t batch, int iters)
{
	size_t nb = batch ? (nkeys + batch - 1) / batch : 1;
	size_t need = nb ? (REF_EXISTS_BATCHES + nb - 1) / nb : 1;

	return iters > 0 && (size_t)iters >= need ? iters : (int)need;
}

struct ref_op_result {
	bool run;
	double secs;			/* timed batches only */
	uint64_t keys, hits, bytes;	/* bytes: set offered, get hit */
	double p50_us, p99_us;		/* per batch */
};

struct ref_result {
	struct ref_op_result set, get, exists;
	uint64_t bad;			/* values read back wrong */
};

struct ref_client;

/* The clients, in the order they are printed; the list ends with NULL. */
extern const struct ref_client *const ref_clients[];

const char *ref_client_peer(const struct ref_client *c);	/* "memcached", "redis" */
const char *ref_client_name(const struct ref_client *c);
/* The one-request-at-a-time client the others of its peer must beat. */
bool ref_client_is_baseline(const struct ref_client *c);

/* Run the shape against the peer at host:port. 0, or -errno (server not reachable,
 * a protocol error), with a line on stderr naming the client and the place. */
int ref_run(const struct ref_client *c, const char *host, int port, const struct ref_shape *s,
	    struct ref_result *out);

/* GB/s of an op's bytes (set, get), or keys/s (exists). */
double ref_gbps(const struct ref_op_result *r);
double ref_keys_per_s(const struct ref_op_result *r);

/* Percentile p (0..1) of n samples (sorts them). */
double ref_percentile(double *v, size_t n, double p);

#endif
