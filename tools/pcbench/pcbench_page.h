/*
 * pcbench_page.h - the page pcbench writes under a key: its bytes follow from the
 * key alone, so any reader, in any process, can check what came back; the line
 * that reports the check; and the buffers every client's pages land in.
 */
#ifndef PC_PCBENCH_PAGE_H
#define PC_PCBENCH_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for n pages of page bytes side by side, starting at a 4 KiB boundary, as a
 * serving engine's KV pool does (so each page is as aligned as its size allows);
 * free() frees it. The kernel's receive into a buffer off a cache line leaves the
 * bytes colder for what reads them next (the store's checksum), so a buffer from
 * plain malloc, 16 bytes off, would charge the store for an allocator's choice. */
void *pcbench_pages_alloc(size_t n, size_t page);

/* Fill p[0..len) with the page of key. */
void pcbench_fill(uint8_t *p, size_t len, const char *key);

/* Whether data, len bytes long, is the page-byte page of key; scratch holds page
 * bytes and is overwritten. */
bool pcbench_page_ok(const uint8_t *data, size_t len, size_t page, const char *key,
		     uint8_t *scratch);

/* The verify line: how many of the pages compared differ, or that all checked
 * matched, or that none came back to compare. */
void pcbench_print_verify(unsigned long long bad, unsigned long long checked);

#endif
