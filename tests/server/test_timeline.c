/*
 * test_timeline.c — the trace page's timeline (web_timeline.c) on its own:
 * what it leaves out is counted in its caption (issue 18 item 2: a trace of
 * 1 M nested calls drew 48 levels and said nothing of the rest), and names
 * are shown cut, so the page is bounded whatever the names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rearview/analysis.h"
#include "web_int.h"

/* One stack of depth nested calls (folded "m0;m1;… 1000"). */
static rva_trace *nested(size_t depth)
{
	size_t cap = depth * 12 + 16, n = 0;
	char *line = malloc(cap);
	rva_trace *t = NULL;
	rva_error err = {{0}};
	assert_non_null(line);
	for (size_t i = 0; i < depth; i++)
		n += (size_t)snprintf(line + n, cap - n, "%sm%zu", i ? ";" : "", i);
	n += (size_t)snprintf(line + n, cap - n, " 1000\n");
	assert_int_equal(rva_folded_import((const uint8_t *)line, n, &t, &err), 0);
	free(line);
	return t;
}

static char *timeline(const rva_trace *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	web_timeline_svg(f, t);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* 100 nested calls: 48 levels drawn, the 52 below counted in the caption. */
static void test_timeline_100_nested_calls_says_52_below_depth_48_not_shown(void **state)
{
	rva_trace *t = nested(100);
	char *page = timeline(t);
	assert_non_null(strstr(page, "48 calls drawn"));
	assert_non_null(strstr(page, "52 calls below depth 48 not shown"));
	free(page);
	rva_trace_free(t);
}

/* A shallow trace draws every call and mentions no depth. */
static void test_timeline_shallow_trace_mentions_no_depth(void **state)
{
	rva_trace *t = nested(10);
	char *page = timeline(t);
	assert_non_null(strstr(page, "10 calls drawn"));
	assert_null(strstr(page, "below depth"));
	free(page);
	rva_trace_free(t);
}

/* Names may be 64 KiB: 20 000 rectangles each naming one twice made a
 * 2.6 GB page.  A name is shown cut to 240 bytes and then "…". */
static void test_timeline_64kib_name_shown_cut_to_240_bytes(void **state)
{
	size_t len = 64 * 1024 - 1;
	char *text = malloc(len + 16), *page;
	rva_trace *t = NULL;
	rva_error err = {{0}};
	assert_non_null(text);
	memset(text, 'a', len);
	memcpy(text + len, " 1000\n", 7);
	assert_int_equal(rva_folded_import((const uint8_t *)text, len + 6, &t, &err), 0);
	page = timeline(t);
	assert_non_null(strstr(page, "1 calls drawn"));
	assert_true(strlen(page) < 4096);
	memset(text + 241, 0, 1);
	assert_null(strstr(page, text)); /* never 241 bytes of it */
	text[240] = '\0';
	assert_non_null(strstr(page, text));
	assert_non_null(strstr(page, "…"));
	free(page);
	free(text);
	rva_trace_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeline_100_nested_calls_says_52_below_depth_48_not_shown),
		cmocka_unit_test(test_timeline_shallow_trace_mentions_no_depth),
		cmocka_unit_test(test_timeline_64kib_name_shown_cut_to_240_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
