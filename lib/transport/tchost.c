// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A session's guest whose agent is trace-cmd's own (`trace-cmd agent`), driven as
 * `trace-cmd record -A` drives it (the protocol of tcmsg.h, checked against 3.1.6):
 *   -> TRACE_REQ: the guest's record options as trace-cmd's argv (-C the host's clock),
 *      "ptp" offered; <- TRACE_RESP: CPUs, page size, trace id, protocol, ports;
 *   ptp on its own connection, from a thread (sync_main()), at the start, every interval
 *   and at the end: per guest CPU a "none" PROBE naming it, then the guest's round, in
 *   which we stamp each of its 339 probes with our trace clock and send the stamps back;
 *   it answers with (its time, offset) of its fastest probe;
 *   <- SEND_DATA...FIN_DATA: the head of the guest's trace.dat (version 7 or 6), made a
 *      head.dat of a recording directory beside the guest file (a kill leaves what
 *      `hgtrace restore` finishes);
 *   the data ports dialed: each CPU's pages into the directory's file of that CPU;
 *   -> CLOSE, the last round and STOP, <- CLOSE_RESP, the pages to their end;
 *   the guest file written from the directory with a TIME_SHIFT of the samples.
 * Bound: the guest picks the probe k whose round trip (its send to its receipt of our
 * answer) is the shortest; that round trip lies between our stamps of probes k-1 and k+1,
 * so half the smallest such span of a round bounds its offset's error. The largest of the
 * kept rounds' (hgt__sync_select()) is the session's bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <hgtrace/output.h>
#include <hgtrace/peer.h>

#include "../common/common-local.h"
#include "../common/thread.h"
#include "../private/clock.h"
#include "../record/record-local.h"
#include "../tracedat/output-local.h"
#include "tchost.h"
#include "tcmsg.h"
#include "transport-local.h"

#define PTP_LOOP 339
#define PTP_START 1
#define PTP_PROBE 2
#define PTP_PROBES 3
#define PTP_OFFSET 4
#define PTP_END 5
#define MAX_HEAD (1ULL << 30) /* a head past this is refused (kallsyms are ~ 10 MB) */

struct tcreader {
	struct hgt__tchost *h;
	int cpu, sock, file;
	pthread_t thread;
	bool started;
	uint64_t bytes;
	int err;
	bool eof; /* the agent closed it */
};

struct tcsamples {
	int64_t *ts, *off;
	uint64_t *b; /* each one's bound: half its round's fastest round trip */
	uint32_t n, cap;
};

struct hgt__tchost {
	struct hgt__tchost_opts o;
	int ctl, tsync;
	char peer[96];
	uint8_t buf[HGT__TC_MSG_MAX];
	struct hgt__tc_trace_resp resp;
	int nr_cpus;
	struct hgt__recdir rd;
	struct tcreader *rdr;
	/* the time sync */
	pthread_t sync_thread;
	bool sync_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool sync_end;
	uint8_t sbuf[HGT__TC_MSG_MAX];
	uint64_t stamp[PTP_LOOP];
	struct tcsamples *cs;
	uint32_t rounds, empty; /* rounds with a sample, and without */
	uint64_t best;
	char sync_fault[256];
	/* the end */
	char path[4096], fault[256], sync_said[200];
	uint64_t *cpu_bytes;
	bool recorded; /* pages may have come: the directory is kept unless written */
	bool halted;   /* hgt__tchost_halt() ran; close_ret: how its CLOSE went */
	int close_ret;
};

static void say(const struct hgt__tchost *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(const struct hgt__tchost *h, const char *fmt, ...)
{
	va_list ap;

	if (!h->o.log)
		return;
	va_start(ap, fmt);
	fprintf(h->o.log, "hgtrace record: guest %s (trace-cmd agent %s): ", h->o.name, h->peer);
	vfprintf(h->o.log, fmt, ap);
	fputc('\n', h->o.log);
	va_end(ap);
}

/* A connection to the agent's @port (TCP, vsock, or through a hybrid-vsock VMM). */
static int dial(const struct hgt__tchost *h, unsigned int port)
{
	int fd = hgt__sock_dial(h->o.transport, h->o.host, h->o.cid, h->o.path, port);

	if (fd < 0)
		return hgt__errorf(-fd, "%s: port %u: %s", h->peer, port,
				   hgt__sock_dial_error(h->o.transport, fd));
	return fd;
}

/* ---- the time sync (its own thread) ---- */

static void quick_ack(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

static int sync_send(struct hgt__tchost *h, const char *proto, uint32_t cmd, const void *p,
		     size_t n)
{
	return hgt__tc_send(h->tsync, h->sbuf,
			    hgt__tc_build_time_sync(h->sbuf, sizeof(h->sbuf), proto, cmd, p, n),
			    "trace-cmd time sync");
}

/* The guest's next ptp packet: 0 with *@ts set (its data in h->sbuf), or -errno. */
static int sync_recv(struct hgt__tchost *h, struct hgt__tc_time_sync *ts)
{
	struct hgt__tc_msg m;
	int ret;

	/* the agent writes a message's header and body apart (see tcsync.c) */
	quick_ack(h->tsync);
	ret = hgt__tc_recv(h->tsync, h->sbuf, 10000, "trace-cmd time sync", &m);
	quick_ack(h->tsync);
	if (!ret)
		ret = hgt__tc_parse_time_sync(&m, ts);
	if (!ret && strcmp(ts->proto, "ptp"))
		ret = hgt__errorf(EBADMSG, "trace-cmd time sync: protocol '%s', not ptp",
				  ts->proto);
	return ret;
}

static int keep_sample(struct hgt__tchost *h, int cpu, int64_t ts, int64_t off, uint64_t b)
{
	struct tcsamples *c = &h->cs[cpu];

	if (c->n == c->cap) {
		uint32_t cap = c->cap ? 2 * c->cap : 16;
		int64_t *t = realloc(c->ts, sizeof(*t) * cap), *o;
		uint64_t *bb;

		if (!t)
			return -ENOMEM;
		c->ts = t;
		o = realloc(c->off, sizeof(*o) * cap);
		if (!o)
			return -ENOMEM;
		c->off = o;
		bb = realloc(c->b, sizeof(*bb) * cap);
		if (!bb)
			return -ENOMEM;
		c->b = bb;
		c->cap = cap;
	}
	c->ts[c->n] = ts;
	c->b[c->n] = b;
	c->off[c->n++] = off;
	return 0;
}

/* The guest's probes of one round, each stamped and answered, until its END. */
static int answer_probes(struct hgt__tchost *h)
{
	struct hgt__tc_time_sync ts;
	int ret;

	memset(h->stamp, 0, sizeof(h->stamp));
	for (;;) {
		uint32_t k;
		uint64_t now;

		ret = sync_recv(h, &ts);
		if (ret || ts.cmd == PTP_END)
			return ret;
		if (ts.cmd != PTP_PROBE || ts.len < 4)
			return hgt__errorf(
				EBADMSG,
				"trace-cmd time sync: ptp packet %u of %u bytes in a round", ts.cmd,
				ts.len);
		k = hgt__tc_get32(ts.data);
		ret = hgt__sync_clock_read(h->o.clock, &now);
		if (ret)
			return hgt__errorf(-ret, "trace-cmd time sync: clock %s: %s", h->o.clock,
					   strerror(-ret));
		if (k >= 1 && k <= PTP_LOOP && !h->stamp[k - 1])
			h->stamp[k - 1] = now;
		ret = sync_send(h, "ptp", PTP_PROBE, ts.data, 4);
		if (ret)
			return ret;
	}
}

/* Half the smallest span between our stamps of probes k-1 and k+1 (0: none). */
static uint64_t round_bound(const struct hgt__tchost *h)
{
	uint64_t best = 0;

	for (int k = 1; k + 1 < PTP_LOOP; k++) {
		uint64_t a = h->stamp[k - 1], b = h->stamp[k + 1];

		if (a && b && b > a && (!best || b - a < best))
			best = b - a;
	}
	return (best + 1) / 2;
}

/* One ptp round with guest CPU @cpu. */
static int sync_round(struct hgt__tchost *h, int cpu)
{
	struct hgt__tc_time_sync ts;
	uint16_t probe = (uint16_t)cpu; /* trace-cmd 3.1: u16, host order */
	uint8_t start[8], *res;
	size_t at = 8;
	int ret = sync_send(h, "none", HGT__TC_TSYNC_PROBE, &probe, sizeof(probe));
	uint64_t b;

	if (!ret)
		ret = sync_recv(h, &ts);
	if (!ret && (ts.cmd != PTP_START || ts.len < 8))
		ret = hgt__errorf(EBADMSG, "trace-cmd time sync: ptp packet %u where START was due",
				  ts.cmd);
	if (ret)
		return ret;
	memcpy(start, ts.data, 8);
	ret = sync_send(h, "ptp", PTP_START, start, 8);
	if (!ret)
		ret = answer_probes(h);
	if (ret)
		return ret;
	/* PROBES {be32 series, be32 count, count x {be64 stamp, be32 k}}, by k */
	res = calloc(1, 8 + 12 * PTP_LOOP);
	if (!res)
		return -ENOMEM;
	memcpy(res, start, 4);
	{
		uint32_t n = htobe32(PTP_LOOP);

		memcpy(res + 4, &n, 4);
	}
	for (uint32_t k = 1; k <= PTP_LOOP; k++, at += 12) {
		uint64_t t = htobe64(h->stamp[k - 1]);
		uint32_t kb = htobe32(k);

		memcpy(res + at, &t, 8);
		memcpy(res + at + 8, &kb, 4);
	}
	ret = sync_send(h, "ptp", PTP_PROBES, res, at);
	free(res);
	if (!ret)
		ret = sync_recv(h, &ts);
	if (!ret && (ts.cmd != PTP_OFFSET || ts.len < 16))
		ret = hgt__errorf(
			EBADMSG,
			"trace-cmd time sync: ptp packet %u of %u bytes where OFFSET was due",
			ts.cmd, ts.len);
	if (ret)
		return ret;
	/* trace-cmd's host keeps no sample the guest could not make (no probe matched) */
	if (!hgt__tc_get64(ts.data) || !hgt__tc_get64(ts.data + 8)) {
		h->empty++;
		return 0;
	}
	b = round_bound(h);
	if (!b)
		return hgt__errorf(EBADMSG, "trace-cmd time sync: a round with too few probes");
	if (!h->best || b < h->best)
		h->best = b;
	h->rounds++;
	return keep_sample(h, cpu, (int64_t)hgt__tc_get64(ts.data),
			   (int64_t)hgt__tc_get64(ts.data + 8), b);
}

static int sync_all(struct hgt__tchost *h)
{
	int ret = 0;

	for (int c = 0; !ret && c < h->nr_cpus; c++)
		ret = sync_round(h, c);
	return ret;
}

static void *sync_main(void *arg)
{
	struct hgt__tchost *h = arg;
	unsigned int ms = h->o.sync_interval_ms ? h->o.sync_interval_ms : 1000;
	bool end = false;
	int ret = sync_all(h);

	while (!ret && !end) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += ms / 1000;
		until.tv_nsec += (long)(ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&h->lock);
		while (!h->sync_end &&
		       pthread_cond_timedwait(&h->cond, &h->lock, &until) != ETIMEDOUT)
			;
		end = h->sync_end;
		pthread_mutex_unlock(&h->lock);
		ret = sync_all(h); /* the last one after the stop */
	}
	if (ret)
		snprintf(h->sync_fault, sizeof(h->sync_fault), "%s", hgt_last_error());
	else
		sync_send(h, "none", HGT__TC_TSYNC_STOP, NULL, 0);
	return NULL;
}

/* ---- the data ---- */

static void *reader_main(void *arg)
{
	struct tcreader *r = arg;
	static __thread uint8_t b[1 << 16];

	for (;;) {
		ssize_t n = read(r->sock, b, sizeof(b));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r->err = n < 0 ? errno : 0;
			r->eof = !n;
			return NULL;
		}
		if (hgt__write_full(r->file, b, (size_t)n)) {
			r->err = errno ? errno : EIO;
			return NULL;
		}
		r->bytes += (uint64_t)n;
	}
}

/* ---- the start ---- */

static int send_request(struct hgt__tchost *h)
{
	const struct hgt_record_opts *ro = h->o.record;
	char kb[32], **argv;
	int n = 0, ret;
	char *protos[] = { "ptp", NULL };

	argv = calloc((size_t)(8 + h->o.nr_extra + 4 * (ro ? ro->nr_events : 0)), sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	argv[n++] = "-C";
	argv[n++] = (char *)h->o.clock;
	for (int i = 0; ro && i < ro->nr_events; i++) {
		argv[n++] = "-e";
		argv[n++] = (char *)ro->events[i];
		if (ro->filters && ro->filters[i]) {
			argv[n++] = "-f"; /* trace-cmd's: of the -e before it */
			argv[n++] = (char *)ro->filters[i];
		}
	}
	if (ro && ro->buffer_kb) {
		snprintf(kb, sizeof(kb), "%zu", ro->buffer_kb);
		argv[n++] = "-b";
		argv[n++] = kb;
	}
	if (ro && ro->cpumask) {
		argv[n++] = "-M";
		argv[n++] = (char *)ro->cpumask;
	}
	for (int i = 0; i < h->o.nr_extra; i++)
		argv[n++] = (char *)h->o.extra[i];
	ret = hgt__tc_send(h->ctl, h->buf,
			   hgt__tc_build_trace_req(h->buf, sizeof(h->buf), 0, h->o.host_trace_id, n,
						   argv, protos),
			   h->peer);
	free(argv);
	return ret;
}

static int take_response(struct hgt__tchost *h)
{
	struct hgt__tc_msg m;
	char t[16];
	int ret = hgt__tc_recv(h->ctl, h->buf, 30000, h->peer, &m);

	if (!ret && m.cmd != HGT__TC_TRACE_RESP)
		ret = hgt__errorf(EPROTO, "%s: %s where TRACE_RESP was due (the agent refused?)",
				  h->peer, hgt__tc_cmd_name(m.cmd, t));
	if (!ret)
		ret = hgt__tc_parse_trace_resp(&m, &h->resp);
	if (!ret && (h->resp.flags & HGT__TC_USE_FIFOS))
		ret = hgt__errorf(ENOTSUP, "%s: the agent answered with FIFOs", h->peer);
	if (!ret && (!h->resp.cpus || h->resp.page_size < 512 || h->resp.page_size > (1u << 20)))
		ret = hgt__errorf(EBADMSG, "%s: TRACE_RESP with %u CPUs of %u-byte pages", h->peer,
				  h->resp.cpus, h->resp.page_size);
	if (ret)
		return ret;
	h->nr_cpus = (int)h->resp.cpus;
	return 0;
}

/* The head the agent sends, into the directory as head.dat (its own file layout). */
static int take_head(struct hgt__tchost *h)
{
	char *tmp = NULL;
	int fd = -1, ret = 0, cpus = 0;
	uint64_t got = 0;
	struct hgt_output *out;

	if (asprintf(&tmp, "%s/tc-head.dat", h->rd.dir) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		ret = hgt__errorf(errno, "%s: %s", tmp, strerror(errno));
	while (!ret) {
		struct hgt__tc_msg m;
		char t[16];

		ret = hgt__tc_recv(h->ctl, h->buf, 30000, h->peer, &m);
		if (ret || m.cmd == HGT__TC_FIN_DATA)
			break;
		if (m.cmd != HGT__TC_SEND_DATA)
			ret = hgt__errorf(EPROTO, "%s: %s where the metadata was due", h->peer,
					  hgt__tc_cmd_name(m.cmd, t));
		else if ((got += m.buf_len) > MAX_HEAD)
			ret = hgt__errorf(EFBIG, "%s: metadata past %llu bytes", h->peer,
					  (unsigned long long)MAX_HEAD);
		else
			ret = hgt__write_full(fd, m.buf, m.buf_len);
	}
	if (fd >= 0)
		close(fd);
	out = ret ? NULL : hgt__recdir_head(&h->rd, h->resp.page_size, 8, HGT_COMPRESS_ZSTD);
	if (!ret && !out)
		ret = -errno;
	if (!ret) {
		ret = hgt__head_copy(tmp, out, &cpus);
		if (ret) {
			char why[HGT__ERRLEN];

			snprintf(why, sizeof(why), "%s", hgt_last_error());
			hgt__errorf(-ret, "%s: its metadata is not a trace.dat head (%s)", h->peer,
				    why);
		}
	}
	if (!ret && cpus != h->nr_cpus)
		ret = hgt__errorf(EBADMSG, "%s: its metadata says %d CPUs, its response %d",
				  h->peer, cpus, h->nr_cpus);
	if (!ret) {
		int b = hgt_output_add_buffer(out, "", h->o.clock, h->nr_cpus);

		ret = b < 0 ? b : hgt_output_close(out);
		out = NULL;
	}
	if (out)
		hgt_output_abort(out);
	if (!ret)
		say(h, "%llu bytes of metadata", (unsigned long long)got);
	unlink(tmp);
	free(tmp);
	return ret;
}

static int take_data(struct hgt__tchost *h)
{
	h->rdr = calloc((size_t)h->nr_cpus, sizeof(*h->rdr));
	if (!h->rdr)
		return -ENOMEM;
	for (int i = 0; i < h->nr_cpus; i++)
		h->rdr[i] = (struct tcreader){ .h = h, .cpu = i, .sock = -1, .file = -1 };
	for (int i = 0; i < h->nr_cpus; i++) {
		struct tcreader *r = &h->rdr[i];

		r->file = hgt__recdir_file(&h->rd, i, 0);
		if (r->file < 0)
			return r->file;
		r->sock = dial(h, h->resp.ports[i]);
		if (r->sock < 0)
			return r->sock;
		if (hgt__thread_create(&r->thread, reader_main, r))
			return hgt__errorf(EAGAIN, "%s: cannot start the reader of cpu %d", h->peer,
					   i);
		r->started = true;
		h->recorded = true;
	}
	return 0;
}

static int start_sync(struct hgt__tchost *h)
{
	if (strcmp(h->resp.proto, "ptp")) {
		say(h, "no time sync agreed ('%s'): the guest file will have no TIME_SHIFT",
		    h->resp.proto);
		return 0;
	}
	if (!hgt__sync_clock_readable(h->o.clock))
		return hgt__errorf(ENOTSUP, "%s: clock %s cannot be read for ptp", h->peer,
				   h->o.clock);
	h->tsync = dial(h, h->resp.tsync_port);
	if (h->tsync < 0)
		return h->tsync;
	h->cs = calloc((size_t)h->nr_cpus, sizeof(*h->cs));
	if (!h->cs)
		return -ENOMEM;
	if (hgt__thread_create(&h->sync_thread, sync_main, h))
		return hgt__errorf(EAGAIN, "%s: cannot start the time sync", h->peer);
	h->sync_started = true;
	return 0;
}

struct hgt__tchost *hgt__tchost_start(const struct hgt__tchost_opts *o)
{
	struct hgt__tchost *h = calloc(1, sizeof(*h));
	int ret;

	if (!h) {
		hgt__errorf(ENOMEM, "record: out of memory");
		return NULL;
	}
	h->o = *o;
	h->ctl = h->tsync = -1;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	if (o->transport == HGT_TRANSPORT_VSOCK)
		snprintf(h->peer, sizeof(h->peer), "vsock %u:%u", o->cid, o->port);
	else if (o->transport == HGT_TRANSPORT_HVSOCK)
		snprintf(h->peer, sizeof(h->peer), "unix %s:%u", o->path, o->port);
	else
		snprintf(h->peer, sizeof(h->peer), "%s:%u", o->host, o->port);
	ret = hgt__recdir_create(&h->rd, o->output, NULL);
	if (!ret) {
		h->ctl = dial(h, o->port);
		ret = h->ctl < 0 ? h->ctl : send_request(h);
	}
	if (!ret)
		ret = take_response(h);
	if (!ret)
		ret = start_sync(h);
	if (!ret)
		ret = take_head(h);
	if (!ret)
		ret = take_data(h);
	if (ret) {
		char line[HGT__ERRLEN];

		snprintf(line, sizeof(line), "%s", hgt_last_error());
		hgt__tchost_free(h);
		hgt__errorf(-ret, "%s", line);
		errno = -ret;
		return NULL;
	}
	say(h, "recording: %d CPUs, time sync %s", h->nr_cpus, h->sync_started ? "ptp" : "none");
	return h;
}

/* ---- the stop ---- */

static void end_sync(struct hgt__tchost *h)
{
	if (!h->sync_started)
		return;
	pthread_mutex_lock(&h->lock);
	h->sync_end = true;
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
	hgt__thread_join(h->sync_thread);
	h->sync_started = false;
}

/* The agent's CLOSE_RESP (10 s at most; trace-cmd's agent may die at its end instead). */
static void take_close(struct hgt__tchost *h)
{
	struct hgt__tc_msg m;
	char t[16];

	for (;;) {
		if (hgt__tc_recv(h->ctl, h->buf, 10000, h->peer, &m)) {
			say(h, "no CLOSE_RESP: %s", hgt_last_error());
			return;
		}
		if (m.cmd == HGT__TC_CLOSE_RESP)
			return;
		say(h, "a %s message ignored at the end", hgt__tc_cmd_name(m.cmd, t));
	}
}

/* The data connections to their end (the agent closes them), 10 s at most with @wait;
 * else (a session that failed) cut at once. */
static void end_data(struct hgt__tchost *h, bool wait)
{
	for (int i = 0; h->rdr && i < h->nr_cpus; i++) {
		struct tcreader *r = &h->rdr[i];
		struct pollfd p = { r->sock, POLLRDHUP, 0 };
		bool hup = false;

		if (!r->started)
			continue;
		for (int k = 0; wait && k < 100 && !hup; k++)
			hup = poll(&p, 1, 100) > 0;
		if (!hup) /* its reader waits for good: it is cut */
			shutdown(r->sock, SHUT_RDWR);
		hgt__thread_join(r->thread); /* else it reads what is left, to the end */
		r->started = false;
		if (!hup && wait) {
			r->eof = false; /* we cut it */
			say(h, "cpu %d: its data connection still open 10 s after the stop: cut",
			    i);
		}
		if (r->err)
			say(h, "cpu %d: its data connection failed: %s", i, strerror(r->err));
	}
}

/* The largest bound of the samples the TIME_SHIFT keeps (hgt__sync_select()). */
static uint64_t kept_bound(const struct hgt__tchost *h)
{
	uint64_t bound = 0, b;

	for (int i = 0; h->cs && i < h->nr_cpus; i++) {
		hgt__sync_select(h->cs[i].ts, h->cs[i].off, h->cs[i].b, h->cs[i].n, NULL, NULL, &b);
		if (b > bound)
			bound = b;
	}
	return bound;
}

static int add_time_shift(void *ctx, struct hgt_output *out)
{
	struct hgt__tchost *h = ctx;
	struct hgt_time_shift_cpu *c;
	struct hgt_time_shift ts = { .peer_id = h->o.host_trace_id, .flags = 1, .nr_cpus = 0 };
	int64_t *ones, *kt, *ko;
	uint32_t most = 0, kept = 0;
	uint64_t bound = 0;
	uint8_t *buf;
	uint32_t len;
	int ret;

	if (!h->cs || !h->rounds || h->nr_cpus < 1)
		return 0;
	for (int i = 0; i < h->nr_cpus; i++)
		if (h->cs[i].n > most)
			most = h->cs[i].n;
	c = calloc((size_t)h->nr_cpus, sizeof(*c));
	ones = calloc(most ? most : 1, 2 * sizeof(*ones));
	kt = calloc((size_t)h->nr_cpus * (most ? most : 1), sizeof(*kt));
	ko = calloc((size_t)h->nr_cpus * (most ? most : 1), sizeof(*ko));
	if (!c || !ones || !kt || !ko) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t k = 0; k < most; k++)
		ones[k] = 1; /* scalings 1, then fractions 0 */
	for (int i = 0; i < h->nr_cpus; i++) {
		uint64_t b;
		uint32_t n = hgt__sync_select(h->cs[i].ts, h->cs[i].off, h->cs[i].b, h->cs[i].n,
					      kt + (size_t)i * most, ko + (size_t)i * most, &b);

		c[i] = (struct hgt_time_shift_cpu){ .count = n,
						    .time = kt + (size_t)i * most,
						    .offset = ko + (size_t)i * most,
						    .scaling = ones,
						    .frac = ones + most };
		kept += n;
		if (b > bound)
			bound = b;
	}
	ts.nr_cpus = h->nr_cpus;
	ts.cpus = c;
	ret = hgt_time_shift_option_build(&ts, &buf, &len);
	if (!ret) {
		ret = hgt_output_add_option(out, HGT_OPT_TIME_SHIFT, buf, len);
		free(buf);
	}
	if (!ret) {
		char line[300];
		int n = snprintf(
			line, sizeof(line),
			"hgtrace sync: trace-cmd ptp, %u rounds, %u kept (a round trip at most %dx its CPU's best, or an offset the others cannot explain), bound=%llu\n",
			h->rounds, kept, HGT__SYNC_SLACK, (unsigned long long)bound);

		ret = hgt_output_add_option(out, HGT_OPT_CPUSTAT, line, (uint32_t)n + 1);
	}
out:
	free(c);
	free(ones);
	free(kt);
	free(ko);
	return ret;
}

void hgt__tchost_halt(struct hgt__tchost *h)
{
	if (h->halted)
		return;
	h->halted = true;
	/* the last round first, while the guest still records (trace-cmd's host runs it
	 * after its CLOSE, while the agent stops) */
	end_sync(h);
	h->close_ret = hgt__tc_send(
		h->ctl, h->buf, hgt__tc_build_plain(h->buf, sizeof(h->buf), HGT__TC_CLOSE, NULL, 0),
		h->peer);
	if (!h->close_ret)
		take_close(h);
	end_data(h, true);
}

int hgt__tchost_stop(struct hgt__tchost *h, struct hgt_listen_result *r)
{
	HGT_OPTS(hgt_convert_opts, co, .version = 7, .compression = HGT_COMPRESS_ZSTD);
	int ret;

	hgt__tchost_halt(h);
	ret = h->close_ret;
	h->cpu_bytes = calloc((size_t)h->nr_cpus, 8);
	*r = (struct hgt_listen_result){ .name = h->o.name,
					 .trace_id = h->resp.trace_id,
					 .nr_cpus = h->nr_cpus,
					 .clock = h->o.clock,
					 .cpu_bytes = h->cpu_bytes,
					 .rounds = h->rounds,
					 .bound = kept_bound(h),
					 .best_rtt = 2 * h->best };
	/* it stopped on our CLOSE when every data connection came to its end */
	r->ended_after_stop = !ret && h->rdr;
	for (int i = 0; h->cpu_bytes && i < h->nr_cpus; i++) {
		h->cpu_bytes[i] = h->rdr ? h->rdr[i].bytes : 0;
		r->bytes += h->cpu_bytes[i];
		if (h->rdr && (h->rdr[i].err || !h->rdr[i].eof))
			r->ended_after_stop = false;
	}
	for (int i = 0; h->cs && i < h->nr_cpus; i++)
		r->samples += h->cs[i].n;
	if (h->sync_fault[0])
		snprintf(h->sync_said, sizeof(h->sync_said), "trace-cmd ptp failed: %s",
			 h->sync_fault);
	else
		snprintf(h->sync_said, sizeof(h->sync_said), "%s",
			 h->rounds ? "trace-cmd ptp" : "none (the agent agreed no time sync)");
	r->sync = h->sync_said;
	r->sync_failed = h->sync_fault[0] != 0;
	ret = hgt__recdir_finish(h->rd.dir, h->o.output, &co, add_time_shift, h, false, h->o.log,
				 NULL);
	if (ret) {
		snprintf(h->fault, sizeof(h->fault), "%s", hgt_last_error());
		r->fault = h->fault;
		return ret;
	}
	snprintf(h->path, sizeof(h->path), "%s", h->o.output);
	r->path = h->path;
	say(h, "%llu bytes of pages, %u ptp rounds, bound %llu%s", (unsigned long long)r->bytes,
	    h->rounds, (unsigned long long)r->bound,
	    h->empty ? "; some rounds found no offset (no probe of theirs matched)" : "");
	return 0;
}

void hgt__tchost_free(struct hgt__tchost *h)
{
	if (!h)
		return;
	if (h->sync_started) /* a failed start: no more rounds */
		shutdown(h->tsync, SHUT_RDWR);
	end_sync(h);
	end_data(h, false);
	for (int i = 0; h->rdr && i < h->nr_cpus; i++) {
		if (h->rdr[i].sock >= 0)
			close(h->rdr[i].sock);
		if (h->rdr[i].file >= 0)
			close(h->rdr[i].file);
	}
	for (int i = 0; h->cs && i < h->nr_cpus; i++) {
		free(h->cs[i].ts);
		free(h->cs[i].off);
		free(h->cs[i].b);
	}
	if (h->ctl >= 0)
		close(h->ctl);
	if (h->tsync >= 0)
		close(h->tsync);
	/* a written file's directory is gone; a failed write's is kept for a restore */
	hgt__recdir_done(&h->rd, h->rd.made && !h->recorded);
	hgt__tc_trace_resp_free(&h->resp);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->cond);
	free(h->rdr);
	free(h->cs);
	free(h->cpu_bytes);
	free(h);
}
