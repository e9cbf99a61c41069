/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_blob.c — the blob interface (blob.h): the same cases run against
 * every backend — a local directory in a temporary directory, and the S3
 * backend against a real S3 server (npm s3rver, pinned in
 * tests/server/s3rver/package.json) the test starts on a port it lets the
 * kernel pick (port 0, read back from its banner) in a temporary directory
 * and kills at the end, and the PostgreSQL backend against a real
 * PostgreSQL 15 (initdb + pg_ctl in a temporary directory, Unix socket).
 * Without node and s3rver, or postgresql-15, those cases skip visibly.
 * Then what only S3 has: its secret file's permissions, an unknown access
 * key refused by the server, an endpoint that does not answer (retried, then
 * -EIO), and the real server storing and decoding uploads from S3.
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

#include "blob.h"
#include "rvs.h"
#include "s3_harness.h"

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

#define PG_BIN "/usr/lib/postgresql/15/bin"

static struct {
	char dir[64], as[64];
	int up; /* 1 running, -1 unavailable */
} pg;

/* Runs a shell command; 0 when it exited 0. */
__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd) == 0 ? 0 : -1;
}

/* initdb and pg_ctl in a temporary directory, on a Unix socket there (as
 * the postgres user when we are root: initdb refuses root). */
static int pg_group_setup(void **state)
{
	struct passwd *pw = getpwnam("postgres");

	pg.up = -1;
	if (access(PG_BIN "/initdb", X_OK) != 0)
		return 0;
	snprintf(pg.dir, sizeof pg.dir, "/tmp/rvs-pg-XXXXXX");
	if (!mkdtemp(pg.dir))
		return -1;
	if (geteuid() == 0) {
		if (!pw || chown(pg.dir, pw->pw_uid, pw->pw_gid) < 0)
			return 0;
		snprintf(pg.as, sizeof pg.as, "runuser -u postgres -- ");
	}
	if (sh("%s" PG_BIN "/initdb -D %s/db -A trust -U postgres >%s/initdb.log 2>&1", pg.as,
	       pg.dir, pg.dir) ||
	    sh("%s" PG_BIN "/pg_ctl -D %s/db -o \"-p 5432 -k %s -c listen_addresses=''\" -w -t 120"
	       " -l %s/db/server.log start >/dev/null 2>&1",
	       pg.as, pg.dir, pg.dir, pg.dir)) {
		print_message("postgresql did not start (see %s)\n", pg.dir);
		return 0;
	}
	pg.up = 1;
	return 0;
}

static int pg_group_teardown(void **state)
{
	if (pg.up == 1)
		sh("%s" PG_BIN "/pg_ctl -D %s/db -m immediate -w stop >/dev/null 2>&1", pg.as,
		   pg.dir);
	return pg.dir[0] ? sh("rm -rf '%s'", pg.dir) : 0;
}

static void pg_uri(const struct fx *f, const char *db, char *out, size_t len)
{
	snprintf(out, len, "postgresql:///%s?host=%s&port=5432&user=postgres", db, pg.dir);
}

/* A database per test: the cases never see each other's blobs. */
static int pg_open(struct fx *f)
{
	char uri[256], sql[128], db[32];
	PGconn *c;
	PGresult *r;
	int ok;

	snprintf(db, sizeof db, "b%s", strrchr(f->dir, '-') + 1);
	for (char *p = db; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	pg_uri(f, "postgres", uri, sizeof uri);
	c = PQconnectdb(uri);
	snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
	r = PQexec(c, sql);
	ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	PQclear(r);
	PQfinish(c);
	if (!ok)
		return -1;
	pg_uri(f, db, uri, sizeof uri);
	return rvs_blobs_open(uri, NULL, f->dir, &f->b);
}

static void pg_corrupt(struct fx *f, const char *hex)
{
	char uri[256], db[32];
	const char *vals[1] = {hex};
	PGconn *c;
	PGresult *r;

	snprintf(db, sizeof db, "b%s", strrchr(f->dir, '-') + 1);
	for (char *p = db; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	pg_uri(f, db, uri, sizeof uri);
	c = PQconnectdb(uri);
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
	if ((f->be == &s3_be && s3rver.up != 1) || (f->be == &pg_be && pg.up != 1))
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

static void test_blob_s3_unreachable_is_eio(void **state)
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
	assert_int_equal(b->ops->put(b, "x", 1, hex), -EIO);
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
	const struct CMUnitTest local[] = {CASES(local_be)};
	const struct CMUnitTest s3[] = {
		CASES(s3_be),
		cmocka_unit_test(test_blob_s3_secret_readable_by_others_is_eperm),
		cmocka_unit_test(test_blob_s3_unreachable_is_eio),
		cmocka_unit_test(test_blob_s3_unknown_access_key_is_eacces),
		cmocka_unit_test(test_blob_s3_server_decodes_uploads_from_s3),
	};
	const struct CMUnitTest pgsql[] = {CASES(pg_be)};
	int rc = cmocka_run_group_tests_name("blob_local", local, NULL, NULL);
	rc |= cmocka_run_group_tests_name("blob_s3", s3, s3_group_setup, s3_group_teardown);
	return rc |
	       cmocka_run_group_tests_name("blob_pg", pgsql, pg_group_setup, pg_group_teardown);
}
