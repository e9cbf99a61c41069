/*
 * test_store.c — the sqlite3 storage backend through its function table,
 * and the content-addressed blob store, in a temporary directory.
 */
#include <errno.h>
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
#include <sqlite3.h>

#include "rearview/common.pb-c.h"
#include "rvs.h"
#include "store.h"

static const struct rvs_store_ops *ops = &rvs_store_sqlite;

struct fx {
	char dir[64];
	char db[128];
	struct rvs_store *s;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	snprintf(f->dir, sizeof f->dir, "/tmp/rvs-store-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->db, sizeof f->db, "%s/t.db", f->dir);
	if (ops->open(f->db, &f->s))
		return -1;
	*state = f;
	return 0;
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

static void test_store_open_applies_migrations_and_wal(void **state)
{
	struct fx *f = *state;
	struct rvs_store *again;
	sqlite3 *db;
	sqlite3_stmt *st;
	int v = 0;

	assert_int_equal(ops->schema_version(f->s, &v), 0);
	assert_true(v >= 1);
	/* Reopening is idempotent. */
	assert_int_equal(ops->open(f->db, &again), 0);
	ops->close(again);
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
	sqlite3_finalize(st);
	sqlite3_close(db);
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
	sqlite3 *db;
	sqlite3_stmt *st;

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

	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT q.reason, u.state FROM quarantine q"
					    " JOIN uploads u USING (trace_id) WHERE trace_id='t-a'",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0),
			    "truncated capture: 12 bytes");
	assert_string_equal((const char *)sqlite3_column_text(st, 1), "quarantined");
	sqlite3_finalize(st);
	assert_int_equal(
		sqlite3_prepare_v2(db,
				   "SELECT group_concat(trace_id || '=' || state || '/' ||"
				   " coalesce(reason, '-'), ' ') FROM (SELECT u.trace_id,"
				   " u.state, q.reason FROM uploads u LEFT JOIN quarantine q"
				   " USING (trace_id) ORDER BY u.trace_id)",
				   -1, &st, NULL),
		SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0),
			    "t-a=quarantined/truncated capture: 12 bytes t-b=decoded/-"
			    " t-c=quarantined/unspecified");
	sqlite3_finalize(st);
	sqlite3_close(db);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_store_open_applies_migrations_and_wal, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_store_device_token_lookup_finds_only_its_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_upload_is_unique_per_device_and_queued,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_store_failed_decode_goes_to_quarantine_with_reason, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_batch_ends_at_its_first_capture, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_store_hostile_text_is_data_not_sql, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_store_blob_is_content_addressed_and_complete,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_concurrent_adds_store_each_upload_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_store_parallel_uploads_at_quota_minus_one_store_exactly_one, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_store_pbkdf2_matches_rfc7914_vector, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
