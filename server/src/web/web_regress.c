/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_regress.c — the web UI's "Regressions" page (/regressions): the
 * comparison form, the methods and chains of GET /api/v1/regressions as
 * tables (slower first, with effect sizes, p and BH q, links to the
 * slowest traces of side B), the stored automatic comparisons and the
 * webhook deliveries with their state.
 *
 * Invariants: the page renders only what the JSON API answers (web_api);
 * every string from the database is HTML-escaped (rvs_web_esc) or
 * URL-encoded (rvs_web_urlenc).  Work thread.
 */
#include "web/web.h"
#include "web/web_int.h"

#include <math.h>
#include <string.h>

#include "base/params.h"
#include "http/reply.h"
#include "http/route.h"

enum real_fmt { RATIO, DELTA, PVAL };

static void real_cell(FILE *f, json_t *v, enum real_fmt fmt)
{
	double d = json_number_value(v);
	if (!json_is_number(v) || !isfinite(d))
		fputs("–", f);
	else if (fmt == RATIO)
		fprintf(f, "%.2f×", d);
	else if (fmt == DELTA)
		fprintf(f, "%+.2f", d);
	else
		fprintf(f, "%.2g", d);
}

static void r_ratio(struct web_ctx *c, json_t *row)
{
	real_cell(c->f, json_object_get(json_object_get(row, "self"), "median_ratio"), RATIO);
}

static void r_delta(struct web_ctx *c, json_t *row)
{
	real_cell(c->f, json_object_get(json_object_get(row, "self"), "cliffs_delta"), DELTA);
}

static void r_q(struct web_ctx *c, json_t *row)
{
	real_cell(c->f, json_object_get(json_object_get(row, "self"), "q"), PVAL);
}

static void r_incl_q(struct web_ctx *c, json_t *row)
{
	real_cell(c->f, json_object_get(json_object_get(row, "incl"), "q"), PVAL);
}

static void r_incl_ratio(struct web_ctx *c, json_t *row)
{
	real_cell(c->f, json_object_get(json_object_get(row, "incl"), "median_ratio"), RATIO);
}

static void r_n(struct web_ctx *c, json_t *row)
{
	fprintf(c->f, "%lld / %lld",
		(long long)json_integer_value(json_object_get(row, "traces_a")),
		(long long)json_integer_value(json_object_get(row, "traces_b")));
}

static void r_slowest(struct web_ctx *c, json_t *row)
{
	json_t *v;
	size_t i;
	json_array_foreach(json_object_get(row, "slowest_b"), i, v)
	{
		const char *id = json_string_value(v);
		fputs(i ? " <a href=\"/traces/" : "<a href=\"/traces/", c->f);
		rvs_web_urlenc(c->f, id ? id : "");
		fputs("\">", c->f);
		rvs_web_esc(c->f, id ? id : "");
		fputs("</a>", c->f);
	}
}

/* The method, with the id the differential flame graph's frames link to
 * (web_agg.c: "m-" and the URL-encoded name), and its trend per version in
 * the compared app. */
static void r_method(struct web_ctx *c, json_t *row)
{
	const char *m = json_string_value(json_object_get(row, "method"));
	char app[256];
	if (!m)
		return;
	fputs("<a id=\"m-", c->f);
	rvs_web_urlenc(c->f, m);
	fputs("\" href=\"/methods/", c->f);
	rvs_web_urlenc(c->f, m);
	fputs("\">", c->f);
	rvs_web_esc(c->f, m);
	fputs("</a> <a class=\"regress-trend\" href=\"/trend?by=version&amp;method=", c->f);
	rvs_web_urlenc(c->f, m);
	if (rvs_query_param(c->req->query, "app", app, sizeof app) == 1 && app[0]) {
		fputs("&amp;app=", c->f);
		rvs_web_urlenc(c->f, app);
	}
	fputs("\">trend</a>", c->f);
}

static const struct web_col METHOD_COLS[] = {
	{"Method", NULL, COL_CUSTOM, r_method},
	{"Traces with it (A / B)", NULL, COL_CUSTOM, r_n},
	{"Self median A ms", "self.median_a_ns", COL_MS, NULL},
	{"Self median B ms", "self.median_b_ns", COL_MS, NULL},
	{"Self ratio", NULL, COL_CUSTOM, r_ratio},
	{"Cliff's δ", NULL, COL_CUSTOM, r_delta},
	{"q (self)", NULL, COL_CUSTOM, r_q},
	{"Incl. ratio", NULL, COL_CUSTOM, r_incl_ratio},
	{"q (incl.)", NULL, COL_CUSTOM, r_incl_q},
	{"Slowest traces in B", NULL, COL_CUSTOM, r_slowest},
};

static const struct web_col CHAIN_COLS[] = {
	{"Chain (outer first)", "chain", COL_CHAIN, NULL},
	{"Traces with it (A / B)", NULL, COL_CUSTOM, r_n},
	{"Self median A ms", "self.median_a_ns", COL_MS, NULL},
	{"Self median B ms", "self.median_b_ns", COL_MS, NULL},
	{"Self ratio", NULL, COL_CUSTOM, r_ratio},
	{"Cliff's δ", NULL, COL_CUSTOM, r_delta},
	{"q (self)", NULL, COL_CUSTOM, r_q},
	{"Slowest traces in B", NULL, COL_CUSTOM, r_slowest},
};

static void run_link(struct web_ctx *c, json_t *row)
{
	const char *app = json_string_value(json_object_get(row, "app_id"));
	const char *a = json_string_value(json_object_get(row, "version_a"));
	const char *b = json_string_value(json_object_get(row, "version_b"));
	fputs("<a href=\"/regressions?app=", c->f);
	rvs_web_urlenc(c->f, app ? app : "");
	fputs("&amp;a=", c->f);
	rvs_web_urlenc(c->f, a ? a : "");
	fputs("&amp;b=", c->f);
	rvs_web_urlenc(c->f, b ? b : "");
	fputs("\">", c->f);
	rvs_web_esc(c->f, a ? a : "");
	fputs(" → ", c->f);
	rvs_web_esc(c->f, b ? b : "");
	fputs("</a>", c->f);
}

static void run_ratio(struct web_ctx *c, json_t *row)
{
	real_cell(c->f, json_object_get(row, "top_ratio"), RATIO);
}

static void run_q(struct web_ctx *c, json_t *row)
{
	real_cell(c->f, json_object_get(row, "top_q"), PVAL);
}

static void run_alerted(struct web_ctx *c, json_t *row)
{
	fputs(json_integer_value(json_object_get(row, "alerted")) ? "alert" : "–", c->f);
}

static const struct web_col RUN_COLS[] = {
	{"App", "app_id", COL_TEXT, NULL},
	{"Versions", NULL, COL_CUSTOM, run_link},
	{"Traces A", "traces_a", COL_NUM, NULL},
	{"Traces B", "traces_b", COL_NUM, NULL},
	{"Top method", "top_method", COL_METHOD, NULL},
	{"Self ratio", NULL, COL_CUSTOM, run_ratio},
	{"q", NULL, COL_CUSTOM, run_q},
	{"Over the bar", NULL, COL_CUSTOM, run_alerted},
	{"Compared", "computed_at", COL_TIME, NULL},
};

static const struct web_col DELIVERY_COLS[] = {
	{"#", "id", COL_NUM, NULL},
	{"URL", "url", COL_TEXT, NULL},
	{"Event", "event", COL_TEXT, NULL},
	{"State", "state", COL_TEXT, NULL},
	{"Attempts", "attempts", COL_NUM, NULL},
	{"Last status", "last_status", COL_NUM, NULL},
	{"Last error", "last_error", COL_TEXT, NULL},
	{"Queued", "created_at", COL_TIME, NULL},
	{"Delivered", "delivered_at", COL_TIME, NULL},
};

/* The comparison form, prefilled with the request's parameters. */
static void form(struct web_ctx *c)
{
	static const char *const fields[][2] = {
		{"app", "App"},	       {"a", "Version A"},	    {"b", "Version B"},
		{"model", "or model"}, {"version", "(in version)"}, {"week", "or week=1"},
	};
	fputs("<form method=\"get\" action=\"/regressions\" class=\"filters\">", c->f);
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		char v[256];
		if (rvs_query_param(c->req->query, fields[i][0], v, sizeof v) != 1)
			v[0] = '\0';
		fprintf(c->f, "<label>%s <input name=\"%s\" value=\"", fields[i][1], fields[i][0]);
		rvs_web_esc(c->f, v);
		fputs("\"></label> ", c->f);
	}
	fputs("<button type=\"submit\">Compare</button></form>", c->f);
}

static void comparison(struct web_ctx *c)
{
	int status = 0;
	json_t *doc = web_api(c, "/api/v1/regressions", c->req->query, &status);
	json_t *a, *b;

	if (!doc) {
		fputs("<p class=\"error\">the comparison failed</p>", c->f);
		return;
	}
	if (status != 200) {
		fputs("<p class=\"error\">", c->f);
		rvs_web_esc(c->f, json_string_value(json_object_get(doc, "error")));
		fputs("</p>", c->f);
		json_decref(doc);
		return;
	}
	a = json_object_get(doc, "a");
	b = json_object_get(doc, "b");
	fputs("<p id=\"sides\">A: ", c->f);
	rvs_web_esc(c->f, json_string_value(json_object_get(a, "label")));
	fprintf(c->f, " (%lld traces) — B: ",
		(long long)json_integer_value(json_object_get(a, "traces")));
	rvs_web_esc(c->f, json_string_value(json_object_get(b, "label")));
	fprintf(c->f,
		" (%lld traces). Mann–Whitney U (exact for small samples without ties, else the "
		"tie-corrected normal approximation),"
		" Benjamini–Hochberg q over every test of a list; ",
		(long long)json_integer_value(json_object_get(b, "traces")));
	rvs_web_esc(c->f, json_string_value(json_object_get(doc, "note")));
	fputs(".</p><h2>Methods (slower in B first)</h2>", c->f);
	web_range(c, "regress-methods", 1, json_array_size(json_object_get(doc, "methods")),
		  json_integer_value(json_object_get(doc, "methods_tested")), 0);
	web_table(c, "regress-methods", METHOD_COLS, sizeof METHOD_COLS / sizeof METHOD_COLS[0],
		  json_object_get(doc, "methods"));
	fputs("<h2>Call chains</h2>", c->f);
	web_range(c, "regress-chains", 1, json_array_size(json_object_get(doc, "chains")),
		  json_integer_value(json_object_get(doc, "chains_tested")), 0);
	web_table(c, "regress-chains", CHAIN_COLS, sizeof CHAIN_COLS / sizeof CHAIN_COLS[0],
		  json_object_get(doc, "chains"));
	json_decref(doc);
}

void rvs_web_regressions(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	int status = 0;
	json_t *doc;

	web_page_begin(c, "Regressions");
	fputs("<h1>What got slower?</h1>", c->f);
	form(c);
	if (c->req->query[0])
		comparison(c);
	fputs("<h2>Automatic comparisons (each version with its predecessor)</h2>", c->f);
	doc = web_api(c, "/api/v1/regressions/runs", "", &status);
	if (doc && status == 200)
		web_table(c, "regress-runs", RUN_COLS, sizeof RUN_COLS / sizeof RUN_COLS[0],
			  json_object_get(doc, "runs"));
	json_decref(doc);
	fputs("<h2>Alert deliveries</h2>", c->f);
	doc = web_api(c, "/api/v1/alerts", "", &status);
	if (doc && status == 200)
		web_table(c, "deliveries", DELIVERY_COLS,
			  sizeof DELIVERY_COLS / sizeof DELIVERY_COLS[0],
			  json_object_get(doc, "deliveries"));
	json_decref(doc);
	web_page_end(c, 200);
}
