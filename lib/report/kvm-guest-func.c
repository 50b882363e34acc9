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
#include <stdlib.h>

#include <traceevent/event-parse.h>

#include "report-local.h"

static __thread const struct hgt__kvm_funcs *current;

void hgt__kvm_funcs_set(const struct hgt__kvm_funcs *f)
{
	current = f;
}

const struct hgt__kvm_funcs *hgt__kvm_funcs_get(void)
{
	return current;
}

/* The function holding guest address *@val for the vCPU thread that logged @record;
 * *@val becomes the function's start address. NULL when unknown. */
const char *tep_plugin_kvm_get_func(struct tep_event *event, struct tep_record *record,
				    unsigned long long *val);
const char *tep_plugin_kvm_get_func(struct tep_event *event, struct tep_record *record,
				    unsigned long long *val)
{
	const struct hgt__kvm_funcs *f = current;
	unsigned long long start;
	const char *func;
	int pid, i;

	if (!f || !event || !record || !val)
		return NULL;
	pid = tep_data_pid(event->tep, record);
	for (i = 0; i < f->n; i++) {
		if (f->pid[i] != pid)
			continue;
		func = tep_find_function(f->tep[i], *val);
		if (!func)
			return NULL;
		start = tep_find_function_address(f->tep[i], *val);
		*val = start; /* the plugin prints rip - start */
		return func;
	}
	return NULL;
}

void tep_plugin_kvm_put_func(const char *func);
void tep_plugin_kvm_put_func(const char *func)
{
	(void)func; /* owned by the guest's tep handle */
}
