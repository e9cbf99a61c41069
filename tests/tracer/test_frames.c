/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_frames.c — every frame of a capture named, with real instrumented
 * programs run as child processes (tier: integration), decoded by
 * librvanalysis (rvtrace's decoder):
 *  - frames_fix (gcc call mode, inline mode with the x86-64 stubs and with
 *    the C trace point, clang call mode after inlining) wraps a
 *    64 KiB ring many times under main → ff_run → ff_loop → ff_phase → …;
 *    its capture from inside the chain and the one written at exit must
 *    name every frame (no "(unknown caller)", no address), have main as
 *    the only root, and agree with the tracer's own records (unbalanced 0)
 *    — although the entries of main, ff_run and ff_loop left the ring
 *    laps before;
 *  - exec_fix execs /bin/true from a second thread, or from the main
 *    thread: the captures developer mode writes at exit are written first;
 *  - malloc_fix defines its own traced malloc: the tracer's allocations on
 *    the traced main thread never appear in its capture.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rearview/analysis.h"
#include "rearview/sanitizer.h"

#ifndef RVT_FIX_DIR
#define RVT_FIX_DIR "build/tests/tracer"
#endif

/* Where the programs are: RVT_FIX_DIR, or the environment's (to run them
 * as built by another librvtrace, e.g. one without what is tested here). */
static const char *fix_dir(void)
{
	const char *d = getenv("RVT_FIX_DIR");
	return d && *d ? d : RVT_FIX_DIR;
}

extern char **environ;

/* Runs argv with `env` (NAME=VALUE, NULL-terminated) added to the
 * environment; returns its exit status, or -1 when it did not exit. */
static int run(char *const argv[], const char *const env[])
{
	size_t n = 0, k = 0;
	while (environ[n])
		n++;
	while (env[k])
		k++;
	char **envp = calloc(n + k + 1, sizeof(*envp));
	assert_non_null(envp);
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "RV_", 3) != 0)
			envp[m++] = environ[i];
	for (size_t i = 0; i < k; i++)
		envp[m++] = (char *)env[i];
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execve(argv[0], argv, envp);
		_exit(127);
	}
	free(envp);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		assert_int_equal(errno, EINTR);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void tmpdir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/rvt-frames-XXXXXX");
	assert_non_null(mkdtemp(dir));
}

static void rmtree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static rva_trace *load(const char *path)
{
	rva_trace *t = NULL;
	rva_error err = {{0}};
	int rc = rva_import_file(path, &t, &err);
	if (rc < 0)
		fail_msg("%s: %s", path, err.msg);
	assert_int_equal(t->nthreads, 1);
	return t;
}

static const char *name_of(const rva_trace *t, const rva_call *c)
{
	return t->names[c->method];
}

/* Calls of `name` in t's thread. */
static size_t count_calls(const rva_trace *t, const char *name)
{
	size_t n = 0;
	const rva_thread *th = &t->threads[0];
	for (size_t i = 0; i < th->ncalls; i++)
		n += strcmp(name_of(t, &th->calls[i]), name) == 0;
	return n;
}

/* Bit 0 of the header flags: the ring overwrote old data. */
static int wrapped(const char *path)
{
	uint8_t h[16];
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
	return h[12] & 1;
}

/*
 * A frames_fix capture: every call named by a function of the program;
 * one root, main, from the first time to the last; the exits match the
 * entries; nothing of phase 0 is left (its entries, and those of main,
 * ff_run and ff_loop, were overwritten laps before).  Returns the depth of
 * the last ff_leaf entered.
 */
static uint32_t check_named(const char *path)
{
	assert_true(wrapped(path));
	rva_trace *t = load(path);
	const rva_thread *th = &t->threads[0];
	assert_true(th->ncalls > 1000);
	assert_int_equal(t->repaired, 0);
	assert_int_equal(t->unbalanced, 0);
	assert_null(t->warning);
	uint32_t leaf_depth = 0;
	for (size_t i = 0; i < th->ncalls; i++) {
		const rva_call *c = &th->calls[i];
		const char *n = name_of(t, c);
		if (strncmp(n, "ff_", 3) != 0 && strcmp(n, "main") != 0)
			fail_msg("%s: call %zu at depth %u is \"%s\"", path, i, c->depth, n);
		if (c->depth == 0) {
			assert_int_equal(i, 0);
			assert_string_equal(n, "main");
			assert_true(c->start == t->start && c->end == t->end);
		}
		if (strcmp(n, "ff_leaf") == 0)
			leaf_depth = c->depth;
	}
	assert_int_equal(count_calls(t, "ff_run"), 1);
	assert_int_equal(count_calls(t, "ff_loop"), 1);
	/* ff_phase: the one running at the oldest slot and the later ones. */
	size_t phases = count_calls(t, "ff_phase");
	assert_true(phases >= 1 && phases <= 3);
	rva_trace_free(t);
	return leaf_depth;
}

static void frames_case(const char *build)
{
	char dir[64], prog[512], mid[128], atexit_[128], file_env[160];
	tmpdir(dir, sizeof(dir));
	snprintf(prog, sizeof(prog), "%s/frames_%s", fix_dir(), build);
	if (access(prog, X_OK) != 0) {
		rmdir(dir);
		fprintf(stderr, "%s not built (no clang when it was built)\n", prog);
		skip();
	}
	snprintf(mid, sizeof(mid), "%s/mid.rvt", dir);
	snprintf(atexit_, sizeof(atexit_), "%s/exit.rvt", dir);
	snprintf(file_env, sizeof(file_env), "RV_TRACE_FILE=%s", atexit_);
	char *argv[] = {prog, mid, NULL};
	/* Every frame and exact counts: the budget (on by default) would mute
	 * the hot ff_leaf and fold it into its callers (RV_TRACE_MUTE). */
	const char *env[] = {"RV_TRACE=1", "RV_TRACE_BUFFER=64k", "RV_TRACE_MUTE=off", file_env,
			     NULL};
	assert_int_equal(run(argv, env), 0);
	/* In the leaf: main ff_run ff_loop ff_phase ff_batch ff_dispatch
	 * ff_stage1 ff_stage2 ff_leaf, 0 to 8. */
	assert_int_equal(check_named(mid), 8);
	check_named(atexit_);
	rmtree(dir);
}

static void test_frames_gcc_call_mode_every_frame_named(void **state)
{
	(void)state;
	frames_case("gc");
}

static void test_frames_gcc_inline_mode_every_frame_named(void **state)
{
	(void)state;
	frames_case("gi");
}

static void test_frames_clang_call_mode_every_frame_named(void **state)
{
	(void)state;
	frames_case("cc");
}

static void test_frames_gcc_inline_c_trace_point_every_frame_named(void **state)
{
	(void)state;
	frames_case("gp");
}

/* The captures in dir (exec_fix's, one per thread), each decoded. */
static size_t load_dir(const char *dir, rva_trace **out, size_t cap)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	size_t n = 0;
	char p[512];
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		assert_true(n < cap);
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		out[n++] = load(p);
	}
	closedir(d);
	return n;
}

static void exec_case(const char *who, int nfiles)
{
	char dir[64], prog[512], file_env[160];
	tmpdir(dir, sizeof(dir));
	snprintf(prog, sizeof(prog), "%s/exec_fix", fix_dir());
	snprintf(file_env, sizeof(file_env), "RV_TRACE_FILE=%s/cap.%%t", dir);
	char who_[16], truth[] = "/bin/true";
	snprintf(who_, sizeof(who_), "%s", who);
	char *argv[] = {prog, who_, truth, NULL};
	/* Exact counts: no budget (RV_TRACE_MUTE). */
	const char *env[] = {"RV_TRACE=all", "RV_TRACE_MUTE=off", file_env, NULL};
	assert_int_equal(run(argv, env), 0); /* /bin/true's status: the exec happened */
	rva_trace *t[4];
	size_t n = load_dir(dir, t, 4);
	assert_int_equal(n, nfiles);
	int main_seen = 0, thread_seen = 0;
	for (size_t i = 0; i < n; i++) {
		if (count_calls(t[i], "ex_main_work") == 1) {
			main_seen = 1;
			/* exec from the main thread: inside ex_exec; else blocked in
			 * ex_wait until the exec ended it. */
			assert_int_equal(count_calls(t[i], nfiles == 1 ? "ex_exec" : "ex_wait"), 1);
		}
		if (count_calls(t[i], "ex_thread_work") == 1) {
			thread_seen = 1;
			assert_int_equal(count_calls(t[i], "ex_exec"), 1);
		}
		rva_trace_free(t[i]);
	}
	assert_true(main_seen);
	assert_int_equal(thread_seen, nfiles == 2);
	rmtree(dir);
}

static void test_frames_exec_from_thread_writes_captures_first(void **state)
{
	(void)state;
	exec_case("thread", 2);
}

static void test_frames_exec_from_main_thread_writes_capture_first(void **state)
{
	(void)state;
	exec_case("main", 1);
}

static void test_frames_tracer_allocations_not_in_trace(void **state)
{
	(void)state;
#if RV_ASAN
	/* AddressSanitizer replaces malloc: a program defining its own mixes
	 * the two allocators and crashes, with or without librvtrace. */
	fprintf(stderr, "malloc_fix cannot run under AddressSanitizer\n");
	skip();
#endif
	char dir[64], prog[512], main_cap[128], worker_cap[128];
	tmpdir(dir, sizeof(dir));
	snprintf(prog, sizeof(prog), "%s/malloc_fix", fix_dir());
	snprintf(main_cap, sizeof(main_cap), "%s/main.rvt", dir);
	snprintf(worker_cap, sizeof(worker_cap), "%s/worker.rvt", dir);
	char *argv[] = {prog, main_cap, worker_cap, NULL};
	const char *env[] = {"RV_TRACE_MUTE=off", NULL}; /* exact counts */
	assert_int_equal(run(argv, env), 0);
	rva_trace *t = load(main_cap);
	/* mf_work's own three of each; the tracer made many more (starting
	 * and capturing the worker) on this thread. */
	assert_int_equal(count_calls(t, "mf_work"), 1);
	assert_int_equal(count_calls(t, "malloc"), 3);
	assert_int_equal(count_calls(t, "free"), 3);
	assert_int_equal(count_calls(t, "calloc"), 0);
	assert_int_equal(count_calls(t, "realloc"), 0);
	rva_trace_free(t);
	rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frames_gcc_call_mode_every_frame_named),
		cmocka_unit_test(test_frames_gcc_inline_mode_every_frame_named),
		cmocka_unit_test(test_frames_gcc_inline_c_trace_point_every_frame_named),
		cmocka_unit_test(test_frames_clang_call_mode_every_frame_named),
		cmocka_unit_test(test_frames_exec_from_thread_writes_captures_first),
		cmocka_unit_test(test_frames_exec_from_main_thread_writes_capture_first),
		cmocka_unit_test(test_frames_tracer_allocations_not_in_trace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
