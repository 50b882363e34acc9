// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace reset: remove the tracefs instances killed hgtrace recorders left behind. */
#include <getopt.h>
#include <stdio.h>

#include <hgtrace/record.h>

#include "cmd.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: hgtrace reset\n"
		   "  removes the tracefs instances hgtrace created whose recorder no longer\n"
		   "  runs (they keep tracing otherwise); other tools' instances are untouched\n");
}

int cmd_reset(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, n, rc;

	while ((c = cmd_getopt(argc, argv, "+h", lopts, usage, &rc)) != -1)
		if (c == CMD_OPT_EXIT)
			return rc;
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	n = hgt_record_reset(stderr);
	if (n < 0) {
		cmd_error("reset failed");
		return 1;
	}
	printf("hgtrace: reset: %d instance%s removed\n", n, n == 1 ? "" : "s");
	return 0;
}
