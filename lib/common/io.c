// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Writes that finish or say why, names that are safe as file names, temporary files.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common-local.h"

/* Write all @n bytes, at @off (pwrite) or, with @off < 0, at the file position. */
static int write_loop(int fd, const void *buf, size_t n, int64_t off)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t w = off < 0 ? write(fd, p, n) : pwrite(fd, p, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
		if (off >= 0)
			off += w;
	}
	return 0;
}

/**
 * hgt__pwrite_full - write all @n bytes at @off (EINTR retried). Returns 0 or -errno.
 */
int hgt__pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
	return write_loop(fd, buf, n, (int64_t)off);
}

/**
 * hgt__write_full - write all @n bytes to @fd (EINTR retried). Returns 0 or -errno.
 */
int hgt__write_full(int fd, const void *buf, size_t n)
{
	return write_loop(fd, buf, n, -1);
}

/**
 * hgt__now_ns - CLOCK_MONOTONIC in nanoseconds.
 */
uint64_t hgt__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/**
 * hgt__now_ms - CLOCK_MONOTONIC in milliseconds.
 */
uint64_t hgt__now_ms(void)
{
	return hgt__now_ns() / 1000000u;
}

/**
 * hgt__pipe_unread - the bytes written into the pipe or FIFO @fd (either end) that no
 * reader has taken yet (FIONREAD); -1 when @fd is no pipe.
 */
long hgt__pipe_unread(int fd)
{
	struct stat st;
	int n;

	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode) || ioctl(fd, FIONREAD, &n))
		return -1;
	return n;
}

/**
 * hgt__pipe_wait_read - wait until the readers of pipe @fd have taken all that was written
 * into it (at once where @fd is no pipe). The kernel has no event for an empty pipe: it
 * looks again after 0.1 ms, doubling up to 10 ms. A reader that took nothing for @stall_ms
 * ends it with -ETIMEDOUT, *@stop (when set) with -ECANCELED.
 */
int hgt__pipe_wait_read(int fd, unsigned int stall_ms, const volatile int *stop)
{
	long left = hgt__pipe_unread(fd), was = left;
	uint64_t moved = hgt__now_ms();
	unsigned int us = 100;

	while (left > 0) {
		if (stop && *stop)
			return -ECANCELED;
		if (left < was) {
			was = left;
			moved = hgt__now_ms();
		} else if (hgt__now_ms() - moved >= stall_ms) {
			return -ETIMEDOUT;
		}
		usleep(us);
		us = us < 10000 ? us * 2 : us;
		left = hgt__pipe_unread(fd);
	}
	return 0;
}

/**
 * hgt__write_within - write all @n bytes to a pipe, port or socket whose reader may be
 * gone, never blocked for good: each write waits for room in slices of 200 ms (a blocking
 * @fd is written PIPE_BUF bytes at a time, which room for one never blocks). While there
 * is no room, *@stop set ends it with -ECANCELED, and a reader that took nothing for
 * @stall_ms (0: no limit) with -ETIMEDOUT. Other failures: -errno.
 */
int hgt__write_within(int fd, const void *buf, size_t n, unsigned int stall_ms,
		      const volatile int *stop)
{
	int fl = fcntl(fd, F_GETFL);
	size_t chunk = fl >= 0 && (fl & O_NONBLOCK) ? SIZE_MAX : PIPE_BUF;
	const uint8_t *p = buf;
	uint64_t moved = hgt__now_ms();

	if (fl < 0)
		return -errno;
	while (n) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		int r = poll(&pfd, 1, 200);

		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0) {
			ssize_t w;

			if (pfd.revents & POLLNVAL)
				return -EBADF;
			w = write(fd, p, n < chunk ? n : chunk);
			if (w > 0) {
				p += w;
				n -= (size_t)w;
				moved = hgt__now_ms();
				continue;
			}
			if (w == 0)
				return -EIO;
			if (errno != EINTR && errno != EAGAIN)
				return -errno;
		}
		/* no room: this is where a reader that is gone keeps us */
		if (stop && *stop)
			return -ECANCELED;
		if (stall_ms && hgt__now_ms() - moved >= stall_ms)
			return -ETIMEDOUT;
	}
	return 0;
}

/**
 * hgt__grow - room in a growing array for @need elements.
 */
int hgt__grow(void *pp, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t c = *cap;
	void *p, *q;

	if (need <= c)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2 / size)
			return -ENOMEM;
		c = c ? 2 * c : first;
	}
	memcpy(&p, pp, sizeof(p));
	q = realloc(p, c * size);
	if (!q)
		return -ENOMEM;
	memcpy(pp, &q, sizeof(q));
	*cap = c;
	return 0;
}

/**
 * hgt__valid_name - a name for files and instances: [A-Za-z0-9_.-], 1 to 64 characters.
 */
bool hgt__valid_name(const char *s)
{
	size_t n = strlen(s);

	/* "." and ".." name directories: a name is a file name part (setup-guest's DIR/NAME) */
	if (!n || n > 64 || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
			return false;
	return true;
}

/**
 * hgt__tmpfile - an unnamed temporary file in directory @dir (falling back to /tmp), or -1.
 */
int hgt__tmpfile(const char *dir)
{
	int fd = open(dir && *dir ? dir : ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0) {
		char tmpl[] = "/tmp/hgtrace-XXXXXX";

		fd = mkstemp(tmpl);
		if (fd >= 0)
			unlink(tmpl);
	}
	return fd;
}
