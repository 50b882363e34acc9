// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The text report: open every input (and its buffer instances), build per-CPU cursors in
 * trace-cmd's global CPU order, merge them by converted time, filter, and print each event
 * in trace-cmd report's line format.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include <hgtrace/clock.h>
#include <hgtrace/merge.h>
#include <hgtrace/peer.h>
#include <hgtrace/probefile.h>
#include <hgtrace/report.h>
#include <hgtrace/sync.h>
#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "../private/tracedat.h"
#include "report-local.h"

struct handle {
	struct hgt_input *in;
	bool owner;	 /* this handle closes @in */
	bool instance;	 /* a buffer instance of a top-level input */
	int buffer;	 /* buffer index in @in, -1 when it has none */
	const char *tag; /* file-name column; NULL prints blanks */
	struct hgt_clock clock;
	int nr_cpus;
	int gbase; /* global index of this handle's CPU 0 */
	bool in_usecs;
	bool use_trace_clock;
	struct hgt_cursor **cursors;
	struct tep_event_filter **pos, **neg;
	int npos, nneg;
	const struct hgt_report_input *rin;
	char *pre; /* its file-name column as printed (line_prefix()), made at first use */
	size_t pre_len;
	struct hgt__line_ctx lc; /* how its records print (line_ctx()), made before the first */
};

/* A simple-backend file among the inputs (hgtrace-probes(3)): its events join the merge. */
struct probe_src {
	struct hgt_probefile *f;
	struct hgt_probefile_event ev;
	const char *path, *tag;
	uint64_t ts; /* ev's time in the report's time base */
	int have;    /* ev holds the next event */
};

struct report {
	const struct hgt_report_opts *o;
	struct probe_src *ps;
	int nr_ps;
	FILE *out;
	struct handle *h;
	int nr_h;
	int nr_top;
	bool prefix; /* print the file-name column */
	int max_tag;
	int *tag_width; /* width of the file column on each input's "cpus=" line */
	unsigned long long last_ts;
	struct hgt__line line;
};

static void report_free(struct report *r)
{
	int i, c;

	for (i = 0; i < r->nr_h; i++) {
		struct handle *h = &r->h[i];

		for (c = 0; h->cursors && c < h->nr_cpus; c++)
			hgt_cursor_close(h->cursors[c]);
		free(h->cursors);
		for (c = 0; c < h->npos; c++)
			tep_filter_free(h->pos[c]);
		for (c = 0; c < h->nneg; c++)
			tep_filter_free(h->neg[c]);
		free(h->pos);
		free(h->neg);
		free(h->pre);
	}
	for (i = 0; i < r->nr_h; i++)
		if (r->h[i].owner)
			hgt_input_close(r->h[i].in);
	free(r->h);
	free(r->tag_width);
	for (i = 0; i < r->nr_ps; i++)
		hgt_probefile_close(r->ps[i].f);
	free(r->ps);
	hgt__line_fini(&r->line);
}

static struct handle *new_handle(struct report *r)
{
	struct handle *h = realloc(r->h, sizeof(*h) * (r->nr_h + 1));

	if (!h)
		return NULL;
	r->h = h;
	h = &r->h[r->nr_h++];
	memset(h, 0, sizeof(*h));
	h->buffer = -1;
	return h;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int report_error(const char *fmt, const char *a, const char *b)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, a, b);
	hgt__set_last_error(msg);
	return -EINVAL;
}

static int add_filter(struct handle *h, const struct hgt_report_filter *f)
{
	struct tep_handle *tep = hgt_input_tep(h->in);
	struct tep_event_filter *flt = tep_filter_alloc(tep);
	struct tep_event_filter ***list = f->negate ? &h->neg : &h->pos;
	int *n = f->negate ? &h->nneg : &h->npos;
	struct tep_event_filter **l;
	enum tep_errno err;

	if (!flt)
		return -ENOMEM;
	err = tep_filter_add_filter_str(flt, f->expr);
	if (err < 0) {
		char why[256];

		tep_filter_strerror(flt, err, why, sizeof(why));
		tep_filter_free(flt);
		return report_error("hgtrace: filter \"%s\": %s", f->expr, why);
	}
	l = realloc(*list, sizeof(*l) * (*n + 1));
	if (!l) {
		tep_filter_free(flt);
		return -ENOMEM;
	}
	l[(*n)++] = flt;
	*list = l;
	return 0;
}

static int setup_filters(struct report *r, struct handle *h)
{
	int i, ret;

	for (i = 0; i < r->o->nr_filters; i++) {
		ret = add_filter(h, &r->o->filters[i]);
		if (ret)
			return ret;
	}
	for (i = 0; h->rin && i < h->rin->nr_filters; i++) {
		ret = add_filter(h, &h->rin->filters[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* trace-cmd's test_filters(): keep when any positive filter matches (or there is none),
 * and the last negative filter does not match. */
static bool keep_record(const struct handle *h, struct tep_record *rec)
{
	int i;

	if (h->npos) {
		bool found = false;

		for (i = 0; i < h->npos && !found; i++) {
			int ret = tep_filter_match(h->pos[i], rec);

			found = ret == TEP_ERRNO__FILTER_MATCH || ret == TEP_ERRNO__NO_FILTER;
		}
		if (!found)
			return false;
	}
	if (h->nneg)
		return tep_filter_match(h->neg[h->nneg - 1], rec) != TEP_ERRNO__FILTER_MATCH;
	return true;
}

static int add_probe_src(struct report *r, const char *path)
{
	struct probe_src *p = realloc(r->ps, sizeof(*p) * (size_t)(r->nr_ps + 1));
	char err[512];

	if (!p)
		return -ENOMEM;
	r->ps = p;
	p = &r->ps[r->nr_ps];
	memset(p, 0, sizeof(*p));
	p->f = hgt_probefile_open(path, NULL, err, sizeof(err));
	if (!p->f)
		return report_error("hgtrace: %s%s", err, "");
	p->path = path;
	p->tag = basename_of(path);
	r->nr_ps++;
	return 0;
}

/**
 * hgt__probe_clock_check - a probe file @f (@path) joins in the time base of the first
 * trace.dat, recorded with trace clock @tc: its clock must be that one (raw TSC with
 * x86-tsc, CLOCK_MONOTONIC with mono). Returns 0, or -EINVAL with the reason as the last
 * error.
 */
int hgt__probe_clock_check(const char *tc, const struct hgt_probefile *f, const char *path)
{
	int c = hgt_probefile_clock(f);
	const char *want = c == HGT_PROBE_CLOCK_TSC ? "x86-tsc" : "mono";

	if (!tc || strcmp(tc, want))
		return report_error(
			"hgtrace: %s: its events are stamped with the %s, but the first trace.dat was not recorded with that clock: record with -C x86-tsc (HGTRACE_CLOCK=tsc) or -C mono (HGTRACE_CLOCK=mono)",
			path, c == HGT_PROBE_CLOCK_TSC ? "TSC" : "monotonic clock");
	return 0;
}

static int probes_check_clock(struct report *r)
{
	for (int i = 0; i < r->nr_ps && r->nr_top; i++) {
		int ret = hgt__probe_clock_check(hgt_input_trace_clock(r->h[0].in), r->ps[i].f,
						 r->ps[i].path);

		if (ret)
			return ret;
	}
	return 0;
}

/* Read a probe file's next event; its time converted as the first trace.dat's are. */
static int probe_advance(struct report *r, struct probe_src *p)
{
	int ret = hgt_probefile_next(p->f, &p->ev);

	p->have = ret > 0;
	if (ret < 0)
		return report_error("hgtrace: %s%s", hgt_probefile_error(p->f), "");
	if (p->have)
		p->ts = r->nr_top ? hgt_clock_convert(&r->h[0].clock, p->ev.ts, 0) : p->ev.ts;
	return 0;
}

/* Print every probe event older than @ts (trace.dat events win ties), in time order. */
static int probes_until(struct report *r, uint64_t ts)
{
	bool in_usecs =
		r->nr_top ? r->h[0].in_usecs
			  : r->nr_ps && hgt_probefile_clock(r->ps[0].f) != HGT_PROBE_CLOCK_TSC;

	for (;;) {
		struct probe_src *best = NULL;
		char line[9000], tbuf[40], args[8192], pre[512];
		size_t n = 0;
		int i, len, ret;

		for (i = 0; i < r->nr_ps; i++) {
			struct probe_src *p = &r->ps[i];

			if (!p->have && p->f) {
				ret = probe_advance(r, p);
				if (ret)
					return ret;
				if (!p->have) {
					hgt_probefile_close(p->f);
					p->f = NULL;
				}
			}
			if (p->have && p->ts < ts && (!best || p->ts < best->ts))
				best = p;
		}
		if (!best)
			return 0;
		if (r->prefix)
			n = (size_t)snprintf(pre, sizeof(pre), "%*s: ", r->max_tag, best->tag);
		hgt__format_time_col(tbuf, best->ts, in_usecs, r->o->nsec);
		hgt_probefile_format(&best->ev, args, sizeof(args));
		/* laid out as hgt__line_print lays out trace.dat events; no CPU to show */
		len = snprintf(line, sizeof(line), "%.*s%16s-%-5u [---]%s%s%s: %s: %*s%s\n", (int)n,
			       pre, best->ev.comm ? best->ev.comm : "<...>", best->ev.tid,
			       r->o->no_latency ? "" : " .....", in_usecs ? " " : "", tbuf,
			       best->ev.name,
			       strlen(best->ev.name) < 20 ? (int)(20 - strlen(best->ev.name)) : 0,
			       "", args);
		if (len > 0)
			hgt__line_put(&r->line, r->out, line,
				      (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
		best->have = 0;
	}
}

static int open_inputs(struct report *r)
{
	const struct hgt_report_opts *o = r->o;
	int i, b, ret, nr_inst = 0;

	r->tag_width = calloc(o->nr_inputs, sizeof(*r->tag_width));
	if (!r->tag_width)
		return -ENOMEM;

	for (i = 0; i < o->nr_inputs; i++) {
		HGT_OPTS(hgt_open_opts, oo,
			 .flags = (o->no_plugins ? HGT_OPEN_NO_PLUGINS : 0) |
				  (o->quiet ? HGT_OPEN_QUIET : 0));
		const struct hgt_report_input *ri = &o->inputs[i];
		struct handle *h;

		if (hgt_probefile_is(ri->path)) {
			ret = add_probe_src(r, ri->path);
			if (ret)
				return ret;
			continue;
		}
		HGT_OPTS(hgt_clock_opts, co, .raw_ts = o->raw_ts, .no_date = o->nodate,
			 .has_ts_offset = ri->has_ts_offset, .ts_offset = ri->ts_offset,
			 .ts2secs = ri->ts2secs ? ri->ts2secs : o->ts2secs);
		h = new_handle(r);
		if (!h)
			return -ENOMEM;
		h->in = hgt_input_open(ri->path, &oo);
		if (!h->in) {
			r->nr_h--;
			return -errno;
		}
		h->owner = true;
		h->rin = ri;
		h->tag = o->nr_inputs > 1 ? basename_of(ri->path) : NULL;
		h->buffer = hgt_input_top_buffer(h->in);
		h->nr_cpus = hgt_input_nr_cpus(h->in);
		hgt_clock_init(&h->clock, h->in, &co);
		h->in_usecs = hgt_input_in_usecs(h->in) && !o->raw_ts;
		h->use_trace_clock = !(ri->ts2secs || o->ts2secs);
		if (o->nsec)
			tep_set_flag(hgt_input_tep(h->in), TEP_NSEC_OUTPUT);
		if (hgt_input_is_latency(h->in) && o->nr_inputs > 1)
			return report_error(
				"hgtrace: %s: latency traces do not work with multiple inputs%s",
				ri->path, "");
	}
	r->nr_top = r->nr_h;
	for (i = 0; i < r->nr_top; i++) {
		int len = r->h[i].tag ? (int)strlen(r->h[i].tag) : 0;

		if (len > r->max_tag)
			r->max_tag = len;
	}
	for (i = 0; i < r->nr_ps; i++)
		if ((int)strlen(r->ps[i].tag) > r->max_tag)
			r->max_tag = (int)strlen(r->ps[i].tag);
	ret = probes_check_clock(r);
	if (ret)
		return ret;
	/* Buffer instances follow all top-level inputs, in input order. trace-cmd widens the
	 * file column as it adds them, after printing each input's "cpus=" line. */
	for (i = 0; i < r->nr_top; i++) {
		int n = hgt_input_nr_buffers(r->h[i].in);

		r->tag_width[i] = r->max_tag;

		nr_inst = 0;
		for (b = 0; b < n; b++) {
			const struct hgt_buffer *buf = hgt_input_buffer(r->h[i].in, b);
			struct handle *h;

			if (!*buf->name)
				continue;
			h = new_handle(r);
			if (!h)
				return -ENOMEM;
			*h = r->h[i];
			h->owner = false;
			h->instance = true;
			h->clock.tsync = NULL; /* instances stay in their own (guest) time */
			h->buffer = b;
			h->tag = buf->name;
			h->nr_cpus = buf->nr_cpus;
			h->pos = h->neg = NULL;
			h->npos = h->nneg = 0;
			nr_inst++;
			if ((int)strlen(h->tag) > r->max_tag)
				r->max_tag = (int)strlen(h->tag);
		}
	}
	/* trace-cmd prints the file column for several inputs, or when the last input read
	 * has buffer instances (its top handle then has a blank tag). */
	r->prefix = o->nr_inputs > 1 || nr_inst > 0;
	if (!r->nr_top)
		r->prefix = false;
	for (i = 0; i < r->nr_h; i++) {
		r->h[i].gbase = i ? r->h[i - 1].gbase + r->h[i - 1].nr_cpus : 0;
		ret = setup_filters(r, &r->h[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static bool cpu_selected(const struct report *r, int gidx)
{
	int i;

	if (!r->o->nr_cpus)
		return true;
	for (i = 0; i < r->o->nr_cpus; i++)
		if (r->o->cpus[i] == gidx)
			return true;
	return false;
}

/* vCPU threads of the hosts among the inputs -> the tep of the guest they run. */
static int kvm_funcs_build(struct report *r, struct hgt__kvm_funcs *f, struct hgt__kvm_map *km)
{
	struct hgt_input **in = calloc((size_t)r->nr_top + 1, sizeof(*in));
	int ret;

	if (!in)
		return -ENOMEM;
	for (int i = 0; i < r->nr_top; i++)
		in[i] = r->h[i].in;
	ret = hgt__kvm_funcs_build(in, r->nr_top, f, km);
	free(in);
	return ret;
}

/* The sync check runs on whole inputs only: not with --cpu or --raw-ts. */
static struct hgt_sync_check *sync_check_new(struct report *r)
{
	struct hgt_input **ins;
	struct hgt_sync_check *sc;
	bool *tso;
	int i;

	if (r->o->no_sync_check || r->o->nr_cpus || r->o->raw_ts || r->nr_top < 2)
		return NULL;
	ins = calloc((size_t)r->nr_top, sizeof(*ins));
	tso = calloc((size_t)r->nr_top, sizeof(*tso));
	if (!ins || !tso) {
		free(ins);
		free(tso);
		return NULL;
	}
	for (i = 0; i < r->nr_top; i++) {
		ins[i] = r->h[i].in;
		tso[i] = r->h[i].rin && r->h[i].rin->has_ts_offset;
	}
	sc = hgt_sync_check_new(ins, r->nr_top, tso);
	free(ins);
	free(tso);
	return sc;
}

/* How records of handle @h print (the tep and the boundary flag are per record). */
static struct hgt__line_ctx line_ctx(const struct report *r, const struct handle *h)
{
	return (struct hgt__line_ctx){
		.tep = hgt_input_tep(h->in),
		.in_usecs = h->in_usecs,
		.use_trace_clock = h->use_trace_clock,
		.nsec = r->o->nsec,
		.raw = r->o->raw,
		.ts_diff = r->o->ts_diff,
		.latency = !r->o->no_latency,
	};
}

/* The file-name column of handle @h into @buf (512 bytes); returns its length. */
static size_t line_prefix(const struct report *r, const struct handle *h, char *buf)
{
	int n = h->tag ? snprintf(buf, 512, "%*s: ", r->max_tag, h->tag)
		       : snprintf(buf, 512, "%*s  ", r->max_tag, "");

	return n < 512 ? (size_t)n : 511;
}

struct par_state {
	struct hgt__par *par;
	struct hgt__par_handle *hs;
	char (*prefix)[512];
	FILE *out;
	int *werr; /* the line's: the first write that failed */
};

/* A formatting context of the parallel report: one worker's line buffer over its inputs. */
struct par_ctx {
	struct hgt__line line;
	struct hgt_input *const *in;
	/* the caller's handles, copied: its par_state lies on the main thread's stack beside
	 * what it writes at every record, and reading it there at every record bounced that
	 * cache line between the cores (a fifth of the report's CPU time) */
	const struct hgt__par_handle *hs;
};

static void *par_ctx_new(void *arg, struct hgt_input *const *in)
{
	struct par_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (hgt__line_init(&c->line)) {
		free(c);
		return NULL;
	}
	c->in = in;
	c->hs = ((const struct par_state *)arg)->hs;
	return c;
}

static void par_ctx_free(void *ctx)
{
	struct par_ctx *c = ctx;

	hgt__line_fini(&c->line);
	free(c);
}

/*
 * Format a batch straight into the context's growing line buffer, then hand that buffer
 * to the batch and take the batch's old one (no stream, no copy).
 */
static int par_format(void *ctx, const struct hgt__par_item *it, int n, uint8_t *data,
		      struct hgt__blob *out)
{
	struct par_ctx *pc = ctx;
	struct hgt__line *l = &pc->line;

	l->grow = true;
	l->olen = 0;
	for (int i = 0; i < n; i++) {
		const struct hgt__par_handle *h = &pc->hs[it[i].h];
		struct hgt__line_ctx c = h->ctx;
		struct tep_record rec = { 0 };
		unsigned long long last = it[i].prev_ts;

		c.tep = hgt_input_tep(pc->in[h->top]);
		c.boundary = it[i].boundary;
		rec.ts = it[i].ts;
		rec.cpu = it[i].cpu;
		rec.data = data + it[i].off;
		rec.size = it[i].size;
		rec.missed_events = it[i].missed;
		if (h->prefix_len)
			hgt__line_put(l, NULL, h->prefix, h->prefix_len);
		hgt__line_print(l, &c, &rec, &last, NULL);
	}
	if (l->oom)
		return -ENOMEM;
	{
		uint8_t *text = out->p;
		size_t cap = out->cap;

		out->p = (uint8_t *)l->obuf;
		out->cap = l->ocap;
		out->len = l->olen;
		l->obuf = (char *)text;
		l->ocap = cap;
		l->olen = 0;
		if (!l->obuf) { /* the batch had none yet */
			l->ocap = HGT__OBUF;
			l->obuf = malloc(l->ocap);
			if (!l->obuf)
				return -ENOMEM;
		}
	}
	return 0;
}

static int par_write(void *arg, struct hgt__blob *text)
{
	const struct par_state *ps = arg;
	int err = 0;

	errno = 0;
	if (fwrite(text->p, 1, text->len, ps->out) != text->len)
		err = errno ? -errno : -EIO;
	if (err && !*ps->werr)
		*ps->werr = err;
	return err;
}

static int top_of(const struct report *r, const struct handle *h)
{
	int i;

	for (i = 0; i < r->nr_top; i++)
		if (r->h[i].in == h->in)
			return i;
	return 0;
}

static int par_threads(const struct report *r)
{
	struct hgt_input **in;
	int n;

	if (r->nr_ps) /* probe lines are printed here, in order with the rest */
		return 0;
	in = calloc((size_t)r->nr_top + 1, sizeof(*in));
	if (!in)
		return 0;
	for (int i = 0; i < r->nr_top; i++)
		in[i] = r->h[i].in;
	n = hgt__par_workers(in, r->nr_top);
	free(in);
	return n;
}

static void par_state_free(struct report *r, struct par_state *ps)
{
	hgt__par_free(ps->par);
	ps->par = NULL;
	free(ps->hs);
	free(ps->prefix);
	ps->hs = NULL;
	ps->prefix = NULL;
}

static void par_state_init(struct report *r, struct par_state *ps, const struct hgt__kvm_map *km)
{
	const struct hgt__par_ops ops = { .ctx_new = par_ctx_new,
					  .ctx_free = par_ctx_free,
					  .format = par_format,
					  .write = par_write,
					  .arg = ps };
	int n = par_threads(r), i;
	struct hgt_input **ins = NULL;
	char(*fdpaths)[32] = NULL;
	const char **paths;

	if (!n)
		return;
	ps->hs = calloc((size_t)r->nr_h, sizeof(*ps->hs));
	ps->prefix = calloc((size_t)r->nr_h, sizeof(*ps->prefix));
	paths = calloc((size_t)r->nr_top, sizeof(*paths));
	fdpaths = calloc((size_t)r->nr_top, sizeof(*fdpaths));
	ins = calloc((size_t)r->nr_top, sizeof(*ins));
	if (!ps->hs || !ps->prefix || !paths || !fdpaths || !ins)
		goto fail;
	for (i = 0; i < r->nr_top; i++) {
		paths[i] = hgt__par_path(r->h[i].in, fdpaths[i]);
		ins[i] = r->h[i].in;
	}
	for (i = 0; i < r->nr_h; i++) {
		struct handle *h = &r->h[i];
		struct hgt__par_handle *ph = &ps->hs[i];

		ph->top = top_of(r, h);
		ph->ctx = line_ctx(r, h);
		ph->ctx.tep = NULL; /* each worker's own */
		if (r->prefix) {
			ph->prefix = ps->prefix[i];
			ph->prefix_len = line_prefix(r, h, ps->prefix[i]);
		}
	}
	ps->out = r->out;
	ps->werr = &r->line.werr;
	ps->par = hgt__par_new(n, paths, ins, r->nr_top,
			       (r->o->no_plugins ? HGT_OPEN_NO_PLUGINS : 0) | HGT_OPEN_QUIET,
			       r->o->nsec, km, &ops);
	free(paths);
	free(fdpaths);
	free(ins);
	if (ps->par)
		return;
	paths = NULL;
	fdpaths = NULL;
	ins = NULL;
fail:
	free(paths);
	free(fdpaths);
	free(ins);
	par_state_free(r, ps);
}

/* Queue a kept record for the workers. Returns 1 when the record must be printed here
 * instead (the parallel path was just closed), 0 when queued, or -errno. */
static int par_queue(struct report *r, struct par_state *ps, struct handle *h,
		     struct tep_record *rec, bool boundary)
{
	int top = ps->hs[h - r->h].top;
	unsigned long long prev = r->last_ts;
	int ret = 0;

	/* -R prints fields, no plugin runs: none registers a comm or keeps state (a comm only
	 * a sched_switch names stays "<...>", as trace-cmd report -R prints it) */
	if (!r->o->raw)
		ret = hgt__par_comms(ps->par, top, hgt_input_tep(h->in), rec);

	if (ret == 1) {
		ret = hgt__par_finish(ps->par);
		par_state_free(r, ps);
		return ret ? ret : 1;
	}
	if (ret)
		return ret;
	if (r->o->ts_diff)
		r->last_ts = hgt__line_diff_base(&ps->hs[h - r->h].ctx, rec->ts);
	return hgt__par_add(ps->par, (int)(h - r->h), rec, boundary, prev, NULL, 0);
}

static int print_events(struct report *r)
{
	struct hgt_merge *m = hgt_merge_new();
	struct hgt_sync_check *sc = sync_check_new(r);
	struct hgt__kvm_funcs kf = { 0 };
	struct hgt__kvm_map km = { 0 };
	struct par_state ps = { 0 };
	struct tep_record *rec;
	void *user;
	int i, c, ret;

	if (!m)
		return -ENOMEM;
	ret = kvm_funcs_build(r, &kf, &km);
	if (ret)
		goto out;
	hgt__kvm_funcs_set(kf.n ? &kf : NULL);
	par_state_init(r, &ps, &km);
	for (i = 0; i < r->nr_h; i++) {
		struct handle *h = &r->h[i];
		const struct hgt_buffer *b = hgt_input_buffer(h->in, h->buffer);

		if (!b)
			continue;
		h->lc = line_ctx(r, h);
		h->cursors = calloc(h->nr_cpus ? h->nr_cpus : 1, sizeof(*h->cursors));
		if (!h->cursors) {
			ret = -ENOMEM;
			goto out;
		}
		for (c = 0; c < h->nr_cpus && c < b->nr_cpus; c++) {
			if (!b->cpus[c].present || !cpu_selected(r, h->gbase + c))
				continue;
			h->cursors[c] = hgt_cursor_open(h->in, h->buffer, c);
			if (!h->cursors[c]) {
				ret = -errno;
				goto out;
			}
			ret = hgt_merge_add(m, h->cursors[c], &h->clock, h);
			if (ret < 0)
				goto out;
		}
	}
	while ((ret = hgt_merge_next(m, &rec, &user, NULL)) > 0) {
		struct handle *h = user;
		struct hgt__line_ctx lc = h->lc;

		lc.boundary = r->o->boundary && hgt_cursor_at_page_start(h->cursors[rec->cpu]);
		if (r->nr_ps && keep_record(h, rec)) {
			ret = probes_until(r, rec->ts);
			if (ret < 0)
				break;
		}

		if (sc && !h->instance)
			hgt_sync_check_record(sc, (int)(h - r->h), rec);
		if (!keep_record(h, rec))
			continue;
		if (ps.par) {
			ret = par_queue(r, &ps, h, rec, lc.boundary);
			if (ret < 0)
				break;
			if (ret == 0)
				continue;
			ret = 0; /* the parallel path closed: print here from now on */
		}
		if (r->prefix) {
			if (!h->pre && (h->pre = malloc(512)))
				h->pre_len = line_prefix(r, h, h->pre);
			if (!h->pre) {
				ret = -ENOMEM;
				break;
			}
			hgt__line_put(&r->line, r->out, h->pre, h->pre_len);
		}
		hgt__line_print(&r->line, &lc, rec, &r->last_ts, r->out);
		if (r->line.werr) {
			ret = r->line.werr;
			break;
		}
	}
	if (ps.par) {
		int pret = hgt__par_finish(ps.par);

		if (pret && ret >= 0)
			ret = pret;
	}
	if (ret >= 0 && r->nr_ps)
		ret = probes_until(r, UINT64_MAX);
	hgt__line_flush(&r->line, r->out);
	if (sc && ret == 0 && !r->o->quiet) {
		fflush(r->out);
		hgt_sync_check_print(sc, stderr);
	}
	if (ret < 0) {
		/* The cursor recorded where and why; keep what was printed. */
		for (i = 0; i < r->nr_h; i++)
			if (*hgt_input_error(r->h[i].in))
				hgt__set_last_error(hgt_input_error(r->h[i].in));
	}
out:
	par_state_free(r, &ps);
	hgt__kvm_funcs_set(NULL);
	free(kf.pid);
	free(kf.tep);
	free(kf.ksyms);
	free(km.top);
	hgt_sync_check_free(sc);
	hgt_merge_free(m);
	return ret < 0 ? ret : 0;
}

/* Per-CPU first or last event time, as `trace-cmd report --first-event/--last-event`. */
static int print_first_last(struct report *r, bool last)
{
	int i, c, ret = 0;

	for (i = 0; i < r->nr_top; i++) {
		struct handle *h = &r->h[i];
		const struct hgt_buffer *b = hgt_input_buffer(h->in, h->buffer);

		fprintf(r->out, "List of CPUs in %s with data:\n",
			basename_of(hgt_input_path(h->in)));
		for (c = 0; b && c < b->nr_cpus; c++) {
			struct hgt_cursor *cur;
			struct tep_record rec;
			uint64_t ts = 0;
			bool any = false;
			char tbuf[40];

			if (!b->cpus[c].present ||
			    (r->o->mode == HGT_REPORT_CPUS && !b->cpus[c].size))
				continue;
			if (r->o->mode == HGT_REPORT_CPUS) {
				fprintf(r->out, "  %d\n", c);
				continue;
			}
			cur = hgt_cursor_open(h->in, h->buffer, c);
			if (!cur)
				return -errno;
			while ((ret = hgt_cursor_next(cur, &rec)) > 0) {
				ts = rec.ts;
				any = true;
				if (!last)
					break;
			}
			hgt_cursor_close(cur);
			if (ret < 0) {
				hgt__set_last_error(hgt_input_error(h->in));
				return ret;
			}
			if (!any)
				continue;
			ts = hgt_clock_convert(&h->clock, ts, c);
			hgt__format_time_col(tbuf, ts, h->in_usecs, r->o->nsec);
			fprintf(r->out, "  %d\t%s event:%s\n", c, last ? "Last" : "First", tbuf);
		}
	}
	return 0;
}

static void print_stat(struct report *r, struct handle *h)
{
	const struct hgt_buffer *b = hgt_input_buffer(h->in, h->buffer);
	const char *stat = hgt_input_cpustat(h->in);
	uint64_t virt = hgt_input_page_size(h->in);
	int c;

	fprintf(r->out,
		"\nKernel buffer statistics:\n"
		"  Note: \"entries\" are the entries left in the kernel ring buffer and are not\n"
		"        recorded in the trace data. They should all be zero.\n\n");
	if (*stat)
		fprintf(r->out, "%s\n", stat);
	else
		fprintf(r->out, " No stats in this file\n");
	for (c = 0; b && c < b->nr_cpus; c++) {
		uint64_t off = b->cpus[c].offset, size = b->cpus[c].size;

		if (!b->cpus[c].present)
			continue;
		if (b->compressed) {
			/* trace-cmd reports decompressed data laid out after one page */
			size = hgt_input_cpu_uncompressed_size(h->in, h->buffer, c);
			off = virt;
			virt += size;
		}
		fprintf(r->out, "CPU%d data recorded at offset=0x%llx\n", c,
			(unsigned long long)off);
		fprintf(r->out, "    %llu bytes in size\n", (unsigned long long)size);
	}
}

/**
 * hgt_report - print the report described by @opts.
 */
int hgt_report(const struct hgt_report_opts *opts)
{
	struct report r = { 0 };
	int i, ret;

	if (!opts || opts->sz < offsetof(struct hgt_report_opts, out) || !opts->nr_inputs)
		return -EINVAL;
	r.o = opts;
	r.out = opts->out ? opts->out : stdout;
	ret = hgt__line_init(&r.line);
	if (ret)
		return ret;
	ret = open_inputs(&r);
	if (ret)
		goto out;
	if (opts->mode == HGT_REPORT_FIRST_EVENT || opts->mode == HGT_REPORT_LAST_EVENT ||
	    opts->mode == HGT_REPORT_CPUS) {
		ret = print_first_last(&r, opts->mode == HGT_REPORT_LAST_EVENT);
		goto out;
	}
	for (i = 0; i < r.nr_top; i++) {
		struct handle *h = &r.h[i];

		if (opts->nr_inputs > 1)
			fprintf(r.out, "%*s: ", r.tag_width[i], h->tag);
		fprintf(r.out, "cpus=%d\n", h->nr_cpus);
		if (hgt_input_is_latency(h->in)) {
			ret = hgt_input_write_latency(h->in, r.out);
			if (ret)
				hgt__set_last_error(hgt_input_error(h->in));
			else
				fputc('\n', r.out); /* trace-cmd ends the text with one */
			goto out;
		}
		switch (opts->mode) {
		case HGT_REPORT_STAT:
			print_stat(&r, h);
			break;
		case HGT_REPORT_UNAME:
			fprintf(r.out, "%s\n",
				hgt_input_uname(h->in) ? hgt_input_uname(h->in)
						       : "uname was not recorded in the file");
			/* trace-cmd prints the version after the uname */
			__attribute__((fallthrough));
		case HGT_REPORT_VERSION:
			fprintf(r.out, "%s\n",
				hgt_input_version_string(h->in)
					? hgt_input_version_string(h->in)
					: "version was not recorded in the file");
			break;
		default:
			break;
		}
	}
	if (opts->mode == HGT_REPORT_EVENTS)
		ret = print_events(&r);
out:
	errno = 0;
	if ((fflush(r.out) || ferror(r.out)) && !r.line.werr)
		r.line.werr = -(errno ? errno : EIO);
	if (r.line.werr && (ret >= 0 || ret == r.line.werr))
		ret = hgt__errorf(-r.line.werr, "report: write failed: %s", strerror(-r.line.werr));
	report_free(&r);
	return ret;
}
