// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Parallel formatting of the text report.
 *
 * Nearly all of a report's time goes into libtraceevent turning records into text. The
 * main thread keeps merging and filtering in time order; it copies the records it keeps
 * into batches, and worker threads format batches, each with its own libtraceevent handles
 * (every input opened again per worker: tep handles are not thread safe). Batches are
 * written out in order, so the output is byte for byte the sequential one. When no batch
 * slot is free, the main thread formats the oldest waiting batch itself (with a context
 * of its own) instead of waiting: one worker per spare core keeps every core busy whether
 * merging or formatting is the heavier part.
 *
 * Opening an input again costs about a tenth of a report's time (its event formats are
 * parsed again). The main thread opens its own context before it starts (it can always
 * format, so a worker whose open fails is only missed), and each worker opens its own in
 * its thread while the main thread merges.
 *
 * Two things make a line depend on the lines before it, and both are kept:
 *  - the sched_switch plugin registers the comm of every pid it prints (first one wins):
 *    the main thread logs each first registration, and a worker applies the log of all
 *    earlier batches before formatting a batch;
 *  - plugins with other state (function tracer indentation): the caller stops the
 *    parallel path (hgt__par_finish) before the first such record and goes on alone.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "../common/thread.h"
#include "../private/tracedat.h"
#include "report-local.h"

#define BATCH_RECORDS 4096

struct pitem {
	int h;
	int cpu;
	unsigned long long ts;
	long long missed;
	unsigned long long prev_ts;
	size_t off;
	int size;
	bool boundary;
};

struct comm_entry {
	int top;
	int pid;
	char comm[24];
};

enum { B_FREE, B_READY, B_BUSY, B_DONE };

struct batch {
	int state;
	unsigned long long seq;
	struct pitem *items;
	int n;
	uint8_t *data;
	size_t dlen, dcap;
	size_t log_start; /* comm log entries before this batch */
	char *text;	  /* formatted output (kept between uses) */
	size_t tlen, tcap;
	int err;
};

struct worker {
	struct hgt__par *p;
	pthread_t thread;
	struct hgt_input **in; /* per top input, opened for this context alone */
	struct hgt__line line;
	struct hgt__kvm_funcs kvm;
	size_t applied; /* comm log entries applied to this worker's teps */
	bool started;
};

struct hgt__par {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const struct hgt__par_handle *hs;
	int nr_h, nr_top;
	FILE *out;
	struct batch *b;
	int nr_b;
	struct batch *cur;	    /* being filled by the main thread, or NULL */
	unsigned long long filling; /* seq of the batch being filled */
	unsigned long long next_take, next_write;
	bool stop;
	struct worker *w; /* nr_w threads, then the main thread's own context */
	int nr_w;
	struct comm_entry *log;
	size_t nlog, maxlog;
	int err;
	/* what each context opens (the main thread's handles stay untouched meanwhile) */
	char **paths;
	struct tep_handle **funcs_from; /* per top input: the main thread's handle */
	unsigned int open_flags;
	bool nsec;
	struct hgt__kvm_map kvm_map;
};

/*
 * Kernel functions for a worker's handle, from the main thread's handle of the same file:
 * parsing kallsyms (libtraceevent does it with one sscanf per line) was half the cost of
 * opening an input again. The main thread's function map is built before any worker
 * starts (hgt__par_new) and only read afterwards, so lookups from several threads are
 * safe. The module name is not printed by libtraceevent's event output, only the name.
 */
static char *resolve_function(void *priv, unsigned long long *addrp, char **modp)
{
	const char *name;
	unsigned long long start;
	unsigned long size;

	*modp = NULL;
	if (!tep_find_function_info(priv, *addrp, &name, &start, &size)) /* 1: found */
		return NULL;
	*addrp = start;
	return (char *)name;
}

/*
 * Plugins register their options in a list of libtraceevent's that is global and has no
 * lock (tep_plugin_add_options()): contexts are opened one at a time. Format parsing has
 * a lock of its own (hgt__parse_lock()); the main thread parses nothing while workers run.
 */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Open a context's own inputs (tep handles are not thread safe). The format guard's
 * helper was forked before any worker started (by the main thread's own open), and the
 * formats' verdicts are known from that open: none is probed again. Returns 0 or -errno.
 */
static int worker_open(struct worker *w)
{
	struct hgt__par *p = w->p;
	HGT_OPTS(hgt_open_opts, oo, .flags = p->open_flags | HGT_OPEN_QUIET | HGT_OPEN_NO_KALLSYMS);
	int i, ret = 0;

	pthread_mutex_lock(&open_lock);
	for (i = 0; i < p->nr_top && !ret; i++) {
		w->in[i] = hgt_input_open(p->paths[i], &oo);
		if (!w->in[i]) {
			ret = errno ? -errno : -EIO;
			break;
		}
		if (tep_set_function_resolver(hgt_input_tep(w->in[i]), resolve_function,
					      p->funcs_from[i]))
			ret = -ENOMEM;
		if (p->nsec)
			tep_set_flag(hgt_input_tep(w->in[i]), TEP_NSEC_OUTPUT);
		/* settle the cmdline table as the first printed line does */
		tep_data_comm_from_pid(hgt_input_tep(w->in[i]), 0);
	}
	pthread_mutex_unlock(&open_lock);
	if (ret)
		return ret;
	for (i = 0; i < p->kvm_map.n; i++) {
		w->kvm.pid[i] = p->kvm_map.pid[i];
		w->kvm.tep[i] = hgt_input_tep(w->in[p->kvm_map.top[i]]);
	}
	w->kvm.n = p->kvm_map.n;
	return 0;
}

/* Apply the comm registrations of earlier batches to a worker's teps. */
static void catch_up(struct worker *w, size_t upto)
{
	struct hgt__par *p = w->p;

	pthread_mutex_lock(&p->lock);
	for (; w->applied < upto; w->applied++) {
		const struct comm_entry *e = &p->log[w->applied];

		tep_register_comm(hgt_input_tep(w->in[e->top]), e->comm, e->pid);
	}
	pthread_mutex_unlock(&p->lock);
}

/*
 * Format a batch straight into the worker's growing line buffer, then hand that buffer to
 * the batch and take the batch's old one (no stream, no copy).
 */
static int format_batch(struct worker *w, struct batch *b)
{
	struct hgt__par *p = w->p;
	int i;

	w->line.grow = true;
	w->line.olen = 0;
	for (i = 0; i < b->n; i++) {
		const struct pitem *it = &b->items[i];
		const struct hgt__par_handle *h = &p->hs[it->h];
		struct hgt__line_ctx c = h->ctx;
		struct tep_record rec = { 0 };
		unsigned long long last = it->prev_ts;

		c.tep = hgt_input_tep(w->in[h->top]);
		c.boundary = it->boundary;
		rec.ts = it->ts;
		rec.cpu = it->cpu;
		rec.data = b->data + it->off;
		rec.size = it->size;
		rec.missed_events = it->missed;
		if (h->prefix_len)
			hgt__line_put(&w->line, NULL, h->prefix, h->prefix_len);
		hgt__line_print(&w->line, &c, &rec, &last, NULL);
	}
	if (w->line.oom)
		return -ENOMEM;
	{
		char *text = b->text;
		size_t cap = b->tcap;

		b->text = w->line.obuf;
		b->tcap = w->line.ocap;
		b->tlen = w->line.olen;
		w->line.obuf = text;
		w->line.ocap = cap;
		w->line.olen = 0;
		if (!w->line.obuf) { /* the batch had none yet */
			w->line.ocap = HGT__OBUF;
			w->line.obuf = malloc(w->line.ocap);
			if (!w->line.obuf)
				return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Take the oldest submitted batch and format it with @w's handles. Called with the lock
 * held, and returns with it held (dropped while formatting).
 */
static void take_and_format(struct worker *w)
{
	struct hgt__par *p = w->p;
	struct batch *b = &p->b[p->next_take++ % (unsigned long long)p->nr_b];

	b->state = B_BUSY;
	pthread_mutex_unlock(&p->lock);
	catch_up(w, b->log_start);
	b->err = format_batch(w, b);
	pthread_mutex_lock(&p->lock);
	b->state = B_DONE;
	pthread_cond_broadcast(&p->cond);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct hgt__par *p = w->p;

	if (worker_open(w)) /* it formats nothing: the others take its share */
		return NULL;
	hgt__kvm_funcs_set(w->kvm.n ? &w->kvm : NULL);
	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (p->next_take >= p->filling && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->next_take >= p->filling) {
			pthread_mutex_unlock(&p->lock);
			break;
		}
		take_and_format(w);
		pthread_mutex_unlock(&p->lock);
	}
	hgt__kvm_funcs_set(NULL);
	return NULL;
}

/*
 * The main thread, rather than wait for a worker, formats the oldest submitted batch
 * itself, with a context of its own (the handles it merges with already hold the comms
 * registered further on). Lock held. Returns whether it formatted one.
 */
static bool main_help(struct hgt__par *p)
{
	struct worker *self = &p->w[p->nr_w];
	const struct hgt__kvm_funcs *kf = hgt__kvm_funcs_get();

	if (p->next_take >= p->filling || p->err)
		return false;
	hgt__kvm_funcs_set(self->kvm.n ? &self->kvm : NULL);
	take_and_format(self);
	hgt__kvm_funcs_set(kf);
	return true;
}

/* Write out finished batches in order; with @all, wait for every submitted one. Called by
 * the main thread with the lock held; the lock is dropped while writing (only the main
 * thread touches finished batches). */
static int write_done(struct hgt__par *p, bool all)
{
	while (p->next_write < p->filling) {
		struct batch *b = &p->b[p->next_write % (unsigned long long)p->nr_b];

		if (b->state != B_DONE) {
			if (!all || p->err) /* after an error nobody may format what is left */
				break;
			if (!main_help(p))
				pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		if (b->err && !p->err)
			p->err = b->err;
		if (!p->err && b->tlen) {
			size_t w;

			pthread_mutex_unlock(&p->lock);
			w = fwrite(b->text, 1, b->tlen, p->out);
			pthread_mutex_lock(&p->lock);
			if (w != b->tlen)
				p->err = -EIO;
		}
		b->tlen = 0; /* the buffer stays for the next use */
		b->n = 0;
		b->dlen = 0;
		b->state = B_FREE;
		p->next_write++;
		pthread_cond_broadcast(&p->cond);
	}
	return p->err;
}

/**
 * hgt__par_new - start @nr_workers formatting threads over the inputs @paths (opened again
 * with @open_flags for each worker; kernel functions are looked up in the caller's handles
 * @teps of the same files, which it must not use for anything else that looks functions up
 * until hgt__par_finish()). @hs describes every report handle. Returns NULL when the
 * parallel path cannot be set up (the caller then formats alone).
 */
struct hgt__par *hgt__par_new(int nr_workers, const char *const *paths,
			      struct tep_handle *const *teps, int nr_top, unsigned int open_flags,
			      bool nsec, const struct hgt__par_handle *hs, int nr_h,
			      const struct hgt__kvm_map *kvm, FILE *out)
{
	struct hgt__par *p = calloc(1, sizeof(*p));
	int i, k;

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->hs = hs;
	p->nr_h = nr_h;
	p->nr_top = nr_top;
	p->out = out;
	p->nr_w = nr_workers;
	p->nr_b = 2 * nr_workers + 2;
	p->b = calloc((size_t)p->nr_b, sizeof(*p->b));
	p->w = calloc((size_t)nr_workers + 1, sizeof(*p->w)); /* + the main thread's */
	if (!p->b || !p->w)
		goto fail;
	for (i = 0; i < p->nr_b; i++) {
		p->b[i].items = malloc(sizeof(struct pitem) * BATCH_RECORDS);
		if (!p->b[i].items)
			goto fail;
	}
	p->paths = calloc((size_t)(nr_top ? nr_top : 1), sizeof(*p->paths));
	if (!p->paths)
		goto fail;
	p->funcs_from = malloc(sizeof(*p->funcs_from) * (size_t)(nr_top ? nr_top : 1));
	if (!p->funcs_from)
		goto fail;
	for (i = 0; i < nr_top; i++) {
		p->paths[i] = strdup(paths[i]);
		if (!p->paths[i])
			goto fail;
		p->funcs_from[i] = teps[i];
		tep_find_function(teps[i], 0); /* builds the function map, here, once */
	}
	p->open_flags = open_flags;
	p->nsec = nsec;
	if (kvm && kvm->n)
		p->kvm_map = *kvm; /* the caller's arrays outlive the workers */
	for (k = 0; k <= nr_workers; k++) {
		struct worker *w = &p->w[k];

		w->p = p;
		if (hgt__line_init(&w->line))
			goto fail;
		w->in = calloc((size_t)nr_top, sizeof(*w->in));
		if (!w->in)
			goto fail;
		if (p->kvm_map.n) {
			w->kvm.pid = malloc(sizeof(int) * (size_t)p->kvm_map.n);
			w->kvm.tep = malloc(sizeof(*w->kvm.tep) * (size_t)p->kvm_map.n);
			if (!w->kvm.pid || !w->kvm.tep)
				goto fail;
		}
	}
	if (worker_open(&p->w[nr_workers])) /* the main thread's, before any worker runs */
		goto fail;
	for (k = 0; k < nr_workers; k++) {
		if (hgt__thread_create(&p->w[k].thread, worker_main, &p->w[k]))
			goto fail;
		p->w[k].started = true;
	}
	return p;
fail:
	hgt__par_free(p);
	return NULL;
}

/* Take the next slot for filling, writing out finished batches until it is free. */
static struct batch *take_slot(struct hgt__par *p)
{
	struct batch *b = &p->b[p->filling % (unsigned long long)p->nr_b];

	pthread_mutex_lock(&p->lock);
	while (b->state != B_FREE && !p->err) {
		write_done(p, false);
		if (b->state != B_FREE && !p->err && !main_help(p))
			pthread_cond_wait(&p->cond, &p->lock);
	}
	if (b->state != B_FREE) {
		pthread_mutex_unlock(&p->lock);
		return NULL; /* output failed: stop filling */
	}
	b->state = B_READY;
	b->n = 0;
	b->dlen = 0;
	b->log_start = p->nlog;
	pthread_mutex_unlock(&p->lock);
	return b;
}

static void submit(struct hgt__par *p, struct batch *b)
{
	/* zeroed slack after the last record, as the cursors keep after each page */
	memset(b->data + b->dlen, 0, HGT__PAR_SLACK);
	pthread_mutex_lock(&p->lock);
	b->seq = p->filling++;
	p->cur = NULL;
	pthread_cond_broadcast(&p->cond);
	write_done(p, false);
	pthread_mutex_unlock(&p->lock);
}

/**
 * hgt__par_add - queue record @rec of handle @h (its payload is copied).
 */
int hgt__par_add(struct hgt__par *p, int h, const struct tep_record *rec, bool boundary,
		 unsigned long long prev_ts)
{
	struct batch *b = p->cur;
	struct pitem *it;
	size_t need;

	if (!b)
		b = p->cur = take_slot(p);
	if (!b || p->err)
		return p->err ? p->err : -EIO;
	need = b->dlen + (size_t)rec->size + 8;
	if (need > b->dcap || !b->data) {
		size_t cap = need * 2 + 65536;
		/* slack after the copy: libtraceevent may read a little past a record */
		uint8_t *d = realloc(b->data, cap + HGT__PAR_SLACK);

		if (!d)
			return -ENOMEM;
		b->data = d;
		b->dcap = cap;
	}
	it = &b->items[b->n++];
	it->h = h;
	it->cpu = rec->cpu;
	it->ts = rec->ts;
	it->missed = rec->missed_events;
	it->prev_ts = prev_ts;
	it->off = b->dlen;
	it->size = rec->size;
	it->boundary = boundary;
	memcpy(b->data + b->dlen, rec->data, (size_t)rec->size);
	b->dlen += ((size_t)rec->size + 7) & ~(size_t)7;
	memset(b->data + it->off + rec->size, 0, b->dlen - it->off - (size_t)rec->size);
	if (b->n == BATCH_RECORDS)
		submit(p, b);
	return 0;
}

/**
 * hgt__par_log_comm - pid @pid of top input @top got comm @comm (its first registration,
 * in print order): applied by each worker before the batches that follow.
 */
int hgt__par_log_comm(struct hgt__par *p, int top, int pid, const char *comm)
{
	int ret = 0;

	/* the entry belongs to the record about to be queued: its batch starts before it */
	if (!p->cur)
		p->cur = take_slot(p);
	if (!p->cur)
		return p->err ? p->err : -EIO;
	pthread_mutex_lock(&p->lock);
	if (p->nlog == p->maxlog) {
		size_t m = p->maxlog ? 2 * p->maxlog : 256;
		struct comm_entry *l = realloc(p->log, sizeof(*l) * m);

		if (!l) {
			ret = -ENOMEM;
			goto out;
		}
		p->log = l;
		p->maxlog = m;
	}
	p->log[p->nlog].top = top;
	p->log[p->nlog].pid = pid;
	snprintf(p->log[p->nlog].comm, sizeof(p->log[p->nlog].comm), "%s", comm);
	p->nlog++;
out:
	pthread_mutex_unlock(&p->lock);
	return ret;
}

/**
 * hgt__par_finish - submit the last batch, write every batch out, stop the workers.
 * Returns 0 or the first error.
 */
int hgt__par_finish(struct hgt__par *p)
{
	int k, ret;

	if (p->cur && p->cur->n)
		submit(p, p->cur);
	pthread_mutex_lock(&p->lock);
	write_done(p, true);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	ret = p->err;
	pthread_mutex_unlock(&p->lock);
	for (k = 0; k < p->nr_w; k++)
		if (p->w[k].started) {
			hgt__thread_join(p->w[k].thread);
			p->w[k].started = false;
		}
	return ret;
}

void hgt__par_free(struct hgt__par *p)
{
	int i, k;

	if (!p)
		return;
	if (p->w) {
		pthread_mutex_lock(&p->lock);
		p->stop = true;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		for (k = 0; k <= p->nr_w; k++) {
			struct worker *w = &p->w[k];

			if (w->started)
				hgt__thread_join(w->thread);
			for (i = 0; w->in && i < p->nr_top; i++)
				hgt_input_close(w->in[i]);
			free(w->in);
			free(w->kvm.pid);
			free(w->kvm.tep);
			hgt__line_fini(&w->line);
		}
	}
	for (i = 0; p->b && i < p->nr_b; i++) {
		free(p->b[i].items);
		free(p->b[i].data);
		free(p->b[i].text);
	}
	free(p->b);
	free(p->w);
	for (i = 0; p->paths && i < p->nr_top; i++)
		free(p->paths[i]);
	free(p->paths);
	free(p->funcs_from);
	free(p->log);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}
