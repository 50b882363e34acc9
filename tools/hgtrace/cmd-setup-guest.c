// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace setup-guest: a guest's FIFOs and its QEMU or libvirt configuration. */
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
	int c, rc;

	optind = 1;
	while ((c = cmd_getopt(argc, argv, "c:d:h", lopts, setup_guest_usage, &rc)) != -1) {
		if (c == CMD_OPT_EXIT)
			return rc;
		if (c == 'c' && (cmd_uint_arg("setup-guest: --cpus", optarg, 1024, &cpus) || !cpus))
			return 2;
		if (c == 'd')
			dir = optarg;
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
