// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The flight recorder's "same hit" rule (hgt__hit_same()), on hits written out by hand: a
 * guest's marker found by two searches, or again in its saved window, is one trigger even
 * when its host time moved with what the sync learnt meanwhile (683 ns in a listen
 * --flight session here), and only then; delays are the same when they overlap.
 *
 * And where the next search starts (hgt__live.resume): a simulated session is cut in the
 * middle of an injected 400 ms delay, every event after that time taken out of the files
 * (as a recording in progress holds them), and searched with a trigger of that delay's
 * kind. The delay is not over, so it is no hit; the next search must read its start again,
 * which the simulator's truth places: a guest task's wakeup (the delay's from), a guest
 * timer's arming (before its expiry, the delay's from), a vCPU thread's preemption (within
 * its last cause_ns before the delay's end). Uncut, the same search takes the delay.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hgtrace/output.h>
#include <hgtrace/simulate.h>
#include <hgtrace/tracedat.h>
#include <hgtrace/why.h>
#include <traceevent/event-parse.h>

#include "test-helpers.h"
#include "../../lib/flight/flight-local.h"
#include "../../lib/private/why.h"

static struct hgt__hit hit(enum hgt__trig_kind kind, uint64_t from, uint64_t to, const char *text)
{
	struct hgt__hit h;

	memset(&h, 0, sizeof(h));
	h.kind = kind;
	h.input = 1;
	h.cpu = 1;
	h.pid = 15504;
	h.from_ns = from;
	h.to_ns = to;
	snprintf(h.cause, sizeof(h.cause), "%s", text);
	return h;
}

static void test_marker_moved_by_sync(void **state)
{
	struct hgt__hit a = hit(HGT__TRIG_MARKER, 38100315160965ULL, 38100315160965ULL,
				"app: hgt-late 7"),
			b = hit(HGT__TRIG_MARKER, 38100315160282ULL, 38100315160282ULL,
				"app: hgt-late 7");

	(void)state;
	assert_true(hgt__hit_same(&a, &b));
	assert_true(hgt__hit_same(&b, &a));
}

static void test_marker_apart_or_other(void **state)
{
	struct hgt__hit a = hit(HGT__TRIG_MARKER, 5000000000ULL, 5000000000ULL, "app: hgt-late 7"),
			later = hit(HGT__TRIG_MARKER, 5002000000ULL, 5002000000ULL,
				    "app: hgt-late 7"),
			other = hit(HGT__TRIG_MARKER, 5000000000ULL, 5000000000ULL,
				    "app: hgt-late 8");

	(void)state;
	assert_false(hgt__hit_same(&a, &later)); /* 2 ms apart: two writes */
	assert_false(hgt__hit_same(&a, &other)); /* another text */
	other.pid = a.pid + 1;
	assert_false(hgt__hit_same(&a, &other));
}

static void test_delays_overlap(void **state)
{
	struct hgt__hit a = hit(HGT__TRIG_WAKEUP, 1000, 60000000, ""),
			grown = hit(HGT__TRIG_WAKEUP, 1000, 90000000, ""),
			after = hit(HGT__TRIG_WAKEUP, 60000001, 120000000, "");

	(void)state;
	assert_true(hgt__hit_same(&a, &grown));
	assert_false(hgt__hit_same(&a, &after)); /* no slack for a delay: it has a length */
}

static char dir[] = "/tmp/hgt-test-flight-XXXXXX";

#define PAGE 4096

/* Where the events after report time @t[input][cpu] begin: per input and CPU, the file
 * offset of the first one's data (0: none after). */
struct after {
	uint64_t t[2][8];
	uint64_t at[2][8];
};

static void note_after(void *arg, int input, struct tep_handle *tep, struct tep_record *rec)
{
	struct after *a = arg;

	(void)tep;
	if (input < 2 && rec->cpu >= 0 && rec->cpu < 8 && rec->ts > a->t[input][rec->cpu] &&
	    !a->at[input][rec->cpu])
		a->at[input][rec->cpu] = rec->offset;
}

/* The offset in ring-buffer page @p (a 64-bit kernel's: u64 stamp, u64 commit) of the
 * event whose data begins at @data, walked as the kernel lays them out (-1: none). */
static long event_start(const uint8_t *p, size_t data)
{
	uint64_t commit;
	size_t at = 16, end;

	memcpy(&commit, p + 8, 8);
	end = 16 + (commit & ((1u << 27) - 1));
	while (at + 4 <= end && end <= PAGE) {
		uint32_t h, len;
		unsigned int type_len;

		memcpy(&h, p + at, 4);
		type_len = h & 31;
		if (at + 8 <= end)
			memcpy(&len, p + at + 4, 4);
		else
			len = 0;
		if (type_len == 0) { /* data after a length word, which it counts */
			if (at + 8 == data)
				return (long)at;
			at += 4 + len;
		} else if (type_len <= 28) {
			if (at + 4 == data)
				return (long)at;
			at += 4 + 4 * type_len;
		} else if (type_len == 29) { /* padding */
			at += (h >> 5) ? 4 + len : end;
		} else { /* a time extend or stamp */
			at += 8;
		}
	}
	return -1;
}

/* @path (input @which of the pair) with every event after its time in @a taken out: its
 * page's commit ends before it, and the CPU's pages after that one are left empty. */
static void cut_after(int which, const char *path, const struct after *a)
{
	struct hgt_input *in = hgt_input_open(path, NULL);
	const struct hgt_buffer *b = in ? hgt_input_buffer(in, hgt_input_top_buffer(in)) : NULL;
	int fd = open(path, O_RDWR);

	assert_non_null(b);
	assert_true(fd >= 0);
	for (int cpu = 0; cpu < 8 && cpu < b->nr_cpus; cpu++) {
		uint64_t x = a->at[which][cpu], page = x & ~(uint64_t)(PAGE - 1), commit;
		uint64_t end = b->cpus[cpu].offset + b->cpus[cpu].size;
		uint8_t p[PAGE];
		long start;

		if (!x)
			continue;
		assert_int_equal(pread(fd, p, PAGE, (off_t)page), PAGE);
		start = event_start(p, (size_t)(x - page));
		assert_true(start >= 16);
		memcpy(&commit, p + 8, 8);
		commit = (commit & ~(uint64_t)((1u << 27) - 1)) | (uint64_t)(start - 16);
		memcpy(p + 8, &commit, 8);
		memset(p + start, 0, PAGE - (size_t)start);
		assert_int_equal(pwrite(fd, p, PAGE, (off_t)page), PAGE);
		for (page += PAGE; page + PAGE <= end; page += PAGE) { /* empty: commit 0 */
			memset(p + 8, 0, PAGE - 8);
			assert_int_equal(pwrite(fd, p, PAGE, (off_t)page), PAGE);
		}
	}
	close(fd);
	hgt_input_close(in);
}

/* The pair @in[0..1] cut at report time @t into @out[0..1]: the pages up to @t (convert's
 * window), then the events after @t in them taken out; guest CPU @late's after @t_late
 * (-1: none such). */
static void cut(const char *const *in, const char *const *out, uint64_t t, int late,
		uint64_t t_late)
{
	struct after a = { 0 };

	for (int i = 0; i < 2; i++)
		for (int c = 0; c < 8; c++)
			a.t[i][c] = i == 1 && c == late ? t_late : t;
	HGT_OPTS(hgt_why_opts, wo, .inputs = out, .nr_inputs = 2, .quiet = true);
	struct hgt_why_result *r;

	for (int i = 0; i < 2; i++) {
		struct hgt_input *f = hgt_input_open(in[i], NULL);
		HGT_OPTS(hgt_convert_opts, co, .window = true, .from = 0, .to = t);

		assert_non_null(f);
		assert_int_equal(hgt_tracedat_convert(f, out[i], &co), 0);
		hgt_input_close(f);
	}
	r = hgt__why_scan(&wo, NULL, note_after, &a, NULL);
	assert_non_null(r);
	hgt_why_free(r);
	for (int i = 0; i < 2; i++)
		cut_after(i, out[i], &a);
}

/* The session with @cause injected (in its middle, 400 ms), cut @at (0: not cut) of the
 * way through its delay, searched with @trigger: the hits, their number into *@nr, how far
 * the search reaches into @live, the delay as placed into @inj. */
static struct hgt__hit *search(enum hgt_sim_cause cause, const char *trigger, double at,
			       uint64_t lag_ns, struct hgt__live *live, int *nr,
			       struct hgt_sim_injected *inj, int *deferred)
{
	char host[512], guest[512], hc[512], gc[512];
	const char *in[2] = { host, guest }, *out[2] = { hc, gc };
	struct hgt_sim_inject one = { .cause = cause, .us = 400000 };
	struct hgt_sim_result r;
	struct hgt__trigger t;
	struct hgt__hit *hits = NULL;
	HGT_OPTS(hgt_sim_opts, so, .seed = 5, .nr_vcpus = 2, .nr_host_cpus = 2,
		 .duration_us = 1500000, .embed_sync = true, .version = 7,
		 .compression = HGT_COMPRESS_NONE, .host_path = host, .guest_path = guest,
		 .inject = &one, .nr_inject = 1);

	snprintf(host, sizeof(host), "%s/%d-host.dat", dir, (int)cause);
	snprintf(guest, sizeof(guest), "%s/%d-guest.dat", dir, (int)cause);
	snprintf(hc, sizeof(hc), "%s/%d-cut-host.dat", dir, (int)cause);
	snprintf(gc, sizeof(gc), "%s/%d-cut-guest.dat", dir, (int)cause);
	assert_int_equal(hgt_simulate(&so, &r), 0);
	assert_int_equal(r.nr_injected, 1);
	*inj = r.injected[0];
	if (at > 0)
		cut(in, out, inj->from_ns + (uint64_t)((double)(inj->to_ns - inj->from_ns) * at),
		    lag_ns ? !inj->guest_cpu : -1, inj->to_ns - lag_ns);
	assert_int_equal(hgt__trigger_parse(trigger, &t), 0);
	memset(live, 0, sizeof(*live));
	live->lag_ns = lag_ns;
	*nr = *deferred = 0;
	assert_int_equal(
		hgt__trigger_search(&t, 1, at > 0 ? out : in, 2, live, &hits, nr, deferred), 0);
	hgt__trigger_free(&t);
	return hits;
}

/* The hits that are the injected delay: it ends at its end (the task or timer runs, the
 * thread is switched in again just before its guest task is), to 10 us. */
static int hits_of(const struct hgt__hit *hits, int nr, const struct hgt_sim_injected *inj)
{
	int n = 0;

	for (int i = 0; i < nr; i++)
		n += hits[i].to_ns + 10000 >= inj->to_ns && hits[i].to_ns <= inj->to_ns + 10000;
	return n;
}

static void resume_case(enum hgt_sim_cause cause, const char *trigger, bool stretch)
{
	struct hgt_sim_injected inj;
	struct hgt__live live;
	uint64_t need;
	int nr, deferred;
	struct hgt__hit *hits = search(cause, trigger, 0.5, 0, &live, &nr, &inj, &deferred);

	/* a stretch is cause_ns long and ends by the delay's end: it began by then */
	need = stretch ? inj.to_ns - inj.cause_ns : inj.from_ns;
	print_message(
		"# %s: the delay %llu..%llu (%llu ns of cause), cut in its middle: %d hits of it, searched up to %llu, the next search from %llu (%s %llu)\n",
		trigger, (unsigned long long)inj.from_ns, (unsigned long long)inj.to_ns,
		(unsigned long long)inj.cause_ns, hits_of(hits, nr, &inj),
		(unsigned long long)live.upto, (unsigned long long)live.resume,
		live.resume <= need ? "by" : "NOT by", (unsigned long long)need);
	/* the cut: past its start (a search read it), before its end */
	assert_true(live.upto > need && live.upto < inj.to_ns);
	assert_int_equal(hits_of(hits, nr, &inj), 0);
	assert_true(live.resume <= need);
	free(hits);
	/* cut 20 ms after its end, the pages 100 ms late, the other guest CPU's pages up to
	 * 100 ms before its end: it ends after the span a search takes hits in, and the next
	 * decides */
	hits = search(cause, trigger, 1.05, 100000000, &live, &nr, &inj, &deferred);
	print_message(
		"# %s: cut 20 ms after it, pages 100 ms late: %d hit(s) of it, %d deferred, searched up to %llu, the next search from %llu (%s %llu)\n",
		trigger, hits_of(hits, nr, &inj), deferred, (unsigned long long)live.upto,
		(unsigned long long)live.resume, live.resume <= need ? "by" : "NOT by",
		(unsigned long long)need);
	assert_true(live.upto < inj.to_ns);
	assert_int_equal(hits_of(hits, nr, &inj), 0);
	assert_true(deferred >= 1);
	assert_true(live.resume <= need);
	free(hits);
	hits = search(cause, trigger, 0, 0, &live, &nr, &inj, &deferred);
	print_message("# %s: uncut, %d hit(s) of it\n", trigger, hits_of(hits, nr, &inj));
	assert_int_equal(hits_of(hits, nr, &inj), 1);
	free(hits);
}

/* a guest task woken, not run: its wakeup */
static void test_resume_wakeup(void **state)
{
	(void)state;
	resume_case(HGT_SIM_GUEST, "wakeup>100ms", false);
}

/* a guest timer past its expiry, not run: its arming */
static void test_resume_timer(void **state)
{
	(void)state;
	resume_case(HGT_SIM_WOKEN, "timer>100ms", false);
}

/* a vCPU thread preempted, still: its preemption */
static void test_resume_preempt(void **state)
{
	(void)state;
	resume_case(HGT_SIM_PREEMPT, "preempt>100ms", true);
}

TEST_SCRATCH_DIR(dir)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_marker_moved_by_sync),
		cmocka_unit_test(test_marker_apart_or_other),
		cmocka_unit_test(test_delays_overlap),
		cmocka_unit_test(test_resume_wakeup),
		cmocka_unit_test(test_resume_timer),
		cmocka_unit_test(test_resume_preempt),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
