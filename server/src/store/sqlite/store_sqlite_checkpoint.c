/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_sqlite_checkpoint.c — WAL checkpoints off the committing threads, a
 * sqlite-backend internal (store_sqlite_util.h).
 *
 * sqlite's automatic checkpoint runs inside the COMMIT that pushes the WAL
 * past 1000 frames, on whichever thread made it: an upload acknowledgement
 * or an index batch then also copies every page of the WAL into the
 * database and fsyncs it.  Here a connection that is attached gets a WAL
 * hook instead (which replaces its automatic checkpoint): past
 * RVS_CKPT_FRAMES frames the hook wakes one background thread per database
 * file, which runs a PASSIVE checkpoint on its own connection — never
 * waiting for a reader or a writer — while the writers go on.  A larger WAL
 * also means a page that many transactions touched is copied once.
 *
 * Invariants: one checkpointer per database path, shared by every attached
 * connection and counted by them; it stops (thread joined, connection
 * closed) when the last one detaches.  The hook only reads the frame count
 * and, past the threshold, signals; it never touches the database.  If
 * the WAL passes RVS_CKPT_HARD_FRAMES anyway — under steady load some
 * reader always holds a snapshot inside the WAL, so no writer may rewind
 * it — the thread runs one TRUNCATE checkpoint (it holds off writers while
 * the readers of the moment finish, at most 200 ms, else it tries again at
 * the next wake-up), which rewinds the WAL and gives its file's space back,
 * so the WAL cannot grow without bound.
 */
#include "store/sqlite/store_sqlite_util.h"
#include "base/log.h"

#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#define CKPT_SLOTS 8

struct ckpt {
	char *path; /* NULL: free slot */
	unsigned refs;
	pthread_t thread;
	sqlite3 *db;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int due, stop;
	unsigned long runs; /* checkpoints started, under mu */
};

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ckpt registry[CKPT_SLOTS];

/* The checkpointer of path, or NULL; under registry_mu. */
static struct ckpt *registry_find(const char *path)
{
	for (size_t i = 0; i < CKPT_SLOTS; i++)
		if (registry[i].path && strcmp(registry[i].path, path) == 0)
			return &registry[i];
	return NULL;
}

static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct ckpt *c = arg;

	(void)db;
	(void)name;
	if (frames >= RVS_CKPT_FRAMES) {
		pthread_mutex_lock(&c->mu);
		c->due = 1;
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&c->mu);
	}
	return SQLITE_OK;
}

/* Checkpoints when woken, and once a second while idle so a WAL left by the
 * last burst is folded in. */
static void *ckpt_main(void *arg)
{
	struct ckpt *c = arg;

	pthread_mutex_lock(&c->mu);
	while (!c->stop) {
		struct timespec until;
		int log = 0, done = 0, rc;

		if (!c->due) {
			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_sec += 1;
			pthread_cond_timedwait(&c->cv, &c->mu, &until);
			if (c->stop)
				break;
		}
		c->due = 0;
		c->runs++;
		pthread_mutex_unlock(&c->mu);
		rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
		if (rc == SQLITE_OK && log >= RVS_CKPT_HARD_FRAMES) {
			int frames = log;
			rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_TRUNCATE,
						       &log, &done);
			/* Truncations are routine under load: only failures are logged. */
			if (rc != SQLITE_OK)
				rvs_log("warn", "wal truncate failed", "frames=%d err=\"%s\"",
					frames, sqlite3_errstr(rc));
		}
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Starts the checkpointer of path, opened through the VFS named vfs (the
 * attaching connection's, so that a test's fault-injecting VFS sees the
 * checkpoints' writes and syncs too). */
static int ckpt_start(struct ckpt *c, const char *path, const char *vfs)
{
	memset(c, 0, sizeof *c);
	if (!(c->path = strdup(path)))
		return -ENOMEM;
	if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE, vfs) != SQLITE_OK)
		goto fail;
	/* A TRUNCATE checkpoint waits for readers through the busy handler,
	 * holding off writers meanwhile: briefly, then it tries again later. */
	rvs_sqlite_busy(c->db, 200);
	/* A connection learns that the file is in WAL mode from its first read;
	 * until then a checkpoint on it does nothing. */
	if (sqlite3_exec(c->db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL) !=
	    SQLITE_OK)
		goto fail;
	pthread_mutex_init(&c->mu, NULL);
	{
		pthread_condattr_t ca; /* the idle pass ignores wall-clock jumps */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (pthread_create(&c->thread, NULL, ckpt_main, c) == 0) {
		rvs_log("info", "checkpointer started", "database=\"%s\"", path);
		return 0;
	}
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
fail:
	sqlite3_close(c->db);
	free(c->path);
	memset(c, 0, sizeof *c);
	return -EIO;
}

static void ckpt_stop(struct ckpt *c)
{
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	sqlite3_close(c->db);
	free(c->path);
	memset(c, 0, sizeof *c);
}

int rvs_sqlite_ckpt_attach(sqlite3 *db)
{
	const char *path = sqlite3_db_filename(db, "main");
	struct ckpt *c, *free_slot = NULL;
	sqlite3_vfs *vfs = NULL;
	int rc = 0;

	if (!path || !path[0])
		return -EINVAL; /* in-memory or temporary: nothing to checkpoint */
	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, &vfs) != SQLITE_OK)
		vfs = NULL; /* the default VFS */
	pthread_mutex_lock(&registry_mu);
	c = registry_find(path);
	for (size_t i = 0; i < CKPT_SLOTS && !c && !free_slot; i++)
		if (!registry[i].path)
			free_slot = &registry[i];
	if (!c && !free_slot)
		rc = -ENOSPC;
	else if (!c && !(rc = ckpt_start(free_slot, path, vfs ? vfs->zName : NULL)))
		c = free_slot;
	if (c && sqlite3_wal_hook(db, wal_hook, c) != c)
		c->refs++;
	pthread_mutex_unlock(&registry_mu);
	return rc;
}

void rvs_sqlite_ckpt_detach(sqlite3 *db)
{
	const char *path = db ? sqlite3_db_filename(db, "main") : NULL;
	struct ckpt *c;

	if (!path || !path[0])
		return;
	pthread_mutex_lock(&registry_mu);
	if ((c = registry_find(path))) {
		/* sqlite3_wal_hook hands back the hook's argument: c when db is
		 * attached, else the frame count of sqlite's automatic
		 * checkpoint, which is put back as it was. */
		void *prev = sqlite3_wal_hook(db, NULL, NULL);
		if (prev != c) {
			sqlite3_wal_autocheckpoint(db, (int)(intptr_t)prev);
		} else {
			sqlite3_wal_autocheckpoint(db, 1000); /* sqlite's default */
			if (--c->refs == 0)
				ckpt_stop(c);
		}
	}
	pthread_mutex_unlock(&registry_mu);
}

unsigned long rvs_sqlite_ckpt_runs(sqlite3 *db)
{
	const char *path = sqlite3_db_filename(db, "main");
	struct ckpt *c;
	unsigned long runs = 0;

	if (!path || !path[0])
		return 0;
	pthread_mutex_lock(&registry_mu);
	if ((c = registry_find(path))) {
		pthread_mutex_lock(&c->mu);
		runs = c->runs;
		pthread_mutex_unlock(&c->mu);
	}
	pthread_mutex_unlock(&registry_mu);
	return runs;
}
