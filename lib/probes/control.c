// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The control socket: a Unix stream socket at HGTRACE_CTL; a connection sends monitor
 * command lines and gets, per line in order, its reply ending with "ok" or "error" (hgtrace
 * ctl is the client); the lines that came before the first reply are all answered, then
 * the connection is closed. Connections are served side by side, each within a deadline,
 * and with every slot taken a new one evicts the oldest that has not sent a whole line: a
 * silent client blocks nobody.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../common/thread.h"
#include "probes-local.h"

static int ctl_fd = -1;
static char ctl_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

#define CTL_CLIENTS 16	     /* served at once; more wait in the listen backlog */
#define CTL_DEADLINE_MS 5000 /* for a client's whole exchange: line in, reply out */
#define CTL_REPLY 65536

/* One connection: its command line as it arrives, then its reply as it leaves. */
struct client {
	int fd;
	uint64_t deadline;
	char in[4096];
	size_t in_len;
	char *out; /* the reply, once the line is complete */
	size_t out_len, out_off;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void drop(struct client *c)
{
	close(c->fd);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Run every complete line (or the whole buffer, once full) and queue their replies. */
static void answer(struct client *c)
{
	size_t at = 0, used = 0;

	c->out = malloc(CTL_REPLY + 8);
	if (!c->out) {
		drop(c);
		return;
	}
	c->out[0] = '\0';
	while (at < c->in_len) {
		char *nl = memchr(c->in + at, '\n', c->in_len - at), *line = c->in + at;
		size_t end = nl ? (size_t)(nl - c->in) : c->in_len;
		int r;

		if (!nl && at)
			break; /* a part line after whole ones: not a command */
		c->in[end] = '\0';
		at = end + 1;
		if (!*line && nl)
			continue; /* an empty line */
		if (used + 16 >= CTL_REPLY)
			break;
		r = hgt_probe_command(line, c->out + used, CTL_REPLY - used - 8);
		used += strlen(c->out + used);
		strcpy(c->out + used, r < 0 ? "error\n" : "ok\n");
		used += strlen(c->out + used);
	}
	c->out_len = used;
}

/* Readable or writable: take what came, send what can go. Returns false when done. */
static bool step(struct client *c)
{
	if (!c->out) {
		ssize_t n = read(c->fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len);

		if (n < 0)
			return errno == EINTR || errno == EAGAIN;
		if (n == 0)
			return false; /* closed before its line ended: nothing to answer */
		c->in_len += (size_t)n;
		if (memchr(c->in, '\n', c->in_len) || c->in_len == sizeof(c->in) - 1)
			answer(c);
		if (c->fd < 0)
			return false;
	}
	while (c->out && c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0)
			return errno == EINTR || errno == EAGAIN;
		c->out_off += (size_t)w;
	}
	return !c->out;
}

/*
 * One thread serves up to CTL_CLIENTS connections at once, each with its own buffers and a
 * deadline for its whole exchange, so a client that sends half a line, or reads its reply
 * slowly, holds no one else up.
 */
static void *ctl_main(void *arg)
{
	struct client cl[CTL_CLIENTS];
	struct pollfd pf[CTL_CLIENTS + 1];
	prctl(PR_SET_NAME, "hgt-probe-ctl", 0, 0, 0);
	for (int i = 0; i < CTL_CLIENTS; i++)
		cl[i].fd = -1;
	for (;;) {
		int n = 0, busy = 0, timeout = -1;
		uint64_t now = now_ms();

		for (int i = 0; i < CTL_CLIENTS; i++) {
			if (cl[i].fd < 0)
				continue;
			if (now >= cl[i].deadline) {
				drop(&cl[i]);
				continue;
			}
			busy++;
			if (timeout < 0 || (int)(cl[i].deadline - now) < timeout)
				timeout = (int)(cl[i].deadline - now);
		}
		pf[n++] = (struct pollfd){ .fd = ctl_fd, .events = POLLIN };
		for (int i = 0; i < CTL_CLIENTS; i++)
			pf[n++] = (struct pollfd){ .fd = cl[i].fd,
						   .events = cl[i].out ? POLLOUT : POLLIN };
		if (poll(pf, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < CTL_CLIENTS; i++)
			if (cl[i].fd >= 0 && pf[i + 1].revents && !step(&cl[i]))
				drop(&cl[i]);
		if (pf[0].revents & POLLIN) {
			int c = accept4(ctl_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			int slot = -1;

			for (int i = 0; c >= 0 && i < CTL_CLIENTS && slot < 0; i++)
				if (cl[i].fd < 0)
					slot = i;
			/* every slot taken: the oldest that has not sent a whole line goes */
			for (int i = 0, full = slot < 0; c >= 0 && full && i < CTL_CLIENTS; i++)
				if (!cl[i].out && (slot < 0 || cl[i].deadline < cl[slot].deadline))
					slot = i;
			if (slot >= 0 && c >= 0) {
				if (cl[slot].fd >= 0)
					drop(&cl[slot]);
				memset(&cl[slot], 0, sizeof(cl[slot]));
				cl[slot].fd = c;
				cl[slot].deadline = now_ms() + CTL_DEADLINE_MS;
				c = -1;
			}
			if (c >= 0)
				close(c);
		}
	}
	for (int i = 0; i < CTL_CLIENTS; i++)
		if (cl[i].fd >= 0)
			drop(&cl[i]);
	return NULL;
}

static pid_t ctl_owner; /* the process that made the socket: only it removes it */

static void ctl_cleanup(void)
{
	if (ctl_path[0] && getpid() == ctl_owner)
		unlink(ctl_path);
}

void hgt__probe_ctl_fork_child(void)
{
	/* no control thread here; the listening socket stays the parent's */
	if (ctl_fd >= 0)
		close(ctl_fd);
	ctl_fd = -1;
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
	ctl_owner = getpid();
	atexit(ctl_cleanup);
	if (hgt__thread_spawn(&t, ctl_main, NULL)) {
		close(ctl_fd);
		ctl_fd = -1;
		return -1;
	}
	pthread_detach(t);
	return 0;
}
