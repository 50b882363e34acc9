// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The generator alone, built first: libhgtrace's own probes (lib/transport/trace-events)
 * are generated with it, so the library builds from lib/ alone. The user's command is
 * hgtrace gen (tools/hgtrace/cmd-gen.c), over the same functions.
 *
 * Usage: hgtrace-probegen --backends LIST --group NAME --format h|c -o OUT EVENTS-FILE...
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <hgtrace/probegen.h>

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* The events of @files as @o says, into @out (written whole or not at all). */
static int generate(struct hgt_gen_opts *o, char **files, int n, const char *out)
{
	struct hgt_tev_list l = { 0 };
	char err[1024], tmp[4096];
	int ret = 0;
	FILE *f;

	for (int i = 0; i < n && !ret; i++)
		ret = hgt_tev_parse(files[i], &l, err, sizeof(err));
	snprintf(tmp, sizeof(tmp), "%s.tmp", out);
	f = ret ? NULL : fopen(tmp, "w");
	if (!ret && !f)
		snprintf(err, sizeof(err), "%s: cannot write", tmp);
	if (f)
		ret = hgt_gen(o, &l, f, err, sizeof(err));
	if (f && (fclose(f) || ret))
		ret = ret ? ret : -1;
	if (!ret && rename(tmp, out))
		ret = -1;
	if (ret) {
		remove(tmp);
		fprintf(stderr, "hgtrace-probegen: %s\n", f ? err : err[0] ? err : out);
	}
	hgt_tev_free(&l);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "backends", required_argument, 0, 'b' },
					    { "group", required_argument, 0, 'g' },
					    { "format", required_argument, 0, 'f' },
					    { 0, 0, 0, 0 } };
	struct hgt_gen_opts o = { .sz = sizeof(o), .group = "probes" };
	const char *out = NULL;
	char err[256], header[1024];
	int c;

	while ((c = getopt_long(argc, argv, "o:", lo, NULL)) != -1) {
		if (c == 'b' && hgt_gen_backends(optarg, &o.backends, err, sizeof(err)) < 0) {
			fprintf(stderr, "hgtrace-probegen: %s\n", err);
			return 2;
		} else if (c == 'g') {
			o.group = optarg;
		} else if (c == 'f' && hgt_gen_format_parse(optarg, &o.format)) {
			fprintf(stderr, "hgtrace-probegen: --format '%s': h or c\n", optarg);
			return 2;
		} else if (c == 'o') {
			out = optarg;
		} else if (c != 'b' && c != 'f') {
			return 2;
		}
	}
	if (!out || optind >= argc) {
		fprintf(stderr,
			"usage: hgtrace-probegen --backends LIST --group NAME --format h|c -o OUT EVENTS-FILE...\n");
		return 2;
	}
	/* the C file includes the header of the same name */
	snprintf(header, sizeof(header), "%s", base(out));
	if (strlen(header) > 2 && !strcmp(header + strlen(header) - 2, ".c"))
		header[strlen(header) - 1] = 'h';
	o.header = header;
	o.out_name = base(out);
	return generate(&o, argv + optind, argc - optind, out);
}
