/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_textio.c — folded stacks and Nanoscope import, detection, the text
 * exporters and round trips through them, SVG escaping, and every folded
 * file of the shared test data.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capbuild.h"
#include "rearview/sanitizer.h"
#include "rearview/analysis.h"

#ifndef RV_TESTDATA
#define RV_TESTDATA "../shared/testdata"
#endif
#define FIXTURES "tests/rvtrace/fixtures"

static rva_trace *load(const char *path)
{
	rva_trace *t = NULL;
	rva_error err = {{0}};
	int rc = rva_import_file(path, &t, &err);
	if (rc < 0)
		fail_msg("%s: %s", path, err.msg);
	return t;
}

static char *folded_text(const rva_trace *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(rva_export_folded(f, t), 0);
	fclose(f);
	return buf;
}

static void test_textio_folded_encodings_import_identically(void **state)
{
	static const char *names[] = {"simple-crlf.txt", "simple-utf16-le.txt",
				      "simple-utf16-be.txt", "simple-with-invalids.txt"};
	/* The third-party fixtures live in ../shared/testdata (present in CI). */
	if (access(RV_TESTDATA "/folded/speedscope-edge-cases/simple.txt", R_OK) != 0)
		skip();
	rva_trace *ref = load(RV_TESTDATA "/folded/speedscope-edge-cases/simple.txt");
	char *want = folded_text(ref);
	/* a;b;c 1+1+3, a;b;d 4, a;b 5 */
	assert_non_null(strstr(want, "a;b;c 5\n"));
	assert_non_null(strstr(want, "a;b;d 4\n"));
	assert_non_null(strstr(want, "a;b 5\n"));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/folded/speedscope-edge-cases/%s", RV_TESTDATA,
			 names[i]);
		rva_trace *t = load(path);
		char *got = folded_text(t);
		assert_string_equal(got, want);
		assert_int_equal(t->weighted, 1);
		if (strstr(names[i], "invalids"))
			assert_int_equal(t->dropped, 3);
		free(got);
		rva_trace_free(t);
	}
	free(want);
	rva_trace_free(ref);
}

static void test_textio_every_folded_testdata_file_imports(void **state)
{
	static const char *dirs[] = {RV_TESTDATA "/folded/speedscope-edge-cases",
				     RV_TESTDATA "/folded/flamegraph"};
	int files = 0;
	for (size_t d = 0; d < 2; d++) {
		DIR *dir = opendir(dirs[d]);
		if (!dir)
			skip();
		struct dirent *e;
		while ((e = readdir(dir))) {
			if (e->d_name[0] == '.')
				continue;
			char path[1024];
			snprintf(path, sizeof(path), "%s/%s", dirs[d], e->d_name);
			rva_trace *t = load(path);
			assert_true(t->nmethods > 0);
			rva_mstat *st;
			assert_int_equal(rva_method_stats(t, &st), 0);
			free(st);
			rva_trace_free(t);
			files++;
		}
		closedir(dir);
	}
	assert_true(files >= 11);
}

static void test_textio_folded_hostile_lines_skipped(void **state)
{
	static const char in[] = "a;b 3\n;;; 2\nnoweight\nx -5\ny 99999999999999999999\n"
				 "z 1 2\n\n\r\n;a 1\n";
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_folded_import((const uint8_t *)in, sizeof(in) - 1, &t, &err), 0);
	rva_mstat *st;
	assert_int_equal(rva_method_stats(t, &st), 0);
	int64_t b = rva_method_find(t, "b");
	assert_true(b >= 0);
	assert_int_equal(st[b].self, 3);
	assert_int_equal(t->dropped, 3);
	free(st);
	rva_trace_free(t);
	static const char bad[] = "nothing here\n";
	assert_true(rva_folded_import((const uint8_t *)bad, sizeof(bad) - 1, &t, &err) < 0);
	assert_null(t);
}

static void test_textio_nanoscope_fixture_builds_tree(void **state)
{
	rva_trace *t = load(FIXTURES "/nanoscope-basic.txt");
	assert_string_equal(t->format, "nanoscope");
	assert_int_equal(t->threads[0].ncalls, 4);
	rva_mstat *st;
	assert_int_equal(rva_method_stats(t, &st), 0);
	int64_t oc = rva_method_find(t, "void android.app.Activity.onCreate(android.os.Bundle)");
	int64_t bind = rva_method_find(t, "void com.example.Main.bind(int)");
	assert_true(oc >= 0 && bind >= 0);
	assert_int_equal(st[oc].incl, 1000);
	assert_int_equal(st[oc].self, 1000 - 300 - 400);
	assert_int_equal(st[bind].calls, 2);
	assert_int_equal(st[bind].incl, 400); /* recursion once */
	free(st);
	rva_trace_free(t);
}

static void test_textio_nanoscope_damage_tolerated(void **state)
{
	rva_trace *t = load(FIXTURES "/nanoscope-damaged.txt");
	/* POP on an empty stack and 2 bad lines dropped; outer closed at EOF. */
	assert_int_equal(t->dropped, 3);
	assert_int_equal(t->threads[0].ncalls, 2);
	assert_int_equal(t->threads[0].calls[0].end, 30);
	rva_trace_free(t);
}

static rva_trace *capture_trace(void)
{
	capbuf c = {0};
	cb_header(&c, 100000, 1000000000, 0, 100000, 0x400000, 0);
	for (uint32_t i = 0; i < 50; i++) {
		cb_entry(&c, 0x1000, i * 2000);
		cb_entry(&c, 0x2000 + (i % 2) * 0x10, i * 2000 + 100);
		cb_exit(&c, i * 2000 + 1100);
		cb_exit(&c, i * 2000 + 1500);
	}
	cb_end_slots(&c);
	cb_symbol(&c, 0x1000, 0x1000, 0, "loop");
	cb_symbol(&c, 0x2000, 0x2000, 0, "even<T>");
	cb_symbol(&c, 0x2010, 0x2010, 0, "odd & \"quoted\"");
	cb_finish(&c);
	rva_trace *t;
	rva_error err;
	assert_int_equal(rva_capture_decode(c.b, c.len, &t, &err), 0);
	free(c.b);
	return t;
}

static void assert_same_stats(const rva_trace *a, const rva_trace *b, int64_t tolerance)
{
	rva_mstat *sa, *sb;
	assert_int_equal(rva_method_stats(a, &sa), 0);
	assert_int_equal(rva_method_stats(b, &sb), 0);
	for (size_t i = 0; i < a->nmethods; i++) {
		if (!sa[i].calls)
			continue;
		int64_t j = rva_method_find(b, a->names[i]);
		assert_true(j >= 0);
		assert_int_equal(sa[i].calls, sb[j].calls);
		assert_true(llabs(sa[i].incl - sb[j].incl) <= tolerance);
	}
	free(sa);
	free(sb);
}

static void test_textio_nanoscope_round_trip_exact(void **state)
{
	rva_trace *t = capture_trace();
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(rva_export_nanoscope(f, t, 0), 0);
	fclose(f);
	assert_int_equal(rva_detect((const uint8_t *)buf, len), RVA_FMT_NANOSCOPE);
	rva_trace *u;
	rva_error err;
	assert_int_equal(rva_import((const uint8_t *)buf, len, &u, &err), 0);
	assert_same_stats(t, u, 0);
	free(buf);
	rva_trace_free(u);
	rva_trace_free(t);
}

static void test_textio_folded_round_trip_keeps_self_us(void **state)
{
	rva_trace *t = capture_trace();
	char *buf = folded_text(t);
	/* loop self = 50 × 500 ns = 25 µs; even/odd 25 × 1 µs each. */
	assert_non_null(strstr(buf, "loop 25\n"));
	assert_non_null(strstr(buf, "loop;even<T> 25\n"));
	assert_non_null(strstr(buf, "loop;odd & \"quoted\" 25\n"));
	rva_trace *u;
	rva_error err;
	assert_int_equal(rva_import((const uint8_t *)buf, strlen(buf), &u, &err), 0);
	rva_mstat *st;
	assert_int_equal(rva_method_stats(u, &st), 0);
	assert_int_equal(st[rva_method_find(u, "loop")].incl, 75);
	free(st);
	free(buf);
	rva_trace_free(u);
	rva_trace_free(t);
}

static void test_textio_svg_escapes_untrusted_names(void **state)
{
	rva_trace *t = rva_trace_new();
	rva_thread_add(t, 1, 1, NULL);
	const char *evil = "<script>alert('x')</script>&\"";
	int64_t id = rva_method_intern(t, evil, strlen(evil));
	rva_enter(t, 0, (uint32_t)id, 0);
	rva_exit(t, 0, RVA_ANY_METHOD, 1000);
	rva_trace_finish(t, INT64_MIN);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(rva_export_svg(f, t, "<title>"), 0);
	fclose(f);
	assert_null(strstr(buf, "<script>alert"));
	assert_non_null(strstr(buf, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"));
	assert_non_null(strstr(buf, "&lt;title&gt;"));
	assert_null(strstr(buf, "href"));
	assert_non_null(strstr(buf, "function zoom"));
	free(buf);
	rva_trace_free(t);
}

static void test_textio_detect_and_reject_unknown(void **state)
{
	static const char junk[] = "\x7f"
				   "ELF binary garbage";
	rva_trace *t;
	rva_error err = {{0}};
	assert_int_equal(rva_import((const uint8_t *)junk, sizeof(junk) - 1, &t, &err),
			 -EPROTONOSUPPORT);
	assert_true(err.msg[0]);
	assert_int_equal(rva_import_file("/nonexistent/x", &t, &err), -ENOENT);
	assert_int_equal(rva_detect((const uint8_t *)"RVCAP\0\r\n", 8), RVA_FMT_CAPTURE);
}

/* Peak-memory bounds are for the plain build; sanitizers' shadow memory
 * multiplies what the same allocations cost. */
#if RV_MEMORY_SANITIZED
#define MEM_FACTOR 4
#else
#define MEM_FACTOR 1
#endif

/* A weighted trace of depth nested calls "m0;m1;...", each weight 1 (its
 * own method per level, as a real deep recursion through distinct frames). */
static rva_trace *nested(size_t depth)
{
	size_t cap = depth * 12 + 16, n = 0;
	char *line = malloc(cap);
	rva_trace *t = NULL;
	rva_error err = {{0}};
	assert_non_null(line);
	for (size_t i = 0; i < depth; i++)
		n += (size_t)snprintf(line + n, cap - n, "%sm%zu", i ? ";" : "", i % 1000);
	n += (size_t)snprintf(line + n, cap - n, " 1\n");
	assert_int_equal(rva_folded_import((const uint8_t *)line, n, &t, &err), 0);
	free(line);
	return t;
}

/* What an export of t writes, counted in a child process: bytes written,
 * the export's return code, occurrences of needle, and the child's peak RSS
 * (KiB), measured around the export alone (the trace is built before). */
struct export_cost {
	long long bytes, needles;
	int rc;
	long peak_kib;
};

/* Occurrences of needle in buf[0..len). */
static size_t count_of(const char *buf, size_t len, const char *needle)
{
	size_t n = 0, k = strlen(needle);
	for (const char *p = buf; (p = memmem(p, (size_t)(buf + len - p), needle, k)) != NULL;
	     p += k)
		n++;
	return n;
}

static struct export_cost export_in_child(const rva_trace *t, int svg, const char *needle)
{
	struct export_cost c = {0};
	struct rusage ru;
	int fds[2], status;
	pid_t pid;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Measured from a fresh peak: the export's own memory. */
		char *buf = NULL;
		size_t len = 0;
		struct export_cost r = {0};
		FILE *f = tmpfile();
		struct rusage before, after;
		FILE *cr = fopen("/proc/self/clear_refs", "w");
		if (cr) { /* "5": the peak RSS restarts from the current RSS */
			fputs("5", cr);
			fclose(cr);
		}
		getrusage(RUSAGE_SELF, &before);
		r.rc = svg ? rva_export_svg(f, t, "deep") : rva_export_folded(f, t);
		getrusage(RUSAGE_SELF, &after);
		fflush(f);
		r.bytes = ftell(f);
		r.peak_kib = after.ru_maxrss - before.ru_maxrss;
		if (r.rc == 0 && r.bytes > 0 && r.bytes < (64 << 20)) {
			buf = malloc((size_t)r.bytes);
			rewind(f);
			len = fread(buf, 1, (size_t)r.bytes, f);
			r.needles = (long long)count_of(buf, len, needle);
		}
		if (write(fds[1], &r, sizeof r) != (ssize_t)sizeof r)
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, sizeof c), (ssize_t)sizeof c);
	close(fds[0]);
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return c;
}

/* Issue 18 item 2: the folded export allocated the sum of all chain depths
 * (a 99 KB upload cost 4.9 GB; 1 M nested calls: ~2 TB, -ENOMEM or the OOM
 * killer).  Now 1 M nested calls export 512 levels and one truncated line,
 * a few KB, from a tree cut at 512 levels (513 nodes, where the whole tree
 * had 1 M: ~70 MiB): under 48 MiB more peak than the trace (measured ~26
 * MiB, the walk's stack of 1 M open frames). */
static void test_textio_folded_1m_nested_calls_bounded(void **state)
{
	rva_trace *t = nested(1000000);
	struct export_cost c = export_in_child(t, 0, RVA_TRUNCATED_FRAME);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.needles, 1);
	assert_true(c.bytes < (8 << 20));
	print_message("folded: %lld bytes, peak +%ld KiB\n", c.bytes, c.peak_kib);
	assert_true(c.peak_kib < MEM_FACTOR * 48 * 1024);
	rva_trace_free(t);
}

/* Issue 18 item 2: 1 M nested calls gave a 274 MB flame graph.  Now 512
 * levels are drawn, the graph says the rest was truncated, 139 KB, from a
 * tree cut at 512 levels (the whole tree and its layout took ~85 MiB):
 * under 48 MiB more peak than the trace (measured ~15 MiB). */
static void test_textio_svg_1m_nested_calls_bounded(void **state)
{
	rva_trace *t = nested(1000000);
	struct export_cost c = export_in_child(t, 1, RVA_TRUNCATED_FRAME);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.needles, 1);
	assert_true(c.bytes < (1 << 20));
	print_message("svg: %lld bytes, peak +%ld KiB\n", c.bytes, c.peak_kib);
	assert_true(c.peak_kib < MEM_FACTOR * 48 * 1024);
	rva_trace_free(t);
}

/* Issue 18 item 2 (the flame graph's level of detail): 1000 stacks of 100
 * distinct frames, each stack 1.2 px wide, drew all 100 000 frames (~35 MB).
 * Frames narrower than a pixel merge into their parents and at most
 * RVA_SVG_MAX_FRAMES are drawn, whole levels: here 20 levels of 1000, and
 * the graph says 80 000 frames were merged. */
static void test_textio_svg_100k_wide_frames_capped_and_merged(void **state)
{
	size_t cap = 1000 * 100 * 8 + 16, n = 0;
	char *text = malloc(cap), note[96];
	rva_trace *t = NULL;
	rva_error err = {{0}};
	assert_non_null(text);
	for (size_t i = 0; i < 1000; i++) {
		n += (size_t)snprintf(text + n, cap - n, "w%zu", i);
		for (size_t d = 0; d < 99; d++)
			n += (size_t)snprintf(text + n, cap - n, ";m%zu", d);
		n += (size_t)snprintf(text + n, cap - n, " 1000\n");
	}
	/* Narrower than a pixel (0.0012 px): merged into w0. */
	n += (size_t)snprintf(text + n, cap - n, "w0;tiny 1\n");
	assert_int_equal(rva_folded_import((const uint8_t *)text, n, &t, &err), 0);
	free(text);
	struct export_cost c = export_in_child(t, 1, "<g class=\"f\"");
	assert_int_equal(c.rc, 0);
	print_message("svg: %lld bytes, %lld frames\n", c.bytes, c.needles);
	assert_int_equal(c.needles, RVA_SVG_MAX_FRAMES);
	assert_true(c.bytes < (8 << 20));
	snprintf(note, sizeof note, "%u frames merged into their parents",
		 1000 * 100 + 1 - RVA_SVG_MAX_FRAMES);
	c = export_in_child(t, 1, note);
	assert_int_equal(c.needles, 1);
	rva_trace_free(t);
}

/* What rva_chains_collect(t, 0: all) keeps, measured in a child process. */
struct chains_cost {
	int rc;
	size_t n, deepest, kept;
	int innermost_ok, sig_ok;
	long peak_kib;
};

/* Issue 18 item 2: every chain kept all its frames, so all the chains of n
 * nested calls took n²/2 method ids (20 000: 800 MB; 100 000: 20 GB).  Now
 * a chain keeps its innermost RVA_CHAIN_MAX_FRAMES (its depth and
 * signature still the whole path's): under 64 MiB more peak (~40 MiB of
 * ids plus the tree). */
static void test_textio_all_chains_of_20k_nested_calls_keep_512_frames(void **state)
{
	enum { N = 20000 };
	rva_trace *t = nested(N);
	struct chains_cost c = {0};
	struct rusage ru;
	int fds[2], status;
	pid_t pid;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct chains_cost r = {0};
		struct rusage before, after;
		rva_chains ch;
		FILE *cr = fopen("/proc/self/clear_refs", "w");
		if (cr) { /* "5": the peak RSS restarts from the current RSS */
			fputs("5", cr);
			fclose(cr);
		}
		getrusage(RUSAGE_SELF, &before);
		r.rc = rva_chains_collect(t, 0, &ch);
		getrusage(RUSAGE_SELF, &after);
		r.peak_kib = after.ru_maxrss - before.ru_maxrss;
		for (size_t i = 0; r.rc == 0 && i < ch.n; i++) {
			const rva_chain *k = &ch.v[i];
			if (k->depth < r.deepest)
				continue;
			/* m<i % 1000> at depth i (nested()): the innermost last. */
			uint32_t *full = malloc(k->depth * sizeof(*full));
			for (size_t d = 0; d < k->depth; d++)
				full[d] = t->threads[0].calls[d].method;
			r.deepest = k->depth;
			r.kept = k->nmethods;
			r.innermost_ok = memcmp(k->methods, full + k->depth - k->nmethods,
						k->nmethods * sizeof(*full)) == 0;
			r.sig_ok = rva_signature(t, full, k->depth) == k->signature;
			free(full);
		}
		r.n = r.rc == 0 ? ch.n : 0;
		if (write(fds[1], &r, sizeof r) != (ssize_t)sizeof r)
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, sizeof c), (ssize_t)sizeof c);
	close(fds[0]);
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	print_message("chains: %zu, deepest %zu keeping %zu, peak +%ld KiB\n", c.n, c.deepest,
		      c.kept, c.peak_kib);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.n, N);
	assert_int_equal(c.deepest, N);
	assert_int_equal(c.kept, RVA_CHAIN_MAX_FRAMES);
	assert_true(c.innermost_ok);
	assert_true(c.sig_ok);
	assert_true(c.peak_kib < MEM_FACTOR * 64 * 1024);
	rva_trace_free(t);
}

/* Names may be 64 KiB: 20 000 frames of them would make a 1.3 GB graph.
 * A frame shows its name cut to 240 bytes and then "…". */
static void test_textio_svg_64kib_name_shown_cut_to_240_bytes(void **state)
{
	size_t len = 64 * 1024 - 1;
	char *text = malloc(len + 16), *svg = NULL, *p;
	size_t svglen = 0;
	rva_trace *t = NULL;
	rva_error err = {{0}};
	FILE *f;
	assert_non_null(text);
	memset(text, 'a', len);
	memcpy(text + len, " 1000\n", 7);
	assert_int_equal(rva_folded_import((const uint8_t *)text, len + 6, &t, &err), 0);
	f = open_memstream(&svg, &svglen);
	assert_int_equal(rva_export_svg(f, t, NULL), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(p = strstr(svg, "<title>"));
	assert_int_equal(strspn(p + 7, "a"), 240);
	assert_memory_equal(p + 7 + 240, "…", strlen("…"));
	assert_true(svglen < 16384);
	free(svg);
	free(text);
	rva_trace_free(t);
}

/* Issue 16: a parent and two children sharing boundaries at an absolute
 * time where float64 µs lose nanoseconds.  The export is B/E events with
 * exact µs since the trace start, the first child's E before the second's
 * B, both children's E before the parent's, and the anomaly an instant. */
static rva_trace *siblings_at_large_ts(void)
{
	const int64_t t0 = 1700000000123456789;
	rva_trace *t = rva_trace_new();
	assert_int_equal(rva_thread_add(t, 7, 9, NULL), 0);
	int64_t p = rva_method_intern(t, "outer", 5), a = rva_method_intern(t, "a", 1),
		b = rva_method_intern(t, "b", 1);
	assert_int_equal(rva_enter(t, 0, (uint32_t)p, t0), 0);
	assert_int_equal(rva_enter(t, 0, (uint32_t)a, t0), 0);
	assert_int_equal(rva_exit(t, 0, RVA_ANY_METHOD, t0 + 1500), 0);
	assert_int_equal(rva_enter(t, 0, (uint32_t)b, t0 + 1500), 0);
	assert_int_equal(rva_exit(t, 0, RVA_ANY_METHOD, t0 + 3001), 0);
	assert_int_equal(rva_exit(t, 0, RVA_ANY_METHOD, t0 + 3001), 0);
	rva_trace_finish(t, INT64_MIN);
	t->has_anomaly = 1;
	t->anomaly_ns = t0 + 2000;
	t->anomaly_name = strdup("jank");
	assert_non_null(t->anomaly_name);
	return t;
}

static void test_textio_chrome_equal_ts_complete_events_callers_first_relative_ts(void **state)
{
	rva_trace *t = siblings_at_large_ts();
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(rva_export_chrome(f, t), 0);
	fclose(f);
	assert_string_equal(
		buf, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
		     /* Units of 1/1024 µs (textio.c): 3,001 ns is 3073/1024 µs. */
		     "{\"ph\":\"X\",\"pid\":7,\"tid\":9,\"ts\":0,\"dur\":3.0009765625,\"name\":"
		     "\"outer\"},\n"
		     "{\"ph\":\"X\",\"pid\":7,\"tid\":9,\"ts\":0,\"dur\":1.5,\"name\":\"a\"},\n"
		     "{\"ph\":\"X\",\"pid\":7,\"tid\":9,\"ts\":1.5,\"dur\":1.5009765625,\"name\":"
		     "\"b\"},\n"
		     "{\"ph\":\"i\",\"pid\":7,\"tid\":9,\"ts\":2,\"s\":\"g\",\"cat\":\"anomaly\","
		     "\"name\":\"jank\"}\n]}\n");
	/* It reads back as the same tree. */
	rva_trace *u;
	rva_error err;
	assert_int_equal(rva_import((const uint8_t *)buf, len, &u, &err), 0);
	assert_int_equal(u->threads[0].ncalls, 3);
	assert_int_equal(u->threads[0].calls[2].depth, 1);
	assert_int_equal(u->threads[0].calls[2].end - u->threads[0].calls[2].start, 1501);
	rva_trace_free(u);
	free(buf);
	rva_trace_free(t);
}

/* Issue 16: Android Studio and Perfetto refuse empty method columns. */
static void test_textio_android_method_lines_class_name_signature_never_empty(void **state)
{
	static const char *const names[] = {"parse_json",  "libfoo.so+0x1f",   "ns::Cls::m(int)",
					    "a.b.C.m(I)V", "(unknown caller)", "mod!sym"};
	rva_trace *t = rva_trace_new();
	assert_int_equal(rva_thread_add(t, 1, 1, NULL), 0);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		int64_t m = rva_method_intern(t, names[i], strlen(names[i]));
		assert_int_equal(rva_enter(t, 0, (uint32_t)m, (int64_t)i * 10), 0);
		assert_int_equal(rva_exit(t, 0, RVA_ANY_METHOD, (int64_t)i * 10 + 5), 0);
	}
	rva_trace_finish(t, INT64_MIN);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(rva_export_android(f, t), 0);
	fclose(f);
	assert_non_null(strstr(buf, "*methods\n"
				    "0x4\tnative\tparse_json\t()V\tunknown\n"
				    "0x8\tlibfoo.so\t+0x1f\t()V\tunknown\n"
				    "0xc\tns::Cls\tm\t(int)\tunknown\n"
				    "0x10\ta.b.C\tm\t(I)V\tunknown\n"
				    "0x14\tnative\t(unknown caller)\t()V\tunknown\n"
				    "0x18\tmod\tsym\t()V\tunknown\n"
				    "*end\n"));
	free(buf);
	rva_trace_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_textio_folded_encodings_import_identically),
		cmocka_unit_test(test_textio_every_folded_testdata_file_imports),
		cmocka_unit_test(test_textio_folded_hostile_lines_skipped),
		cmocka_unit_test(test_textio_nanoscope_fixture_builds_tree),
		cmocka_unit_test(test_textio_nanoscope_damage_tolerated),
		cmocka_unit_test(test_textio_nanoscope_round_trip_exact),
		cmocka_unit_test(test_textio_folded_round_trip_keeps_self_us),
		cmocka_unit_test(test_textio_svg_escapes_untrusted_names),
		cmocka_unit_test(test_textio_detect_and_reject_unknown),
		cmocka_unit_test(test_textio_folded_1m_nested_calls_bounded),
		cmocka_unit_test(test_textio_svg_1m_nested_calls_bounded),
		cmocka_unit_test(test_textio_svg_100k_wide_frames_capped_and_merged),
		cmocka_unit_test(test_textio_all_chains_of_20k_nested_calls_keep_512_frames),
		cmocka_unit_test(test_textio_svg_64kib_name_shown_cut_to_240_bytes),
		cmocka_unit_test(
			test_textio_chrome_equal_ts_complete_events_callers_first_relative_ts),
		cmocka_unit_test(test_textio_android_method_lines_class_name_signature_never_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
