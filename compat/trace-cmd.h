/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trace-cmd.h - libtracecmd's peer API, implemented by libhgtrace-tracecmd.
 *
 * Programs written against libtracecmd's tracecmd_open(), tracecmd_open_head(),
 * tracecmd_close(), tracecmd_get_traceid() and tracecmd_get_guest_cpumap() compile
 * unchanged against this header and link with
 *   cc prog.c $(pkg-config --cflags --libs hgtrace-tracecmd)
 * Same semantics: names and arrays returned are owned by the handle (not to be freed).
 * This is an independent implementation on top of libhgtrace, not trace-cmd's code.
 */
#ifndef HGTRACE_COMPAT_TRACE_CMD_H
#define HGTRACE_COMPAT_TRACE_CMD_H

#include <event-parse.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tracecmd_input;

/** tracecmd_open - open a trace.dat with its event formats; NULL on error. */
struct tracecmd_input *tracecmd_open(const char *file, int flags);

/** tracecmd_open_head - open only the headers and options (no event formats). */
struct tracecmd_input *tracecmd_open_head(const char *file, int flags);

/** tracecmd_close - close a handle (NULL is ignored). */
void tracecmd_close(struct tracecmd_input *handle);

/** tracecmd_get_traceid - the file's trace id (TRACEID option), 0 if none. */
unsigned long long tracecmd_get_traceid(struct tracecmd_input *handle);

/**
 * tracecmd_get_guest_cpumap - from a host file, the guest with trace id @trace_id: its
 * name, vCPU count and host thread per vCPU id. Returns 0, or -1 when the host has no such
 * guest. The outputs are owned by @handle.
 */
int tracecmd_get_guest_cpumap(struct tracecmd_input *handle, unsigned long long trace_id,
			      const char **name, int *vcpu_count, const int **cpu_pid);

/** tracecmd_get_tep - the handle's libtraceevent handle (NULL for head-only opens). */
struct tep_handle *tracecmd_get_tep(struct tracecmd_input *handle);

#ifdef __cplusplus
}
#endif

#endif
