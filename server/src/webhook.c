/*
 * webhook.c — alert delivery to webhook URLs (webhook.h): rows of
 * webhook_deliveries POSTed with libcurl, signed with HMAC-SHA256 (mbedTLS
 * md), retried with exponential backoff and jitter.
 *
 * Invariants: a row's state moves only pending → delivered or pending →
 * failed; attempts counts the POSTs made; a pending row always has the
 * time of its next try (next_try_ms, unix ms); a row is updated only after
 * its POST ended, so a crash in between retries it (at-least-once
 * delivery: receivers dedupe by the X-Rearview-Delivery id).
 */
#include "webhook.h"
#include "store.h"
#include "params.h"
#include "reply.h"
#include "route.h"
#include "rvs.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <mbedtls/md.h>
#include <sqlite3.h>

#define DUE_MAX	     32
#define BACKOFF_CAP  3600000ull
#define SECRET_MAX   4096
#define ERR_MAX	     256
#define DELIVERY_MAX 200 /* rows GET /api/v1/alerts lists */

int rvs_webhook_sign(const uint8_t *key, size_t keylen, const char *body, size_t len, char hex[65])
{
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	uint8_t mac[32];

	if (!md || mbedtls_md_hmac(md, key, keylen, (const uint8_t *)body, len, mac))
		return -EIO;
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", mac[i]);
	return 0;
}

int rvs_webhook_enqueue(sqlite3 *db, const char *url, const char *event, const char *body,
			int64_t now_ms)
{
	static const char sql[] =
		"INSERT INTO webhook_deliveries (url, event, body, state, attempts, next_try_ms,"
		" created_at) VALUES (?1, ?2, ?3, 'pending', 0, ?4, ?4 / 1000)";
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, url, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, event, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, body, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now_ms);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(st);
	return rc;
}

uint64_t rvs_webhook_backoff_ms(uint32_t backoff_ms, uint32_t attempts, double r)
{
	uint64_t d = backoff_ms ? backoff_ms : 1;

	assert(attempts >= 1 && r >= 0 && r < 1);
	for (uint32_t i = 1; i < attempts && d < BACKOFF_CAP; i++)
		d *= 2;
	if (d > BACKOFF_CAP)
		d = BACKOFF_CAP;
	return d / 2 + (uint64_t)((double)(d - d / 2) * r);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double jitter(void)
{
	uint32_t v = 0;
	if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
		v = (uint32_t)now_ms();
	return (double)v / 4294967296.0;
}

/* The HMAC key: the secret file's content without trailing newlines. */
static int read_secret(const char *path, uint8_t *key, size_t *len)
{
	FILE *f = path && path[0] ? fopen(path, "rb") : NULL;
	size_t n;

	if (!f)
		return -ENOKEY;
	n = fread(key, 1, SECRET_MAX, f);
	fclose(f);
	while (n && (key[n - 1] == '\n' || key[n - 1] == '\r'))
		n--;
	if (!n)
		return -ENOKEY;
	*len = n;
	return 0;
}

static size_t discard(char *p, size_t sz, size_t n, void *u)
{
	(void)p;
	(void)u;
	return sz * n;
}

/* POSTs one delivery; 0 on a 2xx, else -EIO with why in err. */
static int post(const struct rvs_webhook_cfg *cfg, const uint8_t *key, size_t keylen, int64_t id,
		const char *url, const char *event, const char *body, long *status, char *err)
{
	char sig[65], h1[128], h2[96], h3[64];
	struct curl_slist *h = NULL;
	CURL *c = curl_easy_init();
	CURLcode cc;
	int rc = -EIO;

	*status = 0;
	if (!c || rvs_webhook_sign(key, keylen, body, strlen(body), sig)) {
		snprintf(err, ERR_MAX, "out of memory or signing failed");
		curl_easy_cleanup(c);
		return -EIO;
	}
	snprintf(h1, sizeof h1, RVS_WEBHOOK_SIG_HEADER ": sha256=%s", sig);
	snprintf(h2, sizeof h2, "X-Rearview-Event: %s", event);
	snprintf(h3, sizeof h3, "X-Rearview-Delivery: %lld", (long long)id);
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, h1);
	h = curl_slist_append(h, h2);
	h = curl_slist_append(h, h3);
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)cfg->timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		snprintf(err, ERR_MAX, "%s", curl_easy_strerror(cc));
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
		if (*status >= 200 && *status < 300)
			rc = 0;
		else
			snprintf(err, ERR_MAX, "HTTP %ld", *status);
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return rc;
}

struct due {
	int64_t id;
	uint32_t attempts;
	char *url, *event, *body;
};

static int load_due(sqlite3 *db, struct due *d, size_t *n)
{
	static const char sql[] =
		"SELECT id, attempts, url, event, body FROM webhook_deliveries"
		" WHERE state = 'pending' AND next_try_ms <= ?1 ORDER BY next_try_ms, id LIMIT ?2";
	sqlite3_stmt *st;
	int rc = 0, s;

	*n = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, now_ms());
	sqlite3_bind_int(st, 2, DUE_MAX);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		struct due *x = &d[*n];
		x->id = sqlite3_column_int64(st, 0);
		x->attempts = (uint32_t)sqlite3_column_int(st, 1);
		x->url = strdup((const char *)sqlite3_column_text(st, 2) ?: "");
		x->event = strdup((const char *)sqlite3_column_text(st, 3) ?: "");
		x->body = strdup((const char *)sqlite3_column_text(st, 4) ?: "");
		(*n)++;
		if (!x->url || !x->event || !x->body) {
			rc = -ENOMEM;
			break;
		}
	}
	if (!rc && s != SQLITE_DONE)
		rc = -EIO;
	sqlite3_finalize(st);
	return rc;
}

static int record(sqlite3 *db, const struct rvs_webhook_cfg *cfg, const struct due *x, int ok,
		  long status, const char *err)
{
	static const char sql[] =
		"UPDATE webhook_deliveries SET attempts = ?2, last_status = ?3, last_error = ?4,"
		" state = ?5, next_try_ms = ?6, delivered_at = ?7 WHERE id = ?1 AND state = "
		"'pending'";
	uint32_t attempts = x->attempts + 1;
	int64_t now = now_ms();
	const char *state = ok ? "delivered" : attempts >= cfg->max_attempts ? "failed" : "pending";
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, x->id);
	sqlite3_bind_int(st, 2, (int)attempts);
	if (status)
		sqlite3_bind_int64(st, 3, status);
	if (!ok)
		sqlite3_bind_text(st, 4, err, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, state, -1, SQLITE_STATIC);
	sqlite3_bind_int64(
		st, 6,
		ok ? now
		   : now + (int64_t)rvs_webhook_backoff_ms(cfg->backoff_ms, attempts, jitter()));
	if (ok)
		sqlite3_bind_int64(st, 7, now / 1000);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
	sqlite3_finalize(st);
	rvs_log(ok ? "info" : "warn",
		"msg=\"webhook\" id=%lld attempt=%u state=%s status=%ld err=\"%s\"",
		(long long)x->id, attempts, state, status, ok ? "" : err);
	return rc;
}

int rvs_webhook_deliver_due(const char *database, const struct rvs_webhook_cfg *cfg,
			    unsigned *delivered)
{
	uint8_t key[SECRET_MAX];
	size_t keylen = 0, n = 0;
	struct due d[DUE_MAX];
	sqlite3 *db = NULL;
	unsigned ok = 0;
	int rc;

	if (delivered)
		*delivered = 0;
	if (sqlite3_open_v2(database, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return -EIO;
	}
	rvs_sqlite_busy(db, 5000);
	rc = load_due(db, d, &n);
	if (!rc && n)
		rc = read_secret(cfg->secret_file, key, &keylen);
	for (size_t i = 0; !rc && i < n; i++) {
		char err[ERR_MAX] = "";
		long status = 0;
		int r = post(cfg, key, keylen, d[i].id, d[i].url, d[i].event, d[i].body, &status,
			     err);
		ok += r == 0;
		rc = record(db, cfg, &d[i], r == 0, status, err);
	}
	for (size_t i = 0; i < n; i++) {
		free(d[i].url);
		free(d[i].event);
		free(d[i].body);
	}
	sqlite3_close(db);
	if (rc == -ENOKEY)
		rvs_log("error", "msg=\"webhook\" err=\"no secret in webhook_secret_file\"");
	if (delivered)
		*delivered = ok;
	return rc;
}

void rvs_webhook_api_list(struct rvs_call *c)
{
	static const char sql[] =
		"SELECT id, url, event, state, attempts, last_status, last_error, next_try_ms,"
		" created_at, delivered_at, body FROM webhook_deliveries ORDER BY id DESC LIMIT ?1";
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	json_t *rows = json_array();
	int s;

	/* Read from sqlite directly still (issue 15): refused on PostgreSQL. */
	if (rvs_store_for(c->cfg->database) != &rvs_store_sqlite) {
		json_decref(rows);
		return rvs_query_set_error(c->q, 501,
					   "webhook deliveries: not available on PostgreSQL yet");
	}

	if (sqlite3_open_v2(c->cfg->database, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || !rows) {
		sqlite3_close(db);
		json_decref(rows);
		return rvs_query_set_error(c->q, 503, "database unavailable");
	}
	sqlite3_bind_int(st, 1, DELIVERY_MAX);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *o = json_object();
		for (int i = 0; o && i < sqlite3_column_count(st); i++) {
			int t = sqlite3_column_type(st, i);
			json_t *v = t == SQLITE_NULL ? json_null()
				    : t == SQLITE_INTEGER
					    ? json_integer(sqlite3_column_int64(st, i))
					    : json_string((const char *)sqlite3_column_text(st, i));
			json_object_set_new(o, sqlite3_column_name(st, i), v);
		}
		json_array_append_new(rows, o);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (s != SQLITE_DONE) {
		json_decref(rows);
		return rvs_query_set_error(c->q, 500, "database error");
	}
	rvs_query_reply(c->q, 200, json_pack("{s:o}", "deliveries", rows));
}
