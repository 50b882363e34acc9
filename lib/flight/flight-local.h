/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/flight/: the triggers (trigger.c) and the recorder that searches with them (flight.c). */
#ifndef HGT_FLIGHT_LOCAL_H
#define HGT_FLIGHT_LOCAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum hgt__trig_kind {
	HGT__TRIG_WAKEUP,  /* why's wakeup delay, of a task (comm or pid) or any */
	HGT__TRIG_TIMER,   /* why's timer lateness */
	HGT__TRIG_PAIR,	   /* why's --from/--to pair */
	HGT__TRIG_PREEMPT, /* a vCPU thread preempted in the host (one stretch, any tasks) */
	HGT__TRIG_EXIT,	   /* one exit of a reason handled in the host */
	HGT__TRIG_MARKER,  /* a trace_marker write (ftrace print) holding a text, anywhere */
	HGT__TRIG_MANUAL,  /* hgt_flight_trigger() */
};

struct hgt__trigger {
	enum hgt__trig_kind kind;
	const char *text; /* as given (the caller's) */
	uint64_t dur_ns;  /* a hit is longer than this */
	char *comm;	  /* WAKEUP: this task's name only (NULL: any) */
	int pid;	  /* WAKEUP: this task only (0: any) */
	char *from, *to;  /* PAIR: why's --from and --to */
	bool per_cpu;	  /* PAIR: matched per CPU (pair-cpu:) */
	char *reason;	  /* EXIT: the reason as the kvm_exit line names it; MARKER: the text */
};

/* One delay or host stretch longer than its trigger's duration. */
struct hgt__hit {
	int trig;		  /* index in the triggers, -1: by hand */
	enum hgt__trig_kind kind; /* the trigger's (a delay over two triggers is one hit) */
	int input;		  /* of the searched files (0: the host) */
	int cpu, pid; /* the guest CPU and task (PREEMPT, EXIT: the vCPU thread's pid) */
	char comm[24];
	uint64_t from_ns, to_ns; /* report time: the host's */
	char cause[96];		 /* the host's top part, or what the stretch was */
};

int hgt__trigger_parse(const char *text, struct hgt__trigger *t);
void hgt__trigger_free(struct hgt__trigger *t);
int hgt__parse_duration(const char *s, size_t len, uint64_t unit_ns, uint64_t *ns);

/* A search of recordings in progress: how far behind their newest record a CPU's pages
 * may be, and whether CPU @cpu of input @input begins with a page from before the window
 * (its records before that page's last are not in the files). @host_alone: the input is
 * a session's host whose guests' pages have not come, not a guest: its tasks' delays are
 * no trigger's (markers alone are searched). @reach (when not NULL): each CPU's last record
 * (0: none). @read_from: the files hold each CPU's records from this report time on (not
 * all before), and a delay or stretch that begins before it an earlier search decided: it
 * is no hit (0: none such). Out: the span a hit is taken in, @from (the latest of the inputs') to
 * @upto, in report time (0 0: none known), and @resume: the earliest record the next search needs
 * (of a delay or host stretch open at @upto, or ending after it; @upto when none is): one
 * that reads each CPU from its first record at or after @resume finds every hit this one
 * left to it. */
struct hgt_input;
struct hgt__live {
	uint64_t lag_ns;
	bool (*context)(void *arg, int input, int cpu);
	void (*reach)(void *arg, int input, int cpu, uint64_t last);
	/* each input as the search opens it: where its pages lie (NULL: in its file) */
	int (*opened)(void *arg, int input, struct hgt_input *in);
	void *arg;
	bool host_alone;
	uint64_t read_from;
	uint64_t from, upto, resume;
};

/* Every trigger's hits in @inputs (the host's first), appended to *@hits (*@nr of them).
 * Files of recordings in progress (@live, NULL for whole files): a hit that ends later than
 * every CPU's pages are sure to reach is left for the next search, and counted in
 * *@deferred (when not NULL); one that begins before every CPU's records are there is
 * dropped (a search that has them decides). Returns 0 or -errno (hgt_last_error() says
 * why). */
int hgt__trigger_search(const struct hgt__trigger *t, int nt, const char *const *inputs, int n,
			struct hgt__live *live, struct hgt__hit **hits, int *nr, int *deferred);

/* The hit in @inputs (a saved window) that is @h: its delay explained by why, printed on
 * @log as why prints one; its length and cause into @h. Returns 1 found, 0 not, -errno. */
int hgt__trigger_explain(const struct hgt__trigger *t, const char *const *inputs, int n,
			 struct hgt__hit *h, FILE *log);

/* @a and @b are the same hit seen twice, or by two triggers (the same kind, task or
 * thread, overlapping). */
bool hgt__hit_same(const struct hgt__hit *a, const struct hgt__hit *b);

#endif
