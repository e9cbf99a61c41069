/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inflate.c — compressed trace files, as their tools save them: gzip
 * (`.json.gz`, gzip'd Perfetto) and zstd, recognised by their magic bytes,
 * never by a file name.
 *
 * Invariants: the output never exceeds the caller's limit (a small file
 * that inflates without end is refused once it passes it, whatever sizes
 * its headers declare); output memory is at most the limit (gzip and
 * undeclared zstd sizes grow geometrically from a modest start, a declared
 * zstd size is allocated once, capped at the limit), so a bomb costs at
 * most the limit; concatenated members (gzip) and
 * frames (zstd) are all decoded, as `zcat` and `zstdcat` do.  The streaming
 * reader (rva_reader) holds one chunk of the file and the decoder's state,
 * never the whole content; it has no output limit (its consumer bounds what
 * it keeps).
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int rva_unzstd(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *outlen)
{
	ZSTD_DStream *zs = ZSTD_createDStream();
	ZSTD_inBuffer ib = {in, len, 0};
	size_t cap = len * 4 < 65536 ? 65536 : len * 4, r = 1;
	unsigned long long declared = ZSTD_getFrameContentSize(in, len);
	uint8_t *buf = NULL, *nb;
	int rc = 0;

	*out = NULL;
	if (!zs)
		return -ENOMEM;
	/* The window a frame may ask for is bounded too. */
	ZSTD_DCtx_setParameter(zs, ZSTD_d_windowLogMax, 27);
	/* A frame that declares its size (ZSTD_compress does) gets one buffer
	 * of that size (+1 so the end is seen without growing): no realloc
	 * copies of a 32 MiB capture.  The declaration is untrusted, hence the
	 * max cap and the loop below still checking every byte. */
	if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR)
		cap = declared < max ? (size_t)declared + 1 : max;
	if (cap > max)
		cap = max ? max : 1;
	ZSTD_initDStream(zs);
	buf = malloc(cap);
	if (!buf) {
		rc = -ENOMEM;
		goto free_stream;
	}
	*outlen = 0;
	while (ib.pos < ib.size || r != 0) {
		ZSTD_outBuffer ob = {buf + *outlen, cap - *outlen, 0};
		r = ZSTD_decompressStream(zs, &ob, &ib);
		if (ZSTD_isError(r)) {
			rc = -EINVAL;
			break;
		}
		*outlen += ob.pos;
		if (ib.pos == ib.size && r != 0 && ob.pos < ob.size) {
			rc = -EINVAL; /* input ended inside a frame: truncated */
			break;
		}
		if (*outlen == cap) {
			if (cap >= max) {
				if (r == 0 && ib.pos == ib.size)
					break;
				rc = -E2BIG;
				break;
			}
			cap = cap > max / 2 ? max : cap * 2;
			if (!(nb = realloc(buf, cap))) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
		}
	}
	if (rc) {
		free(buf);
		buf = NULL;
	}
	*out = buf;
free_stream:
	ZSTD_freeDStream(zs);
	return rc;
}

static int unzstd(const uint8_t *buf, size_t len, size_t max, uint8_t **out, size_t *outlen,
		  rva_error *err)
{
	int rc = rva_unzstd(buf, len, max, out, outlen);

	if (rc == -E2BIG)
		return rva_fail(err, -EFBIG, "zstd: inflates past %zu MiB", max >> 20);
	if (rc == -ENOMEM)
		return rva_fail(err, rc, "zstd: out of memory");
	if (rc)
		return rva_fail(err, rc, "zstd: damaged or truncated frame");
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

/* ---- streaming: a file read in chunks, inflated on the way ---- */

struct rva_reader {
	int fd;
	int kind; /* RVA_COMPRESSED_* */
	uint64_t size, consumed;
	const rva_progress *p;
	uint8_t *in; /* RVA_CHUNK bytes of the file */
	size_t in_pos, in_len;
	int in_eof;
	z_stream z;
	int z_init, member_done;
	ZSTD_DStream *zs;
	ZSTD_inBuffer zin;
	size_t zr; /* ZSTD_decompressStream's last hint: 0 at a frame's end */
};

/* Refills r->in from the file (only once it is used up). */
static int fill(rva_reader *r, rva_error *err)
{
	assert(r->in_pos == r->in_len);
	ssize_t n;
	do
		n = read(r->fd, r->in, RVA_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return rva_fail(err, -errno, "read: %s", strerror(errno));
	r->in_pos = 0;
	r->in_len = (size_t)n;
	r->in_eof = n == 0;
	r->consumed += (uint64_t)n;
	if (r->p && r->p->fn)
		r->p->fn(r->p->arg, r->consumed, r->size > r->consumed ? r->size : r->consumed);
	return 0;
}

int rva_reader_open(rva_reader **out, int fd, uint64_t size, const rva_progress *p, rva_error *err)
{
	rva_reader *r = calloc(1, sizeof(*r));
	*out = NULL;
	if (!r || !(r->in = malloc(RVA_CHUNK))) {
		free(r);
		close(fd);
		return rva_fail(err, -ENOMEM, "out of memory");
	}
	r->fd = fd;
	r->size = size;
	r->p = p;
	r->zr = 1;
	int rc;
	/* The magic needs 4 bytes; a file may arrive a few bytes at a time. */
	while (r->in_len < 4 && !r->in_eof) {
		ssize_t n;
		do
			n = read(fd, r->in + r->in_len, RVA_CHUNK - r->in_len);
		while (n < 0 && errno == EINTR);
		if (n < 0) {
			rc = rva_fail(err, -errno, "read: %s", strerror(errno));
			goto fail;
		}
		r->in_eof = n == 0;
		r->in_len += (size_t)n;
		r->consumed += (uint64_t)n;
	}
	r->kind = rva_compression_of(r->in, r->in_len);
	if (r->kind == RVA_COMPRESSED_GZIP) {
		r->z.next_in = r->in;
		r->z.avail_in = (uInt)r->in_len;
		r->in_pos = r->in_len;
		if (inflateInit2(&r->z, 15 + 32) != Z_OK) {
			rc = rva_fail(err, -ENOMEM, "gzip: out of memory");
			goto fail;
		}
		r->z_init = 1;
	} else if (r->kind == RVA_COMPRESSED_ZSTD) {
		if (!(r->zs = ZSTD_createDStream())) {
			rc = rva_fail(err, -ENOMEM, "zstd: out of memory");
			goto fail;
		}
		ZSTD_DCtx_setParameter(r->zs, ZSTD_d_windowLogMax, 27);
		r->zin = (ZSTD_inBuffer){r->in, r->in_len, 0};
		r->in_pos = r->in_len;
	}
	*out = r;
	return 0;
fail:
	rva_reader_close(r);
	return rc;
}

static ssize_t read_gzip(rva_reader *r, uint8_t *buf, size_t cap, rva_error *err)
{
	int rc;
	for (;;) {
		if (r->z.avail_in == 0 && !r->in_eof) {
			if ((rc = fill(r, err)) < 0)
				return rc;
			r->z.next_in = r->in;
			r->z.avail_in = (uInt)r->in_len;
			r->in_pos = r->in_len;
		}
		if (r->z.avail_in == 0 && r->in_eof) {
			if (r->member_done)
				return 0;
			return rva_fail(err, -EINVAL, "gzip: truncated or damaged stream");
		}
		if (r->member_done) {
			/* Another gzip member follows (`cat a.gz b.gz`). */
			if (inflateReset(&r->z) != Z_OK)
				return rva_fail(err, -EINVAL, "gzip: damaged stream");
			r->member_done = 0;
		}
		r->z.next_out = buf;
		r->z.avail_out = (uInt)cap;
		int zr = inflate(&r->z, Z_NO_FLUSH);
		size_t got = cap - r->z.avail_out;
		if (zr == Z_STREAM_END)
			r->member_done = 1;
		else if (zr != Z_OK && zr != Z_BUF_ERROR)
			return rva_fail(err, zr == Z_MEM_ERROR ? -ENOMEM : -EINVAL, "gzip: %s",
					r->z.msg ? r->z.msg : "damaged stream");
		if (got)
			return (ssize_t)got;
	}
}

static ssize_t read_zstd(rva_reader *r, uint8_t *buf, size_t cap, rva_error *err)
{
	int rc;
	for (;;) {
		if (r->zin.pos == r->zin.size && !r->in_eof) {
			if ((rc = fill(r, err)) < 0)
				return rc;
			r->zin = (ZSTD_inBuffer){r->in, r->in_len, 0};
			r->in_pos = r->in_len;
		}
		if (r->zin.pos == r->zin.size && r->in_eof && r->zr == 0)
			return 0;
		ZSTD_outBuffer o = {buf, cap, 0};
		size_t zr = ZSTD_decompressStream(r->zs, &o, &r->zin);
		if (ZSTD_isError(zr))
			return rva_fail(err, -EINVAL, "zstd: %s", ZSTD_getErrorName(zr));
		r->zr = zr;
		if (o.pos)
			return (ssize_t)o.pos;
		if (r->zin.pos == r->zin.size && r->in_eof && zr != 0)
			return rva_fail(err, -EINVAL, "zstd: truncated frame");
	}
}

ssize_t rva_reader_read(void *arg, uint8_t *buf, size_t cap, rva_error *err)
{
	rva_reader *r = arg;
	int rc;
	if (cap > RVA_CHUNK)
		cap = RVA_CHUNK; /* zlib counts in uInt */
	if (r->kind == RVA_COMPRESSED_GZIP)
		return read_gzip(r, buf, cap, err);
	if (r->kind == RVA_COMPRESSED_ZSTD)
		return read_zstd(r, buf, cap, err);
	if (r->in_pos == r->in_len && !r->in_eof && (rc = fill(r, err)) < 0)
		return rc;
	size_t n = r->in_len - r->in_pos < cap ? r->in_len - r->in_pos : cap;
	memcpy(buf, r->in + r->in_pos, n);
	r->in_pos += n;
	return (ssize_t)n;
}

void rva_reader_close(rva_reader *r)
{
	if (!r)
		return;
	if (r->z_init)
		inflateEnd(&r->z);
	ZSTD_freeDStream(r->zs);
	free(r->in);
	close(r->fd);
	free(r);
}
