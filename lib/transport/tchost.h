/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The host's side of trace-cmd's agent protocol (tchost.c): a session's guest whose agent
 * is trace-cmd's own (`trace-cmd agent`), driven as `trace-cmd record -A` drives it. */
#ifndef HGT_TRANSPORT_TCHOST_H
#define HGT_TRANSPORT_TCHOST_H

#include <stdint.h>
#include <stdio.h>

#include <hgtrace/record.h>
#include <hgtrace/transport.h>

struct hgt__tchost_opts {
	const char *name;
	int transport; /* HGT_TRANSPORT_TCP, _VSOCK or _HVSOCK */
	const char *host;
	const char *path; /* HVSOCK: the VMM's UNIX socket */
	unsigned int cid, port;
	const struct hgt_record_opts *record; /* the guest's -e, -b, -M (its clock: @clock) */
	const char *const *extra;	      /* trace-cmd record options, sent as given */
	int nr_extra;
	const char *clock;  /* the host's trace clock: the guest's, and the ptp stamps' */
	const char *output; /* the guest's file */
	uint64_t host_trace_id;
	unsigned int sync_interval_ms; /* between ptp rounds (0: 1000) */
	FILE *log;
	volatile int *stop;
};

struct hgt__tchost;

/* Dial the agent, ask for the recording, start the time sync, take the metadata and the
 * data connections: the guest records when this returns. NULL with the error said. */
struct hgt__tchost *hgt__tchost_start(const struct hgt__tchost_opts *o);
/* Stop it (the last sync round, CLOSE) and take the rest of its pages, its file not
 * written yet (once; hgt__tchost_stop() does it when this was not called). */
void hgt__tchost_halt(struct hgt__tchost *h);
/* Stop it (hgt__tchost_halt() unless done), take the rest of its pages and write its file
 * with the TIME_SHIFT; *@r says what happened (valid until hgt__tchost_free()). Returns 0
 * or -errno (said; r->fault too). */
int hgt__tchost_stop(struct hgt__tchost *h, struct hgt_listen_result *r);
void hgt__tchost_free(struct hgt__tchost *h);

#endif
