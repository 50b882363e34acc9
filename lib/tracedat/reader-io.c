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

static __thread char last_error[HGT__ERRLEN];

const char *hgt_last_error(void)
{
	return last_error;
}

void hgt__set_last_error(const char *msg)
{
	snprintf(last_error, sizeof(last_error), "%s", msg);
}

static int verror(struct hgt_input *in, uint64_t off, int err, const char *fmt, va_list ap)
{
	char what[HGT__ERRLEN];

	vsnprintf(what, sizeof(what), fmt, ap);
	snprintf(in->err, sizeof(in->err), "%s: offset 0x%llx: %s", in->path,
		 (unsigned long long)off, what);
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
	ret = verror(in, off, err, fmt, ap);
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

int hgt__pread_all(struct hgt_input *in, void *buf, uint64_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = pread(in->fd, p, len > (1 << 30) ? (1 << 30) : len, (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return hgt__error(in, off, errno, "read failed: %s", strerror(errno));
		}
		if (r == 0)
			return hgt__error(in, off, EIO,
					  "unexpected end of file (%llu bytes missing)",
					  (unsigned long long)len);
		p += r;
		off += r;
		len -= r;
	}
	return 0;
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

/* Write all @n bytes, at @off (pwrite) or, with @off < 0, at the file position. */
static int write_loop(int fd, const void *buf, size_t n, int64_t off)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t w = off < 0 ? write(fd, p, n) : pwrite(fd, p, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
		if (off >= 0)
			off += w;
	}
	return 0;
}

/**
 * hgt__pwrite_full - write all @n bytes at @off (EINTR retried). Returns 0 or -errno.
 */
int hgt__pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
	return write_loop(fd, buf, n, (int64_t)off);
}

/**
 * hgt__write_full - write all @n bytes to @fd (EINTR retried). Returns 0 or -errno.
 */
int hgt__write_full(int fd, const void *buf, size_t n)
{
	return write_loop(fd, buf, n, -1);
}

/**
 * hgt__valid_name - a name for files and instances: [A-Za-z0-9_.-], 1 to 64 characters.
 */
bool hgt__valid_name(const char *s)
{
	size_t n = strlen(s);

	/* "." and ".." name directories: a name is a file name part (setup-guest's DIR/NAME) */
	if (!n || n > 64 || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
			return false;
	return true;
}

/**
 * hgt__errorf - record a formatted error line as the thread's last error; returns -@err.
 */
int hgt__errorf(int err, const char *fmt, ...)
{
	char line[HGT__ERRLEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	hgt__set_last_error(line);
	return -err;
}

/**
 * hgt__tmpfile - an unnamed temporary file in directory @dir (falling back to /tmp), or -1.
 */
int hgt__tmpfile(const char *dir)
{
	int fd = open(dir && *dir ? dir : ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0) {
		char tmpl[] = "/tmp/hgtrace-XXXXXX";

		fd = mkstemp(tmpl);
		if (fd >= 0)
			unlink(tmpl);
	}
	return fd;
}
