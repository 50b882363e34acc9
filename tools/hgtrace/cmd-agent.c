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

int cmd_agent(int argc, char **argv)
{
	enum {
		O_FIFOS = 256,
		O_PORTS,
		O_TCP,
		O_VSOCK,
		O_NOW,
		O_NOSPLICE,
		O_SERVE,
		O_LISTEN,
		O_FLUSH,
		O_SILENT
	};
	static const struct option lopts[] = {
		{ "fifos", required_argument, NULL, O_FIFOS },
		{ "ports", required_argument, NULL, O_PORTS },
		{ "tcp", required_argument, NULL, O_TCP },
		{ "vsock", required_argument, NULL, O_VSOCK },
		{ "now", no_argument, NULL, O_NOW },
		{ "no-splice", no_argument, NULL, O_NOSPLICE },
		{ "serve", no_argument, NULL, O_SERVE },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "flush-ms", required_argument, NULL, O_FLUSH },
		{ "silent-timeout", required_argument, NULL, O_SILENT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_record_opts, ro);
	HGT_OPTS(hgt_agent_opts, ao, .transport = HGT_TRANSPORT_PORTS, .dir = "/dev/virtio-ports",
		 .record = &ro, .log = stderr, .stop = &stop_flag);
	const char **events = NULL;
	int nev = 0, c, ret = 2;
	unsigned long v;
	char *a, *b;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+e:C:b:B:oh", lopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			ao.transport = HGT_TRANSPORT_STDOUT;
			break;
		case 'e':
			if (cmd_push_event(&events, &nev, optarg))
				goto out;
			break;
		case 'C':
			ro.clock = optarg;
			break;
		case 'b':
			if (cmd_uint_arg("agent: -b", optarg, 1UL << 30, &v))
				goto out;
			ro.buffer_kb = v;
			break;
		case 'B':
			ro.instance = optarg;
			break;
		case O_FIFOS:
		case O_PORTS:
			ao.transport = c == O_FIFOS ? HGT_TRANSPORT_FIFOS : HGT_TRANSPORT_PORTS;
			ao.dir = optarg;
			break;
		case O_TCP:
		case O_VSOCK:
			if (cmd_split_pair(c == O_TCP ? "agent: --tcp" : "agent: --vsock", optarg,
					   &a, &b) ||
			    cmd_uint_arg("agent: port", b, 65535, &v))
				goto out;
			ao.port = (unsigned int)v;
			if (c == O_TCP) {
				ao.transport = HGT_TRANSPORT_TCP;
				ao.host = a;
			} else {
				ao.transport = HGT_TRANSPORT_VSOCK;
				if (cmd_uint_arg("agent: cid", a, 0xffffffffUL, &v))
					goto out;
				ao.cid = (unsigned int)v;
			}
			break;
		case O_NOW:
			ao.now = true;
			break;
		case O_NOSPLICE:
			ro.no_splice = true;
			break;
		case O_SERVE:
			ao.serve = true;
			break;
		case O_FLUSH: {
			int ms;

			if (cmd_int_arg("agent", "--flush-ms", optarg, 10, 3600000, &ms))
				goto out;
			ro.flush_ms = (unsigned int)ms;
			break;
		}
		case O_SILENT:
			if (cmd_silent_arg("agent", optarg, &ao.host_silent_ms))
				goto out;
			break;
		case O_LISTEN:
			/* tcp:[ADDR:]PORT or vsock:PORT */
			ao.listen = true;
			if (!strncmp(optarg, "vsock:", 6)) {
				ao.transport = HGT_TRANSPORT_VSOCK;
				if (cmd_uint_arg("agent: --listen vsock:PORT", optarg + 6, 65535,
						 &v) ||
				    !v)
					goto out;
			} else if (!strncmp(optarg, "tcp:", 4)) {
				char *c = strrchr(optarg + 4, ':');

				ao.transport = HGT_TRANSPORT_TCP;
				if (c) {
					*c = 0;
					ao.host = optarg + 4;
				}
				if (cmd_uint_arg("agent: --listen tcp:[ADDR:]PORT",
						 c ? c + 1 : optarg + 4, 65535, &v) ||
				    !v)
					goto out;
			} else {
				fprintf(stderr,
					"hgtrace: agent: --listen '%s': tcp:[ADDR:]PORT or vsock:PORT\n",
					optarg);
				goto out;
			}
			ao.port = (unsigned int)v;
			break;
		case 'h':
			printf("usage: hgtrace agent [--ports DIR | --fifos DIR | --tcp HOST:PORT | --vsock CID:PORT]\n"
			       "                     [-e SYSTEM[:EVENT]]... [-C CLOCK] [-b KB] [-B INSTANCE] [--now] [--no-splice] [--serve] [-o]\n"
			       "                     [--flush-ms MS] [--silent-timeout S]\n"
			       "                     [-- COMMAND ARGS...]\n"
			       "  -- COMMAND: record now, run COMMAND once the host says go (or after 3 s), stop when it exits\n"
			       "  --serve: a service: record each session a host starts (hgtrace record -A) with\n"
			       "           the host's settings, then wait for the next; with --listen\n"
			       "           tcp:[ADDR:]PORT or vsock:PORT the host dials the agent\n"
			       "  --silent-timeout S: --serve ends a session whose host said nothing for S s (30)\n"
			       "  -o: debug, every CPU's raw pages to stdout until SIGINT\n");
			ret = 0;
			goto out;
		default:
			goto out;
		}
	}
	ro.events = events;
	ro.nr_events = nev;
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
	free(events);
	return ret;
}
