// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A session as one self-contained HTML timeline. The C side does the heavy part once:
 * tracks (per file and CPU: events as markers, the running task; per vCPU: what the host
 * did with its thread, from why's pass; per probe file and thread: its events), each a
 * time-sorted list of items cut in chunks of varint-coded columns (encode_chunk()),
 * zlib-compressed and base64-coded; per track and zoom level a summary (sparse buckets: how many
 * events, or how much of the bucket an interval covers and by what); per events track, its events'
 * report lines in compressed chunks of their own (a trace.dat CPU's without what the page
 * knows: the file, CPU, time and event name). The page (view.js, embedded at build time,
 * no library) draws summaries when zoomed out and inflates the chunks it needs (its own
 * inflate) when zoomed in.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include <libdeflate.h>

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include <hgtrace/clock.h>
#include <hgtrace/merge.h>
#include <hgtrace/output.h>
#include <hgtrace/probefile.h>
#include <hgtrace/sync.h>
#include <hgtrace/tracedat.h>
#include <hgtrace/view.h>
#include <hgtrace/why.h>

#include "../merge/merge-local.h"
#include "../common/common-local.h"
#include "../common/thread.h"
#include "../private/tracedat.h"
#include "../private/report.h"
#include "../private/why.h"

#define CHUNK_ITEMS 16384
#define TEXT_CHUNK 4096
/* libdeflate's levels: report lines compress well and pay for 6 (the bench session's page:
 * 25.6, 24.0 and 23.3 MB at 5, 6 and 7, for 1.8, 2.1 and 2.5 s of CPU); items are mostly
 * times, which do not (2, 3, 4: within 0.3 %) */
#define TEXT_LEVEL 6
#define ITEM_LEVEL 3
#define MAX_BUCKETS 65536 /* a summary level is kept up to this many buckets */

extern const char hgt__view_js[];
extern const char hgt__view_css[];

enum { K_EVENTS, K_TASKS, K_VCPU };

struct item {
	uint64_t t, d;
	uint32_t label, ev;
};

/* A compressed string of a track: chunk @k of the pool; a chunk of items (@n, from @a to
 * @b) or a summary level (@n 0, bucket width @b). */
struct piece {
	size_t k, n;
	uint64_t a, b;
};

struct track {
	char name[96];
	char group[160];
	int kind;
	int order; /* host CPUs, then vCPUs, then the other files, then probe files */
	long tid;  /* a probe file's thread */
	/* a trace.dat CPU's events: its CPU, and its lines kept short ("\1COMM-PID\0INFO"):
	 * the page puts back the file (the group), the CPU, the time and the event name (the
	 * label) as the report prints them; -1: whole lines */
	int cpu;
	struct item *it;
	size_t n, cap;
	/* an events track's report lines: TEXT_CHUNK per chunk compressed in the pool (their
	 * numbers there in @tk), the rest here */
	struct hgt__blob txt;
	uint32_t nlines;
	size_t *tk, ntk, cap_tk;
	/* its chunks of items, then its summary levels, as compressed in the pool */
	struct piece *pc;
	size_t npc, cap_pc;
};

struct strtab {
	char **s;
	uint32_t *flags;
	size_t n, cap;
	uint32_t *slot; /* hash -> index + 1 */
	size_t nslot;
};

struct why_async;

struct viewer {
	struct hgt_view_opts o;
	struct track *tr;
	int nr_tr;
	struct strtab lab;
	uint64_t t0, t1;  /* the session's first and last time */
	uint32_t nev;	  /* events */
	struct zpool *zp; /* compresses the tracks' full chunks of lines meanwhile */
	struct trace_seq seq;
	struct hgt__info_memo *memo; /* info texts of payloads seen before (NULL: none) */
	struct hgt__comm_cache comms;
	struct {
		const struct tep_event *ev;
		uint32_t lab;
	} ev_lab[256]; /* an event's label, by its format */
	/* per top input: tracks per CPU */
	int **ev_track, **task_track, *nr_cpus;
	int nr_src;		    /* buffers merged: the files' top ones, then instances */
	int *vcpu_pid, nr_vcpu_pid; /* host threads of vCPUs */
	int host;		    /* the host input (-1) */
	struct hgt_why_result *why;
	struct why_async *wa; /* why's pass beside the session's, or NULL */
	char *sync_text;
	size_t sync_len;
	char **loss;
	int nr_loss;
	const char **paths; /* trace.dat inputs */
	int nr_paths;
	const char **probes;
	int nr_probes;
	int seg_input, seg_cpu, seg_track, err;
	struct hgt_clock probe_clock; /* the first trace.dat's: probe files join in it */
	bool ns;		      /* times are ns (else raw counter ticks) */
	uint64_t tsc_hz;	      /* TSC cycles were made ns at this rate (0: were ns) */
	const char *tsc_how;	      /* where it came from, or why there is none */
	char why_note[512];	      /* why the delays were not analysed ("": they were) */
	char flight[512];	      /* a flight recorder's window: its trigger ("": none) */
	uint64_t flight_from, flight_to;
	char first_clock[32]; /* the first trace.dat's trace clock */
};

/* ---- strings ---- */

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static int label(struct viewer *v, const char *s, uint32_t flags, uint32_t *out)
{
	struct strtab *t = &v->lab;
	size_t i;

	if ((t->n + 1) * 2 > t->nslot) {
		size_t ns = t->nslot ? t->nslot * 2 : 1024;
		uint32_t *sl = calloc(ns, sizeof(*sl));

		if (!sl)
			return -ENOMEM;
		for (size_t k = 0; k < t->n; k++) {
			for (i = hash(t->s[k]) & (ns - 1); sl[i]; i = (i + 1) & (ns - 1))
				;
			sl[i] = (uint32_t)k + 1;
		}
		free(t->slot);
		t->slot = sl;
		t->nslot = ns;
	}
	for (i = hash(s) & (t->nslot - 1); t->slot[i]; i = (i + 1) & (t->nslot - 1))
		if (!strcmp(t->s[t->slot[i] - 1], s)) {
			*out = t->slot[i] - 1;
			t->flags[*out] |= flags;
			return 0;
		}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		char **ns = realloc(t->s, sizeof(*ns) * cap);
		uint32_t *nf;

		if (!ns)
			return -ENOMEM;
		t->s = ns;
		nf = realloc(t->flags, sizeof(*nf) * cap);
		if (!nf)
			return -ENOMEM;
		t->flags = nf;
		t->cap = cap;
	}
	t->s[t->n] = strdup(s);
	if (!t->s[t->n])
		return -ENOMEM;
	t->flags[t->n] = flags;
	t->slot[i] = (uint32_t)t->n + 1;
	*out = (uint32_t)t->n++;
	return 0;
}

/* ---- tracks ---- */

static int new_track(struct viewer *v, int kind, const char *group, const char *fmt, int a, int b)
{
	struct track *n = realloc(v->tr, sizeof(*n) * (size_t)(v->nr_tr + 1));

	if (!n)
		return -ENOMEM;
	v->tr = n;
	n = &v->tr[v->nr_tr];
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	n->tid = -1;
	n->cpu = -1;
	snprintf(n->group, sizeof(n->group), "%s", group);
	snprintf(n->name, sizeof(n->name), fmt, a, b);
	return v->nr_tr++;
}

static int add(struct viewer *v, int tr, uint64_t t, uint64_t d, uint32_t lab, uint32_t ev)
{
	struct track *k = &v->tr[tr];

	if (hgt__grow(&k->it, &k->cap, k->n + 1, sizeof(*k->it), 1024))
		return -ENOMEM;
	k->it[k->n++] = (struct item){ .t = t, .d = d, .label = lab, .ev = ev };
	if (t < v->t0)
		v->t0 = t;
	if (t + d > v->t1)
		v->t1 = t + d;
	return 0;
}

/* libdeflate's compressors, made as the levels are asked for: one set per thread */
struct deflaters {
	struct libdeflate_compressor *c[13];
};

static struct libdeflate_compressor *compressor(struct deflaters *d, int level)
{
	if (level < 1 || level > 12)
		return NULL;
	if (!d->c[level])
		d->c[level] = libdeflate_alloc_compressor(level);
	return d->c[level];
}

static void deflaters_free(struct deflaters *d)
{
	for (int i = 0; i < 13; i++)
		libdeflate_free_compressor(d->c[i]);
	memset(d, 0, sizeof(*d));
}

/* @n bytes in zlib's format (RFC 1950, what the page's DecompressionStream("deflate")
 * reads) at @level, then base64, as a JSON string on @f. libdeflate makes the same format
 * as zlib's compress2() in half its time, or less. */
static int blob(FILE *f, const void *p, size_t n, int level, struct deflaters *d)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct libdeflate_compressor *c = compressor(d, level);
	size_t zn = c ? libdeflate_zlib_compress_bound(c, n) : 0;
	uint8_t *z = c ? malloc(zn) : NULL;
	char *enc;
	size_t o = 0;

	if (!z)
		return -ENOMEM;
	zn = libdeflate_zlib_compress(c, p, n, z, zn);
	if (!zn) {
		free(z);
		return -EIO;
	}
	enc = malloc((zn + 2) / 3 * 4 + 3);
	if (!enc) {
		free(z);
		return -ENOMEM;
	}
	enc[o++] = '"';
	for (size_t i = 0; i < zn; i += 3) {
		uint32_t v = (uint32_t)z[i] << 16 | (i + 1 < zn ? (uint32_t)z[i + 1] << 8 : 0) |
			     (i + 2 < zn ? z[i + 2] : 0);

		enc[o++] = b64[v >> 18];
		enc[o++] = b64[(v >> 12) & 63];
		enc[o++] = i + 1 < zn ? b64[(v >> 6) & 63] : '=';
		enc[o++] = i + 2 < zn ? b64[v & 63] : '=';
	}
	fwrite(enc, 1, o, f);
	free(enc);
	fputc('"', f);
	free(z);
	return 0;
}

/* ---- the session's records ---- */

/*
 * The report lines are most of a page and zlib most of its making: full chunks of lines go
 * to worker threads (one per CPU but this one, at least one) while the session is read.
 * Chunk k's base64 JSON string lands in out[k]; at most ZQUEUE chunks wait. The threads
 * start at the first full chunk, when every input is open: opening one may fork the format
 * guard's helper, which must not happen while other threads run (hgt__formats_parse()).
 */
#define ZQUEUE 64

struct zpool {
	pthread_mutex_t mu;
	pthread_cond_t more, room;
	pthread_t *th;
	int nth, want; /* threads running, to start at the first chunk */
	bool started;
	struct hgt__blob *raw; /* per chunk: its lines until a worker takes them */
	char **out;
	int *level;	     /* per chunk: zlib's */
	size_t n, cap, next; /* chunks queued, room, next to take */
	size_t busy;	     /* taken, not done */
	bool all;	     /* every chunk queued at once (the last ones: the page's end) */
	bool done;
	int err;
	struct deflaters own; /* the caller's, when no worker runs */
};

static void *zworker(void *arg)
{
	struct zpool *z = arg;
	struct deflaters d = { 0 };

	pthread_mutex_lock(&z->mu);
	for (;;) {
		struct hgt__blob raw;
		size_t k, len;
		char *out = NULL;
		FILE *m;
		int ret;

		while (z->next == z->n && !z->done)
			pthread_cond_wait(&z->more, &z->mu);
		if (z->next == z->n)
			break;
		k = z->next++;
		raw = z->raw[k];
		z->raw[k] = (struct hgt__blob){ 0 };
		z->busy++;
		pthread_mutex_unlock(&z->mu);
		m = open_memstream(&out, &len);
		ret = m ? blob(m, raw.p, raw.len, z->level[k], &d) : -ENOMEM;
		if (m && fclose(m) && !ret)
			ret = -ENOMEM;
		free(raw.p);
		pthread_mutex_lock(&z->mu);
		z->out[k] = out;
		if (ret && !z->err)
			z->err = ret;
		z->busy--;
		pthread_cond_broadcast(&z->room);
	}
	pthread_mutex_unlock(&z->mu);
	deflaters_free(&d);
	return NULL;
}

static struct zpool *zpool_new(void)
{
	struct zpool *z = calloc(1, sizeof(*z));
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (!z)
		return NULL;
	z->want = cpus > 1 ? (int)(cpus > 5 ? 4 : cpus - 1) : 1;
	z->th = calloc((size_t)z->want, sizeof(*z->th));
	if (!z->th) {
		free(z);
		return NULL;
	}
	pthread_mutex_init(&z->mu, NULL);
	pthread_cond_init(&z->more, NULL);
	pthread_cond_init(&z->room, NULL);
	return z;
}

/* The workers, at the first chunk (none started: the chunks are compressed by the caller). */
static void zpool_start(struct zpool *z)
{
	z->started = true;
	while (z->nth < z->want && !hgt__thread_create(&z->th[z->nth], zworker, z))
		z->nth++;
}

/* Queue @b's bytes as the next chunk (@b is emptied), to compress at @level, its number in
 * *@k; waits while ZQUEUE chunks wait. */
static int zpool_push(struct zpool *z, struct hgt__blob *b, int level, size_t *k)
{
	int ret = 0;

	if (!z->started)
		zpool_start(z);
	pthread_mutex_lock(&z->mu);
	while (z->n - z->next >= ZQUEUE && !z->all && !z->err)
		pthread_cond_wait(&z->room, &z->mu);
	if (z->n == z->cap) {
		size_t cap = z->cap ? z->cap * 2 : 256;
		struct hgt__blob *nr = realloc(z->raw, sizeof(*nr) * cap);
		char **no = nr ? realloc(z->out, sizeof(*no) * cap) : NULL;
		int *nl = no ? realloc(z->level, sizeof(*nl) * cap) : NULL;

		if (nr)
			z->raw = nr;
		if (no)
			z->out = no;
		if (nl)
			z->level = nl;
		if (!nr || !no || !nl)
			ret = -ENOMEM;
		else
			z->cap = cap;
	}
	*k = z->n;
	if (!ret)
		z->level[z->n] = level;
	if (!ret && !z->nth) { /* no worker thread: compress here */
		FILE *m = open_memstream(&z->out[z->n], &(size_t){ 0 });

		ret = m ? blob(m, b->p, b->len, level, &z->own) : -ENOMEM;
		if (m && fclose(m) && !ret)
			ret = -ENOMEM;
		b->len = 0;
		z->next = ++z->n;
	} else if (!ret) {
		z->raw[z->n] = *b;
		z->out[z->n++] = NULL;
		*b = (struct hgt__blob){ 0 };
		pthread_cond_signal(&z->more);
	}
	ret = ret ?: z->err;
	pthread_mutex_unlock(&z->mu);
	return ret;
}

/* Every chunk compressed, by this thread too; the workers end. Returns their first error. */
static int zpool_finish(struct zpool *z)
{
	pthread_mutex_lock(&z->mu);
	z->done = true;
	pthread_cond_broadcast(&z->more);
	pthread_mutex_unlock(&z->mu);
	if (z->nth)
		zworker(z);
	for (int i = 0; i < z->nth; i++)
		hgt__thread_join(z->th[i]);
	z->nth = 0;
	return z->err;
}

static void zpool_free(struct zpool *z)
{
	if (!z)
		return;
	zpool_finish(z);
	for (size_t i = 0; i < z->n; i++) {
		free(z->raw[i].p);
		free(z->out[i]);
	}
	free(z->raw);
	free(z->out);
	free(z->level);
	free(z->th);
	deflaters_free(&z->own);
	pthread_mutex_destroy(&z->mu);
	pthread_cond_destroy(&z->more);
	pthread_cond_destroy(&z->room);
	free(z);
}

/* Track @k's lines so far as its next chunk in the pool. */
static int text_chunk(struct viewer *v, struct track *k)
{
	if (hgt__grow(&k->tk, &k->cap_tk, k->ntk + 1, sizeof(*k->tk), 16))
		return -ENOMEM;
	return zpool_push(v->zp, &k->txt, TEXT_LEVEL, &k->tk[k->ntk++]);
}

/* The report line of the event that is track @tr's item @k->nlines (added last). Lines are
 * kept per track: a CPU's lines are alike, and compress better together. */
static int text_line(struct viewer *v, int tr, const char *line, size_t n)
{
	struct track *k = &v->tr[tr];
	int ret = hgt__blob_put(&k->txt, line, n) ?: hgt__blob_put(&k->txt, "\n", 1);

	v->nev++;
	if (!ret && ++k->nlines % TEXT_CHUNK == 0)
		ret = text_chunk(v, k);
	return ret;
}

struct task {
	uint64_t since;
	uint32_t label;
	bool known;
};

struct src {
	struct hgt_input *in; /* a top buffer's owns it */
	int buffer;
	struct hgt_clock clk;
	struct hgt_cursor **cur;
	const char *name;
	char label[160]; /* a buffer instance's name: "FILE: instance NAME" */
	struct tep_event *sw;
	struct tep_format_field *prev_pid, *next_pid, *next_comm, *prev_comm;
	int type_off, pid_off; /* hgt__type_offset(), hgt__pid_offset() */
	struct task *run;
	uint64_t *last;
};

/* The label of event @ev (its name), remembered by its format. */
static int event_label(struct viewer *v, const struct tep_event *ev, uint32_t *lab)
{
	unsigned int k = ev ? (unsigned int)ev->id % 256 : 0;
	int ret;

	if (ev && v->ev_lab[k].ev == ev) {
		*lab = v->ev_lab[k].lab;
		return 0;
	}
	ret = label(v, ev ? ev->name : "unknown", 0, lab);
	if (!ret && ev) {
		v->ev_lab[k].ev = ev;
		v->ev_lab[k].lab = *lab;
	}
	return ret;
}

/* An event's line as its track keeps it: "\1COMM-PID\0INFO" in @line (its INFO cut to
 * @n bytes in all); its length returned. */
static size_t short_line(char *line, size_t n, const char *comm, int pid, const char *info,
			 size_t len)
{
	char digits[12];
	size_t o = 0, c = strlen(comm), d = 0;
	unsigned int u = pid < 0 ? 0u - (unsigned int)pid : (unsigned int)pid;

	do
		digits[d++] = (char)('0' + u % 10);
	while ((u /= 10));
	if (pid < 0)
		digits[d++] = '-';
	if (c + d + 3 >= n) /* never: a comm is short */
		c = 0;
	line[o++] = 1;
	memcpy(line + o, comm, c);
	o += c;
	line[o++] = '-';
	while (d)
		line[o++] = digits[--d];
	line[o++] = 0;
	if (len > n - 1 - o)
		len = n - 1 - o;
	memcpy(line + o, info, len);
	return o + len;
}

static int record(struct viewer *v, struct src *s, int si, struct tep_record *rec)
{
	struct tep_handle *tep = hgt_input_tep(s->in);
	struct tep_event *ev = tep_find_event(tep, hgt__record_type(tep, s->type_off, rec));
	int cpu = rec->cpu, pid = hgt__record_pid(tep, s->pid_off, rec), tr, ret;
	const char *info, *comm = hgt__comm_cached(&v->comms, tep, pid, NULL);
	char line[1024], tb[40];
	size_t len;
	uint32_t lab;

	if (cpu < 0 || cpu >= v->nr_cpus[si])
		return 0;
	info = hgt__info_text(v->memo, &v->seq, tep, ev, rec, false, &len);
	tr = v->ev_track[si][cpu];
	if (v->tr[tr].cpu == cpu) {
		len = short_line(line, sizeof(line), comm, pid, info, len);
	} else {
		hgt__format_time_col(tb, rec->ts, true, true);
		len = (size_t)snprintf(line, sizeof(line), "%s: %s-%d [%03d] %s: %s: %.*s", s->name,
				       comm, pid, cpu, tb, ev ? ev->name : "unknown", (int)len,
				       info);
	}
	ret = event_label(v, ev, &lab);
	ret = ret ?: add(v, tr, rec->ts, 0, lab, v->tr[tr].nlines);
	ret = ret ?: text_line(v, tr, line, len < sizeof(line) ? len : sizeof(line) - 1);
	if (ret)
		return ret;
	s->last[cpu] = rec->ts;
	if (ev && ev == s->sw) {
		struct task *t = &s->run[cpu];
		unsigned long long prev = hgt__field_num(s->prev_pid, rec),
				   next = hgt__field_num(s->next_pid, rec);
		const char *p;
		size_t n;
		char name[64];

		if (!t->known && s->prev_comm && hgt__field_str(rec, s->prev_comm, &p, &n)) {
			snprintf(name, sizeof(name), "%.*s-%llu", (int)strnlen(p, n), p, prev);
			ret = label(v, name, 0, &t->label);
			t->since = v->tr[v->ev_track[si][cpu]].it[0].t;
			t->known = true;
		}
		if (!ret && t->known && rec->ts > t->since)
			ret = add(v, v->task_track[si][cpu], t->since, rec->ts - t->since, t->label,
				  0);
		if (!ret && s->next_comm && hgt__field_str(rec, s->next_comm, &p, &n)) {
			uint32_t fl = 0;

			for (int i = 0; si == v->host && i < v->nr_vcpu_pid; i++)
				fl |= v->vcpu_pid[i] == (int)next; /* bit 0: a vCPU thread */
			snprintf(name, sizeof(name), "%.*s-%llu", (int)strnlen(p, n), p, next);
			ret = label(v, name, fl, &t->label);
		}
		t->since = rec->ts;
		t->known = true;
	}
	return ret;
}

/* @pid among the host's vCPU threads (room for it made by the caller). */
static void add_vcpu_pid(struct viewer *v, int pid)
{
	for (int i = 0; i < v->nr_vcpu_pid; i++)
		if (v->vcpu_pid[i] == pid)
			return;
	v->vcpu_pid[v->nr_vcpu_pid++] = pid;
}

/* The vCPU tracks: what the host did with each vCPU thread (why's segments, which come
 * per guest input and CPU in turn). */
static void segment(void *arg, int input, int cpu, int pid, uint64_t from, uint64_t to,
		    const struct hgt_why_part *part)
{
	struct viewer *v = arg;
	char name[80];
	uint32_t lab;

	if (v->err)
		return;
	if (input != v->seg_input || cpu != v->seg_cpu) {
		const char *b = strrchr(v->paths[input], '/');
		char g[160];

		snprintf(g, sizeof(g), "%s: its vCPUs on the host", b ? b + 1 : v->paths[input]);
		v->seg_track = new_track(v, K_VCPU, g, "vCPU %d (thread %d)", cpu, pid);
		if (v->seg_track >= 0) {
			int *np = realloc(v->vcpu_pid, sizeof(*np) * (size_t)(v->nr_vcpu_pid + 1));

			v->tr[v->seg_track].order = 1;
			if (np) {
				v->vcpu_pid = np;
				add_vcpu_pid(v, pid);
			}
		}
		v->seg_input = input;
		v->seg_cpu = cpu;
		if (v->seg_track < 0) {
			v->err = v->seg_track;
			return;
		}
	}
	if (part->state == HGT_WHY_PREEMPTED && !part->id)
		snprintf(name, sizeof(name), "runnable, its CPU idle");
	else if (part->state == HGT_WHY_PREEMPTED)
		snprintf(name, sizeof(name), "preempted by %s-%d", part->what, part->id);
	else
		snprintf(name, sizeof(name), "%s", part->what);
	v->err = label(v, name, 1u << (1 + part->state), &lab);
	if (!v->err)
		v->err = add(v, v->seg_track, from, to - from, lab, 0);
}

/* The task still running at the end of each CPU runs until its last event. */
static int finish_tasks(struct viewer *v, struct src *s, int si)
{
	for (int c = 0; c < v->nr_cpus[si]; c++) {
		struct task *t = &s->run[c];

		if (t->known && s->last[c] > t->since) {
			int ret = add(v, v->task_track[si][c], t->since, s->last[c] - t->since,
				      t->label, 0);

			if (ret)
				return ret;
		}
	}
	return 0;
}

static int loss_line(struct viewer *v, const char *name, int cpu, const struct hgt_loss *l)
{
	char **n = realloc(v->loss, sizeof(*n) * (size_t)(v->nr_loss + 1));

	if (!n)
		return -ENOMEM;
	v->loss = n;
	if (asprintf(&n[v->nr_loss], "%s CPU %d: %llu events lost on %llu pages%s", name, cpu,
		     (unsigned long long)l->events_lost, (unsigned long long)l->pages_with_loss,
		     l->pages_unknown_count ? " (and pages with an unknown count)" : "") < 0)
		return -ENOMEM;
	v->nr_loss++;
	return 0;
}

/*
 * TSC cycles made ns as why made them (its rate, so that the vCPU tracks fit), else at the
 * rate hgt__tsc_rate() finds (--ts2secs, the recorder's, the timers'); tsc_how says which,
 * or why the times stay cycles.
 */
static int rate(struct viewer *v, struct src *s, int n, int ns)
{
	struct hgt_input **in = calloc((size_t)n + 1, sizeof(*in));
	struct hgt_clock *clk = calloc((size_t)n + 1, sizeof(*clk));

	if (!in || !clk) {
		free(in);
		free(clk);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		in[i] = s[i].in;
		clk[i] = s[i].clk;
	}
	if (v->why && v->why->tsc_hz) {
		v->tsc_hz = v->why->tsc_hz;
		v->tsc_how = v->why->tsc_how;
	} else if (n) {
		v->tsc_hz = hgt__tsc_rate(in, clk, n, 0, 0, &v->tsc_how);
		for (int i = 0; v->tsc_hz && i < ns; i++)
			s[i].clk.ts2secs = 1e9 / (double)v->tsc_hz; /* as --ts2secs */
	}
	if (!v->tsc_hz && v->o.ts2secs) {
		v->tsc_hz = v->o.ts2secs;
		v->tsc_how = "--ts2secs";
	}
	free(in);
	free(clk);
	return 0;
}

/* The trace.dat inputs merged as the report merges them. */
/* Open every input; the number of sources (inputs and their instances) in *@ns. */
static int open_inputs(struct viewer *v, struct hgt_input **ins, int *ns)
{
	HGT_OPTS(hgt_open_opts, oo, .flags = v->o.quiet ? HGT_OPEN_QUIET : 0);

	*ns = v->nr_paths;
	for (int i = 0; i < v->nr_paths; i++) {
		ins[i] = hgt_input_open(v->paths[i], &oo);
		if (!ins[i])
			return -errno;
		if (hgt_input_top_buffer(ins[i]) < 0)
			return hgt__errorf(ENOTSUP, "%s: a latency trace: nothing to view",
					   v->paths[i]);
		*ns += hgt_input_nr_buffers(ins[i]) - 1; /* its instances, sources of their own */
	}
	return 0;
}

/* The sources: the top buffers first (source i = input i), then the instances, as the
 * report, each with its clock. */
static void make_sources(struct viewer *v, struct hgt_input **ins, struct src *s)
{
	/* why made raw TSC cycles ns: the same rate here, or its vCPU tracks would not fit */
	HGT_OPTS(hgt_clock_opts, co, .ts2secs = v->why ? v->why->tsc_hz : v->o.ts2secs);
	int n = v->nr_paths;

	for (int i = 0, k = n; i < n; i++) {
		const char *b = strrchr(v->paths[i], '/');

		s[i].in = ins[i];
		s[i].buffer = hgt_input_top_buffer(ins[i]);
		s[i].name = b ? b + 1 : v->paths[i];
		hgt_clock_init(&s[i].clk, ins[i], &co);
		for (int bf = 0; bf < hgt_input_nr_buffers(ins[i]); bf++) {
			if (bf == s[i].buffer)
				continue;
			s[k].in = ins[i];
			s[k].buffer = bf;
			snprintf(s[k].label, sizeof(s[k].label), "%s: instance %s", s[i].name,
				 hgt_input_buffer(ins[i], bf)->name);
			s[k].name = s[k].label;
			s[k].clk = s[i].clk;
			s[k].clk.tsync = NULL; /* instances stay in their own time */
			k++;
		}
	}
}

/* Source @s: where its records hold their type and pid, and its sched_switch fields when it
 * has the event. */
static void find_switch(struct src *s)
{
	s->type_off = hgt__type_offset(hgt_input_tep(s->in));
	s->pid_off = hgt__pid_offset(hgt_input_tep(s->in));
	s->sw = tep_find_event_by_name(hgt_input_tep(s->in), "sched", "sched_switch");
	if (!s->sw)
		return;
	s->prev_pid = tep_find_field(s->sw, "prev_pid");
	s->next_pid = tep_find_field(s->sw, "next_pid");
	s->prev_comm = tep_find_field(s->sw, "prev_comm");
	s->next_comm = tep_find_field(s->sw, "next_comm");
	if (!s->prev_pid || !s->next_pid)
		s->sw = NULL;
}

/* A track of @kind for CPU @c of source @s, placed by @order. Returns its index or
 * -errno. */
static int cpu_track(struct viewer *v, int kind, const struct src *s, const char *fmt, int c,
		     int order)
{
	int t = new_track(v, kind, s->name, fmt, c, 0);

	if (t >= 0)
		v->tr[t].order = order;
	/* short lines when the group holds the file's name whole */
	if (t >= 0 && kind == K_EVENTS && strlen(s->name) < sizeof(v->tr[t].group))
		v->tr[t].cpu = c;
	return t;
}

/* Source @i: its per-CPU state and tracks, its CPUs' cursors in the merge. */
static int add_source(struct viewer *v, struct src *s, int i, struct hgt_merge *m)
{
	const struct hgt_buffer *buf = hgt_input_buffer(s[i].in, s[i].buffer);
	int nc = buf->nr_cpus, n = v->nr_paths, ret = 0;
	int order = i == v->host ? 0 : 2 + (i < n ? i : n);

	v->nr_cpus[i] = nc;
	s[i].cur = calloc((size_t)nc + 1, sizeof(*s[i].cur));
	s[i].run = calloc((size_t)nc + 1, sizeof(*s[i].run));
	s[i].last = calloc((size_t)nc + 1, sizeof(*s[i].last));
	v->ev_track[i] = calloc((size_t)nc + 1, sizeof(int));
	v->task_track[i] = calloc((size_t)nc + 1, sizeof(int));
	if (!s[i].cur || !s[i].run || !s[i].last || !v->ev_track[i] || !v->task_track[i])
		return -ENOMEM;
	find_switch(&s[i]);
	for (int c = 0; c < nc && ret >= 0; c++) {
		ret = v->ev_track[i][c] = cpu_track(v, K_EVENTS, &s[i], "CPU %d", c, order);
		if (ret >= 0)
			ret = v->task_track[i][c] =
				cpu_track(v, K_TASKS, &s[i], "CPU %d tasks", c, order);
		if (ret >= 0 && buf->cpus[c].present) {
			s[i].cur[c] = hgt_cursor_open(s[i].in, s[i].buffer, c);
			ret = s[i].cur[c] ? hgt_merge_add(m, s[i].cur[c], &s[i].clk,
							  (void *)(intptr_t)i)
					  : -errno;
		}
	}
	return ret < 0 ? ret : 0;
}

/* After the last record: the tasks still running, and each CPU's losses. */
static int finish_sources(struct viewer *v, struct src *s)
{
	int ret = 0;

	for (int i = 0; i < v->nr_src && !ret; i++) {
		ret = finish_tasks(v, &s[i], i);
		for (int c = 0; !ret && c < v->nr_cpus[i]; c++) {
			struct hgt_loss l = { 0 };

			if (s[i].cur[c])
				hgt_cursor_loss(s[i].cur[c], &l);
			if (l.pages_with_loss)
				ret = loss_line(v, s[i].name, c, &l);
		}
	}
	return ret;
}

/* The sync check's text, and what the page needs of the first input's clock. */
static void keep_summary(struct viewer *v, struct src *s, struct hgt_sync_check *sc)
{
	if (sc) {
		FILE *f = open_memstream(&v->sync_text, &v->sync_len);

		if (f) {
			hgt_sync_check_print(sc, f);
			fclose(f);
		}
	}
	if (v->nr_paths) {
		v->probe_clock = s[0].clk;
		snprintf(v->first_clock, sizeof(v->first_clock), "%s",
			 hgt_input_trace_clock(s[0].in) ? hgt_input_trace_clock(s[0].in) : "");
		v->ns = hgt_input_in_usecs(s[0].in) || s[0].clk.ts2secs != 0;
	}
}

/* Every record of every input, merged in time, into the tracks. */
static int merge_records(struct viewer *v, struct src *s, struct hgt_merge *m,
			 struct hgt_sync_check *sc)
{
	struct hgt__kvm_funcs kf = { 0 };
	struct hgt_input **in = calloc((size_t)v->nr_paths + 1, sizeof(*in));
	struct tep_record *rec;
	void *user;
	int src, ret = in ? 0 : -ENOMEM;

	/* the kvm plugin's guest symbols in the host's lines, as the report prints them */
	for (int i = 0; in && i < v->nr_paths; i++)
		in[i] = s[i].in;
	if (!ret)
		ret = hgt__kvm_funcs_build(in, v->nr_paths, &kf, NULL);
	hgt__kvm_funcs_set(kf.n ? &kf : NULL);
	while (ret >= 0 && (ret = hgt_merge_next(m, &rec, &user, &src)) > 0) {
		int i = (int)(intptr_t)user;

		ret = record(v, &s[i], i, rec);
		if (ret)
			break;
		if (sc && i < v->nr_paths)
			hgt_sync_check_record(sc, i, rec);
	}
	hgt__kvm_funcs_set(NULL);
	free(kf.pid);
	free(kf.tep);
	free(kf.ksyms);
	free(in);
	return ret;
}

/* ---- why's pass: before the session's, or in a thread beside it ---- */

/*
 * Beside the session's pass when no input needs a TSC rate (the session's clocks would wait
 * for why's): its segments, which come at its end, wait until that pass is over (@open),
 * then go to the tracks as segment() makes them while the main thread waits in the join.
 */
struct why_async {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool open, seen;
	int err;
	char msg[HGT__ERRLEN];
};

static void why_opts_of(const struct viewer *v, struct hgt_why_opts *wo)
{
	memset(wo, 0, sizeof(*wo));
	wo->sz = sizeof(*wo);
	wo->inputs = v->paths;
	wo->nr_inputs = v->nr_paths;
	wo->top = v->o.why_top ? v->o.why_top : 20;
	wo->quiet = true;
	wo->host_only = true;
	wo->ts2secs = v->o.ts2secs;
}

static void gated_segment(void *arg, int input, int cpu, int pid, uint64_t from, uint64_t to,
			  const struct hgt_why_part *part)
{
	struct viewer *v = arg;
	struct why_async *a = v->wa;

	if (!a->seen) {
		pthread_mutex_lock(&a->mu);
		while (!a->open)
			pthread_cond_wait(&a->cv, &a->mu);
		pthread_mutex_unlock(&a->mu);
		a->seen = true;
	}
	segment(v, input, cpu, pid, from, to, part);
}

static void *why_thread(void *arg)
{
	struct viewer *v = arg;
	struct hgt_why_opts wo;

	why_opts_of(v, &wo);
	v->why = hgt__why_segments(&wo, gated_segment, v);
	if (!v->why) {
		v->wa->err = errno ? errno : EIO;
		snprintf(v->wa->msg, sizeof(v->wa->msg), "%s", hgt_last_error());
	}
	return NULL;
}

/* No input's times need a rate to be ns (why's and the session's clocks agree without it). */
static bool no_rate_needed(const struct viewer *v, struct hgt_input *const *ins)
{
	if (v->o.ts2secs)
		return false;
	for (int i = 0; i < v->nr_paths; i++)
		if (!hgt_input_in_usecs(ins[i]) && !hgt_input_tsc2nsec(ins[i], NULL, NULL, NULL))
			return false;
	return true;
}

/* What why's pass left (failed with @err, saying @msg): the page's note on it. Returns
 * -errno when the page cannot go on. */
static int why_done(struct viewer *v, int err, const char *msg)
{
	if (!v->why && err != EINVAL)
		return hgt__errorf(err, "%s", msg);
	if (!v->why) /* e.g. raw cycles at no known rate: the page without vCPU tracks, saying why
		      */
		snprintf(v->why_note, sizeof(v->why_note), "guest delays not analysed: %s", msg);
	if (v->why && !v->why->host)
		snprintf(
			v->why_note, sizeof(v->why_note),
			"no host with guests among these files: no guest delay to explain by the host");
	else if (v->why && !v->why->found[0] && !v->why->found[1] && !v->why->found[2])
		snprintf(
			v->why_note, sizeof(v->why_note),
			"no guest delay to analyse: no guest wakeup or timer expiry in these files");
	return v->err;
}

/* why's pass, now or (when it can) started beside the session's. */
static int why_start(struct viewer *v, struct hgt_input *const *ins)
{
	struct hgt_why_opts wo;

	if (no_rate_needed(v, ins)) {
		v->wa = calloc(1, sizeof(*v->wa));
		if (v->wa) {
			pthread_mutex_init(&v->wa->mu, NULL);
			pthread_cond_init(&v->wa->cv, NULL);
			if (!hgt__thread_create(&v->wa->th, why_thread, v))
				return 0;
			pthread_mutex_destroy(&v->wa->mu);
			pthread_cond_destroy(&v->wa->cv);
			free(v->wa);
			v->wa = NULL;
		}
	}
	why_opts_of(v, &wo);
	v->why = hgt__why_segments(&wo, segment, v);
	if (v->why)
		return why_done(v, 0, "");
	{
		int err = errno ? errno : EIO;
		char msg[HGT__ERRLEN];

		snprintf(msg, sizeof(msg), "%s", hgt_last_error());
		hgt__set_last_error("");
		return why_done(v, err, msg);
	}
}

/* The session's pass is over: why's segments go to the tracks, its thread ends. */
static int why_finish(struct viewer *v)
{
	struct why_async *a = v->wa;
	int ret;

	if (!a)
		return 0;
	pthread_mutex_lock(&a->mu);
	a->open = true;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	hgt__thread_join(a->th);
	ret = why_done(v, a->err, a->msg);
	pthread_mutex_destroy(&a->mu);
	pthread_cond_destroy(&a->cv);
	free(a);
	v->wa = NULL;
	return ret;
}

/* With why beside the pass, the host's vCPU threads as its GUEST options name them (for
 * their task labels, before why's segments name them). */
static int guest_threads(struct viewer *v, struct hgt_input *const *ins)
{
	for (int i = 0; v->wa && v->host >= 0 && i < v->nr_paths; i++) {
		int *pids = NULL,
		    k = i == v->host ? 0 : hgt__guest_cpu_threads(ins[v->host], ins[i], &pids);
		int *np = k > 0 ? realloc(v->vcpu_pid, sizeof(*np) * (size_t)(v->nr_vcpu_pid + k))
				: NULL;

		if (k > 0 && !np) {
			free(pids);
			return -ENOMEM;
		}
		if (np)
			v->vcpu_pid = np;
		for (int c = 0; np && c < k; c++)
			if (pids[c] > 0)
				add_vcpu_pid(v, pids[c]);
		free(pids);
	}
	return 0;
}

static int pass(struct viewer *v)
{
	int n = v->nr_paths, ns = n, ret;
	struct src *s = NULL;
	struct hgt_input **ins = calloc((size_t)n + 1, sizeof(*ins));
	struct hgt_sync_check *sc = NULL;
	struct hgt_merge *m = hgt_merge_new();

	ret = !ins || !m ? -ENOMEM : open_inputs(v, ins, &ns);
	if (!ret && v->o.why_top >= 0)
		ret = why_start(v, ins);
	if (!ret) {
		s = calloc((size_t)ns + 1, sizeof(*s));
		v->ev_track = calloc((size_t)ns + 1, sizeof(int *));
		v->task_track = calloc((size_t)ns + 1, sizeof(int *));
		v->nr_cpus = calloc((size_t)ns + 1, sizeof(int));
		if (!s || !v->ev_track || !v->task_track || !v->nr_cpus)
			ret = -ENOMEM;
	}
	if (!ret) {
		make_sources(v, ins, s);
		v->nr_src = ns;
		ret = rate(v, s, n, ns);
	}
	for (int i = 0; !ret && i < n && !v->flight[0]; i++)
		hgt__flight_mark(ins[i], v->flight, sizeof(v->flight), &v->flight_from,
				 &v->flight_to);
	if (!ret) {
		sc = hgt_sync_check_new(ins, n, NULL);
		v->host = sc ? hgt_sync_check_host(sc) : -1;
		ret = guest_threads(v, ins);
	}
	for (int i = 0; i < ns && !ret; i++)
		ret = add_source(v, s, i, m);
	if (!ret)
		ret = merge_records(v, s, m, sc);
	ret = why_finish(v) ?: ret;
	if (!ret)
		ret = finish_sources(v, s);
	if (!ret)
		keep_summary(v, s, sc);
	hgt_merge_free(m);
	for (int i = 0; i < ns && s && v->nr_cpus; i++) {
		for (int c = 0; s[i].cur && c < v->nr_cpus[i]; c++)
			hgt_cursor_close(s[i].cur[c]);
		free(s[i].cur);
		free(s[i].run);
		free(s[i].last);
	}
	for (int i = 0; i < n && ins; i++)
		hgt_input_close(ins[i]);
	if (sc)
		hgt_sync_check_free(sc);
	free(s);
	free(ins);
	return ret < 0 ? ret : 0;
}

/* Simple-backend files: per thread a track of their events, in the first file's time. */
static int probes(struct viewer *v)
{
	for (int i = 0; i < v->nr_probes; i++) {
		char err[256], text[8192], line[9000], tb[40];
		struct hgt_probefile *f = hgt_probefile_open(v->probes[i], NULL, err, sizeof(err));
		struct hgt_probefile_event ev;
		const char *b = strrchr(v->probes[i], '/');
		int first = v->nr_tr, ret;

		if (!f)
			return hgt__errorf(EINVAL, "%s", err);
		if (v->nr_paths &&
		    (ret = hgt__probe_clock_check(v->first_clock, f, v->probes[i]))) {
			hgt_probefile_close(f);
			return ret;
		}
		b = b ? b + 1 : v->probes[i];
		while ((ret = hgt_probefile_next(f, &ev)) > 0) {
			uint64_t ts =
				v->nr_paths ? hgt_clock_convert(&v->probe_clock, ev.ts, 0) : ev.ts;
			int tr = -1, len;
			uint32_t lab;

			for (int k = first; k < v->nr_tr && tr < 0; k++)
				if (v->tr[k].tid == (long)ev.tid)
					tr = k;
			if (tr < 0) {
				tr = new_track(v, K_EVENTS, b, "thread %d", (int)ev.tid, 0);
				if (tr < 0) {
					ret = tr;
					break;
				}
				v->tr[tr].order = 100;
				v->tr[tr].tid = (long)ev.tid;
			}
			hgt_probefile_format(&ev, text, sizeof(text));
			hgt__format_time_col(tb, ts, true, true);
			len = snprintf(line, sizeof(line), "%s: %s-%u %s: %s: %s", b,
				       ev.comm ? ev.comm : "", ev.tid, tb, ev.name, text);
			ret = label(v, ev.name, 0, &lab);
			ret = ret ?: add(v, tr, ts, 0, lab, v->tr[tr].nlines);
			ret = ret
				      ?: text_line(v, tr, line,
						   (size_t)(len < (int)sizeof(line)
								    ? len
								    : (int)sizeof(line) - 1));
			if (ret)
				break;
		}
		if (ret < 0) {
			ret = hgt__errorf(EINVAL, "%s", hgt_probefile_error(f));
			hgt_probefile_close(f);
			return ret;
		}
		hgt_probefile_close(f);
	}
	return 0;
}

/* ---- the page ---- */

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->ev < y->ev ? -1 : x->ev > y->ev;
}

static uint64_t zigzag(int64_t x)
{
	return ((uint64_t)x << 1) ^ (uint64_t)(x >> 63);
}

/* @b's bytes (emptied) to the pool as the next piece of track @k. */
static int piece(struct viewer *v, struct track *k, struct hgt__blob *b, struct piece pc)
{
	if (hgt__grow(&k->pc, &k->cap_pc, k->npc + 1, sizeof(*k->pc), 16))
		return -ENOMEM;
	if (!b->p && hgt__blob_put(b, "", 0)) /* an empty level: a string all the same */
		return -ENOMEM;
	k->pc[k->npc] = pc;
	return zpool_push(v->zp, b, ITEM_LEVEL, &k->pc[k->npc++].k);
}

/* Per zoom level (bucket width 2^(14 + 4L) ns: 16 us, 262 us, 4.2 ms...), the sparse
 * buckets of a track: an event track's counts; an interval track's coverage (0-255) and
 * the label of the longest piece in it. Levels with more than MAX_BUCKETS are left out. */
static int encode_levels(struct viewer *v, struct track *k, uint64_t t0, uint64_t span)
{
	int ret = 0;

	for (int L = 0; L < 12 && !ret; L++) {
		uint64_t W = 1ULL << (14 + 4 * L), cb = UINT64_MAX, prev = 0, cnt = 0, best = 0;
		uint32_t bl = 0;
		struct hgt__blob b = { 0 };

		if (span / W + 1 > MAX_BUCKETS)
			continue;
#define FLUSH()                                                                                   \
	do {                                                                                      \
		if (cb != UINT64_MAX && cnt) {                                                    \
			ret = ret ?: hgt__blob_varint(&b, cb - prev);                             \
			ret = ret                                                                 \
				      ?: hgt__blob_varint(&b, k->kind == K_EVENTS                 \
								      ? cnt                       \
								      : (cnt * 255 + W - 1) / W); \
			if (k->kind != K_EVENTS)                                                  \
				ret = ret ?: hgt__blob_varint(&b, bl);                            \
			prev = cb;                                                                \
		}                                                                                 \
	} while (0)
		for (size_t i = 0; i < k->n && !ret; i++) {
			uint64_t a = k->it[i].t - t0, e = a + k->it[i].d;

			if (k->kind == K_EVENTS) {
				if (a / W != cb) {
					FLUSH();
					cb = a / W;
					cnt = 0;
				}
				cnt++;
				continue;
			}
			while (a < e) {
				uint64_t bk = a / W, be = (bk + 1) * W < e ? (bk + 1) * W : e;

				if (bk != cb) {
					FLUSH();
					cb = bk;
					cnt = best = 0;
				}
				cnt += be - a;
				if (be - a > best) {
					best = be - a;
					bl = k->it[i].label;
				}
				a = be;
			}
		}
		FLUSH();
#undef FLUSH
		ret = ret ?: piece(v, k, &b, (struct piece){ .b = W });
		free(b.p);
		if (span / W == 0)
			break; /* one bucket holds it all: the coarsest level */
	}
	return ret;
}

/*
 * Items @c0 to @c1 of track @k into @b, a column at a time: their times, an interval's
 * lengths, their labels, an event's line numbers. Times go from the first's (the chunk's
 * "t0"): an event's from the one before, an interval's from where the one before ended
 * (zigzag: 0 for pieces back to back). A line number is told apart from the item's own
 * position in the track (0 but where the times went back). The latest end in *@tmax.
 */
static int encode_chunk(const struct track *k, size_t c0, size_t c1, uint64_t t0,
			struct hgt__blob *b, uint64_t *tmax)
{
	uint64_t prev = k->it[c0].t;
	int ret = 0;

	for (size_t i = c0; i < c1 && !ret; i++) {
		const struct item *it = &k->it[i];

		ret = hgt__blob_varint(b, k->kind == K_EVENTS ? it->t - prev
							      : zigzag((int64_t)(it->t - prev)));
		prev = k->kind == K_EVENTS ? it->t : it->t + it->d;
		if (it->t + it->d - t0 > *tmax)
			*tmax = it->t + it->d - t0;
	}
	for (size_t i = c0; i < c1 && !ret && k->kind != K_EVENTS; i++)
		ret = hgt__blob_varint(b, k->it[i].d);
	for (size_t i = c0; i < c1 && !ret; i++)
		ret = hgt__blob_varint(b, k->it[i].label);
	for (size_t i = c0; i < c1 && !ret && k->kind == K_EVENTS; i++)
		ret = hgt__blob_varint(b, zigzag((int64_t)k->it[i].ev - (int64_t)i));
	return ret;
}

/* Track @k's items sorted, cut in chunks and summed up per level, all to the pool. */
static int encode_track(struct viewer *v, struct track *k, uint64_t t0, uint64_t span)
{
	int ret = 0;

	/* a CPU's events and a vCPU's pieces come in order: sorted only when they do not */
	for (size_t i = 1; i < k->n; i++)
		if (cmp_item(&k->it[i - 1], &k->it[i]) > 0) {
			qsort(k->it, k->n, sizeof(*k->it), cmp_item);
			break;
		}
	for (size_t c0 = 0; c0 < k->n && !ret; c0 += CHUNK_ITEMS) {
		size_t c1 = c0 + CHUNK_ITEMS < k->n ? c0 + CHUNK_ITEMS : k->n;
		uint64_t tmax = 0;
		struct hgt__blob b = { 0 };

		ret = encode_chunk(k, c0, c1, t0, &b, &tmax)
			      ?: piece(v, k, &b,
				       (struct piece){
					       .n = c1 - c0, .a = k->it[c0].t - t0, .b = tmax });
		free(b.p);
	}
	return ret ?: encode_levels(v, k, t0, span);
}

static void write_track(FILE *f, const struct zpool *z, const struct track *k, bool comma)
{
	bool level = false;

	fprintf(f, "%s\n{\"name\":", comma ? "," : "");
	hgt__json_str(f, k->name, strlen(k->name));
	fputs(",\"group\":", f);
	hgt__json_str(f, k->group, strlen(k->group));
	fprintf(f, ",\"kind\":%d,\"n\":%zu", k->kind, k->n);
	if (k->cpu >= 0)
		fprintf(f, ",\"cpu\":%d", k->cpu);
	if (k->kind == K_EVENTS) { /* its lines, TEXT_CHUNK per string */
		fputs(",\"texts\":[", f);
		for (size_t i = 0; i < k->ntk; i++)
			fprintf(f, "%s\n%s", i ? "," : "", z->out[k->tk[i]]);
		fputc(']', f);
	}
	fputs(",\"chunks\":[", f);
	for (size_t i = 0; i < k->npc; i++) {
		const struct piece *p = &k->pc[i];

		if (!p->n && !level) {
			fputs("],\"levels\":[", f);
			level = true;
		} else if (i) {
			fputc(',', f);
		}
		if (p->n)
			fprintf(f, "{\"t0\":%llu,\"t1\":%llu,\"n\":%zu,\"b\":%s}",
				(unsigned long long)p->a, (unsigned long long)p->b, p->n,
				z->out[p->k]);
		else
			fprintf(f, "{\"w\":%llu,\"b\":%s}", (unsigned long long)p->b, z->out[p->k]);
	}
	fputs(level ? "]}" : "],\"levels\":[]}", f);
}

static int cmp_order(const void *a, const void *b, void *arg)
{
	const struct viewer *v = arg;
	int x = *(const int *)a, y = *(const int *)b;

	if (v->tr[x].order != v->tr[y].order)
		return v->tr[x].order - v->tr[y].order;
	return x - y;
}

/* The track of @name (a file name) and guest CPU @cpu: its events, or its vCPU's. */
static int find_track(const struct viewer *v, const int *pos, const char *file, int cpu, bool vcpu)
{
	char g[160], nm[32];

	snprintf(g, sizeof(g), vcpu ? "%s: its vCPUs on the host" : "%s", file);
	snprintf(nm, sizeof(nm), vcpu ? "vCPU %d (" : "CPU %d", cpu);
	for (int i = 0; i < v->nr_tr; i++)
		if (!strcmp(v->tr[i].group, g) && !strncmp(v->tr[i].name, nm, strlen(nm)) &&
		    (vcpu || !v->tr[i].name[strlen(nm)]))
			return pos[i];
	return -1;
}

static void write_why(FILE *f, const struct viewer *v, const int *pos)
{
	const struct hgt_why_result *r = v->why;

	fputs(",\"why\":[", f);
	for (int i = 0; r && i < r->nr; i++) {
		const struct hgt_why_delay *d = &r->d[i];
		char title[256], cause[160];
		bool host = d->nr_parts && d->parts[0].state != HGT_WHY_GUEST &&
			    d->parts[0].state != HGT_WHY_HALTED &&
			    d->parts[0].state != HGT_WHY_UNKNOWN;

		snprintf(title, sizeof(title), "%s of %s-%d on %s CPU %d: %llu.%03llu us",
			 d->kind == HGT_WHY_WAKEUP  ? "wakeup"
			 : d->kind == HGT_WHY_TIMER ? "timer"
						    : "pair",
			 d->comm, d->pid, d->input, d->cpu,
			 (unsigned long long)((d->to_ns - d->from_ns) / 1000),
			 (unsigned long long)((d->to_ns - d->from_ns) % 1000));
		if (!d->nr_parts)
			snprintf(cause, sizeof(cause), "no host thread known");
		else if (d->parts[0].state == HGT_WHY_PREEMPTED && !d->parts[0].id)
			snprintf(cause, sizeof(cause),
				 "the host: runnable, its CPU idle (%llu.%03llu us)",
				 (unsigned long long)(d->parts[0].ns / 1000),
				 (unsigned long long)(d->parts[0].ns % 1000));
		else if (d->parts[0].state == HGT_WHY_PREEMPTED)
			snprintf(cause, sizeof(cause), "%s: preempted by %s-%d (%llu.%03llu us)",
				 host ? "the host" : "the guest", d->parts[0].what, d->parts[0].id,
				 (unsigned long long)(d->parts[0].ns / 1000),
				 (unsigned long long)(d->parts[0].ns % 1000));
		else
			snprintf(cause, sizeof(cause), "%s: %s (%llu.%03llu us)",
				 host ? "the host" : "inside the guest", d->parts[0].what,
				 (unsigned long long)(d->parts[0].ns / 1000),
				 (unsigned long long)(d->parts[0].ns % 1000));
		fprintf(f,
			"%s\n{\"ev\":%d,\"vcpu\":%d,\"from\":%llu,\"to\":%llu,\"host\":%s,\"title\":",
			i ? "," : "", find_track(v, pos, d->input, d->cpu, false),
			find_track(v, pos, d->input, d->cpu, true),
			(unsigned long long)(d->from_ns - v->t0),
			(unsigned long long)(d->to_ns - v->t0), host ? "true" : "false");
		hgt__json_str(f, title, strlen(title));
		fputs(",\"cause\":", f);
		hgt__json_str(f, cause, strlen(cause));
		fputc('}', f);
	}
	fputc(']', f);
}

static int write_page(struct viewer *v)
{
	FILE *f = v->o.out;
	int *order = malloc(sizeof(int) * (size_t)(v->nr_tr + 1));
	int *pos = malloc(sizeof(int) * (size_t)(v->nr_tr + 1));
	uint64_t span;
	int ret = 0;

	if (!order || !pos) {
		free(order);
		free(pos);
		return -ENOMEM;
	}
	if (v->t0 > v->t1)
		v->t0 = v->t1 = 0;
	span = v->t1 - v->t0;
	for (int i = 0; i < v->nr_tr; i++)
		order[i] = i;
	qsort_r(order, (size_t)v->nr_tr, sizeof(int), cmp_order, v);
	for (int i = 0; i < v->nr_tr; i++)
		pos[order[i]] = i;
	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>hgtrace view</title>\n"
	      "<style>",
	      f);
	fputs(hgt__view_css, f);
	fputs("</style></head><body>\n<div id=\"hdr\"></div><div id=\"bar\"></div><div id=\"why\"></div><div id=\"wrap\"><canvas id=\"cv\"></canvas></div><div id=\"detail\"></div><pre id=\"state\"></pre>\n"
	      "<script id=\"hgt-data\" type=\"application/json\">{\"version\":1",
	      f);
	fprintf(f,
		",\"t0\":\"%llu\",\"span\":%llu,\"events\":%u,\"ns\":%s,\"tscHz\":%llu,\"tscFrom\":",
		(unsigned long long)v->t0, (unsigned long long)span, v->nev,
		v->ns ? "true" : "false", (unsigned long long)v->tsc_hz);
	hgt__json_str(f, v->tsc_how ? v->tsc_how : "", v->tsc_how ? strlen(v->tsc_how) : 0);
	fputs(",\"whyNote\":", f);
	hgt__json_str(f, v->why_note, strlen(v->why_note));
	fputs(",\"flight\":", f);
	if (v->flight[0] && v->flight_from >= v->t0) {
		fputs("{\"title\":", f);
		hgt__json_str(f, v->flight, strlen(v->flight));
		fprintf(f, ",\"from\":%llu,\"to\":%llu}",
			(unsigned long long)(v->flight_from - v->t0),
			(unsigned long long)(v->flight_to - v->t0));
	} else {
		fputs("null", f);
	}
	fputs(",\"files\":[", f);
	for (int i = 0; i < v->nr_paths + v->nr_probes; i++) {
		const char *p = i < v->nr_paths ? v->paths[i] : v->probes[i - v->nr_paths];

		fputs(i ? "," : "", f);
		hgt__json_str(f, p, strlen(p));
	}
	fputs("],\"sync\":", f);
	hgt__json_str(f, v->sync_text ? v->sync_text : "", v->sync_len);
	fputs(",\"losses\":[", f);
	for (int i = 0; i < v->nr_loss; i++) {
		fputs(i ? "," : "", f);
		hgt__json_str(f, v->loss[i], strlen(v->loss[i]));
	}
	fputs("],\"labels\":[", f);
	for (size_t i = 0; i < v->lab.n; i++) {
		fputs(i ? "," : "", f);
		hgt__json_str(f, v->lab.s[i], strlen(v->lab.s[i]));
	}
	fputs("],\"labelFlags\":[", f);
	for (size_t i = 0; i < v->lab.n; i++)
		fprintf(f, "%s%u", i ? "," : "", v->lab.flags[i]);
	fprintf(f, "],\"textChunk\":%d", TEXT_CHUNK);
	/* every track's last lines, items and levels to the pool too, all compressed there */
	for (int i = 0; i < v->nr_tr && !ret; i++)
		if (v->tr[i].txt.len)
			ret = text_chunk(v, &v->tr[i]);
	v->zp->all = true;
	for (int i = 0; i < v->nr_tr && !ret; i++)
		ret = encode_track(v, &v->tr[i], v->t0, span);
	ret = zpool_finish(v->zp) ?: ret;
	fputs(",\"tracks\":[", f);
	for (int i = 0; i < v->nr_tr && !ret; i++)
		write_track(f, v->zp, &v->tr[order[i]], i > 0);
	fputc(']', f);
	write_why(f, v, pos);
	fputs("}</script>\n<script>\n", f);
	fputs(hgt__view_js, f);
	fputs("</script></body></html>\n", f);
	free(order);
	free(pos);
	if (!ret && (fflush(f) || ferror(f)))
		ret = hgt__errorf(EIO, "view: write failed: %s", strerror(errno));
	return ret;
}

static void viewer_free(struct viewer *v)
{
	for (int i = 0; i < v->nr_tr; i++) {
		free(v->tr[i].it);
		free(v->tr[i].txt.p);
		free(v->tr[i].tk);
		free(v->tr[i].pc);
	}
	free(v->tr);
	for (size_t i = 0; i < v->lab.n; i++)
		free(v->lab.s[i]);
	free(v->lab.s);
	free(v->lab.flags);
	free(v->lab.slot);
	zpool_free(v->zp);
	for (int i = 0; i < v->nr_src; i++) {
		free(v->ev_track ? v->ev_track[i] : NULL);
		free(v->task_track ? v->task_track[i] : NULL);
	}
	free(v->ev_track);
	free(v->task_track);
	free(v->nr_cpus);
	free(v->vcpu_pid);
	hgt_why_free(v->why);
	free(v->sync_text);
	for (int i = 0; i < v->nr_loss; i++)
		free(v->loss[i]);
	free(v->loss);
	free(v->paths);
	free(v->probes);
	trace_seq_destroy(&v->seq);
	hgt__info_memo_free(v->memo);
}

/**
 * hgt_view_html - the session of @opts->inputs as one self-contained HTML page.
 */
int hgt_view_html(const struct hgt_view_opts *opts)
{
	struct viewer v = { .t0 = UINT64_MAX, .seg_input = -1, .host = -1 };
	int ret = 0;

	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(v.o))
		return -EINVAL;
	memcpy(&v.o, opts, opts->sz);
	if (!v.o.out || v.o.nr_inputs < 1 || !v.o.inputs)
		return -EINVAL;
	trace_seq_init(&v.seq);
	v.memo = hgt__info_memo_new(); /* NULL: every text printed */
	v.zp = zpool_new();
	v.paths = calloc((size_t)v.o.nr_inputs, sizeof(*v.paths));
	v.probes = calloc((size_t)v.o.nr_inputs, sizeof(*v.probes));
	if (!v.paths || !v.probes || !v.zp)
		ret = -ENOMEM;
	for (int i = 0; !ret && i < v.o.nr_inputs; i++) {
		if (hgt_probefile_is(v.o.inputs[i]) > 0)
			v.probes[v.nr_probes++] = v.o.inputs[i];
		else
			v.paths[v.nr_paths++] = v.o.inputs[i];
	}
	if (!ret && v.nr_paths && v.o.why_top < 0)
		snprintf(v.why_note, sizeof(v.why_note), "guest delays not analysed (--no-why)");
	ret = ret ?: v.nr_paths ? pass(&v) : 0;
	ret = ret ?: probes(&v);
	ret = ret ?: write_page(&v);
	viewer_free(&v);
	return ret;
}
