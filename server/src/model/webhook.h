/* SPDX-License-Identifier: Apache-2.0 */
/*
 * webhook.h — durable delivery of alerts to webhook URLs: each alert is a
 * row of webhook_deliveries (server/SCHEMA.md migration 8; through the
 * store, either backend) per URL, POSTed
 * as JSON with an HMAC-SHA256 signature header, retried with exponential
 * backoff and jitter until delivered (2xx) or failed (attempts spent).
 * The state survives a restart: a pending row is simply tried again when
 * it is due.  Work thread only (the store and libcurl block).
 */
#ifndef RVS_WEBHOOK_H
#define RVS_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

/* The header carrying the signature: "sha256=" + 64 lowercase hex of
 * HMAC-SHA256(secret, body). */
#define RVS_WEBHOOK_SIG_HEADER "X-Rearview-Signature"

struct rvs_webhook_cfg {
	const char *secret_file; /* the HMAC key is this file's content ("" or unreadable: no
				    delivery is attempted, the pass fails with -ENOKEY) */
	uint32_t max_attempts;	 /* then the row is failed */
	uint32_t backoff_ms;	 /* delay before retry n: backoff_ms * 2^(n-1), capped at an hour,
				    with jitter: uniform in [half of it, all of it] */
	uint32_t timeout_ms;	 /* one POST */
};

/* hex = lowercase hex of HMAC-SHA256(key, body), NUL-terminated.  0 or
 * -EIO (mbedTLS).  Any thread. */
int rvs_webhook_sign(const uint8_t *key, size_t keylen, const char *body, size_t len, char hex[65]);

/* The delay before the next try after `attempts` failed ones (>= 1), with
 * jitter from r (uniform in [0, 1)).  Any thread. */
uint64_t rvs_webhook_backoff_ms(uint32_t backoff_ms, uint32_t attempts, double r);

/* One pass: every pending delivery due by now (at most 32, oldest due
 * first) is claimed (the store's webhook_claim: no other pass or node
 * takes it for 32 × timeout_ms + 60 s) and POSTed; its row becomes
 * delivered, or keeps pending with attempts + 1, the error and the next
 * try, or failed once max_attempts are spent.  Runs on the shared store of
 * database (rvs_store_regress_open).  *delivered (may be NULL): how many
 * succeeded.  0, -ENOKEY (deliveries pending and no secret: none is
 * claimed), -EPERM (the secret file is readable by group or others: none
 * is claimed), -EIO, -ENOMEM. */
int rvs_webhook_deliver_due(const char *database, const struct rvs_webhook_cfg *cfg,
			    unsigned *delivered);

/* The delivery passes count their outcomes in metrics.h's webhook
 * counters (rvs_webhook_stats). */

#endif
