/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.c — the device's current policy: the last good signed document,
 * persisted atomically, or the built-in default.
 *
 * File: <dir>/policy.signed holds the SignedPolicy bytes exactly as received
 * (so it can be re-verified at every open).  Replacement is
 * rvc_write_file_atomic (a temporary file beside it, fsync, rename over,
 * fsync the directory): after a crash the file is either the old or the new
 * document, never a mix.
 *
 * <dir>/policy.version holds the highest version ever accepted (written the
 * same way, after the document), so a lost or corrupted document does not
 * allow an older one to be replayed.
 *
 * Invariants: s->body is NULL or a body whose signature verified with
 * s->pub_pem; s->floor >= s->body->version and only grows.
 */
#include "rearview/policy.h"
#include "policy_int.h"
#include "rearview/common.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STORE_FILE "policy.signed"
#define FLOOR_FILE "policy.version" /* highest version ever accepted, decimal */

struct rvp_store {
	char *dir;
	char *pub_pem;
	Rearview__PolicyBody *body;
	uint64_t floor; /* refuse versions <= this, even if the body is lost */
};

/* Replaces <dir>/<name> atomically and durably (rvc_write_file_atomic). */
static int save_atomic(const char *dir, const char *name, const uint8_t *doc, size_t len)
{
	char dst[4096];

	if (snprintf(dst, sizeof(dst), "%s/%s", dir, name) >= (int)sizeof(dst))
		return -ENAMETOOLONG;
	return rvc_write_file_atomic(dst, doc, len, 0600);
}

int rvp_store_new(const char *dir, const char *pub_pem, struct rvp_store **out)
{
	struct rvp_store *s;
	char path[4096];
	uint8_t *doc = NULL;
	size_t len = 0;
	char kid[17];
	int rc;

	*out = NULL;
	if (!dir || !pub_pem)
		return -EINVAL;
	rc = rvp_key_id(pub_pem, kid);
	if (rc)
		return rc == -ENOMEM ? rc : -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->dir = strdup(dir);
	s->pub_pem = strdup(pub_pem);
	if (!s->dir || !s->pub_pem) {
		rvp_store_free(s);
		return -ENOMEM;
	}
	if (snprintf(path, sizeof(path), "%s/" STORE_FILE, dir) >= (int)sizeof(path)) {
		rvp_store_free(s);
		return -ENAMETOOLONG;
	}
	/* A missing, unreadable or no longer verifying file means "none"; but
	 * running out of memory is no verdict on the file: that fails the open. */
	rc = rvc_read_file(path, RVP_MAX_DOCUMENT_BYTES, &doc, &len);
	if (rc == 0) {
		rc = rvp_verify_doc(doc, len, s->pub_pem, 0, 0, 0, &s->body);
		if (rc != 0)
			s->body = NULL;
		free(doc);
	}
	if (rc == -ENOMEM) {
		rvp_store_free(s);
		return rc;
	}
	/* The floor outlives a lost or corrupted document, so losing the file
	 * does not reopen the door to replaying older documents. */
	rc = -ENAMETOOLONG;
	if (snprintf(path, sizeof(path), "%s/" FLOOR_FILE, dir) < (int)sizeof(path))
		rc = rvc_read_file(path, RVP_MAX_DOCUMENT_BYTES, &doc, &len);
	if (rc == -ENOMEM) {
		rvp_store_free(s);
		return rc;
	}
	if (rc == 0) {
		char num[32];
		char *end;
		unsigned long long v;
		if (len < sizeof(num)) {
			memcpy(num, doc, len);
			num[len] = '\0';
			errno = 0;
			v = strtoull(num, &end, 10);
			if (!errno && end != num && (*end == '\0' || *end == '\n'))
				s->floor = v;
		}
		free(doc);
	}
	if (s->body && s->body->version > s->floor)
		s->floor = s->body->version;
	*out = s;
	return 0;
}

void rvp_store_free(struct rvp_store *s)
{
	if (!s)
		return;
	rearview__policy_body__free_unpacked(s->body, NULL);
	free(s->pub_pem);
	free(s->dir);
	free(s);
}

int rvp_store_apply(struct rvp_store *s, const uint8_t *doc, size_t len, int64_t now_s)
{
	Rearview__PolicyBody *body = NULL;
	int rc = rvp_policy_verify(doc, len, s->pub_pem, s->floor, now_s, &body);
	char num[32];

	if (rc != RVP_VERIFY_OK)
		return rc;
	/* Document first, floor second: a crash between them leaves a floor
	 * that is raised again from the document at the next open. */
	rc = save_atomic(s->dir, STORE_FILE, doc, len);
	if (!rc) {
		int n = snprintf(num, sizeof(num), "%llu\n", (unsigned long long)body->version);
		rc = save_atomic(s->dir, FLOOR_FILE, (const uint8_t *)num, (size_t)n);
	}
	if (rc) {
		rearview__policy_body__free_unpacked(body, NULL);
		return rc;
	}
	/* The floor only grows, and the body never falls below it. */
	assert(body->version >= s->floor);
	s->floor = body->version;
	rearview__policy_body__free_unpacked(s->body, NULL);
	s->body = body;
	return 0;
}

const Rearview__PolicyBody *rvp_store_current(const struct rvp_store *s, int64_t now_s,
					      int *expired)
{
	if (expired)
		*expired = 0;
	if (!s->body)
		return rvp_policy_default();
	if (s->body->expires_at_s && now_s >= (int64_t)s->body->expires_at_s) {
		if (expired)
			*expired = 1;
		return rvp_policy_default();
	}
	return s->body;
}

uint64_t rvp_store_version(const struct rvp_store *s)
{
	return s->body ? s->body->version : 0;
}
