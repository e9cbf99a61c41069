/* SPDX-License-Identifier: Apache-2.0 */
/*
 * policy_pub.c — publishing the signed policy served by GET /v1/policy.
 *
 * At startup, when policy_file does not exist, the built-in default policy
 * of librvpolicy (rvp_policy_default) is published as version 1, issued now,
 * signed with DIR/policy-signing.key (SEC1 PEM written by `init`) through
 * rvp_policy_sign, and written atomically.  An existing policy_file is
 * never touched: it may be a newer version published by an operator.
 * rvs_policy_publish signs and writes any body: campaign changes publish
 * through it (campaign.c).
 */
#include "base/log.h"
#include "base/util.h"
#include "base/config.h"
#include "model/policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rearview/policy.h"

int rvs_policy_publish(const struct rvs_config *cfg, const Rearview__PolicyBody *body)
{
	char keypath[600];
	uint8_t *pem = NULL, *doc = NULL;
	size_t pemlen = 0, doclen = 0;
	char *key;
	int rc;

	snprintf(keypath, sizeof keypath, "%s/policy-signing.key", cfg->data_dir);
	if ((rc = rvs_read_file(keypath, 64 << 10, &pem, &pemlen))) {
		rvs_log("warn", "no policy signing key", "path=\"%s\" err=%d", keypath, rc);
		return rc;
	}
	/* The PEM parser wants a NUL-terminated string. */
	key = malloc(pemlen + 1);
	if (!key) {
		rc = -ENOMEM;
		goto free_pem;
	}
	memcpy(key, pem, pemlen);
	key[pemlen] = 0;
	rc = rvp_policy_sign(body, key, &doc, &doclen);
	if (rc) {
		rvs_log("error", "cannot sign policy", "version=%llu err=%d",
			(unsigned long long)body->version, rc);
		goto free_key;
	}
	rc = rvs_write_file_atomic(cfg->policy_file, doc, doclen, 0644);
	if (rc)
		rvs_log("error", "cannot write policy", "path=\"%s\" err=%d", cfg->policy_file, rc);
	else
		rvs_log("info", "published policy", "version=%llu bytes=%zu",
			(unsigned long long)body->version, doclen);
	free(doc);
free_key:
	memset(key, 0, pemlen);
	free(key);
free_pem:
	memset(pem, 0, pemlen);
	free(pem);
	return rc;
}

int rvs_policy_publish_default(const struct rvs_config *cfg)
{
	Rearview__PolicyBody body;

	if (access(cfg->policy_file, F_OK) == 0)
		return 0;
	/* A shallow copy of the static default: only scalars change. */
	body = *rvp_policy_default();
	body.version = 1;
	body.issued_at_s = (uint64_t)time(NULL);
	return rvs_policy_publish(cfg, &body);
}
