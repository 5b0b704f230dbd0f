/*
 * testutil.h - the shared main() of every CUnit executable, and small helpers.
 */
#ifndef PC_TESTUTIL_H
#define PC_TESTUTIL_H

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

#define PC_TEST_MAIN(...)                                        \
	int main(int argc, char **argv)                          \
	{                                                        \
		CU_SuiteInfo suites[] = { __VA_ARGS__, CU_SUITE_INFO_NULL }; \
		return pc_test_main(argc, argv, suites);         \
	}

#endif
