// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Rewrite a trace.dat in another version or compression: metadata items and options are
 * copied, buffers and their pages are copied byte for byte.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <hgtrace/clock.h>
#include <hgtrace/output.h>

#include "tracedat-local.h"
#include "output-local.h"

/* Options the writer produces itself, or that describe the old file's layout. */
static bool layout_option(unsigned int id)
{
	return id == HGT_OPT_DONE || id == HGT_OPT_BUFFER || id == HGT_OPT_CPUCOUNT ||
	       id == HGT_OPT_STRINGS || (id >= HGT_OPT_HEADER_INFO && id <= HGT_OPT_BUFFER_TEXT) ||
	       id == HGT_OPT_BTF_FILE || id == HGT_OPT_MODULES_FILE;
}

/* The window of a copy: its bounds and the clock that puts a page's stamp in them. */
struct window {
	uint64_t from, to;
	struct hgt_clock clk;
	uint32_t page_size;
	uint8_t *held; /* the page before (kept once the next one's stamp is known) */
	uint64_t held_ts;
	bool have;
};

/* Page @p of @cpu, seen in order: the page before it is written when it may hold a time in
 * the window (its stamp at most @to, this one's at least @from); @p NULL ends the CPU. */
static int window_page(struct hgt_input *in, struct hgt_output *out, int buf, int cpu,
		       struct window *w, const uint8_t *p)
{
	uint64_t ts = p ? hgt_clock_convert(&w->clk, hgt__get64(in, p), cpu) : UINT64_MAX;
	int ret = 0;

	if (w->have && w->held_ts <= w->to && ts >= w->from)
		ret = hgt_output_write_cpu(out, buf, cpu, w->held, w->page_size);
	w->have = p != NULL;
	if (p) {
		memcpy(w->held, p, w->page_size);
		w->held_ts = ts;
	}
	return ret;
}

static int copy_cpu(struct hgt_input *in, struct hgt_output *out, int buf, int cpu,
		    struct window *w)
{
	struct hgt_cursor *c = hgt_cursor_open(in, buf, cpu);
	const uint8_t *pages;
	size_t len;
	int ret;

	if (!c)
		return -errno;
	if (w)
		w->have = false;
	while ((ret = hgt__cursor_next_pages(c, &pages, &len)) > 0) {
		if (!w) {
			ret = hgt_output_write_cpu(out, buf, cpu, pages, len);
		} else {
			ret = 0;
			for (size_t k = 0; !ret && k + w->page_size <= len; k += w->page_size)
				ret = window_page(in, out, buf, cpu, w, pages + k);
		}
		if (ret)
			break;
	}
	if (!ret && w)
		ret = window_page(in, out, buf, cpu, w, NULL);
	hgt_cursor_close(c);
	return ret;
}

/* A latency (ASCII) trace: its text, with the CPU count and clock of the file. */
static int copy_latency(struct hgt_input *in, struct hgt_output *out)
{
	const char *clock = in->trace_clock && *in->trace_clock ? in->trace_clock : "local";
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int ret;

	if (!f)
		return -errno;
	ret = hgt_input_write_latency(in, f);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (!ret) {
		ret = hgt_output_add_buffer(out, "", clock, in->nr_cpus > 0 ? in->nr_cpus : 1);
		if (ret > 0)
			ret = 0;
	}
	if (!ret)
		ret = hgt_output_write_latency(out, text, len);
	free(text);
	return ret;
}

/* A page's commit field: its data size and the missed-events flags. */
static uint64_t page_commit(struct hgt_input *in, const uint8_t *p)
{
	return in->kernel_long_size == 8 ? hgt__get64(in, p + 8) : hgt__get32(in, p + 8);
}

/* Where a recording file's next pages are read: in place in @out where it compresses them
 * beside the writer (no copy), else into *@own (made at the first need). NULL: no memory. */
static uint8_t *read_room(struct hgt_output *out, int cpu, uint8_t **own, size_t *cap,
			  uint32_t page_size, int *ret)
{
	uint8_t *p;

	*ret = hgt__output_cpu_space(out, 0, cpu, &p, cap);
	if (*ret || p)
		return p;
	*cap = 256 * (size_t)page_size;
	if (!*own)
		*own = malloc(*cap);
	*ret = *own ? 0 : -ENOMEM;
	return *own;
}

/* Where a recording file's copy begins: its range, or from the first byte that is not a
 * hole. */
static void copy_begin(struct hgt__page_file *f, uint32_t page_size)
{
	uint64_t off = f->from;
	struct stat st;

	f->kept = f->dropped = f->loss_pages = 0;
	f->damaged = false;
	if (!off && !f->to) {
		off_t d = lseek(f->fd, 0, SEEK_DATA);

		/* a file of holes alone (ENXIO) is empty; where SEEK_DATA is unknown, all */
		if (d > 0)
			off = (uint64_t)d - (uint64_t)d % page_size;
		else if (d < 0 && errno == ENXIO && !fstat(f->fd, &st))
			off = (uint64_t)st.st_size - (uint64_t)st.st_size % page_size;
	}
	f->from = off;
}

/* The bytes a file's copy has yet to go from @off (up to its size now, where it has no end). */
static uint64_t copy_left(const struct hgt__page_file *f, uint64_t off)
{
	struct stat st;
	uint64_t end = f->to;

	if (!end)
		end = fstat(f->fd, &st) ? off : (uint64_t)st.st_size;
	return end > off ? end - off : 0;
}

/* A copy's state: a file, and how far its copy has gone. */
struct copy_at {
	struct hgt__page_file *f;
	uint64_t off;
	bool done;
};

/* The next batch of whole pages of a recording file, up to its first damaged one (then
 * done, as at its end). */
static int copy_batch(struct hgt_input *in, struct hgt_output *out, struct copy_at *a,
		      uint8_t **own, uint32_t page_size, const struct hgt__convert_src *src)
{
	struct hgt__page_file *f = a->f;
	uint32_t hdr = 8 + (uint32_t)in->kernel_long_size;
	size_t cap, want, whole, k;
	uint8_t *buf;
	ssize_t n;
	int ret = 0;

	buf = read_room(out, f->cpu, own, &cap, page_size, &ret);
	if (!buf)
		return ret;
	want = f->to && f->to - a->off < cap ? (size_t)(f->to - a->off) : cap;
	do
		n = want ? pread(f->fd, buf, want, (off_t)a->off) : 0;
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return hgt__errorf(errno, "%s: offset 0x%llx: %s", f->name,
				   (unsigned long long)a->off, strerror(errno));
	whole = (size_t)n - (size_t)n % page_size;
	for (k = 0; k < whole; k += page_size) {
		uint64_t commit = page_commit(in, buf + k);

		/* damaged: its commit size cannot fit */
		if ((commit & HGT__COMMIT_MASK) > page_size - hdr) {
			f->damaged = true;
			break;
		}
		f->loss_pages += !!(commit & HGT__MISSED_EVENTS);
	}
	if (k)
		ret = buf == *own ? hgt_output_write_cpu(out, 0, f->cpu, buf, k)
				  : hgt__output_cpu_commit(out, 0, f->cpu, k);
	if (ret)
		return ret;
	a->off += k;
	if (k && src->copied && (ret = src->copied(src->copied_ctx, f, a->off)))
		return ret;
	a->done = f->damaged || k < want || !want;
	return 0;
}

/* What was copied of a file (@f->kept) and, where the copy went well (@ok), left after it
 * (@f->dropped). */
static void copy_end(struct hgt__page_file *f, uint64_t off, bool ok)
{
	struct stat st;

	f->kept = off - f->from;
	if (ok && !f->to && !fstat(f->fd, &st) && (uint64_t)st.st_size > off)
		f->dropped = (uint64_t)st.st_size - off;
}

/* Whole pages of one recording file up to the first damaged one; what is left is counted
 * in @f->dropped, and where the copy stopped in @f->stop (the file size when all went). */
static int copy_file(struct hgt_input *in, struct hgt_output *out, struct hgt__page_file *f,
		     uint32_t page_size, const struct hgt__convert_src *src)
{
	struct copy_at a = { f, 0, false };
	uint8_t *own = NULL;
	int ret = 0;

	copy_begin(f, page_size);
	a.off = f->from;
	while (!ret && !a.done)
		ret = copy_batch(in, out, &a, &own, page_size, src);
	free(own);
	copy_end(f, a.off, !ret);
	return ret;
}

/* A step of a copy of all CPUs together, before the next CPU is looked at: a 16th of the
 * CPU's pages, 64 MB at most (each switch waits for the compressing workers' chunks). */
#define TOGETHER_STEP_MAX (64ULL << 20)

/*
 * The recording files of all CPUs together (@src->together), into an output that spools
 * them (hgt__output_spool()): step by step, the CPU with the least of its pages copied (as a
 * share of its own) next, so that the oldest pages of every CPU are copied first and can
 * go (@src->copied) while the copy goes on. A CPU's files stay in their order.
 */
static int copy_together(struct hgt_input *in, struct hgt_output *out, uint32_t page_size,
			 const struct hgt__convert_src *src)
{
	struct copy_at *a = calloc((size_t)src->nr_files, sizeof(*a));
	uint64_t *total = calloc((size_t)src->nr_files, sizeof(*total));
	uint64_t *step = calloc((size_t)src->nr_files, sizeof(*step));
	uint8_t *own = NULL;
	int ret = a && total && step ? 0 : -ENOMEM;

	for (int k = 0; !ret && k < src->nr_files; k++) {
		a[k].f = &src->files[k];
		copy_begin(a[k].f, page_size);
		a[k].off = a[k].f->from;
		total[k] = copy_left(a[k].f, a[k].off) ?: 1;
		step[k] =
			total[k] / 16 < TOGETHER_STEP_MAX ? total[k] / 16 ?: 1 : TOGETHER_STEP_MAX;
	}
	while (!ret) {
		int best = -1;
		double least = 2;

		/* each CPU's first file not done yet; of those, the least copied */
		for (int k = 0; k < src->nr_files; k++) {
			double share = (double)(a[k].off - a[k].f->from) / (double)total[k];

			if (a[k].done || (k && !a[k - 1].done && a[k - 1].f->cpu == a[k].f->cpu))
				continue;
			if (share < least) {
				least = share;
				best = k;
			}
		}
		if (best < 0)
			break;
		for (uint64_t from = a[best].off;
		     !ret && !a[best].done && a[best].off - from < step[best];)
			ret = copy_batch(in, out, &a[best], &own, page_size, src);
	}
	for (int k = 0; a && k < src->nr_files; k++)
		copy_end(a[k].f, a[k].off, !ret);
	free(own);
	free(a);
	free(total);
	free(step);
	return ret;
}

/* The top buffer's pages from the recording files: all CPUs together where asked and the
 * output can (hgt__output_spool()), else CPU after CPU (the caller sorted them). */
static int copy_files(struct hgt_input *in, struct hgt_output *out,
		      const struct hgt__convert_src *src)
{
	uint32_t page_size = in->bufs[0].pub.page_size;
	int ret = src->together ? hgt__output_spool(out) : -ENOTSUP;

	if (!ret)
		return copy_together(in, out, page_size, src);
	if (ret != -ENOTSUP)
		return ret;
	for (int k = 0; k < src->nr_files; k++)
		if ((ret = copy_file(in, out, &src->files[k], page_size, src)))
			return ret;
	return 0;
}

/**
 * hgt__convert - hgt_tracedat_convert(), with what @src gives instead of parts of @in:
 * the top buffer's pages from recording files, the cmdlines, and options added after
 * @in's own.
 */
/* @in's metadata items (the cmdlines @src gives, if any) and options, the layout's own
 * left out, into @out; *@cpucount: a version 7 CPUCOUNT option's (else left). */
static int copy_head(struct hgt_input *in, struct hgt_output *out,
		     const struct hgt__convert_src *src, uint32_t *cpucount)
{
	int i, ret = 0;

	for (i = HGT_OPT_HEADER_INFO; !ret && i <= HGT_OPT_CMDLINES; i++) {
		uint8_t *blob;
		uint64_t len;

		if (i == HGT_OPT_KALLSYMS && src && src->no_kallsyms) {
			static const uint8_t none[4]; /* u32 size 0, no text */

			ret = hgt_output_set_meta(out, (unsigned)i, none, sizeof(none));
			continue;
		}
		if (i == HGT_OPT_CMDLINES && src && src->cmdlines) {
			ret = hgt_output_set_meta(out, (unsigned)i, src->cmdlines,
						  src->cmdlines_len);
			continue;
		}
		if (src && src->keep_packed) { /* compressed items copied as they are */
			uint8_t *packed;
			size_t at = 0, clen = 0;

			ret = hgt__input_meta_packed(in, (unsigned)i, &blob, &len, &packed, &at,
						     &clen);
			if (!ret)
				ret = hgt__output_set_meta_packed(
					out, (unsigned)i, blob, len, in->comp,
					packed ? packed + at : NULL, clen);
			free(packed);
			free(blob);
			continue;
		}
		ret = hgt__input_meta_blob(in, (unsigned)i, &blob, &len);
		if (!ret)
			ret = hgt_output_set_meta(out, (unsigned)i, blob, len);
		free(blob);
	}
	for (i = 0; !ret && i < in->nr_opts; i++) {
		const struct hgt_option *op = &in->opts[i];

		if (op->id == HGT_OPT_CPUCOUNT && op->size >= 4 && in->version >= 7)
			*cpucount = hgt__get32(in, op->data);
		if (!layout_option(op->id))
			ret = hgt_output_add_option(out, op->id, op->data, op->size);
	}
	return ret;
}

int hgt__convert(struct hgt_input *in, const char *path, const struct hgt_convert_opts *opts,
		 struct hgt__convert_src *src)
{
	struct hgt_convert_opts co = { 0 };
	struct window win = { 0 };
	struct hgt_output *out;
	uint32_t cpucount = 0;
	int i, ret = 0;

	if (opts) {
		if (opts->sz < sizeof(size_t) || opts->sz > sizeof(co))
			return -EINVAL;
		memcpy(&co, opts, opts->sz);
	}
	if (!in->tep)
		return hgt__error(in, 0, EINVAL, "opened with HGT_OPEN_HEAD_ONLY: no pages");
	{
		struct stat si, so;

		if (!fstat(in->fd, &si) && !stat(path, &so) && si.st_dev == so.st_dev &&
		    si.st_ino == so.st_ino)
			return hgt__errorf(
				EEXIST,
				"%s: the same file as the input %s (device %u:%u, inode %llu): choose another output",
				path, in->path, major(so.st_dev), minor(so.st_dev),
				(unsigned long long)so.st_ino);
	}
	if (!in->latency && (in->nr_bufs < 1 || *in->bufs[0].name))
		return hgt__error(in, in->first_options, ENOTSUP,
				  "the file has no top instance buffer");
	if (co.window && (in->latency || (src && src->files)))
		return hgt__error(in, 0, ENOTSUP,
				  "a time window of a latency trace or a recording");
	for (i = 1; i < in->nr_bufs; i++)
		if (in->bufs[i].pub.page_size != in->bufs[0].pub.page_size)
			return hgt__error(
				in, in->bufs[i].pub.section_offset, ENOTSUP,
				"buffer \"%s\" has %u-byte pages, the top one %u: mixed page sizes cannot be written",
				in->bufs[i].name, in->bufs[i].pub.page_size,
				in->bufs[0].pub.page_size);
	{
		HGT_OPTS(hgt_output_opts, oo, .version = co.version, .compression = co.compression,
			 .page_size = in->latency ? in->page_size : in->bufs[0].pub.page_size,
			 .long_size = in->long_size, .sync = src && src->sync);

		out = hgt_output_create(path, &oo);
	}
	if (!out)
		return -errno;
	if (src && src->before_publish)
		hgt__output_before_publish(out, src->before_publish, src->publish_ctx);
	ret = copy_head(in, out, src, &cpucount);
	if (!ret && src && src->more_options)
		ret = src->more_options(src->ctx, out);
	if (!ret && in->latency)
		ret = copy_latency(in, out);
	for (i = 0; !ret && !in->latency && i < in->nr_bufs; i++) {
		const struct hgt_buffer *b = &in->bufs[i].pub;
		int n = b->nr_cpus;

		if (i == 0 && (int)cpucount > n)
			n = (int)cpucount;
		ret = hgt_output_add_buffer(out, b->name, b->clock, n);
		if (ret > 0)
			ret = 0;
	}
	if (!ret && co.window) {
		win.from = co.from;
		win.to = co.to;
		win.page_size = in->bufs[0].pub.page_size;
		win.held = malloc(win.page_size);
		ret = win.held ? hgt_clock_init(&win.clk, in, co.clock) : -ENOMEM;
	}
	for (i = 0; !ret && !in->latency && i < in->nr_bufs; i++) {
		if (i == 0 && src && src->files) {
			ret = copy_files(in, out, src);
			continue;
		}
		for (int c = 0; !ret && c < in->bufs[i].pub.nr_cpus; c++)
			ret = copy_cpu(in, out, i, c, co.window ? &win : NULL);
	}
	free(win.held);
	if (ret) {
		hgt_output_abort(out);
		return ret;
	}
	return hgt_output_close(out);
}

int hgt__head_copy(const char *path, struct hgt_output *out, int *nr_cpus)
{
	HGT_OPTS(hgt_open_opts, oo,
		 .flags = HGT_OPEN_QUIET | HGT_OPEN_HEAD_ONLY | HGT__OPEN_PARTIAL);
	struct hgt_input *in = hgt_input_open(path, &oo);
	uint32_t cpucount = 0;
	int ret;

	if (!in)
		return -errno;
	ret = copy_head(in, out, NULL, &cpucount);
	/* version 6 has no CPUCOUNT option: its count is in the header */
	*nr_cpus = cpucount ? (int)cpucount : in->nr_cpus;
	hgt_input_close(in);
	return ret;
}

/**
 * hgt_tracedat_convert - rewrite @in as @path.
 */
int hgt_tracedat_convert(struct hgt_input *in, const char *path,
			 const struct hgt_convert_opts *opts)
{
	return hgt__convert(in, path, opts, NULL);
}
