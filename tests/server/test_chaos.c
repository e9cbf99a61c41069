/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_chaos.c — storage failures never quarantine what was acknowledged:
 * two rearview-server nodes on a private PostgreSQL 15 (pg_harness.h, never
 * the run's shared cluster: this test kills it) and a real S3 server (npm
 * s3rver, s3_harness.h), devices uploading summaries and real librvtrace
 * captures to both nodes from a thread of their own, while the main thread,
 * at points set by how many uploads were acknowledged, in turn
 *   1. kills the postmaster with SIGKILL and starts it again,
 *   2. restarts PostgreSQL with `pg_ctl restart -m fast` (lowering
 *      max_connections for step 3),
 *   3. takes every connection slot, ends the nodes' sessions, holds the
 *      slots until the devices were refused, then gives them back,
 *   4. kills s3rver with SIGKILL while decodes need blobs from it (already
 *      decoded captures queued again, as a symbols upload does), waits
 *      until a node failed to fetch one, and starts it again.
 * A second case stops PostgreSQL and expects uploads refused with 503 and
 * a Retry-After (never 500), then the same upload acknowledged and decoded
 * once PostgreSQL is back.
 * A request that fails is sent again with the same upload id, as
 * rearviewd does, to either node.  Checked in PostgreSQL once the queue is
 * empty: every acknowledged upload stored once, decoded exactly once, none
 * quarantined; the signature and aggregate counts equal the traces they
 * count (a retried index never counts twice).  Every wait is for an event,
 * with a generous deadline.  Skips visibly without PostgreSQL 15 or
 * node + s3rver.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

#define NDEV	 3
#define PER_DEV	 16 /* uploads each; every 4th carries a capture */
#define TOTAL	 (NDEV * PER_DEV)
#define DEADLINE 120 /* seconds, for anything the test waits on */
#define MAX_HOGS 200 /* connections the test may hold to fill the slots */

static struct pgh g_pg;
static struct s3h g_s3;
static char g_uri[512], g_why[512], g_dir[64];
static double g_t0; /* the setup's start */
static struct web_server g_node[2];

struct upload {
	uint8_t id[16];
	uint8_t *body;
	size_t len;
	int capture;
	char trace_id[64]; /* from the acknowledgement */
	int acked;
};

struct device {
	char token[128];
	struct upload up[PER_DEV];
};

static struct device g_dev[NDEV];

/* What the uploading thread did, read by the main thread under g_mu. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_acked, g_refused, g_done;
/* The chaos step begun (0: none yet): upload k waits for step k / STEP, so
 * that each step's uploads meet its failure. */
static int g_step;
#define STEP (TOTAL / 6)
static char g_err[256]; /* the uploading thread's failure, if any */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void nap(void)
{
	const struct timespec tick = {0, 50 * 1000 * 1000};
	nanosleep(&tick, NULL);
}

/* ---- PostgreSQL: its postmaster killed, started, restarted ------------------ */

/* Lets the uploads of step n go. */
static void begin_step(int n)
{
	pthread_mutex_lock(&g_mu);
	g_step = n;
	pthread_cond_broadcast(&g_cv);
	pthread_mutex_unlock(&g_mu);
}

static pid_t postmaster_pid(void)
{
	char path[256], buf[64];
	FILE *f;
	long pid = 0;

	snprintf(path, sizeof path, "%s/data/postmaster.pid", g_pg.dir);
	if ((f = fopen(path, "r"))) {
		if (fgets(buf, sizeof buf, f))
			pid = strtol(buf, NULL, 10);
		fclose(f);
	}
	return (pid_t)pid;
}

static int pg_answers(void)
{
	char uri[384];

	return pgh_uri(&g_pg, "postgres", uri, sizeof uri) == 0 && PQping(uri) == PQPING_OK;
}

/* pg_ctl start with pg_harness's options, again until it succeeds: after a
 * SIGKILL the old backends hold the shared memory until they notice. */
static int pg_start(void)
{
	char cmd[768];

	snprintf(cmd, sizeof cmd,
		 PGH_BIN "/pg_ctl -D %s/data -l %s/server.log -w -t 120 -o \"-p %d -k %s"
			 " -c listen_addresses=\\\"\\\" -c fsync=off\" start",
		 g_pg.dir, g_pg.dir, g_pg.port, g_pg.dir);
	for (double until = now_s() + DEADLINE; now_s() < until; nap())
		if (pgh_sh(&g_pg, cmd) == 0 && pg_answers())
			return 0;
	return -1;
}

static void pg_kill9_and_start(void)
{
	pid_t pm = postmaster_pid();

	assert_true(pm > 0);
	assert_int_equal(kill(pm, SIGKILL), 0);
	begin_step(1);
	/* Gone: its pid no longer signals (not our child: no waitpid). */
	for (double until = now_s() + DEADLINE; kill(pm, 0) == 0 && now_s() < until;)
		nap();
	assert_int_not_equal(kill(pm, 0), 0);
	assert_int_equal(pg_start(), 0);
}

static void pg_fast_restart(void)
{
	char cmd[512];

	snprintf(cmd, sizeof cmd, PGH_BIN "/pg_ctl -D %s/data -m fast -w -t 120 restart", g_pg.dir);
	begin_step(2);
	assert_int_equal(pgh_sh(&g_pg, cmd), 0);
	for (double until = now_s() + DEADLINE; !pg_answers() && now_s() < until;)
		nap();
	assert_true(pg_answers());
}

/* Connections opened until the server refuses one (all its slots taken);
 * returns how many are held in hogs (from *n on). */
static void pg_fill(PGconn **hogs, int *n)
{
	char uri[384];

	assert_int_equal(pgh_uri(&g_pg, "postgres", uri, sizeof uri), 0);
	while (*n < MAX_HOGS) {
		PGconn *c = PQconnectdb(uri);
		if (PQstatus(c) != CONNECTION_OK) {
			PQfinish(c);
			return;
		}
		hogs[(*n)++] = c;
	}
	fail_msg("the server took %d connections and never refused one", MAX_HOGS);
}

/* SELECT what (a count) of the client sessions other than hogs[0..n). */
static long long hog_count(PGconn **hogs, int n, const char *what)
{
	char pids[MAX_HOGS * 12 + 8], sql[MAX_HOGS * 12 + 256];
	size_t len = 0;
	long long v = -1;
	PGresult *r;

	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(pids + len, sizeof pids - len, "%s%d", i ? "," : "",
					PQbackendPID(hogs[i]));
	snprintf(sql, sizeof sql,
		 "SELECT %s FROM pg_stat_activity WHERE backend_type = 'client backend'"
		 " AND pid NOT IN (%s)",
		 what, pids);
	r = PQexec(hogs[0], sql);
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return v;
}

/* Every connection slot taken by the test and no session of the nodes
 * left (theirs ended, the slots they freed taken before the nodes win them
 * back); held until the devices were refused a few times, then given
 * back. */
static void pg_exhaust(void)
{
	static const char others[] = "count(*)", end[] = "count(pg_terminate_backend(pid))";
	PGconn *hogs[MAX_HOGS];
	int n = 0, refused;
	long long left = -1;

	pg_fill(hogs, &n);
	assert_true(n > 0);
	for (double until = now_s() + DEADLINE; now_s() < until; nap()) {
		pg_fill(hogs, &n);
		if ((left = hog_count(hogs, n, others)) == 0)
			break;
		assert_true(hog_count(hogs, n, end) >= 0);
	}
	assert_int_equal(left, 0);
	pthread_mutex_lock(&g_mu);
	refused = g_refused;
	g_step = 3;
	pthread_cond_broadcast(&g_cv);
	for (double until = now_s() + DEADLINE;
	     g_refused < refused + 3 && !g_done && now_s() < until;) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&g_cv, &g_mu, &ts);
	}
	if (g_refused < refused + 3)
		fail_msg("connections exhausted: %d refusals (want %d), devices %s%s",
			 g_refused - refused, 3, g_done ? "ended: " : "still sending",
			 g_done ? g_err : "");
	pthread_mutex_unlock(&g_mu);
	while (n)
		PQfinish(hogs[--n]);
}

/* ---- S3: killed, started again on its port with its data -------------------- */

static int s3_start_on_port(void)
{
	char data[80], port[16], buf[512] = "";
	const char *colon = strrchr(g_s3.endpoint, ':');
	size_t got = 0;
	int out[2];

	snprintf(data, sizeof data, "%s/data", g_s3.dir);
	snprintf(port, sizeof port, "%s", colon ? colon + 1 : "0");
	if (pipe(out) < 0)
		return -1;
	if ((g_s3.pid = fork()) == 0) {
		dup2(out[1], 1);
		close(out[0]);
		execlp("node", "node", RVS_S3RVER, "-d", data, "-a", "127.0.0.1", "-p", port,
		       "--silent", "--configure-bucket", "rv", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	for (double until = now_s() + DEADLINE;
	     now_s() < until && !strstr(buf, "listening on ") && got < sizeof buf - 1;) {
		ssize_t k = read(out[0], buf + got, sizeof buf - 1 - got);
		if (k <= 0)
			break;
		got += (size_t)k;
		buf[got] = 0;
	}
	close(out[0]);
	return strstr(buf, "listening on ") ? 0 : -1;
}

/* 1 when either node's log holds text. */
static int nodes_logged(const char *text)
{
	static char log[1 << 20];
	char path[256];

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%.63s/server.log", g_node[i].dir);
		if (web_slurp(path, log, sizeof log) > 0 && strstr(log, text))
			return 1;
	}
	return 0;
}

static long long pg_count(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	long long n = -1;

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	else
		print_message("query failed: %s: %s\n", sql, PQerrorMessage(c));
	PQclear(r);
	return n;
}

/* Fails the test, with the first reasons, when anything is quarantined. */
static void expect_no_quarantine(const char *after)
{
	PGconn *c = PQconnectdb(g_uri);
	PGresult *r = PQexec(c, "SELECT trace_id, reason FROM quarantine ORDER BY 1 LIMIT 5");
	long long n = pg_count(c, "SELECT count(*) FROM quarantine");

	for (int i = 0; PQresultStatus(r) == PGRES_TUPLES_OK && i < PQntuples(r); i++)
		print_message("quarantined after %s: %s: %s\n", after, PQgetvalue(r, i, 0),
			      PQgetvalue(r, i, 1));
	PQclear(r);
	PQfinish(c);
	if (n != 0)
		fail_msg("%lld uploads quarantined after %s", n, after);
}

/* s3rver killed; the decoded captures queued again, so that the nodes
 * fetch their blobs from it while it is down; started again once a node
 * failed a fetch. */
static void s3_kill9_and_start(void)
{
	PGconn *c = PQconnectdb(g_uri);
	long long queued;

	assert_int_equal(PQstatus(c), CONNECTION_OK);
	assert_int_equal(kill(g_s3.pid, SIGKILL), 0);
	waitpid(g_s3.pid, NULL, 0);
	g_s3.pid = 0;
	begin_step(4);
	queued = pg_count(c,
			  "WITH q AS (INSERT INTO decode_queue (trace_id, enqueued_at)"
			  " SELECT trace_id, 0 FROM uploads WHERE state = 'decoded'"
			  " AND blob_sha256 IS NOT NULL ON CONFLICT DO NOTHING RETURNING trace_id),"
			  " u AS (UPDATE uploads SET state = 'pending_decode'"
			  " WHERE trace_id IN (SELECT trace_id FROM q) RETURNING 1)"
			  " SELECT count(*) FROM u");
	assert_true(queued > 0);
	PQclear(PQexec(c, "SELECT pg_notify('rearview_decode', '')"));
	PQfinish(c);
	for (double until = now_s() + DEADLINE;
	     !nodes_logged("blob fetch failed") && now_s() < until;)
		nap();
	assert_true(nodes_logged("blob fetch failed"));
	assert_int_equal(s3_start_on_port(), 0);
}

/* ---- devices ---------------------------------------------------------------- */

/* POSTs to node `node`: fc_post. */
static long post(int node, const char *path, const char *token, const uint8_t *body, size_t len,
		 struct fc_buf *out)
{
	return fc_post(g_node[node].port, g_node[0].ca, path, token, body, len, out);
}

static void enroll(struct device *d, int i)
{
	Rearview__EnrollRequest q = REARVIEW__ENROLL_REQUEST__INIT;
	uint8_t body[512];
	struct fc_buf out;
	long code = 0;

	q.enrollment_secret = g_node[0].secret;
	size_t n = rearview__enroll_request__pack(&q, body);
	for (double until = now_s() + DEADLINE; code != 200 && now_s() < until;)
		code = post(i % 2, "/v1/enroll", NULL, body, n, &out);
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
	Rearview__Chain ch = REARVIEW__CHAIN__INIT, *chains[1] = {&ch};
	char *frames[2] = {(char *)"com.example.Chaos.outer", (char *)"com.example.Chaos.inner"};
	Rearview__Summary sum = REARVIEW__SUMMARY__INIT;
	uint8_t *payload = NULL;

	memset(u, 0, sizeof *u);
	u->id[0] = 0xc4;
	u->id[1] = (uint8_t)i;
	u->id[2] = (uint8_t)j;
	e.upload_id.data = u->id;
	e.upload_id.len = sizeof u->id;
	app.app_id = (char *)"com.example.chaos";
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
		u->capture = 1;
	} else {
		/* A chain too: its signature is counted (signatures). */
		ms.name = (char *)"com.example.Chaos.work";
		ms.calls = 1;
		ms.self_ns = 1000 + (uint64_t)j;
		ms.inclusive_ns = 2000;
		sum.top_self = top;
		sum.n_top_self = 1;
		ch.frames = frames;
		ch.n_frames = 2;
		ch.signature = 0x1234 + (uint64_t)(j % 3);
		ch.duration_ns = 5000;
		sum.chains_at_anomaly = chains;
		sum.n_chains_at_anomaly = 1;
		sum.window_ns = 1000000000;
		e.summary = &sum;
	}
	u->len = rearview__upload_envelope__get_packed_size(&e);
	u->body = malloc(u->len);
	rearview__upload_envelope__pack(&e, u->body);
	free(payload);
}

/* Sends u, to one node and on failure to the other, until acknowledged;
 * 0, or -1 with g_err set. */
static int send_upload(struct device *d, struct upload *u, int node)
{
	struct fc_buf out;
	long code = 0;

	for (double until = now_s() + DEADLINE; now_s() < until; node ^= 1) {
		code = post(node, "/v1/uploads", d->token, u->body, u->len, &out);
		if (code == 200 || code == 201)
			break;
		if (code && code < 500) {
			snprintf(g_err, sizeof g_err, "upload answered %ld", code);
			return -1;
		}
		pthread_mutex_lock(&g_mu);
		g_refused++;
		pthread_cond_broadcast(&g_cv);
		pthread_mutex_unlock(&g_mu);
		nap(); /* a device backs off before it sends again */
	}
	if (code != 200 && code != 201) {
		snprintf(g_err, sizeof g_err, "no acknowledgement in %d s", DEADLINE);
		return -1;
	}
	Rearview__UploadAck *a = rearview__upload_ack__unpack(NULL, out.n, out.b);
	if (!a || a->upload_id.len != sizeof u->id || memcmp(a->upload_id.data, u->id, 16)) {
		snprintf(g_err, sizeof g_err, "a bad acknowledgement");
		rearview__upload_ack__free_unpacked(a, NULL);
		return -1;
	}
	snprintf(u->trace_id, sizeof u->trace_id, "%s", a->trace_id);
	rearview__upload_ack__free_unpacked(a, NULL);
	return 0;
}

/* The devices: every upload in turn, alternating nodes, upload k once
 * step k / STEP (at most 4) has begun. */
static void *devices(void *arg)
{
	(void)arg;
	for (int k = 0; k < TOTAL; k++) {
		struct device *d = &g_dev[k % NDEV];
		struct upload *u = &d->up[k / NDEV];
		int step = k / STEP < 4 ? k / STEP : 4;

		pthread_mutex_lock(&g_mu);
		for (double until = now_s() + DEADLINE; g_step < step && now_s() < until;) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&g_cv, &g_mu, &ts);
		}
		pthread_mutex_unlock(&g_mu);
		if (send_upload(d, u, k % 2))
			break;
		pthread_mutex_lock(&g_mu);
		u->acked = 1;
		g_acked++;
		pthread_cond_broadcast(&g_cv);
		pthread_mutex_unlock(&g_mu);
	}
	pthread_mutex_lock(&g_mu);
	g_done = 1;
	pthread_cond_broadcast(&g_cv);
	pthread_mutex_unlock(&g_mu);
	return NULL;
}

/* Waits until at least n uploads are acknowledged (or the devices ended). */
static void wait_acked(int n)
{
	pthread_mutex_lock(&g_mu);
	for (double until = now_s() + DEADLINE; g_acked < n && !g_done && now_s() < until;) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&g_cv, &g_mu, &ts);
	}
	pthread_mutex_unlock(&g_mu);
}

/* ---- the fleet -------------------------------------------------------------- */

/* Node B: the same keys, CA, certificate and secrets as node A. */
static int copy_keys_from_a(const char *data)
{
	return fc_copy_keys(g_node[0].data, data);
}

static int group_setup(void **state)
{
	char conf[1024];
	int rc;

	(void)state;
	g_t0 = now_s();
	curl_global_init(CURL_GLOBAL_DEFAULT);
	/* A private cluster, never the run's shared one: this test kills it. */
	unsetenv("RVT_PG_HOST");
	unsetenv("RVT_PG_PORT");
	if ((rc = pgh_start(&g_pg)) < 0 || pgh_fresh_db(&g_pg, g_uri, sizeof g_uri) < 0) {
		snprintf(g_why, sizeof g_why, "PostgreSQL: %.300s", g_pg.why);
		return rc == -ENOENT ? 0 : -1;
	}
	if (s3h_start(&g_s3, "rv") != 1) {
		snprintf(g_why, sizeof g_why, "no node or s3rver (make installs build/s3rver)");
		return 0;
	}
	snprintf(g_dir, sizeof g_dir, "/tmp/rvs-chaos-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	/* A short lease: an outcome a node could not record is decoded again
	 * soon; a short poll: the nodes look at the queue often. */
	snprintf(conf, sizeof conf,
		 "database = %s\ndecode_lease_s = 5\ndecode_poll_s = 1\n"
		 "upload_rate_per_min = 100000\n"
		 "upload_burst = 100000\n"
		 "[store]\nblobs = s3://rv/chaos\ns3_endpoint = %s\ns3_access_key = S3RVER\n"
		 "s3_secret_file = %s\n",
		 g_uri, g_s3.endpoint, g_s3.secret);
	if (web_server_start(&g_node[0], conf, NULL) ||
	    web_server_start(&g_node[1], conf, copy_keys_from_a))
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	int bad = 0;
	char cmd[128];

	(void)state;
	for (int i = 0; i < 2; i++)
		if (g_node[i].dir[0])
			bad |= web_server_stop(&g_node[i]);
	s3h_stop(&g_s3);
	pgh_stop(&g_pg);
	if (g_dir[0]) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
		bad |= system(cmd) != 0;
	}
	curl_global_cleanup();
	return bad ? -1 : 0;
}

static void test_chaos_storage_failures_lose_and_quarantine_nothing(void **state)
{
	pthread_t t;
	PGconn *c;
	double t0 = now_s();
	long long left = -1, decoded = -1, signed_;

	(void)state;
	if (g_why[0]) {
		print_message("skipped: %s\n", g_why);
		skip();
	}
	for (int i = 0; i < NDEV; i++) {
		enroll(&g_dev[i], i);
		for (int j = 0; j < PER_DEV; j++)
			make_upload(&g_dev[i].up[j], i, j);
	}
	print_message("chaos: PostgreSQL, s3rver and two nodes up in %.1f s\n", t0 - g_t0);
	assert_int_equal(pthread_create(&t, NULL, devices, NULL), 0);

	wait_acked(STEP);
	pg_kill9_and_start();
	print_message("chaos: postmaster killed and started at %d acknowledged\n", g_acked);
	wait_acked(2 * STEP);
	expect_no_quarantine("the postmaster's SIGKILL");
	/* The fast restart also brings max_connections down, so that the next
	 * step fills the slots with a few dozen connections. */
	assert_int_equal(pgh_admin(&g_pg, "ALTER SYSTEM SET max_connections = 40"), 0);
	pg_fast_restart();
	print_message("chaos: fast restart at %d acknowledged\n", g_acked);
	wait_acked(3 * STEP);
	expect_no_quarantine("the fast restart");
	pg_exhaust();
	print_message("chaos: connections exhausted until a device was refused (%d refusals so "
		      "far), at %d acknowledged\n",
		      g_refused, g_acked);
	wait_acked(4 * STEP);
	expect_no_quarantine("the connections exhausted");
	s3_kill9_and_start();
	print_message("chaos: s3rver killed during decodes and started at %d acknowledged\n",
		      g_acked);
	expect_no_quarantine("s3rver's SIGKILL");
	assert_int_equal(pthread_join(t, NULL), 0);
	if (g_err[0])
		fail_msg("devices: %s", g_err);
	assert_int_equal(g_acked, TOTAL);

	/* Everything decoded: the queue empty and every upload decoded. */
	assert_non_null(c = PQconnectdb(g_uri));
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	for (double until = now_s() + DEADLINE; now_s() < until; nap()) {
		left = pg_count(c, "SELECT count(*) FROM decode_queue");
		decoded = pg_count(c, "SELECT count(*) FROM uploads WHERE state = 'decoded'");
		if ((left == 0 && decoded == TOTAL) ||
		    pg_count(c, "SELECT count(*) FROM quarantine") > 0)
			break;
	}
	expect_no_quarantine("the last decode");
	assert_int_equal(left, 0);
	assert_int_equal(decoded, TOTAL);
	assert_int_equal(pg_count(c, "SELECT count(*) FROM uploads"), TOTAL);
	assert_int_equal(pg_count(c, "SELECT count(DISTINCT (device_id, upload_id)) FROM uploads"),
			 TOTAL);
	/* Exactly once: one traces row each, and every count equal to the
	 * rows it counts. */
	assert_int_equal(pg_count(c, "SELECT count(*) FROM traces"), TOTAL);
	assert_int_equal(pg_count(c, "SELECT count(DISTINCT trace_id) FROM traces"), TOTAL);
	signed_ = pg_count(c, "SELECT count(*) FROM traces WHERE signature IS NOT NULL");
	assert_true(signed_ >= TOTAL - TOTAL / 4); /* every summary's, at least */
	assert_int_equal(pg_count(c, "SELECT coalesce(sum(traces), 0) FROM signatures"), signed_);
	assert_int_equal(pg_count(c, "SELECT coalesce(sum(traces), 0) FROM signature_counts"),
			 signed_);
	assert_int_equal(pg_count(c, "SELECT count(*) FROM trace_agg"), TOTAL / 4);
	assert_int_equal(pg_count(c, "SELECT count(*) FROM (SELECT s.bucket, s.node FROM agg_sums s"
				     " JOIN (SELECT bucket, node, count(*) n FROM trace_paths"
				     " GROUP BY 1, 2) p USING (bucket, node)"
				     " WHERE s.traces <> p.n) x"),
			 0);
	/* The per-node rollup, added once a batch by concurrent lanes: every
	 * node's sums as agg_sums' summed over its buckets. */
	assert_true(pg_count(c, "SELECT count(*) FROM agg_node_sums") > 0);
	assert_int_equal(pg_count(c, "SELECT count(*) FROM (SELECT node, sum(traces) t,"
				     " sum(calls) k, sum(self_ns) s, sum(incl_ns) i FROM agg_sums"
				     " GROUP BY node) a FULL JOIN agg_node_sums r USING (node)"
				     " WHERE r.traces IS DISTINCT FROM a.t OR r.calls IS DISTINCT"
				     " FROM a.k OR r.self_ns IS DISTINCT FROM a.s"
				     " OR r.incl_ns IS DISTINCT FROM a.i"),
			 0);
	for (int i = 0; i < NDEV; i++)
		for (int j = 0; j < PER_DEV; j++) {
			struct upload *u = &g_dev[i].up[j];
			const char *p[1] = {u->trace_id};
			PGresult *r = PQexecParams(c,
						   "SELECT count(*) FROM uploads u JOIN traces t"
						   " USING (trace_id) WHERE u.trace_id = $1"
						   " AND u.state = 'decoded'",
						   1, NULL, p, NULL, NULL, 0);
			assert_true(u->acked);
			assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
			assert_string_equal(PQgetvalue(r, 0, 0), "1");
			PQclear(r);
			free(u->body);
		}
	print_message("chaos: %d uploads acknowledged, all decoded once, none quarantined; %d "
		      "requests refused on the way; %.1f s\n",
		      TOTAL, g_refused, now_s() - t0);
	PQfinish(c);
}

/* PostgreSQL stopped: an upload is refused with 503 and a Retry-After
 * (the device keeps it and sends it again after backing off), never 500;
 * once PostgreSQL is back the same upload is acknowledged and decoded. */
static void test_chaos_store_down_upload_answers_503_then_retry_succeeds(void **state)
{
	char cmd[512];
	struct device d;
	struct upload *u = &d.up[0];
	struct fc_buf out;
	long code;
	PGconn *c;
	long long decoded = -1;

	(void)state;
	if (g_why[0]) {
		print_message("skipped: %s\n", g_why);
		skip();
	}
	enroll(&d, 0);
	make_upload(u, NDEV, 0);
	snprintf(cmd, sizeof cmd, PGH_BIN "/pg_ctl -D %s/data -m fast -w -t 120 stop", g_pg.dir);
	assert_int_equal(pgh_sh(&g_pg, cmd), 0);
	assert_false(pg_answers());
	for (int node = 0; node < 2; node++) {
		code = post(node, "/v1/uploads", d.token, u->body, u->len, &out);
		print_message("store down: node %d answered %ld, Retry-After %ld\n", node, code,
			      out.retry_after);
		assert_int_equal(code, 503);
		assert_true(out.retry_after > 0);
	}
	assert_int_equal(pg_start(), 0);
	/* The first request after the restart may still meet a pooled
	 * connection from before it (503 again): sent again, as a device does. */
	code = 0;
	for (double until = now_s() + DEADLINE; code != 200 && now_s() < until; nap()) {
		code = post(1, "/v1/uploads", d.token, u->body, u->len, &out);
		assert_true(code == 200 || code == 503);
	}
	assert_int_equal(code, 200);
	Rearview__UploadAck *a = rearview__upload_ack__unpack(NULL, out.n, out.b);
	assert_non_null(a);
	assert_false(a->duplicate);
	assert_non_null(c = PQconnectdb(g_uri));
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	{
		const char *p[1] = {a->trace_id};
		for (double until = now_s() + DEADLINE; decoded != 1 && now_s() < until; nap()) {
			PGresult *r =
				PQexecParams(c,
					     "SELECT count(*) FROM uploads WHERE trace_id = $1"
					     " AND state = 'decoded'",
					     1, NULL, p, NULL, NULL, 0);
			if (PQresultStatus(r) == PGRES_TUPLES_OK)
				decoded = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
			PQclear(r);
		}
	}
	assert_int_equal(decoded, 1);
	PQfinish(c);
	rearview__upload_ack__free_unpacked(a, NULL);
	free(u->body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chaos_storage_failures_lose_and_quarantine_nothing),
		cmocka_unit_test(test_chaos_store_down_upload_answers_503_then_retry_succeeds),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
