/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_durable.c — an acknowledged upload survives power loss (issue 18
 * item 6), shown by simulating power loss, not by reading the code.
 *
 * crashvfs is a shim VFS over sqlite's default one, after the pattern of
 * sqlite's own crash simulation (src/test6.c): every file's bytes go to the
 * real file, and at each xSync the shim copies the file as it then is into
 * a "durable image" (the real fsync is skipped: the model is the image).
 * Power loss writes every image back over its file — every write not
 * followed by an xSync of that file is gone — and deletes the -shm file
 * (shared memory).  The crash point is the k-th xSync after the store is
 * open and the device enrolled: that sync never happens and from then on
 * every write, truncate, sync and delete fails, as on a dead disk; without
 * a crash point, power goes at the end, after the last acknowledgement.
 *
 * Each round: 4 threads acknowledge up to 6 uploads each through the store
 * (blob written with rvs_blob_put first, as api.c does), each followed by a
 * skip report, power is lost, the database is reopened with the plain VFS,
 * and every acknowledged upload must be in uploads and on the decode queue,
 * its blob present, every acknowledged skip report in skips, and the
 * database must pass integrity_check.  One round crashes at the end,
 * then one at every k-th sync the first round counted.
 *
 * Before the fix (acknowledged right after a synchronous=NORMAL commit, no
 * fsync of the WAL; the store opened through this VFS) the end-of-run round
 * lost everything it acknowledged: 24 of 24 uploads (48 of 48 uploads and
 * skip reports once skips were added), 0 syncs counted.  With it: 0 lost,
 * 44–47 syncs, 22–24 crash rounds of ~500 acknowledgements in all.
 *
 * Limit: the blob files go to the real file system (no crash model there);
 * what the test shows for them is only that each is complete under its name
 * when its row is acknowledged.  Their durability is rvc_write_file_atomic's
 * (fsync, rename, directory fsync) and blob.c's directory fsyncs.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "blob/blob.h"
#include "store_cases.h"
#include "store/store.h"

static const struct rvs_store_ops *ops = &rvs_store_sqlite;

/* ---- crashvfs ------------------------------------------------------------ */

struct image {
	char path[512];
	unsigned char *buf; /* the file as of its last xSync */
	size_t len;
	int synced; /* 0: never synced, lost on power loss */
	struct image *next;
};

struct cfile {
	sqlite3_file base;
	struct image *img;
	sqlite3_file *real; /* follows this struct in the same allocation */
};

static pthread_mutex_t vmu = PTHREAD_MUTEX_INITIALIZER;
static struct image *images;
static int crashed, armed;
static unsigned long nsyncs, crash_at;
static sqlite3_vfs *base_vfs;
static sqlite3_vfs crash_vfs;
static sqlite3_io_methods crash_io;

/* The image of path (created on first use); under vmu. */
static struct image *image_of(const char *path)
{
	struct image *i;

	for (i = images; i; i = i->next)
		if (strcmp(i->path, path) == 0)
			return i;
	i = calloc(1, sizeof *i);
	assert_non_null(i);
	snprintf(i->path, sizeof i->path, "%s", path);
	i->next = images;
	images = i;
	return i;
}

static int dead(void)
{
	int d;
	pthread_mutex_lock(&vmu);
	d = crashed;
	pthread_mutex_unlock(&vmu);
	return d;
}

static int c_close(sqlite3_file *f)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xClose(c->real);
}

static int c_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xRead(c->real, buf, n, off);
}

static int c_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	struct cfile *c = (struct cfile *)f;
	if (dead())
		return SQLITE_IOERR_WRITE;
	return c->real->pMethods->xWrite(c->real, buf, n, off);
}

static int c_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	struct cfile *c = (struct cfile *)f;
	if (dead())
		return SQLITE_IOERR_TRUNCATE;
	return c->real->pMethods->xTruncate(c->real, size);
}

/* The sync: the file as it is now becomes its durable image — unless this
 * is the crash point. */
static int c_sync(sqlite3_file *f, int flags)
{
	struct cfile *c = (struct cfile *)f;
	sqlite3_int64 size = 0;
	int rc = SQLITE_OK;

	(void)flags;
	pthread_mutex_lock(&vmu);
	if (armed && !crashed && ++nsyncs == crash_at)
		crashed = 1;
	if (crashed) {
		pthread_mutex_unlock(&vmu);
		return SQLITE_IOERR_FSYNC;
	}
	if (c->img) {
		rc = c->real->pMethods->xFileSize(c->real, &size);
		if (rc == SQLITE_OK) {
			unsigned char *b = realloc(c->img->buf, size ? (size_t)size : 1);
			assert_non_null(b);
			c->img->buf = b;
			c->img->len = (size_t)size;
			if (size)
				rc = c->real->pMethods->xRead(c->real, b, (int)size, 0);
			c->img->synced = 1;
		}
	}
	pthread_mutex_unlock(&vmu);
	return rc;
}

static int c_size(sqlite3_file *f, sqlite3_int64 *out)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xFileSize(c->real, out);
}

static int c_lock(sqlite3_file *f, int l)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xLock(c->real, l);
}

static int c_unlock(sqlite3_file *f, int l)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xUnlock(c->real, l);
}

static int c_reserved(sqlite3_file *f, int *out)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xCheckReservedLock(c->real, out);
}

static int c_fcntl(sqlite3_file *f, int op, void *arg)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xFileControl(c->real, op, arg);
}

static int c_sector(sqlite3_file *f)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xSectorSize(c->real);
}

static int c_devchar(sqlite3_file *f)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xDeviceCharacteristics(c->real);
}

static int c_shm_map(sqlite3_file *f, int pg, int sz, int extend, void volatile **out)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xShmMap(c->real, pg, sz, extend, out);
}

static int c_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xShmLock(c->real, off, n, flags);
}

static void c_shm_barrier(sqlite3_file *f)
{
	struct cfile *c = (struct cfile *)f;
	c->real->pMethods->xShmBarrier(c->real);
}

static int c_shm_unmap(sqlite3_file *f, int del)
{
	struct cfile *c = (struct cfile *)f;
	return c->real->pMethods->xShmUnmap(c->real, del);
}

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
	struct cfile *c = (struct cfile *)f;
	int rc;

	(void)vfs;
	c->real = (sqlite3_file *)(c + 1);
	rc = base_vfs->xOpen(base_vfs, name, c->real, flags, out);
	if (rc != SQLITE_OK) {
		f->pMethods = NULL;
		return rc;
	}
	c->img = NULL;
	if (name && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL))) {
		pthread_mutex_lock(&vmu);
		c->img = image_of(name);
		pthread_mutex_unlock(&vmu);
	}
	f->pMethods = &crash_io;
	return SQLITE_OK;
}

/* A delete (the rollback journal of the first transactions, the WAL at the
 * last close) is taken as durable; on a dead disk it fails. */
static int v_delete(sqlite3_vfs *vfs, const char *name, int dirsync)
{
	int rc;

	(void)vfs;
	pthread_mutex_lock(&vmu);
	if (crashed) {
		pthread_mutex_unlock(&vmu);
		return SQLITE_IOERR_DELETE;
	}
	rc = base_vfs->xDelete(base_vfs, name, dirsync);
	for (struct image *i = images; i; i = i->next)
		if (strcmp(i->path, name) == 0) {
			free(i->buf);
			i->buf = NULL;
			i->len = 0;
			i->synced = 0;
		}
	pthread_mutex_unlock(&vmu);
	return rc;
}

static void crashvfs_register(void)
{
	if (base_vfs)
		return;
	base_vfs = sqlite3_vfs_find(NULL);
	assert_non_null(base_vfs);
	crash_vfs = *base_vfs;
	crash_vfs.zName = "rvcrash";
	crash_vfs.szOsFile = (int)sizeof(struct cfile) + base_vfs->szOsFile;
	crash_vfs.pNext = NULL;
	crash_vfs.xOpen = v_open;
	crash_vfs.xDelete = v_delete;
	crash_io = (sqlite3_io_methods){
		.iVersion = 2, /* shared memory (WAL), no memory-mapped I/O */
		.xClose = c_close,
		.xRead = c_read,
		.xWrite = c_write,
		.xTruncate = c_truncate,
		.xSync = c_sync,
		.xFileSize = c_size,
		.xLock = c_lock,
		.xUnlock = c_unlock,
		.xCheckReservedLock = c_reserved,
		.xFileControl = c_fcntl,
		.xSectorSize = c_sector,
		.xDeviceCharacteristics = c_devchar,
		.xShmMap = c_shm_map,
		.xShmLock = c_shm_lock,
		.xShmBarrier = c_shm_barrier,
		.xShmUnmap = c_shm_unmap,
	};
	assert_int_equal(sqlite3_vfs_register(&crash_vfs, 0), SQLITE_OK);
}

/* Power loss: every file goes back to its last synced image (never synced:
 * gone), shared memory is gone.  Nothing may have the files open. */
static void power_loss(const char *db)
{
	char shm[600];

	for (struct image *i = images; i; i = i->next) {
		if (!i->synced) {
			unlink(i->path);
			continue;
		}
		int fd = open(i->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, i->buf ? i->buf : (unsigned char *)"", i->len),
				 (ssize_t)i->len);
		close(fd);
	}
	snprintf(shm, sizeof shm, "%s-shm", db);
	unlink(shm);
}

static void images_reset(unsigned long k)
{
	pthread_mutex_lock(&vmu);
	while (images) {
		struct image *n = images->next;
		free(images->buf);
		free(images);
		images = n;
	}
	crashed = armed = 0;
	nsyncs = 0;
	crash_at = k;
	pthread_mutex_unlock(&vmu);
}

/* ---- a round of uploads and a power loss ----------------------------------- */

#define THREADS	   4
#define PER_THREAD 6
#define UPLOADS	   (THREADS * PER_THREAD)

struct round {
	char dir[64], db[128], blobs[128];
	struct rvs_store *s;
	int acked[UPLOADS];
	int skip_acked[UPLOADS];
	char blob[UPLOADS][65];
};

struct worker {
	struct round *r;
	int t;
};

static void trace_of(int i, char out[40])
{
	snprintf(out, 40, "t-%d", i);
}

/* As api.c's do_upload: the blob, then the row; stops at the first failure
 * (the server would answer 500 and the device send it again). */
static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (int n = 0; n < PER_THREAD; n++) {
		int i = w->t * PER_THREAD + n;
		struct rvs_upload_rec u = {0};
		char payload[64];

		snprintf(payload, sizeof payload, "capture %d of a durability round", i);
		if (rvs_blob_put(w->r->blobs, payload, strlen(payload), w->r->blob[i]))
			break;
		trace_of(i, u.trace_id);
		u.device_id = "d-one";
		memset(u.upload_id, 0, 16);
		memcpy(u.upload_id, &i, sizeof i);
		u.app_id = "app";
		u.payload_kind = 1;
		u.blob_sha256 = w->r->blob[i];
		u.blob_bytes = strlen(payload);
		if (ops->upload_add(w->r->s, &u))
			break;
		w->r->acked[i] = 1; /* the device is told: it deletes its copy */
		/* A skip report is acknowledged the same way. */
		struct rvs_skip_rec k = {.device_id = "d-one", .reason = "quota"};
		memcpy(k.report_id, u.upload_id, 16);
		if (ops->skip_add(w->r->s, &k))
			break;
		w->r->skip_acked[i] = 1;
	}
	return NULL;
}

/* Acknowledged uploads (index row, queue row or blob) and skip reports
 * missing after the power loss; *acked: how many of both were
 * acknowledged. */
static int lost_after_power_loss(struct round *r, int *acked)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int lost = 0;

	power_loss(r->db);
	images_reset(0);
	assert_int_equal(sqlite3_open_v2(r->db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT count(*) FROM uploads u JOIN decode_queue q"
					    " USING (trace_id) WHERE u.trace_id = ?",
					    -1, &st, NULL),
			 SQLITE_OK);
	*acked = 0;
	for (int i = 0; i < UPLOADS; i++) {
		char trace[40], path[1024];
		struct stat sb;

		if (!r->acked[i])
			continue;
		++*acked;
		trace_of(i, trace);
		sqlite3_bind_text(st, 1, trace, -1, SQLITE_TRANSIENT);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		assert_int_equal(rvs_blob_path(r->blobs, r->blob[i], path, sizeof path), 0);
		if (sqlite3_column_int(st, 0) != 1 || stat(path, &sb) != 0)
			lost++;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM skips WHERE report_id = ?",
					    -1, &st, NULL),
			 SQLITE_OK);
	for (int i = 0; i < UPLOADS; i++) {
		uint8_t id[16] = {0};

		if (!r->skip_acked[i])
			continue;
		++*acked;
		memcpy(id, &i, sizeof i);
		sqlite3_bind_blob(st, 1, id, 16, SQLITE_TRANSIENT);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		if (sqlite3_column_int(st, 0) != 1)
			lost++;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return lost;
}

/* One round crashing at the k-th sync (0: at the end); returns the syncs
 * counted while armed, *lost and *acked. */
static unsigned long run_round(unsigned long k, int *lost, int *acked)
{
	struct round *r = calloc(1, sizeof *r);
	struct rvs_device_rec d = {0};
	pthread_t th[THREADS];
	struct worker w[THREADS];
	char dsn[200], cmd[128];
	unsigned long syncs;

	assert_non_null(r);
	snprintf(r->dir, sizeof r->dir, "/tmp/rvs-durable-XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	snprintf(r->db, sizeof r->db, "%s/t.db", r->dir);
	snprintf(r->blobs, sizeof r->blobs, "%s/blobs", r->dir);
	snprintf(dsn, sizeof dsn, "file:%s?vfs=rvcrash", r->db);
	images_reset(k);
	assert_int_equal(ops->open(dsn, &r->s), 0);
	snprintf(d.device_id, sizeof d.device_id, "d-one");
	memset(d.token_hash, 1, 32);
	assert_int_equal(ops->device_add(r->s, &d), 0);
	pthread_mutex_lock(&vmu);
	armed = 1;
	pthread_mutex_unlock(&vmu);
	for (int t = 0; t < THREADS; t++) {
		w[t] = (struct worker){r, t};
		assert_int_equal(pthread_create(&th[t], NULL, worker_main, &w[t]), 0);
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_lock(&vmu);
	syncs = nsyncs;
	crashed = 1; /* power goes now if it has not already */
	pthread_mutex_unlock(&vmu);
	ops->close(r->s);
	*lost = lost_after_power_loss(r, acked);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
	assert_int_equal(system(cmd), 0);
	free(r);
	return syncs;
}

static void test_durable_power_loss_at_every_kth_sync_keeps_every_acked_upload(void **state)
{
	unsigned long syncs, step;
	int lost, acked, rounds = 0, acked_total = 0;

	(void)state;
	crashvfs_register();
	/* Power lost after the last acknowledgement. */
	syncs = run_round(0, &lost, &acked);
	print_message(
		"end of run: %d of %d acknowledged uploads and skip reports lost, %lu syncs\n",
		lost, acked, syncs);
	assert_int_equal(acked, 2 * UPLOADS);
	assert_int_equal(lost, 0);
	/* Power lost at the k-th sync: at most ~30 rounds whatever the count. */
	step = syncs / 30 + 1;
	for (unsigned long k = 1; k <= syncs; k += step) {
		run_round(k, &lost, &acked);
		if (lost)
			print_message("crash at sync %lu: %d of %d acknowledged lost\n", k, lost,
				      acked);
		assert_int_equal(lost, 0);
		rounds++;
		acked_total += acked;
	}
	print_message("%d crash rounds, %d acknowledged uploads and skip reports, none lost\n",
		      rounds, acked_total);
	assert_true(rounds > 0);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_durable_power_loss_at_every_kth_sync_keeps_every_acked_upload),
	};
	rvt_store_cases(tests);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
