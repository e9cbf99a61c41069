/*
 * test_server.c — allocation-failure tests for rearview-server's parsers
 * that work as units: the configuration file (server/src/config.c) and the
 * HTTP request parser (server/src/http.c, fed a pipelined POST with a body
 * and a chunked POST).  A failing allocation must give -ENOMEM from the
 * config loader (not "cannot read"), and make the HTTP parser stop with
 * status 503 (not a 4xx that blames the client); no crash, no leak.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rvs.h"
#include "torture.h"

static const char conf[] = "[server]\n"
			   "data_dir = /var/lib/rv-torture\n"
			   "listen = 127.0.0.1:18443\n"
			   "tls_cert = server.crt\n"
			   "max_body_bytes = 1048576\n"
			   "upload_rate_per_min = 30\n";

static int run_config(void *arg)
{
	struct rvs_config c;
	char err[256];
	int rc = rvs_config_load(arg, &c, err, sizeof(err));

	if (rc == 0) {
		assert_int_equal(c.listen_port, 18443);
		assert_string_equal(c.tls_cert, "/var/lib/rv-torture/server.crt");
	}
	return rc;
}

static void test_server_config_load_each_alloc_failing_fails_cleanly(void **state)
{
	char path[] = "/tmp/rv-torture-conf-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, conf, sizeof(conf) - 1), (ssize_t)(sizeof(conf) - 1));
	close(fd);
	assert_int_equal(run_config(path), 0);
	assert_true(torture_run(run_config, path, -ENOMEM) > 0);
	unlink(path);
}

static const char requests[] = "POST /v1/uploads HTTP/1.1\r\nHost: a\r\n"
			       "Authorization: Bearer abcdefghijklmnop\r\n"
			       "Content-Length: 5\r\n\r\nhello"
			       "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
			       "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";

/* Both requests, fed in 9-byte pieces; -ENOMEM stands for "stopped with
 * 503", any other status is returned as -EPROTO. */
static int run_http(void *arg)
{
	struct rvs_http h;
	size_t off = 0, len = sizeof(requests) - 1;
	int done = 0, rc = 0;

	rvs_http_init(&h, 4096, 1 << 20);
	while (off < len && rc == 0) {
		size_t piece = len - off < 9 ? len - off : 9;
		ssize_t n = rvs_http_feed(&h, requests + off, piece);

		if (n < 0) {
			rc = h.status == 503 ? -ENOMEM : (int)n;
			break;
		}
		off += (size_t)n;
		if (h.complete) {
			assert_int_equal(h.req.body_len, 5);
			done++;
			rvs_http_next(&h);
		}
	}
	rvs_http_release(&h);
	if (rc == 0)
		assert_int_equal(done, 2);
	return rc;
}

static void test_server_http_each_alloc_failing_fails_cleanly(void **state)
{
	assert_int_equal(run_http(NULL), 0);
	assert_true(torture_run(run_http, NULL, -ENOMEM) > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_config_load_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_server_http_each_alloc_failing_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
