/*
 * test_decode.c — the decoder's zstd step (decode.c) on its own: round trip,
 * concatenated frames, truncated, garbage, empty and over-limit inputs.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "decode.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_zstd_round_trip_larger_than_first_guess_is_exact),
		cmocka_unit_test(test_decode_zstd_concatenated_frames_are_joined),
		cmocka_unit_test(test_decode_zstd_truncated_garbage_and_empty_are_einval),
		cmocka_unit_test(test_decode_zstd_over_limit_is_e2big),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
