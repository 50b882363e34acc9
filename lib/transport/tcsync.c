// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The guest's side of trace-cmd's time sync (ptp), for `agent --trace-cmd`. The host
 * dials the port named in TRACE_RESP and, for each guest CPU in turn, sends a TIME_SYNC
 * "none" PROBE naming the CPU. The guest (ptp's "server") then runs one round on that CPU:
 *   START {be32 series, be32 flags} ->, <- START (echoed);
 *   339 times: its clock read, PROBE {be32 k} ->, <- PROBE {be32 k}, its clock read
 *     (the host stamps each probe it answers with a raw marker in its own trace clock);
 *   END ->, <- PROBES {be32 series, be32 count, count x {be64 ts, be32 k}} (the host's
 *     stamps), then OFFSET {be64 ts, be64 offset} ->: of the probe whose round trip was the
 *     shortest, ts = the middle of its round trip in the guest clock and offset = the
 *     host's stamp - ts. The host keeps (ts, offset) for that CPU: host = guest + offset.
 * A STOP, or the connection closing, ends the sync. Every message is checked; the first
 * fault ends the sync and is kept for the session's log.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "../common/common-local.h"
#include "../common/thread.h"
#include "../record/record-local.h"
#include "tcmsg.h"
#include "tcsync.h"
#include "transport-local.h"

#define PTP_LOOP 339 /* probes a round, as trace-cmd sends */
#define PTP_START 1
#define PTP_PROBE 2
#define PTP_PROBES 3
#define PTP_OFFSET 4
#define PTP_END 5
#define PTP_FASTEST 1u /* flags: keep the fastest round trip; the host stamps with markers */
#define PTP_MARKER 2u

struct hgt__tcsync {
	int lfd, fd;
	char clock[32];
	volatile int *stop;
	pthread_t thread;
	bool started;
	int done;	       /* the thread has ended its sync */
	volatile int stop_now; /* the session ends: stop waiting */
	uint32_t series;
	struct hgt__tcsync_result res;
	uint8_t buf[HGT__TC_MSG_MAX];
	uint64_t s[PTP_LOOP], r[PTP_LOOP]; /* our clock around each probe */
};

static const char peer[] = "trace-cmd time sync";

static int fault(struct hgt__tcsync *t, int ret)
{
	if (!t->res.fault[0])
		snprintf(t->res.fault, sizeof(t->res.fault), "%s", hgt_last_error());
	return ret;
}

static int send_ptp(struct hgt__tcsync *t, uint32_t cmd, const void *p, size_t n)
{
	uint8_t out[64];

	return hgt__tc_send(t->fd, out, hgt__tc_build_time_sync(out, sizeof(out), "ptp", cmd, p, n),
			    peer);
}

static void quick_ack(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

/* The next TIME_SYNC of protocol @proto: 0 with *@ts set, or -errno (said). */
static int recv_sync(struct hgt__tcsync *t, const char *proto, struct hgt__tc_time_sync *ts)
{
	struct hgt__tc_msg m;
	int ret;

	/* trace-cmd writes a message's header and body apart: with Nagle on its side and our
	 * ACK delayed, each probe would wait 40 ms for it (TCP; vsock refuses this) */
	quick_ack(t->fd);
	ret = hgt__tc_recv(t->fd, t->buf, 10000, peer, &m);
	quick_ack(t->fd);
	if (!ret)
		ret = hgt__tc_parse_time_sync(&m, ts);
	if (!ret && strcmp(ts->proto, proto))
		ret = hgt__errorf(EBADMSG, "%s: protocol '%s' where '%s' was due", peer, ts->proto,
				  proto);
	return ret;
}

/* The next ptp packet, which must be @cmd with at least @min bytes. */
static int recv_ptp(struct hgt__tcsync *t, uint32_t cmd, uint32_t min, struct hgt__tc_time_sync *ts)
{
	int ret = recv_sync(t, "ptp", ts);

	if (!ret && (ts->cmd != cmd || ts->len < min))
		ret = hgt__errorf(EBADMSG, "%s: ptp packet %u of %u bytes where %u was due", peer,
				  ts->cmd, ts->len, cmd);
	return ret;
}

/* The probes' exchange: our clock around each. */
static int probe_loop(struct hgt__tcsync *t)
{
	struct hgt__tc_time_sync ts;
	int ret = 0;

	for (uint32_t k = 1; !ret && k <= PTP_LOOP; k++) {
		uint32_t be = htobe32(k);

		ret = hgt__sync_clock_read(t->clock, &t->s[k - 1]);
		if (!ret)
			ret = send_ptp(t, PTP_PROBE, &be, 4);
		if (!ret)
			ret = recv_ptp(t, PTP_PROBE, 4, &ts);
		if (!ret)
			ret = hgt__sync_clock_read(t->clock, &t->r[k - 1]);
		if (!ret && hgt__tc_get32(ts.data) != k)
			ret = hgt__errorf(EBADMSG, "%s: the answer to probe %u says %u", peer, k,
					  hgt__tc_get32(ts.data));
	}
	return ret;
}

/* The host's stamps (PROBES) against our reads: the fastest probe's (ts, offset). */
static int pick_offset(struct hgt__tcsync *t, const struct hgt__tc_time_sync *ts, uint64_t *mid,
		       int64_t *offset)
{
	uint32_t count = hgt__tc_get32(ts->data + 4);
	uint64_t best = UINT64_MAX;

	if (count > PTP_LOOP || ts->len < 8 + 12 * (uint64_t)count)
		return hgt__errorf(EBADMSG, "%s: PROBES says %u stamps in %u bytes", peer, count,
				   ts->len);
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *p = ts->data + 8 + 12 * (size_t)i;
		uint64_t host = hgt__tc_get64(p);
		uint32_t k = hgt__tc_get32(p + 8);

		if (!k || k > PTP_LOOP || !host || t->r[k - 1] < t->s[k - 1])
			continue;
		if (t->r[k - 1] - t->s[k - 1] < best) {
			best = t->r[k - 1] - t->s[k - 1];
			*mid = t->s[k - 1] + best / 2;
			*offset = (int64_t)(host - *mid);
		}
	}
	if (best == UINT64_MAX)
		return hgt__errorf(EBADMSG, "%s: none of the host's %u stamps matches a probe",
				   peer, count);
	if (best > t->res.worst_rtt)
		t->res.worst_rtt = best;
	if (!t->res.best_rtt || best < t->res.best_rtt)
		t->res.best_rtt = best;
	return 0;
}

/* One ptp round on this CPU. */
static int ptp_round(struct hgt__tcsync *t)
{
	struct hgt__tc_time_sync ts;
	uint32_t start[2] = { htobe32(++t->series), htobe32(PTP_FASTEST | PTP_MARKER) };
	uint64_t mid = 0, out[2];
	int64_t offset = 0;
	int ret = send_ptp(t, PTP_START, start, sizeof(start));

	if (!ret)
		ret = recv_ptp(t, PTP_START, 0, &ts);
	if (!ret)
		ret = probe_loop(t);
	if (!ret)
		ret = send_ptp(t, PTP_END, NULL, 0);
	if (!ret)
		ret = recv_ptp(t, PTP_PROBES, 8, &ts);
	if (!ret)
		ret = pick_offset(t, &ts, &mid, &offset);
	if (ret)
		return ret;
	out[0] = htobe64(mid);
	out[1] = htobe64((uint64_t)offset);
	t->res.rounds++;
	t->res.last_offset = offset;
	return send_ptp(t, PTP_OFFSET, out, sizeof(out));
}

/* Run this thread on guest CPU @cpu, as trace-cmd's guest does for each probe. */
static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void serve(struct hgt__tcsync *t)
{
	struct hgt__tc_time_sync ts;

	for (;;) {
		struct pollfd p = { t->fd, POLLIN, 0 };
		int cpu = -1;

		if ((t->stop && *t->stop) || t->stop_now)
			return;
		if (poll(&p, 1, 200) <= 0)
			continue;
		int r = recv_sync(t, "none", &ts);

		if (r) {
			/* the host may close the connection without a STOP */
			if (r != -ECONNRESET)
				fault(t, r);
			return;
		}
		if (ts.cmd == HGT__TC_TSYNC_STOP) {
			t->res.stopped = true;
			return;
		}
		if (ts.cmd != HGT__TC_TSYNC_PROBE) {
			hgt__errorf(EBADMSG, "%s: command %u, not PROBE or STOP", peer, ts.cmd);
			fault(t, -1);
			return;
		}
		if (ts.len == 2) { /* u16, the host's byte order (trace-cmd 3.1) */
			uint16_t c;

			memcpy(&c, ts.data, 2);
			cpu = c;
		} else if (ts.len >= 4) { /* be32 (later trace-cmd) */
			cpu = (int)hgt__tc_get32(ts.data);
		}
		pin(cpu);
		if (ptp_round(t)) {
			fault(t, -1);
			return;
		}
	}
}

static void *sync_main(void *arg)
{
	struct hgt__tcsync *t = arg;

	for (int ms = 0; t->fd < 0 && ms < 30000 && !t->stop_now && !(t->stop && *t->stop);
	     ms += 200)
		__atomic_store_n(&t->fd, hgt__sock_accept(t->lfd, 200, &t->stop_now),
				 __ATOMIC_RELEASE);
	if (t->fd < 0) {
		snprintf(t->res.fault, sizeof(t->res.fault), "%s: the host never connected", peer);
		return NULL;
	}
	t->res.connected = true;
	serve(t);
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

struct hgt__tcsync *hgt__tcsync_start(int ctl_fd, const char *clock, volatile int *stop,
				      unsigned int *port)
{
	struct hgt__tcsync *t = calloc(1, sizeof(*t));

	if (!t) {
		hgt__errorf(ENOMEM, "%s: out of memory", peer);
		return NULL;
	}
	t->fd = -1;
	t->stop = stop;
	snprintf(t->clock, sizeof(t->clock), "%s", clock);
	t->lfd = hgt__sock_listen_beside(ctl_fd, port, peer);
	if (t->lfd >= 0 && !hgt__thread_create(&t->thread, sync_main, t))
		t->started = true;
	if (!t->started) {
		if (t->lfd >= 0)
			close(t->lfd);
		free(t);
		return NULL;
	}
	return t;
}

void hgt__tcsync_end(struct hgt__tcsync *t, bool wait, struct hgt__tcsync_result *res)
{
	bool done;
	int fd;

	if (!t)
		return;
	if (!wait)
		t->stop_now = 1;
	/* the host's STOP comes right after its CLOSE: a round in progress may end first */
	for (int i = 0; wait && i < 500 && !__atomic_load_n(&t->done, __ATOMIC_ACQUIRE); i++)
		usleep(10000);
	done = __atomic_load_n(&t->done, __ATOMIC_ACQUIRE);
	/* a thread still waiting (for the host, or in a round) wakes to a closed socket */
	t->stop_now = 1;
	shutdown(t->lfd, SHUT_RDWR);
	fd = __atomic_load_n(&t->fd, __ATOMIC_ACQUIRE);
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
	hgt__thread_join(t->thread);
	if (wait && !done && !t->res.fault[0])
		snprintf(t->res.fault, sizeof(t->res.fault), "%s: no STOP from the host in 5 s",
			 peer);
	if (res)
		*res = t->res;
	if (t->fd >= 0)
		close(t->fd);
	close(t->lfd);
	free(t);
}
