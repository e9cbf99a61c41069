/* SPDX-License-Identifier: Apache-2.0 */
/*
 * params.h — request parameters (params.c): percent-decoding and the
 * values of query strings and form bodies.  Pure functions of their
 * arguments, safe on any thread.
 */
#ifndef RVS_PARAMS_H
#define RVS_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/* Percent-decodes in[0..n) into out (NUL-terminated).  '+' is a space in
 * queries (plus_space).  -EINVAL for bad escapes or an embedded NUL, -E2BIG
 * when it does not fit. */
int rvs_url_decode(const char *in, size_t n, int plus_space, char *out, size_t outsz);

/* The percent-decoded value of parameter name in an application/
 * x-www-form-urlencoded string (a query or a form body): 1 found, 0 absent,
 * -EINVAL for a bad escape or one that does not fit outsz. */
int rvs_query_param(const char *query, const char *name, char *out, size_t outsz);

/* Text parameter name of query into out (cap bytes), held to
 * rvs_field_ok: 1 set, 0 absent or empty, -EINVAL a bad escape, too long
 * or not acceptable text. */
int rvs_query_text(const char *query, const char *name, char *out, size_t cap);

/* The limit parameter of query into *limit: def when absent or empty, max
 * when above max (clamped, as API.md says).  0, or -EINVAL when it is not
 * an integer >= 1 (*limit is then def). */
int rvs_param_limit(const char *query, int64_t def, int64_t max, int64_t *limit);

/* The offset parameter of query (a page's first row) into *offset: 0 when
 * absent or empty.  0, or -EINVAL when it is not an integer in 0..max
 * (*offset is then 0). */
int rvs_param_offset(const char *query, int64_t max, int64_t *offset);

/* A time as a request gives it into *t (unix seconds): the seconds
 * themselves ("1767225600") or ISO 8601 — a date ("2026-01-01", its 00:00
 * UTC) or a date and time ("2026-01-01T12:30", ":SS" optional), in UTC
 * unless it ends with "Z" or an offset ("+02:00", "-0530").  0, or -EINVAL
 * (nothing written) for anything else, a negative number included. */
int rvs_param_time(const char *s, int64_t *t);

/* An anomaly kind as a request gives it into *kind: its number ("1"), its
 * rearview.AnomalyKind name ("ANOMALY_JANK") or that name without the
 * "ANOMALY_" prefix, whole ("touch_latency") or its first word ("touch"),
 * in any case.  0, or -EINVAL (nothing written) for anything else. */
int rvs_param_kind(const char *s, int64_t *kind);

/* The most rows a list's "total" counts where the count walks the matching
 * rows (traces, sorted traces, audit): past it the list says "total" =
 * this and "total_capped" true, so a count costs at most this many
 * matches whatever the fleet's size. */
#define RVS_LIST_TOTAL_CAP 10000

#endif
