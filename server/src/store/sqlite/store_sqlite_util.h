/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_sqlite_util.h — internals of the sqlite backend shared by its
 * files (store_sqlite*.c): its one set of statement helpers (binding,
 * stepping, rows to a rvs_row_fn, statements without parameters; sqlite
 * result codes become errnos through librvcommon's rvc_sqlite_errno), the
 * read connections of its scans, the busy handler (store_sqlite_util.c) and
 * the WAL checkpointer (store_sqlite_checkpoint.c).  Nothing outside the
 * sqlite backend includes this header but its test
 * (tests/server/test_checkpoint.c).
 */
#ifndef RVS_STORE_SQLITE_UTIL_H
#define RVS_STORE_SQLITE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct sqlite3;
struct sqlite3_stmt;

/* GET /api/v1/traces's filter on traces t, parameters ?1..?9 (app,
 * version, model, os_build, kind, least severity, received since, until,
 * signature: NULL for absent), the traces_list and traces_sorted
 * statements' common part. */
#define RVS_SQLITE_TRACE_FILTER                                                            \
	" (?1 IS NULL OR t.app_id = ?1) AND (?2 IS NULL OR t.app_version = ?2)"            \
	" AND (?3 IS NULL OR t.model = ?3) AND (?4 IS NULL OR t.os_build = ?4)"            \
	" AND (?5 IS NULL OR t.anomaly_kind = ?5) AND (?6 IS NULL OR t.severity >= ?6)"    \
	" AND (?7 IS NULL OR t.received_at >= ?7) AND (?8 IS NULL OR t.received_at < ?8)"  \
	" AND (?9 IS NULL OR t.anomaly_signature = ?9 OR t.trace_id IN (SELECT c.trace_id" \
	"  FROM trace_chains c WHERE c.signature = ?9))"

/* ---- statements (store_sqlite_util.c) ---- */

/* Binds parameter i to v, or leaves it NULL when v is NULL (SQLITE_STATIC:
 * v outlives the statement's use). */
void rvs_sqlite_bind_opt_text(struct sqlite3_stmt *st, int i, const char *v);
/* Binds parameter i to v when has, else leaves it NULL. */
void rvs_sqlite_bind_opt_i64(struct sqlite3_stmt *st, int i, int has, int64_t v);
/* Steps st once for its effect, then resets it and clears its bindings for
 * the next use: SQLITE_OK when it ran (done, or a row), else sqlite's code. */
int rvs_sqlite_step_done(struct sqlite3_stmt *st);
/* Column i of the current row as text, NULL for SQL NULL. */
const char *rvs_sqlite_col_text(struct sqlite3_stmt *st, int i);
/* Runs sql (no parameters: transaction control, migrations) on db; a
 * failure is logged.  0 or the errno of sqlite's code (rvc_sqlite_errno). */
int rvs_sqlite_exec(struct sqlite3 *db, const char *sql);
/* Every remaining row of st to cb as part, its columns typed (integers as
 * RVS_COL_INT, NULL as RVS_COL_NULL, the rest as text); *nrows (may be
 * NULL) counts them.  0, cb's stop value, or -EIO. */
int rvs_sqlite_rows_out(struct sqlite3_stmt *st, int part, rvs_row_fn cb, void *arg, size_t *nrows);
/* A read-only connection of the caller's own on the database dsn (a path
 * or a "file:" URI), with the busy handler: for a read that may take long
 * (the fleet page, an aggregate, a search), which on a shared connection
 * would hold its mutex, and so the token lookups of every request, for as
 * long as it runs.  Close with sqlite3_close.  0 or -EIO. */
int rvs_sqlite_scan_open(const char *dsn, struct sqlite3 **db);

/* sqlite3_busy_timeout for one of the server's connections, but polling the
 * lock every 50 µs at first (then 0.5 ms, then 2 ms) where sqlite's own
 * handler sleeps 1, 2, 5, 10, … ms: every writer is in this process and
 * their transactions are short, so a waiter gets the lock soon after it is
 * free.  The decoder's index lanes keep sqlite's coarse handler on purpose,
 * so that waiting acknowledgements win the lock (decode.c).  Gives up after
 * about timeout_ms.  (store_sqlite_util.c) */
void rvs_sqlite_busy(struct sqlite3 *db, int timeout_ms);

/* ---- WAL checkpoints off the committing threads (store_sqlite_checkpoint.c) ------------ */
/* The WAL size (frames of 4 KiB) past which a commit wakes the checkpointer
 * (16 MiB), and the size past which it also waits for the readers of the
 * moment to truncate the WAL (64 MiB): under steady load passive
 * checkpoints copy every frame but some reader always sits in the WAL, so
 * no writer may rewind it and sqlite's own checkpoints leave it growing
 * (server/BENCHMARKS.md, "2026-11-24 (second session)"). */
#define RVS_CKPT_FRAMES	     4096
#define RVS_CKPT_HARD_FRAMES 16384
/* Replaces db's automatic checkpoint with a hook that wakes the one
 * background checkpointer of db's database file (started on the first
 * attach, with its own connection), so commits on db never run a
 * checkpoint.  Any thread; attaching twice counts once.  0, -EINVAL for an
 * in-memory or temporary database, -ENOSPC past 8 database files, -ENOMEM
 * or -EIO (the checkpointer's connection or thread): db then keeps sqlite's
 * automatic checkpoint. */
int rvs_sqlite_ckpt_attach(struct sqlite3 *db);
/* Before sqlite3_close(db): back to sqlite's automatic checkpoint; the last
 * attached connection of a file stops its checkpointer (joined, closed).  A
 * db that was never attached is left as it is. */
void rvs_sqlite_ckpt_detach(struct sqlite3 *db);
/* How many checkpoints the checkpointer of db's file has started (counted
 * before each runs), 0 when it has none. */
unsigned long rvs_sqlite_ckpt_runs(struct sqlite3 *db);

#endif
