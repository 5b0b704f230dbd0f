/*
 * testutil.h - the shared main() of every CUnit executable, and small helpers.
 */
#ifndef PC_TESTUTIL_H
#define PC_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>

/* argv of the test executable, for suites that take a path argument. */
extern int pc_test_argc;
extern char **pc_test_argv;

/* Register suites, run them verbosely, print a closing line, and return the exit
 * code: 0 only when at least one test ran and none failed. */
int pc_test_main(int argc, char **argv, CU_SuiteInfo *suites);

/* A directory for this test's files, removed at exit. */
const char *pc_test_tmpdir(void);

/* Page content derived from a key and a version, so a reader can check every byte:
 * fill writes it, pc_test_page_ok says whether p holds exactly that. */
void pc_test_fill(uint8_t *p, size_t len, const char *key, uint32_t version);
int pc_test_page_ok(const uint8_t *p, size_t len, const char *key, uint32_t version);

struct pc_store;

/* Write pages "page-<i>" for i in [from, from+n) through s, in one batch (n <= 64),
 * each `len` bytes of pc_test_fill(key, 1). Returns what pc_batch_set returned. */
int pc_test_write_pages(struct pc_store *s, uint32_t from, uint32_t n, uint32_t len);

/* Read pages [0, total) through s, 16 per batch, expecting `len` bytes each. Returns
 * the hits; *wrong counts hits whose bytes are not the page's, *bad statuses other
 * than 0 and -ENOENT. */
int pc_test_read_pages(struct pc_store *s, uint32_t total, uint32_t len, int *wrong, int *bad);
/* The same for pages [first, first + total). */
int pc_test_read_range(struct pc_store *s, uint32_t first, uint32_t total, uint32_t len,
		       int *wrong, int *bad);

/* One thread of a race on a few keys: writers set 2 KiB pages of pc_test_fill(key,
 * v) for random v in 0..3, readers get them and count hits whose bytes are none of
 * those versions as bad. */
struct pc_test_racer {
	struct pc_store *s;
	const char (*keys)[32];
	int nkeys;
	bool writer;
	unsigned long ops, hits, bad;	/* out */
	int *stop;			/* set by pc_test_race */
};

/* Run racers on threads for at least min_ms and until every writer made 100 ops and
 * the readers 20 hits together (a busy or valgrind-slowed machine may not schedule
 * them for a while), at most 60 s. Returns the totals. */
void pc_test_race(struct pc_test_racer *r, int n, int min_ms, unsigned long *writes,
		  unsigned long *hits, unsigned long *bad);

/* A first port for a test cluster of up to 16 nodes, different per process and
 * attempt, below Linux's ephemeral range (32768 up), so no connection's local port
 * can be sitting on it. */
uint16_t pc_test_port_base(int attempt);

/* A TCP connection to 127.0.0.1:port, for tests that speak raw frames (fatal on failure). */
int pc_test_connect(uint16_t port);

/* True under valgrind (ctest sets PC_TEST_UNDER_VALGRIND) and in a ThreadSanitizer
 * build: tests run fewer rounds and wait longer. */
bool pc_test_under_valgrind(void);

/* Whether a check that needs full speed or full sample counts should run: false under
 * valgrind and in a ThreadSanitizer build, and then it prints "skipped in a slow run
 * ...: <what>", so the output says which checks did not run. */
bool pc_test_precise(const char *what);

/* The value of the Prometheus sample in text whose line starts with prefix (its
 * name and labels, with or without the closing brace), or -1. */
double pc_test_metric(const char *text, const char *prefix);

/* Set before pc_test_main runs (e.g. from argv in a suite's test): suites for which
 * it returns false are registered but inactive, and show as such in the summary. */
extern bool (*pc_test_suite_wanted)(const char *suite, int argc, char **argv);

#define PC_TEST_MAIN(...)                                        \
	int main(int argc, char **argv)                          \
	{                                                        \
		CU_SuiteInfo suites[] = { __VA_ARGS__, CU_SUITE_INFO_NULL }; \
		return pc_test_main(argc, argv, suites);         \
	}

/* The same, with wanted(suite, argc, argv) choosing the suites that run. */
#define PC_TEST_MAIN_SOME(wanted, ...)                           \
	int main(int argc, char **argv)                          \
	{                                                        \
		CU_SuiteInfo suites[] = { __VA_ARGS__, CU_SUITE_INFO_NULL }; \
		pc_test_suite_wanted = wanted;                   \
		return pc_test_main(argc, argv, suites);         \
	}

#endif
