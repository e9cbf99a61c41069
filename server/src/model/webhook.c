/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook.c — alert delivery to webhook URLs (webhook.h): rows of
 * webhook_deliveries (read and written through the store: store.h's
 * webhook_* operations, both backends) POSTed with libcurl, signed with
 * HMAC-SHA256 (mbedTLS md), retried with exponential backoff and jitter.
 *
 * Invariants: a row's state moves only pending → delivered or pending →
 * failed; attempts counts the POSTs made; a pending row always has the
 * time of its next try (next_try_ms, unix ms); a row is updated only after
 * its POST ended, so a crash in between retries it once its claim's lease
 * ends (at-least-once delivery: receivers dedupe by the X-Rearview-Delivery
 * id); a pass POSTs only rows it claimed (webhook_claim: on PostgreSQL one
 * node claims a row), so two passes never POST one delivery at once.  The
 * counters (metrics.h's rvs_webhook_stats) are atomics: passes run on work threads.
 */
#include "model/webhook.h"
#include "base/metrics.h"
#include "store/store.h"
#include "base/log.h"
#include "base/util.h"

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

#define DUE_MAX	    32
#define BACKOFF_CAP 3600000ull
#define SECRET_MAX  4096
#define ERR_MAX	    256

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
	size_t n = 0;
	int rc = path && path[0] ? rvs_read_private_file(path, key, SECRET_MAX, &n) : -ENOENT;

	/* Like the other secret files: one anybody may read is refused. */
	if (rc == -EPERM) {
		rvs_log("error", "webhook",
			"err=\"webhook secret file readable by group or others:"
			" refused (chmod 600 it)\" path=\"%s\"",
			path);
		return -EPERM;
	}
	if (rc)
		return -ENOKEY;
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

struct claimed {
	struct due d[DUE_MAX];
	size_t n;
};

static int claim_row(void *arg, const struct rvs_webhook_row *r)
{
	struct claimed *c = arg;
	struct due *x = &c->d[c->n];

	assert(c->n < DUE_MAX);
	x->id = r->id;
	x->attempts = r->attempts;
	x->url = strdup(r->url ? r->url : "");
	x->event = strdup(r->event ? r->event : "");
	x->body = strdup(r->body ? r->body : "");
	c->n++;
	return x->url && x->event && x->body ? 0 : -ENOMEM;
}

static int record(const struct rvs_store_ops *ops, struct rvs_regress_db *db,
		  const struct rvs_webhook_cfg *cfg, const struct due *x, int ok, long status,
		  const char *err)
{
	uint32_t attempts = x->attempts + 1;
	int64_t now = now_ms();
	const char *state = ok ? "delivered" : attempts >= cfg->max_attempts ? "failed" : "pending";
	struct rvs_webhook_row r = {
		.id = x->id,
		.state = state,
		.attempts = attempts,
		.last_status = status,
		.last_error = ok ? NULL : err,
		.next_try_ms = ok ? now
				  : now + (int64_t)rvs_webhook_backoff_ms(cfg->backoff_ms, attempts,
									  jitter()),
		.delivered_at = ok ? now / 1000 : -1,
	};
	int rc = ops->webhook_record(db, &r, x->attempts);

	rvs_webhook_count(ok, !ok && !strcmp(state, "failed"));
	rvs_log(ok ? "info" : "warn", "webhook",
		"id=%lld attempt=%u state=%s status=%ld err=\"%s\"", (long long)x->id, attempts,
		state, status, ok ? "" : err);
	/* Recorded by another pass meanwhile (its lease ran out): not an error. */
	return rc == -ENOENT ? 0 : rc;
}

int rvs_webhook_deliver_due(const char *database, const struct rvs_webhook_cfg *cfg,
			    unsigned *delivered)
{
	uint8_t key[SECRET_MAX];
	size_t keylen = 0;
	struct claimed c = {.n = 0};
	const struct rvs_store_ops *ops;
	struct rvs_store *st;
	struct rvs_regress_db *db;
	/* Every claimed row is tried within its lease. */
	int64_t lease = (int64_t)DUE_MAX * (cfg->timeout_ms ? cfg->timeout_ms : 1) + 60000;
	uint64_t pending;
	unsigned ok = 0;
	int rc;

	if (delivered)
		*delivered = 0;
	if ((rc = rvs_store_regress_open(database, &ops, &st, &db)))
		return rc;
	/* Without the key nothing is claimed: the rows stay due. */
	rc = ops->webhook_pending(db, &pending);
	if (!rc && pending && (rc = read_secret(cfg->secret_file, key, &keylen)) == 0)
		rc = ops->webhook_claim(db, now_ms(), lease, DUE_MAX, claim_row, &c);
	rc = rc > 0 ? 0 : rc;
	for (size_t i = 0; !rc && i < c.n; i++) {
		char err[ERR_MAX] = "";
		long status = 0;
		int r = post(cfg, key, keylen, c.d[i].id, c.d[i].url, c.d[i].event, c.d[i].body,
			     &status, err);
		ok += r == 0;
		rc = record(ops, db, cfg, &c.d[i], r == 0, status, err);
	}
	for (size_t i = 0; i < c.n; i++) {
		free(c.d[i].url);
		free(c.d[i].event);
		free(c.d[i].body);
	}
	if (ops->webhook_pending(db, &pending) == 0)
		rvs_webhook_count_pending(pending);
	rvs_store_regress_close(ops, st, db);
	if (rc == -ENOKEY)
		rvs_log("error", "webhook", "err=\"no secret in webhook_secret_file\"");
	if (delivered)
		*delivered = ok;
	return rc;
}
