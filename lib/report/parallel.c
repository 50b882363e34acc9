// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Parallel formatting: of the text report, and of an export.
 *
 * Nearly all of a report's time goes into libtraceevent turning records into text, and
 * an export's into making its JSON or protobuf. The main thread keeps merging and
 * filtering in time order; it copies the records it keeps into batches (each with bytes of
 * its own beside it: what an export decided about the record), and worker threads format
 * batches with the caller's hgt__par_ops, each with its own libtraceevent handles (every
 * input opened again per worker: tep handles are not thread safe). Batches are written out
 * in order, so the output is byte for byte the sequential one. When no batch slot is free,
 * the main thread formats the oldest waiting batch itself (with a context of its own)
 * instead of waiting: one worker per spare core keeps every core busy whether merging or
 * formatting is the heavier part.
 *
 * Opening an input again costs about a tenth of a report's time (its event formats are
 * parsed again). The main thread opens its own context before it starts (it can always
 * format, so a worker whose open fails is only missed), and each worker opens its own in
 * its thread while the main thread merges.
 *
 * Two things make a record's text depend on the records before it, and both are kept:
 *  - the sched_switch plugin registers the comm of every pid it prints (first one wins):
 *    the main thread logs each first registration (hgt__par_comms), and a worker applies
 *    the log of all earlier batches before formatting a batch;
 *  - plugins with other state (function tracer indentation): hgt__par_comms says so, and
 *    the caller stops the parallel path (hgt__par_finish) before the first such record and
 *    goes on alone.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "../common/thread.h"
#include "../private/tracedat.h"
#include "report-local.h"

struct comm_entry {
	int top;
	int pid;
	char comm[24];
};

enum { B_FREE, B_READY, B_BUSY, B_DONE };

struct batch {
	int state;
	unsigned long long seq;
	struct hgt__par_item *items;
	int n;
	uint8_t *data;
	size_t dlen, dcap;
	size_t log_start;      /* comm log entries before this batch */
	struct hgt__blob text; /* formatted output (kept between uses) */
	int err;
};

struct worker {
	struct hgt__par *p;
	pthread_t thread;
	struct hgt_input **in; /* per top input, opened for this context alone */
	void *ctx;	       /* the caller's formatting context over @in */
	struct hgt__kvm_funcs kvm;
	size_t applied; /* comm log entries applied to this worker's teps */
	bool started;
};

struct hgt__par {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct hgt__par_ops ops;
	int nr_top;
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
	struct hgt_input **funcs_from; /* per top input: the main thread's */
	unsigned int open_flags;
	bool nsec;
	struct hgt__kvm_map kvm_map;
	/* the main thread's: each event type's kind (K_*), per top input and type id;
	 * where a record's 2-byte type lies in each input (-1: asked of libtraceevent) */
	uint8_t **kinds;
	int *type_off;
	/* the sched plugins' comm and pid fields by (top input, type, which of the record's
	 * pairs), found once (plugin_comm) */
	struct comm_src {
		int top, type, which;
		const struct tep_format_field *comm, *pid;
	} csrc[64];
	int ncsrc;
	/* (top input, pid) known to have a comm in the main thread's handle, by pid: once
	 * registered, a pid stays so */
	struct {
		int top, pid1; /* pid + 1; 0: none */
	} known[4096];
};

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
		/* kernel functions from the main thread's input: parsing kallsyms again was
		 * half the cost of opening an input */
		ret = hgt__input_share_functions(p->funcs_from[i], hgt_input_tep(w->in[i]));
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
		/* the main thread's table: read-only, shared */
		w->kvm.ksyms[i] = hgt__input_ksyms(p->funcs_from[p->kvm_map.top[i]]);
	}
	w->kvm.n = p->kvm_map.n;
	w->ctx = p->ops.ctx_new(p->ops.arg, w->in);
	return w->ctx ? 0 : -ENOMEM;
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
	b->text.len = 0;
	b->text.oom = false;
	b->err = p->ops.format(w->ctx, b->items, b->n, b->data, &b->text);
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
	struct hgt__kvm_funcs *kf = hgt__kvm_funcs_get();

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
		if (!p->err && b->text.len) {
			int w;

			pthread_mutex_unlock(&p->lock);
			w = p->ops.write(p->ops.arg, &b->text);
			pthread_mutex_lock(&p->lock);
			if (w)
				p->err = w;
		}
		b->text.len = 0; /* the buffer stays for the next use */
		b->n = 0;
		b->dlen = 0;
		b->state = B_FREE;
		p->next_write++;
		pthread_cond_broadcast(&p->cond);
	}
	return p->err;
}

/**
 * hgt__par_path - the name under which a worker opens @in again: its open file through
 * /proc (a file renamed or written over after this open is not read in its place), else
 * its path. @buf holds the first.
 */
const char *hgt__par_path(const struct hgt_input *in, char buf[32])
{
	snprintf(buf, 32, "/proc/self/fd/%d", hgt__input_fd(in));
	return access(buf, R_OK) ? hgt_input_path(in) : buf;
}

/* Each context's inputs and formatting context, and the main thread's own opened. */
static int contexts_new(struct hgt__par *p, int nr_workers)
{
	for (int k = 0; k <= nr_workers; k++) {
		struct worker *w = &p->w[k];

		w->p = p;
		w->in = calloc((size_t)p->nr_top, sizeof(*w->in));
		if (!w->in)
			return -ENOMEM;
		if (p->kvm_map.n) {
			w->kvm.pid = malloc(sizeof(int) * (size_t)p->kvm_map.n);
			w->kvm.tep = malloc(sizeof(*w->kvm.tep) * (size_t)p->kvm_map.n);
			w->kvm.ksyms = malloc(sizeof(*w->kvm.ksyms) * (size_t)p->kvm_map.n);
			if (!w->kvm.pid || !w->kvm.tep || !w->kvm.ksyms)
				return -ENOMEM;
		}
	}
	return worker_open(&p->w[nr_workers]); /* the main thread's, before any worker runs */
}

/**
 * hgt__par_new - start @nr_workers formatting threads over the inputs @paths (opened again
 * with @open_flags for each worker; kernel functions are looked up in the caller's inputs
 * @ins of the same files: in their tables, or in their handles' own maps, which the caller
 * must then not use for anything else that looks functions up until hgt__par_finish()).
 * @ops formats and writes. Returns NULL when the parallel path
 * cannot be set up (the caller then formats alone).
 */
struct hgt__par *hgt__par_new(int nr_workers, const char *const *paths,
			      struct hgt_input *const *ins, int nr_top, unsigned int open_flags,
			      bool nsec, const struct hgt__kvm_map *kvm,
			      const struct hgt__par_ops *ops)
{
	struct hgt__par *p = calloc(1, sizeof(*p));
	size_t ntop = (size_t)(nr_top ? nr_top : 1);
	int i, k;

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->ops = *ops;
	p->nr_top = nr_top;
	p->nr_w = nr_workers;
	p->nr_b = 2 * nr_workers + 2;
	p->b = calloc((size_t)p->nr_b, sizeof(*p->b));
	p->w = calloc((size_t)nr_workers + 1, sizeof(*p->w)); /* + the main thread's */
	p->paths = calloc(ntop, sizeof(*p->paths));
	p->funcs_from = calloc(ntop, sizeof(*p->funcs_from));
	p->kinds = calloc(ntop, sizeof(*p->kinds));
	p->type_off = calloc(ntop, sizeof(*p->type_off));
	if (!p->b || !p->w || !p->paths || !p->funcs_from || !p->kinds || !p->type_off)
		goto fail;
	for (i = 0; i < p->nr_b; i++) {
		p->b[i].items = malloc(sizeof(struct hgt__par_item) * HGT__PAR_BATCH);
		if (!p->b[i].items)
			goto fail;
	}
	for (i = 0; i < nr_top; i++) {
		p->paths[i] = strdup(paths[i]);
		p->kinds[i] = calloc(65536, 1);
		if (!p->paths[i] || !p->kinds[i])
			goto fail;
		p->funcs_from[i] = ins[i];
		p->type_off[i] = hgt__type_offset(hgt_input_tep(ins[i]));
		/* builds libtraceevent's function map (when the handle has one) here, once */
		tep_find_function(hgt_input_tep(ins[i]), 0);
	}
	p->open_flags = open_flags;
	p->nsec = nsec;
	if (kvm && kvm->n)
		p->kvm_map = *kvm; /* the caller's arrays outlive the workers */
	if (contexts_new(p, nr_workers))
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
 * hgt__par_add - queue record @rec of the caller's input or handle @h (its payload is
 * copied), with @aux_len bytes of the caller's @aux.
 */
int hgt__par_add(struct hgt__par *p, int h, const struct tep_record *rec, bool boundary,
		 unsigned long long prev_ts, const void *aux, size_t aux_len)
{
	struct batch *b = p->cur;
	struct hgt__par_item *it;
	size_t need;

	if (!b)
		b = p->cur = take_slot(p);
	if (!b || p->err)
		return p->err ? p->err : -EIO;
	need = b->dlen + (size_t)rec->size + 8 + aux_len + 8;
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
	it->aux_off = (uint32_t)b->dlen;
	it->aux_len = (uint32_t)aux_len;
	if (aux_len) {
		memcpy(b->data + b->dlen, aux, aux_len);
		b->dlen += (aux_len + 7) & ~(size_t)7;
	}
	if (b->n == HGT__PAR_BATCH)
		submit(p, b);
	return 0;
}

/* Pid @pid of top input @top got comm @comm (its first registration, in print order):
 * applied by each worker before the batches that follow. */
static int log_comm(struct hgt__par *p, int top, int pid, const char *comm)
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

enum {
	K_UNSEEN = 0,
	K_PLAIN,
	K_SWITCH,   /* sched_switch plugin: registers prev and next comms */
	K_WAKEUP,   /* sched_wakeup plugin: registers the woken comm */
	K_STATEFUL, /* a plugin keeping other state (function tracer indentation) */
};

/**
 * hgt__par_stateful - whether @ev's plugin keeps state between records (the function
 * tracers' indentation): its records are formatted in order by one thread.
 */
bool hgt__par_stateful(const struct tep_event *ev)
{
	return ev && ev->handler && !strcmp(ev->system, "ftrace") &&
	       (!strcmp(ev->name, "function") || !strncmp(ev->name, "funcgraph", 9));
}

static int classify(struct tep_handle *tep, struct tep_record *rec)
{
	struct tep_event *ev = tep_find_event_by_record(tep, rec);

	if (!ev || !ev->handler)
		return K_PLAIN;
	if (!strcmp(ev->system, "sched") && !strcmp(ev->name, "sched_switch"))
		return K_SWITCH;
	if (!strcmp(ev->system, "sched") &&
	    (!strcmp(ev->name, "sched_wakeup") || !strcmp(ev->name, "sched_wakeup_new")))
		return K_WAKEUP;
	if (hgt__par_stateful(ev))
		return K_STATEFUL;
	return K_PLAIN;
}

/* The fields of the comm the sched plugins register for (@comm_field, @pid_field) in
 * records of @type, pair @which of them, into *@tmp when there is no room to keep them. */
static const struct comm_src *comm_src(struct hgt__par *p, struct tep_handle *tep, int top,
				       int type, int which, const char *comm_field,
				       const char *pid_field, struct comm_src *tmp)
{
	struct comm_src *c = tmp;
	struct tep_event *ev;

	for (int i = 0; i < p->ncsrc; i++)
		if (p->csrc[i].top == top && p->csrc[i].type == type && p->csrc[i].which == which)
			return &p->csrc[i];
	if (p->ncsrc < (int)(sizeof(p->csrc) / sizeof(p->csrc[0])))
		c = &p->csrc[p->ncsrc++];
	ev = tep_find_event(tep, type);
	*c = (struct comm_src){ top, type, which, ev ? tep_find_any_field(ev, comm_field) : NULL,
				ev ? tep_find_field(ev, pid_field) : NULL };
	return c;
}

/* The comm the sched plugins register for (@comm_field, @pid_field), if it is new. */
static int plugin_comm(struct hgt__par *p, struct tep_handle *tep, int top, int type,
		       struct tep_record *rec, int which, const char *comm_field,
		       const char *pid_field)
{
	struct comm_src tmp;
	const struct comm_src *c = comm_src(p, tep, top, type, which, comm_field, pid_field, &tmp);
	const struct tep_format_field *f = c->comm;
	unsigned int k;
	char comm[64];
	int len, pid, ret;

	if (!f || !c->pid || c->pid->offset < 0 || c->pid->offset + c->pid->size > rec->size)
		return 0;
	pid = (int)tep_read_number(tep, (const char *)rec->data + c->pid->offset, c->pid->size);
	k = (unsigned int)pid % (sizeof(p->known) / sizeof(p->known[0]));
	if (p->known[k].pid1 == pid + 1 && p->known[k].top == top)
		return 0;
	len = f->size < (int)sizeof(comm) - 1 ? f->size : (int)sizeof(comm) - 1;
	if (tep_is_pid_registered(tep, pid) ||
	    (unsigned int)f->offset + (unsigned int)len > (unsigned int)rec->size)
		ret = 0;
	else {
		snprintf(comm, sizeof(comm), "%.*s", len, (const char *)rec->data + f->offset);
		tep_register_comm(tep, comm, pid);
		ret = log_comm(p, top, pid, comm);
	}
	if (!ret && tep_is_pid_registered(tep, pid)) {
		p->known[k].top = top;
		p->known[k].pid1 = pid + 1;
	}
	return ret;
}

/**
 * hgt__par_comms - before record @rec of top input @top (the main thread's handle @tep) is
 * queued: the comms its plugin will register, registered in @tep and logged when new.
 * Returns 1 when its plugin keeps other state (the caller must finish the parallel path
 * and format it alone), 0, or -errno.
 */
int hgt__par_comms(struct hgt__par *p, int top, struct tep_handle *tep, struct tep_record *rec)
{
	int type = hgt__record_type(tep, p->type_off[top], rec) & 0xffff;
	uint8_t *k = &p->kinds[top][type];

	if (*k == K_UNSEEN)
		*k = (uint8_t)classify(tep, rec);
	switch (*k) {
	case K_STATEFUL:
		return 1;
	case K_SWITCH: {
		int ret = plugin_comm(p, tep, top, type, rec, 0, "prev_comm", "prev_pid");

		return ret ? ret : plugin_comm(p, tep, top, type, rec, 1, "next_comm", "next_pid");
	}
	case K_WAKEUP:
		return plugin_comm(p, tep, top, type, rec, 0, "comm", "pid");
	default:
		return 0;
	}
}

/*
 * Below this much page data (stored bytes, compressed ones counted PAR_ZIP_RATIO times)
 * the main thread formats alone: each worker opens every input again and parses all its
 * event formats, which costs more than it saves on a small file (a 100 KB recording with
 * ~1,500 formats: 0.19 s with two threads, 0.14 s with one).
 */
#define PAR_MIN_BYTES (8u << 20)
#define PAR_ZIP_RATIO 8

static uint64_t page_bytes(const struct hgt_input *in)
{
	uint64_t sum = 0;

	for (int b = 0; b < hgt_input_nr_buffers(in); b++) {
		const struct hgt_buffer *buf = hgt_input_buffer(in, b);

		for (int c = 0; c < buf->nr_cpus; c++)
			if (buf->cpus[c].present)
				sum += buf->cpus[c].size * (buf->compressed ? PAR_ZIP_RATIO : 1);
	}
	return sum;
}

/**
 * hgt__par_workers - how many workers to start for inputs @in: one per free CPU
 * (hgt__cpus_free()) but the main thread's (HGT_THREADS: that many threads in all, whatever
 * the size), none below PAR_MIN_BYTES or for a latency trace.
 */
int hgt__par_workers(struct hgt_input *const *in, int n)
{
	const char *e = getenv("HGT_THREADS");
	long nt = e ? strtol(e, NULL, 10) : hgt__cpus_free();
	uint64_t bytes = 0;

	for (int i = 0; i < n; i++) {
		if (hgt_input_is_latency(in[i]))
			return 0;
		bytes += page_bytes(in[i]);
	}
	if ((!e && bytes < PAR_MIN_BYTES) || nt < 2)
		return 0;
	return nt > 9 ? 8 : (int)nt - 1; /* the main thread merges on a core of its own */
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
			if (w->ctx)
				p->ops.ctx_free(w->ctx);
			for (i = 0; w->in && i < p->nr_top; i++)
				hgt_input_close(w->in[i]);
			free(w->in);
			free(w->kvm.pid);
			free(w->kvm.tep);
			free(w->kvm.ksyms);
		}
	}
	for (i = 0; p->b && i < p->nr_b; i++) {
		free(p->b[i].items);
		free(p->b[i].data);
		free(p->b[i].text.p);
	}
	free(p->b);
	free(p->w);
	for (i = 0; p->paths && i < p->nr_top; i++)
		free(p->paths[i]);
	for (i = 0; p->kinds && i < p->nr_top; i++)
		free(p->kinds[i]);
	free(p->kinds);
	free(p->type_off);
	free(p->paths);
	free(p->funcs_from);
	free(p->log);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}
