/* SPDX-License-Identifier: Apache-2.0 */
/*
 * payload.h — the payload codec (payload.c): the capture held in a stored
 * upload payload, whose Compression (upload.proto) is zstd or zstd over the
 * shuffled form.  Used by the decoder (decode.c) and by the JSON API's
 * trace loading (query.c).  Every function is pure apart from its
 * arguments and safe on any thread.
 *
 * Plain zstd is inflated by librvanalysis's rva_unzstd, the tree's one
 * bounded zstd inflater (never more than max, whatever the frames
 * declare).
 */
#ifndef RVS_PAYLOAD_H
#define RVS_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include <zstd.h>

/* The largest capture the server inflates (bytes): an upload declaring more
 * is refused, and inflating stops at the size the upload declared.  Devices
 * spool captures of at most 64 MiB. */
#define RVS_MAX_CAPTURE_BYTES (256ull << 20)

/* Limits: compressed blob and decompressed capture (bytes). */
#define RVS_DECODE_MAX_BLOB    (512ull << 20)
#define RVS_DECODE_MAX_CAPTURE RVS_MAX_CAPTURE_BYTES

/* Decompresses a zstd frame (or concatenated frames) of any content size up
 * to max bytes: rearview/analysis.h's rva_unzstd.  *out is malloc'd (caller
 * frees).  0, -EINVAL (not zstd / corrupt / truncated), -E2BIG (over max),
 * -ENOMEM. */
int rvs_zstd_decompress(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *outlen);

/* The most a capture whose upload declared payload_size `declared` may
 * inflate to: declared, capped at RVS_DECODE_MAX_CAPTURE (which is also the
 * limit when nothing was declared, rows from before the declaration was
 * required).  Any thread. */
size_t rvs_inflate_limit(uint64_t declared);

/* The capture held in a stored payload of Compression comp (upload.proto):
 * COMPRESSION_ZSTD decompressed as rvs_zstd_decompress does,
 * COMPRESSION_ZSTD_SHUFFLED decompressed and taken out of its shuffled form
 * (tracer/FORMAT.md §3; its frames must declare their sizes).  *out is
 * malloc'd (caller frees).  0, -EINVAL (corrupt, truncated, not a capture's
 * shuffled form), -E2BIG (over max), -EPROTONOSUPPORT (any other comp,
 * including COMPRESSION_NONE: the payload is the capture), -ENOMEM. */
int rvs_payload_inflate(int comp, const uint8_t *in, size_t len, size_t max, uint8_t **out,
			size_t *outlen);

/* The declared capture size of a compressed payload, checked against max:
 * 0 with *total, -E2BIG, or -EINVAL when the frames do not parse or (the
 * shuffled form, which devices always size) declare nothing.  1: plain zstd
 * without declared sizes (rvs_zstd_decompress's growing buffer handles it). */
int rvs_payload_size(int comp, const uint8_t *in, size_t len, size_t max, size_t *total);

/* The capture of a payload of Compression comp (ZSTD or ZSTD_SHUFFLED) whose
 * frames declare their total size, total (rvs_payload_size), into
 * out[0..total), with the caller's zstd context dctx (reset here; its
 * buffers are reused).  Errors as rvs_payload_inflate. */
int rvs_payload_inflate_to(ZSTD_DCtx *dctx, int comp, const uint8_t *in, size_t len, uint8_t *out,
			   size_t total, size_t *outlen);

#endif
