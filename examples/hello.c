/*
 * hello.c - a peercache client: writes N pages into a running cluster, reads them back
 * and compares every byte, then asks for a page nobody wrote (a clean miss).
 *
 *   hello TOPOLOGY [PAGES]
 *
 * Build it against the installed library:
 *   cc -o hello hello.c $(pkg-config --cflags --libs peercache)
 *   cc -static -o hello hello.c $(pkg-config --static --cflags --libs peercache)
 * or with CMake (examples/CMakeLists.txt): find_package(peercache), peercache::peercache.
 * Exit code 0 when every page came back byte-identical.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/peercache.h>

#define PAGE 12288

static void fill(unsigned char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7);
}

int main(int argc, char **argv)
{
	char err[PC_ERR_MAX], keys[64][32];
	struct pc_store_opts o = { .size = sizeof(o), .err = err, .errlen = sizeof(err) };
	struct pc_page pg[64];
	static unsigned char buf[64][PAGE], want[PAGE];
	struct pc_store *s;
	int n = argc > 2 ? atoi(argv[2]) : 64, hits, bad = 0;

	if (argc < 2 || n < 1 || n > 64) {
		fprintf(stderr, "usage: hello TOPOLOGY [PAGES (1-64, default 64)]\n");
		return 2;
	}
	o.topology = argv[1];		/* .node = NULL: a client that owns no slots */
	if (pc_store_open(&o, &s)) {
		fprintf(stderr, "hello: %s\n", err);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "hello-page-%d", i);
		fill(buf[i], PAGE, (unsigned)i);
		pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]), .data = buf[i],
					  .len = PAGE };
	}
	printf("hello: peercache %s, stored %d of %d pages\n", pc_version(), pc_batch_set(s, pg, (size_t)n), n);

	memset(buf, 0, sizeof(buf));
	for (int i = 0; i < n; i++)
		pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]), .data = buf[i],
					  .cap = PAGE, .len = PAGE };
	hits = pc_batch_get(s, pg, (size_t)n);
	for (int i = 0; i < n; i++) {
		fill(want, PAGE, (unsigned)i);
		bad += !pg[i].status && memcmp(want, buf[i], PAGE);
	}
	pg[0] = (struct pc_page){ .key = "never-written", .key_len = 13, .data = buf[0], .cap = PAGE };
	pc_batch_get(s, pg, 1);
	printf("hello: read %d hits, %d not byte-identical; an unwritten key: %s\n", hits, bad,
	       pg[0].status == -ENOENT ? "clean miss" : "NOT a clean miss");
	pc_store_close(s);
	return hits == n && !bad && pg[0].status == -ENOENT ? 0 : 1;
}
