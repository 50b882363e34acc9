// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace agent: the guest's side of a session. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hgtrace/transport.h>

#include "cmd.h"

static volatile int stop_flag;

/* Recording (and the host too, when it records its side): run the command. */
static void run_command(void *ctx)
{
	cmd_child_spawn(ctx, "agent");
}

enum {
	O_FIFOS = 256,
	O_PORTS,
	O_TCP,
	O_VSOCK,
	O_NOW,
	O_NOSPLICE,
	O_MMAP,
	O_SERVE,
	O_LISTEN,
	O_FLUSH,
	O_SILENT,
	O_TRACECMD
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hgtrace agent [--ports DIR | --fifos DIR | --tcp HOST:PORT | --vsock CID:PORT]\n"
		"                     [-e SYSTEM[:EVENT] [-f FILTER]]... [-C CLOCK] [-b KB] [-B INSTANCE] [--now] [--no-splice] [--mmap] [--serve] [-o]\n"
		"                     [--flush-ms MS] [--silent-timeout S] [--trace-cmd tcp:[ADDR:]PORT|vsock:PORT]\n"
		"                     [-- COMMAND ARGS...]\n"
		"  -- COMMAND: record now, run COMMAND once the host says go (or after 3 s), stop when it exits\n"
		"  --serve: a service: record each session a host starts (hgtrace record -A) with\n"
		"           the host's settings, then wait for the next; with --listen\n"
		"           tcp:[ADDR:]PORT or vsock:PORT the host dials the agent\n"
		"  --trace-cmd tcp:[ADDR:]PORT|vsock:PORT: a service for trace-cmd hosts\n"
		"           (trace-cmd record -A ADDR:PORT); vsock port 823 is trace-cmd's own\n"
		"  --silent-timeout S: --serve ends a session whose host said nothing for S s (30)\n"
		"  -o: debug, every CPU's raw pages to stdout until SIGINT\n");
}

/* --tcp HOST:PORT or --vsock CID:PORT: the host to dial. Returns 0 or 2 (error said). */
static int dial_arg(int c, char *arg, struct hgt_agent_opts *ao)
{
	unsigned long v;
	char *a, *b;

	if (cmd_split_pair(c == O_TCP ? "agent: --tcp" : "agent: --vsock", arg, &a, &b) ||
	    cmd_uint_arg("agent: port", b, 65535, &v))
		return 2;
	ao->port = (unsigned int)v;
	if (c == O_TCP) {
		ao->transport = HGT_TRANSPORT_TCP;
		ao->host = a;
		return 0;
	}
	ao->transport = HGT_TRANSPORT_VSOCK;
	if (cmd_uint_arg("agent: cid", a, 0xffffffffUL, &v))
		return 2;
	ao->cid = (unsigned int)v;
	return 0;
}

/* --listen tcp:[ADDR:]PORT or vsock:PORT: the host dials us. Returns 0 or 2 (error said). */
static int listen_arg(char *arg, struct hgt_agent_opts *ao)
{
	unsigned long v;

	ao->listen = true;
	if (!strncmp(arg, "vsock:", 6)) {
		ao->transport = HGT_TRANSPORT_VSOCK;
		if (cmd_uint_arg("agent: --listen vsock:PORT", arg + 6, 65535, &v) || !v)
			return 2;
	} else if (!strncmp(arg, "tcp:", 4)) {
		char *c = strrchr(arg + 4, ':');

		ao->transport = HGT_TRANSPORT_TCP;
		if (c) {
			*c = 0;
			ao->host = arg + 4;
		}
		if (cmd_uint_arg("agent: --listen tcp:[ADDR:]PORT", c ? c + 1 : arg + 4, 65535,
				 &v) ||
		    !v)
			return 2;
	} else {
		fprintf(stderr, "hgtrace: agent: --listen '%s': tcp:[ADDR:]PORT or vsock:PORT\n",
			arg);
		return 2;
	}
	ao->port = (unsigned int)v;
	return 0;
}

/* What the command line asked for. */
struct agent_args {
	struct hgt_record_opts *ro;
	struct hgt_agent_opts *ao;
	const char **events;  /* -e */
	const char **filters; /* -f: of the -e before it */
	int nev;
};

/* -e and -f (the filter of the -e before it). Returns 0 or 2 (error said). */
static int event_opt(int c, const char *arg, struct agent_args *a)
{
	const char **f;

	if (c == 'f') {
		if (!a->nev) {
			fprintf(stderr,
				"hgtrace: agent: -f '%s': after the -e whose events it filters\n",
				arg);
			return 2;
		}
		a->filters[a->nev - 1] = arg;
		return 0;
	}
	f = realloc(a->filters, sizeof(*f) * (size_t)(a->nev + 1));
	if (!f)
		return 2;
	a->filters = f;
	f[a->nev] = NULL;
	return cmd_push_event(&a->events, &a->nev, arg) ? 2 : 0;
}

/* The recording's options: -C, -b, -B, --no-splice, --mmap, --flush-ms. Returns 0, 2 (error
 * said), or -1 for the options that are not the recording's. */
static int record_opt(int c, const char *arg, struct hgt_record_opts *ro)
{
	unsigned long v;
	int ms;

	switch (c) {
	case 'C':
		ro->clock = arg;
		return 0;
	case 'b':
		if (cmd_uint_arg("agent: -b", arg, 1UL << 30, &v))
			return 2;
		ro->buffer_kb = v;
		return 0;
	case 'B':
		ro->instance = arg;
		return 0;
	case O_NOSPLICE:
		ro->no_splice = true;
		return 0;
	case O_MMAP:
		ro->mmap = true;
		return 0;
	case O_FLUSH:
		if (cmd_int_arg("agent", "--flush-ms", arg, 10, 3600000, &ms))
			return 2;
		ro->flush_ms = (unsigned int)ms;
		return 0;
	}
	return -1;
}

/* The agent's own options. Returns 0 or 2 (error said). */
static int agent_opt(int c, char *arg, struct hgt_agent_opts *ao)
{
	switch (c) {
	case 'o':
		ao->transport = HGT_TRANSPORT_STDOUT;
		return 0;
	case O_FIFOS:
	case O_PORTS:
		ao->transport = c == O_FIFOS ? HGT_TRANSPORT_FIFOS : HGT_TRANSPORT_PORTS;
		ao->dir = arg;
		return 0;
	case O_TCP:
	case O_VSOCK:
		return dial_arg(c, arg, ao);
	case O_LISTEN:
		return listen_arg(arg, ao);
	case O_TRACECMD:
		/* trace-cmd's agent: a service, dialed */
		ao->serve = ao->trace_cmd = true;
		return listen_arg(arg, ao);
	case O_NOW:
		ao->now = true;
		return 0;
	case O_SERVE:
		ao->serve = true;
		return 0;
	case O_SILENT:
		return cmd_silent_arg("agent", arg, &ao->host_silent_ms) ? 2 : 0;
	}
	return 2; /* getopt said what was wrong */
}

/* One option of cmd_agent() (cmd_parse_opts() calls it). */
static int an_opt(int c, char *arg, void *ctx)
{
	struct agent_args *a = ctx;
	int err = c == 'e' || c == 'f' ? event_opt(c, arg, a) : record_opt(c, arg, a->ro);

	return err < 0 ? agent_opt(c, arg, a->ao) : err;
}

int cmd_agent(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "fifos", required_argument, NULL, O_FIFOS },
		{ "ports", required_argument, NULL, O_PORTS },
		{ "tcp", required_argument, NULL, O_TCP },
		{ "vsock", required_argument, NULL, O_VSOCK },
		{ "now", no_argument, NULL, O_NOW },
		{ "no-splice", no_argument, NULL, O_NOSPLICE },
		{ "mmap", no_argument, NULL, O_MMAP },
		{ "serve", no_argument, NULL, O_SERVE },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "flush-ms", required_argument, NULL, O_FLUSH },
		{ "silent-timeout", required_argument, NULL, O_SILENT },
		{ "trace-cmd", required_argument, NULL, O_TRACECMD },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_record_opts, ro);
	HGT_OPTS(hgt_agent_opts, ao, .transport = HGT_TRANSPORT_PORTS, .dir = "/dev/virtio-ports",
		 .record = &ro, .log = stderr, .stop = &stop_flag);
	struct agent_args a = { .ro = &ro, .ao = &ao };
	int ret = 2;

	if (cmd_parse_opts(argc, argv, "+e:f:C:b:B:oh", lopts, usage, "agent", an_opt, &a, &ret))
		goto out;
	ro.events = a.events;
	ro.filters = a.filters;
	ro.nr_events = a.nev;
	if (optind < argc) {
		/* records while the command runs (guest-driven: listen --record-host) */
		if (ao.serve) {
			fprintf(stderr,
				"hgtrace: agent: a command and --serve do not go together\n");
			goto out;
		}
		ao.now = true;
		ao.started = run_command;
		ao.ctx = argv + optind;
	}
	cmd_catch_stop(&stop_flag);
	cmd_child_watch(&stop_flag);
	ret = hgt_agent_run(&ao);
	cmd_child_end();
	if (ret) {
		cmd_error("agent failed");
		ret = 1;
	}
out:
	free(a.events);
	free(a.filters);
	return ret;
}
