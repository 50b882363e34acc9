// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Decompression of v7 sections and chunks (zlib, zstd), and loading of metadata sections.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "tracedat-local.h"

void *hgt__dctx_new(struct hgt_input *in)
{
	if (in->comp == HGT_COMPRESS_ZSTD)
		return ZSTD_createDCtx();
	return NULL;
}

void hgt__dctx_free(struct hgt_input *in, void *dctx)
{
	if (dctx && in->comp == HGT_COMPRESS_ZSTD)
		ZSTD_freeDCtx(dctx);
}

/**
 * hgt__decompress - decompress one block of @csize bytes into exactly @usize bytes.
 * @where: file offset of the block, for the error message.
 */
int hgt__decompress(struct hgt_input *in, void *dctx, const void *src, uint32_t csize, void *dst,
		    uint32_t usize, uint64_t where)
{
	switch (in->comp) {
	case HGT_COMPRESS_ZSTD: {
		size_t r;

		if (dctx)
			r = ZSTD_decompressDCtx(dctx, dst, usize, src, csize);
		else
			r = ZSTD_decompress(dst, usize, src, csize);
		if (ZSTD_isError(r))
			return hgt__error(in, where, EBADMSG, "corrupt zstd block (%u bytes): %s",
					  csize, ZSTD_getErrorName(r));
		if (r != usize)
			return hgt__error(in, where, EBADMSG,
					  "zstd block gives %zu bytes, header says %u", r, usize);
		return 0;
	}
	case HGT_COMPRESS_ZLIB: {
		uLongf out = usize;
		int r = uncompress(dst, &out, src, csize);

		if (r != Z_OK)
			return hgt__error(in, where, EBADMSG, "corrupt zlib block (%u bytes): %s",
					  csize, zError(r));
		if (out != usize)
			return hgt__error(in, where, EBADMSG,
					  "zlib block gives %lu bytes, header says %u", out, usize);
		return 0;
	}
	default:
		return hgt__error(in, where, EBADMSG,
				  "compressed block in a file whose compression is 'none'");
	}
}

/**
 * hgt__load_section - read the body of the v7 section whose header is at @sec_off.
 * @want_id: the section id the caller expects there.
 *
 * Compressed sections are decompressed. *buf is allocated (caller frees), NUL-terminated.
 */
int hgt__load_section(struct hgt_input *in, uint64_t sec_off, uint16_t want_id, uint8_t **buf,
		      uint64_t *len)
{
	return hgt__load_section_packed(in, sec_off, want_id, buf, len, NULL, NULL, NULL);
}

/**
 * hgt__load_section_packed - hgt__load_section(), and with @packed (may be NULL) a
 * compressed section's compressed bytes as stored: *@packed (caller frees) holds them at
 * *@at, *@clen of them; *@packed is NULL for a section stored as it is.
 */
int hgt__load_section_packed(struct hgt_input *in, uint64_t sec_off, uint16_t want_id,
			     uint8_t **buf, uint64_t *len, uint8_t **packed, size_t *at,
			     size_t *clen)
{
	uint8_t hdr[16];
	uint16_t id, flags;
	uint64_t size;
	uint8_t *raw = NULL, *out;
	uint32_t csize, usize;
	int ret;

	*buf = NULL;
	if (packed)
		*packed = NULL;
	if (sec_off < in->header_len || sec_off > in->file_size || in->file_size - sec_off < 16)
		return hgt__error(in, sec_off, EBADMSG,
				  "%s section offset lies outside the file (size %llu)",
				  hgt_option_name(want_id), (unsigned long long)in->file_size);
	ret = hgt__pread_all(in, hdr, sizeof(hdr), sec_off);
	if (ret)
		return ret;
	id = hgt__get16(in, hdr);
	flags = hgt__get16(in, hdr + 2);
	size = hgt__get64(in, hdr + 8);
	if (id != want_id)
		return hgt__error(in, sec_off, EBADMSG, "expected section %u (%s), found id %u",
				  want_id, hgt_option_name(want_id), id);
	if (size > in->file_size - sec_off - 16)
		return hgt__error(in, sec_off, EBADMSG,
				  "section %u (%s) claims %llu bytes, %llu remain in the file", id,
				  hgt_option_name(id), (unsigned long long)size,
				  (unsigned long long)(in->file_size - sec_off - 16));
	if (size > HGT__MAX_META)
		return hgt__error(in, sec_off, EFBIG, "section %u claims %llu bytes (limit %llu)",
				  id, (unsigned long long)size, (unsigned long long)HGT__MAX_META);
	raw = malloc(size + 1);
	if (!raw)
		return -ENOMEM;
	ret = hgt__pread_all(in, raw, size, sec_off + 16);
	if (ret)
		goto out;
	if (!(flags & 1)) {
		raw[size] = 0;
		*buf = raw;
		*len = size;
		return 0;
	}
	if (size < 8) {
		ret = hgt__error(in, sec_off, EBADMSG,
				 "compressed section %u is %llu bytes, too small for its sizes", id,
				 (unsigned long long)size);
		goto out;
	}
	csize = hgt__get32(in, raw);
	usize = hgt__get32(in, raw + 4);
	if (csize > size - 8) {
		ret = hgt__error(in, sec_off + 16, EBADMSG,
				 "compressed size %u exceeds the section's %llu bytes", csize,
				 (unsigned long long)(size - 8));
		goto out;
	}
	if (usize > HGT__MAX_META) {
		ret = hgt__error(in, sec_off + 16, EFBIG,
				 "uncompressed size %u is beyond the limit", usize);
		goto out;
	}
	out = malloc((size_t)usize + 1);
	if (!out) {
		ret = -ENOMEM;
		goto out;
	}
	ret = hgt__decompress(in, NULL, raw + 8, csize, out, usize, sec_off + 24);
	if (ret) {
		free(out);
		goto out;
	}
	out[usize] = 0;
	*buf = out;
	*len = usize;
	if (packed) { /* the stored bytes, checked by their decompression just now */
		*packed = raw;
		*at = 8;
		*clen = csize;
		return 0;
	}
out:
	if (!*buf)
		free(raw);
	else if (*buf != raw)
		free(raw);
	return ret;
}

/* The most that compressing @len bytes with @comp can make (0: not a compression). */
size_t hgt__compress_bound(enum hgt_compression comp, size_t len)
{
	if (comp == HGT_COMPRESS_ZSTD)
		return ZSTD_compressBound(len);
	if (comp == HGT_COMPRESS_ZLIB)
		return compressBound(len);
	return 0;
}

/**
 * hgt__compress_into - compress @len bytes of @src with @comp into @dst (@cap bytes, at
 * least hgt__compress_bound()), its size in *@dlen. zstd without the content size (as
 * trace-cmd writes it), zlib at best compression. @cctx: a ZSTD_CCtx from hgt__cctx_new(),
 * or NULL. Returns 0, -EIO, or -EINVAL.
 */
int hgt__compress_into(enum hgt_compression comp, void *cctx, const void *src, size_t len,
		       uint8_t *dst, size_t cap, size_t *dlen)
{
	if (comp == HGT_COMPRESS_ZSTD) {
		size_t r = ZSTD_compress2(cctx, dst, cap, src, len);

		if (ZSTD_isError(r))
			return -EIO;
		*dlen = r;
		return 0;
	}
	if (comp == HGT_COMPRESS_ZLIB) {
		uLongf z = cap;

		if (compress2(dst, &z, src, len, Z_BEST_COMPRESSION) != Z_OK)
			return -EIO;
		*dlen = z;
		return 0;
	}
	return -EINVAL;
}

/**
 * hgt__compress - hgt__compress_into() a new buffer *@dst (caller frees) of *@dlen bytes.
 */
int hgt__compress(enum hgt_compression comp, void *cctx, const void *src, size_t len, uint8_t **dst,
		  size_t *dlen)
{
	size_t cap = hgt__compress_bound(comp, len);
	uint8_t *out;
	int ret;

	*dst = NULL;
	if (!cap)
		return -EINVAL;
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	ret = hgt__compress_into(comp, cctx, src, len, out, cap, dlen);
	if (ret)
		free(out);
	else
		*dst = out;
	return ret;
}

void *hgt__cctx_new(enum hgt_compression comp)
{
	ZSTD_CCtx *c;

	if (comp != HGT_COMPRESS_ZSTD)
		return NULL;
	c = ZSTD_createCCtx();
	if (c)
		ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
	return c;
}

void hgt__cctx_free(enum hgt_compression comp, void *cctx)
{
	if (cctx && comp == HGT_COMPRESS_ZSTD)
		ZSTD_freeCCtx(cctx);
}

/**
 * hgt__meta_pack - @len bytes of a metadata item at @blob compressed with @comp as a
 * version 7 file stores it (the bytes the writer would make), into *@c (malloc'd, *@clen
 * bytes), for hgt__output_set_meta_packed(). Returns 0 or -errno.
 */
int hgt__meta_pack(enum hgt_compression comp, const void *blob, size_t len, uint8_t **c,
		   size_t *clen)
{
	void *cctx = hgt__cctx_new(comp);
	int ret;

	*c = NULL;
	if (comp == HGT_COMPRESS_ZSTD && !cctx)
		return -ENOMEM;
	ret = len > UINT32_MAX ? -EFBIG : hgt__compress(comp, cctx, blob, len, c, clen);
	hgt__cctx_free(comp, cctx);
	return ret;
}

const char *hgt__compression_version(enum hgt_compression comp)
{
	if (comp == HGT_COMPRESS_ZSTD)
		return ZSTD_versionString();
	if (comp == HGT_COMPRESS_ZLIB)
		return zlibVersion();
	return "";
}
