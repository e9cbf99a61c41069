/* SPDX-License-Identifier: Apache-2.0 */
/*
 * payload.c — the payload codec (payload.h): a stored capture's
 * compression undone, plain zstd or zstd over the shuffled form
 * (tracer/FORMAT.md §3), unshuffled chunk by chunk as zstd produces it.
 *
 * Invariants: output never exceeds the caller's max, whatever the frames
 * declare (a declared size only sizes the first buffer; every byte is
 * still checked against max and against the declaration); a frame that
 * ends early or runs past its declared size is -EINVAL, never a short
 * capture; no function keeps state between calls (the decoder's reused
 * zstd context is handed in).
 */
#include "pipeline/payload.h"

#include <errno.h>
#include <stdlib.h>

#include "rearview/analysis.h"
#include "rearview/upload.pb-c.h"

int rvs_zstd_decompress(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *outlen)
{
	return rva_unzstd(in, len, max, out, outlen);
}

/* The sum of the content sizes the frames of in[0..len) declare (skippable
 * frames count 0); ZSTD_CONTENTSIZE_UNKNOWN when a frame does not declare
 * it, ZSTD_CONTENTSIZE_ERROR when the frames do not parse. */
static unsigned long long declared_size(const uint8_t *in, size_t len)
{
	unsigned long long total = 0;
	while (len) {
		unsigned long long fcs = ZSTD_getFrameContentSize(in, len);
		size_t fl = ZSTD_findFrameCompressedSize(in, len);
		if (fcs == ZSTD_CONTENTSIZE_ERROR || fcs == ZSTD_CONTENTSIZE_UNKNOWN)
			return fcs;
		if (ZSTD_isError(fl) || fl > len || total + fcs < total)
			return ZSTD_CONTENTSIZE_ERROR;
		total += fcs;
		in += fl;
		len -= fl;
	}
	return total;
}

/* zstd frames in[0..len) holding a capture's shuffled form (tracer/FORMAT.md
 * §3) into the capture, out[0..cap): zstd's output goes through the
 * unshuffler one chunk at a time, so no second capture-sized buffer.
 * 0, -EINVAL (corrupt, truncated, not a capture's form), -E2BIG (more than
 * cap), -ENOMEM. */
static int unzstd_shuffled(ZSTD_DCtx *dctx, const uint8_t *in, size_t len, uint8_t *out, size_t cap,
			   size_t *outlen)
{
	size_t chunk_len = ZSTD_DStreamOutSize(), r = 0;
	ZSTD_inBuffer ib = {in, len, 0};
	rva_unshuffler *u = NULL;
	uint8_t *chunk;
	int rc;

	if (!(chunk = malloc(chunk_len)))
		return -ENOMEM;
	if ((rc = rva_unshuffler_new(out, cap, &u)))
		goto free_chunk;
	ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
	for (;;) {
		ZSTD_outBuffer ob = {chunk, chunk_len, 0};
		r = ZSTD_decompressStream(dctx, &ob, &ib);
		if (ZSTD_isError(r)) {
			rc = -EINVAL;
			goto free_unshuffler;
		}
		if (ob.pos && (rc = rva_unshuffler_write(u, chunk, ob.pos)))
			goto free_unshuffler;
		if (ib.pos == ib.size && ob.pos < ob.size)
			break; /* all input taken, nothing left inside zstd */
	}
	rc = r ? -EINVAL : rva_unshuffler_finish(u, outlen); /* r: ended mid-frame */
free_unshuffler:
	rva_unshuffler_free(u);
free_chunk:
	free(chunk);
	return rc;
}

int rvs_payload_inflate_to(ZSTD_DCtx *dctx, int comp, const uint8_t *in, size_t len, uint8_t *out,
			   size_t total, size_t *outlen)
{
	size_t r;
	if (comp == REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED)
		return unzstd_shuffled(dctx, in, len, out, total, outlen);
	/* The declared sizes are untrusted: output beyond them is an error
	 * (dstSize_tooSmall), output short of them is checked below. */
	r = ZSTD_decompressDCtx(dctx, out, total, in, len);
	if (ZSTD_isError(r) || r != total)
		return -EINVAL;
	*outlen = r;
	return 0;
}

int rvs_payload_size(int comp, const uint8_t *in, size_t len, size_t max, size_t *total)
{
	unsigned long long t = declared_size(in, len);
	if (t == ZSTD_CONTENTSIZE_ERROR || t == ZSTD_CONTENTSIZE_UNKNOWN || t == 0)
		return comp == REARVIEW__COMPRESSION__COMPRESSION_ZSTD ? 1 : -EINVAL;
	if (t > max)
		return -E2BIG;
	*total = (size_t)t;
	return 0;
}

int rvs_payload_inflate(int comp, const uint8_t *in, size_t len, size_t max, uint8_t **out,
			size_t *outlen)
{
	ZSTD_DCtx *dctx;
	size_t total = 0;
	int rc;

	*out = NULL;
	if (comp != REARVIEW__COMPRESSION__COMPRESSION_ZSTD &&
	    comp != REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED)
		return -EPROTONOSUPPORT;
	if ((rc = rvs_payload_size(comp, in, len, max, &total)) == 1)
		return rvs_zstd_decompress(in, len, max, out, outlen);
	if (rc)
		return rc;
	if (!(dctx = ZSTD_createDCtx()))
		return -ENOMEM;
	if (!(*out = malloc(total))) {
		rc = -ENOMEM;
	} else if ((rc = rvs_payload_inflate_to(dctx, comp, in, len, *out, total, outlen))) {
		free(*out);
		*out = NULL;
	}
	ZSTD_freeDCtx(dctx);
	return rc;
}

size_t rvs_inflate_limit(uint64_t declared)
{
	return declared && declared < RVS_DECODE_MAX_CAPTURE ? (size_t)declared
							     : (size_t)RVS_DECODE_MAX_CAPTURE;
}
