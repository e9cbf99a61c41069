/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compress.c — streaming zstd compression of a capture into an upload
 * envelope (see compress.h).
 *
 * Invariants:
 *  - at most one 64 KiB input block is in memory (on the stack); the
 *    output grows by at least ZSTD_CStreamOutSize() before each call, so
 *    0 <= *zlen <= *zcap always;
 *  - the bytes compressed are exactly the file's size (spool files never
 *    change), else the result is an error, never a short payload;
 *  - in the envelope buffer the tag and length of the payload field end
 *    exactly where the compressed bytes begin (tag + length take at most
 *    11 bytes: the gap reserved for them), and the envelope's other fields
 *    end exactly where the tag begins.
 */
#include "compress.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

int64_t rvd_compress_file(int fd, rva_shuffler *sh, int level, uint64_t size, uint8_t **z,
			  size_t *zlen, size_t *zcap)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	uint8_t in[65536];
	uint64_t total = 0;
	size_t zr = 0;
	int64_t rc = 0;

	assert(*zlen <= *zcap);
	if (!cc)
		return -ENOMEM;
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setPledgedSrcSize(cc, (unsigned long long)size);
	for (bool eof = false; rc == 0 && (!eof || zr != 0);) {
		ssize_t n = 0;
		ZSTD_inBuffer ib;

		if (!eof) {
			n = sh ? rva_shuffler_read(sh, in, sizeof(in)) : read(fd, in, sizeof(in));
			if (n < 0) {
				rc = sh ? n : -errno;
				break;
			}
			eof = n == 0;
			total += (uint64_t)n;
		}
		ib = (ZSTD_inBuffer){in, (size_t)n, 0};
		do {
			ZSTD_outBuffer ob;

			if (*zcap - *zlen < ZSTD_CStreamOutSize()) {
				size_t ncap = *zcap * 2 + ZSTD_CStreamOutSize();
				uint8_t *nz = realloc(*z, ncap);

				if (!nz) {
					rc = -ENOMEM;
					break;
				}
				*z = nz;
				*zcap = ncap;
			}
			ob = (ZSTD_outBuffer){*z + *zlen, *zcap - *zlen, 0};
			zr = ZSTD_compressStream2(cc, &ob, &ib, eof ? ZSTD_e_end : ZSTD_e_continue);
			*zlen += ob.pos;
			assert(*zlen <= *zcap);
			if (ZSTD_isError(zr))
				rc = -EIO;
		} while (rc == 0 && (ib.pos < ib.size || (eof && zr != 0)));
	}
	ZSTD_freeCCtx(cc);
	if (rc == 0 && total != size)
		rc = -EIO; /* spool files never change: something is wrong with this one */
	return rc < 0 ? rc : (int64_t)total;
}

int rvd_compress_envelope(const Rearview__UploadEnvelope *e, int fd, rva_shuffler *sh, int level,
			  uint64_t size, uint8_t **mem, uint8_t **body, size_t *len)
{
	uint8_t *z, tag[11];
	size_t hdr, gap, zlen, zcap, taglen;
	uint64_t plen;
	int64_t n;

	assert(!e->payload.len);
	hdr = rearview__upload_envelope__get_packed_size(e); /* payload still empty */
	gap = hdr + sizeof(tag);
	zlen = gap;
	zcap = gap;
	z = malloc(zcap);
	if (!z)
		return -ENOMEM;
	n = rvd_compress_file(fd, sh, level, size, &z, &zlen, &zcap);
	if (n < 0) {
		free(z);
		return (int)n;
	}
	/* Field 12 (payload), wire type 2: tag, varint length. */
	plen = zlen - gap;
	tag[0] = (12 << 3) | 2;
	taglen = 1;
	do {
		tag[taglen++] = (uint8_t)((plen & 0x7f) | (plen >= 0x80 ? 0x80 : 0));
		plen >>= 7;
	} while (plen);
	assert(taglen <= sizeof(tag));
	memcpy(z + gap - taglen, tag, taglen);
	rearview__upload_envelope__pack(e, z + gap - taglen - hdr);
	*mem = z;
	*body = z + gap - taglen - hdr;
	*len = zlen - (gap - taglen - hdr);
	return 0;
}
