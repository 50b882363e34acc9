// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer target for the listener's control-stream parser: any bytes as what a guest's
 * agent sends (HELLO, metadata, options, END, probe replies), read in two pieces; a stream
 * that describes a whole file is written out, into a temporary directory.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "transport/proto.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char dir[] = "/tmp/hgt-fuzz-listen.XXXXXX";

	(void)argc;
	(void)argv;
	if (!mkdtemp(dir))
		abort();
	snprintf(base, sizeof(base), "%s/out", dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hgt__listen_fuzz(data, size, base, getenv("HGT_FUZZ_LOG") ? stderr : NULL);
	return 0;
}
