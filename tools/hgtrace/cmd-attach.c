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
	struct hgt_attach_sample *s = NULL;
	struct hgt_attach_result r;
	struct hgt_kvm_vm vm = { 0 };
	char *kvm_dir = NULL;
	int kvm_pid = 0, rc;
	bool refine = false;
	int *pids = NULL, n = 0, c, i, ret = 2;
	char *end;
	long long v;

	optind = 1;
	while ((c = cmd_getopt(argc, argv, "+c:s:h", lopts, usage, &rc)) != -1) {
		switch (c) {
		case 'c':
			if (cmd_num_arg("attach", "-c", optarg, 1, 8192, "a CPU count", &v))
				goto out;
			o.nr_cpus = (int)v;
			break;
		case 's': {
			struct hgt_attach_sample *ns;

			if (optarg[0] == ',') {
				/* ",SCALE,FRAC": a known ratio, the offset inferred */
				struct hgt_attach_sample r;
				char buf[64];

				snprintf(buf, sizeof(buf), "0%s", optarg);
				if (hgt_attach_parse_sample(buf, &r) || !strchr(optarg + 1, ',')) {
					fprintf(stderr,
						"hgtrace: attach: -s '%s': expected ,SCALE,FRAC (SCALE > 0, FRAC 0-63)\n",
						optarg);
					goto out;
				}
				o.infer_ratio = (uint64_t)r.scaling;
				o.infer_frac = (unsigned int)r.frac;
				break;
			}
			ns = realloc(s, sizeof(*s) * (size_t)(n + 1));

			if (!ns)
				goto nomem;
			s = ns;
			if (hgt_attach_parse_sample(optarg, &s[n])) {
				fprintf(stderr,
					"hgtrace: attach: -s '%s': expected OFFSET[,SCALE[,FRAC[,TIMESTAMP]]] (SCALE > 0, FRAC 0-63)\n",
					optarg);
				goto out;
			}
			n++;
			break;
		}
		case 'K': {
			char *colon = strrchr(optarg, ':');

			free(kvm_dir);
			kvm_dir = strdup(optarg);
			if (!kvm_dir)
				goto nomem;
			if (colon) {
				errno = 0;
				v = strtol(colon + 1, &end, 10);
				if (errno || *end || v <= 0) {
					fprintf(stderr,
						"hgtrace: attach: --kvm-debugfs '%s': expected DIR[:PID]\n",
						optarg);
					goto out;
				}
				kvm_pid = (int)v;
				kvm_dir[colon - optarg] = 0;
			}
			break;
		}
		case 'I':
			o.infer = true;
			break;
		case 'S':
			o.infer_sched = true;
			break;
		case 'R':
			refine = true;
			break;
		case 'B':
			if (cmd_num_arg("attach", "--max-bound", optarg, 1, LLONG_MAX,
					"a number of cycles > 0", &v))
				goto out;
			o.infer_max_bound = (uint64_t)v;
			break;
		case 'D':
			v = 8;
			if (optarg) {
				if (cmd_num_arg("attach", "--drift", optarg, 2, 4096,
						"a slice count from 2 to 4096", &v))
					goto out;
			}
			o.infer_drift_slices = (int)v;
			break;
		case 'G': {
			unsigned long long e, x;
			int k = -1;

			if (sscanf(optarg, "%llu,%llu%n", &e, &x, &k) != 2 || k < 0 || optarg[k] ||
			    *optarg == '-' || strchr(optarg, ',')[1] == '-' || e > (1ULL << 40) ||
			    x > (1ULL << 40)) {
				fprintf(stderr,
					"hgtrace: attach: --gaps '%s': expected ENTRY,EXIT cycles\n",
					optarg);
				goto out;
			}
			o.infer_gaps = true;
			o.infer_entry_gap = e;
			o.infer_exit_gap = x;
			break;
		}
		case CMD_OPT_EXIT:
			ret = rc;
			goto out;
		}
	}
	if (argc - optind < 2) {
		usage(stderr);
		goto out;
	}
	if (refine) {
		if (argc - optind != 2 || n || kvm_dir || o.infer || o.nr_cpus || o.infer_sched ||
		    o.infer_max_bound || o.infer_gaps) {
			fprintf(stderr,
				"hgtrace: attach: --refine takes HOST GUEST and no other option but --drift\n");
			goto out;
		}
		ret = refine_files(argv[optind], argv[optind + 1], o.infer_drift_slices);
		goto out;
	}
	pids = calloc((size_t)(argc - optind - 2) + 1, sizeof(int));
	if (!pids)
		goto nomem;
	for (i = optind + 2; i < argc; i++) {
		if (cmd_num_arg("attach", "PID", argv[i], 1, 0x3fffffff, "a thread id", &v))
			goto out;
		pids[o.nr_pids++] = (int)v;
	}
	o.samples = s;
	o.nr_samples = n;
	o.pids = pids;
	if (n && (o.infer || o.infer_ratio || o.infer_drift_slices || o.infer_gaps)) {
		fprintf(stderr, "hgtrace: attach: -s OFFSET and inference: give one of them\n");
		goto out;
	}
	if (kvm_dir) {
		if (n) {
			fprintf(stderr,
				"hgtrace: attach: -s and --kvm-debugfs: give one of them\n");
			goto out;
		}
		if (hgt_kvm_read(kvm_dir, kvm_pid, &vm)) {
			cmd_error("attach: cannot read KVM's debugfs");
			ret = 1;
			goto out;
		}
		o.kvm = &vm;
	}
	if (hgt_attach(argv[optind], argv[optind + 1], &o, &r)) {
		cmd_error("attach failed");
		ret = 1;
		goto out;
	}
	ret = 0;
	goto out;
nomem:
	fprintf(stderr, "hgtrace: attach: out of memory\n");
	ret = 1;
out:
	hgt_kvm_vm_free(&vm);
	free(kvm_dir);
	free(s);
	free(pids);
	return ret;
}
