// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Opening a trace.dat file: initial header, then the v6 sequential layout or the v7 sections,
 * options and metadata. Event data is left on disk for the cursors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <traceevent/event-parse.h>

#include "tracedat-local.h"

typedef int (*meta_fn)(struct hgt_input *in, struct hgt__rd *rd);

static const uint8_t magic[10] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };

static int add_section(struct hgt_input *in, uint16_t id, uint16_t flags, int32_t sid, uint64_t off,
		       uint64_t size)
{
	struct hgt_section *s = in->sections;

	if (!(in->nr_sections & (in->nr_sections - 1))) { /* 0, 1, 2, 4...: grow by doubling */
		s = realloc(in->sections, sizeof(*s) * (in->nr_sections ? 2 * in->nr_sections : 1));
		if (!s)
			return -ENOMEM;
		in->sections = s;
	}
	s = &in->sections[in->nr_sections++];
	s->id = id;
	s->flags = flags;
	s->string_id = sid;
	s->offset = off;
	s->size = size;
	s->desc = "";
	return 0;
}

static int read_initial_header(struct hgt_input *in)
{
	struct hgt__rd rd = { .in = in, .pos = 0, .end = in->file_size, .what = "initial header" };
	uint8_t m[10], b[2];
	char *ver = NULL, *end;
	long v;
	int ret;

	if (in->file_size < sizeof(m))
		return hgt__error(in, 0, EBADMSG, "file is %llu bytes, too short for a trace.dat",
				  (unsigned long long)in->file_size);
	ret = hgt__rd_bytes(&rd, m, sizeof(m));
	if (ret)
		return ret;
	if (memcmp(m, magic, sizeof(m)))
		return hgt__error(in, 0, EBADMSG,
				  "bad magic: expected 17 08 44 \"tracing\", found %02x %02x %02x",
				  m[0], m[1], m[2]);
	ret = hgt__rd_str(&rd, &ver, 16);
	if (ret)
		return ret;
	v = strtol(ver, &end, 10);
	if (*ver == '\0' || *end != '\0' || v < 6 || v > 7) {
		ret = hgt__error(in, 10, EPROTONOSUPPORT,
				 "unsupported file version \"%s\" (hgtrace reads 6 and 7)", ver);
		free(ver);
		return ret;
	}
	free(ver);
	in->version = (int)v;
	ret = hgt__rd_bytes(&rd, b, 2);
	if (ret)
		return ret;
	if (b[0] > 1)
		return hgt__error(in, rd.pos - 2, EBADMSG,
				  "endianness byte is %u (expected 0 or 1)", b[0]);
	in->big_endian = b[0] == 1;
	in->long_size = b[1];
	if (in->long_size != 4 && in->long_size != 8)
		return hgt__error(in, rd.pos - 1, EBADMSG, "long size is %d (expected 4 or 8)",
				  in->long_size);
	ret = hgt__rd_u32(&rd, &in->page_size);
	if (ret)
		return ret;
	if (in->page_size < 64 || in->page_size > HGT__MAX_PAGE ||
	    (in->page_size & (in->page_size - 1)))
		return hgt__error(in, rd.pos - 4, EBADMSG,
				  "page size %u is not a power of two between 64 and %u",
				  in->page_size, HGT__MAX_PAGE);
	if (in->version >= 7) {
		ret = hgt__rd_str(&rd, &in->comp_name, 64);
		if (!ret)
			ret = hgt__rd_str(&rd, &in->comp_version, 64);
		if (ret)
			return ret;
		if (!strcmp(in->comp_name, "none") || !*in->comp_name) {
			in->comp = HGT_COMPRESS_NONE;
		} else if (!strcmp(in->comp_name, "zstd")) {
			in->comp = HGT_COMPRESS_ZSTD;
		} else if (!strcmp(in->comp_name, "zlib")) {
			in->comp = HGT_COMPRESS_ZLIB;
		} else {
			return hgt__error(
				in,
				rd.pos - strlen(in->comp_version) - 1 - strlen(in->comp_name) - 1,
				EPROTONOSUPPORT,
				"unknown compression \"%s\" (hgtrace reads none, zlib, zstd)",
				in->comp_name);
		}
		ret = hgt__rd_u64(&rd, &in->first_options);
		if (ret)
			return ret;
	} else {
		in->comp_name = strdup("none");
		in->comp_version = strdup("");
		if (!in->comp_name || !in->comp_version)
			return -ENOMEM;
	}
	in->header_len = rd.pos;
	return 0;
}

/* Walk every v7 section header from the end of the initial header to EOF; gather STRINGS. */
static int walk_sections(struct hgt_input *in)
{
	uint64_t off = in->header_len;
	int ret, i;

	while (off < in->file_size) {
		uint8_t hdr[16];
		uint64_t size;
		static const uint8_t zero[16];

		if (in->nr_sections >= HGT__MAX_SECTIONS)
			return hgt__error(
				in, off, EBADMSG,
				"more than %d sections: not a trace.dat written by a tracer",
				HGT__MAX_SECTIONS);
		if (in->file_size - off < 16)
			return hgt__error(in, off, EBADMSG,
					  "%llu trailing bytes are too few for a section header",
					  (unsigned long long)(in->file_size - off));
		ret = hgt__pread_all(in, hdr, 16, off);
		if (ret)
			return ret;
		/* an empty OPTIONS header, all zeros: padding after the last section (an
		 * OPTIONS section holds at least its DONE option); sections are found by the
		 * offsets that point at them, so the walk ends here */
		if (!memcmp(hdr, zero, 16))
			break;
		size = hgt__get64(in, hdr + 8);
		if (size > in->file_size - off - 16)
			return hgt__error(
				in, off, EBADMSG,
				"section %u (%s) claims %llu bytes, %llu remain in the file",
				hgt__get16(in, hdr), hgt_option_name(hgt__get16(in, hdr)),
				(unsigned long long)size,
				(unsigned long long)(in->file_size - off - 16));
		ret = add_section(in, hgt__get16(in, hdr), hgt__get16(in, hdr + 2),
				  (int32_t)hgt__get32(in, hdr + 4), off, size);
		if (ret)
			return ret;
		if (hgt__get16(in, hdr) == HGT_OPT_STRINGS) {
			uint8_t *body;
			uint64_t len;
			char *s;

			ret = hgt__load_section(in, off, HGT_OPT_STRINGS, &body, &len);
			if (ret)
				return ret;
			s = realloc(in->strings, in->strings_len + len + 1);
			if (!s) {
				free(body);
				return -ENOMEM;
			}
			memcpy(s + in->strings_len, body, len);
			in->strings_len += len;
			s[in->strings_len] = 0;
			in->strings = s;
			free(body);
		}
		off += 16 + size;
	}
	for (i = 0; i < in->nr_sections; i++) {
		int32_t sid = in->sections[i].string_id;

		if (sid >= 0 && (uint64_t)sid < in->strings_len)
			in->sections[i].desc = in->strings + sid;
	}
	return 0;
}

static int read_meta_section(struct hgt_input *in, unsigned int id, meta_fn fn, bool required)
{
	struct hgt__rd rd = { .in = in };
	uint8_t *body;
	uint64_t len;
	int ret;

	if (!in->sec_off[id]) {
		if (!required)
			return 0;
		return hgt__error(in, in->first_options, EBADMSG,
				  "no option %u (%s) points at its section", id,
				  hgt_option_name(id));
	}
	ret = hgt__load_section(in, in->sec_off[id], id, &body, &len);
	if (ret)
		return ret;
	rd.mem = body;
	rd.end = len;
	rd.sec_offset = in->sec_off[id];
	ret = fn(in, &rd);
	free(body);
	return ret;
}

/* Read a flyrecord block (v6): cpus x {u64 offset, u64 size} and the clock block. */
static int read_flyrecord_v6(struct hgt_input *in, struct hgt__rd *rd, int idx, int cpus)
{
	struct hgt__buffer *b = &in->bufs[idx];
	char tag[10];
	int ret, i;

	rd->what = "flyrecord";
	ret = hgt__rd_bytes(rd, tag, sizeof(tag));
	if (ret)
		return ret;
	if (memcmp(tag, "flyrecord", 10))
		return hgt__error(in, rd->pos - 10, EBADMSG,
				  "buffer \"%s\": expected \"flyrecord\"", b->name);
	b->cpus = calloc(cpus ? cpus : 1, sizeof(*b->cpus));
	if (!b->cpus)
		return -ENOMEM;
	b->pub.cpus = b->cpus;
	b->pub.nr_cpus = cpus;
	b->pub.page_size = in->page_size;
	for (i = 0; i < cpus; i++) {
		uint64_t off, size, at = rd->pos;

		ret = hgt__rd_u64(rd, &off);
		if (!ret)
			ret = hgt__rd_u64(rd, &size);
		if (ret)
			return ret;
		if (off > in->file_size || size > in->file_size - off)
			return hgt__error(
				in, at, EBADMSG,
				"buffer \"%s\" cpu %d: data at 0x%llx + %llu bytes lies past the end of the file (size %llu)",
				b->name, i, (unsigned long long)off, (unsigned long long)size,
				(unsigned long long)in->file_size);
		b->cpus[i].offset = off;
		b->cpus[i].size = size;
		b->cpus[i].present = true;
	}
	if (in->trace_clock) {
		uint64_t len, at = rd->pos;
		char *text = NULL;

		ret = hgt__rd_u64(rd, &len);
		if (!ret && len <= 4096)
			ret = hgt__rd_alloc(rd, &text, len);
		if (!ret && len <= 4096 && !strchr(text, '[')) {
			/* an empty (or bracketless) string: the TRACECLOCK option's clock stays,
			 * silently, as trace-cmd keeps it */
			if (!b->clock)
				b->clock = strdup("local");
		} else if (ret || len > 4096) {
			if (!(in->flags & HGT_OPEN_QUIET))
				fprintf(stderr,
					"hgtrace: %s: offset 0x%llx: File has trace_clock bug, using local clock\n",
					in->path, (unsigned long long)at);
			free(b->clock);
			b->clock = strdup("local");
		} else {
			char *o = strchr(text, '['), *c = strchr(o, ']');

			free(b->clock);
			b->clock = c ? strndup(o + 1, c - o - 1) : strdup("local");
		}
		free(text);
		if (!b->clock)
			return -ENOMEM;
		b->pub.clock = b->clock;
	}
	return 0;
}

/* The metadata items of a v6 file, in file order. */
static const struct {
	unsigned int id;
	meta_fn read;
} v6_items[] = {
	{ HGT_OPT_HEADER_INFO, hgt__read_header_info },
	{ HGT_OPT_FTRACE_EVENTS, hgt__read_ftrace_events },
	{ HGT_OPT_EVENT_FORMATS, hgt__read_event_formats },
	{ HGT_OPT_KALLSYMS, hgt__read_kallsyms },
	{ HGT_OPT_PRINTK, hgt__read_printk },
	{ HGT_OPT_CMDLINES, hgt__read_cmdlines },
};

static int open_v6(struct hgt_input *in)
{
	struct hgt__rd rd = { .in = in, .pos = in->header_len, .end = in->file_size };
	uint64_t start;
	uint32_t cpus;
	char tag[10];
	int top, ret, i, nr_inst;

	for (i = 0; i < (int)(sizeof(v6_items) / sizeof(v6_items[0])); i++) {
		start = rd.pos;
		ret = v6_items[i].read(in, &rd);
		if (!ret)
			ret = add_section(in, v6_items[i].id, 0, -1, start, rd.pos - start);
		if (ret)
			return ret;
	}
	rd.what = "CPU count";
	ret = hgt__rd_u32(&rd, &cpus);
	if (ret)
		return ret;
	if (cpus > HGT__MAX_CPUS)
		return hgt__error(in, rd.pos - 4, EBADMSG, "CPU count %u is beyond %u", cpus,
				  HGT__MAX_CPUS);
	in->nr_cpus = (int)cpus;

	rd.what = "options or data tag";
	ret = hgt__rd_bytes(&rd, tag, sizeof(tag));
	if (ret)
		return ret;
	if (!memcmp(tag, "options  ", 10)) {
		start = rd.pos - 10;
		ret = hgt__parse_options_v6(in, &rd);
		if (ret)
			return ret;
		ret = add_section(in, HGT_OPT_DONE, 0, -1, start, rd.pos - start);
		if (ret)
			return ret;
		/* a head (trace-cmd's agent sends one): nothing after the options */
		if ((in->flags & HGT__OPEN_PARTIAL) && rd.pos == in->file_size)
			return 0;
		rd.what = "data tag";
		ret = hgt__rd_bytes(&rd, tag, sizeof(tag));
		if (ret)
			return ret;
	}
	if (!memcmp(tag, "latency  ", 10)) {
		in->latency = true;
		in->latency_offset = rd.pos;
		in->latency_size = in->file_size - rd.pos;
		return add_section(in, HGT_OPT_BUFFER_TEXT, 0, -1, rd.pos - 10,
				   in->latency_size + 10);
	}
	if (memcmp(tag, "flyrecord", 10))
		return hgt__error(in, rd.pos - 10, EBADMSG,
				  "expected \"flyrecord\" or \"latency\" data tag");
	/* The top instance goes first; named instances were added by BUFFER options. */
	nr_inst = in->nr_bufs;
	top = hgt__add_buffer(in, "", in->trace_clock ? in->trace_clock : "", in->page_size);
	if (top < 0)
		return top;
	if (nr_inst) {
		struct hgt__buffer t = in->bufs[top];

		memmove(&in->bufs[1], &in->bufs[0], sizeof(t) * nr_inst);
		in->bufs[0] = t;
	}
	in->bufs[0].pub.section_offset = rd.pos - 10;
	rd.pos -= 10;
	ret = read_flyrecord_v6(in, &rd, 0, (int)cpus);
	if (ret)
		return ret;
	ret = add_section(in, HGT_OPT_BUFFER, 0, -1, in->bufs[0].pub.section_offset,
			  in->file_size - in->bufs[0].pub.section_offset);
	for (i = 1; !ret && i < in->nr_bufs; i++) {
		struct hgt__rd brd = { .in = in,
				       .pos = in->bufs[i].pub.section_offset,
				       .end = in->file_size };
		int n = in->bufs[i].pub.nr_cpus;

		free(in->bufs[i].clock);
		in->bufs[i].clock = strdup(in->bufs[0].clock);
		if (!in->bufs[i].clock)
			return -ENOMEM;
		in->bufs[i].pub.clock = in->bufs[i].clock;
		ret = read_flyrecord_v6(in, &brd, i, n < 0 ? (int)cpus : n);
	}
	return ret;
}

/* @b's CPUs up to @n, the new ones empty (not present). */
static int grow_cpus(struct hgt__buffer *b, int n)
{
	struct hgt_cpu_data *c = realloc(b->cpus, sizeof(*c) * (size_t)n);

	if (!c)
		return -ENOMEM;
	memset(c + b->pub.nr_cpus, 0, sizeof(*c) * (size_t)(n - b->pub.nr_cpus));
	b->cpus = c;
	b->pub.cpus = c;
	b->pub.nr_cpus = n;
	return 0;
}
static int open_v7(struct hgt_input *in)
{
	int ret, i, top = -1;

	if (in->first_options < in->header_len || in->first_options >= in->file_size)
		return hgt__error(
			in, in->header_len - 8, EBADMSG,
			"first OPTIONS section at 0x%llx lies outside the file (size %llu)",
			(unsigned long long)in->first_options, (unsigned long long)in->file_size);
	ret = walk_sections(in);
	if (ret)
		return ret;
	ret = hgt__parse_options_v7(in);
	if (ret)
		return ret;
	ret = read_meta_section(in, HGT_OPT_HEADER_INFO, hgt__read_header_info, true);
	if (!ret)
		ret = read_meta_section(in, HGT_OPT_FTRACE_EVENTS, hgt__read_ftrace_events, true);
	if (!ret)
		ret = read_meta_section(in, HGT_OPT_EVENT_FORMATS, hgt__read_event_formats, true);
	if (!ret)
		ret = read_meta_section(in, HGT_OPT_KALLSYMS, hgt__read_kallsyms, false);
	if (!ret)
		ret = read_meta_section(in, HGT_OPT_PRINTK, hgt__read_printk, false);
	if (!ret)
		ret = read_meta_section(in, HGT_OPT_CMDLINES, hgt__read_cmdlines, false);
	if (ret)
		return ret;
	/* The top instance first, named instances after it in file order. */
	for (i = 0; i < in->nr_bufs; i++) {
		if (!*in->bufs[i].name) {
			top = i;
			break;
		}
	}
	if (top > 0) {
		struct hgt__buffer t = in->bufs[top];

		memmove(&in->bufs[1], &in->bufs[0], sizeof(t) * top);
		in->bufs[0] = t;
	}
	/* v7 lists only the CPUs that have data: CPUCOUNT says how many the machine had
	 * (trace-cmd's count), and the ones past the last listed are there, empty */
	if (top >= 0 && in->version >= 7 && in->nr_cpus > in->bufs[0].pub.nr_cpus) {
		ret = grow_cpus(&in->bufs[0], in->nr_cpus);
		if (ret)
			return ret;
	}
	if (top >= 0 && in->bufs[0].pub.nr_cpus > 0)
		in->nr_cpus = in->bufs[0].pub.nr_cpus;
	if (in->latency) {
		uint8_t hdr[16];

		if (in->latency_offset < in->header_len || in->latency_offset > in->file_size ||
		    in->file_size - in->latency_offset < 16)
			return hgt__error(in, in->latency_offset, EBADMSG,
					  "BUFFER_TEXT section lies outside the file");
		ret = hgt__pread_all(in, hdr, 16, in->latency_offset);
		if (ret)
			return ret;
		if (hgt__get16(in, hdr) != HGT_OPT_BUFFER_TEXT)
			return hgt__error(in, in->latency_offset, EBADMSG,
					  "expected section 22 (BUFFER_TEXT), found id %u",
					  hgt__get16(in, hdr));
		in->latency_size = hgt__get64(in, hdr + 8);
	}
	if (!in->latency && top < 0 && !in->nr_bufs && !(in->flags & HGT__OPEN_PARTIAL))
		return hgt__error(in, in->first_options, EBADMSG,
				  "no BUFFER or BUFFER_TEXT option: the file holds no trace data");
	return 0;
}

/**
 * hgt_input_open - open a trace.dat file and parse its metadata.
 */
struct hgt_input *hgt_input_open(const char *path, const struct hgt_open_opts *opts)
{
	struct hgt_input *in;
	struct stat st;
	int ret = 0;

	in = calloc(1, sizeof(*in));
	if (!in)
		return NULL;
	in->fd = -1;
	in->in_usecs = true;
	if (opts && opts->sz >= offsetof(struct hgt_open_opts, flags) + sizeof(opts->flags))
		in->flags = opts->flags;
	in->path = strdup(path);
	if (!in->path) {
		ret = -ENOMEM;
		goto fail;
	}
	/* non-blocking: a FIFO with no writer must not hang the open (it is refused below) */
	in->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (in->fd < 0) {
		ret = -errno;
		snprintf(in->err, sizeof(in->err), "%s: cannot open: %s", path, strerror(errno));
		hgt__set_last_error(in->err);
		goto fail;
	}
	if (fstat(in->fd, &st) || !S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		snprintf(
			in->err, sizeof(in->err),
			"%s: not a regular file (%s): trace.dat is read by offset; copy it to a file first",
			path,
			S_ISFIFO(st.st_mode)  ? "a FIFO"
			: S_ISDIR(st.st_mode) ? "a directory"
			: S_ISCHR(st.st_mode) ? "a character device"
					      : "not a file");
		hgt__set_last_error(in->err);
		goto fail;
	}
	in->file_size = (uint64_t)st.st_size;
	ret = read_initial_header(in);
	if (ret)
		goto fail;
	in->tep = tep_alloc();
	if (!in->tep) {
		ret = -ENOMEM;
		goto fail;
	}
	tep_set_file_bigendian(in->tep, in->big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
	tep_set_local_bigendian(in->tep, __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
						 ? TEP_BIG_ENDIAN
						 : TEP_LITTLE_ENDIAN);
	tep_set_long_size(in->tep, in->long_size);
	tep_set_page_size(in->tep, (int)in->page_size);
	if (!(in->flags & (HGT_OPEN_NO_PLUGINS | HGT_OPEN_HEAD_ONLY)))
		in->plugins = tep_load_plugins(in->tep);
	ret = in->version >= 7 ? open_v7(in) : open_v6(in);
	if (!ret)
		ret = hgt__formats_parse(in);
	if (!ret)
		ret = hgt__parse_peer_options(in);
	if (ret)
		goto fail;
	if (in->kernel_long_size)
		tep_set_long_size(in->tep, in->kernel_long_size);
	return in;
fail:
	if (in->err[0])
		hgt__set_last_error(in->err);
	else
		hgt__set_last_error(strerror(-ret));
	hgt_input_close(in);
	errno = -ret;
	return NULL;
}

void hgt_input_close(struct hgt_input *in)
{
	int i;

	if (!in)
		return;
	if (in->tep) {
		if (in->plugins)
			tep_unload_plugins(in->plugins, in->tep);
		tep_free(in->tep);
	}
	hgt__ksyms_free(in->ksyms);
	hgt__guests_free(in);
	hgt__formats_free(in);
	for (i = 0; i < in->nr_opts; i++)
		free((void *)in->opts[i].data);
	for (i = 0; i < in->nr_bufs; i++) {
		free(in->bufs[i].name);
		free(in->bufs[i].clock);
		free(in->bufs[i].cpus);
		for (int k = 0; k < in->bufs[i].nr_away; k++)
			free(in->bufs[i].away[k].name);
		free(in->bufs[i].away);
	}
	free(in->opts);
	free(in->bufs);
	free(in->sections);
	free(in->strings);
	free(in->trace_clock);
	free(in->cpustat);
	free(in->comp_name);
	free(in->comp_version);
	if (in->fd >= 0)
		close(in->fd);
	free(in->path);
	free(in);
}

const char *hgt_input_error(const struct hgt_input *in)
{
	return in->err;
}

const char *hgt_input_path(const struct hgt_input *in)
{
	return in->path;
}

int hgt__input_fd(const struct hgt_input *in)
{
	return in->fd;
}

int hgt_input_version(const struct hgt_input *in)
{
	return in->version;
}

bool hgt_input_big_endian(const struct hgt_input *in)
{
	return in->big_endian;
}

int hgt_input_long_size(const struct hgt_input *in)
{
	return in->long_size;
}

int hgt_input_kernel_long_size(const struct hgt_input *in)
{
	return in->kernel_long_size;
}

uint32_t hgt_input_page_size(const struct hgt_input *in)
{
	return in->page_size;
}

enum hgt_compression hgt_input_compression(const struct hgt_input *in)
{
	return in->comp;
}

const char *hgt_input_compression_name(const struct hgt_input *in)
{
	return in->comp_name;
}

const char *hgt_input_compression_version(const struct hgt_input *in)
{
	return in->comp_version;
}

uint64_t hgt_input_file_size(const struct hgt_input *in)
{
	return in->file_size;
}

int hgt_input_nr_cpus(const struct hgt_input *in)
{
	return in->nr_cpus;
}

struct tep_handle *hgt_input_tep(const struct hgt_input *in)
{
	return in->tep;
}

int hgt_input_nr_options(const struct hgt_input *in)
{
	return in->nr_opts;
}

const struct hgt_option *hgt_input_option_at(const struct hgt_input *in, int i)
{
	return i >= 0 && i < in->nr_opts ? &in->opts[i] : NULL;
}

const struct hgt_option *hgt_input_option(const struct hgt_input *in, unsigned int id)
{
	int i;

	for (i = in->nr_opts - 1; i >= 0; i--)
		if (in->opts[i].id == id)
			return &in->opts[i];
	return NULL;
}

int hgt_input_nr_sections(const struct hgt_input *in)
{
	return in->nr_sections;
}

const struct hgt_section *hgt_input_section_at(const struct hgt_input *in, int i)
{
	return i >= 0 && i < in->nr_sections ? &in->sections[i] : NULL;
}

int hgt_input_nr_buffers(const struct hgt_input *in)
{
	return in->nr_bufs;
}

/**
 * hgt__input_cpu_elsewhere - the top buffer's CPU @cpu has its pages at @off, @size bytes,
 * of file @fd (@name in messages), not in @in's file: a flight recorder's search reads a
 * recording's pages where the recorder wrote them. @fd stays the caller's, open while @in
 * is read. Uncompressed files only; cursors alone read the pages there (the private
 * header says who must not be given such an input). Returns 0 or -errno.
 */
int hgt__input_cpu_elsewhere(struct hgt_input *in, int cpu, int fd, const char *name, uint64_t off,
			     uint64_t size)
{
	struct hgt__buffer *b;
	int ret;

	if (hgt_input_top_buffer(in) < 0 || cpu < 0 || cpu >= HGT__MAX_CPUS || fd < 0 ||
	    in->comp != HGT_COMPRESS_NONE || !in->page_size || off % in->page_size ||
	    size % in->page_size)
		return -EINVAL;
	b = &in->bufs[0];
	if (cpu >= b->pub.nr_cpus) {
		ret = grow_cpus(b, cpu + 1);
		if (ret)
			return ret;
	}
	if (cpu >= b->nr_away) {
		struct hgt__elsewhere *a = realloc(b->away, sizeof(*a) * (size_t)(cpu + 1));

		if (!a)
			return -ENOMEM;
		for (int k = b->nr_away; k <= cpu; k++)
			a[k] = (struct hgt__elsewhere){ -1, NULL };
		b->away = a;
		b->nr_away = cpu + 1;
	}
	free(b->away[cpu].name);
	b->away[cpu].name = strdup(name);
	if (!b->away[cpu].name)
		return -ENOMEM;
	b->away[cpu].fd = fd;
	b->cpus[cpu] = (struct hgt_cpu_data){ .offset = off, .size = size, .present = true };
	return 0;
}

const struct hgt_buffer *hgt_input_buffer(const struct hgt_input *in, int i)
{
	return i >= 0 && i < in->nr_bufs ? &in->bufs[i].pub : NULL;
}

int hgt_input_top_buffer(const struct hgt_input *in)
{
	return in->nr_bufs && !*in->bufs[0].name ? 0 : -1;
}

bool hgt_input_trace_id(const struct hgt_input *in, uint64_t *id)
{
	if (in->has_trace_id && id)
		*id = in->trace_id;
	return in->has_trace_id;
}

const char *hgt_input_trace_clock(const struct hgt_input *in)
{
	return in->trace_clock;
}

bool hgt_input_in_usecs(const struct hgt_input *in)
{
	return in->in_usecs;
}

bool hgt_input_tsc2nsec(const struct hgt_input *in, uint32_t *mult, uint32_t *shift,
			uint64_t *offset)
{
	if (in->has_tsc2nsec) {
		if (mult)
			*mult = in->tsc_mult;
		if (shift)
			*shift = in->tsc_shift;
		if (offset)
			*offset = in->tsc_offset;
	}
	return in->has_tsc2nsec;
}

bool hgt_input_date_offset(const struct hgt_input *in, int64_t *ns)
{
	if (in->has_date && ns)
		*ns = in->date_ns;
	return in->has_date;
}

bool hgt_input_offset_option(const struct hgt_input *in, int64_t *ns)
{
	if (in->has_offset && ns)
		*ns = in->offset_ns;
	return in->has_offset;
}

const char *hgt_input_cpustat(const struct hgt_input *in)
{
	return in->cpustat ? in->cpustat : "";
}

/**
 * hgt__flight_mark - the flight recorder's mark in @in's CPUSTAT ("hgtrace flight: trigger
 * N: TEXT: FROM TO"; TEXT may hold ':' and spaces, so the span is read from the end).
 */
bool hgt__flight_mark(const struct hgt_input *in, char *text, size_t n, uint64_t *from,
		      uint64_t *to)
{
	const char *s = strstr(hgt_input_cpustat(in), HGT__FLIGHT_TAG), *e, *sp;
	unsigned long long a, b;

	if (!s)
		return false;
	s += strlen(HGT__FLIGHT_TAG);
	e = s + strcspn(s, "\n");
	for (sp = e; sp > s && sp[-1] != ':'; sp--)
		;
	if (sp == s || sscanf(sp, " %llu %llu", &a, &b) != 2 || a > b)
		return false;
	snprintf(text, n, "%.*s", (int)(sp - 1 - s), s);
	*from = a;
	*to = b;
	return true;
}

const char *hgt_input_uname(const struct hgt_input *in)
{
	const struct hgt_option *o = hgt_input_option(in, HGT_OPT_UNAME);

	return o ? o->data : NULL;
}

const char *hgt_input_version_string(const struct hgt_input *in)
{
	const struct hgt_option *o = hgt_input_option(in, HGT_OPT_VERSION);

	return o ? o->data : NULL;
}

bool hgt_input_is_latency(const struct hgt_input *in)
{
	return in->latency;
}

void hgt_input_meta_info(const struct hgt_input *in, struct hgt_meta_info *info)
{
	*info = in->meta;
}

/* Copy @len bytes from @off to @out in bounded pieces. */
static int copy_out(struct hgt_input *in, uint64_t off, uint64_t len, FILE *out)
{
	char buf[65536];

	while (len) {
		uint64_t k = len < sizeof(buf) ? len : sizeof(buf);
		int ret = hgt__pread_all(in, buf, k, off);

		if (ret)
			return ret;
		if (fwrite(buf, 1, k, out) != k)
			return -EIO;
		off += k;
		len -= k;
	}
	return 0;
}

/**
 * hgt_input_write_latency - copy the latency (ASCII) trace of @in to @out.
 */
int hgt_input_write_latency(struct hgt_input *in, FILE *out)
{
	uint64_t off, end, nchunks, i;
	uint32_t count;
	uint8_t hdr[16];
	int ret;

	if (!in->latency)
		return hgt__error(in, 0, EINVAL, "not a latency trace");
	if (in->version < 7)
		return copy_out(in, in->latency_offset, in->latency_size, out);
	ret = hgt__pread_all(in, hdr, 16, in->latency_offset);
	if (ret)
		return ret;
	off = in->latency_offset + 16;
	end = off + in->latency_size;
	if (!(hgt__get16(in, hdr + 2) & 1))
		return copy_out(in, off, in->latency_size, out);
	/* Compressed: u32 chunk count, then {u32 csize, u32 usize, data} per chunk. */
	if (end - off < 4)
		return hgt__error(in, off, EBADMSG, "BUFFER_TEXT: no chunk count");
	ret = hgt__pread_all(in, &count, 4, off);
	if (ret)
		return ret;
	nchunks = hgt__get32(in, &count);
	off += 4;
	for (i = 0; i < nchunks; i++) {
		uint32_t sz[2], csize, usize;
		void *c, *u;

		if (end - off < 8)
			return hgt__error(in, off, EBADMSG,
					  "BUFFER_TEXT chunk %llu: header past end",
					  (unsigned long long)i);
		ret = hgt__pread_all(in, sz, 8, off);
		if (ret)
			return ret;
		csize = hgt__get32(in, &sz[0]);
		usize = hgt__get32(in, &sz[1]);
		if (csize > end - off - 8 || usize > HGT__MAX_CHUNK)
			return hgt__error(in, off, EBADMSG,
					  "BUFFER_TEXT chunk %llu: sizes %u/%u exceed the section",
					  (unsigned long long)i, csize, usize);
		c = malloc(csize ? csize : 1);
		u = malloc(usize ? usize : 1);
		ret = c && u ? hgt__pread_all(in, c, csize, off + 8) : -ENOMEM;
		if (!ret)
			ret = hgt__decompress(in, NULL, c, csize, u, usize, off);
		if (!ret && fwrite(u, 1, usize, out) != usize)
			ret = -EIO;
		free(c);
		free(u);
		if (ret)
			return ret;
		off += 8 + csize;
	}
	return 0;
}

/**
 * hgt__input_meta_packed - hgt__input_meta_blob(), and where the item is a compressed v7
 * section, its compressed bytes as stored (hgt__load_section_packed(): *@packed, NULL for
 * an item stored as it is).
 */
int hgt__input_meta_packed(struct hgt_input *in, unsigned int id, uint8_t **buf, uint64_t *len,
			   uint8_t **packed, size_t *at, size_t *clen)
{
	*packed = NULL;
	if (in->version < 7 || id < HGT_OPT_HEADER_INFO || id > HGT_OPT_CMDLINES ||
	    !in->sec_off[id])
		return hgt__input_meta_blob(in, id, buf, len);
	*buf = NULL;
	*len = 0;
	return hgt__load_section_packed(in, in->sec_off[id], (uint16_t)id, buf, len, packed, at,
					clen);
}

/**
 * hgt__input_meta_blob - the bytes of metadata item @id (HEADER_INFO .. CMDLINES) in their
 * v6 encoding, which is also the body of the v7 section, decompressed.
 */
int hgt__input_meta_blob(struct hgt_input *in, unsigned int id, uint8_t **buf, uint64_t *len)
{
	int i, ret;

	*buf = NULL;
	*len = 0;
	if (id < HGT_OPT_HEADER_INFO || id > HGT_OPT_CMDLINES)
		return -EINVAL;
	if (in->version >= 7) {
		if (!in->sec_off[id]) {
			*buf = calloc(1, 16);
			if (!*buf)
				return -ENOMEM;
			/* absent optional item: an empty one (u32 or u64 size 0) */
			*len = id == HGT_OPT_CMDLINES ? 8 : 4;
			return 0;
		}
		return hgt__load_section(in, in->sec_off[id], (uint16_t)id, buf, len);
	}
	for (i = 0; i < in->nr_sections; i++) {
		const struct hgt_section *s = &in->sections[i];

		if (s->id != id)
			continue;
		if (s->size > HGT__MAX_META)
			return hgt__error(in, s->offset, EFBIG,
					  "%s is %llu bytes, beyond the limit", hgt_option_name(id),
					  (unsigned long long)s->size);
		*buf = malloc(s->size + 1);
		if (!*buf)
			return -ENOMEM;
		ret = hgt__pread_all(in, *buf, s->size, s->offset);
		if (ret) {
			free(*buf);
			*buf = NULL;
			return ret;
		}
		*len = s->size;
		return 0;
	}
	return hgt__error(in, in->header_len, ENOENT, "no %s item", hgt_option_name(id));
}
