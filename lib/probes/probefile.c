// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Reading simple-backend files: hgtrace's own (self-describing, hgtrace/probefile.h) and
 * QEMU's simple trace format version 4 (decoded with its trace-events-all file).
 *
 * hgtrace files hold each thread's records in order, threads interleaved by the writer's
 * rounds; events are handed out in time order by holding back those newer than the
 * round before last (every later record is at least that new).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hgtrace/probefile.h>
#include <hgtrace/probegen.h>
#include <hgtrace/probes.h>

#define QEMU_HEADER_ID 0xffffffffffffffffull
#define QEMU_MAGIC 0xf2b177cb0aa429b4ull
#define QEMU_DROPPED_ID 0xfffffffffffffffeull
#define MAX_RECORD (1u << 20)

struct desc {
	uint64_t id;
	char *name, *fmt;
	unsigned int nargs;
	unsigned char kinds[HGT_TEV_MAX_ARGS + 1];
	char *argnames[HGT_TEV_MAX_ARGS + 1];
};

struct held { /* an hgtrace EVENT record waiting for its turn */
	uint64_t ts, seq, off;
	unsigned char *rec;
	uint32_t size;
};

struct hgt_probefile {
	FILE *f;
	char *path;
	int qemu, swap, clock;
	uint32_t pid;
	uint64_t off; /* file offset of the next record */
	struct desc *d;
	size_t nd;
	struct hgt_tev_list tev; /* QEMU: the events file */
	/* hgtrace: events held back for ordering */
	struct held *h;
	size_t nh, caph, hpos; /* sorted h[hpos..nh) are ready up to 'limit' */
	uint64_t round[2], seq, limit;
	int nrounds, eof, cut; /* cut: the file ends inside a record */
	double clk[2][2];      /* first and last CLOCK records: tsc, mono */
	int nclk, end_clock;
	struct thread {
		uint32_t tid;
		char comm[17];
	} * thr;
	size_t nthr;
	/* the current event's decoded arguments */
	unsigned char *cur;
	uint64_t vals[HGT_TEV_MAX_ARGS + 1];
	char *strs[HGT_TEV_MAX_ARGS + 1];
	char strbuf[(HGT_PROBE_STR_MAX + 1) * (HGT_TEV_MAX_ARGS + 1)];
	char err[512];
};

static int __attribute__((format(printf, 3, 4)))
bad(struct hgt_probefile *f, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(f->err, sizeof(f->err), "%s: offset %#" PRIx64 ": ", f->path, off);

	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(f->err))
		vsnprintf(f->err + n, sizeof(f->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/** hgt_probefile_error - the last error's one-line reason. */
const char *hgt_probefile_error(const struct hgt_probefile *f)
{
	return f->err;
}

static uint32_t rd32(const struct hgt_probefile *f, const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return f->swap ? __builtin_bswap32(v) : v;
}

static uint64_t rd64(const struct hgt_probefile *f, const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return f->swap ? __builtin_bswap64(v) : v;
}

/*
 * @path opened for reading only if it is a regular file: a FIFO with no writer must not
 * hang the caller (the open is non-blocking, then refused). errno EINVAL for the others.
 */
static FILE *open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	FILE *f;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	f = fdopen(fd, "rb");
	if (!f)
		close(fd);
	return f;
}

/**
 * hgt_probefile_is - 1 when @path starts as a simple-backend file (ours or QEMU's).
 */
int hgt_probefile_is(const char *path)
{
	unsigned char b[16];
	FILE *f = open_regular(path);
	int is = 0;

	if (!f)
		return 0;
	if (fread(b, 1, 16, f) == 16) {
		uint64_t a, m;

		memcpy(&a, b, 8);
		memcpy(&m, b + 8, 8);
		is = !memcmp(b, HGT_PROBEFILE_MAGIC, 8) || (a == QEMU_HEADER_ID && m == QEMU_MAGIC);
	}
	fclose(f);
	return is;
}

static struct desc *find_desc(struct hgt_probefile *f, uint64_t id)
{
	for (size_t i = 0; i < f->nd; i++)
		if (f->d[i].id == id)
			return &f->d[i];
	return NULL;
}

static struct desc *new_desc(struct hgt_probefile *f)
{
	struct desc *d = realloc(f->d, (f->nd + 1) * sizeof(*d));

	if (!d)
		return NULL;
	f->d = d;
	memset(&d[f->nd], 0, sizeof(*d));
	return &d[f->nd++];
}

static void free_desc(struct desc *d)
{
	free(d->name);
	free(d->fmt);
	for (unsigned int i = 0; i < d->nargs; i++)
		free(d->argnames[i]);
}

/* Read exactly @n bytes or report what is missing. 1: read, 0: clean end, <0: error. */
static int rd(struct hgt_probefile *f, void *buf, size_t n, int at_boundary)
{
	size_t got = fread(buf, 1, n, f->f);

	f->off += got;
	if (got == n)
		return 1;
	if (!got && at_boundary)
		return 0;
	f->cut = 1;
	return bad(
		f, f->off - got,
		"the file ends %zu bytes into a %zu-byte record (cut: the records before it were read)",
		got, n);
}

/* hgtrace DESC record body (after the 8-byte header). */
static int parse_desc(struct hgt_probefile *f, const unsigned char *b, size_t n, uint64_t at)
{
	const unsigned char *p = b + 8, *end = b + n;
	struct desc *d, tmp = { 0 };
	unsigned int nargs;

	if (n < 8)
		return bad(f, at, "event description of %zu bytes", n + 8);
	tmp.id = rd32(f, b);
	nargs = (unsigned int)(b[4] | b[5] << 8);
	if (f->swap)
		nargs = (unsigned int)(b[5] | b[4] << 8);
	if (nargs > HGT_TEV_MAX_ARGS)
		return bad(f, at, "event description claims %u arguments (at most %d)", nargs,
			   HGT_TEV_MAX_ARGS);
#define STR(dst)                                                           \
	do {                                                               \
		const unsigned char *z_ = memchr(p, 0, (size_t)(end - p)); \
		if (!z_) {                                                 \
			free_desc(&tmp);                                   \
			return bad(f, at,                                  \
				   "event description: a string runs "     \
				   "past the record");                     \
		}                                                          \
		(dst) = strdup((const char *)p);                           \
		p = z_ + 1;                                                \
	} while (0)
	STR(tmp.name);
	STR(tmp.fmt);
	for (unsigned int i = 0; i < nargs; i++) {
		char *type;

		int r = 0;

		if (p >= end)
			r = bad(f, at, "event description of %s ends at argument %u", tmp.name, i);
		else if (!(tmp.kinds[i] = *p++) || tmp.kinds[i] > HGT_PROBE_STR)
			r = bad(f, at, "event %s: argument %u has kind %u", tmp.name, i,
				tmp.kinds[i]);
		if (r) {
			free_desc(&tmp);
			return r;
		}
		tmp.nargs = i + 1; /* free_desc() frees argnames[i] from here on */
		STR(type);
		free(type);
		STR(tmp.argnames[i]);
	}
#undef STR
	if (!tmp.name || !tmp.fmt) {
		free_desc(&tmp);
		return -ENOMEM;
	}
	if ((d = find_desc(f, tmp.id))) { /* the same event described again: keep one */
		free_desc(&tmp);
		return 0;
	}
	d = new_desc(f);
	if (!d) {
		free_desc(&tmp);
		return -ENOMEM;
	}
	*d = tmp;
	return 0;
}

static struct thread *find_thread(struct hgt_probefile *f, uint32_t tid)
{
	for (size_t i = 0; i < f->nthr; i++)
		if (f->thr[i].tid == tid)
			return &f->thr[i];
	return NULL;
}

static int add_thread(struct hgt_probefile *f, uint32_t tid, const unsigned char *name, size_t n)
{
	struct thread *t = find_thread(f, tid);

	if (!t) {
		t = realloc(f->thr, (f->nthr + 1) * sizeof(*t));
		if (!t)
			return -ENOMEM;
		f->thr = t;
		t = &f->thr[f->nthr++];
		t->tid = tid;
	}
	n = n < sizeof(t->comm) - 1 ? n : sizeof(t->comm) - 1;
	memcpy(t->comm, name, n);
	t->comm[n] = '\0';
	return 0;
}

static int hold(struct hgt_probefile *f, unsigned char *rec, uint32_t size, uint64_t ts,
		uint64_t off)
{
	if (f->nh == f->caph) {
		size_t cap = f->caph ? f->caph * 2 : 1024;
		struct held *h = realloc(f->h, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		f->h = h;
		f->caph = cap;
	}
	f->h[f->nh++] = (struct held){ ts, f->seq++, off, rec, size };
	return 0;
}

static int cmp_held(const void *a, const void *b)
{
	const struct held *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Read hgtrace records until some held event is ready (ts below the limit) or the end. */
static int fill(struct hgt_probefile *f)
{
	for (;;) {
		unsigned char hdr[8], *body;
		uint32_t type, size;
		uint64_t at = f->off;
		int r;

		if (f->hpos < f->nh && f->h[f->hpos].ts < f->limit)
			return 1;
		if (f->eof)
			return f->hpos < f->nh ? 1 : f->cut ? -EBADMSG : 0;
		r = rd(f, hdr, 8, 1);
		if (r < 0 && !f->cut)
			return r;
		if (r <= 0) {
			/* the end, or a cut (a full disk, a crash): what is held goes out first,
			 * the cut is reported after it */
			f->eof = 1;
			f->limit = UINT64_MAX;
			goto sort;
		}
		type = rd32(f, hdr);
		size = rd32(f, hdr + 4);
		if (size < 8 || size % 8 || size > MAX_RECORD)
			return bad(f, at,
				   "record type %u claims %u bytes (a multiple of 8 from 8 to %u)",
				   type, size, MAX_RECORD);
		body = malloc(size);
		if (!body)
			return -ENOMEM;
		memcpy(body, hdr, 8);
		r = rd(f, body + 8, size - 8, 0);
		if (r < 0) {
			free(body);
			if (!f->cut)
				return r;
			f->eof = 1;
			f->limit = UINT64_MAX;
			goto sort;
		}
		switch (type) {
		case HGT_PROBE_R_PAD:
			free(body);
			break;
		case HGT_PROBE_R_THREAD:
			r = size >= 16 ? add_thread(f, rd32(f, body + 8), body + 16, size - 16) : 0;
			free(body);
			if (r < 0)
				return r;
			break;
		case HGT_PROBE_R_DESC:
			r = parse_desc(f, body + 8, size - 8, at);
			free(body);
			if (r < 0)
				return r;
			break;
		case HGT_PROBE_R_EVENT:
		case HGT_PROBE_R_DROPPED:
			if (size < (type == HGT_PROBE_R_EVENT ? 24u : 32u)) {
				free(body);
				return bad(f, at, "%s record of %u bytes",
					   type == HGT_PROBE_R_EVENT ? "event" : "loss", size);
			}
			r = hold(f, body, size, rd64(f, body + 16), at);
			if (r < 0) {
				free(body);
				return r;
			}
			break;
		case HGT_PROBE_R_ROUND:
			if (size < 16) {
				free(body);
				return bad(f, at, "round record of %u bytes", size);
			}
			f->round[0] = f->round[1];
			f->round[1] = rd64(f, body + 8);
			free(body);
			if (++f->nrounds >= 3) {
				f->limit = f->round[0];
				goto sort;
			}
			break;
		case HGT_PROBE_R_CLOCK:
			if (size >= 32 && !f->end_clock) {
				int k = f->nclk ? 1 : 0;

				f->clk[k][0] = (double)rd64(f, body + 8);
				f->clk[k][1] = (double)rd64(f, body + 16);
				f->nclk++;
			}
			free(body);
			break;
		default: /* a newer writer's record: skip it */
			free(body);
			break;
		}
		continue;
sort:
		/* Drop what was handed out, sort the rest. */
		if (!f->nh) /* nothing held (and maybe no array yet) */
			continue;
		for (size_t i = 0; i < f->hpos; i++)
			free(f->h[i].rec);
		memmove(f->h, f->h + f->hpos, (f->nh - f->hpos) * sizeof(*f->h));
		f->nh -= f->hpos;
		f->hpos = 0;
		qsort(f->h, f->nh, sizeof(*f->h), cmp_held);
	}
}

/* Hand out an event described by @d, its values decoded into f->vals and f->strs. */
static int set_event(struct hgt_probefile *f, struct hgt_probefile_event *ev, const struct desc *d)
{
	ev->name = d->name;
	ev->fmt = d->fmt;
	ev->nargs = d->nargs;
	ev->argnames = (const char *const *)d->argnames;
	ev->kinds = d->kinds;
	ev->vals = f->vals;
	ev->strs = (const char *const *)f->strs;
	return 1;
}

/* A loss record: "Dropped_Event num_events_dropped=N", as simpletrace.py names it. */
static int set_dropped(struct hgt_probefile *f, struct hgt_probefile_event *ev, uint64_t n)
{
	static char name[] = "Dropped_Event", arg[] = "num_events_dropped";
	static const struct desc d = {
		.name = name, .nargs = 1, .kinds = { HGT_PROBE_U64 }, .argnames = { arg }
	};

	ev->dropped = n;
	f->vals[0] = n;
	f->strs[0] = NULL;
	return set_event(f, ev, &d);
}

static int decode_args(struct hgt_probefile *f, const unsigned char *p, const unsigned char *end,
		       unsigned int n, const unsigned char *kinds, uint64_t at)
{
	char *sb = f->strbuf;

	for (unsigned int i = 0; i < n; i++) {
		f->strs[i] = NULL;
		if (kinds[i] == HGT_PROBE_STR) {
			uint32_t len;

			if (end - p < 4)
				return bad(f, at, "argument %u runs past the record", i);
			len = rd32(f, p);
			if (len > HGT_PROBE_STR_MAX || (size_t)(end - p) < 4 + (size_t)len)
				return bad(f, at, "string argument %u claims %u bytes", i, len);
			memcpy(sb, p + 4, len);
			sb[len] = '\0';
			f->strs[i] = sb;
			sb += len + 1;
			p += f->qemu ? 4 + len : (4 + len + 7) & ~7u;
			f->vals[i] = len;
		} else {
			uint64_t v;

			if (end - p < 8)
				return bad(f, at, "argument %u runs past the record", i);
			v = rd64(f, p);
			switch (kinds[i]) {
			case HGT_PROBE_S8:
				v = (uint64_t)(int64_t)(int8_t)v;
				break;
			case HGT_PROBE_S16:
				v = (uint64_t)(int64_t)(int16_t)v;
				break;
			case HGT_PROBE_S32:
				v = (uint64_t)(int64_t)(int32_t)v;
				break;
			default:
				break;
			}
			f->vals[i] = v;
			p += 8;
		}
	}
	return 0;
}

static int next_ours(struct hgt_probefile *f, struct hgt_probefile_event *ev)
{
	const unsigned char *b;
	struct thread *th;
	struct held *h;
	struct desc *d;
	int r = fill(f);

	if (r <= 0)
		return r;
	h = &f->h[f->hpos++];
	b = h->rec;
	memset(ev, 0, sizeof(*ev));
	ev->ts = h->ts;
	if (rd32(f, b) == HGT_PROBE_R_DROPPED) {
		ev->tid = rd32(f, b + 8);
		return set_dropped(f, ev, rd64(f, b + 24));
	}
	d = find_desc(f, rd32(f, b + 8));
	ev->tid = rd32(f, b + 12);
	if ((th = find_thread(f, ev->tid)) && th->comm[0])
		ev->comm = th->comm;
	if (!d)
		return bad(f, h->off, "an event with id %#x that no description names",
			   rd32(f, b + 8));
	r = decode_args(f, b + 24, b + h->size, d->nargs, d->kinds, h->off);
	return r < 0 ? r : set_event(f, ev, d);
}

/* The events file's event a mapping names: NAME itself, or a tcg event's NAME_trans or
 * NAME_exec, the two events QEMU's tracetool (and our generator) make of it; *@trans for
 * the _trans half, which records no tcg arguments. */
static const struct hgt_tev *find_tev(const struct hgt_probefile *f, const char *name, int *trans)
{
	size_t n = strlen(name);

	*trans = 0;
	for (size_t i = 0; i < f->tev.n; i++)
		if (!strcmp(f->tev.ev[i].name, name))
			return &f->tev.ev[i];
	for (size_t i = 0; i < f->tev.n; i++) {
		const struct hgt_tev *t = &f->tev.ev[i];
		size_t k = strlen(t->name);

		if (!(t->props & HGT_TEV_TCG) || n <= k || strncmp(name, t->name, k))
			continue;
		if (!strcmp(name + k, "_exec"))
			return t;
		if (!strcmp(name + k, "_trans")) {
			*trans = 1;
			return t;
		}
	}
	return NULL;
}

/* QEMU v4: u64 type; 0: u64 id, u32 len, name; 1: u64 id, u64 ts, u32 length, u32 pid, args */
static int next_qemu(struct hgt_probefile *f, struct hgt_probefile_event *ev)
{
	for (;;) {
		unsigned char hdr[24];
		uint64_t type, at = f->off;
		int r = rd(f, hdr, 8, 1);

		if (r <= 0)
			return r;
		type = rd64(f, hdr);
		if (type == 0) {
			unsigned char m[12];
			uint32_t len;
			struct desc *d;
			const struct hgt_tev *t;
			int trans;

			if ((r = rd(f, m, 12, 0)) < 0)
				return r;
			len = rd32(f, m + 8);
			if (len == 0 || len > 1024)
				return bad(f, at, "event mapping with a %u-byte name", len);
			if (!(d = new_desc(f)) || !(d->name = calloc(1, len + 1)))
				return -ENOMEM;
			d->id = rd64(f, m);
			if ((r = rd(f, d->name, len, 0)) < 0)
				return r;
			t = find_tev(f, d->name, &trans);
			if (!t)
				return bad(f, at, "event '%s' is not in the events file", d->name);
			d->nargs = 0;
			for (int i = 0; i < t->nargs; i++) {
				if (trans && t->args[i].tcg)
					continue;
				/* values widened to u64, printed in hex as simpletrace.py does */
				d->kinds[d->nargs] = t->args[i].kind == HGT_PROBE_STR
							     ? HGT_PROBE_STR
							     : HGT_PROBE_PTR;
				d->argnames[d->nargs++] = strdup(t->args[i].name);
			}
			continue;
		}
		if (type != 1)
			return bad(f, at, "record type %" PRIu64 " (0 mapping or 1 event)", type);
		if ((r = rd(f, hdr, 24, 0)) < 0)
			return r;
		{
			uint64_t id = rd64(f, hdr);
			uint32_t len = rd32(f, hdr + 16);
			struct desc *d;
			unsigned char *body;

			if (len < 24 || len > MAX_RECORD)
				return bad(f, at, "event record claims %u bytes", len);
			free(f->cur);
			f->cur = body = malloc(len - 24 + 1);
			if (!body)
				return -ENOMEM;
			if ((r = rd(f, body, len - 24, 0)) < 0)
				return r;
			memset(ev, 0, sizeof(*ev));
			ev->ts = rd64(f, hdr + 8);
			ev->tid = rd32(f, hdr + 20);
			if (id == QEMU_DROPPED_ID)
				return set_dropped(f, ev, len >= 32 ? rd64(f, body) : 0);
			d = find_desc(f, id);
			if (!d)
				return bad(f, at, "event id %" PRIu64 " has no mapping record", id);
			r = decode_args(f, body, body + len - 24, d->nargs, d->kinds, at);
			return r < 0 ? r : set_event(f, ev, d);
		}
	}
}

/**
 * hgt_probefile_next - the next event in time order. Returns 1, 0 at the end, or a
 * negative errno with the reason in hgt_probefile_error().
 */
int hgt_probefile_next(struct hgt_probefile *f, struct hgt_probefile_event *ev)
{
	int r = f->qemu ? next_qemu(f, ev) : next_ours(f, ev);

	if (r == -ENOMEM && !f->err[0])
		snprintf(f->err, sizeof(f->err), "%s: out of memory", f->path);
	return r;
}

/*
 * A file closed properly ends with a CLOCK record: with the one after the header it gives
 * the TSC frequency before the first event is read.
 */
static void end_clock(struct hgt_probefile *f)
{
	unsigned char h[HGT_PROBEFILE_HDR + 32], t[32];

	if (fseeko(f->f, 0, SEEK_SET) == 0 && fread(h, 1, sizeof(h), f->f) == sizeof(h) &&
	    rd32(f, h + HGT_PROBEFILE_HDR) == HGT_PROBE_R_CLOCK &&
	    fseeko(f->f, -32, SEEK_END) == 0 && fread(t, 1, 32, f->f) == 32 &&
	    rd32(f, t) == HGT_PROBE_R_CLOCK && rd32(f, t + 4) == 32) {
		f->clk[0][0] = (double)rd64(f, h + HGT_PROBEFILE_HDR + 8);
		f->clk[0][1] = (double)rd64(f, h + HGT_PROBEFILE_HDR + 16);
		f->clk[1][0] = (double)rd64(f, t + 8);
		f->clk[1][1] = (double)rd64(f, t + 16);
		f->nclk = 2;
		f->end_clock = 1;
	}
	fseeko(f->f, HGT_PROBEFILE_HDR, SEEK_SET);
}

/**
 * hgt_probefile_open - open a simple-backend file: hgtrace's own (@events NULL) or QEMU's
 * version 4 with its trace-events-all file in @events. NULL with errno and @err on failure.
 */
struct hgt_probefile *hgt_probefile_open(const char *path, const char *events, char *err,
					 size_t errsz)
{
	struct hgt_probefile *f = calloc(1, sizeof(*f));
	unsigned char h[HGT_PROBEFILE_HDR];
	int e = EINVAL;

	if (!f || !(f->path = strdup(path))) {
		free(f);
		snprintf(err, errsz, "%s: out of memory", path);
		errno = ENOMEM;
		return NULL;
	}
	f->f = open_regular(path);
	if (!f->f) {
		e = errno;
		snprintf(err, errsz, "%s: %s", path,
			 e == EINVAL ? "not a regular file: copy it to a file first" : strerror(e));
		goto fail;
	}
	if (fread(h, 1, sizeof(h), f->f) != sizeof(h)) {
		snprintf(err, errsz, "%s: offset 0: shorter than a simple trace header", path);
		goto fail;
	}
	if (!memcmp(h, HGT_PROBEFILE_MAGIC, 8)) {
		uint32_t ver, bom;

		memcpy(&bom, h + 12, 4);
		f->swap = bom == __builtin_bswap32(HGT_PROBEFILE_BOM);
		if (!f->swap && bom != HGT_PROBEFILE_BOM) {
			snprintf(err, errsz, "%s: offset 0xc: byte-order mark %#x", path, bom);
			goto fail;
		}
		ver = rd32(f, h + 8);
		if (ver != HGT_PROBEFILE_VERSION) {
			snprintf(err, errsz, "%s: offset 0x8: version %u (this hgtrace reads %d)",
				 path, ver, HGT_PROBEFILE_VERSION);
			goto fail;
		}
		f->clock = (int)rd32(f, h + 16);
		f->pid = rd32(f, h + 20);
		f->off = HGT_PROBEFILE_HDR;
		end_clock(f);
		if (events)
			fprintf(stderr, "hgtrace: %s describes its own events; %s is not needed\n",
				path, events);
	} else {
		uint64_t a, m, v;

		memcpy(&a, h, 8);
		memcpy(&m, h + 8, 8);
		memcpy(&v, h + 16, 8);
		if (a != QEMU_HEADER_ID || m != QEMU_MAGIC) {
			snprintf(
				err, errsz,
				"%s: offset 0: not a simple trace (no HGTPROBE or QEMU simpletrace magic)",
				path);
			goto fail;
		}
		if (v != 4) {
			snprintf(err, errsz,
				 "%s: offset 0x10: QEMU simple trace version %" PRIu64
				 " (only 4 is read)",
				 path, v);
			goto fail;
		}
		if (!events) {
			snprintf(err, errsz,
				 "%s: a QEMU simple trace: give its trace-events-all file first",
				 path);
			goto fail;
		}
		if (hgt_tev_parse(events, &f->tev, err, errsz) < 0)
			goto fail;
		f->qemu = 1;
		f->off = 24;
	}
	return f;
fail:
	hgt_probefile_close(f);
	errno = e;
	return NULL;
}

/** hgt_probefile_clock - the file's clock (HGT_PROBE_CLOCK_*), 0 when unknown. */
int hgt_probefile_clock(const struct hgt_probefile *f)
{
	return f->qemu ? 0 : f->clock;
}

/** hgt_probefile_tsc_hz - the TSC frequency between the file's first and last CLOCK records. */
double hgt_probefile_tsc_hz(const struct hgt_probefile *f)
{
	double dm;

	if (f->nclk < 2)
		return 0;
	dm = f->clk[1][1] - f->clk[0][1];
	return dm > 0 ? (f->clk[1][0] - f->clk[0][0]) * 1e9 / dm : 0;
}

/**
 * hgt_probefile_format - @ev's arguments as "name=value ..." into @buf: signed and unsigned
 * integers in decimal, pointers (and QEMU's untyped values) in hex, strings as text.
 */
int hgt_probefile_format(const struct hgt_probefile_event *ev, char *buf, size_t sz)
{
	size_t n = 0;

	if (!sz)
		return 0;
	buf[0] = '\0';
	for (unsigned int i = 0; i < ev->nargs && n < sz; i++) {
		const char *sep = i ? " " : "";
		uint64_t v = ev->vals[i];
		int w;

		switch (ev->kinds[i]) {
		case HGT_PROBE_STR:
			w = snprintf(buf + n, sz - n, "%s%s=%s", sep, ev->argnames[i],
				     ev->strs[i] ? ev->strs[i] : "");
			break;
		case HGT_PROBE_S8:
		case HGT_PROBE_S16:
		case HGT_PROBE_S32:
		case HGT_PROBE_S64:
			w = snprintf(buf + n, sz - n, "%s%s=%" PRId64, sep, ev->argnames[i],
				     (int64_t)v);
			break;
		case HGT_PROBE_U8:
		case HGT_PROBE_U16:
		case HGT_PROBE_U32:
		case HGT_PROBE_U64:
		case HGT_PROBE_BOOL:
			w = snprintf(buf + n, sz - n, "%s%s=%" PRIu64, sep, ev->argnames[i], v);
			break;
		default: /* pointers, and QEMU's untyped values as simpletrace.py prints them */
			w = snprintf(buf + n, sz - n, "%s%s=0x%" PRIx64, sep, ev->argnames[i], v);
		}
		if (w < 0)
			break;
		n += (size_t)w < sz - n ? (size_t)w : sz - n - 1;
	}
	return (int)n;
}

/* Python's repr() of a bytes object, as simpletrace.py prints strings: b'...'. */
static int bytes_repr(char *buf, size_t sz, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	char q = strchr((const char *)p, '\'') && !strchr((const char *)p, '"') ? '"' : '\'';
	size_t n = 0;

#define OUT(...)                                                              \
	do {                                                                  \
		int w_ = snprintf(buf + n, n < sz ? sz - n : 0, __VA_ARGS__); \
		n += w_ > 0 ? (size_t)w_ : 0;                                 \
	} while (0)
	OUT("b%c", q);
	for (; *p; p++) {
		if (*p == '\\' || *p == (unsigned char)q)
			OUT("\\%c", *p);
		else if (*p == '\t')
			OUT("\\t");
		else if (*p == '\n')
			OUT("\\n");
		else if (*p == '\r')
			OUT("\\r");
		else if (*p < 0x20 || *p >= 0x7f)
			OUT("\\x%02x", *p);
		else
			OUT("%c", *p);
	}
	OUT("%c", q);
#undef OUT
	return (int)n;
}

/**
 * hgt_probefile_format_qemu - print @ev's arguments as QEMU's simpletrace.py does.
 */
int hgt_probefile_format_qemu(const struct hgt_probefile_event *ev, char *buf, size_t sz)
{
	size_t n = 0;

	if (!sz)
		return 0;
	buf[0] = '\0';
	for (unsigned int i = 0; i < ev->nargs && n + 1 < sz; i++) {
		int w = snprintf(buf + n, sz - n, "%s%s=", i ? " " : "", ev->argnames[i]);

		if (w < 0 || (size_t)w >= sz - n)
			break;
		n += (size_t)w;
		if (ev->kinds[i] == HGT_PROBE_STR)
			w = bytes_repr(buf + n, sz - n, ev->strs[i]);
		else /* every other value as its 64 bits in hex: -1 is 0xffffffffffffffff */
			w = snprintf(buf + n, sz - n, "0x%" PRIx64, ev->vals[i]);
		if (w < 0)
			break;
		n += (size_t)w < sz - n ? (size_t)w : sz - n - 1;
	}
	return (int)n;
}

void hgt_probefile_close(struct hgt_probefile *f)
{
	if (!f)
		return;
	if (f->f)
		fclose(f->f);
	for (size_t i = 0; i < f->nd; i++)
		free_desc(&f->d[i]);
	free(f->d);
	for (size_t i = 0; i < f->nh; i++)
		free(f->h[i].rec);
	free(f->h);
	free(f->cur);
	free(f->thr);
	hgt_tev_free(&f->tev);
	free(f->path);
	free(f);
}
