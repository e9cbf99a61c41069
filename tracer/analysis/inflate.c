/*
 * inflate.c — compressed trace files, as their tools save them: gzip
 * (`.json.gz`, gzip'd Perfetto) and zstd, recognised by their magic bytes,
 * never by a file name.
 *
 * Invariants: the output never exceeds the caller's limit (a small file
 * that inflates without end is refused once it passes it, whatever sizes
 * its headers declare); output memory grows geometrically from a modest
 * start, so a bomb costs at most the limit; concatenated members (gzip) and
 * frames (zstd) are all decoded, as `zcat` and `zstdcat` do.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "analysis-int.h"
#include "rearview/analysis.h"

int rva_compression_of(const uint8_t *buf, size_t len)
{
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b)
		return RVA_COMPRESSED_GZIP;
	if (len >= 4 && buf[0] == 0x28 && buf[1] == 0xb5 && buf[2] == 0x2f && buf[3] == 0xfd)
		return RVA_COMPRESSED_ZSTD;
	return RVA_COMPRESSED_NONE;
}

/* Makes room for at least one more byte in *out (cap *cap, limit max). */
static int grow(uint8_t **out, size_t *cap, size_t used, size_t max)
{
	if (used < *cap)
		return 0;
	if (*cap >= max)
		return -EFBIG;
	size_t nc = *cap ? *cap * 2 : 1 << 16;
	if (nc > max)
		nc = max;
	uint8_t *n = realloc(*out, nc);
	if (!n)
		return -ENOMEM;
	*out = n;
	*cap = nc;
	return 0;
}

static int gunzip(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *outlen,
		  rva_error *err)
{
	z_stream z;
	size_t cap = 0, used = 0;
	int zr = Z_OK, rc = 0;

	memset(&z, 0, sizeof z);
	/* 15 + 32: a zlib or gzip header, detected. */
	if (inflateInit2(&z, 15 + 32) != Z_OK)
		return rva_fail(err, -ENOMEM, "gzip: out of memory");
	z.next_in = (Bytef *)buf;
	while (rc == 0) {
		if ((rc = grow(out, &cap, used, max)) < 0)
			break;
		/* zlib counts in uInt: feed and drain at most 1 GiB at a time. */
		size_t in_left = len - (size_t)((const uint8_t *)z.next_in - buf);
		z.avail_in = in_left > (1u << 30) ? 1u << 30 : (uInt)in_left;
		z.next_out = *out + used;
		z.avail_out = cap - used > (1u << 30) ? 1u << 30 : (uInt)(cap - used);
		uInt before = z.avail_out;
		zr = inflate(&z, Z_NO_FLUSH);
		used += before - z.avail_out;
		if (zr == Z_STREAM_END) {
			in_left = len - (size_t)((const uint8_t *)z.next_in - buf);
			if (in_left == 0)
				break;
			/* Another gzip member follows (`cat a.gz b.gz`). */
			if (inflateReset(&z) != Z_OK)
				rc = -EINVAL;
			continue;
		}
		if (zr == Z_BUF_ERROR && z.avail_in == 0 && z.avail_out != 0)
			rc = -EINVAL; /* the input ended inside a member */
		else if (zr != Z_OK && zr != Z_BUF_ERROR)
			rc = zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
	}
	inflateEnd(&z);
	if (rc == -EFBIG)
		return rva_fail(err, rc, "gzip: inflates past %zu MiB", max >> 20);
	if (rc < 0)
		return rva_fail(err, rc, "gzip: %s",
				rc == -ENOMEM ? "out of memory"
				: z.msg	      ? z.msg
					      : "truncated or damaged stream");
	*outlen = used;
	return 0;
}

static int unzstd(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *outlen,
		  rva_error *err)
{
	ZSTD_DStream *d = ZSTD_createDStream();
	ZSTD_inBuffer in = {buf, len, 0};
	size_t cap = 0, used = 0, zr = 1;
	int rc = 0;

	if (!d)
		return rva_fail(err, -ENOMEM, "zstd: out of memory");
	/* The window a frame may ask for is bounded too. */
	ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, 27);
	while (rc == 0 && (in.pos < in.size || zr != 0)) {
		if ((rc = grow(out, &cap, used, max)) < 0)
			break;
		ZSTD_outBuffer o = {*out, cap, used};
		size_t before = in.pos;
		zr = ZSTD_decompressStream(d, &o, &in);
		if (ZSTD_isError(zr)) {
			rc = rva_fail(err, -EINVAL, "zstd: %s", ZSTD_getErrorName(zr));
			break;
		}
		if (o.pos == used && in.pos == before && zr != 0 && in.pos == in.size) {
			rc = rva_fail(err, -EINVAL, "zstd: truncated frame");
			break;
		}
		used = o.pos;
	}
	ZSTD_freeDStream(d);
	if (rc == -EFBIG)
		return rva_fail(err, rc, "zstd: inflates past %zu MiB", max >> 20);
	if (rc < 0)
		return rc;
	*outlen = used;
	return 0;
}

int rva_decompress(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *outlen,
		   rva_error *err)
{
	int rc;
	*out = NULL;
	*outlen = 0;
	switch (rva_compression_of(buf, len)) {
	case RVA_COMPRESSED_GZIP:
		rc = gunzip(buf, len, max, out, outlen, err);
		break;
	case RVA_COMPRESSED_ZSTD:
		rc = unzstd(buf, len, max, out, outlen, err);
		break;
	default:
		return rva_fail(err, -EINVAL, "not gzip or zstd");
	}
	if (rc < 0) {
		free(*out);
		*out = NULL;
		*outlen = 0;
	}
	return rc;
}
