// SPDX-License-Identifier: LGPL-2.1-or-later
/* The library's worker threads, started and joined here and counted. */
#include <pthread.h>

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
