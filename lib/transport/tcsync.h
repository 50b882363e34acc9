/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The guest's side of trace-cmd's ptp time sync (tcsync.c), for agent --trace-cmd. */
#ifndef HGT_TRANSPORT_TCSYNC_H
#define HGT_TRANSPORT_TCSYNC_H

#include <stdbool.h>
#include <stdint.h>

struct hgt__tcsync_result {
	bool connected;		      /* the host dialed the time-sync port */
	bool stopped;		      /* and ended with its STOP */
	unsigned int rounds;	      /* ptp rounds answered (one per guest CPU each time) */
	unsigned int measured;	      /* of them, measured (the others repeated an offset) */
	unsigned int repeated;	      /* no host stamp matched: the CPU's last offset sent */
	unsigned int nudged;	      /* an offset of exactly 0 sent as 1 ns */
	unsigned int unsampled;	      /* no stamp and nothing to repeat: 0 sent (dropped) */
	int64_t last_offset;	      /* the last one's offset (host - guest) */
	uint64_t best_rtt, worst_rtt; /* of the probes picked, in the guest clock */
	char fault[256];	      /* what ended the sync early ("" if nothing did) */
};

struct hgt__tcsync;

/* One ptp round as the guest saw it: its clock around each probe k = 1..@n (s[k-1] before,
 * r[k-1] after), the host's @count stamps (PROBES' {be64 ts, be32 k} records), and the
 * last offset known for this CPU (or any), if @have_last. */
struct hgt__ptp_round {
	const uint64_t *s, *r;
	uint32_t n;
	const uint8_t *stamps;
	uint32_t count;
	bool have_last;
	int64_t last;
};

enum hgt__ptp_answer {
	HGT__PTP_MEASURED, /* the fastest probe the host stamped */
	HGT__PTP_NUDGED,   /* the same, measured 0 and sent as 1 ns */
	HGT__PTP_REPEATED, /* no stamp matched: the last offset, at our fastest probe */
	HGT__PTP_NONE,	   /* nothing to send: 0, 0 (trace-cmd drops it) */
};

enum hgt__ptp_answer hgt__ptp_answer(const struct hgt__ptp_round *in, uint64_t *mid,
				     int64_t *offset, uint64_t *rtt);

/* Listen beside the control connection @ctl_fd (its address, a free port: *@port) and
 * answer the host's sync in @clock from a thread of its own until hgt__tcsync_end().
 * NULL with the error said. */
struct hgt__tcsync *hgt__tcsync_start(int ctl_fd, const char *clock, volatile int *stop,
				      unsigned int *port);
/* With @wait (after the host's CLOSE), wait for its STOP while it is heard from (10 s of
 * silence, 120 s in all at most); end the thread, free @t; *@res (may be NULL): what
 * happened. */
void hgt__tcsync_end(struct hgt__tcsync *t, bool wait, struct hgt__tcsync_result *res);

#endif
