/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_json.c — the JSON string escaper (proto/common/src/json.c): quotes,
 * backslashes and control characters escaped, everything else (UTF-8, valid
 * or not, DEL) copied byte for byte, NULL as "".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rearview/common.h"

/* The escaper's output for s, NUL-terminated; caller frees. */
static char *escaped(const char *s)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	rvc_json_str(f, s);
	assert_int_equal(fclose(f), 0);
	return out;
}

static void expect(const char *in, const char *want)
{
	char *got = escaped(in);

	assert_string_equal(got, want);
	free(got);
}

static void test_json_plain_text_is_quoted_unchanged(void **state)
{
	expect("", "\"\"");
	expect("main::loop()", "\"main::loop()\"");
}

static void test_json_quote_and_backslash_are_escaped(void **state)
{
	expect("a\"b\\c", "\"a\\\"b\\\\c\"");
}

static void test_json_control_chars_become_u00xx(void **state)
{
	expect("\x01\t\n\r\x1f", "\"\\u0001\\u0009\\u000a\\u000d\\u001f\"");
}

static void test_json_utf8_and_invalid_bytes_pass_through(void **state)
{
	/* é (valid), a lone continuation byte, a truncated sequence, DEL. */
	expect("\xc3\xa9|\x80|\xe2\x82|\x7f", "\"\xc3\xa9|\x80|\xe2\x82|\x7f\"");
}

static void test_json_null_writes_empty_string(void **state)
{
	expect(NULL, "\"\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_plain_text_is_quoted_unchanged),
		cmocka_unit_test(test_json_quote_and_backslash_are_escaped),
		cmocka_unit_test(test_json_control_chars_become_u00xx),
		cmocka_unit_test(test_json_utf8_and_invalid_bytes_pass_through),
		cmocka_unit_test(test_json_null_writes_empty_string),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
