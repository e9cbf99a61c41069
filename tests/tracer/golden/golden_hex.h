/* SPDX-License-Identifier: Apache-2.0 */
/*
 * golden_hex.h — reads a golden file of hex bytes (tests/tracer/golden/NAME.hex:
 * "#" comment lines, then bytes as two hex digits separated by spaces) for
 * the tests that hold the writer and the readers to FORMAT.md's worked
 * example.  Include after <cmocka.h>; fails the test on a missing file or a
 * file larger than `cap`.
 */
#ifndef RV_TESTS_GOLDEN_HEX_H
#define RV_TESTS_GOLDEN_HEX_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The bytes of `path` into out[0..cap); returns how many. */
static inline size_t golden_load_hex(const char *path, uint8_t *out, size_t cap)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[256];
	size_t n = 0;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		char *p = line, *end;
		for (;;) {
			unsigned long v = strtoul(p, &end, 16);
			if (end == p)
				break;
			assert_true(v <= 0xff && n < cap);
			out[n++] = (uint8_t)v;
			p = end;
		}
	}
	fclose(f);
	return n;
}

#endif
