// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `agent --serve --trace-cmd`: the agent answers `trace-cmd record -A` as trace-cmd's own
 * agent does (the protocol of tcmsg.h, checked against trace-cmd 3.1.6), one session at a
 * time:
 *   <- TRACE_REQ: the guest's record options (a subset: see take_args()) and the host's
 *      time-sync protocols;
 *   the recorder sets up its instance, with a listening socket per CPU in place of the
 *   data channels; ptp time sync is served on a port of its own (tcsync.c);
 *   -> TRACE_RESP: CPUs, page size, trace id, "ptp" (or none), its port, the data ports;
 *   -> SEND_DATA...FIN_DATA: the head of a version 6 trace.dat (header, formats, kallsyms,
 *      printk formats, cmdlines, CPU count, options); the host writes it as the guest's
 *      file and appends its time shifts and the pages;
 *   the host dials each data port; each connection takes its listener's place (dup2), and
 *   tracing goes on: the readers splice whole pages into them;
 *   <- CLOSE: tracing stops; -> CLOSE_RESP.
 * trace-cmd's host stops reading the data connections before its CLOSE, so the pages
 * written after that are not in its file: the connections are shut before the recorder
 * stops, and it cannot wait for a reader that is gone.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/vm_sockets.h>

#include <hgtrace/output.h>
#include <hgtrace/transport.h>

#include "../common/common-local.h"
#include "../record/record-local.h"
#include "../tracedat/output-local.h"
#include "tcmsg.h"
#include "tcsync.h"
#include "trace-transport.h"
#include "transport-local.h"

struct tcsession {
	const struct hgt_agent_opts *o;
	int ctl;
	char peer[64];
	int nr_cpus;
	int *data;	     /* per CPU: its listener, then the host's connection */
	unsigned int *ports; /* the listeners' ports */
	struct hgt__tc_trace_req req;
	struct hgt_record_opts ro;
	const char **events;  /* into req */
	const char **filters; /* per event (-f after it), into req */
	int nev;
	bool ptp;
	struct hgt__tcsync *sync;
	unsigned int sync_port;
	uint8_t buf[HGT__TC_MSG_MAX];
};

static void say(const struct tcsession *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(const struct tcsession *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->o->log)
		return;
	va_start(ap, fmt);
	fprintf(s->o->log, "hgtrace agent: trace-cmd host %s: ", s->peer);
	vfprintf(s->o->log, fmt, ap);
	fputc('\n', s->o->log);
	va_end(ap);
}

/* The option @a of the host's TRACE_REQ that takes a value: "-X VALUE" or "-XVALUE". */
static const char *value_of(char **argv, int argc, int *i)
{
	if (argv[*i][2])
		return argv[*i] + 2;
	return *i + 1 < argc ? argv[++*i] : NULL;
}

/*
 * The guest's record options trace-cmd's host sent, as this recorder takes them:
 * -e EVENT, -f FILTER (of the -e before it), -C CLOCK, -b KB, -M CPUMASK; -q and
 * --tsync-interval N (the host's own) are taken and have nothing to do here. Anything
 * else is refused by name. 0 or -EINVAL.
 */
static int take_args(struct tcsession *s)
{
	char **argv = s->req.argv;
	int argc = s->req.argc;

	s->events = calloc((size_t)argc + 1, sizeof(*s->events));
	s->filters = calloc((size_t)argc + 1, sizeof(*s->filters));
	if (!s->events || !s->filters)
		return -ENOMEM;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		unsigned long kb;
		char *end;

		if (!strcmp(a, "-q"))
			continue;
		if (!strcmp(a, "--tsync-interval")) {
			if (++i >= argc)
				goto missing;
			continue;
		}
		if (a[0] != '-' || !a[1] || !strchr("efCbM", a[1]) || a[1] == '-')
			return hgt__errorf(
				EINVAL,
				"trace-cmd host asked for '%s': not supported here (this agent takes -e, -f, -C, -b, -M, -q and --tsync-interval)",
				a);
		v = value_of(argv, argc, &i);
		if (!v || !*v)
			goto missing;
		switch (a[1]) {
		case 'e':
			s->events[s->nev++] = v;
			break;
		case 'f':
			if (!s->nev)
				return hgt__errorf(EINVAL,
						   "trace-cmd host sent -f '%s' before any -e", v);
			s->filters[s->nev - 1] = v;
			break;
		case 'C':
			s->ro.clock = v;
			break;
		case 'b':
			errno = 0;
			kb = strtoul(v, &end, 10);
			if (errno || *end || !kb || kb > (1UL << 30))
				return hgt__errorf(
					EINVAL,
					"trace-cmd host asked for -b '%s': not a size in KB", v);
			s->ro.buffer_kb = kb;
			break;
		case 'M':
			s->ro.cpumask = v;
			break;
		}
		continue;
missing:
		return hgt__errorf(EINVAL, "trace-cmd host sent '%s' without its value", a);
	}
	if (s->nev) {
		s->ro.events = s->events;
		s->ro.nr_events = s->nev;
		s->ro.filters = s->filters;
	}
	return 0;
}

/* The TRACE_REQ, its options taken, the time-sync protocol chosen. */
static int take_request(struct tcsession *s)
{
	struct hgt__tc_msg m;
	int ret = hgt__tc_recv(s->ctl, s->buf, 30000, s->peer, &m);

	if (!ret && m.cmd != HGT__TC_TRACE_REQ) {
		char t[16];

		ret = hgt__errorf(EPROTO, "%s: a %s message where TRACE_REQ was due", s->peer,
				  hgt__tc_cmd_name(m.cmd, t));
	}
	if (!ret)
		ret = hgt__tc_parse_trace_req(&m, &s->req);
	if (ret)
		return ret;
	s->ro = *s->o->record;
	/* trace-cmd's host stops reading the data before its CLOSE: a partial page goes
	 * out at most this late, so the tail it loses is short (--flush-ms sets it) */
	if (!s->ro.flush_ms)
		s->ro.flush_ms = 100;
	ret = take_args(s);
	for (int i = 0; !ret && i < s->req.nr_protos; i++)
		s->ptp |= !strcmp(s->req.protos[i], "ptp");
	return ret;
}

/* A listener per CPU on free ports beside the control connection. */
static int open_data_ports(struct tcsession *s)
{
	s->data = malloc(sizeof(int) * (size_t)s->nr_cpus);
	s->ports = calloc((size_t)s->nr_cpus, sizeof(*s->ports));
	if (!s->data || !s->ports)
		return -ENOMEM;
	for (int i = 0; i < s->nr_cpus; i++)
		s->data[i] = -1;
	for (int i = 0; i < s->nr_cpus; i++) {
		s->data[i] = hgt__sock_listen_beside(s->ctl, &s->ports[i], "agent");
		if (s->data[i] < 0)
			return s->data[i];
	}
	return 0;
}

static int send_response(struct tcsession *s, uint64_t trace_id)
{
	struct hgt__tc_trace_resp r = { .cpus = (uint32_t)s->nr_cpus,
					.page_size = (uint32_t)getpagesize(),
					.trace_id = trace_id,
					.tsync_port = s->sync ? s->sync_port : 0,
					.ports = s->ports };

	snprintf(r.proto, sizeof(r.proto), "%s", s->sync ? "ptp" : "");
	return hgt__tc_send(s->ctl, s->buf, hgt__tc_build_trace_resp(s->buf, sizeof(s->buf), &r),
			    s->peer);
}

static int head_meta(void *ctx, unsigned int id, const void *p, size_t n)
{
	return hgt_output_set_meta(ctx, id, p, n);
}

static int head_option(void *ctx, unsigned int id, const void *p, uint32_t n)
{
	return hgt_output_add_option(ctx, id, p, n);
}

/* The head of the guest's trace.dat (version 6) from the recorder's metadata. */
static ssize_t build_head(struct tcsession *s, struct hgt_recorder *rec, uint8_t **head)
{
	char path[4096];
	const char *tmp = getenv("TMPDIR");
	struct hgt_output_opts oo = { .sz = sizeof(oo),
				      .version = 6,
				      .page_size = (uint32_t)getpagesize() };
	struct hgt_output *out;
	struct hgt__meta_sink sink;
	ssize_t n;

	/* never linked: the writer works in an unnamed file beside this path */
	snprintf(path, sizeof(path), "%s/hgtrace-tc-head.dat", tmp && *tmp ? tmp : "/tmp");
	out = hgt_output_create(path, &oo);
	if (!out)
		return -errno;
	sink = (struct hgt__meta_sink){ head_meta, head_option, out };
	n = hgt__record_describe(rec, &sink, 0);
	if (!n) {
		n = hgt_output_add_buffer(out, "", hgt__record_clock(rec), s->nr_cpus);
		if (n >= 0)
			n = hgt__output_head(out, head);
	}
	hgt_output_abort(out);
	return n;
}

/* The head as SEND_DATA messages, then FIN_DATA. */
static int send_head(struct tcsession *s, const uint8_t *head, size_t len)
{
	const size_t chunk = HGT__TC_MSG_MAX - HGT__TC_HDR;
	int ret = 0;

	for (size_t at = 0; !ret && at < len; at += chunk) {
		size_t n = len - at < chunk ? len - at : chunk;

		ret = hgt__tc_send(s->ctl, s->buf,
				   hgt__tc_build_plain(s->buf, sizeof(s->buf), HGT__TC_SEND_DATA,
						       head + at, n),
				   s->peer);
	}
	if (!ret)
		ret = hgt__tc_send(
			s->ctl, s->buf,
			hgt__tc_build_plain(s->buf, sizeof(s->buf), HGT__TC_FIN_DATA, NULL, 0),
			s->peer);
	return ret;
}

/* The host closed the control connection (or reset it): nothing it sent is waiting. */
static bool host_left(const struct tcsession *s)
{
	struct pollfd p = { s->ctl, POLLIN, 0 };
	char c;

	return poll(&p, 1, 0) > 0 &&
	       ((p.revents & (POLLHUP | POLLERR)) || recv(s->ctl, &c, 1, MSG_PEEK) <= 0);
}

/* Each data port's connection from the host, in its listener's place: 30 s at most, and
 * not once the host has left. */
static int take_data(struct tcsession *s)
{
	for (int i = 0; i < s->nr_cpus; i++) {
		int fd = -1;

		for (int ms = 0; fd < 0 && ms < 30000 && !(s->o->stop && *s->o->stop); ms += 200) {
			if (host_left(s))
				return hgt__errorf(
					ECONNRESET,
					"%s: the host left before it dialed the data port of cpu %d",
					s->peer, i);
			fd = hgt__sock_accept(s->data[i], 200, s->o->stop);
		}
		if (fd < 0)
			return hgt__errorf(
				ETIMEDOUT,
				"%s: no connection to the data port of cpu %d (%u) in 30 s",
				s->peer, i, s->ports[i]);
		if (dup2(fd, s->data[i]) < 0) {
			int e = errno;

			close(fd);
			return hgt__errorf(e, "%s: dup2: %s", s->peer, strerror(e));
		}
		close(fd);
	}
	return 0;
}

/* Before tracing goes on: the response, the file's head, the data connections. */
static int before_on(void *ctx, struct hgt_recorder *rec)
{
	struct tcsession *s = ctx;
	uint8_t *head = NULL;
	ssize_t n;
	int ret;

	if (hgt__record_nr_cpus(rec) != s->nr_cpus)
		return hgt__errorf(EIO, "agent: the recorder has %d CPUs, the response said %d",
				   hgt__record_nr_cpus(rec), s->nr_cpus);
	ret = send_response(s, hgt__record_trace_id(rec));
	n = ret ? ret : build_head(s, rec, &head);
	if (n < 0)
		return (int)n;
	ret = send_head(s, head, (size_t)n);
	free(head);
	if (!ret)
		ret = take_data(s);
	if (!ret)
		say(s, "%zd bytes of metadata sent, %d data connections, tracing (clock %s)", n,
		    s->nr_cpus, hgt__record_clock(rec));
	return ret;
}

/* Until the host's CLOSE (1), its connection ends (0), or a stop (0). */
static int wait_close(struct tcsession *s)
{
	for (;;) {
		struct pollfd p = { s->ctl, POLLIN, 0 };
		struct hgt__tc_msg m;
		char t[16];
		int ret;

		if (s->o->stop && *s->o->stop) {
			say(s, "stopped by a signal before the host's CLOSE");
			return 0;
		}
		if (poll(&p, 1, 200) <= 0)
			continue;
		ret = hgt__tc_recv(s->ctl, s->buf, 10000, s->peer, &m);
		if (ret) {
			say(s, "%s", hgt_last_error());
			return 0;
		}
		if (m.cmd == HGT__TC_CLOSE)
			return 1;
		say(s, "a %s message ignored while recording", hgt__tc_cmd_name(m.cmd, t));
	}
}

/* The time sync's line in the log: its rounds, and any it could not measure. */
static void say_sync(struct tcsession *s, const struct hgt__tcsync_result *sr)
{
	char odd[192] = "";
	size_t n = 0;

	if (sr->repeated)
		n += (size_t)snprintf(
			odd + n, sizeof(odd) - n,
			"; %u repeated their CPU's last offset (no host stamp matched)",
			sr->repeated);
	if (sr->nudged && n < sizeof(odd))
		n += (size_t)snprintf(odd + n, sizeof(odd) - n, "; %u measured 0, sent as 1 ns",
				      sr->nudged);
	if (sr->unsampled && n < sizeof(odd))
		snprintf(
			odd + n, sizeof(odd) - n,
			"; %u unmeasured with nothing to repeat, sent as none (trace-cmd 3.1.6 then writes a TIME_SHIFT it cannot read)",
			sr->unsampled);
	say(s, "ptp: %u rounds answered, round trips %llu..%llu ns, last offset %lld%s%s%s",
	    sr->rounds, (unsigned long long)sr->best_rtt, (unsigned long long)sr->worst_rtt,
	    (long long)sr->last_offset, odd, sr->fault[0] ? "; " : "", sr->fault);
}

/* The session's end: data connections shut, recorder stopped, sync ended, CLOSE_RESP. */
static void finish(struct tcsession *s, struct hgt_recorder *rec, bool closed)
{
	struct hgt__tcsync_result sr = { 0 };

	for (int i = 0; i < s->nr_cpus; i++)
		shutdown(s->data[i], SHUT_RDWR);
	hgt__record_halt(rec); /* a reader cut off by the shutdown is not an error here */
	if (s->sync)
		hgt__tcsync_end(s->sync, closed, &sr);
	s->sync = NULL;
	if (closed)
		hgt__tc_send(
			s->ctl, s->buf,
			hgt__tc_build_plain(s->buf, sizeof(s->buf), HGT__TC_CLOSE_RESP, NULL, 0),
			s->peer);
	for (int i = 0; i < s->nr_cpus; i++)
		say(s, "cpu %d: %llu bytes of pages sent", i,
		    (unsigned long long)hgt__record_cpu_bytes(rec, i));
	if (sr.connected)
		say_sync(s, &sr);
	else if (s->ptp)
		say(s, "ptp: %s", sr.fault[0] ? sr.fault : "the host never dialed its port");
	say(s, "session ended%s", closed ? " (the host's CLOSE answered)" : "");
}

static void session_free(struct tcsession *s)
{
	if (s->sync)
		hgt__tcsync_end(s->sync, false, NULL);
	for (int i = 0; s->data && i < s->nr_cpus; i++)
		if (s->data[i] >= 0)
			close(s->data[i]);
	free(s->data);
	free(s->ports);
	free(s->events);
	free(s->filters);
	hgt__tc_trace_req_free(&s->req);
}

/* "ADDR:PORT" (or "vsock CID:PORT") of the host on @fd. */
static void peer_name(int fd, char *out, size_t cap)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	snprintf(out, cap, "?");
	if (getpeername(fd, (struct sockaddr *)&ss, &len))
		return;
	if (ss.ss_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, host, sizeof(host));
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	} else if (ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, host, sizeof(host));
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	} else if (ss.ss_family == AF_VSOCK) {
		snprintf(out, cap, "vsock %u:%u", ((struct sockaddr_vm *)&ss)->svm_cid,
			 ((struct sockaddr_vm *)&ss)->svm_port);
		return;
	}
	snprintf(out, cap, "%s:%u", host, port);
}

static void describe_request(struct tcsession *s)
{
	char line[1024];
	size_t n = 0;

	line[0] = '\0';
	for (int i = 0; i < s->req.argc && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %s", s->req.argv[i]);
	say(s, "record%s; time sync offered:%s%s", line, s->req.nr_protos ? "" : " none",
	    s->ptp ? " ptp (taken)" : "");
}

/* One session on the control connection @ctl. Returns 0, or -errno (said). */
static int session(const struct hgt_agent_opts *o, int ctl, int nr_cpus)
{
	struct tcsession s = { .o = o, .ctl = ctl, .nr_cpus = nr_cpus };
	struct hgt_recorder *rec;
	int ret;

	peer_name(ctl, s.peer, sizeof(s.peer));
	ret = take_request(&s);
	if (!ret) {
		describe_request(&s);
		ret = open_data_ports(&s);
	}
	if (!ret && s.ptp) {
		/* a new instance's clock is local: what the recorder has without -C */
		s.sync = hgt__tcsync_start(ctl, s.ro.clock ? s.ro.clock : "local", o->stop,
					   &s.sync_port);
		if (!s.sync)
			say(&s, "no time sync: %s", hgt_last_error());
	}
	if (ret) {
		say(&s, "refused: %s", hgt_last_error());
		session_free(&s);
		return ret;
	}
	rec = hgt__record_start(&s.ro, s.data, before_on, &s);
	if (!rec) {
		ret = -errno;
		say(&s, "failed: %s", hgt_last_error());
		session_free(&s);
		return ret;
	}
	trace_agent_state("recording", 0);
	finish(&s, rec, wait_close(&s) == 1);
	trace_agent_state("stopped", 0);
	hgt_record_free(rec);
	session_free(&s);
	return 0;
}

int hgt__tc_agent_serve(const struct hgt_agent_opts *o)
{
	int nr_cpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	int lfd = hgt__sock_listen(o->transport, o->host, o->port, "agent");

	if (lfd < 0)
		return lfd;
	if (o->log)
		fprintf(o->log, "hgtrace agent: %d CPUs, serving trace-cmd hosts on %s port %u\n",
			nr_cpus, o->transport == HGT_TRANSPORT_VSOCK ? "vsock" : "tcp", o->port);
	while (!(o->stop && *o->stop)) {
		int fd = hgt__sock_accept(lfd, -1, o->stop);

		if (fd < 0)
			break;
		session(o, fd, nr_cpus); /* a failed session is said; the next host may come */
		close(fd);
	}
	close(lfd);
	return 0;
}
