/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The text report's own pieces: guest symbols for the kvm plugin, parallel formatting. */
#ifndef HGT_REPORT_LOCAL_H
#define HGT_REPORT_LOCAL_H

#include <stddef.h>

#include "../private/report.h"

/* kvm-guest-func.c: host vCPU thread -> guest tep, for the kvm plugin's guest symbols */

/* the hooks the kvm plugin calls (their names are the plugin's), also called by the
 * compiled kvm texts (fmt-compile.c) */
struct tep_event;
struct tep_record;
const char *tep_plugin_kvm_get_func(struct tep_event *event, struct tep_record *record,
				    unsigned long long *val);
void tep_plugin_kvm_put_func(const char *func);
/* tep_plugin_kvm_get_func() of a record logged by thread @pid, with the name's length into
 * *@len */
const char *hgt__kvm_func(int pid, unsigned long long *val, size_t *len);

/* parallel.c's handles as the report fills them */
struct hgt__par_handle {
	int top;		  /* index of the top-level input it reads */
	struct hgt__line_ctx ctx; /* tep replaced by each worker's own */
	const char *prefix;	  /* file-name column, or NULL */
	size_t prefix_len;
};
/* --ts-diff: the value the next line compares with, after printing one at @ts */
unsigned long long hgt__line_diff_base(const struct hgt__line_ctx *c, unsigned long long ts);

/* fmt-compile.c: print formats compiled per event (info-memo.c runs them) */
struct hgt__fmtc;
struct hgt__fmtc *hgt__fmtc_new(void);
void hgt__fmtc_free(struct hgt__fmtc *fc);
bool hgt__fmtc_has(struct hgt__fmtc *fc, struct tep_event *ev);
const char *hgt__fmtc_text(struct hgt__fmtc *fc, struct tep_handle *tep, struct tep_event *ev,
			   struct tep_record *rec, size_t *len, char *dst);

#endif
