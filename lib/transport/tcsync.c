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
 *
 * trace-cmd 3.1.6's host takes an OFFSET whose ts or offset is 0 for "no sample" and drops
 * it, and a round that fails ends its sync loop at that CPU. Either way its CPUs end with
 * different sample counts, and it then writes a TIME_SHIFT option it cannot read back
 * (each CPU's count is written as the last CPU's). So once a round has begun, this side
 * always answers with a sample: a measured offset of exactly 0 (one kernel, one clock) is
 * sent as 1 ns, and a round in which none of the host's stamps matches a probe repeats
 * this CPU's last offset (or any CPU's), both counted for the session's log.
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
#define SYNC_CPUS 1024 /* CPUs whose last offset is kept, for a round without stamps */
#define STALL_MS 10000 /* the end waits while the host is heard from this often */
#define END_MS 120000  /* and this long at most */
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
	uint64_t heard;			   /* CLOCK_MONOTONIC ms of the last message */
	int64_t last[SYNC_CPUS];	   /* each CPU's last offset ... */
	bool have[SYNC_CPUS];		   /* ... once it has one */
	int64_t any_last;		   /* the last offset of any CPU */
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
	if (!ret) {
		__atomic_store_n(&t->heard, hgt__now_ms(), __ATOMIC_RELEASE);
		ret = hgt__tc_parse_time_sync(&m, ts);
	}
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

/*
 * hgt__ptp_answer - the sample a round answers with (see the top of this file).
 * @in: our clock around each probe and the host's stamps; @mid, @offset: the sample
 * (0, 0 for none); @rtt: the round trip of the probe it was measured with (0 if none).
 */
enum hgt__ptp_answer hgt__ptp_answer(const struct hgt__ptp_round *in, uint64_t *mid,
				     int64_t *offset, uint64_t *rtt)
{
	uint64_t best = UINT64_MAX;

	*mid = 0;
	*offset = 0;
	*rtt = 0;
	for (uint32_t i = 0; i < in->count; i++) {
		const uint8_t *p = in->stamps + 12 * (size_t)i;
		uint64_t host = hgt__tc_get64(p);
		uint32_t k = hgt__tc_get32(p + 8);

		if (!k || k > in->n || !host || in->r[k - 1] < in->s[k - 1])
			continue;
		if (in->r[k - 1] - in->s[k - 1] < best) {
			best = in->r[k - 1] - in->s[k - 1];
			*mid = in->s[k - 1] + best / 2;
			*offset = (int64_t)(host - *mid);
		}
	}
	if (best != UINT64_MAX) {
		*rtt = best;
		if (*offset)
			return HGT__PTP_MEASURED;
		*offset = 1;
		return HGT__PTP_NUDGED;
	}
	if (!in->have_last)
		return HGT__PTP_NONE;
	/* the middle of our fastest probe, at the last offset known */
	for (uint32_t k = 0; k < in->n; k++)
		if (in->r[k] >= in->s[k] && in->r[k] - in->s[k] < best) {
			best = in->r[k] - in->s[k];
			*mid = in->s[k] + best / 2;
		}
	if (!*mid)
		return HGT__PTP_NONE;
	*offset = in->last;
	return HGT__PTP_REPEATED;
}

/* The round's sample from the host's stamps (PROBES @ts), counted in t->res. 0, or -errno
 * for a PROBES out of shape (said). */
static int pick_offset(struct hgt__tcsync *t, int cpu, const struct hgt__tc_time_sync *ts,
		       uint64_t *mid, int64_t *offset)
{
	uint32_t count = hgt__tc_get32(ts->data + 4);
	bool mine = cpu >= 0 && cpu < SYNC_CPUS;
	struct hgt__ptp_round in = {
		.s = t->s,
		.r = t->r,
		.n = PTP_LOOP,
		.stamps = ts->data + 8,
		.count = count,
		.have_last = (mine && t->have[cpu]) || t->res.rounds,
		.last = mine && t->have[cpu] ? t->last[cpu] : t->any_last,
	};
	uint64_t rtt;

	if (count > PTP_LOOP || ts->len < 8 + 12 * (uint64_t)count)
		return hgt__errorf(EBADMSG, "%s: PROBES says %u stamps in %u bytes", peer, count,
				   ts->len);
	switch (hgt__ptp_answer(&in, mid, offset, &rtt)) {
	case HGT__PTP_NUDGED:
		t->res.nudged++;
		/* fallthrough */
	case HGT__PTP_MEASURED:
		if (rtt > t->res.worst_rtt)
			t->res.worst_rtt = rtt;
		if (!t->res.measured || rtt < t->res.best_rtt)
			t->res.best_rtt = rtt;
		t->res.measured++;
		break;
	case HGT__PTP_REPEATED:
		t->res.repeated++;
		break;
	case HGT__PTP_NONE:
		t->res.unsampled++;
		return 0;
	}
	if (mine) {
		t->last[cpu] = *offset;
		t->have[cpu] = true;
	}
	t->any_last = *offset;
	t->res.rounds++;
	t->res.last_offset = *offset;
	return 0;
}

/* One ptp round on CPU @cpu (-1: not said). */
static int ptp_round(struct hgt__tcsync *t, int cpu)
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
		ret = pick_offset(t, cpu, &ts, &mid, &offset);
	if (ret)
		return ret;
	out[0] = htobe64(mid);
	out[1] = htobe64((uint64_t)offset);
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
		if (ptp_round(t, cpu)) {
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
	/* trace-cmd's host runs a last round on each CPU after its CLOSE, then sends its
	 * STOP: wait while it is heard from (a slow guest may take seconds a round); its
	 * CLOSE counts as heard */
	__atomic_store_n(&t->heard, hgt__now_ms(), __ATOMIC_RELEASE);
	for (uint64_t t0 = hgt__now_ms(), now = t0;
	     wait && !__atomic_load_n(&t->done, __ATOMIC_ACQUIRE) && now - t0 < END_MS &&
	     (int64_t)(now - __atomic_load_n(&t->heard, __ATOMIC_ACQUIRE)) < STALL_MS;
	     now = hgt__now_ms())
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
		snprintf(t->res.fault, sizeof(t->res.fault),
			 "%s: no STOP from the host (silent for 10 s, or 120 s in all)", peer);
	if (res)
		*res = t->res;
	if (t->fd >= 0)
		close(t->fd);
	close(t->lfd);
	free(t);
}
