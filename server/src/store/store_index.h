/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_index.h — the backends' decoded-trace index writers (store.h's
 * index_* operations), each in a file of its own: store_sqlite_index.c and
 * store_pg_index.c.  Internal to the store: only store_sqlite.c and
 * store_pg.c call these, through their function tables, with their
 * store's dsn.  Errors, threads and ownership as store.h's index_*.
 */
#ifndef RVS_STORE_INDEX_H
#define RVS_STORE_INDEX_H

#include "store/store.h"

/* sqlite: a connection of the lane's own on the database file dsn. */
int rvs_sqlite_index_open(const char *dsn, struct rvs_index_lane **out);
void rvs_sqlite_index_close(struct rvs_index_lane *l);
int rvs_sqlite_index_upload_meta(struct rvs_index_lane *l, const char *trace_id,
				 struct rvs_index_meta *m);
void rvs_sqlite_index_write(struct rvs_index_lane *l, struct rvs_index_trace *v, size_t n);

/* PostgreSQL: a libpq connection of the lane's own to dsn. */
int rvs_pg_index_open(const char *dsn, struct rvs_index_lane **out);
void rvs_pg_index_close(struct rvs_index_lane *l);
int rvs_pg_index_upload_meta(struct rvs_index_lane *l, const char *trace_id,
			     struct rvs_index_meta *m);
void rvs_pg_index_write(struct rvs_index_lane *l, struct rvs_index_trace *v, size_t n);
int rvs_pg_index_upload_metas(struct rvs_index_lane *l, const char *const *trace_ids, size_t n,
			      struct rvs_index_meta *m, int *rc);

#endif
