// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest latency explained by the host. One pass over the merged session (report time:
 * guests' events in their host's time) does two things at once:
 *  - the host's records become, per vCPU thread, a list of segments (start time, what the
 *    thread was doing): guest mode, an exit being handled, preempted by a task, blocked,
 *    a host interrupt;
 *  - the guests' records give delays: a task woken until it runs, a timer's expiry until
 *    its handler, a pair of events the user names.
 * Then the worst delays are each laid over their vCPU thread's segments and summed by
 * what the thread did.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include <hgtrace/clock.h>
#include <hgtrace/merge.h>
#include <hgtrace/output.h>
#include <hgtrace/peer.h>
#include <hgtrace/tracedat.h>
#include <hgtrace/why.h>

#include "../merge/merge-local.h"
#include "../common/common-local.h"
#include "../private/report.h"
#include "../private/tracedat.h"
#include "../private/why.h"

/* ---- a u64 -> u64 map (open addressing, backward-shift deletion) ---- */

struct map {
	uint64_t *k, *v; /* key + 1 (0: empty) */
	size_t cap, n;
};

static size_t map_slot(const struct map *m, uint64_t key)
{
	uint64_t h = (key + 1) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 20) & (m->cap - 1);
}

static uint64_t *map_find(const struct map *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = map_slot(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (!m->k[i])
			return NULL;
		if (m->k[i] == key + 1)
			return &m->v[i];
	}
}

static int map_put(struct map *m, uint64_t key, uint64_t val)
{
	uint64_t *p = map_find(m, key);

	if (p) {
		*p = val;
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap) {
		struct map g = { .cap = m->cap ? m->cap * 2 : 64 };

		g.k = calloc(g.cap, sizeof(*g.k));
		g.v = calloc(g.cap, sizeof(*g.v));
		if (!g.k || !g.v) {
			free(g.k);
			free(g.v);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->k[i])
				map_put(&g, m->k[i] - 1, m->v[i]);
		free(m->k);
		free(m->v);
		*m = g;
	}
	for (size_t i = map_slot(m, key);; i = (i + 1) & (m->cap - 1))
		if (!m->k[i]) {
			m->k[i] = key + 1;
			m->v[i] = val;
			m->n++;
			return 0;
		}
}

static void map_del(struct map *m, uint64_t key)
{
	uint64_t *p = map_find(m, key);
	size_t i, j, mask = m->cap - 1;

	if (!p)
		return;
	i = (size_t)(p - m->v);
	m->k[i] = 0;
	m->n--;
	/* move back the entries of the run after the hole that may now be missed */
	for (j = (i + 1) & mask; m->k[j]; j = (j + 1) & mask) {
		size_t home = map_slot(m, m->k[j] - 1);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->k[i] = m->k[j];
			m->v[i] = m->v[j];
			m->k[j] = 0;
			i = j;
		}
	}
}

static void map_free(struct map *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* ---- what a vCPU thread did: categories and segments ---- */

struct cat {
	enum hgt_why_state st;
	int id;
	char what[48];
};

struct thread {
	int pid;
	bool waiting;	    /* runnable, not running */
	bool waking;	    /* waiting since a sched_waking: its target, the last CPU */
	int wait_cpu;	    /* where it waits */
	int irq_depth;	    /* in host interrupts (nested) */
	uint32_t saved;	    /* the category an interrupt interrupted */
	uint32_t last_exit; /* the category of its last exit (UINT32_MAX: none yet) */
	uint64_t *ts;
	uint32_t *cat;
	size_t n, cap;
};

struct delay {
	uint64_t from, to;
	uint64_t need; /* the record its start is known by: the wakeup, the arming, FROM */
	int input, cpu, pid;
	unsigned int kind;
	char comm[16];
};

struct input {
	struct hgt_input *in;
	struct tep_handle *tep;
	int type_off, pid_off; /* hgt__type_offset(), hgt__pid_offset() of tep */
	struct hgt_clock clk;  /* the merge keeps a pointer to it */
	struct hgt_cursor **cur;
	uint64_t *last;	     /* per CPU: the time of its last record (0: none) */
	uint64_t *first_end; /* per CPU: the time of the last record of its first page */
	int *pages;	     /* per CPU: the pages with records read so far */
	int nr_cpus;
	const char *name;
	int *cpu_thread; /* guest CPU -> thread index (-1) */
	int nr_cpu_thread;
	/* guest side */
	struct tep_event *wakeup, *sw, *tstart, *texpire, *tcancel;
	struct tep_format_field *w_pid, *sw_prev, *sw_next, *sw_ncomm, *t_timer, *t_expires, *t_now;
	int *running; /* per CPU: the pid switched in last */
	int nr_running;
	struct tep_event_filter *from, *to;
	struct map pending, timers, pair;
	/* timer -> when it was armed, while it is (neither run nor cancelled); cancelling:
	 * timer -> the CPU of its hrtimer_cancel, which is also the first step of a timer's run
	 * (its hrtimer_expire_entry next): a cancel, once that CPU switches tasks (a timer
	 * runs in interrupt context, no switch in between) */
	struct map armed, cancelling;
};

struct why {
	struct hgt_why_opts o;
	struct input *in;
	int n, host;
	/* host side */
	struct tep_event *entry, *exit_, *sw, *irq_en, *irq_ex, *sirq_en, *sirq_ex;
	struct tep_format_field *x_reason, *x_isa, *sw_prev, *sw_state, *sw_next, *sw_ncomm,
		*irq_nr, *irq_name, *sirq_vec;
	struct tep_event *wake[2]; /* sched_waking, sched_wakeup */
	struct tep_format_field *wk_pid[2], *wk_cpu[2];
	int nr_cpus;
	uint32_t *cpu_cat; /* the preempted-by category of the task running on each host CPU */
	int *cpu_pid;	   /* and its pid (-1: not known yet) */
	int *cpu_waiters;
	struct thread *th;
	int nr_th;
	struct map th_by_pid; /* pid -> thread index */
	struct cat *cats;
	int nr_cats, cap_cats;
	struct map cat_by_key;
	struct map exit_cat; /* isa << 32 | reason -> category */
	uint32_t c_guest, c_blocked, c_halted, c_host, c_unknown;
	uint64_t host_end; /* the host's last event */
	struct trace_seq seq;
	struct delay *d;
	size_t nr_d, cap_d;
	uint64_t found[3];
	uint64_t hz;	    /* TSC cycles made ns at this rate (0: the times were ns) */
	const char *hz_how; /* where the rate came from (hgt__tsc_rate()) */
};

/* The category (@st, @id, @what): one per distinct triple (a pid's comm changes at exec). */
static uint32_t intern(struct why *w, enum hgt_why_state st, int id, const char *what, size_t n)
{
	uint64_t h = 1469598103934665603ULL, key, *p;
	struct cat *c;

	if (n > sizeof(c->what) - 1)
		n = sizeof(c->what) - 1;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)what[i]) * 1099511628211ULL;
	for (key = h ^ ((uint64_t)st << 56) ^ (uint32_t)id;; key++) {
		p = map_find(&w->cat_by_key, key);
		if (!p)
			break;
		c = &w->cats[*p];
		if (c->st == st && c->id == id && !strncmp(c->what, what, n) && !c->what[n])
			return (uint32_t)*p;
	}
	if (w->nr_cats == w->cap_cats) {
		int cap = w->cap_cats ? w->cap_cats * 2 : 64;
		struct cat *nc = realloc(w->cats, sizeof(*nc) * (size_t)cap);

		if (!nc)
			return w->c_unknown; /* out of memory: counted as unknown */
		w->cats = nc;
		w->cap_cats = cap;
	}
	c = &w->cats[w->nr_cats];
	c->st = st;
	c->id = id;
	memcpy(c->what, what, n);
	c->what[n] = 0;
	if (map_put(&w->cat_by_key, key, (uint64_t)w->nr_cats))
		return w->c_unknown;
	return (uint32_t)w->nr_cats++;
}

static uint32_t intern_str(struct why *w, enum hgt_why_state st, int id, const char *what)
{
	return intern(w, st, id, what, strlen(what));
}

static void seg(struct thread *t, uint32_t cat, uint64_t ts)
{
	if (t->n && t->cat[t->n - 1] == cat)
		return;
	if (t->n && t->ts[t->n - 1] == ts) {
		t->cat[t->n - 1] = cat;
		return;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		uint64_t *nt = realloc(t->ts, sizeof(*nt) * cap);
		uint32_t *nc;

		if (!nt)
			return;
		t->ts = nt;
		nc = realloc(t->cat, sizeof(*nc) * cap);
		if (!nc)
			return;
		t->cat = nc;
		t->cap = cap;
	}
	t->ts[t->n] = ts;
	t->cat[t->n++] = cat;
}

static struct thread *thread_of(struct why *w, int pid)
{
	uint64_t *p;

	if (pid <= 0 || !w->nr_th)
		return NULL;
	p = map_find(&w->th_by_pid, (uint64_t)pid);
	return p ? &w->th[*p] : NULL;
}

/* String field @f of @rec (NULL: none): its text in *@p, its length returned (0: none). */
static size_t str(struct tep_format_field *f, struct tep_record *rec, const char **p)
{
	size_t n;

	if (!f || !hgt__field_str(rec, f, p, &n))
		return 0;
	return strnlen(*p, n);
}

/* The category of an exit: its reason as kvm_exit prints it ("reason HLT ..."). */
static uint32_t exit_cat(struct why *w, struct tep_record *rec)
{
	unsigned long long reason = hgt__field_num(w->x_reason, rec),
			   isa = hgt__field_num(w->x_isa, rec);
	uint64_t key = isa << 32 | (reason & 0xffffffffULL), *p = map_find(&w->exit_cat, key);
	struct tep_handle *tep = hgt_input_tep(w->in[w->host].in);
	char what[48];
	const char *text, *r;
	size_t len;
	uint32_t c;

	if (p)
		return (uint32_t)*p;
	text = hgt__info_text(NULL, &w->seq, tep, w->exit_, rec, false, &len);
	r = text ? strstr(text, "reason ") : NULL;
	if (r) {
		r += 7;
		snprintf(what, sizeof(what), "exit %.*s", (int)strcspn(r, " "), r);
	} else {
		snprintf(what, sizeof(what), "exit %llu", reason);
	}
	/* the same name on both ISAs is one category */
	c = intern_str(w, HGT_WHY_EXIT, (int)(reason & 0xffff) | (int)(isa << 16), what);
	map_put(&w->exit_cat, key, c);
	return c;
}

/* Asleep after a HLT exit, or any sleep under TCG (its thread sleeps when the guest idles). */
static bool halted(const struct why *w, const struct thread *t)
{
	if (!w->entry || !w->exit_)
		return true;
	return t->last_exit != UINT32_MAX && !strcmp(w->cats[t->last_exit].what, "exit HLT");
}

static const char *const softirqs[] = { "HI",	    "TIMER",   "NET_TX", "NET_RX",  "BLOCK",
					"IRQ_POLL", "TASKLET", "SCHED",	 "HRTIMER", "RCU" };

/*
 * Host CPU @cpu runs @pid (@comm, @n bytes) from @ts: the threads waiting for it are
 * preempted by that task, and a vCPU thread among them runs again. Called at each switch
 * in, and (@late) at any record whose task is not the one the CPU was known to run: a
 * kernel may leave switches out of its trace (this project's VMs record none out of idle
 * on CPU 1). A task seen so on a CPU thought idle had come in unseen: a thread waiting
 * there since then (its wait taken for idle, which runs whatever is runnable) waited for
 * that task, from the start of that wait.
 */
static void cpu_runs(struct why *w, int cpu, int pid, const char *comm, size_t n, uint64_t ts,
		     bool late)
{
	uint32_t by = intern(w, HGT_WHY_PREEMPTED, pid, pid ? comm : "idle", pid ? n : 4);
	uint32_t was = w->cpu_cat[cpu];
	struct thread *t;

	if (late && pid && !w->cpu_pid[cpu] && w->cpu_waiters[cpu])
		for (int i = 0; i < w->nr_th; i++) {
			t = &w->th[i];
			if (t->waiting && t->wait_cpu == cpu && t->pid != pid && t->n &&
			    t->cat[t->n - 1] == was)
				t->cat[t->n - 1] = by;
		}
	w->cpu_cat[cpu] = by;
	w->cpu_pid[cpu] = pid;
	if (w->cpu_waiters[cpu])
		for (int i = 0; i < w->nr_th; i++)
			if (w->th[i].waiting && w->th[i].wait_cpu == cpu && w->th[i].pid != pid)
				seg(&w->th[i], by, ts);
	t = thread_of(w, pid);
	if (t) {
		if (t->waiting)
			w->cpu_waiters[t->wait_cpu]--;
		t->waiting = false;
		t->irq_depth = 0;
		/* under TCG (no kvm events) the thread runs the guest whenever it runs */
		seg(t,
		    !w->entry || !w->exit_	 ? w->c_guest
		    : t->last_exit != UINT32_MAX ? t->last_exit
						 : w->c_host,
		    ts);
	}
}

/* "irq ID NAME" into @what (@cap bytes), as snprintf()'s "irq %d %.*s" (@n) writes it:
 * this runs at every interrupt on the host */
static void irq_text(char *what, size_t cap, int id, const char *name, size_t n)
{
	size_t o = 4;

	if (id < 0 || cap < 24) {
		snprintf(what, cap, "irq %d %.*s", id, (int)n, name);
		return;
	}
	memcpy(what, "irq ", 4);
	o += (size_t)hgt__ndigits((unsigned int)id);
	hgt__put_dec_back(what + o, (unsigned int)id);
	what[o++] = ' ';
	n = strnlen(name, n);
	if (n > cap - 1 - o)
		n = cap - 1 - o;
	memcpy(what + o, name, n);
	what[o + n] = 0;
}

/* Thread @t woken at @ts onto host CPU @target: runnable, waiting for that CPU's current
 * task. sched_waking (@waking) names the CPU the task last ran on (the kernel chooses where
 * it goes after), sched_wakeup the one it was put on: a sched_wakeup after a sched_waking
 * moves the wait there. */
static void woken(struct why *w, struct thread *t, int target, bool waking, uint64_t ts)
{
	if (t->waiting)
		w->cpu_waiters[t->wait_cpu]--;
	t->waiting = true;
	t->waking = waking;
	t->wait_cpu = target;
	w->cpu_waiters[target]++;
	seg(t, w->cpu_cat[target] != UINT32_MAX ? w->cpu_cat[target] : w->c_unknown, ts);
}

/* Which of sched_waking (0) and sched_wakeup (1) event type @type is; -1: neither. */
static int wake_of(const struct why *w, int type)
{
	for (int k = 0; k < 2; k++)
		if (w->wake[k] && type == w->wake[k]->id)
			return k;
	return -1;
}

static void host_record(struct why *w, struct tep_record *rec)
{
	struct input *h = &w->in[w->host];
	struct tep_handle *tep = h->tep;
	int type = hgt__record_type(tep, h->type_off, rec), cpu = rec->cpu,
	    pid = hgt__record_pid(tep, h->pid_off, rec), k;
	struct thread *t;

	if (rec->ts > w->host_end)
		w->host_end = rec->ts;
	if (cpu >= 0 && cpu < w->nr_cpus && pid >= 0 && pid != w->cpu_pid[cpu]) {
		const char *comm = pid ? tep_data_comm_from_pid(tep, pid) : "";

		cpu_runs(w, cpu, pid, comm, strlen(comm), rec->ts, true);
	}
	if (w->entry && type == w->entry->id) {
		t = thread_of(w, pid);
		if (t) {
			t->irq_depth = 0;
			seg(t, w->c_guest, rec->ts);
		}
	} else if (w->exit_ && type == w->exit_->id) {
		t = thread_of(w, pid);
		if (t) {
			t->last_exit = exit_cat(w, rec);
			t->irq_depth = 0;
			seg(t, t->last_exit, rec->ts);
		}
	} else if (w->sw && type == w->sw->id) {
		int prev = (int)hgt__field_num(w->sw_prev, rec),
		    next = (int)hgt__field_num(w->sw_next, rec);
		const char *comm = "";
		size_t n = str(w->sw_ncomm, rec, &comm);

		if (cpu < 0 || cpu >= w->nr_cpus)
			return;
		t = thread_of(w, prev);
		if (t) {
			t->irq_depth = 0;
			if (!t->waiting && (hgt__field_num(w->sw_state, rec) & 0x7f) == 0) {
				t->waiting = true; /* preempted: still runnable */
				t->waking = false;
				t->wait_cpu = cpu;
				w->cpu_waiters[cpu]++;
			}
			if (!t->waiting)
				seg(t, halted(w, t) ? w->c_halted : w->c_blocked, rec->ts);
		}
		cpu_runs(w, cpu, next, comm, n, rec->ts, false);
	} else if ((k = wake_of(w, type)) >= 0) {
		int target = w->wk_cpu[k] ? (int)hgt__field_num(w->wk_cpu[k], rec) : cpu;

		t = thread_of(w, (int)hgt__field_num(w->wk_pid[k], rec));
		if (t && target >= 0 && target < w->nr_cpus &&
		    (!t->waiting || (t->waking && k == 1)))
			woken(w, t, target, k == 0, rec->ts);
		else if (t && k == 1)
			t->waking = false;
	} else if ((w->irq_en && type == w->irq_en->id) || (w->sirq_en && type == w->sirq_en->id)) {
		t = thread_of(w, pid);
		if (t && !t->waiting && t->n) {
			char what[48];
			int id;

			if (w->irq_en && type == w->irq_en->id) {
				const char *name = "";
				size_t n = str(w->irq_name, rec, &name);

				id = (int)hgt__field_num(w->irq_nr, rec);
				irq_text(what, sizeof(what), id, name, n);
			} else {
				unsigned long long v = hgt__field_num(w->sirq_vec, rec);
				const char *name = v < 10 ? softirqs[v] : "?";
				size_t n = strlen(name);

				id = 1000 + (int)(v & 0xffff);
				memcpy(what, "softirq ", 8);
				memcpy(what + 8, name, n + 1);
			}
			if (!t->irq_depth++)
				t->saved = t->cat[t->n - 1];
			seg(t, intern_str(w, HGT_WHY_IRQ, id, what), rec->ts);
		}
	} else if ((w->irq_ex && type == w->irq_ex->id) || (w->sirq_ex && type == w->sirq_ex->id)) {
		t = thread_of(w, pid);
		if (t && t->irq_depth && !--t->irq_depth)
			seg(t, t->saved, rec->ts);
	}
}

static int add_delay(struct why *w, unsigned int kind, int input, struct tep_record *rec,
		     uint64_t from, uint64_t need, int pid, const char *comm, size_t n)
{
	struct delay *d;

	w->found[kind == HGT_WHY_WAKEUP ? 0 : kind == HGT_WHY_TIMER ? 1 : 2]++;
	if (w->o.threshold_ns && rec->ts - from < w->o.threshold_ns)
		return 0;
	if (w->nr_d == w->cap_d) {
		size_t cap = w->cap_d ? w->cap_d * 2 : 1024;
		struct delay *nd = realloc(w->d, sizeof(*nd) * cap);

		if (!nd)
			return -ENOMEM;
		w->d = nd;
		w->cap_d = cap;
	}
	d = &w->d[w->nr_d++];
	memset(d, 0, sizeof(*d));
	d->from = from;
	d->need = need;
	d->to = rec->ts;
	d->input = input;
	d->cpu = rec->cpu;
	d->pid = pid;
	d->kind = kind;
	if (!n) {
		comm = tep_data_comm_from_pid(w->in[input].tep, pid);
		n = strlen(comm);
	}
	n = strnlen(comm, n < sizeof(d->comm) ? n : sizeof(d->comm) - 1);
	memcpy(d->comm, comm, n); /* NUL-ended: d was cleared */
	return 0;
}

/* Guest CPU @cpu switched tasks: the timers cancelled on it are not running, and are no
 * longer armed. */
static void cancels_done(struct input *g, int cpu)
{
	uint64_t done[32];
	size_t n;

	do {
		n = 0;
		for (size_t i = 0; i < g->cancelling.cap && n < 32; i++)
			if (g->cancelling.k[i] && g->cancelling.v[i] == (uint64_t)cpu)
				done[n++] = g->cancelling.k[i] - 1;
		for (size_t i = 0; i < n; i++) {
			map_del(&g->cancelling, done[i]);
			map_del(&g->armed, done[i]);
		}
	} while (n == 32);
}

static int guest_record(struct why *w, int idx, struct tep_record *rec)
{
	struct input *g = &w->in[idx];
	int type = hgt__record_type(g->tep, g->type_off, rec), ret = 0;
	uint64_t *p;

	if ((w->o.kinds & HGT_WHY_PAIR) && g->from && g->to) {
		uint64_t key =
			w->o.match_cpu
				? (uint64_t)rec->cpu
				: (uint64_t)(uint32_t)hgt__record_pid(g->tep, g->pid_off, rec);

		/* the end first: an event that is both ends closes one pair, opens the next */
		if (tep_filter_match(g->to, rec) == TEP_ERRNO__FILTER_MATCH &&
		    (p = map_find(&g->pair, key))) {
			int pid = hgt__record_pid(g->tep, g->pid_off, rec);

			ret = add_delay(w, HGT_WHY_PAIR, idx, rec, *p, *p, pid, NULL, 0);
			map_del(&g->pair, key);
		}
		if (!ret && tep_filter_match(g->from, rec) == TEP_ERRNO__FILTER_MATCH &&
		    !map_find(&g->pair, key))
			ret = map_put(&g->pair, key, rec->ts);
	}
	if (ret)
		return ret;
	/* with a host and its guests, the guests' wakeups and timers are the delays to explain
	 * (the host's own would have no vCPU to lay them over) */
	if (idx == w->host && w->nr_th)
		return 0;
	if (g->cancelling.n && g->sw && type == g->sw->id)
		cancels_done(g, rec->cpu);
	if ((w->o.kinds & HGT_WHY_WAKEUP) && g->wakeup && type == g->wakeup->id) {
		uint64_t pid = hgt__field_num(g->w_pid, rec);

		bool running = false;

		/* a task woken while it runs (about to sleep) waits for nothing */
		for (int c = 0; c < g->nr_running && !running; c++)
			running = g->running[c] == (int)pid;
		/* the first wakeup counts: a task woken twice waited since the first */
		if (pid && !running && !map_find(&g->pending, pid))
			ret = map_put(&g->pending, pid, rec->ts);
	} else if ((w->o.kinds & HGT_WHY_WAKEUP) && g->sw && type == g->sw->id) {
		uint64_t pid = hgt__field_num(g->sw_next, rec);

		if (rec->cpu >= 0 && rec->cpu < g->nr_running)
			g->running[rec->cpu] = (int)pid;
		/* switched out: it ran, so a wakeup noted before is over */
		map_del(&g->pending, hgt__field_num(g->sw_prev, rec));
		if ((p = map_find(&g->pending, pid))) {
			const char *comm = "";
			size_t n = str(g->sw_ncomm, rec, &comm);

			ret = add_delay(w, HGT_WHY_WAKEUP, idx, rec, *p, *p, (int)pid, comm, n);
			map_del(&g->pending, pid);
		}
	} else if ((w->o.kinds & HGT_WHY_TIMER) && g->tstart && type == g->tstart->id) {
		uint64_t timer = hgt__field_num(g->t_timer, rec);

		map_del(&g->cancelling, timer);
		ret = map_put(&g->timers, timer, hgt__field_num(g->t_expires, rec));
		if (!ret)
			ret = map_put(&g->armed, timer, rec->ts);
	} else if ((w->o.kinds & HGT_WHY_TIMER) && g->texpire && type == g->texpire->id) {
		uint64_t timer = hgt__field_num(g->t_timer, rec);
		uint64_t *at = map_find(&g->armed, timer);

		if ((p = map_find(&g->timers, timer))) {
			int64_t late = (int64_t)(hgt__field_num(g->t_now, rec) - *p);

			/* in the guest's clock, ns: the delay ends at the handler */
			if (late > 0 && (uint64_t)late < rec->ts) {
				int pid = hgt__record_pid(g->tep, g->pid_off, rec);
				uint64_t from = rec->ts - (uint64_t)late;

				ret = add_delay(w, HGT_WHY_TIMER, idx, rec, from, at ? *at : from,
						pid, NULL, 0);
			}
			map_del(&g->timers, timer);
		}
		map_del(&g->armed, timer);
		map_del(&g->cancelling, timer);
	} else if ((w->o.kinds & HGT_WHY_TIMER) && g->tcancel && type == g->tcancel->id) {
		uint64_t timer = hgt__field_num(g->t_timer, rec);

		if (map_find(&g->armed, timer))
			ret = map_put(&g->cancelling, timer, (uint64_t)rec->cpu);
	}
	return ret;
}

static int why_error(int err, const char *fmt, const char *a, const char *b)
{
	char line[HGT__ERRLEN];

	snprintf(line, sizeof(line), fmt, a, b);
	hgt__set_last_error(line);
	errno = err;
	return -err;
}

static int pair_filter(struct input *g, const char *expr, struct tep_event_filter **out)
{
	struct tep_event_filter *f = tep_filter_alloc(g->tep);
	enum tep_errno err;

	if (!f)
		return -ENOMEM;
	err = tep_filter_add_filter_str(f, expr);
	if (err < 0) {
		tep_filter_free(f);
		return 1; /* not in this input */
	}
	*out = f;
	return 0;
}

static int setup_guest(struct why *w, int i)
{
	struct input *g = &w->in[i];
	int *pids, k;

	g->wakeup = tep_find_event_by_name(g->tep, "sched", "sched_wakeup");
	if (!g->wakeup)
		g->wakeup = tep_find_event_by_name(g->tep, "sched", "sched_waking");
	g->sw = tep_find_event_by_name(g->tep, "sched", "sched_switch");
	g->tstart = tep_find_event_by_name(g->tep, "timer", "hrtimer_start");
	g->texpire = tep_find_event_by_name(g->tep, "timer", "hrtimer_expire_entry");
	g->tcancel = tep_find_event_by_name(g->tep, "timer", "hrtimer_cancel");
	g->w_pid = g->wakeup ? tep_find_field(g->wakeup, "pid") : NULL;
	g->sw_next = g->sw ? tep_find_field(g->sw, "next_pid") : NULL;
	g->sw_prev = g->sw ? tep_find_field(g->sw, "prev_pid") : NULL;
	g->sw_ncomm = g->sw ? tep_find_field(g->sw, "next_comm") : NULL;
	if (!g->w_pid || !g->sw_next || !g->sw_prev)
		g->wakeup = NULL;
	g->nr_running = hgt__top_cpus(g->in);
	g->running = calloc((size_t)g->nr_running + 1, sizeof(int));
	if (!g->running)
		return -ENOMEM;
	if (g->tstart && g->texpire) {
		g->t_timer = tep_find_field(g->tstart, "hrtimer");
		g->t_expires = tep_find_field(g->tstart, "expires");
		g->t_now = tep_find_field(g->texpire, "now");
		if (!g->t_timer || !g->t_expires || !g->t_now ||
		    !tep_find_field(g->texpire, "hrtimer") ||
		    tep_find_field(g->texpire, "hrtimer")->offset != g->t_timer->offset)
			g->tstart = g->texpire = NULL;
	} else {
		g->tstart = g->texpire = NULL;
	}
	if (!g->tstart || !g->tcancel || !tep_find_field(g->tcancel, "hrtimer") ||
	    tep_find_field(g->tcancel, "hrtimer")->offset != g->t_timer->offset)
		g->tcancel = NULL;
	if (w->o.kinds & HGT_WHY_PAIR) {
		int a = pair_filter(g, w->o.from, &g->from), b;

		if (a < 0)
			return a;
		b = pair_filter(g, w->o.to, &g->to);
		if (b < 0)
			return b;
	}
	if (w->host < 0 || i == w->host)
		return 0;
	k = hgt__guest_cpu_threads(w->in[w->host].in, g->in, &pids);
	if (k == -ENOENT)
		return 0;
	if (k < 0)
		return k;
	g->cpu_thread = malloc(sizeof(int) * (size_t)(k ? k : 1));
	if (!g->cpu_thread) {
		free(pids);
		return -ENOMEM;
	}
	g->nr_cpu_thread = k;
	for (int c = 0; c < k; c++) {
		uint64_t *p = map_find(&w->th_by_pid, (uint64_t)pids[c]);

		if (!p) {
			struct thread *nt = realloc(w->th, sizeof(*nt) * (size_t)(w->nr_th + 1));

			if (!nt || map_put(&w->th_by_pid, (uint64_t)pids[c], (uint64_t)w->nr_th)) {
				if (nt)
					w->th = nt;
				free(pids);
				return -ENOMEM;
			}
			w->th = nt;
			w->th[w->nr_th] =
				(struct thread){ .pid = pids[c], .last_exit = UINT32_MAX };
			p = map_find(&w->th_by_pid, (uint64_t)pids[c]);
			w->nr_th++;
		}
		g->cpu_thread[c] = (int)*p;
	}
	free(pids);
	return 0;
}

static void setup_host(struct why *w)
{
	struct tep_handle *tep = hgt_input_tep(w->in[w->host].in);

	w->entry = tep_find_event_by_name(tep, "kvm", "kvm_entry");
	w->exit_ = tep_find_event_by_name(tep, "kvm", "kvm_exit");
	w->sw = tep_find_event_by_name(tep, "sched", "sched_switch");
	w->irq_en = tep_find_event_by_name(tep, "irq", "irq_handler_entry");
	w->irq_ex = tep_find_event_by_name(tep, "irq", "irq_handler_exit");
	w->sirq_en = tep_find_event_by_name(tep, "irq", "softirq_entry");
	w->sirq_ex = tep_find_event_by_name(tep, "irq", "softirq_exit");
	if (w->exit_) {
		w->x_reason = tep_find_field(w->exit_, "exit_reason");
		w->x_isa = tep_find_field(w->exit_, "isa");
	}
	if (w->sw) {
		w->sw_prev = tep_find_field(w->sw, "prev_pid");
		w->sw_state = tep_find_field(w->sw, "prev_state");
		w->sw_next = tep_find_field(w->sw, "next_pid");
		w->sw_ncomm = tep_find_field(w->sw, "next_comm");
		if (!w->sw_prev || !w->sw_next)
			w->sw = NULL;
	}
	for (int k = 0; k < 2; k++) {
		static const char *const name[2] = { "sched_waking", "sched_wakeup" };

		w->wake[k] = tep_find_event_by_name(tep, "sched", name[k]);
		if (w->wake[k]) {
			w->wk_pid[k] = tep_find_field(w->wake[k], "pid");
			w->wk_cpu[k] = tep_find_field(w->wake[k], "target_cpu");
		}
	}
	if (w->irq_en) {
		w->irq_nr = tep_find_field(w->irq_en, "irq");
		w->irq_name = tep_find_field(w->irq_en, "name");
	}
	if (w->sirq_en)
		w->sirq_vec = tep_find_field(w->sirq_en, "vec");
	if (!w->irq_en || !w->irq_ex)
		w->irq_en = w->irq_ex = NULL;
	if (!w->sirq_en || !w->sirq_ex)
		w->sirq_en = w->sirq_ex = NULL;
	w->nr_cpus = hgt__top_cpus(w->in[w->host].in);
}

/* The host: an input whose GUEST option names another input, else one with kvm events. */
static int find_host(struct why *w)
{
	for (int i = 0; i < w->n; i++) {
		for (int k = 0; k < w->n; k++) {
			struct hgt_guest gu;
			uint64_t id;

			if (k != i && hgt_input_trace_id(w->in[k].in, &id) &&
			    !hgt_input_guest_by_id(w->in[i].in, id, &gu))
				return i;
		}
	}
	for (int i = 0; i < w->n; i++)
		if (tep_find_event_by_name(w->in[i].tep, "kvm", "kvm_exit") &&
		    !hgt_input_time_shift(w->in[i].in))
			return i;
	return -1;
}

/*
 * Times in TSC cycles (x86-tsc, no TSC2NSEC) are made ns (timer lateness is in ns: it needs
 * this), at the rate hgt__tsc_rate() finds: --ts2secs, the recorder's, the timers'.
 */
static int calibrate(struct why *w)
{
	int base = w->host >= 0 ? w->host : 0;
	size_t n = w->n > 0 ? (size_t)w->n : 1;
	struct hgt_input **in = calloc(n, sizeof(*in));
	struct hgt_clock *clk = calloc(n, sizeof(*clk));
	const char *how = "";

	if (!in || !clk) {
		free(in);
		free(clk);
		return -ENOMEM;
	}
	for (int i = 0; i < w->n; i++) {
		in[i] = w->in[i].in;
		clk[i] = w->in[i].clk;
	}
	w->hz = hgt__tsc_rate(in, clk, w->n, base, w->o.ts2secs, &how);
	free(in);
	free(clk);
	w->hz_how = how;
	if (!w->hz && how[0])
		return why_error(EINVAL, "why: %s: %s: give --ts2secs HZ", w->in[base].name, how);
	for (int i = 0; w->hz && i < w->n; i++)
		w->in[i].clk.ts2secs = 1e9 / (double)w->hz; /* as clock.c does for --ts2secs */
	return 0;
}

static int open_inputs(struct why *w, struct hgt_merge *m, const struct hgt__why_edges *e)
{
	HGT_OPTS(hgt_open_opts, oo,
		 .flags = HGT_OPEN_NO_KALLSYMS | (w->o.quiet ? HGT_OPEN_QUIET : 0));
	HGT_OPTS(hgt_clock_opts, co);
	int ret;

	w->in = calloc((size_t)w->o.nr_inputs, sizeof(*w->in));
	if (!w->in)
		return -ENOMEM;
	for (int i = 0; i < w->o.nr_inputs; i++) {
		struct input *g = &w->in[i];
		const char *b = strrchr(w->o.inputs[i], '/');

		g->in = hgt_input_open(w->o.inputs[i], &oo);
		if (!g->in)
			return -errno;
		w->n++;
		if (e && e->opened) {
			ret = e->opened(e->ctx_arg, i, g->in);
			if (ret)
				return ret;
		}
		g->name = b ? b + 1 : w->o.inputs[i];
		g->tep = hgt_input_tep(g->in);
		if (hgt_input_top_buffer(g->in) < 0 || !g->tep)
			return why_error(ENOTSUP, "%s: a latency trace%s: no events to explain",
					 w->o.inputs[i], "");
		g->type_off = hgt__type_offset(g->tep);
		g->pid_off = hgt__pid_offset(g->tep);
	}
	w->host = find_host(w);
	if (w->host >= 0)
		setup_host(w);
	for (int i = 0; i < w->n; i++) {
		struct input *g = &w->in[i];

		ret = setup_guest(w, i);
		if (ret)
			return ret;
		hgt_clock_init(&g->clk, g->in, &co);
		g->nr_cpus = hgt__top_cpus(g->in);
		g->cur = calloc((size_t)g->nr_cpus + 1, sizeof(*g->cur));
		g->last = calloc((size_t)g->nr_cpus + 1, sizeof(*g->last));
		g->first_end = calloc((size_t)g->nr_cpus + 1, sizeof(*g->first_end));
		g->pages = calloc((size_t)g->nr_cpus + 1, sizeof(*g->pages));
		if (!g->cur || !g->last || !g->first_end || !g->pages)
			return -ENOMEM;
		ret = hgt__merge_add_top(m, g->in, &g->clk, g->cur, (void *)(intptr_t)i);
		if (ret)
			return ret;
	}
	ret = calibrate(w);
	if (ret)
		return ret;
	if ((w->o.kinds & HGT_WHY_PAIR)) {
		bool from = false, to = false;

		for (int i = 0; i < w->n; i++) {
			from |= w->in[i].from != NULL;
			to |= w->in[i].to != NULL;
		}
		if (!from || !to)
			return why_error(
				EINVAL,
				"why: %s \"%s\": no such event (or a bad filter) in any input",
				from ? "--to" : "--from", from ? w->o.to : w->o.from);
	}
	return 0;
}

/* ---- the result ---- */

static int cmp_delay(const void *a, const void *b)
{
	const struct delay *x = a, *y = b;
	uint64_t dx = x->to - x->from, dy = y->to - y->from;

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return x->from < y->from ? -1 : x->from > y->from;
}

static int cmp_part(const void *a, const void *b)
{
	const struct hgt_why_part *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	return strcmp(x->what, y->what);
}

/* Lay delay @d over its thread's segments, summed per category of @cats into @acc (one
 * per category); the parts go to @out. */
static int explain(struct why *w, const struct cat *cats, const struct delay *d,
		   struct hgt_why_delay *out, uint64_t *acc)
{
	const struct input *g = &w->in[d->input];
	struct thread *t;
	size_t lo, hi;
	uint64_t a = d->from, b = d->to;
	int n = 0;

	if (d->cpu < 0 || d->cpu >= g->nr_cpu_thread)
		return 0;
	t = &w->th[g->cpu_thread[d->cpu]];
	out->vcpu_thread = t->pid;
	memset(acc, 0, sizeof(*acc) * (size_t)w->nr_cats);
	/* the last segment starting at or before @a */
	lo = 0;
	hi = t->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->ts[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0) { /* before the thread's first event */
		uint64_t e = t->n && t->ts[0] < b ? t->ts[0] : b;

		acc[w->c_unknown] += e - a;
		a = e;
	} else {
		lo--;
	}
	for (size_t j = lo; j < t->n && a < b; j++) {
		uint64_t e = j + 1 < t->n ? t->ts[j + 1] : w->host_end;

		if (e > b)
			e = b;
		if (e > a) {
			acc[t->cat[j]] += e - a;
			a = e;
		}
	}
	if (a < b)
		acc[w->c_unknown] += b - a; /* after the host trace ends */
	for (int c = 0; c < w->nr_cats; c++)
		n += acc[c] != 0;
	out->parts = calloc((size_t)n + 1, sizeof(*out->parts));
	if (!out->parts)
		return -ENOMEM;
	n = 0;
	for (int c = 0; c < w->nr_cats; c++) {
		if (!acc[c])
			continue;
		out->parts[n] = (struct hgt_why_part){
			.state = cats[c].st, .what = cats[c].what, .id = cats[c].id, .ns = acc[c]
		};
		if (cats[c].st != HGT_WHY_GUEST && cats[c].st != HGT_WHY_UNKNOWN &&
		    cats[c].st != HGT_WHY_HALTED)
			out->host_ns += acc[c];
		n++;
	}
	qsort(out->parts, (size_t)n, sizeof(*out->parts), cmp_part);
	out->nr_parts = n;
	return 0;
}

static bool host_caused(const struct hgt_why_delay *d)
{
	enum hgt_why_state st = d->nr_parts ? d->parts[0].state : HGT_WHY_UNKNOWN;

	return st != HGT_WHY_GUEST && st != HGT_WHY_HALTED && st != HGT_WHY_UNKNOWN;
}

struct result {
	struct hgt_why_result r; /* first: the public pointer is this */
	struct cat *cats;	 /* the parts' names */
	char **names;
	int nr_names;
	char *flight;
};

/* --flight: the mark of a flight recorder's window in an input's CPUSTAT, and the delay
 * that overlaps it most moved to the front of @w->d (sorted). */
static int flight_first(struct why *w, struct result *res)
{
	size_t best = SIZE_MAX;
	uint64_t least = 0;

	for (int i = 0; i < w->n && !res->flight; i++) {
		char text[512];

		if (!hgt__flight_mark(w->in[i].in, text, sizeof(text), &res->r.flight_from,
				      &res->r.flight_to))
			continue;
		res->flight = strdup(text);
		if (!res->flight)
			return -ENOMEM;
		res->r.flight = res->flight;
	}
	/* of the delays that meet the span (a marker's instant lies inside its delay), the one
	 * whose ends are nearest its ends */
	for (size_t j = 0; res->flight && j < w->nr_d; j++) {
		const struct delay *d = &w->d[j];
		uint64_t a = res->r.flight_from, b = res->r.flight_to, off;

		if (d->from > b || d->to < a)
			continue;
		off = (d->from > a ? d->from - a : a - d->from) +
		      (d->to > b ? d->to - b : b - d->to);
		if (best == SIZE_MAX || off < least) {
			least = off;
			best = j;
		}
	}
	if (best != SIZE_MAX) {
		struct delay d = w->d[best];

		memmove(&w->d[1], &w->d[0], sizeof(*w->d) * best);
		w->d[0] = d;
		res->r.flight_first = true;
	}
	return 0;
}

static struct hgt_why_result *build(struct why *w)
{
	struct result *res = calloc(1, sizeof(*res));
	size_t keep;
	uint64_t *acc = calloc((size_t)w->nr_cats + 1, sizeof(*acc));

	if (!res || !acc)
		goto nomem;
	memcpy(res->r.found, w->found, sizeof(w->found));
	res->r.tsc_hz = w->hz;
	res->r.tsc_how = w->hz_how;
	if (w->nr_d)
		qsort(w->d, w->nr_d, sizeof(*w->d), cmp_delay);
	if (w->o.flight && flight_first(w, res))
		goto nomem;
	keep = w->o.threshold_ns || (size_t)w->o.top > w->nr_d ? w->nr_d : (size_t)w->o.top;
	/* the parts' names are the categories: the result takes them over */
	res->cats = w->cats;
	w->cats = NULL;
	res->names = calloc((size_t)w->n + 1, sizeof(char *));
	res->r.d = calloc(keep + 1, sizeof(*res->r.d));
	if (!res->names || !res->r.d)
		goto nomem;
	for (int i = 0; i < w->n; i++) {
		res->names[i] = strdup(w->in[i].name);
		if (!res->names[i])
			goto nomem;
		res->nr_names++;
	}
	res->r.host = w->host >= 0 ? res->names[w->host] : NULL;
	for (size_t i = 0; i < w->nr_d && (size_t)res->r.nr < keep; i++) {
		const struct delay *d = &w->d[i];
		struct hgt_why_delay *o = &res->r.d[res->r.nr];

		memset(o, 0, sizeof(*o));
		o->kind = d->kind;
		o->input = res->names[d->input];
		o->cpu = d->cpu;
		o->pid = d->pid;
		snprintf(o->comm, sizeof(o->comm), "%s", d->comm);
		o->from_ns = d->from;
		o->to_ns = d->to;
		if (explain(w, res->cats, d, o, acc)) {
			free(o->parts);
			goto nomem;
		}
		/* --host-only: the delays whose largest part is the host's */
		if (w->o.host_only && !host_caused(o)) {
			free(o->parts);
			continue;
		}
		res->r.nr++;
	}
	free(acc);
	return &res->r;
nomem:
	free(acc);
	hgt_why_free(res ? &res->r : NULL);
	errno = ENOMEM;
	return NULL;
}

static void why_free(struct why *w, struct hgt_merge *m)
{
	hgt_merge_free(m);
	for (int i = 0; i < w->n; i++) {
		struct input *g = &w->in[i];

		for (int c = 0; g->cur && c < hgt__top_cpus(g->in); c++)
			hgt_cursor_close(g->cur[c]);
		free(g->cur);
		free(g->last);
		free(g->first_end);
		free(g->pages);
		free(g->cpu_thread);
		free(g->running);
		if (g->from)
			tep_filter_free(g->from);
		if (g->to)
			tep_filter_free(g->to);
		map_free(&g->pending);
		map_free(&g->timers);
		map_free(&g->pair);
		map_free(&g->armed);
		map_free(&g->cancelling);
		hgt_input_close(g->in);
	}
	free(w->in);
	for (int i = 0; i < w->nr_th; i++) {
		free(w->th[i].ts);
		free(w->th[i].cat);
	}
	free(w->th);
	map_free(&w->th_by_pid);
	map_free(&w->cat_by_key);
	map_free(&w->exit_cat);
	free(w->cats);
	free(w->cpu_cat);
	free(w->cpu_pid);
	free(w->cpu_waiters);
	free(w->d);
	trace_seq_destroy(&w->seq);
}

/**
 * hgt_why - the worst guest delays of a session, explained by the host.
 */
struct hgt_why_result *hgt_why(const struct hgt_why_opts *opts)
{
	return hgt__why_segments(opts, NULL, NULL);
}

/* Each vCPU thread's segments to @fn, per guest input and CPU, in time order. */
static void emit_segments(const struct why *w, hgt__why_seg_fn fn, void *arg)
{
	for (int i = 0; i < w->n; i++) {
		const struct input *g = &w->in[i];

		for (int c = 0; c < g->nr_cpu_thread; c++) {
			const struct thread *t = &w->th[g->cpu_thread[c]];

			for (size_t j = 0; j < t->n; j++) {
				const struct cat *k = &w->cats[t->cat[j]];
				uint64_t end = j + 1 < t->n ? t->ts[j + 1] : w->host_end;
				struct hgt_why_part p = { .state = k->st,
							  .what = k->what,
							  .id = k->id,
							  .ns = end - t->ts[j] };

				if (end > t->ts[j])
					fn(arg, i, c, t->pid, t->ts[j], end, &p);
			}
		}
	}
}

/**
 * hgt__why_segments - hgt_why(), and before its result is built, each vCPU thread's
 * segments (what the host did with it, from when to when) to @fn when not NULL.
 */
struct hgt_why_result *hgt__why_segments(const struct hgt_why_opts *opts, hgt__why_seg_fn fn,
					 void *arg)
{
	return hgt__why_scan(opts, fn, NULL, arg, NULL);
}

/* The earliest value in @m below *@min into *@min. */
static void map_min(const struct map *m, uint64_t *min)
{
	for (size_t i = 0; m->n && i < m->cap; i++)
		if (m->k[i] && m->v[i] < *min)
			*min = m->v[i];
}

/* The earliest record a pass from @e->upto on needs (hgt__why_scan()'s @open_from). */
static uint64_t open_from(const struct why *w, const struct hgt__why_edges *e)
{
	uint64_t min = e->upto;

	/* (a pass for host stretches alone keeps no delay, whatever is open) */
	for (int i = 0; w->o.threshold_ns != UINT64_MAX && i < w->n; i++) {
		map_min(&w->in[i].pending, &min);
		map_min(&w->in[i].armed, &min);
		map_min(&w->in[i].pair, &min);
	}
	for (size_t i = 0; i < w->nr_d; i++)
		if (w->d[i].to > e->upto && w->d[i].need < min)
			min = w->d[i].need;
	return min;
}

/* How far every CPU of every input has records: the earliest of their last records (0 when
 * a CPU has none), the newest record, and per input from when all are there (the latest end
 * of a first page that is from before the span); up to when the delays are all there, and
 * the earliest record a pass from then on needs. */
static void edges_of(const struct why *w, struct hgt__why_edges *e)
{
	e->all_to = UINT64_MAX;
	e->newest = 0;
	for (int i = 0; i < w->n; i++) {
		if (e->all_from)
			e->all_from[i] = 0;
		for (int c = 0; c < w->in[i].nr_cpus; c++) {
			uint64_t t = w->in[i].last[c];

			if (t < e->all_to)
				e->all_to = t;
			if (t > e->newest)
				e->newest = t;
			if (e->all_from && w->in[i].pages[c] && e->context &&
			    e->context(e->ctx_arg, i, c) && w->in[i].first_end[c] > e->all_from[i])
				e->all_from[i] = w->in[i].first_end[c];
			if (e->reach)
				e->reach(e->ctx_arg, i, c, t);
		}
	}
	if (e->all_to == UINT64_MAX)
		e->all_to = 0;
	e->host_end = w->host >= 0 ? w->host_end : 0;
	e->upto = e->newest > e->lag_ns ? e->newest - e->lag_ns : 0;
	if (e->all_to > e->upto)
		e->upto = e->all_to;
	/* a guest not in its host's time (no host, or no TIME_SHIFT): its times and the host's
	 * are two clocks, and no one time says where a pass must start: from the start */
	e->open_from = open_from(w, e);
	for (int i = 0; w->n > 1 && i < w->n; i++)
		if (i != w->host && (w->host < 0 || !hgt_input_time_shift(w->in[i].in)))
			e->open_from = 0;
}

/* @rec of input @g read: its CPU's last record, and its first page's. */
static void note_reach(struct input *g, const struct tep_record *rec)
{
	int c = rec->cpu;

	if (c < 0 || c >= g->nr_cpus)
		return;
	g->last[c] = rec->ts;
	/* the merge reads ahead of no record: the cursor is at this one */
	if (g->cur[c] && hgt_cursor_at_page_start(g->cur[c]))
		g->pages[c]++;
	if (g->pages[c] <= 1)
		g->first_end[c] = rec->ts;
}

/**
 * hgt__why_scan - hgt__why_segments(), and every record to @rec_fn when not NULL; how far
 * the inputs' CPUs reach into @edges when not NULL.
 */
struct hgt_why_result *hgt__why_scan(const struct hgt_why_opts *opts, hgt__why_seg_fn fn,
				     hgt__why_rec_fn rec_fn, void *arg,
				     struct hgt__why_edges *edges)
{
	struct why w = { 0 };
	struct hgt_merge *m;
	struct hgt_why_result *r = NULL;
	struct tep_record *rec;
	void *user;
	int src, ret;

	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(w.o)) {
		errno = EINVAL;
		return NULL;
	}
	memcpy(&w.o, opts, opts->sz);
	if (w.o.nr_inputs < 1 || !w.o.inputs || w.o.top < 0 || (!w.o.from != !w.o.to) ||
	    ((w.o.kinds & HGT_WHY_PAIR) && !w.o.from)) {
		why_error(EINVAL, "why: %s%s",
			  "bad options (inputs, --top, or --from without --to)", "");
		return NULL;
	}
	if (!w.o.kinds)
		w.o.kinds = w.o.from ? HGT_WHY_PAIR : HGT_WHY_WAKEUP | HGT_WHY_TIMER;
	if (w.o.from)
		w.o.kinds |= HGT_WHY_PAIR;
	if (!w.o.top)
		w.o.top = 10;
	trace_seq_init(&w.seq);
	w.host = -1;
	m = hgt_merge_new();
	if (!m) {
		trace_seq_destroy(&w.seq);
		errno = ENOMEM;
		return NULL;
	}
	w.c_unknown = 0; /* intern() falls back to it: the first category */
	w.c_unknown = intern_str(&w, HGT_WHY_UNKNOWN, -1, "not in the host trace");
	w.c_guest = intern_str(&w, HGT_WHY_GUEST, -1, "guest running");
	w.c_blocked = intern_str(&w, HGT_WHY_BLOCKED, -1, "blocked in the host (sleeping)");
	w.c_host = intern_str(&w, HGT_WHY_HOST, -1, "in the host");
	w.c_halted = intern_str(&w, HGT_WHY_HALTED, -1, "halted (the guest's HLT: idle)");
	ret = open_inputs(&w, m, edges);
	if (!ret && w.host >= 0) {
		int n = w.nr_cpus > 0 ? w.nr_cpus : 1;

		w.cpu_cat = malloc(sizeof(*w.cpu_cat) * (size_t)n);
		w.cpu_pid = malloc(sizeof(*w.cpu_pid) * (size_t)n);
		w.cpu_waiters = calloc((size_t)n, sizeof(*w.cpu_waiters));
		if (!w.cpu_cat || !w.cpu_pid || !w.cpu_waiters) {
			ret = -ENOMEM;
		} else {
			memset(w.cpu_cat, 0xff, sizeof(*w.cpu_cat) * (size_t)n);
			memset(w.cpu_pid, 0xff, sizeof(*w.cpu_pid) * (size_t)n);
		}
	}
	while (!ret && (ret = hgt_merge_next(m, &rec, &user, &src)) > 0) {
		int idx = (int)(intptr_t)user;

		ret = 0;
		note_reach(&w.in[idx], rec);
		if (rec_fn)
			rec_fn(arg, idx, w.in[idx].tep, rec);
		if (idx == w.host)
			host_record(&w, rec);
		ret = guest_record(&w, idx, rec);
	}
	if (!ret && edges)
		edges_of(&w, edges);
	if (!ret && fn)
		emit_segments(&w, fn, arg);
	if (!ret) {
		r = build(&w);
		ret = r ? 0 : -errno;
	}
	why_free(&w, m);
	if (ret < 0) {
		errno = -ret;
		return NULL;
	}
	return r;
}

void hgt_why_free(struct hgt_why_result *r)
{
	struct result *res = (struct result *)r;

	if (!r)
		return;
	for (int i = 0; i < r->nr; i++)
		free(r->d[i].parts);
	free(r->d);
	for (int i = 0; i < res->nr_names; i++)
		free(res->names[i]);
	free(res->names);
	free(res->cats);
	free(res->flight);
	free(res);
}

/* ---- printing ---- */

static const char *kind_name(unsigned int k)
{
	return k == HGT_WHY_WAKEUP ? "wakeup" : k == HGT_WHY_TIMER ? "timer" : "pair";
}

static const char *state_name(enum hgt_why_state s)
{
	static const char *const n[] = { "guest", "exit", "preempted", "blocked",
					 "irq",	  "host", "unknown",   "halted" };

	return (unsigned int)s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

/* A part as a person reads it: "preempted by stress-ng (pid 4002)". */
static void part_text(char *buf, size_t n, const struct hgt_why_part *p)
{
	if (p->state == HGT_WHY_PREEMPTED && !p->id)
		snprintf(buf, n, "runnable, its CPU idle");
	else if (p->state == HGT_WHY_PREEMPTED)
		snprintf(buf, n, "preempted by %s (pid %d)", p->what, p->id);
	else
		snprintf(buf, n, "%s", p->what);
}

/**
 * hgt__why_cause - @d's verdict in a few words: "preempted by stress-ng (pid 4002)" (the
 * host's top part), "inside the guest" or "not known".
 */
void hgt__why_cause(const struct hgt_why_delay *d, char *buf, size_t n)
{
	if (!d->vcpu_thread || !d->nr_parts || d->parts[0].state == HGT_WHY_UNKNOWN)
		snprintf(buf, n, "not known");
	else if (!host_caused(d))
		snprintf(buf, n, "inside the guest");
	else
		part_text(buf, n, &d->parts[0]);
}

/* ,"@key":@v (@key a string literal) */
#define put_u(b, key, v)                             \
	do {                                         \
		hgt__blob_lit((b), ",\"" key "\":"); \
		hgt__blob_u64((b), (v));             \
	} while (0)
#define put_i(b, key, v)                             \
	do {                                         \
		hgt__blob_lit((b), ",\"" key "\":"); \
		hgt__blob_i64((b), (v));             \
	} while (0)

static void json_head(const struct hgt_why_result *r, struct hgt__blob *b)
{
	hgt__blob_lit(b, "{\"host\":");
	if (r->host)
		hgt__json_blob_s(b, r->host);
	else
		hgt__blob_lit(b, "null");
	put_u(b, "tsc_hz", r->tsc_hz);
	hgt__blob_lit(b, ",\"tsc_rate_from\":");
	hgt__json_blob_s(b, r->tsc_how ? r->tsc_how : "");
	hgt__blob_lit(b, ",\"flight\":");
	if (r->flight) {
		hgt__json_blob_s(b, r->flight);
		put_u(b, "flight_from_ns", r->flight_from);
		put_u(b, "flight_to_ns", r->flight_to);
		hgt__blob_lit(b, ",\"flight_first\":");
		if (r->flight_first)
			hgt__blob_lit(b, "true");
		else
			hgt__blob_lit(b, "false");
	} else {
		hgt__blob_lit(b, "null");
	}
	hgt__blob_lit(b, ",\"found\":{\"wakeup\":");
	hgt__blob_u64(b, r->found[0]);
	put_u(b, "timer", r->found[1]);
	put_u(b, "pair", r->found[2]);
	hgt__blob_lit(b, "},\"delays\":[");
}

static void json_delay(const struct hgt_why_delay *d, struct hgt__blob *b)
{
	hgt__blob_lit(b, "{\"kind\":\"");
	hgt__blob_add(b, kind_name(d->kind), strlen(kind_name(d->kind)));
	hgt__blob_lit(b, "\",\"input\":");
	hgt__json_blob_s(b, d->input);
	put_i(b, "cpu", d->cpu);
	put_i(b, "pid", d->pid);
	hgt__blob_lit(b, ",\"comm\":");
	hgt__json_blob_s(b, d->comm);
	put_u(b, "from_ns", d->from_ns);
	put_u(b, "to_ns", d->to_ns);
	put_u(b, "delay_ns", d->to_ns - d->from_ns);
	put_i(b, "vcpu_thread", d->vcpu_thread);
	put_u(b, "host_ns", d->host_ns);
	if (host_caused(d))
		hgt__blob_lit(b, ",\"verdict\":\"host\",\"parts\":[");
	else if (d->nr_parts && d->parts[0].state != HGT_WHY_UNKNOWN)
		hgt__blob_lit(b, ",\"verdict\":\"guest\",\"parts\":[");
	else
		hgt__blob_lit(b, ",\"verdict\":\"unknown\",\"parts\":[");
	for (int k = 0; k < d->nr_parts; k++) {
		const char *st = state_name(d->parts[k].state);

		if (k)
			hgt__blob_lit(b, ",");
		hgt__blob_lit(b, "{\"state\":\"");
		hgt__blob_add(b, st, strlen(st));
		hgt__blob_lit(b, "\",\"what\":");
		hgt__json_blob_s(b, d->parts[k].what);
		put_i(b, "id", d->parts[k].id);
		put_u(b, "ns", d->parts[k].ns);
		hgt__blob_lit(b, "}");
	}
	hgt__blob_lit(b, "]}");
}

/* The result as one JSON object, built in memory and written a quarter MB at a time (its
 * delays can be a hundred thousand: printf per field took half of `why --json`'s time). */
static int print_json(const struct hgt_why_result *r, FILE *f)
{
	struct hgt__blob b = { 0 };
	int ret = 0;

	json_head(r, &b);
	for (int i = 0; i <= r->nr && !b.oom; i++) {
		if (i == r->nr)
			hgt__blob_lit(&b, "\n]}\n");
		else if (i)
			hgt__blob_lit(&b, ",\n");
		else
			hgt__blob_lit(&b, "\n");
		if (i < r->nr)
			json_delay(&r->d[i], &b);
		if ((b.len >= 256 * 1024 || i == r->nr) && !b.oom) {
			if (fwrite(b.p, 1, b.len, f) != b.len)
				break;
			b.len = 0;
		}
	}
	if (b.oom)
		ret = -ENOMEM;
	free(b.p);
	return ret;
}

static void us3(char *buf, size_t n, uint64_t ns)
{
	snprintf(buf, n, "%llu.%03llu", (unsigned long long)(ns / 1000),
		 (unsigned long long)(ns % 1000));
}

static void print_table(const struct hgt_why_result *r, FILE *f)
{
	fprintf(f,
		"hgtrace why: %llu wakeups, %llu timers, %llu pairs; %d shown, worst first%s%s\n",
		(unsigned long long)r->found[0], (unsigned long long)r->found[1],
		(unsigned long long)r->found[2], r->nr, r->host ? "; host: " : "; no host trace",
		r->host ? r->host : "");
	if (r->flight)
		fprintf(f, "flight recorder's window: %s: %s\n", r->flight,
			r->flight_first ? "#1 is its delay"
					: "no delay here overlaps it (see the window's events)");
	if (r->tsc_hz)
		fprintf(f, "times: TSC cycles made ns at %llu Hz (%s rate)\n",
			(unsigned long long)r->tsc_hz, r->tsc_how ? r->tsc_how : "the given");
	for (int i = 0; i < r->nr; i++) {
		const struct hgt_why_delay *d = &r->d[i];
		char len[32], at[32], to[32], part[96], v[32];

		us3(len, sizeof(len), d->to_ns - d->from_ns);
		hgt__format_time_col(at, d->from_ns, true, true);
		hgt__format_time_col(to, d->to_ns, true, true);
		fprintf(f, "\n#%d %s of %s-%d on %s CPU %d: %s us, %s -> %s\n", i + 1,
			kind_name(d->kind), d->comm, d->pid, d->input, d->cpu, len, at, to);
		if (!d->vcpu_thread) {
			fprintf(f,
				"   no host thread known for this CPU (no host trace, or no GUEST option naming this guest)\n");
			continue;
		}
		for (int k = 0; k < d->nr_parts; k++) {
			const struct hgt_why_part *p = &d->parts[k];
			uint64_t all = d->to_ns - d->from_ns, rest = 0;

			if (k == 8 && d->nr_parts > 9) { /* the long tail in one line */
				for (; k < d->nr_parts; k++)
					rest += d->parts[k].ns;
				us3(v, sizeof(v), rest);
				fprintf(f, "   %12s us %5.1f%%  (%d more: --json lists them)\n", v,
					all ? 100.0 * (double)rest / (double)all : 0.0,
					d->nr_parts - 8);
				break;
			}
			us3(v, sizeof(v), p->ns);
			part_text(part, sizeof(part), p);
			fprintf(f, "   %12s us %5.1f%%  %s\n", v,
				all ? 100.0 * (double)p->ns / (double)all : 0.0, part);
		}
		if (!d->nr_parts || d->parts[0].state == HGT_WHY_UNKNOWN) {
			fprintf(f, "   cause: not known (outside the host trace)\n");
		} else if (!host_caused(d)) {
			us3(v, sizeof(v), d->host_ns);
			fprintf(f,
				"   cause: inside the guest (vCPU thread %d %s most of it; the host took %s us)\n",
				d->vcpu_thread,
				d->parts[0].state == HGT_WHY_GUEST ? "in guest mode"
								   : "halted by it",
				v);
		} else {
			part_text(part, sizeof(part), &d->parts[0]);
			fprintf(f, "   cause: the host, vCPU thread %d: %s\n", d->vcpu_thread,
				part);
		}
	}
}

/**
 * hgt_why_print - a result as a table or as JSON.
 */
int hgt_why_print(const struct hgt_why_result *r, FILE *f, bool json)
{
	if (!r || !f)
		return -EINVAL;
	if (json && print_json(r, f))
		return hgt__errorf(ENOMEM, "why: out of memory for the JSON output");
	if (!json)
		print_table(r, f);
	if (fflush(f) || ferror(f))
		return hgt__errorf(EIO, "why: write failed: %s", strerror(errno));
	return 0;
}
