// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace listen: the host's side, receiving guest agents. */
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
		O_SILENT,
		O_UNIX
	};
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_listen_opts, lo, .output_dir = ".", .log = stderr, .stop = &stop_flag);
	HGT_OPTS(hgt_record_opts, hro, .compression = HGT_COMPRESS_ZSTD);
	struct hgt_listen_guest *gs = NULL;
	char *hvsock = NULL;
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
			if (cmd_uint_arg("listen: -b", optarg, 1UL << 30, &v) || !v)
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

			if (!n || cmd_split_pair("listen: --fifo", optarg, &a, &b))
				goto out;
			gs = n;
			gs[lo.nr_guests++] = (struct hgt_listen_guest){ .name = a, .dir = b };
			break;
		}
		case O_TCP:
		case O_VSOCK:
			if (cmd_uint_arg("listen: port", optarg, 65535, &v) || !v)
				goto out;
			*(c == O_TCP ? &lo.tcp_port : &lo.vsock_port) = (unsigned int)v;
			break;
		case O_UNIX:
			if (unix_arg(optarg, &hvsock))
				goto out;
			lo.hvsock_path = hvsock;
			break;
		case O_BIND:
			lo.bind_addr = optarg;
			break;
		case O_MAX_TOTAL:
			if (cmd_uint_arg("listen: --max-total-mb", optarg, 1UL << 30, &v) || !v)
				goto out;
			lo.max_total_bytes = (uint64_t)v << 20;
			break;
		case O_SILENT:
			if (cmd_silent_arg("listen", optarg, &lo.silent_ms))
				goto out;
			break;
		case O_START:
			lo.start = true;
			break;
		case O_STOP:
			if (cmd_uint_arg("listen: --stop-after", optarg, 86400000UL, &v))
				goto out;
			lo.stop_after_ms = (unsigned int)v;
			break;
		case O_MAX:
			if (cmd_uint_arg("listen: --max-mb", optarg, 1UL << 30, &v) || !v)
				goto out;
			lo.max_bytes = (uint64_t)v << 20;
			break;
		case 'h':
			printf("usage: hgtrace listen [-o DIR] [--fifo NAME:DIR]... [--tcp PORT [--bind ADDR]] [--vsock PORT]\n"
			       "                      [--unix PATH:PORT]\n"
			       "                      [--start] [--stop-after MS] [--max-mb N] [--max-total-mb N] [--silent-timeout S]\n"
			       "                      [--record-host [-e SYSTEM[:EVENT]]... [-b KB]]\n"
			       "  --record-host: when a guest starts recording (agent --now -- CMD), record the\n"
			       "  host for the same span into DIR/NAME-host.dat, synced with trace-NAME.dat\n"
			       "  --unix PATH:PORT: guests of a hybrid-vsock VMM (Firecracker, Cloud Hypervisor)\n"
			       "  whose socket is PATH, connecting to vsock port PORT: listens on PATH_PORT\n");
			ret = 0;
			goto out;
		default:
			goto out;
		}
	}
	if (!lo.nr_guests && !lo.tcp_port && !lo.vsock_port && !lo.hvsock_path) {
		fprintf(stderr,
			"hgtrace: listen: give --fifo NAME:DIR, --tcp PORT, --vsock PORT or --unix PATH:PORT\n");
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
	cmd_catch_stop(&stop_flag);
	ret = hgt_listen_run(&lo);
	if (ret) {
		cmd_error("listen failed");
		ret = 1;
	}
out:
	free(gs);
	free(hvsock);
	free(events);
	return ret;
}
