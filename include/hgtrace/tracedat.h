/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/tracedat.h - read trace-cmd trace.dat files (versions 6 and 7).
 *
 * A file is opened with hgt_input_open(). Metadata (header, options, event formats) is
 * parsed at open time; event data is read lazily, one page (or one compressed chunk) at a
 * time, by per-CPU cursors (hgt_cursor_open()), so memory does not grow with file size.
 *
 * Errors: functions return 0 or a negative errno; constructors return NULL and set errno.
 * Every failure leaves one line describing it ("FILE: offset 0x1a2b: what was wrong") in
 * hgt_last_error() of the calling thread, and, when a handle exists, in hgt_input_error().
 */
#ifndef HGTRACE_TRACEDAT_H
#define HGTRACE_TRACEDAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tep_handle;
struct tep_record;
struct hgt_input;
struct hgt_cursor;

/* Declare and fill a size-prefixed options struct: HGT_OPTS(hgt_open_opts, o, .flags = 1); */
#define HGT_OPTS(TYPE, NAME, ...) struct TYPE NAME = { .sz = sizeof(struct TYPE), __VA_ARGS__ }

/* Option ids of trace.dat (shared with v7 section ids). */
enum hgt_option_id {
	HGT_OPT_DONE = 0,
	HGT_OPT_DATE = 1,
	HGT_OPT_CPUSTAT = 2,
	HGT_OPT_BUFFER = 3,
	HGT_OPT_TRACECLOCK = 4,
	HGT_OPT_UNAME = 5,
	HGT_OPT_HOOK = 6,
	HGT_OPT_OFFSET = 7,
	HGT_OPT_CPUCOUNT = 8,
	HGT_OPT_VERSION = 9,
	HGT_OPT_PROCMAPS = 10,
	HGT_OPT_TRACEID = 11,
	HGT_OPT_TIME_SHIFT = 12,
	HGT_OPT_GUEST = 13,
	HGT_OPT_TSC2NSEC = 14,
	HGT_OPT_STRINGS = 15,
	HGT_OPT_HEADER_INFO = 16,
	HGT_OPT_FTRACE_EVENTS = 17,
	HGT_OPT_EVENT_FORMATS = 18,
	HGT_OPT_KALLSYMS = 19,
	HGT_OPT_PRINTK = 20,
	HGT_OPT_CMDLINES = 21,
	HGT_OPT_BUFFER_TEXT = 22,
	HGT_OPT_BTF_FILE = 23,
	HGT_OPT_LAST_BOOT_INFO = 24,
	HGT_OPT_MODULES_FILE = 25,
	HGT_OPT_MAX
};

/**
 * hgt_option_name - the trace-cmd name of an option id ("TRACECLOCK"), or "UNKNOWN".
 */
const char *hgt_option_name(unsigned int id);

enum hgt_compression {
	HGT_COMPRESS_NONE = 0,
	HGT_COMPRESS_ZLIB,
	HGT_COMPRESS_ZSTD,
};

enum hgt_open_flags {
	HGT_OPEN_NO_PLUGINS = 1 << 0, /* do not load libtraceevent plugins (report -N) */
	HGT_OPEN_HEAD_ONLY = 1 << 1,  /* header and options only: no event formats, no tep */
	HGT_OPEN_QUIET = 1 << 2,      /* do not print warnings (unknown options) to stderr */
	/* do not hand kallsyms to libtraceevent: the caller resolves kernel functions itself
	 * (tep_set_function_resolver), e.g. from a handle of the same file opened before */
	HGT_OPEN_NO_KALLSYMS = 1 << 3,
};

struct hgt_open_opts {
	size_t sz;	    /* sizeof(struct hgt_open_opts); use HGT_OPTS() */
	unsigned int flags; /* enum hgt_open_flags */
};

/* One option entry as stored in the file, in file order (options chains followed). */
struct hgt_option {
	uint16_t id;
	uint32_t size;
	uint64_t file_offset; /* offset of the payload in the file (or of its section when
				 the OPTIONS section is compressed) */
	const void *data;     /* payload, owned by the handle */
};

/* Where one CPU's data lives. */
struct hgt_cpu_data {
	uint64_t offset; /* absolute file offset, page aligned */
	uint64_t size;	 /* bytes in the file (compressed size for compressed files) */
	bool present;	 /* false for CPUs the writer omitted (v7: empty CPUs) */
};

/* One flyrecord buffer: the top instance or a named instance. */
struct hgt_buffer {
	const char *name;  /* "" for the top instance */
	const char *clock; /* trace clock of this buffer ("local", "x86-tsc", ...), "" if unknown */
	uint32_t page_size;
	int nr_cpus; /* max stored cpu id + 1 */
	const struct hgt_cpu_data *cpus;
	uint64_t section_offset; /* v7: BUFFER section header; v6: the "flyrecord" tag */
	bool compressed;
};

/* A section of a v7 file (also filled for v6 with the sequential items). */
struct hgt_section {
	uint16_t id;
	uint16_t flags;	   /* bit 0: compressed */
	int32_t string_id; /* description string id, -1 for none */
	uint64_t offset;   /* of the 16-byte header (v7) or of the item (v6) */
	uint64_t size;	   /* bytes after the header */
	const char *desc;  /* description from the STRINGS sections, or "" */
};

/**
 * hgt_input_open - open a trace.dat file and parse its metadata.
 * @path: the file
 * @opts: NULL or options (HGT_OPTS(hgt_open_opts, ...))
 *
 * Returns a handle to close with hgt_input_close(), or NULL with errno set and the reason
 * in hgt_last_error().
 */
struct hgt_input *hgt_input_open(const char *path, const struct hgt_open_opts *opts);

/**
 * hgt_input_close - free a handle and everything it owns (cursors must be closed first).
 */
void hgt_input_close(struct hgt_input *in);

/**
 * hgt_last_error - the last error line of the calling thread ("" if none). Owned by the
 * library; valid until the next failing call in this thread.
 */
const char *hgt_last_error(void);

/**
 * hgt_input_error - the last error line recorded on @in ("" if none). Owned by the handle.
 */
const char *hgt_input_error(const struct hgt_input *in);

/* Basic properties. Strings are owned by the handle. */
const char *hgt_input_path(const struct hgt_input *in);
int hgt_input_version(const struct hgt_input *in);
bool hgt_input_big_endian(const struct hgt_input *in);
int hgt_input_long_size(const struct hgt_input *in);	    /* header byte (userspace) */
int hgt_input_kernel_long_size(const struct hgt_input *in); /* from header_page */
uint32_t hgt_input_page_size(const struct hgt_input *in);
enum hgt_compression hgt_input_compression(const struct hgt_input *in);
const char *hgt_input_compression_name(const struct hgt_input *in);    /* "none", "zstd"... */
const char *hgt_input_compression_version(const struct hgt_input *in); /* "1.5.4" or "" */
uint64_t hgt_input_file_size(const struct hgt_input *in);
int hgt_input_nr_cpus(const struct hgt_input *in); /* CPU count of the top buffer */

/**
 * hgt_input_tep - the libtraceevent handle holding the file's event formats, kallsyms,
 * printk formats and cmdlines (NULL when opened with HGT_OPEN_HEAD_ONLY). Owned by @in.
 */
struct tep_handle *hgt_input_tep(const struct hgt_input *in);

/* Options, in file order. */
int hgt_input_nr_options(const struct hgt_input *in);
const struct hgt_option *hgt_input_option_at(const struct hgt_input *in, int i);
/** hgt_input_option - the last occurrence of option @id, or NULL. */
const struct hgt_option *hgt_input_option(const struct hgt_input *in, unsigned int id);

/* Sections (v7: every section header found walking the file; v6: the sequential items). */
int hgt_input_nr_sections(const struct hgt_input *in);
const struct hgt_section *hgt_input_section_at(const struct hgt_input *in, int i);

/* Flyrecord buffers: index 0 is the top instance when the file has one. */
int hgt_input_nr_buffers(const struct hgt_input *in);
const struct hgt_buffer *hgt_input_buffer(const struct hgt_input *in, int i);
/** hgt_input_top_buffer - index of the top instance ("" name), or -1 (latency files). */
int hgt_input_top_buffer(const struct hgt_input *in);

/* Decoded option values. */
bool hgt_input_trace_id(const struct hgt_input *in, uint64_t *id);
/** hgt_input_trace_clock - the selected clock of the TRACECLOCK option, or NULL if absent. */
const char *hgt_input_trace_clock(const struct hgt_input *in);
/**
 * hgt_input_in_usecs - true when trace-cmd would print this file's times as sec.usec
 * (TRACECLOCK names a nanosecond clock, or a TSC2NSEC option is present); false for raw
 * counters (x86-tsc, counter, boot without TSC2NSEC).
 */
bool hgt_input_in_usecs(const struct hgt_input *in);
/** hgt_input_tsc2nsec - TSC2NSEC option values; false when the file has none. */
bool hgt_input_tsc2nsec(const struct hgt_input *in, uint32_t *mult, uint32_t *shift,
			uint64_t *offset);
/** hgt_input_date_offset - DATE option in ns (realtime - trace time); false if absent. */
bool hgt_input_date_offset(const struct hgt_input *in, int64_t *ns);
/** hgt_input_offset_option - OFFSET option in ns; false if absent. */
bool hgt_input_offset_option(const struct hgt_input *in, int64_t *ns);
/** hgt_input_cpustat - concatenated CPUSTAT texts ("" if none). */
const char *hgt_input_cpustat(const struct hgt_input *in);
const char *hgt_input_uname(const struct hgt_input *in);	  /* NULL if absent */
const char *hgt_input_version_string(const struct hgt_input *in); /* VERSION option or NULL */

/* Latency (ASCII) traces: v6 "latency" files and v7 BUFFER_TEXT. */
bool hgt_input_is_latency(const struct hgt_input *in);
/**
 * hgt_input_write_latency - copy the latency text to @out, decompressing as needed.
 * Returns 0 or a negative errno (reason in hgt_input_error()).
 */
int hgt_input_write_latency(struct hgt_input *in, FILE *out);

/**
 * hgt_input_cpu_uncompressed_size - bytes of ring-buffer pages of one CPU once decompressed
 * (the stored size for uncompressed files). Reads the chunk headers of compressed data;
 * returns 0 when they cannot be read (the reason in hgt_input_error()).
 */
uint64_t hgt_input_cpu_uncompressed_size(struct hgt_input *in, int buffer, int cpu);

/* Sizes of metadata, for dump. */
struct hgt_meta_info {
	uint64_t header_page_size;
	uint64_t header_event_size;
	int nr_ftrace_events;
	int nr_event_systems;
	int nr_events;
	uint64_t kallsyms_size;
	uint64_t printk_size;
	uint64_t cmdlines_size;
};
void hgt_input_meta_info(const struct hgt_input *in, struct hgt_meta_info *info);

/*
 * Per-CPU cursors. A cursor walks one CPU of one buffer in file order, reading one page
 * (uncompressed files) or one chunk of pages (compressed files) at a time.
 */

/**
 * hgt_cursor_open - a cursor over CPU @cpu of buffer @buffer of @in.
 * Returns NULL with errno set (EINVAL for a bad index). Close with hgt_cursor_close().
 * A CPU with no data gives a cursor that is immediately at its end.
 */
struct hgt_cursor *hgt_cursor_open(struct hgt_input *in, int buffer, int cpu);
void hgt_cursor_close(struct hgt_cursor *c);

/**
 * hgt_cursor_next - advance to the next event.
 * @rec: filled with the event: rec->ts is the raw ring-buffer timestamp, rec->data/size
 *       the payload, rec->cpu the CPU, rec->missed_events the page's missed count for the
 *       first event of a page (-1: unknown count) and 0 otherwise.
 *
 * The payload stays valid until the next call on this cursor.
 * Returns 1 (an event), 0 (end of data) or a negative errno (corrupt data: the reason, with
 * file offset, in hgt_input_error()).
 */
int hgt_cursor_next(struct hgt_cursor *c, struct tep_record *rec);

/** hgt_cursor_page_ts - the raw timestamp of the current page header. */
uint64_t hgt_cursor_page_ts(const struct hgt_cursor *c);

/** hgt_cursor_at_page_start - true when the last event returned was the first of its page. */
bool hgt_cursor_at_page_start(const struct hgt_cursor *c);

/** hgt_cursor_file_offset - file offset of the page holding the last event (uncompressed) or
 * of its compressed chunk. */
uint64_t hgt_cursor_file_offset(const struct hgt_cursor *c);

/* Loss accounting of a cursor so far: pages with missed-events flags, and known counts. */
struct hgt_loss {
	uint64_t pages_with_loss;
	uint64_t events_lost;	      /* sum of known counts */
	uint64_t pages_unknown_count; /* flag without a stored count */
};
void hgt_cursor_loss(const struct hgt_cursor *c, struct hgt_loss *loss);

#ifdef __cplusplus
}
#endif

#endif /* HGTRACE_TRACEDAT_H */
