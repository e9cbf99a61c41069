/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upload_req.c — the uploader's HTTP requests and their failures
 * (upload_int.h), which its uploads (upload.c) and its enrolment and policy
 * fetches (enroll.c) share: one request made, sent on the daemon's libcurl
 * multi handle, its response gathered (bounded by MAX_RESPONSE) and freed;
 * the last error kept and reported; the backoff before the next attempt,
 * which goes on through the uploader's kick.  Loop thread only.
 */
#include "upload_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

void rvd_up_msg(struct rvd_uploader *u, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(u->last_error, sizeof(u->last_error), fmt, ap);
	va_end(ap);
}

void rvd_up_error(struct rvd_uploader *u, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(u->last_error, sizeof(u->last_error), fmt, ap);
	va_end(ap);
	u->env.note_error(u->env.ctx, u->last_error);
}

/* ---- requests ------------------------------------------------------------ */

void rvd_up_req_free(struct req *r)
{
	if (!r)
		return;
	if (r->easy)
		curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->hdrs);
	free(r->body_mem);
	free(r->resp);
	free(r->summary);
	free(r->jank);
	free(r);
}

static size_t write_cb(char *p, size_t sz, size_t n, void *userp)
{
	struct req *r = userp;
	size_t len = sz * n;
	uint8_t *np;

	if (r->resp_len + len > MAX_RESPONSE) {
		r->resp_overflow = true;
		return 0; /* aborts the transfer */
	}
	np = realloc(r->resp, r->resp_len + len);
	if (!np)
		return 0;
	memcpy(np + r->resp_len, p, len);
	r->resp = np;
	r->resp_len += len;
	return len;
}

static size_t header_cb(char *p, size_t sz, size_t n, void *userp)
{
	struct req *r = userp;
	size_t len = sz * n;

	if (len > 5 && !strncasecmp(p, "ETag:", 5)) {
		size_t i = 5, e = len;

		while (i < e && (p[i] == ' ' || p[i] == '\t'))
			i++;
		while (e > i && (p[e - 1] == '\r' || p[e - 1] == '\n' || p[e - 1] == ' '))
			e--;
		if (e - i < sizeof(r->etag)) {
			memcpy(r->etag, p + i, e - i);
			r->etag[e - i] = '\0';
		}
	}
	return len;
}

/* Sends r (body already set for POST) to server_url + path. */
int rvd_up_req_send(struct rvd_uploader *u, struct req *r, const char *path, bool post)
{
	const struct rvd_config *cfg = u->env.cfg;
	char url[RVD_PATH_MAX + 32], hdr[200];
	size_t ul = strlen(cfg->server_url);

	/* "https://host:port" and "https://host:port/" both work. */
	snprintf(url, sizeof(url), "%.*s%s",
		 (int)(ul && cfg->server_url[ul - 1] == '/' ? ul - 1 : ul), cfg->server_url, path);
	r->easy = curl_easy_init();
	if (!r->easy)
		return -ENOMEM;
	curl_easy_setopt(r->easy, CURLOPT_URL, url);
	curl_easy_setopt(r->easy, CURLOPT_PROTOCOLS_STR, "https");
	curl_easy_setopt(r->easy, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(r->easy, CURLOPT_SSL_VERIFYHOST, 2L);
	if (cfg->ca_file[0])
		curl_easy_setopt(r->easy, CURLOPT_CAINFO, cfg->ca_file);
	curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->easy, CURLOPT_TIMEOUT, (long)cfg->upload_timeout_s);
	curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	if (post) {
		r->hdrs = curl_slist_append(r->hdrs, "Content-Type: application/x-protobuf");
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, (const char *)r->body);
		curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	}
	if (r->kind != REQ_ENROLL) {
		snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", u->token);
		r->hdrs = curl_slist_append(r->hdrs, hdr);
	}
	if (r->kind == REQ_POLICY && u->etag[0]) {
		snprintf(hdr, sizeof(hdr), "If-None-Match: %s", u->etag);
		r->hdrs = curl_slist_append(r->hdrs, hdr);
	}
	if ((post || r->kind != REQ_ENROLL) && !r->hdrs)
		return -ENOMEM;
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdrs);
	if (curl_multi_add_handle(u->cu.multi, r->easy) != CURLM_OK)
		return -EIO;
	r->next = u->reqs;
	u->reqs = r;
	return 0;
}

/* The server's Error message from an error body, or "". */
void rvd_up_error_message(const struct req *r, char *out, size_t cap)
{
	Rearview__Error *e = NULL;

	out[0] = '\0';
	if (r->resp_len)
		e = rearview__error__unpack(NULL, r->resp_len, r->resp);
	if (e && e->message)
		snprintf(out, cap, "%s", e->message);
	else if (r->resp_len && r->resp_len < cap && !memchr(r->resp, '\0', r->resp_len))
		snprintf(out, cap, "%.*s", (int)r->resp_len, (const char *)r->resp);
	if (e)
		rearview__error__free_unpacked(e, NULL);
}

/* ---- backoff ------------------------------------------------------------- */

static void retry_cb(uv_timer_t *t)
{
	struct rvd_uploader *u = t->data;
	u->kick(u);
}

/* Exponential backoff with full jitter: uniform in [0, min(cap, base·2^n)],
 * at least the server's Retry-After. */
void rvd_up_backoff(struct rvd_uploader *u, long retry_after_s)
{
	const struct rvd_config *cfg = u->env.cfg;
	uint64_t ceil = cfg->backoff_initial_ms, delay;
	uint32_t rnd = 0;
	char msg[192];

	for (unsigned i = 0; i < u->attempt && ceil < cfg->backoff_max_ms; i++)
		ceil *= 2;
	if (ceil > cfg->backoff_max_ms)
		ceil = cfg->backoff_max_ms;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
		rnd = (uint32_t)uv_hrtime();
	delay = (uint64_t)rnd % (ceil + 1);
	if (retry_after_s > 0 && delay < (uint64_t)retry_after_s * 1000)
		delay = (uint64_t)retry_after_s * 1000;
	u->attempt++;
	if (u->stopping)
		return;
	uv_timer_start(&u->retry_timer, retry_cb, delay, 0);
	snprintf(msg, sizeof(msg), "%s; next attempt in %" PRIu64 ".%01" PRIu64 " s",
		 u->last_error[0] ? u->last_error : "upload failed", delay / 1000,
		 delay % 1000 / 100);
	u->env.note_error(u->env.ctx, msg);
}
