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

#endif
