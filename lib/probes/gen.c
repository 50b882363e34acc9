// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The code generator: trace-events -> a header of inline trace_<name>() functions (h),
 * the C file with the registry entries and the out-of-line backend code (c), a DTrace
 * provider (d), a SystemTap tapset (stp) and an LTTng-UST provider (ust).
 *
 * Generated trace_<name>(): USDT and LTTng probes first (they keep their own state: a
 * semaphore, LTTng's enable flag), then one predictable branch on the event's state byte
 * around an out-of-line call that feeds log, simple, ftrace and syslog in that order.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/probegen.h>
#include <hgtrace/probes.h>

#define B_STATE (HGT_PROBE_B_LOG | HGT_PROBE_B_SIMPLE | HGT_PROBE_B_FTRACE | HGT_PROBE_B_SYSLOG)

struct em {
	FILE *out;
	long line; /* lines written so far */
	const char *name;
	int err;
};

static void __attribute__((format(printf, 2, 3))) emit(struct em *e, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		e->err = -ENOMEM;
		return;
	}
	for (char *p = s; *p; p++)
		e->line += *p == '\n';
	if (fputs(s, e->out) < 0)
		e->err = -EIO;
	free(s);
}

/* One half of an event as generated: a plain event, or a tcg event's _trans or _exec. */
struct half {
	const struct hgt_tev *t;
	char name[160];
	char upper[160];
	const char *fmt; /* C tokens, or NULL */
	int trans;	 /* drop tcg arguments */
	unsigned int flags;
};

static int halves(const struct hgt_tev *t, struct half h[2])
{
	int n = 1;

	memset(h, 0, 2 * sizeof(*h));
	h[0].t = t;
	h[0].fmt = t->fmt;
	if (t->props & HGT_TEV_DISABLE)
		h[0].flags |= HGT_PROBE_F_DISABLE;
	if (t->props & HGT_TEV_VCPU)
		h[0].flags |= HGT_PROBE_F_VCPU;
	if (t->props & HGT_TEV_TCG) {
		h[1] = h[0];
		snprintf(h[0].name, sizeof(h[0].name), "%s_trans", t->name);
		snprintf(h[1].name, sizeof(h[1].name), "%s_exec", t->name);
		h[0].trans = 1;
		h[0].flags |= HGT_PROBE_F_TCG_TRANS;
		h[1].flags |= HGT_PROBE_F_TCG_EXEC;
		h[1].fmt = t->fmt_exec;
		n = 2;
	} else {
		snprintf(h[0].name, sizeof(h[0].name), "%s", t->name);
	}
	for (int i = 0; i < n; i++)
		for (char *s = h[i].name, *u = h[i].upper; *s; s++, u++)
			*u = (char)toupper((unsigned char)*s);
	return n;
}

static int use_arg(const struct half *h, int i)
{
	return !(h->trans && h->t->args[i].tcg);
}

static const char *ctype(const struct hgt_tev_arg *a)
{
	return a->tcg ? "uint64_t" : a->type;
}

/* "int a, const char *s" or "void" */
static void params(struct em *e, const struct half *h)
{
	int any = 0;

	for (int i = 0; i < h->t->nargs; i++) {
		const char *ty;

		if (!use_arg(h, i))
			continue;
		ty = ctype(&h->t->args[i]);
		emit(e, "%s%s%s%s", any ? ", " : "", ty, ty[strlen(ty) - 1] == '*' ? "" : " ",
		     h->t->args[i].name);
		any = 1;
	}
	if (!any)
		emit(e, "void");
}

/* ", a, s" (with a leading comma when @lead) or "a, s" */
static void argnames(struct em *e, const struct half *h, int lead)
{
	int any = 0;

	for (int i = 0; i < h->t->nargs; i++) {
		if (!use_arg(h, i))
			continue;
		emit(e, "%s%s", lead || any ? ", " : "", h->t->args[i].name);
		any = 1;
	}
}

static int is_c_ident(const char *s)
{
	if (!*s || isdigit((unsigned char)*s))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void upper_of(char *dst, size_t sz, const char *s)
{
	size_t i = 0;

	for (; s[i] && i + 1 < sz; i++)
		dst[i] = (char)toupper((unsigned char)s[i]);
	dst[i] = '\0';
}

static int n_halves_all(const struct hgt_tev_list *l)
{
	int n = 0;

	for (size_t i = 0; i < l->n; i++)
		n += l->ev[i].props & HGT_TEV_TCG ? 2 : 1;
	return n;
}

/* ---- h ---- */

/* The DTrace and LTTng provider: --provider, else the group. */
static const char *provider(const struct hgt_gen_opts *o)
{
	return o->sz > offsetof(struct hgt_gen_opts, provider) && o->provider ? o->provider
									      : o->group;
}

static void gen_h_event(struct em *e, const struct hgt_gen_opts *o, const struct half *h)
{
	int off = h->flags & HGT_PROBE_F_DISABLE;
	char gu[128];

	upper_of(gu, sizeof(gu), provider(o)); /* dtrace -h names its macros PROVIDER_EVENT */
	/* The symbols carry the group: two groups may name the same event (a program that
	 * links both is told at registration); the TRACE_X tokens of the API stay. */
	emit(e, "\n#define _TRACE_%s_EVENT _hgt_%s__%s_event\n", h->upper, o->group, h->name);
	emit(e, "#define _TRACE_%s_DSTATE _hgt_%s__%s_dstate\n", h->upper, o->group, h->name);
	if (!off && (o->backends & B_STATE))
		emit(e, "#define _hgt_trace_%s _hgt_%s__trace_%s\n", h->name, o->group, h->name);
	emit(e, "extern struct hgt_probe_event _TRACE_%s_EVENT;\n", h->upper);
	emit(e, "extern unsigned char _TRACE_%s_DSTATE;\n", h->upper);
	emit(e, "#define TRACE_%s_ENABLED %d\n", h->upper, off ? 0 : 1);
	if (off) {
		emit(e, "#define TRACE_%s_BACKEND_DSTATE() 0\n", h->upper);
	} else {
		emit(e, "#define TRACE_%s_BACKEND_DSTATE() (", h->upper);
		emit(e, "__atomic_load_n(&_TRACE_%s_DSTATE, __ATOMIC_RELAXED)", h->upper);
		if (o->backends & HGT_PROBE_B_DTRACE)
			emit(e, " || %s_%s_ENABLED()", gu, h->upper);
		if (o->backends & HGT_PROBE_B_UST)
			emit(e, " || tracepoint_enabled(%s, %s)", provider(o), h->name);
		emit(e, ")\n");
	}
	if (!off && (o->backends & B_STATE)) {
		emit(e, "void _hgt_trace_%s(", h->name);
		params(e, h);
		emit(e, ");\n");
	}
	emit(e, "static inline void trace_%s(", h->name);
	params(e, h);
	emit(e, ")\n{\n");
	if (off) {
		for (int i = 0; i < h->t->nargs; i++)
			if (use_arg(h, i))
				emit(e, "\t(void)%s;\n", h->t->args[i].name);
	} else {
		int any = 0;

		if (o->backends & HGT_PROBE_B_DTRACE) {
			emit(e, "\tif (%s_%s_ENABLED())\n\t\t%s_%s(", gu, h->upper, gu, h->upper);
			argnames(e, h, 0);
			emit(e, ");\n");
			any = 1;
		}
		if (o->backends & HGT_PROBE_B_UST) {
			emit(e, "\ttracepoint(%s, %s", provider(o), h->name);
			argnames(e, h, 1);
			emit(e, ");\n");
			any = 1;
		}
		if (o->backends & B_STATE) {
			emit(e, "\tif (trace_event_get_state(TRACE_%s))\n\t\t_hgt_trace_%s(",
			     h->upper, h->name);
			argnames(e, h, 0);
			emit(e, ");\n");
			any = 1;
		}
		if (!any)
			for (int i = 0; i < h->t->nargs; i++)
				if (use_arg(h, i))
					emit(e, "\t(void)%s;\n", h->t->args[i].name);
	}
	emit(e, "}\n");
}

static void gen_h_tcg(struct em *e, const struct hgt_tev *t, const struct half h[2])
{
	emit(e,
	     "\n/* %s: the translation-time half fires now, the execution-time half is emitted into the generated code through @emit. */\n",
	     t->name);
	emit(e, "void trace_%s_exec_helper(", t->name);
	params(e, &h[1]);
	emit(e, ");\n");
	emit(e, "static inline void trace_%s_tcg(hgt_probe_tcg_emit_fn emit, void *jit", t->name);
	for (int i = 0; i < t->nargs; i++)
		if (!t->args[i].tcg)
			emit(e, ", %s%s%s", t->args[i].type,
			     t->args[i].type[strlen(t->args[i].type) - 1] == '*' ? "" : " ",
			     t->args[i].name);
	emit(e, ")\n{\n\ttrace_%s(", h[0].name);
	argnames(e, &h[0], 0);
	emit(e,
	     ");\n\tif (trace_event_get_state_backends(TRACE_%s))\n"
	     "\t\temit(jit, &_TRACE_%s_EVENT, (void (*)(void))trace_%s_exec_helper);\n"
	     "\telse\n\t\t(void)jit;\n}\n",
	     h[1].upper, h[1].upper, t->name);
}

static void gen_h(struct em *e, const struct hgt_gen_opts *o, const struct hgt_tev_list *l)
{
	char gu[128];

	upper_of(gu, sizeof(gu), o->group);
	emit(e, "#ifndef HGT_TRACE_%s_H\n#define HGT_TRACE_%s_H\n\n", gu, gu);
	emit(e,
	     "#include <inttypes.h>\n#include <stdbool.h>\n#include <stddef.h>\n#include <sys/types.h>\n#include <hgtrace/probes.h>\n");
	if (o->backends & HGT_PROBE_B_DTRACE)
		emit(e,
		     "#ifndef SDT_USE_VARIADIC\n#define SDT_USE_VARIADIC 1\n#endif\n"
		     "#include \"%s\"\n",
		     o->dtrace_header);
	if (o->backends & HGT_PROBE_B_UST)
		emit(e, "#include \"%s\"\n", o->ust_header);
	emit(e,
	     "\n#ifndef trace_event_get_state\n"
	     "/* Compile-time state, then one predictable branch on the event's byte. */\n"
	     "#define trace_event_get_state(id) \\\n"
	     "\t((id##_ENABLED) && __builtin_expect(__atomic_load_n(&_##id##_DSTATE, __ATOMIC_RELAXED), 0))\n"
	     "/* True when any backend (including USDT and LTTng listeners) wants the event. */\n"
	     "#define trace_event_get_state_backends(id) ((id##_ENABLED) && id##_BACKEND_DSTATE())\n"
	     "#endif\n");
	for (size_t i = 0; i < l->n; i++) {
		struct half h[2];
		int n = halves(&l->ev[i], h);

		for (int k = 0; k < n; k++)
			gen_h_event(e, o, &h[k]);
		if (n == 2)
			gen_h_tcg(e, &l->ev[i], h);
	}
	emit(e, "\n#endif\n");
}

/* ---- c ---- */

static const char *kind_name(int k)
{
	static const char *const n[] = { "0",
					 "HGT_PROBE_S8",
					 "HGT_PROBE_S16",
					 "HGT_PROBE_S32",
					 "HGT_PROBE_S64",
					 "HGT_PROBE_U8",
					 "HGT_PROBE_U16",
					 "HGT_PROBE_U32",
					 "HGT_PROBE_U64",
					 "HGT_PROBE_BOOL",
					 "HGT_PROBE_PTR",
					 "HGT_PROBE_STR" };

	return k >= 0 && k <= HGT_PROBE_STR ? n[k] : "0";
}

/* A C string literal for @s. */
static void cstr(struct em *e, const char *s)
{
	emit(e, "\"");
	for (; *s; s++)
		emit(e, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
	emit(e, "\"");
}

static void gen_simple(struct em *e, const struct half *h, uint32_t id)
{
	int strs = 0, scal = 0;

	for (int i = 0; i < h->t->nargs; i++) {
		if (!use_arg(h, i))
			continue;
		if (h->t->args[i].kind == HGT_PROBE_STR)
			emit(e, "\t\tuint32_t _l%d = hgt__probe_strlen(%s);\n", strs++,
			     h->t->args[i].name);
		else
			scal++;
	}
	emit(e, "\t\tuint64_t *_p = hgt__probe_reserve(%#xu, 24 + %d", id, 8 * scal);
	for (int i = 0; i < strs; i++)
		emit(e, " + HGT_PROBE_STR_SIZE(_l%d)", i);
	emit(e, ");\n\n\t\tif (_p) {\n");
	strs = 0;
	for (int i = 0; i < h->t->nargs; i++) {
		const struct hgt_tev_arg *a = &h->t->args[i];

		if (!use_arg(h, i))
			continue;
		switch (a->kind) {
		case HGT_PROBE_STR:
			emit(e, "\t\t\t_p = hgt__probe_put_str(_p, %s, _l%d);\n", a->name, strs++);
			break;
		case HGT_PROBE_PTR:
			emit(e, "\t\t\t*_p++ = (uint64_t)(uintptr_t)%s;\n", a->name);
			break;
		case HGT_PROBE_S8:
		case HGT_PROBE_S16:
		case HGT_PROBE_S32:
		case HGT_PROBE_S64:
			emit(e, "\t\t\t*_p++ = (uint64_t)(int64_t)%s;\n", a->name);
			break;
		default:
			emit(e, "\t\t\t*_p++ = (uint64_t)%s;\n", a->name);
		}
	}
	emit(e, "\t\t\thgt__probe_commit();\n\t\t}\n");
}

static void line_back(struct em *e)
{
	emit(e, "#line %ld \"%s\"\n", e->line + 2, e->name);
}

static void gen_c_event(struct em *e, const struct hgt_gen_opts *o, const struct half *h)
{
	const struct hgt_tev *t = h->t;
	uint32_t id = fnv1a(h->name);
	int off = h->flags & HGT_PROBE_F_DISABLE, used = 0;

	emit(e, "\n");
	for (int i = 0; i < t->nargs; i++)
		used += use_arg(h, i);
	if (used) {
		emit(e, "static const struct hgt_probe_arg _hgt_args_%s[] = {\n", h->name);
		for (int i = 0; i < t->nargs; i++) {
			if (!use_arg(h, i))
				continue;
			emit(e, "\t{ ");
			cstr(e, ctype(&t->args[i]));
			emit(e, ", \"%s\", %s },\n", t->args[i].name, kind_name(t->args[i].kind));
		}
		emit(e, "};\n");
	}
	emit(e, "unsigned char _TRACE_%s_DSTATE;\n", h->upper);
	emit(e,
	     "struct hgt_probe_event _TRACE_%s_EVENT = {\n\t.name = \"%s\",\n\t.fmt = ", h->upper,
	     h->name);
	if (h->fmt) {
		emit(e, "\n#line %d \"%s\"\n%s\n", t->line, t->file, h->fmt);
		line_back(e);
	} else {
		emit(e, "\"\"");
	}
	emit(e,
	     ",\n\t.args = %s%s,\n\t.id = %#xu,\n\t.nargs = %d,\n\t.flags = %#x,\n"
	     "\t.state = &_TRACE_%s_DSTATE,\n};\n",
	     used ? "_hgt_args_" : "NULL", used ? h->name : "", id, used, h->flags, h->upper);
	if (off || !(o->backends & B_STATE))
		return;
	emit(e, "\nvoid _hgt_trace_%s(", h->name);
	params(e, h);
	emit(e, ")\n{\n");
	for (int i = 0; i < t->nargs; i++) /* not every backend uses every argument */
		if (use_arg(h, i))
			emit(e, "\t(void)%s;\n", t->args[i].name);
	for (unsigned int b = 1; b & B_STATE; b <<= 1) {
		const char *fn = b == HGT_PROBE_B_LOG	   ? "hgt_probe_log"
				 : b == HGT_PROBE_B_FTRACE ? "hgt_probe_ftrace"
				 : b == HGT_PROBE_B_SYSLOG ? "hgt_probe_syslog"
							   : NULL;

		if (!(o->backends & b))
			continue;
		if (b == HGT_PROBE_B_SIMPLE) {
			emit(e, "\t{\n");
			gen_simple(e, h, id);
			emit(e, "\t}\n");
			continue;
		}
		emit(e, "#line %d \"%s\"\n\t%s(\"%s \" %s", t->line, t->file, fn, h->name,
		     h->fmt ? h->fmt : "\"\"");
		if (h->fmt) /* an event without a format prints its name only */
			argnames(e, h, 1);
		emit(e, ");\n");
		line_back(e);
	}
	emit(e, "}\n");
}

static void gen_c(struct em *e, const struct hgt_gen_opts *o, const struct hgt_tev_list *l)
{
	int n = n_halves_all(l), k = 0;

	/* LTTng defines its tracepoints and probes where its header is first read: here when
	 * the provider is the group's own; a provider several groups share (QEMU's "qemu")
	 * is defined once, by the file --format ust-c makes */
	if ((o->backends & HGT_PROBE_B_UST) && !strcmp(provider(o), o->group))
		emit(e, "#define TRACEPOINT_CREATE_PROBES\n#define TRACEPOINT_DEFINE\n");
	emit(e, "#include <stdint.h>\n#include <stddef.h>\n#include \"%s\"\n", o->header);
	for (size_t i = 0; i < l->n; i++) {
		struct half h[2];
		int m = halves(&l->ev[i], h);

		for (int j = 0; j < m; j++)
			gen_c_event(e, o, &h[j]);
		if (m == 2) {
			emit(e, "\nvoid trace_%s_exec_helper(", l->ev[i].name);
			params(e, &h[1]);
			emit(e, ")\n{\n\ttrace_%s(", h[1].name);
			argnames(e, &h[1], 0);
			emit(e, ");\n}\n");
		}
	}
	emit(e, "\nstatic struct hgt_probe_event *const _hgt_events_%s[%d] = {\n", o->group, n);
	for (size_t i = 0; i < l->n; i++) {
		struct half h[2];
		int m = halves(&l->ev[i], h);

		for (int j = 0; j < m; j++, k++)
			emit(e, "\t&_TRACE_%s_EVENT,\n", h[j].upper);
	}
	emit(e,
	     "};\n\nstatic struct hgt_probe_group _hgt_group_%s = {\n"
	     "\t.sz = sizeof(struct hgt_probe_group),\n\t.name = \"%s\",\n"
	     "\t.events = _hgt_events_%s,\n\t.nevents = %d,\n\t.backends = %#x,\n};\n",
	     o->group, o->group, o->group, n, o->backends);
	emit(e,
	     "\nstatic void __attribute__((constructor)) _hgt_register_%s(void)\n{\n"
	     "\thgt_probe_register_group(&_hgt_group_%s);\n}\n",
	     o->group, o->group);
}

/* ---- d, stp, ust ---- */

static const char *safe_name(const char *n, const char *const *kw, char *buf, size_t sz)
{
	for (; *kw; kw++)
		if (!strcmp(n, *kw)) {
			snprintf(buf, sz, "%s_", n);
			return buf;
		}
	return n;
}

/*
 * An argument's type in the .d file: one word for its width and sign (SystemTap's dtrace
 * parses "[struct|unsigned|const] NAME [const] [*] name" and nothing more; "long unsigned
 * int" or "void * const" make it fall back to a line parser that misreads other lines).
 * The probes' argument sizes come from the C call, not from these names.
 */
static const char *d_type(const struct hgt_tev_arg *a)
{
	static const char *const names[] = {
		[HGT_PROBE_S8] = "int8_t",	  [HGT_PROBE_U8] = "uint8_t",
		[HGT_PROBE_S16] = "int16_t",	  [HGT_PROBE_U16] = "uint16_t",
		[HGT_PROBE_S32] = "int32_t",	  [HGT_PROBE_U32] = "uint32_t",
		[HGT_PROBE_S64] = "int64_t",	  [HGT_PROBE_U64] = "uint64_t",
		[HGT_PROBE_BOOL] = "bool",	  [HGT_PROBE_PTR] = "void *",
		[HGT_PROBE_STR] = "const char *",
	};

	if (a->tcg)
		return "uint64_t";
	return a->kind > 0 && (size_t)a->kind < sizeof(names) / sizeof(names[0]) && names[a->kind]
		       ? names[a->kind]
		       : a->type;
}

static void gen_d(struct em *e, const struct hgt_gen_opts *o, const struct hgt_tev_list *l)
{
	/* D's reserved words, as tracetool renames them (the DTrace guide's list) */
	static const char *const kw[] = {
		"auto",	    "goto",	"sizeof",     "break",	  "if",	      "static",	  "case",
		"import",   "string",	"char",	      "inline",	  "stringof", "const",	  "int",
		"struct",   "continue", "long",	      "switch",	  "counter",  "offsetof", "this",
		"default",  "probe",	"translator", "do",	  "provider", "typedef",  "double",
		"register", "union",	"else",	      "restrict", "unsigned", "enum",	  "return",
		"void",	    "extern",	"self",	      "volatile", "float",    "short",	  "while",
		"for",	    "signed",	"xlate",      NULL,
	};

	emit(e, "provider %s {\n", provider(o));
	for (size_t i = 0; i < l->n; i++) {
		struct half h[2];
		int m = halves(&l->ev[i], h);

		for (int j = 0; j < m; j++) {
			int any = 0;

			if (h[j].flags & HGT_PROBE_F_DISABLE)
				continue;
			emit(e, "\tprobe %s(", h[j].name);
			for (int a = 0; a < h[j].t->nargs; a++) {
				char b[80];
				const char *ty = d_type(&h[j].t->args[a]);

				if (!use_arg(&h[j], a))
					continue;
				emit(e, "%s%s%s%s", any ? ", " : "", ty,
				     ty[strlen(ty) - 1] == '*' ? "" : " ",
				     safe_name(h[j].t->args[a].name, kw, b, sizeof(b)));
				any = 1;
			}
			emit(e, ");\n");
		}
	}
	emit(e, "};\n");
}

/* SystemTap's reserved words, renamed with a trailing '_' as tracetool does. */
static const char *const stap_kw[] = { "break",	 "catch",   "continue", "delete", "else",
				       "for",	 "foreach", "function", "global", "if",
				       "in",	 "limit",   "long",	"next",	  "probe",
				       "return", "self",    "string",	"try",	  "while",
				       NULL };

static void gen_stp(struct em *e, const struct hgt_gen_opts *o, const struct hgt_tev_list *l)
{
	const char *const *kw = stap_kw;

	for (size_t i = 0; i < l->n; i++) {
		struct half h[2];
		int m = halves(&l->ev[i], h);

		for (int j = 0; j < m; j++) {
			int n = 0;

			if (h[j].flags & HGT_PROBE_F_DISABLE)
				continue;
			emit(e, "probe %s.%s = process(\"%s\").mark(\"%s\")\n{\n", o->probe_prefix,
			     h[j].name, o->binary, h[j].name);
			for (int a = 0; a < h[j].t->nargs; a++) {
				char b[80];

				if (!use_arg(&h[j], a))
					continue;
				n++;
				emit(e, "  %s = $arg%d;\n",
				     safe_name(h[j].t->args[a].name, kw, b, sizeof(b)), n);
			}
			emit(e, "}\n");
		}
	}
}

/*
 * An event's format as one SystemTap printf string: the literals joined, each PRI macro
 * (and a program's macro such as HWADDR_PRIx) its conversion letter, and the length
 * qualifiers of %d, %u and %x dropped (SystemTap's values are all 64-bit). Returns 0, or
 * -EINVAL naming a macro with no conversion letter in @err.
 */
static int stap_fmt(const char *f, char *buf, size_t sz, char *err, size_t errsz)
{
	char tmp[2048];
	size_t n = 0, m = 0;

#define PUTC(c)                           \
	do {                              \
		if (n + 1 >= sizeof(tmp)) \
			return -E2BIG;    \
		tmp[n++] = (c);           \
	} while (0)
	for (const char *p = f; p && *p;) {
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1])
					PUTC(*p++);
				PUTC(*p);
			}
			if (*p)
				p++;
		} else if (isalpha((unsigned char)*p) || *p == '_') {
			const char *s = p, *pri;

			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
			pri = !strncmp(s, "PRI", 3) ? s : memmem(s, (size_t)(p - s), "_PRI", 4);
			if (pri && pri != s)
				pri++;
			if (!pri || pri + 3 >= p || !isalpha((unsigned char)pri[3])) {
				snprintf(
					err, errsz,
					"'%.*s' in a format: a SystemTap format needs the conversion it stands for",
					(int)(p - s), s);
				return -EINVAL;
			}
			PUTC(pri[3]);
		} else {
			p++;
		}
	}
#undef PUTC
	/* %(\d*)(l+|z)(d|u|x) -> %\1\3 */
	for (size_t i = 0; i < n && m + 1 < sz; i++) {
		buf[m++] = tmp[i];
		if (tmp[i] != '%')
			continue;
		if (i + 1 < n && tmp[i + 1] == '%') {
			buf[m++] = tmp[++i];
			continue;
		}
		while (i + 1 < n && isdigit((unsigned char)tmp[i + 1]) && m + 1 < sz)
			buf[m++] = tmp[++i];
		{
			size_t k = i + 1;

			while (k < n && tmp[k] == 'l')
				k++;
			if (k == i + 1 && k < n && tmp[k] == 'z')
				k++;
			if (k > i + 1 && k < n && strchr("dux", tmp[k]))
				i = k - 1;
		}
	}
	buf[m] = 0;
	return 0;
}

/* A string argument (char *, const char *): SystemTap reads it with user_string_n(). */
static int is_str(const struct hgt_tev_arg *a)
{
	return a->kind == HGT_PROBE_STR;
}

/* The start of a log-stap or simpletrace-stap probe: its name, and each string argument
 * read from the program (with its length for @lengths). */
static void stap_head(struct em *e, const struct hgt_gen_opts *o, const struct half *h,
		      const char *kind, int lengths)
{
	char b[80];

	emit(e, "probe %s.%s.%s = %s.%s ?\n{\n", o->probe_prefix, kind, h->name, o->probe_prefix,
	     h->name);
	for (int a = 0; a < h->t->nargs; a++) {
		const char *n = safe_name(h->t->args[a].name, stap_kw, b, sizeof(b));

		if (!use_arg(h, a) || !is_str(&h->t->args[a]))
			continue;
		emit(e,
		     "    try {\n        arg%s_str = %s ? user_string_n(%s, 512) : \"<null>\"\n"
		     "    } catch {}\n",
		     n, n, n);
		if (lengths)
			emit(e, "    arg%s_len = strlen(arg%s_str)\n", n, n);
	}
}

/* The printf arguments of a stap probe: values by name, strings as read (with their lengths,
 * twice, for simpletrace-stap's "%4b%.*s"). */
static void stap_values(struct em *e, const struct half *h, int lengths)
{
	char b[80];

	for (int a = 0; a < h->t->nargs; a++) {
		const char *n = safe_name(h->t->args[a].name, stap_kw, b, sizeof(b));

		if (!use_arg(h, a))
			continue;
		if (!is_str(&h->t->args[a]))
			emit(e, ", %s", n);
		else if (lengths)
			emit(e, ", arg%s_len, arg%s_len, arg%s_str", n, n, n);
		else
			emit(e, ", arg%s_str", n);
	}
}

/* log-stap: PREFIX.log.NAME prints the event as the log backend would, with pid and time. */
static void gen_log_stp(struct em *e, const struct hgt_gen_opts *o, const struct hgt_tev_list *l,
			char *err, size_t errsz)
{
	for (size_t i = 0; i < l->n; i++) {
		struct half h[2];
		int m = halves(&l->ev[i], h);

		for (int j = 0; j < m; j++) {
			char f[2048], b[256];

			if (h[j].flags & HGT_PROBE_F_DISABLE)
				continue;
			if (stap_fmt(h[j].fmt, f, sizeof(f), b, sizeof(b))) {
				snprintf(err, errsz, "%s:%d: %s", h[j].t->file, h[j].t->line, b);
				e->err = -EINVAL;
				return;
			}
			stap_head(e, o, &h[j], "log", 0);
			emit(e, "    printf(\"%%d@%%d %s %s\\n\", pid(), gettimeofday_ns()",
			     h[j].name, f);
			stap_values(e, &h[j], 0);
			emit(e, ")\n}\n");
		}
	}
}

/* simpletrace-stap: PREFIX.simpletrace.NAME prints QEMU's simple trace record in binary
 * (no header or mapping: simpletrace.py --no-header; the id is the event's index). */
static void gen_simple_stp(struct em *e, const struct hgt_gen_opts *o, const struct hgt_tev_list *l)
{
	int id = 0;

	for (size_t i = 0; i < l->n; i++) {
		struct half h[2];
		int m = halves(&l->ev[i], h);

		for (int j = 0; j < m; j++, id++) {
			char b[80];

			if (h[j].flags & HGT_PROBE_F_DISABLE)
				continue;
			stap_head(e, o, &h[j], "simpletrace", 1);
			emit(e, "    printf(\"%%8b%%8b%%8b%%4b%%4b");
			for (int a = 0; a < h[j].t->nargs; a++)
				if (use_arg(&h[j], a))
					emit(e, is_str(&h[j].t->args[a]) ? "%%4b%%.*s" : "%%8b");
			emit(e, "\", 1, %d, gettimeofday_ns(), 24", id);
			for (int a = 0; a < h[j].t->nargs; a++) {
				const char *n =
					safe_name(h[j].t->args[a].name, stap_kw, b, sizeof(b));

				if (use_arg(&h[j], a))
					emit(e,
					     is_str(&h[j].t->args[a]) ? " + 4 + arg%s_len" : " + 8",
					     n);
			}
			emit(e, ", pid()");
			stap_values(e, &h[j], 1);
			emit(e, ")\n}\n");
		}
	}
}

/* An argument's Rust type: in the function trace_X() takes (@api), or in the C function's
 * declaration. Rust's reserved words are renamed with a trailing '_' (r#self cannot be). */
static const char *rs_type(const struct hgt_tev_arg *a, int api)
{
	static const char *const names[] = {
		[HGT_PROBE_S8] = "i8",	   [HGT_PROBE_U8] = "u8",
		[HGT_PROBE_S16] = "i16",   [HGT_PROBE_U16] = "u16",
		[HGT_PROBE_S32] = "i32",   [HGT_PROBE_U32] = "u32",
		[HGT_PROBE_S64] = "i64",   [HGT_PROBE_U64] = "u64",
		[HGT_PROBE_BOOL] = "bool", [HGT_PROBE_PTR] = "*const c_void",
	};

	if (a->tcg)
		return "u64";
	if (a->kind == HGT_PROBE_STR)
		return api ? "&CStr" : "*const c_char";
	return names[a->kind];
}

static const char *const rs_kw[] = {
	"as",	 "break",  "const",    "continue", "crate",  "else", "enum",  "extern", "false",
	"fn",	 "for",	   "if",       "impl",	   "in",     "let",  "loop",  "match",	"mod",
	"move",	 "mut",	   "pub",      "ref",	   "return", "self", "Self",  "static", "struct",
	"super", "trait",  "true",     "type",	   "unsafe", "use",  "where", "while",	"async",
	"await", "dyn",	   "abstract", "become",   "box",    "do",   "final", "macro",	"override",
	"priv",	 "typeof", "unsized",  "virtual",  "yield",  "try",  NULL
};

/* "name: type, ..." of a Rust function: trace_X()'s (@api) or the C function's. */
static void rs_params(struct em *e, const struct half *h, int api)
{
	char b[80];
	int any = 0;

	for (int a = 0; a < h->t->nargs; a++)
		if (use_arg(h, a)) {
			emit(e, "%s%s: %s", any ? ", " : "",
			     safe_name(h->t->args[a].name, rs_kw, b, sizeof(b)),
			     rs_type(&h->t->args[a], api));
			any = 1;
		}
}

/* rs: trace_X() and trace_X_enabled() for Rust code, calling the C file's functions (the
 * log, simple, ftrace and syslog backends; USDT and LTTng probes are C macros). */
static void gen_rs(struct em *e, const struct hgt_gen_opts *o, const struct hgt_tev_list *l)
{
	int calls = (o->backends & B_STATE) != 0;

	emit(e, "#[allow(unused_imports)]\nuse std::ffi::{c_char, c_void, CStr};\n"
		"use std::sync::atomic::{AtomicU8, Ordering};\n\nextern \"C\" {\n");
	for (size_t i = 0; i < l->n; i++) {
		struct half h[2];
		int m = halves(&l->ev[i], h);

		for (int j = 0; j < m; j++) {
			emit(e, "    static _hgt_%s__%s_dstate: AtomicU8;\n", o->group, h[j].name);
			if (!calls || (h[j].flags & HGT_PROBE_F_DISABLE))
				continue;
			emit(e, "    fn _hgt_%s__trace_%s(", o->group, h[j].name);
			rs_params(e, &h[j], 0);
			emit(e, ");\n");
		}
	}
	emit(e, "}\n");
	for (size_t i = 0; i < l->n; i++) {
		struct half h[2];
		int m = halves(&l->ev[i], h);

		for (int j = 0; j < m; j++) {
			int off = h[j].flags & HGT_PROBE_F_DISABLE, any = 0;
			char b[80];

			emit(e,
			     "\n#[inline(always)]\n#[allow(dead_code)]\npub fn trace_%s_enabled() -> bool {\n",
			     h[j].name);
			if (off)
				emit(e, "    false\n}\n");
			else
				emit(e,
				     "    unsafe { _hgt_%s__%s_dstate.load(Ordering::Relaxed) != 0 }\n}\n",
				     o->group, h[j].name);
			emit(e,
			     "\n#[inline(always)]\n#[allow(dead_code, unused_variables)]\npub fn trace_%s(",
			     h[j].name);
			rs_params(e, &h[j], 1);
			emit(e, ") {\n");
			if (!off && calls) {
				any = 0;
				emit(e,
				     "    if trace_%s_enabled() {\n        unsafe { _hgt_%s__trace_%s(",
				     h[j].name, o->group, h[j].name);
				for (int a = 0; a < h[j].t->nargs; a++)
					if (use_arg(&h[j], a)) {
						const char *n = safe_name(h[j].t->args[a].name,
									  rs_kw, b, sizeof(b));

						emit(e, "%s%s%s", any ? ", " : "", n,
						     h[j].t->args[a].kind == HGT_PROBE_STR &&
								     !h[j].t->args[a].tcg
							     ? ".as_ptr()"
							     : "");
						any = 1;
					}
				emit(e, ") }\n    }\n");
			}
			emit(e, "}\n");
		}
	}
}

/* Which printf conversions print in hex: the ust provider uses ctf_integer_hex for them. */
static void hex_args(const struct half *h, int hex[HGT_TEV_MAX_ARGS + 1])
{
	char f[2048];
	int n = 0, idx[HGT_TEV_MAX_ARGS + 1], k = 0;

	memset(hex, 0, sizeof(int) * (HGT_TEV_MAX_ARGS + 1));
	for (int i = 0; i < h->t->nargs; i++)
		if (use_arg(h, i))
			idx[k++] = i;
	if (hgt_tev_expand_fmt(h->t, h->fmt == h->t->fmt_exec && h->fmt, f, sizeof(f)))
		return;
	for (char *p = f; *p; p++) {
		if (*p != '%')
			continue;
		if (p[1] == '%') {
			p++;
			continue;
		}
		p++;
		while (*p && !strchr("diouxXcspn", *p))
			p++;
		if (!*p)
			break;
		if (n < k && (*p == 'x' || *p == 'X' || *p == 'p'))
			hex[idx[n]] = 1;
		n++;
	}
}

static void gen_ust(struct em *e, const struct hgt_gen_opts *o, const struct hgt_tev_list *l)
{
	char gu[128];

	upper_of(gu, sizeof(gu), o->group);
	emit(e,
	     "#undef TRACEPOINT_PROVIDER\n#define TRACEPOINT_PROVIDER %s\n\n"
	     "#undef TRACEPOINT_INCLUDE\n#define TRACEPOINT_INCLUDE \"./%s\"\n\n"
	     "#if !defined(HGT_UST_%s_H) || defined(TRACEPOINT_HEADER_MULTI_READ)\n"
	     "#define HGT_UST_%s_H\n\n#include <stdbool.h>\n#include <stdint.h>\n"
	     "#include <lttng/tracepoint.h>\n",
	     provider(o), o->out_name, gu, gu);
	for (size_t i = 0; i < l->n; i++) {
		struct half h[2];
		int m = halves(&l->ev[i], h);

		for (int j = 0; j < m; j++) {
			int hex[HGT_TEV_MAX_ARGS + 1], any = 0;

			hex_args(&h[j], hex);
			emit(e, "\nTRACEPOINT_EVENT(\n\t%s,\n\t%s,\n\tTP_ARGS(", provider(o),
			     h[j].name);
			for (int a = 0; a < h[j].t->nargs; a++)
				if (use_arg(&h[j], a)) {
					emit(e, "%s%s, %s", any ? ", " : "",
					     ctype(&h[j].t->args[a]), h[j].t->args[a].name);
					any = 1;
				}
			emit(e, "),\n\tTP_FIELDS(");
			for (int a = 0; a < h[j].t->nargs; a++) {
				const struct hgt_tev_arg *x = &h[j].t->args[a];

				if (!use_arg(&h[j], a))
					continue;
				if (x->kind == HGT_PROBE_STR)
					emit(e, "\n\t\tctf_string(%s, %s)", x->name, x->name);
				else if (x->kind == HGT_PROBE_PTR)
					emit(e,
					     "\n\t\tctf_integer_hex(uintptr_t, %s, (uintptr_t)%s)",
					     x->name, x->name);
				else if (x->kind == HGT_PROBE_BOOL)
					emit(e, "\n\t\tctf_integer(int, %s, %s)", x->name, x->name);
				else
					emit(e, "\n\t\tctf_integer%s(%s, %s, %s)",
					     hex[a] ? "_hex" : "", x->tcg ? "uint64_t" : x->type,
					     x->name, x->name);
			}
			emit(e, ")\n)\n");
		}
	}
	emit(e, "\n#endif\n\n#include <lttng/tracepoint-event.h>\n");
}

/**
 * hgt_gen_format_parse - an output format by its name.
 */
int hgt_gen_format_parse(const char *name, enum hgt_gen_format *fmt)
{
	static const struct {
		const char *name;
		enum hgt_gen_format fmt;
	} f[] = { { "h", HGT_GEN_H },
		  { "c", HGT_GEN_C },
		  { "d", HGT_GEN_D },
		  { "stp", HGT_GEN_STP },
		  { "ust", HGT_GEN_UST },
		  { "ust-c", HGT_GEN_UST_C },
		  { "log-stap", HGT_GEN_LOG_STP },
		  { "simpletrace-stap", HGT_GEN_SIMPLE_STP },
		  { "rs", HGT_GEN_RS } };

	for (size_t i = 0; name && i < sizeof(f) / sizeof(f[0]); i++)
		if (!strcmp(name, f[i].name)) {
			*fmt = f[i].fmt;
			return 0;
		}
	return -EINVAL;
}

/**
 * hgt_gen_backends - parse a backend list into HGT_PROBE_B_* bits.
 * Returns 0, or -EINVAL naming the unknown backend in @err.
 */
int hgt_gen_backends(const char *list, unsigned int *out, char *err, size_t errsz)
{
	static const struct {
		const char *name;
		unsigned int bit;
	} b[] = { { "nop", 0 },
		  { "log", HGT_PROBE_B_LOG },
		  { "simple", HGT_PROBE_B_SIMPLE },
		  { "ftrace", HGT_PROBE_B_FTRACE },
		  { "syslog", HGT_PROBE_B_SYSLOG },
		  { "ust", HGT_PROBE_B_UST },
		  { "dtrace", HGT_PROBE_B_DTRACE } };
	const char *p = list;

	*out = 0;
	while (*p) {
		size_t n = strcspn(p, ","), i;

		for (i = 0; i < sizeof(b) / sizeof(b[0]); i++)
			if (strlen(b[i].name) == n && !strncmp(p, b[i].name, n))
				break;
		if (i == sizeof(b) / sizeof(b[0])) {
			snprintf(
				err, errsz,
				"--backends: unknown backend '%.*s' (nop, log, simple, ftrace, syslog, ust, dtrace)",
				(int)n, p);
			return -EINVAL;
		}
		*out |= b[i].bit;
		p += n + (p[n] == ',');
	}
	return 0;
}

/**
 * hgt_gen - write the @o->format output for the events of @l to @out.
 * Returns 0, or a negative errno with the reason in @err.
 */
int hgt_gen(const struct hgt_gen_opts *o, const struct hgt_tev_list *l, FILE *out, char *err,
	    size_t errsz)
{
	struct em e = { .out = out, .name = o->out_name ? o->out_name : "-" };

	if (!o->group || !is_c_ident(o->group)) {
		snprintf(err, errsz, "--group: '%s' is not a C identifier",
			 o->group ? o->group : "");
		return -EINVAL;
	}
	if (o->format == HGT_GEN_STP && (!o->binary || !o->probe_prefix)) {
		snprintf(err, errsz, "--format stp needs --binary and --probe-prefix");
		return -EINVAL;
	}
	if ((o->format == HGT_GEN_LOG_STP || o->format == HGT_GEN_SIMPLE_STP) && !o->probe_prefix) {
		snprintf(err, errsz, "--format %s needs --probe-prefix (the stp tapset's)",
			 o->format == HGT_GEN_LOG_STP ? "log-stap" : "simpletrace-stap");
		return -EINVAL;
	}
	err[0] = 0;
	emit(&e, "/* Generated by hgtrace gen from");
	for (size_t i = 0; i < l->nfiles; i++)
		emit(&e, " %s", l->files[i]);
	emit(&e, ". Do not edit. */\n");
	switch (o->format) {
	case HGT_GEN_H:
		gen_h(&e, o, l);
		break;
	case HGT_GEN_C:
		gen_c(&e, o, l);
		break;
	case HGT_GEN_D:
		gen_d(&e, o, l);
		break;
	case HGT_GEN_STP:
		gen_stp(&e, o, l);
		break;
	case HGT_GEN_UST:
		gen_ust(&e, o, l);
		break;
	case HGT_GEN_LOG_STP:
		gen_log_stp(&e, o, l, err, errsz);
		break;
	case HGT_GEN_SIMPLE_STP:
		gen_simple_stp(&e, o, l);
		break;
	case HGT_GEN_RS:
		gen_rs(&e, o, l);
		break;
	case HGT_GEN_UST_C:
		/* the one place a shared LTTng provider's tracepoints and probes are defined */
		emit(&e,
		     "#define TRACEPOINT_CREATE_PROBES\n#define TRACEPOINT_DEFINE\n#include \"%s\"\n",
		     o->ust_header ? o->ust_header : "probes-ust.h");
		break;
	}
	if (e.err && !err[0])
		snprintf(err, errsz, "%s: %s", e.name, strerror(-e.err));
	return e.err;
}
