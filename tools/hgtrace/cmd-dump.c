// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hgtrace dump: what a trace.dat file holds, for when a file looks wrong: the initial header,
 * every section with offset and size, every option decoded, and each buffer's per-CPU data.
 */
#include <ctype.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <hgtrace/tracedat.h>

#include "cmd.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: hgtrace dump [-i] FILE\n"
		   "  prints the header, sections, options (decoded) and per-CPU data of FILE\n");
}

static void print_text(const char *label, const char *s, uint32_t size)
{
	printf("    %s: \"", label);
	for (uint32_t i = 0; i < size && s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch == '\n')
			printf("\\n");
		else if (isprint(ch))
			putchar(ch);
		else
			printf("\\x%02x", ch);
	}
	printf("\"\n");
}

static uint32_t rd32(const struct hgt_input *in, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return hgt_input_big_endian(in) ? __builtin_bswap32(v) : v;
}

static uint64_t rd64(const struct hgt_input *in, const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return hgt_input_big_endian(in) ? __builtin_bswap64(v) : v;
}

static void print_time_shift(const struct hgt_input *in, const uint8_t *p, uint32_t size)
{
	uint32_t flags, ncpu, cpu, off = 16;

	if (size < 16) {
		printf("    (too short: %u bytes)\n", size);
		return;
	}
	flags = rd32(in, p + 8);
	ncpu = rd32(in, p + 12);
	printf("    peer trace id 0x%" PRIx64 ", flags 0x%x%s, %u CPUs\n", rd64(in, p), flags,
	       flags & 1 ? " (interpolate)" : "", ncpu);
	for (cpu = 0; cpu < ncpu && off + 4 <= size; cpu++) {
		uint32_t count = rd32(in, p + off), i;

		off += 4;
		printf("    cpu %u: %u samples\n", cpu, count);
		for (i = 0; i < count && off + 24ULL * count <= size; i++)
			printf("      time %" PRId64 " offset %" PRId64 " scaling %" PRId64 "\n",
			       (int64_t)rd64(in, p + off + 8ULL * i),
			       (int64_t)rd64(in, p + off + 8ULL * (count + i)),
			       (int64_t)rd64(in, p + off + 8ULL * (2 * count + i)));
		off += 24 * count;
	}
	if (off < size)
		printf("    fraction bits: %u bytes follow\n", size - off);
}

static void print_option(const struct hgt_input *in, const struct hgt_option *o)
{
	const uint8_t *p = o->data;
	uint32_t i;

	printf("  option %2u %-14s %6u bytes @ 0x%" PRIx64 "\n", o->id, hgt_option_name(o->id),
	       o->size, o->file_offset);
	switch (o->id) {
	case HGT_OPT_DATE:
	case HGT_OPT_OFFSET:
	case HGT_OPT_TRACECLOCK:
	case HGT_OPT_UNAME:
	case HGT_OPT_HOOK:
	case HGT_OPT_VERSION:
	case HGT_OPT_LAST_BOOT_INFO:
		print_text("value", o->data, o->size);
		break;
	case HGT_OPT_CPUSTAT:
		print_text("stat", o->data, o->size);
		break;
	case HGT_OPT_CPUCOUNT:
		if (o->size >= 4)
			printf("    %u CPUs\n", rd32(in, p));
		break;
	case HGT_OPT_TRACEID:
		if (o->size >= 8)
			printf("    trace id 0x%" PRIx64 "\n", rd64(in, p));
		break;
	case HGT_OPT_TSC2NSEC:
		if (o->size >= 16)
			printf("    mult %u shift %u offset %" PRIu64 "\n", rd32(in, p),
			       rd32(in, p + 4), rd64(in, p + 8));
		break;
	case HGT_OPT_TIME_SHIFT:
		print_time_shift(in, p, o->size);
		break;
	case HGT_OPT_GUEST: {
		size_t nlen = strnlen((const char *)p, o->size);
		uint32_t n;

		if (nlen + 13 > o->size)
			break;
		n = rd32(in, p + nlen + 9);
		printf("    guest \"%s\" trace id 0x%" PRIx64 ", %u vCPUs\n", (const char *)p,
		       rd64(in, p + nlen + 1), n);
		for (i = 0; i < n && nlen + 13 + 8ULL * (i + 1) <= o->size; i++)
			printf("      vcpu %u -> host pid %d\n", rd32(in, p + nlen + 13 + 8 * i),
			       (int)rd32(in, p + nlen + 17 + 8 * i));
		break;
	}
	case HGT_OPT_BUFFER:
		if (o->size >= 8)
			printf("    data section @ 0x%" PRIx64 ", instance \"%s\"\n", rd64(in, p),
			       (const char *)p + 8);
		break;
	case HGT_OPT_BUFFER_TEXT:
		if (o->size >= 8)
			printf("    latency section @ 0x%" PRIx64 "\n", rd64(in, p));
		break;
	default:
		if (o->id >= HGT_OPT_HEADER_INFO && o->id <= HGT_OPT_MODULES_FILE && o->size >= 8)
			printf("    section @ 0x%" PRIx64 "\n", rd64(in, p));
		break;
	}
}

int cmd_dump(int argc, char **argv)
{
	HGT_OPTS(hgt_open_opts, oo, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	const char *path = NULL;
	struct hgt_meta_info mi;
	struct hgt_input *in;
	int c, i, rc;

	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};

	optind = 1;
	while ((c = cmd_getopt(argc, argv, "+hi:", lopts, usage, &rc)) != -1) {
		switch (c) {
		case 'i':
			path = optarg;
			break;
		case CMD_OPT_EXIT:
			return rc;
		}
	}
	if (!path && optind < argc)
		path = argv[optind];
	if (!path)
		path = "trace.dat";
	in = hgt_input_open(path, &oo);
	if (!in) {
		cmd_error("cannot open");
		return 1;
	}
	printf("file %s: %" PRIu64 " bytes\n", path, hgt_input_file_size(in));
	printf("header: version %d, %s endian, long %d (kernel %d), page size %u, compression %s %s\n",
	       hgt_input_version(in), hgt_input_big_endian(in) ? "big" : "little",
	       hgt_input_long_size(in), hgt_input_kernel_long_size(in), hgt_input_page_size(in),
	       hgt_input_compression_name(in), hgt_input_compression_version(in));
	printf("trace clock: %s%s\n",
	       hgt_input_trace_clock(in) ? hgt_input_trace_clock(in) : "(no TRACECLOCK option)",
	       hgt_input_in_usecs(in) ? " (times print as sec.usec)" : " (raw counter)");
	hgt_input_meta_info(in, &mi);
	printf("metadata: header_page %" PRIu64 " bytes, header_event %" PRIu64
	       " bytes, %d ftrace formats, %d systems, %d formats, kallsyms %" PRIu64
	       " bytes, printk %" PRIu64 " bytes, cmdlines %" PRIu64 " bytes\n",
	       mi.header_page_size, mi.header_event_size, mi.nr_ftrace_events, mi.nr_event_systems,
	       mi.nr_events, mi.kallsyms_size, mi.printk_size, mi.cmdlines_size);
	printf("sections (%d):\n", hgt_input_nr_sections(in));
	for (i = 0; i < hgt_input_nr_sections(in); i++) {
		const struct hgt_section *s = hgt_input_section_at(in, i);

		printf("  0x%08" PRIx64 " id %2u %-14s size %10" PRIu64 "%s%s%s%s\n", s->offset,
		       s->id, s->id ? hgt_option_name(s->id) : "OPTIONS", s->size,
		       s->flags & 1 ? " compressed" : "", *s->desc ? " \"" : "", s->desc,
		       *s->desc ? "\"" : "");
	}
	printf("options (%d):\n", hgt_input_nr_options(in));
	for (i = 0; i < hgt_input_nr_options(in); i++)
		print_option(in, hgt_input_option_at(in, i));
	printf("buffers (%d):\n", hgt_input_nr_buffers(in));
	for (i = 0; i < hgt_input_nr_buffers(in); i++) {
		const struct hgt_buffer *b = hgt_input_buffer(in, i);

		printf("  buffer \"%s\": clock %s, page size %u, %d CPUs, data @ 0x%" PRIx64 "%s\n",
		       b->name, *b->clock ? b->clock : "(unknown)", b->page_size, b->nr_cpus,
		       b->section_offset, b->compressed ? ", compressed" : "");
		for (c = 0; c < b->nr_cpus; c++) {
			if (!b->cpus[c].present) {
				printf("    cpu %d: no data\n", c);
				continue;
			}
			printf("    cpu %d: @ 0x%" PRIx64 ", %" PRIu64 " bytes", c,
			       b->cpus[c].offset, b->cpus[c].size);
			if (b->compressed)
				printf(" (%" PRIu64 " uncompressed)",
				       hgt_input_cpu_uncompressed_size(in, i, c));
			printf("\n");
		}
	}
	if (hgt_input_is_latency(in))
		printf("latency (text) trace\n");
	hgt_input_close(in);
	return 0;
}
