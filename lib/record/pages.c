// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A CPU reader's whole pages, spliced from trace_pipe_raw to its destination with every
 * byte accounted for.
 *
 * They pass through a pipe of our own, and what the destination (a file, a FIFO, a socket,
 * a port) has not taken yet stays counted there (held) and goes first next time: at the
 * stop too, before the partial page. Into a FIFO they went straight once, in one splice
 * taking only what room the FIFO had as its reader emptied it: the agent's drain of 200 MB
 * into the listener's FIFOs ran at 357-1282 MB/s (9 runs) against 1261-1909 through our
 * pipe, and with one core busy a writer paced at 1000 MB/s lost no marker in 5 runs of 11
 * against 10 of 11 (the other lost 360 of 200,000).
 *
 * libtracefs 1.6's tracefs_cpu_write() splices into a destination with SPLICE_F_NONBLOCK
 * and returns what that splice took; what a full FIFO or socket did not take stays in its
 * pipe unaccounted, so the pages before the last one of a stop were lost with no trace of
 * it (events missing, none counted as overwritten).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "pages.h"

/* What one splice asks for: the kernel moves no more than the pipe has room for. */
#define BATCH (1u << 20)
/* Our pipe's size: fewer splices per MB; the default (64 KB) where it is refused. */
#define PIPE_BYTES (1 << 20)

/**
 * hgt__pages_init - set up @m to move whole pages from @src (trace_pipe_raw, opened
 * O_NONBLOCK) to @dst. Returns 0 or -errno.
 */
int hgt__pages_init(struct hgt__pages *m, int src, int dst)
{
	m->src = src;
	m->dst = dst;
	m->held = 0;
	m->pipe[0] = m->pipe[1] = -1;
	if (pipe2(m->pipe, O_CLOEXEC))
		return -errno;
	fcntl(m->pipe[1], F_SETPIPE_SZ, PIPE_BYTES); /* refused: the default size */
	return 0;
}

/**
 * hgt__pages_free - close what hgt__pages_init() opened. Bytes still held are dropped:
 * see hgt__pages_held() first.
 */
void hgt__pages_free(struct hgt__pages *m)
{
	for (int i = 0; i < 2; i++) {
		if (m->pipe[i] >= 0)
			close(m->pipe[i]);
		m->pipe[i] = -1;
	}
	m->held = 0;
}

/* The held bytes to the destination, as many as it takes now. */
static ssize_t put_held(struct hgt__pages *m)
{
	ssize_t w = splice(m->pipe[0], NULL, m->dst, NULL, m->held,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE);

	if (w < 0)
		return -1; /* EAGAIN: no room now */
	m->held -= (size_t)w;
	return w;
}

/**
 * hgt__pages_move - move what is ready: the bytes held first, then whole pages.
 *
 * Returns the bytes that reached the destination (> 0), 0 when the ring buffer has no
 * whole page and nothing is held, or -1 with errno: EAGAIN when the destination has no
 * room (wait for POLLOUT on it), another for a failure of either side (ENOSPC, EPIPE;
 * what is held stays held).
 */
ssize_t hgt__pages_move(struct hgt__pages *m)
{
	ssize_t n;

	if (m->held)
		return put_held(m);
	n = splice(m->src, NULL, m->pipe[1], NULL, BATCH, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n <= 0)
		return n < 0 && errno == EAGAIN ? 0 : n; /* our pipe is empty: the ring's */
	m->held = (size_t)n;
	return put_held(m);
}

/**
 * hgt__pages_held - the bytes taken from the ring buffer that have not reached the
 * destination yet.
 */
size_t hgt__pages_held(const struct hgt__pages *m)
{
	return m->held;
}

/**
 * hgt__pages_read_held - copy out up to @n held bytes into @buf instead (the reader went
 * over to read/write: a destination that refuses splice). Returns the bytes, or -1.
 */
ssize_t hgt__pages_read_held(struct hgt__pages *m, void *buf, size_t n)
{
	ssize_t r = read(m->pipe[0], buf, n < m->held ? n : m->held);

	if (r > 0)
		m->held -= (size_t)r;
	return r;
}

/*
 * The partial page's clock. A read of the partial page at P takes every event before P:
 * what is left is no older than P. A whole page stored is not such a bound: the events
 * after it are in the page the kernel went on to when that one filled, which was after the
 * reader last found no whole page (idle_ms), and can be as old as that, not as the store.
 * Taking the store's time made a partial page as much as a poll late, on top of the
 * scheduling that flush_ms must also absorb.
 */

/** hgt__partial_start - a reader starting at @now_ms: nothing older is in its ring. */
void hgt__partial_start(struct hgt__partial_clock *pc, uint64_t now_ms)
{
	pc->since_ms = pc->idle_ms = now_ms;
}

/** hgt__partial_idle - at @now_ms the ring held no whole page (its reader found none). */
void hgt__partial_idle(struct hgt__partial_clock *pc, uint64_t now_ms)
{
	pc->idle_ms = now_ms;
}

/** hgt__partial_whole - whole pages were stored: what is left began after the last idle. */
void hgt__partial_whole(struct hgt__partial_clock *pc)
{
	if (pc->idle_ms > pc->since_ms)
		pc->since_ms = pc->idle_ms;
}

/** hgt__partial_flushed - the partial page was read at @now_ms: all before it is taken. */
void hgt__partial_flushed(struct hgt__partial_clock *pc, uint64_t now_ms)
{
	pc->since_ms = pc->idle_ms = now_ms;
}

/**
 * hgt__partial_due - whether the partial page is to be read at @now_ms, so that it is
 * stored within @flush_ms of its oldest event by a reader that looks every @poll_ms: a
 * quarter of @flush_ms early, two looks at least, for the looks and for a busy machine's
 * scheduling.
 */
bool hgt__partial_due(const struct hgt__partial_clock *pc, uint64_t now_ms, uint64_t flush_ms,
		      uint64_t poll_ms)
{
	uint64_t early = flush_ms / 4 > 2 * poll_ms ? flush_ms / 4 : 2 * poll_ms;

	return now_ms - pc->since_ms + early >= flush_ms;
}
