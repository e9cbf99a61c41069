/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_http.c — the HTTP request parser (server/src/http.c) without a
 * network: keep-alive pipelining, byte-at-a-time input, limits, hostile
 * framing.
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

#include "rvs.h"

static void test_http_pipelined_requests_come_one_at_a_time(void **state)
{
	static const char in[] = "POST /v1/uploads?x=../../etc HTTP/1.1\r\nHost: a\r\n"
				 "Authorization: Bearer abcdefghijklmnop\r\n"
				 "Expect: 100-continue\r\n"
				 "Content-Length: 5\r\n\r\nhello"
				 "GET /v1/policy HTTP/1.1\r\nIf-None-Match: \"e1\"\r\n\r\n";
	struct rvs_http h;
	ssize_t n;
	size_t off = 0;

	rvs_http_init(&h, 4096, 1024);
	n = rvs_http_feed(&h, in, sizeof in - 1);
	assert_true(n > 0);
	assert_true(h.complete);
	assert_int_equal(h.req.method, HTTP_POST);
	assert_string_equal(h.req.path, "/v1/uploads");
	assert_string_equal(h.req.auth, "Bearer abcdefghijklmnop");
	assert_int_equal(h.req.body_len, 5);
	assert_memory_equal(h.req.body, "hello", 5);
	assert_true(h.req.keep_alive);
	assert_true(h.req.expect_continue);
	off += (size_t)n;
	rvs_http_next(&h);
	n = rvs_http_feed(&h, in + off, sizeof in - 1 - off);
	assert_int_equal((size_t)n, sizeof in - 1 - off);
	assert_true(h.complete);
	assert_int_equal(h.req.method, HTTP_GET);
	assert_string_equal(h.req.path, "/v1/policy");
	assert_string_equal(h.req.inm, "\"e1\"");
	assert_string_equal(h.req.auth, "");
	assert_false(h.req.expect_continue);
	rvs_http_release(&h);
}

static void test_http_byte_at_a_time_equals_whole(void **state)
{
	static const char in[] = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
				 "Authorization: Bearer 0123456789abcdef\r\n\r\n"
				 "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
	struct rvs_http h;
	rvs_http_init(&h, 4096, 1024);
	for (size_t i = 0; i < sizeof in - 1; i++) {
		assert_false(h.complete);
		assert_int_equal(rvs_http_feed(&h, in + i, 1), 1);
	}
	assert_true(h.complete);
	assert_int_equal(h.req.body_len, 5);
	assert_memory_equal(h.req.body, "abcde", 5);
	assert_string_equal(h.req.auth, "Bearer 0123456789abcdef");
	rvs_http_release(&h);
}

static void test_http_content_length_over_limit_is_413_before_body(void **state)
{
	static const char in[] = "POST /v1/uploads HTTP/1.1\r\nContent-Length: 1025\r\n\r\n";
	struct rvs_http h;
	rvs_http_init(&h, 4096, 1024);
	assert_int_equal(rvs_http_feed(&h, in, sizeof in - 1), -EPROTO);
	assert_int_equal(h.status, 413);
	assert_null(h.req.body);
	rvs_http_release(&h);
}

static void test_http_chunked_body_over_limit_is_413(void **state)
{
	struct rvs_http h;
	char chunk[600];
	static const char head[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
	ssize_t rc = 0;

	rvs_http_init(&h, 4096, 1024);
	assert_int_equal(rvs_http_feed(&h, head, sizeof head - 1), (ssize_t)(sizeof head - 1));
	memset(chunk, 'a', sizeof chunk);
	memcpy(chunk, "200\r\n", 5); /* 512-byte chunks */
	for (int i = 0; i < 4 && rc >= 0; i++) {
		rc = rvs_http_feed(&h, chunk, 5 + 512);
		if (rc >= 0)
			rc = rvs_http_feed(&h, "\r\n", 2);
	}
	assert_int_equal(rc, -EPROTO);
	assert_int_equal(h.status, 413);
	rvs_http_release(&h);
}

static void test_http_headers_over_limit_are_431(void **state)
{
	struct rvs_http h;
	char line[300];
	ssize_t rc = 0;
	rvs_http_init(&h, 1024, 1024);
	assert_true(rvs_http_feed(&h, "GET / HTTP/1.1\r\n", 16) == 16);
	memset(line, 'a', sizeof line);
	memcpy(line, "X-A: ", 5);
	memcpy(line + sizeof line - 2, "\r\n", 2);
	for (int i = 0; i < 10 && rc >= 0; i++)
		rc = rvs_http_feed(&h, line, sizeof line);
	assert_int_equal(rc, -EPROTO);
	assert_int_equal(h.status, 431);
	rvs_http_release(&h);
}

static void test_http_garbage_is_400_and_sticky(void **state)
{
	struct rvs_http h;
	rvs_http_init(&h, 1024, 1024);
	assert_int_equal(rvs_http_feed(&h, "\x16\x03\x01\x02\x00", 5), -EPROTO);
	assert_int_equal(h.status, 400);
	assert_int_equal(rvs_http_feed(&h, "GET / HTTP/1.1\r\n\r\n", 18), -EPROTO);
	rvs_http_release(&h);
}

static void test_http_upgrade_is_refused(void **state)
{
	static const char in[] = "GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
	struct rvs_http h;
	rvs_http_init(&h, 1024, 1024);
	assert_int_equal(rvs_http_feed(&h, in, sizeof in - 1), -EPROTO);
	assert_int_equal(h.status, 501);
	rvs_http_release(&h);
}

static void test_http_connection_close_clears_keep_alive(void **state)
{
	static const char in[] = "GET / HTTP/1.1\r\nConnection: close\r\n\r\n";
	struct rvs_http h;
	rvs_http_init(&h, 1024, 1024);
	assert_int_equal(rvs_http_feed(&h, in, sizeof in - 1), (ssize_t)(sizeof in - 1));
	assert_true(h.complete);
	assert_false(h.req.keep_alive);
	rvs_http_release(&h);
}

/* Request smuggling shapes: the parser library must refuse them. */
static void test_http_smuggling_framing_is_400(void **state)
{
	static const char *const bad[] = {
		("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
		 "0\r\n\r\n"),
		"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
		"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n bad-fold\r\nX\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct rvs_http h;
		ssize_t rc;
		rvs_http_init(&h, 4096, 1024);
		rc = rvs_http_feed(&h, bad[i], strlen(bad[i]));
		assert_int_equal(rc, -EPROTO);
		assert_int_equal(h.status, 400);
		assert_false(h.complete);
		rvs_http_release(&h);
	}
}

/* Issue 18 item 13: what http-parser accepts but a strict server must not.
 * Each is fed whole and byte by byte (the fold can straddle two reads). */
static void test_http_legacy_and_ambiguous_framing_is_refused(void **state)
{
	static const struct {
		const char *in;
		int status;
	} bad[] = {
		{"GET /metrics\r\n\r\n", 505}, /* HTTP/0.9: no version */
		{"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n\tfolded\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nX-A: b\r\n  folded\r\nHost: a\r\n\r\n", 400},
		{"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
		{"POST / HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n", 501},
		{"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
		 "\r\n0\r\n\r\n",
		 501},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		for (int bytewise = 0; bytewise < 2; bytewise++) {
			struct rvs_http h;
			size_t len = strlen(bad[i].in);
			ssize_t rc = 0;
			rvs_http_init(&h, 4096, 1024);
			if (bytewise)
				for (size_t k = 0; k < len && rc >= 0; k++)
					rc = rvs_http_feed(&h, bad[i].in + k, 1);
			else
				rc = rvs_http_feed(&h, bad[i].in, len);
			assert_int_equal(rc, -EPROTO);
			assert_int_equal(h.status, bad[i].status);
			assert_false(h.complete);
			rvs_http_release(&h);
		}
	}
	/* Controls: exactly `chunked` (any case), and a body that begins with
	 * a space after the headers, are fine. */
	static const char *const good[] = {
		"POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\n ab\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n\t b",
		"\r\nGET / HTTP/1.0\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		struct rvs_http h;
		rvs_http_init(&h, 4096, 1024);
		assert_true(rvs_http_feed(&h, good[i], strlen(good[i])) > 0);
		assert_true(h.complete);
		rvs_http_release(&h);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_pipelined_requests_come_one_at_a_time),
		cmocka_unit_test(test_http_byte_at_a_time_equals_whole),
		cmocka_unit_test(test_http_content_length_over_limit_is_413_before_body),
		cmocka_unit_test(test_http_chunked_body_over_limit_is_413),
		cmocka_unit_test(test_http_headers_over_limit_are_431),
		cmocka_unit_test(test_http_garbage_is_400_and_sticky),
		cmocka_unit_test(test_http_upgrade_is_refused),
		cmocka_unit_test(test_http_connection_close_clears_keep_alive),
		cmocka_unit_test(test_http_smuggling_framing_is_400),
		cmocka_unit_test(test_http_legacy_and_ambiguous_framing_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
