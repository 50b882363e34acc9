// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Options: the v6 list after the metadata, and the chain of v7 OPTIONS sections.
 * Later occurrences override earlier ones (TRACEID, TSC2NSEC, TIME_SHIFT); GUEST and CPUSTAT
 * accumulate; unknown ids are kept and warned about.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracedat-local.h"

static const char *const option_names[HGT_OPT_MAX] = {
	[HGT_OPT_DONE] = "DONE",
	[HGT_OPT_DATE] = "DATE",
	[HGT_OPT_CPUSTAT] = "CPUSTAT",
	[HGT_OPT_BUFFER] = "BUFFER",
	[HGT_OPT_TRACECLOCK] = "TRACECLOCK",
	[HGT_OPT_UNAME] = "UNAME",
	[HGT_OPT_HOOK] = "HOOK",
	[HGT_OPT_OFFSET] = "OFFSET",
	[HGT_OPT_CPUCOUNT] = "CPUCOUNT",
	[HGT_OPT_VERSION] = "VERSION",
	[HGT_OPT_PROCMAPS] = "PROCMAPS",
	[HGT_OPT_TRACEID] = "TRACEID",
	[HGT_OPT_TIME_SHIFT] = "TIME_SHIFT",
	[HGT_OPT_GUEST] = "GUEST",
	[HGT_OPT_TSC2NSEC] = "TSC2NSEC",
	[HGT_OPT_STRINGS] = "STRINGS",
	[HGT_OPT_HEADER_INFO] = "HEADER_INFO",
	[HGT_OPT_FTRACE_EVENTS] = "FTRACE_EVENTS",
	[HGT_OPT_EVENT_FORMATS] = "EVENT_FORMATS",
	[HGT_OPT_KALLSYMS] = "KALLSYMS",
	[HGT_OPT_PRINTK] = "PRINTK",
	[HGT_OPT_CMDLINES] = "CMDLINES",
	[HGT_OPT_BUFFER_TEXT] = "BUFFER_TEXT",
	[HGT_OPT_BTF_FILE] = "BTF_FILE",
	[HGT_OPT_LAST_BOOT_INFO] = "LAST_BOOT_INFO",
	[HGT_OPT_MODULES_FILE] = "MODULES_FILE",
};

/**
 * hgt_option_name - the trace-cmd name of option (or section) id @id.
 */
const char *hgt_option_name(unsigned int id)
{
	if (id < HGT_OPT_MAX && option_names[id])
		return option_names[id];
	return "UNKNOWN";
}

int hgt__add_buffer(struct hgt_input *in, const char *name, const char *clock, uint32_t page_size)
{
	struct hgt__buffer *b;

	b = realloc(in->bufs, sizeof(*b) * (in->nr_bufs + 1));
	if (!b)
		return -ENOMEM;
	in->bufs = b;
	b = &in->bufs[in->nr_bufs];
	memset(b, 0, sizeof(*b));
	b->name = strdup(name);
	b->clock = strdup(clock);
	if (!b->name || !b->clock) {
		free(b->name);
		free(b->clock);
		return -ENOMEM;
	}
	b->pub.name = b->name;
	b->pub.clock = b->clock;
	b->pub.page_size = page_size;
	in->nr_bufs++;
	return in->nr_bufs - 1;
}

/* Clocks whose values are nanoseconds: trace-cmd prints them as sec.usec. */
static bool clock_in_ns(const char *clock)
{
	return !strcmp(clock, "local") || !strcmp(clock, "global") || !strcmp(clock, "uptime") ||
	       !strcmp(clock, "perf") || !strncmp(clock, "mono", 4) || !strcmp(clock, "tsc2nsec") ||
	       !strcmp(clock, "tai");
}

static int opt_traceclock(struct hgt_input *in, const char *p, uint32_t size)
{
	const char *open, *close;
	char *text = strndup(p, size);

	if (!text)
		return -ENOMEM;
	open = strchr(text, '[');
	close = open ? strchr(open, ']') : NULL;
	free(in->trace_clock);
	if (open && close)
		in->trace_clock = strndup(open + 1, close - open - 1);
	else /* a single clock name without brackets */
		in->trace_clock = strndup(text, strcspn(text, " \n"));
	free(text);
	if (!in->trace_clock)
		return -ENOMEM;
	if (!clock_in_ns(in->trace_clock))
		in->in_usecs = false;
	return 0;
}

/* Each CPUSTAT payload is appended whole, its final byte (the NUL) turned into a newline,
 * as trace-cmd concatenates them. */
static int opt_cpustat(struct hgt_input *in, const char *p, uint32_t size)
{
	size_t len = size;
	char *s = realloc(in->cpustat, in->cpustat_len + len + 1);

	if (!s)
		return -ENOMEM;
	memcpy(s + in->cpustat_len, p, len);
	for (size_t i = 0; i < len; i++)
		if (!s[in->cpustat_len + i])
			s[in->cpustat_len + i] = i == len - 1 ? '\n' : ' ';
	in->cpustat_len += len;
	s[in->cpustat_len] = 0;
	in->cpustat = s;
	return 0;
}

static int check_cpu_range(struct hgt_input *in, uint64_t where, const char *name, uint32_t cpu,
			   uint64_t off, uint64_t size)
{
	if (off > in->file_size || size > in->file_size - off)
		return hgt__error(
			in, where, EBADMSG,
			"buffer \"%s\" cpu %u: data at 0x%llx + %llu bytes lies past the end of the file (size %llu)",
			name, cpu, (unsigned long long)off, (unsigned long long)size,
			(unsigned long long)in->file_size);
	return 0;
}

/* v7 BUFFER: u64 section offset, name, clock, u32 page size, u32 n, n x {u32, u64, u64}. */
static int opt_buffer_v7(struct hgt_input *in, const uint8_t *p, uint32_t size, uint64_t where)
{
	struct hgt__rd rd = { .in = in,
			      .mem = p,
			      .pos = 0,
			      .end = size,
			      .sec_offset = where,
			      .what = "option BUFFER" };
	char *name = NULL, *clock = NULL;
	uint32_t page_size, n, i;
	uint64_t sec;
	struct hgt__buffer *b;
	int ret, idx;

	ret = hgt__rd_u64(&rd, &sec);
	if (!ret)
		ret = hgt__rd_str(&rd, &name, size);
	if (!ret)
		ret = hgt__rd_str(&rd, &clock, size);
	if (!ret)
		ret = hgt__rd_u32(&rd, &page_size);
	if (!ret)
		ret = hgt__rd_u32(&rd, &n);
	if (ret)
		goto out;
	if (page_size < 64 || page_size > HGT__MAX_PAGE || (page_size & (page_size - 1))) {
		ret = hgt__error(
			in, where, EBADMSG,
			"option 3 (BUFFER) \"%s\": page size %u is not a power of two between 64 and %u",
			name, page_size, HGT__MAX_PAGE);
		goto out;
	}
	if (n > HGT__MAX_CPUS || (uint64_t)n * 20 > size - rd.pos) {
		ret = hgt__error(in, where, EBADMSG,
				 "option 3 (BUFFER) \"%s\": claims %u CPUs, %llu bytes remain",
				 name, n, (unsigned long long)(size - rd.pos));
		goto out;
	}
	idx = hgt__add_buffer(in, name, clock, page_size);
	if (idx < 0) {
		ret = idx;
		goto out;
	}
	b = &in->bufs[idx];
	b->pub.section_offset = sec;
	b->pub.compressed = in->comp != HGT_COMPRESS_NONE;
	for (i = 0; i < n; i++) {
		uint32_t cpu;
		uint64_t off, sz;

		hgt__rd_u32(&rd, &cpu);
		hgt__rd_u64(&rd, &off);
		hgt__rd_u64(&rd, &sz);
		if (cpu >= HGT__MAX_CPUS) {
			ret = hgt__error(in, where, EBADMSG,
					 "option 3 (BUFFER) \"%s\": cpu id %u is beyond %u", name,
					 cpu, HGT__MAX_CPUS);
			goto out;
		}
		ret = check_cpu_range(in, where, name, cpu, off, sz);
		if (ret)
			goto out;
		if ((int)cpu >= b->pub.nr_cpus) {
			struct hgt_cpu_data *c = realloc(b->cpus, sizeof(*c) * (cpu + 1));

			if (!c) {
				ret = -ENOMEM;
				goto out;
			}
			memset(c + b->pub.nr_cpus, 0, sizeof(*c) * (cpu + 1 - b->pub.nr_cpus));
			b->cpus = c;
			b->pub.nr_cpus = cpu + 1;
		}
		b->cpus[cpu].offset = off;
		b->cpus[cpu].size = sz;
		b->cpus[cpu].present = true;
	}
	b->pub.cpus = b->cpus;
out:
	free(name);
	free(clock);
	return ret;
}

static int opt_buffer_text(struct hgt_input *in, const uint8_t *p, uint32_t size, uint64_t where)
{
	if (size < 8)
		return hgt__error(in, where, EBADMSG, "option 22 (BUFFER_TEXT) is %u bytes", size);
	in->latency = true;
	in->latency_offset = hgt__get64(in, p);
	return 0;
}

static int store_option(struct hgt_input *in, uint16_t id, uint32_t size, const void *data,
			uint64_t where)
{
	struct hgt_option *o;
	void *copy;

	if (in->nr_opts >= HGT__MAX_OPTIONS)
		return hgt__error(in, where, EBADMSG, "more than %d options", HGT__MAX_OPTIONS);
	if (in->nr_opts == in->max_opts) {
		int max = in->max_opts ? in->max_opts * 2 : 32;

		o = realloc(in->opts, sizeof(*o) * max);
		if (!o)
			return -ENOMEM;
		in->opts = o;
		in->max_opts = max;
	}
	copy = malloc(size + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, size);
	((char *)copy)[size] = 0;
	o = &in->opts[in->nr_opts++];
	o->id = id;
	o->size = size;
	o->file_offset = where;
	o->data = copy;
	return 0;
}

static int need_size(struct hgt_input *in, uint16_t id, uint32_t size, uint32_t want,
		     uint64_t where)
{
	if (size < want)
		return hgt__error(in, where, EBADMSG, "option %u (%s) is %u bytes, needs %u", id,
				  hgt_option_name(id), size, want);
	return 0;
}

/* Interpret one option. @where is the file offset of its payload (for messages). */
static int handle_option(struct hgt_input *in, uint16_t id, uint32_t size, const uint8_t *p,
			 uint64_t where, int *last_v6_buffer)
{
	int ret = store_option(in, id, size, p, where);

	if (ret)
		return ret;
	switch (id) {
	case HGT_OPT_DATE:
		in->has_date = true;
		in->date_ns = strtoll((const char *)in->opts[in->nr_opts - 1].data, NULL, 0) * 1000;
		break;
	case HGT_OPT_OFFSET:
		in->has_offset = true;
		in->offset_ns = strtoll((const char *)in->opts[in->nr_opts - 1].data, NULL, 0);
		break;
	case HGT_OPT_CPUSTAT:
		return opt_cpustat(in, (const char *)p, size);
	case HGT_OPT_BUFFER:
		if (in->version >= 7)
			return opt_buffer_v7(in, p, size, where);
		ret = need_size(in, id, size, 9, where);
		if (ret)
			return ret;
		ret = hgt__add_buffer(in, "", "", in->page_size);
		if (ret < 0)
			return ret;
		free(in->bufs[ret].name);
		in->bufs[ret].name = strndup((const char *)p + 8, size - 8);
		if (!in->bufs[ret].name)
			return -ENOMEM;
		in->bufs[ret].pub.name = in->bufs[ret].name;
		in->bufs[ret].pub.section_offset = hgt__get64(in, p);
		in->bufs[ret].pub.nr_cpus = -1; /* filled from CPUCOUNT or the file's count */
		*last_v6_buffer = ret;
		return 0;
	case HGT_OPT_TRACECLOCK:
		return opt_traceclock(in, (const char *)p, size);
	case HGT_OPT_CPUCOUNT:
		ret = need_size(in, id, size, 4, where);
		if (ret)
			return ret;
		if (hgt__get32(in, p) > HGT__MAX_CPUS)
			return hgt__error(in, where, EBADMSG, "option 8 (CPUCOUNT) claims %u CPUs",
					  hgt__get32(in, p));
		if (in->version < 7 && *last_v6_buffer >= 0)
			in->bufs[*last_v6_buffer].pub.nr_cpus = (int)hgt__get32(in, p);
		else
			in->nr_cpus = (int)hgt__get32(in, p);
		return 0;
	case HGT_OPT_TRACEID:
		ret = need_size(in, id, size, 8, where);
		if (ret)
			return ret;
		in->has_trace_id = true;
		in->trace_id = hgt__get64(in, p);
		return 0;
	case HGT_OPT_TSC2NSEC:
		ret = need_size(in, id, size, 16, where);
		if (ret)
			return ret;
		in->has_tsc2nsec = true;
		in->tsc_mult = hgt__get32(in, p);
		in->tsc_shift = hgt__get32(in, p + 4);
		in->tsc_offset = hgt__get64(in, p + 8);
		if (in->tsc_shift > 63)
			return hgt__error(in, where, EBADMSG,
					  "option 14 (TSC2NSEC): shift %u is beyond 63",
					  in->tsc_shift);
		in->in_usecs = true;
		return 0;
	case HGT_OPT_HEADER_INFO:
	case HGT_OPT_FTRACE_EVENTS:
	case HGT_OPT_EVENT_FORMATS:
	case HGT_OPT_KALLSYMS:
	case HGT_OPT_PRINTK:
	case HGT_OPT_CMDLINES:
	case HGT_OPT_BTF_FILE:
	case HGT_OPT_MODULES_FILE:
		ret = need_size(in, id, size, 8, where);
		if (ret)
			return ret;
		in->sec_off[id] = hgt__get64(in, p);
		return 0;
	case HGT_OPT_BUFFER_TEXT:
		return opt_buffer_text(in, p, size, where);
	case HGT_OPT_UNAME:
	case HGT_OPT_HOOK:
	case HGT_OPT_VERSION:
	case HGT_OPT_PROCMAPS:
	case HGT_OPT_TIME_SHIFT:
	case HGT_OPT_GUEST:
	case HGT_OPT_LAST_BOOT_INFO:
		return 0; /* kept as stored; decoded by their users */
	default:
		if (!(in->flags & HGT_OPEN_QUIET))
			fprintf(stderr,
				"hgtrace: %s: offset 0x%llx: unknown option %u (%u bytes), skipped\n",
				in->path, (unsigned long long)where, id, size);
		return 0;
	}
	return 0;
}

/* Parse {u16 id, u32 size, data}* from @rd. v6 ends at a bare id 0; v7 at DONE (size 8). */
static int parse_option_list(struct hgt_input *in, struct hgt__rd *rd, uint64_t *next)
{
	int last_v6_buffer = -1;
	uint8_t *buf = NULL;
	int ret;

	*next = 0;
	rd->what = "options";
	for (;;) {
		uint64_t at = hgt__rd_fileoff(rd);
		uint16_t id;
		uint32_t size;

		ret = hgt__rd_u16(rd, &id);
		if (ret)
			return ret;
		if (id == HGT_OPT_DONE && in->version < 7)
			return 0;
		ret = hgt__rd_u32(rd, &size);
		if (ret)
			return ret;
		if (size > rd->end - rd->pos) {
			at = hgt__rd_fileoff(rd);
			if (rd->mem)
				return hgt__rd_error(
					rd, EBADMSG,
					"option %u (%s) claims %u bytes, %llu remain in its section",
					id, hgt_option_name(id), size,
					(unsigned long long)(rd->end - rd->pos));
			return hgt__error(
				in, at - 6, EBADMSG,
				"option %u (%s) claims %u bytes, %llu remain in its section", id,
				hgt_option_name(id), size, (unsigned long long)(rd->end - rd->pos));
		}
		if (id == HGT_OPT_DONE) {
			if (size != 8)
				return hgt__error(in, at, EBADMSG,
						  "option 0 (DONE) is %u bytes, expected 8", size);
			in->last_done_pos = rd->mem ? rd->sec_offset + 16 + rd->pos : 0;
			ret = hgt__rd_u64(rd, next);
			in->last_done_next = *next;
			return ret;
		}
		at = hgt__rd_fileoff(rd);
		buf = malloc(size + 1);
		if (!buf)
			return -ENOMEM;
		ret = hgt__rd_bytes(rd, buf, size);
		if (!ret)
			ret = handle_option(in, id, size, buf, at, &last_v6_buffer);
		free(buf);
		if (ret)
			return ret;
	}
}

int hgt__parse_options_v6(struct hgt_input *in, struct hgt__rd *rd)
{
	uint64_t next;

	return parse_option_list(in, rd, &next);
}

int hgt__parse_options_v7(struct hgt_input *in)
{
	uint64_t off = in->first_options;
	int hops = 0;
	int ret;

	while (off) {
		struct hgt__rd rd = { .in = in };
		uint8_t *body;
		uint64_t len, prev = off;
		uint8_t flags[2];

		if (++hops > 4096)
			return hgt__error(in, off, ELOOP,
					  "OPTIONS sections chain back on themselves");
		ret = hgt__load_section(in, off, HGT_OPT_DONE, &body, &len);
		if (ret)
			return ret;
		rd.mem = body;
		rd.end = len;
		rd.sec_offset = off;
		ret = parse_option_list(in, &rd, &off);
		free(body);
		if (ret)
			return ret;
		if (!hgt__pread_all(in, flags, 2, prev) && (hgt__get16(in, flags) & 1))
			in->last_done_pos = 0; /* in a compressed section: cannot be patched */
		if (off && off <= prev)
			return hgt__error(in, prev, ELOOP,
					  "DONE points back to 0x%llx: OPTIONS chain would loop",
					  (unsigned long long)off);
	}
	return 0;
}
