/*
 * decode.c — the trace decoder (decode.h).
 *
 * Per upload: look up its compression in uploads, read the blob, inflate it
 * with the payload codec (payload.h) when COMPRESSION_ZSTD, or when
 * COMPRESSION_ZSTD_SHUFFLED (zstd over the shuffled form), run
 * rva_capture_summarize (memory bounded by distinct methods and chains, not
 * by call count), then replace the trace's
 * rows in traces / trace_methods / trace_chains in one transaction.  A
 * summary-only upload gets its index rows from the device's Summary.
 * Invariants: every value goes into SQL through bound parameters; a decode
 * either indexes the whole trace or nothing (the caller then quarantines it
 * with the reason written here).  Up to RVS_DECODE_LANES decodes run at once
 * (api.c drains that many queue partitions), each on its own lane: its own
 * sqlite connection, statements, zstd context and capture buffer, taken
 * under the lane's mutex; sqlite's busy timeout serializes the short index
 * transactions.
 */
#include "decode.h"
#include "agg.h"
#include "issue.h"
#include "rvs.h"
#include "rearview/common.h"
#include "symstore.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>
#include <zstd.h>

#include "rearview/analysis.h"
#include "rearview/summary.pb-c.h"
#include "rearview/upload.pb-c.h"

#define TOP_METHODS 20
#define TOP_CHAINS  10
/* Bounds on what a device's Summary may add to the index. */
#define SUMMARY_MAX_ROWS  1000
#define SUMMARY_MAX_DEPTH 512
#define SUMMARY_NAME_MAX  4096

/* A capture buffer up to this size is kept between decodes: refaulting
 * 32 MiB of fresh pages per capture costs more than decompressing into it. */
#define KEEP_BUF_MAX (64u << 20)
#define STMT_CACHE   16

/* One decoder's state; RVS_DECODE_LANES of them decode side by side. */
struct lane {
	const char *database;
	const char *symbols_dir; /* "" : no symbol store */
	sqlite3 *db;
	pthread_mutex_t mu;
	ZSTD_DCtx *dctx; /* reused: its window buffers are allocated once */
	uint8_t *buf;	 /* the capture buffer (d->bufcap bytes), reused */
	size_t bufcap;
	/* Prepared statements, kept for the connection's life and keyed by the
	 * address of their SQL text (each a string literal of this file). */
	const char *stmt_sql[STMT_CACHE];
	sqlite3_stmt *stmt[STMT_CACHE];
};

struct rvs_decode {
	char database[512];
	char symbols_dir[512];
	struct lane lane[RVS_DECODE_LANES];
};

/* rvs_payload_inflate (at most max bytes) into the lane's reused buffer when
 * the frames declare a total of at most KEEP_BUF_MAX (a device's output
 * always does): *out is then d->buf, not to be freed.  Otherwise *out is
 * malloc'd and *owned set. */
static int inflate(struct lane *d, int comp, const uint8_t *in, size_t len, size_t max,
		   uint8_t **out, size_t *outlen, int *owned)
{
	size_t total = 0;
	int rc = rvs_payload_size(comp, in, len, max, &total);

	*owned = 0;
	if (rc < 0)
		return rc;
	if (rc == 1 || total > KEEP_BUF_MAX) {
		*owned = 1;
		return rvs_payload_inflate(comp, in, len, max, out, outlen);
	}
	if (!d->dctx && !(d->dctx = ZSTD_createDCtx()))
		return -ENOMEM;
	if (d->bufcap < total) {
		uint8_t *nb = realloc(d->buf, total);
		if (!nb)
			return -ENOMEM;
		d->buf = nb;
		d->bufcap = total;
	}
	*out = d->buf;
	return rvs_payload_inflate_to(d->dctx, comp, in, len, d->buf, total, outlen);
}

static int sqlerr(sqlite3 *db, int rc, char *reason, size_t rlen)
{
	snprintf(reason, rlen, "index: %s", sqlite3_errmsg(db));
	rvs_log("error", "msg=\"decode index\" err=\"%s\"", sqlite3_errmsg(db));
	rc = rvc_sqlite_errno(rc);
	return rc ? rc : -EIO;
}

static int open_db(struct lane *d)
{
	int rc;
	if (d->db)
		return 0;
	rc = sqlite3_open_v2(d->database, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX,
			     NULL);
	if (rc != SQLITE_OK) {
		sqlite3_close(d->db);
		d->db = NULL;
		return -EIO;
	}
	/* sqlite's own busy handler (sleeps of 1, 2, 5, 10 … ms), not
	 * rvs_sqlite_busy: a lane that finds the write lock taken backs off
	 * coarsely, so a waiting upload acknowledgement (the store, polling
	 * finely) gets the lock first and indexing uses the gaps between them
	 * (server/BENCHMARKS.md: acks 2,600–2,900/s with indexing at
	 * 1,500–1,700/s, against 1,700/s for both when lanes polled finely). */
	sqlite3_busy_timeout(d->db, 10000);
	/* Savepoint and statement journals in memory: an index batch's
	 * savepoints would otherwise spill every page they touch to a temp file
	 * (server/BENCHMARKS.md: half the bytes this process wrote). */
	rc = sqlite3_exec(d->db,
			  "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL;"
			  " PRAGMA temp_store=MEMORY;",
			  NULL, NULL, NULL);
	/* The issue column (issue.h) is computed by rvs_issue() in SQL. */
	if (rc == SQLITE_OK && rvs_issue_register(d->db))
		rc = SQLITE_ERROR;
	rvs_sqlite_ckpt_attach(d->db); /* on failure: sqlite's own checkpoints */
	return rc == SQLITE_OK ? 0 : -EIO;
}

/* The cached statement for sql (prepared on first use), ready to bind. */
static int prep(struct lane *d, const char *sql, sqlite3_stmt **st)
{
	size_t i;
	for (i = 0; i < STMT_CACHE && d->stmt_sql[i]; i++)
		if (d->stmt_sql[i] == sql) {
			*st = d->stmt[i];
			return SQLITE_OK;
		}
	if (i == STMT_CACHE) /* more statements than slots: not cached */
		return sqlite3_prepare_v2(d->db, sql, -1, st, NULL);
	int rc = sqlite3_prepare_v3(d->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &d->stmt[i], NULL);
	if (rc == SQLITE_OK) {
		d->stmt_sql[i] = sql;
		*st = d->stmt[i];
	}
	return rc;
}

/* Done with a statement from prep: reset for its next use. */
static void unprep(struct lane *d, sqlite3_stmt *st)
{
	for (size_t i = 0; i < STMT_CACHE && d->stmt_sql[i]; i++)
		if (d->stmt[i] == st) {
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			return;
		}
	sqlite3_finalize(st);
}

/* "name;name;...;" of the n names name_at(ctx, i), the innermost of a path
 * `outer` frames deeper, into a malloc'd string (the chain column's form);
 * NULL on no memory.  Each name is cut at SUMMARY_NAME_MAX bytes; past
 * RVA_EXPORT_MAX_DEPTH names only the innermost RVA_EXPORT_MAX_DEPTH are
 * kept; frames left out (outer ones included) are counted first, as
 * "[K outer frames truncated];" (the row's depth column keeps the whole
 * depth): a 100 k deep chain was ~3.5 MB of text per row, shown whole on
 * the trace page. */
static char *join_chain(size_t outer, size_t n, const char *(*name_at)(const void *, size_t),
			const void *ctx)
{
	size_t from = n > RVA_EXPORT_MAX_DEPTH ? n - RVA_EXPORT_MAX_DEPTH : 0;
	char *s = NULL;
	size_t sl = 0;
	FILE *f = open_memstream(&s, &sl);
	if (!f)
		return NULL;
	if (outer + from)
		fprintf(f, "[%zu outer frames truncated];", outer + from);
	for (size_t i = from; i < n; i++) {
		const char *name = name_at(ctx, i);
		fprintf(f, "%.*s;", SUMMARY_NAME_MAX, name ? name : "?");
	}
	if (fclose(f)) {
		free(s);
		return NULL;
	}
	return s;
}

struct chain_ids {
	const rva_trace *t;
	const uint32_t *ids;
};

static const char *chain_id_name(const void *ctx, size_t i)
{
	const struct chain_ids *c = ctx;
	return c->ids[i] < c->t->nmethods ? c->t->names[c->ids[i]] : NULL;
}

static const char *frame_name(const void *ctx, size_t i)
{
	return ((const Rearview__Chain *)ctx)->frames[i];
}

/* The chain column of method ids chain[0..n) of t, the innermost frames of
 * a path `outer` frames deeper. */
static char *chain_text(const rva_trace *t, const uint32_t *chain, size_t n, size_t outer)
{
	struct chain_ids c = {t, chain};
	return join_chain(outer, n, chain_id_name, &c);
}

static int step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* One trace_methods row; values above INT64_MAX (a hostile summary) are
 * clipped into sqlite's signed range; rank 0 leaves self_rank NULL. */
static int insert_method(sqlite3_stmt *st, const char *trace_id, const char *name, uint64_t calls,
			 uint64_t self, uint64_t incl, int64_t rank)
{
	sqlite3_bind_text(st, 1, trace_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)(calls & INT64_MAX));
	sqlite3_bind_int64(st, 4, (sqlite3_int64)(self & INT64_MAX));
	sqlite3_bind_int64(st, 5, (sqlite3_int64)(incl & INT64_MAX));
	if (rank)
		sqlite3_bind_int64(st, 6, rank);
	return step_done(st);
}

/* One trace_chains row: chain[0..n) are the innermost frames of a path of
 * depth frames whose signature is signature. */
static int insert_chain(sqlite3_stmt *st, const char *trace_id, const char *kind, int rank,
			const rva_trace *t, const uint32_t *chain, size_t n, size_t depth,
			uint64_t signature, int64_t self, int64_t incl, char sig_out[17])
{
	char sig[17], *text;
	int rc;
	assert(n <= depth);
	if (!(text = chain_text(t, chain, n, depth - n)))
		return SQLITE_NOMEM;
	snprintf(sig, sizeof sig, "%016" PRIx64, signature);
	if (sig_out)
		memcpy(sig_out, sig, sizeof sig);
	sqlite3_bind_text(st, 1, trace_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, rank);
	sqlite3_bind_text(st, 4, sig, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, text, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)depth);
	if (self >= 0)
		sqlite3_bind_int64(st, 7, self);
	if (incl >= 0)
		sqlite3_bind_int64(st, 8, incl);
	rc = step_done(st);
	free(text);
	return rc;
}

/* The method and chain rows of a decoded capture; anomaly_sig gets the
 * signature of its chain at the anomaly ("" when none). */
static int index_capture(struct lane *d, const char *trace_id, const rva_summary *sum,
			 char anomaly_sig[17])
{
	const rva_trace *t = sum->trace;
	sqlite3_stmt *st = NULL;
	uint32_t top[TOP_METHODS];
	size_t ntop;
	int rc;

	ntop = rva_top_self(t, sum->stats, top, TOP_METHODS);
	rc = prep(d,
		  "INSERT INTO trace_methods (trace_id, method, calls, self_ns, incl_ns,"
		  " self_rank) VALUES (?,?,?,?,?,?)",
		  &st);
	if (rc)
		return rc;
	for (size_t m = 0; m < t->nmethods && !rc; m++) {
		const rva_mstat *ms = &sum->stats[m];
		if (!ms->calls)
			continue;
		int64_t rank = 0;
		for (size_t k = 0; k < ntop; k++)
			if (top[k] == m)
				rank = (int64_t)k + 1;
		rc = insert_method(st, trace_id, t->names[m], ms->calls, (uint64_t)ms->self,
				   (uint64_t)ms->incl, rank);
	}
	unprep(d, st);
	if (rc)
		return rc;

	rc = prep(d,
		  "INSERT INTO trace_chains (trace_id, kind, rank, signature, chain,"
		  " depth, self_ns, incl_ns) VALUES (?,?,?,?,?,?,?,?)",
		  &st);
	if (rc)
		return rc;
	if (sum->anomaly_chain && sum->anomaly_depth)
		rc = insert_chain(st, trace_id, "anomaly", 1, t, sum->anomaly_chain,
				  sum->anomaly_depth, sum->anomaly_depth,
				  rva_signature(t, sum->anomaly_chain, sum->anomaly_depth), -1, -1,
				  anomaly_sig);
	if (!rc) {
		rva_chains ch = {0};
		if (rva_chains_from_tree(t, &sum->tree, TOP_CHAINS, &ch) < 0) {
			rc = SQLITE_NOMEM;
		} else {
			for (size_t i = 0; i < ch.n && !rc; i++)
				rc = insert_chain(st, trace_id, "top", (int)i + 1, t,
						  ch.v[i].methods, ch.v[i].nmethods, ch.v[i].depth,
						  ch.v[i].signature, ch.v[i].self, ch.v[i].incl,
						  NULL);
			rva_chains_release(&ch);
		}
	}
	unprep(d, st);
	return rc;
}

/* The method and chain rows of a device's Summary (top_self, the chains at
 * the anomaly and the longest chains), bounded: the summary is untrusted.
 * A method named twice keeps its first row. */
static int index_summary(struct lane *d, const char *trace_id, const Rearview__Summary *ps,
			 char anomaly_sig[17])
{
	sqlite3_stmt *st = NULL;
	int rc;

	rc = prep(d,
		  "INSERT OR IGNORE INTO trace_methods (trace_id, method, calls,"
		  " self_ns, incl_ns, self_rank) VALUES (?,?,?,?,?,?)",
		  &st);
	if (rc)
		return rc;
	for (size_t i = 0; i < ps->n_top_self && i < SUMMARY_MAX_ROWS && !rc; i++) {
		const Rearview__MethodStat *m = ps->top_self[i];
		if (!m->name || !m->name[0] || strlen(m->name) > SUMMARY_NAME_MAX)
			continue;
		rc = insert_method(st, trace_id, m->name, m->calls, m->self_ns, m->inclusive_ns,
				   (int64_t)i + 1);
	}
	unprep(d, st);
	if (rc)
		return rc;
	rc = prep(d,
		  "INSERT INTO trace_chains (trace_id, kind, rank, signature, chain,"
		  " depth, self_ns, incl_ns) VALUES (?,?,?,?,?,?,NULL,?)",
		  &st);
	if (rc)
		return rc;
	for (int pass = 0; pass < 2 && !rc; pass++) {
		Rearview__Chain **v = pass ? ps->longest_chains : ps->chains_at_anomaly;
		size_t n = pass ? ps->n_longest_chains : ps->n_chains_at_anomaly;
		int rank = 0;
		for (size_t i = 0; i < n && rank < TOP_CHAINS && !rc; i++) {
			size_t depth = v[i]->n_frames < SUMMARY_MAX_DEPTH ? v[i]->n_frames
									  : SUMMARY_MAX_DEPTH;
			char sig[17], *text;
			if (!depth)
				continue;
			if (!(text = join_chain(0, depth, frame_name, v[i])))
				return SQLITE_NOMEM;
			snprintf(sig, sizeof sig, "%016" PRIx64, v[i]->signature);
			if (!pass && !anomaly_sig[0])
				memcpy(anomaly_sig, sig, sizeof sig);
			sqlite3_bind_text(st, 1, trace_id, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, pass ? "top" : "anomaly", -1, SQLITE_STATIC);
			sqlite3_bind_int(st, 3, ++rank);
			sqlite3_bind_text(st, 4, sig, -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(st, 5, text, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 6, (sqlite3_int64)depth);
			sqlite3_bind_int64(st, 7, (sqlite3_int64)(v[i]->duration_ns & INT64_MAX));
			rc = step_done(st);
			free(text);
		}
	}
	unprep(d, st);
	return rc;
}

/* Writes every index row of one trace: from the decoded capture sum, else
 * (summary-only uploads) from the device's summary ps when it sent one.
 * Runs inside the caller's transaction. */
static int index_rows(struct lane *d, const char *trace_id, const rva_summary *sum,
		      const Rearview__Summary *ps)
{
	sqlite3_stmt *st = NULL;
	const rva_trace *t = sum ? sum->trace : NULL;
	char anomaly_sig[17] = "";
	int rc, decoded_before;

	static const char *const wipe[] = {
		"DELETE FROM trace_chains WHERE trace_id = ?",
		"DELETE FROM trace_methods WHERE trace_id = ?",
		"DELETE FROM traces WHERE trace_id = ?",
	};
	/* A trace decoded again (re-symbolized, or after a crash before its
	 * outcome was recorded) replaces its rows; a first decode — nearly all
	 * of them — has none (child rows exist only under a traces row). */
	if ((rc = prep(d, "SELECT 1 FROM traces WHERE trace_id = ?", &st)))
		return rc;
	sqlite3_bind_text(st, 1, trace_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	unprep(d, st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return rc;
	decoded_before = rc == SQLITE_ROW;
	for (size_t i = 0; decoded_before && i < 3; i++) {
		if ((rc = prep(d, wipe[i], &st)))
			return rc;
		sqlite3_bind_text(st, 1, trace_id, -1, SQLITE_STATIC);
		rc = step_done(st);
		unprep(d, st);
		if (rc)
			return rc;
	}
	/* The parent row first (foreign keys), its signature filled in last. */
	rc = prep(d,
		  "INSERT INTO traces (trace_id, app_id, app_version, model, os_build,"
		  " anomaly_kind, severity, captured_at_ns, received_at, anomaly_name, duration_ns,"
		  " nmethods, dropped, decoded_at, device_id)"
		  " SELECT trace_id, app_id, app_version, model, os_build, anomaly_kind, severity,"
		  " captured_realtime_ns, received_at, ?2, ?3, ?4, ?5, ?6, device_id FROM uploads"
		  " WHERE trace_id = ?1",
		  &st);
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, trace_id, -1, SQLITE_STATIC);
	if (t) {
		if (t->anomaly_name)
			sqlite3_bind_text(st, 2, t->anomaly_name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 3, t->end - t->start);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)t->nmethods);
		sqlite3_bind_int64(st, 5, (sqlite3_int64)t->dropped);
	} else if (ps && ps->window_ns) {
		sqlite3_bind_int64(st, 3, (sqlite3_int64)(ps->window_ns & INT64_MAX));
	}
	sqlite3_bind_int64(st, 6, (sqlite3_int64)time(NULL));
	rc = step_done(st);
	if (!rc && sqlite3_changes(d->db) != 1)
		rc = SQLITE_NOTFOUND;
	unprep(d, st);
	if (!rc && t)
		rc = index_capture(d, trace_id, sum, anomaly_sig);
	if (!rc && t)
		rc = rvs_agg_index(d->db, trace_id, sum);
	else if (!rc && ps)
		rc = index_summary(d, trace_id, ps, anomaly_sig);
	if (rc)
		return rc;
	/* Setting traces.signature fires migration 5's triggers, which count the
	 * trace into its signature's totals inside this transaction; issue is
	 * the anomaly chain's signature folded (issue.h, migration 9). */
	rc = prep(d,
		  "UPDATE traces SET anomaly_signature = ?1, signature = COALESCE(?1,"
		  " (SELECT c.signature FROM trace_chains c WHERE c.trace_id = ?2"
		  " AND c.kind = 'top' AND c.rank = 1)), issue = (SELECT rvs_issue(c.chain,"
		  " c.signature) FROM trace_chains c WHERE c.trace_id = ?2 AND c.kind ="
		  " 'anomaly' AND c.rank = 1) WHERE trace_id = ?2",
		  &st);
	if (rc)
		return rc;
	if (anomaly_sig[0])
		sqlite3_bind_text(st, 1, anomaly_sig, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, trace_id, -1, SQLITE_STATIC);
	rc = step_done(st);
	unprep(d, st);
	return rc;
}

/* The upload's compression (*comp, when comp is not NULL) and, when ps is
 * not NULL and it carried one, its device Summary (*ps; free with
 * rearview__summary__free_unpacked).  A stored summary that does not unpack
 * is ignored: the envelope it came in was validated. */
static int upload_meta(struct lane *d, const char *trace_id, int *comp, Rearview__Summary **ps,
		       size_t *limit)
{
	sqlite3_stmt *st;
	int rc =
		prep(d, "SELECT compression, summary, payload_size FROM uploads WHERE trace_id = ?",
		     &st);
	if (ps)
		*ps = NULL;
	if (rc)
		return rc;
	sqlite3_bind_text(st, 1, trace_id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const void *blob = sqlite3_column_blob(st, 1);
		int len = sqlite3_column_bytes(st, 1);
		if (comp)
			*comp = sqlite3_column_int(st, 0);
		if (ps && blob && len > 0)
			*ps = rearview__summary__unpack(NULL, (size_t)len, blob);
		if (limit)
			*limit = rvs_inflate_limit((uint64_t)sqlite3_column_int64(st, 2));
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_NOTFOUND;
	}
	unprep(d, st);
	return rc;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Names what the device could not from the symbol store (symbols.c): each
 * unresolved method whose module's debug file is stored and has a function
 * at its offset.  Runs before the index rows (and their chains and
 * signatures) are computed.  Marks in `left` (one flag per unresolved
 * entry) what stays unnamed, for trace_unresolved.
 */
static void symbolize(const struct lane *d, rva_trace *t, unsigned char *left)
{
	for (size_t i = 0; i < t->nunresolved; i++) {
		const rva_unresolved *u = &t->unresolved[i];
		char bid[2 * 64 + 1], name[512];

		left[i] = 1;
		if (!d->symbols_dir[0])
			continue;
		for (uint32_t k = 0; k < u->build_id_len; k++)
			snprintf(bid + 2 * k, 3, "%02x", u->build_id[k]);
		if (rvs_symbols_lookup(d->symbols_dir, bid, u->elf_offset, name, sizeof name) ==
			    0 &&
		    rva_method_rename(t, u->method, name) == 0)
			left[i] = 0;
	}
}

/* Inside the index transaction: the build-ids this trace still needs. */
static int index_unresolved(struct lane *d, const char *trace_id, const rva_trace *t,
			    const unsigned char *left)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if ((rc = prep(d, "DELETE FROM trace_unresolved WHERE trace_id = ?", &st)))
		return rc;
	sqlite3_bind_text(st, 1, trace_id, -1, SQLITE_STATIC);
	rc = step_done(st);
	unprep(d, st);
	for (size_t i = 0; t && !rc && i < t->nunresolved; i++) {
		const rva_unresolved *u = &t->unresolved[i];
		char bid[2 * 64 + 1];

		if (!left[i])
			continue;
		for (uint32_t k = 0; k < u->build_id_len; k++)
			snprintf(bid + 2 * k, 3, "%02x", u->build_id[k]);
		if ((rc = prep(d,
			       "INSERT OR IGNORE INTO trace_unresolved (build_id, trace_id)"
			       " VALUES (?, ?)",
			       &st)))
			return rc;
		sqlite3_bind_text(st, 1, bid, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, trace_id, -1, SQLITE_STATIC);
		rc = step_done(st);
		unprep(d, st);
	}
	return rc;
}

/* Decodes and indexes one capture upload (blob_path its payload) in its own
 * index transaction, taken only after the capture is summarized: decoding
 * takes tens of ms, and the write lock is not held through it. */
static int decode_capture(struct lane *d, const char *trace_id, const char *blob_path, char *reason,
			  size_t rlen)
{
	double t0 = now_ms(), t_read = t0, t_zstd = t0, t_sum = t0;
	uint8_t *raw = NULL, *cap = NULL;
	size_t rawlen = 0, caplen = 0;
	rva_summary sum;
	rva_error err;
	int comp = 0, rc, cap_owned = 0;
	size_t limit = RVS_DECODE_MAX_CAPTURE;
	unsigned char *left = NULL; /* per unresolved method: still unnamed */

	memset(&sum, 0, sizeof sum);
	err.msg[0] = 0;
	if ((rc = open_db(d))) {
		snprintf(reason, rlen, "index: cannot open database");
		return rc;
	}
	if ((rc = upload_meta(d, trace_id, &comp, NULL, &limit)))
		return sqlerr(d->db, rc, reason, rlen);
	if ((rc = rvs_read_file(blob_path, RVS_DECODE_MAX_BLOB, &raw, &rawlen))) {
		snprintf(reason, rlen, "blob unreadable: %s", strerror(-rc));
		return rc;
	}
	t_read = now_ms();
	if (comp == REARVIEW__COMPRESSION__COMPRESSION_ZSTD ||
	    comp == REARVIEW__COMPRESSION__COMPRESSION_ZSTD_SHUFFLED) {
		rc = inflate(d, comp, raw, rawlen, limit, &cap, &caplen, &cap_owned);
		free(raw);
		raw = NULL;
		if (rc) {
			snprintf(reason, rlen, "zstd: %s",
				 rc == -E2BIG	 ? "capture too large"
				 : rc == -ENOMEM ? "out of memory"
						 : "corrupt or truncated");
			return rc;
		}
	} else if (comp != REARVIEW__COMPRESSION__COMPRESSION_NONE) {
		free(raw);
		snprintf(reason, rlen, "unknown compression %d", comp);
		return -EPROTONOSUPPORT;
	} else {
		cap = raw;
		caplen = rawlen;
		cap_owned = 1;
	}
	t_zstd = now_ms();
	rc = rva_capture_summarize(cap, caplen, &sum, &err);
	if (cap_owned)
		free(cap);
	t_sum = now_ms();
	if (rc) {
		snprintf(reason, rlen, "capture: %s", err.msg[0] ? err.msg : strerror(-rc));
		return rc;
	}
	if (sum.trace->nunresolved && !(left = malloc(sum.trace->nunresolved))) {
		rva_summary_release(&sum);
		snprintf(reason, rlen, "index: out of memory");
		return -ENOMEM;
	}
	symbolize(d, sum.trace, left);
	rc = sqlite3_exec(d->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (!rc)
		rc = index_rows(d, trace_id, &sum, NULL);
	if (!rc)
		rc = index_unresolved(d, trace_id, sum.trace, left);
	if (!rc)
		rc = sqlite3_exec(d->db, "COMMIT", NULL, NULL, NULL);
	if (rc) {
		rc = sqlerr(d->db, rc, reason, rlen);
		sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
	}
	rva_summary_release(&sum);
	free(left);
	if (!rc)
		rvs_log("info",
			"msg=\"decoded\" trace=%s capture_bytes=%zu read_ms=%.1f zstd_ms=%.1f"
			" summarize_ms=%.1f index_ms=%.1f",
			trace_id, caplen, t_read - t0, t_zstd - t_read, t_sum - t_zstd,
			now_ms() - t_sum);
	return rc;
}

/* Indexes n summary-only uploads (a device's Summary, or nothing but the
 * trace row) in one transaction, a savepoint each, so that one upload's
 * failure quarantines it alone; every item's rc and reason are set. */
static void index_summaries(struct lane *d, struct rvs_decode_item *it, size_t n)
{
	int rc = open_db(d);

	for (size_t i = 0; i < n; i++) {
		it[i].rc = 0;
		it[i].reason[0] = 0;
	}
	if (rc) {
		for (size_t i = 0; i < n; i++) {
			it[i].rc = rc;
			snprintf(it[i].reason, sizeof it[i].reason, "index: cannot open database");
		}
		return;
	}
	rc = sqlite3_exec(d->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	for (size_t i = 0; i < n; i++) {
		Rearview__Summary *ps = NULL;
		int r = rc;

		if (!r)
			r = sqlite3_exec(d->db, "SAVEPOINT one", NULL, NULL, NULL);
		if (!r && !(r = upload_meta(d, it[i].trace_id, NULL, &ps, NULL)))
			r = index_rows(d, it[i].trace_id, NULL, ps);
		rearview__summary__free_unpacked(ps, NULL);
		if (r) {
			it[i].rc = sqlerr(d->db, r, it[i].reason, sizeof it[i].reason);
			if (!rc)
				sqlite3_exec(d->db, "ROLLBACK TO one", NULL, NULL, NULL);
		}
		if (!rc)
			sqlite3_exec(d->db, "RELEASE one", NULL, NULL, NULL);
	}
	if (!rc && (rc = sqlite3_exec(d->db, "COMMIT", NULL, NULL, NULL))) {
		for (size_t i = 0; i < n; i++)
			if (!it[i].rc)
				it[i].rc = sqlerr(d->db, rc, it[i].reason, sizeof it[i].reason);
		sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
	}
}

/* The seam's decode (api.h) on a free lane: concurrent callers (at most
 * RVS_DECODE_LANES) each find one; more would wait on the first.  Captures
 * one by one; each run of summary-only uploads as one index transaction. */
static void decode_cb(void *ctx, struct rvs_decode_item *it, size_t n)
{
	struct rvs_decode *dec = ctx;
	struct lane *d = NULL;

	for (size_t i = 0; i < RVS_DECODE_LANES && !d; i++)
		if (pthread_mutex_trylock(&dec->lane[i].mu) == 0)
			d = &dec->lane[i];
	if (!d) {
		d = &dec->lane[0];
		pthread_mutex_lock(&d->mu);
	}
	for (size_t i = 0, j; i < n; i = j) {
		double t0 = now_ms(), share;

		if (it[i].path[0]) {
			it[i].reason[0] = 0;
			it[i].rc = decode_capture(d, it[i].trace_id, it[i].path, it[i].reason,
						  sizeof it[i].reason);
			it[i].seconds = (now_ms() - t0) / 1e3;
			j = i + 1;
			continue;
		}
		for (j = i; j < n && !it[j].path[0]; j++)
			;
		index_summaries(d, it + i, j - i);
		share = (now_ms() - t0) / 1e3 / (double)(j - i);
		for (size_t k = i; k < j; k++)
			it[k].seconds = share;
	}
	pthread_mutex_unlock(&d->mu);
	for (size_t i = 0; i < n; i++)
		if (it[i].rc)
			rvs_log("warn", "msg=\"decode failed\" trace=%s", it[i].trace_id);
}

int rvs_decode_new(const char *database, struct rvs_decoder *dec, struct rvs_decode **out)
{
	struct rvs_decode *d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	if ((size_t)snprintf(d->database, sizeof d->database, "%s", database) >=
	    sizeof d->database) {
		free(d);
		return -ENAMETOOLONG;
	}
	for (size_t i = 0; i < RVS_DECODE_LANES; i++) {
		d->lane[i].database = d->database;
		d->lane[i].symbols_dir = d->symbols_dir;
		pthread_mutex_init(&d->lane[i].mu, NULL);
	}
	dec->decode = decode_cb;
	dec->ctx = d;
	*out = d;
	return 0;
}

int rvs_decode_set_symbols_dir(struct rvs_decode *d, const char *dir)
{
	if ((size_t)snprintf(d->symbols_dir, sizeof d->symbols_dir, "%s", dir ? dir : "") >=
	    sizeof d->symbols_dir) {
		d->symbols_dir[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

void rvs_decode_free(struct rvs_decode *d)
{
	if (!d)
		return;
	for (size_t l = 0; l < RVS_DECODE_LANES; l++) {
		struct lane *ln = &d->lane[l];
		for (size_t i = 0; i < STMT_CACHE; i++)
			sqlite3_finalize(ln->stmt[i]);
		rvs_sqlite_ckpt_detach(ln->db);
		sqlite3_close(ln->db);
		ZSTD_freeDCtx(ln->dctx);
		free(ln->buf);
		pthread_mutex_destroy(&ln->mu);
	}
	free(d);
}
