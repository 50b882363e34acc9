// SPDX-License-Identifier: GPL-2.0-or-later
/* The library's plumbing (lib/common): growing arrays, bounded writes. */
#include "test-helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common-local.h"

/* Capacities worked out by hand: nothing until needed, then @first, then doubled. */
static void test_grow_doubles_from_first(void **state)
{
	int32_t *a = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(hgt__grow(&a, &cap, 0, sizeof(*a), 4), 0);
	assert_null(a);
	assert_int_equal(cap, 0);
	assert_int_equal(hgt__grow(&a, &cap, 1, sizeof(*a), 4), 0);
	assert_int_equal(cap, 4);
	for (int i = 0; i < 4; i++)
		a[i] = 100 + i;
	assert_int_equal(hgt__grow(&a, &cap, 4, sizeof(*a), 4), 0);
	assert_int_equal(cap, 4); /* room for 4 already */
	assert_int_equal(hgt__grow(&a, &cap, 5, sizeof(*a), 4), 0);
	assert_int_equal(cap, 8);
	assert_int_equal(hgt__grow(&a, &cap, 33, sizeof(*a), 4), 0);
	assert_int_equal(cap, 64); /* 8 -> 16 -> 32 -> 64 */
	for (int i = 0; i < 4; i++)
		assert_int_equal(a[i], 100 + i); /* kept through each move */
	free(a);
}

/* A size that cannot be allocated: -ENOMEM, the array and its capacity as they were. */
static void test_grow_refuses_overflow(void **state)
{
	char *a = malloc(16);
	size_t cap = 16;

	(void)state;
	assert_non_null(a);
	assert_int_equal(hgt__grow(&a, &cap, SIZE_MAX / 2, 1024, 16), -ENOMEM);
	assert_int_equal(cap, 16);
	assert_non_null(a);
	free(a);
}

/* A pipe nobody reads: the write gives up after its stall limit, or at once on stop. */
static void test_write_within_gives_up(void **state)
{
	static char buf[1 << 20];
	int p[2], sz;
	volatile int stop = 0;

	(void)state;
	assert_int_equal(pipe(p), 0);
	sz = fcntl(p[1], F_GETPIPE_SZ);
	assert_true(sz > 0 && (size_t)sz < sizeof(buf));
	assert_int_equal(hgt__write_within(p[1], buf, sizeof(buf), 300, &stop), -ETIMEDOUT);
	stop = 1;
	assert_int_equal(hgt__write_within(p[1], buf, 1, 0, &stop), -ECANCELED);
	/* with room, a stop does not cut a write short */
	close(p[0]);
	close(p[1]);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(hgt__write_within(p[1], buf, 100, 0, &stop), 0);
	assert_int_equal(read(p[0], buf, sizeof(buf)), 100);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_doubles_from_first),
		cmocka_unit_test(test_grow_refuses_overflow),
		cmocka_unit_test(test_write_within_gives_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
