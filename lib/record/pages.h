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
	int pipe[2]; /* the pages pass through this pipe */
	size_t held; /* bytes in pipe[] the destination has not taken yet */
};

int hgt__pages_init(struct hgt__pages *m, int src, int dst);
void hgt__pages_free(struct hgt__pages *m);
ssize_t hgt__pages_move(struct hgt__pages *m);
size_t hgt__pages_held(const struct hgt__pages *m);
ssize_t hgt__pages_read_held(struct hgt__pages *m, void *buf, size_t n);

struct kbuffer;

/* A CPU reader's pages from the ring buffer's mapping, written to its destination
 * (lib/record/ringmap.c). */
struct hgt__ringmap {
	int src;	    /* trace_pipe_raw, O_NONBLOCK, mapped */
	int dst;	    /* the CPU's file, or the caller's pipe, FIFO, socket or port */
	bool fifo;	    /* dst is a pipe or FIFO: written only when it has room */
	uint8_t *map;	    /* the meta page, then every sub-buffer */
	size_t len;	    /* of the mapping */
	uint32_t meta_size; /* the meta page's bytes */
	uint32_t page;	    /* a sub-buffer's bytes, its header counted */
	uint32_t id;	    /* the reader page: the sub-buffer the kernel lends us */
	uint32_t taken;	    /* its data bytes stored (or held) */
	const uint8_t *out; /* a page to go: the sub-buffer itself, or buf */
	size_t out_len, out_off;
	uint8_t *buf;	    /* a partial page put together */
	struct kbuffer *kb; /* to find the time before a partial page's events */
};

int hgt__ringmap_init(struct hgt__ringmap *m, int src, int dst, size_t page);
void hgt__ringmap_free(struct hgt__ringmap *m);
ssize_t hgt__ringmap_move(struct hgt__ringmap *m);
ssize_t hgt__ringmap_partial(struct hgt__ringmap *m);
size_t hgt__ringmap_held(const struct hgt__ringmap *m);
void hgt__subbuf_rest(struct kbuffer *kb, const uint8_t *sb, size_t page, uint32_t from,
		      uint32_t to, uint8_t *out);

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
