/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_timeline.c — `make bench`: issue 16 question 5's figures for the
 * zoomable timeline on a 1.4 M-call capture built with the capture fixture
 * (tests/rvtrace/capbuild.h), in process: the decode a first open pays,
 * the cache's miss and hit (model_cache.c), the static SVG the page still
 * draws, and timeline.json's level of detail for the whole trace and for
 * zoomed ranges.  Prints the figures (server/BENCHMARKS-web.md); asserts
 * only what it builds (the call count), never a time.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capbuild.h"
#include "pipeline/model_cache.h"
#include "rearview/analysis.h"
#include "web/web_int.h"

#define BLOCKS 350000u /* 4 calls each: 1.4 M calls */

static capbuf g_cap;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Blocks of outer(a(), b(c())) with 1 µs steps. */
static void build(capbuf *c)
{
	uint64_t t = 1ull << 32;
	cb_header(c, 0, 1000000000, 0, 1000000000000ull, 0x400000, 0);
	for (unsigned i = 0; i < BLOCKS; i++) {
		cb_entry(c, 0x1000, (uint32_t)(t += 1000));
		cb_entry(c, 0x1010 + 16 * (i % 32), (uint32_t)(t += 1000));
		cb_exit(c, (uint32_t)(t += 1000));
		cb_entry(c, 0x1300, (uint32_t)(t += 1000));
		cb_entry(c, 0x1310 + 16 * (i % 8), (uint32_t)(t += 1000));
		cb_exit(c, (uint32_t)(t += 1000));
		cb_exit(c, (uint32_t)(t += 1000));
		cb_exit(c, (uint32_t)(t += 1000));
	}
	cb_u64at(c, 16, t + 10);
	cb_end_slots(c);
	for (unsigned m = 0; m < 64; m++) {
		char name[64];
		snprintf(name, sizeof name, "com.example.Service.method%02u(int)", m);
		cb_symbol(c, 0x1000 + 16 * m, 0x1000 + 16 * m, 0, name);
	}
	cb_finish(c);
}

static int load(void *arg, const char *id, rva_trace **out)
{
	rva_error err;
	(void)arg;
	(void)id;
	return rva_capture_decode(g_cap.b, g_cap.len, out, &err);
}

/* One level of detail: ms taken, items, JSON bytes. */
static void lod(const rva_trace *t, int64_t from, int64_t to, const char *what)
{
	double t0 = now_ms(), t1;
	json_t *doc = NULL;
	char *s;
	int rc = web_timeline_lod(t, from, to, 1200, &doc);
	assert(rc == 0);
	s = json_dumps(doc, JSON_COMPACT);
	t1 = now_ms();
	printf("timeline.json %-28s %8.1f ms  %7zu boxes  %8zu bytes\n", what, t1 - t0,
	       json_array_size(json_object_get(doc, "items")), s ? strlen(s) : 0);
	free(s);
	json_decref(doc);
}

int main(void)
{
	struct rvs_mcache *c;
	struct rvs_mentry *r1, *r2;
	const rva_trace *t, *t2;
	char *svg = NULL;
	size_t svglen = 0;
	double t0, t1;
	FILE *f;
	int64_t span;

	build(&g_cap);
	if (rvs_mcache_new((size_t)256 << 20, &c))
		return 1;
	t0 = now_ms();
	if (rvs_mcache_get(c, "t-1", load, NULL, &r1, &t))
		return 1;
	t1 = now_ms();
	assert(t->threads[0].ncalls == 4 * BLOCKS);
	printf("capture %zu bytes, %zu calls, decoded model %zu bytes\n", g_cap.len,
	       t->threads[0].ncalls, rvs_trace_bytes(t));
	printf("first open (cache miss: decode)   %8.1f ms\n", t1 - t0);
	t0 = now_ms();
	rvs_mcache_get(c, "t-1", load, NULL, &r2, &t2);
	t1 = now_ms();
	printf("second open (cache hit)           %8.3f ms\n", t1 - t0);
	rvs_mcache_release(c, r2);
	f = open_memstream(&svg, &svglen);
	t0 = now_ms();
	web_timeline_svg(f, t);
	fclose(f);
	t1 = now_ms();
	printf("static SVG timeline               %8.1f ms  %zu bytes\n", t1 - t0, svglen);
	free(svg);
	span = t->end - t->start;
	lod(t, t->start, t->end, "whole trace");
	lod(t, t->start + span / 2, t->start + span / 2 + span / 100, "1 % of the trace");
	lod(t, t->start + span / 2, t->start + span / 2 + span / 100000, "0.001 % of the trace");
	rvs_mcache_release(c, r1);
	rvs_mcache_free(c);
	free(g_cap.b);
	return 0;
}
