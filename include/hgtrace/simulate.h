/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/simulate.h - a deterministic generator of a KVM host + guest tracing session.
 *
 * The host trace holds the real kvm_entry / kvm_exit / kvm_write_tsc_offset /
 * sched_switch / irq formats (copied from a real tracefs); N vCPU threads are scheduled
 * over M host CPUs (migrations, preemption by host tasks, halted vCPUs sleeping), with
 * exits of many reasons. The guest trace (x86-tsc) holds sched, irq, timer and hrtimer
 * events that happen only while their vCPU is in guest mode, stamped with KVM's relation
 * guest = ((host * ratio) >> frac) + tsc_offset. A ground-truth file gives every guest
 * event's host TSC.
 */
#ifndef HGTRACE_SIMULATE_H
#define HGTRACE_SIMULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hgtrace/tracedat.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HGT_SIM_MAX_VCPUS 256

struct hgt_sim_opts {
	size_t sz;	       /* sizeof(struct hgt_sim_opts); use HGT_OPTS() */
	uint64_t seed;	       /* same seed, same files */
	int nr_vcpus;	       /* guest CPUs (default 4) */
	int nr_host_cpus;      /* host CPUs (default 4) */
	uint64_t duration_us;  /* simulated time (default 200000 = 0.2 s) */
	uint64_t max_events;   /* stop once host + guest events reach this (0: no limit) */
	uint64_t tsc_khz;      /* host TSC frequency (default 2600000) */
	int64_t tsc_offset;    /* KVM tsc_offset of the vCPUs (0: VM started 60 s before) */
	uint64_t ratio;	       /* KVM tsc-scaling-ratio (0: unscaled) */
	unsigned int frac;     /* its fraction bits (48 Intel, 32 AMD) */
	int64_t offset_step;   /* > 0: each vCPU's tsc_offset grows by this mid-trace */
	int64_t drift_ppb;     /* != 0: offset drifts (no ratio, no step) */
	bool write_tsc_offset; /* host trace holds kvm_write_tsc_offset at VM start */
	bool embed_sync;       /* write TIME_SHIFT/GUEST as a synced recording would */
	bool sparse_vcpu_ids;  /* vCPU ids 0, 2, 4... (APIC ids), not 0, 1, 2... */
	int version;	       /* output file version (default 7) */
	enum hgt_compression compression;
	const char *host_path;	/* required */
	const char *guest_path; /* required */
	const char *truth_path; /* NULL: no ground truth file */
};

struct hgt_sim_result {
	uint64_t host_events;
	uint64_t guest_events;
	uint64_t host_trace_id;
	uint64_t guest_trace_id;
	int nr_vcpus;
	int vcpu_id[HGT_SIM_MAX_VCPUS];	 /* per guest CPU */
	int vcpu_pid[HGT_SIM_MAX_VCPUS]; /* host thread running it */
	int64_t tsc_offset;		 /* at the start */
};

/**
 * hgt_simulate - write the host file, the guest file and the ground truth of one session.
 * Returns 0 or -errno (reason in hgt_last_error()).
 */
int hgt_simulate(const struct hgt_sim_opts *opts, struct hgt_sim_result *res);

#ifdef __cplusplus
}
#endif

#endif
