/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One ring-buffer sub-buffer (a page of trace_pipe_raw) walked event by event, giving
 * what libtraceevent's kbuffer gives for it: each data event's payload, its timestamp and
 * size, and the missed-event count of the page's first. The layout is in
 * shared/spec/tracedat-format.md §7: a u32 header per event (type_len 5 bits, time delta
 * 27), padding (29), time extends (30) and absolute time stamps (31) skipped, their deltas
 * applied.
 *
 * kbuffer does this through a function pointer per word read and four calls per event:
 * 19 % of a one-thread report. Here it is inline, for the file's byte order. Where kbuffer
 * would loop for ever (a padding whose length takes the walk back to where it was, or
 * before), the walk stops instead: hgt__subbuf_next() returns -1. Everything else kbuffer
 * does, odd lengths and all, is done the same (tests/unit/test-subbuf.c compares the two on
 * every page of the test recordings and on random pages).
 *
 * Reads go up to 8 bytes past the committed size, as kbuffer's do: a page must be
 * followed by readable bytes (the cursor's window has zeroed slack).
 */
#ifndef HGT_TRACEDAT_SUBBUF_H
#define HGT_TRACEDAT_SUBBUF_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define HGT__SB_COMMIT_MASK ((1u << 27) - 1)
#define HGT__SB_MISSED (1ull << 31)
#define HGT__SB_MISSED_STORED (1ull << 30)
#define HGT__SB_TS_MSB (0xf8ull << 56) /* kept from the running time by an absolute stamp */

enum { HGT__SB_PADDING = 29, HGT__SB_TIME_EXTEND = 30, HGT__SB_TIME_STAMP = 31 };

struct hgt__subbuf {
	const uint8_t *data; /* the page's event data, after its header */
	uint64_t ts;	     /* the current event's timestamp */
	long long lost;	     /* missed events before the page: 0, a count, or -1 (not known) */
	uint32_t size;	     /* committed bytes of event data */
	uint32_t curr;	     /* offset in data of the current event's header */
	uint32_t index;	     /* ... of its payload */
	uint32_t next;	     /* ... of the next event's header */
	bool big;	     /* the file is big-endian */
	bool long8;	     /* the kernel's long is 8 bytes */
};

static inline uint32_t hgt__sb_u32(const struct hgt__subbuf *sb, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return sb->big ? __builtin_bswap32(v) : v;
#else
	return sb->big ? v : __builtin_bswap32(v);
#endif
}

static inline uint64_t hgt__sb_u64(const struct hgt__subbuf *sb, const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return sb->big ? __builtin_bswap64(v) : v;
#else
	return sb->big ? v : __builtin_bswap64(v);
#endif
}

static inline uint64_t hgt__sb_long(const struct hgt__subbuf *sb, const uint8_t *p)
{
	return sb->long8 ? hgt__sb_u64(sb, p) : hgt__sb_u32(sb, p);
}

/* The event at curr: its payload's offset and the next event's, the running time moved
 * by its delta. Returns its type_len. */
static inline unsigned hgt__sb_read(struct hgt__subbuf *sb)
{
	const uint8_t *p = sb->data + sb->curr;
	uint32_t word = hgt__sb_u32(sb, p), len;
	unsigned type_len = sb->big ? word >> 27 : word & 31;
	uint64_t delta = sb->big ? word & HGT__SB_COMMIT_MASK : word >> 5;

	p += 4;
	if (type_len - 1 < 28) { /* 1..28: a data event of type_len words */
		len = type_len * 4;
	} else if (type_len == 0) { /* its length in the next word, less that word */
		len = (hgt__sb_u32(sb, p) - 4 + 3) & ~3u;
		p += 4;
	} else if (type_len == HGT__SB_PADDING) { /* its length from the next word, on */
		len = hgt__sb_u32(sb, p);
	} else {
		uint64_t msb = type_len == HGT__SB_TIME_STAMP ? sb->ts & HGT__SB_TS_MSB : 0;

		delta = ((uint64_t)hgt__sb_u32(sb, p) << 27) + delta;
		delta |= msb;
		p += 4;
		len = 0;
	}
	if (type_len == HGT__SB_TIME_STAMP)
		sb->ts = delta;
	else
		sb->ts += delta;
	sb->index = (uint32_t)(p - sb->data);
	sb->next = sb->index + len;
	return type_len;
}

/* Moves to the next data event. Returns 1, 0 at the page's end, -1 when a padding takes
 * the walk back to where it was or before. */
static inline int hgt__sb_step(struct hgt__subbuf *sb)
{
	for (;;) {
		unsigned type_len;

		sb->curr = sb->next;
		if (sb->next >= sb->size)
			return 0;
		type_len = hgt__sb_read(sb);
		if (type_len < HGT__SB_PADDING)
			return 1;
		if (sb->next <= sb->curr)
			return -1;
	}
}

/**
 * hgt__subbuf_load - start on the sub-buffer at @page (its header of 8 + 4 or 8 bytes
 * first). Returns as hgt__subbuf_next() for the first event: 1 when there is one.
 */
static inline int hgt__subbuf_load(struct hgt__subbuf *sb, const uint8_t *page)
{
	uint64_t commit;

	sb->ts = hgt__sb_u64(sb, page);
	commit = hgt__sb_long(sb, page + 8);
	sb->data = page + (sb->long8 ? 16 : 12);
	sb->size = (uint32_t)commit & HGT__SB_COMMIT_MASK;
	if (!(commit & HGT__SB_MISSED))
		sb->lost = 0;
	else if (commit & HGT__SB_MISSED_STORED)
		sb->lost = (long long)hgt__sb_long(sb, sb->data + sb->size);
	else
		sb->lost = -1;
	sb->curr = sb->index = sb->next = 0;
	return hgt__sb_step(sb);
}

/**
 * hgt__subbuf_next - move to the next data event. Returns 1 (its payload at
 * sb->data + sb->index, hgt__subbuf_size() bytes, at sb->ts), 0 at the page's end, or -1
 * where kbuffer would loop for ever.
 */
static inline int hgt__subbuf_next(struct hgt__subbuf *sb)
{
	return hgt__sb_step(sb);
}

/* The current event's payload size, as kbuffer_event_size() gives it (negative for a
 * length word below 4). */
static inline int hgt__subbuf_size(const struct hgt__subbuf *sb)
{
	return (int)(sb->next - sb->index);
}

/* kbuffer_missed_events(): the page's count for an event at its very start, else 0. */
static inline int hgt__subbuf_missed(const struct hgt__subbuf *sb)
{
	return sb->curr ? 0 : (int)sb->lost;
}

#endif
