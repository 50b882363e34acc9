// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A listener (hgt_listen_run(), TCP, --record-host) whose on_host_ending callback holds
 * up the end of the first guest until the host's recording of a second guest has started
 * (on_host_started), as a flight recorder's last search and windows hold it up for
 * seconds. The second guest is only started by the test once the first one's end has
 * begun ("# ending NAME" on stdout): the callback sees it start only if the end runs
 * beside the listener's loop, not in it. Prints TAP lines of its own.
 * Usage: listen-ending PORT OUTPUT_DIR
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hgtrace/record.h>
#include <hgtrace/transport.h>

#define WAIT_S 30 /* a hang guard: the start comes within a second once the test sends it */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static char first[64];
static int started, done, written;
static int ending_waited = -1; /* ms the first guest's end waited, -1: never called */
static int seen_in_end;	       /* host recordings started when it stopped waiting */
static volatile int stop;

static void on_host_started(void *ctx, const char *name, const char *host_path,
			    const char *guest_path)
{
	(void)ctx;
	(void)host_path;
	(void)guest_path;
	pthread_mutex_lock(&lock);
	if (!first[0])
		snprintf(first, sizeof(first), "%s", name);
	started++;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static void on_host_ending(void *ctx, const char *name)
{
	struct timespec t0, now, until;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_mutex_lock(&lock);
	if (strcmp(name, first) || ending_waited >= 0) {
		pthread_mutex_unlock(&lock);
		return;
	}
	printf("# ending %s\n", name);
	fflush(stdout);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_S;
	while (started < 2 && pthread_cond_timedwait(&cond, &lock, &until) != ETIMEDOUT)
		;
	seen_in_end = started;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ending_waited =
		(int)((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
	pthread_mutex_unlock(&lock);
}

static void on_guest_done(void *ctx, const struct hgt_listen_result *r)
{
	(void)ctx;
	pthread_mutex_lock(&lock);
	written += r->path != NULL;
	if (++done == 2)
		stop = 1;
	pthread_mutex_unlock(&lock);
}

int main(int argc, char **argv)
{
	const char *events[] = { "sched:sched_switch" };
	HGT_OPTS(hgt_record_opts, ro, .events = events, .nr_events = 1, .buffer_kb = 1024);
	HGT_OPTS(hgt_listen_opts, lo, .log = stderr, .stop = &stop, .record_host = &ro,
		 .on_host_started = on_host_started, .on_host_ending = on_host_ending,
		 .on_guest_done = on_guest_done);
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: listen-ending PORT OUTPUT_DIR\n");
		return 2;
	}
	lo.tcp_port = (unsigned int)strtoul(argv[1], NULL, 10);
	lo.bind_addr = "127.0.0.1";
	lo.output_dir = argv[2];
	ret = hgt_listen_run(&lo);
	printf("%s 1 - the listener ran and returned %d\n", ret ? "not ok" : "ok", ret);
	if (ending_waited >= 0 && seen_in_end == 2)
		printf("ok 2 - the second guest's host recording started while the first guest's end was held up (%d ms into it)\n",
		       ending_waited);
	else
		printf("not ok 2 - the first guest's end held up the listener: the second guest's host recording did not start in %d s beside it (%d started by then, %d in all; the end waited %d ms)\n",
		       WAIT_S, seen_in_end, started, ending_waited);
	printf("%s 3 - both guests' files written (%d of %d ended)\n",
	       written == 2 ? "ok" : "not ok", written, done);
	printf("1..3\n");
	return 0;
}
