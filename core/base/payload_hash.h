/*
 * payload_hash.h - xxh3_64 of payloads (pages, disk blocks): the checksums slots and
 * the disk tier keep.
 *
 * One hash, computed by whichever of this build's implementations of it runs fastest
 * on this CPU, timed once on first use (as Linux times its xor and RAID-6 routines at
 * boot): libxxhash's runtime dispatch (AVX2 or AVX-512 where the CPU has them),
 * xxh3's inline default (SSE2 on x86-64, NEON on arm64) and its scalar code. xxh3's
 * value does not depend on which one computes it, so the choice changes no checksum,
 * no decision and no simulated result; only the speed. Which is fastest does depend
 * on the CPU: under an emulator (QEMU's TCG, which runs ci/rxe-vm.sh's Soft-RoCE VM)
 * the scalar code beats the vector code, whose instructions it emulates one by one.
 *
 * Not for: keys and other short inputs (keyhash.h inlines xxh3 for those).
 */
#ifndef PC_PAYLOAD_HASH_H
#define PC_PAYLOAD_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t (*xxh3_fn)(const void *p, size_t len, uint64_t seed);

struct xxh3_impl {
	const char *name;	/* "dispatch", "inline", "scalar" */
	xxh3_fn fn;
};

/* xxh3_64 of p[0..len) with seed. Thread-safe; the first call picks. */
uint64_t xxh3_payload(const void *p, size_t len, uint64_t seed);

/* The implementation in use (picking it now if no hash has), and its speed on the
 * probe the pick timed, in GB/s. */
const char *xxh3_payload_impl(double *gbps);

/* The implementations this build has (tests check that they agree). */
size_t xxh3_payload_impls(const struct xxh3_impl **out);

/* The scalar one (payload_hash_scalar.c: its own unit, built without vector code). */
uint64_t xxh3_scalar(const void *p, size_t len, uint64_t seed);

#endif
