// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The flight recorder's "same hit" rule (hgt__hit_same()), on hits written out by hand: a
 * guest's marker found by two searches, or again in its saved window, is one trigger even
 * when its host time moved with what the sync learnt meanwhile (683 ns in a listen
 * --flight session here), and only then; delays are the same when they overlap.
 */
#include <string.h>

#include "test-helpers.h"
#include "../../lib/flight/flight-local.h"

static struct hgt__hit hit(enum hgt__trig_kind kind, uint64_t from, uint64_t to, const char *text)
{
	struct hgt__hit h;

	memset(&h, 0, sizeof(h));
	h.kind = kind;
	h.input = 1;
	h.cpu = 1;
	h.pid = 15504;
	h.from_ns = from;
	h.to_ns = to;
	snprintf(h.cause, sizeof(h.cause), "%s", text);
	return h;
}

static void test_marker_moved_by_sync(void **state)
{
	struct hgt__hit a = hit(HGT__TRIG_MARKER, 38100315160965ULL, 38100315160965ULL,
				"app: hgt-late 7"),
			b = hit(HGT__TRIG_MARKER, 38100315160282ULL, 38100315160282ULL,
				"app: hgt-late 7");

	(void)state;
	assert_true(hgt__hit_same(&a, &b));
	assert_true(hgt__hit_same(&b, &a));
}

static void test_marker_apart_or_other(void **state)
{
	struct hgt__hit a = hit(HGT__TRIG_MARKER, 5000000000ULL, 5000000000ULL, "app: hgt-late 7"),
			later = hit(HGT__TRIG_MARKER, 5002000000ULL, 5002000000ULL,
				    "app: hgt-late 7"),
			other = hit(HGT__TRIG_MARKER, 5000000000ULL, 5000000000ULL,
				    "app: hgt-late 8");

	(void)state;
	assert_false(hgt__hit_same(&a, &later)); /* 2 ms apart: two writes */
	assert_false(hgt__hit_same(&a, &other)); /* another text */
	other.pid = a.pid + 1;
	assert_false(hgt__hit_same(&a, &other));
}

static void test_delays_overlap(void **state)
{
	struct hgt__hit a = hit(HGT__TRIG_WAKEUP, 1000, 60000000, ""),
			grown = hit(HGT__TRIG_WAKEUP, 1000, 90000000, ""),
			after = hit(HGT__TRIG_WAKEUP, 60000001, 120000000, "");

	(void)state;
	assert_true(hgt__hit_same(&a, &grown));
	assert_false(hgt__hit_same(&a, &after)); /* no slack for a delay: it has a length */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_marker_moved_by_sync),
		cmocka_unit_test(test_marker_apart_or_other),
		cmocka_unit_test(test_delays_overlap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
