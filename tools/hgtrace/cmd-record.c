// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace record: record this machine's ftrace into a trace.dat. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hgtrace/output.h>
#include <hgtrace/record.h>

#include "cmd.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: hgtrace record -e SYSTEM[:EVENT]... [-C CLOCK] [-b KB] [-B INSTANCE]\n"
		   "                      [-o FILE] [-P PID]... [-M CPUMASK] [--compression C]\n"
		   "                      [-- COMMAND ARGS...]\n"
		   "  records until COMMAND exits, or until SIGINT/SIGTERM without one.\n"
		   "  Works in a tracefs instance of its own (or -B NAME) and leaves tracefs as it "
		   "was.\n");
}

static int push(void *arrp, int *n, size_t size)
{
	void **arr = arrp;
	void *na = realloc(*arr, size * (size_t)(*n + 1));

	if (!na)
		return -1;
	*arr = na;
	return 0;
}

int cmd_record(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "compression", required_argument, NULL, 'Z' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_record_opts, o, .output = "trace.dat", .compression = HGT_COMPRESS_ZSTD,
		 .log = stderr);
	const char **events = NULL;
	int *pids = NULL, nev = 0, npid = 0, c, ret = 2;
	struct hgt_record_result res;
	struct hgt_recorder *rec;
	struct sigaction sa;
	pid_t child = -1;
	char *end;
	long v;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+e:C:b:B:o:P:M:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (push(&events, &nev, sizeof(*events)))
				goto nomem;
			events[nev++] = optarg;
			break;
		case 'C':
			o.clock = optarg;
			break;
		case 'b':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v <= 0) {
				fprintf(stderr, "hgtrace: record: -b '%s': expected KB > 0\n",
					optarg);
				goto out;
			}
			o.buffer_kb = (size_t)v;
			break;
		case 'B':
			o.instance = optarg;
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'P':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v <= 0) {
				fprintf(stderr, "hgtrace: record: -P '%s': expected a PID\n",
					optarg);
				goto out;
			}
			if (push(&pids, &npid, sizeof(*pids)))
				goto nomem;
			pids[npid++] = (int)v;
			break;
		case 'M':
			o.cpumask = optarg;
			break;
		case 'Z':
			if (hgt_compression_parse(optarg, &o.compression)) {
				fprintf(stderr,
					"hgtrace: record: --compression '%s': none, zlib or "
					"zstd\n",
					optarg);
				goto out;
			}
			break;
		case 'h':
			usage(stdout);
			ret = 0;
			goto out;
		default:
			usage(stderr);
			goto out;
		}
	}
	if (!nev) {
		fprintf(stderr, "hgtrace: record: no events given (-e SYSTEM[:EVENT])\n");
		goto out;
	}
	o.events = events;
	o.nr_events = nev;
	o.pids = pids;
	o.nr_pids = npid;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rec = hgt_record_start(&o);
	if (!rec) {
		cmd_error("record failed");
		ret = 1;
		goto out;
	}
	if (optind < argc) {
		child = fork();
		if (child == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			execvp(argv[optind], argv + optind);
			fprintf(stderr, "hgtrace: record: cannot run %s: %s\n", argv[optind],
				strerror(errno));
			_exit(127);
		}
		if (child < 0)
			fprintf(stderr, "hgtrace: record: fork: %s\n", strerror(errno));
		while (child > 0 && waitpid(child, NULL, 0) < 0 && errno == EINTR)
			if (stop_requested)
				kill(child, SIGTERM);
	} else {
		fprintf(stderr, "hgtrace record: recording; Ctrl-C (SIGINT) or SIGTERM stops\n");
		while (!stop_requested)
			pause();
	}
	if (hgt_record_stop(rec, &res)) {
		cmd_error("record failed");
		ret = 1;
	} else {
		ret = 0;
	}
	hgt_record_free(rec);
	goto out;
nomem:
	fprintf(stderr, "hgtrace: record: out of memory\n");
	ret = 1;
out:
	free(events);
	free(pids);
	return ret;
}
