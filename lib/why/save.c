// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A delay's window saved as a pair: each input's pages around it (hgt_tracedat_convert()
 * with a window), its metadata and options whole, so the host's GUEST option and the
 * guests' TIME_SHIFT still tie the saved files as they tied the originals.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/output.h>
#include <hgtrace/why.h>

#include "../common/common-local.h"
#include "../private/tracedat.h"

/* The window in the files' own report time: why's ns back to cycles for a file timed in
 * TSC cycles it converted at @hz (rounded inward: the sync check decides only what is
 * surely within it). */
struct span {
	uint64_t from, to;
};

static uint64_t to_file_time(uint64_t ns, uint64_t hz, bool up)
{
	unsigned __int128 c;

	if (!hz)
		return ns;
	c = ((unsigned __int128)ns * hz + (up ? 999999999u : 0)) / 1000000000u;
	return c > UINT64_MAX ? UINT64_MAX : (uint64_t)c;
}

static int window_option(void *ctx, struct hgt_output *out)
{
	const struct span *w = ctx;
	char line[96];
	int n = snprintf(line, sizeof(line), HGT__WINDOW_TAG "%llu %llu\n",
			 (unsigned long long)w->from, (unsigned long long)w->to);

	return hgt_output_add_option(out, HGT_OPT_CPUSTAT, line, (uint32_t)n);
}

/* @prefix-K.dat for the host (or the first input without one), @prefix-K-BASE.dat for each
 * other input (BASE: its file name without directory and ".dat"). */
static char *save_name(const char *prefix, int k, const char *input, bool host)
{
	const char *base = strrchr(input, '/');
	size_t n;
	char *p;

	base = base ? base + 1 : input;
	n = strlen(base);
	if (n > 4 && !strcmp(base + n - 4, ".dat"))
		n -= 4;
	if (host)
		return asprintf(&p, "%s-%d.dat", prefix, k) < 0 ? NULL : p;
	return asprintf(&p, "%s-%d-%.*s.dat", prefix, k, (int)n, base) < 0 ? NULL : p;
}

/**
 * hgt_why_save - write delay @k (0-based) of @r as files @o->prefix-(k+1)[-BASE].dat: of
 * each input, the pages that may hold a time within @o->around_ns of the delay.
 */
int hgt_why_save(const struct hgt_why_result *r, int k, const struct hgt_why_save_opts *opts)
{
	struct hgt_why_save_opts o = { 0 };
	const struct hgt_why_delay *d;
	int ret = 0;

	if (!r || !opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(o))
		return -EINVAL;
	memcpy(&o, opts, opts->sz);
	if (k < 0 || k >= r->nr || !o.prefix || !o.inputs || o.nr_inputs < 1)
		return -EINVAL;
	d = &r->d[k];
	for (int i = 0; i < o.nr_inputs && !ret; i++) {
		HGT_OPTS(hgt_open_opts, oo, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
		HGT_OPTS(hgt_clock_opts, clk, .ts2secs = r->tsc_hz);
		HGT_OPTS(hgt_convert_opts, co, .version = 7, .compression = HGT_COMPRESS_ZSTD,
			 .window = true, .clock = &clk);
		bool host = r->host ? !strcmp(o.inputs[i], r->host) : i == 0;
		char *name = save_name(o.prefix, k + 1, o.inputs[i], host);
		struct hgt_input *in;

		if (!name)
			return -ENOMEM;
		struct span w;
		struct hgt__convert_src src = { .more_options = window_option, .ctx = &w };

		co.from = d->from_ns > o.around_ns ? d->from_ns - o.around_ns : 0;
		co.to = d->to_ns + o.around_ns < d->to_ns ? UINT64_MAX : d->to_ns + o.around_ns;
		w.from = to_file_time(co.from, r->tsc_hz, true);
		w.to = to_file_time(co.to, r->tsc_hz, false);
		in = hgt_input_open(o.inputs[i], &oo);
		ret = in ? hgt__convert(in, name, &co, &src) : -errno;
		if (!ret && o.log)
			fprintf(o.log, "hgtrace why: delay %d: saved %s\n", k + 1, name);
		hgt_input_close(in);
		free(name);
	}
	return ret;
}
