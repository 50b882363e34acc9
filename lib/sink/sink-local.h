/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal pieces of the text sink. */
#ifndef HGT_SINK_LOCAL_H
#define HGT_SINK_LOCAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <traceevent/trace-seq.h>

struct tep_handle;
struct tep_record;
struct tep_event;
struct hgt_input;

struct hgt__info_memo;

struct hgt__line {
	struct trace_seq info;
	struct hgt__info_memo *memo; /* info texts of payloads printed before, or NULL */
	size_t olen;
	char *obuf; /* ocap bytes */
	size_t ocap;
	bool grow; /* keep everything in obuf (growing it) instead of writing to the FILE */
	bool oom;  /* growing failed: lines were lost */
	/* pid -> comm as libtraceevent found it (found names only: a pid's first registered
	 * comm never changes, an unknown one may become known) */
	struct {
		const struct tep_handle *tep;
		int pid;
		const char *comm;
	} comm_cache[512];
	/* the time column's seconds, as last printed */
	uint64_t tsec;
	char tsec_txt[24];
	size_t tsec_len;
	/* where the common fields lie in the records of one handle (text.c) */
	struct {
		const struct tep_handle *tep;
		bool fast; /* read here; else through libtraceevent */
		uint8_t off[4], size[4];
	} common;
	/* type id -> event (libtraceevent remembers only the last one it found) */
	struct {
		const struct tep_handle *tep;
		int type;
		struct tep_event *event;
	} event_cache[256];
};

#define HGT__OBUF (256 * 1024)
/* Append @n bytes of @s to the line buffer. */
void hgt__line_put(struct hgt__line *l, FILE *out, const char *s, size_t n);

/* How one record is to be printed. */
struct hgt__line_ctx {
	struct tep_handle *tep;
	bool in_usecs;	      /* sec.usec time column (else raw %12llu) */
	bool use_trace_clock; /* --ts-diff rounds to usecs */
	bool nsec;	      /* -t */
	bool raw;	      /* -R */
	bool ts_diff;
	bool latency;  /* the 3.3+ latency column (or -0xFLAGS with -R) */
	bool boundary; /* print "CPU:N [SUBBUFFER START]" first */
};

int hgt__line_init(struct hgt__line *l);
/* info-memo.c */
struct hgt__info_memo *hgt__info_memo_new(void);
void hgt__info_memo_free(struct hgt__info_memo *m);
const char *hgt__info_text(struct hgt__info_memo *m, struct trace_seq *seq, struct tep_handle *tep,
			   const struct tep_event *ev, struct tep_record *rec, bool raw,
			   size_t *len);
void hgt__line_fini(struct hgt__line *l);
/* Write out what hgt__line_print() buffered; call before anything else goes to @out. */
void hgt__line_flush(struct hgt__line *l, FILE *out);
void hgt__line_print(struct hgt__line *l, const struct hgt__line_ctx *c, struct tep_record *rec,
		     unsigned long long *last_ts, FILE *out);
/* The time as the time column prints it, without the leading space and colon. */
void hgt__format_time_col(char *buf, uint64_t ts, bool in_usecs, bool nsec);

/* export.c: a JSON string of @n bytes of @p (HTML-safe: '<' escaped) */
void hgt__json_str(FILE *f, const char *p, size_t n);
struct tep_format_field;
/* export.c: the bytes of a char-array or __data_loc string field (false: out of @rec) */
bool hgt__field_str(const struct tep_record *rec, const struct tep_format_field *f, const char **p,
		    size_t *n);

/* export.c: number field @f of @rec, 0 when NULL or outside the record */
unsigned long long hgt__field_num(const struct tep_format_field *f, const struct tep_record *rec);

/* rate.c: the rate that makes a session's TSC cycles ns for why, view and export (0:
 * times are ns already, or no rate: @how says so) */
struct hgt_input;
struct hgt_clock;
uint64_t hgt__tsc_rate(struct hgt_input *const *in, const struct hgt_clock *clk, int n, int base,
		       uint64_t given, const char **how);

/* why.c: hgt_why() that also gives each vCPU thread's segments (guest input @input, its
 * CPU @cpu, host thread @pid): what the host did with it from @from to @to */
struct hgt_why_part;
struct hgt_why_opts;
struct hgt_why_result;
typedef void (*hgt__why_seg_fn)(void *arg, int input, int cpu, int pid, uint64_t from, uint64_t to,
				const struct hgt_why_part *part);
struct hgt_why_result *hgt__why_segments(const struct hgt_why_opts *opts, hgt__why_seg_fn fn,
					 void *arg);

/* report.c: may probe file @f join the time base of a trace.dat of trace clock @tc?
 * (0 or -EINVAL) */
struct hgt_probefile;
int hgt__probe_clock_check(const char *tc, const struct hgt_probefile *f, const char *path);

/* From libhgtrace's reader. */
void hgt__set_last_error(const char *msg);
#define hgt__set_error_line hgt__set_last_error

/* kvm-guest-func.c: host vCPU thread -> guest tep, for the kvm plugin's guest symbols */
struct hgt__kvm_funcs {
	int n;
	int *pid;
	struct tep_handle **tep;
};
void hgt__kvm_funcs_set(const struct hgt__kvm_funcs *f);
const struct hgt__kvm_funcs *hgt__kvm_funcs_get(void);

/* The same map by top-level input index, for the parallel workers' own teps. */
struct hgt__kvm_map {
	int n;
	int *pid;
	int *top;
};

/* parallel.c: formatting in worker threads, output in order */
#define HGT__PAR_SLACK (128 * 1024 + 64)
struct hgt__par;
struct hgt__par_handle {
	int top;		  /* index of the top-level input it reads */
	struct hgt__line_ctx ctx; /* tep replaced by each worker's own */
	const char *prefix;	  /* file-name column, or NULL */
	size_t prefix_len;
};
struct hgt__par *hgt__par_new(int nr_workers, const char *const *paths,
			      struct tep_handle *const *teps, int nr_top, unsigned int open_flags,
			      bool nsec, const struct hgt__par_handle *hs, int nr_h,
			      const struct hgt__kvm_map *kvm, FILE *out);
int hgt__par_add(struct hgt__par *p, int h, const struct tep_record *rec, bool boundary,
		 unsigned long long prev_ts);
int hgt__par_log_comm(struct hgt__par *p, int top, int pid, const char *comm);
int hgt__par_finish(struct hgt__par *p);
void hgt__par_free(struct hgt__par *p);
/* --ts-diff: the value the next line compares with, after printing one at @ts */
unsigned long long hgt__line_diff_base(const struct hgt__line_ctx *c, unsigned long long ts);

#endif
