/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_part.h — PostgreSQL's weekly partitions, the retention that drops
 * them (store_pg_part.c) and the decode wake-ups by LISTEN/NOTIFY
 * (store_pg_wake.c).  Internal to the store: only store_pg.c calls these,
 * from its function table and its upload path, on its own connections.
 * server/SCHEMA.md, "Weekly partitions", has the design.
 */
#ifndef RVS_STORE_PART_H
#define RVS_STORE_PART_H

#include "store/store.h"

/* libpq's PGconn, whose header only the backend files include. */
struct pg_conn;

/* The channel an upload's NOTIFY and a decoder's LISTEN meet on. */
#define RVS_PG_WAKE_CHANNEL "rearview_decode"

/* Seconds of a partition: weeks of unix time (received_at / 604800), as
 * signature_counts' week. */
#define RVS_PG_WEEK_S 604800

/* The number in store_pg.c's migrations[] of the one that partitions
 * (the upgrade test migrates to the one before it).  Keep it in step
 * when migrations are renumbered. */
#define RVS_PG_MIGRATION_PART 8
/* The one that adds the per-node rollup agg_node_sums (its test migrates
 * to the one before it, with rows, then opens). */
#define RVS_PG_MIGRATION_ROLLUP 14
/* The one that adds trace_methods' on-CPU columns (its test migrates to
 * the one before it, with a row, then opens). */
#define RVS_PG_MIGRATION_CPU 17
/* The one that adds trace_paths' on-CPU columns and the rollups' CPU sums
 * (its test migrates to the one before it, with rows, then opens). */
#define RVS_PG_MIGRATION_PATH_CPU 18

/* Applies store_pg.c's migrations up to schema version upto (1..the
 * latest), on a connection of its own, under the migrations' advisory
 * lock.  0, -EPROTO when the database is newer than this server, -EIO.
 * Blocks (work thread). */
int rvs_pg_migrate(const char *dsn, int upto);

/* Makes the partitions of the database's current week and the next one
 * (its own clock: received_at is the database's now()), under an advisory
 * transaction lock so that nodes doing it at once do not collide.  pg is
 * idle (no transaction open); the call opens and commits its own.
 * *until: the end (unix s) of the last week now partitioned.  0 or -EIO.
 * Blocks (work thread). */
int rvs_pg_part_ensure(struct pg_conn *pg, int64_t *until);

/* store.h's retention_delete on PostgreSQL: drops every partition week
 * that ended at or before cutoff (a week is kept until all of it expired)
 * once the blobs of the weeks dropped before are handed out, and hands
 * out up to max of them: *nblobs names in blobs (uploads without a blob
 * are counted, not named).  Returns how many uploads the names handed out
 * stood for (0: nothing expired is left), or -EIO (nothing changed).  One
 * transaction on pg (idle on entry and on return).  Blocks. */
int rvs_pg_part_retention(struct pg_conn *pg, int64_t cutoff, size_t max, char (*blobs)[65],
			  size_t *nblobs);

/* Opens a listener of its own to dsn (a libpq connection that LISTENs on
 * RVS_PG_WAKE_CHANNEL).  0, -ENOMEM or -EIO.  Blocks (work thread); the
 * other calls do not. */
int rvs_pg_wake_open(const char *dsn, struct rvs_wake **out);
/* The socket to watch for reading (uv_poll), >= 0. */
int rvs_pg_wake_fd(const struct rvs_wake *w);
/* Reads what arrived without blocking: the number of notifications
 * (0: none yet), or -EIO when the connection broke (close it).  One
 * thread at a time per listener. */
int rvs_pg_wake_drain(struct rvs_wake *w);
/* Closes w; NULL is a no-op. */
void rvs_pg_wake_close(struct rvs_wake *w);

#endif
