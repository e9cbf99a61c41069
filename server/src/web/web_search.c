/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_search.c — the web UI's /issues (top issues by impact, with their
 * weekly trend), /search (chain search with the matched frames
 * highlighted) and /callers (a method's callers and callees across the
 * fleet) pages (server/WEB.md).  Each renders the JSON API document
 * of the same name (search.c) through web_api, so the page shows exactly
 * what the API answers.
 *
 * Invariants: every value from the request or the database reaches the
 * page through rvs_web_esc (text) or rvs_web_urlenc (links); the query is
 * handed to the API as it came, and the API checks it.
 */
#include "model/search.h"
#include "base/params.h"
#include "http/route.h"
#include "web/web.h"
#include "web/web_int.h"

#include <stdlib.h>
#include <string.h>

/* A text input for parameter key, prefilled from the page's query. */
static void input(struct web_ctx *c, const char *key, const char *label, const char *hint)
{
	char v[1600];
	if (rvs_query_param(c->req->query, key, v, sizeof v) != 1)
		v[0] = '\0';
	fprintf(c->f, "<label>%s <input name=\"%s\" type=\"text\"%s placeholder=\"%s\" value=\"",
		label, key, web_list_of(key), hint);
	rvs_web_esc(c->f, v);
	fputs("\"></label>", c->f);
}

/* The query without empty parameters (a submitted form sends them all). */
static void drop_empty(const char *q, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	while (q && *q) {
		const char *amp = strchr(q, '&');
		size_t n = amp ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', n);
		if (eq && eq + 1 < q + n && o + n + 2 < cap) {
			if (o)
				out[o++] = '&';
			memcpy(out + o, q, n);
			o += n;
			out[o] = '\0';
		}
		q = amp ? amp + 1 : NULL;
	}
}

/* The app and version pickers' choices for the page's app (web.h). */
static void page_version_lists(struct web_ctx *c)
{
	char app[256];
	if (rvs_query_param(c->req->query, "app", app, sizeof app) != 1)
		app[0] = '\0';
	web_version_lists(c, app);
}

static void trace_cell(struct web_ctx *c, json_t *row)
{
	const char *id = json_string_value(json_object_get(row, "trace_id"));
	fputs("<a href=\"/traces/", c->f);
	rvs_web_urlenc(c->f, id ? id : "");
	fputs("\">", c->f);
	rvs_web_esc(c->f, id ? id : "");
	fputs("</a>", c->f);
}

/* ---- /issues ------------------------------------------------------------------ */

static void real_cell(struct web_ctx *c, json_t *row, const char *key)
{
	json_t *v = json_object_get(row, key);
	if (json_is_number(v))
		fprintf(c->f, "%.1f", json_number_value(v));
}

static void severity_cell(struct web_ctx *c, json_t *row)
{
	real_cell(c, row, "severity");
}

static void impact_cell(struct web_ctx *c, json_t *row)
{
	real_cell(c, row, "impact");
}

/* The issue's selection-weighted traces and devices (the anomalies and
 * devices its uploads stand for), marked when a weight is an estimate. */
static void weighted_cell(struct web_ctx *c, json_t *row)
{
	json_t *w = json_object_get(row, "weighted");
	if (!json_is_object(w))
		return;
	fprintf(c->f,
		"<span class=\"weighted\" title=\"Sum of 1/p over the uploads; devices: each"
		" one's smallest 1/p\">%.1f / %.1f</span>",
		json_number_value(json_object_get(w, "traces")),
		json_number_value(json_object_get(w, "devices")));
	if (!json_is_true(json_object_get(w, "exact"))) {
		const char *note = json_string_value(json_object_get(w, "note"));
		fputs(" <small title=\"", c->f);
		rvs_web_esc(c->f, note ? note : "");
		fputs("\">(estimate)</small>", c->f);
	}
}

/* The weekly counts, oldest first, as bars whose heights are the counts
 * relative to the row's largest (the numbers are in the title). */
static void trend_cell(struct web_ctx *c, json_t *row)
{
	json_t *t = json_object_get(row, "trend"), *v;
	json_int_t max = 1;
	size_t i;
	json_array_foreach(t, i, v) if (json_integer_value(v) > max) max = json_integer_value(v);
	fputs("<span class=\"trend\" title=\"traces per week, oldest first:", c->f);
	json_array_foreach(t, i, v) fprintf(c->f, " %lld", (long long)json_integer_value(v));
	fputs("\">", c->f);
	json_array_foreach(t, i, v)
	{
		static const char *const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
		json_int_t n = json_integer_value(v);
		fputs(n ? bars[(n * 7) / max] : "·", c->f);
	}
	fputs("</span>", c->f);
}

/* The trend of the method the issue's anomaly is in (its chain's last
 * frame), over the issue's traces. */
static void trend_link(struct web_ctx *c, json_t *row, const char *issue, const char *app)
{
	const char *chain = json_string_value(json_object_get(row, "chain"));
	size_t n = chain ? strlen(chain) : 0, b;
	char *leaf;

	if (n && chain[n - 1] == ';')
		n--;
	for (b = n; b > 0 && chain[b - 1] != ';'; b--)
		;
	if (!issue || b == n || !(leaf = strndup(chain + b, n - b)))
		return;
	fputs(" — <a class=\"issue-trend\" href=\"/trend?method=", c->f);
	rvs_web_urlenc(c->f, leaf);
	fputs("&amp;issue=", c->f);
	rvs_web_urlenc(c->f, issue);
	if (app) {
		fputs("&amp;app=", c->f);
		rvs_web_urlenc(c->f, app);
	}
	fputs("\">trend</a>", c->f);
	free(leaf);
}

static void worst_cell(struct web_ctx *c, json_t *row)
{
	const char *issue = json_string_value(json_object_get(row, "issue"));
	const char *app = json_string_value(json_object_get(row, "app_id"));
	fputs("<a href=\"/traces?sort=severity&amp;issue=", c->f);
	rvs_web_urlenc(c->f, issue ? issue : "");
	if (app) { /* an issue is one app's */
		fputs("&amp;app=", c->f);
		rvs_web_urlenc(c->f, app);
	}
	fputs("\">worst traces</a>", c->f);
	trend_link(c, row, issue, app);
}

static const struct web_col ISSUE_COLS[] = {
	{"App", "app_id", COL_TEXT, NULL},
	{"Chain at the anomaly (outer first)", "chain", COL_CHAIN, NULL},
	{"Traces", "traces", COL_NUM, NULL},
	{"Devices", "devices", COL_NUM, NULL},
	{"Weighted traces / devices", "weighted", COL_CUSTOM, weighted_cell},
	{"Mean severity", "severity", COL_CUSTOM, severity_cell},
	{"Impact", "impact", COL_CUSTOM, impact_cell},
	{"Weekly trend", "trend", COL_CUSTOM, trend_cell},
	{"Signatures folded", "signatures", COL_LIST, NULL},
	{"", "issue", COL_CUSTOM, worst_cell},
};

void rvs_web_issues(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	char q[sizeof c->req->query];
	int status;
	json_t *doc;

	drop_empty(c->req->query, q, sizeof q);
	doc = web_api(c, "/api/v1/issues", q, &status);
	if (!doc || status != 200) {
		web_error(c, status == 400 ? 400 : 500,
			  status == 400 ? "bad filter value" : "query failed");
		json_decref(doc);
		return;
	}
	web_page_begin(c, "Issues");
	fputs("<p>Anomaly signatures, those differing only by leading “(unknown caller)” "
	      "frames folded together, ranked by impact = traces × mean severity × devices "
	      "over the last weeks.</p><form class=\"filters\" method=\"get\" "
	      "action=\"/issues\">",
	      c->f);
	page_version_lists(c);
	input(c, "app", "App", "");
	input(c, "version", "App version", "");
	input(c, "weeks", "Weeks", "8");
	fputs("<button type=\"submit\">Show</button></form>", c->f);
	web_range(c, "issues", 1, json_array_size(json_object_get(doc, "issues")),
		  json_integer_value(json_object_get(doc, "total")), 0);
	web_table(c, "issues", ISSUE_COLS, sizeof ISSUE_COLS / sizeof ISSUE_COLS[0],
		  json_object_get(doc, "issues"));
	json_decref(doc);
	web_page_end(c, 200);
}

/* ---- /search ------------------------------------------------------------------ */

/* The hit's frames, outer first, the matched ones in <mark>. */
static void frames_cell(struct web_ctx *c, json_t *row)
{
	json_t *fr = json_object_get(row, "frames"), *m = json_object_get(row, "match"), *v;
	json_int_t from = json_integer_value(json_array_get(m, 0));
	json_int_t to = json_integer_value(json_array_get(m, 1));
	size_t i;
	json_array_foreach(fr, i, v)
	{
		int hit = (json_int_t)i >= from && (json_int_t)i < to;
		if (i)
			fputs(" → ", c->f);
		fputs(hit ? "<mark>" : "", c->f);
		rvs_web_esc(c->f, json_string_value(v));
		fputs(hit ? "</mark>" : "", c->f);
	}
}

static const struct web_col HIT_COLS[] = {
	{"Trace", "trace_id", COL_CUSTOM, trace_cell},
	{"App", "app_id", COL_TEXT, NULL},
	{"Version", "app_version", COL_TEXT, NULL},
	{"Model", "model", COL_TEXT, NULL},
	{"Severity", "severity", COL_NUM, NULL},
	{"Where", "source", COL_TEXT, NULL},
	{"Chain (outer first; the match marked)", "frames", COL_CUSTOM, frames_cell},
	{"Received", "received_at", COL_TIME, NULL},
};

void rvs_web_search(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	char q[sizeof c->req->query];
	int status = 0;
	json_t *doc = NULL, *next;

	drop_empty(c->req->query, q, sizeof q);
	if (q[0] && !(doc = web_api(c, "/api/v1/search", q, &status))) {
		return web_error(c, 500, "query failed");
	} else if (doc && status != 200) {
		const char *msg = json_string_value(json_object_get(doc, "error"));
		web_page_begin(c, "Search");
		fputs("<p class=\"error\">", c->f);
		rvs_web_esc(c->f, msg ? msg : "bad search");
		fputs("</p>", c->f);
		json_decref(doc);
		doc = NULL;
	} else {
		web_page_begin(c, "Search");
	}
	fputs("<p>A chain: method names outer first separated by “ &gt; ”, “*” for any "
	      "frames (none included), e.g. <code>layout_pass &gt; * &gt; parse_json</code>; "
	      "one name finds the traces that ran it.  Or a part of a method's name.</p>"
	      "<form class=\"filters\" method=\"get\" action=\"/search\">",
	      c->f);
	page_version_lists(c);
	input(c, "chain", "Chain", "layout_pass > * > parse_json");
	input(c, "contains", "Method name contains", "json");
	input(c, "app", "App", "");
	input(c, "version", "App version", "");
	fputs("<button type=\"submit\">Search</button></form>", c->f);
	if (doc) {
		json_t *hits = json_object_get(doc, "hits");
		fprintf(c->f,
			"<p>%zu hits on this page (one per trace and matched call path)%s.</p>",
			json_array_size(hits),
			json_is_true(json_object_get(doc, "partial"))
				? " (the search stopped at its work budget: go on for more)"
				: "");
		web_table(c, "hits", HIT_COLS, sizeof HIT_COLS / sizeof HIT_COLS[0], hits);
		next = json_object_get(doc, "next_cursor");
		if (json_is_string(next)) {
			const char *p = q;
			fputs("<p><a id=\"next\" rel=\"next\" href=\"/search?", c->f);
			while (p && *p) { /* the query without its cursor */
				const char *amp = strchr(p, '&');
				size_t n = amp ? (size_t)(amp - p) : strlen(p);
				if (strncmp(p, "cursor=", 7) != 0) {
					char part[1700];
					snprintf(part, sizeof part, "%.*s&", (int)n, p);
					rvs_web_esc(c->f, part);
				}
				p = amp ? amp + 1 : NULL;
			}
			fputs("cursor=", c->f);
			rvs_web_urlenc(c->f, json_string_value(next));
			fputs("\">Next page →</a></p>", c->f);
		}
		json_decref(doc);
	}
	web_page_end(c, 200);
}

/* ---- /callers ----------------------------------------------------------------- */

/* The row's method, linked to its own callers and callees; a caller that
 * is null: the method was a thread's first frame. */
static void cc_method_cell(struct web_ctx *c, json_t *row)
{
	const char *m = json_string_value(json_object_get(row, "method"));
	if (!m) {
		fputs("<i>(none: a thread's first frame)</i>", c->f);
		return;
	}
	fputs("<a href=\"/callers?of=", c->f);
	rvs_web_urlenc(c->f, m);
	fputs("\">", c->f);
	rvs_web_esc(c->f, m);
	fputs("</a>", c->f);
}

static const struct web_col CC_COLS[] = {
	{"App", "app_id", COL_TEXT, NULL},
	{"Method", "method", COL_CUSTOM, cc_method_cell},
	{"Calls", "calls", COL_NUM, NULL},
	{"Inclusive ms / trace", "incl_ns_per_trace", COL_MS, NULL},
	{"Self ms / trace", "self_ns_per_trace", COL_MS, NULL},
	{"App's traces", "app_traces", COL_NUM, NULL},
};

void rvs_web_callers(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	char q[sizeof c->req->query];
	int status = 0;
	json_t *doc = NULL;

	drop_empty(c->req->query, q, sizeof q);
	if (strstr(q, "of=") && !(doc = web_api(c, "/api/v1/aggregate/callers", q, &status)))
		return web_error(c, 500, "query failed");
	web_page_begin(c, "Callers and callees");
	if (doc && status != 200) {
		const char *msg = json_string_value(json_object_get(doc, "error"));
		fputs("<p class=\"error\">", c->f);
		rvs_web_esc(c->f, msg ? msg : "bad query");
		fputs("</p>", c->f);
		json_decref(doc);
		doc = NULL;
	}
	fputs("<p>Who calls a method and what it calls, over every decoded trace the "
	      "filters select (each trace's stored call paths, summed): the method's time "
	      "split by the frame that called it, and the inclusive time of its callees. "
	      "Times per trace are over the traces of each row's app.</p>"
	      "<form class=\"filters\" method=\"get\" action=\"/callers\">",
	      c->f);
	page_version_lists(c);
	input(c, "of", "Method", "measure_text");
	input(c, "app", "App", "");
	input(c, "version", "App version", "");
	input(c, "model", "Model", "");
	fputs("<button type=\"submit\">Show</button></form>", c->f);
	if (doc) {
		fprintf(c->f, "<p>Over %lld traces.</p><h2>The method, per app</h2>",
			(long long)json_integer_value(json_object_get(doc, "traces")));
		web_table(c, "cc-apps", CC_COLS, sizeof CC_COLS / sizeof CC_COLS[0],
			  json_object_get(doc, "apps"));
		fputs("<h2>Called from</h2>", c->f);
		web_table(c, "cc-callers", CC_COLS, sizeof CC_COLS / sizeof CC_COLS[0],
			  json_object_get(doc, "callers"));
		fputs("<h2>Calls</h2>", c->f);
		web_table(c, "cc-callees", CC_COLS, sizeof CC_COLS / sizeof CC_COLS[0],
			  json_object_get(doc, "callees"));
		json_decref(doc);
	}
	web_page_end(c, 200);
}
