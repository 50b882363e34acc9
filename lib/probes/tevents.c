// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * trace-events files, QEMU's grammar: one event per line,
 *   [props] name(type arg, ...) ["format" [PRIx64 "..."]]
 * props disable, vcpu and tcg (a tcg event has two formats, "trans", "exec").
 * Every mistake is reported as FILE:LINE: what.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/probegen.h>
#include <hgtrace/probes.h>

static int __attribute__((format(printf, 5, 6)))
fail(char *err, size_t errsz, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errsz, "%s:%d: ", file, line);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errsz)
		vsnprintf(err + n, errsz - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int is_ident(const char *s)
{
	if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/*
 * The kind of an argument type (LP64), or 0 when the type is not allowed. Integer types
 * are parsed as C spells them: the words signed, unsigned, char, short, int, long (twice
 * at most) in any order and combination C allows ("long unsigned int", "signed short"),
 * or one of the standard typedefs; const and volatile anywhere, also after a '*'.
 */
static int type_kind(const char *type, int tcg_ok, int *is_tcg)
{
	static const struct {
		const char *name;
		int kind;
	} typedefs[] = {
		{ "bool", HGT_PROBE_BOOL },	{ "_Bool", HGT_PROBE_BOOL },
		{ "int8_t", HGT_PROBE_S8 },	{ "int16_t", HGT_PROBE_S16 },
		{ "int32_t", HGT_PROBE_S32 },	{ "int64_t", HGT_PROBE_S64 },
		{ "uint8_t", HGT_PROBE_U8 },	{ "uint16_t", HGT_PROBE_U16 },
		{ "uint32_t", HGT_PROBE_U32 },	{ "uint64_t", HGT_PROBE_U64 },
		{ "size_t", HGT_PROBE_U64 },	{ "ssize_t", HGT_PROBE_S64 },
		{ "uintptr_t", HGT_PROBE_U64 }, { "ptrdiff_t", HGT_PROBE_S64 },
		{ "intptr_t", HGT_PROBE_S64 },	{ "intmax_t", HGT_PROBE_S64 },
		{ "uintmax_t", HGT_PROBE_U64 },
	};
	int sign = 0, nchar = 0, nshort = 0, nint = 0, nlong = 0, nvoid = 0, stars = 0, kind;
	const char *tdef = NULL;
	char buf[128];

	*is_tcg = 0;
	if (strlen(type) >= sizeof(buf))
		return 0;
	snprintf(buf, sizeof(buf), "%s", type);
	for (char *p = buf; *p; p++)
		if (*p == '*') {
			stars++;
			*p = ' ';
		}
	for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w;
	     w = strtok_r(NULL, " \t", &save)) {
		if (!strcmp(w, "const") || !strcmp(w, "volatile"))
			continue;
		if (!strcmp(w, "signed") || !strcmp(w, "unsigned")) {
			if (sign)
				return 0;
			sign = w[0] == 's' ? 1 : 2;
		} else if (!strcmp(w, "char")) {
			nchar++;
		} else if (!strcmp(w, "short")) {
			nshort++;
		} else if (!strcmp(w, "int")) {
			nint++;
		} else if (!strcmp(w, "long")) {
			nlong++;
		} else if (!strcmp(w, "void")) {
			nvoid++;
		} else if (!tdef) {
			tdef = w; /* a typedef name: alone but for qualifiers */
		} else {
			return 0;
		}
	}
	if (tdef) {
		if (sign || nchar || nshort || nint || nlong || nvoid)
			return 0;
		if (tcg_ok && !stars &&
		    (!strcmp(tdef, "TCGv") || !strcmp(tdef, "TCGv_i32") ||
		     !strcmp(tdef, "TCGv_i64") || !strcmp(tdef, "TCGv_ptr"))) {
			*is_tcg = 1;
			return HGT_PROBE_U64;
		}
		for (size_t i = 0; i < sizeof(typedefs) / sizeof(typedefs[0]); i++)
			if (!strcmp(tdef, typedefs[i].name))
				return stars ? HGT_PROBE_PTR : typedefs[i].kind;
		return 0; /* struct pointers must be void * */
	}
	if (nvoid)
		return nvoid == 1 && !sign && !nchar && !nshort && !nint && !nlong && stars
			       ? HGT_PROBE_PTR
			       : 0;
	/* at most one base word, short or long (twice) with an optional int */
	if (nchar > 1 || nshort > 1 || nint > 1 || nlong > 2 ||
	    (nchar && (nshort || nint || nlong)) || (nshort && nlong))
		return 0;
	if (nchar)
		kind = sign == 2 ? HGT_PROBE_U8 : HGT_PROBE_S8;
	else if (nshort)
		kind = sign == 2 ? HGT_PROBE_U16 : HGT_PROBE_S16;
	else if (nlong)
		kind = sign == 2 ? HGT_PROBE_U64 : HGT_PROBE_S64; /* LP64 */
	else if (nint || sign)
		kind = sign == 2 ? HGT_PROBE_U32 : HGT_PROBE_S32;
	else
		return 0; /* nothing but qualifiers */
	if (stars == 1 && nchar && !sign)
		return HGT_PROBE_STR; /* char *, const char *: strings (as tracetool) */
	return stars ? HGT_PROBE_PTR : kind;
}

/* Check a format: string literals, PRI macros, whitespace; a tcg event's one comma. */
static int check_fmt(const char *f, int tcg, char **second, const char *file, int line, char *err,
		     size_t errsz)
{
	const char *p = f;
	int commas = 0;

	*second = NULL;
	while (*p) {
		if (isspace((unsigned char)*p)) {
			p++;
		} else if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\') {
					if (p[1] == 'n')
						return fail(
							err, errsz, file, line,
							"the format holds '\\n' (backends end lines themselves)");
					if (p[1])
						p++;
				} else if (*p == '%' && p[1] == 'm') {
					return fail(
						err, errsz, file, line,
						"'%%m' in the format: pass errno as an argument");
				} else if (*p == '%' && p[1] == '%') {
					p++;
				}
			}
			if (*p != '"')
				return fail(err, errsz, file, line,
					    "unterminated string in the format");
			p++;
		} else if (!strncmp(p, "PRI", 3)) {
			const char *s = p;

			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
			if (p - s < 5)
				return fail(err, errsz, file, line, "'%.*s' is not a PRI macro",
					    (int)(p - s), s);
		} else if (isupper((unsigned char)*p) || *p == '_') {
			/* a program's own format macro (QEMU's HWADDR_PRIx): the C the
			 * generator writes keeps it, and the program's headers resolve it */
			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
		} else if (*p == ',' && tcg && !commas) {
			commas++;
			*second = (char *)p;
			p++;
		} else {
			return fail(
				err, errsz, file, line,
				"unexpected '%c' in the format (string literals, PRI macros and format macros such as HWADDR_PRIx only)",
				*p);
		}
	}
	if (tcg && !commas)
		return fail(err, errsz, file, line,
			    "a tcg event needs two formats: \"trans format\", \"exec format\"");
	return 0;
}

static int parse_args(char *text, struct hgt_tev *ev, const char *file, int line, char *err,
		      size_t errsz)
{
	char *save = NULL, *a;
	int n = 0;

	text = trim(text);
	if (!strcmp(text, "void"))
		return 0;
	if (!*text)
		return fail(err, errsz, file, line, "no arguments: write 'void'");
	for (char *p = text; *p; p++)
		n += *p == ',';
	if (n + 1 > HGT_TEV_MAX_ARGS)
		return fail(err, errsz, file, line, "%d arguments; at most %d", n + 1,
			    HGT_TEV_MAX_ARGS);
	ev->args = calloc((size_t)n + 2, sizeof(*ev->args));
	if (!ev->args)
		return -ENOMEM;
	/* strtok_r would skip empty arguments: walk by hand. */
	for (a = text; a; a = save) {
		char *c = strchr(a, ','), *star, *name, *type, namebuf[256];
		struct hgt_tev_arg *arg = &ev->args[ev->nargs];
		int tcg;

		save = c ? c + 1 : NULL;
		if (c)
			*c = '\0';
		a = trim(a);
		if (!*a)
			return fail(err, errsz, file, line,
				    "empty argument (did you forget to use 'void'?)");
		star = strrchr(a, '*');
		if (star) {
			/* "const char *s": the type keeps the '*', the name follows it; in
			 * "void * const p" the qualifier after the '*' stays with the type */
			char *sp;

			snprintf(namebuf, sizeof(namebuf), "%s", star + 1);
			name = trim(namebuf);
			sp = name + strlen(name);
			while (sp > name && !isspace((unsigned char)sp[-1]))
				sp--;
			star[1 + (sp - name) + (size_t)(name - namebuf)] = '\0';
			name = sp;
			type = trim(a);
		} else {
			char *sp = a + strlen(a);

			while (sp > a && !isspace((unsigned char)sp[-1]))
				sp--;
			if (sp == a)
				return fail(err, errsz, file, line, "argument '%s' has no type", a);
			name = sp;
			sp[-1] = '\0';
			type = trim(a);
		}
		if (!is_ident(name))
			return fail(err, errsz, file, line, "'%s' is not an argument name", name);
		arg->kind = type_kind(type, ev->props & HGT_TEV_TCG, &tcg);
		if (!arg->kind)
			return fail(
				err, errsz, file, line,
				"argument '%s': type '%s' is not allowed (integers, bool, char *, void *)",
				name, type);
		for (int i = 0; i < ev->nargs; i++)
			if (!strcmp(ev->args[i].name, name))
				return fail(err, errsz, file, line, "argument '%s' twice", name);
		arg->tcg = tcg;
		arg->type = strdup(type);
		arg->name = strdup(name);
		ev->nargs++; /* counted now: free_event() frees what was copied */
		if (!arg->type || !arg->name)
			return -ENOMEM;
	}
	return 0;
}

static void free_event(struct hgt_tev *ev)
{
	for (int i = 0; i < ev->nargs; i++) {
		free(ev->args[i].type);
		free(ev->args[i].name);
	}
	free(ev->args);
	free(ev->name);
	free(ev->fmt);
	free(ev->fmt_exec);
}

static int parse_line(char *s, struct hgt_tev *ev, const char *file, int line, char *err,
		      size_t errsz)
{
	char *open = strchr(s, '('), *close, *head, *rest, *words[8], *save = NULL;
	int nw = 0, r;

	if (!open)
		return fail(err, errsz, file, line, "expected 'name(arguments) \"format\"'");
	close = strchr(open, ')');
	if (!close)
		return fail(err, errsz, file, line, "no ')' after the arguments");
	*open = '\0';
	*close = '\0';
	head = trim(s);
	for (char *w = strtok_r(head, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (nw == 8)
			return fail(err, errsz, file, line, "too many properties");
		words[nw++] = w;
	}
	if (!nw || !is_ident(words[nw - 1]))
		return fail(err, errsz, file, line, "expected an event name before '('");
	for (int i = 0; i < nw - 1; i++) {
		if (!strcmp(words[i], "disable"))
			ev->props |= HGT_TEV_DISABLE;
		else if (!strcmp(words[i], "vcpu"))
			ev->props |= HGT_TEV_VCPU;
		else if (!strcmp(words[i], "tcg"))
			ev->props |= HGT_TEV_TCG;
		else
			return fail(err, errsz, file, line,
				    "unknown property '%s' (disable, vcpu, tcg)", words[i]);
	}
	ev->name = strdup(words[nw - 1]);
	if (!ev->name)
		return -ENOMEM;
	if (ev->props & HGT_TEV_VCPU) {
		char *args = NULL;

		if (asprintf(&args, "void *__cpu%s%s", strcmp(trim(open + 1), "void") ? ", " : "",
			     strcmp(trim(open + 1), "void") ? trim(open + 1) : "") < 0)
			return -ENOMEM;
		r = parse_args(args, ev, file, line, err, errsz);
		free(args);
	} else {
		r = parse_args(open + 1, ev, file, line, err, errsz);
	}
	if (r)
		return r;
	rest = trim(close + 1);
	if (*rest && *rest != '"')
		return fail(err, errsz, file, line, "expected a \"format\" after ')', found '%s'",
			    rest);
	if (*rest) {
		char *second;

		r = check_fmt(rest, ev->props & HGT_TEV_TCG, &second, file, line, err, errsz);
		if (r)
			return r;
		if (second) {
			*second = '\0';
			ev->fmt_exec = strdup(trim(second + 1));
			if (!ev->fmt_exec)
				return -ENOMEM;
		}
		ev->fmt = strdup(trim(rest));
		if (!ev->fmt)
			return -ENOMEM;
	} else if (ev->props & HGT_TEV_TCG) {
		return fail(err, errsz, file, line,
			    "a tcg event needs two formats: \"trans format\", \"exec format\"");
	}
	if (ev->props & HGT_TEV_VCPU) {
		for (char **f = &ev->fmt; f; f = f == &ev->fmt ? &ev->fmt_exec : NULL) {
			char *n = NULL;

			if (!*f && f != &ev->fmt)
				continue;
			if (asprintf(&n, "\"cpu=%%p \" %s", *f ? *f : "") < 0)
				return -ENOMEM;
			free(*f);
			*f = n;
		}
	}
	return 0;
}

/**
 * hgt_tev_parse - append the events of the trace-events file @path to @l.
 * Returns 0, or a negative errno with "FILE:LINE: what is wrong" in @err.
 */
int hgt_tev_parse(const char *path, struct hgt_tev_list *l, char *err, size_t errsz)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, **files, *name;
	size_t cap = 0, first = l->n;
	int no = 0, ret = 0;
	ssize_t len;

	if (!f) {
		ret = -errno;
		snprintf(err, errsz, "%s: %s", path, strerror(errno));
		return ret;
	}
	files = realloc(l->files, (l->nfiles + 1) * sizeof(*files));
	name = strdup(path);
	if (!files || !name) {
		free(name);
		if (files)
			l->files = files;
		fclose(f);
		return -ENOMEM;
	}
	l->files = files;
	l->files[l->nfiles++] = name;
	while ((len = getline(&line, &cap, f)) >= 0) {
		struct hgt_tev ev = { .file = name }, *grown;
		char *s;

		no++;
		if ((size_t)len != strlen(line)) {
			ret = fail(err, errsz, path, no, "a NUL byte in the line");
			break;
		}
		s = trim(line);
		if (!*s || *s == '#')
			continue;
		ev.line = no;
		ret = parse_line(s, &ev, path, no, err, errsz);
		if (!ret) {
			for (size_t i = 0; i < l->n; i++)
				if (!strcmp(l->ev[i].name, ev.name)) {
					ret = fail(err, errsz, path, no,
						   "event '%s' is already declared at %s:%d",
						   ev.name, l->ev[i].file, l->ev[i].line);
					break;
				}
		}
		if (ret) {
			free_event(&ev);
			break;
		}
		grown = realloc(l->ev, (l->n + 1) * sizeof(*grown));
		if (!grown) {
			free_event(&ev);
			ret = -ENOMEM;
			break;
		}
		l->ev = grown;
		l->ev[l->n++] = ev;
	}
	free(line);
	fclose(f);
	if (ret) { /* all or nothing */
		for (size_t i = first; i < l->n; i++)
			free_event(&l->ev[i]);
		l->n = first;
		if (ret == -ENOMEM)
			snprintf(err, errsz, "%s: out of memory", path);
	}
	return ret;
}

/** hgt_tev_free - free what hgt_tev_parse() appended to @l. */
void hgt_tev_free(struct hgt_tev_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free_event(&l->ev[i]);
	free(l->ev);
	for (size_t i = 0; i < l->nfiles; i++)
		free(l->files[i]);
	free(l->files);
	memset(l, 0, sizeof(*l));
}

/**
 * hgt_tev_expand_fmt - @ev's format as one string with PRI macros expanded (LP64).
 * Returns 0 or -EINVAL.
 */
int hgt_tev_expand_fmt(const struct hgt_tev *ev, int exec, char *buf, size_t sz)
{
	const char *p = exec ? ev->fmt_exec : ev->fmt;
	size_t n = 0;

#define PUT(c)                          \
	do {                            \
		if (n + 1 >= sz)        \
			return -EINVAL; \
		buf[n++] = (c);         \
	} while (0)
	if (!sz)
		return -EINVAL;
	for (; p && *p;) {
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1]) {
					static const char from[] = "nrtab\\\"'",
							  to[] = "\n\r\t\a\b\\\"'";
					const char *x = strchr(from, p[1]);

					p++;
					PUT(x ? to[x - from] : *p);
				} else {
					PUT(*p);
				}
			}
			if (*p)
				p++;
		} else if (!strncmp(p, "PRI", 3) && p[3]) {
			const char *w = p + 4, *len = "";
			char conv = p[3];

			if (!strncmp(w, "FAST", 4) || !strncmp(w, "LEAST", 5))
				w += w[0] == 'F' ? 4 : 5;
			if (!strncmp(w, "8", 1))
				len = "hh";
			else if (!strncmp(w, "16", 2))
				len = "h";
			else if (!strncmp(w, "32", 2))
				len = "";
			else if (!strncmp(w, "64", 2) || !strncmp(w, "PTR", 3) ||
				 !strncmp(w, "MAX", 3))
				len = "l";
			for (; *len; len++)
				PUT(*len);
			PUT(conv);
			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
		} else if (isupper((unsigned char)*p) || *p == '_') {
			/* a program's macro: its conversion is the letter after "PRI"
			 * (HWADDR_PRIx: x); its length only the program knows */
			const char *s = p, *pri;

			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
			pri = memmem(s, (size_t)(p - s), "_PRI", 4);
			if (!pri || pri + 4 >= p)
				return -EINVAL;
			PUT(pri[4]);
		} else {
			p++;
		}
	}
#undef PUT
	buf[n] = '\0';
	return 0;
}
