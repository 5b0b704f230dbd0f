/*
 * rng.h - xoshiro256** seeded through splitmix64: the random stream of the
 * simulator's engine, of the workload generators and of pcbench's key draws.
 * Small, fast and reproducible from one 64-bit seed on every platform.
 */
#ifndef PC_WORKLOAD_RNG_H
#define PC_WORKLOAD_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s[4];
};

static inline uint64_t rng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++) {	/* splitmix64 spreads the seed over the state */
		uint64_t z = (seed += 0x9E3779B97F4A7C15ULL);

		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
		r->s[i] = z ^ (z >> 31);
	}
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, res = rng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rng_rotl(s[3], 45);
	return res;
}

/* Uniform in [0, 1), 53 random bits. */
static inline double rng_u01(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

#endif
