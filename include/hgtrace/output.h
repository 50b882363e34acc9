/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/output.h - write trace-cmd trace.dat files (version 7 with no, zlib or zstd
 * compression, and version 6), and append options to a finished version 7 file.
 *
 * Writing a file:
 *   out = hgt_output_create(path, &opts);
 *   hgt_output_set_meta(out, HGT_OPT_HEADER_INFO, ...) ... HGT_OPT_CMDLINES   (all six)
 *   hgt_output_add_option(out, HGT_OPT_TRACECLOCK, ...) ...                 (any order)
 *   b = hgt_output_add_buffer(out, "", "x86-tsc", nr_cpus);                   (top first)
 *   hgt_output_write_cpu(out, b, cpu, pages, len) ...   (buffers in order, CPUs ascending)
 *   hgt_output_close(out);                              (finishes the file; checks errors)
 *
 * Metadata blobs use the v6 item encoding, which is also the body of a v7 section:
 * HEADER_INFO = "header_page\0" u64 size text "header_event\0" u64 size text;
 * FTRACE_EVENTS = u32 n, n x {u64 size, text}; EVENT_FORMATS = u32 systems, per system
 * name\0 u32 n, n x {u64 size, text}; KALLSYMS and PRINTK = u32 size + text;
 * CMDLINES = u64 size + text.
 *
 * Errors: 0 or a negative errno; the reason in hgt_last_error() ("FILE: what").
 * Files are written in the host's byte order.
 */
#ifndef HGTRACE_OUTPUT_H
#define HGTRACE_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include <hgtrace/tracedat.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hgt_output;

struct hgt_output_opts {
	size_t sz;			  /* sizeof(struct hgt_output_opts); use HGT_OPTS() */
	int version;			  /* 6 or 7 (0: 7) */
	enum hgt_compression compression; /* version 7 only */
	uint32_t page_size;		  /* ring-buffer page size (0: 4096) */
	int long_size;			  /* userspace long size in the header (0: 8) */
};

/**
 * hgt_output_create - start writing a trace.dat file at @path (created or truncated).
 * Returns a handle, or NULL with errno set and the reason in hgt_last_error().
 * The file is complete only after hgt_output_close() returned 0.
 */
struct hgt_output *hgt_output_create(const char *path, const struct hgt_output_opts *opts);

/**
 * hgt_output_set_meta - give the metadata item @id (HGT_OPT_HEADER_INFO ..
 * HGT_OPT_CMDLINES) as its v6 encoding. The bytes are copied. All six must be set before
 * the first hgt_output_add_buffer().
 */
int hgt_output_set_meta(struct hgt_output *out, unsigned int id, const void *blob, size_t len);

/**
 * hgt_output_add_option - add option @id with payload @data of @size bytes (copied).
 * Options are written in the order added, before the trace data. BUFFER, CPUCOUNT, DONE,
 * STRINGS and the section ids are written by the writer itself and are refused here.
 */
int hgt_output_add_option(struct hgt_output *out, unsigned int id, const void *data, uint32_t size);

/**
 * hgt_output_add_buffer - declare a flyrecord buffer: @name "" is the top instance (it
 * must come first), @clock its trace clock, @nr_cpus its CPU count. All buffers must be
 * declared before the first hgt_output_write_cpu(). Returns the buffer index or -errno.
 */
int hgt_output_add_buffer(struct hgt_output *out, const char *name, const char *clock, int nr_cpus);

/**
 * hgt_output_write_cpu - append @len bytes of whole ring-buffer pages to CPU @cpu of
 * buffer @buf. Calls must go through buffers in index order and, within a buffer, through
 * CPUs in ascending order; a CPU may be written by several calls in a row. CPUs never
 * written are stored as empty.
 */
int hgt_output_write_cpu(struct hgt_output *out, int buf, int cpu, const void *pages, size_t len);

/**
 * hgt_output_write_latency - make the file a latency (ASCII) trace: @len bytes of @text
 * (the latency tracer's trace file) instead of pages. The top buffer, the only one
 * declared, gives the CPU count and the clock. Call once, instead of hgt_output_write_cpu().
 * Returns 0 or -errno.
 */
int hgt_output_write_latency(struct hgt_output *out, const void *text, size_t len);

/**
 * hgt_output_close - finish the file (buffer options, strings, patched offsets), close it
 * and free @out. Returns 0, or a negative errno when anything failed since creation (the
 * file is then removed).
 */
int hgt_output_close(struct hgt_output *out);

/**
 * hgt_output_abort - stop writing, remove the unfinished file and free @out.
 */
void hgt_output_abort(struct hgt_output *out);

/* One option to append: id, payload and its size. */
struct hgt_option_blob {
	uint16_t id;
	uint32_t size;
	const void *data;
};

/**
 * hgt_tracedat_append_options - append @n options to the finished version 7 file @path
 * the way trace-cmd does: a new OPTIONS section and a STRINGS section at the end of the
 * file, and the previous last DONE patched to point at the new OPTIONS section.
 *
 * On failure the file is restored to its previous bytes. Returns 0 or -errno (-EROFS for
 * version 6 files, which cannot be appended to).
 */
int hgt_tracedat_append_options(const char *path, const struct hgt_option_blob *opts, int n);

struct hgt_convert_opts {
	size_t sz;			  /* sizeof(struct hgt_convert_opts); use HGT_OPTS() */
	int version;			  /* 6 or 7 (0: 7) */
	enum hgt_compression compression; /* version 7 only */
};

/**
 * hgt_tracedat_convert - write the whole of @in (metadata, options, every buffer's pages)
 * to a new file @path in another version or compression. Page bytes are copied unchanged,
 * so reports of both files are identical. Returns 0 or -errno (the output is removed).
 */
int hgt_tracedat_convert(struct hgt_input *in, const char *path,
			 const struct hgt_convert_opts *opts);

/**
 * hgt_compression_parse - "none", "zlib", "zstd" or "any" (zstd) to an enum value.
 * Returns 0 or -EINVAL.
 */
int hgt_compression_parse(const char *name, enum hgt_compression *comp);

#ifdef __cplusplus
}
#endif

#endif
