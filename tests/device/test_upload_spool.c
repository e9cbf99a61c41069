/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_upload_spool.c — the spool's upload columns on a real libuv loop:
 * every stored row gets its own 16-byte upload id that survives reopening
 * and crash recovery (uploading → pending keeps it), uploaded records the
 * server's trace id durably, and a database written before the upload
 * columns existed (schema version 0) is migrated with ids for its rows.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "spool.h"

static int g_calls, g_status;

static void done_cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	(void)sp;
	(void)id;
	(void)data;
	g_calls++;
	g_status = status;
}

/* Runs the loop until the queued job answered; its status. */
static int settle(uv_loop_t *loop, int submit_rc)
{
	assert_int_equal(submit_rc, 0);
	g_calls = 0;
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(g_calls, 1);
	return g_status;
}

static void reopen(struct rvd_spool *sp, uv_loop_t *loop, const char *dir, bool close_first)
{
	if (close_first) {
		assert_int_equal(settle(loop, rvd_spool_close(sp, done_cb, NULL)), 0);
		rvd_spool_release(sp);
	}
	rvd_spool_init(sp, loop, dir);
	assert_int_equal(settle(loop, rvd_spool_open(sp, done_cb, NULL)), 0);
}

static uint64_t store_one(struct rvd_spool *sp, uv_loop_t *loop, int64_t reservation)
{
	struct rvd_capture_rec meta;
	int fd = memfd_create("t", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "capture", 7), 7);
	memset(&meta, 0, sizeof(meta));
	meta.reservation = reservation;
	snprintf(meta.app_id, sizeof(meta.app_id), "app");
	assert_int_equal(settle(loop, rvd_spool_store(sp, fd, 7, &meta, done_cb, NULL)), 0);
	return sp->recs[sp->nrecs - 1].id;
}

static bool zero_id(const uint8_t id[16])
{
	for (int i = 0; i < 16; i++)
		if (id[i])
			return false;
	return true;
}

static void rm_rf(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_upload_spool_upload_id_stable_across_crash_recovery(void **state)
{
	char dir[] = "/tmp/rvd-upsp-XXXXXX";
	uint8_t id1[16], id2[16];
	struct rvd_spool sp;
	uv_loop_t loop;
	uint64_t a, b;

	(void)state;
	assert_non_null(mkdtemp(dir));
	uv_loop_init(&loop);
	reopen(&sp, &loop, dir, false);
	a = store_one(&sp, &loop, 42);
	b = store_one(&sp, &loop, 0);
	memcpy(id1, rvd_spool_find(&sp, a)->upload_id, 16);
	memcpy(id2, rvd_spool_find(&sp, b)->upload_id, 16);
	assert_false(zero_id(id1));
	assert_memory_not_equal(id1, id2, 16);
	assert_int_equal(rvd_spool_find(&sp, a)->reservation, 42);
	/* a: pending → uploading, then the "crash" (reopen without the ack). */
	assert_int_equal(
		settle(&loop, rvd_spool_set_state(&sp, a, RVD_SPOOL_PENDING, NULL, done_cb, NULL)),
		0);
	assert_int_equal(settle(&loop, rvd_spool_set_state(&sp, a, RVD_SPOOL_UPLOADING, NULL,
							   done_cb, NULL)),
			 0);
	reopen(&sp, &loop, dir, true);
	assert_int_equal(rvd_spool_find(&sp, a)->state, RVD_SPOOL_PENDING);
	assert_memory_equal(rvd_spool_find(&sp, a)->upload_id, id1, 16);
	assert_memory_equal(rvd_spool_find(&sp, b)->upload_id, id2, 16);
	assert_int_equal(rvd_spool_find(&sp, a)->reservation, 42);
	assert_int_equal(settle(&loop, rvd_spool_close(&sp, done_cb, NULL)), 0);
	rvd_spool_release(&sp);
	uv_loop_close(&loop);
	rm_rf(dir);
}

static void test_upload_spool_uploaded_records_trace_id_durably(void **state)
{
	char dir[] = "/tmp/rvd-upsp-XXXXXX";
	struct rvd_spool sp;
	uv_loop_t loop;
	uint64_t a;

	(void)state;
	assert_non_null(mkdtemp(dir));
	uv_loop_init(&loop);
	reopen(&sp, &loop, dir, false);
	a = store_one(&sp, &loop, 0);
	assert_int_equal(
		settle(&loop, rvd_spool_set_state(&sp, a, RVD_SPOOL_PENDING, NULL, done_cb, NULL)),
		0);
	/* Only an upload in flight can be acknowledged. */
	assert_int_equal(rvd_spool_set_uploaded(&sp, a, "t-1", done_cb, NULL), -EINVAL);
	assert_int_equal(rvd_spool_set_uploaded(&sp, 999, "t-1", done_cb, NULL), -ENOENT);
	assert_int_equal(settle(&loop, rvd_spool_set_state(&sp, a, RVD_SPOOL_UPLOADING, NULL,
							   done_cb, NULL)),
			 0);
	assert_int_equal(
		settle(&loop, rvd_spool_set_uploaded(&sp, a, "t-0123456789abcdef0123456789abcdef",
						     done_cb, NULL)),
		0);
	assert_string_equal(rvd_spool_find(&sp, a)->trace_id, "t-0123456789abcdef0123456789abcdef");
	reopen(&sp, &loop, dir, true);
	assert_int_equal(rvd_spool_find(&sp, a)->state, RVD_SPOOL_UPLOADED);
	assert_string_equal(rvd_spool_find(&sp, a)->trace_id, "t-0123456789abcdef0123456789abcdef");
	assert_int_equal(settle(&loop, rvd_spool_close(&sp, done_cb, NULL)), 0);
	rvd_spool_release(&sp);
	uv_loop_close(&loop);
	rm_rf(dir);
}

static bool file_exists(const char *dir, const char *name)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/captures/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* Issue 18 item 7: 45 uploads left 45 capture files (up to 64 MiB each).
 * An acknowledged upload removes the file; the row and trace id stay. */
static void test_upload_spool_uploaded_file_removed_row_kept(void **state)
{
	char dir[] = "/tmp/rvd-upsp-XXXXXX", file[48];
	struct rvd_spool sp;
	uv_loop_t loop;
	uint64_t a;

	(void)state;
	assert_non_null(mkdtemp(dir));
	uv_loop_init(&loop);
	reopen(&sp, &loop, dir, false);
	a = store_one(&sp, &loop, 0);
	snprintf(file, sizeof(file), "%s", rvd_spool_find(&sp, a)->file);
	assert_true(file[0] && file_exists(dir, file));
	assert_int_equal(
		settle(&loop, rvd_spool_set_state(&sp, a, RVD_SPOOL_PENDING, NULL, done_cb, NULL)),
		0);
	assert_int_equal(settle(&loop, rvd_spool_set_state(&sp, a, RVD_SPOOL_UPLOADING, NULL,
							   done_cb, NULL)),
			 0);
	assert_int_equal(settle(&loop, rvd_spool_set_uploaded(&sp, a, "t-1", done_cb, NULL)), 0);
	assert_false(file_exists(dir, file));
	assert_string_equal(rvd_spool_find(&sp, a)->file, "");
	reopen(&sp, &loop, dir, true);
	assert_int_equal(rvd_spool_find(&sp, a)->state, RVD_SPOOL_UPLOADED);
	assert_string_equal(rvd_spool_find(&sp, a)->trace_id, "t-1");
	assert_string_equal(rvd_spool_find(&sp, a)->file, "");
	assert_int_equal(settle(&loop, rvd_spool_close(&sp, done_cb, NULL)), 0);
	rvd_spool_release(&sp);
	uv_loop_close(&loop);
	rm_rf(dir);
}

/* Runs the loop until every queued job has answered. */
static void drain(uv_loop_t *loop)
{
	uv_run(loop, UV_RUN_DEFAULT);
}

/* Item 7: the spool's files are bounded by count and bytes, oldest first,
 * as skipped(spool_full); a capture still being gated (captured) is kept. */
static void test_upload_spool_over_bounds_oldest_evicted_as_spool_full(void **state)
{
	char dir[] = "/tmp/rvd-upsp-XXXXXX", files[6][48];
	struct rvd_spool sp;
	uv_loop_t loop;
	uint64_t id[6];

	(void)state;
	assert_non_null(mkdtemp(dir));
	uv_loop_init(&loop);
	reopen(&sp, &loop, dir, false);
	for (int i = 0; i < 6; i++) {
		id[i] = store_one(&sp, &loop, 0);
		snprintf(files[i], sizeof(files[i]), "%s", rvd_spool_find(&sp, id[i])->file);
	}
	/* 0 stays captured; 1, 2 pending; 3 skipped (consent local); 4, 5 pending. */
	for (int i = 1; i < 6; i++)
		assert_int_equal(
			settle(&loop,
			       rvd_spool_set_state(&sp, id[i],
						   i == 3 ? RVD_SPOOL_SKIPPED : RVD_SPOOL_PENDING,
						   i == 3 ? "consent_local" : NULL, done_cb, NULL)),
			0);
	/* 6 files of 7 bytes, at most 4 files: the two oldest evictable go. */
	g_calls = 0;
	assert_int_equal(rvd_spool_evict(&sp, 1000, 4, "spool_full", done_cb, NULL), 2);
	/* Asked again before they are durable: nothing more to do. */
	assert_int_equal(rvd_spool_evict(&sp, 1000, 4, "spool_full", done_cb, NULL), 0);
	drain(&loop);
	assert_int_equal(g_calls, 2);
	assert_true(file_exists(dir, files[0]));
	for (int i = 1; i <= 2; i++) {
		assert_false(file_exists(dir, files[i]));
		assert_int_equal(rvd_spool_find(&sp, id[i])->state, RVD_SPOOL_SKIPPED);
		assert_string_equal(rvd_spool_find(&sp, id[i])->reason, "spool_full");
	}
	/* At most 14 bytes (2 files): the skipped 3, then 4. */
	g_calls = 0;
	assert_int_equal(rvd_spool_evict(&sp, 14, 100, "spool_full", done_cb, NULL), 2);
	drain(&loop);
	assert_false(file_exists(dir, files[3]));
	assert_false(file_exists(dir, files[4]));
	assert_true(file_exists(dir, files[5]));
	assert_true(file_exists(dir, files[0]));
	reopen(&sp, &loop, dir, true);
	assert_string_equal(rvd_spool_find(&sp, id[4])->reason, "spool_full");
	assert_int_equal(rvd_spool_find(&sp, id[5])->state, RVD_SPOOL_PENDING);
	assert_int_equal(settle(&loop, rvd_spool_close(&sp, done_cb, NULL)), 0);
	rvd_spool_release(&sp);
	uv_loop_close(&loop);
	rm_rf(dir);
}

/* The schema as it was before uploads (spool version 0). */
static const char v0_schema[] =
	"CREATE TABLE captures(id INTEGER PRIMARY KEY AUTOINCREMENT, state INTEGER NOT NULL,"
	" reason TEXT NOT NULL DEFAULT '', kind INTEGER NOT NULL, severity INTEGER NOT NULL,"
	" pid INTEGER NOT NULL, tid INTEGER NOT NULL, anomaly_ns INTEGER NOT NULL,"
	" attribution INTEGER NOT NULL, name TEXT NOT NULL, detail TEXT NOT NULL,"
	" app_id TEXT NOT NULL, size INTEGER NOT NULL, freeze_latency_ns INTEGER NOT NULL,"
	" file TEXT NOT NULL UNIQUE);"
	"INSERT INTO captures(state,kind,severity,pid,tid,anomaly_ns,attribution,name,detail,"
	"app_id,size,freeze_latency_ns,file) VALUES(1,5,50,1,1,1,0,'','','old',7,1,'c-old.rvc');"
	"INSERT INTO captures(state,kind,severity,pid,tid,anomaly_ns,attribution,name,detail,"
	"app_id,size,freeze_latency_ns,file) VALUES(1,5,50,1,1,1,0,'','','old',7,1,'c-old2.rvc');";

static void test_upload_spool_version0_database_migrated_with_ids(void **state)
{
	char dir[] = "/tmp/rvd-upsp-XXXXXX", path[200];
	struct rvd_spool sp;
	uv_loop_t loop;
	sqlite3 *db;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/captures", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/captures/%s", dir, i ? "c-old2.rvc" : "c-old.rvc");
		fd = open(path, O_WRONLY | O_CREAT, 0600);
		assert_true(fd >= 0);
		close(fd);
	}
	snprintf(path, sizeof(path), "%s/spool.db", dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, v0_schema, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	uv_loop_init(&loop);
	reopen(&sp, &loop, dir, false);
	assert_int_equal(sp.nrecs, 2);
	assert_int_equal(sp.recs[0].state, RVD_SPOOL_PENDING);
	assert_false(zero_id(sp.recs[0].upload_id));
	assert_false(zero_id(sp.recs[1].upload_id));
	assert_memory_not_equal(sp.recs[0].upload_id, sp.recs[1].upload_id, 16);
	assert_string_equal(sp.recs[0].trace_id, "");
	/* Migrated once: the ids do not change at the next open. */
	{
		uint8_t before[16];

		memcpy(before, sp.recs[0].upload_id, 16);
		reopen(&sp, &loop, dir, true);
		assert_memory_equal(sp.recs[0].upload_id, before, 16);
	}
	assert_int_equal(settle(&loop, rvd_spool_close(&sp, done_cb, NULL)), 0);
	rvd_spool_release(&sp);
	uv_loop_close(&loop);
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upload_spool_upload_id_stable_across_crash_recovery),
		cmocka_unit_test(test_upload_spool_uploaded_records_trace_id_durably),
		cmocka_unit_test(test_upload_spool_uploaded_file_removed_row_kept),
		cmocka_unit_test(test_upload_spool_over_bounds_oldest_evicted_as_spool_full),
		cmocka_unit_test(test_upload_spool_version0_database_migrated_with_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
