// SPDX-License-Identifier: LGPL-2.1-or-later
/* An event's fields read safely (never past its record), and strings as JSON. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <traceevent/event-parse.h>

#include "../common/common-local.h"
#include "../private/report.h"

/* The bytes among the 16 at @p that hgt__json_blob() does not keep as they are (any but
 * printable ASCII, and '"', '\\' and '<'; NUL too), a bit each; without SSE2 all of them. */
static inline unsigned int unplain16(const char *p)
{
#ifdef __SSE2__
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	/* signed: below 0x20 is a control byte or one of 0x80-0xff */
	__m128i bad = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
				   _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));

	bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
	bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
	bad = _mm_or_si128(bad, _mm_cmpeq_epi8(v, _mm_set1_epi8('<')));
	return (unsigned int)_mm_movemask_epi8(bad);
#else
	(void)p;
	return 0xffff; /* byte by byte */
#endif
}

/**
 * hgt__json_blob - @n bytes of @p (up to a NUL) as a JSON string appended to @b: bytes
 * outside printable ASCII as \u00XX each (kept, not decoded), '<' too, so it can sit in an
 * HTML script.
 */
void hgt__json_blob(struct hgt__blob *b, const char *p, size_t n)
{
	/* 1: a byte kept as it is (printable ASCII but '"', '\\' and '<'); NUL ends */
	static const uint8_t plain[256] = {
		[0x20 ... 0x21] = 1,
		/* '"' */ [0x23 ... 0x3b] = 1,
		/* '<' */ [0x3d ... 0x5b] = 1,
		/* '\\' */ [0x5d ... 0x7e] = 1,
	};
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, run = 0; /* bytes from @run on: kept, not yet put */
	char esc[8];

	hgt__blob_add(b, "\"", 1);
	while (i < n) {
		unsigned char c;

		if (i + 16 <= n) { /* most text: 16 bytes at a time, on to the first not kept */
			unsigned int m = unplain16(p + i);

			if (!m) {
				i += 16;
				continue;
			}
			i += (size_t)__builtin_ctz(m);
		} else if (n >= 16) { /* the tail: the last 16 bytes, those before @i left out */
			unsigned int m = unplain16(p + n - 16) >> (i - (n - 16));

			if (!m) {
				i = n;
				break;
			}
			i += (size_t)__builtin_ctz(m);
		}
		c = (unsigned char)p[i];
		if (!c)
			break;
		if (plain[c]) {
			i++;
			continue; /* put with the run it belongs to */
		}
		hgt__blob_add(b, p + run, i - run);
		run = ++i;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			hgt__blob_add(b, esc, 2);
		} else { /* \u00XX */
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			hgt__blob_add(b, esc, 6);
		}
	}
	hgt__blob_add(b, p + run, i - run);
	hgt__blob_add(b, "\"", 1);
}

/** hgt__json_str - hgt__json_blob() written to @f. */
void hgt__json_str(FILE *f, const char *p, size_t n)
{
	struct hgt__blob b = { 0 };

	hgt__json_blob(&b, p, n);
	fwrite(b.p, 1, b.len, f);
	free(b.p);
}

/**
 * hgt__field_str - the bytes of string field @f (a char array or a __data_loc string) of
 * @rec in *@p and *@n (the field's room, NULs included). False when they lie outside it.
 */
bool hgt__field_str(const struct tep_record *rec, const struct tep_format_field *f, const char **p,
		    size_t *n)
{
	unsigned int off = (unsigned int)f->offset, len = (unsigned int)f->size;

	if (f->flags & TEP_FIELD_IS_DYNAMIC) {
		unsigned int loc;

		if (f->size != 4 || f->offset + 4 > rec->size)
			return false;
		memcpy(&loc, (const char *)rec->data + f->offset, 4);
		off = loc & 0xffff;
		len = loc >> 16;
		if (f->flags & TEP_FIELD_IS_RELATIVE)
			off += (unsigned int)f->offset + 4;
	}
	if ((unsigned long long)off + len > (unsigned long long)rec->size)
		return false;
	*p = (const char *)rec->data + off;
	*n = len;
	return true;
}

/**
 * hgt__field_is_bytes - whether string field @f (libtraceevent's TEP_FIELD_IS_STRING: a
 * char, __u8 or __s8 array) holds bytes rather than text: its type names no char. A socket
 * address in __u8 saddr[28] is such bytes; libtraceevent prints them as text when they
 * happen to be printable up to a NUL (an IPv6 family, 10, is a newline) and as bytes
 * otherwise, and once bytes, always bytes for that field: an exporter gives them as bytes.
 */
bool hgt__field_is_bytes(const struct tep_format_field *f)
{
	return (f->flags & TEP_FIELD_IS_STRING) && f->type && !strstr(f->type, "char");
}

/** hgt__bytes_text - @n bytes of @p as trace-cmd report -R prints bytes: "ARRAY[02, 00]". */
void hgt__bytes_text(struct hgt__blob *b, const char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	hgt__blob_add(b, "ARRAY[", 6);
	for (size_t i = 0; i < n; i++) {
		char x[4] = { ',', ' ', hex[(unsigned char)p[i] >> 4], hex[p[i] & 15] };

		hgt__blob_add(b, i ? x : x + 2, i ? 4 : 2);
	}
	hgt__blob_add(b, "]", 1);
}

/**
 * hgt__field_num - number field @f of @rec (0 when @f is NULL or lies outside the record:
 * a damaged record never makes it read past its end).
 */
unsigned long long hgt__field_num(const struct tep_format_field *f, const struct tep_record *rec)
{
	const uint8_t *p;
	unsigned long long v = 0;

	if (!f || f->offset + f->size > rec->size)
		return 0;
	p = (const uint8_t *)rec->data + f->offset;
	/* the file's byte order the machine's: read in place (tep_read_number_field() is two
	 * calls and a switch per field) */
	if (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && !tep_is_file_bigendian(f->event->tep)) {
		switch (f->size) {
		case 1:
			return p[0];
		case 2: {
			uint16_t x;

			memcpy(&x, p, 2);
			return x;
		}
		case 4: {
			uint32_t x;

			memcpy(&x, p, 4);
			return x;
		}
		case 8: {
			uint64_t x;

			memcpy(&x, p, 8);
			return x;
		}
		default:
			return 0;
		}
	}
	tep_read_number_field((struct tep_format_field *)f, rec->data, &v);
	return v;
}
