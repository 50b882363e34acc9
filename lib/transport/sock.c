// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sockets of the agents and hosts: listening (TCP or vsock) and accepting with a limit
 * (agent.c, tcagent.c), and dialing an agent over TCP, vsock or a hybrid-vsock VMM
 * (listen-net.c, tchost.c).
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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

/* How long a hybrid-vsock VMM has to answer CONNECT (it answers once the guest accepts). */
#define HVSOCK_ACK_MS 10000

/* Read the VMM's answer to CONNECT, a byte at a time (what follows it is the agent's):
 * "OK" then optionally " PORT", then '\n'. 0, -ECONNABORTED (closed: nobody listens on that
 * guest port), -ETIMEDOUT or -EPROTO. */
static int hvsock_ack(int fd)
{
	char line[64];
	size_t n = 0;
	uint64_t end = hgt__now_ms() + HVSOCK_ACK_MS;

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t now = hgt__now_ms();
		ssize_t r;

		if (now >= end)
			return -ETIMEDOUT;
		if (poll(&pf, 1, (int)(end - now)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!pf.revents)
			continue;
		r = read(fd, line + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -ECONNABORTED;
		if (line[n] == '\n')
			break;
		if (++n == sizeof(line))
			return -EPROTO;
	}
	line[n] = 0;
	if (strncmp(line, "OK", 2) ||
	    (line[2] && (line[2] != ' ' || !line[3] || strspn(line + 3, "0123456789") != n - 3)))
		return -EPROTO;
	return 0;
}

/* A connection to guest port @port through the hybrid-vsock VMM listening on @path. */
static int dial_hvsock(const char *path, unsigned int port)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[32];
	int fd, e;

	if (!path || strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(req, sizeof(req), "CONNECT %u\n", port);
	/* a VMM gone before the request is an error, not a SIGPIPE */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
		e = errno ? -errno : -EIO;
	else
		e = hvsock_ack(fd);
	if (e) {
		close(fd);
		return e;
	}
	return fd;
}

const char *hgt__sock_dial_error(int transport, int e)
{
	if (transport != HGT_TRANSPORT_HVSOCK)
		return strerror(-e);
	switch (e) {
	case -ECONNABORTED:
		return "the VMM closed the connection without OK (nothing listens on that guest port?)";
	case -ETIMEDOUT:
		return "the VMM did not answer CONNECT within 10 s";
	case -EPROTO:
		return "the VMM's answer to CONNECT is not \"OK [PORT]\"";
	default:
		return strerror(-e);
	}
}

int hgt__sock_dial(int transport, const char *host, unsigned int cid, const char *path,
		   unsigned int port)
{
	int fd = -1, e = 0, one = 1;

	if (transport == HGT_TRANSPORT_HVSOCK)
		return dial_hvsock(path, port);
	if (transport == HGT_TRANSPORT_VSOCK) {
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = cid,
					  .svm_port = port };

		fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			e = errno;
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
		char ps[16];

		snprintf(ps, sizeof(ps), "%u", port);
		if (getaddrinfo(host, ps, &hints, &res))
			return -EHOSTUNREACH;
		e = ECONNREFUSED;
		for (ai = res; ai && e; ai = ai->ai_next) {
			fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
			e = fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) ? errno : 0;
			if (e && fd >= 0) {
				close(fd);
				fd = -1;
			}
		}
		freeaddrinfo(res);
		if (fd >= 0)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (fd < 0 || e) {
		e = e ? e : errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	return fd;
}
