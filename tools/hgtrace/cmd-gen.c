// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace gen: trace-events files -> header, C file, dtrace provider, tapset, LTTng provider. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hgtrace/output.h>
#include <hgtrace/probegen.h>

#include "cmd.h"

static void gen_usage(FILE *f)
{
	fprintf(f,
		"usage: hgtrace gen --backends LIST --format h|c|d|stp|ust|log-stap|simpletrace-stap\n"
		"                   -o OUT [OPTIONS] EVENTS-FILE...\n"
		"  --backends LIST       nop,log,simple,ftrace,syslog,ust,dtrace (all selected fire)\n"
		"  --group NAME          the group: C names (default: probes)\n"
		"  --provider NAME       DTrace and LTTng provider (default: the group; QEMU: qemu)\n"
		"  --header FILE         c: the header to include (default: OUT with .c -> .h)\n"
		"  --ust-header FILE     the LTTng provider header (default: PROVIDER-ust.h)\n"
		"  --dtrace-header FILE  the header 'dtrace -h' makes (default: GROUP-dtrace.h)\n"
		"  --binary PATH --probe-prefix PREFIX   stp: the program and the tapset prefix\n");
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

int cmd_gen(int argc, char **argv)
{
	static const struct option lo[] = { { "backends", required_argument, 0, 'b' },
					    { "format", required_argument, 0, 'f' },
					    { "group", required_argument, 0, 'g' },
					    { "header", required_argument, 0, 'H' },
					    { "ust-header", required_argument, 0, 'U' },
					    { "dtrace-header", required_argument, 0, 'D' },
					    { "binary", required_argument, 0, 'B' },
					    { "probe-prefix", required_argument, 0, 'P' },
					    { "provider", required_argument, 0, 'R' },
					    { "help", no_argument, 0, 'h' },
					    { 0, 0, 0, 0 } };
	struct hgt_gen_opts o = { .sz = sizeof(o), .group = "probes" };
	const char *out = NULL, *fmt = NULL, *backends = "nop";
	char err[1024], header[1024], ust[256], dt[256];
	struct hgt_newfile *nf = NULL;
	struct hgt_tev_list l = { 0 };
	int c, ret = 1, rc;
	FILE *f;

	while ((c = cmd_getopt(argc, argv, "o:h", lo, gen_usage, &rc)) != -1) {
		switch (c) {
		case 'b':
			backends = optarg;
			break;
		case 'f':
			fmt = optarg;
			break;
		case 'g':
			o.group = optarg;
			break;
		case 'H':
			o.header = optarg;
			break;
		case 'U':
			o.ust_header = optarg;
			break;
		case 'D':
			o.dtrace_header = optarg;
			break;
		case 'B':
			o.binary = optarg;
			break;
		case 'P':
			o.probe_prefix = optarg;
			break;
		case 'R':
			o.provider = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case CMD_OPT_EXIT:
			return rc;
		}
	}
	if (!fmt || !out || optind >= argc) {
		fprintf(stderr, "hgtrace: gen: %s\n",
			!fmt   ? "--format is required"
			: !out ? "-o OUT is required"
			       : "no events file");
		gen_usage(stderr);
		return 2;
	}
	if (hgt_gen_format_parse(fmt, &o.format)) {
		fprintf(stderr,
			"hgtrace: gen: --format: '%s' is not h, c, d, stp, ust, ust-c, log-stap, simpletrace-stap or rs\n",
			fmt);
		return 2;
	}
	if (hgt_gen_backends(backends, &o.backends, err, sizeof(err)) < 0) {
		fprintf(stderr, "hgtrace: gen: %s\n", err);
		return 2;
	}
	if (!o.header) {
		size_t n = strlen(base(out));

		snprintf(header, sizeof(header), "%s", base(out));
		if (n > 2 && !strcmp(header + n - 2, ".c"))
			header[n - 1] = 'h';
		o.header = header;
	}
	snprintf(ust, sizeof(ust), "%s-ust.h", o.provider ? o.provider : o.group);
	snprintf(dt, sizeof(dt), "%s-dtrace.h", o.group);
	if (!o.ust_header)
		o.ust_header = o.format == HGT_GEN_UST ? base(out) : ust;
	if (!o.dtrace_header)
		o.dtrace_header = dt;
	o.out_name = base(out);
	for (int i = optind; i < argc; i++)
		if (hgt_tev_parse(argv[i], &l, err, sizeof(err)) < 0) {
			fprintf(stderr, "hgtrace: gen: %s\n", err);
			goto out;
		}
	f = cmd_out_open("gen", out, &nf);
	if (!f)
		goto out;
	c = hgt_gen(&o, &l, f, err, sizeof(err));
	if (c < 0)
		fprintf(stderr, "hgtrace: gen: %s\n", err);
	c = cmd_out_close("gen", out, f, nf, c >= 0);
	nf = NULL;
	if (c < 0)
		goto out;
	ret = 0;
out:
	hgt_newfile_abort(nf);
	hgt_tev_free(&l);
	return ret;
}
