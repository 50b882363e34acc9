/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/probefile.h - the simple backend's self-describing file, and a reader for it
 * and for QEMU's simple trace format version 4.
 *
 * Layout (host byte order; the header's byte-order mark tells a reader which):
 *   header  "HGTPROBE", u32 version (1), u32 0x01020304, u32 clock (1 mono ns, 2 x86 TSC),
 *           u32 pid
 *   records u32 type, u32 size (all bytes, this header included; a multiple of 8), body:
 *     0 PAD      nothing (fills a ring's end)
 *     1 DESC     u32 id, u16 nargs, u16 flags, name\0 fmt\0, per argument: u8 kind type\0 name\0
 *     2 EVENT    u32 id, u32 tid, u64 ts, per argument: u64 (integers, pointers), or u32
 *                length + bytes padded to 8 (strings)
 *     3 DROPPED  u32 tid, u32 0, u64 ts, u64 events lost by that thread's full ring
 *     4 THREAD   u32 tid, u32 0, name\0
 *     5 ROUND    u64 ts: every record after the next ROUND has ts >= this one
 *     6 CLOCK    u64 tsc, u64 monotonic ns, u64 realtime ns (read together)
 */
#ifndef HGTRACE_PROBEFILE_H
#define HGTRACE_PROBEFILE_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HGT_PROBEFILE_MAGIC "HGTPROBE"
#define HGT_PROBEFILE_VERSION 1
#define HGT_PROBEFILE_BOM 0x01020304u
#define HGT_PROBEFILE_HDR 24
#define HGT_PROBE_CLOCK_MONO 1
#define HGT_PROBE_CLOCK_TSC 2

enum hgt_probe_rec {
	HGT_PROBE_R_PAD = 0,
	HGT_PROBE_R_DESC = 1,
	HGT_PROBE_R_EVENT = 2,
	HGT_PROBE_R_DROPPED = 3,
	HGT_PROBE_R_THREAD = 4,
	HGT_PROBE_R_ROUND = 5,
	HGT_PROBE_R_CLOCK = 6,
};

struct hgt_probefile;

/* One decoded event, valid until the next hgt_probefile_next(). */
struct hgt_probefile_event {
	const char *name; /* "Dropped_Event" for a loss record */
	const char *fmt;  /* NULL for QEMU files and loss records */
	uint64_t ts;	  /* in the file's clock */
	uint32_t tid;	  /* the pid in QEMU files */
	const char *comm; /* the thread's name when the file gives it, else NULL */
	unsigned int nargs;
	const char *const *argnames;
	const unsigned char *kinds; /* enum hgt_probe_kind per argument */
	const uint64_t *vals;	    /* integers (sign-extended per kind) */
	const char *const *strs;    /* string arguments (NUL-terminated), else NULL */
	uint64_t dropped;	    /* for "Dropped_Event" */
};

/**
 * hgt_probefile_open - open a simple-backend file: hgtrace's own (self-describing, @events
 * NULL), or QEMU's version 4 with its trace-events-all file in @events.
 * Returns the reader or NULL with errno set and the reason in @err.
 */
struct hgt_probefile *hgt_probefile_open(const char *path, const char *events, char *err,
					 size_t errsz);

/**
 * hgt_probefile_next - the next event in time order (records of all threads merged).
 * Returns 1, 0 at the end, or a negative errno with the reason (file, offset) in
 * hgt_probefile_error().
 */
int hgt_probefile_next(struct hgt_probefile *f, struct hgt_probefile_event *ev);

/**
 * hgt_probefile_clock - HGT_PROBE_CLOCK_MONO or HGT_PROBE_CLOCK_TSC (0: unknown, as in
 * QEMU files, which use CLOCK_MONOTONIC but do not say so).
 */
int hgt_probefile_clock(const struct hgt_probefile *f);

/**
 * hgt_probefile_tsc_hz - the TSC frequency measured between the file's CLOCK records,
 * or 0 when it holds fewer than two.
 */
double hgt_probefile_tsc_hz(const struct hgt_probefile *f);

/** hgt_probefile_error - the last error's one-line reason. */
const char *hgt_probefile_error(const struct hgt_probefile *f);

/**
 * hgt_probefile_format - print @ev's arguments as "name=value name=value" (signed and
 * unsigned integers in decimal, pointers in hex, strings as text) into @buf.
 */
int hgt_probefile_format(const struct hgt_probefile_event *ev, char *buf, size_t sz);

/**
 * hgt_probefile_format_qemu - print @ev's arguments as QEMU's scripts/simpletrace.py does:
 * every value but strings as its 64 bits in hex ("0xffffffffffffffff" for -1), strings as
 * Python bytes (b'...'). Returns the length written (truncated to @sz - 1).
 */
int hgt_probefile_format_qemu(const struct hgt_probefile_event *ev, char *buf, size_t sz);

/**
 * hgt_probefile_is - 1 when @path starts as a simple-backend file (ours or QEMU's).
 */
int hgt_probefile_is(const char *path);

void hgt_probefile_close(struct hgt_probefile *f);

#ifdef __cplusplus
}
#endif

#endif
