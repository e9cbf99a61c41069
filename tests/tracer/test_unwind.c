/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_unwind.c — the recorded call tree across non-local exits (unwind.c):
 * longjmp, _longjmp, siglongjmp and __longjmp_chk out of five instrumented
 * frames in call and inline mode, C++ exceptions thrown through five frames
 * built with g++ and with clang++ (after inlining), pthread_exit and
 * pthread_cancel from depth 6, and Lua 5.4 (Debian's source, instrumented)
 * running 200 pcall(error) and then table.sort.  Each capture is decoded by
 * capture_util and rendered as a tree, "f(g()h())", compared exactly.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_util.h"
#include "rearview/trace.h"
#include "unwind_fix.h"

/* Captures the calling (or the exited) thread `tid` and decodes it. */
static void capture(pid_t tid, struct cu_capture *c)
{
	uint64_t size = 0;
	int fd = rvt_capture_to_memfd(tid, &size);
	assert_true(fd >= 0);
	assert_int_equal(cu_parse_fd(fd, c), 0);
	close(fd);
}

static void expect_tree(const char *prefix, const char *want)
{
	struct cu_capture c;
	capture(0, &c);
	char *got = cu_render_tree(&c, prefix);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	cu_release(&c);
}

/* Tracing on, in a fresh ring. */
static void fresh_ring(void)
{
	assert_int_equal(rvt_start(0), 0);
	uint64_t size;
	int fd = rvt_capture_to_memfd(0, &size);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rvt_is_tracing(0), 1);
}

#define JUMP_TREE(p) \
	p "top(" p "a(" p "b(" p "c(" p "d(" p "leaf()))))" p "after(" p "after_inner()))"

static void test_unwind_longjmp_call_mode_tree_exact(void **state)
{
	(void)state;
	fresh_ring();
	uc_top(UF_LONGJMP);
	expect_tree("uc_", JUMP_TREE("uc_"));
}

static void test_unwind__longjmp_call_mode_tree_exact(void **state)
{
	(void)state;
	fresh_ring();
	uc_top(UF__LONGJMP);
	expect_tree("uc_", JUMP_TREE("uc_"));
}

static void test_unwind_siglongjmp_call_mode_tree_exact(void **state)
{
	(void)state;
	fresh_ring();
	uc_top(UF_SIGLONGJMP);
	expect_tree("uc_", JUMP_TREE("uc_"));
}

static void test_unwind_siglongjmp_from_signal_handler_tree_exact(void **state)
{
	(void)state;
	struct sigaction sa = {.sa_handler = uc_on_signal}, old;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR2, &sa, &old), 0);
	fresh_ring();
	uc_top(UF_SIGNAL);
	expect_tree("uc_", "uc_top(uc_a(uc_b(uc_c(uc_d(uc_leaf(uc_on_signal())))))"
			   "uc_after(uc_after_inner()))");
	assert_int_equal(sigaction(SIGUSR2, &old, NULL), 0);
}

static void test_unwind_longjmp_chk_fortified_tree_exact(void **state)
{
	(void)state;
	fresh_ring();
	uf_top(UF_LONGJMP);
	expect_tree("uf_", JUMP_TREE("uf_"));
}

static void test_unwind_longjmp_inline_mode_tree_exact(void **state)
{
	(void)state;
	fresh_ring();
	ui_top(UF_LONGJMP);
	ui_top(UF_SIGLONGJMP);
	expect_tree("ui_", JUMP_TREE("ui_") JUMP_TREE("ui_"));
}

/* Late mode writes no exit for a frame longjmp leaves (nor does inline
 * mode): the interposer closes them. */
static void test_unwind_longjmp_late_mode_tree_exact(void **state)
{
	(void)state;
#ifndef UNWIND_HAVE_LATE
	skip(); /* no GCC plugin (or a TSan build) when this test was built */
#else
	fresh_ring();
	ul_top(UF_LONGJMP);
	ul_top(UF_SIGLONGJMP);
	expect_tree("ul_", JUMP_TREE("ul_") JUMP_TREE("ul_"));
#endif
}

static void test_unwind_repeated_longjmp_depth_stays_flat(void **state)
{
	(void)state;
	fresh_ring();
	for (int i = 0; i < 500; i++)
		uc_top(i % 3);
	struct cu_capture c;
	capture(0, &c);
	long depth = 0, max = 0;
	for (size_t i = 0; i < c.nevents; i++) {
		depth += c.events[i].entry ? 1 : -1;
		max = depth > max ? depth : max;
	}
	assert_int_equal(depth, 0);
	assert_int_equal(max, 6);
	cu_release(&c);
}

static void test_unwind_longjmp_past_shadow_capacity_tree_exact(void **state)
{
	(void)state;
	fresh_ring();
	uc_deep_top(6000); /* deeper than RVT_SHADOW_FRAMES (4096) */
	struct cu_capture c;
	capture(0, &c);
	long depth = 0, max = 0, after_depth = -1;
	for (size_t i = 0; i < c.nevents; i++) {
		if (c.events[i].entry) {
			const char *n = cu_name(&c, c.events[i].value);
			if (n && strcmp(n, "uc_after") == 0)
				after_depth = depth;
			max = ++depth > max ? depth : max;
		} else {
			depth--;
		}
	}
	assert_int_equal(max, 6003); /* deep_top, 6001 deep, leaf */
	assert_int_equal(after_depth, 1);
	assert_int_equal(depth, 0);
	cu_release(&c);
}

/* The guard's destructor runs in x_c's cleanup, after x_d and x_leaf were
 * unwound: it nests in x_c, beside x_d. */
#define CXX_ONE(p)                                                                               \
	p "x_top(" p "x_a(" p "x_b(" p "x_c(" p "x_d(" p "x_leaf())" p "guard::~" p "guard()(" p \
	  "x_cleanup()))))" p "x_after())"
#define CXX_TREE(p) CXX_ONE(p) CXX_ONE(p)

static void test_unwind_gxx_exception_tree_exact(void **state)
{
	(void)state;
	fresh_ring();
	assert_int_equal(gx_x_top(7), 7);
	assert_int_equal(gx_x_top(8), 8);
	expect_tree("gx_", CXX_TREE("gx_"));
}

static void test_unwind_clangxx_exception_tree_exact(void **state)
{
	(void)state;
#ifndef UNWIND_HAVE_CLANG
	skip(); /* clang++ was not found when this test was built */
#else
	fresh_ring();
	assert_int_equal(cl_x_top(7), 7);
	assert_int_equal(cl_x_top(8), 8);
	expect_tree("cl_", CXX_TREE("cl_"));
#endif
}

/* g++ in late mode: no cleanup of gcc's writes the exits of the frames the
 * exception leaves (as with clang's after-inlining hooks); the personality
 * interposer closes them before the destructor's landing pad runs. */
static void test_unwind_gxx_late_mode_exception_tree_exact(void **state)
{
	(void)state;
#ifndef UNWIND_HAVE_LATE
	skip(); /* no GCC plugin (or a TSan build) when this test was built */
#else
	fresh_ring();
	assert_int_equal(gl_x_top(7), 7);
	assert_int_equal(gl_x_top(8), 8);
	expect_tree("gl_", CXX_TREE("gl_"));
#endif
}

struct exiter {
	int kind;
	_Atomic pid_t tid;
};

static void *exiter_main(void *arg)
{
	struct exiter *e = arg;
	if (rvt_start(0) != 0)
		return NULL;
	e->tid = gettid();
	uc_top(e->kind);
	return NULL;
}

static void exit_case(int kind)
{
	struct exiter e = {.kind = kind};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, exiter_main, &e), 0);
	if (kind == UF_CANCEL) {
		/* Once tracing, the thread meets no cancellation point before
		 * pause() in its leaf: the pending cancel acts there. */
		while (e.tid == 0)
			sched_yield();
		assert_int_equal(pthread_cancel(th), 0);
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	struct cu_capture c;
	capture(e.tid, &c);
	char *got = cu_render_tree(&c, "uc_");
	assert_non_null(got);
	assert_string_equal(got, "uc_top(uc_a(uc_b(uc_c(uc_d(uc_leaf())))))");
	free(got);
	cu_release(&c);
}

static void test_unwind_pthread_exit_frames_closed(void **state)
{
	(void)state;
	exit_case(UF_PTHREAD_EXIT);
}

static void test_unwind_pthread_cancel_frames_closed(void **state)
{
	(void)state;
	exit_case(UF_CANCEL);
}

/* The names of the frames open at event `at` (an entry), outermost first,
 * joined by '/'. */
static char *chain_at(const struct cu_capture *c, size_t at)
{
	uint64_t *stack = calloc(c->nevents + 1, sizeof(uint64_t));
	assert_non_null(stack);
	size_t depth = 0;
	for (size_t i = 0; i < at; i++) {
		if (c->events[i].entry)
			stack[depth++] = c->events[i].value;
		else if (depth > 0)
			depth--;
	}
	size_t cap = 256 * (depth + 1), len = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	out[0] = '\0';
	for (size_t i = 0; i < depth; i++) {
		const char *n = cu_name(c, stack[i]);
		len += (size_t)snprintf(out + len, cap - len, "%.200s/", n ? n : "?");
	}
	free(stack);
	return out;
}

static void test_unwind_lua_pcall_error_then_sort_nests_right(void **state)
{
	(void)state;
	char cmd[4096], lua[2048] = "";
	snprintf(cmd, sizeof(cmd), "cd '%s' && sh tests/tracer/unwind_lua.sh '%s' '%s'",
		 RVT_SRC_DIR, RVT_BUILD_DIR, RVT_SANFLAGS);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	if (!fgets(lua, sizeof(lua), p))
		lua[0] = '\0';
	int st = pclose(p);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		fprintf(stderr, "lua5.4 source not available (see unwind_lua.sh above)\n");
		skip();
	}
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	lua[strcspn(lua, "\n")] = '\0';

	char dir[] = "/tmp/rvt-unwind-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char script[128], cap[128];
	snprintf(script, sizeof(script), "%s/t.lua", dir);
	snprintf(cap, sizeof(cap), "%s/t.cap", dir);
	FILE *f = fopen(script, "w");
	assert_non_null(f);
	fputs("for i = 1, 200 do pcall(error, 'x') end\n"
	      "local t = {}\n"
	      "for i = 1, 300 do t[i] = (i * 7919) % 1000 end\n"
	      "table.sort(t, function(a, b) return a < b end)\n"
	      "for i = 2, 300 do assert(t[i - 1] <= t[i]) end\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "RV_TRACE=1 RV_TRACE_FILE='%s' '%s' '%s'", cap, lua, script);
	assert_int_equal(system(cmd), 0);

	struct cu_capture c;
	assert_int_equal(cu_parse_file(cap, &c), 0);
	long pc = cu_find_entry(&c, "luaB_pcall", 0);
	long so = cu_find_entry(&c, "sort", 0);
	assert_true(pc >= 0);
	assert_true(so > pc);
	long aux = cu_find_entry(&c, "auxsort", (size_t)so);
	assert_true(aux > so);
	/* sort is called from the same place as the chunk's pcalls. */
	char *want = chain_at(&c, (size_t)pc);
	char *got = chain_at(&c, (size_t)so);
	assert_string_equal(got, want);
	/* auxsort runs inside sort. */
	char *in = chain_at(&c, (size_t)aux);
	size_t gl = strlen(got);
	assert_true(strncmp(in, got, gl) == 0);
	assert_string_equal(in + gl, "sort/");
	free(in);
	free(want);
	free(got);
	cu_release(&c);
	unlink(script);
	unlink(cap);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwind_longjmp_call_mode_tree_exact),
		cmocka_unit_test(test_unwind__longjmp_call_mode_tree_exact),
		cmocka_unit_test(test_unwind_siglongjmp_call_mode_tree_exact),
		cmocka_unit_test(test_unwind_siglongjmp_from_signal_handler_tree_exact),
		cmocka_unit_test(test_unwind_longjmp_chk_fortified_tree_exact),
		cmocka_unit_test(test_unwind_longjmp_inline_mode_tree_exact),
		cmocka_unit_test(test_unwind_longjmp_late_mode_tree_exact),
		cmocka_unit_test(test_unwind_repeated_longjmp_depth_stays_flat),
		cmocka_unit_test(test_unwind_longjmp_past_shadow_capacity_tree_exact),
		cmocka_unit_test(test_unwind_gxx_exception_tree_exact),
		cmocka_unit_test(test_unwind_clangxx_exception_tree_exact),
		cmocka_unit_test(test_unwind_gxx_late_mode_exception_tree_exact),
		cmocka_unit_test(test_unwind_pthread_exit_frames_closed),
		cmocka_unit_test(test_unwind_pthread_cancel_frames_closed),
		cmocka_unit_test(test_unwind_lua_pcall_error_then_sort_nests_right),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
