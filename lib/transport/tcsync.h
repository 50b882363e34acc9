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
	int64_t last_offset;	      /* the last one's offset (host - guest) */
	uint64_t best_rtt, worst_rtt; /* of the probes picked, in the guest clock */
	char fault[256];	      /* what ended the sync early ("" if nothing did) */
};

struct hgt__tcsync;

/* Listen beside the control connection @ctl_fd (its address, a free port: *@port) and
 * answer the host's sync in @clock from a thread of its own until hgt__tcsync_end().
 * NULL with the error said. */
struct hgt__tcsync *hgt__tcsync_start(int ctl_fd, const char *clock, volatile int *stop,
				      unsigned int *port);
/* With @wait (after the host's CLOSE), wait 5 s at most for its STOP; end the thread,
 * free @t; *@res (may be NULL): what happened. */
void hgt__tcsync_end(struct hgt__tcsync *t, bool wait, struct hgt__tcsync_result *res);

#endif
