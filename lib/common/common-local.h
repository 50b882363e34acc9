/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Plumbing shared by the parts of libhgtrace and by libhgtrace-probes. */
#ifndef HGTRACE_COMMON_LOCAL_H
#define HGTRACE_COMMON_LOCAL_H

#include <stddef.h>
#include <sys/stat.h>

/*
 * hgt__link_check - whether @path, a symbolic link as lstat() gave @lst, may be followed to
 * write: not in a sticky world-writable directory unless the writer (euid) or the
 * directory's owner owns the link (the kernel's protected_symlinks rule, whatever the
 * sysctl says). 0 (also for anything but a link) or -EPERM with the reason in @why.
 */
int hgt__link_check(const char *path, const struct stat *lst, char *why, size_t n);

#endif
