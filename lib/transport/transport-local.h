/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal helpers of lib/transport. */
#ifndef HGTRACE_TRANSPORT_LOCAL_H
#define HGTRACE_TRANSPORT_LOCAL_H

#include <stddef.h>
#include <sys/types.h>

/* @path's contents (at most @cap - 1 bytes), NUL-terminated; its length or -1 (vmm.c). */
ssize_t hgt__read_small(const char *path, char *buf, size_t cap);

#endif
