/* SPDX-License-Identifier: Apache-2.0 */
/*
 * payload_size.h — what a device declares as an upload's payload_size
 * (upload.proto), for the server tests that build envelopes by hand.
 */
#ifndef RVS_TEST_PAYLOAD_SIZE_H
#define RVS_TEST_PAYLOAD_SIZE_H

#include <stddef.h>
#include <stdint.h>

#include <zstd.h>

#include "rearview/upload.pb-c.h"

/* The uncompressed size a device declares for payload pl[0..n) of the given
 * compression: the sum of the frames' content sizes, up to a frame cut
 * short (whose header still declares one); n when no frame declares a size. */
static inline uint64_t declared_size(const void *pl, size_t n, int compression)
{
	const uint8_t *p = pl;
	uint64_t total = 0;
	size_t left = n;
	if (compression == REARVIEW__COMPRESSION__COMPRESSION_NONE)
		return n;
	while (left) {
		unsigned long long s = ZSTD_getFrameContentSize(p, left);
		size_t fl = ZSTD_findFrameCompressedSize(p, left);
		if (s == ZSTD_CONTENTSIZE_ERROR || s == ZSTD_CONTENTSIZE_UNKNOWN)
			break;
		total += s;
		if (ZSTD_isError(fl))
			break; /* truncated: its header still declares a size */
		p += fl;
		left -= fl;
	}
	return total ? total : n;
}

#endif
