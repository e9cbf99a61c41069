/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.h — the storage interface.  A backend is a function table; sqlite3
 * (store_sqlite.c) is the embedded default and PostgreSQL (store_pg.c)
 * provides the same table; rvs_store_for picks one by the dsn.  Every function blocks and must run
 * on the work queue; a backend handle is safe to use from several work threads at once. Errors: 0
 * or a negative errno (-ENOENT not found, -EEXIST a uniqueness conflict, -EIO a backend failure).
 *
 * Transient and permanent errors.  Every failure is one or the other, by
 * its errno (rvs_store_transient):
 *  - transient — the database or the moment failed, not the data; nothing
 *    was written (the transaction rolled back, or its commit's outcome is
 *    unknown and a retry finds the row: every write a device is
 *    acknowledged for is idempotent by its key), and the same call may
 *    succeed later: -EAGAIN (PostgreSQL: a lost or refused connection,
 *    PQstatus not OK; SQLSTATE class 08, admin or crash shutdown 57P01 /
 *    57P02, cannot connect now 57P03, too many connections 53300 and the
 *    rest of class 53, serialization 40001, deadlock 40P01, lock timeout
 *    55P03, a canceled statement 57014 — pg.h's one table, by SQLSTATE, never
 *    by message text; a pooled connection found broken is closed with every
 *    idle one and replaced by the next call), -EBUSY (sqlite BUSY /
 *    LOCKED), -ENOSPC (a full disk: sqlite FULL, PostgreSQL 53100) and
 *    -ETIMEDOUT.  The blob backends (blob.h) answer the same way.
 *  - permanent — anything else: the statement or its data is wrong.
 * The decoder keeps an upload queued through a transient error and
 * decodes it again later (pipeline/lanes.c, with backoff); an upload is
 * quarantined only for a permanent error, one that lies in its own bytes.
 * Durability: a function that stores what a device is acknowledged for
 * (device_add, upload_add, skip_add) returns 0 only once it is on disk
 * (it survives power loss); the others may return before.
 */
#ifndef RVS_STORE_H
#define RVS_STORE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store_regress.h"

struct rva_summary;

struct rvs_device_rec {
	char device_id[40];	      /* server-assigned "d-" + 32 hex */
	uint8_t token_hash[32];	      /* SHA-256 of the bearer token; the token is never stored */
	const char *client_device_id; /* borrowed; what the device calls itself */
	const char *model, *os_build, *arch;
	/* Set by device_add when the device enrolled before under the same
	 * client_device_id: reenrolled, and the token hash it replaced. */
	int reenrolled;
	uint8_t old_token_hash[32];
};

struct rvs_upload_rec {
	char trace_id[40]; /* server id, derived from device and upload id */
	const char *device_id;
	uint8_t upload_id[16];
	const char *app_id, *app_version;
	const uint8_t *app_build_id;
	size_t app_build_id_len;
	const char *model, *os_build, *campaign_id;
	int anomaly_kind, severity, consent, payload_kind, compression;
	uint64_t payload_size, captured_realtime_ns;
	const char *blob_sha256; /* NULL when there is no payload */
	uint64_t blob_bytes;
	const uint8_t *summary; /* serialized Summary, may be NULL */
	size_t summary_len;
	/* The weekly quota, checked in the transaction that inserts the row:
	 * when quota_since > 0 (unix s) and the upload is charged (every
	 * anomaly kind but MANUAL), upload_add refuses it with -EDQUOT if the
	 * device already has weekly_quota charged uploads received at or after
	 * quota_since.  quota_since 0: no check. */
	uint32_t weekly_quota;
	int64_t quota_since;
	/* How the device's policy chose it (rearview.Selection; kind 0 =
	 * unknown, an older device) and its weight (pipeline/upload.h's
	 * rvs_selection_weight; 1 when unknown), exact or an estimate. */
	int sel_kind;
	double sel_p;
	uint32_t sel_seen, sel_taken;
	double weight;
	int weight_exact;
};

/* A device's report of an anomaly it did not upload (POST /v1/skips). */
struct rvs_skip_rec {
	const char *device_id;
	uint8_t report_id[16];
	const char *app_id, *app_version, *reason;
	int anomaly_kind, severity;
	uint64_t captured_realtime_ns;
};

/* One app's frames and late frames on one UTC day on one device (POST
 * /v1/jank): the day's totals so far, replacing what was stored. */
struct rvs_jank_rec {
	const char *app_id, *app_version; /* borrowed; version "" when unknown */
	int64_t day;			  /* days since 1970-01-01 UTC */
	int64_t frames, late;		  /* 0 <= late <= frames */
};

/* One app's jank over a window of days (jank_by_app). */
struct rvs_jank_app_row {
	const char *app_id; /* valid during the callback */
	int64_t frames, late;
	int64_t devices; /* distinct devices that reported the app */
	int64_t traces;	 /* the app's uploads received in the window */
};

/* One queued upload on its way through the decoder (api.h's seam) and back
 * to the store with its outcome. */
struct rvs_decode_item {
	char trace_id[40];
	char blob_sha256[65]; /* "" for a summary-only upload */
	char path[1024];      /* the blob's path; "" when summary-only (set by api.c) */
	int rc;		      /* the decoder's result: 0 decoded, < 0 quarantine */
	char reason[256];     /* why, when rc < 0 */
	double seconds;	      /* decode time (a batch's share for summaries) */
	/* The backend's lease on this item, set by decode_next_batch and
	 * checked by decode_finish (PostgreSQL: the item is recorded only
	 * while its queue row still carries this lease); 0 for sqlite. */
	uint64_t lease;
};

/* One device row of the fleet page (store_ops.fleet_devices); text is
 * NULL for SQL NULL. */
struct rvs_fleet_device {
	const char *device_id, *model, *os_build, *arch;
	int64_t enrolled_at, uploads, charged_since, manual_since;
	int64_t last_upload_at; /* valid when has_last_upload */
	int has_last_upload;
};

/* The counted groups of the fleet page (store_ops.fleet_groups). */
enum rvs_fleet_group {
	RVS_FLEET_WEEKS,      /* key: the week's Monday "YYYY-MM-DD" (UTC); n uploads,
			       * bytes their blobs'; the newest 26 weeks */
	RVS_FLEET_QUARANTINE, /* key: a quarantine reason, n its uploads; top 50 */
	RVS_FLEET_SKIPS,      /* key: a reported skip reason, n its reports; top 50 */
};

/* A campaign change's publication (store_ops.campaign_change). */
struct rvs_publish_cb {
	/* One active campaign's spec (len bytes, not NUL-terminated; valid
	 * during the call); non-zero stops and fails the change. */
	int (*spec)(void *arg, const char *spec, size_t len);
	/* Signs and writes the policy of those campaigns, given the highest
	 * recorded version; *version: the new one.  0 or -errno. */
	int (*publish)(void *arg, uint64_t recorded, uint64_t *version);
	void *arg;
};

enum rvs_campaign_op { RVS_CAMPAIGN_CREATE, RVS_CAMPAIGN_UPDATE, RVS_CAMPAIGN_END };

/* One anomaly of last week for a campaign preview; text may be NULL. */
struct rvs_anomaly_row {
	const char *device_id, *app_id, *app_version, *model, *os_build;
	int kind, severity;
};

/* Which skip reports: received_at in [since, until) for the bounds set,
 * app_id = app unless app is NULL. */
struct rvs_skip_filter {
	int64_t since, until;
	int has_since, has_until;
	const char *app;
};

/* A skip report (skips_recent) or a reason and kind with its count
 * (skips_by_reason: reason, anomaly_kind, count only).  Text is NULL for
 * SQL NULL; an integer column that is NULL has its has_ flag 0. */
struct rvs_skip_row {
	const char *device_id, *app_id, *app_version, *reason;
	int64_t anomaly_kind, severity, received_at, captured_realtime_ns, count;
	int has_kind, has_severity, has_captured;
};

/* ---- issue 15 (sql15b): the decoded-trace index (decode.c's writes) ---- */

/* One trace_methods row.  Counts above INT64_MAX (a hostile summary) are
 * clipped into the signed range by the backend; self_rank 0 is NULL.
 * has_cpu 0: the capture had no thread-CPU time, and cpu_self_ns /
 * cpu_incl_ns are stored NULL (never 0: unknown is not "all off-CPU"); 1:
 * they are the method's self and inclusive time on the CPU, 0 <= cpu_self_ns
 * <= self_ns and 0 <= cpu_incl_ns <= incl_ns. */
struct rvs_index_method {
	const char *method;
	uint64_t calls, self_ns, incl_ns;
	int64_t self_rank;
	int has_cpu;
	uint64_t cpu_self_ns, cpu_incl_ns;
};

/* One trace_chains row; self_ns / incl_ns < 0 are NULL. */
struct rvs_index_chain {
	const char *kind; /* "anomaly" or "top" */
	int rank;
	char signature[17]; /* 16 hex digits */
	const char *chain;  /* "name;name;…;" (decode.c's form) */
	int64_t depth, self_ns, incl_ns;
};

/* One row of a trace's aggregate (model/agg.h's rvs_agg_build): v[0] is the root; a
 * row's parent comes before it.  An "(other)" row (other = 1) follows its
 * parent's kept children; a writer resolves the dictionary ids of the
 * kept rows first, in order, then writes the rows in order, resolving each
 * "(other)" row's id as it comes (so both backends number nodes alike). */
struct rvs_agg_row {
	uint32_t parent, depth; /* parent: index in v (0 for the root) */
	const char *method;	/* "" for the root; borrowed from the summary */
	int other;
	uint64_t calls;
	int64_t self_ns, incl_ns;
	/* has_cpu 0: the capture had no thread-CPU time and cpu_self_ns /
	 * cpu_incl_ns are stored NULL (never 0); 1: the path's self and
	 * inclusive time on the CPU, 0 <= cpu_self_ns <= self_ns and
	 * 0 <= cpu_incl_ns <= incl_ns.  Every row of a trace has the same
	 * has_cpu. */
	int has_cpu;
	int64_t cpu_self_ns, cpu_incl_ns;
};

/* A trace's rows and its trace_agg columns. */
struct rvs_agg_rows {
	struct rvs_agg_row *v;
	size_t n;
	int64_t nodes, folded, total_ns;
};

/* Every index row of one trace, computed by the decoder; the backend
 * writes them (index_write) and sets rc and reason.  Borrowed pointers:
 * valid for the call.  The traces row copies the upload's columns (app,
 * device, model, kind, severity, times) from uploads. */
struct rvs_index_trace {
	const char *trace_id;
	uint64_t lease;				/* the decode item's lease (PostgreSQL checks it) */
	int64_t decoded_at;			/* unix s */
	const char *anomaly_name;		/* NULL: NULL */
	int64_t duration_ns, nmethods, dropped; /* < 0: NULL */
	const struct rvs_index_method *methods;
	size_t nmethod_rows;
	int methods_first_wins; /* a method named twice keeps its first row (else an error) */
	const struct rvs_index_chain *chains;
	size_t nchains;
	/* traces.anomaly_signature, signature and issue (issue.h); NULL: NULL. */
	const char *anomaly_signature, *signature, *issue;
	/* traces.index_cut: what the upload's index budget left out or cut
	 * (pipeline/index_cap.h), NULL when nothing. */
	const char *index_cut;
	/* When set, the trace's trace_unresolved rows become these build ids
	 * (lowercase hex); when not, they are left alone. */
	int unresolved_replace;
	const char *const *unresolved;
	size_t nunresolved;
	/* The decoded capture, for the call-path aggregates both backends
	 * write in the same transaction (NULL for summaries): agg_build cuts
	 * its rows (model/agg.h's rvs_agg_build: 0 or -ENOMEM; the rows borrow
	 * agg's names), agg_release frees them once written. */
	const struct rva_summary *agg;
	size_t agg_max_nodes; /* agg_build's cut (the upload's index budget) */
	int (*agg_build)(const struct rva_summary *agg, size_t max_nodes, struct rvs_agg_rows *out);
	void (*agg_release)(struct rvs_agg_rows *rows);
	int rc;		  /* out: 0 indexed, else -errno (quarantine it) */
	char reason[256]; /* out: why, when rc != 0 */
};

/* A decoder's own connection for index writes (one per decode lane). */
struct rvs_index_lane;
/* A decode wake-up listener (wake_open; store_pg_wake.c). */
struct rvs_wake;

/* What the decoder needs of an upload (index_upload_meta). */
struct rvs_index_meta {
	int compression;
	uint64_t payload_size;
	uint8_t *summary; /* malloc'd serialized Summary, NULL when none; caller frees */
	size_t summary_len;
};

/* ---- issue 15 (sql15b): the JSON API's reads (query.c) ---- */

/* One column of a read's row: its name and value (RVS_COL_INT: i;
 * RVS_COL_TEXT: text, NUL-terminated).  Valid during the callback only. */
enum { RVS_COL_NULL, RVS_COL_INT, RVS_COL_TEXT };
struct rvs_col {
	const char *name;
	int type;
	int64_t i;
	const char *text;
};
/* A read's row callback: part says which of the read's row sets the row
 * belongs to (trace_read's RVS_TRACE_*, else 0).  A non-zero return stops
 * the read and is returned. */
typedef int (*rvs_row_fn)(void *arg, int part, const struct rvs_col *cols, size_t n);
enum { RVS_TRACE_HEAD, RVS_TRACE_TOP_SELF, RVS_TRACE_CHAINS };
/* method_read's parts (GET /api/v1/methods/{name}). */
enum {
	RVS_METHOD_COUNT,      /* one row: n, the traces with the method */
	RVS_METHOD_SELF_NTH,   /* one row (none past the end): the arg-th smallest self_ns */
	RVS_METHOD_INCL_NTH,   /* the same of incl_ns */
	RVS_METHOD_BY_VERSION, /* v, s, i, cs, ci of the newest arg traces with it, by v
				* (cs, ci: cpu_self_ns, cpu_incl_ns, NULL without CPU data) */
	RVS_METHOD_TRACES,     /* the newest arg traces with it and its totals there */
	RVS_METHOD_BY_MODEL,   /* as BY_VERSION with v the device model */
	RVS_METHOD_SAMPLES,    /* s, i of every trace with it (the filtered page's counts) */
	RVS_METHOD_CPU,	       /* one row over the traces with it and CPU data: n, s, i,
				* cs, ci (sums; 0 when n is 0) */
};

/* GET /api/v1/traces's filter: NULL / has_* 0 for absent. */
struct rvs_trace_filter {
	const char *app, *version, *model, *os_build, *signature, *method;
	int64_t kind, min_severity, since, until, cursor, limit;
	int has_kind, has_min_severity, has_since, has_until, has_cursor;
	/* 1: traces_list answers one row, "total": how many match, counted up
	 * to limit (the cursor ignored) — a capped count, whose cost is
	 * bounded by limit matches. */
	int count;
};

struct rvs_store;

/* an account's role, stored as its name; each role may do what the ones
 * below it may. */
enum rvs_role { RVS_ROLE_VIEWER = 1, RVS_ROLE_AUTHOR = 2, RVS_ROLE_ADMIN = 3 };
/* The stored and shown name of role (enum rvs_role): "viewer", "author"
 * (campaign author) or "admin"; NULL for any other value.  Pure. */
const char *rvs_role_name(int role);
/* The role named s (rvs_role_name's names), 0 when none.  Pure. */
int rvs_role_parse(const char *s);

/* one row of the append-only audit log; strings borrowed for the
 * callback's duration. */
struct rvs_audit_row {
	int64_t id, at; /* at: unix s */
	const char *actor, *action, *target, *detail;
};

/* Which audit rows (audit_list): actor and action exact unless NULL, at in
 * [since, until) for the bounds set, id below before_id when > 0 (the next
 * page after a row), at most limit, newest first. */
struct rvs_audit_filter {
	const char *actor, *action;
	int64_t since, until, before_id;
	int has_since, has_until;
	size_t limit;
};

/* ---- aggregates (agg.c), worst traces, issues, chain search (search.c) ---- */

/* One side of an aggregate (agg_read): the traces it sums.  NULL / has_ 0
 * for absent.  bucketed: only app, version, model, kind and whole-day
 * since / until are set, and the bucket sums are read; else the per-trace
 * rows of the newest max_traces matching traces. */
struct rvs_agg_filter {
	const char *app, *version, *model, *campaign, *method;
	const char *signature; /* traces with a chain of this signature */
	const char *chain;     /* traces with a chain of exactly this text ("a;b;") */
	int64_t kind, since, until, max_traces;
	int has_kind, has_since, has_until, bucketed;
	/* A heatmap's cells (heatmap_read's predicates, trace-level only):
	 * traces of issue; anomaly duration in [dur_min, dur_max) ns (a trace
	 * without a duration matches neither bound); has_except: not inside
	 * the cell received in [except_since, except_until) with a duration in
	 * [except_dur_min, except_dur_max) (the rest of a heatmap's range). */
	const char *issue;
	int64_t dur_min, dur_max, except_since, except_until, except_dur_min, except_dur_max;
	int has_dur_min, has_dur_max, has_except;
	/* 1: the caller reads no upload weight, so a per-trace row may carry
	 * w 1 and wflag 2 (unknown) whatever its upload's (PostgreSQL then
	 * reads no uploads row); 0: each row's own. */
	int unweighted;
};

/* One summed row of an aggregate side (agg_read): node's trace count (1
 * for a per-trace row), calls, self and inclusive ns; of those traces, how
 * many have CPU data (cpu_traces; 0 or 1 for a per-trace row) and, summed
 * over those only, the path's self and inclusive time on the CPU
 * (cpu_self_ns, cpu_incl_ns) and off it (off_self_ns, off_incl_ns: their
 * wall time less the on-CPU time), so on + off is the wall time of the
 * cpu_traces traces, exactly, whichever of the set's traces lack CPU data
 * (SCHEMA.md, sqlite migration 22). */
struct rvs_agg_sum {
	int64_t node, traces, calls, self_ns, incl_ns;
	int64_t cpu_traces, cpu_self_ns, cpu_incl_ns, off_self_ns, off_incl_ns;
};

/* agg_read's callbacks; a non-zero return stops the read and is returned. */
struct rvs_agg_cb {
	/* One summed row r of side (borrowed for the call); a per-trace
	 * row's upload weight (uploads.weight, 1 for a bucket row) and wflag:
	 * 0 the weight is exact, 1 an estimate (quota selection), 2 unknown
	 * (an older device; every bucket row). */
	int (*row)(void *arg, size_t side, const struct rvs_agg_sum *r, double weight, int wflag);
	/* After every side's rows: how many nodes to describe, and the i-th's id. */
	size_t (*nodes)(void *arg);
	int64_t (*node_id)(void *arg, size_t i);
	/* A node's dictionary entry: parent (0 for an app's root), depth and
	 * method (a root's: its app id); method valid during the call. */
	int (*describe)(void *arg, int64_t node, int64_t parent, int depth, const char *method);
};

/* GET /api/v1/traces?sort= (traces_sorted): the filter (NULL / has_ 0 for
 * absent), the key, its direction and the keyset cursor after which the
 * page starts. */
enum rvs_sort {
	RVS_SORT_RECEIVED,
	RVS_SORT_SEVERITY,
	RVS_SORT_DURATION,
	RVS_SORT_AGE,
	RVS_SORT_SELF
};
struct rvs_sorted_query {
	const char *app, *version, *model, *os_build, *signature, *method, *issue;
	int64_t kind, min_severity, since, until;
	int has_kind, has_min_severity, has_since, has_until;
	int key;  /* enum rvs_sort; RVS_SORT_SELF needs method */
	int desc; /* 1: largest first */
	int has_cursor;
	int64_t cursor_value, cursor_tiebreak;
	int64_t limit; /* rows (the caller asks one more to know of a next page) */
	/* 1: one row instead, "total": how many match, counted up to limit
	 * (the cursor and key's order ignored) — a capped count. */
	int count;
};

/* GET /api/v1/issues (issues_read): issues of traces received at or after
 * since, app / version / kind as the filter says. */
struct rvs_issue_filter {
	const char *app, *version;
	int64_t kind, since, limit;
	int has_kind;
};
enum { RVS_ISSUE_ROW, RVS_ISSUE_SIGNATURE, RVS_ISSUE_WEEK, RVS_ISSUE_WEIGHT };
/* One issues_read row; text borrowed for the callback.  RVS_ISSUE_ROW: an
 * issue (impact = traces × mean severity, at least 1 each, × devices) and
 * its newest trace with that trace's anomaly chain (has_example 0: none;
 * chain NULL when it has none); then its anomaly signatures
 * (RVS_ISSUE_SIGNATURE: signature, sorted, at most 64), its traces per
 * week (RVS_ISSUE_WEEK: week = received_at / 604800, count, w_count the
 * sum of their selection weights) and last one RVS_ISSUE_WEIGHT row:
 * w_traces (the sum of the traces' weights), w_devices (the sum over
 * its devices of the smallest weight among the device's traces) and how
 * many traces' weights are estimates (n_estimated) or unknown
 * (n_unknown), as rvs_trend_row's wflag. */
struct rvs_issue_row {
	const char *issue;
	const char *app; /* the issue's app (NULL: unknown); an issue is one app's */
	int64_t traces, devices, first_seen, last_seen;
	double severity, impact;
	int64_t total; /* RVS_ISSUE_ROW: the issues the filter matches, whatever the limit */
	int has_example;
	const char *example_trace, *example_chain;
	const char *signature;
	int64_t week, count;
	double w_count, w_traces, w_devices;
	int64_t n_estimated, n_unknown;
};

/* Chain search (search_scan): which table and how it matches. */
enum { RVS_SCAN_CHAINS, RVS_SCAN_METHODS, RVS_SCAN_METHOD_EXACT };
struct rvs_search_scan {
	int mode;
	const char *needle;	   /* CHAINS, METHODS: text the row holds; EXACT: the method */
	const char *app, *version; /* NULL: any */
	int64_t limit;		   /* EXACT: rows of one chunk at most */
};

/* reindex_queue's largest batch. */
#define RVS_REINDEX_MAX 10000
/* A method's trend (trend_read): the traces with method, of app, device
 * model, anomaly kind and issue when set (NULL / has_kind 0: any), the
 * newest max_rows of them (received_at, then trace_id, descending). */
struct rvs_trend_filter {
	const char *method, *app, *model, *issue;
	int64_t kind, max_rows;
	int has_kind;
};
/* One trace of a trend: the day it was captured (captured_at_ns / 1 day,
 * UTC; received_at's day when the device gave no capture time), its app
 * version ("" when none), the method's self and inclusive ns there, and
 * its upload's selection weight with wflag as agg rows' (0 exact, 1 an
 * estimate, 2 unknown).  version is valid during the callback only. */
struct rvs_trend_row {
	int64_t day;
	const char *version;
	int64_t self_ns, incl_ns;
	double weight;
	int wflag;
};
/* One capture day of alert_counts: its traces, the sum of their selection
 * weights (as trend rows' weight: an estimate of the captures the fleet
 * had that day) and how many of those weights are an estimate (wflag 1)
 * or unknown (2). */
struct rvs_alert_count_row {
	int64_t day, n;
	double weight;
	int64_t n_estimated, n_unknown;
};

/* An anomaly heatmap (heatmap_read): the traces with an aggregate (those
 * agg_read can sum) and an anomaly duration >= 0, received in [since,
 * until), of app, anomaly kind and issue when set (NULL / has_kind 0:
 * any). */
struct rvs_heatmap_filter {
	const char *app, *issue;
	int64_t kind, since, until;
	int has_kind;
};
/* The traces of an aggregate side where one frame (an aggregate node) is
 * heaviest (heaviest_read): its per-trace row, received_at and anomaly
 * duration (-1: none); trace_id valid during the callback only. */
struct rvs_heavy_row {
	const char *trace_id;
	int64_t calls, self_ns, incl_ns, received_at, duration_ns;
};

struct rvs_store_ops {
	const char *name;
	/* Opens (creating) the store at dsn and applies pending migrations.
	 * For sqlite3, dsn is a path or a "file:" URI (e.g.
	 * "file:/var/lib/x.db?vfs=NAME": a test's fault-injecting VFS; every
	 * connection the store opens on it uses that VFS). */
	int (*open)(const char *dsn, struct rvs_store **out);
	void (*close)(struct rvs_store *s);
	int (*schema_version)(struct rvs_store *s, int *out);
	/* Adds a device, or gives an enrolled device with the same non-empty
	 * client_device_id the new token hash and sets d->device_id to its id. */
	int (*device_add)(struct rvs_store *s, struct rvs_device_rec *d);
	/* Finds the device owning a token hash; device_id gets its id. */
	int (*device_by_token)(struct rvs_store *s, const uint8_t hash[32], char device_id[40]);
	/* The trace id of (device, upload_id) if already stored (then durable:
	 * the caller acknowledges it as a duplicate), else -ENOENT. */
	int (*upload_find)(struct rvs_store *s, const char *device_id, const uint8_t upload_id[16],
			   char trace_id[40]);
	/* How many of device_id's uploads received at or after `since` (unix
	 * s) count against the weekly quota (every anomaly kind but MANUAL). */
	int (*uploads_charged)(struct rvs_store *s, const char *device_id, int64_t since,
			       uint64_t *out);
	/* Stores an upload in state pending_decode and queues it for decoding,
	 * in one transaction; -EEXIST when (device, upload_id) exists, -EDQUOT
	 * over its weekly quota (u->quota_since).  Durable on return 0. */
	int (*upload_add)(struct rvs_store *s, const struct rvs_upload_rec *u);
	/* The decode step's seam: up to max of the oldest uploads in
	 * pending_decode within queue partition part of nparts (1..16, so that
	 * nparts concurrent decoders never take the same upload), oldest
	 * first: their trace ids and blob names (blob empty when summary-only)
	 * into items.  A batch ends at its first upload with a blob (a capture
	 * takes tens of ms to decode, and its outcome is recorded with its
	 * batch's).  Returns how many (0: none queued), -EINVAL for a bad
	 * partition, or -errno. */
	int (*decode_next_batch)(struct rvs_store *s, unsigned part, unsigned nparts,
				 struct rvs_decode_item *items, size_t max);
	/* The outcome of n decodes, in one transaction: each item off the
	 * queue, state decoded (rc 0) or quarantined with its reason (rc < 0;
	 * "" counts as "unspecified").  An item no longer queued is skipped.
	 * An item with rc -EAGAIN (its decode met a transient error) stays
	 * queued in pending_decode, to be decoded again (PostgreSQL: its lease
	 * dropped, taken again a second later).
	 * 0 or -errno (then nothing is recorded). */
	int (*decode_finish)(struct rvs_store *s, const struct rvs_decode_item *items, size_t n);
	int (*queue_depth)(struct rvs_store *s, uint64_t *out);
	int (*admin_put)(struct rvs_store *s, const char *name, unsigned iterations,
			 const uint8_t *salt, size_t saltlen, const uint8_t hash[32]);
	/* Stores a skip report; -EEXIST when (device, report_id) exists (that
	 * row durable too).  Durable on return 0. */
	int (*skip_add)(struct rvs_store *s, const struct rvs_skip_rec *k);
	/* Symbols for module build_id (lowercase hex) arrived: every decoded
	 * trace that left methods of it unnamed goes back on the decode queue
	 * (pending_decode), to be indexed again with the names.  *queued: how
	 * many. */
	int (*requeue_build_id)(struct rvs_store *s, const char *build_id, uint64_t *queued);
	/* The operator's requeue (`rearview-server requeue`): every
	 * quarantined upload whose reason contains reason (a substring, case
	 * sensitive; NULL: every one) goes back to pending_decode and on the
	 * decode queue, its quarantine row deleted, in one transaction (on
	 * PostgreSQL the idle decoders are woken).  *queued: how many.  0 or
	 * -errno (nothing changed, *queued 0). */
	int (*quarantine_requeue)(struct rvs_store *s, const char *reason, uint64_t *queued);
	/* The operator's re-index (`rearview-server reindex`), one batch in
	 * one transaction: of the decoded uploads with a stored capture whose
	 * trace id sorts after `after` ("" : from the first), the first max
	 * (1..RVS_REINDEX_MAX) in trace-id order that have no call-path
	 * aggregate (trace_agg row) — every one of them when all — go back to
	 * pending_decode and on the decode queue, so the decoder rebuilds
	 * their index rows from the blob (on PostgreSQL the idle decoders are
	 * woken).  last gets the batch's greatest trace id (the next batch's
	 * `after`), *queued how many were queued.  Returns the batch's size
	 * (0: none left after `after`; last is then ""), -EINVAL for a bad
	 * max or `after`, or -errno (nothing changed, *queued 0). */
	int (*reindex_queue)(struct rvs_store *s, const char *after, int all, size_t max,
			     char last[40], uint64_t *queued);

	/* ---- issue 15: the SQL of the other server files, behind the table ---- */

	/* Retention (retention.c): deletes the (at most max, 1..500) oldest
	 * uploads received before cutoff (unix s) in one transaction — their
	 * traces row (index rows cascade), queue, quarantine and uploads rows
	 * — and copies each one's blob name, when it has one, into blobs
	 * (room for max; a name may repeat), *nblobs how many.  Returns how
	 * many uploads it deleted (0: none left), or -errno (nothing deleted).
	 * PostgreSQL drops whole weeks instead (store_part.h): each call hands
	 * out up to max distinct blob names of the weeks dropped and returns
	 * the uploads they stood for; a week goes only once all of it is
	 * older than cutoff. */
	int (*retention_delete)(struct rvs_store *s, int64_t cutoff, size_t max, char (*blobs)[65],
				size_t *nblobs);
	/* 1 when an uploads row names blob (sha256 hex), 0 when none, -errno. */
	int (*blob_referenced)(struct rvs_store *s, const char *blob);

	/* The fleet page (fleet.c): up to max devices, the one with the latest
	 * upload first (devices without uploads last, newest enrolment first),
	 * each with its uploads counted: all, and those received at or after
	 * since that are charged (anomaly kind other than manual_kind) or
	 * manual.  cb gets each row (valid during the call); a non-zero return
	 * stops the scan and is returned.  0 or -errno. */
	int (*fleet_devices)(struct rvs_store *s, int64_t since, int manual_kind, unsigned max,
			     int (*cb)(void *arg, const struct rvs_fleet_device *d), void *arg);
	/* The fleet page's counted groups (enum rvs_fleet_group), largest or
	 * newest first, through cb(arg, key, n, bytes) as fleet_devices. */
	int (*fleet_groups)(struct rvs_store *s, int group,
			    int (*cb)(void *arg, const char *key, int64_t n, int64_t bytes),
			    void *arg);
	int (*device_count)(struct rvs_store *s, uint64_t *out);

	/* Web sessions (web.c), keyed by the SHA-256 of the session id.
	 * session_get: the admin and CSRF token of the session id_hash names
	 * if it expires after now, else -ENOENT. */
	int (*session_get)(struct rvs_store *s, const uint8_t id_hash[32], int64_t now,
			   char user[64], char csrf[65]);
	/* Stores a session (created now, expiring at expires) after deleting
	 * every session expired at now.  0 or -errno. */
	int (*session_put)(struct rvs_store *s, const uint8_t id_hash[32], const char *user,
			   const char *csrf, int64_t now, int64_t expires);
	/* Deletes the session (none: 0 too). */
	int (*session_delete)(struct rvs_store *s, const uint8_t id_hash[32]);
	/* Deletes every session of account user (none: 0 too): its password
	 * was reset or the account disabled. */
	int (*sessions_delete_user)(struct rvs_store *s, const char *user);
	/* An admin's PBKDF2 parameters (admin_put's): -ENOENT no such admin,
	 * -EBADMSG a stored salt longer than *saltlen or a hash not 32 bytes;
	 * on 0 *saltlen is the salt's length. */
	int (*admin_get)(struct rvs_store *s, const char *name, unsigned *iterations, uint8_t *salt,
			 size_t *saltlen, uint8_t hash[32]);
	/* Saves (or replaces) method's p95 alert threshold (ns > 0). */
	int (*method_alert_put)(struct rvs_store *s, const char *method, int64_t threshold_ns);
	/* method's saved threshold into *ns, -ENOENT when it has none. */
	int (*method_alert_get)(struct rvs_store *s, const char *method, int64_t *ns);

	/* Campaigns (campaign.c).  campaign_change, in one transaction (on
	 * PostgreSQL under an advisory lock, so nodes publish one at a time):
	 * op RVS_CAMPAIGN_CREATE stores campaign id with spec (JSON text;
	 * -EEXIST if the id exists), UPDATE replaces an active one's spec, END
	 * ends it (both -ENOENT when no active campaign has the id); all at
	 * unix time now.  Then p->spec gets each active campaign's spec,
	 * ordered by id, at most max_specs, and p->publish the highest
	 * recorded policy version (0: none); when it returns 0 with *version,
	 * that version is recorded with reason and now and the transaction
	 * commits.  Any failure rolls back: the callbacks' non-zero return,
	 * or -errno.  p's callbacks run with the store's write lock held and
	 * must not call the store. */
	int (*campaign_change)(struct rvs_store *s, int op, const char *id, const char *spec,
			       const char *reason, int64_t now, size_t max_specs,
			       const struct rvs_publish_cb *p);
	/* The uploads and skip reports received at or after since, at most
	 * max, to cb (a skip report's model and OS build are its device's); a
	 * non-zero return stops the scan and is returned. */
	int (*anomalies_since)(struct rvs_store *s, int64_t since, size_t max,
			       int (*cb)(void *arg, const struct rvs_anomaly_row *r), void *arg);
	/* Every campaign, active ones first, then the most recently updated,
	 * then by id: cb(arg, spec, its length, created_at, updated_at,
	 * ended_at or -1 while active); as anomalies_since. */
	int (*campaigns_list)(struct rvs_store *s,
			      int (*cb)(void *arg, const char *spec, size_t len, int64_t created,
					int64_t updated, int64_t ended),
			      void *arg);
	/* The highest recorded policy version, 0 when none. */
	int (*policy_version)(struct rvs_store *s, uint64_t *out);

	/* Skip reports (query.c's GET /api/v1/skips) matching f.
	 * skips_by_reason: one row per reason and anomaly kind with its count
	 * (most first, then by reason and kind, a NULL kind first);
	 * skips_recent: at most limit reports, newest first (received_at,
	 * then arrival).  cb as fleet_devices. */
	int (*skips_by_reason)(struct rvs_store *s, const struct rvs_skip_filter *f,
			       int (*cb)(void *arg, const struct rvs_skip_row *r), void *arg);
	int (*skips_recent)(struct rvs_store *s, const struct rvs_skip_filter *f, int64_t limit,
			    int (*cb)(void *arg, const struct rvs_skip_row *r), void *arg);

	/* ---- issue 15 (sql15b): the decoded-trace index ---- */
	/* A connection of its own for one decode lane (index writes wait for
	 * the database's write lock there, not on the store's connection).
	 * index_lane_close(NULL) is a no-op.  A lane is used by one thread at a
	 * time; close it before the store. */
	int (*index_lane_open)(struct rvs_store *s, struct rvs_index_lane **out);
	void (*index_lane_close)(struct rvs_index_lane *l);
	/* The upload's compression, payload size and stored Summary into *m;
	 * -ENOENT when there is no such upload. */
	int (*index_upload_meta)(struct rvs_index_lane *l, const char *trace_id,
				 struct rvs_index_meta *m);
	/* Replaces the index rows of the n traces v (a trace decoded before
	 * loses its old rows) in one transaction, each trace in a savepoint so
	 * that one trace's failure fails it alone: sets every v[i].rc and
	 * reason (a failed commit fails them all).  PostgreSQL writes a trace
	 * only while its decode_queue row still carries v[i].lease (else
	 * rc -ESTALE: another decoder took it), as decode_finish records it;
	 * it retries a batch that meets a deadlock or another transient error
	 * and, when they persist, fails every trace with -EAGAIN. */
	void (*index_write)(struct rvs_index_lane *l, struct rvs_index_trace *v, size_t n);
	/* The capture of a decoded trace (trace_load.c) — or of one decoded
	 * once and queued again to be re-symbolized, with its index rows
	 * still there: its blob name (as stored, the caller checks it),
	 * compression and declared payload size.  -ENOENT when the trace has
	 * no such capture. */
	int (*trace_capture)(struct rvs_store *s, const char *trace_id, char blob[65],
			     int *compression, uint64_t *payload_size);
	/* The JSON API's reads: rows to cb with the column names API.md
	 * shows (server/API.md).  trace_read: the upload and index row
	 * (RVS_TRACE_HEAD; -ENOENT when there is no such upload), its ranked
	 * methods (RVS_TRACE_TOP_SELF, by rank) and chains (RVS_TRACE_CHAINS,
	 * by kind, rank).  signatures_read: the signature totals, most traces
	 * first, the first offset skipped, at most limit, each followed by its
	 * per-week / app-version counts as part 1 rows (at most 200, newest
	 * week first).
	 * traces_list: at most f->limit traces matching f, newest first, each
	 * with a "rowid_" column (the keyset cursor: rows below it follow);
	 * with f->count, one row instead: "total", the number matching f. */
	int (*trace_read)(struct rvs_store *s, const char *trace_id, rvs_row_fn cb, void *arg);
	int (*signatures_read)(struct rvs_store *s, int64_t offset, int64_t limit, rvs_row_fn cb,
			       void *arg);
	/* The version pickers' rows (GET /api/v1/versions): each distinct
	 * (app_id, app_version) of the call-path aggregates' buckets (every
	 * decoded capture's), app NULL for every app, ordered by app_id then
	 * app_version (text); unknown versions ('') left out.  Columns
	 * app_id, app_version.  0, the callback's non-zero or -errno. */
	int (*versions_read)(struct rvs_store *s, const char *app, rvs_row_fn cb, void *arg);
	int (*traces_list)(struct rvs_store *s, const struct rvs_trace_filter *f, rvs_row_fn cb,
			   void *arg);
	/* The method page's reads (RVS_METHOD_*, rows as that enum says, to cb
	 * as part 0); count is RVS_METHOD_COUNT's n when known (a plan hint
	 * for the newest-first reads), arg as the part says.  app / version
	 * (NULL: any) keep only the traces of that app / app version in
	 * BY_VERSION, BY_MODEL, TRACES, SAMPLES and CPU (COUNT and the NTH
	 * reads are of every trace). */
	int (*method_read)(struct rvs_store *s, int part, const char *method, int64_t arg,
			   int64_t count, const char *app, const char *version, rvs_row_fn cb,
			   void *cbarg);
	/* GET /api/v1/signatures/weekly: traces received at or after since
	 * counted per signature (as signatures_read's), week (its Monday,
	 * UTC, "YYYY-MM-DD") and app version, ordered by those (a NULL
	 * version first); with nsigs > 0 only the signatures sigs[0..nsigs)
	 * (16 lowercase hex digits each, at most 200).  Rows: signature,
	 * week, app_version, traces. */
	int (*signatures_weekly)(struct rvs_store *s, int64_t since, const char *const *sigs,
				 size_t nsigs, rvs_row_fn cb, void *arg);

	/* ---- accounts' roles, disabling, the audit log ---- */

	/* The role (enum rvs_role) and disabled flag (0/1) of account name
	 * (admin_put's; a new one is an enabled admin): -ENOENT no such
	 * account. */
	int (*user_get)(struct rvs_store *s, const char *name, int *role, int *disabled);
	/* Sets name's role when role > 0 and its disabled flag when disabled
	 * >= 0; -ENOENT no such account. */
	int (*user_set)(struct rvs_store *s, const char *name, int role, int disabled);
	/* Every account by name: cb(arg, name, role, disabled, created_at); a
	 * non-zero return stops the scan and is returned.  0 or -errno. */
	int (*users_list)(struct rvs_store *s,
			  int (*cb)(void *arg, const char *name, int role, int disabled,
				    int64_t created),
			  void *arg);
	/* Appends a row to the audit log (the table refuses updates and
	 * deletes).  0 or -errno. */
	int (*audit_add)(struct rvs_store *s, int64_t at, const char *actor, const char *action,
			 const char *target, const char *detail);
	/* The audit rows f selects, newest first, to cb; as users_list. */
	int (*audit_list)(struct rvs_store *s, const struct rvs_audit_filter *f,
			  int (*cb)(void *arg, const struct rvs_audit_row *r), void *arg);
	/* Personal API tokens, keyed by the SHA-256 of the token (the token
	 * itself is never stored).  token_add: a new token id (short hex,
	 * shown in lists) of owner named name, created at now; -EEXIST when
	 * the id or hash exists. */
	int (*token_add)(struct rvs_store *s, const char *id, const uint8_t hash[32],
			 const char *owner, const char *name, int64_t now);
	/* The owner and its role of the live token hash names (not revoked,
	 * its owner enabled), its last use set to now; -ENOENT otherwise. */
	int (*token_auth)(struct rvs_store *s, const uint8_t hash[32], int64_t now, char owner[64],
			  int *role);
	/* Revokes owner's live token id at now; -ENOENT when owner has no
	 * such live token. */
	int (*token_revoke)(struct rvs_store *s, const char *owner, const char *id, int64_t now);
	/* owner's tokens, newest first: cb(arg, id, name, created_at,
	 * last_used or -1, revoked_at or -1); as users_list. */
	int (*tokens_list)(struct rvs_store *s, const char *owner,
			   int (*cb)(void *arg, const char *id, const char *name, int64_t created,
				     int64_t last_used, int64_t revoked),
			   void *arg);

	/* ---- regressions and webhook deliveries (store_*_regress.c) ---- */

	/* A connection of its own on s's database for regress.c and webhook.c
	 * (struct rvs_regress_db, store_regress.h): used by one thread at a
	 * time; close it (regress_close(NULL) is a no-op) before the store.
	 * 0, -ENOMEM, -EIO. */
	int (*regress_open)(struct rvs_store *s, struct rvs_regress_db **out);
	void (*regress_close)(struct rvs_regress_db *d);
	/* The two sides q names, in one snapshot: every trace of either side
	 * (RVS_CMP_TRACE rows, by trace_id), then their methods
	 * (RVS_CMP_METHOD), then their top chains (RVS_CMP_CHAIN), to cb (row
	 * valid during the call); a non-zero return stops and is returned.
	 * Every value of q is bound as a parameter.  0 or -errno. */
	int (*regress_sides)(struct rvs_regress_db *d, const struct rvs_cmp_sides *q,
			     int (*cb)(void *arg, const struct rvs_cmp_row *r), void *arg);
	/* Every (app, version) with decoded traces (duration_ns not NULL;
	 * app and version not NULL) and how many, ordered by app, to cb; as
	 * regress_sides. */
	int (*regress_versions)(struct rvs_regress_db *d,
				int (*cb)(void *arg, const char *app, const char *version,
					  int64_t n),
				void *arg);
	/* The trace counts of the stored comparison (app, a, b); -ENOENT when
	 * there is none. */
	int (*regress_run_get)(struct rvs_regress_db *d, const char *app, const char *a,
			       const char *b, int64_t *traces_a, int64_t *traces_b);
	/* In one transaction: when alert_method is set, records the alert (app,
	 * A, B, alert_method) unless it exists, and when it is new queues the
	 * n deliveries w (pending, due at their now_ms); then stores r,
	 * replacing the comparison (app, A, B) — its primary key, so nodes
	 * comparing one pair at once keep one row and queue one alert.
	 * *alerted (may be NULL): 1 when the alert was new.  0 or -errno
	 * (nothing stored). */
	int (*regress_run_put)(struct rvs_regress_db *d, const struct rvs_regress_run_row *r,
			       const char *alert_method, const struct rvs_webhook_new *w, size_t n,
			       int *alerted);
	/* The newest max stored comparisons (computed_at descending, then
	 * app), result NULL, to cb; as regress_sides. */
	int (*regress_runs_list)(struct rvs_regress_db *d, size_t max,
				 int (*cb)(void *arg, const struct rvs_regress_run_row *r),
				 void *arg);
	/* Queues one pending delivery due at w->now_ms.  0 or -errno. */
	int (*webhook_enqueue)(struct rvs_regress_db *d, const struct rvs_webhook_new *w);
	/* Claims up to max pending deliveries due by now_ms (oldest due first)
	 * for lease_ms: in one transaction their next_try_ms becomes now_ms +
	 * lease_ms, so no other pass (on PostgreSQL: no other node; rows are
	 * taken FOR UPDATE SKIP LOCKED) takes them before the lease ends; each
	 * row to cb (its next_try_ms the lease's end; a non-zero return stops:
	 * the rows claimed wait for their lease).  Returns how many, or -errno
	 * (sqlite: none claimed). */
	int (*webhook_claim)(struct rvs_regress_db *d, int64_t now_ms, int64_t lease_ms, size_t max,
			     int (*cb)(void *arg, const struct rvs_webhook_row *r), void *arg);
	/* A claimed delivery's outcome: sets r's state, attempts, last_status,
	 * last_error, next_try_ms and delivered_at on row r->id while it is
	 * still pending with prev_attempts attempts; -ENOENT when not (another
	 * pass recorded it). */
	int (*webhook_record)(struct rvs_regress_db *d, const struct rvs_webhook_row *r,
			      uint32_t prev_attempts);
	/* The newest max deliveries (id descending) to cb; as regress_sides. */
	int (*webhook_list)(struct rvs_regress_db *d, size_t max,
			    int (*cb)(void *arg, const struct rvs_webhook_row *r), void *arg);
	/* How many deliveries are pending. */
	int (*webhook_pending)(struct rvs_regress_db *d, uint64_t *out);
	/* ---- decode wake-ups (store_pg_wake.c) ---- */

	/* A listener that learns at once when any node queues a decode (an
	 * upload, a symbols requeue), so that an idle decoder need not wait
	 * for its poll.  NULL on a backend without one (sqlite: one process,
	 * whose uploads pump its own decoder).  wake_open: work thread (it
	 * connects); 0, -ENOMEM or -EIO; the caller owns *out and frees it
	 * with wake_close (any thread, once; NULL is a no-op). */
	int (*wake_open)(struct rvs_store *s, struct rvs_wake **out);
	/* The socket to watch for reading (uv_poll on the event loop). */
	int (*wake_fd)(const struct rvs_wake *w);
	/* Never blocks: reads what arrived and returns how many wake-ups (0:
	 * none), or -EIO when the listener broke (close it; the poll goes
	 * on).  One thread at a time. */
	int (*wake_drain)(struct rvs_wake *w);
	void (*wake_close)(struct rvs_wake *w);
	/* ---- aggregates (agg.c), worst traces, issues, chain search (search.c) ---- */

	/* The aggregate of nsides (1 or 2) sides f[0..nsides), in one read
	 * snapshot: each side's rows (bucket sums or per-trace rows, as f says)
	 * to cb->row, then every node cb->nodes / cb->node_id name to
	 * cb->describe (-EIO when one is missing from the dictionary). */
	int (*agg_read)(struct rvs_store *s, const struct rvs_agg_filter *f, size_t nsides,
			const struct rvs_agg_cb *cb, void *arg);
	/* The traces of q in its sort order, at most q->limit rows to cb (part
	 * 0) with the columns API.md's worst-traces rows show, then
	 * method_self_ns (RVS_SORT_SELF's method, else NULL), sort_value_ and
	 * tiebreak_ (the keyset cursor's two values). */
	int (*traces_sorted)(struct rvs_store *s, const struct rvs_sorted_query *q, rvs_row_fn cb,
			     void *arg);
	/* The issues of f, most impact first (then by issue), at most f->limit,
	 * each RVS_ISSUE_ROW followed by its signature and week rows; cb's
	 * non-zero return stops the read and is returned. */
	int (*issues_read)(struct rvs_store *s, const struct rvs_issue_filter *f,
			   int (*cb)(void *arg, int part, const struct rvs_issue_row *r),
			   void *arg);
	/* Chain search's scan of stored chains or methods (q->mode), newest
	 * first, in chunks of rows by their arrival sequence: chunk(arg, top,
	 * &hi, &lo) — top is one past the table's newest sequence — returns 0
	 * to scan [lo, hi) next, non-zero to end the scan (0 returned); each
	 * matching row (app / version filtered; CHAINS, METHODS: holding
	 * needle; EXACT: named needle, at most q->limit) goes to row (part 0)
	 * with trace_id, app_id, app_version, model, anomaly_kind, severity,
	 * received_at, issue, the row's sequence, source, rank and its chain
	 * or method (then calls and self_ns for a method); row's 1 ends the
	 * chunk, a negative return the scan (returned).  One connection for
	 * the scan. */
	int (*search_scan)(struct rvs_store *s, const struct rvs_search_scan *q,
			   int (*chunk)(void *arg, int64_t top, int64_t *hi, int64_t *lo),
			   rvs_row_fn row, void *arg);
	/* A method's trend: each trace f selects to cb (in no promised
	 * order; a non-zero return stops the read and is returned); *cut is
	 * 1 when more than f->max_rows traces matched (the newest max_rows
	 * were given), else 0.  0 or -errno. */
	int (*trend_read)(struct rvs_store *s, const struct rvs_trend_filter *f,
			  int (*cb)(void *arg, const struct rvs_trend_row *r), void *arg, int *cut);

	/* ---- an index batch's uploads read at once (PostgreSQL's round trips) ---- */
	/* index_upload_meta of the n uploads trace_ids in one read: m[i] and
	 * rc[i] (0, or -ENOENT with m[i] zeroed) for each; the call's result 0,
	 * or -errno with nothing of m[] to free.  NULL: index_upload_meta one by
	 * one. */
	int (*index_upload_metas)(struct rvs_index_lane *l, const char *const *trace_ids, size_t n,
				  struct rvs_index_meta *m, int *rc);

	/* ---- alert rules on trends (store_*_alert.c; model/alerts.h) ---- */

	/* Adds rule r (name, spec, created_by, created_at; state "ok") unless
	 * max rules exist already (-ENOSPC); *id its id.  0 or -errno. */
	int (*alert_rule_add)(struct rvs_regress_db *d, const struct rvs_alert_rule_row *r,
			      size_t max, int64_t *id);
	/* Deletes rule id; -ENOENT when there is none. */
	int (*alert_rule_delete)(struct rvs_regress_db *d, int64_t id);
	/* Every rule (id ascending) with its last delivery to cb (row valid
	 * during the call; a non-zero return stops and is returned). */
	int (*alert_rules_list)(struct rvs_regress_db *d,
				int (*cb)(void *arg, const struct rvs_alert_rule_row *r),
				void *arg);
	/* An evaluation of rule r->id, in one transaction: sets its value
	 * (has_value) and evaluated_at; when r->state differs from from_state
	 * the rule moves to r->state (since r->since) only if it is still in
	 * from_state — then the n deliveries w are queued and the last becomes
	 * the rule's last delivery, and *moved is 1 (else 0: another pass
	 * moved it first, nothing is queued).  -ENOENT when the rule is gone. */
	int (*alert_rule_update)(struct rvs_regress_db *d, const struct rvs_alert_rule_row *r,
				 const char *from_state, const struct rvs_webhook_new *w, size_t n,
				 int *moved);
	/* Captures (traces) per capture day (as trend_read's day) in
	 * [from_day, to_day] of app, model and kind when set (NULL / has_kind
	 * 0: any), with their summed selection weights, one row per day that
	 * has any, to cb; reads only traces received since from_day (a
	 * capture arrives after it was taken).  0 or -errno. */
	int (*alert_counts)(struct rvs_regress_db *d, const struct rvs_trend_filter *f,
			    int64_t from_day, int64_t to_day,
			    int (*cb)(void *arg, const struct rvs_alert_count_row *r), void *arg);

	/* ---- the anomaly heatmap (api/heatmap.c) ---- */

	/* Each trace f selects, as (received_at, duration_ns), to cb (in no
	 * promised order; a non-zero return stops the read and is returned).
	 * 0 or -errno. */
	int (*heatmap_read)(struct rvs_store *s, const struct rvs_heatmap_filter *f,
			    int (*cb)(void *arg, int64_t received_at, int64_t duration_ns),
			    void *arg);
	/* Of the traces agg_read sums for side f (trace-level: the same newest
	 * f->max_traces), those with a row of aggregate node `node`, heaviest
	 * first by its self (by_self) or inclusive ns (then by trace_id), at
	 * most limit, to cb (a non-zero return stops the read and is
	 * returned).  0 or -errno. */
	int (*heaviest_read)(struct rvs_store *s, const struct rvs_agg_filter *f, int64_t node,
			     int by_self, int64_t limit,
			     int (*cb)(void *arg, const struct rvs_heavy_row *r), void *arg);

	/* ---- list totals (the JSON API's "total" of a list) ---- */
	/* How many signatures signatures_read pages through, into *out: a
	 * count of the signature totals' rows (one per signature, no scan of
	 * traces).  0 or -errno. */
	int (*signatures_total)(struct rvs_store *s, int64_t *out);
	/* How many audit rows f selects (f->before_id and f->limit ignored),
	 * counted up to cap, into *out: a capped count, its cost bounded by
	 * cap matches.  0 or -errno. */
	int (*audit_total)(struct rvs_store *s, const struct rvs_audit_filter *f, int64_t cap,
			   int64_t *out);

	/* ---- jank counts per app, traced or not (POST /v1/jank, GET
	 * /api/v1/fleet/jank) ---- */
	/* Stores device_id's counts rows[0..n) in one transaction, each
	 * replacing the row of its (device, app, version, day): a resent
	 * report never doubles.  Durable on return 0. */
	int (*jank_put)(struct rvs_store *s, const char *device_id, const struct rvs_jank_rec *rows,
			size_t n);
	/* Per app over the days [from_day, to_day]: frames, late frames and
	 * devices summed over versions, and its uploads received from
	 * from_day's start to to_day's end — to cb, the highest jank rate
	 * (late / frames) first, then the app id; at most limit apps.  A
	 * nonzero cb return stops the scan and is returned.  0 or -errno. */
	int (*jank_by_app)(struct rvs_store *s, int64_t from_day, int64_t to_day, int64_t limit,
			   int (*cb)(void *arg, const struct rvs_jank_app_row *r), void *arg);
	/* Retention: deletes the counts of days before before_day.  0 or
	 * -errno. */
	int (*jank_expire)(struct rvs_store *s, int64_t before_day);
	/* One app's frames and late frames per day in [from_day, to_day]
	 * (summed over versions and devices; days without counts left out),
	 * to cb in day order (the jank_rate alert metric).  A nonzero cb
	 * return stops the scan and is returned.  0 or -errno. */
	int (*jank_app_days)(struct rvs_store *s, const char *app, int64_t from_day, int64_t to_day,
			     int (*cb)(void *arg, int64_t day, int64_t frames, int64_t late),
			     void *arg);

	/* ---- jank counts per app version (GET /api/v1/fleet/jank's
	 * versions) ---- */
	/* Every (app, version)'s frames and late frames over the UTC days
	 * [from_day, to_day], summed over devices, to cb (strings valid during
	 * the callback; version "" when unknown) by app, most frames first,
	 * then by version; at most max_rows rows.  A nonzero cb return stops
	 * the scan and is returned.  0 or -errno. */
	int (*jank_versions)(struct rvs_store *s, int64_t from_day, int64_t to_day,
			     int64_t max_rows,
			     int (*cb)(void *arg, const char *app, const char *version,
				       int64_t frames, int64_t late),
			     void *arg);
};

extern const struct rvs_store_ops rvs_store_sqlite;
/* PostgreSQL 15 (store_pg.c): dsn is a libpq connection URI
 * ("postgresql://user@host/db", or "postgresql:///db?host=/run/sock"). */
extern const struct rvs_store_ops rvs_store_pg;
/* How long a PostgreSQL decode lease lasts (seconds > 0; default 300):
 * after that another node may take the upload.  Process-wide; set once at
 * start from [server] decode_lease_s, before any store is opened. */
void rvs_store_pg_lease(unsigned seconds);

/* 1 when rc (a store or blob call's -errno) is transient — -EAGAIN,
 * -EBUSY, -ENOSPC or -ETIMEDOUT: the same call may succeed later — else 0
 * (0 itself included).  Pure; inline, so that every backend file may use
 * it without linking the backends' chooser (store.c). */
static inline int rvs_store_transient(int rc)
{
	return rc == -EAGAIN || rc == -EBUSY || rc == -ENOSPC || rc == -ETIMEDOUT;
}

/* The backend a configured database names: rvs_store_pg for a
 * "postgresql://" or "postgres://" URI, else rvs_store_sqlite (a path or a
 * "file:" URI).  Never NULL; no I/O. */
const struct rvs_store_ops *rvs_store_for(const char *dsn);

/* The process's shared store of a dsn, so that every part of the server
 * (the device API, queries, retention, the web UI) uses one handle per
 * database: the first acquire opens it with rvs_store_for(dsn) (applying
 * migrations), later ones count a reference.  Work thread (it may block on
 * the open; acquirers of other dsns wait meanwhile).  *ops and *out are
 * set on 0; -ENOSPC past 8 databases at once, or the open's -errno. */
int rvs_store_acquire(const char *dsn, const struct rvs_store_ops **ops, struct rvs_store **out);
/* Drops a reference taken by rvs_store_acquire; the last closes the store.
 * Any thread; s must come from rvs_store_acquire. */
void rvs_store_release(struct rvs_store *s);

/* ---- regressions and webhook deliveries ---- */

/* rvs_store_acquire(dsn) and the store's regress_open: what regress.c and
 * webhook.c run on.  Work thread.  0 (*ops, *s, *d set) or the -errno of
 * either (nothing held). */
int rvs_store_regress_open(const char *dsn, const struct rvs_store_ops **ops, struct rvs_store **s,
			   struct rvs_regress_db **d);
/* Closes d and releases s (as rvs_store_release). */
void rvs_store_regress_close(const struct rvs_store_ops *ops, struct rvs_store *s,
			     struct rvs_regress_db *d);

#endif
