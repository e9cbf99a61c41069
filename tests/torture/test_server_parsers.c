/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_server_parsers.c — allocation-failure tests for rearview-server's
 * parsers of untrusted text that need more than a unit of their own: the S3
 * backend's ListObjectsV2 answer (rvs_s3_list_parse, libxml2), a
 * campaign's JSON spec (rvs_campaign_normalize, jansson) and the
 * timeline's query parameters with the level of detail they ask for
 * (web_timeline_query).  Each input is a seed of its fuzz corpus
 * (tests/fuzz/server_*_corpus) or made here.  A failing allocation must end
 * in an error — never in a result cut short — with no crash and nothing
 * leaked (LeakSanitizer, in the sanitizer stage).  The timeline's error is
 * -ENOMEM; libxml2 and jansson report some failed allocations as bad input,
 * so the S3 and campaign parsers may say -EIO or -EINVAL then.  Chain
 * search patterns allocate nothing, which is checked too.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "blob/blob.h"
#include "capbuild.h"
#include "model/campaign.h"
#include "model/search.h"
#include "rearview/analysis.h"
#include "torture.h"
#include "web/web_int.h"

#ifndef RVS_SRCDIR
#error RVS_SRCDIR names the source tree
#endif

static char *seed(const char *corpus, const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	char *buf = malloc(1 << 16);

	snprintf(path, sizeof path, "%s/tests/fuzz/%s/%s", RVS_SRCDIR, corpus, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_non_null(buf);
	*len = fread(buf, 1, (1 << 16) - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

struct s3_case {
	const char *xml;
	size_t len;
	struct rvs_s3_page p;
};

static int run_s3(void *arg)
{
	struct s3_case *c = arg;
	int rc = rvs_s3_list_parse(c->xml, c->len, "rv/", &c->p);

	if (rc == 0) {
		/* Complete: both blobs and the way on. */
		assert_int_equal(c->p.n, 2);
		assert_string_equal(c->p.token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
	} else {
		assert_int_equal(c->p.n, 0);
	}
	return rc;
}

static void test_server_parsers_s3_list_each_alloc_failing_fails_cleanly(void **state)
{
	static char names[RVS_S3_PAGE_MAX][65];
	static int64_t mtimes[RVS_S3_PAGE_MAX];
	struct s3_case c = {.p = {.names = names, .mtimes = mtimes}};
	char *xml = seed("server_s3list_corpus", "first-page.xml", &c.len);

	c.xml = xml;
	assert_int_equal(run_s3(&c), 0);
	/* libxml2 2.9 reports some failed allocations as parse errors
	 * ("xmlSAX2StartDocument"): any error then, never a short page. */
	assert_true(torture_run(run_s3, &c, 0) > 0);
	free(xml);
}

struct campaign_case {
	const char *body;
	char *want; /* the normalized text of a run without failures */
};

static int run_campaign(void *arg)
{
	struct campaign_case *c = arg;
	char err[256] = "", *out = NULL;
	int rc = rvs_campaign_normalize(c->body, strlen(c->body), &out, err, sizeof err);

	if (rc == 0) {
		/* Complete, not a shorter spec. */
		assert_string_equal(out, c->want);
		free(out);
	} else {
		assert_null(out);
	}
	return rc;
}

static void test_server_parsers_campaign_each_alloc_failing_fails_cleanly(void **state)
{
	size_t len;
	char *body = seed("server_campaign_corpus", "full.json", &len), err[256];
	struct campaign_case c = {body, NULL};

	assert_int_equal(rvs_campaign_normalize(body, len, &c.want, err, sizeof err), 0);
	assert_non_null(strstr(c.want, "\"kinds\":[\"ANOMALY_TOUCH_LATENCY\",\"ANOMALY_JANK\""));
	assert_int_equal(run_campaign(&c), 0);
	/* jansson's lexer reports some failed allocations as syntax errors
	 * ("string or '}' expected"), so -EINVAL is possible too: any error,
	 * never a shorter spec. */
	assert_true(torture_run(run_campaign, &c, 0) > 0);
	free(c.want);
	free(body);
}

struct timeline_case {
	rva_trace *t;
	const char *query;
	size_t items;
};

static int run_timeline(void *arg)
{
	struct timeline_case *c = arg;
	const char *bad = NULL;
	json_t *doc = NULL;
	int rc = web_timeline_query(c->t, c->query, &doc, &bad);

	if (rc == 0) {
		assert_int_equal(json_array_size(json_object_get(doc, "items")), c->items);
		assert_int_equal(json_integer_value(json_object_get(doc, "width")), 300);
		json_decref(doc);
	} else {
		assert_null(doc);
	}
	return rc;
}

static void test_server_parsers_timeline_each_alloc_failing_fails_cleanly(void **state)
{
	struct timeline_case c = {.query = "width=300&from=100&to=6000"};
	capbuf cb = {0};
	rva_error err;
	json_t *doc;
	const char *bad;

	cb_program(&cb, 200, 0);
	cb_finish(&cb);
	assert_int_equal(rva_capture_decode(cb.b, cb.len, &c.t, &err), 0);
	assert_int_equal(web_timeline_query(c.t, c.query, &doc, &bad), 0);
	c.items = json_array_size(json_object_get(doc, "items"));
	assert_true(c.items > 0);
	json_decref(doc);
	assert_true(torture_run(run_timeline, &c, -ENOMEM) > 0);
	rva_trace_free(c.t);
	free(cb.b);
}

/* Parsing and matching a pattern allocate nothing, so they cannot fail
 * for want of memory: the first allocation armed is never reached. */
static void test_server_parsers_search_pattern_allocates_nothing(void **state)
{
	static struct rvs_chain_pat p;
	static const char *const fr[] = {"main", "loop", "layout", "draw"};
	static const size_t len[] = {4, 4, 6, 4};
	size_t from, to;

	torture_arm(1);
	assert_int_equal(rvs_chain_pattern_parse("main > * > draw", &p), 0);
	assert_int_equal(rvs_chain_match(&p, fr, len, 4, &from, &to), 1);
	assert_int_equal(torture_disarm(), 0);
	/* The hook works: an allocation now would have failed.  Called through
	 * a volatile pointer: clang may drop an allocation whose pointer is
	 * only compared with NULL, and fold the compare to "not NULL". */
	void *(*volatile alloc)(size_t) = malloc;
	torture_arm(1);
	void *x = alloc(1);
	assert_null(x);
	assert_int_equal(torture_disarm(), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_parsers_s3_list_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_server_parsers_campaign_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_server_parsers_timeline_each_alloc_failing_fails_cleanly),
		cmocka_unit_test(test_server_parsers_search_pattern_allocates_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
