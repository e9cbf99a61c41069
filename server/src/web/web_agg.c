/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_agg.c — the web UI's aggregate and differential flame graph pages
 * (/aggregate, /aggregate/diff; server/WEB.md), rendered on the server from
 * the JSON API's /api/v1/aggregate(/diff) replies (agg.c), and their flame
 * graph SVG.
 *
 * The flame graph is an icicle: the app roots on top, each node's width its
 * inclusive time per trace (the diff: both sets' summed, so children always
 * fit inside their parent), children left to right in the reply's order
 * (heaviest first).  The diff shades a node by the regression test of its
 * method's self time per trace (api/regress.c's Mann–Whitney U with
 * Benjamini–Hochberg q over the same two sets): red slower in B, blue
 * faster, saturated by Cliff's delta, only when q < alpha; grey otherwise
 * (noise, or no test: the sets are not two versions of one app), so a
 * change that is noise never looks like a regression.  Each frame of a
 * tested method links to its row on /regressions.  A frame's details (its
 * SVG title: the tooltip) split its self time on and off the CPU over the
 * traces with CPU data when the reply has the node's "cpu" (each side's in
 * the diff); the page says how many of the set's traces carry it.
 * Method names are untrusted: they reach the page only through
 * rvs_web_esc, cut to NAME_SHOWN bytes.  Output is bounded by the reply's
 * node cap (RVS_AGG_MAX_REPLY_NODES) and the table row caps below.
 */
#include "model/agg.h"
#include "base/params.h"
#include "http/reply.h"
#include "http/route.h"
#include "web/web.h"
#include "web/web_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W	   1200.0
#define ROW	   16
#define MIN_W	   0.3
#define NAME_SHOWN 200
#define TABLE_ROWS 300
#define MAX_INDENT 64

static int64_t ival(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static const char *sval(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

/* A name cut to NAME_SHOWN bytes, escaped. */
static void esc_cut(FILE *f, const char *s)
{
	char buf[NAME_SHOWN + 4];
	size_t n = strlen(s);
	if (n <= NAME_SHOWN)
		return rvs_web_esc(f, s);
	memcpy(buf, s, NAME_SHOWN);
	memcpy(buf + NAME_SHOWN, "…", sizeof "…");
	rvs_web_esc(f, buf);
}

struct idpos {
	int64_t id;
	size_t pos;
};

static int cmp_id(const void *a, const void *b)
{
	int64_t x = ((const struct idpos *)a)->id, y = ((const struct idpos *)b)->id;
	return x < y ? -1 : x > y;
}

/* The value a node is drawn with. */
static double node_value(json_t *n, int diff)
{
	if (diff)
		return (double)ival(n, "a_incl_ns_per_trace") +
		       (double)ival(n, "b_incl_ns_per_trace");
	return (double)ival(n, "incl_ns_per_trace");
}

/* The on/off-CPU split of node nd's member key ("cpu", "a_cpu", "b_cpu":
 * API.md) into a frame's details: its self time on and off the CPU, means
 * per trace over the traces with CPU data, and how many; nothing when the
 * node has none (no member). */
static void cpu_detail(FILE *f, json_t *nd, const char *key, const char *label)
{
	json_t *cpu = json_object_get(nd, key);
	int64_t n = ival(cpu, "traces");

	if (n <= 0)
		return;
	fprintf(f,
		"; %sself on the CPU %.3f ms, off it %.3f ms per trace"
		" (over the %lld traces with CPU data)",
		label, (double)ival(cpu, "on_cpu_self_ns") / (double)n / 1e6,
		(double)ival(cpu, "off_cpu_self_ns") / (double)n / 1e6, (long long)n);
}

static unsigned name_hash(const char *s)
{
	unsigned h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The regression reply's method rows by name (borrowed from regress, which
 * must outlive it); an empty object when regress is NULL.  NULL on ENOMEM. */
static json_t *rows_by_method(json_t *regress)
{
	json_t *by = json_object(), *row;
	size_t i;

	json_array_foreach(json_object_get(regress, "methods"), i, row)
	{
		const char *m = json_string_value(json_object_get(row, "method"));
		if (by && m && json_object_set(by, m, row) < 0) {
			json_decref(by);
			return NULL;
		}
	}
	return by;
}

/* A diff node's fill and class from its method's row of the regression
 * reply (NULL: not tested): coloured only when the self-time test's q is
 * below alpha, saturated by |Cliff's delta|; grey otherwise. */
static const char *shade(json_t *row, double alpha, char *fill, size_t len)
{
	json_t *self = json_object_get(row, "self");
	double q = json_number_value(json_object_get(self, "q"));
	double d = json_number_value(json_object_get(self, "cliffs_delta"));
	int k = (int)lround(200 * (1 - fmin(fabs(d), 1)));

	if (!self || !(q < alpha) || d == 0) {
		snprintf(fill, len, "#dddddd");
		return "n same";
	}
	if (d > 0)
		snprintf(fill, len, "rgb(255,%d,%d)", k + 30, k + 30);
	else
		snprintf(fill, len, "rgb(%d,%d,255)", k + 30, k + 30);
	return d > 0 ? "n slower" : "n faster";
}

void rvs_agg_flame_svg(FILE *f, json_t *doc, int diff, json_t *regress, const char *link)
{
	json_t *nodes = json_object_get(doc, "nodes");
	size_t n = json_array_size(nodes), drawn = 0, maxdepth = 0;
	struct idpos *ix = malloc((n + 1) * sizeof *ix);
	double *x = malloc((n + 1) * sizeof *x), *cur = malloc((n + 1) * sizeof *cur);
	double total = 0, rootx = 0;
	double alpha = json_number_value(json_object_get(regress, "alpha"));
	json_t *by = diff ? rows_by_method(regress) : NULL;

	if (!ix || !x || !cur || (diff && !by)) {
		fputs("<p>Out of memory.</p>", f);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *nd = json_array_get(nodes, i);
		size_t d = (size_t)ival(nd, "depth");
		ix[i].id = ival(nd, "node");
		ix[i].pos = i;
		if (!ival(nd, "parent"))
			total += node_value(nd, diff);
		maxdepth = d > maxdepth ? d : maxdepth;
	}
	if (total <= 0) {
		fputs("<p id=\"flame-empty\">No call paths in this set of traces.</p>", f);
		goto out;
	}
	qsort(ix, n, sizeof *ix, cmp_id);
	fprintf(f,
		"<svg class=\"aggflame\" id=\"aggflame\" xmlns=\"http://www.w3.org/2000/svg\""
		" viewBox=\"0 0 %.0f %zu\" width=\"100%%\" font-family=\"monospace\""
		" font-size=\"11\">",
		W, (maxdepth + 1) * ROW);
	for (size_t i = 0; i < n; i++) {
		json_t *nd = json_array_get(nodes, i);
		struct idpos key = {ival(nd, "parent"), 0}, *p;
		double v = node_value(nd, diff), px, pw;
		const char *cls = "n";
		char fill[48];

		if (!key.id) {
			x[i] = rootx;
			rootx += v;
		} else if ((p = bsearch(&key, ix, n, sizeof *ix, cmp_id))) {
			x[i] = cur[p->pos];
			cur[p->pos] += v;
		} else {
			continue; /* parent not listed: the reply lists closed sets */
		}
		cur[i] = x[i];
		px = x[i] / total * W;
		pw = v / total * W;
		if (pw < MIN_W)
			continue;
		json_t *row = diff ? json_object_get(by, sval(nd, "method")) : NULL;
		if (diff) {
			cls = shade(row, alpha, fill, sizeof fill);
		} else {
			unsigned h = name_hash(sval(nd, "method"));
			snprintf(fill, sizeof fill, "rgb(%u,%u,%u)", 205 + h % 50,
				 90 + (h >> 8) % 120, 40 + (h >> 16) % 50);
		}
		fprintf(f, "<g class=\"%s\" data-node=\"%lld\">", cls, (long long)ival(nd, "node"));
		if (!diff && link && key.id) {
			/* The captures where this frame is heaviest (/heaviest). */
			fputs("<a class=\"frame\" href=\"", f);
			rvs_web_esc(f, link);
			fprintf(f, "&amp;node=%lld&amp;frame=", (long long)ival(nd, "node"));
			rvs_web_urlenc(f, sval(nd, "method"));
			fputs("\">", f);
		} else if (row && link) {
			/* The method's row on /regressions (web_regress.c's ids);
			 * a frame whose method has none (an app's root, a method
			 * past the reply's rows) links nowhere. */
			fputs("<a href=\"", f);
			rvs_web_esc(f, link);
			fputs("#m-", f);
			rvs_web_urlenc(f, sval(nd, "method"));
			fputs("\">", f);
		}
		fputs("<title>", f);
		esc_cut(f, sval(nd, "method"));
		if (diff) {
			json_t *self = json_object_get(row, "self");
			fprintf(f,
				" — self per trace %.3f → %.3f ms (%+.3f), inclusive %.3f → %.3f "
				"ms;"
				" %lld / %lld traces",
				ival(nd, "a_self_ns_per_trace") / 1e6,
				ival(nd, "b_self_ns_per_trace") / 1e6,
				ival(nd, "self_delta_ns") / 1e6,
				ival(nd, "a_incl_ns_per_trace") / 1e6,
				ival(nd, "b_incl_ns_per_trace") / 1e6,
				(long long)ival(nd, "a_traces"), (long long)ival(nd, "b_traces"));
			if (self)
				fprintf(f, "; method's self time: q = %.3g, Cliff's δ = %+.2f",
					json_number_value(json_object_get(self, "q")),
					json_number_value(json_object_get(self, "cliffs_delta")));
			else
				fputs("; method's self time not tested", f);
			cpu_detail(f, nd, "a_cpu", "A: ");
			cpu_detail(f, nd, "b_cpu", "B: ");
		} else {
			fprintf(f, " — %.3f ms per trace (self %.3f ms); in %lld traces",
				ival(nd, "incl_ns_per_trace") / 1e6,
				ival(nd, "self_ns_per_trace") / 1e6, (long long)ival(nd, "traces"));
			cpu_detail(f, nd, "cpu", "");
		}
		fprintf(f,
			"</title><rect x=\"%.2f\" y=\"%lld\" width=\"%.2f\" height=\"%d\""
			" fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\"/>",
			px, (long long)ival(nd, "depth") * ROW, pw, ROW - 1, fill);
		if (pw > 40) {
			char label[NAME_SHOWN + 1];
			size_t fit = (size_t)(pw / 7), len = strlen(sval(nd, "method"));
			fit = fit > NAME_SHOWN ? NAME_SHOWN : fit;
			fit = len < fit ? len : fit;
			memcpy(label, sval(nd, "method"), fit);
			label[fit] = '\0';
			fprintf(f, "<text x=\"%.2f\" y=\"%lld\">", px + 2,
				(long long)ival(nd, "depth") * ROW + ROW - 4);
			rvs_web_esc(f, label);
			fputs("</text>", f);
		}
		fputs((row && link) || (!diff && link && key.id) ? "</a></g>" : "</g>", f);
		drawn++;
	}
	fprintf(f,
		"</svg><p class=\"caption\" id=\"flame-legend\">%zu of %zu listed paths drawn"
		" (narrower ones left out)",
		drawn, n);
	if (diff && regress)
		fprintf(f,
			"; colour: the method's self time per trace as tested on What got slower"
			" (Mann–Whitney U, Benjamini–Hochberg q): red slower in B, blue faster,"
			" saturated by Cliff's δ, only where q &lt; %.2g; grey where q ≥ %.2g"
			" (not significant: noise) or the method was not tested; click a frame"
			" for its row",
			alpha, alpha);
	else if (diff)
		fputs("; grey: no significance test applies to these two sets (they are not"
		      " two versions of one app), so no change is shown as a regression",
		      f);
	fputs(".</p>", f);
out:
	json_decref(by);
	free(ix);
	free(x);
	free(cur);
}

/* ---- the pages -------------------------------------------------------------- */

static const char *const FIELDS[] = {"version", "model", "kind",  "campaign",
				     "method",	"chain", "since", "until"};
#define NFIELDS (sizeof FIELDS / sizeof FIELDS[0])

static void input(struct web_ctx *c, const char *name, const char *label)
{
	char v[1024] = "";
	if (rvs_query_param(c->req->query, name, v, sizeof v) != 1)
		v[0] = '\0';
	fputs("<label>", c->f);
	rvs_web_esc(c->f, label);
	fputs(" <input name=\"", c->f);
	rvs_web_esc(c->f, name);
	fprintf(c->f, "\"%s value=\"", web_list_of(name));
	rvs_web_esc(c->f, v);
	fputs("\"></label> ", c->f);
}

static void filter_form(struct web_ctx *c, int diff)
{
	char name[32], app[256];

	if (rvs_query_param(c->req->query, "app", app, sizeof app) != 1)
		app[0] = '\0';
	web_version_lists(c, app);
	fprintf(c->f, "<form class=\"filters\" method=\"get\" action=\"%s\">",
		diff ? "/aggregate/diff" : "/aggregate");
	input(c, "app", "app");
	for (int s = 0; s < (diff ? 2 : 1); s++) {
		if (diff)
			fprintf(c->f, "<fieldset><legend>Set %c</legend>", s ? 'B' : 'A');
		for (size_t i = 0; i < NFIELDS; i++) {
			snprintf(name, sizeof name, "%s%s", diff ? (s ? "b." : "a.") : "",
				 FIELDS[i]);
			input(c, name, FIELDS[i]);
		}
		if (diff)
			fputs("</fieldset>", c->f);
	}
	fputs("<button type=\"submit\">Show</button></form>"
	      "<p class=\"caption\">kind: the anomaly kind's number or name (ANOMALY_JANK); "
	      "since/until: unix seconds"
	      " (received); chain: a signature (16 hex) or a chain \"a;b;c\"; times are per"
	      " trace, the mean over the set.</p>",
	      c->f);
}

/* A side's trace count, its source, and how many of its traces carry CPU
 * data (the frames' on/off-CPU split is over those). */
static void side_line(struct web_ctx *c, json_t *side, const char *id, const char *label)
{
	int64_t cpu = ival(side, "cpu_traces");

	fprintf(c->f, "<p id=\"%s\">%s<b>%lld</b> traces (from %s)%s; ", id, label,
		(long long)ival(side, "traces"), sval(side, "source"),
		json_is_true(json_object_get(side, "sampled"))
			? "; the most recent only: the filter matched more"
			: "");
	if (cpu > 0)
		fprintf(c->f,
			"<span class=\"cpu-traces\"><b>%lld</b> of them carry CPU data</span>"
			" (a frame's details split its self time on and off the CPU over"
			" those)</p>",
			(long long)cpu);
	else
		fputs("<span class=\"cpu-traces\">none carries CPU data</span> (no on/off-CPU"
		      " split)</p>",
		      c->f);
}

static void ms(FILE *f, json_t *o, const char *key)
{
	fprintf(f, "<td class=\"num\">%.3f</td>", ival(o, key) / 1e6);
}

static void top_down(struct web_ctx *c, json_t *nodes, int diff)
{
	size_t i;
	json_t *nd;
	fputs("<h2>Top-down</h2><table id=\"top-down\"><thead><tr><th>Call path</th>", c->f);
	fputs(diff ? "<th>A incl ms</th><th>B incl ms</th><th>Δ incl</th><th>A self ms</th>"
		     "<th>B self ms</th><th>Δ self</th>"
		   : "<th>Incl ms / trace</th><th>Self ms / trace</th><th>Traces</th>",
	      c->f);
	fputs("</tr></thead><tbody>", c->f);
	json_array_foreach(nodes, i, nd)
	{
		if (i == TABLE_ROWS)
			break;
		/* Indented by depth in text: the CSP allows no inline style. */
		fputs("<tr><td class=\"path\">", c->f);
		for (int64_t d = ival(nd, "depth"); d > 0 && d <= MAX_INDENT; d--)
			fputs("&#160;&#160;", c->f);
		esc_cut(c->f, sval(nd, "method"));
		fputs("</td>", c->f);
		if (diff) {
			ms(c->f, nd, "a_incl_ns_per_trace");
			ms(c->f, nd, "b_incl_ns_per_trace");
			ms(c->f, nd, "incl_delta_ns");
			ms(c->f, nd, "a_self_ns_per_trace");
			ms(c->f, nd, "b_self_ns_per_trace");
			ms(c->f, nd, "self_delta_ns");
		} else {
			ms(c->f, nd, "incl_ns_per_trace");
			ms(c->f, nd, "self_ns_per_trace");
			fprintf(c->f, "<td class=\"num\">%lld</td>", (long long)ival(nd, "traces"));
		}
		fputs("</tr>", c->f);
	}
	fputs("</tbody></table>", c->f);
}

static void bottom_up(struct web_ctx *c, json_t *rows, int diff)
{
	size_t i;
	json_t *r;
	fputs(diff ? "<h2>Bottom-up (by change of self time)</h2>"
		   : "<h2>Bottom-up (by self time)</h2>",
	      c->f);
	fputs("<table id=\"bottom-up\"><thead><tr><th>App</th><th>Method</th>", c->f);
	fputs(diff ? "<th>A self ms</th><th>B self ms</th><th>Δ self</th><th>A incl ms</th>"
		     "<th>B incl ms</th><th>Δ incl</th>"
		   : "<th>Self ms / trace</th><th>Incl ms / trace</th>",
	      c->f);
	fputs("</tr></thead><tbody>", c->f);
	json_array_foreach(rows, i, r)
	{
		const char *m = sval(r, "method"), *app = sval(r, "app_id");
		/* One row per app and method: each app's means over its traces. */
		fputs("<tr><td>", c->f);
		esc_cut(c->f, app);
		fputs("</td><td>", c->f);
		if (m[0] != '(') {
			fputs("<a href=\"/methods/", c->f);
			rvs_web_urlenc(c->f, m);
			fputs("\">", c->f);
		}
		esc_cut(c->f, m);
		fputs(m[0] != '(' ? "</a></td>" : "</td>", c->f);
		if (diff) {
			ms(c->f, r, "a_self_ns_per_trace");
			ms(c->f, r, "b_self_ns_per_trace");
			ms(c->f, r, "self_delta_ns");
			ms(c->f, r, "a_incl_ns_per_trace");
			ms(c->f, r, "b_incl_ns_per_trace");
			ms(c->f, r, "incl_delta_ns");
		} else {
			ms(c->f, r, "self_ns_per_trace");
			ms(c->f, r, "incl_ns_per_trace");
		}
		fputs("</tr>", c->f);
	}
	fputs("</tbody></table>", c->f);
}

/* When the diff's sets are two versions of one app and nothing else (the
 * comparison /regressions tests): its /api/v1/regressions reply (caller
 * json_decref) and in *link (caller frees) that page's path; else NULL. */
static json_t *regressions_of(struct web_ctx *c, char **link)
{
	char app[256], v[2][256], other[1024], name[32];
	char *q = NULL;
	size_t qlen = 0;
	json_t *doc = NULL;
	int status = 0;
	FILE *m;

	*link = NULL;
	if (rvs_query_param(c->req->query, "app", app, sizeof app) != 1 || !app[0])
		return NULL;
	for (int s = 0; s < 2; s++) {
		snprintf(name, sizeof name, "%s.version", s ? "b" : "a");
		if (rvs_query_param(c->req->query, name, v[s], sizeof v[s]) != 1 || !v[s][0])
			return NULL;
		for (size_t i = 0; i < NFIELDS; i++) {
			snprintf(name, sizeof name, "%s.%s", s ? "b" : "a", FIELDS[i]);
			int rc = strcmp(FIELDS[i], "version")
					 ? rvs_query_param(c->req->query, name, other, sizeof other)
					 : 0;
			if (rc < 0 || (rc > 0 && other[0]))
				return NULL;
		}
	}
	if (!strcmp(v[0], v[1]) || !(m = open_memstream(&q, &qlen)))
		return NULL;
	fputs("app=", m);
	rvs_web_urlenc(m, app);
	fputs("&a=", m);
	rvs_web_urlenc(m, v[0]);
	fputs("&b=", m);
	rvs_web_urlenc(m, v[1]);
	fputs("&limit=500", m); /* every method a frame may need */
	if (fclose(m)) {
		free(q);
		return NULL;
	}
	doc = web_api(c, "/api/v1/regressions", q, &status);
	if (doc && status == 200 && asprintf(link, "/regressions?%s", q) > 0) {
		free(q);
		return doc;
	}
	*link = NULL;
	json_decref(doc);
	free(q);
	return NULL;
}

/* A heatmap cell's aggregate (its since/until and dur_min/dur_max, and the
 * heatmap's range as range_since/range_until): a link to the diff of the
 * cell (A) against the rest of the range (B: the range except the cell). */
static void rest_of_range_link(struct web_ctx *c)
{
	static const char *const common[] = {"app", "kind", "issue"};
	static const char *const cell[] = {"since", "until", "dur_min", "dur_max"};
	char v[256], rs[32], ru[32];

	if (rvs_query_param(c->req->query, "range_since", rs, sizeof rs) != 1 ||
	    rvs_query_param(c->req->query, "range_until", ru, sizeof ru) != 1)
		return;
	fputs("<p><a id=\"cell-diff\" href=\"/aggregate/diff?b.since=", c->f);
	rvs_web_urlenc(c->f, rs);
	fputs("&amp;b.until=", c->f);
	rvs_web_urlenc(c->f, ru);
	for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
		if (rvs_query_param(c->req->query, common[i], v, sizeof v) == 1 && v[0]) {
			fprintf(c->f, "&amp;%s=", common[i]);
			rvs_web_urlenc(c->f, v);
		}
	for (size_t i = 0; i < sizeof cell / sizeof cell[0]; i++)
		if (rvs_query_param(c->req->query, cell[i], v, sizeof v) == 1 && v[0]) {
			fprintf(c->f, "&amp;a.%s=", cell[i]);
			rvs_web_urlenc(c->f, v);
			fprintf(c->f, "&amp;b.except_%s=", cell[i]);
			rvs_web_urlenc(c->f, v);
		}
	fputs("\">Compare with the rest of the range (differential flame graph)</a></p>", c->f);
}

static void aggregate_page(struct web_ctx *c, int diff)
{
	static const char *const web_only[] = {"range_since", "range_until", NULL};
	int status;
	char *q = web_query_without(c->req->query, web_only);
	json_t *doc =
		q ? web_api(c, diff ? "/api/v1/aggregate/diff" : "/api/v1/aggregate", q, &status)
		  : NULL;
	char app[256] = "";

	if (!doc || status != 200) {
		char msg[256];
		snprintf(msg, sizeof msg, "%s",
			 doc ? sval(doc, "error") : "the aggregate query failed");
		json_decref(doc);
		free(q);
		return web_error(c, status == 400 ? 400 : 500, msg);
	}
	web_page_begin(c, diff ? "Differential flame graph" : "Aggregate flame graph");
	filter_form(c, diff);
	if (diff) {
		side_line(c, json_object_get(doc, "a"), "agg-a", "A: ");
		side_line(c, json_object_get(doc, "b"), "agg-b", "B: ");
	} else {
		side_line(c, doc, "agg-traces", "");
		if (rvs_query_param(c->req->query, "app", app, sizeof app) != 1)
			app[0] = '\0';
		fputs("<p><a id=\"to-diff\" href=\"/aggregate/diff?app=", c->f);
		rvs_web_urlenc(c->f, app);
		fputs("\">Compare two sets (differential flame graph)</a></p>", c->f);
		rest_of_range_link(c);
	}
	if (diff) {
		char *link = NULL;
		json_t *regress = regressions_of(c, &link);
		rvs_agg_flame_svg(c->f, doc, diff, regress, link);
		json_decref(regress);
		free(link);
	} else {
		/* Each frame links to the captures where it is heaviest. */
		char *link = NULL;
		if (asprintf(&link, "/heaviest?%s", q[0] ? q : "by=incl") < 0)
			link = NULL;
		rvs_agg_flame_svg(c->f, doc, 0, NULL, link);
		free(link);
	}
	free(q);
	top_down(c, json_object_get(doc, "nodes"), diff);
	bottom_up(c, json_object_get(doc, "bottom_up"), diff);
	json_decref(doc);
	web_page_end(c, 200);
}

void rvs_web_aggregate(struct rvs_call *call)
{
	aggregate_page(call->ctx, 0);
}

void rvs_web_aggregate_diff(struct rvs_call *call)
{
	aggregate_page(call->ctx, 1);
}
