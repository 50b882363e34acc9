// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace sync-check: the containment check of an attached host + guests, on its own. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <hgtrace/sync.h>
#include <hgtrace/tracedat.h>

#include "cmd.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hgtrace sync-check HOST GUEST...\n"
		"  checks that every guest event lies inside its vCPU thread's guest windows on\n"
		"  the host (kvm_entry..kvm_exit, or sched_switch running intervals), and per\n"
		"  guest CPU which offsets fit all its events, against the stored ones.\n"
		"  The last line is the verdict: consistent, UNCHECKED, INCONSISTENT or NOT SYNCED.\n"
		"  Exit status 0: consistent; 1: not (or an error); 2: usage.\n");
}

int cmd_sync_check(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_open_opts, oo, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	struct hgt_input **in = NULL;
	int c, n = 0, ret = 2, rc;
	enum hgt_sync_verdict v = HGT_SYNC_CONSISTENT;

	optind = 1;
	while ((c = cmd_getopt(argc, argv, "+h", lopts, usage, &rc)) != -1)
		if (c == CMD_OPT_EXIT)
			return rc;
	if (argc - optind < 2) {
		usage(stderr);
		return 2;
	}
	in = calloc((size_t)(argc - optind), sizeof(*in));
	if (!in) {
		fprintf(stderr, "hgtrace: sync-check: out of memory\n");
		return 1;
	}
	ret = 1;
	for (int i = optind; i < argc; i++) {
		in[n] = hgt_input_open(argv[i], &oo);
		if (!in[n]) {
			cmd_error("sync-check: cannot open the file");
			goto out;
		}
		n++;
	}
	if (hgt_sync_check_files(in, n, stdout, &v)) {
		cmd_error("sync-check failed");
		goto out;
	}
	printf("hgtrace: sync check: %s\n", hgt_sync_verdict_name(v));
	ret = v == HGT_SYNC_CONSISTENT ? 0 : 1;
out:
	for (int i = 0; i < n; i++)
		hgt_input_close(in[i]);
	free(in);
	return ret;
}
