/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capbuild_ck.h — capbuild.h's captures closed with a CHECKSUM record, as
 * every writer closes them (tracer/FORMAT.md).  Apart from capbuild.h so
 * that only the tests that need it compile xxhash inline.  Header-only,
 * test use.
 */
#ifndef RVTRACE_CAPBUILD_CK_H
#define RVTRACE_CAPBUILD_CK_H

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "capbuild.h"

/* Closes the capture as every writer does: a CHECKSUM record (algorithm 1,
 * the XXH3-64 of every byte before it, the header's final length
 * included), then END. */
static inline void cb_finish_checksummed(capbuf *c)
{
	uint8_t ck[16] = {1, 0, 0, 0, 0, 0, 0, 0};
	uint64_t h;

	cb_u64at(c, 120, c->len + 8 + sizeof ck + 8);
	h = XXH3_64bits(c->b, c->len);
	memcpy(ck + 8, &h, 8);
	cb_record(c, 8, ck, sizeof ck);
	cb_finish(c);
}

#endif
