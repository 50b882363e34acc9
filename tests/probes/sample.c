// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The probes sample: fires events of every argument type through whatever backends
 * trace-sample.h was generated with.
 *   sample fire          every event once, with known values
 *   sample threads N M   N threads fire ev_work M times each
 *   sample signals M     fire ev_work(0, i) M times while a 20 us timer's handler fires
 *                        ev_work(1, k), k = 0, 1, ... (prints the handler's count)
 *   sample ticks FILE [N]  fire ev_tick every millisecond until FILE exists (or N times)
 *   sample crash         fire, then abort()
 *   sample semaphore     print whether a USDT/LTTng listener is attached (args computed)
 *   sample init FILE     hgt_probes_init() with ev_ints and ev_void into FILE, then fire
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace-sample.h"

static unsigned long computed; /* how often an expensive argument was built */

static int expensive(void)
{
	computed++;
	return 42;
}

/* A toy JIT: the translation-time half hands us the execution-time helper. */
static void (*jit_helper)(void);

static void jit_emit(void *jit, const struct hgt_probe_event *ev, void (*helper)(void))
{
	(void)jit;
	(void)ev;
	jit_helper = helper;
}

static void fire(void)
{
	char t[] = "mutable";

	trace_ev_ints(-1, -2, -3, -4);
	trace_ev_uints(255, 65535, 4294967295u, 0x123456789abcdef0ull);
	trace_ev_plain('A', -7, 1000000, -5000000000L, 3000000000u, 18000000000000000000ul, true);
	trace_ev_sizes(4096, -1, (uintptr_t)0xdeadbeef, -16);
	trace_ev_str("hello world", t, (void *)0x1234);
	trace_ev_str(NULL, t, NULL);
	trace_ev_void();
	trace_ev_off(1);
	trace_ev_vcpu((void *)0x10, 3);
	trace_ev_mem_tcg(jit_emit, NULL, 8);
	if (jit_helper) /* "execute" the translated code twice */
		for (int i = 0; i < 2; i++)
			((void (*)(int, uint64_t))jit_helper)(8, 0x1000 + (uint64_t)i * 8);
	if (trace_event_get_state_backends(TRACE_EV_VCPU))
		trace_ev_vcpu((void *)0x11, expensive());
}

static unsigned long per_thread;
static volatile sig_atomic_t in_handler_fired;

/* A probe fired in a signal handler, which may interrupt the same thread's probe. */
static void on_alarm(int sig)
{
	(void)sig;
	trace_ev_work(1, (uint64_t)in_handler_fired);
	in_handler_fired++;
}

static void *worker(void *arg)
{
	int id = (int)(long)arg;

	for (unsigned long i = 0; i < per_thread; i++)
		trace_ev_work(id, i);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "fire";

	if (!strcmp(mode, "fire")) {
		fire();
	} else if (!strcmp(mode, "threads") && argc == 4) {
		int n = atoi(argv[2]);
		pthread_t th[64];

		per_thread = strtoul(argv[3], NULL, 10);
		for (int i = 0; i < n && i < 64; i++)
			pthread_create(&th[i], NULL, worker, (void *)(long)i);
		for (int i = 0; i < n && i < 64; i++)
			pthread_join(th[i], NULL);
	} else if (!strcmp(mode, "signals") && argc == 3) {
		unsigned long m = strtoul(argv[2], NULL, 10);
		struct itimerval it = { { 0, 20 }, { 0, 20 } };
		struct sigaction sa = { .sa_handler = on_alarm };

		trace_ev_work(2, 0); /* this thread's ring exists before any handler runs */
		sigemptyset(&sa.sa_mask);
		sigaction(SIGALRM, &sa, NULL);
		setitimer(ITIMER_REAL, &it, NULL);
		for (unsigned long i = 0; i < m; i++)
			trace_ev_work(0, i);
		it = (struct itimerval){ { 0, 0 }, { 0, 0 } };
		setitimer(ITIMER_REAL, &it, NULL);
		printf("handler %ld\n", (long)in_handler_fired);
	} else if (!strcmp(mode, "ticks") && (argc == 3 || argc == 4)) {
		unsigned long most = argc == 4 ? strtoul(argv[3], NULL, 10) : 60000;

		for (unsigned long n = 0; access(argv[2], F_OK) && n < most; n++) {
			trace_ev_tick(n);
			usleep(1000);
		}
	} else if (!strcmp(mode, "fork") && argc == 3) {
		/* N ticks, fork; the child fires N more and exits; the parent then N more */
		int n = atoi(argv[2]), st;
		pid_t c;

		for (int i = 0; i < n; i++)
			trace_ev_tick(i);
		c = fork();
		if (c == 0) {
			for (int i = 0; i < n; i++)
				trace_ev_tick(100000 + i);
			exit(0);
		}
		waitpid(c, &st, 0);
		for (int i = 0; i < n; i++)
			trace_ev_tick(200000 + i);
		printf("child %d\nsocket %s\n", (int)c,
		       getenv("HGTRACE_CTL") && !access(getenv("HGTRACE_CTL"), F_OK) ? "kept"
										     : "gone");
	} else if (!strcmp(mode, "crash")) {
		fire();
		abort();
	} else if (!strcmp(mode, "init") && argc == 3) {
		struct hgt_probes_opts o = { .sz = sizeof(o),
					     .events = "ev_ints,ev_void",
					     .file = argv[2] };
		int r = hgt_probes_init(&o);

		if (r < 0) {
			fprintf(stderr, "hgt_probes_init: %d\n", r);
			return 1;
		}
		fire();
	} else if (!strcmp(mode, "semaphore")) {
		/* Without a listener the guarded argument is never computed. */
		for (int i = 0; i < 3; i++) {
			if (trace_event_get_state_backends(TRACE_EV_VCPU))
				trace_ev_vcpu((void *)0x12, expensive());
			if (i < 2)
				sleep(1);
		}
		printf("computed %lu\n", computed);
	} else {
		fprintf(stderr,
			"usage: sample fire|threads N M|ticks FILE|fork N|crash|semaphore|init FILE\n");
		return 2;
	}
	return 0;
}
