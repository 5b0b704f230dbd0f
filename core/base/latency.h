/*
 * latency.h - fixed log-scale latency histograms: bucket k holds durations in
 * (2^(k-1), 2^k] microseconds (bucket 0: up to 1 us), the last one everything over
 * 2^(LAT_BUCKETS-2) us. Recording is two relaxed atomic adds and no lock, so any
 * thread records into a shared histogram on the batch path; a reader sums the
 * buckets into the count, so a snapshot's buckets always add up to its count.
 *
 * Not for: rendering (expose.c) or percentiles (the scraper computes them).
 */
#ifndef PC_LATENCY_H
#define PC_LATENCY_H

#include <stdbool.h>
#include <stdint.h>

#define LAT_BUCKETS 26		/* 1 us .. 2^24 us (16.8 s), then +Inf */

struct latency_hist {
	uint64_t bucket[LAT_BUCKETS];	/* not cumulative */
	uint64_t sum_ns;
};

/* The bucket of a duration of ns nanoseconds. */
static inline unsigned latency_bucket(uint64_t ns)
{
	uint64_t us = (ns + 999) / 1000;	/* rounded up: bounds are inclusive */
	unsigned k = us <= 1 ? 0 : 64 - (unsigned)__builtin_clzll(us - 1);

	return k < LAT_BUCKETS - 1 ? k : LAT_BUCKETS - 1;
}

/* The upper bound of bucket k in seconds; the last one is +Inf. */
static inline double latency_bound_s(unsigned k)
{
	return (double)(1ULL << k) * 1e-6;
}

/* Count a duration; serial: every recorder runs on one thread (plain adds). */
static inline void latency_record(struct latency_hist *h, uint64_t ns, bool serial)
{
	if (serial) {
		h->bucket[latency_bucket(ns)]++;
		h->sum_ns += ns;
		return;
	}
	__atomic_fetch_add(&h->bucket[latency_bucket(ns)], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->sum_ns, ns, __ATOMIC_RELAXED);
}

/* A snapshot: the buckets, and the count as their sum. */
static inline uint64_t latency_snapshot(const struct latency_hist *h, struct latency_hist *out)
{
	uint64_t n = 0;

	for (unsigned k = 0; k < LAT_BUCKETS; k++)
		n += out->bucket[k] = __atomic_load_n(&h->bucket[k], __ATOMIC_RELAXED);
	out->sum_ns = __atomic_load_n(&h->sum_ns, __ATOMIC_RELAXED);
	return n;
}

#endif
