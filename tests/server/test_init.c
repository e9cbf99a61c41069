/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_init.c — the operator's commands run as processes: `init DIR` (the
 * files it creates, their modes, the admin password it prints once, checked
 * against the PBKDF2 hash in the database, the certificate chain, a second
 * init refusing to overwrite), `init --hostname` and `cert` (certificates a
 * TLS client accepts for those names, from the same CA), `passwd` (a new
 * password whose hash replaces the old), `requeue`'s and `reindex`'s usage and `migrate`.  `init`
 * always makes a sqlite database; `passwd` and `migrate` run on the store the suite's switch picks
 * (store_env.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>
#include <sqlite3.h>

#include "base/util.h"
#include "store_env.h"

static char g_dir[64], g_data[128];

/* Runs rearview-server with the arguments after `out, cap` (NULL-ended),
 * capturing stdout into out; returns the exit status. */
static int run_server_cmd(char *out, size_t cap, ...)
{
	const char *argv[16] = {RVS_BIN};
	int p[2], st, argc = 1;
	size_t got = 0;
	va_list ap;
	pid_t pid;

	va_start(ap, cap);
	while (argc < 15 && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	assert_int_equal(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(p[1], 1);
		dup2(fd, 2);
		close(p[0]);
		execv(RVS_BIN, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], out + got, cap - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Runs `init DIR`, capturing stdout into out; returns the exit status. */
static int run_init(char *out, size_t cap)
{
	return run_server_cmd(out, cap, "init", g_data, (char *)NULL);
}

static int setup(void **state)
{
	snprintf(g_dir, sizeof g_dir, "/tmp/rvs-init-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(g_data, sizeof g_data, "%s/d", g_dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static mode_t mode_of(const char *name)
{
	char path[256];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", g_data, name);
	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 0777;
}

static void test_init_creates_usable_secrets_once(void **state)
{
	char out[4096], pw[64] = "", path[256], *p;
	sqlite3 *db;
	sqlite3_stmt *st;
	uint8_t hash[32];
	mbedtls_x509_crt ca, srv;
	mbedtls_pk_context key;
	uint32_t flags = 0;

	assert_int_equal(run_init(out, sizeof out), 0);
	p = strstr(out, "admin password:");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "admin password: %63s", pw), 1);
	assert_true(strlen(pw) >= 16);

	assert_int_equal(mode_of("ca.key"), 0600);
	assert_int_equal(mode_of("server.key"), 0600);
	assert_int_equal(mode_of("policy-signing.key"), 0600);
	assert_int_equal(mode_of("enrollment.secret"), 0600);
	assert_int_equal(mode_of("api.token"), 0600);
	assert_int_equal(mode_of("policy-signing.pub"), 0644);
	assert_int_equal(mode_of("rearview.db") & 077, 0);

	/* The printed password verifies against the stored PBKDF2 hash; the
	 * password itself appears nowhere in the database. */
	snprintf(path, sizeof path, "%s/rearview.db", g_data);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT pbkdf2_iterations, salt, hash FROM admins"
					    " WHERE name = 'admin'",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_true(sqlite3_column_int(st, 0) >= 100000);
	assert_int_equal(rvs_pbkdf2(pw, sqlite3_column_blob(st, 1),
				    (size_t)sqlite3_column_bytes(st, 1),
				    (unsigned)sqlite3_column_int(st, 0), hash),
			 0);
	assert_int_equal(sqlite3_column_bytes(st, 2), 32);
	assert_memory_equal(hash, sqlite3_column_blob(st, 2), 32);
	sqlite3_finalize(st);
	sqlite3_close(db);

	/* server.crt chains to ca.crt for both names devices use. */
	mbedtls_x509_crt_init(&ca);
	mbedtls_x509_crt_init(&srv);
	snprintf(path, sizeof path, "%s/ca.crt", g_data);
	assert_int_equal(mbedtls_x509_crt_parse_file(&ca, path), 0);
	snprintf(path, sizeof path, "%s/server.crt", g_data);
	assert_int_equal(mbedtls_x509_crt_parse_file(&srv, path), 0);
	assert_int_equal(mbedtls_x509_crt_verify(&srv, &ca, NULL, "localhost", &flags, NULL, NULL),
			 0);
	assert_int_not_equal(
		mbedtls_x509_crt_verify(&srv, &ca, NULL, "evil.example", &flags, NULL, NULL), 0);
	mbedtls_x509_crt_free(&srv);
	mbedtls_x509_crt_free(&ca);

	/* The policy signing key is an ECDSA P-256 key in PEM. */
	mbedtls_pk_init(&key);
	snprintf(path, sizeof path, "%s/policy-signing.key", g_data);
	assert_int_equal(mbedtls_pk_parse_keyfile(&key, path, NULL), 0);
	assert_true(mbedtls_pk_can_do(&key, MBEDTLS_PK_ECDSA));
	assert_int_equal(mbedtls_pk_get_bitlen(&key), 256);
	mbedtls_pk_free(&key);
	/* Its public half, for devices (rvp_policy_verify reads SPKI PEM). */
	mbedtls_pk_init(&key);
	snprintf(path, sizeof path, "%s/policy-signing.pub", g_data);
	assert_int_equal(mbedtls_pk_parse_public_keyfile(&key, path), 0);
	assert_true(mbedtls_pk_can_do(&key, MBEDTLS_PK_ECDSA));
	mbedtls_pk_free(&key);

	/* A second init never overwrites keys or the config. */
	assert_int_not_equal(run_init(out, sizeof out), 0);
	assert_null(strstr(out, "admin password:"));
}

/* The admin password printed after `marker` in out, checked against the
 * hash of account `user` in the data directory's database. */
/* Hex digits into bytes; the byte count. */
static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;
	unsigned v;

	while (n < cap && sscanf(hex + 2 * n, "%2x", &v) == 1)
		out[n++] = (uint8_t)v;
	return n;
}

/* The password printed after marker in out verifies against user's PBKDF2
 * hash in the database dsn (either backend). */
static void assert_password_matches(const char *dsn, const char *out, const char *marker,
				    const char *user)
{
	char pw[64] = "", salt_hex[130], hash_hex[130], *row;
	const char *p = strstr(out, marker);
	uint8_t salt[64], stored[64], hash[32];
	unsigned iterations;

	assert_non_null(p);
	assert_int_equal(sscanf(p + strlen(marker), " %63s", pw), 1);
	assert_int_equal(strlen(pw), 20);
	row = rvt_db_text(
		dsn,
		strstr(dsn, "://")
			? "SELECT pbkdf2_iterations || ' ' || encode(salt, 'hex') || ' ' ||"
			  " encode(hash, 'hex') FROM admins WHERE name = ?"
			: "SELECT pbkdf2_iterations || ' ' || hex(salt) || ' ' || hex(hash)"
			  " FROM admins WHERE name = ?",
		user);
	assert_non_null(row);
	assert_int_equal(sscanf(row, "%u %129s %129s", &iterations, salt_hex, hash_hex), 3);
	free(row);
	assert_int_equal(unhex(hash_hex, stored, sizeof stored), 32);
	assert_int_equal(rvs_pbkdf2(pw, salt, unhex(salt_hex, salt, sizeof salt), iterations, hash),
			 0);
	assert_memory_equal(hash, stored, 32);
}

/* Whether data_dir/server.crt chains to data_dir/ca.crt for `name` (a DNS
 * name: mbedTLS checks it against the certificate's dNSName entries). */
static int cert_valid_for(const char *name)
{
	mbedtls_x509_crt ca, srv;
	uint32_t flags;
	char path[256];
	int rc;

	mbedtls_x509_crt_init(&ca);
	mbedtls_x509_crt_init(&srv);
	snprintf(path, sizeof path, "%s/ca.crt", g_data);
	assert_int_equal(mbedtls_x509_crt_parse_file(&ca, path), 0);
	snprintf(path, sizeof path, "%s/server.crt", g_data);
	assert_int_equal(mbedtls_x509_crt_parse_file(&srv, path), 0);
	rc = mbedtls_x509_crt_verify(&srv, &ca, NULL, name, &flags, NULL, NULL);
	mbedtls_x509_crt_free(&srv);
	mbedtls_x509_crt_free(&ca);
	return rc == 0;
}

/* OpenSSL's own check of server.crt for an IP address (mbedTLS 2.28 checks
 * DNS names only): `openssl verify -verify_ip`. */
static int cert_valid_for_ip(const char *ip)
{
	char cmd[512];

	snprintf(cmd, sizeof cmd,
		 "openssl verify -CAfile '%s/ca.crt' -verify_ip '%s' '%s/server.crt' "
		 ">/dev/null 2>&1",
		 g_data, ip, g_data);
	return system(cmd) == 0;
}

static void test_init_hostname_certificate_valid_for_those_names_only(void **state)
{
	char out[4096];

	(void)state;
	assert_int_equal(run_server_cmd(out, sizeof out, "init", g_data, "--hostname",
					"rv.example.test", "--hostname", "10.1.2.3", (char *)NULL),
			 0);
	assert_non_null(strstr(out, "certificate for:   localhost, 127.0.0.1, rv.example.test, "
				    "10.1.2.3"));
	assert_true(cert_valid_for("rv.example.test"));
	assert_true(cert_valid_for("localhost"));
	assert_false(cert_valid_for("other.example.test"));
	if (system("command -v openssl >/dev/null 2>&1") != 0) {
		fprintf(stderr, "skipped: openssl missing, IP names not checked\n");
		skip();
	}
	assert_true(cert_valid_for_ip("10.1.2.3"));
	assert_true(cert_valid_for_ip("127.0.0.1"));
	assert_false(cert_valid_for_ip("10.1.2.4"));
}

static void test_init_bad_hostname_refused_nothing_created(void **state)
{
	char out[4096], path[256];

	(void)state;
	assert_int_equal(run_server_cmd(out, sizeof out, "init", g_data, "--hostname", "bad name",
					(char *)NULL),
			 1);
	assert_int_equal(
		run_server_cmd(out, sizeof out, "init", g_data, "--hostname", "a..b", (char *)NULL),
		1);
	assert_int_equal(
		run_server_cmd(out, sizeof out, "init", g_data, "--hostnam", "x", (char *)NULL), 2);
	snprintf(path, sizeof path, "%s/rearview-server.conf", g_data);
	assert_int_not_equal(access(path, F_OK), 0);
}

static void test_init_cert_reissues_from_the_same_ca(void **state)
{
	char out[4096], conf[256], path[256], before[4096], after[4096];
	FILE *f;
	size_t n;

	(void)state;
	assert_int_equal(run_init(out, sizeof out), 0);
	snprintf(conf, sizeof conf, "%s/rearview-server.conf", g_data);
	snprintf(path, sizeof path, "%s/ca.crt", g_data);
	assert_non_null(f = fopen(path, "r"));
	n = fread(before, 1, sizeof before - 1, f);
	before[n] = '\0';
	fclose(f);
	assert_false(cert_valid_for("fleet.example.test"));
	assert_int_equal(run_server_cmd(out, sizeof out, "cert", "--config", conf, "--hostname",
					"fleet.example.test", (char *)NULL),
			 0);
	assert_true(cert_valid_for("fleet.example.test"));
	assert_true(cert_valid_for("localhost"));
	/* Devices keep trusting the CA they have: ca.crt is unchanged. */
	assert_non_null(f = fopen(path, "r"));
	n = fread(after, 1, sizeof after - 1, f);
	after[n] = '\0';
	fclose(f);
	assert_string_equal(before, after);
	assert_int_equal(mode_of("server.key"), 0600);
	/* No name: usage. */
	assert_int_equal(run_server_cmd(out, sizeof out, "cert", "--config", conf, (char *)NULL),
			 2);
}

static void test_init_passwd_replaces_the_admin_password(void **state)
{
	char out[4096], out2[4096], conf[256], db[512];

	(void)state;
	assert_int_equal(run_init(out, sizeof out), 0);
	snprintf(db, sizeof db, "%s/rearview.db", g_data);
	assert_password_matches(db, out, "admin password:", "admin"); /* init's sqlite file */
	snprintf(conf, sizeof conf, "%s/rearview-server.conf", g_data);
	assert_int_equal(rvt_store_conf(conf, g_data, db, sizeof db), 0);
	assert_int_equal(
		run_server_cmd(out2, sizeof out2, "passwd", "--config", conf, (char *)NULL), 0);
	assert_password_matches(db, out2, "new password", "admin");
	/* A second account by name. */
	assert_int_equal(run_server_cmd(out2, sizeof out2, "passwd", "--config", conf, "oncall",
					(char *)NULL),
			 0);
	assert_password_matches(db, out2, "new password", "oncall");
}

static void test_init_migrate_reports_schema_version(void **state)
{
	char out[4096], conf[256], db[512];
	int version = 0;

	(void)state;
	assert_int_equal(run_init(out, sizeof out), 0);
	snprintf(conf, sizeof conf, "%s/rearview-server.conf", g_data);
	assert_int_equal(rvt_store_conf(conf, g_data, db, sizeof db), 0);
	assert_int_equal(run_server_cmd(out, sizeof out, "migrate", "--config", conf, (char *)NULL),
			 0);
	assert_int_equal(sscanf(out,
				rvt_store_is_pg() ? "postgresql store at schema version %d"
						  : "sqlite3 store at schema version %d",
				&version),
			 1);
	assert_true(version >= 6);
	snprintf(conf, sizeof conf, "%s/missing.conf", g_data);
	assert_int_equal(run_server_cmd(out, sizeof out, "migrate", "--config", conf, (char *)NULL),
			 1);
}

/* `requeue`: exactly one filter, said out loud (--reason SUBSTR, not
 * empty, or --all); what it did printed.  (What it requeues: test_store.c's
 * case on both backends.) */
static void test_init_requeue_needs_one_filter(void **state)
{
	char out[4096], conf[256], db[512];

	(void)state;
	assert_int_equal(run_init(out, sizeof out), 0);
	snprintf(conf, sizeof conf, "%s/rearview-server.conf", g_data);
	assert_int_equal(rvt_store_conf(conf, g_data, db, sizeof db), 0);
	assert_int_equal(run_server_cmd(out, sizeof out, "requeue", "--config", conf, (char *)NULL),
			 2);
	assert_int_equal(run_server_cmd(out, sizeof out, "requeue", "--config", conf,
					"--reason=", (char *)NULL),
			 2);
	assert_int_equal(run_server_cmd(out, sizeof out, "requeue", "--config", conf, "--all",
					"--reason=x", (char *)NULL),
			 2);
	assert_int_equal(run_server_cmd(out, sizeof out, "requeue", "--config", conf,
					"--reason=zstd", (char *)NULL),
			 0);
	assert_string_equal(out, "requeued 0 quarantined uploads whose reason contains \"zstd\"\n");
	assert_int_equal(run_server_cmd(out, sizeof out, "requeue", "--config", conf, "--reason",
					"index: upload", (char *)NULL),
			 0);
	assert_string_equal(
		out, "requeued 0 quarantined uploads whose reason contains \"index: upload\"\n");
	assert_int_equal(
		run_server_cmd(out, sizeof out, "requeue", "--config", conf, "--all", (char *)NULL),
		0);
	assert_string_equal(out, "requeued 0 quarantined uploads\n");
	snprintf(conf, sizeof conf, "%s/missing.conf", g_data);
	assert_int_equal(
		run_server_cmd(out, sizeof out, "requeue", "--config", conf, "--all", (char *)NULL),
		1);
}

/* `reindex`: its options checked, what it did printed.  (What it
 * re-indexes: test_agg.c's case on both backends.) */
static void test_init_reindex_usage_and_report(void **state)
{
	char out[4096], conf[256], db[512];

	(void)state;
	assert_int_equal(run_init(out, sizeof out), 0);
	snprintf(conf, sizeof conf, "%s/rearview-server.conf", g_data);
	assert_int_equal(rvt_store_conf(conf, g_data, db, sizeof db), 0);
	assert_int_equal(run_server_cmd(out, sizeof out, "reindex", "--config", conf, "--batch",
					"0", (char *)NULL),
			 2);
	assert_int_equal(run_server_cmd(out, sizeof out, "reindex", "--config", conf, "--batch",
					"10001", (char *)NULL),
			 2);
	assert_int_equal(run_server_cmd(out, sizeof out, "reindex", "--config", conf, "--after",
					(char *)NULL),
			 2);
	assert_int_equal(run_server_cmd(out, sizeof out, "reindex", "--config", conf, "--every",
					(char *)NULL),
			 2);
	assert_int_equal(run_server_cmd(out, sizeof out, "reindex", "--config", conf, (char *)NULL),
			 0);
	assert_string_equal(out, "queued 0 of 0 traces without aggregates for re-indexing\n");
	assert_int_equal(run_server_cmd(out, sizeof out, "reindex", "--config", conf, "--all",
					"--batch", "7", "--after", "t-0", (char *)NULL),
			 0);
	assert_string_equal(out, "queued 0 of 0 decoded traces for re-indexing\n");
	snprintf(conf, sizeof conf, "%s/missing.conf", g_data);
	assert_int_equal(run_server_cmd(out, sizeof out, "reindex", "--config", conf, (char *)NULL),
			 1);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_creates_usable_secrets_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_init_hostname_certificate_valid_for_those_names_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_bad_hostname_refused_nothing_created,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_cert_reissues_from_the_same_ca, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_init_passwd_replaces_the_admin_password, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_init_reindex_usage_and_report, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_init_requeue_needs_one_filter, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_init_migrate_reports_schema_version, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
