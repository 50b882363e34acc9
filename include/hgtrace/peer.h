/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/peer.h - host and guest files as peers: trace ids, the host's GUEST options
 * (guest name, vCPU count, vCPU -> host thread map) and the guest's TIME_SHIFT option
 * (guest -> host clock samples per guest CPU); builders for both, used by attach and the
 * recorder.
 */
#ifndef HGTRACE_PEER_H
#define HGTRACE_PEER_H

#include <stddef.h>
#include <stdint.h>

#include <hgtrace/tracedat.h>

#ifdef __cplusplus
extern "C" {
#endif

/* TIME_SHIFT flags */
#define HGT_TSYNC_INTERPOLATE 1u

/* The samples of one guest CPU, sorted by time. */
struct hgt_time_shift_cpu {
	uint32_t count;
	const int64_t *time;	/* guest timestamp of each sample */
	const int64_t *offset;	/* host = guest + offset (unscaled), i.e. -tsc_offset */
	const int64_t *scaling; /* KVM's tsc-scaling-ratio (host -> guest), 1 = none */
	const int64_t *frac;	/* its fraction bits */
};

struct hgt_time_shift {
	uint64_t peer_id; /* the host's trace id */
	uint32_t flags;	  /* HGT_TSYNC_INTERPOLATE */
	int nr_cpus;
	const struct hgt_time_shift_cpu *cpus;
};

/**
 * hgt_input_time_shift - the last TIME_SHIFT option of a (guest) file, decoded; NULL when
 * it has none. Owned by @in.
 */
const struct hgt_time_shift *hgt_input_time_shift(const struct hgt_input *in);

/* One GUEST option of a host file. */
struct hgt_guest {
	const char *name;   /* "" when attach wrote it */
	uint64_t trace_id;  /* the guest file's TRACEID */
	int nr_vcpus;	    /* entries of cpu_pid */
	const int *cpu_pid; /* host thread id per vCPU id (0: unknown, -1: network guest) */
};

/** hgt_input_nr_guests - number of GUEST options of a host file. */
int hgt_input_nr_guests(const struct hgt_input *in);

/**
 * hgt_input_guest - GUEST option @i (file order). Strings and arrays are owned by @in.
 * Returns 0 or -ENOENT.
 */
int hgt_input_guest(const struct hgt_input *in, int i, struct hgt_guest *g);

/**
 * hgt_input_guest_by_id - the (last) GUEST option for guest trace id @trace_id.
 * Returns 0 or -ENOENT.
 */
int hgt_input_guest_by_id(const struct hgt_input *in, uint64_t trace_id, struct hgt_guest *g);

/**
 * hgt_guest_option_build - the payload of a GUEST option: @name, @trace_id, and @n
 * (vCPU id, host pid) pairs. The real vCPU ids are stored: one entry per id from 0 to the
 * largest (pid 0 for ids without a thread), as trace-cmd's reader requires every id to be
 * below the count. *@buf is allocated; caller frees.
 */
int hgt_guest_option_build(const char *name, uint64_t trace_id, int n, const int *vcpu,
			   const int *pid, uint8_t **buf, uint32_t *len);

/**
 * hgt_time_shift_option_build - the payload of a TIME_SHIFT option for @ts (fractions
 * included). *@buf is allocated; caller frees.
 */
int hgt_time_shift_option_build(const struct hgt_time_shift *ts, uint8_t **buf, uint32_t *len);

/**
 * hgt_trace_id_generate - a new 64-bit trace id (FNV-1a over time, pid and host name, as
 * trace-cmd makes them). Never 0.
 */
uint64_t hgt_trace_id_generate(void);

#ifdef __cplusplus
}
#endif

#endif
