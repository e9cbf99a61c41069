/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shuffle.c — the shuffled transport form of a capture (tracer/FORMAT.md §3):
 * the capture's bytes with its slot area transposed block by block, so that
 * byte k of every slot of a block stands together.  A slot's high bytes (the
 * timestamp's top) and its method value's top bytes barely change from one
 * slot to the next, so zstd finds long runs in the planes where the
 * interleaved slots gave it only short matches: a 32 MiB ring compresses
 * several times smaller and decompresses several times faster.
 *
 * Invariants: the form has exactly the capture's length; only the slot area
 * [slots_offset, slots_offset + 8 × slot_count) moves, and each block of
 * RVA_SHUFFLE_BLOCK slots stays within its own bytes (the last block may be
 * shorter); both directions hold one block (64 KiB) at a time, whatever the
 * capture's size, so a daemon can stream a spooled capture through zstd and
 * a server can stream zstd's output into its capture buffer.  Everything in
 * the header is untrusted on the way in: the unshuffler checks the slot
 * geometry against its buffer before it writes a byte of the slot area.
 *
 * The block loops are written so that gcc vectorizes them (the object is
 * built with -O3, tracer/analysis.mk).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"
#include "rearview/common.h"

#define HDR   128u
#define BLK   RVA_SHUFFLE_BLOCK
#define BLK_B (8u * RVA_SHUFFLE_BLOCK)

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The slot area of a capture of at most total bytes whose first 128 bytes
 * are hdr: -EINVAL unless the magic is right and the area lies in it. */
static int layout(const uint8_t *hdr, uint64_t total, uint64_t *soff, uint64_t *count)
{
	static const uint8_t magic[8] = {'R', 'V', 'C', 'A', 'P', 0, '\r', '\n'};

	if (total < HDR || memcmp(hdr, magic, sizeof magic) != 0)
		return -EINVAL;
	*count = rd64(hdr + 96);
	*soff = rd64(hdr + 104);
	if (*soff % 8 || *soff < HDR || *soff > total || *count > (total - *soff) / 8)
		return -EINVAL;
	return 0;
}

/* Block j of a slot area of count slots holds this many slots. */
static size_t block_slots(uint64_t count, uint64_t j)
{
	uint64_t left = count - j * BLK;
	return left < BLK ? (size_t)left : BLK;
}

/* out[k·m + i] = slots[8·i + k] for the m slots of one block. */
static void shuffle_block(const uint8_t *restrict slots, uint8_t *restrict out, size_t m)
{
	for (size_t i = 0; i < m; i++) {
		uint64_t v;
		memcpy(&v, slots + 8 * i, 8);
		for (size_t k = 0; k < 8; k++)
			out[k * m + i] = (uint8_t)(v >> (8 * k));
	}
}

/* The inverse: slots[8·i + k] = in[k·m + i]. */
static void unshuffle_block(const uint8_t *restrict in, uint8_t *restrict slots, size_t m)
{
	for (size_t i = 0; i < m; i++) {
		uint64_t v = 0;
		for (size_t k = 0; k < 8; k++)
			v |= (uint64_t)in[k * m + i] << (8 * k);
		memcpy(slots + 8 * i, &v, 8);
	}
}

int rva_shuffle_buf(const uint8_t *cap, size_t len, uint8_t *out)
{
	uint64_t soff, count;

	if (layout(cap, len, &soff, &count))
		return -EINVAL;
	memcpy(out, cap, (size_t)soff);
	for (uint64_t j = 0; j * BLK < count; j++)
		shuffle_block(cap + soff + j * BLK_B, out + soff + j * BLK_B,
			      block_slots(count, j));
	memcpy(out + soff + 8 * count, cap + soff + 8 * count, (size_t)(len - soff - 8 * count));
	return 0;
}

/* ---- streaming from a file ---- */

struct rva_shuffler {
	int fd;
	uint64_t size;	    /* the capture's (and the form's) length */
	uint64_t pos;	    /* bytes of the form handed out */
	uint64_t soff, end; /* the slot area [soff, end) */
	uint64_t count;
	size_t blen, bpos; /* the current block: bytes in blk, bytes handed out */
	uint8_t in[BLK_B];
	uint8_t blk[BLK_B];
};

int rva_shuffler_new(int fd, uint64_t size, rva_shuffler **out)
{
	uint8_t hdr[HDR];
	rva_shuffler *s;
	int rc;

	*out = NULL;
	if (size < HDR)
		return -EINVAL;
	if ((rc = rvc_pread_all(fd, hdr, HDR, 0)))
		return rc;
	if (!(s = malloc(sizeof *s)))
		return -ENOMEM;
	s->fd = fd;
	s->size = size;
	s->pos = 0;
	s->blen = s->bpos = 0;
	if (layout(hdr, size, &s->soff, &s->count)) {
		free(s);
		return -EINVAL;
	}
	s->end = s->soff + 8 * s->count;
	*out = s;
	return 0;
}

ssize_t rva_shuffler_read(rva_shuffler *s, uint8_t *buf, size_t n)
{
	size_t take;
	int rc;

	if (s->pos == s->size || n == 0)
		return 0;
	if (s->pos < s->soff || s->pos >= s->end) { /* header, records: as they are */
		uint64_t stop = s->pos < s->soff ? s->soff : s->size;
		take = stop - s->pos < n ? (size_t)(stop - s->pos) : n;
		if ((rc = rvc_pread_all(s->fd, buf, take, s->pos)))
			return rc;
	} else {
		if (s->bpos == s->blen) { /* the next block */
			uint64_t j = (s->pos - s->soff) / BLK_B;
			size_t m = block_slots(s->count, j);
			if ((rc = rvc_pread_all(s->fd, s->in, 8 * m, s->pos)))
				return rc;
			shuffle_block(s->in, s->blk, m);
			s->blen = 8 * m;
			s->bpos = 0;
		}
		take = s->blen - s->bpos < n ? s->blen - s->bpos : n;
		memcpy(buf, s->blk + s->bpos, take);
		s->bpos += take;
	}
	s->pos += take;
	return (ssize_t)take;
}

void rva_shuffler_free(rva_shuffler *s)
{
	free(s);
}

/* ---- streaming into a buffer ---- */

struct rva_unshuffler {
	uint8_t *out; /* borrowed: the caller's capture buffer */
	size_t cap;
	uint64_t pos; /* bytes of the form taken (= written to out, blocks aside) */
	int known;    /* the header has been read: soff, end, count are valid */
	uint64_t soff, end, count;
	int err; /* sticky */
	uint8_t blk[BLK_B];
};

int rva_unshuffler_new(uint8_t *out, size_t cap, rva_unshuffler **u)
{
	if (!(*u = malloc(sizeof **u)))
		return -ENOMEM;
	(*u)->out = out;
	(*u)->cap = cap;
	(*u)->pos = 0;
	(*u)->known = 0;
	(*u)->err = 0;
	return 0;
}

int rva_unshuffler_write(rva_unshuffler *u, const uint8_t *p, size_t n)
{
	if (u->err)
		return u->err;
	if (n > u->cap - u->pos)
		return u->err = -E2BIG;
	while (n) {
		size_t take;

		if (!u->known) {
			take = HDR - u->pos < n ? (size_t)(HDR - u->pos) : n;
			memcpy(u->out + u->pos, p, take);
			if (u->pos + take == HDR) {
				if (layout(u->out, u->cap, &u->soff, &u->count))
					return u->err = -EINVAL;
				u->end = u->soff + 8 * u->count;
				u->known = 1;
			}
		} else if (u->pos < u->soff || u->pos >= u->end) {
			uint64_t stop = u->pos < u->soff ? u->soff : u->cap;
			take = stop - u->pos < n ? (size_t)(stop - u->pos) : n;
			memcpy(u->out + u->pos, p, take);
		} else {
			uint64_t j = (u->pos - u->soff) / BLK_B, bs = u->soff + j * BLK_B;
			size_t m = block_slots(u->count, j), off = (size_t)(u->pos - bs);
			take = 8 * m - off < n ? 8 * m - off : n;
			memcpy(u->blk + off, p, take);
			if (off + take == 8 * m)
				unshuffle_block(u->blk, u->out + bs, m);
		}
		p += take;
		n -= take;
		u->pos += take;
	}
	return 0;
}

int rva_unshuffler_finish(rva_unshuffler *u, size_t *len)
{
	if (u->err)
		return u->err;
	if (!u->known || u->pos < u->end)
		return -EINVAL; /* ended inside the header or the slots */
	*len = (size_t)u->pos;
	return 0;
}

void rva_unshuffler_free(rva_unshuffler *u)
{
	free(u);
}
