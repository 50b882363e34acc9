// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A file's kallsyms handed to libtraceevent without its sscanf().
 *
 * tep_parse_kallsyms() (libtraceevent 1.7) reads each line with
 * sscanf("%16llx %c %n%*s%n%*1[\t][%n%*s%n"), 3 % of a report of a 2.5 M-event recording
 * and paid again by every formatting thread's own handle. Here a line is read by hand and
 * each symbol registered with tep_register_function() in the same order with the same
 * name, address and module, so libtraceevent holds exactly what its own parser would give
 * it: the same symbols, aliases at one address in the same order, the same modules. Any
 * line that is not plainly "ADDRESS TYPE NAME[\t[MODULE]]" (a sign or 0x before the
 * address, more than 16 hex digits, no name, a blank after '[') sends the whole text to
 * tep_parse_kallsyms() instead, which then does what it does with it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "tracedat-local.h"

struct ksym {
	unsigned long long addr;
	const char *func, *mod;
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

/**
 * hgt__kallsyms_own - every symbol of the NUL-terminated @text registered in @tep in
 * tep_parse_kallsyms()'s order. Returns 0, or -EINVAL for a text with a line this reader
 * leaves to libtraceevent (nothing registered then), or -ENOMEM.
 */
int hgt__kallsyms_own(struct tep_handle *tep, const char *text)
{
	char *copy = strdup(text), *p, *e, *next;
	struct ksym *k = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (p = copy; *p && !ret; p = next) {
		e = strchrnul(p, '\n');
		next = *e ? e + 1 : e; /* before the line's NULs are written */
		if (e == p)
			continue; /* strtok_r() skips empty lines */
		if (n == cap) {
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
	for (size_t i = 0; i < n && !ret; i++)
		tep_register_function(tep, (char *)k[i].func, k[i].addr, (char *)k[i].mod);
	free(copy);
	free(k);
	return ret;
}

/**
 * hgt__parse_kallsyms - what tep_parse_kallsyms(@tep, @text) does, faster where it can
 * (hgt__kallsyms_own()), else by tep_parse_kallsyms() itself. Returns as libtraceevent.
 */
int hgt__parse_kallsyms(struct tep_handle *tep, const char *text)
{
	return hgt__kallsyms_own(tep, text) ? tep_parse_kallsyms(tep, text) : 0;
}
