/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What lib/tracedat/ offers the other parts of the library beyond its public API: an input
 * stays opaque (its fields are tracedat-local.h's, private to tracedat/).
 */
#ifndef HGT_PRIVATE_TRACEDAT_H
#define HGT_PRIVATE_TRACEDAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hgtrace/tracedat.h>

/* A recording's file of one CPU's pages (lib/record/recdir.c). */
struct hgt__page_file {
	int cpu;
	int fd;
	const char *name; /* for messages */
	/* the pages from @from to @to (0: the end); both 0: from the first byte that is not
	 * a hole (a flight recording punches out pages it no longer keeps) */
	uint64_t from, to;
	uint64_t kept;	     /* out: bytes of whole pages copied */
	uint64_t dropped;    /* out: bytes after them (a partial or damaged page onwards) */
	bool damaged;	     /* out: the copy stopped at a damaged page */
	uint64_t loss_pages; /* out: pages copied whose header flags missed events */
};

struct hgt_output;

/* What hgt__convert() takes from elsewhere than its input. */
struct hgt__convert_src {
	struct hgt__page_file *files; /* the top buffer's pages, sorted by CPU */
	int nr_files;
	const void *cmdlines; /* CMDLINES item (v6 encoding), or NULL for the input's */
	size_t cmdlines_len;
	int (*more_options)(void *ctx, struct hgt_output *out); /* after the input's */
	void *ctx;
	bool sync; /* fsync the output */
	/* compressed metadata items of @in copied as they are where the output has the same
	 * compression (the same bytes: a recording's head.dat is compressed as its file is) */
	bool keep_packed;
	/* called with the output's descriptor just before it takes its name (NULL: none) */
	int (*before_publish)(void *ctx, int fd);
	void *publish_ctx;
	/* called as pages of @files are in the output: @f's bytes before @upto are not read
	 * again (a flight recording may punch them out); a negative return stops the copy */
	int (*copied)(void *ctx, const struct hgt__page_file *f, uint64_t upto);
	void *copied_ctx;
	/* @files' CPUs copied together, the least advanced first, where the output is
	 * compressed (else one after another): the oldest pages of all go first (@copied) */
	bool together;
	/* the KALLSYMS item left empty: a file for our own searches, which look up no kernel
	 * function (a head of 5 MB written and read again at every tick otherwise) */
	bool no_kallsyms;
};
/* output.c, compress.c: a metadata item compressed once, written as it is at each rewrite */
int hgt__meta_pack(enum hgt_compression comp, const void *blob, size_t len, uint8_t **c,
		   size_t *clen);
int hgt__output_set_meta_packed(struct hgt_output *o, unsigned int id, const void *blob, size_t len,
				enum hgt_compression comp, const void *c, size_t clen);
struct hgt_convert_opts;
int hgt__convert(struct hgt_input *in, const char *path, const struct hgt_convert_opts *opts,
		 struct hgt__convert_src *src);

/* append.c: appending with a way back (attach changes two files or none) */
struct hgt_option_blob;
struct hgt__append_undo {
	uint64_t eof;
	uint64_t done_pos;
};
int hgt__append_options(const char *path, const struct hgt_option_blob *opts, int n,
			struct hgt__append_undo *undo);
int hgt__append_undo(const char *path, const struct hgt__append_undo *u);

/* formats.c: the format guard's helper forked now, before the caller starts threads; the
 * lock around libtraceevent's parser; an input's formats parsed now (0 or -errno). */
int hgt__formats_helper_start(void);

struct hgt_input;
/* input.c: the top buffer's CPU @cpu has its pages at @off, @size bytes, of file @fd
 * (@name in messages; the caller's, open while @in is read), not in @in's (uncompressed)
 * file. Cursors (hgt_cursor_open(): merge, why, view, convert) read them there; what
 * opens the file again by its name (report's parallel workers) sees none of them.
 * Returns 0 or -errno. */
int hgt__input_cpu_elsewhere(struct hgt_input *in, int cpu, int fd, const char *name, uint64_t off,
			     uint64_t size);
/* The descriptor @in reads its file through (owned by @in). */
int hgt__input_fd(const struct hgt_input *in);
/* @to (a handle of @from's file opened with HGT_OPEN_NO_KALLSYMS) looks kernel functions up
 * in @from's: in its table (safe from any thread), else in its handle's map, which must be
 * built (a first tep_find_function()) before @to is used in another thread */
struct tep_handle;
int hgt__input_share_functions(const struct hgt_input *from, struct tep_handle *to);
/* kallsyms.c: @in's kernel functions when a table of ours holds them (NULL: libtraceevent's
 * map does), read-only, for any thread; the function holding an address with the range of
 * addresses that name the same one (hgt__ksyms_range()'s comment) */
struct hgt__ksyms;
const struct hgt__ksyms *hgt__input_ksyms(const struct hgt_input *in);
const char *hgt__ksyms_range(const struct hgt__ksyms *t, unsigned long long addr,
			     unsigned long long *start, unsigned long long *lo,
			     unsigned long long *hi);
void hgt__parse_lock(void);
void hgt__parse_unlock(void);
int hgt__formats_parse(struct hgt_input *in);

/* The CPUSTAT line of a saved window's files (hgt_why_save()): "hgtrace window: FROM TO\n",
 * the delay's span and what was asked around it, in the report time of the file's stamps
 * (TSC cycles where the file has no TSC2NSEC). The sync check decides only the guest events
 * within it: outside it the host's CPUs are not all there. */
#define HGT__WINDOW_TAG "hgtrace window: "
/* clock/clock.c: append to file @host the span in which every CPU that recorded anything
 * has its records, as such a window: a flight recorder's saved window (some CPUs' pages
 * punched out before it, not yet written after it), a restored recording (the CPUs' pages
 * cut at different times by the kill). The sync check and the offset's inference then
 * decide only within it: outside it a vCPU thread may have run where no page is left.
 * Returns 0 or -errno. */
int hgt__mark_whole_span(const char *host);
/* A flight recorder's saved window (lib/flight/): "trigger N: TEXT: FROM TO" in report ns */
#define HGT__FLIGHT_TAG "hgtrace flight: "
/* input.c: @in's flight mark: "trigger N: TEXT" into @text (@n bytes) and its span; false
 * when it has none */
struct hgt_input;
bool hgt__flight_mark(const struct hgt_input *in, char *text, size_t n, uint64_t *from,
		      uint64_t *to);

/* formats.c: where a record's 2-byte type lies in @tep's records, or -1 (tep_data_type()
 * then); the type of @rec read there */
struct tep_handle;
struct tep_record;
int hgt__type_offset(struct tep_handle *tep);
int hgt__record_type(struct tep_handle *tep, int off, struct tep_record *rec);
/* formats.c: the same for the 4-byte common_pid (tep_data_pid()) */
int hgt__pid_offset(struct tep_handle *tep);
int hgt__record_pid(struct tep_handle *tep, int off, struct tep_record *rec);

#endif
