// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Writing a file without ever destroying the one it replaces: the bytes go to an unnamed
 * temporary file in the target's directory, which is given the target's name only when
 * everything was written. A failure, a full disk or a kill leaves the old target (and any
 * input that was the same file under another name) as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hgtrace/output.h>

#include "../common/common-local.h"
#include "tracedat-local.h"

struct hgt_newfile {
	char *target;  /* the path that is replaced: a symbolic link's target, resolved */
	char *named;   /* the temporary's name when O_TMPFILE is not supported, or NULL */
	int fd;	       /* -1 once handed over */
	bool in_place; /* a non-regular target opened for writing as it is */
	unsigned int flags;
	int (*before_publish)(void *ctx, int fd); /* hgt__newfile_before_publish() */
	void *bp_ctx;
};

/* The process's umask, read without changing it (022 when /proc cannot tell). */
static mode_t umask_now(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	unsigned int m = 022;

	if (!f)
		return 022;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Umask: %o", &m) == 1)
			break;
	fclose(f);
	return (mode_t)m;
}

static const char *kind_of(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* @path with a symbolic link at its end followed (one that points nowhere is refused). */
static int resolve(const char *path, char **target, struct stat *st, bool *exists)
{
	char *r;

	*exists = false;
	if (lstat(path, st)) {
		if (errno != ENOENT)
			return hgt__errorf(errno, "%s: %s", path, strerror(errno));
		*target = strdup(path);
		return *target ? 0 : -ENOMEM;
	}
	if (S_ISLNK(st->st_mode)) {
		char why[512];

		if (hgt__link_check(path, st, why, sizeof(why)))
			return hgt__errorf(EPERM, "%s: %s", path, why);
		r = realpath(path, NULL);
		if (!r)
			return hgt__errorf(errno, "%s: a symbolic link to nothing usable: %s", path,
					   strerror(errno));
		if (stat(r, st)) {
			int e = errno;

			free(r);
			return hgt__errorf(e, "%s: %s", path, strerror(e));
		}
		*target = r;
	} else {
		*target = strdup(path);
		if (!*target)
			return -ENOMEM;
	}
	*exists = true;
	return 0;
}

/**
 * hgt_newfile_open - start writing @path without touching it until the end.
 */
struct hgt_newfile *hgt_newfile_open(const char *path, unsigned int flags)
{
	struct hgt_newfile *f = calloc(1, sizeof(*f));
	struct stat st;
	bool exists;
	char *dir = NULL;
	int ret;

	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	f->fd = -1;
	f->flags = flags;
	ret = resolve(path, &f->target, &st, &exists);
	if (ret)
		goto fail;
	if (exists && !S_ISREG(st.st_mode)) {
		if (!(flags & HGT_NEWFILE_IN_PLACE) || S_ISDIR(st.st_mode)) {
			ret = hgt__errorf(EEXIST, "%s: %s: refusing to write over it", path,
					  kind_of(st.st_mode));
			goto fail;
		}
		f->fd = open(f->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (f->fd < 0) {
			ret = hgt__errorf(errno, "%s: cannot write: %s", path, strerror(errno));
			goto fail;
		}
		f->in_place = true;
		return f;
	}
	dir = dir_of(f->target);
	if (!dir) {
		ret = -ENOMEM;
		goto fail;
	}
	f->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
	if (f->fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		/* no O_TMPFILE here: a hidden name beside the target, removed on failure */
		const char *base = strrchr(f->target, '/');

		if (asprintf(&f->named, "%s/.%s.hgtrace-XXXXXX", dir, base ? base + 1 : f->target) <
		    0) {
			f->named = NULL;
			ret = -ENOMEM;
			goto fail;
		}
		f->fd = mkostemp(f->named, O_CLOEXEC);
		if (f->fd >= 0 && fchmod(f->fd, 0644 & ~umask_now()))
			ret = -errno;
	}
	if (f->fd < 0) {
		ret = hgt__errorf(errno, "%s: cannot create: %s", path, strerror(errno));
		free(f->named);
		f->named = NULL;
		goto fail;
	}
	if (exists)
		(void)fchmod(f->fd, st.st_mode & 07777); /* keep the replaced file's mode */
	free(dir);
	return f;
fail:
	free(dir);
	if (f->fd >= 0)
		close(f->fd);
	free(f->named);
	free(f->target);
	free(f);
	errno = -ret;
	return NULL;
}

/**
 * hgt_newfile_fd - the descriptor to write to (owned by @f).
 */
int hgt_newfile_fd(const struct hgt_newfile *f)
{
	return f ? f->fd : -1;
}

static int sync_dir(const char *target)
{
	char *dir = dir_of(target);
	int fd, ret = 0;

	if (!dir)
		return -ENOMEM;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd))
		ret = -errno;
	if (fd >= 0)
		close(fd);
	free(dir);
	return ret;
}

/* Give the unnamed temporary a name beside the target and rename it over the target. */
static int publish(struct hgt_newfile *f)
{
	char proc[64], *tmp = NULL, *dir;
	int ret = 0;

	if (f->named)
		return rename(f->named, f->target) ? -errno : 0;
	dir = dir_of(f->target);
	if (!dir)
		return -ENOMEM;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
	for (int i = 0; i < 100; i++) {
		free(tmp);
		if (asprintf(&tmp, "%s/.hgtrace-new.%d.%d", dir, (int)getpid(), i) < 0) {
			tmp = NULL;
			ret = -ENOMEM;
			break;
		}
		if (!linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) ||
		    !linkat(f->fd, "", AT_FDCWD, tmp, AT_EMPTY_PATH)) {
			ret = 0;
			break;
		}
		ret = -errno;
		if (errno != EEXIST)
			break;
	}
	if (!ret && rename(tmp, f->target)) {
		ret = -errno;
		unlink(tmp);
	}
	free(tmp);
	free(dir);
	return ret;
}

/**
 * hgt__newfile_before_publish - call @fn(@ctx, the file's descriptor) at the commit, once
 * the file is whole (and synced), before it takes the target's name: a caller notes which
 * file is about to be the target (its inode), so that a kill after the rename is told from
 * one before it. Not called for a target written in place.
 */
void hgt__newfile_before_publish(struct hgt_newfile *f, int (*fn)(void *ctx, int fd), void *ctx)
{
	f->before_publish = fn;
	f->bp_ctx = ctx;
}

/**
 * hgt_newfile_commit - the file is complete: give it the target's name.
 */
int hgt_newfile_commit(struct hgt_newfile *f)
{
	int ret = 0;

	if (!f)
		return -EINVAL;
	if ((f->flags & HGT_NEWFILE_SYNC) && !f->in_place && fsync(f->fd))
		ret = hgt__errorf(errno, "%s: fsync: %s", f->target, strerror(errno));
	if (!ret && !f->in_place && f->before_publish)
		ret = f->before_publish(f->bp_ctx, f->fd);
	if (!ret && !f->in_place) {
		ret = publish(f);
		if (ret)
			hgt__errorf(-ret, "%s: cannot put the new file in place: %s", f->target,
				    strerror(-ret));
	}
	if (!ret && (f->flags & HGT_NEWFILE_SYNC) && !f->in_place)
		ret = sync_dir(f->target);
	if (close(f->fd) && !ret)
		ret = hgt__errorf(errno, "%s: close: %s", f->target, strerror(errno));
	f->fd = -1;
	if (ret && f->named)
		unlink(f->named);
	free(f->named);
	free(f->target);
	free(f);
	return ret;
}

/**
 * hgt_newfile_abort - forget what was written; the target stays as it was.
 */
void hgt_newfile_abort(struct hgt_newfile *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	if (f->named)
		unlink(f->named);
	free(f->named);
	free(f->target);
	free(f);
}

/**
 * hgt_same_file - whether @a and @b name the same file (device and inode, links followed).
 */
int hgt_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa))
		return errno == ENOENT ? 0 : -errno;
	if (stat(b, &sb))
		return errno == ENOENT ? 0 : -errno;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
