// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hgtrace flight: the flight recorder on a recording in progress (another hgtrace record
 * or listen), and the flight options record --flight shares with it.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hgtrace/flight.h>
#include <hgtrace/tracedat.h>

#include "cmd.h"

#define MAX_BY_SIGNAL 64
static struct hgt_flight *by_signal[MAX_BY_SIGNAL]; /* SIGUSR1's */
static int in_handler; /* handlers running: a flight taken off waits for them */

static void on_usr1(int sig)
{
	(void)sig;
	__atomic_add_fetch(&in_handler, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < MAX_BY_SIGNAL; i++) {
		struct hgt_flight *f = __atomic_load_n(&by_signal[i], __ATOMIC_SEQ_CST);

		if (f)
			hgt_flight_trigger(f);
	}
	__atomic_sub_fetch(&in_handler, 1, __ATOMIC_SEQ_CST);
}

/* SIGUSR1 triggers @f by hand (NULL: it no longer triggers any). */
void cmd_flight_signal(struct hgt_flight *f)
{
	struct sigaction sa;

	for (int i = 0; i < MAX_BY_SIGNAL; i++)
		__atomic_store_n(&by_signal[i], i ? NULL : f, __ATOMIC_RELEASE);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = f ? on_usr1 : SIG_IGN;
	sigaction(SIGUSR1, &sa, NULL);
}

/*
 * SIGUSR1 triggers @f too (@on), or no longer (@on false). Returns 0, or -ENOSPC. Taking
 * @f off may be done by another thread than the one the handler interrupts (listen stops
 * a guest's flight recorder in a thread): it returns once no handler can still use @f,
 * which the caller then frees.
 */
int cmd_flight_signal_also(struct hgt_flight *f, bool on)
{
	struct sigaction sa;

	for (int i = 0; i < MAX_BY_SIGNAL; i++) {
		struct hgt_flight *was = __atomic_load_n(&by_signal[i], __ATOMIC_SEQ_CST);

		if (on ? was == NULL : was == f) {
			__atomic_store_n(&by_signal[i], on ? f : NULL, __ATOMIC_SEQ_CST);
			if (!on) {
				while (__atomic_load_n(&in_handler, __ATOMIC_SEQ_CST))
					sched_yield();
				return 0;
			}
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = on_usr1;
			sigaction(SIGUSR1, &sa, NULL);
			return 0;
		}
	}
	return on ? -ENOSPC : 0;
}

/* A duration of @cmd's option @opt: seconds, or a number and ns/us/ms/s. */
static int dur_arg(const char *cmd, const char *opt, const char *arg, uint64_t *ns)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (!errno && end != arg && v >= 0 && *arg != '-') {
		double unit = !*end		   ? 1e9
			      : !strcmp(end, "s")  ? 1e9
			      : !strcmp(end, "ms") ? 1e6
			      : !strcmp(end, "us") ? 1e3
			      : !strcmp(end, "ns") ? 1
						   : -1;

		if (unit > 0 && v * unit <= 3600e9) {
			*ns = (uint64_t)(v * unit + 0.5);
			return 0;
		}
	}
	fprintf(stderr,
		"hgtrace: %s: %s '%s': expected seconds (or a number and ns, us, ms or s), at most an hour\n",
		cmd, opt, arg);
	return -1;
}

/**
 * cmd_flight_opt - a flight option of @cmd (record, flight) into @a. Returns 0, 1 (said) or
 * -ENOMEM; -ENOENT when @c is not one.
 */
int cmd_flight_opt(const char *cmd, int c, const char *arg, struct cmd_flight_args *a)
{
	long long v;
	const char **t;

	switch (c) {
	case CMD_O_WINDOW:
		return dur_arg(cmd, "--window", arg, &a->o.window_ns) ? 1 : 0;
	case CMD_O_AFTER:
		return dur_arg(cmd, "--after", arg, &a->o.after_ns) ? 1 : 0;
	case CMD_O_TICK:
		return dur_arg(cmd, "--tick", arg, &a->o.tick_ns) ? 1 : 0;
	case CMD_O_FLUSH:
		return dur_arg(cmd, "--flush", arg, &a->o.flush_ns) ? 1 : 0;
	case CMD_O_HOLDOFF:
		a->holdoff_set = true;
		return dur_arg(cmd, "--holdoff", arg, &a->o.holdoff_ns) ? 1 : 0;
	case CMD_O_MAXTRIG:
		if (cmd_num_arg(cmd, "--max-triggers", arg, 1, 100000, "1 to 100000", &v))
			return 1;
		a->o.max_triggers = (int)v;
		return 0;
	case CMD_O_PREFIX:
		a->o.prefix = arg;
		return 0;
	case CMD_O_SEARCHMAX:
		if (cmd_num_arg(cmd, "--search-max-mb", arg, 1, 1048576, "1 to 1048576", &v))
			return 1;
		a->o.search_max_bytes = (uint64_t)v << 20;
		return 0;
	case CMD_O_TRIGGER:
		if (hgt_flight_parse_trigger(arg)) {
			fprintf(stderr, "hgtrace: %s: --trigger: %s\n", cmd, hgt_last_error());
			return 1;
		}
		t = realloc(a->triggers, sizeof(*t) * (size_t)(a->nt + 1));
		if (!t)
			return -ENOMEM;
		a->triggers = t;
		t[a->nt++] = arg;
		a->o.triggers = a->triggers;
		a->o.nr_triggers = a->nt;
		return 0;
	}
	return -ENOENT;
}

/* After the options of @cmd: --holdoff defaults to --after (a trigger within it is in the
 * same window); with triggers, the options are checked together. Returns 0, or 2 (said). */
int cmd_flight_defaults(const char *cmd, struct cmd_flight_args *a)
{
	if (!a->holdoff_set)
		a->o.holdoff_ns = a->o.after_ns;
	if (a->nt && hgt_flight_check_opts(&a->o)) {
		fprintf(stderr, "hgtrace: %s: %s\n", cmd, hgt_last_error());
		return 2;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hgtrace flight --trigger COND... [--window S] [--after S] [--tick S]\n"
		"                      [--holdoff S] [--max-triggers N] [--flight-prefix PREFIX]\n"
		"                      [--flush S] [--search-max-mb N] OUTPUT [GUEST-OUTPUT...]\n"
		"  the flight recorder on a recording in progress: hgtrace record -o OUTPUT (and\n"
		"  its guests' GUEST-OUTPUT, BASE-NAME.dat) or listen. Keeps only the last pages\n"
		"  of each (--window, 10 s, + --after, 1 s, + 2 ticks), searches them every --tick\n"
		"  (1 s) as hgtrace why does, and when a trigger fires saves the window as\n"
		"  PREFIX-N.dat + PREFIX-N-NAME.dat (PREFIX: OUTPUT's directory's 'flight')\n"
		"  --after S later (and --flush, 1 s: how late that recorder's pages reach its\n"
		"  files), and prints why's split of the delay.\n"
		"  COND: wakeup>DUR[:COMM|PID]  a guest task woken and not running for DUR\n"
		"        timer>DUR              a guest hrtimer handled DUR after its expiry\n"
		"        pair:FROM[:FILTER],TO[:FILTER]>DUR   (pair-cpu: matched per CPU)\n"
		"        preempt>DUR            a vCPU thread preempted in the host for DUR\n"
		"        exit:REASON>DUR        one exit of REASON handled in the host for DUR\n"
		"        marker:TEXT            a trace_marker write holding TEXT (host or guest)\n"
		"  DUR: a number and ns, us, ms or s, under --window. After a trigger, none is\n"
		"  taken for --holdoff (--after); --max-triggers (10) windows at most. SIGUSR1\n"
		"  triggers by hand. A search reads the newest --search-max-mb (256) MB of pages\n"
		"  at most: one behind leaves the older unsearched, and says so.\n"
		"  Runs until SIGINT/SIGTERM or until the host's recording ends.\n");
}

/* The host's recording is over: its directory went, or was never there. */
static bool recording_gone(const char *output)
{
	char *dir = NULL;
	struct stat st;
	bool gone;

	if (asprintf(&dir, "%s.recording", output) < 0)
		return false;
	gone = stat(dir, &st) || !S_ISDIR(st.st_mode);
	free(dir);
	return gone;
}

static int flight_opt(int c, char *arg, void *ctx)
{
	int ret = cmd_flight_opt("flight", c, arg, ctx);

	return ret == -ENOENT ? 1 : ret;
}

static volatile int stop;

int cmd_flight(int argc, char **argv)
{
	static const struct option lopts[] = { CMD_FLIGHT_LONGOPTS,
					       { "flush", required_argument, NULL, CMD_O_FLUSH },
					       { "help", no_argument, NULL, 'h' },
					       { NULL, 0, NULL, 0 } };
	struct cmd_flight_args a = {
		.o = { .sz = sizeof(a.o), .log = stderr, .after_ns = 1000000000 }
	};
	struct hgt_flight *f;
	int ret = 2;

	if (cmd_parse_opts(argc, argv, "+h", lopts, usage, "flight", flight_opt, &a, &ret))
		goto out;
	if (optind >= argc || !a.nt) {
		fprintf(stderr, "hgtrace: flight: %s\n",
			optind >= argc ? "no recording given (OUTPUT, as record -o names it)"
				       : "no trigger given (--trigger COND)");
		usage(stderr);
		goto out;
	}
	if (cmd_flight_defaults("flight", &a))
		goto out;
	if (recording_gone(argv[optind])) {
		fprintf(stderr, "hgtrace: flight: %s: no recording in progress (%s.recording)\n",
			argv[optind], argv[optind]);
		ret = 1;
		goto out;
	}
	a.o.outputs = (const char *const *)argv + optind;
	a.o.nr_outputs = argc - optind;
	cmd_catch_stop(&stop);
	f = hgt_flight_start(&a.o);
	if (!f) {
		cmd_error("flight failed");
		ret = 1;
		goto out;
	}
	cmd_flight_signal(f);
	while (!stop && !recording_gone(argv[optind]))
		usleep(50000);
	cmd_flight_signal(NULL);
	ret = hgt_flight_stop(f) ? 1 : 0;
out:
	free(a.triggers);
	return ret;
}
