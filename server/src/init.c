/*
 * init.c — `rearview-server init DIR`: a ready-to-run data directory.
 *
 * Creates, refusing to overwrite an existing configuration:
 *   ca.crt ca.key                 a private CA (ECDSA P-256, 10 years)
 *   server.crt server.key         the TLS certificate for localhost and
 *                                 127.0.0.1, signed by the CA
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
#include "rvs.h"
#include "store.h"

#include <errno.h>
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

/* subjectAltName = DNS:localhost, IP:127.0.0.1, DER written back to front. */
static int san_der(unsigned char *buf, size_t cap, unsigned char **start, size_t *len)
{
	unsigned char *p = buf + cap;
	static const unsigned char ip[4] = {127, 0, 0, 1};
	static const char dns[] = "localhost";
	int n = 0, r;

#define W(x)                         \
	do {                         \
		if ((r = (x)) < 0)   \
			return -EIO; \
		n += r;              \
	} while (0)
	{
		int m = 0;
		if ((r = mbedtls_asn1_write_raw_buffer(&p, buf, ip, 4)) < 0)
			return -EIO;
		m += r;
		if ((r = mbedtls_asn1_write_len(&p, buf, 4)) < 0)
			return -EIO;
		m += r;
		if ((r = mbedtls_asn1_write_tag(&p, buf, MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7)) < 0)
			return -EIO;
		m += r;
		n += m;
	}
	W(mbedtls_asn1_write_raw_buffer(&p, buf, (const unsigned char *)dns, sizeof dns - 1));
	W(mbedtls_asn1_write_len(&p, buf, sizeof dns - 1));
	W(mbedtls_asn1_write_tag(&p, buf, MBEDTLS_ASN1_CONTEXT_SPECIFIC | 2));
	W(mbedtls_asn1_write_len(&p, buf, (size_t)n));
	W(mbedtls_asn1_write_tag(&p, buf, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE));
#undef W
	*start = p;
	*len = (size_t)n;
	return 0;
}

static int make_cert(struct gen *g, mbedtls_pk_context *subject_key, mbedtls_pk_context *issuer_key,
		     const char *subject, const char *issuer, int is_ca, const char *dir,
		     const char *name)
{
	mbedtls_x509write_cert crt;
	mbedtls_mpi serial;
	unsigned char serial_bytes[16], pem[4096], san[128], *sanp;
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
		    san_der(san, sizeof san, &sanp, &sanlen) ||
		    mbedtls_x509write_crt_set_extension(
			    &crt, MBEDTLS_OID_SUBJECT_ALT_NAME,
			    MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME), 0, sanp, sanlen))
			goto out;
	}
	if (mbedtls_x509write_crt_pem(&crt, pem, sizeof pem, mbedtls_ctr_drbg_random, &g->drbg))
		goto out;
	rc = write_path(dir, name, pem, strlen((char *)pem), 0644);
out:
	mbedtls_mpi_free(&serial);
	mbedtls_x509write_crt_free(&crt);
	return rc;
}

/* A random string from an unambiguous alphabet (no 0/O, 1/l/I). */
static int random_word(char *out, size_t n)
{
	static const char alpha[] = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
	uint8_t r[64];
	if (n > sizeof r || rvs_random(r, n))
		return -EIO;
	for (size_t i = 0; i < n; i++)
		out[i] = alpha[r[i] % (sizeof alpha - 1)];
	out[n] = '\0';
	return 0;
}

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

int rvs_init_dir(const char *dir)
{
	struct gen g;
	mbedtls_pk_context ca, srv, pol;
	char absdir[PATH_MAX], conf_path[PATH_MAX + 32], db_path[PATH_MAX + 32], sub[PATH_MAX + 32];
	char conf[PATH_MAX + 4096], secret[48], password[24];
	uint8_t salt[16], hash[32];
	struct rvs_store *st = NULL;
	int rc;
	static const char pers[] = "rearview-server init";

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

	mbedtls_entropy_init(&g.entropy);
	mbedtls_ctr_drbg_init(&g.drbg);
	mbedtls_pk_init(&ca);
	mbedtls_pk_init(&srv);
	mbedtls_pk_init(&pol);
	rc = -EIO;
	if (mbedtls_ctr_drbg_seed(&g.drbg, mbedtls_entropy_func, &g.entropy,
				  (const unsigned char *)pers, sizeof pers - 1))
		goto free_keys;
	if ((rc = gen_key(&g, &ca)) || (rc = gen_key(&g, &srv)) || (rc = gen_key(&g, &pol)) ||
	    (rc = save_key(absdir, "ca.key", &ca)) || (rc = save_key(absdir, "server.key", &srv)) ||
	    (rc = save_key(absdir, "policy-signing.key", &pol)) ||
	    (rc = save_pub(absdir, "policy-signing.pub", &pol)))
		goto free_keys;
	if ((rc = make_cert(&g, &ca, &ca, "CN=Rearview Server CA,O=Rearview",
			    "CN=Rearview Server CA,O=Rearview", 1, absdir, "ca.crt")) ||
	    (rc = make_cert(&g, &srv, &ca, "CN=localhost,O=Rearview",
			    "CN=Rearview Server CA,O=Rearview", 0, absdir, "server.crt")))
		goto free_keys;

	if ((rc = random_word(secret, 40)))
		goto free_keys;
	if ((rc = write_path(absdir, "enrollment.secret", secret, strlen(secret), 0600)))
		goto free_keys;
	/* The JSON API's bearer token (server/API.md); the server keeps only
	 * its hash in memory. */
	if ((rc = random_word(secret, 40)) ||
	    (rc = write_path(absdir, "api.token", secret, strlen(secret), 0600)))
		goto free_keys;

	if ((rc = random_word(password, 20)) || (rc = rvs_random(salt, sizeof salt)) ||
	    (rc = rvs_pbkdf2(password, salt, sizeof salt, RVS_ADMIN_PBKDF2_ITERATIONS, hash)))
		goto free_keys;
	snprintf(db_path, sizeof db_path, "%s/rearview.db", absdir);
	umask(077); /* the database holds token and password hashes */
	if ((rc = rvs_store_sqlite.open(db_path, &st)))
		goto free_keys;
	rc = rvs_store_sqlite.admin_put(st, "admin", RVS_ADMIN_PBKDF2_ITERATIONS, salt, sizeof salt,
					hash);
	rvs_store_sqlite.close(st);
	if (rc)
		goto free_keys;

	snprintf(conf, sizeof conf, config_template, absdir);
	if ((rc = rvs_write_file_atomic(conf_path, conf, strlen(conf), 0640)))
		goto free_keys;
	printf("initialised %s\n"
	       "  config:            %s\n"
	       "  CA for devices:    %s/ca.crt\n"
	       "  enrolment secret:  %s/enrollment.secret\n"
	       "  admin user:        admin\n"
	       "  admin password:    %s   (shown once; only its PBKDF2 hash is stored)\n"
	       "run: rearview-server --config %s\n",
	       absdir, conf_path, absdir, absdir, password, conf_path);
	rc = 0;
free_keys:
	mbedtls_platform_zeroize(password, sizeof password);
	mbedtls_pk_free(&pol);
	mbedtls_pk_free(&srv);
	mbedtls_pk_free(&ca);
	mbedtls_ctr_drbg_free(&g.drbg);
	mbedtls_entropy_free(&g.entropy);
	return rc;
}
