/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_sqlite_util.h — internals of the sqlite backend shared by its
 * files (store_sqlite*.c): the busy handler and the WAL checkpointer
 * (store_sqlite_checkpoint.c).  Nothing outside the sqlite backend includes this header but its
 * test (tests/server/test_checkpoint.c).
 */
#ifndef RVS_STORE_SQLITE_UTIL_H
#define RVS_STORE_SQLITE_UTIL_H

struct sqlite3;

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
