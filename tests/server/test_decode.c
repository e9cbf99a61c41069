/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_decode.c — the decoder's inflate step (decode.c) on its own: zstd
 * round trip, concatenated frames, truncated, garbage, empty and over-limit
 * inputs; the shuffled form (rvs_payload_inflate with
 * COMPRESSION_ZSTD_SHUFFLED) round trip across blocks and frames, and its
 * hostile cases: lying or missing declared sizes, truncation, a form that is
 * not a capture's, an unknown compression.  Issue 18 item 2's zstd bomb:
 * inflating stops at the size the upload declared, with peak memory
 * measured in a child process, and uploads must declare that size (exports
 * are streamed: test_export.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "capbuild.h"
#include "rearview/sanitizer.h"
#include "pipeline/decode.h"
#include "rearview/analysis.h"
#include "rearview/upload.pb-c.h"
#include "pipeline/upload.h"
#include "pipeline/payload.h"

#define SHUFFLED REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED

static uint8_t *compress(const uint8_t *in, size_t n, size_t *zlen)
{
	size_t cap = ZSTD_compressBound(n);
	uint8_t *z = malloc(cap);
	*zlen = ZSTD_compress(z, cap, in, n, 1);
	assert_false(ZSTD_isError(*zlen));
	return z;
}

static uint8_t *pattern(size_t n)
{
	uint8_t *p = malloc(n);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 / 7);
	return p;
}

static void test_decode_zstd_round_trip_larger_than_first_guess_is_exact(void **state)
{
	size_t n = 3u << 20, zlen, outlen;
	uint8_t *p = pattern(n), *z = compress(p, n, &zlen), *out;

	assert_int_equal(rvs_zstd_decompress(z, zlen, 64u << 20, &out, &outlen), 0);
	assert_int_equal(outlen, n);
	assert_memory_equal(out, p, n);
	free(out);
	free(z);
	free(p);
}

static void test_decode_zstd_concatenated_frames_are_joined(void **state)
{
	size_t n = 1000, z1, z2, outlen;
	uint8_t *p = pattern(n), *a = compress(p, n, &z1), *b = compress(p, n, &z2), *out;
	uint8_t *both = malloc(z1 + z2);
	memcpy(both, a, z1);
	memcpy(both + z1, b, z2);
	assert_int_equal(rvs_zstd_decompress(both, z1 + z2, 1u << 20, &out, &outlen), 0);
	assert_int_equal(outlen, 2 * n);
	assert_memory_equal(out + n, p, n);
	free(out);
	free(both);
	free(a);
	free(b);
	free(p);
}

static void test_decode_zstd_truncated_garbage_and_empty_are_einval(void **state)
{
	size_t n = 100000, zlen, outlen;
	uint8_t *p = pattern(n), *z = compress(p, n, &zlen), *out = (uint8_t *)1;
	static const uint8_t garbage[] = "definitely not a zstd frame";

	assert_int_equal(rvs_zstd_decompress(z, zlen / 2, 1u << 20, &out, &outlen), -EINVAL);
	assert_null(out);
	assert_int_equal(rvs_zstd_decompress(garbage, sizeof garbage, 1u << 20, &out, &outlen),
			 -EINVAL);
	assert_int_equal(rvs_zstd_decompress(z, 0, 1u << 20, &out, &outlen), -EINVAL);
	free(z);
	free(p);
}

static void test_decode_zstd_over_limit_is_e2big(void **state)
{
	size_t n = 1u << 20, zlen, outlen;
	uint8_t *p = pattern(n), *z = compress(p, n, &zlen), *out = (uint8_t *)1;

	assert_int_equal(rvs_zstd_decompress(z, zlen, n - 1, &out, &outlen), -E2BIG);
	assert_null(out);
	/* Exactly at the limit is fine. */
	assert_int_equal(rvs_zstd_decompress(z, zlen, n, &out, &outlen), 0);
	assert_int_equal(outlen, n);
	free(out);
	free(z);
	free(p);
}

/* A capture of n slots (three blocks and a bit for n = 3 × 8192 + 77). */
static capbuf capture(size_t n)
{
	capbuf c = {0};
	cb_header(&c, 1ull << 40, 1000000000, 6, 5000000, 0x400000, 0);
	for (size_t i = 0; c.nslots < n; i++) {
		if (i % 2)
			cb_exit(&c, (uint32_t)(i * 41));
		else
			cb_entry(&c, 0x1000 + i % 11, (uint32_t)(i * 41));
	}
	cb_end_slots(&c);
	cb_symbol(&c, 0x1000, 0x1000, 0xffffffff, "main");
	cb_finish(&c);
	return c;
}

/* The capture's shuffled form, zstd-compressed (one frame declaring its size). */
static uint8_t *shuffled(const capbuf *c, size_t *zlen)
{
	uint8_t *form = malloc(c->len), *z;
	assert_int_equal(rva_shuffle_buf(c->b, c->len, form), 0);
	z = compress(form, c->len, zlen);
	free(form);
	return z;
}

static void test_decode_shuffled_round_trip_is_the_capture(void **state)
{
	capbuf c = capture(3 * 8192 + 77);
	size_t zlen, outlen = 0;
	uint8_t *z = shuffled(&c, &zlen), *out = NULL;
	(void)state;

	assert_int_equal(rvs_payload_inflate(SHUFFLED, z, zlen, 64u << 20, &out, &outlen), 0);
	assert_int_equal(outlen, c.len);
	assert_memory_equal(out, c.b, c.len);
	free(out);
	/* A trailing skippable frame (content size 0) changes nothing. */
	{
		uint8_t *z2 = malloc(zlen + 12);
		static const uint8_t skip[12] = {0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4};
		memcpy(z2, z, zlen);
		memcpy(z2 + zlen, skip, sizeof skip);
		assert_int_equal(
			rvs_payload_inflate(SHUFFLED, z2, zlen + 12, 64u << 20, &out, &outlen), 0);
		assert_int_equal(outlen, c.len);
		assert_memory_equal(out, c.b, c.len);
		free(out);
		free(z2);
	}
	/* The plain path still reads plain zstd. */
	{
		size_t plen;
		uint8_t *p = compress(c.b, c.len, &plen);
		assert_int_equal(rvs_payload_inflate(REARVIEW__COMPRESSION__COMPRESSION_ZSTD, p,
						     plen, 64u << 20, &out, &outlen),
				 0);
		assert_memory_equal(out, c.b, c.len);
		free(out);
		free(p);
	}
	free(z);
	free(c.b);
}

static void test_decode_shuffled_hostile_payloads_are_refused(void **state)
{
	capbuf c = capture(9000);
	size_t zlen, outlen;
	uint8_t *z = shuffled(&c, &zlen), *out = (uint8_t *)&out;
	(void)state;

	/* Truncated anywhere: corrupt. */
	for (size_t n = 0; n < zlen; n += zlen / 13 + 1)
		assert_int_equal(rvs_payload_inflate(SHUFFLED, z, n, 64u << 20, &out, &outlen),
				 -EINVAL);
	assert_null(out);
	/* Bigger than the limit: refused before any allocation. */
	assert_int_equal(rvs_payload_inflate(SHUFFLED, z, zlen, c.len - 1, &out, &outlen), -E2BIG);
	/* A frame that does not declare its size (a stream without a pledged
	 * size): the shuffled form must, so it is refused. */
	{
		ZSTD_CCtx *cc = ZSTD_createCCtx();
		uint8_t *form = malloc(c.len), *u = malloc(ZSTD_compressBound(c.len) + 64);
		ZSTD_inBuffer ib = {form, c.len, 0};
		ZSTD_outBuffer ob = {u, ZSTD_compressBound(c.len) + 64, 0};
		assert_int_equal(rva_shuffle_buf(c.b, c.len, form), 0);
		ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
		assert_int_equal(ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_end), 0);
		assert_int_equal(ZSTD_getFrameContentSize(u, ob.pos), ZSTD_CONTENTSIZE_UNKNOWN);
		assert_int_equal(rvs_payload_inflate(SHUFFLED, u, ob.pos, 64u << 20, &out, &outlen),
				 -EINVAL);
		ZSTD_freeCCtx(cc);
		free(form);
		free(u);
	}
	/* Not a capture's form: the header's slot area is outside the bytes. */
	{
		uint8_t *bad = malloc(c.len);
		size_t blen;
		memcpy(bad, c.b, c.len);
		cb_u64at(&(capbuf){.b = bad}, 96, 1u << 30);
		uint8_t *zb = compress(bad, c.len, &blen);
		assert_int_equal(rvs_payload_inflate(SHUFFLED, zb, blen, 64u << 20, &out, &outlen),
				 -EINVAL);
		free(zb);
		free(bad);
	}
	/* No compression, or one that does not exist, is not inflated. */
	assert_int_equal(rvs_payload_inflate(REARVIEW__COMPRESSION__COMPRESSION_NONE, z, zlen,
					     64u << 20, &out, &outlen),
			 -EPROTONOSUPPORT);
	assert_int_equal(rvs_payload_inflate(77, z, zlen, 64u << 20, &out, &outlen),
			 -EPROTONOSUPPORT);
	free(z);
	free(c.b);
}

/* Peak-memory bounds are for the plain build; sanitizers' shadow memory
 * and quarantine multiply what the same allocations cost. */
#if RV_MEMORY_SANITIZED
#define MEM_FACTOR 4
#else
#define MEM_FACTOR 1
#endif

/* A zstd frame of n MiB of zeros that does not declare its size (a
 * streaming compressor's output): the bomb of issue 18 item 2. */
static uint8_t *zero_bomb(size_t mib, size_t *zlen)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t cap = 1u << 20, pos = 0;
	uint8_t *z = malloc(cap), *zeros = calloc(1, 1u << 20);
	assert_non_null(cc);
	for (size_t i = 0; i <= mib; i++) {
		ZSTD_EndDirective end = i == mib ? ZSTD_e_end : ZSTD_e_continue;
		ZSTD_inBuffer in = {zeros, i == mib ? 0 : 1u << 20, 0};
		size_t r;
		do {
			ZSTD_outBuffer out = {z + pos, cap - pos, 0};
			r = ZSTD_compressStream2(cc, &out, &in, end);
			assert_false(ZSTD_isError(r));
			pos += out.pos;
			assert_true(pos < cap);
		} while (end == ZSTD_e_end ? r != 0 : in.pos < in.size);
	}
	ZSTD_freeCCtx(cc);
	free(zeros);
	*zlen = pos;
	return z;
}

/* Issue 18 item 2: a 29 KB zstd payload inflated to ~0.9 GB whatever the
 * envelope declared.  A 900 MiB bomb declared as 1 MiB now stops at 1 MiB
 * (-E2BIG); run in a child, whose peak RSS must stay under 64 MiB (it was
 * ~0.9 GB with the 1 GiB cap applied before the declared size counted). */
static void test_decode_zstd_bomb_900mib_declared_1mib_peak_rss_bounded(void **state)
{
	size_t zlen;
	uint8_t *z = zero_bomb(900, &zlen);
	struct rusage ru;
	int status;
	pid_t pid;

	assert_true(zlen < 64u << 10);
	assert_int_equal(rvs_inflate_limit(1u << 20), 1u << 20);
	assert_int_equal(rvs_inflate_limit(0), RVS_DECODE_MAX_CAPTURE);
	assert_int_equal(rvs_inflate_limit(UINT64_MAX), RVS_DECODE_MAX_CAPTURE);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint8_t *out = NULL;
		size_t outlen = 0;
		int rc = rvs_payload_inflate(REARVIEW__COMPRESSION__COMPRESSION_ZSTD, z, zlen,
					     rvs_inflate_limit(1u << 20), &out, &outlen);
		_exit(rc == -E2BIG && !out ? 0 : 1);
	}
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(ru.ru_maxrss < MEM_FACTOR * 64 * 1024); /* KiB */
	free(z);
}

/* An upload of a compressed capture must declare its inflated size, within
 * the server's limit; the one devices send (declared, 1 MiB) passes. */
static void test_decode_upload_compressed_capture_must_declare_size(void **state)
{
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT, *got;
	uint8_t id[16] = {1}, pl[8] = "zstd....", buf[256];
	uint64_t sizes[] = {0, RVS_MAX_CAPTURE_BYTES + 1, 1u << 20};
	char reason[128];
	e.upload_id.data = id;
	e.upload_id.len = 16;
	e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
	e.compression = REARVIEW__COMPRESSION__COMPRESSION_ZSTD;
	e.payload.data = pl;
	e.payload.len = sizeof pl;
	for (size_t i = 0; i < 3; i++) {
		e.payload_size = sizes[i];
		size_t n = rearview__upload_envelope__pack(&e, buf);
		int rc = rvs_upload_parse(buf, n, &got, reason, sizeof reason);
		assert_int_equal(rc, i < 2 ? -EINVAL : 0);
		if (!rc)
			rearview__upload_envelope__free_unpacked(got, NULL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_zstd_round_trip_larger_than_first_guess_is_exact),
		cmocka_unit_test(test_decode_zstd_concatenated_frames_are_joined),
		cmocka_unit_test(test_decode_zstd_truncated_garbage_and_empty_are_einval),
		cmocka_unit_test(test_decode_zstd_over_limit_is_e2big),
		cmocka_unit_test(test_decode_shuffled_round_trip_is_the_capture),
		cmocka_unit_test(test_decode_shuffled_hostile_payloads_are_refused),
		cmocka_unit_test(test_decode_zstd_bomb_900mib_declared_1mib_peak_rss_bounded),
		cmocka_unit_test(test_decode_upload_compressed_capture_must_declare_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
