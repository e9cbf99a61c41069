/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_timeline.c — the trace page's timeline call chart (the Hubble paper's
 * Fig. 1 view): time on x, call depth on y, one rectangle per call of the
 * captured thread, for the window before the anomaly (or the capture's end),
 * below them the thread's off-CPU intervals (OFFCPU records) by reason, and
 * below those the app's frames (FRAMES record), the late ones marked.
 *
 * Server-side SVG inside the HTML page, so it needs no script to show; the
 * page's app.js only adds click-to-select.  Method names are untrusted and
 * reach the document only through rvs_web_esc, in quoted attributes and
 * <title> text.  Output is bounded: calls narrower than a unit are merged
 * per depth into grey busy bars over adjacent units that count them (issue
 * 16: not "3599 too short to draw"), calls past MAX_RECTS rectangles and
 * calls MAX_DEPTH deep or deeper are left out and counted in the caption
 * (issue 18 item 2: truncation is shown); a name is
 * shown up to NAME_SHOWN bytes (names may be 64 KiB: 20 000 rectangles of
 * them made a 2.6 GB page).
 */
#include "web/web.h"
#include "base/text.h"
#include "web/web_int.h"
#include "pipeline/model_cache.h"
#include "base/params.h"
#include "http/route.h"
#include "pipeline/trace_load.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rearview/analysis.h"

#define W	   1200.0
#define ROW	   14
#define MAX_DEPTH  48
#define MAX_RECTS  20000
#define MIN_W	   0.2
#define WINDOW_NS  2000000000LL /* at most 2 s before the anomaly */
#define NAME_SHOWN 240

static const char *const PALETTE[] = {"#e57373", "#ffb74d", "#fff176", "#aed581", "#4fc3f7",
				      "#9575cd", "#f06292", "#4db6ac", "#dce775", "#90a4ae"};

/* name escaped, cut to NAME_SHOWN bytes (at a UTF-8 character boundary)
 * and then ended with "…". */
static void esc_name(FILE *f, const char *name)
{
	char cut[NAME_SHOWN + sizeof "…"];
	size_t n = strlen(name);
	if (n <= NAME_SHOWN) {
		rvs_web_esc(f, name);
		return;
	}
	n = NAME_SHOWN;
	while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80)
		n--; /* not inside a character */
	memcpy(cut, name, n);
	memcpy(cut + n, "…", sizeof "…");
	rvs_web_esc(f, cut);
}

/* The calls narrower than a unit at one depth in adjacent units, merged:
 * from x0 to x1, n of them (0: none open). */
struct svg_bar {
	double x0, x1;
	size_t n;
};

/* Draws bar b at depth d if it holds calls, counts them into *merged and
 * *nbars and empties it; the rectangles drawn (0 or 1). */
static size_t bar_flush(FILE *f, struct svg_bar *b, uint32_t d, size_t *merged, size_t *nbars)
{
	if (!b->n)
		return 0;
	fprintf(f,
		"<rect class=\"busy\" x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\""
		" fill=\"#9e9e9e\" data-ms=\"–\" data-name=\"%zu calls narrower than a pixel\">"
		"<title>%zu calls narrower than a pixel</title></rect>",
		b->x0, d * ROW, b->x1 - b->x0 < 1.0 ? 1.0 : b->x1 - b->x0, ROW - 1, b->n, b->n);
	*merged += b->n;
	(*nbars)++;
	b->n = 0;
	return 1;
}

void web_timeline_svg(FILE *f, const struct rva_trace *t)
{
	web_timeline_svg_hl(f, t, NULL);
}

void web_timeline_svg_hl(FILE *f, const struct rva_trace *t, const char *highlight)
{
	const rva_thread *th;
	int64_t a, from, to, span;
	size_t shown = 0, hidden = 0, deep = 0, offshown = 0, offhidden = 0;
	size_t frshown = 0, frlate = 0, frhidden = 0;
	size_t calls = 0, merged = 0, nbars = 0;
	struct svg_bar bars[MAX_DEPTH] = {{0}};
	uint32_t maxd = 0;

	if (!t->nthreads || !t->threads[0].ncalls) {
		fputs("<p>The capture holds no calls.</p>", f);
		return;
	}
	th = &t->threads[0];
	a = t->has_anomaly ? t->anomaly_ns : t->end;
	from = a - WINDOW_NS > t->start ? a - WINDOW_NS : t->start;
	to = a > from ? a : t->end;
	if (to <= from)
		to = from + 1;
	span = to - from;
	for (size_t i = 0; i < th->ncalls; i++)
		if (th->calls[i].depth > maxd && th->calls[i].depth < MAX_DEPTH)
			maxd = th->calls[i].depth;
	fprintf(f,
		"<svg class=\"timeline\" id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\""
		" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"timeline\">",
		(int)W, (int)(maxd + 2 + (t->nframes > 0)) * ROW + 4);
	for (size_t i = 0; i < th->ncalls; i++) {
		const rva_call *k = &th->calls[i];
		int64_t s = k->start > from ? k->start : from;
		int64_t e = k->end < to ? k->end : to;
		double x, w;
		if (e <= s)
			continue;
		if (k->depth >= MAX_DEPTH) {
			deep++;
			continue;
		}
		x = (double)(s - from) * W / (double)span;
		w = (double)(e - s) * W / (double)span;
		if (shown >= MAX_RECTS) {
			hidden++;
			continue;
		}
		if (w < 1.0) {
			struct svg_bar *b = &bars[k->depth];
			if (b->n && (int64_t)x <= (int64_t)b->x1 + 1) {
				b->n++;
				if (x + w > b->x1)
					b->x1 = x + w;
				continue;
			}
			shown += bar_flush(f, b, k->depth, &merged, &nbars);
			*b = (struct svg_bar){x, x + w, 1};
			continue;
		}
		shown += bar_flush(f, &bars[k->depth], k->depth, &merged, &nbars);
		calls++;
		fprintf(f,
			"<rect%s x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" fill=\"%s\""
			" data-ms=\"%.3f\" data-name=\"",
			highlight && k->method < t->nmethods &&
					!strcmp(t->names[k->method], highlight)
				? " class=\"hl\" stroke=\"#000\" stroke-width=\"2\""
				: "",
			x, k->depth * ROW, w, ROW - 1, PALETTE[k->method % 10],
			(double)(k->end - k->start) / 1e6);
		esc_name(f, k->method < t->nmethods ? t->names[k->method] : "?");
		fputs("\"><title>", f);
		esc_name(f, k->method < t->nmethods ? t->names[k->method] : "?");
		fprintf(f, " (%.3f ms)</title></rect>", (double)(k->end - k->start) / 1e6);
		/* A label where it fits (~7 units per character, clipped). */
		if (w >= 40) {
			const char *name = k->method < t->nmethods ? t->names[k->method] : "?";
			int fit = (int)((w - 6) / 7);
			fprintf(f,
				"<text x=\"%.2f\" y=\"%u\" font-size=\"11\" "
				"font-family=\"monospace\""
				" pointer-events=\"none\">",
				x + 3, k->depth * ROW + ROW - 4);
			if ((int)strlen(name) <= fit) {
				rvs_web_esc(f, name);
			} else {
				char cut[256];
				snprintf(cut, sizeof cut, "%.*s..", fit > 2 ? fit - 2 : 0, name);
				rvs_web_esc(f, cut);
			}
			fputs("</text>", f);
		}
		shown++;
	}
	for (uint32_t d = 0; d < MAX_DEPTH; d++)
		shown += bar_flush(f, &bars[d], d, &merged, &nbars);
	/* The thread's off-CPU intervals in the row below the deepest calls,
	 * in the calls' budget of rectangles. */
	for (size_t i = 0; i < th->noffcpu; i++) {
		const rva_offcpu *v = &th->offcpu[i];
		int64_t s = v->from > from ? v->from : from;
		int64_t e = v->to < to ? v->to : to;
		const char *why = v->reason == RVA_OFF_PREEMPTED ? "preempted" : "blocked";
		double x, w;
		if (e <= s)
			continue;
		x = (double)(s - from) * W / (double)span;
		w = (double)(e - s) * W / (double)span;
		if (w < MIN_W || shown >= MAX_RECTS) {
			offhidden++;
			continue;
		}
		fprintf(f,
			"<rect class=\"offcpu\" x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\""
			" fill=\"%s\" data-ms=\"%.3f\" data-name=\"off-CPU (%s)\">"
			"<title>off-CPU (%s) %.3f ms</title></rect>",
			x, (maxd + 1) * ROW, w, ROW - 1,
			v->reason == RVA_OFF_PREEMPTED ? "#fb8c00" : "#607d8b",
			(double)(v->to - v->from) / 1e6, why, why, (double)(v->to - v->from) / 1e6);
		shown++;
		offshown++;
	}
	/* The app's frames in the row below that, the late ones red. */
	for (size_t i = 0; i < t->nframes; i++) {
		const rva_frame *v = &t->frames[i];
		int64_t s = v->start > from ? v->start : from;
		int64_t e = v->end < to ? v->end : to;
		double x, w;
		if (e < s || (e == s && v->end > v->start))
			continue;
		x = (double)(s - from) * W / (double)span;
		w = (double)(e - s) * W / (double)span;
		if (shown >= MAX_RECTS) {
			frhidden++;
			continue;
		}
		fprintf(f,
			"<rect class=\"frame%s\" x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\""
			" fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\" data-ms=\"%.3f\""
			" data-name=\"%s\"><title>%s %.3f ms</title></rect>",
			v->late ? " late" : "", x, (maxd + 2) * ROW, w < MIN_W ? MIN_W : w, ROW - 1,
			v->late ? "#d32f2f" : "#81c784", (double)(v->end - v->start) / 1e6,
			v->late ? "frame (late)" : "frame", v->late ? "frame (late)" : "frame",
			(double)(v->end - v->start) / 1e6);
		shown++;
		frshown++;
		frlate += v->late != 0;
	}
	if (t->has_anomaly && a >= from && a <= to)
		fprintf(f,
			"<line x1=\"%.2f\" x2=\"%.2f\" y1=\"0\" y2=\"%d\" stroke=\"#b00020\""
			" stroke-width=\"2\"><title>anomaly</title></line>",
			(double)(a - from) * W / (double)span,
			(double)(a - from) * W / (double)span,
			(int)(maxd + 2 + (t->nframes > 0)) * ROW + 4);
	fprintf(f,
		"</svg><p class=\"caption\">%.3f ms before the %s; %zu calls drawn, %zu more "
		"narrower than a pixel in %zu grey busy bars (the zoomable timeline above "
		"splits them)",
		(double)span / 1e6, t->has_anomaly ? "anomaly" : "end of the capture", calls,
		merged, nbars);
	if (hidden)
		fprintf(f, "; %zu calls past the %d rectangles drawn", hidden, MAX_RECTS);
	if (deep)
		fprintf(f, "; %zu calls below depth %d not shown", deep, MAX_DEPTH);
	if (th->noffcpu)
		fprintf(f,
			"; bottom row: the thread off the CPU (grey blocked, orange preempted), "
			"%zu intervals drawn, %zu too short or too many",
			offshown, offhidden);
	if (t->nframes)
		fprintf(f, "; frames row: %zu of the app's frames in this window, %zu late (red)%s",
			frshown, frlate, frhidden ? ", more past the rectangles drawn" : "");
	fputs(".</p>", f);
}

/* ---- the zoomable timeline's levels of detail (timeline.json) ------------- */

/* One drawn box: a call at least a pixel wide (n 1, its method and self
 * time), or a busy bar standing for the n calls narrower than a pixel at
 * one depth in adjacent pixel columns (method -1 when they differ, self
 * -1). */
struct lod_item {
	int64_t s, e, self;
	int64_t method;
	uint32_t depth;
	uint64_t n;
};

/* A busy bar still open at a depth: its item and its last pixel column. */
struct lod_open {
	size_t item; /* SIZE_MAX: none */
	int64_t col;
};

static int lod_push(struct lod_item **v, size_t *n, size_t *cap, struct lod_item it)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 1024;
		struct lod_item *p = realloc(*v, nc * sizeof *p);
		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = nc;
	}
	(*v)[(*n)++] = it;
	return 0;
}

/* An interval of a row below the calls (a frame, an off-CPU span) and
 * whether it is marked (a late frame, a preemption). */
struct lod_iv {
	int64_t s, e;
	int mark;
};

/* x - t->start, saturated: a frame's times are the app's (a hostile end
 * may be INT64_MAX) and are not clipped to the trace. */
static int64_t rel(const rva_trace *t, int64_t x)
{
	int64_t r;
	if (__builtin_sub_overflow(x, t->start, &r))
		return x > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* One item of a row: [start, end, marked, n], trace-relative. */
static int row_push(json_t *row, const rva_trace *t, int64_t s, int64_t e, int64_t mark, int64_t n)
{
	return json_array_append_new(row, json_pack("[IIII]", (json_int_t)rel(t, s),
						    (json_int_t)rel(t, e), (json_int_t)mark,
						    (json_int_t)n));
}

/* The intervals iv(t, 0..n) (sorted by start) overlapping [from, to] as a
 * JSON array of [start, end, marked, n], trace-relative and not clipped to
 * the range: an interval at least a pixel wide (its part in the range) as
 * itself (n 1, marked 0 or 1), the narrower ones in adjacent pixel columns
 * merged into one item from the first one's start to the latest end,
 * counting them (n) and the marked among them.  NULL when out of memory. */
static json_t *lod_row(const rva_trace *t, int64_t from, int64_t to, double scale, size_t n,
		       struct lod_iv (*iv)(const rva_trace *t, size_t i))
{
	struct {
		int64_t s, e, mark, n, col; /* n 0: no bar open */
	} bar = {0};
	json_t *row = json_array();
	int bad = !row;

	for (size_t i = 0; i < n && !bad; i++) {
		struct lod_iv v = iv(t, i);
		int64_t s = v.s > from ? v.s : from, e = v.e < to ? v.e : to;
		double x0, x1;

		/* Outside the range (one of no length counts at its time). */
		if (e < s || (e == s && v.e > v.s))
			continue;
		x0 = (double)(s - from) * scale;
		x1 = (double)(e - from) * scale;
		if (bar.n && (x1 - x0 >= 1.0 || (int64_t)x0 > bar.col + 1)) {
			bad |= row_push(row, t, bar.s, bar.e, bar.mark, bar.n);
			bar.n = 0;
		}
		if (x1 - x0 >= 1.0) {
			bad |= row_push(row, t, v.s, v.e, v.mark != 0, 1);
		} else if (bar.n) {
			bar.n++;
			bar.mark += v.mark != 0;
			if (v.e > bar.e)
				bar.e = v.e;
			if ((int64_t)x1 > bar.col)
				bar.col = (int64_t)x1;
		} else {
			bar.s = v.s;
			bar.e = v.e;
			bar.mark = v.mark != 0;
			bar.n = 1;
			bar.col = (int64_t)x1;
		}
	}
	if (bar.n && !bad)
		bad |= row_push(row, t, bar.s, bar.e, bar.mark, bar.n);
	if (bad) {
		json_decref(row);
		return NULL;
	}
	return row;
}

/* The app's frames, marked when late. */
static struct lod_iv frame_iv(const rva_trace *t, size_t i)
{
	return (struct lod_iv){t->frames[i].start, t->frames[i].end, t->frames[i].late != 0};
}

/* The captured thread's off-CPU intervals, marked when preempted. */
static struct lod_iv offcpu_iv(const rva_trace *t, size_t i)
{
	const rva_offcpu *v = &t->threads[0].offcpu[i];
	return (struct lod_iv){v->from, v->to, v->reason == RVA_OFF_PREEMPTED};
}

/* Writes the items as the JSON document (trace-relative times); NULL when
 * out of memory (never a document missing items). */
static json_t *lod_json(const rva_trace *t, int64_t from, int64_t to, unsigned width,
			const struct lod_item *v, size_t n, uint32_t maxd, uint64_t deep,
			uint64_t cut)
{
	json_t *doc = json_object(), *items = json_array(), *names = json_object();
	char key[24];
	int bad = 0; /* a member or item could not be added */

	if (!doc || !items || !names) {
		json_decref(doc);
		json_decref(items);
		json_decref(names);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		bad |= json_array_append_new(
			items,
			json_pack("[iIIIII]", (int)v[i].depth, (json_int_t)(v[i].s - t->start),
				  (json_int_t)(v[i].e - t->start), (json_int_t)v[i].method,
				  (json_int_t)v[i].n, (json_int_t)v[i].self));
		if (v[i].method >= 0) {
			snprintf(key, sizeof key, "%" PRId64, v[i].method);
			if (!json_object_get(names, key)) {
				const char *nm = t->names[v[i].method];
				char cut_name[NAME_SHOWN + sizeof "…"];
				json_t *jn;
				size_t len = strlen(nm);
				if (len > NAME_SHOWN) {
					len = NAME_SHOWN;
					while (len > 0 && ((unsigned char)nm[len] & 0xc0) == 0x80)
						len--;
				}
				snprintf(cut_name, sizeof cut_name, "%.*s%s", (int)len, nm,
					 nm[len] ? "…" : "");
				/* Names are untrusted: one that is not UTF-8 is
				 * named so, not dropped. */
				jn = json_string(cut_name);
				bad |= json_object_set_new(
					names, key, jn ? jn : json_string("(name not UTF-8)"));
			}
		}
	}
	bad |= json_object_set_new(doc, "start", json_integer(0));
	bad |= json_object_set_new(doc, "end", json_integer(t->end - t->start));
	bad |= json_object_set_new(doc, "from", json_integer(from - t->start));
	bad |= json_object_set_new(doc, "to", json_integer(to - t->start));
	bad |= json_object_set_new(doc, "width", json_integer(width));
	bad |= json_object_set_new(doc, "anomaly",
				   t->has_anomaly ? json_integer(t->anomaly_ns - t->start)
						  : json_null());
	/* Where the anomaly is drawn (pixels from the left), null when it
	 * is outside the range. */
	bad |= json_object_set_new(
		doc, "anomaly_x",
		t->has_anomaly && t->anomaly_ns >= from && t->anomaly_ns <= to
			? json_real((double)(t->anomaly_ns - from) * width / (double)(to - from))
			: json_null());
	bad |= json_object_set_new(doc, "depth", json_integer(maxd));
	bad |= json_object_set_new(doc, "deep", json_integer((json_int_t)deep));
	bad |= json_object_set_new(doc, "cut", json_integer((json_int_t)cut));
	bad |= json_object_set_new(doc, "names", names);
	bad |= json_object_set_new(doc, "items", items);
	/* The rows below the calls: null when the capture has no such record,
	 * so a view without any in its range still keeps the row. */
	{
		const rva_thread *th = t->nthreads ? &t->threads[0] : NULL;
		double scale = (double)width / (double)(to - from);
		json_t *fr = t->nframes ? lod_row(t, from, to, scale, t->nframes, frame_iv)
					: json_null();
		json_t *off = th && th->noffcpu
				      ? lod_row(t, from, to, scale, th->noffcpu, offcpu_iv)
				      : json_null();
		bad |= !fr || !off;
		bad |= json_object_set_new(doc, "frames", fr);
		bad |= json_object_set_new(doc, "offcpu", off);
	}
	if (bad) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

int web_timeline_lod(const rva_trace *t, int64_t from, int64_t to, unsigned width, json_t **out)
{
	struct lod_open open[LOD_MAX_DEPTH];
	size_t parent[LOD_MAX_DEPTH]; /* the item of the last call at each depth */
	struct lod_item *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t deep = 0, cut = 0;
	uint32_t maxd = 0;
	const rva_thread *th;
	double scale;

	assert(width >= 1 && width <= LOD_MAX_WIDTH && from < to);
	*out = NULL;
	for (size_t d = 0; d < LOD_MAX_DEPTH; d++) {
		open[d].item = SIZE_MAX;
		parent[d] = SIZE_MAX;
	}
	scale = (double)width / (double)(to - from);
	th = t->nthreads ? &t->threads[0] : NULL;
	for (size_t i = 0; th && i < th->ncalls; i++) {
		const rva_call *k = &th->calls[i];
		uint32_t d = k->depth;
		int64_t s = k->start > from ? k->start : from;
		int64_t e = k->end < to ? k->end : to;
		double x0, x1;

		if (d > 0 && d - 1 < LOD_MAX_DEPTH && parent[d - 1] != SIZE_MAX)
			v[parent[d - 1]].self -= k->end - k->start;
		if (d < LOD_MAX_DEPTH)
			parent[d] = SIZE_MAX;
		/* Outside the range, or ending where it begins. */
		if (k->start >= to || k->end < from || (k->end == from && k->start < from))
			continue;
		if (d >= LOD_MAX_DEPTH) {
			deep++;
			continue;
		}
		if (d > maxd)
			maxd = d;
		x0 = (double)(s - from) * scale;
		x1 = (double)(e - from) * scale;
		if (n >= LOD_MAX_ITEMS) {
			cut++;
			continue;
		}
		if (x1 - x0 >= 1.0) {
			open[d].item = SIZE_MAX;
			parent[d] = n;
			if (lod_push(&v, &n, &cap,
				     (struct lod_item){s, e, k->end - k->start, k->method, d, 1}))
				goto nomem;
			continue;
		}
		if (open[d].item != SIZE_MAX && (int64_t)x0 <= open[d].col + 1) {
			struct lod_item *b = &v[open[d].item];
			b->n++;
			if (e > b->e)
				b->e = e;
			if (b->method != (int64_t)k->method)
				b->method = -1;
			b->self = -1; /* its calls' children are not subtracted */
			if ((int64_t)x1 > open[d].col)
				open[d].col = (int64_t)x1;
			continue;
		}
		/* A new bar: while it stands for this one call, it has its
		 * self time. */
		open[d].item = n;
		open[d].col = (int64_t)x1;
		parent[d] = n;
		if (lod_push(&v, &n, &cap,
			     (struct lod_item){s, e, k->end - k->start, k->method, d, 1}))
			goto nomem;
	}
	*out = lod_json(t, from, to, width, v, n, maxd, deep, cut);
	free(v);
	return *out ? 0 : -ENOMEM;
nomem:
	free(v);
	return -ENOMEM;
}

/* ---- butterfly ------------------------------------------------------------- */

struct bf_row {
	uint64_t calls;
	int64_t ns;
};

static int cmp_bf(const void *x, const void *y)
{
	const struct bf_row *a = *(struct bf_row *const *)x, *b = *(struct bf_row *const *)y;
	return a->ns < b->ns ? 1 : a->ns > b->ns ? -1 : 0;
}

#define BF_ROWS 50 /* callers and callees listed at most */

/* rows[0..nm] (nm: the "(root)" caller) as a JSON array, largest first. */
static json_t *bf_json(const rva_trace *t, struct bf_row *rows, size_t nm)
{
	struct bf_row **order = malloc((nm + 1) * sizeof *order);
	json_t *a = json_array();
	size_t k = 0;

	if (!order || !a) {
		free(order);
		json_decref(a);
		return NULL;
	}
	for (size_t i = 0; i <= nm; i++)
		if (rows[i].calls)
			order[k++] = &rows[i];
	qsort(order, k, sizeof *order, cmp_bf);
	for (size_t i = 0; i < k && i < BF_ROWS; i++) {
		size_t id = (size_t)(order[i] - rows);
		/* Not checked as UTF-8: this document is read, never dumped
		 * (the HTML page escapes what it shows). */
		const char *name = id == nm ? "(root)" : t->names[id];
		json_array_append_new(a, json_pack("{sosIsI}", "method",
						   json_stringn_nocheck(name, strlen(name)),
						   "calls", (json_int_t)order[i]->calls, "incl_ns",
						   (json_int_t)order[i]->ns));
	}
	free(order);
	return a;
}

int web_butterfly(const rva_trace *t, const char *method, json_t **out)
{
	int64_t mid = rva_method_find(t, method), incl = 0, self = 0, mdepth = -1;
	const rva_thread *th = t->nthreads ? &t->threads[0] : NULL;
	size_t nm = t->nmethods, sdepth = 64;
	struct bf_row *callers, *callees;
	uint32_t *stack;
	uint64_t calls = 0;
	json_t *cr, *ce;

	*out = NULL;
	if (mid < 0)
		return -ENOENT;
	callers = calloc(nm + 1, sizeof *callers);
	callees = calloc(nm + 1, sizeof *callees);
	stack = malloc(sdepth * sizeof *stack);
	if (!callers || !callees || !stack)
		goto nomem;
	for (size_t i = 0; th && i < th->ncalls; i++) {
		const rva_call *k = &th->calls[i];
		int64_t dur = k->end - k->start;
		uint32_t up;
		if (k->depth >= sdepth) {
			uint32_t *p = realloc(stack, (size_t)(k->depth + 1) * 2 * sizeof *p);
			if (!p)
				goto nomem;
			stack = p;
			sdepth = (size_t)(k->depth + 1) * 2;
		}
		stack[k->depth] = k->method;
		if (mdepth >= 0 && (int64_t)k->depth <= mdepth)
			mdepth = -1; /* the outermost open call of method ended */
		up = k->depth ? stack[k->depth - 1] : (uint32_t)nm;
		if (k->method == (uint32_t)mid) {
			calls++;
			self += dur;
			callers[up].calls++;
			callers[up].ns += dur;
			if (mdepth < 0) {
				incl += dur;
				mdepth = k->depth;
			}
		}
		if (k->depth && up == (uint32_t)mid) {
			self -= dur;
			callees[k->method].calls++;
			callees[k->method].ns += dur;
		}
	}
	cr = bf_json(t, callers, nm);
	ce = bf_json(t, callees, nm);
	if (cr && ce)
		*out = json_pack("{sosIsIsIsoso}", "method",
				 json_stringn_nocheck(t->names[mid], strlen(t->names[mid])),
				 "calls", (json_int_t)calls, "incl_ns", (json_int_t)incl, "self_ns",
				 (json_int_t)self, "callers", cr, "callees", ce);
	else {
		json_decref(cr);
		json_decref(ce);
	}
	free(callers);
	free(callees);
	free(stack);
	return *out ? 0 : -ENOMEM;
nomem:
	free(callers);
	free(callees);
	free(stack);
	return -ENOMEM;
}

/* ---- the endpoints ------------------------------------------------------------ */

/* A JSON answer: doc (stolen) with status. */
static void json_reply(struct web_ctx *c, int status, json_t *doc)
{
	char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	free(c->r->body);
	c->r->body = s;
	c->r->len = s ? strlen(s) : 0;
	c->r->status = s ? status : 500;
	c->r->content_type = "application/json";
}

static void json_error(struct web_ctx *c, int status, const char *msg, const char *param)
{
	json_t *e = json_pack("{ss}", "error", msg);
	if (e && param)
		json_object_set_new(e, "parameter", json_string(param));
	json_reply(c, status, e);
}

/* Parameter name as a decimal integer in [lo, hi] into *v (kept when
 * absent); 0, or -EINVAL. */
static int int_param(const char *query, const char *name, int64_t lo, int64_t hi, int64_t *v)
{
	char buf[32];
	int64_t x;
	int rc = rvs_query_param(query, name, buf, sizeof buf);
	if (rc == 0)
		return 0;
	if (rc < 0 || !buf[0] || buf[0] == '-' || buf[0] == '+' || buf[0] == ' ')
		return -EINVAL;
	if (rvs_parse_i64(buf, &x) || x < lo || x > hi)
		return -EINVAL;
	*v = x;
	return 0;
}

/* The cached trace of id, or the error answered (JSON or page) and -1. */
static int trace_of(struct web_ctx *c, const char *id, int json, const rva_trace **t,
		    struct rvs_mentry **ref)
{
	int rc = rvs_trace_id_ok(id, strlen(id)) ? rvs_trace_acquire(c->cfg, id, t, ref) : -ENOENT;
	if (rc == 0)
		return 0;
	if (json)
		json_error(c, rc == -ENOENT ? 404 : 500,
			   rc == -ENOENT ? "no decoded capture for this trace" : "load failed",
			   NULL);
	else
		web_error(c, rc == -ENOENT ? 404 : 500,
			  rc == -ENOENT ? "no decoded capture for this trace" : "load failed");
	return -1;
}

int web_timeline_query(const rva_trace *t, const char *query, json_t **out, const char **bad)
{
	int64_t span = t->end > t->start ? t->end - t->start : 1, from = 0, to = span, width = 1200;

	*out = NULL;
	*bad = NULL;
	if (int_param(query, "width", 1, LOD_MAX_WIDTH, &width))
		*bad = "width";
	else if (int_param(query, "from", 0, span - 1, &from))
		*bad = "from";
	else if (int_param(query, "to", from + 1, span, &to))
		*bad = "to";
	if (*bad)
		return -EINVAL;
	return web_timeline_lod(t, t->start + from, t->start + to, (unsigned)width, out) ? -ENOMEM
											 : 0;
}

static void web_timeline_json(struct web_ctx *c, const char *id)
{
	struct rvs_mentry *ref;
	const rva_trace *t;
	const char *bad;
	json_t *doc;
	int rc;

	if (trace_of(c, id, 1, &t, &ref))
		return;
	/* Parameter names are checked by the dispatcher (route.c). */
	rc = web_timeline_query(t, c->req->query, &doc, &bad);
	rvs_trace_release(ref);
	if (rc == -EINVAL && strcmp(bad, "width") == 0)
		return json_error(c, 400, "width must be an integer from 1 to 4096", "width");
	if (rc == -EINVAL && strcmp(bad, "from") == 0)
		return json_error(c, 400, "from must be an integer ns offset inside the trace",
				  "from");
	if (rc == -EINVAL)
		return json_error(c, 400,
				  "to must be an integer ns offset after from, inside the trace",
				  "to");
	if (rc)
		return json_error(c, 500, "out of memory", NULL);
	json_reply(c, 200, doc);
}

/* One butterfly table: rows of {method, calls, incl_ns}, each method a
 * link to its own butterfly in trace id. */
static void bf_table(struct web_ctx *c, const char *id, const char *tid, json_t *rows)
{
	size_t i;
	json_t *row;
	fprintf(c->f,
		"<table id=\"%s\"><tr><th>Method</th><th>Calls</th><th>Inclusive ms</th></tr>",
		tid);
	json_array_foreach(rows, i, row)
	{
		const char *m = json_string_value(json_object_get(row, "method"));
		fputs("<tr><td>", c->f);
		if (strcmp(m, "(root)") == 0) {
			fputs("(root)", c->f);
		} else {
			fprintf(c->f, "<a href=\"/traces/%s/butterfly?method=", id);
			rvs_web_urlenc(c->f, m);
			fputs("\">", c->f);
			esc_name(c->f, m);
			fputs("</a>", c->f);
		}
		fprintf(c->f, "</td><td class=\"n\">%" PRId64 "</td><td class=\"n\">%.3f</td></tr>",
			(int64_t)json_integer_value(json_object_get(row, "calls")),
			(double)json_integer_value(json_object_get(row, "incl_ns")) / 1e6);
	}
	fputs("</table>", c->f);
}

static void web_butterfly_page(struct web_ctx *c, const char *id)
{
	struct rvs_mentry *ref;
	const rva_trace *t;
	char method[1024];
	json_t *doc;
	int rc;

	/* Parameter names are checked by the dispatcher (route.c). */
	if (rvs_query_param(c->req->query, "method", method, sizeof method) != 1 || !method[0])
		return web_error(c, 400, "the method parameter names a method of the trace");
	if (trace_of(c, id, 0, &t, &ref))
		return;
	rc = web_butterfly(t, method, &doc);
	rvs_trace_release(ref);
	if (rc)
		return web_error(c, rc == -ENOENT ? 404 : 500,
				 rc == -ENOENT ? "no such method in this trace" : "out of memory");
	/* id is a valid trace id (trace_of). */
	web_page_begin(c, "butterfly");
	fprintf(c->f, "<p><a href=\"/traces/%s\">%s</a></p><h2>Butterfly of <code>", id, id);
	esc_name(c->f, method);
	fprintf(c->f,
		"</code></h2><table class=\"meta\" id=\"bf-self\"><tr><th>Calls</th>"
		"<td class=\"n\">%" PRId64 "</td></tr><tr><th>Inclusive ms</th>"
		"<td class=\"n\">%.3f</td></tr><tr><th>Self ms</th><td class=\"n\">%.3f</td></tr>"
		"</table><h3>Callers</h3>",
		(int64_t)json_integer_value(json_object_get(doc, "calls")),
		(double)json_integer_value(json_object_get(doc, "incl_ns")) / 1e6,
		(double)json_integer_value(json_object_get(doc, "self_ns")) / 1e6);
	bf_table(c, id, "bf-callers", json_object_get(doc, "callers"));
	fputs("<h3>Callees</h3>", c->f);
	bf_table(c, id, "bf-callees", json_object_get(doc, "callees"));
	json_decref(doc);
	web_page_end(c, 200);
}

void rvs_web_trace_timeline(struct rvs_call *call)
{
	char id[40];
	if (web_trace_id(call, id) == 0)
		web_timeline_json(call->ctx, id);
}

void rvs_web_trace_butterfly(struct rvs_call *call)
{
	char id[40];
	if (web_trace_id(call, id) == 0)
		web_butterfly_page(call->ctx, id);
}
