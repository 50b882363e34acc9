// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The text backends: log (stderr, one write per line with thread id and time), ftrace
 * (the trace_marker of tracefs, never switching tracing on or off, failing loudly), and
 * syslog.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "probes-local.h"

#define LINE_MAX_ 1024

/**
 * hgt_probe_log - print one event line on stderr: "TID@SEC.USEC:name args".
 */
void hgt_probe_log(const char *fmt, ...)
{
	char line[LINE_MAX_];
	struct timespec ts;
	va_list ap;
	int n, m;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line), "%ld@%lld.%06ld:", (long)syscall(SYS_gettid),
		     (long long)ts.tv_sec, ts.tv_nsec / 1000);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n = n + m < (int)sizeof(line) - 1 ? n + m : (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return; /* nowhere left to say so */
}

static pthread_once_t ftrace_once = PTHREAD_ONCE_INIT;
static int marker_fd = -1;

/* The tracefs mount point from /proc/mounts (tracefs, else debugfs/tracing). */
static int tracefs_dir(char *dir, size_t sz)
{
	FILE *f = fopen("/proc/mounts", "r");
	char dev[256], mnt[1024], type[64];
	int found = 0;

	if (!f)
		return -1;
	while (fscanf(f, "%255s %1023s %63s %*[^\n]", dev, mnt, type) == 3) {
		if (!strcmp(type, "tracefs")) {
			snprintf(dir, sz, "%s", mnt);
			found = 2;
			break;
		}
		if (!strcmp(type, "debugfs") && !found) {
			snprintf(dir, sz, "%s/tracing", mnt);
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

static void ftrace_open(void)
{
	const char *inst = getenv("HGTRACE_FTRACE_INSTANCE");
	char dir[1024], path[1400], on = '1';
	int f;

	if (tracefs_dir(dir, sizeof(dir)) < 0) {
		fprintf(stderr,
			"hgtrace-probes: ftrace backend: tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing); ftrace events are not recorded\n");
		return;
	}
	if (inst && *inst)
		snprintf(path, sizeof(path), "%s/instances/%s", dir, inst);
	else
		snprintf(path, sizeof(path), "%s", dir);
	snprintf(dir, sizeof(dir), "%s/tracing_on", path);
	f = open(dir, O_RDONLY | O_CLOEXEC);
	if (f >= 0) {
		if (read(f, &on, 1) == 1 && on == '0')
			fprintf(stderr,
				"hgtrace-probes: ftrace backend: %s is 0: events go to trace_marker but the kernel records them only once tracing is on\n",
				dir);
		close(f);
	}
	snprintf(dir, sizeof(dir), "%s/trace_marker", path);
	marker_fd = open(dir, O_WRONLY | O_CLOEXEC);
	if (marker_fd < 0)
		fprintf(stderr,
			"hgtrace-probes: ftrace backend: %s: %s; ftrace events are not recorded\n",
			dir, strerror(errno));
}

/**
 * hgt_probe_ftrace - write one event line to trace_marker (one write(2), newline kept
 * even when the line is cut to the kernel's limit).
 */
void hgt_probe_ftrace(const char *fmt, ...)
{
	char line[LINE_MAX_];
	va_list ap;
	int n;

	pthread_once(&ftrace_once, ftrace_open);
	if (marker_fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(marker_fd, line, (size_t)n) < 0)
		return; /* the kernel's ring is the one to count this */
}

static pthread_once_t syslog_once = PTHREAD_ONCE_INIT;

static void syslog_open(void)
{
	openlog(NULL, LOG_PID, LOG_DAEMON);
}

/**
 * hgt_probe_syslog - send one event line to syslog at LOG_INFO.
 */
void hgt_probe_syslog(const char *fmt, ...)
{
	va_list ap;

	pthread_once(&syslog_once, syslog_open);
	va_start(ap, fmt);
	vsyslog(LOG_INFO, fmt, ap);
	va_end(ap);
}
