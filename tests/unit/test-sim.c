// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Host + guest sessions from the simulator, attached, converted back to host time: every
 * guest event must land exactly on its ground-truth host TSC (1, 4 and 16 vCPUs; unscaled,
 * AMD 32 and Intel 48 fraction bits; one and several samples; step and interpolated).
 */
#include "test-helpers.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include <hgtrace/attach.h>
#include <hgtrace/clock.h>
#include <hgtrace/infer.h>
#include <hgtrace/peer.h>
#include <hgtrace/session.h>
#include <hgtrace/simulate.h>
#include <hgtrace/tracedat.h>

#include "tracedat/tracedat-local.h"
#include "private/vmm.h"

struct cfg {
	const char *name;
	int vcpus, host_cpus;
	double ratio; /* 0: unscaled */
	unsigned int frac;
	bool via_s;   /* attach -s OFFSET,RATIO,FRAC */
	bool wto;     /* attach from kvm_write_tsc_offset */
	int64_t step; /* offset step mid-trace */
	bool embed;
	int64_t drift;
	bool sparse;
	bool kvm;	/* attach --kvm-debugfs: a fake tree as debugfs shows it afterwards */
	bool kvm_files; /* the tree has the scaling files even when unscaled (ratio 1.0) */
	int version;
	enum hgt_compression comp;
};

static char dir[] = "/tmp/hgt-test-sim-XXXXXX";

/* Count guest events whose converted host TSC differs from the truth. */
static long check_truth_err(const char *guest, const char *truth, long *checked, bool compat,
			    uint64_t *max_err)
{
	struct hgt_input *in = hgt_input_open(guest, NULL);
	FILE *t = fopen(truth, "r");
	long bad = 0;
	char line[256];
	int ncpu, c;
	struct hgt_clock clk;
	HGT_OPTS(hgt_clock_opts, co);
	struct hgt_cursor **cur;

	assert_non_null(in);
	assert_non_null(t);
	co.tsync_compat = compat;
	hgt_clock_init(&clk, in, &co);
	assert_non_null(clk.tsync);
	ncpu = hgt_input_nr_cpus(in);
	cur = calloc((size_t)ncpu, sizeof(*cur));
	for (c = 0; c < ncpu; c++) {
		cur[c] = hgt_cursor_open(in, 0, c);
		assert_non_null(cur[c]);
	}
	*checked = 0;
	while (fgets(line, sizeof(line), t)) {
		unsigned long long g, h;
		struct tep_record rec;
		char name[64];
		int cpu;

		if (line[0] == '#')
			continue;
		assert_int_equal(sscanf(line, "%d %llu %llu %63s", &cpu, &g, &h, name), 4);
		assert_in_range(cpu, 0, ncpu - 1);
		assert_int_equal(hgt_cursor_next(cur[cpu], &rec), 1);
		assert_int_equal(rec.ts, g);
		if (max_err) {
			uint64_t got = hgt_clock_guest_to_host(&clk, rec.ts, cpu);
			uint64_t e = got > h ? got - h : h - got;

			if (e > *max_err)
				*max_err = e;
		} else if (hgt_clock_guest_to_host(&clk, rec.ts, cpu) != h) {
			if (bad < 3 && !compat)
				print_message("# cpu %d guest %llu: got %llu, truth %llu\n", cpu, g,
					      (unsigned long long)hgt_clock_guest_to_host(
						      &clk, rec.ts, cpu),
					      h);
			bad++;
		}
		/* and the displayed time is the host's TSC2NSEC of the truth */
		if (!compat && !max_err)
			assert_int_equal(hgt_clock_convert(&clk, rec.ts, cpu),
					 hgt_mul_u64_u32_shr(h, clk.tsc_mult, clk.tsc_shift) +
						 (uint64_t)clk.offset);
		(*checked)++;
	}
	for (c = 0; c < ncpu; c++) {
		struct tep_record rec;

		assert_int_equal(hgt_cursor_next(cur[c], &rec), 0); /* nothing left over */
		hgt_cursor_close(cur[c]);
	}
	free(cur);
	fclose(t);
	hgt_input_close(in);
	return bad;
}

static long check_truth(const char *guest, const char *truth, long *checked, bool compat)
{
	return check_truth_err(guest, truth, checked, compat, NULL);
}

static void run(const struct cfg *c)
{
	char host[512], guest[512], truth[512];
	struct hgt_sim_result r;
	long checked, bad;
	int ret;
	HGT_OPTS(hgt_sim_opts, so, .seed = 7, .nr_vcpus = c->vcpus, .nr_host_cpus = c->host_cpus,
		 .duration_us = 100000, .frac = c->frac, .offset_step = c->step,
		 .drift_ppb = c->drift, .write_tsc_offset = c->wto, .embed_sync = c->embed,
		 .sparse_vcpu_ids = c->sparse, .version = c->version, .compression = c->comp,
		 .host_path = host, .guest_path = guest, .truth_path = truth);

	snprintf(host, sizeof(host), "%s/%s-host.dat", dir, c->name);
	snprintf(guest, sizeof(guest), "%s/%s-guest.dat", dir, c->name);
	snprintf(truth, sizeof(truth), "%s/%s-truth.txt", dir, c->name);
	if (c->ratio)
		so.ratio = (uint64_t)(c->ratio * (double)(1ULL << c->frac));
	ret = hgt_simulate(&so, &r);
	if (ret)
		print_message("# %s\n", hgt_last_error());
	assert_int_equal(ret, 0);
	assert_true(r.guest_events > 1000);
	if (c->kvm) {
		struct hgt_kvm_vm vm;
		HGT_OPTS(hgt_attach_opts, ao, .pids = r.vcpu_pid, .nr_pids = r.nr_vcpus,
			 .kvm = &vm);
		struct hgt_attach_result ar;
		char d[700], f[800];

		/* <debugfs>/kvm/4242-12/vcpu<id>/: the offsets after the recording (stepped) */
		for (int i = 0; i < r.nr_vcpus; i++) {
			FILE *fp;

			snprintf(d, sizeof(d), "mkdir -p %s/%s-dbg/kvm/4242-12/vcpu%d", dir,
				 c->name, r.vcpu_id[i]);
			assert_int_equal(system(d), 0);
			snprintf(d, sizeof(d), "%s/%s-dbg/kvm/4242-12/vcpu%d", dir, c->name,
				 r.vcpu_id[i]);
			snprintf(f, sizeof(f), "%s/tsc-offset", d);
			fp = fopen(f, "w");
			assert_non_null(fp);
			fprintf(fp, "%lld\n", (long long)(r.tsc_offset + c->step));
			fclose(fp);
			if (so.ratio || c->kvm_files) {
				snprintf(f, sizeof(f), "%s/tsc-scaling-ratio", d);
				fp = fopen(f, "w");
				fprintf(fp, "%llu\n",
					(unsigned long long)(so.ratio ? so.ratio : 1ull << 48));
				fclose(fp);
				snprintf(f, sizeof(f), "%s/tsc-scaling-ratio-frac-bits", d);
				fp = fopen(f, "w");
				fprintf(fp, "%u\n", so.ratio ? c->frac : 48);
				fclose(fp);
			}
		}
		snprintf(d, sizeof(d), "%s/%s-dbg", dir, c->name);
		ret = hgt_kvm_read(d, 4242, &vm);
		if (ret)
			print_message("# %s\n", hgt_last_error());
		assert_int_equal(ret, 0);
		assert_int_equal(vm.nr, r.nr_vcpus);
		ret = hgt_attach(host, guest, &ao, &ar);
		if (ret)
			print_message("# %s\n", hgt_last_error());
		assert_int_equal(ret, 0);
		assert_true(ar.from_kvm);
		assert_int_equal(ar.nr_cpus, c->vcpus);
		hgt_kvm_vm_free(&vm);
	} else if (c->via_s || c->wto) {
		struct hgt_attach_sample s = { .offset = -r.tsc_offset,
					       .scaling = so.ratio ? (int64_t)so.ratio : 1,
					       .frac = so.ratio ? c->frac : 0 };
		HGT_OPTS(hgt_attach_opts, ao, .samples = &s, .nr_samples = c->via_s ? 1 : 0,
			 .pids = r.vcpu_pid, .nr_pids = r.nr_vcpus);
		struct hgt_attach_result ar;

		ret = hgt_attach(host, guest, &ao, &ar);
		if (ret)
			print_message("# %s\n", hgt_last_error());
		assert_int_equal(ret, 0);
		assert_int_equal(ar.nr_cpus, c->vcpus);
		assert_int_equal(ar.from_write_tsc_offset, c->wto && !c->via_s);
	}
	bad = check_truth(guest, truth, &checked, false);
	print_message("# %s: %ld guest events checked, %ld off the ground truth\n", c->name,
		      checked, bad);
	assert_int_equal(checked, (long)r.guest_events);
	assert_int_equal(bad, 0);
	if (c->ratio) {
		/* trace-cmd's formula puts scaled guests elsewhere: the check sees it */
		bad = check_truth(guest, truth, &checked, true);
		print_message("# %s: trace-cmd's formula: %ld of %ld off the ground truth\n",
			      c->name, bad, checked);
		assert_true(bad > checked / 2);
	}
}

#define CASE(fn, ...)                                    \
	static void fn(void **state)                     \
	{                                                \
		static const struct cfg c = __VA_ARGS__; \
		run(&c);                                 \
	}

CASE(test_1vcpu_unscaled_s, { "one", 1, 2, 0, 0, .via_s = true })
CASE(test_4vcpu_unscaled_wto, { "four", 4, 4, 0, 0, .wto = true })
CASE(test_16vcpu_intel48_s, { "intel", 16, 4, 0.73, 48, .via_s = true })
CASE(test_4vcpu_amd32_s_v6, { "amd", 4, 2, 1.37, 32, .via_s = true, .version = 6 })
CASE(test_4vcpu_step_wto, { "step", 4, 4, 0, 0, .wto = true, .step = 5000000 })
CASE(test_4vcpu_intel_step_embedded,
     { "stepemb", 4, 4, 1.1, 48, .embed = true, .step = 7000000, .sparse = true })
CASE(test_4vcpu_drift_interpolated,
     { "drift", 4, 4, 0, 0, .embed = true, .drift = 2500, .comp = HGT_COMPRESS_ZLIB })

/* KVM's debugfs after the recording + the host's kvm_write_tsc_offset: exact with a
 * mid-session offset change, Intel 48 and AMD 32 fraction bits, and 1.0 written out. */
CASE(test_kvm_intel48_step,
     { "kvmintel", 4, 4, 1.1, 48, .kvm = true, .wto = true, .step = 7000000, .sparse = true })
CASE(test_kvm_amd32_step, { "kvmamd", 2, 2, 0.73, 32, .kvm = true, .step = 3000000 })
CASE(test_kvm_intel48_debugfs_only, { "kvmflat", 4, 2, 1.25, 48, .kvm = true })
CASE(test_kvm_ratio_one_step,
     { "kvmone", 4, 4, 0, 0, .kvm = true, .kvm_files = true, .wto = true, .step = 5000000 })

/* A guest file holding both sparse vCPU ids and the host's GUEST map: the map stores the
 * real ids (trace-cmd stores the loop index). */
static void test_guest_map_real_ids(void **state)
{
	char host[512];
	struct hgt_input *in;
	struct hgt_guest g;
	uint64_t gid;
	FILE *t;
	char line[256];

	snprintf(host, sizeof(host), "%s/stepemb-host.dat", dir);
	if (access(host, R_OK))
		test_4vcpu_intel_step_embedded(state);
	snprintf(line, sizeof(line), "%s/stepemb-truth.txt", dir);
	t = fopen(line, "r");
	assert_non_null(t);
	assert_non_null(fgets(line, sizeof(line), t));
	assert_non_null(fgets(line, sizeof(line), t));
	assert_non_null(fgets(line, sizeof(line), t));
	assert_non_null(strstr(line, "guest_trace_id 0x"));
	gid = strtoull(strstr(line, "guest_trace_id 0x") + 15, NULL, 16);
	fclose(t);
	in = hgt_input_open(host, NULL);
	assert_non_null(in);
	assert_int_equal(hgt_input_guest_by_id(in, gid, &g), 0);
	assert_int_equal(g.nr_vcpus, 7); /* ids 0,2,4,6 */
	assert_int_equal(g.cpu_pid[0], 5001);
	assert_int_equal(g.cpu_pid[2], 5002);
	assert_int_equal(g.cpu_pid[6], 5004);
	assert_int_equal(g.cpu_pid[1], 0);
	hgt_input_close(in);
}

/* A VMM whose threads have no names: the vCPU map from the host's kvm_entry, against the
 * simulator's own vCPU -> thread assignment (sparse ids, a non-vCPU thread among them). */
static void test_vcpus_from_kvm_entry(void **state)
{
	char host[512], guest[512];
	struct hgt_sim_result r;
	struct hgt_vcpu_threads vt;
	struct hgt_input *in;
	int tids[8], n = 0, i;
	HGT_OPTS(hgt_sim_opts, so, .seed = 3, .nr_vcpus = 4, .nr_host_cpus = 2,
		 .duration_us = 20000, .sparse_vcpu_ids = true, .host_path = host,
		 .guest_path = guest);

	snprintf(host, sizeof(host), "%s/map-host.dat", dir);
	snprintf(guest, sizeof(guest), "%s/map-guest.dat", dir);
	assert_int_equal(hgt_simulate(&so, &r), 0);
	tids[n++] = 4999; /* the VMM's main thread: never enters a guest */
	for (i = r.nr_vcpus - 1; i >= 0; i--)
		tids[n++] = r.vcpu_pid[i];
	in = hgt_input_open(host, NULL);
	assert_non_null(in);
	assert_int_equal(hgt__vcpus_from_kvm_entry(in, tids, n, &vt), 0);
	assert_int_equal(vt.nr, r.nr_vcpus);
	for (i = 0; i < r.nr_vcpus; i++) {
		assert_int_equal(vt.vcpu[i], r.vcpu_id[i]); /* sorted: 0, 2, 4, 6 */
		assert_int_equal(vt.tid[i], r.vcpu_pid[i]);
	}
	print_message("# %d vCPU threads mapped from kvm_entry (ids %d..%d)\n", vt.nr, vt.vcpu[0],
		      vt.vcpu[vt.nr - 1]);
	hgt_vcpu_threads_free(&vt);
	hgt_input_close(in);
}

/*
 * No sync data at all: the offset inferred from the kvm windows. Every guest event, converted
 * with what attach stored, lands within 100 ns (260 cycles at 2.6 GHz) of its ground-truth
 * host TSC, and the truth lies inside the printed bound: 1, 4 and 16 vCPUs, the VM started
 * before the host (the usual negative tsc_offset) or after it (positive), unscaled and
 * with Intel's 48 and AMD's 32 fraction bits given as the known ratio.
 */
struct icfg {
	const char *name;
	int vcpus;
	int64_t tsc_offset;
	double ratio;
	unsigned int frac;
	int64_t drift_ppb; /* the offset drifts: attach --drift (8 slices) */
};

static void run_infer(const struct icfg *c)
{
	char host[512], guest[512], truth[512];
	struct hgt_sim_result r;
	struct hgt_attach_result ar;
	struct hgt_infer_cpu cpus[16];
	struct hgt_input *hi, *gi;
	long checked;
	uint64_t err = 0, ratio = 0, bound = 0;
	HGT_OPTS(hgt_sim_opts, so, .seed = 11, .nr_vcpus = c->vcpus, .nr_host_cpus = 4,
		 .duration_us = 100000, .tsc_offset = c->tsc_offset, .frac = c->frac,
		 .drift_ppb = c->drift_ppb, .host_path = host, .guest_path = guest,
		 .truth_path = truth);

	snprintf(host, sizeof(host), "%s/%s-host.dat", dir, c->name);
	snprintf(guest, sizeof(guest), "%s/%s-guest.dat", dir, c->name);
	snprintf(truth, sizeof(truth), "%s/%s-truth.txt", dir, c->name);
	if (c->ratio)
		ratio = so.ratio = (uint64_t)(c->ratio * (double)(1ULL << c->frac));
	assert_int_equal(hgt_simulate(&so, &r), 0);
	if (c->drift_ppb)
		goto attach;
	/* the library call first: per CPU, the truth inside [lo, hi] */
	hi = hgt_input_open(host, NULL);
	gi = hgt_input_open(guest, NULL);
	assert_non_null(hi);
	assert_non_null(gi);
	for (int i = 0; i < r.nr_vcpus; i++)
		cpus[i].pid = r.vcpu_pid[i];
	{
		HGT_OPTS(hgt_infer_pair_opts, po, .ratio = ratio, .frac = c->frac);

		assert_int_equal(hgt_infer_pair(hi, gi, cpus, r.nr_vcpus, &po), 0);
	}
	for (int i = 0; i < r.nr_vcpus; i++) {
		/* c = host - guest scaled = -tsc_offset / ratio */
		double ct =
			ratio ? -(double)r.tsc_offset * (double)(1ULL << c->frac) / (double)ratio
			      : -(double)r.tsc_offset;

		assert_int_equal(cpus[i].r.status, HGT_INFER_OK);
		assert_true(cpus[i].r.events > 100);
		assert_true((double)cpus[i].r.lo - 1 <= ct && ct <= (double)cpus[i].r.hi + 1);
		if (cpus[i].r.bound > bound)
			bound = cpus[i].r.bound;
	}
	hgt_infer_cpu_free(cpus, r.nr_vcpus);
	hgt_input_close(hi);
	hgt_input_close(gi);
attach:
	/* then attach: the stored offsets against every event's truth */
	{
		HGT_OPTS(hgt_attach_opts, ao, .pids = r.vcpu_pid, .nr_pids = r.nr_vcpus,
			 .infer_ratio = ratio, .infer_frac = c->frac,
			 .infer_drift_slices = c->drift_ppb ? 8 : 0);

		if (c->drift_ppb) {
			/* one offset for all cannot fit a drifting guest: refused, and why */
			HGT_OPTS(hgt_attach_opts, one, .pids = r.vcpu_pid, .nr_pids = r.nr_vcpus);

			assert_int_equal(hgt_attach(host, guest, &one, &ar), -ERANGE);
			assert_non_null(strstr(hgt_last_error(), "(try --drift)"));
			print_message("# %s: one offset refused: %s\n", c->name, hgt_last_error());
		}
		assert_int_equal(hgt_attach(host, guest, &ao, &ar), 0);
		assert_true(ar.inferred);
		bound = bound ? bound : ar.infer_bound;
	}
	check_truth_err(guest, truth, &checked, false, &err);
	print_message("# %s: %ld events, worst error %llu cycles (%.1f ns), widest bound %llu\n",
		      c->name, checked, (unsigned long long)err, (double)err / 2.6,
		      (unsigned long long)bound);
	assert_true(checked > 1000);
	assert_true(err <= 260);
}

static void test_infer_1vcpu(void **state)
{
	run_infer(&(struct icfg){ "inf1", 1, 0, 0, 0, 0 });
}

static void test_infer_4vcpu_positive(void **state)
{
	run_infer(&(struct icfg){ "inf4p", 4, 123456789012LL, 0, 0, 0 });
}

static void test_infer_16vcpu_intel48(void **state)
{
	run_infer(&(struct icfg){ "inf16", 16, 0, 1.25, 48, 0 });
}

static void test_infer_4vcpu_amd32(void **state)
{
	run_infer(&(struct icfg){ "inf4a", 4, -987654321LL, 0.8, 32, 0 });
}

/* 3 ppm of drift: 1560 cycles over the trace, past a single offset's +-350 */
static void test_infer_4vcpu_drift(void **state)
{
	run_infer(&(struct icfg){ "inf4d", 4, 0, 0, 0, 3000 });
}

/*
 * Adversarial: guest CPUs checked against the wrong vCPU threads, a guest file from
 * another session, a thread with no windows. Each must be refused (or be given a bound
 * too wide to be taken), never a narrow wrong answer.
 */
static void test_infer_adversarial(void **state)
{
	char host[512], guest[512], other[512], ohost[512];
	struct hgt_sim_result r, r2;
	struct hgt_infer_cpu cpus[4];
	struct hgt_input *hi, *gi, *oi;
	HGT_OPTS(hgt_infer_pair_opts, po);
	HGT_OPTS(hgt_sim_opts, so, .seed = 21, .nr_vcpus = 4, .nr_host_cpus = 4,
		 .duration_us = 100000, .host_path = host, .guest_path = guest);
	int refused = 0;

	snprintf(host, sizeof(host), "%s/adv-host.dat", dir);
	snprintf(guest, sizeof(guest), "%s/adv-guest.dat", dir);
	snprintf(ohost, sizeof(ohost), "%s/adv2-host.dat", dir);
	snprintf(other, sizeof(other), "%s/adv2-guest.dat", dir);
	assert_int_equal(hgt_simulate(&so, &r), 0);
	so.seed = 22;
	so.host_path = ohost;
	so.guest_path = other;
	assert_int_equal(hgt_simulate(&so, &r2), 0);
	hi = hgt_input_open(host, NULL);
	gi = hgt_input_open(guest, NULL);
	oi = hgt_input_open(other, NULL);
	assert_non_null(hi);
	assert_non_null(gi);
	assert_non_null(oi);
	/* guest CPU i checked against vCPU i+1's thread */
	for (int i = 0; i < 4; i++)
		cpus[i].pid = r.vcpu_pid[(i + 1) % 4];
	assert_int_equal(hgt_infer_pair(hi, gi, cpus, 4, &po), 0);
	for (int i = 0; i < 4; i++) {

		assert_int_not_equal(cpus[i].r.status, HGT_INFER_OK);
		refused++;
	}
	/* another session's guest, same offset and time range */
	for (int i = 0; i < 4; i++)
		cpus[i].pid = r.vcpu_pid[i];
	assert_int_equal(hgt_infer_pair(hi, oi, cpus, 4, &po), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_not_equal(cpus[i].r.status, HGT_INFER_OK);
		refused++;
	}
	/* a thread the host never saw */
	cpus[2].pid = 424242;
	assert_int_equal(hgt_infer_pair(hi, gi, cpus, 4, &po), 0);
	assert_int_equal(cpus[0].r.status, HGT_INFER_OK);
	assert_int_equal(cpus[2].r.status, HGT_INFER_NO_DATA);
	refused++;
	print_message("# %d wrong pairings refused\n", refused);
	hgt_input_close(hi);
	hgt_input_close(gi);
	hgt_input_close(oi);
}

TEST_SCRATCH_DIR(dir)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_1vcpu_unscaled_s),
		cmocka_unit_test(test_4vcpu_unscaled_wto),
		cmocka_unit_test(test_16vcpu_intel48_s),
		cmocka_unit_test(test_4vcpu_amd32_s_v6),
		cmocka_unit_test(test_4vcpu_step_wto),
		cmocka_unit_test(test_4vcpu_intel_step_embedded),
		cmocka_unit_test(test_4vcpu_drift_interpolated),
		cmocka_unit_test(test_guest_map_real_ids),
		cmocka_unit_test(test_kvm_intel48_step),
		cmocka_unit_test(test_kvm_amd32_step),
		cmocka_unit_test(test_kvm_intel48_debugfs_only),
		cmocka_unit_test(test_kvm_ratio_one_step),
		cmocka_unit_test(test_vcpus_from_kvm_entry),
		cmocka_unit_test(test_infer_1vcpu),
		cmocka_unit_test(test_infer_4vcpu_positive),
		cmocka_unit_test(test_infer_16vcpu_intel48),
		cmocka_unit_test(test_infer_4vcpu_amd32),
		cmocka_unit_test(test_infer_4vcpu_drift),
		cmocka_unit_test(test_infer_adversarial),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
