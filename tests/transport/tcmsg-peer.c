// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A peer speaking trace-cmd's agent protocol through lib/transport/tcmsg.c, for
 * tracecmd-msg.sh to put against Debian's trace-cmd:
 *   tcmsg-peer host PORT [-p PROTO,...] [-- ARG...]: dial 127.0.0.1:PORT as
 *     `trace-cmd record -A` does, send a TRACE_REQ with ARGs and PROTOs, print the
 *     TRACE_RESP: "cpus=N page_size=P trace_id=0x... proto=NAME tsync_port=T ports=A,B"
 *   tcmsg-peer agent PORT: listen on 127.0.0.1:PORT (prints "listening" once it does),
 *     take one TRACE_REQ, print "flags=F trace_id=0x... argv=[A|B|...] protos=[P|...]",
 *     answer NOT_SUPP and close.
 * Exit 0, or 1 with the library's error line on stderr.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hgtrace/tracedat.h>

#include "../../lib/transport/tcmsg.h"

#define WAIT_MS 30000 /* a hang guard: the peer answers at once */

static int fail(const char *what)
{
	fprintf(stderr, "tcmsg-peer: %s: %s\n", what, hgt_last_error());
	return 1;
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* "a,b,c" split in place into @v (at most @n - 1 names, NULL-terminated). */
static void split(char *s, char **v, int n)
{
	int k = 0;

	for (char *t = strtok(s, ","); t && k < n - 1; t = strtok(NULL, ","))
		v[k++] = t;
	v[k] = NULL;
}

static int host(int port, char **protos, int argc, char **argv)
{
	struct sockaddr_in a = loopback(port);
	uint8_t buf[HGT__TC_MSG_MAX];
	struct hgt__tc_trace_resp r;
	struct hgt__tc_msg m;
	int fd = socket(AF_INET, SOCK_STREAM, 0), n;

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("tcmsg-peer: connect");
		return 1;
	}
	n = hgt__tc_build_trace_req(buf, sizeof(buf), 0, 0x1122334455667788ULL, argc, argv,
				    protos[0] ? protos : NULL);
	if (n < 0 || write(fd, buf, (size_t)n) != n) {
		perror("tcmsg-peer: TRACE_REQ");
		return 1;
	}
	if (hgt__tc_recv(fd, buf, WAIT_MS, "agent", &m) || hgt__tc_parse_trace_resp(&m, &r))
		return fail("TRACE_RESP");
	printf("cpus=%u page_size=%u trace_id=0x%llx proto=%s tsync_port=%u ports=", r.cpus,
	       r.page_size, (unsigned long long)r.trace_id, r.proto, r.tsync_port);
	for (uint32_t i = 0; i < r.cpus; i++)
		printf("%s%u", i ? "," : "", r.ports[i]);
	printf("\n");
	hgt__tc_trace_resp_free(&r);
	close(fd);
	return 0;
}

static int agent(int port)
{
	struct sockaddr_in a = loopback(port);
	uint8_t buf[HGT__TC_MSG_MAX];
	struct hgt__tc_trace_req r;
	struct hgt__tc_msg m;
	int l = socket(AF_INET, SOCK_STREAM, 0), c, n;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1)) {
		perror("tcmsg-peer: listen");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	c = accept(l, NULL, NULL);
	if (c < 0) {
		perror("tcmsg-peer: accept");
		return 1;
	}
	if (hgt__tc_recv(c, buf, WAIT_MS, "host", &m) || hgt__tc_parse_trace_req(&m, &r))
		return fail("TRACE_REQ");
	printf("flags=%u trace_id=0x%llx argv=[", r.flags, (unsigned long long)r.trace_id);
	for (int i = 0; i < r.argc; i++)
		printf("%s%s", i ? "|" : "", r.argv[i]);
	printf("] protos=[");
	for (int i = 0; i < r.nr_protos; i++)
		printf("%s%s", i ? "|" : "", r.protos[i]);
	printf("]\n");
	fflush(stdout);
	hgt__tc_trace_req_free(&r);
	n = hgt__tc_build_plain(buf, sizeof(buf), HGT__TC_NOT_SUPP, NULL, 0);
	if (n < 0 || write(c, buf, (size_t)n) != n)
		perror("tcmsg-peer: NOT_SUPP");
	close(c);
	close(l);
	return 0;
}

int main(int argc, char **argv)
{
	char *protos[16] = { NULL };
	int i = 3;

	if (argc < 3)
		goto usage;
	if (!strcmp(argv[1], "agent"))
		return agent(atoi(argv[2]));
	if (strcmp(argv[1], "host"))
		goto usage;
	if (i + 1 < argc && !strcmp(argv[i], "-p")) {
		split(argv[i + 1], protos, 16);
		i += 2;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	return host(atoi(argv[2]), protos, argc - i, argv + i);
usage:
	fprintf(stderr, "usage: tcmsg-peer host PORT [-p PROTO,...] [-- ARG...] | agent PORT\n");
	return 2;
}
