/*
 * test_init.c — `rearview-server init DIR` run as a process: the files it
 * creates, their modes, the admin password it prints once (checked against
 * the PBKDF2 hash in the database), the certificate chain, and that a second
 * init refuses to overwrite.
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

#include "rvs.h"

static char g_dir[64], g_data[128];

/* Runs init, capturing stdout into out; returns the exit status. */
static int run_init(char *out, size_t cap)
{
	int p[2], st;
	size_t got = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		dup2(p[1], 1);
		dup2(fd, 2);
		close(p[0]);
		execl(RVS_BIN, RVS_BIN, "init", g_data, (char *)NULL);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_creates_usable_secrets_once, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
