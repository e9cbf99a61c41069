/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_openapi_doc.c — server/openapi.json, the JSON API's OpenAPI 3.1
 * document, against the route table the server dispatches through
 * (app/routes.h), and against a real validator.
 *
 * - It is valid OpenAPI 3.1 (npm @apidevtools/swagger-parser) and every
 *   schema in it compiles in ajv's strict JSON Schema 2020-12
 *   (tests/server/openapi/lint.js); skipped, visibly, without node or the
 *   npm modules.
 * - The server serves exactly the file (it is compiled in).
 * - Every JSON API entry of the route table is an operation of the
 *   document — its pattern the path item's x-rearview-route, each of its
 *   methods an operation, the query parameters documented exactly the
 *   ones the entry accepts (the dispatcher refuses any other), its least
 *   role the operation's x-rearview-role, public exactly when the entry
 *   needs no token — or one of the catch-all 404 entries the document
 *   lists; and the document has no operation, path or catch-all the
 *   table lacks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "api/openapi.h"
#include "app/routes.h"
#include "http/route.h"
#include "store/store.h"
#include "openapi_node.h"

static json_t *g_doc;

static int setup(void **state)
{
	json_error_t e;
	(void)state;
	g_doc = json_load_file(RVS_OPENAPI_DOC, 0, &e);
	if (!g_doc)
		fprintf(stderr, "%s:%d: %s\n", RVS_OPENAPI_DOC, e.line, e.text);
	return g_doc ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	json_decref(g_doc);
	return 0;
}

static void test_openapi_doc_is_valid_openapi_3_1(void **state)
{
	const char *why = openapi_node_missing();
	(void)state;
	if (why) {
		printf("# skip: %s\n", why);
		skip();
	}
	assert_int_equal(openapi_node("lint.js", RVS_OPENAPI_DOC, NULL), 0);
}

static void test_openapi_doc_served_is_the_file(void **state)
{
	FILE *f = fopen(RVS_OPENAPI_DOC, "rb");
	size_t len, got;
	const char *doc = rvs_openapi_doc(&len);
	char *buf;

	(void)state;
	assert_non_null(f);
	buf = malloc(len + 2);
	assert_non_null(buf);
	got = fread(buf, 1, len + 1, f); /* one more: the file is no longer */
	fclose(f);
	assert_int_equal(got, len);
	assert_memory_equal(buf, doc, len);
	free(buf);
}

/* A parameter object, through its $ref (components/parameters). */
static json_t *param_of(json_t *p)
{
	const char *ref = json_string_value(json_object_get(p, "$ref"));
	static const char pre[] = "#/components/parameters/";
	if (!ref)
		return p;
	assert_int_equal(strncmp(ref, pre, sizeof pre - 1), 0);
	p = json_object_get(json_object_get(json_object_get(g_doc, "components"), "parameters"),
			    ref + sizeof pre - 1);
	assert_non_null(p);
	return p;
}

/* The entry accepts parameter name (route.h: NULL params take none). */
static int route_takes(const struct rvs_route *rt, const char *name)
{
	for (const char *const *p = rt->params; p && *p; p++)
		if (strcmp(*p, name) == 0)
			return 1;
	return 0;
}

/* A catch-all 404 entry: it accepts any parameter. */
static int catch_all(const struct rvs_route *rt)
{
	return rt->params && rt->params[0] && strcmp(rt->params[0], "*") == 0 && !rt->params[1];
}

/* The path template with each {name} as one wildcard, against the
 * entry's pattern ("*", or a trailing "**" for a name that may hold '/'). */
static void check_template(const char *tpl, const char *pattern)
{
	char want[256], *w = want;
	for (const char *p = tpl; *p; p++) {
		if (*p == '{') {
			p = strchr(p, '}');
			assert_non_null(p);
			*w++ = '*';
			if (p[1] == '\0' && strstr(pattern, "**") == pattern + strlen(pattern) - 2)
				*w++ = '*';
			continue;
		}
		*w++ = *p;
	}
	*w = '\0';
	if (strcmp(want, pattern) != 0)
		fail_msg("path %s does not match route %s", tpl, pattern);
}

/* One operation of the document against its route entry. */
static void check_operation(const char *path, const char *method, json_t *op,
			    const struct rvs_route *rt)
{
	json_t *params = json_object_get(op, "parameters"), *p, *sec;
	const char *role = json_string_value(json_object_get(op, "x-rearview-role"));
	size_t i, nquery = 0;

	check_template(path, rt->pattern);
	json_array_foreach(params, i, p)
	{
		const char *name, *in;
		p = param_of(p);
		name = json_string_value(json_object_get(p, "name"));
		in = json_string_value(json_object_get(p, "in"));
		assert_non_null(name);
		assert_non_null(in);
		if (strcmp(in, "path") == 0) {
			char brace[80];
			snprintf(brace, sizeof brace, "{%s}", name);
			if (!strstr(path, brace))
				fail_msg("%s %s: path parameter %s not in the path", method, path,
					 name);
			continue;
		}
		assert_string_equal(in, "query");
		if (!route_takes(rt, name))
			fail_msg("%s %s documents parameter %s, which the route refuses", method,
				 path, name);
		nquery++;
	}
	for (const char *const *q = rt->params; q && *q; q++) {
		int found = 0;
		json_array_foreach(params, i, p)
		{
			p = param_of(p);
			found |= strcmp(json_string_value(json_object_get(p, "name")), *q) == 0 &&
				 strcmp(json_string_value(json_object_get(p, "in")), "query") == 0;
		}
		if (!found)
			fail_msg(
				"%s %s: the route takes parameter %s, the document does not say it",
				method, path, *q);
	}
	/* Who may call it. */
	sec = json_object_get(op, "security");
	if (rt->auth == RVS_AUTH_NONE) {
		assert_true(json_is_array(sec) && json_array_size(sec) == 0);
		assert_null(role);
	} else {
		assert_int_equal(rt->auth, RVS_AUTH_API);
		assert_null(sec); /* the document's: the bearer token */
		if (!role || strcmp(role, rvs_role_name(rt->role)) != 0)
			fail_msg("%s %s: x-rearview-role %s, the route needs %s", method, path,
				 role ? role : "(none)", rvs_role_name(rt->role));
	}
	assert_non_null(json_object_get(op, "responses"));
	(void)nquery;
}

static void test_openapi_doc_every_api_route_documented_and_no_other(void **state)
{
	const struct rvs_route_table *t = rvs_app_routes();
	json_t *paths = json_object_get(g_doc, "paths"), *item;
	json_t *catch = json_object_get(json_object_get(g_doc, "x-rearview-catch-all"), "routes");
	static const struct {
		unsigned bit;
		const char *name;
	} methods[] = {{RVS_M_GET, "get"}, {RVS_M_POST, "post"}};
	size_t ops = 0, napi = 0, i;
	const char *path, *key;
	json_t *v;

	(void)state;
	assert_true(json_is_object(paths));
	assert_true(json_is_array(catch));
	/* Every entry of the table, in the document. */
	for (size_t r = 0; r < t->n; r++) {
		const struct rvs_route *rt = &t->routes[r];
		int found = 0;
		if (rt->family != RVS_FAMILY_API)
			continue;
		napi++;
		if (catch_all(rt)) {
			json_array_foreach(catch, i, v) found |=
				strcmp(json_string_value(v), rt->pattern) == 0;
			if (!found)
				fail_msg("catch-all route %s is not in x-rearview-catch-all",
					 rt->pattern);
			continue;
		}
		json_object_foreach(paths, path, item)
		{
			const char *pat =
				json_string_value(json_object_get(item, "x-rearview-route"));
			if (!pat || strcmp(pat, rt->pattern) != 0)
				continue;
			found = 1;
			for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
				json_t *op = json_object_get(item, methods[m].name);
				if (!(rt->methods & methods[m].bit))
					continue;
				if (!op)
					fail_msg("route %s %s: no operation in the document",
						 methods[m].name, rt->pattern);
				check_operation(path, methods[m].name, op, rt);
				ops++;
			}
		}
		if (!found)
			fail_msg("route %s is not in the document", rt->pattern);
	}
	/* Nothing the table lacks: each operation is an entry's method (the
	 * first entry of that pattern serving it, as the dispatcher picks). */
	json_object_foreach(paths, path, item)
	{
		const char *pat = json_string_value(json_object_get(item, "x-rearview-route"));
		assert_non_null(pat);
		json_object_foreach(item, key, v)
		{
			unsigned bit = strcmp(key, "get") == 0	  ? RVS_M_GET
				       : strcmp(key, "post") == 0 ? RVS_M_POST
								  : 0;
			int found = 0;
			if (strncmp(key, "x-", 2) == 0)
				continue;
			if (!bit)
				fail_msg("%s: %s is not a method the server serves", path, key);
			for (size_t r = 0; r < t->n && !found; r++)
				found = t->routes[r].family == RVS_FAMILY_API &&
					strcmp(t->routes[r].pattern, pat) == 0 &&
					(t->routes[r].methods & bit);
			if (!found)
				fail_msg("%s %s: no such route (%s) in the table", key, path, pat);
			ops--;
		}
	}
	assert_int_equal(ops, 0); /* each documented operation counted once */
	json_array_foreach(catch, i, v)
	{
		int found = 0;
		for (size_t r = 0; r < t->n; r++)
			found |= t->routes[r].family == RVS_FAMILY_API &&
				 catch_all(&t->routes[r]) &&
				 strcmp(t->routes[r].pattern, json_string_value(v)) == 0;
		if (!found)
			fail_msg("x-rearview-catch-all %s is no catch-all route",
				 json_string_value(v));
	}
	printf("# %zu JSON API routes; %zu paths documented\n", napi, json_object_size(paths));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openapi_doc_is_valid_openapi_3_1),
		cmocka_unit_test(test_openapi_doc_served_is_the_file),
		cmocka_unit_test(test_openapi_doc_every_api_route_documented_and_no_other),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
