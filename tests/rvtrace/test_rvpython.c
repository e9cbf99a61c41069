/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rvpython.c — rvpython (tracer/runtimes/python/) traces Debian's real
 * CPython 3.11: each case runs a script of tests/rvtrace/rvpython/ under
 * `python3.11 -m rvpython` with librvtrace's developer mode, decodes the
 * capture with librvanalysis and checks the names, the nesting (every
 * call's parent) and the counts against what the script does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "rearview/analysis.h"

#ifndef RVPY_PYTHON
#define RVPY_PYTHON "/usr/bin/python3.11"
#endif
#ifndef RVPY_PATH
#define RVPY_PATH "build/lib/python"
#endif
#ifndef RVPY_SCRIPTS
#define RVPY_SCRIPTS "tests/rvtrace/rvpython"
#endif

static char dir[64];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/rvpython-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Runs `env ENV python3.11 -m rvpython SCRIPT ARG` with stdout and stderr
 * in dir/out; returns the exit status. */
static int run_py(const char *env, const char *script, const char *arg)
{
	char cmd[1024];
	int n = snprintf(cmd, sizeof(cmd),
			 "env -u RV_TRACE -u RV_TRACE_FILE -u RV_SOCKET PYTHONPATH=%s %s %s -m "
			 "rvpython %s/%s %s >%s/out 2>&1",
			 RVPY_PATH, env, RVPY_PYTHON, RVPY_SCRIPTS, script, arg, dir);
	assert_true(n > 0 && (size_t)n < sizeof(cmd));
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *b = calloc(1, 65536);
	assert_non_null(b);
	size_t n = fread(b, 1, 65535, f);
	b[n] = '\0';
	fclose(f);
	return b;
}

static void print_out(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/out", dir);
	char *s = slurp(path);
	print_message("python's output:\n%s\n", s ? s : "(none)");
	free(s);
}

/* The id of the one method of `script` named ":name" at its end
 * ("…/nest.py:LINE:name"); fails when there is not exactly one. */
static uint32_t method(const rva_trace *t, const char *script, const char *name)
{
	int64_t found = -1;
	size_t nl = strlen(name);
	for (size_t i = 0; i < t->nmethods; i++) {
		const char *m = t->names[i];
		size_t ml = strlen(m);
		if (!strstr(m, script) || ml <= nl + 1 || strcmp(m + ml - nl, name) != 0 ||
		    m[ml - nl - 1] != ':')
			continue;
		if (found >= 0)
			fail_msg("two methods end in :%s: %s, %s", name, t->names[found], m);
		found = (int64_t)i;
	}
	if (found < 0)
		fail_msg("no method of %s ends in :%s", script, name);
	return (uint32_t)found;
}

/* Calls of `m` whose caller is `parent` (UINT32_MAX: roots) on thread 0,
 * and (with *deepest) the longest run of m nested directly in m. */
static size_t calls_under(const rva_trace *t, uint32_t parent, uint32_t m, size_t *deepest)
{
	const rva_thread *th = &t->threads[0];
	uint32_t *st = calloc(th->ncalls + 1, sizeof(*st));
	size_t *run = calloc(th->ncalls + 1, sizeof(*run));
	assert_non_null(st);
	assert_non_null(run);
	size_t n = 0, best = 0;
	for (size_t i = 0; i < th->ncalls; i++) {
		const rva_call *c = &th->calls[i];
		assert_true(c->depth <= i);
		st[c->depth] = c->method;
		uint32_t up = c->depth ? st[c->depth - 1] : UINT32_MAX;
		run[c->depth] =
			c->method == m ? (c->depth && up == m ? run[c->depth - 1] : 0) + 1 : 0;
		if (run[c->depth] > best)
			best = run[c->depth];
		if (c->method == m && up == parent)
			n++;
	}
	free(st);
	free(run);
	if (deepest)
		*deepest = best;
	return n;
}

static size_t calls_of(const rva_trace *t, uint32_t m)
{
	size_t n = 0;
	for (size_t i = 0; i < t->threads[0].ncalls; i++)
		n += t->threads[0].calls[i].method == m;
	return n;
}

static void test_rvpython_nest_names_parents_counts_exact(void **state)
{
	char cap[128], env[256];
	snprintf(cap, sizeof(cap), "%s/nest.rvt", dir);
	snprintf(env, sizeof(env), "RV_TRACE=1 RV_TRACE_BUFFER=64m RV_TRACE_FILE=%s", cap);
	if (run_py(env, "nest.py", "") != 0) {
		print_out();
		fail_msg("python -m rvpython nest.py failed");
	}
	char path[128];
	snprintf(path, sizeof(path), "%s/out", dir);
	char *out = slurp(path);
	assert_non_null(out);
	assert_non_null(strstr(out, "rec=5 get=4 gen=6 caught=3"));
	free(out);

	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_import_file(cap, &t, &err), 0);
	assert_int_equal(t->nthreads, 1);
	/* Frames begun before the hook was installed record nothing, so the
	 * ring holds whole frames only: nothing dropped, nothing repaired. */
	assert_int_equal(t->dropped, 0);
	assert_int_equal(t->repaired, 0);

	const char *s = "nest.py:";
	uint32_t mod = method(t, s, "<module>"), main_ = method(t, s, "main");
	uint32_t outer = method(t, s, "outer"), middle = method(t, s, "middle");
	uint32_t leaf = method(t, s, "leaf"), rec = method(t, s, "rec");
	uint32_t init = method(t, s, "Box.__init__"), get = method(t, s, "Box.get");
	uint32_t comp = method(t, s, "main.<locals>.<listcomp>"), gen = method(t, s, "gen");
	uint32_t catcher = method(t, s, "catcher"), thrower = method(t, s, "thrower");

	assert_int_equal(calls_under(t, mod, main_, NULL), 1);
	assert_int_equal(calls_of(t, main_), 1);
	assert_int_equal(calls_under(t, main_, outer, NULL), 1);
	assert_int_equal(calls_under(t, outer, middle, NULL), 10);
	assert_int_equal(calls_of(t, middle), 10);
	assert_int_equal(calls_under(t, middle, leaf, NULL), 20);
	/* Recursion: rec(5) is 6 calls, each inside the one before. */
	size_t deepest;
	assert_int_equal(calls_under(t, main_, rec, &deepest), 1);
	assert_int_equal(calls_of(t, rec), 6);
	assert_int_equal(deepest, 6);
	assert_int_equal(calls_under(t, main_, init, NULL), 1);
	assert_int_equal(calls_under(t, main_, comp, NULL), 1);
	assert_int_equal(calls_under(t, comp, get, NULL), 4);
	/* A generator's frame runs once when called (CPython 3.11 creates the
	 * generator in it) and once per resumption: 3 values and the end, each
	 * under main (sum() is C, not a frame). */
	assert_int_equal(calls_under(t, main_, gen, NULL), 5);
	assert_int_equal(calls_of(t, gen), 5);
	assert_int_equal(calls_under(t, gen, leaf, NULL), 3);
	/* An exception unwinds thrower's frame with its exit: the leaf() after
	 * each except clause is catcher's child, not thrower's. */
	assert_int_equal(calls_under(t, main_, catcher, NULL), 1);
	assert_int_equal(calls_under(t, catcher, thrower, NULL), 3);
	assert_int_equal(calls_of(t, thrower), 3);
	assert_int_equal(calls_under(t, catcher, leaf, NULL), 3);
	assert_int_equal(calls_under(t, thrower, leaf, NULL), 0);
	assert_int_equal(calls_of(t, leaf), 26);
	rva_trace_free(t);
}

static void test_rvpython_capture_call_holds_the_open_frames(void **state)
{
	char cap[128];
	snprintf(cap, sizeof(cap), "%s/snap.rvt", dir);
	if (run_py("RV_TRACE=1", "snap.py", cap) != 0) {
		print_out();
		fail_msg("python -m rvpython snap.py failed");
	}
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_import_file(cap, &t, &err), 0);
	assert_int_equal(t->dropped, 0);
	uint32_t chain[64];
	size_t d = rva_chain_at(t, 0, t->end, chain, 64);
	assert_true(d >= 4 && d <= 64);
	const char *s = "snap.py:";
	assert_int_equal(chain[d - 4], method(t, s, "<module>"));
	assert_int_equal(chain[d - 3], method(t, s, "outer"));
	assert_int_equal(chain[d - 2], method(t, s, "inner"));
	assert_int_equal(chain[d - 1], method(t, s, "snap"));
	rva_trace_free(t);
	char path[128];
	snprintf(path, sizeof(path), "%s/out", dir);
	char *out = slurp(path);
	assert_non_null(out);
	assert_non_null(strstr(out, "tracing=True"));
	free(out);
}

static void test_rvpython_untraced_runs_the_same_and_writes_nothing(void **state)
{
	char cap[128], env[256], path[128];
	snprintf(cap, sizeof(cap), "%s/none.rvt", dir);
	snprintf(env, sizeof(env), "RV_TRACE_FILE=%s", cap);
	if (run_py(env, "nest.py", "") != 0) {
		print_out();
		fail_msg("python -m rvpython nest.py failed untraced");
	}
	snprintf(path, sizeof(path), "%s/out", dir);
	char *out = slurp(path);
	assert_non_null(out);
	assert_non_null(strstr(out, "rec=5 get=4 gen=6 caught=3"));
	free(out);
	assert_int_not_equal(access(cap, F_OK), 0);
	/* And the snapshot call says so instead of writing an empty capture. */
	snprintf(cap, sizeof(cap), "%s/snap-off.rvt", dir);
	assert_int_not_equal(run_py("", "snap.py", cap), 0);
	out = slurp(path);
	assert_non_null(out);
	assert_non_null(strstr(out, "tracing=False"));
	assert_non_null(strstr(out, "OSError"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rvpython_nest_names_parents_counts_exact),
		cmocka_unit_test(test_rvpython_capture_call_holds_the_open_frames),
		cmocka_unit_test(test_rvpython_untraced_runs_the_same_and_writes_nothing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
