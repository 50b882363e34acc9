/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/record.h - record this machine's ftrace into a trace.dat (version 7).
 *
 * The recorder works in a tracefs instance of its own ("hgtrace-PID", removed at the end),
 * or in the named instance given (created if missing and then removed, otherwise left as
 * it was found), so the top-level tracing settings are never touched. One thread per CPU
 * moves whole ring-buffer pages from trace_pipe_raw into a temporary file with splice
 * (libtracefs falls back to read/write where splice is refused); at the end the pages go
 * into the trace.dat with the event formats, kallsyms, printk formats, saved cmdlines,
 * clock, uname, trace id and per-CPU statistics.
 */
#ifndef HGTRACE_RECORD_H
#define HGTRACE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hgtrace/tracedat.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hgt_recorder;

struct hgt_record_opts {
	size_t sz;		   /* sizeof(struct hgt_record_opts); use HGT_OPTS() */
	const char *const *events; /* "SYSTEM" or "SYSTEM:EVENT" (also "SYSTEM/EVENT") */
	int nr_events;
	const char *clock;    /* trace clock (NULL: leave the instance's) */
	size_t buffer_kb;     /* per-CPU ring buffer (0: leave as is) */
	const char *instance; /* NULL: a private instance */
	const char *output;   /* trace.dat path (required) */
	const int *pids;      /* only these tasks' events (set_event_pid) */
	int nr_pids;
	const char *cpumask;		  /* hex mask of CPUs to trace (tracing_cpumask) */
	enum hgt_compression compression; /* of the output (default zstd via HGT_OPTS) */
	FILE *log;			  /* progress and loss lines (NULL: none) */
	bool no_splice;			  /* copy pages through user space (read/write) */
	unsigned int flush_ms; /* pages (a partial one too) reach the disk at most this late
				* (0: 1000) */
	bool sync;	       /* also fsync them every flush_ms (power-loss safety) */
	/* -f: per entry of @events (same index; NULL, or a NULL entry: none), the kernel's
	 * filter of that event (of each event of a SYSTEM entry), as trace-cmd's -f */
	const char *const *filters;
	/* pages from the ring buffer's mapping (Linux 6.10 on; before, spliced) instead of
	 * spliced: one copy a page and nothing allocated, where a splice has the kernel clear
	 * a fresh page for the ring, slow on memory the host took back (bench/agent.sh) */
	bool mmap;
};

/* Per-CPU counts at the end of a recording. */
struct hgt_record_cpu {
	uint64_t bytes;	      /* ring-buffer pages written */
	uint64_t read_events; /* the kernel's "read events" for this CPU */
	uint64_t overrun;     /* events the ring overwrote before we read them */
	uint64_t dropped;     /* "dropped events" */
};

struct hgt_record_result {
	int nr_cpus;
	struct hgt_record_cpu *cpus; /* owned by the recorder: valid until hgt_record_free() */
	uint64_t lost;		     /* overrun + dropped over all CPUs */
	uint64_t pages_with_loss;    /* pages whose header flags missed events */
	bool splice_fallback;	     /* some CPU had to use read/write */
};

/**
 * hgt_record_start - prepare tracefs (instance, clock, buffer, events, pid filter, CPU
 * mask), start one reader thread per CPU and switch tracing on.
 * Returns NULL with errno set and the reason in hgt_last_error(); tracefs is then put back.
 */
struct hgt_recorder *hgt_record_start(const struct hgt_record_opts *opts);

/**
 * hgt_record_halt - switch tracing off and let the readers drain the last (partial) pages
 * into the recording's files (OUTPUT.recording), where a reader of them (a flight
 * recorder) then finds every page; hgt_record_stop() still writes the trace.dat. Returns 0
 * or -errno (the reason in hgt_last_error()).
 */
int hgt_record_halt(struct hgt_recorder *rec);

/**
 * hgt_record_stop - switch tracing off, let the readers drain the last (partial) pages,
 * join them, write the trace.dat, and put tracefs back as it was found.
 * @res: filled with the per-CPU counts and losses (may be NULL).
 * Returns 0 or -errno (the reason in hgt_last_error()); what was read is kept on disk as
 * far as it could be written.
 */
int hgt_record_stop(struct hgt_recorder *rec, struct hgt_record_result *res);

/** hgt_record_free - free a stopped recorder. */
void hgt_record_free(struct hgt_recorder *rec);

/*
 * Crash safety. While recording to OUTPUT, hgtrace keeps the recording in the directory
 * OUTPUT.recording beside it: head.dat (the metadata and options, written before tracing
 * starts), cpuN (each CPU's pages, written as read, at most flush_ms late) and cmdlines.
 * A normal stop turns it into OUTPUT and removes it. After a kill, hgt_record_restore()
 * does the same with every whole page that reached the disk.
 */
struct hgt_restore_opts {
	size_t sz;			  /* sizeof(struct hgt_restore_opts); use HGT_OPTS() */
	enum hgt_compression compression; /* of the restored file (default zstd) */
	const char *output;		  /* write here instead of @output (NULL: @output) */
	FILE *log;			  /* what was kept and dropped per CPU (NULL: nothing) */
};

/**
 * hgt_record_restore - write @output from the cut recording in @output.recording and
 * remove that directory. Refused while the recorder still runs (-EBUSY), when there is
 * nothing to restore (-ENOENT) or when @output exists (-EEXIST; restore to another name
 * with opts->output). The tracefs instance the recorder left is removed.
 * Returns 0 or -errno with the reason in hgt_last_error().
 */
int hgt_record_restore(const char *output, const struct hgt_restore_opts *opts);

/**
 * hgt_record_reset - remove the tracefs instances hgtrace created whose creator no longer
 * runs (each noted in /run/hgtrace/instances, or named hgtrace-PID), with a line per
 * instance to @log. Instances of other tools are never touched.
 * Returns how many were removed, or -errno.
 */
int hgt_record_reset(FILE *log);

#ifdef __cplusplus
}
#endif

#endif
