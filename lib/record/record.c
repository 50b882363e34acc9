// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * hgtrace record: this machine's ftrace into a trace.dat, through libtracefs.
 *
 * Setup happens in a tracefs instance (private by default), never in the top-level one, and
 * every setting changed is put back at the end. Per CPU, a thread moves whole pages from
 * trace_pipe_raw into the CPU's file with splice (pages.c: every byte counted until the
 * destination took it), or read/write with --no-splice or where the splice is refused,
 * and the partial page too before its oldest event is flush_ms old; at stop, tracing is
 * switched off and each thread drains the rest, the partial page last. The files live in
 * OUTPUT.recording (recdir.c) with the metadata written before tracing starts, so that a
 * kill loses at most flush_ms of pages; a normal stop turns them into the trace.dat.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <tracefs.h>

#include <hgtrace/clock.h>
#include <hgtrace/output.h>
#include <hgtrace/peer.h>
#include <hgtrace/record.h>

#include "../clock/clock-local.h"
#include "../common/common-local.h"
#include "../common/thread.h"
#include "../private/tracedat.h"
#include "pages.h"
#include "record-local.h"

struct ev {
	char *system;
	char *name;
	char *old_enable;   /* the enable file's content before us */
	const char *filter; /* -f: the kernel's filter for it (NULL: none) */
	char *old_filter;   /* the filter file's content before us */
};

struct cpu_reader {
	struct hgt_recorder *rec;
	int cpu;
	int fd; /* the CPU's file in the recording directory, or the caller's */
	struct tracefs_cpu *tcpu;
	int pfd;	 /* the CPU's trace_pipe_raw again, to poll (libtracefs hides its fd) */
	bool poll_ready; /* the last poll said ready, and no whole page has come since */
	pthread_t thread;
	bool started;
	bool ran; /* started once (started is cleared at the join) */
	int err;
	uint64_t bytes;
	char *buf;		      /* one page: --no-splice, and the partial page of a flush */
	struct hgt__partial_clock pc; /* when the partial page is due */
	/* the file system full (ENOSPC, EDQUOT): pages are lost until space returns */
	bool own_file; /* fd is its file in the recording directory, only its pages */
	bool copy;     /* read/write from now on (--no-splice, or a splice refused) */
	bool map;      /* from the ring buffer's mapping (rm), not by splice (pm) */
	struct hgt__ringmap rm;
	struct hgt__pages pm; /* the splice: what it holds goes before anything else */
	bool dst_full;	      /* the last move found no room in the destination */
	int full_err;	      /* set while storing fails; 0 once it works again */
	int full_err_seen;    /* the last such error, for the summary */
	uint64_t full_ms;     /* when it began */
	unsigned int fulls;   /* how many times */
	int pend;	      /* bytes in buf the full disk refused: written first */
	/* since the last sleep for want of a whole page: its start (ns), the bytes moved */
	uint64_t nap_from, moved;
};

/* A tracefs file of the instance, saved to be restored. */
struct saved {
	const char *file;
	char *value;
};

struct hgt_recorder {
	struct hgt_record_opts o;
	struct tracefs_instance *inst;
	bool created; /* we created the instance: destroy it at the end */
	struct ev *evs;
	int nr_evs;
	struct saved saved[6];
	int nr_saved;
	int nr_cpus;
	struct cpu_reader *r;
	volatile int stop;
	unsigned int stall_ms; /* at stop, how long a reader's destination may take nothing */
	int wake_fd;	       /* an eventfd, readable from the stop on: the readers' and keeper's
				  waits end at once (-1: they end at their timeouts) */
	char *clock;
	struct hgt_record_cpu *res;
	uint64_t trace_id;
	bool own_fds;	       /* the per-CPU files are ours (the recording's), not the caller's */
	unsigned int flush_us; /* a reader with no whole page sleeps this long */
	uint64_t flush_ms;     /* a partial page is written after this long */
	uint64_t ring_bytes;   /* each CPU's ring buffer (0: not known) */
	struct hgt__recdir rd; /* own files: OUTPUT.recording */
	bool traced;	       /* tracing was switched on: the directory holds a recording */
	bool finished;	       /* the output was written and the directory removed */
	pthread_t keeper;      /* own files: cmdlines (and fsync) every flush interval */
	bool keeper_started;
	bool tsc2nsec; /* -C tsc2nsec: x86-tsc recorded, TSC2NSEC stored */
	uint32_t mult, shift;
	struct hgt_tsc_sample rate0; /* -C x86-tsc: TSC and CLOCK_MONOTONIC_RAW at the start */
};

/* Read a whole file into a new NUL-terminated buffer. */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 65536, n = 0;
	char *buf;

	if (fd < 0)
		return NULL;
	buf = malloc(cap + 1);
	while (buf) {
		ssize_t r;

		if (n == cap) {
			char *b = realloc(buf, 2 * cap + 1);

			if (!b) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = b;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			buf = NULL;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf) {
		buf[n] = 0;
		if (len)
			*len = n;
	}
	return buf;
}

static char *tracing_path(const char *rel)
{
	const char *dir = tracefs_tracing_dir();
	size_t n = strlen(dir) + strlen(rel) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, rel);
	return p;
}

static bool event_exists(const char *system, const char *name)
{
	char rel[512];
	char *p;
	bool ok;

	snprintf(rel, sizeof(rel), "events/%s/%s/format", system, name);
	p = tracing_path(rel);
	ok = p && access(p, R_OK) == 0;
	free(p);
	return ok;
}

static int add_ev(struct hgt_recorder *r, const char *system, const char *name, const char *filter)
{
	struct ev *n;
	int i;

	for (i = 0; i < r->nr_evs; i++)
		if (!strcmp(r->evs[i].system, system) && !strcmp(r->evs[i].name, name)) {
			if (filter)
				r->evs[i].filter = filter; /* the last one given */
			return 0;
		}
	n = realloc(r->evs, sizeof(*n) * (size_t)(r->nr_evs + 1));
	if (!n)
		return -ENOMEM;
	r->evs = n;
	n[r->nr_evs].system = strdup(system);
	n[r->nr_evs].name = strdup(name);
	n[r->nr_evs].old_enable = NULL;
	n[r->nr_evs].filter = filter;
	n[r->nr_evs].old_filter = NULL;
	if (!n[r->nr_evs].system || !n[r->nr_evs].name)
		return -ENOMEM;
	r->nr_evs++;
	return 0;
}

/* "sched", "sched:sched_switch" or "sched/sched_switch" into the event list. */
static int parse_events(struct hgt_recorder *r)
{
	int i, k, ret;

	for (i = 0; i < r->o.nr_events; i++) {
		char buf[256], *sep, *sys = buf, *name;
		const char *filter = r->o.filters ? r->o.filters[i] : NULL;

		snprintf(buf, sizeof(buf), "%s", r->o.events[i]);
		sep = strpbrk(buf, ":/");
		name = sep ? sep + 1 : NULL;
		if (sep)
			*sep = 0;
		if (!hgt__valid_name(sys) || (name && !hgt__valid_name(name)))
			return hgt__errorf(EINVAL,
					   "record: -e '%s': expected SYSTEM or SYSTEM:EVENT",
					   r->o.events[i]);
		if (name) {
			if (!event_exists(sys, name))
				return hgt__errorf(ENOENT, "record: -e '%s': no such event in %s",
						   r->o.events[i], tracefs_tracing_dir());
			ret = add_ev(r, sys, name, filter);
		} else {
			char **evs = tracefs_system_events(NULL, sys);

			if (!evs || !evs[0]) {
				tracefs_list_free(evs);
				return hgt__errorf(ENOENT,
						   "record: -e '%s': no such event system in %s",
						   sys, tracefs_tracing_dir());
			}
			for (ret = 0, k = 0; !ret && evs[k]; k++)
				ret = add_ev(r, sys, evs[k], filter);
			tracefs_list_free(evs);
		}
		if (ret)
			return ret;
	}
	return 0; /* no events: trace_marker writes only */
}

/* A file of the instance ("" for an empty one, NULL when it cannot be read). */
static char *inst_read(struct hgt_recorder *r, const char *file)
{
	char *path = tracefs_instance_get_file(r->inst, file);
	char *v = path ? slurp(path, NULL) : NULL;

	tracefs_put_tracing_file(path);
	return v;
}

/* Save @file then write @value to it. */
static int set_saved(struct hgt_recorder *r, const char *file, const char *value)
{
	struct saved *s = &r->saved[r->nr_saved];

	s->file = file;
	s->value = inst_read(r, file);
	if (!s->value)
		return hgt__errorf(errno ? errno : EIO, "record: cannot read %s of instance %s",
				   file, tracefs_instance_get_name(r->inst));
	r->nr_saved++;
	if (tracefs_instance_file_write(r->inst, file, value) < 0)
		return hgt__errorf(errno ? errno : EINVAL,
				   "record: instance %s: writing '%s' to %s was refused",
				   tracefs_instance_get_name(r->inst), value, file);
	return 0;
}

/* The selected clock: the [bracketed] word of trace_clock. */
static char *selected_clock(const char *trace_clock)
{
	const char *o = trace_clock ? strchr(trace_clock, '[') : NULL;
	const char *c = o ? strchr(o, ']') : NULL;

	return c ? strndup(o + 1, (size_t)(c - o - 1)) : strdup("local");
}

/* Whether CPU @i's reader spliced pages into a caller's channel (a pipe or not): only
 * those stay the ring buffer's (copied pages and the channel's header do not). */
static bool spliced(const struct hgt_recorder *r, int i)
{
	return r->r && !r->own_fds && r->r[i].fd >= 0 && r->r[i].bytes && !r->o.no_splice &&
	       !r->r[i].map;
}

/* The first of the caller's pipes that still holds bytes after pages were spliced into it
 * (its CPU, -1: none), and how many. */
static int unread_pipe(const struct hgt_recorder *r, long *bytes)
{
	for (int i = 0; r->r && i < r->nr_cpus; i++)
		if (spliced(r, i) && (*bytes = hgt__pipe_unread(r->r[i].fd)) > 0)
			return i;
	return -1;
}

/*
 * A page spliced out of trace_pipe_raw into a pipe stays the ring buffer's until a reader
 * takes it, and its release calls back into that ring buffer: the instance removed before,
 * the read touches freed memory (a kernel oops in ring_buffer_free_read_page(), the
 * reader dead holding the pipe's lock and every later opener of it stuck). While a pipe
 * holds some, the instance stays (its note names the pipes: hgt__instance_reap() leaves
 * it until they are read or closed). Returns whether it was kept.
 */
static bool keep_for_pipes(struct hgt_recorder *r)
{
	long bytes = 0;
	int cpu = unread_pipe(r, &bytes);

	if (cpu < 0 || !r->created)
		return false;
	if (r->o.log)
		fprintf(r->o.log,
			"hgtrace record: instance %s kept: %ld bytes of cpu %d's pages wait unread in its pipe (removed before they are read, the kernel would crash reading them); 'hgtrace reset' removes it once they are read\n",
			tracefs_instance_get_name(r->inst), bytes, cpu);
	tracefs_instance_free(r->inst);
	r->inst = NULL;
	return true;
}

static void restore(struct hgt_recorder *r)
{
	int i;

	if (!r->inst)
		return;
	tracefs_trace_off(r->inst);
	if (keep_for_pipes(r))
		return;
	/* an instance of our own goes whole: nothing to put back first (resizing its ring to
	 * the size it had took 15 ms of a 16 MB one's stop), unless it cannot be removed */
	if (r->created && !tracefs_instance_destroy(r->inst)) {
		for (i = 0; i < r->nr_saved; i++)
			free(r->saved[i].value);
		r->nr_saved = 0;
		hgt__instance_unregister(tracefs_instance_get_name(r->inst));
		tracefs_instance_free(r->inst);
		r->inst = NULL;
		return;
	}
	for (i = 0; i < r->nr_evs; i++) {
		char rel[512];

		if (r->evs[i].old_filter) {
			/* "none" is how the kernel shows no filter; "0" clears one */
			snprintf(rel, sizeof(rel), "events/%s/%s/filter", r->evs[i].system,
				 r->evs[i].name);
			tracefs_instance_file_write(r->inst, rel,
						    strncmp(r->evs[i].old_filter, "none", 4)
							    ? r->evs[i].old_filter
							    : "0");
		}
		if (!r->evs[i].old_enable)
			continue;
		snprintf(rel, sizeof(rel), "events/%s/%s/enable", r->evs[i].system, r->evs[i].name);
		tracefs_instance_file_write(r->inst, rel, r->evs[i].old_enable);
	}
	for (i = r->nr_saved - 1; i >= 0; i--) {
		char *v = r->saved[i].value;
		size_t n = strlen(v);

		/* trace_clock lists every clock with the selected one in brackets */
		if (!strcmp(r->saved[i].file, "trace_clock")) {
			char *c = selected_clock(v);

			if (c)
				tracefs_instance_file_write(r->inst, "trace_clock", c);
			free(c);
		} else {
			while (n && v[n - 1] == '\n')
				v[--n] = 0;
			tracefs_instance_file_write(r->inst, r->saved[i].file, *v ? v : "\n");
		}
		free(v);
	}
	r->nr_saved = 0;
	/* never silently: an instance left behind keeps tracing (issue: stale state) */
	if (r->created && tracefs_instance_destroy(r->inst)) {
		if (r->o.log)
			fprintf(r->o.log,
				"hgtrace record: WARNING: instance %s could not be removed: %s\n",
				tracefs_instance_get_name(r->inst), strerror(errno));
	} else if (r->created) {
		hgt__instance_unregister(tracefs_instance_get_name(r->inst));
	}
	tracefs_instance_free(r->inst);
	r->inst = NULL;
}

static bool no_space(int e)
{
	return e == ENOSPC || e == EDQUOT;
}

/* Write the @n bytes read into c->buf. When the disk is full they stay there (c->pend),
 * to be written before anything else is read: the ring buffer keeps the rest, and counts
 * what it cannot keep. Returns @n, 0, or -1 (errno). */
static int put_page(struct cpu_reader *c, int n)
{
	int e = n > 0 ? -hgt__write_full(c->fd, c->buf, (size_t)n) : 0;

	if (!e)
		return n;
	if (no_space(e))
		c->pend = n;
	errno = e;
	return -1;
}

/* The bytes taken from the ring buffer that the destination has not taken yet. */
static size_t held(const struct cpu_reader *c)
{
	return c->map ? hgt__ringmap_held(&c->rm) : hgt__pages_held(&c->pm);
}

/* Move what is ready from the ring buffer to the CPU's file: from its mapping (one copy),
 * with splice (no copy, a new page for the ring), or through c->buf with read/write
 * (--no-splice). Returns bytes moved, 0, or -1 (errno). */
static int move_pages(struct cpu_reader *c)
{
	ssize_t n;

	c->dst_full = false;
	if (c->map) {
		n = hgt__ringmap_move(&c->rm);
		c->dst_full = n < 0 && errno == EAGAIN;
		return (int)n;
	}
	if (!c->copy) {
		n = hgt__pages_move(&c->pm);
		if (n >= 0 || errno == EAGAIN) {
			c->dst_full = n < 0;
			return (int)n;
		}
		if (errno != EINVAL)
			return -1;
		/* a destination that refuses splice: read/write from now on, what the splice
		 * holds first */
		c->copy = true;
	}
	if (hgt__pages_held(&c->pm))
		return put_page(c, (int)hgt__pages_read_held(
					   &c->pm, c->buf, (size_t)tracefs_cpu_read_size(c->tcpu)));
	return put_page(c, tracefs_cpu_read(c->tcpu, c->buf, false));
}

/* At stop: the partial page (whatever the splice held went before it). */
static int flush_pages(struct cpu_reader *c)
{
	int n;

	if (c->map) {
		n = (int)hgt__ringmap_partial(&c->rm);
		c->dst_full = n < 0 && errno == EAGAIN;
		return n;
	}
	n = tracefs_cpu_flush(c->tcpu, c->buf);

	return n > 0 ? put_page(c, n) : n;
}

/* The partial page, before its oldest event can be flush_ms old: read() takes the events
 * out of the page the kernel is writing. Called when the last move found no whole page.
 * Returns bytes written, 0, or -1. */
static int flush_partial(struct cpu_reader *c, uint64_t now)
{
	int n;

	/* never past what the splice still holds (it goes first); a full destination is no
	 * sign of an idle ring */
	if (!c->rec->flush_ms || c->dst_full || held(c))
		return 0;
	hgt__partial_idle(&c->pc, now);
	if (!hgt__partial_due(&c->pc, now, c->rec->flush_ms, c->rec->flush_us / 1000))
		return 0;
	hgt__partial_flushed(&c->pc, now);
	if (c->map) {
		n = (int)hgt__ringmap_partial(&c->rm);
		return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : n;
	}
	n = tracefs_cpu_read(c->tcpu, c->buf, true);
	if (n <= 0)
		return errno == EAGAIN || errno == EINTR || !n ? 0 : -1;
	return put_page(c, n);
}

static void stored(struct cpu_reader *c);

/* The page a full disk refused, again. Returns 1 when it is stored (or there was none),
 * 0 while there is still no space, -1 on another error (errno). */
static int put_pending(struct cpu_reader *c)
{
	int n = c->pend;

	if (!n)
		return 1;
	c->pend = 0;
	if (put_page(c, n) < 0)
		return no_space(errno) ? 0 : -1;
	c->bytes += (uint64_t)n;
	hgt__partial_whole(&c->pc);
	stored(c);
	return 1;
}

/*
 * Storing pages failed for want of space: said at once (not as a ring-buffer overrun at
 * the end), the file cut back to whole pages (a short write may have left part of one),
 * and the reader goes on: the pages the ring buffer keeps meanwhile are stored once space
 * returns, the others are lost and counted.
 */
static void store_failed(struct cpu_reader *c, int e)
{
	struct hgt_recorder *r = c->rec;
	long page = sysconf(_SC_PAGESIZE);
	/* a splice counts what it stored and holds the rest, to go on from: only a copy's
	 * short write leaves part of a page it will write again whole */
	off_t end = c->own_file && c->copy ? lseek(c->fd, 0, SEEK_END) : -1;

	if (end >= 0 && page > 0 && end % page) {
		end -= end % page;
		if (!ftruncate(c->fd, end))
			lseek(c->fd, end, SEEK_SET);
	}
	if (end >= 0) /* a short write stored part of what it was not counted for */
		c->bytes = (uint64_t)end;
	if (c->full_err)
		return;
	c->full_err = c->full_err_seen = e;
	c->full_ms = hgt__now_ms();
	c->fulls++;
	if (r->o.log)
		fprintf(r->o.log,
			"hgtrace record: CPU %d: cannot store its pages: %s; its events are lost until there is space again\n",
			c->cpu, strerror(e));
}

static void stored(struct cpu_reader *c)
{
	if (!c->full_err)
		return;
	if (c->rec->o.log)
		fprintf(c->rec->o.log,
			"hgtrace record: CPU %d: storing its pages again after %.1f s without space\n",
			c->cpu, (double)(hgt__now_ms() - c->full_ms) / 1000.0);
	c->full_err = 0;
}

/*
 * How long a reader sleeps for want of a whole page. Idle, flush_us (a streaming reader's
 * non-blocking splice has nothing to wait in: 50 ms, 20 wakeups a second). When pages
 * came since its last sleep, a quarter of the time its ring would take to fill at that
 * rate, at least 1 ms: a fixed 200 ms let a writer of 170 MB/s overwrite more than half
 * of a 16 MB ring.
 */
static unsigned int nap_us(struct cpu_reader *c)
{
	uint64_t now = hgt__now_ns(), el_us = (now - c->nap_from) / 1000, us = c->rec->flush_us;

	if (c->moved && c->rec->ring_bytes && el_us) {
		uint64_t quarter = c->rec->ring_bytes * el_us / c->moved / 4;

		if (quarter < us)
			us = quarter > 1000 ? quarter : 1000;
	}
	c->nap_from = now;
	c->moved = 0;
	return (unsigned int)us;
}

/* At stop, room in a destination that has none: a wait of up to 100 ms. False once it has
 * taken nothing for the recorder's stall limit since *@since (ms, 0: it took some just
 * now), said. */
static bool wait_room(struct cpu_reader *c, uint64_t *since)
{
	struct pollfd p = { .fd = c->fd, .events = POLLOUT };
	uint64_t now = hgt__now_ms();

	if (!*since)
		*since = now;
	if (now - *since >= c->rec->stall_ms) {
		if (c->rec->o.log)
			fprintf(c->rec->o.log,
				"hgtrace record: CPU %d: %zu bytes of its pages not delivered: their reader took nothing for %u ms\n",
				c->cpu, held(c), c->rec->stall_ms);
		return false;
	}
	poll(&p, 1, 100);
	return true;
}

/* At stop, what the ring buffer holds: what the splice holds and the whole pages as while
 * recording (spliced, many a call: read() would take one page a call, 4,000 for a full
 * 16 MB ring), then the partial page. */
static void drain(struct cpu_reader *c)
{
	uint64_t stalled = 0;
	bool whole = true;

	for (;;) {
		int n = put_pending(c);

		if (n > 0)
			n = whole ? move_pages(c) : flush_pages(c);
		else
			n = -1;
		if (n > 0) {
			c->bytes += (uint64_t)n;
			stalled = 0;
			continue;
		}
		if (n < 0 && c->dst_full) {
			if (wait_room(c, &stalled))
				continue;
			break;
		}
		if (n < 0 && no_space(errno))
			store_failed(c, errno);
		else if (whole && (!n || errno == EAGAIN || errno == EINTR)) {
			whole = false; /* none left: the partial page */
			continue;
		}
		break;
	}
}

/*
 * Wait for a whole page: poll() until the ring is buffer_percent full (1 %, set at start:
 * a burst wakes the reader at once, where a sleep let a 1 GB/s writer overwrite a 16 MB
 * ring), or nap_us() at most, for the partial page's flush and the stop. A poll that said
 * ready with no whole page to take (a kernel whose poll ignores buffer_percent) is followed
 * by a plain sleep, so that the reader cannot spin.
 */
static void wait_pages(struct cpu_reader *c)
{
	unsigned int us = nap_us(c);
	struct pollfd p[2] = { { .fd = c->rec->wake_fd, .events = POLLIN },
			       { .fd = c->pfd, .events = POLLIN } };
	int n = c->pfd < 0 || c->poll_ready ? 1 : 2;
	bool ready;

	if (c->dst_full) { /* no room in the destination: until there is */
		p[1] = (struct pollfd){ .fd = c->fd, .events = POLLOUT };
		poll(p, 2, (int)((us + 999) / 1000));
		return;
	}
	if (held(c)) /* storing failed (the disk full): a plain sleep */
		n = 1;
	c->poll_ready = false;
	if (c->rec->wake_fd < 0 && n == 1) {
		usleep(us);
		return;
	}
	/* the wake fd (the stop) at index 0, or -1 and ignored by poll() */
	ready = poll(p, (nfds_t)n, (int)((us + 999) / 1000)) > 0;
	c->poll_ready = ready && n == 2 && (p[1].revents & POLLIN);
}

static void *reader_main(void *arg)
{
	struct cpu_reader *c = arg;
	struct hgt_recorder *r = c->rec;
	int size = tracefs_cpu_read_size(c->tcpu);

	c->buf = malloc(size > 0 ? (size_t)size : 4096);
	if (!c->buf) {
		c->err = ENOMEM;
		return NULL;
	}
	hgt__partial_start(&c->pc, hgt__now_ms());
	c->nap_from = hgt__now_ns();
	while (!r->stop) {
		int n = put_pending(c);

		if (n <= 0) {
			if (n < 0 && !r->stop) {
				c->err = errno ? errno : EIO;
				break;
			}
			store_failed(c, errno);
			usleep(r->flush_us);
			continue;
		}
		n = move_pages(c);
		if (n > 0) {
			c->poll_ready = false;
			c->bytes += (uint64_t)n;
			c->moved += (uint64_t)n;
			hgt__partial_whole(&c->pc);
			stored(c);
			continue;
		}
		if (n < 0 && no_space(errno)) {
			store_failed(c, errno);
		} else if (n < 0 && errno != EINTR && errno != EAGAIN && !r->stop) {
			c->err = errno ? errno : EIO;
			break;
		}
		n = flush_partial(c, hgt__now_ms());
		if (n > 0) {
			c->bytes += (uint64_t)n;
			stored(c);
		}
		if (n < 0 && no_space(errno)) {
			store_failed(c, errno);
		} else if (n < 0 && !r->stop) {
			c->err = errno ? errno : EIO;
			break;
		}
		/* No whole page yet. A non-blocking splice() reports that at once (0 or EAGAIN):
		 * wait instead of asking again, or the reader spins. */
		if (!r->stop)
			wait_pages(c);
	}
	drain(c);
	hgt__pages_free(&c->pm);
	if (c->map)
		hgt__ringmap_free(&c->rm);
	free(c->buf);
	c->buf = NULL;
	return NULL;
}

static bool cpu_in_mask(const char *mask, int cpu)
{
	size_t len;
	int digit, bit;
	char ch;
	int v;

	if (!mask)
		return true;
	if (!strncmp(mask, "0x", 2) || !strncmp(mask, "0X", 2))
		mask += 2;
	len = strlen(mask);
	digit = cpu / 4;
	bit = cpu % 4;
	if ((size_t)digit >= len)
		return false;
	ch = mask[len - 1 - (size_t)digit];
	v = ch >= '0' && ch <= '9'   ? ch - '0'
	    : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
	    : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
				     : 0;
	return (v >> bit) & 1;
}

static int write_head(struct hgt_recorder *r);
static void *keeper_main(void *arg);

struct hgt_recorder *hgt_record_start(const struct hgt_record_opts *opts)
{
	if (!opts || !opts->output) {
		errno = EINVAL;
		return NULL;
	}
	return hgt__record_start(opts, NULL, NULL, NULL);
}

/* The options that can be checked before tracefs is touched. Returns 0 or -errno. */
static int check_opts(const struct hgt_recorder *r)
{
	const char *v;

	if (!tracefs_tracing_dir())
		return hgt__errorf(
			ENODEV,
			"record: tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)");
	if (r->o.cpumask) {
		for (v = r->o.cpumask + (strncmp(r->o.cpumask, "0x", 2) ? 0 : 2); *v; v++)
			if (!strchr("0123456789abcdefABCDEF", *v))
				return hgt__errorf(EINVAL,
						   "record: -M '%s': expected a hex CPU mask",
						   r->o.cpumask);
	}
	if (r->o.instance && !hgt__valid_name(r->o.instance))
		return hgt__errorf(EINVAL, "record: -B '%s': not a valid instance name",
				   r->o.instance);
	return 0;
}

/* The output's directory (a file recorder) and the tracefs instance. Returns 0 or -errno. */
static int make_instance(struct hgt_recorder *r)
{
	char name[64];
	const char *inst = r->o.instance ? r->o.instance : name;
	int ret;

	snprintf(name, sizeof(name), "hgtrace-%d", (int)getpid());
	if (r->own_fds) {
		/* where this one goes, then instances earlier recorders left behind */
		ret = hgt__recdir_create(&r->rd, r->o.output, inst);
		if (ret)
			return ret;
		hgt_record_reset(r->o.log);
	}
	r->created = !tracefs_instance_exists(inst);
	r->inst = tracefs_instance_create(inst);
	if (!r->inst)
		return hgt__errorf(errno ? errno : EIO, "record: cannot create tracefs instance %s",
				   inst);
	if (r->created)
		hgt__instance_register(tracefs_instance_get_name(r->inst));
	return 0;
}

/* -C: the instance's clock (tsc2nsec: the TSC, with the kernel's ns conversion stored). */
static int set_clock(struct hgt_recorder *r)
{
	if (!r->o.clock)
		return 0;
	if (strcmp(r->o.clock, "tsc2nsec"))
		return set_saved(r, "trace_clock", r->o.clock);
	if (hgt_tsc2nsec_read(&r->mult, &r->shift))
		return hgt__errorf(
			EOPNOTSUPP,
			"record: -C tsc2nsec: TSC to nanosecond is not supported here: %s",
			hgt_last_error());
	r->tsc2nsec = true;
	return set_saved(r, "trace_clock", "x86-tsc");
}

/* The instance's settings from the options (each saved, to restore), then the clock it
 * has. Returns 0 or -errno. */
static int configure_instance(struct hgt_recorder *r)
{
	int ret = set_saved(r, "tracing_on", "0");
	char *v;

	if (!ret)
		ret = set_clock(r);
	if (!ret && r->o.buffer_kb) {
		char kb[32];

		snprintf(kb, sizeof(kb), "%zu", r->o.buffer_kb);
		ret = set_saved(r, "buffer_size_kb", kb);
	}
	if (!ret && r->o.nr_pids) {
		char pids[4096];
		int n = 0;

		for (int i = 0; i < r->o.nr_pids && n < (int)sizeof(pids) - 16; i++)
			n += snprintf(pids + n, sizeof(pids) - (size_t)n, "%d ", r->o.pids[i]);
		ret = set_saved(r, "set_event_pid", pids);
	}
	if (!ret && r->o.cpumask)
		ret = set_saved(r, "tracing_cpumask", r->o.cpumask);
	/* a reader's poll() returns once 1 % of the ring is written: a burst is taken from
	 * its start, and a partial page alone does not wake it */
	if (!ret && tracefs_file_exists(r->inst, "buffer_percent"))
		ret = set_saved(r, "buffer_percent", "1");
	if (ret)
		return ret;
	r->clock = selected_clock(v = inst_read(r, "trace_clock"));
	free(v);
	/* "N", or the top instance's "N (expanded: M)" before its first use */
	v = inst_read(r, "buffer_size_kb");
	if (v) {
		const char *x = strstr(v, "expanded:");

		r->ring_bytes = strtoull(x ? x + 9 : v, NULL, 10) * 1024;
	}
	free(v);
	return 0;
}

/* Enable the events (their old state kept), then empty the ring buffer. */
static int enable_events(struct hgt_recorder *r)
{
	for (int i = 0; i < r->nr_evs; i++) {
		char rel[512];

		if (r->evs[i].filter) {
			snprintf(rel, sizeof(rel), "events/%s/%s/filter", r->evs[i].system,
				 r->evs[i].name);
			r->evs[i].old_filter = inst_read(r, rel);
			if (tracefs_instance_file_write(r->inst, rel, r->evs[i].filter) < 0)
				return hgt__errorf(
					errno ? errno : EINVAL,
					"record: -f '%s': the kernel refused it as a filter of %s:%s",
					r->evs[i].filter, r->evs[i].system, r->evs[i].name);
		}
		snprintf(rel, sizeof(rel), "events/%s/%s/enable", r->evs[i].system, r->evs[i].name);
		r->evs[i].old_enable = inst_read(r, rel);
		if (tracefs_instance_file_write(r->inst, rel, "1") < 0)
			return hgt__errorf(errno ? errno : EIO, "record: cannot enable %s:%s",
					   r->evs[i].system, r->evs[i].name);
	}
	tracefs_instance_file_write(r->inst, "trace", "\n");
	return 0;
}

/* The CPU's trace_pipe_raw files: open, they keep the instance busy. */
static void close_cpu(struct cpu_reader *c)
{
	if (c->tcpu)
		tracefs_cpu_close(c->tcpu);
	c->tcpu = NULL;
	if (c->pfd >= 0)
		close(c->pfd);
	c->pfd = -1;
}

/* One reader thread per CPU of the mask, writing to @cpu_fds or the recording's files. */
static int start_readers(struct hgt_recorder *r, const int *cpu_fds)
{
	int i;

	r->nr_cpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	r->r = calloc((size_t)r->nr_cpus, sizeof(*r->r));
	r->res = calloc((size_t)r->nr_cpus, sizeof(*r->res));
	if (!r->r || !r->res)
		return -ENOMEM;
	for (i = 0; i < r->nr_cpus; i++) {
		r->r[i].fd = r->r[i].pfd = -1;
		r->r[i].pm.pipe[0] = r->r[i].pm.pipe[1] = -1;
	}
	for (i = 0; i < r->nr_cpus; i++) {
		struct cpu_reader *c = &r->r[i];

		c->rec = r;
		c->cpu = i;
		if (!cpu_in_mask(r->o.cpumask, i))
			continue;
		c->fd = cpu_fds ? cpu_fds[i] : hgt__recdir_file(&r->rd, i, 0);
		c->own_file = !cpu_fds;
		if (c->fd < 0)
			return c->fd;
		if (cpu_fds && r->created)
			hgt__instance_note_pipe(tracefs_instance_get_name(r->inst), c->fd);
		/* Non-blocking: with buffer_percent 0 a blocking splice of a ring holding only
		 * a partial page loops inside the kernel (6.1: wait_on_pipe(0) returns at once,
		 * no full page, again), a whole CPU per reader; and a blocking one waits for
		 * half a buffer, which a file recorder cannot wait for (a kill would lose it).
		 * Non-blocking it returns EAGAIN and the reader sleeps. */
		c->tcpu = tracefs_cpu_open(r->inst, i, true);
		if (c->tcpu) {
			char rel[64];

			/* without it the reader sleeps instead of polling */
			snprintf(rel, sizeof(rel), "per_cpu/cpu%d/trace_pipe_raw", i);
			c->pfd = tracefs_instance_file_open(r->inst, rel, O_RDONLY | O_NONBLOCK);
		}
		if (!c->tcpu)
			return hgt__errorf(errno ? errno : EIO,
					   "record: cpu %d: cannot open trace_pipe_raw: %s", i,
					   strerror(errno ? errno : EIO));
		/* the mapping and the splice use the polled file: without it, read/write */
		c->copy = r->o.no_splice || c->pfd < 0;
		c->map = !c->copy && r->o.mmap &&
			 !hgt__ringmap_init(&c->rm, c->pfd, c->fd,
					    (size_t)tracefs_cpu_read_size(c->tcpu));
		if (!c->copy && !c->map)
			c->copy = hgt__pages_init(&c->pm, c->pfd, c->fd) != 0;
		if (hgt__thread_create(&c->thread, reader_main, c))
			return hgt__errorf(EAGAIN, "record: cannot start the reader of cpu %d", i);
		c->started = c->ran = true;
	}
	return 0;
}

/* Switch tracing on (the file recorder's metadata written first), then what runs beside
 * it: the TSC rate's first sample, the keeper. */
static int switch_on(struct hgt_recorder *r)
{
	int ret;

	/* the metadata reaches the disk before the first page */
	if (r->own_fds) {
		ret = write_head(r);
		if (ret)
			return ret;
	}
	if (tracefs_trace_on(r->inst) < 0)
		return hgt__errorf(errno ? errno : EIO, "record: cannot switch tracing on");
	r->traced = true;
	/* -C x86-tsc: the rate is measured from here to the end (the report shows cycles, as
	 * trace-cmd's; why, view and export show ns) */
	if (r->o.clock && !strcmp(r->o.clock, "x86-tsc") && hgt_tsc_sample_read(&r->rate0))
		r->rate0.tsc = 0;
	if (r->own_fds && !hgt__thread_create(&r->keeper, keeper_main, r))
		r->keeper_started = true;
	if (r->o.log)
		fprintf(r->o.log,
			"hgtrace record: %d event types enabled, clock %s, instance %s, %d CPUs\n",
			r->nr_evs, r->clock ? r->clock : "?", tracefs_instance_get_name(r->inst),
			r->nr_cpus);
	return 0;
}

/* A new recorder's state from @opts, before anything is touched. */
static struct hgt_recorder *recorder_new(const struct hgt_record_opts *opts, const int *cpu_fds)
{
	struct hgt_recorder *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	memcpy(&r->o, opts, opts->sz);
	r->trace_id = hgt_trace_id_generate();
	r->own_fds = !cpu_fds;
	r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* streaming readers hand pages on at most this late when idle (sooner as pages come:
	 * nap_us()); a file recorder's blocking reads wait in the kernel for half a buffer
	 * and rarely get here */
	r->flush_us = cpu_fds ? 50000 : 10000;
	r->stall_ms = 30000;
	/* and a partial page goes out (to the file, or the agent's host) after this long */
	r->flush_ms = r->o.flush_ms ? r->o.flush_ms : 1000;
	if (r->flush_us > r->flush_ms * 1000 / 4)
		r->flush_us = (unsigned int)(r->flush_ms * 1000 / 4);
	return r;
}

/**
 * hgt__record_start - hgt_record_start(), with the per-CPU pages going to @cpu_fds (one
 * per CPU, owned by the caller) instead of temporary files when given, and @before_on
 * called before tracing is switched on (the agent describes the recording there, so its
 * one-time work stays out of the trace).
 */
struct hgt_recorder *hgt__record_start(const struct hgt_record_opts *opts, const int *cpu_fds,
				       int (*before_on)(void *ctx, struct hgt_recorder *r),
				       void *ctx)
{
	struct hgt_recorder *r;
	int ret;

	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(r->o)) {
		errno = EINVAL;
		return NULL;
	}
	/* the recording is made a trace.dat here, after its reader threads started: the
	 * format guard's helper is forked before them (formats.c) */
	if (!cpu_fds)
		hgt__formats_helper_start();
	r = recorder_new(opts, cpu_fds);
	if (!r)
		return NULL;
	ret = check_opts(r);
	if (!ret)
		ret = parse_events(r);
	if (!ret)
		ret = make_instance(r);
	if (!ret)
		ret = configure_instance(r);
	if (!ret)
		ret = enable_events(r);
	if (!ret)
		ret = start_readers(r, cpu_fds);
	if (!ret && before_on)
		ret = before_on(ctx, r);
	if (!ret)
		ret = switch_on(r);
	if (!ret)
		return r;
	r->stop = 1;
	for (int i = 0; r->r && i < r->nr_cpus; i++)
		if (r->r[i].tcpu)
			tracefs_cpu_stop(r->r[i].tcpu);
	hgt_record_free(r);
	errno = -ret;
	return NULL;
}

/* Metadata items and options of the output. */
static int write_meta(struct hgt_recorder *r, const struct hgt__meta_sink *out, bool cmdlines_only)
{
	struct hgt__blob b = { 0 };
	char *text, rel[600];
	size_t len;
	int ret = 0, i, k;
	const char *items[2] = { "header_page", "header_event" };

	for (i = cmdlines_only ? 2 : 0; !ret && i < 2; i++) {
		snprintf(rel, sizeof(rel), "events/%s", items[i]);
		text = tracing_path(rel);
		char *t = text ? slurp(text, &len) : NULL;

		free(text);
		if (!t)
			return hgt__errorf(EIO, "record: cannot read %s", rel);
		ret = hgt__blob_put(&b, items[i], strlen(items[i]) + 1);
		if (!ret)
			ret = hgt__blob_item(&b, t, len, 8);
		free(t);
	}
	if (!ret && !cmdlines_only)
		ret = out->meta(out->ctx, HGT_OPT_HEADER_INFO, b.p, b.len);

	/* every ftrace event format, as trace-cmd stores them */
	if (!ret && !cmdlines_only) {
		char **fev = tracefs_system_events(NULL, "ftrace");
		uint32_t n = 0;

		b.len = 0;
		for (k = 0; fev && fev[k]; k++)
			n++;
		ret = hgt__blob_put(&b, &n, 4);
		for (k = 0; !ret && fev && fev[k]; k++) {
			char *path, *t;

			snprintf(rel, sizeof(rel), "events/ftrace/%s/format", fev[k]);
			path = tracing_path(rel);
			t = path ? slurp(path, &len) : NULL;
			free(path);
			ret = t ? hgt__blob_item(&b, t, len, 8)
				: hgt__errorf(EIO, "record: %s", rel);
			free(t);
		}
		tracefs_list_free(fev);
		if (!ret)
			ret = out->meta(out->ctx, HGT_OPT_FTRACE_EVENTS, b.p, b.len);
	}
	/* formats of the recorded events, by system */
	if (!ret && !cmdlines_only) {
		uint32_t systems = 0;

		b.len = 0;
		for (i = 0; i < r->nr_evs; i++) {
			for (k = 0; k < i; k++)
				if (!strcmp(r->evs[k].system, r->evs[i].system))
					break;
			systems += k == i;
		}
		ret = hgt__blob_put(&b, &systems, 4);
		for (i = 0; !ret && i < r->nr_evs; i++) {
			uint32_t count = 0;

			for (k = 0; k < i; k++)
				if (!strcmp(r->evs[k].system, r->evs[i].system))
					break;
			if (k < i)
				continue; /* system done */
			for (k = i; k < r->nr_evs; k++)
				count += !strcmp(r->evs[k].system, r->evs[i].system);
			ret = hgt__blob_put(&b, r->evs[i].system, strlen(r->evs[i].system) + 1);
			if (!ret)
				ret = hgt__blob_put(&b, &count, 4);
			for (k = i; !ret && k < r->nr_evs; k++) {
				char *path, *t;

				if (strcmp(r->evs[k].system, r->evs[i].system))
					continue;
				snprintf(rel, sizeof(rel), "events/%s/%s/format", r->evs[k].system,
					 r->evs[k].name);
				path = tracing_path(rel);
				t = path ? slurp(path, &len) : NULL;
				free(path);
				ret = t ? hgt__blob_item(&b, t, len, 8)
					: hgt__errorf(EIO, "record: cannot read %s", rel);
				free(t);
			}
		}
		if (!ret)
			ret = out->meta(out->ctx, HGT_OPT_EVENT_FORMATS, b.p, b.len);
	}
	/* kallsyms, printk formats, saved cmdlines */
	if (!ret) {
		const struct {
			unsigned int id;
			const char *path;
			int size_bytes;
		} items2[] = {
			{ HGT_OPT_KALLSYMS, "/proc/kallsyms", 4 },
			{ HGT_OPT_PRINTK, "printk_formats", 4 },
			{ HGT_OPT_CMDLINES, "saved_cmdlines", 8 },
		};

		for (i = cmdlines_only ? 2 : 0; !ret && i < 3; i++) {
			char *path = items2[i].path[0] == '/' ? strdup(items2[i].path)
							      : tracing_path(items2[i].path);
			char *t = path ? slurp(path, &len) : NULL;

			free(path);
			if (!t) {
				t = strdup("");
				len = 0;
			}
			b.len = 0;
			ret = t ? hgt__blob_item(&b, t, len, items2[i].size_bytes) : -ENOMEM;
			free(t);
			if (!ret)
				ret = out->meta(out->ctx, items2[i].id, b.p, b.len);
		}
	}
	free(b.p);
	return ret;
}

/* One CPUSTAT per CPU: "CPU: N\n" + the stats file. */
static int put_stats(const struct hgt__meta_sink *out, const char *stats)
{
	const char *p = stats;
	int ret = 0;

	while (p && !ret && *p) {
		const char *e = strstr(p + 1, "CPU: ");

		if (!e)
			e = p + strlen(p);
		ret = out->option(out->ctx, HGT_OPT_CPUSTAT, p, (uint32_t)(e - p));
		p = e;
	}
	return ret;
}

static int write_options(struct hgt_recorder *r, const struct hgt__meta_sink *out,
			 const char *stats)
{
	char *clocks = inst_read(r, "trace_clock");
	struct utsname u;
	char uname_s[512];
	uint64_t id = r->trace_id;
	int ret = 0;

	if (clocks)
		ret = out->option(out->ctx, HGT_OPT_TRACECLOCK, clocks,
				  (uint32_t)strlen(clocks) + 1);
	free(clocks);
	if (!ret && !uname(&u)) {
		snprintf(uname_s, sizeof(uname_s), "%s %s %s %s", u.sysname, u.nodename, u.release,
			 u.machine);
		ret = out->option(out->ctx, HGT_OPT_UNAME, uname_s, (uint32_t)strlen(uname_s) + 1);
	}
	if (!ret)
		ret = out->option(out->ctx, HGT_OPT_VERSION, "hgtrace " HGT__VERSION,
				  (uint32_t)strlen("hgtrace " HGT__VERSION) + 1);
	if (!ret)
		ret = out->option(out->ctx, HGT_OPT_TRACEID, &id, 8);
	if (!ret && r->tsc2nsec) {
		uint8_t t[16] = { 0 };

		memcpy(t, &r->mult, 4);
		memcpy(t + 4, &r->shift, 4);
		ret = out->option(out->ctx, HGT_OPT_TSC2NSEC, t, sizeof(t));
	}
	if (!ret)
		ret = put_stats(out, stats);
	return ret;
}

/* The kernel's per-CPU statistics ("CPU: N\n" + stats each), and the counts we report. */
static char *read_stats(struct hgt_recorder *r)
{
	char *all = NULL;
	size_t len = 0;
	int i;

	for (i = 0; i < r->nr_cpus; i++) {
		char rel[64], *s, *n;
		size_t sl;

		snprintf(rel, sizeof(rel), "per_cpu/cpu%d/stats", i);
		s = inst_read(r, rel);
		if (!s)
			continue;
		sl = strlen(s);
		n = realloc(all, len + sl + 32);
		if (!n) {
			free(s);
			break;
		}
		all = n;
		len += (size_t)sprintf(all + len, "CPU: %d\n%s", i, s);
		{
			const char *p;

			if ((p = strstr(s, "overrun: ")))
				r->res[i].overrun = strtoull(p + 9, NULL, 10);
			if ((p = strstr(s, "dropped events: ")))
				r->res[i].dropped = strtoull(p + 16, NULL, 10);
			if ((p = strstr(s, "read events: ")))
				r->res[i].read_events = strtoull(p + 13, NULL, 10);
		}
		free(s);
	}
	return all;
}

/**
 * hgt__record_halt - tracing off, readers drained and joined; the per-CPU counts filled.
 */
int hgt__record_halt(struct hgt_recorder *r)
{
	int i, ret = 0;

	tracefs_trace_off(r->inst);
	r->stop = 1;
	if (r->wake_fd >= 0 && eventfd_write(r->wake_fd, 1)) {
		/* they wake at their timeouts */
	}
	if (r->keeper_started) {
		hgt__thread_join(r->keeper);
		r->keeper_started = false;
	}
	for (i = 0; i < r->nr_cpus; i++)
		if (r->r[i].tcpu)
			tracefs_cpu_stop(r->r[i].tcpu);
	for (i = 0; i < r->nr_cpus; i++) {
		if (r->r[i].started) {
			hgt__thread_join(r->r[i].thread);
			r->r[i].started = false;
		}
		if (r->r[i].err && !ret)
			ret = hgt__errorf(r->r[i].err, "record: cpu %d: reading trace_pipe_raw: %s",
					  i, strerror(r->r[i].err));
		r->res[i].bytes = r->r[i].bytes;
	}
	return ret;
}

/**
 * hgt__record_wait_read - after hgt__record_halt(), wait until the readers of the caller's
 * channels that are pipes or FIFOs have read every page spliced into them: only then can
 * the instance go (keep_for_pipes()). 0 when they have (or no channel is a pipe),
 * -ETIMEDOUT when one took nothing for @stall_ms, -ECANCELED on *@stop.
 */
int hgt__record_wait_read(struct hgt_recorder *r, unsigned int stall_ms, const volatile int *stop)
{
	for (int i = 0; r->r && i < r->nr_cpus; i++) {
		int ret = spliced(r, i) ? hgt__pipe_wait_read(r->r[i].fd, stall_ms, stop) : 0;

		if (ret)
			return ret;
	}
	return 0;
}

/* Where the recorder's last lines go (the instance kept or not removable): the agent's
 * recorder says nothing while it records. */
void hgt__record_set_log(struct hgt_recorder *r, FILE *log)
{
	r->o.log = log;
}

/* At the stop, how long a reader waits for a caller's channel with no room (30 s unless
 * set): the agent's own limit for a host that reads nothing. */
void hgt__record_set_stall(struct hgt_recorder *r, unsigned int ms)
{
	r->stall_ms = ms;
}

int hgt_record_halt(struct hgt_recorder *r)
{
	return r ? hgt__record_halt(r) : -EINVAL;
}

/**
 * hgt__record_describe - hand the recording's metadata items and options to @sink; with
 * HGT__DESCRIBE_STATS, also the per-CPU statistics (read now) as CPUSTAT options; with
 * HGT__DESCRIBE_END, of the items only the cmdlines (all that changes while recording).
 */
int hgt__record_describe(struct hgt_recorder *r, const struct hgt__meta_sink *sink,
			 unsigned int what)
{
	char *stats = what & HGT__DESCRIBE_STATS ? read_stats(r) : NULL;
	int ret = write_meta(r, sink, what & HGT__DESCRIBE_END);

	if (!ret)
		ret = write_options(r, sink, stats);
	free(stats);
	return ret;
}

int hgt__record_put_options(struct hgt_recorder *r, const struct hgt_option_blob *o, int n)
{
	return r->rd.dir ? hgt__recdir_put_options(&r->rd, o, n) : 0;
}

uint64_t hgt__record_cpu_bytes(const struct hgt_recorder *r, int cpu)
{
	return cpu >= 0 && cpu < r->nr_cpus ? r->r[cpu].bytes : 0;
}

int hgt__record_nr_cpus(const struct hgt_recorder *r)
{
	return r->nr_cpus;
}

const char *hgt__record_clock(const struct hgt_recorder *r)
{
	return r->clock ? r->clock : "local";
}

uint64_t hgt__record_trace_id(const struct hgt_recorder *r)
{
	return r->trace_id;
}

static int out_meta(void *ctx, unsigned int id, const void *p, size_t n)
{
	return hgt_output_set_meta(ctx, id, p, n);
}

static int out_option(void *ctx, unsigned int id, const void *p, uint32_t n)
{
	return hgt_output_add_option(ctx, id, p, n);
}

/* head.dat: the metadata and options known at the start, the top buffer, no pages. */
static int write_head(struct hgt_recorder *r)
{
	struct hgt_output *out =
		hgt__recdir_head(&r->rd, (uint32_t)getpagesize(), 8, r->o.compression);
	struct hgt__meta_sink sink = { out_meta, out_option, out };
	int ret;

	if (!out)
		return -errno;
	ret = hgt__record_describe(r, &sink, 0);
	if (!ret) {
		int b = hgt_output_add_buffer(out, "",
					      r->tsc2nsec ? "tsc2nsec"
					      : r->clock  ? r->clock
							  : "local",
					      r->nr_cpus);

		ret = b < 0 ? b : 0;
	}
	if (ret) {
		hgt_output_abort(out);
		return ret;
	}
	return hgt_output_close(out);
}

/* The task names as they are now, into the recording directory's cmdlines. */
static int keep_cmdlines(struct hgt_recorder *r)
{
	char *path = tracing_path("saved_cmdlines"), *t;
	size_t len = 0;
	int ret;

	t = path ? slurp(path, &len) : NULL;
	free(path);
	if (!t)
		return -EIO;
	ret = hgt__recdir_put(&r->rd, "cmdlines", t, len);
	free(t);
	return ret;
}

/* Every flush interval: the task names, and with sync the pages, to the disk. */
static void *keeper_main(void *arg)
{
	struct hgt_recorder *r = arg;

	while (!r->stop) {
		uint64_t until = hgt__now_ms() + r->flush_ms, now;

		while (!r->stop && (now = hgt__now_ms()) < until) {
			struct pollfd p = { .fd = r->wake_fd, .events = POLLIN };

			if (r->wake_fd < 0 || poll(&p, 1, (int)(until - now)) < 0)
				usleep(20000);
		}
		if (r->stop)
			break;
		keep_cmdlines(r);
		for (int i = 0; r->o.sync && i < r->nr_cpus; i++)
			if (r->r[i].fd >= 0)
				fdatasync(r->r[i].fd);
	}
	return NULL;
}

struct end_options {
	char *stats;
	char rate[200]; /* the x86-tsc rate line, or "" */
};

static int add_stats(void *ctx, struct hgt_output *out)
{
	struct hgt__meta_sink sink = { out_meta, out_option, out };
	struct end_options *e = ctx;
	int ret = put_stats(&sink, e->stats);

	if (!ret && e->rate[0])
		ret = out_option(out, HGT_OPT_CPUSTAT, e->rate, (uint32_t)strlen(e->rate) + 1);
	return ret;
}

/**
 * hgt__record_how - how the CPUs' readers took their pages, for the summary: "from the
 * ring buffer's mapping", "spliced", "copied", a mix, or "no CPU read" when no reader ran.
 */
const char *hgt__record_how(const struct hgt_recorder *r)
{
	int map = 0, copy = 0, splice = 0;

	for (int i = 0; i < r->nr_cpus; i++) {
		if (!r->r[i].ran)
			continue;
		map += r->r[i].map;
		copy += !r->r[i].map && r->r[i].copy;
		splice += !r->r[i].map && !r->r[i].copy;
	}
	if (map && !copy && !splice)
		return "from the ring buffer's mapping";
	if (splice && !copy && !map)
		return "spliced";
	if (copy && !splice && !map)
		return "copied";
	if (!copy && !splice && !map)
		return "no CPU read";
	return "mapped, spliced or copied, by CPU";
}

static void *restore_main(void *arg)
{
	restore(arg);
	return NULL;
}

int hgt_record_stop(struct hgt_recorder *r, struct hgt_record_result *res)
{
	HGT_OPTS(hgt_convert_opts, co, .version = 7, .compression = r->o.compression);
	int i, ret = hgt__record_halt(r);
	struct end_options e = { .stats = read_stats(r) };
	uint64_t loss_pages = 0;
	pthread_t undo;
	bool undoing;
	int rc;

	if (r->rate0.tsc && hgt__tsc_rate_line(&r->rate0, e.rate, sizeof(e.rate)))
		e.rate[0] = 0;
	for (i = 0; i < r->nr_cpus; i++) {
		/* open trace_pipe_raw files keep the instance busy */
		close_cpu(&r->r[i]);
	}
	/* the instance is removed (tens of ms of the kernel's freeing its ring and event
	 * files) while the file is written: nothing below reads it */
	undoing = !hgt__thread_create(&undo, restore_main, r);
	/* the task names at the end, then the file from the recording directory */
	keep_cmdlines(r);
	/* pages whose headers say events were missed: counted as they are copied */
	rc = hgt__recdir_finish(r->rd.dir, r->o.output, &co, add_stats, &e, r->o.sync, r->o.log,
				&loss_pages);
	free(e.stats);
	if (!rc)
		r->finished = true;
	ret = ret ? ret : rc;
	if (undoing)
		hgt__thread_join(undo);
	else
		restore(r);
	if (res) {
		memset(res, 0, sizeof(*res));
		res->nr_cpus = r->nr_cpus;
		res->cpus = r->res;
		for (i = 0; i < r->nr_cpus; i++)
			res->lost += r->res[i].overrun + r->res[i].dropped;
		res->pages_with_loss = loss_pages;
	}
	if (r->o.log && res) {
		uint64_t bytes = 0;

		for (i = 0; i < r->nr_cpus; i++)
			bytes += r->res[i].bytes;
		fprintf(r->o.log, "hgtrace record: %s: %llu bytes of ring-buffer pages (%s)\n",
			r->o.output, (unsigned long long)bytes, hgt__record_how(r));
		for (i = 0; i < r->nr_cpus; i++) {
			const struct cpu_reader *c = &r->r[i];
			char why[160];

			if (!r->res[i].overrun && !r->res[i].dropped)
				continue;
			/* the blame where it belongs: a full disk is no ring-buffer size */
			if (c->fulls)
				snprintf(why, sizeof(why),
					 "its pages could not be stored %u time%s (%s)", c->fulls,
					 c->fulls > 1 ? "s" : "", strerror(c->full_err_seen));
			else
				snprintf(why, sizeof(why), "use a larger -b");
			fprintf(r->o.log,
				"hgtrace record: CPU %d: %llu events LOST (ring buffer overrun %llu, dropped %llu): %s\n",
				i, (unsigned long long)(r->res[i].overrun + r->res[i].dropped),
				(unsigned long long)r->res[i].overrun,
				(unsigned long long)r->res[i].dropped, why);
		}
		if (res->pages_with_loss)
			fprintf(r->o.log, "hgtrace record: %llu pages carry missed-events marks\n",
				(unsigned long long)res->pages_with_loss);
	}
	return ret;
}

void hgt_record_free(struct hgt_recorder *r)
{
	int i;

	if (!r)
		return;
	for (i = 0; r->r && i < r->nr_cpus; i++) {
		if (r->r[i].started)
			hgt__thread_join(r->r[i].thread);
		close_cpu(&r->r[i]);
	}
	restore(r);
	for (i = 0; r->own_fds && r->r && i < r->nr_cpus; i++)
		if (r->r[i].fd >= 0)
			close(r->r[i].fd);
	if (r->rd.dir && r->traced && !r->finished) {
		if (r->o.log && hgt__recdir_present(&r->rd))
			fprintf(r->o.log,
				"hgtrace record: the recording is kept in %s: 'hgtrace restore %s' writes it out\n",
				r->rd.dir, r->o.output);
		else if (r->o.log)
			fprintf(r->o.log,
				"hgtrace record: the recording directory %s was removed while recording: nothing of it is kept\n",
				r->rd.dir);
		hgt__recdir_done(&r->rd, false);
	} else {
		hgt__recdir_done(&r->rd, !r->finished);
	}
	for (i = 0; i < r->nr_evs; i++) {
		free(r->evs[i].system);
		free(r->evs[i].name);
		free(r->evs[i].old_enable);
		free(r->evs[i].old_filter);
	}
	for (i = 0; i < r->nr_saved; i++)
		free(r->saved[i].value);
	free(r->evs);
	free(r->r);
	free(r->res);
	free(r->clock);
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	free(r);
}
