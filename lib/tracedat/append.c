// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Append options to a finished version 7 file, as trace-cmd's attach and time sync do:
 * a new OPTIONS section and a STRINGS section at the end, the last DONE patched to point
 * at the new OPTIONS section. Everything is computed before the first byte is written,
 * and a failed write restores the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hgtrace/output.h>

#include "tracedat-local.h"

static void put(uint8_t **p, const void *v, size_t n)
{
	memcpy(*p, v, n);
	*p += n;
}

static int fail(const char *path, int err, const char *what)
{
	char line[HGT__ERRLEN];

	snprintf(line, sizeof(line), "%s: %s", path, what);
	hgt__set_last_error(line);
	return -err;
}

/**
 * hgt_tracedat_append_options - append options to a finished v7 file.
 */
int hgt_tracedat_append_options(const char *path, const struct hgt_option_blob *opts, int n)
{
	return hgt__append_options(path, opts, n, NULL);
}

/**
 * hgt__append_undo - put a file back as it was before hgt__append_options().
 */
int hgt__append_undo(const char *path, const struct hgt__append_undo *u)
{
	uint64_t zero = 0;
	int fd = open(path, O_RDWR | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = ftruncate(fd, (off_t)u->eof) ? -errno : 0;
	if (!ret)
		ret = hgt__pwrite_full(fd, &zero, 8, u->done_pos);
	close(fd);
	return ret;
}

int hgt__append_options(const char *path, const struct hgt_option_blob *opts, int n,
			struct hgt__append_undo *undo)
{
	HGT_OPTS(hgt_open_opts, oo, .flags = HGT_OPEN_HEAD_ONLY | HGT_OPEN_QUIET);
	static const char strings[] = "options\0strings";
	uint64_t body = 14, eof, done_pos, old_next, sstr;
	struct hgt_input *in;
	uint8_t *blob, *p;
	char msg[HGT__ERRLEN];
	size_t total;
	bool patched;
	int i, fd, ret;

	for (i = 0; i < n; i++) {
		if (opts[i].size && !opts[i].data)
			return fail(path, EINVAL, "option without data");
		body += 6 + (uint64_t)opts[i].size;
	}
	in = hgt_input_open(path, &oo);
	if (!in)
		return -errno;
	if (in->version < 7) {
		hgt_input_close(in);
		return fail(
			path, EROFS,
			"version 6 files cannot be appended to (convert it to version 7 first)");
	}
	if (!in->last_done_pos) {
		hgt_input_close(in);
		return fail(path, ENOTSUP,
			    "the last OPTIONS section is compressed: its DONE cannot be patched");
	}
	eof = in->file_size;
	done_pos = in->last_done_pos;
	old_next = in->last_done_next;
	sstr = in->strings_len;
	hgt_input_close(in);
	if (old_next) {
		snprintf(msg, sizeof(msg), "offset 0x%llx: last DONE already points at 0x%llx",
			 (unsigned long long)done_pos, (unsigned long long)old_next);
		return fail(path, EBADMSG, msg);
	}

	total = 16 + (size_t)body + 16 + sizeof(strings);
	blob = malloc(total);
	if (!blob)
		return -ENOMEM;
	p = blob;
	{
		uint16_t id = 0, fl = 0;
		uint32_t sid = (uint32_t)sstr;
		uint64_t size = body, zero = 0;
		uint32_t eight = 8;

		put(&p, &id, 2);
		put(&p, &fl, 2);
		put(&p, &sid, 4);
		put(&p, &size, 8);
		for (i = 0; i < n; i++) {
			put(&p, &opts[i].id, 2);
			put(&p, &opts[i].size, 4);
			if (opts[i].size)
				put(&p, opts[i].data, opts[i].size);
		}
		put(&p, &id, 2);
		put(&p, &eight, 4);
		put(&p, &zero, 8);
		id = HGT_OPT_STRINGS;
		sid = (uint32_t)sstr + 8;
		size = sizeof(strings);
		put(&p, &id, 2);
		put(&p, &fl, 2);
		put(&p, &sid, 4);
		put(&p, &size, 8);
		put(&p, strings, sizeof(strings));
	}

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(msg, sizeof(msg), "cannot open for writing: %s", strerror(errno));
		free(blob);
		return fail(path, -ret, msg);
	}
	ret = hgt__pwrite_full(fd, blob, total, eof);
	patched = !ret;
	if (!ret)
		ret = hgt__pwrite_full(fd, &eof, 8, done_pos);
	if (ret) {
		uint64_t zero = 0;

		/* put the file back as it was: cut what was appended (shrinking is allowed
		 * under a file size limit, a write past it is not) and, if the DONE pointer
		 * may have been written, zero it again */
		if (ftruncate(fd, (off_t)eof) ||
		    (patched && hgt__pwrite_full(fd, &zero, 8, done_pos)))
			snprintf(msg, sizeof(msg),
				 "append failed (%s) and the file could not be restored",
				 strerror(-ret));
		else
			snprintf(msg, sizeof(msg), "append failed (%s); file left unchanged",
				 strerror(-ret));
		close(fd);
		free(blob);
		return fail(path, -ret, msg);
	}
	free(blob);
	if (close(fd))
		return fail(path, errno, "close failed");
	if (undo) {
		undo->eof = eof;
		undo->done_pos = done_pos;
	}
	return 0;
}
