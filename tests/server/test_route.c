/*
 * test_route.c — the route table's dispatcher (route.c): the first entry
 * serving path and method wins, specific patterns before their family's
 * catch-all, a path served with other methods gives their union, an
 * unknown path gives none, and wildcards capture what they matched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "campaign.h"
#include "fleet.h"
#include "query.h"
#include "route.h"
#include "symbols.h"
#include "web.h"

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

static void test_route_find_unknown_path_returns_null(void **state)
{
	static const char *const paths[] = {
		"/nope", "/static", "/api/v2/traces", "/v1/uploads/x", "/metrics/", "", "/traces2"};
	const char *arg;
	size_t n;
	unsigned allow;

	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		assert_null(find(RVS_M_GET, paths[i], &arg, &n, &allow));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_find_each_family_gets_its_handler_and_auth),
		cmocka_unit_test(test_route_find_specific_before_catch_all_wins),
		cmocka_unit_test(test_route_find_wildcards_capture_their_match),
		cmocka_unit_test(test_route_find_other_method_gives_union_of_allowed),
		cmocka_unit_test(test_route_find_unknown_path_returns_null),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
