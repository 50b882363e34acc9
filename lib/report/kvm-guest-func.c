// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest symbols in the host's kvm_entry / kvm_exit lines. libtraceevent's kvm plugin asks
 * the program for the function at a guest rip through two weak hooks,
 * tep_plugin_kvm_get_func() and tep_plugin_kvm_put_func(); trace-cmd answers them from
 * the guest file's kallsyms when the host maps that guest's vCPU threads (GUEST option).
 * We answer the same way, so merged host + guest reports print the same lines.
 *
 * The plugin API has no context argument, so the map of the report being printed sits in
 * a thread-local pointer, set around the print loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include <hgtrace/peer.h>
#include <hgtrace/tracedat.h>

#include "../private/tracedat.h"
#include "report-local.h"

static __thread struct hgt__kvm_funcs *current;

/*
 * Per vCPU thread of the map (by its index), the function its last rip fell in and the
 * range of rips that fall in it too (f->last): a vCPU's exits come back to the same
 * functions (and a host's kvm_entry repeats its exit's rip), so most lookups are a range
 * check. The range: from the guest's table of functions (kallsyms.c's hgt__ksyms_range()),
 * or from libtraceevent's size where its own map holds them (the next symbol's address
 * less its own); a handle that looks its functions up through a resolver gets a size of 0
 * (libtraceevent 1.7), an empty range, and every rip is looked up. The last symbol, which
 * the lookup finds only at its start, has an empty range too. Kept in the map, not the
 * thread: a thread that takes turns with maps (the parallel report's main thread) keeps
 * each one's, and their names belong to that map's guests' handles.
 */
void hgt__kvm_funcs_set(struct hgt__kvm_funcs *f)
{
	current = f;
}

struct hgt__kvm_funcs *hgt__kvm_funcs_get(void)
{
	return current;
}

/**
 * hgt__kvm_func - the function holding guest address *@val for the vCPU thread @pid, and
 * the length of its name (*@len); *@val becomes the function's start address. NULL when
 * unknown.
 */
const char *hgt__kvm_func(int pid, unsigned long long *val, size_t *len)
{
	struct hgt__kvm_funcs *f = current;
	unsigned long long start;
	unsigned long size;
	const char *func;

	if (!f)
		return NULL;
	for (int i = 0; i < f->n; i++) {
		struct hgt__kvm_last *l = &f->last[i % HGT__KVM_LAST];
		unsigned long long lo, end;

		if (f->pid[i] != pid)
			continue;
		if (l->pid == pid && *val >= l->lo && *val < l->end) {
			*val = l->start;
			*len = l->len;
			return l->func;
		}
		if (f->ksyms && f->ksyms[i]) {
			func = hgt__ksyms_range(f->ksyms[i], *val, &start, &lo, &end);
			if (!func)
				return NULL;
		} else {
			if (!tep_find_function_info(f->tep[i], *val, &func, &start, &size))
				return NULL; /* 1: found */
			lo = start;
			end = start + size;
		}
		*len = strlen(func);
		*l = (struct hgt__kvm_last){ pid, start, lo, end, func, *len };
		*val = start; /* the plugin prints rip - start */
		return func;
	}
	return NULL;
}

/* The function holding guest address *@val for the vCPU thread that logged @record;
 * *@val becomes the function's start address. NULL when unknown. */
const char *tep_plugin_kvm_get_func(struct tep_event *event, struct tep_record *record,
				    unsigned long long *val);
const char *tep_plugin_kvm_get_func(struct tep_event *event, struct tep_record *record,
				    unsigned long long *val)
{
	size_t len;

	if (!current || !event || !record || !val)
		return NULL;
	return hgt__kvm_func(tep_data_pid(event->tep, record), val, &len);
}

void tep_plugin_kvm_put_func(const char *func);
void tep_plugin_kvm_put_func(const char *func)
{
	(void)func; /* owned by the guest's tep handle */
}

/**
 * hgt__kvm_funcs_build - the vCPU threads of the hosts among @in (@n top-level inputs) ->
 * the tep of the guest each runs (every GUEST option naming another input's trace id),
 * and its table of functions (or NULL), into @f, and the guest's input index into @km (may
 * be NULL). 0 or -ENOMEM; free f->pid, f->tep, f->ksyms and km->top (km->pid is f->pid) in
 * every case.
 */
int hgt__kvm_funcs_build(struct hgt_input *const *in, int n, struct hgt__kvm_funcs *f,
			 struct hgt__kvm_map *km)
{
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++) {
			struct hgt_guest g;
			uint64_t id;

			if (i == j || !hgt_input_trace_id(in[j], &id) ||
			    hgt_input_guest_by_id(in[i], id, &g))
				continue;
			for (int v = 0; v < g.nr_vcpus; v++) {
				int *p, *tp = NULL;
				struct tep_handle **t;
				const struct hgt__ksyms **ks;

				if (g.cpu_pid[v] <= 0)
					continue;
				p = realloc(f->pid, sizeof(*p) * (size_t)(f->n + 1));
				if (p)
					f->pid = p;
				t = realloc(f->tep, sizeof(*t) * (size_t)(f->n + 1));
				if (t)
					f->tep = t;
				ks = realloc(f->ksyms, sizeof(*ks) * (size_t)(f->n + 1));
				if (ks)
					f->ksyms = ks;
				if (km) {
					tp = realloc(km->top, sizeof(*tp) * (size_t)(f->n + 1));
					if (tp)
						km->top = tp;
				}
				if (!p || !t || !ks || (km && !tp))
					return -ENOMEM;
				f->pid[f->n] = g.cpu_pid[v];
				f->tep[f->n] = hgt_input_tep(in[j]);
				f->ksyms[f->n] = hgt__input_ksyms(in[j]);
				if (km) {
					km->top[f->n] = j;
					km->n = f->n + 1;
					km->pid = f->pid;
				}
				f->n++;
			}
		}
	}
	return 0;
}
