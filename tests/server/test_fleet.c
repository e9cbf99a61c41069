/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fleet.c — issue 15's end to end: two rearview-server nodes share one
 * PostgreSQL 15 (the index and the decode queue; pg_harness.h) and one S3
 * server (npm s3rver, the capture blobs; s3_harness.h) behind haproxy (TCP,
 * round-robin, health-checked) on one address.  Devices enrol and upload
 * through haproxy — summaries and real librvtrace captures — and node A is
 * killed with SIGKILL halfway, with its decodes in flight.  A request that
 * fails is sent again with the same upload id, as rearviewd does.
 *
 * Checked in PostgreSQL at the end: every upload the fleet acknowledged is
 * stored once (by its device's upload id) and indexed once, nothing is left
 * on the decode queue or quarantined, and each acknowledgement's trace id is
 * the stored one — also for a retry answered as a duplicate.  Node B took
 * over A's leased decodes when their lease expired (`decode_lease_s`, short
 * here).  Skips visibly without PostgreSQL 15, node + s3rver, or haproxy.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <libpq-fe.h>

#include "fleet_client.h"
#include "pg_harness.h"
#include "rearview/upload.pb-c.h"
#include "s3_harness.h"
#include "test_web_server.h"

#define NDEV	 6  /* devices */
#define PER_DEV	 16 /* uploads each; every 4th carries a capture */
#define HAPROXY	 "/usr/sbin/haproxy"
#define DEADLINE 180 /* seconds, for anything the test waits on */

static struct pgh g_pg;
static struct s3h g_s3;
static char g_uri[512], g_why[512];
static struct web_server g_a, g_b;
static pid_t g_haproxy;
static int g_port; /* haproxy's */
static char g_dir[64];

struct upload {
	uint8_t id[16];
	uint8_t *body;
	size_t len;
	char trace_id[64]; /* from the acknowledgement */
	int acked, duplicate, retries;
};

struct device {
	char token[128];
	struct upload up[PER_DEV];
};

static struct device g_dev[NDEV];

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- the fleet -------------------------------------------------------------- */

/* Node B: the same keys, CA, certificate and secrets as node A (one fleet). */
static int copy_keys_from_a(const char *data)
{
	return fc_copy_keys(g_a.data, data);
}

static int start_haproxy(void)
{
	char cfg[256], log[256], body[1024];
	FILE *f;

	snprintf(g_dir, sizeof g_dir, "/tmp/rvs-fleet-XXXXXX");
	if (!mkdtemp(g_dir) || (g_port = pgh_free_port()) <= 0)
		return -1;
	snprintf(cfg, sizeof cfg, "%s/haproxy.cfg", g_dir);
	snprintf(log, sizeof log, "%s/haproxy.log", g_dir);
	snprintf(body, sizeof body,
		 "global\n    maxconn 256\n"
		 "defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 60s\n"
		 "    timeout server 60s\n    retries 3\n    option redispatch\n"
		 "frontend rv\n    bind 127.0.0.1:%d\n    default_backend nodes\n"
		 "backend nodes\n    balance roundrobin\n"
		 "    server a 127.0.0.1:%d check inter 200ms fall 1 rise 2\n"
		 "    server b 127.0.0.1:%d check inter 200ms fall 1 rise 2\n",
		 g_port, g_a.port, g_b.port);
	if (!(f = fopen(cfg, "w")) || fputs(body, f) < 0 || fclose(f) != 0)
		return -1;
	if ((g_haproxy = fork()) == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(HAPROXY, HAPROXY, "-f", cfg, "-db", (char *)NULL);
		_exit(127);
	}
	return g_haproxy > 0 ? 0 : -1;
}

static int group_setup(void **state)
{
	char conf[1024];
	int rc;

	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (access(HAPROXY, X_OK) != 0) {
		snprintf(g_why, sizeof g_why, "no haproxy (apt-get install haproxy)");
		return 0;
	}
	if ((rc = pgh_start(&g_pg)) < 0 || pgh_fresh_db(&g_pg, g_uri, sizeof g_uri) < 0) {
		snprintf(g_why, sizeof g_why, "PostgreSQL: %.300s", g_pg.why);
		return rc == -ENOENT ? 0 : -1;
	}
	if (s3h_start(&g_s3, "rv") != 1) {
		snprintf(g_why, sizeof g_why, "no node or s3rver (make installs build/s3rver)");
		return 0;
	}
	snprintf(conf, sizeof conf,
		 "database = %s\ndecode_lease_s = 3\ndecode_poll_s = 2\n"
		 "upload_rate_per_min = 100000\n"
		 "upload_burst = 100000\n"
		 "[store]\nblobs = s3://rv/fleet\ns3_endpoint = %s\ns3_access_key = S3RVER\n"
		 "s3_secret_file = %s\n",
		 g_uri, g_s3.endpoint, g_s3.secret);
	if (web_server_start(&g_a, conf, NULL) || web_server_start(&g_b, conf, copy_keys_from_a) ||
	    start_haproxy())
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	int bad = 0;
	char cmd[128];

	(void)state;
	if (g_haproxy > 0) {
		kill(g_haproxy, SIGTERM);
		waitpid(g_haproxy, NULL, 0);
	}
	if (g_a.dir[0])
		bad |= web_server_stop(&g_a);
	if (g_b.dir[0])
		bad |= web_server_stop(&g_b);
	s3h_stop(&g_s3);
	pgh_stop(&g_pg);
	if (g_dir[0]) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
		bad |= system(cmd) != 0;
	}
	curl_global_cleanup();
	return bad ? -1 : 0;
}

/* ---- a device's requests ---------------------------------------------------- */

/* POSTs body to path through haproxy: fc_post. */
static long post(const char *path, const char *token, const uint8_t *body, size_t len,
		 struct fc_buf *out)
{
	return fc_post(g_port, g_a.ca, path, token, body, len, out);
}

static void enroll(struct device *d, int i)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	uint8_t body[512];
	struct fc_buf out;
	long code = 0;

	(void)i;
	q.enrollment_secret = g_a.secret;
	size_t n = rearview__enroll_request__pack(&q, body);
	for (double until = now_s() + DEADLINE; code != 200 && now_s() < until;)
		code = post("/v1/enroll", NULL, body, n, &out);
	assert_int_equal(code, 200);
	Rearview__EnrollResponse *r = rearview__enroll_response__unpack(NULL, out.n, out.b);
	assert_non_null(r);
	snprintf(d->token, sizeof d->token, "%s", r->device_token);
	rearview__enroll_response__free_unpacked(r, NULL);
}

/* Upload j of device i: a summary, or (every 4th) a capture whose bytes are
 * made distinct by a zstd skippable frame carrying its id. */
static void make_upload(struct upload *u, int i, int j)
{
	Rearview__UploadEnvelope e = REARVIEW__UPLOAD_ENVELOPE__INIT;
	Rearview__AppInfo app = REARVIEW__APP_INFO__INIT;
	Rearview__Anomaly an = REARVIEW__ANOMALY__INIT;
	Rearview__MethodStat ms = REARVIEW__METHOD_STAT__INIT, *top[1] = {&ms};
	Rearview__Summary sum = REARVIEW__SUMMARY__INIT;
	uint8_t *payload = NULL;

	u->id[0] = 0xf1;
	u->id[1] = (uint8_t)i;
	u->id[2] = (uint8_t)j;
	e.upload_id.data = u->id;
	e.upload_id.len = sizeof u->id;
	app.app_id = (char *)"com.example.fleet";
	app.version = (char *)"1.0";
	e.app = &app;
	an.kind = REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL; /* never over the weekly quota */
	e.anomaly = &an;
	if (j % 4 == 3) {
		static const uint8_t skip[8] = {0x50, 0x2a, 0x4d, 0x18, 16, 0, 0, 0};
		size_t zlen, raw;
		const uint8_t *z = fc_capture(g_dir, &zlen, &raw);

		assert_non_null(z);

		payload = malloc(zlen + 24);
		memcpy(payload, z, zlen);
		memcpy(payload + zlen, skip, 8);
		memcpy(payload + zlen + 8, u->id, 16);
		e.payload_kind = REARVIEW__PAYLOAD_KIND__PAYLOAD_CAPTURE;
		e.compression = REARVIEW__COMPRESSION__COMPRESSION_ZSTD;
		e.payload_size = raw;
		e.payload.data = payload;
		e.payload.len = zlen + 24;
	} else {
		ms.name = (char *)"com.example.Fleet.work";
		ms.calls = 1;
		ms.self_ns = 1000 + (uint64_t)j;
		ms.inclusive_ns = 2000;
		sum.top_self = top;
		sum.n_top_self = 1;
		sum.window_ns = 1000000000;
		e.summary = &sum;
	}
	u->len = rearview__upload_envelope__get_packed_size(&e);
	u->body = malloc(u->len);
	rearview__upload_envelope__pack(&e, u->body);
	free(payload);
}

/* Sends u until the fleet acknowledges it (a failed request — connection
 * reset by the killed node, 5xx — is sent again, same upload id). */
static void send_upload(struct device *d, struct upload *u)
{
	struct fc_buf out;
	long code = 0;

	for (double until = now_s() + DEADLINE; now_s() < until; u->retries++) {
		code = post("/v1/uploads", d->token, u->body, u->len, &out);
		if (code == 200 || code == 201)
			break;
		assert_true(code == 0 || code >= 500); /* never a client error */
	}
	assert_true(code == 200 || code == 201);
	Rearview__UploadAck *a = rearview__upload_ack__unpack(NULL, out.n, out.b);
	assert_non_null(a);
	assert_int_equal(a->upload_id.len, sizeof u->id);
	assert_memory_equal(a->upload_id.data, u->id, sizeof u->id);
	snprintf(u->trace_id, sizeof u->trace_id, "%s", a->trace_id);
	u->duplicate = a->duplicate;
	u->acked = 1;
	rearview__upload_ack__free_unpacked(a, NULL);
}

/* ---- what PostgreSQL holds ---------------------------------------------------- */

static long long pg_count(PGconn *c, const char *sql, const char *arg)
{
	const char *params[1] = {arg};
	PGresult *r = PQexecParams(c, sql, arg ? 1 : 0, NULL, params, NULL, NULL, 0);
	long long n = -1;

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	else
		print_message("query failed: %s: %s\n", sql, PQerrorMessage(c));
	PQclear(r);
	return n;
}

static void test_fleet_node_killed_mid_ingest_every_ack_indexed_once(void **state)
{
	int total = NDEV * PER_DEV, sent = 0, dups = 0, retried = 0;
	long long leased = -1, queued = -1;
	PGconn *c;

	(void)state;
	if (g_why[0]) {
		print_message("skipped: %s\n", g_why);
		skip();
	}
	for (int i = 0; i < NDEV; i++)
		enroll(&g_dev[i], i);
	for (int j = 0; j < PER_DEV; j++) {
		for (int i = 0; i < NDEV; i++) {
			make_upload(&g_dev[i].up[j], i, j);
			send_upload(&g_dev[i], &g_dev[i].up[j]);
			sent++;
		}
		if (sent >= total / 2 && g_a.pid > 0) {
			/* Node A dies now: its acknowledged uploads are durable, its
			 * leased decodes stay leased until decode_lease_s. */
			PGconn *q = PQconnectdb(g_uri);

			leased =
				pg_count(q,
					 "SELECT count(*) FROM decode_queue WHERE lease IS NOT NULL"
					 " AND leased_until > now()",
					 NULL);
			queued = pg_count(q, "SELECT count(*) FROM decode_queue", NULL);
			PQfinish(q);
			kill(g_a.pid, SIGKILL);
			waitpid(g_a.pid, NULL, 0);
			g_a.pid = 0;
		}
	}
	/* A retry of an acknowledged upload is a duplicate with the same id. */
	{
		struct upload again = g_dev[0].up[0];
		send_upload(&g_dev[0], &again);
		assert_true(again.duplicate);
		assert_string_equal(again.trace_id, g_dev[0].up[0].trace_id);
	}

	assert_non_null(c = PQconnectdb(g_uri));
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	/* B decodes everything, A's expired leases included. */
	for (double until = now_s() + DEADLINE;
	     pg_count(c, "SELECT count(*) FROM decode_queue", NULL) != 0 && now_s() < until;)
		usleep(100000);
	assert_int_equal(pg_count(c, "SELECT count(*) FROM decode_queue", NULL), 0);
	assert_int_equal(pg_count(c, "SELECT count(*) FROM uploads", NULL), total);
	assert_int_equal(pg_count(c, "SELECT count(*) FROM quarantine", NULL), 0);
	assert_int_equal(pg_count(c, "SELECT count(*) FROM traces", NULL), total);
	for (int i = 0; i < NDEV; i++)
		for (int j = 0; j < PER_DEV; j++) {
			struct upload *u = &g_dev[i].up[j];

			assert_true(u->acked);
			dups += u->duplicate;
			retried += u->retries > 0;
			assert_int_equal(pg_count(c,
						  "SELECT count(*) FROM uploads WHERE trace_id = $1"
						  " AND state = 'decoded'",
						  u->trace_id),
					 1);
			assert_int_equal(pg_count(c,
						  "SELECT count(*) FROM traces WHERE trace_id = $1",
						  u->trace_id),
					 1);
			free(u->body);
		}
	print_message("fleet: %d uploads through haproxy; at the kill %lld queued for decoding, "
		      "%lld of them leased; %d retried after a failed request, %d answered as "
		      "duplicates\n",
		      total, queued, leased, retried, dups);
	PQfinish(c);
}

/* rearview_decode_wakeups_total on node n's /metrics (-1: no answer). */
static long long wakeups_of(const struct web_server *n)
{
	char url[128];
	struct fc_buf out = {.n = 0};
	long code = 0;
	long long v = -1;
	const char *at;
	CURL *c = curl_easy_init();

	snprintf(url, sizeof url, "https://127.0.0.1:%d/metrics", n->port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, g_a.ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fc_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	if (code != 200 || out.n >= sizeof out.b)
		return -1;
	out.b[out.n] = 0;
	if ((at = strstr((const char *)out.b, "\nrearview_decode_wakeups_total ")))
		v = strtoll(at + strlen("\nrearview_decode_wakeups_total "), NULL, 10);
	return v;
}

/* An upload queued by another node (this test, as store_pg.c's requeue
 * does it: one transaction, then the NOTIFY) wakes the idle node B: its
 * wake-up counter moves — only a NOTIFY moves it, never B's poll — and it
 * decodes the upload again. */
static void requeue_and_expect_wake(PGconn *c)
{
	long long before;
	PGresult *r;

	assert_true(g_b.pid > 0);
	assert_true((before = wakeups_of(&g_b)) >= 0);
	r = PQexec(c, "BEGIN;"
		      "UPDATE uploads SET state = 'pending_decode' WHERE trace_id ="
		      " (SELECT min(trace_id) FROM uploads);"
		      "INSERT INTO decode_queue (trace_id, enqueued_at)"
		      " SELECT min(trace_id), 0 FROM uploads;"
		      "COMMIT;"
		      "SELECT pg_notify('rearview_decode', '')");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	PQclear(r);
	for (double until = now_s() + DEADLINE;
	     (wakeups_of(&g_b) <= before ||
	      pg_count(c, "SELECT count(*) FROM decode_queue", NULL) != 0) &&
	     now_s() < until;)
		usleep(100000);
	assert_true(wakeups_of(&g_b) > before);
	assert_int_equal(pg_count(c, "SELECT count(*) FROM decode_queue", NULL), 0);
	assert_int_equal(pg_count(c, "SELECT count(*) FROM uploads WHERE state <> 'decoded'", NULL),
			 0);
}

static void test_fleet_idle_node_woken_by_notify(void **state)
{
	PGconn *c;

	(void)state;
	if (g_why[0]) {
		print_message("skipped: %s\n", g_why);
		skip();
	}
	assert_non_null(c = PQconnectdb(g_uri));
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	requeue_and_expect_wake(c);
	PQfinish(c);
}

/* B's listener connection killed (pg_terminate_backend): B's poll opens
 * it again, and a NOTIFY wakes B as before.  Only this test's database's
 * sessions are counted and killed: the run's cluster serves other tests'
 * servers, which listen too. */
static void test_fleet_lost_listener_is_reopened(void **state)
{
	static const char listeners[] =
		"SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN rearview_decode'"
		" AND datname = current_database() AND pid <> $1::int";
	char old[24];
	PGconn *c;

	(void)state;
	if (g_why[0]) {
		print_message("skipped: %s\n", g_why);
		skip();
	}
	assert_non_null(c = PQconnectdb(g_uri));
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	assert_int_equal(pg_count(c, listeners, "0"), 1); /* B's; A is dead */
	snprintf(old, sizeof old, "%lld",
		 pg_count(c,
			  "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN rearview_decode'"
			  " AND datname = current_database()",
			  NULL));
	assert_int_equal(pg_count(c,
				  "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
				  " WHERE query = 'LISTEN rearview_decode'"
				  " AND datname = current_database()",
				  NULL),
			 1);
	for (double until = now_s() + DEADLINE;
	     pg_count(c, listeners, old) != 1 && now_s() < until;)
		usleep(100000);
	assert_int_equal(pg_count(c, listeners, old), 1);
	requeue_and_expect_wake(c);
	PQfinish(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fleet_node_killed_mid_ingest_every_ack_indexed_once),
		cmocka_unit_test(test_fleet_idle_node_woken_by_notify),
		cmocka_unit_test(test_fleet_lost_listener_is_reopened),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
