// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Event formats, parsed by libtraceevent behind a guard.
 *
 * libtraceevent 1.7's tep_parse_event() dereferences NULL on some damaged format texts
 * (found by our fuzzer). A file must never crash us, so every format of a file is first
 * parsed in a forked child with a throw-away tep handle; a format the child dies on (or
 * hangs on) is reported and skipped, and only the others are parsed for real. One fork per
 * file, whatever the number of formats (a child that dies restarts after the culprit). The
 * child starts as soon as the formats are read and works while the parent reads kallsyms;
 * formats identical byte for byte to ones probed before in the process are not probed
 * again.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

/* Start parsing formats from @start in a child; its pid and the read end of its pipe go
 * to @in. Returns 0 or -errno (no child: the caller parses unguarded). */
static int probe_begin(struct hgt_input *in, int start)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		close(p[0]);
		probe_child(in, start, p[1]);
	}
	close(p[1]);
	in->probe_pid = pid;
	in->probe_fd = p[0];
	in->probe_start = start;
	return 0;
}

/* Wait for the child of probe_begin(). Returns -1 when all went through, the index of the
 * format the child died on, or -2 when the probe itself failed. */
static int probe_end(struct hgt_input *in)
{
	int last = -2, v, status = 0;
	ssize_t r;

	for (;;) {
		r = read(in->probe_fd, &v, sizeof(v));
		if (r < 0 && errno == EINTR)
			continue;
		if (r != sizeof(v))
			break;
		last = v;
	}
	close(in->probe_fd);
	while (waitpid(in->probe_pid, &status, 0) < 0 && errno == EINTR)
		;
	in->probe_pid = 0;
	in->probe_fd = -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && last == -1)
		return -1;
	if (last >= in->probe_start)
		return last;
	return -2;
}

/*
 * Formats already probed in this process, kept byte for byte with their verdict: a file
 * opened again (the report's worker handles) is not probed again. Only identical bytes
 * count, so a different file cannot borrow another's verdict.
 */
#define MAX_VERDICTS 4
struct verdict {
	int nr;
	uint64_t total;
	struct hgt__format *f; /* texts and systems copied; bad flags as found */
};
static struct verdict verdicts[MAX_VERDICTS];
static int next_verdict;
static pthread_mutex_t verdict_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t formats_total(const struct hgt_input *in)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < in->nr_formats; i++)
		t += in->formats[i].size;
	return t;
}

static bool same_formats(const struct verdict *v, const struct hgt_input *in, uint64_t total)
{
	int i;

	if (!v->f || v->nr != in->nr_formats || v->total != total)
		return false;
	for (i = 0; i < v->nr; i++) {
		const struct hgt__format *a = &v->f[i], *b = &in->formats[i];

		if (a->size != b->size || strcmp(a->system, b->system) ||
		    memcmp(a->text, b->text, (size_t)a->size))
			return false;
	}
	return true;
}

/* Take the verdict on formats identical to @in's, if there is one. */
static bool verdict_take(struct hgt_input *in)
{
	uint64_t total = formats_total(in);
	bool found = false;
	int k, i;

	pthread_mutex_lock(&verdict_lock);
	for (k = 0; k < MAX_VERDICTS && !found; k++) {
		if (!same_formats(&verdicts[k], in, total))
			continue;
		for (i = 0; i < in->nr_formats; i++)
			in->formats[i].bad = verdicts[k].f[i].bad;
		found = true;
	}
	pthread_mutex_unlock(&verdict_lock);
	return found;
}

static void verdict_drop(struct verdict *v)
{
	int i;

	for (i = 0; v->f && i < v->nr; i++) {
		free(v->f[i].text);
		free(v->f[i].system);
	}
	free(v->f);
	memset(v, 0, sizeof(*v));
}

/* Keep the verdict on @in's formats (best effort: nothing is kept without memory). */
static void verdict_keep(const struct hgt_input *in)
{
	struct verdict n = { .nr = in->nr_formats, .total = formats_total(in) };
	int i;

	if (n.nr <= 0)
		return;
	n.f = calloc((size_t)n.nr, sizeof(*n.f));
	for (i = 0; n.f && i < n.nr; i++) {
		const struct hgt__format *src = &in->formats[i];

		n.f[i] = *src;
		n.f[i].system = strdup(src->system);
		n.f[i].text = malloc(src->size ? (size_t)src->size : 1);
		if (!n.f[i].system || !n.f[i].text) {
			n.nr = i + 1;
			verdict_drop(&n);
			return;
		}
		memcpy(n.f[i].text, src->text, (size_t)src->size);
	}
	if (!n.f)
		return;
	pthread_mutex_lock(&verdict_lock);
	verdict_drop(&verdicts[next_verdict]);
	verdicts[next_verdict] = n;
	next_verdict = (next_verdict + 1) % MAX_VERDICTS;
	pthread_mutex_unlock(&verdict_lock);
}

/* An early probe runs while nobody reads its pipe: its announcements (one int per format)
 * must fit in the pipe, or it would block there and its alarm would blame a good format. */
#define EARLY_PROBE_MAX_FORMATS 8192

/**
 * hgt__formats_check_start - start probing the formats read so far in a child. @early: the
 * parent reads the rest of the metadata (kallsyms above all) meanwhile. Formats probed
 * before in this process with the same bytes are not probed again.
 */
void hgt__formats_check_start(struct hgt_input *in, bool early)
{
	if (!in->tep || in->formats_checked || in->probe_pid > 0 || !in->nr_formats)
		return;
	if (early && in->nr_formats > EARLY_PROBE_MAX_FORMATS)
		return; /* probed in hgt__formats_parse(), read as it goes */
	if (verdict_take(in)) {
		in->formats_checked = true;
		return;
	}
	if (probe_begin(in, 0))
		in->formats_checked = true; /* no probe possible (no fork): parse unguarded */
}

/**
 * hgt__formats_parse - hand every kept format to libtraceevent, except those that crash
 * (or hang) it in the probe child; then free the texts.
 */
int hgt__formats_parse(struct hgt_input *in)
{
	int nbad = 0, i, ret = 0;
	bool verdict = false; /* a child went through every format (skipping the bad ones) */

	hgt__formats_check_start(in, false);
	while (in->probe_pid > 0) {
		int bad = probe_end(in);

		verdict = bad == -1;
		if (bad < 0) /* -1: all went through; -2: no verdict, parse unguarded as before */
			break;
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
		if (bad + 1 == in->nr_formats)
			verdict = true;
		else if (probe_begin(in, bad + 1))
			break;
	}
	if (!ret && verdict)
		verdict_keep(in);
	in->formats_checked = true;
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

	if (in->probe_pid > 0) { /* the open failed while the probe ran */
		kill(in->probe_pid, SIGKILL);
		probe_end(in);
	}
	for (i = 0; i < in->nr_formats; i++) {
		free(in->formats[i].text);
		free(in->formats[i].system);
	}
	free(in->formats);
	in->formats = NULL;
	in->nr_formats = 0;
}
