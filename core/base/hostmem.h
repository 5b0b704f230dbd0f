/*
 * hostmem.h - the memory peers read and write: anonymous mappings, zero-filled, on
 * huge pages where the kernel offers them (readers and writers land on random blocks
 * and each small page is a TLB miss: headers alone, payload-free, need them as much
 * as whole slots), populated up front when asked, as pinning for RDMA would, because
 * faulting pages in on first write made early writes several times slower.
 *
 * Not for: registration with a fabric (the owner does that).
 */
#ifndef PC_HOSTMEM_H
#define PC_HOSTMEM_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#define HOSTMEM_HUGE (2u << 20)	/* x86-64's huge page */

static inline int hostmem_map(uint8_t **out, size_t bytes, bool populate)
{
	uint8_t *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return -ENOMEM;
	/* An unpopulated mapping smaller than a huge page gains nothing from one but
	 * 2 MiB resident where it touched a few small pages (the kernel merges
	 * neighbouring mappings: a simulator's hundreds of small slot regions). */
	if (populate || bytes >= HOSTMEM_HUGE)
		madvise(m, bytes, MADV_HUGEPAGE);
	if (populate) {
		for (size_t off = 0; off < bytes; off += 4096)
			m[off] = 0;
	}
	*out = m;
	return 0;
}

static inline void hostmem_unmap(uint8_t *m, size_t bytes)
{
	if (m)
		munmap(m, bytes);
}

#endif
