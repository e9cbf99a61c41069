/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config.c — the INI configuration: defaults, overrides, relative
 * paths, drop-ins (FILE.d/NAME.conf, in name order), and that typos and bad
 * numbers are errors rather than defaults, in a drop-in as in the file.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cmocka.h>

#include "base/config.h"

static char g_path[64];

static int load(const char *text, struct rvs_config *c, char *err, size_t errlen)
{
	FILE *f;
	int fd;
	snprintf(g_path, sizeof g_path, "/tmp/rvs-conf-XXXXXX");
	fd = mkstemp(g_path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	fd = rvs_config_load(g_path, c, err, errlen);
	unlink(g_path);
	return fd;
}

static void test_config_defaults_and_relative_paths(void **state)
{
	struct rvs_config c;
	char err[256];
	assert_int_equal(load("[server]\ndata_dir = /srv/rv\n", &c, err, sizeof err), 0);
	assert_string_equal(c.listen_host, "127.0.0.1");
	assert_int_equal(c.listen_port, 8443);
	assert_int_equal(c.max_body_bytes, 64ull << 20);
	assert_string_equal(c.database, "/srv/rv/rearview.db");
	assert_string_equal(c.tls_cert, "/srv/rv/server.crt");
	assert_string_equal(c.policy_file, "/srv/rv/policy/current.spb");
}

static void test_config_overrides_later_keys_win(void **state)
{
	struct rvs_config c;
	char err[256];
	assert_int_equal(load("[server]\ndata_dir = /d\nlisten = 127.0.0.1:8443\n"
			      "database = /abs/x.db\nmax_body_bytes = 1024\n"
			      "listen = [::1]:0\nrequest_timeout_ms = 250\n",
			      &c, err, sizeof err),
			 0);
	assert_string_equal(c.listen_host, "::1");
	assert_int_equal(c.listen_port, 0);
	assert_string_equal(c.database, "/abs/x.db");
	assert_int_equal(c.max_body_bytes, 1024);
	assert_int_equal(c.request_timeout_ms, 250);
}

/* Writes text to dir/name. */
static void put(const char *dir, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_config_dropins_read_in_name_order_later_wins(void **state)
{
	char dir[] = "/tmp/rvs-confd-XXXXXX", conf[64], dropins[80], err[256], cmd[128];
	struct rvs_config c;

	assert_non_null(mkdtemp(dir));
	snprintf(conf, sizeof conf, "%s/rv.conf", dir);
	snprintf(dropins, sizeof dropins, "%s/rv.conf.d", dir);
	put(dir, "rv.conf",
	    "[server]\ndata_dir = /d\nmax_body_bytes = 1024\n"
	    "request_timeout_ms = 250\n");
	/* No directory: the file alone. */
	assert_int_equal(rvs_config_load(conf, &c, err, sizeof err), 0);
	assert_int_equal(c.max_body_bytes, 1024);

	assert_int_equal(mkdir(dropins, 0755), 0);
	/* Written out of order: read 10-a, then 20-b; others are not drop-ins. */
	put(dropins, "20-b.conf", "[server]\nmax_body_bytes = 3000\n");
	put(dropins, "10-a.conf",
	    "[server]\nmax_body_bytes = 2000\nlisten = [::1]:9\n"
	    "database = other.db\n");
	put(dropins, "README", "not a drop-in: = = =\n");
	put(dropins, ".10-hidden.conf", "[server]\nnonsense = 1\n");
	put(dropins, "15-a.conf.bak", "[server]\nnonsense = 1\n");
	assert_int_equal(rvs_config_load(conf, &c, err, sizeof err), 0);
	assert_int_equal(c.max_body_bytes, 3000);
	assert_string_equal(c.listen_host, "::1");
	assert_int_equal(c.listen_port, 9);
	assert_int_equal(c.request_timeout_ms, 250);
	/* Relative paths resolve once every file is read. */
	assert_string_equal(c.database, "/d/other.db");

	/* A typo in a drop-in is an error naming that file and line. */
	put(dropins, "30-c.conf", "[server]\n\nmax_body_bytez = 1\n");
	assert_int_equal(rvs_config_load(conf, &c, err, sizeof err), -EINVAL);
	assert_non_null(strstr(err, "rv.conf.d/30-c.conf:3: unknown key max_body_bytez"));
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_config_store_section_names_the_blob_backend(void **state)
{
	struct rvs_config c;
	char err[256] = "";
	assert_int_equal(load("[server]\ndata_dir = /d\n[store]\nblobs = s3://bkt/pre\n"
			      "s3_endpoint = http://127.0.0.1:9000\ns3_region = eu-west-1\n"
			      "s3_access_key = AK\ns3_secret_file = s3.secret\n[server]\n"
			      "max_body_bytes = 2048\n",
			      &c, err, sizeof err),
			 0);
	assert_string_equal(c.blobs, "s3://bkt/pre");
	assert_string_equal(c.s3_endpoint, "http://127.0.0.1:9000");
	assert_string_equal(c.s3_region, "eu-west-1");
	assert_string_equal(c.s3_access_key, "AK");
	assert_string_equal(c.s3_secret_file, "/d/s3.secret");
	assert_int_equal(c.max_body_bytes, 2048);
	assert_int_equal(
		load("[server]\ndata_dir = /d\n[store]\nblobs = b2\n", &c, err, sizeof err), 0);
	assert_string_equal(c.blobs, "/d/b2");
	assert_true(load("[server]\ndata_dir = /d\n[store]\nblob = x\n", &c, err, sizeof err) < 0);
}

static void test_config_typos_and_bad_values_are_errors(void **state)
{
	static const char *const bad[] = {
		"[server]\ndata_dir = /d\nmax_body_byte = 5\n",
		"[server]\ndata_dir = /d\nmax_connections = -1\n",
		"[server]\ndata_dir = /d\nmax_connections = 12abc\n",
		"[server]\ndata_dir = /d\nlisten = 127.0.0.1\n",
		"[server]\ndata_dir = /d\nlisten = 127.0.0.1:70000\n",
		"[server]\ndata_dir = /d\nupload_rate_per_min = nan\n",
		"[server]\ndata_dir = /d\nmax_connections = 0\n",
		"[other]\ndata_dir = /d\n",
		"[server]\nlisten = 127.0.0.1:1\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct rvs_config c;
		char err[256] = "";
		assert_true(load(bad[i], &c, err, sizeof err) < 0);
		assert_true(strlen(err) > 0);
	}
}

static void test_config_regression_alert_keys_parse_and_bad_values_are_errors(void **state)
{
	static const char *const bad[] = {
		"[server]\ndata_dir = /d\nregress_alert_ratio = 0.5\n",
		"[server]\ndata_dir = /d\nregress_alert_q = 2\n",
		"[server]\ndata_dir = /d\nregress_min_traces = 0\n",
		"[server]\ndata_dir = /d\nwebhook_max_attempts = x\n",
	};
	struct rvs_config c;
	char err[256] = "";

	assert_int_equal(load("[server]\ndata_dir = /d\n", &c, err, sizeof err), 0);
	assert_int_equal(c.regress_min_traces, 20);
	assert_int_equal(c.webhook_max_attempts, 8);
	assert_string_equal(c.webhook_secret_file, "/d/webhook.secret");
	assert_string_equal(c.webhook_urls, "");
	assert_int_equal(load("[server]\ndata_dir = /d\nregress_min_traces = 8\n"
			      "regress_alert_ratio = 2.5\nregress_alert_q = 0.05\n"
			      "webhook_urls = http://a/x https://b/y\nwebhook_backoff_ms = 50\n"
			      "webhook_secret_file = /etc/rv/hook\nregress_interval_ms = 100\n",
			      &c, err, sizeof err),
			 0);
	assert_int_equal(c.regress_min_traces, 8);
	assert_true(c.regress_alert_ratio == 2.5 && c.regress_alert_q == 0.05);
	assert_string_equal(c.webhook_urls, "http://a/x https://b/y");
	assert_int_equal(c.webhook_backoff_ms, 50);
	assert_int_equal(c.regress_interval_ms, 100);
	assert_string_equal(c.webhook_secret_file, "/etc/rv/hook");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		assert_true(load(bad[i], &c, err, sizeof err) < 0);
		assert_non_null(strstr(err, "bad value"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_defaults_and_relative_paths),
		cmocka_unit_test(test_config_overrides_later_keys_win),
		cmocka_unit_test(test_config_dropins_read_in_name_order_later_wins),
		cmocka_unit_test(test_config_typos_and_bad_values_are_errors),
		cmocka_unit_test(test_config_store_section_names_the_blob_backend),
		cmocka_unit_test(test_config_regression_alert_keys_parse_and_bad_values_are_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
