/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_blob.c — the blob interface (blob.h): the same cases run against
 * every backend — a local directory in a temporary directory, and the S3
 * backend against a real S3 server (npm s3rver, pinned in
 * tests/server/s3rver/package.json) the test starts on a port it lets the
 * kernel pick (port 0, read back from its banner) in a temporary directory
 * and kills at the end, and the PostgreSQL backend against a real
 * PostgreSQL 15 (pg_harness.h: the test run's cluster, or a private one),
 * a database per case.
 * Without node and s3rver, or postgresql-15, those cases skip visibly.
 * Then what only S3 has: its secret file's permissions, an unknown access
 * key refused by the server, an endpoint that does not answer (retried, then
 * -EAGAIN, transient), and the real server storing and decoding uploads from S3; and, for
 * the local and PostgreSQL backends, that a get holds the blob only once.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>
#include <pwd.h>

#include "blob/blob.h"
#include "rearview/sanitizer.h"
#include "base/util.h"
#include "s3_harness.h"
#include "pg_harness.h"

struct fx;
/* One backend under test. */
struct backend {
	const char *name;
	int (*open)(struct fx *f);
	/* Replaces blob hex's stored bytes by others (a corrupt store). */
	void (*corrupt)(struct fx *f, const char *hex);
};

struct fx {
	const struct backend *be;
	char dir[64];
	char pg[384]; /* the PostgreSQL backend's database */
	struct rvs_blobs *b;
};

/* ---- the S3 server, shared by the S3 group ------------------------------- */

static struct s3h s3rver;

static int s3_group_setup(void **state)
{
	s3h_start(&s3rver, "rv");
	return 0;
}

static int s3_group_teardown(void **state)
{
	return s3h_stop(&s3rver);
}

static struct rvs_blob_s3_config s3_config(void)
{
	struct rvs_blob_s3_config c = {
		.endpoint = s3rver.endpoint,
		.region = "us-east-1",
		.access_key = "S3RVER",
		.secret_file = s3rver.secret,
		.timeout_ms = 30000,
	};
	return c;
}

/* ---- backends ------------------------------------------------------------ */

static int local_open(struct fx *f)
{
	char blobs[96];
	snprintf(blobs, sizeof blobs, "%s/blobs", f->dir);
	return rvs_blobs_open(blobs, NULL, f->dir, &f->b);
}

static void local_corrupt(struct fx *f, const char *hex)
{
	char blobs[96], path[1024];
	snprintf(blobs, sizeof blobs, "%s/blobs", f->dir);
	assert_int_equal(rvs_blob_path(blobs, hex, path, sizeof path), 0);
	assert_int_equal(rvs_write_file_atomic(path, "tampered", 8, 0600), 0);
}

static int s3_open(struct fx *f)
{
	struct rvs_blob_s3_config c = s3_config();
	char spec[96];
	/* A prefix per test: the cases share the bucket, never their blobs. */
	snprintf(spec, sizeof spec, "s3://rv/blobs/%s", strrchr(f->dir, '-') + 1);
	return rvs_blobs_open(spec, &c, f->dir, &f->b);
}

/* s3rver keeps an object's bytes in DIR/data/BUCKET/KEY._S3rver_object. */
static void s3_corrupt(struct fx *f, const char *hex)
{
	char path[512];
	snprintf(path, sizeof path, "%s/data/rv/blobs/%s/%s._S3rver_object", s3rver.dir,
		 strrchr(f->dir, '-') + 1, hex);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(rvs_write_file_atomic(path, "tampered", 8, 0600), 0);
}

/* ---- PostgreSQL, shared by the PostgreSQL group --------------------------- */

static struct pgh g_pg;
static int g_pg_up; /* 1 running, -1 unavailable */

static int pg_group_setup(void **state)
{
	int rc = pgh_start(&g_pg);

	g_pg_up = rc == 0 ? 1 : -1;
	if (rc)
		print_message("postgresql unavailable: %s\n", g_pg.why);
	return rc == -ENOENT || rc == 0 ? 0 : -1;
}

static int pg_group_teardown(void **state)
{
	pgh_stop(&g_pg);
	return 0;
}

/* A database per test: the cases never see each other's blobs. */
static int pg_open(struct fx *f)
{
	if (pgh_fresh_db(&g_pg, f->pg, sizeof f->pg))
		return -1;
	return rvs_blobs_open(f->pg, NULL, f->dir, &f->b);
}

static void pg_corrupt(struct fx *f, const char *hex)
{
	const char *vals[1] = {hex};
	PGconn *c;
	PGresult *r;

	c = PQconnectdb(f->pg);
	r = PQexecParams(c, "UPDATE rv_blobs SET bytes = 'tampered'::bytea WHERE sha256 = $1", 1,
			 NULL, vals, NULL, NULL, 0);
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	assert_string_equal(PQcmdTuples(r), "1");
	PQclear(r);
	PQfinish(c);
}

static const struct backend local_be = {"local", local_open, local_corrupt};
static const struct backend s3_be = {"s3", s3_open, s3_corrupt};
static const struct backend pg_be = {"postgresql", pg_open, pg_corrupt};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	f->be = *state;
	snprintf(f->dir, sizeof f->dir, "/tmp/rvs-blob-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	*state = f;
	if ((f->be == &s3_be && s3rver.up != 1) || (f->be == &pg_be && g_pg_up != 1))
		return 0; /* the case skips */
	return f->be->open(f);
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];
	rvs_blobs_close(f->b);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	int rc = system(cmd);
	free(f);
	return rc == 0 ? 0 : -1;
}

static struct fx *fx_of(void **state)
{
	struct fx *f = *state;
	if (!f->b) {
		print_message(
			"%s backend unavailable (node and s3rver, or postgresql-15, missing)\n",
			f->be->name);
		skip();
	}
	return f;
}

static void hex_of(const void *data, size_t len, char hex[65])
{
	uint8_t d[32];
	rvs_sha256(data, len, d);
	rvs_hex(d, 32, hex);
}

/* ---- the cases, run against each backend --------------------------------- */

static void test_blob_put_get_roundtrips(void **state)
{
	struct fx *f = fx_of(state);
	const char payload[] = "a capture's bytes\0with a NUL";
	char hex[65], want[65];
	uint8_t *got;
	size_t len;

	hex_of(payload, sizeof payload, want);
	assert_int_equal(f->b->ops->put(f->b, payload, sizeof payload, hex), 0);
	assert_string_equal(hex, want);
	assert_int_equal(f->b->ops->exists(f->b, hex), 1);
	assert_int_equal(f->b->ops->get(f->b, hex, 1 << 20, &got, &len), 0);
	assert_int_equal(len, sizeof payload);
	assert_memory_equal(got, payload, len);
	free(got);
}

static int count_cb(const char *hex, void *arg)
{
	(*(unsigned *)arg)++;
	return 1; /* referenced: keep */
}

static void test_blob_put_twice_dedups(void **state)
{
	struct fx *f = fx_of(state);
	char hex[65], again[65];
	unsigned seen = 0;
	uint8_t *got;
	size_t len;

	assert_int_equal(f->b->ops->put(f->b, "same", 4, hex), 0);
	assert_int_equal(f->b->ops->put(f->b, "same", 4, again), 0);
	assert_string_equal(hex, again);
	/* One stored blob: a sweep that keeps everything lists it once. */
	assert_int_equal(f->b->ops->sweep(f->b, 0, count_cb, &seen, NULL), 0);
	assert_int_equal(seen, 1);
	assert_int_equal(f->b->ops->get(f->b, hex, 4, &got, &len), 0);
	assert_memory_equal(got, "same", 4);
	free(got);
}

static void test_blob_list_counts_each_blob_once(void **state)
{
	struct fx *f = fx_of(state);
	char a[65], b[65], c[65];
	unsigned seen = 0;

	assert_int_equal(f->b->ops->put(f->b, "one", 3, a), 0);
	assert_int_equal(f->b->ops->put(f->b, "two", 3, b), 0);
	assert_int_equal(f->b->ops->put(f->b, "one", 3, c), 0);
	assert_int_equal(f->b->ops->sweep(f->b, 0, count_cb, &seen, NULL), 0);
	assert_int_equal(seen, 2);
}

static void test_blob_delete_removes(void **state)
{
	struct fx *f = fx_of(state);
	char hex[65];
	uint8_t *got;
	size_t len;

	assert_int_equal(f->b->ops->put(f->b, "gone soon", 9, hex), 0);
	/* Younger than the grace period asked for: kept. */
	assert_int_equal(f->b->ops->del(f->b, hex, 3600), 0);
	assert_int_equal(f->b->ops->exists(f->b, hex), 1);
	assert_int_equal(f->b->ops->del(f->b, hex, 0), 1);
	assert_int_equal(f->b->ops->exists(f->b, hex), 0);
	assert_int_equal(f->b->ops->get(f->b, hex, 100, &got, &len), -ENOENT);
	assert_int_equal(f->b->ops->del(f->b, hex, 0), 0); /* already gone: fine */
}

static void test_blob_missing_is_enoent(void **state)
{
	struct fx *f = fx_of(state);
	char hex[65], path[1024];
	uint8_t *got;
	size_t len;
	int is_temp;

	hex_of("never stored", 12, hex);
	assert_int_equal(f->b->ops->exists(f->b, hex), 0);
	assert_int_equal(f->b->ops->get(f->b, hex, 100, &got, &len), -ENOENT);
	if (!f->b->ops->path)
		assert_int_equal(rvs_blobs_file(f->b, hex, 100, path, sizeof path, &is_temp),
				 -ENOENT);
	assert_int_equal(f->b->ops->get(f->b, "../../etc/passwd", 100, &got, &len), -EINVAL);
}

static void test_blob_oversize_is_efbig(void **state)
{
	struct fx *f = fx_of(state);
	char big[100000], hex[65], path[1024];
	uint8_t *got;
	size_t len;
	int is_temp;

	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (char)(i * 7);
	assert_int_equal(f->b->ops->put(f->b, big, sizeof big, hex), 0);
	assert_int_equal(f->b->ops->get(f->b, hex, sizeof big - 1, &got, &len), -EFBIG);
	assert_int_equal(f->b->ops->get(f->b, hex, sizeof big, &got, &len), 0);
	assert_memory_equal(got, big, sizeof big);
	free(got);
	if (!f->b->ops->path) {
		assert_int_equal(
			rvs_blobs_file(f->b, hex, sizeof big - 1, path, sizeof path, &is_temp),
			-EFBIG);
		assert_int_not_equal(access(path, F_OK), 0); /* no temporary left */
	}
}

static void test_blob_corrupt_is_ebadmsg(void **state)
{
	struct fx *f = fx_of(state);
	char hex[65], path[1024];
	uint8_t *got;
	size_t len;
	int is_temp, fd;

	assert_int_equal(f->b->ops->put(f->b, "the real content", 16, hex), 0);
	f->be->corrupt(f, hex);
	assert_int_equal(f->b->ops->get(f->b, hex, 100, &got, &len), -EBADMSG);
	snprintf(path, sizeof path, "%s/sink", f->dir);
	assert_true((fd = open(path, O_RDWR | O_CREAT, 0600)) >= 0);
	assert_int_equal(f->b->ops->get_fd(f->b, hex, 100, fd), -EBADMSG);
	close(fd);
	if (!f->b->ops->path)
		assert_int_equal(rvs_blobs_file(f->b, hex, 100, path, sizeof path, &is_temp),
				 -EBADMSG);
}

static void test_blob_file_gives_the_content(void **state)
{
	struct fx *f = fx_of(state);
	char hex[65], path[1024];
	uint8_t *got;
	size_t len;
	int is_temp;

	assert_int_equal(f->b->ops->put(f->b, "decode me", 9, hex), 0);
	assert_int_equal(rvs_blobs_file(f->b, hex, 1 << 20, path, sizeof path, &is_temp), 0);
	assert_int_equal(is_temp, f->b->ops->path == NULL);
	assert_int_equal(rvs_read_file(path, 100, &got, &len), 0);
	assert_int_equal(len, 9);
	assert_memory_equal(got, "decode me", 9);
	free(got);
	if (is_temp)
		assert_int_equal(unlink(path), 0);
}

static int referenced_cb(const char *hex, void *arg)
{
	return strcmp(hex, arg) == 0;
}

static void test_blob_sweep_removes_only_old_orphans(void **state)
{
	struct fx *f = fx_of(state);
	char kept[65], orphan[65];
	struct rvs_blob_sweep_stats st;

	assert_int_equal(f->b->ops->put(f->b, "kept", 4, kept), 0);
	assert_int_equal(f->b->ops->put(f->b, "orphan", 6, orphan), 0);
	/* Within the grace window: nothing goes. */
	assert_int_equal(f->b->ops->sweep(f->b, 3600, referenced_cb, kept, &st), 0);
	assert_int_equal(st.orphans, 0);
	assert_int_equal(f->b->ops->exists(f->b, orphan), 1);
	/* Without one the orphan goes, the referenced blob stays. */
	assert_int_equal(f->b->ops->sweep(f->b, 0, referenced_cb, kept, &st), 0);
	assert_int_equal(st.orphans, 1);
	assert_int_equal(f->b->ops->exists(f->b, orphan), 0);
	assert_int_equal(f->b->ops->exists(f->b, kept), 1);
}

/* ---- local and PostgreSQL: what a get holds ------------------------------ */

/* This process's "VmHWM:" or "VmRSS:" in KiB, or -1. */
static long self_kib(const char *key)
{
	char buf[4096];
	const char *p;
	FILE *f = fopen("/proc/self/status", "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return (p = strstr(buf, key)) ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* A get holds the blob once: 48 MiB (past malloc's largest mapping
 * threshold, so every buffer of that size is fresh pages) read back whole,
 * with this process's peak RSS growing by under 48 + 16 MiB — a bytea
 * fetched whole would be held three times (libpq's input buffer, the
 * result, the copy returned). */
static void test_blob_get_of_48mib_holds_it_once(void **state)
{
	const size_t n = 48u << 20;
	struct fx *f = fx_of(state);
	uint8_t *big = malloc(n), *got = NULL;
	char hex[65];
	size_t len = 0;
	long before, peak;
	FILE *clear;

#if RV_MEMORY_SANITIZED
	/* The sanitizer's quarantine keeps freed chunks resident. */
	free(big);
	skip();
#endif
	assert_non_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = (uint8_t)(i * 2654435761u >> 24);
	assert_int_equal(f->b->ops->put(f->b, big, n, hex), 0);
	/* "5": the peak RSS restarts from the current RSS (Linux 4.0+). */
	assert_non_null(clear = fopen("/proc/self/clear_refs", "w"));
	fputs("5", clear);
	assert_int_equal(fclose(clear), 0);
	before = self_kib("VmRSS:");
	assert_int_equal(f->b->ops->get(f->b, hex, n, &got, &len), 0);
	peak = self_kib("VmHWM:");
	print_message("%s: get of 48 MiB, peak RSS %ld KiB over %ld KiB before\n", f->be->name,
		      peak - before, before);
	assert_int_equal(len, n);
	assert_memory_equal(got, big, n);
	free(got);
	free(big);
	assert_true(before > 0 && peak - before < (48 + 16) * 1024);
}

/* ---- S3 only -------------------------------------------------------------- */

static void test_blob_s3_secret_readable_by_others_is_eperm(void **state)
{
	char dir[] = "/tmp/rvs-sec-XXXXXX", path[64];
	struct rvs_blob_s3_config c = {.endpoint = "http://127.0.0.1:1", .access_key = "k"};
	struct rvs_blobs *b;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/secret", dir);
	assert_int_equal(rvs_write_file_atomic(path, "s\n", 2, 0644), 0);
	c.secret_file = path;
	assert_int_equal(rvs_blobs_open("s3://rv/p", &c, NULL, &b), -EPERM);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(rvs_blobs_open("s3://rv/p", &c, NULL, &b), 0);
	rvs_blobs_close(b);
	assert_int_equal(rvs_blobs_open("s3://", &c, NULL, &b), -EINVAL);
	assert_int_equal(rvs_blobs_open("s3://rv/p", NULL, NULL, &b), -EINVAL);
	unlink(path);
	rmdir(dir);
}

static void test_blob_s3_unreachable_is_transient(void **state)
{
	char dir[] = "/tmp/rvs-sec-XXXXXX", path[64], endpoint[64];
	struct rvs_blob_s3_config c = {.access_key = "k", .timeout_ms = 2000};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof a;
	struct rvs_blobs *b;
	char hex[65];

	/* A port nobody listens on: bound, never listened to. */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &alen), 0);
	snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d", ntohs(a.sin_port));
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/secret", dir);
	assert_int_equal(rvs_write_file_atomic(path, "s\n", 2, 0600), 0);
	c.endpoint = endpoint;
	c.secret_file = path;
	assert_int_equal(rvs_blobs_open("s3://rv/p", &c, NULL, &b), 0);
	/* Transient (store.h): the decoder keeps what it needs queued. */
	assert_int_equal(b->ops->put(b, "x", 1, hex), -EAGAIN);
	rvs_blobs_close(b);
	close(s);
	unlink(path);
	rmdir(dir);
}

/* An access key the server does not know: 403, -EACCES.  (s3rver 3.7.1
 * does not check SigV4 signatures — "unimplemented" in its
 * authentication.js — so a wrong secret key cannot be tested here.) */
static void test_blob_s3_unknown_access_key_is_eacces(void **state)
{
	char hex[65];
	struct rvs_blob_s3_config c = s3_config();
	struct rvs_blobs *b;

	if (s3rver.up != 1)
		skip();
	c.access_key = "NOBODY";
	assert_int_equal(rvs_blobs_open("s3://rv/wrong", &c, NULL, &b), 0);
	assert_int_equal(b->ops->put(b, "x", 1, hex), -EACCES);
	rvs_blobs_close(b);
}

/* End to end: the real server with [store] blobs = s3://rv/e2e, driven by
 * the upload load generator (bench_upload: enrolment, TLS, real zstd
 * captures): every capture is stored in S3, read back, decoded and indexed. */
static void test_blob_s3_server_decodes_uploads_from_s3(void **state)
{
	char conf[1024], cmd[1024], line[512], objects[512];
	int indexed = -1, quarantined = -1, n = 0;
	FILE *p;

	if (s3rver.up != 1 || access(RVS_BENCH_UPLOAD, X_OK) != 0)
		skip();
	snprintf(conf, sizeof conf,
		 "[store]\nblobs = s3://rv/e2e\ns3_endpoint = %s\ns3_access_key = S3RVER\n"
		 "s3_secret_file = %s\n[server]\n",
		 s3rver.endpoint, s3rver.secret);
	assert_int_equal(setenv("RVS_BENCH_CONF", conf, 1), 0);
	snprintf(cmd, sizeof cmd, "timeout 600 %s 2 4 6 1024", RVS_BENCH_UPLOAD);
	assert_non_null(p = popen(cmd, "r"));
	while (fgets(line, sizeof line, p))
		if (strncmp(line, "captures decoded+indexed", 24) == 0)
			sscanf(line + 24, "%d indexed %d quarantined", &indexed, &quarantined);
	assert_int_equal(pclose(p), 0);
	unsetenv("RVS_BENCH_CONF");
	assert_int_equal(indexed, 6);
	assert_int_equal(quarantined, 0);
	/* The six distinct captures are objects in the bucket. */
	snprintf(cmd, sizeof cmd, "find '%s/data/rv/e2e' -name '*._S3rver_object' | wc -l",
		 s3rver.dir);
	assert_non_null(p = popen(cmd, "r"));
	if (fgets(objects, sizeof objects, p))
		n = (int)strtol(objects, NULL, 10);
	pclose(p);
	assert_int_equal(n, 6);
}

#define CASES(be)                                                                                  \
	cmocka_unit_test_prestate_setup_teardown(test_blob_put_get_roundtrips, setup, teardown,    \
						 (void *)&be),                                     \
		cmocka_unit_test_prestate_setup_teardown(test_blob_put_twice_dedups, setup,        \
							 teardown, (void *)&be),                   \
		cmocka_unit_test_prestate_setup_teardown(test_blob_list_counts_each_blob_once,     \
							 setup, teardown, (void *)&be),            \
		cmocka_unit_test_prestate_setup_teardown(test_blob_delete_removes, setup,          \
							 teardown, (void *)&be),                   \
		cmocka_unit_test_prestate_setup_teardown(test_blob_missing_is_enoent, setup,       \
							 teardown, (void *)&be),                   \
		cmocka_unit_test_prestate_setup_teardown(test_blob_oversize_is_efbig, setup,       \
							 teardown, (void *)&be),                   \
		cmocka_unit_test_prestate_setup_teardown(test_blob_corrupt_is_ebadmsg, setup,      \
							 teardown, (void *)&be),                   \
		cmocka_unit_test_prestate_setup_teardown(test_blob_file_gives_the_content, setup,  \
							 teardown, (void *)&be),                   \
		cmocka_unit_test_prestate_setup_teardown(test_blob_sweep_removes_only_old_orphans, \
							 setup, teardown, (void *)&be)

int main(void)
{
	const struct CMUnitTest local[] = {
		CASES(local_be),
		cmocka_unit_test_prestate_setup_teardown(test_blob_get_of_48mib_holds_it_once,
							 setup, teardown, (void *)&local_be),
	};
	const struct CMUnitTest s3[] = {
		CASES(s3_be),
		cmocka_unit_test(test_blob_s3_secret_readable_by_others_is_eperm),
		cmocka_unit_test(test_blob_s3_unreachable_is_transient),
		cmocka_unit_test(test_blob_s3_unknown_access_key_is_eacces),
		cmocka_unit_test(test_blob_s3_server_decodes_uploads_from_s3),
	};
	const struct CMUnitTest pgsql[] = {
		CASES(pg_be),
		cmocka_unit_test_prestate_setup_teardown(test_blob_get_of_48mib_holds_it_once,
							 setup, teardown, (void *)&pg_be),
	};
	int rc = cmocka_run_group_tests_name("blob_local", local, NULL, NULL);
	rc |= cmocka_run_group_tests_name("blob_s3", s3, s3_group_setup, s3_group_teardown);
	return rc |
	       cmocka_run_group_tests_name("blob_pg", pgsql, pg_group_setup, pg_group_teardown);
}
