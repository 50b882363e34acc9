// SPDX-License-Identifier: GPL-2.0-or-later
/* The timestamp pipeline: TSC2NSEC multiply-shift, --ts2secs, offsets, --raw-ts. */
#include "test-helpers.h"

#include <hgtrace/clock.h>

/* trace-cmd's (and the kernel's) 64-bit formulation, valid for shift <= 32. */
static uint64_t ref_mul_shr(uint64_t a, uint32_t mult, unsigned int shift)
{
	uint64_t lo = (a & 0xffffffffULL) * mult, hi = (a >> 32) * mult;

	return (lo >> shift) + (hi << (32 - shift));
}

static void test_mul_shr_matches_64bit_formula(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	int i;

	for (i = 0; i < 100000; i++) {
		uint32_t mult = (uint32_t)(x >> 17);
		unsigned int shift = (unsigned int)(x % 33);
		uint64_t a = x * 0xbf58476d1ce4e5b9ULL;

		assert_int_equal(hgt_mul_u64_u32_shr(a, mult, shift), ref_mul_shr(a, mult, shift));
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
}

static void test_ts2secs_after_correction(void **state)
{
	/* timestamps-and-sync.md §2: --ts2secs 2000000000 turns 999510100 into 499755050 */
	struct hgt_clock c = { .ts2secs = 1e9 / 2000000000.0 };

	assert_int_equal(hgt_clock_convert(&c, 999510100ULL, 0), 499755050ULL);
}

static void test_tsc2nsec_then_offset(void **state)
{
	struct hgt_clock c = { .tsc_mult = 3, .tsc_shift = 1, .offset = -100 };

	assert_int_equal(hgt_clock_convert(&c, 1000, 0), 1400);
	c.raw = true;
	assert_int_equal(hgt_clock_convert(&c, 1000, 0), 1000);
}

static void test_ts2secs_wins_over_tsc2nsec(void **state)
{
	struct hgt_clock c = { .ts2secs = 2.0, .tsc_mult = 3, .tsc_shift = 1 };

	assert_int_equal(hgt_clock_convert(&c, 1000, 0), 2000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mul_shr_matches_64bit_formula),
		cmocka_unit_test(test_ts2secs_after_correction),
		cmocka_unit_test(test_tsc2nsec_then_offset),
		cmocka_unit_test(test_ts2secs_wins_over_tsc2nsec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
