/*
 * sized.h - filling a public struct that starts with its own size (struct
 * pc_metrics, struct pc_tier_metrics): the caller says how many bytes it holds, the
 * library fills that much, so either side may be built against a newer header.
 */
#ifndef PC_SIZED_H
#define PC_SIZED_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

/* The size field and its padding: uint32_t size, uint32_t reserved. */
#define SIZED_HEAD 8u

/* Copy src (full bytes, this library's struct) into dst, whose first field says how
 * many bytes it holds; bytes past what the library knows are zeroed. 0, or -EINVAL
 * when dst cannot hold even its size field. */
static inline int sized_fill(void *dst, const void *src, size_t full)
{
	uint32_t have;

	if (!dst)
		return -EINVAL;
	memcpy(&have, dst, sizeof(have));
	if (have < SIZED_HEAD)
		return -EINVAL;
	memcpy((uint8_t *)dst + SIZED_HEAD, (const uint8_t *)src + SIZED_HEAD,
	       (have < full ? have : full) - SIZED_HEAD);
	if (have > full)
		memset((uint8_t *)dst + full, 0, have - full);
	return 0;
}

#endif
