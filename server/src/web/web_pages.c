/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_pages.c — the UI's read pages: trace list, trace, method (and the
 * signatures page's old address, moved to /issues).
 *
 * Each page asks the JSON API (rvs_api_v1, via web_api) for exactly
 * the document /api/v1/… serves and renders it, so every figure on a page
 * is also available to API clients.  Every value from the document passes
 * through rvs_web_esc (text, quoted attributes) or rvs_web_urlenc (links);
 * trace ids in links are the validated "t-" + hex form.  The trace page's
 * flame graph and timeline come from the decoded capture, which carries
 * more than the summary the API serves; so does its "why the time went"
 * (off-CPU time, counters, lock waits), computed by why.c as the API's
 * "why" object is.
 */
#include "web/web.h"
#include "web/web_int.h"
#include "base/params.h"
#include "pipeline/trace_load.h"
#include "model/why.h"
#include "model/users.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <protobuf-c/protobuf-c.h>

#include "rearview/analysis.h"
#include "rearview/common.pb-c.h"
#include "http/route.h"

/* ---- small renderers ------------------------------------------------------ */

static void time_cell(FILE *f, json_t *v)
{
	char buf[32];
	time_t t;
	struct tm tm;
	if (!json_is_integer(v)) {
		fputs("–", f);
		return;
	}
	t = (time_t)json_integer_value(v);
	if (gmtime_r(&t, &tm) && strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm))
		fprintf(f, "%s UTC", buf);
}

static void method_link(FILE *f, const char *name)
{
	fputs("<a href=\"/methods/", f);
	rvs_web_urlenc(f, name);
	fputs("\">", f);
	rvs_web_esc(f, name);
	fputs("</a>", f);
}

static void trace_link(FILE *f, const char *id)
{
	fputs("<a href=\"/traces/", f);
	rvs_web_urlenc(f, id);
	fputs("\">", f);
	rvs_web_esc(f, id);
	fputs("</a>", f);
}

/* A chain "a;b;c;" as linked method names, outer first. */
static void chain_cell(FILE *f, const char *chain)
{
	char name[4096];
	const char *p = chain;
	int first = 1;
	while (p && *p) {
		size_t n = strcspn(p, ";");
		if (n && n < sizeof name) {
			memcpy(name, p, n);
			name[n] = '\0';
			if (!first)
				fputs(" → ", f);
			method_link(f, name);
			first = 0;
		}
		p += n;
		if (*p == ';')
			p++;
	}
}

/* A text input for filter key, prefilled from the page's query. */
static void filter_input(struct web_ctx *c, const char *key, const char *label, const char *type)
{
	char v[1024];
	if (rvs_query_param(c->req->query, key, v, sizeof v) != 1)
		v[0] = '\0';
	fprintf(c->f, "<label>%s <input name=\"%s\" type=\"%s\" value=\"", label, key, type);
	rvs_web_esc(c->f, v);
	fputs("\"></label>", c->f);
}

static void kind_select(struct web_ctx *c)
{
	const ProtobufCEnumDescriptor *d = &rearview__anomaly_kind__descriptor;
	char v[32];
	if (rvs_query_param(c->req->query, "kind", v, sizeof v) != 1)
		v[0] = '\0';
	fputs("<label>Anomaly kind <select name=\"kind\"><option value=\"\">any</option>", c->f);
	for (unsigned i = 0; i < d->n_values; i++) {
		char num[16];
		if (d->values[i].value == 0)
			continue;
		snprintf(num, sizeof num, "%d", d->values[i].value);
		fprintf(c->f, "<option value=\"%s\"%s>", num,
			strcmp(v, num) == 0 ? " selected" : "");
		rvs_web_esc(c->f, d->values[i].name);
		fputs("</option>", c->f);
	}
	fputs("</select></label>", c->f);
}

/* The worst-traces order (search.c's sort keys); the issue being listed
 * rides along hidden. */
static void sort_select(struct web_ctx *c)
{
	static const char *const keys[][2] = {
		{"", "Newest first"},	    {"severity", "Severity"},
		{"duration", "Duration"},   {"age", "Oldest anomaly"},
		{"-age", "Newest anomaly"}, {"self", "Self time of the method"},
	};
	char v[64], issue[64];
	if (rvs_query_param(c->req->query, "sort", v, sizeof v) != 1)
		v[0] = '\0';
	fputs("<label>Sort <select name=\"sort\">", c->f);
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		fprintf(c->f, "<option value=\"%s\"%s>%s</option>", keys[i][0],
			strcmp(v, keys[i][0]) == 0 ? " selected" : "", keys[i][1]);
	fputs("</select></label>", c->f);
	if (rvs_query_param(c->req->query, "issue", issue, sizeof issue) == 1) {
		fputs("<input type=\"hidden\" name=\"issue\" value=\"", c->f);
		rvs_web_esc(c->f, issue);
		fputs("\">", c->f);
	}
}

/* The page's query without its parameter name (its page: "cursor",
 * "offset"), escaped for an href, ending "&amp;" when not empty. */
static void query_without(FILE *f, const char *q, const char *name)
{
	const char *p = q;
	size_t nl = strlen(name);
	int first = 1;
	while (p && *p) {
		const char *amp = strchr(p, '&');
		size_t n = amp ? (size_t)(amp - p) : strlen(p);
		if (n && !(strncmp(p, name, nl) == 0 && p[nl] == '=')) {
			char part[1024];
			snprintf(part, sizeof part, "%.*s", (int)n, p);
			if (!first)
				fputs("&amp;", f);
			rvs_web_esc(f, part);
			first = 0;
		}
		p = amp ? amp + 1 : NULL;
	}
	if (!first)
		fputs("&amp;", f);
}

/* ---- tables ----------------------------------------------------------------- */

/* Member key of o; "a.b" reaches into a nested object. */
static json_t *member(json_t *o, const char *key)
{
	const char *dot = strchr(key, '.');
	char head[64];
	if (!dot || (size_t)(dot - key) >= sizeof head)
		return json_object_get(o, key);
	memcpy(head, key, (size_t)(dot - key));
	head[dot - key] = '\0';
	return json_object_get(json_object_get(o, head), dot + 1);
}

static void list_cell(struct web_ctx *c, json_t *a, const char *sep)
{
	json_t *v;
	size_t i;
	json_array_foreach(a, i, v)
	{
		if (i)
			fputs(sep, c->f);
		rvs_web_esc(c->f, json_string_value(v));
	}
}

static void cell(struct web_ctx *c, json_t *o, const struct web_col *k)
{
	json_t *v = member(o, k->key);
	const char *s = json_string_value(v);
	switch (k->kind) {
	case COL_NUM:
		if (json_is_integer(v))
			fprintf(c->f, "%lld", (long long)json_integer_value(v));
		break;
	case COL_MS:
		web_ms(c->f, v);
		break;
	case COL_PCT:
		fprintf(c->f, "%.0f%%", 100.0 * json_number_value(v));
		break;
	case COL_TIME:
		time_cell(c->f, v);
		break;
	case COL_TRACE:
		trace_link(c->f, s ? s : "");
		break;
	case COL_METHOD:
		method_link(c->f, s ? s : "");
		break;
	case COL_CHAIN:
		chain_cell(c->f, s);
		break;
	case COL_KIND:
		rvs_web_esc(c->f, web_kind_name((int)json_integer_value(v)));
		break;
	case COL_SIGNATURE:
		if (!s)
			break;
		fputs("<a href=\"/traces?signature=", c->f);
		rvs_web_urlenc(c->f, s);
		fputs("\">", c->f);
		rvs_web_esc(c->f, s);
		fputs("</a>", c->f);
		break;
	case COL_LIST:
		list_cell(c, v, ", ");
		break;
	default:
		web_field(c, o, k->key);
	}
}

void web_table(struct web_ctx *c, const char *id, const struct web_col *cols, size_t n,
	       json_t *rows)
{
	json_t *o;
	size_t i;
	fprintf(c->f, "<table id=\"%s\"><thead><tr>", id);
	for (size_t k = 0; k < n; k++)
		fprintf(c->f, "<th>%s</th>", cols[k].head);
	fputs("</tr></thead><tbody>", c->f);
	json_array_foreach(rows, i, o)
	{
		fputs("<tr>", c->f);
		for (size_t k = 0; k < n; k++) {
			int num = cols[k].kind == COL_NUM || cols[k].kind == COL_MS ||
				  cols[k].kind == COL_PCT;
			fputs(num ? "<td class=\"n\">" : "<td>", c->f);
			if (cols[k].kind == COL_CUSTOM)
				cols[k].render(c, o);
			else
				cell(c, o, &cols[k]);
			fputs("</td>", c->f);
		}
		fputs("</tr>", c->f);
	}
	fputs("</tbody></table>", c->f);
}

/* ---- /traces ---------------------------------------------------------------- */

/* The query without empty parameters (the filter form submits every field,
 * and an empty one means "any", which the API expresses by absence) and
 * without the form's from= / to= (time_params gives the API their value). */
static void drop_empty(const char *q, char *out, size_t cap)
{
	size_t o = 0;
	const char *p = q;
	out[0] = '\0';
	while (p && *p) {
		const char *amp = strchr(p, '&');
		size_t n = amp ? (size_t)(amp - p) : strlen(p);
		const char *eq = memchr(p, '=', n);
		int dates = !strncmp(p, "from=", 5) || !strncmp(p, "to=", 3) ||
			    !strncmp(p, "first=", 6); /* the page's, not the API's */
		if (n && !dates && (!eq || eq + 1 < p + n) && o + n + 2 < cap) {
			if (o)
				out[o++] = '&';
			memcpy(out + o, p, n);
			o += n;
			out[o] = '\0';
		}
		p = amp ? amp + 1 : NULL;
	}
}

static const struct web_col TRACE_COLS[] = {
	{"Trace", "trace_id", COL_TRACE, NULL},	      {"App", "app_id", COL_TEXT, NULL},
	{"Version", "app_version", COL_TEXT, NULL},   {"Model", "model", COL_TEXT, NULL},
	{"OS build", "os_build", COL_TEXT, NULL},     {"Anomaly", "anomaly_kind", COL_KIND, NULL},
	{"Name", "anomaly_name", COL_TEXT, NULL},     {"Severity", "severity", COL_NUM, NULL},
	{"Duration ms", "duration_ns", COL_MS, NULL}, {"Received", "received_at", COL_TIME, NULL},
};

/* The form's "from" / "to" (datetime-local, read as UTC) as the API's
 * since= / until= (unix seconds), each followed by '&', into out. */
static int time_params(const char *query, char *out, size_t cap)
{
	static const char *const names[2][2] = {{"from", "since"}, {"to", "until"}};
	size_t o = 0;
	out[0] = '\0';
	for (int i = 0; i < 2; i++) {
		char v[64], *end;
		struct tm tm;
		if (rvs_query_param(query, names[i][0], v, sizeof v) != 1 || !v[0])
			continue;
		memset(&tm, 0, sizeof tm);
		end = strptime(v, "%Y-%m-%dT%H:%M", &tm);
		if (end && *end == ':')
			end = strptime(end, ":%S", &tm);
		if (!end || *end)
			return -EINVAL;
		o += (size_t)snprintf(out + o, cap - o, "%s=%lld&", names[i][1],
				      (long long)timegm(&tm));
		if (o >= cap)
			return -E2BIG;
	}
	return 0;
}

void web_traces_page(struct web_ctx *c)
{
	char q[sizeof c->req->query + 64];
	int status;
	int64_t first;
	json_t *doc, *items, *next;

	if (time_params(c->req->query, q, sizeof q))
		return web_error(c, 400, "bad date: use YYYY-MM-DDTHH:MM (UTC)");
	drop_empty(c->req->query, q + strlen(q), sizeof q - strlen(q));
	doc = web_api(c, "/api/v1/traces", q, &status);

	if (!doc || status != 200) {
		/* The API's reason (e.g. which sort key it does not know). */
		const char *msg = json_string_value(json_object_get(doc, "error"));
		web_error(c, status == 400 ? 400 : 500,
			  status == 400 ? (msg ? msg : "bad filter value") : "query failed");
		json_decref(doc);
		return;
	}
	web_page_begin(c, "Traces");
	fputs("<form class=\"filters\" method=\"get\" action=\"/traces\">", c->f);
	filter_input(c, "app", "App", "text");
	filter_input(c, "version", "App version", "text");
	filter_input(c, "model", "Device model", "text");
	filter_input(c, "os_build", "OS build", "text");
	kind_select(c);
	filter_input(c, "min_severity", "Min severity", "number");
	filter_input(c, "from", "Received from (UTC)", "datetime-local");
	filter_input(c, "to", "Received before (UTC)", "datetime-local");
	filter_input(c, "signature", "Signature", "text");
	filter_input(c, "method", "Contains method", "text");
	sort_select(c);
	fputs("<button type=\"submit\">Filter</button> <a href=\"/traces\">Clear</a></form>", c->f);
	items = json_object_get(doc, "traces");
	first = web_first_row(c->req->query);
	web_range(c, "traces", first, json_array_size(items),
		  json_integer_value(json_object_get(doc, "total")),
		  json_is_true(json_object_get(doc, "total_capped")));
	web_table(c, "traces", TRACE_COLS, sizeof TRACE_COLS / sizeof TRACE_COLS[0], items);
	next = json_object_get(doc, "next_cursor");
	if (json_is_string(next)) {
		fputs("<p><a id=\"next\" rel=\"next\" href=\"/traces?", c->f);
		query_without(c->f, q, "cursor");
		fputs("cursor=", c->f);
		rvs_web_urlenc(c->f, json_string_value(next));
		fprintf(c->f, "&amp;first=%lld\">Next page →</a></p>",
			(long long)(first + (int64_t)json_array_size(items)));
	}
	json_decref(doc);
	web_page_end(c, 200);
}

/* ---- /traces/{id} ----------------------------------------------------------- */

static void meta_row(struct web_ctx *c, json_t *doc, const char *label, const char *key)
{
	fprintf(c->f, "<tr><th>%s</th><td>", label);
	web_field(c, doc, key);
	fputs("</td></tr>", c->f);
}

static void exports(struct web_ctx *c, const char *id)
{
	static const char *const fmts[][2] = {
		{"folded", "Folded stacks"},   {"chrome", "Chrome JSON"},
		{"speedscope", "speedscope"},  {"perfetto", "Perfetto"},
		{"android", "Android .trace"}, {"svg", "Flame graph SVG"},
		{"nanoscope", "Nanoscope"},    {"pprof", "pprof"},
	};
	fputs("<h2>Export</h2><p class=\"exports\">", c->f);
	for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++)
		fprintf(c->f,
			"<a class=\"export\" download href=\"/traces/%s/export?format=%s\">%s</a> ",
			id, fmts[i][0], fmts[i][1]);
	/* speedscope loads the profile from this origin with the session cookie. */
	fprintf(c->f,
		"<a id=\"speedscope\" "
		"href=\"/static/speedscope/index.html#profileURL=%%2Ftraces%%2F%s"
		"%%2Fexport%%3Fformat%%3Dspeedscope&amp;title=%s\">Open in speedscope</a></p>",
		id, id);
}

/* The top-self table's link to a method's butterfly in this trace (the
 * page's path, "/traces/" and a checked trace id). */
static void butterfly_cell(struct web_ctx *c, json_t *row)
{
	const char *m = json_string_value(json_object_get(row, "method"));
	if (!m)
		return;
	fprintf(c->f, "<a href=\"%s/butterfly?method=", c->req->path);
	rvs_web_urlenc(c->f, m);
	fputs("\">callers and callees</a>", c->f);
}

static const struct web_col TOP_COLS[] = {
	{"#", "rank", COL_NUM, NULL},
	{"Method", "method", COL_METHOD, NULL},
	{"Calls", "calls", COL_NUM, NULL},
	{"Self ms", "self_ns", COL_MS, NULL},
	{"Inclusive ms", "incl_ns", COL_MS, NULL},
	{"Butterfly", "method", COL_CUSTOM, butterfly_cell},
};
static const struct web_col CHAIN_COLS[] = {
	{"Kind", "kind", COL_TEXT, NULL},
	{"#", "rank", COL_NUM, NULL},
	{"Chain (outer first)", "chain", COL_CHAIN, NULL},
	{"Self ms", "self_ns", COL_MS, NULL},
	{"Signature", "signature", COL_SIGNATURE, NULL},
};

/* ---- why the time went (OFFCPU, THREAD_COUNTERS, LOCK_WAIT records) ------- */

static void ms_cell(FILE *f, int64_t ns)
{
	fprintf(f, "<td class=\"n\">%.3f</td>", (double)ns / 1e6);
}

/* The trace page's "Why the time went": the off-CPU time by reason, the
 * methods with the most off-CPU time split into on-CPU and off-CPU time,
 * each thread's counters, and the lock waits with the holder's thread and
 * method.  From the decoded capture, with why.c's figures (the API's
 * document carries the same as "why"); nothing when it has none of these
 * records. */
static void why_section(struct web_ctx *c, const rva_trace *t)
{
	int off = rva_trace_has_offcpu(t) && !t->weighted;
	if (!rvs_why_has(t))
		return;
	fputs("<h2>Why the time went</h2>", c->f);
	if (off) {
		rva_offcpu_reason r[RVA_OFF_NREASONS - 1];
		size_t nr = rva_offcpu_reasons(t, r);
		fputs("<table id=\"offcpu-reasons\"><thead><tr><th>Off-CPU reason</th>"
		      "<th>Off-CPU ms</th></tr></thead><tbody>",
		      c->f);
		for (size_t i = 0; i < nr; i++) {
			fprintf(c->f, "<tr><td>%s</td>", r[i].name);
			ms_cell(c->f, r[i].ns);
			fputs("</tr>", c->f);
		}
		fputs("</tbody></table>", c->f);
	}
	rva_mstat *st = NULL;
	struct rvs_why_row *rows =
		off ? calloc(t->nmethods ? t->nmethods : 1, sizeof(*rows)) : NULL;
	if (rows && rva_method_stats(t, &st) == 0 && rvs_why_rows(t, rows) == 0) {
		fputs("<h3>On-CPU and off-CPU time by method</h3><table id=\"on-off-cpu\"><thead>"
		      "<tr><th>Method</th><th>Calls</th><th>Inclusive ms</th><th>On-CPU ms</th>"
		      "<th>Off-CPU ms</th><th>Preempted ms</th><th>Blocked ms</th></tr></thead>"
		      "<tbody>",
		      c->f);
		for (size_t i = 0; i < t->nmethods && i < RVS_WHY_ROWS && rows[i].off[0] > 0; i++) {
			const rva_mstat *m = &st[rows[i].method];
			fputs("<tr><td>", c->f);
			method_link(c->f, t->names[rows[i].method]);
			fprintf(c->f, "</td><td class=\"n\">%" PRIu64 "</td>", m->calls);
			ms_cell(c->f, m->incl);
			ms_cell(c->f, m->incl - rows[i].off[0]);
			ms_cell(c->f, rows[i].off[0]);
			ms_cell(c->f, rows[i].off[RVA_OFF_PREEMPTED]);
			ms_cell(c->f, rows[i].off[RVA_OFF_BLOCKED]);
			fputs("</tr>", c->f);
		}
		fputs("</tbody></table>", c->f);
	}
	free(st);
	free(rows);
	if (off) {
		fputs("<h3>Thread counters</h3><table id=\"thread-counters\"><thead><tr>"
		      "<th>Thread</th><th>CPU ms</th><th>Minor faults</th><th>Major faults</th>"
		      "<th>Context switches</th><th>Voluntary (window)</th>"
		      "<th>Involuntary (window)</th></tr></thead><tbody>",
		      c->f);
		for (size_t i = 0; i < t->nthreads; i++) {
			const rva_tcounters *k = t->threads[i].counters;
			if (!k)
				continue;
			fprintf(c->f, "<tr><td>tid %u", t->threads[i].tid);
			if (t->threads[i].name) {
				fputs(" ", c->f);
				rvs_web_esc(c->f, t->threads[i].name);
			}
			fputs("</td>", c->f);
			ms_cell(c->f, (int64_t)k->task_clock_ns);
			fprintf(c->f,
				"<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
				"</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
				"</td><td class=\"n\">%" PRIu64 "</td></tr>",
				k->minor_faults, k->major_faults, k->switches, k->voluntary,
				k->involuntary);
		}
		fputs("</tbody></table>", c->f);
	}
	rva_lock_stat *ls = NULL;
	size_t nls = 0;
	if (t->nlock_waits && rva_lock_stats(t, &ls, &nls) == 0) {
		fputs("<h3>Lock waits</h3><table id=\"lock-waits\"><thead><tr><th>Waiting "
		      "method</th>"
		      "<th>Waits</th><th>Waited ms</th><th>Holder thread</th><th>Holder's "
		      "method</th>"
		      "<th>Waited for it ms</th></tr></thead><tbody>",
		      c->f);
		for (size_t i = 0; i < nls && i < RVS_WHY_ROWS; i++) {
			fputs("<tr><td>", c->f);
			if (ls[i].method >= 0)
				method_link(c->f, t->names[ls[i].method]);
			else
				fputs("(unknown)", c->f);
			fprintf(c->f, "</td><td class=\"n\">%" PRIu64 "</td>", ls[i].waits);
			ms_cell(c->f, ls[i].total);
			if (ls[i].top_holder)
				fprintf(c->f, "<td>tid %u</td><td>", ls[i].top_holder);
			else
				fputs("<td>(unknown)</td><td>", c->f);
			if (ls[i].top_holder_method >= 0)
				method_link(c->f, t->names[ls[i].top_holder_method]);
			else
				fputs("(unknown)", c->f);
			fputs("</td>", c->f);
			ms_cell(c->f, ls[i].top_holder_ns);
			fputs("</tr>", c->f);
		}
		fputs("</tbody></table>", c->f);
	}
	free(ls);
}

static const struct web_col REASON_COLS[] = {
	{"Off-CPU reason", "reason", COL_TEXT, NULL},
	{"Off-CPU ms", "ns", COL_MS, NULL},
};
static const struct web_col SPLIT_COLS[] = {
	{"Method", "method", COL_METHOD, NULL},	    {"Calls", "calls", COL_NUM, NULL},
	{"Inclusive ms", "incl_ns", COL_MS, NULL},  {"On-CPU ms", "on_cpu_ns", COL_MS, NULL},
	{"Off-CPU ms", "off_cpu_ns", COL_MS, NULL},
};

/* A summary-only upload's "why the time went": what the device's summary
 * says, from the API document `api` (its "why", source "summary");
 * nothing when it says nothing. */
static void summary_why_section(struct web_ctx *c, const char *api)
{
	int status;
	json_t *doc = web_api(c, api, "", &status);
	json_t *why = doc && status == 200 ? json_object_get(doc, "why") : NULL;

	if (json_is_object(why)) {
		fputs("<h2>Why the time went</h2><p>From the device's summary.</p>", c->f);
		web_table(c, "offcpu-reasons", REASON_COLS,
			  sizeof REASON_COLS / sizeof REASON_COLS[0],
			  json_object_get(why, "offcpu_reasons"));
		fputs("<h3>On-CPU and off-CPU time of the top methods</h3>", c->f);
		web_table(c, "on-off-cpu", SPLIT_COLS, sizeof SPLIT_COLS / sizeof SPLIT_COLS[0],
			  json_object_get(why, "methods"));
	}
	json_decref(doc);
}

void web_trace_page(struct web_ctx *c, const char *id)
{
	char api[96], focus[16], hl[1024];
	int status;
	json_t *doc, *state;
	const rva_trace *t = NULL;
	struct rvs_mentry *ref;

	snprintf(api, sizeof api, "/api/v1/traces/%s", id);
	/* Without "why": the page computes it from the capture it loads. */
	doc = web_api(c, api, "why=0", &status);
	if (!doc || status != 200) {
		json_decref(doc);
		return web_error(c, status == 404 ? 404 : 500,
				 status == 404 ? "no such trace" : "query failed");
	}
	/* id is now known to be a valid "t-" + hex trace id. */
	web_page_begin(c, id);
	fputs("<h2>Metadata</h2><table class=\"meta\">", c->f);
	meta_row(c, doc, "State", "state");
	state = json_object_get(doc, "quarantine_reason");
	if (json_is_string(state))
		meta_row(c, doc, "Quarantined because", "quarantine_reason");
	meta_row(c, doc, "App", "app_id");
	meta_row(c, doc, "App version", "app_version");
	meta_row(c, doc, "Device model", "model");
	meta_row(c, doc, "OS build", "os_build");
	meta_row(c, doc, "Campaign", "campaign_id");
	fputs("<tr><th>Received</th><td>", c->f);
	time_cell(c->f, json_object_get(doc, "received_at"));
	fputs("</td></tr><tr><th>Duration ms</th><td>", c->f);
	web_ms(c->f, json_object_get(doc, "duration_ns"));
	fputs("</td></tr>", c->f);
	meta_row(c, doc, "Methods", "nmethods");
	meta_row(c, doc, "Dropped events", "dropped");
	fputs("</table><h2>Anomaly</h2><table class=\"meta\"><tr><th>Kind</th><td>", c->f);
	rvs_web_esc(c->f,
		    web_kind_name((int)json_integer_value(json_object_get(doc, "anomaly_kind"))));
	fputs("</td></tr>", c->f);
	meta_row(c, doc, "Severity", "severity");
	meta_row(c, doc, "Name", "anomaly_name");
	fputs("<tr><th>Signature</th><td>", c->f);
	cell(c, doc, &(struct web_col){"", "anomaly_signature", COL_SIGNATURE, NULL});
	fputs("</td></tr></table>", c->f);

	fputs("<h2>Top self time</h2>", c->f);
	web_table(c, "top-self", TOP_COLS, sizeof TOP_COLS / sizeof TOP_COLS[0],
		  json_object_get(doc, "top_self"));
	fputs("<h2>Chains</h2>", c->f);
	web_table(c, "chains", CHAIN_COLS, sizeof CHAIN_COLS / sizeof CHAIN_COLS[0],
		  json_object_get(doc, "chains"));

	/* Decoded once, then from the cache (model_cache.h): reopening the
	 * page and the timeline's zooms do not decode again. */
	if (rvs_trace_acquire(c->cfg, id, &t, &ref) == 0) {
		char note[1024];
		if (rva_untraced_note(t, note, sizeof(note))) {
			fputs("<p class=\"note\">Note: ", c->f);
			rvs_web_esc(c->f, note);
			fputs("</p>", c->f);
		}
		why_section(c, t);
		fprintf(c->f,
			"<h2>Flame graph</h2><p>Click a frame to zoom; Ctrl-F searches.</p>"
			"<object id=\"flame\" class=\"flame\" type=\"image/svg+xml\""
			" data=\"/traces/%s/flame.svg\">Flame graph (needs SVG)</object>",
			id);
		/* ?focus=anomaly opens the zoomable timeline at the anomaly;
		 * ?method=NAME outlines that method's calls in both timelines. */
		if (rvs_query_param(c->req->query, "focus", focus, sizeof focus) != 1 ||
		    strcmp(focus, "anomaly"))
			focus[0] = '\0';
		if (rvs_query_param(c->req->query, "method", hl, sizeof hl) != 1)
			hl[0] = '\0';
		fputs("<h2>Timeline (zoom and pan)</h2><div id=\"tlz\" data-focus=\"", c->f);
		fputs(focus, c->f);
		fputs("\" data-method=\"", c->f);
		rvs_web_esc(c->f, hl);
		fputs("\"", c->f);
		fprintf(c->f,
			" data-trace=\"%s\"><p>"
			"<button type=\"button\" id=\"tlz-in\">Zoom in</button> "
			"<button type=\"button\" id=\"tlz-out\">Zoom out</button> "
			"<button type=\"button\" id=\"tlz-left\">&larr;</button> "
			"<button type=\"button\" id=\"tlz-right\">&rarr;</button> "
			"<button type=\"button\" id=\"tlz-all\">Whole trace</button> "
			"<button type=\"button\" id=\"tlz-anomaly\">To the anomaly</button> "
			"Wheel zooms, drag pans, keys + - &larr; &rarr; 0; click a box.</p>"
			"<canvas id=\"tlz-canvas\" tabindex=\"0\" width=\"1200\" height=\"40\">"
			"</canvas><p id=\"tlz-status\">Needs JavaScript: the static timeline "
			"below shows the window before the anomaly.</p><p id=\"tlz-hl\"></p><p "
			"id=\"tlz-info\"></p></div>"
			"<script src=\"/static/timeline.js\" defer></script>",
			id);
		fputs("<h2>Timeline before the anomaly</h2>"
		      "<p>Time runs left to right, call depth top to bottom; one box per call. "
		      "<span id=\"tl-info\"></span></p>",
		      c->f);
		web_timeline_svg_hl(c->f, t, hl[0] ? hl : NULL);
		rvs_trace_release(ref);
		exports(c, id);
	} else {
		fputs("<p>No decoded capture is stored for this trace (summary-only upload, "
		      "or quarantined): no flame graph, timeline or exports.</p>",
		      c->f);
		summary_why_section(c, api);
	}
	json_decref(doc);
	web_page_end(c, 200);
}

/* ---- /methods/{name} -------------------------------------------------------- */

/* The mean per trace, in ms, of the on-CPU member key of cpu (the API's
 * on/off-CPU sums) and of its off-CPU twin: "x / y", "–" without traces
 * that have CPU data. */
static void cpu_means(FILE *f, json_t *cpu, const char *on, const char *off)
{
	json_int_t n = json_integer_value(json_object_get(cpu, "traces"));
	if (n <= 0) {
		fputs("–", f);
		return;
	}
	fprintf(f, "%.3f / %.3f",
		(double)json_integer_value(json_object_get(cpu, on)) / 1e6 / (double)n,
		(double)json_integer_value(json_object_get(cpu, off)) / 1e6 / (double)n);
}

static void cpu_traces_cell(struct web_ctx *c, json_t *row)
{
	fprintf(c->f, "%lld of %lld",
		(long long)json_integer_value(
			json_object_get(json_object_get(row, "cpu"), "traces")),
		(long long)json_integer_value(json_object_get(row, "count")));
}

static void cpu_self_cell(struct web_ctx *c, json_t *row)
{
	cpu_means(c->f, json_object_get(row, "cpu"), "on_cpu_self_ns", "off_cpu_self_ns");
}

static void cpu_incl_cell(struct web_ctx *c, json_t *row)
{
	cpu_means(c->f, json_object_get(row, "cpu"), "on_cpu_incl_ns", "off_cpu_incl_ns");
}

static const struct web_col VERSION_COLS[] = {
	{"App version", "app_version", COL_TEXT, NULL},
	{"Traces", "count", COL_NUM, NULL},
	{"Self p50 ms", "self_ns.p50", COL_MS, NULL},
	{"Self p95 ms", "self_ns.p95", COL_MS, NULL},
	{"Incl. p50 ms", "incl_ns.p50", COL_MS, NULL},
	{"Incl. p95 ms", "incl_ns.p95", COL_MS, NULL},
	{"With CPU data", "cpu.traces", COL_CUSTOM, cpu_traces_cell},
	{"Self on / off CPU ms", "cpu", COL_CUSTOM, cpu_self_cell},
	{"Incl. on / off CPU ms", "cpu", COL_CUSTOM, cpu_incl_cell},
};
static const struct web_col MODEL_COLS[] = {
	{"Device model", "model", COL_TEXT, NULL},
	{"Traces", "count", COL_NUM, NULL},
	{"Self p50 ms", "self_ns.p50", COL_MS, NULL},
	{"Self p95 ms", "self_ns.p95", COL_MS, NULL},
	{"Incl. p50 ms", "incl_ns.p50", COL_MS, NULL},
	{"Incl. p95 ms", "incl_ns.p95", COL_MS, NULL},
	{"With CPU data", "cpu.traces", COL_CUSTOM, cpu_traces_cell},
	{"Self on / off CPU ms", "cpu", COL_CUSTOM, cpu_self_cell},
	{"Incl. on / off CPU ms", "cpu", COL_CUSTOM, cpu_incl_cell},
};

/* The method's on/off-CPU split in a sentence — "on CPU x ms / off CPU y
 * ms of self per trace (z % off) …, over n of m traces" — the means per
 * trace over the traces that have CPU data, and how many of the method's
 * traces those are. */
static void cpu_split_para(struct web_ctx *c, json_t *doc)
{
	json_t *cpu = json_object_get(doc, "cpu");
	double n = (double)json_integer_value(json_object_get(cpu, "traces"));
	double on_self = (double)json_integer_value(json_object_get(cpu, "on_cpu_self_ns"));
	double off_self = (double)json_integer_value(json_object_get(cpu, "off_cpu_self_ns"));
	double on_incl = (double)json_integer_value(json_object_get(cpu, "on_cpu_incl_ns"));
	double off_incl = (double)json_integer_value(json_object_get(cpu, "off_cpu_incl_ns"));

	fputs("<p id=\"cpu-split\">", c->f);
	if (n <= 0) {
		fputs("On or off the CPU: none of these traces has CPU data (OFFCPU records), so"
		      " their time is not split.</p>",
		      c->f);
		return;
	}
	fprintf(c->f, "On CPU <b>%.3f</b> ms / off CPU <b>%.3f</b> ms of self per trace",
		on_self / 1e6 / n, off_self / 1e6 / n);
	if (on_self + off_self > 0)
		fprintf(c->f, " (%.1f %% off)", 100.0 * off_self / (on_self + off_self));
	fprintf(c->f,
		"; on CPU %.3f ms / off CPU %.3f ms inclusive — over <b>%.0f</b> of %lld traces"
		" (those with CPU data; off CPU: blocked or preempted).</p>",
		on_incl / 1e6 / n, off_incl / 1e6 / n, n,
		(long long)json_integer_value(json_object_get(doc, "count")));
}

static const struct web_col METHOD_TRACE_COLS[] = {
	{"Trace", "trace_id", COL_TRACE, NULL},	    {"App", "app_id", COL_TEXT, NULL},
	{"Version", "app_version", COL_TEXT, NULL}, {"Model", "model", COL_TEXT, NULL},
	{"Calls", "calls", COL_NUM, NULL},	    {"Self ms", "self_ns", COL_MS, NULL},
	{"Incl. ms", "incl_ns", COL_MS, NULL},
};

void web_method_page(struct web_ctx *c, const char *name)
{
	char *api = NULL;
	size_t alen = 0;
	FILE *u = open_memstream(&api, &alen);
	json_t *doc, *alert, *rows;
	int status;

	if (!u)
		return web_error(c, 500, "out of memory");
	fputs("/api/v1/methods/", u);
	rvs_web_urlenc(u, name);
	fclose(u);
	doc = web_api(c, api, c->req->query, &status);
	free(api);
	if (!doc || status != 200) {
		json_decref(doc);
		return web_error(c, status == 400 ? 400 : 500, "query failed");
	}
	web_page_begin(c, name);
	/* app / version narrow the whole page (the API's filters). */
	fputs("<form method=\"get\" class=\"filters\" action=\"/methods/", c->f);
	rvs_web_urlenc(c->f, name);
	fputs("\">", c->f);
	filter_input(c, "app", "App", "text");
	filter_input(c, "version", "App version", "text");
	fputs(" <button type=\"submit\">Filter</button></form>", c->f);
	fputs("<p>Traces containing this method: <b id=\"count\">", c->f);
	web_field(c, doc, "count");
	fputs("</b> — <a id=\"method-aggregate\" href=\"/aggregate?method=", c->f);
	rvs_web_urlenc(c->f, name);
	fputs("\">aggregate flame graph of these traces</a> — <a id=\"method-callers\" "
	      "href=\"/callers?of=",
	      c->f);
	rvs_web_urlenc(c->f, name);
	fputs("\">who calls it, what it calls (fleet-wide)</a> — <a id=\"method-trend\" "
	      "href=\"/trend?method=",
	      c->f);
	rvs_web_urlenc(c->f, name);
	{
		char app[256];
		if (rvs_query_param(c->req->query, "app", app, sizeof app) == 1 && app[0]) {
			fputs("&amp;app=", c->f);
			rvs_web_urlenc(c->f, app);
		}
	}
	fputs("\">its time per day and version, and the onset of a change</a></p>", c->f);
	cpu_split_para(c, doc);
	fputs("<h2>Time by app version</h2>", c->f);
	/* The fleet-wide row first, then one per version. */
	rows = json_pack(
		"[{s:s,s:O,s:O,s:O,s:O}]", "app_version", "all", "count",
		json_object_get(doc, "count"), "self_ns",
		json_object_get(doc, "self_ns") ? json_object_get(doc, "self_ns") : json_null(),
		"incl_ns",
		json_object_get(doc, "incl_ns") ? json_object_get(doc, "incl_ns") : json_null(),
		"cpu", json_object_get(doc, "cpu") ? json_object_get(doc, "cpu") : json_null());
	json_array_extend(rows, json_object_get(doc, "by_version"));
	web_table(c, "by-version", VERSION_COLS, sizeof VERSION_COLS / sizeof VERSION_COLS[0],
		  rows);
	json_decref(rows);
	fputs("<h2>Time by device model</h2>", c->f);
	web_table(c, "by-model", MODEL_COLS, sizeof MODEL_COLS / sizeof MODEL_COLS[0],
		  json_object_get(doc, "by_model"));
	fputs("<h2>Alert</h2>", c->f);

	alert = json_object_get(doc, "alert");
	if (json_is_object(alert)) {
		int crossed = json_is_true(json_object_get(alert, "crossed"));
		fprintf(c->f, "<p id=\"alert\" class=\"%s\">Threshold: self p95 ≥ ",
			crossed ? "alert" : "ok");
		web_ms(c->f, json_object_get(alert, "p95_threshold_ns"));
		fputs(" ms — ", c->f);
		fputs(crossed ? "CROSSED: the current p95 is over the threshold." : "not crossed.",
		      c->f);
		fputs("</p>", c->f);
	} else {
		fputs("<p id=\"alert\">No alert saved for this method.</p>", c->f);
	}
	fputs("<form method=\"post\" action=\"/methods/", c->f);
	rvs_web_urlenc(c->f, name);
	fputs("/alert\">", c->f);
	web_csrf_field(c);
	fputs("<label>Alert when self p95 crosses (ms) <input name=\"threshold_ms\" type=\"number\""
	      " step=\"0.001\" min=\"0.001\" required></label> <button type=\"submit\">Save alert"
	      "</button></form>",
	      c->f);
	fputs("<h2>Traces</h2>", c->f);
	web_range(c, "method-traces", 1, json_array_size(json_object_get(doc, "traces")),
		  json_integer_value(json_object_get(doc, "total")), 0);
	web_table(c, "method-traces", METHOD_TRACE_COLS,
		  sizeof METHOD_TRACE_COLS / sizeof METHOD_TRACE_COLS[0],
		  json_object_get(doc, "traces"));
	json_decref(doc);
	web_page_end(c, 200);
}

void web_method_alert(struct web_ctx *c, const char *name)
{
	char v[64], *end, *loc = NULL;
	size_t llen = 0;
	double ms;
	int64_t ns, before;
	FILE *u;

	if (rvs_query_param(c->form, "threshold_ms", v, sizeof v) != 1)
		return web_error(c, 400, "threshold_ms is required");
	errno = 0;
	ms = strtod(v, &end);
	if (errno || end == v || *end || !(ms > 0) || ms > 1e9)
		return web_error(c, 400, "threshold_ms must be a positive number of milliseconds");
	ns = (int64_t)(ms * 1e6 + 0.5);
	ns = ns > 0 ? ns : 1;
	if (c->ops->method_alert_get(c->st, name, &before))
		before = 0;
	if (c->ops->method_alert_put(c->st, name, ns))
		return web_error(c, 500, "storage error");
	snprintf(v, sizeof v, "p95_threshold_ns %" PRId64 " -> %" PRId64, before, ns);
	rvs_audit(c->ops, c->st, c->user, "method_alert.set", name, v);
	if (!(u = open_memstream(&loc, &llen)))
		return web_error(c, 500, "out of memory");
	fputs("/methods/", u);
	rvs_web_urlenc(u, name);
	fclose(u);
	if (llen >= sizeof c->r->location) {
		free(loc);
		return web_error(c, 400, "method name too long");
	}
	web_redirect(c, loc);
	free(loc);
}

/* ---- the endpoints (app/routes.c's table) of these pages ---------------- */

void rvs_web_traces(struct rvs_call *call)
{
	web_traces_page(call->ctx);
}

void rvs_web_trace(struct rvs_call *call)
{
	char id[40];
	if (web_trace_id(call, id) == 0)
		web_trace_page(call->ctx, id);
}

/* A trace's export, or its flame graph, streamed (session-authenticated). */
static void trace_export(struct rvs_call *call, int flame)
{
	struct web_ctx *c = call->ctx;
	struct rvs_query_resp q;
	char id[40], api[96];

	if (web_trace_id(call, id))
		return;
	snprintf(api, sizeof api, "/api/v1/traces/%s/export", id);
	rvs_api_v1(c->cfg, 0, api, flame ? "format=svg" : c->req->query, NULL, 0, &q);
	if (q.status != 200) {
		free(q.body);
		return web_error(c, q.status == 400 ? 400 : 404, "no such export for this trace");
	}
	assert(q.stream && !q.body);
	c->r->stream = q.stream;
	c->r->status = 200;
	c->r->content_type = q.content_type;
	if (flame) {
		/* Shown in an <object> on the trace page: its own script
		 * zooms and searches, so it may run inline script, but
		 * sandboxed (an opaque origin: no cookies, no access to
		 * the UI) and framed by this origin only. */
		c->r->csp = "default-src 'none'; script-src 'unsafe-inline';"
			    " style-src 'unsafe-inline'; frame-ancestors 'self';"
			    " sandbox allow-scripts";
		c->r->frame = "SAMEORIGIN";
	} else {
		c->r->csp = "default-src 'none'; frame-ancestors 'none'; sandbox";
		snprintf(c->r->disposition, sizeof c->r->disposition, "%s", q.disposition);
	}
}

void rvs_web_trace_export(struct rvs_call *call)
{
	trace_export(call, 0);
}

void rvs_web_trace_flame(struct rvs_call *call)
{
	trace_export(call, 1);
}

void rvs_web_trace_none(struct rvs_call *call)
{
	char id[40];
	call->arg_len = strcspn(call->arg, "/");
	if (web_trace_id(call, id) == 0)
		web_error(call->ctx, 404, "no such page");
}

/* The signature clusters' page is the issues page now (an issue is an
 * anomaly signature of one app, its signatures folded): old links land
 * there, once and for all. */
void rvs_web_signatures(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	web_redirect(c, "/issues");
	c->r->status = 301;
}

void rvs_web_method(struct rvs_call *call)
{
	char name[1024];
	if (!call->arg_len || rvs_url_decode(call->arg, call->arg_len, 0, name, sizeof name))
		return web_error(call->ctx, 400, "bad method name");
	web_method_page(call->ctx, name);
}

void rvs_web_method_post(struct rvs_call *call)
{
	struct web_ctx *c = call->ctx;
	size_t n = call->arg_len;
	char name[1024], raw[1024];

	if (n <= 6 || strcmp(call->arg + n - 6, "/alert") != 0)
		return web_error(c, 404, "no such form");
	snprintf(raw, sizeof raw, "%.*s", (int)(n - 6), call->arg);
	if (rvs_url_decode(raw, strlen(raw), 0, name, sizeof name))
		return web_error(c, 400, "bad method name");
	web_method_alert(c, name);
}
