/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/export.h - a session (one or more trace.dat files: a host and its guests) in the
 * Trace Event Format that chrome://tracing and ui.perfetto.dev open.
 */
#ifndef HGTRACE_EXPORT_H
#define HGTRACE_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hgt_export_opts {
	size_t sz; /* sizeof(struct hgt_export_opts); use HGT_OPTS() */
	const char *const *inputs;
	int nr_inputs;
	FILE *out;
	bool quiet; /* no warnings on stderr */
	/* TSC cycles per second for inputs timed in cycles (0: the rate the recorder stored,
	 * else the one the timers show, as hgt_why(); with none, one warning and cycles) */
	uint64_t ts2secs;
};

/**
 * hgt_export_chrome - write the merged session of @opts->inputs to @opts->out as one JSON
 * object {"traceEvents": [...]}: each input a process (its file name), each CPU a thread;
 * every event an instant ("ph":"i") with its fields, its task (common_comm, common_pid) and
 * its report text (common_info) as args; the task
 * running on each CPU (from sched_switch) and each vCPU's guest mode (kvm_entry to
 * kvm_exit, with the exit) as complete events ("ph":"X") on threads of their own. Times
 * are the report's (a guest's mapped to its host's), in microseconds with nanosecond
 * digits. Returns 0 or a negative errno (hgt_last_error() says why).
 */
int hgt_export_chrome(const struct hgt_export_opts *opts);

/**
 * hgt_export_perfetto - the same session in Perfetto's protobuf trace format (a Trace of
 * TracePackets, as ui.perfetto.dev and trace_processor read it): each input a process
 * track, each CPU thread tracks (events, tasks, guest mode); events as TrackEvent
 * instants with their fields, common_comm, common_pid and common_info as debug annotations
 * (event names, categories and annotation names interned), running tasks and guest mode
 * as slices (begin and end). Times in ns, the report's.
 * Returns 0 or a negative errno.
 */
int hgt_export_perfetto(const struct hgt_export_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
