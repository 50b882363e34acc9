// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A CPU reader's splice (lib/record/pages.c), with a pipe standing in for trace_pipe_raw:
 * into a socket that takes part of what is ready the rest stays counted and goes first
 * next time; into a pipe (a FIFO's kind) the same, and a full pipe is told from an empty
 * source.
 * Every byte is checked against the counter pattern the test wrote. And the partial
 * page's clock, on a reader's day worked out by hand. And a partial page cut out of a
 * sub-buffer (lib/record/ringmap.c): its events at the times the generator gave them.
 */
#include "test-helpers.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <traceevent/kbuffer.h>

#include "record/pages.h"

#define TOTAL (256 * 1024) /* bytes through, in 32-bit counters */

/* A source pipe holding TOTAL bytes of counters 0, 1, 2, ...; its writer kept open when
 * @keep (an empty source then says EAGAIN, as trace_pipe_raw does), else closed. */
static void fill_source(int p[2], bool keep)
{
	static uint32_t v[TOTAL / 4];

	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	assert_true(fcntl(p[1], F_SETPIPE_SZ, TOTAL) >= TOTAL);
	for (uint32_t i = 0; i < TOTAL / 4; i++)
		v[i] = i;
	assert_int_equal(write(p[1], v, TOTAL), TOTAL);
	if (!keep) {
		close(p[1]);
		p[1] = -1;
	}
}

/* What is in @fd's pipe still. */
static int unread(int fd)
{
	int n = -1;

	assert_int_equal(ioctl(fd, FIONREAD, &n), 0);
	return n;
}

/* Read what @fd has now (non-blocking) onto @got at *@n. */
static void take(int fd, uint8_t *got, size_t *n)
{
	ssize_t r;

	while ((r = read(fd, got + *n, TOTAL - *n)) > 0)
		*n += (size_t)r;
}

/* Every byte came, in order: counter i at offset 4 i. */
static void assert_counters(const uint8_t *got, size_t n)
{
	assert_int_equal(n, TOTAL);
	for (uint32_t i = 0; i < TOTAL / 4; i++) {
		uint32_t v;

		memcpy(&v, got + 4 * i, 4);
		if (v != i)
			fail_msg("offset %u: counter %u, expected %u", 4 * i, v, i);
	}
}

/* Into a socket whose reader is slow: a move it takes only part of leaves the rest held,
 * counted (delivered + held = taken from the source), and the next move sends it first. */
static void test_socket_partial_kept(void **state)
{
	static uint8_t got[TOTAL];
	struct hgt__pages m;
	int src[2], sv[2], small = 4096, partial = 0, rounds = 0;
	size_t delivered = 0, n = 0;

	(void)state;
	fill_source(src, false);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	/* a socket's splice waits for room unless the socket itself is non-blocking
	 * (SPLICE_F_NONBLOCK is the pipe's): as a caller's may be */
	assert_int_equal(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(hgt__pages_init(&m, src[0], sv[0]), 0);
	for (;;) {
		ssize_t w = hgt__pages_move(&m);

		if (w > 0) {
			delivered += (size_t)w;
		} else if (w < 0) {
			assert_int_equal(errno, EAGAIN); /* the socket has no room */
			if (hgt__pages_held(&m))
				partial++;
			/* the books: nothing taken from the source is unaccounted */
			assert_int_equal(delivered + hgt__pages_held(&m) + (size_t)unread(src[0]),
					 TOTAL);
			take(sv[1], got, &n);
		} else {
			break; /* the source is empty, nothing held */
		}
		assert_true(++rounds < 100000);
	}
	take(sv[1], got, &n);
	assert_int_equal(hgt__pages_held(&m), 0);
	assert_int_equal(delivered, TOTAL);
	assert_true(partial > 0); /* the case: the socket took part of what was ready */
	assert_counters(got, n);
	hgt__pages_free(&m);
	close(src[0]);
	close(sv[0]);
	close(sv[1]);
}

/* Into a pipe (a FIFO's kind): through our own pipe as into a socket. A full pipe is -1
 * EAGAIN with what it did not take held and counted (delivered + held + unread = all the
 * source had); an empty source with nothing held is 0, not the pipe's EAGAIN. */
static void test_pipe_full_or_empty(void **state)
{
	static uint8_t got[TOTAL];
	struct hgt__pages m;
	int src[2], dst[2], fulls = 0, rounds = 0;
	size_t delivered = 0, n = 0;
	ssize_t w;

	(void)state;
	fill_source(src, true);
	assert_int_equal(pipe2(dst, O_CLOEXEC | O_NONBLOCK), 0); /* 64 KB: a quarter */
	assert_int_equal(hgt__pages_init(&m, src[0], dst[1]), 0);
	while ((w = hgt__pages_move(&m)) != 0) {
		if (w > 0) {
			delivered += (size_t)w;
		} else {
			assert_int_equal(errno, EAGAIN);
			/* the pipe's EAGAIN, not the source's: its 16 slots hold a page each */
			assert_int_equal(unread(dst[0]), 65536);
			assert_int_equal(delivered + hgt__pages_held(&m) + (size_t)unread(src[0]),
					 TOTAL);
			fulls++;
			take(dst[0], got, &n);
		}
		assert_true(++rounds < 100000);
	}
	assert_int_equal(unread(src[0]), 0);
	assert_int_equal(hgt__pages_held(&m), 0);
	take(dst[0], got, &n);
	assert_int_equal(delivered, TOTAL);
	assert_true(fulls > 0);
	assert_counters(got, n);
	/* empty source (its EAGAIN), nothing held, room in the pipe: 0 */
	assert_int_equal(hgt__pages_move(&m), 0);
	hgt__pages_free(&m);
	close(src[0]);
	close(src[1]);
	close(dst[0]);
	close(dst[1]);
}

/*
 * The partial page's clock, --flush-ms 200 and a look every 10 ms: due a quarter early
 * (50 ms, more than two looks), once what is unstored can be 150 ms old. A whole page
 * stored at 105 after the reader found none at 100: what is left can be from 100 (the
 * page filled after that look), so due at 250, not 255. A partial read at 250 takes
 * everything before it: due next at 400. A look that finds no page and a whole page after
 * a partial read never move that bound back. With --flush-ms 20 and a look every 8 ms, two
 * looks (16 ms) are more than a quarter (5): due at 4 ms of age.
 */
static void test_partial_clock(void **state)
{
	struct hgt__partial_clock pc;

	(void)state;
	hgt__partial_start(&pc, 0);
	assert_false(hgt__partial_due(&pc, 149, 200, 10));
	assert_true(hgt__partial_due(&pc, 150, 200, 10));
	hgt__partial_idle(&pc, 100);
	hgt__partial_whole(&pc);
	assert_int_equal(pc.since_ms, 100);
	assert_false(hgt__partial_due(&pc, 249, 200, 10));
	assert_true(hgt__partial_due(&pc, 250, 200, 10));
	hgt__partial_flushed(&pc, 250);
	assert_false(hgt__partial_due(&pc, 399, 200, 10));
	assert_true(hgt__partial_due(&pc, 400, 200, 10));
	/* found none at 260, a whole page at 270: left since 260; another at 280 with no
	 * look between: still 260 */
	hgt__partial_idle(&pc, 260);
	hgt__partial_whole(&pc);
	assert_int_equal(pc.since_ms, 260);
	hgt__partial_whole(&pc);
	assert_int_equal(pc.since_ms, 260);
	assert_false(hgt__partial_due(&pc, 409, 200, 10));
	assert_true(hgt__partial_due(&pc, 410, 200, 10));
	hgt__partial_flushed(&pc, 500);
	hgt__partial_whole(&pc);
	assert_int_equal(pc.since_ms, 500);
	assert_false(hgt__partial_due(&pc, 503, 20, 8));
	assert_true(hgt__partial_due(&pc, 504, 20, 8));
}

/*
 * A sub-buffer as the kernel writes one (kernel/trace/ring_buffer.c's event header: a
 * 5-bit type_len, a 27-bit time delta): events of 4 to 16 bytes whose first word is
 * their number, a time extend (type 30: the delta's bits above 27 in the next word)
 * before each event more than 2^27 ns after the one before, an absolute time stamp
 * (type 31) now and then. The generator keeps each event's offset and time: the
 * expected values, worked out here, not by the code under test.
 */
#define SB 4096
#define SB_HDR 16
#define NEV 400

struct gen_ev {
	uint32_t off; /* of its first word (the extend's or the stamp's, if it has one) */
	uint32_t end;
	uint64_t ts;
	uint32_t nr;
};

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static int gen_subbuf(uint8_t *sb, struct gen_ev *ev, unsigned int seed)
{
	uint64_t ts = 1000000000ull + seed, t0 = ts;
	uint32_t off = 0;
	int n = 0;

	memset(sb, 0xa5, SB); /* stale bytes past the commit, as a reused page has */
	memcpy(sb, &t0, 8);
	srand(seed);
	while (n < NEV) {
		uint32_t words = 1 + (uint32_t)rand() % 4, kind = (uint32_t)rand() % 8;
		uint64_t delta = kind == 0 ? (1ull << 27) + (uint64_t)rand() * 97
					   : (uint64_t)rand() % (1u << 27);
		uint32_t need = 4 + 4 * words + (kind <= 1 ? 8 : 0);

		if (off + need > SB - SB_HDR)
			break;
		ev[n].off = off;
		ts += delta;
		if (kind == 0) { /* time extend */
			put32(sb + SB_HDR + off, 30u | (uint32_t)(delta & ((1u << 27) - 1)) << 5);
			put32(sb + SB_HDR + off + 4, (uint32_t)(delta >> 27));
			off += 8;
			delta = 0;
		} else if (kind == 1) { /* absolute time stamp: the event's own time */
			put32(sb + SB_HDR + off, 31u | (uint32_t)(ts & ((1u << 27) - 1)) << 5);
			put32(sb + SB_HDR + off + 4, (uint32_t)(ts >> 27));
			off += 8;
			delta = 0;
		}
		put32(sb + SB_HDR + off, words | (uint32_t)delta << 5);
		put32(sb + SB_HDR + off + 4, (uint32_t)n);
		memset(sb + SB_HDR + off + 8, 0, 4 * (words - 1));
		off += 4 + 4 * words;
		ev[n].end = off;
		ev[n].ts = ts;
		ev[n].nr = (uint32_t)n;
		n++;
	}
	{
		uint64_t c = off;

		memcpy(sb + 8, &c, 8);
	}
	return n;
}

/* Every event of @page as kbuffer reads it: checked against @ev[@first..@last). */
static int check_events(struct kbuffer *kb, uint8_t *page, const struct gen_ev *ev, int first,
			int last)
{
	unsigned long long ts;
	int i = first;

	assert_int_equal(kbuffer_load_subbuffer(kb, page), 0);
	for (uint32_t *d = kbuffer_read_event(kb, &ts); d; d = kbuffer_next_event(kb, &ts), i++) {
		assert_true(i < last);
		assert_int_equal(*d, ev[i].nr);
		assert_int_equal(ts, ev[i].ts);
	}
	assert_int_equal(i, last);
	return last - first;
}

/*
 * Cut at every event's end, to a later event's end or to the commit: the cut-out page
 * holds exactly the events in between, at the generator's times; zeros after its data.
 * Checked: 5 sub-buffers, every cut (about 160 each), every event of each cut page.
 */
static void test_subbuf_rest(void **state)
{
	static uint8_t sb[SB], out[SB];
	static struct gen_ev ev[NEV];
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	long events = 0, cuts = 0;

	(void)state;
	assert_non_null(kb);
	for (unsigned int seed = 1; seed <= 5; seed++) {
		int n = gen_subbuf(sb, ev, seed);

		assert_true(n > 100);
		check_events(kb, sb, ev, 0, n); /* the generator's page reads as it meant */
		for (int a = 0; a < n; a++) {
			int b = a + 1 + (int)((unsigned int)rand() % (unsigned int)(n - a));
			uint32_t from = a ? ev[a - 1].end : 0;

			hgt__subbuf_rest(kb, sb, SB, from, ev[b - 1].end, out);
			for (uint32_t k = SB_HDR + ev[b - 1].end - from; k < SB; k++)
				assert_int_equal(out[k], 0);
			events += check_events(kb, out, ev, a, b);
			hgt__subbuf_rest(kb, sb, SB, from, ev[n - 1].end, out);
			events += check_events(kb, out, ev, a, n);
			cuts += 2;
		}
	}
	kbuffer_free(kb);
	printf("# %ld cut pages, %ld events at the generator's times\n", cuts, events);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_socket_partial_kept),
		cmocka_unit_test(test_pipe_full_or_empty),
		cmocka_unit_test(test_partial_clock),
		cmocka_unit_test(test_subbuf_rest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
