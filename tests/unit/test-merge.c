// SPDX-License-Identifier: GPL-2.0-or-later
/* The merge orders by converted time, ties to the source added first. */
#include "test-helpers.h"

#include <traceevent/event-parse.h>

#include <string.h>
#include <unistd.h>

#include <hgtrace/clock.h>
#include <hgtrace/merge.h>
#include <hgtrace/peer.h>
#include <hgtrace/simulate.h>
#include <hgtrace/sync.h>
#include <hgtrace/tracedat.h>

#include "../../lib/merge/merge-local.h"

static char dir[] = "/tmp/hgt-test-merge-XXXXXX";

static void test_two_copies_interleave_in_order(void **state)
{
	struct hgt_input *in = hgt_input_open(test_data("mono.dat"), NULL);
	struct hgt_clock clk = { 0 };
	struct hgt_cursor *cur[8];
	struct hgt_merge *m = hgt_merge_new();
	struct tep_record *rec;
	unsigned long long last = 0;
	int i, n = 0, src, prev_src = -1, events = 0, ncpu;
	unsigned long long ts_first = 0, ts_second = 0;

	assert_non_null(in);
	ncpu = hgt_input_nr_cpus(in);
	assert_true(ncpu <= 4);
	/* The same CPUs twice: sources 0..ncpu-1 and ncpu..2ncpu-1 hold identical events. */
	for (i = 0; i < 2 * ncpu; i++) {
		cur[n] = hgt_cursor_open(in, 0, i % ncpu);
		assert_non_null(cur[n]);
		assert_int_equal(hgt_merge_add(m, cur[n], &clk, NULL), n);
		n++;
	}
	while (hgt_merge_next(m, &rec, NULL, &src) > 0) {
		/* (time, source) never goes backwards: equal times go to the earlier source */
		assert_true(rec->ts >= last);
		if (rec->ts == last && prev_src >= 0)
			assert_true(src >= prev_src);
		if (src < ncpu)
			ts_first += rec->ts;
		else
			ts_second += rec->ts;
		last = rec->ts;
		prev_src = src;
		events++;
	}
	assert_true(events > 100);
	assert_int_equal(events % 2, 0);
	assert_int_equal(ts_first, ts_second);
	hgt_merge_free(m);
	for (i = 0; i < n; i++)
		hgt_cursor_close(cur[i]);
	hgt_input_close(in);
}

/* A host sched_switch record of @tep's format: @prev switched out, @next in. */
static struct tep_record *host_switch(struct tep_handle *tep, unsigned char *buf, size_t n, int cpu,
				      unsigned long long ts, int prev, int next)
{
	static struct tep_record rec;
	struct tep_event *ev = tep_find_event_by_name(tep, "sched", "sched_switch");
	struct tep_format_field *ty, *pp, *np;
	unsigned short id;

	assert_non_null(ev);
	ty = tep_find_common_field(ev, "common_type");
	pp = tep_find_field(ev, "prev_pid");
	np = tep_find_field(ev, "next_pid");
	assert_non_null(ty);
	assert_non_null(pp);
	assert_non_null(np);
	assert_true((size_t)ev->format.fields->offset < n && (size_t)np->offset + 4 <= n);
	memset(buf, 0, n);
	id = (unsigned short)ev->id;
	memcpy(buf + ty->offset, &id, 2);
	memcpy(buf + pp->offset, &prev, 4);
	memcpy(buf + np->offset, &next, 4);
	memset(&rec, 0, sizeof(rec));
	rec.data = buf;
	rec.size = (int)n;
	rec.cpu = cpu;
	rec.ts = ts;
	return &rec;
}

static void guest_event(struct hgt_sync_check *sc, int cpu, unsigned long long ts)
{
	unsigned char buf[64] = { 0 };
	struct tep_record rec = { .ts = ts, .cpu = cpu, .data = buf, .size = sizeof(buf) };

	hgt_sync_check_record(sc, 1, &rec);
}

/*
 * A vCPU thread running when the host's trace began (no switch-in seen) ran at least since
 * the previous switch on its CPU: its guest events within the sync bound before that
 * switch may be its own and count inside; older ones are unchecked, none outside. The
 * expected counts are placed by hand around the bound B the simulator stored.
 */
static void test_sync_check_first_switch_out(void **state)
{
	/* the channel's bound: 4000 TSC cycles, which at the simulator's 2.6 GHz (it stores
	 * TSC2NSEC) are 1538 ns in the times the check sees */
	const long long B = 4000, B_NS = 1538;
	char host[600], guest[600];
	struct hgt_sim_result r;
	HGT_OPTS(hgt_sim_opts, so, .seed = 3, .nr_vcpus = 1, .nr_host_cpus = 1,
		 .duration_us = 20000, .tcg = true, .embed_sync = true, .channel_bound = B,
		 .host_path = host, .guest_path = guest);
	struct hgt_input *in[2];
	struct hgt_sync_check *sc;
	struct hgt_sync_stats st;
	unsigned char buf[256];
	const unsigned long long T0 = 10000000, T1 = T0 + 5000;
	int vpid;

	(void)state;
	snprintf(host, sizeof(host), "%s/first-host.dat", dir);
	snprintf(guest, sizeof(guest), "%s/first-guest.dat", dir);
	assert_int_equal(hgt_simulate(&so, &r), 0);
	vpid = r.vcpu_pid[0];
	in[0] = hgt_input_open(host, NULL);
	in[1] = hgt_input_open(guest, NULL);
	assert_non_null(in[0]);
	assert_non_null(in[1]);
	sc = hgt_sync_check_new(in, 2, NULL);
	assert_non_null(sc);
	assert_int_equal(hgt_sync_check_host(sc), 0);
	/* another task's switch on CPU 0 at T0: the vCPU thread ran since then at least */
	hgt_sync_check_record(
		sc, 0,
		host_switch(hgt_input_tep(in[0]), buf, sizeof(buf), 0, T0, vpid + 100, vpid + 101));
	guest_event(sc, 0, T0 - 2 * B_NS); /* older than T0 - bound: unchecked */
	guest_event(sc, 0, T0 - B_NS / 2); /* within the bound before T0: inside */
	guest_event(sc, 0, T0 + 100);	   /* after T0: inside */
	/* the vCPU thread switched out at T1, its switch-in never seen */
	hgt_sync_check_record(
		sc, 0,
		host_switch(hgt_input_tep(in[0]), buf, sizeof(buf), 0, T1, vpid, vpid + 101));
	assert_int_equal(hgt_sync_check_stats(sc, 1, &st), 0);
	print_message("# inside %llu, outside %llu, unchecked %llu (want 2, 0, 1)\n",
		      (unsigned long long)st.inside, (unsigned long long)st.outside,
		      (unsigned long long)st.unchecked);
	assert_true(st.mapped);
	assert_int_equal(st.inside, 2);
	assert_int_equal(st.outside, 0);
	assert_int_equal(st.unchecked, 1);
	hgt_sync_check_free(sc);
	hgt_input_close(in[0]);
	hgt_input_close(in[1]);
	unlink(host);
	unlink(guest);
}

/*
 * The channel's set for an offset at guest time m (hgt__channel_at): on its samples'
 * line +- b, and beyond the first or last sample the nearest one's offset +- (b + rate *
 * the distance), rounded up with a cycle to spare. The values below are worked by hand
 * for samples (1000, 100), (2000, 300), (4000, 200), b = 50, rate 0.5.
 */
static void test_channel_set_by_hand(void **state)
{
	static const int64_t time[] = { 1000, 2000, 4000 }, offset[] = { 100, 300, 200 };
	static const struct {
		int64_t m;
		double rate;
		int64_t lo, hi;
	} want[] = {
		/* before the first: 100 +- (50 + ceil(0.5 * 500) + 1) */
		{ 500, 0.5, 100 - 301, 100 + 301 },
		/* after the last: 200 +- (50 + ceil(0.5 * 1000) + 1) */
		{ 5000, 0.5, 200 - 551, 200 + 551 },
		/* between the first two: 100 + 500 * 200 / 1000 = 200, +- (50 + 1) */
		{ 1500, 0.5, 149, 251 },
		/* between the last two: 300 - 1000 * 100 / 2000 = 250, +- 51 */
		{ 3000, 0.5, 199, 301 },
		/* on a sample: its own offset */
		{ 2000, 0.5, 249, 351 },
		/* rate 0 beyond the samples: b and the spare cycle only */
		{ 500, 0.0, 49, 151 },
	};
	struct hgt_time_shift_cpu c = { .count = 3, .time = time, .offset = offset };
	unsigned int checked = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int64_t lo = 0, hi = 0;

		hgt__channel_at(&c, 50, want[i].rate, want[i].m, &lo, &hi);
		print_message("# m %lld rate %.1f: [%lld, %lld], by hand [%lld, %lld]\n",
			      (long long)want[i].m, want[i].rate, (long long)lo, (long long)hi,
			      (long long)want[i].lo, (long long)want[i].hi);
		assert_int_equal(lo, want[i].lo);
		assert_int_equal(hi, want[i].hi);
		checked++;
	}
	assert_int_equal(checked, 6);
}

TEST_SCRATCH_DIR(dir)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_copies_interleave_in_order),
		cmocka_unit_test(test_sync_check_first_switch_out),
		cmocka_unit_test(test_channel_set_by_hand),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
