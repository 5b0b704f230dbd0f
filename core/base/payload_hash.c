/*
 * payload_hash.c - the pick of payload_hash.h: each implementation hashes one probe
 * a few times, the fastest (best of its runs) takes every later call. One that
 * disagrees with the scalar code on the probe is never taken.
 *
 * The probe is timed with the host's clock, not the env's: it measures this CPU,
 * which a simulated clock cannot (no simulated time passes while code runs), and
 * the pick changes no value, so a simulation's results do not depend on it. Log
 * timestamps (log.c) are the only other real clock in core/.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "pc_build.h"
#if PC_HAVE_XXH_DISPATCH
#define XXH_DISPATCH_DISABLE_REPLACE
#include <xxh_x86dispatch.h>
/* Weak: libxxhash.so has the dispatcher, Debian's libxxhash.a does not, so a program
 * linked statically against libxxhash.a gets a null address here (and does without
 * it) instead of failing to link. */
#pragma weak XXH3_64bits_withSeed_dispatch
#endif
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/log.h"
#include "base/payload_hash.h"

#define PROBE_BYTES (64u << 10)	/* a page's worth: past the short-input paths */
#define PROBE_RUNS 5

#if PC_HAVE_XXH_DISPATCH
static uint64_t by_dispatch(const void *p, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed_dispatch(p, len, seed);
}
#endif

static uint64_t by_inline(const void *p, size_t len, uint64_t seed)
{
	return XXH3_64bits_withSeed(p, len, seed);
}

static struct xxh3_impl impls[3];
static size_t nr_impls;
static pthread_once_t impls_once = PTHREAD_ONCE_INIT;

static void list_impls(void)
{
#if PC_HAVE_XXH_DISPATCH
	/* weak (keyhash.h): absent when linked against a libxxhash without it */
	if (XXH3_64bits_withSeed_dispatch)
		impls[nr_impls++] = (struct xxh3_impl){ "dispatch", by_dispatch };
#endif
	impls[nr_impls++] = (struct xxh3_impl){ "inline", by_inline };
	impls[nr_impls++] = (struct xxh3_impl){ "scalar", xxh3_scalar };
}

size_t xxh3_payload_impls(const struct xxh3_impl **out)
{
	pthread_once(&impls_once, list_impls);
	*out = impls;
	return nr_impls;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static xxh3_fn chosen = xxh3_scalar;
static const char *chosen_name = "scalar";
static double chosen_gbps;
static pthread_once_t pick_once = PTHREAD_ONCE_INIT;

/* Where the timed runs' sums go, so that none is left out as unused. */
static volatile uint64_t sink;

static void pick(void)
{
	const struct xxh3_impl *v;
	size_t n = xxh3_payload_impls(&v);
	uint8_t *probe = malloc(PROBE_BYTES);
	uint64_t x = 0x9E3779B97F4A7C15ULL, want;

	if (!probe)
		return;		/* scalar: correct everywhere */
	for (size_t i = 0; i < PROBE_BYTES; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		probe[i] = (uint8_t)x;
	}
	want = xxh3_scalar(probe, PROBE_BYTES, 1);
	for (size_t k = 0; k < n; k++) {
		double best = 0;

		if (v[k].fn(probe, PROBE_BYTES, 1) != want) {	/* and a first run, untimed */
			pc_warn("checksums: xxh3 by %s disagrees with its scalar code; not used",
				v[k].name);
			continue;
		}
		for (int r = 0; r < PROBE_RUNS; r++) {
			double t0 = now_s(), dt;

			sink = v[k].fn(probe, PROBE_BYTES, (uint64_t)r);
			dt = now_s() - t0;
			if (dt > 0 && (best == 0 || dt < best))
				best = dt;
		}
		if (best > 0 && PROBE_BYTES / best / 1e9 > chosen_gbps) {
			chosen_gbps = PROBE_BYTES / best / 1e9;
			chosen = v[k].fn;
			chosen_name = v[k].name;
		}
	}
	free(probe);
	pc_dbg("checksums: xxh3 by %s, %.2f GB/s", chosen_name, chosen_gbps);
}

uint64_t xxh3_payload(const void *p, size_t len, uint64_t seed)
{
	pthread_once(&pick_once, pick);
	return chosen(p, len, seed);
}

const char *xxh3_payload_impl(double *gbps)
{
	pthread_once(&pick_once, pick);
	if (gbps)
		*gbps = chosen_gbps;
	return chosen_name;
}
