/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_capture_chain.c — librvtrace and rvtrace together on a real process.
 *
 * Runs chain_app (instrumented, two modules) in developer mode
 * (RV_TRACE=1, RV_TRACE_FILE), once built in call mode and once in inline
 * mode, then decodes the capture with librvanalysis and checks what an
 * engineer would look for: the chain main → render_frame → layout_pass →
 * build_list_item → inflate_row_slowly found by name across both modules,
 * a static function named from .symtab, and the slow function at the top
 * of self time.
 */
#include <errno.h>
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

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rv-chain-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Runs `app` with tracing to `out`; returns its exit status. */
static int run_traced(const char *app, const char *out)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		setenv("RV_TRACE", "1", 1);
		setenv("RV_TRACE_FILE", out, 1);
		setenv("LD_LIBRARY_PATH", RV_LIB_DIR, 1);
		execl(app, app, "20", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *name_of(const rva_trace *t, uint32_t id)
{
	return id < t->nmethods ? t->names[id] : "?";
}

static void check_capture(const char *app)
{
	static const char *const want[] = {"main", "render_frame", "layout_pass", "build_list_item",
					   "inflate_row_slowly"};
	const size_t nwant = sizeof(want) / sizeof(want[0]);
	char out[128];
	rva_trace *t = NULL;
	rva_error err;
	rva_mstat *st = NULL;
	uint32_t chain[64], top;
	int64_t slow, measure;
	size_t i, depth = 0, found = 0;

	snprintf(out, sizeof(out), "%s/%s.rvt", tmpdir, strrchr(app, '/') + 1);
	assert_int_equal(run_traced(app, out), 0);
	if (rva_import_file(out, &t, &err) != 0)
		fail_msg("decoding %s: %s", out, err.msg);
	assert_int_equal(t->nthreads, 1);

	slow = rva_method_find(t, "inflate_row_slowly");
	measure = rva_method_find(t, "measure_child");
	assert_true(slow >= 0);
	assert_true(measure >= 0);

	/* Every slow call sits under the expected chain. */
	for (i = 0; i < t->threads[0].ncalls; i++) {
		const rva_call *c = &t->threads[0].calls[i];

		if (c->method != (uint32_t)slow)
			continue;
		depth = rva_chain_at(t, 0, c->start + (c->end - c->start) / 2, chain, 64);
		assert_true(depth >= nwant && depth <= 64);
		for (size_t k = 0; k < nwant; k++)
			assert_string_equal(name_of(t, chain[depth - nwant + k]), want[k]);
		found++;
	}
	assert_int_equal(found, 20); /* one slow item per frame, 20 frames */

	assert_int_equal(rva_method_stats(t, &st), 0);
	assert_int_equal(rva_top_self(t, st, &top, 1), 1);
	if (strcmp(name_of(t, top), "inflate_row_slowly") != 0) {
		/* Say by how much (wall time: a preempted frame keeps the time). */
		uint32_t ids[4];
		size_t n = rva_top_self(t, st, ids, 4);
		for (size_t k = 0; k < n; k++)
			print_message("self #%zu: %s %lld ns in %llu calls\n", k + 1,
				      name_of(t, ids[k]), (long long)st[ids[k]].self,
				      (unsigned long long)st[ids[k]].calls);
	}
	assert_string_equal(name_of(t, top), "inflate_row_slowly");
	assert_int_equal(st[slow].calls, 20);
	assert_int_equal(st[measure].calls, 80);
	free(st);
	rva_trace_free(t);
}

static void test_capture_chain_call_mode_found_by_name(void **state)
{
	(void)state;
	check_capture(RV_APP_DIR "/chain_app_call");
}

static void test_capture_chain_inline_mode_found_by_name(void **state)
{
	(void)state;
	check_capture(RV_APP_DIR "/chain_app_inline");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_chain_call_mode_found_by_name),
		cmocka_unit_test(test_capture_chain_inline_mode_found_by_name),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
