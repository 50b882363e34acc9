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

#include <hgtrace/output.h>

#include "tracedat-local.h"

/* Options the writer produces itself, or that describe the old file's layout. */
static bool layout_option(unsigned int id)
{
	return id == HGT_OPT_DONE || id == HGT_OPT_BUFFER || id == HGT_OPT_CPUCOUNT ||
	       id == HGT_OPT_STRINGS || (id >= HGT_OPT_HEADER_INFO && id <= HGT_OPT_BUFFER_TEXT) ||
	       id == HGT_OPT_BTF_FILE || id == HGT_OPT_MODULES_FILE;
}

static int copy_cpu(struct hgt_input *in, struct hgt_output *out, int buf, int cpu)
{
	struct hgt_cursor *c = hgt_cursor_open(in, buf, cpu);
	const uint8_t *pages;
	size_t len;
	int ret;

	if (!c)
		return -errno;
	while ((ret = hgt__cursor_next_pages(c, &pages, &len)) > 0) {
		ret = hgt_output_write_cpu(out, buf, cpu, pages, len);
		if (ret)
			break;
	}
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

/**
 * hgt_tracedat_convert - rewrite @in as @path.
 */
int hgt_tracedat_convert(struct hgt_input *in, const char *path,
			 const struct hgt_convert_opts *opts)
{
	struct hgt_convert_opts co = { 0 };
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
			return hgt__errorf(EEXIST,
					   "%s: the same file as the input %s (device %u:%u, "
					   "inode %llu): choose another output",
					   path, in->path, major(so.st_dev), minor(so.st_dev),
					   (unsigned long long)so.st_ino);
	}
	if (!in->latency && (in->nr_bufs < 1 || *in->bufs[0].name))
		return hgt__error(in, in->first_options, ENOTSUP,
				  "the file has no top instance buffer");
	for (i = 1; i < in->nr_bufs; i++)
		if (in->bufs[i].pub.page_size != in->bufs[0].pub.page_size)
			return hgt__error(in, in->bufs[i].pub.section_offset, ENOTSUP,
					  "buffer \"%s\" has %u-byte pages, the top one %u: "
					  "mixed page sizes cannot be written",
					  in->bufs[i].name, in->bufs[i].pub.page_size,
					  in->bufs[0].pub.page_size);
	{
		HGT_OPTS(hgt_output_opts, oo, .version = co.version, .compression = co.compression,
			 .page_size = in->latency ? in->page_size : in->bufs[0].pub.page_size,
			 .long_size = in->long_size);

		out = hgt_output_create(path, &oo);
	}
	if (!out)
		return -errno;
	for (i = HGT_OPT_HEADER_INFO; !ret && i <= HGT_OPT_CMDLINES; i++) {
		uint8_t *blob;
		uint64_t len;

		ret = hgt__input_meta_blob(in, (unsigned)i, &blob, &len);
		if (!ret)
			ret = hgt_output_set_meta(out, (unsigned)i, blob, len);
		free(blob);
	}
	for (i = 0; !ret && i < in->nr_opts; i++) {
		const struct hgt_option *op = &in->opts[i];

		if (op->id == HGT_OPT_CPUCOUNT && op->size >= 4 && in->version >= 7)
			cpucount = hgt__get32(in, op->data);
		if (!layout_option(op->id))
			ret = hgt_output_add_option(out, op->id, op->data, op->size);
	}
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
	for (i = 0; !ret && !in->latency && i < in->nr_bufs; i++)
		for (int c = 0; !ret && c < in->bufs[i].pub.nr_cpus; c++)
			ret = copy_cpu(in, out, i, c);
	if (ret) {
		hgt_output_abort(out);
		return ret;
	}
	return hgt_output_close(out);
}
