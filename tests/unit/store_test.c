/*
 * store_test.c - the store facade: clients and nodes, open errors, many application
 * threads on one store (through ops and with peers mapped).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/peercache.h>
#include <pthread.h>

#include "builtin.h"
#include "slotmap_fixture.h"
#include "store.h"
#include "testutil.h"

/* Many application threads on one store: every page a get returns is the one its
 * key was written with. A page may be lost (a cache may lose pages): two remote
 * writers that pick the same free way of a bucket at once overwrite each other (the
 * seed's race, closed by slot_cas_claim), and a full bucket evicts its oldest page.
 * Both are rare here: a few pages in a thousand at most. */
struct thread_counts {
	int bad, lost;
};

static void *threads_body(void *p)
{
	struct pc_store *s = ((void **)p)[0];
	int id = (int)(intptr_t)((void **)p)[1];
	struct thread_counts *n = calloc(1, sizeof(*n));
	struct batch *b = batch_new(32, 4096);

	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 32; i++)
			sprintf(b->keys[i], "t%d-%d-%d", id, round, i);
		batch_for_set(b, (uint32_t)round);
		n->lost += 32 - pc_batch_set(s, b->pg, 32);
		batch_for_get(b, 4096);
		pc_batch_get(s, b->pg, 32);
		for (int i = 0; i < 32; i++) {
			if (b->pg[i].status)
				n->lost++;
			else
				n->bad += !pc_test_page_ok(b->buf + i * 4096, 4096, b->keys[i], (uint32_t)round);
		}
	}
	batch_free(b);
	return n;
}

static void test_threads(void)
{
	struct cluster *C = up(3, "slot_size_classes: [4KiB], global_segment_size: 64MiB");
	pthread_t t[4];
	void *args[4][2];
	int bad = 0, lost = 0;

	for (int i = 0; i < 4; i++) {
		args[i][0] = C->s[i % 2];
		args[i][1] = (void *)(intptr_t)i;
		pthread_create(&t[i], NULL, threads_body, args[i]);
	}
	for (int i = 0; i < 4; i++) {
		struct thread_counts *r;

		pthread_join(t[i], (void **)&r);
		bad += r->bad;
		lost += r->lost;
		free(r);
	}
	printf("\n  4 threads x 640 pages: %d wrong pages, %d lost", bad, lost);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(lost <= 2560 / 200);
	down(C);
}

static void test_client_and_open_errors(void)
{
	struct cluster *C = up(2, "slot_size_classes: [4KiB], global_segment_size: 1MiB");
	struct pc_store *cl = open_node(C, NULL, NULL), *s = NULL;
	uint8_t page[100], out[100];
	struct pc_page p = { .key = "c", .key_len = 1, .data = page, .len = 100 };
	char err[PC_ERR_MAX];
	struct pc_store_opts o = { .size = sizeof(o), .topo = C->topo, .node = "n9",
				   .fabric = "inproc", .err = err, .errlen = sizeof(err) };
	struct store_deps x = { .backend_arg = C->w };

	CU_ASSERT_PTR_NULL(pc_store_node(cl));
	CU_ASSERT_STRING_EQUAL(pc_store_node(C->s[1]), "n1");
	pc_test_fill(page, 100, "c", 1);
	CU_ASSERT_EQUAL(pc_batch_set(cl, &p, 1), 1);
	p = (struct pc_page){ .key = "c", .key_len = 1, .data = out, .cap = 100 };
	CU_ASSERT_EQUAL(pc_batch_get(C->s[0], &p, 1), 1);
	CU_ASSERT(pc_test_page_ok(out, 100, "c", 1));
	pc_store_close(cl);
	CU_ASSERT_EQUAL(builtin_store_open(&o, &x, &s), -EINVAL);
	printf("\n  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no node named 'n9'"));
	o.node = "n1";				/* already open in this world */
	CU_ASSERT(builtin_store_open(&o, &x, &s) < 0);
	printf("  %s\n", err);
	o.fabric = "nosuch";
	o.node = NULL;
	CU_ASSERT_EQUAL(builtin_store_open(&o, &x, &s), -EINVAL);
	printf("  %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "fabric 'nosuch': not built into this library"));
	down(C);
}

static CU_TestInfo tests[] = {
	{ "many threads on one store", test_threads },
	{ "clients and open errors", test_client_and_open_errors },
	CU_TEST_INFO_NULL,
};

/* The racing and failing cases again with peers' slots mapped. */
static CU_TestInfo direct_tests[] = {
	{ "many threads on one store", test_threads },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "store", NULL, NULL, NULL, NULL, tests },
	     { "store, peers mapped", fixture_map_peers, fixture_unmap_peers, NULL, NULL, direct_tests })
