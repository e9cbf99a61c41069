/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_integrity.c — the capture's CHECKSUM record (tracer/FORMAT.md §2) as
 * every librvanalysis reader sees it, on the golden example written from
 * FORMAT.md's byte tables: a whole file verifies; any flipped bit anywhere
 * before the CHECKSUM is refused with the reason; a file that lost only its
 * END record is salvaged with a warning; one that lost more is refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../tracer/golden/golden_hex.h"

#include "rearview/analysis.h"

#define GOLDEN_LEN   472u
#define CHECKSUM_OFF (GOLDEN_LEN - 32u) /* CHECKSUM record: 24 bytes, then END: 8 */

static size_t golden(uint8_t *buf)
{
	size_t n = golden_load_hex(RVT_GOLDEN_DIR "/example.rvt.hex", buf, 4096);
	assert_int_equal(n, GOLDEN_LEN);
	assert_int_equal(buf[CHECKSUM_OFF], 8); /* the CHECKSUM record's type */
	return n;
}

static void test_integrity_whole_file_verifies(void **state)
{
	(void)state;
	uint8_t b[4096];
	size_t n = golden(b);
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_capture_decode(b, n, &t, &err), 0);
	assert_int_equal(t->checksum, RVA_CHECKSUM_VERIFIED);
	assert_null(t->warning);
	assert_int_equal(t->threads[0].ncalls, 2);
	rva_trace_free(t);
}

/* Every single-bit flip in header, slots and records is caught: by the
 * checksum, or earlier by a range check — never decoded as if whole. */
static void test_integrity_any_flipped_bit_refused(void **state)
{
	(void)state;
	uint8_t b[4096];
	size_t n = golden(b);
	unsigned by_checksum = 0;
	for (size_t i = 0; i < CHECKSUM_OFF + 24; i++) {
		for (int bit = 0; bit < 8; bit++) {
			b[i] ^= (uint8_t)(1u << bit);
			rva_trace *t = (rva_trace *)1;
			rva_error err = {{0}};
			int rc = rva_capture_decode(b, n, &t, &err);
			if (rc == 0)
				fail_msg("flip of bit %d at byte %zu decoded", bit, i);
			assert_null(t);
			assert_true(err.msg[0] != '\0');
			if (rc == -EBADMSG) {
				assert_non_null(strstr(err.msg, "checksum"));
				by_checksum++;
			}
			b[i] ^= (uint8_t)(1u << bit);
		}
	}
	/* The slots and most record bytes pass every range check: only the
	 * checksum can see them. */
	assert_true(by_checksum > 8 * 200);
}

static void test_integrity_missing_end_salvaged_with_warning(void **state)
{
	(void)state;
	uint8_t b[4096];
	size_t n = golden(b);
	rva_trace *t;
	rva_error err = {{0}};
	/* Cut exactly before END, and also a few bytes into it. */
	for (size_t cut = n - 8; cut < n; cut++) {
		assert_int_equal(rva_capture_decode(b, cut, &t, &err), 0);
		assert_int_equal(t->checksum, RVA_CHECKSUM_VERIFIED);
		assert_non_null(t->warning);
		assert_non_null(strstr(t->warning, "END"));
		assert_int_equal(t->threads[0].ncalls, 2);
		rva_trace_free(t);
	}
}

static void test_integrity_cut_before_checksum_refused(void **state)
{
	(void)state;
	uint8_t b[4096];
	golden(b);
	for (size_t cut = 0; cut < CHECKSUM_OFF + 24; cut++) {
		rva_trace *t = (rva_trace *)1;
		rva_error err = {{0}};
		assert_true(rva_capture_decode(b, cut, &t, &err) < 0);
		assert_null(t);
		assert_true(err.msg[0] != '\0');
	}
}

/* A record slipped in after the CHECKSUM is not covered by it. */
static void test_integrity_record_after_checksum_refused(void **state)
{
	(void)state;
	uint8_t b[4096];
	size_t n = golden(b);
	/* Turn END into an empty EXE record followed by a new END. */
	b[n - 8] = 1;
	b[n - 7] = 0;
	static const uint8_t end[8] = {0xff, 0xff, 0, 0, 0, 0, 0, 0};
	memcpy(b + n, end, 8);
	n += 8;
	for (unsigned i = 0; i < 8; i++) /* file_size */
		b[120 + i] = (uint8_t)((uint64_t)n >> (8 * i));
	rva_trace *t = (rva_trace *)1;
	rva_error err = {{0}};
	/* file_size is covered too, so this is a checksum mismatch first. */
	assert_int_equal(rva_capture_decode(b, n, &t, &err), -EBADMSG);
	assert_null(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_integrity_whole_file_verifies),
		cmocka_unit_test(test_integrity_any_flipped_bit_refused),
		cmocka_unit_test(test_integrity_missing_end_salvaged_with_warning),
		cmocka_unit_test(test_integrity_cut_before_checksum_refused),
		cmocka_unit_test(test_integrity_record_after_checksum_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
