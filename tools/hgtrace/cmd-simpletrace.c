// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace simpletrace: print a simple-backend file (ours, or QEMU's with its events file). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <hgtrace/probefile.h>

#include "cmd.h"

static void st_usage(FILE *f)
{
	fprintf(f, "usage: hgtrace simpletrace [--raw-ts] [--qemu] [TRACE-EVENTS-ALL] FILE\n"
		   "  prints one line per event: name delta_us pid=N arg=value ...\n"
		   "  --raw-ts   the time stamp in the file's clock instead of the delta\n"
		   "  --qemu     values as QEMU's simpletrace.py prints them (hex, b'strings')\n");
}

int cmd_simpletrace(int argc, char **argv)
{
	static const struct option lo[] = { { "raw-ts", no_argument, 0, 'r' },
					    { "qemu", no_argument, 0, 'q' },
					    { "help", no_argument, 0, 'h' },
					    { 0, 0, 0, 0 } };
	struct hgt_probefile *f;
	struct hgt_probefile_event ev;
	const char *events = NULL, *path;
	char err[1024], args[8192];
	uint64_t last = 0;
	double per_ns = 1.0;
	int c, r, first = 1, raw = 0, no_hz = 0, qemu = 0, rc;

	while ((c = cmd_getopt(argc, argv, "h", lo, st_usage, &rc)) != -1) {
		switch (c) {
		case 'q':
			qemu = 1;
			break;
		case 'r':
			raw = 1;
			break;
		case CMD_OPT_EXIT:
			return rc;
		}
	}
	if (argc - optind == 2)
		events = argv[optind++];
	if (argc - optind != 1) {
		st_usage(stderr);
		return 2;
	}
	path = argv[optind];
	f = hgt_probefile_open(path, events, err, sizeof(err));
	if (!f) {
		fprintf(stderr, "hgtrace: %s\n", err);
		return 1;
	}
	while ((r = hgt_probefile_next(f, &ev)) > 0) {
		if (first && hgt_probefile_clock(f) == HGT_PROBE_CLOCK_TSC) {
			double hz = hgt_probefile_tsc_hz(f);

			per_ns = hz > 0 ? hz / 1e9 : 1.0;
			no_hz = hz <= 0;
		}
		if (first)
			last = ev.ts;
		first = 0;
		if (qemu)
			hgt_probefile_format_qemu(&ev, args, sizeof(args));
		else
			hgt_probefile_format(&ev, args, sizeof(args));
		if (raw)
			printf("%s %" PRIu64 " pid=%u%s%s\n", ev.name, ev.ts, ev.tid,
			       *args ? " " : "", args);
		else
			printf("%s %0.3f pid=%u%s%s\n", ev.name,
			       (double)(int64_t)(ev.ts - last) / per_ns / 1000.0, ev.tid,
			       *args ? " " : "", args);
		last = ev.ts;
	}
	if (r < 0)
		fprintf(stderr, "hgtrace: %s\n", hgt_probefile_error(f));
	else if (no_hz)
		fprintf(stderr,
			"hgtrace: %s: no TSC frequency in the file (it was not closed); deltas are in TSC ticks\n",
			path);
	hgt_probefile_close(f);
	return r < 0 ? 1 : 0;
}
