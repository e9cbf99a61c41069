/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_pg.c — the PostgreSQL 15 storage backend (server/SCHEMA.md,
 * "PostgreSQL"), selected by a "postgresql://" database (store.c).
 *
 * Connections: a pool of libpq connections, each used by one work thread at
 * a time (taken from the free list, or opened when it is empty; given back
 * after the call), so there are as many as work threads ever ran at once.
 * Every statement is prepared once per connection, when it opens; a
 * connection that failed (PQstatus not OK) is closed instead of going back.
 * Every value from a device goes in as a bound parameter, never as SQL
 * text.  No function here runs on the event loop: they block.
 *
 * Durability: the server runs with synchronous_commit on (PostgreSQL's
 * default), so COMMIT returning means the WAL is flushed: device_add,
 * upload_add and skip_add return 0 only once their row is on disk.  (A
 * duplicate found by upload_find or skip_add was committed, so durable, by
 * whoever inserted it.)
 *
 * Quota: upload_add locks its device's row (FOR UPDATE) before counting, in
 * the transaction that inserts, so two uploads of one device at quota - 1
 * cannot both pass, on one node or several.
 *
 * The decode queue is a work queue in the database: decode_next_batch takes
 * the oldest queued rows whose lease is free or expired with FOR UPDATE
 * SKIP LOCKED and gives each a lease (leased_until = now() + decode_lease_s, and a
 * fresh lease number from a sequence, returned in rvs_decode_item.lease).
 * Any node decodes any upload; a node killed mid-decode loses nothing (its
 * leases expire and are taken again); decode_finish records an item only
 * while its row still carries the lease number it was handed, so an upload
 * whose lease expired and was taken by another decoder is recorded once, by
 * the holder of the newest lease; an item whose rc is -EAGAIN (its index
 * write met only transient errors: store_pg_index.c) is not recorded but
 * left queued, its lease dropped.  The part/nparts partition argument is
 * validated and honoured (queue seq % nparts = part), as in sqlite.  Once
 * the transaction that queued a decode committed, a NOTIFY on
 * RVS_PG_WAKE_CHANNEL wakes the idle decoders listening there
 * (store_pg_wake.c).
 *
 * Round trips (each costs a wake-up of both ends; on a loaded machine they,
 * not the statements, set the rate): upload_add is one pipeline (BEGIN,
 * locks, one statement that checks and inserts, COMMIT, the wake-up);
 * decode_next_batch one statement; decode_finish one pipeline.
 *
 * The per-trace tables are partitioned by week of received_at (migration
 * 9, store_pg_part.c): upload_add makes the next week's partitions ahead,
 * retention drops whole weeks and never DELETEs per-trace rows, and the
 * device's key (device_id, upload_id) holds across weeks by upload_add's
 * advisory lock on it (a partitioned table's unique key would have to hold
 * the week, and a retry may arrive in the next).
 *
 * Migrations are an append-only list applied under a transaction-scoped
 * advisory lock (nodes starting together migrate once): migration N brings
 * schema_version from N-1 to N.
 */
#include "store/store.h"
#include "store/store_index.h"
#include "store/store_regress_be.h"
#include "store/pg/store_part.h"
#include "store/store_agg.h"
#include "store/pg/pg.h"
#include "base/log.h"
#include "rearview/common.pb-c.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

/* How long a decoder owns the uploads it took before another may take
 * them: far above a capture's decode time (tens of ms). */
/* How long a lease lasts: [server] decode_lease_s (rvs_store_pg_lease). */
static _Atomic unsigned lease_s = 300;

void rvs_store_pg_lease(unsigned seconds)
{
	assert(seconds > 0);
	lease_s = seconds;
}
/* pg_advisory_xact_lock key of the migrations ("rvmigr"). */
#define MIGRATE_LOCK "125852967331698"

struct conn {
	PGconn *pg;
	struct conn *next;
};

struct rvs_store {
	char *dsn;
	pthread_mutex_t mu; /* guards idle */
	struct conn *idle;
	/* The end (unix s) of the last week partitioned, as far as this
	 * handle knows (rvs_pg_part_ensure); upload_add makes the next
	 * week's partitions when its own clock is within a day of it. */
	_Atomic int64_t parts_until;
};

static const char *const migrations[] = {
	/* 1: the ingest path: devices, uploads, the decode queue with leases,
	 * quarantine, admins, skip reports, and the unresolved build ids a
	 * symbol upload requeues by. */
	"CREATE TABLE devices ("
	" device_id TEXT PRIMARY KEY,"
	" token_hash BYTEA NOT NULL UNIQUE,"
	" client_device_id TEXT, model TEXT, os_build TEXT, arch TEXT,"
	" enrolled_at BIGINT NOT NULL, seq BIGSERIAL NOT NULL);"
	"CREATE INDEX devices_client ON devices(client_device_id);"
	"CREATE TABLE uploads ("
	" trace_id TEXT PRIMARY KEY,"
	" device_id TEXT NOT NULL REFERENCES devices(device_id),"
	" upload_id BYTEA NOT NULL,"
	" received_at BIGINT NOT NULL,"
	" app_id TEXT, app_version TEXT, app_build_id BYTEA,"
	" model TEXT, os_build TEXT, campaign_id TEXT,"
	" anomaly_kind INTEGER, severity INTEGER, consent INTEGER,"
	" payload_kind INTEGER, compression INTEGER, payload_size BIGINT,"
	" captured_realtime_ns BIGINT,"
	" blob_sha256 TEXT, blob_bytes BIGINT, summary BYTEA,"
	" state TEXT NOT NULL CHECK (state IN ('pending_decode','decoded','quarantined')),"
	" UNIQUE (device_id, upload_id));"
	"CREATE INDEX uploads_received ON uploads(received_at);"
	"CREATE INDEX uploads_device_received ON uploads(device_id, received_at);"
	"CREATE SEQUENCE decode_lease_seq;"
	"CREATE TABLE decode_queue ("
	" seq BIGSERIAL NOT NULL UNIQUE,"
	" trace_id TEXT PRIMARY KEY REFERENCES uploads(trace_id),"
	" enqueued_at BIGINT NOT NULL,"
	" leased_until TIMESTAMPTZ, lease BIGINT);"
	"CREATE TABLE quarantine ("
	" trace_id TEXT PRIMARY KEY REFERENCES uploads(trace_id),"
	" reason TEXT NOT NULL,"
	" quarantined_at BIGINT NOT NULL);"
	"CREATE TABLE admins ("
	" name TEXT PRIMARY KEY,"
	" pbkdf2_iterations INTEGER NOT NULL, salt BYTEA NOT NULL, hash BYTEA NOT NULL,"
	" created_at BIGINT NOT NULL);"
	"CREATE TABLE skips ("
	" device_id TEXT NOT NULL REFERENCES devices(device_id),"
	" report_id BYTEA NOT NULL,"
	" received_at BIGINT NOT NULL,"
	" app_id TEXT, app_version TEXT,"
	" anomaly_kind INTEGER, severity INTEGER,"
	" reason TEXT NOT NULL,"
	" captured_realtime_ns BIGINT,"
	" PRIMARY KEY (device_id, report_id));"
	"CREATE INDEX skips_received ON skips(received_at);"
	"CREATE TABLE trace_unresolved ("
	" build_id TEXT NOT NULL,"
	" trace_id TEXT NOT NULL REFERENCES uploads(trace_id),"
	" PRIMARY KEY (build_id, trace_id));"
	"CREATE INDEX trace_unresolved_trace ON trace_unresolved(trace_id);",
	/* 2 (issue 15): the web UI and campaigns: sessions, saved method
	 * alerts, campaigns and the policy versions they publish (sqlite's 4). */
	"CREATE TABLE web_sessions ("
	" id_hash BYTEA PRIMARY KEY,"
	" admin TEXT NOT NULL, csrf TEXT NOT NULL,"
	" created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL);"
	"CREATE INDEX web_sessions_expires ON web_sessions(expires_at);"
	"CREATE TABLE method_alerts ("
	" method TEXT PRIMARY KEY,"
	" p95_threshold_ns BIGINT NOT NULL CHECK (p95_threshold_ns > 0),"
	" created_at BIGINT NOT NULL);"
	"CREATE TABLE campaigns ("
	" id TEXT PRIMARY KEY,"
	" spec TEXT NOT NULL,"
	" created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,"
	" ended_at BIGINT);"
	"CREATE TABLE policy_versions ("
	" version BIGINT PRIMARY KEY,"
	" published_at BIGINT NOT NULL, reason TEXT NOT NULL);"
	/* skips in arrival order (sqlite's rowid), the newest-first tie-break. */
	"ALTER TABLE skips ADD COLUMN seq BIGSERIAL;",
	/* 3 (agg16): sqlite's migration 7, the call-path aggregates (agg.c):
	 * the dictionary, the buckets, the per-trace rows (referencing uploads
	 * until the decoded-trace index moves here) and the bucket sums kept
	 * by a trigger. */
	"CREATE TABLE agg_nodes ("
	" node BIGSERIAL PRIMARY KEY, app_id TEXT NOT NULL, parent BIGINT NOT NULL,"
	" method TEXT NOT NULL, depth INTEGER NOT NULL,"
	" UNIQUE (app_id, parent, method));"
	"CREATE TABLE agg_buckets ("
	" bucket BIGSERIAL PRIMARY KEY, app_id TEXT NOT NULL, app_version TEXT NOT NULL,"
	" model TEXT NOT NULL, anomaly_kind INTEGER NOT NULL, day BIGINT NOT NULL,"
	" UNIQUE (app_id, app_version, model, anomaly_kind, day));"
	"CREATE TABLE trace_agg ("
	" trace_id TEXT PRIMARY KEY REFERENCES uploads(trace_id) ON DELETE CASCADE,"
	" bucket BIGINT NOT NULL, nodes INTEGER NOT NULL, folded INTEGER NOT NULL,"
	" total_ns BIGINT NOT NULL);"
	"CREATE TABLE trace_paths ("
	" trace_id TEXT NOT NULL REFERENCES uploads(trace_id) ON DELETE CASCADE,"
	" node BIGINT NOT NULL, bucket BIGINT NOT NULL, calls BIGINT NOT NULL,"
	" self_ns BIGINT NOT NULL, incl_ns BIGINT NOT NULL,"
	" PRIMARY KEY (trace_id, node));"
	"CREATE TABLE agg_sums ("
	" bucket BIGINT NOT NULL, node BIGINT NOT NULL, traces BIGINT NOT NULL,"
	" calls BIGINT NOT NULL, self_ns BIGINT NOT NULL, incl_ns BIGINT NOT NULL,"
	" PRIMARY KEY (bucket, node));"
	"CREATE FUNCTION trace_paths_sum() RETURNS trigger LANGUAGE plpgsql AS $f$"
	" BEGIN"
	"  IF TG_OP = 'INSERT' THEN"
	"   INSERT INTO agg_sums AS s (bucket, node, traces, calls, self_ns, incl_ns) VALUES"
	"   (NEW.bucket, NEW.node, 1, NEW.calls, NEW.self_ns, NEW.incl_ns)"
	"   ON CONFLICT (bucket, node) DO UPDATE SET traces = s.traces + 1,"
	"   calls = s.calls + excluded.calls, self_ns = s.self_ns + excluded.self_ns,"
	"   incl_ns = s.incl_ns + excluded.incl_ns;"
	"   RETURN NEW;"
	"  END IF;"
	"  UPDATE agg_sums SET traces = traces - 1, calls = calls - OLD.calls,"
	"  self_ns = self_ns - OLD.self_ns, incl_ns = incl_ns - OLD.incl_ns"
	"  WHERE bucket = OLD.bucket AND node = OLD.node;"
	"  DELETE FROM agg_sums WHERE bucket = OLD.bucket AND node = OLD.node AND traces <= 0;"
	"  RETURN OLD;"
	" END $f$;"
	"CREATE TRIGGER trace_paths_sum AFTER INSERT OR DELETE ON trace_paths"
	" FOR EACH ROW EXECUTE FUNCTION trace_paths_sum();",
	/* 4 (search): sqlite's migration 9 — traces.issue, traces.device_id
	 * and the issues and worst-trace sort indexes — on the decoded-trace index, when this
	 * database has one (issue 15 brings it here; until then there is nothing to index). The
	 * backfill folds as issue.c does for every chain without leading
	 * "(unknown caller)" frames (its issue is its signature); rows with
	 * them stay NULL until re-decoded: FNV over normalized names is C. */
	"DO $$ BEGIN IF to_regclass('traces') IS NOT NULL THEN"
	" ALTER TABLE traces ADD COLUMN IF NOT EXISTS issue TEXT;"
	" ALTER TABLE traces ADD COLUMN IF NOT EXISTS device_id TEXT;"
	" UPDATE traces t SET device_id = u.device_id FROM uploads u WHERE u.trace_id = t.trace_id;"
	" UPDATE traces t SET issue = c.signature FROM trace_chains c"
	"  WHERE c.trace_id = t.trace_id AND c.kind = 'anomaly' AND c.rank = 1"
	"  AND c.chain NOT LIKE '(unknown caller);%';"
	" CREATE INDEX IF NOT EXISTS traces_issue"
	"  ON traces(issue, received_at, device_id, severity);"
	" CREATE INDEX IF NOT EXISTS traces_by_severity ON traces((coalesce(severity, -1)));"
	" CREATE INDEX IF NOT EXISTS traces_by_duration ON traces((coalesce(duration_ns, -1)));"
	" CREATE INDEX IF NOT EXISTS traces_by_captured"
	"  ON traces((coalesce(captured_at_ns, -1)));"
	" END IF; END $$;",
	/* 5 (issue 15): the decoded-trace index (sqlite's 2, 5, 6 and 9 as they
	 * stand after 9): traces with its signature, issue and device columns
	 * and migration 4's indexes (4 found no traces table: this creates
	 * them), its methods and chains, and the per-signature totals that a
	 * trigger keeps as sqlite's traces_sig_* triggers do.  traces cascade
	 * from uploads (retention deletes uploads; the trigger uncounts). */
	"CREATE TABLE traces ("
	" trace_id TEXT PRIMARY KEY REFERENCES uploads(trace_id) ON DELETE CASCADE,"
	" app_id TEXT, app_version TEXT, model TEXT, os_build TEXT,"
	" anomaly_kind INTEGER, severity INTEGER,"
	" captured_at_ns BIGINT, received_at BIGINT NOT NULL,"
	" anomaly_name TEXT, duration_ns BIGINT, nmethods BIGINT, dropped BIGINT,"
	" anomaly_signature TEXT, decoded_at BIGINT NOT NULL,"
	" signature TEXT, issue TEXT, device_id TEXT,"
	" seq BIGSERIAL NOT NULL UNIQUE);"
	"CREATE TABLE trace_methods ("
	" trace_id TEXT NOT NULL REFERENCES traces(trace_id) ON DELETE CASCADE,"
	" method TEXT NOT NULL, calls BIGINT NOT NULL,"
	" self_ns BIGINT NOT NULL, incl_ns BIGINT NOT NULL,"
	" self_rank INTEGER,"
	" PRIMARY KEY (trace_id, method));"
	"CREATE TABLE trace_chains ("
	" trace_id TEXT NOT NULL REFERENCES traces(trace_id) ON DELETE CASCADE,"
	" kind TEXT NOT NULL CHECK (kind IN ('anomaly','top')),"
	" rank INTEGER NOT NULL, signature TEXT NOT NULL, chain TEXT NOT NULL,"
	" depth BIGINT NOT NULL, self_ns BIGINT, incl_ns BIGINT,"
	" PRIMARY KEY (trace_id, kind, rank));"
	"CREATE INDEX traces_app ON traces(app_id, app_version);"
	"CREATE INDEX traces_received ON traces(received_at);"
	"CREATE INDEX traces_signature ON traces(anomaly_signature);"
	"CREATE INDEX traces_sig ON traces(signature);"
	"CREATE INDEX traces_issue ON traces(issue, received_at, device_id, severity);"
	"CREATE INDEX traces_by_severity ON traces((coalesce(severity, -1)));"
	"CREATE INDEX traces_by_duration ON traces((coalesce(duration_ns, -1)));"
	"CREATE INDEX traces_by_captured ON traces((coalesce(captured_at_ns, -1)));"
	"CREATE INDEX trace_methods_self ON trace_methods(method, self_ns);"
	"CREATE INDEX trace_methods_incl ON trace_methods(method, incl_ns);"
	"CREATE INDEX trace_chains_signature ON trace_chains(signature);"
	"CREATE TABLE signatures ("
	" signature TEXT PRIMARY KEY, chain TEXT, traces BIGINT NOT NULL);"
	"CREATE TABLE signature_counts ("
	" signature TEXT NOT NULL, week BIGINT NOT NULL, app_version TEXT NOT NULL,"
	" traces BIGINT NOT NULL, PRIMARY KEY (signature, week, app_version));"
	"CREATE INDEX signatures_traces ON signatures(traces DESC, signature);"
	"CREATE FUNCTION traces_sig() RETURNS trigger LANGUAGE plpgsql AS $f$"
	" BEGIN"
	"  IF TG_OP <> 'INSERT' THEN"
	"   IF OLD.signature IS NOT NULL AND (TG_OP = 'DELETE'"
	"       OR OLD.signature IS DISTINCT FROM NEW.signature) THEN"
	"    UPDATE signature_counts SET traces = traces - 1 WHERE signature = OLD.signature"
	"    AND week = OLD.received_at / 604800 AND app_version = COALESCE(OLD.app_version, '');"
	"    DELETE FROM signature_counts WHERE signature = OLD.signature AND traces <= 0;"
	"    UPDATE signatures SET traces = traces - 1 WHERE signature = OLD.signature;"
	"    DELETE FROM signatures WHERE signature = OLD.signature AND traces <= 0;"
	"   END IF;"
	"   IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;"
	"  END IF;"
	"  IF NEW.signature IS NOT NULL AND (TG_OP = 'INSERT'"
	"      OR OLD.signature IS DISTINCT FROM NEW.signature) THEN"
	"   INSERT INTO signature_counts AS s (signature, week, app_version, traces) VALUES"
	"   (NEW.signature, NEW.received_at / 604800, COALESCE(NEW.app_version, ''), 1)"
	"   ON CONFLICT (signature, week, app_version) DO UPDATE SET traces = s.traces + 1;"
	"   INSERT INTO signatures AS s (signature, chain, traces) VALUES (NEW.signature,"
	"   (SELECT x.chain FROM trace_chains x WHERE x.trace_id = NEW.trace_id"
	"   AND x.signature = NEW.signature LIMIT 1), 1)"
	"   ON CONFLICT (signature) DO UPDATE SET traces = s.traces + 1,"
	"   chain = COALESCE(s.chain, excluded.chain);"
	"  END IF;"
	"  RETURN NEW;"
	" END $f$;"
	"CREATE TRIGGER traces_sig AFTER INSERT OR DELETE OR UPDATE OF signature ON traces"
	" FOR EACH ROW EXECUTE FUNCTION traces_sig();",
	/* 6 (roles): sqlite's migration 10 — each account's role (existing
	 * accounts stay admins) and whether it is disabled; the append-only
	 * audit log; personal API tokens (only their SHA-256).  Idempotent (a test reruns the
	 * migrations after 3). */
	"ALTER TABLE admins ADD COLUMN IF NOT EXISTS role TEXT NOT NULL DEFAULT 'admin'"
	" CHECK (role IN ('viewer', 'author', 'admin'));"
	"ALTER TABLE admins ADD COLUMN IF NOT EXISTS disabled BOOLEAN NOT NULL DEFAULT false;"
	"CREATE TABLE IF NOT EXISTS audit_log ("
	" id BIGSERIAL PRIMARY KEY, at BIGINT NOT NULL, actor TEXT NOT NULL,"
	" action TEXT NOT NULL, target TEXT NOT NULL, detail TEXT NOT NULL);"
	"CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $f$"
	" BEGIN RAISE EXCEPTION 'audit_log is append-only'; END $f$;"
	"CREATE OR REPLACE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log"
	" FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();"
	"CREATE TABLE IF NOT EXISTS api_tokens ("
	" id TEXT PRIMARY KEY, hash BYTEA NOT NULL UNIQUE, owner TEXT NOT NULL,"
	" name TEXT NOT NULL, created_at BIGINT NOT NULL, last_used BIGINT,"
	" revoked_at BIGINT);",
	/* 7 (regress): sqlite's migration 8 — the automatic comparisons, the
	 * alerts raised once per (app, A, B, method), and the webhook
	 * deliveries (store_pg_regress.c). */
	"CREATE TABLE regress_runs ("
	" app_id TEXT NOT NULL, version_a TEXT NOT NULL, version_b TEXT NOT NULL,"
	" traces_a BIGINT NOT NULL, traces_b BIGINT NOT NULL, computed_at BIGINT NOT NULL,"
	" top_method TEXT, top_ratio DOUBLE PRECISION, top_delta DOUBLE PRECISION,"
	" top_q DOUBLE PRECISION, alerted INTEGER NOT NULL, result TEXT NOT NULL,"
	" PRIMARY KEY (app_id, version_a, version_b));"
	"CREATE TABLE regress_alerts ("
	" app_id TEXT NOT NULL, version_a TEXT NOT NULL, version_b TEXT NOT NULL,"
	" method TEXT NOT NULL, created_at BIGINT NOT NULL,"
	" PRIMARY KEY (app_id, version_a, version_b, method));"
	"CREATE TABLE webhook_deliveries ("
	" id BIGSERIAL PRIMARY KEY, url TEXT NOT NULL, event TEXT NOT NULL, body TEXT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),"
	" attempts INTEGER NOT NULL, last_status INTEGER, last_error TEXT,"
	" next_try_ms BIGINT NOT NULL, created_at BIGINT NOT NULL, delivered_at BIGINT);"
	"CREATE INDEX webhook_deliveries_due ON webhook_deliveries(state, next_try_ms);",
	/* 8 (weekly partitions; RVS_PG_MIGRATION_PART): uploads, traces, trace_methods,
	 * trace_chains and trace_unresolved partitioned by week of received_at (server/SCHEMA.md,
	 * "Weekly partitions"): each is renamed *_v8, recreated LIKE it (columns, defaults and
	 * checks, whatever earlier migrations added) partitioned BY RANGE (received_at) with
	 * received_at in its primary key (and in the rows of the three that had none), its rows
	 * copied into the partitions rv_week_partitions makes, its other indexes and its triggers
	 * recreated from their definitions; foreign keys into these tables go (a partitioned
	 * table's unique key must hold the partition key, and retention drops partitions whole).
	 * (device_id, upload_id) stays the device's key through upload_add's advisory lock (a plain
	 * index here).  retention_released holds the blobs of dropped weeks
	 * until retention hands them out. */
	"CREATE TEMP TABLE rv9_defs (def TEXT NOT NULL) ON COMMIT DROP;"
	"DO $m$ DECLARE r RECORD; BEGIN"
	" FOR r IN SELECT c.conrelid::regclass::text AS t, c.conname FROM pg_constraint c"
	"  WHERE c.contype = 'f' AND c.confrelid = ANY"
	"  (ARRAY['uploads', 'traces', 'trace_methods', 'trace_chains',"
	" 'trace_unresolved']::regclass[])"
	" LOOP EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.t, r.conname); END LOOP;"
	" INSERT INTO rv9_defs SELECT pg_get_indexdef(x.indexrelid) FROM pg_index x"
	"  WHERE NOT x.indisunique AND x.indrelid = ANY"
	"  (ARRAY['uploads', 'traces', 'trace_methods', 'trace_chains',"
	" 'trace_unresolved']::regclass[]);"
	" INSERT INTO rv9_defs SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t"
	"  WHERE NOT t.tgisinternal AND t.tgrelid = ANY"
	"  (ARRAY['uploads', 'traces', 'trace_methods', 'trace_chains',"
	" 'trace_unresolved']::regclass[]);"
	" FOR r IN SELECT x.indexrelid::regclass AS i, c.relname AS n FROM pg_index x"
	"  JOIN pg_class c ON c.oid = x.indexrelid WHERE x.indrelid = ANY"
	"  (ARRAY['uploads', 'traces', 'trace_methods', 'trace_chains',"
	" 'trace_unresolved']::regclass[])"
	" LOOP EXECUTE format('ALTER INDEX %s RENAME TO %I', r.i, r.n || '_v8'); END LOOP;"
	" END $m$;"
	"ALTER TABLE trace_unresolved RENAME TO trace_unresolved_v8;"
	"ALTER TABLE trace_chains RENAME TO trace_chains_v8;"
	"ALTER TABLE trace_methods RENAME TO trace_methods_v8;"
	"ALTER TABLE traces RENAME TO traces_v8;"
	"ALTER TABLE uploads RENAME TO uploads_v8;"
	"ALTER SEQUENCE traces_seq_seq OWNED BY NONE;"
	"CREATE TABLE uploads (LIKE uploads_v8 INCLUDING DEFAULTS INCLUDING CONSTRAINTS,"
	" PRIMARY KEY (trace_id, received_at)) PARTITION BY RANGE (received_at);"
	"CREATE TABLE traces (LIKE traces_v8 INCLUDING DEFAULTS INCLUDING CONSTRAINTS,"
	" PRIMARY KEY (trace_id, received_at)) PARTITION BY RANGE (received_at);"
	"CREATE TABLE trace_methods (LIKE trace_methods_v8 INCLUDING DEFAULTS INCLUDING"
	" CONSTRAINTS, received_at BIGINT NOT NULL, PRIMARY KEY (trace_id, method, received_at))"
	" PARTITION BY RANGE (received_at);"
	"CREATE TABLE trace_chains (LIKE trace_chains_v8 INCLUDING DEFAULTS INCLUDING"
	" CONSTRAINTS, received_at BIGINT NOT NULL,"
	" PRIMARY KEY (trace_id, kind, rank, received_at)) PARTITION BY RANGE (received_at);"
	"CREATE TABLE trace_unresolved (LIKE trace_unresolved_v8 INCLUDING DEFAULTS INCLUDING"
	" CONSTRAINTS, received_at BIGINT NOT NULL,"
	" PRIMARY KEY (build_id, trace_id, received_at)) PARTITION BY RANGE (received_at);"
	"CREATE FUNCTION rv_week_partitions(w BIGINT) RETURNS void LANGUAGE plpgsql AS $f$"
	" DECLARE t TEXT; BEGIN"
	"  FOREACH t IN ARRAY ARRAY['uploads', 'traces', 'trace_methods', 'trace_chains',"
	"   'trace_unresolved'] LOOP"
	"   EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF %I"
	" FOR VALUES FROM (%s) TO (%s)', t || '_w' || w, t, w * 604800, (w + 1) * 604800);"
	"  END LOOP;"
	" END $f$;"
	"SELECT rv_week_partitions(w) FROM (SELECT received_at / 604800 AS w FROM uploads_v8"
	" UNION SELECT received_at / 604800 FROM traces_v8"
	" UNION SELECT extract(epoch FROM now())::bigint / 604800 + k FROM generate_series(0, 1) k)"
	" weeks;"
	"INSERT INTO uploads SELECT * FROM uploads_v8;"
	"INSERT INTO traces SELECT * FROM traces_v8;"
	"INSERT INTO trace_methods SELECT m.*, t.received_at FROM trace_methods_v8 m"
	" JOIN traces_v8 t ON t.trace_id = m.trace_id;"
	"INSERT INTO trace_chains SELECT c.*, t.received_at FROM trace_chains_v8 c"
	" JOIN traces_v8 t ON t.trace_id = c.trace_id;"
	"INSERT INTO trace_unresolved SELECT r.*, u.received_at FROM trace_unresolved_v8 r"
	" JOIN uploads_v8 u ON u.trace_id = r.trace_id;"
	"DROP TABLE trace_unresolved_v8, trace_chains_v8, trace_methods_v8, traces_v8, uploads_v8;"
	"ALTER SEQUENCE traces_seq_seq OWNED BY traces.seq;"
	"DO $m$ DECLARE r RECORD; BEGIN"
	" FOR r IN SELECT def FROM rv9_defs LOOP EXECUTE r.def; END LOOP;"
	" END $m$;"
	"DROP TABLE rv9_defs;"
	"CREATE INDEX uploads_key ON uploads(device_id, upload_id);"
	"CREATE INDEX traces_seq ON traces(seq);"
	"CREATE TABLE retention_released ("
	" blob_sha256 TEXT PRIMARY KEY, traces BIGINT NOT NULL);",
	/* 9 (aggregates and search): the aggregates and chain search on the decoded-trace
	 * index: a trace's aggregate rows carry no foreign key (traces is
	 * partitioned since 8): the index lane deletes them on a re-decode and
	 * retention with their week (the trigger uncounts); the arrival
	 * sequence (sqlite's rowid) of stored methods and chains, which chain
	 * search scans newest first in chunks and the worst-traces sort by
	 * self time breaks ties by (plain indexes: a partitioned table's unique
	 * index must hold received_at). */
	"DELETE FROM trace_paths p WHERE NOT EXISTS"
	" (SELECT 1 FROM traces t WHERE t.trace_id = p.trace_id);"
	"DELETE FROM trace_agg a WHERE NOT EXISTS"
	" (SELECT 1 FROM traces t WHERE t.trace_id = a.trace_id);"
	"ALTER TABLE trace_agg DROP CONSTRAINT IF EXISTS trace_agg_trace_id_fkey;"
	"ALTER TABLE trace_paths DROP CONSTRAINT IF EXISTS trace_paths_trace_id_fkey;"
	"ALTER TABLE trace_methods ADD COLUMN seq BIGSERIAL NOT NULL;"
	"ALTER TABLE trace_chains ADD COLUMN seq BIGSERIAL NOT NULL;"
	"CREATE INDEX trace_methods_seq ON trace_methods(seq);"
	"CREATE INDEX trace_chains_seq ON trace_chains(seq);"
	"CREATE INDEX trace_methods_method_seq ON trace_methods(method, seq);"
	/* sort=severity: few distinct values, so the seq tie-break in the
	 * index (sqlite's carries its rowid) spares a sort of each tie. */
	"CREATE INDEX traces_by_severity_seq ON traces((coalesce(severity, -1)), seq);",
	/* 10 (index budget, audit filters): sqlite's migration 12 — what an
	 * upload's index budget cut or left out, NULL when nothing; the audit
	 * log's pages by actor and by action. */
	"ALTER TABLE traces ADD COLUMN index_cut TEXT;"
	"CREATE INDEX audit_log_actor ON audit_log(actor, id);"
	"CREATE INDEX audit_log_action ON audit_log(action, id);",
	/* 11 (alert rules on trends): sqlite's migration 13. */
	"CREATE TABLE alert_rules ("
	" id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL,"
	" created_at BIGINT NOT NULL, created_by TEXT NOT NULL,"
	" state TEXT NOT NULL CHECK (state IN ('ok', 'firing')), since BIGINT,"
	" value DOUBLE PRECISION, evaluated_at BIGINT, last_delivery_id BIGINT);",
	/* 12 (selection weights): sqlite's migration 14 — how the device's
	 * policy chose each upload and its Horvitz–Thompson weight. */
	"ALTER TABLE uploads ADD COLUMN sel_kind INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE uploads ADD COLUMN sel_p DOUBLE PRECISION;"
	"ALTER TABLE uploads ADD COLUMN sel_seen BIGINT;"
	"ALTER TABLE uploads ADD COLUMN sel_taken BIGINT;"
	"ALTER TABLE uploads ADD COLUMN weight DOUBLE PRECISION NOT NULL DEFAULT 1;"
	"ALTER TABLE uploads ADD COLUMN weight_exact INTEGER NOT NULL DEFAULT 0;",
	/* 13 (issues by app): sqlite's migration 15 — app_id after issue in
	 * the issues index (on the partitioned table: every week's partition
	 * gets it), so an issue's weekly counts and signatures, read per
	 * (issue, app), are index ranges. */
	"DROP INDEX traces_issue;"
	"CREATE INDEX traces_issue"
	" ON traces(issue, app_id, received_at, device_id, severity);",
	/* 14 (the fleet's rollup; RVS_PG_MIGRATION_ROLLUP): agg_sums summed over every bucket, one
	 * row a node (a node is one app's: the per-(app, node) sums), read by an aggregate whose
	 * only filter is the app (store_pg_agg.c).  The index lane adds a batch's new paths in one
	 * statement just before its COMMIT, in node order (RVS_PG_ROLLUP_FOLD), so batches hold
	 * these hot rows only from there to their commit and take them in one order (no deadlock
	 * between batches); a DELETE of trace_paths (a re-decode, retention) takes its rows off in
	 * one statement-level trigger, in node order too (the same upsert, negated).  Filled from
	 * agg_sums. */
	"CREATE TABLE agg_node_sums ("
	" node BIGINT PRIMARY KEY, traces BIGINT NOT NULL, calls BIGINT NOT NULL,"
	" self_ns BIGINT NOT NULL, incl_ns BIGINT NOT NULL);"
	"INSERT INTO agg_node_sums SELECT node, sum(traces), sum(calls), sum(self_ns),"
	" sum(incl_ns) FROM agg_sums GROUP BY node ORDER BY node;"
	"CREATE FUNCTION trace_paths_unroll() RETURNS trigger LANGUAGE plpgsql AS $f$"
	" BEGIN"
	"  INSERT INTO agg_node_sums AS s (node, traces, calls, self_ns, incl_ns)"
	"  SELECT node, -count(*), -sum(calls)::bigint, -sum(self_ns)::bigint,"
	"  -sum(incl_ns)::bigint FROM gone GROUP BY node ORDER BY node"
	"  ON CONFLICT (node) DO UPDATE SET traces = s.traces + excluded.traces,"
	"  calls = s.calls + excluded.calls, self_ns = s.self_ns + excluded.self_ns,"
	"  incl_ns = s.incl_ns + excluded.incl_ns;"
	"  DELETE FROM agg_node_sums s WHERE s.traces <= 0"
	"  AND s.node IN (SELECT node FROM gone);"
	"  RETURN NULL;"
	" END $f$;"
	"CREATE TRIGGER trace_paths_unroll AFTER DELETE ON trace_paths"
	" REFERENCING OLD TABLE AS gone FOR EACH STATEMENT"
	" EXECUTE FUNCTION trace_paths_unroll();",
	/* 15 (jank per app, traced or not): sqlite's migration 16 — each
	 * device's frames and late frames per app, version and UTC day. */
	"CREATE TABLE jank_counts ("
	" device_id TEXT NOT NULL REFERENCES devices(device_id),"
	" app_id TEXT NOT NULL, app_version TEXT NOT NULL, day BIGINT NOT NULL,"
	" frames BIGINT NOT NULL CHECK (frames >= 0),"
	" late BIGINT NOT NULL CHECK (late >= 0 AND late <= frames),"
	" received_at BIGINT NOT NULL,"
	" PRIMARY KEY (device_id, app_id, app_version, day));"
	"CREATE INDEX jank_counts_day ON jank_counts(day, app_id);",
	/* 16 (the per-day rollup): sqlite's migration 17 — agg_sums summed per (node, UTC day)
	 * over every version, model and kind, read for the whole days of the rest of a range
	 * around a heatmap cell (store_pg_agg.c).  Kept as agg_node_sums is: the index lane's
	 * batch end adds its traces' rows just after that rollup's, in (node, day) order
	 * (RVS_PG_DAY_FOLD), and trace_paths_unroll takes deleted rows off both.  Filled from
	 * agg_sums. */
	"CREATE TABLE agg_day_sums ("
	" node BIGINT NOT NULL, day BIGINT NOT NULL, traces BIGINT NOT NULL,"
	" calls BIGINT NOT NULL, self_ns BIGINT NOT NULL, incl_ns BIGINT NOT NULL,"
	" PRIMARY KEY (node, day));"
	"INSERT INTO agg_day_sums SELECT s.node, b.day, sum(s.traces), sum(s.calls),"
	" sum(s.self_ns), sum(s.incl_ns) FROM agg_sums s JOIN agg_buckets b ON b.bucket = s.bucket"
	" GROUP BY s.node, b.day ORDER BY s.node, b.day;"
	"CREATE OR REPLACE FUNCTION trace_paths_unroll() RETURNS trigger LANGUAGE plpgsql AS $f$"
	" BEGIN"
	"  INSERT INTO agg_node_sums AS s (node, traces, calls, self_ns, incl_ns)"
	"  SELECT node, -count(*), -sum(calls)::bigint, -sum(self_ns)::bigint,"
	"  -sum(incl_ns)::bigint FROM gone GROUP BY node ORDER BY node"
	"  ON CONFLICT (node) DO UPDATE SET traces = s.traces + excluded.traces,"
	"  calls = s.calls + excluded.calls, self_ns = s.self_ns + excluded.self_ns,"
	"  incl_ns = s.incl_ns + excluded.incl_ns;"
	"  DELETE FROM agg_node_sums s WHERE s.traces <= 0"
	"  AND s.node IN (SELECT node FROM gone);"
	"  INSERT INTO agg_day_sums AS s (node, day, traces, calls, self_ns, incl_ns)"
	"  SELECT g.node, b.day, -count(*), -sum(g.calls)::bigint, -sum(g.self_ns)::bigint,"
	"  -sum(g.incl_ns)::bigint FROM gone g JOIN agg_buckets b ON b.bucket = g.bucket"
	"  GROUP BY g.node, b.day ORDER BY g.node, b.day"
	"  ON CONFLICT (node, day) DO UPDATE SET traces = s.traces + excluded.traces,"
	"  calls = s.calls + excluded.calls, self_ns = s.self_ns + excluded.self_ns,"
	"  incl_ns = s.incl_ns + excluded.incl_ns;"
	"  DELETE FROM agg_day_sums s WHERE s.traces <= 0"
	"  AND s.node IN (SELECT node FROM gone);"
	"  RETURN NULL;"
	" END $f$;",
	/* 17 (on- and off-CPU time per method): sqlite's migration 20 — each
	 * method row's self and inclusive time on the CPU, NULL without CPU
	 * data, and the partial covering index the method page sums them
	 * from.  On the partitioned parent: every week's partition, and
	 * those rv_week_partitions makes later, take both. */
	"ALTER TABLE trace_methods ADD COLUMN cpu_self_ns BIGINT,"
	" ADD COLUMN cpu_incl_ns BIGINT;"
	"CREATE INDEX trace_methods_cpu ON trace_methods (method, self_ns, incl_ns, cpu_self_ns,"
	" cpu_incl_ns) WHERE cpu_self_ns IS NOT NULL;",
	/* 18 (on- and off-CPU time per call path): sqlite's migration 22 —
	 * each path row's on-CPU self and inclusive time, NULL without CPU
	 * data (older rows too, until `reindex --all`); agg_sums,
	 * agg_node_sums and agg_day_sums sum them with the count of traces
	 * that had them and those traces' off-CPU time (wall less on).  Old
	 * rollup rows count 0 such traces (their paths hold none).  The row
	 * trigger on agg_sums and the statement trigger unrolling deletes
	 * from the other two are made again with the new sums; the index
	 * lane's batch-end folds (RVS_PG_ROLLUP_FOLD, RVS_PG_DAY_FOLD) add
	 * them too.  count(x) counts x's non-NULL values: the traces with
	 * CPU data. */
	"ALTER TABLE trace_paths ADD COLUMN cpu_self_ns BIGINT, ADD COLUMN cpu_incl_ns BIGINT;"
	"ALTER TABLE agg_sums ADD COLUMN cpu_traces BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN cpu_self_ns BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN cpu_incl_ns BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN off_self_ns BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN off_incl_ns BIGINT NOT NULL DEFAULT 0;"
	"ALTER TABLE agg_node_sums ADD COLUMN cpu_traces BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN cpu_self_ns BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN cpu_incl_ns BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN off_self_ns BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN off_incl_ns BIGINT NOT NULL DEFAULT 0;"
	"ALTER TABLE agg_day_sums ADD COLUMN cpu_traces BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN cpu_self_ns BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN cpu_incl_ns BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN off_self_ns BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN off_incl_ns BIGINT NOT NULL DEFAULT 0;"
	"CREATE OR REPLACE FUNCTION trace_paths_sum() RETURNS trigger LANGUAGE plpgsql AS $f$"
	" BEGIN"
	"  IF TG_OP = 'INSERT' THEN"
	"   INSERT INTO agg_sums AS s (bucket, node, traces, calls, self_ns, incl_ns, cpu_traces,"
	"   cpu_self_ns, cpu_incl_ns, off_self_ns, off_incl_ns) VALUES"
	"   (NEW.bucket, NEW.node, 1, NEW.calls, NEW.self_ns, NEW.incl_ns,"
	"   (NEW.cpu_self_ns IS NOT NULL)::int, coalesce(NEW.cpu_self_ns, 0),"
	"   coalesce(NEW.cpu_incl_ns, 0), coalesce(NEW.self_ns - NEW.cpu_self_ns, 0),"
	"   coalesce(NEW.incl_ns - NEW.cpu_incl_ns, 0))"
	"   ON CONFLICT (bucket, node) DO UPDATE SET traces = s.traces + 1,"
	"   calls = s.calls + excluded.calls, self_ns = s.self_ns + excluded.self_ns,"
	"   incl_ns = s.incl_ns + excluded.incl_ns, cpu_traces = s.cpu_traces + "
	"excluded.cpu_traces,"
	"   cpu_self_ns = s.cpu_self_ns + excluded.cpu_self_ns,"
	"   cpu_incl_ns = s.cpu_incl_ns + excluded.cpu_incl_ns,"
	"   off_self_ns = s.off_self_ns + excluded.off_self_ns,"
	"   off_incl_ns = s.off_incl_ns + excluded.off_incl_ns;"
	"   RETURN NEW;"
	"  END IF;"
	"  UPDATE agg_sums SET traces = traces - 1, calls = calls - OLD.calls,"
	"  self_ns = self_ns - OLD.self_ns, incl_ns = incl_ns - OLD.incl_ns,"
	"  cpu_traces = cpu_traces - (OLD.cpu_self_ns IS NOT NULL)::int,"
	"  cpu_self_ns = cpu_self_ns - coalesce(OLD.cpu_self_ns, 0),"
	"  cpu_incl_ns = cpu_incl_ns - coalesce(OLD.cpu_incl_ns, 0),"
	"  off_self_ns = off_self_ns - coalesce(OLD.self_ns - OLD.cpu_self_ns, 0),"
	"  off_incl_ns = off_incl_ns - coalesce(OLD.incl_ns - OLD.cpu_incl_ns, 0)"
	"  WHERE bucket = OLD.bucket AND node = OLD.node;"
	"  DELETE FROM agg_sums WHERE bucket = OLD.bucket AND node = OLD.node AND traces <= 0;"
	"  RETURN OLD;"
	" END $f$;"
	"CREATE OR REPLACE FUNCTION trace_paths_unroll() RETURNS trigger LANGUAGE plpgsql AS $f$"
	" BEGIN"
	"  INSERT INTO agg_node_sums AS s (node, traces, calls, self_ns, incl_ns, cpu_traces,"
	"  cpu_self_ns, cpu_incl_ns, off_self_ns, off_incl_ns)"
	"  SELECT node, -count(*), -sum(calls)::bigint, -sum(self_ns)::bigint,"
	"  -sum(incl_ns)::bigint, -count(cpu_self_ns), -coalesce(sum(cpu_self_ns), 0)::bigint,"
	"  -coalesce(sum(cpu_incl_ns), 0)::bigint, -coalesce(sum(self_ns - cpu_self_ns), "
	"0)::bigint,"
	"  -coalesce(sum(incl_ns - cpu_incl_ns), 0)::bigint FROM gone GROUP BY node ORDER BY node"
	"  ON CONFLICT (node) DO UPDATE SET traces = s.traces + excluded.traces,"
	"  calls = s.calls + excluded.calls, self_ns = s.self_ns + excluded.self_ns,"
	"  incl_ns = s.incl_ns + excluded.incl_ns, cpu_traces = s.cpu_traces + excluded.cpu_traces,"
	"  cpu_self_ns = s.cpu_self_ns + excluded.cpu_self_ns,"
	"  cpu_incl_ns = s.cpu_incl_ns + excluded.cpu_incl_ns,"
	"  off_self_ns = s.off_self_ns + excluded.off_self_ns,"
	"  off_incl_ns = s.off_incl_ns + excluded.off_incl_ns;"
	"  DELETE FROM agg_node_sums s WHERE s.traces <= 0"
	"  AND s.node IN (SELECT node FROM gone);"
	"  INSERT INTO agg_day_sums AS s (node, day, traces, calls, self_ns, incl_ns, cpu_traces,"
	"  cpu_self_ns, cpu_incl_ns, off_self_ns, off_incl_ns)"
	"  SELECT g.node, b.day, -count(*), -sum(g.calls)::bigint, -sum(g.self_ns)::bigint,"
	"  -sum(g.incl_ns)::bigint, -count(g.cpu_self_ns), -coalesce(sum(g.cpu_self_ns), "
	"0)::bigint,"
	"  -coalesce(sum(g.cpu_incl_ns), 0)::bigint,"
	"  -coalesce(sum(g.self_ns - g.cpu_self_ns), 0)::bigint,"
	"  -coalesce(sum(g.incl_ns - g.cpu_incl_ns), 0)::bigint"
	"  FROM gone g JOIN agg_buckets b ON b.bucket = g.bucket"
	"  GROUP BY g.node, b.day ORDER BY g.node, b.day"
	"  ON CONFLICT (node, day) DO UPDATE SET traces = s.traces + excluded.traces,"
	"  calls = s.calls + excluded.calls, self_ns = s.self_ns + excluded.self_ns,"
	"  incl_ns = s.incl_ns + excluded.incl_ns, cpu_traces = s.cpu_traces + excluded.cpu_traces,"
	"  cpu_self_ns = s.cpu_self_ns + excluded.cpu_self_ns,"
	"  cpu_incl_ns = s.cpu_incl_ns + excluded.cpu_incl_ns,"
	"  off_self_ns = s.off_self_ns + excluded.off_self_ns,"
	"  off_incl_ns = s.off_incl_ns + excluded.off_incl_ns;"
	"  DELETE FROM agg_day_sums s WHERE s.traces <= 0"
	"  AND s.node IN (SELECT node FROM gone);"
	"  RETURN NULL;"
	" END $f$;",
};
#define N_MIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

/* The prepared statements, by index; every connection prepares them all. */
enum {
	S_DEV_BY_CLIENT,
	S_DEV_REENROL,
	S_DEV_INSERT,
	S_DEV_BY_TOKEN,
	S_UP_FIND,
	S_UP_CHARGED,
	S_DEV_LOCK,
	S_Q_TAKE,
	S_Q_FINISH,
	S_Q_RELEASE,
	S_Q_DEPTH,
	S_ADMIN_PUT,
	S_SKIP_INSERT,
	S_REQUEUE,
	S_REQUEUE_STATE,
	S_UP_KEYLOCK,
	S_WAKE,
	S_UP_ADD,
	S_BEGIN,
	S_COMMIT,
	S_JANK_PUT,
	N_STMTS
};

/* $3: the anomaly kind never charged (MANUAL). */
#define CHARGED_WHERE "device_id = $1 AND received_at >= $2 AND COALESCE(anomaly_kind, 0) != $3"

static const char *const stmts[N_STMTS] = {
	[S_DEV_BY_CLIENT] = "SELECT device_id, encode(token_hash, 'hex') FROM devices"
			    " WHERE client_device_id = $1 ORDER BY enrolled_at, seq LIMIT 1"
			    " FOR UPDATE",
	[S_DEV_REENROL] = "UPDATE devices SET token_hash = $2, model = $3, os_build = $4,"
			  " arch = $5 WHERE device_id = $1",
	[S_DEV_INSERT] = "INSERT INTO devices (device_id, token_hash, client_device_id, model,"
			 " os_build, arch, enrolled_at) VALUES ($1,$2,$3,$4,$5,$6,"
			 " extract(epoch FROM now())::bigint)",
	[S_DEV_BY_TOKEN] = "SELECT device_id FROM devices WHERE token_hash = $1",
	[S_UP_FIND] = "SELECT trace_id FROM uploads WHERE device_id = $1 AND upload_id = $2",
	[S_UP_CHARGED] = "SELECT count(*) FROM uploads WHERE " CHARGED_WHERE,
	[S_DEV_LOCK] = "SELECT 1 FROM devices WHERE device_id = $1 FOR UPDATE",
	/* The oldest free rows of the part, locked (SKIP LOCKED: another
	 * decoder's rows are passed over), up to and including the first with
	 * a capture blob, each given a lease ($4 seconds, a fresh number);
	 * rows past that stay unleased, their locks ending with the
	 * statement.  Returned in seq order. */
	[S_Q_TAKE] = "WITH c AS (SELECT q.trace_id, q.seq, COALESCE(u.blob_sha256, '') AS blob"
		     " FROM decode_queue q JOIN uploads u USING (trace_id)"
		     " WHERE (q.leased_until IS NULL OR q.leased_until < now())"
		     " AND q.seq % $1 = $2 ORDER BY q.seq LIMIT $3 FOR UPDATE OF q SKIP LOCKED),"
		     " t AS (SELECT trace_id, seq, blob, count(*) FILTER (WHERE blob <> '')"
		     " OVER (ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
		     " AS before FROM c),"
		     " l AS (UPDATE decode_queue q SET leased_until = now()"
		     " + make_interval(secs => $4), lease = nextval('decode_lease_seq') FROM t"
		     " WHERE q.trace_id = t.trace_id AND t.before = 0"
		     " RETURNING q.trace_id, t.blob, q.lease, t.seq)"
		     " SELECT trace_id, blob, lease FROM l ORDER BY seq",
	/* An item decoded ($3 'decoded') or quarantined ($3 'quarantined',
	 * $4 the reason), recorded only while its row still carries its lease
	 * ($2): the row deleted, the upload's state set, a quarantine row
	 * written or replaced. */
	[S_Q_FINISH] = "WITH d AS (DELETE FROM decode_queue WHERE trace_id = $1 AND lease = $2"
		       " RETURNING trace_id),"
		       " s AS (UPDATE uploads SET state = $3 WHERE trace_id IN (SELECT trace_id"
		       " FROM d))"
		       " INSERT INTO quarantine (trace_id, reason, quarantined_at)"
		       " SELECT trace_id, $4::text, extract(epoch FROM now())::bigint FROM d"
		       " WHERE $4 IS NOT NULL"
		       " ON CONFLICT (trace_id) DO UPDATE SET reason = excluded.reason,"
		       " quarantined_at = excluded.quarantined_at",
	/* An item whose index write met only transient errors (-EAGAIN) stays
	 * queued: its lease is dropped and it is taken again in a second. */
	[S_Q_RELEASE] = "UPDATE decode_queue SET lease = NULL,"
			" leased_until = now() + interval '1 second'"
			" WHERE trace_id = $1 AND lease = $2",
	[S_Q_DEPTH] = "SELECT count(*) FROM decode_queue",
	[S_ADMIN_PUT] = "INSERT INTO admins (name, pbkdf2_iterations, salt, hash, created_at)"
			" VALUES ($1,$2,$3,$4,extract(epoch FROM now())::bigint)"
			" ON CONFLICT (name) DO UPDATE SET pbkdf2_iterations ="
			" excluded.pbkdf2_iterations, salt = excluded.salt, hash = excluded.hash,"
			" created_at = excluded.created_at",
	[S_SKIP_INSERT] = "INSERT INTO skips (device_id, report_id, received_at, app_id,"
			  " app_version, anomaly_kind, severity, reason, captured_realtime_ns)"
			  " VALUES ($1,$2,extract(epoch FROM now())::bigint,$3,$4,$5,$6,$7,$8)",
	[S_REQUEUE] = "INSERT INTO decode_queue (trace_id, enqueued_at)"
		      " SELECT r.trace_id, extract(epoch FROM now())::bigint"
		      " FROM trace_unresolved r JOIN uploads u USING (trace_id)"
		      " WHERE r.build_id = $1 AND u.state = 'decoded'"
		      " ON CONFLICT (trace_id) DO NOTHING",
	[S_REQUEUE_STATE] = "UPDATE uploads SET state = 'pending_decode' WHERE trace_id IN"
			    " (SELECT trace_id FROM trace_unresolved WHERE build_id = $1)"
			    " AND state = 'decoded'",
	/* The device's key on uploads is a plain index (a partitioned table's
	 * unique key must hold the week): upload_add serializes the uploads of
	 * one (device, upload id) with this lock, then looks for it. */
	[S_UP_KEYLOCK] =
		"SELECT pg_advisory_xact_lock(1920099941, hashtext($1 || encode($2, 'hex')))",
	[S_WAKE] = "SELECT pg_notify('" RVS_PG_WAKE_CHANNEL "', '')",
	/* upload_add's checks and writes in one statement, after its key lock
	 * (and its device's row lock when a quota applies): the upload and its
	 * decode_queue row are inserted only when no row of any week holds
	 * its key ($2, $3) and, with a quota ($20 the week's start, NULL:
	 * none; $21 the kind never charged; $22 the quota), the device's
	 * charged uploads are fewer; $23-$28 its selection and weight.  One
	 * row: the duplicate, the count, the rows inserted. */
	[S_UP_ADD] =
		"WITH k AS (SELECT EXISTS (SELECT 1 FROM uploads WHERE device_id = $2::text"
		" AND upload_id = $3::bytea) AS dup, CASE WHEN $20::bigint IS NULL THEN 0 ELSE"
		" (SELECT count(*) FROM uploads WHERE device_id = $2 AND received_at >= $20"
		" AND COALESCE(anomaly_kind, 0) != $21::int) END AS charged),"
		" i AS (INSERT INTO uploads (trace_id, device_id, upload_id, received_at, app_id,"
		" app_version, app_build_id, model, os_build, campaign_id, anomaly_kind,"
		" severity, consent, payload_kind, compression, payload_size,"
		" captured_realtime_ns, blob_sha256, blob_bytes, summary, state, sel_kind, sel_p,"
		" sel_seen, sel_taken, weight, weight_exact)"
		" SELECT $1::text, $2, $3, extract(epoch FROM now())::bigint, $4::text, $5::text,"
		" $6::bytea, $7::text, $8::text, $9::text, $10::int, $11::int, $12::int, $13::int,"
		" $14::int, $15::bigint, $16::bigint, $17::text, $18::bigint, $19::bytea,"
		" 'pending_decode', $23::int, $24::double precision, $25::bigint, $26::bigint,"
		" $27::double precision, $28::int FROM k WHERE NOT k.dup"
		" AND ($20 IS NULL OR k.charged < $22::bigint) RETURNING trace_id),"
		" q AS (INSERT INTO decode_queue (trace_id, enqueued_at)"
		" SELECT trace_id, extract(epoch FROM now())::bigint FROM i)"
		" SELECT k.dup, k.charged, (SELECT count(*) FROM i) FROM k",
	/* Transaction control as prepared statements: a pipeline takes only
	 * the extended protocol. */
	[S_BEGIN] = "BEGIN",
	[S_COMMIT] = "COMMIT",
	/* One (device, app, version, day) count, replacing the stored one. */
	[S_JANK_PUT] = "INSERT INTO jank_counts (device_id, app_id, app_version, day, frames, late,"
		       " received_at) VALUES ($1,$2,$3,$4,$5,$6,extract(epoch FROM now())::bigint)"
		       " ON CONFLICT (device_id, app_id, app_version, day) DO UPDATE SET"
		       " frames = excluded.frames, late = excluded.late,"
		       " received_at = excluded.received_at",
};

/* 1 when v is well-formed UTF-8 (no overlong forms, surrogates or code
 * points past U+10FFFF), which PostgreSQL requires of a text parameter. */
static int utf8_ok(const char *v)
{
	const unsigned char *u = (const unsigned char *)v;

	while (*u) {
		size_t n = *u < 0x80		 ? 0
			   : (*u & 0xe0) == 0xc0 ? 1
			   : (*u & 0xf0) == 0xe0 ? 2
			   : (*u & 0xf8) == 0xf0 ? 3
						 : 4;
		uint32_t c = n == 0 ? *u : n == 1 ? *u & 0x1fu : n == 2 ? *u & 0x0fu : *u & 0x07u;

		if (n == 4)
			return 0;
		for (size_t i = 1; i <= n; i++) {
			if ((u[i] & 0xc0) != 0x80)
				return 0;
			c = c << 6 | (u[i] & 0x3fu);
		}
		if ((n == 1 && c < 0x80) || (n == 2 && c < 0x800) || (n == 3 && c < 0x10000) ||
		    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return 0;
		u += n + 1;
	}
	return 1;
}

/* Statement i's name on every connection: "s" and two letters. */
static void stmt_name(int i, char name[4])
{
	assert(i >= 0 && i < N_STMTS);
	name[0] = 's';
	name[1] = (char)('a' + i / 26);
	name[2] = (char)('a' + i % 26);
	name[3] = 0;
}

/* Runs prepared statement i; *out gets the result (the caller clears it).
 * 0 (command or rows), or -errno (result cleared): rvs_pg_exec. */
static int run(PGconn *pg, int i, const struct rvs_pg_params *p, PGresult **out)
{
	char name[4];

	stmt_name(i, name);
	return rvs_pg_exec(pg, name, RVS_PG_PREPARED, p, out, NULL);
}

/* Runs prepared statement i for its effect only. */
static int run0(PGconn *pg, int i, const struct rvs_pg_params *p)
{
	PGresult *r;
	int rc = run(pg, i, p, &r);
	PQclear(r);
	return rc;
}

/* Runs SQL text without parameters (transaction control, migrations). */
static int exec(PGconn *pg, const char *sql)
{
	return rvs_pg_exec(pg, sql, RVS_PG_SCRIPT, NULL, NULL, NULL);
}

static void rollback(PGconn *pg)
{
	PQclear(PQexec(pg, "ROLLBACK"));
}

static PGconn *conn_open(const char *dsn)
{
	PGconn *pg = PQconnectdb(dsn);

	if (PQstatus(pg) != CONNECTION_OK) {
		rvs_log("error", "postgresql connect failed", "err=\"%s\"", PQerrorMessage(pg));
		PQfinish(pg);
		return NULL;
	}
	PQclear(PQexec(pg, "SET client_min_messages = warning"));
	for (int i = 0; i < N_STMTS; i++) {
		char name[4];
		PGresult *r;
		int ok;

		assert(stmts[i]); /* every enum entry has its SQL */
		stmt_name(i, name);
		r = PQprepare(pg, name, stmts[i], 0, NULL);
		ok = PQresultStatus(r) == PGRES_COMMAND_OK;

		if (!ok)
			rvs_log("error", "postgresql prepare", "stmt=%s err=\"%s\"", name,
				PQresultErrorMessage(r));
		PQclear(r);
		if (!ok) {
			PQfinish(pg);
			return NULL;
		}
	}
	return pg;
}

/* A connection for this thread's call: idle, or newly opened.  NULL:
 * -EAGAIN (the server does not take connections now: down, restarting, at
 * max_connections). */
static struct conn *get(struct rvs_store *s)
{
	struct conn *c;

	pthread_mutex_lock(&s->mu);
	if ((c = s->idle))
		s->idle = c->next;
	pthread_mutex_unlock(&s->mu);
	if (c)
		return c;
	if (!(c = calloc(1, sizeof *c)))
		return NULL;
	if (!(c->pg = conn_open(s->dsn))) {
		free(c);
		return NULL;
	}
	return c;
}

/* Gives c back, or closes it if its connection broke — and then every idle
 * one too: a connection breaks when the server restarts or ends sessions,
 * and the idle ones opened before would each fail their next statement. */
static void put(struct rvs_store *s, struct conn *c)
{
	if (!rvs_pg_usable(c->pg)) {
		int lost = PQstatus(c->pg) != CONNECTION_OK;
		struct conn *idle = NULL;

		PQfinish(c->pg);
		free(c);
		if (lost) {
			pthread_mutex_lock(&s->mu);
			idle = s->idle;
			s->idle = NULL;
			pthread_mutex_unlock(&s->mu);
		}
		while (idle) {
			struct conn *next = idle->next;
			PQfinish(idle->pg);
			free(idle);
			idle = next;
		}
		return;
	}
	pthread_mutex_lock(&s->mu);
	c->next = s->idle;
	s->idle = c;
	pthread_mutex_unlock(&s->mu);
}

/* schema_version's value on pg (0 before the first migration). */
static int version_of(PGconn *pg, int *out)
{
	PGresult *r;
	int rc = rvs_pg_exec(pg, "SELECT COALESCE(max(version), 0) FROM schema_version", 0, NULL,
			     &r, NULL);

	if (rc)
		return rc;
	if (PQntuples(r) == 1)
		*out = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
	else
		rc = -EIO;
	PQclear(r);
	return rc;
}

static int migrate(PGconn *pg, int upto)
{
	int v = 0, rc;

	if ((rc = exec(pg, "BEGIN")) ||
	    (rc = exec(pg, "SELECT pg_advisory_xact_lock(" MIGRATE_LOCK ")")) ||
	    (rc = exec(pg, "CREATE TABLE IF NOT EXISTS schema_version ("
			   " version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL"
			   " DEFAULT now())")) ||
	    (rc = version_of(pg, &v)))
		goto fail;
	if (v > N_MIGRATIONS) {
		rvs_log("error", "database is newer than this server", "version=%d", v);
		rc = -EPROTO;
		goto fail;
	}
	for (; v < upto; v++) {
		char sql[80];

		snprintf(sql, sizeof sql, "INSERT INTO schema_version (version) VALUES (%d)",
			 v + 1);
		if ((rc = exec(pg, migrations[v])) || (rc = exec(pg, sql)))
			goto fail;
		rvs_log("info", "migrated", "backend=postgresql schema_version=%d", v + 1);
	}
	return exec(pg, "COMMIT");
fail:
	rollback(pg);
	return rc;
}

static void store_close(struct rvs_store *s)
{
	struct conn *c, *next;

	if (!s)
		return;
	for (c = s->idle; c; c = next) {
		next = c->next;
		PQfinish(c->pg);
		free(c);
	}
	pthread_mutex_destroy(&s->mu);
	free(s->dsn);
	free(s);
}

/* Migrates on a connection of its own: the pool's prepare statements
 * against the migrated schema. */
int rvs_pg_migrate(const char *dsn, int upto)
{
	PGconn *pg = PQconnectdb(dsn);
	int rc;

	assert(upto >= 1 && upto <= N_MIGRATIONS);
	assert(strstr(migrations[RVS_PG_MIGRATION_PART - 1], "FUNCTION rv_week_partitions"));
	assert(strstr(migrations[RVS_PG_MIGRATION_ROLLUP - 1], "CREATE TABLE agg_node_sums"));
	assert(strstr(migrations[RVS_PG_MIGRATION_CPU - 1], "ADD COLUMN cpu_self_ns"));
	assert(strstr(migrations[RVS_PG_MIGRATION_PATH_CPU - 1],
		      "ALTER TABLE trace_paths ADD COLUMN cpu_self_ns"));
	if (!pg || PQstatus(pg) != CONNECTION_OK) {
		rvs_log("error", "postgresql connect failed", "err=\"%s\"",
			pg ? PQerrorMessage(pg) : "out of memory");
		PQfinish(pg);
		return -EIO;
	}
	PQclear(PQexec(pg, "SET client_min_messages = warning"));
	rc = migrate(pg, upto);
	PQfinish(pg);
	return rc;
}

static int store_open(const char *dsn, struct rvs_store **out)
{
	struct rvs_store *s = calloc(1, sizeof *s);
	struct conn *c;
	int64_t until = 0;
	int rc;

	if (!s || !(s->dsn = strdup(dsn))) {
		free(s);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->mu, NULL);
	if ((rc = rvs_pg_migrate(dsn, N_MIGRATIONS)) || !(c = get(s))) {
		store_close(s);
		return rc ? rc : -EAGAIN;
	}
	rc = rvs_pg_part_ensure(c->pg, &until);
	s->parts_until = until;
	put(s, c);
	if (rc) {
		store_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

static int schema_version(struct rvs_store *s, int *out)
{
	struct conn *c = get(s);
	int rc;

	if (!c)
		return -EAGAIN;
	rc = version_of(c->pg, out);
	put(s, c);
	return rc;
}

static int hex_to_bytes(const char *hex, uint8_t *out, size_t n)
{
	if (strlen(hex) != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		out[i] = (uint8_t)v;
	}
	return 0;
}

/* As sqlite's: a device enrolling again under the client_device_id of an
 * enrolled one takes back the oldest such identity (its row locked, and
 * enrolments of one client id serialized by an advisory lock on it), else
 * a new row.  Durable on return 0. */
static int device_add(struct rvs_store *s, struct rvs_device_rec *d)
{
	struct conn *c = get(s);
	struct rvs_pg_params p = {0};
	PGresult *r = NULL;
	int rc;

	d->reenrolled = 0;
	if (!c)
		return -EAGAIN;
	if ((rc = exec(c->pg, "BEGIN")))
		goto out;
	if (d->client_device_id && d->client_device_id[0]) {
		struct rvs_pg_params v = {0};
		rvs_pg_text(&v, d->client_device_id);
		rc = rvs_pg_exec(c->pg, "SELECT pg_advisory_xact_lock(hashtext($1))", 0, &v, NULL,
				 NULL);
		if (rc)
			goto fail;
		rvs_pg_text(&p, d->client_device_id);
		if ((rc = run(c->pg, S_DEV_BY_CLIENT, &p, &r)))
			goto fail;
		if (PQntuples(r) == 1 &&
		    hex_to_bytes(PQgetvalue(r, 0, 1), d->old_token_hash, 32) == 0) {
			snprintf(d->device_id, sizeof d->device_id, "%s", PQgetvalue(r, 0, 0));
			d->reenrolled = 1;
		}
		PQclear(r);
	}
	p.n = 0;
	rvs_pg_text(&p, d->device_id);
	rvs_pg_bytea(&p, d->token_hash, 32);
	if (d->reenrolled) {
		rvs_pg_text(&p, d->model);
		rvs_pg_text(&p, d->os_build);
		rvs_pg_text(&p, d->arch);
		rc = run0(c->pg, S_DEV_REENROL, &p);
	} else {
		rvs_pg_text(&p, d->client_device_id);
		rvs_pg_text(&p, d->model);
		rvs_pg_text(&p, d->os_build);
		rvs_pg_text(&p, d->arch);
		rc = run0(c->pg, S_DEV_INSERT, &p);
	}
	if (rc || (rc = exec(c->pg, "COMMIT")))
		goto fail;
	goto out;
fail:
	d->reenrolled = 0;
	rollback(c->pg);
out:
	put(s, c);
	return rc;
}

/* One row's first column into out, or -ENOENT. */
static int lookup(struct rvs_store *s, int i, const struct rvs_pg_params *p, char *out,
		  size_t outlen)
{
	struct conn *c = get(s);
	PGresult *r;
	int rc;

	if (!c)
		return -EAGAIN;
	if (!(rc = run(c->pg, i, p, &r))) {
		if (PQntuples(r) >= 1)
			snprintf(out, outlen, "%s", PQgetvalue(r, 0, 0));
		else
			rc = -ENOENT;
		PQclear(r);
	}
	put(s, c);
	return rc;
}

static int device_by_token(struct rvs_store *s, const uint8_t hash[32], char device_id[40])
{
	struct rvs_pg_params p = {0};

	rvs_pg_bytea(&p, hash, 32);
	return lookup(s, S_DEV_BY_TOKEN, &p, device_id, 40);
}

static int upload_find(struct rvs_store *s, const char *device_id, const uint8_t upload_id[16],
		       char trace_id[40])
{
	struct rvs_pg_params p = {0};

	rvs_pg_text(&p, device_id);
	rvs_pg_bytea(&p, upload_id, 16);
	return lookup(s, S_UP_FIND, &p, trace_id, 40);
}

static int uploads_charged(struct rvs_store *s, const char *device_id, int64_t since, uint64_t *out)
{
	struct rvs_pg_params p = {0};
	char buf[32];
	int rc;

	rvs_pg_text(&p, device_id);
	rvs_pg_i64(&p, since);
	rvs_pg_i64(&p, REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL);
	if (!(rc = lookup(s, S_UP_CHARGED, &p, buf, sizeof buf)))
		*out = strtoull(buf, NULL, 10);
	return rc;
}

/* NOTIFYs the decoders, after the commit that queued work: a transaction
 * that NOTIFYs holds PostgreSQL's global notify lock through its commit,
 * so notifying inside the upload's would serialize every upload's WAL
 * flush (no group commit).  This one writes nothing, so flushes nothing.
 * A failure costs only the wake-up (the decoders' poll finds the work). */
static void wake(PGconn *pg)
{
	PGresult *r;

	if (run(pg, S_WAKE, NULL, &r) == 0)
		PQclear(r);
}

/* Every prepared statement's name, for pipeline steps (which keep a
 * pointer): filled once. */
static char step_names[N_STMTS][4];
static pthread_once_t step_names_once = PTHREAD_ONCE_INIT;

static void step_names_fill(void)
{
	for (int i = 0; i < N_STMTS; i++)
		stmt_name(i, step_names[i]);
}

/* A pipeline step running prepared statement i (NULL: out of memory, pp->oom). */
static struct rvs_pg_step *step(struct rvs_pg_pipe *pp, int i, int keep)
{
	pthread_once(&step_names_once, step_names_fill);
	return rvs_pg_pipe_add(pp, step_names[i], RVS_PG_PREPARED, 0, keep);
}

/* The upload in one round trip (a pipeline): BEGIN; the key's advisory
 * lock (S_UP_KEYLOCK: uploads of one device key one after the other, on
 * every node); with a quota, the device's row locked (FOR UPDATE) before
 * counting, so two uploads of one device at quota - 1 cannot both pass;
 * S_UP_ADD's checks and inserts; COMMIT (synchronous_commit on: the WAL
 * is flushed when it returns); then the decoders' wake-up in a transaction
 * of its own (wake's reason).  -EEXIST when a row of any week holds the
 * key (committed: the lock's holder before us committed or rolled back,
 * and READ COMMITTED reads afresh), -EDQUOT past the quota, else 0 once
 * the rows are durable, or -errno (rolled back). */
static int upload_add(struct rvs_store *s, const struct rvs_upload_rec *u)
{
	struct conn *c = get(s);
	struct rvs_pg_pipe pp = {0};
	struct rvs_pg_step *st, *add;
	int quota = u->quota_since > 0 && u->anomaly_kind != REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL;
	size_t failed, commit;
	int rc;

	if (!c)
		return -EAGAIN;
	/* This week's partition exists (made a week ahead); the next one is
	 * made here a day before it is due (clocks may differ that much). */
	if ((int64_t)time(NULL) + 86400 >= s->parts_until) {
		int64_t until = 0;
		if ((rc = rvs_pg_part_ensure(c->pg, &until)))
			goto out;
		s->parts_until = until;
	}
	step(&pp, S_BEGIN, 0);
	if ((st = step(&pp, S_UP_KEYLOCK, 0))) {
		rvs_pg_text(&st->p, u->device_id);
		rvs_pg_bytea(&st->p, u->upload_id, 16);
	}
	if (quota && (st = step(&pp, S_DEV_LOCK, 0)))
		rvs_pg_text(&st->p, u->device_id);
	if ((add = step(&pp, S_UP_ADD, 1))) {
		struct rvs_pg_params *p = &add->p;
		rvs_pg_text(p, u->trace_id);
		rvs_pg_text(p, u->device_id);
		rvs_pg_bytea(p, u->upload_id, 16);
		rvs_pg_text(p, u->app_id);
		rvs_pg_text(p, u->app_version);
		rvs_pg_bytea(p, u->app_build_id_len ? u->app_build_id : NULL, u->app_build_id_len);
		rvs_pg_text(p, u->model);
		rvs_pg_text(p, u->os_build);
		rvs_pg_text(p, u->campaign_id);
		rvs_pg_i64(p, u->anomaly_kind);
		rvs_pg_i64(p, u->severity);
		rvs_pg_i64(p, u->consent);
		rvs_pg_i64(p, u->payload_kind);
		rvs_pg_i64(p, u->compression);
		rvs_pg_i64(p, (int64_t)u->payload_size);
		rvs_pg_i64(p, (int64_t)u->captured_realtime_ns);
		rvs_pg_text(p, u->blob_sha256);
		rvs_pg_i64(p, (int64_t)u->blob_bytes);
		rvs_pg_bytea(p, u->summary_len ? u->summary : NULL, u->summary_len);
		rvs_pg_opt_i64(p, quota, u->quota_since);
		rvs_pg_i64(p, REARVIEW__ANOMALY_KIND__ANOMALY_MANUAL);
		rvs_pg_i64(p, (int64_t)(u->weekly_quota & INT64_MAX));
		rvs_pg_i64(p, u->sel_kind);
		if (u->sel_kind)
			rvs_pg_dbl(p, u->sel_p);
		else
			rvs_pg_text(p, NULL);
		rvs_pg_opt_i64(p, u->sel_kind, u->sel_seen);
		rvs_pg_opt_i64(p, u->sel_kind, u->sel_taken);
		rvs_pg_dbl(p, u->weight > 0 ? u->weight : 1.0);
		rvs_pg_i64(p, u->weight_exact);
	}
	commit = pp.n;
	step(&pp, S_COMMIT, 0);
	step(&pp, S_WAKE, 0);
	rc = rvs_pg_pipe_run(c->pg, &pp, 0, &failed, NULL);
	if (rc && failed > commit) /* only the wake-up failed: committed */
		rc = 0;
	if (!rc) {
		PGresult *r = add->res;
		if (PQntuples(r) != 1)
			rc = -EIO;
		else if (strcmp(PQgetvalue(r, 0, 0), "t") == 0)
			rc = -EEXIST;
		else if (rvs_pg_val_i64(r, 0, 2) != 1)
			rc = -EDQUOT;
	}
	if (rc && PQstatus(c->pg) == CONNECTION_OK && PQpipelineStatus(c->pg) == PQ_PIPELINE_OFF &&
	    PQtransactionStatus(c->pg) != PQTRANS_IDLE)
		rollback(c->pg);
out:
	rvs_pg_pipe_free(&pp);
	put(s, c);
	return rc;
}

/* One statement (S_Q_TAKE), committed on its own: one round trip. */
static int decode_next_batch(struct rvs_store *s, unsigned part, unsigned nparts,
			     struct rvs_decode_item *items, size_t max)
{
	struct rvs_pg_params p = {0};
	struct conn *c;
	PGresult *r = NULL;
	size_t n = 0;
	int rc;

	if (nparts < 1 || nparts > 16 || part >= nparts || max < 1 || max > INT_MAX)
		return -EINVAL;
	if (!(c = get(s)))
		return -EAGAIN;
	rvs_pg_i64(&p, nparts);
	rvs_pg_i64(&p, part);
	rvs_pg_i64(&p, (int64_t)max);
	rvs_pg_i64(&p, (int64_t)lease_s);
	if ((rc = run(c->pg, S_Q_TAKE, &p, &r)))
		goto out;
	for (int row = 0; row < PQntuples(r) && n < max; row++) {
		struct rvs_decode_item *it = &items[n++];

		memset(it, 0, sizeof *it);
		snprintf(it->trace_id, sizeof it->trace_id, "%s", PQgetvalue(r, row, 0));
		snprintf(it->blob_sha256, sizeof it->blob_sha256, "%s", PQgetvalue(r, row, 1));
		it->lease = strtoull(PQgetvalue(r, row, 2), NULL, 10);
	}
	PQclear(r);
	rc = (int)n;
out:
	put(s, c);
	return rc;
}

/* Every item in one round trip: a pipeline of BEGIN, a statement per item
 * (S_Q_RELEASE for -EAGAIN, else S_Q_FINISH), COMMIT. */
static int decode_finish(struct rvs_store *s, const struct rvs_decode_item *items, size_t n)
{
	struct conn *c = get(s);
	struct rvs_pg_pipe pp = {0};
	size_t failed;
	int rc;

	if (!c)
		return -EAGAIN;
	step(&pp, S_BEGIN, 0);
	for (size_t i = 0; i < n; i++) {
		const struct rvs_decode_item *it = &items[i];
		struct rvs_pg_step *st = step(&pp, it->rc == -EAGAIN ? S_Q_RELEASE : S_Q_FINISH, 0);

		if (!st)
			break;
		rvs_pg_text(&st->p, it->trace_id);
		rvs_pg_i64(&st->p, (int64_t)it->lease);
		if (it->rc == -EAGAIN)
			continue;
		rvs_pg_text(&st->p, it->rc ? "quarantined" : "decoded");
		rvs_pg_text(&st->p, !it->rc ? NULL : it->reason[0] ? it->reason : "unspecified");
	}
	step(&pp, S_COMMIT, 0);
	rc = rvs_pg_pipe_run(c->pg, &pp, 0, &failed, NULL);
	if (rc && failed == pp.n) /* every result read, COMMIT's too: done */
		rc = 0;
	if (rc && PQstatus(c->pg) == CONNECTION_OK && PQpipelineStatus(c->pg) == PQ_PIPELINE_OFF &&
	    PQtransactionStatus(c->pg) != PQTRANS_IDLE)
		rollback(c->pg);
	rvs_pg_pipe_free(&pp);
	put(s, c);
	return rc;
}

static int queue_depth(struct rvs_store *s, uint64_t *out)
{
	char buf[32];
	int rc = lookup(s, S_Q_DEPTH, NULL, buf, sizeof buf);

	if (!rc)
		*out = strtoull(buf, NULL, 10);
	return rc;
}

static int admin_put(struct rvs_store *s, const char *name, unsigned iterations,
		     const uint8_t *salt, size_t saltlen, const uint8_t hash[32])
{
	struct conn *c = get(s);
	struct rvs_pg_params p = {0};
	int rc;

	if (!c)
		return -EAGAIN;
	rvs_pg_text(&p, name);
	rvs_pg_i64(&p, iterations);
	rvs_pg_bytea(&p, salt, saltlen);
	rvs_pg_bytea(&p, hash, 32);
	rc = run0(c->pg, S_ADMIN_PUT, &p);
	put(s, c);
	return rc;
}

static int skip_add(struct rvs_store *s, const struct rvs_skip_rec *k)
{
	struct conn *c = get(s);
	struct rvs_pg_params p = {0};
	int rc;

	if (!c)
		return -EAGAIN;
	rvs_pg_text(&p, k->device_id);
	rvs_pg_bytea(&p, k->report_id, 16);
	rvs_pg_text(&p, k->app_id);
	rvs_pg_text(&p, k->app_version);
	rvs_pg_i64(&p, k->anomaly_kind);
	rvs_pg_i64(&p, k->severity);
	rvs_pg_text(&p, k->reason ? k->reason : "");
	rvs_pg_i64(&p, (int64_t)k->captured_realtime_ns);
	rc = run0(c->pg, S_SKIP_INSERT, &p);
	put(s, c);
	return rc;
}

static int requeue_build_id(struct rvs_store *s, const char *build_id, uint64_t *queued)
{
	struct conn *c = get(s);
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	*queued = 0;
	if (!c)
		return -EAGAIN;
	rvs_pg_text(&p, build_id);
	if ((rc = exec(c->pg, "BEGIN")) || (rc = run(c->pg, S_REQUEUE, &p, &r)))
		goto fail;
	*queued = strtoull(PQcmdTuples(r), NULL, 10);
	PQclear(r);
	if ((rc = run0(c->pg, S_REQUEUE_STATE, &p)) || (rc = exec(c->pg, "COMMIT")))
		goto fail;
	if (*queued)
		wake(c->pg);
	put(s, c);
	return 0;
fail:
	*queued = 0;
	rollback(c->pg);
	put(s, c);
	return rc;
}

/* The operator's requeue, one statement: the quarantine rows whose reason
 * holds $1 (NULL: all) deleted, their uploads back in pending_decode and
 * on the queue (unleased); a NOTIFY wakes the idle decoders. */
static int quarantine_requeue(struct rvs_store *s, const char *reason, uint64_t *queued)
{
	struct rvs_pg_params p = {0};
	struct conn *c = get(s);
	PGresult *r;
	int rc;

	*queued = 0;
	if (!c)
		return -EAGAIN;
	rvs_pg_text(&p, reason);
	rc = rvs_pg_exec(c->pg,
			 "WITH q AS (DELETE FROM quarantine WHERE $1::text IS NULL"
			 " OR strpos(reason, $1::text) > 0 RETURNING trace_id),"
			 " u AS (UPDATE uploads SET state = 'pending_decode'"
			 " WHERE trace_id IN (SELECT trace_id FROM q) RETURNING trace_id)"
			 " INSERT INTO decode_queue (trace_id, enqueued_at)"
			 " SELECT trace_id, extract(epoch FROM now())::bigint FROM u"
			 " ON CONFLICT (trace_id) DO NOTHING",
			 0, &p, &r, NULL);
	if (!rc) {
		*queued = strtoull(PQcmdTuples(r), NULL, 10);
		PQclear(r);
		if (*queued)
			wake(c->pg);
	}
	put(s, c);
	return rc;
}

/* The operator's re-index, one statement: the batch's uploads (trace-id
 * order from $1, $3 of them, without a trace_agg row unless $2) queued
 * (unleased) and back in pending_decode; a NOTIFY wakes the idle decoders. */
static int reindex_queue(struct rvs_store *s, const char *after, int all, size_t max, char last[40],
			 uint64_t *queued)
{
	struct rvs_pg_params p = {0};
	struct conn *c;
	PGresult *r;
	int rc, n;

	*queued = 0;
	last[0] = 0;
	if (max < 1 || max > RVS_REINDEX_MAX || strlen(after) >= 40)
		return -EINVAL;
	if (!(c = get(s)))
		return -EAGAIN;
	rvs_pg_text(&p, after);
	rvs_pg_text(&p, all ? "true" : "false");
	rvs_pg_i64(&p, (int64_t)max);
	rc = rvs_pg_exec(c->pg,
			 "WITH b AS (SELECT u.trace_id FROM uploads u WHERE u.trace_id > $1"
			 " AND u.state = 'decoded' AND u.blob_sha256 IS NOT NULL AND ($2::boolean"
			 " OR NOT EXISTS (SELECT 1 FROM trace_agg a WHERE a.trace_id = u.trace_id))"
			 " ORDER BY u.trace_id LIMIT $3),"
			 " q AS (INSERT INTO decode_queue (trace_id, enqueued_at)"
			 " SELECT trace_id, extract(epoch FROM now())::bigint FROM b"
			 " ON CONFLICT (trace_id) DO NOTHING RETURNING trace_id),"
			 " d AS (UPDATE uploads SET state = 'pending_decode'"
			 " WHERE trace_id IN (SELECT trace_id FROM q) RETURNING trace_id)"
			 " SELECT (SELECT count(*) FROM b), (SELECT max(trace_id) FROM b),"
			 " (SELECT count(*) FROM d)",
			 0, &p, &r, NULL);
	if (!rc) {
		n = (int)strtol(rvs_pg_val(r, 0, 0), NULL, 10);
		if (n)
			snprintf(last, 40, "%s", rvs_pg_val(r, 0, 1));
		*queued = strtoull(rvs_pg_val(r, 0, 2), NULL, 10);
		PQclear(r);
		if (*queued)
			wake(c->pg);
	}
	put(s, c);
	return rc ? rc : n;
}

/* ---- issue 15: the SQL of the other server files (store.h's second block) ---- */

static int retention_delete(struct rvs_store *s, int64_t cutoff, size_t max, char (*blobs)[65],
			    size_t *nblobs)
{
	struct conn *c = get(s);
	int rc;

	*nblobs = 0;
	if (!c)
		return -EAGAIN;
	rc = rvs_pg_part_retention(c->pg, cutoff, max, blobs, nblobs);
	put(s, c);
	return rc;
}

static int blob_referenced(struct rvs_store *s, const char *blob)
{
	struct conn *c = get(s);
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	if (!c)
		return -EAGAIN;
	rvs_pg_text(&p, blob);
	rc = rvs_pg_exec(c->pg, "SELECT 1 FROM uploads WHERE blob_sha256 = $1 LIMIT 1", 0, &p, &r,
			 NULL);
	if (!rc) {
		rc = PQntuples(r) > 0;
		PQclear(r);
	}
	put(s, c);
	return rc;
}

/* A column's text, NULL for SQL NULL. */
/* Runs a read of the fleet page on a pooled connection: *out the rows. */
static int read_rows(struct rvs_store *s, const char *sql, const struct rvs_pg_params *p,
		     PGresult **out)
{
	struct conn *c = get(s);
	int rc;

	if (!c)
		return -EAGAIN;
	rc = rvs_pg_exec(c->pg, sql, 0, p, out, NULL);
	put(s, c);
	return rc;
}

static int fleet_devices(struct rvs_store *s, int64_t since, int manual_kind, unsigned max,
			 int (*cb)(void *arg, const struct rvs_fleet_device *d), void *arg)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc, stop = 0;

	rvs_pg_i64(&p, since);
	rvs_pg_i64(&p, max);
	rvs_pg_i64(&p, manual_kind);
	rc = read_rows(
		s,
		"SELECT d.device_id, d.model, d.os_build, d.arch, d.enrolled_at,"
		" count(u.trace_id),"
		" count(*) FILTER (WHERE u.received_at >= $1 AND COALESCE(u.anomaly_kind, 0) <> "
		"$3),"
		" max(u.received_at),"
		" count(*) FILTER (WHERE u.received_at >= $1 AND COALESCE(u.anomaly_kind, 0) = $3)"
		" FROM devices d LEFT JOIN uploads u ON u.device_id = d.device_id"
		" GROUP BY d.device_id ORDER BY max(u.received_at) DESC NULLS LAST,"
		" d.enrolled_at DESC LIMIT $2",
		&p, &r);
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r) && !stop; i++) {
		struct rvs_fleet_device d = {
			.device_id = rvs_pg_val(r, i, 0),
			.model = rvs_pg_val(r, i, 1),
			.os_build = rvs_pg_val(r, i, 2),
			.arch = rvs_pg_val(r, i, 3),
			.enrolled_at = rvs_pg_val_i64(r, i, 4),
			.uploads = rvs_pg_val_i64(r, i, 5),
			.charged_since = rvs_pg_val_i64(r, i, 6),
			.last_upload_at = rvs_pg_val_i64(r, i, 7),
			.has_last_upload = !PQgetisnull(r, i, 7),
			.manual_since = rvs_pg_val_i64(r, i, 8),
		};
		stop = cb(arg, &d);
	}
	PQclear(r);
	return stop;
}

static int fleet_groups(struct rvs_store *s, int group,
			int (*cb)(void *arg, const char *key, int64_t n, int64_t bytes), void *arg)
{
	static const char *const sql[] = {
		/* Grouped by the week's first second (a Monday, UTC: 345,600 s
		 * is 1970-01-05), integer arithmetic on each upload; the date
		 * text is made for the 26 rows shown only. */
		[RVS_FLEET_WEEKS] =
			"SELECT to_char(to_timestamp(w) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), n, b"
			" FROM (SELECT received_at - ((received_at - 345600) % 604800 + 604800)"
			" % 604800 AS w, count(*) AS n, COALESCE(sum(blob_bytes), 0) AS b"
			" FROM uploads GROUP BY 1) x ORDER BY w DESC LIMIT 26",
		[RVS_FLEET_QUARANTINE] =
			"SELECT reason, count(*), 0 FROM quarantine GROUP BY reason"
			" ORDER BY 2 DESC LIMIT 50",
		[RVS_FLEET_SKIPS] = "SELECT reason, count(*), 0 FROM skips GROUP BY reason"
				    " ORDER BY 2 DESC LIMIT 50",
	};
	PGresult *r;
	int rc, stop = 0;

	if (group < 0 || group > RVS_FLEET_SKIPS)
		return -EINVAL;
	if ((rc = read_rows(s, sql[group], NULL, &r)))
		return rc;
	for (int i = 0; i < PQntuples(r) && !stop; i++)
		stop = cb(arg, rvs_pg_val(r, i, 0), rvs_pg_val_i64(r, i, 1),
			  rvs_pg_val_i64(r, i, 2));
	PQclear(r);
	return stop;
}

static int device_count(struct rvs_store *s, uint64_t *out)
{
	PGresult *r;
	int rc = read_rows(s, "SELECT count(*) FROM devices", NULL, &r);

	if (!rc) {
		*out = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
		PQclear(r);
	}
	return rc;
}

/* Runs one statement for its effect on a pooled connection. */
static int write_text(struct rvs_store *s, const char *sql, const struct rvs_pg_params *p)
{
	struct conn *c = get(s);
	PGresult *r;
	int rc;

	if (!c)
		return -EAGAIN;
	if (!(rc = rvs_pg_exec(c->pg, sql, 0, p, &r, NULL)))
		PQclear(r);
	put(s, c);
	return rc;
}

static int session_get(struct rvs_store *s, const uint8_t id_hash[32], int64_t now, char user[64],
		       char csrf[65])
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	rvs_pg_bytea(&p, id_hash, 32);
	rvs_pg_i64(&p, now);
	rc = read_rows(
		s, "SELECT admin, csrf FROM web_sessions WHERE id_hash = $1 AND expires_at > $2",
		&p, &r);
	if (rc)
		return rc;
	if (PQntuples(r) == 0) {
		rc = -ENOENT;
	} else {
		snprintf(user, 64, "%s", PQgetvalue(r, 0, 0));
		snprintf(csrf, 65, "%s", PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	return rc;
}

static int session_put(struct rvs_store *s, const uint8_t id_hash[32], const char *user,
		       const char *csrf, int64_t now, int64_t expires)
{
	struct rvs_pg_params del = {0}, p = {0};

	rvs_pg_i64(&del, now);
	write_text(s, "DELETE FROM web_sessions WHERE expires_at <= $1", &del);
	rvs_pg_bytea(&p, id_hash, 32);
	rvs_pg_text(&p, user);
	rvs_pg_text(&p, csrf);
	rvs_pg_i64(&p, now);
	rvs_pg_i64(&p, expires);
	return write_text(s,
			  "INSERT INTO web_sessions (id_hash, admin, csrf, created_at, expires_at)"
			  " VALUES ($1, $2, $3, $4, $5)",
			  &p);
}

static int session_delete(struct rvs_store *s, const uint8_t id_hash[32])
{
	struct rvs_pg_params p = {0};

	rvs_pg_bytea(&p, id_hash, 32);
	return write_text(s, "DELETE FROM web_sessions WHERE id_hash = $1", &p);
}

static int sessions_delete_user(struct rvs_store *s, const char *user)
{
	struct rvs_pg_params p = {0};

	rvs_pg_text(&p, user);
	return write_text(s, "DELETE FROM web_sessions WHERE admin = $1", &p);
}

static int admin_get(struct rvs_store *s, const char *name, unsigned *iterations, uint8_t *salt,
		     size_t *saltlen, uint8_t hash[32])
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	if (!utf8_ok(name))
		return -ENOENT; /* no stored name is not UTF-8 */
	rvs_pg_text(&p, name);
	rc = read_rows(s,
		       "SELECT pbkdf2_iterations, encode(salt, 'hex'), encode(hash, 'hex')"
		       " FROM admins WHERE name = $1",
		       &p, &r);
	if (rc)
		return rc;
	if (PQntuples(r) == 0) {
		rc = -ENOENT;
	} else {
		long iter = strtol(PQgetvalue(r, 0, 0), NULL, 10);
		size_t sl = strlen(PQgetvalue(r, 0, 1)) / 2;
		if (iter <= 0 || sl > *saltlen || strlen(PQgetvalue(r, 0, 2)) != 64 ||
		    hex_to_bytes(PQgetvalue(r, 0, 1), salt, sl) ||
		    hex_to_bytes(PQgetvalue(r, 0, 2), hash, 32)) {
			rc = -EBADMSG;
		} else {
			*iterations = (unsigned)iter;
			*saltlen = sl;
		}
	}
	PQclear(r);
	return rc;
}

static int method_alert_put(struct rvs_store *s, const char *method, int64_t threshold_ns)
{
	struct rvs_pg_params p = {0};

	assert(threshold_ns > 0);
	rvs_pg_text(&p, method);
	rvs_pg_i64(&p, threshold_ns);
	return write_text(s,
			  "INSERT INTO method_alerts (method, p95_threshold_ns, created_at)"
			  " VALUES ($1, $2, extract(epoch FROM now())::bigint) ON CONFLICT (method)"
			  " DO UPDATE SET p95_threshold_ns = $2",
			  &p);
}

/* pg_advisory_xact_lock key of campaign changes ("rvcamp"). */
#define CAMPAIGN_LOCK "125852946490736"

static int campaign_change(struct rvs_store *s, int op, const char *id, const char *spec,
			   const char *reason, int64_t now, size_t max_specs,
			   const struct rvs_publish_cb *p)
{
	static const char *const sql[] = {
		[RVS_CAMPAIGN_CREATE] = "INSERT INTO campaigns (id, spec, created_at, updated_at)"
					" VALUES ($1, $2, $3, $3)",
		[RVS_CAMPAIGN_UPDATE] = "UPDATE campaigns SET spec = $2, updated_at = $3"
					" WHERE id = $1 AND ended_at IS NULL",
		[RVS_CAMPAIGN_END] = "UPDATE campaigns SET ended_at = $2, updated_at = $2"
				     " WHERE id = $1 AND ended_at IS NULL",
	};
	struct conn *c = get(s);
	struct rvs_pg_params w = {0}, q = {0}, v = {0};
	PGresult *r = NULL;
	uint64_t version = 0, recorded = 0;
	int rc;

	assert(op >= RVS_CAMPAIGN_CREATE && op <= RVS_CAMPAIGN_END);
	if (!c)
		return -EAGAIN;
	rvs_pg_text(&w, id);
	if (op != RVS_CAMPAIGN_END)
		rvs_pg_text(&w, spec);
	rvs_pg_i64(&w, now);
	if ((rc = exec(c->pg, "BEGIN")) ||
	    (rc = exec(c->pg, "SELECT pg_advisory_xact_lock(" CAMPAIGN_LOCK ")")) ||
	    (rc = rvs_pg_exec(c->pg, sql[op], 0, &w, &r, NULL)))
		goto fail;
	if (op != RVS_CAMPAIGN_CREATE && strcmp(PQcmdTuples(r), "0") == 0)
		rc = -ENOENT;
	PQclear(r);
	rvs_pg_i64(&q, (int64_t)max_specs);
	if (rc || (rc = rvs_pg_exec(c->pg,
				    "SELECT spec FROM campaigns WHERE ended_at IS NULL ORDER BY id"
				    " LIMIT $1",
				    0, &q, &r, NULL)))
		goto fail;
	for (int i = 0; i < PQntuples(r) && !rc; i++)
		rc = p->spec(p->arg, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0));
	PQclear(r);
	if (rc || (rc = rvs_pg_exec(c->pg, "SELECT COALESCE(max(version), 0) FROM policy_versions",
				    0, NULL, &r, NULL)))
		goto fail;
	recorded = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	if ((rc = p->publish(p->arg, recorded, &version)))
		goto fail;
	rvs_pg_i64(&v, (int64_t)version);
	rvs_pg_i64(&v, now);
	rvs_pg_text(&v, reason);
	if ((rc = rvs_pg_exec(c->pg,
			      "INSERT INTO policy_versions (version, published_at, reason)"
			      " VALUES ($1, $2, $3)",
			      0, &v, &r, NULL)))
		goto fail;
	PQclear(r);
	if ((rc = exec(c->pg, "COMMIT")))
		goto fail;
	put(s, c);
	return 0;
fail:
	rollback(c->pg);
	put(s, c);
	return rc;
}

static int anomalies_since(struct rvs_store *s, int64_t since, size_t max,
			   int (*cb)(void *arg, const struct rvs_anomaly_row *r), void *arg)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc, stop = 0;

	rvs_pg_i64(&p, since);
	rvs_pg_i64(&p, (int64_t)max);
	rc = read_rows(s,
		       "SELECT u.device_id, u.app_id, u.app_version, u.model, u.os_build,"
		       " u.anomaly_kind, u.severity FROM uploads u WHERE u.received_at >= $1"
		       " UNION ALL SELECT s.device_id, s.app_id, s.app_version, d.model,"
		       " d.os_build, s.anomaly_kind, s.severity FROM skips s"
		       " LEFT JOIN devices d ON d.device_id = s.device_id WHERE s.received_at >= $1"
		       " LIMIT $2",
		       &p, &r);
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r) && !stop; i++) {
		struct rvs_anomaly_row a = {
			.device_id = rvs_pg_val(r, i, 0),
			.app_id = rvs_pg_val(r, i, 1),
			.app_version = rvs_pg_val(r, i, 2),
			.model = rvs_pg_val(r, i, 3),
			.os_build = rvs_pg_val(r, i, 4),
			.kind = (int)rvs_pg_val_i64(r, i, 5),
			.severity = (int)rvs_pg_val_i64(r, i, 6),
		};
		stop = cb(arg, &a);
	}
	PQclear(r);
	return stop;
}

static int campaigns_list(struct rvs_store *s,
			  int (*cb)(void *arg, const char *spec, size_t len, int64_t created,
				    int64_t updated, int64_t ended),
			  void *arg)
{
	PGresult *r;
	int rc, stop = 0;

	rc = read_rows(s,
		       "SELECT spec, created_at, updated_at, ended_at FROM campaigns"
		       " ORDER BY ended_at IS NOT NULL, updated_at DESC, id",
		       NULL, &r);
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r) && !stop; i++)
		stop = cb(arg, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0),
			  rvs_pg_val_i64(r, i, 1), rvs_pg_val_i64(r, i, 2),
			  PQgetisnull(r, i, 3) ? -1 : rvs_pg_val_i64(r, i, 3));
	PQclear(r);
	return stop;
}

static int policy_version(struct rvs_store *s, uint64_t *out)
{
	PGresult *r;
	int rc = read_rows(s, "SELECT COALESCE(max(version), 0) FROM policy_versions", NULL, &r);

	if (!rc) {
		*out = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
		PQclear(r);
	}
	return rc;
}

/* The skip reports' filter as parameters $1..$3 (NULL: unbounded, any app). */
#define SKIPS_WHERE                                        \
	" WHERE ($1::bigint IS NULL OR received_at >= $1)" \
	" AND ($2::bigint IS NULL OR received_at < $2)"    \
	" AND ($3::text IS NULL OR app_id = $3)"

static int skips_scan(struct rvs_store *s, const struct rvs_skip_filter *f, int recent,
		      int64_t limit, int (*cb)(void *arg, const struct rvs_skip_row *r), void *arg)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc, stop = 0;

	if (f->has_since)
		rvs_pg_i64(&p, f->since);
	else
		rvs_pg_text(&p, NULL);
	if (f->has_until)
		rvs_pg_i64(&p, f->until);
	else
		rvs_pg_text(&p, NULL);
	rvs_pg_text(&p, f->app);
	if (recent)
		rvs_pg_i64(&p, limit);
	rc = read_rows(
		s,
		recent ? "SELECT device_id, app_id, app_version, anomaly_kind, severity,"
			 " reason, received_at, captured_realtime_ns FROM skips" SKIPS_WHERE
			 " ORDER BY received_at DESC, seq DESC LIMIT $4"
		       : "SELECT reason, anomaly_kind, count(*) AS count FROM skips" SKIPS_WHERE
			 " GROUP BY reason, anomaly_kind ORDER BY count DESC,"
			 " reason COLLATE \"C\", anomaly_kind NULLS FIRST",
		&p, &r);
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r) && !stop; i++) {
		struct rvs_skip_row k = {0};
		if (recent) {
			k.device_id = rvs_pg_val(r, i, 0);
			k.app_id = rvs_pg_val(r, i, 1);
			k.app_version = rvs_pg_val(r, i, 2);
			k.anomaly_kind = rvs_pg_val_i64(r, i, 3);
			k.has_kind = !PQgetisnull(r, i, 3);
			k.severity = rvs_pg_val_i64(r, i, 4);
			k.has_severity = !PQgetisnull(r, i, 4);
			k.reason = rvs_pg_val(r, i, 5);
			k.received_at = rvs_pg_val_i64(r, i, 6);
			k.captured_realtime_ns = rvs_pg_val_i64(r, i, 7);
			k.has_captured = !PQgetisnull(r, i, 7);
		} else {
			k.reason = rvs_pg_val(r, i, 0);
			k.anomaly_kind = rvs_pg_val_i64(r, i, 1);
			k.has_kind = !PQgetisnull(r, i, 1);
			k.count = rvs_pg_val_i64(r, i, 2);
		}
		stop = cb(arg, &k);
	}
	PQclear(r);
	return stop;
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

static int jank_put(struct rvs_store *s, const char *device_id, const struct rvs_jank_rec *rows,
		    size_t n)
{
	struct conn *c = get(s);
	int rc;

	if (!c)
		return -EAGAIN;
	rc = exec(c->pg, "BEGIN");
	for (size_t i = 0; i < n && !rc; i++) {
		struct rvs_pg_params p = {0};

		rvs_pg_text(&p, device_id);
		rvs_pg_text(&p, rows[i].app_id);
		rvs_pg_text(&p, rows[i].app_version ? rows[i].app_version : "");
		rvs_pg_i64(&p, rows[i].day);
		rvs_pg_i64(&p, rows[i].frames);
		rvs_pg_i64(&p, rows[i].late);
		rc = run0(c->pg, S_JANK_PUT, &p);
	}
	if (!rc)
		rc = exec(c->pg, "COMMIT");
	if (rc)
		rollback(c->pg);
	put(s, c);
	return rc;
}

static int jank_by_app(struct rvs_store *s, int64_t from_day, int64_t to_day, int64_t limit,
		       int (*cb)(void *arg, const struct rvs_jank_app_row *r), void *arg)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc, stop = 0;

	rvs_pg_i64(&p, from_day);
	rvs_pg_i64(&p, to_day);
	rvs_pg_i64(&p, limit);
	rc = read_rows(s,
		       /* store_sqlite.c's: per (app, device) first, the
			* window's uploads per app in one pass. */
		       "SELECT j.app_id, sum(j.f)::bigint, sum(j.l)::bigint, count(*),"
		       " coalesce(max(u.n), 0) FROM (SELECT app_id, device_id, sum(frames) AS f,"
		       " sum(late) AS l FROM jank_counts WHERE day >= $1 AND day <= $2"
		       " GROUP BY app_id, device_id) j LEFT JOIN (SELECT app_id, count(*) AS n"
		       " FROM uploads WHERE received_at >= $1::bigint * 86400"
		       " AND received_at < ($2::bigint + 1) * 86400 GROUP BY app_id) u"
		       " ON u.app_id = j.app_id GROUP BY j.app_id"
		       " ORDER BY CASE WHEN sum(j.f) > 0 THEN sum(j.l)::double precision"
		       " / sum(j.f) ELSE 0 END DESC, j.app_id COLLATE \"C\" LIMIT $3",
		       &p, &r);
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r) && !stop; i++) {
		struct rvs_jank_app_row k = {
			.app_id = rvs_pg_val(r, i, 0),
			.frames = rvs_pg_val_i64(r, i, 1),
			.late = rvs_pg_val_i64(r, i, 2),
			.devices = rvs_pg_val_i64(r, i, 3),
			.traces = rvs_pg_val_i64(r, i, 4),
		};
		stop = cb(arg, &k);
	}
	PQclear(r);
	return stop;
}

static int jank_app_days(struct rvs_store *s, const char *app, int64_t from_day, int64_t to_day,
			 int (*cb)(void *arg, int64_t day, int64_t frames, int64_t late), void *arg)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc, stop = 0;

	rvs_pg_i64(&p, from_day);
	rvs_pg_i64(&p, to_day);
	rvs_pg_text(&p, app);
	rc = read_rows(s,
		       "SELECT day, sum(frames), sum(late) FROM jank_counts"
		       " WHERE day >= $1 AND day <= $2 AND app_id = $3 GROUP BY day ORDER BY day",
		       &p, &r);
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r) && !stop; i++)
		stop = cb(arg, rvs_pg_val_i64(r, i, 0), rvs_pg_val_i64(r, i, 1),
			  rvs_pg_val_i64(r, i, 2));
	PQclear(r);
	return stop;
}

static int jank_versions(struct rvs_store *s, int64_t from_day, int64_t to_day, int64_t max_rows,
			 int (*cb)(void *arg, const char *app, const char *version, int64_t frames,
				   int64_t late),
			 void *arg)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc, stop = 0;

	rvs_pg_i64(&p, from_day);
	rvs_pg_i64(&p, to_day);
	rvs_pg_i64(&p, max_rows);
	rc = read_rows(s,
		       "SELECT app_id, app_version, sum(frames), sum(late) FROM jank_counts"
		       " WHERE day >= $1 AND day <= $2 GROUP BY app_id, app_version"
		       " ORDER BY app_id COLLATE \"C\", sum(frames) DESC,"
		       " app_version COLLATE \"C\" LIMIT $3",
		       &p, &r);
	if (rc)
		return rc;
	for (int i = 0; i < PQntuples(r) && !stop; i++)
		stop = cb(arg, rvs_pg_val(r, i, 0), rvs_pg_val(r, i, 1), rvs_pg_val_i64(r, i, 2),
			  rvs_pg_val_i64(r, i, 3));
	PQclear(r);
	return stop;
}

static int jank_expire(struct rvs_store *s, int64_t before_day)
{
	struct conn *c = get(s);
	struct rvs_pg_params p = {0};
	int rc;

	if (!c)
		return -EAGAIN;
	rvs_pg_i64(&p, before_day);
	rc = rvs_pg_exec(c->pg, "DELETE FROM jank_counts WHERE day < $1", 0, &p, NULL, NULL);
	put(s, c);
	return rc;
}

static int method_alert_get(struct rvs_store *s, const char *method, int64_t *ns)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	if (!utf8_ok(method))
		return -ENOENT; /* as method_read: no stored name is not UTF-8 */
	rvs_pg_text(&p, method);
	rc = read_rows(s, "SELECT p95_threshold_ns FROM method_alerts WHERE method = $1", &p, &r);
	if (rc)
		return rc;
	if (PQntuples(r) == 0)
		rc = -ENOENT;
	else
		*ns = rvs_pg_val_i64(r, 0, 0);
	PQclear(r);
	return rc;
}

/* ---- issue 15 (sql15b): the JSON API's reads ---- */

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
				   " LEFT JOIN quarantine q USING (trace_id) WHERE u.trace_id = $1",
		[RVS_TRACE_TOP_SELF] = "SELECT self_rank AS rank, method, calls, self_ns, incl_ns"
				       " FROM trace_methods WHERE trace_id = $1 AND self_rank IS"
				       " NOT NULL ORDER BY self_rank",
		[RVS_TRACE_CHAINS] = ("SELECT kind, rank, signature, chain, depth, self_ns, incl_ns"
				      " FROM trace_chains WHERE trace_id = $1 ORDER BY kind, rank"),
	};
	struct rvs_pg_params p = {0};
	int rc = 0;

	rvs_pg_text(&p, trace_id);
	for (int part = RVS_TRACE_HEAD; part <= RVS_TRACE_CHAINS && !rc; part++) {
		PGresult *r;
		if ((rc = read_rows(s, sql[part], &p, &r)))
			break;
		if (part == RVS_TRACE_HEAD && PQntuples(r) == 0)
			rc = -ENOENT;
		else
			rc = rvs_pg_rows_out(r, 0, PQntuples(r), part, cb, arg);
		PQclear(r);
	}
	return rc;
}

/* The totals migration 5's trigger maintains, each with its newest 200
 * per-week counts (one statement: the counts rows follow their total). */
static int signatures_read(struct rvs_store *s, int64_t offset, int64_t limit, rvs_row_fn cb,
			   void *arg)
{
	struct rvs_pg_params p = {0};
	PGresult *top, *counts;
	int rc;

	rvs_pg_i64(&p, limit);
	rvs_pg_i64(&p, offset);
	if ((rc = read_rows(s,
			    "SELECT signature, traces, chain FROM signatures"
			    " ORDER BY traces DESC, signature LIMIT $1 OFFSET $2",
			    &p, &top)))
		return rc;
	for (int i = 0; i < PQntuples(top) && !rc; i++) {
		struct rvs_pg_params q = {0};
		rvs_pg_text(&q, PQgetvalue(top, i, 0));
		if ((rc = rvs_pg_rows_out(top, i, i + 1, 0, cb, arg)) ||
		    (rc = read_rows(s,
				    "SELECT week * 604800 AS week_start, app_version, traces"
				    " FROM signature_counts WHERE signature = $1"
				    " ORDER BY week DESC, app_version LIMIT 200",
				    &q, &counts)))
			break;
		rc = rvs_pg_rows_out(counts, 0, PQntuples(counts), 1, cb, arg);
		PQclear(counts);
	}
	PQclear(top);
	return rc;
}

static int versions_read(struct rvs_store *s, const char *app, rvs_row_fn cb, void *arg)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	rvs_pg_text(&p, app);
	if ((rc = read_rows(s,
			    "SELECT DISTINCT app_id, app_version FROM agg_buckets"
			    " WHERE ($1::text IS NULL OR app_id = $1) AND app_version != ''"
			    " ORDER BY app_id, app_version",
			    &p, &r)))
		return rc;
	rc = rvs_pg_rows_out(r, 0, PQntuples(r), 0, cb, arg);
	PQclear(r);
	return rc;
}

static int traces_list(struct rvs_store *s, const struct rvs_trace_filter *f, rvs_row_fn cb,
		       void *arg)
{
	const char *const text[] = {f->app, f->version, f->model, f->os_build};
	const int64_t num[] = {f->kind, f->min_severity, f->since, f->until};
	const int has[] = {f->has_kind, f->has_min_severity, f->has_since, f->has_until};
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	/* Every filter must hold: one that is not UTF-8 matches no stored
	 * text, so no row (PostgreSQL would refuse it as a parameter). */
	for (int i = 0; i < 4; i++)
		if (text[i] && !utf8_ok(text[i]))
			return 0;
	if ((f->signature && !utf8_ok(f->signature)) || (f->method && !utf8_ok(f->method)))
		return 0;
	for (int i = 0; i < 4; i++)
		rvs_pg_text(&p, text[i]);
	for (int i = 0; i < 4; i++) {
		if (has[i])
			rvs_pg_i64(&p, num[i]);
		else
			rvs_pg_text(&p, NULL);
	}
	rvs_pg_text(&p, f->signature);
	rvs_pg_text(&p, f->method);
	if (f->has_cursor)
		rvs_pg_i64(&p, f->cursor);
	else
		rvs_pg_text(&p, NULL);
	rvs_pg_i64(&p, f->limit);
	/* The filter ($1..$10); the list adds its keyset cursor and limit. */
#define PG_LIST_WHERE                                                                       \
	" ($1::text IS NULL OR t.app_id = $1) AND ($2::text IS NULL OR t.app_version = $2)" \
	" AND ($3::text IS NULL OR t.model = $3) AND ($4::text IS NULL OR t.os_build = $4)" \
	" AND ($5::bigint IS NULL OR t.anomaly_kind = $5)"                                  \
	" AND ($6::bigint IS NULL OR t.severity >= $6)"                                     \
	" AND ($7::bigint IS NULL OR t.received_at >= $7)"                                  \
	" AND ($8::bigint IS NULL OR t.received_at < $8)"                                   \
	" AND ($9::text IS NULL OR t.anomaly_signature = $9 OR t.trace_id IN"               \
	"  (SELECT c.trace_id FROM trace_chains c WHERE c.signature = $9))"                 \
	" AND ($10::text IS NULL OR t.trace_id IN (SELECT m.trace_id FROM trace_methods m"  \
	"  WHERE m.method = $10))"
	if (f->count) {
		/* Its matches counted up to the limit ($11 here). */
		p.n = 10;
		rvs_pg_i64(&p, f->limit);
		rc = read_rows(
			s,
			"SELECT count(*) AS total FROM (SELECT 1 FROM traces t WHERE" PG_LIST_WHERE
			" LIMIT $11) x",
			&p, &r);
	} else {
		rc = read_rows(
			s,
			"SELECT t.seq AS rowid_, t.trace_id, t.app_id, t.app_version, t.model,"
			" t.os_build, t.anomaly_kind, t.severity, t.captured_at_ns,"
			" t.received_at, t.anomaly_name, t.anomaly_signature, t.duration_ns"
			" FROM traces t WHERE" PG_LIST_WHERE
			" AND ($11::bigint IS NULL OR t.seq < $11)"
			" ORDER BY t.seq DESC LIMIT $12",
			&p, &r);
	}
#undef PG_LIST_WHERE
	if (rc)
		return rc;
	rc = rvs_pg_rows_out(r, 0, PQntuples(r), 0, cb, arg);
	PQclear(r);
	return rc;
}

static int method_read(struct rvs_store *s, int part, const char *method, int64_t arg,
		       int64_t count, const char *app, const char *version, rvs_row_fn cb,
		       void *cbarg)
{
	/* The filter, as sqlite's: $3 app, $4 app version (NULL: any). */
	int filtered = (app || version) && part != RVS_METHOD_COUNT &&
		       part != RVS_METHOD_SELF_NTH && part != RVS_METHOD_INCL_NTH;
	const char *filters = filtered ? " AND ($3::text IS NULL OR t.app_id = $3)"
					 " AND ($4::text IS NULL OR t.app_version = $4)"
				       : "";
	char sql[768];
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	(void)count; /* PostgreSQL plans the newest-first reads itself */
	switch (part) {
	case RVS_METHOD_COUNT:
		snprintf(sql, sizeof sql,
			 "SELECT count(*) AS n FROM trace_methods WHERE method = $1");
		break;
	case RVS_METHOD_SELF_NTH:
	case RVS_METHOD_INCL_NTH:
		snprintf(sql, sizeof sql,
			 "SELECT %s FROM trace_methods WHERE method = $1"
			 " ORDER BY %s LIMIT 1 OFFSET $2",
			 part == RVS_METHOD_SELF_NTH ? "self_ns" : "incl_ns",
			 part == RVS_METHOD_SELF_NTH ? "self_ns" : "incl_ns");
		break;
	case RVS_METHOD_BY_VERSION:
	case RVS_METHOD_BY_MODEL:
		snprintf(sql, sizeof sql,
			 "SELECT v, s, i, cs, ci FROM (SELECT COALESCE(t.%s, '') AS v,"
			 " m.self_ns AS s, m.incl_ns AS i, m.cpu_self_ns AS cs, m.cpu_incl_ns AS ci"
			 " FROM trace_methods m JOIN traces t"
			 " USING (trace_id) WHERE m.method = $1%s ORDER BY t.seq DESC LIMIT $2) x"
			 " ORDER BY 1",
			 part == RVS_METHOD_BY_MODEL ? "model" : "app_version", filters);
		break;
	case RVS_METHOD_TRACES:
		snprintf(sql, sizeof sql,
			 "SELECT t.trace_id, t.app_id, t.app_version, t.model,"
			 " t.received_at, m.calls, m.self_ns, m.incl_ns FROM"
			 " trace_methods m JOIN traces t USING (trace_id)"
			 " WHERE m.method = $1%s ORDER BY t.seq DESC LIMIT $2",
			 filters);
		break;
	case RVS_METHOD_SAMPLES:
		/* $2 unused: a placeholder so the filter stays $3 / $4. */
		snprintf(sql, sizeof sql,
			 "SELECT m.self_ns AS s, m.incl_ns AS i FROM trace_methods m JOIN traces t"
			 " USING (trace_id) WHERE m.method = $1 AND $2::bigint IS NULL%s",
			 filters);
		break;
	/* Unfiltered: migration 17's partial index alone.  $2 unused, as
	 * for SAMPLES; sums as bigint (sum of bigint is numeric). */
	case RVS_METHOD_CPU:
		snprintf(sql, sizeof sql,
			 "SELECT count(*) AS n, COALESCE(sum(m.self_ns), 0)::bigint AS s,"
			 " COALESCE(sum(m.incl_ns), 0)::bigint AS i,"
			 " COALESCE(sum(m.cpu_self_ns), 0)::bigint AS cs,"
			 " COALESCE(sum(m.cpu_incl_ns), 0)::bigint AS ci FROM trace_methods m%s"
			 " WHERE m.method = $1 AND m.cpu_self_ns IS NOT NULL"
			 " AND $2::bigint IS NULL%s",
			 filtered ? " JOIN traces t USING (trace_id)" : "", filters);
		break;
	default:
		assert(!"no such method_read part");
		return -EINVAL;
	}
	/* A name that is not UTF-8 matches no stored one (PostgreSQL would
	 * refuse it as a parameter; sqlite compares it and finds nothing):
	 * NULL equals nothing either. */
	rvs_pg_text(&p, utf8_ok(method) ? method : NULL);
	if (part == RVS_METHOD_SAMPLES || part == RVS_METHOD_CPU)
		rvs_pg_text(&p, NULL);
	else if (part != RVS_METHOD_COUNT)
		rvs_pg_i64(&p, arg);
	if (*filters) {
		rvs_pg_text(&p, app);
		rvs_pg_text(&p, version);
	}
	if ((rc = read_rows(s, sql, &p, &r)))
		return rc;
	rc = rvs_pg_rows_out(r, 0, PQntuples(r), 0, cb, cbarg);
	PQclear(r);
	return rc;
}

/* As sqlite's: the week is date_trunc's (Monday, UTC); $2 the wanted
 * signatures as an array literal, NULL for all. */
static int signatures_weekly(struct rvs_store *s, int64_t since, const char *const *sigs,
			     size_t nsigs, rvs_row_fn cb, void *arg)
{
	char list[2 + 200 * 17];
	size_t len = 0;
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	assert(nsigs <= 200);
	len += (size_t)snprintf(list, sizeof list, "{");
	for (size_t i = 0; i < nsigs; i++) {
		assert(strlen(sigs[i]) == 16 && strspn(sigs[i], "0123456789abcdef") == 16);
		len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? "," : "",
					sigs[i]);
	}
	snprintf(list + len, sizeof list - len, "}");
	rvs_pg_i64(&p, since);
	rvs_pg_text(&p, nsigs ? list : NULL);
	rc = read_rows(s,
		       "WITH s AS (SELECT t.received_at, t.app_version,"
		       " COALESCE(t.anomaly_signature, c.signature) AS sig FROM traces t"
		       " LEFT JOIN trace_chains c ON c.trace_id = t.trace_id AND c.kind = 'top'"
		       " AND c.rank = 1 WHERE t.received_at >= $1)"
		       " SELECT sig AS signature,"
		       " to_char(date_trunc('week', to_timestamp(received_at) AT TIME ZONE 'UTC'),"
		       " 'YYYY-MM-DD') AS week, app_version, count(*) AS traces FROM s"
		       " WHERE sig IS NOT NULL AND ($2::text[] IS NULL OR sig = ANY($2::text[]))"
		       " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 NULLS FIRST",
		       &p, &r);
	if (rc)
		return rc;
	rc = rvs_pg_rows_out(r, 0, PQntuples(r), 0, cb, arg);
	PQclear(r);
	return rc;
}

/* ---- issue 15 (sql15b): the decoded-trace index, on lanes of their own
 * (store_pg_index.c) opened on this store's database. ---- */
static int index_lane_open(struct rvs_store *s, struct rvs_index_lane **out)
{
	return rvs_pg_index_open(s->dsn, out);
}

static int wake_open(struct rvs_store *s, struct rvs_wake **out)
{
	return rvs_pg_wake_open(s->dsn, out);
}

static int trace_capture(struct rvs_store *s, const char *trace_id, char blob[65], int *compression,
			 uint64_t *payload_size)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	rvs_pg_text(&p, trace_id);
	rc = read_rows(s,
		       "SELECT blob_sha256, coalesce(compression, 0), coalesce(payload_size, 0)"
		       " FROM uploads WHERE trace_id = $1 AND blob_sha256 IS NOT NULL AND (state ="
		       " 'decoded' OR (state = 'pending_decode' AND EXISTS (SELECT 1 FROM traces t"
		       " WHERE t.trace_id = $1)))",
		       &p, &r);
	if (rc)
		return rc;
	if (PQntuples(r) == 1) {
		snprintf(blob, 65, "%s", PQgetvalue(r, 0, 0));
		*compression = (int)strtol(PQgetvalue(r, 0, 1), NULL, 10);
		*payload_size = strtoull(PQgetvalue(r, 0, 2), NULL, 10);
	} else {
		rc = -ENOENT;
	}
	PQclear(r);
	return rc;
}

/* ---- accounts' roles, disabling, the audit log ------------------ */

#define ROLE_OF "CASE role WHEN 'viewer' THEN 1 WHEN 'author' THEN 2 ELSE 3 END"

static int user_get(struct rvs_store *s, const char *name, int *role, int *disabled)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	if (!utf8_ok(name))
		return -ENOENT; /* no stored name is not UTF-8 */
	rvs_pg_text(&p, name);
	rc = read_rows(s, "SELECT " ROLE_OF ", disabled::int FROM admins WHERE name = $1", &p, &r);
	if (rc)
		return rc;
	if (PQntuples(r) == 0) {
		rc = -ENOENT;
	} else {
		*role = (int)rvs_pg_val_i64(r, 0, 0);
		*disabled = rvs_pg_val_i64(r, 0, 1) != 0;
	}
	PQclear(r);
	return rc;
}

static int user_set(struct rvs_store *s, const char *name, int role, int disabled)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	assert(role <= 0 || rvs_role_name(role));
	rvs_pg_text(&p, name);
	rvs_pg_text(&p, role > 0 ? rvs_role_name(role) : NULL);
	rvs_pg_text(&p, disabled < 0 ? NULL : disabled ? "true" : "false");
	rc = read_rows(s,
		       "UPDATE admins SET role = coalesce($2, role),"
		       " disabled = coalesce($3::boolean, disabled) WHERE name = $1 RETURNING name",
		       &p, &r);
	if (rc)
		return rc;
	rc = PQntuples(r) ? 0 : -ENOENT;
	PQclear(r);
	return rc;
}

static int users_list(struct rvs_store *s,
		      int (*cb)(void *arg, const char *name, int role, int disabled,
				int64_t created),
		      void *arg)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc, stop = 0;

	rc = read_rows(s,
		       "SELECT name, " ROLE_OF ", disabled::int, created_at FROM admins"
		       " ORDER BY name",
		       &p, &r);
	if (rc)
		return rc;
	for (int i = 0; !stop && i < PQntuples(r); i++)
		stop = cb(arg, PQgetvalue(r, i, 0), (int)rvs_pg_val_i64(r, i, 1),
			  rvs_pg_val_i64(r, i, 2) != 0, rvs_pg_val_i64(r, i, 3));
	PQclear(r);
	return stop;
}

static int audit_add(struct rvs_store *s, int64_t at, const char *actor, const char *action,
		     const char *target, const char *detail)
{
	struct rvs_pg_params p = {0};

	rvs_pg_i64(&p, at);
	rvs_pg_text(&p, actor);
	rvs_pg_text(&p, action);
	rvs_pg_text(&p, target);
	rvs_pg_text(&p, detail);
	return write_text(s,
			  "INSERT INTO audit_log (at, actor, action, target, detail)"
			  " VALUES ($1, $2, $3, $4, $5)",
			  &p);
}

static int audit_list(struct rvs_store *s, const struct rvs_audit_filter *f,
		      int (*cb)(void *arg, const struct rvs_audit_row *r), void *arg)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc, stop = 0;

	rvs_pg_text(&p, f->actor);
	rvs_pg_text(&p, f->action);
	rvs_pg_opt_i64(&p, f->has_since, f->since);
	rvs_pg_opt_i64(&p, f->has_until, f->until);
	rvs_pg_opt_i64(&p, f->before_id > 0, f->before_id);
	rvs_pg_i64(&p, (int64_t)f->limit);
	rc = read_rows(s,
		       "SELECT id, at, actor, action, target, detail FROM audit_log"
		       " WHERE ($1::text IS NULL OR actor = $1)"
		       " AND ($2::text IS NULL OR action = $2)"
		       " AND ($3::bigint IS NULL OR at >= $3) AND ($4::bigint IS NULL OR at < $4)"
		       " AND ($5::bigint IS NULL OR id < $5)"
		       " ORDER BY id DESC LIMIT $6",
		       &p, &r);
	if (rc)
		return rc;
	for (int i = 0; !stop && i < PQntuples(r); i++) {
		struct rvs_audit_row row = {rvs_pg_val_i64(r, i, 0), rvs_pg_val_i64(r, i, 1),
					    PQgetvalue(r, i, 2),     PQgetvalue(r, i, 3),
					    PQgetvalue(r, i, 4),     PQgetvalue(r, i, 5)};
		stop = cb(arg, &row);
	}
	PQclear(r);
	return stop;
}

/* The first column of read_rows(sql, p)'s only row into *out. */
static int count_of(struct rvs_store *s, const char *sql, const struct rvs_pg_params *p,
		    int64_t *out)
{
	PGresult *r;
	int rc = read_rows(s, sql, p, &r);

	if (rc)
		return rc;
	if (PQntuples(r) == 1)
		*out = rvs_pg_val_i64(r, 0, 0);
	else
		rc = -EIO;
	PQclear(r);
	return rc;
}

static int signatures_total(struct rvs_store *s, int64_t *out)
{
	struct rvs_pg_params p = {0};
	return count_of(s, "SELECT count(*) FROM signatures", &p, out);
}

static int audit_total(struct rvs_store *s, const struct rvs_audit_filter *f, int64_t cap,
		       int64_t *out)
{
	struct rvs_pg_params p = {0};

	rvs_pg_text(&p, f->actor);
	rvs_pg_text(&p, f->action);
	rvs_pg_opt_i64(&p, f->has_since, f->since);
	rvs_pg_opt_i64(&p, f->has_until, f->until);
	rvs_pg_i64(&p, cap);
	return count_of(s,
			"SELECT count(*) FROM (SELECT 1 FROM audit_log"
			" WHERE ($1::text IS NULL OR actor = $1)"
			" AND ($2::text IS NULL OR action = $2)"
			" AND ($3::bigint IS NULL OR at >= $3) AND ($4::bigint IS NULL OR at < $4)"
			" LIMIT $5) x",
			&p, out);
}

static int token_add(struct rvs_store *s, const char *id, const uint8_t hash[32], const char *owner,
		     const char *name, int64_t now)
{
	struct rvs_pg_params p = {0};

	rvs_pg_text(&p, id);
	rvs_pg_bytea(&p, hash, 32);
	rvs_pg_text(&p, owner);
	rvs_pg_text(&p, name);
	rvs_pg_i64(&p, now);
	return write_text(s,
			  "INSERT INTO api_tokens (id, hash, owner, name, created_at)"
			  " VALUES ($1, $2, $3, $4, $5)",
			  &p);
}

static int token_auth(struct rvs_store *s, const uint8_t hash[32], int64_t now, char owner[64],
		      int *role)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	rvs_pg_bytea(&p, hash, 32);
	rvs_pg_i64(&p, now);
	rc = read_rows(s,
		       "UPDATE api_tokens t SET last_used = $2 FROM admins a"
		       " WHERE t.hash = $1 AND t.revoked_at IS NULL AND a.name = t.owner"
		       " AND NOT a.disabled"
		       " RETURNING t.owner, CASE a.role WHEN 'viewer' THEN 1 WHEN 'author'"
		       " THEN 2 ELSE 3 END",
		       &p, &r);
	if (rc)
		return rc;
	if (PQntuples(r) == 0) {
		rc = -ENOENT;
	} else {
		snprintf(owner, 64, "%s", PQgetvalue(r, 0, 0));
		*role = (int)rvs_pg_val_i64(r, 0, 1);
	}
	PQclear(r);
	return rc;
}

static int token_revoke(struct rvs_store *s, const char *owner, const char *id, int64_t now)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc;

	rvs_pg_i64(&p, now);
	rvs_pg_text(&p, id);
	rvs_pg_text(&p, owner);
	rc = read_rows(s,
		       "UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND owner = $3"
		       " AND revoked_at IS NULL RETURNING id",
		       &p, &r);
	if (rc)
		return rc;
	rc = PQntuples(r) ? 0 : -ENOENT;
	PQclear(r);
	return rc;
}

static int tokens_list(struct rvs_store *s, const char *owner,
		       int (*cb)(void *arg, const char *id, const char *name, int64_t created,
				 int64_t last_used, int64_t revoked),
		       void *arg)
{
	struct rvs_pg_params p = {0};
	PGresult *r;
	int rc, stop = 0;

	rvs_pg_text(&p, owner);
	rc = read_rows(s,
		       "SELECT id, name, created_at, coalesce(last_used, -1),"
		       " coalesce(revoked_at, -1) FROM api_tokens WHERE owner = $1"
		       " ORDER BY created_at DESC, id DESC",
		       &p, &r);
	if (rc)
		return rc;
	for (int i = 0; !stop && i < PQntuples(r); i++)
		stop = cb(arg, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), rvs_pg_val_i64(r, i, 2),
			  rvs_pg_val_i64(r, i, 3), rvs_pg_val_i64(r, i, 4));
	PQclear(r);
	return stop;
}

/* ---- regressions and webhook deliveries, on a connection of
 * their own (store_pg_regress.c) opened on this store's database. ---- */
static int regress_open(struct rvs_store *s, struct rvs_regress_db **out)
{
	return rvs_pg_regress_open(s->dsn, out);
}

/* ---- what the aggregate and search reads borrow (store_agg.h) ---- */
/* ---- the aggregate and search reads (store_pg_agg.c, store_pg_search.c),
 * lent this store's pooled connections ---- */
static PGconn *pool_get(struct rvs_store *s, void **handle)
{
	struct conn *c = get(s);
	*handle = c;
	return c ? c->pg : NULL;
}

static void pool_put(struct rvs_store *s, void *handle)
{
	put(s, handle);
}

static int agg_read(struct rvs_store *s, const struct rvs_agg_filter *f, size_t nsides,
		    const struct rvs_agg_cb *cb, void *arg)
{
	const struct rvs_pg_pool pool = {pool_get, pool_put, s};
	return rvs_pg_agg_read(&pool, f, nsides, cb, arg);
}

static int traces_sorted(struct rvs_store *s, const struct rvs_sorted_query *q, rvs_row_fn cb,
			 void *arg)
{
	const struct rvs_pg_pool pool = {pool_get, pool_put, s};
	return rvs_pg_traces_sorted(&pool, q, cb, arg);
}

static int issues_read(struct rvs_store *s, const struct rvs_issue_filter *f,
		       int (*cb)(void *arg, int part, const struct rvs_issue_row *r), void *arg)
{
	const struct rvs_pg_pool pool = {pool_get, pool_put, s};
	return rvs_pg_issues_read(&pool, f, cb, arg);
}

static int heatmap_read(struct rvs_store *s, const struct rvs_heatmap_filter *f,
			int (*cb)(void *arg, int64_t received_at, int64_t duration_ns), void *arg)
{
	const struct rvs_pg_pool pool = {pool_get, pool_put, s};
	return rvs_pg_heatmap_read(&pool, f, cb, arg);
}

static int heaviest_read(struct rvs_store *s, const struct rvs_agg_filter *f, int64_t node,
			 int by_self, int64_t limit,
			 int (*cb)(void *arg, const struct rvs_heavy_row *r), void *arg)
{
	const struct rvs_pg_pool pool = {pool_get, pool_put, s};
	return rvs_pg_heaviest_read(&pool, f, node, by_self, limit, cb, arg);
}

static int trend_read(struct rvs_store *s, const struct rvs_trend_filter *f,
		      int (*cb)(void *arg, const struct rvs_trend_row *r), void *arg, int *cut)
{
	const struct rvs_pg_pool pool = {pool_get, pool_put, s};
	return rvs_pg_trend_read(&pool, f, cb, arg, cut);
}

static int search_scan(struct rvs_store *s, const struct rvs_search_scan *q,
		       int (*chunk)(void *arg, int64_t top, int64_t *hi, int64_t *lo),
		       rvs_row_fn row, void *arg)
{
	const struct rvs_pg_pool pool = {pool_get, pool_put, s};
	return rvs_pg_search_scan(&pool, q, chunk, row, arg);
}

const struct rvs_store_ops rvs_store_pg = {
	.name = "postgresql",
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
	.index_lane_close = rvs_pg_index_close,
	.index_upload_meta = rvs_pg_index_upload_meta,
	.index_upload_metas = rvs_pg_index_upload_metas,
	.index_write = rvs_pg_index_write,
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
	.regress_close = rvs_pg_regress_close,
	.regress_sides = rvs_pg_regress_sides,
	.regress_versions = rvs_pg_regress_versions,
	.regress_run_get = rvs_pg_regress_run_get,
	.regress_run_put = rvs_pg_regress_run_put,
	.regress_runs_list = rvs_pg_regress_runs_list,
	.webhook_enqueue = rvs_pg_webhook_enqueue,
	.webhook_claim = rvs_pg_webhook_claim,
	.webhook_record = rvs_pg_webhook_record,
	.webhook_list = rvs_pg_webhook_list,
	.webhook_pending = rvs_pg_webhook_pending,
	/* decode wake-ups */
	.wake_open = wake_open,
	.wake_fd = rvs_pg_wake_fd,
	.wake_drain = rvs_pg_wake_drain,
	.wake_close = rvs_pg_wake_close,
	/* aggregates, worst traces, issues, chain search */
	.agg_read = agg_read,
	.traces_sorted = traces_sorted,
	.issues_read = issues_read,
	.search_scan = search_scan,
	.trend_read = trend_read,
	.alert_rule_add = rvs_pg_alert_rule_add,
	.alert_rule_delete = rvs_pg_alert_rule_delete,
	.alert_rules_list = rvs_pg_alert_rules_list,
	.alert_rule_update = rvs_pg_alert_rule_update,
	.alert_counts = rvs_pg_alert_counts,
	.heatmap_read = heatmap_read,
	.heaviest_read = heaviest_read,
	.jank_put = jank_put,
	.jank_by_app = jank_by_app,
	.jank_expire = jank_expire,
	.jank_app_days = jank_app_days,
	.jank_versions = jank_versions,
};
