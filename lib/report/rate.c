// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The rate that makes an x86-tsc session's cycles ns for why, view and export. The report
 * shows cycles, as trace-cmd's does; these three show ns: at --ts2secs HZ when given, else
 * at the rate the recorder stored (hgtrace record -C x86-tsc: the kernel's TSC2NSEC or the
 * rate measured against CLOCK_MONOTONIC_RAW), else at the rate the trace itself shows
 * (hrtimer_expire_entry's "now", CLOCK_MONOTONIC ns, against the timestamps).
 */
#include <stdint.h>

#include <traceevent/event-parse.h>

#include <hgtrace/clock.h>
#include <hgtrace/tracedat.h>

#include "report-local.h"
#include "../clock/clock-local.h"
#include "../merge/merge-local.h"

/* The rate of @in's timer expiries (0: under 10 ms of them); @span gets their span (ns). */
static double timers_ns_per_tick(struct hgt_input *in, const struct hgt_clock *clk, double *span)
{
	struct tep_handle *tep = hgt_input_tep(in);
	struct tep_event *ev = tep_find_event_by_name(tep, "timer", "hrtimer_expire_entry");
	struct tep_format_field *now = ev ? tep_find_field(ev, "now") : NULL;
	uint64_t t0 = UINT64_MAX, t1 = 0, n0 = 0, n1 = 0;

	*span = 0;
	for (int c = 0; now && c < hgt__top_cpus(in); c++) {
		struct hgt_cursor *cur = hgt_cursor_open(in, hgt_input_top_buffer(in), c);
		struct tep_record rec;

		while (cur && hgt_cursor_next(cur, &rec) > 0) {
			uint64_t ts;

			if (tep_data_type(tep, &rec) != ev->id)
				continue;
			ts = hgt_clock_convert(clk, rec.ts, c);
			if (ts < t0) {
				t0 = ts;
				n0 = hgt__field_num(now, &rec);
			}
			if (ts > t1) {
				t1 = ts;
				n1 = hgt__field_num(now, &rec);
			}
		}
		hgt_cursor_close(cur);
	}
	if (t1 <= t0 || n1 <= n0)
		return 0;
	*span = (double)(n1 - n0);
	return *span / (double)(t1 - t0);
}

/**
 * hgt__tsc_rate - the rate (Hz) for inputs @in[0..n-1] (their clocks @clk) whose base
 * @in[base] is timed in TSC cycles: @given if nonzero, else the one @in[base]'s recorder
 * stored, else the one the widest span (10 ms at least) of any input's timers shows. 0
 * when the base is timed in ns already (or raw), or when nothing gives a rate (@how then
 * says so). @how gets where the rate came from.
 */
uint64_t hgt__tsc_rate(struct hgt_input *const *in, const struct hgt_clock *clk, int n, int base,
		       uint64_t given, const char **how)
{
	double best = 0, ns_per_tick = 0;
	uint64_t hz;

	*how = "";
	if (hgt_input_in_usecs(in[base]) || clk[base].raw || clk[base].ts2secs != 0 ||
	    clk[base].tsc_mult)
		return 0;
	if (given) {
		*how = "--ts2secs";
		return given;
	}
	if (hgt__stored_tsc_hz(in[base], &hz)) {
		*how = "the recorder's";
		return hz;
	}
	for (int i = 0; i < n; i++) {
		double span, r = timers_ns_per_tick(in[i], &clk[i], &span);

		if (r > 0 && span > best) {
			best = span;
			ns_per_tick = r;
		}
	}
	if (best < 1e7 || ns_per_tick <= 0) {
		*how = "its times are TSC cycles (no TSC2NSEC), no rate was stored with them and no 10 ms of timer expiries give one";
		return 0;
	}
	*how = "the timers'";
	return (uint64_t)(1e9 / ns_per_tick + 0.5);
}
