/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/why.h - guest latency explained by the host: the worst delays of a guest (a task
 * woken but not yet running, a timer fired late, or a pair of events the user names), each
 * split by what the host did with that vCPU's thread meanwhile (running the guest, handling
 * exits by reason, preempted by which host tasks, blocked, host interrupts).
 */
#ifndef HGTRACE_WHY_H
#define HGTRACE_WHY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a delay is (hgt_why_opts.kinds is a mask of them). */
#define HGT_WHY_WAKEUP 1u /* sched_wakeup (or sched_waking) -> sched_switch in, same pid */
#define HGT_WHY_TIMER 2u  /* hrtimer_expire_entry's now - the expiry its hrtimer_start set */
#define HGT_WHY_PAIR 4u	  /* --from EVENT[:FILTER] -> --to EVENT[:FILTER] */

struct hgt_why_opts {
	size_t sz; /* sizeof(struct hgt_why_opts); use HGT_OPTS() */
	const char *const *inputs;
	int nr_inputs;
	unsigned int kinds;    /* HGT_WHY_* (0: wakeup and timer, or pair with @from) */
	const char *from;      /* HGT_WHY_PAIR: "EVENT[:FILTER]" as report -F takes it */
	const char *to;	       /* the same for the end */
	bool match_cpu;	       /* a pair matched per CPU (default: per task, common_pid) */
	int top;	       /* the worst N (default 10) */
	uint64_t threshold_ns; /* > 0: every delay at least this long, worst first */
	bool quiet;	       /* no warnings on stderr */
	bool host_only;	       /* only the delays whose largest part is the host's */
	uint64_t ts2secs;      /* TSC cycles per second for inputs timed in cycles (0: the rate
				* the trace's own timer events show) */
	bool flight; /* inputs a flight recorder saved (hgtrace flight): the delay its trigger
		      * marks comes first, whatever its length */
};

/* What the host did with a vCPU thread. */
enum hgt_why_state {
	HGT_WHY_GUEST,	   /* in guest mode (kvm_entry to kvm_exit): the guest ran */
	HGT_WHY_EXIT,	   /* in the host handling an exit (@what: its reason) */
	HGT_WHY_PREEMPTED, /* runnable, another task on its CPU (@what, @id: that task) */
	HGT_WHY_BLOCKED,   /* sleeping in the host (a halted vCPU, I/O) */
	HGT_WHY_IRQ,	   /* a host interrupt or softirq on its CPU (@id: irq, softirq + 1000) */
	HGT_WHY_HOST,	   /* running in the host, no exit seen yet */
	HGT_WHY_UNKNOWN,   /* outside the host trace or before its thread's first event */
	HGT_WHY_HALTED,	   /* sleeping after a HLT exit (or, under TCG, any sleep): the guest
			    * idled, so the guest's part */
};

struct hgt_why_part {
	enum hgt_why_state state;
	const char *
		what; /* "guest", "exit HLT", "stress-ng", "irq 40 eth0-rx" (owned by the result) */
	int id;	      /* PREEMPTED: the host pid; IRQ: the irq; EXIT: the reason code; else -1 */
	uint64_t ns;
};

struct hgt_why_delay {
	unsigned int kind; /* one HGT_WHY_* */
	const char *input; /* the file of the delayed events (owned by the result) */
	int cpu;	   /* its CPU (a guest's: the vCPU) */
	int pid;	   /* the task (wakeup: woken; timer: interrupted; pair: common_pid) */
	char comm[24];
	uint64_t from_ns, to_ns; /* report time (a guest's in its host's time) */
	int vcpu_thread;	 /* the host thread of that vCPU (0: not known) */
	uint64_t host_ns;	 /* the parts other than GUEST, HALTED and UNKNOWN */
	int nr_parts;
	struct hgt_why_part *parts; /* largest first */
};

struct hgt_why_result {
	uint64_t found[3]; /* delays seen, per kind (wakeup, timer, pair) */
	const char *host;  /* the host file (NULL: none among the inputs) */
	uint64_t tsc_hz;   /* times in TSC cycles were made ns at this rate (0: were ns) */
	int nr;		   /* delays kept (the worst, or those over the threshold) */
	struct hgt_why_delay *d;
	/* where tsc_hz came from: "--ts2secs", "the recorder's" (stored with the file) or
	 * "the timers'" (hrtimer expiries against the timestamps) */
	const char *tsc_how;
	/* @opts->flight: the mark ("trigger N: TEXT") and its span, NULL when no input has one;
	 * @flight_first: d[0] is the delay it marks (none overlapped it otherwise) */
	const char *flight;
	uint64_t flight_from, flight_to;
	bool flight_first;
};

/**
 * hgt_why - find the guest delays of @opts->inputs (merged as the report merges them) and
 * explain the worst ones by the host's record of their vCPU thread. Returns a result (free
 * with hgt_why_free()) or NULL with errno set and hgt_last_error() saying why.
 */
struct hgt_why_result *hgt_why(const struct hgt_why_opts *opts);

/**
 * hgt_why_print - @r as a table on @f: per delay a line, then its parts largest first and
 * the verdict (the host's top cause, or "inside the guest" when the guest ran most of it).
 * @json: one JSON object instead. Returns 0 or -EIO.
 */
int hgt_why_print(const struct hgt_why_result *r, FILE *f, bool json);

struct hgt_why_save_opts {
	size_t sz;		   /* sizeof(struct hgt_why_save_opts); use HGT_OPTS() */
	const char *const *inputs; /* the files hgt_why() read, in its order */
	int nr_inputs;
	const char *prefix; /* PREFIX-K.dat (the host), PREFIX-K-BASE.dat (the others) */
	uint64_t around_ns; /* how much before and after the delay */
	FILE *log;	    /* a line per file written (NULL: none) */
};

/**
 * hgt_why_save - write delay @k (0-based) of @r as a pair the way it was recorded: of each
 * input, the pages that may hold a time from @opts->around_ns before the delay to as long
 * after it, with the file's metadata and options whole (a host + guest pair stays tied by
 * its GUEST option and TIME_SHIFT; trace-cmd reads and merges it). Returns 0 or -errno
 * (hgt_last_error() says why; a file written before the failure stays).
 */
int hgt_why_save(const struct hgt_why_result *r, int k, const struct hgt_why_save_opts *opts);

/** hgt_why_free - free a result of hgt_why(). */
void hgt_why_free(struct hgt_why_result *r);

#ifdef __cplusplus
}
#endif

#endif
