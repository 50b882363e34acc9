// SPDX-License-Identifier: GPL-2.0-or-later
/* The merge orders by converted time, ties to the source added first. */
#include "test-helpers.h"

#include <traceevent/event-parse.h>

#include <hgtrace/clock.h>
#include <hgtrace/merge.h>
#include <hgtrace/tracedat.h>

static void test_two_copies_interleave_in_order(void **state)
{
	struct hgt_input *in = hgt_input_open(test_data("mono.dat"), NULL);
	struct hgt_clock clk = { 0 };
	struct hgt_cursor *cur[8];
	struct hgt_merge *m = hgt_merge_new();
	struct tep_record *rec;
	unsigned long long last = 0;
	int i, n = 0, src, prev_src = -1, events = 0, ncpu;
	unsigned long long ts_first = 0, ts_second = 0;

	assert_non_null(in);
	ncpu = hgt_input_nr_cpus(in);
	assert_true(ncpu <= 4);
	/* The same CPUs twice: sources 0..ncpu-1 and ncpu..2ncpu-1 hold identical events. */
	for (i = 0; i < 2 * ncpu; i++) {
		cur[n] = hgt_cursor_open(in, 0, i % ncpu);
		assert_non_null(cur[n]);
		assert_int_equal(hgt_merge_add(m, cur[n], &clk, NULL), n);
		n++;
	}
	while (hgt_merge_next(m, &rec, NULL, &src) > 0) {
		/* (time, source) never goes backwards: equal times go to the earlier source */
		assert_true(rec->ts >= last);
		if (rec->ts == last && prev_src >= 0)
			assert_true(src >= prev_src);
		if (src < ncpu)
			ts_first += rec->ts;
		else
			ts_second += rec->ts;
		last = rec->ts;
		prev_src = src;
		events++;
	}
	assert_true(events > 100);
	assert_int_equal(events % 2, 0);
	assert_int_equal(ts_first, ts_second);
	hgt_merge_free(m);
	for (i = 0; i < n; i++)
		hgt_cursor_close(cur[i]);
	hgt_input_close(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_copies_interleave_in_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
