// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Listening sockets of the agents (TCP or vsock), and accepting with a limit: shared by
 * hgtrace's own agent (agent.c) and its trace-cmd agent (tcagent.c).
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/vm_sockets.h>

#include <hgtrace/transport.h>

#include "../common/common-local.h"
#include "transport-local.h"

int hgt__sock_listen(int transport, const char *host, unsigned int port, const char *who)
{
	int one = 1, fd, e;

	if (transport == HGT_TRANSPORT_VSOCK) {
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = VMADDR_CID_ANY,
					  .svm_port = port ? port : VMADDR_PORT_ANY };

		fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) && !listen(fd, 64))
			return fd;
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE },
				*res;
		char ps[16];

		snprintf(ps, sizeof(ps), "%u", port);
		e = getaddrinfo(host, ps, &hints, &res);
		if (e)
			return hgt__errorf(EINVAL, "%s: listen on %s: %s", who, host ? host : "*",
					   gai_strerror(e));
		fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0)
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd >= 0 && !bind(fd, res->ai_addr, res->ai_addrlen) && !listen(fd, 64)) {
			freeaddrinfo(res);
			return fd;
		}
		freeaddrinfo(res);
	}
	e = errno;
	if (fd >= 0)
		close(fd);
	return hgt__errorf(e, "%s: listen on %s port %u: %s", who,
			   transport == HGT_TRANSPORT_VSOCK ? "vsock" : "tcp", port, strerror(e));
}

int hgt__sock_listen_beside(int fd, unsigned int *port, const char *who)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int one = 1, l, e;

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return hgt__errorf(errno, "%s: getsockname: %s", who, strerror(errno));
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = 0;
	else if (ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
	else if (ss.ss_family == AF_VSOCK)
		((struct sockaddr_vm *)&ss)->svm_port = VMADDR_PORT_ANY;
	else
		return hgt__errorf(EAFNOSUPPORT, "%s: address family %d", who, ss.ss_family);
	l = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l >= 0 && ss.ss_family != AF_VSOCK)
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l >= 0 && !bind(l, (struct sockaddr *)&ss, len) && !listen(l, 8)) {
		len = sizeof(ss);
		if (!getsockname(l, (struct sockaddr *)&ss, &len)) {
			*port = ss.ss_family == AF_INET
					? ntohs(((struct sockaddr_in *)&ss)->sin_port)
				: ss.ss_family == AF_INET6
					? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
					: ((struct sockaddr_vm *)&ss)->svm_port;
			return l;
		}
	}
	e = errno;
	if (l >= 0)
		close(l);
	return hgt__errorf(e, "%s: a listening socket beside the control connection: %s", who,
			   strerror(e));
}

int hgt__sock_accept(int lfd, int ms, volatile int *stop)
{
	for (int waited = 0; !(stop && *stop) && (ms < 0 || waited < ms); waited += 200) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		if (poll(&p, 1, 200) > 0) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0) {
				int one = 1;

				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				return fd;
			}
		}
	}
	return -1;
}
