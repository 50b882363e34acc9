// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * hgt_infer_pair(): the host windows of each vCPU thread and the guest events of each guest
 * CPU, for hgt_infer_offset(). The windows are built so that they always contain the real
 * guest-mode (or running) time, even when the host lost records:
 *  - kvm: entry -> exit; an exit after an exit (its entry lost) is a window from the
 *    previous exit; an entry after an entry (its exit lost) one up to the new entry;
 *  - sched: a thread switched in runs until it is switched out, or until the next switch
 *    on that CPU if the switch-out was lost; one switched out with no switch-in seen ran
 *    since the previous switch on that CPU;
 *  - before a thread's first record and after its last the host knows nothing (allowed),
 *    and so is the time covered by a page whose missed-events flag is set, on any CPU;
 *  - a host file marked as a window (a flight recorder's, a restored recording's:
 *    HGT__WINDOW_TAG), whose CPUs' pages begin and end at different times: outside the
 *    span every CPU with records covers, nothing is known either.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include <hgtrace/clock.h>
#include <hgtrace/infer.h>
#include <hgtrace/merge.h>
#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "../private/tracedat.h"
#include "merge-local.h"

enum { K_NONE, K_IN, K_OUT };

/* Timestamps beyond this (48 years of a 3 GHz TSC) are corrupt: refused, so that offsets
 * and spans stay far from int64 overflow. */
#define HGT__TS_MAX (1ULL << 62)

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

struct wins {
	struct hgt_infer_window *w;
	size_t n, cap;
};

struct thr {
	int pid;
	int kind;		/* K_NONE before its first record */
	int64_t last;		/* time of its last record */
	int64_t open;		/* K_IN: since when */
	int cpu;		/* sched: the CPU it runs on (K_IN) */
	int64_t span_lo;	/* before this nothing is known */
	int64_t cut_lo, cut_hi; /* a window's file: outside this nothing is known */
	struct wins w;
};

static int wins_add(struct wins *s, int64_t start, int64_t end)
{
	if (hgt__grow(&s->w, &s->cap, s->n + 1, sizeof(*s->w), 256))
		return -ENOMEM;
	s->w[s->n++] = (struct hgt_infer_window){ start, end };
	return 0;
}

static struct thr *find(struct thr *t, int n, int pid)
{
	for (int i = 0; i < n; i++)
		if (t[i].pid == pid)
			return &t[i];
	return NULL;
}

/* A record of thread @t at @ts: its first sets where the host's knowledge starts. */
static void seen(struct thr *t, int64_t ts, int64_t known_from)
{
	if (t->kind == K_NONE)
		t->span_lo = known_from;
	t->last = ts;
}

static int kvm_record(struct thr *t, bool entry, int64_t ts)
{
	int ret = 0;

	if (entry) {
		if (t->kind == K_IN) /* its exit was lost */
			ret = wins_add(&t->w, t->open, ts);
		seen(t, ts, ts);
		t->kind = K_IN;
		t->open = ts;
	} else {
		if (t->kind == K_IN)
			ret = wins_add(&t->w, t->open, ts);
		else if (t->kind == K_OUT) /* its entry was lost */
			ret = wins_add(&t->w, t->last, ts);
		/* the first record an exit: in guest mode for who knows how long before */
		seen(t, ts, ts + 1);
		t->kind = K_OUT;
	}
	return ret;
}

struct sched {
	int64_t *last_switch; /* per host CPU, -1 none */
	int *running;	      /* per host CPU: index of the thread switched in, -1 */
	int nr_cpus;
};

static int sched_record(struct sched *s, struct thr *t, int nt, int cpu, int prev, int next,
			int64_t ts)
{
	int ret = 0;

	if (cpu < 0 || cpu >= s->nr_cpus)
		return 0;
	for (int i = 0; i < nt && !ret; i++) {
		struct thr *x = &t[i];

		if (x->pid == prev) {
			if (x->kind == K_IN && x->cpu == cpu)
				ret = wins_add(&x->w, x->open, ts);
			else if (s->last_switch[cpu] >= 0)
				/* its switch-in was lost: it ran since the previous switch here */
				ret = wins_add(&x->w, s->last_switch[cpu], ts);
			else if (x->kind == K_IN) /* switched in elsewhere, out here */
				ret = wins_add(&x->w, x->open, ts);
			seen(x, ts, ts + 1);
			x->kind = K_OUT;
		} else if (x->kind == K_IN && x->cpu == cpu) {
			/* its switch-out was lost: it ran until this switch */
			ret = wins_add(&x->w, x->open, ts);
			x->kind = K_OUT;
			x->last = ts;
		}
		if (!ret && x->pid == next) {
			if (x->kind == K_IN) /* still "running" elsewhere: that switch-out lost */
				ret = wins_add(&x->w, x->open, ts);
			seen(x, ts, ts);
			x->kind = K_IN;
			x->open = ts;
			x->cpu = cpu;
		}
	}
	s->last_switch[cpu] = ts;
	return ret;
}

static int read_int(const struct tep_record *rec, const struct tep_format_field *f, int *v)
{
	if (!f || f->offset < 0 || rec->size < f->offset + 4)
		return -1;
	memcpy(v, (const char *)rec->data + f->offset, 4);
	return 0;
}

/* A window's file: every thread knows nothing outside the span that every CPU with
 * records (first @first[c], last @last[c], -1: none) covers. */
static void cut_span(struct thr *t, int nt, const int64_t *first, const int64_t *last, int ncpu)
{
	int64_t lo = INT64_MIN, hi = INT64_MAX;

	for (int c = 0; c < ncpu; c++) {
		if (first[c] < 0)
			continue;
		lo = first[c] > lo ? first[c] : lo;
		hi = last[c] < hi ? last[c] : hi;
	}
	for (int i = 0; i < nt; i++) {
		t[i].cut_lo = lo;
		t[i].cut_hi = hi;
	}
}

/* One pass over the host's top buffer in time order. */
static int host_windows(struct hgt_input *host, struct thr *t, int nt, bool want_sched,
			enum hgt_infer_source *src, struct wins *lost)
{
	struct tep_handle *tep = hgt_input_tep(host);
	struct tep_event *en = tep ? tep_find_event_by_name(tep, "kvm", "kvm_entry") : NULL;
	struct tep_event *ex = tep ? tep_find_event_by_name(tep, "kvm", "kvm_exit") : NULL;
	struct tep_event *sw = tep ? tep_find_event_by_name(tep, "sched", "sched_switch") : NULL;
	struct tep_format_field *pidf = NULL, *prevf = NULL, *nextf = NULL;
	int top = hgt_input_top_buffer(host), ncpu = hgt_input_nr_cpus(host), ret = 0;
	int type_off = tep ? hgt__type_offset(tep) : -1;
	struct hgt_cursor **cur = NULL;
	struct sched s = { 0 };
	struct hgt_merge *m = NULL;
	int64_t *prev_ts = NULL, *first_ts = NULL;
	struct tep_record *rec;
	bool kvm;

	if (top < 0 || ncpu < 1)
		return hgt__errorf(EINVAL, "%s: the host file has no top-level trace data",
				   hgt_input_path(host));
	kvm = en && ex && !want_sched;
	if (kvm) {
		pidf = tep_find_common_field(en, "common_pid");
	} else if (sw) {
		prevf = tep_find_field(sw, "prev_pid");
		nextf = tep_find_field(sw, "next_pid");
	}
	if (kvm ? !pidf : !prevf || !nextf)
		return hgt__errorf(
			ENOENT,
			"%s: the host trace has neither kvm_entry/kvm_exit nor sched_switch: nothing tells when the vCPU threads ran the guest (record the host with -e kvm -e sched:sched_switch)",
			hgt_input_path(host));
	*src = kvm ? HGT_INFER_KVM : HGT_INFER_SCHED;
	m = hgt_merge_new();
	cur = calloc((size_t)hgt__top_cpus(host) + 1, sizeof(*cur));
	prev_ts = malloc(sizeof(*prev_ts) * (size_t)ncpu);
	first_ts = malloc(sizeof(*first_ts) * (size_t)ncpu);
	s.nr_cpus = ncpu;
	s.last_switch = malloc(sizeof(*s.last_switch) * (size_t)ncpu);
	if (!m || !cur || !prev_ts || !first_ts || !s.last_switch) {
		ret = -ENOMEM;
		goto out;
	}
	for (int c = 0; c < ncpu; c++)
		prev_ts[c] = first_ts[c] = s.last_switch[c] = -1;
	ret = hgt__merge_add_top(m, host, &hgt__raw_clock, cur, NULL);
	if (ret < 0)
		goto out;
	while ((ret = hgt_merge_next(m, &rec, NULL, NULL)) > 0) {
		int64_t ts = (int64_t)rec->ts;
		int type, pid, prev, next, c = rec->cpu, err = 0;

		if (rec->ts > HGT__TS_MAX) {
			ret = hgt__errorf(
				ERANGE,
				"%s: CPU %d: timestamp %llu: out of range for a TSC (over 2^62)",
				hgt_input_path(host), c, (unsigned long long)rec->ts);
			break;
		}

		if (c >= 0 && c < ncpu) {
			/* a page that follows lost records: the gap is unknown for everyone */
			if (rec->missed_events)
				err = wins_add(lost, prev_ts[c] >= 0 ? prev_ts[c] : 0, ts);
			if (first_ts[c] < 0)
				first_ts[c] = ts;
			prev_ts[c] = ts;
		}
		if (!err && rec->size < 8)
			continue;
		type = hgt__record_type(tep, type_off, rec);
		if (kvm && (type == en->id || type == ex->id)) {
			struct thr *x;

			if (!read_int(rec, pidf, &pid) && (x = find(t, nt, pid)))
				err = kvm_record(x, type == en->id, ts);
		} else if (!kvm && type == sw->id) {
			if (!read_int(rec, prevf, &prev) && !read_int(rec, nextf, &next))
				err = sched_record(&s, t, nt, c, prev, next, ts);
		}
		if (err) {
			ret = err;
			break;
		}
	}
	if (ret > 0)
		ret = 0;
	if (!ret && strstr(hgt_input_cpustat(host), HGT__WINDOW_TAG))
		cut_span(t, nt, first_ts, prev_ts, ncpu);
out:
	free(first_ts);
	hgt_merge_free(m);
	for (int c = 0; cur && c < hgt__top_cpus(host); c++)
		hgt_cursor_close(cur[c]);
	free(cur);
	free(prev_ts);
	free(s.last_switch);
	return ret;
}

/* Guest CPU @cpu's event times, scaled to host units, sorted. */
static int guest_times(struct hgt_input *guest, int cpu, const struct hgt_infer_pair_opts *o,
		       int64_t **out, size_t *n)
{
	int top = hgt_input_top_buffer(guest), ret;
	struct hgt_cursor *c;
	struct tep_record rec;
	size_t cap = 0;
	bool sorted = true;

	*out = NULL;
	*n = 0;
	if (top < 0 || cpu >= hgt_input_nr_cpus(guest))
		return 0;
	c = hgt_cursor_open(guest, top, cpu);
	if (!c)
		return -errno;
	while ((ret = hgt_cursor_next(c, &rec)) > 0) {
		uint64_t h = hgt_tsc_guest_to_host(rec.ts, o->ratio, o->frac, 0);
		int64_t v = (int64_t)h;

		if (h > HGT__TS_MAX) {
			ret = hgt__errorf(
				ERANGE,
				"%s: CPU %d: timestamp %llu: out of range for a TSC (over 2^62)",
				hgt_input_path(guest), cpu, (unsigned long long)rec.ts);
			break;
		}

		if (hgt__grow(out, &cap, *n + 1, sizeof(**out), 4096)) {
			ret = -ENOMEM;
			break;
		}
		if (*n && v < (*out)[*n - 1])
			sorted = false;
		(*out)[(*n)++] = v;
	}
	if (ret < 0 && ret != -ERANGE)
		hgt__set_last_error(hgt_input_error(guest));
	hgt_cursor_close(c);
	if (!ret && !sorted)
		qsort(*out, *n, sizeof(**out), cmp_i64);
	return ret;
}

/* Thread @t's windows (each widened by @widen) and the lost ranges, in *@w (caller
 * frees), and the span the host observed it in. */
static int cpu_windows(const struct thr *t, const struct wins *lost, uint64_t widen,
		       struct hgt_infer_window **w, int64_t *span_lo, int64_t *span_hi)
{
	*w = malloc(sizeof(**w) * (t->w.n + lost->n + 1));
	if (!*w)
		return -ENOMEM;
	if (t->w.n)
		memcpy(*w, t->w.w, sizeof(**w) * t->w.n);
	if (lost->n)
		memcpy(*w + t->w.n, lost->w, sizeof(**w) * lost->n);
	for (size_t i = 0; widen && i < t->w.n; i++) {
		(*w)[i].start -= (int64_t)widen;
		(*w)[i].end += (int64_t)widen;
	}
	*span_lo = t->span_lo;
	/* after its last record: unknown if it was still in guest mode (or running) */
	*span_hi = t->kind == K_IN ? t->open - 1 : t->last;
	if (t->kind == K_NONE)
		*span_hi = *span_lo - 1; /* never seen: no data */
	if (t->cut_lo > *span_lo)
		*span_lo = t->cut_lo;
	if (t->cut_hi < *span_hi)
		*span_hi = t->cut_hi;
	return 0;
}

static int infer_cpu(struct hgt_infer_cpu *cpu, const struct thr *t, const struct wins *lost,
		     const int64_t *g, size_t n, const struct hgt_infer_pair_opts *o,
		     const struct hgt_infer_range *range)
{
	HGT_OPTS(hgt_infer_opts, io, .max_bound = o->max_bound, .gaps = o->gaps,
		 .entry_gap = o->entry_gap, .exit_gap = o->exit_gap, .within = range && range->on,
		 .within_lo = range ? range->lo : 0, .within_hi = range ? range->hi : 0);
	struct hgt_infer_window *w;
	int64_t span_lo, span_hi;
	int ret = cpu_windows(t, lost, o->widen, &w, &span_lo, &span_hi);

	if (ret)
		return ret;
	cpu->windows = t->w.n;
	cpu->lost_ranges = lost->n;
	cpu->first = n ? g[0] : 0;
	cpu->last = n ? g[n - 1] : 0;
	ret = hgt_infer_offset(g, n, w, t->w.n + lost->n, span_lo, span_hi, &io, &cpu->r);
	if (!ret && o->drift_slices > 1 && n) {
		int k = o->drift_slices;
		int64_t g0 = g[0], len = g[n - 1] - g[0] + 1;
		size_t from = 0;

		cpu->slice = calloc((size_t)k, sizeof(*cpu->slice));
		cpu->slice_time = calloc((size_t)k, sizeof(*cpu->slice_time));
		if (!cpu->slice || !cpu->slice_time) {
			ret = -ENOMEM;
			goto out;
		}
		cpu->nr_slices = k;
		io.within = false; /* the offset moves: the range given is for the whole CPU's */
		for (int s = 0; s < k && !ret; s++) {
			int64_t end = g0 + (int64_t)(((__int128)len * (s + 1)) / k);
			size_t to = from;

			while (to < n && (g[to] < end || s == k - 1))
				to++;
			cpu->slice_time[s] =
				g0 + (int64_t)(((__int128)len * (2 * s + 1)) / (2 * k));
			ret = hgt_infer_offset(g + from, to - from, w, t->w.n + lost->n, span_lo,
					       span_hi, &io, &cpu->slice[s]);
			from = to;
		}
	}
out:
	free(w);
	return ret;
}

static void threads_free(struct thr *t, int ncpu, struct wins *lost)
{
	for (int i = 0; i < ncpu; i++)
		free(t[i].w.w);
	free(t);
	free(lost->w);
}

/**
 * hgt_infer_pair - infer each guest CPU's offset from the host's windows.
 */
int hgt_infer_pair(struct hgt_input *host, struct hgt_input *guest, struct hgt_infer_cpu *cpus,
		   int ncpu, const struct hgt_infer_pair_opts *opts)
{
	struct hgt_infer_pair_opts o = { 0 };
	enum hgt_infer_source src = HGT_INFER_KVM;
	struct wins lost = { 0 };
	struct thr *t;
	int ret = 0;

	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(o) || ncpu < 1)
		return -EINVAL;
	memcpy(&o, opts, opts->sz);
	if (o.frac > 63)
		return -EINVAL;
	t = calloc((size_t)ncpu, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (int i = 0; i < ncpu; i++) {
		t[i].pid = cpus[i].pid > 0 ? cpus[i].pid : -1;
		t[i].cut_lo = INT64_MIN;
		t[i].cut_hi = INT64_MAX;
		cpus[i].slice = NULL;
		cpus[i].slice_time = NULL;
		cpus[i].nr_slices = 0;
		memset(&cpus[i].r, 0, sizeof(cpus[i].r));
	}
	ret = host_windows(host, t, ncpu, o.sched, &src, &lost);
	for (int i = 0; !ret && i < ncpu; i++) {
		int64_t *g = NULL;
		size_t n = 0;

		cpus[i].source = src;
		ret = guest_times(guest, i, &o, &g, &n);
		if (!ret && cpus[i].pid <= 0) {
			/* no thread known: no offset, but its events are counted */
			cpus[i].r.status = HGT_INFER_NO_DATA;
			cpus[i].r.events = n;
		} else if (!ret) {
			ret = infer_cpu(&cpus[i], &t[i], &lost, g, n, &o,
					o.within ? &o.within[i] : NULL);
		}
		free(g);
	}
	threads_free(t, ncpu, &lost);
	return ret;
}

int hgt__infer_each(struct hgt_input *host, struct hgt_input *guest, const int *pids, int ncpu,
		    hgt__infer_cpu_fn fn, void *arg)
{
	struct hgt_infer_pair_opts o = { 0 };
	enum hgt_infer_source src = HGT_INFER_KVM;
	struct wins lost = { 0 };
	struct thr *t = calloc((size_t)ncpu, sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
	for (int i = 0; i < ncpu; i++) {
		t[i].pid = pids[i] > 0 ? pids[i] : -1;
		t[i].cut_lo = INT64_MIN;
		t[i].cut_hi = INT64_MAX;
	}
	ret = host_windows(host, t, ncpu, false, &src, &lost);
	for (int i = 0; !ret && i < ncpu; i++) {
		struct hgt_infer_window *w = NULL;
		int64_t *g = NULL, lo, hi;
		size_t n = 0;

		if (pids[i] <= 0)
			continue;
		ret = guest_times(guest, i, &o, &g, &n);
		if (!ret)
			ret = cpu_windows(&t[i], &lost, 0, &w, &lo, &hi);
		if (!ret && n)
			ret = fn(arg, i, g, n, w, t[i].w.n + lost.n, lo, hi);
		free(w);
		free(g);
	}
	threads_free(t, ncpu, &lost);
	return ret;
}

void hgt_infer_cpu_free(struct hgt_infer_cpu *cpus, int ncpu)
{
	for (int i = 0; cpus && i < ncpu; i++) {
		free(cpus[i].slice);
		free(cpus[i].slice_time);
		cpus[i].slice = NULL;
		cpus[i].slice_time = NULL;
		cpus[i].nr_slices = 0;
	}
}
