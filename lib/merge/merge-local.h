/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal helpers of lib/merge. */
#ifndef HGTRACE_MERGE_LOCAL_H
#define HGTRACE_MERGE_LOCAL_H

#include <hgtrace/clock.h>
#include <hgtrace/merge.h>
#include <hgtrace/tracedat.h>

/* Raw ring-buffer times, unconverted: the clock of a merge over one file's own time. */
extern const struct hgt_clock hgt__raw_clock;

/* The CPU slots of @in's top buffer (0 without one). */
static inline int hgt__top_cpus(const struct hgt_input *in)
{
	int top = hgt_input_top_buffer(in);

	return top >= 0 ? hgt_input_buffer(in, top)->nr_cpus : 0;
}

/*
 * hgt__merge_add_top - add every present CPU of @in's top buffer to @m, converted by @clk,
 * each source with @user. The cursors opened go to @cur (room for hgt__top_cpus(@in), NULL
 * where none; zero it first); the caller closes them after freeing @m. Returns 0 or -errno.
 */
int hgt__merge_add_top(struct hgt_merge *m, struct hgt_input *in, const struct hgt_clock *clk,
		       struct hgt_cursor **cur, void *user);

/* The host thread of each CPU of guest @guest as @host's GUEST option names them; see
 * synccheck.c. Returns their number (pids in *@pids, caller frees) or -ENOENT / -ENOMEM. */
int hgt__guest_cpu_threads(const struct hgt_input *host, const struct hgt_input *guest, int **pids);

/* The bound stored with the last TIME_SHIFT: the last "hgtrace sync: ... bound=N" CPUSTAT
 * line of @in (*@inferred: it says the offsets were inferred from the trace); see
 * synccheck.c. False when there is none. */
bool hgt__sync_stored_bound(const struct hgt_input *in, uint64_t *bound, bool *inferred);

/* Whether the last "hgtrace sync: " CPUSTAT line of @in is a refinement's (synccheck.c). */
bool hgt__sync_last_refined(const struct hgt_input *in);

/* The CPUs @want[i] of @res refined over time, in @slices slices (refine-drift.c). */
struct hgt_infer_cpu;
struct hgt_refine_result;
struct hgt_time_shift;
int hgt__refine_drift(struct hgt_input *host, struct hgt_input *guest,
		      const struct hgt_time_shift *t, struct hgt_infer_cpu *ic, const bool *want,
		      int slices, struct hgt_refine_result *res);

/* Each guest CPU i with a thread (@pids[i] > 0) and events, as hgt_infer_pair() sees it
 * (no scaling, no widening): its event times sorted (host units), its windows with the
 * lost ranges, and the span the host observed its thread in (infer.c). */
struct hgt_infer_window;
typedef int (*hgt__infer_cpu_fn)(void *arg, int cpu, const int64_t *g, size_t n,
				 const struct hgt_infer_window *w, size_t nw, int64_t span_lo,
				 int64_t span_hi);
int hgt__infer_each(struct hgt_input *host, struct hgt_input *guest, const int *pids, int ncpu,
		    hgt__infer_cpu_fn fn, void *arg);

/* The channel's rate bound for @c: (|last - first offset| + 2 @b) / their distance, and its
 * set for o(@m): its samples interpolated +- @b, beyond them +- (@b + @rate * the distance)
 * (refine-drift.c). */
struct hgt_time_shift_cpu;
double hgt__channel_rate(const struct hgt_time_shift_cpu *c, uint64_t b);
void hgt__channel_at(const struct hgt_time_shift_cpu *c, uint64_t b, double rate, int64_t m,
		     int64_t *lo, int64_t *hi);

/* The CPUs @want[i] of @res fitted as one line through their events, by a search of the
 * rate; kept where that reaches less than what @res has (refine-rate.c). */
int hgt__refine_rate(struct hgt_input *host, struct hgt_input *guest,
		     const struct hgt_time_shift *t, const int *pids, const bool *want,
		     struct hgt_refine_result *res);

#endif
