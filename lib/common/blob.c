// SPDX-License-Identifier: LGPL-2.1-or-later
/* A growing byte buffer for building metadata items in their trace.dat encoding. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common-local.h"

/* Room for @n more bytes after b->len: 0, or -ENOMEM (b->oom set). */
int hgt__blob_room(struct hgt__blob *b, size_t n)
{
	size_t c;
	uint8_t *p;

	if (b->p && n <= b->cap - b->len)
		return 0;
	c = (b->len + n) * 2 + 256;
	p = realloc(b->p, c);
	if (!p) {
		b->oom = true;
		return -ENOMEM;
	}
	b->p = p;
	b->cap = c;
	return 0;
}

int hgt__blob_put(struct hgt__blob *b, const void *v, size_t n)
{
	if (b->len + n > b->cap && hgt__blob_room(b, n))
		return -ENOMEM;
	if (n)
		memcpy(b->p + b->len, v, n);
	b->len += n;
	return 0;
}

/* @v as an unsigned LEB128 varint (protobuf's, and view's page data). */
int hgt__blob_varint(struct hgt__blob *b, uint64_t v)
{
	uint8_t t[10];

	return hgt__blob_add(b, t, hgt__varint(t, v));
}

/*
 * hgt__blob_u64_at - @v in decimal, as printf's %llu. Written from its end straight into
 * the output: digits made in a buffer of their own and copied out of it whole stalled on
 * each copy (a 16-byte load of bytes just stored two at a time is not forwarded from the
 * stores).
 */
void hgt__blob_u64_at(struct hgt__blob *b, unsigned long long v)
{
	char tmp[24], *p;
	size_t d = (size_t)hgt__ndigits(v);

	p = b->p && b->cap - b->len >= sizeof(tmp) ? (char *)b->p + b->len : tmp;
	hgt__put_dec_back(p + d, v);
	if (p == tmp)
		hgt__blob_add(b, tmp, d);
	else
		b->len += d;
}

/* A size (u32 or u64, @size_bytes) followed by @n bytes of @text. */
int hgt__blob_item(struct hgt__blob *b, const void *text, size_t n, int size_bytes)
{
	uint64_t n64 = n;
	uint32_t n32 = (uint32_t)n;
	int ret = size_bytes == 8 ? hgt__blob_put(b, &n64, 8) : hgt__blob_put(b, &n32, 4);

	return ret ? ret : hgt__blob_put(b, text, n);
}

const char hgt__digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

const char hgt__hex_pairs[513] =
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
