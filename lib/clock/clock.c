// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Timestamp pipeline of one input (trace-cmd's timestamp_calc()): --raw-ts, --ts2secs or
 * TSC2NSEC, then DATE + OFFSET + --ts-offset.
 */
#include <errno.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include <hgtrace/clock.h>
#include <hgtrace/peer.h>
#include <hgtrace/output.h>
#include <hgtrace/tracedat.h>

#include "../private/tracedat.h"

/**
 * hgt_clock_init - set up the conversion of @in's timestamps.
 */
int hgt_clock_init(struct hgt_clock *clk, const struct hgt_input *in,
		   const struct hgt_clock_opts *opts)
{
	struct hgt_clock_opts o = { 0 };
	int64_t v;

	if (opts) {
		if (opts->sz < sizeof(size_t) || opts->sz > sizeof(o))
			return -EINVAL;
		memcpy(&o, opts, opts->sz);
	}
	memset(clk, 0, sizeof(*clk));
	clk->raw = o.raw_ts;
	if (o.ts2secs)
		clk->ts2secs = 1e9 / (double)o.ts2secs;
	hgt_input_tsc2nsec(in, &clk->tsc_mult, &clk->tsc_shift, NULL);
	if (o.has_ts_offset)
		clk->offset = o.ts_offset;
	if (!o.no_date && hgt_input_date_offset(in, &v))
		clk->offset += v;
	if (hgt_input_offset_option(in, &v))
		clk->offset += v;
	if (!o.no_tsync && !o.raw_ts) {
		const struct hgt_time_shift *t = hgt_input_time_shift(in);

		/* no CPUs: trace-cmd applies no correction at all */
		if (t && t->nr_cpus > 0)
			clk->tsync = t;
		clk->tsync_compat = o.tsync_compat;
	}
	return 0;
}

void hgt_clock_add_offset(struct hgt_clock *clk, int64_t ns)
{
	clk->offset = (int64_t)((uint64_t)clk->offset + (uint64_t)ns);
}

uint64_t hgt_tsc_guest_to_host(uint64_t guest, uint64_t ratio, unsigned int frac,
			       int64_t tsc_offset)
{
	uint64_t x = guest - (uint64_t)tsc_offset;
	unsigned __int128 num;

	if (!ratio || frac > 63 || ratio == (1ULL << frac))
		return x;
	num = (unsigned __int128)x << frac;
	return (uint64_t)((num + ratio - 1) / ratio);
}

/* Latest sample at or before @ts (sample 0 before the first). */
static uint32_t step_index(const struct hgt_time_shift_cpu *c, int64_t ts)
{
	uint32_t lo = 0, hi = c->count;

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->time[mid] <= ts)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the sample pair trace-cmd uses, (i, i + 1): the step sample, kept off the end. */
static uint32_t pair_index(const struct hgt_time_shift_cpu *c, int64_t ts)
{
	uint32_t i = step_index(c, ts);

	return i > c->count - 2 ? c->count - 2 : i;
}

static uint64_t compat_convert(const struct hgt_time_shift *t, const struct hgt_time_shift_cpu *c,
			       uint64_t ts)
{
	uint32_t i;
	int64_t tscor;

	if (c->count == 1)
		return ts + (uint64_t)c->offset[0];
	i = pair_index(c, (int64_t)ts);
	if (t->flags & HGT_TSYNC_INTERPOLATE) {
		int64_t delta = c->time[i + 1] - c->time[i];
		/* trace-cmd's signed 64-bit arithmetic, wrapping where it wraps */
		uint64_t prod = (uint64_t)((int64_t)ts - c->time[i]) *
				(uint64_t)(c->offset[i + 1] - c->offset[i]);

		tscor = delta ? c->offset[i] + ((int64_t)(prod + (uint64_t)(delta / 2))) / delta
			      : c->offset[i];
	} else {
		tscor = c->offset[i];
	}
	ts = (ts * (uint64_t)c->scaling[i]) >> (c->frac[i] & 63);
	return ts + (uint64_t)tscor;
}

static uint64_t native_convert(const struct hgt_time_shift *t, const struct hgt_time_shift_cpu *c,
			       uint64_t ts)
{
	uint32_t i;
	int64_t off;

	if (c->count >= 2 && (t->flags & HGT_TSYNC_INTERPOLATE)) {
		__int128 num, delta;

		i = pair_index(c, (int64_t)ts);
		delta = (__int128)c->time[i + 1] - c->time[i];
		num = ((__int128)(int64_t)ts - c->time[i]) *
		      ((__int128)c->offset[i + 1] - c->offset[i]);
		off = delta ? (int64_t)(c->offset[i] + (num + delta / 2) / delta) : c->offset[i];
	} else {
		i = step_index(c, (int64_t)ts);
		off = c->offset[i];
	}
	return hgt_tsc_guest_to_host(ts, (uint64_t)c->scaling[i], (unsigned int)c->frac[i], -off);
}

uint64_t hgt_clock_guest_to_host(const struct hgt_clock *clk, uint64_t ts, int cpu)
{
	const struct hgt_time_shift *t = clk->tsync;
	const struct hgt_time_shift_cpu *c;

	if (!t || cpu < 0 || cpu >= t->nr_cpus)
		return ts;
	c = &t->cpus[cpu];
	if (!c->count)
		return ts;
	return clk->tsync_compat ? compat_convert(t, c, ts) : native_convert(t, c, ts);
}

/**
 * hgt__mark_whole_span - append to @host the span in which every CPU that recorded anything
 * has its records, as the window a saved delay's files carry (HGT__WINDOW_TAG).
 */
int hgt__mark_whole_span(const char *host)
{
	HGT_OPTS(hgt_open_opts, oo, .flags = HGT_OPEN_QUIET | HGT_OPEN_NO_PLUGINS);
	struct hgt_input *in = hgt_input_open(host, &oo);
	uint64_t lo = 0, hi = UINT64_MAX;
	struct hgt_clock clk;
	int top, ret;

	if (!in)
		return -errno;
	top = hgt_input_top_buffer(in);
	ret = top < 0 ? -EINVAL : hgt_clock_init(&clk, in, NULL);
	for (int c = 0; !ret && c < hgt_input_buffer(in, top)->nr_cpus; c++) {
		struct hgt_cursor *cu = hgt_cursor_open(in, top, c);
		struct tep_record rec;
		uint64_t first = 0, last = 0;
		bool any = false;

		while (cu && hgt_cursor_next(cu, &rec) > 0) {
			last = hgt_clock_convert(&clk, rec.ts, c);
			if (!any)
				first = last;
			any = true;
		}
		hgt_cursor_close(cu);
		if (any && first > lo)
			lo = first;
		if (any && last < hi)
			hi = last;
	}
	if (!ret && lo < hi && hi != UINT64_MAX) {
		char line[96];
		int n = snprintf(line, sizeof(line), HGT__WINDOW_TAG "%llu %llu\n",
				 (unsigned long long)lo, (unsigned long long)hi);
		struct hgt_option_blob ob = { HGT_OPT_CPUSTAT, (uint32_t)n, line };

		hgt_input_close(in);
		return hgt_tracedat_append_options(host, &ob, 1);
	}
	hgt_input_close(in);
	return ret;
}
