// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The flight recorder's triggers: what the user writes ("wakeup>50ms:rt-task"), and the
 * search of a host + guest pair for what goes over them, with hgt_why()'s own measure (a
 * guest's delays) and its own split of each vCPU thread's time (the host's stretches).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <traceevent/event-parse.h>

#include <hgtrace/why.h>

#include "../common/common-local.h"
#include "../private/why.h"
#include "flight-local.h"

/* @s[0..len) as a duration: a number and ns, us, ms or s (bare: in @unit_ns, 0: refused). */
int hgt__parse_duration(const char *s, size_t len, uint64_t unit_ns, uint64_t *ns)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = { { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
	char buf[48], *end;
	double v;

	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtod(buf, &end);
	if (errno || end == buf || !(v >= 0) || buf[0] == '-' || buf[0] == '+')
		return -EINVAL;
	if (!*end) {
		if (!unit_ns)
			return -EINVAL;
	} else {
		unit_ns = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(end, units[i].name))
				unit_ns = units[i].ns;
		if (!unit_ns)
			return -EINVAL;
	}
	if (v * (double)unit_ns >= 1.8e19)
		return -EINVAL;
	*ns = (uint64_t)(v * (double)unit_ns + 0.5);
	return 0;
}

static int bad(const char *text, const char *why)
{
	return hgt__errorf(EINVAL, "trigger '%s': %s", text, why);
}

/* "FROM[:FILTER],TO[:FILTER]" of a pair into @t. */
static int parse_pair(const char *text, const char *p, size_t n, struct hgt__trigger *t)
{
	const char *comma = memchr(p, ',', n);

	if (!comma || comma == p || comma + 1 == p + n)
		return bad(text, "expected pair:FROM[:FILTER],TO[:FILTER]>DUR");
	t->from = strndup(p, (size_t)(comma - p));
	t->to = strndup(comma + 1, (size_t)(p + n - comma - 1));
	return t->from && t->to ? 0 : -ENOMEM;
}

/* ":COMM" or ":PID" after a wakeup's duration. */
static int parse_task(const char *text, const char *p, struct hgt__trigger *t)
{
	char *end;
	long v;

	if (!*p)
		return bad(text, "expected wakeup>DUR:COMM or wakeup>DUR:PID");
	errno = 0;
	v = strtol(p, &end, 10);
	if (!errno && !*end && v > 0 && v < (1L << 30)) {
		t->pid = (int)v;
		return 0;
	}
	if (strlen(p) > 15)
		return bad(text, "a task's name is at most 15 characters (the kernel's comm)");
	t->comm = strdup(p);
	return t->comm ? 0 : -ENOMEM;
}

/**
 * hgt__trigger_parse - @text ("KIND[:ARG]>DUR[:TASK]") into @t; -EINVAL said.
 */
int hgt__trigger_parse(const char *text, struct hgt__trigger *t)
{
	static const struct {
		const char *name;
		enum hgt__trig_kind kind;
		bool arg;
	} kinds[] = { { "wakeup", HGT__TRIG_WAKEUP, false },   { "timer", HGT__TRIG_TIMER, false },
		      { "pair", HGT__TRIG_PAIR, true },	       { "pair-cpu", HGT__TRIG_PAIR, true },
		      { "preempt", HGT__TRIG_PREEMPT, false }, { "exit", HGT__TRIG_EXIT, true },
		      { "marker", HGT__TRIG_MARKER, true } };
	const char *gt, *dur_end;
	size_t klen;
	int ret;

	memset(t, 0, sizeof(*t));
	t->text = text;
	gt = strrchr(text, '>');
	klen = strcspn(text, ":>");
	ret = -1;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strlen(kinds[i].name) == klen && !strncmp(text, kinds[i].name, klen)) {
			t->kind = kinds[i].kind;
			t->per_cpu = !strcmp(kinds[i].name, "pair-cpu");
			ret = kinds[i].arg;
		}
	if (ret < 0)
		return bad(
			text,
			"expected wakeup>DUR[:COMM|PID], timer>DUR, pair:FROM,TO>DUR, pair-cpu:FROM,TO>DUR, preempt>DUR, exit:REASON>DUR or marker:TEXT");
	if (t->kind == HGT__TRIG_MARKER) { /* the rest is the text, '>' and all */
		if (text[klen] != ':' || !text[klen + 1])
			return bad(text, "expected marker:TEXT");
		t->reason = strdup(text + klen + 1);
		return t->reason ? 0 : -ENOMEM;
	}
	if (!gt || (ret && text[klen] != ':') || (!ret && text[klen] != '>'))
		return bad(text, ret ? "expected KIND:WHAT>DUR" : "expected KIND>DUR");
	/* the duration runs to the end, or to a wakeup's ":TASK" */
	dur_end =
		t->kind == HGT__TRIG_WAKEUP && strchr(gt, ':') ? strchr(gt, ':') : gt + strlen(gt);
	if (hgt__parse_duration(gt + 1, (size_t)(dur_end - gt - 1), 0, &t->dur_ns))
		return bad(text, "the duration after '>' is a number and ns, us, ms or s (50ms)");
	if (t->kind == HGT__TRIG_WAKEUP && *dur_end)
		ret = parse_task(text, dur_end + 1, t);
	else if (t->kind == HGT__TRIG_PAIR)
		ret = parse_pair(text, text + klen + 1, (size_t)(gt - text - klen - 1), t);
	else if (t->kind == HGT__TRIG_EXIT)
		ret = gt > text + klen + 1 && (t->reason = strndup(text + klen + 1,
								   (size_t)(gt - text - klen - 1)))
			      ? 0
			      : bad(text, "expected exit:REASON>DUR (REASON as kvm_exit names it)");
	else
		ret = 0;
	if (ret)
		hgt__trigger_free(t);
	return ret;
}

void hgt__trigger_free(struct hgt__trigger *t)
{
	free(t->comm);
	free(t->from);
	free(t->to);
	free(t->reason);
	t->comm = t->from = t->to = t->reason = NULL;
}

bool hgt__hit_same(const struct hgt__hit *a, const struct hgt__hit *b)
{
	/* a guest's times in host time move by what its sync learns between two searches
	 * (and in a saved window's): a marker, which has no length, is the same one within
	 * this much, with the same text */
	const uint64_t slack = a->kind == HGT__TRIG_MARKER ? 1000000 : 0;

	return a->kind == b->kind && (a->kind != HGT__TRIG_PAIR || a->trig == b->trig) &&
	       a->input == b->input && a->pid == b->pid && a->cpu == b->cpu &&
	       (a->kind != HGT__TRIG_MARKER || !strcmp(a->cause, b->cause)) &&
	       a->from_ns <= b->to_ns + slack && b->from_ns <= a->to_ns + slack;
}

struct found {
	struct hgt__hit *h;
	int n, cap;
	int err;
};

static struct hgt__hit *add_hit(struct found *f)
{
	if (f->n == f->cap) {
		int cap = f->cap ? f->cap * 2 : 16;
		struct hgt__hit *h = realloc(f->h, sizeof(*h) * (size_t)cap);

		if (!h) {
			f->err = -ENOMEM;
			return NULL;
		}
		f->h = h;
		f->cap = cap;
	}
	memset(&f->h[f->n], 0, sizeof(f->h[0]));
	return &f->h[f->n++];
}

/* The host's stretches: per vCPU thread, one run of PREEMPTED segments (whoever ran), or
 * one EXIT segment of a reason, longer than a trigger's. Segments come per thread in time
 * order. */
struct stretch {
	const struct hgt__trigger *t;
	int nt;
	struct found *f;
	int input, cpu, pid; /* the run of PREEMPTED segments so far */
	uint64_t from, to, top_ns;
	char top[64];
	bool marker_ev; /* a marker trigger: every record is looked at */
	const struct hgt__why_edges *e;
	uint64_t open; /* the earliest start of a stretch that may go on after e->upto */
};

/* A stretch up to @to that runs to the host's last record is not over. */
static bool going_on(const struct stretch *s, uint64_t to)
{
	return s->e->host_end && to >= s->e->host_end;
}

/* A stretch from @from to @to, of a trigger's kind, may go on after the span a search
 * takes hits in, or goes on: the next search needs it from its start. */
static void open_at(struct stretch *s, uint64_t from, uint64_t to)
{
	if ((to > s->e->upto || going_on(s, to)) && from < s->open)
		s->open = from;
}

static void end_run(struct stretch *s)
{
	for (int k = 0; s->to && k < s->nt; k++)
		if (s->t[k].kind == HGT__TRIG_PREEMPT)
			open_at(s, s->from, s->to);
	for (int k = 0; s->to && k < s->nt; k++) {
		struct hgt__hit *h;

		if (s->t[k].kind != HGT__TRIG_PREEMPT || s->to - s->from <= s->t[k].dur_ns ||
		    going_on(s, s->to))
			continue;
		h = add_hit(s->f);
		if (!h)
			return;
		*h = (struct hgt__hit){ .trig = k,
					.kind = HGT__TRIG_PREEMPT,
					.input = s->input,
					.cpu = s->cpu,
					.pid = s->pid,
					.from_ns = s->from,
					.to_ns = s->to };
		snprintf(h->cause, sizeof(h->cause), "preempted, longest by %s", s->top);
	}
	s->to = 0;
}

static void on_segment(void *arg, int input, int cpu, int pid, uint64_t from, uint64_t to,
		       const struct hgt_why_part *part)
{
	struct stretch *s = arg;

	if (s->to && (input != s->input || cpu != s->cpu || pid != s->pid ||
		      part->state != HGT_WHY_PREEMPTED || from != s->to))
		end_run(s);
	if (part->state == HGT_WHY_PREEMPTED) {
		if (!s->to) {
			s->input = input;
			s->cpu = cpu;
			s->pid = pid;
			s->from = from;
			s->top_ns = 0;
		}
		s->to = to;
		if (to - from > s->top_ns) {
			s->top_ns = to - from;
			if (part->id)
				snprintf(s->top, sizeof(s->top), "%s (pid %d)", part->what,
					 part->id);
			else
				snprintf(s->top, sizeof(s->top), "no task (its CPU idle)");
		}
	}
	for (int k = 0; part->state == HGT_WHY_EXIT && k < s->nt; k++) {
		const struct hgt__trigger *t = &s->t[k];
		struct hgt__hit *h;

		/* part->what: "exit REASON" */
		if (t->kind != HGT__TRIG_EXIT || strncmp(part->what, "exit ", 5) ||
		    strcasecmp(part->what + 5, t->reason))
			continue;
		open_at(s, from, to);
		if (to - from <= t->dur_ns || going_on(s, to))
			continue;
		h = add_hit(s->f);
		if (!h)
			return;
		*h = (struct hgt__hit){ .trig = k,
					.kind = HGT__TRIG_EXIT,
					.input = input,
					.cpu = cpu,
					.pid = pid,
					.from_ns = from,
					.to_ns = to };
		snprintf(h->cause, sizeof(h->cause), "%s", part->what);
	}
}

/* Each record of the pass: an ftrace print (a trace_marker write) holding a marker
 * trigger's text is a hit at its time. */
static void on_record(void *arg, int input, struct tep_handle *tep, struct tep_record *rec)
{
	struct stretch *s = arg;
	struct tep_format_field *field;
	struct tep_event *ev;
	const char *buf;
	int len;

	if (!s->marker_ev || !tep)
		return;
	ev = tep_find_event_by_record(tep, rec);
	if (!ev || strcmp(ev->name, "print") || strcmp(ev->system, "ftrace"))
		return;
	/* "char buf[]": to the record's end (its size is 0) */
	field = tep_find_field(ev, "buf");
	if (!field || field->offset >= rec->size)
		return;
	buf = (const char *)rec->data + field->offset;
	len = field->size ? field->size : rec->size - field->offset;
	if (field->offset + len > rec->size)
		return;
	for (int k = 0; len > 0 && k < s->nt; k++) {
		const struct hgt__trigger *t = &s->t[k];
		size_t n = strnlen(buf, (size_t)len);
		struct hgt__hit *h;

		if (t->kind != HGT__TRIG_MARKER || !memmem(buf, n, t->reason, strlen(t->reason)))
			continue;
		h = add_hit(s->f);
		if (!h)
			return;
		*h = (struct hgt__hit){ .trig = k,
					.kind = HGT__TRIG_MARKER,
					.input = input,
					.cpu = rec->cpu,
					.pid = tep_data_pid(tep, rec),
					.from_ns = rec->ts,
					.to_ns = rec->ts };
		snprintf(h->comm, sizeof(h->comm), "%s", tep_data_comm_from_pid(tep, h->pid));
		snprintf(h->cause, sizeof(h->cause), "%.*s", (int)strcspn(buf, "\n"), buf);
		break;
	}
}

/* Which of @inputs why's @name is (it names a file by its path's last part). */
static int input_of(const char *const *inputs, int n, const char *name)
{
	for (int i = 0; name && i < n; i++) {
		const char *base = strrchr(inputs[i], '/');

		if (!strcmp(inputs[i], name) || (base && !strcmp(base + 1, name)))
			return i;
	}
	return -1;
}

static bool task_matches(const struct hgt__trigger *t, const struct hgt_why_delay *d)
{
	return (!t->pid || t->pid == d->pid) && (!t->comm || !strcmp(t->comm, d->comm));
}

/* The delays of @r over trigger @k (of kind @kind) as hits. With guests, the host's own
 * wakeups and timers are none: why counts them while it knows no vCPU thread (a session's
 * first searches, before the host file says its guests' threads). */
static void delay_hits(const struct hgt__trigger *t, int k, const struct hgt_why_result *r,
		       const char *const *inputs, int n, struct found *f)
{
	unsigned int want = t[k].kind == HGT__TRIG_WAKEUP  ? HGT_WHY_WAKEUP
			    : t[k].kind == HGT__TRIG_TIMER ? HGT_WHY_TIMER
							   : HGT_WHY_PAIR;

	for (int i = 0; i < r->nr; i++) {
		const struct hgt_why_delay *d = &r->d[i];
		int input = input_of(inputs, n, d->input);
		struct hgt__hit *h;

		if (d->kind != want || d->to_ns - d->from_ns <= t[k].dur_ns ||
		    (want == HGT_WHY_WAKEUP && !task_matches(&t[k], d)) ||
		    (want != HGT_WHY_PAIR && n > 1 && input == 0))
			continue;
		h = add_hit(f);
		if (!h)
			return;
		*h = (struct hgt__hit){ .trig = k,
					.kind = t[k].kind,
					.input = input,
					.cpu = d->cpu,
					.pid = d->pid,
					.from_ns = d->from_ns,
					.to_ns = d->to_ns };
		snprintf(h->comm, sizeof(h->comm), "%s", d->comm);
		hgt__why_cause(d, h->cause, sizeof(h->cause));
	}
}

/* why's options for trigger @t alone (a pair), or for every wakeup, timer and host one. */
static void why_opts(struct hgt_why_opts *wo, const struct hgt__trigger *t, int nt, int pair,
		     const char *const *inputs, int n)
{
	memset(wo, 0, sizeof(*wo));
	wo->sz = sizeof(*wo);
	wo->inputs = inputs;
	wo->nr_inputs = n;
	wo->quiet = true;
	wo->threshold_ns = UINT64_MAX;
	if (pair >= 0) {
		wo->kinds = HGT_WHY_PAIR;
		wo->from = t[pair].from;
		wo->to = t[pair].to;
		wo->match_cpu = t[pair].per_cpu;
		wo->threshold_ns = t[pair].dur_ns + 1;
		return;
	}
	for (int k = 0; k < nt; k++) {
		if (t[k].kind == HGT__TRIG_WAKEUP)
			wo->kinds |= HGT_WHY_WAKEUP;
		else if (t[k].kind == HGT__TRIG_TIMER)
			wo->kinds |= HGT_WHY_TIMER;
		else
			continue;
		if (t[k].dur_ns + 1 < wo->threshold_ns)
			wo->threshold_ns = t[k].dur_ns + 1;
	}
	if (!wo->kinds) /* host stretches alone: why's pass for its segments, no delay kept */
		wo->kinds = HGT_WHY_WAKEUP;
}

/*
 * Of the @n hits at @h, those that lie where the files are whole. They end by the time
 * every CPU of every input has reached (@e->all_to), or @lag_ns before the newest record (a
 * recorder writes a CPU's events within its flush interval, and a search runs a tick late
 * at most). A delay ending after that may be one whose end is on a CPU whose pages have not
 * come yet (a task that ran on CPU 1 seen only when it next runs on CPU 0): the next search
 * decides, and *@deferred counts it. They begin once every CPU of their input has its
 * records there (@e->all_from): a CPU's pages from just before the window can hold a
 * wakeup whose run, on another CPU, is in that CPU's pages before the window; such a hit
 * is dropped (a search whose window holds its start decides). Markers are whole as they
 * are. Returns how many are kept (first); the span they are taken in into @live.
 */
static int whole_only(struct hgt__hit *h, int n, const struct hgt__why_edges *e, int inputs,
		      struct hgt__live *live, int *deferred)
{
	uint64_t upto = e->upto;
	int kept = 0;

	live->upto = upto;
	live->from = 0;
	for (int i = 0; i < inputs; i++)
		if (e->all_from[i] > live->from)
			live->from = e->all_from[i];
	for (int i = 0; i < n; i++) {
		if (h[i].kind == HGT__TRIG_MARKER)
			;
		else if (h[i].to_ns > upto) {
			(*deferred)++;
			continue;
		} else if (h[i].input >= 0 && h[i].from_ns < e->all_from[h[i].input]) {
			continue;
		} else if (h[i].from_ns < live->read_from) {
			continue;
		}
		h[kept++] = h[i];
	}
	return kept;
}

/**
 * hgt__trigger_search - every hit of the triggers @t in @inputs: one pass of why for the
 * wakeups, timers and host stretches, one per pair. @live: NULL for files that are whole,
 * else how far behind their newest record a recording's CPUs may be, and which CPUs' files
 * begin before the window (whole_only()).
 */
int hgt__trigger_search(const struct hgt__trigger *t, int nt, const char *const *inputs, int n,
			struct hgt__live *live, struct hgt__hit **hits, int *nr, int *deferred)
{
	struct found f = { .h = *hits, .n = *nr, .cap = *nr };
	uint64_t *from = calloc((size_t)n + 1, sizeof(*from));
	struct hgt__why_edges e = { .all_from = from,
				    .context = live ? live->context : NULL,
				    .reach = live ? live->reach : NULL,
				    .opened = live ? live->opened : NULL,
				    .ctx_arg = live ? live->arg : NULL,
				    .lag_ns = live ? live->lag_ns : 0 };
	uint64_t resume = UINT64_MAX;
	int first = *nr, later = 0;
	bool common = false, host_alone = live && live->host_alone;

	if (!from)
		f.err = -ENOMEM;
	for (int k = 0; k < nt; k++)
		common |= t[k].kind != HGT__TRIG_PAIR && t[k].kind != HGT__TRIG_MANUAL;
	for (int pair = common ? -1 : 0; !f.err && pair < nt; pair++) {
		struct stretch s = { .t = t, .nt = nt, .f = &f, .e = &e, .open = UINT64_MAX };

		for (int k = 0; k < nt; k++)
			s.marker_ev |= t[k].kind == HGT__TRIG_MARKER;
		struct hgt_why_result *r;
		struct hgt_why_opts wo;

		if (pair >= 0 && (t[pair].kind != HGT__TRIG_PAIR || host_alone))
			continue;
		why_opts(&wo, t, nt, pair, inputs, n);
		r = hgt__why_scan(&wo, pair < 0 ? on_segment : NULL,
				  pair < 0 && s.marker_ev ? on_record : NULL, &s, &e);
		if (!r) {
			f.err = -errno;
			break;
		}
		end_run(&s);
		/* a pass's edges: the same inputs, the same upto; the earliest need of any */
		if (e.open_from < resume)
			resume = e.open_from;
		if (s.open < resume)
			resume = s.open;
		e.reach = NULL; /* said once */
		for (int k = 0; k < nt && !host_alone; k++)
			if (pair < 0 ? t[k].kind == HGT__TRIG_WAKEUP || t[k].kind == HGT__TRIG_TIMER
				     : k == pair)
				delay_hits(t, k, r, inputs, n, &f);
		hgt_why_free(r);
	}
	if (!f.err && live) {
		f.n = first + whole_only(f.h + first, f.n - first, &e, n, live, &later);
		live->resume = resume < e.upto ? resume : e.upto;
	}
	free(from);
	if (deferred)
		*deferred = later;
	*hits = f.h;
	*nr = f.n;
	return f.err;
}

/**
 * hgt__trigger_explain - @h found again in a saved window, and said as why says it.
 */
int hgt__trigger_explain(const struct hgt__trigger *t, const char *const *inputs, int n,
			 struct hgt__hit *h, FILE *log)
{
	struct hgt__hit *hits = NULL;
	int nr = 0, ret, found = 0;

	if (h->trig < 0)
		return 0;
	ret = hgt__trigger_search(t, h->trig + 1, inputs, n, NULL, &hits, &nr, NULL);
	for (int i = 0; !ret && i < nr && !found; i++)
		if (hgt__hit_same(&hits[i], h)) {
			if (!hits[i].comm[0])
				memcpy(hits[i].comm, h->comm, sizeof(h->comm));
			*h = hits[i];
			found = 1;
		}
	free(hits);
	if (ret || !found || !log || t[h->trig].kind == HGT__TRIG_PREEMPT ||
	    t[h->trig].kind == HGT__TRIG_EXIT || t[h->trig].kind == HGT__TRIG_MARKER)
		return ret ? ret : found;
	/* the delay as why prints it: its parts and its verdict */
	{
		struct hgt_why_opts wo;
		struct hgt_why_result *r;

		why_opts(&wo, t, h->trig + 1, t[h->trig].kind == HGT__TRIG_PAIR ? h->trig : -1,
			 inputs, n);
		wo.threshold_ns = t[h->trig].dur_ns + 1;
		r = hgt_why(&wo);
		for (int i = 0; r && i < r->nr; i++) {
			const struct hgt_why_delay *d = &r->d[i];

			if (d->pid == h->pid && d->cpu == h->cpu && d->from_ns == h->from_ns &&
			    d->to_ns == h->to_ns) {
				struct hgt_why_result one = *r;

				one.nr = 1;
				one.d = &r->d[i];
				hgt_why_print(&one, log, false);
				break;
			}
		}
		hgt_why_free(r);
	}
	return found;
}
