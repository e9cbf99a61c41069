/* SPDX-License-Identifier: Apache-2.0 */
/*
 * init.c — the data directory's keys and accounts, for the operator:
 *   rearview-server init DIR [--hostname NAME]...   a ready-to-run directory
 *   rearview-server cert --config FILE --hostname NAME...
 *                     a new server certificate from the directory's own CA
 *   rearview-server passwd --config FILE [USER]      a new password for USER
 *                     (a new account is an admin; an existing one keeps
 *                     its role and state, users.h)
 *
 * init creates, refusing to overwrite an existing configuration:
 *   ca.crt ca.key                 a private CA (ECDSA P-256, 10 years)
 *   server.crt server.key         the TLS certificate for localhost,
 *                                 127.0.0.1 and every --hostname (a DNS
 *                                 name or an IP address), signed by the CA
 *   policy-signing.key            the ECDSA P-256 policy signing key (SEC1
 *                                 PEM, what rvp_policy_sign reads)
 *   policy-signing.pub            its public key (SPKI PEM) for devices
 *   enrollment.secret             what devices present to /v1/enroll
 *   api.token                     bearer token of the JSON API /api/v1/
 *   rearview.db                   migrated, with the admin account
 *                                 (PBKDF2-HMAC-SHA256, random salt)
 *   rearview-server.conf          a commented configuration
 * Keys and secrets are mode 0600.  The admin password is printed once.
 */
#include "base/util.h"
#include "base/config.h"
#include "store/store.h"
#include "model/users.h"
#include "app/init.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mbedtls/asn1write.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/entropy.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/x509_crt.h>

struct gen {
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
};

static int write_path(const char *dir, const char *name, const void *data, size_t len, mode_t mode)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
		return -ENAMETOOLONG;
	return rvs_write_file_atomic(path, data, len, mode);
}

static int gen_key(struct gen *g, mbedtls_pk_context *key)
{
	if (mbedtls_pk_setup(key, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)) ||
	    mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(*key),
				mbedtls_ctr_drbg_random, &g->drbg))
		return -EIO;
	return 0;
}

static int save_key(const char *dir, const char *name, mbedtls_pk_context *key)
{
	unsigned char pem[4096];
	if (mbedtls_pk_write_key_pem(key, pem, sizeof pem))
		return -EIO;
	return write_path(dir, name, pem, strlen((char *)pem), 0600);
}

static int save_pub(const char *dir, const char *name, mbedtls_pk_context *key)
{
	unsigned char pem[1024];
	if (mbedtls_pk_write_pubkey_pem(key, pem, sizeof pem))
		return -EIO;
	return write_path(dir, name, pem, strlen((char *)pem), 0644);
}

/* One GeneralName written in front of *p (DER is written back to front):
 * [tag] len bytes.  Its size, or -EIO when buf is full. */
static int general_name(unsigned char **p, unsigned char *buf, int tag, const void *v, size_t len)
{
	int n = 0, r;

	if ((r = mbedtls_asn1_write_raw_buffer(p, buf, v, len)) < 0)
		return -EIO;
	n += r;
	if ((r = mbedtls_asn1_write_len(p, buf, len)) < 0)
		return -EIO;
	n += r;
	if ((r = mbedtls_asn1_write_tag(p, buf,
					(unsigned char)(MBEDTLS_ASN1_CONTEXT_SPECIFIC | tag))) < 0)
		return -EIO;
	return n + r;
}

int rvs_hostname_check(const char *name)
{
	unsigned char ip[16];
	size_t len = strlen(name), label = 0;

	if (inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1)
		return 0;
	if (len == 0 || len > 253)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (c == '.') {
			if (label == 0)
				return -EINVAL;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || (c == '*' && i == 0 && name[1] == '.')) ||
		    ++label > 63)
			return -EINVAL;
	}
	return label ? 0 : -EINVAL;
}

/* subjectAltName = DNS:localhost, IP:127.0.0.1 and each of names (an IPv4 or
 * IPv6 address as iPAddress, else dNSName), DER written back to front. */
static int san_der(const char *const *names, size_t nnames, unsigned char *buf, size_t cap,
		   unsigned char **start, size_t *len)
{
	unsigned char *p = buf + cap, ip[16];
	static const unsigned char loop4[4] = {127, 0, 0, 1};
	static const char dns[] = "localhost";
	int n = 0, r;

	for (size_t i = nnames; i-- > 0;) {
		assert(rvs_hostname_check(names[i]) == 0);
		if (inet_pton(AF_INET, names[i], ip) == 1)
			r = general_name(&p, buf, 7, ip, 4);
		else if (inet_pton(AF_INET6, names[i], ip) == 1)
			r = general_name(&p, buf, 7, ip, 16);
		else
			r = general_name(&p, buf, 2, names[i], strlen(names[i]));
		if (r < 0)
			return r;
		n += r;
	}
	if ((r = general_name(&p, buf, 7, loop4, sizeof loop4)) < 0)
		return r;
	n += r;
	if ((r = general_name(&p, buf, 2, dns, sizeof dns - 1)) < 0)
		return r;
	n += r;
	if ((r = mbedtls_asn1_write_len(&p, buf, (size_t)n)) < 0)
		return -EIO;
	n += r;
	if ((r = mbedtls_asn1_write_tag(&p, buf,
					MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE)) < 0)
		return -EIO;
	n += r;
	*start = p;
	*len = (size_t)n;
	return 0;
}

/* Writes path: a certificate for subject_key signed by issuer_key; a
 * server certificate (is_ca 0) names localhost, 127.0.0.1 and names[]. */
static int make_cert(struct gen *g, mbedtls_pk_context *subject_key, mbedtls_pk_context *issuer_key,
		     const char *subject, const char *issuer, int is_ca, const char *const *names,
		     size_t nnames, const char *path)
{
	mbedtls_x509write_cert crt;
	mbedtls_mpi serial;
	unsigned char serial_bytes[16], pem[8192], san[RVS_MAX_HOSTNAMES * 260 + 64], *sanp;
	size_t sanlen;
	int rc = -EIO;

	mbedtls_x509write_crt_init(&crt);
	mbedtls_mpi_init(&serial);
	if (rvs_random(serial_bytes, sizeof serial_bytes))
		goto out;
	serial_bytes[0] &= 0x7f; /* positive */
	if (mbedtls_mpi_read_binary(&serial, serial_bytes, sizeof serial_bytes))
		goto out;
	mbedtls_x509write_crt_set_version(&crt, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&crt, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&crt, subject_key);
	mbedtls_x509write_crt_set_issuer_key(&crt, issuer_key);
	if (mbedtls_x509write_crt_set_serial(&crt, &serial) ||
	    mbedtls_x509write_crt_set_subject_name(&crt, subject) ||
	    mbedtls_x509write_crt_set_issuer_name(&crt, issuer) ||
	    mbedtls_x509write_crt_set_validity(&crt, "20250101000000", "20351231235959") ||
	    mbedtls_x509write_crt_set_basic_constraints(&crt, is_ca, is_ca ? 0 : -1) ||
	    mbedtls_x509write_crt_set_subject_key_identifier(&crt) ||
	    mbedtls_x509write_crt_set_authority_key_identifier(&crt))
		goto out;
	if (is_ca) {
		if (mbedtls_x509write_crt_set_key_usage(&crt, MBEDTLS_X509_KU_KEY_CERT_SIGN |
								      MBEDTLS_X509_KU_CRL_SIGN))
			goto out;
	} else {
		if (mbedtls_x509write_crt_set_key_usage(&crt,
							MBEDTLS_X509_KU_DIGITAL_SIGNATURE |
								MBEDTLS_X509_KU_KEY_AGREEMENT) ||
		    san_der(names, nnames, san, sizeof san, &sanp, &sanlen) ||
		    mbedtls_x509write_crt_set_extension(
			    &crt, MBEDTLS_OID_SUBJECT_ALT_NAME,
			    MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME), 0, sanp, sanlen))
			goto out;
	}
	if (mbedtls_x509write_crt_pem(&crt, pem, sizeof pem, mbedtls_ctr_drbg_random, &g->drbg))
		goto out;
	rc = rvs_write_file_atomic(path, pem, strlen((char *)pem), 0644);
out:
	mbedtls_mpi_free(&serial);
	mbedtls_x509write_crt_free(&crt);
	return rc;
}

/* A random string from an unambiguous alphabet (no 0/O, 1/l/I). */
static const char config_template[] =
	"# rearview-server configuration (INI).  Generated by `rearview-server init`.\n"
	"# Relative paths are relative to data_dir.\n"
	"[server]\n"
	"# Where the database, blobs, keys and the published policy live.\n"
	"data_dir = %s\n"
	"# Address and port of the HTTPS listener (port 0 picks a free port; the\n"
	"# bound port is written to port_file and logged).\n"
	"listen = 127.0.0.1:8443\n"
	"port_file = server.port\n"
	"# TLS certificate chain and key (PEM).  ca.crt is what devices trust.\n"
	"tls_cert = server.crt\n"
	"tls_key = server.key\n"
	"# The shared secret devices present to POST /v1/enroll.\n"
	"enrollment_secret_file = enrollment.secret\n"
	"# The signed policy served by GET /v1/policy (a SignedPolicy message).\n"
	"policy_file = policy/current.spb\n"
	"# sqlite3 database (WAL) and the content-addressed blob store.\n"
	"database = rearview.db\n"
	"blob_dir = blobs\n"
	"# Limits.  Bodies over max_body_bytes get 413, headers over\n"
	"# max_header_bytes get 431.\n"
	"max_body_bytes = 67108864\n"
	"max_header_bytes = 16384\n"
	"max_connections = 256\n"
	"# A request (or TLS handshake) must arrive completely within\n"
	"# request_timeout_ms; a kept-alive connection may idle idle_timeout_ms.\n"
	"request_timeout_ms = 30000\n"
	"idle_timeout_ms = 60000\n"
	"# Per-device token bucket for uploads and policy fetches.\n"
	"upload_rate_per_min = 60\n"
	"upload_burst = 30\n"
	"# Per peer address: failed bearer-token authentications allowed (burst,\n"
	"# refill per minute) before unknown tokens from it get 429.\n"
	"auth_fail_burst = 20\n"
	"auth_fail_per_min = 10\n"
	"# Enrolments per peer address and per enrolment secret (burst, refill\n"
	"# per minute); more get 429 with Retry-After.\n"
	"enroll_burst = 20\n"
	"enroll_per_min = 10\n"
	"enroll_secret_burst = 200\n"
	"enroll_secret_per_min = 600\n"
	"# Connections one address may hold; past 3/4 of max_connections a TLS\n"
	"# handshake must finish within handshake_pressure_ms, and at the limit\n"
	"# the longest-idle connection is closed for a new one.\n"
	"max_conns_per_addr = 32\n"
	"handshake_pressure_ms = 2000\n"
	"# Retention: uploads older than retention_days (their traces, index rows\n"
	"# and blobs) are deleted by a pass every retention_interval_s, which also\n"
	"# collects orphaned blobs.  0 keeps everything forever.\n"
	"retention_days = 90\n"
	"retention_interval_s = 3600\n";

#define CA_NAME "CN=Rearview Server CA,O=Rearview"

static int gen_open(struct gen *g, const char *pers)
{
	mbedtls_entropy_init(&g->entropy);
	mbedtls_ctr_drbg_init(&g->drbg);
	if (mbedtls_ctr_drbg_seed(&g->drbg, mbedtls_entropy_func, &g->entropy,
				  (const unsigned char *)pers, strlen(pers)))
		return -EIO;
	return 0;
}

static void gen_close(struct gen *g)
{
	mbedtls_ctr_drbg_free(&g->drbg);
	mbedtls_entropy_free(&g->entropy);
}

/* A new server key and a certificate for it signed by ca, naming localhost,
 * 127.0.0.1 and names (the first, or localhost, is the subject's CN):
 * written to key_path (0600) and then cert_path. */
static int server_cert(struct gen *g, mbedtls_pk_context *ca, const char *const *names,
		       size_t nnames, const char *key_path, const char *cert_path)
{
	mbedtls_pk_context srv;
	unsigned char pem[4096];
	char subject[300];
	int rc;

	assert(nnames <= RVS_MAX_HOSTNAMES);
	snprintf(subject, sizeof subject, "CN=%s,O=Rearview", nnames ? names[0] : "localhost");
	mbedtls_pk_init(&srv);
	if (!(rc = gen_key(g, &srv))) {
		rc = -EIO;
		if (!mbedtls_pk_write_key_pem(&srv, pem, sizeof pem))
			rc = rvs_write_file_atomic(key_path, pem, strlen((char *)pem), 0600);
		mbedtls_platform_zeroize(pem, sizeof pem);
	}
	if (!rc)
		rc = make_cert(g, &srv, ca, subject, CA_NAME, 0, names, nnames, cert_path);
	mbedtls_pk_free(&srv);
	return rc;
}

/* 1 (said on stderr) when one of names is not a host name or address. */
static int names_bad(const char *const *names, size_t nnames)
{
	for (size_t i = 0; i < nnames; i++)
		if (rvs_hostname_check(names[i])) {
			fprintf(stderr,
				"rearview-server: --hostname %s: not a host name or address\n",
				names[i]);
			return 1;
		}
	return 0;
}

int rvs_init_dir(const char *dir, const char *const *names, size_t nnames)
{
	struct gen g;
	mbedtls_pk_context ca, pol;
	char absdir[PATH_MAX], conf_path[PATH_MAX + 32], db_path[PATH_MAX + 32], sub[PATH_MAX + 32];
	char key_path[PATH_MAX + 32], crt_path[PATH_MAX + 32];
	char conf[PATH_MAX + 4096], secret[48], password[24];
	struct rvs_store *st = NULL;
	int rc;

	if (nnames > RVS_MAX_HOSTNAMES)
		return -E2BIG;
	if (names_bad(names, nnames))
		return -EINVAL;
	if (mkdir(dir, 0750) < 0 && errno != EEXIST)
		return -errno;
	if (!realpath(dir, absdir))
		return -errno;
	snprintf(conf_path, sizeof conf_path, "%s/rearview-server.conf", absdir);
	if (access(conf_path, F_OK) == 0) {
		fprintf(stderr, "rearview-server: %s exists; refusing to overwrite\n", conf_path);
		return -EEXIST;
	}
	snprintf(sub, sizeof sub, "%s/blobs", absdir);
	if (mkdir(sub, 0750) < 0 && errno != EEXIST)
		return -errno;
	snprintf(sub, sizeof sub, "%s/policy", absdir);
	if (mkdir(sub, 0750) < 0 && errno != EEXIST)
		return -errno;

	mbedtls_pk_init(&ca);
	mbedtls_pk_init(&pol);
	snprintf(key_path, sizeof key_path, "%s/server.key", absdir);
	snprintf(crt_path, sizeof crt_path, "%s/ca.crt", absdir);
	if ((rc = gen_open(&g, "rearview-server init")) || (rc = gen_key(&g, &ca)) ||
	    (rc = gen_key(&g, &pol)) || (rc = save_key(absdir, "ca.key", &ca)) ||
	    (rc = save_key(absdir, "policy-signing.key", &pol)) ||
	    (rc = save_pub(absdir, "policy-signing.pub", &pol)) ||
	    (rc = make_cert(&g, &ca, &ca, CA_NAME, CA_NAME, 1, NULL, 0, crt_path)))
		goto free_keys;
	snprintf(crt_path, sizeof crt_path, "%s/server.crt", absdir);
	if ((rc = server_cert(&g, &ca, names, nnames, key_path, crt_path)))
		goto free_keys;

	if ((rc = rvs_random_word(secret, 40)))
		goto free_keys;
	if ((rc = write_path(absdir, "enrollment.secret", secret, strlen(secret), 0600)))
		goto free_keys;
	/* The JSON API's bearer token (server/API.md); the server keeps only
	 * its hash in memory. */
	if ((rc = rvs_random_word(secret, 40)) ||
	    (rc = write_path(absdir, "api.token", secret, strlen(secret), 0600)))
		goto free_keys;

	snprintf(db_path, sizeof db_path, "%s/rearview.db", absdir);
	umask(077); /* the database holds token and password hashes */
	if ((rc = rvs_store_sqlite.open(db_path, &st)))
		goto free_keys;
	rc = rvs_user_set_password(&rvs_store_sqlite, st, "admin", password);
	rvs_store_sqlite.close(st);
	if (rc)
		goto free_keys;

	snprintf(conf, sizeof conf, config_template, absdir);
	if ((rc = rvs_write_file_atomic(conf_path, conf, strlen(conf), 0640)))
		goto free_keys;
	printf("initialised %s\n"
	       "  config:            %s\n"
	       "  CA for devices:    %s/ca.crt\n"
	       "  certificate for:   localhost, 127.0.0.1",
	       absdir, conf_path, absdir);
	for (size_t i = 0; i < nnames; i++)
		printf(", %s", names[i]);
	printf("\n"
	       "  enrolment secret:  %s/enrollment.secret\n"
	       "  admin user:        admin\n"
	       "  admin password:    %s   (shown once; only its PBKDF2 hash is stored)\n"
	       "run: rearview-server --config %s\n",
	       absdir, password, conf_path);
	rc = 0;
free_keys:
	mbedtls_platform_zeroize(password, sizeof password);
	mbedtls_pk_free(&pol);
	mbedtls_pk_free(&ca);
	gen_close(&g);
	return rc;
}

int rvs_init_cert(const struct rvs_config *cfg, const char *const *names, size_t nnames)
{
	struct gen g;
	mbedtls_pk_context ca;
	char ca_path[PATH_MAX + 16];
	int rc;

	if (nnames == 0 || nnames > RVS_MAX_HOSTNAMES)
		return -EINVAL;
	if (names_bad(names, nnames))
		return -EINVAL;
	snprintf(ca_path, sizeof ca_path, "%s/ca.key", cfg->data_dir);
	mbedtls_pk_init(&ca);
	if ((rc = gen_open(&g, "rearview-server cert")))
		goto out;
	if (mbedtls_pk_parse_keyfile(&ca, ca_path, NULL)) {
		fprintf(stderr, "rearview-server: %s: cannot read the CA's key\n", ca_path);
		rc = -ENOENT;
		goto out;
	}
	if ((rc = server_cert(&g, &ca, names, nnames, cfg->tls_key, cfg->tls_cert)))
		goto out;
	printf("new certificate %s (key %s) for localhost, 127.0.0.1", cfg->tls_cert, cfg->tls_key);
	for (size_t i = 0; i < nnames; i++)
		printf(", %s", names[i]);
	printf(", signed by %s/ca.crt; restart the server to use it\n", cfg->data_dir);
out:
	mbedtls_pk_free(&ca);
	gen_close(&g);
	return rc;
}

int rvs_init_passwd(const struct rvs_config *cfg, const char *user)
{
	const struct rvs_store_ops *ops = rvs_store_for(cfg->database);
	struct rvs_store *st;
	char password[24];
	int rc, role = 0, disabled = 0;

	if (!*user || strlen(user) > 64)
		return -EINVAL;
	if ((rc = ops->open(cfg->database, &st)))
		return rc;
	rc = rvs_user_set_password(ops, st, user, password);
	if (!rc)
		rc = ops->user_get(st, user, &role, &disabled);
	ops->close(st);
	if (!rc)
		printf("user %s (role %s%s): new password %s   (shown once; only its PBKDF2 hash"
		       " is stored;\n"
		       "web sessions signed in before are signed out)\n",
		       user, rvs_role_name(role), disabled ? ", disabled" : "", password);
	mbedtls_platform_zeroize(password, sizeof password);
	return rc;
}

int rvs_init_requeue(const struct rvs_config *cfg, const char *reason)
{
	const struct rvs_store_ops *ops = rvs_store_for(cfg->database);
	struct rvs_store *st;
	uint64_t n = 0;
	int rc;

	if ((rc = ops->open(cfg->database, &st)))
		return rc;
	rc = ops->quarantine_requeue(st, reason, &n);
	ops->close(st);
	if (!rc)
		printf("requeued %" PRIu64 " quarantined upload%s%s%s%s\n", n, n == 1 ? "" : "s",
		       reason ? " whose reason contains \"" : "", reason ? reason : "",
		       reason ? "\"" : "");
	return rc;
}

int rvs_init_reindex(const struct rvs_config *cfg, const char *after, int all, size_t batch)
{
	const struct rvs_store_ops *ops = rvs_store_for(cfg->database);
	struct rvs_store *st;
	uint64_t queued, total = 0, seen = 0;
	char from[40], last[40];
	int rc;

	if (snprintf(from, sizeof from, "%s", after) >= (int)sizeof from)
		return -EINVAL;
	if ((rc = ops->open(cfg->database, &st)))
		return rc;
	while ((rc = ops->reindex_queue(st, from, all, batch, last, &queued)) > 0) {
		seen += (uint64_t)rc;
		total += queued;
		printf("queued %" PRIu64 " through %s\n", queued, last);
		fflush(stdout);
		memcpy(from, last, sizeof from);
	}
	ops->close(st);
	if (rc < 0)
		return rc;
	printf("queued %" PRIu64 " of %" PRIu64 " %s for re-indexing\n", total, seen,
	       all ? "decoded traces" : "traces without aggregates");
	return 0;
}
