/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/view.h - a session (a host and its guests, probe files) as one self-contained HTML
 * timeline: no network at view time, no JavaScript library.
 */
#ifndef HGTRACE_VIEW_H
#define HGTRACE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hgt_view_opts {
	size_t sz;		   /* sizeof(struct hgt_view_opts); use HGT_OPTS() */
	const char *const *inputs; /* trace.dat files and simple-backend probe files */
	int nr_inputs;
	FILE *out;
	int why_top; /* the worst guest delays listed and highlighted (0: 20; < 0: none) */
	bool quiet;  /* no warnings on stderr */
	/* TSC cycles per second for inputs timed in cycles (0: the rate the recorder stored,
	 * else the one the timers show, as hgt_why()) */
	uint64_t ts2secs;
};

/**
 * hgt_view_html - write the merged session of @opts->inputs to @opts->out as one HTML page:
 * per file and CPU its events (markers) and running tasks (vCPU threads marked); per guest
 * vCPU what the host did with its thread (guest mode, exits by reason, preempted, halted,
 * blocked, host IRQs: hgtrace why's split); per probe file and thread its events; the sync
 * check and the losses in a header; the worst guest delays (hgt_why()) listed and
 * highlighted. Times are the report's. The page zooms (wheel, W/S), pans (drag, A/D),
 * searches and shows an event's report line on a click. Returns 0 or a negative errno
 * (hgt_last_error() says why).
 */
int hgt_view_html(const struct hgt_view_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
