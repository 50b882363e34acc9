/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What lib/why/ offers export's view: hgt_why() with each vCPU thread's segments. */
#ifndef HGT_PRIVATE_WHY_H
#define HGT_PRIVATE_WHY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* why.c: hgt_why() that also gives each vCPU thread's segments (guest input @input, its
 * CPU @cpu, host thread @pid): what the host did with it from @from to @to */
struct hgt_why_part;
struct hgt_why_opts;
struct hgt_why_result;
typedef void (*hgt__why_seg_fn)(void *arg, int input, int cpu, int pid, uint64_t from, uint64_t to,
				const struct hgt_why_part *part);
struct hgt_why_result *hgt__why_segments(const struct hgt_why_opts *opts, hgt__why_seg_fn fn,
					 void *arg);

/* why.c: hgt__why_segments(), and each record of the merged inputs to @rec_fn as the pass
 * reads it (its time the report's: a guest's in its host's time), and into @edges (when not
 * NULL) how far the inputs reach: @all_to, the earliest of every CPU's last record (0 when
 * a CPU of an input has none), @newest, the latest record of all, and into @all_from[i]
 * (when not NULL: one per input) from when all of input i's records are there: the latest,
 * over its CPUs whose first page is one from before the files' span (@context says which,
 * NULL: none), of that page's last record (the CPU's records before it are not in the
 * file). For recordings in progress whose CPUs may be @lag_ns behind the newest record:
 * @upto, the later of @all_to and @lag_ns before the newest (the delays that end by then
 * are all there as they are), and @open_from, the earliest record a pass that reads on
 * from there needs, up to @upto: of each delay still open at the end (a wakeup not run, a
 * timer armed, a pair's FROM without its TO) or ending after @upto, the record it began
 * with (0, from the start, when the inputs' times are not one clock: a guest not in its
 * host's time). Segments go to @fn with @upto known, and @host_end, the host's last record (0: no
 * host): a vCPU thread's last segment ends there, not over. Each CPU's last record (0: none)
 * to @reach when not NULL. Each input to @opened (when not NULL) as it is opened, before
 * anything is read of its pages (a flight recorder's search says where they lie). */
struct hgt_input;
struct tep_handle;
struct tep_record;
typedef void (*hgt__why_rec_fn)(void *arg, int input, struct tep_handle *tep,
				struct tep_record *rec);
struct hgt__why_edges {
	uint64_t all_to, newest;
	uint64_t *all_from;
	bool (*context)(void *ctx_arg, int input, int cpu);
	void (*reach)(void *ctx_arg, int input, int cpu, uint64_t last);
	int (*opened)(void *ctx_arg, int input, struct hgt_input *in);
	void *ctx_arg;
	uint64_t lag_ns;
	uint64_t upto, open_from, host_end;
};
struct hgt_why_result *hgt__why_scan(const struct hgt_why_opts *opts, hgt__why_seg_fn fn,
				     hgt__why_rec_fn rec_fn, void *arg,
				     struct hgt__why_edges *edges);

/* why.c: @d's verdict in a few words ("preempted by stress-ng (pid 4002)", "inside the
 * guest", "not known") */
struct hgt_why_delay;
void hgt__why_cause(const struct hgt_why_delay *d, char *buf, size_t n);

#endif
