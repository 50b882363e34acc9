// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The host listener: one poll() loop serving every guest (FIFO pairs, TCP, vsock). Guest
 * input is hostile: message and page sizes are bounded, memory grows only with bytes
 * actually received, each guest has a byte limit, file names come from the listener's own
 * configuration (or a counter), and a fault ends only that guest's stream, with its file
 * written from what arrived and a line saying why.
 */
#include <dirent.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include <hgtrace/clock.h>
#include <hgtrace/infer.h>
#include <hgtrace/output.h>
#include <hgtrace/peer.h>
#include <hgtrace/session.h>
#include <hgtrace/sync.h>
#include <hgtrace/tracedat.h>
#include <hgtrace/transport.h>

#include "trace-transport.h"
#include "../record/record-local.h"
#include "../common/common-local.h"
#include "../common/thread.h"
#include "../private/tracedat.h"
#include "../private/vmm.h"
#include "proto.h"

#define MAX_GUESTS 64
#define MAX_CPUS 1024
#define MAX_PENDING 64
#define HELLO_TIMEOUT_MS 10000 /* a network guest's first words */
#define SYNC_FIRST 16	       /* probes per CPU in the first and the last round */
#define SYNC_PERIODIC 8	       /* in the others */
#define SYNC_TIMEOUT_MS 1000   /* a probe not answered in time is lost */
#define SYNC_MAX_SAMPLES 4096
#define END_TIMEOUT_MS 10000   /* a guest told to stop sends its end within this */
#define REFUSED_LINGER_MS 2000 /* a refused connection is read until its peer closes */

enum { FIN_NONE, FIN_RUNNING, FIN_DONE };

struct chan {
	int fd;
	int cpu;
	uint8_t hdr[HGT__DATA_HDR];
	size_t hdr_got;
	uint64_t bytes; /* page bytes received */
	size_t part;	/* bytes of the current, incomplete page */
	int tmp;	/* the CPU's file in the guest's recording directory (-1: not yet) */
	bool eof;
	uint64_t stale; /* bytes before this session's header (a dead host's agent's) */
};

struct opt {
	uint16_t id;
	uint32_t size;
	uint8_t *data;
};

struct guest {
	char name[80];
	bool fifo;
	int ctl_r, ctl_w;
	/* control message being received */
	uint8_t mhdr[HGT__MSG_HDR];
	size_t mhdr_got;
	uint8_t *msg;
	size_t msg_len, msg_got, msg_cap;
	/* what the guest said */
	bool hello, ended, ready;
	bool recording;	       /* its tracing is on: RECORDING (TRACEID of a version 2 agent) */
	uint32_t proto;	       /* its HELLO's protocol version */
	uint64_t recording_ts; /* its trace clock when its tracing went on (0: unknown) */
	struct hgt_tsc_sample rate0; /* --record-host: TSC and CLOCK_MONOTONIC_RAW at its start */
	uint32_t nr_cpus, page_size, long_size;
	uint64_t session;
	char clock[64];
	uint8_t *meta[6];
	size_t meta_len[6];
	struct opt *opts;
	int nr_opts;
	struct chan *data;
	int nr_data;
	uint64_t bytes; /* everything received */
	uint64_t mem;	/* of it, control stream bytes: held in memory */
	bool over_limit;
	char fault[256];
	uint64_t t_start, t_last;
	uint64_t t_sent;      /* the last bytes sent to its agent (a serving agent's host check) */
	uint64_t quiet_since; /* since when polls find none of its channels readable (0: not) */
	bool start_sent, stop_sent, done;
	bool ctl_eof; /* the control channel ended (after END: the data may still come) */
	/* its file is written in a thread of its own, so the others go on meanwhile */
	pthread_t fin_thread;
	int fin_state; /* FIN_NONE, FIN_RUNNING, FIN_DONE (set by the thread) */
	int fin_ret;
	char fin_err[HGT__ERRLEN];
	/* sessions */
	const struct hgt_record_opts *record; /* CONFIG to send before the start */
	uint64_t t_read;		      /* host clock when the last control read returned */
	uint64_t t_stop_sent;
	const char *dir;		    /* FIFO guests: where their FIFOs are */
	const struct hgt_listen_peer *peer; /* a guest we dialed (its agent listens) */
	int src;			    /* FIFO guests: index in opts->guests */
	int seq;			    /* --record-host: its session number (1, 2, ...) */
	const char *host_clock;		    /* the host's trace clock for probes (NULL: no sync) */
	uint64_t host_trace_id;		    /* the TIME_SHIFT's peer */
	struct hgt_recorder *host_rec;	    /* --record-host: the host's side of this guest */
	char host_path[4096];
	char host_clock_buf[64];
	struct hgt_vcpu_threads vt; /* its VMM's vCPU threads, found when it started */
	struct hgt__recdir rd;	    /* PATH.recording: its pages and head.dat as they come */
	bool head_written;
	char path[4096];     /* its file (set with rd) */
	uint64_t *end_bytes; /* END: each CPU's page bytes sent (NULL: not said) */
	uint64_t agent_cpu_ns, agent_wall_ns, agent_setup_cpu_ns;
	struct sync {
		bool on, failed, final_started, final_done;
		uint64_t final_ms;
		int lost_run; /* probes lost in a row */
		char why[160];
		uint32_t rounds, round_per_cpu;
		int round_cpu, round_left; /* probes left in the round (0: none running) */
		uint32_t seq;
		bool waiting;
		uint64_t t1, t1_ms;
		uint64_t next_ms;
		uint64_t lost;
		/* the round's best probe per CPU */
		uint64_t *best_rtt, *best_g, *best_mid;
		/* kept samples: per CPU, guest time and offset */
		uint32_t *count;
		int64_t **time, **offset;
		uint64_t bound, best;
	} sync;
};

struct pending {
	int fd;
	uint8_t hdr[HGT__DATA_HDR];
	size_t got;
	uint64_t t;
};

struct listener {
	struct hgt_listen_opts o;
	bool started_called;
	bool stop_seen; /* on_stopping called */
	uint64_t t_begin;
	struct guest *g[MAX_GUESTS];
	int nr_g;
	int tcp_fd, vsock_fd;
	struct pending pend[MAX_PENDING];
	uint64_t mem; /* the guests' mem, together */
	int nr_pend;
	int tcp_count;
	int failures;
	/* refused connections: read and dropped until their peer closes (or
	 * REFUSED_LINGER_MS), so the refusal is not lost to a reset */
	struct pending refused[MAX_PENDING];
	int nr_refused;
	uint64_t accept_paused; /* accept() found no file descriptor: until then */
	bool accept_failing;
};

static void logf_(struct listener *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct guest;
static bool taken(const char *path);
static int chan_file(struct listener *l, struct guest *g, struct chan *c);
static int guest_head(struct listener *l, struct guest *g, int ncpu);
static void logf_(struct listener *l, const char *fmt, ...)
{
	va_list ap;

	if (!l->o.log)
		return;
	va_start(ap, fmt);
	fputs("hgtrace listen: ", l->o.log);
	vfprintf(l->o.log, fmt, ap);
	fputc('\n', l->o.log);
	va_end(ap);
	fflush(l->o.log);
}

/* End this guest's stream for @why (first fault kept); it is then written out. */
static void fault(struct listener *l, struct guest *g, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fault(struct listener *l, struct guest *g, const char *fmt, ...)
{
	va_list ap;

	if (!g->fault[0]) {
		va_start(ap, fmt);
		vsnprintf(g->fault, sizeof(g->fault), fmt, ap);
		va_end(ap);
		trace_listen_fault(g->name, g->fault);
		logf_(l, "guest %s: %s", g->name, g->fault);
	}
	g->done = true;
}

static int send_config(struct guest *g);

static struct guest *new_guest(struct listener *l, const char *name)
{
	struct guest *g;
	int slot;

	/* a slot freed by a finished guest first: a listener lives through many guests */
	for (slot = 0; slot < l->nr_g && l->g[slot]; slot++)
		;
	if (slot == MAX_GUESTS)
		return NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->ctl_r = g->ctl_w = -1;
	g->t_start = g->t_last = hgt__now_ms();
	g->seq = 1;
	l->g[slot] = g;
	if (slot == l->nr_g)
		l->nr_g++;
	return g;
}

/* A guest the listener was told of by name (FIFO, dialed): the name is checked. */
static int named_guest(struct listener *l, const char *name, struct guest **g)
{
	if (!hgt__valid_name(name))
		return hgt__errorf(EINVAL, "listen: guest name '%s': use [A-Za-z0-9_.-]", name);
	*g = new_guest(l, name);
	return *g ? 0 : -ENOMEM;
}

static int add_chan(struct listener *l, struct guest *g, int fd, int cpu)
{
	struct chan *n;

	if (g->nr_data >= MAX_CPUS)
		return -EMFILE;
	n = realloc(g->data, sizeof(*n) * (size_t)(g->nr_data + 1));
	if (!n)
		return -ENOMEM;
	g->data = n;
	memset(&n[g->nr_data], 0, sizeof(*n));
	n[g->nr_data].fd = fd;
	n[g->nr_data].cpu = cpu;
	n[g->nr_data].tmp = -1; /* opened with the first page bytes */
	g->nr_data++;
	return 0;
}

static int open_fifo_guest(struct listener *l, const struct hgt_listen_guest *lg,
			   const struct hgt_record_opts *record, int src, int seq,
			   struct guest **out)
{
	struct guest *g = NULL;
	char path[4096];
	int i, fd;

	i = named_guest(l, lg->name, &g);
	if (i)
		return i;
	g->fifo = true;
	g->dir = lg->dir;
	g->src = src;
	g->seq = seq;
	*out = g;
	/* O_RDWR: opening never waits for the guest, and polling never sees a hang-up */
	snprintf(path, sizeof(path), "%s/agent-ctl-path.out", lg->dir);
	g->ctl_r = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/agent-ctl-path.in", lg->dir);
	g->ctl_w = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (g->ctl_r < 0 || g->ctl_w < 0)
		return hgt__errorf(errno, "listen: %s: %s (make it with hgtrace setup-guest)", path,
				   strerror(errno));
	for (i = 0; i < MAX_CPUS; i++) {
		snprintf(path, sizeof(path), "%s/trace-path-cpu%d.out", lg->dir, i);
		fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			break;
		if (add_chan(l, g, fd, -1)) {
			close(fd);
			return -ENOMEM;
		}
	}
	if (!i)
		return hgt__errorf(ENOENT, "listen: %s: no trace-path-cpu0.out", lg->dir);
	if (record) {
		/* an agent --serve writes nothing before our CONFIG: whatever waits in the
		 * FIFOs is left from an earlier host, cut off */
		uint8_t junk[65536];
		uint64_t stale = 0;
		ssize_t r;

		while ((r = read(g->ctl_r, junk, sizeof(junk))) > 0)
			stale += (uint64_t)r;
		for (i = 0; i < g->nr_data; i++)
			while ((r = read(g->data[i].fd, junk, sizeof(junk))) > 0)
				stale += (uint64_t)r;
		if (stale)
			logf_(l, "guest %s: %llu stale bytes of an earlier session dropped",
			      g->name, (unsigned long long)stale);
		g->record = record;
		if (send_config(g))
			return hgt__errorf(errno ? errno : EIO,
					   "listen: %s: cannot send the guest its settings",
					   lg->dir);
	}
	return 0;
}

static void send_cmd(struct guest *g, const char *c)
{
	trace_listen_command(g->name, c);
	g->t_sent = hgt__now_ms();
	if (g->ctl_w >= 0 && write(g->ctl_w, c, strlen(c)) < 0) {
		/* the agent reads commands when it is ready; nothing to do */
	}
}

/* A framed message to the agent (CONFIG, PROBE). */
static int send_framed(struct guest *g, uint16_t type, const void *p, size_t n)
{
	uint8_t b[HGT__MSG_HDR + 64];
	uint32_t magic = HGT__CTL_MAGIC, len = (uint32_t)n;
	uint16_t flags = 0;
	uint8_t *m = n <= 64 ? b : malloc(HGT__MSG_HDR + n);
	int ret;

	if (!m)
		return -ENOMEM;
	memcpy(m, &magic, 4);
	memcpy(m + 4, &type, 2);
	memcpy(m + 6, &flags, 2);
	memcpy(m + 8, &len, 4);
	memcpy(m + HGT__MSG_HDR, p, n);
	g->t_sent = hgt__now_ms();
	ret = g->ctl_w >= 0 ? hgt__write_full(g->ctl_w, m, HGT__MSG_HDR + n) : -EBADF;
	if (m != b)
		free(m);
	return ret;
}

/* CONFIG: the guest recording's clock, buffer size and events, for an agent --serve. */
static int send_config(struct guest *g)
{
	const struct hgt_record_opts *r = g->record;
	size_t n = 8 + (r->clock ? strlen(r->clock) : 0) + 1;
	uint32_t h[2] = { (uint32_t)r->buffer_kb, 0 };
	uint8_t *p;
	size_t k;
	int i, ret;

	for (i = 0; i < r->nr_events; i++)
		n += strlen(r->events[i]) + 1;
	if (n > HGT__CONFIG_MAX)
		return -E2BIG;
	p = malloc(n);
	if (!p)
		return -ENOMEM;
	memcpy(p, h, 8);
	k = 8;
	k += (size_t)sprintf((char *)p + k, "%s", r->clock ? r->clock : "") + 1;
	for (i = 0; i < r->nr_events; i++)
		k += (size_t)sprintf((char *)p + k, "%s", r->events[i]) + 1;
	ret = send_framed(g, HGT__MSG_CONFIG, p, k);
	free(p);
	return ret;
}

static uint64_t host_clock(struct guest *g)
{
	uint64_t t = 0;

	hgt__sync_clock_read(g->host_clock, &t);
	return t;
}

static void sync_fail(struct listener *l, struct guest *g, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void sync_fail(struct listener *l, struct guest *g, const char *fmt, ...)
{
	va_list ap;

	if (g->sync.failed)
		return;
	va_start(ap, fmt);
	vsnprintf(g->sync.why, sizeof(g->sync.why), fmt, ap);
	va_end(ap);
	g->sync.failed = true;
	g->sync.round_left = 0;
	g->sync.waiting = false;
	logf_(l, "guest %s: sync FAILED: %s", g->name, g->sync.why);
}

/* Sync over the control channel: the host stamps a probe's send (t1) and its answer's
 * arrival (t2) in its trace clock, the agent stamps its answer in its own, pinned to the
 * CPU asked for. Per round and CPU the probe with the shortest round trip is kept: the
 * guest clock read g happened within [t1, t2], so offset = (t1 + t2) / 2 - g is right to
 * within half that round trip. */
static int sync_setup(struct listener *l, struct guest *g)
{
	struct sync *s = &g->sync;
	int n = (int)g->nr_cpus;

	if (!g->host_clock)
		return 0;
	if (!hgt__sync_clock_readable(g->host_clock)) {
		snprintf(s->why, sizeof(s->why),
			 "none: the host's clock %s cannot be read from user space", g->host_clock);
		g->host_clock = NULL;
		return 0;
	}
	if (!hgt__sync_clock_readable(g->clock) || strcmp(g->clock, g->host_clock)) {
		snprintf(
			s->why, sizeof(s->why),
			"none: the guest records with clock %s, the host with %s (use one of x86-tsc, mono, mono_raw, boot, tai, local, global, perf on both)",
			g->clock, g->host_clock);
		g->host_clock = NULL;
		return 0;
	}
	s->best_rtt = calloc((size_t)n, 8);
	s->best_g = calloc((size_t)n, 8);
	s->best_mid = calloc((size_t)n, 8);
	s->count = calloc((size_t)n, sizeof(*s->count));
	s->time = calloc((size_t)n, sizeof(*s->time));
	s->offset = calloc((size_t)n, sizeof(*s->offset));
	if (!s->best_rtt || !s->best_g || !s->best_mid || !s->count || !s->time || !s->offset)
		return -ENOMEM;
	s->on = true;
	s->best = UINT64_MAX;
	return 0;
}

static void sync_send(struct listener *l, struct guest *g)
{
	struct sync *s = &g->sync;
	uint32_t m[2];

	/* CPU by CPU: the agent moves to a CPU once per round, not once per probe */
	s->round_cpu = (int)g->nr_cpus - 1 - (s->round_left - 1) / (int)s->round_per_cpu;
	m[0] = ++s->seq;
	m[1] = (uint32_t)s->round_cpu;
	s->t1_ms = hgt__now_ms();
	s->t1 = host_clock(g);
	if (send_framed(g, HGT__MSG_PROBE, m, sizeof(m))) {
		sync_fail(l, g, "cannot send probes: %s", strerror(errno));
		return;
	}
	s->waiting = true;
}

static void sync_round(struct listener *l, struct guest *g, int per_cpu)
{
	struct sync *s = &g->sync;

	if (!s->on || s->failed || s->round_left)
		return;
	for (uint32_t c = 0; c < g->nr_cpus; c++)
		s->best_rtt[c] = UINT64_MAX;
	s->round_per_cpu = (uint32_t)per_cpu;
	s->round_left = per_cpu * (int)g->nr_cpus;
	s->round_cpu = -1;
	sync_send(l, g);
}

/* The round is over: each CPU's best probe becomes a sample. */
static void save_sync(struct listener *l, struct guest *g);

static void sync_round_done(struct listener *l, struct guest *g)
{
	struct sync *s = &g->sync;
	int kept = 0;

	for (uint32_t c = 0; c < g->nr_cpus && !s->failed; c++) {
		uint32_t k = s->count[c];
		int64_t *t, *o;

		if (s->best_rtt[c] == UINT64_MAX || k >= SYNC_MAX_SAMPLES)
			continue;
		if (k && (int64_t)s->best_g[c] <= s->time[c][k - 1]) {
			sync_fail(l, g,
				  "cpu %u: its clock went back between probes (%llu after %lld)", c,
				  (unsigned long long)s->best_g[c], (long long)s->time[c][k - 1]);
			return;
		}
		if (k) {
			/* Between two rounds the guest's clock must advance at a rate the host's
			 * can explain: TSC scaling gives ratios near 1, never beyond 1/10..10. A
			 * lying agent's numbers fail this even when they happen to increase. */
			double dg = (double)s->best_g[c] - (double)s->time[c][k - 1];
			double dh = (double)s->best_mid[c] -
				    ((double)s->time[c][k - 1] + (double)s->offset[c][k - 1]);
			double slack = 4.0 * (double)s->bound + (double)s->best_rtt[c];

			if (dg > 10 * dh + slack || dh > 10 * dg + slack) {
				sync_fail(
					l, g,
					"cpu %u: its clock advanced %.0f while the host's advanced %.0f between probes (a rate outside 1/10..10)",
					c, dg, dh);
				return;
			}
		}
		t = realloc(s->time[c], sizeof(*t) * (k + 1));
		if (t)
			s->time[c] = t;
		o = realloc(s->offset[c], sizeof(*o) * (k + 1));
		if (o)
			s->offset[c] = o;
		if (!t || !o) {
			sync_fail(l, g, "out of memory");
			return;
		}
		t[k] = (int64_t)s->best_g[c];
		o[k] = (int64_t)(s->best_mid[c] - s->best_g[c]);
		s->count[c] = k + 1;
		if (s->best_rtt[c] / 2 + 1 > s->bound)
			s->bound = s->best_rtt[c] / 2 + 1;
		if (s->best_rtt[c] < s->best)
			s->best = s->best_rtt[c];
		kept++;
	}
	if (kept) {
		s->rounds++;
		save_sync(l, g);
	}
}

/* PROBE_REPLY {u32 seq, u32 cpu, u64 ts}. */
static void sync_reply(struct listener *l, struct guest *g, const uint8_t *p, size_t n)
{
	struct sync *s = &g->sync;
	uint32_t seq, cpu;
	uint64_t ts, rtt;

	if (n != 16) {
		sync_fail(l, g, "a probe answer of %zu bytes", n);
		return;
	}
	memcpy(&seq, p, 4);
	memcpy(&cpu, p + 4, 4);
	memcpy(&ts, p + 8, 8);
	if (!s->on || s->failed)
		return;
	if (seq > s->seq || !seq) {
		sync_fail(l, g, "an answer to probe %u, which was never sent", seq);
		return;
	}
	if (seq != s->seq || !s->waiting)
		return; /* late: its probe was given up */
	s->waiting = false;
	s->lost_run = 0;
	s->round_left--;
	if (cpu == UINT32_MAX) {
		snprintf(s->why, sizeof(s->why),
			 "none: the agent cannot read its clock %s from user space", g->clock);
		s->on = false;
		s->round_left = 0;
		return;
	}
	if (cpu >= g->nr_cpus) {
		sync_fail(l, g, "a probe answered from cpu %u of %u", cpu, g->nr_cpus);
		return;
	}
	rtt = g->t_read - s->t1;
	if (g->t_read < s->t1) {
		sync_fail(l, g, "the host clock went back during a probe");
		return;
	}
	if (rtt < s->best_rtt[cpu]) {
		s->best_rtt[cpu] = rtt;
		s->best_g[cpu] = ts;
		s->best_mid[cpu] = s->t1 + rtt / 2;
	}
	if (s->round_left > 0)
		sync_send(l, g);
	else
		sync_round_done(l, g);
}

/* --record-host: the guest started recording on its own; record the host's side for the
 * same span, in the guest's clock (so the two can be synchronised), and say go ('1'). */
static void start_host(struct listener *l, struct guest *g)
{
	struct hgt_record_opts ro = *l->o.record_host;

	char seq[16] = "";

	if (g->seq > 1)
		snprintf(seq, sizeof(seq), "-%d", g->seq);
	snprintf(g->host_path, sizeof(g->host_path), "%s/%s-host%s.dat",
		 l->o.output_dir ? l->o.output_dir : ".", g->name, seq);
	ro.sz = sizeof(ro);
	ro.output = g->host_path;
	ro.log = NULL;
	if (hgt__sync_clock_readable(g->clock))
		ro.clock = g->clock;
	else
		logf_(l,
		      "guest %s: WARNING: it records with clock %s, which user space cannot read: the pair cannot be synced and its events will not be placed in host time (NOT SYNCED); give the agent -C x86-tsc or -C mono",
		      g->name, g->clock);
	if (hgt_tsc_sample_read(&g->rate0))
		g->rate0.tsc = 0;
	g->host_rec = hgt_record_start(&ro);
	if (!g->host_rec) {
		logf_(l, "guest %s: cannot record the host: %s", g->name, hgt_last_error());
		g->host_path[0] = 0;
	} else {
		snprintf(g->host_clock_buf, sizeof(g->host_clock_buf), "%s",
			 hgt__record_clock(g->host_rec));
		g->host_clock = g->host_clock_buf;
		g->host_trace_id = hgt__record_trace_id(g->host_rec);
		logf_(l, "guest %s: recording the host into %s (clock %s)", g->name, g->host_path,
		      g->host_clock);
	}
	/* its VMM now, while it runs: a guest that ends may power off */
	{
		int pid = g->dir ? hgt_vmm_find(NULL, g->dir, g->name) : -ENOENT;

		if (pid > 0)
			hgt_vmm_vcpu_threads(NULL, pid, &g->vt);
		else if (pid == -ENOTUNIQ)
			logf_(l, "guest %s: %s: its vCPU threads are not mapped", g->name,
			      hgt_last_error());
	}
	send_cmd(g, "1\n"); /* the agent's command may run now */
}

/* A connection to a peer's agent (TCP or vsock), non-blocking once made; -errno. */
static int dial(const struct hgt_listen_peer *pr)
{
	int fd = -1, e = 0, one = 1;

	if (pr->transport == HGT_TRANSPORT_VSOCK) {
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = pr->cid,
					  .svm_port = pr->port };

		fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			e = errno;
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
		char port[16];

		snprintf(port, sizeof(port), "%u", pr->port);
		if (getaddrinfo(pr->host, port, &hints, &res))
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
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* A dialed guest's READY says its CPUs: one data connection each, naming CPU and session. */
static void dial_data(struct listener *l, struct guest *g, const uint8_t *p)
{
	uint32_t ncpu;

	memcpy(&ncpu, p, 4);
	if (!ncpu || ncpu > MAX_CPUS) {
		fault(l, g, "READY says %u CPUs", ncpu);
		return;
	}
	for (uint32_t cpu = 0; cpu < ncpu; cpu++) {
		int fd = dial(g->peer);
		uint8_t h[16];
		uint32_t magic = HGT__DATA_MAGIC;

		memcpy(h, &magic, 4);
		memcpy(h + 4, &cpu, 4);
		memcpy(h + 8, &g->session, 8);
		if (fd < 0 || hgt__write_full(fd, h, sizeof(h)) || add_chan(l, g, fd, (int)cpu)) {
			if (fd >= 0)
				close(fd);
			fault(l, g, "cannot open the data connection of cpu %u: %s", cpu,
			      strerror(fd < 0 ? -fd : errno));
			return;
		}
	}
}

/* A guest whose agent listens: dial its control connection, send its settings and start. */
static int open_peer(struct listener *l, const struct hgt_listen_peer *pr)
{
	struct guest *g = NULL;
	int fd;

	if (pr->transport != HGT_TRANSPORT_TCP && pr->transport != HGT_TRANSPORT_VSOCK)
		return hgt__errorf(EINVAL, "listen: guest %s: dial TCP or vsock", pr->name);
	fd = named_guest(l, pr->name, &g);
	if (fd)
		return fd;
	g->peer = pr;
	g->record = pr->record;
	fd = dial(pr);
	if (fd < 0) {
		if (pr->transport == HGT_TRANSPORT_VSOCK)
			fault(l, g, "cannot connect to vsock %u:%u: %s", pr->cid, pr->port,
			      strerror(-fd));
		else
			fault(l, g, "cannot connect to %s:%u: %s", pr->host, pr->port,
			      strerror(-fd));
		return 0; /* the others and the host go on */
	}
	g->ctl_r = g->ctl_w = fd;
	if (g->record && send_config(g))
		fault(l, g, "cannot send its settings: %s", strerror(errno));
	else
		send_cmd(g, "1\n");
	g->start_sent = true;
	return 0;
}

/* A guest of the session that has not said its tracing is on. */
static bool not_recording(const struct guest *g)
{
	return g && (g->fifo || g->peer) && !g->recording && !g->done;
}

/* on_started once every guest records (the command then misses none of its start), or at
 * the timeout, naming those that do not. */
static void maybe_started(struct listener *l, uint64_t t)
{
	unsigned int limit = l->o.start_timeout_ms ? l->o.start_timeout_ms : 15000;
	int i, late = 0;

	for (i = 0; i < l->nr_g; i++)
		late += not_recording(l->g[i]);
	if (late && t - l->t_begin < limit)
		return;
	for (i = 0; i < l->nr_g; i++)
		if (not_recording(l->g[i]))
			logf_(l,
			      "guest %s: WARNING: not recording %u ms after the start (%s): the command starts without it, and its file will miss the command's start",
			      l->g[i]->name, limit,
			      !l->g[i]->hello ? "no HELLO" : "its description is still arriving");
	l->started_called = true;
	l->o.on_started(l->o.ctx);
}

/* A whole control message arrived. */
static void handle_msg(struct listener *l, struct guest *g, uint16_t type)
{
	const uint8_t *p = g->msg;
	size_t n = g->msg_len;
	uint32_t v[4];

	trace_listen_message(g->name, type, n);
	switch (type) {
	case HGT__MSG_HELLO:
		if (n < 25 || g->hello) {
			fault(l, g, "HELLO of %zu bytes%s", n, g->hello ? " (a second one)" : "");
			return;
		}
		memcpy(v, p, 16);
		if (g->ready && memcmp(&g->session, p + 16, 8)) {
			fault(l, g, "HELLO names another session than READY");
			return;
		}
		memcpy(&g->session, p + 16, 8);
		if (v[0] < HGT__PROTO_MIN || v[0] > HGT__PROTO_VERSION) {
			fault(l, g,
			      "HELLO rejected: protocol version %u, this listener speaks %u to %u (run the same hgtrace version in the guest)",
			      v[0], HGT__PROTO_MIN, HGT__PROTO_VERSION);
			return;
		}
		g->proto = v[0];
		if (!v[1] || v[1] > MAX_CPUS || v[2] < 4096 || v[2] > 65536 ||
		    (v[2] & (v[2] - 1)) || (v[3] != 4 && v[3] != 8) || !memchr(p + 24, 0, n - 24) ||
		    strlen((const char *)p + 24) >= sizeof(g->clock) ||
		    !hgt__valid_name((const char *)p + 24)) {
			fault(l, g,
			      "HELLO rejected: version %u, %u CPUs, page size %u, long size %u",
			      v[0], v[1], v[2], v[3]);
			return;
		}
		for (int k = 0; k < g->nr_data; k++)
			if (g->data[k].cpu >= (int)v[1] || (g->page_size && g->page_size != v[2])) {
				fault(l, g,
				      "a data channel of cpu %d (page %u) does not fit HELLO's %u CPUs, page %u",
				      g->data[k].cpu, g->page_size, v[1], v[2]);
				return;
			}
		g->nr_cpus = v[1];
		g->page_size = v[2];
		trace_listen_guest(g->name, (int)v[1], (const char *)p + 24);
		g->long_size = v[3];
		snprintf(g->clock, sizeof(g->clock), "%s", (const char *)p + 24);
		g->hello = true;
		g->t_start = hgt__now_ms(); /* --stop-after counts from the guest's start */
		logf_(l, "guest %s: %u CPUs, clock %s", g->name, g->nr_cpus, g->clock);
		if (l->o.record_host && !g->record) {
			start_host(l, g);
		} else {
			g->host_clock = l->o.sync_clock;
			g->host_trace_id = l->o.host_trace_id;
		}
		if (sync_setup(l, g)) {
			fault(l, g, "out of memory");
			return;
		}
		/* the first round starts once the metadata is through (TRACEID comes last):
		 * the agent answers probes only then */
		g->sync.next_ms = UINT64_MAX;
		return;
	case HGT__MSG_META: {
		uint32_t id;

		if (n < 4)
			goto bad;
		memcpy(&id, p, 4);
		if (id < HGT_OPT_HEADER_INFO || id > HGT_OPT_CMDLINES)
			goto bad;
		/* the message's buffer becomes the item's: no second copy of a big one */
		free(g->meta[id - HGT_OPT_HEADER_INFO]);
		memmove(g->msg, g->msg + 4, n - 4);
		g->meta[id - HGT_OPT_HEADER_INFO] = g->msg;
		g->meta_len[id - HGT_OPT_HEADER_INFO] = n - 4;
		g->msg = NULL;
		g->msg_cap = 0;
		return;
	}
	case HGT__MSG_OPTION: {
		static const uint16_t allowed[] = { HGT_OPT_DATE,	HGT_OPT_CPUSTAT,
						    HGT_OPT_TRACECLOCK, HGT_OPT_UNAME,
						    HGT_OPT_OFFSET,	HGT_OPT_VERSION,
						    HGT_OPT_TRACEID,	HGT_OPT_TSC2NSEC };
		uint32_t id;
		int i, k = -1;
		struct opt *o;

		if (n < 4 || g->nr_opts > 4096)
			goto bad;
		memcpy(&id, p, 4);
		for (i = 0; i < (int)(sizeof(allowed) / sizeof(allowed[0])); i++)
			if (id == allowed[i])
				k = i;
		if (k < 0)
			goto bad;
		/* the last of each wins, except CPUSTAT: one per CPU, all kept */
		for (i = 0; id != HGT_OPT_CPUSTAT && i < g->nr_opts; i++)
			if (g->opts[i].id == id)
				break;
		if (id == HGT_OPT_CPUSTAT || i == g->nr_opts) {
			o = realloc(g->opts, sizeof(*o) * (size_t)(g->nr_opts + 1));
			if (!o) {
				fault(l, g, "out of memory");
				return;
			}
			g->opts = o;
			i = g->nr_opts++;
			g->opts[i].data = NULL;
		}
		free(g->opts[i].data);
		g->opts[i].id = (uint16_t)id;
		g->opts[i].size = (uint32_t)(n - 4);
		g->opts[i].data = malloc(n - 4 ? n - 4 : 1);
		if (!g->opts[i].data) {
			g->opts[i].size = 0;
			fault(l, g, "out of memory");
			return;
		}
		memcpy(g->opts[i].data, p + 4, n - 4);
		/* TRACEID ends the description: it reaches the disk before any page */
		if ((id == HGT_OPT_TRACEID || g->head_written) && !guest_head(l, g, 0))
			g->head_written = true;
		if (id == HGT_OPT_TRACEID && n - 4 == 8 && l->o.on_guest_id) {
			uint64_t tid;

			memcpy(&tid, p + 4, 8);
			l->o.on_guest_id(l->o.ctx, g->name, tid);
		}
		if (id == HGT_OPT_TRACEID && g->proto < 3)
			g->recording = true; /* a version 2 agent switches tracing on next */
		if (id == HGT_OPT_TRACEID && g->sync.on && g->sync.next_ms == UINT64_MAX) {
			g->sync.next_ms = hgt__now_ms() +
					  (l->o.sync_interval_ms ? l->o.sync_interval_ms : 1000);
			sync_round(l, g, SYNC_FIRST);
		}
		return;
	}
	case HGT__MSG_READY:
		if ((n != 8 && !(n == 16 && g->peer)) || g->ready) {
			fault(l, g, "READY of %zu bytes%s", n, g->ready ? " (a second one)" : "");
			return;
		}
		memcpy(&g->session, p, 8);
		g->ready = true;
		if (g->peer)
			dial_data(l, g, p + 8);
		return;
	case HGT__MSG_PROBE_REPLY:
		sync_reply(l, g, p, n);
		return;
	case HGT__MSG_HEARTBEAT:
		if (n)
			goto bad;
		return; /* its arrival updated t_last */
	case HGT__MSG_RECORDING:
		if (n != 8 || !g->hello || g->recording)
			goto bad;
		memcpy(&g->recording_ts, p, 8);
		g->recording = true;
		logf_(l, "guest %s: recording", g->name);
		return;
	case HGT__MSG_END:
		if (n >= 40 + 8 * (size_t)g->nr_cpus && g->nr_cpus && !g->end_bytes) {
			g->end_bytes = malloc(8 * (size_t)g->nr_cpus);
			if (g->end_bytes)
				memcpy(g->end_bytes, p + 40, 8 * (size_t)g->nr_cpus);
		}
		if (n >= 40) {
			memcpy(&g->agent_setup_cpu_ns, p + 8, 8);
			memcpy(&g->agent_cpu_ns, p + 24, 8);
			memcpy(&g->agent_wall_ns, p + 32, 8);
			if (g->agent_setup_cpu_ns >= g->agent_cpu_ns)
				g->agent_setup_cpu_ns -= g->agent_cpu_ns;
		}
		g->ended = true;
		logf_(l, "guest %s: stopped", g->name);
		return;
	default:
		break;
	}
bad:
	fault(l, g, "control message type %u of %zu bytes rejected", type, n);
}

/*
 * Control streams are held in memory (metadata, options) until the guest's file is
 * written: past the total budget, the guest holding the most is cut, whoever sent last.
 */
static void over_budget(struct listener *l)
{
	struct guest *big = NULL;
	uint64_t live = 0;

	if (l->mem <= l->o.max_total_bytes)
		return;
	/* a guest already cut (done) is freed at the loop's next turn: its memory does not
	 * count, or the next guest to send would be cut for it */
	for (int i = 0; i < l->nr_g; i++)
		if (l->g[i] && !l->g[i]->done) {
			live += l->g[i]->mem;
			if (!big || l->g[i]->mem > big->mem)
				big = l->g[i];
		}
	if (big && live > l->o.max_total_bytes)
		fault(l, big,
		      "the listener holds %llu MB of control data for all guests, over its %llu MB: this guest holds the most (%llu MB)",
		      (unsigned long long)(live >> 20),
		      (unsigned long long)(l->o.max_total_bytes >> 20),
		      (unsigned long long)(big->mem >> 20));
}

/* Parse @r bytes of the control stream. */
static void ctl_bytes(struct listener *l, struct guest *g, const uint8_t *buf, ssize_t r)
{
	size_t i = 0;

	g->mem += (uint64_t)r;
	l->mem += (uint64_t)r;
	over_budget(l);
	g->bytes += (uint64_t)r;
	g->t_last = hgt__now_ms();
	while (i < (size_t)r && !g->done) {
		if (g->mhdr_got < HGT__MSG_HDR) {
			size_t k = HGT__MSG_HDR - g->mhdr_got;

			if (k > (size_t)r - i)
				k = (size_t)r - i;
			memcpy(g->mhdr + g->mhdr_got, buf + i, k);
			g->mhdr_got += k;
			i += k;
			if (g->mhdr_got == HGT__MSG_HDR) {
				uint32_t magic, len;

				memcpy(&magic, g->mhdr, 4);
				memcpy(&len, g->mhdr + 8, 4);
				if (magic != HGT__CTL_MAGIC || len > HGT__MSG_MAX) {
					fault(l, g,
					      "control stream at byte %llu: bad message header (magic 0x%08x, %u bytes)",
					      (unsigned long long)(g->bytes - (uint64_t)r + i -
								   HGT__MSG_HDR),
					      magic, len);
					return;
				}
				g->msg_len = len;
				g->msg_got = 0;
			}
		} else {
			size_t k = g->msg_len - g->msg_got;

			if (k > (size_t)r - i)
				k = (size_t)r - i;
			/* grow with what arrives, never with what is claimed */
			if (g->msg_got + k > g->msg_cap) {
				size_t c = (g->msg_got + k) * 2;
				uint8_t *m;

				if (c > g->msg_len)
					c = g->msg_len;
				m = realloc(g->msg, c ? c : 1);
				if (!m) {
					fault(l, g, "out of memory");
					return;
				}
				g->msg = m;
				g->msg_cap = c;
			}
			memcpy(g->msg + g->msg_got, buf + i, k);
			g->msg_got += k;
			i += k;
		}
		if (g->mhdr_got == HGT__MSG_HDR && g->msg_got == g->msg_len) {
			uint16_t type;

			memcpy(&type, g->mhdr + 4, 2);
			handle_msg(l, g, type);
			g->mhdr_got = 0;
		}
	}
	if (g->bytes > l->o.max_bytes && !g->over_limit) {
		g->over_limit = true;
		fault(l, g, "more than %llu bytes: the guest's limit",
		      (unsigned long long)l->o.max_bytes);
	}
}

static void read_ctl(struct listener *l, struct guest *g)
{
	uint8_t buf[65536];
	ssize_t r = read(g->ctl_r, buf, sizeof(buf));

	if (g->host_clock)
		g->t_read = host_clock(g); /* a probe's answer arrived no later than this */
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		g->ctl_eof = true;
		if (!g->ended) {
			fault(l, g, "control channel closed before the end (%s)",
			      r < 0 ? strerror(errno) : "EOF");
			g->done = true;
		}
		/* after its END an agent may go: what its data channels still hold is
		 * read before the guest is finished */
		return;
	}
	ctl_bytes(l, g, buf, r);
}

/*
 * A serving agent over FIFOs whose last host was killed may still have pages of that
 * session in the FIFOs when we start (it drops them once it knows: a new CONFIG, or the
 * host silent): the header of this session is looked for, by its magic and the session
 * READY named, and what comes before it is dropped. Only for FIFOs we started a session
 * on: a network peer's first bytes must be a header.
 */
static bool resyncing(const struct guest *g, const struct chan *c)
{
	return g->fifo && g->record && c->hdr_got < HGT__DATA_HDR;
}

/* a candidate header but for its last byte waits for READY's session: not read further
 * (nor polled) until then */
static bool holding(const struct guest *g, const struct chan *c)
{
	return resyncing(g, c) && !g->ready && c->hdr_got == HGT__DATA_HDR - 1;
}

/* Drop the first byte of the candidate, then every byte that cannot start a header. */
static void slide(struct chan *c)
{
	uint32_t magic = HGT__DATA_MAGIC;

	do {
		c->stale++;
		memmove(c->hdr, c->hdr + 1, --c->hdr_got);
	} while (c->hdr_got && memcmp(c->hdr, &magic, c->hdr_got < 4 ? c->hdr_got : 4));
}

/* One byte more of a header looked for: kept, or dropped with what cannot be one. */
static void resync_byte(const struct guest *g, struct chan *c, uint8_t b)
{
	uint32_t magic = HGT__DATA_MAGIC;

	c->hdr[c->hdr_got++] = b;
	if (c->hdr_got <= 4 && memcmp(c->hdr, &magic, c->hdr_got))
		slide(c);
	else if (c->hdr_got == HGT__DATA_HDR && memcmp(c->hdr + 16, &g->session, 8))
		slide(c); /* an earlier session's header */
}

/* A data header's fields; 0, or -1 when the guest was faulted for it. */
static int check_header(struct listener *l, struct guest *g, struct chan *c)
{
	uint32_t h[4];

	memcpy(h, c->hdr, 16);
	if (h[0] != HGT__DATA_MAGIC || h[1] < HGT__PROTO_MIN || h[1] > HGT__PROTO_VERSION ||
	    h[2] >= MAX_CPUS || h[3] < 4096 || h[3] > 65536 || (h[3] & (h[3] - 1))) {
		fault(l, g,
		      "data channel header rejected (magic 0x%08x, protocol version %u, cpu %u, page %u)",
		      h[0], h[1], h[2], h[3]);
		return -1;
	}
	if (c->cpu >= 0 && (uint32_t)c->cpu != h[2]) {
		fault(l, g, "data channel of cpu %d says cpu %u", c->cpu, h[2]);
		return -1;
	}
	c->cpu = (int)h[2];
	if (g->page_size && g->page_size != h[3]) {
		fault(l, g, "cpu %u: page size %u, HELLO said %u", h[2], h[3], g->page_size);
		return -1;
	}
	g->page_size = h[3];
	if (c->stale)
		logf_(l,
		      "guest %s: %llu bytes of an earlier session dropped before cpu %u's header",
		      g->name, (unsigned long long)c->stale, h[2]);
	return 0;
}

static void read_data(struct listener *l, struct guest *g, struct chan *c)
{
	uint8_t buf[65536];
	size_t want = sizeof(buf);
	ssize_t r;
	size_t i = 0;

	if (holding(g, c))
		return;
	/* looking for the header, nothing after it is read: the last byte once READY came */
	if (resyncing(g, c))
		want = (g->ready ? HGT__DATA_HDR : HGT__DATA_HDR - 1) - c->hdr_got;
	r = read(c->fd, buf, want);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		c->eof = true;
		return;
	}
	g->t_last = hgt__now_ms();
	if (resyncing(g, c)) {
		for (i = 0; i < (size_t)r; i++)
			resync_byte(g, c, buf[i]);
		if (c->hdr_got == HGT__DATA_HDR)
			check_header(l, g, c);
		return;
	}
	g->bytes += (uint64_t)r;
	if (c->hdr_got < HGT__DATA_HDR) {
		size_t k = HGT__DATA_HDR - c->hdr_got;

		if (k > (size_t)r)
			k = (size_t)r;
		memcpy(c->hdr + c->hdr_got, buf, k);
		c->hdr_got += k;
		i = k;
		if (c->hdr_got < HGT__DATA_HDR || check_header(l, g, c))
			return;
	}
	if (g->bytes > l->o.max_bytes) {
		if (!g->over_limit)
			fault(l, g, "more than %llu bytes: the guest's limit",
			      (unsigned long long)l->o.max_bytes);
		g->over_limit = true;
		return;
	}
	if ((size_t)r > i) {
		if (c->tmp < 0 && chan_file(l, g, c))
			return;
		if (hgt__write_full(c->tmp, buf + i, (size_t)r - i)) {
			fault(l, g, "cannot store cpu %d's pages: %s", c->cpu, strerror(errno));
			return;
		}
		c->bytes += (uint64_t)r - i;
		trace_listen_data(g->name, c->cpu, (size_t)r - i);
	}
}

static void guest_path(struct listener *l, struct guest *g, char *path, size_t n)
{
	char seq[16] = "";

	if (g->seq > 1) /* a later session of a --record-host guest */
		snprintf(seq, sizeof(seq), "-%d", g->seq);
	if (l->o.output_base) {
		/* record -A: beside its -o, replaced as trace-cmd record replaces it */
		snprintf(path, n, "%s-%s%s.dat", l->o.output_base, g->name, seq);
		return;
	}
	/* a listener never replaces a file: a restarted one goes on at the next free name */
	snprintf(path, n, "%s/trace-%s%s.dat", l->o.output_dir ? l->o.output_dir : ".", g->name,
		 seq);
	for (int k = 2; (!access(path, F_OK) || taken(path)) && k < 100000; k++)
		snprintf(path, n, "%s/trace-%s%s.%d.dat", l->o.output_dir ? l->o.output_dir : ".",
			 g->name, seq, k);
}

/* A name whose recording directory exists (one being written, or a cut one). */
static bool taken(const char *path)
{
	char *d = hgt__recdir_path(path);
	bool yes = d && !access(d, F_OK);

	free(d);
	return yes;
}

/* The guest's recording directory, made with its first page bytes or its metadata. */
static int guest_recdir(struct listener *l, struct guest *g)
{
	int ret;

	if (g->rd.dir)
		return 0;
	guest_path(l, g, g->path, sizeof(g->path));
	ret = hgt__recdir_create(&g->rd, g->path, NULL);
	if (ret)
		fault(l, g, "cannot keep its pages: %s", hgt_last_error());
	return ret;
}

/* The channel's file in the guest's recording directory (cpuN, cpuN.K for a K-th). */
static int chan_file(struct listener *l, struct guest *g, struct chan *c)
{
	int k = 0;

	if (guest_recdir(l, g))
		return -1;
	for (struct chan *o = g->data; o < c; o++)
		k += o->cpu == c->cpu;
	c->tmp = hgt__recdir_file(&g->rd, c->cpu < 0 ? 0 : c->cpu, k);
	if (c->tmp < 0) {
		fault(l, g, "cannot store cpu %d's pages: %s", c->cpu, hgt_last_error());
		return -1;
	}
	return 0;
}

/* head.dat: what the guest described, once all of its metadata is there (again when an
 * option comes later, and at the end with the CPU count the channels gave). */
static int guest_head(struct listener *l, struct guest *g, int ncpu)
{
	struct hgt_output *out;
	int i, ret = 0;

	for (i = 0; i < 6; i++)
		if (!g->meta[i] || !g->hello)
			return 0;
	if (guest_recdir(l, g))
		return -EIO;
	out = hgt__recdir_head(&g->rd, g->page_size ? g->page_size : 4096,
			       g->long_size ? (int)g->long_size : 8);
	if (!out)
		return -errno;
	for (i = 0; !ret && i < 6; i++)
		ret = hgt_output_set_meta(out, (unsigned)i + 16, g->meta[i], g->meta_len[i]);
	for (i = 0; !ret && i < g->nr_opts; i++)
		ret = hgt_output_add_option(out, g->opts[i].id, g->opts[i].data, g->opts[i].size);
	if (!ret) {
		int b = hgt_output_add_buffer(out, "", g->clock,
					      ncpu > (int)g->nr_cpus ? ncpu : (int)g->nr_cpus);

		ret = b < 0 ? b : 0;
	}
	if (ret) {
		hgt_output_abort(out);
		return ret;
	}
	return hgt_output_close(out);
}

/* TIME_SHIFT from the kept samples, and a CPUSTAT line saying how they were made (shown by
 * report --stat in both tools; the sync check reads its bound). */
/* Where add_sync_options() puts its options: the file being written, or a list saved in
 * the recording directory. */
struct opt_sink {
	struct hgt_output *out;
	struct hgt_option_blob list[4];
	void *owned[4];
	int n;
};

static int sink_add(struct opt_sink *k, uint16_t id, const void *p, uint32_t n)
{
	void *c;

	if (k->out)
		return hgt_output_add_option(k->out, id, p, n);
	if (k->n == 4 || !(c = malloc(n ? n : 1)))
		return -ENOMEM;
	memcpy(c, p, n);
	k->owned[k->n] = c;
	k->list[k->n++] = (struct hgt_option_blob){ id, n, c };
	return 0;
}

static int add_sync_options(struct listener *l, struct guest *g, struct opt_sink *out);

/* After a sync round: the samples so far into the guest's recording directory, so that a
 * restore after a kill stores them as the end would have. */
static void save_sync(struct listener *l, struct guest *g)
{
	struct opt_sink k = { 0 };

	if (!g->rd.dir || !g->sync.on || g->sync.failed)
		return;
	if (!add_sync_options(l, g, &k) && hgt__recdir_put_options(&g->rd, k.list, k.n))
		logf_(l, "guest %s: its sync samples cannot be saved in %s: %s", g->name, g->rd.dir,
		      hgt_last_error());
	for (int i = 0; i < k.n; i++)
		free(k.owned[i]);
}

static int add_sync_options(struct listener *l, struct guest *g, struct opt_sink *out)
{
	struct sync *s = &g->sync;
	struct hgt_time_shift_cpu *tc;
	struct hgt_time_shift ts;
	int64_t *ones, *zeros;
	uint32_t most = 0, src = 0, total = 0;
	char line[512];
	uint8_t *buf = NULL;
	uint32_t len;
	int ret;

	if (!s->on && !s->why[0])
		return 0; /* no sync was asked for */
	for (uint32_t c = 0; s->on && c < g->nr_cpus; c++) {
		total += s->count[c];
		if (s->count[c] > most) {
			most = s->count[c];
			src = c;
		}
	}
	if (!s->on || s->failed || !most) {
		if (!s->why[0])
			snprintf(s->why, sizeof(s->why), "none: no probe was answered (%llu lost)",
				 (unsigned long long)s->lost);
		snprintf(line, sizeof(line), "hgtrace sync: %s%s\\n",
			 s->failed ? "FAILED, not applied: " : "", s->why);
		return sink_add(out, HGT_OPT_CPUSTAT, line, (uint32_t)strlen(line) + 1);
	}
	snprintf(s->why, sizeof(s->why), "agent channel");
	tc = calloc(g->nr_cpus, sizeof(*tc));
	ones = malloc(sizeof(int64_t) * most);
	zeros = calloc(most, sizeof(int64_t));
	if (!tc || !ones || !zeros) {
		free(tc);
		free(ones);
		free(zeros);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < most; k++)
		ones[k] = 1;
	for (uint32_t c = 0; c < g->nr_cpus; c++) {
		/* a CPU no probe reached takes the samples of the best-sampled one */
		uint32_t from = s->count[c] ? c : src;

		tc[c] = (struct hgt_time_shift_cpu){ s->count[from], s->time[from], s->offset[from],
						     ones, zeros };
	}
	ts = (struct hgt_time_shift){ g->host_trace_id, HGT_TSYNC_INTERPOLATE, (int)g->nr_cpus,
				      tc };
	ret = hgt_time_shift_option_build(&ts, &buf, &len);
	if (!ret)
		ret = sink_add(out, HGT_OPT_TIME_SHIFT, buf, len);
	free(buf);
	free(tc);
	free(ones);
	free(zeros);
	snprintf(
		line, sizeof(line),
		"hgtrace sync: agent channel, clock %s: %u samples in %u rounds, best round trip %llu, bound=%llu\\n",
		g->clock, total, s->rounds, (unsigned long long)s->best,
		(unsigned long long)s->bound);
	if (!ret)
		ret = sink_add(out, HGT_OPT_CPUSTAT, line, (uint32_t)strlen(line) + 1);
	if (!ret && g->agent_wall_ns) {
		snprintf(line, sizeof(line),
			 "hgtrace agent: %.1f ms of CPU in %.3f s of recording\\n",
			 (double)g->agent_cpu_ns / 1e6, (double)g->agent_wall_ns / 1e9);
		ret = sink_add(out, HGT_OPT_CPUSTAT, line, (uint32_t)strlen(line) + 1);
	}
	return ret;
}

static void report_result(struct listener *l, struct guest *g, const char *path)
{
	struct hgt_listen_result r = { .name = g->name, .path = path };
	uint64_t *cb;
	int i;

	if (!l->o.on_guest_done)
		return;
	cb = calloc(g->nr_cpus ? g->nr_cpus : 1, 8);
	for (i = 0; cb && i < g->nr_data; i++)
		if (g->data[i].cpu >= 0 && (uint32_t)g->data[i].cpu < g->nr_cpus)
			cb[g->data[i].cpu] += g->data[i].bytes;
	for (i = 0; i < g->nr_opts; i++)
		if (g->opts[i].id == HGT_OPT_TRACEID && g->opts[i].size == 8)
			memcpy(&r.trace_id, g->opts[i].data, 8);
	r.fault = g->fault[0] ? g->fault : NULL;
	r.nr_cpus = cb ? (int)g->nr_cpus : 0;
	r.clock = g->clock;
	r.bytes = g->bytes;
	r.cpu_bytes = cb;
	r.sync = g->sync.why[0] ? g->sync.why : "none";
	r.sync_failed = g->sync.failed;
	for (uint32_t c = 0; g->sync.count && c < g->nr_cpus; c++)
		r.samples += g->sync.count[c];
	r.rounds = g->sync.rounds;
	r.best_rtt = g->sync.best == UINT64_MAX ? 0 : g->sync.best;
	r.bound = g->sync.bound;
	r.agent_cpu_ns = g->agent_cpu_ns;
	r.agent_wall_ns = g->agent_wall_ns;
	r.agent_setup_cpu_ns = g->agent_setup_cpu_ns;
	r.recording_ts = g->recording_ts;
	r.ended_after_stop = g->ended && !g->fault[0] && g->stop_sent;
	l->o.on_guest_done(l->o.ctx, &r);
	free(cb);
}

/* --record-host: the guest's vCPU threads into the host file's GUEST option. */
static void map_host(struct listener *l, struct guest *g)
{
	uint64_t id = 0;
	int ret;

	for (int i = 0; i < g->nr_opts; i++)
		if (g->opts[i].id == HGT_OPT_TRACEID && g->opts[i].size == 8)
			memcpy(&id, g->opts[i].data, 8);
	if (!g->vt.nr || !id) {
		logf_(l,
		      "guest %s: WARNING: its vCPU threads are unknown (no VMM process with threads 'CPU N/...' found when it started): merged by its sync samples alone",
		      g->name);
		return;
	}
	ret = hgt__guest_map_append(g->host_path, g->name, id, &g->vt);
	if (ret)
		logf_(l, "guest %s: %s: cannot add its vCPU map: %s", g->name, g->host_path,
		      hgt_last_error());
	else
		logf_(l, "guest %s: %s maps its %d vCPU threads (process %d)", g->name,
		      g->host_path, g->vt.nr, g->vt.pid);
}

/* --record-host, x86-tsc: TSC2NSEC into both files (the kernel's, else the rate measured
 * against CLOCK_MONOTONIC_RAW over the host's recording), so that they print in ns. */
static void pair_tsc2nsec(struct listener *l, struct guest *g)
{
	struct hgt_tsc_sample t1;
	uint32_t v[4] = { 0 };
	struct hgt_option_blob ob = { HGT_OPT_TSC2NSEC, 16, v };
	double ppm = 0;
	int ret;

	if (strcmp(g->host_clock_buf, "x86-tsc"))
		return;
	if (hgt_tsc2nsec_read(&v[0], &v[1]) || !v[0]) {
		if (!g->rate0.tsc || hgt_tsc_sample_read(&t1) ||
		    hgt_tsc2nsec_measure(&g->rate0, &t1, &v[0], &v[1], &ppm)) {
			logf_(l, "guest %s: times stay in TSC cycles: %s", g->name,
			      hgt_last_error());
			return;
		}
	}
	ret = hgt_tracedat_append_options(g->host_path, &ob, 1);
	if (!ret)
		ret = hgt_tracedat_append_options(g->path, &ob, 1);
	if (ret)
		logf_(l, "guest %s: TSC2NSEC not stored: %s", g->name, hgt_last_error());
	else
		logf_(l, "guest %s: times in ns: TSC2NSEC mult %u shift %u in both files%s",
		      g->name, v[0], v[1],
		      ppm > 0 ? " (measured against CLOCK_MONOTONIC_RAW)" : "");
}

/* --record-host: the channel's samples refined by the vCPU threads' windows in the host's
 * file (hgt_sync_refine()). */
static void refine_pair(struct listener *l, struct guest *g)
{
	struct hgt_refine_result r;
	int ret = hgt_sync_refine(g->host_path, g->path, NULL, &r);
	char line[400];

	if (ret && g->sync.on)
		logf_(l, "guest %s: sync not refined: %s", g->name, hgt_last_error());
	if (ret) {
		hgt_refine_result_free(&r);
		return;
	}
	hgt_refine_summary(&r, line, sizeof(line));
	logf_(l, "guest %s: sync %s", g->name, line);
	for (int c = 0; c < r.nr_cpus; c++)
		if (r.cpus[c].status == HGT_REFINE_DISAGREE) {
			hgt_refine_disagreement(&r, c, line, sizeof(line));
			logf_(l, "guest %s: WARNING: %s", g->name, line);
		}
	hgt_refine_result_free(&r);
}

/* --record-host: the sync check of the pair just written, as report will print it: a pair
 * nothing synced is said to be so here, not only in a CPUSTAT line. */
static void check_pair(struct listener *l, struct guest *g)
{
	HGT_OPTS(hgt_open_opts, op, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	struct hgt_input *in[2] = { NULL, NULL };
	struct hgt_sync_check *sc = NULL;
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f;

	refine_pair(l, g);
	pair_tsc2nsec(l, g);
	in[0] = hgt_input_open(g->host_path, &op);
	in[1] = hgt_input_open(g->path, &op);
	sc = in[0] && in[1] ? hgt_sync_check_inputs(in, 2) : NULL;

	if (!sc) {
		logf_(l, "guest %s: no sync check of %s + %s: %s", g->name, g->host_path, g->path,
		      in[0] && in[1] ? hgt_last_error() : "cannot open them");
		goto out;
	}
	f = open_memstream(&text, &len);
	if (f) {
		hgt_sync_check_print(sc, f);
		fclose(f);
	}
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		logf_(l, "guest %s: %s", g->name, !strncmp(line, "hgtrace: ", 9) ? line + 9 : line);
	if (hgt_sync_check_verdict(sc, 1) != HGT_SYNC_CONSISTENT)
		logf_(l, "guest %s: WARNING: %s + %s: %s", g->name, g->host_path, g->path,
		      hgt_sync_verdict_name(hgt_sync_check_verdict(sc, 1)));
out:
	free(text);
	hgt_sync_check_free(sc);
	hgt_input_close(in[0]);
	hgt_input_close(in[1]);
}

/* Options only the end knows: where each CPU's data stopped when the stream did not end
 * cleanly, and the sync. */
struct end_ctx {
	struct listener *l;
	struct guest *g;
};

static int end_options(void *ctx, struct hgt_output *out)
{
	struct end_ctx *e = ctx;
	struct guest *g = e->g;
	char note[512];
	int i, ret = 0;

	for (i = 0; !ret && i < g->nr_data; i++) {
		struct chan *c = &g->data[i];
		uint64_t part = g->page_size ? c->bytes % g->page_size : 0;

		if (!g->fault[0] && !part)
			continue;
		snprintf(
			note, sizeof(note),
			"hgtrace listen: cpu %d: %llu bytes of pages received%s%s; %llu bytes of a partial page dropped\n",
			c->cpu, (unsigned long long)(c->bytes - part),
			g->fault[0] ? "; stream ended: " : "", g->fault, (unsigned long long)part);
		ret = hgt_output_add_option(out, HGT_OPT_CPUSTAT, note, (uint32_t)strlen(note) + 1);
	}
	{
		struct opt_sink k = { .out = out };

		return ret ? ret : add_sync_options(e->l, g, &k);
	}
}

/* Write trace-NAME.dat from what the guest sent: head.dat and the CPU files of its
 * recording directory (what hgtrace restore would do after a kill), then remove it. */
/* The slow part of writing a guest's file (its pages read back, compressed, written), run
 * in a thread of its own: the listener goes on reading the other guests meanwhile. @g is
 * left alone by the loop until fin_state is FIN_DONE. */
static void *finish_thread(void *arg)
{
	struct end_ctx *e = arg;
	struct guest *g = e->g;
	HGT_OPTS(hgt_convert_opts, co, .version = 7, .compression = HGT_COMPRESS_ZSTD);

	g->fin_ret = hgt__recdir_finish(g->rd.dir, g->path, &co, end_options, e, false, NULL);
	if (g->fin_ret)
		snprintf(g->fin_err, sizeof(g->fin_err), "%s", hgt_last_error());
	free(e);
	__atomic_store_n(&g->fin_state, FIN_DONE, __ATOMIC_RELEASE);
	return NULL;
}

/* What follows the file's writing: said, mapped, reported. Returns its result. */
static int finish_end(struct listener *l, struct guest *g)
{
	int ret = g->fin_ret;

	trace_listen_done(g->name, g->bytes, ret);
	if (ret) {
		if (hgt__recdir_present(&g->rd))
			logf_(l,
			      "guest %s: cannot write %s: %s; what arrived is kept in %s ('hgtrace restore %s' writes it)",
			      g->name, g->path, g->fin_err, g->rd.dir, g->path);
		else
			logf_(l,
			      "guest %s: cannot write %s: %s; its recording directory %s was removed: nothing of it is kept",
			      g->name, g->path, g->fin_err, g->rd.dir);
		hgt__recdir_done(&g->rd, false);
		report_result(l, g, NULL);
		return ret;
	}
	hgt__recdir_done(&g->rd, false); /* removed by hgt__recdir_finish() */
	logf_(l, "guest %s: wrote %s%s", g->name, g->path,
	      g->fault[0] ? " (stream ended early: see report --stat)" : "");
	if (g->host_path[0]) {
		map_host(l, g);
		check_pair(l, g);
	}
	report_result(l, g, g->path);
	return 0;
}

/*
 * Start writing a finished guest's file. Returns 1 when a thread writes it (finish_end()
 * once fin_state is FIN_DONE), else the result, the file written (or not) here. @wait:
 * write it here (the listener is ending).
 */
static int finish_guest(struct listener *l, struct guest *g, bool wait)
{
	struct end_ctx *e;
	int i, ret = 0, ncpu = 0;

	if (g->host_rec) {
		struct hgt_record_result hr;

		if (hgt_record_stop(g->host_rec, &hr)) {
			logf_(l, "guest %s: the host's recording failed: %s", g->name,
			      hgt_last_error());
			g->host_path[0] = 0;
		} else {
			logf_(l, "guest %s: wrote %s (the host's side)", g->name, g->host_path);
		}
		hgt_record_free(g->host_rec);
		g->host_rec = NULL;
	}
	for (i = 0; i < 6; i++)
		if (!g->meta[i] || !g->hello) {
			logf_(l, "guest %s: no file: the stream ended before the guest sent its %s",
			      g->name, g->hello ? hgt_option_name((unsigned)i + 16) : "HELLO");
			hgt__recdir_done(&g->rd, true); /* pages without formats: unreadable */
			report_result(l, g, NULL);
			return -EPROTO;
		}
	for (i = 0; i < g->nr_data; i++)
		if (g->data[i].cpu + 1 > ncpu)
			ncpu = g->data[i].cpu + 1;
	ret = guest_head(l, g, ncpu);
	e = ret ? NULL : malloc(sizeof(*e));
	if (!ret && !e)
		ret = -ENOMEM;
	if (ret) {
		g->fin_ret = ret;
		snprintf(g->fin_err, sizeof(g->fin_err), "%s", hgt_last_error());
		return finish_end(l, g);
	}
	*e = (struct end_ctx){ l, g };
	g->fin_state = FIN_RUNNING;
	if (!wait && !hgt__thread_create(&g->fin_thread, finish_thread, e))
		return 1;
	finish_thread(e);
	g->fin_state = FIN_NONE;
	return finish_end(l, g);
}

static void free_guest(struct listener *l, struct guest *g)
{
	l->mem -= g->mem;
	int i;

	hgt_record_free(g->host_rec); /* never finished: stopped without writing */
	hgt_vcpu_threads_free(&g->vt);
	free(g->end_bytes);
	if (g->ctl_w >= 0 && g->ctl_w != g->ctl_r)
		close(g->ctl_w);
	if (g->ctl_r >= 0)
		close(g->ctl_r);
	for (i = 0; i < g->nr_data; i++) {
		if (g->data[i].fd >= 0)
			close(g->data[i].fd);
		if (g->data[i].tmp >= 0)
			close(g->data[i].tmp);
	}
	for (uint32_t c = 0; g->sync.count && c < g->nr_cpus; c++) {
		free(g->sync.time[c]);
		free(g->sync.offset[c]);
	}
	free(g->sync.time);
	free(g->sync.offset);
	free(g->sync.count);
	free(g->sync.best_rtt);
	free(g->sync.best_g);
	free(g->sync.best_mid);
	if (g->rd.dir && g->bytes && hgt__recdir_present(&g->rd))
		logf_(l, "guest %s: what arrived is kept in %s ('hgtrace restore %s' writes it)",
		      g->name, g->rd.dir, g->path);
	else if (g->rd.dir && g->bytes)
		logf_(l, "guest %s: its recording directory %s was removed: nothing of it is kept",
		      g->name, g->rd.dir);
	hgt__recdir_done(&g->rd, !g->bytes);
	for (i = 0; i < 6; i++)
		free(g->meta[i]);
	for (i = 0; i < g->nr_opts; i++)
		free(g->opts[i].data);
	free(g->opts);
	free(g->data);
	free(g->msg);
	free(g);
}

static int listen_socket(struct listener *l, int family, unsigned int port)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;

	if (fd < 0)
		return hgt__errorf(errno, "listen: socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_VSOCK) {
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = VMADDR_CID_ANY,
					  .svm_port = port };

		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			goto fail;
	} else {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)port) };

		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		if (l->o.bind_addr && inet_pton(AF_INET, l->o.bind_addr, &sa.sin_addr) != 1) {
			close(fd);
			return hgt__errorf(EINVAL, "listen: --bind '%s': not an IPv4 address",
					   l->o.bind_addr);
		}
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			goto fail;
	}
	if (listen(fd, 64))
		goto fail;
	return fd;
fail : {
	int e = errno;

	close(fd);
	return hgt__errorf(e, "listen: %s port %s%s%u: %s", family == AF_VSOCK ? "vsock" : "tcp",
			   family != AF_VSOCK && l->o.bind_addr ? l->o.bind_addr : "",
			   family != AF_VSOCK && l->o.bind_addr ? ":" : "", port, strerror(e));
}
}

/* A new connection's first bytes say what it is: a control stream (its guest starts now)
 * or a data channel (joined to the guest whose HELLO names its session). Returns true when
 * the connection was handed over or closed. */
/* Close a refused connection once its peer has read the refusal: closing with its bytes
 * unread would send a reset, which can overtake the refusal. */
static void linger_refused(struct listener *l, int fd)
{
	shutdown(fd, SHUT_WR);
	if (l->nr_refused == MAX_PENDING) { /* the oldest goes now */
		close(l->refused[0].fd);
		memmove(l->refused, l->refused + 1, sizeof(l->refused[0]) * (MAX_PENDING - 1));
		l->nr_refused--;
	}
	l->refused[l->nr_refused++] = (struct pending){ .fd = fd, .t = hgt__now_ms() };
}

/* Read and drop what refused peers send; close each at its end or when it lingered long. */
static void refused_tick(struct listener *l, uint64_t t)
{
	for (int i = 0; i < l->nr_refused;) {
		uint8_t junk[4096];
		ssize_t r;

		while ((r = read(l->refused[i].fd, junk, sizeof(junk))) > 0)
			;
		if ((r < 0 && errno == EAGAIN) && t - l->refused[i].t < REFUSED_LINGER_MS) {
			i++;
			continue;
		}
		close(l->refused[i].fd);
		l->refused[i] = l->refused[--l->nr_refused];
	}
}

/* accept() failed: out of file descriptors (or memory) is said once and the listening
 * sockets rest a second, instead of a loop that polls them readable and fails again. */
static void accept_failed(struct listener *l, int e)
{
	if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM)
		return;
	l->accept_paused = hgt__now_ms() + 1000;
	if (!l->accept_failing)
		logf_(l, "cannot accept a connection: %s (%d guests): new guests wait", strerror(e),
		      l->nr_g);
	l->accept_failing = true;
}

static bool classify(struct listener *l, struct pending *p)
{
	uint32_t magic, h[4];
	uint64_t session;
	int i;

	memcpy(&magic, p->hdr, 4);
	if (magic == HGT__CTL_MAGIC) {
		char name[32];
		struct guest *g;

		snprintf(name, sizeof(name), "net-%d", ++l->tcp_count);
		g = new_guest(l, name);
		if (!g) {
			/* the agent is told why, so it can say so and fail */
			static const char why[] = "too many guests connected to this listener";
			uint8_t m[HGT__MSG_HDR + sizeof(why)];
			uint32_t mh[3] = { HGT__CTL_MAGIC, HGT__MSG_REFUSED, sizeof(why) };

			memcpy(m, mh, HGT__MSG_HDR);
			memcpy(m + HGT__MSG_HDR, why, sizeof(why));
			if (write(p->fd, m, sizeof(m)) < 0)
				(void)0; /* it is being closed anyway */
			logf_(l, "too many guests: connection closed");
			linger_refused(l, p->fd);
			return true;
		}
		g->ctl_r = g->ctl_w = p->fd;
		ctl_bytes(l, g, p->hdr, 4);
		if (l->o.start) {
			send_cmd(g, "1\n");
			g->start_sent = true;
			g->t_start = hgt__now_ms();
		}
		logf_(l, "guest %s connected", g->name);
		return true;
	}
	if (magic != HGT__DATA_MAGIC) {
		logf_(l, "a connection sent no hgtrace header (0x%08x): closed", magic);
		close(p->fd);
		return true;
	}
	if (p->got < HGT__DATA_HDR)
		return false;
	memcpy(h, p->hdr, 16);
	memcpy(&session, p->hdr + 16, 8);
	for (i = 0; i < l->nr_g; i++) {
		struct guest *g = l->g[i];
		struct chan *c;

		if (!g || g->fifo || !g->ready || g->session != session || g->done)
			continue;
		if (h[1] < HGT__PROTO_MIN || h[1] > HGT__PROTO_VERSION || h[2] >= MAX_CPUS ||
		    (g->nr_cpus && h[2] >= g->nr_cpus) || h[3] < 4096 || h[3] > 65536 ||
		    (h[3] & (h[3] - 1)) || (g->page_size && h[3] != g->page_size)) {
			fault(l, g,
			      "data channel header rejected (protocol version %u, cpu %u, page %u)",
			      h[1], h[2], h[3]);
			close(p->fd);
			return true;
		}
		for (int k = 0; k < g->nr_data; k++)
			if (g->data[k].cpu == (int)h[2]) {
				fault(l, g, "a second data channel for cpu %u", h[2]);
				close(p->fd);
				return true;
			}
		if (add_chan(l, g, p->fd, (int)h[2])) {
			close(p->fd);
			return true;
		}
		c = &g->data[g->nr_data - 1];
		memcpy(c->hdr, p->hdr, HGT__DATA_HDR);
		c->hdr_got = HGT__DATA_HDR;
		g->page_size = h[3];
		return true;
	}
	return false; /* its HELLO has not arrived yet */
}

/* Probes given up, and the periodic rounds. */
static void sync_tick(struct listener *l, struct guest *g, uint64_t t)
{
	struct sync *s = &g->sync;

	if (!s->on || s->failed || !g->hello || g->ended || g->done)
		return;
	if (s->waiting && t - s->t1_ms > SYNC_TIMEOUT_MS) {
		s->waiting = false;
		s->lost++;
		s->round_left--;
		if (++s->lost_run >= 3) {
			sync_fail(l, g, "%d probes in a row were not answered within %d ms",
				  s->lost_run, SYNC_TIMEOUT_MS);
			return;
		}
		if (s->round_left > 0)
			sync_send(l, g);
		else
			sync_round_done(l, g);
	}
	if (!s->round_left && !g->stop_sent && !s->final_started && t >= s->next_ms) {
		s->next_ms = t + (l->o.sync_interval_ms ? l->o.sync_interval_ms : 1000);
		sync_round(l, g, SYNC_PERIODIC);
	}
}

int hgt_listen_run(const struct hgt_listen_opts *opts)
{
	struct listener l = { .tcp_fd = -1, .vsock_fd = -1 };
	int i, ret = 0;

	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(l.o))
		return -EINVAL;
	memcpy(&l.o, opts, opts->sz);
	if (!l.o.max_bytes)
		l.o.max_bytes = 1ULL << 30;
	if (!l.o.max_total_bytes)
		l.o.max_total_bytes = 4 * l.o.max_bytes;
	if (!l.o.idle_ms)
		l.o.idle_ms = 500;
	if (!l.o.silent_ms)
		l.o.silent_ms = 30000;
	l.t_begin = hgt__now_ms();
	/* guests' files are finished in threads, while the host records in others: the format
	 * guard's helper is forked now, while this thread is the only one */
	hgt__formats_helper_start();
	{
		/* an output directory that cannot take the files is said at once, not after
		 * the guests' data arrived */
		const char *d = l.o.output_dir ? l.o.output_dir : ".";
		char buf[4096];
		struct stat st;

		if (l.o.output_base) { /* BASE-NAME.dat: BASE's directory */
			char *slash;

			snprintf(buf, sizeof(buf), "%s", l.o.output_base);
			slash = strrchr(buf, '/');
			if (slash)
				*slash = 0;
			d = slash ? (buf[0] ? buf : "/") : ".";
		}
		int err = stat(d, &st)		   ? errno
			  : !S_ISDIR(st.st_mode)   ? ENOTDIR
			  : access(d, W_OK | X_OK) ? errno
						   : 0;

		if (err)
			return hgt__errorf(err, "listen: output directory %s: %s", d,
					   err == ENOTDIR ? "not a directory" : strerror(err));
	}
	for (i = 0; i < l.o.nr_guests; i++) {
		struct guest *g = NULL;

		ret = open_fifo_guest(&l, &l.o.guests[i],
				      l.o.guest_record ? l.o.guest_record[i] : NULL, i, 1, &g);
		if (ret)
			goto out;
		if (l.o.start) {
			send_cmd(g, "1\n");
			g->start_sent = true;
		}
	}
	for (i = 0; i < l.o.nr_peers; i++) {
		ret = open_peer(&l, &l.o.peers[i]);
		if (ret)
			goto out;
	}
	if (l.o.tcp_port && (l.tcp_fd = listen_socket(&l, AF_INET, l.o.tcp_port)) < 0) {
		ret = l.tcp_fd;
		goto out;
	}
	if (l.o.vsock_port && (l.vsock_fd = listen_socket(&l, AF_VSOCK, l.o.vsock_port)) < 0) {
		ret = l.vsock_fd;
		goto out;
	}
	for (;;) {
		struct pollfd pf[1 + 1 + MAX_PENDING + MAX_GUESTS * (MAX_CPUS + 1) / 16];
		struct {
			int kind, g, c;
		} who[sizeof(pf) / sizeof(pf[0])];
		int n = 0, active = 0;
		bool readable[MAX_GUESTS] = { false };
		uint64_t t = hgt__now_ms();
		bool stopping = l.o.stop && *l.o.stop;

		if (stopping && !l.stop_seen) {
			l.stop_seen = true;
			if (l.o.on_stopping)
				l.o.on_stopping(l.o.ctx);
		}
		/* finish guests that are done */
		for (i = 0; i < l.nr_g; i++) {
			struct guest *g = l.g[i];

			if (!g)
				continue;
			bool want_stop = false;

			/* a server's guest waiting for its next session: nothing came, nothing
			 * to write, no failure */
			if (stopping && g->seq > 1 && !g->ready && !g->hello && !g->bytes) {
				free_guest(&l, g);
				l.g[i] = NULL;
				continue;
			}

			if (stopping && !g->done) {
				if (l.o.graceful && g->hello && !g->ended) {
					want_stop = true;
				} else if (!l.o.graceful || !g->ended) {
					if (!g->ended)
						fault(&l, g, "the listener was stopped");
					g->done = true;
				}
			}
			/* a connection that said "control" and then nothing holds a slot: it has
			 * HELLO_TIMEOUT_MS to say who it is (FIFO guests wait for their agent) */
			if (!g->fifo && !g->peer && !g->hello && !g->done &&
			    t - g->t_start >= HELLO_TIMEOUT_MS)
				fault(&l, g, "no HELLO within %d s of connecting: closed",
				      HELLO_TIMEOUT_MS / 1000);
			/* heartbeats alone do not hold a slot: a network guest told to start
			 * that never records is closed (a real agent records in seconds) */
			if (!g->fifo && !g->peer && g->hello && g->start_sent && !g->recording &&
			    !g->done && !g->ended && t - g->t_start >= l.o.silent_ms)
				fault(&l, g, "not recording %u s after the start: closed",
				      l.o.silent_ms / 1000);
			/* a network guest's agent says something at least every
			 * HGT__HEARTBEAT_MS: one silent far longer is gone (or hostile) and
			 * holds a slot; what it sent is written */
			if (!g->fifo && g->hello && !g->done && g->quiet_since &&
			    t - g->quiet_since >= l.o.silent_ms)
				fault(&l, g, "silent for %u s (no data, no heartbeat): closed",
				      l.o.silent_ms / 1000);
			if (g->hello && !g->stop_sent && l.o.stop_after_ms &&
			    t - g->t_start >= l.o.stop_after_ms)
				want_stop = true;
			sync_tick(&l, g, t);
			/* a serving agent ends a session whose host says nothing for its
			 * silence limit (30 s): with no probes to send, a newline keeps it */
			if (g->hello && !g->ended && !g->done && t - g->t_sent >= HGT__HEARTBEAT_MS)
				send_cmd(g, "\n");

			if (want_stop && !g->stop_sent && !g->done) {
				struct sync *sy = &g->sync;

				/* a last round of probes before the stop, so the samples
				 * bracket the whole recording */
				if (sy->on && !sy->failed && !sy->final_done) {
					if (!sy->final_started && !sy->round_left) {
						sy->final_started = true;
						sy->final_ms = t;
						sync_round(&l, g, SYNC_FIRST);
					} else if (sy->final_started &&
						   (!sy->round_left || t - sy->final_ms > 3000)) {
						sy->final_done = true;
					}
				}
				if (!sy->on || sy->failed || sy->final_done) {
					send_cmd(g, "0\n");
					g->stop_sent = true;
					g->t_stop_sent = t;
				}
			}
			if (l.o.graceful && g->stop_sent && !g->ended && !g->done &&
			    t - g->t_stop_sent > END_TIMEOUT_MS)
				fault(&l, g, "no end within %d s of the stop",
				      END_TIMEOUT_MS / 1000);
			if (g->ended && !g->done) {
				bool all_eof = true, all_bytes = !!g->end_bytes;

				for (int k = 0; k < g->nr_data; k++)
					all_eof &= g->data[k].eof;
				for (uint32_t cpu = 0; all_bytes && cpu < g->nr_cpus; cpu++) {
					uint64_t got = 0;

					for (int k = 0; k < g->nr_data; k++)
						if (g->data[k].cpu == (int)cpu)
							got += g->data[k].bytes;
					all_bytes = got >= g->end_bytes[cpu];
				}
				/* every byte the agent sent is here (or, from an agent that does
				 * not say, the channels closed or went quiet: quiet as polls see
				 * it, not as the clock does, since the loop may just have spent
				 * seconds writing another guest's file) */
				if (all_eof || all_bytes ||
				    (g->quiet_since && t - g->quiet_since >= l.o.idle_ms))
					g->done = true;
			}
			if (g->done) {
				int src = g->src, seq = g->seq, r;
				bool again = l.o.record_host && g->fifo && g->hello && !stopping;

				if (g->fin_state == FIN_NONE) {
					r = finish_guest(&l, g, false);
					if (r == 1) {
						active++; /* being written */
						continue;
					}
				} else if (__atomic_load_n(&g->fin_state, __ATOMIC_ACQUIRE) !=
					   FIN_DONE) {
					active++;
					continue;
				} else {
					hgt__thread_join(g->fin_thread);
					g->fin_state = FIN_NONE;
					r = finish_end(&l, g);
				}
				if (r)
					l.failures++;
				/* a server: the guest may start another session. Its FIFOs are
				 * opened again before these close, so they never go without a
				 * reader: an agent that already wrote to them would get EPIPE */
				if (again) {
					struct guest *ng = NULL;

					if (!open_fifo_guest(&l, &l.o.guests[src], NULL, src,
							     seq + 1, &ng))
						active++;
				}
				free_guest(&l, g);
				l.g[i] = NULL;
				continue;
			}
			active++;
		}
		if (l.o.on_started && !l.started_called)
			maybe_started(&l, t);
		/* a session (graceful) lasts until its stop, whatever became of its guests */
		if ((stopping && (!l.o.graceful || !active)) ||
		    (!active && l.tcp_fd < 0 && l.vsock_fd < 0 && (l.o.nr_guests || l.o.nr_peers) &&
		     !l.o.graceful && !l.o.record_host))
			break;
		if (!active && l.tcp_fd < 0 && l.vsock_fd < 0 && !l.o.graceful && !l.o.record_host)
			break;
		/* with every pending slot taken, new connections wait in the backlog: polling
		 * the listening socket then would only spin */
		refused_tick(&l, hgt__now_ms());
		if (l.accept_paused && hgt__now_ms() >= l.accept_paused)
			l.accept_paused = 0;
		if (l.tcp_fd >= 0 && l.nr_pend < MAX_PENDING && !l.accept_paused) {
			pf[n] = (struct pollfd){ .fd = l.tcp_fd, .events = POLLIN };
			who[n++].kind = 0;
		}
		if (l.vsock_fd >= 0 && l.nr_pend < MAX_PENDING && !l.accept_paused) {
			pf[n] = (struct pollfd){ .fd = l.vsock_fd, .events = POLLIN };
			who[n++].kind = 0;
		}
		for (i = 0; i < l.nr_pend; i++) {
			pf[n] = (struct pollfd){ .fd = l.pend[i].fd, .events = POLLIN };
			who[n].kind = 1;
			who[n++].g = i;
		}
		for (i = 0; i < l.nr_g && n < (int)(sizeof(pf) / sizeof(pf[0])) - 1; i++) {
			struct guest *g = l.g[i];

			if (!g || g->done) /* a done guest's file may be being written */
				continue;
			if (!g->ctl_eof) {
				pf[n] = (struct pollfd){ .fd = g->ctl_r, .events = POLLIN };
				who[n].kind = 2;
				who[n++].g = i;
			}
			for (int k = 0; k < g->nr_data && n < (int)(sizeof(pf) / sizeof(pf[0]));
			     k++) {
				if (g->data[k].eof || holding(g, &g->data[k]))
					continue;
				pf[n] = (struct pollfd){ .fd = g->data[k].fd, .events = POLLIN };
				who[n].kind = 3;
				who[n].g = i;
				who[n++].c = k;
			}
		}
		if (poll(pf, (nfds_t)n, 100) < 0 && errno != EINTR) {
			ret = hgt__errorf(errno, "listen: poll: %s", strerror(errno));
			break;
		}
		for (i = 0; i < n; i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (who[i].kind == 0 && l.nr_pend < MAX_PENDING) {
				int fd =
					accept4(pf[i].fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

				if (fd >= 0) {
					if (l.accept_failing)
						logf_(&l, "accepting connections again");
					l.accept_failing = false;
					l.pend[l.nr_pend++] =
						(struct pending){ .fd = fd, .t = hgt__now_ms() };
				} else {
					accept_failed(&l, errno);
				}
			} else if (who[i].kind == 1) {
				struct pending *p = &l.pend[who[i].g];
				/* the magic first; the rest of a data header after it */
				size_t want = p->got < 4 ? 4 : HGT__DATA_HDR;
				ssize_t r = read(p->fd, p->hdr + p->got, want - p->got);

				if (r < 0 && (errno == EAGAIN || errno == EINTR))
					continue;
				if (r <= 0) {
					close(p->fd);
					p->fd = -1;
					continue;
				}
				p->got += (size_t)r;
				if (p->got >= 4 && classify(&l, p))
					p->fd = -1;
			} else if (who[i].kind == 2 && l.g[who[i].g]) {
				readable[who[i].g] = true;
				read_ctl(&l, l.g[who[i].g]);
			} else if (who[i].kind == 3 && l.g[who[i].g]) {
				readable[who[i].g] = true;
				read_data(&l, l.g[who[i].g], &l.g[who[i].g]->data[who[i].c]);
			}
		}
		/* a guest none of whose channels this poll found readable is quiet from now
		 * (or still) */
		for (i = 0; i < l.nr_g; i++)
			if (l.g[i] && readable[i])
				l.g[i]->quiet_since = 0;
			else if (l.g[i] && !l.g[i]->quiet_since)
				l.g[i]->quiet_since = hgt__now_ms();
		/* data channels waiting for their HELLO; give up on silent ones */
		for (i = 0; i < l.nr_pend; i++) {
			struct pending *p = &l.pend[i];

			if (p->fd >= 0 && p->got == HGT__DATA_HDR && classify(&l, p))
				p->fd = -1;
			if (p->fd >= 0 && hgt__now_ms() - p->t > 10000) {
				logf_(&l, "a connection waited 10 s for its guest: closed");
				close(p->fd);
				p->fd = -1;
			}
			if (p->fd < 0)
				l.pend[i--] = l.pend[--l.nr_pend];
		}
	}
out:
	for (i = 0; i < l.nr_g; i++)
		if (l.g[i]) {
			struct guest *g = l.g[i];

			if (g->fin_state != FIN_NONE) { /* its file is being written: wait */
				hgt__thread_join(g->fin_thread);
				g->fin_state = FIN_NONE;
				if (finish_end(&l, g))
					l.failures++;
			} else if (!ret && finish_guest(&l, g, true)) {
				l.failures++;
			}
			free_guest(&l, g);
		}
	for (i = 0; i < l.nr_pend; i++)
		if (l.pend[i].fd >= 0)
			close(l.pend[i].fd);
	for (i = 0; i < l.nr_refused; i++)
		close(l.refused[i].fd);
	if (l.tcp_fd >= 0)
		close(l.tcp_fd);
	if (l.vsock_fd >= 0)
		close(l.vsock_fd);
	if (!ret && l.failures)
		ret = hgt__errorf(EPROTO, "listen: %d guest file%s could not be written",
				  l.failures, l.failures == 1 ? "" : "s");
	return ret;
}

/* virtio-trace's port names: -1 is the control port, N the data port of CPU N. */
static void port_name(char *buf, size_t n, int i)
{
	if (i < 0)
		snprintf(buf, n, "agent-ctl-path");
	else
		snprintf(buf, n, "trace-path-cpu%d", i);
}

/**
 * hgt_setup_guest - FIFO pairs for guest @name and the QEMU/libvirt configuration.
 */
int hgt_setup_guest(const char *dir, const char *name, int cpus, FILE *out)
{
	char path[4096], d[4096];
	int i, k;

	if (!hgt__valid_name(name) || cpus < 1 || cpus > MAX_CPUS)
		return hgt__errorf(EINVAL,
				   "setup-guest: name [A-Za-z0-9_.-] (not . or ..), 1 to %d CPUs",
				   MAX_CPUS);
	snprintf(d, sizeof(d), "%s/%s", dir, name);
	if (mkdir(d, 0700) && errno != EEXIST)
		return hgt__errorf(errno, "setup-guest: %s: %s", d, strerror(errno));
	for (i = -1; i < cpus; i++) {
		const char *sfx[2] = { ".in", ".out" };

		char port[64];

		port_name(port, sizeof(port), i);
		for (k = 0; k < 2; k++) {
			snprintf(path, sizeof(path), "%s/%s%s", d, port, sfx[k]);
			if (mkfifo(path, 0600) && errno != EEXIST)
				return hgt__errorf(errno, "setup-guest: %s: %s", path,
						   strerror(errno));
		}
	}
	/* debug-threads names the vCPU threads "CPU N/KVM" (or /TCG): how record -A finds
	 * them, and what the sync check needs */
	fprintf(out,
		"# QEMU arguments\n-name %s,debug-threads=on \\\n"
		"-device virtio-serial-pci,id=hgtrace0 \\\n",
		name);
	for (i = -1; i < cpus; i++) {
		char port[64];

		port_name(port, sizeof(port), i);
		fprintf(out,
			"-chardev pipe,id=hgt-%s,path=%s/%s \\\n"
			"-device virtserialport,bus=hgtrace0.0,nr=%d,chardev=hgt-%s,name=%s \\\n",
			port, d, port, i + 2, port, port);
	}
	fprintf(out, "\n<!-- libvirt: inside <devices> -->\n");
	for (i = -1; i < cpus; i++) {
		char port[64];

		port_name(port, sizeof(port), i);
		fprintf(out,
			"<channel type='pipe'>\n  <source path='%s/%s'/>\n  <target type='virtio' name='%s'/>\n</channel>\n",
			d, port, port);
	}
	return 0;
}

/**
 * hgt__listen_fuzz - the listener's control-stream parser on any bytes: a fresh guest is
 * fed @data (cut in two where its first byte says, as reads cut a stream), then its stream
 * ends as a closed connection does and the guest is written out, to BASE-fz.dat, if what
 * came describes a file; what it says goes to @log (NULL: nowhere). For the fuzz target;
 * no socket, no agent is answered.
 */
int hgt__listen_fuzz(const uint8_t *data, size_t size, const char *base, FILE *log)
{
	struct listener *l = calloc(1, sizeof(*l));
	struct guest *g;
	size_t cut;

	if (!l)
		return -ENOMEM;
	l->o.output_base = base;
	l->o.log = log;
	l->o.max_bytes = 32u << 20;
	l->o.max_total_bytes = 64u << 20;
	l->tcp_fd = l->vsock_fd = -1;
	g = new_guest(l, "fz");
	if (!g) {
		free(l);
		return -ENOMEM;
	}
	if (size) {
		cut = data[0] % size;
		ctl_bytes(l, g, data + 1, (ssize_t)cut);
		if (!g->done)
			ctl_bytes(l, g, data + 1 + cut, (ssize_t)(size - 1 - cut));
	}
	if (!g->ended)
		fault(l, g, "control channel closed before the end (EOF)");
	g->done = true;
	finish_guest(l, g, true);
	free_guest(l, g);
	free(l);
	return 0;
}
