/*
 * test_regress.c — "what got slower?" (regress.h, webhook.h): the
 * statistics against hand-computed references, the comparison over a
 * synthetic sqlite index, the automatic comparison's alert delivered to a
 * real HTTP receiver this test runs on an ephemeral port (its signature
 * checked with the secret, its first attempts refused to see the
 * retries), and issue 16's fixture: real librvtrace captures of three
 * versions on four models uploaded to the real server, where the planted
 * regression must come first without the test naming it, and its webhook
 * must arrive.  Waits are bounded polls; nothing asserts on timing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <mbedtls/md.h>
#include <sqlite3.h>

#include "fleet_fixture.h"
#include "rearview/upload.pb-c.h"
#include "regress.h"
#include "version.h"
#include "rvs.h"
#include "server_common.h"
#include "store.h"
#include "test_web_server.h"
#include "webhook.h"
#include "store_cases.h"

static const char SECRET[] = "test-webhook-secret";

/* ---- statistics ------------------------------------------------------------ */

/* R: wilcox.test(c(0,0,1,3), c(1,2,4,5,6), exact=FALSE, correct=TRUE):
 * W = 2.5, p = 0.08379; the zeros here are implicit (no row). */
static void test_regress_mwu_with_ties_and_implicit_zeros_matches_reference(void **state)
{
	double a[] = {3, 1}, b[] = {6, 1, 5, 2, 4};
	struct rvs_mwu t;

	assert_int_equal(rvs_mwu_test(a, 2, 4, b, 5, 5, &t), 0);
	assert_true(fabs(t.u_b - 17.5) < 1e-9);
	assert_true(fabs(t.delta - 0.75) < 1e-9);
	assert_true(fabs(t.z - 1.7291126361) < 1e-6);
	assert_true(fabs(t.p - 0.0837889380) < 1e-6);
	assert_false(t.exact); /* ties */
	/* The same data with the zeros stored gives the same test. */
	double a2[] = {0, 3, 0, 1}, b2[] = {6, 1, 5, 2, 4};
	struct rvs_mwu t2;
	assert_int_equal(rvs_mwu_test(a2, 4, 4, b2, 5, 5, &t2), 0);
	assert_true(fabs(t2.p - t.p) < 1e-12 && fabs(t2.u_b - t.u_b) < 1e-12);
	assert_true(fabs(rvs_median_sparse(a, 2, 4) - 0.5) < 1e-12);
	assert_true(fabs(rvs_median_sparse(b, 5, 5) - 4) < 1e-12);
}

/* R: wilcox.test(c(1,2,3), c(4,5,6)): exact, p = 0.1 (2 of the 20 rank
 * choices are as extreme); wilcox.test(c(1,3,5,7), c(2,4,6,8,9)): W = 6,
 * p = 0.4127 (exact: 2 × 26 of the 126 rank choices). */
static void test_regress_mwu_small_samples_without_ties_are_exact(void **state)
{
	double a[] = {3, 1, 2}, b[] = {6, 4, 5}, c[] = {7, 1, 5, 3}, d[] = {2, 9, 4, 8, 6};
	struct rvs_mwu t;

	assert_int_equal(rvs_mwu_test(a, 3, 3, b, 3, 3, &t), 0);
	assert_true(t.exact);
	assert_true(fabs(t.p - 0.1) < 1e-12);
	assert_true(fabs(t.delta - 1) < 1e-12);
	assert_int_equal(rvs_mwu_test(c, 4, 4, d, 5, 5, &t), 0);
	assert_true(t.exact);
	assert_true(fabs(t.u_b - 14) < 1e-12);
	assert_true(fabs(t.p - 52.0 / 126) < 1e-12);
}

static void test_regress_mwu_all_tied_gives_p_1(void **state)
{
	double a[] = {5, 5}, b[] = {5};
	struct rvs_mwu t;
	assert_int_equal(rvs_mwu_test(a, 2, 2, b, 1, 1, &t), 0);
	assert_true(t.p == 1 && t.delta == 0);
	assert_int_equal(rvs_mwu_test(a, 2, 2, b, 0, 0, &t), -EINVAL);
}

static void test_regress_bh_matches_reference(void **state)
{
	const double p[] = {0.01, 0.04, 0.03, 0.005}, want[] = {0.02, 0.04, 0.04, 0.02};
	double q[4];
	assert_int_equal(rvs_bh_adjust(p, 4, q), 0);
	for (int i = 0; i < 4; i++)
		assert_true(fabs(q[i] - want[i]) < 1e-12);
}

static void test_regress_versions_sort_as_versions(void **state)
{
	assert_true(rvs_version_cmp("4.10", "4.9") > 0);
	assert_true(rvs_version_cmp("4.9", "4.10") < 0);
	assert_true(rvs_version_cmp("4.2", "4.3") < 0);
	assert_true(rvs_version_cmp("1.02", "1.2") == 0);
	assert_true(rvs_version_cmp("1.2-rc1", "1.2-rc2") < 0);
	assert_true(rvs_version_cmp("1.2", "1.2.1") < 0);
	assert_true(rvs_webhook_backoff_ms(100, 1, 0) == 50);
	assert_true(rvs_webhook_backoff_ms(100, 3, 0.999) <= 400);
	assert_true(rvs_webhook_backoff_ms(100, 3, 0) == 200);
	assert_true(rvs_webhook_backoff_ms(100, 60, 0.5) <= 3600000);
}

/* ---- a synthetic index --------------------------------------------------- */

static char g_tmp[64];

/* A migrated database at dir/rearview.db with n traces per version of
 * app "syn": methods "steady" (same in all versions), "slowed" (4× in
 * 2.0), "rare" (only in some traces). */
static void make_db_in(const char *dir, char *path, size_t cap, int n)
{
	struct rvs_store *s;
	sqlite3 *db;
	sqlite3_stmt *t, *m;
	static const char *const versions[] = {"1.9", "1.10", "2.0"};

	snprintf(path, cap, "%s/rearview.db", dir);
	assert_int_equal(rvs_store_sqlite.open(path, &s), 0);
	rvs_store_sqlite.close(s);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA foreign_keys=OFF; BEGIN", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "INSERT INTO traces (trace_id, app_id, app_version,"
					    " model, received_at, duration_ns, decoded_at) VALUES"
					    " (?1, 'syn', ?2, ?3, strftime('%s','now'), 1000, 0)",
					    -1, &t, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "INSERT INTO trace_methods (trace_id, method, calls,"
					    " self_ns, incl_ns) VALUES (?1, ?2, 1, ?3, ?4)",
					    -1, &m, NULL),
			 SQLITE_OK);
	for (int v = 0; v < 3; v++)
		for (int i = 0; i < n; i++) {
			char id[40];
			long noise = (long)((i * 7919) % 97);
			long slowed = (v == 2 ? 4 : 1) * (10000 + noise * 10);
			snprintf(id, sizeof id, "t-%d-%03d", v, i);
			sqlite3_bind_text(t, 1, id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(t, 2, versions[v], -1, SQLITE_STATIC);
			sqlite3_bind_text(t, 3, i % 2 ? "m-odd" : "m-even", -1, SQLITE_STATIC);
			assert_int_equal(sqlite3_step(t), SQLITE_DONE);
			sqlite3_reset(t);
			struct {
				const char *name;
				long self;
			} rows[] = {{"steady", 20000 + ((i * 31) % 89) * 10},
				    {"slowed", slowed},
				    {"rare", 5000}};
			for (int k = 0; k < 3; k++) {
				if (k == 2 && i % 3)
					continue;
				sqlite3_bind_text(m, 1, id, -1, SQLITE_TRANSIENT);
				sqlite3_bind_text(m, 2, rows[k].name, -1, SQLITE_STATIC);
				sqlite3_bind_int64(m, 3, rows[k].self);
				sqlite3_bind_int64(m, 4, rows[k].self + 100);
				assert_int_equal(sqlite3_step(m), SQLITE_DONE);
				sqlite3_reset(m);
			}
		}
	sqlite3_finalize(t);
	sqlite3_finalize(m);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static void make_db(char *path, size_t cap, int n)
{
	make_db_in(g_tmp, path, cap, n);
}

static int setup(void **state)
{
	snprintf(g_tmp, sizeof g_tmp, "/tmp/rvs-regress-XXXXXX");
	return mkdtemp(g_tmp) ? 0 : -1;
}

/* The servers of the tests that start one, stopped by teardown on a failure. */
static struct rvsb g_b;
static struct web_server g_ws;

static int teardown(void **state)
{
	char cmd[128];
	if (g_b.pid > 0)
		rvsb_stop(&g_b);
	memset(&g_b, 0, sizeof g_b);
	if (g_ws.pid > 0)
		web_server_stop(&g_ws);
	memset(&g_ws, 0, sizeof g_ws);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_regress_run_puts_planted_method_first_with_counts(void **state)
{
	char path[128];
	sqlite3 *db;
	json_t *doc, *top, *row;
	size_t i;
	struct rvs_regress_req q = {
		.app = "syn", .mode = RVS_REGRESS_VERSIONS, .a = "1.10", .b = "2.0", .limit = 50};

	make_db(path, sizeof path, 30);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(rvs_regress_run(db, &q, &doc), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "a"), "traces")),
			 30);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "b"), "traces")),
			 30);
	assert_int_equal(json_integer_value(json_object_get(doc, "methods_tested")), 3);
	top = json_array_get(json_object_get(doc, "methods"), 0);
	assert_string_equal(json_string_value(json_object_get(top, "method")), "slowed");
	assert_true(json_real_value(json_object_get(json_object_get(top, "self"), "q")) < 1e-6);
	assert_true(fabs(json_real_value(
				 json_object_get(json_object_get(top, "self"), "median_ratio")) -
			 4) < 0.01);
	assert_true(json_is_true(json_object_get(top, "significant")));
	assert_int_equal(json_array_size(json_object_get(top, "slowest_b")), 3);
	/* The rare method: present in 10 of 30 traces per side, the others
	 * count as 0 — its median is 0 on both sides, and it is not flagged. */
	json_array_foreach(json_object_get(doc, "methods"), i, row)
	{
		if (strcmp(json_string_value(json_object_get(row, "method")), "rare"))
			continue;
		assert_int_equal(json_integer_value(json_object_get(row, "traces_a")), 10);
		assert_true(json_real_value(json_object_get(json_object_get(row, "self"),
							    "median_a_ns")) == 0);
		assert_false(json_is_true(json_object_get(row, "significant")));
	}
	json_decref(doc);
	/* One model against the others: nothing differs, nothing significant. */
	q.mode = RVS_REGRESS_MODEL;
	q.model = "m-odd";
	q.version = "2.0";
	assert_int_equal(rvs_regress_run(db, &q, &doc), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "b"), "traces")),
			 15);
	top = json_array_get(json_object_get(doc, "methods"), 0);
	assert_false(json_is_true(json_object_get(top, "significant")));
	json_decref(doc);
	/* A side without traces. */
	q.mode = RVS_REGRESS_VERSIONS;
	q.a = "0.1";
	assert_int_equal(rvs_regress_run(db, &q, &doc), -ENOENT);
	json_decref(doc);
	sqlite3_close(db);
}

/* ---- a webhook receiver ------------------------------------------------- */

struct receiver {
	int fd, port;
	int fail_first; /* answer 500 to this many requests */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int requests, good_sigs;
	char body[8192];
};

/* Reads one request: headers, then Content-Length bytes of body. */
static int read_request(int c, char *buf, size_t cap, char **body, size_t *blen)
{
	size_t n = 0;
	char *end = NULL;
	long want = -1;

	while (n + 1 < cap) {
		ssize_t r = read(c, buf + n, cap - 1 - n);
		if (r <= 0)
			return -1;
		n += (size_t)r;
		buf[n] = '\0';
		if (!end && (end = strstr(buf, "\r\n\r\n"))) {
			char *cl = strcasestr(buf, "\r\nContent-Length:");
			want = cl ? strtol(cl + 17, NULL, 10) : 0;
		}
		if (end && (long)(n - (size_t)(end + 4 - buf)) >= want) {
			*body = end + 4;
			*blen = (size_t)want;
			return 0;
		}
	}
	return -1;
}

static void *serve(void *arg)
{
	struct receiver *rv = arg;
	static char buf[65536];

	for (;;) {
		int c = accept(rv->fd, NULL, NULL);
		char *body, *sig, hex[65];
		size_t blen;
		uint8_t mac[32];
		int good = 0, fail;
		if (c < 0)
			return NULL;
		if (read_request(c, buf, sizeof buf, &body, &blen)) {
			close(c);
			continue;
		}
		sig = strcasestr(buf, "\r\n" RVS_WEBHOOK_SIG_HEADER ": sha256=");
		if (sig && mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256),
					   (const uint8_t *)SECRET, strlen(SECRET),
					   (const uint8_t *)body, blen, mac) == 0) {
			for (int i = 0; i < 32; i++)
				snprintf(hex + 2 * i, 3, "%02x", mac[i]);
			good = strncmp(sig + strlen("\r\n" RVS_WEBHOOK_SIG_HEADER ": sha256="), hex,
				       64) == 0;
		}
		pthread_mutex_lock(&rv->mu);
		fail = rv->requests < rv->fail_first;
		rv->requests++;
		rv->good_sigs += good;
		if (!fail)
			snprintf(rv->body, sizeof rv->body, "%.*s", (int)blen, body);
		pthread_cond_broadcast(&rv->cv);
		pthread_mutex_unlock(&rv->mu);
		dprintf(c, "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
			fail ? "500 Internal Server Error" : "200 OK");
		close(c);
	}
}

static void receiver_start(struct receiver *rv, int fail_first)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof sa;

	memset(rv, 0, sizeof *rv);
	rv->fail_first = fail_first;
	pthread_mutex_init(&rv->mu, NULL);
	pthread_cond_init(&rv->cv, NULL);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rv->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(rv->fd >= 0);
	assert_int_equal(bind(rv->fd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(rv->fd, 16), 0);
	assert_int_equal(getsockname(rv->fd, (struct sockaddr *)&sa, &sl), 0);
	rv->port = ntohs(sa.sin_port);
	assert_int_equal(pthread_create(&rv->th, NULL, serve, rv), 0);
}

static void receiver_stop(struct receiver *rv)
{
	shutdown(rv->fd, SHUT_RDWR);
	close(rv->fd);
	pthread_join(rv->th, NULL);
}

/* Waits (a minute at most) until the receiver accepted a request with a
 * good signature; 1 when it did. */
static int wait_delivered(struct receiver *rv)
{
	struct timespec until;
	int ok;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	pthread_mutex_lock(&rv->mu);
	while (!(rv->requests > rv->fail_first && rv->body[0]) &&
	       pthread_cond_timedwait(&rv->cv, &rv->mu, &until) == 0)
		;
	ok = rv->requests > rv->fail_first && rv->body[0];
	pthread_mutex_unlock(&rv->mu);
	return ok;
}

static void write_secret(const char *dir)
{
	char path[256];
	FILE *f;
	snprintf(path, sizeof path, "%s/webhook.secret", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", SECRET);
	fclose(f);
}

static int64_t db_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t v = -1;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void test_regress_auto_pass_alerts_once_and_webhook_retries_until_delivered(void **state)
{
	char path[128], url[96], secret[160];
	struct receiver rv;
	const char *urls[1] = {url};
	struct rvs_regress_auto ac = {
		.min_traces = 20, .margin = 0.25, .alert_ratio = 1.5, .alert_q = 0.01};
	struct rvs_webhook_cfg wc = {
		.secret_file = secret, .max_attempts = 8, .backoff_ms = 20, .timeout_ms = 10000};
	unsigned compared = 0, delivered = 0;
	json_t *body;

	make_db(path, sizeof path, 30);
	write_secret(g_tmp);
	snprintf(secret, sizeof secret, "%s/webhook.secret", g_tmp);
	receiver_start(&rv, 2);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", rv.port);
	assert_int_equal(rvs_regress_auto_pass(path, &ac, urls, 1, &compared), 0);
	/* 1.9 → 1.10 (nothing) and 1.10 → 2.0 (slowed): versions sort as
	 * versions, so 1.10 comes after 1.9 and before 2.0. */
	assert_int_equal(compared, 2);
	assert_int_equal(db_int(path, "SELECT count(*) FROM regress_runs WHERE alerted = 1 AND"
				      " version_a = '1.10' AND version_b = '2.0'"
				      " AND top_method = 'slowed'"),
			 1);
	assert_int_equal(db_int(path, "SELECT count(*) FROM webhook_deliveries"), 1);
	/* Idempotent: nothing changed, nothing is compared or queued again. */
	assert_int_equal(rvs_regress_auto_pass(path, &ac, urls, 1, &compared), 0);
	assert_int_equal(compared, 0);
	assert_int_equal(db_int(path, "SELECT count(*) FROM webhook_deliveries"), 1);
	/* The first attempt fails (500): the state says so durably. */
	assert_int_equal(rvs_webhook_deliver_due(path, &wc, &delivered), 0);
	assert_int_equal(delivered, 0);
	assert_int_equal(db_int(path, "SELECT count(*) FROM webhook_deliveries WHERE"
				      " state = 'pending' AND attempts = 1 AND last_status = 500"
				      " AND last_error = 'HTTP 500'"),
			 1);
	/* Retried when due until delivered (a minute at most). */
	for (int i = 0; i < 6000 && db_int(path, "SELECT count(*) FROM webhook_deliveries"
						 " WHERE state = 'delivered'") != 1;
	     i++) {
		assert_int_equal(rvs_webhook_deliver_due(path, &wc, NULL), 0);
		usleep(10000);
	}
	assert_true(wait_delivered(&rv));
	assert_int_equal(db_int(path, "SELECT attempts FROM webhook_deliveries"), 3);
	pthread_mutex_lock(&rv.mu);
	assert_int_equal(rv.requests, 3);
	assert_int_equal(rv.good_sigs, 3);
	body = json_loads(rv.body, 0, NULL);
	pthread_mutex_unlock(&rv.mu);
	assert_non_null(body);
	assert_string_equal(json_string_value(json_object_get(body, "method")), "slowed");
	assert_string_equal(json_string_value(json_object_get(body, "version_b")), "2.0");
	json_decref(body);
	receiver_stop(&rv);
}

static void
test_regress_webhook_without_secret_sends_nothing_and_gives_up_after_max_attempts(void **state)
{
	char path[128], url[96], secret[160];
	struct receiver rv;
	struct rvs_webhook_cfg wc = {
		.secret_file = secret, .max_attempts = 2, .backoff_ms = 10, .timeout_ms = 10000};
	sqlite3 *db;
	int64_t failed = 0;

	make_db(path, sizeof path, 1);
	receiver_start(&rv, 1000);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", rv.port);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(rvs_webhook_enqueue(db, url, "test", "{\"x\":1}", 0), 0);
	sqlite3_close(db);
	/* No secret file: nothing is sent, the row stays pending untouched. */
	snprintf(secret, sizeof secret, "%s/absent.secret", g_tmp);
	assert_int_equal(rvs_webhook_deliver_due(path, &wc, NULL), -ENOKEY);
	assert_int_equal(db_int(path, "SELECT count(*) FROM webhook_deliveries WHERE"
				      " state = 'pending' AND attempts = 0"),
			 1);
	write_secret(g_tmp);
	snprintf(secret, sizeof secret, "%s/webhook.secret", g_tmp);
	/* A receiver that always refuses: failed after max_attempts (bounded). */
	for (int i = 0; i < 6000 && !failed; i++) {
		assert_int_equal(rvs_webhook_deliver_due(path, &wc, NULL), 0);
		failed = db_int(path,
				"SELECT count(*) FROM webhook_deliveries WHERE state = 'failed'");
		usleep(5000);
	}
	assert_int_equal(failed, 1);
	assert_int_equal(db_int(path, "SELECT attempts FROM webhook_deliveries"), 2);
	pthread_mutex_lock(&rv.mu);
	assert_int_equal(rv.requests, 2);
	assert_int_equal(rv.good_sigs, 2);
	pthread_mutex_unlock(&rv.mu);
	/* A failed row is never tried again. */
	assert_int_equal(rvs_webhook_deliver_due(path, &wc, NULL), 0);
	pthread_mutex_lock(&rv.mu);
	assert_int_equal(rv.requests, 2);
	pthread_mutex_unlock(&rv.mu);
	receiver_stop(&rv);
}

struct resp {
	long code;
	char body[1 << 18];
	size_t len;
};

static size_t grab(char *p, size_t sz, size_t n, void *u)
{
	struct resp *r = u;
	size_t add = sz * n;
	if (r->len + add < sizeof r->body) {
		memcpy(r->body + r->len, p, add);
		r->len += add;
		r->body[r->len] = '\0';
	}
	return add;
}

/* ---- the web page ------------------------------------------------------------ */

static int fill_synthetic(const char *data)
{
	char path[256];
	make_db_in(data, path, sizeof path, 30);
	return 0;
}

static char g_cookie[128];

static size_t session_cookie(char *p, size_t sz, size_t n, void *u)
{
	const char *k = "Set-Cookie: rv_session=";
	if (sz * n > strlen(k) + 64 && strncmp(p, k, strlen(k)) == 0)
		snprintf(g_cookie, sizeof g_cookie, "rv_session=%.64s", p + strlen(k));
	return sz * n;
}

/* GET (or POST form) on the web server; the body in a static buffer. */
static struct resp *web_request(const char *path, const char *form)
{
	static struct resp r;
	char url[512];
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();

	memset(&r, 0, sizeof r);
	snprintf(url, sizeof url, "https://127.0.0.1:%d%s", g_ws.port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, g_ws.ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, grab);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, session_cookie);
	if (form) {
		/* The login form's double-submit token: any 64 hex. */
		h = curl_slist_append(
			h, "Cookie: rv_login="
			   "00000000000000000000000000000000000000000000000000000000000000aa");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, form);
	} else {
		curl_easy_setopt(c, CURLOPT_COOKIE, g_cookie);
	}
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return &r;
}

static void test_regress_web_page_lists_the_slowed_method_first(void **state)
{
	char form[256];
	struct resp *r;
	const char *table, *slowed, *steady;

	g_cookie[0] = '\0';
	assert_int_equal(web_server_start(&g_ws, NULL, fill_synthetic), 0);
	snprintf(form, sizeof form,
		 "csrf=00000000000000000000000000000000000000000000000000000000000000aa"
		 "&user=admin&password=%s",
		 g_ws.password);
	web_request("/login", form);
	assert_true(g_cookie[0] != '\0');
	/* As the form submits it: every field, the unused ones empty. */
	r = web_request("/regressions?app=syn&a=1.10&b=2.0&model=&version=&week=", NULL);
	assert_int_equal(r->code, 200);
	assert_non_null(strstr(r->body, "What got slower?"));
	table = strstr(r->body, "regress-methods");
	assert_non_null(table);
	slowed = strstr(table, "slowed");
	steady = strstr(table, "steady");
	assert_non_null(slowed);
	assert_non_null(steady);
	assert_true(slowed < steady);
	assert_non_null(strstr(r->body, "counts as 0"));
	assert_non_null(strstr(r->body, "Alert deliveries"));
	/* A side without traces: the page says so. */
	r = web_request("/regressions?app=syn&a=0.1&b=2.0", NULL);
	assert_int_equal(r->code, 200);
	assert_non_null(strstr(r->body, "a side has no decoded trace"));
	assert_int_equal(web_server_stop(&g_ws), 0);
	g_ws.pid = 0;
}

/* ---- issue 16's fixture through the real server -------------------------- */

static struct resp *request(const struct rvsb *b, const char *method, const char *path,
			    const char *token, const uint8_t *body, size_t len)
{
	static struct resp r;
	char auth[200];
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();

	memset(&r, 0, sizeof r);
	rvsb_curl(b, c, path);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, grab);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	return &r;
}

/* Enrols a device of model and returns its token (malloc'd). */
static char *enroll(const struct rvsb *b, const char *model)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	Rearview__DeviceInfo d = REARVIEW__DEVICE_INFO__INIT;
	Rearview__EnrollResponse *er;
	uint8_t small[512];
	size_t n;
	struct resp *r;
	char *tok;

	d.model = (char *)model;
	q.enrollment_secret = (char *)b->secret;
	q.device = &d;
	n = rearview__enroll_request__pack(&q, small);
	r = request(b, "POST", "/v1/enroll", NULL, small, n);
	assert_int_equal(r->code, 200);
	er = rearview__enroll_response__unpack(NULL, r->len, (const uint8_t *)r->body);
	assert_non_null(er);
	tok = strdup(er->device_token);
	rearview__enroll_response__free_unpacked(er, NULL);
	return tok;
}

static void upload(const struct rvsb *b, const char *token, const char *model, const char *version,
		   uint8_t seed, const uint8_t *cap, size_t len)
{
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__DeviceInfo d = REARVIEW__DEVICE_INFO__INIT;
	uint8_t id[16], *body;
	size_t n;

	memset(id, seed, sizeof id);
	id[0] = (uint8_t)version[2];
	e.upload_id.data = id;
	e.upload_id.len = sizeof id;
	app.app_id = (char *)"com.example.fleet";
	app.version = (char *)version;
	d.model = (char *)model;
	e.app = &app;
	e.device = &d;
	e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
	e.payload.data = (uint8_t *)cap;
	e.payload.len = len;
	e.payload_size = len;
	n = rearview__upload_envelope__get_packed_size(&e);
	body = malloc(n);
	assert_non_null(body);
	rearview__upload_envelope__pack(&e, body);
	assert_int_equal(request(b, "POST", "/v1/uploads", token, body, n)->code, 200);
	free(body);
}

#define PER_MODEL 2
#define MODELS	  4

static void test_regress_fleet_fixture_planted_regression_first_and_webhook_delivered(void **state)
{
	static const char *const models[MODELS] = {"pixel-7", "pixel-8", "galaxy-s23", "fp5"};
	static const char *const versions[] = {"4.2", "4.3", "4.4"};
	const int n = MODELS * PER_MODEL;
	struct rvsb *b = &g_b;
	struct receiver rv;
	char conf[512], path[160];
	json_t *doc = NULL, *top, *self;
	double until;
	struct resp *r;

	receiver_start(&rv, 1);
	assert_int_equal(rvsb_init(b), 0);
	write_secret(b->data);
	snprintf(conf, sizeof conf,
		 "regress_interval_ms = 100\nregress_min_traces = %d\nregress_alert_q = 0.05\n"
		 "webhook_urls = http://127.0.0.1:%d/hook\nwebhook_backoff_ms = 50\n",
		 n, rv.port);
	assert_int_equal(rvsb_start(b, conf), 0);
	for (int v = 0; v < 3; v++)
		for (int i = 0; i < n; i++) {
			uint8_t *cap;
			size_t len;
			assert_int_equal(rvs_fleet_capture(versions[v], g_tmp, &cap, &len), 0);
			/* One device per capture (the policy's weekly quota is 3). */
			char *tok = enroll(b, models[i % MODELS]);
			upload(b, tok, models[i % MODELS], versions[v], (uint8_t)(i + 1), cap, len);
			free(tok);
			free(cap);
		}
	/* Until both sides are decoded (a minute at most). */
	until = rvsb_now() + 60;
	do {
		json_decref(doc);
		r = request(b, "GET", "/api/v1/regressions?app=com.example.fleet&a=4.2&b=4.3",
			    b->api_token, NULL, 0);
		doc = json_loads(r->body, 0, NULL);
		assert_non_null(doc);
		if (json_integer_value(json_object_get(json_object_get(doc, "a"), "traces")) == n &&
		    json_integer_value(json_object_get(json_object_get(doc, "b"), "traces")) == n)
			break;
		usleep(100000);
	} while (rvsb_now() < until);
	assert_int_equal(r->code, 200);
	top = json_array_get(json_object_get(doc, "methods"), 0);
	self = json_object_get(top, "self");
	assert_non_null(
		strstr(json_string_value(json_object_get(top, "method")), RVS_FLEET_PLANTED));
	assert_true(json_real_value(json_object_get(self, "q")) < 0.05);
	assert_true(json_real_value(json_object_get(self, "median_ratio")) > 2);
	assert_int_equal(json_integer_value(json_object_get(top, "traces_b")), n);
	assert_int_equal(json_array_size(json_object_get(top, "slowest_b")), 3);
	fprintf(stderr, "fixture: %s self median ratio %.2f, delta %.2f, q %.2g\n",
		json_string_value(json_object_get(top, "method")),
		json_real_value(json_object_get(self, "median_ratio")),
		json_real_value(json_object_get(self, "cliffs_delta")),
		json_real_value(json_object_get(self, "q")));
	json_decref(doc);
	/* The automatic comparison found it too and its alert arrived, signed,
	 * after one refused attempt. */
	assert_true(wait_delivered(&rv));
	pthread_mutex_lock(&rv.mu);
	assert_int_equal(rv.good_sigs, rv.requests);
	doc = json_loads(rv.body, 0, NULL);
	pthread_mutex_unlock(&rv.mu);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(doc, "version_a")), "4.2");
	assert_string_equal(json_string_value(json_object_get(doc, "version_b")), "4.3");
	assert_non_null(
		strstr(json_string_value(json_object_get(doc, "method")), RVS_FLEET_PLANTED));
	json_decref(doc);
	/* The delivery state is visible in the JSON API. */
	until = rvsb_now() + 60;
	do {
		r = request(b, "GET", "/api/v1/alerts", b->api_token, NULL, 0);
		if (strstr(r->body, "\"delivered\""))
			break;
		usleep(100000);
	} while (rvsb_now() < until);
	assert_non_null(strstr(r->body, "\"state\":\"delivered\""));
	assert_non_null(strstr(r->body, "\"attempts\":2"));
	/* The web form's empty fields count as absent. */
	r = request(b, "GET",
		    "/api/v1/regressions?app=com.example.fleet&a=4.2&b=4.3&model=&version=&week=",
		    b->api_token, NULL, 0);
	assert_int_equal(r->code, 200);
	r = request(b, "GET", "/api/v1/regressions?app=com.example.fleet&a=4.2&sort=x",
		    b->api_token, NULL, 0);
	assert_int_equal(r->code, 400);
	assert_non_null(strstr(r->body, "sort"));
	snprintf(path, sizeof path, "/api/v1/regressions/runs");
	r = request(b, "GET", path, b->api_token, NULL, 0);
	assert_int_equal(r->code, 200);
	assert_non_null(strstr(r->body, "\"version_b\":\"4.3\""));
	assert_int_equal(rvsb_stop(b), 0);
	b->pid = 0;
	receiver_stop(&rv);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regress_mwu_with_ties_and_implicit_zeros_matches_reference),
		cmocka_unit_test(test_regress_mwu_small_samples_without_ties_are_exact),
		cmocka_unit_test(test_regress_mwu_all_tied_gives_p_1),
		cmocka_unit_test(test_regress_bh_matches_reference),
		cmocka_unit_test(test_regress_versions_sort_as_versions),
		cmocka_unit_test_setup_teardown(
			test_regress_run_puts_planted_method_first_with_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_regress_auto_pass_alerts_once_and_webhook_retries_until_delivered,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_regress_webhook_without_secret_sends_nothing_and_gives_up_after_max_attempts,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_regress_web_page_lists_the_slowed_method_first,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_regress_fleet_fixture_planted_regression_first_and_webhook_delivered,
			setup, teardown),
	};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rvt_store_cases(tests);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
