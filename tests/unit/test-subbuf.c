// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The cursor's own sub-buffer walk (lib/tracedat/subbuf.h) must give what libtraceevent's
 * kbuffer gives, event for event: each data event's payload offset, timestamp, size and
 * missed-event count, and where the page ends. Compared on every page of every recording
 * in tests/data, and on random pages of both byte orders and both kernel long sizes, built
 * of every kind of event header (long events with lengths below 4 and huge, paddings of
 * odd and negative lengths, time extends, absolute stamps with the running time's top bits
 * set) mixed with random words. A page whose padding leads the walk back, where kbuffer
 * would loop for ever, must stop with -1 (kbuffer is not run on those).
 */
#include <dirent.h>
#include <stdbool.h>
#include <string.h>

#include "test-helpers.h"

#include <traceevent/kbuffer.h>

#include <hgtrace/tracedat.h>

#include "../../lib/tracedat/subbuf.h"
#include "../../lib/tracedat/tracedat-local.h"

#define SLACK 64

struct ev {
	uint64_t ts;
	uint32_t off; /* payload offset in the page */
	int size, missed;
};

struct tally {
	unsigned long pages, events, stuck, files;
};

/* Both walks of @page; 1 when they agree, 0 (said why) when not, -1 when hgtrace's stops
 * where kbuffer would loop. Each walk ends at the first event of a negative size (a long
 * event's length word far past 4 billion takes the walk back, and the cursor stops there
 * with an error). */
static int compare_page(const uint8_t *page, bool big, bool long8, struct tally *t,
			const char *what)
{
	static struct ev mine[4096];
	struct hgt__subbuf sb = { .big = big, .long8 = long8 };
	uint32_t hdr = long8 ? 16 : 12;
	struct kbuffer *kb;
	unsigned long long ts;
	size_t n = 0, i = 0;
	int r = hgt__subbuf_load(&sb, page);
	void *d;

	for (; r > 0; r = hgt__subbuf_next(&sb)) {
		assert_true(n < sizeof(mine) / sizeof(mine[0]));
		mine[n++] = (struct ev){ sb.ts, hdr + sb.index, hgt__subbuf_size(&sb),
					 hgt__subbuf_missed(&sb) };
		if (mine[n - 1].size < 0)
			break;
	}
	if (r < 0) {
		t->stuck++;
		return -1;
	}
	kb = kbuffer_alloc(long8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
			   big ? KBUFFER_ENDIAN_BIG : KBUFFER_ENDIAN_LITTLE);
	assert_non_null(kb);
	assert_int_equal(kbuffer_load_subbuffer(kb, (void *)page), 0);
	for (d = kbuffer_read_event(kb, &ts); d; d = kbuffer_next_event(kb, &ts)) {
		struct ev k = { ts, (uint32_t)((uint8_t *)d - page), kbuffer_event_size(kb),
				kbuffer_missed_events(kb) };

		if (i >= n || k.ts != mine[i].ts || k.off != mine[i].off ||
		    k.size != mine[i].size || k.missed != mine[i].missed) {
			print_message(
				"# %s: event %zu: kbuffer at %u, %d bytes, missed %d, ts %llu; hgtrace %s at %u, %d bytes, missed %d, ts %llu\n",
				what, i, k.off, k.size, k.missed, (unsigned long long)k.ts,
				i >= n ? "ended" : "", i < n ? mine[i].off : 0,
				i < n ? mine[i].size : 0, i < n ? mine[i].missed : 0,
				i < n ? (unsigned long long)mine[i].ts : 0ull);
			kbuffer_free(kb);
			return 0;
		}
		if (k.size < 0 || ++i >= n)
			break;
	}
	if (i < n && mine[i].size < 0)
		i++;
	kbuffer_free(kb);
	if (i != n) {
		print_message("# %s: kbuffer ended after %zu events, hgtrace after %zu\n", what, i,
			      n);
		return 0;
	}
	t->pages++;
	t->events += n;
	return 1;
}

/* Every page of every CPU of every buffer of @path. */
static void file_pages(const char *path, struct tally *t)
{
	struct hgt_input *in = hgt_input_open(path, NULL);
	char what[600];

	if (!in || !hgt_input_tep(in)) /* the damaged files that do not open */
		goto out;
	t->files++;
	for (int b = 0; b < hgt_input_nr_buffers(in); b++) {
		const struct hgt_buffer *buf = hgt_input_buffer(in, b);
		uint32_t ps = buf->page_size;

		for (int cpu = 0; cpu < buf->nr_cpus; cpu++) {
			struct hgt_cursor *c = hgt_cursor_open(in, b, cpu);
			const uint8_t *pages;
			size_t len;
			uint8_t *copy = calloc(1, ps + SLACK);

			assert_non_null(copy);
			while (c && hgt__cursor_next_pages(c, &pages, &len) > 0) {
				for (size_t at = 0; at + ps <= len; at += ps) {
					memcpy(copy, pages + at, ps);
					snprintf(what, sizeof(what), "%s buffer %d cpu %d page %zu",
						 path, b, cpu, at / ps);
					assert_int_equal(
						compare_page(copy, hgt_input_big_endian(in),
							     hgt_input_kernel_long_size(in) == 8, t,
							     what),
						1);
				}
			}
			free(copy);
			hgt_cursor_close(c);
		}
	}
out:
	hgt_input_close(in);
}

static void dir_pages(const char *dir, struct tally *t)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[1024];

	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_type == DT_DIR)
			dir_pages(path, t);
		else if (l > 4 && !strcmp(e->d_name + l - 4, ".dat"))
			file_pages(path, t);
	}
	closedir(d);
}

static void test_recordings(void **state)
{
	struct tally t = { 0 };
	char dir[4096];

	(void)state;
	snprintf(dir, sizeof(dir), "%s", test_data(""));
	dir_pages(dir, &t);
	print_message("# %lu recordings, %lu pages, %lu events: the same as kbuffer's\n", t.files,
		      t.pages, t.events);
	assert_true(t.files >= 10);
	assert_true(t.events > 20000);
	assert_int_equal(t.stuck, 0);
}

/* xorshift64*: the same pages on every run */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static void put32(uint8_t *p, uint32_t v, bool big)
{
	if (big)
		v = __builtin_bswap32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v, bool big)
{
	if (big)
		v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
}

static uint32_t header(unsigned type_len, uint32_t delta, bool big)
{
	delta &= (1u << 27) - 1;
	return big ? (uint32_t)type_len << 27 | delta : delta << 5 | type_len;
}

/* A word for a long event's or a padding's length: mostly plausible, some not */
static uint32_t length_word(uint64_t *s)
{
	switch (rnd(s) % 64) {
	case 0:
	case 1:
		return (uint32_t)(rnd(s) % 4); /* below the word itself */
	case 2:
		return (uint32_t)rnd(s); /* anything */
	case 3:
		return (uint32_t) - (int32_t)(1 + rnd(s) % 3); /* -1..-3: on, not aligned */
	case 4:
		return (uint32_t) - (int32_t)(4 + 4 * (rnd(s) % 3)); /* a padding: back */
	default: /* the word and whole words after it, as the kernel writes */
		return (uint32_t)(4 + 4 * (rnd(s) % 75));
	}
}

/* A random page of @ps bytes (and zeroed slack) at @p. */
static void random_page(uint8_t *p, uint32_t ps, bool big, bool long8, uint64_t *s)
{
	uint32_t hdr = long8 ? 16 : 12, size = (uint32_t)(rnd(s) % (ps - hdr + 1)), at = 0;
	uint64_t ts = rnd(s), commit = size;

	memset(p, 0, ps + SLACK);
	if (rnd(s) % 2)
		ts &= ~(0xf8ull << 56);
	put64(p, ts, big);
	switch (rnd(s) % 4) {
	case 0:
		commit |= 1ull << 31;
		break;
	case 1:
		commit |= 3ull << 30;
		break;
	}
	commit |= (rnd(s) % 8) << 27; /* bits kbuffer ignores */
	if (long8)
		put64(p + 8, commit, big);
	else
		put32(p + 8, (uint32_t)commit, big);
	p += hdr;
	for (uint32_t i = 0; i + 8 <= ps - hdr; i += 8) /* payloads: random words */
		put64(p + i, rnd(s), big);
	while (at + 8 <= ps - hdr) {
		uint32_t delta = (uint32_t)rnd(s), kind = (uint32_t)(rnd(s) % 64), len;

		if (kind < 40) { /* a data event of 1..28 words */
			len = 1 + (uint32_t)(rnd(s) % 28);
			put32(p + at, header(len, delta, big), big);
			at += 4 + 4 * len;
		} else if (kind < 48) { /* a long event */
			put32(p + at, header(0, delta, big), big);
			len = length_word(s);
			put32(p + at + 4, len, big);
			at += 4 + (len < 300 ? len : 4);
		} else if (kind < 52) { /* a padding, its delta 0 or not */
			put32(p + at, header(29, rnd(s) % 2 ? delta : 0, big), big);
			len = length_word(s);
			put32(p + at + 4, len, big);
			at += 4 + (len < 300 ? len : 4);
		} else if (kind < 62) { /* a time extend or an absolute stamp (some of 0) */
			put32(p + at, header(kind < 57 ? 30 : 31, kind == 61 ? 0 : delta, big),
			      big);
			put32(p + at + 4, kind == 61 ? 0 : (uint32_t)rnd(s), big);
			at += 8;
		} else {
			put32(p + at, (uint32_t)rnd(s), big);
			at += 4;
		}
	}
	if (size + 8 <= ps - hdr && rnd(s) % 2) /* a stored count right after the events */
		put64(p + size, rnd(s) % 1000, big);
}

static void test_random_pages(void **state)
{
	uint32_t sizes[] = { 4096, 8192, 64 };
	uint8_t *page = malloc(8192 + SLACK);
	uint64_t seed = 0x6867747261636521ull;
	struct tally t = { 0 };
	char what[128];

	(void)state;
	assert_non_null(page);
	for (int i = 0; i < 48000; i++) {
		bool big = i & 1, long8 = i & 2;
		uint32_t ps = sizes[(i >> 2) % 3];

		random_page(page, ps, big, long8, &seed);
		snprintf(what, sizeof(what), "random page %d (%s, long %d, %u bytes)", i,
			 big ? "big-endian" : "little-endian", long8 ? 8 : 4, ps);
		assert_int_not_equal(compare_page(page, big, long8, &t, what), 0);
	}
	free(page);
	print_message(
		"# 48000 random pages: %lu walked, %lu events the same as kbuffer's; %lu stopped where kbuffer loops\n",
		t.pages, t.events, t.stuck);
	assert_true(t.events > 500000);
	assert_true(t.pages > 40000);
	assert_true(t.stuck > 0);
}

/* A padding of length -4 (back to itself) or -12 (back before itself): -1, at once and
 * after a data event. */
static void test_padding_back(void **state)
{
	uint8_t page[4096 + SLACK] = { 0 };
	struct hgt__subbuf sb = { .long8 = true };

	(void)state;
	put64(page + 8, 64, false);
	put32(page + 16, header(29, 0, false), false);
	put32(page + 20, (uint32_t)-4, false);
	assert_int_equal(hgt__subbuf_load(&sb, page), -1);
	assert_int_equal(sb.curr, 0);

	put32(page + 16, header(2, 5, false), false); /* 8 bytes of payload */
	put32(page + 28, header(29, 7, false), false);
	put32(page + 32, (uint32_t)-12, false);
	assert_int_equal(hgt__subbuf_load(&sb, page), 1);
	assert_int_equal(sb.index, 4);
	assert_int_equal(hgt__subbuf_size(&sb), 8);
	assert_int_equal(hgt__subbuf_next(&sb), -1);
	assert_int_equal(sb.curr, 12);
	assert_int_equal(sb.next, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recordings),
		cmocka_unit_test(test_random_pages),
		cmocka_unit_test(test_padding_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
