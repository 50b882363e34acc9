// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Compiled print formats (hgt__fmtc_text()) against libtraceevent's own text of the same
 * record, on formats written here to reach every kind of conversion and argument the
 * compiler takes (integers of every length and flag, casts, operators, ternaries, arrays,
 * dynamic and relative strings, char arrays, symbols, flags, %p and %ps/%pS, escapes) and
 * on records of random and edge-case bytes, little- and big-endian. Every record either
 * prints the same text both ways or goes to libtraceevent (NULL); each event must have most
 * of its records compiled, and the formats the compiler does not take none. The handlers of
 * the sched_switch, hrtimer and kvm plugins that are written by hand are checked the same
 * way against the plugins themselves (kvm lines with a guest's functions), and so are the
 * comms they register.
 */
#include <string.h>

#include "test-helpers.h"

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include "../../lib/report/report-local.h"

#define COMMON                                                                         \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"         \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"         \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

#define INTS                                                          \
	"\tfield:int si;\toffset:8;\tsize:4;\tsigned:1;\n"            \
	"\tfield:unsigned int ui;\toffset:12;\tsize:4;\tsigned:0;\n"  \
	"\tfield:long sl;\toffset:16;\tsize:8;\tsigned:1;\n"          \
	"\tfield:unsigned long ul;\toffset:24;\tsize:8;\tsigned:0;\n" \
	"\tfield:short ss;\toffset:32;\tsize:2;\tsigned:1;\n"         \
	"\tfield:unsigned char uc;\toffset:34;\tsize:1;\tsigned:0;\n" \
	"\tfield:char sc;\toffset:35;\tsize:1;\tsigned:1;\n"          \
	"\tfield:u16 w;\toffset:36;\tsize:2;\tsigned:0;\n"            \
	"\tfield:u64 big;\toffset:40;\tsize:8;\tsigned:0;\n\n"

struct ev {
	int id, size; /* fixed part */
	int dyn;      /* 1: strings at 8 (data_loc) and 28 (rel_loc); 2: a u8 array at 48 */
	bool compiled;
	const char *text;
};

static const struct ev evs[] = {
	{ 11, 48, 0, true,
	  "name: ints\nID: 11\nformat:\n" COMMON INTS
	  "print fmt: \"a=%d b=%u c=%x d=%08lx e=%-6d| f=%#x g=%#010x h=%hhd i=%hu j=%lld k=%Lu l=%zu m=%5d o=%o p=%5.3d r=%X s=%ld t=%lu u=%hhx v=%hx w=%#lx y=%i z=%-#8x|\", REC->si, REC->ui, REC->ui, REC->ul, REC->si, REC->ui, REC->ui, REC->sc, REC->w, REC->sl, REC->big, REC->ul, REC->ss, REC->ui, REC->si, REC->ui, REC->sl, REC->ul, REC->uc, REC->ss, REC->big, REC->sc, REC->uc\n" },
	{ 12, 48, 0, true,
	  "name: ops\nID: 12\nformat:\n" COMMON INTS
	  "print fmt: \"c1=%d c2=%u c3=%d c4=%lu c5=%d c6=%u c7=%lu o1=%ld o2=%lu o3=%d o4=%d o5=%lu o6=%llu o7=%d o8=%d o9=%u o10=%lx l1=%d l2=%d l3=%d l4=%d l5=%d l6=%d l7=%d\", (int)REC->sl, (unsigned char)REC->ui, (s16)REC->ul, (unsigned long)REC->si, (char)REC->si, (u32)REC->big, (unsigned int *)REC->ul, REC->si ? REC->sl : REC->ul, (REC->ul >> 3) & 0xff, REC->si == 4 ? 1 : 0, !REC->uc, REC->ui * 3 + 7, REC->big / 1000, REC->ui % 7, REC->si - REC->ss, REC->uc << 4, ~REC->ul, REC->uc && REC->sc, REC->uc || REC->sc, REC->si <= 0, REC->si >= 0, REC->si != 5, REC->si < 2, REC->si > 2\n" },
	{ 13, 48, 1, true,
	  "name: strs\nID: 13\nformat:\n" COMMON
	  "\tfield:__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n"
	  "\tfield:char comm[16];\toffset:12;\tsize:16;\tsigned:0;\n"
	  "\tfield:__rel_loc char[] rel;\toffset:28;\tsize:4;\tsigned:0;\n"
	  "\tfield:int mode;\toffset:32;\tsize:4;\tsigned:1;\n"
	  "\tfield:unsigned long flags;\toffset:40;\tsize:8;\tsigned:0;\n\n"
	  "print fmt: \"name=%s comm=%s c2=%-20s| c3=%10s| c4=%.3s rel=%s mode=%s flags=%s yn=%s lit=%s\", __get_str(name), REC->comm, REC->comm, __get_str(name), REC->comm, __get_rel_str(rel), __print_symbolic(REC->mode, { 0, \"ZERO\" }, { 1, \"ONE\" }, { 16, \"SIXTEEN\" }), __print_flags(REC->flags, \"|\", { 1, \"A\" }, { 2, \"B\" }, { 4, \"C\" }, { 0x100, \"BIG\" }), REC->mode ? \"yes\" : \"no\", \"atom\"\n" },
	{ 14, 52, 2, true,
	  "name: arrs\nID: 14\nformat:\n" COMMON
	  "\tfield:unsigned int arr[4];\toffset:8;\tsize:16;\tsigned:0;\n"
	  "\tfield:unsigned char bytes[8];\toffset:24;\tsize:8;\tsigned:0;\n"
	  "\tfield:void * ptr;\toffset:32;\tsize:8;\tsigned:0;\n"
	  "\tfield:unsigned long fn;\toffset:40;\tsize:8;\tsigned:0;\n"
	  "\tfield:__data_loc u8[] data;\toffset:48;\tsize:4;\tsigned:0;\n\n"
	  "print fmt: \"a0=%u a3=%u b5=%x len=%d p=%p f=%ps F=%pS c=%d\", REC->arr[0], REC->arr[3], REC->bytes[5], __get_dynamic_array_len(data), REC->ptr, REC->fn, REC->fn, ((unsigned char *)REC->bytes)[1]\n" },
	{ 15, 48, 0, true,
	  "name: escapes\nID: 15\nformat:\n" COMMON INTS
	  "print fmt: \"tab\\there 100%% %d back\\\\slash q\\\"x\\\" nl\\n\", REC->si\n" },
	{ 17, 48, 0, false, /* libtraceevent 1.7 takes neither %c nor '+' */
	  "name: charplus\nID: 17\nformat:\n" COMMON INTS
	  "print fmt: \"n=%c q=%+d\", REC->uc, REC->si\n" },
	{ 16, 16, 0, false,
	  "name: notcompiled\nID: 16\nformat:\n" COMMON
	  "\tfield:unsigned char mac[6];\toffset:8;\tsize:6;\tsigned:0;\n\n"
	  "print fmt: \"mac=%pM hex=%s\", REC->mac, __print_hex(REC->mac, 6)\n" },
};
#define NR_EVS (int)(sizeof(evs) / sizeof(evs[0]))
#define FUNC0 0xffffffff81000000ULL

static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A value of @size bytes: often an edge (0, 1, -1, sign bits, 0x7f..), else random. */
static uint64_t value(int size)
{
	static const uint64_t edge[] = {
		0,	1,	2,	    3,		4,	    5,
		16,	0x7f,	0x80,	    0xff,	0x100,	    0x7fff,
		0x8000, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff, 0x8000000000000000ULL,
		~0ULL,	0x105,	7
	};
	uint64_t v = rnd() % 3 ? rnd() >> (rnd() % 64) : edge[rnd() % (sizeof(edge) / 8)];

	return size == 8 ? v : v & ((1ULL << (8 * size)) - 1);
}

static void put(uint8_t *p, uint64_t v, int size, bool big)
{
	for (int i = 0; i < size; i++)
		p[big ? size - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

static const char *const names[] = { "x", "kworker/0:1", "", "a name of 30 characters .....",
				     "tab\there" };

/* a string at the end of the record, its loc word at @off (relative to its end when @rel) */
static int put_str(uint8_t *rec, int off, int end, bool rel, bool big)
{
	const char *s = names[rnd() % 5];
	int len = (int)strlen(s) + 1;
	uint32_t loc;

	memcpy(rec + end, s, (size_t)len);
	loc = (uint32_t)(rel ? end - off - 4 : end);
	if (rnd() % 16 == 0)
		len = 0; /* an empty dynamic string: libtraceevent's business */
	put(rec + off, (uint64_t)loc | (uint64_t)len << 16, 4, big);
	return end + (len ? len : 1);
}

/* one record of @e: random fields; returns its size */
static int make(uint8_t *rec, const struct ev *e, bool big)
{
	int end = e->size;

	memset(rec, 0, 256);
	put(rec, (uint64_t)e->id, 2, big);
	for (int o = 4; o < e->size; o += 4) /* random words; the fields below are fixed up */
		put(rec + o, value(4), 4, big);
	if (e->id == 11 || e->id == 12 || e->id == 15) {
		put(rec + 16, value(8), 8, big);
		put(rec + 24, value(8), 8, big);
		put(rec + 40, value(8), 8, big);
	}
	if (e->dyn == 1) {
		for (int i = 12; i < 28; i++) /* comm: printable, a NUL sometimes */
			rec[i] = rnd() % 10 ? (uint8_t)('a' + rnd() % 26) : 0;
		put(rec + 40, value(8) & (rnd() % 2 ? 0x107 : ~0ULL), 8, big);
		end = put_str(rec, 8, end, false, big);
		end = put_str(rec, 28, end, true, big);
	} else if (e->dyn == 2) {
		uint64_t fn[] = { 0,
				  FUNC0,
				  FUNC0 + 0x10,
				  FUNC0 + 0x1000,
				  FUNC0 + 0x2fff,
				  FUNC0 + 0x3000,
				  FUNC0 - 1,
				  value(8) };
		int n = (int)(rnd() % 9);

		put(rec + 32, rnd() % 4 ? value(8) : 0, 8, big);
		put(rec + 40, fn[rnd() % 8], 8, big);
		put(rec + 48, (uint64_t)end | (uint64_t)n << 16, 4, big);
		end += n;
	}
	return end;
}

/* records of @e through both printers: how many the compiled format printed; fails on a
 * difference */
static int compare(struct tep_handle *tep, struct hgt__fmtc *fc, const struct ev *e, bool big,
		   int n)
{
	struct tep_event *ev = tep_find_event(tep, e->id);
	static char dst[HGT__INFO_DST];
	uint8_t data[256];
	struct trace_seq s;
	int compiled = 0;

	assert_non_null(ev);
	trace_seq_init(&s);
	for (int i = 0; i < n; i++) {
		struct tep_record rec = { .data = data, .cpu = 0 };
		const char *t;
		size_t len;

		rec.size = make(data, e, big);
		/* every other record written into a printer's buffer, as the text report does */
		t = hgt__fmtc_text(fc, tep, ev, &rec, &len, i % 2 ? dst : NULL);
		if (!t)
			continue;
		if (i % 2 && t != dst) {
			print_message("# %s, record %d: not written into the buffer given\n",
				      ev->name, i);
			fail();
		}
		compiled++;
		trace_seq_reset(&s);
		tep_print_event(tep, &s, &rec, "%s", TEP_PRINT_INFO);
		if (len != s.len || memcmp(t, s.buffer, len)) {
			print_message(
				"# %s, record %d: compiled \"%.*s\"\n#   libtraceevent \"%.*s\"\n",
				ev->name, i, (int)len, t, (int)s.len, s.buffer);
			fail();
		}
	}
	trace_seq_destroy(&s);
	return compiled;
}

static void run(bool big)
{
	struct tep_handle *tep = tep_alloc();
	struct hgt__fmtc *fc = hgt__fmtc_new();
	const int n = 20000;

	assert_non_null(fc);
	tep_set_file_bigendian(tep, big ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_long_size(tep, 8);
	tep_register_function(tep, "func_a", FUNC0, NULL);
	tep_register_function(tep, "func_b", FUNC0 + 0x1000, "mod_b");
	tep_register_function(tep, "func_c", FUNC0 + 0x3000, NULL);
	for (int k = 0; k < NR_EVS; k++)
		assert_int_equal(tep_parse_event(tep, evs[k].text, strlen(evs[k].text), "test"), 0);
	for (int k = 0; k < NR_EVS; k++) {
		int c = compare(tep, fc, &evs[k], big, n);

		print_message(
			"# %s-endian %s: %d of %d records compiled, all equal to libtraceevent's\n",
			big ? "big" : "little", tep_find_event(tep, evs[k].id)->name, c, n);
		if (evs[k].compiled)
			assert_true(c >= n / 2);
		else
			assert_int_equal(c, 0);
	}
	hgt__fmtc_free(fc);
	tep_free(tep);
}

/* ---- the sched_switch and hrtimer plugins' handlers (fmt-compile.c's "plugins") ---- */

static const char *const plugin_evs[] = {
	"name: sched_switch\nID: 21\nformat:\n" COMMON
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid\n",
	"name: sched_wakeup\nID: 22\nformat:\n" COMMON
	"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:int success;\toffset:32;\tsize:4;\tsigned:1;\n"
	"\tfield:int target_cpu;\toffset:36;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"comm=%s pid=%d\", REC->comm, REC->pid\n",
	"name: sched_wakeup_new\nID: 23\nformat:\n" COMMON
	"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"comm=%s pid=%d\", REC->comm, REC->pid\n",
	"name: hrtimer_expire_entry\nID: 24\nformat:\n" COMMON
	"\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:s64 now;\toffset:16;\tsize:8;\tsigned:1;\n"
	"\tfield:void * function;\toffset:24;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"hrtimer=%p now=%llu\", REC->hrtimer, REC->now\n",
	"name: hrtimer_start\nID: 25\nformat:\n" COMMON
	"\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:s64 expires;\toffset:24;\tsize:8;\tsigned:1;\n"
	"\tfield:s64 softexpires;\toffset:32;\tsize:8;\tsigned:1;\n\n"
	"print fmt: \"hrtimer=%p expires=%llu\", REC->hrtimer, REC->expires\n",
	"name: kvm_exit\nID: 26\nformat:\n" COMMON
	"\tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:u32 isa;\toffset:24;\tsize:4;\tsigned:0;\n"
	"\tfield:u64 info1;\toffset:32;\tsize:8;\tsigned:0;\n"
	"\tfield:u64 info2;\toffset:40;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"reason %u rip 0x%lx\", REC->exit_reason, REC->guest_rip\n",
	"name: kvm_entry\nID: 27\nformat:\n" COMMON
	"\tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long rip;\toffset:16;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"vcpu %u, rip 0x%lx\", REC->vcpu_id, REC->rip\n",
};
#define NR_PLUGIN_EVS (int)(sizeof(plugin_evs) / sizeof(plugin_evs[0]))
/* older kernels' shapes, same layout: hrtimer_expire_entry's timer as "timer"; kvm_exit
 * with neither isa nor info1/info2 */
static const char *const plugin_old[] = {
	[3] = "name: hrtimer_expire_entry\nID: 24\nformat:\n" COMMON
	      "\tfield:void * timer;\toffset:8;\tsize:8;\tsigned:0;\n"
	      "\tfield:s64 now;\toffset:16;\tsize:8;\tsigned:1;\n"
	      "\tfield:void * function;\toffset:24;\tsize:8;\tsigned:0;\n\n"
	      "print fmt: \"timer=%p now=%llu\", REC->timer, REC->now\n",
	[5] = "name: kvm_exit\nID: 26\nformat:\n" COMMON
	      "\tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n"
	      "\tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;\n\n"
	      "print fmt: \"reason %u rip 0x%lx\", REC->exit_reason, REC->guest_rip\n",
};
static const int plugin_size[] = { 64, 40, 36, 32, 40, 48, 24 };
static const char *const plugin_sys[] = {
	"sched", "sched", "sched", "timer", "timer", "kvm", "kvm"
};

/* a handle with the plugin events (@old: plugin_old's where there is one) and
 * libtraceevent's plugins */
static struct tep_handle *plugin_tep(struct tep_plugin_list **pl, bool old)
{
	struct tep_handle *tep = tep_alloc();

	assert_non_null(tep);
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_long_size(tep, 8);
	*pl = tep_load_plugins(tep);
	tep_register_function(tep, "func_a", FUNC0, NULL);
	tep_register_function(tep, "func_b", FUNC0 + 0x1000, "mod_b");
	for (int k = 0; k < NR_PLUGIN_EVS; k++) {
		const char *text = old && k < 6 && plugin_old[k] ? plugin_old[k] : plugin_evs[k];

		assert_int_equal(tep_parse_event(tep, text, strlen(text), plugin_sys[k]), 0);
	}
	return tep;
}

/* One record of plugin event @k: pids from a small range (comms registered again and
 * again, the first one kept), prios and states of any bits, comms with a NUL or none. */
static int make_plugin(uint8_t *rec, int k)
{
	uint64_t fn[] = { FUNC0, FUNC0 + 0x10, FUNC0 + 0x1000, FUNC0 - 1, value(8) };

	memset(rec, 0, 256);
	put(rec, (uint64_t)(21 + k), 2, false);
	for (int o = 4; o < plugin_size[k]; o += 4)
		put(rec + o, value(4), 4, false);
	if (k < 3) {
		for (int c = 0; c < 16; c++) {
			rec[8 + c] = rnd() % 12 ? (uint8_t)('a' + rnd() % 26) : 0;
			if (k == 0)
				rec[40 + c] = rnd() % 12 ? (uint8_t)('A' + rnd() % 26) : 0;
		}
		put(rec + 24, rnd() % 40 - 2, 4, false);
		if (k == 0) {
			put(rec + 56, rnd() % 40 - 2, 4, false);
			put(rec + 32, rnd() % 2 ? value(8) : rnd() % 0x400, 8, false);
		}
	} else if (k >= 5) { /* kvm: a vCPU thread of the guest (5, 6) or of none (7) */
		static const uint32_t reasons[] = {
			0, 1, 10, 12, 30, 32, 48, 0x400, 0xffffffff, 77
		};

		put(rec + 4, 5 + rnd() % 3, 4, false);
		put(rec + 16, fn[rnd() % 5], 8, false);
		if (k == 5) {
			put(rec + 8, rnd() % 50 ? reasons[rnd() % 10] : value(4), 4, false);
			put(rec + 24, 1 + rnd() % 3, 4, false);
			put(rec + 32, value(8), 8, false);
			put(rec + 40, value(8), 8, false);
		}
	} else {
		put(rec + (k == 3 ? 24 : 16), fn[rnd() % 5], 8, false);
		put(rec + 8, value(8), 8, false);
		put(rec + (k == 3 ? 16 : 24), value(8), 8, false);
	}
	return plugin_size[k];
}

static void plugins(bool old)
{
	struct tep_plugin_list *pla, *plb;
	struct tep_handle *a = plugin_tep(&pla, old), *b = plugin_tep(&plb, old),
			  *guest = tep_alloc();
	struct hgt__fmtc *fc = hgt__fmtc_new();
	int vpid[] = { 5, 6 };
	struct tep_handle *vtep[] = { guest, guest };
	struct hgt__kvm_funcs kf = { .n = 2, .pid = vpid, .tep = vtep };
	struct trace_seq s;
	const int n = 20000;
	int pids = 0;

	assert_non_null(fc);
	assert_non_null(guest);
	tep_register_function(guest, "guest_a", FUNC0, NULL);
	tep_register_function(guest, "guest_b", FUNC0 + 0x800, NULL);
	hgt__kvm_funcs_set(&kf); /* the guest's functions in kvm lines, for both printers */
	if (!tep_find_event(a, 21)->handler || !tep_find_event(a, 24)->handler ||
	    !tep_find_event(a, 26)->handler) {
		print_message(
			"# libtraceevent's sched_switch, hrtimer or kvm plugin is not installed\n");
		skip();
	}
	trace_seq_init(&s);
	for (int k = 0; k < NR_PLUGIN_EVS; k++) {
		struct tep_event *ev = tep_find_event(a, 21 + k);
		int compiled = 0, funcs = 0;

		for (int i = 0; i < n; i++) {
			uint8_t data[256];
			struct tep_record rec = { .data = data, .cpu = 0 };
			const char *t;
			size_t len;

			rec.size = make_plugin(data, k);
			t = hgt__fmtc_text(fc, a, ev, &rec, &len, NULL);
			trace_seq_reset(&s);
			tep_print_event(b, &s, &rec, "%s", TEP_PRINT_INFO);
			if (!t) { /* printed by libtraceevent: registers its comms there too */
				trace_seq_reset(&s);
				tep_print_event(a, &s, &rec, "%s", TEP_PRINT_INFO);
				continue;
			}
			compiled++;
			funcs += memmem(t, len, " guest_", 7) != NULL;
			if (len != s.len || memcmp(t, s.buffer, len)) {
				print_message(
					"# %s, record %d: compiled \"%.*s\"\n#   plugin \"%.*s\"\n",
					ev->name, i, (int)len, t, (int)s.len, s.buffer);
				fail();
			}
		}
		print_message(
			"# plugin %s%s: %d of %d records compiled, all equal to the plugin's (%d with a guest function)\n",
			ev->name, old && k < 6 && plugin_old[k] ? " (older format)" : "", compiled,
			n, funcs);
		assert_true(compiled >= n / 2);
		if (k >= 5) /* the guest's vCPU threads: 2 pids of 3, 2 addresses of 5 in it */
			assert_true(funcs >= n / 5);
	}
	/* the comms the handlers registered, pid by pid, as the plugin registered them */
	for (int pid = -2; pid < 38; pid++) {
		const char *ca = tep_data_comm_from_pid(a, pid),
			   *cb = tep_data_comm_from_pid(b, pid);

		if (strcmp(ca, cb)) {
			print_message("# pid %d: comm \"%s\" here, \"%s\" by the plugin\n", pid, ca,
				      cb);
			fail();
		}
		pids += tep_is_pid_registered(b, pid);
	}
	print_message("# comms registered: the same for all 40 pids (%d registered)\n", pids);
	assert_true(pids >= 30);
	hgt__kvm_funcs_set(NULL);
	trace_seq_destroy(&s);
	hgt__fmtc_free(fc);
	tep_free(guest);
	tep_unload_plugins(pla, a);
	tep_unload_plugins(plb, b);
	tep_free(a);
	tep_free(b);
}

static void test_plugins(void **state)
{
	(void)state;
	plugins(false);
}

static void test_plugins_older_formats(void **state)
{
	(void)state;
	plugins(true);
}

/*
 * The kvm plugin's hook (kvm-guest-func.c) remembers each vCPU's last function and where it
 * ends. Its answers, rip by rip in a random order that comes back to the same functions,
 * against libtraceevent's tep_find_function() and tep_find_function_address() on the
 * guest's handle: the same function and start, and none where they find none (below the
 * first symbol, past the last one's start, a thread not the guest's).
 */
static void test_kvm_funcs_as_libtraceevent(void **state)
{
	struct tep_plugin_list *pl;
	struct tep_handle *a = plugin_tep(&pl, false), *guest = tep_alloc();
	int vpid[] = { 5, 6 };
	struct tep_handle *vtep[] = { guest, guest };
	struct hgt__kvm_funcs kf = { .n = 2, .pid = vpid, .tep = vtep };
	struct tep_handle *guest2 = tep_alloc(), *vtep2[] = { guest2, guest2 };
	struct hgt__kvm_funcs kf2 = { .n = 2, .pid = vpid, .tep = vtep2 };
	static const uint64_t rips[] = { FUNC0 - 1,	   FUNC0,	   FUNC0 + 1,
					 FUNC0 + 0x7ff,	   FUNC0 + 0x800,  FUNC0 + 0x801,
					 FUNC0 + 0xfff,	   FUNC0 + 0x1000, FUNC0 + 0x1001,
					 FUNC0 + 0x1000000 };
	struct tep_event *ev = tep_find_event(a, 26);
	int found = 0, none = 0, last = 0, switches = 0;

	(void)state;
	assert_non_null(guest);
	assert_non_null(ev);
	tep_register_function(guest, "guest_a", FUNC0, NULL);
	tep_register_function(guest, "guest_b", FUNC0 + 0x800, NULL);
	tep_register_function(guest, "guest_c", FUNC0 + 0x1000, NULL); /* the last */
	/* a second map of the same threads to another guest, its functions elsewhere: a thread
	 * taking turns with the two (as the parallel report's main thread does) must get each
	 * map's own */
	assert_non_null(guest2);
	tep_register_function(guest2, "other_a", FUNC0 - 0x100, NULL);
	tep_register_function(guest2, "other_b", FUNC0 + 0x900, NULL);
	tep_register_function(guest2, "other_c", FUNC0 + 0x2000, NULL);
	for (int i = 0; i < 20000; i++) {
		uint8_t data[48] = { 0 };
		struct tep_record rec = { .data = data, .size = sizeof(data) };
		int pid = 5 + (int)(rnd() % 3); /* 7: no vCPU of the guest */
		uint64_t rip = rips[rnd() % 10];
		unsigned long long v = rip;
		bool second = rnd() % 4 == 0;
		struct tep_handle *g = second ? guest2 : guest;
		const char *want = pid == 7 ? NULL : tep_find_function(g, rip);
		const char *got;

		hgt__kvm_funcs_set(second ? &kf2 : &kf);
		switches += second;

		put(data, 26, 2, false);
		put(data + 4, (uint64_t)pid, 4, false);
		got = tep_plugin_kvm_get_func(ev, &rec, &v);
		if (!want != !got ||
		    (want && (strcmp(want, got) || v != tep_find_function_address(g, rip)))) {
			print_message("# pid %d rip %#llx: \"%s\" at %#llx, libtraceevent \"%s\"\n",
				      pid, (unsigned long long)rip, got ? got : "(none)", v,
				      want ? want : "(none)");
			fail();
		}
		found += want != NULL;
		none += !want;
		last += want && !strcmp(want, "guest_c");
	}
	print_message(
		"# kvm hook: 20000 rips as libtraceevent finds them (%d in a function, %d of them the last one's start, %d in none; %d through a second map)\n",
		found, last, none, switches);
	assert_true(found > 5000 && none > 5000 && last > 500 && switches > 2000);
	hgt__kvm_funcs_set(NULL);
	tep_free(guest2);
	tep_free(guest);
	tep_unload_plugins(pl, a);
	tep_free(a);
}

static void test_little_endian(void **state)
{
	(void)state;
	run(false);
}

static void test_big_endian(void **state)
{
	(void)state;
	run(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_little_endian),
		cmocka_unit_test(test_big_endian),
		cmocka_unit_test(test_plugins),
		cmocka_unit_test(test_plugins_older_formats),
		cmocka_unit_test(test_kvm_funcs_as_libtraceevent),
	};

	unsetenv("HGT_FASTFMT");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
