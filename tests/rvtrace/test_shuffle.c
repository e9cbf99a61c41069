/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_shuffle.c — the shuffled transport form (tracer/FORMAT.md §3):
 * FORMAT.md's worked example byte for byte, round trips across block
 * boundaries through every entry point (whole buffer, the file-streaming
 * shuffler, the unshuffler fed in pieces of any size), and hostile input —
 * bad headers, slot areas outside the buffer, truncation, overflow — each
 * refused with its documented error.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "../tracer/golden/golden_hex.h"

#include "capbuild.h"
#include "rearview/analysis.h"

/* tests/tracer/golden/example.rvt.hex: hex digits, whitespace and # comments. */
/* A capture of nslots slots (entries and exits of a few methods, so the
 * bytes differ slot to slot) and a symbol record after them. */
static capbuf make_capture(size_t nslots)
{
	capbuf c = {0};
	cb_header(&c, 1ull << 40, 1000000000, 6, 5000000, 0x400000, 0);
	for (size_t i = 0; c.nslots < nslots; i++) {
		if (i % 7 == 3 && nslots - c.nslots >= 2)
			cb_entry(&c, 0x100000000ull + i, (uint32_t)(i * 37));
		else if (i % 2)
			cb_exit(&c, (uint32_t)(i * 37));
		else
			cb_entry(&c, 0x1000 + i % 13, (uint32_t)(i * 37));
	}
	cb_end_slots(&c);
	cb_symbol(&c, 0x1000, 0x1000, 0xffffffff, "main");
	cb_finish(&c);
	return c;
}

/* Feeds form to an unshuffler in pieces of pseudo-random size (1 .. max)
 * and returns finish's result; the capture lands in out[0..cap). */
static int unshuffle_pieces(const uint8_t *form, size_t len, uint8_t *out, size_t cap, size_t max,
			    size_t *outlen)
{
	rva_unshuffler *u;
	uint64_t s = 0x9e3779b97f4a7c15ull ^ len ^ max;
	int rc = 0;

	assert_int_equal(rva_unshuffler_new(out, cap, &u), 0);
	for (size_t pos = 0; pos < len && !rc;) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = 1 + (size_t)(s >> 33) % max;
		if (n > len - pos)
			n = len - pos;
		rc = rva_unshuffler_write(u, form + pos, n);
		pos += n;
	}
	if (!rc)
		rc = rva_unshuffler_finish(u, outlen);
	rva_unshuffler_free(u);
	return rc;
}

/* The form read through the file-streaming shuffler in pseudo-random read
 * sizes; *len is the total read. */
static uint8_t *shuffle_via_fd(const uint8_t *cap, size_t len, size_t max)
{
	int fd = memfd_create("capture", MFD_CLOEXEC);
	uint8_t *form = malloc(len + 1);
	uint64_t s = 0x2545f4914f6cdd1dull ^ max;
	rva_shuffler *sh;
	size_t got = 0;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, cap, len), (ssize_t)len);
	assert_int_equal(rva_shuffler_new(fd, len, &sh), 0);
	for (;;) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = 1 + (size_t)(s >> 33) % max;
		ssize_t r =
			rva_shuffler_read(sh, form + got, n < len + 1 - got ? n : len + 1 - got);
		assert_true(r >= 0);
		if (r == 0)
			break;
		got += (size_t)r;
	}
	assert_int_equal(got, len);
	rva_shuffler_free(sh);
	close(fd);
	return form;
}

static void test_shuffle_format_md_example_matches_its_bytes(void **state)
{
	/* FORMAT.md §3's worked example: the five slots of §2's example, one
	 * block of m = 5, plane k = byte k of each slot. */
	static const uint8_t planes[40] = {
		0x00, 0x00, 0x01, 0x00, 0x00, /* byte 0 */
		0x12, 0xd0, 0x00, 0x00, 0x00, /* byte 1 */
		0x00, 0xaa, 0x00, 0x00, 0x00, /* byte 2 */
		0x00, 0xaa, 0x00, 0x00, 0x00, /* byte 3 */
		0xfe, 0xaa, 0x02, 0x08, 0x10, /* byte 4 */
		0xff, 0x29, 0x00, 0x00, 0x00, /* byte 5 */
		0xff, 0x00, 0x00, 0x00, 0x00, /* byte 6 */
		0xff, 0x00, 0x00, 0x00, 0x00, /* byte 7 */
	};
	uint8_t golden[4096], form[4096], back[4096];
	size_t glen = golden_load_hex(RVT_GOLDEN_DIR "/example.rvt.hex", golden, sizeof golden),
	       blen;
	(void)state;

	assert_int_equal(glen, 472);
	assert_int_equal(rva_shuffle_buf(golden, glen, form), 0);
	assert_memory_equal(form, golden, 128);
	assert_memory_equal(form + 128, planes, sizeof planes);
	assert_memory_equal(form + 168, golden + 168, glen - 168);
	assert_int_equal(unshuffle_pieces(form, glen, back, sizeof back, 7, &blen), 0);
	assert_int_equal(blen, glen);
	assert_memory_equal(back, golden, glen);
}

static void test_shuffle_round_trips_across_block_boundaries(void **state)
{
	static const size_t counts[] = {0, 1, 2, 8191, 8192, 8193, 3 * 8192 + 5};
	(void)state;

	for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
		capbuf c = make_capture(counts[i]);
		uint8_t *form = malloc(c.len), *back = malloc(c.len);
		size_t blen = 0;

		assert_int_equal(rva_shuffle_buf(c.b, c.len, form), 0);
		/* Only the slot area moved, and it did move when it has bytes
		 * that differ within a block. */
		assert_memory_equal(form, c.b, 128);
		assert_memory_equal(form + 128 + 8 * counts[i], c.b + 128 + 8 * counts[i],
				    c.len - 128 - 8 * counts[i]);
		if (counts[i] > 1)
			assert_memory_not_equal(form + 128, c.b + 128, 8 * counts[i]);
		for (size_t max = 1; max <= 1u << 20; max *= 37) {
			uint8_t *viafd = shuffle_via_fd(c.b, c.len, max);
			assert_memory_equal(viafd, form, c.len);
			free(viafd);
			memset(back, 0x5a, c.len);
			assert_int_equal(unshuffle_pieces(form, c.len, back, c.len, max, &blen), 0);
			assert_int_equal(blen, c.len);
			assert_memory_equal(back, c.b, c.len);
		}
		/* A roomier buffer than the capture is fine. */
		uint8_t *big = malloc(c.len + 4096);
		assert_int_equal(unshuffle_pieces(form, c.len, big, c.len + 4096, 4096, &blen), 0);
		assert_int_equal(blen, c.len);
		assert_memory_equal(big, c.b, c.len);
		free(big);
		free(form);
		free(back);
		free(c.b);
	}
}

static void test_shuffle_hostile_headers_are_einval(void **state)
{
	capbuf c = make_capture(100);
	uint8_t *bad = malloc(c.len), *out = malloc(c.len);
	struct {
		size_t off;
		uint64_t v;
	} cases[] = {
		{0, 0x0a0d005041435653ull}, /* magic's 'R' → 'S' */
		{104, 132},		    /* slots_offset not 8-aligned */
		{104, 120},		    /* inside the header */
		{104, 1ull << 40},	    /* beyond the file */
		{96, 100000},		    /* more slots than bytes */
		{96, (1ull << 61) + 1},	    /* 8 × count wraps around */
		{96, UINT64_MAX},	    /* likewise */
	};
	size_t blen;
	(void)state;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int fd = memfd_create("bad", MFD_CLOEXEC);
		static char sentinel;
		/* Not NULL before the call: a refused header must clear it. */
		rva_shuffler *sh = (rva_shuffler *)&sentinel;

		memcpy(bad, c.b, c.len);
		cb_u64at(&(capbuf){.b = bad}, cases[i].off, cases[i].v);
		assert_int_equal(rva_shuffle_buf(bad, c.len, out), -EINVAL);
		assert_int_equal(unshuffle_pieces(bad, c.len, out, c.len, 64, &blen), -EINVAL);
		assert_int_equal(write(fd, bad, c.len), (ssize_t)c.len);
		assert_int_equal(rva_shuffler_new(fd, c.len, &sh), -EINVAL);
		assert_null(sh);
		close(fd);
	}
	/* Shorter than a header. */
	assert_int_equal(rva_shuffle_buf(c.b, 127, out), -EINVAL);
	assert_int_equal(unshuffle_pieces(c.b, 127, out, c.len, 64, &blen), -EINVAL);
	/* A header that fits the bytes given but not the unshuffler's buffer. */
	assert_int_equal(unshuffle_pieces(c.b, c.len, out, 128 + 8 * 99, 64, &blen), -EINVAL);
	free(bad);
	free(out);
	free(c.b);
}

static void test_unshuffle_truncated_form_is_einval_complete_slots_are_not(void **state)
{
	capbuf c = make_capture(8192 + 50);
	uint8_t *form = malloc(c.len), *out = malloc(c.len);
	size_t end = 128 + 8 * (8192 + 50), blen;
	(void)state;

	assert_int_equal(rva_shuffle_buf(c.b, c.len, form), 0);
	for (size_t n = 0; n < end; n += n < 256 ? 1 : 997)
		assert_int_equal(unshuffle_pieces(form, n, out, c.len, 4096, &blen), -EINVAL);
	assert_int_equal(unshuffle_pieces(form, end - 1, out, c.len, 4096, &blen), -EINVAL);
	/* The records are not the unshuffler's business (the decoder checks
	 * them): a form cut after the slots comes out as that prefix. */
	assert_int_equal(unshuffle_pieces(form, end, out, c.len, 4096, &blen), 0);
	assert_int_equal(blen, end);
	assert_memory_equal(out, c.b, end);
	free(form);
	free(out);
	free(c.b);
}

static void test_unshuffle_more_than_capacity_is_e2big_and_sticky(void **state)
{
	capbuf c = make_capture(300);
	uint8_t *form = malloc(c.len), *out = malloc(c.len);
	rva_unshuffler *u;
	size_t blen;
	(void)state;

	assert_int_equal(rva_shuffle_buf(c.b, c.len, form), 0);
	assert_int_equal(rva_unshuffler_new(out, c.len - 1, &u), 0);
	assert_int_equal(rva_unshuffler_write(u, form, c.len - 1), 0);
	assert_int_equal(rva_unshuffler_write(u, form + c.len - 1, 1), -E2BIG);
	assert_int_equal(rva_unshuffler_write(u, form, 0), -E2BIG);
	assert_int_equal(rva_unshuffler_finish(u, &blen), -E2BIG);
	rva_unshuffler_free(u);
	rva_unshuffler_free(NULL);
	free(form);
	free(out);
	free(c.b);
}

static void test_shuffler_file_shorter_than_size_is_eio(void **state)
{
	capbuf c = make_capture(20000);
	int fd = memfd_create("short", MFD_CLOEXEC);
	uint8_t buf[65536];
	rva_shuffler *sh;
	ssize_t r;
	(void)state;

	/* The header promises 20000 slots, the file stops inside them. */
	assert_int_equal(write(fd, c.b, 128 + 8 * 10000), 128 + 8 * 10000);
	assert_int_equal(rva_shuffler_new(fd, c.len, &sh), 0);
	while ((r = rva_shuffler_read(sh, buf, sizeof buf)) > 0)
		;
	assert_int_equal(r, -EIO);
	rva_shuffler_free(sh);
	rva_shuffler_free(NULL);
	close(fd);
	free(c.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shuffle_format_md_example_matches_its_bytes),
		cmocka_unit_test(test_shuffle_round_trips_across_block_boundaries),
		cmocka_unit_test(test_shuffle_hostile_headers_are_einval),
		cmocka_unit_test(test_unshuffle_truncated_form_is_einval_complete_slots_are_not),
		cmocka_unit_test(test_unshuffle_more_than_capacity_is_e2big_and_sticky),
		cmocka_unit_test(test_shuffler_file_shorter_than_size_is_eio),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
