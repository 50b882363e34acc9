// SPDX-License-Identifier: LGPL-2.1-or-later
/* The library's worker threads, started and joined here and counted. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "thread.h"

/*
 * The library's own worker threads now running (view's compressors, the report's
 * formatters, the recorder's readers, the listener's finishers): fork() copies only the
 * calling thread, and a lock one of them holds at that moment (a sanitizer's allocator's;
 * glibc makes its malloc safe across fork) stays held in the child forever.
 */
static int threads_running;

/* How many there are now: the format guard forks only while there are none. */
int hgt__threads_running(void)
{
	return __atomic_load_n(&threads_running, __ATOMIC_SEQ_CST);
}

static void threads_forked(void) /* a child of fork() has none */
{
	threads_running = 0;
}

static void threads_once(void)
{
	pthread_atfork(NULL, NULL, threads_forked);
}

/* pthread_create() of a library worker thread, counted (joined by hgt__thread_join()). */
int hgt__thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	int ret;

	pthread_once(&once, threads_once);
	__atomic_add_fetch(&threads_running, 1, __ATOMIC_SEQ_CST);
	ret = hgt__thread_spawn(t, fn, arg);
	if (ret)
		__atomic_sub_fetch(&threads_running, 1, __ATOMIC_SEQ_CST);
	return ret;
}

void hgt__thread_join(pthread_t t)
{
	pthread_join(t, NULL);
	__atomic_sub_fetch(&threads_running, 1, __ATOMIC_SEQ_CST);
}

/* Tasks that can run now, all CPUs': /proc/stat's procs_running (the caller counted). The
 * least of 3 readings, so that a task runnable for an instant is not taken for a load;
 * -1 when it cannot be read. */
static long procs_running(void)
{
	long least = -1;

	for (int k = 0; k < 3; k++) {
		FILE *f = fopen("/proc/stat", "re");
		char line[256];
		long v = -1;

		if (!f)
			return -1;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "procs_running %ld", &v) == 1)
				break;
		fclose(f);
		if (v < 0)
			return -1;
		if (least < 0 || v < least)
			least = v;
	}
	return least;
}

/* This process's threads running or runnable now (state R in /proc/self/task/N/stat), the
 * caller included: at least 1. */
long hgt__own_running(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long n = 0;

	while (d && (e = readdir(d))) {
		char path[64], buf[512], *p;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.20s/stat", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		/* "TID (COMM) S ...": COMM may hold spaces and parentheses */
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[1] == ' ' &&
		    p[2] == 'R')
			n++;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n < 1 ? 1 : n;
}

/*
 * The CPUs a new worker would have to itself: those the caller may run on (its affinity),
 * less one for each task of other processes running now. On a host that is busy
 * elsewhere, workers would share a CPU with that load and with each other: a report with
 * one core of two busy took 1.7 times the CPU time in two threads as in one, for no gain
 * in wall time. The caller's own threads do not count: they are the work the workers
 * join (export's writer thread, busy writing when its workers were counted, left it with
 * none: 0.85 s where two threads took 0.54 s). At least 1.
 */
long hgt__cpus_free(void)
{
	cpu_set_t set;
	long n = sched_getaffinity(0, sizeof(set), &set) ? sysconf(_SC_NPROCESSORS_ONLN)
							 : CPU_COUNT(&set);
	long running = procs_running();

	return hgt__cpus_free_of(n, running, running > 1 ? hgt__own_running() : 1);
}

/* hgt__cpus_free() of @cpus CPUs with @running tasks running (-1: not known), @own of
 * them the caller's threads (the caller included). */
long hgt__cpus_free_of(long cpus, long running, long own)
{
	long others = running - own;

	if (running > 1 && others > 0)
		cpus -= others;
	return cpus < 1 ? 1 : cpus;
}
