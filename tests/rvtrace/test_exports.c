/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_exports.c — the Chrome JSON and Perfetto exports of a capture whose
 * calls share timestamps by the hundred (capbuild.h's cb_ties_example:
 * exact synthetic durations).
 *
 * Chrome JSON: read back the way speedscope 1.25's importer reads it
 * (src/import/trace-event.ts): B events and the begins of X events in one
 * queue, E events and the ends of X events in another, X events sorted by
 * ts then longest first, each queue stably sorted by ts; at equal ts the B
 * queue goes first only when its front names the same frame as the E
 * queue's front (a zero-length event), and an E closes the top frame if an
 * E of equal ts names it, is dropped if it names another.  Every self time
 * must come out exact, and the file must read back through rvtrace's own
 * importer as the same calls.
 *
 * Perfetto: the anomaly as an instant and the upload's app, version,
 * device and model, decoded by an independent decoder (protoc --decode
 * against tracer/analysis/proto/rvperfetto.proto, Perfetto's field
 * numbers) with no field left unknown.  The field numbers were checked
 * against Perfetto's own schema: the export, written to a file, decodes
 * with `protoc -I . --decode=perfetto.protos.Trace
 * protos/perfetto/trace/trace.proto` in a google/perfetto checkout
 * (ec5d16b14b) into track_descriptor {process {pid, process_name,
 * process_labels}} and track_event {type: TYPE_INSTANT, debug_annotations
 * {name, string_value}} as intended.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "capbuild.h"
#include "rearview/analysis.h"

static rva_trace *ties(void)
{
	capbuf c = {0};
	rva_trace *t = NULL;
	rva_error err = {{0}};

	cb_ties_example(&c);
	if (rva_import(c.b, c.len, &t, &err) < 0)
		fail_msg("capture: %s", err.msg);
	free(c.b);
	return t;
}

static char *export_of(int (*ex)(FILE *, const rva_trace *), const rva_trace *t, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	assert_non_null(f);
	assert_int_equal(ex(f, t), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* ---- speedscope's reading of Chrome JSON ---- */

typedef struct sev {
	double ts, dur;
	const char *name;
	size_t seq; /* order of arrival in its queue: the stable sort's tie-break */
	char ph;
} sev;

static int cmp_x(const void *x, const void *y)
{
	const sev *a = x, *b = y;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->dur != b->dur)
		return a->dur > b->dur ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cmp_ts(const void *x, const void *y)
{
	const sev *a = x, *b = y;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

#define MAXN 64

/* The index of `name` in names[], added (times 0) when new. */
static size_t name_index(const char **names, double *self, double *total, size_t *nnames,
			 const char *name)
{
	size_t k = 0;
	while (k < *nnames && strcmp(names[k], name))
		k++;
	assert_true(k < MAXN);
	if (k == *nnames) {
		names[k] = name;
		self[k] = 0;
		if (total)
			total[k] = 0;
		(*nnames)++;
	}
	return k;
}

/* Self time (µs) per name of events[] as speedscope builds its call tree;
 * names[] gets the distinct names (at most MAXN); total[], when not NULL,
 * each name's total time (frames left open close at the last event, as
 * speedscope closes them at the end of the profile). */
static void speedscope_times(json_t *events, const char **names, double *self, double *total,
			     size_t *nnames)
{
	size_t n = json_array_size(events), nb = 0, ne = 0, nx = 0, i;
	sev *b = calloc(2 * n + 1, sizeof *b), *e = calloc(2 * n + 1, sizeof *e);
	sev *x = calloc(n + 1, sizeof *x);
	const char **stack = calloc(2 * n + 1, sizeof *stack);
	double *opened = calloc(2 * n + 1, sizeof *opened);
	size_t depth = 0, bi = 0, ei = 0;
	double last = 0;
	json_t *ev;

	assert_non_null(b);
	assert_non_null(e);
	assert_non_null(x);
	assert_non_null(stack);
	assert_non_null(opened);
	*nnames = 0;
	json_array_foreach(events, i, ev)
	{
		const char *ph = json_string_value(json_object_get(ev, "ph"));
		sev s = {json_number_value(json_object_get(ev, "ts")),
			 json_number_value(json_object_get(ev, "dur")),
			 json_string_value(json_object_get(ev, "name")), 0, ph ? ph[0] : 0};
		if (s.ph == 'B')
			s.seq = nb, b[nb++] = s;
		else if (s.ph == 'E')
			s.seq = ne, e[ne++] = s;
		else if (s.ph == 'X')
			s.seq = nx, x[nx++] = s;
	}
	qsort(x, nx, sizeof *x, cmp_x);
	for (i = 0; i < nx; i++) {
		sev s = x[i];
		s.ph = 'B';
		s.seq = nb;
		b[nb++] = s;
		s.ph = 'E';
		s.ts += s.dur;
		s.seq = ne;
		e[ne++] = s;
	}
	qsort(b, nb, sizeof *b, cmp_ts);
	qsort(e, ne, sizeof *e, cmp_ts);
	while (bi < nb || ei < ne) {
		int take_b = ei == ne		    ? 1
			     : bi == nb		    ? 0
			     : b[bi].ts != e[ei].ts ? b[bi].ts < e[ei].ts
						    : !strcmp(b[bi].name, e[ei].name);
		double ts = take_b ? b[bi].ts : e[ei].ts;
		if (depth)
			self[name_index(names, self, total, nnames, stack[depth - 1])] += ts - last;
		last = ts;
		if (take_b) {
			opened[depth] = ts;
			stack[depth++] = b[bi++].name;
			continue;
		}
		/* An E of equal ts that names the top frame goes first. */
		for (size_t j = ei + 1; depth && j < ne && e[j].ts == e[ei].ts; j++)
			if (!strcmp(e[j].name, stack[depth - 1])) {
				sev tmp = e[ei];
				e[ei] = e[j];
				e[j] = tmp;
				break;
			}
		if (depth && !strcmp(e[ei].name, stack[depth - 1])) {
			depth--;
			if (total)
				total[name_index(names, self, total, nnames, stack[depth])] +=
					ts - opened[depth];
		}
		ei++;
	}
	while (depth--)
		if (total)
			total[name_index(names, self, total, nnames, stack[depth])] +=
				last - opened[depth];
	free(opened);
	free(b);
	free(e);
	free(x);
	free(stack);
}

static double self_of(const char **names, const double *self, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return self[i];
	return 0;
}

/* 400 events at 10 µs: speedscope's self times are the capture's, to the
 * nanosecond, and nothing stays open (which swallowed every later call
 * when zero-length calls were B/E pairs after a B of the same ts). */
/* A leaf that ends on the nanosecond its caller ends, and a call that
 * starts there: written as decimal microseconds, the leaf's ts + dur comes
 * out an ulp after its caller's end in float64 (400.273 + 0.362 =
 * 400.63500000000005 > 400.635), and speedscope then opens the next call
 * inside the leaf.  The export's times are exact binary fractions, so every
 * self time reads back to the nanosecond. */
static void test_exports_chrome_shared_end_nests_right_in_speedscope_reading(void **state)
{
	static const char in[] =
		"{\"traceEvents\":["
		"{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":400.635,\"name\":\"outer\"},"
		"{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":400.273,\"dur\":0.362,\"name\":\"leaf\"},"
		"{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":400.635,\"dur\":0.365,\"name\":\"after\"}"
		"]}";
	static const struct {
		const char *name;
		double us;
	} want[] = {{"outer", 400.273}, {"leaf", 0.362}, {"after", 0.365}};
	rva_trace *t;
	rva_error err = {{0}};
	size_t len, n;
	const char *names[MAXN];
	double self[MAXN], total[MAXN];
	json_error_t jerr;

	(void)state;
	assert_int_equal(rva_import((const uint8_t *)in, sizeof(in) - 1, &t, &err), 0);
	char *buf = export_of(rva_export_chrome, t, &len);
	json_t *doc = json_loadb(buf, len, 0, &jerr);
	assert_non_null(doc);
	speedscope_times(json_object_get(doc, "traceEvents"), names, self, total, &n);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		double got = self_of(names, self, n, want[i].name);
		double all = self_of(names, total, n, want[i].name);
		/* Units of 1/1024 µs: within one of the nanosecond. */
		if (got < want[i].us - 0.001 || got > want[i].us + 0.001)
			fail_msg("%s: self %.6f µs in speedscope's reading, the capture says %.3f",
				 want[i].name, got, want[i].us);
		/* The leaves hold nothing; the caller holds the leaf only. */
		double want_total = strcmp(want[i].name, "outer") ? want[i].us : 400.635;
		if (all < want_total - 0.001 || all > want_total + 0.001)
			fail_msg("%s: total %.6f µs in speedscope's reading, the capture says %.3f",
				 want[i].name, all, want_total);
	}
	json_decref(doc);

	/* rvtrace's own importer reads the nanoseconds back. */
	rva_trace *u;
	assert_int_equal(rva_import((const uint8_t *)buf, len, &u, &err), 0);
	assert_int_equal(u->threads[0].ncalls, t->threads[0].ncalls);
	for (size_t i = 0; i < t->threads[0].ncalls; i++) {
		assert_int_equal(u->threads[0].calls[i].start - u->start,
				 t->threads[0].calls[i].start - t->start);
		assert_int_equal(u->threads[0].calls[i].end - u->start,
				 t->threads[0].calls[i].end - t->start);
	}
	rva_trace_free(u);
	free(buf);
	rva_trace_free(t);
}

static void test_exports_chrome_equal_ts_self_times_exact_in_speedscope_reading(void **state)
{
	static const struct {
		const char *name;
		double us;
	} want[] = {{"measure", 991}, {"draw", 500}, {"idle", 999},
		    {"main", 509},    {"layout", 0}, {"noop", 0}};
	rva_trace *t = ties();
	size_t len, n;
	char *buf = export_of(rva_export_chrome, t, &len);
	json_error_t jerr;
	json_t *doc = json_loadb(buf, len, 0, &jerr);
	const char *names[MAXN];
	double self[MAXN];

	assert_non_null(doc);
	speedscope_times(json_object_get(doc, "traceEvents"), names, self, NULL, &n);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		double got = self_of(names, self, n, want[i].name);
		if (got < want[i].us - 1e-9 || got > want[i].us + 1e-9)
			fail_msg("%s: self %.3f µs in speedscope's reading, the capture says %.3f",
				 want[i].name, got, want[i].us);
	}
	/* The calls with a length are complete events of their exact length. */
	assert_non_null(strstr(buf, "{\"ph\":\"X\",\"pid\":42,\"tid\":43,\"ts\":9,\"dur\":991,"
				    "\"name\":\"measure\"}"));
	assert_non_null(strstr(buf, "{\"ph\":\"X\",\"pid\":42,\"tid\":43,\"ts\":1000,\"dur\":500,"
				    "\"name\":\"draw\"}"));
	json_decref(doc);

	/* rvtrace's own importer reads the same calls back. */
	rva_trace *u;
	rva_error err = {{0}};
	rva_mstat *a, *b;
	assert_int_equal(rva_import((const uint8_t *)buf, len, &u, &err), 0);
	assert_int_equal(u->threads[0].ncalls, t->threads[0].ncalls);
	assert_int_equal(rva_method_stats(t, &a), 0);
	assert_int_equal(rva_method_stats(u, &b), 0);
	for (size_t i = 0; i < t->nmethods; i++) {
		int64_t j = rva_method_find(u, t->names[i]);
		assert_true(j >= 0);
		assert_int_equal(a[i].calls, b[j].calls);
		assert_int_equal(a[i].incl, b[j].incl);
		assert_int_equal(a[i].self, b[j].self);
	}
	free(a);
	free(b);
	rva_trace_free(u);
	free(buf);
	rva_trace_free(t);
}

/* ---- Perfetto ---- */

/* protoc's text of the export of t with meta (NULL: rva_export_perfetto). */
static char *perfetto_text(const rva_trace *t, const rva_export_meta *meta)
{
	char dir[] = "/tmp/rv-exports-XXXXXX", path[64], txt[64], cmd[512];
	static char text[1 << 20];
	FILE *f;
	size_t n;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/t.pftrace", dir);
	snprintf(txt, sizeof txt, "%s/t.txt", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(meta ? rva_export_perfetto_meta(f, t, meta) : rva_export_perfetto(f, t),
			 0);
	assert_int_equal(fclose(f), 0);
	snprintf(cmd, sizeof cmd,
		 "protoc --proto_path=tracer/analysis/proto --decode=rvpf.Trace "
		 "rvperfetto.proto < %s > %s 2>&1",
		 path, txt);
	assert_int_equal(system(cmd), 0);
	f = fopen(txt, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof text - 1, f);
	text[n] = '\0';
	fclose(f);
	unlink(path);
	unlink(txt);
	rmdir(dir);
	/* Every field written is one of the schema's: protoc prints unknown
	 * ones by number. */
	for (char *p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		const char *q = p + strspn(p, " ");
		if (*q >= '0' && *q <= '9')
			fail_msg("unknown field in the export: %.40s", q);
	}
	return text;
}

/* The anomaly is an instant at its time on the "rearview" track of the
 * app's process, carrying app, version, device and model; the process
 * track names the app and has the rest as labels. */
static void test_exports_perfetto_anomaly_instant_and_origin(void **state)
{
	rva_trace *t = ties();
	const rva_export_meta meta = {"com.example.ties", "2.0.0", "d-0123", "pixel-web"};
	const char *text = perfetto_text(t, &meta), *at;
	char want[64];

	assert_true(t->has_anomaly);
	assert_non_null(at = strstr(text, "process {\n      pid: 42\n      process_name: "
					  "\"com.example.ties\"\n      process_labels: \"version "
					  "2.0.0\"\n      process_labels: \"device d-0123\"\n      "
					  "process_labels: \"model pixel-web\"\n    }"));
	assert_non_null(strstr(text, "uuid: 18446744069414584322\n    name: \"rearview\"\n    "
				     "parent_uuid: 18446744069414584321"));
	/* The instant: at the anomaly (the capture's clock is the calls'),
	 * its arguments first (protoc prints fields by number). */
	snprintf(want, sizeof want, "timestamp: %lld\n", (long long)t->anomaly_ns);
	assert_non_null(at = strstr(text, want));
	assert_non_null(strstr(at, "track_event {\n    debug_annotations {\n"
				   "      string_value: \"com.example.ties\"\n      name: \"app\"\n"
				   "    }\n    debug_annotations {\n      string_value: \"2.0.0\"\n"
				   "      name: \"version\"\n    }\n    debug_annotations {\n"
				   "      string_value: \"d-0123\"\n      name: \"device\"\n    }\n"
				   "    debug_annotations {\n      string_value: \"pixel-web\"\n"
				   "      name: \"model\"\n    }\n    type: 3\n"
				   "    track_uuid: 18446744069414584322\n    name: \"jank\"\n"));
	assert_int_equal(t->anomaly_ns - t->start, 1199000);
	/* Without metadata the anomaly is still marked. */
	text = perfetto_text(t, NULL);
	assert_non_null(strstr(text, "name: \"jank\""));
	assert_null(strstr(text, "debug_annotations"));
	rva_trace_free(t);
}

/* The app's frames are slices on a "frames" child track of the first
 * thread's track, the late ones named so; a frame overlapping the one
 * before starts at its end. */
static void test_exports_perfetto_frames_track(void **state)
{
	rva_trace *t = ties();
	const char *text, *at;
	char want[200];
	const int64_t s0 = t->start;

	(void)state;
	t->frames = calloc(3, sizeof(*t->frames));
	assert_non_null(t->frames);
	t->frames[0] = (rva_frame){.start = s0, .end = s0 + 16000, .tid = 43};
	t->frames[1] = (rva_frame){.start = s0 + 17000, .end = s0 + 60000, .tid = 43, .late = 1};
	t->frames[2] = (rva_frame){.start = s0 + 50000, .end = s0 + 70000, .tid = 43};
	t->nframes = 3;
	text = perfetto_text(t, NULL);
	assert_non_null(at = strstr(text, "uuid: 4294967305\n    name: \"frames\"\n    "
					  "parent_uuid: 1\n"));
	snprintf(want, sizeof want,
		 "timestamp: %lld\n  trusted_packet_sequence_id: 1\n  track_event {\n    type: 1\n "
		 "   track_uuid: 4294967305\n"
		 "    name: \"frame (late)\"\n",
		 (long long)(s0 + 17000));
	assert_non_null(at = strstr(at, want));
	snprintf(want, sizeof want,
		 "timestamp: %lld\n  trusted_packet_sequence_id: 1\n  track_event {\n    type: 2\n "
		 "   track_uuid: 4294967305\n",
		 (long long)(s0 + 60000));
	assert_non_null(at = strstr(at, want));
	/* The third starts where the late one ended. */
	snprintf(want, sizeof want,
		 "timestamp: %lld\n  trusted_packet_sequence_id: 1\n  track_event {\n    type: 1\n "
		 "   track_uuid: 4294967305\n"
		 "    name: \"frame\"\n",
		 (long long)(s0 + 60000));
	assert_non_null(strstr(at, want));
	rva_trace_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_exports_chrome_equal_ts_self_times_exact_in_speedscope_reading),
		cmocka_unit_test(test_exports_chrome_shared_end_nests_right_in_speedscope_reading),
		cmocka_unit_test(test_exports_perfetto_anomaly_instant_and_origin),
		cmocka_unit_test(test_exports_perfetto_frames_track),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
