/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_runtime.c — the runtime-integration calls of trace.h (runtime.c):
 * keys from rvt_key_new() are distinct, never reused and named by
 * rvt_key_resolve() in a capture; rvt_exit_n() closes that many frames;
 * rvt_thread_active() (trace-runtime.h) follows rvt_start() / rvt_stop(), and
 * the inlined trace points write the same events as the calls; a new key
 * is not muted (rvt_key_muted(); muting one is tests/tracer/test_rvlua.sh's).
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

#include "capture_util.h"
#include "rearview/trace-runtime.h"
#include "rearview/trace.h"

static void capture_self(struct cu_capture *c)
{
	uint64_t size = 0;
	int fd = rvt_capture_to_memfd(0, &size);
	assert_true(fd >= 0);
	assert_int_equal(cu_parse_fd(fd, c), 0);
	close(fd);
}

static void test_runtime_keys_distinct_and_named(void **state)
{
	(void)state;
	enum { N = 3000 }; /* more than one block of keys */
	const void **keys = calloc(N, sizeof(*keys));
	assert_non_null(keys);
	char name[64], buf[64];
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "@t.lua:%d:f", i);
		keys[i] = rvt_key_new(name);
		assert_non_null(keys[i]);
		assert_true(i == 0 || keys[i] != keys[i - 1]);
	}
	for (int i = 0; i < N; i += 97) {
		snprintf(name, sizeof(name), "@t.lua:%d:f", i);
		assert_int_equal(rvt_key_resolve(keys[i], buf, sizeof(buf), NULL), 0);
		assert_string_equal(buf, name);
	}
	free(keys);
}

static void test_runtime_key_resolve_other_values_enoent(void **state)
{
	(void)state;
	char buf[32];
	int local = 0;
	const char *k = rvt_key_new("x");
	assert_non_null(k);
	assert_int_equal(rvt_key_resolve(&local, buf, sizeof(buf), NULL), -ENOENT);
	assert_int_equal(
		rvt_key_resolve((const void *)(uintptr_t)capture_self, buf, sizeof(buf), NULL),
		-ENOENT);
	assert_int_equal(rvt_key_resolve(k + 1, buf, sizeof(buf), NULL), -ENOENT);
}

static void test_runtime_new_key_not_muted(void **state)
{
	(void)state;
	for (int i = 0; i < 2000; i++) {
		const void *k = rvt_key_new("@m.lua:1:f");
		assert_non_null(k);
		assert_int_equal(rvt_key_muted(k), 0);
	}
}

static void test_runtime_key_resolve_small_buffer_truncates(void **state)
{
	(void)state;
	char buf[5];
	const void *k = rvt_key_new("@long.lua:12:name");
	assert_int_equal(rvt_key_resolve(k, buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, "@lon");
}

static void test_runtime_exit_n_closes_frames_and_keys_named_in_capture(void **state)
{
	(void)state;
	const void *outer = rvt_key_new("@rt.lua:1:outer");
	const void *mid = rvt_key_new("@rt.lua:5:mid");
	const void *inner = rvt_key_new("@rt.lua:9:inner");
	const void *next = rvt_key_new("@rt.lua:13:next");
	rvt_set_resolver(rvt_key_resolve, NULL);
	assert_false(rvt_thread_active());
	assert_int_equal(rvt_start(0), 0);
	assert_true(rvt_thread_active());
	rvt_enter(outer);
	rvt_enter(mid);
	rvt_enter(inner);
	rvt_exit_n(2); /* an error unwinds inner and mid */
	rvt_enter_inline(next);
	rvt_exit_inline();
	rvt_exit();
	rvt_exit_n(0);
	assert_int_equal(rvt_stop(0, 0), 0);
	assert_false(rvt_thread_active());
	struct cu_capture c;
	capture_self(&c);
	long a = cu_find_entry(&c, "@rt.lua:1:outer", 0);
	assert_true(a >= 0);
	assert_int_equal(cu_find_entry(&c, "@rt.lua:5:mid", (size_t)a), a + 1);
	assert_int_equal(cu_find_entry(&c, "@rt.lua:9:inner", (size_t)a), a + 2);
	assert_int_equal(cu_find_entry(&c, "@rt.lua:13:next", (size_t)a), a + 5);
	assert_true(c.nevents >= (size_t)a + 8);
	for (long i = a + 3; i < a + 5; i++)
		assert_false(c.events[i].entry);
	assert_false(c.events[a + 6].entry);
	assert_false(c.events[a + 7].entry);
	assert_int_equal(c.nevents, (size_t)a + 8); /* rvt_exit_n(0) wrote nothing */
	cu_release(&c);
	rvt_set_resolver(NULL, NULL);
	assert_int_equal(rvt_stop(0, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runtime_keys_distinct_and_named),
		cmocka_unit_test(test_runtime_key_resolve_other_values_enoent),
		cmocka_unit_test(test_runtime_key_resolve_small_buffer_truncates),
		cmocka_unit_test(test_runtime_new_key_not_muted),
		cmocka_unit_test(test_runtime_exit_n_closes_frames_and_keys_named_in_capture),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
