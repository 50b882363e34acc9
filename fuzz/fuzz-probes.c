// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for the userspace-probe inputs: any bytes as a simple-backend file
 * (read to the end, every event formatted), and as a trace-events file (parsed, and on
 * success generated in every format).
 */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include <hgtrace/probefile.h>
#include <hgtrace/probegen.h>
#include <hgtrace/probes.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int as_file(const uint8_t *data, size_t size, char *path, size_t n)
{
	int fd = memfd_create("fuzz", 0);

	if (fd < 0)
		return -1;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	snprintf(path, n, "/proc/self/fd/%d", fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[512], buf[8192];
	int fd = as_file(data, size, path, sizeof(path));
	struct hgt_probefile *f;
	struct hgt_tev_list l = { 0 };

	if (fd < 0)
		return 0;
	f = hgt_probefile_open(path, NULL, err, sizeof(err));
	if (f) {
		struct hgt_probefile_event ev;

		while (hgt_probefile_next(f, &ev) > 0)
			hgt_probefile_format(&ev, buf, sizeof(buf));
		hgt_probefile_close(f);
	}
	if (hgt_tev_parse(path, &l, err, sizeof(err)) == 0) {
		for (int fmt = HGT_GEN_H; fmt <= HGT_GEN_UST; fmt++) {
			struct hgt_gen_opts o = { .sz = sizeof(o),
						  .format = fmt,
						  .backends = 0x3f,
						  .group = "fz",
						  .out_name = "fz",
						  .header = "fz.h",
						  .ust_header = "fz-ust.h",
						  .dtrace_header = "fz-dtrace.h",
						  .binary = "/bin/fz",
						  .probe_prefix = "fz" };
			FILE *out = fopen("/dev/null", "w");

			if (out) {
				hgt_gen(&o, &l, out, err, sizeof(err));
				fclose(out);
			}
		}
	}
	hgt_tev_free(&l);
	close(fd);
	return 0;
}
