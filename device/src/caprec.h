/* SPDX-License-Identifier: Apache-2.0 */
/*
 * caprec.h — records the daemon adds to a verified capture (OFFCPU,
 * THREAD_COUNTERS, FRAMES of tracer/FORMAT.md): inserted before a new
 * CHECKSUM and END, file_size updated.  Pure byte work, any thread.
 */
#ifndef RVD_CAPREC_H
#define RVD_CAPREC_H

#include <stddef.h>
#include <stdint.h>

/* Writes a record header (type, flags 0, value length) at p; returns 8. */
size_t rvd_caprec_head(uint8_t *p, uint16_t type, uint32_t len);

/*
 * Builds a copy of capture `cap` (`len` bytes, checked by capcheck: its last
 * records are CHECKSUM and END) with `recs` (`recs_len` bytes of whole,
 * 8-aligned records) inserted before a new CHECKSUM (XXH3 over everything
 * before it) and END; file_size in the header is updated.  Returns 0 with
 * *out (malloc'd, caller frees) and *out_len, -EINVAL when `cap` does not
 * end with CHECKSUM and END or recs_len is not a multiple of 8, or -ENOMEM.
 */
int rvd_caprec_insert(const uint8_t *cap, size_t len, const uint8_t *recs, size_t recs_len,
		      uint8_t **out, size_t *out_len);

#endif
