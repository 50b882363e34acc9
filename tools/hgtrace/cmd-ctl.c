// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace ctl: send one monitor command to a program's probe control socket. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "cmd.h"

#define CTL_TIMEOUT_S 5

int cmd_ctl(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char buf[65536 + 16];
	char cmd[4096] = "", *tail;
	size_t got = 0;
	ssize_t n;
	int s;

	bool help = argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));

	if (argc < 3 || help) {
		fprintf(help ? stdout : stderr,
			"usage: hgtrace ctl SOCKET COMMAND...\n"
			"  info trace-events [PATTERN]\n  trace-event NAME on|off\n"
			"  trace-file [on|off|flush|set PATH]\n"
			"  (no answer within %d s is an error)\n",
			CTL_TIMEOUT_S);
		return help ? 0 : 2;
	}
	for (int i = 2; i < argc; i++) {
		if (strlen(cmd) + strlen(argv[i]) + 2 >= sizeof(cmd)) {
			fprintf(stderr, "hgtrace: ctl: command longer than %zu bytes\n",
				sizeof(cmd));
			return 2;
		}
		if (i > 2)
			strcat(cmd, " ");
		strcat(cmd, argv[i]);
	}
	strcat(cmd, "\n");
	if (strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "hgtrace: ctl: %s: path too long for a socket\n", argv[1]);
		return 1;
	}
	strcpy(sa.sun_path, argv[1]);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "hgtrace: ctl: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	{
		/* a program that does not answer (stopped, or its control thread stuck) must
		 * not hang the caller */
		struct timeval tv = { .tv_sec = CTL_TIMEOUT_S };

		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (write(s, cmd, strlen(cmd)) != (ssize_t)strlen(cmd)) {
		fprintf(stderr, "hgtrace: ctl: %s: write: %s\n", argv[1], strerror(errno));
		close(s);
		return 1;
	}
	/* The reply ends with a line "ok" or "error"; print everything before it. */
	while ((n = read(s, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		fprintf(stderr, "hgtrace: ctl: %s: no answer within %d s\n", argv[1],
			CTL_TIMEOUT_S);
		close(s);
		return 1;
	}
	close(s);
	buf[got] = '\0';
	tail = got >= 3 && !strcmp(buf + got - 3, "ok\n")      ? buf + got - 3
	       : got >= 6 && !strcmp(buf + got - 6, "error\n") ? buf + got - 6
							       : NULL;
	if (!tail || (tail > buf && tail[-1] != '\n')) {
		fprintf(stderr,
			"hgtrace: ctl: %s: the program closed the connection without an answer\n",
			argv[1]);
		return 1;
	}
	fwrite(buf, 1, (size_t)(tail - buf), *tail == 'o' ? stdout : stderr);
	if (*tail != 'o')
		return 1;
	return 0;
}
