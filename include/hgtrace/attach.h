/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/attach.h - tie a guest's trace to its host's after recording (trace-cmd attach):
 * map the guest's vCPUs to host threads from kvm_entry/kvm_exit, and store the guest ->
 * host TSC relation in the guest file (TIME_SHIFT + TSC2NSEC) and the vCPU map in the
 * host file (GUEST).
 */
#ifndef HGTRACE_ATTACH_H
#define HGTRACE_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hgtrace/tracedat.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One -s OFFSET[,SCALE[,FRAC[,TIMESTAMP]]]: offset = -(debugfs tsc-offset). */
struct hgt_attach_sample {
	int64_t offset;
	int64_t scaling; /* KVM tsc-scaling-ratio; 1 (or 1 << frac) = unscaled */
	int64_t frac;
	int64_t timestamp;
};

struct hgt_attach_opts {
	size_t sz;   /* sizeof(struct hgt_attach_opts); use HGT_OPTS() */
	int nr_cpus; /* -c: guest CPUs (0: the number of PIDs that ran a vCPU) */
	const struct hgt_attach_sample *samples; /* -s, per guest CPU, last one repeated */
	int nr_samples;	 /* 0: take offsets from the host's kvm_write_tsc_offset */
	const int *pids; /* host thread ids that may run vCPUs (none: the host's GUEST entry
			  * for this guest, else threads named "CPU N/KVM" or "CPU N/TCG") */
	int nr_pids;
	FILE *log; /* what was done, one line each (NULL: nothing) */
	/* without samples: KVM's relations as debugfs shows them after the recording
	 * (hgt_kvm_read()); with the host's kvm_write_tsc_offset events they give exact
	 * samples, TSC scaling included */
	const struct hgt_kvm_vm *kvm;
	/* infer the offsets from the trace (hgtrace/infer.h): always when there is no
	 * other source; with @infer even when there is one (the inferred ones are stored and
	 * the other source's printed beside them) */
	bool infer;
	uint64_t infer_ratio;	  /* known guest TSC ratio for the inference (0: 1.0) */
	unsigned int infer_frac;  /* its fraction bits */
	uint64_t infer_max_bound; /* refuse a bound above this, host units (0: 1 ms) */
	int infer_drift_slices;	  /* > 1: offset over time, one sample per time slice */
	bool infer_sched;	  /* windows from sched_switch even where kvm events exist */
	/* the inference's entry and exit gaps (hgt_infer_opts), host TSC cycles */
	bool infer_gaps;
	uint64_t infer_entry_gap, infer_exit_gap;
};

struct hgt_attach_result {
	int nr_cpus;		    /* guest CPUs in the TIME_SHIFT */
	int nr_mapped;		    /* PIDs matched to a vCPU */
	bool host_already_mapped;   /* the host already had a GUEST option for this guest */
	bool from_write_tsc_offset; /* offsets taken from kvm_write_tsc_offset events */
	bool from_kvm;		    /* from KVM's debugfs (and those events) */
	bool converted_host, converted_guest; /* a v6 file was rewritten as v7 */
	bool inferred;			      /* offsets inferred from the trace */
	uint64_t infer_bound;		      /* the widest per-CPU bound, host units */
	bool new_trace_id;		      /* the guest had none: one was written */
};

/**
 * hgt_attach - attach @guest to @host (both rewritten in place).
 *
 * Everything is checked before either file is touched; an error leaves both files as they
 * were. Returns 0 or -errno with the reason in hgt_last_error().
 */
int hgt_attach(const char *host, const char *guest, const struct hgt_attach_opts *opts,
	       struct hgt_attach_result *res);

/**
 * hgt_attach_parse_sample - parse "OFFSET[,SCALE[,FRAC[,TIMESTAMP]]]" (numbers in any C
 * base, a leading '-' allowed). Returns 0 or -EINVAL.
 */
int hgt_attach_parse_sample(const char *s, struct hgt_attach_sample *out);

#ifdef __cplusplus
}
#endif

#endif
