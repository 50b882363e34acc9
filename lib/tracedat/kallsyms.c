// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A file's kallsyms, read without libtraceevent's sscanf().
 *
 * tep_parse_kallsyms() (libtraceevent 1.7) reads each line with
 * sscanf("%16llx %c %n%*s%n%*1[\t][%n%*s%n"), 3 % of a report of a 2.5 M-event recording
 * and paid again by every formatting thread's own handle. Here a line is read by hand,
 * giving the symbols its parser would give, in the same order, with the same name,
 * address and module (hgt__kallsyms_own() registers them so, and its test holds the two
 * handles' maps side by side): aliases at one address in the same order included. Any
 * line that is not plainly "ADDRESS TYPE NAME[\t[MODULE]]" (a sign or 0x before the
 * address, more than 16 hex digits, no name, a blank after '[') sends the whole text to
 * tep_parse_kallsyms() instead, which then does what it does with it.
 *
 * A file opened to be printed goes further (hgt__ksyms_new()): nothing is registered.
 * libtraceevent's registration is a malloc() and two strdup()s per symbol, and its function
 * map is built at the first lookup by a sort of all of them: for a recording's 150,000
 * symbols, 9 % of a one-thread report. Here the symbols stay in the text they were read
 * from, in one array already in the order libtraceevent's map would have, and the handle
 * looks them up through tep_set_function_resolver(), with the same binary search and the
 * same comparison as libtraceevent's own lookup: the same name for every address, aliases
 * included. The array is read-only once made: the formatting threads' handles share it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "tracedat-local.h"

/* the layout of libtraceevent's function map entries */
struct ksym {
	unsigned long long addr;
	const char *func, *mod;
};

struct hgt__ksyms {
	char *text;	  /* the names and modules point into it */
	struct ksym *map; /* n entries in libtraceevent's map order, then a zero one */
	size_t n;
};

static const char *skip_blank(const char *p, const char *e)
{
	while (p < e && isspace((unsigned char)*p))
		p++;
	return p;
}

static const char *skip_word(const char *p, const char *e)
{
	while (p < e && !isspace((unsigned char)*p))
		p++;
	return p;
}

/* One line [@p, @e) of @copy (written into: names and modules end in NULs as in
 * libtraceevent). Returns 1 with *@k set for a symbol to register, 0 for one it skips
 * ('$' names, absolute 'A' and 'a' symbols), -1 for a line this reader leaves to
 * libtraceevent. */
static int read_line(char *p, char *e, struct ksym *k)
{
	char *fs, *fe, ch;
	int digits = 0;

	p = (char *)skip_blank(p, e);
	if (p < e && (*p == '+' || *p == '-' || (p[0] == '0' && p + 1 < e && (p[1] | 0x20) == 'x')))
		return -1;
	k->addr = 0;
	for (; p < e && isxdigit((unsigned char)*p); p++, digits++)
		k->addr = k->addr << 4 |
			  (unsigned long long)(isdigit((unsigned char)*p) ? *p - '0'
									  : (*p | 0x20) - 'a' + 10);
	if (!digits || digits > 16)
		return -1;
	p = (char *)skip_blank(p, e);
	if (p == e)
		return -1;
	ch = *p++;
	fs = (char *)skip_blank(p, e);
	fe = (char *)skip_word(fs, e);
	if (fe == fs)
		return -1;
	k->func = fs;
	k->mod = NULL;
	if (fe + 1 < e && fe[0] == '\t' && fe[1] == '[') {
		char *ms = fe + 2, *me;

		if (ms < e && isspace((unsigned char)*ms))
			return -1;
		me = (char *)skip_word(ms, e);
		if (me > ms) {
			me[-1] = 0; /* the ']' */
			k->mod = ms;
		}
	}
	if (fs[0] == '$' || ch == 'A' || ch == 'a')
		return 0;
	*fe = 0;
	return 1;
}

/* The symbols of @copy (written into), in its order, into *@out (one entry more than
 * *@n: room for the zero one). Returns 0, -EINVAL for a line left to libtraceevent, or
 * -ENOMEM. */
static int read_all(char *copy, struct ksym **out, size_t *nout)
{
	char *p, *e, *next;
	struct ksym *k = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;

	for (p = copy; *p && !ret; p = next) {
		e = strchrnul(p, '\n');
		next = *e ? e + 1 : e; /* before the line's NULs are written */
		if (e == p)
			continue; /* strtok_r() skips empty lines */
		if (n + 1 >= cap) {
			struct ksym *nk = realloc(k, (cap = cap ? 2 * cap : 4096) * sizeof(*k));

			if (!nk) {
				ret = -ENOMEM;
				break;
			}
			k = nk;
		}
		switch (read_line(p, e, &k[n])) {
		case 1:
			n++;
			break;
		case 0:
			break;
		default:
			ret = -EINVAL;
		}
	}
	if (!ret && !k)
		k = calloc(1, sizeof(*k));
	if (ret || !k) {
		free(k);
		return ret ? ret : -ENOMEM;
	}
	*out = k;
	*nout = n;
	return 0;
}

/**
 * hgt__kallsyms_own - every symbol of the NUL-terminated @text registered in @tep in
 * tep_parse_kallsyms()'s order. Returns 0, or -EINVAL for a text with a line this reader
 * leaves to libtraceevent (nothing registered then), or -ENOMEM.
 */
int hgt__kallsyms_own(struct tep_handle *tep, const char *text)
{
	char *copy = strdup(text);
	struct ksym *k = NULL;
	size_t n = 0;
	int ret;

	if (!copy)
		return -ENOMEM;
	ret = read_all(copy, &k, &n);
	for (size_t i = 0; i < n && !ret; i++)
		tep_register_function(tep, (char *)k[i].func, k[i].addr, (char *)k[i].mod);
	free(copy);
	if (!ret)
		free(k);
	return ret;
}

/* (address, then place in the registration order reversed): libtraceevent's map is the
 * symbols last registered first, sorted by address with glibc's qsort(), a merge sort
 * there (stable): aliases at one address stay last registered first. A total order gives
 * that whatever the sort. */
struct ranked {
	struct ksym k;
	size_t rank;
};

static int by_addr_rank(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->k.addr != y->k.addr)
		return x->k.addr < y->k.addr ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* @k (@n symbols in registration order) into libtraceevent's map order. */
static int map_order(struct ksym *k, size_t n)
{
	bool sorted = true;
	struct ranked *r;

	for (size_t i = 1; i < n && sorted; i++)
		sorted = k[i - 1].addr <= k[i].addr;
	if (sorted) { /* /proc/kallsyms' usual case: each run of aliases turned round */
		for (size_t i = 0, j; i < n; i = j) {
			for (j = i + 1; j < n && k[j].addr == k[i].addr;)
				j++;
			for (size_t a = i, b = j - 1; a < b; a++, b--) {
				struct ksym t = k[a];

				k[a] = k[b];
				k[b] = t;
			}
		}
		return 0;
	}
	r = malloc(n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		r[i] = (struct ranked){ k[n - 1 - i], i };
	qsort(r, n, sizeof(*r), by_addr_rank);
	for (size_t i = 0; i < n; i++)
		k[i] = r[i].k;
	free(r);
	return 0;
}

/**
 * hgt__ksyms_new - the symbols of the NUL-terminated @text as a table for
 * hgt__ksyms_resolve(). NULL with errno EINVAL for a text with a line this reader leaves
 * to libtraceevent, or ENOMEM.
 */
struct hgt__ksyms *hgt__ksyms_new(const char *kallsyms)
{
	struct hgt__ksyms *t = calloc(1, sizeof(*t));
	char *text = strdup(kallsyms);
	int ret = t && text ? read_all(text, &t->map, &t->n) : -ENOMEM;

	if (!ret)
		ret = map_order(t->map, t->n);
	if (ret) {
		if (t)
			free(t->map);
		free(t);
		free(text);
		errno = -ret;
		return NULL;
	}
	t->map[t->n] = (struct ksym){ 0, NULL, NULL };
	t->text = text;
	return t;
}

void hgt__ksyms_free(struct hgt__ksyms *t)
{
	if (!t)
		return;
	free(t->map);
	free(t->text);
	free(t);
}

/* libtraceevent's lookup comparison: the entry whose address is the key's, or the one
 * below it when the next entry's is above (the zero entry after the last stops it) */
static int in_range(const void *key, const void *entry)
{
	const struct ksym *a = key, *e = entry;

	if (a->addr == e->addr || (a->addr > e->addr && a->addr < e[1].addr))
		return 0;
	return a->addr < e->addr ? -1 : 1;
}

/**
 * hgt__ksyms_resolve - a tep_func_resolver_t over the table @priv: the name of the
 * function holding *@addrp (NULL when none), *@addrp set to its start, *@modp to its
 * module. Safe from several threads.
 */
/* The entry of @t that libtraceevent's lookup finds for @addr, or NULL. */
static const struct ksym *find(const struct hgt__ksyms *t, unsigned long long addr)
{
	struct ksym key = { .addr = addr };

	return bsearch(&key, t->map, t->n, sizeof(*t->map), in_range);
}

char *hgt__ksyms_resolve(void *priv, unsigned long long *addrp, char **modp)
{
	const struct ksym *f = find(priv, *addrp);

	if (!f)
		return NULL;
	*addrp = f->addr;
	*modp = (char *)f->mod;
	return (char *)f->func;
}

/**
 * hgt__ksyms_range - the function of the table @t holding @addr, as hgt__ksyms_resolve()
 * names it (NULL when none), its start in *@start, and in [*@lo, *@hi) the addresses whose
 * lookup names that same entry: up to the next symbol's address (empty for the last
 * symbol, which the lookup finds only at its start). An entry with aliases at its address
 * is found alone only past its start (*@lo = start + 1): at the start itself the binary
 * search may stop at any of them.
 */
const char *hgt__ksyms_range(const struct hgt__ksyms *t, unsigned long long addr,
			     unsigned long long *start, unsigned long long *lo,
			     unsigned long long *hi)
{
	const struct ksym *f = find(t, addr);

	if (!f)
		return NULL;
	*start = f->addr;
	*lo = f > t->map && f[-1].addr == f->addr ? f->addr + 1 : f->addr;
	*hi = f[1].addr; /* the zero entry after the last: an empty range */
	return f->func;
}

const struct hgt__ksyms *hgt__input_ksyms(const struct hgt_input *in)
{
	return in->ksyms;
}
