// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bench/agent.sh's writer: MB megabytes of 1000-byte trace_marker writes of CHAR into
 * FILE as fast as one thread can (a Python loop topped out below 1 GB/s with the agent
 * beside it, so the agent's rows measured the writer), or at RATE MB/s (every 100 writes
 * it sleeps until their due time). Prints the wall-clock time of the first write (seconds
 * since the epoch, as bash's $EPOCHREALTIME) and the seconds the writes took.
 * Usage: marker-write FILE MB CHAR [RATE]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec a, b, t0;
	char line[1000];
	double rate;
	long n;
	int fd;

	if ((argc != 4 && argc != 5) || !argv[3][0]) {
		fprintf(stderr, "usage: marker-write FILE MB CHAR [RATE]\n");
		return 2;
	}
	rate = argc == 5 ? atof(argv[4]) : 0;
	fd = open(argv[1], O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	n = atol(argv[2]) * 1000;
	memset(line, argv[3][0], sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	clock_gettime(CLOCK_REALTIME, &t0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		if (write(fd, line, sizeof(line)) != (ssize_t)sizeof(line)) {
			perror("marker-write: write");
			return 1;
		}
		if (rate > 0 && i % 100 == 99) {
			/* bytes written / (rate MB/s) after the start */
			long long due = (long long)a.tv_nsec +
					(long long)((double)(i + 1) * 1000.0 / rate * 1000.0);
			struct timespec t = { a.tv_sec + (time_t)(due / 1000000000),
					      (long)(due % 1000000000) };

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%lld.%06ld %.6f\n", (long long)t0.tv_sec, t0.tv_nsec / 1000,
	       (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
	return 0;
}
