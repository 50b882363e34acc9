// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * trace.dat writer: version 7 (sections; none, zlib or zstd) and version 6 (sequential).
 *
 * v7 layout, as trace-cmd record writes it:
 *   [header][16..21 metadata sections][OPTIONS#1: section refs, options, CPUCOUNT, DONE]
 *   [BUFFER section per buffer: padding, per-CPU pages][OPTIONS#2: BUFFER options, DONE 0]
 *   [STRINGS]
 * v6 layout: [header][items 1-6][u32 cpus]["options  " options (instance BUFFER offsets
 * patched later) u16 0]["flyrecord" cpu table, clock, pages][instances' flyrecord blocks].
 * A latency (ASCII) trace has, instead of the buffers, a BUFFER_TEXT section and option
 * (v7) or "latency  " and the text up to the end of the file (v6).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hgtrace/output.h>

#include "tracedat-local.h"
#include "output-local.h"

#define PAGES_IN_CHUNK 10
/* small writes at the end of the file (a compressed chunk's two sizes and its data, the
 * headers) are gathered up to this much and written at once */
#define WBUF_SIZE (1U << 20)
#define NR_META (HGT_OPT_CMDLINES - HGT_OPT_HEADER_INFO + 1)

struct out_opt {
	uint16_t id;
	uint32_t size;
	uint8_t *data;
};

struct out_cpu {
	uint64_t offset;
	uint64_t size;
	bool present;
	/* spooled (hgt__output_spool()): its chunks so far, in an unnamed file of their own */
	int spool;
	uint64_t spool_len;
	uint32_t spool_chunks;
};

struct out_buf {
	char *name;
	char *clock;
	int nr_cpus;
	struct out_cpu *cpus;
	uint64_t sec_off;    /* v7: BUFFER section header; v6: "flyrecord" tag */
	uint64_t v6_opt_pos; /* v6 instance: where its BUFFER option's u64 offset lies */
	int32_t desc;	     /* v7 string id */
	bool started;
};

struct hgt_output {
	char *path;
	struct hgt_newfile *nf; /* the file being written; it replaces path at close */
	int fd;
	int version;
	enum hgt_compression comp;
	uint32_t page_size;
	int long_size;
	int err;
	bool data_started;
	bool latency;	  /* the data is a latency (ASCII) trace, not pages */
	uint64_t lat_off; /* v7: its BUFFER_TEXT section header */

	uint8_t *meta[NR_META];
	size_t meta_len[NR_META];
	uint8_t *packed[NR_META]; /* v7: an item compressed already, as it is written */
	size_t packed_len[NR_META];
	struct out_opt *opts;
	int nr_opts;
	struct out_buf *bufs;
	int nr_bufs;

	uint64_t pos; /* next write position (always the end of what is written) */
	uint8_t *wb;  /* WBUF_SIZE bytes: what is written at wb_off up to pos, not yet */
	size_t wb_len;
	uint64_t wb_off;
	int cur_buf, cur_cpu;
	uint64_t cpu_start; /* offset of the current CPU's data */
	uint8_t *chunk;	    /* compressed: pages waiting to form a chunk */
	size_t chunk_len;
	uint8_t *zout; /* a chunk compressed (zout_cap bytes, made at the first) */
	size_t zout_cap;
	uint32_t nr_chunks;
	void *cctx;
	struct hgt__zpipe *zp; /* the chunks compressed by workers (NULL: here) */
	bool zp_tried;
	bool spooling; /* the top buffer's CPUs written in any order (hgt__output_spool()) */

	char *strings;
	size_t strings_len;
	uint64_t first_done_pos; /* v7: OPTIONS#1 DONE's u64, patched at close */
	uint64_t hdr_opt_pos;	 /* v7: first OPTIONS offset in the initial header */
};

/* Record the first error: "PATH: message" into hgt_last_error(). Returns -err. */
static int out_error(struct hgt_output *o, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int out_error(struct hgt_output *o, int err, const char *fmt, ...)
{
	char what[HGT__ERRLEN], line[HGT__ERRLEN + 256];
	va_list ap;

	if (o->err)
		return o->err;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "%s: %s", o->path, what);
	hgt__set_last_error(line);
	o->err = -err;
	return o->err;
}

static int pwrite_now(struct hgt_output *o, const void *p, size_t n, uint64_t off)
{
	int ret = hgt__pwrite_full(o->fd, p, n, off);

	if (ret)
		return out_error(o, -ret, "offset 0x%llx: write failed: %s",
				 (unsigned long long)off, strerror(-ret));
	return 0;
}

/* What wr() gathered, into the file. */
static int wb_flush(struct hgt_output *o)
{
	size_t n = o->wb_len;

	if (o->err)
		return o->err;
	o->wb_len = 0;
	return n ? pwrite_now(o, o->wb, n, o->wb_off) : 0;
}

/* @n bytes at @off, after what wr() gathered (a patch may fall inside it). */
static int pwrite_all(struct hgt_output *o, const void *p, size_t n, uint64_t off)
{
	int ret = wb_flush(o);

	return ret ? ret : pwrite_now(o, p, n, off);
}

/* @n bytes at the end: gathered in o->wb when they fit, so that a compressed chunk and its
 * sizes are one write(2) with the chunks around it. */
static int wr(struct hgt_output *o, const void *p, size_t n)
{
	int ret = 0;

	if (o->err)
		return o->err;
	if (!o->wb && n < WBUF_SIZE)
		o->wb = malloc(WBUF_SIZE); /* without it, every write goes at once */
	if (o->wb_len + n > WBUF_SIZE)
		ret = wb_flush(o);
	if (!ret && o->wb && n < WBUF_SIZE) {
		if (!o->wb_len)
			o->wb_off = o->pos;
		memcpy(o->wb + o->wb_len, p, n);
		o->wb_len += n;
	} else if (!ret) {
		ret = pwrite_now(o, p, n, o->pos);
	}
	if (!ret)
		o->pos += n;
	return ret;
}

static int wr16(struct hgt_output *o, uint16_t v)
{
	return wr(o, &v, 2);
}

static int wr32(struct hgt_output *o, uint32_t v)
{
	return wr(o, &v, 4);
}

static int wr64(struct hgt_output *o, uint64_t v)
{
	return wr(o, &v, 8);
}

static int patch64(struct hgt_output *o, uint64_t off, uint64_t v)
{
	return pwrite_all(o, &v, 8, off);
}

/* Zero bytes up to the next multiple of @align. */
static int pad_to(struct hgt_output *o, uint64_t align)
{
	static const uint8_t zero[4096];
	uint64_t n = (align - o->pos % align) % align;

	while (n) {
		size_t k = n < sizeof(zero) ? (size_t)n : sizeof(zero);
		int ret = wr(o, zero, k);

		if (ret)
			return ret;
		n -= k;
	}
	return 0;
}

/* Add a description string; returns its id (offset in the strings of this file). */
static int32_t add_string(struct hgt_output *o, const char *s)
{
	size_t len = strlen(s) + 1;
	char *n = realloc(o->strings, o->strings_len + len);

	if (!n) {
		out_error(o, ENOMEM, "out of memory");
		return -1;
	}
	memcpy(n + o->strings_len, s, len);
	o->strings = n;
	o->strings_len += len;
	return (int32_t)(o->strings_len - len);
}

static int sec_header(struct hgt_output *o, uint16_t id, uint16_t flags, int32_t desc,
		      uint64_t size)
{
	int ret = wr16(o, id);

	if (!ret)
		ret = wr16(o, flags);
	if (!ret)
		ret = wr32(o, (uint32_t)desc);
	if (!ret)
		ret = wr64(o, size);
	return ret;
}

static int opt_header(struct hgt_output *o, uint16_t id, uint32_t size)
{
	int ret = wr16(o, id);

	return ret ? ret : wr32(o, size);
}

/**
 * hgt_compression_parse - parse a compression name.
 */
int hgt_compression_parse(const char *name, enum hgt_compression *comp)
{
	if (!strcmp(name, "none"))
		*comp = HGT_COMPRESS_NONE;
	else if (!strcmp(name, "zlib"))
		*comp = HGT_COMPRESS_ZLIB;
	else if (!strcmp(name, "zstd") || !strcmp(name, "any"))
		*comp = HGT_COMPRESS_ZSTD;
	else
		return -EINVAL;
	return 0;
}

static const char *comp_name(enum hgt_compression c)
{
	return c == HGT_COMPRESS_ZSTD ? "zstd" : c == HGT_COMPRESS_ZLIB ? "zlib" : "none";
}

/**
 * hgt_output_create - start a new trace.dat file.
 */
struct hgt_output *hgt_output_create(const char *path, const struct hgt_output_opts *opts)
{
	struct hgt_output_opts oo = { 0 };
	struct hgt_output *o;
	uint8_t hdr[64];
	size_t n = 0;
	char line[HGT__ERRLEN];

	if (opts) {
		if (opts->sz < sizeof(size_t) || opts->sz > sizeof(oo)) {
			errno = EINVAL;
			return NULL;
		}
		memcpy(&oo, opts, opts->sz);
	}
	if (!oo.version)
		oo.version = 7;
	if (!oo.page_size)
		oo.page_size = 4096;
	if (!oo.long_size)
		oo.long_size = 8;
	if ((oo.version != 6 && oo.version != 7) || (oo.version == 6 && oo.compression) ||
	    oo.page_size < 64 || oo.page_size > HGT__MAX_PAGE ||
	    (oo.long_size != 4 && oo.long_size != 8)) {
		snprintf(
			line, sizeof(line),
			"%s: cannot write version %d with compression %s, page size %u, long size %d (version 6 has no compression)",
			path, oo.version, comp_name(oo.compression), oo.page_size, oo.long_size);
		hgt__set_last_error(line);
		errno = EINVAL;
		return NULL;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->path = strdup(path);
	o->version = oo.version;
	o->comp = oo.compression;
	o->page_size = oo.page_size;
	o->long_size = oo.long_size;
	o->cur_buf = -1;
	o->nf = o->path ? hgt_newfile_open(path, oo.sync ? HGT_NEWFILE_SYNC : 0) : NULL;
	if (!o->nf) {
		int e = o->path ? errno : ENOMEM;

		free(o->path);
		free(o);
		errno = e;
		return NULL;
	}
	o->fd = hgt_newfile_fd(o->nf);
	if (o->comp) {
		o->cctx = hgt__cctx_new(o->comp);
		o->chunk = malloc((size_t)o->page_size * PAGES_IN_CHUNK);
		if ((o->comp == HGT_COMPRESS_ZSTD && !o->cctx) || !o->chunk)
			out_error(o, ENOMEM, "out of memory");
	}
	memcpy(hdr, "\x17\x08\x44tracing", 10);
	n = 10;
	n += (size_t)sprintf((char *)hdr + n, "%d", o->version) + 1;
	hdr[n++] = 0; /* little endian: the host's order */
	hdr[n++] = (uint8_t)o->long_size;
	memcpy(hdr + n, &o->page_size, 4);
	n += 4;
	wr(o, hdr, n);
	if (o->version >= 7) {
		const char *name = comp_name(o->comp), *ver = hgt__compression_version(o->comp);

		wr(o, name, strlen(name) + 1);
		wr(o, ver, strlen(ver) + 1);
		o->hdr_opt_pos = o->pos;
		wr64(o, 0); /* first OPTIONS section, patched */
	}
	return o;
}

int hgt_output_set_meta(struct hgt_output *o, unsigned int id, const void *blob, size_t len)
{
	int i = (int)id - HGT_OPT_HEADER_INFO;

	if (o->err)
		return o->err;
	if (i < 0 || i >= NR_META || o->data_started)
		return out_error(o, EINVAL, "metadata item %u (%s) cannot be set now", id,
				 hgt_option_name(id));
	free(o->meta[i]);
	free(o->packed[i]);
	o->packed[i] = NULL;
	o->meta[i] = malloc(len ? len : 1);
	if (!o->meta[i])
		return out_error(o, ENOMEM, "out of memory");
	memcpy(o->meta[i], blob, len);
	o->meta_len[i] = len;
	return 0;
}

/**
 * hgt__output_set_meta_packed - hgt_output_set_meta(), and @blob compressed with @comp
 * already (@clen bytes at @c, which must decompress to @blob): written as they are when
 * the file is version 7 with that compression, which makes the same bytes as compressing
 * @blob here would (no time spent on it at the end).
 */
int hgt__output_set_meta_packed(struct hgt_output *o, unsigned int id, const void *blob, size_t len,
				enum hgt_compression comp, const void *c, size_t clen)
{
	int i = (int)id - HGT_OPT_HEADER_INFO, ret = hgt_output_set_meta(o, id, blob, len);

	if (ret || !c || comp != o->comp || o->version < 7 || clen > UINT32_MAX)
		return ret;
	o->packed[i] = malloc(clen ? clen : 1);
	if (o->packed[i]) { /* else compressed at the end */
		memcpy(o->packed[i], c, clen);
		o->packed_len[i] = clen;
	}
	return 0;
}

int hgt_output_add_option(struct hgt_output *o, unsigned int id, const void *data, uint32_t size)
{
	struct out_opt *n;

	if (o->err)
		return o->err;
	if (id == HGT_OPT_DONE || id == HGT_OPT_BUFFER || id == HGT_OPT_CPUCOUNT ||
	    id == HGT_OPT_STRINGS || (id >= HGT_OPT_HEADER_INFO && id <= HGT_OPT_BUFFER_TEXT) ||
	    id == HGT_OPT_BTF_FILE || id == HGT_OPT_MODULES_FILE || id > 0xffff)
		return out_error(o, EINVAL, "option %u (%s) is written by the writer itself", id,
				 hgt_option_name(id));
	if (o->data_started)
		return out_error(o, EINVAL, "option %u added after the trace data", id);
	n = realloc(o->opts, sizeof(*n) * (size_t)(o->nr_opts + 1));
	if (!n)
		return out_error(o, ENOMEM, "out of memory");
	o->opts = n;
	n[o->nr_opts].id = (uint16_t)id;
	n[o->nr_opts].size = size;
	n[o->nr_opts].data = malloc(size ? size : 1);
	if (!n[o->nr_opts].data)
		return out_error(o, ENOMEM, "out of memory");
	memcpy(n[o->nr_opts].data, data, size);
	o->nr_opts++;
	return 0;
}

int hgt_output_add_buffer(struct hgt_output *o, const char *name, const char *clock, int nr_cpus)
{
	struct out_buf *n, *b;

	if (o->err)
		return o->err;
	if (o->data_started || nr_cpus < 0 || nr_cpus > HGT__MAX_CPUS ||
	    (o->nr_bufs == 0) != (*name == 0))
		return out_error(
			o, EINVAL,
			"buffer \"%s\" (%d CPUs): buffers must be declared before the data, the top instance (\"\") first and only once",
			name, nr_cpus);
	n = realloc(o->bufs, sizeof(*n) * (size_t)(o->nr_bufs + 1));
	if (!n)
		return out_error(o, ENOMEM, "out of memory");
	o->bufs = n;
	b = &n[o->nr_bufs];
	memset(b, 0, sizeof(*b));
	b->name = strdup(name);
	b->clock = strdup(clock ? clock : "");
	b->nr_cpus = nr_cpus;
	b->cpus = calloc((size_t)nr_cpus + 1, sizeof(*b->cpus));
	o->nr_bufs++;
	if (!b->name || !b->clock || !b->cpus)
		return out_error(o, ENOMEM, "out of memory");
	for (int c = 0; c <= nr_cpus; c++)
		b->cpus[c].spool = -1;
	return o->nr_bufs - 1;
}

static int check_meta(struct hgt_output *o)
{
	int i;

	for (i = 0; i < NR_META; i++)
		if (!o->meta[i])
			return out_error(o, EINVAL, "metadata item %d (%s) was not given",
					 i + HGT_OPT_HEADER_INFO,
					 hgt_option_name((unsigned)i + HGT_OPT_HEADER_INFO));
	if (!o->nr_bufs)
		return out_error(o, EINVAL, "no buffer declared");
	return 0;
}

/* v7: one metadata section, compressed when the file is. */
static int write_meta_section(struct hgt_output *o, unsigned int id, const char *desc,
			      uint64_t *where)
{
	const uint8_t *p = o->meta[id - HGT_OPT_HEADER_INFO];
	size_t len = o->meta_len[id - HGT_OPT_HEADER_INFO];
	int32_t sid = add_string(o, desc);
	int ret;

	*where = o->pos;
	if (!o->comp)
		return sec_header(o, (uint16_t)id, 0, sid, len) ?: wr(o, p, len);
	if (o->packed[id - HGT_OPT_HEADER_INFO]) {
		size_t clen = o->packed_len[id - HGT_OPT_HEADER_INFO];

		return sec_header(o, (uint16_t)id, 1, sid, 8 + clen) ?: wr32(o, (uint32_t)clen)
			?: wr32(o, (uint32_t)len) ?: wr(o, o->packed[id - HGT_OPT_HEADER_INFO], clen);
	}
	{
		uint8_t *c;
		size_t clen;

		if (len > UINT32_MAX)
			return out_error(o, EFBIG, "%s is too large to compress", desc);
		ret = hgt__compress(o->comp, o->cctx, p, len, &c, &clen);
		if (ret)
			return out_error(o, -ret, "cannot compress %s", desc);
		ret = sec_header(o, (uint16_t)id, 1, sid, 8 + clen);
		if (!ret)
			ret = wr32(o, (uint32_t)clen);
		if (!ret)
			ret = wr32(o, (uint32_t)len);
		if (!ret)
			ret = wr(o, c, clen);
		free(c);
		return ret;
	}
}

static int write_user_options(struct hgt_output *o)
{
	int i, ret = 0;

	for (i = 0; !ret && i < o->nr_opts; i++) {
		ret = opt_header(o, o->opts[i].id, o->opts[i].size);
		if (!ret)
			ret = wr(o, o->opts[i].data, o->opts[i].size);
	}
	return ret;
}

static const char *const meta_desc[NR_META] = {
	"headers", "ftrace events", "events format", "kallsyms", "printk", "command lines",
};

/* v7: metadata sections and OPTIONS#1. */
static int begin_v7(struct hgt_output *o)
{
	uint64_t where[NR_META], opt_off, size;
	int32_t sid;
	int i, ret = 0;

	for (i = 0; !ret && i < NR_META; i++)
		ret = write_meta_section(o, (unsigned)(i + HGT_OPT_HEADER_INFO), meta_desc[i],
					 &where[i]);
	if (ret)
		return ret;
	size = NR_META * 14 + 10 + 14;
	for (i = 0; i < o->nr_opts; i++)
		size += 6 + (uint64_t)o->opts[i].size;
	opt_off = o->pos;
	sid = add_string(o, "options");
	ret = sec_header(o, HGT_OPT_DONE, 0, sid, size);
	for (i = 0; !ret && i < NR_META; i++) {
		ret = opt_header(o, (uint16_t)(i + HGT_OPT_HEADER_INFO), 8);
		if (!ret)
			ret = wr64(o, where[i]);
	}
	if (!ret)
		ret = write_user_options(o);
	if (!ret)
		ret = opt_header(o, HGT_OPT_CPUCOUNT, 4);
	if (!ret)
		ret = wr32(o, (uint32_t)o->bufs[0].nr_cpus);
	if (!ret)
		ret = opt_header(o, HGT_OPT_DONE, 8);
	o->first_done_pos = o->pos;
	if (!ret)
		ret = wr64(o, 0);
	if (!ret && o->pos != opt_off + 16 + size)
		ret = out_error(o, EIO, "internal error: OPTIONS size %llu, wrote %llu",
				(unsigned long long)size,
				(unsigned long long)(o->pos - opt_off - 16));
	/* the first OPTIONS section offset sits in the last 8 bytes of the initial header */
	if (!ret)
		ret = patch64(o, o->hdr_opt_pos, opt_off);
	return ret;
}

/* v6: items, CPU count, options (instance BUFFER offsets patched later). */
static int begin_v6(struct hgt_output *o)
{
	int i, ret = 0;

	for (i = 0; !ret && i < NR_META; i++)
		ret = wr(o, o->meta[i], o->meta_len[i]);
	if (!ret)
		ret = wr32(o, (uint32_t)o->bufs[0].nr_cpus);
	if (ret)
		return ret;
	if (o->nr_opts || o->nr_bufs > 1) {
		ret = wr(o, "options  ", 10);
		if (!ret)
			ret = write_user_options(o);
		for (i = 1; !ret && i < o->nr_bufs; i++) {
			struct out_buf *b = &o->bufs[i];
			size_t nl = strlen(b->name) + 1;

			ret = opt_header(o, HGT_OPT_BUFFER, (uint32_t)(8 + nl));
			b->v6_opt_pos = o->pos;
			if (!ret)
				ret = wr64(o, 0);
			if (!ret)
				ret = wr(o, b->name, nl);
			if (!ret && b->nr_cpus != o->bufs[0].nr_cpus) {
				ret = opt_header(o, HGT_OPT_CPUCOUNT, 4);
				if (!ret)
					ret = wr32(o, (uint32_t)b->nr_cpus);
			}
		}
		if (!ret)
			ret = wr16(o, 0);
	}
	return ret;
}

static int begin_data(struct hgt_output *o)
{
	int ret;

	if (o->data_started)
		return o->err;
	o->data_started = true;
	ret = check_meta(o);
	if (ret)
		return ret;
	return o->version >= 7 ? begin_v7(o) : begin_v6(o);
}

ssize_t hgt__output_head(struct hgt_output *o, uint8_t **head)
{
	uint8_t *p;
	int ret = begin_data(o);

	if (!ret)
		ret = wb_flush(o);
	if (ret)
		return ret;
	p = malloc(o->pos ? o->pos : 1);
	if (!p)
		return -ENOMEM;
	for (uint64_t got = 0; got < o->pos;) {
		ssize_t r = pread(o->fd, p + got, o->pos - got, (off_t)got);

		if (r <= 0) {
			free(p);
			return out_error(o, r < 0 ? errno : EIO, "reading back its head: %s",
					 r < 0 ? strerror(errno) : "short file");
		}
		got += (uint64_t)r;
	}
	*head = p;
	return (ssize_t)o->pos;
}

/* Start buffer @i: its section header (v7) or flyrecord block (v6). */
static int start_buffer(struct hgt_output *o, int i)
{
	struct out_buf *b = &o->bufs[i];
	char desc[4096 + 32];
	int ret;

	b->started = true;
	b->sec_off = o->pos;
	if (o->version >= 7) {
		snprintf(desc, sizeof(desc), "buffer flyrecord %s", b->name);
		b->desc = add_string(o, desc);
		return sec_header(o, HGT_OPT_BUFFER, o->comp ? 1 : 0, b->desc, 0);
	}
	if (b->v6_opt_pos) {
		ret = patch64(o, b->v6_opt_pos, b->sec_off);
		if (ret)
			return ret;
	}
	ret = wr(o, "flyrecord", 10);
	for (int c = 0; !ret && c < b->nr_cpus; c++) {
		ret = wr64(o, 0);
		if (!ret)
			ret = wr64(o, 0);
	}
	if (!ret) {
		char clk[4096 + 8];
		int n = snprintf(clk, sizeof(clk), "[%s]", *b->clock ? b->clock : "local");

		ret = wr64(o, (uint64_t)n);
		if (!ret)
			ret = wr(o, clk, (size_t)n);
	}
	return ret;
}

/* ---- a spooled buffer: each CPU's chunks in a file of their own, put in place at its end */

static int end_chunks(struct hgt_output *o);

/* A chunk of the current CPU, after its others in its spool. */
static int spool_chunk(struct hgt_output *o, const uint8_t *data, size_t clen, size_t len)
{
	struct out_cpu *c = &o->bufs[o->cur_buf].cpus[o->cur_cpu];
	uint32_t sizes[2] = { (uint32_t)clen, (uint32_t)len };
	int ret;

	if (o->err)
		return o->err;
	ret = hgt__pwrite_full(c->spool, sizes, sizeof(sizes), c->spool_len);
	if (!ret)
		ret = hgt__pwrite_full(c->spool, data, clen, c->spool_len + sizeof(sizes));
	if (ret)
		return out_error(o, -ret, "cpu %d: its compressed pages cannot be spooled: %s",
				 o->cur_cpu, strerror(-ret));
	c->spool_len += sizeof(sizes) + clen;
	o->nr_chunks++;
	return 0;
}

/* @c's spool, at its first pages: an unnamed file beside the output. */
static int spool_open(struct hgt_output *o, struct out_cpu *c)
{
	const char *slash = strrchr(o->path, '/');
	char *dir = slash ? strndup(o->path, (size_t)(slash - o->path) + 1) : NULL;

	c->spool = hgt__tmpfile(slash ? dir : ".");
	free(dir);
	if (c->spool < 0)
		return out_error(o, errno, "no file to spool a CPU's compressed pages in: %s",
				 strerror(errno));
	c->present = true;
	c->spool_len = 0;
	c->spool_chunks = 0;
	o->nr_chunks = 0;
	o->chunk_len = 0;
	return 0;
}

/* @c's spool after what is written: a page-aligned section, its chunk count first. */
static int spool_out(struct hgt_output *o, struct out_cpu *c)
{
	uint64_t at = 0;
	bool by_range = true;
	int ret = pad_to(o, o->page_size);

	c->offset = o->pos;
	if (!ret)
		ret = wr32(o, c->spool_chunks);
	if (!ret)
		ret = wb_flush(o);
	while (!ret && at < c->spool_len) {
		size_t want = c->spool_len - at < WBUF_SIZE ? c->spool_len - at : WBUF_SIZE;
		loff_t in = (loff_t)at, out = (loff_t)(o->pos + at);
		ssize_t n;

		/* in the kernel where it can (the spool is beside the output); else through
		 * the write buffer (a spool in /tmp, on another file system) */
		n = by_range ? copy_file_range(c->spool, &in, o->fd, &out, c->spool_len - at, 0)
			     : pread(c->spool, o->wb, want, (off_t)at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && by_range && at == 0 && o->wb) {
			by_range = false;
			continue;
		}
		if (n > 0 && !by_range)
			ret = pwrite_now(o, o->wb, (size_t)n, o->pos + at);
		if (n <= 0)
			ret = out_error(o, n ? errno : EIO,
					"offset 0x%llx: a CPU's spooled pages cannot be copied: %s",
					(unsigned long long)(o->pos + at),
					n ? strerror(errno) : "the spool ended early");
		else
			at += (uint64_t)n;
	}
	o->pos += at;
	c->size = o->pos - c->offset - 4;
	close(c->spool);
	c->spool = -1;
	return ret;
}

/* The spooled buffer's end: every CPU's spool into the file, in CPU order. */
static int spool_end(struct hgt_output *o, struct out_buf *b)
{
	int ret = end_chunks(o);

	if (o->cur_cpu >= 0)
		b->cpus[o->cur_cpu].spool_chunks = o->nr_chunks;
	o->spooling = false;
	o->cur_cpu = -1;
	for (int i = 0; !ret && i < b->nr_cpus; i++)
		if (b->cpus[i].present)
			ret = spool_out(o, &b->cpus[i]);
	return ret;
}

/* The spooled buffer's CPU @cpu made the current one: the last one's chunks all out. */
static int spool_switch(struct hgt_output *o, int cpu)
{
	struct out_cpu *c = o->bufs[o->cur_buf].cpus;
	int ret = o->cur_cpu >= 0 ? end_chunks(o) : 0;

	if (ret)
		return ret;
	if (o->cur_cpu >= 0)
		c[o->cur_cpu].spool_chunks = o->nr_chunks;
	o->cur_cpu = cpu;
	o->nr_chunks = c[cpu].spool_chunks;
	o->chunk_len = 0;
	return 0;
}

/* A compressed chunk of @len bytes, @clen of them: its two sizes and its data. */
static int emit_chunk(void *ctx, const uint8_t *data, size_t clen, size_t len)
{
	struct hgt_output *o = ctx;
	int ret;

	if (o->spooling)
		return spool_chunk(o, data, clen, len);
	ret = wr32(o, (uint32_t)clen);

	if (!ret)
		ret = wr32(o, (uint32_t)len);
	if (!ret)
		ret = wr(o, data, clen);
	o->nr_chunks++;
	return ret;
}

/* @len bytes at @src (a chunk at most) compressed and written as a chunk */
static int put_chunk(struct hgt_output *o, const uint8_t *src, size_t len)
{
	size_t clen;
	int ret;

	if (!o->zout) {
		o->zout_cap = hgt__compress_bound(o->comp, (size_t)o->page_size * PAGES_IN_CHUNK);
		o->zout = o->zout_cap ? malloc(o->zout_cap) : NULL;
		if (!o->zout)
			return out_error(o, ENOMEM, "cannot compress a chunk of %zu bytes", len);
	}
	ret = hgt__compress_into(o->comp, o->cctx, src, len, o->zout, o->zout_cap, &clen);
	if (ret)
		return out_error(o, -ret, "cannot compress a chunk of %zu bytes", len);
	return emit_chunk(o, o->zout, clen, len);
}

static int flush_chunk(struct hgt_output *o)
{
	int ret;

	if (!o->chunk_len)
		return 0;
	ret = put_chunk(o, o->chunk, o->chunk_len);
	o->chunk_len = 0;
	return ret;
}

/* The CPU's chunks, all written (the workers' too). */
static int end_chunks(struct hgt_output *o)
{
	int ret;

	if (!o->zp)
		return flush_chunk(o);
	ret = hgt__zpipe_flush(o->zp, emit_chunk, o);
	return ret && !o->err ? out_error(o, -ret, "cannot compress its pages") : ret;
}

/* Close the current CPU: flush, patch the chunk count, record offset and size. */
static int end_cpu(struct hgt_output *o)
{
	struct out_cpu *c;
	int ret = 0;

	if (o->cur_buf < 0 || o->cur_cpu < 0)
		return 0;
	c = &o->bufs[o->cur_buf].cpus[o->cur_cpu];
	if (c->present) {
		if (o->comp) {
			ret = end_chunks(o);
			if (!ret)
				ret = pwrite_all(o, &o->nr_chunks, 4, c->offset);
			/* the stored size does not count the u32 chunk count */
			c->size = o->pos - c->offset - 4;
		} else {
			c->size = o->pos - c->offset;
		}
	}
	o->cur_cpu = -1;
	return ret;
}

/* Close the current buffer: section size (v7) or CPU table (v6). */
static int end_buffer(struct hgt_output *o)
{
	struct out_buf *b;
	int ret, i;

	if (o->cur_buf < 0)
		return 0;
	b = &o->bufs[o->cur_buf];
	ret = o->spooling ? spool_end(o, b) : end_cpu(o);
	if (ret)
		return ret;
	if (o->version >= 7)
		return patch64(o, b->sec_off + 8, o->pos - b->sec_off - 16);
	for (i = 0; !ret && i < b->nr_cpus; i++) {
		uint64_t v[2] = { b->cpus[i].offset, b->cpus[i].size };

		if (!b->cpus[i].present) {
			v[0] = o->pos;
			v[1] = 0;
		}
		ret = pwrite_all(o, v, 16, b->sec_off + 10 + 16 * (uint64_t)i);
	}
	return ret;
}

/* Close buffers up to @buf and start @buf (and every buffer between). */
static int advance_to_buffer(struct hgt_output *o, int buf)
{
	int ret = 0;

	while (!ret && o->cur_buf < buf) {
		ret = end_buffer(o);
		if (ret)
			return ret;
		o->cur_buf++;
		o->cur_cpu = -1;
		ret = start_buffer(o, o->cur_buf);
	}
	return ret;
}

/* Move the write state to (@buf, @cpu), closing and opening what lies between. */
static int seek_cpu(struct hgt_output *o, int buf, int cpu)
{
	int ret;

	if (o->spooling && buf == o->cur_buf)
		return cpu == o->cur_cpu ? 0 : spool_switch(o, cpu);
	if (buf < o->cur_buf || (buf == o->cur_buf && cpu < o->cur_cpu))
		return out_error(
			o, EINVAL,
			"buffer %d cpu %d written after buffer %d cpu %d: write buffers in order and CPUs in ascending order",
			buf, cpu, o->cur_buf, o->cur_cpu);
	if (buf == o->cur_buf && cpu == o->cur_cpu)
		return 0;
	ret = advance_to_buffer(o, buf);
	if (!ret && o->spooling)
		return spool_switch(o, cpu);
	if (!ret)
		ret = end_cpu(o);
	if (!ret)
		o->cur_cpu = cpu;
	return ret;
}

/* CPU @cpu of buffer @buf made the one written, @len bytes to come (whole pages). */
static int cpu_open(struct hgt_output *o, int buf, int cpu, size_t len)
{
	int ret;

	if (o->err)
		return o->err;
	if (o->latency)
		return out_error(o, EINVAL, "CPU data written into a latency trace");
	ret = begin_data(o);
	if (ret)
		return ret;
	if (buf < 0 || buf >= o->nr_bufs || cpu < 0 || cpu >= o->bufs[buf].nr_cpus)
		return out_error(o, EINVAL, "no buffer %d cpu %d", buf, cpu);
	if (len % o->page_size)
		return out_error(o, EINVAL,
				 "buffer %d cpu %d: %zu bytes are not whole %u-byte pages", buf,
				 cpu, len, o->page_size);
	return seek_cpu(o, buf, cpu);
}

/* The current CPU's section begun at its first pages: its offset, and a compressed one's
 * chunk count (patched at its end). */
static int cpu_present(struct hgt_output *o, int buf, int cpu)
{
	struct out_cpu *c = &o->bufs[buf].cpus[cpu];
	int ret;

	if (c->present)
		return 0;
	if (o->spooling)
		return spool_open(o, c);
	ret = pad_to(o, o->page_size);
	if (ret)
		return ret;
	c->present = true;
	c->offset = o->pos;
	if (!o->comp)
		return 0;
	o->nr_chunks = 0;
	o->chunk_len = 0;
	return wr32(o, 0);
}

/* The compressing workers, tried at the first pages: for the rest when CPUs are free. */
static struct hgt__zpipe *zpipe(struct hgt_output *o)
{
	if (!o->zp_tried) {
		int n = hgt__zpipe_threads();

		o->zp_tried = true;
		o->zp = n > 0 ? hgt__zpipe_new(o->comp, (size_t)o->page_size * PAGES_IN_CHUNK, n)
			      : NULL;
	}
	return o->zp;
}

/* @len bytes at @p compressed here, chunk by chunk: a whole chunk from the caller's pages. */
static int put_inline(struct hgt_output *o, const uint8_t *p, size_t len)
{
	int ret = 0;

	while (len && !ret) {
		size_t whole = (size_t)o->page_size * PAGES_IN_CHUNK, room = whole - o->chunk_len;
		size_t k = len < room ? len : room;

		if (k == whole) {
			ret = put_chunk(o, p, k); /* a whole chunk: from the caller's pages */
		} else {
			memcpy(o->chunk + o->chunk_len, p, k);
			o->chunk_len += k;
			ret = o->chunk_len == whole ? flush_chunk(o) : 0;
		}
		p += k;
		len -= k;
	}
	return ret;
}

int hgt_output_write_cpu(struct hgt_output *o, int buf, int cpu, const void *pages, size_t len)
{
	int ret = cpu_open(o, buf, cpu, len);

	if (ret || !len)
		return ret;
	ret = cpu_present(o, buf, cpu);
	if (ret)
		return ret;
	if (!o->comp)
		return wr(o, pages, len);
	if (zpipe(o)) {
		ret = hgt__zpipe_put(o->zp, pages, len, emit_chunk, o);
		return ret && !o->err ? out_error(o, -ret, "cannot compress its pages") : ret;
	}
	return put_inline(o, pages, len);
}

/**
 * hgt__output_cpu_space - where CPU @cpu of buffer @buf's next pages can be read in place,
 * compressed from there with no copy: *@p, room for *@cap bytes (whole pages), taken by
 * hgt__output_cpu_commit(). *@p is NULL where hgt_output_write_cpu() copies nothing anyway
 * (no compression, or no workers to compress beside the writer). Returns 0 or -errno.
 */
int hgt__output_cpu_space(struct hgt_output *o, int buf, int cpu, uint8_t **p, size_t *cap)
{
	int ret = cpu_open(o, buf, cpu, 0);

	*p = NULL;
	*cap = 0;
	if (!ret && o->comp && zpipe(o))
		*p = hgt__zpipe_space(o->zp, cap);
	return ret;
}

/**
 * hgt__output_cpu_commit - the first @len bytes read into hgt__output_cpu_space()'s room
 * (whole pages, no more than it gave) appended to that CPU, as hgt_output_write_cpu()
 * would. Returns 0 or -errno.
 */
int hgt__output_cpu_commit(struct hgt_output *o, int buf, int cpu, size_t len)
{
	int ret = cpu_open(o, buf, cpu, len);

	if (ret || !len)
		return ret;
	if (!o->zp)
		return out_error(o, EINVAL, "buffer %d cpu %d: pages committed with no room given",
				 buf, cpu);
	ret = cpu_present(o, buf, cpu);
	if (!ret)
		ret = hgt__zpipe_commit(o->zp, len, emit_chunk, o);
	return ret && !o->err ? out_error(o, -ret, "cannot compress its pages") : ret;
}

/**
 * hgt__output_spool - the top buffer's CPUs may then be written in any order, each more
 * than once (a copy that goes through all of them together, oldest pages first): each
 * CPU's compressed chunks go to an unnamed file of its own beside the output, and at the
 * buffer's end into the output in CPU order, as one section each. Call before its first
 * pages. Compressed version 7 files only (ENOTSUP: write the CPUs in order). Returns 0 or
 * -errno.
 */
int hgt__output_spool(struct hgt_output *o)
{
	if (o->err)
		return o->err;
	if (o->version < 7 || !o->comp || o->latency)
		return -ENOTSUP;
	if (o->cur_buf >= 0)
		return out_error(o, EINVAL, "spooled after the top buffer's first pages");
	o->spooling = true;
	return 0;
}

/**
 * hgt_output_write_latency - make the file a latency (ASCII) trace: @len bytes of @text
 * (the latency tracer's trace file) take the place of ring-buffer pages. The top buffer,
 * declared with hgt_output_add_buffer() and the only one, gives the CPU count and the
 * clock. Call once, instead of hgt_output_write_cpu(). Returns 0 or -errno.
 */
int hgt_output_write_latency(struct hgt_output *o, const void *text, size_t len)
{
	const uint8_t *p = text;
	int ret;

	if (o->err)
		return o->err;
	if (o->latency || o->cur_buf >= 0)
		return out_error(o, EINVAL, "latency text written after other data");
	if (o->nr_bufs != 1 || *o->bufs[0].name)
		return out_error(o, EINVAL, "a latency trace has the top buffer only");
	ret = begin_data(o);
	if (ret)
		return ret;
	o->latency = true;
	if (o->version < 7)
		return wr(o, "latency  ", 10) ?: wr(o, text, len);
	o->lat_off = o->pos;
	ret = sec_header(o, HGT_OPT_BUFFER_TEXT, o->comp ? 1 : 0, add_string(o, "buffer latency"),
			 0);
	if (!ret && !o->comp)
		ret = wr(o, text, len);
	if (!ret && o->comp) {
		/* u32 chunk count, then {u32 compressed size, u32 size, data} */
		o->nr_chunks = 0;
		o->chunk_len = 0;
		ret = wr32(o, 0);
		while (!ret && len) {
			size_t k = (size_t)o->page_size * PAGES_IN_CHUNK;

			if (k > len)
				k = len;
			ret = put_chunk(o, p, k); /* the last one may be short */
			p += k;
			len -= k;
		}
		if (!ret)
			ret = pwrite_all(o, &o->nr_chunks, 4, o->lat_off + 16);
	}
	if (!ret)
		ret = patch64(o, o->lat_off + 8, o->pos - o->lat_off - 16);
	return ret;
}

/* v7, latency trace: OPTIONS#2 with the BUFFER_TEXT option (section offset, name, clock). */
static int finish_latency_options(struct hgt_output *o, int32_t sid, uint64_t *opt_off)
{
	const char *clock = *o->bufs[0].clock ? o->bufs[0].clock : "local";
	uint32_t osize = (uint32_t)(8 + 1 + strlen(clock) + 1);
	int ret;

	*opt_off = o->pos;
	ret = sec_header(o, HGT_OPT_DONE, 0, sid, 6 + (uint64_t)osize + 14);
	if (!ret)
		ret = opt_header(o, HGT_OPT_BUFFER_TEXT, osize);
	if (!ret)
		ret = wr64(o, o->lat_off);
	if (!ret)
		ret = wr(o, "", 1);
	if (!ret)
		ret = wr(o, clock, strlen(clock) + 1);
	return ret;
}

/* v7: OPTIONS#2 with one BUFFER option per buffer, then STRINGS. */
static int finish_v7(struct hgt_output *o)
{
	uint64_t size = 14, opt_off;
	int32_t sid, ssid;
	int i, c, ret;

	for (i = 0; i < o->nr_bufs; i++) {
		struct out_buf *b = &o->bufs[i];
		uint32_t n = 0;

		for (c = 0; c < b->nr_cpus; c++)
			n += b->cpus[c].present;
		size += 6 + 8 + strlen(b->name) + 1 + strlen(b->clock) + 1 + 8 + 20ULL * n;
	}
	sid = add_string(o, "options");
	ssid = add_string(o, "strings");
	opt_off = o->pos;
	if (o->latency)
		ret = finish_latency_options(o, sid, &opt_off);
	else
		ret = sec_header(o, HGT_OPT_DONE, 0, sid, size);
	for (i = 0; !ret && !o->latency && i < o->nr_bufs; i++) {
		struct out_buf *b = &o->bufs[i];
		uint32_t n = 0;

		for (c = 0; c < b->nr_cpus; c++)
			n += b->cpus[c].present;
		ret = opt_header(
			o, HGT_OPT_BUFFER,
			(uint32_t)(8 + strlen(b->name) + 1 + strlen(b->clock) + 1 + 8 + 20ULL * n));
		if (!ret)
			ret = wr64(o, b->sec_off);
		if (!ret)
			ret = wr(o, b->name, strlen(b->name) + 1);
		if (!ret)
			ret = wr(o, b->clock, strlen(b->clock) + 1);
		if (!ret)
			ret = wr32(o, o->page_size);
		if (!ret)
			ret = wr32(o, n);
		for (c = 0; !ret && c < b->nr_cpus; c++) {
			if (!b->cpus[c].present)
				continue;
			ret = wr32(o, (uint32_t)c);
			if (!ret)
				ret = wr64(o, b->cpus[c].offset);
			if (!ret)
				ret = wr64(o, b->cpus[c].size);
		}
	}
	if (!ret)
		ret = opt_header(o, HGT_OPT_DONE, 8);
	if (!ret)
		ret = wr64(o, 0);
	if (!ret)
		ret = patch64(o, o->first_done_pos, opt_off);
	if (!ret)
		ret = sec_header(o, HGT_OPT_STRINGS, 0, ssid, o->strings_len);
	if (!ret)
		ret = wr(o, o->strings, o->strings_len);
	return ret;
}

static void out_free(struct hgt_output *o)
{
	int i;

	for (i = 0; i < NR_META; i++) {
		free(o->meta[i]);
		free(o->packed[i]);
	}
	for (i = 0; i < o->nr_opts; i++)
		free(o->opts[i].data);
	for (i = 0; i < o->nr_bufs; i++) {
		for (int c = 0; o->bufs[i].cpus && c < o->bufs[i].nr_cpus; c++)
			if (o->bufs[i].cpus[c].spool >= 0)
				close(o->bufs[i].cpus[c].spool);
		free(o->bufs[i].name);
		free(o->bufs[i].clock);
		free(o->bufs[i].cpus);
	}
	hgt__cctx_free(o->comp, o->cctx);
	hgt__zpipe_free(o->zp);
	free(o->opts);
	free(o->bufs);
	free(o->chunk);
	free(o->zout);
	free(o->wb);
	free(o->strings);
	free(o->path);
	free(o);
}

void hgt_output_abort(struct hgt_output *o)
{
	if (!o)
		return;
	hgt_newfile_abort(o->nf);
	out_free(o);
}

/* hgt__newfile_before_publish() of the file @o writes. */
void hgt__output_before_publish(struct hgt_output *o, int (*fn)(void *ctx, int fd), void *ctx)
{
	hgt__newfile_before_publish(o->nf, fn, ctx);
}

int hgt_output_close(struct hgt_output *o)
{
	int ret;

	if (!o)
		return -EINVAL;
	ret = begin_data(o);
	/* start and end every buffer that received no data, in order */
	if (!ret && !o->latency)
		ret = advance_to_buffer(o, o->nr_bufs - 1);
	if (!ret && !o->latency)
		ret = end_buffer(o);
	if (!ret && o->version >= 7)
		ret = finish_v7(o);
	if (!ret)
		ret = wb_flush(o);
	if (ret) {
		hgt_output_abort(o);
		return ret;
	}
	ret = hgt_newfile_commit(o->nf);
	out_free(o);
	return ret;
}
