/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blob_pg.c — the PostgreSQL blob backend (blob.h): blob HEX is the row
 * rv_blobs(sha256 = HEX) with its bytes in a bytea column.
 *
 * libpq runs on work threads only: opening the handle connects nothing;
 * each call takes a connection from a pool (connecting, creating the table
 * and preparing the statements on first use) and gives it back, so there
 * are at most as many connections as threads using the handle at once.  A
 * connection that broke is closed instead of returned.  Every statement is
 * prepared; bytes travel as binary parameters and results.
 * Invariants: a put commits before it returns (synchronous_commit: durable);
 * a put of a stored blob renews stored_at without sending the bytes again;
 * get and get_fd read 1 MiB substrings (the column's storage is EXTERNAL,
 * uncompressed, so a substring does not read the whole value): a read holds
 * one chunk besides what it returns, where a whole bytea result would be
 * held twice more by libpq (its input buffer and the PGresult).
 * A transaction is atomic: there are no leftovers of unfinished writes.
 */
#include "blob/blob.h"
#include "store/pg/pg.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "rearview/common.h"
#include "base/log.h"
#include "base/util.h"

#define POOL_MAX 64
#define CHUNK	 (1u << 20)

struct pg_blobs {
	struct rvs_blobs base; /* first: the handle callers hold */
	char *conninfo;
	pthread_mutex_t mu;
	PGconn *idle[POOL_MAX]; /* connections nobody uses (mu) */
	int nidle;
};

static const char *const schema = "CREATE TABLE IF NOT EXISTS rv_blobs ("
				  " sha256 text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),"
				  " bytes bytea NOT NULL,"
				  " stored_at timestamptz NOT NULL DEFAULT now());"
				  "ALTER TABLE rv_blobs ALTER COLUMN bytes SET STORAGE EXTERNAL";

static const struct {
	const char *name, *sql;
	int nparams;
} stmts[] = {
	{"touch", "UPDATE rv_blobs SET stored_at = now() WHERE sha256 = $1", 1},
	{"insert",
	 "INSERT INTO rv_blobs (sha256, bytes) VALUES ($1, $2)"
	 " ON CONFLICT (sha256) DO UPDATE SET stored_at = now()",
	 2},
	{"size", "SELECT octet_length(bytes) FROM rv_blobs WHERE sha256 = $1", 1},
	{"chunk",
	 "SELECT substring(bytes FROM $2::int FOR $3::int) FROM rv_blobs WHERE sha256 = $1", 3},
	{"del",
	 "DELETE FROM rv_blobs WHERE sha256 = $1"
	 " AND stored_at <= now() - make_interval(secs => $2::bigint)",
	 2},
	{"list",
	 "SELECT sha256, extract(epoch FROM now() - stored_at)::bigint FROM rv_blobs"
	 " WHERE sha256 > $1 ORDER BY sha256 LIMIT 1000",
	 1},
};

static struct pg_blobs *pg_of(struct rvs_blobs *b)
{
	return (struct pg_blobs *)b;
}

static PGconn *connect_new(struct pg_blobs *p)
{
	PGconn *c = PQconnectdb(p->conninfo);
	PGresult *r;
	int ok;

	if (PQstatus(c) != CONNECTION_OK) {
		rvs_log("error", "postgresql connect failed", "err=\"%s\"", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	r = PQexec(c, schema);
	ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	PQclear(r);
	for (size_t i = 0; ok && i < sizeof stmts / sizeof stmts[0]; i++) {
		r = PQprepare(c, stmts[i].name, stmts[i].sql, stmts[i].nparams, NULL);
		ok = PQresultStatus(r) == PGRES_COMMAND_OK;
		PQclear(r);
	}
	if (!ok) {
		rvs_log("error", "postgresql blob setup failed", "err=\"%s\"", PQerrorMessage(c));
		PQfinish(c);
		return NULL;
	}
	return c;
}

static PGconn *acquire(struct pg_blobs *p)
{
	PGconn *c = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->nidle)
		c = p->idle[--p->nidle];
	pthread_mutex_unlock(&p->mu);
	return c ? c : connect_new(p);
}

static void release(struct pg_blobs *p, PGconn *c)
{
	if (!c)
		return;
	if (PQstatus(c) != CONNECTION_OK) {
		/* The server restarted or ended sessions: the idle connections
		 * opened before are as dead; close them all. */
		PGconn *dead[POOL_MAX];
		size_t n;

		PQfinish(c);
		pthread_mutex_lock(&p->mu);
		n = (size_t)p->nidle;
		memcpy(dead, p->idle, n * sizeof *dead);
		p->nidle = 0;
		pthread_mutex_unlock(&p->mu);
		while (n)
			PQfinish(dead[--n]);
		return;
	}
	pthread_mutex_lock(&p->mu);
	if (p->nidle < POOL_MAX) {
		p->idle[p->nidle++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	if (c)
		PQfinish(c);
}

/* Runs prepared statement `name` with p's parameters, results in binary
 * (rvs_pg_exec: a failure is logged).  *out gets the result when the
 * caller wants it. */
static int run(PGconn *c, const char *name, const struct rvs_pg_params *p, PGresult **out)
{
	return rvs_pg_exec(c, name, RVS_PG_PREPARED | RVS_PG_BINARY, p, out, NULL);
}

/* run() on a connection of the pool, given back at once: -EAGAIN when none
 * could be had. */
static int run_pooled(struct pg_blobs *p, const char *name, const struct rvs_pg_params *a,
		      PGresult **out)
{
	PGconn *c = acquire(p);
	int rc;

	if (!c)
		return -EAGAIN;
	rc = run(c, name, a, out);
	release(p, c);
	return rc;
}

/* A bigint column of a binary result. */
static int64_t col_i64(PGresult *r, int row, int col)
{
	uint64_t v = 0;
	const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
	if (PQgetlength(r, row, col) == 8)
		for (int i = 0; i < 8; i++)
			v = v << 8 | p[i];
	else if (PQgetlength(r, row, col) == 4)
		for (int i = 0; i < 4; i++)
			v = v << 8 | p[i];
	return (int64_t)v;
}

static int pg_put(struct rvs_blobs *b, const void *data, size_t len, char hex[65])
{
	struct pg_blobs *p = pg_of(b);
	uint8_t digest[32];
	PGconn *c;
	PGresult *r;
	int rc;

	if (len > 0x3fffffff)
		return -EFBIG; /* bytea's limit is 1 GB */
	rvs_sha256(data, len, digest);
	rvs_hex(digest, 32, hex);
	if (!(c = acquire(p)))
		return -EAGAIN;
	struct rvs_pg_params a = {0};
	rvs_pg_text(&a, hex);
	if ((rc = run(c, "touch", &a, &r)) == 0) {
		int touched = (int)strtol(PQcmdTuples(r), NULL, 10);
		PQclear(r);
		rvs_pg_bytea(&a, data, len);
		if (!touched)
			rc = run(c, "insert", &a, NULL);
	}
	release(p, c);
	return rc;
}

/* The size of blob hex on c: 0, -ENOENT, -EFBIG past max, or -EIO. */
static int blob_size(PGconn *c, const char *hex, uint64_t max, int64_t *size)
{
	struct rvs_pg_params a = {0};
	PGresult *r;
	int rc;

	rvs_pg_text(&a, hex);
	rc = run(c, "size", &a, &r);

	if (rc)
		return rc;
	*size = PQntuples(r) ? col_i64(r, 0, 0) : -1;
	PQclear(r);
	if (*size < 0)
		return -ENOENT;
	return (uint64_t)*size > max ? -EFBIG : 0;
}

/* Reads blob hex's size bytes on c in CHUNK-byte substrings, handing each
 * to put(arg, bytes, n), and checks them against the name.  0, -ENOENT
 * (deleted meanwhile), -EBADMSG, put's error or -EIO. */
static int read_chunks(PGconn *c, const char *hex, int64_t size,
		       int (*put)(void *arg, const void *p, size_t n), void *arg)
{
	struct rvs_blob_hasher h;
	PGresult *r;
	int rc = 0;

	rvs_blob_hasher_init(&h);
	for (int64_t off = 0; rc == 0 && off < size; off += CHUNK) {
		char from[32], count[32];
		snprintf(from, sizeof from, "%lld", (long long)off + 1);
		snprintf(count, sizeof count, "%u", CHUNK);
		struct rvs_pg_params k = {0};
		rvs_pg_text(&k, hex);
		rvs_pg_text(&k, from);
		rvs_pg_text(&k, count);
		if ((rc = run(c, "chunk", &k, &r)))
			break;
		if (PQntuples(r) == 0 || PQgetisnull(r, 0, 0))
			rc = -ENOENT; /* deleted meanwhile */
		else if ((rc = put(arg, PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0))) == 0)
			rvs_blob_hasher_update(&h, PQgetvalue(r, 0, 0),
					       (size_t)PQgetlength(r, 0, 0));
		PQclear(r);
	}
	if (!rvs_blob_hasher_matches(&h, hex) && rc == 0)
		rc = -EBADMSG;
	return rc;
}

/* get's buffer: n bytes filled of cap. */
struct fill {
	uint8_t *buf;
	size_t n, cap;
};

static int put_buf(void *arg, const void *p, size_t n)
{
	struct fill *f = arg;
	if (n > f->cap - f->n)
		return -EBADMSG; /* longer than its size said */
	memcpy(f->buf + f->n, p, n);
	f->n += n;
	return 0;
}

static int put_fd(void *arg, const void *p, size_t n)
{
	return rvc_write_all(*(int *)arg, p, n);
}

static int pg_get(struct rvs_blobs *b, const char *hex, size_t max, uint8_t **out, size_t *len)
{
	struct pg_blobs *p = pg_of(b);
	struct fill f = {0};
	int64_t size;
	PGconn *c;
	int rc;

	if (!rvs_blob_name_ok(hex))
		return -EINVAL;
	if (!(c = acquire(p)))
		return -EAGAIN;
	if ((rc = blob_size(c, hex, max, &size)) == 0) {
		f.cap = (size_t)size;
		if (!(f.buf = malloc(f.cap ? f.cap : 1)))
			rc = -ENOMEM;
		else
			rc = read_chunks(c, hex, size, put_buf, &f);
	}
	release(p, c);
	if (rc == 0 && f.n != f.cap)
		rc = -EBADMSG; /* shorter than its size said */
	if (rc) {
		free(f.buf);
		return rc;
	}
	*out = f.buf;
	*len = f.n;
	return 0;
}

static int pg_get_fd(struct rvs_blobs *b, const char *hex, uint64_t max, int fd)
{
	struct pg_blobs *p = pg_of(b);
	int64_t size;
	PGconn *c;
	int rc;

	if (!rvs_blob_name_ok(hex))
		return -EINVAL;
	if (!(c = acquire(p)))
		return -EAGAIN;
	if ((rc = blob_size(c, hex, max, &size)) == 0)
		rc = read_chunks(c, hex, size, put_fd, &fd);
	release(p, c);
	return rc;
}

static int pg_exists(struct rvs_blobs *b, const char *hex)
{
	struct pg_blobs *p = pg_of(b);
	PGresult *r;
	int rc;

	if (!rvs_blob_name_ok(hex))
		return -EINVAL;
	struct rvs_pg_params a = {0};
	rvs_pg_text(&a, hex);
	rc = run_pooled(p, "size", &a, &r);
	if (rc)
		return rc;
	rc = PQntuples(r) > 0;
	PQclear(r);
	return rc;
}

static int pg_del(struct rvs_blobs *b, const char *hex, int64_t min_age_s)
{
	struct pg_blobs *p = pg_of(b);
	char age[32];
	PGresult *r;
	int rc;

	if (!rvs_blob_name_ok(hex))
		return -EINVAL;
	snprintf(age, sizeof age, "%lld", (long long)min_age_s);
	struct rvs_pg_params a = {0};
	rvs_pg_text(&a, hex);
	rvs_pg_text(&a, age);
	rc = run_pooled(p, "del", &a, &r);
	if (rc)
		return rc;
	rc = (int)strtol(PQcmdTuples(r), NULL, 10) > 0;
	PQclear(r);
	return rc;
}

static int pg_sweep(struct rvs_blobs *b, int64_t min_age_s,
		    int (*referenced)(const char *hex, void *arg), void *arg,
		    struct rvs_blob_sweep_stats *out)
{
	struct pg_blobs *p = pg_of(b);
	struct rvs_blob_sweep_stats st = {0, 0};
	char after[65] = "";
	int rc = 0, n;

	do {
		PGconn *c = acquire(p);
		PGresult *r;
		struct rvs_pg_params a = {0};
		if (!c)
			return -EAGAIN;
		rvs_pg_text(&a, after);
		rc = run(c, "list", &a, &r);
		release(p, c);
		if (rc)
			break;
		n = PQntuples(r);
		for (int i = 0; rc == 0 && i < n; i++) {
			char hex[65];
			snprintf(hex, sizeof hex, "%s", PQgetvalue(r, i, 0));
			snprintf(after, sizeof after, "%s", hex);
			if (!referenced)
				continue;
			int ref = referenced(hex, arg);
			if (ref < 0)
				rc = ref;
			else if (ref == 0 && col_i64(r, i, 1) >= min_age_s) {
				int d = pg_del(b, hex, min_age_s);
				rc = d < 0 ? d : 0;
				st.orphans += d > 0;
			}
		}
		PQclear(r);
	} while (rc == 0 && n == 1000);
	if (out)
		*out = st;
	return rc;
}

static void pg_close(struct rvs_blobs *b)
{
	struct pg_blobs *p = pg_of(b);
	while (p->nidle)
		PQfinish(p->idle[--p->nidle]);
	pthread_mutex_destroy(&p->mu);
	free(p->conninfo);
	free(p);
}

static const struct rvs_blob_ops pg_ops = {
	.name = "postgresql",
	.put = pg_put,
	.get = pg_get,
	.get_fd = pg_get_fd,
	.exists = pg_exists,
	.del = pg_del,
	.sweep = pg_sweep,
	.path = NULL,
	.close = pg_close,
};

int rvs_blobs_open_pg(const char *conninfo, struct rvs_blobs **out)
{
	struct pg_blobs *p = calloc(1, sizeof *p);

	if (!p)
		return -ENOMEM;
	if (!(p->conninfo = strdup(conninfo))) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	p->base.ops = &pg_ops;
	assert((void *)p == (void *)&p->base);
	*out = &p->base;
	return 0;
}
