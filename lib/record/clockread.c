// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every trace clock read from user space, for the sync probes of sessions. Most are read
 * directly (hgt_trace_clock_read(): the TSC, clock_gettime()); local, global and perf
 * exist only inside the kernel, so they are read through the trace itself, as trace-cmd's
 * ptp sync does: a tracefs instance of this process (hgtrace-PID-clock) with that clock
 * and no events; a raw marker written to its trace_marker_raw lands in the ring buffer of
 * the CPU that wrote it, stamped by the clock, and is read back at once from that CPU's
 * trace_pipe_raw (non-blocking: a page, whole or not). Its stamp is a time between the
 * write's start and its end, as a direct read is between two instructions.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <traceevent/kbuffer.h>
#include <tracefs.h>

#include <hgtrace/clock.h>

#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "record-local.h"

#define MARK_MAGIC 0x68677463u /* "hgtc" */

static const char *const in_kernel[] = { "local", "global", "perf" };

struct marker_clock {
	char clock[16];
	struct tracefs_instance *inst;
	int marker; /* trace_marker_raw */
	int *pipe;  /* per CPU trace_pipe_raw, O_NONBLOCK */
	int nr_cpus;
	struct kbuffer *kb;
	void *page;
	long page_size;
	uint32_t seq;
	pid_t owner; /* a child that exits must not remove its parent's instance */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct marker_clock *mc;

static bool kernel_only(const char *clock)
{
	for (size_t i = 0; i < sizeof(in_kernel) / sizeof(in_kernel[0]); i++)
		if (!strcmp(clock, in_kernel[i]))
			return true;
	return false;
}

/* The clock is one the kernel offers (its trace_clock file lists it). */
static bool offered(const char *clock)
{
	char *list = tracefs_instance_file_read(NULL, "trace_clock", NULL), *p;
	size_t n = strlen(clock);
	bool ok = false;

	for (p = list ? strstr(list, clock) : NULL; p && !ok; p = strstr(p + 1, clock))
		ok = (p == list || p[-1] == ' ' || p[-1] == '[') &&
		     (p[n] == ' ' || p[n] == ']' || p[n] == '\n' || !p[n]);
	free(list);
	return ok;
}

static void marker_clock_free(struct marker_clock *m)
{
	if (!m)
		return;
	if (m->marker >= 0)
		close(m->marker);
	for (int i = 0; m->pipe && i < m->nr_cpus; i++)
		if (m->pipe[i] >= 0)
			close(m->pipe[i]);
	free(m->pipe);
	if (m->inst) {
		tracefs_instance_destroy(m->inst);
		tracefs_instance_free(m->inst);
	}
	if (m->kb)
		kbuffer_free(m->kb);
	free(m->page);
	free(m);
}

static void close_at_exit(void)
{
	if (mc && mc->owner == getpid())
		hgt__sync_clock_close();
}

static struct marker_clock *marker_clock_open(const char *clock)
{
	struct marker_clock *m = calloc(1, sizeof(*m));
	char name[64], path[96];
	char *p;

	if (!m)
		return NULL;
	m->marker = -1;
	m->owner = getpid();
	snprintf(m->clock, sizeof(m->clock), "%s", clock);
	snprintf(name, sizeof(name), "hgtrace-%d-clock", (int)getpid());
	m->nr_cpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	m->page_size = sysconf(_SC_PAGESIZE);
	m->pipe = malloc(sizeof(int) * (size_t)(m->nr_cpus > 0 ? m->nr_cpus : 1));
	m->page = malloc((size_t)m->page_size);
	m->kb = kbuffer_alloc(sizeof(long) == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
			      KBUFFER_ENDIAN_LITTLE);
	m->inst = tracefs_instance_create(name);
	if (!m->pipe || !m->page || !m->kb || !m->inst)
		goto fail;
	hgt__instance_register(name);
	for (int i = 0; i < m->nr_cpus; i++)
		m->pipe[i] = -1;
	if (tracefs_instance_file_write(m->inst, "trace_clock", clock) < 0 ||
	    tracefs_instance_file_write(m->inst, "buffer_size_kb", "16") < 0 ||
	    tracefs_instance_file_write(m->inst, "tracing_on", "1") < 0)
		goto fail;
	p = tracefs_instance_get_file(m->inst, "trace_marker_raw");
	m->marker = p ? open(p, O_WRONLY | O_CLOEXEC) : -1;
	tracefs_put_tracing_file(p);
	if (m->marker < 0)
		goto fail;
	for (int i = 0; i < m->nr_cpus; i++) {
		snprintf(path, sizeof(path), "per_cpu/cpu%d/trace_pipe_raw", i);
		p = tracefs_instance_get_file(m->inst, path);
		m->pipe[i] = p ? open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
		tracefs_put_tracing_file(p);
	}
	return m;
fail:
	marker_clock_free(m);
	return NULL;
}

/* Our marker @seq in the pages CPU @cpu's pipe holds now: its stamp. */
static int find_mark(struct marker_clock *m, int cpu, uint32_t seq, uint64_t *ts)
{
	int found = -EAGAIN;

	if (cpu < 0 || cpu >= m->nr_cpus || m->pipe[cpu] < 0)
		return -ENOENT;
	for (;;) {
		ssize_t n = read(m->pipe[cpu], m->page, (size_t)m->page_size);
		unsigned long long t;
		void *d;

		if (n <= 0)
			return found;
		kbuffer_load_subbuffer(m->kb, m->page);
		for (d = kbuffer_read_event(m->kb, &t); d; d = kbuffer_next_event(m->kb, &t)) {
			uint32_t id, magic;

			if (kbuffer_event_size(m->kb) < 16)
				continue;
			memcpy(&id, (char *)d + 8, 4);
			memcpy(&magic, (char *)d + 12, 4);
			if (magic == MARK_MAGIC && id == seq) {
				*ts = t;
				found = 0;
			}
		}
	}
}

static int marker_read(struct marker_clock *m, uint64_t *ts)
{
	uint32_t buf[2] = { ++m->seq, MARK_MAGIC };
	int c0 = sched_getcpu(), c1, ret;

	if (write(m->marker, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		return -errno ? -errno : -EIO;
	c1 = sched_getcpu();
	ret = find_mark(m, c1, m->seq, ts);
	if (ret && c0 != c1)
		ret = find_mark(m, c0, m->seq, ts);
	for (int i = 0; ret && i < m->nr_cpus; i++) /* moved twice: look everywhere */
		if (i != c0 && i != c1)
			ret = find_mark(m, i, m->seq, ts);
	return ret ? -EIO : 0;
}

/**
 * hgt__sync_clock_readable - @clock can be read for sync probes: directly, or through a
 * tracefs instance of ours (local, global, perf: tracefs mounted, the kernel offering it).
 */
bool hgt__sync_clock_readable(const char *clock)
{
	if (!clock)
		return false;
	if (hgt_trace_clock_readable(clock))
		return true;
	return kernel_only(clock) && tracefs_tracing_dir() && offered(clock);
}

/**
 * hgt__sync_clock_read - the current value of trace clock @clock (hgt__sync_clock_readable()).
 * Returns 0 or -errno.
 */
int hgt__sync_clock_read(const char *clock, uint64_t *ts)
{
	static bool registered;
	int ret;

	if (!clock)
		return -EINVAL;
	if (!hgt_trace_clock_read(clock, ts))
		return 0;
	if (!kernel_only(clock))
		return -EOPNOTSUPP;
	pthread_mutex_lock(&lock);
	if (mc && strcmp(mc->clock, clock)) {
		marker_clock_free(mc);
		mc = NULL;
	}
	if (!mc) {
		mc = marker_clock_open(clock);
		if (mc && !registered) {
			atexit(close_at_exit);
			registered = true;
		}
	}
	ret = mc ? marker_read(mc, ts) : -EOPNOTSUPP;
	pthread_mutex_unlock(&lock);
	return ret;
}

/** hgt__sync_clock_close - remove the instance hgt__sync_clock_read() made, if any. */
void hgt__sync_clock_close(void)
{
	pthread_mutex_lock(&lock);
	marker_clock_free(mc);
	mc = NULL;
	pthread_mutex_unlock(&lock);
}
