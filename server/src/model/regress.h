/* SPDX-License-Identifier: Apache-2.0 */
/*
 * regress.h — "what got slower?" (issue 16 question 1): per-method and
 * per-chain comparison of two sets of decoded traces of one app (version A
 * against version B, this week against last, one model against the
 * others) with a Mann–Whitney U test, Benjamini–Hochberg correction and
 * effect sizes; the automatic comparison of each new version with its
 * predecessor, whose regressions above the configured bar become webhook
 * alerts (webhook.h).  The statistics are pure functions (any thread); the
 * rest reads and writes through the store (store.h's regress_* operations,
 * both backends) on a work thread.
 */
#ifndef RVS_REGRESS_H
#define RVS_REGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* One two-sided Mann–Whitney U test of B against A. */
struct rvs_mwu {
	double u_b;   /* pairs (a, b) with b > a, ties counted one half */
	double z;     /* normal approximation, tie- and continuity-corrected */
	double p;     /* two-sided p-value (1 when every value ties): exact when
			 exact, else from z */
	double delta; /* Cliff's delta, (P(b > a) - P(b < a)): +1 all of B slower */
	int exact;    /* p from the exact distribution (no ties, na + nb <= RVS_MWU_EXACT_MAX) */
};

/* Up to this many values in all and without ties, p is exact. */
#define RVS_MWU_EXACT_MAX 30

/* The test of a[0..ka) plus (na - ka) implicit zeros against b[0..kb) plus
 * (nb - kb) implicit zeros (a trace without a row for a method counts as
 * 0).  Values must be >= 0.  a and b are sorted in place (ascending).
 * On -ENOMEM (the exact test's table) *out holds the normal approximation.
 * 0, -EINVAL (na or nb is 0, ka > na, kb > nb), -ENOMEM.  Any thread. */
int rvs_mwu_test(double *a, size_t ka, size_t na, double *b, size_t kb, size_t nb,
		 struct rvs_mwu *out);

/* The median of sorted v[0..k) plus (n - k) implicit zeros (n > 0). */
double rvs_median_sparse(const double *v, size_t k, size_t n);

/* Benjamini–Hochberg adjusted p-values (q[i] for p[i]; monotone, <= 1).
 * 0 or -ENOMEM.  Any thread. */
int rvs_bh_adjust(const double *p, size_t n, double *q);

/* Which two sets of an app's decoded traces are compared.  Exactly one
 * mode: versions (a and b set), model (B = traces of model, A = the
 * others; version optionally narrows both), week (B = received in the
 * last 7 days before now, A = the 7 before). */
enum rvs_regress_mode {
	RVS_REGRESS_VERSIONS = RVS_CMP_VERSIONS,
	RVS_REGRESS_MODEL = RVS_CMP_MODEL,
	RVS_REGRESS_WEEK = RVS_CMP_WEEK,
};
struct rvs_regress_req {
	const char *app;
	enum rvs_regress_mode mode;
	const char *a, *b;   /* versions */
	const char *model;   /* RVS_REGRESS_MODEL */
	const char *version; /* RVS_REGRESS_MODEL: NULL or one version */
	int64_t now;	     /* RVS_REGRESS_WEEK: unix seconds */
	size_t limit;	     /* rows per list, 1..500 */
};

/* Compares the two sets (traces with a decoded capture only), read through
 * the store on d (ops->regress_sides): every method's per-trace self and
 * inclusive time, and every top chain's self time (trace_chains kind
 * 'top').  *out: the JSON document of server/API.md "Regressions" (caller
 * json_decref).  0, -ENOENT (a side has no trace; *out still says how many
 * each has), -EIO, -ENOMEM.  Work thread. */
struct json_t;
int rvs_regress_run(const struct rvs_store_ops *ops, struct rvs_regress_db *d,
		    const struct rvs_regress_req *req, struct json_t **out);

/* The automatic comparison's settings (server config, README.md
 * "Regression alerts"). */
struct rvs_regress_auto {
	uint32_t min_traces;  /* both versions need at least this many traces */
	double margin;	      /* a stored comparison is redone once a side grew by this fraction */
	double alert_ratio;   /* alert when the top method's self median ratio B/A >= this ... */
	double alert_q;	      /* ... and its corrected p-value is below this */
	const char *base_url; /* for links in alerts ("" gives relative links) */
};

/* One pass: for every app, each version with >= min_traces decoded traces
 * whose predecessor (rvs_version_cmp order) has as many is compared with
 * it, unless regress_runs already holds that pair with sides that grew by
 * less than the margin; the result is stored in regress_runs, and a
 * regression over the bar that was not alerted before for that (app, A,
 * B, method) queues one webhook delivery per URL (at most 16), in the
 * transaction that stores the run (the store's regress_run_put: on
 * PostgreSQL, nodes running passes at once keep one row per pair and one
 * alert).  Runs on the shared store of database (rvs_store_regress_open).
 * *compared (may be NULL): pairs compared.  0, -EIO, -ENOMEM.  Work
 * thread. */
int rvs_regress_auto_pass(const char *database, const struct rvs_regress_auto *cfg,
			  const char *const *urls, size_t nurls, unsigned *compared);

#endif
