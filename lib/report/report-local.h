/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The text report's own pieces: guest symbols for the kvm plugin, parallel formatting. */
#ifndef HGT_REPORT_LOCAL_H
#define HGT_REPORT_LOCAL_H

#include "../private/report.h"

/* kvm-guest-func.c: host vCPU thread -> guest tep, for the kvm plugin's guest symbols */

/* the hooks the kvm plugin calls (their names are the plugin's), also called by the
 * compiled kvm texts (fmt-compile.c) */
struct tep_event;
struct tep_record;
const char *tep_plugin_kvm_get_func(struct tep_event *event, struct tep_record *record,
				    unsigned long long *val);
void tep_plugin_kvm_put_func(const char *func);

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

/* fmt-compile.c: print formats compiled per event (info-memo.c runs them) */
struct hgt__fmtc;
struct hgt__fmtc *hgt__fmtc_new(void);
void hgt__fmtc_free(struct hgt__fmtc *fc);
bool hgt__fmtc_has(struct hgt__fmtc *fc, struct tep_event *ev);
const char *hgt__fmtc_text(struct hgt__fmtc *fc, struct tep_handle *tep, struct tep_event *ev,
			   struct tep_record *rec, size_t *len);

#endif
