// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Whether a symbolic link may be followed to write a file: the kernel's protected_symlinks
 * rule, applied whatever the sysctl says (it is 0 on some systems). In a sticky
 * world-writable directory (/tmp) anybody can plant a link, so one is followed only when
 * the writer owns it or the directory's owner does. Shared by libhgtrace (every file it
 * writes) and libhgtrace-probes (HGTRACE_FILE).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common-local.h"

int hgt__link_check(const char *path, const struct stat *lst, char *why, size_t n)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	struct stat d;

	if (!S_ISLNK(lst->st_mode))
		return 0;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (stat(dir, &d))
		return 0; /* the open that follows says what is wrong */
	if (!(d.st_mode & S_ISVTX) || !(d.st_mode & S_IWOTH) || lst->st_uid == geteuid() ||
	    lst->st_uid == d.st_uid)
		return 0;
	snprintf(
		why, n,
		"a symbolic link of uid %u in %s, a sticky world-writable directory: not followed (anybody could have planted it)",
		(unsigned)lst->st_uid, dir);
	return -EPERM;
}
