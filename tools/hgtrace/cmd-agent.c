// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace agent (guest) and hgtrace listen / setup-guest (host). */
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

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Recording (and the host too, when it records its side): run the command. */
static void run_command(void *ctx)
{
	cmd_child_spawn(ctx, "agent");
}

static int parse_uint(const char *what, const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *v > max || *s == '-') {
		fprintf(stderr, "hgtrace: %s '%s': expected a number up to %lu\n", what, s, max);
		return -1;
	}
	return 0;
}

/* --silent-timeout S of agent and listen: how long the peer may say nothing (at least 10 s:
 * each side sends something every HGT_AGENT_HEARTBEAT_MS). */
static int parse_silent(const char *cmd, const char *s, unsigned int *ms)
{
	char what[64];
	unsigned long v;

	snprintf(what, sizeof(what), "%s: --silent-timeout", cmd);
	if (parse_uint(what, s, 86400, &v))
		return -1;
	if (v < 10) {
		fprintf(stderr, "hgtrace: %s %lu: at least 10 s (a heartbeat goes every %d s)\n",
			what, v, HGT_AGENT_HEARTBEAT_MS / 1000);
		return -1;
	}
	*ms = (unsigned int)v * 1000;
	return 0;
}

/* "A:B": splits at the last colon. */
static int split_pair(const char *what, char *s, char **a, char **b)
{
	char *c = strrchr(s, ':');

	if (!c || c == s || !c[1]) {
		fprintf(stderr, "hgtrace: %s '%s': expected A:B\n", what, s);
		return -1;
	}
	*c = 0;
	*a = s;
	*b = c + 1;
	return 0;
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
			if (parse_uint("agent: -b", optarg, 1UL << 30, &v))
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
			if (split_pair(c == O_TCP ? "agent: --tcp" : "agent: --vsock", optarg, &a,
				       &b) ||
			    parse_uint("agent: port", b, 65535, &v))
				goto out;
			ao.port = (unsigned int)v;
			if (c == O_TCP) {
				ao.transport = HGT_TRANSPORT_TCP;
				ao.host = a;
			} else {
				ao.transport = HGT_TRANSPORT_VSOCK;
				if (parse_uint("agent: cid", a, 0xffffffffUL, &v))
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
		case O_FLUSH:
			if (parse_uint("agent: --flush-ms", optarg, 3600000, &v))
				goto out;
			if (v < 10) {
				fprintf(stderr, "hgtrace: agent: --flush-ms '%s': 10 to 3600000\n",
					optarg);
				goto out;
			}
			ro.flush_ms = (unsigned int)v;
			break;
		case O_SILENT:
			if (parse_silent("agent", optarg, &ao.host_silent_ms))
				goto out;
			break;
		case O_LISTEN:
			/* tcp:[ADDR:]PORT or vsock:PORT */
			ao.listen = true;
			if (!strncmp(optarg, "vsock:", 6)) {
				ao.transport = HGT_TRANSPORT_VSOCK;
				if (parse_uint("agent: --listen vsock:PORT", optarg + 6, 65535,
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
				if (parse_uint("agent: --listen tcp:[ADDR:]PORT",
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
	catch_signals();
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

int cmd_listen(int argc, char **argv)
{
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
		O_SILENT
	};
	static const struct option lopts[] = {
		{ "fifo", required_argument, NULL, O_FIFO },
		{ "bind", required_argument, NULL, O_BIND },
		{ "max-total-mb", required_argument, NULL, O_MAX_TOTAL },
		{ "silent-timeout", required_argument, NULL, O_SILENT },
		{ "tcp", required_argument, NULL, O_TCP },
		{ "vsock", required_argument, NULL, O_VSOCK },
		{ "start", no_argument, NULL, O_START },
		{ "stop-after", required_argument, NULL, O_STOP },
		{ "max-mb", required_argument, NULL, O_MAX },
		{ "record-host", no_argument, NULL, O_RECORD_HOST },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_listen_opts, lo, .output_dir = ".", .log = stderr, .stop = &stop_flag);
	HGT_OPTS(hgt_record_opts, hro, .compression = HGT_COMPRESS_ZSTD);
	struct hgt_listen_guest *gs = NULL;
	const char **events = NULL;
	int c, ret = 2, nev = 0;
	unsigned long v;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:e:b:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			lo.output_dir = optarg;
			break;
		case 'e':
			if (cmd_push_event(&events, &nev, optarg))
				goto out;
			break;
		case 'b':
			if (parse_uint("listen: -b", optarg, 1UL << 30, &v) || !v)
				goto out;
			hro.buffer_kb = v;
			break;
		case O_RECORD_HOST:
			lo.record_host = &hro;
			break;
		case O_FIFO: {
			struct hgt_listen_guest *n =
				realloc(gs, sizeof(*n) * (size_t)(lo.nr_guests + 1));
			char *a, *b;

			if (!n || split_pair("listen: --fifo", optarg, &a, &b))
				goto out;
			gs = n;
			gs[lo.nr_guests++] = (struct hgt_listen_guest){ .name = a, .dir = b };
			break;
		}
		case O_TCP:
		case O_VSOCK:
			if (parse_uint("listen: port", optarg, 65535, &v) || !v)
				goto out;
			*(c == O_TCP ? &lo.tcp_port : &lo.vsock_port) = (unsigned int)v;
			break;
		case O_BIND:
			lo.bind_addr = optarg;
			break;
		case O_MAX_TOTAL:
			if (parse_uint("listen: --max-total-mb", optarg, 1UL << 30, &v) || !v)
				goto out;
			lo.max_total_bytes = (uint64_t)v << 20;
			break;
		case O_SILENT:
			if (parse_silent("listen", optarg, &lo.silent_ms))
				goto out;
			break;
		case O_START:
			lo.start = true;
			break;
		case O_STOP:
			if (parse_uint("listen: --stop-after", optarg, 86400000UL, &v))
				goto out;
			lo.stop_after_ms = (unsigned int)v;
			break;
		case O_MAX:
			if (parse_uint("listen: --max-mb", optarg, 1UL << 30, &v) || !v)
				goto out;
			lo.max_bytes = (uint64_t)v << 20;
			break;
		case 'h':
			printf("usage: hgtrace listen [-o DIR] [--fifo NAME:DIR]... [--tcp PORT [--bind ADDR]] [--vsock PORT]\n"
			       "                      [--start] [--stop-after MS] [--max-mb N] [--max-total-mb N] [--silent-timeout S]\n"
			       "                      [--record-host [-e SYSTEM[:EVENT]]... [-b KB]]\n"
			       "  --record-host: when a guest starts recording (agent --now -- CMD), record the\n"
			       "  host for the same span into DIR/NAME-host.dat, synced with trace-NAME.dat\n");
			ret = 0;
			goto out;
		default:
			goto out;
		}
	}
	if (!lo.nr_guests && !lo.tcp_port && !lo.vsock_port) {
		fprintf(stderr,
			"hgtrace: listen: give --fifo NAME:DIR, --tcp PORT or --vsock PORT\n");
		goto out;
	}
	if (lo.record_host && !nev) {
		fprintf(stderr, "hgtrace: listen: --record-host needs the host's events (-e)\n");
		goto out;
	}
	if (nev && !lo.record_host) {
		fprintf(stderr, "hgtrace: listen: -e is for the host's side: give --record-host\n");
		goto out;
	}
	hro.events = events;
	hro.nr_events = nev;
	lo.guests = gs;
	catch_signals();
	ret = hgt_listen_run(&lo);
	if (ret) {
		cmd_error("listen failed");
		ret = 1;
	}
out:
	free(gs);
	free(events);
	return ret;
}

static void setup_guest_usage(FILE *f)
{
	fprintf(f, "usage: hgtrace setup-guest NAME [--cpus N] [--dir DIR]\n"
		   "  makes DIR/NAME's FIFOs (agent-ctl-path and trace-path-cpuN, .in and .out)\n"
		   "  and prints the QEMU options and libvirt XML that give them to the guest\n"
		   "  --cpus N   guest CPUs (1)\n"
		   "  --dir DIR  where (.)\n");
}

int cmd_setup_guest(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "cpus", required_argument, NULL, 'c' },
		{ "dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = ".";
	unsigned long cpus = 1;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:d:h", lopts, NULL)) != -1) {
		if (c == 'c') {
			if (parse_uint("setup-guest: --cpus", optarg, 1024, &cpus) || !cpus)
				return 2;
		} else if (c == 'd') {
			dir = optarg;
		} else if (c == 'h') {
			setup_guest_usage(stdout);
			return 0;
		} else {
			setup_guest_usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		setup_guest_usage(stderr);
		return 2;
	}
	if (hgt_setup_guest(dir, argv[optind], (int)cpus, stdout)) {
		cmd_error("setup-guest failed");
		return 1;
	}
	return 0;
}
