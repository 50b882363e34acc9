/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/infer.h - the guest -> host clock offset inferred from the trace itself.
 *
 * A guest event can only happen while its vCPU's host thread is in guest mode (between
 * the thread's kvm_entry and kvm_exit) or, under QEMU TCG, while the thread runs (between
 * its sched_switch in and out). With c = host - guest (the guest already scaled by a known
 * TSC ratio), an event at guest time g requires g + c inside one of those windows, so c
 * lies in the union over windows k of [start_k - g, end_k - g]. Intersected over every
 * event of a vCPU, the set shrinks to a narrow interval: its middle is the estimate and
 * its half-width an honest error bound (the truth is inside it whenever the windows are a
 * superset of the real guest-mode time, which the collection below guarantees by
 * building them defensively around lost records).
 */
#ifndef HGTRACE_INFER_H
#define HGTRACE_INFER_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hgt_input;

/* A host interval [start, end] (both included) in host trace units. */
struct hgt_infer_window {
	int64_t start, end;
};

enum hgt_infer_status {
	HGT_INFER_OK = 0,
	HGT_INFER_EMPTY,      /* no offset puts every event inside a window */
	HGT_INFER_TOO_WIDE,   /* what remains is wider than the limit asked for */
	HGT_INFER_AMBIGUOUS,  /* far apart offsets fit equally well (within the limit apart) */
	HGT_INFER_NO_DATA,    /* no guest events, or no windows */
	HGT_INFER_NO_OVERLAP, /* what fits puts under 3/4 of the events it could in the span */
};

struct hgt_infer_result {
	enum hgt_infer_status status;
	int64_t lo, hi;	      /* feasible offsets (host = guest + c): the hull of what fits */
	int64_t estimate;     /* the middle of [lo, hi], or where the gaps put it (gaps) */
	uint64_t bound;	      /* the truth is within estimate +- bound (half-width, or the
				 farther end of [lo, hi] from a gaps estimate) */
	uint64_t events;      /* guest events given */
	uint64_t in_span;     /* of them, inside the host's observed span (best interval) */
	uint64_t reach;	      /* the most any offset could put in the span */
	uint32_t pieces;      /* disjoint intervals within [lo, hi] */
	uint32_t weak_pieces; /* intervals left out: under 3/4 of reach in the span */
	/* HGT_INFER_EMPTY: the best offset of the events that still agreed, and how many of
	 * all the events lie outside every window with it */
	int64_t best;
	uint64_t outside;
	/* HGT_INFER_AMBIGUOUS: the two best-supported intervals (lo..hi with in_span events
	 * is the best, alt_lo..alt_hi the next) */
	int64_t alt_lo, alt_hi;
	uint64_t alt_in_span;
	/* HGT_INFER_OK: the best-supported piece within lo..hi: every offset in it puts every
	 * event in a window (or beside the host's span); lo..hi may hold gaps between pieces */
	int64_t best_lo, best_hi;
	bool by_gaps; /* the estimate rests on known gaps, not on the middle */
};

struct hgt_infer_opts {
	size_t sz;	    /* sizeof(struct hgt_infer_opts); use HGT_OPTS() */
	uint64_t max_bound; /* HGT_INFER_TOO_WIDE above this half-width (0: no limit) */
	/*
	 * The middle of [lo, hi] is the truth only when the least time from a window's start
	 * to an event in it (the entry gap) equals the least time from an event to its
	 * window's end (the exit gap): lo = truth - entry gap, hi = truth + exit gap. With
	 * @gaps, the estimate is the middle moved by (entry_gap - exit_gap) / 2 (kept within
	 * [lo, hi], the bound widened to the farther end): gaps measured on a pair whose
	 * offset is known (hgtrace sync-check prints them), in host units.
	 */
	bool gaps;
	uint64_t entry_gap, exit_gap;
	/*
	 * @within: only offsets in [@within_lo, @within_hi] are considered (a set known to
	 * hold the truth, such as a channel's samples +- their bound), and every offset there
	 * that fits is kept, however few events it puts in the host's span: no piece is
	 * dropped as weakly supported, so the result holds the truth whenever the windows
	 * do (never HGT_INFER_NO_OVERLAP, AMBIGUOUS or TOO_WIDE). Offsets of the range that
	 * put no event in the span fit trivially and are kept too.
	 */
	bool within;
	int64_t within_lo, within_hi;
};

/**
 * hgt_infer_offset - the offsets c for which every guest event @g[0..n-1] (sorted, in host
 * units) falls inside the allowed host set: the windows @w[0..nw-1] (any order, may
 * overlap) and everything before @span_lo or after @span_hi (where the host did not
 * observe the thread, so nothing is known). Only offsets that put at least one event in
 * [@span_lo, @span_hi] are considered.
 *
 * Of the disjoint intervals that remain, those that put at least 3/4 as many events in
 * the span as any offset could (@res->reach) are kept, and @res gets their hull; when none
 * does, HGT_INFER_NO_OVERLAP: what fits only does so by putting the guest beside the
 * host's recording. Returns 0 (see @res->status) or -ENOMEM / -EINVAL.
 */
int hgt_infer_offset(const int64_t *g, size_t n, const struct hgt_infer_window *w, size_t nw,
		     int64_t span_lo, int64_t span_hi, const struct hgt_infer_opts *opts,
		     struct hgt_infer_result *res);

/* How a vCPU's windows were built. */
enum hgt_infer_source {
	HGT_INFER_KVM,	 /* kvm_entry -> kvm_exit of the thread */
	HGT_INFER_SCHED, /* sched_switch in -> out of the thread (QEMU TCG) */
};

/* One guest CPU of hgt_infer_pair(). */
struct hgt_infer_cpu {
	int pid; /* in: the host thread that ran it (0: skip this CPU) */
	enum hgt_infer_source source;
	uint64_t windows;     /* host windows of the thread */
	uint64_t lost_ranges; /* host intervals with lost records, taken as allowed */
	struct hgt_infer_result r;
	/* with pair opts .drift: one result per time slice of the guest's events */
	int nr_slices;
	struct hgt_infer_result *slice; /* caller frees */
	int64_t *slice_time;		/* guest time (host units) at each slice's middle */
	int64_t first, last;		/* guest times (host units) of its first and last event */
};

/* A range of offsets known to hold the truth (hgt_infer_opts.within). */
struct hgt_infer_range {
	bool on;
	int64_t lo, hi;
};

struct hgt_infer_pair_opts {
	size_t sz;	    /* sizeof(struct hgt_infer_pair_opts); use HGT_OPTS() */
	uint64_t ratio;	    /* known guest TSC scaling ratio (0: 1.0) */
	unsigned int frac;  /* its fraction bits */
	uint64_t max_bound; /* as in hgt_infer_opts, in host units */
	bool sched;	    /* windows from sched_switch even where kvm events exist */
	int drift_slices;   /* > 1: also infer per time slice (for offset over time) */
	bool gaps;	    /* as in hgt_infer_opts, in host units */
	uint64_t entry_gap, exit_gap;
	uint64_t widen; /* every window widened by this on both sides (host units): an
			   offset that moves by at most this within a slice still fits */
	/* NULL, or ncpu ranges: guest CPU i's offset sought within within[i] where .on (as
	 * hgt_infer_opts.within; not its slices) */
	const struct hgt_infer_range *within;
};

/**
 * hgt_infer_pair - infer each guest CPU's offset from host file @host and guest file
 * @guest (top buffers, raw timestamps). @cpus[i].pid names the host thread of guest CPU i
 * (@ncpu entries). Windows come from the threads' kvm_entry/kvm_exit where the host has
 * them, else from their sched_switch running intervals; a page with lost records on any
 * host CPU makes the time it covers allowed for every thread. Fills the rest of @cpus.
 * Returns 0 or -errno (reason in hgt_last_error()).
 */
int hgt_infer_pair(struct hgt_input *host, struct hgt_input *guest, struct hgt_infer_cpu *cpus,
		   int ncpu, const struct hgt_infer_pair_opts *opts);

/** hgt_infer_cpu_free - free what hgt_infer_pair() allocated in @cpus[0..ncpu-1]. */
void hgt_infer_cpu_free(struct hgt_infer_cpu *cpus, int ncpu);

/*
 * The channel's sync refined by the trace (hgt_sync_refine()): per guest CPU the channel's
 * set (each sample's offset +- its bound, intersected), the vCPU windows' set
 * (hgt_infer_pair()) and what both allow. All in TIME_SHIFT offset units (host = guest +
 * offset).
 */
enum hgt_refine_status {
	HGT_REFINE_OK,		 /* both sets meet: their intersection is stored */
	HGT_REFINE_DISAGREE,	 /* they do not meet: one is wrong; the channel's is kept */
	HGT_REFINE_NO_TRACE,	 /* the windows gave no offset (no events, no windows, ...) */
	HGT_REFINE_CHANNEL_MOVED /* the channel's samples do not meet each other (drift) */
};

struct hgt_refine_cpu {
	int pid; /* the vCPU's host thread */
	enum hgt_refine_status status;
	bool channel, trace;  /* each set known */
	int64_t ch_lo, ch_hi; /* the channel's */
	int64_t tr_lo, tr_hi; /* the vCPU windows' */
	int64_t lo, hi;	      /* what is kept: both (OK), else the channel's */
	int64_t at;	      /* the offset stored: in the windows' best piece where it can be */
	uint64_t events;      /* guest events the windows were given */
	/* refined over time (the offset moved): @points offsets at guest times, linearly
	 * interpolated, the truth within @reach of the line over the CPU's events; owned by
	 * the result (NULL for a constant offset) */
	int points;
	int64_t *pt_time, *pt_offset;
	uint64_t reach;
	/* HGT_REFINE_NO_TRACE: why the windows gave no offset, and (HGT_INFER_EMPTY) how
	 * many events lie outside every window at the best offset */
	enum hgt_infer_status trace_status;
	uint64_t trace_outside;
};

struct hgt_refine_result {
	int nr_cpus;
	struct hgt_refine_cpu *cpus; /* nr_cpus; free with hgt_refine_result_free() */
	int refined, disagree;	     /* CPUs */
	uint64_t channel_bound;	     /* the stored channel bound (HGT_REFINE_NO_BOUND: none,
					trace-cmd's: then the windows' set is kept when every
					sample lies inside it) */
	uint64_t trace_bound;	     /* the widest half-width of the windows' sets refined */
	uint64_t bound;		     /* the new bound: the farthest the truth can be from a CPU's
					stored offset within what is kept */
	bool stored;		     /* a tighter TIME_SHIFT was appended to the guest file */
	int over_time, slices;	     /* CPUs refined over time (the offset moved), in slices */
	int by_line; /* of over_time: fitted as one line through the events, by its rate */
};

#define HGT_REFINE_NO_BOUND UINT64_MAX

struct hgt_refine_opts {
	size_t sz; /* sizeof(struct hgt_refine_opts); use HGT_OPTS() */
	FILE *log; /* hgt_sync_refine_beside(): a line per pair (NULL: none) */
	/* > 1: refine every CPU over time in this many slices, even where one offset fits
	 * (without it, only a CPU whose channel samples or events fit no single offset, in
	 * HGT_REFINE_DRIFT_SLICES) */
	int drift_slices;
};

#define HGT_REFINE_DRIFT_SLICES 8

/**
 * hgt_sync_refine - refine the channel sync of guest file @guest with the windows of its
 * vCPU threads in host file @host (the host's GUEST entry names them). When some guest CPU
 * gets a narrower set, a TIME_SHIFT (one sample per CPU: the middle of what is kept) and a
 * CPUSTAT line "hgtrace sync: refined by the trace: ... bound=N" are appended to @guest;
 * CPUs whose sets do not meet are counted in @res->disagree, and then nothing is stored.
 * Returns 0 (see @res->stored) or -errno with the reason in hgt_last_error(): -ENOENT no
 * channel TIME_SHIFT or no GUEST entry, -EALREADY an exact sync, -EOPNOTSUPP a scaled TSC.
 */
int hgt_sync_refine(const char *host, const char *guest, const struct hgt_refine_opts *opts,
		    struct hgt_refine_result *res);

void hgt_refine_result_free(struct hgt_refine_result *res);

/**
 * hgt_sync_refine_beside - refine every pair that file @path (just written: a restore)
 * forms with a complete file in its directory, as the end of a session would have: @path a
 * host file whose GUEST option names a guest file there (its TRACEID, and its TIME_SHIFT's
 * peer is @path's), or @path such a guest file of a host file there. A file still being
 * recorded (FILE.recording beside it), a symlink, a guest whose last sync is already a
 * refinement or exact is left as it is. A line per pair to @opts->log: what was refined, or
 * why not. Returns the number of pairs refined, or -errno (@path unreadable, -ENOMEM).
 */
int hgt_sync_refine_beside(const char *path, const struct hgt_refine_opts *opts);

/** hgt_refine_summary - one line on @r: refined or not, and the three bounds. */
void hgt_refine_summary(const struct hgt_refine_result *r, char *buf, size_t n);

/** hgt_refine_disagreement - one line on vCPU @c of @r that was not refined (its two sets
 * do not meet, the windows gave no offset, or the channel's samples moved); "" for a vCPU
 * refined or with no event to place. */
void hgt_refine_disagreement(const struct hgt_refine_result *r, int c, char *buf, size_t n);

/** hgt_refine_status_name - what @s means, for a log line. */
const char *hgt_refine_status_name(enum hgt_refine_status s);

#ifdef __cplusplus
}
#endif

#endif
