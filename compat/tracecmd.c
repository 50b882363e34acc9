// SPDX-License-Identifier: LGPL-2.1-or-later
/* libtracecmd's peer API over libhgtrace (see trace-cmd.h). */
#include <errno.h>
#include <stdio.h>

#include <hgtrace/peer.h>
#include <hgtrace/tracedat.h>

#include "trace-cmd.h"

/* A tracecmd_input is an hgt_input. */
static struct tracecmd_input *open_with(const char *file, unsigned int flags)
{
	HGT_OPTS(hgt_open_opts, o, .flags = flags | HGT_OPEN_QUIET);
	struct hgt_input *in = hgt_input_open(file, &o);

	if (!in)
		fprintf(stderr, "%s\n", hgt_last_error());
	return (struct tracecmd_input *)in;
}

struct tracecmd_input *tracecmd_open(const char *file, int flags)
{
	(void)flags;
	return open_with(file, 0);
}

struct tracecmd_input *tracecmd_open_head(const char *file, int flags)
{
	(void)flags;
	return open_with(file, HGT_OPEN_HEAD_ONLY);
}

void tracecmd_close(struct tracecmd_input *handle)
{
	hgt_input_close((struct hgt_input *)handle);
}

unsigned long long tracecmd_get_traceid(struct tracecmd_input *handle)
{
	uint64_t id = 0;

	if (!handle || !hgt_input_trace_id((struct hgt_input *)handle, &id))
		return 0;
	return id;
}

int tracecmd_get_guest_cpumap(struct tracecmd_input *handle, unsigned long long trace_id,
			      const char **name, int *vcpu_count, const int **cpu_pid)
{
	struct hgt_guest g;

	if (!handle || hgt_input_guest_by_id((struct hgt_input *)handle, trace_id, &g))
		return -1;
	if (name)
		*name = g.name;
	if (vcpu_count)
		*vcpu_count = g.nr_vcpus;
	if (cpu_pid)
		*cpu_pid = g.cpu_pid;
	return 0;
}

struct tep_handle *tracecmd_get_tep(struct tracecmd_input *handle)
{
	return handle ? hgt_input_tep((struct hgt_input *)handle) : NULL;
}
