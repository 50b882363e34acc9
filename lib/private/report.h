/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What lib/report/ offers why and export: the text line of a record (trace-cmd report's),
 * payloads' info texts, fields read safely, JSON strings, the TSC rate of a session.
 */
#ifndef HGT_PRIVATE_REPORT_H
#define HGT_PRIVATE_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <traceevent/trace-seq.h>

struct tep_handle;
struct tep_record;
struct tep_event;
struct hgt_input;

struct hgt__info_memo;

/* pid -> comm as libtraceevent found it (found names only: a pid's first registered comm
 * never changes, an unknown one may become known); zeroed to start */
struct hgt__comm_cache {
	struct {
		const struct tep_handle *tep;
		int pid;
		const char *comm;
		size_t len;
	} e[512];
};

/* text.c: tep_data_comm_from_pid(), remembered in @c; its length into *@len (if not NULL) */
const char *hgt__comm_cached(struct hgt__comm_cache *c, struct tep_handle *tep, int pid,
			     size_t *len);

#define HGT__LINE_TEPS 8

struct hgt__line {
	struct trace_seq info;
	struct hgt__info_memo *memo; /* info texts of payloads printed before, or NULL */
	size_t olen;
	char *obuf; /* ocap bytes */
	size_t ocap;
	bool grow; /* keep everything in obuf (growing it) instead of writing to the FILE */
	bool oom;  /* growing failed: lines were lost */
	int werr;  /* -errno of the first write to the FILE that failed: none is tried after */
	struct hgt__comm_cache comm_cache;
	/* "%16s-%-5d" of a pid's comm and the pid, as made once its comm was known */
	struct {
		const struct tep_handle *tep;
		int pid;
		uint8_t len; /* 0: none */
		char text[43];
	} pid_col[512];
	/* the latency column of the last (flags, preempt count) printed: most lines repeat it */
	unsigned int lat_flags, lat_pc;
	char lat_txt[6]; /* "" before the first */
	/* the time column's seconds, as last printed */
	uint64_t tsec;
	char tsec_txt[24];
	size_t tsec_len;
	/* where the common fields lie in the records of each handle (text.c): the inputs of a
	 * merge take turns, HGT__LINE_TEPS of them at most before one is set up again */
	struct hgt__line_common {
		const struct tep_handle *tep;
		bool fast; /* read here; else through libtraceevent */
		uint8_t off[4], size[4];
	} common[HGT__LINE_TEPS];
	unsigned int common_next; /* the slot set up next */
	/* (handle, type id) -> event (libtraceevent remembers only the last one it found) */
	struct {
		const struct tep_handle *tep;
		int type;
		struct tep_event *event;
		size_t name_len;
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
/* hgt__info_text(), a compiled format's text written straight into @dst (HGT__INFO_DST
 * bytes; NULL: none), and then @dst returned */
#define HGT__INFO_DST 8192
const char *hgt__info_text_to(struct hgt__info_memo *m, struct trace_seq *seq,
			      struct tep_handle *tep, const struct tep_event *ev,
			      struct tep_record *rec, bool raw, size_t *len, char *dst);
void hgt__line_fini(struct hgt__line *l);
/* Write out what hgt__line_print() buffered; call before anything else goes to @out. */
void hgt__line_flush(struct hgt__line *l, FILE *out);
void hgt__line_print(struct hgt__line *l, const struct hgt__line_ctx *c, struct tep_record *rec,
		     unsigned long long *last_ts, FILE *out);
/* The time as the time column prints it, without the leading space and colon. */
void hgt__format_time_col(char *buf, uint64_t ts, bool in_usecs, bool nsec);

/* kvm-guest-func.c: the guest symbols the kvm plugin prints in a host's kvm_entry/exit
 * lines: the host's vCPU threads -> their guest's tep, set around a print loop */
#define HGT__KVM_LAST 16
struct hgt__ksyms;
struct hgt__kvm_funcs {
	int n;
	int *pid;
	struct tep_handle **tep;
	const struct hgt__ksyms **ksyms; /* the guest's table of functions, or NULL */
	/* per vCPU thread (by its index, modulo): the function its last rip fell in (its name
	 * one of the map's guests' handles'), zero with the map (kvm-guest-func.c); rips in
	 * [lo, end) fall in it too */
	struct hgt__kvm_last {
		int pid; /* 0: none */
		unsigned long long start, lo, end;
		const char *func;
		size_t len;
	} last[HGT__KVM_LAST];
};
struct hgt_input;
struct hgt__kvm_map;
void hgt__kvm_funcs_set(struct hgt__kvm_funcs *f);
struct hgt__kvm_funcs *hgt__kvm_funcs_get(void);
int hgt__kvm_funcs_build(struct hgt_input *const *in, int n, struct hgt__kvm_funcs *f,
			 struct hgt__kvm_map *km);

/* The same map by top-level input index, for parallel workers' own teps. */
struct hgt__kvm_map {
	int n;
	int *pid;
	int *top;
};

/*
 * parallel.c: records formatted by worker threads, each with its own handles of the
 * inputs, and written out in the order they were queued.
 */
#define HGT__PAR_SLACK (128 * 1024 + 64)
#define HGT__PAR_BATCH 4096 /* records a batch: the first of each starts one */
struct hgt__par;
struct hgt__blob;
/* a queued record as a worker gets it */
struct hgt__par_item {
	int h; /* the caller's: which of its inputs or handles */
	int cpu;
	unsigned long long ts;
	long long missed;
	unsigned long long prev_ts; /* the caller's */
	size_t off;		    /* its payload: the batch's data + off */
	int size;
	bool boundary;	  /* the caller's */
	uint32_t aux_off; /* bytes of the caller's queued with it: data + aux_off */
	uint32_t aux_len;
};
struct hgt__par_ops {
	/* a formatting context over @in (one handle per top-level input, opened for this
	 * context alone); NULL when it cannot be made */
	void *(*ctx_new)(void *arg, struct hgt_input *const *in);
	void (*ctx_free)(void *ctx);
	/* @n items (payloads in @data) formatted into @out, which comes empty and may be
	 * swapped for another buffer. Returns 0 or -errno. */
	int (*format)(void *ctx, const struct hgt__par_item *it, int n, uint8_t *data,
		      struct hgt__blob *out);
	/* @text written out in queue order (may be swapped for an empty buffer). Returns 0 or
	 * -errno. */
	int (*write)(void *arg, struct hgt__blob *text);
	void *arg;
};
/* the workers worth starting for @in: 0 below a size, for a latency trace, or on one core */
int hgt__par_workers(struct hgt_input *const *in, int n);
/* the name under which a worker opens @in again (@buf: room for it) */
const char *hgt__par_path(const struct hgt_input *in, char buf[32]);
struct hgt__par *hgt__par_new(int nr_workers, const char *const *paths,
			      struct hgt_input *const *ins, int nr_top, unsigned int open_flags,
			      bool nsec, const struct hgt__kvm_map *kvm,
			      const struct hgt__par_ops *ops);
int hgt__par_add(struct hgt__par *p, int h, const struct tep_record *rec, bool boundary,
		 unsigned long long prev_ts, const void *aux, size_t aux_len);
int hgt__par_finish(struct hgt__par *p);
void hgt__par_free(struct hgt__par *p);
/* Before @rec of top input @top (the main thread's handle @tep) is queued: the comms its
 * plugin registers (sched_switch, sched_wakeup) registered in @tep and, when new, logged for
 * the workers. Returns 1 when its plugin keeps other state (the function tracer's
 * indentation: the caller finishes the parallel path and formats the rest alone), 0, or
 * -errno. */
int hgt__par_comms(struct hgt__par *p, int top, struct tep_handle *tep, struct tep_record *rec);
bool hgt__par_stateful(const struct tep_event *ev);

/* fields.c: a JSON string of @n bytes of @p (HTML-safe: '<' escaped), written or appended */
void hgt__json_str(FILE *f, const char *p, size_t n);
struct hgt__blob;
void hgt__json_blob(struct hgt__blob *b, const char *p, size_t n);
/* hgt__json_blob() of the NUL-terminated @s */
static inline void hgt__json_blob_s(struct hgt__blob *b, const char *s)
{
	hgt__json_blob(b, s, strlen(s));
}
struct tep_format_field;
/* fields.c: the bytes of a char-array or __data_loc string field (false: out of @rec) */
bool hgt__field_str(const struct tep_record *rec, const struct tep_format_field *f, const char **p,
		    size_t *n);

/* fields.c: whether string field @f holds bytes, not text (a __u8 or __s8 array), and
 * their text as trace-cmd report -R prints such bytes, "ARRAY[02, 00, b1]", into @b */
bool hgt__field_is_bytes(const struct tep_format_field *f);
void hgt__bytes_text(struct hgt__blob *b, const char *p, size_t n);

/* fields.c: number field @f of @rec, 0 when NULL or outside the record */
unsigned long long hgt__field_num(const struct tep_format_field *f, const struct tep_record *rec);

/* rate.c: the rate that makes a session's TSC cycles ns for why, view and export (0:
 * times are ns already, or no rate: @how says so) */
struct hgt_input;
struct hgt_clock;
uint64_t hgt__tsc_rate(struct hgt_input *const *in, const struct hgt_clock *clk, int n, int base,
		       uint64_t given, const char **how);

/* report.c: may probe file @f join the time base of a trace.dat of trace clock @tc?
 * (0 or -EINVAL) */
struct hgt_probefile;
int hgt__probe_clock_check(const char *tc, const struct hgt_probefile *f, const char *path);

#endif
