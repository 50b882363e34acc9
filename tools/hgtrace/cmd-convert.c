// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace convert: rewrite a trace.dat in another file version or compression. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/output.h>
#include <hgtrace/tracedat.h>

#include "cmd.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: hgtrace convert [-i IN] -o OUT [--file-version 6|7]\n"
		   "                       [--compression none|zlib|zstd|any] [IN]\n"
		   "  rewrites IN (default trace.dat) as OUT; events are copied unchanged\n");
}

int cmd_convert(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "file-version", required_argument, NULL, 'V' },
		{ "compression", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_convert_opts, co, .version = 7, .compression = HGT_COMPRESS_ZSTD);
	HGT_OPTS(hgt_open_opts, oo, .flags = HGT_OPEN_NO_PLUGINS);
	const char *in_path = NULL, *out_path = NULL;
	struct hgt_input *in;
	bool comp_given = false;
	int c, ret, rc;

	while ((c = cmd_getopt(argc, argv, "+i:o:h", lopts, usage, &rc)) != -1) {
		switch (c) {
		case 'i':
			in_path = optarg;
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'V': {
			long long v;

			if (cmd_num_arg("convert", "--file-version", optarg, 6, 7, "6 or 7", &v))
				return 2;
			co.version = (int)v;
			break;
		}
		case 'c':
			if (cmd_compression("convert", optarg, &co.compression))
				return 2;
			comp_given = true;
			break;
		case CMD_OPT_EXIT:
			return rc;
		}
	}
	if (optind < argc && !in_path)
		in_path = argv[optind++];
	if (optind < argc || !out_path) {
		usage(stderr);
		return 2;
	}
	if (!in_path)
		in_path = "trace.dat";
	if (co.version == 6) {
		if (comp_given && co.compression != HGT_COMPRESS_NONE) {
			fprintf(stderr, "hgtrace: convert: version 6 files cannot be compressed\n");
			return 2;
		}
		co.compression = HGT_COMPRESS_NONE;
	}
	in = hgt_input_open(in_path, &oo);
	if (!in) {
		cmd_error("cannot open the input");
		return 1;
	}
	ret = hgt_tracedat_convert(in, out_path, &co);
	if (ret)
		cmd_error("convert failed");
	hgt_input_close(in);
	return ret ? 1 : 0;
}
