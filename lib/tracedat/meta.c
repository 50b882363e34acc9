// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Metadata items shared by v6 (sequential) and v7 (sections): header page/event, event
 * formats, kallsyms, printk formats, saved cmdlines. Each is handed to libtraceevent.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "tracedat-local.h"

static int expect_tag(struct hgt__rd *rd, const char *tag)
{
	size_t len = strlen(tag) + 1;
	char buf[32];
	int ret;

	ret = hgt__rd_bytes(rd, buf, len);
	if (ret)
		return ret;
	if (memcmp(buf, tag, len)) {
		rd->pos -= len;
		return hgt__rd_error(rd, EBADMSG, "expected the tag \"%s\"", tag);
	}
	return 0;
}

int hgt__read_header_info(struct hgt_input *in, struct hgt__rd *rd)
{
	uint64_t size;
	char *buf;
	int ret;

	rd->what = "header_page";
	ret = expect_tag(rd, "header_page");
	if (!ret)
		ret = hgt__rd_u64(rd, &size);
	if (!ret)
		ret = hgt__rd_alloc(rd, &buf, size);
	if (ret)
		return ret;
	in->meta.header_page_size = size;
	hgt__parse_lock();
	ret = in->tep ? tep_parse_header_page(in->tep, buf, size, in->long_size) : 0;
	hgt__parse_unlock();
	if (ret) {
		free(buf);
		return hgt__rd_error(rd, EBADMSG, "libtraceevent cannot parse the header page");
	}
	free(buf);
	in->kernel_long_size = in->tep ? tep_get_header_page_size(in->tep) : in->long_size;
	if (in->kernel_long_size != 4 && in->kernel_long_size != 8)
		return hgt__rd_error(
			rd, EBADMSG,
			"header page gives a commit field of %d bytes (expected 4 or 8)",
			in->kernel_long_size);

	rd->what = "header_event";
	ret = expect_tag(rd, "header_event");
	if (!ret)
		ret = hgt__rd_u64(rd, &size);
	if (ret)
		return ret;
	if (size > rd->end - rd->pos)
		return hgt__rd_error(rd, EBADMSG, "claims %llu bytes, only %llu remain",
				     (unsigned long long)size,
				     (unsigned long long)(rd->end - rd->pos));
	in->meta.header_event_size = size;
	rd->pos += size; /* readers ignore its contents */
	return 0;
}

static int read_formats(struct hgt_input *in, struct hgt__rd *rd, const char *system,
			uint32_t count)
{
	uint32_t i;
	int ret;

	for (i = 0; i < count; i++) {
		uint64_t size;
		char *buf;

		uint64_t at = hgt__rd_fileoff(rd);

		ret = hgt__rd_u64(rd, &size);
		if (!ret)
			ret = hgt__rd_alloc(rd, &buf, size);
		if (ret)
			return ret;
		if (in->tep && !(in->flags & HGT_OPEN_HEAD_ONLY)) {
			/* parsed behind a guard once all are read (formats.c) */
			ret = hgt__format_add(in, system, buf, size, at);
			if (ret) {
				free(buf);
				return ret;
			}
		} else {
			free(buf);
		}
		in->meta.nr_events++;
	}
	return 0;
}

int hgt__read_ftrace_events(struct hgt_input *in, struct hgt__rd *rd)
{
	uint32_t count;
	int ret;

	rd->what = "ftrace event formats";
	ret = hgt__rd_u32(rd, &count);
	if (ret)
		return ret;
	if (count > HGT__MAX_EVENTS)
		return hgt__rd_error(rd, EBADMSG, "claims %u events", count);
	in->meta.nr_ftrace_events = count;
	return read_formats(in, rd, "ftrace", count);
}

int hgt__read_event_formats(struct hgt_input *in, struct hgt__rd *rd)
{
	uint32_t systems, i;
	int ret;

	rd->what = "event formats";
	ret = hgt__rd_u32(rd, &systems);
	if (ret)
		return ret;
	if (systems > HGT__MAX_EVENTS)
		return hgt__rd_error(rd, EBADMSG, "claims %u event systems", systems);
	in->meta.nr_event_systems = systems;
	for (i = 0; i < systems; i++) {
		uint32_t count;
		char *name;

		ret = hgt__rd_str(rd, &name, 4096);
		if (ret)
			return ret;
		ret = hgt__rd_u32(rd, &count);
		if (!ret && count > HGT__MAX_EVENTS)
			ret = hgt__rd_error(rd, EBADMSG, "system %s claims %u events", name, count);
		if (!ret)
			ret = read_formats(in, rd, name, count);
		free(name);
		if (ret)
			return ret;
	}
	hgt__formats_check_start(in, true); /* the probe runs while kallsyms are read */
	return 0;
}

/* kallsyms and printk: u32 size + text; cmdlines: u64 size + text. */
static int read_text(struct hgt_input *in, struct hgt__rd *rd, const char *what, bool size64,
		     char **text, uint64_t *len)
{
	uint64_t size;
	int ret;

	rd->what = what;
	if (size64) {
		ret = hgt__rd_u64(rd, &size);
	} else {
		uint32_t s32;

		ret = hgt__rd_u32(rd, &s32);
		size = s32;
	}
	if (!ret)
		ret = hgt__rd_alloc(rd, text, size);
	if (!ret)
		*len = size;
	return ret;
}

/* Hand a text item to libtraceevent unless only the header was asked for. */
static int read_text_item(struct hgt_input *in, struct hgt__rd *rd, const char *what, bool size64,
			  uint64_t *len, int (*parse)(struct tep_handle *, const char *))
{
	char *text;
	int ret = read_text(in, rd, what, size64, &text, len);

	if (ret)
		return ret;
	if (in->tep && !(in->flags & HGT_OPEN_HEAD_ONLY) && *len)
		parse(in->tep, text);
	free(text);
	return 0;
}

/* The handle's functions from a table of ours (kallsyms.c), else as libtraceevent reads
 * them. A second KALLSYMS item replaces the first. */
static int parse_kallsyms(struct hgt_input *in, struct tep_handle *tep, const char *text)
{
	struct hgt__ksyms *t = hgt__ksyms_new(text);

	if (!t)
		return errno == EINVAL ? tep_parse_kallsyms(tep, text) : -ENOMEM;
	if (tep_set_function_resolver(tep, hgt__ksyms_resolve, t)) {
		hgt__ksyms_free(t);
		return -ENOMEM;
	}
	hgt__ksyms_free(in->ksyms);
	in->ksyms = t;
	return 0;
}

int hgt__read_kallsyms(struct hgt_input *in, struct hgt__rd *rd)
{
	char *text;
	int ret = read_text(in, rd, "kallsyms", false, &text, &in->meta.kallsyms_size);

	if (ret)
		return ret;
	if (in->tep && !(in->flags & (HGT_OPEN_HEAD_ONLY | HGT_OPEN_NO_KALLSYMS)) &&
	    in->meta.kallsyms_size)
		parse_kallsyms(in, in->tep, text);
	free(text);
	return 0;
}

/* Kernel functions from another handle's libtraceevent map (built before any thread uses
 * it, then only read: lookups from several threads are safe). The module name is not
 * printed by libtraceevent's event output, only the name. */
static char *from_map(void *priv, unsigned long long *addrp, char **modp)
{
	const char *name;
	unsigned long long start;
	unsigned long size;

	*modp = NULL;
	if (!tep_find_function_info(priv, *addrp, &name, &start, &size)) /* 1: found */
		return NULL;
	*addrp = start;
	return (char *)name;
}

/**
 * hgt__input_share_functions - give the handle @to (of the same file as @from, opened
 * with HGT_OPEN_NO_KALLSYMS) @from's kernel functions, without reading them again. Lookups
 * in @to may run in another thread than @from's. Returns 0 or -ENOMEM.
 */
int hgt__input_share_functions(const struct hgt_input *from, struct tep_handle *to)
{
	if (from->ksyms)
		return tep_set_function_resolver(to, hgt__ksyms_resolve, from->ksyms) ? -ENOMEM : 0;
	return tep_set_function_resolver(to, from_map, from->tep) ? -ENOMEM : 0;
}

/*
 * libtraceevent's printk parser copies from one byte past each line's first ':' (or past the
 * line when it has none), then looks at the copy's last three bytes: a line with fewer than
 * four bytes after its ':' makes it read outside its buffers. Such a line ("ADDR : FORMAT"
 * has at least a blank and two quotes there) carries no format: it is dropped here.
 */
static int parse_printk(struct hgt_input *in, const char *where, char *text)
{
	char *out = text, *line = text;
	unsigned int dropped = 0;

	while (*line) {
		char *nl = strchr(line, '\n'), *colon;
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		colon = memchr(line, ':', len);
		if (colon && line + len - (colon + 1) >= 4) {
			memmove(out, line, len);
			out += len;
			if (nl) /* never longer than what was read */
				*out++ = '\n';
		} else if (len) {
			dropped++;
		}
		line += len + (nl ? 1 : 0);
	}
	*out = '\0';
	if (dropped && !(in->flags & HGT_OPEN_QUIET))
		fprintf(stderr, "hgtrace: %s: %s: %u line%s without \"ADDR : format\": skipped\n",
			in->path, where, dropped, dropped == 1 ? "" : "s");
	if (*text)
		tep_parse_printk_formats(in->tep, text);
	return 0;
}

int hgt__read_printk(struct hgt_input *in, struct hgt__rd *rd)
{
	char *text;
	int ret;

	ret = read_text(in, rd, "printk formats", false, &text, &in->meta.printk_size);
	if (ret)
		return ret;
	if (in->tep && !(in->flags & HGT_OPEN_HEAD_ONLY) && in->meta.printk_size)
		parse_printk(in, "printk formats", text);
	free(text);
	return 0;
}

int hgt__read_cmdlines(struct hgt_input *in, struct hgt__rd *rd)
{
	return read_text_item(in, rd, "saved cmdlines", true, &in->meta.cmdlines_size,
			      tep_parse_saved_cmdlines);
}
