/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_sqlite.c — the sqlite3 storage backend (server/SCHEMA.md).
 *
 * One connection in serialized mode, WAL journal, foreign keys on.  A mutex
 * makes each multi-statement operation atomic with respect to other work
 * threads (BEGIN IMMEDIATE inside it).  The hot single-statement reads
 * (token lookup, upload lookup, the decode queue) go through a second,
 * read-only connection with a mutex of its own: in WAL mode a reader never
 * waits for a writer, so a request's authentication is not queued behind a
 * commit that waits for the decoder's write lock.  Uploads commit in groups: one that
 * arrives while another thread is committing waits, and the next committer
 * writes every waiting upload in one transaction, a savepoint each, so a
 * duplicate fails alone and each caller still gets its own result once its
 * row is durable (one WAL append for the group instead of one per
 * upload; server/BENCHMARKS.md).
 *
 * Durability (issue 18 item 6): what a caller is told is stored — an upload,
 * a skip report, an enrolment — is on disk before the function returns,
 * yet no fsync runs under the write lock.  The connection commits with
 * synchronous=NORMAL (no fsync at COMMIT; sqlite still fsyncs the WAL before
 * a checkpoint copies it, the database after, and a restarted WAL's header),
 * then, with the lock released, wal_durable() fsyncs the WAL file through
 * sqlite's own file object (SQLITE_FCNTL_JOURNAL_POINTER: the same xSync
 * sqlite's synchronous=FULL commit would run).  Why that is enough: a WAL
 * is append-only between restarts and recovery replays every frame up to
 * the last valid commit frame, so once every byte appended before our
 * COMMIT returned is on disk, our transaction survives power loss whatever
 * is written after it; and the WAL is only restarted (overwritten) after a
 * checkpoint has copied every frame into the database and fsynced it, so a
 * transaction checkpointed before our fsync is durable in the database
 * file.  (Later appends cannot damage synced frames: sqlite's unix VFS
 * assumes powersafe overwrite, as its own FULL commit does without sector
 * padding.)  One fsync covers every commit counted before it started:
 * uploads that arrive while a group commits and syncs gather into the next
 * group (one transaction, one fsync), and the skip reports and enrolments
 * committed while a sync runs share the next one.  A failed fsync is
 * sticky: the kernel may have dropped the pages it could not write, so
 * from then on nothing is acknowledged (-EIO) until a restart.
 *
 * Every value from a device goes in through bound parameters, never through
 * SQL text.  Migrations are an append-only list: migration N brings
 * user_version from N-1 to N.
 */
#include "store/store.h"
#include "store/store_index.h"
#include "store/sqlite/store_sqlite_util.h"
#include "store/store_regress_be.h"
#include "base/issue.h"
#include "store/store_agg.h"
#include "base/log.h"
#include "rearview/common.h"
#include "rearview/common.pb-c.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

/* An upload waiting for a group commit (lives on its caller's stack). */
struct pending_upload {
	const struct rvs_upload_rec *u;
	int rc;
	int done; /* under gmu: rc is final, the caller may return */
	struct pending_upload *next;
};

struct rvs_store {
	sqlite3 *db;
	pthread_mutex_t mu;
	sqlite3 *rdb; /* read-only; rmu serializes its statements */
	pthread_mutex_t rmu;
	/* Group commit of uploads: gmu guards the list and committing. */
	pthread_mutex_t gmu;
	pthread_cond_t gcv;
	struct pending_upload *head, **tail;
	int committing;
	/* Durability: wal is db's WAL file (open as long as db is: the store
	 * never leaves WAL mode).  committed counts db's commits that a caller
	 * waits to see durable (incremented under mu after COMMIT); synced,
	 * syncing and sync_failed are under gmu: every commit counted up to
	 * synced is on disk, one thread at a time runs the fsync. */
	sqlite3_file *wal;
	atomic_uint_fast64_t committed;
	uint64_t synced;
	int syncing, sync_failed;
	/* issue 15: the dsn, for the scans that open a connection of their own. */
	char *dsn;
};

/* Trigger bodies of migration 5: count row R (NEW or OLD) of traces into,
 * or out of, its signature's totals.  A count reaching 0 removes the row. */
#define SIG_ADD(R)                                                                           \
	" INSERT INTO signature_counts (signature, week, app_version, traces) VALUES"        \
	" (" R ".signature, " R ".received_at / 604800, COALESCE(" R ".app_version, ''), 1)" \
	" ON CONFLICT DO UPDATE SET traces = traces + 1;"                                    \
	" INSERT INTO signatures (signature, chain, traces) VALUES (" R ".signature,"        \
	" (SELECT x.chain FROM trace_chains x WHERE x.trace_id = " R ".trace_id"             \
	" AND x.signature = " R ".signature LIMIT 1), 1)"                                    \
	" ON CONFLICT DO UPDATE SET traces = traces + 1,"                                    \
	" chain = COALESCE(chain, excluded.chain);"
#define SIG_SUB(R)                                                                           \
	" UPDATE signature_counts SET traces = traces - 1 WHERE signature = " R ".signature" \
	" AND week = " R ".received_at / 604800 AND app_version = COALESCE(" R               \
	".app_version, '');"                                                                 \
	" DELETE FROM signature_counts WHERE signature = " R ".signature AND traces <= 0;"   \
	" UPDATE signatures SET traces = traces - 1 WHERE signature = " R ".signature;"      \
	" DELETE FROM signatures WHERE signature = " R ".signature AND traces <= 0;"

/* Trigger bodies of migration 11: count upload R (NEW or OLD) into, or out
 * of, the fleet page's totals — its week's uploads and blob bytes, its
 * device's uploads per (UTC day, anomaly kind), its device's uploads and
 * latest upload.  A count reaching 0 removes its row; the latest upload is
 * read back through uploads_fleet after a removal. */
#define FLEET_WEEK(R) " date(" R ".received_at, 'unixepoch', '-6 days', 'weekday 1')"
#define FLEET_DAY(R)                                                       \
	" device_id = " R ".device_id AND day = " R ".received_at / 86400" \
	" AND kind = COALESCE(" R ".anomaly_kind, 0)"
#define FLEET_ADD(R, WEEK, DAY)                                                      \
	" INSERT INTO fleet_weeks (week, uploads, bytes) VALUES (" WEEK ", 1,"       \
	" COALESCE(" R ".blob_bytes, 0))"                                            \
	" ON CONFLICT DO UPDATE SET uploads = uploads + 1,"                          \
	" bytes = bytes + excluded.bytes;"                                           \
	" INSERT INTO fleet_device_days (device_id, day, kind, uploads) VALUES (" R  \
	".device_id, " R ".received_at / 86400, COALESCE(" R ".anomaly_kind, 0), 1)" \
	" ON CONFLICT DO UPDATE SET uploads = uploads + 1;"                          \
	" UPDATE fleet_devices SET uploads = uploads + 1, last_upload_at ="          \
	" max(COALESCE(last_upload_at, " R ".received_at), " R ".received_at)"       \
	" WHERE device_id = " R ".device_id;"
#define FLEET_SUB(R, WEEK, DAY)                                                     \
	" UPDATE fleet_weeks SET uploads = uploads - 1,"                            \
	" bytes = bytes - COALESCE(" R ".blob_bytes, 0) WHERE week =" WEEK ";"      \
	" DELETE FROM fleet_weeks WHERE week =" WEEK " AND uploads <= 0;"           \
	" UPDATE fleet_device_days SET uploads = uploads - 1 WHERE" DAY ";"         \
	" DELETE FROM fleet_device_days WHERE" DAY " AND uploads <= 0;"             \
	" UPDATE fleet_devices SET uploads = uploads - 1, last_upload_at = (SELECT" \
	" max(u.received_at) FROM uploads u WHERE u.device_id = " R ".device_id)"   \
	" WHERE device_id = " R ".device_id;"
/* The same, spelled for clang-format: no call inside a string. */
#define FLEET_NEW_WEEK FLEET_WEEK("NEW")
#define FLEET_OLD_WEEK FLEET_WEEK("OLD")
#define FLEET_NEW_DAY  FLEET_DAY("NEW")
#define FLEET_OLD_DAY  FLEET_DAY("OLD")
#define FLEET_ADD_NEW  FLEET_ADD("NEW", FLEET_NEW_WEEK, FLEET_NEW_DAY)
#define FLEET_SUB_OLD  FLEET_SUB("OLD", FLEET_OLD_WEEK, FLEET_OLD_DAY)
#define FLEET_U_WEEK   FLEET_WEEK("u")
#define FLEET_DEVICE_ROW                                                               \
	" INSERT INTO fleet_devices (device_id, enrolled_at, uploads, last_upload_at)" \
	" SELECT NEW.device_id, NEW.enrolled_at, count(*), max(received_at)"           \
	" FROM uploads WHERE device_id = NEW.device_id;"

static const char *const migrations[] = {
	/* 1: devices, uploads, the decode queue, quarantine, admin accounts */
	"CREATE TABLE devices ("
	" device_id TEXT PRIMARY KEY,"
	" token_hash BLOB NOT NULL UNIQUE,"
	" client_device_id TEXT, model TEXT, os_build TEXT, arch TEXT,"
	" enrolled_at INTEGER NOT NULL);"
	"CREATE TABLE uploads ("
	" trace_id TEXT PRIMARY KEY,"
	" device_id TEXT NOT NULL REFERENCES devices(device_id),"
	" upload_id BLOB NOT NULL,"
	" received_at INTEGER NOT NULL,"
	" app_id TEXT, app_version TEXT, app_build_id BLOB,"
	" model TEXT, os_build TEXT, campaign_id TEXT,"
	" anomaly_kind INTEGER, severity INTEGER, consent INTEGER,"
	" payload_kind INTEGER, compression INTEGER, payload_size INTEGER,"
	" captured_realtime_ns INTEGER,"
	" blob_sha256 TEXT, blob_bytes INTEGER, summary BLOB,"
	" state TEXT NOT NULL CHECK (state IN ('pending_decode','decoded','quarantined')),"
	" UNIQUE (device_id, upload_id));"
	"CREATE TABLE decode_queue ("
	" trace_id TEXT PRIMARY KEY REFERENCES uploads(trace_id),"
	" enqueued_at INTEGER NOT NULL);"
	"CREATE TABLE quarantine ("
	" trace_id TEXT PRIMARY KEY REFERENCES uploads(trace_id),"
	" reason TEXT NOT NULL,"
	" quarantined_at INTEGER NOT NULL);"
	"CREATE TABLE admins ("
	" name TEXT PRIMARY KEY,"
	" pbkdf2_iterations INTEGER NOT NULL, salt BLOB NOT NULL, hash BLOB NOT NULL,"
	" created_at INTEGER NOT NULL);"
	"CREATE INDEX uploads_received ON uploads(received_at);",
	/* 2: the decoded-trace index written by decode.c */
	"CREATE TABLE traces ("
	" trace_id TEXT PRIMARY KEY REFERENCES uploads(trace_id),"
	" app_id TEXT, app_version TEXT, model TEXT, os_build TEXT,"
	" anomaly_kind INTEGER, severity INTEGER,"
	" captured_at_ns INTEGER, received_at INTEGER NOT NULL,"
	" anomaly_name TEXT, duration_ns INTEGER, nmethods INTEGER, dropped INTEGER,"
	" anomaly_signature TEXT, decoded_at INTEGER NOT NULL);"
	"CREATE TABLE trace_methods ("
	" trace_id TEXT NOT NULL REFERENCES traces(trace_id) ON DELETE CASCADE,"
	" method TEXT NOT NULL, calls INTEGER NOT NULL,"
	" self_ns INTEGER NOT NULL, incl_ns INTEGER NOT NULL,"
	" self_rank INTEGER,"
	" PRIMARY KEY (trace_id, method));"
	"CREATE TABLE trace_chains ("
	" trace_id TEXT NOT NULL REFERENCES traces(trace_id) ON DELETE CASCADE,"
	" kind TEXT NOT NULL CHECK (kind IN ('anomaly','top')),"
	" rank INTEGER NOT NULL, signature TEXT NOT NULL, chain TEXT NOT NULL,"
	" depth INTEGER NOT NULL, self_ns INTEGER, incl_ns INTEGER,"
	" PRIMARY KEY (trace_id, kind, rank));"
	"CREATE INDEX traces_app ON traces(app_id, app_version);"
	"CREATE INDEX traces_received ON traces(received_at);"
	"CREATE INDEX traces_signature ON traces(anomaly_signature);"
	"CREATE INDEX trace_methods_method ON trace_methods(method);"
	"CREATE INDEX trace_chains_signature ON trace_chains(signature);",
	/* 3: anomalies devices did not upload, and why (POST /v1/skips) */
	"CREATE TABLE skips ("
	" device_id TEXT NOT NULL REFERENCES devices(device_id),"
	" report_id BLOB NOT NULL,"
	" received_at INTEGER NOT NULL,"
	" app_id TEXT, app_version TEXT,"
	" anomaly_kind INTEGER, severity INTEGER,"
	" reason TEXT NOT NULL,"
	" captured_realtime_ns INTEGER,"
	" PRIMARY KEY (device_id, report_id));"
	"CREATE INDEX skips_received ON skips(received_at);",
	/* 4: web UI: sessions, saved method alerts, campaigns (web*.c, campaign.c) */
	"CREATE TABLE web_sessions ("
	" id_hash BLOB PRIMARY KEY,"
	" admin TEXT NOT NULL, csrf TEXT NOT NULL,"
	" created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);"
	"CREATE TABLE method_alerts ("
	" method TEXT PRIMARY KEY,"
	" p95_threshold_ns INTEGER NOT NULL CHECK (p95_threshold_ns > 0),"
	" created_at INTEGER NOT NULL);"
	"CREATE TABLE campaigns ("
	" id TEXT PRIMARY KEY,"
	" spec BLOB NOT NULL,"
	" created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
	" ended_at INTEGER);"
	"CREATE TABLE policy_versions ("
	" version INTEGER PRIMARY KEY,"
	" published_at INTEGER NOT NULL, reason TEXT NOT NULL);",
	/* 5 (server ops): each trace's signature (its chain at the anomaly, else
	 * its top chain) as a column, and per-signature counts kept current by
	 * triggers on traces, so /api/v1/signatures reads an index instead of
	 * grouping every trace.  Backfilled from the rows of migration 2. */
	"ALTER TABLE traces ADD COLUMN signature TEXT;"
	"UPDATE traces SET signature = COALESCE(anomaly_signature, (SELECT c.signature"
	" FROM trace_chains c WHERE c.trace_id = traces.trace_id AND c.kind = 'top'"
	" AND c.rank = 1));"
	"CREATE INDEX traces_sig ON traces(signature);"
	"CREATE TABLE signatures ("
	" signature TEXT PRIMARY KEY, chain TEXT, traces INTEGER NOT NULL);"
	"CREATE TABLE signature_counts ("
	" signature TEXT NOT NULL, week INTEGER NOT NULL, app_version TEXT NOT NULL,"
	" traces INTEGER NOT NULL, PRIMARY KEY (signature, week, app_version)) WITHOUT ROWID;"
	"INSERT INTO signature_counts (signature, week, app_version, traces)"
	" SELECT signature, received_at / 604800, COALESCE(app_version, ''), count(*)"
	" FROM traces WHERE signature IS NOT NULL GROUP BY 1, 2, 3;"
	"INSERT INTO signatures (signature, chain, traces)"
	" SELECT s.signature, (SELECT x.chain FROM trace_chains x WHERE x.signature ="
	" s.signature LIMIT 1), sum(s.traces) FROM signature_counts s GROUP BY s.signature;"
	"CREATE INDEX signatures_traces ON signatures(traces DESC, signature);"
	/* The method page's count and percentiles walk these, never sort. */
	"DROP INDEX trace_methods_method;"
	"CREATE INDEX trace_methods_self ON trace_methods(method, self_ns);"
	"CREATE INDEX trace_methods_incl ON trace_methods(method, incl_ns);"
	"CREATE TRIGGER traces_sig_ins AFTER INSERT ON traces WHEN NEW.signature IS NOT NULL"
	" BEGIN" SIG_ADD("NEW") "END;"
				"CREATE TRIGGER traces_sig_del AFTER DELETE ON traces WHEN "
				"OLD.signature IS NOT NULL"
				" BEGIN" SIG_SUB(
					"OLD") "END;"
					       "CREATE TRIGGER traces_sig_upd_old AFTER UPDATE OF "
					       "signature ON traces"
					       " WHEN OLD.signature IS NOT NULL AND OLD.signature "
					       "IS NOT NEW.signature"
					       " BEGIN" SIG_SUB(
						       "OLD") "END;"
							      "CREATE TRIGGER traces_sig_upd_new "
							      "AFTER UPDATE OF signature ON traces"
							      " WHEN NEW.signature IS NOT NULL AND "
							      "OLD.signature IS NOT NEW.signature"
							      " BEGIN" SIG_ADD("NEW") "END;",
	/* 6: methods a decoded capture left as "module+0xoffset", by module
	 * build-id: the traces to decode again when that module's debug file
	 * reaches the symbol store. */
	"CREATE TABLE trace_unresolved ("
	" build_id TEXT NOT NULL,"
	" trace_id TEXT NOT NULL REFERENCES traces(trace_id) ON DELETE CASCADE,"
	" PRIMARY KEY (build_id, trace_id)) WITHOUT ROWID;"
	"CREATE INDEX trace_unresolved_trace ON trace_unresolved(trace_id);",
	/* 7 (agg16): per-trace call-path aggregates written at decode (agg.c),
	 * and their sums per (app, version, model, kind, day) bucket kept by
	 * triggers, for the aggregate and differential flame graphs. */
	"CREATE TABLE agg_nodes ("
	" node INTEGER PRIMARY KEY, app_id TEXT NOT NULL, parent INTEGER NOT NULL,"
	" method TEXT NOT NULL, depth INTEGER NOT NULL,"
	" UNIQUE (app_id, parent, method));"
	"CREATE TABLE agg_buckets ("
	" bucket INTEGER PRIMARY KEY, app_id TEXT NOT NULL, app_version TEXT NOT NULL,"
	" model TEXT NOT NULL, anomaly_kind INTEGER NOT NULL, day INTEGER NOT NULL,"
	" UNIQUE (app_id, app_version, model, anomaly_kind, day));"
	"CREATE TABLE trace_agg ("
	" trace_id TEXT PRIMARY KEY REFERENCES traces(trace_id) ON DELETE CASCADE,"
	" bucket INTEGER NOT NULL, nodes INTEGER NOT NULL, folded INTEGER NOT NULL,"
	" total_ns INTEGER NOT NULL);"
	"CREATE TABLE trace_paths ("
	" trace_id TEXT NOT NULL REFERENCES traces(trace_id) ON DELETE CASCADE,"
	" node INTEGER NOT NULL, bucket INTEGER NOT NULL, calls INTEGER NOT NULL,"
	" self_ns INTEGER NOT NULL, incl_ns INTEGER NOT NULL,"
	" PRIMARY KEY (trace_id, node)) WITHOUT ROWID;"
	"CREATE TABLE agg_sums ("
	" bucket INTEGER NOT NULL, node INTEGER NOT NULL, traces INTEGER NOT NULL,"
	" calls INTEGER NOT NULL, self_ns INTEGER NOT NULL, incl_ns INTEGER NOT NULL,"
	" PRIMARY KEY (bucket, node)) WITHOUT ROWID;"
	"CREATE TRIGGER trace_paths_ins AFTER INSERT ON trace_paths BEGIN"
	" INSERT INTO agg_sums (bucket, node, traces, calls, self_ns, incl_ns) VALUES"
	" (NEW.bucket, NEW.node, 1, NEW.calls, NEW.self_ns, NEW.incl_ns)"
	" ON CONFLICT DO UPDATE SET traces = traces + 1, calls = calls + excluded.calls,"
	" self_ns = self_ns + excluded.self_ns, incl_ns = incl_ns + excluded.incl_ns; END;"
	"CREATE TRIGGER trace_paths_del AFTER DELETE ON trace_paths BEGIN"
	" UPDATE agg_sums SET traces = traces - 1, calls = calls - OLD.calls,"
	" self_ns = self_ns - OLD.self_ns, incl_ns = incl_ns - OLD.incl_ns"
	" WHERE bucket = OLD.bucket AND node = OLD.node;"
	" DELETE FROM agg_sums WHERE bucket = OLD.bucket AND node = OLD.node AND traces <= 0;"
	" END;",
	/* 8 (issue 16, regressions): the automatic comparisons of each
	 * version with its predecessor, the alerts raised once per (app, A, B,
	 * method), and the durable state of their webhook deliveries. */
	"CREATE TABLE regress_runs ("
	" app_id TEXT NOT NULL, version_a TEXT NOT NULL, version_b TEXT NOT NULL,"
	" traces_a INTEGER NOT NULL, traces_b INTEGER NOT NULL, computed_at INTEGER NOT NULL,"
	" top_method TEXT, top_ratio REAL, top_delta REAL, top_q REAL,"
	" alerted INTEGER NOT NULL, result TEXT NOT NULL,"
	" PRIMARY KEY (app_id, version_a, version_b));"
	"CREATE TABLE regress_alerts ("
	" app_id TEXT NOT NULL, version_a TEXT NOT NULL, version_b TEXT NOT NULL,"
	" method TEXT NOT NULL, created_at INTEGER NOT NULL,"
	" PRIMARY KEY (app_id, version_a, version_b, method));"
	"CREATE TABLE webhook_deliveries ("
	" id INTEGER PRIMARY KEY, url TEXT NOT NULL, event TEXT NOT NULL, body TEXT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),"
	" attempts INTEGER NOT NULL, last_status INTEGER, last_error TEXT,"
	" next_try_ms INTEGER NOT NULL, created_at INTEGER NOT NULL, delivered_at INTEGER);"
	"CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, next_try_ms);",
	/* 9 (search): each trace's issue — its anomaly signature folded over
	 * leading "(unknown caller)" frames (issue.h) — and device, set by
	 * decode.c and backfilled here; the issues index covers the impact
	 * ranking (traces × severity × devices per week range); the indexes of
	 * the worst-traces sorts (their expressions are the ORDER BY of
	 * search.c, rowid the tie-break). */
	"ALTER TABLE traces ADD COLUMN issue TEXT;"
	"ALTER TABLE traces ADD COLUMN device_id TEXT;"
	"UPDATE traces SET issue = (SELECT rvs_issue(c.chain, c.signature) FROM trace_chains c"
	" WHERE c.trace_id = traces.trace_id AND c.kind = 'anomaly' AND c.rank = 1),"
	" device_id = (SELECT u.device_id FROM uploads u WHERE u.trace_id = traces.trace_id);"
	"CREATE INDEX traces_issue ON traces(issue, received_at, device_id, severity);"
	"CREATE INDEX traces_by_severity ON traces(ifnull(severity, -1));"
	"CREATE INDEX traces_by_duration ON traces(ifnull(duration_ns, -1));"
	"CREATE INDEX traces_by_captured ON traces(ifnull(captured_at_ns, -1));",
	/* 10 (roles): each account's role (existing accounts stay admins)
	 * and whether it is disabled; the append-only audit log; personal
	 * API tokens (only their SHA-256). */
	"ALTER TABLE admins ADD COLUMN role TEXT NOT NULL DEFAULT 'admin'"
	" CHECK (role IN ('viewer', 'author', 'admin'));"
	"ALTER TABLE admins ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0;"
	"CREATE TABLE audit_log ("
	" id INTEGER PRIMARY KEY, at INTEGER NOT NULL, actor TEXT NOT NULL,"
	" action TEXT NOT NULL, target TEXT NOT NULL, detail TEXT NOT NULL);"
	"CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log"
	" BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;"
	"CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log"
	" BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;"
	"CREATE TABLE api_tokens ("
	" id TEXT PRIMARY KEY, hash BLOB NOT NULL UNIQUE, owner TEXT NOT NULL,"
	" name TEXT NOT NULL, created_at INTEGER NOT NULL, last_used INTEGER,"
	" revoked_at INTEGER);",
	/* 11 (fleet counts): the fleet page's counts kept by triggers (FLEET_ADD,
	 * FLEET_SUB) instead of grouping every upload on each request: per
	 * week, per device (all uploads, the latest, one row per device so
	 * that devices without uploads are listed too) and per (device, UTC
	 * day, kind) for the 7-day quota columns; uploads_fleet covers the
	 * partial day of those and the device's latest upload after a
	 * delete (and the ingest's quota count).  Backfilled here. */
	"CREATE INDEX uploads_fleet ON uploads(device_id, received_at, anomaly_kind);"
	"CREATE TABLE fleet_weeks ("
	" week TEXT PRIMARY KEY, uploads INTEGER NOT NULL, bytes INTEGER NOT NULL) WITHOUT ROWID;"
	"CREATE TABLE fleet_device_days ("
	" device_id TEXT NOT NULL, day INTEGER NOT NULL, kind INTEGER NOT NULL,"
	" uploads INTEGER NOT NULL, PRIMARY KEY (device_id, day, kind)) WITHOUT ROWID;"
	"CREATE TABLE fleet_devices ("
	" device_id TEXT PRIMARY KEY, enrolled_at INTEGER NOT NULL,"
	" uploads INTEGER NOT NULL, last_upload_at INTEGER);"
	"CREATE INDEX fleet_devices_order ON fleet_devices(last_upload_at, enrolled_at);"
	"INSERT INTO fleet_weeks (week, uploads, bytes) SELECT" FLEET_U_WEEK ", count(*),"
	" COALESCE(sum(u.blob_bytes), 0) FROM uploads u GROUP BY 1;"
	"INSERT INTO fleet_device_days (device_id, day, kind, uploads)"
	" SELECT device_id, received_at / 86400, COALESCE(anomaly_kind, 0), count(*)"
	" FROM uploads GROUP BY 1, 2, 3;"
	"INSERT INTO fleet_devices (device_id, enrolled_at, uploads, last_upload_at)"
	" SELECT d.device_id, d.enrolled_at, count(u.trace_id), max(u.received_at)"
	" FROM devices d LEFT JOIN uploads u ON u.device_id = d.device_id GROUP BY d.device_id;"
	"CREATE TRIGGER uploads_fleet_ins AFTER INSERT ON uploads BEGIN" FLEET_ADD_NEW " END;"
	"CREATE TRIGGER uploads_fleet_del AFTER DELETE ON uploads BEGIN" FLEET_SUB_OLD " END;"
	"CREATE TRIGGER uploads_fleet_upd AFTER UPDATE OF device_id, received_at, anomaly_kind,"
	" blob_bytes ON uploads BEGIN" FLEET_SUB_OLD FLEET_ADD_NEW " END;"
	"CREATE TRIGGER devices_fleet_ins AFTER INSERT ON devices BEGIN" FLEET_DEVICE_ROW " END;"
	"CREATE TRIGGER devices_fleet_upd AFTER UPDATE OF device_id, enrolled_at ON devices"
	" BEGIN DELETE FROM fleet_devices WHERE device_id = OLD.device_id;" FLEET_DEVICE_ROW " END;"
	"CREATE TRIGGER devices_fleet_del AFTER DELETE ON devices"
	" BEGIN DELETE FROM fleet_devices WHERE device_id = OLD.device_id; END;",
	/* 12 (index budget, audit filters): what an upload's index budget cut
	 * or left out (pipeline/index_cap.h), NULL when nothing; the audit
	 * log's pages by actor and by action (API.md GET /api/v1/audit). */
	"ALTER TABLE traces ADD COLUMN index_cut TEXT;"
	"CREATE INDEX audit_log_actor ON audit_log(actor, id);"
	"CREATE INDEX audit_log_action ON audit_log(action, id);",
	/* 13 (alert rules on trends, model/alerts.h): each rule's spec (JSON
	 * the model validated) and the state its evaluations keep; its last
	 * delivery is a webhook_deliveries row. */
	"CREATE TABLE alert_rules ("
	" id INTEGER PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL,"
	" created_at INTEGER NOT NULL, created_by TEXT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN ('ok', 'firing')), since INTEGER, value REAL,"
	" evaluated_at INTEGER, last_delivery_id INTEGER);",
	/* 14 (selection weights): how the device's policy chose each upload
	 * (rearview.Selection: kind 0 = unknown, an older device) and its
	 * Horvitz–Thompson weight, 1 when unknown; weight_exact 0 when it is
	 * an estimate (quota selection censors) or unknown.  API.md
	 * "Weights". */
	"ALTER TABLE uploads ADD COLUMN sel_kind INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE uploads ADD COLUMN sel_p REAL;"
	"ALTER TABLE uploads ADD COLUMN sel_seen INTEGER;"
	"ALTER TABLE uploads ADD COLUMN sel_taken INTEGER;"
	"ALTER TABLE uploads ADD COLUMN weight REAL NOT NULL DEFAULT 1;"
	"ALTER TABLE uploads ADD COLUMN weight_exact INTEGER NOT NULL DEFAULT 0;",
	/* 15 (issues by app): an issue is an (app, chain) pair, and its
	 * weekly counts and signatures are read per pair: the issues index
	 * gains app_id after issue, so each of those reads is a range of the
	 * index instead of every app's traces of the chain checked row by
	 * row, and the ranking walks the index in its group order. */
	"DROP INDEX traces_issue;"
	"CREATE INDEX traces_issue"
	" ON traces(issue, app_id, received_at, device_id, severity);",
	/* 16 (jank per app, traced or not): each device's frames and late
	 * frames per app, version and UTC day (POST /v1/jank), the day's
	 * totals replaced by each report; read per window of days. */
	"CREATE TABLE jank_counts ("
	" device_id TEXT NOT NULL REFERENCES devices(device_id),"
	" app_id TEXT NOT NULL, app_version TEXT NOT NULL, day INTEGER NOT NULL,"
	" frames INTEGER NOT NULL CHECK (frames >= 0),"
	" late INTEGER NOT NULL CHECK (late >= 0 AND late <= frames),"
	" received_at INTEGER NOT NULL,"
	" PRIMARY KEY (device_id, app_id, app_version, day));"
	"CREATE INDEX jank_counts_day ON jank_counts(day, app_id);",
	/* 17 (the per-day rollup): agg_sums summed per (node, UTC day) over
	 * every version, model and kind, so the rest of a range around a
	 * heatmap cell is a few rows a node and day for its whole days
	 * (store_sqlite_agg.c), not every per-trace path row.  Kept by
	 * trace_paths' triggers as agg_sums is; filled from agg_sums. */
	"CREATE TABLE agg_day_sums ("
	" node INTEGER NOT NULL, day INTEGER NOT NULL, traces INTEGER NOT NULL,"
	" calls INTEGER NOT NULL, self_ns INTEGER NOT NULL, incl_ns INTEGER NOT NULL,"
	" PRIMARY KEY (node, day)) WITHOUT ROWID;"
	"INSERT INTO agg_day_sums SELECT s.node, b.day, sum(s.traces), sum(s.calls),"
	" sum(s.self_ns), sum(s.incl_ns) FROM agg_sums s JOIN agg_buckets b ON b.bucket = s.bucket"
	" GROUP BY s.node, b.day;"
	"CREATE TRIGGER trace_paths_day_ins AFTER INSERT ON trace_paths BEGIN"
	" INSERT INTO agg_day_sums (node, day, traces, calls, self_ns, incl_ns)"
	" SELECT NEW.node, day, 1, NEW.calls, NEW.self_ns, NEW.incl_ns FROM agg_buckets"
	" WHERE bucket = NEW.bucket"
	" ON CONFLICT DO UPDATE SET traces = traces + 1, calls = calls + excluded.calls,"
	" self_ns = self_ns + excluded.self_ns, incl_ns = incl_ns + excluded.incl_ns; END;"
	"CREATE TRIGGER trace_paths_day_del AFTER DELETE ON trace_paths BEGIN"
	" UPDATE agg_day_sums SET traces = traces - 1, calls = calls - OLD.calls,"
	" self_ns = self_ns - OLD.self_ns, incl_ns = incl_ns - OLD.incl_ns"
	" WHERE node = OLD.node AND day = (SELECT day FROM agg_buckets WHERE bucket = OLD.bucket);"
	" DELETE FROM agg_day_sums WHERE node = OLD.node AND traces <= 0"
	" AND day = (SELECT day FROM agg_buckets WHERE bucket = OLD.bucket);"
	" END;",
	/* 18 (weights read by trace): the issues list and the trend read each
	 * trace's selection weight from its upload; this index holds what they
	 * read, so each is one index probe instead of a probe and a fetch of
	 * the upload's wide row (BENCHMARKS-web.md, "Issues list"). */
	"CREATE INDEX uploads_weight ON uploads(trace_id, weight, weight_exact, sel_kind);",
	/* 19 (the fleet-wide heatmap): each trace says whether it has an
	 * aggregate (trace_agg), kept by triggers, so that the heatmap of
	 * every app reads one partial covering index in (received_at,
	 * duration_ns) order instead of each trace's row and a probe of
	 * trace_agg's key (store_sqlite_agg.c HEATMAP_FLEET_SQL). */
	"ALTER TABLE traces ADD COLUMN has_agg INTEGER;"
	"UPDATE traces SET has_agg = 1 WHERE trace_id IN (SELECT trace_id FROM trace_agg);"
	"CREATE INDEX traces_heat ON traces(received_at, duration_ns, has_agg) WHERE has_agg = 1;"
	"CREATE TRIGGER trace_agg_has_ins AFTER INSERT ON trace_agg BEGIN"
	" UPDATE traces SET has_agg = 1 WHERE trace_id = NEW.trace_id; END;"
	"CREATE TRIGGER trace_agg_has_del AFTER DELETE ON trace_agg BEGIN"
	" UPDATE traces SET has_agg = NULL WHERE trace_id = OLD.trace_id; END;",
	/* 20 (on- and off-CPU time per method): each method row's self and
	 * inclusive time on the CPU, NULL when the capture had no CPU data
	 * (older rows too, until a reindex); the rest of its time was
	 * off-CPU.  The method page sums them over the traces that have them
	 * from a partial covering index: only rows with CPU data, no fetch of
	 * the row. */
	"ALTER TABLE trace_methods ADD COLUMN cpu_self_ns INTEGER;"
	"ALTER TABLE trace_methods ADD COLUMN cpu_incl_ns INTEGER;"
	"CREATE INDEX trace_methods_cpu ON trace_methods(method, self_ns, incl_ns, cpu_self_ns,"
	" cpu_incl_ns) WHERE cpu_self_ns IS NOT NULL;",
	/* 21 (the fleet's jank page at volume): its two reads stream covering
	 * indexes in their GROUP BY's order — per (app, device) and per (app,
	 * version), the window's days picked from the index entries — instead
	 * of fetching each of the window's rows and sorting them (500 devices
	 * × 25 apps × 7 days: 290 → ~40 ms); the window's uploads per app
	 * read from their arrival index alone. */
	"CREATE INDEX jank_counts_app_dev ON jank_counts(app_id, device_id, day, frames, late);"
	"CREATE INDEX jank_counts_app_ver ON jank_counts(app_id, app_version, day, frames, late);"
	"CREATE INDEX uploads_received_app ON uploads(received_at, app_id);"
	"DROP INDEX uploads_received;",
	/* 22 (on- and off-CPU time per call path): each path row's self and
	 * inclusive time on the CPU, NULL when the capture had no CPU data
	 * (older rows too, until `reindex --all`), as trace_methods' since
	 * 20; the rollups (agg_sums, agg_day_sums) sum them with the count of
	 * traces that had them and those traces' off-CPU time (wall less
	 * on), so a set's split is exact over its traces with CPU data
	 * whichever lack it.  Old rollup rows count 0 such traces, which is
	 * what their paths hold.  The four triggers are made again to carry
	 * the new sums (an upsert of NULL-free values: a trace without CPU
	 * data adds 0 to each). */
	"ALTER TABLE trace_paths ADD COLUMN cpu_self_ns INTEGER;"
	"ALTER TABLE trace_paths ADD COLUMN cpu_incl_ns INTEGER;"
	"ALTER TABLE agg_sums ADD COLUMN cpu_traces INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE agg_sums ADD COLUMN cpu_self_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE agg_sums ADD COLUMN cpu_incl_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE agg_sums ADD COLUMN off_self_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE agg_sums ADD COLUMN off_incl_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE agg_day_sums ADD COLUMN cpu_traces INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE agg_day_sums ADD COLUMN cpu_self_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE agg_day_sums ADD COLUMN cpu_incl_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE agg_day_sums ADD COLUMN off_self_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE agg_day_sums ADD COLUMN off_incl_ns INTEGER NOT NULL DEFAULT 0;"
	"DROP TRIGGER trace_paths_ins;"
	"DROP TRIGGER trace_paths_del;"
	"DROP TRIGGER trace_paths_day_ins;"
	"DROP TRIGGER trace_paths_day_del;"
	"CREATE TRIGGER trace_paths_ins AFTER INSERT ON trace_paths BEGIN"
	" INSERT INTO agg_sums (bucket, node, traces, calls, self_ns, incl_ns, cpu_traces,"
	" cpu_self_ns, cpu_incl_ns, off_self_ns, off_incl_ns) VALUES"
	" (NEW.bucket, NEW.node, 1, NEW.calls, NEW.self_ns, NEW.incl_ns,"
	" NEW.cpu_self_ns IS NOT NULL, coalesce(NEW.cpu_self_ns, 0), coalesce(NEW.cpu_incl_ns, 0),"
	" coalesce(NEW.self_ns - NEW.cpu_self_ns, 0), coalesce(NEW.incl_ns - NEW.cpu_incl_ns, 0))"
	" ON CONFLICT DO UPDATE SET traces = traces + 1, calls = calls + excluded.calls,"
	" self_ns = self_ns + excluded.self_ns, incl_ns = incl_ns + excluded.incl_ns,"
	" cpu_traces = cpu_traces + excluded.cpu_traces,"
	" cpu_self_ns = cpu_self_ns + excluded.cpu_self_ns,"
	" cpu_incl_ns = cpu_incl_ns + excluded.cpu_incl_ns,"
	" off_self_ns = off_self_ns + excluded.off_self_ns,"
	" off_incl_ns = off_incl_ns + excluded.off_incl_ns; END;"
	"CREATE TRIGGER trace_paths_del AFTER DELETE ON trace_paths BEGIN"
	" UPDATE agg_sums SET traces = traces - 1, calls = calls - OLD.calls,"
	" self_ns = self_ns - OLD.self_ns, incl_ns = incl_ns - OLD.incl_ns,"
	" cpu_traces = cpu_traces - (OLD.cpu_self_ns IS NOT NULL),"
	" cpu_self_ns = cpu_self_ns - coalesce(OLD.cpu_self_ns, 0),"
	" cpu_incl_ns = cpu_incl_ns - coalesce(OLD.cpu_incl_ns, 0),"
	" off_self_ns = off_self_ns - coalesce(OLD.self_ns - OLD.cpu_self_ns, 0),"
	" off_incl_ns = off_incl_ns - coalesce(OLD.incl_ns - OLD.cpu_incl_ns, 0)"
	" WHERE bucket = OLD.bucket AND node = OLD.node;"
	" DELETE FROM agg_sums WHERE bucket = OLD.bucket AND node = OLD.node AND traces <= 0;"
	" END;"
	"CREATE TRIGGER trace_paths_day_ins AFTER INSERT ON trace_paths BEGIN"
	" INSERT INTO agg_day_sums (node, day, traces, calls, self_ns, incl_ns, cpu_traces,"
	" cpu_self_ns, cpu_incl_ns, off_self_ns, off_incl_ns)"
	" SELECT NEW.node, day, 1, NEW.calls, NEW.self_ns, NEW.incl_ns,"
	" NEW.cpu_self_ns IS NOT NULL, coalesce(NEW.cpu_self_ns, 0), coalesce(NEW.cpu_incl_ns, 0),"
	" coalesce(NEW.self_ns - NEW.cpu_self_ns, 0), coalesce(NEW.incl_ns - NEW.cpu_incl_ns, 0)"
	" FROM agg_buckets WHERE bucket = NEW.bucket"
	" ON CONFLICT DO UPDATE SET traces = traces + 1, calls = calls + excluded.calls,"
	" self_ns = self_ns + excluded.self_ns, incl_ns = incl_ns + excluded.incl_ns,"
	" cpu_traces = cpu_traces + excluded.cpu_traces,"
	" cpu_self_ns = cpu_self_ns + excluded.cpu_self_ns,"
	" cpu_incl_ns = cpu_incl_ns + excluded.cpu_incl_ns,"
	" off_self_ns = off_self_ns + excluded.off_self_ns,"
	" off_incl_ns = off_incl_ns + excluded.off_incl_ns; END;"
	"CREATE TRIGGER trace_paths_day_del AFTER DELETE ON trace_paths BEGIN"
	" UPDATE agg_day_sums SET traces = traces - 1, calls = calls - OLD.calls,"
	" self_ns = self_ns - OLD.self_ns, incl_ns = incl_ns - OLD.incl_ns,"
	" cpu_traces = cpu_traces - (OLD.cpu_self_ns IS NOT NULL),"
	" cpu_self_ns = cpu_self_ns - coalesce(OLD.cpu_self_ns, 0),"
	" cpu_incl_ns = cpu_incl_ns - coalesce(OLD.cpu_incl_ns, 0),"
	" off_self_ns = off_self_ns - coalesce(OLD.self_ns - OLD.cpu_self_ns, 0),"
	" off_incl_ns = off_incl_ns - coalesce(OLD.incl_ns - OLD.cpu_incl_ns, 0)"
	" WHERE node = OLD.node AND day = (SELECT day FROM agg_buckets WHERE bucket = OLD.bucket);"
	" DELETE FROM agg_day_sums WHERE node = OLD.node AND traces <= 0"
	" AND day = (SELECT day FROM agg_buckets WHERE bucket = OLD.bucket);"
	" END;",
};
#define N_MIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

static int user_version(struct rvs_store *s, int *out)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL);
	if (rc)
		return rvc_sqlite_errno(rc);
	rc = sqlite3_step(st);
	*out = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : rvc_sqlite_errno(rc);
}

static int migrate(struct rvs_store *s)
{
	int v, rc;
	char sql[64];

	if ((rc = user_version(s, &v)))
		return rc;
	if (v > N_MIGRATIONS) {
		rvs_log("error", "database is newer than this server", "version=%d", v);
		return -EPROTO;
	}
	for (; v < N_MIGRATIONS; v++) {
		if ((rc = rvs_sqlite_exec(s->db, "BEGIN IMMEDIATE")))
			return rc;
		rc = rvs_sqlite_exec(s->db, migrations[v]);
		snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v + 1);
		if (!rc)
			rc = rvs_sqlite_exec(s->db, sql);
		if (!rc)
			rc = rvs_sqlite_exec(s->db, "COMMIT");
		if (rc) {
			rvs_sqlite_exec(s->db, "ROLLBACK");
			return rc;
		}
		rvs_log("info", "migrated", "schema_version=%d", v + 1);
	}
	return 0;
}

/* Counts a commit of s->db whose caller waits for it to be durable: under mu,
 * after its COMMIT returned.  The ticket to give wal_durable(). */
static uint64_t commit_ticket(struct rvs_store *s)
{
	return (uint64_t)atomic_fetch_add(&s->committed, 1) + 1;
}

/* Returns once every commit up to ticket is on disk: 0, or -EIO when an
 * fsync of the WAL has failed (this one or an earlier one).  Called
 * without mu, so that writers go on while the WAL syncs; whoever finds no
 * fsync running starts one for every commit counted so far, the others
 * wait for it. */
static int wal_durable(struct rvs_store *s, uint64_t ticket)
{
	int rc;

	pthread_mutex_lock(&s->gmu);
	while (!s->sync_failed && s->synced < ticket) {
		uint64_t upto;

		if (s->syncing) {
			pthread_cond_wait(&s->gcv, &s->gmu);
			continue;
		}
		s->syncing = 1;
		/* Every commit counted here returned before the fsync starts,
		 * so its frames were written to the WAL before it. */
		upto = (uint64_t)atomic_load(&s->committed);
		pthread_mutex_unlock(&s->gmu);
		rc = s->wal->pMethods->xSync(s->wal, SQLITE_SYNC_NORMAL);
		pthread_mutex_lock(&s->gmu);
		s->syncing = 0;
		if (rc == SQLITE_OK && upto > s->synced)
			s->synced = upto;
		if (rc != SQLITE_OK && !s->sync_failed) {
			s->sync_failed = 1;
			rvs_log("error",
				"fsync of the WAL failed: nothing more is acknowledged until the "
				"server restarts",
				"err=\"%s\"", sqlite3_errstr(rc));
		}
		pthread_cond_broadcast(&s->gcv);
	}
	rc = s->synced >= ticket ? 0 : -EIO;
	pthread_mutex_unlock(&s->gmu);
	return rc;
}

/* Returns once every commit of s->db made so far is on disk (0 or -EIO):
 * for an answer about a row another caller committed — a duplicate — which
 * may not be synced yet.  A row visible now was committed, and counted,
 * under mu, so the count read under mu covers it. */
static int durable_now(struct rvs_store *s)
{
	uint64_t ticket;

	pthread_mutex_lock(&s->mu);
	ticket = (uint64_t)atomic_load(&s->committed);
	pthread_mutex_unlock(&s->mu);
	return wal_durable(s, ticket);
}

/* Finds db's WAL file and syncs it once under mu: its directory entry is
 * then durable too (sqlite fsyncs a new WAL's directory at its first sync),
 * so later syncs outside mu only touch the file.  0 or -EIO. */
static int wal_attach(struct rvs_store *s)
{
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = sqlite3_file_control(s->db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &s->wal);
	if (rc == SQLITE_OK && (!s->wal || !s->wal->pMethods))
		rc = SQLITE_ERROR; /* not in WAL mode (an in-memory database) */
	if (rc == SQLITE_OK)
		rc = s->wal->pMethods->xSync(s->wal, SQLITE_SYNC_NORMAL);
	pthread_mutex_unlock(&s->mu);
	if (rc != SQLITE_OK) {
		rvs_log("error", "no WAL file to sync", "err=\"%s\"", sqlite3_errstr(rc));
		return -EIO;
	}
	return 0;
}

static void store_close(struct rvs_store *s)
{
	if (!s)
		return;
	sqlite3_close(s->rdb);
	rvs_sqlite_ckpt_detach(s->db);
	sqlite3_close(s->db);
	pthread_mutex_destroy(&s->rmu);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->gmu);
	pthread_cond_destroy(&s->gcv);
	free(s->dsn);
	free(s);
}

static int store_open(const char *dsn, struct rvs_store **out)
{
	struct rvs_store *s = calloc(1, sizeof *s);
	int rc;

	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->rmu, NULL);
	pthread_mutex_init(&s->gmu, NULL);
	pthread_cond_init(&s->gcv, NULL);
	s->tail = &s->head;
	if (!(s->dsn = strdup(dsn))) {
		store_close(s);
		return -ENOMEM;
	}
	rc = sqlite3_open_v2(dsn, &s->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX |
				     SQLITE_OPEN_URI,
			     NULL);
	if (rc != SQLITE_OK) {
		rc = rvc_sqlite_errno(rc);
		store_close(s);
		return rc;
	}
	rvs_sqlite_busy(s->db, 5000);
	/* Migration 9's backfill calls rvs_issue(). */
	if ((rc = rvs_sqlite_issue_register(s->db))) {
		store_close(s);
		return rc;
	}
	/* temp_store: savepoint journals of group commits stay in memory. */
	if ((rc = rvs_sqlite_exec(s->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
					 "PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY;")) ||
	    (rc = migrate(s)) || (rc = wal_attach(s))) {
		store_close(s);
		return rc;
	}
	/* Opened after the migrations, so it never sees an older schema. */
	if (sqlite3_open_v2(dsn, &s->rdb,
			    SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_URI,
			    NULL) != SQLITE_OK) {
		store_close(s);
		return -EIO;
	}
	rvs_sqlite_busy(s->rdb, 5000);
	rvs_sqlite_ckpt_attach(s->db); /* on failure: sqlite's own checkpoints */
	*out = s;
	return 0;
}

static int schema_version(struct rvs_store *s, int *out)
{
	int rc;
	pthread_mutex_lock(&s->mu);
	rc = user_version(s, out);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static int bind_text(sqlite3_stmt *st, int i, const char *v)
{
	return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

/* A device that enrols again under the client_device_id of an enrolled
 * device (it lost its token, or got 401) takes that device's identity back:
 * the oldest such row gets the new token hash and d->device_id becomes its
 * id, so the fleet page and quotas count it once.  Otherwise a new row.
 * Durable on return (the device is handed its token). */
static int device_add(struct rvs_store *s, struct rvs_device_rec *d)
{
	sqlite3_stmt *st;
	uint64_t ticket = 0;
	int rc = SQLITE_DONE;

	d->reenrolled = 0;
	pthread_mutex_lock(&s->mu);
	if (d->client_device_id && d->client_device_id[0]) {
		rc = sqlite3_prepare_v2(
			s->db,
			"SELECT device_id, token_hash FROM devices WHERE client_device_id"
			" = ? ORDER BY enrolled_at, rowid LIMIT 1",
			-1, &st, NULL);
		if (rc == SQLITE_OK) {
			sqlite3_bind_text(st, 1, d->client_device_id, -1, SQLITE_TRANSIENT);
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW && sqlite3_column_bytes(st, 1) == 32) {
				snprintf(d->device_id, sizeof d->device_id, "%s",
					 (const char *)sqlite3_column_text(st, 0));
				memcpy(d->old_token_hash, sqlite3_column_blob(st, 1), 32);
				d->reenrolled = 1;
			}
			sqlite3_finalize(st);
		}
		if (d->reenrolled) {
			rc = sqlite3_prepare_v2(s->db,
						"UPDATE devices SET token_hash = ?2, model = ?3,"
						" os_build = ?4, arch = ?5 WHERE device_id = ?1",
						-1, &st, NULL);
			if (rc == SQLITE_OK) {
				sqlite3_bind_text(st, 1, d->device_id, -1, SQLITE_TRANSIENT);
				sqlite3_bind_blob(st, 2, d->token_hash, 32, SQLITE_TRANSIENT);
				bind_text(st, 3, d->model);
				bind_text(st, 4, d->os_build);
				bind_text(st, 5, d->arch);
				rc = sqlite3_step(st);
				sqlite3_finalize(st);
			}
			if (rc == SQLITE_DONE)
				ticket = commit_ticket(s);
			pthread_mutex_unlock(&s->mu);
			if (rc != SQLITE_DONE) {
				d->reenrolled = 0;
				return rvc_sqlite_errno(rc);
			}
			return wal_durable(s, ticket);
		}
	}
	if (rc == SQLITE_DONE || rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(
			s->db,
			"INSERT INTO devices (device_id, token_hash, client_device_id, model,"
			" os_build, arch, enrolled_at) VALUES (?,?,?,?,?,?,?)",
			-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, d->device_id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_blob(st, 2, d->token_hash, 32, SQLITE_TRANSIENT);
		bind_text(st, 3, d->client_device_id);
		bind_text(st, 4, d->model);
		bind_text(st, 5, d->os_build);
		bind_text(st, 6, d->arch);
		sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL));
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	if (rc == SQLITE_DONE)
		ticket = commit_ticket(s);
	pthread_mutex_unlock(&s->mu);
	return rc == SQLITE_DONE ? wal_durable(s, ticket) : rvc_sqlite_errno(rc);
}

static int lookup_text(struct rvs_store *s, const char *sql, const void *blob, size_t bloblen,
		       const char *text, char *out, size_t outlen)
{
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->rmu);
	rc = sqlite3_prepare_v2(s->rdb, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		int i = 1;
		if (text)
			sqlite3_bind_text(st, i++, text, -1, SQLITE_TRANSIENT);
		if (blob)
			sqlite3_bind_blob(st, i++, blob, (int)bloblen, SQLITE_TRANSIENT);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			const unsigned char *v = sqlite3_column_text(st, 0);
			snprintf(out, outlen, "%s", v ? (const char *)v : "");
			rc = 0;
		} else if (rc == SQLITE_DONE) {
			rc = -ENOENT;
		} else {
			rc = rvc_sqlite_errno(rc);
		}
		sqlite3_finalize(st);
	} else {
		rc = rvc_sqlite_errno(rc);
	}
	pthread_mutex_unlock(&s->rmu);
	return rc;
}

static int device_by_token(struct rvs_store *s, const uint8_t hash[32], char device_id[40])
{
	return lookup_text(s, "SELECT device_id FROM devices WHERE token_hash = ?", hash, 32, NULL,
			   device_id, 40);
}

/* Found, the row is durable before the caller answers "duplicate". */
static int upload_find(struct rvs_store *s, const char *device_id, const uint8_t upload_id[16],
		       char trace_id[40])
{
	int rc =
		lookup_text(s, "SELECT trace_id FROM uploads WHERE device_id = ? AND upload_id = ?",
			    upload_id, 16, device_id, trace_id, 40);
	return rc ? rc : durable_now(s);
}

/* Whether u would take its device past its weekly quota, counted in the
 * transaction that inserts it (so two uploads of one device at quota - 1
 * cannot both pass); with the counting statement of commit_uploads.
 * 0 within quota (or none applies), -EDQUOT, or -errno. */
static int quota_check(sqlite3_stmt *cnt, const struct rvs_upload_rec *u)
{
	int rc;

	if (u->quota_since <= 0 || u->anomaly_kind == REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL)
		return 0;
	sqlite3_bind_text(cnt, 1, u->device_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(cnt, 2, u->quota_since);
	rc = sqlite3_step(cnt);
	if (rc == SQLITE_ROW)
		rc = (uint64_t)sqlite3_column_int64(cnt, 0) >= u->weekly_quota ? -EDQUOT : 0;
	else
		rc = rvc_sqlite_errno(rc) ? rvc_sqlite_errno(rc) : -EIO;
	sqlite3_reset(cnt);
	return rc;
}

/* The uploads and decode_queue rows of u with the prepared statements of
 * commit_uploads; SQLITE_DONE on success. */
static int insert_upload(sqlite3_stmt *st, sqlite3_stmt *q, const struct rvs_upload_rec *u,
			 sqlite3_int64 t)
{
	int rc;

	sqlite3_bind_text(st, 1, u->trace_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, u->device_id, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, u->upload_id, 16, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, t);
	bind_text(st, 5, u->app_id);
	bind_text(st, 6, u->app_version);
	if (u->app_build_id_len)
		sqlite3_bind_blob(st, 7, u->app_build_id, (int)u->app_build_id_len, SQLITE_STATIC);
	bind_text(st, 8, u->model);
	bind_text(st, 9, u->os_build);
	bind_text(st, 10, u->campaign_id);
	sqlite3_bind_int(st, 11, u->anomaly_kind);
	sqlite3_bind_int(st, 12, u->severity);
	sqlite3_bind_int(st, 13, u->consent);
	sqlite3_bind_int(st, 14, u->payload_kind);
	sqlite3_bind_int(st, 15, u->compression);
	sqlite3_bind_int64(st, 16, (sqlite3_int64)u->payload_size);
	sqlite3_bind_int64(st, 17, (sqlite3_int64)u->captured_realtime_ns);
	bind_text(st, 18, u->blob_sha256);
	sqlite3_bind_int64(st, 19, (sqlite3_int64)u->blob_bytes);
	if (u->summary_len)
		sqlite3_bind_blob(st, 20, u->summary, (int)u->summary_len, SQLITE_STATIC);
	sqlite3_bind_int(st, 21, u->sel_kind);
	if (u->sel_kind) {
		sqlite3_bind_double(st, 22, u->sel_p);
		sqlite3_bind_int64(st, 23, u->sel_seen);
		sqlite3_bind_int64(st, 24, u->sel_taken);
	}
	sqlite3_bind_double(st, 25, u->weight > 0 ? u->weight : 1.0);
	sqlite3_bind_int(st, 26, u->weight_exact);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return rc;
	sqlite3_bind_text(q, 1, u->trace_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, t);
	rc = sqlite3_step(q);
	sqlite3_reset(q);
	return rc;
}

/* One transaction for the uploads of the list at p, a savepoint each; sets
 * every p->rc (0, -EEXIST for a duplicate, -EDQUOT over quota, -errno) and,
 * when it committed, *ticket for wal_durable (else leaves it 0). */
static void commit_uploads(struct rvs_store *s, struct pending_upload *p, uint64_t *ticket)
{
	sqlite3_stmt *st = NULL, *q = NULL, *cnt = NULL;
	sqlite3_int64 t = (sqlite3_int64)time(NULL);
	int rc, began;

	pthread_mutex_lock(&s->mu);
	rc = rvs_sqlite_exec(s->db, "BEGIN IMMEDIATE");
	began = rc == 0;
	if (!rc)
		rc = rvc_sqlite_errno(sqlite3_prepare_v2(
			s->db,
			"INSERT INTO uploads (trace_id, device_id, upload_id, received_at, app_id,"
			" app_version, app_build_id, model, os_build, campaign_id, anomaly_kind,"
			" severity, consent, payload_kind, compression, payload_size,"
			" captured_realtime_ns, blob_sha256, blob_bytes, summary, state, sel_kind,"
			" sel_p, sel_seen, sel_taken, weight, weight_exact)"
			" VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,'pending_decode',"
			"?21,?22,?23,?24,?25,?26)",
			-1, &st, NULL));
	if (!rc)
		rc = rvc_sqlite_errno(sqlite3_prepare_v2(
			s->db, "INSERT INTO decode_queue (trace_id, enqueued_at) VALUES (?,?)", -1,
			&q, NULL));
	if (!rc) {
		char sql[160];
		snprintf(sql, sizeof sql,
			 "SELECT count(*) FROM uploads WHERE device_id = ? AND received_at >= ?"
			 " AND COALESCE(anomaly_kind, 0) != %d",
			 (int)REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL);
		rc = rvc_sqlite_errno(sqlite3_prepare_v2(s->db, sql, -1, &cnt, NULL));
	}
	for (struct pending_upload *i = p; i; i = i->next) {
		if ((i->rc = rc) || (i->rc = quota_check(cnt, i->u)))
			continue;
		if ((i->rc = rvs_sqlite_exec(s->db, "SAVEPOINT up")))
			continue;
		int r = insert_upload(st, q, i->u, t);
		if (r != SQLITE_DONE) {
			i->rc = rvc_sqlite_errno(r) ? rvc_sqlite_errno(r) : -EIO;
			rvs_sqlite_exec(s->db, "ROLLBACK TO up");
		}
		rvs_sqlite_exec(s->db, "RELEASE up");
	}
	sqlite3_finalize(st);
	sqlite3_finalize(q);
	sqlite3_finalize(cnt);
	if (began && (rc || (rc = rvs_sqlite_exec(s->db, "COMMIT")))) {
		for (struct pending_upload *i = p; i; i = i->next)
			if (!i->rc)
				i->rc = rc;
		rvs_sqlite_exec(s->db, "ROLLBACK");
	} else if (began) {
		*ticket = commit_ticket(s);
	}
	pthread_mutex_unlock(&s->mu);
}

static int upload_add(struct rvs_store *s, const struct rvs_upload_rec *u)
{
	struct pending_upload me = {u, 0, 0, NULL};

	pthread_mutex_lock(&s->gmu);
	*s->tail = &me;
	s->tail = &me.next;
	while (!me.done) {
		struct pending_upload *group, *next;
		uint64_t ticket = 0;
		int rc;

		/* Another group is committing and syncing (this upload's, maybe). */
		if (s->committing) {
			pthread_cond_wait(&s->gcv, &s->gmu);
			continue;
		}
		/* Commit everything waiting, this upload included. */
		group = s->head;
		s->head = NULL;
		s->tail = &s->head;
		s->committing = 1;
		pthread_mutex_unlock(&s->gmu);
		commit_uploads(s, group, &ticket);
		/* The sync runs without mu (other writers go on) but still
		 * committing: uploads arriving meanwhile gather into the next
		 * group, one transaction (measured: pipelining the next commit
		 * with this sync made many small transactions, no faster). */
		rc = ticket ? wal_durable(s, ticket) : 0;
		pthread_mutex_lock(&s->gmu);
		for (; group; group = next) {
			next = group->next; /* read before done: the owner may return */
			if (!group->rc)
				group->rc = rc;
			group->done = 1;
		}
		s->committing = 0;
		pthread_cond_broadcast(&s->gcv);
	}
	pthread_mutex_unlock(&s->gmu);
	return me.rc;
}

static int decode_next_batch(struct rvs_store *s, unsigned part, unsigned nparts,
			     struct rvs_decode_item *items, size_t max)
{
	sqlite3_stmt *st;
	size_t n = 0;
	int rc;

	if (nparts < 1 || nparts > 16 || part >= nparts || max < 1 || max > INT_MAX)
		return -EINVAL;
	pthread_mutex_lock(&s->rmu);
	rc = sqlite3_prepare_v2(s->rdb,
				/* A new rowid is always above every present one, so rowid
				 * order is arrival order, read off the table's own b-tree
				 * (ordering by enqueued_at scanned and sorted the whole
				 * queue for every decode).  CROSS JOIN keeps q outside. */
				"SELECT q.trace_id, u.blob_sha256 FROM decode_queue q"
				" CROSS JOIN uploads u USING (trace_id) WHERE q.rowid % ?1 = ?2"
				" ORDER BY q.rowid LIMIT ?3",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int(st, 1, (int)nparts);
		sqlite3_bind_int(st, 2, (int)part);
		sqlite3_bind_int(st, 3, (int)max);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			const unsigned char *a = sqlite3_column_text(st, 0);
			const unsigned char *b = sqlite3_column_text(st, 1);
			memset(&items[n], 0, sizeof items[n]);
			snprintf(items[n].trace_id, sizeof items[n].trace_id, "%s",
				 a ? (const char *)a : "");
			snprintf(items[n].blob_sha256, sizeof items[n].blob_sha256, "%s",
				 b ? (const char *)b : "");
			if (items[n++].blob_sha256[0])
				break;
		}
		rc = rc == SQLITE_DONE || rc == SQLITE_ROW ? (int)n : rvc_sqlite_errno(rc);
		sqlite3_finalize(st);
	} else {
		rc = rvc_sqlite_errno(rc);
	}
	pthread_mutex_unlock(&s->rmu);
	return rc;
}

/* Takes one decoded or quarantined item off the queue with the prepared
 * statements of decode_finish; SQLITE_DONE also when it was not queued.
 * An item whose decode met a transient error (rc -EAGAIN) stays queued. */
static int finish_one(sqlite3_stmt *del, sqlite3_stmt *upd, sqlite3_stmt *quar,
		      const struct rvs_decode_item *it)
{
	int rc;

	if (it->rc == -EAGAIN)
		return SQLITE_DONE;
	sqlite3_bind_text(del, 1, it->trace_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(del);
	sqlite3_reset(del);
	if (rc != SQLITE_DONE || sqlite3_changes(sqlite3_db_handle(del)) == 0)
		return rc;
	sqlite3_bind_text(upd, 1, it->rc ? "quarantined" : "decoded", -1, SQLITE_STATIC);
	sqlite3_bind_text(upd, 2, it->trace_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(upd);
	sqlite3_reset(upd);
	if (rc != SQLITE_DONE || !it->rc)
		return rc;
	sqlite3_bind_text(quar, 1, it->trace_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(quar, 2, it->reason[0] ? it->reason : "unspecified", -1, SQLITE_STATIC);
	sqlite3_bind_int64(quar, 3, (sqlite3_int64)time(NULL));
	rc = sqlite3_step(quar);
	sqlite3_reset(quar);
	return rc;
}

static int decode_finish(struct rvs_store *s, const struct rvs_decode_item *items, size_t n)
{
	sqlite3_stmt *del = NULL, *upd = NULL, *quar = NULL;
	int rc;

	pthread_mutex_lock(&s->mu);
	if ((rc = rvs_sqlite_exec(s->db, "BEGIN IMMEDIATE")))
		goto unlock;
	rc = sqlite3_prepare_v2(s->db, "DELETE FROM decode_queue WHERE trace_id = ?", -1, &del,
				NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(s->db, "UPDATE uploads SET state = ? WHERE trace_id = ?",
					-1, &upd, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(s->db,
					"INSERT INTO quarantine (trace_id, reason, quarantined_at)"
					" VALUES (?,?,?)",
					-1, &quar, NULL);
	for (size_t i = 0; rc == SQLITE_OK && i < n; i++)
		if ((rc = finish_one(del, upd, quar, &items[i])) == SQLITE_DONE)
			rc = SQLITE_OK;
	sqlite3_finalize(del);
	sqlite3_finalize(upd);
	sqlite3_finalize(quar);
	rc = rc == SQLITE_OK	    ? rvs_sqlite_exec(s->db, "COMMIT")
	     : rvc_sqlite_errno(rc) ? rvc_sqlite_errno(rc)
				    : -EIO;
	if (rc)
		rvs_sqlite_exec(s->db, "ROLLBACK");
unlock:
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static int uploads_charged(struct rvs_store *s, const char *device_id, int64_t since, uint64_t *out)
{
	char sql[160], buf[32];
	int rc;

	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM uploads WHERE device_id = ? AND received_at >= %lld"
		 " AND COALESCE(anomaly_kind, 0) != %d",
		 (long long)since, (int)REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL);
	rc = lookup_text(s, sql, NULL, 0, device_id, buf, sizeof buf);
	if (rc == 0)
		*out = strtoull(buf, NULL, 10);
	return rc;
}

static int queue_depth(struct rvs_store *s, uint64_t *out)
{
	char buf[32];
	int rc =
		lookup_text(s, "SELECT count(*) FROM decode_queue", NULL, 0, NULL, buf, sizeof buf);
	if (rc == 0)
		*out = strtoull(buf, NULL, 10);
	return rc;
}

static int admin_put(struct rvs_store *s, const char *name, unsigned iterations,
		     const uint8_t *salt, size_t saltlen, const uint8_t hash[32])
{
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = sqlite3_prepare_v2(
		s->db,
		"INSERT INTO admins (name, pbkdf2_iterations, salt, hash, created_at)"
		" VALUES (?1,?2,?3,?4,?5) ON CONFLICT (name) DO UPDATE SET"
		" pbkdf2_iterations = ?2, salt = ?3, hash = ?4, created_at = ?5",
		-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 2, (int)iterations);
		sqlite3_bind_blob(st, 3, salt, (int)saltlen, SQLITE_TRANSIENT);
		sqlite3_bind_blob(st, 4, hash, 32, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 5, (sqlite3_int64)time(NULL));
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->mu);
	return rvc_sqlite_errno(rc);
}

static int skip_add(struct rvs_store *s, const struct rvs_skip_rec *k)
{
	sqlite3_stmt *st;
	uint64_t ticket = 0;
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = sqlite3_prepare_v2(
		s->db,
		"INSERT INTO skips (device_id, report_id, received_at, app_id,"
		" app_version, anomaly_kind, severity, reason, captured_realtime_ns)"
		" VALUES (?,?,?,?,?,?,?,?,?)",
		-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, k->device_id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_blob(st, 2, k->report_id, 16, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
		bind_text(st, 4, k->app_id);
		bind_text(st, 5, k->app_version);
		sqlite3_bind_int(st, 6, k->anomaly_kind);
		sqlite3_bind_int(st, 7, k->severity);
		sqlite3_bind_text(st, 8, k->reason, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 9, (sqlite3_int64)k->captured_realtime_ns);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	if (rc == SQLITE_DONE)
		ticket = commit_ticket(s);
	pthread_mutex_unlock(&s->mu);
	if (rc == SQLITE_DONE)
		return wal_durable(s, ticket);
	rc = rvc_sqlite_errno(rc);
	/* A duplicate is acknowledged too: its row durable first. */
	return rc == -EEXIST && durable_now(s) ? -EIO : rc;
}

static int jank_put(struct rvs_store *s, const char *device_id, const struct rvs_jank_rec *rows,
		    size_t n)
{
	sqlite3_stmt *st = NULL;
	uint64_t ticket = 0;
	int rc;

	pthread_mutex_lock(&s->mu);
	if ((rc = rvs_sqlite_exec(s->db, "BEGIN IMMEDIATE"))) {
		pthread_mutex_unlock(&s->mu);
		return rc;
	}
	rc = sqlite3_prepare_v2(
		s->db,
		"INSERT INTO jank_counts (device_id, app_id, app_version, day, frames,"
		" late, received_at) VALUES (?,?,?,?,?,?,?)"
		" ON CONFLICT (device_id, app_id, app_version, day) DO UPDATE SET"
		" frames = excluded.frames, late = excluded.late,"
		" received_at = excluded.received_at",
		-1, &st, NULL);
	for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, device_id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, rows[i].app_id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 3, rows[i].app_version ? rows[i].app_version : "", -1,
				  SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 4, rows[i].day);
		sqlite3_bind_int64(st, 5, rows[i].frames);
		sqlite3_bind_int64(st, 6, rows[i].late);
		sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL));
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	rc = rc == SQLITE_OK ? rvs_sqlite_exec(s->db, "COMMIT") : rvc_sqlite_errno(rc);
	if (rc == 0)
		ticket = commit_ticket(s);
	else
		rvs_sqlite_exec(s->db, "ROLLBACK");
	pthread_mutex_unlock(&s->mu);
	return rc ? rc : wal_durable(s, ticket);
}

static int jank_by_app(struct rvs_store *s, int64_t from_day, int64_t to_day, int64_t limit,
		       int (*cb)(void *arg, const struct rvs_jank_app_row *r), void *arg)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(
		db,
		/* Per (app, device) first, so that an app's devices are its
		 * rows; the window's uploads counted per app in one pass (a
		 * subquery per app read the window's uploads once an app). */
		"SELECT j.app_id, sum(j.f), sum(j.l), count(*), ifnull(max(u.n), 0)"
		" FROM (SELECT app_id, device_id, sum(frames) AS f, sum(late) AS l"
		" FROM jank_counts INDEXED BY jank_counts_app_dev WHERE day >= ?1 AND day <= ?2"
		" GROUP BY app_id, device_id) j"
		" LEFT JOIN (SELECT app_id, count(*) AS n FROM uploads"
		" WHERE received_at >= ?1 * 86400 AND received_at < (?2 + 1) * 86400"
		" GROUP BY app_id) u ON u.app_id = j.app_id GROUP BY j.app_id"
		" ORDER BY CASE WHEN sum(j.f) > 0 THEN CAST(sum(j.l) AS REAL) / sum(j.f)"
		" ELSE 0 END DESC, j.app_id LIMIT ?3",
		-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, from_day);
		sqlite3_bind_int64(st, 2, to_day);
		sqlite3_bind_int64(st, 3, limit);
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			struct rvs_jank_app_row r = {
				.app_id = rvs_sqlite_col_text(st, 0),
				.frames = sqlite3_column_int64(st, 1),
				.late = sqlite3_column_int64(st, 2),
				.devices = sqlite3_column_int64(st, 3),
				.traces = sqlite3_column_int64(st, 4),
			};
			stop = cb(arg, &r);
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static int jank_app_days(struct rvs_store *s, const char *app, int64_t from_day, int64_t to_day,
			 int (*cb)(void *arg, int64_t day, int64_t frames, int64_t late), void *arg)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(db,
				"SELECT day, sum(frames), sum(late) FROM jank_counts"
				" WHERE day >= ?1 AND day <= ?2 AND app_id = ?3 GROUP BY day"
				" ORDER BY day",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, from_day);
		sqlite3_bind_int64(st, 2, to_day);
		sqlite3_bind_text(st, 3, app, -1, SQLITE_TRANSIENT);
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
			stop = cb(arg, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
				  sqlite3_column_int64(st, 2));
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static int jank_versions(struct rvs_store *s, int64_t from_day, int64_t to_day, int64_t max_rows,
			 int (*cb)(void *arg, const char *app, const char *version, int64_t frames,
				   int64_t late),
			 void *arg)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(
		db,
		"SELECT app_id, app_version, sum(frames), sum(late) FROM jank_counts"
		" INDEXED BY jank_counts_app_ver WHERE day >= ?1 AND day <= ?2"
		" GROUP BY app_id, app_version"
		" ORDER BY app_id, sum(frames) DESC, app_version LIMIT ?3",
		-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, from_day);
		sqlite3_bind_int64(st, 2, to_day);
		sqlite3_bind_int64(st, 3, max_rows);
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
			stop = cb(arg, rvs_sqlite_col_text(st, 0), rvs_sqlite_col_text(st, 1),
				  sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3));
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static int jank_expire(struct rvs_store *s, int64_t before_day)
{
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = sqlite3_prepare_v2(s->db, "DELETE FROM jank_counts WHERE day < ?", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, before_day);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->mu);
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static int requeue_build_id(struct rvs_store *s, const char *build_id, uint64_t *queued)
{
	sqlite3_stmt *st;
	int rc;

	*queued = 0;
	pthread_mutex_lock(&s->mu);
	if ((rc = rvs_sqlite_exec(s->db, "BEGIN IMMEDIATE")))
		goto unlock;
	rc = sqlite3_prepare_v2(s->db,
				"INSERT OR IGNORE INTO decode_queue (trace_id, enqueued_at)"
				" SELECT r.trace_id, ?2 FROM trace_unresolved r JOIN uploads u"
				" USING (trace_id) WHERE r.build_id = ?1 AND u.state = 'decoded'",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, build_id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)time(NULL));
		rc = sqlite3_step(st);
		*queued = (uint64_t)sqlite3_changes(s->db);
		sqlite3_finalize(st);
	}
	if (rc == SQLITE_DONE)
		rc = sqlite3_prepare_v2(
			s->db,
			"UPDATE uploads SET state = 'pending_decode' WHERE trace_id IN"
			" (SELECT trace_id FROM trace_unresolved WHERE build_id = ?1)"
			" AND state = 'decoded'",
			-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, build_id, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	if (rc == SQLITE_DONE)
		rc = rvs_sqlite_exec(s->db, "COMMIT");
	else
		rvs_sqlite_exec(s->db, "ROLLBACK");
unlock:
	pthread_mutex_unlock(&s->mu);
	return rvc_sqlite_errno(rc);
}

/* The operator's requeue: three statements on the quarantined uploads whose
 * reason holds ?1 (NULL: all), in one transaction, queue first. */
static int quarantine_requeue(struct rvs_store *s, const char *reason, uint64_t *queued)
{
	static const char *const sql[] = {
		"INSERT OR IGNORE INTO decode_queue (trace_id, enqueued_at)"
		" SELECT trace_id, ?2 FROM quarantine WHERE ?1 IS NULL OR instr(reason, ?1) > 0",
		"UPDATE uploads SET state = 'pending_decode' WHERE trace_id IN (SELECT trace_id"
		" FROM quarantine WHERE ?1 IS NULL OR instr(reason, ?1) > 0)",
		"DELETE FROM quarantine WHERE ?1 IS NULL OR instr(reason, ?1) > 0",
	};
	int rc;

	*queued = 0;
	pthread_mutex_lock(&s->mu);
	if ((rc = rvs_sqlite_exec(s->db, "BEGIN IMMEDIATE")))
		goto unlock;
	for (size_t i = 0; i < sizeof sql / sizeof *sql && !rc; i++) {
		sqlite3_stmt *st;
		int r = sqlite3_prepare_v2(s->db, sql[i], -1, &st, NULL);

		if (r == SQLITE_OK) {
			rvs_sqlite_bind_opt_text(st, 1, reason);
			if (i == 0)
				sqlite3_bind_int64(st, 2, (sqlite3_int64)time(NULL));
			r = sqlite3_step(st);
			if (i == 0)
				*queued = (uint64_t)sqlite3_changes(s->db);
			sqlite3_finalize(st);
		}
		if (r != SQLITE_DONE)
			rc = rvc_sqlite_errno(r) ? rvc_sqlite_errno(r) : -EIO;
	}
	if (!rc)
		rc = rvs_sqlite_exec(s->db, "COMMIT");
	if (rc) {
		*queued = 0;
		rvs_sqlite_exec(s->db, "ROLLBACK");
	}
unlock:
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* The batch's bounds are read first, then the rows within them are queued
 * and their state changed, under one BEGIN IMMEDIATE (no writer between). */
#define REINDEX_WHERE                                                                   \
	" FROM uploads u WHERE u.trace_id > ?1 AND u.state = 'decoded'"                 \
	" AND u.blob_sha256 IS NOT NULL AND (?2 OR NOT EXISTS (SELECT 1 FROM trace_agg" \
	" a WHERE a.trace_id = u.trace_id))"

static int reindex_queue(struct rvs_store *s, const char *after, int all, size_t max, char last[40],
			 uint64_t *queued)
{
	static const char *const sql[] = {
		"SELECT count(*), max(trace_id) FROM (SELECT u.trace_id" REINDEX_WHERE
		" ORDER BY u.trace_id LIMIT ?3)",
		"INSERT OR IGNORE INTO decode_queue (trace_id, enqueued_at) SELECT u.trace_id, "
		"?4" REINDEX_WHERE " AND u.trace_id <= ?5",
		"UPDATE uploads SET state = 'pending_decode' WHERE trace_id IN (SELECT "
		"u.trace_id" REINDEX_WHERE " AND u.trace_id <= ?5)",
	};
	int rc, n = 0;

	*queued = 0;
	last[0] = 0;
	if (max < 1 || max > RVS_REINDEX_MAX || strlen(after) >= 40)
		return -EINVAL;
	pthread_mutex_lock(&s->mu);
	if ((rc = rvs_sqlite_exec(s->db, "BEGIN IMMEDIATE")))
		goto unlock;
	for (size_t i = 0; i < sizeof sql / sizeof *sql && !rc; i++) {
		sqlite3_stmt *st;
		int r = sqlite3_prepare_v2(s->db, sql[i], -1, &st, NULL);

		if (r == SQLITE_OK) {
			sqlite3_bind_text(st, 1, after, -1, SQLITE_STATIC);
			sqlite3_bind_int(st, 2, !!all);
			sqlite3_bind_int64(st, 3, (sqlite3_int64)max);
			sqlite3_bind_int64(st, 4, (sqlite3_int64)time(NULL));
			sqlite3_bind_text(st, 5, last, -1, SQLITE_STATIC);
			r = sqlite3_step(st);
			if (i == 0 && r == SQLITE_ROW) {
				n = sqlite3_column_int(st, 0);
				if (n)
					snprintf(last, 40, "%s", sqlite3_column_text(st, 1));
				r = SQLITE_DONE;
			}
			if (i == 2)
				*queued = (uint64_t)sqlite3_changes(s->db);
			sqlite3_finalize(st);
		}
		if (r != SQLITE_DONE)
			rc = rvc_sqlite_errno(r) ? rvc_sqlite_errno(r) : -EIO;
		if (!n)
			break;
	}
	if (!rc)
		rc = rvs_sqlite_exec(s->db, "COMMIT");
	if (rc) {
		*queued = 0;
		last[0] = 0;
		rvs_sqlite_exec(s->db, "ROLLBACK");
	}
unlock:
	pthread_mutex_unlock(&s->mu);
	return rc ? rc : n;
}

/* ---- issue 15: the SQL of the other server files (store.h's second block) ---- */

/* Retention: the batch's ids are read, then deleted, under one BEGIN
 * IMMEDIATE, children before parents (traces' index rows cascade). */
static int retention_delete(struct rvs_store *s, int64_t cutoff, size_t max, char (*blobs)[65],
			    size_t *nblobs)
{
	static const char *const del[] = {
		"DELETE FROM traces WHERE trace_id = ?",
		"DELETE FROM decode_queue WHERE trace_id = ?",
		"DELETE FROM quarantine WHERE trace_id = ?",
		"DELETE FROM uploads WHERE trace_id = ?",
	};
	char(*ids)[40] = malloc(max * sizeof *ids);
	sqlite3_stmt *sel = NULL, *st[4] = {NULL};
	size_t n = 0;
	int rc;

	assert(max > 0 && max <= 500);
	*nblobs = 0;
	if (!ids)
		return -ENOMEM;
	pthread_mutex_lock(&s->mu);
	if ((rc = rvs_sqlite_exec(s->db, "BEGIN IMMEDIATE")))
		goto unlock;
	rc = sqlite3_prepare_v2(s->db,
				"SELECT trace_id, blob_sha256 FROM uploads WHERE received_at < ?"
				" ORDER BY received_at LIMIT ?",
				-1, &sel, NULL);
	for (size_t k = 0; k < 4 && rc == SQLITE_OK; k++)
		rc = sqlite3_prepare_v2(s->db, del[k], -1, &st[k], NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(sel, 1, cutoff);
		sqlite3_bind_int64(sel, 2, (sqlite3_int64)max);
		while ((rc = sqlite3_step(sel)) == SQLITE_ROW && n < max) {
			const char *id = (const char *)sqlite3_column_text(sel, 0);
			const char *blob = (const char *)sqlite3_column_text(sel, 1);
			snprintf(ids[n++], sizeof ids[0], "%s", id ? id : "");
			if (blob && strlen(blob) == 64)
				memcpy(blobs[(*nblobs)++], blob, 65);
		}
	}
	for (size_t i = 0; i < n && rc == SQLITE_DONE; i++) {
		for (size_t k = 0; k < 4 && rc == SQLITE_DONE; k++) {
			sqlite3_bind_text(st[k], 1, ids[i], -1, SQLITE_STATIC);
			rc = sqlite3_step(st[k]);
			sqlite3_reset(st[k]);
		}
	}
	sqlite3_finalize(sel);
	for (size_t k = 0; k < 4; k++)
		sqlite3_finalize(st[k]);
	if (rc == SQLITE_DONE) {
		rc = rvs_sqlite_exec(s->db, "COMMIT");
	} else {
		rvs_log("error", "retention", "err=\"%s\"", sqlite3_errmsg(s->db));
		rc = rvc_sqlite_errno(rc);
		rvs_sqlite_exec(s->db, "ROLLBACK");
	}
unlock:
	pthread_mutex_unlock(&s->mu);
	free(ids);
	if (rc) {
		*nblobs = 0;
		return rc;
	}
	return (int)n;
}

static int blob_referenced(struct rvs_store *s, const char *blob)
{
	char buf[8];
	int rc = lookup_text(s, "SELECT 1 FROM uploads WHERE blob_sha256 = ? LIMIT 1", NULL, 0,
			     blob, buf, sizeof buf);
	return rc == 0 ? 1 : rc == -ENOENT ? 0 : rc;
}

/* A shown device's uploads received at or after ?1 whose kind is (op "=")
 * or is not (op "!=") ?3: the whole UTC days after ?1's from migration 11's
 * fleet_device_days, the rest of ?1's day from uploads_fleet (?4: ?1's
 * day).  Exact for received_at >= 0. */
#define FLEET_SINCE(op)                                                                       \
	" (SELECT COALESCE(sum(c.uploads), 0) FROM fleet_device_days c WHERE c.device_id ="   \
	" f.device_id AND c.day > ?4 AND c.kind " op " ?3) + (SELECT count(*) FROM uploads u" \
	" WHERE u.device_id = f.device_id AND u.received_at >= ?1 AND u.received_at <"        \
	" (?4 + 1) * 86400 AND COALESCE(u.anomaly_kind, 0) " op " ?3)"
#define FLEET_CHARGED FLEET_SINCE("!=")
#define FLEET_MANUAL  FLEET_SINCE("=")

/* The fleet page's reads: each on a scan connection of its own, off
 * migration 11's counts — the devices in fleet_devices_order, the newest
 * max of them, so the cost is that of the rows shown, not of the uploads. */
static int fleet_devices(struct rvs_store *s, int64_t since, int manual_kind, unsigned max,
			 int (*cb)(void *arg, const struct rvs_fleet_device *d), void *arg)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (since < 0)
		since = 0; /* no upload is received before 1970 */
	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(db,
				"SELECT d.device_id, d.model, d.os_build, d.arch, d.enrolled_at,"
				" f.uploads," FLEET_CHARGED ", f.last_upload_at," FLEET_MANUAL
				" FROM fleet_devices f JOIN devices d ON d.device_id = f.device_id"
				" ORDER BY f.last_upload_at DESC, f.enrolled_at DESC LIMIT ?2",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, since);
		sqlite3_bind_int64(st, 2, max);
		sqlite3_bind_int(st, 3, manual_kind);
		sqlite3_bind_int64(st, 4, since / 86400);
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			struct rvs_fleet_device d = {
				.device_id = rvs_sqlite_col_text(st, 0),
				.model = rvs_sqlite_col_text(st, 1),
				.os_build = rvs_sqlite_col_text(st, 2),
				.arch = rvs_sqlite_col_text(st, 3),
				.enrolled_at = sqlite3_column_int64(st, 4),
				.uploads = sqlite3_column_int64(st, 5),
				.charged_since = sqlite3_column_int64(st, 6),
				.last_upload_at = sqlite3_column_int64(st, 7),
				.has_last_upload = sqlite3_column_type(st, 7) != SQLITE_NULL,
				.manual_since = sqlite3_column_int64(st, 8),
			};
			stop = cb(arg, &d);
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static int fleet_groups(struct rvs_store *s, int group,
			int (*cb)(void *arg, const char *key, int64_t n, int64_t bytes), void *arg)
{
	static const char *const sql[] = {
		[RVS_FLEET_WEEKS] = "SELECT week, uploads, bytes FROM fleet_weeks"
				    " ORDER BY week DESC LIMIT 26",
		[RVS_FLEET_QUARANTINE] =
			"SELECT reason, count(*), 0 FROM quarantine GROUP BY reason"
			" ORDER BY 2 DESC LIMIT 50",
		[RVS_FLEET_SKIPS] = "SELECT reason, count(*), 0 FROM skips GROUP BY reason"
				    " ORDER BY 2 DESC LIMIT 50",
	};
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (group < 0 || group > RVS_FLEET_SKIPS)
		return -EINVAL;
	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(db, sql[group], -1, &st, NULL);
	if (rc == SQLITE_OK) {
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
			stop = cb(arg, rvs_sqlite_col_text(st, 0), sqlite3_column_int64(st, 1),
				  sqlite3_column_int64(st, 2));
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static int device_count(struct rvs_store *s, uint64_t *out)
{
	char buf[32];
	int rc = lookup_text(s, "SELECT count(*) FROM devices", NULL, 0, NULL, buf, sizeof buf);
	if (rc == 0)
		*out = strtoull(buf, NULL, 10);
	return rc;
}

/* Runs one write statement on s->db under mu; bind fills its parameters
 * (may be NULL).  0 or -errno. */
static int write1(struct rvs_store *s, const char *sql, void (*bind)(sqlite3_stmt *, const void *),
		  const void *arg)
{
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		if (bind)
			bind(st, arg);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_DONE)
		rvs_log("error", "sqlite", "err=\"%s\"", sqlite3_errmsg(s->db));
	pthread_mutex_unlock(&s->mu);
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static int session_get(struct rvs_store *s, const uint8_t id_hash[32], int64_t now, char user[64],
		       char csrf[65])
{
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->rmu);
	rc = sqlite3_prepare_v2(s->rdb,
				"SELECT admin, csrf FROM web_sessions WHERE id_hash = ?"
				" AND expires_at > ?",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_blob(st, 1, id_hash, 32, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 2, now);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			snprintf(user, 64, "%s", rvs_sqlite_col_text(st, 0));
			snprintf(csrf, 65, "%s", rvs_sqlite_col_text(st, 1));
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->rmu);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : rvc_sqlite_errno(rc);
}

struct session_args {
	const uint8_t *id_hash;
	const char *user, *csrf;
	int64_t now, expires;
};

static void bind_session(sqlite3_stmt *st, const void *arg)
{
	const struct session_args *a = arg;
	sqlite3_bind_blob(st, 1, a->id_hash, 32, SQLITE_TRANSIENT);
	if (a->user) {
		sqlite3_bind_text(st, 2, a->user, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 3, a->csrf, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 4, a->now);
		sqlite3_bind_int64(st, 5, a->expires);
	}
}

static void bind_now(sqlite3_stmt *st, const void *arg)
{
	sqlite3_bind_int64(st, 1, *(const int64_t *)arg);
}

static int session_put(struct rvs_store *s, const uint8_t id_hash[32], const char *user,
		       const char *csrf, int64_t now, int64_t expires)
{
	struct session_args a = {id_hash, user, csrf, now, expires};
	write1(s, "DELETE FROM web_sessions WHERE expires_at <= ?", bind_now, &now);
	return write1(s,
		      "INSERT INTO web_sessions (id_hash, admin, csrf, created_at, expires_at)"
		      " VALUES (?,?,?,?,?)",
		      bind_session, &a);
}

static int session_delete(struct rvs_store *s, const uint8_t id_hash[32])
{
	struct session_args a = {id_hash, NULL, NULL, 0, 0};
	return write1(s, "DELETE FROM web_sessions WHERE id_hash = ?", bind_session, &a);
}

static void bind_user(sqlite3_stmt *st, const void *arg)
{
	sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
}

static int sessions_delete_user(struct rvs_store *s, const char *user)
{
	return write1(s, "DELETE FROM web_sessions WHERE admin = ?", bind_user, user);
}

static int admin_get(struct rvs_store *s, const char *name, unsigned *iterations, uint8_t *salt,
		     size_t *saltlen, uint8_t hash[32])
{
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->rmu);
	rc = sqlite3_prepare_v2(s->rdb,
				"SELECT pbkdf2_iterations, salt, hash FROM admins WHERE name = ?",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			int iter = sqlite3_column_int(st, 0);
			size_t sl = (size_t)sqlite3_column_bytes(st, 1);
			if (iter <= 0 || sl > *saltlen || sqlite3_column_bytes(st, 2) != 32) {
				rc = SQLITE_MISMATCH;
			} else {
				*iterations = (unsigned)iter;
				*saltlen = sl;
				if (sl)
					memcpy(salt, sqlite3_column_blob(st, 1), sl);
				memcpy(hash, sqlite3_column_blob(st, 2), 32);
			}
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->rmu);
	if (rc == SQLITE_MISMATCH)
		return -EBADMSG;
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : rvc_sqlite_errno(rc);
}

struct alert_args {
	const char *method;
	int64_t ns;
};

static void bind_alert(sqlite3_stmt *st, const void *arg)
{
	const struct alert_args *a = arg;
	sqlite3_bind_text(st, 1, a->method, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, a->ns);
}

static int method_alert_put(struct rvs_store *s, const char *method, int64_t threshold_ns)
{
	struct alert_args a = {method, threshold_ns};
	assert(threshold_ns > 0);
	return write1(s,
		      "INSERT INTO method_alerts (method, p95_threshold_ns, created_at)"
		      " VALUES (?1, ?2, strftime('%s','now')) ON CONFLICT (method) DO"
		      " UPDATE SET p95_threshold_ns = ?2",
		      bind_alert, &a);
}

/* One step of a campaign change on s->db (under mu, in its transaction):
 * SQLITE_DONE, or the error. */
static int campaign_write(struct rvs_store *s, int op, const char *id, const char *spec,
			  int64_t now)
{
	static const char *const sql[] = {
		[RVS_CAMPAIGN_CREATE] = "INSERT INTO campaigns (id, spec, created_at, updated_at)"
					" VALUES (?1, ?2, ?3, ?3)",
		[RVS_CAMPAIGN_UPDATE] = "UPDATE campaigns SET spec = ?2, updated_at = ?3"
					" WHERE id = ?1 AND ended_at IS NULL",
		[RVS_CAMPAIGN_END] = "UPDATE campaigns SET ended_at = ?3, updated_at = ?3"
				     " WHERE id = ?1 AND ended_at IS NULL",
	};
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, sql[op], -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	if (spec)
		sqlite3_bind_text(st, 2, spec, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, now);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc;
}

static int campaign_change(struct rvs_store *s, int op, const char *id, const char *spec,
			   const char *reason, int64_t now, size_t max_specs,
			   const struct rvs_publish_cb *p)
{
	sqlite3_stmt *st = NULL;
	uint64_t version = 0;
	int64_t recorded = 0;
	int rc, cb = 0;

	assert(op >= RVS_CAMPAIGN_CREATE && op <= RVS_CAMPAIGN_END);
	pthread_mutex_lock(&s->mu);
	if ((rc = rvs_sqlite_exec(s->db, "BEGIN IMMEDIATE")))
		goto unlock;
	rc = campaign_write(s, op, id, spec, now);
	if ((rc & 0xff) == SQLITE_CONSTRAINT) {
		cb = -EEXIST;
		goto rollback;
	}
	if (rc == SQLITE_DONE && op != RVS_CAMPAIGN_CREATE && sqlite3_changes(s->db) == 0) {
		cb = -ENOENT;
		goto rollback;
	}
	if (rc == SQLITE_DONE)
		rc = sqlite3_prepare_v2(
			s->db,
			"SELECT spec FROM campaigns WHERE ended_at IS NULL ORDER BY id"
			" LIMIT ?",
			-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)max_specs);
		while (!cb && (rc = sqlite3_step(st)) == SQLITE_ROW)
			cb = p->spec(p->arg, (const char *)sqlite3_column_blob(st, 0),
				     (size_t)sqlite3_column_bytes(st, 0));
		sqlite3_finalize(st);
		st = NULL;
	}
	if (!cb && rc == SQLITE_DONE)
		rc = sqlite3_prepare_v2(s->db,
					"SELECT COALESCE(max(version), 0) FROM policy_versions", -1,
					&st, NULL);
	if (!cb && rc == SQLITE_OK) {
		if ((rc = sqlite3_step(st)) == SQLITE_ROW)
			recorded = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		st = NULL;
	}
	if (!cb && rc == SQLITE_ROW)
		cb = p->publish(p->arg, (uint64_t)recorded, &version);
	if (!cb && rc == SQLITE_ROW)
		rc = sqlite3_prepare_v2(
			s->db,
			"INSERT INTO policy_versions (version, published_at, reason)"
			" VALUES (?,?,?)",
			-1, &st, NULL);
	if (!cb && rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)version);
		sqlite3_bind_int64(st, 2, now);
		sqlite3_bind_text(st, 3, reason, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	if (!cb && rc == SQLITE_DONE) {
		rc = rvs_sqlite_exec(s->db, "COMMIT");
		goto unlock;
	}
rollback:
	if (!cb)
		rvs_log("error", "campaign change", "err=\"%s\"", sqlite3_errmsg(s->db));
	rvs_sqlite_exec(s->db, "ROLLBACK");
	rc = cb ? cb : -EIO;
unlock:
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static int anomalies_since(struct rvs_store *s, int64_t since, size_t max,
			   int (*cb)(void *arg, const struct rvs_anomaly_row *r), void *arg)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(
		db,
		"SELECT u.device_id, u.app_id, u.app_version, u.model, u.os_build,"
		" u.anomaly_kind, u.severity FROM uploads u WHERE u.received_at >= ?1"
		" UNION ALL SELECT s.device_id, s.app_id, s.app_version, d.model,"
		" d.os_build, s.anomaly_kind, s.severity FROM skips s"
		" LEFT JOIN devices d ON d.device_id = s.device_id WHERE s.received_at >= ?1"
		" LIMIT ?2",
		-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, since);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			struct rvs_anomaly_row r = {
				.device_id = rvs_sqlite_col_text(st, 0),
				.app_id = rvs_sqlite_col_text(st, 1),
				.app_version = rvs_sqlite_col_text(st, 2),
				.model = rvs_sqlite_col_text(st, 3),
				.os_build = rvs_sqlite_col_text(st, 4),
				.kind = sqlite3_column_int(st, 5),
				.severity = sqlite3_column_int(st, 6),
			};
			stop = cb(arg, &r);
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static int campaigns_list(struct rvs_store *s,
			  int (*cb)(void *arg, const char *spec, size_t len, int64_t created,
				    int64_t updated, int64_t ended),
			  void *arg)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(db,
				"SELECT spec, created_at, updated_at, ended_at FROM campaigns"
				" ORDER BY ended_at IS NOT NULL, updated_at DESC, id",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
			stop = cb(arg, (const char *)sqlite3_column_blob(st, 0),
				  (size_t)sqlite3_column_bytes(st, 0), sqlite3_column_int64(st, 1),
				  sqlite3_column_int64(st, 2),
				  sqlite3_column_type(st, 3) == SQLITE_NULL
					  ? -1
					  : sqlite3_column_int64(st, 3));
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static int policy_version(struct rvs_store *s, uint64_t *out)
{
	char buf[32];
	int rc = lookup_text(s, "SELECT COALESCE(max(version), 0) FROM policy_versions", NULL, 0,
			     NULL, buf, sizeof buf);
	if (rc == 0)
		*out = strtoull(buf, NULL, 10);
	return rc;
}

/* The skip reports' filter as parameters 1..3 (NULL: unbounded, any app). */
#define SKIPS_WHERE                                \
	" WHERE (?1 IS NULL OR received_at >= ?1)" \
	" AND (?2 IS NULL OR received_at < ?2)"    \
	" AND (?3 IS NULL OR app_id = ?3)"

static void bind_skip_filter(sqlite3_stmt *st, const struct rvs_skip_filter *f)
{
	if (f->has_since)
		sqlite3_bind_int64(st, 1, f->since);
	if (f->has_until)
		sqlite3_bind_int64(st, 2, f->until);
	if (f->app)
		sqlite3_bind_text(st, 3, f->app, -1, SQLITE_TRANSIENT);
}

/* Runs a skips scan (recent: the reports, else the counts) on a scan
 * connection. */
static int skips_scan(struct rvs_store *s, const struct rvs_skip_filter *f, int recent,
		      int64_t limit, int (*cb)(void *arg, const struct rvs_skip_row *r), void *arg)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(
		db,
		recent ? "SELECT device_id, app_id, app_version, anomaly_kind, severity,"
			 " reason, received_at, captured_realtime_ns FROM skips" SKIPS_WHERE
			 " ORDER BY received_at DESC, rowid DESC LIMIT ?4"
		       : "SELECT reason, anomaly_kind, count(*) AS count FROM skips" SKIPS_WHERE
			 " GROUP BY reason, anomaly_kind"
			 " ORDER BY count DESC, reason, anomaly_kind",
		-1, &st, NULL);
	if (rc == SQLITE_OK) {
		bind_skip_filter(st, f);
		if (recent)
			sqlite3_bind_int64(st, 4, limit);
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			struct rvs_skip_row r = {0};
			if (recent) {
				r.device_id = rvs_sqlite_col_text(st, 0);
				r.app_id = rvs_sqlite_col_text(st, 1);
				r.app_version = rvs_sqlite_col_text(st, 2);
				r.anomaly_kind = sqlite3_column_int64(st, 3);
				r.has_kind = sqlite3_column_type(st, 3) != SQLITE_NULL;
				r.severity = sqlite3_column_int64(st, 4);
				r.has_severity = sqlite3_column_type(st, 4) != SQLITE_NULL;
				r.reason = rvs_sqlite_col_text(st, 5);
				r.received_at = sqlite3_column_int64(st, 6);
				r.captured_realtime_ns = sqlite3_column_int64(st, 7);
				r.has_captured = sqlite3_column_type(st, 7) != SQLITE_NULL;
			} else {
				r.reason = rvs_sqlite_col_text(st, 0);
				r.anomaly_kind = sqlite3_column_int64(st, 1);
				r.has_kind = sqlite3_column_type(st, 1) != SQLITE_NULL;
				r.count = sqlite3_column_int64(st, 2);
			}
			stop = cb(arg, &r);
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static int skips_by_reason(struct rvs_store *s, const struct rvs_skip_filter *f,
			   int (*cb)(void *arg, const struct rvs_skip_row *r), void *arg)
{
	return skips_scan(s, f, 0, 0, cb, arg);
}

static int skips_recent(struct rvs_store *s, const struct rvs_skip_filter *f, int64_t limit,
			int (*cb)(void *arg, const struct rvs_skip_row *r), void *arg)
{
	return skips_scan(s, f, 1, limit, cb, arg);
}

static int method_alert_get(struct rvs_store *s, const char *method, int64_t *ns)
{
	char buf[32];
	int rc = lookup_text(s, "SELECT p95_threshold_ns FROM method_alerts WHERE method = ?", NULL,
			     0, method, buf, sizeof buf);
	if (rc == 0)
		*ns = strtoll(buf, NULL, 10);
	return rc;
}

/* ---- issue 15 (sql15b): the decoded-trace index, on lanes of their own
 * (store_sqlite_index.c) opened on this store's database. ---- */
static int index_lane_open(struct rvs_store *s, struct rvs_index_lane **out)
{
	return rvs_sqlite_index_open(s->dsn, out);
}

static int trace_capture(struct rvs_store *s, const char *trace_id, char blob[65], int *compression,
			 uint64_t *payload_size)
{
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->rmu);
	rc = sqlite3_prepare_v2(
		s->rdb,
		"SELECT blob_sha256, compression, payload_size FROM uploads WHERE trace_id = ?1"
		" AND (state = 'decoded' OR (state = 'pending_decode' AND EXISTS"
		" (SELECT 1 FROM traces t WHERE t.trace_id = ?1)))",
		-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, trace_id, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW && sqlite3_column_text(st, 0)) {
			snprintf(blob, 65, "%s", (const char *)sqlite3_column_text(st, 0));
			*compression = sqlite3_column_int(st, 1);
			*payload_size = (uint64_t)sqlite3_column_int64(st, 2);
			rc = 0;
		} else {
			rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? -ENOENT : rvc_sqlite_errno(rc);
		}
		sqlite3_finalize(st);
	} else {
		rc = rvc_sqlite_errno(rc);
	}
	pthread_mutex_unlock(&s->rmu);
	return rc;
}

/* ---- issue 15 (sql15b): the JSON API's reads, each on a scan connection
 * of its own (as query.c opened one per request) ---- */

static int trace_read(struct rvs_store *s, const char *trace_id, rvs_row_fn cb, void *arg)
{
	static const char *const sql[] = {
		[RVS_TRACE_HEAD] = "SELECT u.trace_id, u.state, q.reason AS quarantine_reason,"
				   " u.device_id,"
				   " u.app_id, u.app_version, u.model, u.os_build, u.campaign_id,"
				   " u.anomaly_kind, u.severity,"
				   " u.captured_realtime_ns AS captured_at_ns,"
				   " u.received_at, u.payload_kind, u.compression, u.blob_bytes,"
				   " t.anomaly_name, t.anomaly_signature, t.duration_ns,"
				   " t.nmethods, t.dropped, t.decoded_at, t.index_cut"
				   " FROM uploads u LEFT JOIN traces t USING (trace_id)"
				   " LEFT JOIN quarantine q USING (trace_id) WHERE u.trace_id = ?",
		[RVS_TRACE_TOP_SELF] = "SELECT self_rank AS rank, method, calls, self_ns, incl_ns"
				       " FROM trace_methods WHERE trace_id = ? AND self_rank IS"
				       " NOT NULL ORDER BY self_rank",
		[RVS_TRACE_CHAINS] = ("SELECT kind, rank, signature, chain, depth, self_ns, incl_ns"
				      " FROM trace_chains WHERE trace_id = ? ORDER BY kind, rank"),
	};
	sqlite3 *db;
	int rc = 0;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	for (int part = RVS_TRACE_HEAD; part <= RVS_TRACE_CHAINS && !rc; part++) {
		sqlite3_stmt *st;
		size_t n = 0;
		if (sqlite3_prepare_v2(db, sql[part], -1, &st, NULL) != SQLITE_OK) {
			rc = -EIO;
			break;
		}
		sqlite3_bind_text(st, 1, trace_id, -1, SQLITE_TRANSIENT);
		rc = rvs_sqlite_rows_out(st, part, cb, arg, &n);
		sqlite3_finalize(st);
		if (!rc && part == RVS_TRACE_HEAD && n == 0)
			rc = -ENOENT;
	}
	sqlite3_close(db);
	return rc;
}

/* signatures_read's row callback for the totals: each row out, then its
 * per-week counts (read with the prepared counts statement). */
struct sig_read {
	sqlite3_stmt *counts;
	rvs_row_fn cb;
	void *arg;
};

static int sig_row(void *arg, int part, const struct rvs_col *cols, size_t n)
{
	struct sig_read *x = arg;
	int rc = x->cb(x->arg, part, cols, n);

	if (rc)
		return rc;
	assert(n >= 1 && !strcmp(cols[0].name, "signature"));
	sqlite3_bind_text(x->counts, 1, cols[0].type == RVS_COL_TEXT ? cols[0].text : "", -1,
			  SQLITE_TRANSIENT);
	rc = rvs_sqlite_rows_out(x->counts, 1, x->cb, x->arg, NULL);
	sqlite3_reset(x->counts);
	return rc;
}

/* Reads the totals migration 5's triggers maintain: no scan of traces. */
static int signatures_read(struct rvs_store *s, int64_t offset, int64_t limit, rvs_row_fn cb,
			   void *arg)
{
	struct sig_read x = {.cb = cb, .arg = arg};
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	int rc = -EIO;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	if (sqlite3_prepare_v2(db,
			       "SELECT signature, traces, chain FROM signatures"
			       " ORDER BY traces DESC, signature LIMIT ? OFFSET ?",
			       -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db,
			       "SELECT week * 604800 AS week_start, app_version, traces"
			       " FROM signature_counts WHERE signature = ?"
			       " ORDER BY week DESC, app_version LIMIT 200",
			       -1, &x.counts, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, limit);
		sqlite3_bind_int64(st, 2, offset);
		rc = rvs_sqlite_rows_out(st, 0, sig_row, &x, NULL);
	}
	sqlite3_finalize(x.counts);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

static int versions_read(struct rvs_store *s, const char *app, rvs_row_fn cb, void *arg)
{
	sqlite3_stmt *st;
	sqlite3 *db;
	int rc = -EIO;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	if (sqlite3_prepare_v2(db,
			       "SELECT DISTINCT app_id, app_version FROM agg_buckets"
			       " WHERE (?1 IS NULL OR app_id = ?1) AND app_version != ''"
			       " ORDER BY app_id, app_version",
			       -1, &st, NULL) == SQLITE_OK) {
		rvs_sqlite_bind_opt_text(st, 1, app);
		rc = rvs_sqlite_rows_out(st, 0, cb, arg, NULL);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return rc;
}

#define LIST_COLS                                                                             \
	"SELECT t.rowid AS rowid_, t.trace_id, t.app_id, t.app_version, t.model, t.os_build," \
	" t.anomaly_kind, t.severity, t.captured_at_ns, t.received_at, t.anomaly_name,"       \
	" t.anomaly_signature, t.duration_ns FROM traces t WHERE"
#define LIST_FILTERS                                                                 \
	RVS_SQLITE_TRACE_FILTER                                                      \
	" AND (?10 IS NULL OR t.trace_id IN (SELECT m.trace_id FROM trace_methods m" \
	"  WHERE m.method = ?10))"                                                   \
	" AND (?11 IS NULL OR t.rowid < ?11)"                                        \
	" ORDER BY t.rowid DESC LIMIT ?12"

/* Without a signature or method filter: walk traces newest first. */
static const char LIST_SQL[] = LIST_COLS LIST_FILTERS;
/* With one (or a time range), its matches drive the query (index lookups,
 * then a sort of the matches only): walking every trace newest first to
 * find the few that match a rare signature or method, or an older time
 * range, read most of the table. */
static const char LIST_SQL_SIG[] =
	LIST_COLS " t.rowid IN (SELECT x.rowid FROM traces x WHERE x.anomaly_signature = ?9"
		  " UNION SELECT x.rowid FROM trace_chains c JOIN traces x ON x.trace_id ="
		  " c.trace_id WHERE c.signature = ?9) AND" LIST_FILTERS;
static const char LIST_SQL_TIME[] =
	LIST_COLS " t.rowid IN (SELECT x.rowid FROM traces x WHERE x.received_at >="
		  " coalesce(?7, -9223372036854775807) AND x.received_at <"
		  " coalesce(?8, 9223372036854775807)) AND" LIST_FILTERS;
static const char LIST_SQL_METHOD[] =
	LIST_COLS " t.rowid IN (SELECT x.rowid FROM trace_methods m JOIN traces x ON"
		  " x.trace_id = m.trace_id WHERE m.method = ?10) AND" LIST_FILTERS;

/* The total of a filter: its matches counted up to ?12 (?11 unused). */
static const char COUNT_SQL[] =
	"SELECT count(*) AS total FROM (SELECT 1 FROM traces t WHERE" RVS_SQLITE_TRACE_FILTER
	" AND (?10 IS NULL OR t.trace_id IN (SELECT m.trace_id FROM trace_methods m"
	"  WHERE m.method = ?10)) LIMIT ?12)";

static int traces_list(struct rvs_store *s, const struct rvs_trace_filter *f, rvs_row_fn cb,
		       void *arg)
{
	const char *const text[] = {f->app, f->version, f->model, f->os_build};
	const int64_t num[] = {f->kind, f->min_severity, f->since, f->until};
	const int has[] = {f->has_kind, f->has_min_severity, f->has_since, f->has_until};
	const char *sql = f->count			 ? COUNT_SQL
			  : f->signature		 ? LIST_SQL_SIG
			  : f->method			 ? LIST_SQL_METHOD
			  : f->has_since || f->has_until ? LIST_SQL_TIME
							 : LIST_SQL;
	sqlite3_stmt *st;
	sqlite3 *db;
	int rc;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return -EIO;
	}
	for (int i = 0; i < 4; i++) {
		if (text[i])
			sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_TRANSIENT);
		if (has[i])
			sqlite3_bind_int64(st, i + 5, num[i]);
	}
	if (f->signature)
		sqlite3_bind_text(st, 9, f->signature, -1, SQLITE_TRANSIENT);
	if (f->method)
		sqlite3_bind_text(st, 10, f->method, -1, SQLITE_TRANSIENT);
	if (f->has_cursor && !f->count)
		sqlite3_bind_int64(st, 11, f->cursor);
	sqlite3_bind_int64(st, 12, f->limit);
	rc = rvs_sqlite_rows_out(st, 0, cb, arg, NULL);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

/* Traces with a method beyond which the method page's newest-first reads
 * walk traces newest first probing trace_methods' primary key, instead of
 * sorting every row of the method. */
#define METHOD_SCAN_MIN 5000

/* The method page's filter (app, app version), bound as ?3 and ?4. */
#define METHOD_FILTERS " AND (?3 IS NULL OR t.app_id = ?3) AND (?4 IS NULL OR t.app_version = ?4)"

static int method_read(struct rvs_store *s, int part, const char *method, int64_t arg,
		       int64_t count, const char *app, const char *version, rvs_row_fn cb,
		       void *cbarg)
{
	int scan = count > METHOD_SCAN_MIN;
	int filtered = (app || version) && part != RVS_METHOD_COUNT &&
		       part != RVS_METHOD_SELF_NTH && part != RVS_METHOD_INCL_NTH;
	const char *filters = filtered ? METHOD_FILTERS : "";
	const char *col = part == RVS_METHOD_BY_MODEL ? "model" : "app_version";
	char sql[768];
	sqlite3_stmt *st;
	sqlite3 *db;
	int rc;

	switch (part) {
	case RVS_METHOD_COUNT:
		snprintf(sql, sizeof sql,
			 "SELECT count(*) AS n FROM trace_methods WHERE method = ?1");
		break;
	/* Read off migration 5's (method, col) indexes: an OFFSET walk. */
	case RVS_METHOD_SELF_NTH:
		snprintf(sql, sizeof sql,
			 "SELECT self_ns FROM trace_methods WHERE method = ?1"
			 " ORDER BY self_ns LIMIT 1 OFFSET ?2");
		break;
	case RVS_METHOD_INCL_NTH:
		snprintf(sql, sizeof sql,
			 "SELECT incl_ns FROM trace_methods WHERE method = ?1"
			 " ORDER BY incl_ns LIMIT 1 OFFSET ?2");
		break;
	/* CROSS JOIN fixes the loop order (traces outside) for common methods. */
	case RVS_METHOD_BY_VERSION:
	case RVS_METHOD_BY_MODEL:
		snprintf(sql, sizeof sql,
			 scan ? "SELECT v, s, i, cs, ci FROM (SELECT COALESCE(t.%s, '') AS v,"
				" m.self_ns AS s, m.incl_ns AS i, m.cpu_self_ns AS cs,"
				" m.cpu_incl_ns AS ci FROM traces t CROSS JOIN"
				" trace_methods m ON m.trace_id = t.trace_id AND m.method = ?1"
				" WHERE 1%s ORDER BY t.rowid DESC LIMIT ?2) ORDER BY 1"
			      : "SELECT v, s, i, cs, ci FROM (SELECT COALESCE(t.%s, '') AS v,"
				" m.self_ns AS s, m.incl_ns AS i, m.cpu_self_ns AS cs,"
				" m.cpu_incl_ns AS ci FROM trace_methods m JOIN traces t"
				" USING (trace_id) WHERE m.method = ?1%s ORDER BY t.rowid DESC"
				" LIMIT ?2) ORDER BY 1",
			 col, filters);
		break;
	case RVS_METHOD_TRACES:
		snprintf(sql, sizeof sql,
			 scan ? "SELECT t.trace_id, t.app_id, t.app_version, t.model,"
				" t.received_at, m.calls, m.self_ns, m.incl_ns FROM traces t"
				" CROSS JOIN trace_methods m ON m.trace_id = t.trace_id"
				" AND m.method = ?1 WHERE 1%s ORDER BY t.rowid DESC LIMIT ?2"
			      : "SELECT t.trace_id, t.app_id, t.app_version, t.model,"
				" t.received_at, m.calls, m.self_ns, m.incl_ns FROM"
				" trace_methods m JOIN traces t USING (trace_id)"
				" WHERE m.method = ?1%s ORDER BY t.rowid DESC LIMIT ?2",
			 filters);
		break;
	case RVS_METHOD_SAMPLES:
		snprintf(sql, sizeof sql,
			 "SELECT m.self_ns AS s, m.incl_ns AS i FROM trace_methods m JOIN traces t"
			 " USING (trace_id) WHERE m.method = ?1%s",
			 filters);
		break;
	/* Unfiltered: migration 20's partial index alone (its rows with
	 * CPU data, no row fetched). */
	case RVS_METHOD_CPU:
		snprintf(sql, sizeof sql,
			 filtered ? "SELECT count(*) AS n, ifnull(sum(m.self_ns), 0) AS s,"
				    " ifnull(sum(m.incl_ns), 0) AS i,"
				    " ifnull(sum(m.cpu_self_ns), 0) AS cs,"
				    " ifnull(sum(m.cpu_incl_ns), 0) AS ci"
				    " FROM trace_methods m JOIN traces t USING (trace_id)"
				    " WHERE m.method = ?1 AND m.cpu_self_ns IS NOT NULL%s"
				  : "SELECT count(*) AS n, ifnull(sum(self_ns), 0) AS s,"
				    " ifnull(sum(incl_ns), 0) AS i,"
				    " ifnull(sum(cpu_self_ns), 0) AS cs,"
				    " ifnull(sum(cpu_incl_ns), 0) AS ci FROM trace_methods"
				    " WHERE method = ?1 AND cpu_self_ns IS NOT NULL%s",
			 filters);
		break;
	default:
		assert(!"no such method_read part");
		return -EINVAL;
	}
	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return -EIO;
	}
	sqlite3_bind_text(st, 1, method, -1, SQLITE_TRANSIENT);
	if (part != RVS_METHOD_COUNT && part != RVS_METHOD_SAMPLES && part != RVS_METHOD_CPU)
		sqlite3_bind_int64(st, 2, arg);
	if (*filters) {
		if (app)
			sqlite3_bind_text(st, 3, app, -1, SQLITE_TRANSIENT);
		if (version)
			sqlite3_bind_text(st, 4, version, -1, SQLITE_TRANSIENT);
	}
	rc = rvs_sqlite_rows_out(st, 0, cb, cbarg, NULL);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

/* A trace's signature as in signatures_read, counted per week (Monday,
 * UTC), app version and signature.  With signatures given only those
 * clusters are counted, through the signature indexes (traces with an
 * anomaly signature, then top-1 chains of traces without one), instead of
 * grouping every trace.  One JSON parameter carries both values. */
static const char WEEKLY_ALL_SQL[] =
	"WITH s AS (SELECT t.received_at, t.app_version,"
	" COALESCE(t.anomaly_signature, c.signature) AS sig FROM traces t"
	" LEFT JOIN trace_chains c ON c.trace_id = t.trace_id AND c.kind = 'top'"
	" AND c.rank = 1 WHERE t.received_at >= CAST(json_extract(?1, '$.since') AS INTEGER))"
	" SELECT sig AS signature,"
	" date(received_at, 'unixepoch', '-6 days', 'weekday 1') AS week,"
	" app_version, count(*) AS traces FROM s WHERE sig IS NOT NULL"
	" GROUP BY sig, week, app_version ORDER BY sig, week, app_version";
static const char WEEKLY_SOME_SQL[] =
	"WITH want(sig) AS (SELECT value FROM json_each(?1, '$.signatures')),"
	" s AS (SELECT t.received_at, t.app_version, t.anomaly_signature AS sig FROM traces t"
	"  WHERE t.anomaly_signature IN (SELECT sig FROM want)"
	" UNION ALL"
	" SELECT t.received_at, t.app_version, c.signature AS sig FROM trace_chains c"
	"  CROSS JOIN traces t ON t.trace_id = c.trace_id"
	"  WHERE c.signature IN (SELECT sig FROM want) AND c.kind = 'top' AND c.rank = 1"
	"  AND t.anomaly_signature IS NULL)"
	" SELECT sig AS signature,"
	" date(received_at, 'unixepoch', '-6 days', 'weekday 1') AS week,"
	" app_version, count(*) AS traces FROM s"
	" WHERE received_at >= CAST(json_extract(?1, '$.since') AS INTEGER)"
	" GROUP BY sig, week, app_version ORDER BY sig, week, app_version";

static int signatures_weekly(struct rvs_store *s, int64_t since, const char *const *sigs,
			     size_t nsigs, rvs_row_fn cb, void *arg)
{
	char param[64 + 200 * 19];
	size_t len;
	sqlite3_stmt *st;
	sqlite3 *db;
	int rc;

	assert(nsigs <= 200);
	len = (size_t)snprintf(param, sizeof param, "{\"since\":%lld", (long long)since);
	if (nsigs) {
		len += (size_t)snprintf(param + len, sizeof param - len, ",\"signatures\":[");
		for (size_t i = 0; i < nsigs; i++) {
			assert(strlen(sigs[i]) == 16 && strspn(sigs[i], "0123456789abcdef") == 16);
			len += (size_t)snprintf(param + len, sizeof param - len, "%s\"%s\"",
						i ? "," : "", sigs[i]);
		}
		len += (size_t)snprintf(param + len, sizeof param - len, "]");
	}
	snprintf(param + len, sizeof param - len, "}");
	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	if (sqlite3_prepare_v2(db, nsigs ? WEEKLY_SOME_SQL : WEEKLY_ALL_SQL, -1, &st, NULL) !=
	    SQLITE_OK) {
		sqlite3_close(db);
		return -EIO;
	}
	sqlite3_bind_text(st, 1, param, -1, SQLITE_TRANSIENT);
	rc = rvs_sqlite_rows_out(st, 0, cb, arg, NULL);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

/* ---- accounts' roles, disabling, the audit log ------------------ */

#define ROLE_OF "CASE role WHEN 'viewer' THEN 1 WHEN 'author' THEN 2 ELSE 3 END"

static int user_get(struct rvs_store *s, const char *name, int *role, int *disabled)
{
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->rmu);
	rc = sqlite3_prepare_v2(s->rdb, "SELECT " ROLE_OF ", disabled FROM admins WHERE name = ?",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*role = sqlite3_column_int(st, 0);
			*disabled = sqlite3_column_int(st, 1) != 0;
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->rmu);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : rvc_sqlite_errno(rc);
}

static int user_set(struct rvs_store *s, const char *name, int role, int disabled)
{
	sqlite3_stmt *st;
	int rc, changed = 0;

	assert(role <= 0 || rvs_role_name(role));
	pthread_mutex_lock(&s->mu);
	rc = sqlite3_prepare_v2(s->db,
				"UPDATE admins SET role = coalesce(?2, role),"
				" disabled = coalesce(?3, disabled) WHERE name = ?1",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
		if (role > 0)
			sqlite3_bind_text(st, 2, rvs_role_name(role), -1, SQLITE_STATIC);
		if (disabled >= 0)
			sqlite3_bind_int(st, 3, disabled != 0);
		rc = sqlite3_step(st);
		changed = sqlite3_changes(s->db);
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_DONE)
		rvs_log("error", "sqlite", "err=\"%s\"", sqlite3_errmsg(s->db));
	pthread_mutex_unlock(&s->mu);
	if (rc != SQLITE_DONE)
		return rvc_sqlite_errno(rc);
	return changed ? 0 : -ENOENT;
}

static int users_list(struct rvs_store *s,
		      int (*cb)(void *arg, const char *name, int role, int disabled,
				int64_t created),
		      void *arg)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(
		db, "SELECT name, " ROLE_OF ", disabled, created_at FROM admins ORDER BY name", -1,
		&st, NULL);
	if (rc == SQLITE_OK) {
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
			stop = cb(arg, rvs_sqlite_col_text(st, 0), sqlite3_column_int(st, 1),
				  sqlite3_column_int(st, 2) != 0, sqlite3_column_int64(st, 3));
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

struct audit_args {
	int64_t at;
	const char *actor, *action, *target, *detail;
};

static void bind_audit(sqlite3_stmt *st, const void *arg)
{
	const struct audit_args *a = arg;
	sqlite3_bind_int64(st, 1, a->at);
	sqlite3_bind_text(st, 2, a->actor, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, a->action, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, a->target, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, a->detail, -1, SQLITE_TRANSIENT);
}

static int audit_add(struct rvs_store *s, int64_t at, const char *actor, const char *action,
		     const char *target, const char *detail)
{
	struct audit_args a = {at, actor, action, target, detail};
	return write1(s,
		      "INSERT INTO audit_log (at, actor, action, target, detail)"
		      " VALUES (?,?,?,?,?)",
		      bind_audit, &a);
}

static int audit_list(struct rvs_store *s, const struct rvs_audit_filter *f,
		      int (*cb)(void *arg, const struct rvs_audit_row *r), void *arg)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(db,
				"SELECT id, at, actor, action, target, detail FROM audit_log"
				" WHERE (?1 IS NULL OR actor = ?1) AND (?2 IS NULL OR action = ?2)"
				" AND (?3 IS NULL OR at >= ?3) AND (?4 IS NULL OR at < ?4)"
				" AND (?5 IS NULL OR id < ?5)"
				" ORDER BY id DESC LIMIT ?6",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		rvs_sqlite_bind_opt_text(st, 1, f->actor);
		rvs_sqlite_bind_opt_text(st, 2, f->action);
		rvs_sqlite_bind_opt_i64(st, 3, f->has_since, f->since);
		rvs_sqlite_bind_opt_i64(st, 4, f->has_until, f->until);
		rvs_sqlite_bind_opt_i64(st, 5, f->before_id > 0, f->before_id);
		sqlite3_bind_int64(st, 6, (int64_t)f->limit);
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			struct rvs_audit_row r = {
				sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
				rvs_sqlite_col_text(st, 2),  rvs_sqlite_col_text(st, 3),
				rvs_sqlite_col_text(st, 4),  rvs_sqlite_col_text(st, 5)};
			stop = cb(arg, &r);
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

/* One integer (the first column of the only row) of sql, ?1..?n bound by
 * bind, into *out.  0 or -errno. */
static int count_of(struct rvs_store *s, const char *sql,
		    void (*bind)(sqlite3_stmt *, const void *), const void *arg, int64_t *out)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		if (bind)
			bind(st, arg);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*out = sqlite3_column_int64(st, 0);
			rc = SQLITE_DONE;
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

static int signatures_total(struct rvs_store *s, int64_t *out)
{
	return count_of(s, "SELECT count(*) FROM signatures", NULL, NULL, out);
}

struct audit_count {
	const struct rvs_audit_filter *f;
	int64_t cap;
};

static void bind_audit_count(sqlite3_stmt *st, const void *arg)
{
	const struct audit_count *a = arg;
	rvs_sqlite_bind_opt_text(st, 1, a->f->actor);
	rvs_sqlite_bind_opt_text(st, 2, a->f->action);
	rvs_sqlite_bind_opt_i64(st, 3, a->f->has_since, a->f->since);
	rvs_sqlite_bind_opt_i64(st, 4, a->f->has_until, a->f->until);
	sqlite3_bind_int64(st, 5, a->cap);
}

static int audit_total(struct rvs_store *s, const struct rvs_audit_filter *f, int64_t cap,
		       int64_t *out)
{
	struct audit_count a = {f, cap};
	return count_of(s,
			"SELECT count(*) FROM (SELECT 1 FROM audit_log"
			" WHERE (?1 IS NULL OR actor = ?1) AND (?2 IS NULL OR action = ?2)"
			" AND (?3 IS NULL OR at >= ?3) AND (?4 IS NULL OR at < ?4) LIMIT ?5)",
			bind_audit_count, &a, out);
}

struct token_args {
	const char *id, *owner, *name;
	const uint8_t *hash;
	int64_t now;
};

static void bind_token(sqlite3_stmt *st, const void *arg)
{
	const struct token_args *a = arg;
	sqlite3_bind_text(st, 1, a->id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_blob(st, 2, a->hash, 32, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, a->owner, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, a->name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 5, a->now);
}

static int token_add(struct rvs_store *s, const char *id, const uint8_t hash[32], const char *owner,
		     const char *name, int64_t now)
{
	struct token_args a = {id, owner, name, hash, now};
	return write1(s,
		      "INSERT INTO api_tokens (id, hash, owner, name, created_at)"
		      " VALUES (?,?,?,?,?)",
		      bind_token, &a);
}

/* Runs one UPDATE (bound by bind) under mu: 0 when it changed a row,
 * -ENOENT when none, else -errno. */
static int update1(struct rvs_store *s, const char *sql, void (*bind)(sqlite3_stmt *, const void *),
		   const void *arg)
{
	sqlite3_stmt *st;
	int rc, changed = 0;

	pthread_mutex_lock(&s->mu);
	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		bind(st, arg);
		rc = sqlite3_step(st);
		changed = sqlite3_changes(s->db);
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_DONE)
		rvs_log("error", "sqlite", "err=\"%s\"", sqlite3_errmsg(s->db));
	pthread_mutex_unlock(&s->mu);
	if (rc != SQLITE_DONE)
		return rvc_sqlite_errno(rc);
	return changed ? 0 : -ENOENT;
}

static void bind_token_use(sqlite3_stmt *st, const void *arg)
{
	const struct token_args *a = arg;
	sqlite3_bind_int64(st, 1, a->now);
	if (a->hash)
		sqlite3_bind_blob(st, 2, a->hash, 32, SQLITE_TRANSIENT);
	else
		sqlite3_bind_text(st, 2, a->id, -1, SQLITE_TRANSIENT);
	if (a->owner)
		sqlite3_bind_text(st, 3, a->owner, -1, SQLITE_TRANSIENT);
}

static int token_auth(struct rvs_store *s, const uint8_t hash[32], int64_t now, char owner[64],
		      int *role)
{
	struct token_args a = {NULL, NULL, NULL, hash, now};
	sqlite3_stmt *st;
	int rc;

	pthread_mutex_lock(&s->rmu);
	rc = sqlite3_prepare_v2(s->rdb,
				"SELECT t.owner, CASE a.role WHEN 'viewer' THEN 1 WHEN 'author'"
				" THEN 2 ELSE 3 END FROM api_tokens t JOIN admins a ON a.name ="
				" t.owner WHERE t.hash = ? AND t.revoked_at IS NULL"
				" AND a.disabled = 0",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_blob(st, 1, hash, 32, SQLITE_TRANSIENT);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			snprintf(owner, 64, "%s", rvs_sqlite_col_text(st, 0));
			*role = sqlite3_column_int(st, 1);
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&s->rmu);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -ENOENT : rvc_sqlite_errno(rc);
	/* The last use is a hint: a failure to record it refuses nothing. */
	update1(s, "UPDATE api_tokens SET last_used = ?1 WHERE hash = ?2", bind_token_use, &a);
	return 0;
}

static int token_revoke(struct rvs_store *s, const char *owner, const char *id, int64_t now)
{
	struct token_args a = {id, owner, NULL, NULL, now};
	return update1(s,
		       "UPDATE api_tokens SET revoked_at = ?1 WHERE id = ?2 AND owner = ?3"
		       " AND revoked_at IS NULL",
		       bind_token_use, &a);
}

static int tokens_list(struct rvs_store *s, const char *owner,
		       int (*cb)(void *arg, const char *id, const char *name, int64_t created,
				 int64_t last_used, int64_t revoked),
		       void *arg)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int rc, stop = 0;

	if (rvs_sqlite_scan_open(s->dsn, &db))
		return -EIO;
	rc = sqlite3_prepare_v2(db,
				"SELECT id, name, created_at, ifnull(last_used, -1),"
				" ifnull(revoked_at, -1) FROM api_tokens WHERE owner = ?"
				" ORDER BY created_at DESC, rowid DESC",
				-1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, owner, -1, SQLITE_TRANSIENT);
		while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
			stop = cb(arg, rvs_sqlite_col_text(st, 0), rvs_sqlite_col_text(st, 1),
				  sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
				  sqlite3_column_int64(st, 4));
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (stop)
		return stop;
	return rc == SQLITE_DONE ? 0 : rvc_sqlite_errno(rc);
}

/* ---- regressions and webhook deliveries, on a connection of
 * their own (store_sqlite_regress.c) opened on this store's database. ---- */
static int regress_open(struct rvs_store *s, struct rvs_regress_db **out)
{
	return rvs_sqlite_regress_open(s->dsn, out);
}

/* ---- the aggregate and search reads (store_sqlite_agg.c,
 * store_sqlite_search.c), each on a read connection of its own opened on
 * this store's database. ---- */
static int agg_read(struct rvs_store *s, const struct rvs_agg_filter *f, size_t nsides,
		    const struct rvs_agg_cb *cb, void *arg)
{
	return rvs_sqlite_agg_read(s->dsn, f, nsides, cb, arg);
}

static int traces_sorted(struct rvs_store *s, const struct rvs_sorted_query *q, rvs_row_fn cb,
			 void *arg)
{
	return rvs_sqlite_traces_sorted(s->dsn, q, cb, arg);
}

static int heatmap_read(struct rvs_store *s, const struct rvs_heatmap_filter *f,
			int (*cb)(void *arg, int64_t received_at, int64_t duration_ns), void *arg)
{
	return rvs_sqlite_heatmap_read(s->dsn, f, cb, arg);
}

static int heaviest_read(struct rvs_store *s, const struct rvs_agg_filter *f, int64_t node,
			 int by_self, int64_t limit,
			 int (*cb)(void *arg, const struct rvs_heavy_row *r), void *arg)
{
	return rvs_sqlite_heaviest_read(s->dsn, f, node, by_self, limit, cb, arg);
}

static int trend_read(struct rvs_store *s, const struct rvs_trend_filter *f,
		      int (*cb)(void *arg, const struct rvs_trend_row *r), void *arg, int *cut)
{
	return rvs_sqlite_trend_read(s->dsn, f, cb, arg, cut);
}

static int issues_read(struct rvs_store *s, const struct rvs_issue_filter *f,
		       int (*cb)(void *arg, int part, const struct rvs_issue_row *r), void *arg)
{
	return rvs_sqlite_issues_read(s->dsn, f, cb, arg);
}

static int search_scan(struct rvs_store *s, const struct rvs_search_scan *q,
		       int (*chunk)(void *arg, int64_t top, int64_t *hi, int64_t *lo),
		       rvs_row_fn row, void *arg)
{
	return rvs_sqlite_search_scan(s->dsn, q, chunk, row, arg);
}

const struct rvs_store_ops rvs_store_sqlite = {
	.name = "sqlite3",
	.open = store_open,
	.close = store_close,
	.schema_version = schema_version,
	.device_add = device_add,
	.device_by_token = device_by_token,
	.upload_find = upload_find,
	.uploads_charged = uploads_charged,
	.upload_add = upload_add,
	.decode_next_batch = decode_next_batch,
	.decode_finish = decode_finish,
	.queue_depth = queue_depth,
	.admin_put = admin_put,
	.skip_add = skip_add,
	.requeue_build_id = requeue_build_id,
	.quarantine_requeue = quarantine_requeue,
	.reindex_queue = reindex_queue,
	/* issue 15 */
	.retention_delete = retention_delete,
	.blob_referenced = blob_referenced,
	.fleet_devices = fleet_devices,
	.fleet_groups = fleet_groups,
	.device_count = device_count,
	.session_get = session_get,
	.session_put = session_put,
	.session_delete = session_delete,
	.sessions_delete_user = sessions_delete_user,
	.admin_get = admin_get,
	.method_alert_put = method_alert_put,
	.method_alert_get = method_alert_get,
	.campaign_change = campaign_change,
	.anomalies_since = anomalies_since,
	.campaigns_list = campaigns_list,
	.policy_version = policy_version,
	.skips_by_reason = skips_by_reason,
	.skips_recent = skips_recent,
	.index_lane_open = index_lane_open,
	.index_lane_close = rvs_sqlite_index_close,
	.index_upload_meta = rvs_sqlite_index_upload_meta,
	.index_write = rvs_sqlite_index_write,
	.trace_capture = trace_capture,
	.trace_read = trace_read,
	.signatures_read = signatures_read,
	.versions_read = versions_read,
	.traces_list = traces_list,
	.method_read = method_read,
	.signatures_weekly = signatures_weekly,
	/* accounts: roles, tokens, the audit log */
	.user_get = user_get,
	.user_set = user_set,
	.users_list = users_list,
	.audit_add = audit_add,
	.audit_list = audit_list,
	.audit_total = audit_total,
	.signatures_total = signatures_total,
	.token_add = token_add,
	.token_auth = token_auth,
	.token_revoke = token_revoke,
	.tokens_list = tokens_list,
	/* regressions and webhook deliveries */
	.regress_open = regress_open,
	.regress_close = rvs_sqlite_regress_close,
	.regress_sides = rvs_sqlite_regress_sides,
	.regress_versions = rvs_sqlite_regress_versions,
	.regress_run_get = rvs_sqlite_regress_run_get,
	.regress_run_put = rvs_sqlite_regress_run_put,
	.regress_runs_list = rvs_sqlite_regress_runs_list,
	.webhook_enqueue = rvs_sqlite_webhook_enqueue,
	.webhook_claim = rvs_sqlite_webhook_claim,
	.webhook_record = rvs_sqlite_webhook_record,
	.webhook_list = rvs_sqlite_webhook_list,
	.webhook_pending = rvs_sqlite_webhook_pending,
	/* aggregates, worst traces, issues, chain search */
	.agg_read = agg_read,
	.traces_sorted = traces_sorted,
	.issues_read = issues_read,
	.search_scan = search_scan,
	.trend_read = trend_read,
	.alert_rule_add = rvs_sqlite_alert_rule_add,
	.alert_rule_delete = rvs_sqlite_alert_rule_delete,
	.alert_rules_list = rvs_sqlite_alert_rules_list,
	.alert_rule_update = rvs_sqlite_alert_rule_update,
	.alert_counts = rvs_sqlite_alert_counts,
	.heatmap_read = heatmap_read,
	.heaviest_read = heaviest_read,
	.jank_put = jank_put,
	.jank_by_app = jank_by_app,
	.jank_expire = jank_expire,
	.jank_app_days = jank_app_days,
	.jank_versions = jank_versions,
};
