/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_route.c — the route table's dispatcher (route.c): the first entry
 * serving path and method wins, specific patterns before their family's
 * catch-all, a path served with other methods gives their union, an
 * unknown path gives the web UI's 404 (the JSON API's under /api/), and
 * wildcards capture what they matched; every route lists exactly the query
 * parameters its handler reads, and the dispatcher refuses any other by
 * name before the handler runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/agg.h"
#include "api/api.h"
#include "api/campaign.h"
#include "api/fleet.h"
#include "api/query.h"
#include "model/regress.h"
#include "http/reply.h"
#include "http/route.h"
#include "model/search.h"
#include "api/symbols.h"
#include "web/web.h"
#include "model/webhook.h"
#include "api/aggregate.h"
#include "api/alerts.h"
#include "api/regress.h"
#include "api/search.h"
#include "api/aggregate_pprof.h"
#include "api/trend.h"
#include "api/heatmap.h"

#include <jansson.h>

static const struct rvs_route *find(unsigned m, const char *path, const char **arg, size_t *n,
				    unsigned *allow)
{
	return rvs_route_find(m, path, arg, n, allow);
}

static void test_route_find_each_family_gets_its_handler_and_auth(void **state)
{
	const char *arg;
	size_t n;
	unsigned allow;
	const struct rvs_route *r;

	r = find(RVS_M_POST, "/v1/uploads", &arg, &n, &allow);
	assert_non_null(r);
	assert_int_equal(allow, 0);
	assert_ptr_equal(r->handler, rvs_api_upload);
	assert_int_equal(r->auth, RVS_AUTH_DEVICE);
	assert_int_equal(r->thread, RVS_ON_WORK);

	r = find(RVS_M_GET, "/metrics", &arg, &n, &allow);
	assert_ptr_equal(r->handler, rvs_api_metrics);
	assert_int_equal(r->thread, RVS_ON_LOOP);

	r = find(RVS_M_POST, "/v1/enroll", &arg, &n, &allow);
	assert_int_equal(r->auth, RVS_AUTH_ENROLL);

	r = find(RVS_M_GET, "/api/v1/fleet", &arg, &n, &allow);
	assert_ptr_equal(r->handler, rvs_fleet_get);
	assert_int_equal(r->auth, RVS_AUTH_API);

	r = find(RVS_M_POST, "/login", &arg, &n, &allow);
	assert_ptr_equal(r->handler, rvs_web_login);
	assert_int_equal(r->auth, RVS_AUTH_LOGIN);
	r = find(RVS_M_GET, "/login", &arg, &n, &allow);
	assert_ptr_equal(r->handler, rvs_web_login_form);
	assert_int_equal(r->auth, RVS_AUTH_NONE);

	r = find(RVS_M_GET, "/traces", &arg, &n, &allow);
	assert_int_equal(r->auth, RVS_AUTH_SESSION);
	assert_int_equal(r->family, RVS_FAMILY_WEB);
}

static void test_route_find_specific_before_catch_all_wins(void **state)
{
	const char *arg;
	size_t n;
	unsigned allow;

	assert_ptr_equal(find(RVS_M_GET, "/api/v1/signatures/weekly", &arg, &n, &allow)->handler,
			 rvs_query_weekly);
	assert_ptr_equal(find(RVS_M_POST, "/api/v1/campaigns/preview", &arg, &n, &allow)->handler,
			 rvs_campaigns_preview);
	assert_ptr_equal(find(RVS_M_GET, "/api/v1/campaigns/preview", &arg, &n, &allow)->handler,
			 rvs_campaigns_none);
	assert_ptr_equal(find(RVS_M_GET, "/api/v1/symbolsX", &arg, &n, &allow)->handler,
			 rvs_query_none);
	assert_ptr_equal(find(RVS_M_GET, "/api/v1/nothing/here", &arg, &n, &allow)->handler,
			 rvs_query_none);
	assert_ptr_equal(find(RVS_M_GET, "/traces/t-1/other", &arg, &n, &allow)->handler,
			 rvs_web_trace_none);
}

static void test_route_find_wildcards_capture_their_match(void **state)
{
	const char *arg;
	size_t n;
	unsigned allow;
	const struct rvs_route *r;

	r = find(RVS_M_GET, "/api/v1/traces/t-0123/export", &arg, &n, &allow);
	assert_ptr_equal(r->handler, rvs_query_export);
	assert_true(r->flags & RVS_ROUTE_TRACE_LOAD);
	assert_int_equal(n, 6);
	assert_memory_equal(arg, "t-0123", 6);
	r = find(RVS_M_GET, "/api/v1/traces/t-0123", &arg, &n, &allow);
	assert_ptr_equal(r->handler, rvs_query_trace);
	assert_true(r->flags & RVS_ROUTE_TRACE_LOAD); /* its "why" loads the capture */

	r = find(RVS_M_POST, "/api/v1/campaigns/c-1/end", &arg, &n, &allow);
	assert_ptr_equal(r->handler, rvs_campaigns_end);
	assert_int_equal(n, 3);
	assert_memory_equal(arg, "c-1", 3);

	r = find(RVS_M_POST, "/methods/a%2Fb/alert", &arg, &n, &allow);
	assert_ptr_equal(r->handler, rvs_web_method_post);
	assert_string_equal(arg, "a%2Fb/alert");
	assert_int_equal(n, strlen("a%2Fb/alert"));

	r = find(RVS_M_GET, "/static/app.css", &arg, &n, &allow);
	assert_ptr_equal(r->handler, rvs_web_static);
	assert_string_equal(arg, "app.css");
}

static void test_route_find_other_method_gives_union_of_allowed(void **state)
{
	const char *arg;
	size_t n;
	unsigned allow;
	const struct rvs_route *r;

	r = find(RVS_M_GET, "/v1/uploads", &arg, &n, &allow);
	assert_non_null(r);
	assert_int_equal(allow, RVS_M_POST);
	assert_string_equal(rvs_route_allow(allow), "POST");

	find(RVS_M_POST, "/api/v1/fleet", &arg, &n, &allow);
	assert_string_equal(rvs_route_allow(allow), "GET");

	/* campaigns/{id}/end is POST only, campaigns/... answers GET and POST */
	find(0, "/api/v1/campaigns/c-1/end", &arg, &n, &allow);
	assert_string_equal(rvs_route_allow(allow), "GET, POST");
	find(0, "/api/v1/symbols/ab", &arg, &n, &allow);
	assert_string_equal(rvs_route_allow(allow), "GET, POST");
	find(0, "/api/v1/traces", &arg, &n, &allow);
	assert_string_equal(rvs_route_allow(allow), "GET");
}

static void test_route_find_unknown_path_is_the_web_404_or_its_family_s(void **state)
{
	static const char *const paths[] = {"/nope", "/static", "/v1/uploads/x", "/metrics/",
					    "/traces2"};
	const char *arg;
	size_t n;
	unsigned allow;
	const struct rvs_route *r;

	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		r = find(RVS_M_GET, paths[i], &arg, &n, &allow);
		assert_non_null(r);
		assert_ptr_equal(r->handler, rvs_web_not_found);
		assert_int_equal(r->auth, RVS_AUTH_NONE);
		assert_int_equal(allow, 0);
		/* A POST finds it too, as not allowed: web.c answers 404. */
		r = find(RVS_M_POST, paths[i], &arg, &n, &allow);
		assert_ptr_equal(r->handler, rvs_web_not_found);
		assert_int_equal(allow, RVS_M_GET);
	}
	/* The JSON API keeps its JSON 404 and 405 under /api/. */
	assert_ptr_equal(find(RVS_M_GET, "/api/v2/traces", &arg, &n, &allow)->handler,
			 rvs_query_none);
	r = find(RVS_M_POST, "/api/v1/nothing", &arg, &n, &allow);
	assert_int_equal(r->family, RVS_FAMILY_API);
	assert_int_equal(allow, RVS_M_GET);
	assert_null(find(RVS_M_GET, "", &arg, &n, &allow));
	assert_null(find(RVS_M_GET, "*", &arg, &n, &allow));
}

#define TRACES                                                                       \
	"app version model os_build kind min_severity since until signature method " \
	"cursor limit sort issue"
#define AGG                                                                               \
	"app version model campaign method chain kind since until issue dur_min dur_max " \
	"except_since except_until except_dur_min except_dur_max"
#define SIDE(s)                                                                                  \
	s ".app " s ".version " s ".model " s ".campaign " s ".method " s ".chain " s ".kind " s \
	  ".since " s ".until " s ".issue " s ".dur_min " s ".dur_max " s ".except_since " s     \
	  ".except_until " s ".except_dur_min " s ".except_dur_max"
#define AGG_DIFF AGG " " SIDE("a") " " SIDE("b")
#define ISSUES	 "app version kind weeks limit"
#define SEARCH	 "chain caller callee contains app version cursor limit"
#define REGRESS	 "app a b model version week limit"
#define METHOD	 "app version limit"
#define TREND	 "method app model issue kind by"
#define HEATMAP	 "app issue kind from to bucket"

/* Every route of the table (one path each), with the parameters it takes
 * (space-separated; "*" any, "" none). */
static const struct {
	unsigned method;
	const char *path;
	void (*handler)(struct rvs_call *c);
	const char *params;
} ROUTES[] = {
	{RVS_M_GET, "/metrics", rvs_api_metrics, ""},
	{RVS_M_POST, "/v1/enroll", rvs_api_enroll, ""},
	{RVS_M_POST, "/v1/uploads", rvs_api_upload, ""},
	{RVS_M_POST, "/v1/skips", rvs_api_skip, ""},
	{RVS_M_GET, "/v1/policy", rvs_api_policy, ""},
	{RVS_M_GET, "/api/v1/symbols", rvs_symbols_list, ""},
	{RVS_M_POST, "/api/v1/symbols", rvs_symbols_put, ""},
	{RVS_M_GET, "/api/v1/symbols/ab12", rvs_symbols_get, "offset"},
	{RVS_M_POST, "/api/v1/symbols/ab12", rvs_symbols_refuse, ""},
	{RVS_M_GET, "/api/v1/campaigns", rvs_campaigns_list, ""},
	{RVS_M_POST, "/api/v1/campaigns", rvs_campaigns_create, ""},
	{RVS_M_POST, "/api/v1/campaigns/preview", rvs_campaigns_preview, ""},
	{RVS_M_POST, "/api/v1/campaigns/c-1/end", rvs_campaigns_end, ""},
	{RVS_M_GET, "/api/v1/campaigns/c-1", rvs_campaigns_none, "*"},
	{RVS_M_GET, "/api/v1/fleet", rvs_fleet_get, ""},
	{RVS_M_GET, "/api/v1/traces", rvs_query_traces, TRACES},
	{RVS_M_GET, "/api/v1/traces/t-1", rvs_query_trace, "why"},
	{RVS_M_GET, "/api/v1/traces/t-1/export", rvs_query_export, "format"},
	{RVS_M_GET, "/api/v1/traces/t-1/x", rvs_query_trace_none, "*"},
	{RVS_M_GET, "/api/v1/signatures", rvs_query_signatures, "limit offset"},
	{RVS_M_GET, "/api/v1/signatures/weekly", rvs_query_weekly, "since signatures"},
	{RVS_M_GET, "/api/v1/versions", rvs_query_versions, "app"},
	{RVS_M_GET, "/api/v1/skips", rvs_query_skips, "since until app limit"},
	{RVS_M_GET, "/api/v1/methods/m", rvs_query_method, METHOD},
	{RVS_M_GET, "/api/v1/aggregate", rvs_agg_api, AGG " weighted"},
	{RVS_M_GET, "/api/v1/aggregate/diff", rvs_agg_api_diff, AGG_DIFF " weighted"},
	{RVS_M_GET, "/api/v1/aggregate/pprof", rvs_agg_api_pprof, AGG},
	{RVS_M_GET, "/api/v1/aggregate/diff/pprof", rvs_agg_api_diff_pprof, AGG_DIFF " side"},
	{RVS_M_GET, "/api/v1/aggregate/callers", rvs_agg_api_callers, AGG " of"},
	{RVS_M_GET, "/api/v1/aggregate/heaviest", rvs_agg_api_heaviest, AGG " node by limit"},
	{RVS_M_GET, "/api/v1/issues", rvs_search_issues, ISSUES},
	{RVS_M_GET, "/api/v1/search", rvs_search_chains, SEARCH},
	{RVS_M_GET, "/api/v1/regressions", rvs_regress_api, REGRESS},
	{RVS_M_GET, "/api/v1/regressions/runs", rvs_regress_api_runs, ""},
	{RVS_M_GET, "/api/v1/trend", rvs_trend_api, TREND},
	{RVS_M_GET, "/api/v1/heatmap", rvs_heatmap_api, HEATMAP},
	{RVS_M_GET, "/api/v1/alerts", rvs_webhook_api_list, ""},
	{RVS_M_GET, "/api/v1/nothing", rvs_query_none, "*"},
	{RVS_M_GET, "/static/app.css", rvs_web_static, ""},
	{RVS_M_GET, "/favicon.ico", rvs_web_favicon, ""},
	{RVS_M_GET, "/login", rvs_web_login_form, ""},
	{RVS_M_POST, "/login", rvs_web_login, ""},
	{RVS_M_POST, "/logout", rvs_web_logout, ""},
	{RVS_M_GET, "/", rvs_web_root, ""},
	{RVS_M_GET, "/traces", rvs_web_traces, TRACES " from to first"},
	{RVS_M_GET, "/traces/t-1", rvs_web_trace, "focus method"},
	{RVS_M_GET, "/traces/t-1/export", rvs_web_trace_export, "format"},
	{RVS_M_GET, "/traces/t-1/flame.svg", rvs_web_trace_flame, ""},
	{RVS_M_GET, "/traces/t-1/timeline.json", rvs_web_trace_timeline, "from to width"},
	{RVS_M_GET, "/traces/t-1/butterfly", rvs_web_trace_butterfly, "method"},
	{RVS_M_GET, "/traces/t-1/x", rvs_web_trace_none, "*"},
	{RVS_M_GET, "/signatures", rvs_web_signatures, "limit offset"},
	{RVS_M_GET, "/issues", rvs_web_issues, ISSUES},
	{RVS_M_GET, "/search", rvs_web_search, SEARCH},
	{RVS_M_GET, "/campaigns", rvs_web_campaigns, ""},
	{RVS_M_POST, "/campaigns", rvs_web_campaigns_post, ""},
	{RVS_M_GET, "/campaigns/c-1", rvs_web_campaign, ""},
	{RVS_M_POST, "/campaigns/c-1", rvs_web_campaign_post, ""},
	{RVS_M_GET, "/fleet", rvs_web_fleet, ""},
	{RVS_M_GET, "/aggregate", rvs_web_aggregate, AGG " range_since range_until"},
	{RVS_M_GET, "/heatmap", rvs_web_heatmap, HEATMAP},
	{RVS_M_GET, "/heaviest", rvs_web_heaviest, AGG " node by limit frame"},
	{RVS_M_GET, "/aggregate/diff", rvs_web_aggregate_diff, AGG_DIFF},
	{RVS_M_GET, "/callers", rvs_web_callers, AGG " of"},
	{RVS_M_GET, "/methods/m", rvs_web_method, METHOD},
	{RVS_M_POST, "/methods/m", rvs_web_method_post, ""},
	{RVS_M_GET, "/regressions", rvs_web_regressions, REGRESS},
	{RVS_M_GET, "/trend", rvs_web_trend, TREND},
	{RVS_M_GET, "/api/v2/x", rvs_query_none, "*"},
	{RVS_M_GET, "/nope/at/all", rvs_web_not_found, "*"},
};

static void test_route_params_each_route_lists_exactly_its_parameters(void **state)
{
	for (size_t i = 0; i < sizeof ROUTES / sizeof ROUTES[0]; i++) {
		const char *arg, *want = ROUTES[i].params;
		size_t n, k = 0;
		unsigned allow;
		const struct rvs_route *r =
			find(ROUTES[i].method, ROUTES[i].path, &arg, &n, &allow);

		assert_non_null(r);
		assert_int_equal(allow, 0);
		assert_ptr_equal(r->handler, ROUTES[i].handler);
		/* The route's list, in order, is the expected one. */
		for (; r->params && r->params[k]; k++) {
			size_t len = strlen(r->params[k]);
			assert_memory_equal(want, r->params[k], len);
			assert_true(want[len] == ' ' || want[len] == '\0');
			want += len + (want[len] == ' ');
		}
		assert_string_equal(want, "");
		assert_int_equal(k == 0, r->params == NULL);
	}
}

static void test_route_params_unknown_name_is_refused_by_name(void **state)
{
	char bad[64];
	const char *arg;
	size_t n;
	unsigned allow;
	const struct rvs_route *r;

	for (size_t i = 0; i < sizeof ROUTES / sizeof ROUTES[0]; i++) {
		r = find(ROUTES[i].method, ROUTES[i].path, &arg, &n, &allow);
		assert_int_equal(rvs_route_params_check(r, "", bad, sizeof bad), 0);
		assert_int_equal(rvs_route_params_check(r, NULL, bad, sizeof bad), 0);
		if (strcmp(ROUTES[i].params, "*") == 0) {
			assert_int_equal(rvs_route_params_check(r, "zz=1&q", bad, sizeof bad), 0);
			continue;
		}
		bad[0] = '\0';
		assert_int_equal(rvs_route_params_check(r, "zz=1", bad, sizeof bad), -EINVAL);
		assert_string_equal(bad, "zz");
	}
	r = find(RVS_M_GET, "/api/v1/traces", &arg, &n, &allow);
	assert_int_equal(rvs_route_params_check(r, "app=a&&limit=3&kind=", bad, sizeof bad), 0);
	/* The name is decoded; a bare name counts; the first unknown is named. */
	assert_int_equal(rvs_route_params_check(r, "s%6Frt=x", bad, sizeof bad), 0);
	assert_int_equal(rvs_route_params_check(r, "app=a&order&x=1", bad, sizeof bad), -EINVAL);
	assert_string_equal(bad, "order");
	assert_int_equal(rvs_route_params_check(r, "l%69mit2=1", bad, sizeof bad), -EINVAL);
	assert_string_equal(bad, "limit2");
	r = find(RVS_M_GET, "/api/v1/aggregate", &arg, &n, &allow);
	assert_int_equal(rvs_route_params_check(r, "a.app=x", bad, sizeof bad), -EINVAL);
	assert_string_equal(bad, "a.app");
}

static void test_route_params_api_refuses_before_the_handler_runs(void **state)
{
	struct rvs_query_resp q;
	static const char *const paths[] = {"/api/v1/fleet", "/api/v1/traces", "/api/v1/signatures",
					    "/api/v1/regressions/runs"};
	json_t *doc;

	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		/* No database: a handler that ran would answer 500 or 503. */
		rvs_query_handle("/nonexistent/db", "/nonexistent", paths[i], "order=name", &q);
		assert_int_equal(q.status, 400);
		assert_string_equal(q.content_type, "application/json");
		doc = json_loadb(q.body, q.len, 0, NULL);
		assert_non_null(doc);
		assert_string_equal(json_string_value(json_object_get(doc, "error")),
				    "unknown parameter: order");
		json_decref(doc);
		free(q.body);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_find_each_family_gets_its_handler_and_auth),
		cmocka_unit_test(test_route_find_specific_before_catch_all_wins),
		cmocka_unit_test(test_route_find_wildcards_capture_their_match),
		cmocka_unit_test(test_route_find_other_method_gives_union_of_allowed),
		cmocka_unit_test(test_route_find_unknown_path_is_the_web_404_or_its_family_s),
		cmocka_unit_test(test_route_params_each_route_lists_exactly_its_parameters),
		cmocka_unit_test(test_route_params_unknown_name_is_refused_by_name),
		cmocka_unit_test(test_route_params_api_refuses_before_the_handler_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
