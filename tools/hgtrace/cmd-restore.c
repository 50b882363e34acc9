// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace restore: finish a recording that was cut (killed recorder, closed terminal). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/infer.h>
#include <hgtrace/output.h>
#include <hgtrace/record.h>

#include "cmd.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: hgtrace restore [-o OUT] [--compression none|zlib|zstd] FILE\n"
		   "  writes FILE (or OUT) from the cut recording in FILE.recording/: every whole\n"
		   "  page that reached the disk, then removes the directory\n");
}

int cmd_restore(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "compression", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_restore_opts, o, .compression = HGT_COMPRESS_ZSTD, .log = stderr);
	int c, rc;

	while ((c = cmd_getopt(argc, argv, "+o:h", lopts, usage, &rc)) != -1) {
		switch (c) {
		case 'o':
			o.output = optarg;
			break;
		case 'c':
			if (cmd_compression("restore", optarg, &o.compression))
				return 2;
			break;
		case CMD_OPT_EXIT:
			return rc;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (hgt_record_restore(argv[optind], &o)) {
		cmd_error("restore failed");
		return 1;
	}
	{
		/* a session's pair, once both are restored: refined as its end would have */
		HGT_OPTS(hgt_refine_opts, ro, .log = stderr);

		if (hgt_sync_refine_beside(o.output ? o.output : argv[optind], &ro) < 0)
			cmd_error("restore: the pair's sync was not refined");
	}
	return 0;
}
