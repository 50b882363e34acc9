/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/report.h - the text report of one or more trace.dat files, line for line as
 * `trace-cmd report` (3.3+ line format, with the latency column) prints it.
 */
#ifndef HGTRACE_REPORT_H
#define HGTRACE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hgt_report_filter {
	const char *expr; /* libtraceevent filter syntax, e.g. "sched_switch: prev_pid == 0" */
	bool negate;	  /* -v: drop what matches */
};

struct hgt_report_input {
	const char *path;
	bool has_ts_offset; /* --ts-offset given after this input */
	int64_t ts_offset;
	uint64_t ts2secs; /* --ts2secs HZ for this input (0: the global one, if any) */
	const struct hgt_report_filter *filters; /* -F given after this input */
	int nr_filters;
};

enum hgt_report_mode {
	HGT_REPORT_EVENTS = 0,
	HGT_REPORT_STAT,	/* --stat */
	HGT_REPORT_FIRST_EVENT, /* --first-event */
	HGT_REPORT_LAST_EVENT,	/* --last-event */
	HGT_REPORT_CPUS,	/* --cpus */
	HGT_REPORT_UNAME,	/* --uname */
	HGT_REPORT_VERSION,	/* --version */
};

struct hgt_report_opts {
	size_t sz; /* sizeof(struct hgt_report_opts); use HGT_OPTS() */
	const struct hgt_report_input *inputs;
	int nr_inputs;
	const struct hgt_report_filter *filters; /* global -F (before any -i): every input */
	int nr_filters;
	const int *cpus; /* --cpu: global CPU indexes (files in order, then instances) */
	int nr_cpus;
	uint64_t ts2secs; /* global --ts2secs */
	enum hgt_report_mode mode;
	bool no_plugins;    /* -N */
	bool nsec;	    /* -t */
	bool raw;	    /* -R */
	bool ts_diff;	    /* --ts-diff */
	bool raw_ts;	    /* --raw-ts */
	bool nodate;	    /* --nodate */
	bool boundary;	    /* --boundary: mark the start of each sub-buffer */
	bool no_latency;    /* omit the latency column (trace-cmd before 3.3) */
	bool quiet;	    /* no warnings on stderr */
	bool tsync_compat;  /* guest->host times as trace-cmd computes them (wrong when scaled) */
	bool no_sync_check; /* no per-guest sync summary on stderr after a host+guest merge */
	FILE *out;	    /* NULL: stdout */
};

/**
 * hgt_report - print the report described by @opts.
 *
 * Returns 0, or a negative errno with the reason (file, offset, what) in hgt_last_error().
 * Events printed before a corrupt page are kept in the output.
 */
int hgt_report(const struct hgt_report_opts *opts);

/**
 * hgt_report_format_time - the time column as libtraceevent's "%P.Dd" time format prints it:
 * @ts divided by @div (rounded), then "%5llu.%0Pllu" for precisions 1 to 9, else "%12llu".
 * Writes at most 32 bytes to @buf and returns the length.
 */
int hgt_report_format_time(char *buf, uint64_t ts, int prec, unsigned int div);

/**
 * hgt_report_latency - the 5-character latency column of libtraceevent 1.8 for
 * common_flags @flags and common_preempt_count @pc. @buf gets 6 bytes (NUL included).
 */
void hgt_report_latency(char *buf, unsigned int flags, unsigned int pc);

#ifdef __cplusplus
}
#endif

#endif
