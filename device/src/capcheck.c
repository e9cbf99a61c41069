/* SPDX-License-Identifier: Apache-2.0 */
/*
 * capcheck.c — is this memfd a Rearview capture (capcheck.h)?  The layout
 * is tracer/FORMAT.md's: a 128-byte header, the slots, TLV records ending
 * with CHECKSUM then END.
 *
 * Invariants:
 *  - every read stays inside [buf, buf + len): each offset is compared
 *    with len before it is used, lengths are added in 64 bits;
 *  - a buffer is accepted only with a CHECKSUM record that verifies and an
 *    END record that ends exactly at len, so a file that passes is the
 *    writer's bytes, complete.
 */
#include "capcheck.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

/* xxHash from libxxhash-dev, compiled in, as librvanalysis does. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define HDR_MIN		 128u
#define FLAG_CHECKSUMMED (1u << 2)
#define REC_CHECKSUM	 8u
#define REC_END		 0xffffu
#define XXH3_64_ALGO	 1u

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static int fail(const char **why, const char *msg)
{
	*why = msg;
	return -EBADMSG;
}

int rvd_capcheck_buf(const uint8_t *buf, size_t len, const char **why)
{
	static const uint8_t magic[8] = {'R', 'V', 'C', 'A', 'P', 0, '\r', '\n'};
	uint64_t slots_off, meta_off, count, off;
	bool checked = false;

	*why = NULL;
	if (len < HDR_MIN || memcmp(buf, magic, sizeof(magic)))
		return fail(why, "not a capture (bad magic)");
	if (rd16(buf + 8) < 1 || rd16(buf + 8) > 2)
		return fail(why, "capture version not supported");
	if (rd16(buf + 10) < HDR_MIN)
		return fail(why, "capture header too short");
	if (!(rd32(buf + 12) & FLAG_CHECKSUMMED))
		return fail(why, "capture without checksum");
	slots_off = rd64(buf + 104);
	count = rd64(buf + 96);
	meta_off = rd64(buf + 112);
	if (rd64(buf + 120) != len)
		return fail(why, "capture file_size is not its size");
	if (slots_off < rd16(buf + 10) || slots_off % 8 || slots_off > len ||
	    count > (len - slots_off) / 8 || meta_off != slots_off + 8 * count)
		return fail(why, "capture geometry inconsistent");
	for (off = meta_off; off + 8 <= len;) {
		uint16_t type = rd16(buf + off);
		uint32_t vlen = rd32(buf + off + 4);
		uint64_t next = off + 8 + ((uint64_t)vlen + 7) / 8 * 8;

		if (next > len)
			return fail(why, "capture record runs past the end");
		if (type == REC_END) {
			if (!checked)
				return fail(why, "capture without checksum record");
			if (vlen || next != len)
				return fail(why, "capture END record not at the end");
			return 0;
		}
		if (checked)
			return fail(why, "capture record after the checksum");
		if (type == REC_CHECKSUM) {
			if (vlen != 16 || rd32(buf + off + 8) != XXH3_64_ALGO)
				return fail(why, "capture checksum record malformed");
			if (XXH3_64bits(buf, (size_t)off) != rd64(buf + off + 16))
				return fail(why, "capture checksum mismatch");
			checked = true;
		}
		assert(next > off);
		off = next;
	}
	return fail(why, "capture without END record");
}

int rvd_capcheck_fd(int fd, size_t len, const char **why)
{
	void *p;
	int rc;

	if (len < HDR_MIN)
		return fail(why, "not a capture (too short)");
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		*why = "cannot map the capture";
		return -errno;
	}
	rc = rvd_capcheck_buf(p, len, why);
	munmap(p, len);
	return rc;
}
