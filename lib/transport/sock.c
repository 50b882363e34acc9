// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Sockets of the agents and hosts: listening (TCP or vsock) and accepting with a limit
 * (agent.c, tcagent.c), and dialing an agent over TCP, vsock or a hybrid-vsock VMM
 * (listen-net.c, tchost.c).
 */
#include <errno.h>
#include <ifaddrs.h>
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

/*
 * Pages sent to a peer on this machine go through loopback, where no queue fills and
 * nothing is dropped: congestion control has nothing to find there, and one that paces
 * costs the sender. BBR (the default of some systems, this project's machines among them)
 * paces each socket with its own timer when no fq qdisc does it: an agent fed 1000-byte
 * markers at 1000 MB/s on 2 CPUs, beside its listener, spent 0.40-0.52 ms of CPU per MB
 * and its rings overwrote 1-28 % of the markers (8 runs); with cubic, 0.32-0.38 ms and
 * nothing lost (14 runs). Cubic where the system allows it (reno, which it always does,
 * where not); other peers keep the system's choice.
 */
static const char *const unpaced_cc[] = { "cubic", "reno" };

static void set_unpaced(int fd)
{
	for (size_t i = 0; i < sizeof(unpaced_cc) / sizeof(unpaced_cc[0]); i++)
		if (!setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, unpaced_cc[i],
				strlen(unpaced_cc[i])))
			return;
}

/* Whether @a and @b are the same IPv4 or IPv6 address (ports aside). */
static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return false;
}

static bool addr_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24 == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* Whether @sa is a loopback address or one of this machine's own. */
static bool addr_local(const struct sockaddr *sa)
{
	struct ifaddrs *ifs, *i;
	bool own = false;

	if (addr_loopback(sa))
		return true;
	if (getifaddrs(&ifs))
		return false;
	for (i = ifs; i && !own; i = i->ifa_next)
		own = i->ifa_addr && same_addr(i->ifa_addr, sa);
	freeifaddrs(ifs);
	return own;
}

/* Whether connected socket @fd's peer is on this machine: a loopback address, or the
 * address the connection came to (the kernel routes a machine's own addresses over lo). */
static bool peer_local(int fd)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);

	if (getsockname(fd, (struct sockaddr *)&me, &ml) ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl))
		return false;
	return addr_loopback((struct sockaddr *)&peer) ||
	       same_addr((struct sockaddr *)&me, (struct sockaddr *)&peer);
}

void hgt__sock_to_peer(int fd, const struct sockaddr *peer)
{
	if (addr_local(peer))
		set_unpaced(fd);
}

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
		/* on loopback only: its connections come from this machine, and take the
		 * listening socket's congestion control from their start */
		if (fd >= 0 && host && addr_loopback(res->ai_addr))
			set_unpaced(fd);
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
				/* from this machine to a listening socket on every address:
				 * switched now, less gained than from the start (in the measure
				 * above, 2 runs of 3 lost nothing) */
				if (peer_local(fd))
					set_unpaced(fd);
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
