// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sync check of a merged host + guests timeline: per host vCPU thread, whether it is in
 * guest mode (after kvm_entry, before kvm_exit) or, where the host has no kvm events (a
 * TCG guest runs inside its vCPU thread), whether the thread is running (between its
 * sched_switch in and out); per guest event, whether its vCPU's thread was. Records
 * arrive in merged time order, so one pass suffices. A guest event may lie up to the
 * guest's sync bound outside a window; events after a window waits for the next one (or
 * for a switch-out whose switch-in was lost: the thread then ran since the previous
 * switch on that CPU) before they are counted.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/clock.h>
#include <hgtrace/infer.h>
#include <hgtrace/merge.h>

#include <traceevent/event-parse.h>

#include <hgtrace/peer.h>
#include <hgtrace/sync.h>
#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "../private/tracedat.h"
#include "merge-local.h"

enum { ST_UNKNOWN, ST_IN, ST_OUT };

/* Guest events waiting for their thread's next window, per thread: the list grows to this
 * many (32 MiB); one more cannot be decided and counts unchecked. */
#define PEND_MAX (1 << 22)
#define TS_UNSEEN (~0ULL)

struct thread {
	int pid;
	int state;
	int gidx;     /* the guest input it runs */
	int gcpu;     /* and the guest CPU */
	int host_cpu; /* sched mode: where it runs */
	unsigned long long last_exit;
	unsigned long long *pend; /* times of events waiting for a window, in order */
	int nr_pend, max_pend;
};

struct gin {
	struct hgt_sync_stats st;
	char mapping[200];
	int nr_cpus;
	int *thread;	   /* guest CPU -> index in threads, -1 unknown */
	uint64_t *cpu_out; /* events outside, per guest CPU */
	uint64_t bound;
	bool synced;	       /* a TIME_SHIFT made for this host, or --ts-offset */
	char why_unsynced[96]; /* else why not */
};

struct hgt_sync_check {
	int n, host;
	struct tep_handle *htep;
	int htype_off; /* hgt__type_offset() of htep */
	bool sched;    /* windows from sched_switch (no kvm events) */
	int entry_id, exit_id, switch_id;
	struct tep_format_field *pid_field, *prev_pid, *next_pid;
	unsigned long long *last_switch; /* sched: per host CPU, TS_UNSEEN before its first */
	unsigned long long *first_ts;	 /* sched: each host CPU's first record */
	int nr_host_cpus;
	struct thread *threads;
	int nr_threads;
	struct gin *g;
	char host_name[64];
	unsigned long long host_last; /* the host's last record so far */
	/* a saved window (HGT__WINDOW_TAG in the host's CPUSTAT): only guest events within
	 * it are decided; the threads' states start over at its start */
	bool windowed, win_started;
	unsigned long long win_from, win_to;
};

static int thread_index(struct hgt_sync_check *sc, int pid)
{
	int i;

	for (i = 0; i < sc->nr_threads; i++)
		if (sc->threads[i].pid == pid)
			return i;
	return -1;
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/*
 * The bound the recorder (or attach) stored with the TIME_SHIFT, in TSC cycles: the last
 * "hgtrace sync: ... bound=N" CPUSTAT line goes with the last TIME_SHIFT, the one applied.
 */
/* Whether the last "hgtrace sync: " line of @in is a refinement's. */
bool hgt__sync_last_refined(const struct hgt_input *in)
{
	const char *b = NULL, *p = hgt_input_cpustat(in);

	while ((p = strstr(p, "hgtrace sync: "))) {
		b = p;
		p += 14;
	}
	return b && !strncmp(b + 14, "refined by the trace", 20);
}

bool hgt__sync_stored_bound(const struct hgt_input *in, uint64_t *bound, bool *inferred)
{
	const char *b = NULL, *p = hgt_input_cpustat(in), *e, *v;

	while ((p = strstr(p, "hgtrace sync: "))) {
		b = p;
		p += 14;
	}
	if (!b)
		return false;
	e = strchr(b, '\n');
	v = strstr(b, "bound=");
	if (!v || (e && v > e))
		return false;
	*bound = strtoull(v + 6, NULL, 10);
	p = strstr(b, "inferred");
	*inferred = p && p < v;
	return true;
}

/**
 * hgt__guest_cpu_threads - the host thread of each CPU of guest @guest, from @host's GUEST
 * option naming @guest's trace id: guest CPU i runs in the i-th vCPU id (ascending) that
 * has a thread. *@pids (caller frees) gets one pid per guest CPU. Returns their number,
 * -ENOENT when @host does not name @guest, or -ENOMEM.
 */
int hgt__guest_cpu_threads(const struct hgt_input *host, const struct hgt_input *guest, int **pids)
{
	struct hgt_guest gu;
	uint64_t id = 0;
	int i, k;

	*pids = NULL;
	if (!hgt_input_trace_id(guest, &id) || !id || hgt_input_guest_by_id(host, id, &gu))
		return -ENOENT;
	/* cpu_pid is indexed by vCPU id: ascending ids are ascending indexes */
	*pids = calloc((size_t)gu.nr_vcpus + 1, sizeof(int));
	if (!*pids)
		return -ENOMEM;
	for (i = 0, k = 0; i < gu.nr_vcpus; i++)
		if (gu.cpu_pid[i] > 0)
			(*pids)[k++] = gu.cpu_pid[i];
	return k;
}

static int setup_guest(struct hgt_sync_check *sc, struct hgt_input *host, struct hgt_input *in,
		       int idx, bool ts_offset, bool lookalike)
{
	const struct hgt_time_shift *t = hgt_input_time_shift(in);
	struct gin *g = &sc->g[idx];
	uint64_t id = 0, hid = 0;
	int i, k, *pids;

	hgt_input_trace_id(in, &id);
	hgt_input_trace_id(host, &hid);
	if (t && t->nr_cpus > 0) {
		uint32_t samples = 0;

		for (i = 0; i < t->nr_cpus; i++)
			samples += t->cpus[i].count;
		snprintf(g->mapping, sizeof(g->mapping), "TIME_SHIFT (%d CPUs, %u samples%s%s)",
			 t->nr_cpus, samples,
			 samples == (uint32_t)t->nr_cpus    ? ""
			 : t->flags & HGT_TSYNC_INTERPOLATE ? ", interpolated"
							    : ", step",
			 t->peer_id && hid && t->peer_id != hid ? ", made for ANOTHER host" : "");
	} else if (ts_offset) {
		snprintf(g->mapping, sizeof(g->mapping), "--ts-offset");
	} else if (lookalike) {
		snprintf(
			g->mapping, sizeof(g->mapping),
			"none: it looks like a guest of %s (kvm events there): run hgtrace attach %s %s",
			sc->host_name, hgt_input_path(host), hgt_input_path(in));
	} else {
		snprintf(g->mapping, sizeof(g->mapping), "none (guest clock shown as is)");
	}
	if (t && t->nr_cpus > 0) {
		bool inferred;
		uint32_t mult, shift;
		uint64_t off;

		if (hgt__sync_stored_bound(in, &g->bound, &inferred)) {
			size_t l = strlen(g->mapping);

			snprintf(g->mapping + l, sizeof(g->mapping) - l, ", %s +-%llu",
				 inferred		      ? "inferred from the trace"
				 : hgt__sync_last_refined(in) ? "synced, refined by the trace"
							      : "synced",
				 (unsigned long long)g->bound);
			if (hgt_input_tsc2nsec(host, &mult, &shift, &off) && mult)
				g->bound = hgt_mul_u64_u32_shr(g->bound, mult, shift) + 1;
		}
	}
	if (t && t->nr_cpus > 0 && t->peer_id && hid && t->peer_id != hid)
		snprintf(g->why_unsynced, sizeof(g->why_unsynced),
			 "its TIME_SHIFT maps it to another host's clock");
	else if (t && t->nr_cpus > 0)
		g->synced = true;
	else if (ts_offset)
		g->synced = true;
	else
		snprintf(g->why_unsynced, sizeof(g->why_unsynced),
			 "nothing maps its clock to the host's");
	g->st.mapping = g->mapping;
	g->st.is_guest = true;
	k = hgt__guest_cpu_threads(host, in, &pids);
	if (k == -ENOENT)
		return 0; /* the host does not know its vCPU threads */
	if (k < 0)
		return k;
	g->nr_cpus = k;
	g->thread = malloc(sizeof(int) * (size_t)(k ? k : 1));
	g->cpu_out = calloc((size_t)(k ? k : 1), sizeof(*g->cpu_out));
	if (!g->thread || !g->cpu_out) {
		free(pids);
		return -ENOMEM;
	}
	for (i = 0; i < k; i++) {
		int pid = pids[i], ti = thread_index(sc, pid);

		if (ti < 0) {
			struct thread *n =
				realloc(sc->threads, sizeof(*n) * (size_t)(sc->nr_threads + 1));

			if (!n) {
				free(pids);
				return -ENOMEM;
			}
			sc->threads = n;
			ti = sc->nr_threads++;
			n[ti] = (struct thread){ .pid = pid,
						 .state = ST_UNKNOWN,
						 .gidx = idx,
						 .gcpu = i,
						 .host_cpu = -1 };
		}
		g->thread[i] = ti;
	}
	g->st.mapped = true;
	free(pids);
	return 0;
}

struct hgt_sync_check *hgt_sync_check_new(struct hgt_input *const *in, int n, const bool *ts_offset)
{
	struct hgt_sync_check *sc;
	struct tep_event *en, *ex, *sw;
	int i, host = -1, guests = 0;

	for (i = 0; i < n && host < 0; i++)
		if (hgt_input_nr_guests(in[i]) > 0)
			host = i;
	for (i = 0; i < n && host < 0; i++) {
		struct tep_handle *tep = hgt_input_tep(in[i]);

		if (tep && !hgt_input_time_shift(in[i]) &&
		    tep_find_event_by_name(tep, "kvm", "kvm_entry") &&
		    tep_find_event_by_name(tep, "kvm", "kvm_exit"))
			host = i;
	}
	if (host < 0 || !hgt_input_tep(in[host])) {
		errno = ENOENT;
		return NULL;
	}
	en = tep_find_event_by_name(hgt_input_tep(in[host]), "kvm", "kvm_entry");
	ex = tep_find_event_by_name(hgt_input_tep(in[host]), "kvm", "kvm_exit");
	sw = tep_find_event_by_name(hgt_input_tep(in[host]), "sched", "sched_switch");
	if ((!en || !ex) && (!sw || !hgt_input_nr_guests(in[host]))) {
		errno = ENOENT;
		return NULL;
	}
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return NULL;
	sc->g = calloc((size_t)n, sizeof(*sc->g));
	if (!sc->g) {
		free(sc);
		return NULL;
	}
	sc->n = n;
	sc->host = host;
	sc->htep = hgt_input_tep(in[host]);
	sc->htype_off = hgt__type_offset(sc->htep);
	if (en && ex) {
		sc->entry_id = en->id;
		sc->exit_id = ex->id;
		sc->pid_field = tep_find_common_field(en, "common_pid");
	} else {
		sc->sched = true;
		sc->entry_id = sc->exit_id = -1;
		sc->switch_id = sw->id;
		sc->prev_pid = tep_find_field(sw, "prev_pid");
		sc->next_pid = tep_find_field(sw, "next_pid");
		sc->pid_field = sc->prev_pid && sc->next_pid ? sc->prev_pid : NULL;
		sc->nr_host_cpus = hgt_input_nr_cpus(in[host]);
		sc->last_switch = malloc(sizeof(*sc->last_switch) *
					 (size_t)(sc->nr_host_cpus > 0 ? sc->nr_host_cpus : 1));
		sc->first_ts = malloc(sizeof(*sc->first_ts) *
				      (size_t)(sc->nr_host_cpus > 0 ? sc->nr_host_cpus : 1));
		if (!sc->last_switch || !sc->first_ts) {
			hgt_sync_check_free(sc);
			errno = ENOMEM;
			return NULL;
		}
		for (i = 0; i < sc->nr_host_cpus; i++)
			sc->last_switch[i] = sc->first_ts[i] = TS_UNSEEN;
	}
	snprintf(sc->host_name, sizeof(sc->host_name), "%s", base(hgt_input_path(in[host])));
	{
		const char *w = strstr(hgt_input_cpustat(in[host]), HGT__WINDOW_TAG);

		sc->windowed = w &&
			       sscanf(w + strlen(HGT__WINDOW_TAG), "%llu %llu", &sc->win_from,
				      &sc->win_to) == 2 &&
			       sc->win_from <= sc->win_to;
	}
	for (i = 0; i < n; i++) {
		struct hgt_guest gu;
		uint64_t id = 0;
		bool named = hgt_input_trace_id(in[i], &id) && id &&
			     !hgt_input_guest_by_id(in[host], id, &gu);

		bool lookalike = false;

		if (i == host)
			continue;
		if (!named && !hgt_input_time_shift(in[i])) {
			/* no mapping at all: say so when it looks like this host's guest (kvm
			 * events on the host, none known here), else it is another machine's */
			struct tep_handle *t = hgt_input_tep(in[i]);

			if (!en || !ex || (ts_offset && ts_offset[i]) || !t ||
			    tep_find_event_by_name(t, "kvm", "kvm_entry"))
				continue;
			lookalike = true;
		}
		if (setup_guest(sc, in[host], in[i], i, ts_offset && ts_offset[i], lookalike)) {
			hgt_sync_check_free(sc);
			errno = ENOMEM;
			return NULL;
		}
		guests++;
	}
	if (!guests || !sc->pid_field) {
		hgt_sync_check_free(sc);
		errno = ENOENT;
		return NULL;
	}
	return sc;
}

/* Pending events of @t: those at or after @from count inside, the others @older_as. */
static void resolve(struct hgt_sync_check *sc, struct thread *t, unsigned long long from,
		    bool older_unchecked)
{
	struct hgt_sync_stats *st = &sc->g[t->gidx].st;

	for (int i = 0; i < t->nr_pend; i++) {
		if (t->pend[i] >= from) {
			st->inside++;
		} else if (older_unchecked) {
			st->unchecked++;
		} else {
			st->outside++;
			sc->g[t->gidx].cpu_out[t->gcpu]++;
		}
	}
	t->nr_pend = 0;
}

static int pend_grow(struct thread *t)
{
	int n = t->max_pend ? 2 * t->max_pend : 1024;
	unsigned long long *p;

	if (t->max_pend >= PEND_MAX)
		return -ENOSPC;
	p = realloc(t->pend, sizeof(*p) * (size_t)n);
	if (!p)
		return -ENOMEM;
	t->pend = p;
	t->max_pend = n;
	return 0;
}

static unsigned long long minus(unsigned long long a, unsigned long long b)
{
	return a > b ? a - b : 0;
}

static int read_int(const struct tep_record *rec, const struct tep_format_field *f)
{
	int v = 0;

	if (f && f->offset >= 0 && rec->size >= f->offset + 4)
		memcpy(&v, (const char *)rec->data + f->offset, 4);
	return v;
}

/* A host sched_switch: the vCPU threads it switches out and in. */
static void host_switch(struct hgt_sync_check *sc, const struct tep_record *rec)
{
	int prev = read_int(rec, sc->prev_pid), next = read_int(rec, sc->next_pid);
	int c = rec->cpu;
	unsigned long long ts = rec->ts, before;

	if (c < 0 || c >= sc->nr_host_cpus)
		return;
	/* before: since when the task switched out here had run on this CPU at least (its
	 * previous switch, else the CPU's first record: no switch came between) */
	before = sc->last_switch[c] != TS_UNSEEN ? sc->last_switch[c] : sc->first_ts[c];
	for (int i = 0; i < sc->nr_threads; i++) {
		struct thread *t = &sc->threads[i];
		unsigned long long b = sc->g[t->gidx].bound;

		if (t->pid == prev) {
			/* switched out; without a seen switch-in it ran since the previous
			 * switch on this CPU */
			if (t->state != ST_IN)
				resolve(sc, t, minus(before, b), t->state == ST_UNKNOWN);
			t->state = ST_OUT;
			t->last_exit = ts;
		} else if (t->state == ST_IN && t->host_cpu == c) {
			/* its switch-out was lost: it ran until this switch */
			t->state = ST_OUT;
			t->last_exit = ts;
		}
		if (t->pid == next) {
			resolve(sc, t, minus(ts, b), t->state == ST_UNKNOWN);
			t->state = ST_IN;
			t->host_cpu = c;
		}
	}
	sc->last_switch[c] = ts;
}

/* A saved window's start: before it the host's CPUs were not all recorded, so what the
 * threads did then is not known; waiting events cannot be placed. */
static void window_start(struct hgt_sync_check *sc, unsigned long long ts)
{
	if (!sc->windowed || sc->win_started || ts < sc->win_from)
		return;
	sc->win_started = true;
	for (int i = 0; i < sc->nr_threads; i++) {
		resolve(sc, &sc->threads[i], ~0ULL, true);
		sc->threads[i].state = ST_UNKNOWN;
	}
}

void hgt_sync_check_record(struct hgt_sync_check *sc, int idx, const struct tep_record *rec)
{
	window_start(sc, rec->ts);
	if (idx == sc->host) {
		int type, pid, ti;

		if (rec->ts > sc->host_last)
			sc->host_last = rec->ts;
		if (rec->size < 8)
			return;
		if (sc->sched && rec->cpu >= 0 && rec->cpu < sc->nr_host_cpus &&
		    sc->first_ts[rec->cpu] == TS_UNSEEN)
			sc->first_ts[rec->cpu] = rec->ts;
		type = hgt__record_type(sc->htep, sc->htype_off, (struct tep_record *)rec);
		if (sc->sched) {
			if (type == sc->switch_id)
				host_switch(sc, rec);
			return;
		}
		if (type != sc->entry_id && type != sc->exit_id)
			return;
		memcpy(&pid, (const char *)rec->data + sc->pid_field->offset, 4);
		ti = thread_index(sc, pid);
		if (ti < 0)
			return;
		if (type == sc->entry_id) {
			resolve(sc, &sc->threads[ti],
				minus(rec->ts, sc->g[sc->threads[ti].gidx].bound),
				sc->threads[ti].state == ST_UNKNOWN);
			sc->threads[ti].state = ST_IN;
		} else {
			/* a first exit: the thread was in guest mode since before the host saw
			 * it, so what waited since cannot be placed (inside, or before) */
			if (sc->threads[ti].state == ST_UNKNOWN)
				resolve(sc, &sc->threads[ti], ~0ULL, true);
			sc->threads[ti].state = ST_OUT;
			sc->threads[ti].last_exit = rec->ts;
		}
		return;
	}
	if (idx < 0 || idx >= sc->n || !sc->g[idx].st.is_guest)
		return;
	{
		struct gin *g = &sc->g[idx];
		struct thread *t;

		if (!g->st.mapped || rec->cpu < 0 || rec->cpu >= g->nr_cpus ||
		    (sc->windowed && (rec->ts < sc->win_from || rec->ts > sc->win_to))) {
			g->st.unchecked++;
			return;
		}
		t = &sc->threads[g->thread[rec->cpu]];
		if (t->state == ST_IN ||
		    (t->state == ST_OUT && rec->ts <= t->last_exit + g->bound)) {
			g->st.inside++;
			return;
		}
		/* wait for the thread's next window */
		if (t->nr_pend == t->max_pend && pend_grow(t)) {
			/* the list is full (or memory is): this one cannot be decided */
			g->st.unchecked++;
			return;
		}
		t->pend[t->nr_pend++] = rec->ts;
	}
}

/* Of @t's waiting events, those the host recorded past with no window of @t: outside
 * (none while @t was never seen in the host: unknown). */
static uint64_t pend_in_host(const struct hgt_sync_check *sc, const struct thread *t)
{
	uint64_t n = 0;

	if (t->state == ST_UNKNOWN)
		return 0;
	for (int k = 0; k < t->nr_pend && t->pend[k] <= sc->host_last; k++)
		n++;
	return n;
}

int hgt_sync_check_stats(const struct hgt_sync_check *sc, int idx, struct hgt_sync_stats *st)
{
	if (idx < 0 || idx >= sc->n || !sc->g[idx].st.is_guest)
		return -ENOENT;
	*st = sc->g[idx].st;
	/* events still waiting: no window came after them while the host recorded; after
	 * its last record nothing can be said of them */
	for (int i = 0; i < sc->nr_threads; i++)
		if (sc->threads[i].gidx == idx) {
			uint64_t out = pend_in_host(sc, &sc->threads[i]);

			st->outside += out;
			st->unchecked += (uint64_t)sc->threads[i].nr_pend - out;
		}
	return 0;
}

uint64_t hgt_sync_check_cpu_outside(const struct hgt_sync_check *sc, int idx, int cpu)
{
	const struct gin *g;
	uint64_t n;

	if (idx < 0 || idx >= sc->n || !sc->g[idx].st.is_guest || !sc->g[idx].st.mapped ||
	    cpu < 0 || cpu >= sc->g[idx].nr_cpus)
		return 0;
	g = &sc->g[idx];
	n = g->cpu_out[cpu];
	/* events still waiting after a window that never came (while the host recorded) */
	if (g->thread[cpu] >= 0)
		n += pend_in_host(sc, &sc->threads[g->thread[cpu]]);
	return n;
}

/**
 * hgt_sync_check_verdict - what the check of guest input @idx says (HGT_SYNC_UNCHECKED
 * for an input that is not a guest).
 */
enum hgt_sync_verdict hgt_sync_check_verdict(const struct hgt_sync_check *sc, int idx)
{
	struct hgt_sync_stats st;

	if (hgt_sync_check_stats(sc, idx, &st))
		return HGT_SYNC_UNCHECKED;
	if (!sc->g[idx].synced)
		return HGT_SYNC_NOT_SYNCED;
	if (!st.mapped)
		return HGT_SYNC_UNCHECKED;
	if (st.outside)
		return HGT_SYNC_INCONSISTENT;
	return st.inside ? HGT_SYNC_CONSISTENT : HGT_SYNC_UNCHECKED;
}

const char *hgt_sync_verdict_name(enum hgt_sync_verdict v)
{
	switch (v) {
	case HGT_SYNC_CONSISTENT:
		return "consistent";
	case HGT_SYNC_INCONSISTENT:
		return "INCONSISTENT";
	case HGT_SYNC_NOT_SYNCED:
		return "NOT SYNCED";
	case HGT_SYNC_UNCHECKED:
		break;
	}
	return "UNCHECKED";
}

static void print_one(const struct hgt_sync_check *sc, int i, FILE *f)
{
	const struct gin *g = &sc->g[i];
	enum hgt_sync_verdict v = hgt_sync_check_verdict(sc, i);
	struct hgt_sync_stats st;
	uint64_t all;

	if (hgt_sync_check_stats(sc, i, &st))
		return;
	all = st.inside + st.outside + st.unchecked;
	if (v == HGT_SYNC_NOT_SYNCED) {
		fprintf(f,
			"hgtrace: sync check: input %d: time: %s: NOT SYNCED (%s): its %llu events cannot be placed in %s's time\n",
			i + 1, st.mapping, g->why_unsynced, (unsigned long long)all, sc->host_name);
		return;
	}
	if (!st.mapped) {
		fprintf(f,
			"hgtrace: sync check: input %d: time: %s; vCPU threads unknown (no GUEST entry for it in %s: run hgtrace attach): UNCHECKED: %llu events unchecked\n",
			i + 1, st.mapping, sc->host_name, (unsigned long long)all);
		return;
	}
	fprintf(f,
		"hgtrace: sync check: input %d: time: %s; %llu events: %llu outside their vCPU's %s in %s (%s), %llu inside, %llu unchecked\n",
		i + 1, st.mapping, (unsigned long long)all, (unsigned long long)st.outside,
		sc->sched ? "thread's running intervals" : "guest windows", sc->host_name,
		v == HGT_SYNC_INCONSISTENT ? "INCONSISTENT: time mapping WRONG?"
		: v == HGT_SYNC_UNCHECKED  ? "UNCHECKED: none of them lies in the host's windows"
					   : hgt_sync_verdict_name(v),
		(unsigned long long)st.inside, (unsigned long long)st.unchecked);
	for (int c = 0; st.outside && c < g->nr_cpus; c++)
		if (hgt_sync_check_cpu_outside(sc, i, c))
			fprintf(f, "hgtrace: sync check: input %d: guest CPU %d: %llu outside\n",
				i + 1, c, (unsigned long long)hgt_sync_check_cpu_outside(sc, i, c));
}

void hgt_sync_check_print(const struct hgt_sync_check *sc, FILE *f)
{
	for (int i = 0; i < sc->n; i++)
		print_one(sc, i, f);
}

void hgt_sync_check_free(struct hgt_sync_check *sc)
{
	int i;

	if (!sc)
		return;
	for (i = 0; sc->g && i < sc->n; i++) {
		free(sc->g[i].thread);
		free(sc->g[i].cpu_out);
	}
	for (i = 0; i < sc->nr_threads; i++)
		free(sc->threads[i].pend);
	free(sc->g);
	free(sc->threads);
	free(sc->last_switch);
	free(sc->first_ts);
	free(sc);
}

int hgt_sync_check_host(const struct hgt_sync_check *sc)
{
	return sc->host;
}

/* Per guest CPU: the offsets that fit, and the stored ones against them. */
static void worsen(enum hgt_sync_verdict *v, enum hgt_sync_verdict to)
{
	if (to > *v)
		*v = to;
}

static int feasible(struct hgt_input *host, struct hgt_input *guest, int idx, FILE *out,
		    enum hgt_sync_verdict *verdict)
{
	const struct hgt_time_shift *t = hgt_input_time_shift(guest);
	struct hgt_infer_cpu *c = NULL;
	uint64_t ratio = 0, b = 0;
	unsigned int frac = 0;
	int ncpu, ret, *pids;
	bool inferred;

	ncpu = hgt__guest_cpu_threads(host, guest, &pids);
	if (ncpu == -ENOENT)
		return 0;
	if (ncpu < 0)
		return ncpu;
	c = calloc((size_t)ncpu + 1, sizeof(*c));
	if (!c) {
		free(pids);
		return -ENOMEM;
	}
	hgt__sync_stored_bound(guest, &b, &inferred); /* TSC cycles, as the offsets */
	for (int i = 0; i < ncpu; i++)
		c[i].pid = pids[i];
	free(pids);
	if (t && t->nr_cpus > 0 && t->cpus[0].count &&
	    !(t->cpus[0].scaling[0] == 1 && t->cpus[0].frac[0] == 0)) {
		ratio = (uint64_t)t->cpus[0].scaling[0];
		frac = (unsigned int)t->cpus[0].frac[0];
	}
	{
		HGT_OPTS(hgt_infer_pair_opts, po, .ratio = ratio, .frac = frac);

		ret = ncpu ? hgt_infer_pair(host, guest, c, ncpu, &po) : 0;
	}
	for (int i = 0; !ret && i < ncpu; i++) {
		const struct hgt_infer_result *r = &c[i].r;
		const struct hgt_time_shift_cpu *s = t && i < t->nr_cpus ? &t->cpus[i] : NULL;
		/* c = host - guest scaled; TIME_SHIFT holds c scaled back to guest units */
		int64_t lo = ratio ? (int64_t)(((__int128)r->lo * ratio) >> frac) : r->lo;
		int64_t hi = ratio ? (int64_t)(((__int128)r->hi * ratio) >> frac) + 1 : r->hi;
		uint32_t in = 0, near = 0;

		if (r->status != HGT_INFER_OK) {
			if (r->events)
				worsen(verdict, r->status == HGT_INFER_NO_DATA
							? HGT_SYNC_UNCHECKED
							: HGT_SYNC_INCONSISTENT);
			fprintf(out,
				"hgtrace: sync check: input %d: guest CPU %d (thread %d): %llu events: %s\n",
				idx + 1, i, c[i].pid, (unsigned long long)r->events,
				!r->events ? "no events"
				: r->status == HGT_INFER_NO_DATA
					? "the host has no windows of its thread"
					: "no offset fits them all");
			continue;
		}
		for (uint32_t k = 0; s && k < s->count; k++) {
			in += s->offset[k] >= lo && s->offset[k] <= hi;
			near += s->offset[k] >= lo - (int64_t)b && s->offset[k] <= hi + (int64_t)b;
		}
		if (!s)
			worsen(verdict, HGT_SYNC_NOT_SYNCED);
		else if (near < s->count)
			worsen(verdict, HGT_SYNC_INCONSISTENT);
		fprintf(out,
			"hgtrace: sync check: input %d: guest CPU %d (thread %d): %llu events fit offsets %lld..%lld (%lld +- %llu); stored offset%s ",
			idx + 1, i, c[i].pid, (unsigned long long)r->events, (long long)lo,
			(long long)hi, (long long)(lo + (hi - lo) / 2),
			(unsigned long long)((hi - lo + 1) / 2), s && s->count > 1 ? "s" : "");
		if (!s)
			fprintf(out, "none\n");
		else if (s->count == 1 && in && !ratio)
			/* lo = offset - entry gap, hi = offset + exit gap: what attach --gaps
			 * takes to infer another pair of this kind */
			fprintf(out, "%lld: inside; the gaps it leaves: entry %lld, exit %lld\n",
				(long long)s->offset[0], (long long)(s->offset[0] - lo),
				(long long)(hi - s->offset[0]));
		else if (s->count == 1)
			fprintf(out, "%lld: %s\n", (long long)s->offset[0],
				in     ? "inside"
				: near ? "outside, but within its own bound"
				       : "OUTSIDE");
		else
			fprintf(out, "%u of %u inside, %u more within their bound (+-%llu)%s\n", in,
				s->count, near - in, (unsigned long long)b,
				near < s->count ? ": OUTSIDE" : "");
	}
	hgt_infer_cpu_free(c, ncpu);
	free(c);
	return ret;
}

/**
 * hgt_sync_check_inputs - the check of whole inputs @in[0..n-1], their top buffers merged
 * in host time as report merges them.
 */
struct hgt_sync_check *hgt_sync_check_inputs(struct hgt_input *const *in, int n)
{
	struct hgt_sync_check *sc = hgt_sync_check_new(in, n, NULL);
	struct hgt_clock *clk = calloc((size_t)(n > 0 ? n : 1), sizeof(*clk));
	struct hgt_cursor **cur = NULL;
	struct hgt_merge *m = hgt_merge_new();
	struct tep_record *rec;
	int nc = 0, ret = 0, total = 0;
	void *user;

	if (!sc) {
		ret = errno == ENOMEM
			      ? -ENOMEM
			      : hgt__errorf(
					ENOENT,
					"no host + guest pair: the host needs kvm_entry/kvm_exit events or a GUEST option, the guest a TIME_SHIFT or the host's GUEST entry");
		goto out;
	}
	for (int i = 0; i < n; i++)
		total += hgt__top_cpus(in[i]);
	cur = calloc((size_t)total + 1, sizeof(*cur));
	if (!clk || !m || !cur) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n && !ret; i++) {
		hgt_clock_init(&clk[i], in[i], NULL);
		ret = hgt__merge_add_top(m, in[i], &clk[i], cur + nc, (void *)(intptr_t)i);
		nc += hgt__top_cpus(in[i]);
	}
	if (ret)
		goto out;
	while ((ret = hgt_merge_next(m, &rec, &user, NULL)) > 0)
		hgt_sync_check_record(sc, (int)(intptr_t)user, rec);
out:
	hgt_merge_free(m);
	for (int i = 0; i < nc; i++)
		hgt_cursor_close(cur[i]);
	free(cur);
	free(clk);
	if (ret < 0) {
		hgt_sync_check_free(sc);
		errno = -ret;
		return NULL;
	}
	return sc;
}

/**
 * hgt_sync_check_files - the sync check alone, with the feasible offsets per guest CPU.
 */
int hgt_sync_check_files(struct hgt_input *const *in, int n, FILE *out,
			 enum hgt_sync_verdict *verdict)
{
	struct hgt_sync_check *sc = hgt_sync_check_inputs(in, n);
	int ret = 0;

	*verdict = HGT_SYNC_CONSISTENT;
	if (!sc)
		return -errno;
	hgt_sync_check_print(sc, out);
	for (int i = 0; i < n; i++) {
		struct hgt_sync_stats st;

		if (hgt_sync_check_stats(sc, i, &st))
			continue;
		worsen(verdict, hgt_sync_check_verdict(sc, i));
		if (st.mapped && (ret = feasible(in[sc->host], in[i], i, out, verdict)))
			break;
	}
	hgt_sync_check_free(sc);
	return ret;
}
