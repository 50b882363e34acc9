// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Event formats, parsed by libtraceevent behind a guard.
 *
 * libtraceevent 1.7's tep_parse_event() dereferences NULL on some damaged format texts
 * (found by our fuzzer). A file must never crash us, so every format of a file is first
 * parsed in a forked child with a throw-away tep handle; a format the child dies on (or
 * hangs on) is reported and skipped, and only the others are parsed for real. One fork per
 * file, whatever the number of formats (a child that dies restarts after the culprit).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include "tracedat-local.h"

#define MAX_BAD_FORMATS 64
#define PROBE_SECONDS 20

struct hgt__format {
	char *system;
	char *text;
	uint64_t size;
	uint64_t where; /* file offset of the format (or of its section) */
	bool bad;
};

/**
 * hgt__format_add - keep one format text (@text is taken over) until hgt__formats_parse().
 */
int hgt__format_add(struct hgt_input *in, const char *system, char *text, uint64_t size,
		    uint64_t where)
{
	struct hgt__format *n;

	if (in->nr_formats == in->max_formats) {
		int m = in->max_formats ? 2 * in->max_formats : 64;

		n = realloc(in->formats, sizeof(*n) * (size_t)m);
		if (!n)
			return -ENOMEM;
		in->formats = n;
		in->max_formats = m;
	}
	n = &in->formats[in->nr_formats];
	n->system = strdup(system);
	if (!n->system)
		return -ENOMEM;
	n->text = text;
	n->size = size;
	n->where = where;
	n->bad = false;
	in->nr_formats++;
	return 0;
}

static void write_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(3);
		p = (const char *)p + w;
		n -= (size_t)w;
	}
}

/* Child: parse formats from @start, announcing each index before parsing it. */
static void probe_child(struct hgt_input *in, int start, int fd)
{
	struct tep_handle *tep = tep_alloc();
	int devnull = open("/dev/null", O_WRONLY);
	int i, done = -1;

	if (devnull >= 0)
		dup2(devnull, STDERR_FILENO); /* the parent prints what matters */
	alarm(PROBE_SECONDS);
	if (!tep)
		_exit(2);
	tep_set_file_bigendian(tep, in->big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_long_size(tep, in->kernel_long_size ? in->kernel_long_size : in->long_size);
	for (i = start; i < in->nr_formats; i++) {
		write_all(fd, &i, sizeof(i));
		tep_parse_event(tep, in->formats[i].text, in->formats[i].size,
				in->formats[i].system);
	}
	write_all(fd, &done, sizeof(done));
	_exit(0);
}

/* Parse formats from @start in a child. Returns -1 when all went through, the index of the
 * format the child died on, or a negative errno below -1 when the probe itself failed. */
static int probe(struct hgt_input *in, int start)
{
	int p[2], last = -2, v, status;
	pid_t pid;
	ssize_t r;

	if (pipe2(p, O_CLOEXEC))
		return -errno - 1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e - 1;
	}
	if (pid == 0) {
		close(p[0]);
		probe_child(in, start, p[1]);
	}
	close(p[1]);
	for (;;) {
		r = read(p[0], &v, sizeof(v));
		if (r < 0 && errno == EINTR)
			continue;
		if (r != sizeof(v))
			break;
		last = v;
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && last == -1)
		return -1;
	if (last >= start)
		return last;
	return -EIO - 1;
}

/**
 * hgt__formats_parse - hand every kept format to libtraceevent, except those that crash
 * (or hang) it in the probe child; then free the texts.
 */
int hgt__formats_parse(struct hgt_input *in)
{
	int start = 0, nbad = 0, i, ret = 0;

	while (in->tep && start < in->nr_formats) {
		int bad = probe(in, start);

		if (bad == -1)
			break;
		if (bad < -1) {
			/* no probe possible (no fork): parse unguarded, as before */
			break;
		}
		in->formats[bad].bad = true;
		if (!(in->flags & HGT_OPEN_QUIET))
			fprintf(stderr,
				"hgtrace: %s: offset 0x%llx: event format %d of system \"%s\" "
				"crashes libtraceevent's parser: skipped\n",
				in->path, (unsigned long long)in->formats[bad].where, bad,
				in->formats[bad].system);
		if (++nbad > MAX_BAD_FORMATS) {
			ret = hgt__error(in, in->formats[bad].where, EBADMSG,
					 "more than %d event formats crash libtraceevent's "
					 "parser: the metadata is damaged",
					 MAX_BAD_FORMATS);
			break;
		}
		start = bad + 1;
	}
	for (i = 0; i < in->nr_formats; i++) {
		struct hgt__format *f = &in->formats[i];

		/* A format libtraceevent cannot parse is skipped, as trace-cmd does. */
		if (!ret && in->tep && !f->bad)
			tep_parse_event(in->tep, f->text, f->size, f->system);
		free(f->text);
		free(f->system);
	}
	free(in->formats);
	in->formats = NULL;
	in->nr_formats = in->max_formats = 0;
	return ret;
}

void hgt__formats_free(struct hgt_input *in)
{
	int i;

	for (i = 0; i < in->nr_formats; i++) {
		free(in->formats[i].text);
		free(in->formats[i].system);
	}
	free(in->formats);
	in->formats = NULL;
	in->nr_formats = 0;
}
