// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace listen: the host's side, receiving guest agents. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hgtrace/flight.h>
#include <hgtrace/transport.h>

#include "cmd.h"

static volatile int stop_flag;

/* --flight: a flight recorder on each guest-driven session (--record-host), from its
 * start to its end. */
#define MAX_FLIGHTS 64
struct listen_flight {
	struct cmd_flight_args *fl;
	pthread_mutex_t lock; /* flight_ending() runs in the listener's finish threads */
	struct {
		char name[64];
		struct hgt_flight *f;
	} on[MAX_FLIGHTS];
	int failed;
};

static void flight_failed(struct listen_flight *lf)
{
	__atomic_add_fetch(&lf->failed, 1, __ATOMIC_RELAXED);
}

/* Guest @name's host recording started: a flight recorder on both recordings, its windows
 * DIR/NAME-flight-N.dat (or --flight-prefix's). */
static void flight_started(void *ctx, const char *name, const char *host_path,
			   const char *guest_path)
{
	struct listen_flight *lf = ctx;
	const char *outs[2] = { host_path, guest_path }, *slash = strrchr(host_path, '/');
	struct hgt_flight_opts o = lf->fl->o;
	struct hgt_flight *f;
	char *prefix = NULL;
	int k;

	pthread_mutex_lock(&lf->lock);
	for (k = 0; k < MAX_FLIGHTS && (lf->on[k].f || lf->on[k].name[0]); k++)
		;
	if (k < MAX_FLIGHTS) /* taken: the slot is ours while we start it */
		snprintf(lf->on[k].name, sizeof(lf->on[k].name), "%s", name);
	pthread_mutex_unlock(&lf->lock);
	if (k == MAX_FLIGHTS) {
		fprintf(stderr, "hgtrace: listen: guest %s: no flight recorder: %d run already\n",
			name, MAX_FLIGHTS);
		flight_failed(lf);
		return;
	}
	if (!o.prefix && asprintf(&prefix, "%.*s%s-flight",
				  slash ? (int)(slash - host_path + 1) : 0, host_path, name) < 0)
		prefix = NULL;
	o.prefix = o.prefix ? o.prefix : prefix;
	o.outputs = outs;
	o.nr_outputs = 2;
	o.name = name;
	o.flush_ns = 1000000000;
	/* flight_ending() comes with every page of both written: the last search has no lag */
	o.complete_at_stop = true;
	f = o.prefix ? hgt_flight_start(&o) : NULL;
	free(prefix);
	if (!f) {
		fprintf(stderr, "hgtrace: listen: guest %s: the flight recorder cannot start: %s\n",
			name, hgt_last_error());
		pthread_mutex_lock(&lf->lock);
		lf->on[k].name[0] = 0;
		pthread_mutex_unlock(&lf->lock);
		flight_failed(lf);
		return;
	}
	cmd_flight_signal_also(f, true);
	pthread_mutex_lock(&lf->lock);
	lf->on[k].f = f;
	pthread_mutex_unlock(&lf->lock);
}

/* Guest @name's recordings end next: its flight recorder's last search and windows. */
static void flight_ending(void *ctx, const char *name)
{
	struct listen_flight *lf = ctx;
	struct hgt_flight *f = NULL;

	pthread_mutex_lock(&lf->lock);
	for (int k = 0; k < MAX_FLIGHTS && !f; k++) {
		if (!lf->on[k].f || strcmp(lf->on[k].name, name))
			continue;
		f = lf->on[k].f;
		lf->on[k].f = NULL;
		lf->on[k].name[0] = 0;
	}
	pthread_mutex_unlock(&lf->lock);
	if (!f)
		return;
	cmd_flight_signal_also(f, false);
	if (hgt_flight_stop(f))
		flight_failed(lf);
}

/* --unix PATH:PORT: guests behind a hybrid-vsock VMM (Firecracker, Cloud Hypervisor)
 * connecting to host vsock port PORT reach the UNIX socket PATH_PORT, made here. Returns 0
 * with *@out allocated, or 2 (error said). */
static int unix_arg(const char *arg, char **out)
{
	const char *colon = strrchr(arg, ':');
	unsigned long v;

	if (!colon || colon == arg) {
		fprintf(stderr,
			"hgtrace: listen: --unix '%s': expected PATH:PORT (the VMM's socket, the vsock port the guests connect to)\n",
			arg);
		return 2;
	}
	if (cmd_uint_arg("listen: --unix PATH:PORT", colon + 1, 0xfffffffeUL, &v) || !v)
		return 2;
	free(*out);
	if (asprintf(out, "%.*s_%lu", (int)(colon - arg), arg, v) < 0) {
		*out = NULL;
		fprintf(stderr, "hgtrace: listen: out of memory\n");
		return 2;
	}
	return 0;
}

enum {
	O_FIFO = 256,
	O_TCP,
	O_VSOCK,
	O_START,
	O_STOP,
	O_MAX,
	O_RECORD_HOST,
	O_BIND,
	O_MAX_TOTAL,
	O_SILENT,
	O_UNIX,
	O_FLIGHT
};

/* What the command line asked for. */
struct listen_args {
	struct hgt_listen_opts lo;
	struct hgt_record_opts hro;
	struct hgt_listen_guest *gs;
	char *hvsock;
	const char **events;
	int nev;
	bool flight, fl_opts; /* --flight, a flight option */
	struct cmd_flight_args fl;
};

static void usage(void)
{
	printf("usage: hgtrace listen [-o DIR] [--fifo NAME:DIR]... [--tcp PORT [--bind ADDR]] [--vsock PORT]\n"
	       "                      [--unix PATH:PORT]\n"
	       "                      [--start] [--stop-after MS] [--max-mb N] [--max-total-mb N] [--silent-timeout S]\n"
	       "                      [--record-host [-e SYSTEM[:EVENT]]... [-b KB]\n"
	       "                       [--flight --trigger COND... [--window S] [--after S] [--tick S]\n"
	       "                        [--holdoff S] [--max-triggers N] [--flight-prefix PREFIX]\n"
	       "                        [--search-max-mb N]]]\n"
	       "  --record-host: when a guest starts recording (agent --now -- CMD), record the\n"
	       "  host for the same span into DIR/NAME-host.dat, synced with trace-NAME.dat\n"
	       "  --flight: a flight recorder on each of those sessions (hgtrace flight -h): only\n"
	       "  the last --window kept, the window of each trigger saved as DIR/NAME-flight-N.dat\n"
	       "  and DIR/NAME-flight-N-trace-NAME.dat\n"
	       "  --unix PATH:PORT: guests of a hybrid-vsock VMM (Firecracker, Cloud Hypervisor)\n"
	       "  whose socket is PATH, connecting to vsock port PORT: listens on PATH_PORT\n");
}

/* --fifo NAME:DIR: one more guest. Returns 0 or 2 (said). */
static int fifo_arg(char *arg, struct listen_args *a)
{
	struct hgt_listen_guest *n = realloc(a->gs, sizeof(*n) * (size_t)(a->lo.nr_guests + 1));
	char *name, *dir;

	if (!n)
		return 2;
	a->gs = n;
	if (cmd_split_pair("listen: --fifo", arg, &name, &dir))
		return 2;
	a->gs[a->lo.nr_guests++] = (struct hgt_listen_guest){ .name = name, .dir = dir };
	return 0;
}

/* A size in MB (1 at least) as bytes. Returns 0 or 2 (said). */
static int mb_arg(const char *what, const char *arg, uint64_t *bytes)
{
	unsigned long v;

	if (cmd_uint_arg(what, arg, 1UL << 30, &v) || !v)
		return 2;
	*bytes = (uint64_t)v << 20;
	return 0;
}

/* Option @c: 0, 2 (said), or 1 (-h: the usage printed). */
static int listen_opt(int c, char *arg, struct listen_args *a)
{
	unsigned long v;
	int ret = cmd_flight_opt("listen", c, arg, &a->fl);

	if (ret != -ENOENT) {
		a->fl_opts = true;
		return ret ? 2 : 0;
	}
	switch (c) {
	case 'o':
		a->lo.output_dir = arg;
		return 0;
	case 'e':
		return cmd_push_event(&a->events, &a->nev, arg) ? 2 : 0;
	case 'b':
		if (cmd_uint_arg("listen: -b", arg, 1UL << 30, &v) || !v)
			return 2;
		a->hro.buffer_kb = v;
		return 0;
	case O_RECORD_HOST:
		a->lo.record_host = &a->hro;
		return 0;
	case O_FLIGHT:
		a->flight = true;
		return 0;
	case O_FIFO:
		return fifo_arg(arg, a);
	case O_TCP:
	case O_VSOCK:
		if (cmd_uint_arg("listen: port", arg, 65535, &v))
			return 2;
		if (!v) {
			fprintf(stderr, "hgtrace: listen: port '%s': a port from 1 to 65535\n",
				arg);
			return 2;
		}
		*(c == O_TCP ? &a->lo.tcp_port : &a->lo.vsock_port) = (unsigned int)v;
		return 0;
	case O_UNIX:
		if (unix_arg(arg, &a->hvsock))
			return 2;
		a->lo.hvsock_path = a->hvsock;
		return 0;
	case O_BIND:
		a->lo.bind_addr = arg;
		return 0;
	case O_MAX_TOTAL:
		return mb_arg("listen: --max-total-mb", arg, &a->lo.max_total_bytes);
	case O_SILENT:
		return cmd_silent_arg("listen", arg, &a->lo.silent_ms) ? 2 : 0;
	case O_START:
		a->lo.start = true;
		return 0;
	case O_STOP:
		if (cmd_uint_arg("listen: --stop-after", arg, 86400000UL, &v))
			return 2;
		a->lo.stop_after_ms = (unsigned int)v;
		return 0;
	case O_MAX:
		return mb_arg("listen: --max-mb", arg, &a->lo.max_bytes);
	case 'h':
		usage();
		return 1;
	default:
		return 2;
	}
}

/* The options together. Returns 0, or 2 after saying what is wrong. */
static int check_args(const struct listen_args *a)
{
	const char *why = NULL;

	if (!a->lo.nr_guests && !a->lo.tcp_port && !a->lo.vsock_port && !a->lo.hvsock_path)
		why = "give --fifo NAME:DIR, --tcp PORT, --vsock PORT or --unix PATH:PORT";
	else if (a->lo.record_host && !a->nev)
		why = "--record-host needs the host's events (-e)";
	else if (a->nev && !a->lo.record_host)
		why = "-e is for the host's side: give --record-host";
	else if (a->flight && !a->lo.record_host)
		why = "--flight follows the sessions --record-host records: give --record-host";
	else if (a->fl_opts && !a->flight)
		why = "--trigger, --window, --after, --tick, --holdoff, --max-triggers, --flight-prefix and --search-max-mb need --flight";
	else if (a->flight && !a->fl.nt)
		why = "--flight needs a --trigger COND (hgtrace flight -h)";
	if (why)
		fprintf(stderr, "hgtrace: listen: %s\n", why);
	return why ? 2 : 0;
}

int cmd_listen(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "fifo", required_argument, NULL, O_FIFO },
		{ "bind", required_argument, NULL, O_BIND },
		{ "max-total-mb", required_argument, NULL, O_MAX_TOTAL },
		{ "silent-timeout", required_argument, NULL, O_SILENT },
		{ "tcp", required_argument, NULL, O_TCP },
		{ "vsock", required_argument, NULL, O_VSOCK },
		{ "unix", required_argument, NULL, O_UNIX },
		{ "start", no_argument, NULL, O_START },
		{ "stop-after", required_argument, NULL, O_STOP },
		{ "max-mb", required_argument, NULL, O_MAX },
		{ "record-host", no_argument, NULL, O_RECORD_HOST },
		{ "flight", no_argument, NULL, O_FLIGHT },
		CMD_FLIGHT_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct listen_args a = {
		.lo = { .sz = sizeof(a.lo), .output_dir = ".", .log = stderr, .stop = &stop_flag },
		.hro = { .sz = sizeof(a.hro), .compression = HGT_COMPRESS_ZSTD },
		.fl = { .o = { .sz = sizeof(a.fl.o), .log = stderr, .after_ns = 1000000000 } },
	};
	struct listen_flight *lf = NULL;
	int c, ret = 0;

	optind = 1;
	while (!ret && (c = getopt_long(argc, argv, "+o:e:b:h", lopts, NULL)) != -1)
		ret = listen_opt(c, optarg, &a);
	if (ret == 1) {
		ret = 0;
		goto out;
	}
	if (ret || (ret = check_args(&a)))
		goto out;
	if ((ret = cmd_flight_defaults("listen", &a.fl)))
		goto out;
	a.hro.events = a.events;
	a.hro.nr_events = a.nev;
	a.lo.guests = a.gs;
	if (a.flight) {
		lf = calloc(1, sizeof(*lf));
		if (!lf) {
			ret = 2;
			goto out;
		}
		lf->fl = &a.fl;
		pthread_mutex_init(&lf->lock, NULL);
		a.lo.ctx = lf;
		a.lo.on_host_started = flight_started;
		a.lo.on_host_ending = flight_ending;
	}
	cmd_catch_stop(&stop_flag);
	ret = hgt_listen_run(&a.lo);
	if (ret) {
		cmd_error("listen failed");
		ret = 1;
	}
	if (lf && lf->failed)
		ret = 1;
out:
	free(lf);
	free(a.gs);
	free(a.hvsock);
	free(a.events);
	free(a.fl.triggers);
	return ret;
}
