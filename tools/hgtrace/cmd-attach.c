// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace attach: tie a guest trace to its host trace after recording (as trace-cmd attach). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/attach.h>
#include <hgtrace/clock.h>
#include <hgtrace/infer.h>

#include "cmd.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hgtrace attach [-c CPUS] [-s OFFSET[,SCALE[,FRAC[,TIMESTAMP]]]]... HOST GUEST [PID...]\n"
		"  maps the guest's vCPUs to the host PIDs that ran them (from kvm_entry/kvm_exit,\n"
		"  or the threads' names 'CPU N/KVM|TCG'; without PIDs: the host's GUEST entry or\n"
		"  those names) and stores the guest->host TSC relation in GUEST and the vCPU map\n"
		"  in HOST.\n"
		"  -c CPUS   guest CPU count (default: the PIDs that ran vCPUs)\n"
		"  -s ...    per guest CPU (the last repeats): OFFSET = -(debugfs tsc-offset),\n"
		"            SCALE/FRAC = tsc-scaling-ratio and its fraction bits. Without -s the\n"
		"            offsets come from the host's kvm_write_tsc_offset events, else they\n"
		"            are inferred from the trace (see INFERENCE in hgtrace-attach(1)).\n"
		"  -s ,SCALE,FRAC  infer the offsets with this known TSC ratio\n"
		"  --infer   infer them even when kvm_write_tsc_offset or --kvm-debugfs give them\n"
		"            (those are printed beside them)\n"
		"  --max-bound N    refuse an inferred bound above N host TSC cycles (1 ms)\n"
		"  --drift[=N]      infer the offset over time: N slices (8), interpolated\n"
		"  --gaps E,X       the inferred estimate from known gaps (host TSC cycles): the\n"
		"                   least time from a window's start to a guest event (E) and from\n"
		"                   a guest event to its end (X), as sync-check prints them for a\n"
		"                   pair whose offset is known; without it, the middle (E = X)\n"
		"  --sched   infer from the threads' sched_switch intervals even with kvm events\n"
		"  --refine  HOST GUEST only: narrow the channel sync a session (or trace-cmd)\n"
		"            stored in GUEST with the vCPU threads' windows in HOST (the offsets\n"
		"            both allow); appended as a new TIME_SHIFT when tighter. A CPU\n"
		"            that one offset does not fit is refined over time (8 slices);\n"
		"            with --drift[=N] every CPU is, in N slices\n"
		"  --kvm-debugfs DIR[:PID]  read KVM's tsc-offset and TSC scaling of VMM PID (or\n"
		"            of the only VM) under DIR/kvm (DIR: /sys/kernel/debug); with the\n"
		"            host's kvm_write_tsc_offset events: exact samples, scaling included\n");
}

/* attach --refine: the channel's sync narrowed by the vCPU windows, per guest CPU. */
static int refine_files(const char *host, const char *guest, int slices)
{
	HGT_OPTS(hgt_refine_opts, ro, .drift_slices = slices);
	struct hgt_refine_result r;
	char line[600];

	if (hgt_sync_refine(host, guest, &ro, &r)) {
		cmd_error("attach --refine failed");
		hgt_refine_result_free(&r);
		return 1;
	}
	for (int i = 0; i < r.nr_cpus; i++) {
		const struct hgt_refine_cpu *c = &r.cpus[i];

		printf("guest CPU %d (thread %d): channel %lld..%lld, ", i, c->pid,
		       (long long)c->ch_lo, (long long)c->ch_hi);
		if (c->trace)
			printf("vCPU windows %lld..%lld (%llu events): ", (long long)c->tr_lo,
			       (long long)c->tr_hi, (unsigned long long)c->events);
		else
			printf("no vCPU windows' offset (%llu events): ",
			       (unsigned long long)c->events);
		if (c->status != HGT_REFINE_OK) {
			printf("%s\n", hgt_refine_status_name(c->status));
			hgt_refine_disagreement(&r, i, line, sizeof(line));
			if (*line)
				printf("  %s\n", line);
			continue;
		}
		if (c->points) {
			printf("refined over time: %d points, offset %lld..%lld, +- %llu\n",
			       c->points, (long long)c->pt_offset[0],
			       (long long)c->pt_offset[c->points - 1],
			       (unsigned long long)c->reach);
			continue;
		}
		printf("%s; offset %lld +- %llu\n", hgt_refine_status_name(c->status),
		       (long long)c->at,
		       (unsigned long long)(c->at - c->lo > c->hi - c->at ? c->at - c->lo
									  : c->hi - c->at) +
			       1);
	}
	hgt_refine_summary(&r, line, sizeof(line));
	printf("%s: %s%s\n", guest, line, r.stored ? ": TIME_SHIFT appended" : ": unchanged");
	hgt_refine_result_free(&r);
	return 0;
}

/* What the command line asked for, beyond struct hgt_attach_opts. */
struct attach_args {
	struct hgt_attach_opts *o;
	struct hgt_attach_sample *s; /* -s, n of them */
	int n;
	char *kvm_dir; /* --kvm-debugfs DIR[:PID] */
	int kvm_pid;
	bool refine;
};

/* -s OFFSET[,SCALE[,FRAC[,TIMESTAMP]]] (one more sample), or -s ,SCALE,FRAC (a known
 * ratio, the offsets inferred). Returns 0, 1 (error said) or -ENOMEM. */
static int sample_arg(const char *arg, struct attach_args *a, struct hgt_attach_opts *o)
{
	struct hgt_attach_sample *ns;

	if (arg[0] == ',') {
		struct hgt_attach_sample r;
		char buf[64];

		snprintf(buf, sizeof(buf), "0%s", arg);
		if (hgt_attach_parse_sample(buf, &r) || !strchr(arg + 1, ',')) {
			fprintf(stderr,
				"hgtrace: attach: -s '%s': expected ,SCALE,FRAC (SCALE > 0, FRAC 0-63)\n",
				arg);
			return 1;
		}
		o->infer_ratio = (uint64_t)r.scaling;
		o->infer_frac = (unsigned int)r.frac;
		return 0;
	}
	ns = realloc(a->s, sizeof(*ns) * (size_t)(a->n + 1));
	if (!ns)
		return -ENOMEM;
	a->s = ns;
	if (hgt_attach_parse_sample(arg, &a->s[a->n])) {
		fprintf(stderr,
			"hgtrace: attach: -s '%s': expected OFFSET[,SCALE[,FRAC[,TIMESTAMP]]] (SCALE > 0, FRAC 0-63)\n",
			arg);
		return 1;
	}
	a->n++;
	return 0;
}

/* --kvm-debugfs DIR[:PID]. Returns 0, 1 (error said) or -ENOMEM. */
static int kvm_arg(const char *arg, struct attach_args *a)
{
	const char *colon = strrchr(arg, ':');
	char *end;
	long v;

	free(a->kvm_dir);
	a->kvm_dir = strdup(arg);
	if (!a->kvm_dir)
		return -ENOMEM;
	if (!colon)
		return 0;
	errno = 0;
	v = strtol(colon + 1, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX) {
		fprintf(stderr, "hgtrace: attach: --kvm-debugfs '%s': expected DIR[:PID]\n", arg);
		return 1;
	}
	a->kvm_pid = (int)v;
	a->kvm_dir[colon - arg] = 0;
	return 0;
}

/* --gaps ENTRY,EXIT. Returns 0 or 1 (error said). */
static int gaps_arg(const char *arg, struct hgt_attach_opts *o)
{
	unsigned long long e, x;
	int k = -1;

	if (sscanf(arg, "%llu,%llu%n", &e, &x, &k) != 2 || k < 0 || arg[k] || *arg == '-' ||
	    strchr(arg, ',')[1] == '-' || e > (1ULL << 40) || x > (1ULL << 40)) {
		fprintf(stderr, "hgtrace: attach: --gaps '%s': expected ENTRY,EXIT cycles\n", arg);
		return 1;
	}
	o->infer_gaps = true;
	o->infer_entry_gap = e;
	o->infer_exit_gap = x;
	return 0;
}

/* One option of cmd_attach() (cmd_parse_opts() calls it). */
static int attach_opt(int c, char *arg, void *ctx)
{
	struct attach_args *a = ctx;
	struct hgt_attach_opts *o = a->o;
	long long v;

	switch (c) {
	case 'c':
		if (cmd_num_arg("attach", "-c", arg, 1, 8192, "a CPU count", &v))
			return 1;
		o->nr_cpus = (int)v;
		return 0;
	case 's':
		return sample_arg(arg, a, o);
	case 'K':
		return kvm_arg(arg, a);
	case 'I':
		o->infer = true;
		return 0;
	case 'S':
		o->infer_sched = true;
		return 0;
	case 'R':
		a->refine = true;
		return 0;
	case 'B':
		if (cmd_num_arg("attach", "--max-bound", arg, 1, LLONG_MAX,
				"a number of cycles > 0", &v))
			return 1;
		o->infer_max_bound = (uint64_t)v;
		return 0;
	case 'D':
		v = 8;
		if (arg && cmd_num_arg("attach", "--drift", arg, 2, 4096,
				       "a slice count from 2 to 4096", &v))
			return 1;
		o->infer_drift_slices = (int)v;
		return 0;
	case 'G':
		return gaps_arg(arg, o);
	}
	return 1;
}

/* The options that go together, checked once all are read. Returns 0 or 1 (error said). */
static int attach_check(const struct attach_args *a, const struct hgt_attach_opts *o, int nargs)
{
	if (a->refine && (nargs != 2 || a->n || a->kvm_dir || o->infer || o->nr_cpus ||
			  o->infer_sched || o->infer_max_bound || o->infer_gaps)) {
		fprintf(stderr,
			"hgtrace: attach: --refine takes HOST GUEST and no other option but --drift\n");
		return 1;
	}
	if (a->n && (o->infer || o->infer_ratio || o->infer_drift_slices || o->infer_gaps)) {
		fprintf(stderr, "hgtrace: attach: -s OFFSET and inference: give one of them\n");
		return 1;
	}
	if (a->n && a->kvm_dir) {
		fprintf(stderr, "hgtrace: attach: -s and --kvm-debugfs: give one of them\n");
		return 1;
	}
	return 0;
}

/* Attach HOST GUEST with the PIDs from argv. Returns the exit status. */
static int attach_run(char **argv, int nargs, struct attach_args *a, struct hgt_attach_opts *o)
{
	struct hgt_attach_result r;
	struct hgt_kvm_vm vm = { 0 };
	int *pids, ret = 2;
	long long v;

	pids = calloc((size_t)nargs + 1, sizeof(int));
	if (!pids) {
		fprintf(stderr, "hgtrace: attach: out of memory\n");
		return 1;
	}
	for (int i = 2; i < nargs; i++) {
		if (cmd_num_arg("attach", "PID", argv[i], 1, 0x3fffffff, "a thread id", &v))
			goto out;
		pids[o->nr_pids++] = (int)v;
	}
	o->samples = a->s;
	o->nr_samples = a->n;
	o->pids = pids;
	ret = 1;
	if (a->kvm_dir) {
		if (hgt_kvm_read(a->kvm_dir, a->kvm_pid, &vm)) {
			cmd_error("attach: cannot read KVM's debugfs");
			goto out;
		}
		o->kvm = &vm;
	}
	if (hgt_attach(argv[0], argv[1], o, &r)) {
		cmd_error("attach failed");
		goto out;
	}
	ret = 0;
out:
	hgt_kvm_vm_free(&vm);
	free(pids);
	return ret;
}

int cmd_attach(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "kvm-debugfs", required_argument, NULL, 'K' },
		{ "infer", no_argument, NULL, 'I' },
		{ "max-bound", required_argument, NULL, 'B' },
		{ "drift", optional_argument, NULL, 'D' },
		{ "gaps", required_argument, NULL, 'G' },
		{ "sched", no_argument, NULL, 'S' },
		{ "refine", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_attach_opts, o, .log = stdout);
	struct attach_args a = { .o = &o };
	int ret = 2;

	if (cmd_parse_opts(argc, argv, "+c:s:h", lopts, usage, "attach", attach_opt, &a, &ret))
		goto out;
	if (argc - optind < 2) {
		usage(stderr);
		goto out;
	}
	if (attach_check(&a, &o, argc - optind))
		goto out;
	if (a.refine)
		ret = refine_files(argv[optind], argv[optind + 1], o.infer_drift_slices);
	else
		ret = attach_run(argv + optind, argc - optind, &a, &o);
out:
	free(a.kvm_dir);
	free(a.s);
	return ret;
}
