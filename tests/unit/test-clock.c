// SPDX-License-Identifier: GPL-2.0-or-later
/* The timestamp pipeline: TSC2NSEC multiply-shift, --ts2secs, offsets, --raw-ts. */
#include "test-helpers.h"

#include <errno.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>
#include <string.h>

#include <hgtrace/clock.h>
#include <hgtrace/infer.h>
#include <hgtrace/peer.h>

#include "../../lib/private/clock.h"

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

/* One guest CPU with @n samples, every sample the same scaling/frac. */
struct ts_fixture {
	int64_t time[4], offset[4], scaling[4], frac[4];
	struct hgt_time_shift_cpu cpu;
	struct hgt_time_shift ts;
	struct hgt_clock clk;
};

static void ts_setup(struct ts_fixture *f, uint32_t n, uint32_t flags, bool compat)
{
	f->cpu.count = n;
	f->cpu.time = f->time;
	f->cpu.offset = f->offset;
	f->cpu.scaling = f->scaling;
	f->cpu.frac = f->frac;
	f->ts.flags = flags;
	f->ts.nr_cpus = 1;
	f->ts.cpus = &f->cpu;
	memset(&f->clk, 0, sizeof(f->clk));
	f->clk.tsync = &f->ts;
	f->clk.tsync_compat = compat;
}

/* timestamps-and-sync.md §2, checked against trace-cmd 3.3.4 output */
static void test_tsync_interpolate_like_trace_cmd(void **state)
{
	struct ts_fixture f = { .time = { 999500000, 999900000 },
				.offset = { 1000, 5000 },
				.scaling = { 1, 1 } };

	for (int compat = 0; compat < 2; compat++) {
		ts_setup(&f, 2, HGT_TSYNC_INTERPOLATE, compat);
		assert_int_equal(hgt_clock_convert(&f.clk, 999510000, 0), 999511100);
		assert_int_equal(hgt_clock_convert(&f.clk, 999560000, 0), 999561600);
		/* CPUs beyond the samples are left alone */
		assert_int_equal(hgt_clock_convert(&f.clk, 999560000, 1), 999560000);
		ts_setup(&f, 2, 0, compat);
		assert_int_equal(hgt_clock_convert(&f.clk, 999510000, 0), 999511000);
		assert_int_equal(hgt_clock_convert(&f.clk, 999899999, 0), 999900999);
	}
}

/*
 * Interpolation that does not divide exactly: trace-cmd rounds to nearest, (prod + delta / 2)
 * / delta. By hand, samples (1000, 0) and (1003, 10), delta 3: at 1002, 2 * 10 = 20, and
 * (20 + 1) / 3 = 7 (truncated, 6): 1002 + 7 = 1009; at 1001, (10 + 1) / 3 = 3: 1004. Both
 * readers, trace-cmd's (compat) and ours, must round so.
 */
static void test_tsync_interpolate_rounds(void **state)
{
	struct ts_fixture f = { .time = { 1000, 1003 }, .offset = { 0, 10 }, .scaling = { 1, 1 } };

	for (int compat = 0; compat < 2; compat++) {
		ts_setup(&f, 2, HGT_TSYNC_INTERPOLATE, compat);
		assert_int_equal(hgt_clock_convert(&f.clk, 1002, 0), 1009);
		assert_int_equal(hgt_clock_convert(&f.clk, 1001, 0), 1004);
	}
}

static void test_tsync_compat_scaling_as_trace_cmd(void **state)
{
	struct ts_fixture f = { .time = { 999500000, 999900000 },
				.offset = { 100, 100 },
				.scaling = { 3, 3 },
				.frac = { 1, 1 } };

	ts_setup(&f, 2, 0, true);
	assert_int_equal(hgt_clock_convert(&f.clk, 999510000, 0), 1499265100ULL);
	/* one sample: trace-cmd ignores the scaling */
	ts_setup(&f, 1, 0, true);
	assert_int_equal(hgt_clock_convert(&f.clk, 999510000, 0), 999510100ULL);
}

/* Step mode past the last sample: native uses the last sample, trace-cmd the one before. */
static void test_tsync_step_after_last_sample(void **state)
{
	struct ts_fixture f = { .time = { 1000, 2000 }, .offset = { 10, 20 }, .scaling = { 1, 1 } };

	ts_setup(&f, 2, 0, false);
	assert_int_equal(hgt_clock_convert(&f.clk, 500, 0), 510);
	assert_int_equal(hgt_clock_convert(&f.clk, 1999, 0), 2009);
	assert_int_equal(hgt_clock_convert(&f.clk, 2000, 0), 2020);
	assert_int_equal(hgt_clock_convert(&f.clk, 5000, 0), 5020);
	ts_setup(&f, 2, 0, true);
	assert_int_equal(hgt_clock_convert(&f.clk, 5000, 0), 5010);
}

/* A CPU the TIME_SHIFT does not list is left alone, even where the array has room beyond
 * nr_cpus (a file may store fewer CPUs than the guest had). */
static void test_tsync_cpu_beyond_nr_cpus(void **state)
{
	int64_t time[1] = { 0 }, off[2] = { 1000, 7000 }, one[1] = { 1 }, zero[1] = { 0 };
	struct hgt_time_shift_cpu cpus[2] = { { 1, time, off, one, zero },
					      { 1, time, off + 1, one, zero } };
	struct hgt_time_shift ts = { .nr_cpus = 1, .cpus = cpus };
	struct hgt_clock clk = { .tsync = &ts };

	assert_int_equal(hgt_clock_convert(&clk, 50000, 0), 51000);
	assert_int_equal(hgt_clock_convert(&clk, 50000, 1), 50000);
	assert_int_equal(hgt_clock_convert(&clk, 50000, 2), 50000);
	assert_int_equal(hgt_clock_convert(&clk, 50000, -1), 50000);
}

/* The measured TSC rate, by hand: 2.1 GHz over 1 s is 0.476190476... ns a tick, times 2^32 =
 * 2045222521.9, rounded to 2045222522 (shift 32); the error bound (2 x 50 ns over 1 s) is
 * 0.1 ppm; samples 50 ms apart are refused (100 ms at least). */
static void test_tsc2nsec_measure_by_hand(void **state)
{
	struct hgt_tsc_sample a = { 1000, 5000000000ULL, 50 };
	struct hgt_tsc_sample b = { 1000 + 2100000000ULL, 6000000000ULL, 50 };
	struct hgt_tsc_sample c = { 1000 + 105000000ULL, 5050000000ULL, 50 };
	uint32_t mult = 0, shift = 0;
	double ppm = 0;

	assert_int_equal(hgt_tsc2nsec_measure(&a, &b, &mult, &shift, &ppm), 0);
	assert_int_equal(mult, 2045222522u);
	assert_int_equal(shift, 32);
	assert_true(ppm > 0.0999 && ppm < 0.1001);
	assert_int_equal(hgt_tsc2nsec_measure(&a, &c, &mult, &shift, NULL), -EAGAIN);
	assert_int_equal(hgt_tsc2nsec_measure(&b, &a, &mult, &shift, NULL), -EAGAIN);
}

static uint64_t rng(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* The test's own KVM relation, in 128 bits: guest = ((host * ratio) >> frac) + offset. */
static uint64_t ref_host_to_guest(uint64_t host, uint64_t ratio, unsigned int frac, int64_t off)
{
	return (uint64_t)(((unsigned __int128)host * ratio) >> frac) + (uint64_t)off;
}

/* Hand-computed: ratio 1.25 (5 << 46 at 48 bits; 5 << 30 at 32), host 5e12 cycles: scaled
 * 6.25e12 exactly; minus 1234567890123 = 5015432109877. Host 7 at 1.25: 8.75 -> 8. */
static void test_tsc_forward_by_hand(void **state)
{
	assert_int_equal(hgt_tsc_host_to_guest(5000000000000ULL, 5ULL << 46, 48, -1234567890123LL),
			 5015432109877ULL);
	assert_int_equal(hgt_tsc_host_to_guest(5000000000000ULL, 5ULL << 30, 32, -1234567890123LL),
			 5015432109877ULL);
	assert_int_equal(hgt_tsc_host_to_guest(7, 5ULL << 46, 48, 0), 8);
	/* 8 is first reached at host 7 (6 gives 7.5 -> 7); 9 is never reached by 7 or 8 */
	assert_int_equal(hgt_tsc_guest_to_host(8, 5ULL << 46, 48, 0), 7);
	assert_int_equal(hgt_tsc_guest_to_host(5015432109877ULL, 5ULL << 46, 48, -1234567890123LL),
			 5000000000000ULL);
	assert_int_equal(hgt_tsc_host_to_guest(1000, 0, 48, 5), 1005); /* ratio 0 is 1.0 */
}

/* The native inverse: for real TSC magnitudes and Intel (48) and AMD (32) fraction bits,
 * converting the guest value of any host TSC gives the smallest host TSC with that guest
 * value, found here by walking down one cycle at a time with the test's own relation. */
static void test_tsc_inverse_is_exact(void **state)
{
	static const struct {
		unsigned int frac;
		double ratio;
	} cases[] = { { 48, 1.1 }, { 48, 0.73 }, { 48, 1.0 }, { 32, 1.37 }, { 32, 0.5 } };
	uint64_t x = 0x243f6a8885a308d3ULL;

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		uint64_t ratio = (uint64_t)(cases[k].ratio * (double)(1ULL << cases[k].frac));

		for (int i = 0; i < 2000; i++) {
			uint64_t host = 1000000000000ULL + rng(&x) % 100000000000000ULL;
			int64_t off = -(int64_t)(rng(&x) % 50000000000000ULL);
			uint64_t g = ref_host_to_guest(host, ratio, cases[k].frac, off);
			uint64_t want = host;

			assert_int_equal(hgt_tsc_host_to_guest(host, ratio, cases[k].frac, off), g);
			while (ref_host_to_guest(want - 1, ratio, cases[k].frac, off) == g)
				want--;
			assert_int_equal(hgt_tsc_guest_to_host(g, ratio, cases[k].frac, off), want);
		}
	}
}

/* trace-cmd's 64-bit product wraps for an Intel ratio at real TSC values; ours does not.
 * The guest value is test_tsc_forward_by_hand's. */
static void test_tsync_native_no_wrap(void **state)
{
	uint64_t ratio = 5ULL << 46; /* 1.25 */
	uint64_t host = 5000000000000ULL;
	int64_t tsc_off = -1234567890123LL;
	uint64_t guest = 5015432109877ULL;
	struct ts_fixture f = { .time = { 0, 1 },
				.offset = { -tsc_off, -tsc_off },
				.scaling = { (int64_t)ratio, (int64_t)ratio },
				.frac = { 48, 48 } };

	ts_setup(&f, 2, 0, false);
	assert_int_equal(hgt_clock_convert(&f.clk, guest, 0), host);
	ts_setup(&f, 2, 0, true);
	assert_int_not_equal(hgt_clock_convert(&f.clk, guest, 0), host);
}

/* Trace clocks read from user space, against clock_gettime() and each other. */
static void test_trace_clock_read(void **state)
{
	struct timespec t;
	uint64_t a, b, m;

	assert_true(hgt_trace_clock_readable("x86-tsc"));
	assert_true(hgt_trace_clock_readable("mono"));
	assert_false(hgt_trace_clock_readable("local"));
	assert_false(hgt_trace_clock_readable("global"));
	assert_int_equal(hgt_trace_clock_read("local", &a), -EOPNOTSUPP);
	assert_int_equal(hgt_trace_clock_read("mono", &a), 0);
	clock_gettime(CLOCK_MONOTONIC, &t);
	assert_int_equal(hgt_trace_clock_read("mono", &b), 0);
	m = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	assert_true(a <= m && m <= b); /* the same clock, in ns */
	assert_int_equal(hgt_trace_clock_read("x86-tsc", &a), 0);
	assert_int_equal(hgt_trace_clock_read("x86-tsc", &b), 0);
	assert_true(b > a);
}

/*
 * Containment by hand. Windows [100,200] [300,350] [500,600], span [100,600]: the allowed
 * host set is (-inf,200] u [300,350] u [500,inf). Offsets c with some event in the span:
 * [100 - g_last, 600 - g_first]. Each event g keeps the c with g + c allowed.
 */
static void test_infer_by_hand(void **state)
{
	const struct hgt_infer_window w[] = { { 500, 600 }, { 100, 200 }, { 300, 350 } };
	const int64_t g5[] = { 110, 130, 310, 330, 560 };
	const int64_t g6[] = { 110, 130, 190, 310, 330, 560 };
	struct hgt_infer_result r;

	/*
	 * 110, 130, 310, 330, 560: start [-460,490]; 110: c <= 90, [190,240], >= 390;
	 * 130: c <= 70, [170,220], >= 370; 310: c <= -110, [-10,40], >= 190; 330: c <= -130,
	 * [-30,20], >= 170; 560: c <= -360, [-260,-210], >= -60. Left: [-460,-360]
	 * [-260,-210] [-10,20] [190,220] [390,490] with 1, 1, 5, 4, 2 events in the span at
	 * their middles: the hull of the two with at least 3/4 of the 5 any offset could put in
	 * the span is [-10,220].
	 */
	assert_int_equal(hgt_infer_offset(g5, 5, w, 3, 100, 600, NULL, &r), 0);
	assert_int_equal(r.status, HGT_INFER_OK);
	assert_int_equal(r.lo, -10);
	assert_int_equal(r.hi, 220);
	assert_int_equal(r.pieces, 2);
	assert_true(r.weak_pieces >= 3); /* dropped on the way or at the end */
	{
		HGT_OPTS(hgt_infer_opts, o, .max_bound = 50);

		assert_int_equal(hgt_infer_offset(g5, 5, w, 3, 100, 600, &o, &r), 0);
		assert_int_equal(r.status, HGT_INFER_AMBIGUOUS);
		assert_int_equal(r.lo, -10);
		assert_int_equal(r.hi, 20);
		assert_int_equal(r.in_span, 5);
		assert_int_equal(r.alt_lo, 190);
		assert_int_equal(r.alt_hi, 220);
		assert_int_equal(r.alt_in_span, 4);
	}
	/* and 190: c <= 10, [110,160], >= 310: left [-460,-360] [-260,-210] [-10,10]
	 * [390,490] with 1, 1, 6, 2 events in the span: c = 0 +- 10 */
	assert_int_equal(hgt_infer_offset(g6, 6, w, 3, 100, 600, NULL, &r), 0);
	assert_int_equal(r.status, HGT_INFER_OK);
	assert_int_equal(r.lo, -10);
	assert_int_equal(r.hi, 10);
	assert_int_equal(r.estimate, 0);
	assert_int_equal(r.bound, 10);
	assert_int_equal(r.pieces, 1);
	assert_true(r.weak_pieces >= 3);
	assert_int_equal(r.in_span, 6);
}

/*
 * The same five events, sought within a range (a channel's set): the pieces above,
 * [-460,-360] [-260,-210] [-10,20] [190,220] [390,490] with 1, 1, 5, 4, 2 events in the
 * span, clipped to the range and every one kept however weak; offsets of the range past
 * [-460,490] (those that put no event in the span) kept too; best_lo..best_hi the piece
 * nearest the middle of the hull.
 */
static void test_infer_within(void **state)
{
	const struct hgt_infer_window w[] = { { 500, 600 }, { 100, 200 }, { 300, 350 } };
	const int64_t g5[] = { 110, 130, 310, 330, 560 };
	struct hgt_infer_result r;
	struct {
		int64_t lo, hi;		    /* the range */
		int status;		    /* what comes out */
		int64_t rlo, rhi, blo, bhi; /* hull, best piece */
		uint32_t pieces;
	} c[] = {
		/* only the weak [-260,-210] lies there: kept (dropped without the range) */
		{ -300, -200, HGT_INFER_OK, -260, -210, -260, -210, 1 },
		/* [-10,20] and [190,200]: middle 95, nearer the first */
		{ -100, 200, HGT_INFER_OK, -10, 200, -10, 20, 2 },
		/* the weak [390,490] and [491,600] beside the span: middle 495, in the second */
		{ 350, 600, HGT_INFER_OK, 390, 600, 491, 600, 2 },
		/* all beside: every offset fits */
		{ 1000, 2000, HGT_INFER_OK, 1000, 2000, 1000, 2000, 1 },
		/* between pieces, none beside: nothing in the range fits */
		{ 30, 180, HGT_INFER_EMPTY, 0, 0, 0, 0, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		HGT_OPTS(hgt_infer_opts, o, .within = true, .within_lo = c[i].lo,
			 .within_hi = c[i].hi, .max_bound = 1);

		assert_int_equal(hgt_infer_offset(g5, 5, w, 3, 100, 600, &o, &r), 0);
		assert_int_equal(r.status, c[i].status);
		if (c[i].status != HGT_INFER_OK)
			continue;
		assert_int_equal(r.lo, c[i].rlo);
		assert_int_equal(r.hi, c[i].rhi);
		assert_int_equal(r.best_lo, c[i].blo);
		assert_int_equal(r.best_hi, c[i].bhi);
		assert_int_equal(r.pieces, c[i].pieces);
		assert_int_equal(r.bound, (uint64_t)(c[i].rhi - c[i].rlo + 1) / 2);
	}
	{
		HGT_OPTS(hgt_infer_opts, o, .within = true, .within_lo = 5, .within_hi = 4);

		assert_int_equal(hgt_infer_offset(g5, 5, w, 3, 100, 600, &o, &r), -EINVAL);
	}
}

/* Events that no offset can fit: the status says so, with how many disagree. */
static void test_infer_empty(void **state)
{
	const struct hgt_infer_window w[] = { { 100, 110 }, { 200, 210 } };
	/* span [-1000,1000]: 0 gives [-1150,-1001] [100,110] [200,210]; 150 needs c < -1150,
	 * [-50,-40], [50,60] or > 850: nothing. The best of the last set is [100,110] (3
	 * events in the span): at c = 105, 150 -> 255 lies in no window */
	const int64_t g[] = { 0, 100, 150 };
	struct hgt_infer_result r;

	assert_int_equal(hgt_infer_offset(g, 3, w, 2, -1000, 1000, NULL, &r), 0);
	assert_int_equal(r.status, HGT_INFER_EMPTY);
	assert_int_equal(r.events, 3);
	assert_int_equal(r.best, 105);
	assert_int_equal(r.outside, 1);
	/* the extremes of int64 (a hostile caller): an answer, no overflow (UBSan checks) */
	{
		const struct hgt_infer_window x[] = { { INT64_MIN, INT64_MIN + 10 },
						      { -5, 5 },
						      { INT64_MAX - 10, INT64_MAX } };
		const int64_t e[] = { INT64_MIN, -1, 0, INT64_MAX };

		assert_int_equal(hgt_infer_offset(e, 4, x, 3, INT64_MIN, INT64_MAX, NULL, &r), 0);
		assert_int_equal(r.events, 4);
		assert_true(r.status == HGT_INFER_EMPTY || r.status == HGT_INFER_NO_OVERLAP ||
			    r.status == HGT_INFER_OK);
	}
	/* the host's span ends at 20, outside its one window [0,10]: an event at 0 may be
	 * placed in the window (c in [0,10]) or after the span (c >= 21), and only the
	 * window puts it in the span; 20 itself is in the span and in no window */
	{
		const struct hgt_infer_window x[] = { { 0, 10 } };
		const int64_t e[] = { 0 };

		assert_int_equal(hgt_infer_offset(e, 1, x, 1, 0, 20, NULL, &r), 0);
		assert_int_equal(r.status, HGT_INFER_OK);
		assert_int_equal(r.lo, 0);
		assert_int_equal(r.hi, 10);
	}
	/* window [10,19], span [0,20], events 0 and 3: 0 needs c in [10,19]; 3 needs c + 3
	 * in [10,19] (c in [7,16]) or past 20 (c >= 18). c = 17 puts 3 at 20: in the span,
	 * in no window. Left: [10,16] (both in the span) and [18,19] (one: weak): [10,16] */
	{
		const struct hgt_infer_window x[] = { { 10, 19 } };
		const int64_t e[] = { 0, 3 };

		assert_int_equal(hgt_infer_offset(e, 2, x, 1, 0, 20, NULL, &r), 0);
		assert_int_equal(r.status, HGT_INFER_OK);
		assert_int_equal(r.lo, 10);
		assert_int_equal(r.hi, 16);
	}
	/* unsorted events are refused */
	{
		const int64_t bad[] = { 5, 4 };

		assert_int_equal(hgt_infer_offset(bad, 2, w, 2, 100, 210, NULL, &r), -EINVAL);
	}
	/* no events, no windows */
	assert_int_equal(hgt_infer_offset(g, 0, w, 2, 100, 210, NULL, &r), 0);
	assert_int_equal(r.status, HGT_INFER_NO_DATA);
	assert_int_equal(hgt_infer_offset(g, 3, w, 0, 100, 210, NULL, &r), 0);
	assert_int_equal(r.status, HGT_INFER_NO_DATA);
}

/*
 * A random model with a known offset: windows of random length and gaps; events drawn
 * inside the windows (in host time), then shifted by -c. The truth must be inside the
 * bound every time, and with many events the bound is within a few units of the
 * narrowest margin (the closest events to a window's edges).
 */
static void test_infer_random_truth(void **state)
{
	static struct hgt_infer_window w[4000];
	static int64_t g[20000];
	uint64_t x = 0x243f6a8885a308d3ULL;
	int round, worst_bound = 0;

#define RND() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
	for (round = 0; round < 50; round++) {
		int64_t c = (int64_t)(RND() % 2000000000000ULL) - 1000000000000LL, t = 1000000;
		int nw = 0, n = 0;
		struct hgt_infer_result r;

		for (nw = 0; nw < 4000; nw++) {
			t += 200 + (int64_t)(RND() % 20000);
			w[nw].start = t;
			t += 300 + (int64_t)(RND() % 300000);
			w[nw].end = t;
		}
		for (int k = 0; k < nw && n < 20000; k++)
			for (int j = 0; j < 5 && n < 20000; j++) {
				int64_t len = w[k].end - w[k].start;

				if (len < 200)
					continue;
				/* 100 units from the edges at least, like the simulator's margins
				 */
				g[n++] = w[k].start + 100 +
					 (int64_t)(RND() % (uint64_t)(len - 199)) - c;
			}
		for (int i = 1; i < n; i++) /* sort (insertion: mostly in order already) */
			for (int k = i; k > 0 && g[k - 1] > g[k]; k--) {
				int64_t tmp = g[k];

				g[k] = g[k - 1];
				g[k - 1] = tmp;
			}
		assert_int_equal(hgt_infer_offset(g, (size_t)n, w, (size_t)nw, w[0].start,
						  w[nw - 1].end, NULL, &r),
				 0);
		assert_int_equal(r.status, HGT_INFER_OK);
		assert_true(r.lo <= c && c <= r.hi);
		assert_true((uint64_t)(r.estimate > c ? r.estimate - c : c - r.estimate) <=
			    r.bound);
		if ((int)r.bound > worst_bound)
			worst_bound = (int)r.bound;
	}
#undef RND
	print_message(
		"# 50 random models, %d events each: truth inside the bound every time, widest bound %d units\n",
		20000, worst_bound);
	assert_true(worst_bound < 2000);
}

/* hgt__sync_select() of the @n samples (@t, @o, @b) keeps the @nw given (@wt, @wo), with
 * @wb their bound, and counts the same without a place to put them. */
static void check_select(const int64_t *t, const int64_t *o, const uint64_t *b, uint32_t n,
			 const int64_t *wt, const int64_t *wo, uint32_t nw, uint64_t wb)
{
	int64_t kt[8], ko[8];
	uint64_t bound = 7;

	assert_true(n <= 8);
	assert_int_equal(hgt__sync_select(t, o, b, n, kt, ko, &bound), nw);
	assert_memory_equal(kt, wt, sizeof(*wt) * nw);
	assert_memory_equal(ko, wo, sizeof(*wo) * nw);
	assert_int_equal(bound, wb);
	bound = 7;
	assert_int_equal(hgt__sync_select(t, o, b, n, NULL, NULL, &bound), nw);
	assert_int_equal(bound, wb);
}

/* The samples a busy machine measured badly (offsets 8,000 and 20,000 off the true 0,
 * within their bounds of 9,000 and 22,000) are left out; the well-measured four (bounds 30
 * to 120, at most 4x the best) stay, and the bound said is theirs. By hand: at t=20 the
 * line of the kept neighbours (t=10: -3, t=40: 4) says -0.67, and 8,000 is within
 * 9,000 + 40 of it. */
static void test_sync_select_leaves_spikes_out(void **state)
{
	const int64_t t[] = { 0, 10, 20, 30, 40, 50 }, o[] = { 5, -3, 8000, 20000, 4, 2 };
	const uint64_t b[] = { 30, 35, 9000, 22000, 40, 120 };
	const int64_t want_t[] = { 0, 10, 40, 50 }, want_o[] = { 5, -3, 4, 2 };

	(void)state;
	check_select(t, o, b, 6, want_t, want_o, 4, 120); /* 120: 4 x the best 30, kept */
}

/* The offset jumps by 50,000 between t=1 and t=2 while the samples there are poor (bounds
 * 1,000 and 900): the kept ones around them (2 at t=1, 50,001 at t=4) cannot explain
 * them (their line says 16,668 and 33,335 there), so they stay, and so does their bound. */
static void test_sync_select_keeps_a_move(void **state)
{
	const int64_t t[] = { 0, 1, 2, 3, 4 }, o[] = { 0, 2, 50100, 49500, 50001 };
	const uint64_t b[] = { 10, 10, 1000, 900, 10 };

	(void)state;
	check_select(t, o, b, 5, t, o, 5, 1000);
}

/* A poor sample at either end is judged by its one kept neighbour's offset: off it by more
 * than both bounds (first: |700 - 0| > 100 + 10), it stays; within them (last: |110 - 3|
 * <= 100 + 12), it goes. One sample is kept, however poor; none, none, bound 0. */
static void test_sync_select_ends(void **state)
{
	const int64_t t[] = { 0, 1, 2, 3 }, o[] = { 700, 0, 3, 110 };
	const uint64_t b[] = { 100, 10, 12, 100 };
	const int64_t want_t[] = { 0, 1, 2 }, want_o[] = { 700, 0, 3 };

	(void)state;
	check_select(t, o, b, 4, want_t, want_o, 3, 100);
	check_select(t, o, b + 3, 1, t, o, 1, 100);
	check_select(t, o, b, 0, t, o, 0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mul_shr_matches_64bit_formula),
		cmocka_unit_test(test_tsync_interpolate_like_trace_cmd),
		cmocka_unit_test(test_tsync_interpolate_rounds),
		cmocka_unit_test(test_tsync_compat_scaling_as_trace_cmd),
		cmocka_unit_test(test_tsync_step_after_last_sample),
		cmocka_unit_test(test_tsync_cpu_beyond_nr_cpus),
		cmocka_unit_test(test_tsc2nsec_measure_by_hand),
		cmocka_unit_test(test_tsc_forward_by_hand),
		cmocka_unit_test(test_tsc_inverse_is_exact),
		cmocka_unit_test(test_tsync_native_no_wrap),
		cmocka_unit_test(test_ts2secs_after_correction),
		cmocka_unit_test(test_tsc2nsec_then_offset),
		cmocka_unit_test(test_ts2secs_wins_over_tsc2nsec),
		cmocka_unit_test(test_trace_clock_read),
		cmocka_unit_test(test_infer_by_hand),
		cmocka_unit_test(test_infer_within),
		cmocka_unit_test(test_infer_empty),
		cmocka_unit_test(test_infer_random_truth),
		cmocka_unit_test(test_sync_select_leaves_spikes_out),
		cmocka_unit_test(test_sync_select_keeps_a_move),
		cmocka_unit_test(test_sync_select_ends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
