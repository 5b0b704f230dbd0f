/*
 * testutil.c - runs CUnit suites and says loudly when nothing ran.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xxhash.h>

#include <peercache/peercache.h>

#include "testutil.h"

int pc_test_argc;
char **pc_test_argv;
static char tmpdir[64];

static void rm_tmpdir(void)
{
	char cmd[128];

	if (tmpdir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
}

void pc_test_fill(uint8_t *p, size_t len, const char *key, uint32_t version)
{
	uint64_t x = XXH3_64bits(key, strlen(key)) ^ version;

	for (size_t i = 0; i < len; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		p[i] = (uint8_t)(x >> 56);
	}
}

int pc_test_page_ok(const uint8_t *p, size_t len, const char *key, uint32_t version)
{
	uint8_t *want = malloc(len ? len : 1);
	int ok;

	if (!want)
		return 0;
	pc_test_fill(want, len, key, version);
	ok = !memcmp(p, want, len);
	free(want);
	return ok;
}

int pc_test_write_pages(struct pc_store *s, uint32_t from, uint32_t n, uint32_t len)
{
	struct pc_page pg[64];
	char keys[64][32];
	uint8_t *buf = malloc((size_t)n * len + 1);
	int ret;

	if (!buf || n > 64) {
		free(buf);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "page-%u", from + i);
		pc_test_fill(buf + (size_t)i * len, len, keys[i], 1);
		pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]),
					  .data = buf + (size_t)i * len, .len = len };
	}
	ret = pc_batch_set(s, pg, n);
	free(buf);
	return ret;
}

int pc_test_read_pages(struct pc_store *s, uint32_t total, uint32_t len, int *wrong, int *bad)
{
	struct pc_page pg[16];
	char keys[16][32];
	uint8_t *buf = malloc((size_t)16 * len);
	int hits = 0, r;

	for (uint32_t from = 0; buf && from < total; from += 16) {
		uint32_t n = total - from < 16 ? total - from : 16;

		for (uint32_t i = 0; i < n; i++) {
			snprintf(keys[i], sizeof(keys[i]), "page-%u", from + i);
			memset(buf + (size_t)i * len, 0xee, len);
			pg[i] = (struct pc_page){ .key = keys[i], .key_len = strlen(keys[i]),
						  .data = buf + (size_t)i * len, .cap = len, .len = len };
		}
		r = pc_batch_get(s, pg, n);
		hits += r > 0 ? r : 0;
		for (uint32_t i = 0; i < n; i++) {
			if (pg[i].status == 0 && !pc_test_page_ok(pg[i].data, len, keys[i], 1))
				(*wrong)++;
			else if (pg[i].status && pg[i].status != -ENOENT)
				(*bad)++;
		}
	}
	free(buf);
	return hits;
}

int pc_test_connect(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	CU_ASSERT_EQUAL_FATAL(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

const char *pc_test_tmpdir(void)
{
	if (!tmpdir[0]) {
		strcpy(tmpdir, "/tmp/pctest-XXXXXX");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(rm_tmpdir);
	}
	return tmpdir;
}

int pc_test_main(int argc, char **argv, CU_SuiteInfo *suites)
{
	unsigned run, failed, asserts;
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];

	/* Info lines (slot regions ready, ...) would bury the test output. */
	if (!getenv("PC_LOG_LEVEL"))
		pc_log_set_level(PC_LOG_WARN);
	pc_test_argc = argc;
	pc_test_argv = argv;
	if (CU_initialize_registry() != CUE_SUCCESS || CU_register_suites(suites) != CUE_SUCCESS) {
		fprintf(stderr, "%s: CUnit setup failed: %s\n", name, CU_get_error_msg());
		return 2;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	run = CU_get_number_of_tests_run();
	failed = CU_get_number_of_tests_failed();
	asserts = CU_get_number_of_asserts();
	if (CU_get_number_of_suites_failed())
		failed++;
	CU_cleanup_registry();
	if (!run) {
		printf("%s: FAIL: no test ran\n", name);
		return 1;
	}
	printf("%s: %s: %u tests, %u failed, %u asserts\n", name, failed ? "FAIL" : "PASS", run,
	       failed, asserts);
	return failed ? 1 : 0;
}
