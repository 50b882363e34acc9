// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-CPU cursors: stream one CPU's ring-buffer pages from the file with bounded memory
 * (a window of pages, or one decompressed chunk), validate each page header, and decode
 * its events as libtraceevent's kbuffer does (subbuf.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "subbuf.h"
#include "tracedat-local.h"

#define WINDOW_PAGES 16
#define MISSED_EVENTS HGT__MISSED_EVENTS
#define MISSED_STORED HGT__MISSED_STORED
#define COMMIT_MASK HGT__COMMIT_MASK

struct hgt_cursor {
	struct hgt_input *in;
	int fd;		  /* the file its pages are in: @in's, or elsewhere */
	const char *name; /* and its name, for messages */
	int cpu;
	uint32_t page_size;
	uint32_t hdr_size;
	uint64_t off, end; /* remaining file range of this CPU's data */

	uint8_t *win;	  /* window: pages read or decompressed, followed by zeroed slack */
	size_t win_cap;	  /* bytes allocated for pages (slack not included) */
	size_t win_zero;  /* from here to the slack's end, the window is all zero bytes */
	size_t win_pages; /* pages in the window */
	size_t win_idx;	  /* next page to load */
	uint64_t win_off; /* file offset of the window (page 0, or the chunk) */

	bool compressed;
	uint32_t chunks_left;
	uint8_t *cbuf;
	size_t cbuf_cap;
	void *dctx;

	struct hgt__subbuf sb;
	uint8_t *page;	   /* current page, NULL when none is loaded */
	uint64_t page_off; /* its file offset (uncompressed) or its chunk's */
	uint32_t commit;   /* bytes of event data in the current page */
	uint8_t *last;	   /* last event returned in this page */
	int events_in_page;
	bool at_start;
	uint64_t page_ts;
	struct hgt_loss loss;
};

static int grow_window(struct hgt_cursor *c, size_t bytes)
{
	uint8_t *w;

	if (bytes <= c->win_cap)
		return 0;
	w = realloc(c->win, bytes + HGT__PAGE_SLACK);
	if (!w)
		return -ENOMEM;
	/* the new bytes past the old slack's end (all of it the first time) */
	memset(w + (c->win ? c->win_cap + HGT__PAGE_SLACK : 0), 0,
	       c->win ? bytes - c->win_cap : bytes + HGT__PAGE_SLACK);
	if (!c->win)
		c->win_zero = 0;
	c->win = w;
	c->win_cap = bytes;
	return 0;
}

/* @len bytes of pages are about to be written at the window's start. */
static void window_writing(struct hgt_cursor *c, size_t len)
{
	if (len > c->win_zero)
		c->win_zero = len;
}

/* They were: the bytes past them are zeroed up to where zeros began (the slack after them
 * is then zero bytes, without zeroing the whole slack each time). */
static void window_written(struct hgt_cursor *c, size_t len)
{
	if (c->win_zero > len)
		memset(c->win + len, 0, c->win_zero - len);
	c->win_zero = len;
}

/**
 * hgt_cursor_open - a streaming cursor over one CPU of one buffer.
 */
struct hgt_cursor *hgt_cursor_open(struct hgt_input *in, int buffer, int cpu)
{
	const struct hgt_buffer *b = hgt_input_buffer(in, buffer);
	struct hgt_cursor *c;

	if (!b || cpu < 0 || cpu >= b->nr_cpus || !in->tep) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->in = in;
	c->fd = in->fd;
	c->name = in->path;
	if (buffer == 0 && cpu < in->bufs[0].nr_away && in->bufs[0].away[cpu].fd >= 0) {
		c->fd = in->bufs[0].away[cpu].fd;
		c->name = in->bufs[0].away[cpu].name;
	}
	c->cpu = cpu;
	c->page_size = b->page_size;
	c->hdr_size = 8 + (uint32_t)in->kernel_long_size;
	c->compressed = b->compressed;
	if (b->cpus[cpu].present) {
		c->off = b->cpus[cpu].offset;
		c->end = b->cpus[cpu].offset + b->cpus[cpu].size;
	}
	c->sb.long8 = in->kernel_long_size == 8;
	c->sb.big = in->big_endian;
	if (c->compressed && b->cpus[cpu].present) {
		uint8_t cnt[4];

		/* The stored size counts the chunks, not the u32 chunk count before them. */
		c->end += 4;
		c->dctx = hgt__dctx_new(in);
		if (c->end > in->file_size || c->end - c->off < 4) {
			hgt__error(in, c->off, EBADMSG,
				   "cpu %d: compressed data has no chunk count", cpu);
			errno = EBADMSG;
			goto fail;
		}
		if (hgt__pread_all(in, cnt, 4, c->off)) {
			errno = EIO;
			goto fail;
		}
		c->chunks_left = hgt__get32(in, cnt);
		c->off += 4;
	}
	if (grow_window(c, (size_t)c->page_size * (c->compressed ? 10 : WINDOW_PAGES)))
		goto fail;
	return c;
fail:
	hgt_cursor_close(c);
	return NULL;
}

void hgt_cursor_close(struct hgt_cursor *c)
{
	if (!c)
		return;
	hgt__dctx_free(c->in, c->dctx);
	free(c->win);
	free(c->cbuf);
	free(c);
}

/* Fill the window with the next pages. Returns 1 when pages were read, 0 at the end. */
static int fill_window(struct hgt_cursor *c)
{
	struct hgt_input *in = c->in;
	int ret;

	c->win_pages = 0;
	c->win_idx = 0;
	if (!c->compressed) {
		uint64_t avail = c->end > c->off ? (c->end - c->off) / c->page_size : 0;
		size_t n = avail < WINDOW_PAGES ? (size_t)avail : WINDOW_PAGES;

		if (!n)
			return 0;
		window_writing(c, n * c->page_size);
		ret = hgt__pread_from(in, c->fd, c->name, c->win, (uint64_t)n * c->page_size,
				      c->off);
		if (ret)
			return ret;
		window_written(c, n * c->page_size);
		c->win_off = c->off;
		c->off += (uint64_t)n * c->page_size;
		c->win_pages = n;
		return 1;
	}
	while (c->chunks_left) {
		uint8_t sz[8];
		uint32_t csize, usize;

		if (c->end - c->off < 8)
			return hgt__error(
				in, c->off, EBADMSG,
				"cpu %d: chunk header lies past the CPU's data (%u chunks still expected)",
				c->cpu, c->chunks_left);
		ret = hgt__pread_all(in, sz, 8, c->off);
		if (ret)
			return ret;
		csize = hgt__get32(in, sz);
		usize = hgt__get32(in, sz + 4);
		if (csize > c->end - c->off - 8)
			return hgt__error(
				in, c->off, EBADMSG,
				"cpu %d: chunk claims %u compressed bytes, %llu remain in the CPU's data",
				c->cpu, csize, (unsigned long long)(c->end - c->off - 8));
		if (usize > HGT__MAX_CHUNK || usize % c->page_size)
			return hgt__error(
				in, c->off, EBADMSG,
				"cpu %d: chunk claims %u uncompressed bytes (not a multiple of the %u-byte page, or beyond %llu)",
				c->cpu, usize, c->page_size, (unsigned long long)HGT__MAX_CHUNK);
		if (csize > c->cbuf_cap) {
			uint8_t *n = realloc(c->cbuf, csize);

			if (!n)
				return -ENOMEM;
			c->cbuf = n;
			c->cbuf_cap = csize;
		}
		ret = grow_window(c, usize);
		if (ret)
			return ret;
		ret = hgt__pread_all(in, c->cbuf, csize, c->off + 8);
		if (ret)
			return ret;
		window_writing(c, usize);
		ret = hgt__decompress(in, c->dctx, c->cbuf, csize, c->win, usize, c->off);
		if (ret)
			return ret;
		window_written(c, usize);
		c->win_off = c->off;
		c->off += 8 + (uint64_t)csize;
		c->chunks_left--;
		c->win_pages = usize / c->page_size;
		if (c->win_pages)
			return 1;
	}
	return 0;
}

int hgt__cursor_next_pages(struct hgt_cursor *c, const uint8_t **pages, size_t *len)
{
	int ret = fill_window(c);

	if (ret <= 0)
		return ret;
	*pages = c->win;
	*len = c->win_pages * c->page_size;
	return 1;
}

static int stuck(struct hgt_cursor *c)
{
	return hgt__error_at(
		c->in, c->name, c->page_off, EBADMSG,
		"cpu %d: padding at page offset %u leads back to offset %u: the page's events cannot be walked",
		c->cpu, c->hdr_size + c->sb.curr, c->hdr_size + c->sb.next);
}

/* Load the next non-empty page: its first event, if any, is current. Returns 1, 0 at the
 * end, or a negative errno. */
static int next_page(struct hgt_cursor *c)
{
	struct hgt_input *in = c->in;

	for (;;) {
		uint64_t commit;
		uint32_t size;
		uint8_t *p;

		if (c->win_idx >= c->win_pages) {
			int ret = fill_window(c);

			if (ret <= 0)
				return ret;
		}
		p = c->win + c->win_idx * c->page_size;
		c->page_off = c->compressed ? c->win_off : c->win_off + c->win_idx * c->page_size;
		c->win_idx++;
		commit = in->kernel_long_size == 8 ? hgt__get64(in, p + 8) : hgt__get32(in, p + 8);
		size = (uint32_t)(commit & COMMIT_MASK);
		if (size > c->page_size - c->hdr_size)
			return hgt__error_at(
				in, c->name, c->page_off, EBADMSG,
				"cpu %d: page commit size %u exceeds the page (%u bytes of data)%s",
				c->cpu, size, c->page_size - c->hdr_size,
				c->compressed ? " (in the compressed chunk here)" : "");
		if (commit & MISSED_EVENTS) {
			c->loss.pages_with_loss++;
			if ((commit & MISSED_STORED) &&
			    size + (uint32_t)in->kernel_long_size <= c->page_size - c->hdr_size) {
				const uint8_t *m = p + c->hdr_size + size;

				c->loss.events_lost += in->kernel_long_size == 8
							       ? hgt__get64(in, m)
							       : hgt__get32(in, m);
			} else {
				c->loss.pages_unknown_count++;
			}
		}
		if (!size)
			continue;
		c->page = p;
		c->commit = size;
		c->page_ts = hgt__get64(in, p);
		c->last = NULL;
		c->events_in_page = 0;
		return hgt__subbuf_load(&c->sb, p) < 0 ? stuck(c) : 1;
	}
}

/**
 * hgt_cursor_next - the next event of this CPU, with its raw timestamp.
 */
int hgt_cursor_next(struct hgt_cursor *c, struct tep_record *rec)
{
	for (;;) {
		uint8_t *data;
		int size;

		if (!c->page) {
			int ret = next_page(c);

			if (ret <= 0)
				return ret;
			/* the walk is on the first event, or past the page's end */
			ret = c->sb.curr < c->sb.size;
			if (!ret) {
				c->page = NULL;
				continue;
			}
		} else {
			int ret = hgt__subbuf_next(&c->sb);

			if (ret < 0)
				return stuck(c);
			if (!ret) {
				c->page = NULL;
				continue;
			}
		}
		data = (uint8_t *)c->sb.data + c->sb.index;
		size = hgt__subbuf_size(&c->sb);
		if (data <= c->last || ++c->events_in_page > (int)(c->page_size / 4) ||
		    (uint64_t)(data - c->page) + (uint64_t)size > c->hdr_size + c->commit ||
		    size < 0)
			return hgt__error_at(
				c->in, c->name, c->page_off, EBADMSG,
				"cpu %d: event at page offset %ld claims %d bytes, beyond the page's %u committed bytes",
				c->cpu, (long)(data - c->page), size, c->commit);
		c->at_start = c->last == NULL;
		c->last = data;
		memset(rec, 0, sizeof(*rec));
		rec->ts = c->sb.ts;
		rec->cpu = c->cpu;
		rec->data = data;
		rec->size = size;
		rec->missed_events = hgt__subbuf_missed(&c->sb);
		rec->offset = c->page_off + (uint64_t)(data - c->page);
		return 1;
	}
}

uint64_t hgt_cursor_page_ts(const struct hgt_cursor *c)
{
	return c->page_ts;
}

bool hgt_cursor_at_page_start(const struct hgt_cursor *c)
{
	return c->at_start;
}

uint64_t hgt_cursor_file_offset(const struct hgt_cursor *c)
{
	return c->page_off;
}

void hgt_cursor_loss(const struct hgt_cursor *c, struct hgt_loss *loss)
{
	*loss = c->loss;
}

/**
 * hgt_input_cpu_uncompressed_size - sum of the chunk sizes of one CPU's data.
 */
uint64_t hgt_input_cpu_uncompressed_size(struct hgt_input *in, int buffer, int cpu)
{
	const struct hgt_buffer *b = hgt_input_buffer(in, buffer);
	uint64_t off, end, total = 0;
	uint32_t n, i;
	uint8_t v[8];

	if (!b || cpu < 0 || cpu >= b->nr_cpus || !b->cpus[cpu].present)
		return 0;
	if (!b->compressed)
		return b->cpus[cpu].size;
	off = b->cpus[cpu].offset;
	end = off + b->cpus[cpu].size + 4; /* the size does not count the chunk count */
	if (end > in->file_size || hgt__pread_all(in, v, 4, off))
		return 0;
	n = hgt__get32(in, v);
	off += 4;
	for (i = 0; i < n; i++) {
		if (end - off < 8 || hgt__pread_all(in, v, 8, off))
			return 0;
		total += hgt__get32(in, v + 4);
		off += 8 + (uint64_t)hgt__get32(in, v);
		if (off > end)
			return 0;
	}
	return total;
}
