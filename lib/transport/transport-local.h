/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal helpers of lib/transport. */
#ifndef HGTRACE_TRANSPORT_LOCAL_H
#define HGTRACE_TRANSPORT_LOCAL_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* @path's contents (at most @cap - 1 bytes), NUL-terminated; its length or -1 (vmm.c). */
ssize_t hgt__read_small(const char *path, char *buf, size_t cap);

/* A listening socket on @port (TCP on @host, NULL: every address; or vsock): its fd, or
 * -errno with "@who: ..." said (sock.c). */
int hgt__sock_listen(int transport, const char *host, unsigned int port, const char *who);
/* A listening socket on a free port of the address connection @fd came to (*@port). */
int hgt__sock_listen_beside(int fd, unsigned int *port, const char *who);
/* The next connection on @lfd, waiting at most @ms (< 0: until *@stop): its fd (TCP:
 * no delay; from this machine, unpaced as hgt__sock_to_peer() says), or -1 if none came. */
int hgt__sock_accept(int lfd, int ms, volatile int *stop);
/* A connection (blocking) to @port of an agent: TCP at @host, vsock at @cid, or through
 * the hybrid-vsock VMM whose UNIX socket is @path (CONNECT PORT, OK); -errno. */
int hgt__sock_dial(int transport, const char *host, unsigned int cid, const char *path,
		   unsigned int port);
/* TCP socket @fd, not yet connected, is to connect to @peer: to a peer on this machine it
 * sends with a congestion control that does not pace (sock.c: why). */
void hgt__sock_to_peer(int fd, const struct sockaddr *peer);
/* What a failed hgt__sock_dial() (-errno @e) says. */
const char *hgt__sock_dial_error(int transport, int e);

struct hgt_agent_opts;
/* agent --serve --trace-cmd: answer trace-cmd record -A hosts (tcagent.c). */
int hgt__tc_agent_serve(const struct hgt_agent_opts *o);

#endif
