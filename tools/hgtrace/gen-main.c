// SPDX-License-Identifier: GPL-2.0-or-later
/* The generator alone, built first: libhgtrace's own probes are generated with it. */
#include "cmd.h"

int main(int argc, char **argv)
{
	return cmd_gen(argc, argv);
}
