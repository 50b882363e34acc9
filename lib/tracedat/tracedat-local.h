/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal definitions of the trace.dat reader. */
#ifndef HGT_TRACEDAT_LOCAL_H
#define HGT_TRACEDAT_LOCAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "../common/thread.h"
#include "../private/tracedat.h"

/* Zeroed bytes after every page buffer: libtraceevent follows __data_loc offsets (16 bit
 * offset + 16 bit length) without checking them against the record, so keep such reads
 * inside our buffer whatever the file says. */
/* hgt_open_opts flag of the library's own: a head (everything before the first page, as
 * trace-cmd's agent sends it) is a whole file; it then has no buffer */
#define HGT__OPEN_PARTIAL (1u << 30)
#define HGT__PAGE_SLACK (128 * 1024 + 64)

/* A CPU's pages in another file than the input's */
struct hgt__elsewhere {
	int fd; /* -1: in the input's */
	char *name;
};

struct hgt__buffer {
	struct hgt_buffer pub;
	char *name;
	char *clock;
	struct hgt_cpu_data *cpus;
	/* hgt__input_cpu_elsewhere(): where CPU i's pages are read when not in the file
	 * (NULL: every CPU's are in it) */
	struct hgt__elsewhere *away;
	int nr_away;
};

struct hgt__tsync;
struct hgt__guest;
struct hgt__format;

struct hgt_input {
	char *path;
	int fd;
	uint64_t file_size;
	unsigned int flags;

	int version;
	bool big_endian;
	int long_size;
	int kernel_long_size;
	uint32_t page_size;
	enum hgt_compression comp;
	char *comp_name;
	char *comp_version;
	uint64_t header_len;
	uint64_t first_options;

	struct tep_handle *tep;
	struct tep_plugin_list *plugins;
	struct hgt__ksyms *ksyms; /* the handle's functions, when it looks them up there */

	struct hgt_option *opts;
	int nr_opts;
	int max_opts;

	struct hgt_section *sections;
	int nr_sections;
	char *strings;
	uint64_t strings_len;

	struct hgt__buffer *bufs;
	int nr_bufs;
	int nr_cpus;

	bool has_trace_id;
	uint64_t trace_id;
	char *trace_clock;
	bool in_usecs;
	bool has_tsc2nsec;
	uint32_t tsc_mult, tsc_shift;
	uint64_t tsc_offset;
	bool has_date;
	int64_t date_ns;
	bool has_offset;
	int64_t offset_ns;
	char *cpustat;
	size_t cpustat_len;

	bool latency;
	uint64_t latency_offset; /* v6: start of text; v7: section header */
	uint64_t latency_size;

	struct hgt__format *formats; /* kept until the guarded parse (formats.c) */
	int nr_formats, max_formats;
	pid_t probe_pid; /* the child probing them, or 0 */
	int probe_fd, probe_start;
	bool formats_checked; /* verdict known (or no probe possible) */

	struct hgt__tsync *tsync;
	struct hgt__guest *guests;
	int nr_guests;

	uint64_t last_done_pos; /* v7: file offset of the last DONE's u64 (0: compressed) */
	uint64_t last_done_next;
	uint64_t sec_off[HGT_OPT_MAX]; /* v7 metadata section offsets from options (0 = none) */

	struct hgt_meta_info meta;
	char err[HGT__ERRLEN];
};

/*
 * A bounded reader over either the file (pread at pos) or a memory image of a decompressed
 * section. All reads check the limit and record an error naming the offset on failure.
 */
struct hgt__rd {
	struct hgt_input *in;
	const uint8_t *mem;  /* NULL: read from the file */
	uint64_t pos;	     /* file offset, or offset in mem */
	uint64_t end;	     /* limit (exclusive), same space as pos */
	uint64_t sec_offset; /* mem only: file offset of the section, for messages */
	const char *what;    /* what is being read, for messages */
};

int hgt__error(struct hgt_input *in, uint64_t off, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int hgt__rd_error(struct hgt__rd *rd, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

int hgt__pread_all(struct hgt_input *in, void *buf, uint64_t len, uint64_t off);
/* hgt__pread_all() from @fd, named @name in its messages (pages read where they lie) */
int hgt__pread_from(struct hgt_input *in, int fd, const char *name, void *buf, uint64_t len,
		    uint64_t off);
/* hgt__error() that names file @name (pages read where they lie), not @in's */
int hgt__error_at(struct hgt_input *in, const char *name, uint64_t off, int err, const char *fmt,
		  ...) __attribute__((format(printf, 5, 6)));
int hgt__rd_bytes(struct hgt__rd *rd, void *buf, uint64_t len);
int hgt__rd_u16(struct hgt__rd *rd, uint16_t *v);
int hgt__rd_u32(struct hgt__rd *rd, uint32_t *v);
int hgt__rd_u64(struct hgt__rd *rd, uint64_t *v);
/* Reads a NUL-terminated string (at most @max bytes); caller frees *s. */
int hgt__rd_str(struct hgt__rd *rd, char **s, uint64_t max);
/* Reads @len bytes into a new NUL-terminated buffer; caller frees *buf. */
int hgt__rd_alloc(struct hgt__rd *rd, char **buf, uint64_t len);
uint64_t hgt__rd_fileoff(const struct hgt__rd *rd);

uint16_t hgt__get16(const struct hgt_input *in, const void *p);
uint32_t hgt__get32(const struct hgt_input *in, const void *p);
uint64_t hgt__get64(const struct hgt_input *in, const void *p);

/* compress.c */
int hgt__decompress(struct hgt_input *in, void *dctx, const void *src, uint32_t csize, void *dst,
		    uint32_t usize, uint64_t where);
void *hgt__dctx_new(struct hgt_input *in);
void hgt__dctx_free(struct hgt_input *in, void *dctx);
/* Load a (possibly compressed) section body into memory; caller frees *buf. */
int hgt__load_section(struct hgt_input *in, uint64_t sec_off, uint16_t want_id, uint8_t **buf,
		      uint64_t *len);
int hgt__load_section_packed(struct hgt_input *in, uint64_t sec_off, uint16_t want_id,
			     uint8_t **buf, uint64_t *len, uint8_t **packed, size_t *at,
			     size_t *clen);

size_t hgt__compress_bound(enum hgt_compression comp, size_t len);
int hgt__compress_into(enum hgt_compression comp, void *cctx, const void *src, size_t len,
		       uint8_t *dst, size_t cap, size_t *dlen);
int hgt__compress(enum hgt_compression comp, void *cctx, const void *src, size_t len, uint8_t **dst,
		  size_t *dlen);
void *hgt__cctx_new(enum hgt_compression comp);
void hgt__cctx_free(enum hgt_compression comp, void *cctx);
const char *hgt__compression_version(enum hgt_compression comp);

/* zpipe.c: compressed chunks made by worker threads, taken back in order */
struct hgt__zpipe;
/* newfile.c, output.c: @fn(@ctx, fd) is called once the file is complete (and synced, when
 * asked), just before it takes the target's name; its failure fails the commit */
struct hgt_newfile;
void hgt__newfile_before_publish(struct hgt_newfile *f, int (*fn)(void *ctx, int fd), void *ctx);
void hgt__output_before_publish(struct hgt_output *o, int (*fn)(void *ctx, int fd), void *ctx);
int hgt__output_cpu_space(struct hgt_output *o, int buf, int cpu, uint8_t **p, size_t *cap);
int hgt__output_cpu_commit(struct hgt_output *o, int buf, int cpu, size_t len);
int hgt__output_spool(struct hgt_output *o);

typedef int (*hgt__zpipe_emit)(void *ctx, const uint8_t *data, size_t clen, size_t len);
int hgt__zpipe_threads(void);
struct hgt__zpipe *hgt__zpipe_new(enum hgt_compression comp, size_t chunk, int threads);
int hgt__zpipe_put(struct hgt__zpipe *z, const uint8_t *p, size_t len, hgt__zpipe_emit emit,
		   void *ctx);
uint8_t *hgt__zpipe_space(struct hgt__zpipe *z, size_t *cap);
int hgt__zpipe_commit(struct hgt__zpipe *z, size_t len, hgt__zpipe_emit emit, void *ctx);
int hgt__zpipe_flush(struct hgt__zpipe *z, hgt__zpipe_emit emit, void *ctx);
void hgt__zpipe_free(struct hgt__zpipe *z);

/* input.c: the v6 encoding of metadata item @id (16..21); caller frees *buf. */
/* A ring-buffer page's commit field: data bytes (the flags above them masked). */
#define HGT__COMMIT_MASK ((1ULL << 27) - 1)
/* ... and its flags: events were missed before the page (and their count is stored) */
#define HGT__MISSED_EVENTS (1ULL << 31)
#define HGT__MISSED_STORED (1ULL << 30)

int hgt__input_meta_blob(struct hgt_input *in, unsigned int id, uint8_t **buf, uint64_t *len);
int hgt__input_meta_packed(struct hgt_input *in, unsigned int id, uint8_t **buf, uint64_t *len,
			   uint8_t **packed, size_t *at, size_t *clen);

/* cursor.c: the next batch of whole pages of a cursor's CPU, without decoding them.
 * Returns 1 (*pages, *len valid until the next call), 0 at the end, or -errno. */
int hgt__cursor_next_pages(struct hgt_cursor *c, const uint8_t **pages, size_t *len);

/* formats.c */
int hgt__format_add(struct hgt_input *in, const char *system, char *text, uint64_t size,
		    uint64_t where);
void hgt__formats_check_start(struct hgt_input *in, bool early);
void hgt__formats_free(struct hgt_input *in);

/* peer.c */
int hgt__parse_peer_options(struct hgt_input *in);
void hgt__tsync_free(struct hgt__tsync *ts);
void hgt__guests_free(struct hgt_input *in);

/* options.c */
int hgt__parse_options_v7(struct hgt_input *in);
int hgt__parse_options_v6(struct hgt_input *in, struct hgt__rd *rd);
int hgt__add_buffer(struct hgt_input *in, const char *name, const char *clock, uint32_t page_size);

/* meta.c */
int hgt__read_header_info(struct hgt_input *in, struct hgt__rd *rd);
int hgt__read_ftrace_events(struct hgt_input *in, struct hgt__rd *rd);
int hgt__read_event_formats(struct hgt_input *in, struct hgt__rd *rd);
int hgt__read_kallsyms(struct hgt_input *in, struct hgt__rd *rd);
/* kallsyms.c: tep_parse_kallsyms() without its sscanf(); the table a printed file uses */
int hgt__kallsyms_own(struct tep_handle *tep, const char *text);
struct hgt__ksyms *hgt__ksyms_new(const char *text);
void hgt__ksyms_free(struct hgt__ksyms *t);
char *hgt__ksyms_resolve(void *priv, unsigned long long *addrp, char **modp);
int hgt__read_printk(struct hgt_input *in, struct hgt__rd *rd);
int hgt__read_cmdlines(struct hgt_input *in, struct hgt__rd *rd);

#endif
