// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hgtrace report: parse trace-cmd report's options, hand them to hgt_report().
 */
#include <errno.h>
#include <getopt.h>
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
	struct hgt_report_filter *global = NULL;
	struct hgt_report_input *pub = NULL;
	struct input *ins = NULL;
	int nr_in = 0, nr_global = 0, *cpus = NULL, nr_cpus = 0;
	bool neg = false;
	int c, i, ret = 2;
	long long v;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+hi:F:vtNRq", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			ret = 0;
			goto out;
		case 'i':
			if (add_input(&ins, &nr_in, optarg))
				goto nomem;
			break;
		case 'F':
			if (nr_in ? add_filter(&ins[nr_in - 1].filters, &ins[nr_in - 1].nr_filters,
					       optarg, neg)
				  : add_filter(&global, &nr_global, optarg, neg))
				goto nomem;
			break;
		case 'v':
			neg = true;
			break;
		case 't':
			o.nsec = true;
			break;
		case 'N':
			o.no_plugins = true;
			break;
		case 'R':
			o.raw = true;
			break;
		case 'q':
			o.quiet = true;
			break;
		case OPT_CPU:
			if (parse_cpus(optarg, &cpus, &nr_cpus))
				goto out;
			break;
		case OPT_TS_OFFSET:
			if (!nr_in) {
				fprintf(stderr,
					"hgtrace: report: --ts-offset must come after -i\n");
				goto out;
			}
			if (!parse_ll("--ts-offset", optarg, &v))
				goto out;
			/* As trace-cmd: only from the second input on (never the first file). */
			if (nr_in >= 2) {
				ins[nr_in - 1].pub.has_ts_offset = true;
				ins[nr_in - 1].pub.ts_offset = v;
			}
			break;
		case OPT_TS2SECS:
			if (!parse_ll("--ts2secs", optarg, &v))
				goto out;
			if (v <= 0) {
				fprintf(stderr, "hgtrace: report: --ts2secs '%s': must be > 0\n",
					optarg);
				goto out;
			}
			if (nr_in >= 2)
				ins[nr_in - 1].pub.ts2secs = (uint64_t)v;
			else
				o.ts2secs = (uint64_t)v;
			break;
		case OPT_TS_DIFF:
			o.ts_diff = true;
			break;
		case OPT_RAW_TS:
			o.raw_ts = true;
			break;
		case OPT_NODATE:
			o.nodate = true;
			break;
		case OPT_FIRST:
			o.mode = HGT_REPORT_FIRST_EVENT;
			break;
		case OPT_LAST:
			o.mode = HGT_REPORT_LAST_EVENT;
			break;
		case OPT_STAT:
			o.mode = HGT_REPORT_STAT;
			break;
		case OPT_CPUS:
			o.mode = HGT_REPORT_CPUS;
			break;
		case OPT_UNAME:
			o.mode = HGT_REPORT_UNAME;
			break;
		case OPT_VERSION:
			o.mode = HGT_REPORT_VERSION;
			break;
		case OPT_BOUNDARY:
			o.boundary = true;
			break;
		case OPT_NO_LAT:
			o.no_latency = true;
			break;
		case OPT_TSYNC_COMPAT:
			o.tsync_compat = true;
			break;
		case OPT_NO_SYNC_CHECK:
			o.no_sync_check = true;
			break;
		default:
			usage(stderr);
			goto out;
		}
	}
	for (i = optind; i < argc; i++)
		if (add_input(&ins, &nr_in, argv[i]))
			goto nomem;
	if (!nr_in && add_input(&ins, &nr_in, "trace.dat"))
		goto nomem;
	pub = calloc(nr_in, sizeof(*pub));
	if (!pub)
		goto nomem;
	for (i = 0; i < nr_in; i++) {
		pub[i] = ins[i].pub;
		pub[i].filters = ins[i].filters;
		pub[i].nr_filters = ins[i].nr_filters;
	}
	o.inputs = pub;
	o.nr_inputs = nr_in;
	o.filters = global;
	o.nr_filters = nr_global;
	o.cpus = cpus;
	o.nr_cpus = nr_cpus;
	ret = hgt_report(&o);
	if (ret < 0) {
		cmd_error(strerror(-ret));
		ret = 1;
	}
	goto out;
nomem:
	fprintf(stderr, "hgtrace: report: out of memory\n");
	ret = 1;
out:
	for (i = 0; i < nr_in; i++)
		free(ins[i].filters);
	free(ins);
	free(pub);
	free(global);
	free(cpus);
	return ret;
}
