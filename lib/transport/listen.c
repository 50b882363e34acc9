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

#include <hgtrace/infer.h>

#include "trace-transport.h"
#include "../common/common-local.h"
#include "../common/thread.h"
#include "../private/tracedat.h"
#include "../private/vmm.h"
#include "listen-local.h"

struct guest;
static bool taken(const char *path);
static int guest_recdir(struct listener *l, struct guest *g);
static int chan_file(struct listener *l, struct guest *g, struct chan *c);
static int guest_head(struct listener *l, struct guest *g, int ncpu);
void hgt__listen_log(struct listener *l, const char *fmt, ...)
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
void hgt__listen_fault(struct listener *l, struct guest *g, const char *fmt, ...)
{
	va_list ap;

	if (!g->fault[0]) {
		va_start(ap, fmt);
		vsnprintf(g->fault, sizeof(g->fault), fmt, ap);
		va_end(ap);
		trace_listen_fault(g->name, g->fault);
		hgt__listen_log(l, "guest %s: %s", g->name, g->fault);
	}
	g->done = true;
}

struct guest *hgt__listen_new_guest(struct listener *l, const char *name)
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
int hgt__listen_named_guest(struct listener *l, const char *name, struct guest **g)
{
	if (!hgt__valid_name(name))
		return hgt__errorf(EINVAL, "listen: guest name '%s': use [A-Za-z0-9_.-]", name);
	*g = hgt__listen_new_guest(l, name);
	return *g ? 0 : -ENOMEM;
}

int hgt__listen_add_chan(struct listener *l, struct guest *g, int fd, int cpu)
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

/*
 * A TCP data channel's wake-ups batched (@on) or not. Over loopback a sender's segments are
 * received in its own system call, and each one woke the listener's poll: a wake-up (an
 * interrupt to the other CPU, in a VM an exit) per 64 KB. With SO_RCVLOWAT the kernel
 * wakes the poll once BATCH_BYTES wait (or at the end of the stream, or when the receive
 * buffer fills): a TCP drain of 200 MB of pages took 0.19-0.23 s instead of 0.31-0.74 s
 * on this project's 2-CPU VMs. Less than BATCH_BYTES is read by the loop's poke
 * (poke_batched()) within BATCH_POKE_MS, and from an ended guest at once (off again).
 * Other sockets (vsock, AF_UNIX) and FIFOs are left as they are.
 */
void hgt__listen_batch(struct chan *c, bool on)
{
	int proto = 0, lowat = on ? BATCH_BYTES : 1;
	socklen_t len = sizeof(proto);

	if (on == c->batched)
		return;
	if (on &&
	    (getsockopt(c->fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) || proto != IPPROTO_TCP))
		return;
	if (!setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)) || !on)
		c->batched = on;
}

static int open_fifo_guest(struct listener *l, const struct hgt_listen_guest *lg,
			   const struct hgt_record_opts *record, int src, int seq,
			   struct guest **out)
{
	struct guest *g = NULL;
	char path[4096];
	int i, fd;

	i = hgt__listen_named_guest(l, lg->name, &g);
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
		/* a 1 MB pipe: the agent (or QEMU) hands over 16 times more between two of
		 * our reads than in the default 64 KB; refused (an unprivileged user over
		 * pipe-max-size), the pipe stays as it is */
		fcntl(fd, F_SETPIPE_SZ, RBUF_SIZE);
		if (hgt__listen_add_chan(l, g, fd, -1)) {
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
			hgt__listen_log(l,
					"guest %s: %llu stale bytes of an earlier session dropped",
					g->name, (unsigned long long)stale);
		g->record = record;
		if (hgt__listen_send_config(g))
			return hgt__errorf(errno ? errno : EIO,
					   "listen: %s: cannot send the guest its settings",
					   lg->dir);
	}
	return 0;
}

void hgt__listen_send_cmd(struct guest *g, const char *c)
{
	trace_listen_command(g->name, c);
	g->t_sent = hgt__now_ms();
	if (g->ctl_w >= 0 && write(g->ctl_w, c, strlen(c)) < 0) {
		/* the agent reads commands when it is ready; nothing to do */
	}
}

/* A framed message to the agent (CONFIG, PROBE). */
int hgt__listen_send_framed(struct guest *g, uint16_t type, const void *p, size_t n)
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
int hgt__listen_send_config(struct guest *g)
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
	ret = hgt__listen_send_framed(g, HGT__MSG_CONFIG, p, k);
	free(p);
	return ret;
}

/* The round is over: each CPU's best probe becomes a sample. */

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
		hgt__listen_log(
			l,
			"guest %s: WARNING: it records with clock %s, which user space cannot read: the pair cannot be synced and its events will not be placed in host time (NOT SYNCED); give the agent -C x86-tsc or -C mono",
			g->name, g->clock);
	if (hgt_tsc_sample_read(&g->rate0))
		g->rate0.tsc = 0;
	g->host_rec = hgt_record_start(&ro);
	if (!g->host_rec) {
		hgt__listen_log(l, "guest %s: cannot record the host: %s", g->name,
				hgt_last_error());
		g->host_path[0] = 0;
	} else {
		snprintf(g->host_clock_buf, sizeof(g->host_clock_buf), "%s",
			 hgt__record_clock(g->host_rec));
		g->host_clock = g->host_clock_buf;
		g->host_trace_id = hgt__record_trace_id(g->host_rec);
		hgt__listen_log(l, "guest %s: recording the host into %s (clock %s)", g->name,
				g->host_path, g->host_clock);
	}
	/* its VMM now, while it runs: a guest that ends may power off */
	{
		int pid = g->dir ? hgt_vmm_find(NULL, g->dir, g->name) : -ENOENT;

		if (pid > 0)
			hgt_vmm_vcpu_threads(NULL, pid, &g->vt);
		else if (pid == -ENOTUNIQ)
			hgt__listen_log(l, "guest %s: %s: its vCPU threads are not mapped", g->name,
					hgt_last_error());
	}
	/* the guest's file named now, so that a flight recorder can follow both */
	if (g->host_rec && l->o.on_host_started && !guest_recdir(l, g))
		l->o.on_host_started(l->o.ctx, g->name, g->host_path, g->path);
	hgt__listen_send_cmd(g, "1\n"); /* the agent's command may run now */
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
			hgt__listen_log(
				l,
				"guest %s: WARNING: not recording %u ms after the start (%s): the command starts without it, and its file will miss the command's start",
				l->g[i]->name, limit,
				!l->g[i]->hello ? "no HELLO" : "its description is still arriving");
	l->started_called = true;
	l->o.on_started(l->o.ctx);
}

/* HELLO's checks: the protocol, then the shape (CPUs, page, long size, clock name) and
 * the data channels already open. Returns false when it said what was rejected. */
static bool hello_ok(struct listener *l, struct guest *g, const uint8_t *p, size_t n,
		     const uint32_t *v)
{
	if (v[0] < HGT__PROTO_MIN || v[0] > HGT__PROTO_VERSION) {
		hgt__listen_fault(
			l, g,
			"HELLO rejected: protocol version %u, this listener speaks %u to %u (run the same hgtrace version in the guest)",
			v[0], HGT__PROTO_MIN, HGT__PROTO_VERSION);
		return false;
	}
	if (!v[1] || v[1] > MAX_CPUS || v[2] < 4096 || v[2] > 65536 || (v[2] & (v[2] - 1)) ||
	    (v[3] != 4 && v[3] != 8) || !memchr(p + 24, 0, n - 24) ||
	    strlen((const char *)p + 24) >= sizeof(g->clock) ||
	    !hgt__valid_name((const char *)p + 24)) {
		hgt__listen_fault(l, g,
				  "HELLO rejected: version %u, %u CPUs, page size %u, long size %u",
				  v[0], v[1], v[2], v[3]);
		return false;
	}
	for (int k = 0; k < g->nr_data; k++)
		if (g->data[k].cpu >= (int)v[1] || (g->page_size && g->page_size != v[2])) {
			hgt__listen_fault(
				l, g,
				"a data channel of cpu %d (page %u) does not fit HELLO's %u CPUs, page %u",
				g->data[k].cpu, g->page_size, v[1], v[2]);
			return false;
		}
	return true;
}

/* HELLO: the guest's protocol, CPUs, page size, long size and clock. */
static void msg_hello(struct listener *l, struct guest *g, const uint8_t *p, size_t n)
{
	uint32_t v[4];

	if (n < 25 || g->hello) {
		hgt__listen_fault(l, g, "HELLO of %zu bytes%s", n,
				  g->hello ? " (a second one)" : "");
		return;
	}
	memcpy(v, p, 16);
	if (g->ready && memcmp(&g->session, p + 16, 8)) {
		hgt__listen_fault(l, g, "HELLO names another session than READY");
		return;
	}
	memcpy(&g->session, p + 16, 8);
	if (!hello_ok(l, g, p, n, v))
		return;
	g->proto = v[0];
	g->nr_cpus = v[1];
	g->page_size = v[2];
	trace_listen_guest(g->name, (int)v[1], (const char *)p + 24);
	g->long_size = v[3];
	snprintf(g->clock, sizeof(g->clock), "%s", (const char *)p + 24);
	g->hello = true;
	g->t_start = hgt__now_ms(); /* --stop-after counts from the guest's start */
	hgt__listen_log(l, "guest %s: %u CPUs, clock %s", g->name, g->nr_cpus, g->clock);
	if (l->o.record_host && !g->record) {
		start_host(l, g);
	} else {
		g->host_clock = l->o.sync_clock;
		g->host_trace_id = l->o.host_trace_id;
	}
	if (hgt__listen_sync_setup(l, g)) {
		hgt__listen_fault(l, g, "out of memory");
		return;
	}
	/* the first round starts once the metadata is through (TRACEID comes last):
	 * the agent answers probes only then */
	g->sync.next_ms = UINT64_MAX;
}

/* META: one metadata item. Returns false when malformed. */
static bool msg_meta(struct guest *g, const uint8_t *p, size_t n)
{
	uint32_t id;

	if (n < 4)
		return false;
	memcpy(&id, p, 4);
	if (id < HGT_OPT_HEADER_INFO || id > HGT_OPT_CMDLINES)
		return false;
	/* the message's buffer becomes the item's: no second copy of a big one */
	free(g->meta[id - HGT_OPT_HEADER_INFO]);
	free(g->zmeta[id - HGT_OPT_HEADER_INFO]);
	g->zmeta[id - HGT_OPT_HEADER_INFO] = NULL;
	memmove(g->msg, g->msg + 4, n - 4);
	g->meta[id - HGT_OPT_HEADER_INFO] = g->msg;
	g->meta_len[id - HGT_OPT_HEADER_INFO] = n - 4;
	g->msg = NULL;
	g->msg_cap = 0;
	return true;
}

/* Keep option @id's @n bytes: the last of each wins, except CPUSTAT (one per CPU, all
 * kept). Returns 0 or -ENOMEM. */
static int keep_option(struct guest *g, uint32_t id, const uint8_t *data, size_t n)
{
	int i;

	for (i = 0; id != HGT_OPT_CPUSTAT && i < g->nr_opts; i++)
		if (g->opts[i].id == id)
			break;
	if (id == HGT_OPT_CPUSTAT || i == g->nr_opts) {
		struct opt *o = realloc(g->opts, sizeof(*o) * (size_t)(g->nr_opts + 1));

		if (!o)
			return -ENOMEM;
		g->opts = o;
		i = g->nr_opts++;
		g->opts[i].data = NULL;
	}
	free(g->opts[i].data);
	g->opts[i].id = (uint16_t)id;
	g->opts[i].size = (uint32_t)n;
	g->opts[i].data = malloc(n ? n : 1);
	if (!g->opts[i].data) {
		g->opts[i].size = 0;
		return -ENOMEM;
	}
	memcpy(g->opts[i].data, data, n);
	return 0;
}

/* --record-host: the guest's vCPU map (its trace id @id, 8 bytes) saved in the host's
 * recording directory, as its end appends it (map_host()): a restore after a kill, and a
 * flight recorder's windows, map its vCPU threads. */
static void save_host_map(struct listener *l, struct guest *g, const uint8_t *id)
{
	struct hgt_option_blob ob = { HGT_OPT_GUEST, 0, NULL };
	uint8_t *buf = NULL;
	uint64_t tid;

	memcpy(&tid, id, 8);
	if (!g->vt.nr ||
	    hgt_guest_option_build(g->name, tid, g->vt.nr, g->vt.vcpu, g->vt.tid, &buf, &ob.size))
		return;
	ob.data = buf;
	if (hgt__record_put_options(g->host_rec, &ob, 1))
		hgt__listen_log(l, "guest %s: its vCPU map cannot be saved for a restore: %s",
				g->name, hgt_last_error());
	free(buf);
}

/* TRACEID, the last option of the description, arrived: the head is written, the host
 * told, the first sync round started. */
static void traceid_arrived(struct listener *l, struct guest *g, const uint8_t *data, size_t n)
{
	if (n == 8 && g->host_rec)
		save_host_map(l, g, data);
	if (n == 8 && l->o.on_guest_id) {
		uint64_t tid;

		memcpy(&tid, data, 8);
		l->o.on_guest_id(l->o.ctx, g->name, tid);
	}
	if (g->proto < 3)
		g->recording = true; /* a version 2 agent switches tracing on next */
	if (g->sync.on && g->sync.next_ms == UINT64_MAX) {
		g->sync.next_ms =
			hgt__now_ms() + (l->o.sync_interval_ms ? l->o.sync_interval_ms : 1000);
		hgt__listen_sync_round(l, g, SYNC_FIRST);
	}
}

/* OPTION: one of the options a guest may send. Returns false when malformed. */
static bool msg_option(struct listener *l, struct guest *g, const uint8_t *p, size_t n)
{
	static const uint16_t allowed[] = { HGT_OPT_DATE,    HGT_OPT_CPUSTAT, HGT_OPT_TRACECLOCK,
					    HGT_OPT_UNAME,   HGT_OPT_OFFSET,  HGT_OPT_VERSION,
					    HGT_OPT_TRACEID, HGT_OPT_TSC2NSEC };
	uint32_t id;
	int k = -1;

	if (n < 4 || g->nr_opts > 4096)
		return false;
	memcpy(&id, p, 4);
	for (int i = 0; i < (int)(sizeof(allowed) / sizeof(allowed[0])); i++)
		if (id == allowed[i])
			k = i;
	if (k < 0)
		return false;
	if (keep_option(g, id, p + 4, n - 4)) {
		hgt__listen_fault(l, g, "out of memory");
		return true;
	}
	/* TRACEID ends the description: it reaches the disk before any page */
	if ((id == HGT_OPT_TRACEID || g->head_written) && !guest_head(l, g, 0))
		g->head_written = true;
	if (id == HGT_OPT_TRACEID)
		traceid_arrived(l, g, p + 4, n - 4);
	return true;
}

/* END: the agent stopped; its per-CPU byte counts and CPU times. */
static void msg_end(struct listener *l, struct guest *g, const uint8_t *p, size_t n)
{
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
	if (g->end_bytes && g->agent_wall_ns) {
		uint64_t pages = 0;

		for (uint32_t i = 0; i < g->nr_cpus; i++)
			pages += g->end_bytes[i];
		/* the agent's cost in the guest, per MB it traced (issue 24's measure) */
		hgt__listen_log(
			l,
			"guest %s: stopped; its agent: %.1f ms of CPU in %.3f s of recording, %.3f ms of CPU per MB traced (%.3f MB of pages)",
			g->name, (double)g->agent_cpu_ns / 1e6, (double)g->agent_wall_ns / 1e9,
			pages ? (double)g->agent_cpu_ns / 1e6 / ((double)pages / 1e6) : 0.0,
			(double)pages / 1e6);
		return;
	}
	hgt__listen_log(l, "guest %s: stopped", g->name);
}

/* The messages with a small body. Returns false when malformed. */
static bool msg_small(struct listener *l, struct guest *g, uint16_t type, const uint8_t *p,
		      size_t n)
{
	switch (type) {
	case HGT__MSG_READY:
		if ((n != 8 && !(n == 16 && g->peer)) || g->ready) {
			hgt__listen_fault(l, g, "READY of %zu bytes%s", n,
					  g->ready ? " (a second one)" : "");
			return true;
		}
		memcpy(&g->session, p, 8);
		g->ready = true;
		if (g->peer)
			hgt__listen_dial_data(l, g, p + 8);
		return true;
	case HGT__MSG_HEARTBEAT:
		return !n; /* its arrival updated t_last */
	case HGT__MSG_RECORDING:
		if (n != 8 || !g->hello || g->recording)
			return false;
		memcpy(&g->recording_ts, p, 8);
		g->recording = true;
		hgt__listen_log(l, "guest %s: recording", g->name);
		return true;
	}
	return false;
}

/* A whole control message arrived. */
static void handle_msg(struct listener *l, struct guest *g, uint16_t type)
{
	const uint8_t *p = g->msg;
	size_t n = g->msg_len;
	bool ok = true;

	trace_listen_message(g->name, type, n);
	switch (type) {
	case HGT__MSG_HELLO:
		msg_hello(l, g, p, n);
		break;
	case HGT__MSG_META:
		ok = msg_meta(g, p, n);
		break;
	case HGT__MSG_OPTION:
		ok = msg_option(l, g, p, n);
		break;
	case HGT__MSG_PROBE_REPLY:
		hgt__listen_sync_reply(l, g, p, n);
		break;
	case HGT__MSG_END:
		msg_end(l, g, p, n);
		break;
	default:
		ok = msg_small(l, g, type, p, n);
		break;
	}
	if (!ok)
		hgt__listen_fault(l, g, "control message type %u of %zu bytes rejected", type, n);
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
		hgt__listen_fault(
			l, big,
			"the listener holds %llu MB of control data for all guests, over its %llu MB: this guest holds the most (%llu MB)",
			(unsigned long long)(live >> 20),
			(unsigned long long)(l->o.max_total_bytes >> 20),
			(unsigned long long)(big->mem >> 20));
}

/*
 * A serving agent over FIFOs whose last host was killed may still be writing that
 * session's control stream when we start (until it sees our CONFIG): before this session's
 * READY, what is not a READY is an earlier session's, dropped, and a header that is no
 * header is looked for again a byte further.
 */
static bool ctl_resyncing(const struct guest *g)
{
	return g->fifo && g->record && !g->ready;
}

/* Drop header candidate @h's first byte (of *@got), then every byte that cannot start a
 * header of @magic. Returns how many went. */

/*
 * More than @max bytes held for @g: what it sent, less the page bytes that no longer take
 * room on disk (a flight recorder punches the old pages out of its files; the window it
 * keeps is what counts). The files are looked at again only when what was sent since could
 * have reached the limit.
 */
static bool over_held(struct guest *g, uint64_t max)
{
	uint64_t freed = 0, held;

	if (g->bytes < g->held_check)
		return false;
	for (int i = 0; i < g->nr_data; i++) {
		struct stat st;
		uint64_t room;

		if (g->data[i].tmp < 0 || fstat(g->data[i].tmp, &st))
			continue;
		room = (uint64_t)st.st_blocks * 512;
		if (g->data[i].bytes > room)
			freed += g->data[i].bytes - room;
	}
	held = g->bytes - freed;
	if (held > max)
		return true;
	g->held_check = g->bytes + (max - held);
	return false;
}

static uint64_t slide_to_magic(uint8_t *h, size_t *got, uint32_t magic)
{
	uint64_t n = 0;

	do {
		n++;
		memmove(h, h + 1, --*got);
	} while (*got && memcmp(h, &magic, *got < 4 ? *got : 4));
	return n;
}

/* Parse @r bytes of the control stream. */
void hgt__listen_ctl_bytes(struct listener *l, struct guest *g, const uint8_t *buf, ssize_t r)
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
				uint16_t type;

				memcpy(&magic, g->mhdr, 4);
				memcpy(&type, g->mhdr + 4, 2);
				memcpy(&len, g->mhdr + 8, 4);
				if ((magic != HGT__CTL_MAGIC || len > HGT__MSG_MAX) &&
				    ctl_resyncing(g)) {
					g->ctl_stale += slide_to_magic(g->mhdr, &g->mhdr_got,
								       HGT__CTL_MAGIC);
					continue;
				}
				if (magic != HGT__CTL_MAGIC || len > HGT__MSG_MAX) {
					hgt__listen_fault(
						l, g,
						"control stream at byte %llu: bad message header (magic 0x%08x, %u bytes)",
						(unsigned long long)(g->bytes - (uint64_t)r + i -
								     HGT__MSG_HDR),
						magic, len);
					return;
				}
				g->msg_len = len;
				g->msg_got = 0;
				g->ctl_skip = ctl_resyncing(g) && type != HGT__MSG_READY;
			}
		} else if (g->ctl_skip) {
			size_t k = g->msg_len - g->msg_got;

			if (k > (size_t)r - i)
				k = (size_t)r - i;
			g->msg_got += k;
			i += k;
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
					hgt__listen_fault(l, g, "out of memory");
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
			if (g->ctl_skip) {
				g->ctl_stale += HGT__MSG_HDR + g->msg_len;
				g->ctl_skip = false;
			} else {
				handle_msg(l, g, type);
				if (type == HGT__MSG_READY && g->ctl_stale)
					hgt__listen_log(
						l,
						"guest %s: %llu control bytes of an earlier session dropped before its READY",
						g->name, (unsigned long long)g->ctl_stale);
			}
			g->mhdr_got = 0;
		}
	}
	if (g->bytes > l->o.max_bytes && !g->over_limit && over_held(g, l->o.max_bytes)) {
		g->over_limit = true;
		hgt__listen_fault(l, g, "more than %llu bytes: the guest's limit",
				  (unsigned long long)l->o.max_bytes);
	}
}

static void read_ctl(struct listener *l, struct guest *g)
{
	uint8_t buf[65536];
	ssize_t r = read(g->ctl_r, buf, sizeof(buf));

	if (g->host_clock)
		g->t_read =
			hgt__listen_host_clock(g); /* a probe's answer arrived no later than this */
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		g->ctl_eof = true;
		if (!g->ended) {
			hgt__listen_fault(l, g, "control channel closed before the end (%s)",
					  r < 0 ? strerror(errno) : "EOF");
			g->done = true;
		}
		/* after its END an agent may go: what its data channels still hold is
		 * read before the guest is finished */
		return;
	}
	hgt__listen_ctl_bytes(l, g, buf, r);
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
	c->stale += slide_to_magic(c->hdr, &c->hdr_got, HGT__DATA_MAGIC);
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
		hgt__listen_fault(
			l, g,
			"data channel header rejected (magic 0x%08x, protocol version %u, cpu %u, page %u)",
			h[0], h[1], h[2], h[3]);
		return -1;
	}
	if (c->cpu >= 0 && (uint32_t)c->cpu != h[2]) {
		hgt__listen_fault(l, g, "data channel of cpu %d says cpu %u", c->cpu, h[2]);
		return -1;
	}
	c->cpu = (int)h[2];
	if (g->page_size && g->page_size != h[3]) {
		hgt__listen_fault(l, g, "cpu %u: page size %u, HELLO said %u", h[2], h[3],
				  g->page_size);
		return -1;
	}
	g->page_size = h[3];
	if (c->stale)
		hgt__listen_log(
			l,
			"guest %s: %llu bytes of an earlier session dropped before cpu %u's header",
			g->name, (unsigned long long)c->stale, h[2]);
	return 0;
}

/* The listener's pipe, its bytes read and dropped: what a failed store left in it. */
static void spipe_empty(struct listener *l)
{
	uint8_t junk[65536];

	while (read(l->spipe[0], junk, sizeof(junk)) > 0)
		;
}

/* Splice @n bytes from @in (a pipe) into @c's file. 0, or -1 with errno. */
static int splice_out(int in, struct chan *c, size_t n)
{
	while (n) {
		ssize_t w = splice(in, NULL, c->tmp, NULL, n, SPLICE_F_MOVE);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!w)
				errno = EIO;
			return -1;
		}
		n -= (size_t)w;
	}
	return 0;
}

/*
 * Past its header, a channel's page bytes go to its file with no copy here: spliced straight
 * from a FIFO (a pipe), through the listener's own 1 MB pipe from a socket. They stay in the
 * page cache until the guest's file is written from them. Written behind instead (each 4 MB
 * sent to the disk, dropped two chunks later: tried, 2026-12-04), a 200 MB drain ran at
 * 0.96 GB/s instead of 0.33 while this VM's free memory was back with its host (each new
 * page cache page a host fault), but once memory was warm the file's writing read it all
 * back from the disk: the listener's CPU 0.41-1.22 s instead of 0.25-0.33, done 0.56-1.38 s
 * after the drain began instead of 0.41-0.55 (hgtrace record so: 175 MB/s instead of 450).
 * Returns bytes stored, 0 for nothing now (or EOF: c->eof), -1 for a fault said, or -2 where
 * splice is refused (the channel is read from then on).
 */
static ssize_t splice_data(struct listener *l, struct guest *g, struct chan *c)
{
	unsigned int fl = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
	ssize_t r;

	if (g->fifo) {
		r = splice(c->fd, NULL, c->tmp, NULL, RBUF_SIZE, fl);
	} else {
		if (l->spipe[0] < 0) {
			if (pipe2(l->spipe, O_CLOEXEC | O_NONBLOCK))
				return -2;
			fcntl(l->spipe[0], F_SETPIPE_SZ, RBUF_SIZE);
		}
		r = splice(c->fd, NULL, l->spipe[1], NULL, RBUF_SIZE, fl);
	}
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r < 0 && (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
		c->no_splice = true;
		return -2;
	}
	if (r < 0 && g->fifo) { /* a FIFO's errors are the file's */
		hgt__listen_fault(l, g, "cannot store cpu %d's pages: %s", c->cpu, strerror(errno));
		return -1;
	}
	if (r <= 0) {
		c->eof = true;
		return 0;
	}
	if (!g->fifo && splice_out(l->spipe[0], c, (size_t)r)) {
		hgt__listen_fault(l, g, "cannot store cpu %d's pages: %s", c->cpu, strerror(errno));
		spipe_empty(l);
		return -1;
	}
	return r;
}

static void read_data(struct listener *l, struct guest *g, struct chan *c)
{
	uint8_t small[65536], *buf = l->rbuf ? l->rbuf : small;
	size_t want = l->rbuf ? RBUF_SIZE : sizeof(small);
	ssize_t r;
	size_t i = 0;

	if (holding(g, c))
		return;
	c->t_read = hgt__now_ms();
	/* in the pages, within the guest's limit: spliced, no copy */
	if (c->tmp >= 0 && !c->no_splice && c->hdr_got == HGT__DATA_HDR && !resyncing(g, c) &&
	    !g->over_limit && g->bytes + RBUF_SIZE <= l->o.max_bytes) {
		r = splice_data(l, g, c);
		if (r > 0) {
			g->t_last = hgt__now_ms();
			g->bytes += (uint64_t)r;
			c->bytes += (uint64_t)r;
			trace_listen_data(g->name, c->cpu, (size_t)r);
		}
		if (r != -2)
			return;
	}
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
	if (g->over_limit || (g->bytes > l->o.max_bytes && over_held(g, l->o.max_bytes))) {
		if (!g->over_limit)
			hgt__listen_fault(l, g, "more than %llu bytes: the guest's limit",
					  (unsigned long long)l->o.max_bytes);
		g->over_limit = true;
		return;
	}
	if ((size_t)r > i) {
		if (c->tmp < 0 && chan_file(l, g, c))
			return;
		if (hgt__write_full(c->tmp, buf + i, (size_t)r - i)) {
			hgt__listen_fault(l, g, "cannot store cpu %d's pages: %s", c->cpu,
					  strerror(errno));
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
		hgt__listen_fault(l, g, "cannot keep its pages: %s", hgt_last_error());
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
		hgt__listen_fault(l, g, "cannot store cpu %d's pages: %s", c->cpu,
				  hgt_last_error());
		return -1;
	}
	return 0;
}

/* Metadata item @i of @g into head.dat @out: compressed at its first write only (kallsyms,
 * 5.4 MB here, took 70 ms of the poll loop each time head.dat was written again). */
static int head_meta(struct guest *g, struct hgt_output *out, int i)
{
	if (!g->zmeta[i] && hgt__meta_pack(HGT_COMPRESS_ZSTD, g->meta[i], g->meta_len[i],
					   &g->zmeta[i], &g->zmeta_len[i]))
		g->zmeta[i] = NULL; /* compressed by the writer */
	return hgt__output_set_meta_packed(out, (unsigned)i + 16, g->meta[i], g->meta_len[i],
					   HGT_COMPRESS_ZSTD, g->zmeta[i], g->zmeta_len[i]);
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
			       g->long_size ? (int)g->long_size : 8, HGT_COMPRESS_ZSTD);
	if (!out)
		return -errno;
	for (i = 0; !ret && i < 6; i++)
		ret = head_meta(g, out, i);
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

static void report_result(struct listener *l, struct guest *g, const char *path)
{
	struct hgt_listen_result r = { .name = g->name, .path = path };
	uint64_t *cb;
	uint32_t kept;
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
	hgt__listen_sync_kept(g, &kept, &r.bound);
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
		hgt__listen_log(
			l,
			"guest %s: WARNING: its vCPU threads are unknown (no VMM process with threads 'CPU N/...' found when it started): merged by its sync samples alone",
			g->name);
		return;
	}
	ret = hgt__guest_map_append(g->host_path, g->name, id, &g->vt);
	if (ret)
		hgt__listen_log(l, "guest %s: %s: cannot add its vCPU map: %s", g->name,
				g->host_path, hgt_last_error());
	else
		hgt__listen_log(l, "guest %s: %s maps its %d vCPU threads (process %d)", g->name,
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
			hgt__listen_log(l, "guest %s: times stay in TSC cycles: %s", g->name,
					hgt_last_error());
			return;
		}
	}
	ret = hgt_tracedat_append_options(g->host_path, &ob, 1);
	if (!ret)
		ret = hgt_tracedat_append_options(g->path, &ob, 1);
	if (ret)
		hgt__listen_log(l, "guest %s: TSC2NSEC not stored: %s", g->name, hgt_last_error());
	else
		hgt__listen_log(l,
				"guest %s: times in ns: TSC2NSEC mult %u shift %u in both files%s",
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
		hgt__listen_log(l, "guest %s: sync not refined: %s", g->name, hgt_last_error());
	if (ret) {
		hgt_refine_result_free(&r);
		return;
	}
	hgt_refine_summary(&r, line, sizeof(line));
	hgt__listen_log(l, "guest %s: sync %s", g->name, line);
	for (int c = 0; c < r.nr_cpus; c++) {
		hgt_refine_disagreement(&r, c, line, sizeof(line));
		if (*line)
			hgt__listen_log(l, "guest %s: %s%s", g->name,
					r.cpus[c].status == HGT_REFINE_DISAGREE ? "WARNING: " : "",
					line);
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
		hgt__listen_log(l, "guest %s: no sync check of %s + %s: %s", g->name, g->host_path,
				g->path, in[0] && in[1] ? hgt_last_error() : "cannot open them");
		goto out;
	}
	f = open_memstream(&text, &len);
	if (f) {
		hgt_sync_check_print(sc, f);
		fclose(f);
	}
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save))
		hgt__listen_log(l, "guest %s: %s", g->name,
				!strncmp(line, "hgtrace: ", 9) ? line + 9 : line);
	if (hgt_sync_check_verdict(sc, 1) != HGT_SYNC_CONSISTENT)
		hgt__listen_log(l, "guest %s: WARNING: %s + %s: %s", g->name, g->host_path, g->path,
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
	bool write; /* the guest's file: its head is written, its pages follow */
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

		return ret ? ret : hgt__listen_add_sync_options(e->l, g, &k);
	}
}

/* Write trace-NAME.dat from what the guest sent: head.dat and the CPU files of its
 * recording directory (what hgtrace restore would do after a kill), then remove it. */
/* The slow part of writing a guest's file (its pages read back, compressed, written), run
 * in a thread of its own: the listener goes on reading the other guests meanwhile. @g is
 * left alone by the loop until fin_state is FIN_DONE. */
/*
 * --record-host: the host's side stopped and written, a flight recorder on it first (its
 * last search and windows). In the finish thread too: that takes seconds, and the other
 * guests' streams must go on being read meanwhile (what is said of it waits for
 * host_said(), in the loop).
 */
static void stop_host(struct listener *l, struct guest *g)
{
	struct hgt_record_result hr;

	if (!g->host_rec)
		return;
	/* the guest's stream at its end: the host's tracing halted, its pages all written,
	 * before a flight recorder's last search (an error is said by the stop) */
	(void)hgt_record_halt(g->host_rec);
	if (l->o.on_host_ending)
		l->o.on_host_ending(l->o.ctx, g->name);
	g->host_ret = hgt_record_stop(g->host_rec, &hr);
	if (g->host_ret)
		snprintf(g->host_err, sizeof(g->host_err), "%s", hgt_last_error());
	hgt_record_free(g->host_rec);
	g->host_rec = NULL;
	g->host_stopped = true;
}

static void host_said(struct listener *l, struct guest *g)
{
	if (!g->host_stopped)
		return;
	g->host_stopped = false;
	if (g->host_ret) {
		hgt__listen_log(l, "guest %s: the host's recording failed: %s", g->name,
				g->host_err);
		g->host_path[0] = 0;
	} else {
		hgt__listen_log(l, "guest %s: wrote %s (the host's side)", g->name, g->host_path);
	}
}

static void *finish_thread(void *arg)
{
	struct end_ctx *e = arg;
	struct guest *g = e->g;
	HGT_OPTS(hgt_convert_opts, co, .version = 7, .compression = HGT_COMPRESS_ZSTD);

	stop_host(e->l, g);
	if (e->write) {
		g->fin_ret = hgt__recdir_finish(g->rd.dir, g->path, &co, end_options, e, false,
						NULL, NULL);
		if (g->fin_ret)
			snprintf(g->fin_err, sizeof(g->fin_err), "%s", hgt_last_error());
	}
	free(e);
	__atomic_store_n(&g->fin_state, FIN_DONE, __ATOMIC_RELEASE);
	return NULL;
}

/* What follows the file's writing: said, mapped, reported. Returns its result. */
static int finish_end(struct listener *l, struct guest *g)
{
	int ret = g->fin_ret;

	host_said(l, g);
	if (g->fin_missing >= 0) {
		hgt__listen_log(l,
				"guest %s: no file: the stream ended before the guest sent its %s",
				g->name,
				g->fin_missing < 6 ? hgt_option_name((unsigned)g->fin_missing + 16)
						   : "HELLO");
		hgt__recdir_done(&g->rd, true); /* pages without formats: unreadable */
		report_result(l, g, NULL);
		return -EPROTO;
	}
	trace_listen_done(g->name, g->bytes, ret);
	if (ret) {
		if (hgt__recdir_present(&g->rd))
			hgt__listen_log(
				l,
				"guest %s: cannot write %s: %s; what arrived is kept in %s ('hgtrace restore %s' writes it)",
				g->name, g->path, g->fin_err, g->rd.dir, g->path);
		else
			hgt__listen_log(
				l,
				"guest %s: cannot write %s: %s; its recording directory %s was removed: nothing of it is kept",
				g->name, g->path, g->fin_err, g->rd.dir);
		hgt__recdir_done(&g->rd, false);
		report_result(l, g, NULL);
		return ret;
	}
	hgt__recdir_done(&g->rd, false); /* removed by hgt__recdir_finish() */
	hgt__listen_log(l, "guest %s: wrote %s%s", g->name, g->path,
			g->fault[0] ? " (stream ended early: see report --stat)" : "");
	if (g->host_path[0]) {
		map_host(l, g);
		check_pair(l, g);
	}
	report_result(l, g, g->path);
	return 0;
}

/*
 * Start writing a finished guest's file (and stopping the host's side of it). Returns 1
 * when a thread does (finish_end() once fin_state is FIN_DONE), else the result, the file
 * written (or not) here. @wait: write it here (the listener is ending).
 */
static int finish_guest(struct listener *l, struct guest *g, bool wait)
{
	struct end_ctx *e;
	int i, ret = 0, ncpu = 0;

	g->fin_missing = g->hello ? -1 : 6;
	for (i = 0; i < 6 && g->fin_missing < 0; i++)
		if (!g->meta[i])
			g->fin_missing = i;
	for (i = 0; i < g->nr_data; i++)
		if (g->data[i].cpu + 1 > ncpu)
			ncpu = g->data[i].cpu + 1;
	if (g->fin_missing < 0)
		ret = guest_head(l, g, ncpu);
	g->fin_ret = ret;
	if (ret)
		snprintf(g->fin_err, sizeof(g->fin_err), "%s", hgt_last_error());
	e = malloc(sizeof(*e));
	if (!e) {
		stop_host(l, g);
		if (g->fin_missing < 0 && !ret) {
			g->fin_ret = -ENOMEM;
			snprintf(g->fin_err, sizeof(g->fin_err), "%s", strerror(ENOMEM));
		}
		return finish_end(l, g);
	}
	*e = (struct end_ctx){ l, g, g->fin_missing < 0 && !ret };
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
		free(g->sync.half[c]);
	}
	free(g->sync.time);
	free(g->sync.offset);
	free(g->sync.half);
	free(g->sync.count);
	free(g->sync.best_rtt);
	free(g->sync.best_g);
	free(g->sync.best_mid);
	if (g->rd.dir && g->bytes && hgt__recdir_present(&g->rd))
		hgt__listen_log(
			l, "guest %s: what arrived is kept in %s ('hgtrace restore %s' writes it)",
			g->name, g->rd.dir, g->path);
	else if (g->rd.dir && g->bytes)
		hgt__listen_log(
			l,
			"guest %s: its recording directory %s was removed: nothing of it is kept",
			g->name, g->rd.dir);
	hgt__recdir_done(&g->rd, !g->bytes);
	for (i = 0; i < 6; i++) {
		free(g->meta[i]);
		free(g->zmeta[i]);
	}
	for (i = 0; i < g->nr_opts; i++)
		free(g->opts[i].data);
	free(g->opts);
	free(g->data);
	free(g->msg);
	free(g);
}

/* An output directory that cannot take the files is said at once, not after the guests'
 * data arrived. */
static int check_output_dir(const struct listener *l)
{
	const char *d = l->o.output_dir ? l->o.output_dir : ".";
	char buf[4096];
	struct stat st;
	int err;

	if (l->o.output_base) { /* BASE-NAME.dat: BASE's directory */
		char *slash;

		snprintf(buf, sizeof(buf), "%s", l->o.output_base);
		slash = strrchr(buf, '/');
		if (slash)
			*slash = 0;
		d = slash ? (buf[0] ? buf : "/") : ".";
	}
	err = stat(d, &st)	       ? errno
	      : !S_ISDIR(st.st_mode)   ? ENOTDIR
	      : access(d, W_OK | X_OK) ? errno
				       : 0;
	if (err)
		return hgt__errorf(err, "listen: output directory %s: %s", d,
				   err == ENOTDIR ? "not a directory" : strerror(err));
	return 0;
}

/* The FIFO guests (told to start with --start), the peers dialed, the sockets listened on. */
static int open_sources(struct listener *l)
{
	int i, ret;

	for (i = 0; i < l->o.nr_guests; i++) {
		struct guest *g = NULL;

		ret = open_fifo_guest(l, &l->o.guests[i],
				      l->o.guest_record ? l->o.guest_record[i] : NULL, i, 1, &g);
		if (ret)
			return ret;
		if (l->o.start) {
			hgt__listen_send_cmd(g, "1\n");
			g->start_sent = true;
		}
	}
	for (i = 0; i < l->o.nr_peers; i++) {
		ret = hgt__listen_open_peer(l, &l->o.peers[i]);
		if (ret)
			return ret;
	}
	if (l->o.tcp_port && (l->tcp_fd = hgt__listen_socket(l, AF_INET, l->o.tcp_port)) < 0)
		return l->tcp_fd;
	if (l->o.vsock_port && (l->vsock_fd = hgt__listen_socket(l, AF_VSOCK, l->o.vsock_port)) < 0)
		return l->vsock_fd;
	if (l->o.hvsock_path) {
		struct stat st;

		l->unix_fd = hgt__listen_unix_socket(l->o.hvsock_path);
		if (l->unix_fd < 0)
			return l->unix_fd;
		if (!lstat(l->o.hvsock_path, &st))
			l->unix_ino = st.st_ino;
	}
	return 0;
}

/* A guest's limits: a silent or never-recording connection holds a slot for so long. */
static void guest_timeouts(struct listener *l, struct guest *g, uint64_t t)
{
	/* a connection that said "control" and then nothing holds a slot: it has
	 * HELLO_TIMEOUT_MS to say who it is (FIFO guests wait for their agent) */
	if (!g->fifo && !g->peer && !g->hello && !g->done && t - g->t_start >= HELLO_TIMEOUT_MS)
		hgt__listen_fault(l, g, "no HELLO within %d s of connecting: closed",
				  HELLO_TIMEOUT_MS / 1000);
	/* heartbeats alone do not hold a slot: a network guest told to start that never
	 * records is closed (a real agent records in seconds) */
	if (!g->fifo && !g->peer && g->hello && g->start_sent && !g->recording && !g->done &&
	    !g->ended && t - g->t_start >= l->o.silent_ms)
		hgt__listen_fault(l, g, "not recording %u s after the start: closed",
				  l->o.silent_ms / 1000);
	/* a network guest's agent says something at least every HGT__HEARTBEAT_MS: one
	 * silent far longer is gone (or hostile) and holds a slot; what it sent is written */
	if (!g->fifo && g->hello && !g->done && g->quiet_since &&
	    t - g->quiet_since >= l->o.silent_ms)
		hgt__listen_fault(l, g, "silent for %u s (no data, no heartbeat): closed",
				  l->o.silent_ms / 1000);
}

/* The stop, after a last round of probes so that the samples bracket the whole recording;
 * a graceful stop that never ends is a fault. */
static void guest_stop(struct listener *l, struct guest *g, uint64_t t, bool want_stop)
{
	struct sync *sy = &g->sync;

	if (want_stop && !g->stop_sent && !g->done) {
		if (sy->on && !sy->failed && !sy->final_done) {
			if (!sy->final_started && !sy->round_left) {
				sy->final_started = true;
				sy->final_ms = t;
				hgt__listen_sync_round(l, g, SYNC_FIRST);
			} else if (sy->final_started &&
				   (!sy->round_left || t - sy->final_ms > 3000)) {
				sy->final_done = true;
			}
		}
		if (!sy->on || sy->failed || sy->final_done) {
			hgt__listen_send_cmd(g, "0\n");
			g->stop_sent = true;
			g->t_stop_sent = t;
		}
	}
	if (l->o.graceful && g->stop_sent && !g->ended && !g->done &&
	    t - g->t_stop_sent > END_TIMEOUT_MS)
		hgt__listen_fault(l, g, "no end within %d s of the stop", END_TIMEOUT_MS / 1000);
}

/* An ended guest is done when every byte the agent sent is here (or, from an agent that
 * does not say, the channels closed or went quiet: quiet as polls see it, not as the clock
 * does, since the loop may just have spent seconds writing another guest's file). */
static void guest_complete(struct listener *l, struct guest *g, uint64_t t)
{
	bool all_eof = true, all_bytes = !!g->end_bytes;

	if (!g->ended || g->done)
		return;
	for (int k = 0; k < g->nr_data; k++)
		all_eof &= g->data[k].eof;
	for (uint32_t cpu = 0; all_bytes && cpu < g->nr_cpus; cpu++) {
		uint64_t got = 0;

		for (int k = 0; k < g->nr_data; k++)
			if (g->data[k].cpu == (int)cpu)
				got += g->data[k].bytes;
		all_bytes = got >= g->end_bytes[cpu];
	}
	if (all_eof || all_bytes || (g->quiet_since && t - g->quiet_since >= l->o.idle_ms))
		g->done = true;
}

/* A done guest's file, written in a thread of its own: 1 while it is being written, else 0
 * and the guest freed (a serving FIFO guest opened again for its next session). */
static int guest_finish(struct listener *l, int i, bool stopping)
{
	struct guest *g = l->g[i];
	int src = g->src, seq = g->seq, r;
	bool again = l->o.record_host && g->fifo && g->hello && !stopping;

	if (g->fin_state == FIN_NONE) {
		r = finish_guest(l, g, false);
		if (r == 1)
			return 1;
	} else if (__atomic_load_n(&g->fin_state, __ATOMIC_ACQUIRE) != FIN_DONE) {
		return 1;
	} else {
		hgt__thread_join(g->fin_thread);
		g->fin_state = FIN_NONE;
		r = finish_end(l, g);
	}
	if (r)
		l->failures++;
	/* a server: the guest may start another session. Its FIFOs are opened again before
	 * these close, so they never go without a reader: an agent that already wrote to
	 * them would get EPIPE */
	if (again) {
		struct guest *ng = NULL;

		open_fifo_guest(l, &l->o.guests[src], NULL, src, seq + 1, &ng);
	}
	free_guest(l, g);
	l->g[i] = NULL;
	return 0;
}

/* One guest's turn of the loop; returns whether it is still active. */
static bool guest_tick(struct listener *l, int i, uint64_t t, bool stopping)
{
	struct guest *g = l->g[i];
	bool want_stop = false;

	/* a server's guest waiting for its next session: nothing came, nothing to write, no
	 * failure */
	if (stopping && g->seq > 1 && !g->ready && !g->hello && !g->bytes) {
		free_guest(l, g);
		l->g[i] = NULL;
		return false;
	}
	if (stopping && !g->done) {
		if (l->o.graceful && g->hello && !g->ended) {
			want_stop = true;
		} else if (!l->o.graceful || !g->ended) {
			if (!g->ended)
				hgt__listen_fault(l, g, "the listener was stopped");
			g->done = true;
		}
	}
	guest_timeouts(l, g, t);
	if (g->hello && !g->stop_sent && l->o.stop_after_ms && t - g->t_start >= l->o.stop_after_ms)
		want_stop = true;
	hgt__listen_sync_tick(l, g, t);
	/* a serving agent ends a session whose host says nothing for its silence limit
	 * (30 s): with no probes to send, a newline keeps it */
	if (g->hello && !g->ended && !g->done && t - g->t_sent >= HGT__HEARTBEAT_MS)
		hgt__listen_send_cmd(g, "\n");
	guest_stop(l, g, t, want_stop);
	guest_complete(l, g, t);
	if (!g->done)
		return true;
	/* at the stop, the files wait until every guest's last page is in (on_received) */
	if (stopping && !l->received && g->fin_state == FIN_NONE)
		return true;
	/* active while its file is being written; a serving FIFO guest's next session is
	 * in another slot, with a tick of its own */
	return guest_finish(l, i, stopping) == 1;
}

#define POLL_MAX (1 + 1 + MAX_PENDING + MAX_GUESTS * (MAX_CPUS + 1) / 16)

/* What one poll waits on: listening sockets, pending connections, guests' channels. */
struct poll_set {
	struct pollfd pf[POLL_MAX];
	struct {
		int kind; /* 0 listening, 1 pending, 2 control, 3 data */
		int g, c;
	} who[POLL_MAX];
	int n;
};

static void poll_add(struct poll_set *ps, int fd, int kind, int g, int c)
{
	ps->pf[ps->n] = (struct pollfd){ .fd = fd, .events = POLLIN };
	ps->who[ps->n].kind = kind;
	ps->who[ps->n].g = g;
	ps->who[ps->n++].c = c;
}

static void poll_fill(struct listener *l, struct poll_set *ps)
{
	int i;

	ps->n = 0;
	/* with every pending slot taken, new connections wait in the backlog: polling the
	 * listening socket then would only spin */
	if (l->tcp_fd >= 0 && l->nr_pend < MAX_PENDING && !l->accept_paused)
		poll_add(ps, l->tcp_fd, 0, 0, 0);
	if (l->vsock_fd >= 0 && l->nr_pend < MAX_PENDING && !l->accept_paused)
		poll_add(ps, l->vsock_fd, 0, 0, 0);
	if (l->unix_fd >= 0 && l->nr_pend < MAX_PENDING && !l->accept_paused)
		poll_add(ps, l->unix_fd, 0, 0, 0);
	for (i = 0; i < l->nr_pend; i++)
		poll_add(ps, l->pend[i].fd, 1, i, 0);
	for (i = 0; i < l->nr_g && ps->n < POLL_MAX - 1; i++) {
		struct guest *g = l->g[i];

		if (!g || g->done) /* a done guest's file may be being written */
			continue;
		if (!g->ctl_eof)
			poll_add(ps, g->ctl_r, 2, i, 0);
		for (int k = 0; k < g->nr_data && ps->n < POLL_MAX; k++)
			if (!g->data[k].eof && !holding(g, &g->data[k]))
				poll_add(ps, g->data[k].fd, 3, i, k);
	}
}

/* What the poll found readable; @readable marks the guests among it. */
static void poll_serve(struct listener *l, const struct poll_set *ps, bool *readable)
{
	for (int i = 0; i < ps->n; i++) {
		int g = ps->who[i].g;

		if (!(ps->pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (ps->who[i].kind == 0 && l->nr_pend < MAX_PENDING) {
			hgt__listen_accept_one(l, ps->pf[i].fd);
		} else if (ps->who[i].kind == 1) {
			hgt__listen_pending_read(l, &l->pend[g]);
		} else if (ps->who[i].kind == 2 && l->g[g]) {
			readable[g] = true;
			read_ctl(l, l->g[g]);
		} else if (ps->who[i].kind == 3 && l->g[g]) {
			readable[g] = true;
			read_data(l, l->g[g], &l->g[g]->data[ps->who[i].c]);
		}
	}
}

/*
 * Batched channels (hgt__listen_batch()) not read for BATCH_POKE_MS read anyway: what waits
 * there is less than the kernel wakes the poll for. An ended guest's, or all at the stop:
 * not batched any more, its last bytes wake the poll at once. Marks in @readable the
 * guests that had bytes.
 */
static void poke_batched(struct listener *l, bool stopping, uint64_t t, bool *readable)
{
	for (int i = 0; i < l->nr_g; i++) {
		struct guest *g = l->g[i];

		for (int k = 0; g && !g->done && k < g->nr_data; k++) {
			struct chan *c = &g->data[k];
			uint64_t had = g->bytes + c->stale + c->hdr_got;

			if (!c->batched || c->eof)
				continue;
			if (stopping || g->ended)
				hgt__listen_batch(c, false);
			if (t - c->t_read < BATCH_POKE_MS)
				continue;
			read_data(l, g, c);
			if (c->eof || g->bytes + c->stale + c->hdr_got != had)
				readable[i] = true;
		}
	}
}

/* At the stop, once no guest's stream is still coming: on_received, once. Returns whether
 * it was called now. */
static bool maybe_received(struct listener *l)
{
	if (l->received)
		return false;
	for (int i = 0; i < l->nr_g; i++)
		if (l->g[i] && !l->g[i]->done) /* its stream still coming */
			return false;
	l->received = true;
	if (l->o.on_received)
		l->o.on_received(l->o.ctx);
	return true;
}

/* Whether the loop is over: stopped (a graceful stop once no guest is active), or nothing
 * left to wait for. */
static bool loop_over(const struct listener *l, bool stopping, int active)
{
	bool listening = l->tcp_fd >= 0 || l->vsock_fd >= 0 || l->unix_fd >= 0;

	if (stopping && (!l->o.graceful || !active))
		return true;
	return !active && !listening && !l->o.graceful && !l->o.record_host;
}

/* One turn: guests' ticks, one poll of 100 ms at most, what it found. Returns 1 when the
 * loop is over, 0 or -errno. */
static int loop_once(struct listener *l)
{
	struct poll_set ps;
	bool readable[MAX_GUESTS] = { false };
	uint64_t t = hgt__now_ms();
	bool stopping = l->o.stop && *l->o.stop;
	int i, active = 0;

	if (stopping && !l->stop_seen) {
		l->stop_seen = true;
		if (l->o.on_stopping)
			l->o.on_stopping(l->o.ctx);
	}
	for (i = 0; i < l->nr_g; i++)
		if (l->g[i])
			active += guest_tick(l, i, t, stopping);
	if (stopping && maybe_received(l))
		return 0; /* the files are written from the next turn on */
	if (l->o.on_started && !l->started_called)
		maybe_started(l, t);
	if (loop_over(l, stopping, active))
		return 1;
	hgt__listen_refused_tick(l, hgt__now_ms());
	if (l->accept_paused && hgt__now_ms() >= l->accept_paused)
		l->accept_paused = 0;
	poll_fill(l, &ps);
	if (poll(ps.pf, (nfds_t)ps.n, 100) < 0 && errno != EINTR)
		return hgt__errorf(errno, "listen: poll: %s", strerror(errno));
	poll_serve(l, &ps, readable);
	poke_batched(l, stopping, hgt__now_ms(), readable);
	/* a guest none of whose channels this poll found readable is quiet from now (or
	 * still) */
	for (i = 0; i < l->nr_g; i++)
		if (l->g[i] && readable[i])
			l->g[i]->quiet_since = 0;
		else if (l->g[i] && !l->g[i]->quiet_since)
			l->g[i]->quiet_since = hgt__now_ms();
	hgt__listen_pending_tick(l);
	return 0;
}

/* The guests still here written (a file being written waited for), every fd closed. */
static int listen_end(struct listener *l, int ret)
{
	int i;

	for (i = 0; i < l->nr_g; i++) {
		struct guest *g = l->g[i];

		if (!g)
			continue;
		if (g->fin_state != FIN_NONE) { /* its file is being written: wait */
			hgt__thread_join(g->fin_thread);
			g->fin_state = FIN_NONE;
			if (finish_end(l, g))
				l->failures++;
		} else if (!ret && finish_guest(l, g, true)) {
			l->failures++;
		}
		free_guest(l, g);
	}
	for (i = 0; i < l->nr_pend; i++)
		if (l->pend[i].fd >= 0)
			close(l->pend[i].fd);
	for (i = 0; i < l->nr_refused; i++)
		close(l->refused[i].fd);
	if (l->tcp_fd >= 0)
		close(l->tcp_fd);
	if (l->vsock_fd >= 0)
		close(l->vsock_fd);
	if (l->unix_fd >= 0) {
		struct stat st;

		close(l->unix_fd);
		/* ours, unless something else was put there meanwhile */
		if (!lstat(l->o.hvsock_path, &st) && S_ISSOCK(st.st_mode) &&
		    st.st_ino == l->unix_ino)
			unlink(l->o.hvsock_path);
	}
	if (!ret && l->failures)
		ret = hgt__errorf(EPROTO, "listen: %d guest file%s could not be written",
				  l->failures, l->failures == 1 ? "" : "s");
	return ret;
}

int hgt_listen_run(const struct hgt_listen_opts *opts)
{
	struct listener l = { .tcp_fd = -1, .vsock_fd = -1, .unix_fd = -1, .spipe = { -1, -1 } };
	int ret;

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
	ret = check_output_dir(&l);
	if (ret)
		return ret;
	l.rbuf = malloc(RBUF_SIZE); /* without it, 64 KB reads */
	ret = open_sources(&l);
	while (!ret)
		ret = loop_once(&l);
	ret = listen_end(&l, ret < 0 ? ret : 0);
	free(l.rbuf);
	if (l.spipe[0] >= 0) {
		close(l.spipe[0]);
		close(l.spipe[1]);
	}
	return ret;
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
	l->spipe[0] = l->spipe[1] = -1;
	g = hgt__listen_new_guest(l, "fz");
	if (!g) {
		free(l);
		return -ENOMEM;
	}
	if (size) {
		cut = data[0] % size;
		hgt__listen_ctl_bytes(l, g, data + 1, (ssize_t)cut);
		if (!g->done)
			hgt__listen_ctl_bytes(l, g, data + 1 + cut, (ssize_t)(size - 1 - cut));
	}
	if (!g->ended)
		hgt__listen_fault(l, g, "control channel closed before the end (EOF)");
	g->done = true;
	finish_guest(l, g, true);
	free_guest(l, g);
	free(l);
	return 0;
}
