/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_spool.c — the spool on a real libuv loop and a temporary state
 * directory: store → durable file and row, state transitions persisted,
 * recovery at open (temporary and unindexed files removed, uploading rows
 * back to pending), refused transitions.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "spool.h"

struct result {
	int calls;
	int status;
	uint64_t id;
};

static void cb(struct rvd_spool *sp, int status, uint64_t id, void *data)
{
	struct result *r = data;

	r->calls++;
	r->status = status;
	r->id = id;
}

static int make_capture(const char *text)
{
	int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	return fd;
}

static void open_spool(struct rvd_spool *sp, uv_loop_t *loop, const char *dir)
{
	struct result r = {0};

	rvd_spool_init(sp, loop, dir);
	assert_int_equal(rvd_spool_open(sp, cb, &r), 0);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(r.calls, 1);
	assert_int_equal(r.status, 0);
}

static void close_spool(struct rvd_spool *sp, uv_loop_t *loop)
{
	struct result r = {0};

	assert_int_equal(rvd_spool_close(sp, cb, &r), 0);
	uv_run(loop, UV_RUN_DEFAULT);
	assert_int_equal(r.calls, 1);
	rvd_spool_release(sp);
}

static void touch(const char *dir, const char *name)
{
	char path[400];
	int fd;

	snprintf(path, sizeof(path), "%s/captures/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
}

static bool exists(const char *dir, const char *name)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/captures/%s", dir, name);
	return access(path, F_OK) == 0;
}

static void test_spool_store_persist_and_recover(void **state)
{
	char dir[] = "/tmp/rvd-spool-XXXXXX", cmd[64], file[48], path[400];
	struct rvd_capture_rec meta = {0};
	struct rvd_spool sp;
	struct result r = {0}, r2 = {0}, r3 = {0};
	const struct rvd_capture_rec *rec;
	uv_loop_t loop;
	char buf[32] = {0};
	int fd;

	assert_non_null(mkdtemp(dir));
	uv_loop_init(&loop);
	open_spool(&sp, &loop, dir);
	assert_int_equal(sp.nrecs, 0);

	meta.anomaly.kind = RVD_ANOMALY_JANK;
	meta.anomaly.pid = 42;
	snprintf(meta.app_id, sizeof(meta.app_id), "app");
	assert_int_equal(rvd_spool_store(&sp, make_capture("hello capture"), 13, &meta, cb, &r), 0);
	assert_int_equal(rvd_spool_store(&sp, make_capture("second"), 6, &meta, cb, &r2), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(r.status, 0);
	assert_int_equal(r2.status, 0);
	assert_true(r.id != r2.id);
	rec = rvd_spool_find(&sp, r.id);
	assert_non_null(rec);
	assert_int_equal(rec->state, RVD_SPOOL_CAPTURED);
	assert_int_equal(rec->size, 13);
	snprintf(file, sizeof(file), "%s", rec->file);
	snprintf(path, sizeof(path), "%s/captures/%s", dir, file);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 13);
	close(fd);
	assert_string_equal(buf, "hello capture");

	/* Transitions: a forbidden one is refused before any I/O. */
	assert_int_equal(rvd_spool_set_state(&sp, r.id, RVD_SPOOL_UPLOADED, NULL, cb, &r3),
			 -EINVAL);
	assert_int_equal(rvd_spool_set_state(&sp, 999, RVD_SPOOL_PENDING, NULL, cb, &r3), -ENOENT);
	assert_int_equal(rvd_spool_set_state(&sp, r.id, RVD_SPOOL_PENDING, NULL, cb, &r3), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(rvd_spool_set_state(&sp, r.id, RVD_SPOOL_UPLOADING, NULL, cb, &r3), 0);
	assert_int_equal(
		rvd_spool_set_state(&sp, r2.id, RVD_SPOOL_SKIPPED, "consent_local", cb, &r3), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(r3.status, 0);
	close_spool(&sp, &loop);

	/* Debris of a crash: a temporary file and a file no row refers to. */
	touch(dir, ".tmp-c-0000000000000000.rvc");
	touch(dir, "c-ffffffffffffffff.rvc");
	open_spool(&sp, &loop, dir);
	assert_int_equal(sp.nrecs, 2);
	assert_false(exists(dir, ".tmp-c-0000000000000000.rvc"));
	assert_false(exists(dir, "c-ffffffffffffffff.rvc"));
	assert_true(exists(dir, file));
	rec = rvd_spool_find(&sp, r.id);
	/* uploading at the crash → pending again (uploads are idempotent). */
	assert_int_equal(rec->state, RVD_SPOOL_PENDING);
	rec = rvd_spool_find(&sp, r2.id);
	assert_int_equal(rec->state, RVD_SPOOL_SKIPPED);
	assert_string_equal(rec->reason, "consent_local");
	assert_int_equal(rvd_spool_count(&sp, RVD_SPOOL_PENDING), 1);
	close_spool(&sp, &loop);

	assert_int_equal(uv_loop_close(&loop), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_spool_unwritable_dir_fails_open(void **state)
{
	struct rvd_spool sp;
	struct result r = {0};
	uv_loop_t loop;

	uv_loop_init(&loop);
	rvd_spool_init(&sp, &loop, "/proc/rvd-no-such-dir");
	assert_int_equal(rvd_spool_open(&sp, cb, &r), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_true(r.status < 0);
	rvd_spool_release(&sp);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spool_store_persist_and_recover),
		cmocka_unit_test(test_spool_unwritable_dir_fails_open),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
