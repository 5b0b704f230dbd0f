/*
 * pcbench_page.c - pcbench's pages: a linear congruential stream seeded by the
 * key's hash, so that writing and checking need nothing but the key; and their
 * buffers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "pcbench_page.h"

void *pcbench_pages_alloc(size_t n, size_t page)
{
	size_t bytes = n * page;

	if (page && bytes / page != n)
		return NULL;
	return aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
}

void pcbench_fill(uint8_t *p, size_t len, const char *key)
{
	uint64_t x = XXH3_64bits(key, strlen(key));

	for (size_t i = 0; i + 8 <= len; i += 8) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		memcpy(p + i, &x, 8);
	}
	for (size_t i = len & ~(size_t)7; i < len; i++)
		p[i] = (uint8_t)i;
}

bool pcbench_page_ok(const uint8_t *data, size_t len, size_t page, const char *key,
		     uint8_t *scratch)
{
	pcbench_fill(scratch, page, key);
	return len == page && !memcmp(scratch, data, page);
}

void pcbench_print_verify(unsigned long long bad, unsigned long long checked)
{
	if (bad)
		printf("verify: FAIL (%llu pages differ)\n", bad);
	else if (checked)
		printf("verify: all %llu pages read back byte-identical\n", checked);
	else
		printf("verify: no page came back to compare\n");
}
