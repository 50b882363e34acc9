// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hgtrace report: parse trace-cmd report's options, hand them to hgt_report().
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/report.h>
#include <hgtrace/tracedat.h>

#include "cmd.h"

enum {
	OPT_CPU = 256,
	OPT_TS_OFFSET,
	OPT_TS2SECS,
	OPT_TS_DIFF,
	OPT_RAW_TS,
	OPT_NODATE,
	OPT_FIRST,
	OPT_LAST,
	OPT_STAT,
	OPT_CPUS,
	OPT_UNAME,
	OPT_VERSION,
	OPT_BOUNDARY,
	OPT_NO_LAT,
	OPT_TSYNC_COMPAT,
	OPT_NO_SYNC_CHECK,
};

struct input {
	struct hgt_report_input pub;
	struct hgt_report_filter *filters;
	int nr_filters;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hgtrace report [OPTIONS] [-i FILE]... [FILE]...\n"
		"  -i FILE          input (repeatable; several inputs merge by time). Default trace.dat\n"
		"  -F FILTER        libtraceevent filter; before any -i for every input, after an -i\n"
		"                   for that input only\n"
		"  -v               negate the -F options that follow\n"
		"  -t               nanosecond timestamps\n"
		"  -N               do not load libtraceevent plugins\n"
		"  -R               raw format: field=value instead of the print format\n"
		"  --cpu LIST       only these CPUs (global indexes over all inputs, e.g. 0,2-3)\n"
		"  --ts-offset NS   add NS to the times of the preceding input\n"
		"  --ts2secs HZ     timestamps tick at HZ; before the 2nd input for all, after it for\n"
		"                   the preceding input\n"
		"  --ts-diff        show the time since the previous event\n"
		"  --raw-ts         raw timestamps, no corrections or offsets\n"
		"  --nodate         ignore the DATE option\n"
		"  --first-event, --last-event, --cpus, --stat, --uname, --version\n"
		"                   metadata queries\n"
		"  --boundary       mark the start of every sub-buffer\n"
		"  --no-latency     omit the latency column (trace-cmd < 3.3 line format)\n"
		"  --tsync-compat   map guest time as trace-cmd does (wrong for scaled TSCs)\n"
		"  --no-sync-check  do not print the per-guest sync summary on stderr\n");
}

static int parse_cpus(const char *s, int **cpus, int *n)
{
	const char *p = s;

	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b;

		if (end == p || a < 0)
			goto bad;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || b < a)
				goto bad;
		}
		if (b - a > 65536)
			goto bad;
		for (; a <= b; a++) {
			int *c = realloc(*cpus, sizeof(int) * (*n + 1));

			if (!c)
				return -ENOMEM;
			c[(*n)++] = (int)a;
			*cpus = c;
		}
		p = end;
		if (*p == ',' || *p == ':')
			p++;
		else if (*p)
			goto bad;
	}
	return 0;
bad:
	fprintf(stderr, "hgtrace: report: --cpu '%s': expected a list like 0,2-3\n", s);
	return -EINVAL;
}

static int add_filter(struct hgt_report_filter **list, int *n, const char *expr, bool neg)
{
	struct hgt_report_filter *l = realloc(*list, sizeof(*l) * (*n + 1));

	if (!l)
		return -ENOMEM;
	l[*n].expr = expr;
	l[*n].negate = neg;
	(*n)++;
	*list = l;
	return 0;
}

static int add_input(struct input **ins, int *n, const char *path)
{
	struct input *l = realloc(*ins, sizeof(*l) * (*n + 1));

	if (!l)
		return -ENOMEM;
	memset(&l[*n], 0, sizeof(l[*n]));
	l[*n].pub.path = path;
	(*n)++;
	*ins = l;
	return 0;
}

static bool parse_ll(const char *opt, const char *s, long long *v)
{
	char *end;

	errno = 0;
	*v = strtoll(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "hgtrace: report: %s '%s': expected an integer\n", opt, s);
		return false;
	}
	return true;
}

/* What the command line asked for, beyond struct hgt_report_opts. */
struct report_args {
	struct hgt_report_opts *o;
	struct input *ins; /* -i and the file arguments */
	int nr_in;
	struct hgt_report_filter *global; /* -F before any -i */
	int nr_global;
	int *cpus; /* --cpu */
	int nr_cpus;
	bool neg; /* -v seen: the -F that follow are negated */
};

/* The options without an argument that set a flag or the mode. False for the others. */
static bool flag_opt(int c, struct hgt_report_opts *o)
{
#define FLAG(opt, field)                                     \
	{                                                    \
		opt, offsetof(struct hgt_report_opts, field) \
	}
	static const struct {
		int opt;
		size_t off;
	} flags[] = {
		FLAG('t', nsec),
		FLAG('N', no_plugins),
		FLAG('R', raw),
		FLAG('q', quiet),
		FLAG(OPT_TS_DIFF, ts_diff),
		FLAG(OPT_RAW_TS, raw_ts),
		FLAG(OPT_NODATE, nodate),
		FLAG(OPT_BOUNDARY, boundary),
		FLAG(OPT_NO_LAT, no_latency),
		FLAG(OPT_TSYNC_COMPAT, tsync_compat),
		FLAG(OPT_NO_SYNC_CHECK, no_sync_check),
	};
#undef FLAG
	static const struct {
		int opt;
		enum hgt_report_mode mode;
	} modes[] = {
		{ OPT_FIRST, HGT_REPORT_FIRST_EVENT }, { OPT_LAST, HGT_REPORT_LAST_EVENT },
		{ OPT_STAT, HGT_REPORT_STAT },	       { OPT_CPUS, HGT_REPORT_CPUS },
		{ OPT_UNAME, HGT_REPORT_UNAME },       { OPT_VERSION, HGT_REPORT_VERSION },
	};

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (flags[i].opt == c) {
			*(bool *)((char *)o + flags[i].off) = true;
			return true;
		}
	}
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (modes[i].opt == c) {
			o->mode = modes[i].mode;
			return true;
		}
	}
	return false;
}

/* --ts-offset NS (after an -i) and --ts2secs HZ. Returns 0 or 2 (error said). */
static int time_opt(int c, const char *arg, struct report_args *a, struct hgt_report_opts *o)
{
	struct input *last = a->nr_in ? &a->ins[a->nr_in - 1] : NULL;
	long long v;

	if (c == OPT_TS_OFFSET) {
		if (!last) {
			fprintf(stderr, "hgtrace: report: --ts-offset must come after -i\n");
			return 2;
		}
		if (!parse_ll("--ts-offset", arg, &v))
			return 2;
		/* As trace-cmd: only from the second input on (never the first file). */
		if (a->nr_in >= 2) {
			last->pub.has_ts_offset = true;
			last->pub.ts_offset = v;
		}
		return 0;
	}
	if (!parse_ll("--ts2secs", arg, &v))
		return 2;
	if (v <= 0) {
		fprintf(stderr, "hgtrace: report: --ts2secs '%s': must be > 0\n", arg);
		return 2;
	}
	if (a->nr_in >= 2)
		last->pub.ts2secs = (uint64_t)v;
	else
		o->ts2secs = (uint64_t)v;
	return 0;
}

/* One option of cmd_report() (cmd_parse_opts() calls it). */
static int report_opt(int c, char *arg, void *ctx)
{
	struct report_args *a = ctx;
	struct hgt_report_opts *o = a->o;
	struct input *last = a->nr_in ? &a->ins[a->nr_in - 1] : NULL;

	if (flag_opt(c, o))
		return 0;
	switch (c) {
	case 'i':
		return add_input(&a->ins, &a->nr_in, arg);
	case 'F':
		return last ? add_filter(&last->filters, &last->nr_filters, arg, a->neg)
			    : add_filter(&a->global, &a->nr_global, arg, a->neg);
	case 'v':
		a->neg = true;
		return 0;
	case OPT_CPU:
		return parse_cpus(arg, &a->cpus, &a->nr_cpus) ? 2 : 0;
	case OPT_TS_OFFSET:
	case OPT_TS2SECS:
		return time_opt(c, arg, a, o);
	}
	return 2;
}

/* The inputs and the options, handed to hgt_report(). Returns the exit status. */
static int report_run(struct report_args *a, struct hgt_report_opts *o)
{
	struct hgt_report_input *pub = calloc((size_t)a->nr_in, sizeof(*pub));
	int ret;

	if (!pub) {
		fprintf(stderr, "hgtrace: report: out of memory\n");
		return 1;
	}
	for (int i = 0; i < a->nr_in; i++) {
		pub[i] = a->ins[i].pub;
		pub[i].filters = a->ins[i].filters;
		pub[i].nr_filters = a->ins[i].nr_filters;
	}
	o->inputs = pub;
	o->nr_inputs = a->nr_in;
	o->filters = a->global;
	o->nr_filters = a->nr_global;
	o->cpus = a->cpus;
	o->nr_cpus = a->nr_cpus;
	ret = hgt_report(o);
	if (ret < 0) {
		cmd_end_if_reader_gone(ret);
		cmd_error(strerror(-ret));
		ret = 1;
	}
	free(pub);
	return ret;
}

int cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "ts-offset", required_argument, NULL, OPT_TS_OFFSET },
		{ "ts2secs", required_argument, NULL, OPT_TS2SECS },
		{ "ts-diff", no_argument, NULL, OPT_TS_DIFF },
		{ "raw-ts", no_argument, NULL, OPT_RAW_TS },
		{ "nodate", no_argument, NULL, OPT_NODATE },
		{ "first-event", no_argument, NULL, OPT_FIRST },
		{ "last-event", no_argument, NULL, OPT_LAST },
		{ "stat", no_argument, NULL, OPT_STAT },
		{ "cpus", no_argument, NULL, OPT_CPUS },
		{ "uname", no_argument, NULL, OPT_UNAME },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "boundary", no_argument, NULL, OPT_BOUNDARY },
		{ "no-latency", no_argument, NULL, OPT_NO_LAT },
		{ "tsync-compat", no_argument, NULL, OPT_TSYNC_COMPAT },
		{ "no-sync-check", no_argument, NULL, OPT_NO_SYNC_CHECK },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_report_opts, o);
	struct report_args a = { .o = &o };
	int i, ret = 2, err = 0;

	if (cmd_parse_opts(argc, argv, "+hi:F:vtNRq", longopts, usage, "report", report_opt, &a,
			   &ret))
		goto out;
	for (i = optind; !err && i < argc; i++)
		err = add_input(&a.ins, &a.nr_in, argv[i]);
	if (!err && !a.nr_in)
		err = add_input(&a.ins, &a.nr_in, "trace.dat");
	if (err == -ENOMEM) {
		fprintf(stderr, "hgtrace: report: out of memory\n");
		ret = 1;
	}
	if (!err)
		ret = report_run(&a, &o);
out:
	for (i = 0; i < a.nr_in; i++)
		free(a.ins[i].filters);
	free(a.ins);
	free(a.global);
	free(a.cpus);
	return ret;
}
