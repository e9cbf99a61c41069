/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_store.c — the storage backends through their function table: every
 * common case runs on sqlite3 (a file in a temporary directory) and on
 * PostgreSQL (a fresh database on a private server pg_harness.h starts; a
 * visible skip when PostgreSQL 15 is not installed), then the cases only
 * one backend has (the content-addressed blob store and PBKDF2 run once;
 * PostgreSQL's decode queue across nodes: leases, SKIP LOCKED).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "rearview/common.pb-c.h"
#include "base/util.h"
#include "blob/blob.h"
#include "store/store.h"
#include "store/pg/store_part.h"
#include "pg_harness.h"

/* The backend under test: each group of cases runs with one. */
static const struct rvs_store_ops *ops;
static struct pgh pg;

struct fx {
	char dir[64];
	char db[256]; /* the dsn: a file in dir, or a fresh PostgreSQL database */
	struct rvs_store *s;
};

/* An open store on a new database: on PostgreSQL a copy of the migrated
 * template (migrated) or an empty database the store migrates as it opens
 * it (the cases on the migrations and on what opening makes). */
static int setup_db(void **state, int migrated)
{
	struct fx *f = calloc(1, sizeof *f);
	snprintf(f->dir, sizeof f->dir, "/tmp/rvs-store-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	if (ops == &rvs_store_pg) {
		if ((migrated ? pgh_migrated_db(&pg, f->db, sizeof f->db)
			      : pgh_fresh_db(&pg, f->db, sizeof f->db)))
			goto fail;
	} else {
		snprintf(f->db, sizeof f->db, "%s/t.db", f->dir);
	}
	if (ops->open(f->db, &f->s))
		goto fail;
	*state = f;
	return 0;
fail:
	/* teardown does not run after a failed setup */
	snprintf(f->db, sizeof f->db, "rm -rf '%s'", f->dir);
	if (system(f->db) != 0)
		fprintf(stderr, "test_store: could not remove %s\n", f->dir);
	free(f);
	return -1;
}

static int setup(void **state)
{
	return setup_db(state, 1);
}

static int setup_empty(void **state)
{
	return setup_db(state, 0);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];
	ops->close(f->s);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	free(f);
	return system(cmd) == 0 ? 0 : -1;
}

/* The one value sql answers on f's database (sqlite_sql on sqlite3,
 * pg_sql on PostgreSQL; NULL: the same text), into out ("" for NULL). */
static void sql_value(struct fx *f, const char *sqlite_sql, const char *pg_sql, char *out,
		      size_t len)
{
	if (ops == &rvs_store_pg) {
		PGconn *c = PQconnectdb(f->db);
		PGresult *r = PQexec(c, pg_sql ? pg_sql : sqlite_sql);
		if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
			fail_msg("%s", PQerrorMessage(c));
		snprintf(out, len, "%s", PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
		PQclear(r);
		PQfinish(c);
	} else {
		sqlite3 *db;
		sqlite3_stmt *st;
		assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
		assert_int_equal(sqlite3_prepare_v2(db, sqlite_sql, -1, &st, NULL), SQLITE_OK);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		snprintf(out, len, "%s",
			 sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0)
						    : "");
		sqlite3_finalize(st);
		sqlite3_close(db);
	}
}

static void add_device(struct fx *f, const char *id, uint8_t tag)
{
	struct rvs_device_rec d = {0};
	snprintf(d.device_id, sizeof d.device_id, "%s", id);
	memset(d.token_hash, tag, 32);
	d.model = "m";
	assert_int_equal(ops->device_add(f->s, &d), 0);
}

static void add_upload(struct fx *f, const char *trace, const char *dev, uint8_t idtag, int expect)
{
	struct rvs_upload_rec u = {0};
	snprintf(u.trace_id, sizeof u.trace_id, "%s", trace);
	u.device_id = dev;
	memset(u.upload_id, idtag, 16);
	u.app_id = "app";
	assert_int_equal(ops->upload_add(f->s, &u), expect);
}

/* Durable commits: sqlite in WAL mode, PostgreSQL with synchronous_commit
 * on (COMMIT returns once the WAL is flushed). */
static void test_store_open_applies_migrations_and_wal(void **state)
{
	struct fx *f = *state;
	struct rvs_store *again;
	char mode[32];
	int v = 0, v2 = 0;

	assert_int_equal(ops->schema_version(f->s, &v), 0);
	assert_true(v >= 1);
	/* Reopening is idempotent. */
	assert_int_equal(ops->open(f->db, &again), 0);
	assert_int_equal(ops->schema_version(again, &v2), 0);
	assert_int_equal(v2, v);
	ops->close(again);
	sql_value(f, "PRAGMA journal_mode", "SHOW synchronous_commit", mode, sizeof mode);
	assert_string_equal(mode, ops == &rvs_store_pg ? "on" : "wal");
}

static void test_store_device_token_lookup_finds_only_its_device(void **state)
{
	struct fx *f = *state;
	uint8_t h[32];
	char id[40];

	add_device(f, "d-one", 1);
	add_device(f, "d-two", 2);
	memset(h, 2, 32);
	assert_int_equal(ops->device_by_token(f->s, h, id), 0);
	assert_string_equal(id, "d-two");
	memset(h, 3, 32);
	assert_int_equal(ops->device_by_token(f->s, h, id), -ENOENT);
}

static void test_store_upload_is_unique_per_device_and_queued(void **state)
{
	struct fx *f = *state;
	uint8_t uid[16];
	char trace[40];
	uint64_t depth = 0;

	add_device(f, "d-one", 1);
	add_device(f, "d-two", 2);
	add_upload(f, "t-1", "d-one", 7, 0);
	add_upload(f, "t-2", "d-one", 7, -EEXIST); /* same device, same upload id */
	add_upload(f, "t-3", "d-two", 7, 0);	   /* another device may reuse it */
	memset(uid, 7, 16);
	assert_int_equal(ops->upload_find(f->s, "d-one", uid, trace), 0);
	assert_string_equal(trace, "t-1");
	memset(uid, 8, 16);
	assert_int_equal(ops->upload_find(f->s, "d-one", uid, trace), -ENOENT);
	assert_int_equal(ops->queue_depth(f->s, &depth), 0);
	assert_int_equal(depth, 2);
}

/* Summary-only uploads batch together; a capture (an upload with a blob)
 * closes its batch, so its outcome is recorded as soon as it is decoded. */
static void test_store_batch_ends_at_its_first_capture(void **state)
{
	struct fx *f = *state;
	struct rvs_decode_item it[8];
	static const char *const blob[6] = {NULL, NULL, "aa", NULL, "bb", NULL};

	add_device(f, "d-one", 1);
	for (int i = 0; i < 6; i++) {
		struct rvs_upload_rec u = {0};
		snprintf(u.trace_id, sizeof u.trace_id, "t-%d", i);
		u.device_id = "d-one";
		memset(u.upload_id, 10 + i, 16);
		u.blob_sha256 = blob[i];
		assert_int_equal(ops->upload_add(f->s, &u), 0);
	}
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 8), 3);
	assert_string_equal(it[2].trace_id, "t-2");
	assert_string_equal(it[2].blob_sha256, "aa");
	assert_string_equal(it[0].blob_sha256, "");
	assert_int_equal(ops->decode_finish(f->s, it, 3), 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 8), 2);
	assert_string_equal(it[0].trace_id, "t-3");
	assert_string_equal(it[1].blob_sha256, "bb");
	assert_int_equal(ops->decode_finish(f->s, it, 2), 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 8), 1);
	assert_string_equal(it[0].trace_id, "t-5");
}

static void test_store_failed_decode_goes_to_quarantine_with_reason(void **state)
{
	struct fx *f = *state;
	struct rvs_decode_item it[4];
	uint64_t depth = 9;
	char out[256];

	add_device(f, "d-one", 1);
	add_upload(f, "t-a", "d-one", 1, 0);
	add_upload(f, "t-b", "d-one", 2, 0);
	add_upload(f, "t-c", "d-one", 3, 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 1), 1);
	assert_string_equal(it[0].trace_id, "t-a");
	it[0].rc = -EBADMSG;
	snprintf(it[0].reason, sizeof it[0].reason, "truncated capture: 12 bytes");
	assert_int_equal(ops->decode_finish(f->s, it, 1), 0);
	/* Recorded once: finishing it again changes nothing. */
	snprintf(it[0].reason, sizeof it[0].reason, "again");
	assert_int_equal(ops->decode_finish(f->s, it, 1), 0);
	/* The rest as one batch, oldest first: one decoded, one quarantined
	 * without a reason. */
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 4), 2);
	assert_string_equal(it[0].trace_id, "t-b");
	assert_string_equal(it[1].trace_id, "t-c");
	it[1].rc = -EIO;
	assert_int_equal(ops->decode_finish(f->s, it, 2), 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 4), 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 0), -EINVAL);
	assert_int_equal(ops->queue_depth(f->s, &depth), 0);
	assert_int_equal(depth, 0);

	sql_value(f,
		  "SELECT q.reason || '|' || u.state FROM quarantine q"
		  " JOIN uploads u USING (trace_id) WHERE trace_id='t-a'",
		  NULL, out, sizeof out);
	assert_string_equal(out, "truncated capture: 12 bytes|quarantined");
	sql_value(f,
		  "SELECT group_concat(trace_id || '=' || state || '/' ||"
		  " coalesce(reason, '-'), ' ') FROM (SELECT u.trace_id,"
		  " u.state, q.reason FROM uploads u LEFT JOIN quarantine q"
		  " USING (trace_id) ORDER BY u.trace_id)",
		  "SELECT string_agg(trace_id || '=' || state || '/' || coalesce(reason, '-'),"
		  " ' ' ORDER BY trace_id) FROM uploads u LEFT JOIN quarantine q"
		  " USING (trace_id)",
		  out, sizeof out);
	assert_string_equal(out, "t-a=quarantined/truncated capture: 12 bytes t-b=decoded/-"
				 " t-c=quarantined/unspecified");
}

/* A decode the store deferred (rc -EAGAIN: a transient error) stays
 * queued in pending_decode, never quarantined; the operator's requeue puts
 * back the quarantined uploads whose reason holds the filter, then (NULL)
 * every one, each once. */
static void test_store_transient_stays_queued_and_requeue_filters_by_reason(void **state)
{
	struct fx *f = *state;
	struct rvs_decode_item it[4];
	uint64_t depth = 0, n = 9;
	char out[256];

	add_device(f, "d-one", 1);
	add_upload(f, "t-a", "d-one", 1, 0);
	add_upload(f, "t-b", "d-one", 2, 0);
	add_upload(f, "t-c", "d-one", 3, 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 4), 3);
	it[0].rc = -EAGAIN;
	snprintf(it[0].reason, sizeof it[0].reason, "index: retry later: server closed");
	it[1].rc = -EBADMSG;
	snprintf(it[1].reason, sizeof it[1].reason, "zstd: corrupt or truncated");
	it[2].rc = -EPROTO;
	snprintf(it[2].reason, sizeof it[2].reason, "capture: bad magic");
	assert_int_equal(ops->decode_finish(f->s, it, 3), 0);
	assert_int_equal(ops->queue_depth(f->s, &depth), 0);
	assert_int_equal(depth, 1);
	sql_value(f,
		  "SELECT group_concat(trace_id || '=' || state || '/' ||"
		  " coalesce(reason, '-'), ' ') FROM (SELECT u.trace_id,"
		  " u.state, q.reason FROM uploads u LEFT JOIN quarantine q"
		  " USING (trace_id) ORDER BY u.trace_id)",
		  "SELECT string_agg(trace_id || '=' || state || '/' || coalesce(reason, '-'),"
		  " ' ' ORDER BY trace_id) FROM uploads u LEFT JOIN quarantine q"
		  " USING (trace_id)",
		  out, sizeof out);
	assert_string_equal(out, "t-a=pending_decode/- t-b=quarantined/zstd: corrupt or truncated"
				 " t-c=quarantined/capture: bad magic");

	/* By reason (a substring, case sensitive): only t-b. */
	assert_int_equal(ops->quarantine_requeue(f->s, "ZSTD", &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(ops->quarantine_requeue(f->s, "corrupt", &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ops->queue_depth(f->s, &depth), 0);
	assert_int_equal(depth, 2);
	sql_value(f,
		  "SELECT group_concat(trace_id || '=' || state || '/' ||"
		  " coalesce(reason, '-'), ' ') FROM (SELECT u.trace_id,"
		  " u.state, q.reason FROM uploads u LEFT JOIN quarantine q"
		  " USING (trace_id) ORDER BY u.trace_id)",
		  "SELECT string_agg(trace_id || '=' || state || '/' || coalesce(reason, '-'),"
		  " ' ' ORDER BY trace_id) FROM uploads u LEFT JOIN quarantine q"
		  " USING (trace_id)",
		  out, sizeof out);
	assert_string_equal(out, "t-a=pending_decode/- t-b=pending_decode/-"
				 " t-c=quarantined/capture: bad magic");
	/* Every one left, once: a second requeue finds none. */
	assert_int_equal(ops->quarantine_requeue(f->s, NULL, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ops->quarantine_requeue(f->s, NULL, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(ops->queue_depth(f->s, &depth), 0);
	assert_int_equal(depth, 3);
	sql_value(f, "SELECT count(*) FROM quarantine", NULL, out, sizeof out);
	assert_string_equal(out, "0");
	sql_value(f, "SELECT count(*) FROM uploads WHERE state = 'pending_decode'", NULL, out,
		  sizeof out);
	assert_string_equal(out, "3");
}

static void test_store_hostile_text_is_data_not_sql(void **state)
{
	struct fx *f = *state;
	struct rvs_device_rec d = {0};
	uint8_t h[32];
	char id[40];

	snprintf(d.device_id, sizeof d.device_id, "d-x'); DROP TABLE devices;--");
	memset(d.token_hash, 5, 32);
	d.model = "' OR 1=1 --";
	assert_int_equal(ops->device_add(f->s, &d), 0);
	memset(h, 5, 32);
	assert_int_equal(ops->device_by_token(f->s, h, id), 0);
	assert_string_equal(id, d.device_id);
}

static void test_store_blob_is_content_addressed_and_complete(void **state)
{
	struct fx *f = *state;
	char dir[128], hex[65], hex2[65], path[256];
	static const char data[] = "abc";
	uint8_t *back;
	size_t len;

	snprintf(dir, sizeof dir, "%s/blobs", f->dir);
	assert_int_equal(rvs_blob_put(dir, data, 3, hex), 0);
	/* SHA-256("abc") */
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	assert_int_equal(rvs_blob_put(dir, data, 3, hex2), 0);
	assert_string_equal(hex, hex2);
	assert_int_equal(rvs_blob_path(dir, hex, path, sizeof path), 0);
	assert_int_equal(rvs_read_file(path, 100, &back, &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(back, data, 3);
	free(back);
	/* Names that are not a digest never become paths. */
	assert_int_equal(rvs_blob_path(dir, "../../etc/passwd", path, sizeof path), -EINVAL);
	assert_int_equal(
		rvs_blob_path(dir,
			      "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD",
			      path, sizeof path),
		-EINVAL);
}

static void test_store_pbkdf2_matches_rfc7914_vector(void **state)
{
	/* RFC 7914 §11: PBKDF2-HMAC-SHA256("passwd", "salt", 1, 64) first 32 bytes. */
	static const uint8_t want[8] = {0x55, 0xac, 0x04, 0x6e, 0x56, 0xe3, 0x08, 0x9f};
	uint8_t out[32];
	assert_int_equal(rvs_pbkdf2("passwd", (const uint8_t *)"salt", 4, 1, out), 0);
	assert_memory_equal(out, want, sizeof want);
}

struct racer {
	struct fx *f;
	int ok, dup;
};

/* Four work threads deliver the same 50 uploads: each lands exactly once. */
static void *race(void *arg)
{
	struct racer *r = arg;
	for (int i = 0; i < 50; i++) {
		struct rvs_upload_rec u = {0};
		int rc;
		snprintf(u.trace_id, sizeof u.trace_id, "t-%d", i);
		u.device_id = "d-one";
		memset(u.upload_id, i, 16);
		rc = ops->upload_add(r->f->s, &u);
		if (rc == 0)
			r->ok++;
		else if (rc == -EEXIST)
			r->dup++;
	}
	return NULL;
}

static void test_store_concurrent_adds_store_each_upload_once(void **state)
{
	struct fx *f = *state;
	pthread_t t[4];
	struct racer r[4];
	int ok = 0, dup = 0;
	uint64_t depth = 0;

	add_device(f, "d-one", 1);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct racer){f, 0, 0};
		assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ok += r[i].ok;
		dup += r[i].dup;
	}
	assert_int_equal(ok, 50);
	assert_int_equal(dup, 150);
	assert_int_equal(ops->queue_depth(f->s, &depth), 0);
	assert_int_equal(depth, 50);
}

struct quota_racer {
	struct fx *f;
	int n, rc;
};

/* One upload of d-q (upload id n) within a weekly quota of 3. */
static void *quota_race(void *arg)
{
	struct quota_racer *r = arg;
	struct rvs_upload_rec u = {0};

	snprintf(u.trace_id, sizeof u.trace_id, "t-q%d", r->n);
	u.device_id = "d-q";
	memset(u.upload_id, 0x40 + r->n, 16);
	u.anomaly_kind = 1; /* jank: charged */
	u.weekly_quota = 3;
	u.quota_since = (int64_t)time(NULL) - 7 * 86400;
	r->rc = ops->upload_add(r->f->s, &u);
	return NULL;
}

/* Issue 18 item 11's server check was count-then-insert (api.c counted
 * with uploads_charged, then upload_add inserted): 8 parallel uploads of a
 * device at quota - 1 all passed the count (8 of 8 could be stored; the
 * store had no check).  Counted in the insert's transaction, exactly one
 * is stored, the other 7 get -EDQUOT; a manual capture is never charged. */
static void test_store_parallel_uploads_at_quota_minus_one_store_exactly_one(void **state)
{
	struct fx *f = *state;
	pthread_t t[8];
	struct quota_racer r[8];
	struct rvs_upload_rec m = {0};
	uint64_t charged = 0;
	int ok = 0, over = 0;

	add_device(f, "d-q", 9);
	for (int i = 0; i < 2; i++) {
		r[0] = (struct quota_racer){f, 100 + i, -1};
		quota_race(&r[0]);
		assert_int_equal(r[0].rc, 0);
	}
	for (int i = 0; i < 8; i++) {
		r[i] = (struct quota_racer){f, i, -1};
		assert_int_equal(pthread_create(&t[i], NULL, quota_race, &r[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		ok += r[i].rc == 0;
		over += r[i].rc == -EDQUOT;
	}
	assert_int_equal(ok, 1);
	assert_int_equal(over, 7);
	assert_int_equal(
		ops->uploads_charged(f->s, "d-q", (int64_t)time(NULL) - 7 * 86400, &charged), 0);
	assert_int_equal(charged, 3);
	snprintf(m.trace_id, sizeof m.trace_id, "t-qm");
	m.device_id = "d-q";
	memset(m.upload_id, 0x7f, 16);
	m.anomaly_kind = REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL;
	m.weekly_quota = 3;
	m.quota_since = (int64_t)time(NULL) - 7 * 86400;
	assert_int_equal(ops->upload_add(f->s, &m), 0);
}

/* ---- issue 15: the store functions of the other server files ---------- */

static void add_blob_upload(struct fx *f, const char *trace, uint8_t idtag, const char *blob)
{
	struct rvs_upload_rec u = {0};
	snprintf(u.trace_id, sizeof u.trace_id, "%s", trace);
	u.device_id = "d-1";
	memset(u.upload_id, idtag, 16);
	u.blob_sha256 = blob;
	u.blob_bytes = 10;
	assert_int_equal(ops->upload_add(f->s, &u), 0);
}

/* Retention deletes the oldest old uploads a batch at a time, with their
 * queue rows, and names their blobs; a blob another upload still names
 * stays referenced until that one goes too. */
static void test_store_retention_deletes_oldest_batch_and_names_blobs(void **state)
{
	struct fx *f = *state;
	char a[65], b[65], blobs[500][65], v[32];
	size_t nblobs = 9;

	memset(a, 'a', 64);
	memset(b, 'b', 64);
	a[64] = b[64] = 0;
	add_device(f, "d-1", 1);
	add_blob_upload(f, "t-1", 1, a);
	add_blob_upload(f, "t-2", 2, a);
	add_blob_upload(f, "t-3", 3, b);
	sql_value(
		f,
		"UPDATE uploads SET received_at = 100 + (trace_id = 't-2') WHERE trace_id <> 't-3'"
		" RETURNING trace_id",
		"UPDATE uploads SET received_at = 100 + (trace_id = 't-2')::int WHERE trace_id <>"
		" 't-3' RETURNING trace_id",
		v, sizeof v);
	assert_int_equal(ops->blob_referenced(f->s, a), 1);

	assert_int_equal(ops->retention_delete(f->s, 1000, 1, blobs, &nblobs), 1);
	assert_int_equal(nblobs, 1);
	assert_string_equal(blobs[0], a);
	assert_int_equal(ops->blob_referenced(f->s, a), 1); /* t-2 still names it */
	sql_value(f, "SELECT count(*) FROM uploads WHERE trace_id = 't-1'", NULL, v, sizeof v);
	assert_string_equal(v, "0");

	assert_int_equal(ops->retention_delete(f->s, 1000, 500, blobs, &nblobs), 1);
	assert_int_equal(nblobs, 1);
	assert_int_equal(ops->blob_referenced(f->s, a), 0);
	assert_int_equal(ops->blob_referenced(f->s, b), 1);
	assert_int_equal(ops->retention_delete(f->s, 1000, 500, blobs, &nblobs), 0);
	assert_int_equal(nblobs, 0);
	sql_value(f, "SELECT count(*) FROM decode_queue", NULL, v, sizeof v);
	assert_string_equal(v, "1");
}

static int fleet_device_cb(void *arg, const struct rvs_fleet_device *d)
{
	char *out = arg;
	size_t len = strlen(out);
	snprintf(out + len, 256 - len, "%s:%s:%lld/%lld/%lld/%d;", d->device_id,
		 d->model ? d->model : "-", (long long)d->uploads, (long long)d->charged_since,
		 (long long)d->manual_since, d->has_last_upload);
	return 0;
}

static int fleet_group_cb(void *arg, const char *key, int64_t n, int64_t bytes)
{
	char *out = arg;
	size_t len = strlen(out);
	snprintf(out + len, 256 - len, "%s=%lld/%lld;", key, (long long)n, (long long)bytes);
	return 0;
}

/* The fleet page's reads: devices by latest upload (one without uploads
 * last) with charged and manual counts since a time, uploads per UTC week
 * (Monday), quarantine and skip reasons, the device count. */
static void test_store_fleet_counts_devices_weeks_and_reasons(void **state)
{
	struct fx *f = *state;
	struct rvs_decode_item it[4];
	struct rvs_upload_rec u = {0};
	struct rvs_skip_rec k = {0};
	char out[256] = "", v[32];
	uint64_t n = 0;

	add_device(f, "d-1", 1);
	add_device(f, "d-2", 2);
	add_upload(f, "t-1", "d-1", 1, 0);
	snprintf(u.trace_id, sizeof u.trace_id, "t-2");
	u.device_id = "d-1";
	memset(u.upload_id, 2, 16);
	u.anomaly_kind = 5;
	u.blob_sha256 = "ab";
	u.blob_bytes = 7;
	assert_int_equal(ops->upload_add(f->s, &u), 0);
	/* 2026-11-18 (a Wednesday) 12:00 UTC: week of Monday 2026-11-16. */
	sql_value(f, "UPDATE uploads SET received_at = 1795003200 RETURNING trace_id",
		  "SELECT rv_week_partitions(1795003200 / 604800);"
		  "UPDATE uploads SET received_at = 1795003200 RETURNING trace_id",
		  v, sizeof v);
	assert_true(ops->decode_next_batch(f->s, 0, 1, it, 4) >= 1);
	assert_string_equal(it[0].trace_id, "t-1");
	it[0].rc = -1;
	snprintf(it[0].reason, sizeof it[0].reason, "zstd: bad");
	assert_int_equal(ops->decode_finish(f->s, it, 1), 0);
	k.device_id = "d-2";
	k.reason = "battery";
	assert_int_equal(ops->skip_add(f->s, &k), 0);

	assert_int_equal(ops->fleet_devices(f->s, 1795000000, 5, 10, fleet_device_cb, out), 0);
	assert_string_equal(out, "d-1:m:2/1/1/1;d-2:m:0/0/0/0;");
	out[0] = 0;
	assert_int_equal(ops->fleet_devices(f->s, 1795003201, 5, 1, fleet_device_cb, out), 0);
	assert_string_equal(out, "d-1:m:2/0/0/1;");
	out[0] = 0;
	assert_int_equal(ops->fleet_groups(f->s, RVS_FLEET_WEEKS, fleet_group_cb, out), 0);
	assert_string_equal(out, "2026-11-16=2/7;");
	out[0] = 0;
	assert_int_equal(ops->fleet_groups(f->s, RVS_FLEET_QUARANTINE, fleet_group_cb, out), 0);
	assert_string_equal(out, "zstd: bad=1/0;");
	out[0] = 0;
	assert_int_equal(ops->fleet_groups(f->s, RVS_FLEET_SKIPS, fleet_group_cb, out), 0);
	assert_string_equal(out, "battery=1/0;");
	assert_int_equal(ops->fleet_groups(f->s, 99, fleet_group_cb, out), -EINVAL);
	assert_int_equal(ops->device_count(f->s, &n), 0);
	assert_int_equal(n, 2);
}

/* The fleet counts: one upload of dev (upload id idtag) of anomaly kind with bytes of
 * blob, then received at t (unix s). */
static void fleet_upload(struct fx *f, const char *trace, const char *dev, uint8_t idtag, int kind,
			 uint64_t bytes, int64_t t)
{
	struct rvs_upload_rec u = {0};
	char sql[160], v[64];

	snprintf(u.trace_id, sizeof u.trace_id, "%s", trace);
	u.device_id = dev;
	memset(u.upload_id, idtag, 16);
	u.anomaly_kind = kind;
	u.blob_sha256 = bytes ? "cd" : NULL;
	u.blob_bytes = bytes;
	assert_int_equal(ops->upload_add(f->s, &u), 0);
	snprintf(sql, sizeof sql,
		 "UPDATE uploads SET received_at = %lld WHERE trace_id = '%s' RETURNING trace_id",
		 (long long)t, trace);
	sql_value(f, sql, NULL, v, sizeof v);
	assert_string_equal(v, trace);
}

static int fleet_exact_cb(void *arg, const struct rvs_fleet_device *d)
{
	char *out = arg;
	size_t len = strlen(out);
	snprintf(out + len, 1024 - len, "%s:%lld/%lld/%lld/%lld;", d->device_id,
		 (long long)d->uploads, (long long)d->charged_since, (long long)d->manual_since,
		 d->has_last_upload ? (long long)d->last_upload_at : -1LL);
	return 0;
}

/* The fleet page's devices since `since` (manual kind 5) and weeks, through
 * the store, next to the same figures counted again from uploads by the
 * statements the page ran before migration 11: equal. */
static void fleet_matches_recount(struct fx *f, int64_t since)
{
	char got[1024] = "", want[1024], sqlite_sql[1024], pg_sql[1024];

	assert_int_equal(ops->fleet_devices(f->s, since, 5, 10, fleet_exact_cb, got), 0);
	snprintf(sqlite_sql, sizeof sqlite_sql,
		 "SELECT COALESCE(group_concat(x, ''), '') FROM (SELECT d.device_id || ':' ||"
		 " count(u.trace_id) || '/' || COALESCE(sum(u.received_at >= %1$lld AND"
		 " COALESCE(u.anomaly_kind, 0) != 5), 0) || '/' || COALESCE(sum(u.received_at >="
		 " %1$lld AND COALESCE(u.anomaly_kind, 0) = 5), 0) || '/' ||"
		 " COALESCE(max(u.received_at), -1) || ';' AS x FROM devices d LEFT JOIN uploads u"
		 " ON u.device_id = d.device_id GROUP BY d.device_id"
		 " ORDER BY max(u.received_at) DESC, d.enrolled_at DESC)",
		 (long long)since);
	snprintf(pg_sql, sizeof pg_sql,
		 "SELECT COALESCE(string_agg(x, '' ORDER BY o DESC NULLS LAST, e DESC), '') FROM"
		 " (SELECT d.device_id || ':' || count(u.trace_id) || '/' || count(*) FILTER"
		 " (WHERE u.received_at >= %1$lld AND COALESCE(u.anomaly_kind, 0) <> 5) || '/' ||"
		 " count(*) FILTER (WHERE u.received_at >= %1$lld AND COALESCE(u.anomaly_kind, 0)"
		 " = 5) || '/' || COALESCE(max(u.received_at), -1) || ';' AS x,"
		 " max(u.received_at) AS o, d.enrolled_at AS e FROM devices d LEFT JOIN uploads u"
		 " ON u.device_id = d.device_id GROUP BY d.device_id, d.enrolled_at) q",
		 (long long)since);
	sql_value(f, sqlite_sql, pg_sql, want, sizeof want);
	assert_string_equal(got, want);

	got[0] = 0;
	assert_int_equal(ops->fleet_groups(f->s, RVS_FLEET_WEEKS, fleet_group_cb, got), 0);
	sql_value(
		f,
		"SELECT COALESCE(group_concat(w || '=' || n || '/' || b || ';', ''), '') FROM"
		" (SELECT date(received_at, 'unixepoch', '-6 days', 'weekday 1') AS w,"
		" count(*) AS n, COALESCE(sum(blob_bytes), 0) AS b FROM uploads GROUP BY w"
		" ORDER BY w DESC LIMIT 26)",
		"SELECT COALESCE(string_agg(w || '=' || n || '/' || b || ';', '' ORDER BY w DESC),"
		" '') FROM (SELECT to_char(date_trunc('week', to_timestamp(received_at) AT TIME"
		" ZONE 'UTC'), 'YYYY-MM-DD') AS w, count(*) AS n, COALESCE(sum(blob_bytes), 0)"
		" AS b FROM uploads GROUP BY w ORDER BY w DESC LIMIT 26) q",
		want, sizeof want);
	assert_string_equal(got, want);
}

static void pg_exec(struct fx *f, const char *sql);

/* Issue 16 (/fleet at 100k traces): the counts the fleet page reads —
 * kept at write time on sqlite (migration 11's triggers) — equal a recount
 * of uploads after uploads of several kinds, days and weeks, uploads moved
 * in time, a re-upload (refused: counted once), and retention batches;
 * with `since` inside a day, on a day's first second and before every
 * upload. */
static void test_store_fleet_counts_equal_a_recount_after_uploads_and_retention(void **state)
{
	struct fx *f = *state;
	const int64_t day0 = 1795046400; /* 2026-11-19 00:00 UTC, a Thursday */
	const int64_t sinces[] = {day0 + 1000, day0, day0 - 3 * 86400, 0};
	char blobs[500][65], v[64];
	size_t nblobs = 0;

	int rc;

	/* PostgreSQL: the partitions of the weeks the uploads land in. */
	if (ops == &rvs_store_pg)
		pg_exec(f,
			"SELECT rv_week_partitions(w) FROM generate_series(1795046400 / 604800 - 4,"
			" 1795046400 / 604800 + 2) w");
	add_device(f, "d-1", 1);
	add_device(f, "d-2", 2);
	add_device(f, "d-3", 3); /* never uploads */
	sql_value(f,
		  "UPDATE devices SET enrolled_at = CASE device_id WHEN 'd-1' THEN 10"
		  " WHEN 'd-2' THEN 20 ELSE 30 END RETURNING device_id",
		  NULL, v, sizeof v);
	for (size_t i = 0; i < sizeof sinces / sizeof sinces[0]; i++)
		fleet_matches_recount(f, sinces[i]);

	fleet_upload(f, "t-1", "d-1", 1, 1, 100, day0 - 15 * 86400);
	fleet_upload(f, "t-2", "d-1", 2, 5, 0, day0 - 8 * 86400);
	fleet_upload(f, "t-3", "d-1", 3, 0, 30, day0 - 3 * 86400 + 100);
	fleet_upload(f, "t-4", "d-2", 4, 1, 40, day0 - 1);
	fleet_upload(f, "t-5", "d-2", 5, 5, 50, day0 + 10);
	fleet_upload(f, "t-6", "d-1", 6, 1, 60, day0 + 5000);
	fleet_upload(f, "t-7", "d-1", 7, 5, 70, day0 + 5001);
	fleet_upload(f, "t-8", "d-2", 8, 2, 80, day0 + 2 * 86400 + 7);
	for (size_t i = 0; i < sizeof sinces / sizeof sinces[0]; i++)
		fleet_matches_recount(f, sinces[i]);

	/* A re-upload (same device, same upload id) is refused and counts
	 * nothing; moving an upload to another week moves its counts. */
	add_upload(f, "t-9", "d-1", 6, -EEXIST);
	sql_value(f,
		  "UPDATE uploads SET received_at = received_at - 7 * 86400 WHERE trace_id = 't-8'"
		  " RETURNING trace_id",
		  NULL, v, sizeof v);
	for (size_t i = 0; i < sizeof sinces / sizeof sinces[0]; i++)
		fleet_matches_recount(f, sinces[i]);

	/* Retention: one batch of one, then every upload before day0 (on
	 * PostgreSQL whole expired weeks go: the counts differ, the recount
	 * must still match). */
	rc = ops->retention_delete(f->s, day0, 1, blobs, &nblobs);
	assert_true(ops == &rvs_store_pg ? rc >= 0 : rc == 1);
	for (size_t i = 0; i < sizeof sinces / sizeof sinces[0]; i++)
		fleet_matches_recount(f, sinces[i]);
	rc = ops->retention_delete(f->s, day0, 500, blobs, &nblobs);
	assert_true(ops == &rvs_store_pg ? rc >= 0 : rc >= 3);
	for (size_t i = 0; i < sizeof sinces / sizeof sinces[0]; i++)
		fleet_matches_recount(f, sinces[i]);
	/* Everything older than now: no upload, every device listed. */
	while (ops->retention_delete(f->s, day0 + 30 * 86400, 500, blobs, &nblobs) > 0)
		;
	for (size_t i = 0; i < sizeof sinces / sizeof sinces[0]; i++)
		fleet_matches_recount(f, sinces[i]);
	sql_value(f, "SELECT count(*) FROM uploads", NULL, v, sizeof v);
	assert_string_equal(v, "0");
}

/* Web sessions live until they expire (an expired one is gone at the next
 * session_put), an admin's PBKDF2 parameters come back as admin_put stored
 * them, and a method alert is saved, replaced and read back. */
static void test_store_sessions_admins_and_alerts_round_trip(void **state)
{
	struct fx *f = *state;
	uint8_t h1[32], h2[32], salt[16], hash[32], gsalt[64], ghash[32];
	char user[64], csrf[65], v[32];
	size_t sl = sizeof gsalt;
	unsigned iter = 0;
	int64_t ns = 0;

	memset(h1, 1, 32);
	memset(h2, 2, 32);
	assert_int_equal(ops->session_put(f->s, h1, "root", "c1", 100, 200), 0);
	assert_int_equal(ops->session_get(f->s, h1, 150, user, csrf), 0);
	assert_string_equal(user, "root");
	assert_string_equal(csrf, "c1");
	assert_int_equal(ops->session_get(f->s, h1, 200, user, csrf), -ENOENT);
	assert_int_equal(ops->session_put(f->s, h2, "root", "c2", 300, 400), 0);
	sql_value(f, "SELECT count(*) FROM web_sessions", NULL, v, sizeof v);
	assert_string_equal(v, "1"); /* h1 expired at 200 and was deleted */
	assert_int_equal(ops->session_delete(f->s, h2), 0);
	assert_int_equal(ops->session_get(f->s, h2, 350, user, csrf), -ENOENT);

	memset(salt, 0x5a, sizeof salt);
	memset(hash, 0xa5, sizeof hash);
	assert_int_equal(ops->admin_get(f->s, "root", &iter, gsalt, &sl, ghash), -ENOENT);
	assert_int_equal(ops->admin_put(f->s, "root", 1000, salt, sizeof salt, hash), 0);
	assert_int_equal(ops->admin_get(f->s, "root", &iter, gsalt, &sl, ghash), 0);
	assert_int_equal(iter, 1000);
	assert_int_equal(sl, sizeof salt);
	assert_memory_equal(gsalt, salt, sizeof salt);
	assert_memory_equal(ghash, hash, 32);
	sl = 8;
	assert_int_equal(ops->admin_get(f->s, "root", &iter, gsalt, &sl, ghash), -EBADMSG);

	assert_int_equal(ops->method_alert_put(f->s, "a::b", 5), 0);
	assert_int_equal(ops->method_alert_put(f->s, "a::b", 7), 0);
	sql_value(f, "SELECT p95_threshold_ns FROM method_alerts WHERE method = 'a::b'", NULL, v,
		  sizeof v);
	assert_string_equal(v, "7");
	assert_int_equal(ops->method_alert_get(f->s, "a::b", &ns), 0);
	assert_int_equal(ns, 7);
	assert_int_equal(ops->method_alert_get(f->s, "a::c", &ns), -ENOENT);
}

/* collects users_list / audit_list rows as text. */
static int user_line(void *arg, const char *name, int role, int disabled, int64_t created)
{
	char *out = arg;
	size_t at = strlen(out);
	snprintf(out + at, 256 - at, "%s:%d:%d;", name, role, disabled);
	return 0;
}

/* The id of the (last) row seen. */
static int audit_id(void *arg, const struct rvs_audit_row *r)
{
	*(int64_t *)arg = r->id;
	return 0;
}

static int audit_line(void *arg, const struct rvs_audit_row *r)
{
	char *out = arg;
	size_t at = strlen(out);
	snprintf(out + at, 512 - at, "%lld|%s|%s|%s|%s;", (long long)r->at, r->actor, r->action,
		 r->target, r->detail);
	return 0;
}

/* A new account is an enabled admin; its role and disabled flag change
 * alone and survive a password reset (admin_put again); an unknown account
 * is -ENOENT; the audit log reads back newest first, exactly as written,
 * and refuses updates and deletes. */
static void test_store_user_roles_disable_and_audit_round_trip(void **state)
{
	struct fx *f = *state;
	uint8_t salt[16] = {1}, hash[32] = {2};
	char users[256] = "", audit[512] = "", v[32];
	int role = 0, disabled = -1;
	int64_t id = 0;

	assert_int_equal(ops->user_get(f->s, "ann", &role, &disabled), -ENOENT);
	assert_int_equal(ops->user_set(f->s, "ann", RVS_ROLE_VIEWER, -1), -ENOENT);
	assert_int_equal(ops->admin_put(f->s, "ann", 1000, salt, sizeof salt, hash), 0);
	assert_int_equal(ops->admin_put(f->s, "bob", 1000, salt, sizeof salt, hash), 0);
	assert_int_equal(ops->user_get(f->s, "ann", &role, &disabled), 0);
	assert_int_equal(role, RVS_ROLE_ADMIN);
	assert_int_equal(disabled, 0);
	assert_int_equal(ops->user_set(f->s, "ann", RVS_ROLE_AUTHOR, -1), 0);
	assert_int_equal(ops->user_set(f->s, "bob", 0, 1), 0);
	assert_int_equal(ops->admin_put(f->s, "ann", 2000, salt, sizeof salt, hash), 0);
	assert_int_equal(ops->admin_put(f->s, "bob", 2000, salt, sizeof salt, hash), 0);
	assert_int_equal(ops->users_list(f->s, user_line, users), 0);
	assert_string_equal(users, "ann:2:0;bob:3:1;");
	assert_int_equal(ops->user_set(f->s, "bob", RVS_ROLE_VIEWER, 0), 0);
	assert_int_equal(ops->user_get(f->s, "bob", &role, &disabled), 0);
	assert_int_equal(role, RVS_ROLE_VIEWER);
	assert_int_equal(disabled, 0);

	assert_int_equal(ops->audit_add(f->s, 10, "root", "user.role", "ann", "admin -> author"),
			 0);
	assert_int_equal(ops->audit_add(f->s, 11, "root", "user.disable", "bob'; --", "0 -> 1"), 0);
	assert_int_equal(ops->audit_add(f->s, 12, "eve", "token.create", "abc", "x"), 0);
	assert_int_equal(
		ops->audit_list(f->s, &(struct rvs_audit_filter){.limit = 10}, audit_line, audit),
		0);
	assert_string_equal(audit, "12|eve|token.create|abc|x;"
				   "11|root|user.disable|bob'; --|0 -> 1;"
				   "10|root|user.role|ann|admin -> author;");
	audit[0] = '\0';
	assert_int_equal(
		ops->audit_list(f->s, &(struct rvs_audit_filter){.limit = 1}, audit_line, audit),
		0);
	assert_string_equal(audit, "12|eve|token.create|abc|x;");
	/* Filtered by actor, by action, by time, and paged by id. */
	audit[0] = '\0';
	assert_int_equal(ops->audit_list(f->s,
					 &(struct rvs_audit_filter){.actor = "root", .limit = 1},
					 audit_line, audit),
			 0);
	assert_string_equal(audit, "11|root|user.disable|bob'; --|0 -> 1;");
	assert_int_equal(ops->audit_list(f->s,
					 &(struct rvs_audit_filter){.actor = "root", .limit = 1},
					 audit_id, &id),
			 0);
	audit[0] = '\0';
	assert_int_equal(ops->audit_list(f->s,
					 &(struct rvs_audit_filter){
						 .actor = "root", .before_id = id, .limit = 10},
					 audit_line, audit),
			 0);
	assert_string_equal(audit, "10|root|user.role|ann|admin -> author;");
	audit[0] = '\0';
	assert_int_equal(
		ops->audit_list(f->s,
				&(struct rvs_audit_filter){.action = "user.role", .limit = 10},
				audit_line, audit),
		0);
	assert_string_equal(audit, "10|root|user.role|ann|admin -> author;");
	audit[0] = '\0';
	assert_int_equal(ops->audit_list(f->s,
					 &(struct rvs_audit_filter){.since = 11,
								    .has_since = 1,
								    .until = 12,
								    .has_until = 1,
								    .limit = 10},
					 audit_line, audit),
			 0);
	assert_string_equal(audit, "11|root|user.disable|bob'; --|0 -> 1;");
	/* The list's total: counted up to the cap, the page's bounds ignored. */
	{
		int64_t n = -1;
		assert_int_equal(
			ops->audit_total(f->s, &(struct rvs_audit_filter){.limit = 1}, 100, &n), 0);
		assert_int_equal(n, 3);
		assert_int_equal(ops->audit_total(f->s,
						  &(struct rvs_audit_filter){.actor = "root",
									     .before_id = 11,
									     .limit = 1},
						  100, &n),
				 0);
		assert_int_equal(n, 2);
		assert_int_equal(ops->audit_total(f->s, &(struct rvs_audit_filter){0}, 2, &n), 0);
		assert_int_equal(n, 2); /* capped */
	}
	if (ops == &rvs_store_pg) {
		PGconn *c = PQconnectdb(f->db);
		PGresult *r = PQexec(c, "DELETE FROM audit_log");
		assert_int_not_equal(PQresultStatus(r), PGRES_COMMAND_OK);
		PQclear(r);
		r = PQexec(c, "UPDATE audit_log SET actor = 'x'");
		assert_int_not_equal(PQresultStatus(r), PGRES_COMMAND_OK);
		PQclear(r);
		PQfinish(c);
	} else {
		sqlite3 *db;
		assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
		assert_int_not_equal(sqlite3_exec(db, "DELETE FROM audit_log", NULL, NULL, NULL),
				     SQLITE_OK);
		assert_int_not_equal(
			sqlite3_exec(db, "UPDATE audit_log SET actor = 'x'", NULL, NULL, NULL),
			SQLITE_OK);
		sqlite3_close(db);
	}
	sql_value(f, "SELECT count(*) FROM audit_log", NULL, v, sizeof v);
	assert_string_equal(v, "3");
}

static int token_line(void *arg, const char *id, const char *name, int64_t created,
		      int64_t last_used, int64_t revoked)
{
	char *out = arg;
	size_t at = strlen(out);
	snprintf(out + at, 256 - at, "%s:%s:%lld:%lld:%lld;", id, name, (long long)created,
		 (long long)last_used, (long long)revoked);
	return 0;
}

/* A personal token authenticates its owner with the owner's role (its
 * last use recorded) until it is revoked or the owner is disabled; only
 * its owner revokes it; an unknown hash is -ENOENT. */
static void test_store_tokens_carry_role_until_revoked_or_disabled(void **state)
{
	struct fx *f = *state;
	uint8_t salt[16] = {1}, hash[32] = {2}, t1[32], t2[32];
	char owner[64], list[256] = "";
	int role = 0;

	memset(t1, 0x11, 32);
	memset(t2, 0x22, 32);
	assert_int_equal(ops->admin_put(f->s, "ann", 1000, salt, sizeof salt, hash), 0);
	assert_int_equal(ops->user_set(f->s, "ann", RVS_ROLE_VIEWER, -1), 0);
	assert_int_equal(ops->token_add(f->s, "aaaa", t1, "ann", "laptop", 100), 0);
	assert_int_equal(ops->token_add(f->s, "bbbb", t2, "ann", "ci", 200), 0);
	assert_int_equal(ops->token_add(f->s, "cccc", t2, "ann", "dup", 300), -EEXIST);
	assert_int_equal(ops->token_auth(f->s, t1, 150, owner, &role), 0);
	assert_string_equal(owner, "ann");
	assert_int_equal(role, RVS_ROLE_VIEWER);
	assert_int_equal(ops->token_revoke(f->s, "bob", "aaaa", 160), -ENOENT);
	assert_int_equal(ops->token_revoke(f->s, "ann", "aaaa", 170), 0);
	assert_int_equal(ops->token_revoke(f->s, "ann", "aaaa", 171), -ENOENT);
	assert_int_equal(ops->token_auth(f->s, t1, 180, owner, &role), -ENOENT);
	assert_int_equal(ops->token_auth(f->s, t2, 190, owner, &role), 0);
	assert_int_equal(ops->user_set(f->s, "ann", -1, 1), 0);
	assert_int_equal(ops->token_auth(f->s, t2, 195, owner, &role), -ENOENT);
	assert_int_equal(ops->tokens_list(f->s, "ann", token_line, list), 0);
	assert_string_equal(list, "bbbb:ci:200:190:-1;aaaa:laptop:100:150:170;");
}

struct pub_seen {
	char specs[256];
	uint64_t recorded;
	int fail; /* publish's result */
};

static int seen_spec(void *arg, const char *spec, size_t len)
{
	struct pub_seen *p = arg;
	size_t at = strlen(p->specs);
	snprintf(p->specs + at, sizeof p->specs - at, "%.*s;", (int)len, spec);
	return 0;
}

static int seen_publish(void *arg, uint64_t recorded, uint64_t *version)
{
	struct pub_seen *p = arg;
	p->recorded = recorded;
	*version = recorded + 10;
	return p->fail;
}

static int list_row(void *arg, const char *spec, size_t len, int64_t created, int64_t updated,
		    int64_t ended)
{
	char *out = arg;
	size_t at = strlen(out);
	snprintf(out + at, 256 - at, "%.*s@%lld/%lld/%lld;", (int)len, spec, (long long)created,
		 (long long)updated, (long long)ended);
	return 0;
}

static int anomaly_row(void *arg, const struct rvs_anomaly_row *r)
{
	char *out = arg;
	size_t at = strlen(out);
	snprintf(out + at, 256 - at, "%s:%s:%s:%d;", r->device_id, r->app_id ? r->app_id : "-",
		 r->model ? r->model : "-", r->kind);
	return 0;
}

/* A campaign change and its publication are one transaction: a duplicate
 * id, a missing campaign or a failed publication changes nothing; a
 * published one records its version.  Active specs reach the publisher by
 * id; the list puts active campaigns first. */
static void test_store_campaign_change_publishes_in_one_transaction(void **state)
{
	struct fx *f = *state;
	struct pub_seen seen = {"", 0, 0};
	struct rvs_publish_cb cb = {seen_spec, seen_publish, &seen};
	struct rvs_skip_rec k = {0};
	char out[256] = "";
	uint64_t v = 99;

	assert_int_equal(ops->policy_version(f->s, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(ops->campaign_change(f->s, RVS_CAMPAIGN_CREATE, "b", "{\"id\":\"b\"}",
					      "b created", 100, 65, &cb),
			 0);
	assert_string_equal(seen.specs, "{\"id\":\"b\"};");
	assert_int_equal(ops->policy_version(f->s, &v), 0);
	assert_int_equal(v, 10);
	seen.specs[0] = 0;
	assert_int_equal(ops->campaign_change(f->s, RVS_CAMPAIGN_CREATE, "a", "{\"id\":\"a\"}",
					      "a created", 101, 65, &cb),
			 0);
	assert_string_equal(seen.specs, "{\"id\":\"a\"};{\"id\":\"b\"};");
	assert_int_equal(seen.recorded, 10);
	assert_int_equal(
		ops->campaign_change(f->s, RVS_CAMPAIGN_CREATE, "a", "{}", "again", 102, 65, &cb),
		-EEXIST);
	assert_int_equal(
		ops->campaign_change(f->s, RVS_CAMPAIGN_UPDATE, "zz", "{}", "none", 102, 65, &cb),
		-ENOENT);
	seen.fail = -EIO;
	assert_int_equal(
		ops->campaign_change(f->s, RVS_CAMPAIGN_END, "b", NULL, "b ended", 103, 65, &cb),
		-EIO);
	seen.fail = 0;
	assert_int_equal(
		ops->campaign_change(f->s, RVS_CAMPAIGN_END, "a", NULL, "a ended", 104, 65, &cb),
		0);
	assert_int_equal(
		ops->campaign_change(f->s, RVS_CAMPAIGN_END, "a", NULL, "a ended", 105, 65, &cb),
		-ENOENT);
	assert_int_equal(ops->policy_version(f->s, &v), 0);
	assert_int_equal(v, 30);
	assert_int_equal(ops->campaigns_list(f->s, list_row, out), 0);
	assert_string_equal(out, "{\"id\":\"b\"}@100/100/-1;{\"id\":\"a\"}@101/104/104;");

	add_device(f, "d-1", 1);
	add_upload(f, "t-1", "d-1", 1, 0);
	k.device_id = "d-1";
	k.reason = "battery";
	k.anomaly_kind = 3;
	assert_int_equal(ops->skip_add(f->s, &k), 0);
	out[0] = 0;
	assert_int_equal(ops->anomalies_since(f->s, 0, 10, anomaly_row, out), 0);
	assert_string_equal(out, "d-1:app:-:0;d-1:-:m:3;");
	out[0] = 0;
	assert_int_equal(ops->anomalies_since(f->s, 0, 1, anomaly_row, out), 0);
	assert_string_equal(out, "d-1:app:-:0;");
}

static int skip_row_cb(void *arg, const struct rvs_skip_row *r)
{
	char *out = arg;
	size_t at = strlen(out);
	snprintf(out + at, 256 - at, "%s/%s/%lld/%lld;", r->reason, r->has_kind ? "k" : "-",
		 (long long)r->anomaly_kind, (long long)(r->count ? r->count : r->severity));
	return 0;
}

/* Skip reports by reason and kind (most first, then reason, a NULL kind
 * first) and the newest reports (same second: the later arrival first),
 * filtered by app and received_at. */
static void test_store_skips_grouped_and_newest_first(void **state)
{
	struct fx *f = *state;
	static const char *const reasons[] = {"quota", "battery", "quota", "battery", "quota"};
	char out[256] = "";
	struct rvs_skip_filter all = {0}, app = {0}, later = {0};

	add_device(f, "d-1", 1);
	for (int i = 0; i < 5; i++) {
		struct rvs_skip_rec k = {0};
		k.device_id = "d-1";
		memset(k.report_id, i + 1, 16);
		k.reason = reasons[i];
		k.app_id = i == 4 ? "other" : "app";
		k.anomaly_kind = i == 3 ? 0 : 2;
		k.severity = i;
		assert_int_equal(ops->skip_add(f->s, &k), 0);
	}
	sql_value(f, "UPDATE skips SET anomaly_kind = NULL WHERE severity = 3 RETURNING reason",
		  NULL, out, sizeof out);
	out[0] = 0;
	assert_int_equal(ops->skips_by_reason(f->s, &all, skip_row_cb, out), 0);
	assert_string_equal(out, "quota/k/2/3;battery/-/0/1;battery/k/2/1;");
	out[0] = 0;
	assert_int_equal(ops->skips_recent(f->s, &all, 3, skip_row_cb, out), 0);
	assert_string_equal(out, "quota/k/2/4;battery/-/0/3;quota/k/2/2;");
	app.app = "other";
	out[0] = 0;
	assert_int_equal(ops->skips_recent(f->s, &app, 10, skip_row_cb, out), 0);
	assert_string_equal(out, "quota/k/2/4;");
	later.has_since = 1;
	later.since = (int64_t)time(NULL) + 3600;
	out[0] = 0;
	assert_int_equal(ops->skips_by_reason(f->s, &later, skip_row_cb, out), 0);
	assert_string_equal(out, "");
	later.has_since = 0;
	later.has_until = 1;
	later.until = (int64_t)time(NULL) + 3600;
	assert_int_equal(ops->skips_recent(f->s, &later, 1, skip_row_cb, out), 0);
	assert_string_equal(out, "quota/k/2/4;");
}

/* Runs sql (no result wanted) on f's PostgreSQL database. */
static void pg_exec(struct fx *f, const char *sql)
{
	PGconn *c = PQconnectdb(f->db);
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
}

/* SQL on this run's backend: sqlite_sql (foreign keys on) or pg_sql. */
static void backend_exec(struct fx *f, const char *sqlite_sql, const char *pg_sql)
{
	sqlite3 *db;
	char sql[1024];
	if (ops == &rvs_store_pg)
		return pg_exec(f, pg_sql);
	snprintf(sql, sizeof sql, "PRAGMA foreign_keys=ON; %s", sqlite_sql);
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_close(db);
}

/* Migration 7 (PostgreSQL 3): the triggers sum the call-path rows of two
 * traces per (bucket, node) and take each out again when its trace goes
 * (the cascade from traces in sqlite; in pg, where retention drops the
 * week's partitions, the rows deleted as retention deletes them). */
static void test_store_agg_sums_follow_trace_paths(void **state)
{
	struct fx *f = *state;
	static const char rows[] =
		"INSERT INTO agg_buckets (app_id, app_version, model, anomaly_kind, day)"
		" VALUES ('app', '1.0', 'm', 1, 0);"
		"INSERT INTO agg_nodes (app_id, parent, method, depth) VALUES ('app', 0, '', 0);"
		"INSERT INTO trace_paths (trace_id, node, bucket, calls, self_ns, incl_ns) VALUES"
		" ('t-a1', 1, 1, 1, 10, 30), ('t-a2', 1, 1, 2, 5, 50);";
	static const char sums[] = "SELECT traces || ' ' || calls || ' ' || self_ns || ' ' ||"
				   " incl_ns FROM agg_sums WHERE bucket = 1 AND node = 1";
	char v[64], sql[sizeof rows + 200];

	add_device(f, "d-agg", 9);
	add_upload(f, "t-a1", "d-agg", 1, 0);
	add_upload(f, "t-a2", "d-agg", 2, 0);
	snprintf(sql, sizeof sql,
		 "INSERT INTO traces (trace_id, received_at, decoded_at) VALUES"
		 " ('t-a1', 0, 0), ('t-a2', 0, 0); %s",
		 rows);
	backend_exec(f, sql, rows); /* PostgreSQL: no foreign key into traces */
	sql_value(f, sums, NULL, v, sizeof v);
	assert_string_equal(v, "2 3 15 80");
	backend_exec(f, "DELETE FROM traces WHERE trace_id = 't-a2'",
		     "DELETE FROM trace_paths WHERE trace_id = 't-a2'");
	sql_value(f, sums, NULL, v, sizeof v);
	assert_string_equal(v, "1 1 10 30");
	backend_exec(f, "DELETE FROM traces WHERE trace_id = 't-a1'",
		     "DELETE FROM trace_paths WHERE trace_id = 't-a1'");
	sql_value(f, "SELECT count(*) FROM agg_sums", NULL, v, sizeof v);
	assert_string_equal(v, "0");
}

/* sqlite's migration 5 triggers and PostgreSQL's traces_sig keep the
 * per-signature totals: setting traces.signature counts a trace in (the
 * chain taken from its chains), changing it moves it, deleting it counts it
 * out, and a total reaching 0 removes its row. */
static void test_store_signature_totals_follow_traces(void **state)
{
	struct fx *f = *state;
	static const char rows[] =
		"INSERT INTO traces (trace_id, app_version, received_at, decoded_at) VALUES"
		" ('t-s1', '1.0', 0, 0), ('t-s2', '1.0', 0, 0);"
		"INSERT INTO trace_chains (trace_id, kind, rank, signature, chain, depth) VALUES"
		" ('t-s1', 'anomaly', 1, 'aa', 'main;f;', 2),"
		" ('t-s2', 'anomaly', 1, 'aa', 'main;f;', 2);"
		"UPDATE traces SET signature = 'aa';";
	/* PostgreSQL: week 0's partitions, and chains carry their week. */
	static const char pg_rows[] =
		"SELECT rv_week_partitions(0);"
		"INSERT INTO traces (trace_id, app_version, received_at, decoded_at) VALUES"
		" ('t-s1', '1.0', 0, 0), ('t-s2', '1.0', 0, 0);"
		"INSERT INTO trace_chains (trace_id, kind, rank, signature, chain, depth,"
		" received_at) VALUES ('t-s1', 'anomaly', 1, 'aa', 'main;f;', 2, 0),"
		" ('t-s2', 'anomaly', 1, 'aa', 'main;f;', 2, 0);"
		"UPDATE traces SET signature = 'aa';";
	static const char aa[] = "SELECT coalesce((SELECT traces || ' ' || coalesce(chain, '-')"
				 " FROM signatures WHERE signature = 'aa'), 'none')";
	static const char bb[] = "SELECT coalesce((SELECT traces || ' ' || coalesce(chain, '-')"
				 " FROM signatures WHERE signature = 'bb'), 'none')";
	static const char week[] = "SELECT coalesce((SELECT traces FROM signature_counts WHERE"
				   " signature = 'aa' AND week = 0 AND app_version = '1.0'), 0)";
	char v[64];

	add_device(f, "d-sig", 9);
	add_upload(f, "t-s1", "d-sig", 1, 0);
	add_upload(f, "t-s2", "d-sig", 2, 0);
	backend_exec(f, rows, pg_rows);
	sql_value(f, aa, NULL, v, sizeof v);
	assert_string_equal(v, "2 main;f;");
	sql_value(f, week, NULL, v, sizeof v);
	assert_string_equal(v, "2");
	backend_exec(f, "UPDATE traces SET signature = 'bb' WHERE trace_id = 't-s2'",
		     "UPDATE traces SET signature = 'bb' WHERE trace_id = 't-s2'");
	sql_value(f, aa, NULL, v, sizeof v);
	assert_string_equal(v, "1 main;f;");
	sql_value(f, bb, NULL, v, sizeof v);
	assert_string_equal(v, "1 -");
	backend_exec(f, "DELETE FROM traces WHERE trace_id = 't-s1'",
		     "DELETE FROM traces WHERE trace_id = 't-s1'");
	sql_value(f, aa, NULL, v, sizeof v);
	assert_string_equal(v, "none");
	sql_value(f, week, NULL, v, sizeof v);
	assert_string_equal(v, "0");
	sql_value(f, bb, NULL, v, sizeof v);
	assert_string_equal(v, "1 -");
}

/* One trace's rows as the decoder hands them to index_write: two methods,
 * the anomaly chain and a top chain, one unresolved build id. */
static void index_rows_of(struct rvs_index_trace *v, const struct rvs_decode_item *it,
			  const char *second_method)
{
	static struct rvs_index_method m[2];
	static struct rvs_index_chain c[2] = {
		{"anomaly", 1, "00000000000000aa", "main;f;", 2, -1, -1},
		{"top", 1, "00000000000000bb", "main;g;", 2, 5, 9},
	};
	static const char *const bids[] = {"abcd"};

	m[0] = (struct rvs_index_method){"main", 1, 2, 10, 2, 0, 0, 0};
	m[1] = (struct rvs_index_method){second_method, 3, 8, 8, 1, 0, 0, 0};
	memset(v, 0, sizeof *v);
	v->trace_id = it->trace_id;
	v->lease = it->lease;
	v->decoded_at = 1000;
	v->anomaly_name = "jank";
	v->duration_ns = 10;
	v->nmethods = 2;
	v->dropped = -1;
	v->methods = m;
	v->nmethod_rows = 2;
	v->chains = c;
	v->nchains = 2;
	v->anomaly_signature = v->signature = "00000000000000aa";
	v->issue = "00000000000000aa";
	v->unresolved_replace = 1;
	v->unresolved = bids;
	v->nunresolved = 1;
}

/* index_write on each backend: the trace's rows, its signature counted
 * once, and a second write (a re-decode) replacing the rows, not adding. */
static void test_store_index_write_replaces_rows_and_counts_signature_once(void **state)
{
	struct fx *f = *state;
	struct rvs_index_lane *l = NULL;
	struct rvs_index_meta meta;
	struct rvs_decode_item it[2];
	struct rvs_index_trace v;
	char out[128];

	add_device(f, "d-ix", 3);
	add_upload(f, "t-ix", "d-ix", 1, 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 2), 1);
	assert_int_equal(ops->index_lane_open(f->s, &l), 0);
	assert_int_equal(ops->index_upload_meta(l, "t-ix", &meta), 0);
	assert_null(meta.summary);
	assert_int_equal(ops->index_upload_meta(l, "t-none", &meta), -ENOENT);
	for (int pass = 0; pass < 2; pass++) {
		index_rows_of(&v, &it[0], pass ? "h" : "g");
		ops->index_write(l, &v, 1);
		assert_int_equal(v.rc, 0);
	}
	sql_value(f,
		  "SELECT app_id || ' ' || device_id || ' ' || anomaly_name || ' ' || duration_ns"
		  " || ' ' || signature || ' ' || issue || ' ' || coalesce(cast(dropped AS TEXT), "
		  "'-')"
		  " FROM traces",
		  NULL, out, sizeof out);
	assert_string_equal(out, "app d-ix jank 10 00000000000000aa 00000000000000aa -");
	sql_value(f,
		  "SELECT (SELECT count(*) FROM trace_methods) || ' ' || (SELECT method FROM"
		  " trace_methods WHERE self_rank = 1) || ' ' || (SELECT count(*) FROM"
		  " trace_chains) || ' ' || (SELECT count(*) FROM trace_unresolved)",
		  NULL, out, sizeof out);
	assert_string_equal(out, "2 h 2 1");
	sql_value(f, "SELECT traces || ' ' || chain FROM signatures", NULL, out, sizeof out);
	assert_string_equal(out, "1 main;f;");
	ops->index_lane_close(l);
}

/* One index batch of three traces whose middle one fails on its own (a
 * method named twice where that is an error): the other two are written
 * whole, the middle one leaves no row, on each backend (PostgreSQL sends
 * the batch's statements in pipelines: the failure must be rolled back to
 * its trace's savepoint and the traces after it written).  Then a
 * re-decode of the batch (the probe finds the old rows and deletes them
 * first), and the uploads' read at once where the backend has it. */
static void test_store_index_batch_fails_one_trace_alone(void **state)
{
	static const struct rvs_index_method twice[2] = {{"main", 1, 2, 10, 1, 0, 0, 0},
							 {"main", 1, 2, 10, 2, 0, 0, 0}};
	static const char *const ids[] = {"t-b0", "t-none", "t-b2"};
	struct fx *f = *state;
	struct rvs_index_lane *l = NULL;
	struct rvs_decode_item it[4];
	struct rvs_index_trace v[3];
	struct rvs_index_meta m[3];
	int rc[3];
	char out[128];

	add_device(f, "d-b", 3);
	add_upload(f, "t-b0", "d-b", 1, 0);
	add_upload(f, "t-b1", "d-b", 2, 0);
	add_upload(f, "t-b2", "d-b", 3, 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 4), 3);
	assert_string_equal(it[0].trace_id, "t-b0");
	assert_string_equal(it[2].trace_id, "t-b2");
	assert_int_equal(ops->index_lane_open(f->s, &l), 0);
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < 3; i++)
			index_rows_of(&v[i], &it[i], "g");
		v[1].methods = twice;
		ops->index_write(l, v, 3);
		assert_int_equal(v[0].rc, 0);
		assert_int_not_equal(v[1].rc, 0);
		assert_non_null(strstr(v[1].reason, "index: "));
		assert_int_equal(v[2].rc, 0);
		sql_value(f,
			  "SELECT (SELECT count(*) FROM traces) || ' ' || (SELECT count(*) FROM"
			  " trace_methods) || ' ' || (SELECT count(*) FROM trace_chains) || ' ' ||"
			  " (SELECT count(*) FROM trace_unresolved) || ' ' || (SELECT count(*) FROM"
			  " traces WHERE trace_id = 't-b1') || ' ' || (SELECT traces FROM "
			  "signatures)",
			  NULL, out, sizeof out);
		assert_string_equal(out, "2 4 4 2 0 2");
	}
	if (ops->index_upload_metas) {
		assert_int_equal(ops->index_upload_metas(l, ids, 3, m, rc), 0);
		assert_int_equal(rc[0], 0);
		assert_int_equal(rc[1], -ENOENT);
		assert_int_equal(rc[2], 0);
		assert_null(m[0].summary);
		assert_null(m[2].summary);
	}
	ops->index_lane_close(l);
}

/* trace_capture names the blob of a decoded trace only: not of an upload
 * still waiting for its first decode, nor of one without a blob. */
static void test_store_trace_capture_only_of_decoded_traces(void **state)
{
	struct fx *f = *state;
	struct rvs_upload_rec u = {0};
	struct rvs_decode_item it[2];
	struct rvs_index_lane *l = NULL;
	struct rvs_index_trace v;
	char blob[65];
	int comp = -1;
	uint64_t size = 0;

	add_device(f, "d-cap", 4);
	snprintf(u.trace_id, sizeof u.trace_id, "t-cap");
	u.device_id = "d-cap";
	memset(u.upload_id, 5, 16);
	u.compression = 1;
	u.payload_size = 4096;
	u.blob_sha256 = "ab00000000000000000000000000000000000000000000000000000000000000";
	u.blob_bytes = 10;
	assert_int_equal(ops->upload_add(f->s, &u), 0);
	assert_int_equal(ops->trace_capture(f->s, "t-cap", blob, &comp, &size), -ENOENT);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 2), 1);
	assert_int_equal(ops->index_lane_open(f->s, &l), 0);
	index_rows_of(&v, &it[0], "g");
	ops->index_write(l, &v, 1);
	assert_int_equal(v.rc, 0);
	ops->index_lane_close(l);
	/* Indexed, its outcome not yet recorded: as a re-decode's, readable. */
	assert_int_equal(ops->trace_capture(f->s, "t-cap", blob, &comp, &size), 0);
	assert_string_equal(blob, u.blob_sha256);
	assert_int_equal(comp, 1);
	assert_int_equal(size, 4096);
	assert_int_equal(ops->decode_finish(f->s, it, 1), 0);
	assert_int_equal(ops->trace_capture(f->s, "t-cap", blob, &comp, &size), 0);
	assert_int_equal(ops->trace_capture(f->s, "t-none", blob, &comp, &size), -ENOENT);
}

/* What the reads' callbacks saw: "part:name=value;" per column, and the
 * row count. */
struct seen {
	char text[2048];
	size_t rows;
};

static int seen_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	struct seen *x = arg;
	size_t len = strlen(x->text);

	x->rows++;
	for (size_t i = 0; i < n; i++) {
		char v[64];
		if (cols[i].type == RVS_COL_INT)
			snprintf(v, sizeof v, "%lld", (long long)cols[i].i);
		else
			snprintf(v, sizeof v, "%s",
				 cols[i].type == RVS_COL_TEXT ? cols[i].text : "null");
		len += (size_t)snprintf(x->text + len, sizeof x->text - len, "%d:%s=%s;", part,
					cols[i].name, v);
		assert_true(len < sizeof x->text);
	}
	return 0;
}

/* The JSON API's reads on each backend: the trace list (filters and the
 * keyset cursor), one trace's rows, the signature totals with their weeks;
 * integers come back as integers, names as query.c's JSON keys. */
static void test_store_reads_list_trace_and_signatures(void **state)
{
	struct fx *f = *state;
	struct rvs_index_lane *l = NULL;
	struct rvs_decode_item it[4];
	struct rvs_index_trace v;
	struct rvs_trace_filter tf = {.limit = 10};
	struct seen x = {0};
	char first[16];

	add_device(f, "d-rd", 6);
	add_upload(f, "t-r1", "d-rd", 1, 0);
	add_upload(f, "t-r2", "d-rd", 2, 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 4), 2);
	assert_int_equal(ops->index_lane_open(f->s, &l), 0);
	for (int i = 0; i < 2; i++) {
		index_rows_of(&v, &it[i], "g");
		ops->index_write(l, &v, 1);
		assert_int_equal(v.rc, 0);
	}
	ops->index_lane_close(l);

	assert_int_equal(ops->traces_list(f->s, &tf, seen_row, &x), 0);
	assert_int_equal(x.rows, 2);
	assert_non_null(strstr(x.text, "0:trace_id=t-r2;"));
	assert_non_null(strstr(x.text, "0:duration_ns=10;"));
	assert_true(strstr(x.text, "t-r2") < strstr(x.text, "t-r1")); /* newest first */
	/* The cursor: the first row's rowid_ lists the rows below it. */
	assert_int_equal(sscanf(x.text, "0:rowid_=%15[0-9];", first), 1);
	tf.cursor = strtoll(first, NULL, 10);
	tf.has_cursor = 1;
	memset(&x, 0, sizeof x);
	assert_int_equal(ops->traces_list(f->s, &tf, seen_row, &x), 0);
	assert_int_equal(x.rows, 1);
	assert_non_null(strstr(x.text, "0:trace_id=t-r1;"));
	tf.has_cursor = 0;
	tf.method = "nope";
	memset(&x, 0, sizeof x);
	assert_int_equal(ops->traces_list(f->s, &tf, seen_row, &x), 0);
	assert_int_equal(x.rows, 0);
	tf.method = NULL;
	tf.signature = "00000000000000bb"; /* a top chain's */
	tf.app = "app";
	memset(&x, 0, sizeof x);
	assert_int_equal(ops->traces_list(f->s, &tf, seen_row, &x), 0);
	assert_int_equal(x.rows, 2);
	/* The total: every match (the cursor ignored), counted up to limit. */
	tf.count = 1;
	tf.cursor = 1 << 30;
	tf.has_cursor = 1;
	memset(&x, 0, sizeof x);
	assert_int_equal(ops->traces_list(f->s, &tf, seen_row, &x), 0);
	assert_string_equal(x.text, "0:total=2;");
	tf.limit = 1;
	memset(&x, 0, sizeof x);
	assert_int_equal(ops->traces_list(f->s, &tf, seen_row, &x), 0);
	assert_string_equal(x.text, "0:total=1;"); /* capped */
	tf.count = tf.has_cursor = 0;
	tf.limit = 10;
	/* The sorted list's total, by each key, with a cursor ignored. */
	for (int k = RVS_SORT_RECEIVED; k <= RVS_SORT_SELF; k++) {
		struct rvs_sorted_query sq = {.key = k,
					      .desc = 1,
					      .method = k == RVS_SORT_SELF ? "main" : NULL,
					      .has_cursor = 1,
					      .cursor_value = -5,
					      .cursor_tiebreak = -5,
					      .limit = 10,
					      .count = 1};
		memset(&x, 0, sizeof x);
		assert_int_equal(ops->traces_sorted(f->s, &sq, seen_row, &x), 0);
		assert_string_equal(x.text, "0:total=2;");
		sq.limit = 1;
		memset(&x, 0, sizeof x);
		assert_int_equal(ops->traces_sorted(f->s, &sq, seen_row, &x), 0);
		assert_string_equal(x.text, "0:total=1;");
	}
	{
		int64_t n = -1;
		assert_int_equal(ops->signatures_total(f->s, &n), 0);
		assert_true(n >= 1);
	}

	memset(&x, 0, sizeof x);
	assert_int_equal(ops->trace_read(f->s, "t-r1", seen_row, &x), 0);
	assert_int_equal(x.rows, 1 + 2 + 2);
	assert_non_null(strstr(x.text, "0:state=pending_decode;"));
	assert_non_null(strstr(x.text, "0:quarantine_reason=null;"));
	assert_non_null(strstr(x.text, "1:rank=1;1:method=g;1:calls=3;"));
	assert_non_null(strstr(x.text, "2:kind=anomaly;2:rank=1;2:signature=00000000000000aa;"));
	assert_int_equal(ops->trace_read(f->s, "t-none", seen_row, &x), -ENOENT);

	/* The method page: both traces have "main" (self 2, incl 10). */
	memset(&x, 0, sizeof x);
	assert_int_equal(
		ops->method_read(f->s, RVS_METHOD_COUNT, "main", 0, 0, NULL, NULL, seen_row, &x),
		0);
	assert_string_equal(x.text, "0:n=2;");
	memset(&x, 0, sizeof x);
	assert_int_equal(
		ops->method_read(f->s, RVS_METHOD_INCL_NTH, "main", 1, 2, NULL, NULL, seen_row, &x),
		0);
	assert_string_equal(x.text, "0:incl_ns=10;");
	memset(&x, 0, sizeof x);
	assert_int_equal(
		ops->method_read(f->s, RVS_METHOD_SELF_NTH, "main", 2, 2, NULL, NULL, seen_row, &x),
		0);
	assert_int_equal(x.rows, 0); /* past the end */
	memset(&x, 0, sizeof x);
	assert_int_equal(ops->method_read(f->s, RVS_METHOD_BY_VERSION, "main", 10, 2, NULL, NULL,
					  seen_row, &x),
			 0);
	/* cs, ci: no CPU data, NULL. */
	assert_string_equal(x.text, "0:v=;0:s=2;0:i=10;0:cs=null;0:ci=null;"
				    "0:v=;0:s=2;0:i=10;0:cs=null;0:ci=null;");
	/* No trace with CPU data: one row of zeros, filtered or not. */
	memset(&x, 0, sizeof x);
	assert_int_equal(
		ops->method_read(f->s, RVS_METHOD_CPU, "main", 0, 2, NULL, NULL, seen_row, &x), 0);
	assert_string_equal(x.text, "0:n=0;0:s=0;0:i=0;0:cs=0;0:ci=0;");
	memset(&x, 0, sizeof x);
	assert_int_equal(
		ops->method_read(f->s, RVS_METHOD_CPU, "main", 0, 2, "app", "9.9", seen_row, &x),
		0);
	assert_string_equal(x.text, "0:n=0;0:s=0;0:i=0;0:cs=0;0:ci=0;");
	memset(&x, 0, sizeof x);
	assert_int_equal(
		ops->method_read(f->s, RVS_METHOD_TRACES, "main", 1, 2, NULL, NULL, seen_row, &x),
		0);
	assert_int_equal(x.rows, 1);
	assert_non_null(strstr(x.text, "0:trace_id=t-r2;"));
	assert_non_null(strstr(x.text, "0:calls=1;0:self_ns=2;0:incl_ns=10;"));
	/* Filtered by app (both traces are app "app"'s) and by a version
	 * neither has: every filtered part honours it, on both backends. */
	memset(&x, 0, sizeof x);
	assert_int_equal(
		ops->method_read(f->s, RVS_METHOD_SAMPLES, "main", 0, 0, "app", NULL, seen_row, &x),
		0);
	assert_string_equal(x.text, "0:s=2;0:i=10;0:s=2;0:i=10;");
	memset(&x, 0, sizeof x);
	assert_int_equal(ops->method_read(f->s, RVS_METHOD_BY_MODEL, "main", 10, 2, "app", NULL,
					  seen_row, &x),
			 0);
	assert_int_equal(x.rows, 2);
	for (int part = RVS_METHOD_BY_VERSION; part <= RVS_METHOD_SAMPLES; part++) {
		memset(&x, 0, sizeof x);
		assert_int_equal(
			ops->method_read(f->s, part, "main", 10, 2, NULL, "9.9", seen_row, &x), 0);
		assert_int_equal(x.rows, 0);
	}

	memset(&x, 0, sizeof x);
	assert_int_equal(ops->signatures_read(f->s, 0, 10, seen_row, &x), 0);
	/* One total, then its one week (received now: the week varies). */
	assert_int_equal(x.rows, 2);
	assert_non_null(strstr(x.text, "0:signature=00000000000000aa;0:traces=2;0:chain=main;f;;"
				       "1:week_start="));
	assert_non_null(strstr(x.text, ";1:app_version=;1:traces=2;"));

	/* Weekly: one row (signature, its Monday, no version, 2 traces); only
	 * the wanted signatures, a trace counted by its own signature. */
	{
		static const char *const aa[] = {"00000000000000aa"};
		static const char *const bb[] = {"00000000000000bb"};
		const char *week;
		memset(&x, 0, sizeof x);
		assert_int_equal(ops->signatures_weekly(f->s, 0, NULL, 0, seen_row, &x), 0);
		assert_int_equal(x.rows, 1);
		assert_non_null(week = strstr(x.text, "0:signature=00000000000000aa;0:week="));
		week += strlen("0:signature=00000000000000aa;0:week=");
		assert_true(strlen(week) > 10 && week[4] == '-' && week[7] == '-' &&
			    week[10] == ';');
		assert_non_null(strstr(x.text, ";0:app_version=null;0:traces=2;"));
		memset(&x, 0, sizeof x);
		assert_int_equal(ops->signatures_weekly(f->s, 0, aa, 1, seen_row, &x), 0);
		assert_int_equal(x.rows, 1);
		memset(&x, 0, sizeof x);
		assert_int_equal(ops->signatures_weekly(f->s, 0, bb, 1, seen_row, &x), 0);
		assert_int_equal(x.rows, 0);
		memset(&x, 0, sizeof x);
		assert_int_equal(ops->signatures_weekly(f->s, INT64_MAX, NULL, 0, seen_row, &x), 0);
		assert_int_equal(x.rows, 0);
	}
}

/* PostgreSQL writes a trace only under the lease it was handed: a decoder
 * whose lease expired and was taken by another writes nothing. */
static void test_store_pg_index_write_needs_the_decode_lease(void **state)
{
	struct fx *f = *state;
	struct rvs_index_lane *l = NULL;
	struct rvs_decode_item a[2], b[2];
	struct rvs_index_trace v;
	char out[64];

	add_device(f, "d-ix", 3);
	add_upload(f, "t-ix", "d-ix", 1, 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, a, 2), 1);
	pg_exec(f, "UPDATE decode_queue SET leased_until = now() - interval '1 second'");
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, b, 2), 1);
	assert_int_equal(ops->index_lane_open(f->s, &l), 0);
	index_rows_of(&v, &a[0], "g");
	ops->index_write(l, &v, 1);
	assert_int_equal(v.rc, -ESTALE);
	assert_non_null(strstr(v.reason, "lease"));
	sql_value(f, NULL, "SELECT count(*) FROM traces", out, sizeof out);
	assert_string_equal(out, "0");
	index_rows_of(&v, &b[0], "g");
	ops->index_write(l, &v, 1);
	assert_int_equal(v.rc, 0);
	sql_value(f, NULL, "SELECT count(*) FROM traces", out, sizeof out);
	assert_string_equal(out, "1");
	ops->index_lane_close(l);
}

/* Two "nodes" (store handles) on one database: the device's upload id is
 * the key on both, so a retry that reaches the other node is a duplicate. */
static void test_store_pg_duplicate_across_nodes_is_eexist(void **state)
{
	struct fx *f = *state;
	struct rvs_store *node2;
	struct rvs_upload_rec u = {0};
	uint8_t uid[16];
	char trace[40];

	assert_int_equal(ops->open(f->db, &node2), 0);
	add_device(f, "d-one", 1);
	add_upload(f, "t-1", "d-one", 7, 0);
	snprintf(u.trace_id, sizeof u.trace_id, "t-1");
	u.device_id = "d-one";
	memset(u.upload_id, 7, 16);
	assert_int_equal(ops->upload_add(node2, &u), -EEXIST);
	memset(uid, 7, 16);
	assert_int_equal(ops->upload_find(node2, "d-one", uid, trace), 0);
	assert_string_equal(trace, "t-1");
	ops->close(node2);
}

/* The decoded-trace index migration (store_pg.c 5) carries what the search
 * migration (4) adds to traces when it finds one: 4 ran before traces
 * existed, so 5 creates the issue and device_id columns and the issues and
 * worst-trace sort indexes itself. */
static void test_store_pg_traces_migration_has_search_columns_and_indexes(void **state)
{
	struct fx *f = *state;
	char out[128];

	add_device(f, "d-one", 1);
	add_upload(f, "t-1", "d-one", 1, 0);
	pg_exec(f, "SELECT rv_week_partitions(0);"
		   "INSERT INTO traces (trace_id, received_at, decoded_at, issue, device_id)"
		   " VALUES ('t-1', 1, 1, 'aa', 'd-one')");
	sql_value(f, NULL, "SELECT issue || '/' || device_id FROM traces", out, sizeof out);
	assert_string_equal(out, "aa/d-one");
	sql_value(f, NULL,
		  "SELECT count(*) FROM pg_indexes WHERE tablename = 'traces' AND indexname IN"
		  " ('traces_issue', 'traces_by_severity', 'traces_by_duration',"
		  " 'traces_by_captured')",
		  out, sizeof out);
	assert_string_equal(out, "4");
	/* The issues index as migration 13 remade it: an issue's app after it. */
	sql_value(f, NULL,
		  "SELECT substring(pg_get_indexdef('traces_issue'::regclass) FROM '\\(.*\\)')",
		  out, sizeof out);
	assert_string_equal(out, "(issue, app_id, received_at, device_id, severity)");
}

/* A decoder killed mid-decode: its lease expires (forced here, no waiting)
 * and another node takes the upload again; the dead holder's late finish
 * records nothing, the new holder's records it once. */
static void test_store_pg_expired_lease_is_retaken(void **state)
{
	struct fx *f = *state;
	struct rvs_store *node2;
	struct rvs_decode_item a[2], b[2];
	uint64_t depth = 0;
	char out[64];

	assert_int_equal(ops->open(f->db, &node2), 0);
	add_device(f, "d-one", 1);
	add_upload(f, "t-1", "d-one", 1, 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, a, 2), 1);
	assert_true(a[0].lease > 0);
	/* Leased: the other node finds nothing to do. */
	assert_int_equal(ops->decode_next_batch(node2, 0, 1, b, 2), 0);
	pg_exec(f, "UPDATE decode_queue SET leased_until = now() - interval '1 second'");
	assert_int_equal(ops->decode_next_batch(node2, 0, 1, b, 2), 1);
	assert_string_equal(b[0].trace_id, "t-1");
	assert_true(b[0].lease != a[0].lease);
	/* The first holder comes back late with a failure: not recorded. */
	a[0].rc = -EIO;
	assert_int_equal(ops->decode_finish(f->s, a, 1), 0);
	assert_int_equal(ops->queue_depth(f->s, &depth), 0);
	assert_int_equal(depth, 1);
	assert_int_equal(ops->decode_finish(node2, b, 1), 0);
	assert_int_equal(ops->queue_depth(f->s, &depth), 0);
	assert_int_equal(depth, 0);
	sql_value(f, "SELECT state || (SELECT count(*) FROM quarantine) FROM uploads", NULL, out,
		  sizeof out);
	assert_string_equal(out, "decoded0");
	ops->close(node2);
}

#define NQ 120
struct taker {
	struct rvs_store *s;
	pthread_mutex_t *mu;
	int *taken; /* per upload: how many times a batch handed it out */
	int rc;
};

/* Takes and finishes batches until the queue has nothing free. */
static void *take(void *arg)
{
	struct taker *t = arg;
	struct rvs_decode_item it[7];
	int n;

	while ((n = ops->decode_next_batch(t->s, 0, 1, it, 7)) > 0) {
		pthread_mutex_lock(t->mu);
		for (int i = 0; i < n; i++)
			t->taken[strtol(it[i].trace_id + 2, NULL, 10)]++;
		pthread_mutex_unlock(t->mu);
		if ((t->rc = ops->decode_finish(t->s, it, (size_t)n)))
			return NULL;
	}
	t->rc = n;
	return NULL;
}

/* Four decoders on two nodes take batches at once: SKIP LOCKED and the
 * leases hand each upload to exactly one of them. */
static void test_store_pg_concurrent_batches_never_share_an_upload(void **state)
{
	struct fx *f = *state;
	struct rvs_store *node2;
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	int taken[NQ] = {0};
	pthread_t t[4];
	struct taker tk[4];
	uint64_t depth = 1;

	assert_int_equal(ops->open(f->db, &node2), 0);
	add_device(f, "d-one", 1);
	for (int i = 0; i < NQ; i++) {
		char trace[16];
		snprintf(trace, sizeof trace, "t-%d", i);
		add_upload(f, trace, "d-one", (uint8_t)i, 0);
	}
	for (int i = 0; i < 4; i++) {
		tk[i] = (struct taker){i % 2 ? node2 : f->s, &mu, taken, -1};
		assert_int_equal(pthread_create(&t[i], NULL, take, &tk[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(tk[i].rc, 0);
	}
	for (int i = 0; i < NQ; i++)
		assert_int_equal(taken[i], 1);
	assert_int_equal(ops->queue_depth(f->s, &depth), 0);
	assert_int_equal(depth, 0);
	ops->close(node2);
}

/* ---- index batches that share signatures ---- */

static long long pg_num(struct fx *f, const char *sql);

#define IX_LANES  4
#define IX_BATCH  16
#define IX_ROUNDS 4
#define IX_SIGS	  8

struct ix_writer {
	struct rvs_index_lane *l;
	pthread_barrier_t *go;
	struct rvs_decode_item *it; /* IX_ROUNDS batches of IX_BATCH */
	char sig[IX_ROUNDS * IX_BATCH][17];
	int shift; /* the pass: 1 re-decodes each trace under the next signature */
	int reverse;
	int failed; /* traces whose index_write did not return 0 */
	char why[256];
};

/* IX_ROUNDS batches, each started with the other writers' (barrier); the
 * batch's traces take the signatures s0 … s7 twice, in ascending order or
 * (reverse) descending, so that two writers want them in opposite orders. */
static void *ix_write(void *arg)
{
	struct ix_writer *w = arg;
	struct rvs_index_trace v[IX_BATCH];

	for (int r = 0; r < IX_ROUNDS; r++) {
		for (int j = 0; j < IX_BATCH; j++) {
			int k = r * IX_BATCH + j;
			int sig = (w->reverse ? IX_SIGS - 1 - j % IX_SIGS : j % IX_SIGS) + w->shift;
			memset(&v[j], 0, sizeof v[j]);
			snprintf(w->sig[k], sizeof w->sig[k], "%016x", sig % IX_SIGS + 0xa0);
			v[j].trace_id = w->it[k].trace_id;
			v[j].lease = w->it[k].lease;
			v[j].decoded_at = 1000;
			v[j].duration_ns = v[j].nmethods = v[j].dropped = -1;
			v[j].anomaly_signature = v[j].signature = v[j].issue = w->sig[k];
		}
		pthread_barrier_wait(w->go);
		ops->index_write(w->l, v, IX_BATCH);
		for (int j = 0; j < IX_BATCH; j++)
			if (v[j].rc) {
				w->failed++;
				snprintf(w->why, sizeof w->why, "%s: %d %s", v[j].trace_id, v[j].rc,
					 v[j].reason);
			}
	}
	return NULL;
}

/* Four index lanes write batches of summaries at once, two of them taking
 * the shared signatures in the opposite order (before the fix: "deadlock
 * detected", the loser's traces quarantined), then all again under other
 * signatures (a re-decode uncounts the old one): every trace indexed once,
 * none quarantined, and the signature totals equal a recount. */
static void test_store_pg_index_batches_sharing_signatures_lose_nothing(void **state)
{
	struct fx *f = *state;
	static struct rvs_decode_item it[IX_LANES * IX_ROUNDS * IX_BATCH];
	static struct ix_writer w[IX_LANES];
	const int total = IX_LANES * IX_ROUNDS * IX_BATCH;
	pthread_barrier_t go;
	pthread_t t[IX_LANES];
	int got = 0, n;

	for (int d = 0; d < IX_LANES; d++) {
		char dev[16];
		snprintf(dev, sizeof dev, "d-%d", d);
		add_device(f, dev, (uint8_t)(d + 1));
		for (int i = 0; i < IX_ROUNDS * IX_BATCH; i++) {
			char trace[16];
			snprintf(trace, sizeof trace, "t-%d-%d", d, i);
			add_upload(f, trace, dev, (uint8_t)i, 0);
		}
	}
	while (got < total &&
	       (n = ops->decode_next_batch(f->s, 0, 1, it + got, (size_t)(total - got))) > 0)
		got += n;
	assert_int_equal(got, total);
	assert_int_equal(pthread_barrier_init(&go, NULL, IX_LANES), 0);
	for (int i = 0; i < IX_LANES; i++) {
		memset(&w[i], 0, sizeof w[i]);
		assert_int_equal(ops->index_lane_open(f->s, &w[i].l), 0);
		w[i].go = &go;
		w[i].it = it + i * IX_ROUNDS * IX_BATCH;
		w[i].reverse = i % 2;
	}
	for (int shift = 0; shift < 2; shift++) {
		for (int i = 0; i < IX_LANES; i++) {
			w[i].shift = shift;
			assert_int_equal(pthread_create(&t[i], NULL, ix_write, &w[i]), 0);
		}
		for (int i = 0; i < IX_LANES; i++)
			pthread_join(t[i], NULL);
		for (int i = 0; i < IX_LANES; i++)
			if (w[i].failed)
				fail_msg("pass %d, lane %d: %d traces failed (last %s)", shift, i,
					 w[i].failed, w[i].why);
	}
	for (int i = 0; i < IX_LANES; i++)
		ops->index_lane_close(w[i].l);
	pthread_barrier_destroy(&go);
	assert_int_equal(ops->decode_finish(f->s, it, (size_t)total), 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM quarantine"), 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM uploads WHERE state = 'decoded'"), total);
	assert_int_equal(pg_num(f, "SELECT count(DISTINCT trace_id) FROM traces"), total);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM traces"), total);
	/* Every trace carries its second pass's signature. */
	assert_int_equal(pg_num(f, "SELECT count(DISTINCT signature) FROM traces"), IX_SIGS);
	assert_int_equal(pg_num(f, "SELECT sum(traces) FROM signatures"), total);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM (SELECT signature, count(*) AS c FROM"
				   " traces GROUP BY signature) t FULL JOIN signatures s"
				   " USING (signature) WHERE t.c IS DISTINCT FROM s.traces"),
			 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM (SELECT signature,"
				   " received_at / 604800 AS week, COALESCE(app_version, '')"
				   " AS app_version, count(*) AS c FROM traces"
				   " GROUP BY 1, 2, 3) t FULL JOIN signature_counts s"
				   " USING (signature, week, app_version)"
				   " WHERE t.c IS DISTINCT FROM s.traces"),
			 0);
}

/* A batch that meets only transient errors — here the signature's lock
 * held by another session, under lock_timeout (55P03) — is retried, then
 * failed with -EAGAIN and left queued by decode_finish (its lease dropped:
 * the old holder records nothing), never quarantined; once the lock is
 * free the upload is taken again and indexed. */
static void test_store_pg_index_transient_errors_requeue_not_quarantine(void **state)
{
	struct fx *f = *state;
	struct rvs_index_lane *l = NULL;
	struct rvs_decode_item it[2], old;
	struct rvs_index_trace v;
	PGconn *holder;
	PGresult *r;
	time_t deadline;
	int n = 0;

	add_device(f, "d-ix", 3);
	add_upload(f, "t-ix", "d-ix", 1, 0);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 2), 1);
	pg_exec(f, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET lock_timeout = 50',"
		   " current_database()); END $$");
	holder = PQconnectdb(f->db);
	r = PQexec(holder, "BEGIN; SELECT pg_advisory_xact_lock(1381389127,"
			   " hashtext('00000000000000aa'))");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	PQclear(r);
	assert_int_equal(ops->index_lane_open(f->s, &l), 0);
	index_rows_of(&v, &it[0], "g");
	ops->index_write(l, &v, 1);
	assert_int_equal(v.rc, -EAGAIN);
	assert_non_null(strstr(v.reason, "lock timeout"));
	it[0].rc = v.rc;
	snprintf(it[0].reason, sizeof it[0].reason, "%s", v.reason);
	old = it[0];
	assert_int_equal(ops->decode_finish(f->s, it, 1), 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM quarantine"), 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM decode_queue WHERE lease IS NULL"), 1);
	PQclear(PQexec(holder, "COMMIT"));
	PQfinish(holder);
	/* Taken again once its short hold-off passed (generous deadline). */
	deadline = time(NULL) + 30;
	while ((n = ops->decode_next_batch(f->s, 0, 1, it, 2)) == 0 && time(NULL) < deadline) {
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(n, 1);
	/* The first holder's late success records nothing. */
	old.rc = 0;
	assert_int_equal(ops->decode_finish(f->s, &old, 1), 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM decode_queue"), 1);
	index_rows_of(&v, &it[0], "g");
	ops->index_write(l, &v, 1);
	assert_int_equal(v.rc, 0);
	it[0].rc = 0;
	assert_int_equal(ops->decode_finish(f->s, it, 1), 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM decode_queue"), 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM quarantine"), 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM uploads WHERE state = 'decoded'"), 1);
	assert_int_equal(pg_num(f, "SELECT traces FROM signatures"), 1);
	ops->index_lane_close(l);
}

/* ---- weekly partitions, retention by week, LISTEN/NOTIFY ---- */

#define W0 2900LL /* an old week (2025-07-31): its partitions made by the test */

/* A count (or any one value) sql answers, as a number. */
static long long pg_num(struct fx *f, const char *sql)
{
	char out[32];
	sql_value(f, NULL, sql, out, sizeof out);
	return strtoll(out, NULL, 10);
}

/* Moves trace's upload into week w (at w * 604800 + 10), making the
 * week's partitions first. */
static void move_to_week(struct fx *f, const char *trace, long long w)
{
	char sql[256];
	snprintf(sql, sizeof sql,
		 "SELECT rv_week_partitions(%lld); UPDATE uploads SET received_at = %lld"
		 " WHERE trace_id = '%s'",
		 w, w * 604800 + 10, trace);
	pg_exec(f, sql);
}

static long long partitions_of(struct fx *f, const char *table)
{
	char sql[256];
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM pg_inherits WHERE inhparent = '%s'::regclass", table);
	return pg_num(f, sql);
}

/* A node opening the store makes this week's and the next week's
 * partitions of the four tables; an upload lands in this week's; a
 * missing next week is made again by the next node that opens. */
static void test_store_pg_partitions_made_for_this_and_next_week(void **state)
{
	struct fx *f = *state;
	struct rvs_store *node2;
	long long now_w = (long long)time(NULL) / 604800;
	char sql[160];

	/* Both nodes' clocks and the database's: the same machine here. */
	for (int i = 0; i < 5; i++) {
		static const char *const t[] = {"uploads", "traces", "trace_methods",
						"trace_chains", "trace_unresolved"};
		assert_int_equal(partitions_of(f, t[i]), 2);
	}
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM pg_class WHERE relname IN ('uploads_w%lld',"
		 " 'traces_w%lld', 'trace_chains_w%lld')",
		 now_w, now_w + 1, now_w + 1);
	assert_int_equal(pg_num(f, sql), 3);
	add_device(f, "d-1", 1);
	add_upload(f, "t-1", "d-1", 1, 0);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM uploads_w%lld", now_w);
	assert_int_equal(pg_num(f, sql), 1);
	snprintf(sql, sizeof sql,
		 "DROP TABLE uploads_w%lld, traces_w%lld, trace_methods_w%lld,"
		 " trace_chains_w%lld",
		 now_w + 1, now_w + 1, now_w + 1, now_w + 1);
	pg_exec(f, sql);
	assert_int_equal(partitions_of(f, "uploads"), 1);
	assert_int_equal(ops->open(f->db, &node2), 0);
	assert_int_equal(partitions_of(f, "uploads"), 2);
	assert_int_equal(partitions_of(f, "trace_chains"), 2);
	ops->close(node2);
}

struct opener {
	const char *dsn;
	struct rvs_store *s;
	int rc;
};

static void *open_store(void *arg)
{
	struct opener *o = arg;
	o->rc = ops->open(o->dsn, &o->s);
	return NULL;
}

/* Four nodes starting at once on an empty database: one migrates, each
 * makes this and next week's partitions under the advisory lock, none
 * fails on another's CREATE. */
static void test_store_pg_nodes_starting_together_make_weeks_once(void **state)
{
	struct fx *f = *state;
	struct opener o[4];
	pthread_t t[4];
	char dsn[256];

	assert_int_equal(pgh_fresh_db(&pg, dsn, sizeof dsn), 0);
	for (int i = 0; i < 4; i++) {
		o[i] = (struct opener){dsn, NULL, -1};
		assert_int_equal(pthread_create(&t[i], NULL, open_store, &o[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(o[i].rc, 0);
	}
	snprintf(f->db, sizeof f->db, "%s", dsn);
	assert_int_equal(partitions_of(f, "uploads"), 2);
	assert_int_equal(partitions_of(f, "trace_methods"), 2);
	for (int i = 0; i < 4; i++)
		ops->close(o[i].s);
}

/* The device's upload id is the key across weeks: an upload received last
 * week and its retry this week (on another node) are one row. */
static void test_store_pg_upload_key_holds_across_weeks(void **state)
{
	struct fx *f = *state;
	struct rvs_store *node2;
	struct rvs_upload_rec u = {0};
	uint8_t uid[16];
	char trace[40];

	assert_int_equal(ops->open(f->db, &node2), 0);
	add_device(f, "d-one", 1);
	add_upload(f, "t-1", "d-one", 7, 0);
	move_to_week(f, "t-1", (long long)time(NULL) / 604800 - 1);
	snprintf(u.trace_id, sizeof u.trace_id, "t-2");
	u.device_id = "d-one";
	memset(u.upload_id, 7, 16);
	assert_int_equal(ops->upload_add(node2, &u), -EEXIST);
	memset(uid, 7, 16);
	assert_int_equal(ops->upload_find(node2, "d-one", uid, trace), 0);
	assert_string_equal(trace, "t-1");
	assert_int_equal(pg_num(f, "SELECT count(*) FROM uploads"), 1);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM decode_queue"), 1);
	/* Another upload id of the device is no duplicate. */
	u.upload_id[0] = 8;
	assert_int_equal(ops->upload_add(node2, &u), 0);
	ops->close(node2);
}

/* Index rows of trace (week w, signature sig) as the decoder writes them. */
static void index_rows_in_week(struct fx *f, const char *trace, long long w, const char *sig)
{
	char sql[768];
	snprintf(sql, sizeof sql,
		 "INSERT INTO traces (trace_id, app_version, received_at, decoded_at) VALUES"
		 " ('%1$s', '1.0', %2$lld, 0);"
		 "INSERT INTO trace_methods VALUES ('%1$s', 'main', 1, 1, 1, 1, %2$lld);"
		 "INSERT INTO trace_chains (trace_id, kind, rank, signature, chain, depth,"
		 " received_at) VALUES ('%1$s', 'anomaly', 1, '%3$s', 'main;', 1, %2$lld);"
		 "UPDATE traces SET signature = '%3$s' WHERE trace_id = '%1$s'",
		 trace, w * 604800 + 10, sig);
	pg_exec(f, sql);
}

/* Retention drops whole expired weeks — their uploads, index rows, queue
 * rows and signature counts go, no row is DELETEd from a partition — and
 * hands their blobs out at most max at a time; a week that has not wholly
 * expired stays. */
static void test_store_pg_retention_drops_expired_weeks_and_names_blobs(void **state)
{
	struct fx *f = *state;
	char a[65], b[65], c[65], blobs[500][65], sql[128];
	size_t nblobs = 9;

	memset(a, 'a', 64);
	memset(b, 'b', 64);
	memset(c, 'c', 64);
	a[64] = b[64] = c[64] = 0;
	add_device(f, "d-1", 1);
	add_blob_upload(f, "t-1", 1, a);
	add_blob_upload(f, "t-2", 2, a);
	add_blob_upload(f, "t-5", 5, c);
	add_blob_upload(f, "t-3", 3, b);
	add_upload(f, "t-4", "d-1", 4, 0);
	move_to_week(f, "t-1", W0);
	move_to_week(f, "t-2", W0);
	move_to_week(f, "t-5", W0);
	move_to_week(f, "t-3", W0 + 1);
	index_rows_in_week(f, "t-1", W0, "aa");
	index_rows_in_week(f, "t-3", W0 + 1, "aa");
	pg_exec(f, "INSERT INTO quarantine VALUES ('t-2', 'x', 0)");
	assert_int_equal(pg_num(f, "SELECT traces FROM signatures WHERE signature = 'aa'"), 2);

	/* Week W0 + 1 is not over by the cutoff: only W0 goes, 2 blobs of it
	 * (a for two uploads, c) handed out one at a time. */
	assert_int_equal(ops->retention_delete(f->s, (W0 + 1) * 604800 + 100, 1, blobs, &nblobs),
			 2);
	assert_int_equal(nblobs, 1);
	assert_string_equal(blobs[0], a);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM pg_class WHERE relname LIKE '%%_w%lld'",
		 W0);
	assert_int_equal(pg_num(f, sql), 0);
	assert_int_equal(ops->blob_referenced(f->s, a), 0);
	assert_int_equal(ops->retention_delete(f->s, (W0 + 1) * 604800 + 100, 1, blobs, &nblobs),
			 1);
	assert_int_equal(nblobs, 1);
	assert_string_equal(blobs[0], c);
	assert_int_equal(ops->retention_delete(f->s, (W0 + 1) * 604800 + 100, 1, blobs, &nblobs),
			 0);
	assert_int_equal(nblobs, 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM uploads"), 2);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM traces"), 1);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM trace_methods"), 1);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM decode_queue"), 2);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM quarantine"), 0);
	assert_int_equal(pg_num(f, "SELECT traces FROM signatures WHERE signature = 'aa'"), 1);
	assert_int_equal(ops->blob_referenced(f->s, b), 1);

	/* Once W0 + 1 is over, it goes too; this week's upload stays. */
	assert_int_equal(ops->retention_delete(f->s, (W0 + 2) * 604800, 500, blobs, &nblobs), 1);
	assert_int_equal(nblobs, 1);
	assert_string_equal(blobs[0], b);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM signatures"), 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM signature_counts"), 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM uploads"), 1);
	assert_int_equal(partitions_of(f, "uploads"), 2);
}

/* A database at the schema before the partitions (rows of two weeks,
 * their index rows and signature counts, a queued and a quarantined
 * upload) opened by this server: the rows move into their weeks'
 * partitions, the counts stay, the key and the trigger still hold, and
 * retention drops the old week. */
static void test_store_pg_migration_moves_rows_into_weeks(void **state)
{
	struct fx *f = *state;
	char dsn[256], sql[2048];
	struct rvs_store *s;
	struct rvs_upload_rec u = {0};
	char blobs[500][65];
	size_t nblobs;
	int v = 0;

	/* A database of its own, not the fixture's (already migrated). */
	assert_int_equal(pgh_fresh_db(&pg, dsn, sizeof dsn), 0);
	assert_int_equal(rvs_pg_migrate(dsn, RVS_PG_MIGRATION_PART - 1), 0);
	snprintf(f->db, sizeof f->db, "%s", dsn);
	snprintf(sql, sizeof sql,
		 "INSERT INTO devices (device_id, token_hash, enrolled_at) VALUES"
		 " ('d-1', '\\x01', 0);"
		 "INSERT INTO uploads (trace_id, device_id, upload_id, received_at, blob_sha256,"
		 " state) VALUES ('t-1', 'd-1', '\\x07000000000000000000000000000000', %1$lld, "
		 "'aa', 'decoded'),"
		 " ('t-2', 'd-1', '\\x08', %2$lld, NULL, 'pending_decode'),"
		 " ('t-3', 'd-1', '\\x09', %2$lld, NULL, 'quarantined');"
		 "INSERT INTO decode_queue (trace_id, enqueued_at) VALUES ('t-2', 0);"
		 "INSERT INTO quarantine VALUES ('t-3', 'x', 0);"
		 "INSERT INTO traces (trace_id, app_version, received_at, decoded_at) VALUES"
		 " ('t-1', '1.0', %1$lld, 0);"
		 "INSERT INTO trace_methods VALUES ('t-1', 'main', 1, 1, 1, 1);"
		 "INSERT INTO trace_chains VALUES ('t-1', 'anomaly', 1, 'ss', 'main;', 1, 1, 1);"
		 "INSERT INTO trace_unresolved VALUES ('beef', 't-1');"
		 "UPDATE traces SET signature = 'ss';",
		 W0 * 604800 + 5, (W0 + 1) * 604800 + 5);
	pg_exec(f, sql);

	assert_int_equal(ops->open(dsn, &s), 0);
	assert_int_equal(ops->schema_version(s, &v), 0);
	assert_true(v >= RVS_PG_MIGRATION_PART);
	snprintf(sql, sizeof sql,
		 "SELECT (SELECT count(*) FROM uploads_w%1$lld) || '/' ||"
		 " (SELECT count(*) FROM uploads_w%2$lld) || '/' ||"
		 " (SELECT count(*) FROM traces_w%1$lld) || '/' ||"
		 " (SELECT received_at FROM trace_methods_w%1$lld) || '/' ||"
		 " (SELECT received_at FROM trace_chains_w%1$lld) || '/' ||"
		 " (SELECT received_at FROM trace_unresolved_w%1$lld) || '/' ||"
		 " (SELECT traces FROM signatures WHERE signature = 'ss')",
		 W0, W0 + 1);
	sql_value(f, NULL, sql, sql, 64);
	snprintf(blobs[0], sizeof blobs[0], "1/2/1/%lld/%lld/%lld/1", W0 * 604800 + 5,
		 W0 * 604800 + 5, W0 * 604800 + 5);
	assert_string_equal(sql, blobs[0]);
	/* The indexes and the trigger came along; traces.seq goes on. */
	assert_int_equal(pg_num(f, "SELECT count(*) FROM pg_indexes WHERE indexname IN"
				   " ('traces_issue', 'traces_by_severity', 'trace_methods_self',"
				   " 'trace_chains_signature', 'uploads_received', 'uploads_key')"),
			 6);
	pg_exec(f, "UPDATE traces SET signature = NULL");
	assert_int_equal(pg_num(f, "SELECT count(*) FROM signatures"), 0);
	/* The device's key holds as before. */
	snprintf(u.trace_id, sizeof u.trace_id, "t-9");
	u.device_id = "d-1";
	u.upload_id[0] = 7;
	assert_int_equal(ops->upload_add(s, &u), -EEXIST);
	/* Retention drops the old week with its blob. */
	assert_int_equal(ops->retention_delete(s, (W0 + 1) * 604800, 500, blobs, &nblobs), 1);
	assert_int_equal(nblobs, 0); /* "aa" is no sha256: counted, not named */
	assert_int_equal(pg_num(f, "SELECT count(*) FROM uploads"), 2);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM decode_queue"), 1);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM quarantine"), 1);
	ops->close(s);
}

/* The per-node rollup (migration 14) over a database with aggregates
 * already: filled with agg_sums summed per node; then a DELETE of a
 * trace's path rows (a re-decode, retention) takes them off, and a node
 * whose last trace went has no row. */
static void test_store_pg_migration_rolls_up_existing_sums(void **state)
{
	struct fx *f = *state;
	char dsn[256];
	struct rvs_store *s;
	int v = 0;
	static const char recount[] =
		"SELECT count(*) FROM (SELECT node, sum(traces) t, sum(calls) c, sum(self_ns) sn,"
		" sum(incl_ns) i FROM agg_sums GROUP BY node) a FULL JOIN agg_node_sums r"
		" USING (node) WHERE r.traces IS DISTINCT FROM a.t OR r.calls IS DISTINCT FROM a.c"
		" OR r.self_ns IS DISTINCT FROM a.sn OR r.incl_ns IS DISTINCT FROM a.i";

	assert_int_equal(pgh_fresh_db(&pg, dsn, sizeof dsn), 0);
	assert_int_equal(rvs_pg_migrate(dsn, RVS_PG_MIGRATION_ROLLUP - 1), 0);
	snprintf(f->db, sizeof f->db, "%s", dsn);
	/* Two apps, three buckets: node 1 (app a's root) in two buckets. */
	pg_exec(f,
		"INSERT INTO agg_buckets (app_id, app_version, model, anomaly_kind, day)"
		" VALUES ('a', '1', 'm', 1, 0), ('a', '2', 'm', 1, 0), ('b', '1', 'm', 1, 0);"
		"INSERT INTO agg_nodes (app_id, parent, method, depth) VALUES"
		" ('a', 0, '', 0), ('a', 1, 'f', 1), ('b', 0, '', 0);"
		"INSERT INTO trace_paths VALUES ('t1', 1, 1, 1, 10, 30), ('t1', 2, 1, 4, 20, 20),"
		" ('t2', 1, 2, 2, 5, 50), ('t2', 2, 2, 1, 1, 1), ('t3', 3, 3, 7, 70, 700);");
	assert_int_equal(ops->open(dsn, &s), 0);
	assert_int_equal(ops->schema_version(s, &v), 0);
	assert_true(v >= RVS_PG_MIGRATION_ROLLUP);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM agg_node_sums"), 3);
	assert_int_equal(pg_num(f, "SELECT traces * 1000000 + calls * 10000 + incl_ns"
				   " FROM agg_node_sums WHERE node = 1"),
			 2 * 1000000 + 3 * 10000 + 80);
	assert_int_equal(pg_num(f, recount), 0);
	pg_exec(f, "DELETE FROM trace_paths WHERE trace_id = 't2'");
	assert_int_equal(pg_num(f, "SELECT traces * 1000000 + calls * 10000 + self_ns"
				   " FROM agg_node_sums WHERE node = 2"),
			 1 * 1000000 + 4 * 10000 + 20);
	assert_int_equal(pg_num(f, recount), 0);
	pg_exec(f, "DELETE FROM trace_paths WHERE trace_id IN ('t1', 't3')");
	assert_int_equal(pg_num(f, "SELECT count(*) FROM agg_node_sums"), 0);
	ops->close(s);
}

/* trace_methods' on-CPU columns (migration 17) over a database with
 * method rows already, in an old week's partition: the rows stay, their
 * new columns NULL (unknown, never 0) until a re-index; the parent and
 * every partition, old and new, have the columns and the partial index,
 * which holds only rows with CPU data. */
static void test_store_pg_migration_adds_null_cpu_columns(void **state)
{
	struct fx *f = *state;
	char dsn[256], sql[1024];
	struct rvs_store *s;
	int v = 0;

	assert_int_equal(pgh_fresh_db(&pg, dsn, sizeof dsn), 0);
	assert_int_equal(rvs_pg_migrate(dsn, RVS_PG_MIGRATION_CPU - 1), 0);
	snprintf(f->db, sizeof f->db, "%s", dsn);
	snprintf(sql, sizeof sql,
		 "SELECT rv_week_partitions(%1$lld);"
		 "INSERT INTO trace_methods (trace_id, method, calls, self_ns, incl_ns,"
		 " received_at) VALUES ('t-1', 'main', 1, 5, 9, %2$lld);",
		 W0, W0 * 604800 + 5);
	pg_exec(f, sql);
	assert_int_equal(ops->open(dsn, &s), 0);
	assert_int_equal(ops->schema_version(s, &v), 0);
	assert_true(v >= RVS_PG_MIGRATION_CPU);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM trace_methods WHERE self_ns = 5"
				   " AND cpu_self_ns IS NULL AND cpu_incl_ns IS NULL"),
			 1);
	/* Every partition (the old week's, this week's and next) has the
	 * index: one per partition plus the parent's. */
	assert_int_equal(pg_num(f, "SELECT count(*) FROM pg_inherits WHERE inhparent ="
				   " 'trace_methods'::regclass") +
				 1,
			 pg_num(f, "SELECT count(*) FROM pg_indexes WHERE indexdef LIKE"
				   " '%(method, self_ns, incl_ns, cpu_self_ns, cpu_incl_ns)"
				   " WHERE (cpu_self_ns IS NOT NULL)'"));
	pg_exec(f, "INSERT INTO trace_methods (trace_id, method, calls, self_ns, incl_ns,"
		   " cpu_self_ns, cpu_incl_ns, received_at) VALUES ('t-1', 'spin', 1, 10, 10,"
		   " 9, 9, extract(epoch FROM now())::bigint)");
	assert_int_equal(pg_num(f, "SELECT sum(cpu_self_ns) FROM trace_methods"), 9);
	ops->close(s);
}

/* trace_paths' on-CPU columns and the rollups' CPU sums (migration 18)
 * over a database with aggregates already: the old path row stays, its
 * new columns NULL, and every rollup counts 0 traces with CPU data; then
 * a row with CPU data counts in agg_sums through the remade trigger, and
 * deleting the old row takes it off agg_node_sums and agg_day_sums
 * through the remade unroll without touching their CPU sums. */
static void test_store_pg_migration_paths_cpu_zero_counts(void **state)
{
	struct fx *f = *state;
	char dsn[256];
	struct rvs_store *s;
	int v = 0;

	assert_int_equal(pgh_fresh_db(&pg, dsn, sizeof dsn), 0);
	assert_int_equal(rvs_pg_migrate(dsn, RVS_PG_MIGRATION_PATH_CPU - 1), 0);
	snprintf(f->db, sizeof f->db, "%s", dsn);
	pg_exec(f, "INSERT INTO agg_buckets (app_id, app_version, model, anomaly_kind, day)"
		   " VALUES ('a', '1', 'm', 1, 3);"
		   "INSERT INTO agg_nodes (app_id, parent, method, depth) VALUES ('a', 0, '', 0);"
		   "INSERT INTO trace_paths (trace_id, node, bucket, calls, self_ns, incl_ns)"
		   " VALUES ('t1', 1, 1, 1, 10, 30);"
		   "INSERT INTO agg_node_sums SELECT node, count(*), sum(calls), sum(self_ns),"
		   " sum(incl_ns) FROM trace_paths GROUP BY node;"
		   "INSERT INTO agg_day_sums SELECT node, 3, count(*), sum(calls), sum(self_ns),"
		   " sum(incl_ns) FROM trace_paths GROUP BY node;");
	assert_int_equal(ops->open(dsn, &s), 0);
	assert_int_equal(ops->schema_version(s, &v), 0);
	assert_true(v >= RVS_PG_MIGRATION_PATH_CPU);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM trace_paths WHERE cpu_self_ns IS NULL"
				   " AND cpu_incl_ns IS NULL"),
			 1);
	assert_int_equal(pg_num(f, "SELECT (SELECT traces * 10 + cpu_traces FROM agg_sums) * 100"
				   " + (SELECT traces * 10 + cpu_traces FROM agg_node_sums)"),
			 10 * 100 + 10);
	assert_int_equal(pg_num(f, "SELECT traces * 10 + cpu_traces FROM agg_day_sums"), 10);
	/* A trace with CPU data: 4 of its 10 ns of self on the CPU, 20 of 30
	 * inclusive. */
	pg_exec(f, "INSERT INTO trace_paths (trace_id, node, bucket, calls, self_ns, incl_ns,"
		   " cpu_self_ns, cpu_incl_ns) VALUES ('t2', 1, 1, 1, 10, 30, 4, 20)");
	assert_int_equal(pg_num(f, "SELECT traces * 10 + cpu_traces FROM agg_sums"), 21);
	assert_int_equal(pg_num(f, "SELECT cpu_self_ns * 1000000 + off_self_ns * 10000"
				   " + cpu_incl_ns * 100 + off_incl_ns FROM agg_sums"),
			 4 * 1000000 + 6 * 10000 + 20 * 100 + 10);
	pg_exec(f, "DELETE FROM trace_paths WHERE trace_id = 't1'");
	assert_int_equal(pg_num(f, "SELECT traces * 10 + cpu_traces FROM agg_sums"), 11);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM agg_node_sums"), 0);
	assert_int_equal(pg_num(f, "SELECT count(*) FROM agg_day_sums"), 0);
	ops->close(s);
}

/* Two nodes on one database: the idle one listens, the other acknowledges
 * an upload, and the listener's socket turns readable with a wake-up
 * (the NOTIFY of the upload's commit) — no poll, no timer — after which
 * the idle node takes the upload to decode. */
static void test_store_pg_upload_wakes_idle_listener(void **state)
{
	struct fx *f = *state;
	struct rvs_store *idle;
	struct rvs_wake *w = NULL;
	struct rvs_decode_item it[2];
	struct pollfd p;
	int woken = 0;

	assert_int_equal(ops->open(f->db, &idle), 0);
	assert_non_null(ops->wake_open);
	assert_int_equal(ops->wake_open(idle, &w), 0);
	assert_int_equal(ops->wake_drain(w), 0);
	add_device(f, "d-1", 1);
	add_upload(f, "t-1", "d-1", 1, 0);
	/* Wait for the event itself (a generous deadline, never a sleep). */
	p = (struct pollfd){.fd = ops->wake_fd(w), .events = POLLIN};
	for (time_t until = time(NULL) + 30; !woken && time(NULL) < until;) {
		int r = poll(&p, 1, 1000);
		assert_true(r >= 0);
		if (r > 0)
			woken = ops->wake_drain(w);
		assert_true(woken >= 0);
	}
	assert_true(woken >= 1);
	assert_int_equal(ops->decode_next_batch(idle, 0, 1, it, 2), 1);
	assert_string_equal(it[0].trace_id, "t-1");
	/* A symbols requeue wakes it too (one decoded trace unresolved). */
	pg_exec(f,
		"UPDATE uploads SET state = 'decoded'; DELETE FROM decode_queue;"
		"INSERT INTO trace_unresolved SELECT 'beef', trace_id, received_at FROM uploads");
	{
		uint64_t queued = 0;
		assert_int_equal(ops->requeue_build_id(f->s, "beef", &queued), 0);
		assert_int_equal(queued, 1);
	}
	woken = 0;
	for (time_t until = time(NULL) + 30; !woken && time(NULL) < until;) {
		int r = poll(&p, 1, 1000);
		assert_true(r >= 0);
		if (r > 0)
			woken = ops->wake_drain(w);
	}
	assert_true(woken >= 1);
	ops->wake_close(w);
	ops->close(idle);
}

static char pg_skip_why[256];

static void test_store_pg_unavailable_skips(void **state)
{
	print_message("PostgreSQL cases skipped: %s\n", pg_skip_why);
	skip();
}

/* ---- jank counts per app (POST /v1/jank, GET /api/v1/fleet/jank) ---- */

static int jank_cb(void *arg, const struct rvs_jank_app_row *r)
{
	char *out = arg;
	size_t n = strlen(out);

	snprintf(out + n, 512 - n, "%s=%lld/%lld/%lld/%lld;", r->app_id, (long long)r->frames,
		 (long long)r->late, (long long)r->devices, (long long)r->traces);
	return 0;
}

static void jank_read(struct fx *f, int64_t from, int64_t to, int64_t limit, char out[512])
{
	out[0] = '\0';
	assert_int_equal(ops->jank_by_app(f->s, from, to, limit, jank_cb, out), 0);
}

/* A device-day replaces, never adds; apps rank by late / frames over the
 * window, summed over versions and devices, beside their uploads; a
 * report with one impossible row stores none of it; retention drops old
 * days; hostile text is data. */
static void test_store_jank_counts_replace_and_rank(void **state)
{
	struct fx *f = *state;
	int64_t today = (int64_t)time(NULL) / 86400;
	char out[512];

	add_device(f, "d-1", 1);
	add_device(f, "d-2", 2);
	add_upload(f, "t-1", "d-1", 1, 0); /* app "app", received now */
	const struct rvs_jank_rec a[] = {
		{"app", "1", today, 100, 10},
		{"game", "", today, 50, 25},
		{"game", "", today - 1, 10, 0},
		{"x'); DROP TABLE jank_counts; --", "", today, 4, 0},
	};
	assert_int_equal(ops->jank_put(f->s, "d-1", a, 4), 0);
	/* The same report again, then a later total of the same day. */
	assert_int_equal(ops->jank_put(f->s, "d-1", a, 4), 0);
	const struct rvs_jank_rec later = {"app", "1", today, 120, 12};
	assert_int_equal(ops->jank_put(f->s, "d-1", &later, 1), 0);
	const struct rvs_jank_rec b = {"app", "2", today, 80, 8};
	assert_int_equal(ops->jank_put(f->s, "d-2", &b, 1), 0);

	jank_read(f, today - 6, today, 100, out);
	assert_string_equal(
		out, "game=60/25/1/0;app=200/20/2/1;x'); DROP TABLE jank_counts; --=4/0/1/0;");
	jank_read(f, today, today, 1, out);
	assert_string_equal(out, "game=50/25/1/0;");
	/* A window without counts, and one before the upload: no traces. */
	jank_read(f, today - 30, today - 20, 100, out);
	assert_string_equal(out, "");
	jank_read(f, today - 1, today - 1, 100, out);
	assert_string_equal(out, "game=10/0/1/0;");

	/* late above frames: refused, and the report's other row not stored. */
	const struct rvs_jank_rec bad[] = {{"app", "1", today, 500, 50}, {"game", "", today, 5, 6}};
	assert_int_not_equal(ops->jank_put(f->s, "d-1", bad, 2), 0);
	jank_read(f, today, today, 100, out);
	assert_string_equal(
		out, "game=50/25/1/0;app=200/20/2/1;x'); DROP TABLE jank_counts; --=4/0/1/0;");

	assert_int_equal(ops->jank_expire(f->s, today), 0);
	jank_read(f, today - 6, today, 100, out);
	assert_string_equal(
		out, "game=50/25/1/0;app=200/20/2/1;x'); DROP TABLE jank_counts; --=4/0/1/0;");
	jank_read(f, today - 1, today - 1, 100, out);
	assert_string_equal(out, "");
}

int main(void)
{
	/* Every case here runs on each backend. */
	const struct CMUnitTest common[] = {
		cmocka_unit_test_setup_teardown(test_store_open_applies_migrations_and_wal,
						setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_store_jank_counts_replace_and_rank, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_store_device_token_lookup_finds_only_its_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_upload_is_unique_per_device_and_queued,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_store_failed_decode_goes_to_quarantine_with_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_batch_ends_at_its_first_capture, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_store_transient_stays_queued_and_requeue_filters_by_reason, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_store_hostile_text_is_data_not_sql, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_store_concurrent_adds_store_each_upload_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_store_parallel_uploads_at_quota_minus_one_store_exactly_one, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_store_signature_totals_follow_traces, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_store_index_write_replaces_rows_and_counts_signature_once, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_store_index_batch_fails_one_trace_alone, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_store_trace_capture_only_of_decoded_traces,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_reads_list_trace_and_signatures, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_store_agg_sums_follow_trace_paths, setup,
						teardown),
		/* issue 15 */
		cmocka_unit_test_setup_teardown(test_store_fleet_counts_devices_weeks_and_reasons,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_store_fleet_counts_equal_a_recount_after_uploads_and_retention, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_store_sessions_admins_and_alerts_round_trip,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_store_campaign_change_publishes_in_one_transaction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_skips_grouped_and_newest_first, setup,
						teardown),
		/* accounts: roles, tokens, the audit log */
		cmocka_unit_test_setup_teardown(test_store_user_roles_disable_and_audit_round_trip,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_store_tokens_carry_role_until_revoked_or_disabled, setup, teardown),
	};
	/* Retention by upload on sqlite (PostgreSQL drops weeks: pg_only). */
	const struct CMUnitTest sqlite_only[] = {
		cmocka_unit_test_setup_teardown(
			test_store_retention_deletes_oldest_batch_and_names_blobs, setup, teardown),
	};
	/* No backend in them: run once. */
	const struct CMUnitTest once[] = {
		cmocka_unit_test_setup_teardown(test_store_blob_is_content_addressed_and_complete,
						setup, teardown),
		cmocka_unit_test(test_store_pbkdf2_matches_rfc7914_vector),
	};
	const struct CMUnitTest pg_only[] = {
		cmocka_unit_test_setup_teardown(test_store_pg_duplicate_across_nodes_is_eexist,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_pg_expired_lease_is_retaken, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_store_pg_index_write_needs_the_decode_lease,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_store_pg_traces_migration_has_search_columns_and_indexes, setup_empty,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_store_pg_concurrent_batches_never_share_an_upload, setup, teardown),
		/* index batches sharing signatures */
		cmocka_unit_test_setup_teardown(
			test_store_pg_index_batches_sharing_signatures_lose_nothing, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_store_pg_index_transient_errors_requeue_not_quarantine, setup,
			teardown),
		/* weekly partitions, LISTEN/NOTIFY */
		cmocka_unit_test_setup_teardown(
			test_store_pg_partitions_made_for_this_and_next_week, setup_empty,
			teardown),
		cmocka_unit_test_setup_teardown(test_store_pg_upload_key_holds_across_weeks, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_store_pg_nodes_starting_together_make_weeks_once, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_store_pg_retention_drops_expired_weeks_and_names_blobs, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_store_pg_migration_moves_rows_into_weeks,
						setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_store_pg_migration_rolls_up_existing_sums,
						setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_store_pg_migration_adds_null_cpu_columns,
						setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_store_pg_migration_paths_cpu_zero_counts,
						setup_empty, teardown),
		cmocka_unit_test_setup_teardown(test_store_pg_upload_wakes_idle_listener, setup,
						teardown),
	};
	const struct CMUnitTest pg_missing[] = {
		cmocka_unit_test(test_store_pg_unavailable_skips),
	};
	int failed = 0, rc;

	ops = &rvs_store_sqlite;
	failed += cmocka_run_group_tests_name("store_sqlite", common, NULL, NULL);
	failed += cmocka_run_group_tests_name("store_sqlite_only", sqlite_only, NULL, NULL);
	failed += cmocka_run_group_tests_name("store_once", once, NULL, NULL);
	ops = &rvs_store_pg;
	rc = pgh_start(&pg);
	if (rc == 0) {
		failed += cmocka_run_group_tests_name("store_postgresql", common, NULL, NULL);
		failed += cmocka_run_group_tests_name("store_postgresql_only", pg_only, NULL, NULL);
	} else if (rc == -ENOENT) {
		snprintf(pg_skip_why, sizeof pg_skip_why, "%s", pg.why);
		failed += cmocka_run_group_tests_name("store_postgresql", pg_missing, NULL, NULL);
	} else {
		fprintf(stderr, "test_store: PostgreSQL did not start: %s\n", pg.why);
		failed++;
	}
	pgh_stop(&pg);
	return failed;
}
