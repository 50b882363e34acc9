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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hgtrace/clock.h>
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
	bool sync;			  /* fsync the file and its directory at close */
};

/**
 * hgt_output_create - start writing a trace.dat file that will be @path. It is written
 * beside @path (see hgt_newfile_open()) and takes its name only when hgt_output_close()
 * succeeds: until then an existing @path is untouched. A @path that is not a regular file
 * is refused. Returns a handle, or NULL with errno set and the reason in hgt_last_error().
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
 * and free @out; the file then replaces @path. Returns 0, or a negative errno when
 * anything failed since creation (nothing is then left behind and @path is unchanged).
 */
int hgt_output_close(struct hgt_output *out);

/**
 * hgt_output_abort - stop writing, drop the unfinished file and free @out (@path is
 * unchanged).
 */
void hgt_output_abort(struct hgt_output *out);

/*
 * Writing a file that replaces another only when it is complete. The bytes go to an unnamed
 * temporary file in the target's directory (a symbolic link's target is the one replaced),
 * which takes the target's name at hgt_newfile_commit(). On failure, or if the writer is
 * killed, the old target is left exactly as it was. Every hgtrace writer of trace.dat files
 * goes through this.
 */
struct hgt_newfile;

enum {
	HGT_NEWFILE_IN_PLACE = 1 << 0, /* a target that exists and is not a regular file (a
					* FIFO, a terminal, a device) is opened and written as it
					* is; without this flag it is refused with -EEXIST */
	HGT_NEWFILE_SYNC = 1 << 1,     /* fsync the file and its directory at commit */
};

/**
 * hgt_newfile_open - start writing @path. Returns a handle, or NULL with errno set and the
 * reason in hgt_last_error() (a directory, or a non-regular file without
 * HGT_NEWFILE_IN_PLACE, is refused with EEXIST: it is never unlinked).
 */
struct hgt_newfile *hgt_newfile_open(const char *path, unsigned int flags);

/**
 * hgt_newfile_fd - the descriptor to write to (readable too, and seekable unless written
 * in place); owned by the handle.
 */
int hgt_newfile_fd(const struct hgt_newfile *f);

/**
 * hgt_newfile_commit - the file is complete: it replaces the target (which keeps its
 * permission bits), and @f is freed. Returns 0 or -errno with the reason in
 * hgt_last_error(); on failure the target is unchanged.
 */
int hgt_newfile_commit(struct hgt_newfile *f);

/**
 * hgt_newfile_abort - drop what was written and free @f; the target is unchanged.
 */
void hgt_newfile_abort(struct hgt_newfile *f);

/**
 * hgt_same_file - whether paths @a and @b name one file (same device and inode, symbolic
 * links followed), as a hard link or another spelling would. Returns 1, 0 (different, or
 * one does not exist) or -errno.
 */
int hgt_same_file(const char *a, const char *b);

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
	/* @window: of each CPU only the pages that may hold a time within [@from, @to]
	 * (a page from its own stamp up to the next page's), in report time: the file's
	 * stamps as hgt_clock_init(@clock) converts them (NULL: no options). Metadata and
	 * options are copied whole, so a window of an attached pair is still one. */
	bool window;
	uint64_t from, to;
	const struct hgt_clock_opts *clock;
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
