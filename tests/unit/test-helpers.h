/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared bits of the unit tests. */
#ifndef HGT_TEST_HELPERS_H
#define HGT_TEST_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

/* Path of a committed recording in tests/data. */
static inline const char *test_data(const char *name)
{
	static char buf[4096];
	const char *dir = getenv("HGT_TEST_DATA");

	snprintf(buf, sizeof(buf), "%s/%s", dir ? dir : "tests/data", name);
	return buf;
}

/* Remove @dir (a test's mkdtemp()) and all in it: 0, or -1. */
static inline int test_rmdir(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A cmocka group's setup() and teardown(): the scratch directory @dir (a mkdtemp()
 * template of the test's) made, then removed with all in it. */
#define TEST_SCRATCH_DIR(dir)                 \
	static int setup(void **state)        \
	{                                     \
		(void)state;                  \
		return mkdtemp(dir) ? 0 : -1; \
	}                                     \
	static int teardown(void **state)     \
	{                                     \
		(void)state;                  \
		return test_rmdir(dir);       \
	}

#endif
