// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Cost per event of a generated probe: `probes-bench THREADS EVENTS` fires trace_bench_ev()
 * EVENTS times in each of THREADS threads (started together) and prints
 * "ns_per_event N" (wall time of the slowest thread / its events) and the state.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "trace-bench.h"

static unsigned long events;
static pthread_barrier_t start;
static double elapsed[64];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *run(void *arg)
{
	int id = (int)(long)arg;
	double t0;

	trace_bench_ev(id, 0); /* first event outside the timing: ring set-up */
	pthread_barrier_wait(&start);
	t0 = now();
	for (unsigned long i = 1; i <= events; i++)
		trace_bench_ev(id, i);
	elapsed[id] = now() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	pthread_t th[64];
	double worst = 0;

	events = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000000;
	if (n < 1 || n > 64)
		return 2;
	pthread_barrier_init(&start, NULL, (unsigned int)n);
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, run, (void *)(long)i);
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		if (elapsed[i] > worst)
			worst = elapsed[i];
	}
	printf("ns_per_event %.2f enabled %d\n", worst / (double)events,
	       trace_event_get_state_backends(TRACE_BENCH_EV) ? 1 : 0);
	return 0;
}
