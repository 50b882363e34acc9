// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Bounded reads from a trace.dat file or a decompressed section, with error context:
 * every failure names the file, the offset and what was wrong.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracedat-local.h"

static int verror(struct hgt_input *in, const char *name, uint64_t off, int err, const char *fmt,
		  va_list ap)
{
	char what[HGT__ERRLEN];

	vsnprintf(what, sizeof(what), fmt, ap);
	snprintf(in->err, sizeof(in->err), "%s: offset 0x%llx: %s", name, (unsigned long long)off,
		 what);
	hgt__set_last_error(in->err);
	return -err;
}

/**
 * hgt__error - record "FILE: offset 0xOFF: message" on @in; returns -@err.
 */
int hgt__error(struct hgt_input *in, uint64_t off, int err, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = verror(in, in->path, off, err, fmt, ap);
	va_end(ap);
	return ret;
}

int hgt__error_at(struct hgt_input *in, const char *name, uint64_t off, int err, const char *fmt,
		  ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = verror(in, name, off, err, fmt, ap);
	va_end(ap);
	return ret;
}

uint64_t hgt__rd_fileoff(const struct hgt__rd *rd)
{
	return rd->mem ? rd->sec_offset : rd->pos;
}

int hgt__rd_error(struct hgt__rd *rd, int err, const char *fmt, ...)
{
	char what[HGT__ERRLEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (rd->mem)
		return hgt__error(rd->in, rd->sec_offset, err,
				  "%s (at byte %llu of the decompressed section): %s", rd->what,
				  (unsigned long long)rd->pos, what);
	return hgt__error(rd->in, rd->pos, err, "%s: %s", rd->what, what);
}

int hgt__pread_from(struct hgt_input *in, int fd, const char *name, void *buf, uint64_t len,
		    uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = pread(fd, p, len > (1 << 30) ? (1 << 30) : len, (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return hgt__error_at(in, name, off, errno, "read failed: %s",
					     strerror(errno));
		}
		if (r == 0)
			return hgt__error_at(in, name, off, EIO,
					     "unexpected end of file (%llu bytes missing)",
					     (unsigned long long)len);
		p += r;
		off += r;
		len -= r;
	}
	return 0;
}

int hgt__pread_all(struct hgt_input *in, void *buf, uint64_t len, uint64_t off)
{
	return hgt__pread_from(in, in->fd, in->path, buf, len, off);
}

int hgt__rd_bytes(struct hgt__rd *rd, void *buf, uint64_t len)
{
	int ret;

	if (rd->pos > rd->end || len > rd->end - rd->pos)
		return hgt__rd_error(
			rd, EBADMSG, "needs %llu bytes, only %llu remain", (unsigned long long)len,
			(unsigned long long)(rd->pos > rd->end ? 0 : rd->end - rd->pos));
	if (rd->mem) {
		memcpy(buf, rd->mem + rd->pos, len);
	} else {
		ret = hgt__pread_all(rd->in, buf, len, rd->pos);
		if (ret)
			return ret;
	}
	rd->pos += len;
	return 0;
}

uint16_t hgt__get16(const struct hgt_input *in, const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return in->big_endian ? be16toh(v) : le16toh(v);
}

uint32_t hgt__get32(const struct hgt_input *in, const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return in->big_endian ? be32toh(v) : le32toh(v);
}

uint64_t hgt__get64(const struct hgt_input *in, const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return in->big_endian ? be64toh(v) : le64toh(v);
}

int hgt__rd_u16(struct hgt__rd *rd, uint16_t *v)
{
	uint8_t b[2];
	int ret = hgt__rd_bytes(rd, b, sizeof(b));

	if (!ret)
		*v = hgt__get16(rd->in, b);
	return ret;
}

int hgt__rd_u32(struct hgt__rd *rd, uint32_t *v)
{
	uint8_t b[4];
	int ret = hgt__rd_bytes(rd, b, sizeof(b));

	if (!ret)
		*v = hgt__get32(rd->in, b);
	return ret;
}

int hgt__rd_u64(struct hgt__rd *rd, uint64_t *v)
{
	uint8_t b[8];
	int ret = hgt__rd_bytes(rd, b, sizeof(b));

	if (!ret)
		*v = hgt__get64(rd->in, b);
	return ret;
}

int hgt__rd_alloc(struct hgt__rd *rd, char **buf, uint64_t len)
{
	uint64_t avail = rd->pos > rd->end ? 0 : rd->end - rd->pos;
	char *p;
	int ret;

	*buf = NULL;
	if (len > avail)
		return hgt__rd_error(rd, EBADMSG, "claims %llu bytes, only %llu remain",
				     (unsigned long long)len, (unsigned long long)avail);
	if (len > HGT__MAX_META)
		return hgt__rd_error(rd, EFBIG, "claims %llu bytes, more than the %llu allowed",
				     (unsigned long long)len, (unsigned long long)HGT__MAX_META);
	p = malloc(len + 1);
	if (!p)
		return hgt__rd_error(rd, ENOMEM, "cannot allocate %llu bytes",
				     (unsigned long long)len);
	ret = hgt__rd_bytes(rd, p, len);
	if (ret) {
		free(p);
		return ret;
	}
	p[len] = '\0';
	*buf = p;
	return 0;
}

int hgt__rd_str(struct hgt__rd *rd, char **s, uint64_t max)
{
	uint64_t start = rd->pos, avail = rd->pos > rd->end ? 0 : rd->end - rd->pos;
	uint64_t n = 0;
	char chunk[64];
	int ret;

	*s = NULL;
	if (avail < max)
		max = avail;
	/* Find the NUL first, then read the string in one go. */
	while (n < max) {
		uint64_t k = max - n < sizeof(chunk) ? max - n : sizeof(chunk);
		char *z;

		if (rd->mem) {
			memcpy(chunk, rd->mem + start + n, k);
		} else {
			ret = hgt__pread_all(rd->in, chunk, k, start + n);
			if (ret)
				return ret;
		}
		z = memchr(chunk, '\0', k);
		if (z) {
			n += (uint64_t)(z - chunk);
			ret = hgt__rd_alloc(rd, s, n);
			if (ret)
				return ret;
			rd->pos++; /* the NUL */
			return 0;
		}
		n += k;
	}
	return hgt__rd_error(rd, EBADMSG, "string is not NUL-terminated within %llu bytes",
			     (unsigned long long)max);
}
