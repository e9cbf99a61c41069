/* SPDX-License-Identifier: Apache-2.0 */
/*
 * web_int.h — private to web*.c: the per-request context and the helpers
 * the page renderers share.  Work thread only.
 */
#ifndef RVS_WEB_INT_H
#define RVS_WEB_INT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "store/store.h"

struct rvs_config;
struct rvs_http_req;
struct rvs_query_resp;

struct web_ctx {
	const struct rvs_config *cfg;
	const struct rvs_http_req *req;
	struct rvs_query_resp *r;
	/* The shared store of cfg->database (rvs_store_acquire), held for
	 * the request. */
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	char user[64];	  /* the signed-in account */
	int role;	  /* its role (enum rvs_role), 0 signed out */
	char csrf[65];	  /* the session's CSRF token */
	char form[16384]; /* the POST body as a NUL-terminated string */
	FILE *f;	  /* the page body being written (into page/plen) */
	char *page;
	size_t plen;
};

/* Opens the page: doctype, title (escaped), the navigation with the
 * logout form.  Pair with web_page_end. */
void web_page_begin(struct web_ctx *c, const char *title);
/* Closes the page and makes it the 200 (or status) HTML response. */
void web_page_end(struct web_ctx *c, int status);
/* An HTML error page with an escaped message. */
void web_error(struct web_ctx *c, int status, const char *msg);
/* 303 See Other to a same-origin path (built by the server, never echoed). */
void web_redirect(struct web_ctx *c, const char *location);
/* The hidden CSRF input for a POST form. */
void web_csrf_field(struct web_ctx *c);
/* Runs the JSON API for path/query; returns the parsed document (caller
 * json_decref) and the API's status in *status; NULL if it is not JSON. */
json_t *web_api(struct web_ctx *c, const char *path, const char *query, int *status);
/* The trace id a /traces/{id}… route's wildcard matched, into id: 0, or
 * the 404 page answered and -1. */
struct rvs_call;
int web_trace_id(struct rvs_call *call, char id[40]);
/* The version pickers' choices (GET /api/v1/versions): <datalist
 * id="apps"> of the apps the data has and <datalist id="versions"> of the
 * versions of app (NULL or "": of every app), for the inputs that name
 * them with list="…" (web_list_of).  Nothing when the API fails. */
void web_version_lists(struct web_ctx *c, const char *app);
/* The datalist (" list=\"…\"", static) for an input named name: apps for
 * "app", versions for "version" and "a.version"-like names, else "". */
const char *web_list_of(const char *name);
/* The string member key of o escaped, "" when absent, a number as text. */
void web_field(struct web_ctx *c, json_t *o, const char *key);
/* Nanoseconds (an integer or a real) as milliseconds with 3 decimals; "–" for
 * JSON null. */
void web_ms(FILE *f, json_t *v);
/* query (a raw query string, NULL: none) without its parameters named in
 * keys (NULL-ended): what a page passes on to the API when it takes
 * parameters of its own.  malloc'd (the caller frees it), NULL on ENOMEM. */
char *web_query_without(const char *query, const char *const *keys);
/* The anomaly kind's name (static), "?" when unknown. */
const char *web_kind_name(int kind);
/* A list's position: <p class="range" id="range-ID">Rows FIRST–LAST of
 * <b id="total-ID">TOTAL</b></p> (first counts from 1; "No rows" when
 * shown is 0), TOTAL with thousands separators, "more than TOTAL" when
 * capped (the API's total_capped). */
void web_range(struct web_ctx *c, const char *id, int64_t first, size_t shown, int64_t total,
	       int capped);
/* The 1-based first row of a paged list from the web-only "first" query
 * parameter (1 when absent or bad). */
int64_t web_first_row(const char *query);

/* A table column: its header (static HTML), the row member it shows ("a.b"
 * for a nested one) and how; COL_CUSTOM calls render instead. */
enum web_col_kind {
	COL_TEXT,
	COL_NUM,
	COL_MS,
	COL_PCT,
	COL_TIME,
	COL_TRACE,
	COL_METHOD,
	COL_CHAIN,
	COL_KIND,
	COL_SIGNATURE,
	COL_LIST,
	COL_CUSTOM
};
struct web_col {
	const char *head;
	const char *key;
	enum web_col_kind kind;
	void (*render)(struct web_ctx *c, json_t *row);
};
/* A table with id (static) of one row per element of rows (web_pages.c). */
void web_table(struct web_ctx *c, const char *id, const struct web_col *cols, size_t n,
	       json_t *rows);

/* Pages (web_pages.c). */
void web_traces_page(struct web_ctx *c);
void web_trace_page(struct web_ctx *c, const char *id);
void web_method_page(struct web_ctx *c, const char *name);
void web_method_alert(struct web_ctx *c, const char *name);
/* Campaigns and fleet (web_campaign.c); msg: a form error to show. */
void web_campaigns_page(struct web_ctx *c, const char *msg);
void web_campaign_page(struct web_ctx *c, const char *id);
void web_campaign_post(struct web_ctx *c, const char *rest);
void web_fleet_page(struct web_ctx *c);
/* Timeline SVG of the thread before the anomaly (web_timeline.c). */
struct rva_trace;
void web_timeline_svg(FILE *f, const struct rva_trace *t);
/* The same with every call of method highlight (NULL: none) outlined
 * (class "hl"). */
void web_timeline_svg_hl(FILE *f, const struct rva_trace *t, const char *highlight);
/* The zoomable timeline's level of detail (web_timeline.c) for the
 * captured thread between from and to (the trace's clock, from < to) drawn
 * width pixels wide (1..LOD_MAX_WIDTH): every call at least a pixel wide
 * as itself (method, self time), the calls narrower than a pixel merged per
 * depth into busy bars of adjacent pixel columns that count them exactly;
 * depths from LOD_MAX_DEPTH down counted in "deep", items past
 * LOD_MAX_ITEMS counted in "cut"; below them the rows "offcpu" (the
 * thread's off-CPU intervals, marked when preempted) and "frames" (the
 * app's frames, marked when late), each [start, end, marked, n] with the
 * intervals narrower than a pixel merged and counted the same way, null
 * when the capture has no such record.  *out: the JSON document (caller
 * json_decref), times relative to t->start.  0 or -ENOMEM.  Any thread. */
#define LOD_MAX_DEPTH 64
#define LOD_MAX_WIDTH 4096
#define LOD_MAX_ITEMS 200000
int web_timeline_lod(const struct rva_trace *t, int64_t from, int64_t to, unsigned width,
		     json_t **out);
/* GET /trace/ID/timeline.json's answer for t (web_timeline.c): the query
 * string's width (1..LOD_MAX_WIDTH, default 1200), from and to (ns offsets
 * in the trace, from < to; default the whole trace) parsed and the level
 * of detail built.  query is untrusted, NULL for none.  0 with *out (caller
 * json_decref); -EINVAL with *bad naming the parameter; -ENOMEM.  Any
 * thread. */
int web_timeline_query(const struct rva_trace *t, const char *query, json_t **out,
		       const char **bad);
/* The butterfly of method in t (web_timeline.c): its callers and callees
 * on the captured thread with calls and inclusive time, and its own calls,
 * inclusive and self time.  *out: the JSON document (caller json_decref;
 * its names are not checked as UTF-8: read it, do not dump it).
 * 0, -ENOENT (no such method) or -ENOMEM.  Any thread. */
int web_butterfly(const struct rva_trace *t, const char *method, json_t **out);

/* The zoomable timeline's script (web_timeline_js.c), /static/timeline.js. */
extern const char WEB_TIMELINE_JS[];
/* The trend page's brush (web_trend_js.c), /static/trend.js. */
extern const char WEB_TREND_JS[];
/* The heatmap page's brush (web_heatmap_js.c), /static/heatmap.js. */
extern const char WEB_HEATMAP_JS[];

#endif
