/*
 * testutil.c - runs CUnit suites and says loudly when nothing ran.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
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
	return pc_test_read_range(s, 0, total, len, wrong, bad);
}

int pc_test_read_range(struct pc_store *s, uint32_t first, uint32_t total, uint32_t len,
		       int *wrong, int *bad)
{
	struct pc_page pg[16];
	char keys[16][32];
	uint8_t *buf = malloc((size_t)16 * len);
	int hits = 0, r;

	for (uint32_t from = first; buf && from < first + total; from += 16) {
		uint32_t n = first + total - from < 16 ? first + total - from : 16;

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

static void *racer_main(void *p)
{
	struct pc_test_racer *r = p;
	unsigned seed = (unsigned)(uintptr_t)r;
	uint8_t buf[2048];

	while (!__atomic_load_n(r->stop, __ATOMIC_RELAXED)) {
		int k = rand_r(&seed) % r->nkeys;
		struct pc_page pg = { .key = r->keys[k], .key_len = strlen(r->keys[k]), .data = buf,
				      .len = sizeof(buf), .cap = sizeof(buf) };

		if (r->writer) {
			pc_test_fill(buf, sizeof(buf), r->keys[k], (uint32_t)rand_r(&seed) % 4);
			pc_batch_set(r->s, &pg, 1);
		} else if (pc_batch_get(r->s, &pg, 1) == 1) {
			int ok = 0;

			for (uint32_t v = 0; v < 4; v++)
				ok |= pc_test_page_ok(buf, sizeof(buf), r->keys[k], v);
			r->bad += !ok;
			__atomic_fetch_add(&r->hits, 1, __ATOMIC_RELAXED);
		}
		__atomic_fetch_add(&r->ops, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static bool race_progressed(const struct pc_test_racer *r, int n)
{
	unsigned long hits = 0;

	for (int i = 0; i < n; i++) {
		if (r[i].writer && __atomic_load_n(&r[i].ops, __ATOMIC_RELAXED) < 100)
			return false;
		hits += __atomic_load_n(&r[i].hits, __ATOMIC_RELAXED);
	}
	return hits >= 20;
}

void pc_test_race(struct pc_test_racer *r, int n, int min_ms, unsigned long *writes,
		  unsigned long *hits, unsigned long *bad)
{
	int stop = 0;
	pthread_t t[16];

	*writes = *hits = *bad = 0;
	for (int i = 0; i < n && i < 16; i++) {
		r[i].stop = &stop;
		r[i].ops = r[i].hits = r[i].bad = 0;
		pthread_create(&t[i], NULL, racer_main, &r[i]);
	}
	for (int ms = 0; ms < 60000; ms += 50) {
		usleep(50000);
		if (ms >= min_ms && race_progressed(r, n))
			break;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n && i < 16; i++) {
		pthread_join(t[i], NULL);
		*bad += r[i].bad;
		*hits += r[i].hits;
		*writes += r[i].writer ? r[i].ops : 0;
	}
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

uint16_t pc_test_port_base(int attempt)
{
	/* 20000..31599, in steps of 16; laptop.yaml's 31998-32000 stay clear */
	return (uint16_t)(20000 + 16 * (((unsigned)getpid() * 7919u + (unsigned)attempt * 97u +
					 (unsigned)rand()) % 725u));
}

bool (*pc_test_suite_wanted)(const char *suite, int argc, char **argv);

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
	for (CU_SuiteInfo *si = suites; pc_test_suite_wanted && si->pName; si++)
		if (!pc_test_suite_wanted(si->pName, argc, argv))
			CU_set_suite_active(CU_get_suite(si->pName), CU_FALSE);
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

bool pc_test_under_valgrind(void)
{
#if defined(__SANITIZE_THREAD__)
	return true;	/* ThreadSanitizer slows a run as much */
#else
	return getenv("PC_TEST_UNDER_VALGRIND") != NULL;
#endif
}

double pc_test_metric(const char *text, const char *prefix)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, prefix, strlen(prefix)) && strchr(p, '}'))
			return strtod(strchr(p, '}') + 1, NULL);
	return -1;
}

bool pc_test_precise(const char *what)
{
	if (!pc_test_under_valgrind())
		return true;
	printf("  skipped in a slow run (valgrind, ThreadSanitizer): %s\n", what);
	return false;
}
