/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_alerts.c — alert rules on trends (model/alerts.h) on the store the
 * suite's switch picks (store_env.h: sqlite, or a private PostgreSQL in
 * the `pg` run).
 *
 * A synthetic fleet of app "syn" with exact durations over 28 capture
 * days: ten captures a day, twenty from day 21; method "render" takes
 * 2 ms of self time (plus j µs for the day's j-th capture) except on days
 * 16–18, where it takes 6 ms; "steady" takes 3 ms every day.  The rules
 * are stored as the JSON API stores them, then the pass runs once per day
 * (at noon UTC) from day 13 to day 27, each pass followed by a delivery
 * pass to a real HTTP receiver (webhook_receiver.h) that checks the
 * signature.  What must happen, worked out from the fixture:
 *  - "p95 self of render above 4 ms for 2 days" fires on day 17 (days 16
 *    and 17 over; the value is day 17's p95, the 10th of 6.000…6.009 ms:
 *    6.009 ms) and resolves on day 19 (day 19 under);
 *  - "captures up 50 % week over week" fires on day 24: 110 captures in
 *    days 18–24 against 70 in days 11–17, +57.14 % (day 23: +42.86 %);
 *  - "p95 self of steady above 4 ms" and "p50 inclusive of render up
 *    200 %" never fire;
 *  - exactly three deliveries (firing, resolved, firing), each signed, in
 *    that order, naming the rule, value, threshold and the trend link;
 *    passes repeated while a rule stays firing deliver nothing more, and
 *    two passes at once move a rule (and queue its alert) once.
 * The same fleet's jank counts (devices send them for every app, traced or
 * not): app "syn" draws 7,000 frames a day on one device, 10 late a day,
 * 20 from day 21 — so
 *  - "jank rate of syn above 0.25 % for 2 days" fires on day 22 (days 21
 *    and 22 at 20 / 7000 = 0.2857 %);
 *  - "jank rate of syn up 50 % week over week" fires on day 24: 110 late
 *    of 49,000 in days 18–24 against 70 of 49,000 in days 11–17, +57.14 %
 *    (day 23: +42.86 %).
 * Weighted rules (each capture counting with its selection weight, 1/p
 * of the campaign that took it): app "w" on days 20–22, each day two
 * captures of method "paint" taken by a campaign sampling 10 % (weight
 * 10, exact; 8.000 and 8.001 ms) and eight by one taking every capture
 * (weight 1; 1.000…1.007 ms) — ten captures, 28 by weight, a day.  So a
 * day's unweighted p50 is the 5th of ten, 1.004 ms, and its weighted p50
 * the first value whose cumulative weight reaches 14 of 28: 8.000 ms;
 *  - "p50 self of paint above 4 ms" fires on day 21 weighted (the default)
 *    and never unweighted; "below 4 ms" the other way round;
 *  - "captures of w above 20 a day" fires weighted (28) and not
 *    unweighted (10);
 *  - a rule stored before rules had `weighted` is evaluated unweighted;
 *  - the syn fleet's uploads carry no selection: its weights are unknown,
 *    and a weighted alert on it says it is not exact.
 * Nothing waits on time: the passes take `now` as an argument.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "model/alerts.h"
#include "model/webhook.h"
#include "store/store.h"
#include "store_env.h"
#include "webhook_receiver.h"

#define BASE_DAY 19600 /* 2023-08-31 */
#define DAYS	 28
#define FIRST	 13 /* the first day evaluated: two full weeks of data before it */

static const char SECRET[] = "test-alerts-secret";

struct fx {
	char dir[64];
	char db[512];
	/* Held for the test, as the server holds its store: the passes and
	 * deliveries share it (and its connections) instead of opening
	 * their own each time. */
	const struct rvs_store_ops *ops;
	struct rvs_store *s;
};

static int64_t noon(int day)
{
	return (int64_t)(BASE_DAY + day) * 86400 + 43200;
}

/* The fixture's rows as one SQL script (pg: PostgreSQL's form). */
static char *fleet_sql(int pg)
{
	size_t len = 0, room = 1 << 20;
	char *sql = malloc(room);

	assert_non_null(sql);
#define ADD(...) \
	(len += (size_t)snprintf(sql + len, room - len, __VA_ARGS__), assert_true(len < room))
	if (pg)
		ADD("SELECT rv_week_partitions(w) FROM generate_series(%d, %d) w;"
		    " SET session_replication_role = replica; BEGIN;",
		    BASE_DAY * 86400 / 604800, (BASE_DAY + DAYS) * 86400 / 604800);
	else
		ADD("PRAGMA foreign_keys=OFF; BEGIN;");
	for (int i = 0; i < DAYS; i++) {
		int n = i < 21 ? 10 : 20;
		for (int j = 0; j < n; j++) {
			long long day = BASE_DAY + i;
			long long received = day * 86400 + 7200 + j;
			long long render =
				(i >= 16 && i <= 18 ? 6000000LL : 2000000LL) + j * 1000LL;
			ADD("INSERT INTO traces (trace_id, app_id, app_version, model, "
			    "captured_at_ns,"
			    " received_at, duration_ns, decoded_at) VALUES ('t-%02d-%02d', 'syn',"
			    " '1.0', 'm', %lld, %lld, 10000000, 0);",
			    i, j, (day * 86400 + 3600 + j) * 1000000000LL, received);
			ADD("INSERT INTO trace_methods (trace_id, method, calls, self_ns, "
			    "incl_ns%s)"
			    " VALUES ('t-%02d-%02d', 'render', 1, %lld, %lld",
			    pg ? ", received_at" : "", i, j, render, render + 500000);
			if (pg)
				ADD(", %lld", received);
			ADD(");INSERT INTO trace_methods (trace_id, method, calls, self_ns,"
			    " incl_ns%s) VALUES ('t-%02d-%02d', 'steady', 1, 3000000, 3000000",
			    pg ? ", received_at" : "", i, j);
			if (pg)
				ADD(", %lld", received);
			ADD(");");
		}
	}
	for (int i = 0; i < DAYS; i++)
		ADD("INSERT INTO jank_counts (device_id, app_id, app_version, day, frames, late,"
		    " received_at) VALUES ('d-1', 'syn', '1.0', %d, 7000, %d, 0);",
		    BASE_DAY + i, i < 21 ? 10 : 20);
	ADD("COMMIT;");
#undef ADD
	return sql;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	char path[128];
	char *sql;
	int rc;

	if (!f)
		return -1;
	snprintf(f->dir, sizeof f->dir, "/tmp/rvs-alerts-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(path, sizeof path, "%s/rearview.db", f->dir);
	if (rvt_store_dsn(path, f->db, sizeof f->db)) {
		print_error("store: %s\n", rvt_store_why());
		return -1;
	}
	if (rvs_store_acquire(f->db, &f->ops, &f->s))
		return -1;
	sql = fleet_sql(rvt_store_is_pg());
	rc = rvt_db_exec(f->db, sql);
	free(sql);
	*state = f;
	return rc ? -1 : 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	rvs_store_release(f->s);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	free(f);
	return system(cmd) == 0 ? 0 : -1;
}

/* Stores rule json as POST /api/v1/alert-rules does; its id. */
static int64_t add_rule(const char *db, const char *json)
{
	struct rvs_alert_spec s;
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *d;
	char err[200] = "", *text;
	json_t *o = json_loads(json, 0, NULL), *spec;
	int64_t id = 0;

	assert_non_null(o);
	if (rvs_alert_spec_parse(o, RVS_ALERT_NEW, &s, err, sizeof err))
		fail_msg("%s: %s", json, err);
	json_decref(o);
	spec = rvs_alert_spec_json(&s);
	text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(spec);
	assert_int_equal(rvs_store_regress_open(db, &ops, &st, &d), 0);
	assert_int_equal(
		ops->alert_rule_add(d,
				    &(struct rvs_alert_rule_row){.name = s.name,
								 .spec = text,
								 .created_by = "test",
								 .created_at = noon(FIRST)},
				    RVS_ALERT_RULES_MAX, &id),
		0);
	rvs_store_regress_close(ops, st, d);
	free(text);
	return id;
}

static char *state_of(const char *db, int64_t id)
{
	char sql[96];
	snprintf(sql, sizeof sql, "SELECT state FROM alert_rules WHERE id = %lld", (long long)id);
	return rvt_db_text(db, sql, NULL);
}

static int is_firing(const char *db, int64_t id)
{
	char *s = state_of(db, id);
	int firing;

	assert_non_null(s);
	firing = !strcmp(s, "firing");
	free(s);
	return firing;
}

/* ---- the rule spec ---------------------------------------------------------- */

static void test_alerts_spec_refuses_what_is_not_a_rule(void **state)
{
	static const char *const bad[] = {
		"[]",
		"{\"metric\":\"self_p95\",\"method\":\"x\",\"condition\":\"above\",\"threshold\":"
		"1}",
		"{\"name\":\"n\",\"metric\":\"self_p99\",\"method\":\"x\",\"condition\":\"above\","
		"\"threshold\":1}",
		"{\"name\":\"n\",\"metric\":\"self_p95\",\"condition\":\"above\",\"threshold\":1}",
		"{\"name\":\"n\",\"metric\":\"captures\",\"method\":\"x\",\"condition\":\"up\","
		"\"threshold\":1}",
		"{\"name\":\"n\",\"metric\":\"self_p95\",\"method\":\"x\",\"condition\":"
		"\"sideways\","
		"\"threshold\":1}",
		"{\"name\":\"n\",\"metric\":\"self_p95\",\"method\":\"x\",\"condition\":\"above\","
		"\"threshold\":-1}",
		"{\"name\":\"n\",\"metric\":\"self_p95\",\"method\":\"x\",\"condition\":\"above\","
		"\"threshold\":1,\"days\":0}",
		"{\"name\":\"n\",\"metric\":\"self_p95\",\"method\":\"x\",\"condition\":\"above\","
		"\"threshold\":1,\"days\":32}",
		"{\"name\":\"n\",\"metric\":\"self_p95\",\"method\":\"x\",\"condition\":\"above\","
		"\"threshold\":1,\"colour\":\"red\"}",
		"{\"name\":\"n\\u0001\",\"metric\":\"self_p95\",\"method\":\"x\",\"condition\":"
		"\"above\",\"threshold\":1}",
	};
	struct rvs_alert_spec s;
	char err[200];
	json_t *o;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		o = json_loads(bad[i], JSON_DECODE_ANY, NULL);
		assert_non_null(o);
		err[0] = '\0';
		if (rvs_alert_spec_parse(o, RVS_ALERT_NEW, &s, err, sizeof err) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
		assert_true(err[0] != '\0');
		json_decref(o);
	}
	/* Defaults: 2 days for above / below, 7 for up / down. */
	o = json_loads("{\"name\":\"n\",\"metric\":\"captures\",\"app\":\"a\",\"condition\":\"up\","
		       "\"threshold\":50}",
		       0, NULL);
	assert_int_equal(rvs_alert_spec_parse(o, RVS_ALERT_NEW, &s, err, sizeof err), 0);
	assert_int_equal(s.days, 7);
	assert_int_equal(s.metric, RVS_ALERT_CAPTURES);
	/* A new rule is weighted unless it says not; a stored one without
	 * the field predates it and reads as unweighted. */
	assert_int_equal(s.weighted, 1);
	assert_int_equal(rvs_alert_spec_parse(o, RVS_ALERT_STORED, &s, err, sizeof err), 0);
	assert_int_equal(s.weighted, 0);
	json_decref(o);
	o = json_loads("{\"name\":\"n\",\"metric\":\"self_p50\",\"method\":\"m\","
		       "\"condition\":\"above\",\"threshold\":1,\"weighted\":false}",
		       0, NULL);
	assert_int_equal(rvs_alert_spec_parse(o, RVS_ALERT_NEW, &s, err, sizeof err), 0);
	assert_int_equal(s.weighted, 0);
	json_decref(o);
	o = json_loads("{\"name\":\"n\",\"metric\":\"self_p50\",\"method\":\"m\","
		       "\"condition\":\"above\",\"threshold\":1,\"weighted\":1}",
		       0, NULL);
	assert_int_equal(rvs_alert_spec_parse(o, RVS_ALERT_NEW, &s, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "weighted"));
	json_decref(o);
	/* jank_rate counts frames, not sampled captures: never weighted. */
	o = json_loads("{\"name\":\"n\",\"metric\":\"jank_rate\",\"app\":\"a\","
		       "\"condition\":\"up\",\"threshold\":50}",
		       0, NULL);
	assert_int_equal(rvs_alert_spec_parse(o, RVS_ALERT_NEW, &s, err, sizeof err), 0);
	assert_int_equal(s.weighted, 0);
	json_decref(o);
	o = json_loads("{\"name\":\"n\",\"metric\":\"jank_rate\",\"app\":\"a\","
		       "\"condition\":\"up\",\"threshold\":50,\"weighted\":true}",
		       0, NULL);
	assert_int_equal(rvs_alert_spec_parse(o, RVS_ALERT_NEW, &s, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "weighted"));
	json_decref(o);
}

/* ---- the planted shift, day by day ---------------------------------------- */

static void test_alerts_planted_shift_fires_on_its_day_once_and_resolves_once(void **state)
{
	struct fx *f = *state;
	struct rvt_receiver rv;
	struct rvs_webhook_cfg wc = {.max_attempts = 3, .backoff_ms = 10, .timeout_ms = 30000};
	char url[96], secret[128];
	const char *urls[1] = {url};
	int64_t slow, steady, rate, quiet;
	int fired_slow = -1, resolved_slow = -1, fired_rate = -1;
	json_t *b;

	rvt_receiver_write_secret(f->dir, SECRET);
	snprintf(secret, sizeof secret, "%s/webhook.secret", f->dir);
	wc.secret_file = secret;
	rvt_receiver_start(&rv, SECRET, 0);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", rv.port);
	slow = add_rule(f->db, "{\"name\":\"render slow\",\"metric\":\"self_p95\",\"method\":"
			       "\"render\",\"app\":\"syn\",\"condition\":\"above\",\"threshold\":4,"
			       "\"days\":2}");
	steady = add_rule(f->db,
			  "{\"name\":\"steady slow\",\"metric\":\"self_p95\",\"method\":"
			  "\"steady\",\"app\":\"syn\",\"condition\":\"above\",\"threshold\":4}");
	rate = add_rule(f->db, "{\"name\":\"capture rate\",\"metric\":\"captures\",\"app\":\"syn\","
			       "\"condition\":\"up\",\"threshold\":50}");
	quiet = add_rule(f->db, "{\"name\":\"render p50 tripled\",\"metric\":\"incl_p50\","
				"\"method\":\"render\",\"app\":\"syn\",\"condition\":\"up\","
				"\"threshold\":200,\"days\":7}");
	for (int day = FIRST; day < DAYS; day++) {
		struct rvs_alert_pass_stats ps;
		int was_slow = is_firing(f->db, slow), was_rate = is_firing(f->db, rate);

		assert_int_equal(
			rvs_alerts_pass(f->db, noon(day), "https://rv.example", urls, 1, &ps), 0);
		assert_int_equal(ps.rules, 4);
		assert_int_equal(ps.errors, 0);
		assert_int_equal(ps.decided, 4); /* every rule has data every day */
		assert_int_equal(rvs_webhook_deliver_due(f->db, &wc, NULL), 0);
		if (!was_slow && is_firing(f->db, slow)) {
			assert_int_equal(fired_slow, -1);
			fired_slow = day;
		}
		if (was_slow && !is_firing(f->db, slow)) {
			assert_int_equal(resolved_slow, -1);
			resolved_slow = day;
		}
		if (!was_rate && is_firing(f->db, rate)) {
			assert_int_equal(fired_rate, -1);
			fired_rate = day;
		}
		assert_false(is_firing(f->db, steady));
		assert_false(is_firing(f->db, quiet));
		/* Day 23 is one short of the bar: +42.86 %. */
		if (day == 23)
			assert_false(is_firing(f->db, rate));
	}
	assert_int_equal(fired_slow, 17);
	assert_int_equal(resolved_slow, 19);
	assert_int_equal(fired_rate, 24);
	assert_true(is_firing(f->db, rate)); /* still, at day 27 */

	/* Three deliveries, each signed, in order. */
	pthread_mutex_lock(&rv.mu);
	assert_int_equal(rv.requests, 3);
	assert_int_equal(rv.accepted, 3);
	assert_int_equal(rv.good_sigs, 3);
	assert_string_equal(rv.events[0], "alert.firing");
	assert_string_equal(rv.events[1], "alert.resolved");
	assert_string_equal(rv.events[2], "alert.firing");
	b = json_loads(rv.bodies[0], 0, NULL);
	assert_non_null(b);
	assert_string_equal(json_string_value(json_object_get(b, "event")), "alert.firing");
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "rule"), "name")),
			    "render slow");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "rule"), "id")),
			 slow);
	assert_true(fabs(json_real_value(json_object_get(b, "value")) - 6.009) < 1e-9);
	/* Weighted by default; the syn uploads carry no selection, so every
	 * weight is unknown (1): the same value, said to be inexact. */
	assert_true(json_is_true(json_object_get(b, "weighted")));
	assert_true(json_is_true(json_object_get(json_object_get(b, "rule"), "weighted")));
	assert_true(fabs(json_real_value(json_object_get(b, "value_unweighted")) - 6.009) < 1e-9);
	assert_true(json_is_false(json_object_get(b, "exact")));
	assert_non_null(
		strstr(json_string_value(json_object_get(b, "note")), "without a selection"));
	assert_true(json_number_value(json_object_get(b, "threshold")) == 4);
	assert_string_equal(json_string_value(json_object_get(b, "unit")), "ms");
	assert_string_equal(json_string_value(json_object_get(b, "day")), "2023-09-17");
	assert_string_equal(json_string_value(json_object_get(b, "link")),
			    "https://rv.example/trend?method=render&app=syn&by=day");
	json_decref(b);
	b = json_loads(rv.bodies[1], 0, NULL);
	assert_non_null(b);
	assert_string_equal(json_string_value(json_object_get(b, "state")), "ok");
	assert_string_equal(json_string_value(json_object_get(b, "day")), "2023-09-19");
	/* Day 19's p95: back to 2.009 ms. */
	assert_true(fabs(json_real_value(json_object_get(b, "value")) - 2.009) < 1e-9);
	json_decref(b);
	b = json_loads(rv.bodies[2], 0, NULL);
	assert_non_null(b);
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "rule"), "name")),
			    "capture rate");
	assert_true(fabs(json_real_value(json_object_get(b, "value")) - (110.0 / 70 - 1) * 100) <
		    1e-9);
	assert_true(json_real_value(json_object_get(b, "current")) == 110);
	assert_true(json_real_value(json_object_get(b, "previous")) == 70);
	assert_string_equal(json_string_value(json_object_get(b, "unit")), "%");
	assert_string_equal(json_string_value(json_object_get(b, "link")),
			    "https://rv.example/traces?app=syn");
	json_decref(b);
	pthread_mutex_unlock(&rv.mu);

	/* Still firing: more passes queue nothing. */
	for (int k = 0; k < 2; k++) {
		assert_int_equal(
			rvs_alerts_pass(f->db, noon(DAYS - 1), "https://rv.example", urls, 1, NULL),
			0);
		assert_int_equal(rvs_webhook_deliver_due(f->db, &wc, NULL), 0);
	}
	assert_int_equal(rvt_db_int(f->db, "SELECT count(*) FROM webhook_deliveries", NULL), 3);
	assert_int_equal(rvt_db_int(f->db,
				    "SELECT count(*) FROM webhook_deliveries WHERE state ="
				    " 'delivered'",
				    NULL),
			 3);
	pthread_mutex_lock(&rv.mu);
	assert_int_equal(rv.requests, 3);
	pthread_mutex_unlock(&rv.mu);
	/* The firing rule's last delivery is its alert, delivered. */
	{
		char sql[160];
		snprintf(sql, sizeof sql,
			 "SELECT w.event FROM alert_rules r JOIN webhook_deliveries w ON"
			 " w.id = r.last_delivery_id WHERE r.id = %lld",
			 (long long)rate);
		char *ev = rvt_db_text(f->db, sql, NULL);
		assert_non_null(ev);
		assert_string_equal(ev, "alert.firing");
		free(ev);
	}
	rvt_receiver_stop(&rv);
}

/* The jank_rate metric on the planted counts: each rule fires on the day
 * the fixture says, once, its alert naming the rate and linking the fleet
 * page; a rule without an app, or with a method, is refused. */
static void test_alerts_jank_rate_fires_on_its_day_once(void **state)
{
	struct fx *f = *state;
	struct rvt_receiver rv;
	struct rvs_webhook_cfg wc = {.max_attempts = 3, .backoff_ms = 10, .timeout_ms = 30000};
	struct rvs_alert_spec spec;
	char url[96], secret[128], err[200];
	const char *urls[1] = {url};
	int64_t above, up;
	int fired_above = -1, fired_up = -1;
	json_t *b, *o;

	o = json_loads("{\"name\":\"n\",\"metric\":\"jank_rate\",\"condition\":\"up\","
		       "\"threshold\":50}",
		       0, NULL);
	assert_int_equal(rvs_alert_spec_parse(o, RVS_ALERT_NEW, &spec, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "app required"));
	json_decref(o);
	o = json_loads("{\"name\":\"n\",\"metric\":\"jank_rate\",\"app\":\"syn\","
		       "\"method\":\"render\",\"condition\":\"up\",\"threshold\":50}",
		       0, NULL);
	assert_int_equal(rvs_alert_spec_parse(o, RVS_ALERT_NEW, &spec, err, sizeof err), -EINVAL);
	json_decref(o);

	rvt_receiver_write_secret(f->dir, SECRET);
	snprintf(secret, sizeof secret, "%s/webhook.secret", f->dir);
	wc.secret_file = secret;
	rvt_receiver_start(&rv, SECRET, 0);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", rv.port);
	above = add_rule(f->db, "{\"name\":\"syn janks\",\"metric\":\"jank_rate\",\"app\":"
				"\"syn\",\"condition\":\"above\",\"threshold\":0.25,\"days\":2}");
	up = add_rule(f->db, "{\"name\":\"syn jank up\",\"metric\":\"jank_rate\",\"app\":"
			     "\"syn\",\"condition\":\"up\",\"threshold\":50}");
	for (int day = FIRST; day < DAYS; day++) {
		struct rvs_alert_pass_stats ps;
		int was_above = is_firing(f->db, above), was_up = is_firing(f->db, up);

		assert_int_equal(
			rvs_alerts_pass(f->db, noon(day), "https://rv.example", urls, 1, &ps), 0);
		assert_int_equal(ps.rules, 2);
		assert_int_equal(ps.errors, 0);
		assert_int_equal(ps.decided, 2);
		assert_int_equal(rvs_webhook_deliver_due(f->db, &wc, NULL), 0);
		if (!was_above && is_firing(f->db, above))
			fired_above = day;
		if (!was_up && is_firing(f->db, up))
			fired_up = day;
		assert_false(was_above && !is_firing(f->db, above));
		assert_false(was_up && !is_firing(f->db, up));
	}
	assert_int_equal(fired_above, 22);
	assert_int_equal(fired_up, 24);

	pthread_mutex_lock(&rv.mu);
	assert_int_equal(rv.requests, 2);
	assert_int_equal(rv.good_sigs, 2);
	b = json_loads(rv.bodies[0], 0, NULL);
	assert_non_null(b);
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "rule"), "name")),
			    "syn janks");
	assert_true(fabs(json_real_value(json_object_get(b, "value")) - 100.0 * 20 / 7000) < 1e-9);
	assert_string_equal(json_string_value(json_object_get(b, "unit")), "% of frames late");
	assert_string_equal(json_string_value(json_object_get(b, "day")), "2023-09-22");
	assert_string_equal(json_string_value(json_object_get(b, "link")),
			    "https://rv.example/fleet");
	json_decref(b);
	b = json_loads(rv.bodies[1], 0, NULL);
	assert_non_null(b);
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "rule"), "name")),
			    "syn jank up");
	assert_true(fabs(json_real_value(json_object_get(b, "value")) - (110.0 / 70 - 1) * 100) <
		    1e-9);
	assert_true(fabs(json_real_value(json_object_get(b, "current")) - 100.0 * 110 / 49000) <
		    1e-12);
	assert_true(fabs(json_real_value(json_object_get(b, "previous")) - 100.0 * 70 / 49000) <
		    1e-12);
	assert_string_equal(json_string_value(json_object_get(b, "unit")), "%");
	json_decref(b);
	pthread_mutex_unlock(&rv.mu);
	rvt_receiver_stop(&rv);
}

/* App "w"'s captures (the header's weighted fixture) on days 20..22, and
 * on day 22 one more whose weight is a first-N quota's estimate. */
static char *weighted_sql(int pg)
{
	size_t len = 0, room = 1 << 16;
	char *sql = malloc(room);

	assert_non_null(sql);
#define ADD(...) \
	(len += (size_t)snprintf(sql + len, room - len, __VA_ARGS__), assert_true(len < room))
	ADD(pg ? "SET session_replication_role = replica; BEGIN;"
	       : "PRAGMA foreign_keys=OFF; BEGIN;");
	for (int i = 20; i <= 22; i++)
		for (int j = 0; j < (i == 22 ? 11 : 10); j++) {
			long long day = BASE_DAY + i;
			long long received = day * 86400 + 7200 + j;
			/* j 0, 1: the 10 % campaign; 2..9 every capture; 10 a quota's. */
			int tenth = j < 2, quota = j == 10;
			long long ns = tenth ? 8000000LL + j * 1000 : 1000000LL + (j - 2) * 1000;
			ADD("INSERT INTO uploads (trace_id, device_id, upload_id, received_at, "
			    "app_id,"
			    " model, campaign_id, state, sel_kind, sel_p, weight, weight_exact)"
			    " VALUES ('w-%02d-%02d', 'd-w', 'u-%02d-%02d', %lld, 'w', 'm', '%s',"
			    " 'decoded', %d, %s, %s, %d);",
			    i, j, i, j, received, tenth ? "tenth" : "all", quota ? 2 : 1,
			    tenth ? "0.1" : "1",
			    tenth   ? "10"
			    : quota ? "3"
				    : "1",
			    !quota);
			ADD("INSERT INTO traces (trace_id, app_id, app_version, model, "
			    "captured_at_ns,"
			    " received_at, duration_ns, decoded_at) VALUES ('w-%02d-%02d', 'w', "
			    "'1.0',"
			    " 'm', %lld, %lld, 10000000, 0);",
			    i, j, (day * 86400 + 3600 + j) * 1000000000LL, received);
			ADD("INSERT INTO trace_methods (trace_id, method, calls, self_ns, "
			    "incl_ns%s)"
			    " VALUES ('w-%02d-%02d', 'paint', 1, %lld, %lld",
			    pg ? ", received_at" : "", i, j, ns, ns);
			if (pg)
				ADD(", %lld", received);
			ADD(");");
		}
	ADD("COMMIT;");
#undef ADD
	return sql;
}

/* Stores spec text as it is (a rule stored before a field existed). */
static int64_t add_raw_rule(const char *db, const char *name, const char *spec)
{
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *d;
	int64_t id = 0;

	assert_int_equal(rvs_store_regress_open(db, &ops, &st, &d), 0);
	assert_int_equal(
		ops->alert_rule_add(d,
				    &(struct rvs_alert_rule_row){.name = name,
								 .spec = spec,
								 .created_by = "test",
								 .created_at = noon(FIRST)},
				    RVS_ALERT_RULES_MAX, &id),
		0);
	rvs_store_regress_close(ops, st, d);
	return id;
}

/* The body of rule id's last delivery (the caller frees it). */
static json_t *last_body(const char *db, int64_t id)
{
	char sql[160], *text;
	json_t *b;

	snprintf(sql, sizeof sql,
		 "SELECT w.body FROM alert_rules r JOIN webhook_deliveries w ON"
		 " w.id = r.last_delivery_id WHERE r.id = %lld",
		 (long long)id);
	text = rvt_db_text(db, sql, NULL);
	assert_non_null(text);
	b = json_loads(text, 0, NULL);
	assert_non_null(b);
	free(text);
	return b;
}

/* Weighted and unweighted rules on the same captures decide apart, as
 * the header works out; the alert carries both values. */
static void test_alerts_weighted_rules_decide_on_weighted_figures(void **state)
{
	struct fx *f = *state;
	const char *urls[1] = {"http://127.0.0.1:9/none"};
	struct rvs_alert_pass_stats ps;
	struct rvs_alert_spec spec;
	struct rvs_alert_eval e;
	struct rvs_regress_db *d;
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	int64_t above_w, above_u, below_w, below_u, cap_w, cap_u, legacy;
	char *sql = weighted_sql(rvt_store_is_pg()), err[200];
	json_t *b, *o;

	assert_int_equal(rvt_db_exec(f->db, sql), 0);
	free(sql);
	above_w =
		add_rule(f->db, "{\"name\":\"paint slow\",\"metric\":\"self_p50\",\"method\":"
				"\"paint\",\"app\":\"w\",\"condition\":\"above\",\"threshold\":4}");
	above_u = add_rule(f->db, "{\"name\":\"paint slow, as sampled\",\"metric\":\"self_p50\","
				  "\"method\":\"paint\",\"app\":\"w\",\"condition\":\"above\","
				  "\"threshold\":4,\"weighted\":false}");
	below_w =
		add_rule(f->db, "{\"name\":\"paint fast\",\"metric\":\"self_p50\",\"method\":"
				"\"paint\",\"app\":\"w\",\"condition\":\"below\",\"threshold\":4}");
	below_u = add_rule(f->db, "{\"name\":\"paint fast, as sampled\",\"metric\":\"self_p50\","
				  "\"method\":\"paint\",\"app\":\"w\",\"condition\":\"below\","
				  "\"threshold\":4,\"weighted\":false}");
	cap_w = add_rule(f->db, "{\"name\":\"w busy\",\"metric\":\"captures\",\"app\":\"w\","
				"\"condition\":\"above\",\"threshold\":20}");
	cap_u = add_rule(f->db,
			 "{\"name\":\"w busy, as sampled\",\"metric\":\"captures\",\"app\":"
			 "\"w\",\"condition\":\"above\",\"threshold\":20,\"weighted\":false}");
	legacy = add_raw_rule(f->db, "paint slow, old",
			      "{\"condition\":\"above\",\"days\":2,\"method\":\"paint\",\"app\":"
			      "\"w\",\"metric\":\"self_p50\",\"name\":\"paint slow, old\","
			      "\"threshold\":4}");

	assert_int_equal(rvs_alerts_pass(f->db, noon(21), "https://rv.example", urls, 1, &ps), 0);
	assert_int_equal(ps.rules, 7);
	assert_int_equal(ps.errors, 0);
	assert_int_equal(ps.decided, 7);
	assert_true(is_firing(f->db, above_w));
	assert_false(is_firing(f->db, above_u));
	assert_false(is_firing(f->db, below_w));
	assert_true(is_firing(f->db, below_u));
	assert_true(is_firing(f->db, cap_w));
	assert_false(is_firing(f->db, cap_u));
	assert_false(is_firing(f->db, legacy));

	/* The weighted alert: 8.000 ms, the unweighted 1.004 ms beside it,
	 * exact (every weight a campaign's sampling). */
	b = last_body(f->db, above_w);
	assert_true(json_is_true(json_object_get(b, "weighted")));
	assert_true(fabs(json_real_value(json_object_get(b, "value")) - 8.0) < 1e-9);
	assert_true(fabs(json_real_value(json_object_get(b, "value_unweighted")) - 1.004) < 1e-9);
	assert_true(json_is_true(json_object_get(b, "exact")));
	assert_true(json_is_null(json_object_get(b, "note")));
	json_decref(b);
	b = last_body(f->db, below_u);
	assert_true(json_is_false(json_object_get(b, "weighted")));
	assert_true(fabs(json_real_value(json_object_get(b, "value")) - 1.004) < 1e-9);
	assert_true(fabs(json_real_value(json_object_get(b, "value_unweighted")) - 1.004) < 1e-9);
	json_decref(b);
	/* Captures weighted: 2 × 10 + 8 × 1 = 28 a day, 10 as sampled. */
	b = last_body(f->db, cap_w);
	assert_true(fabs(json_real_value(json_object_get(b, "value")) - 28) < 1e-9);
	assert_true(json_real_value(json_object_get(b, "value_unweighted")) == 10);
	assert_true(json_is_true(json_object_get(b, "exact")));
	json_decref(b);

	/* The listing says the old rule is unweighted. */
	assert_int_equal(rvs_alert_rules_json(f->db, &o), 0);
	for (size_t i = 0; i < json_array_size(o); i++) {
		json_t *r = json_array_get(o, i);
		int64_t id = json_integer_value(json_object_get(r, "id"));
		assert_true(json_is_boolean(json_object_get(r, "weighted")));
		assert_int_equal(json_is_true(json_object_get(r, "weighted")),
				 id == above_w || id == below_w || id == cap_w);
	}
	json_decref(o);

	/* Day 22 adds a capture whose weight (3) is a quota's estimate: the
	 * weighted figures say so. */
	o = json_loads("{\"name\":\"n\",\"metric\":\"captures\",\"app\":\"w\",\"condition\":"
		       "\"above\",\"threshold\":20,\"days\":1}",
		       0, NULL);
	assert_int_equal(rvs_alert_spec_parse(o, RVS_ALERT_NEW, &spec, err, sizeof err), 0);
	json_decref(o);
	assert_int_equal(rvs_store_regress_open(f->db, &ops, &st, &d), 0);
	assert_int_equal(rvs_alert_evaluate(ops, st, d, &spec, noon(22), &e), 0);
	assert_true(e.firing);
	assert_true(fabs(e.value - 31) < 1e-9);
	assert_true(e.value_unweighted == 11);
	assert_int_equal(e.n_estimated, 1);
	assert_int_equal(e.n_unknown, 0);
	rvs_store_regress_close(ops, st, d);
}

/* Two passes at once on the day a rule moves: one move, one delivery. */
struct pass_arg {
	const char *db, *url;
	int rc;
};

static void *pass_thread(void *p)
{
	struct pass_arg *a = p;
	const char *urls[1] = {a->url};
	a->rc = rvs_alerts_pass(a->db, noon(17), "https://rv.example", urls, 1, NULL);
	return NULL;
}

static void test_alerts_concurrent_passes_queue_one_alert(void **state)
{
	struct fx *f = *state;
	struct pass_arg a[4];
	pthread_t th[4];

	add_rule(f->db, "{\"name\":\"render slow\",\"metric\":\"self_p95\",\"method\":\"render\","
			"\"app\":\"syn\",\"condition\":\"above\",\"threshold\":4}");
	for (int i = 0; i < 4; i++) {
		a[i] = (struct pass_arg){.db = f->db, .url = "http://127.0.0.1:9/none"};
		assert_int_equal(pthread_create(&th[i], NULL, pass_thread, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(a[i].rc, 0);
	}
	assert_int_equal(rvt_db_int(f->db, "SELECT count(*) FROM webhook_deliveries", NULL), 1);
	assert_int_equal(rvt_db_int(f->db,
				    "SELECT count(*) FROM alert_rules WHERE state ="
				    " 'firing'",
				    NULL),
			 1);
}

/* Bounded: no rule past RVS_ALERT_RULES_MAX; a deleted rule is gone. */
static void test_alerts_rules_capped_and_deleted(void **state)
{
	struct fx *f = *state;
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *d;
	int64_t id = 0, first = 0;
	struct rvs_alert_rule_row r = {
		.name = "n", .spec = "{}", .created_by = "t", .created_at = 1};

	assert_int_equal(rvs_store_regress_open(f->db, &ops, &st, &d), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ops->alert_rule_add(d, &r, 3, &id), 0);
		if (!first)
			first = id;
	}
	assert_int_equal(ops->alert_rule_add(d, &r, 3, &id), -ENOSPC);
	assert_int_equal(ops->alert_rule_delete(d, first), 0);
	assert_int_equal(ops->alert_rule_delete(d, first), -ENOENT);
	assert_int_equal(ops->alert_rule_add(d, &r, 3, &id), 0);
	rvs_store_regress_close(ops, st, d);
	assert_int_equal(rvt_db_int(f->db, "SELECT count(*) FROM alert_rules", NULL), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alerts_spec_refuses_what_is_not_a_rule),
		cmocka_unit_test_setup_teardown(
			test_alerts_planted_shift_fires_on_its_day_once_and_resolves_once, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_alerts_jank_rate_fires_on_its_day_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_alerts_weighted_rules_decide_on_weighted_figures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alerts_concurrent_passes_queue_one_alert,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_alerts_rules_capped_and_deleted, setup,
						teardown),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests_name("alerts", tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
