/* SPDX-License-Identifier: Apache-2.0 */
/*
 * caprec.c — inserting the daemon's records into a verified capture (see
 * caprec.h).  Invariant: the output is the input up to its CHECKSUM, the
 * new records, then a CHECKSUM over all of that and END; file_size in the
 * header is the output's length.
 */
#include "caprec.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define REC_CHECKSUM 8
#define REC_END	     0xffff
#define HDR_SIZE     128u
#define TAIL	     32u /* CHECKSUM (8 + 16) and END (8) */

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}
static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}
static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

size_t rvd_caprec_head(uint8_t *p, uint16_t type, uint32_t len)
{
	put16(p, type);
	put16(p + 2, 0);
	put32(p + 4, len);
	return 8;
}

int rvd_caprec_insert(const uint8_t *cap, size_t len, const uint8_t *recs, size_t recs_len,
		      uint8_t **out, size_t *out_len)
{
	size_t keep, off;
	uint16_t ty;
	uint32_t vl;
	uint8_t *b;

	*out = NULL;
	*out_len = 0;
	if (len < HDR_SIZE + TAIL || recs_len % 8)
		return -EINVAL;
	keep = len - TAIL;
	memcpy(&ty, cap + keep, 2);
	memcpy(&vl, cap + keep + 4, 4);
	if (ty != REC_CHECKSUM || vl != 16)
		return -EINVAL;
	memcpy(&ty, cap + len - 8, 2);
	if (ty != REC_END)
		return -EINVAL;
	b = malloc(keep + recs_len + TAIL);
	if (!b)
		return -ENOMEM;
	memcpy(b, cap, keep);
	if (recs_len)
		memcpy(b + keep, recs, recs_len);
	off = keep + recs_len;
	put64(b + 120, (uint64_t)(off + TAIL)); /* file_size, before the hash */
	off += rvd_caprec_head(b + off, REC_CHECKSUM, 16);
	put32(b + off, 1);
	put32(b + off + 4, 0);
	put64(b + off + 8, XXH3_64bits(b, off - 8));
	off += 16;
	off += rvd_caprec_head(b + off, REC_END, 0);
	assert(off == keep + recs_len + TAIL);
	*out = b;
	*out_len = off;
	return 0;
}
