/*
 * claim_e2e_test.c - a writer process killed between its slot claim and its write,
 * on a tcp cluster of three pcd nodes.
 *
 * A forked child opens a client store, stores a page, then sets it again with the
 * fault shim armed to _exit() the process in place of its WRITE: its CAS claim has
 * landed in the owner's slot, the page never follows. The test then checks, from
 * another client, that no read ever returns anything for the key while the claim
 * stands (an odd seq is a clean miss; the old page is not served either), that sets
 * of the key are refused (-EBUSY) until store.slot_claim_timeout_ms, and that the
 * slot takes a set and serves it after that. On a store whose claims never expire
 * the last part fails: the slot stays claimed for good.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "fault.h"
#include "store.h"
#include "testutil.h"

#define PAGE 4096u
#define CLAIM_MS 1000u

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int set_v(struct pc_store *s, uint8_t *buf, uint32_t v)
{
	struct pc_page pg = { .key = "claimed", .key_len = 7, .data = buf, .len = PAGE };

	pc_test_fill(buf, PAGE, "claimed", v);
	return pc_batch_set(s, &pg, 1) == 1 ? 0 : pg.status;
}

/* The key's page through s: its version (1..9), -ENOENT, or -EBADMSG for bytes that
 * are no version written. */
static int get_v(struct pc_store *s, uint8_t *buf)
{
	struct pc_page pg = { .key = "claimed", .key_len = 7, .data = buf, .cap = PAGE };

	if (pc_batch_get(s, &pg, 1) != 1)
		return pg.status;
	for (uint32_t v = 1; v < 10; v++)
		if (pg.len == PAGE && pc_test_page_ok(buf, PAGE, "claimed", v))
			return (int)v;
	return -EBADMSG;
}

/* The child: store version 1, then die in the middle of storing version 2. */
static void child(struct ecl *E)
{
	static uint8_t buf[PAGE];
	struct pc_store *s = ecl_open_store(E, NULL);
	struct fault *ft = fault_new();

	if (!s || !ft || set_v(s, buf, 1))
		_exit(1);
	if (fault_wrap_fabric(ft, s->svc.fabric) ||
	    fault_add(ft, (struct fault_rule){ .site = FAULT_OP_WRITE, .kind = FAULT_EXIT }) < 0)
		_exit(2);
	set_v(s, buf, 2);
	_exit(3);	/* not reached: the shim exits in place of the WRITE */
}

static void test_writer_killed_after_claim(void)
{
	char store[200];
	struct ecl *E;
	struct pc_store *s;
	static uint8_t buf[PAGE];
	uint64_t t0, t1 = 0;
	int status = 0, busy = 0, misses = 0, got;
	pid_t pid;

	/* one slot per class and node: the key's slot is the one the child claimed */
	snprintf(store, sizeof(store), "slot_size_classes: [4KiB], slot_ways: 1, slot_num_buckets: 1, "
		 "global_segment_size: 1MiB, slot_cas_claim: true, slot_claim_timeout_ms: %u", CLAIM_MS);
	E = ecl_up(pc_test_argv[1], "tcp", store, false);
	fflush(stdout);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid)
		child(E);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == FAULT_EXIT_STATUS);	/* died there */
	s = ecl_open_store(E, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	t0 = now_ms();
	for (;;) {
		got = get_v(s, buf);
		CU_ASSERT_EQUAL(got, -ENOENT);	/* neither the old page nor a half new one */
		misses += got == -ENOENT;
		got = set_v(s, buf, 3);
		if (!got) {
			t1 = now_ms();
			break;
		}
		CU_ASSERT_EQUAL(got, -EBUSY);
		busy++;
		if (now_ms() - t0 > 10 * CLAIM_MS)
			break;
		usleep(50000);
	}
	printf("\n  writer killed after its claim: %d reads missed, %d sets refused, slot taken "
	       "over after %lld ms\n", misses, busy, t1 ? (long long)(t1 - t0) : -1LL);
	CU_ASSERT(t1 != 0);	/* not fatal: the pcd processes must still be stopped */
	CU_ASSERT(busy > 0);
	if (t1) {
		CU_ASSERT(t1 - t0 >= CLAIM_MS - 200);
		CU_ASSERT_EQUAL(get_v(s, buf), 3);
	}
	pc_store_close(s);
	ecl_down(E);
}

static CU_TestInfo tests[] = {
	{ "a writer killed between claim and write: clean misses, slot back after the timeout",
	  test_writer_killed_after_claim },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "claim_e2e", NULL, NULL, NULL, NULL, tests })
