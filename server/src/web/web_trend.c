/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_trend.c — the web UI's /trend page (server/WEB.md): a method's p50
 * and p95 self and inclusive time per capture day or app version, drawn as
 * an SVG chart from the JSON API's /api/v1/trend reply (api/trend.c), with
 * the onset marked (#onset) and linked to the diff of before against
 * after, a table of the buckets each linked to its aggregate, and the
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

/* The four lines: self and inclusive, p50 solid and p95 dashed. */
static const struct {
	const char *which, *p, *colour, *dash, *label;
} LINES[] = {
	{"self_ns", "p50", "#c62828", "", "self p50"},
	{"self_ns", "p95", "#c62828", "6 3", "self p95"},
	{"incl_ns", "p50", "#1565c0", "", "inclusive p50"},
	{"incl_ns", "p95", "#1565c0", "6 3", "inclusive p95"},
};

/* Whether bucket b's weighted figures are exact (API.md "GET /api/v1/trend"). */
static int weighted_exact(json_t *b)
{
	return json_is_true(json_object_get(json_object_get(b, "weighted"), "exact"));
}

static void chart(struct web_ctx *c, json_t *doc, json_t *onset)
{
	json_t *bs = json_object_get(doc, "buckets"), *b;
	size_t nb = json_array_size(bs), i, step = (nb + LABELS - 1) / LABELS;
	double ymax = 1, colw = (W - LEFT - RIGHT) / (double)nb;

	json_array_foreach(bs, i, b)
	{
		for (size_t l = 0; l < 4; l++) {
			double v = (double)pct(b, LINES[l].which, LINES[l].p);
			ymax = v > ymax ? v : ymax;
		}
	}
	ymax *= 1.05;
	fprintf(c->f,
		"<svg id=\"trend-chart\" class=\"trend-chart\" xmlns=\"http://www.w3.org/2000/svg\""
		" viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" data-by=\"%s\""
		" role=\"img\" aria-label=\"p50 and p95 per bucket\">",
		W, H, strcmp(sval(doc, "by"), "version") ? "day" : "version");
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
			fputs("</text>", c->f);
		}
	}
	if (json_is_object(onset)) {
		double x = x_of((size_t)ival(onset, "bucket"), nb) - colw / 2;
		fprintf(c->f,
			"<a href=\"#onset\"><line id=\"onset-line\" x1=\"%.1f\" x2=\"%.1f\""
			" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#2e7d32\" stroke-width=\"2\""
			" stroke-dasharray=\"4 3\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"12\""
			" fill=\"#2e7d32\">onset</text></a>",
			x, x, TOP, H - BOTTOM, x + 3, TOP + 12);
	}
	for (size_t l = 0; l < 4; l++) {
		fprintf(c->f,
			"<polyline class=\"tl\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"",
			LINES[l].colour);
		if (LINES[l].dash[0])
			fprintf(c->f, " stroke-dasharray=\"%s\"", LINES[l].dash);
		fputs(" points=\"", c->f);
		json_array_foreach(bs, i, b)
			fprintf(c->f, "%.1f,%.1f ", x_of(i, nb),
				y_of(pct(b, LINES[l].which, LINES[l].p), ymax));
		fputs("\"/>", c->f);
		json_array_foreach(bs, i, b)
		{
			int64_t v = pct(b, LINES[l].which, LINES[l].p);
			fprintf(c->f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>",
				x_of(i, nb), y_of(v, ymax), LINES[l].colour);
			rvs_web_esc(c->f, sval(b, "key"));
			fprintf(c->f, ": %s %.3f ms; weighted %.3f ms%s</title></circle>",
				LINES[l].label, (double)v / 1e6,
				(double)pct(json_object_get(b, "weighted"), LINES[l].which,
					    LINES[l].p) /
					1e6,
				weighted_exact(b) ? ""
						  : " (an estimate: a quota censors, or"
						    " an upload has no selection)");
		}
	}
	fputs("</svg><p class=\"legend\">Red: self time, blue: inclusive; solid p50, dashed p95"
	      " (nearest rank, per bucket). A point's tooltip also gives the percentile weighted"
	      " by each capture's selection weight (1/p of its campaign).</p>",
	      c->f);
}

/* The onset paragraph: where, how sure, and the diff of before / after. */
static void onset_par(struct web_ctx *c, json_t *doc, json_t *onset, json_t *best)
{
	size_t k, nb = json_array_size(json_object_get(doc, "buckets"));
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
	/* By day: every day before against every day from the onset; by
	 * version: the version before against the onset's. */
	fputs("<a id=\"onset-diff\" href=\"/aggregate/diff?", c->f);
	common_params(c, c->f);
	if (version)
		set_params(c->f, doc, k - 1, k - 1, "a.");
	else
		set_params(c->f, doc, 0, k - 1, "a.");
	set_params(c->f, doc, k, version ? k : nb - 1, "b.");
	fputs(version ? "\">diff: the version before → the onset's</a>"
		      : "\">diff: the days before → from the onset on</a>",
	      c->f);
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
 * campaign): where, how sure, and how exact the weights are. */
static void onset_weighted_par(struct web_ctx *c, json_t *ow)
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
	fputs(".</p>", c->f);
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
	chart(c, doc, onset);
	onset_par(c, doc, onset, json_object_get(json_object_get(doc, "best_split"), "self"));
	onset_weighted_par(c, json_object_get(doc, "onset_weighted"));
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
