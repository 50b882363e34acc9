// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The control socket: a Unix stream socket at HGTRACE_CTL; each connection sends one
 * monitor command line and gets its reply, then "ok" or "error" as the last line
 * (hgtrace ctl is the client).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "probes-local.h"

static int ctl_fd = -1;
static char ctl_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static void serve(int c)
{
	char cmd[4096], reply[65536];
	size_t len = 0;
	int r;

	while (len < sizeof(cmd) - 1) {
		ssize_t n = read(c, cmd + len, sizeof(cmd) - 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (memchr(cmd, '\n', len))
			break;
	}
	cmd[len] = '\0';
	cmd[strcspn(cmd, "\n")] = '\0';
	r = hgt_probe_command(cmd, reply, sizeof(reply) - 8);
	strcat(reply, r < 0 ? "error\n" : "ok\n");
	for (size_t off = 0, n = strlen(reply); off < n;) {
		ssize_t w = send(c, reply + off, n - off, MSG_NOSIGNAL);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
}

static void *ctl_main(void *arg)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	prctl(PR_SET_NAME, "hgt-probe-ctl", 0, 0, 0);
	for (;;) {
		int c = accept4(ctl_fd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		serve(c);
		close(c);
	}
	return NULL;
}

static void ctl_cleanup(void)
{
	if (ctl_path[0])
		unlink(ctl_path);
}

int hgt__probe_ctl_start(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	pthread_t t;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* Replace a stale socket, never any other file. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			errno = EEXIST;
			return -1;
		}
		unlink(path);
	}
	strcpy(sa.sun_path, path);
	ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ctl_fd < 0)
		return -1;
	if (bind(ctl_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ctl_fd, 8) < 0) {
		int e = errno;

		close(ctl_fd);
		ctl_fd = -1;
		errno = e;
		return -1;
	}
	snprintf(ctl_path, sizeof(ctl_path), "%s", path);
	atexit(ctl_cleanup);
	if (pthread_create(&t, NULL, ctl_main, NULL)) {
		close(ctl_fd);
		ctl_fd = -1;
		return -1;
	}
	pthread_detach(t);
	return 0;
}
