// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace simulate: write a deterministic KVM host + guest session (and its ground truth). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/output.h>
#include <hgtrace/simulate.h>

#include "cmd.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hgtrace simulate -o PREFIX [OPTIONS]\n"
		"  writes PREFIX-host.dat and PREFIX-guest.dat\n"
		"  --vcpus N            guest CPUs (4)\n"
		"  --host-cpus M        host CPUs (4)\n"
		"  --duration-ms MS     simulated time (200)\n"
		"  --events N           stop at about N events in all\n"
		"  --seed S             random seed (1); same seed, same files\n"
		"  --scale RATIO,FRAC   KVM TSC scaling ratio and fraction bits (e.g. 1.25,48)\n"
		"  --tsc-offset OFF     KVM tsc_offset (default: the VM started 60 s earlier)\n"
		"  --offset-step D      each vCPU's tsc_offset grows by D cycles mid-trace\n"
		"  --drift-ppb P        the offset drifts by P per 10^9 (no --scale, --offset-step)\n"
		"  --write-tsc-offset   host trace records kvm_write_tsc_offset at VM start\n"
		"  --embed-sync         write TIME_SHIFT and GUEST as a synced recording does\n"
		"  --embed-guest        only the host's GUEST option: vCPU threads known, nothing\n"
		"                       synced (as a session whose clock sync failed)\n"
		"  --channel B[,BIAS]   embed a channel's sync (as --embed-sync): 2 samples per CPU,\n"
		"                       each off the truth by up to B cycles (plus BIAS), bound=B\n"
		"  --tcg                a TCG host: no kvm events; the vCPU threads (CPU N/TCG) run\n"
		"                       the guest while they run\n"
		"  --sparse-vcpu-ids    vCPU ids 0,2,4,... (APIC ids) instead of 0,1,2,...\n"
		"  --no-idle-exit CPU   the host trace has no sched_switch out of idle on host\n"
		"                       CPU (repeatable), as some VMs' kernels record\n"
		"  --guest-gaps E,X     no guest event closer than E cycles after its window's\n"
		"                       start (kvm_entry) or X before its end (300,300)\n"
		"  --truth              also write PREFIX-truth.txt (host TSC of every guest event)\n"
		"  --inject CAUSE       a known cause of guest latency (repeatable, spread over the run):\n"
		"                         preempt:US  the vCPU thread preempted by a host task\n"
		"                         exits:REASON:N:US  N exits of REASON, each handled US\n"
		"                         irqs:N:US   N host interrupts of US each\n"
		"                         softirqs:N:US  N host NET_RX softirqs of US each\n"
		"                         guest:US    the guest runs another task (no host cause)\n"
		"                         woken:US    the vCPU thread, halted, woken from another host\n"
		"                                     CPU while a host task holds its own: it waits US\n"
		"  --file-version 6|7, --compression none|zlib|zstd   output format (7, zstd)\n");
}

static int parse_u64(const char *opt, const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-') {
		fprintf(stderr, "hgtrace: simulate: %s '%s': expected a number\n", opt, s);
		return -1;
	}
	return 0;
}

static int parse_i64(const char *opt, const char *s, int64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoll(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "hgtrace: simulate: %s '%s': expected an integer\n", opt, s);
		return -1;
	}
	return 0;
}

/* "1.25,48": ratio 1.25 in 48 fraction bits; or "RAW,48" with an integer ratio. */
static int parse_scale(const char *s, uint64_t *ratio, unsigned int *frac)
{
	char *comma = strchr(s, ','), *end;
	unsigned long f;
	double r;

	if (!comma)
		goto bad;
	errno = 0;
	f = strtoul(comma + 1, &end, 10);
	if (errno || *end || f > 63)
		goto bad;
	*frac = (unsigned int)f;
	if (memchr(s, '.', (size_t)(comma - s))) {
		r = strtod(s, &end);
		if (end != comma || r <= 0)
			goto bad;
		*ratio = (uint64_t)(r * (double)(1ULL << f));
	} else {
		*ratio = strtoull(s, &end, 0);
		if (end != comma)
			goto bad;
	}
	return 0;
bad:
	fprintf(stderr, "hgtrace: simulate: --scale '%s': expected RATIO,FRAC (e.g. 1.25,48)\n", s);
	return -1;
}

/* "preempt:US", "exits:REASON:N:US", "irqs:N:US", "guest:US", "woken:US" */
static int parse_inject(const char *spec, struct hgt_sim_inject *in)
{
	char buf[128], *f[4], *save = NULL, *p;
	int n = 0, code;
	uint64_t v[2];

	snprintf(buf, sizeof(buf), "%s", spec);
	for (p = strtok_r(buf, ":", &save); p && n < 4; p = strtok_r(NULL, ":", &save))
		f[n++] = p;
	if (p || !n)
		goto bad;
	memset(in, 0, sizeof(*in));
	if (!strcmp(f[0], "preempt") || !strcmp(f[0], "guest") || !strcmp(f[0], "woken")) {
		in->cause = f[0][0] == 'p'   ? HGT_SIM_PREEMPT
			    : f[0][0] == 'g' ? HGT_SIM_GUEST
					     : HGT_SIM_WOKEN;
		if (n != 2 || parse_u64("--inject", f[1], &in->us))
			goto bad;
	} else if (!strcmp(f[0], "irqs") || !strcmp(f[0], "softirqs")) {
		in->cause = f[0][0] == 'i' ? HGT_SIM_IRQS : HGT_SIM_SOFTIRQS;
		if (n != 3 || parse_u64("--inject", f[1], &v[0]) ||
		    parse_u64("--inject", f[2], &in->us) || v[0] > 100000)
			goto bad;
		in->count = (unsigned int)v[0];
	} else if (!strcmp(f[0], "exits")) {
		in->cause = HGT_SIM_EXITS;
		if (n != 4 || (code = hgt_sim_exit_code(f[1])) < 0 ||
		    parse_u64("--inject", f[2], &v[0]) || parse_u64("--inject", f[3], &in->us) ||
		    v[0] > 100000)
			goto bad;
		in->exit_reason = (unsigned int)code;
		in->count = (unsigned int)v[0];
	} else {
		goto bad;
	}
	if (in->us && (in->cause == HGT_SIM_PREEMPT || in->cause == HGT_SIM_GUEST ||
		       in->cause == HGT_SIM_WOKEN || in->count))
		return 0;
bad:
	fprintf(stderr,
		"hgtrace: simulate: --inject '%s': expected preempt:US, exits:REASON:N:US, irqs:N:US, softirqs:N:US, guest:US or woken:US (N, US >= 1)\n",
		spec);
	return -1;
}

static void print_injected(const struct hgt_sim_injected *d)
{
	static const char *const what[] = { "",	     "preempt",	 "exits", "irqs",
					    "guest", "softirqs", "woken" };

	printf("injected: %s guest_cpu=%d guest_pid=%d delay=%s from_ns=%" PRIu64 " to_ns=%" PRIu64
	       " cause_ns=%" PRIu64,
	       what[d->cause], d->guest_cpu, d->guest_pid, d->timer ? "timer" : "wakeup",
	       d->from_ns, d->to_ns, d->cause_ns);
	if (d->cause == HGT_SIM_PREEMPT || d->cause == HGT_SIM_WOKEN)
		printf(" host_pid=%d", d->host_pid);
	else if (d->cause == HGT_SIM_IRQS)
		printf(" irq=%d", d->host_pid);
	else if (d->cause == HGT_SIM_SOFTIRQS)
		printf(" softirq=%d", d->host_pid);
	putchar('\n');
}

/* --channel BOUND[,BIAS]: channel samples (embedded sync) within +-BOUND cycles. */
static int parse_channel(char *arg, struct hgt_sim_opts *o)
{
	char *comma = strchr(arg, ',');

	if (comma)
		*comma = 0;
	if (parse_i64("--channel", arg, &o->channel_bound) ||
	    (comma && parse_i64("--channel", comma + 1, &o->channel_bias)))
		return -1;
	if (o->channel_bound <= 0) {
		fprintf(stderr, "hgtrace: simulate: --channel '%s': the bound is cycles > 0\n",
			arg);
		return -1;
	}
	o->embed_sync = true;
	return 0;
}

/* --guest-gaps E,X: cycles from kvm_entry to the guest, and from the guest to kvm_exit. */
static int parse_gaps(char *arg, struct hgt_sim_opts *o)
{
	char *comma = strchr(arg, ',');

	if (!comma) {
		fprintf(stderr, "hgtrace: simulate: --guest-gaps '%s': expected E,X\n", arg);
		return -1;
	}
	*comma = 0;
	if (parse_u64("--guest-gaps", arg, &o->entry_gap) ||
	    parse_u64("--guest-gaps", comma + 1, &o->exit_gap))
		return -1;
	return 0;
}

static void print_result(const struct hgt_sim_opts *o, const struct hgt_sim_result *r,
			 const char *truth)
{
	int i;

	printf("host:  %s (%" PRIu64 " events, trace id 0x%" PRIx64 ")\n", o->host_path,
	       r->host_events, r->host_trace_id);
	printf("guest: %s (%" PRIu64 " events, trace id 0x%" PRIx64 ")\n", o->guest_path,
	       r->guest_events, r->guest_trace_id);
	if (truth)
		printf("truth: %s\n", truth);
	printf("vcpus:");
	for (i = 0; i < r->nr_vcpus; i++)
		printf(" %d=pid%d", r->vcpu_id[i], r->vcpu_pid[i]);
	printf("\ntsc_offset: %lld (attach with -s %lld)\n", (long long)r->tsc_offset,
	       -(long long)r->tsc_offset);
	for (i = 0; i < r->nr_injected; i++)
		print_injected(&r->injected[i]);
	if (r->nr_injected < o->nr_inject)
		printf("injected: %d of %d causes (the run ended before the others' vCPUs ran again)\n",
		       r->nr_injected, o->nr_inject);
	if (o->ratio)
		printf("scaling %llu,%u (attach -s OFFSET,%llu,%u)\n", (unsigned long long)o->ratio,
		       o->frac, (unsigned long long)o->ratio, o->frac);
}

enum {
	O_VCPUS = 256,
	O_HOST,
	O_DUR,
	O_EVENTS,
	O_SEED,
	O_SCALE,
	O_OFF,
	O_STEP,
	O_DRIFT,
	O_WTO,
	O_EMBED,
	O_EMBED_GUEST,
	O_CHANNEL,
	O_TCG,
	O_SPARSE,
	O_TRUTH,
	O_VER,
	O_COMP,
	O_INJECT,
	O_GAPS,
	O_NO_IDLE_EXIT
};

/* What the command line asked for, beyond struct hgt_sim_opts. */
struct sim_args {
	struct hgt_sim_opts *o;
	const char *prefix; /* -o */
	bool want_truth;
	struct hgt_sim_inject inject[HGT_SIM_MAX_INJECT];
};

/* --vcpus N or --host-cpus N. Returns 0 or 2 (error said). */
static int cpus_arg(int c, const char *arg, struct hgt_sim_opts *o)
{
	const char *name = c == O_VCPUS ? "--vcpus" : "--host-cpus";
	uint64_t v;

	if (parse_u64(name, arg, &v))
		return 2;
	if (v < 1 || v > (c == O_VCPUS ? HGT_SIM_MAX_VCPUS : 1024)) {
		fprintf(stderr, "hgtrace: simulate: %s %s: out of range\n", name, arg);
		return 2;
	}
	*(c == O_VCPUS ? &o->nr_vcpus : &o->nr_host_cpus) = (int)v;
	return 0;
}

/* --inject CAUSE@...: one more. Returns 0 or 2 (error said). */
static int inject_arg(const char *arg, struct sim_args *a, struct hgt_sim_opts *o)
{
	if (o->nr_inject == HGT_SIM_MAX_INJECT) {
		fprintf(stderr, "hgtrace: simulate: at most %d --inject\n", HGT_SIM_MAX_INJECT);
		return 2;
	}
	if (parse_inject(arg, &a->inject[o->nr_inject]))
		return 2;
	o->inject = a->inject;
	o->nr_inject++;
	return 0;
}

/* The options that set a flag. Returns false for the others. */
static bool flag_opt(int c, struct sim_args *a, struct hgt_sim_opts *o)
{
	switch (c) {
	case O_WTO:
		o->write_tsc_offset = true;
		return true;
	case O_EMBED:
		o->embed_sync = true;
		return true;
	case O_EMBED_GUEST:
		o->embed_guest = true;
		return true;
	case O_TCG:
		o->tcg = true;
		return true;
	case O_SPARSE:
		o->sparse_vcpu_ids = true;
		return true;
	case O_TRUTH:
		a->want_truth = true;
		return true;
	}
	return false;
}

/* One option of cmd_simulate() (cmd_parse_opts() calls it): 0 or 2 (error said). */
static int simulate_opt(int c, char *arg, void *ctx)
{
	struct sim_args *a = ctx;
	struct hgt_sim_opts *o = a->o;
	uint64_t v;

	if (flag_opt(c, a, o))
		return 0;
	switch (c) {
	case 'o':
		a->prefix = arg;
		return 0;
	case O_VCPUS:
	case O_HOST:
		return cpus_arg(c, arg, o);
	case O_NO_IDLE_EXIT:
		if (parse_u64("--no-idle-exit", arg, &v))
			return 2;
		if (v >= 64) {
			fprintf(stderr, "hgtrace: simulate: --no-idle-exit %s: at most CPU 63\n",
				arg);
			return 2;
		}
		o->no_idle_exit |= 1ULL << v;
		return 0;
	case O_DUR:
		if (parse_u64("--duration-ms", arg, &v) || !v || v > 86400000ULL)
			return 2;
		o->duration_us = v * 1000;
		return 0;
	case O_EVENTS:
		if (parse_u64("--events", arg, &o->max_events))
			return 2;
		if (!o->duration_us)
			o->duration_us = 3600ULL * 1000000; /* until the count is reached */
		return 0;
	case O_SEED:
		return parse_u64("--seed", arg, &o->seed) ? 2 : 0;
	case O_SCALE:
		return parse_scale(arg, &o->ratio, &o->frac) ? 2 : 0;
	case O_OFF:
		return parse_i64("--tsc-offset", arg, &o->tsc_offset) ? 2 : 0;
	case O_STEP:
		return parse_i64("--offset-step", arg, &o->offset_step) ? 2 : 0;
	case O_DRIFT:
		return parse_i64("--drift-ppb", arg, &o->drift_ppb) ? 2 : 0;
	case O_CHANNEL:
		return parse_channel(arg, o) ? 2 : 0;
	case O_GAPS:
		return parse_gaps(arg, o) ? 2 : 0;
	case O_VER:
		if (parse_u64("--file-version", arg, &v) || (v != 6 && v != 7)) {
			fprintf(stderr, "hgtrace: simulate: --file-version: 6 or 7\n");
			return 2;
		}
		o->version = (int)v;
		return 0;
	case O_COMP:
		return cmd_compression("simulate", arg, &o->compression) ? 2 : 0;
	case O_INJECT:
		return inject_arg(arg, a, o);
	}
	return 2;
}

int cmd_simulate(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "vcpus", required_argument, NULL, O_VCPUS },
		{ "host-cpus", required_argument, NULL, O_HOST },
		{ "duration-ms", required_argument, NULL, O_DUR },
		{ "events", required_argument, NULL, O_EVENTS },
		{ "seed", required_argument, NULL, O_SEED },
		{ "scale", required_argument, NULL, O_SCALE },
		{ "tsc-offset", required_argument, NULL, O_OFF },
		{ "offset-step", required_argument, NULL, O_STEP },
		{ "drift-ppb", required_argument, NULL, O_DRIFT },
		{ "write-tsc-offset", no_argument, NULL, O_WTO },
		{ "embed-sync", no_argument, NULL, O_EMBED },
		{ "embed-guest", no_argument, NULL, O_EMBED_GUEST },
		{ "channel", required_argument, NULL, O_CHANNEL },
		{ "tcg", no_argument, NULL, O_TCG },
		{ "sparse-vcpu-ids", no_argument, NULL, O_SPARSE },
		{ "no-idle-exit", required_argument, NULL, O_NO_IDLE_EXIT },
		{ "truth", no_argument, NULL, O_TRUTH },
		{ "file-version", required_argument, NULL, O_VER },
		{ "compression", required_argument, NULL, O_COMP },
		{ "inject", required_argument, NULL, O_INJECT },
		{ "guest-gaps", required_argument, NULL, O_GAPS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_sim_opts, o, .seed = 1, .compression = HGT_COMPRESS_ZSTD);
	char host[4096], guest[4096], truth[4096];
	struct sim_args a = { .o = &o };
	struct hgt_sim_result r;
	int ret, rc;

	if (cmd_parse_opts(argc, argv, "+o:h", lopts, usage, "simulate", simulate_opt, &a, &rc))
		return rc;
	if (optind < argc || !a.prefix) {
		/* never two files written where the user did not ask */
		usage(stderr);
		return 2;
	}
	if (o.version == 6)
		o.compression = HGT_COMPRESS_NONE;
	snprintf(host, sizeof(host), "%s-host.dat", a.prefix);
	snprintf(guest, sizeof(guest), "%s-guest.dat", a.prefix);
	snprintf(truth, sizeof(truth), "%s-truth.txt", a.prefix);
	o.host_path = host;
	o.guest_path = guest;
	o.truth_path = a.want_truth ? truth : NULL;
	ret = hgt_simulate(&o, &r);
	if (ret) {
		cmd_error(strerror(-ret));
		return 1;
	}
	print_result(&o, &r, a.want_truth ? truth : NULL);
	return 0;
}
