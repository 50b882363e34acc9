/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The libraries' own threads: they take none of the program's signals, and a fork() right
 * after one is started never copies a lock that its start-up holds. */
#ifndef HGT_THREAD_H
#define HGT_THREAD_H

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>

struct hgt__thread_start {
	void *(*fn)(void *);
	void *arg;
	sem_t started;
};

static inline void *hgt__thread_trampoline(void *p)
{
	struct hgt__thread_start *s = p;
	void *(*fn)(void *) = s->fn;
	void *arg = s->arg;

	sem_post(&s->started); /* @s lives on the spawner's stack: not touched after this */
	return fn(arg);
}

/*
 * pthread_create() of a thread that blocks every signal from its first instruction. A
 * signal sent to the process goes to any thread not blocking it: a library's thread must
 * never run the program's handlers. Blocking them in the thread itself leaves a window
 * (the probes' test caught a 20 us timer's handler running on the writer thread there).
 *
 * Returns once the thread runs @fn: its start-up in the C library and in a sanitizer's
 * runtime (which allocates under the allocator's locks) is over. A fork() by the caller
 * right after could otherwise copy such a lock held, and the child would hang at its first
 * malloc (the listener's format-guard helper did, under ASan, 1 run in 3 with the probes'
 * writer thread just started).
 */
static inline int hgt__thread_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	struct hgt__thread_start s = { fn, arg, { { 0 } } };
	sigset_t all, old;
	int ret;

	if (sem_init(&s.started, 0, 0))
		return errno;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(t, NULL, hgt__thread_trampoline, &s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ret)
		while (sem_wait(&s.started) && errno == EINTR)
			;
	sem_destroy(&s.started);
	return ret;
}

/* A library worker thread (hgt__thread_spawn), counted until hgt__thread_join (thread.c). */
int hgt__thread_create(pthread_t *t, void *(*fn)(void *), void *arg);
void hgt__thread_join(pthread_t t);
int hgt__threads_running(void);
/* The CPUs free for the caller's workers now: its affinity's, less the other running
 * tasks, at least 1 (thread.c). */
long hgt__cpus_free(void);
long hgt__cpus_free_of(long cpus, long running, long own);
long hgt__own_running(void);

#endif
