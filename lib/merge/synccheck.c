// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sync check of a merged host + guests timeline: per host vCPU thread, whether it is in
 * guest mode (after kvm_entry, before kvm_exit); per guest event, whether its vCPU's
 * thread was. Records arrive in merged time order, so one pass suffices.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include <hgtrace/peer.h>
#include <hgtrace/sync.h>
#include <hgtrace/tracedat.h>

enum { ST_UNKNOWN, ST_IN, ST_OUT };

struct thread {
	int pid;
	int state;
	unsigned long long last_exit;
};

struct gin {
	struct hgt_sync_stats st;
	char mapping[160];
	int nr_cpus;
	int *thread; /* guest CPU -> index in threads, -1 unknown */
};

struct hgt_sync_check {
	int n, host;
	struct tep_handle *htep;
	int entry_id, exit_id;
	struct tep_format_field *pid_field;
	struct thread *threads;
	int nr_threads;
	struct gin *g;
	char host_name[64];
};

static int thread_index(struct hgt_sync_check *sc, int pid)
{
	int i;

	for (i = 0; i < sc->nr_threads; i++)
		if (sc->threads[i].pid == pid)
			return i;
	return -1;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static int setup_guest(struct hgt_sync_check *sc, struct hgt_input *host, struct hgt_input *in,
		       int idx, bool ts_offset)
{
	const struct hgt_time_shift *t = hgt_input_time_shift(in);
	struct gin *g = &sc->g[idx];
	struct hgt_guest gu;
	uint64_t id = 0, hid = 0;
	int i, k, *ids;

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
	} else {
		snprintf(g->mapping, sizeof(g->mapping), "none (guest clock shown as is)");
	}
	g->st.mapping = g->mapping;
	g->st.is_guest = true;
	if (!id || hgt_input_guest_by_id(host, id, &gu))
		return 0; /* the host does not know its vCPU threads */
	/* guest CPU i <-> i-th vCPU id (ascending) that has a thread */
	ids = calloc((size_t)gu.nr_vcpus + 1, sizeof(int));
	if (!ids)
		return -ENOMEM;
	for (i = 0, k = 0; i < gu.nr_vcpus; i++)
		if (gu.cpu_pid[i] > 0)
			ids[k++] = i;
	qsort(ids, (size_t)k, sizeof(int), cmp_int);
	g->nr_cpus = k;
	g->thread = malloc(sizeof(int) * (size_t)(k ? k : 1));
	if (!g->thread) {
		free(ids);
		return -ENOMEM;
	}
	for (i = 0; i < k; i++) {
		int pid = gu.cpu_pid[ids[i]], ti = thread_index(sc, pid);

		if (ti < 0) {
			struct thread *n =
				realloc(sc->threads, sizeof(*n) * (size_t)(sc->nr_threads + 1));

			if (!n) {
				free(ids);
				return -ENOMEM;
			}
			sc->threads = n;
			ti = sc->nr_threads++;
			n[ti] = (struct thread){ pid, ST_UNKNOWN, 0 };
		}
		g->thread[i] = ti;
	}
	g->st.mapped = true;
	free(ids);
	return 0;
}

struct hgt_sync_check *hgt_sync_check_new(struct hgt_input *const *in, int n, const bool *ts_offset)
{
	struct hgt_sync_check *sc;
	struct tep_event *en, *ex;
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
	if (!en || !ex) {
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
	sc->entry_id = en->id;
	sc->exit_id = ex->id;
	sc->pid_field = tep_find_common_field(en, "common_pid");
	snprintf(sc->host_name, sizeof(sc->host_name), "%s", base(hgt_input_path(in[host])));
	for (i = 0; i < n; i++) {
		struct hgt_guest gu;
		uint64_t id = 0;
		bool named = hgt_input_trace_id(in[i], &id) && id &&
			     !hgt_input_guest_by_id(in[host], id, &gu);

		if (i == host || (!named && !hgt_input_time_shift(in[i])))
			continue;
		if (setup_guest(sc, in[host], in[i], i, ts_offset && ts_offset[i])) {
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

void hgt_sync_check_record(struct hgt_sync_check *sc, int idx, const struct tep_record *rec)
{
	if (idx == sc->host) {
		int type, pid, ti;

		if (rec->size < 8)
			return;
		type = tep_data_type(sc->htep, (struct tep_record *)rec);
		if (type != sc->entry_id && type != sc->exit_id)
			return;
		memcpy(&pid, (const char *)rec->data + sc->pid_field->offset, 4);
		ti = thread_index(sc, pid);
		if (ti < 0)
			return;
		if (type == sc->entry_id) {
			sc->threads[ti].state = ST_IN;
		} else {
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

		if (!g->st.mapped || rec->cpu < 0 || rec->cpu >= g->nr_cpus) {
			g->st.unchecked++;
			return;
		}
		t = &sc->threads[g->thread[rec->cpu]];
		if (t->state == ST_IN || (t->state == ST_OUT && rec->ts == t->last_exit))
			g->st.inside++;
		else if (t->state == ST_OUT)
			g->st.outside++;
		else
			g->st.unchecked++;
	}
}

int hgt_sync_check_stats(const struct hgt_sync_check *sc, int idx, struct hgt_sync_stats *st)
{
	if (idx < 0 || idx >= sc->n || !sc->g[idx].st.is_guest)
		return -ENOENT;
	*st = sc->g[idx].st;
	return 0;
}

void hgt_sync_check_print(const struct hgt_sync_check *sc, FILE *f)
{
	int i;

	for (i = 0; i < sc->n; i++) {
		const struct hgt_sync_stats *s = &sc->g[i].st;
		uint64_t all = s->inside + s->outside + s->unchecked;

		if (!s->is_guest)
			continue;
		if (!s->mapped) {
			fprintf(f,
				"hgtrace: sync check: input %d: time: %s; vCPU threads unknown (no "
				"GUEST entry for it in %s: run hgtrace attach): %llu events "
				"unchecked\n",
				i + 1, s->mapping, sc->host_name, (unsigned long long)all);
			continue;
		}
		fprintf(f,
			"hgtrace: sync check: input %d: time: %s; %llu events: %llu outside their "
			"vCPU's guest windows in %s%s, %llu inside, %llu unchecked\n",
			i + 1, s->mapping, (unsigned long long)all, (unsigned long long)s->outside,
			sc->host_name, s->outside ? " (time mapping WRONG?)" : " (consistent)",
			(unsigned long long)s->inside, (unsigned long long)s->unchecked);
	}
}

void hgt_sync_check_free(struct hgt_sync_check *sc)
{
	int i;

	if (!sc)
		return;
	for (i = 0; i < sc->n; i++)
		free(sc->g[i].thread);
	free(sc->g);
	free(sc->threads);
	free(sc);
}
