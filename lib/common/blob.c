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
