/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/clock.h - turn raw ring-buffer timestamps into displayed times, the way
 * trace-cmd's reader does: [guest->host] -> --ts2secs or TSC2NSEC -> + offsets.
 */
#ifndef HGTRACE_CLOCK_H
#define HGTRACE_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hgt_input;
struct hgt_time_shift;

struct hgt_clock_opts {
	size_t sz;	    /* sizeof(struct hgt_clock_opts); use HGT_OPTS() */
	bool raw_ts;	    /* --raw-ts: no conversion and no offsets at all */
	bool no_date;	    /* --nodate: ignore the DATE option */
	bool has_ts_offset; /* --ts-offset given for this input */
	int64_t ts_offset;  /* ns added (trace-cmd: replaces the base before DATE/OFFSET) */
	uint64_t ts2secs;   /* --ts2secs HZ for this input (0: none) */
	bool no_tsync;	    /* ignore the file's TIME_SHIFT (buffer instances, --raw-ts) */
	bool tsync_compat;  /* guest->host as trace-cmd computes it (see hgt_clock_guest_to_host) */
};

/* Conversion state of one input; plain data, copy freely. */
struct hgt_clock {
	bool raw;
	double ts2secs;	   /* ns per tick when --ts2secs was given, else 0 */
	uint32_t tsc_mult; /* TSC2NSEC (mult 0: no conversion) */
	uint32_t tsc_shift;
	int64_t offset;			    /* sum of DATE, OFFSET and --ts-offset, ns */
	const struct hgt_time_shift *tsync; /* guest file: TIME_SHIFT samples (owned by input) */
	bool tsync_compat;
};

/**
 * hgt_clock_guest_to_host - the host TSC of guest timestamp @ts recorded on guest CPU @cpu,
 * from the TIME_SHIFT samples of @clk.
 *
 * Native (default): the samples' offset (= -tsc_offset) and KVM ratio/fraction bits are
 * KVM's own relation guest = ((host * ratio) >> frac) + tsc_offset, inverted exactly with
 * 128-bit arithmetic: host = ceil(((guest + offset) << frac) / ratio), the smallest host
 * TSC whose guest value is @ts. Between samples the offset is interpolated (flag 1) or
 * taken from the latest sample at or before @ts (a step function).
 *
 * Compat (@clk->tsync_compat): trace-cmd's timestamp_host_sync(): ((ts * ratio) >> frac)
 * in 64 bits (it wraps) plus the offset, the ratio ignored with a single sample, and past
 * the last sample the offset of the one before it.
 *
 * Both agree whenever ratio is 1 (or exactly 1 << frac) and the offset is constant.
 */
uint64_t hgt_clock_guest_to_host(const struct hgt_clock *clk, uint64_t ts, int cpu);

/**
 * hgt_tsc_host_to_guest - KVM's forward relation ((host * ratio) >> frac) + tsc_offset
 * (mod 2^64, 128-bit product). ratio 0 means 1.0.
 */
static inline uint64_t hgt_tsc_host_to_guest(uint64_t host, uint64_t ratio, unsigned int frac,
					     int64_t tsc_offset)
{
	if (!ratio)
		return host + (uint64_t)tsc_offset;
	return (uint64_t)(((unsigned __int128)host * ratio) >> frac) + (uint64_t)tsc_offset;
}

/**
 * hgt_tsc_guest_to_host - the exact inverse: the smallest host TSC whose guest TSC is
 * @guest (ceil(((guest - tsc_offset) << frac) / ratio), 128-bit). ratio 0 means 1.0.
 */
uint64_t hgt_tsc_guest_to_host(uint64_t guest, uint64_t ratio, unsigned int frac,
			       int64_t tsc_offset);

/**
 * hgt_clock_init - the conversion trace-cmd applies to @in's timestamps with @opts.
 * Returns 0, or -EINVAL for a bad opts size.
 */
int hgt_clock_init(struct hgt_clock *clk, const struct hgt_input *in,
		   const struct hgt_clock_opts *opts);

/**
 * hgt_clock_add_offset - add @ns to the offset (used by --align-ts style callers).
 */
void hgt_clock_add_offset(struct hgt_clock *clk, int64_t ns);

/**
 * hgt_mul_u64_u32_shr - (@a * @mult) >> @shift over 128 bits, truncated to 64 bits
 * (identical to the kernel's and trace-cmd's mul_u64_u32_shr() for shift <= 32).
 */
static inline uint64_t hgt_mul_u64_u32_shr(uint64_t a, uint32_t mult, unsigned int shift)
{
	return (uint64_t)(((unsigned __int128)a * mult) >> shift);
}

/**
 * hgt_clock_convert - displayed time of a raw timestamp @ts recorded on @cpu.
 */
static inline uint64_t hgt_clock_convert(const struct hgt_clock *clk, uint64_t ts, int cpu)
{
	if (clk->raw)
		return ts;
	if (clk->tsync)
		ts = hgt_clock_guest_to_host(clk, ts, cpu);
	if (clk->ts2secs != 0)
		ts = (uint64_t)((double)ts * clk->ts2secs);
	else if (clk->tsc_mult)
		ts = hgt_mul_u64_u32_shr(ts, clk->tsc_mult, clk->tsc_shift);
	return ts + (uint64_t)clk->offset;
}

/**
 * hgt_trace_clock_read - read ftrace clock @clock ("x86-tsc", "mono", "mono_raw", "boot",
 * "tai") from user space, in the units its ring-buffer timestamps have, so that both ends
 * of a sync exchange are stamped in their trace clocks. Returns 0, or -EOPNOTSUPP for a
 * clock that user space cannot read (local, global, perf, uptime, counter: kernel-only).
 */
int hgt_trace_clock_read(const char *clock, uint64_t *ts);

/** hgt_trace_clock_readable - whether hgt_trace_clock_read() can read @clock. */
bool hgt_trace_clock_readable(const char *clock);

/**
 * hgt_tsc2nsec_read - the TSC -> ns conversion (ns = (tsc * mult) >> shift) the kernel gives
 * user space (perf's time_mult and time_shift, equal on every CPU), what a TSC2NSEC
 * option holds. Returns 0, or -EOPNOTSUPP where the kernel does not trust the TSC for it
 * (perf cap_user_time 0), or another -errno; the reason in hgt_last_error().
 */
int hgt_tsc2nsec_read(uint32_t *mult, uint32_t *shift);

/* The TSC and CLOCK_MONOTONIC_RAW read at one instant (within err_ns). */
struct hgt_tsc_sample {
	uint64_t tsc, ns, err_ns;
};

/** hgt_tsc_sample_read - one pair (of 16 tries, the tightest). Returns 0 or -errno. */
int hgt_tsc_sample_read(struct hgt_tsc_sample *s);

/**
 * hgt_tsc2nsec_measure - the TSC -> ns conversion (ns = (tsc * mult) >> shift, shift <= 32
 * as TSC2NSEC takes it) measured between two samples at least 100 ms apart, where the
 * kernel gives none (hgt_tsc2nsec_read()). *@ppm (may be NULL) gets the rate's error bound.
 * Returns 0, -EAGAIN for samples too close together, or another -errno.
 */
int hgt_tsc2nsec_measure(const struct hgt_tsc_sample *a, const struct hgt_tsc_sample *b,
			 uint32_t *mult, uint32_t *shift, double *ppm);

/* One vCPU of a KVM VM as <debugfs>/kvm/<pid>-<fd>/vcpu<id>/ shows it. */
struct hgt_kvm_vcpu {
	int id;		    /* KVM vcpu id (= APIC id), not the guest CPU number */
	int64_t tsc_offset; /* tsc-offset */
	uint64_t ratio;	    /* tsc-scaling-ratio (0: no file, unscaled) */
	unsigned int frac;  /* tsc-scaling-ratio-frac-bits */
};

struct hgt_kvm_vm {
	int pid;		    /* the VMM */
	int nr;			    /* vCPUs, sorted by id */
	struct hgt_kvm_vcpu *vcpus; /* guest CPU i is vcpus[i] (trace-cmd's convention) */
	char dir[512];		    /* the VM's debugfs directory */
};

/**
 * hgt_kvm_read - the TSC relation of every vCPU of VM @pid (0: the only VM there is) from
 * @debugfs (NULL: /sys/kernel/debug): guest = ((host * ratio) >> frac) + tsc_offset.
 * Returns 0 or -errno with the reason in hgt_last_error(); free with hgt_kvm_vm_free().
 */
int hgt_kvm_read(const char *debugfs, int pid, struct hgt_kvm_vm *vm);

void hgt_kvm_vm_free(struct hgt_kvm_vm *vm);

#ifdef __cplusplus
}
#endif

#endif
