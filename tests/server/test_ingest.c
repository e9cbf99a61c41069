/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ingest.c — the decoder's index of summary-only uploads: a device's
 * Summary (top_self, chains at the anomaly, longest chains) becomes method
 * and chain rows and a signature, within bounds when it is hostile.  Real
 * sqlite store and decoder in a temporary directory.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <inttypes.h>
#include <zstd.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include "pipeline/decode.h"
#include "pg_harness.h"
#include "api/query.h"
#include "blob/blob.h"
#include "base/config.h"
#include "store/store.h"

#include "capbuild.h"
#include "rearview/analysis.h"
#include "rearview/summary.pb-c.h"
#include "rearview/upload.pb-c.h"

static const struct rvs_store_ops *ops = &rvs_store_sqlite;

struct fx {
	char dir[64], db[128];
	struct rvs_store *s;
	struct rvs_decode *d;
	struct rvs_decoder dec;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	struct rvs_device_rec dev = {0};
	snprintf(f->dir, sizeof f->dir, "/tmp/rvs-ingest-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->db, sizeof f->db, "%s/t.db", f->dir);
	if (ops->open(f->db, &f->s) || rvs_decode_new(f->db, &f->dec, &f->d))
		return -1;
	snprintf(dev.device_id, sizeof dev.device_id, "d-1");
	if (ops->device_add(f->s, &dev))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];
	rvs_decode_free(f->d);
	ops->close(f->s);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	free(f);
	return system(cmd) == 0 ? 0 : -1;
}

static int64_t num(struct fx *f, const char *q)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t v = -1;
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* Stores a summary-only upload n carrying sum and decodes it. */
static int upload_and_decode(struct fx *f, int n, const Rearview__Summary *sum)
{
	struct rvs_upload_rec u = {0};
	struct rvs_decode_item it = {0};
	uint8_t *buf = NULL;

	snprintf(u.trace_id, sizeof u.trace_id, "t-%032d", n);
	u.device_id = "d-1";
	memset(u.upload_id, n, 16);
	u.app_version = "2.0";
	if (sum) {
		u.summary_len = rearview__summary__get_packed_size(sum);
		buf = malloc(u.summary_len + 1);
		rearview__summary__pack(sum, buf);
		u.summary = buf;
	}
	assert_int_equal(ops->upload_add(f->s, &u), 0);
	snprintf(it.trace_id, sizeof it.trace_id, "%s", u.trace_id);
	f->dec.decode(f->dec.ctx, &it, 1);
	free(buf);
	return it.rc;
}

static void test_ingest_summary_only_methods_chains_and_signature_indexed(void **state)
{
	struct fx *f = *state;
	Rearview__Summary sum = REARVIEW__SUMMARY__INIT;
	Rearview__MethodStat m1 = REARVIEW__METHOD_STAT__INIT, m2 = REARVIEW__METHOD_STAT__INIT;
	Rearview__MethodStat *top[2] = {&m1, &m2};
	Rearview__Chain c = REARVIEW__CHAIN__INIT;
	Rearview__Chain *chains[1] = {&c};
	char *frames[3] = {(char *)"main", (char *)"Activity.onCreate", (char *)"Json.parse"};

	m1.name = (char *)"Json.parse";
	m1.calls = 3;
	m1.self_ns = 9000000;
	m1.inclusive_ns = 9500000;
	m2.name = (char *)"Activity.onCreate";
	m2.calls = 1;
	m2.self_ns = 100;
	m2.inclusive_ns = 9600000;
	sum.top_self = top;
	sum.n_top_self = 2;
	c.frames = frames;
	c.n_frames = 3;
	c.duration_ns = 9500000;
	c.signature = 0xabcdef0123456789ull;
	sum.chains_at_anomaly = chains;
	sum.n_chains_at_anomaly = 1;
	sum.window_ns = 2000000000;

	assert_int_equal(upload_and_decode(f, 1, &sum), 0);
	assert_int_equal(num(f, "SELECT count(*) FROM trace_methods"), 2);
	assert_int_equal(num(f, "SELECT self_ns FROM trace_methods WHERE method = 'Json.parse'"),
			 9000000);
	assert_int_equal(num(f, "SELECT self_rank FROM trace_methods WHERE method ="
				" 'Activity.onCreate'"),
			 2);
	assert_int_equal(num(f, "SELECT depth FROM trace_chains WHERE kind = 'anomaly'"), 3);
	assert_int_equal(num(f, "SELECT count(*) FROM trace_chains WHERE chain ="
				" 'main;Activity.onCreate;Json.parse;'"),
			 1);
	assert_int_equal(num(f, "SELECT count(*) FROM traces WHERE signature = 'abcdef0123456789'"
				" AND anomaly_signature = 'abcdef0123456789'"),
			 1);
	assert_int_equal(num(f, "SELECT duration_ns FROM traces"), 2000000000);
	/* Counted in the signature totals like a decoded capture. */
	assert_int_equal(num(f, "SELECT traces FROM signatures WHERE signature ="
				" 'abcdef0123456789'"),
			 1);
	assert_int_equal(num(f, "SELECT count(*) FROM signatures WHERE chain ="
				" 'main;Activity.onCreate;Json.parse;'"),
			 1);
}

static void test_ingest_summary_absent_indexes_metadata_only(void **state)
{
	struct fx *f = *state;
	assert_int_equal(upload_and_decode(f, 2, NULL), 0);
	assert_int_equal(num(f, "SELECT count(*) FROM traces"), 1);
	assert_int_equal(num(f, "SELECT count(*) FROM trace_methods"), 0);
	assert_int_equal(num(f, "SELECT count(*) FROM signatures"), 0);
}

static void test_ingest_hostile_summary_is_bounded(void **state)
{
	struct fx *f = *state;
	enum { NTOP = 1500, DEPTH = 2000, NCH = 40 };
	Rearview__Summary sum = REARVIEW__SUMMARY__INIT;
	Rearview__MethodStat *ms = calloc(NTOP, sizeof *ms), **top = calloc(NTOP, sizeof *top);
	Rearview__Chain *cs = calloc(NCH, sizeof *cs), **chains = calloc(NCH, sizeof *chains);
	char **frames = calloc(DEPTH, sizeof *frames), *huge = malloc(10000);
	char(*names)[16] = calloc(NTOP, 16);

	memset(huge, 'x', 9999);
	huge[9999] = 0;
	for (int i = 0; i < NTOP; i++) {
		rearview__method_stat__init(&ms[i]);
		/* Every name twice, one far too long, one empty. */
		snprintf(names[i], 16, "m%d", i / 2);
		ms[i].name = i == 7 ? huge : i == 8 ? (char *)"" : names[i];
		ms[i].self_ns = UINT64_MAX; /* does not fit sqlite's signed 64 bits */
		top[i] = &ms[i];
	}
	for (int i = 0; i < DEPTH; i++)
		frames[i] = (char *)"f";
	for (int i = 0; i < NCH; i++) {
		rearview__chain__init(&cs[i]);
		cs[i].frames = frames;
		cs[i].n_frames = DEPTH;
		cs[i].signature = (uint64_t)i + 1;
		chains[i] = &cs[i];
	}
	sum.top_self = top;
	sum.n_top_self = NTOP;
	sum.chains_at_anomaly = chains;
	sum.n_chains_at_anomaly = NCH;
	sum.longest_chains = chains;
	sum.n_longest_chains = NCH;

	assert_int_equal(upload_and_decode(f, 3, &sum), 0);
	/* The first 1000 entries name m0..m499 twice each; the huge and the
	 * empty name are skipped (their twins keep m3 and m4). */
	assert_int_equal(num(f, "SELECT count(*) FROM trace_methods"), 500);
	assert_int_equal(num(f, "SELECT count(*) FROM trace_methods WHERE length(method) > 100"),
			 0);
	assert_true(num(f, "SELECT min(self_ns) FROM trace_methods") >= 0);
	assert_int_equal(num(f, "SELECT max(depth) FROM trace_chains"), 512);
	assert_int_equal(num(f, "SELECT count(*) FROM trace_chains WHERE kind = 'anomaly'"), 10);
	assert_int_equal(num(f, "SELECT count(*) FROM trace_chains WHERE kind = 'top'"), 10);
	free(ms);
	free(top);
	free(cs);
	free(chains);
	free(frames);
	free(huge);
	free(names);
}

/* Queues n summary-only uploads without decoding them. */
static void queue_uploads(struct fx *f, int n)
{
	for (int i = 0; i < n; i++) {
		struct rvs_upload_rec u = {0};
		snprintf(u.trace_id, sizeof u.trace_id, "t-%032d", 100 + i);
		u.device_id = "d-1";
		memset(u.upload_id, 100 + i, 16);
		assert_int_equal(ops->upload_add(f->s, &u), 0);
	}
}

static void test_ingest_queue_partitions_split_without_overlap(void **state)
{
	struct fx *f = *state;
	struct rvs_decode_item it[7];
	char seen[40][40];
	int nseen = 0, n;

	queue_uploads(f, 40);
	assert_int_equal(ops->decode_next_batch(f->s, 2, 2, it, 7), -EINVAL);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 0, it, 7), -EINVAL);
	/* Drain both partitions alternately, in batches, as two decode jobs
	 * would. */
	for (int round = 0; nseen < 40 && round < 100; round++) {
		unsigned part = (unsigned)round % 2;
		if ((n = ops->decode_next_batch(f->s, part, 2, it, 7)) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			for (int k = 0; k < nseen; k++)
				assert_string_not_equal(seen[k], it[i].trace_id);
			memcpy(seen[nseen++], it[i].trace_id, sizeof seen[0]);
		}
		assert_int_equal(ops->decode_finish(f->s, it, (size_t)n), 0);
	}
	assert_int_equal(nseen, 40);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 2, it, 7), 0);
	assert_int_equal(ops->decode_next_batch(f->s, 1, 2, it, 7), 0);
}

static void test_ingest_batch_failure_quarantines_only_its_upload(void **state)
{
	struct fx *f = *state;
	struct rvs_decode_item it[5];
	int n;

	queue_uploads(f, 4);
	assert_int_equal(ops->decode_next_batch(f->s, 0, 1, it, 5), 4);
	/* A queued id whose upload row vanished (as retention could make it)
	 * in the middle of the batch: it alone fails, with its reason. */
	memmove(&it[3], &it[2], 2 * sizeof it[0]);
	memset(&it[2], 0, sizeof it[2]);
	snprintf(it[2].trace_id, sizeof it[2].trace_id, "t-gone");
	f->dec.decode(f->dec.ctx, it, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(it[i].rc != 0, i == 2);
	assert_true(strncmp(it[2].reason, "index: ", 7) == 0);
	assert_int_equal(ops->decode_finish(f->s, it, 5), 0);
	assert_int_equal(num(f, "SELECT count(*) FROM traces"), 4);
	assert_int_equal(num(f, "SELECT count(*) FROM uploads WHERE state = 'decoded'"), 4);
	assert_int_equal(num(f, "SELECT count(*) FROM decode_queue"), 0);
	/* Decoding the same batch again (a crash before decode_finish) gives
	 * the same rows, not twice as many. */
	n = 0;
	for (int i = 0; i < 5; i++)
		if (i != 2)
			it[n++] = it[i];
	f->dec.decode(f->dec.ctx, it, (size_t)n);
	for (int i = 0; i < n; i++)
		assert_int_equal(it[i].rc, 0);
	assert_int_equal(num(f, "SELECT count(*) FROM traces"), 4);
}

struct drain_arg {
	struct fx *f;
	unsigned part;
	int decoded, failed;
};

static void *drain(void *p)
{
	struct drain_arg *a = p;
	struct rvs_decode_item it[8];
	int n;
	while ((n = ops->decode_next_batch(a->f->s, a->part, 2, it, 8)) > 0) {
		a->f->dec.decode(a->f->dec.ctx, it, (size_t)n);
		for (int i = 0; i < n; i++) {
			a->decoded += it[i].rc == 0;
			a->failed += it[i].rc != 0;
		}
		assert_int_equal(ops->decode_finish(a->f->s, it, (size_t)n), 0);
	}
	return NULL;
}

static void test_ingest_two_decoders_run_concurrently(void **state)
{
	struct fx *f = *state;
	struct drain_arg a[2] = {{f, 0, 0, 0}, {f, 1, 0, 0}};
	pthread_t th[2];

	queue_uploads(f, 60);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, drain, &a[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(a[0].failed + a[1].failed, 0);
	assert_int_equal(a[0].decoded + a[1].decoded, 60);
	assert_true(a[0].decoded > 0 && a[1].decoded > 0);
	assert_int_equal(num(f, "SELECT count(*) FROM traces"), 60);
	assert_int_equal(num(f, "SELECT count(*) FROM decode_queue"), 0);
}

/* Ids of /api/v1/traces?query, newest first, joined with ','. */
static void list_ids(struct fx *f, const char *query, char *out, size_t outlen)
{
	struct rvs_query_resp r;
	json_t *doc, *o;
	size_t i;
	out[0] = '\0';
	rvs_query_handle(f->db, f->dir, "/api/v1/traces", query, &r);
	assert_int_equal(r.status, 200);
	doc = json_loadb(r.body, r.len, 0, NULL);
	assert_non_null(doc);
	json_array_foreach(json_object_get(doc, "traces"), i, o)
	{
		const char *id = json_string_value(json_object_get(o, "trace_id"));
		/* the last two digits of t-000…NN */
		snprintf(out + strlen(out), outlen - strlen(out), "%s%s", i ? "," : "",
			 id + strlen(id) - 2);
	}
	json_decref(doc);
	free(r.body);
}

/* Traces 10..19 received at 1000 * n, model m<n % 2>, signature s<n % 3>
 * (chain rows), a method "hot" in the even ones. */
static void fill_list(struct fx *f)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	for (int n = 10; n < 20; n++) {
		char sql[1024];
		snprintf(sql, sizeof sql,
			 "INSERT INTO uploads (trace_id, device_id, upload_id, received_at, state)"
			 " VALUES ('t-%032d', 'd-1', randomblob(16), %d, 'decoded');"
			 "INSERT INTO traces (trace_id, model, received_at, decoded_at) VALUES"
			 " ('t-%032d', 'm%d', %d, 0);"
			 "INSERT INTO trace_chains VALUES ('t-%032d', 'top', 1, '%016d', 'a;', 1,"
			 " 1, 1);"
			 "%s",
			 n, 1000 * n, n, n % 2, 1000 * n, n, n % 3,
			 n % 2 ? ""
			       : "INSERT INTO trace_methods (trace_id, method, calls, self_ns,"
				 " incl_ns, self_rank) SELECT trace_id, 'hot', 1, 1, 1, 1 FROM"
				 " traces WHERE rowid = last_insert_rowid();");
		assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	}
	sqlite3_close(db);
}

static void test_ingest_trace_list_filters_driven_by_matches(void **state)
{
	struct fx *f = *state;
	char ids[512];

	static const struct {
		const char *query, *ids;
	} cases[] = {
		{"", "19,18,17,16,15,14,13,12,11,10"},
		{"since=12000&until=15000", "14,13,12"},
		{"since=17000", "19,18,17"},
		{"until=11001", "11,10"},
		{"until=11001&model=m1", "11"},
		{"signature=0000000000000001", "19,16,13,10"},
		{"signature=0000000000000001&since=13000&limit=1", "19"},
		{"signature=0000000000000001&method=hot", "16,10"},
		{"method=hot&until=15000", "14,12,10"},
		{"method=hot&limit=2", "18,16"},
		{"method=none", ""},
	};

	fill_list(f);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		list_ids(f, cases[i].query, ids, sizeof ids);
		assert_string_equal(ids, cases[i].ids);
	}
}

/* A trace that was decoded keeps its export while its capture is decoded
 * again (re-symbolized: the symbol store requeues it in pending_decode);
 * one never decoded has none. */
static void test_ingest_export_survives_a_requeue(void **state)
{
	struct fx *f = *state;
	char blobs[160], sql[256];
	struct rvs_upload_rec u = {0};
	struct rvs_decode_item it = {0};
	struct rva_trace *t = NULL;
	capbuf c = {0};
	char hex[65];
	sqlite3 *db;

	snprintf(blobs, sizeof blobs, "%s/blobs", f->dir);
	cb_program(&c, 4096, 0);
	cb_finish(&c);
	assert_int_equal(rvs_blob_put(blobs, c.b, c.len, hex), 0);
	for (int n = 0; n < 2; n++) {
		snprintf(u.trace_id, sizeof u.trace_id, "t-%032d", 700 + n);
		u.device_id = "d-1";
		memset(u.upload_id, 70 + n, 16);
		u.payload_kind = 1;
		u.blob_sha256 = hex;
		assert_int_equal(ops->upload_add(f->s, &u), 0);
	}
	/* The first is decoded, the second still waits. */
	snprintf(it.trace_id, sizeof it.trace_id, "t-%032d", 700);
	assert_int_equal(rvs_blob_path(blobs, hex, it.path, sizeof it.path), 0);
	f->dec.decode(f->dec.ctx, &it, 1);
	assert_int_equal(it.rc, 0);
	assert_int_equal(ops->decode_finish(f->s, &it, 1), 0);
	struct rvs_config cfg = {0};
	snprintf(cfg.database, sizeof cfg.database, "%s", f->db);
	snprintf(cfg.blob_dir, sizeof cfg.blob_dir, "%s", blobs);
	assert_int_equal(rvs_query_load_trace(&cfg, it.trace_id, &t), 0);
	rva_trace_free(t);
	t = NULL;
	assert_int_equal(rvs_query_load_trace(&cfg, "t-00000000000000000000000000000701", &t),
			 -ENOENT);
	/* Requeued as the symbol store does: still exported meanwhile. */
	assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
	snprintf(sql, sizeof sql,
		 "UPDATE uploads SET state = 'pending_decode' WHERE trace_id = '%s'", it.trace_id);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(rvs_query_load_trace(&cfg, it.trace_id, &t), 0);
	assert_non_null(t);
	rva_trace_free(t);
	free(c.b);
}

/* Issue 18 item 2: ~100 k nested calls made every top chain row ~3.5 MB of
 * text (the trace page showed them whole: 257 MB at 1 M).  A capture of
 * 100 000 nested calls now indexes chains of at most 512 frames after a
 * truncation marker, with the real depth kept in the depth column. */
static void test_ingest_100k_nested_calls_chain_text_bounded(void **state)
{
	enum { N = 100000 };
	struct fx *f = *state;
	struct rvs_upload_rec u = {0};
	struct rvs_decode_item it = {0};
	char blobs[160], hex[65];
	uint64_t t = 1ull << 32;
	capbuf c = {0};

	cb_header(&c, 0, 1000000000, 0, 1000000000000ull, 0x400000, 0);
	for (unsigned i = 0; i < N; i++)
		cb_entry(&c, 0x1000 + 16 * (i % 64), (uint32_t)(t += 20));
	for (unsigned i = 0; i < N; i++)
		cb_exit(&c, (uint32_t)(t += 20));
	cb_u64at(&c, 16, t + 10);
	cb_end_slots(&c);
	for (unsigned m = 0; m < 64; m++) {
		char name[64];
		snprintf(name, sizeof(name), "com.example.Service.method%02u(int)", m);
		cb_symbol(&c, 0x1000 + 16 * m, 0x1000 + 16 * m, 0, name);
	}
	cb_finish(&c);
	snprintf(blobs, sizeof blobs, "%s/blobs", f->dir);
	assert_int_equal(rvs_blob_put(blobs, c.b, c.len, hex), 0);
	snprintf(u.trace_id, sizeof u.trace_id, "t-%032d", 800);
	u.device_id = "d-1";
	memset(u.upload_id, 80, 16);
	u.payload_kind = 1;
	u.blob_sha256 = hex;
	assert_int_equal(ops->upload_add(f->s, &u), 0);
	snprintf(it.trace_id, sizeof it.trace_id, "%s", u.trace_id);
	assert_int_equal(rvs_blob_path(blobs, hex, it.path, sizeof it.path), 0);
	f->dec.decode(f->dec.ctx, &it, 1);
	assert_int_equal(it.rc, 0);
	/* The real depth is kept (the decoder's own bounds take a few hundred
	 * frames off the first calls: ~99 300 here), far past 512. */
	assert_true(num(f, "SELECT max(depth) FROM trace_chains") > 90000);
	assert_true(num(f, "SELECT max(length(chain)) FROM trace_chains") < 64 * 1024);
	assert_true(num(f, "SELECT count(*) FROM trace_chains WHERE chain LIKE"
			   " '[% outer frames truncated];%'") > 0);
	free(c.b);
}

/* Bytes the database file's used pages hold (WAL included: read through a
 * connection of its own). */
static int64_t db_used_bytes(struct fx *f)
{
	return num(f, "SELECT (page_count - freelist_count) * page_size FROM"
		      " pragma_page_count, pragma_freelist_count, pragma_page_size");
}

/* A SYMBOL record naming value with a name of any length (capbuild's
 * cb_symbol takes at most 256 bytes). */
static void long_symbol(capbuf *c, uint64_t value, const char *name)
{
	size_t n = strlen(name);
	uint8_t *r = calloc(1, 24 + n);
	for (int i = 0; i < 8; i++)
		r[i] = r[8 + i] = (uint8_t)(value >> (8 * i));
	for (int i = 0; i < 4; i++)
		r[20 + i] = (uint8_t)(n >> (8 * i));
	memcpy(r + 24, name, n);
	cb_record(c, 5, r, (uint32_t)(24 + n));
	free(r);
}

/* A hostile capture of a few KB of zstd: NCHAIN call chains NDEPTH deep, each
 * frame a distinct method with a 4 KB name.  *zlen: its compressed size. */
static uint8_t *hostile_capture(unsigned seed, size_t *rawlen, size_t *zlen)
{
	enum { NDEPTH = 600, NCHAIN = 1, NMETH = 100, NAME = 4096 };
	uint64_t t = 1ull << 32;
	capbuf c = {0};
	char *name = malloc(NAME + 1);
	uint8_t *z;

	cb_header(&c, 0, 1000000000, 0, 1000000000000ull, 0x400000, 0);
	for (unsigned k = 0; k < NCHAIN; k++) {
		for (unsigned i = 0; i < NDEPTH; i++)
			cb_entry(&c, 0x1000 + 16 * ((i + k) % NMETH), (uint32_t)(t += 20));
		for (unsigned i = 0; i < NDEPTH; i++)
			cb_exit(&c, (uint32_t)(t += 20 + k));
	}
	cb_u64at(&c, 16, t + 10);
	cb_end_slots(&c);
	memset(name, 'A', NAME);
	name[NAME] = 0;
	for (unsigned m = 0; m < NMETH; m++) {
		snprintf(name, 32, "evil%u.m%05u", seed, m);
		name[strlen(name)] = 'A';
		long_symbol(&c, 0x1000 + 16 * m, name);
	}
	cb_finish(&c);
	*rawlen = c.len;
	z = malloc(ZSTD_compressBound(c.len));
	*zlen = ZSTD_compress(z, ZSTD_compressBound(c.len), c.b, c.len, 19);
	assert_false(ZSTD_isError(*zlen));
	free(c.b);
	free(name);
	return z;
}

/* 25 uploads of ~3 KB of zstd (600-deep chains of 4 KB method names) stored
 * 299 MB of chain text: an upload's index is now bounded by a small
 * multiple of its size, whatever it holds — at most 64 KB of database per
 * 3 KB upload — and the cuts are marked. */
static void test_ingest_hostile_3kb_upload_costs_at_most_64kb_index(void **state)
{
	enum { N = 25 };
	struct fx *f = *state;
	char blobs[160], hex[65];
	size_t wire = 0;
	int64_t before, after;

	snprintf(blobs, sizeof blobs, "%s/blobs", f->dir);
	/* The tables' first pages are not the uploads' cost. */
	assert_int_equal(upload_and_decode(f, 1, NULL), 0);
	before = db_used_bytes(f);
	for (unsigned n = 0; n < N; n++) {
		struct rvs_upload_rec u = {0};
		struct rvs_decode_item it = {0};
		size_t rawlen, zlen;
		uint8_t *z = hostile_capture(n, &rawlen, &zlen);

		assert_true(zlen <= 3300);
		wire += zlen;
		assert_int_equal(rvs_blob_put(blobs, z, zlen, hex), 0);
		snprintf(u.trace_id, sizeof u.trace_id, "t-%032u", 900 + n);
		u.device_id = "d-1";
		memset(u.upload_id, 90 + (int)n, 16);
		u.payload_kind = 1;
		u.compression = REARVIEW__COMPRESSION__COMPRESSION_ZSTD;
		u.payload_size = rawlen;
		u.blob_sha256 = hex;
		u.blob_bytes = zlen;
		assert_int_equal(ops->upload_add(f->s, &u), 0);
		snprintf(it.trace_id, sizeof it.trace_id, "%s", u.trace_id);
		assert_int_equal(rvs_blob_path(blobs, hex, it.path, sizeof it.path), 0);
		f->dec.decode(f->dec.ctx, &it, 1);
		assert_int_equal(it.rc, 0);
		free(z);
	}
	after = db_used_bytes(f);
	fprintf(stderr,
		"%d hostile uploads of %zu bytes on average: %" PRId64 " bytes of database each\n",
		N, wire / N, (after - before) / N);
	assert_true(after - before <= (int64_t)N * 64 * 1024);
	/* Every stored name is cut, and says so. */
	assert_int_equal(num(f, "SELECT count(*) FROM trace_methods WHERE length(method) > 256"),
			 0);
	assert_true(num(f, "SELECT count(*) FROM trace_methods WHERE method LIKE '%…#%'") > 0);
	assert_true(num(f, "SELECT count(*) FROM trace_chains WHERE chain LIKE"
			   " '[% outer frames truncated];%'") > 0);
	assert_true(num(f, "SELECT max(length(chain)) FROM trace_chains") <= 4096);
	/* The real depth is kept (~600, less the decoder's own bounds). */
	assert_true(num(f, "SELECT max(depth) FROM trace_chains") > 512);
	assert_int_equal(num(f, "SELECT count(*) FROM traces WHERE index_cut LIKE '%names cut%'"),
			 N);
}

/* The decoder on a PostgreSQL store (private server: pg_harness.h): a
 * summary-only upload taken from the queue with its lease is indexed by
 * decode.c through the store's PostgreSQL writer — rows, signature totals,
 * issue — and its outcome recorded under the same lease. */
static struct pgh pg; /* stopped by main, also after a failed case */

static void test_ingest_pg_decoder_indexes_under_its_lease(void **state)
{
	Rearview__Summary sum = REARVIEW__SUMMARY__INIT;
	Rearview__MethodStat m1 = REARVIEW__METHOD_STAT__INIT;
	Rearview__MethodStat *top[1] = {&m1};
	Rearview__Chain c = REARVIEW__CHAIN__INIT;
	Rearview__Chain *chains[1] = {&c};
	char *frames[2] = {(char *)"main", (char *)"Json.parse"};
	const struct rvs_store_ops *pgops = &rvs_store_pg;
	struct rvs_device_rec dev = {0};
	struct rvs_upload_rec u = {0};
	struct rvs_decode_item it[2];
	struct rvs_decoder dec;
	struct rvs_decode *d = NULL;
	struct rvs_store *s = NULL;
	char dsn[256], *sql_out = NULL;
	uint8_t buf[512];
	PGconn *pc;
	PGresult *r;
	int rc = pgh_start(&pg);

	(void)state;
	if (rc == -ENOENT)
		skip(); /* no PostgreSQL 15 here: pg.why says what is missing */
	assert_int_equal(rc, 0);
	assert_int_equal(pgh_fresh_db(&pg, dsn, sizeof dsn), 0);
	assert_int_equal(pgops->open(dsn, &s), 0);
	assert_int_equal(rvs_decode_new(dsn, &dec, &d), 0);
	snprintf(dev.device_id, sizeof dev.device_id, "d-1");
	assert_int_equal(pgops->device_add(s, &dev), 0);
	m1.name = (char *)"Json.parse";
	m1.calls = 3;
	m1.self_ns = 900;
	m1.inclusive_ns = 950;
	sum.top_self = top;
	sum.n_top_self = 1;
	c.frames = frames;
	c.n_frames = 2;
	c.signature = 0xabcdef0123456789ull;
	sum.chains_at_anomaly = chains;
	sum.n_chains_at_anomaly = 1;
	snprintf(u.trace_id, sizeof u.trace_id, "t-%032d", 1);
	u.device_id = "d-1";
	memset(u.upload_id, 1, 16);
	u.app_version = "2.0";
	u.summary_len = rearview__summary__get_packed_size(&sum);
	assert_true(u.summary_len <= sizeof buf);
	rearview__summary__pack(&sum, buf);
	u.summary = buf;
	assert_int_equal(pgops->upload_add(s, &u), 0);
	assert_int_equal(pgops->decode_next_batch(s, 0, 1, it, 2), 1);
	assert_true(it[0].lease > 0);
	dec.decode(dec.ctx, it, 1);
	assert_int_equal(it[0].rc, 0);
	assert_int_equal(pgops->decode_finish(s, it, 1), 0);

	pc = PQconnectdb(dsn);
	r = PQexec(pc,
		   "SELECT (SELECT count(*) FROM trace_methods) || ' ' ||"
		   " (SELECT signature || ' ' || issue || ' ' || device_id FROM traces) || ' ' ||"
		   " (SELECT traces FROM signatures) || ' ' ||"
		   " (SELECT state FROM uploads)");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	sql_out = PQgetvalue(r, 0, 0);
	assert_string_equal(sql_out, "1 abcdef0123456789 abcdef0123456789 d-1 1 decoded");
	PQclear(r);
	PQfinish(pc);
	rvs_decode_free(d);
	pgops->close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_ingest_summary_only_methods_chains_and_signature_indexed, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_ingest_summary_absent_indexes_metadata_only,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_ingest_hostile_summary_is_bounded, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ingest_queue_partitions_split_without_overlap,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_ingest_batch_failure_quarantines_only_its_upload, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_ingest_hostile_3kb_upload_costs_at_most_64kb_index, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ingest_100k_nested_calls_chain_text_bounded,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_ingest_export_survives_a_requeue, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ingest_two_decoders_run_concurrently, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ingest_trace_list_filters_driven_by_matches,
						setup, teardown),
		cmocka_unit_test(test_ingest_pg_decoder_indexes_under_its_lease),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);

	pgh_stop(&pg);
	return failed;
}
