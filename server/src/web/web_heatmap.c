/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_heatmap.c — the web UI's anomaly heatmap and the pages its path
 * leads through (server/WEB.md): /heatmap draws the JSON API's
 * /api/v1/heatmap reply (api/heatmap.c) as inline SVG, time received
 * across, anomaly duration up on a log scale, each cell shaded by its
 * count and a link to the merged flame graph of exactly its traces
 * (/aggregate with the cell's since/until and dur_min/dur_max, and the
 * range as range_since/range_until so that page can offer the diff
 * against the rest of the range); /static/heatmap.js lets a drag over
 * several cells open the flame graph of their box.  /heaviest lists the
 * captures of such a set where one frame is heaviest
 * (/api/v1/aggregate/heaviest), each a link to its timeline at the
 * anomaly with that frame's method highlighted.
 *
 * Every string from a reply or the request reaches the page through
 * rvs_web_esc / rvs_web_urlenc; output is bounded by the reply's cells
 * (at most RVS_HEATMAP_MAX_COLS × RVS_HEATMAP_ROWS) and rows.
 */
#include "base/params.h"
#include "http/reply.h"
#include "http/route.h"
#include "web/web.h"
#include "web/web_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define W      960.0
#define LEFT   80.0
#define TOP    10.0
#define BOTTOM 36.0
#define CELL_H 22.0

static int64_t ival(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static const char *sval(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* The request's parameter key, "" when absent. */
static void param(struct web_ctx *c, const char *key, char *out, size_t cap)
{
	if (rvs_query_param(c->req->query, key, out, cap) != 1)
		out[0] = '\0';
}

/* "&amp;NAME=VALUE" when value is set. */
static void amp_param(FILE *f, const char *name, const char *value)
{
	if (!value[0])
		return;
	fprintf(f, "&amp;%s=", name);
	rvs_web_urlenc(f, value);
}

static void amp_int(FILE *f, const char *name, int64_t v)
{
	fprintf(f, "&amp;%s=%lld", name, (long long)v);
}

/* A duration in ns as a short label ("2 ms", "500 µs", "1 s"). */
static void dur_label(FILE *f, int64_t ns)
{
	if (ns >= 1000000000)
		fprintf(f, "%g s", (double)ns / 1e9);
	else if (ns >= 1000000)
		fprintf(f, "%g ms", (double)ns / 1e6);
	else if (ns >= 1000)
		fprintf(f, "%g µs", (double)ns / 1e3);
	else
		fprintf(f, "%lld ns", (long long)ns);
}

static void time_label(FILE *f, int64_t t, int64_t width)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char s[32] = "?";
	if (gmtime_r(&tt, &tm))
		strftime(s, sizeof s, width < 86400 ? "%m-%d %H:00" : "%Y-%m-%d", &tm);
	fputs(s, f);
}

/* The page's app, kind and issue: the filters every set shares. */
static void common_params(struct web_ctx *c, FILE *f)
{
	static const char *const keys[] = {"app", "kind", "issue"};
	char v[256];
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		param(c, keys[i], v, sizeof v);
		amp_param(f, keys[i], v);
	}
}

static void form(struct web_ctx *c)
{
	static const char *const keys[] = {"app", "issue", "kind", "from", "to", "bucket"};
	char v[256];
	fputs("<form class=\"filters\" method=\"get\" action=\"/heatmap\">", c->f);
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		param(c, keys[i], v, sizeof v);
		fprintf(c->f, "<label>%s <input name=\"%s\" value=\"", keys[i], keys[i]);
		rvs_web_esc(c->f, v);
		fputs("\"></label> ", c->f);
	}
	fputs("<button type=\"submit\">Show</button></form>"
	      "<p class=\"caption\">from/to: unix seconds (received; default the last 30 days);"
	      " bucket: hour, day or week (default by range); kind: the anomaly kind's number or"
	      " name; issue: 16 hex digits.</p>",
	      c->f);
}

/* A cell's count as a fill: white to dark red on a log scale of max. */
static void fill(FILE *f, int64_t n, int64_t max)
{
	double v = max > 1 ? log((double)n) / log((double)max) : 1;
	int k = (int)lround(230 - 200 * v);
	fprintf(f, "rgb(%d,%d,%d)", 255 - (230 - k) / 4, k, k);
}

/* The heatmap's SVG: cells as links to their aggregate. */
static void draw(struct web_ctx *c, json_t *doc)
{
	json_t *cols = json_object_get(doc, "columns"), *rows = json_object_get(doc, "rows");
	json_t *cells = json_object_get(doc, "cells"), *cell;
	size_t nc = json_array_size(cols), nr = json_array_size(rows), i;
	int64_t max = ival(doc, "max_count"), width = ival(doc, "width_s");
	double cw = (W - LEFT) / (double)(nc ? nc : 1), h = TOP + nr * CELL_H + BOTTOM;
	size_t step = nc / 12 + 1;

	fprintf(c->f,
		"<svg class=\"heatmap\" id=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\""
		" viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" font-family=\"sans-serif\""
		" font-size=\"11\" data-from=\"%lld\" data-to=\"%lld\">",
		W, h, (long long)ival(doc, "from"), (long long)ival(doc, "to"));
	for (size_t k = 0; k < nr; k++) {
		json_t *r = json_array_get(rows, k);
		fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">≥ ", LEFT - 4,
			TOP + (double)(nr - k) * CELL_H - 6);
		dur_label(c->f, ival(r, "dur_min"));
		fputs("</text>", c->f);
	}
	for (size_t j = 0; j < nc; j += step) {
		fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\">", LEFT + (double)j * cw + 2,
			TOP + nr * CELL_H + 14);
		time_label(c->f, ival(json_array_get(cols, j), "since"), width);
		fputs("</text>", c->f);
	}
	json_array_foreach(cells, i, cell)
	{
		size_t j = (size_t)json_integer_value(json_array_get(cell, 0));
		size_t k = (size_t)json_integer_value(json_array_get(cell, 1));
		int64_t n = json_integer_value(json_array_get(cell, 2));
		json_t *col = json_array_get(cols, j), *row = json_array_get(rows, k);
		json_t *dmax = json_object_get(row, "dur_max");

		if (!col || !row)
			continue;
		fputs("<a class=\"cell\" href=\"/aggregate?", c->f);
		common_params(c, c->f);
		amp_int(c->f, "since", ival(col, "since"));
		amp_int(c->f, "until", ival(col, "until"));
		amp_int(c->f, "dur_min", ival(row, "dur_min"));
		if (json_is_integer(dmax))
			amp_int(c->f, "dur_max", json_integer_value(dmax));
		amp_int(c->f, "range_since", ival(doc, "from"));
		amp_int(c->f, "range_until", ival(doc, "to"));
		fprintf(c->f,
			"\"><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"",
			LEFT + (double)j * cw, TOP + (double)(nr - 1 - k) * CELL_H, cw, CELL_H - 1);
		fill(c->f, n, max);
		fprintf(c->f,
			"\" data-col=\"%zu\" data-row=\"%zu\" data-count=\"%lld\""
			" data-since=\"%lld\" data-until=\"%lld\" data-dur-min=\"%lld\""
			" data-dur-max=\"%lld\"><title>%lld traces, ",
			j, k, (long long)n, (long long)ival(col, "since"),
			(long long)ival(col, "until"), (long long)ival(row, "dur_min"),
			json_is_integer(dmax) ? (long long)json_integer_value(dmax) : -1LL,
			(long long)n);
		time_label(c->f, ival(col, "since"), width);
		fputs(", ", c->f);
		dur_label(c->f, ival(row, "dur_min"));
		fputs(" – ", c->f);
		if (json_is_integer(dmax))
			dur_label(c->f, json_integer_value(dmax));
		else
			fputs("∞", c->f);
		fputs("</title></rect></a>", c->f);
	}
	fputs("</svg>", c->f);
}

void rvs_web_heatmap(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	int status = 0;
	json_t *doc = web_api(c, "/api/v1/heatmap", c->req->query, &status);

	if (!doc || status != 200) {
		const char *e = doc ? json_string_value(json_object_get(doc, "error")) : NULL;
		web_error(c, status == 400 ? 400 : 500, e ? e : "query failed");
		json_decref(doc);
		return;
	}
	web_page_begin(c, "Anomaly heatmap");
	form(c);
	fprintf(c->f,
		"<p id=\"heatmap-count\" data-traces=\"%lld\">%lld anomalies with a duration, per "
		"%s"
		" received (across) and anomaly duration (up, log scale). Click a cell, or drag"
		" over several, for the merged flame graph of exactly those captures.</p>",
		(long long)ival(doc, "traces"), (long long)ival(doc, "traces"),
		sval(doc, "bucket"));
	if (!json_array_size(json_object_get(doc, "cells")))
		fputs("<p id=\"heatmap-empty\">No anomaly in this range.</p>", c->f);
	else
		draw(c, doc);
	fputs("<script src=\"/static/heatmap.js\" defer></script>", c->f);
	json_decref(doc);
	web_page_end(c, 200);
}

/* ---- /heaviest: the captures where a frame is heaviest ---------------------- */

void rvs_web_heaviest(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	static const char *const web_only[] = {"frame", NULL};
	char method[1024], *q = web_query_without(c->req->query, web_only);
	int status = 0;
	json_t *doc, *r;
	size_t i;

	if (!q)
		return web_error(c, 500, "out of memory");
	param(c, "frame", method, sizeof method);
	doc = web_api(c, "/api/v1/aggregate/heaviest", q, &status);
	free(q);
	if (!doc || status != 200) {
		const char *e = doc ? json_string_value(json_object_get(doc, "error")) : NULL;
		web_error(c, status == 400 ? 400 : 500, e ? e : "query failed");
		json_decref(doc);
		return;
	}
	web_page_begin(c, "Where a frame is heaviest");
	fputs("<p id=\"heaviest-frame\">Frame <b>", c->f);
	rvs_web_esc(c->f, method);
	fputs("</b>: the captures of the set where it took the most time (", c->f);
	fputs(strcmp(sval(doc, "by"), "self") ? "inclusive" : "self", c->f);
	fputs("), heaviest first; each opens its timeline at the anomaly with the frame's method"
	      " highlighted.</p><table id=\"heaviest\"><thead><tr><th>Trace</th><th>Frame ms"
	      "</th><th>Self ms</th><th>Calls</th><th>Anomaly ms</th></tr></thead><tbody>",
	      c->f);
	json_array_foreach(json_object_get(doc, "traces"), i, r)
	{
		const char *id = sval(r, "trace_id");
		fputs("<tr><td><a class=\"heavy\" href=\"/traces/", c->f);
		rvs_web_urlenc(c->f, id);
		fputs("?focus=anomaly", c->f);
		amp_param(c->f, "method", method);
		fputs("\">", c->f);
		rvs_web_esc(c->f, id);
		fprintf(c->f,
			"</a></td><td class=\"num\">%.3f</td><td class=\"num\">%.3f</td>"
			"<td class=\"num\">%lld</td><td class=\"num\">",
			ival(r, "incl_ns") / 1e6, ival(r, "self_ns") / 1e6,
			(long long)ival(r, "calls"));
		web_ms(c->f, json_object_get(r, "duration_ns"));
		fputs("</td></tr>", c->f);
	}
	fputs("</tbody></table>", c->f);
	json_decref(doc);
	web_page_end(c, 200);
}
