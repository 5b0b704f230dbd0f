/*
 * bench_ref.h - reference measurements pcbench runs next to the store, in the same
 * process and placement: a raw single-connection TCP stream, and (when asked)
 * Redis pipelined MSET/MGET and memcached multi-get over loopback.
 *
 * Not for: correctness; these only time byte movement of comparable size.
 */
#ifndef PC_BENCH_REF_H
#define PC_BENCH_REF_H

#include <stddef.h>
#include <stdint.h>

/* Stream total bytes from a forked sender process over one TCP connection on host,
 * received chunk bytes at a time. The sender walks a span-byte buffer, as the
 * store's server walks its slots, so the reference is not flattered by a
 * cache-hot source. GB/s, or a negative errno. cpu >= 0 pins the sender there. */
double ref_raw_tcp(const char *host, uint64_t total, size_t chunk, size_t span, int cpu);

struct ref_result {
	double set_gbps, get_gbps;	/* payload GB/s */
	double get_p50_us, get_p99_us;	/* per batch */
	uint64_t get_hits, get_pages;
};

/* Redis: pipelined MSET then MGET of nkeys values of page bytes, batch per call.
 * 0 or -errno (server not reachable, protocol error). */
int ref_redis(const char *host, int port, size_t page, size_t batch, size_t nkeys,
	      struct ref_result *out);

/* memcached: text protocol set (noreply) then multi-key get, the same shape. */
int ref_memcached(const char *host, int port, size_t page, size_t batch, size_t nkeys,
		  struct ref_result *out);

/* Percentile p (0..1) of n samples (sorts them). */
double ref_percentile(double *v, size_t n, double p);

#endif
