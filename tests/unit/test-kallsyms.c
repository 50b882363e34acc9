// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hgtrace's own kallsyms reader (hgt__kallsyms_own(), registering what it read, with
 * tep_parse_kallsyms() for a text it leaves to libtraceevent) must leave a handle exactly
 * as tep_parse_kallsyms() does: the same
 * return value and the same function map, aliases' order and modules included, as
 * tep_print_funcs() prints it. On this machine's /proc/kallsyms (when readable), on lines
 * written to reach each rule (modules, '$' names, absolute symbols, blanks, upper-case hex,
 * a tab without '[', two tabs, an empty module) and on malformed texts, where libtraceevent
 * stops at the bad line.
 *
 * hgt__ksyms_new()'s table, looked up through tep_set_function_resolver(), must name the
 * same function and start address as libtraceevent's own map for every address looked up:
 * each symbol's, one below and one above, 0, the highest, and 4,096 between (aliases at
 * one address, the highest symbol and addresses past it included), on each text hgtrace
 * reads itself, kallsyms in address order and not. And for each of those addresses, the
 * range hgt__ksyms_range() gives (the report's guest functions are looked up once per range,
 * kvm-guest-func.c) must be exactly the addresses libtraceevent's map names that same
 * entry for: its first, middle and last address that function at that start, the address
 * past its end another (or none), the address before its start another, and the looked-up
 * address inside it (but the start of a function with aliases, which the range leaves out).
 * And the report's guest functions (kvm-guest-func.c), which keep a vCPU's last range, must
 * name what libtraceevent's map names for a run of rips that crosses each range's ends:
 * inside the previous symbol's function, the next symbol's start (just past that range),
 * one below it, one above it, and that start again (an alias's start, after a lookup
 * inside its run's range).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "test-helpers.h"

#include <traceevent/event-parse.h>

#include "../../lib/tracedat/tracedat-local.h"
#include "../../lib/report/report-local.h"

/* tep_print_funcs() of @tep into a malloc'd string (it prints to stdout) */
static char *funcs_of(struct tep_handle *tep)
{
	char path[] = "/tmp/hgt-kallsyms-XXXXXX";
	int fd = mkstemp(path), saved = dup(1);
	char *buf;
	off_t len;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stdout);
	dup2(fd, 1);
	tep_print_funcs(tep);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	len = lseek(fd, 0, SEEK_END);
	buf = calloc(1, (size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)len, 0), len);
	close(fd);
	unlink(path);
	return buf;
}

/* One lookup in @a (libtraceevent's map) and @b (the table): the same function, the same
 * start. Returns 1 when they agree. */
static int same_lookup(struct tep_handle *a, struct tep_handle *b, unsigned long long addr,
		       const char *what)
{
	const char *fa = tep_find_function(a, addr), *fb = tep_find_function(b, addr);
	unsigned long long sa = tep_find_function_address(a, addr);
	unsigned long long sb = tep_find_function_address(b, addr);

	if ((!fa != !fb) || (fa && strcmp(fa, fb)) || sa != sb) {
		print_message("# %s: %llx: libtraceevent %s at %llx, the table %s at %llx\n", what,
			      addr, fa ? fa : "(none)", sa, fb ? fb : "(none)", sb);
		return 0;
	}
	return 1;
}

/* @addr's function and start in libtraceevent's map @a are @func at @start */
static bool names(struct tep_handle *a, unsigned long long addr, const char *func,
		  unsigned long long start)
{
	const char *f = tep_find_function(a, addr);

	return f && !strcmp(f, func) && tep_find_function_address(a, addr) == start;
}

/* hgt__ksyms_range() of @addr in @t: the function libtraceevent's map @a names, and a range
 * of addresses that is exactly those @a names it for. Returns 1 when it is; *@ranged counts
 * the non-empty ranges. */
static int same_range(struct tep_handle *a, const struct hgt__ksyms *t, unsigned long long addr,
		      const char *what, size_t *ranged)
{
	unsigned long long start = 0, lo = 0, hi = 0;
	const char *f = hgt__ksyms_range(t, addr, &start, &lo, &hi);
	const char *fa = tep_find_function(a, addr);
	bool ok;

	if (!f || !fa)
		ok = !f && !fa;
	else if (lo >= hi) /* empty: at its start, an alias before the last of its run, or the
			    * last symbol (the zero entry after it), found only there */
		ok = addr == start && (hi == start || hi == 0);
	else
		ok = (lo == start || lo == start + 1) && (addr >= lo ? addr < hi : addr == start) &&
		     names(a, lo, f, start) && names(a, lo + (hi - lo) / 2, f, start) &&
		     names(a, hi - 1, f, start) && !names(a, hi, f, start) &&
		     (lo == 0 || !names(a, lo - 1, f, start) || lo == start + 1);
	if (f && lo < hi)
		(*ranged)++;
	if (!ok)
		print_message(
			"# %s: %llx: the table's range [%llx, %llx) of %s at %llx; libtraceevent: %s\n",
			what, addr, lo, hi, f ? f : "(none)", start, fa ? fa : "(none)");
	return ok;
}

/* hgt__kvm_func() of @rip for the vCPU thread @pid against libtraceevent's map @a: the same
 * function, start and name length. Returns 1 when they agree. */
static int kvm_same(struct tep_handle *a, int pid, unsigned long long rip, const char *what)
{
	unsigned long long v = rip, start = 0;
	unsigned long size;
	const char *name = NULL;
	size_t len = 0;
	const char *f = hgt__kvm_func(pid, &v, &len);
	int found = tep_find_function_info(a, rip, &name, &start, &size);

	if (found ? f && !strcmp(f, name) && v == start && len == strlen(name) : !f)
		return 1;
	print_message("# %s: guest rip %llx: the report %s at %llx, libtraceevent %s at %llx\n",
		      what, rip, f ? f : "(none)", f ? v : 0, found ? name : "(none)", start);
	return 0;
}

/* The report's guest functions over the table @t (@b: a handle looking up through it)
 * against libtraceevent's map @a (@map: its lines), rips in the order the comment at the
 * top gives. Returns the rips looked up; *@bad counts those that differ. */
static size_t same_kvm(const char *what, struct tep_handle *a, struct tep_handle *b,
		       const struct hgt__ksyms *t, const char *map, size_t *bad)
{
	int pid = 77;
	struct tep_handle *teps[1] = { b };
	const struct hgt__ksyms *ks[1] = { t };
	struct hgt__kvm_funcs f = { .n = 1, .pid = &pid, .tep = teps, .ksyms = ks };
	unsigned long long prev = 0, addr;
	size_t n = 0;

	hgt__kvm_funcs_set(&f);
	for (const char *p = map; *p; p = strchr(p, '\n') + 1) {
		assert_int_equal(sscanf(p, "%llx", &addr), 1);
		const unsigned long long rips[] = { prev + 1, addr, addr - 1, addr + 1, addr };

		for (size_t k = 0; k < sizeof(rips) / sizeof(rips[0]); k++, n++)
			*bad += !kvm_same(a, pid, rips[k], what);
		prev = addr;
	}
	hgt__kvm_funcs_set(NULL);
	return n;
}

/* The table of @text against libtraceevent's map @a (@map: its tep_print_funcs() lines) */
static void same_table(const char *what, const char *text, struct tep_handle *a, const char *map)
{
	struct hgt__ksyms *t = hgt__ksyms_new(text);
	struct tep_handle *b = tep_alloc();
	unsigned long long lo = ~0ull, hi = 0, addr, x = 0x9e3779b97f4a7c15ull;
	size_t looked = 0, bad = 0, sorted = 1, ranged = 0, badr = 0, badk = 0;
	unsigned long long prev = 0;

	assert_non_null(t);
	assert_int_equal(tep_set_function_resolver(b, hgt__ksyms_resolve, t), 0);
	for (const char *p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
		if (sscanf(p, "%llx", &addr) == 1) {
			sorted &= addr >= prev;
			prev = addr;
		}
	for (const char *p = map; *p; p = strchr(p, '\n') + 1) {
		assert_int_equal(sscanf(p, "%llx", &addr), 1);
		lo = addr < lo ? addr : lo;
		hi = addr > hi ? addr : hi;
		for (int d = -1; d <= 1; d++, looked++) {
			bad += !same_lookup(a, b, addr + (unsigned long long)d, what);
			badr += !same_range(a, t, addr + (unsigned long long)d, what, &ranged);
		}
	}
	for (int i = 0; i < 4096 && hi > lo; i++, looked++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		bad += !same_lookup(a, b, lo + x % (hi - lo + 4096), what);
		badr += !same_range(a, t, lo + x % (hi - lo + 4096), what, &ranged);
	}
	bad += !same_lookup(a, b, 0, what) + !same_lookup(a, b, ~0ull, what);
	badr += !same_range(a, t, 0, what, &ranged) + !same_range(a, t, ~0ull, what, &ranged);
	looked += 2;
	print_message(
		"# %s: %zu lookups through the table as through libtraceevent's map, %zu differ (kallsyms %sin address order)\n",
		what, looked, bad, sorted ? "" : "not ");
	print_message(
		"# %s: %zu ranges of the table's functions (%zu not empty) checked against libtraceevent's map, %zu wrong\n",
		what, looked, ranged, badr);
	looked = same_kvm(what, a, b, t, map, &badk);
	print_message(
		"# %s: %zu guest rips named by the report's kept ranges as by libtraceevent's map, %zu differ\n",
		what, looked, badk);
	assert_int_equal(bad, 0);
	assert_int_equal(badr, 0);
	assert_int_equal(badk, 0);
	assert_true(ranged > 0);
	tep_free(b);
	hgt__ksyms_free(t);
}

/* both parsers on @text: the same return and the same map; returns the map's lines. @own:
 * whether hgtrace's own reader must read it (else it must leave it to libtraceevent). */
static size_t same(const char *what, const char *text, bool own)
{
	struct tep_handle *a = tep_alloc(), *b = tep_alloc(), *c = tep_alloc();
	int ra = tep_parse_kallsyms(a, text),
	    rb = hgt__kallsyms_own(b, text) ? tep_parse_kallsyms(b, text) : 0;
	int rc = hgt__kallsyms_own(c, text);
	char *fa = funcs_of(a), *fb = funcs_of(b);
	size_t lines = 0;

	for (const char *p = fa; (p = strchr(p, '\n')); p++)
		lines++;
	if (ra != rb || strcmp(fa, fb)) {
		print_message("# %s: libtraceevent returned %d, hgtrace %d; maps %s\n", what, ra,
			      rb, strcmp(fa, fb) ? "differ" : "equal");
		fail();
	}
	if ((rc == 0) != own) {
		print_message("# %s: hgtrace's own reader returned %d\n", what, rc);
		fail();
	}
	print_message("# %s: returned %d, %zu functions mapped the same (%s)\n", what, ra, lines,
		      own ? "read by hgtrace's own reader" : "left to libtraceevent");
	if (own)
		same_table(what, text, a, fa);
	else
		assert_null(hgt__ksyms_new(text));
	free(fa);
	free(fb);
	tep_free(a);
	tep_free(b);
	tep_free(c);
	return lines;
}

static void test_this_machine(void **state)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char *text = NULL;
	size_t cap = 0, len = 0, n;

	(void)state;
	if (!f)
		skip();
	text = malloc(cap = 1 << 20);
	assert_non_null(text);
	while ((n = fread(text + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (cap - len < 4096) {
			text = realloc(text, cap *= 2);
			assert_non_null(text);
		}
	}
	fclose(f);
	text[len] = 0;
	if (len < 1000)
		skip();
	assert_true(same("/proc/kallsyms", text, true) > 1000);
	free(text);
}

static void test_rules(void **state)
{
	static const char text[] = "ffffffff81000000 T _text\n"
				   "ffffffff81000000 T startup_64\n"
				   "ffffffff81000000 t alias_three\n"
				   "ffffffff81001000 t $a\n"
				   "0000000000000000 A fixed_percpu_data\n"
				   "ffffffff81002000 a abs_sym\n"
				   "ffffffffc0000000 t mod_func\t[mymod]\n"
				   "ffffffffc0001000 T mod_func2\t[othermod]\n"
				   "\n"
				   "ffffffff81003000 W weak_one   \n"
				   " ffffffff81004000 t lead_space\n"
				   "ffffffffc0002000 t tab_no_bracket\tmymod\n"
				   "ffffffffc0003000 t two_tabs\t\t[mymod]\n"
				   "ffffffffc0004000 t empty_mod\t[\n"
				   "FFFFFFFF81005000 T upper_hex\n"
				   "1 t short_addr\n"
				   "ffffffff81006000 Tglued\n"
				   "ffffffff81007000\tt\ttabs_between\n"
				   "ffffffffc0005000 t mod_no_close\t[mymod\n"
				   "ffffffffc0006000 t space_bracket [mymod]\n"
				   "ffffffff81008000 t last_no_newline";

	(void)state;
	assert_int_equal(same("rules", text, true), 17); /* counted by hand */
}

/* In address order, with runs of aliases (which one a lookup names depends on the order
 * libtraceevent's sort leaves them in) */
static void test_sorted_aliases(void **state)
{
	static const char text[] = "ffffffff81000000 T _text\n"
				   "ffffffff81000000 T startup_64\n"
				   "ffffffff81000000 t alias_three\n"
				   "ffffffff81000010 t one\n"
				   "ffffffff81000020 t two\n"
				   "ffffffff81000020 t two_b\n"
				   "ffffffff81000030 t three\n"
				   "ffffffff81000030 t three_b\n"
				   "ffffffff81000030 t three_c\n"
				   "ffffffff81000030 t three_d\n"
				   "ffffffffc0000000 t mod_a\t[mymod]\n"
				   "ffffffffc0000000 t mod_b\t[mymod]\n";

	(void)state;
	assert_int_equal(same("sorted, aliases", text, true), 12);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"ffffffff81000000 T good\nffffffff81001000 T\nffffffff81002000 T after\n",
		"0xffffffff81000000 T hexprefix\n",
		"-1 T negative\n",
		"ffffffff810000001 T seventeen_digits\n",
		"garbage line\nffffffff81000000 T x\n",
		"ffffffffc0000000 t spaced_mod\t[ mymod]\nffffffff81000000 T y\n",
		"ffffffff81000000\n",
		"ffffffff81000000 T ok\nffffffff81000000 \n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char what[32];

		snprintf(what, sizeof(what), "malformed %zu", i + 1);
		same(what, bad[i], false);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_this_machine),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_sorted_aliases),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
