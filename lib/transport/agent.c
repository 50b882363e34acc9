// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The guest agent: the recorder's per-CPU readers splice pages into one data channel per
 * CPU (no copy in user space); the control channel carries the metadata and the host's
 * start/stop orders.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/vm_sockets.h>

#include <tracefs.h>

#include <hgtrace/clock.h>
#include <hgtrace/peer.h>
#include <hgtrace/tracedat.h>
#include <hgtrace/transport.h>

#include "trace-transport.h"
#include "../common/common-local.h"
#include "../common/thread.h"
#include "../record/record-local.h"
#include "transport-local.h"
#include "proto.h"

struct agent {
	struct hgt_agent_opts o;
	int ctl_r, ctl_w;
	int *data;
	int nr_cpus;
	uint64_t session;
	bool host_gone;	   /* the host closed the channel (or refused the agent) */
	bool host_lost;	   /* a serving agent's host said nothing for its silence limit */
	char refused[200]; /* the reason a REFUSED message gave */
	/* bytes from the host: commands and framed messages */
	uint8_t in[4096];
	size_t in_len, in_pos;
	uint8_t mhdr[HGT__MSG_HDR];
	size_t mhdr_got;
	uint8_t *msg;
	size_t msg_len, msg_got;
	bool skip; /* a refused message's body is read and dropped */
	/* the next session's settings: a CONFIG (serve) or the command line */
	struct hgt_record_opts ro;
	char *cfg;
	const char **cfg_events;
	bool have_config;
	bool in_session; /* a CONFIG now is the next host's: kept in next_cfg */
	uint8_t *next_cfg;
	size_t next_cfg_len;
	const char *clock; /* the recording's trace clock, for probes */
	uint64_t last_host_ms;
	uint64_t last_sent_ms; /* the last control message (0: none yet) */
	uint64_t probes;
};

static uint64_t cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

/* The host's silence that ends a serving agent's session (and a write it never reads). */
static unsigned int silent_limit(const struct agent *a)
{
	return a->o.host_silent_ms ? a->o.host_silent_ms : 30000;
}

/* A write toward the host that cannot block for good: a host that died (FIFOs and ports
 * hold no EPIPE) or a signal ends it. */
static int chan_write(struct agent *a, int fd, const void *p, size_t n)
{
	int ret = hgt__write_within(fd, p, n, silent_limit(a), a->o.stop);

	if (ret == -ETIMEDOUT)
		a->host_lost = true;
	return ret;
}

static int chan_error(const struct agent *a, int ret, const char *what)
{
	if (ret == -ETIMEDOUT)
		return hgt__errorf(ETIMEDOUT, "agent: %s: the host read nothing for %u ms", what,
				   silent_limit(a));
	if (ret == -ECANCELED)
		return hgt__errorf(ECANCELED, "agent: %s: stopped while writing to the host", what);
	return hgt__errorf(-ret, "agent: %s: %s", what, strerror(-ret));
}

static int send_msg(struct agent *a, uint16_t type, const void *h, size_t hn, const void *p,
		    size_t n)
{
	uint8_t hdr[HGT__MSG_HDR];
	uint32_t magic = HGT__CTL_MAGIC, len = (uint32_t)(hn + n);
	uint16_t flags = 0;
	int ret;

	if (hn + n > HGT__MSG_MAX)
		return hgt__errorf(
			EFBIG, "agent: a %zu-byte message is beyond the protocol's limit", hn + n);
	memcpy(hdr, &magic, 4);
	memcpy(hdr + 4, &type, 2);
	memcpy(hdr + 6, &flags, 2);
	memcpy(hdr + 8, &len, 4);
	if (hn + n <= 64) {
		/* small messages (probe answers) in one write: a syscall costs under TCG */
		uint8_t b[HGT__MSG_HDR + 64];

		memcpy(b, hdr, sizeof(hdr));
		if (hn)
			memcpy(b + sizeof(hdr), h, hn);
		if (n)
			memcpy(b + sizeof(hdr) + hn, p, n);
		ret = chan_write(a, a->ctl_w, b, sizeof(hdr) + hn + n);
	} else {
		ret = chan_write(a, a->ctl_w, hdr, sizeof(hdr));
		if (!ret && hn)
			ret = chan_write(a, a->ctl_w, h, hn);
		if (!ret && n)
			ret = chan_write(a, a->ctl_w, p, n);
	}
	if (ret)
		return chan_error(a, ret, "control channel");
	a->last_sent_ms = hgt__now_ms();
	return 0;
}

/* Once the host knows the agent (READY sent), it never goes HGT__HEARTBEAT_MS without a
 * control message: a network host ends a guest that is silent far longer. */
static void heartbeat(struct agent *a)
{
	if (a->ctl_w >= 0 && a->last_sent_ms && !a->host_gone &&
	    hgt__now_ms() - a->last_sent_ms >= HGT__HEARTBEAT_MS)
		send_msg(a, HGT__MSG_HEARTBEAT, NULL, 0, NULL, 0);
}

static int sink_meta(void *ctx, unsigned int id, const void *p, size_t n)
{
	uint32_t v = id;

	return send_msg(ctx, HGT__MSG_META, &v, 4, p, n);
}

static int sink_option(void *ctx, unsigned int id, const void *p, uint32_t n)
{
	uint32_t v = id;

	return send_msg(ctx, HGT__MSG_OPTION, &v, 4, p, n);
}

static int open_path(const char *dir, const char *name, const char *suffix, int flags)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s%s", dir, name, suffix);
	fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		return hgt__errorf(errno, "agent: %s: %s", path, strerror(errno));
	return fd;
}

/* A virtio-serial port by its name when @dir has no link for it (no udev: initramfs,
 * minimal guests): the port /sys/class/virtio-ports/vportXpY whose "name" is @name, opened
 * as /dev/vportXpY (devtmpfs), else through a node of its own made from its "dev". */
static int open_port_sysfs(const char *name, int flags)
{
	static const char cls[] = "/sys/class/virtio-ports";
	DIR *d = opendir(cls);
	struct dirent *e;
	int fd = -ENOENT;

	while (d && fd == -ENOENT && (e = readdir(d))) {
		char path[512], val[64];
		unsigned int maj, min;
		int n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/name", cls, e->d_name);
		n = hgt__read_small(path, val, sizeof(val));
		while (n > 0 && (val[n - 1] == '\n' || val[n - 1] == 0))
			val[--n] = 0;
		if (n <= 0 || strcmp(val, name))
			continue;
		snprintf(path, sizeof(path), "/dev/%s", e->d_name);
		fd = open(path, flags | O_CLOEXEC);
		if (fd >= 0 || errno != ENOENT) {
			fd = fd >= 0 ? fd : -errno;
			break;
		}
		/* no /dev node either: one of our own, removed once open */
		snprintf(path, sizeof(path), "%s/%s/dev", cls, e->d_name);
		n = hgt__read_small(path, val, sizeof(val));
		if (n <= 0 || sscanf(val, "%u:%u", &maj, &min) != 2) {
			fd = -ENODEV;
			break;
		}
		{
			char dir[] = "/tmp/hgtrace-port-XXXXXX", node[64];

			if (!mkdtemp(dir)) {
				fd = -errno;
				break;
			}
			snprintf(node, sizeof(node), "%s/port", dir);
			fd = mknod(node, S_IFCHR | 0600, makedev(maj, min))
				     ? -errno
				     : open(node, flags | O_CLOEXEC);
			if (fd < 0 && fd != -errno)
				fd = -errno;
			unlink(node);
			rmdir(dir);
		}
	}
	if (d)
		closedir(d);
	return fd;
}

static int open_port(const char *dir, const char *name, int flags)
{
	char path[4096];
	int fd, e;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, flags | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	e = errno;
	if (e == ENOENT) {
		fd = open_port_sysfs(name, flags);
		if (fd >= 0)
			return fd;
		if (fd != -ENOENT)
			return hgt__errorf(-fd,
					   "agent: port %s (found in /sys/class/virtio-ports): %s",
					   name, strerror(-fd));
	}
	return hgt__errorf(e,
			   "agent: %s: %s (and no virtio port named %s in /sys/class/virtio-ports)",
			   path, strerror(e), name);
}

static int connect_to(struct agent *a)
{
	int fd;

	if (a->o.transport == HGT_TRANSPORT_VSOCK) {
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = a->o.cid,
					  .svm_port = a->o.port };

		fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			int e = errno;

			if (fd >= 0)
				close(fd);
			return hgt__errorf(e, "agent: vsock %u:%u: %s", a->o.cid, a->o.port,
					   strerror(e));
		}
		return fd;
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
		char port[16];
		int e;

		snprintf(port, sizeof(port), "%u", a->o.port);
		e = getaddrinfo(a->o.host ? a->o.host : "localhost", port, &hints, &res);
		if (e)
			return hgt__errorf(EHOSTUNREACH, "agent: %s: %s", a->o.host,
					   gai_strerror(e));
		fd = -1;
		for (ai = res; ai && fd < 0; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
			if (fd >= 0)
				hgt__sock_to_peer(fd, ai->ai_addr);
			if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
				e = errno;
				close(fd);
				fd = -1;
			}
		}
		freeaddrinfo(res);
		if (fd < 0)
			return hgt__errorf(e ? e : ECONNREFUSED, "agent: %s:%u: %s",
					   a->o.host ? a->o.host : "localhost", a->o.port,
					   strerror(e ? e : ECONNREFUSED));
		return fd;
	}
}

static bool stdout_is_file(void)
{
	struct stat st;

	return !fstat(STDOUT_FILENO, &st) && S_ISREG(st.st_mode);
}

static int open_channels(struct agent *a)
{
	char name[64];
	int i;

	switch (a->o.transport) {
	case HGT_TRANSPORT_STDOUT:
		/* no host: no commands, metadata nowhere, raw pages to stdout. A file there is
		 * appended to: every CPU's reader writes through the same file offset, which
		 * splice(2) moves with no lock (two readers' pages at one offset, one lost);
		 * the kernel refuses to splice into it then, and each page is one write(2) */
		a->ctl_r = -1;
		a->ctl_w = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (stdout_is_file()) {
			int fl = fcntl(STDOUT_FILENO, F_GETFL);

			if (fl < 0 || fcntl(STDOUT_FILENO, F_SETFL, fl | O_APPEND))
				return hgt__errorf(errno, "agent: stdout: cannot append: %s",
						   strerror(errno));
		}
		for (i = 0; i < a->nr_cpus; i++)
			a->data[i] = dup(STDOUT_FILENO);
		return a->ctl_w < 0 || a->data[0] < 0
			       ? hgt__errorf(errno, "agent: %s", strerror(errno))
			       : 0;
	case HGT_TRANSPORT_PORTS:
		a->ctl_r = open_port(a->o.dir, "agent-ctl-path", O_RDWR);
		if (a->ctl_r < 0)
			return a->ctl_r;
		a->ctl_w = a->ctl_r;
		break;
	case HGT_TRANSPORT_FIFOS:
		/* a service holds its FIFOs open both ways, as QEMU does: no EOF when one
		 * host goes, no EPIPE before the next comes, and opening never waits */
		a->ctl_r = open_path(a->o.dir, "agent-ctl-path", ".in",
				     a->o.serve ? O_RDWR : O_RDONLY);
		if (a->ctl_r < 0)
			return a->ctl_r;
		a->ctl_w = open_path(a->o.dir, "agent-ctl-path", ".out",
				     a->o.serve ? O_RDWR : O_WRONLY);
		if (a->ctl_w < 0)
			return a->ctl_w;
		break;
	default:
		a->ctl_r = a->ctl_w = connect_to(a);
		if (a->ctl_r < 0)
			return a->ctl_r;
		break;
	}
	for (i = 0; i < a->nr_cpus; i++) {
		snprintf(name, sizeof(name), "trace-path-cpu%d", i);
		if (a->o.transport == HGT_TRANSPORT_PORTS)
			a->data[i] = open_port(a->o.dir, name, O_WRONLY);
		else if (a->o.transport == HGT_TRANSPORT_FIFOS)
			a->data[i] =
				open_path(a->o.dir, name, ".out", a->o.serve ? O_RDWR : O_WRONLY);
		else
			a->data[i] = connect_to(a);
		if (a->data[i] < 0)
			return a->data[i];
	}
	return 0;
}

/* Wait for @want ('1' start, '0' stop) from the host. Returns 0 when it came, 1 when the
 * agent should end (stop before start, the host went away, or a signal). Bytes after the
 * command stay for the next wait: "1\n0\n" in one read starts and then stops. */
static const char *transport_name(int t)
{
	switch (t) {
	case HGT_TRANSPORT_PORTS:
		return "virtio-serial";
	case HGT_TRANSPORT_FIFOS:
		return "fifo";
	case HGT_TRANSPORT_TCP:
		return "tcp";
	case HGT_TRANSPORT_VSOCK:
		return "vsock";
	default:
		return "stdout";
	}
}

/* CONFIG {u32 buffer_kb, u32 flags} clock\0 event\0...: the next session's settings. */
static int take_config(struct agent *a, const uint8_t *p, size_t n)
{
	const char **ev = NULL;
	char *cfg, *q, *end;
	uint32_t kb;
	int nev = 0;

	if (n < 9 || p[n - 1]) {
		if (a->o.log)
			fprintf(a->o.log, "hgtrace agent: a CONFIG of %zu bytes refused\n", n);
		return -EPROTO;
	}
	cfg = malloc(n - 8);
	if (!cfg)
		return -ENOMEM;
	memcpy(cfg, p + 8, n - 8);
	memcpy(&kb, p, 4);
	end = cfg + (n - 8);
	for (q = cfg + strlen(cfg) + 1; q < end; q += strlen(q) + 1) {
		const char **e = realloc(ev, sizeof(*ev) * (size_t)(nev + 1));

		if (!e) {
			free(ev);
			free(cfg);
			return -ENOMEM;
		}
		ev = e;
		ev[nev++] = q;
	}
	free(a->cfg);
	free(a->cfg_events);
	a->cfg = cfg;
	a->cfg_events = ev;
	/* the host's settings; what it leaves out keeps the agent's command line */
	a->ro = *a->o.record;
	if (*cfg)
		a->ro.clock = cfg;
	if (kb)
		a->ro.buffer_kb = kb;
	if (nev) {
		a->ro.events = ev;
		a->ro.nr_events = nev;
		a->ro.filters = NULL; /* the command line's were of its own events */
	}
	a->have_config = true;
	return 0;
}

/* PROBE {u32 seq, u32 cpu}: the trace clock read on guest CPU cpu, right away. */
static int answer_probe(struct agent *a, const uint8_t *p, size_t n)
{
	uint32_t seq, cpu;
	uint8_t r[16];
	uint64_t ts = 0;
	cpu_set_t set;
	int c;

	if (n != 8)
		return 0;
	memcpy(&seq, p, 4);
	memcpy(&cpu, p + 4, 4);
	c = sched_getcpu();
	if ((int)cpu != c && cpu < CPU_SETSIZE && (int)cpu < a->nr_cpus) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		sched_setaffinity(0, sizeof(set), &set); /* moves this thread before it returns */
		c = sched_getcpu();
	}
	if (!a->clock || hgt__sync_clock_read(a->clock, &ts))
		c = -1; /* a clock user space cannot read: no sample */
	cpu = (uint32_t)c;
	memcpy(r, &seq, 4);
	memcpy(r + 4, &cpu, 4);
	memcpy(r + 8, &ts, 8);
	a->probes++;
	return send_msg(a, HGT__MSG_PROBE_REPLY, r, sizeof(r), NULL, 0);
}

static int host_message(struct agent *a, uint16_t type)
{
	switch (type) {
	case HGT__MSG_CONFIG:
		if (a->in_session) {
			/* a new host while this session's is silent (killed): its settings
			 * wait for the next session; this one's recorder still uses ours */
			uint8_t *c = malloc(a->msg_len ? a->msg_len : 1);

			if (!c)
				return -ENOMEM;
			memcpy(c, a->msg, a->msg_len);
			free(a->next_cfg);
			a->next_cfg = c;
			a->next_cfg_len = a->msg_len;
			return 0;
		}
		return take_config(a, a->msg, a->msg_len);
	case HGT__MSG_PROBE:
		return answer_probe(a, a->msg, a->msg_len);
	case HGT__MSG_REFUSED: {
		/* the host will not take this agent: say why, and end */
		size_t n =
			a->msg_len < sizeof(a->refused) - 1 ? a->msg_len : sizeof(a->refused) - 1;

		n = a->msg ? strnlen((const char *)a->msg, n) : 0;
		if (n)
			memcpy(a->refused, a->msg, n);
		a->refused[n] = 0;
		for (size_t i = 0; i < n; i++)
			if (a->refused[i] < ' ' || a->refused[i] > '~')
				a->refused[i] = '?';
		return -ECONNREFUSED;
	}
	default:
		return 0; /* a newer host's message: ignored */
	}
}

/* One byte of the host's stream. Returns the command it completes ('0', '1', 'C' for a
 * CONFIG), 0 for none, or -errno. */
static int host_byte(struct agent *a, uint8_t c)
{
	if (!a->mhdr_got) {
		if (c == '0' || c == '1') {
			trace_agent_command((char)c);
			return c;
		}
		if (c != (HGT__CTL_MAGIC & 0xff))
			return 0; /* newlines and noise */
	}
	if (a->mhdr_got < HGT__MSG_HDR) {
		a->mhdr[a->mhdr_got++] = c;
		if (a->mhdr_got < HGT__MSG_HDR)
			return 0;
		{
			uint32_t magic, len;
			uint8_t *m;

			memcpy(&magic, a->mhdr, 4);
			memcpy(&len, a->mhdr + 8, 4);
			if (magic != HGT__CTL_MAGIC) {
				a->mhdr_got = 0; /* not a message: resynchronise */
				return 0;
			}
			a->skip = len > HGT__CONFIG_MAX;
			a->msg_len = len;
			a->msg_got = 0;
			if (!a->skip && len) {
				m = realloc(a->msg, len);
				if (!m)
					return -ENOMEM;
				a->msg = m;
			}
		}
	} else {
		if (!a->skip)
			a->msg[a->msg_got] = c;
		a->msg_got++;
	}
	if (a->mhdr_got == HGT__MSG_HDR && a->msg_got == a->msg_len) {
		uint16_t type;
		int ret = 0;

		a->mhdr_got = 0;
		memcpy(&type, a->mhdr + 4, 2);
		if (a->skip) {
			if (a->o.log)
				fprintf(a->o.log, "hgtrace agent: a %zu-byte message refused\n",
					a->msg_len);
			return 0;
		}
		ret = host_message(a, type);
		if (ret < 0)
			return ret == -EPROTO ? 0 : ret;
		if (type == HGT__MSG_CONFIG)
			trace_agent_command('C');
		return type == HGT__MSG_CONFIG ? 'C' : 0;
	}
	return 0;
}

/* Wait for @want ('1' start, '0' stop, 'C' a CONFIG) from the host, answering probes
 * meanwhile. Returns 0 when it came, 1 when the agent should end the wait without it (a
 * stop before the start, the host went away, a signal, or a serving agent's host silent
 * for @silent_ms). Bytes after the command stay for the next wait: "1\n0\n" in one read
 * starts and then stops. */
static int wait_command(struct agent *a, int want, unsigned int silent_ms, bool say)
{
	for (;;) {
		struct pollfd p = { .fd = a->ctl_r, .events = POLLIN };
		ssize_t n;

		while (a->in_pos < a->in_len) {
			int c = host_byte(a, a->in[a->in_pos++]);

			if (c == -ECONNREFUSED)
				a->host_gone = true;
			if (c < 0)
				return 1;
			if (c == 'C' && want != 'C') {
				/* only a host that starts a session sends one: this session's
				 * host is gone */
				a->host_lost = true;
				if (a->o.log && say)
					fprintf(a->o.log,
						"hgtrace agent: a new host's settings arrived: this session's host is gone\n");
				return 1;
			}
			if (c == want)
				return 0;
			if (c == '0' && want == '1')
				return 1;
		}
		if (a->o.stop && *a->o.stop)
			return 1;
		heartbeat(a);
		if (silent_ms && hgt__now_ms() - a->last_host_ms > silent_ms) {
			a->host_lost = true;
			if (a->o.log && say)
				fprintf(a->o.log,
					"hgtrace agent: the host was silent for %u ms: session ended\n",
					silent_ms);
			return 1;
		}
		/* signals interrupt the wait; a second is the host-silence resolution */
		if (a->ctl_r < 0 || poll(&p, 1, 1000) <= 0) {
			if (a->ctl_r < 0)
				usleep(100000);
			continue;
		}
		n = read(a->ctl_r, a->in, sizeof(a->in));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			a->host_gone = true;
			return 1; /* the host went away */
		}
		a->in_len = (size_t)n;
		a->in_pos = 0;
		a->last_host_ms = hgt__now_ms();
	}
}

/* Whether a network host has closed the control connection (EOF or reset waiting). */
static bool host_closed(struct agent *a)
{
	struct pollfd p = { .fd = a->ctl_r, .events = POLLIN };
	ssize_t n;
	char c;

	if (a->ctl_r < 0 ||
	    (a->o.transport != HGT_TRANSPORT_TCP && a->o.transport != HGT_TRANSPORT_VSOCK))
		return false;
	if (poll(&p, 1, 100) <= 0)
		return false;
	/* bytes waiting (a refusal) are read by the caller's wait: not this */
	n = recv(a->ctl_r, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && (p.revents & (POLLHUP | POLLERR)));
}

/* A data channel failed before the start: whether the host refused the agent (its reason,
 * which may still wait unread on the control channel, in @a->refused) or left. */
static bool host_said_no(struct agent *a)
{
	if (host_closed(a))
		return true;
	if (a->ctl_r < 0 ||
	    (a->o.transport != HGT_TRANSPORT_TCP && a->o.transport != HGT_TRANSPORT_VSOCK))
		return false;
	/* what the host sent: a refusal, then its close (a second at most) */
	a->last_host_ms = hgt__now_ms();
	(void)wait_command(a, '1', 1000, false);
	return a->host_gone;
}

/* The error for a host that refused the agent or left before the start. */
static int said_no(const struct agent *a)
{
	return a->refused[0]
		       ? hgt__errorf(ECONNREFUSED, "agent: the host refused it: %s", a->refused)
		       : hgt__errorf(
				 ECONNRESET,
				 "agent: the host closed the connection before starting the session");
}

/* Every data channel says which CPU and session it carries (raw pages only on stdout). */
static int send_data_headers(struct agent *a)
{
	int i, ret = 0;

	for (i = 0; i < a->nr_cpus && !ret && a->o.transport != HGT_TRANSPORT_STDOUT; i++) {
		uint32_t h[4] = { HGT__DATA_MAGIC, HGT__PROTO_VERSION, (uint32_t)i,
				  (uint32_t)getpagesize() };
		uint8_t b[HGT__DATA_HDR];

		memcpy(b, h, 16);
		memcpy(b + 16, &a->session, 8);
		ret = chan_write(a, a->data[i], b, sizeof(b));
		if (ret) {
			char what[48];

			snprintf(what, sizeof(what), "cpu %d data channel", i);
			ret = chan_error(a, ret, what);
		}
	}
	return ret;
}

/* Before tracing starts: HELLO and the metadata (formats, kallsyms, ...), so their cost
 * is not in the trace the agent records. */
static int describe(void *ctx, struct hgt_recorder *rec)
{
	struct agent *a = ctx;
	struct hgt__meta_sink sink = { sink_meta, sink_option, a };
	uint8_t h[24];
	uint32_t v[4] = { HGT__PROTO_VERSION, (uint32_t)a->nr_cpus, (uint32_t)getpagesize(),
			  (uint32_t)sizeof(long) };
	const char *clock = hgt__record_clock(rec);
	int ret;

	memcpy(h, v, 16);
	memcpy(h + 16, &a->session, 8);
	ret = send_msg(a, HGT__MSG_HELLO, h, sizeof(h), clock, strlen(clock) + 1);
	a->clock = clock;
	if (!ret)
		ret = hgt__record_describe(rec, &sink, 0);
	return ret;
}

/*
 * A serving agent's FIFOs whose host died: nobody reads them, and the readers' writes of
 * pages would block for good (and the agent with them, deaf to signals, every later
 * session refused for the stale bytes). The service holds each FIFO open both ways, so it
 * reads and drops what it wrote itself while the readers stop, until the FIFOs are empty.
 */
struct drain {
	struct agent *a;
	int *fds; /* a non-blocking reader of each FIFO: a new host may read them too */
	int nr;
	pthread_t thread;
	int stop;
	bool started;
	uint64_t from_ms; /* drain from then on: a live host's grace to take the tail */
	size_t dropped;	  /* bytes read and dropped */
};

/* Read and drop what waits in the FIFOs; returns the bytes read. */
static size_t drain_fds(struct drain *d, int timeout_ms)
{
	struct pollfd p[d->nr];
	char buf[65536];
	size_t got = 0;
	ssize_t r;

	for (int i = 0; i < d->nr; i++)
		p[i] = (struct pollfd){ .fd = d->fds[i], .events = POLLIN };
	if (poll(p, (nfds_t)d->nr, timeout_ms) <= 0)
		return 0;
	for (int i = 0; i < d->nr; i++)
		while (p[i].revents & POLLIN && (r = read(p[i].fd, buf, sizeof(buf))) > 0)
			got += (size_t)r;
	return got;
}

static void *drain_main(void *arg)
{
	struct drain *d = arg;

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		if (hgt__now_ms() < d->from_ms)
			usleep(50000);
		else
			d->dropped += drain_fds(d, 100);
	}
	return NULL;
}

/* Readers of the agent's FIFOs toward the host (data and control), opened again through
 * /proc so that they do not block; 0 or -errno. */
static int drain_open(struct agent *a, struct drain *d)
{
	*d = (struct drain){ .a = a };
	d->fds = malloc(sizeof(int) * (size_t)(a->nr_cpus + 1));
	if (!d->fds)
		return -ENOMEM;
	for (int i = 0; i <= a->nr_cpus; i++) {
		char path[64];
		int fd = i < a->nr_cpus ? a->data[i] : a->ctl_w;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0)
			d->fds[d->nr++] = fd;
	}
	return 0;
}

static void drain_close(struct drain *d)
{
	for (int i = 0; i < d->nr; i++)
		close(d->fds[i]);
	free(d->fds);
	d->fds = NULL;
	d->nr = 0;
}

/* What the FIFOs hold now goes (a dead host's leftovers, before the next READY). */
static void drain_now(struct agent *a)
{
	struct drain d;

	if (drain_open(a, &d))
		return;
	while (drain_fds(&d, 0))
		;
	drain_close(&d);
}

static bool host_dead(const struct agent *a)
{
	return a->host_lost || a->host_gone;
}

/* A stopped agent (a signal) whose host is alive but not reading would wait for good: it
 * gives the host DRAIN_GRACE_MS to take the tail, then drops what is left. */
#define DRAIN_GRACE_MS 2000

static bool drain_needed(const struct agent *a)
{
	return a->o.serve && a->o.transport == HGT_TRANSPORT_FIFOS &&
	       (host_dead(a) || (a->o.stop && *a->o.stop));
}

static void drain_start(struct agent *a, struct drain *d)
{
	*d = (struct drain){ .a = a };
	if (drain_needed(a) && !drain_open(a, d)) {
		d->from_ms = hgt__now_ms() + (host_dead(a) ? 0 : DRAIN_GRACE_MS);
		d->started = !hgt__thread_create(&d->thread, drain_main, d);
	}
}

/* After the readers stopped: the last bytes they wrote go too. */
static void drain_end(struct drain *d)
{
	if (d->started) {
		size_t n;

		__atomic_store_n(&d->stop, 1, __ATOMIC_RELEASE);
		hgt__thread_join(d->thread);
		while (host_dead(d->a) && (n = drain_fds(d, 0)))
			d->dropped += n;
	}
	drain_close(d);
}

/*
 * The pages spliced into FIFOs (or a pipe on stdout) are the ring buffer's until the host
 * reads them: the instance goes only after (hgt__record_wait_read(); removed before, the
 * host's read crashes its kernel). A host that reads nothing for the silence limit (2 s
 * once stopped by a signal, or with the host gone) leaves them: a service drops what its
 * own FIFOs hold, as it would before the next host's READY (at once when the host got no
 * END: what waits is no use to it); else the instance is kept.
 */
static void release_pages(struct agent *a, struct hgt_recorder *rec, bool ended)
{
	bool hurry = host_dead(a) || (a->o.stop && *a->o.stop);
	bool own = a->o.serve && a->o.transport == HGT_TRANSPORT_FIFOS;
	unsigned int ms = hurry ? DRAIN_GRACE_MS : silent_limit(a);
	int ret = own && !ended ? -EPIPE : hgt__record_wait_read(rec, ms, NULL);

	if (ret && own) {
		drain_now(a);
		if (a->o.log && ended)
			fprintf(a->o.log,
				"hgtrace agent: the host did not read the session's last pages: dropped\n");
	}
	hgt__record_set_log(rec, a->o.log); /* its instance kept, or not removable: said */
}

/* One recording: wait for the start (unless now), record until the stop, send the end.
 * Returns 0, 1 when it never started, or -errno. */
static int session(struct agent *a, bool now, unsigned int silent_ms)
{
	struct hgt_recorder *rec;
	struct hgt__meta_sink sink;
	struct drain drain;
	uint64_t cpu0, t0, cpu1, t1, cpu2, t2;
	int i, ret;

	a->in_session = a->o.serve;
	if (!now && wait_command(a, '1', silent_ms, true)) {
		a->in_session = false;
		return 1; /* never started: nothing to send */
	}
	cpu0 = cpu_ns();
	t0 = hgt__now_ns();
	rec = hgt__record_start(&a->ro, a->data, describe, a);
	if (!rec)
		return -errno;
	/* at its stop, a host that reads nothing ends the drain as it ends a write */
	hgt__record_set_stall(rec, silent_limit(a));
	/* the host starts its command once every guest records */
	{
		uint64_t ts = 0;

		if (hgt__sync_clock_read(hgt__record_clock(rec), &ts))
			ts = 0;
		ret = send_msg(a, HGT__MSG_RECORDING, &ts, 8, NULL, 0);
	}
	sink = (struct hgt__meta_sink){ sink_meta, sink_option, a };
	trace_agent_state("recording", ret);
	if (a->o.log)
		fprintf(a->o.log, "hgtrace agent: recording (clock %s)\n", a->clock);
	if (now && a->o.started) {
		/* a host that records its own side says go ('1'); an older one never does */
		a->last_host_ms = hgt__now_ms();
		if (wait_command(a, '1', 3000, false) && a->o.log && !(a->o.stop && *a->o.stop))
			fprintf(a->o.log,
				"hgtrace agent: no word from the host in 3 s: starting\n");
		if (!(a->o.stop && *a->o.stop))
			a->o.started(a->o.ctx);
	}
	cpu1 = cpu_ns();
	t1 = hgt__now_ns();
	if (!ret)
		wait_command(a, '0', silent_ms, true);
	cpu2 = cpu_ns();
	t2 = hgt__now_ns();
	drain_start(a, &drain);
	i = hgt__record_halt(rec);
	drain_end(&drain);
	if (!ret)
		ret = i;
	if (!ret && drain.started && (host_dead(a) || drain.dropped)) {
		/* nobody to send the end to, or an end that would not match what came */
		if (a->o.log)
			fprintf(a->o.log,
				"hgtrace agent: stopped: the host %s; what it did not read was dropped (%zu bytes)\n",
				host_dead(a) ? "is gone" : "did not read for 2 s", drain.dropped);
		ret = 1;
	}
	if (!ret)
		ret = hgt__record_describe(rec, &sink, HGT__DESCRIBE_STATS | HGT__DESCRIBE_END);
	if (!ret) {
		/* lost events per CPU are in the CPUSTAT options; our own cost for the summary */
		/* the page bytes of each CPU channel: the host is done when it has them all */
		uint64_t end[5] = { 0, cpu_ns() - cpu0, hgt__now_ns() - t0, cpu2 - cpu1, t2 - t1 };
		uint64_t *b = malloc(8 * (size_t)a->nr_cpus), pages = 0;

		if (!b) {
			ret = -ENOMEM;
		} else {
			for (i = 0; i < a->nr_cpus; i++)
				pages += b[i] = hgt__record_cpu_bytes(rec, i);
			ret = send_msg(a, HGT__MSG_END, end, sizeof(end), b,
				       8 * (size_t)a->nr_cpus);
			free(b);
		}
		if (a->o.log && !ret)
			fprintf(a->o.log,
				"hgtrace agent: stopped: %.1f ms of CPU in %.3f s of recording (%.3f%% of one CPU), %.1f ms in all; %.3f MB of pages (%s), %.3f ms of CPU per MB; %llu probes answered\n",
				(double)end[3] / 1e6, (double)end[4] / 1e9,
				end[4] ? 100.0 * (double)end[3] / (double)end[4] : 0.0,
				(double)end[1] / 1e6, (double)pages / 1e6, hgt__record_how(rec),
				pages ? (double)end[3] / 1e6 / ((double)pages / 1e6) : 0.0,
				(unsigned long long)a->probes);
	}
	trace_agent_state("stopped", ret);
	if (a->o.log && ret < 0)
		fprintf(a->o.log, "hgtrace agent: stopped: %s\n", hgt_last_error());
	a->clock = a->ro.clock;
	release_pages(a, rec, !ret);
	hgt_record_free(rec);
	a->in_session = false;
	return ret;
}

static int listen_on(struct agent *a)
{
	return hgt__sock_listen(a->o.transport, a->o.host, a->o.port, "agent");
}

/* The next connection, waiting at most @ms (< 0: until a stop); -1 if none. */
static int accept_within(struct agent *a, int lfd, int ms)
{
	return hgt__sock_accept(lfd, ms, a->o.stop);
}

/* A dialed session's data connections: one per CPU, each naming its CPU and session. */
static int accept_data(struct agent *a, int lfd)
{
	int got = 0;

	while (got < a->nr_cpus) {
		int fd = accept_within(a, lfd, 10000);
		uint8_t h[16];
		uint32_t magic, cpu;
		uint64_t session;
		ssize_t n = 0, r;

		if (fd < 0)
			return hgt__errorf(ETIMEDOUT, "agent: %d of %d data connections came", got,
					   a->nr_cpus);
		while (n < 16 && (r = read(fd, h + n, (size_t)(16 - n))) > 0)
			n += r;
		memcpy(&magic, h, 4);
		memcpy(&cpu, h + 4, 4);
		memcpy(&session, h + 8, 8);
		if (n != 16 || magic != HGT__DATA_MAGIC || session != a->session ||
		    cpu >= (uint32_t)a->nr_cpus || a->data[cpu] >= 0) {
			if (a->o.log)
				fprintf(a->o.log, "hgtrace agent: a data connection refused\n");
			close(fd);
			continue;
		}
		a->data[cpu] = fd;
		got++;
	}
	return 0;
}

/* serve --listen: each host dials in; one session per control connection. */
static int serve_listening(struct agent *a)
{
	int lfd = listen_on(a), i, ret = 0;

	if (lfd < 0)
		return lfd;
	if (a->o.log)
		fprintf(a->o.log, "hgtrace agent: %d CPUs, serving sessions on %s port %u\n",
			a->nr_cpus, a->o.transport == HGT_TRANSPORT_VSOCK ? "vsock" : "tcp",
			a->o.port);
	while (!(a->o.stop && *a->o.stop)) {
		int fd = accept_within(a, lfd, -1);

		if (fd < 0)
			break;
		a->ctl_r = a->ctl_w = fd;
		a->in_len = a->in_pos = 0;
		a->mhdr_got = 0;
		a->last_host_ms = hgt__now_ms();
		if (!wait_command(a, 'C', 30000, false)) {
			uint8_t r[16];
			uint32_t v[2] = { (uint32_t)a->nr_cpus, (uint32_t)getpagesize() };

			a->last_host_ms = hgt__now_ms();
			a->session = hgt_trace_id_generate();
			memcpy(r, &a->session, 8);
			memcpy(r + 8, v, 8);
			ret = send_msg(a, HGT__MSG_READY, r, sizeof(r), NULL, 0);
			if (!ret)
				ret = accept_data(a, lfd);
			if (!ret)
				ret = send_data_headers(a);
			if (!ret)
				ret = session(a, false, silent_limit(a));
			if (ret < 0 && a->o.log)
				fprintf(a->o.log, "hgtrace agent: session failed: %s\n",
					hgt_last_error());
			ret = 0;
		}
		for (i = 0; i < a->nr_cpus; i++)
			if (a->data[i] >= 0) {
				close(a->data[i]);
				a->data[i] = -1;
			}
		close(fd);
		a->ctl_r = a->ctl_w = -1;
	}
	close(lfd);
	return ret;
}

/* A clock both sides read from user space, so that the host can sync it (the default
 * "local" cannot be): x86-tsc where the kernel offers it, else mono; NULL: neither. */
static const char *syncable_clock(void)
{
	static const char *const want[] = { "x86-tsc", "mono" };
	char path[4096], buf[512];
	const char *dir = tracefs_tracing_dir();

	snprintf(path, sizeof(path), "%s/trace_clock", dir ? dir : "/sys/kernel/tracing");
	if (hgt__read_small(path, buf, sizeof(buf)) <= 0)
		return NULL;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		size_t n = strlen(want[i]);

		for (const char *p = strstr(buf, want[i]); p; p = strstr(p + 1, want[i]))
			if ((p == buf || p[-1] == ' ' || p[-1] == '[') &&
			    (p[n] == ' ' || p[n] == ']' || p[n] == '\n' || !p[n]) &&
			    hgt_trace_clock_readable(want[i]))
				return want[i];
	}
	return NULL;
}

int hgt_agent_run(const struct hgt_agent_opts *opts)
{
	struct agent a = { .ctl_r = -1, .ctl_w = -1 };
	int i, ret;

	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(a.o) || !opts->record)
		return -EINVAL;
	memcpy(&a.o, opts, opts->sz);
	if ((a.o.transport == HGT_TRANSPORT_PORTS || a.o.transport == HGT_TRANSPORT_FIFOS) &&
	    !a.o.dir)
		return hgt__errorf(EINVAL, "agent: no directory for the ports or FIFOs");
	if (a.o.serve && !a.o.listen && a.o.transport != HGT_TRANSPORT_PORTS &&
	    a.o.transport != HGT_TRANSPORT_FIFOS)
		return hgt__errorf(
			EINVAL,
			"agent: --serve works over virtio-serial ports or FIFOs, or listening (--listen)");
	if (a.o.listen && (!a.o.serve || (a.o.transport != HGT_TRANSPORT_TCP &&
					  a.o.transport != HGT_TRANSPORT_VSOCK)))
		return hgt__errorf(EINVAL, "agent: --listen is for --serve over TCP or vsock");
	if (a.o.trace_cmd) {
		if (!a.o.listen)
			return hgt__errorf(EINVAL, "agent: --trace-cmd is for --serve --listen");
		return hgt__tc_agent_serve(&a.o);
	}
	a.ro = *a.o.record;
	if (a.o.now && !a.ro.clock)
		a.ro.clock = syncable_clock(); /* guest-driven: the host records in it */
	a.clock = a.ro.clock;
	a.nr_cpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	a.data = malloc(sizeof(int) * (size_t)a.nr_cpus);
	if (!a.data)
		return -ENOMEM;
	for (i = 0; i < a.nr_cpus; i++)
		a.data[i] = -1;
	if (a.o.transport == HGT_TRANSPORT_TCP && a.o.log)
		fprintf(a.o.log,
			"hgtrace agent: WARNING: TCP is unauthenticated and unencrypted: anyone on the path can read or inject trace data\n");
	if (a.o.listen) {
		ret = serve_listening(&a);
		goto out;
	}
	ret = open_channels(&a);
	if (ret && a.ctl_r >= 0 && host_said_no(&a))
		ret = said_no(&a); /* a data channel refused: the host's reason, if it gave one */
	if (ret)
		goto out;
	trace_agent_channels(a.nr_cpus, transport_name(a.o.transport));
	if (a.o.serve) {
		/* a service: each session starts with the host's CONFIG; nothing is written
		 * before it, so no stale bytes wait in the ports for the next host */
		if (a.o.log)
			fprintf(a.o.log, "hgtrace agent: %d CPUs, serving sessions\n", a.nr_cpus);
		for (;;) {
			a.have_config = false;
			a.host_lost = false;
			/* what the last host left unread, or a message it cut off, is not the
			 * next host's: its CONFIG is parsed from a clean start */
			if (!a.next_cfg) {
				a.in_len = a.in_pos = 0;
				a.mhdr_got = 0;
			}
			/* no heartbeats between sessions: with no host, its FIFO would fill
			 * (after hours) and the agent block in its write */
			a.last_sent_ms = 0;
			if (a.next_cfg) { /* it came during the last session */
				ret = take_config(&a, a.next_cfg, a.next_cfg_len);
				free(a.next_cfg);
				a.next_cfg = NULL;
				if (ret)
					continue;
			} else {
				/* between sessions: the last one's recorder is freed */
				trace_agent_state("idle", 0);
				if (wait_command(&a, 'C', 0, true))
					break;
			}
			/* what a session whose host died left in the FIFOs goes before the
			 * new host's READY: nothing old follows it */
			if (a.o.transport == HGT_TRANSPORT_FIFOS)
				drain_now(&a);
			a.last_host_ms = hgt__now_ms();
			a.session = hgt_trace_id_generate();
			ret = send_msg(&a, HGT__MSG_READY, &a.session, 8, NULL, 0);
			trace_agent_state("ready", ret);
			if (!ret)
				ret = send_data_headers(&a);
			if (!ret)
				ret = session(&a, false, silent_limit(&a));
			if (ret < 0 && a.o.log)
				fprintf(a.o.log, "hgtrace agent: session failed: %s\n",
					hgt_last_error());
			ret = 0;
			if (a.o.stop && *a.o.stop)
				break;
		}
		goto out;
	}
	a.session = hgt_trace_id_generate();
	ret = send_msg(&a, HGT__MSG_READY, &a.session, 8, NULL, 0);
	if (!ret)
		ret = send_data_headers(&a);
	if (ret && host_said_no(&a))
		ret = said_no(&a); /* a data channel reset: the host refused the agent or left */
	if (ret)
		goto out;
	if (a.o.transport == HGT_TRANSPORT_STDOUT)
		a.o.now = true;
	if (a.o.log)
		fprintf(a.o.log, "hgtrace agent: %d CPUs, %s\n", a.nr_cpus,
			a.o.now ? "starting" : "waiting for the host's start ('1')");
	ret = session(&a, a.o.now, 0);
	if (ret > 0 && a.host_gone && !(a.o.stop && *a.o.stop))
		/* a one-shot agent whose host left (or refused it) before the start: an error,
		 * said, never a silent success */
		ret = said_no(&a);
	if (ret > 0)
		ret = 0;
out:
	for (i = 0; i < a.nr_cpus; i++)
		if (a.data[i] >= 0)
			close(a.data[i]);
	if (a.ctl_w >= 0 && a.ctl_w != a.ctl_r)
		close(a.ctl_w);
	if (a.ctl_r >= 0)
		close(a.ctl_r);
	free(a.data);
	free(a.msg);
	free(a.next_cfg);
	free(a.cfg);
	free(a.cfg_events);
	return ret;
}
