// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A CPU reader's pages taken from the ring buffer's own memory: trace_pipe_raw mapped
 * (Linux 6.10 on, Documentation/trace/ring-buffer-map.rst). The kernel lends one
 * sub-buffer at a time, the reader page, and lends the next when asked
 * (TRACE_MMAP_IOCTL_GET_READER); a whole page goes from the mapping to the destination in
 * one write(2). That is one copy a page and no allocation: a splice out of trace_pipe_raw
 * moves the page itself but has the kernel allocate and zero a page to replace it, which
 * on a guest whose memory the host took back cost as much as the copy (bench/agent.sh's
 * drain went from 1169 down to 275 MB/s, clear_page_erms under
 * ring_buffer_alloc_read_page the reason).
 *
 * The kernel's facts this relies on (kernel/trace/ring_buffer.c, 6.10 to 6.18):
 * - the ioctl marks what the reader page holds at that moment as read and returns it
 *   again while it holds more; it hands out the next sub-buffer only when nothing came
 *   on the reader page since the last ioctl. So a reader that stores all it saw on its
 *   page after one ioctl, before the next, loses nothing to the swap.
 * - the writer may still be on the reader page. It leaves a page with a padding event up
 *   to its end (commit = the data size) or with less than an event's room left
 *   (RB_EVNT_MIN_SIZE, 8 bytes); a page handed out with events lost before it carries
 *   RB_MISSED_EVENTS in its commit word, and only a page the writer left does.
 * Until the writer leaves it, the page's events go out only as a partial page (the flush,
 * the stop): the events not stored yet, behind a header whose time is that of the events
 * before them, as the kernel's own read() of a partial page puts it.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <traceevent/kbuffer.h>

#include "pages.h"

/* include/uapi/linux/trace_mmap.h (not in Debian 12's kernel headers) */
struct rb_meta {
	uint32_t meta_page_size;
	uint32_t meta_struct_len;
	uint32_t subbuf_size;
	uint32_t nr_subbufs;
	struct {
		uint64_t lost_events;
		uint32_t id;
		uint32_t read;
	} reader;
};
#define GET_READER _IO('R', 0x20)

#define MISSED_EVENTS (1ul << 31)
#define SIZE_MASK ((1ul << 30) - 1) /* the commit word's size, below its two flags */
#define EVENT_MIN 8u		    /* RB_EVNT_MIN_SIZE */
#define HDR (8 + sizeof(long))	    /* a sub-buffer's header: its time, its commit word */
/* What one move stores at most before it returns (the caller looks at its stop then). */
#define BATCH (1u << 20)

static const volatile struct rb_meta *meta(const struct hgt__ringmap *m)
{
	return (const volatile struct rb_meta *)m->map;
}

static const uint8_t *subbuf(const struct hgt__ringmap *m)
{
	return m->map + m->meta_size + (size_t)m->id * m->page;
}

/* The commit word of the reader page, read before the data it counts. */
static unsigned long commit_of(const struct hgt__ringmap *m)
{
	return __atomic_load_n((const unsigned long *)(subbuf(m) + 8), __ATOMIC_ACQUIRE);
}

/* Whether the writer has left the page of commit word @c: no event will come on it. */
static bool left(const struct hgt__ringmap *m, unsigned long c)
{
	return (c & MISSED_EVENTS) || (c & SIZE_MASK) + EVENT_MIN > m->page - HDR;
}

/**
 * hgt__ringmap_init - map the ring buffer behind @src (a CPU's trace_pipe_raw, opened
 * O_NONBLOCK) to move its pages to @dst, in @page bytes each. Returns 0, or -errno: a
 * kernel without the mapping (before 6.10: ENODEV, EINVAL), a sub-buffer of another size
 * than @page (EXDEV); the caller then splices.
 */
int hgt__ringmap_init(struct hgt__ringmap *m, int src, int dst, size_t page)
{
	const volatile struct rb_meta *mt;
	long sys = sysconf(_SC_PAGESIZE);
	struct stat st;
	void *p;
	int e;

	memset(m, 0, sizeof(*m));
	m->src = src;
	m->dst = dst;
	m->fifo = !fstat(dst, &st) && S_ISFIFO(st.st_mode);
	p = mmap(NULL, (size_t)sys, PROT_READ, MAP_SHARED, src, 0);
	if (p == MAP_FAILED)
		return -errno;
	mt = p;
	m->meta_size = mt->meta_page_size;
	m->page = mt->subbuf_size;
	m->len = m->meta_size + (size_t)mt->nr_subbufs * m->page;
	munmap(p, (size_t)sys);
	if (m->page != page || m->meta_size < sizeof(struct rb_meta) || m->page <= HDR + EVENT_MIN)
		return -EXDEV;
	p = mmap(NULL, m->len, PROT_READ, MAP_SHARED, src, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->map = p;
	m->buf = malloc(m->page);
	m->kb = kbuffer_alloc(sizeof(long) == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
			      KBUFFER_ENDIAN_SAME_AS_HOST);
	if (!m->buf || !m->kb) {
		e = -ENOMEM;
		hgt__ringmap_free(m);
		return e;
	}
	/* the page the kernel holds now, and what of it a reader before us took */
	m->id = meta(m)->reader.id;
	m->taken = meta(m)->reader.read;
	if ((size_t)m->meta_size + ((size_t)m->id + 1) * m->page > m->len) {
		hgt__ringmap_free(m);
		return -EPROTO; /* not a sub-buffer of the mapping */
	}
	return 0;
}

/** hgt__ringmap_free - unmap; what is held is dropped (see hgt__ringmap_held() first). */
void hgt__ringmap_free(struct hgt__ringmap *m)
{
	if (m->map)
		munmap(m->map, m->len);
	m->map = NULL;
	free(m->buf);
	m->buf = NULL;
	if (m->kb)
		kbuffer_free(m->kb);
	m->kb = NULL;
	m->out_len = m->out_off = 0;
}

/** hgt__ringmap_held - the bytes of a page taken that the destination has not taken yet. */
size_t hgt__ringmap_held(const struct hgt__ringmap *m)
{
	return m->out_len - m->out_off;
}

/* The time before the data at @off (> 0) of sub-buffer @sb: of the events there, as a
 * reader of the page (libtraceevent's kbuffer) works it out. @scratch: HDR + @off bytes. */
static unsigned long long time_at(struct kbuffer *kb, const uint8_t *sb, uint32_t off,
				  uint8_t *scratch)
{
	unsigned long long ts;
	unsigned long c = off;

	memcpy(scratch, sb, HDR + off);
	memcpy(scratch + 8, &c, sizeof(c)); /* the flags dropped: only the events counted */
	kbuffer_load_subbuffer(kb, scratch);
	for (void *d = kbuffer_read_event(kb, &ts); d; d = kbuffer_next_event(kb, &ts))
		;
	return kbuffer_timestamp(kb);
}

/**
 * hgt__subbuf_rest - the events of sub-buffer @sb (@page bytes) from its data offset @from
 * to @to, made a page of their own in @out (@page bytes): its time that of the events
 * before @from (@kb reads them), its commit word @to - @from with no flags, zeros after.
 * A reader of both finds the same events at the same times.
 */
void hgt__subbuf_rest(struct kbuffer *kb, const uint8_t *sb, size_t page, uint32_t from,
		      uint32_t to, uint8_t *out)
{
	unsigned long long ts = from ? time_at(kb, sb, from, out) : *(const uint64_t *)sb;
	unsigned long n = to - from;

	memcpy(out + HDR, sb + HDR + from, n);
	memcpy(out, &ts, 8);
	memcpy(out + 8, &n, sizeof(n));
	memset(out + HDR + n, 0, page - HDR - n);
}

/* The page's events from m->taken to @size, made a page of their own to go out. */
static void take_rest(struct hgt__ringmap *m, unsigned long size)
{
	hgt__subbuf_rest(m->kb, subbuf(m), m->page, m->taken, (uint32_t)size, m->buf);
	m->out = m->buf;
	m->out_len = m->page;
	m->out_off = 0;
	m->taken = (uint32_t)size;
}

/* The page as the kernel wrote it, straight from the mapping. */
static void take_whole(struct hgt__ringmap *m, unsigned long size)
{
	m->out = subbuf(m);
	m->out_len = m->page;
	m->out_off = 0;
	m->taken = (uint32_t)size;
}

/* What is held, to the destination. Returns the bytes written, or -1 (errno). A pipe or
 * FIFO (the caller's, blocking) is written when it has room: a free slot takes a page
 * whole, and a reader never waits in a write for a host that stopped reading (it waits
 * in poll(2), for as long as its stop allows). */
static ssize_t put_out(struct hgt__ringmap *m)
{
	struct pollfd p = { .fd = m->dst, .events = POLLOUT };
	ssize_t w;

	if (m->fifo && poll(&p, 1, 0) == 0) {
		errno = EAGAIN;
		return -1;
	}
	w = write(m->dst, m->out + m->out_off, m->out_len - m->out_off);
	if (w <= 0) {
		if (!w)
			errno = EAGAIN; /* took nothing: no room, whatever it is */
		return -1;
	}
	m->out_off += (size_t)w;
	if (m->out_off == m->out_len)
		m->out_len = m->out_off = 0;
	return w;
}

/*
 * Everything seen on the reader page is stored: ask for the next. Twice at most: the
 * first ask may only mark what came on the page meanwhile as read. Returns 1 when there
 * is more to look at (another page, or more on this one), 0 when there is none, -1.
 */
static int next_page(struct hgt__ringmap *m)
{
	for (int i = 0; i < 2; i++) {
		uint32_t id;

		if (ioctl(m->src, GET_READER) < 0)
			return -1;
		id = meta(m)->reader.id;
		if (id != m->id) {
			if ((size_t)m->meta_size + ((size_t)id + 1) * m->page > m->len) {
				errno = EPROTO; /* not a sub-buffer of the mapping */
				return -1;
			}
			m->id = id;
			m->taken = 0;
			return 1;
		}
		if ((commit_of(m) & SIZE_MASK) > m->taken)
			return 1;
	}
	return 0;
}

/*
 * One step: what is held goes out, else the next whole page is taken (or asked for).
 * Returns the bytes written, 0 for a page taken, -2 when the ring has no whole page, or
 * -1 with errno.
 */
static ssize_t step(struct hgt__ringmap *m)
{
	unsigned long c, size;
	int r;

	if (hgt__ringmap_held(m))
		return put_out(m);
	c = commit_of(m);
	size = c & SIZE_MASK;
	if (size > m->page - HDR) {
		errno = EPROTO; /* a commit word past the page's end */
		return -1;
	}
	if (left(m, c) && m->taken < size) {
		if (m->taken)
			take_rest(m, size);
		else
			take_whole(m, size);
		return 0;
	}
	if (m->taken < size)
		return -2; /* the writer's page: its events wait for the flush or its end */
	r = next_page(m);
	return r > 0 ? 0 : r == 0 ? -2 : -1;
}

/**
 * hgt__ringmap_move - move what is ready: the bytes held first, then whole pages, up to
 * a MB. Returns the bytes that reached the destination (> 0), 0 when the ring has no
 * whole page and nothing is held, or -1 with errno: EAGAIN when the destination has no
 * room (wait for POLLOUT on it), another for a failure of either side (ENOSPC, EPIPE;
 * what is held stays held).
 */
ssize_t hgt__ringmap_move(struct hgt__ringmap *m)
{
	ssize_t total = 0;

	while (total < BATCH) {
		ssize_t n = step(m);

		if (n == -2)
			break;
		if (n < 0)
			return total ? total : -1;
		total += n;
	}
	return total;
}

/**
 * hgt__ringmap_partial - the events of the page the writer is on that are not stored
 * yet, as a partial page (the flush of a quiet ring, the stop), after what is held and
 * whole pages. Returns the bytes written, 0 when there are none, or -1 with errno as
 * hgt__ringmap_move().
 */
ssize_t hgt__ringmap_partial(struct hgt__ringmap *m)
{
	ssize_t n = hgt__ringmap_move(m);
	unsigned long size;

	if (n != 0)
		return n;
	size = commit_of(m) & SIZE_MASK;
	if (size <= m->taken || size > m->page - HDR)
		return 0;
	take_rest(m, size);
	return put_out(m);
}
