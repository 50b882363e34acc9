// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for the probe runtime's control commands (what `hgtrace ctl` sends over
 * the control socket): any bytes as one command line, run against the library's own event
 * group. Inputs naming a path with '/' are skipped (trace-file set would write there); the
 * trace file the commands may start is written in a temporary directory.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hgtrace/probes.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char dir[] = "/tmp/hgt-fuzz-ctl.XXXXXX";

	(void)argc;
	(void)argv;
	if (!mkdtemp(dir) || chdir(dir))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[65536];
	char *line;

	if (size > 4096 || memchr(data, '/', size))
		return 0;
	line = malloc(size + 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	hgt_probe_command(line, out, sizeof(out));
	free(line);
	return 0;
}
