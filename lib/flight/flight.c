// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The flight recorder. It works on recordings in progress (OUTPUT.recording: head.dat and
 * a file of pages per CPU, written as they are read) and needs nothing of the recorders
 * but those files:
 *  - every tick, and four times a tick by the trimmer, it notes how long each CPU file
 *    is, so that "the pages written since T" is an offset per file (pages reach the
 *    files at most the recorder's flush interval after their events, so a page written
 *    since T holds every event since T);
 *  - it writes the head of the recordings (a restore's, no page) and runs hgt_why() over
 *    the last window's pages, read where they are in the CPU files (opened(),
 *    hgt__input_cpu_elsewhere()), with each trigger's measure; a delay over a trigger's
 *    length, not seen before, is a trigger;
 *  - --after later, the window around it is written as PREFIX-N.dat and PREFIX-N-NAME.dat
 *    and the delay, found again there, is printed as why explains it;
 *  - pages older than the window, the after time and two ticks (but the page before) are
 *    punched out of the files (fallocate), so the disk holds only that: by a thread of its
 *    own (trimmer()), four times a tick, which waits for no search or save; the lock is
 *    taken where the two meet (the files' sizes and samples, the saves' holds, the
 *    triggers' windows).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include <hgtrace/clock.h>
#include <hgtrace/flight.h>
#include <hgtrace/output.h>
#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "../common/thread.h"
#include "../private/recdir.h"
#include "../private/tracedat.h"
#include "flight-local.h"

#define NS 1000000000ULL

struct sample {
	uint64_t t, size; /* at monotonic time t the file was size bytes (whole pages) */
};

/* A CPU file of a recording: its size over the last ticks, and what was punched out. */
struct cpu_file {
	char *path;
	int fd;
	struct sample *s; /* oldest first */
	int ns, cap;
	uint64_t size, trimmed;
	/* where the searches so far ended (an incremental search starts there), and where
	 * this one ends */
	uint64_t searched, searching;
	int cpu;	   /* the CPU the last search named it */
	bool context;	   /* the last search's pages begin with one from before its window */
	bool read;	   /* the last search read some of its pages: */
	uint64_t from, to; /* these, where they are */
	bool punch_failed; /* said once */
	/* a save has yet to copy the pages from @hold to @hold_end (@hold UINT64_MAX: no
	 * save); those after, up to @mid, are punched out meanwhile (trim_cpu()) */
	uint64_t hold, hold_end, mid;
	/* what the last searches read of it: its records before offset @off are at report
	 * time @last at most (a search of delays starts at one of these) */
	struct reach {
		uint64_t off, last;
	} reach[32];
	int nreach;
};

/* One recording: the host's or a guest's. */
struct member {
	const char *output;
	char *dir;     /* OUTPUT.recording */
	char *name;    /* in the saved files' names: "" (the host), NAME */
	char *snap;    /* where a search writes the head its pages are read with */
	uint32_t page; /* head.dat's page size; 0: not there yet */
	struct cpu_file *f;
	int nf;
};

struct trig_rec {
	struct hgt__hit hit;
	int n;		    /* PREFIX-N */
	uint64_t seen, due; /* monotonic */
	bool saved, explained;
};

struct hgt_flight {
	struct hgt_flight_opts o;
	struct hgt__trigger *t;
	int nt;
	struct member *m;
	int nm;
	char *tmp;    /* our directory for the searches' files */
	char *prefix; /* PREFIX of PREFIX-N.dat */
	char *name;   /* said on every line of the log (opts.name), or NULL */
	pthread_t thread;
	int efd;
	/* the trimmer: its thread, and the lock of what it shares (struct cpu_file's samples,
	 * size, trimmed, hold, hold_end and mid; the members' files; f->tr; search_floor) */
	pthread_t trimmer;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool trimmer_on, trim_stop;
	/* monotonic: a search is reading the pages written since (UINT64_MAX: none) */
	uint64_t search_floor;
	volatile int stop;
	volatile sig_atomic_t manual;
	volatile uint64_t manual_at; /* monotonic: when it was asked for */
	struct hgt__hit *seen;	     /* hits already taken (or held off) */
	int nseen;
	/* the triggers taken, in order; each where it was put (a search during a save
	 * takes more while the save is at one) */
	struct trig_rec **tr;
	int ntr, held, next_n;
	uint64_t last_taken, start, keep, searched_at;
	/* a save's copy paced at this many bytes a second (HGT_FLIGHT_SAVE_MBPS: a slow disk,
	 * for tests; 0: as fast as it goes), and how far it is */
	uint64_t save_bps, save_t0, save_bytes;
	/* each search that much slower (HGT_FLIGHT_SEARCH_MS: a slow disk or machine, for
	 * tests; 0: as it goes) */
	uint64_t search_pad_ns;
	/* the cost, for the summary */
	uint64_t searches, worst_lag, disk_peak;
	uint64_t write_ns;	 /* this tick's searches' writing of their heads */
	uint64_t search_ns;	 /* this tick's searches, that writing included */
	int tick_searches;	 /* how many */
	uint64_t covered;	 /* report time: searched or said unsearched up to here */
	uint64_t unsearched;	 /* report time no search's span held (span_of()) */
	uint64_t spanned_at;	 /* monotonic: the last search that took its span, begun */
	uint64_t last_search_ns; /* how long the last search took */
	uint64_t searched_bytes; /* the pages the searches read */
	uint64_t skipped_bytes;	 /* pages a search left for want of time (search_max_bytes) */
	bool said_cut;		 /* that a search reads only the newest of a window */
	bool incremental;	 /* marker triggers alone: each search reads the pages none read */
	uint64_t resume;      /* report time: a search of delays reads from here (0: the window) */
	int searched_members; /* the recordings with pages when that was said */
	double cpu_s, trim_cpu_s; /* the flight thread's, the trimmer's */
	char last_err[256];
	int ret;
	/* an x86-tsc host recording without TSC2NSEC: the files written get one, the same in
	 * all (perf's, or the rate measured over the first second), so that times are ns and
	 * a delay keeps its times from one search to the next */
	int tsc; /* 0: not known yet, 1: needed, 2: not needed or known */
	uint32_t mult, shift;
	struct hgt_tsc_sample t0;
	bool t0_ok;
};

static void say(struct hgt_flight *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct hgt_flight *f, const char *fmt, ...)
{
	va_list ap;

	if (!f->o.log)
		return;
	va_start(ap, fmt);
	flockfile(f->o.log); /* whole lines, with other recorders on the same log */
	fputs("hgtrace flight: ", f->o.log);
	if (f->name)
		fprintf(f->o.log, "%s: ", f->name);
	vfprintf(f->o.log, fmt, ap);
	fputc('\n', f->o.log);
	fflush(f->o.log);
	funlockfile(f->o.log);
	va_end(ap);
}

static void secs(char *buf, size_t n, uint64_t ns)
{
	snprintf(buf, n, "%.3f s", (double)ns / 1e9);
}

/* ---- the files of a recording, and their sizes over time ---- */

static struct cpu_file *file_of(struct member *m, const char *path)
{
	for (int i = 0; i < m->nf; i++)
		if (!strcmp(m->f[i].path, path))
			return &m->f[i];
	return NULL;
}

static bool cpu_name(const char *n)
{
	size_t d;

	if (strncmp(n, "cpu", 3))
		return false;
	n += 3;
	d = strspn(n, "0123456789");
	if (!d)
		return false;
	n += d;
	return !*n || (*n == '.' && n[1] && n[1 + strspn(n + 1, "0123456789")] == 0);
}

static int add_file(struct member *m, const char *path)
{
	struct cpu_file *n = realloc(m->f, sizeof(*n) * (size_t)(m->nf + 1));

	if (!n)
		return -ENOMEM;
	m->f = n;
	n = &m->f[m->nf];
	memset(n, 0, sizeof(*n));
	n->hold = UINT64_MAX;
	n->path = strdup(path);
	/* written by the recorder; opened to read and to punch out what is old */
	n->fd = n->path ? open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW) : -1;
	if (n->fd < 0) {
		free(n->path);
		return -errno;
	}
	m->nf++;
	return 0;
}

static void note_size(struct cpu_file *c, uint32_t page, uint64_t now)
{
	struct stat st;

	if (fstat(c->fd, &st))
		return;
	c->size = (uint64_t)st.st_size - (uint64_t)st.st_size % page;
	if (c->ns == c->cap) {
		int cap = c->cap ? c->cap * 2 : 16;
		struct sample *s = realloc(c->s, sizeof(*s) * (size_t)cap);

		if (!s)
			return;
		c->s = s;
		c->cap = cap;
	}
	c->s[c->ns++] = (struct sample){ now, c->size };
}

/* Every CPU file's size at @now (f->lock held). */
static void note_sizes(struct hgt_flight *f, uint64_t now)
{
	for (int i = 0; i < f->nm; i++)
		for (int k = 0; k < f->m[i].nf; k++)
			note_size(&f->m[i].f[k], f->m[i].page, now);
}

/* head.dat's page size, once it is there; *@tsc 1 when its times are x86-tsc cycles with
 * no TSC2NSEC, else 2. */
static uint32_t page_size(const char *dir, int *tsc)
{
	HGT_OPTS(hgt_open_opts, oo,
		 .flags = HGT_OPEN_QUIET | HGT_OPEN_NO_PLUGINS | HGT_OPEN_NO_KALLSYMS |
			  HGT_OPEN_HEAD_ONLY);
	char path[4096];
	struct hgt_input *in;
	uint32_t p = 0;

	snprintf(path, sizeof(path), "%s/head.dat", dir);
	if (access(path, F_OK))
		return 0;
	in = hgt_input_open(path, &oo);
	if (in) {
		int top = hgt_input_top_buffer(in);
		const struct hgt_buffer *b = top >= 0 ? hgt_input_buffer(in, top) : NULL;
		uint32_t m, sh;

		p = hgt_input_page_size(in);
		*tsc = b && b->clock && !strcmp(b->clock, "x86-tsc") &&
				       !hgt_input_tsc2nsec(in, &m, &sh, NULL)
			       ? 1
			       : 2;
		hgt_input_close(in);
	}
	return p;
}

/* Each recording's CPU files and their sizes now. */
static void scan(struct hgt_flight *f)
{
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < f->nm; i++) {
		struct member *m = &f->m[i];
		struct dirent *e;
		DIR *dp;

		if (!m->page) {
			int tsc = 2;

			m->page = page_size(m->dir, &tsc);
			if (!i && m->page)
				f->tsc = tsc;
		}
		dp = m->page ? opendir(m->dir) : NULL;
		while (dp && (e = readdir(dp))) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%s", m->dir, e->d_name);
			if (cpu_name(e->d_name) && !file_of(m, path) && add_file(m, path))
				say(f, "%s: cannot be read: %s", path, strerror(errno));
		}
		if (dp)
			closedir(dp);
	}
	/* the time taken under the lock: the trimmer's samples and these stay in order */
	note_sizes(f, hgt__now_ns());
	pthread_mutex_unlock(&f->lock);
}

/* Where file @c was at time @t: its size at the last tick at or before @t (the pages after
 * were written later), never before what was punched out. */
static uint64_t offset_at(const struct cpu_file *c, uint64_t t)
{
	uint64_t off = c->trimmed;

	for (int i = c->ns - 1; i >= 0; i--)
		if (c->s[i].t <= t) {
			off = c->s[i].size;
			break;
		}
	return off > c->trimmed ? off : c->trimmed;
}

/* ---- a recording's pages as a file ---- */

struct range_ctx {
	struct hgt_flight *f;
	struct member *m;
	uint64_t since;	  /* monotonic: the pages written since */
	bool incremental; /* and none an earlier search read */
	uint64_t resume;  /* and from each CPU's first record at or after this (0: all) */
	bool context;	  /* and the page before (a search of delays, has_context()) */
	bool in_place;	  /* read where they are (a search's): none copied */
	uint64_t cap;	  /* the newest this many bytes of a file at most (0: all) */
	uint64_t bytes;	  /* the pages' bytes */
	uint64_t skipped; /* older pages the cap left out that no search read */
	bool cut;	  /* the cap left out some */
};

static int page_range_locked(struct range_ctx *r, struct cpu_file *c, int cpu, uint64_t *from,
			     uint64_t *to)
{
	if (!c) { /* new since the tick: its pages are the next search's */
		*from = *to = UINT64_MAX;
		return 0;
	}
	*from = offset_at(c, r->since);
	if (r->incremental && c->searched > *from)
		*from = c->searched;
	for (int i = 0; r->resume && i < c->nreach; i++)
		if (c->reach[i].last < r->resume && c->reach[i].off > *from)
			*from = c->reach[i].off;
	*to = c->size > *from ? c->size : *from;
	c->cpu = cpu;
	/* with the page before (trim() keeps it): why tells from its last record on when the
	 * CPU's records are all there (a saved window and a marker search need not; after a
	 * cut below, the first page read is the one) */
	c->context = r->context && *from > 0 && *to > *from;
	if (c->context && *from >= c->trimmed + r->m->page)
		*from -= r->m->page;
	if (r->cap && *to - *from > r->cap) { /* a search behind: the newest pages */
		uint64_t cut = *to - r->cap, read = c->searched > *from ? c->searched : *from;

		if (cut > read) /* pages no search read, nor will */
			r->skipped += cut - read;
		r->cut = true;
		*from = cut;
	}
	c->searching = *to;
	c->read = *to > *from;
	r->bytes += *to - *from;
	c->from = *from;
	c->to = *to;
	if (*to == *from || r->in_place) /* nothing: not 0, which would mean all of it */
		*from = *to = UINT64_MAX;
	return 0;
}

static int page_range(void *ctx, const char *name, int cpu, uint64_t *from, uint64_t *to)
{
	struct range_ctx *r = ctx;
	int ret;

	pthread_mutex_lock(&r->f->lock);
	ret = page_range_locked(r, file_of(r->m, name), cpu, from, to);
	pthread_mutex_unlock(&r->f->lock);
	return ret;
}

/* A save's pages of a CPU file: those hold_pages() held for it. */
static int save_range(void *ctx, const char *name, int cpu, uint64_t *from, uint64_t *to)
{
	struct range_ctx *r = ctx;
	struct cpu_file *c = file_of(r->m, name);

	(void)cpu;
	*from = *to = UINT64_MAX; /* none: not 0, which would mean all of it */
	pthread_mutex_lock(&r->f->lock);
	if (c && c->hold != UINT64_MAX && c->hold_end > c->hold) {
		*from = c->hold;
		*to = c->hold_end;
	}
	pthread_mutex_unlock(&r->f->lock);
	return 0;
}

struct mark {
	const struct hgt_flight *f;
	const struct trig_rec *tr; /* NULL: a search's files */
	const char *text;
};

/* TSC2NSEC where the recording lacks it; in a saved window, the trigger: a CPUSTAT line
 * trace-cmd prints as it is. */
static int mark_option(void *ctx, struct hgt_output *out)
{
	const struct mark *k = ctx;
	char line[512];
	int n, ret = 0;

	if (k->f->tsc == 2 && k->f->mult) {
		uint8_t p[16] = { 0 };

		memcpy(p, &k->f->mult, 4);
		memcpy(p + 4, &k->f->shift, 4);
		ret = hgt_output_add_option(out, HGT_OPT_TSC2NSEC, p, sizeof(p));
	}
	if (ret || !k->tr)
		return ret;
	n = snprintf(line, sizeof(line), HGT__FLIGHT_TAG "trigger %d: %s: %llu %llu\n", k->tr->n,
		     k->text, (unsigned long long)k->tr->hit.from_ns,
		     (unsigned long long)k->tr->hit.to_ns);
	return hgt_output_add_option(out, HGT_OPT_CPUSTAT, line, (uint32_t)n);
}

static int save_copied(void *ctx, const char *name, uint64_t upto);

/* Every recording that has begun, its pages written since @since, into @paths[i]; the
 * files written into @out[] (the host's first: a search needs it) and their recordings'
 * indexes into @which[]. Returns how many were written, or -errno. */
static int write_members(struct hgt_flight *f, uint64_t since, char **paths, bool final,
			 const struct mark *k, const char **out, int *which)
{
	/* a search of marker triggers alone needs no page before the ones it has not read */
	bool incremental = !final && f->incremental;
	HGT_OPTS(hgt_convert_opts, co, .version = 7,
		 .compression = final ? HGT_COMPRESS_ZSTD : HGT_COMPRESS_NONE);
	uint64_t skipped = 0;
	bool cut = false;
	int n = 0;

	for (int i = 0; i < f->nm; i++) {
		struct range_ctx rc = {
			.f = f,
			.m = &f->m[i],
			.since = since,
			.incremental = incremental,
			.resume = !final && !incremental ? f->resume : 0,
			.context = !final && !incremental,
			.in_place = !final,
		};
		struct hgt__recdir_range r = { final ? save_range : page_range, &rc,
					       final ? save_copied : NULL, !final };
		int ret;

		for (int j = 0; j < f->m[i].nf; j++) /* page_range() says it of the files it has */
			f->m[i].f[j].context = f->m[i].f[j].read = false;

		if (!f->m[i].page) {
			if (!i)
				return 0;
			continue;
		}
		/* a search reads search_max_bytes at most, shared by the CPU files, whole pages:
		 * its time, and the disk the pages written meanwhile take, stay bounded */
		if (!final && f->m[i].nf) {
			uint64_t share =
				f->o.search_max_bytes / (uint64_t)f->nm / (uint64_t)f->m[i].nf;

			rc.cap = share / f->m[i].page * f->m[i].page ?: f->m[i].page;
		}
		ret = hgt__recdir_snapshot(f->m[i].dir, paths[i], &co, &r, mark_option, (void *)k);
		if (ret)
			return ret;
		if (!final) {
			f->searched_bytes += rc.bytes;
			f->skipped_bytes += rc.skipped;
			skipped += rc.skipped;
			cut |= rc.cut;
		}
		out[n] = paths[i];
		which[n++] = i;
	}
	if (skipped)
		say(f,
		    "behind: %.1f MB of pages went unsearched (a search reads the newest %.1f MB at most)",
		    (double)skipped / 1e6, (double)f->o.search_max_bytes / 1e6);
	else if (cut && !f->said_cut)
		say(f,
		    "the window holds more than a search reads (the newest %.1f MB of pages): a delay longer than those pages span may be missed",
		    (double)f->o.search_max_bytes / 1e6);
	f->said_cut |= cut && !skipped;
	return n;
}

/* ---- triggers ---- */

static const char *trig_text(const struct hgt_flight *f, const struct hgt__hit *h)
{
	return h->trig < 0 ? "by hand" : f->t[h->trig].text;
}

static void describe(const struct hgt_flight *f, const struct hgt__hit *h, char *buf, size_t n)
{
	const char *in = h->input >= 0 && h->input < f->nm ? f->m[h->input].name : "?";
	char at[64];

	if (h->trig < 0) {
		snprintf(buf, n, "by hand");
		return;
	}
	/* report time, as why and report print it */
	snprintf(at, sizeof(at), "%.3f ms, %llu.%09llu -> %llu.%09llu",
		 (double)(h->to_ns - h->from_ns) / 1e6, (unsigned long long)(h->from_ns / NS),
		 (unsigned long long)(h->from_ns % NS), (unsigned long long)(h->to_ns / NS),
		 (unsigned long long)(h->to_ns % NS));
	switch (f->t[h->trig].kind) {
	case HGT__TRIG_MARKER:
		snprintf(buf, n, "%s: \"%s\" by %s-%d on %s%sCPU %d at %llu.%09llu",
			 trig_text(f, h), h->cause, h->comm, h->pid, in, *in ? " " : "", h->cpu,
			 (unsigned long long)(h->from_ns / NS),
			 (unsigned long long)(h->from_ns % NS));
		break;
	case HGT__TRIG_PREEMPT:
	case HGT__TRIG_EXIT:
		snprintf(buf, n, "%s: vCPU %d of %s (thread %d) %s: %s", trig_text(f, h), h->cpu,
			 in, h->pid, h->cause, at);
		break;
	default:
		snprintf(buf, n, "%s: %s-%d on %s CPU %d late: %s; cause: %s", trig_text(f, h),
			 h->comm, h->pid, in, h->cpu, at, h->cause);
	}
}

static int remember(struct hgt_flight *f, const struct hgt__hit *h)
{
	struct hgt__hit *n = realloc(f->seen, sizeof(*n) * (size_t)(f->nseen + 1));

	if (!n)
		return -ENOMEM;
	f->seen = n;
	f->seen[f->nseen++] = *h;
	return 0;
}

/* A hit found by a search: a trigger unless seen before, held off or one too many. */
static void take(struct hgt_flight *f, const struct hgt__hit *h, uint64_t now)
{
	char d[384], after[32];
	struct trig_rec *n, **all;

	for (int i = 0; i < f->nseen; i++)
		if (hgt__hit_same(&f->seen[i], h)) {
			f->seen[i] = *h; /* as seen last (a stretch still growing) */
			return;
		}
	if (h->trig >= 0 && remember(f, h))
		return;
	describe(f, h, d, sizeof(d));
	if (f->ntr >= f->o.max_triggers ||
	    (f->ntr && f->o.holdoff_ns && now - f->last_taken < f->o.holdoff_ns)) {
		f->held++;
		say(f, "not saved (%s): %s",
		    f->ntr >= f->o.max_triggers ? "--max-triggers reached" : "held off", d);
		return;
	}
	if (!(n = calloc(1, sizeof(*n))))
		return;
	n->hit = *h;
	n->seen = now;
	/* the after time, the flush interval for its last pages to reach the files, and a
	 * tick for a flush that runs late (its thread not scheduled at once: a busy host) */
	n->due = now + f->o.after_ns + f->o.flush_ns + f->o.tick_ns;
	pthread_mutex_lock(&f->lock); /* the trimmer keeps its window */
	all = realloc(f->tr, sizeof(*all) * (size_t)(f->ntr + 1));
	if (all) {
		f->tr = all;
		f->tr[f->ntr++] = n;
	}
	pthread_mutex_unlock(&f->lock);
	if (!all) {
		free(n);
		return;
	}
	f->last_taken = now;
	secs(after, sizeof(after), f->o.after_ns);
	say(f, "trigger %d: %s; its window is saved %s after (and the flush and a tick)", f->ntr, d,
	    after);
}

/* ---- one tick ---- */

struct search_ctx {
	const struct hgt_flight *f;
	const int *which; /* the searched files' members */
};

/* Whether CPU @cpu of the search's input @input begins with a page from before the window. */
static bool has_context(void *arg, int input, int cpu)
{
	const struct search_ctx *s = arg;
	const struct member *m = &s->f->m[s->which[input]];

	for (int j = 0; j < m->nf; j++)
		if (m->f[j].context && m->f[j].cpu == cpu)
			return true;
	return false;
}

/* The search's input @input, just opened: its CPUs' pages are in the recording's files. */
static int opened(void *arg, int input, struct hgt_input *in)
{
	const struct search_ctx *s = arg;
	struct member *m = &s->f->m[s->which[input]];
	int ret = 0;

	for (int j = 0; !ret && j < m->nf; j++)
		if (m->f[j].read)
			ret = hgt__input_cpu_elsewhere(in, m->f[j].cpu, m->f[j].fd, m->f[j].path,
						       m->f[j].from, m->f[j].to - m->f[j].from);
	return ret;
}

/* CPU @cpu of the search's input @input has its records up to @last in the pages read. */
static void reached(void *arg, int input, int cpu, uint64_t last)
{
	const struct search_ctx *s = arg;
	struct member *m = &s->f->m[s->which[input]];

	for (int j = 0; last && j < m->nf; j++) {
		struct cpu_file *c = &m->f[j];

		if (!c->read || c->cpu != cpu)
			continue;
		if (c->nreach == (int)(sizeof(c->reach) / sizeof(c->reach[0]))) {
			memmove(c->reach, c->reach + 1, sizeof(c->reach) - sizeof(c->reach[0]));
			c->nreach--;
		}
		c->reach[c->nreach++] = (struct reach){ c->searching, last };
	}
}

/*
 * A search takes the delays that lie in its span (whole_only()): that begin after
 * @live->from and end by @live->upto. A time in no search's span holds delays no search
 * takes: when the spans leave such time between them (searches further apart than the
 * window less the pages' lag, or pages that come later than that), it is said and summed,
 * once.
 */
static void span_of(struct hgt_flight *f, const struct hgt__live *live)
{
	if (!live->upto)
		return;
	if (f->covered && live->from > f->covered) {
		uint64_t gap = live->from - f->covered;

		f->unsearched += gap;
		say(f,
		    "behind: the recording from %llu.%09llu to %llu.%09llu (%.3f s) was in no search's span: a delay there went unsearched (a search's span is its window, %.3f s, less the pages' lag, up to %.3f s)",
		    (unsigned long long)(f->covered / NS), (unsigned long long)(f->covered % NS),
		    (unsigned long long)(live->from / NS), (unsigned long long)(live->from % NS),
		    (double)gap / 1e9, (double)f->o.window_ns / 1e9, (double)live->lag_ns / 1e9);
		f->covered = live->from;
	}
	if (live->upto > f->covered)
		f->covered = live->upto;
}

/* Says it when the trimmer punched out pages a search was reading (it must not: see
 * search_floor): the search read zeros there, and may have missed a delay. */
static void punched_under(struct hgt_flight *f)
{
	int n = 0;

	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < f->nm; i++)
		for (int j = 0; j < f->m[i].nf; j++)
			n += f->m[i].f[j].read && f->m[i].f[j].trimmed > f->m[i].f[j].from;
	pthread_mutex_unlock(&f->lock);
	if (n)
		say(f,
		    "a search's pages were punched out as it read them (%d CPU file%s): a delay there may be missed",
		    n, n == 1 ? "" : "s");
}

/*
 * The pages a search at @now reads: those written since its window and a tick. One later
 * than its window less the pages' lag after the last (a machine too busy, a slow save)
 * would leave time between the two spans, that no search takes a delay in: it reads from
 * where the last one did instead (f->resume skips what that one finished), if the kept
 * span holds those pages until it is done, judging by the last search's time (the
 * trimmer leaves what a search reads: reaching back further, the disk would hold more
 * than the kept span). Else the time between is said (span_of()).
 */
static uint64_t search_since(const struct hgt_flight *f, uint64_t now)
{
	uint64_t back = f->o.window_ns + f->o.tick_ns, since = now - back, last, kept;

	if (!f->spanned_at || f->spanned_at < back || now < f->keep)
		return since;
	last = f->spanned_at - back;
	kept = now - f->keep + f->last_search_ns;
	return last < since && last >= kept ? last : since;
}

static void search(struct hgt_flight *f, uint64_t now, bool final)
{
	char *paths[64];
	const char *in[64];
	int which[64];
	struct hgt__hit *hits = NULL;
	int nr = 0, n, ret, later = 0;
	struct search_ctx sc = { f, which };
	struct hgt__live live = {
		.context = has_context, .reach = reached, .opened = opened, .arg = &sc
	};
	struct mark k = { f, NULL, NULL };
	uint64_t t0 = hgt__now_ns(), since = search_since(f, now);
	struct timespec pad = { .tv_sec = (time_t)(f->search_pad_ns / NS),
				.tv_nsec = (long)(f->search_pad_ns % NS) };

	f->searched_at = now;
	/* the trimmer leaves the pages this search reads where they are (page_range() reads
	 * from a page before those since @since at the earliest, which trim_cpu() keeps) */
	pthread_mutex_lock(&f->lock);
	f->search_floor = since;
	pthread_mutex_unlock(&f->lock);
	for (int i = 0; i < f->nm; i++)
		paths[i] = f->m[i].snap;
	/* a recording new to the searches (a guest's whose pages come after its host's): no
	 * search has read it, so this one reads the window */
	for (int i = 0, ready = 0; i < f->nm; i++)
		if ((ready += !!f->m[i].page) > f->searched_members) {
			f->resume = 0;
			f->searched_members = ready;
		}
	n = write_members(f, since, paths, false, &k, in, which);
	f->write_ns += hgt__now_ns() - t0;
	if (n <= 0) {
		ret = n;
		goto out;
	}
	if (f->search_pad_ns) /* its pages read slowly */
		nanosleep(&pad, NULL);
	/* a CPU's pages reach its file within the flush interval, and are read a tick late
	 * (at the stop, all of them are there when the caller says so) */
	live.lag_ns = final && f->o.complete_at_stop ? 0 : f->o.flush_ns + f->o.tick_ns;
	/* a session's host, its guests' pages not come: why would take it for a guest */
	live.host_alone = f->nm > 1 && n == 1;
	/* a CPU read from its first record after f->resume (page_range()): one whose records
	 * all come before is not read, and another's delay may seem to go on past its end */
	live.read_from = f->incremental ? 0 : f->resume;
	ret = hgt__trigger_search(f->t, f->nt, in, n, &live, &hits, &nr, &later);
	f->searches++;
	punched_under(f);
	if (!ret && !f->incremental)
		span_of(f, &live);
	if (!ret)
		f->spanned_at = now;
	/* the next search reads from the oldest delay open at this one's end, less a tick: a
	 * guest's times may move with its sync from one search to the next */
	if (!f->incremental && !ret)
		f->resume = live.resume > f->o.tick_ns ? live.resume - f->o.tick_ns : 0;
	if (!ret && final && later)
		say(f,
		    "%d delay%s ending in the last %.3f s not taken: some CPU's pages for that time had not come when the recording stopped",
		    later, later > 1 ? "s" : "", (double)(f->o.flush_ns + f->o.tick_ns) / 1e9);
	for (int i = 0; !ret && i < f->nm; i++) /* what the searches have read */
		for (int j = 0; j < f->m[i].nf; j++)
			if (f->m[i].f[j].searching > f->m[i].f[j].searched)
				f->m[i].f[j].searched = f->m[i].f[j].searching;
	for (int i = 0; !ret && i < nr; i++) {
		hits[i].input = hits[i].input >= 0 ? which[hits[i].input] : -1;
		take(f, &hits[i], now);
	}
out:
	pthread_mutex_lock(&f->lock);
	f->search_floor = UINT64_MAX;
	pthread_mutex_unlock(&f->lock);
	f->last_search_ns = hgt__now_ns() - t0;
	f->search_ns += f->last_search_ns;
	f->tick_searches++;
	if (ret && strcmp(f->last_err, hgt_last_error())) {
		snprintf(f->last_err, sizeof(f->last_err), "%s", hgt_last_error());
		say(f, "a search failed: %s", f->last_err);
	} else if (!ret) {
		f->last_err[0] = 0;
	}
	free(hits);
}

static char *saved_name(const struct hgt_flight *f, int n, const struct member *m)
{
	char *p;

	if (!*m->name)
		return asprintf(&p, "%s-%d.dat", f->prefix, n) < 0 ? NULL : p;
	return asprintf(&p, "%s-%d-%s.dat", f->prefix, n, m->name) < 0 ? NULL : p;
}

/* The next N for which no PREFIX-N.dat exists. */
static int free_number(struct hgt_flight *f)
{
	for (;; f->next_n++) {
		char *p = saved_name(f, f->next_n, &f->m[0]);
		bool taken = p && !access(p, F_OK);

		free(p);
		if (!taken)
			return f->next_n++;
	}
}

/* A trigger's window: the pages written since a window, two ticks and a flush interval
 * before the tick that saw it (a delay ends before its last page is written, at most a
 * flush interval before, and is seen at the next tick). */
static uint64_t window_of(const struct hgt_flight *f, uint64_t seen)
{
	return seen - f->o.window_ns - 2 * f->o.tick_ns - f->o.flush_ns;
}

static uint64_t saved_since(const struct hgt_flight *f, const struct trig_rec *tr)
{
	return window_of(f, tr->seen);
}

static bool search_due(struct hgt_flight *f, uint64_t now);

/*
 * While a save goes on: a search once a tick has passed since the last one ended (the
 * trimmer goes on meanwhile: the pages the save has copied may go, those it has yet to
 * copy are held: trim_cpu()). A save can take longer than the window less the pages' lag
 * (a slow disk): without searches meanwhile, the next would find time no search's span
 * held. Not a tick since the last began, as between ticks: a search slower than a tick
 * would then run at every step of the copy, a save taking a search a step (81 searches of
 * 1.8 s in one save, seen); a search later than that reads from where the last one did
 * (search_since()). The save's trigger stays where it is (f->tr holds pointers); no new
 * files are looked for (scan()), so the save's stay as they are (the trimmer's samples
 * keep their sizes new).
 */
static void while_saving(struct hgt_flight *f)
{
	uint64_t now = hgt__now_ns();

	if (now - f->searched_at - f->last_search_ns >= f->o.tick_ns && search_due(f, now))
		search(f, now, false);
}

/* HGT_FLIGHT_SAVE_MBPS: waits until the save's bytes so far took their time at that rate,
 * in steps of a tick at most, a search between when one is due. */
static void pace_save(struct hgt_flight *f)
{
	uint64_t due = f->save_t0 + (uint64_t)((double)f->save_bytes * 1e9 / (double)f->save_bps);

	for (uint64_t now = hgt__now_ns(); now < due; now = hgt__now_ns()) {
		uint64_t step = due - now < f->o.tick_ns ? due - now : f->o.tick_ns;
		struct timespec ts = { .tv_sec = (time_t)(step / NS),
				       .tv_nsec = (long)(step % NS) };

		nanosleep(&ts, NULL);
		while_saving(f);
	}
}

/* A save has copied @name's pages before @upto: they are no longer held. The disk keeps
 * to the kept span however long the save takes (zstd at the trace buffer's full rate
 * takes seconds). */
static int save_copied(void *ctx, const char *name, uint64_t upto)
{
	struct range_ctx *r = ctx;
	struct hgt_flight *f = r->f;
	struct cpu_file *c = file_of(r->m, name);

	pthread_mutex_lock(&f->lock);
	if (c && c->hold != UINT64_MAX && upto > c->hold) {
		f->save_bytes += upto - c->hold;
		c->hold = upto;
	}
	pthread_mutex_unlock(&f->lock);
	while_saving(f);
	if (f->save_bps)
		pace_save(f);
	return 0;
}

/* Holds the pages of every file a save of the pages since @since is to copy, up to where
 * the files were at the tick (or, @hold false, lets them go). */
static void hold_pages(struct hgt_flight *f, bool hold, uint64_t since)
{
	pthread_mutex_lock(&f->lock);
	for (int i = 0; i < f->nm; i++)
		for (int k = 0; k < f->m[i].nf; k++) {
			struct cpu_file *c = &f->m[i].f[k];

			c->hold = hold ? offset_at(c, since) : UINT64_MAX;
			c->hold_end = c->size;
			c->mid = 0;
		}
	pthread_mutex_unlock(&f->lock);
	f->save_t0 = hgt__now_ns();
	f->save_bytes = 0;
}

static void save(struct hgt_flight *f, struct trig_rec *tr)
{
	char *paths[64] = { 0 };
	const char *in[64];
	int which[64];
	struct mark k = { f, tr, trig_text(f, &tr->hit) };
	int n = free_number(f), ret = -ENOMEM;

	pthread_mutex_lock(&f->lock); /* the trimmer no longer keeps its window for it */
	tr->n = n;
	pthread_mutex_unlock(&f->lock);
	for (int i = 0; i < f->nm; i++)
		if (!(paths[i] = saved_name(f, tr->n, &f->m[i])))
			goto out;
	hold_pages(f, true, saved_since(f, tr));
	n = write_members(f, saved_since(f, tr), paths, true, &k, in, which);
	hold_pages(f, false, 0);
	ret = n;
	if (n <= 0)
		goto out;
	if (which[0] == 0 && n > 1 && hgt__mark_whole_span(in[0]))
		say(f, "trigger %d: %s: its span of every CPU not marked: %s", tr->n, in[0],
		    hgt_last_error());
	tr->saved = true;
	say(f, "trigger %d: saved %s%s%s", tr->n, in[0], n > 1 ? " and " : "", n > 1 ? in[1] : "");
	for (int i = 2; i < n; i++)
		say(f, "trigger %d: saved %s", tr->n, in[i]);
	if (tr->hit.trig >= 0) {
		struct hgt__hit h = tr->hit;

		/* the hit's recording as its index among the saved files */
		for (int i = 0; i < n; i++)
			if (which[i] == tr->hit.input)
				h.input = i;
		ret = hgt__trigger_explain(f->t, in, n, &h, f->o.log);
		if (ret == 1) {
			h.input = tr->hit.input;
			tr->hit = h;
		}
		tr->explained = ret == 1;
		if (ret == 0)
			say(f, "trigger %d: its delay is not found again in the saved window",
			    tr->n);
		ret = ret < 0 ? ret : 0;
	}
out:
	if (ret < 0) {
		say(f, "trigger %d: the window cannot be saved: %s", tr->n, hgt_last_error());
		f->ret = ret;
	}
	for (int i = 0; i < f->nm; i++)
		free(paths[i]);
}

/* Punches out @c's bytes from @from to @to; false (said once) where it cannot. */
static bool punch(struct hgt_flight *f, struct cpu_file *c, uint64_t from, uint64_t to)
{
	if (c->punch_failed)
		return false;
	if (!fallocate(c->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)from,
		       (off_t)(to - from)))
		return true;
	c->punch_failed = true;
	say(f, "%s: old pages cannot be freed (%s): the disk holds all of it", c->path,
	    strerror(errno));
	return false;
}

/* Frees @c's pages before @before but the one before them (a search's first: see
 * has_context()) and those a save holds, keeps the samples the next trims need, and
 * returns its bytes on disk before. */
static uint64_t trim_cpu(struct hgt_flight *f, struct cpu_file *c, uint64_t page, uint64_t before,
			 bool trimming)
{
	uint64_t to = offset_at(c, before), head, disk;
	struct stat st;
	int drop = 0;

	to = to >= page ? to - page : 0;
	head = to < c->hold ? to : c->hold;
	/* the disk the file took before this trim: the most it held since the last */
	disk = fstat(c->fd, &st) ? 0 : (uint64_t)st.st_blocks * 512;
	if (trimming && head > c->trimmed && punch(f, c, c->trimmed, head))
		c->trimmed = head;
	/* a save going on: the pages after its window, older than the kept span, go too */
	if (trimming && c->hold != UINT64_MAX) {
		uint64_t from = c->hold_end > c->mid ? c->hold_end : c->mid;

		if (to > from && punch(f, c, from, to))
			c->mid = to;
	}
	/* the samples the next trims need: the last at or before now - keep */
	while (trimming && drop + 1 < c->ns && c->s[drop + 1].t <= before)
		drop++;
	memmove(c->s, c->s + drop, sizeof(*c->s) * (size_t)(c->ns - drop));
	c->ns -= drop;
	return disk;
}

/* Punch out the pages no trigger can want any more: older than the window, the after
 * time, two ticks and 2 s, than every window still to be saved, and than the pages a
 * search is reading (f->lock held). */
static void trim(struct hgt_flight *f, uint64_t now)
{
	uint64_t disk = 0, before = now - f->keep;
	bool trimming = now - f->start >= f->keep;

	if (f->search_floor < before)
		before = f->search_floor;
	for (int i = 0; i < f->ntr; i++)
		if (!f->tr[i]->n && saved_since(f, f->tr[i]) < before)
			before = saved_since(f, f->tr[i]);
	/* a window asked for by hand, not taken yet (the tick takes it after its search) */
	if (f->manual && f->manual_at && window_of(f, f->manual_at) < before)
		before = window_of(f, f->manual_at);
	for (int i = 0; i < f->nm; i++)
		for (int k = 0; k < f->m[i].nf; k++)
			disk += trim_cpu(f, &f->m[i].f[k], f->m[i].page, before, trimming);
	if (disk > f->disk_peak)
		f->disk_peak = disk;
}

/* The CPU time of the calling thread so far, in seconds. */
static double thread_cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* The thread that trims, four times a tick, from the start to the stop: the files' sizes
 * now, then trim(). A sample at most a quarter tick before the kept span's start is where
 * the trim ends, so the disk holds the kept span and half a tick at most (and the time
 * this thread waits for the lock: a file's samples, a save's holds), whatever a search or
 * a save takes. */
static void *trimmer(void *arg)
{
	struct hgt_flight *f = arg;
	uint64_t step = f->o.tick_ns / 4 ? f->o.tick_ns / 4 : 1, next = hgt__now_ns() + step;

	pthread_mutex_lock(&f->lock);
	while (!f->trim_stop) {
		uint64_t now = hgt__now_ns();
		struct timespec ts = { .tv_sec = (time_t)(next / NS),
				       .tv_nsec = (long)(next % NS) };

		if (now < next) {
			pthread_cond_timedwait(&f->wake, &f->lock, &ts);
			continue;
		}
		note_sizes(f, now);
		trim(f, now);
		next = now + step;
	}
	pthread_mutex_unlock(&f->lock);
	f->trim_cpu_s = thread_cpu_s();
	return NULL;
}

/* The oldest hits have left the window long ago: they cannot be found again. */
static void forget_old_hits(struct hgt_flight *f)
{
	if (f->nseen > 4096) {
		memmove(f->seen, f->seen + 2048, sizeof(*f->seen) * (size_t)(f->nseen - 2048));
		f->nseen -= 2048;
	}
}

/* A test's knob from the environment: @name's value times @scale, 0 when unset or not a
 * number above 0. */
static uint64_t test_knob(const char *name, double scale)
{
	const char *e = getenv(name);
	char *end;
	double v = e ? strtod(e, &end) : 0;

	return e && end != e && !*end && v > 0 && v < 1e6 ? (uint64_t)(v * scale) : 0;
}

/* The TSC rate the files get, when the host's recording needs one: the kernel's, else
 * measured from the start over at least a second. Returns false until it is known. */
static bool rate_known(struct hgt_flight *f)
{
	struct hgt_tsc_sample t1;
	double ppm = 0;

	if (f->tsc != 1)
		return f->tsc == 2;
	if (!hgt_tsc2nsec_read(&f->mult, &f->shift) && f->mult) {
		say(f, "times in ns: the kernel's TSC2NSEC (mult %u shift %u) in the files written",
		    f->mult, f->shift);
	} else {
		f->mult = 0;
		if (!f->t0_ok || hgt_tsc_sample_read(&t1) || t1.ns - f->t0.ns < NS)
			return false;
		if (hgt_tsc2nsec_measure(&f->t0, &t1, &f->mult, &f->shift, &ppm) || !f->mult) {
			say(f, "times in TSC cycles: no rate (%s)", hgt_last_error());
			f->mult = 0;
		} else {
			say(f,
			    "times in ns: the TSC rate measured over %.3f s, +-%.2f ppm (TSC2NSEC mult %u shift %u in the files written)",
			    (double)(t1.ns - f->t0.ns) / 1e9, ppm, f->mult, f->shift);
		}
	}
	f->tsc = 2;
	return true;
}

/* Whether a search is due before the next tick: the last began a tick ago or more. */
static bool search_due(struct hgt_flight *f, uint64_t now)
{
	return now - f->searched_at >= f->o.tick_ns && rate_known(f);
}

/* A search now, if one is due (the saves of this tick took a tick or more). */
static void search_again(struct hgt_flight *f)
{
	uint64_t now = hgt__now_ns();

	if (!search_due(f, now))
		return;
	scan(f);
	search(f, now, false);
}

/* The saves due by @now (at the stop, @final: all), oldest trigger first. */
static void save_due(struct hgt_flight *f, uint64_t now, bool final)
{
	for (int i = 0, saves = 0; i < f->ntr; i++) {
		if (f->tr[i]->saved || f->tr[i]->n || (!final && f->tr[i]->due > now))
			continue;
		/* saves that take ticks: a search between them, or the one after would find
		 * the pages of a window ago gone from its span */
		if (saves++ && !final)
			search_again(f);
		save(f, f->tr[i]);
	}
}

/* When the next save is due (UINT64_MAX: none is to be saved). */
static uint64_t next_due(const struct hgt_flight *f)
{
	uint64_t due = UINT64_MAX;

	for (int i = 0; i < f->ntr; i++)
		if (!f->tr[i]->saved && !f->tr[i]->n && f->tr[i]->due < due)
			due = f->tr[i]->due;
	return due;
}

static void tick(struct hgt_flight *f, bool final)
{
	uint64_t now = hgt__now_ns(), took;

	scan(f);
	forget_old_hits(f);
	f->search_ns = f->write_ns = 0;
	f->tick_searches = 0;
	if (rate_known(f) || final)
		search(f, now, final);
	if (f->manual) {
		struct hgt__hit h = { .trig = -1, .kind = HGT__TRIG_MANUAL, .pid = -1, .cpu = -1 };

		f->manual = 0;
		take(f, &h, f->manual_at ? f->manual_at : now);
	}
	save_due(f, now, final);
	took = hgt__now_ns() - now;
	if (took > f->o.tick_ns && took - f->o.tick_ns > f->worst_lag) {
		char a[32], b[32];

		secs(a, sizeof(a), took);
		secs(b, sizeof(b), f->o.tick_ns);
		say(f,
		    "behind: a tick took %s (%d search%s: %.3f s, %.3f s of it writing heads; the rest saving windows), ticks are %s apart",
		    a, f->tick_searches, f->tick_searches == 1 ? "" : "es",
		    (double)f->search_ns / 1e9, (double)f->write_ns / 1e9, b);
		f->worst_lag = took - f->o.tick_ns;
	}
}

static void *flight_main(void *arg)
{
	struct hgt_flight *f = arg;
	uint64_t next = hgt__now_ns() + f->o.tick_ns;

	/* the files there already, sampled from the start: the trimmer frees a page once a
	 * sample after it is older than the kept span, a tick sooner than the first tick's */
	scan(f); /* before the first tick */
	while (!f->stop) {
		/* a tick early when a save is due: the trimmer holds a window until it is saved,
		 * and one due is as old as the kept span */
		uint64_t now = hgt__now_ns(), due = next_due(f), at = due < next ? due : next;
		struct pollfd p = { .fd = f->efd, .events = POLLIN };
		uint64_t v;

		if (now < at && !f->manual) {
			if (poll(&p, 1, (int)((at - now) / 1000000 + 1)) > 0 &&
			    read(f->efd, &v, sizeof(v)) < 0)
				continue;
			if (f->stop || (hgt__now_ns() < at && !f->manual))
				continue;
		}
		now = hgt__now_ns();
		tick(f, false);
		/* a tick apart, from start to start; right away after a tick that took longer (a
		 * slow search, a save) */
		next = now + f->o.tick_ns > hgt__now_ns() ? now + f->o.tick_ns : hgt__now_ns();
	}
	tick(f, true);
	f->cpu_s = thread_cpu_s();
	return NULL;
}

/* ---- the handle ---- */

static char *default_prefix(const char *host)
{
	const char *slash = strrchr(host, '/');
	char *p;

	if (!slash)
		return strdup("flight");
	return asprintf(&p, "%.*s/flight", (int)(slash - host), host) < 0 ? NULL : p;
}

/* A guest's NAME in the saved files: BASE-NAME.dat's NAME, else its file name. */
static char *member_name(const char *host, const char *out)
{
	size_t hn = strlen(host), n;
	const char *base = strrchr(out, '/');

	if (hn > 4 && !strcmp(host + hn - 4, ".dat"))
		hn -= 4;
	if (!strncmp(out, host, hn) && out[hn] == '-')
		base = out + hn + 1;
	else
		base = base ? base + 1 : out;
	n = strlen(base);
	if (n > 4 && !strcmp(base + n - 4, ".dat"))
		n -= 4;
	return strndup(base, n);
}

static int setup_members(struct hgt_flight *f)
{
	f->m = calloc((size_t)f->o.nr_outputs, sizeof(*f->m));
	if (!f->m)
		return -ENOMEM;
	for (int i = 0; i < f->o.nr_outputs; i++) {
		struct member *m = &f->m[i];

		f->nm++;
		m->output = f->o.outputs[i];
		m->dir = hgt__recdir_path(m->output);
		m->name = i ? member_name(f->o.outputs[0], m->output) : strdup("");
		if (!m->dir || !m->name || asprintf(&m->snap, "%s/%d.dat", f->tmp, i) < 0
			    ? (m->snap = NULL, 1)
			    : 0)
			return -ENOMEM;
	}
	return 0;
}

static void stop_trimmer(struct hgt_flight *f)
{
	if (!f->trimmer_on)
		return;
	pthread_mutex_lock(&f->lock);
	f->trim_stop = true;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
	hgt__thread_join(f->trimmer);
	f->trimmer_on = false;
}

static void flight_free(struct hgt_flight *f)
{
	stop_trimmer(f);
	for (int i = 0; i < f->nm; i++) {
		struct member *m = &f->m[i];

		for (int k = 0; k < m->nf; k++) {
			close(m->f[k].fd);
			free(m->f[k].path);
			free(m->f[k].s);
		}
		free(m->f);
		if (m->snap)
			unlink(m->snap);
		free(m->snap);
		free(m->dir);
		free(m->name);
	}
	if (f->tmp)
		rmdir(f->tmp);
	for (int i = 0; i < f->nt; i++)
		hgt__trigger_free(&f->t[i]);
	if (f->efd >= 0)
		close(f->efd);
	free(f->t);
	free(f->m);
	free(f->tmp);
	free(f->prefix);
	free(f->name);
	free(f->seen);
	for (int i = 0; i < f->ntr; i++)
		free(f->tr[i]);
	free(f->tr);
	pthread_cond_destroy(&f->wake);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* Trigger @t can fire: a delay or stretch is found only when it lies whole in the window
 * a search reads, so one as long as the window never is. */
static int trigger_fits(const struct hgt_flight_opts *o, const struct hgt__trigger *t)
{
	if (t->kind == HGT__TRIG_MARKER || t->dur_ns < o->window_ns)
		return 0;
	return hgt__errorf(
		EINVAL,
		"trigger '%s': not shorter than the window (%.3f s): a delay that long is never whole in the window searched",
		t->text, (double)o->window_ns / 1e9);
}

/* @opts into @f->o with their defaults, checked; the outputs too unless @outputs_too is
 * false. */
static int check_opts(struct hgt_flight *f, const struct hgt_flight_opts *opts, bool outputs_too)
{
	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(f->o))
		return -EINVAL;
	memcpy(&f->o, opts, opts->sz);
	if (outputs_too && (f->o.nr_outputs < 1 || f->o.nr_outputs > 64 || !f->o.outputs))
		return hgt__errorf(EINVAL, "flight: 1 to 64 recordings (the host's first)");
	if (f->o.nr_triggers < 0 || (f->o.nr_triggers && !f->o.triggers))
		return hgt__errorf(EINVAL, "flight: bad triggers");
	if (!f->o.window_ns)
		f->o.window_ns = 10 * NS;
	if (!f->o.tick_ns)
		f->o.tick_ns = NS;
	if (!f->o.max_triggers)
		f->o.max_triggers = 10;
	if (!f->o.flush_ns)
		f->o.flush_ns = NS;
	if (!f->o.search_max_bytes)
		f->o.search_max_bytes = 256ULL << 20;
	if (f->o.window_ns > 3600 * NS || f->o.after_ns > 3600 * NS || f->o.tick_ns > 60 * NS ||
	    f->o.tick_ns < NS / 100 || f->o.max_triggers < 0 || f->o.flush_ns > 3600 * NS ||
	    f->o.search_max_bytes > (1ULL << 40))
		return hgt__errorf(
			EINVAL,
			"flight: a window and an after time of at most an hour, a tick of 10 ms to 60 s");
	return 0;
}

/**
 * hgt_flight_start - the flight recorder's thread on @opts->outputs.
 */
struct hgt_flight *hgt_flight_start(const struct hgt_flight_opts *opts)
{
	struct hgt_flight *f = calloc(1, sizeof(*f));
	int ret;

	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	f->efd = -1;
	f->next_n = 1;
	f->search_floor = UINT64_MAX;
	pthread_mutex_init(&f->lock, NULL);
	{
		pthread_condattr_t a;

		pthread_condattr_init(&a);
		pthread_condattr_setclock(&a, CLOCK_MONOTONIC); /* hgt__now_ns()'s */
		pthread_cond_init(&f->wake, &a);
		pthread_condattr_destroy(&a);
	}
	f->t0_ok = !hgt_tsc_sample_read(&f->t0);
	ret = check_opts(f, opts, true);
	if (!ret && !(f->t = calloc((size_t)f->o.nr_triggers + 1, sizeof(*f->t))))
		ret = -ENOMEM;
	for (int i = 0; !ret && i < f->o.nr_triggers; i++) {
		ret = hgt__trigger_parse(f->o.triggers[i], &f->t[i]);
		f->nt += !ret;
		ret = ret ?: trigger_fits(&f->o, &f->t[i]);
	}
	/* a marker is one record: found in the pages it lies in, none before them needed */
	f->incremental = f->nt > 0;
	for (int i = 0; i < f->nt; i++)
		f->incremental &= f->t[i].kind == HGT__TRIG_MARKER;
	if (!ret) {
		const char *host = f->o.outputs[0];

		f->prefix = f->o.prefix ? strdup(f->o.prefix) : default_prefix(host);
		f->name = f->o.name ? strdup(f->o.name) : NULL;
		f->o.name = f->name;
		/* the searches' files: a directory of ours beside the host's output */
		if (asprintf(&f->tmp, "%.*s.flight-XXXXXX", (int)strlen(host), host) < 0)
			f->tmp = NULL;
		if (!f->prefix || !f->tmp)
			ret = -ENOMEM;
		else if (!mkdtemp(f->tmp)) {
			ret = hgt__errorf(errno, "%s: cannot create: %s", f->tmp, strerror(errno));
			free(f->tmp);
			f->tmp = NULL;
		}
	}
	if (!ret)
		ret = setup_members(f);
	f->efd = ret ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!ret && f->efd < 0)
		ret = -errno;
	f->keep = f->o.window_ns + f->o.after_ns + f->o.flush_ns + 2 * f->o.tick_ns + 2 * NS;
	f->save_bps = test_knob("HGT_FLIGHT_SAVE_MBPS", 1e6); /* bytes a second */
	f->search_pad_ns = test_knob("HGT_FLIGHT_SEARCH_MS", 1e6);
	f->start = hgt__now_ns();
	if (!ret) {
		/* the format guard's helper forked while this thread may still fork it */
		hgt__formats_helper_start();
		ret = -hgt__thread_create(&f->trimmer, trimmer, f);
		f->trimmer_on = !ret;
		ret = ret ?: -hgt__thread_create(&f->thread, flight_main, f);
		if (ret)
			hgt__errorf(-ret, "flight: no thread: %s", strerror(-ret));
	}
	if (ret) {
		flight_free(f);
		errno = -ret;
		return NULL;
	}
	{
		char w[32], a[32], k[32];

		secs(w, sizeof(w), f->o.window_ns);
		secs(a, sizeof(a), f->o.after_ns);
		secs(k, sizeof(k), f->keep);
		say(f,
		    "keeping the last %s of pages on disk (window %s, after %s, flush %.3f s, 2 ticks of %.3f s and 2 s), %d trigger%s, at most %d saved",
		    k, w, a, (double)f->o.flush_ns / 1e9, (double)f->o.tick_ns / 1e9, f->nt,
		    f->nt == 1 ? "" : "s", f->o.max_triggers);
	}
	return f;
}

void hgt_flight_trigger(struct hgt_flight *f)
{
	uint64_t one = 1;

	if (!f)
		return;
	f->manual_at = hgt__now_ns();
	f->manual = 1;
	if (write(f->efd, &one, sizeof(one)) < 0) {
		/* the flag alone: the next tick takes it */
	}
}

static void summary(struct hgt_flight *f)
{
	uint64_t ran = hgt__now_ns() - f->start, recorded = 0;
	double cpu = f->cpu_s + f->trim_cpu_s;

	/* every page the files got, the last ones no tick saw too */
	for (int i = 0; i < f->nm; i++)
		for (int k = 0; k < f->m[i].nf; k++) {
			struct stat st;

			recorded += !fstat(f->m[i].f[k].fd, &st) ? (uint64_t)st.st_size
								 : f->m[i].f[k].size;
		}

	say(f, "%d trigger%s saved, %d not saved (held off or over --max-triggers)", f->ntr,
	    f->ntr == 1 ? "" : "s", f->held);
	for (int i = 0; i < f->ntr; i++) {
		const struct trig_rec *t = f->tr[i];
		char d[384];

		describe(f, &t->hit, d, sizeof(d));
		say(f, "  %d: %s%s", t->n, d, t->saved ? "" : " (not saved)");
	}
	say(f,
	    "cost: %llu searches, %.3f s of CPU in %.1f s (%.1f %% of one CPU), worst lag %.3f s, %.3f s unsearched, at most %.1f MB of pages on disk, %.1f MB of pages searched of %.1f MB recorded, %.1f MB left unsearched behind (%s)",
	    (unsigned long long)f->searches, cpu, (double)ran / 1e9,
	    ran ? 100.0 * cpu * 1e9 / (double)ran : 0.0, (double)f->worst_lag / 1e9,
	    (double)f->unsearched / 1e9, (double)f->disk_peak / 1e6,
	    (double)f->searched_bytes / 1e6, (double)recorded / 1e6, (double)f->skipped_bytes / 1e6,
	    f->incremental ? "each page once: marker triggers alone"
			   : "from the oldest delay still open at the last search's end");
}

int hgt_flight_stop(struct hgt_flight *f)
{
	uint64_t one = 1;
	int ret;

	if (!f)
		return -EINVAL;
	f->stop = 1;
	if (write(f->efd, &one, sizeof(one)) < 0) {
		/* the thread polls with a timeout of a tick */
	}
	hgt__thread_join(f->thread);
	stop_trimmer(f);
	summary(f);
	ret = f->ret;
	flight_free(f);
	return ret;
}

int hgt_flight_parse_trigger(const char *text)
{
	struct hgt__trigger t;
	int ret = text ? hgt__trigger_parse(text, &t) : -EINVAL;

	if (!ret)
		hgt__trigger_free(&t);
	return ret;
}

int hgt_flight_check_opts(const struct hgt_flight_opts *opts)
{
	struct hgt_flight f;
	int ret;

	memset(&f, 0, sizeof(f));
	ret = check_opts(&f, opts, false);
	for (int i = 0; !ret && i < f.o.nr_triggers; i++) {
		struct hgt__trigger t;

		ret = f.o.triggers[i] ? hgt__trigger_parse(f.o.triggers[i], &t) : -EINVAL;
		if (!ret) {
			ret = trigger_fits(&f.o, &t);
			hgt__trigger_free(&t);
		}
	}
	return ret;
}
