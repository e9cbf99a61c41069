/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log.c — the services' one log line (proto/common/src/log.c,
 * rvc_log): logfmt, the event's fields before msg="…", which is always
 * last and escaped onto one line; a prefix before it all; an overlong line
 * cut to RVC_LOG_LINE with its end intact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rearview/common.h"

/* rvc_log's line for these arguments, read back through a pipe; out holds
 * 2 * RVC_LOG_LINE bytes.  Returns the line's length. */
static size_t line_of(const char *prefix, const char *fields, const char *msg, char *out)
{
	int p[2], saved = dup(STDERR_FILENO);
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	assert_true(saved >= 0 && dup2(p[1], STDERR_FILENO) == STDERR_FILENO);
	rvc_log("info", prefix, fields, msg);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	close(p[1]);
	n = read(p[0], out, 2 * RVC_LOG_LINE - 1);
	close(p[0]);
	assert_true(n > 0);
	out[n] = '\0';
	return (size_t)n;
}

static void test_log_line_is_logfmt_with_msg_last(void **state)
{
	char *out = malloc(2 * RVC_LOG_LINE), *big = malloc(3 * RVC_LOG_LINE);
	const char *ts;
	size_t n;

	(void)state;
	assert_true(out && big);
	/* The fields come before msg, which ends the line. */
	n = line_of(NULL, "trace=t-1 err=0", "decoded", out);
	assert_int_equal(strncmp(out, "ts=", 3), 0);
	ts = out + 3; /* 2026-11-24T10:27:45.123Z */
	assert_true(ts[4] == '-' && ts[10] == 'T' && ts[19] == '.' && ts[23] == 'Z');
	assert_string_equal(ts + 24, " level=info trace=t-1 err=0 msg=\"decoded\"\n");
	assert_int_equal(n, strlen(out));
	/* No fields: msg right after the level; a prefix before it all. */
	line_of("<3>", NULL, "to the journal", out);
	assert_int_equal(strncmp(out, "<3>ts=", 6), 0);
	assert_string_equal(strstr(out, " level="), " level=info msg=\"to the journal\"\n");
	/* The message is escaped onto one line. */
	line_of(NULL, "", "a \"q\" b\\c\nd\x01", out);
	assert_string_equal(strstr(out, " msg="), " msg=\"a \\\"q\\\" b\\\\c\\nd\\x01\"\n");
	/* Overlong fields and message: cut, still one closed line. */
	memset(big, 'x', 3 * RVC_LOG_LINE - 1);
	big[3 * RVC_LOG_LINE - 1] = '\0';
	n = line_of(NULL, big, big, out);
	assert_true(n <= RVC_LOG_LINE);
	assert_non_null(strstr(out, " msg=\"x"));
	assert_string_equal(out + n - 2, "\"\n");
	assert_ptr_equal(strchr(out, '\n'), out + n - 1);
	free(big);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_log_line_is_logfmt_with_msg_last)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
