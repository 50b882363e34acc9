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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include <hgtrace/peer.h>
#include <hgtrace/transport.h>

#include "trace-transport.h"
#include "../record/record-local.h"
#include "../tracedat/tracedat-local.h"
#include "proto.h"

struct agent {
	struct hgt_agent_opts o;
	int ctl_r, ctl_w;
	int *data;
	int nr_cpus;
	uint64_t session;
	char cmd[256]; /* host commands read, not yet used */
	size_t cmd_len, cmd_pos;
};

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
	ret = hgt__write_full(a->ctl_w, hdr, sizeof(hdr));
	if (!ret && hn)
		ret = hgt__write_full(a->ctl_w, h, hn);
	if (!ret && n)
		ret = hgt__write_full(a->ctl_w, p, n);
	if (ret)
		return hgt__errorf(-ret, "agent: control channel: %s", strerror(-ret));
	return 0;
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

static int open_channels(struct agent *a)
{
	char name[64];
	int i;

	switch (a->o.transport) {
	case HGT_TRANSPORT_STDOUT:
		/* no host: no commands, metadata nowhere, raw pages to stdout */
		a->ctl_r = -1;
		a->ctl_w = open("/dev/null", O_WRONLY | O_CLOEXEC);
		for (i = 0; i < a->nr_cpus; i++)
			a->data[i] = dup(STDOUT_FILENO);
		return a->ctl_w < 0 || a->data[0] < 0
			       ? hgt__errorf(errno, "agent: %s", strerror(errno))
			       : 0;
	case HGT_TRANSPORT_PORTS:
		a->ctl_r = open_path(a->o.dir, "agent-ctl-path", "", O_RDWR);
		if (a->ctl_r < 0)
			return a->ctl_r;
		a->ctl_w = a->ctl_r;
		break;
	case HGT_TRANSPORT_FIFOS:
		a->ctl_r = open_path(a->o.dir, "agent-ctl-path", ".in", O_RDONLY);
		if (a->ctl_r < 0)
			return a->ctl_r;
		a->ctl_w = open_path(a->o.dir, "agent-ctl-path", ".out", O_WRONLY);
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
			a->data[i] = open_path(a->o.dir, name, "", O_WRONLY);
		else if (a->o.transport == HGT_TRANSPORT_FIFOS)
			a->data[i] = open_path(a->o.dir, name, ".out", O_WRONLY);
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

static int wait_command(struct agent *a, char want)
{
	for (;;) {
		struct pollfd p = { .fd = a->ctl_r, .events = POLLIN };
		ssize_t n;

		while (a->cmd_pos < a->cmd_len) {
			char c = a->cmd[a->cmd_pos++];

			trace_agent_command(c);
			if (c == want)
				return 0;
			if (c == '0' && want == '1')
				return 1;
		}
		if (a->o.stop && *a->o.stop)
			return 1;
		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(a->ctl_r, a->cmd, sizeof(a->cmd));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1; /* the host went away */
		a->cmd_len = (size_t)n;
		a->cmd_pos = 0;
	}
}

int hgt_agent_run(const struct hgt_agent_opts *opts)
{
	struct agent a = { .ctl_r = -1, .ctl_w = -1 };
	struct hgt_recorder *rec = NULL;
	struct hgt__meta_sink sink;
	int i, ret;

	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(a.o) || !opts->record)
		return -EINVAL;
	memcpy(&a.o, opts, opts->sz);
	if ((a.o.transport == HGT_TRANSPORT_PORTS || a.o.transport == HGT_TRANSPORT_FIFOS) &&
	    !a.o.dir)
		return hgt__errorf(EINVAL, "agent: no directory for the ports or FIFOs");
	a.nr_cpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	a.session = hgt_trace_id_generate();
	a.data = malloc(sizeof(int) * (size_t)a.nr_cpus);
	if (!a.data)
		return -ENOMEM;
	for (i = 0; i < a.nr_cpus; i++)
		a.data[i] = -1;
	if (a.o.transport == HGT_TRANSPORT_TCP && a.o.log)
		fprintf(a.o.log, "hgtrace agent: WARNING: TCP is unauthenticated and unencrypted: "
				 "anyone on the path can read or inject trace data\n");
	ret = open_channels(&a);
	if (!ret)
		ret = send_msg(&a, HGT__MSG_READY, &a.session, 8, NULL, 0);
	if (ret)
		goto out;
	trace_agent_channels(a.nr_cpus, transport_name(a.o.transport));
	if (a.o.transport == HGT_TRANSPORT_STDOUT)
		a.o.now = true;
	/* every data channel says which CPU and session it carries (raw pages only on stdout) */
	for (i = 0; i < a.nr_cpus && !ret && a.o.transport != HGT_TRANSPORT_STDOUT; i++) {
		uint32_t h[4] = { HGT__DATA_MAGIC, HGT__PROTO_VERSION, (uint32_t)i,
				  (uint32_t)getpagesize() };
		uint8_t b[HGT__DATA_HDR];

		memcpy(b, h, 16);
		memcpy(b + 16, &a.session, 8);
		ret = hgt__write_full(a.data[i], b, sizeof(b));
		if (ret)
			ret = hgt__errorf(-ret, "agent: cpu %d data channel: %s", i,
					  strerror(-ret));
	}
	if (ret)
		goto out;
	if (a.o.log)
		fprintf(a.o.log, "hgtrace agent: %d CPUs, %s\n", a.nr_cpus,
			a.o.now ? "starting" : "waiting for the host's start ('1')");
	if (!a.o.now && wait_command(&a, '1'))
		goto out; /* never started: nothing to send */
	rec = hgt__record_start(a.o.record, a.data);
	if (!rec) {
		ret = -errno;
		goto out;
	}
	{
		uint8_t h[24];
		uint32_t v[4] = { HGT__PROTO_VERSION, (uint32_t)a.nr_cpus, (uint32_t)getpagesize(),
				  (uint32_t)sizeof(long) };
		const char *clock = hgt__record_clock(rec);

		memcpy(h, v, 16);
		memcpy(h + 16, &a.session, 8);
		ret = send_msg(&a, HGT__MSG_HELLO, h, sizeof(h), clock, strlen(clock) + 1);
	}
	sink = (struct hgt__meta_sink){ sink_meta, sink_option, &a };
	if (!ret)
		ret = hgt__record_describe(rec, &sink, false);
	trace_agent_state("recording", ret);
	if (a.o.log)
		fprintf(a.o.log, "hgtrace agent: recording\n");
	if (!ret)
		wait_command(&a, '0');
	i = hgt__record_halt(rec);
	if (!ret)
		ret = i;
	if (!ret)
		ret = hgt__record_describe(rec, &sink, true); /* cmdlines of the end, stats */
	if (!ret) {
		uint64_t lost = 0; /* per CPU, the kernel's overruns are in the CPUSTAT options */

		ret = send_msg(&a, HGT__MSG_END, &lost, 8, NULL, 0);
	}
	trace_agent_state("stopped", ret);
	if (a.o.log)
		fprintf(a.o.log, "hgtrace agent: stopped%s%s\n", ret ? ": " : "",
			ret ? hgt_last_error() : "");
out:
	for (i = 0; i < a.nr_cpus; i++)
		if (a.data[i] >= 0)
			close(a.data[i]);
	hgt_record_free(rec);
	if (a.ctl_w >= 0 && a.ctl_w != a.ctl_r)
		close(a.ctl_w);
	if (a.ctl_r >= 0)
		close(a.ctl_r);
	free(a.data);
	return ret;
}
