// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The workload of a recording (record -A -- CMD, agent -- CMD): started once tracing
 * runs; its end stops the recording through the caller's stop flag.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/close_range.h>

#include "cmd.h"

static volatile pid_t child = -1;
static volatile int *child_stop;

static void on_child(int sig)
{
	int st;

	(void)sig;
	if (child > 0 && waitpid(child, &st, WNOHANG) == child) {
		child = -1;
		*child_stop = 1;
	}
}

void cmd_child_watch(volatile int *stop)
{
	struct sigaction sa;

	child_stop = stop;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
}

void cmd_child_spawn(char **argv, const char *who)
{
	pid_t p = fork();

	if (p == 0) {
		/* the workload gets none of the recorder's files (trace_pipe_raw, channels) */
		close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGXFSZ, SIG_DFL); /* main.c ignores it: a write past ulimit -f fails */
		execvp(argv[0], argv);
		fprintf(stderr, "hgtrace: %s: cannot run %s: %s\n", who, argv[0], strerror(errno));
		_exit(127);
	}
	if (p < 0) {
		fprintf(stderr, "hgtrace: %s: fork: %s\n", who, strerror(errno));
		*child_stop = 1;
		return;
	}
	child = p;
	on_child(SIGCHLD); /* it may have ended already */
}

void cmd_child_end(void)
{
	pid_t p = child;

	if (p > 0) {
		kill(p, SIGTERM);
		waitpid(p, NULL, 0);
		child = -1;
	}
}

static volatile int *stop_on_signal;

static void on_stop_signal(int sig)
{
	(void)sig;
	if (stop_on_signal)
		*stop_on_signal = 1;
}

void cmd_catch_stop(volatile int *stop)
{
	struct sigaction sa;

	stop_on_signal = stop;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}
