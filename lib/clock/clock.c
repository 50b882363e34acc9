// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Timestamp pipeline of one input (trace-cmd's timestamp_calc()): --raw-ts, --ts2secs or
 * TSC2NSEC, then DATE + OFFSET + --ts-offset.
 */
#include <errno.h>
#include <string.h>

#include <hgtrace/clock.h>
#include <hgtrace/tracedat.h>

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
	return 0;
}

void hgt_clock_add_offset(struct hgt_clock *clk, int64_t ns)
{
	clk->offset = (int64_t)((uint64_t)clk->offset + (uint64_t)ns);
}
