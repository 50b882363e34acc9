/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Plumbing shared by the parts of libhgtrace and by libhgtrace-probes. */
#ifndef HGTRACE_COMMON_LOCAL_H
#define HGTRACE_COMMON_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define HGT__ERRLEN 512

/* Bounds for anything a file claims, so a hostile file cannot make us allocate without end. */
#define HGT__MAX_META (1ULL << 30)   /* one metadata item (kallsyms can be tens of MB) */
#define HGT__MAX_CHUNK (64ULL << 20) /* one compressed chunk, uncompressed */
#define HGT__MAX_CPUS 8192
#define HGT__MAX_SECTIONS (1 << 20) /* a v7 file with more is not a tracer's */
#define HGT__MAX_PAGE (1U << 24)
#define HGT__MAX_OPTIONS 65536
#define HGT__MAX_EVENTS 1000000

/* The thread's last error (errors.c): a line for hgt_last_error(); errorf returns -@err. */
void hgt__set_last_error(const char *msg);
int hgt__errorf(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whole writes (io.c), EINTR retried: 0 or -errno. */
int hgt__pwrite_full(int fd, const void *buf, size_t n, uint64_t off);
int hgt__write_full(int fd, const void *buf, size_t n);
/*
 * hgt__write_within - write all @n bytes to @fd, a pipe, port or socket whose reader may be
 * gone: never blocked longer than a poll slice; while there is no room, *@stop (when set)
 * ends it with -ECANCELED, and a reader that took nothing for @stall_ms (0: no limit)
 * with -ETIMEDOUT.
 */
int hgt__write_within(int fd, const void *buf, size_t n, unsigned int stall_ms,
		      const volatile int *stop);
/* Pipes and FIFOs (io.c): the bytes no reader has taken yet (-1: @fd is no pipe), and a
 * wait until there are none, ended as hgt__write_within() ends its wait. */
long hgt__pipe_unread(int fd);
int hgt__pipe_wait_read(int fd, unsigned int stall_ms, const volatile int *stop);
/* CLOCK_MONOTONIC in milliseconds, in nanoseconds (io.c). */
uint64_t hgt__now_ms(void);
uint64_t hgt__now_ns(void);
/* Room in *@pp, an array of @size-byte elements with *@cap of them, for @need: its
 * capacity doubled (from @first) until it holds them (io.c). 0, or -ENOMEM with *@pp and
 * *@cap unchanged. */
int hgt__grow(void *pp, size_t *cap, size_t need, size_t size, size_t first);
/* An unnamed temporary file in @dir (falling back to /tmp), or -1. */
int hgt__tmpfile(const char *dir);
/* A name for files and instances: [A-Za-z0-9_.-], 1 to 64 characters, not . or .. */
bool hgt__valid_name(const char *s);

/*
 * hgt__link_check - whether @path, a symbolic link as lstat() gave @lst, may be followed to
 * write: not in a sticky world-writable directory unless the writer (euid) or the
 * directory's owner owns the link (the kernel's protected_symlinks rule, whatever the
 * sysctl says). 0 (also for anything but a link) or -EPERM with the reason in @why.
 */
int hgt__link_check(const char *path, const struct stat *lst, char *why, size_t n);

/* a growing byte buffer (blob.c) (metadata items being built, view's page data, protobuf) */
struct hgt__blob {
	uint8_t *p;
	size_t len, cap;
	bool oom; /* a put failed */
};
int hgt__blob_put(struct hgt__blob *b, const void *v, size_t n);
int hgt__blob_room(struct hgt__blob *b, size_t n);
/* hgt__blob_put(), inline where @n bytes fit (writers of many small pieces) */
static inline int hgt__blob_add(struct hgt__blob *b, const void *v, size_t n)
{
	if (!n)
		return 0;
	if (b->p && n <= b->cap - b->len) {
		memcpy(b->p + b->len, v, n);
		b->len += n;
		return 0;
	}
	return hgt__blob_put(b, v, n);
}
/* the string literal @lit, its length known where it is written */
#define hgt__blob_lit(b, lit) hgt__blob_add((b), "" lit, sizeof(lit) - 1)
int hgt__blob_varint(struct hgt__blob *b, uint64_t v);
/* @v as an unsigned LEB128 varint into @out (10 bytes at most); its length */
static inline size_t hgt__varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	do {
		out[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}
int hgt__blob_item(struct hgt__blob *b, const void *text, size_t n, int size_bytes);

/* A thread writing a maker's buffers to a FILE, in order, while the maker goes on
 * (bgwrite.c): start (NULL: none, write yourself), put a full buffer and take an empty one
 * back, end (all written, the thread joined: -errno of a failed write, or 0). */
struct hgt__bgwrite;
struct hgt__bgwrite *hgt__bgwrite_start(FILE *out);
void hgt__bgwrite_put(struct hgt__bgwrite *w, struct hgt__blob *b);
int hgt__bgwrite_end(struct hgt__bgwrite *w);

/* blob.c: "00" to "99", two digits per division */
extern const char hgt__digit_pairs[201];
/* blob.c: "00" to "ff", two hex digits per byte */
extern const char hgt__hex_pairs[513];
/* @v's last @digits hex digits (lowercase) ending at @end, written backwards */
static inline void hgt__put_hex_back(char *end, uint64_t v, int digits)
{
	for (; digits >= 2; digits -= 2, v >>= 8) {
		end -= 2;
		memcpy(end, hgt__hex_pairs + 2 * (v & 0xff), 2);
	}
	if (digits)
		end[-1] = hgt__hex_pairs[2 * (v & 15) + 1];
}

/* the number of decimal digits of @v */
static inline int hgt__ndigits(unsigned long long v)
{
	static const unsigned long long pow10[20] = {
		1ULL,
		10ULL,
		100ULL,
		1000ULL,
		10000ULL,
		100000ULL,
		1000000ULL,
		10000000ULL,
		100000000ULL,
		1000000000ULL,
		10000000000ULL,
		100000000000ULL,
		1000000000000ULL,
		10000000000000ULL,
		100000000000000ULL,
		1000000000000000ULL,
		10000000000000000ULL,
		100000000000000000ULL,
		1000000000000000000ULL,
		10000000000000000000ULL,
	};
	int t = ((64 - __builtin_clzll(v | 1)) * 1233) >> 12; /* log10 from log2, or one more */

	return v ? t + 1 - (v < pow10[t]) : 1;
}

/* @v's decimal digits (all hgt__ndigits(@v) of them) ending at @end, written backwards, two
 * per division */
static inline void hgt__put_dec_back(char *end, uint64_t v)
{
	for (; v >= 100; v /= 100) {
		end -= 2;
		memcpy(end, hgt__digit_pairs + 2 * (v % 100), 2);
	}
	if (v >= 10)
		memcpy(end - 2, hgt__digit_pairs + 2 * v, 2);
	else
		end[-1] = (char)('0' + v);
}

/* blob.c: @v in decimal (printf's %llu) at the end of @b */
void hgt__blob_u64_at(struct hgt__blob *b, unsigned long long v);

/* hgt__blob_u64_at(), inline for the numbers below 100 most fields hold */
static inline void hgt__blob_u64(struct hgt__blob *b, unsigned long long v)
{
	if (v < 100 && b->p && b->cap - b->len >= 2) {
		if (v < 10) {
			b->p[b->len++] = (uint8_t)('0' + v);
		} else {
			memcpy(b->p + b->len, hgt__digit_pairs + 2 * v, 2);
			b->len += 2;
		}
		return;
	}
	hgt__blob_u64_at(b, v);
}

/* @v as printf's %lld at the end of @b */
static inline void hgt__blob_i64(struct hgt__blob *b, long long v)
{
	if (v < 0) {
		hgt__blob_add(b, "-", 1);
		hgt__blob_u64(b, 0ULL - (unsigned long long)v);
	} else {
		hgt__blob_u64(b, (unsigned long long)v);
	}
}

#endif
