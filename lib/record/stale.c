// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Instances left behind: a recorder that was killed cannot remove its tracefs instance,
 * which then keeps tracing. Each instance hgtrace creates is noted in
 * /run/hgtrace/instances/NAME (the creator's pid and start time, so a reused pid does not
 * count); instances whose creator is no longer running are removed by the next recording,
 * by restore and by hgtrace reset. An instance named hgtrace-PID (the default name)
 * without a note counts as created by PID, and is removed once no process PID exists.
 * Nothing else is touched.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracefs.h>

#include <hgtrace/record.h>

#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "record-local.h"

#define REGISTRY "/run/hgtrace/instances"

static void note_path(char *p, size_t n, const char *name)
{
	snprintf(p, n, REGISTRY "/%s", name);
}

/**
 * hgt__instance_register - note that this process created instance @name.
 */
void hgt__instance_register(const char *name)
{
	char p[512], pid[64];
	int fd, n;

	mkdir("/run/hgtrace", 0755);
	mkdir(REGISTRY, 0755);
	note_path(p, sizeof(p), name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return; /* no /run: the default name still tells */
	n = snprintf(pid, sizeof(pid), "%d %llu\n", (int)getpid(),
		     (unsigned long long)hgt__proc_start((int)getpid()));
	if (hgt__write_full(fd, pid, (size_t)n))
		unlink(p);
	close(fd);
}

/**
 * hgt__instance_note_pipe - note that instance @name's pages are spliced into pipe @fd:
 * such a page stays the ring buffer's until it is read, so the instance must outlive any
 * left unread there (hgt__instance_reap() looks). Nothing for a file or a socket.
 */
void hgt__instance_note_pipe(const char *name, int fd)
{
	struct stat st;
	char p[512], line[96];
	int nfd, n;

	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode))
		return;
	note_path(p, sizeof(p), name);
	nfd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (nfd < 0)
		return;
	n = snprintf(line, sizeof(line), "pipe %llu %llu\n", (unsigned long long)st.st_dev,
		     (unsigned long long)st.st_ino);
	if (hgt__write_full(nfd, line, (size_t)n)) {
		/* unnoted: a reap may then come too early, as before there were notes */
	}
	close(nfd);
}

/* The bytes waiting in pipe @dev:@ino, held open by some process (*@pid), 0 when no
 * process holds it with bytes in it (a pipe nobody holds is gone, its pages released). */
static long pipe_waiting(unsigned long long dev, unsigned long long ino, int *pid)
{
	DIR *procs = opendir("/proc"), *fds;
	struct dirent *e, *f;
	long bytes = 0;

	while (procs && !bytes && (e = readdir(procs))) {
		char dir[300];

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(dir, sizeof(dir), "/proc/%s/fd", e->d_name);
		fds = opendir(dir);
		while (fds && !bytes && (f = readdir(fds))) {
			char path[600];
			struct stat st;
			int fd;

			snprintf(path, sizeof(path), "%s/%s", dir, f->d_name);
			if (f->d_name[0] == '.' || stat(path, &st) || !S_ISFIFO(st.st_mode) ||
			    st.st_dev != dev || st.st_ino != ino)
				continue;
			fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
			if (fd >= 0) {
				bytes = hgt__pipe_unread(fd);
				bytes = bytes > 0 ? bytes : 0;
				close(fd);
			}
			*pid = atoi(e->d_name);
		}
		if (fds)
			closedir(fds);
	}
	if (procs)
		closedir(procs);
	return bytes;
}

/* Whether a pipe instance @name's pages were spliced into still holds some (note lines
 * "pipe DEV INO"): the bytes, and in @pid a process that holds it. */
static long pages_in_pipes(const char *name, int *pid)
{
	char p[512], buf[4096], *line, *save = NULL;
	long bytes = 0;
	ssize_t n;
	int fd;

	note_path(p, sizeof(p), name);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	for (line = strtok_r(buf, "\n", &save); line && !bytes;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long dev, ino;

		if (sscanf(line, "pipe %llu %llu", &dev, &ino) == 2)
			bytes = pipe_waiting(dev, ino, pid);
	}
	return bytes;
}

/**
 * hgt__instance_unregister - the instance @name was removed.
 */
void hgt__instance_unregister(const char *name)
{
	char p[512];

	note_path(p, sizeof(p), name);
	unlink(p);
}

/* The pid that created instance @name (and when it started, 0: unknown), or 0 when
 * hgtrace did not. */
static int creator(const char *name, uint64_t *start)
{
	char p[512], buf[64];
	unsigned long long st = 0;
	int fd = -1, pid = 0;
	ssize_t n;

	note_path(p, sizeof(p), name);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = 0;
			if (sscanf(buf, "%d %llu", &pid, &st) < 1)
				pid = 0;
		}
	}
	*start = st;
	if (!pid && !strncmp(name, "hgtrace-", 8)) {
		char *end;
		long v = strtol(name + 8, &end, 10);

		/* hgtrace-PID, a recorder's; hgtrace-PID-clock, a kernel-only trace clock's
		 * reader (clockread.c), removed at exit but not by a process killed */
		if ((!*end || !strcmp(end, "-clock")) && v > 0 && v < (1L << 22))
			pid = (int)v;
	}
	return pid;
}

/**
 * hgt__instance_reap - remove instance @name if hgtrace created it and its creator is gone.
 * Returns 1 when removed, 0 when left, -errno when removing failed.
 */
int hgt__instance_reap(const char *name, FILE *log)
{
	struct tracefs_instance *inst;
	uint64_t start;
	int ret = 0, pid = creator(name, &start);

	if (!pid || hgt__owner_alive(pid, start) || pid == getpid() ||
	    !tracefs_instance_exists(name))
		return 0;
	inst = tracefs_instance_alloc(NULL, name);
	if (!inst)
		return -errno;
	tracefs_trace_off(inst);
	{
		int holder = 0;
		long bytes = pages_in_pipes(name, &holder);

		if (bytes) {
			if (log)
				fprintf(log,
					"hgtrace: tracefs instance %s, left by process %d, kept: %ld bytes of its pages wait unread in a pipe process %d holds (removing it first would crash the kernel when they are read)\n",
					name, pid, bytes, holder);
			tracefs_instance_free(inst);
			return 0;
		}
	}
	if (tracefs_instance_destroy(inst)) {
		ret = -errno;
		if (log)
			fprintf(log,
				"hgtrace: tracefs instance %s, left by process %d, could not be removed: %s\n",
				name, pid, strerror(errno));
	} else {
		ret = 1;
		hgt__instance_unregister(name);
		if (log)
			fprintf(log,
				"hgtrace: removed tracefs instance %s, left behind by process %d (no longer running)\n",
				name, pid);
	}
	tracefs_instance_free(inst);
	return ret;
}

/**
 * hgt_record_reset - remove the tracefs instances hgtrace created whose creator is gone.
 */
int hgt_record_reset(FILE *log)
{
	const char *top = tracefs_tracing_dir();
	char path[4096];
	struct dirent *e;
	int removed = 0, ret = 0;
	DIR *d;

	if (!top)
		return hgt__errorf(ENODEV, "reset: tracefs is not mounted");
	snprintf(path, sizeof(path), "%s/instances", top);
	d = opendir(path);
	if (!d)
		return hgt__errorf(errno, "reset: %s: %s", path, strerror(errno));
	while ((e = readdir(d))) {
		int r;

		if (e->d_name[0] == '.')
			continue;
		r = hgt__instance_reap(e->d_name, log);
		if (r > 0)
			removed++;
		else if (r < 0 && !ret)
			ret = r;
	}
	closedir(d);
	/* notes of instances that are gone */
	d = opendir(REGISTRY);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] != '.' && !tracefs_instance_exists(e->d_name))
			hgt__instance_unregister(e->d_name);
	}
	if (d)
		closedir(d);
	return ret ? ret : removed;
}
