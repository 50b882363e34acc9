/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The libraries' own threads: they take none of the program's signals. */
#ifndef HGT_THREAD_H
#define HGT_THREAD_H

#include <pthread.h>
#include <signal.h>

/*
 * pthread_create() of a thread that blocks every signal from its first instruction. A
 * signal sent to the process goes to any thread not blocking it: a library's thread must
 * never run the program's handlers. Blocking them in the thread itself leaves a window
 * (the probes' test caught a 20 us timer's handler running on the writer thread there).
 */
static inline int hgt__thread_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

#endif
