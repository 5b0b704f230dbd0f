/*
 * log_test.c - a log line is one line: names and text a peer sent, with newlines or
 * other control bytes in them, cannot forge lines of their own.
 */
#include <string.h>

#include "base/log.h"
#include "testutil.h"

static int lines;
static char last[1024];

static void capture(void *arg, enum pc_log_level level, const char *line)
{
	(void)arg;
	(void)level;
	lines++;
	snprintf(last, sizeof(last), "%s", line);
}

static void test_one_line(void)
{
	pc_log_set_sink(capture, NULL);
	pc_warn("node %s (%s:%u) asked to join", "n1\n2099-01-01T00:00:00Z error pcd n0: FORGED",
		"10.0.0.1\r\x1b[2J", 7);
	pc_log_set_sink(NULL, NULL);
	CU_ASSERT_EQUAL(lines, 1);
	CU_ASSERT_PTR_NULL(strpbrk(last, "\n\r\x1b"));
	CU_ASSERT_STRING_EQUAL(last, "node n1?2099-01-01T00:00:00Z error pcd n0: FORGED (10.0.0.1??[2J:7) asked to join");
}

static CU_TestInfo tests[] = {
	{ "control bytes in a line's text do not make lines", test_one_line },
	CU_TEST_INFO_NULL,
};

PC_TEST_MAIN({ "log", NULL, NULL, NULL, NULL, tests })
