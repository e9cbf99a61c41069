/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_trend.c — the web UI's /trend page (server/WEB.md): a method's p50
 * and p95 self and inclusive time per capture day or app version, drawn as
 * an SVG chart from the JSON API's /api/v1/trend reply (api/trend.c), with
 * the onset marked (#onset) and linked to the diff of before against
 * after, the weighted onset (each capture counting 1/p of its campaign)
 * marked beside it (#onset-weighted) and linked the same way, the
 * weighted percentiles drawn as lines of their own when any differs from
 * the unweighted one, the buckets whose weights are not exact marked
 * ("≈", hollow points, #weighted-note), a table of the buckets each
 * linked to its aggregate, and the
 * brush (/static/trend.js, web_trend_js.c): a range dragged over the chart becomes the A
 * or B set of /aggregate/diff, or the set of /aggregate.
 *
 * A set of buckets as aggregate filters (set_params, and trend.js the
 * same way): the page's method, app, model and kind, and by day the days'
 * since/until (unix s); by version one version, or for several the days
 * they were seen (the aggregate takes one version a side).  The
 * aggregate's since/until select by arrival, the trend's days by capture:
 * the page says so.  Every string from the reply or the request reaches
 * the page through rvs_web_esc / rvs_web_urlenc.
 */
#include "base/params.h"
#include "http/reply.h"
#include "http/route.h"
#include "web/web.h"
#include "web/web_int.h"

#include <stdlib.h>
#include <string.h>

#define W      900.0
#define H      300.0
#define LEFT   70.0
#define RIGHT  10.0
#define TOP    10.0
#define BOTTOM 40.0
#define LABELS 16 /* x-axis labels at most */

static int64_t ival(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static const char *sval(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static int64_t pct(json_t *b, const char *which, const char *p)
{
	return ival(json_object_get(b, which), p);
}

/* The request's parameter key, "" when absent. */
static void param(struct web_ctx *c, const char *key, char *out, size_t cap)
{
	if (rvs_query_param(c->req->query, key, out, cap) != 1)
		out[0] = '\0';
}

/* "&amp;NAME=VALUE" (prefix included: side "a." / "b." / "") when value is set. */
static void amp_param(FILE *f, const char *side, const char *name, const char *value)
{
	if (!value[0])
		return;
	fprintf(f, "&amp;%s%s=", side, name);
	rvs_web_urlenc(f, value);
}

/* The filters every set shares, top-level: method (always set on the
 * page, so first, without "&amp;"), app, model, kind. */
static void common_params(struct web_ctx *c, FILE *f)
{
	static const char *const keys[] = {"app", "model", "kind"};
	char v[1024];
	param(c, "method", v, sizeof v);
	fputs("method=", f);
	rvs_web_urlenc(f, v);
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		param(c, keys[i], v, sizeof v);
		amp_param(f, "", keys[i], v);
	}
}

/* Buckets [i, j] of doc as one set's filters, side "a." / "b." / "". */
static void set_params(FILE *f, json_t *doc, size_t i, size_t j, const char *side)
{
	json_t *bs = json_object_get(doc, "buckets");
	json_t *bi = json_array_get(bs, i), *bj = json_array_get(bs, j);
	char num[32];

	if (!strcmp(sval(doc, "by"), "version") && i == j) {
		amp_param(f, side, "version", sval(bi, "key"));
		return;
	}
	snprintf(num, sizeof num, "%lld", (long long)ival(bi, "since"));
	amp_param(f, side, "since", num);
	snprintf(num, sizeof num, "%lld", (long long)ival(bj, "until"));
	amp_param(f, side, "until", num);
}

static void form(struct web_ctx *c, const char *by)
{
	static const struct {
		const char *key, *label;
	} in[] = {{"method", "Method"},
		  {"app", "App"},
		  {"model", "Device model"},
		  {"kind", "Anomaly kind"},
		  {"issue", "Issue"}};
	char v[1024];

	fputs("<form method=\"get\" class=\"filters\" action=\"/trend\">", c->f);
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
		param(c, in[i].key, v, sizeof v);
		fprintf(c->f, "<label>%s <input name=\"%s\" type=\"text\" value=\"", in[i].label,
			in[i].key);
		rvs_web_esc(c->f, v);
		fputs("\"></label>", c->f);
	}
	fprintf(c->f,
		"<label>Per <select name=\"by\"><option value=\"day\"%s>capture day</option>"
		"<option value=\"version\"%s>app version</option></select></label>"
		" <button type=\"submit\">Show</button></form>",
		strcmp(by, "version") ? " selected" : "", strcmp(by, "version") ? "" : " selected");
}

static double x_of(size_t i, size_t nb)
{
	return LEFT + ((double)i + 0.5) * (W - LEFT - RIGHT) / (double)nb;
}

static double y_of(int64_t v, double ymax)
{
	return TOP + (H - TOP - BOTTOM) * (1.0 - (double)v / ymax);
}

/* The four lines: self and inclusive, p50 solid and p95 dashed; the same
 * four weighted (from each bucket's "weighted" object) in their own
 * colours, orange for self and purple for inclusive. */
static const struct {
	const char *which, *p, *colour, *wcolour, *dash, *label, *id;
} LINES[] = {
	{"self_ns", "p50", "#c62828", "#ef6c00", "", "self p50", "self-p50"},
	{"self_ns", "p95", "#c62828", "#ef6c00", "6 3", "self p95", "self-p95"},
	{"incl_ns", "p50", "#1565c0", "#6a1b9a", "", "inclusive p50", "incl-p50"},
	{"incl_ns", "p95", "#1565c0", "#6a1b9a", "6 3", "inclusive p95", "incl-p95"},
};
#define NLINES (sizeof LINES / sizeof LINES[0])

/* The two onset markers: the onset of the traces as sampled, green and
 * dashed; the weighted one, brown and dotted, its label lower so the two
 * stay readable on one bucket. */
static const struct {
	const char *id, *href, *colour, *dash, *label;
	double label_y;
} MARKERS[] = {
	{"onset-line", "#onset", "#2e7d32", "4 3", "onset", TOP + 12},
	{"onset-weighted-line", "#onset-weighted", "#795548", "1 3", "weighted onset", TOP + 26},
};

/* Whether bucket b's weighted figures are exact (API.md "GET /api/v1/trend"). */
static int weighted_exact(json_t *b)
{
	return json_is_true(json_object_get(json_object_get(b, "weighted"), "exact"));
}

/* Line l's figure in bucket b, weighted (w) or as sampled. */
static int64_t line_value(json_t *b, size_t l, int w)
{
	return pct(w ? json_object_get(b, "weighted") : b, LINES[l].which, LINES[l].p);
}

/* Whether any bucket's weighted percentile differs from its unweighted
 * one: only then are the weighted lines drawn (they would hide the others). */
static int weighted_differs(json_t *bs)
{
	json_t *b;
	size_t i;

	json_array_foreach(bs, i, b)
	{
		for (size_t l = 0; l < NLINES; l++)
			if (line_value(b, l, 1) != line_value(b, l, 0))
				return 1;
	}
	return 0;
}

/* Marker m at split s (a SPLIT object; nothing when not one), linked to
 * its paragraph, dx px right of the split (so that two on one split both
 * show); data-key holds the split's bucket key for scripts. */
static void marker(struct web_ctx *c, size_t m, json_t *s, size_t nb, double colw, double dx)
{
	double x;

	if (!json_is_object(s))
		return;
	x = x_of((size_t)ival(s, "bucket"), nb) - colw / 2 + dx;
	fprintf(c->f,
		"<a href=\"%s\"><line id=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\""
		" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\" data-key=\"",
		MARKERS[m].href, MARKERS[m].id, x, x, TOP, H - BOTTOM, MARKERS[m].colour,
		MARKERS[m].dash);
	rvs_web_esc(c->f, sval(s, "key"));
	fprintf(c->f, "\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"%s\">%s</text></a>",
		x + 3, MARKERS[m].label_y, MARKERS[m].colour, MARKERS[m].label);
}

/* Line l (weighted when w) as a polyline and a point per bucket, each
 * point's tooltip its figure and the other one (weighted or not).  A
 * weighted point of a bucket whose weights are not exact is hollow. */
static void series(struct web_ctx *c, json_t *bs, size_t l, int w, double ymax)
{
	const char *colour = w ? LINES[l].wcolour : LINES[l].colour;
	size_t i, nb = json_array_size(bs);
	json_t *b;

	fprintf(c->f, "<polyline class=\"%s\"", w ? "tlw" : "tl");
	if (w)
		fprintf(c->f, " id=\"trend-weighted-%s\"", LINES[l].id);
	fprintf(c->f, " fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"", colour, w ? "1.5" : "2");
	if (LINES[l].dash[0])
		fprintf(c->f, " stroke-dasharray=\"%s\"", LINES[l].dash);
	fputs(" points=\"", c->f);
	json_array_foreach(bs, i, b)
		fprintf(c->f, "%.1f,%.1f ", x_of(i, nb), y_of(line_value(b, l, w), ymax));
	fputs("\"/>", c->f);
	json_array_foreach(bs, i, b)
	{
		int64_t v = line_value(b, l, w), o = line_value(b, l, !w);
		int hollow = w && !weighted_exact(b);

		fprintf(c->f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"", x_of(i, nb),
			y_of(v, ymax), hollow ? "#fff" : colour);
		if (hollow)
			fprintf(c->f, " stroke=\"%s\" class=\"estimate\"", colour);
		fputs("><title>", c->f);
		rvs_web_esc(c->f, sval(b, "key"));
		fprintf(c->f, ": %s%s %.3f ms; %s %.3f ms%s</title></circle>", w ? "weighted " : "",
			LINES[l].label, (double)v / 1e6, w ? "as sampled" : "weighted",
			(double)o / 1e6,
			weighted_exact(b) ? ""
					  : " (weighted: an estimate: a quota censors, or"
					    " an upload has no selection)");
	}
}

/* One legend entry: a short line in colour and dash, and its words. */
static void key_entry(struct web_ctx *c, const char *id, const char *colour, const char *dash,
		      const char *words)
{
	fprintf(c->f,
		"<span class=\"key\" id=\"%s\"><svg width=\"28\" height=\"10\""
		" aria-hidden=\"true\"><line x1=\"0\" x2=\"28\" y1=\"5\" y2=\"5\" stroke=\"%s\""
		" stroke-width=\"2\"%s%s%s/></svg> %s</span> ",
		id, colour, dash[0] ? " stroke-dasharray=\"" : "", dash, dash[0] ? "\"" : "",
		words);
}

static void chart(struct web_ctx *c, json_t *doc, json_t *onset, json_t *wonset)
{
	json_t *bs = json_object_get(doc, "buckets"), *b;
	size_t nb = json_array_size(bs), i, step = (nb + LABELS - 1) / LABELS;
	double ymax = 1, colw = (W - LEFT - RIGHT) / (double)nb;
	int weighted = weighted_differs(bs);

	json_array_foreach(bs, i, b)
	{
		for (size_t l = 0; l < NLINES; l++)
			for (int w = 0; w <= weighted; w++) {
				double v = (double)line_value(b, l, w);
				ymax = v > ymax ? v : ymax;
			}
	}
	ymax *= 1.05;
	fprintf(c->f,
		"<svg id=\"trend-chart\" class=\"trend-chart\" xmlns=\"http://www.w3.org/2000/svg\""
		" viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" data-by=\"%s\" data-weighted=\"%s\""
		" role=\"img\" aria-label=\"p50 and p95 per bucket\">",
		W, H, strcmp(sval(doc, "by"), "version") ? "day" : "version",
		weighted ? "drawn" : "same");
	/* The y axis: five ticks in ms. */
	for (int t = 0; t <= 4; t++) {
		double v = ymax * t / 4, y = y_of((int64_t)v, ymax);
		fprintf(c->f,
			"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			"<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.3f ms"
			"</text>",
			LEFT, W - RIGHT, y, y, LEFT - 4, y + 4, v / 1e6);
	}
	/* The brush's targets: one transparent column per bucket. */
	json_array_foreach(bs, i, b)
	{
		fprintf(c->f,
			"<rect class=\"tb\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\""
			" fill=\"#ffb300\" fill-opacity=\"0\" data-i=\"%zu\" data-since=\"%lld\""
			" data-until=\"%lld\" data-key=\"",
			x_of(i, nb) - colw / 2, TOP, colw, H - TOP - BOTTOM, i,
			(long long)ival(b, "since"), (long long)ival(b, "until"));
		rvs_web_esc(c->f, sval(b, "key"));
		fputs("\"><title>", c->f);
		rvs_web_esc(c->f, sval(b, "key"));
		fprintf(c->f, ": %lld traces (weighted %.1f%s)</title></rect>",
			(long long)ival(b, "count"),
			json_number_value(json_object_get(json_object_get(b, "weighted"), "count")),
			weighted_exact(b) ? "" : ", an estimate");
		if (i % step == 0) {
			fprintf(c->f,
				"<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
				"text-anchor=\"middle\">",
				x_of(i, nb), H - BOTTOM + 16);
			rvs_web_esc(c->f, sval(b, "key"));
			fprintf(c->f, "%s</text>", weighted_exact(b) ? "" : " ≈");
		}
	}
	marker(c, 0, onset, nb, colw, 0);
	marker(c, 1, wonset, nb, colw,
	       json_is_object(onset) && json_is_object(wonset) &&
			       ival(onset, "bucket") == ival(wonset, "bucket")
		       ? 4
		       : 0);
	for (size_t l = 0; l < NLINES; l++)
		series(c, bs, l, 0, ymax);
	for (size_t l = 0; weighted && l < NLINES; l++)
		series(c, bs, l, 1, ymax);
	fputs("</svg><p class=\"legend\" id=\"trend-legend\">", c->f);
	key_entry(c, "legend-self", LINES[0].colour, "", "self");
	key_entry(c, "legend-incl", LINES[2].colour, "", "inclusive");
	if (weighted) {
		key_entry(c, "legend-weighted-self", LINES[0].wcolour, "", "weighted self");
		key_entry(c, "legend-weighted-incl", LINES[2].wcolour, "", "weighted inclusive");
	}
	key_entry(c, "legend-p95", "#555", LINES[1].dash, "p95 (solid: p50)");
	if (json_is_object(onset))
		key_entry(c, "legend-onset", MARKERS[0].colour, MARKERS[0].dash, "onset");
	if (json_is_object(wonset))
		key_entry(c, "legend-onset-weighted", MARKERS[1].colour, MARKERS[1].dash,
			  "weighted onset");
	fputs("<br>Percentiles are nearest rank, per bucket. Weighted: each capture counts with"
	      " its selection weight (1/p of the campaign that took it), so a model sampled at"
	      " 10 % weighs as much as the fleet it stands for; ",
	      c->f);
	fputs(weighted ? "the weighted lines are drawn beside the others."
		       : "<span id=\"weighted-same\">the weighted percentiles equal these in every"
			 " bucket</span>, so only one set of lines is drawn.",
	      c->f);
	fputs(" A point's tooltip gives both.</p>", c->f);
}

/* Where the weights are not exact: the buckets (their keys, "≈" on the
 * axis and hollow weighted points) and why (the reply's weighted.note). */
static void weighted_note(struct web_ctx *c, json_t *doc)
{
	json_t *bs = json_object_get(doc, "buckets"), *b;
	json_t *all = json_object_get(doc, "weighted");
	size_t i, n = 0;

	if (json_is_true(json_object_get(all, "exact")))
		return;
	fputs("<p id=\"weighted-note\" class=\"legend\">The weighted figures are not exact in"
	      " <span id=\"weighted-inexact\">",
	      c->f);
	json_array_foreach(bs, i, b)
	{
		if (weighted_exact(b))
			continue;
		fputs(n++ ? ", " : "", c->f);
		rvs_web_esc(c->f, sval(b, "key"));
	}
	fprintf(c->f, "</span> (%zu of %zu bucket%s, ≈ on the axis): ", n, json_array_size(bs),
		json_array_size(bs) == 1 ? "" : "s");
	rvs_web_esc(c->f, sval(all, "note"));
	fprintf(c->f, " — %lld traces' weights are estimates, %lld unknown.</p>",
		(long long)ival(all, "traces_weight_estimated"),
		(long long)ival(all, "traces_weight_unknown"));
}

/* The diff of the buckets before split k against those from it on, as a
 * link with id: by day every day before against every day from k; by
 * version the version before against k's. */
static void diff_link(struct web_ctx *c, json_t *doc, size_t k, const char *id)
{
	size_t nb = json_array_size(json_object_get(doc, "buckets"));
	int version = !strcmp(sval(doc, "by"), "version");

	fprintf(c->f, "<a id=\"%s\" href=\"/aggregate/diff?", id);
	common_params(c, c->f);
	if (version)
		set_params(c->f, doc, k - 1, k - 1, "a.");
	else
		set_params(c->f, doc, 0, k - 1, "a.");
	set_params(c->f, doc, k, version ? k : nb - 1, "b.");
	fputs(version ? "\">diff: the version before → the onset's</a>"
		      : "\">diff: the days before → from the onset on</a>",
	      c->f);
}

/* The onset paragraph: where, how sure, and the diff of before / after. */
static void onset_par(struct web_ctx *c, json_t *doc, json_t *onset, json_t *best)
{
	size_t k;
	int version = !strcmp(sval(doc, "by"), "version");
	char app[256];

	fputs("<p id=\"onset\">", c->f);
	if (!json_is_object(onset)) {
		fputs("No onset: no split of the series shifts self time with p &lt; 0.01", c->f);
		if (json_is_object(best))
			fprintf(c->f, " (the best split has p = %.3f)",
				json_real_value(json_object_get(best, "p")));
		fputs(".</p>", c->f);
		return;
	}
	k = (size_t)ival(onset, "bucket");
	fputs("Onset of self time at <b id=\"onset-key\">", c->f);
	rvs_web_esc(c->f, sval(onset, "key"));
	fprintf(c->f,
		"</b>: median %.3f ms before, %.3f ms from it on (× %.2f), p = %.3f"
		" (permutation test of the largest Mann–Whitney |z| over every split, %lld"
		" before, %lld after). ",
		(double)ival(onset, "median_before_ns") / 1e6,
		(double)ival(onset, "median_after_ns") / 1e6,
		json_real_value(json_object_get(onset, "shift")),
		json_real_value(json_object_get(onset, "p")), (long long)ival(onset, "before"),
		(long long)ival(onset, "after"));
	diff_link(c, doc, k, "onset-diff");
	param(c, "app", app, sizeof app);
	if (version && app[0]) {
		json_t *bs = json_object_get(doc, "buckets");
		fputs(" — <a id=\"onset-regressions\" href=\"/regressions?app=", c->f);
		rvs_web_urlenc(c->f, app);
		fputs("&amp;a=", c->f);
		rvs_web_urlenc(c->f, sval(json_array_get(bs, k - 1), "key"));
		fputs("&amp;b=", c->f);
		rvs_web_urlenc(c->f, sval(json_array_get(bs, k), "key"));
		fputs("\">what else got slower</a>", c->f);
	}
	fputs("</p>", c->f);
}

/* The weighted onset beside it (each capture counting 1/p of its
 * campaign): where, how sure, how exact the weights are, and the diff
 * of the buckets before it against those from it on. */
static void onset_weighted_par(struct web_ctx *c, json_t *doc, json_t *ow)
{
	json_t *o = json_object_get(ow, "self");
	const char *note = sval(ow, "note");

	fputs("<p id=\"onset-weighted\">", c->f);
	if (!json_is_object(o)) {
		fputs("Weighted by each capture's selection weight: no onset with p &lt; 0.01",
		      c->f);
	} else {
		fputs("Weighted by each capture's selection weight: onset at <b"
		      " id=\"onset-weighted-key\">",
		      c->f);
		rvs_web_esc(c->f, sval(o, "key"));
		fprintf(c->f, "</b>, median %.3f ms before, %.3f ms from it on, p = %.3f",
			(double)ival(o, "median_before_ns") / 1e6,
			(double)ival(o, "median_after_ns") / 1e6,
			json_real_value(json_object_get(o, "p")));
	}
	if (note && *note) {
		fputs(" (", c->f);
		rvs_web_esc(c->f, note);
		fputs(")", c->f);
	}
	fputs(". ", c->f);
	if (json_is_object(o) && ival(o, "bucket") > 0)
		diff_link(c, doc, (size_t)ival(o, "bucket"), "onset-weighted-diff");
	fputs("</p>", c->f);
}

static void table(struct web_ctx *c, json_t *doc)
{
	json_t *bs = json_object_get(doc, "buckets"), *b;
	size_t i;

	fputs("<table id=\"trend-buckets\"><thead><tr><th>Bucket</th><th>First day</th>"
	      "<th>Traces</th><th>Self p50 (ms)</th><th>Self p95 (ms)</th>"
	      "<th>Inclusive p50 (ms)</th><th>Inclusive p95 (ms)</th><th></th></tr></thead>"
	      "<tbody>",
	      c->f);
	json_array_foreach(bs, i, b)
	{
		json_t *s = json_object_get(b, "self_ns"), *in = json_object_get(b, "incl_ns");
		fputs("<tr><td>", c->f);
		rvs_web_esc(c->f, sval(b, "key"));
		fputs("</td><td>", c->f);
		rvs_web_esc(c->f, sval(b, "first_day"));
		fprintf(c->f, "</td><td>%lld</td><td>", (long long)ival(b, "count"));
		web_ms(c->f, json_object_get(s, "p50"));
		fputs("</td><td>", c->f);
		web_ms(c->f, json_object_get(s, "p95"));
		fputs("</td><td>", c->f);
		web_ms(c->f, json_object_get(in, "p50"));
		fputs("</td><td>", c->f);
		web_ms(c->f, json_object_get(in, "p95"));
		fputs("</td><td><a class=\"bucket-agg\" href=\"/aggregate?", c->f);
		common_params(c, c->f);
		set_params(c->f, doc, i, i, "");
		fputs("\">aggregate</a></td></tr>", c->f);
	}
	fputs("</tbody></table>", c->f);
}

void rvs_web_trend(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	char method[1024], by[16];
	json_t *doc, *onset;
	int status = 0;

	param(c, "method", method, sizeof method);
	param(c, "by", by, sizeof by);
	if (!method[0]) {
		web_page_begin(c, "Trend");
		fputs("<h1>Trend</h1>", c->f);
		form(c, by);
		fputs("<p>Name a method (its page links here) to see its time per day or"
		      " version.</p>",
		      c->f);
		return web_page_end(c, 200);
	}
	doc = web_api(c, "/api/v1/trend", c->req->query, &status);
	if (!doc || status != 200) {
		const char *e = doc ? json_string_value(json_object_get(doc, "error")) : NULL;
		web_error(c, status == 400 ? 400 : 500, e ? e : "query failed");
		json_decref(doc);
		return;
	}
	onset = json_object_get(json_object_get(doc, "onset"), "self");
	web_page_begin(c, method);
	fputs("<h1>Trend of <a href=\"/methods/", c->f);
	rvs_web_urlenc(c->f, method);
	fputs("\">", c->f);
	rvs_web_esc(c->f, method);
	fputs("</a></h1>", c->f);
	form(c, sval(doc, "by"));
	fprintf(c->f, "<p id=\"trend-count\">%lld traces with this method",
		(long long)ival(doc, "traces"));
	if (json_is_true(json_object_get(doc, "cut")))
		fprintf(c->f, " — <b class=\"alert\">only the newest %lld are shown</b>",
			(long long)ival(doc, "max_traces"));
	fputs(".</p>", c->f);
	if (!json_array_size(json_object_get(doc, "buckets"))) {
		fputs("<p>No trace has this method.</p>", c->f);
		json_decref(doc);
		return web_page_end(c, 200);
	}
	chart(c, doc, onset, json_object_get(json_object_get(doc, "onset_weighted"), "self"));
	weighted_note(c, doc);
	onset_par(c, doc, onset, json_object_get(json_object_get(doc, "best_split"), "self"));
	onset_weighted_par(c, doc, json_object_get(doc, "onset_weighted"));
	/* The brush: trend.js fills the links from the columns dragged over. */
	fputs("<div id=\"trend-brush\" data-common=\"", c->f);
	common_params(c, c->f); /* the browser reads "&amp;" back as "&" */
	fputs("\"><p>Drag over the chart to select buckets: <span id=\"brush-sel\">none</span>"
	      " <button type=\"button\" id=\"brush-a\" disabled>use as A</button>"
	      " <button type=\"button\" id=\"brush-b\" disabled>use as B</button>"
	      " <a id=\"brush-agg\" hidden>aggregate of the selection</a>"
	      " <a id=\"brush-diff\" hidden>diff A → B</a></p>"
	      "<p class=\"legend\">A set of days is given to the aggregate as since/until, which"
	      " select traces by arrival (the trend's days are capture days); several versions"
	      " as the days they were seen.</p></div>"
	      "<script src=\"/static/trend.js\" defer></script>",
	      c->f);
	table(c, doc);
	json_decref(doc);
	web_page_end(c, 200);
}
