// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target: open any bytes as a trace.dat and read every event of every buffer and
 * CPU, printing each as the report does (hgt__info_text: libtraceevent behind our checks).
 */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include <hgtrace/tracedat.h>

#include "private/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	HGT_OPTS(hgt_open_opts, oo, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	struct hgt_input *in;
	char path[64];
	int fd, b, c;

	fd = memfd_create("fuzz.dat", 0);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	in = hgt_input_open(path, &oo);
	if (in) {
		struct trace_seq s;

		trace_seq_init(&s);
		for (b = 0; b < hgt_input_nr_buffers(in); b++) {
			const struct hgt_buffer *buf = hgt_input_buffer(in, b);

			for (c = 0; c < buf->nr_cpus && c < 64; c++) {
				struct hgt_cursor *cur = hgt_cursor_open(in, b, c);
				struct tep_record rec;
				int n = 0;

				while (cur && hgt_cursor_next(cur, &rec) > 0 && n++ < 100000) {
					struct tep_handle *tep = hgt_input_tep(in);
					size_t len;

					hgt__info_text(NULL, &s, tep,
						       tep_find_event_by_record(tep, &rec), &rec,
						       false, &len);
				}
				hgt_cursor_close(cur);
			}
		}
		trace_seq_destroy(&s);
		hgt_input_close(in);
	}
	close(fd);
	return 0;
}
