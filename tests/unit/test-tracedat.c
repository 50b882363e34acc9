// SPDX-License-Identifier: GPL-2.0-or-later
/* The reader on committed real recordings, and on damaged copies of them. */
#include "test-helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include <hgtrace/output.h>
#include <hgtrace/simulate.h>
#include <hgtrace/tracedat.h>

#include "../../lib/common/thread.h"
#include "../../lib/private/tracedat.h"
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

/* Every event of every CPU of @a and @b the same (ts, size, bytes, missed
 * events); returns how many. */
static uint64_t same_events(struct hgt_input *a, struct hgt_input *b)
{
	uint64_t total = 0;

	assert_int_equal(hgt_input_nr_cpus(a), hgt_input_nr_cpus(b));
	for (int cpu = 0; cpu < hgt_input_nr_cpus(a); cpu++) {
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
	return total;
}

/* Every event of every CPU, as (ts, size, bytes), must be the same in v6 and v7-zstd. */
static void test_v6_and_v7_zstd_hold_the_same_events(void **state)
{
	struct hgt_input *a = hgt_input_open(test_data("tsc.dat"), NULL);
	struct hgt_input *b = hgt_input_open(test_data("tsc-v6.dat"), NULL);
	uint64_t ida, idb;

	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(hgt_input_version(b), 6);
	assert_true(hgt_input_trace_id(a, &ida) && hgt_input_trace_id(b, &idb));
	assert_int_equal(ida, idb);
	assert_true(same_events(a, b) > 100);
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

/* What a zpipe gave back: each chunk's sizes and bytes, in the order given. */
struct chunks {
	uint8_t *p;
	size_t len, n;
	int fail_at; /* the emit of this chunk fails (-1: none) */
};

static int keep_chunk(void *ctx, const uint8_t *data, size_t clen, size_t len)
{
	struct chunks *c = ctx;
	uint8_t *np;

	if ((int)c->n == c->fail_at)
		return -ENOSPC;
	np = realloc(c->p, c->len + 16 + clen);
	assert_non_null(np);
	c->p = np;
	memcpy(c->p + c->len, &clen, 8);
	memcpy(c->p + c->len + 8, &len, 8);
	memcpy(c->p + c->len + 16, data, clen);
	c->len += 16 + clen;
	c->n++;
	return 0;
}

/* The pipe itself against hgt__compress() of each chunk: 3 "CPUs" of 37, 0 and 3 chunks
 * and a bit, put in pieces of odd sizes, with 1, 2 and 3 workers (that many threads
 * started); and an emit that fails on the 7th chunk ends it with that error. */
static void test_zpipe_gives_back_each_chunk_in_order(void **state)
{
	const size_t chunk = 40960, cpu_len[3] = { 37 * chunk + 1234, 0, 3 * chunk + 5 };
	size_t total = cpu_len[0] + cpu_len[1] + cpu_len[2];
	uint8_t *data = malloc(total);
	struct chunks want = { .fail_at = -1 };
	void *cctx = hgt__cctx_new(HGT_COMPRESS_ZSTD);
	uint32_t x = 1;

	(void)state;
	assert_non_null(data);
	/* compressible, never the same twice: words of a small alphabet */
	for (size_t i = 0; i < total; i++) {
		x = x * 1103515245 + 12345;
		data[i] = (uint8_t)('a' + (x >> 16) % 7);
	}
	for (size_t c = 0, off = 0; c < 3; off += cpu_len[c++])
		for (size_t o = 0; o < cpu_len[c]; o += chunk) {
			size_t n = cpu_len[c] - o < chunk ? cpu_len[c] - o : chunk, clen;
			uint8_t *z;

			assert_int_equal(hgt__compress(HGT_COMPRESS_ZSTD, cctx, data + off + o, n,
						       &z, &clen),
					 0);
			keep_chunk(&want, z, clen, n);
			free(z);
		}
	for (int th = 1; th <= 3; th++) {
		int before = hgt__threads_running();
		struct hgt__zpipe *zp = hgt__zpipe_new(HGT_COMPRESS_ZSTD, chunk, th);
		struct chunks got = { .fail_at = -1 }, cut = { .fail_at = 7 };
		int e, f;

		assert_non_null(zp);
		assert_int_equal(hgt__threads_running() - before, th);
		for (size_t c = 0, off = 0; c < 3; off += cpu_len[c++]) {
			for (size_t o = 0, piece = 4096 * 3 + 17; o < cpu_len[c]; o += piece) {
				size_t n = cpu_len[c] - o < piece ? cpu_len[c] - o : piece;

				assert_int_equal(
					hgt__zpipe_put(zp, data + off + o, n, keep_chunk, &got), 0);
			}
			assert_int_equal(hgt__zpipe_flush(zp, keep_chunk, &got), 0);
		}
		print_message("# %d workers: %zu chunks given back, %zu expected\n", th, got.n,
			      want.n);
		assert_int_equal(got.n, want.n);
		assert_int_equal(got.len, want.len);
		assert_memory_equal(got.p, want.p, want.len);
		/* the emit fails: the error comes back, from the put when it took the batch back
		 * (a worker already done with it), else from the flush; nothing hangs */
		e = hgt__zpipe_put(zp, data, cpu_len[0], keep_chunk, &cut);
		f = hgt__zpipe_flush(zp, keep_chunk, &cut);
		if (!(e == -ENOSPC && (f == 0 || f == -ENOSPC)) && !(e == 0 && f == -ENOSPC))
			fail_msg("%d workers: a failing emit: put %d, flush %d", th, e, f);
		assert_int_equal(cut.n, 7);
		hgt__zpipe_free(zp);
		assert_int_equal(hgt__threads_running(), before);
		free(got.p);
		free(cut.p);
	}
	/* how many workers a file takes: HGT_THREADS counts the writer too */
	setenv("HGT_THREADS", "3", 1);
	assert_int_equal(hgt__zpipe_threads(), 2);
	setenv("HGT_THREADS", "1", 1);
	assert_int_equal(hgt__zpipe_threads(), 0);
	unsetenv("HGT_THREADS");
	hgt__cctx_free(HGT_COMPRESS_ZSTD, cctx);
	free(want.p);
	free(data);
}

/* A test's file in memory (NULL when it cannot be read). */
static uint8_t *slurp_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	long n;

	if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
		p = malloc((size_t)n);
		if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
			free(p);
			p = NULL;
		}
		*len = (size_t)n;
	}
	if (f)
		fclose(f);
	return p;
}

/* A simulated host file in @dir (made), uncompressed, whose largest CPU (*@big) holds more
 * batches of chunks than 3 compressing threads hold at once. */
static struct hgt_input *many_batches(char *dir, int *big)
{
	char host[64], guest[64];
	struct hgt_input *src;
	uint64_t most = 0;

	assert_non_null(mkdtemp(dir));
	snprintf(host, sizeof(host), "%s/host.dat", dir);
	snprintf(guest, sizeof(guest), "%s/guest.dat", dir);
	{
		HGT_OPTS(hgt_sim_opts, so, .seed = 9, .nr_vcpus = 2, .nr_host_cpus = 2,
			 .duration_us = 5500000, .compression = HGT_COMPRESS_NONE,
			 .host_path = host, .guest_path = guest);
		struct hgt_sim_result r;

		assert_int_equal(hgt_simulate(&so, &r), 0);
	}
	src = hgt_input_open(host, NULL);
	assert_non_null(src);
	for (int cpu = 0; cpu < hgt_input_nr_cpus(src); cpu++) {
		uint64_t sz = hgt_input_buffer(src, 0)->cpus[cpu].size;

		if (sz > most && big)
			*big = cpu;
		most = sz > most ? sz : most;
	}
	/* a batch is 16 chunks of 10 pages: 640 KB; 3 threads hold 6 batches at most */
	print_message("# the largest CPU: %llu KB of pages, %llu batches\n",
		      (unsigned long long)most / 1024, (unsigned long long)most / (640 * 1024));
	assert_true(most > 7 * 640 * 1024);
	return src;
}

/* many_batches()'s end: @src closed, @dir removed, HGT_THREADS as it was (@saved, freed). */
static void end_many_batches(struct hgt_input *src, const char *dir, char *saved)
{
	char cmd[96];

	hgt_input_close(src);
	if (saved)
		setenv("HGT_THREADS", saved, 1);
	else
		unsetenv("HGT_THREADS");
	free(saved);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* A file's chunks compressed by worker threads (zpipe.c) are those one thread makes, in the
 * same order: with HGT_THREADS 2 and 3 the file is byte for byte the one of HGT_THREADS 1
 * (compressed inline), in zstd and zlib, for CPUs of many batches (more than the workers
 * hold at once) and a last batch cut short; and it holds the source's events. */
static void test_compressed_by_workers_is_identical(void **state)
{
	static const enum hgt_compression comp[] = { HGT_COMPRESS_ZSTD, HGT_COMPRESS_ZLIB };
	static const char *const threads[] = { "1", "2", "3" };
	char dir[] = "/tmp/hgt-test-zpipe-XXXXXX", out[80];
	const char *old = getenv("HGT_THREADS");
	char *saved = old ? strdup(old) : NULL;
	struct hgt_input *src;

	(void)state;
	src = many_batches(dir, NULL);
	for (size_t k = 0; k < sizeof(comp) / sizeof(comp[0]); k++) {
		uint8_t *first = NULL;
		size_t first_len = 0;

		for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
			HGT_OPTS(hgt_convert_opts, co, .version = 7, .compression = comp[k]);
			struct hgt_input *in;
			uint8_t *bytes;
			size_t len = 0;

			setenv("HGT_THREADS", threads[t], 1);
			snprintf(out, sizeof(out), "%s/c%zu-t%s.dat", dir, k, threads[t]);
			assert_int_equal(hgt_tracedat_convert(src, out, &co), 0);
			bytes = slurp_file(out, &len);
			assert_non_null(bytes);
			if (!first) {
				in = hgt_input_open(out, NULL);
				assert_non_null(in);
				print_message(
					"# compression %d: %zu bytes, %llu events as the source's\n",
					comp[k], len, (unsigned long long)same_events(src, in));
				hgt_input_close(in);
				first = bytes;
				first_len = len;
				continue;
			}
			if (len != first_len || memcmp(bytes, first, len))
				fail_msg(
					"compression %d: HGT_THREADS=%s wrote %zu bytes, not the %zu of HGT_THREADS=1 (or other bytes)",
					comp[k], threads[t], len, first_len);
			free(bytes);
		}
		free(first);
	}
	end_many_batches(src, dir, saved);
}

/* CPU @cpu's pages of @src, as a recording holds them: written to @path. */
static void cpu_file(struct hgt_input *src, int cpu, const char *path, const char *from)
{
	const struct hgt_cpu_data *c = &hgt_input_buffer(src, 0)->cpus[cpu];
	uint8_t *p = malloc(c->size ? c->size : 1);
	int in = open(from, O_RDONLY), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_non_null(p);
	assert_true(in >= 0 && fd >= 0);
	assert_int_equal(pread(in, p, c->size, (off_t)c->offset), (ssize_t)c->size);
	assert_int_equal(write(fd, p, c->size), (ssize_t)c->size);
	close(in);
	close(fd);
	free(p);
}

/* Each CPU's pages of @src (host.dat in @dir) as a recording's file, @dir/cpuN; with
 * @bad_cpu >= 0, that CPU's page @bad_page damaged (its commit larger than a page). */
static void cpu_files(struct hgt_input *src, const char *dir, int bad_cpu, uint64_t bad_page)
{
	uint32_t ps = hgt_input_page_size(src);
	char out[96], host[64];

	snprintf(host, sizeof(host), "%s/host.dat", dir);
	for (int cpu = 0; cpu < hgt_input_nr_cpus(src); cpu++) {
		snprintf(out, sizeof(out), "%s/cpu%d", dir, cpu);
		cpu_file(src, cpu, out, host);
	}
	if (bad_cpu >= 0) { /* the commit field, after the page's u64 timestamp */
		uint64_t commit = ps;
		int fd;

		snprintf(out, sizeof(out), "%s/cpu%d", dir, bad_cpu);
		fd = open(out, O_WRONLY);
		assert_int_equal(pwrite(fd, &commit, 8, (off_t)(bad_page * ps + 8)), 8);
		close(fd);
	}
}

/* cpu_files()' files opened into @f[0..@n). */
static void open_cpu_files(struct hgt__page_file *f, const char *dir, int n)
{
	char out[96];

	assert_true(n <= 8);
	for (int cpu = 0; cpu < n; cpu++) {
		snprintf(out, sizeof(out), "%s/cpu%d", dir, cpu);
		f[cpu].cpu = cpu;
		f[cpu].name = "cpu";
		f[cpu].fd = open(out, O_RDONLY);
		assert_true(f[cpu].fd >= 0);
	}
}

/* After a copy of cpu_files()' files (@what: how, in a failure's message): each closed,
 * all of its pages kept, but those from @bad_page on of @bad_cpu (dropped, damaged). */
static void check_copied(struct hgt_input *src, struct hgt__page_file *f, int bad_cpu,
			 uint64_t bad_page, const char *what)
{
	uint32_t ps = hgt_input_page_size(src);

	for (int cpu = 0; cpu < hgt_input_nr_cpus(src); cpu++) {
		uint64_t size = hgt_input_buffer(src, 0)->cpus[cpu].size;
		uint64_t kept = cpu == bad_cpu ? bad_page * ps : size;

		close(f[cpu].fd);
		if (f[cpu].kept != kept || f[cpu].dropped != size - kept ||
		    f[cpu].damaged != (cpu == bad_cpu))
			fail_msg(
				"%s, cpu %d: kept %llu, dropped %llu, damaged %d; %llu of %llu expected",
				what, cpu, (unsigned long long)f[cpu].kept,
				(unsigned long long)f[cpu].dropped, f[cpu].damaged,
				(unsigned long long)kept, (unsigned long long)size);
	}
}

/* cpu_files()' files in @dir converted (hgt__convert(), from @s's files) with HGT_THREADS
 * @threads into @out, and checked (check_copied()). */
static void convert_cpu_files(struct hgt_input *src, struct hgt__convert_src *s,
			      const struct hgt_convert_opts *co, const char *dir,
			      const char *threads, const char *out, int bad_cpu, uint64_t bad_page)
{
	open_cpu_files(s->files, dir, s->nr_files);
	setenv("HGT_THREADS", threads, 1);
	assert_int_equal(hgt__convert(src, out, co, s), 0);
	check_copied(src, s->files, bad_cpu, bad_page, threads);
}

/*
 * A recording's CPU files (hgt__convert() with src files: the stop, restore, the listener)
 * are read in place into the workers' batches: with HGT_THREADS 2 and 3 the file is byte
 * for byte the one of HGT_THREADS 1 (read into a buffer of its own and compressed inline),
 * in zstd and zlib. Undamaged, it holds every event of the source; with a page in the
 * middle of the largest CPU damaged (its commit larger than a page, 37 pages into a batch),
 * it keeps exactly the pages before it, counted so.
 */
static void test_recording_files_read_in_place(void **state)
{
	static const enum hgt_compression comp[] = { HGT_COMPRESS_ZSTD, HGT_COMPRESS_ZLIB };
	static const char *const threads[] = { "1", "2", "3" };
	char dir[] = "/tmp/hgt-test-inplace-XXXXXX", out[96];
	const char *old = getenv("HGT_THREADS");
	char *saved = old ? strdup(old) : NULL;
	const uint64_t bad_page = 4 * 160 + 37;
	int big = 0, n;
	struct hgt_input *src;

	(void)state;
	src = many_batches(dir, &big);
	n = hgt_input_nr_cpus(src);
	for (int damage = 0; damage < 2; damage++) {
		cpu_files(src, dir, damage ? big : -1, bad_page);
		for (size_t k = 0; k < sizeof(comp) / sizeof(comp[0]); k++) {
			uint8_t *first = NULL;
			size_t first_len = 0;

			for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
				HGT_OPTS(hgt_convert_opts, co, .version = 7,
					 .compression = comp[k]);
				struct hgt__page_file f[8] = { 0 };
				struct hgt__convert_src s = { .files = f, .nr_files = n };
				uint8_t *bytes;
				size_t len = 0;

				snprintf(out, sizeof(out), "%s/d%d-c%zu-t%s.dat", dir, damage, k,
					 threads[t]);
				convert_cpu_files(src, &s, &co, dir, threads[t], out,
						  damage ? big : -1, bad_page);
				bytes = slurp_file(out, &len);
				assert_non_null(bytes);
				if (!first && !damage) {
					struct hgt_input *in = hgt_input_open(out, NULL);

					assert_non_null(in);
					print_message(
						"# compression %d: %zu bytes, %llu events as the source's\n",
						comp[k], len,
						(unsigned long long)same_events(src, in));
					hgt_input_close(in);
				}
				if (!first) {
					first = bytes;
					first_len = len;
					continue;
				}
				if (len != first_len || memcmp(bytes, first, len))
					fail_msg(
						"damage %d, compression %d: HGT_THREADS=%s wrote %zu bytes, not the %zu of HGT_THREADS=1 (or other bytes)",
						damage, comp[k], threads[t], len, first_len);
				free(bytes);
			}
			print_message(
				"# damage %d, compression %d: 3 thread counts, %zu bytes each\n",
				damage, comp[k], first_len);
			free(first);
		}
	}
	end_many_batches(src, dir, saved);
}

/* The copied callback's log: the CPU of each batch copied, in order. */
struct copy_log {
	int cpu[8192];
	int n;
};

static int log_copied(void *ctx, const struct hgt__page_file *f, uint64_t upto)
{
	struct copy_log *l = ctx;

	(void)upto;
	assert_true(l->n < (int)(sizeof(l->cpu) / sizeof(l->cpu[0])));
	l->cpu[l->n++] = f->cpu;
	return 0;
}

/* Whether every CPU's first batch came before every CPU's last (else CPU after CPU). */
static bool interleaved(const struct copy_log *l, int nr_cpus)
{
	int last_first = -1, first_last = l->n;

	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		int first = -1, last = -1;

		for (int i = 0; i < l->n; i++)
			if (l->cpu[i] == cpu) {
				first = first < 0 ? i : first;
				last = i;
			}
		assert_true(first >= 0);
		last_first = first > last_first ? first : last_first;
		first_last = last < first_last ? last : first_last;
	}
	return last_first < first_last;
}

/*
 * A recording's CPU files copied together (@together: a flight save, whose pages go as they
 * are copied): in zstd and zlib, with 1 and 3 threads, the copy goes from CPU to CPU, every
 * CPU's first pages before any CPU's last (the copied callback's order), and the file
 * holds every event of the source (same_events()), each CPU in a section of its own; with
 * a page of the largest CPU damaged, exactly the pages before it are kept, as in order.
 * Uncompressed, the CPUs are copied one after another, with the same events.
 */
static void test_recording_files_copied_together(void **state)
{
	static const enum hgt_compression comp[] = { HGT_COMPRESS_ZSTD, HGT_COMPRESS_ZLIB,
						     HGT_COMPRESS_NONE };
	static const char *const threads[] = { "1", "3" };
	char dir[] = "/tmp/hgt-test-together-XXXXXX", out[96];
	const char *old = getenv("HGT_THREADS");
	char *saved = old ? strdup(old) : NULL;
	const uint64_t bad_page = 4 * 160 + 37;
	struct copy_log *log = malloc(sizeof(*log));
	int big = 0, n;
	struct hgt_input *src;

	(void)state;
	assert_non_null(log);
	src = many_batches(dir, &big);
	n = hgt_input_nr_cpus(src);
	assert_true(n >= 2 && n <= 8);
	for (int damage = 0; damage < 2; damage++) {
		cpu_files(src, dir, damage ? big : -1, bad_page);
		for (size_t k = 0; k < sizeof(comp) / sizeof(comp[0]); k++)
			for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
				HGT_OPTS(hgt_convert_opts, co, .version = 7,
					 .compression = comp[k]);
				struct hgt__page_file f[8] = { 0 };
				struct hgt__convert_src s = { .files = f,
							      .nr_files = n,
							      .copied = log_copied,
							      .copied_ctx = log,
							      .together = true };
				struct hgt_input *in;
				uint64_t events = 0;

				log->n = 0;
				snprintf(out, sizeof(out), "%s/t%d-c%zu-t%s.dat", dir, damage, k,
					 threads[t]);
				convert_cpu_files(src, &s, &co, dir, threads[t], out,
						  damage ? big : -1, bad_page);
				if (interleaved(log, n) != (comp[k] != HGT_COMPRESS_NONE))
					fail_msg(
						"compression %d, HGT_THREADS=%s: %d batches copied %s",
						comp[k], threads[t], log->n,
						comp[k] ? "CPU after CPU, not together"
							: "together, not CPU after CPU");
				in = hgt_input_open(out, NULL);
				assert_non_null(in);
				for (int cpu = 0; cpu < n; cpu++) /* one section each, in order */
					if (cpu)
						assert_true(
							hgt_input_buffer(in, 0)->cpus[cpu].offset >
							hgt_input_buffer(in, 0)
								->cpus[cpu - 1]
								.offset);
				if (!damage)
					events = same_events(src, in);
				hgt_input_close(in);
				print_message(
					"# damage %d, compression %d, HGT_THREADS=%s: %d batches, %s; %llu events as the source's\n",
					damage, comp[k], threads[t], log->n,
					interleaved(log, n) ? "together" : "CPU after CPU",
					(unsigned long long)events);
				assert_true(damage || events > 10000);
			}
	}
	free(log);
	end_many_batches(src, dir, saved);
}

/*
 * A file whose pages lie elsewhere (hgt__input_cpu_elsewhere(): a flight recorder's search
 * reads a recording's CPU files where they are): local-v7none.dat's head written with no
 * page at all (as a search's file is: every range empty), each CPU then pointed at its
 * pages in the original file. Every event must be the original's (same_events()); a page
 * damaged in a copy of the original is reported with the copy's name and the page's offset
 * in it; a compressed file and pages not on page boundaries are refused.
 */
static void test_pages_read_elsewhere(void **state)
{
	const char *orig = test_data("local-v7none.dat");
	char head[] = "/tmp/hgt-test-elsewhere-XXXXXX";
	HGT_OPTS(hgt_convert_opts, co, .version = 7, .compression = HGT_COMPRESS_NONE);
	struct hgt__page_file f[2] = {
		{ .cpu = 0, .name = "cpu0", .from = UINT64_MAX, .to = UINT64_MAX },
		{ .cpu = 1, .name = "cpu1", .from = UINT64_MAX, .to = UINT64_MAX }
	};
	struct hgt__convert_src src = { .files = f, .nr_files = 2 };
	struct hgt_input *o = hgt_input_open(orig, NULL), *h, *z;
	const struct hgt_buffer *b;
	int fd = open(orig, O_RDONLY), hfd = mkstemp(head), bad_fd;
	uint64_t n, commit;
	char *bad;

	(void)state;
	assert_non_null(o);
	assert_true(fd >= 0 && hfd >= 0);
	close(hfd);
	f[0].fd = f[1].fd = fd;
	assert_int_equal(hgt__convert(o, head, &co, &src), 0);
	h = hgt_input_open(head, NULL);
	assert_non_null(h);
	b = hgt_input_buffer(o, 0);
	assert_int_equal(b->nr_cpus, 2);
	for (int cpu = 0; cpu < 2; cpu++) {
		struct hgt_cursor *c = hgt_cursor_open(h, 0, cpu);
		struct tep_record r;

		/* the head alone holds no event */
		assert_true(!c || hgt_cursor_next(c, &r) == 0);
		hgt_cursor_close(c);
		assert_int_equal(hgt__input_cpu_elsewhere(h, cpu, fd, orig, b->cpus[cpu].offset,
							  b->cpus[cpu].size),
				 0);
	}
	n = same_events(o, h);
	print_message("# %llu events read elsewhere, as in the file\n", (unsigned long long)n);
	assert_true(n == 2145); /* trace-cmd report's lines of events for the file */
	assert_int_equal(hgt__input_cpu_elsewhere(h, 0, fd, orig, b->cpus[0].offset + 1, 4096),
			 -EINVAL);
	assert_int_equal(hgt__input_cpu_elsewhere(h, 0, fd, orig, b->cpus[0].offset, 100), -EINVAL);
	hgt_input_close(h);

	/* CPU 1's third page damaged in a copy: its commit larger than the page */
	bad = damaged_copy(orig, (size_t)(b->cpus[1].offset + b->cpus[1].size), -1, 0);
	bad_fd = open(bad, O_RDWR);
	commit = 8192;
	assert_int_equal(pwrite(bad_fd, &commit, 8, (off_t)(b->cpus[1].offset + 2 * 4096 + 8)), 8);
	h = hgt_input_open(head, NULL);
	assert_non_null(h);
	assert_int_equal(
		hgt__input_cpu_elsewhere(h, 1, bad_fd, bad, b->cpus[1].offset, b->cpus[1].size), 0);
	{
		struct hgt_cursor *c = hgt_cursor_open(h, 0, 1);
		struct tep_record r;
		char want[256];
		int ret;

		assert_non_null(c);
		while ((ret = hgt_cursor_next(c, &r)) > 0)
			;
		assert_int_equal(ret, -EBADMSG);
		snprintf(want, sizeof(want), "%s: offset 0x%llx: cpu 1: page commit size", bad,
			 (unsigned long long)(b->cpus[1].offset + 2 * 4096));
		if (strncmp(hgt_last_error(), want, strlen(want)))
			fail_msg("error \"%s\", not \"%s...\"", hgt_last_error(), want);
		hgt_cursor_close(c);
	}
	hgt_input_close(h);
	z = hgt_input_open(test_data("tsc.dat"), NULL); /* zstd */
	assert_non_null(z);
	assert_int_equal(hgt__input_cpu_elsewhere(z, 0, fd, orig, 0, 4096), -EINVAL);
	hgt_input_close(z);
	close(bad_fd);
	unlink(bad);
	free(bad);
	unlink(head);
	close(fd);
	hgt_input_close(o);
}

/*
 * A recording's head.dat is compressed as its file will be, and the stop copies its
 * compressed metadata as it is (hgt__convert_src.keep_packed): the file must be the one
 * that compressing the items again makes, byte for byte, and where the compressions differ
 * the items are compressed again.
 */
static void test_packed_metadata_is_copied_as_compressed(void **state)
{
	static const enum hgt_compression comp[] = { HGT_COMPRESS_ZSTD, HGT_COMPRESS_ZLIB,
						     HGT_COMPRESS_NONE };
	char dir[] = "/tmp/hgt-test-packed-XXXXXX", path[96], cmd[96];
	int checked = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (size_t h = 0; h < sizeof(comp) / sizeof(comp[0]); h++) {
		char host[64], guest[64];
		HGT_OPTS(hgt_sim_opts, so, .seed = 3, .nr_vcpus = 1, .nr_host_cpus = 2,
			 .duration_us = 200000, .compression = comp[h], .host_path = host,
			 .guest_path = guest);
		struct hgt_sim_result r;
		struct hgt_input *in;

		snprintf(host, sizeof(host), "%s/host%zu.dat", dir, h);
		snprintf(guest, sizeof(guest), "%s/guest%zu.dat", dir, h);
		assert_int_equal(hgt_simulate(&so, &r), 0);
		in = hgt_input_open(host, NULL);
		assert_non_null(in);
		for (size_t o = 0; o + 1 < sizeof(comp) / sizeof(comp[0]); o++) {
			HGT_OPTS(hgt_convert_opts, co, .version = 7, .compression = comp[o]);
			struct hgt__convert_src src = { .keep_packed = true };
			uint8_t *want, *got;
			size_t want_len = 0, got_len = 0;

			snprintf(path, sizeof(path), "%s/want.dat", dir);
			assert_int_equal(hgt_tracedat_convert(in, path, &co), 0);
			want = slurp_file(path, &want_len);
			snprintf(path, sizeof(path), "%s/got.dat", dir);
			assert_int_equal(hgt__convert(in, path, &co, &src), 0);
			got = slurp_file(path, &got_len);
			assert_non_null(want);
			assert_non_null(got);
			if (got_len != want_len || memcmp(got, want, got_len))
				fail_msg(
					"head compression %d, file compression %d: %zu bytes with the items copied, %zu compressed again (or other bytes)",
					comp[h], comp[o], got_len, want_len);
			checked++;
			free(want);
			free(got);
		}
		hgt_input_close(in);
	}
	print_message("# %d pairs of head and file compression: the same bytes\n", checked);
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
		cmocka_unit_test(test_compressed_by_workers_is_identical),
		cmocka_unit_test(test_recording_files_read_in_place),
		cmocka_unit_test(test_recording_files_copied_together),
		cmocka_unit_test(test_pages_read_elsewhere),
		cmocka_unit_test(test_packed_metadata_is_copied_as_compressed),
		cmocka_unit_test(test_zpipe_gives_back_each_chunk_in_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
