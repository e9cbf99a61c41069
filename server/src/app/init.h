/* SPDX-License-Identifier: Apache-2.0 */
/*
 * init.h — the operator's commands (init.c): `rearview-server init`,
 * `cert`, `passwd`, `requeue` and `reindex`.
 */
#ifndef RVS_INIT_H
#define RVS_INIT_H

#include <stddef.h>

#include "base/config.h"

/* Host names a server certificate may carry besides localhost/127.0.0.1. */
#define RVS_MAX_HOSTNAMES 8
/* 0 when name is an IPv4/IPv6 address or a DNS name (labels of letters,
 * digits and '-', 1..63 each, 253 in all; a leading "*." allowed), else
 * -EINVAL. */
int rvs_hostname_check(const char *name);
/* `rearview-server init DIR [--hostname NAME]...`: creates DIR's keys, CA,
 * server certificate (for localhost, 127.0.0.1 and names), secrets, sqlite
 * database with the admin account, and configuration; prints the admin
 * password once.  -EEXIST when DIR has a configuration, -EINVAL for a bad
 * name, -E2BIG past RVS_MAX_HOSTNAMES, else 0 or -errno. */
int rvs_init_dir(const char *dir, const char *const *names, size_t nnames);
/* `rearview-server cert`: a new key and certificate (localhost, 127.0.0.1
 * and names) signed by data_dir/ca.key, written over cfg->tls_key then
 * cfg->tls_cert (each atomically; a crash between the two leaves a pair
 * the server refuses at start: run the command again).  Devices keep
 * trusting ca.crt.  0, -EINVAL (no or bad name), -ENOENT (no CA key). */
int rvs_init_cert(const struct rvs_config *cfg, const char *const *names, size_t nnames);
/* `rearview-server passwd`: a new random password for web account `user`
 * (created if missing), stored as a PBKDF2 hash in cfg's database (either
 * backend) and printed once.  0 or -errno. */
int rvs_init_passwd(const struct rvs_config *cfg, const char *user);
/* `rearview-server requeue`: every quarantined upload of cfg's database
 * whose reason contains `reason` (NULL: every one) back on the decode
 * queue (store.h quarantine_requeue); prints how many.  A running server
 * decodes them at once on PostgreSQL (NOTIFY), else at its next look at
 * the queue (decode_poll_s).  0 or -errno. */
int rvs_init_requeue(const struct rvs_config *cfg, const char *reason);
/* `rearview-server reindex`: the decoded traces of cfg's database that
 * have a stored capture but no call-path aggregate (every one when all),
 * from the trace id after `after` ("" : the first) on, back on the decode
 * queue in batches of `batch` (1..RVS_REINDEX_MAX) uploads, each batch
 * one transaction (store.h reindex_queue), so the decoder rebuilds their
 * index rows from the blob.  Prints each batch's last trace id (run again
 * with --after it to resume an interrupted --all) and the total.  Safe
 * while a server runs: it decodes them as it decodes a requeue (at once
 * on PostgreSQL, else within decode_poll_s); a stopped server decodes
 * them when it starts.  0 or -errno. */
int rvs_init_reindex(const struct rvs_config *cfg, const char *after, int all, size_t batch);

#endif
