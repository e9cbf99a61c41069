/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_regress_be.h — the backends' regression and webhook delivery
 * operations (store.h's "regressions and webhook deliveries" block), in
 * store_sqlite_regress.c and store_pg_regress.c.  Internal to the store:
 * only store_sqlite.c and store_pg.c name these, in their function tables
 * (the open with their store's dsn).  Errors, threads and ownership as
 * store.h's regress_* / webhook_*.
 */
#ifndef RVS_STORE_REGRESS_BE_H
#define RVS_STORE_REGRESS_BE_H

#include "store/store.h"

#include <stddef.h>

#define RVS_REGRESS_BE(p)                                                                          \
	int p##_regress_open(const char *dsn, struct rvs_regress_db **out);                        \
	void p##_regress_close(struct rvs_regress_db *d);                                          \
	int p##_regress_sides(struct rvs_regress_db *d, const struct rvs_cmp_sides *q,             \
			      int (*cb)(void *arg, const struct rvs_cmp_row *r), void *arg);       \
	int p##_regress_versions(                                                                  \
		struct rvs_regress_db *d,                                                          \
		int (*cb)(void *arg, const char *app, const char *version, int64_t n), void *arg); \
	int p##_regress_run_get(struct rvs_regress_db *d, const char *app, const char *a,          \
				const char *b, int64_t *traces_a, int64_t *traces_b);              \
	int p##_regress_run_put(struct rvs_regress_db *d, const struct rvs_regress_run_row *r,     \
				const char *alert_method, const struct rvs_webhook_new *w,         \
				size_t n, int *alerted);                                           \
	int p##_regress_runs_list(struct rvs_regress_db *d, size_t max,                            \
				  int (*cb)(void *arg, const struct rvs_regress_run_row *r),       \
				  void *arg);                                                      \
	int p##_webhook_enqueue(struct rvs_regress_db *d, const struct rvs_webhook_new *w);        \
	int p##_webhook_claim(struct rvs_regress_db *d, int64_t now_ms, int64_t lease_ms,          \
			      size_t max, int (*cb)(void *arg, const struct rvs_webhook_row *r),   \
			      void *arg);                                                          \
	int p##_webhook_record(struct rvs_regress_db *d, const struct rvs_webhook_row *r,          \
			       uint32_t prev_attempts);                                            \
	int p##_webhook_list(struct rvs_regress_db *d, size_t max,                                 \
			     int (*cb)(void *arg, const struct rvs_webhook_row *r), void *arg);    \
	int p##_webhook_pending(struct rvs_regress_db *d, uint64_t *out);                          \
	int p##_alert_rule_add(struct rvs_regress_db *d, const struct rvs_alert_rule_row *r,       \
			       size_t max, int64_t *id);                                           \
	int p##_alert_rule_delete(struct rvs_regress_db *d, int64_t id);                           \
	int p##_alert_rules_list(struct rvs_regress_db *d,                                         \
				 int (*cb)(void *arg, const struct rvs_alert_rule_row *r),         \
				 void *arg);                                                       \
	int p##_alert_rule_update(struct rvs_regress_db *d, const struct rvs_alert_rule_row *r,    \
				  const char *from_state, const struct rvs_webhook_new *w,         \
				  size_t n, int *moved);                                           \
	int p##_alert_counts(struct rvs_regress_db *d, const struct rvs_trend_filter *f,           \
			     int64_t from_day, int64_t to_day,                                     \
			     int (*cb)(void *arg, const struct rvs_alert_count_row *r),            \
			     void *arg);

/* sqlite: a connection of its own on the database file dsn. */
RVS_REGRESS_BE(rvs_sqlite)
/* PostgreSQL: a libpq connection of its own to dsn. */
RVS_REGRESS_BE(rvs_pg)

#undef RVS_REGRESS_BE

#endif
