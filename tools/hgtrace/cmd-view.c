// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hgtrace view: a session (host and guest files, probe files) as one self-contained HTML
 * timeline to open in a browser.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <hgtrace/output.h>
#include <hgtrace/view.h>

#include "cmd.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hgtrace view [-o OUT.html] [--why N | --no-why] [--ts2secs HZ] FILE...\n"
		"  the merged session of FILEs (a host, its guests, probe files) as one HTML\n"
		"  timeline (default OUT: view.html; - for stdout): per CPU its events and tasks,\n"
		"  per vCPU what the host did with it, the worst N guest delays (20) marked\n"
		"  --ts2secs HZ   TSC cycles per second, for x86-tsc traces without TSC2NSEC (default:\n"
		"                 the rate the recorder stored, else the one the timers show)\n");
}

int cmd_view(int argc, char **argv)
{
	enum { O_WHY = 256, O_NOWHY, O_HZ };
	static const struct option lopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "why", required_argument, NULL, O_WHY },
		{ "no-why", no_argument, NULL, O_NOWHY },
		{ "ts2secs", required_argument, NULL, O_HZ },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_view_opts, vo);
	const char *out = "view.html";
	struct hgt_newfile *nf;
	struct stat st;
	FILE *f;
	int c, ret, rc;

	optind = 1;
	while ((c = cmd_getopt(argc, argv, "+o:h", lopts, usage, &rc)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case O_WHY:
			if (cmd_int_arg("view", "--why", optarg, 1, 10000, &vo.why_top))
				return 2;
			break;
		case O_NOWHY:
			vo.why_top = -1;
			break;
		case O_HZ:
			if (cmd_hz_arg("view", optarg, &vo.ts2secs))
				return 2;
			break;
		case CMD_OPT_EXIT:
			return rc;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "hgtrace: view: give at least one trace.dat file\n");
		usage(stderr);
		return 2;
	}
	f = cmd_out_open("view", out, &nf);
	if (!f)
		return 1;
	vo.inputs = (const char *const *)(argv + optind);
	vo.nr_inputs = argc - optind;
	vo.out = f;
	ret = hgt_view_html(&vo);
	if (ret)
		cmd_error("view failed");
	if (cmd_out_close("view", out, f, nf, !ret))
		return 1;
	if (!ret && strcmp(out, "-") && !stat(out, &st))
		fprintf(stderr, "hgtrace: view: wrote %s (%lld bytes): open it in a browser\n", out,
			(long long)st.st_size);
	return ret ? 1 : 0;
}
