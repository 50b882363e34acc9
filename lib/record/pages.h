/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A CPU reader's whole pages, spliced to its destination with every byte counted
 * (lib/record/pages.c). */
#ifndef HGT_RECORD_PAGES_H
#define HGT_RECORD_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hgt__pages {
	int src;     /* trace_pipe_raw, O_NONBLOCK */
	int dst;     /* the CPU's file, or the caller's pipe, FIFO, socket or port */
	bool direct; /* dst is a pipe or FIFO: spliced straight into it */
	int pipe[2]; /* otherwise through this pipe */
	size_t held; /* bytes in pipe[] the destination has not taken yet */
};

int hgt__pages_init(struct hgt__pages *m, int src, int dst);
void hgt__pages_free(struct hgt__pages *m);
ssize_t hgt__pages_move(struct hgt__pages *m);
size_t hgt__pages_held(const struct hgt__pages *m);
ssize_t hgt__pages_read_held(struct hgt__pages *m, void *buf, size_t n);

/* When a CPU's partial page is due: what its ring holds unstored is no older than since_ms
 * (lib/record/pages.c). */
struct hgt__partial_clock {
	uint64_t since_ms; /* the oldest the unstored events can be */
	uint64_t idle_ms;  /* the last time the ring held no whole page */
};

void hgt__partial_start(struct hgt__partial_clock *pc, uint64_t now_ms);
void hgt__partial_idle(struct hgt__partial_clock *pc, uint64_t now_ms);
void hgt__partial_whole(struct hgt__partial_clock *pc);
void hgt__partial_flushed(struct hgt__partial_clock *pc, uint64_t now_ms);
bool hgt__partial_due(const struct hgt__partial_clock *pc, uint64_t now_ms, uint64_t flush_ms,
		      uint64_t poll_ms);

#endif
