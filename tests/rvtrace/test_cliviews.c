/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cliviews.c — the real build/bin/rvtrace's replay, report and graph
 * commands and its filters in every view, on a capture built byte by byte
 * (capbuild.h; 1 GHz counter, so ticks are ns and durations exact) and a
 * two-thread Chrome JSON file; and hostile options (a bad regex, depths
 * and durations out of range or negative, unknown keys and fields), each
 * a usage error (exit 2) with a message naming the fault.
 *
 * The capture (one thread, ns from the first call):
 *   main 0–10000 { a 100–6100 { b 200–3200 { c 300–1300, c 1400–2400 },
 *                               c 3300–5300 },
 *                  a 6200–9200 { b 6300–8300 { c 6400–7400, c 7500–8000 } } }
 * with an ANOMALY record at 8100.
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

#include "capbuild.h"

#ifndef RVTRACE_BIN
#define RVTRACE_BIN "build/bin/rvtrace"
#endif

static char dir[64];
static char cap[128], json[128], folded[128];

static void write_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* The capture: ticks are the ns of the header comment plus 1000. */
static void build_capture(const char *path)
{
	static const struct {
		uint64_t fn; /* 0: exit */
		uint32_t at;
	} ev[] = {{0x1000, 0},	  {0x2000, 100},  {0x3000, 200},  {0x4000, 300},  {0, 1300},
		  {0x4000, 1400}, {0, 2400},	  {0, 3200},	  {0x4000, 3300}, {0, 5300},
		  {0, 6100},	  {0x2000, 6200}, {0x3000, 6300}, {0x4000, 6400}, {0, 7400},
		  {0x4000, 7500}, {0, 8000},	  {0, 8300},	  {0, 9200},	  {0, 10000}};
	capbuf c = {0};
	cb_header(&c, 20000, 1000000000, 0, 20000, 0x400000, 0);
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		if (ev[i].fn)
			cb_entry(&c, ev[i].fn, 1000 + ev[i].at);
		else
			cb_exit(&c, 1000 + ev[i].at);
	}
	cb_end_slots(&c);
	cb_symbol(&c, 0x1000, 0x1000, 0, "main");
	cb_symbol(&c, 0x2000, 0x2000, 0, "a");
	cb_symbol(&c, 0x3000, 0x3000, 0, "b");
	cb_symbol(&c, 0x4000, 0x4000, 0, "c");
	cb_anomaly(&c, 1, 1000 + 8100, "frame drop");
	cb_finish(&c);
	write_file(path, c.b, c.len);
	free(c.b);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/rvtrace-views-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(cap, sizeof(cap), "%s/t.rvt", dir);
	snprintf(json, sizeof(json), "%s/t.json", dir);
	snprintf(folded, sizeof(folded), "%s/t.folded", dir);
	build_capture(cap);
	/* Two threads, µs: tid 1 run 0–400 { step 100–300 }, tid 2 step 50–250
	 * { step 60–70 }. */
	const char *j =
		"[{\"name\":\"run\",\"ph\":\"X\",\"pid\":9,\"tid\":1,\"ts\":0,\"dur\":400},"
		"{\"name\":\"step\",\"ph\":\"X\",\"pid\":9,\"tid\":1,\"ts\":100,\"dur\":200},"
		"{\"name\":\"step\",\"ph\":\"X\",\"pid\":9,\"tid\":2,\"ts\":50,\"dur\":200},"
		"{\"name\":\"step\",\"ph\":\"X\",\"pid\":9,\"tid\":2,\"ts\":60,\"dur\":10}]";
	write_file(json, j, strlen(j));
	const char *fo = "main;work 5\nmain;idle 2\n";
	write_file(folded, fo, strlen(fo));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Runs rvtrace ARGS; its stdout in *out, stderr in *err (caller frees);
 * returns the exit status. */
static int run(const char *args, char **out, char **err)
{
	char cmd[2048];
	int n = snprintf(cmd, sizeof(cmd), "%s %s >%s/out 2>%s/err", RVTRACE_BIN, args, dir, dir);
	assert_true(n > 0 && (size_t)n < sizeof(cmd));
	int st = system(cmd);
	for (int k = 0; k < 2; k++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/%s", dir, k ? "err" : "out");
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		char *b = calloc(1, 1 << 20);
		assert_non_null(b);
		size_t got = fread(b, 1, (1 << 20) - 1, f);
		b[got] = '\0';
		fclose(f);
		if (k)
			*err = b;
		else
			*out = b;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs ARGS (with FILE substituted by `file`), expects exit 0 and stdout
 * exactly `want`. */
static void expect(const char *args, const char *file, const char *want)
{
	char a[1024], *o, *e;
	snprintf(a, sizeof(a), "%s %s", args, file);
	int rc = run(a, &o, &e);
	if (rc != 0 || strcmp(o, want) != 0)
		fail_msg("rvtrace %s: exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", a, rc, o, want,
			 e);
	free(o);
	free(e);
}

/* Runs ARGS, expects exit `code` and `msg` in stderr. */
static void refused(const char *args, int code, const char *msg)
{
	char *o, *e;
	int rc = run(args, &o, &e);
	if (rc != code || !strstr(e, msg))
		fail_msg("rvtrace %s: exit %d (want %d)\nstderr:\n%s\nwant in it: %s", args, rc,
			 code, e, msg);
	free(o);
	free(e);
}

#define HDR                                                                                    \
	"  Total time   Self time       Calls   Avg total   Min total   Max total  Function\n" \
	"  ==========  ==========  ==========  ==========  ==========  ==========  "           \
	"====================\n"
#define R_MAIN "   10.000 us    1.000 us           1   10.000 us   10.000 us   10.000 us  main\n"
#define R_A    "    9.000 us    2.000 us           2    4.500 us    3.000 us    6.000 us  a\n"
#define R_B    "    5.000 us    1.500 us           2    2.500 us    2.000 us    3.000 us  b\n"
#define R_C    "    5.500 us    5.500 us           5    1.100 us    0.500 us    2.000 us  c\n"

static void test_cliviews_help_lists_and_describes_the_new_commands(void **state)
{
	char *o, *e;
	assert_int_equal(run("--help", &o, &e), 0);
	assert_non_null(strstr(o, "replay FILE"));
	assert_non_null(strstr(o, "report FILE"));
	assert_non_null(strstr(o, "graph [FUNC] FILE"));
	assert_non_null(strstr(o, "--time-filter"));
	free(o);
	free(e);
	static const char *const cmds[] = {"replay", "report", "graph"};
	for (size_t i = 0; i < 3; i++) {
		char a[64];
		snprintf(a, sizeof(a), "%s --help", cmds[i]);
		assert_int_equal(run(a, &o, &e), 0);
		assert_non_null(strstr(o, "usage: rvtrace"));
		assert_non_null(strstr(o, cmds[i]));
		assert_non_null(strstr(o, "--notrace=PAT"));
		assert_non_null(strstr(o, "POSIX extended regular expression"));
		free(o);
		free(e);
	}
	/* The older commands name the filters too. */
	static const char *const old[] = {"info",   "summary", "tree", "flamegraph",
					  "export", "diff",    "why"};
	for (size_t i = 0; i < 7; i++) {
		char a[64];
		snprintf(a, sizeof(a), "%s --help", old[i]);
		assert_int_equal(run(a, &o, &e), 0);
		assert_non_null(strstr(o, "[FILTERS]"));
		assert_non_null(strstr(o, "--time-filter"));
		free(o);
		free(e);
	}
}

static void test_cliviews_report_sort_keys_on_a_capture(void **state)
{
	expect("report", cap, HDR R_MAIN R_A R_C R_B);
	expect("report -s self", cap, HDR R_C R_A R_B R_MAIN);
	expect("report --sort=calls", cap, HDR R_C R_A R_B R_MAIN);
	expect("report -s avg", cap, HDR R_MAIN R_A R_B R_C);
	expect("report -s min", cap, HDR R_MAIN R_A R_B R_C);
	expect("report -s max", cap, HDR R_MAIN R_A R_B R_C);
	expect("report -s func", cap, HDR R_A R_B R_C R_MAIN);
	expect("report -s call,func", cap, HDR R_C R_A R_B R_MAIN);
	expect("report -s max,self --top 2", cap, HDR R_MAIN R_A);
	expect("report --avg-self -s max -n 1", cap,
	       "  Total time   Self time       Calls    Avg self    Min self    Max self  "
	       "Function\n"
	       "  ==========  ==========  ==========  ==========  ==========  ==========  "
	       "====================\n"
	       "    5.500 us    5.500 us           5    1.100 us    0.500 us    2.000 us  c\n");
}

static void test_cliviews_report_threads_one_table_each(void **state)
{
	expect("report --threads", json,
	       "# thread [0] pid 9 tid 1: 2 calls\n" HDR
	       "  400.000 us  200.000 us           1  400.000 us  400.000 us  400.000 us  run\n"
	       "  200.000 us  200.000 us           1  200.000 us  200.000 us  200.000 us  step\n"
	       "\n# thread [1] pid 9 tid 2: 2 calls\n" HDR
	       "  200.000 us  200.000 us           2  105.000 us   10.000 us  200.000 us  step\n");
	/* The same with --tid: thread 2 alone. */
	expect("report --threads --tid 2", json,
	       "# thread [0] pid 9 tid 2: 2 calls\n" HDR
	       "  200.000 us  200.000 us           2  105.000 us   10.000 us  200.000 us  step\n");
}

static void test_cliviews_replay_capture_with_anomaly_and_fields(void **state)
{
	expect("replay", cap,
	       "#  DURATION     TID    FUNCTION\n"
	       "            [    43] | main() {\n"
	       "            [    43] |   a() {\n"
	       "            [    43] |     b() {\n"
	       "   1.000 us [    43] |       c();\n"
	       "   1.000 us [    43] |       c();\n"
	       "   3.000 us [    43] |     } /* b */\n"
	       "   2.000 us [    43] |     c();\n"
	       "   6.000 us [    43] |   } /* a */\n"
	       "            [    43] |   a() {\n"
	       "            [    43] |     b() {\n"
	       "   1.000 us [    43] |       c();\n"
	       "   0.500 us [    43] |       c();\n"
	       "            [      ] | /* anomaly: frame drop */\n"
	       "   2.000 us [    43] |     } /* b */\n"
	       "   3.000 us [    43] |   } /* a */\n"
	       "  10.000 us [    43] | } /* main */\n");
	/* -F b -N c: b's calls alone, re-rooted, c gone; elapsed from b's
	 * first call (the filtered trace's start). */
	expect("replay -f elapsed,duration -F b -N c", cap,
	       "#   ELAPSED   DURATION   FUNCTION\n"
	       "   0.000 us   3.000 us | b();\n"
	       "   6.100 us   2.000 us | b();\n"
	       "   7.900 us            | /* anomaly: frame drop */\n");
	/* -t 1us -D 3 -H a */
	expect("replay -f none -t 1us -D 3 -H a", cap,
	       "#  FUNCTION\n"
	       " | main() {\n"
	       " |   b() {\n"
	       " |     c();\n"
	       " |     c();\n"
	       " |   } /* b */\n"
	       " |   c();\n"
	       " |   b() {\n"
	       " |     c();\n"
	       " | /* anomaly: frame drop */\n"
	       " |   } /* b */\n"
	       " | } /* main */\n");
}

static void test_cliviews_replay_merges_threads(void **state)
{
	expect("replay -f tid", json,
	       "#    TID    FUNCTION\n"
	       " [     1] | run() {\n"
	       " [     2] | step() {\n"
	       " [     2] |   step();\n"
	       " [     1] |   step();\n"
	       " [     2] | } /* step */\n"
	       " [     1] | } /* run */\n");
}

static void test_cliviews_graph_focus_backtraces_and_picking(void **state)
{
	const char *graph_b = "# Function Call Graph for 'b'\n"
			      "=============== BACKTRACE ===============\n"
			      " backtrace #0: hit 2, time   5.000 us\n"
			      "   [0] main\n"
			      "   [1] a\n"
			      "   [2] b\n"
			      "\n"
			      "========== FUNCTION CALL GRAPH ==========\n"
			      "# TOTAL TIME   FUNCTION\n"
			      "    5.000 us : (2) b\n"
			      "    3.500 us : (4) c\n";
	expect("graph b", cap, graph_b);
	/* A pattern that selects one method is that method. */
	expect("graph '^b$'", cap, graph_b);
	expect("graph -D 2 main", cap,
	       "# Function Call Graph for 'main'\n"
	       "=============== BACKTRACE ===============\n"
	       " backtrace #0: hit 1, time  10.000 us\n"
	       "   [0] main\n"
	       "\n"
	       "========== FUNCTION CALL GRAPH ==========\n"
	       "# calls more than 1 levels below it left out\n"
	       "# TOTAL TIME   FUNCTION\n"
	       "   10.000 us : (1) main\n"
	       "    9.000 us : (2) a\n");
	/* Filters narrow the trace first: without b, a's graph has c alone. */
	expect("graph -H b a", cap,
	       "# Function Call Graph for 'a'\n"
	       "=============== BACKTRACE ===============\n"
	       " backtrace #0: hit 2, time   9.000 us\n"
	       "   [0] main\n"
	       "   [1] a\n"
	       "\n"
	       "========== FUNCTION CALL GRAPH ==========\n"
	       "# TOTAL TIME   FUNCTION\n"
	       "    9.000 us : (2) a\n"
	       "    5.500 us : (5) c\n");
	expect("graph", json,
	       "# Function Call Graph\n"
	       "========== FUNCTION CALL GRAPH ==========\n"
	       "# TOTAL TIME   FUNCTION\n"
	       "  400.000 us : (1) run\n"
	       "  200.000 us : (1) step\n"
	       "  200.000 us : (1) step\n"
	       "   10.000 us : (1) step\n");
	char a[256];
	snprintf(a, sizeof(a), "graph '^(a|b)$' %s", cap);
	refused(a, 1, "more than one method matches '^(a|b)$'");
	snprintf(a, sizeof(a), "graph ai %s", cap);
	refused(a, 1, "no method is named 'ai'");
	snprintf(a, sizeof(a), "graph ai b %s", cap);
	refused(a, 2, "usage: rvtrace graph");
}

static void test_cliviews_filters_work_in_the_older_views(void **state)
{
	char a[512], *o, *e;
	/* info says how much the filter kept. */
	snprintf(a, sizeof(a), "info --notrace c %s", cap);
	assert_int_equal(run(a, &o, &e), 0);
	assert_non_null(strstr(o, "calls:    5\n"));
	assert_non_null(strstr(o, "filtered: 5 of 10 calls kept\n"));
	free(o);
	free(e);
	/* summary takes the model: b's time is a's self time without b. */
	snprintf(a, sizeof(a), "summary --top 2 --notrace=b %s", cap);
	assert_int_equal(run(a, &o, &e), 0);
	assert_non_null(strstr(o, "         2          9.000          7.000  a\n"));
	free(o);
	free(e);
	snprintf(a, sizeof(a), "summary --json --filter=b %s", cap);
	assert_int_equal(run(a, &o, &e), 0);
	assert_null(strstr(o, "\"method\":\"main\""));
	assert_non_null(strstr(o, "\"method\":\"b\""));
	free(o);
	free(e);
	/* tree, export, flamegraph, diff, why */
	snprintf(a, sizeof(a), "tree --threshold 0 --depth 2 %s", cap);
	assert_int_equal(run(a, &o, &e), 0);
	assert_non_null(strstr(o, "  a (2 calls)"));
	assert_null(strstr(o, " b ("));
	free(o);
	free(e);
	expect("export --format folded --filter b --notrace c", cap, "b 5\n");
	snprintf(a, sizeof(a), "flamegraph --hide a -o %s/f.svg %s", dir, cap);
	assert_int_equal(run(a, &o, &e), 0);
	free(o);
	free(e);
	snprintf(a, sizeof(a), "%s/f.svg", dir);
	FILE *f = fopen(a, "r");
	assert_non_null(f);
	char *svg = calloc(1, 1 << 20);
	assert_non_null(svg);
	size_t got = fread(svg, 1, (1 << 20) - 1, f);
	fclose(f);
	svg[got] = '\0';
	/* Each frame's tooltip: b's calls moved up under main, a's gone. */
	assert_non_null(strstr(svg, "<title>main (10.000 us"));
	assert_non_null(strstr(svg, "<title>b (5.000 us"));
	assert_null(strstr(svg, "<title>a ("));
	free(svg);
	snprintf(a, sizeof(a), "diff --notrace c %s %s", cap, cap);
	assert_int_equal(run(a, &o, &e), 0);
	assert_null(strstr(o, "  c\n"));
	assert_non_null(strstr(o, "  b\n"));
	free(o);
	free(e);
	snprintf(a, sizeof(a), "why --time-filter 2500ns b %s", cap);
	assert_int_equal(run(a, &o, &e), 0);
	assert_non_null(strstr(o, "calls: 1\ninclusive: 3.000\n"));
	free(o);
	free(e);
}

static void test_cliviews_filter_warns_when_a_pattern_selects_nothing(void **state)
{
	char a[256], *o, *e;
	snprintf(a, sizeof(a), "report -F mai %s", cap);
	assert_int_equal(run(a, &o, &e), 0);
	assert_non_null(strstr(e, "warning: no method is named 'mai' or matches it"));
	assert_non_null(strstr(e, "  main\n"));
	assert_string_equal(o, HDR);
	free(o);
	free(e);
}

static void test_cliviews_hostile_options_are_usage_errors(void **state)
{
	static const struct {
		const char *args, *msg;
	} bad[] = {
		{"report -F 'a(' ", "bad pattern 'a('"},
		{"replay --notrace '[z-a]' ", "bad pattern '[z-a]'"},
		{"tree --hide '*x' ", "bad pattern '*x'"},
		{"report -D 0 ", "--depth '0': not a whole number"},
		{"report -D -3 ", "--depth '-3': not a whole number"},
		{"replay --depth 99999999999999999999999 ", "not a whole number from 1"},
		{"report -D 2x ", "--depth '2x'"},
		{"replay -t -5us ", "a duration cannot be negative"},
		{"replay -t 5xs ", "unknown unit 'xs'"},
		{"report -t 1e400 ", "not a number in range"},
		{"report -t nan ", "not a number in range"},
		{"report -t 1e18s ", "out of range"},
		{"summary --time-filter '' ", "--time-filter ''"},
		{"info --tid x ", "--tid 'x': not a list"},
		{"report --tid 99999999999 ", "not a list of thread ids"},
		{"report -s bogus ", "unknown sort key 'bogus'"},
		{"report -s ,, ", "give 1 to 16 keys"},
		{"replay -f bogus ", "unknown field 'bogus'"},
		{"graph -F '(' b ", "bad pattern '('"},
		{"export --format folded --filter '' ", "empty function pattern"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char a[512];
		snprintf(a, sizeof(a), "%s%s", bad[i].args, cap);
		refused(a, 2, bad[i].msg);
	}
	/* The largest depth is no limit at all. */
	char a[256], *o, *e;
	snprintf(a, sizeof(a), "report -D 18446744073709551615 %s", cap);
	assert_int_equal(run(a, &o, &e), 0);
	assert_string_equal(o, HDR R_MAIN R_A R_C R_B);
	free(o);
	free(e);
	/* Sample weights take a count, not a time. */
	snprintf(a, sizeof(a), "report -t 5us %s", folded);
	refused(a, 1, "its times are sample weights");
	expect("report -s func -t 3", folded,
	       "  Total time   Self time       Calls   Avg total   Min total   Max total  "
	       "Function\n"
	       "  ==========  ==========  ==========  ==========  ==========  ==========  "
	       "====================\n"
	       "           7           2           1           7           7           7  main\n"
	       "           5           5           1           5           5           5  work\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cliviews_help_lists_and_describes_the_new_commands),
		cmocka_unit_test(test_cliviews_report_sort_keys_on_a_capture),
		cmocka_unit_test(test_cliviews_report_threads_one_table_each),
		cmocka_unit_test(test_cliviews_replay_capture_with_anomaly_and_fields),
		cmocka_unit_test(test_cliviews_replay_merges_threads),
		cmocka_unit_test(test_cliviews_graph_focus_backtraces_and_picking),
		cmocka_unit_test(test_cliviews_filters_work_in_the_older_views),
		cmocka_unit_test(test_cliviews_filter_warns_when_a_pattern_selects_nothing),
		cmocka_unit_test(test_cliviews_hostile_options_are_usage_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
