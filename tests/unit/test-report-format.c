// SPDX-License-Identifier: GPL-2.0-or-later
/* The time and latency columns must equal what libtraceevent prints for the same record. */
#include "test-helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include <hgtrace/report.h>

#include "common/common-local.h"
#include "private/report.h"

static const char fmt[] =
	"name: probe\nID: 7\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:int value;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"value=%d\", REC->value\n";

static struct tep_handle *tep;
static uint8_t data[12] = { 7, 0 };

static int setup(void **state)
{
	tep = tep_alloc();
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_long_size(tep, 8);
	return tep_parse_event(tep, fmt, sizeof(fmt) - 1, "test") ? -1 : 0;
}

static int teardown(void **state)
{
	tep_free(tep);
	return 0;
}

static void tep_says(char *out, const char *format, const char *what, uint64_t ts)
{
	struct tep_record rec = { .ts = ts, .data = data, .size = sizeof(data) };
	struct trace_seq s;

	trace_seq_init(&s);
	if (what)
		tep_print_event(tep, &s, &rec, format, what);
	else
		tep_print_event(tep, &s, &rec, format, TEP_PRINT_TIME);
	trace_seq_terminate(&s);
	strcpy(out, s.buffer);
	trace_seq_destroy(&s);
}

static void test_time_matches_libtraceevent(void **state)
{
	static const uint64_t base[] = { 0,
					 1,
					 499,
					 500,
					 999999,
					 1000000,
					 1000499,
					 1000500,
					 999999999,
					 1000000000,
					 78812703123ULL,
					 1359243470388ULL,
					 18446744073709551000ULL };
	char want[64], got[64];
	size_t i;
	int k;

	for (i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
		for (k = -3; k <= 3; k++) {
			uint64_t ts = base[i] + (uint64_t)k;

			tep_says(want, "%6.1000d", NULL, ts);
			hgt_report_format_time(got, ts, 6, 1000);
			assert_string_equal(got, want);
			tep_says(want, "%9.1d", NULL, ts);
			hgt_report_format_time(got, ts, 9, 1);
			assert_string_equal(got, want);
			tep_says(want, "%12d", NULL, ts);
			hgt_report_format_time(got, ts, 12, 0);
			assert_string_equal(got, want);
		}
	}
}

static void test_latency_matches_libtraceevent(void **state)
{
	char want[64], got[8];
	unsigned int flags, pc;

	for (flags = 0; flags < 0x20; flags++) {
		for (pc = 0; pc < 0x100; pc += 0x11) {
			data[2] = (uint8_t)flags;
			data[3] = (uint8_t)pc;
			tep_says(want, "%s", TEP_PRINT_LATENCY, 0);
			hgt_report_latency(got, flags, pc);
			assert_string_equal(got, want);
		}
	}
	data[2] = data[3] = 0;
}

/* Every byte but NUL as the JSON string of hgt__json_blob(): the escapes written out here
 * by the rule (RFC 8259; '<' too, for a page's script), one byte at a time and all 255 in
 * one string; a NUL ends the string, and @n bytes at most are read. */
static void test_json_escapes_every_byte(void **state)
{
	char all[256], want_all[256 * 6 + 3] = "\"", want[16];
	struct hgt__blob b = { 0 };

	(void)state;
	for (int c = 1; c < 256; c++) {
		if (c == '"' || c == '\\')
			snprintf(want, sizeof(want), "\"\\%c\"", c);
		else if (c < 0x20 || c >= 0x7f || c == '<')
			snprintf(want, sizeof(want), "\"\\u%04x\"", c);
		else
			snprintf(want, sizeof(want), "\"%c\"", c);
		all[c - 1] = (char)c;
		b.len = 0;
		hgt__json_blob(&b, &all[c - 1], 1);
		assert_false(b.oom);
		assert_int_equal(b.len, strlen(want));
		if (memcmp(b.p, want, b.len))
			fail_msg("byte 0x%02x: %.*s, not %s", c, (int)b.len, (char *)b.p, want);
		want[strlen(want) - 1] = 0;
		strcat(want_all, want + 1);
	}
	strcat(want_all, "\"");
	b.len = 0;
	hgt__json_blob(&b, all, 255);
	assert_int_equal(b.len, strlen(want_all));
	assert_memory_equal(b.p, want_all, b.len);
	b.len = 0;
	hgt__json_blob(&b, "ab\0cd", 5); /* NUL: the end */
	assert_int_equal(b.len, 4);
	assert_memory_equal(b.p, "\"ab\"", 4);
	b.len = 0;
	hgt__json_blob(&b, "abcd", 2); /* @n: the end */
	assert_memory_equal(b.p, "\"ab\"", 4);
	print_message("# json: the 255 bytes one by one and together, NUL and length ends\n");
	free(b.p);
}

/* The rule of test_json_escapes_every_byte, byte by byte, for the test below. */
static size_t json_by_rule(char *out, const char *p, size_t n)
{
	size_t o = 0;

	out[o++] = '"';
	for (size_t i = 0; i < n && p[i]; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '"' || c == '\\')
			o += (size_t)sprintf(out + o, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f || c == '<')
			o += (size_t)sprintf(out + o, "\\u%04x", c);
		else
			out[o++] = (char)c;
	}
	out[o++] = '"';
	return o;
}

/* hgt__json_blob() reads plain text 16 bytes at a time: a byte to escape (or a NUL) at
 * every place of plain strings of 1 to 50 bytes, read whole or cut short by @n, is escaped
 * where the rule says, nothing after a NUL is kept, nothing past @n is read into it. */
static void test_json_escapes_anywhere(void **state)
{
	static const unsigned char special[] = { '"', '\\', '<', 0x01, 0x1f, 0x7f, 0x80, 0xff, 0 };
	struct hgt__blob b = { 0 };
	char text[64], want[64 * 6 + 3];
	int checked = 0;

	(void)state;
	for (size_t len = 1; len <= 50; len++)
		for (size_t k = 0; k < len; k++)
			for (size_t s = 0; s < sizeof(special); s++)
				for (size_t n = k; n <= len; n += len - k ? len - k : 1) {
					size_t wl;

					for (size_t i = 0; i < len; i++)
						text[i] = (char)('a' + i % 26);
					text[k] = (char)special[s];
					b.len = 0;
					hgt__json_blob(&b, text, n);
					wl = json_by_rule(want, text, n);
					assert_false(b.oom);
					if (b.len != wl || memcmp(b.p, want, wl))
						fail_msg(
							"0x%02x at %zu of %zu bytes, %zu read: %.*s, not %.*s",
							special[s], k, len, n, (int)b.len,
							(char *)b.p, (int)wl, want);
					checked++;
				}
	print_message("# json: %d strings, a byte to escape at each place of each length\n",
		      checked);
	free(b.p);
}

/* @rec's line printed by @l alone into @out (a memstream over *@len, rewound first) */
static void line_to(struct hgt__line *l, const struct hgt__line_ctx *c, struct tep_record *rec,
		    FILE *out, size_t *len)
{
	unsigned long long last = 0;

	fflush(out);
	*len = 0;
	rewind(out);
	hgt__line_print(l, c, rec, &last, out);
	hgt__line_flush(l, out);
	fflush(out);
}

/* The comm and pid columns of a line as libtraceevent prints them ("%16s-%-5d"), for the
 * same pid in two handles, before and after its comm is registered in one (as the
 * sched_switch plugin does mid-report): the columns a printer remembers must follow. */
static void test_comm_pid_columns_follow_libtraceevent(void **state)
{
	static const struct {
		int h;		  /* the handle: 0 or 1 */
		int pid;	  /* the record's */
		const char *comm; /* registered in handle h before the record, or NULL */
	} steps[] = {
		{ 0, 4242, NULL },	  { 0, 4242, NULL }, { 1, 4242, NULL },
		{ 0, 4242, "late-comm" }, { 0, 4242, NULL }, { 1, 4242, NULL },
		{ 1, 4242, "other" },	  { 0, 4242, NULL }, { 1, 4242, NULL },
		{ 0, -7, NULL },	  { 0, 0, NULL },    { 1, 70000, "a-comm-of-16chr" },
		{ 1, 70000, NULL },
	};
	struct tep_handle *t[2] = { tep, tep_alloc() };
	struct hgt__line l;
	char *buf = NULL, *line;
	size_t len = 0, i;
	FILE *out = open_memstream(&buf, &len);
	struct trace_seq s;
	int checked = 0;

	assert_non_null(out);
	tep_set_file_bigendian(t[1], TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(t[1], TEP_LITTLE_ENDIAN);
	tep_set_long_size(t[1], 8);
	assert_int_equal(tep_parse_event(t[1], fmt, sizeof(fmt) - 1, "test"), 0);
	assert_int_equal(hgt__line_init(&l), 0);
	trace_seq_init(&s);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		uint8_t d[12] = { 7, 0 };
		struct tep_record rec = { .ts = 1000 + i, .data = d, .size = sizeof(d) };
		struct hgt__line_ctx c = { .tep = t[steps[i].h], .in_usecs = true };

		memcpy(d + 4, &steps[i].pid, 4);
		if (steps[i].comm)
			tep_register_comm(t[steps[i].h], steps[i].comm, steps[i].pid);
		line_to(&l, &c, &rec, out, &len);
		trace_seq_reset(&s);
		tep_print_event(t[steps[i].h], &s, &rec, "%16s-%-5d", TEP_PRINT_COMM,
				TEP_PRINT_PID);
		trace_seq_terminate(&s);
		line = strndup(buf, len);
		assert_non_null(line);
		if (strncmp(line, s.buffer, s.len) || line[s.len] != ' ') {
			print_message("# step %zu: \"%s\", libtraceevent: \"%s\"\n", i, line,
				      s.buffer);
			fail();
		}
		free(line);
		checked++;
	}
	print_message("# %d lines' comm and pid columns as libtraceevent's, in 2 handles\n",
		      checked);
	trace_seq_destroy(&s);
	hgt__line_fini(&l);
	fclose(out);
	free(buf);
	tep_free(t[1]);
}

/* Every number field read in place (the file's byte order the machine's) as libtraceevent
 * reads it, in a little-endian and a big-endian file: sizes 1, 2, 4 and 8 with every byte
 * distinct, a size libtraceevent does not read (3: 0) and a field past a short record's
 * end (0). The little-endian values also against the bytes put together by hand. */
static void test_field_numbers_follow_libtraceevent(void **state)
{
	static const char nums[] =
		"name: nums\nID: 9\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
		"\tfield:u8 a;\toffset:8;\tsize:1;\tsigned:0;\n"
		"\tfield:s16 b;\toffset:9;\tsize:2;\tsigned:1;\n"
		"\tfield:u32 c;\toffset:11;\tsize:4;\tsigned:0;\n"
		"\tfield:u64 d;\toffset:15;\tsize:8;\tsigned:0;\n"
		"\tfield:char e[3];\toffset:23;\tsize:3;\tsigned:0;\n\n"
		"print fmt: \"a=%u\", REC->a\n";
	static const char *const names[] = { "a", "b", "c", "d", "e" };
	struct tep_handle *t[2] = { tep_alloc(), tep_alloc() };
	uint8_t d[26];
	int checked = 0;

	for (int h = 0; h < 2; h++) {
		assert_non_null(t[h]);
		tep_set_file_bigendian(t[h], h ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
		tep_set_local_bigendian(t[h], TEP_LITTLE_ENDIAN);
		tep_set_long_size(t[h], 8);
		assert_int_equal(tep_parse_event(t[h], nums, sizeof(nums) - 1, "test"), 0);
	}
	srand(24);
	for (int r = 0; r < 200; r++) {
		for (size_t i = 0; i < sizeof(d); i++)
			d[i] = (uint8_t)(r ? (unsigned int)rand() : 0x11 * (i % 15) + 1);
		for (int h = 0; h < 2; h++) {
			struct tep_event *ev = tep_find_event_by_name(t[h], "test", "nums");

			assert_non_null(ev);
			for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
				struct tep_format_field *f = tep_find_field(ev, names[k]);
				struct tep_record rec = { .data = d, .size = sizeof(d) };
				unsigned long long want = 0, got, hand = 0;

				assert_non_null(f);
				tep_read_number_field(f, d, &want);
				got = hgt__field_num(f, &rec);
				for (int b = f->size - 1; b >= 0 && f->size != 3; b--)
					hand = hand << 8 | d[f->offset + b];
				if (got != want || (!h && got != hand)) {
					const char *o = h ? "big" : "little";

					print_message(
						"# record %d, %s-endian, %s: %#llx, libtraceevent %#llx, by hand %#llx\n",
						r, o, names[k], got, want, hand);
					fail();
				}
				rec.size = f->offset + f->size - 1;
				assert_int_equal(hgt__field_num(f, &rec), 0);
				checked++;
			}
		}
	}
	assert_int_equal(hgt__field_num(NULL, &(struct tep_record){ .data = d, .size = 26 }), 0);
	print_message("# %d fields read as libtraceevent reads them, in 2 byte orders\n", checked);
	tep_free(t[0]);
	tep_free(t[1]);
}

/* The latency column of each line as libtraceevent prints that record's, when the lines
 * before had the same flags and another preempt count, or the same count and other flags
 * (a printer that remembers the last column must look at both). */
static void test_latency_column_follows_each_record(void **state)
{
	static const uint8_t pcs[] = { 0, 1, 0x10, 0x21, 0xff };
	enum { NP = sizeof(pcs) };
	struct hgt__line l;
	char *buf = NULL, want[64];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	int checked = 0;

	assert_non_null(out);
	assert_int_equal(hgt__line_init(&l), 0);
	/* each flags value through every count, then each count through every flags value */
	for (int i = 0; i < 2 * 0x20 * NP; i++) {
		int k = i % (0x20 * NP);
		unsigned int flags = i < 0x20 * NP ? (unsigned int)k / NP : (unsigned int)k % 0x20;
		unsigned int pc = i < 0x20 * NP ? pcs[k % NP] : pcs[k / 0x20];
		struct tep_record rec = { .ts = 1000 + (unsigned long long)i,
					  .data = data,
					  .size = sizeof(data) };
		struct hgt__line_ctx c = { .tep = tep, .in_usecs = true, .latency = true };
		const char *col;

		data[2] = (uint8_t)flags;
		data[3] = (uint8_t)pc;
		line_to(&l, &c, &rec, out, &len);
		tep_says(want, "%s", TEP_PRINT_LATENCY, 0);
		col = memmem(buf, len, "] ", 2);
		assert_non_null(col);
		if ((size_t)(col + 2 - buf) + strlen(want) > len ||
		    strncmp(col + 2, want, strlen(want))) {
			print_message(
				"# flags 0x%x, preempt count 0x%x: \"%.*s\", libtraceevent: \"%s\"\n",
				flags, pc, (int)len, buf, want);
			fail();
		}
		checked++;
	}
	print_message("# %d lines' latency columns as libtraceevent's, after every neighbour\n",
		      checked);
	data[2] = data[3] = 0;
	hgt__line_fini(&l);
	fclose(out);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_matches_libtraceevent),
		cmocka_unit_test(test_latency_matches_libtraceevent),
		cmocka_unit_test(test_json_escapes_every_byte),
		cmocka_unit_test(test_json_escapes_anywhere),
		cmocka_unit_test(test_comm_pid_columns_follow_libtraceevent),
		cmocka_unit_test(test_latency_column_follows_each_record),
		cmocka_unit_test(test_field_numbers_follow_libtraceevent),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
