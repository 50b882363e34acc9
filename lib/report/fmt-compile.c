// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Print formats compiled once per event into a small program of field fetches and
 * conversions, run per record instead of libtraceevent's interpreter.
 *
 * libtraceevent 1.7 prints a record's info by walking its print fmt's argument tree for
 * every record: a field found by name the first time, a number read through
 * tep_read_number(), a cast applied by comparing type names with strcmp(), and every
 * conversion through vsnprintf() into a trace_seq. Here the same tree is turned, once per
 * event, into resolved nodes (offsets, sizes, masks and symbol values known), and the
 * common conversions (%d %u %x with flags 0, - and #, a width, any length modifier; %s;
 * %p and %ps) are written by hand. The text must be byte for byte libtraceevent's, so the
 * program mirrors its rules (the casts of eval_type_str(), the operators of eval_num_arg(),
 * the symbol and flag values of eval_flag(), the splitting of parse_args()), and anything
 * else makes the event, or that one record, go back to libtraceevent:
 * - events with a plugin handler (but for those of two plugins, below), bprint and failed
 *   events, raw (-R) printing;
 * - argument kinds not compiled here (__print_hex, bitmasks, cpumasks, dynamic arrays as
 *   numbers, %pM/%pI/%pU/%ph, functions defined by plugins, '*' widths, %c and the '+'
 *   flag, which libtraceevent versions print differently);
 * - records where libtraceevent would warn or read outside the record (an index past the
 *   end, a string with no NUL inside the record, an empty dynamic string, a flags value 0).
 * HGT_FASTFMT=0 turns it off. HGT_FASTFMT=verify prints every record both ways, counts
 * the differences and reports them at the end: the suite runs every recording it has and
 * simulated sessions that way.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "../common/common-local.h"
#include "report-local.h"

#define FMTC_SLOTS 1024 /* events with a compiled program (or a "not compiled") per handle */
/* longest info text written here; longer ones go to libtraceevent */
#define FMTC_OUT HGT__INFO_DST

enum node_kind { N_CONST, N_FIELD, N_MASK, N_OP, N_COND, N_INDEX, N_DYNLEN };

struct node {
	uint8_t kind;
	char op[2];		/* N_OP: the operator's first two characters */
	int off, size;		/* N_FIELD, N_INDEX (element size), N_DYNLEN (the loc word) */
	uint64_t k;		/* N_CONST: value; N_MASK, N_INDEX: mask (0: none) */
	bool relative;		/* N_DYNLEN: __rel_loc */
	struct node *a, *b, *c; /* operands; N_COND: a ? b : c; N_INDEX: b is the index */
};

enum str_kind { S_ATOM, S_FIELD, S_DYNSTR, S_SYMBOL, S_FLAGS, S_COND };

struct sym {
	long long v;
	const char *str;
};

struct sarg {
	uint8_t kind;
	const char *atom; /* S_ATOM */
	int off, len;	  /* S_FIELD (len -1: the rest of the record); S_DYNSTR: loc word */
	bool relative;	  /* S_DYNSTR */
	struct node *val; /* S_SYMBOL, S_FLAGS, S_COND (the condition) */
	struct sym *syms; /* S_SYMBOL, S_FLAGS */
	int nsyms;
	const char *delim;  /* S_FLAGS */
	struct sarg *t, *f; /* S_COND */
};

enum piece_kind { P_TEXT, P_INT, P_PTR, P_FUNC, P_STR };

struct piece {
	uint8_t kind;
	/* P_TEXT: the text; P_INT, P_STR: the conversion as written, for snprintf() */
	char *text;
	size_t len;
	struct node *val; /* P_INT, P_PTR, P_FUNC */
	struct sarg *str; /* P_STR */
	int ls;		  /* P_INT: libtraceevent's length count (-2 .. 2) */
	char conv;	  /* P_INT: d i u x X o; P_FUNC: s f S F */
	bool fast;	  /* P_INT: written here; P_STR: a plain "%s" */
	bool left, zero, alt;
	int width, bits; /* P_INT, fast: field width; the printf type's width in bits */
	struct piece *next;
};

/* Plugin handlers whose text is written here (see "plugins" below) */
enum plugin_kind {
	PL_NONE,
	PL_SWITCH,
	PL_WAKEUP,
	PL_HRT_EXPIRE,
	PL_HRT_START,
	PL_KVM_EXIT,
	PL_KVM_ENTRY
};
#define PL_FIELDS 7

struct prog {
	const struct tep_event *ev;
	bool ok; /* false: this event always goes to libtraceevent */
	bool swap;
	uint8_t plugin;			  /* PL_*: a plugin handler's text, not the print fmt's */
	int fo[PL_FIELDS], fs[PL_FIELDS]; /* its fields' offsets and sizes (offset -1: none) */
	struct piece *pieces;
	void **mem; /* everything allocated for it */
	int nmem, capmem;
};

/* kvm_exit's "reason ..." text per instruction set and exit reason, as the kvm plugin
 * printed it the first time (its tables are the plugin's own) */
#define KVM_REASONS 128
struct kvm_reason {
	const struct tep_event *ev;
	uint64_t isa, reason;
	char text[56];
	uint8_t len;
};

struct hgt__fmtc {
	struct prog *slot[FMTC_SLOTS];
	struct kvm_reason reasons[KVM_REASONS];
	int nr_reasons;
	struct trace_seq plugin; /* the kvm plugin's first text of a reason */
	char out[FMTC_OUT];
	int verify; /* 0: off; 1: compare every record with libtraceevent */
	struct trace_seq check;
	unsigned long long compiled, fallback, differ;
	struct {
		const struct tep_event *ev;
		char name[64]; /* the handle may be gone when this is printed */
		unsigned long long n;
	} back[16]; /* verify: the events libtraceevent printed, first 16 */
};

/* ---- compiling ---- */

static void *pmem(struct prog *p, size_t n)
{
	void *m;

	if (p->nmem == p->capmem) {
		int cap = p->capmem ? 2 * p->capmem : 16;
		void **nm = realloc(p->mem, (size_t)cap * sizeof(*nm));

		if (!nm)
			return NULL;
		p->mem = nm;
		p->capmem = cap;
	}
	m = calloc(1, n);
	if (m)
		p->mem[p->nmem++] = m;
	return m;
}

/* eval_type_str()'s cast of a type name: the mask it applies, 0 for none */
static uint64_t type_mask(const char *type)
{
	size_t len = strlen(type);

	if (!len || type[len - 1] == '*' || !strncmp(type, "struct", 6))
		return 0;
	if (!strcmp(type, "u8") || !strcmp(type, "s8"))
		return 0xff;
	if (!strcmp(type, "u16") || !strcmp(type, "s16"))
		return 0xffff;
	if (!strcmp(type, "u32") || !strcmp(type, "s32"))
		return 0xffffffff;
	if (!strncmp(type, "unsigned ", 9))
		type += 9;
	if (!strcmp(type, "char"))
		return 0xff;
	if (!strcmp(type, "short"))
		return 0xffff;
	if (!strcmp(type, "int"))
		return 0xffffffff;
	return 0;
}

/* The same for an array element read through a pointer cast ("(u8 *)"), or -1 when the
 * type is no pointer (libtraceevent warns). */
static int64_t pointee_mask(const char *type)
{
	size_t len = strlen(type);
	char buf[64];

	if (len < 2 || type[len - 1] != '*' || len - 2 >= sizeof(buf))
		return -1;
	memcpy(buf, type, len - 2);
	buf[len - 2] = 0;
	return (int64_t)type_mask(buf);
}

/* eval_flag(): a symbol's or flag's value as written in the print fmt */
static long long flag_value(const char *s)
{
	static const struct {
		const char *name;
		long long v;
	} known[] = {
		{ "HI_SOFTIRQ", 0 },	  { "TIMER_SOFTIRQ", 1 },     { "NET_TX_SOFTIRQ", 2 },
		{ "NET_RX_SOFTIRQ", 3 },  { "BLOCK_SOFTIRQ", 4 },     { "IRQ_POLL_SOFTIRQ", 5 },
		{ "TASKLET_SOFTIRQ", 6 }, { "SCHED_SOFTIRQ", 7 },     { "HRTIMER_SOFTIRQ", 8 },
		{ "RCU_SOFTIRQ", 9 },	  { "HRTIMER_NORESTART", 0 }, { "HRTIMER_RESTART", 1 },
	};

	if (isdigit((unsigned char)s[0]))
		return (long long)strtoull(s, NULL, 0);
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i].name, s))
			return known[i].v;
	return -1;
}

static struct tep_format_field *field_of(struct tep_event *ev, const char *name)
{
	return name ? tep_find_any_field(ev, name) : NULL;
}

/* A plain field that can be read as a number here: 1, 2, 4 or 8 bytes. */
static bool number_field(const struct tep_format_field *f)
{
	return f && !(f->flags & TEP_FIELD_IS_DYNAMIC) && f->offset >= 0 &&
	       (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8);
}

static struct node *compile_num(struct prog *p, struct tep_event *ev, struct tep_print_arg *a);

static struct node *compile_index(struct prog *p, struct tep_event *ev, struct tep_print_arg *a,
				  struct node *n)
{
	struct tep_print_arg *l = a->op.left, *cast = NULL;
	struct tep_format_field *f;
	int64_t mask = 0;

	while (l && l->type == TEP_PRINT_TYPE) {
		if (!cast)
			cast = l;
		l = l->typecast.item;
	}
	if (!l || l->type != TEP_PRINT_FIELD)
		return NULL; /* a dynamic array, or "all bets off" in libtraceevent */
	f = field_of(ev, l->field.name);
	if (!f || (f->flags & TEP_FIELD_IS_DYNAMIC) || f->offset < 0 ||
	    (f->elementsize != 1 && f->elementsize != 2 && f->elementsize != 4 &&
	     f->elementsize != 8))
		return NULL;
	if (cast && (mask = pointee_mask(cast->typecast.type)) < 0)
		return NULL;
	n->kind = N_INDEX;
	n->off = f->offset;
	n->size = (int)f->elementsize;
	n->k = (uint64_t)mask;
	n->b = compile_num(p, ev, a->op.right);
	return n->b ? n : NULL;
}

static struct node *compile_op(struct prog *p, struct tep_event *ev, struct tep_print_arg *a,
			       struct node *n)
{
	const char *op = a->op.op;

	if (!op || !op[0])
		return NULL;
	if (!strcmp(op, "["))
		return compile_index(p, ev, a, n);
	if (!strcmp(op, "?")) {
		struct tep_print_arg *r = a->op.right;

		if (!r || r->type != TEP_PRINT_OP || !r->op.left || !r->op.right)
			return NULL;
		n->kind = N_COND;
		n->a = compile_num(p, ev, a->op.left);
		n->b = compile_num(p, ev, r->op.left);
		n->c = compile_num(p, ev, r->op.right);
		return n->a && n->b && n->c ? n : NULL;
	}
	if (!strchr("!~|&<>=-+/%*", op[0]))
		return NULL; /* libtraceevent warns and prints 0 */
	n->kind = N_OP;
	n->op[0] = op[0];
	n->op[1] = op[1];
	n->a = compile_num(p, ev, a->op.left);
	n->b = compile_num(p, ev, a->op.right);
	return n->a && n->b ? n : NULL;
}

/* An argument evaluated as a number, as eval_num_arg() does; NULL when not compiled. */
static struct node *compile_num(struct prog *p, struct tep_event *ev, struct tep_print_arg *a)
{
	struct tep_format_field *f;
	struct node *n;

	if (!a || !(n = pmem(p, sizeof(*n))))
		return NULL;
	switch (a->type) {
	case TEP_PRINT_NULL:
		n->kind = N_CONST;
		return n;
	case TEP_PRINT_ATOM:
		if (!a->atom.atom || !isdigit((unsigned char)a->atom.atom[0]))
			return NULL; /* a symbol's name: libtraceevent looks it up */
		n->kind = N_CONST;
		n->k = strtoull(a->atom.atom, NULL, 0);
		return n;
	case TEP_PRINT_FIELD:
		f = field_of(ev, a->field.name);
		if (!number_field(f))
			return NULL;
		n->kind = N_FIELD;
		n->off = f->offset;
		n->size = f->size;
		return n;
	case TEP_PRINT_TYPE:
		if (!a->typecast.type)
			return NULL;
		n->kind = N_MASK;
		n->k = type_mask(a->typecast.type);
		n->a = compile_num(p, ev, a->typecast.item);
		return n->a ? n : NULL;
	case TEP_PRINT_OP:
		return compile_op(p, ev, a, n);
	case TEP_PRINT_DYNAMIC_ARRAY_LEN:
		f = a->dynarray.field;
		if (!f || f->size != 4 || f->offset < 0)
			return NULL;
		n->kind = N_DYNLEN;
		n->off = f->offset;
		n->size = f->size;
		n->relative = f->flags & TEP_FIELD_IS_RELATIVE;
		return n;
	default:
		return NULL;
	}
}

static struct sym *compile_syms(struct prog *p, struct tep_print_flag_sym *fs, int *nr)
{
	struct sym *s;
	int n = 0;

	for (struct tep_print_flag_sym *f = fs; f; f = f->next)
		n++;
	s = pmem(p, (size_t)(n ? n : 1) * sizeof(*s));
	if (!s)
		return NULL;
	n = 0;
	for (struct tep_print_flag_sym *f = fs; f; f = f->next, n++) {
		if (!f->value || !f->str)
			return NULL;
		s[n].v = flag_value(f->value);
		s[n].str = f->str;
	}
	*nr = n;
	return s;
}

/* An argument printed by %s, as print_str_arg() does; NULL when not compiled. */
static struct sarg *compile_str(struct prog *p, struct tep_event *ev, struct tep_print_arg *a)
{
	struct tep_format_field *f;
	struct sarg *s;

	if (!a || !(s = pmem(p, sizeof(*s))))
		return NULL;
	switch (a->type) {
	case TEP_PRINT_ATOM:
		s->kind = S_ATOM;
		s->atom = a->atom.atom;
		return s->atom ? s : NULL;
	case TEP_PRINT_FIELD:
		f = field_of(ev, a->field.name);
		if (!f || f->offset < 0 || (f->flags & TEP_FIELD_IS_DYNAMIC))
			return NULL;
		if (!(f->flags & TEP_FIELD_IS_ARRAY) && f->size == tep_get_long_size(ev->tep))
			return NULL; /* a pointer: libtraceevent looks for a printk string */
		s->kind = S_FIELD;
		s->off = f->offset;
		s->len = f->size ? f->size : -1;
		return s;
	case TEP_PRINT_STRING:
		f = field_of(ev, a->string.string);
		if (!f || f->size != 4 || f->offset < 0)
			return NULL;
		s->kind = S_DYNSTR;
		s->off = f->offset;
		s->relative = f->flags & TEP_FIELD_IS_RELATIVE;
		return s;
	case TEP_PRINT_SYMBOL:
		s->kind = S_SYMBOL;
		s->val = compile_num(p, ev, a->symbol.field);
		s->syms = compile_syms(p, a->symbol.symbols, &s->nsyms);
		return s->val && s->syms ? s : NULL;
	case TEP_PRINT_FLAGS:
		s->kind = S_FLAGS;
		s->delim = a->flags.delim;
		s->val = compile_num(p, ev, a->flags.field);
		s->syms = compile_syms(p, a->flags.flags, &s->nsyms);
		return s->val && s->syms ? s : NULL;
	case TEP_PRINT_OP:
		if (!a->op.op || a->op.op[0] != '?' || !a->op.right ||
		    a->op.right->type != TEP_PRINT_OP)
			return NULL;
		s->kind = S_COND;
		s->val = compile_num(p, ev, a->op.left);
		s->t = compile_str(p, ev, a->op.right->op.left);
		s->f = compile_str(p, ev, a->op.right->op.right);
		return s->val && s->t && s->f ? s : NULL;
	default:
		return NULL;
	}
}

static struct piece *add_piece(struct prog *p, struct piece ***tail, int kind, const char *text,
			       size_t len)
{
	struct piece *pc = pmem(p, sizeof(*pc));

	if (!pc || !(pc->text = pmem(p, len + 1)))
		return NULL;
	memcpy(pc->text, text, len);
	pc->len = len;
	pc->kind = (uint8_t)kind;
	**tail = pc;
	*tail = &pc->next;
	return pc;
}

/* parse_arg_string(): literal text up to a lone '%', with \n \t \r \\ and %% turned into
 * what they stand for. Returns the characters consumed, or 0 on what is not compiled. */
static size_t literal(struct prog *p, struct piece ***tail, const char *f)
{
	char buf[512];
	size_t n = 0, i = 0;

	for (; f[i]; i++) {
		char c = f[i];

		if (c == '%' && f[i + 1] != '%')
			break;
		if (n + 1 >= sizeof(buf))
			return 0;
		if (c == '%') {
			i++;
		} else if (c == '\\') {
			c = f[++i];
			if (!c)
				return 0; /* libtraceevent reads on past the end */
			c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
		}
		buf[n++] = c;
	}
	return add_piece(p, tail, P_TEXT, buf, n) ? i : 0;
}

/* How glibc's printf reads the length modifier @mod for an integer: its width in bits,
 * or 0 when it is not one written here. */
static int modifier_bits(const char *mod, size_t n)
{
	if (n == 0)
		return 32;
	if (n == 1)
		return mod[0] == 'h'					 ? 16
		       : mod[0] == 'l' || mod[0] == 'z' || mod[0] == 'L' ? 64
									 : 0;
	if (n == 2 && mod[0] == mod[1])
		return mod[0] == 'h' ? 8 : mod[0] == 'l' ? 64 : 0;
	return 0;
}

/* Whether the integer conversion @pc->text ("%08lx") is one written here, and how. */
static void int_fast(struct piece *pc)
{
	const char *s = pc->text + 1;
	size_t m = 0;

	for (; *s == '-' || *s == '0' || *s == '#'; s++) {
		pc->left |= *s == '-';
		pc->zero |= *s == '0';
		pc->alt |= *s == '#';
	}
	for (; isdigit((unsigned char)*s); s++)
		pc->width = pc->width * 10 + (*s - '0');
	while (s[m] && !strchr("diuxXo", s[m]))
		m++;
	pc->bits = modifier_bits(s, m);
	pc->fast = pc->bits && s[m] && !s[m + 1] && strchr("diuxX", s[m]) && pc->width < 64;
}

/* parse_arg_format(): one conversion and the argument it takes. Returns the characters
 * consumed, or 0 on what is not compiled. */
static size_t conversion(struct prog *p, struct tep_event *ev, struct piece ***tail, const char *f,
			 struct tep_print_arg **arg)
{
	struct piece *pc;
	size_t i = 1;
	int ls = 0;

	for (; f[i]; i++) {
		char c = f[i];

		if (c == 'h')
			ls--;
		else if (c == 'l')
			ls++;
		else if (c == 'L')
			ls = 2;
		else if (c == 'z' || c == 'Z')
			ls = 1;
		else if (!(c == '#' || c == '.' || c == '-' || isdigit((unsigned char)c)))
			break;
	}
	/* '+' and %c: libtraceevent 1.7 takes neither (it prints ">+<" and ">c<" and keeps
	 * the argument), later versions do */
	if (!f[i] || f[i] == '+' || f[i] == 'c' || !*arg || i + 1 > 30 || memchr(f, '*', i))
		return 0;
	if (f[i] == 'p') {
		char x = f[i + 1];

		if (x && strchr("MmIiUh", x))
			return 0;
		if (x && strchr("FfSs", x)) {
			pc = add_piece(p, tail, P_FUNC, f, i + 2);
			if (pc)
				pc->conv = x;
			i++;
		} else {
			pc = add_piece(p, tail, P_PTR, f, i + 1);
		}
		if (!pc || (*arg)->type == TEP_PRINT_BSTRING ||
		    !(pc->val = compile_num(p, ev, *arg)))
			return 0;
	} else if (f[i] == 's') {
		pc = add_piece(p, tail, P_STR, f, i + 1);
		if (!pc || !(pc->str = compile_str(p, ev, *arg)))
			return 0;
		pc->fast = i == 1;
	} else if (strchr("duixXo", f[i])) {
		if (ls < -2 || ls > 2)
			return 0;
		pc = add_piece(p, tail, P_INT, f, i + 1);
		if (!pc || !(pc->val = compile_num(p, ev, *arg)))
			return 0;
		pc->ls = ls;
		pc->conv = f[i];
		int_fast(pc);
	} else {
		return 0; /* libtraceevent prints ">c<" and keeps the argument */
	}
	*arg = (*arg)->next;
	return i + 1;
}

static bool compile_event(struct prog *p, struct tep_event *ev)
{
	struct tep_print_arg *arg = ev->print_fmt.args;
	const char *f = ev->print_fmt.format;
	struct piece **tail = &p->pieces;
	size_t left;

	if (!f || ev->handler ||
	    (ev->flags & (TEP_EVENT_FL_FAILED | TEP_EVENT_FL_ISBPRINT | TEP_EVENT_FL_PRINTRAW)))
		return false;
	left = strlen(f);
	while (*f) {
		size_t used = (f[0] == '%' && f[1] != '%') ? conversion(p, ev, &tail, f, &arg)
							   : literal(p, &tail, f);

		if (!used)
			return false;
		if (used >= left)
			break;
		left -= used;
		f += used;
	}
	return true;
}

/* ---- plugins ----
 *
 * Three of libtraceevent's plugins print the busiest events of a scheduling or KVM trace:
 * plugin_sched_switch (sched_switch, sched_wakeup, sched_wakeup_new) and plugin_hrtimer
 * (hrtimer_expire_entry, hrtimer_start), and plugin_kvm the host's side of a VM (kvm_exit,
 * kvm_entry). Their texts are written here as those handlers
 * write them (checked against them record by record by HGT_FASTFMT=verify):
 *  - sched_switch: "PREV_COMM:PREV_PID [PRIO] STATE ==> NEXT_COMM:NEXT_PID [PRIO]", the
 *    pids as the unsigned values of their fields, the prios as int, STATE the letters
 *    "SDTtZXxW" of the low 8 bits set (joined by '|'), "R" when none; a comm field that is
 *    missing leaves out "COMM:"; each comm printed is registered for its pid, as they do;
 *  - sched_wakeup(_new): "COMM:PID [PRIO] success=N CPU:%03u" (success only when the
 *    field exists);
 *  - hrtimer_expire_entry: "hrtimer=0x%llx now=%llu function=NAME/0x(ADDR - VALUE)" and
 *    hrtimer_start: "hrtimer=0x%llx function=... expires=%llu softexpires=%llu", the timer
 *    from the field "timer" where there is one, else "hrtimer"; a function not found is
 *    "0x%08llx", a missing function field leaves out " function=...".
 *  - kvm_exit (plugin_kvm): "reason NAME rip 0x%llx[ FUNC+0xOFF] info %llx %llx", the
 *    reason's words (its tables are the plugin's, by instruction set) taken from the
 *    plugin's own text of the first record with that set and reason, the guest function
 *    from the hooks the plugin calls (kvm-guest-func.c); kvm_entry: " vcpu %u rip ...".
 * An event is done here only when its handler lies in that plugin's file (dladdr()) and
 * every field whose absence the handler would report is there; else libtraceevent prints
 * it as before.
 */
enum { F_PID, F_COMM, F_PRIO, F_STATE, F_NPID, F_NCOMM, F_NPRIO };	/* PL_SWITCH */
enum { W_PID = 0, W_COMM = 1, W_PRIO = 2, W_SUCCESS = 3, W_CPU = 4 };	/* PL_WAKEUP */
enum { H_TIMER = 0, H_FUNC = 1, H_NOW = 2, H_EXPIRES = 3, H_SOFT = 4 }; /* PL_HRT_* */
enum { K_REASON, K_ISA, K_RIP, K_INFO1, K_INFO2, K_VCPU, K_PID };	/* PL_KVM_* */

/* The file name of the shared object holding @ev's handler, or NULL. */
static const char *handler_file(const struct tep_event *ev)
{
	Dl_info di;
	const char *b;

	if (!ev->handler || !dladdr((void *)ev->handler, &di) || !di.dli_fname)
		return NULL;
	b = strrchr(di.dli_fname, '/');
	return b ? b + 1 : di.dli_fname;
}

/* Field @name of @ev (@any: common fields too) into slot @i: a number (@comm: a char
 * array). Returns false when it is missing or of another shape. */
static bool plugin_field(struct prog *p, struct tep_event *ev, int i, const char *name, bool any,
			 bool comm)
{
	struct tep_format_field *f = any ? tep_find_any_field(ev, name) : tep_find_field(ev, name);

	p->fo[i] = -1;
	if (!f || f->offset < 0)
		return false;
	if (comm ? !(f->flags & TEP_FIELD_IS_ARRAY) || (f->flags & TEP_FIELD_IS_DYNAMIC) ||
			    f->size <= 0 || f->size > 63
		 : (f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC)) ||
			    (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8))
		return false;
	p->fo[i] = f->offset;
	p->fs[i] = f->size;
	return true;
}

static bool compile_plugin(struct prog *p, struct tep_event *ev)
{
	const char *so = handler_file(ev);

	if (!so)
		return false;
	if (!strcmp(so, "plugin_sched_switch.so") && !strcmp(ev->system, "sched")) {
		if (!strcmp(ev->name, "sched_switch")) {
			plugin_field(p, ev, F_COMM, "prev_comm", true, true);
			plugin_field(p, ev, F_NCOMM, "next_comm", true, true);
			if (!plugin_field(p, ev, F_PID, "prev_pid", false, false) ||
			    !plugin_field(p, ev, F_PRIO, "prev_prio", false, false) ||
			    !plugin_field(p, ev, F_STATE, "prev_state", false, false) ||
			    !plugin_field(p, ev, F_NPID, "next_pid", false, false) ||
			    !plugin_field(p, ev, F_NPRIO, "next_prio", false, false))
				return false;
			p->plugin = PL_SWITCH;
		} else if (!strcmp(ev->name, "sched_wakeup") ||
			   !strcmp(ev->name, "sched_wakeup_new")) {
			plugin_field(p, ev, W_COMM, "comm", true, true);
			plugin_field(p, ev, W_SUCCESS, "success", false, false);
			if (!plugin_field(p, ev, W_PID, "pid", false, false) ||
			    !plugin_field(p, ev, W_PRIO, "prio", false, false) ||
			    !plugin_field(p, ev, W_CPU, "target_cpu", false, false))
				return false;
			p->plugin = PL_WAKEUP;
		}
	} else if (!strcmp(so, "plugin_hrtimer.so") && !strcmp(ev->system, "timer")) {
		bool start = !strcmp(ev->name, "hrtimer_start");

		if (!start && strcmp(ev->name, "hrtimer_expire_entry"))
			return false;
		if (!plugin_field(p, ev, H_TIMER, "timer", false, false) &&
		    (tep_find_field(ev, "timer") ||
		     !plugin_field(p, ev, H_TIMER, "hrtimer", false, false)))
			return false; /* a "timer" it cannot read: it says so */
		if (!plugin_field(p, ev, H_FUNC, "function", false, false) &&
		    tep_find_field(ev, "function"))
			return false;
		if (start ? !plugin_field(p, ev, H_EXPIRES, "expires", false, false) ||
				    !plugin_field(p, ev, H_SOFT, "softexpires", false, false)
			  : !plugin_field(p, ev, H_NOW, "now", false, false))
			return false;
		p->plugin = start ? PL_HRT_START : PL_HRT_EXPIRE;
	} else if (!strcmp(so, "plugin_kvm.so") && !strcmp(ev->system, "kvm")) {
		/* the vCPU thread, for its guest's functions (else tep_data_pid()'s) */
		plugin_field(p, ev, K_PID, "common_pid", true, false);
		if (!strcmp(ev->name, "kvm_exit")) {
			plugin_field(p, ev, K_ISA, "isa", false, false);
			if (!plugin_field(p, ev, K_INFO1, "info1", false, false) ||
			    !plugin_field(p, ev, K_INFO2, "info2", false, false))
				p->fo[K_INFO1] = -1; /* " info A B" needs both */
			if (!plugin_field(p, ev, K_REASON, "exit_reason", false, false) ||
			    !plugin_field(p, ev, K_RIP, "guest_rip", false, false) ||
			    (tep_find_field(ev, "isa") && p->fo[K_ISA] < 0))
				return false;
			p->plugin = PL_KVM_EXIT;
		} else if (!strcmp(ev->name, "kvm_entry")) {
			if (!plugin_field(p, ev, K_VCPU, "vcpu_id", false, false) ||
			    !plugin_field(p, ev, K_RIP, "rip", false, false))
				return false;
			p->plugin = PL_KVM_ENTRY;
		}
	}
	return p->plugin != PL_NONE;
}

static void prog_free(struct prog *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->nmem; i++)
		free(p->mem[i]);
	free(p->mem);
	free(p);
}

/* The program of @ev, compiled the first time it is asked for; NULL: not compiled. */
static struct prog *prog_of(struct hgt__fmtc *fc, struct tep_event *ev)
{
	unsigned int h = ((unsigned int)(uintptr_t)ev >> 4) * 2654435761u;
	unsigned int k = h % FMTC_SLOTS;
	struct prog *p;

	for (unsigned int probe = 0; probe < FMTC_SLOTS; probe++, k = (k + 1) % FMTC_SLOTS) {
		p = fc->slot[k];
		if (p && p->ev == ev)
			return p->ok ? p : NULL;
		if (!p)
			break;
	}
	if (fc->slot[k])
		return NULL; /* table full: libtraceevent prints the rest */
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->ev = ev;
	p->swap = tep_is_file_bigendian(ev->tep) != tep_is_local_bigendian(ev->tep);
	p->ok = tep_get_long_size(ev->tep) == 8 && (compile_plugin(p, ev) || compile_event(p, ev));
	if (!p->ok) { /* keep only the verdict */
		for (int i = 0; i < p->nmem; i++)
			free(p->mem[i]);
		free(p->mem);
		p->mem = NULL;
		p->nmem = p->capmem = 0;
		p->pieces = NULL;
	}
	fc->slot[k] = p;
	return p->ok ? p : NULL;
}

struct hgt__fmtc *hgt__fmtc_new(void)
{
	const char *e = getenv("HGT_FASTFMT");
	struct hgt__fmtc *fc;

	if (e && !strcmp(e, "0"))
		return NULL;
	fc = calloc(1, sizeof(*fc));
	if (fc)
		trace_seq_init(&fc->plugin);
	if (fc && e && !strcmp(e, "verify")) {
		fc->verify = 1;
		trace_seq_init(&fc->check);
	}
	return fc;
}

void hgt__fmtc_free(struct hgt__fmtc *fc)
{
	if (!fc)
		return;
	if (fc->verify) {
		fprintf(stderr,
			"fastfmt verify: %llu records printed by compiled formats, %llu by libtraceevent, %llu differ\n",
			fc->compiled, fc->fallback, fc->differ);
		for (int i = 0; i < 16 && fc->back[i].ev; i++)
			fprintf(stderr, "fastfmt verify: by libtraceevent: %s %llu\n",
				fc->back[i].name, fc->back[i].n);
		trace_seq_destroy(&fc->check);
	}
	for (int i = 0; i < FMTC_SLOTS; i++)
		prog_free(fc->slot[i]);
	trace_seq_destroy(&fc->plugin);
	free(fc);
}

/* ---- running ---- */

struct run {
	struct hgt__fmtc *fc;
	const uint8_t *data;
	int size;
	bool swap;
	struct tep_handle *tep;
	char *out;
	size_t n;
	bool bad; /* libtraceevent must print this record */
};

static uint64_t read_num(const struct run *r, int off, int size)
{
	const uint8_t *q = r->data + off;
	uint64_t v;

	switch (size) {
	case 1:
		return q[0];
	case 2: {
		uint16_t x;

		memcpy(&x, q, 2);
		return r->swap ? __builtin_bswap16(x) : x;
	}
	case 4: {
		uint32_t x;

		memcpy(&x, q, 4);
		return r->swap ? __builtin_bswap32(x) : x;
	}
	default:
		memcpy(&v, q, 8);
		return r->swap ? __builtin_bswap64(v) : v;
	}
}

/* dynamic_offset_field() for a 4-byte __data_loc or __rel_loc word at @off */
static void dyn_loc(const struct run *r, int off, bool relative, unsigned int *o, unsigned int *l)
{
	uint64_t v = read_num(r, off, 4);
	unsigned int oo = (unsigned int)(v & 0xffff), ll = (unsigned int)(v >> 16) & 0xffff;

	*o = oo > (unsigned int)r->size ? 0 : oo;
	*l = oo + ll > (unsigned int)r->size ? 0 : ll;
	if (relative)
		*o += (unsigned int)off + 4;
}

static uint64_t eval(struct run *r, const struct node *n);

static uint64_t eval_op(struct run *r, const struct node *n)
{
	uint64_t a = eval(r, n->a), b = eval(r, n->b);
	char o0 = n->op[0], o1 = n->op[1];

	switch (o0) {
	case '!':
		if (o1 && o1 != '=')
			break;
		return o1 ? a != b : !b;
	case '~':
		return ~b;
	case '|':
		return o1 ? (a || b) : (a | b);
	case '&':
		return o1 ? (a && b) : (a & b);
	case '<':
	case '>':
		if (o1 == o0) {
			if (b >= 64)
				break; /* undefined in C: libtraceevent's own result */
			return o0 == '<' ? a << b : a >> b;
		}
		if (o1 && o1 != '=')
			break;
		return o0 == '<' ? (o1 ? a <= b : a < b) : (o1 ? a >= b : a > b);
	case '=':
		if (o1 != '=')
			break;
		return a == b;
	case '-':
		return a - b;
	case '+':
		return a + b;
	case '*':
		return a * b;
	case '/':
	case '%':
		if (!b)
			break;
		return o0 == '/' ? a / b : a % b;
	}
	r->bad = true;
	return 0;
}

static uint64_t eval(struct run *r, const struct node *n)
{
	uint64_t v;
	unsigned int o, l;

	switch (n->kind) {
	case N_CONST:
		return n->k;
	case N_FIELD:
		return read_num(r, n->off, n->size);
	case N_MASK:
		v = eval(r, n->a);
		return n->k ? v & n->k : v;
	case N_COND:
		return eval(r, n->a) ? eval(r, n->b) : eval(r, n->c);
	case N_INDEX:
		v = (uint64_t)n->off + eval(r, n->b) * (uint64_t)n->size;
		if (v + (uint64_t)n->size > (uint64_t)r->size) {
			r->bad = true; /* libtraceevent warns */
			return 0;
		}
		v = read_num(r, (int)v, n->size);
		return n->k ? v & n->k : v;
	case N_DYNLEN:
		dyn_loc(r, n->off, n->relative, &o, &l);
		return l;
	default:
		return eval_op(r, n);
	}
}

static bool room(struct run *r, size_t n)
{
	if (r->n + n < FMTC_OUT)
		return true;
	r->bad = true;
	return false;
}

static void put(struct run *r, const char *s, size_t n)
{
	if (room(r, n)) {
		memcpy(r->out + r->n, s, n);
		r->n += n;
	}
}

/* snprintf() of the conversion as written, as trace_seq_printf() would */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void put_slow_int(struct run *r, const struct piece *pc, uint64_t v)
{
	char buf[128];
	int k;

	switch (pc->ls) {
	case -2:
		k = snprintf(buf, sizeof(buf), pc->text, (char)v);
		break;
	case -1:
		k = snprintf(buf, sizeof(buf), pc->text, (short)v);
		break;
	case 0:
		k = snprintf(buf, sizeof(buf), pc->text, (int)v);
		break;
	case 1:
		k = snprintf(buf, sizeof(buf), pc->text, (long)v);
		break;
	default:
		k = snprintf(buf, sizeof(buf), pc->text, (long long)v);
		break;
	}
	if (k < 0 || (size_t)k >= sizeof(buf))
		r->bad = true;
	else
		put(r, buf, (size_t)k);
}

static void put_str(struct run *r, const struct piece *pc, const char *s)
{
	if (pc->fast) {
		put(r, s, strlen(s));
	} else if (room(r, 0)) {
		int k = snprintf(r->out + r->n, FMTC_OUT - r->n, pc->text, s);

		if (k < 0 || r->n + (size_t)k >= FMTC_OUT)
			r->bad = true;
		else
			r->n += (size_t)k;
	}
}
#pragma GCC diagnostic pop

/* %d %u %x as glibc writes them, for the flags, widths and lengths int_fast() accepts.
 * The digits go straight to their place, last first: made in a buffer and copied out,
 * each number cost a call of memcpy() (2 % of a report). */
static void put_int(struct run *r, const struct piece *pc, uint64_t v)
{
	uint64_t mask = pc->bits == 64 ? ~0ULL : (1ULL << pc->bits) - 1;
	bool neg = false, hex = pc->conv == 'x' || pc->conv == 'X';
	size_t pre = 0, len, pad;
	const char *prefix = "";
	char *q;

	v &= mask;
	if (pc->conv == 'd' || pc->conv == 'i') {
		uint64_t sign = 1ULL << (pc->bits - 1);

		if (v & sign) {
			neg = true;
			v = (~v + 1) & mask;
		}
	}
	if (hex) {
		len = v ? (size_t)(67 - __builtin_clzll(v)) / 4 : 1;
		if (pc->alt && v) {
			prefix = pc->conv == 'x' ? "0x" : "0X";
			pre = 2;
		}
	} else {
		len = (size_t)hgt__ndigits(v);
	}
	if (neg) {
		prefix = "-";
		pre = 1;
	}
	pad = (size_t)pc->width > len + pre ? (size_t)pc->width - len - pre : 0;
	if (!room(r, pad + pre + len))
		return;
	q = r->out + r->n;
	if (pad && !pc->left && !pc->zero) {
		memset(q, ' ', pad);
		q += pad;
	}
	for (size_t i = 0; i < pre; i++)
		*q++ = prefix[i];
	if (pad && !pc->left && pc->zero) {
		memset(q, '0', pad);
		q += pad;
	}
	q += len;
	r->n = (size_t)(q - r->out);
	if (hex && pc->conv == 'x') {
		hgt__put_hex_back(q, v, (int)len);
	} else if (hex) {
		do
			*--q = "0123456789ABCDEF"[v & 15];
		while (v >>= 4);
	} else {
		hgt__put_dec_back(q, v);
	}
	if (pad && pc->left) {
		memset(r->out + r->n, ' ', pad);
		r->n += pad;
	}
}

/* @prefix (@plen bytes) and @v as %0*llx of @width (printf's %llx, %08llx, written by
 * hand): the digits go straight to their place, last first */
static void put_hexw_n(struct run *r, const char *prefix, size_t plen, uint64_t v, int width)
{
	int digits = v ? (67 - __builtin_clzll(v)) / 4 : 1;
	char *q;

	if (digits < width)
		digits = width;
	if (!room(r, plen + (size_t)digits))
		return;
	memcpy(r->out + r->n, prefix, plen);
	r->n += plen + (size_t)digits;
	q = r->out + r->n;
	hgt__put_hex_back(q, v, digits);
}

/* The prefix is a string literal (pasted to "": anything else does not compile), its length
 * known here. */
#define put_hexw(r, prefix, v, width) put_hexw_n(r, "" prefix, sizeof(prefix) - 1, v, width)
#define put_hex(r, prefix, v) put_hexw_n(r, "" prefix, sizeof(prefix) - 1, v, 1)

/* print_function(): a kernel address as its function's name */
static void put_func(struct run *r, const struct piece *pc, uint64_t v)
{
	const char *name = tep_find_function(r->tep, v);

	if (!name) {
		put_hex(r, "0x", v);
		return;
	}
	put(r, name, strlen(name));
	if (pc->conv == 'F' || pc->conv == 'S')
		put_hex(r, "+0x", v - tep_find_function_address(r->tep, v));
}

static void run_str(struct run *r, const struct piece *pc, const struct sarg *s);

static void run_flags(struct run *r, const struct piece *pc, const struct sarg *s)
{
	long long v = (long long)eval(r, s->val);
	bool printed = false;

	if (!v) {
		r->bad = true; /* libtraceevent versions differ on a 0 value */
		return;
	}
	for (int i = 0; i < s->nsyms; i++) {
		long long f = s->syms[i].v;

		if (f > 0 && (v & f) == f) {
			if (printed && s->delim)
				put(r, s->delim, strlen(s->delim));
			put_str(r, pc, s->syms[i].str);
			printed = true;
			v &= ~f;
		}
	}
	if (v) {
		if (printed && s->delim)
			put(r, s->delim, strlen(s->delim));
		put_hex(r, "0x", (uint64_t)v);
	}
}

static void run_field_str(struct run *r, const struct piece *pc, const struct sarg *s)
{
	char buf[1024];
	size_t len;

	if (s->off > r->size) {
		r->bad = true;
		return;
	}
	len = s->len < 0 ? (size_t)(r->size - s->off) : (size_t)s->len;
	if ((size_t)s->off + len > (size_t)r->size || len >= sizeof(buf)) {
		r->bad = true;
		return;
	}
	memcpy(buf, r->data + s->off, len);
	buf[len] = 0;
	put_str(r, pc, buf);
}

static void run_str(struct run *r, const struct piece *pc, const struct sarg *s)
{
	unsigned int o, l;
	long long v;

	switch (s->kind) {
	case S_ATOM:
		put_str(r, pc, s->atom);
		break;
	case S_FIELD:
		run_field_str(r, pc, s);
		break;
	case S_DYNSTR:
		dyn_loc(r, s->off, s->relative, &o, &l);
		if (!l || o >= (unsigned int)r->size ||
		    !memchr(r->data + o, 0, (size_t)r->size - o)) {
			r->bad = true;
			return;
		}
		put_str(r, pc, (const char *)r->data + o);
		break;
	case S_SYMBOL:
		v = (long long)eval(r, s->val);
		for (int i = 0; i < s->nsyms; i++)
			if (s->syms[i].v == v) {
				put_str(r, pc, s->syms[i].str);
				return;
			}
		put_hex(r, "0x", (uint64_t)v);
		break;
	case S_FLAGS:
		run_flags(r, pc, s);
		break;
	default:
		run_str(r, pc, eval(r, s->val) ? s->t : s->f);
		break;
	}
}

static void run_piece(struct run *r, const struct piece *pc)
{
	uint64_t v;

	switch (pc->kind) {
	case P_TEXT:
		put(r, pc->text, pc->len);
		break;
	case P_INT:
		v = eval(r, pc->val);
		if (pc->fast)
			put_int(r, pc, v);
		else
			put_slow_int(r, pc, v);
		break;
	case P_PTR:
		v = eval(r, pc->val);
		if (v)
			put_hex(r, "0x", v);
		else
			put(r, "(nil)", 5);
		break;
	case P_FUNC:
		put_func(r, pc, eval(r, pc->val));
		break;
	default:
		run_str(r, pc, pc->str);
		break;
	}
}

/* ---- plugins, run ---- */

/* @prefix, @v in decimal (at least @width digits, zero-padded; @neg: a minus before),
 * @suffix: printf's %llu, %03llu, %lld, %d written by hand */
static void put_num(struct run *r, const char *prefix, bool neg, uint64_t v, int width,
		    const char *suffix)
{
	size_t plen = strlen(prefix), slen = strlen(suffix), nd = (size_t)hgt__ndigits(v);
	size_t pad = width > 0 && (size_t)width > nd ? (size_t)width - nd : 0;
	char *q;

	if (!room(r, plen + neg + pad + nd + slen))
		return;
	q = r->out + r->n;
	memcpy(q, prefix, plen);
	q += plen;
	if (neg)
		*q++ = '-';
	memset(q, '0', pad);
	q += pad + nd;
	hgt__put_dec_back(q, v);
	memcpy(q, suffix, slen);
	r->n = (size_t)(q + slen - r->out);
}

static void put_s64(struct run *r, const char *prefix, int64_t v, const char *suffix)
{
	put_num(r, prefix, v < 0, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, 1, suffix);
}

/* A comm field, as printed ("%.*s" of its size) and registered for @pid. */
static void plugin_comm(struct run *r, const struct prog *p, int i, int pid)
{
	char comm[64];
	size_t n;

	if (p->fo[i] < 0)
		return;
	if (p->fo[i] + p->fs[i] > r->size) {
		r->bad = true;
		return;
	}
	n = strnlen((const char *)r->data + p->fo[i], (size_t)p->fs[i]);
	memcpy(comm, r->data + p->fo[i], n);
	comm[n] = 0;
	put(r, comm, n);
	put(r, ":", 1);
	tep_register_comm(r->tep, comm, pid);
}

static uint64_t plugin_num(const struct run *r, const struct prog *p, int i)
{
	return read_num(r, p->fo[i], p->fs[i]);
}

static void plugin_state(struct run *r, int val)
{
	static const char states[] = "SDTtZXxW";
	bool found = false;

	for (int i = 0; i < 8; i++) {
		if (!(val & (1 << i)))
			continue;
		if (found)
			put(r, "|", 1);
		found = true;
		put(r, &states[i], 1);
	}
	if (!found)
		put(r, "R", 1);
}

/* " function=NAME/0x(ADDR - VALUE)" of slot H_FUNC */
static void plugin_func(struct run *r, const struct prog *p)
{
	uint64_t v;
	const char *name;
	size_t n;

	if (p->fo[H_FUNC] < 0)
		return;
	v = plugin_num(r, p, H_FUNC);
	name = tep_find_function(r->tep, v);
	if (!name) {
		put_hexw(r, " function=0x", v, 8);
		return;
	}
	n = strlen(name);
	if (n > 100) { /* its buffer is 128 bytes: it would cut the name */
		r->bad = true;
		return;
	}
	put(r, " function=", 10);
	put(r, name, n);
	put_hex(r, "/0x", tep_find_function_address(r->tep, v) - v);
}

/* " FUNC+0xOFF" of a guest rip, from the kvm plugin's hooks (kvm-guest-func.c), as the
 * plugin adds it */
static void kvm_rip_func(struct run *r, const struct prog *p, uint64_t rip)
{
	struct tep_record rec = { .data = (void *)r->data, .size = r->size };
	unsigned long long ip = rip;
	int pid = p->fo[K_PID] >= 0 ? (int)plugin_num(r, p, K_PID) : tep_data_pid(r->tep, &rec);
	size_t len;
	const char *func = hgt__kvm_func(pid, &ip, &len);

	if (!func)
		return;
	put(r, " ", 1);
	put(r, func, len);
	if (ip != rip)
		put_hex(r, "+0x", rip - ip);
}

/* kvm_exit's "reason ..." for @isa and @reason: the plugin's own words, taken from its
 * text of the first record with them (that record is printed by libtraceevent) */
static const struct kvm_reason *kvm_reason(struct run *r, const struct prog *p, uint64_t isa,
					   uint64_t reason)
{
	struct hgt__fmtc *fc = r->fc;
	struct kvm_reason *k;
	struct tep_record rec = { .data = (void *)r->data, .size = r->size };
	const char *t, *end;

	for (int i = 0; i < fc->nr_reasons; i++) {
		k = &fc->reasons[i];
		if (k->ev == p->ev && k->isa == isa && k->reason == reason)
			return k->len ? k : NULL;
	}
	if (fc->nr_reasons == KVM_REASONS)
		return NULL;
	k = &fc->reasons[fc->nr_reasons++];
	*k = (struct kvm_reason){ .ev = p->ev, .isa = isa, .reason = reason };
	trace_seq_reset(&fc->plugin);
	tep_print_event(r->tep, &fc->plugin, &rec, "%s", TEP_PRINT_INFO);
	trace_seq_terminate(&fc->plugin);
	t = fc->plugin.buffer;
	end = strstr(t, " rip 0x");
	if (!strncmp(t, "reason ", 7) && end && (size_t)(end - t) < sizeof(k->text)) {
		memcpy(k->text, t, (size_t)(end - t));
		k->len = (uint8_t)(end - t);
	}
	return NULL; /* this record: libtraceevent's */
}

static void run_kvm(struct run *r, const struct prog *p)
{
	uint64_t rip;

	if (p->plugin == PL_KVM_ENTRY) {
		put_num(r, " vcpu ", false, (unsigned int)plugin_num(r, p, K_VCPU), 1, "");
	} else {
		const struct kvm_reason *k =
			kvm_reason(r, p, p->fo[K_ISA] >= 0 ? plugin_num(r, p, K_ISA) : 1,
				   plugin_num(r, p, K_REASON));

		if (!k) {
			r->bad = true;
			return;
		}
		put(r, k->text, k->len);
	}
	rip = plugin_num(r, p, K_RIP);
	put_hex(r, " rip 0x", rip);
	kvm_rip_func(r, p, rip);
	if (p->plugin == PL_KVM_EXIT && p->fo[K_INFO1] >= 0) {
		put_hex(r, " info ", plugin_num(r, p, K_INFO1));
		put_hex(r, " ", plugin_num(r, p, K_INFO2));
	}
}

static void run_plugin(struct run *r, const struct prog *p)
{
	uint64_t v;

	switch (p->plugin) {
	case PL_KVM_EXIT:
	case PL_KVM_ENTRY:
		run_kvm(r, p);
		break;
	case PL_SWITCH:
		v = plugin_num(r, p, F_PID);
		plugin_comm(r, p, F_COMM, (int)v);
		put_s64(r, "", (int64_t)v, " ");
		put_s64(r, "[", (int)plugin_num(r, p, F_PRIO), "] ");
		plugin_state(r, (int)plugin_num(r, p, F_STATE));
		put(r, " ==> ", 5);
		v = plugin_num(r, p, F_NPID);
		plugin_comm(r, p, F_NCOMM, (int)v);
		put_s64(r, "", (int64_t)v, "");
		put_s64(r, " [", (int)plugin_num(r, p, F_NPRIO), "]");
		break;
	case PL_WAKEUP:
		v = plugin_num(r, p, W_PID);
		plugin_comm(r, p, W_COMM, (int)v);
		put_s64(r, "", (int64_t)v, "");
		put_s64(r, " [", (int64_t)plugin_num(r, p, W_PRIO), "]");
		if (p->fo[W_SUCCESS] >= 0)
			put_s64(r, " success=", (int64_t)plugin_num(r, p, W_SUCCESS), "");
		put_num(r, " CPU:", false, plugin_num(r, p, W_CPU), 3, "");
		break;
	default:
		put_hex(r, "hrtimer=0x", plugin_num(r, p, H_TIMER));
		if (p->plugin == PL_HRT_EXPIRE) {
			put_num(r, " now=", false, plugin_num(r, p, H_NOW), 1, "");
			plugin_func(r, p);
		} else {
			plugin_func(r, p);
			put_num(r, " expires=", false, plugin_num(r, p, H_EXPIRES), 1, "");
			put_num(r, " softexpires=", false, plugin_num(r, p, H_SOFT), 1, "");
		}
		break;
	}
}

/* The compiled program's text for @rec, or NULL when libtraceevent must print it. */
static const char *run_prog(struct hgt__fmtc *fc, const struct prog *p, struct tep_handle *tep,
			    const struct tep_record *rec, size_t *len, char *dst)
{
	struct run r = { .fc = fc,
			 .data = rec->data,
			 .size = rec->size,
			 .swap = p->swap,
			 .tep = tep,
			 .out = dst ? dst : fc->out };

	if (p->plugin)
		run_plugin(&r, p);
	for (const struct piece *pc = p->pieces; pc && !r.bad; pc = pc->next)
		run_piece(&r, pc);
	if (r.bad)
		return NULL;
	*len = r.n;
	return r.out;
}

static void verify(struct hgt__fmtc *fc, struct tep_handle *tep, const struct tep_event *ev,
		   struct tep_record *rec, const char *text, size_t len)
{
	size_t n;

	trace_seq_reset(&fc->check);
	tep_print_event(tep, &fc->check, rec, "%s", TEP_PRINT_INFO);
	n = fc->check.len;
	if (len == n && !memcmp(text, fc->check.buffer, n))
		return;
	if (fc->differ++ < 20)
		fprintf(stderr,
			"fastfmt verify: %s:%s: compiled \"%.*s\", libtraceevent \"%.*s\"\n",
			ev->system, ev->name, (int)len, text, (int)n, fc->check.buffer);
}

static void count_fallback(struct hgt__fmtc *fc, const struct tep_event *ev)
{
	fc->fallback++;
	for (int i = 0; i < 16; i++)
		if (!fc->back[i].ev || fc->back[i].ev == ev) {
			if (!fc->back[i].ev)
				snprintf(fc->back[i].name, sizeof(fc->back[i].name), "%s:%s",
					 ev->system, ev->name);
			fc->back[i].ev = ev;
			fc->back[i].n++;
			return;
		}
}

/* Whether @ev's info is printed by a compiled program (for most of its records). */
bool hgt__fmtc_has(struct hgt__fmtc *fc, struct tep_event *ev)
{
	return fc && ev && prog_of(fc, ev);
}

/**
 * hgt__fmtc_text - @rec's info text by @ev's compiled print format, or NULL when
 * libtraceevent must print it (not compiled, or a record it would print differently).
 * The record must hold every fixed field of @ev. Sets *@len; the text stays valid until
 * the next call.
 */
const char *hgt__fmtc_text(struct hgt__fmtc *fc, struct tep_handle *tep, struct tep_event *ev,
			   struct tep_record *rec, size_t *len, char *dst)
{
	const struct prog *p;
	const char *t;

	if (!fc || !ev)
		return NULL;
	p = prog_of(fc, ev);
	t = p ? run_prog(fc, p, tep, rec, len, dst) : NULL;
	if (fc->verify) {
		if (t) {
			fc->compiled++;
			verify(fc, tep, ev, rec, t, *len);
		} else {
			count_fallback(fc, ev);
		}
	}
	return t;
}
