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
#define HGT_SIM_MAX_INJECT 64

/* A cause of guest latency the simulator injects (hgtrace why must find it). */
enum hgt_sim_cause {
	HGT_SIM_PREEMPT = 1, /* the vCPU thread preempted by a host task for @us */
	HGT_SIM_EXITS,	     /* @count exits of @exit_reason, each handled @us by the host */
	HGT_SIM_IRQS,	     /* a storm of @count host IRQs of @us each, the vCPU out */
	HGT_SIM_GUEST,	     /* the guest itself runs another task for @us: no host cause */
	HGT_SIM_SOFTIRQS,    /* @count host NET_RX softirqs of @us each, the vCPU out */
	/* the guest halts with a timer armed, a host task takes the vCPU thread's CPU, and the
	 * thread, woken at the expiry from another host CPU, waits @us for that task (needs 2
	 * host CPUs; with no_idle_exit on its CPU, the task's switch in is not in the trace) */
	HGT_SIM_WOKEN,
};

struct hgt_sim_inject {
	enum hgt_sim_cause cause;
	uint64_t us;		  /* PREEMPT, GUEST, WOKEN: the delay; EXITS, IRQS: each one */
	unsigned int count;	  /* EXITS, IRQS */
	unsigned int exit_reason; /* EXITS: a VMX exit reason code */
};

/* One injected cause as placed: the guest delay it makes and the cause's own time. */
struct hgt_sim_injected {
	enum hgt_sim_cause cause;
	int guest_cpu;
	int guest_pid;		 /* the task woken late; a timer: the task it interrupted */
	bool timer;		 /* a timer fired late (EXITS, WOKEN), else a wakeup (the others) */
	uint64_t from_ns, to_ns; /* the delay, in report time (the host's ns) */
	uint64_t cause_ns;	 /* the injected cause's total within it */
	int host_pid;		 /* PREEMPT, WOKEN: the host task that ran; IRQS: the irq number */
};

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
	/* causes to inject, spread over the run: cause k at (k + 1) / (n + 1) of its time (of
	 * its events with max_events), on guest CPU k % nr_vcpus */
	const struct hgt_sim_inject *inject;
	int nr_inject; /* at most HGT_SIM_MAX_INJECT */
	/* a TCG host: no kvm events (its vCPU threads, "CPU N/TCG", run the guest while they
	 * run), as QEMU without KVM records */
	bool tcg;
	/* only the host's GUEST option (the vCPU threads known), no TIME_SHIFT: a session
	 * that synced nothing (with embed_sync: both, as without this) */
	bool embed_guest;
	/* with embed_sync: the TIME_SHIFT a session's agent channel stores, two samples per
	 * CPU each off the truth by up to channel_bound (and channel_bias more: a wrong
	 * channel), with its CPUSTAT line "hgtrace sync: agent channel ... bound=N" */
	int64_t channel_bound;
	int64_t channel_bias;
	/* no guest event closer than entry_gap cycles after its run's start (kvm_entry) or
	 * exit_gap before its end (kvm_exit); 0 each: 300 */
	uint64_t entry_gap, exit_gap;
	/* host CPUs (bit N: CPU N) whose switches out of idle the host trace leaves out, as
	 * some virtual machines' kernels do (this project's: CPU 1) */
	uint64_t no_idle_exit;
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
	int nr_injected;		 /* of opts->nr_inject: those the run reached */
	struct hgt_sim_injected injected[HGT_SIM_MAX_INJECT];
};

/**
 * hgt_simulate - write the host file, the guest file and the ground truth of one session.
 * Returns 0 or -errno (reason in hgt_last_error()).
 */
int hgt_simulate(const struct hgt_sim_opts *opts, struct hgt_sim_result *res);

/**
 * hgt_sim_exit_code - the VMX exit reason code named @name ("IO_INSTRUCTION", "HLT", ...,
 * the reasons the simulator uses) or given as a number. Returns it or -EINVAL.
 */
int hgt_sim_exit_code(const char *name);

#ifdef __cplusplus
}
#endif

#endif
