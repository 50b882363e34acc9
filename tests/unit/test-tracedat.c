// SPDX-License-Identifier: GPL-2.0-or-later
/* The reader on committed real recordings, and on damaged copies of them. */
#include "test-helpers.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include <hgtrace/output.h>
#include <hgtrace/simulate.h>
#include <hgtrace/tracedat.h>

#include "../../lib/tracedat/tracedat-local.h"

static void test_header_and_options(void **state)
{
	struct hgt_input *in = hgt_input_open(test_data("tsc.dat"), NULL);
	uint64_t id;

	assert_non_null(in);
	assert_int_equal(hgt_input_version(in), 7);
	assert_int_equal(hgt_input_compression(in), HGT_COMPRESS_ZSTD);
	assert_int_equal(hgt_input_page_size(in), 4096);
	assert_int_equal(hgt_input_kernel_long_size(in), 8);
	assert_string_equal(hgt_input_trace_clock(in), "x86-tsc");
	assert_false(hgt_input_in_usecs(in));
	assert_true(hgt_input_trace_id(in, &id));
	assert_int_equal(hgt_input_top_buffer(in), 0);
	assert_non_null(hgt_input_option(in, HGT_OPT_UNAME));
	assert_non_null(hgt_input_tep(in));
	/* the options by index: the last one, and nothing on either side */
	assert_true(hgt_input_nr_options(in) > 0);
	assert_non_null(hgt_input_option_at(in, hgt_input_nr_options(in) - 1));
	assert_null(hgt_input_option_at(in, hgt_input_nr_options(in)));
	assert_null(hgt_input_option_at(in, -1));
	hgt_input_close(in);
}

/* Settings no trace.dat can have are refused before any file is made: version 6 with
 * compression, version 5 or 8, a page under 64 bytes, a long of 2 bytes. */
static void test_output_refuses_impossible_files(void **state)
{
	char dir[] = "/tmp/hgt-out-XXXXXX", path[64];
	const struct {
		int version, compression;
		uint32_t page;
		int lsize;
	} bad[] = { { 6, HGT_COMPRESS_ZSTD, 0, 0 },
		    { 6, HGT_COMPRESS_ZLIB, 0, 0 },
		    { 5, 0, 0, 0 },
		    { 8, 0, 0, 0 },
		    { 7, 0, 32, 0 },
		    { 7, 0, 0, 2 } };

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/o.dat", dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		HGT_OPTS(hgt_output_opts, oo, .version = bad[i].version,
			 .compression = (enum hgt_compression)bad[i].compression,
			 .page_size = bad[i].page, .long_size = bad[i].lsize);

		assert_null(hgt_output_create(path, &oo));
		assert_int_equal(errno, EINVAL);
		assert_int_equal(access(path, F_OK), -1);
	}
	{
		HGT_OPTS(hgt_output_opts, oo, .version = 6);
		struct hgt_output *o = hgt_output_create(path, &oo);

		assert_non_null(o);
		hgt_output_abort(o);
	}
	assert_int_equal(rmdir(dir), 0);
}

/* Every event of every CPU, as (ts, size, bytes), must be the same in v6 and v7-zstd. */
static void test_v6_and_v7_zstd_hold_the_same_events(void **state)
{
	struct hgt_input *a = hgt_input_open(test_data("tsc.dat"), NULL);
	struct hgt_input *b = hgt_input_open(test_data("tsc-v6.dat"), NULL);
	uint64_t ida, idb, total = 0;
	int cpu;

	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(hgt_input_version(b), 6);
	assert_true(hgt_input_trace_id(a, &ida) && hgt_input_trace_id(b, &idb));
	assert_int_equal(ida, idb);
	assert_int_equal(hgt_input_nr_cpus(a), hgt_input_nr_cpus(b));
	for (cpu = 0; cpu < hgt_input_nr_cpus(a); cpu++) {
		struct hgt_cursor *ca = hgt_cursor_open(a, 0, cpu),
				  *cb = hgt_cursor_open(b, 0, cpu);
		struct tep_record ra, rb;
		int x, y;

		assert_non_null(ca);
		assert_non_null(cb);
		do {
			x = hgt_cursor_next(ca, &ra);
			y = hgt_cursor_next(cb, &rb);
			assert_int_equal(x, y);
			if (x > 0) {
				assert_int_equal(ra.ts, rb.ts);
				assert_int_equal(ra.size, rb.size);
				assert_memory_equal(ra.data, rb.data, ra.size);
				assert_int_equal(ra.missed_events, rb.missed_events);
				total++;
			}
		} while (x > 0);
		hgt_cursor_close(ca);
		hgt_cursor_close(cb);
	}
	assert_true(total > 100);
	hgt_input_close(a);
	hgt_input_close(b);
}

static void test_instance_buffer_and_losses(void **state)
{
	struct hgt_input *in = hgt_input_open(test_data("inst.dat"), NULL);
	struct hgt_loss loss, sum = { 0 };
	const struct hgt_buffer *b;
	int cpu;

	assert_non_null(in);
	assert_int_equal(hgt_input_nr_buffers(in), 2);
	b = hgt_input_buffer(in, 1);
	assert_true(strncmp(b->name, "hgt_", 4) == 0);
	/* trace-cmd extract stores the top instance's clock for the instance too */
	assert_string_equal(b->clock, hgt_input_trace_clock(in));
	for (cpu = 0; cpu < b->nr_cpus; cpu++) {
		struct hgt_cursor *c = hgt_cursor_open(in, 1, cpu);
		struct tep_record r;

		assert_non_null(c);
		while (hgt_cursor_next(c, &r) > 0)
			;
		hgt_cursor_loss(c, &loss);
		sum.pages_with_loss += loss.pages_with_loss;
		sum.events_lost += loss.events_lost;
		hgt_cursor_close(c);
	}
	/* The recording overran its 8 KB buffer: pages say so. */
	assert_true(sum.pages_with_loss > 0);
	assert_true(sum.events_lost > 0);
	hgt_input_close(in);
}

/* Write the first @len bytes of @src to a temp file (optionally patching one byte). */
static char *damaged_copy(const char *src, size_t len, long patch_at, int patch_val)
{
	static char path[] = "/tmp/hgt-unit-XXXXXX";
	char *copy = strdup(path);
	FILE *in = fopen(src, "rb");
	char *buf = malloc(len ? len : 1);
	size_t n = fread(buf, 1, len, in);
	int fd = mkstemp(copy);

	fclose(in);
	if (patch_at >= 0 && (size_t)patch_at < n)
		buf[patch_at] = (char)patch_val;
	assert_true(write(fd, buf, n) == (ssize_t)n);
	close(fd);
	free(buf);
	return copy;
}

static void expect_error(const char *path, const char *needle)
{
	struct hgt_input *in = hgt_input_open(path, NULL);

	assert_null(in);
	assert_non_null(strstr(hgt_last_error(), path));
	if (!strstr(hgt_last_error(), needle))
		fail_msg("error \"%s\" lacks \"%s\"", hgt_last_error(), needle);
}

static void test_bad_magic_version_truncation(void **state)
{
	char *p;

	p = damaged_copy(test_data("tsc.dat"), 4096, 0, 0x18);
	expect_error(p, "bad magic");
	unlink(p);
	free(p);
	p = damaged_copy(test_data("tsc.dat"), 4096, 10, '9');
	expect_error(p, "unsupported file version \"9\"");
	unlink(p);
	free(p);
	p = damaged_copy(test_data("tsc.dat"), 30, -1, 0);
	expect_error(p, "offset 0x");
	unlink(p);
	free(p);
}

/*
 * A format that crashes libtraceevent is skipped on every open in one process, whether its
 * verdict comes from a probe or from the kept verdicts (a wrong "good" from the cache
 * would crash this test). The file's other formats are parsed each time.
 */
static void test_format_verdicts_kept(void **state)
{
	static const char *const files[] = { "damaged/v7-btrfs-format-crash.dat",
					     "damaged/v6-timer-format-crash.dat", "tsc.dat" };
	HGT_OPTS(hgt_open_opts, oo, .flags = HGT_OPEN_QUIET);

	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		int first = -1;

		for (int i = 0; i < 3; i++) {
			struct hgt_input *in = hgt_input_open(test_data(files[k]), &oo);
			int n;

			assert_non_null(in);
			n = tep_get_events_count(hgt_input_tep(in));
			assert_true(n > 100);
			if (first < 0)
				first = n;
			assert_int_equal(n, first);
			hgt_input_close(in);
		}
	}
}

/* What an open parsed: per event its fields and the length of its print format. */
static unsigned long formats_signature(const char *path)
{
	HGT_OPTS(hgt_open_opts, oo, .flags = HGT_OPEN_QUIET);
	struct hgt_input *in = hgt_input_open(path, &oo);
	unsigned long sig = 0;
	int n;

	if (!in)
		return 0;
	n = tep_get_events_count(hgt_input_tep(in));
	for (int i = 0; i < n; i++) {
		struct tep_event *ev = tep_get_event(hgt_input_tep(in), i);

		sig = sig * 31 + (unsigned long)ev->format.nr_fields * 1000 + (unsigned long)ev->id;
		sig = sig * 31 + (ev->print_fmt.format ? strlen(ev->print_fmt.format) : 0);
	}
	hgt_input_close(in);
	return sig;
}

struct opener {
	char path[4096];
	unsigned long want;
	int opens, wrong;
};

static void *open_many(void *arg)
{
	struct opener *o = arg;

	for (int i = 0; i < 10; i++, o->opens++)
		o->wrong += formats_signature(o->path) != o->want;
	return NULL;
}

/*
 * Opens in several threads at once (the listener finishes guests' files in threads): the
 * format guard's helper (forked by a thread that then ends, so replaced), the kept verdicts
 * and libtraceevent's static parse state are shared. Four threads open four files ten times
 * each; every open must parse what one open alone parses (each file's signature taken
 * first, alone).
 */
static void test_opens_in_threads(void **state)
{
	static const char *const files[] = { "tsc.dat", "mono.dat", "inst.dat", "tsc-v6.dat" };
	struct opener o[4];
	pthread_t t[4];

	for (int k = 0; k < 4; k++) {
		o[k] = (struct opener){ 0 };
		snprintf(o[k].path, sizeof(o[k].path), "%s", test_data(files[k]));
		o[k].want = formats_signature(o[k].path);
		assert_true(o[k].want != 0);
	}
	for (int k = 0; k < 4; k++)
		assert_int_equal(pthread_create(&t[k], NULL, open_many, &o[k]), 0);
	for (int k = 0; k < 4; k++) {
		pthread_join(t[k], NULL);
		assert_int_equal(o[k].opens, 10);
		assert_int_equal(o[k].wrong, 0);
	}
}

/* Every window of pages a cursor reads is followed by HGT__PAGE_SLACK zero bytes (what
 * libtraceevent may read past a record whatever its __data_loc says), also after a window
 * shorter than the one before (whose pages lay there): uncompressed pages (16 a window)
 * and zstd chunks, every window of both CPUs of a simulated host. */
static void test_window_slack_is_zero(void **state)
{
	static const enum hgt_compression comp[] = { HGT_COMPRESS_NONE, HGT_COMPRESS_ZSTD };
	char dir[] = "/tmp/hgt-test-slack-XXXXXX", host[64], guest[64], cmd[96];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(host, sizeof(host), "%s/host.dat", dir);
	snprintf(guest, sizeof(guest), "%s/guest.dat", dir);
	for (size_t k = 0; k < sizeof(comp) / sizeof(comp[0]); k++) {
		HGT_OPTS(hgt_sim_opts, so, .seed = 5, .nr_vcpus = 2, .nr_host_cpus = 2,
			 .duration_us = 400000, .compression = comp[k], .host_path = host,
			 .guest_path = guest);
		struct hgt_sim_result r;
		struct hgt_input *in;
		int windows = 0, shorter = 0;

		assert_int_equal(hgt_simulate(&so, &r), 0);
		in = hgt_input_open(host, NULL);
		assert_non_null(in);
		for (int cpu = 0; cpu < hgt_input_nr_cpus(in); cpu++) {
			struct hgt_cursor *c = hgt_cursor_open(in, 0, cpu);
			const uint8_t *pages;
			size_t len, prev = 0;

			assert_non_null(c);
			while (hgt__cursor_next_pages(c, &pages, &len) > 0) {
				for (size_t i = 0; i < HGT__PAGE_SLACK; i++)
					if (pages[len + i])
						fail_msg(
							"compression %d, cpu %d, window %d: byte %zu past its %zu bytes of pages is %u",
							comp[k], cpu, windows, i, len,
							pages[len + i]);
				shorter += len < prev;
				prev = len;
				windows++;
			}
			hgt_cursor_close(c);
		}
		print_message(
			"# compression %d: %d windows, %d shorter than the one before, their slack all zero\n",
			comp[k], windows, shorter);
		assert_true(windows >= 4);
		assert_true(shorter >= 1);
		hgt_input_close(in);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_and_options),
		cmocka_unit_test(test_output_refuses_impossible_files),
		cmocka_unit_test(test_v6_and_v7_zstd_hold_the_same_events),
		cmocka_unit_test(test_instance_buffer_and_losses),
		cmocka_unit_test(test_bad_magic_version_truncation),
		cmocka_unit_test(test_format_verdicts_kept),
		cmocka_unit_test(test_opens_in_threads),
		cmocka_unit_test(test_window_slack_is_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
