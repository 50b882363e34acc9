// SPDX-License-Identifier: GPL-2.0-or-later
/* The library's plumbing (lib/common): growing arrays, bounded writes, the writer thread. */
#include "test-helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common-local.h"
#include "common/thread.h"

/* Capacities worked out by hand: nothing until needed, then @first, then doubled. */
static void test_grow_doubles_from_first(void **state)
{
	int32_t *a = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(hgt__grow(&a, &cap, 0, sizeof(*a), 4), 0);
	assert_null(a);
	assert_int_equal(cap, 0);
	assert_int_equal(hgt__grow(&a, &cap, 1, sizeof(*a), 4), 0);
	assert_int_equal(cap, 4);
	for (int i = 0; i < 4; i++)
		a[i] = 100 + i;
	assert_int_equal(hgt__grow(&a, &cap, 4, sizeof(*a), 4), 0);
	assert_int_equal(cap, 4); /* room for 4 already */
	assert_int_equal(hgt__grow(&a, &cap, 5, sizeof(*a), 4), 0);
	assert_int_equal(cap, 8);
	assert_int_equal(hgt__grow(&a, &cap, 33, sizeof(*a), 4), 0);
	assert_int_equal(cap, 64); /* 8 -> 16 -> 32 -> 64 */
	for (int i = 0; i < 4; i++)
		assert_int_equal(a[i], 100 + i); /* kept through each move */
	free(a);
}

/* A size that cannot be allocated: -ENOMEM, the array and its capacity as they were. */
static void test_grow_refuses_overflow(void **state)
{
	char *a = malloc(16);
	size_t cap = 16;

	(void)state;
	assert_non_null(a);
	assert_int_equal(hgt__grow(&a, &cap, SIZE_MAX / 2, 1024, 16), -ENOMEM);
	assert_int_equal(cap, 16);
	assert_non_null(a);
	free(a);
}

/* A pipe nobody reads: the write gives up after its stall limit, or at once on stop. */
static void test_write_within_gives_up(void **state)
{
	static char buf[1 << 20];
	int p[2], sz;
	volatile int stop = 0;

	(void)state;
	assert_int_equal(pipe(p), 0);
	sz = fcntl(p[1], F_GETPIPE_SZ);
	assert_true(sz > 0 && (size_t)sz < sizeof(buf));
	assert_int_equal(hgt__write_within(p[1], buf, sizeof(buf), 300, &stop), -ETIMEDOUT);
	stop = 1;
	assert_int_equal(hgt__write_within(p[1], buf, 1, 0, &stop), -ECANCELED);
	/* with room, a stop does not cut a write short */
	close(p[0]);
	close(p[1]);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(hgt__write_within(p[1], buf, 100, 0, &stop), 0);
	assert_int_equal(read(p[0], buf, sizeof(buf)), 100);
	close(p[0]);
	close(p[1]);
}

struct collect {
	int fd;
	uint8_t *got;
	size_t len, cap;
};

static void *collect(void *arg) /* a slow reader: 4 KB a read, so the writer falls behind */
{
	struct collect *c = arg;
	ssize_t n;

	while (c->len < c->cap && (n = read(c->fd, c->got + c->len, 4096)) > 0)
		c->len += (size_t)n;
	return NULL;
}

static uint8_t byte_of(size_t i, size_t k)
{
	return (uint8_t)(i * 31 + k * 7 + (k >> 8));
}

/* 300 buffers of 1 to 60,000 bytes, each from its index, through the writer thread into a
 * pipe read 4 KB at a time: the reader gets exactly their bytes in order (checked against
 * the same bytes made again here), and the oom flag of a buffer put stays with the maker. */
static void test_bgwrite_in_order(void **state)
{
	enum { N = 300 };
	size_t total = 0, want_len = 0;
	struct collect c = { 0 };
	struct hgt__blob b = { 0 };
	struct hgt__bgwrite *w;
	pthread_t t;
	int p[2];
	FILE *f;

	(void)state;
	for (size_t i = 0; i < N; i++)
		total += 1 + (i * 7919) % 60000;
	assert_int_equal(pipe(p), 0);
	c.fd = p[0];
	c.cap = total;
	c.got = malloc(total);
	assert_non_null(c.got);
	assert_int_equal(pthread_create(&t, NULL, collect, &c), 0);
	f = fdopen(p[1], "w");
	assert_non_null(f);
	w = hgt__bgwrite_start(f);
	assert_non_null(w);
	for (size_t i = 0; i < N; i++) {
		size_t n = 1 + (i * 7919) % 60000;

		for (size_t k = 0; k < n; k++) {
			uint8_t v = byte_of(i, k);

			assert_int_equal(hgt__blob_add(&b, &v, 1), 0);
		}
		b.oom = i == 100;
		hgt__bgwrite_put(w, &b);
		assert_int_equal(b.len, 0);
		assert_int_equal(b.oom, i == 100);
		want_len += n;
	}
	hgt__bgwrite_end(w);
	assert_int_equal(fclose(f), 0);
	pthread_join(t, NULL);
	close(p[0]);
	assert_int_equal(c.len, want_len);
	for (size_t i = 0, at = 0; i < N; i++) {
		size_t n = 1 + (i * 7919) % 60000;

		for (size_t k = 0; k < n; k++, at++)
			if (c.got[at] != byte_of(i, k))
				fail_msg("byte %zu (buffer %zu, byte %zu): 0x%02x, not 0x%02x", at,
					 i, k, c.got[at], byte_of(i, k));
	}
	print_message("# bgwrite: %zu bytes of %d buffers, in order\n", want_len, N);
	free(c.got);
	free(b.p);
}

static volatile int spin_stop;

static void *spin(void *arg)
{
	(void)arg;
	while (!spin_stop)
		;
	return NULL;
}

/* The free CPUs: other processes' running tasks count, the caller's own threads do not (an
 * export's writer thread, busy when its workers were counted, left it with none). By hand:
 * 2 CPUs, the caller alone running: 2; 3 running, all the caller's: 2; 3 running, 1 of
 * them the caller's: 1 (never below 1); /proc/stat not read (-1): all. And the caller's
 * running threads as /proc/self/task says: 2 more with 2 threads spinning. */
static void test_cpus_free_counts_others_only(void **state)
{
	pthread_t t[2];
	long base, with;

	(void)state;
	assert_int_equal(hgt__cpus_free_of(2, 1, 1), 2);
	assert_int_equal(hgt__cpus_free_of(2, 3, 3), 2);
	assert_int_equal(hgt__cpus_free_of(2, 2, 1), 1);
	assert_int_equal(hgt__cpus_free_of(2, 3, 1), 1);
	assert_int_equal(hgt__cpus_free_of(8, 4, 2), 6);
	assert_int_equal(hgt__cpus_free_of(4, -1, 1), 4);
	base = hgt__own_running();
	assert_true(base >= 1);
	spin_stop = 0;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, spin, NULL), 0);
	with = hgt__own_running();
	spin_stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	print_message("# own threads running: %ld, %ld with 2 spinning\n", base, with);
	assert_int_equal(with, base + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_doubles_from_first),
		cmocka_unit_test(test_grow_refuses_overflow),
		cmocka_unit_test(test_write_within_gives_up),
		cmocka_unit_test(test_bgwrite_in_order),
		cmocka_unit_test(test_cpus_free_counts_others_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
