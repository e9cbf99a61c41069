/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spool.c — capture spool: files + sqlite3 WAL index, all I/O on the libuv
 * work queue (see spool.h for the state machine and durability contract).
 *
 * Invariants:
 *  - at most one job runs at a time (the head of the FIFO), so the sqlite
 *    handle is used by one thread at a time and jobs see each other's effects
 *    in submission order;
 *  - the mirror (recs) is touched only on the loop thread, in after-work;
 *  - a row exists only for a file that was renamed into place and whose
 *    directory entry was fsync'd; a file without a row was never
 *    acknowledged and is removed at open;
 *  - at most one prune (history retention) job is queued; a row it will
 *    delete is marked `pruning` and is no longer purged or evicted, and a
 *    deleted row is counted in `history` in the same transaction.
 */
#include "spool.h"

#include <dirent.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "rearview/common.h"

enum job_type {
	JOB_OPEN,
	JOB_STORE,
	JOB_STATE,
	JOB_SETTING,
	JOB_CLOSE,
	JOB_PURGE,
	JOB_RUN,
	JOB_REPORTED,
	JOB_PRUNE
};

struct rvd_spool_job {
	uv_work_t req;
	struct rvd_spool *sp;
	struct rvd_spool_job *next;
	enum job_type type;
	rvd_spool_cb cb;
	void *data;
	int status;
	/* JOB_STORE / JOB_STATE */
	int fd;
	uint64_t size;
	struct rvd_capture_rec rec;
	int from_state;
	bool set_trace; /* JOB_STATE: also record rec.trace_id */
	/* JOB_SETTING */
	char name[64];
	void *value;
	size_t len;
	/* JOB_RUN */
	void (*fn)(void *arg);
	void *arg;
	/* JOB_OPEN: rows loaded from the index */
	struct rvd_capture_rec *loaded;
	size_t nloaded;
	/* JOB_OPEN: the history totals; JOB_PRUNE: the rows deleted by state */
	uint64_t retired[RVD_SPOOL_SKIPPED + 1];
	/* JOB_PRUNE: the rows to delete */
	uint64_t *ids;
	size_t nids;
};

static const char *const state_names[] = {"captured", "pending", "uploading", "uploaded",
					  "skipped"};

const char *rvd_spool_state_name(int state)
{
	if (state < 0 || state > RVD_SPOOL_SKIPPED)
		return "unknown";
	return state_names[state];
}

bool rvd_spool_transition_ok(int from, int to)
{
	switch (from) {
	case RVD_SPOOL_CAPTURED:
		return to == RVD_SPOOL_PENDING || to == RVD_SPOOL_SKIPPED;
	case RVD_SPOOL_PENDING:
		return to == RVD_SPOOL_UPLOADING || to == RVD_SPOOL_SKIPPED;
	case RVD_SPOOL_UPLOADING:
		return to == RVD_SPOOL_UPLOADED || to == RVD_SPOOL_SKIPPED ||
		       to == RVD_SPOOL_PENDING;
	default: /* uploaded and skipped are final */
		return false;
	}
}

void rvd_spool_init(struct rvd_spool *sp, uv_loop_t *loop, const char *state_dir)
{
	memset(sp, 0, sizeof(*sp));
	sp->loop = loop;
	sp->history_rows = UINT32_MAX;
	snprintf(sp->dir, sizeof(sp->dir), "%s", state_dir);
}

/* ---- helpers that run on work-queue threads ---------------------------- */

static int exec_sql(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	if (rc != SQLITE_OK) {
		rvd_err("spool: %s: %s", sql, msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
	}
	return rvc_sqlite_errno(rc);
}

static const char schema[] = "CREATE TABLE IF NOT EXISTS captures("
			     " id INTEGER PRIMARY KEY AUTOINCREMENT,"
			     " state INTEGER NOT NULL,"
			     " reason TEXT NOT NULL DEFAULT '',"
			     " kind INTEGER NOT NULL, severity INTEGER NOT NULL,"
			     " pid INTEGER NOT NULL, tid INTEGER NOT NULL,"
			     " anomaly_ns INTEGER NOT NULL, attribution INTEGER NOT NULL,"
			     " name TEXT NOT NULL, detail TEXT NOT NULL,"
			     " app_id TEXT NOT NULL, size INTEGER NOT NULL,"
			     " freeze_latency_ns INTEGER NOT NULL,"
			     " file TEXT NOT NULL UNIQUE);"
			     "CREATE TABLE IF NOT EXISTS history("
			     " state INTEGER NOT NULL, reason TEXT NOT NULL,"
			     " n INTEGER NOT NULL, PRIMARY KEY(state, reason));";

/*
 * Schema version 1 (PRAGMA user_version): the upload columns.  A version-0
 * database (written before uploads existed) gains them in one transaction,
 * and each of its rows an upload id, so even captures stored by an older
 * daemon are sent under one stable id.  Version 2: skip_reported, set once
 * the server acknowledged the skip report of a skipped row (its upload id
 * is the report id).  Version 3: the selection columns (sel_*), how the
 * policy chose the capture, sent with it for the fleet's weights.
 */
static int migrate(sqlite3 *db)
{
	sqlite3_stmt *st;
	int version = 0, rc;

	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version >= 3)
		return 0;
	if ((rc = exec_sql(db, "BEGIN IMMEDIATE;")) < 0)
		return rc;
	if (version == 2)
		goto version_3;
	if (version == 1)
		goto version_2;
	if ((rc = exec_sql(db, "ALTER TABLE captures ADD COLUMN upload_id BLOB;")) < 0 ||
	    (rc = exec_sql(db, "ALTER TABLE captures ADD COLUMN trace_id TEXT NOT NULL "
			       "DEFAULT '';")) < 0 ||
	    (rc = exec_sql(db, "ALTER TABLE captures ADD COLUMN reservation INTEGER NOT NULL "
			       "DEFAULT 0;")) < 0 ||
	    (rc = exec_sql(db, "UPDATE captures SET upload_id=randomblob(16) "
			       "WHERE upload_id IS NULL;")) < 0)
		goto rollback;
version_2:
	if ((rc = exec_sql(db, "ALTER TABLE captures ADD COLUMN skip_reported INTEGER NOT NULL "
			       "DEFAULT 0;")) < 0)
		goto rollback;
version_3:
	if ((rc = exec_sql(db, "ALTER TABLE captures ADD COLUMN sel_campaign TEXT NOT NULL "
			       "DEFAULT '';")) < 0 ||
	    (rc = exec_sql(db, "ALTER TABLE captures ADD COLUMN sel_kind INTEGER NOT NULL "
			       "DEFAULT 0;")) < 0 ||
	    (rc = exec_sql(db, "ALTER TABLE captures ADD COLUMN sel_p REAL NOT NULL "
			       "DEFAULT 0;")) < 0 ||
	    (rc = exec_sql(db, "ALTER TABLE captures ADD COLUMN sel_seen INTEGER NOT NULL "
			       "DEFAULT 0;")) < 0 ||
	    (rc = exec_sql(db, "ALTER TABLE captures ADD COLUMN sel_taken INTEGER NOT NULL "
			       "DEFAULT 0;")) < 0 ||
	    (rc = exec_sql(db, "PRAGMA user_version=3;")) < 0)
		goto rollback;
	return exec_sql(db, "COMMIT;");
rollback:
	exec_sql(db, "ROLLBACK;");
	return rc;
}

static void copy_text(char *dst, size_t cap, const unsigned char *src)
{
	snprintf(dst, cap, "%s", src ? (const char *)src : "");
}

static int load_rows(struct rvd_spool_job *job, sqlite3 *db)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc = sqlite3_prepare_v2(
		db,
		"SELECT id,state,reason,kind,severity,pid,tid,anomaly_ns,"
		"attribution,name,detail,app_id,size,freeze_latency_ns,file,"
		"upload_id,trace_id,reservation,skip_reported,sel_campaign,sel_kind,"
		"sel_p,sel_seen,sel_taken FROM captures "
		"ORDER BY id",
		-1, &st, NULL);

	if (rc != SQLITE_OK)
		return rvc_sqlite_errno(rc);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct rvd_capture_rec *r;

		if (job->nloaded == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			void *p = realloc(job->loaded, ncap * sizeof(*job->loaded));

			if (!p) {
				sqlite3_finalize(st);
				return -ENOMEM;
			}
			job->loaded = p;
			cap = ncap;
		}
		r = &job->loaded[job->nloaded++];
		memset(r, 0, sizeof(*r));
		r->id = (uint64_t)sqlite3_column_int64(st, 0);
		r->state = sqlite3_column_int(st, 1);
		copy_text(r->reason, sizeof(r->reason), sqlite3_column_text(st, 2));
		r->anomaly.kind = sqlite3_column_int(st, 3);
		r->anomaly.severity = (uint32_t)sqlite3_column_int(st, 4);
		r->anomaly.pid = sqlite3_column_int(st, 5);
		r->anomaly.tid = sqlite3_column_int(st, 6);
		r->anomaly.monotonic_ns = (uint64_t)sqlite3_column_int64(st, 7);
		r->anomaly.attribution = sqlite3_column_int(st, 8);
		copy_text(r->anomaly.name, sizeof(r->anomaly.name), sqlite3_column_text(st, 9));
		copy_text(r->anomaly.detail, sizeof(r->anomaly.detail),
			  sqlite3_column_text(st, 10));
		copy_text(r->app_id, sizeof(r->app_id), sqlite3_column_text(st, 11));
		r->size = (uint64_t)sqlite3_column_int64(st, 12);
		r->freeze_latency_ns = (uint64_t)sqlite3_column_int64(st, 13);
		copy_text(r->file, sizeof(r->file), sqlite3_column_text(st, 14));
		if (sqlite3_column_bytes(st, 15) == (int)sizeof(r->upload_id))
			memcpy(r->upload_id, sqlite3_column_blob(st, 15), sizeof(r->upload_id));
		copy_text(r->trace_id, sizeof(r->trace_id), sqlite3_column_text(st, 16));
		r->reservation = sqlite3_column_int64(st, 17);
		r->skip_reported = sqlite3_column_int(st, 18) != 0;
		copy_text(r->sel.campaign, sizeof(r->sel.campaign), sqlite3_column_text(st, 19));
		r->sel.kind = sqlite3_column_int(st, 20);
		r->sel.probability = sqlite3_column_double(st, 21);
		r->sel.seen = (uint32_t)sqlite3_column_int64(st, 22);
		r->sel.taken = (uint32_t)sqlite3_column_int64(st, 23);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static bool is_indexed(const struct rvd_spool_job *job, const char *name)
{
	for (size_t i = 0; i < job->nloaded; i++)
		if (!strcmp(job->loaded[i].file, name))
			return true;
	return false;
}

/* Removes temporary files and files no row refers to: neither was ever
 * acknowledged.  Marks rows whose file vanished as skipped(file_missing). */
static int recover_files(struct rvd_spool_job *job, sqlite3 *db, const char *capdir)
{
	struct dirent *de;
	DIR *d = opendir(capdir);

	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' && (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")))
			continue;
		if (de->d_name[0] == '.' || !is_indexed(job, de->d_name)) {
			rvd_info("spool: removing unacknowledged %s", de->d_name);
			unlinkat(dirfd(d), de->d_name, 0);
		}
	}
	for (size_t i = 0; i < job->nloaded; i++) {
		struct rvd_capture_rec *r = &job->loaded[i];
		struct stat stb;
		char sql[160];

		if (r->state == RVD_SPOOL_UPLOADING) {
			/* The upload id is idempotent server-side; retrying is safe. */
			r->state = RVD_SPOOL_PENDING;
			snprintf(sql, sizeof(sql), "UPDATE captures SET state=%d WHERE id=%llu",
				 RVD_SPOOL_PENDING, (unsigned long long)r->id);
			exec_sql(db, sql);
		}
		if (fstatat(dirfd(d), r->file, &stb, 0) == 0 || r->state == RVD_SPOOL_SKIPPED ||
		    r->state == RVD_SPOOL_UPLOADED)
			continue;
		rvd_err("spool: capture %llu lost its file %s", (unsigned long long)r->id, r->file);
		r->state = RVD_SPOOL_SKIPPED;
		snprintf(r->reason, sizeof(r->reason), "file_missing");
		snprintf(sql, sizeof(sql),
			 "UPDATE captures SET state=%d, reason='file_missing' WHERE id=%llu",
			 RVD_SPOOL_SKIPPED, (unsigned long long)r->id);
		exec_sql(db, sql);
	}
	closedir(d);
	return rvc_fsync_dir(capdir);
}

/* Schema migration: spools created before local summaries lack the
 * `summary` column (a serialized rearview.Summary, NULL when none). */
static int migrate_summary(sqlite3 *db)
{
	sqlite3_stmt *st;
	bool have = false;
	int rc = sqlite3_prepare_v2(db, "PRAGMA table_info(captures)", -1, &st, NULL);

	if (rc != SQLITE_OK)
		return rvc_sqlite_errno(rc);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (!strcmp((const char *)sqlite3_column_text(st, 1), "summary"))
			have = true;
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return rvc_sqlite_errno(rc);
	if (!have && (rc = exec_sql(db, "ALTER TABLE captures ADD COLUMN summary BLOB;")) < 0)
		return rc;
	/* Rows left without their placeholder (older spools, a crash right
	 * after an insert): see file_placeholder. */
	return exec_sql(db, "UPDATE captures SET file='-'||id WHERE file='';");
}

/*
 * `file` is UNIQUE, so a row without a file (a skipped anomaly, a purged
 * capture) holds a placeholder no capture file can have ("-<id>"; files
 * are "c-…"), read back as no file.  Failure only logs: the row itself is
 * durable, and the next open repairs it.
 */
static void file_placeholder(sqlite3 *db, uint64_t id)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "UPDATE captures SET file='-'||id WHERE id=%llu",
		 (unsigned long long)id);
	exec_sql(db, sql);
}

/* Which loaded rows have a summary (a query of its own: the row loader
 * stays as it is), and the file-less rows' placeholders read as no file. */
static int load_summary_flags(struct rvd_spool_job *job, sqlite3 *db)
{
	sqlite3_stmt *st;
	size_t k = 0;
	int rc;

	for (size_t i = 0; i < job->nloaded; i++)
		if (job->loaded[i].file[0] == '-')
			job->loaded[i].file[0] = '\0';
	rc = sqlite3_prepare_v2(db, "SELECT id FROM captures WHERE summary IS NOT NULL ORDER BY id",
				-1, &st, NULL);

	if (rc != SQLITE_OK)
		return rvc_sqlite_errno(rc);
	/* Both lists are in id order: one merge pass. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);

		while (k < job->nloaded && job->loaded[k].id < id)
			k++;
		if (k < job->nloaded && job->loaded[k].id == id)
			job->loaded[k].has_summary = true;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

/* The history totals by state (rows deleted by retention). */
static int load_history(struct rvd_spool_job *job, sqlite3 *db)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, "SELECT state, SUM(n) FROM history GROUP BY state", -1, &st,
				    NULL);

	if (rc != SQLITE_OK)
		return rvc_sqlite_errno(rc);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int state = sqlite3_column_int(st, 0);

		if (state >= 0 && state <= RVD_SPOOL_SKIPPED)
			job->retired[state] += (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static void work_open(struct rvd_spool_job *job)
{
	struct rvd_spool *sp = job->sp;
	char path[320], capdir[300];
	sqlite3 *db = NULL;
	int rc;

	snprintf(capdir, sizeof(capdir), "%s/captures", sp->dir);
	if (mkdir(sp->dir, 0700) < 0 && errno != EEXIST) {
		job->status = -errno;
		return;
	}
	if (mkdir(capdir, 0700) < 0 && errno != EEXIST) {
		job->status = -errno;
		return;
	}
	snprintf(path, sizeof(path), "%s/spool.db", sp->dir);
	rc = sqlite3_open_v2(
		path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		rvd_err("spool: open %s: %s", path, sqlite3_errstr(rc));
		sqlite3_close(db);
		job->status = rvc_sqlite_errno(rc);
		return;
	}
	sqlite3_busy_timeout(db, 5000);
	/* WAL with synchronous=FULL: a commit is durable when it returns. */
	if ((rc = exec_sql(db, "PRAGMA journal_mode=WAL;")) < 0 ||
	    (rc = exec_sql(db, "PRAGMA synchronous=FULL;")) < 0 ||
	    (rc = exec_sql(db, schema)) < 0 || (rc = migrate(db)) < 0 ||
	    (rc = load_rows(job, db)) < 0 || (rc = recover_files(job, db, capdir)) < 0) {
		sqlite3_close(db);
		job->status = rc;
		return;
	}
	/* Local summaries: the column, and which rows have one. */
	if ((rc = migrate_summary(db)) < 0 || (rc = load_summary_flags(job, db)) < 0 ||
	    (rc = load_history(job, db)) < 0) {
		sqlite3_close(db);
		job->status = rc;
		return;
	}
	sp->db = db;
}

/* Copies the sealed capture memfd into the spool file (an rvc_fill_fn). */
static int copy_capture(int out, void *arg)
{
	const struct rvd_spool_job *job = arg;
	uint8_t buf[65536];
	uint64_t off = 0;
	int rc;

	while (off < job->size) {
		size_t want =
			job->size - off < sizeof(buf) ? (size_t)(job->size - off) : sizeof(buf);

		if ((rc = rvc_pread_all(job->fd, buf, want, off)) < 0 ||
		    (rc = rvc_write_all(out, buf, want)) < 0)
			return rc;
		off += want;
	}
	return 0;
}

static void work_store(struct rvd_spool_job *job)
{
	struct rvd_spool *sp = job->sp;
	struct rvd_capture_rec *r = &job->rec;
	char path[400];
	static const char sql[] =
		"INSERT INTO captures(state,reason,kind,severity,pid,tid,anomaly_ns,attribution,"
		"name,detail,app_id,size,freeze_latency_ns,file,upload_id,reservation,"
		"sel_campaign,sel_kind,sel_p,sel_seen,sel_taken) "
		"VALUES(?1,?14,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?15,?16,?17,?18,?19,?20,"
		"?21)";
	uint8_t rnd[8];
	sqlite3_stmt *st = NULL;
	int rc;

	if (getrandom(r->upload_id, sizeof(r->upload_id), 0) != sizeof(r->upload_id)) {
		job->status = -EIO;
		return;
	}
	r->trace_id[0] = '\0';
	/* A capture-less row: an anomaly the policy refused, kept with its reason. */
	if (job->fd < 0) {
		r->file[0] = '\0';
		job->size = 0;
		goto insert_row;
	}
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		job->status = -EIO;
		return;
	}
	snprintf(r->file, sizeof(r->file), "c-%02x%02x%02x%02x%02x%02x%02x%02x.rvc", rnd[0], rnd[1],
		 rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	snprintf(path, sizeof(path), "%s/captures/%s", sp->dir, r->file);
	if ((rc = rvc_write_file_atomic_fn(path, 0600, copy_capture, job)) < 0) {
		/* Only a failed directory fsync leaves the file in place. */
		unlink(path);
		job->status = rc;
		return;
	}
	r->state = RVD_SPOOL_CAPTURED;
	r->reason[0] = '\0';
insert_row:
	rc = sqlite3_prepare_v2(sp->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int(st, 1, r->state);
		sqlite3_bind_int(st, 2, r->anomaly.kind);
		sqlite3_bind_int(st, 3, (int)r->anomaly.severity);
		sqlite3_bind_int(st, 4, r->anomaly.pid);
		sqlite3_bind_int(st, 5, r->anomaly.tid);
		sqlite3_bind_int64(st, 6, (sqlite3_int64)r->anomaly.monotonic_ns);
		sqlite3_bind_int(st, 7, r->anomaly.attribution);
		sqlite3_bind_text(st, 8, r->anomaly.name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 9, r->anomaly.detail, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 10, r->app_id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 11, (sqlite3_int64)job->size);
		sqlite3_bind_int64(st, 12, (sqlite3_int64)r->freeze_latency_ns);
		sqlite3_bind_text(st, 13, r->file, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 14, r->reason, -1, SQLITE_STATIC);
		sqlite3_bind_blob(st, 15, r->upload_id, sizeof(r->upload_id), SQLITE_STATIC);
		sqlite3_bind_int64(st, 16, r->reservation);
		sqlite3_bind_text(st, 17, r->sel.campaign, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 18, r->sel.kind);
		sqlite3_bind_double(st, 19, r->sel.probability);
		sqlite3_bind_int64(st, 20, r->sel.seen);
		sqlite3_bind_int64(st, 21, r->sel.taken);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		rvd_err("spool: insert: %s", sqlite3_errmsg(sp->db));
		/* No row: the file is an orphan; remove it now rather than at open. */
		if (r->file[0])
			unlink(path);
		job->status = rvc_sqlite_errno(rc);
		return;
	}
	r->id = (uint64_t)sqlite3_last_insert_rowid(sp->db);
	if (!r->file[0])
		file_placeholder(sp->db, r->id);
	r->size = job->size;
	job->status = 0;
}

/* Purge: the row becomes skipped(reason) without a file, then the file is
 * removed (a crash in between leaves an unindexed file, removed at open). */
static void work_purge(struct rvd_spool_job *job)
{
	sqlite3_stmt *st = NULL;
	char path[400];
	int rc = sqlite3_prepare_v2(job->sp->db,
				    "UPDATE captures SET state=?1, reason=?2, file='-'||?3, "
				    "summary=NULL WHERE id=?3",
				    -1, &st, NULL);

	if (rc == SQLITE_OK) {
		sqlite3_bind_int(st, 1, job->rec.state);
		sqlite3_bind_text(st, 2, job->rec.reason, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)job->rec.id);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	job->status = rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
	if (job->status < 0 || !job->rec.file[0])
		return;
	snprintf(path, sizeof(path), "%s/captures/%s", job->sp->dir, job->rec.file);
	if (unlink(path) < 0 && errno != ENOENT) {
		job->status = -errno;
		return;
	}
	snprintf(path, sizeof(path), "%s/captures", job->sp->dir);
	job->status = rvc_fsync_dir(path);
}

/* A state change.  An acknowledged upload (set_trace) also drops the
 * capture's file — row and summary stay for rvctl — committed first, then
 * unlinked (a crash in between leaves an unindexed file, removed at open):
 * issue 18 item 7, 45 uploads left 45 files of up to 64 MiB. */
static void work_state(struct rvd_spool_job *job)
{
	sqlite3_stmt *st = NULL;
	char path[400];
	int rc = sqlite3_prepare_v2(
		job->sp->db,
		job->set_trace ? "UPDATE captures SET state=?1, reason=?2, trace_id=?5, "
				 "file='-'||?3 WHERE id=?3 AND state=?4"
			       : "UPDATE captures SET state=?1, reason=?2 WHERE id=?3 AND state=?4",
		-1, &st, NULL);

	if (rc == SQLITE_OK) {
		sqlite3_bind_int(st, 1, job->rec.state);
		sqlite3_bind_text(st, 2, job->rec.reason, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)job->rec.id);
		sqlite3_bind_int(st, 4, job->from_state);
		if (job->set_trace)
			sqlite3_bind_text(st, 5, job->rec.trace_id, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	job->status = rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
	/* The row left from_state after this job was queued (a purge queued
	 * before it): the mirror must not take the new state. */
	if (job->status == 0 && sqlite3_changes(job->sp->db) == 0)
		job->status = -ESTALE;
	if (job->status < 0 || !job->set_trace || !job->rec.file[0])
		return;
	snprintf(path, sizeof(path), "%s/captures/%s", job->sp->dir, job->rec.file);
	/* The row no longer names the file: a failure here only logs, and the
	 * next open removes the unindexed file. */
	if (unlink(path) < 0 && errno != ENOENT)
		rvd_warn("spool: removing uploaded %s: %s", job->rec.file, strerror(errno));
	snprintf(path, sizeof(path), "%s/captures", job->sp->dir);
	if ((rc = rvc_fsync_dir(path)) < 0)
		rvd_warn("spool: fsync captures/: %s", strerror(-rc));
}

static void work_reported(struct rvd_spool_job *job)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(job->sp->db,
				    "UPDATE captures SET skip_reported=1 WHERE id=?1 AND state=?2",
				    -1, &st, NULL);

	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)job->rec.id);
		sqlite3_bind_int(st, 2, RVD_SPOOL_SKIPPED);
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	job->status = rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

/*
 * Deletes the rows job->ids (finished when the prune was queued; a row no
 * longer finished is left) and counts each in `history` by its state and
 * reason, all in one transaction.
 */
static void work_prune(struct rvd_spool_job *job)
{
	sqlite3 *db = job->sp->db;
	sqlite3_stmt *del = NULL, *add = NULL;
	int rc;

	if ((rc = exec_sql(db, "BEGIN IMMEDIATE;")) < 0) {
		job->status = rc;
		return;
	}
	rc = sqlite3_prepare_v2(db,
				"DELETE FROM captures WHERE id=?1 AND state IN (?2, ?3) AND "
				"(file='' OR file LIKE '-%') RETURNING state, reason",
				-1, &del, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db,
					"INSERT INTO history(state, reason, n) VALUES(?1, ?2, 1) "
					"ON CONFLICT(state, reason) DO UPDATE SET n=n+1",
					-1, &add, NULL);
	for (size_t i = 0; rc == SQLITE_OK && i < job->nids; i++) {
		int state;

		sqlite3_reset(del);
		sqlite3_bind_int64(del, 1, (sqlite3_int64)job->ids[i]);
		sqlite3_bind_int(del, 2, RVD_SPOOL_UPLOADED);
		sqlite3_bind_int(del, 3, RVD_SPOOL_SKIPPED);
		rc = sqlite3_step(del);
		if (rc == SQLITE_DONE) { /* no longer finished: kept */
			job->ids[i] = 0;
			rc = SQLITE_OK;
			continue;
		}
		if (rc != SQLITE_ROW)
			break;
		state = sqlite3_column_int(del, 0);
		sqlite3_reset(add);
		sqlite3_bind_int(add, 1, state);
		sqlite3_bind_text(add, 2, (const char *)sqlite3_column_text(del, 1), -1,
				  SQLITE_TRANSIENT);
		/* RETURNING rows are all produced by the first step: finish it. */
		rc = sqlite3_step(del);
		if (rc == SQLITE_DONE)
			rc = sqlite3_step(add);
		if (rc != SQLITE_DONE)
			break;
		job->retired[state]++;
		rc = SQLITE_OK;
	}
	sqlite3_finalize(del);
	sqlite3_finalize(add);
	if (rc != SQLITE_OK) {
		rvd_err("spool: deleting old rows: %s", sqlite3_errmsg(db));
		exec_sql(db, "ROLLBACK;");
		memset(job->retired, 0, sizeof(job->retired));
		job->status = rvc_sqlite_errno(rc);
		return;
	}
	job->status = exec_sql(db, "COMMIT;");
	if (job->status < 0) {
		exec_sql(db, "ROLLBACK;");
		memset(job->retired, 0, sizeof(job->retired));
	}
}

static void work_setting(struct rvd_spool_job *job)
{
	char path[320];

	snprintf(path, sizeof(path), "%s/%s", job->sp->dir, job->name);
	job->status = rvc_write_file_atomic(path, job->value, job->len, 0600);
}

static void work_cb(uv_work_t *req)
{
	struct rvd_spool_job *job = req->data;

	if (job->type != JOB_OPEN && job->type != JOB_SETTING && job->type != JOB_RUN &&
	    !job->sp->db) {
		job->status = -EBADF;
		return;
	}
	switch (job->type) {
	case JOB_OPEN:
		work_open(job);
		break;
	case JOB_STORE:
		work_store(job);
		break;
	case JOB_STATE:
		work_state(job);
		break;
	case JOB_SETTING:
		work_setting(job);
		break;
	case JOB_PURGE:
		work_purge(job);
		break;
	case JOB_RUN:
		job->fn(job->arg);
		break;
	case JOB_REPORTED:
		work_reported(job);
		break;
	case JOB_PRUNE:
		work_prune(job);
		break;
	case JOB_CLOSE:
		sqlite3_close(job->sp->db);
		job->sp->db = NULL;
		break;
	}
}

/* ---- loop thread -------------------------------------------------------- */

static void start_head(struct rvd_spool *sp);

static int mirror_add(struct rvd_spool *sp, const struct rvd_capture_rec *r)
{
	if (sp->nrecs == sp->caprecs) {
		size_t ncap = sp->caprecs ? sp->caprecs * 2 : 64;
		void *p = realloc(sp->recs, ncap * sizeof(*sp->recs));

		if (!p)
			return -ENOMEM;
		sp->recs = p;
		sp->caprecs = ncap;
	}
	sp->recs[sp->nrecs++] = *r;
	return 0;
}

static struct rvd_capture_rec *mirror_find(const struct rvd_spool *sp, uint64_t id)
{
	for (size_t i = 0; i < sp->nrecs; i++)
		if (sp->recs[i].id == id)
			return &sp->recs[i];
	return NULL;
}

static bool finished(const struct rvd_capture_rec *r)
{
	return (r->state == RVD_SPOOL_UPLOADED || r->state == RVD_SPOOL_SKIPPED) && !r->file[0] &&
	       !r->purging;
}

bool rvd_spool_awaits_report(const struct rvd_capture_rec *rec)
{
	return rec->state == RVD_SPOOL_SKIPPED && !rec->skip_reported && rec->reason[0] &&
	       strncmp(rec->reason, "consent", 7) != 0 && strncmp(rec->reason, "rejected_", 9) != 0;
}

static int submit(struct rvd_spool *sp, struct rvd_spool_job *job);
static struct rvd_spool_job *job_new(enum job_type type, rvd_spool_cb cb, void *data);

/* Queues the deletion of the oldest finished rows beyond history_rows
 * (those awaiting a skip report last), unless one is queued already. */
static void maybe_prune(struct rvd_spool *sp)
{
	struct rvd_spool_job *job;
	size_t n = 0, excess;

	if (sp->prune_queued || !sp->open)
		return;
	for (size_t i = 0; i < sp->nrecs; i++)
		n += finished(&sp->recs[i]) && !sp->recs[i].pruning;
	if (n <= sp->history_rows)
		return;
	excess = n - sp->history_rows;
	job = job_new(JOB_PRUNE, NULL, NULL);
	if (job)
		job->ids = malloc(excess * sizeof(*job->ids));
	if (!job || !job->ids) {
		free(job);
		rvd_err("spool: out of memory deleting old rows");
		return;
	}
	/* Oldest first (the mirror is in id order); reports still due last. */
	for (int pass = 0; pass < 2 && job->nids < excess; pass++) {
		for (size_t i = 0; i < sp->nrecs && job->nids < excess; i++) {
			struct rvd_capture_rec *r = &sp->recs[i];

			if (!finished(r) || r->pruning || rvd_spool_awaits_report(r) != (pass == 1))
				continue;
			r->pruning = true;
			job->ids[job->nids++] = r->id;
		}
	}
	assert(job->nids == excess);
	sp->prune_queued = true;
	submit(sp, job);
}

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The prune job is done: its rows leave the mirror (which stays in id
 * order), its counts join the totals; on failure the rows stay.  The rows
 * it left (no longer finished) have id 0 in job->ids. */
static void prune_done(struct rvd_spool *sp, struct rvd_spool_job *job)
{
	size_t k = 0, w = 0;

	sp->prune_queued = false;
	qsort(job->ids, job->nids, sizeof(*job->ids), cmp_id);
	for (size_t i = 0; i < sp->nrecs; i++) {
		struct rvd_capture_rec *r = &sp->recs[i];
		bool gone = false;

		if (r->pruning) {
			r->pruning = false;
			while (k < job->nids && job->ids[k] < r->id)
				k++;
			gone = job->status == 0 && k < job->nids && job->ids[k] == r->id;
		}
		if (!gone)
			sp->recs[w++] = *r;
	}
	sp->nrecs = w;
	for (int st = 0; st <= RVD_SPOOL_SKIPPED; st++)
		sp->retired[st] += job->retired[st];
}

static void after_work_cb(uv_work_t *req, int status)
{
	struct rvd_spool_job *job = req->data;
	struct rvd_spool *sp = job->sp;
	struct rvd_capture_rec *r;
	uint64_t id = 0;

	if (job->type == JOB_STORE && job->fd >= 0)
		close(job->fd);
	if (job->status == 0) {
		switch (job->type) {
		case JOB_OPEN:
			free(sp->recs);
			sp->recs = job->loaded;
			sp->nrecs = sp->caprecs = job->nloaded;
			job->loaded = NULL;
			memcpy(sp->retired, job->retired, sizeof(sp->retired));
			sp->open = true;
			break;
		case JOB_STORE:
			id = job->rec.id;
			/* The row is durable; a failed mirror add only hides it until restart. */
			if (mirror_add(sp, &job->rec) < 0)
				rvd_err("spool: out of memory mirroring capture %llu",
					(unsigned long long)id);
			break;
		case JOB_STATE:
		case JOB_PURGE:
			id = job->rec.id;
			r = mirror_find(sp, id);
			if (r) {
				r->state = job->rec.state;
				memcpy(r->reason, job->rec.reason, sizeof(r->reason));
				if (job->set_trace)
					memcpy(r->trace_id, job->rec.trace_id, sizeof(r->trace_id));
				if (job->type == JOB_PURGE || job->set_trace)
					r->file[0] = '\0';
			}
			break;
		case JOB_REPORTED:
			id = job->rec.id;
			if ((r = mirror_find(sp, id)) != NULL)
				r->skip_reported = true;
			break;
		case JOB_CLOSE:
			sp->open = false;
			break;
		case JOB_SETTING:
		case JOB_RUN:
		case JOB_PRUNE:
			break;
		}
	}
	if (job->type == JOB_PRUNE)
		prune_done(sp, job);
	if (job->type == JOB_PURGE && (r = mirror_find(sp, job->rec.id)) != NULL)
		r->purging = false;
	sp->head = job->next;
	if (!sp->head)
		sp->tail = NULL;
	sp->running = false;
	if (job->status == 0 && status >= 0 && sp->changed && job->type != JOB_OPEN &&
	    job->type != JOB_CLOSE && job->type != JOB_REPORTED)
		sp->changed(sp->changed_ctx);
	if (job->status == 0 && job->type != JOB_CLOSE && job->type != JOB_PRUNE &&
	    job->type != JOB_SETTING && job->type != JOB_RUN)
		maybe_prune(sp);
	/* The callback may submit; submit() starts the head when nothing runs. */
	if (job->cb)
		job->cb(sp, status < 0 ? status : job->status, id, job->data);
	free(job->loaded);
	free(job->value);
	free(job->ids);
	free(job);
	if (sp->head && !sp->running)
		start_head(sp);
}

static void start_head(struct rvd_spool *sp)
{
	struct rvd_spool_job *job = sp->head;
	int rc;

	sp->running = true;
	rc = uv_queue_work(sp->loop, &job->req, work_cb, after_work_cb);

	/* uv_queue_work only fails for a NULL work_cb; keep the queue moving anyway. */
	if (rc < 0) {
		job->status = rc;
		after_work_cb(&job->req, rc);
	}
}

static int submit(struct rvd_spool *sp, struct rvd_spool_job *job)
{
	job->sp = sp;
	job->req.data = job;
	if (sp->tail) {
		sp->tail->next = job;
		sp->tail = job;
		return 0;
	}
	sp->head = sp->tail = job;
	if (!sp->running)
		start_head(sp);
	return 0;
}

static struct rvd_spool_job *job_new(enum job_type type, rvd_spool_cb cb, void *data)
{
	struct rvd_spool_job *job = calloc(1, sizeof(*job));

	if (!job)
		return NULL;
	job->type = type;
	job->cb = cb;
	job->data = data;
	job->fd = -1;
	return job;
}

int rvd_spool_open(struct rvd_spool *sp, rvd_spool_cb cb, void *data)
{
	struct rvd_spool_job *job = job_new(JOB_OPEN, cb, data);

	return job ? submit(sp, job) : -ENOMEM;
}

int rvd_spool_store(struct rvd_spool *sp, int fd, uint64_t size, const struct rvd_capture_rec *meta,
		    rvd_spool_cb cb, void *data)
{
	struct rvd_spool_job *job = job_new(JOB_STORE, cb, data);

	if (!job) {
		close(fd);
		return -ENOMEM;
	}
	job->fd = fd;
	job->size = size;
	job->rec = *meta;
	return submit(sp, job);
}

int rvd_spool_set_state(struct rvd_spool *sp, uint64_t id, int state, const char *reason,
			rvd_spool_cb cb, void *data)
{
	const struct rvd_capture_rec *r = mirror_find(sp, id);
	struct rvd_spool_job *job;

	if (!r)
		return -ENOENT;
	if (!rvd_spool_transition_ok(r->state, state))
		return -EINVAL;
	job = job_new(JOB_STATE, cb, data);
	if (!job)
		return -ENOMEM;
	job->rec.id = id;
	job->rec.state = state;
	job->from_state = r->state;
	snprintf(job->rec.reason, sizeof(job->rec.reason), "%s", reason ? reason : "");
	return submit(sp, job);
}

int rvd_spool_set_uploaded(struct rvd_spool *sp, uint64_t id, const char *trace_id, rvd_spool_cb cb,
			   void *data)
{
	const struct rvd_capture_rec *r = mirror_find(sp, id);
	struct rvd_spool_job *job;

	if (!r)
		return -ENOENT;
	if (!rvd_spool_transition_ok(r->state, RVD_SPOOL_UPLOADED))
		return -EINVAL;
	job = job_new(JOB_STATE, cb, data);
	if (!job)
		return -ENOMEM;
	job->rec.id = id;
	job->rec.state = RVD_SPOOL_UPLOADED;
	job->from_state = r->state;
	job->set_trace = true;
	memcpy(job->rec.file, r->file, sizeof(job->rec.file));
	snprintf(job->rec.trace_id, sizeof(job->rec.trace_id), "%s", trace_id ? trace_id : "");
	return submit(sp, job);
}

int rvd_spool_set_skip_reported(struct rvd_spool *sp, uint64_t id, rvd_spool_cb cb, void *data)
{
	const struct rvd_capture_rec *r = mirror_find(sp, id);
	struct rvd_spool_job *job;

	if (!r)
		return -ENOENT;
	if (r->state != RVD_SPOOL_SKIPPED)
		return -EINVAL;
	job = job_new(JOB_REPORTED, cb, data);
	if (!job)
		return -ENOMEM;
	job->rec.id = id;
	return submit(sp, job);
}

int rvd_spool_write_setting(struct rvd_spool *sp, const char *name, const void *value, size_t len,
			    rvd_spool_cb cb, void *data)
{
	struct rvd_spool_job *job;

	if (strlen(name) >= sizeof(job->name) || strchr(name, '/'))
		return -EINVAL;
	job = job_new(JOB_SETTING, cb, data);
	if (!job)
		return -ENOMEM;
	job->value = malloc(len ? len : 1);
	if (!job->value) {
		free(job);
		return -ENOMEM;
	}
	memcpy(job->value, value, len);
	job->len = len;
	snprintf(job->name, sizeof(job->name), "%s", name);
	return submit(sp, job);
}

int rvd_spool_close(struct rvd_spool *sp, rvd_spool_cb cb, void *data)
{
	struct rvd_spool_job *job = job_new(JOB_CLOSE, cb, data);

	return job ? submit(sp, job) : -ENOMEM;
}

void rvd_spool_release(struct rvd_spool *sp)
{
	free(sp->recs);
	sp->recs = NULL;
	sp->nrecs = sp->caprecs = 0;
}

const struct rvd_capture_rec *rvd_spool_find(const struct rvd_spool *sp, uint64_t id)
{
	return mirror_find(sp, id);
}

const struct rvd_capture_rec *rvd_spool_find_reservation(const struct rvd_spool *sp,
							 int64_t reservation)
{
	assert(reservation > 0);
	for (size_t i = 0; i < sp->nrecs; i++)
		if (sp->recs[i].reservation == reservation)
			return &sp->recs[i];
	return NULL;
}

unsigned rvd_spool_count(const struct rvd_spool *sp, int state)
{
	unsigned n = 0;

	for (size_t i = 0; i < sp->nrecs; i++)
		n += sp->recs[i].state == state;
	return n;
}

int rvd_spool_purge(struct rvd_spool *sp, uint64_t id, const char *reason, rvd_spool_cb cb,
		    void *data)
{
	struct rvd_capture_rec *r = mirror_find(sp, id);
	struct rvd_spool_job *job;

	if (!r || r->pruning)
		return -ENOENT;
	job = job_new(JOB_PURGE, cb, data);
	if (!job)
		return -ENOMEM;
	r->purging = true;
	job->rec = *r;
	job->from_state = r->state;
	job->rec.state = RVD_SPOOL_SKIPPED;
	/* Its summary goes with its file (the row's summary is cleared). */
	mirror_find(sp, id)->has_summary = false;
	snprintf(job->rec.reason, sizeof(job->rec.reason), "%s", reason ? reason : "purged");
	return submit(sp, job);
}

/* Issue 18 item 7: manual captures and consent-local ones are not bounded
 * by the quota; 45 uploads left 45 files of up to 64 MiB. */
int rvd_spool_evict(struct rvd_spool *sp, uint64_t max_bytes, uint32_t max_files,
		    const char *reason, rvd_spool_cb cb, void *data)
{
	uint64_t bytes = 0;
	uint32_t files = 0;
	int n = 0, rc;

	for (size_t i = 0; i < sp->nrecs; i++) {
		if (!sp->recs[i].file[0] || sp->recs[i].purging)
			continue;
		bytes += sp->recs[i].size;
		files++;
	}
	/* Oldest first: the mirror is in row order (ids ascend). */
	for (size_t i = 0; i < sp->nrecs && (bytes > max_bytes || files > max_files); i++) {
		struct rvd_capture_rec *r = &sp->recs[i];

		assert(i == 0 || sp->recs[i - 1].id < r->id);
		if (!r->file[0] || r->purging ||
		    (r->state != RVD_SPOOL_PENDING && r->state != RVD_SPOOL_SKIPPED))
			continue;
		bytes -= r->size;
		files--;
		if ((rc = rvd_spool_purge(sp, r->id, reason, cb, data)) < 0)
			return rc;
		n++;
	}
	return n;
}

int rvd_spool_run(struct rvd_spool *sp, void (*fn)(void *arg), void *arg, rvd_spool_cb cb,
		  void *data)
{
	struct rvd_spool_job *job = job_new(JOB_RUN, cb, data);

	if (!job)
		return -ENOMEM;
	job->fn = fn;
	job->arg = arg;
	return submit(sp, job);
}

void rvd_spool_set_history(struct rvd_spool *sp, uint32_t rows)
{
	sp->history_rows = rows;
}

void rvd_spool_note_summary(struct rvd_spool *sp, uint64_t id)
{
	struct rvd_capture_rec *r = mirror_find(sp, id);

	if (r)
		r->has_summary = true;
}
