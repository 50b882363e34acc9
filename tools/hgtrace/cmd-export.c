// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hgtrace export: a session (host and guest files) for a timeline viewer: the Trace Event
 * Format (JSON) that ui.perfetto.dev and chrome://tracing open.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <hgtrace/export.h>
#include <hgtrace/output.h>

#include "cmd.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hgtrace export [--format chrome-json|perfetto] [--ts2secs HZ] [-o OUT] FILE...\n"
		"  the merged session of FILEs (a host and its attached guests) for\n"
		"  ui.perfetto.dev and chrome://tracing (JSON), or Perfetto's protobuf trace:\n"
		"  each file a process, each CPU threads; events as instants, running tasks and\n"
		"  guest mode as slices; times in ns\n"
		"  --ts2secs HZ   TSC cycles per second, for x86-tsc traces without TSC2NSEC (default:\n"
		"                 the rate the recorder stored, else the one the timers show)\n");
}

int cmd_export(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "ts2secs", required_argument, NULL, 'z' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t hz = 0;
	const char *out = NULL;
	bool perfetto = false;
	struct hgt_newfile *nf;
	FILE *f;
	int c, ret, rc;

	optind = 1;
	while ((c = cmd_getopt(argc, argv, "+o:h", lopts, usage, &rc)) != -1) {
		switch (c) {
		case 'f':
			perfetto = !strcmp(optarg, "perfetto");
			if (!perfetto && strcmp(optarg, "chrome-json")) {
				fprintf(stderr,
					"hgtrace: export: --format '%s': chrome-json or perfetto\n",
					optarg);
				return 2;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'z':
			if (cmd_hz_arg("export", optarg, &hz))
				return 2;
			break;
		case CMD_OPT_EXIT:
			return rc;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "hgtrace: export: give at least one trace.dat file\n");
		usage(stderr);
		return 2;
	}
	f = cmd_out_open("export", out, &nf);
	if (!f)
		return 1;
	{
		HGT_OPTS(hgt_export_opts, eo, .inputs = (const char *const *)(argv + optind),
			 .nr_inputs = argc - optind, .out = f, .ts2secs = hz);

		ret = perfetto ? hgt_export_perfetto(&eo) : hgt_export_chrome(&eo);
	}
	if (ret && (!out || !strcmp(out, "-")))
		cmd_end_if_reader_gone(ret);
	if (ret)
		cmd_error("export failed");
	return cmd_out_close("export", out, f, nf, !ret) ? 1 : 0;
}
