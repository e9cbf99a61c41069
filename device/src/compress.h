/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compress.h — the uploader's streaming compression: a capture file (or its
 * shuffled form, tracer/FORMAT.md §3) through zstd, one 64 KiB block in
 * memory at a time, straight into the body of an UploadEnvelope.
 *
 * Pure functions of their arguments; any thread (the uploader runs them on
 * the work queue).
 */
#ifndef RVD_COMPRESS_H
#define RVD_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "rearview/analysis.h"
#include "rearview/upload.pb-c.h"

/*
 * Appends the zstd-compressed file to *z (from *zlen, growing *zcap with
 * realloc; the caller frees *z): its shuffled form read through `sh`, or
 * with `sh` NULL the bytes of `fd` as they are, at zstd `level`.  `size` is
 * the file's size (pledged to zstd; a file that turns out another size is
 * -EIO).  Returns the uncompressed byte count, or a negative errno
 * (-ENOMEM, -EIO, a read error).
 */
int64_t rvd_compress_file(int fd, rva_shuffler *sh, int level, uint64_t size, uint8_t **z,
			  size_t *zlen, size_t *zcap);

/*
 * Packs envelope `e` (payload still empty, every other field set) with the
 * compressed file (as rvd_compress_file) as its payload field, into one
 * buffer: *mem (taken by the caller, freed with free) holds the message at
 * *body, *len bytes.  The compressed bytes are written once, after a gap
 * the envelope's other fields and the payload's tag and length are then
 * packed into — so the payload exists once, and the uncompressed capture
 * never in memory.  Field order does not matter to protobuf parsers.
 * Returns 0, or a negative errno (nothing to free).
 */
int rvd_compress_envelope(const Rearview__UploadEnvelope *e, int fd, rva_shuffler *sh, int level,
			  uint64_t size, uint8_t **mem, uint8_t **body, size_t *len);

#endif
