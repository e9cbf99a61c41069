/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet_client.c — see fleet_client.h.
 */
#include "fleet_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <zstd.h>

#include "rearview/trace.h"

uint64_t rvs_fixture_outer(int rounds); /* capture_fixture.c, instrumented */

size_t fc_collect(char *p, size_t sz, size_t n, void *u)
{
	struct fc_buf *b = u;
	size_t k = sz * n;

	if (k > sizeof b->b - b->n)
		k = sizeof b->b - b->n;
	memcpy(b->b + b->n, p, k);
	b->n += k;
	return sz * n;
}

long fc_post(int port, const char *ca, const char *path, const char *token, const uint8_t *body,
	     size_t len, struct fc_buf *out)
{
	char url[128], auth[200];
	struct curl_slist *h = NULL;
	long code = 0;
	CURL *c = curl_easy_init();

	out->n = 0;
	out->retry_after = 0;
	if (!c)
		return 0;
	snprintf(url, sizeof url, "https://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fc_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	h = curl_slist_append(h, "Content-Type: application/x-protobuf");
	if (token) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (curl_easy_perform(c) == CURLE_OK) {
		curl_off_t ra = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK)
			out->retry_after = (long)ra;
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return code;
}

const uint8_t *fc_capture(const char *dir, size_t *zlen, size_t *rawlen)
{
	static uint8_t *z;
	static size_t zn, raw;

	if (!z) {
		char path[160];
		uint8_t *cap = malloc(1u << 20), *out = NULL;
		FILE *f = NULL;
		size_t n = 0;

		snprintf(path, sizeof path, "%s/fixture.rvt", dir);
		if (cap && rvt_set_config(256u << 10, 0) == 0 && rvt_start(0) == 0) {
			int ok = rvs_fixture_outer(3) != 1 && rvt_capture_to_path(0, path) == 0;
			if (rvt_stop(0, 1) == 0 && ok && (f = fopen(path, "rb"))) {
				raw = fread(cap, 1, 1u << 20, f);
				fclose(f);
				out = malloc(ZSTD_compressBound(raw) + 24);
				if (out)
					n = ZSTD_compress(out, ZSTD_compressBound(raw), cap, raw,
							  3);
			}
		}
		free(cap);
		if (!out || !n || ZSTD_isError(n)) {
			free(out);
			return NULL;
		}
		z = out;
		zn = n;
	}
	*zlen = zn;
	*rawlen = raw;
	return z;
}

int fc_copy_keys(const char *from, const char *to)
{
	static const char *const files[] = {"ca.crt",
					    "ca.key",
					    "server.crt",
					    "server.key",
					    "enrollment.secret",
					    "api.token",
					    "policy-signing.key",
					    "policy-signing.pub"};
	char cmd[1024];

	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		snprintf(cmd, sizeof cmd, "cp -p '%s/%s' '%s/%s'", from, files[i], to, files[i]);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}
