/* SPDX-License-Identifier: Apache-2.0 */
/*
 * server_common.c — the rearview-server benchmarks' shared harness
 * (server_common.h).  RVS_BIN is the server binary of this build flavour.
 * The database follows the server test suite's store switch
 * (tests/server/store_env.h): b->db is the sqlite file or, with
 * RVS_TEST_STORE=pg, a fresh PostgreSQL database's URI, written into the
 * configuration by rvsb_start.
 */
#include "server_common.h"

#include "store_env.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;
	if (!f)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	return (int)n;
}

/* $RVS_BENCH_BIN (another build, for side-by-side runs) or this build's. */
static const char *server_bin(void)
{
	const char *b = getenv("RVS_BENCH_BIN");
	return b && *b ? b : RVS_BIN;
}

double rvsb_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double rvsb_pct(double *v, size_t n, double p)
{
	size_t i;
	if (!n)
		return 0;
	qsort(v, n, sizeof *v, cmp);
	i = (size_t)((double)n * p / 100.0);
	return v[i < n ? i : n - 1];
}

size_t rvsb_append_text(char *p, size_t sz, size_t n, void *u)
{
	char *buf = u;
	size_t have = strlen(buf), add = sz * n;
	if (have + add < RVSB_TEXT_MAX) {
		memcpy(buf + have, p, add);
		buf[have + add] = '\0';
	}
	return sz * n;
}

static size_t sink(char *p, size_t sz, size_t n, void *u)
{
	return sz * n;
}

void rvsb_curl(const struct rvsb *b, CURL *h, const char *path)
{
	char url[1200];
	snprintf(url, sizeof url, "https://127.0.0.1:%d%s", b->port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CAINFO, b->ca);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
}

/* Runs the server binary with args a1..a4 (NULL-terminated early as
 * needed), its output in the directory's cmd.out; the word after key in it
 * (the admin password `init` or `passwd` prints) becomes b->admin_password
 * when found.  0, or -1 when the command failed. */
static int run_for_password(struct rvsb *b, const char *key, const char *a1, const char *a2,
			    const char *a3, const char *a4)
{
	char path[256], out[4096], *p;
	pid_t pid;
	int st;

	snprintf(path, sizeof path, "%s/cmd.out", b->dir);
	pid = fork();
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(server_bin(), server_bin(), a1, a2, a3, a4, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	if (slurp(path, out, sizeof out) > 0 && (p = strstr(out, key))) {
		p += strlen(key);
		p += strspn(p, " ");
		snprintf(b->admin_password, sizeof b->admin_password, "%.*s",
			 (int)strcspn(p, " \r\n"), p);
	}
	return 0;
}

int rvsb_init(struct rvsb *b)
{
	char path[256];

	memset(b, 0, sizeof *b);
	snprintf(b->dir, sizeof b->dir, "/tmp/rvs-bench-XXXXXX");
	if (!mkdtemp(b->dir))
		return -1;
	snprintf(b->data, sizeof b->data, "%s/d", b->dir);
	if (run_for_password(b, "admin password:", "init", b->data, NULL, NULL))
		return -1;
	snprintf(b->ca, sizeof b->ca, "%s/ca.crt", b->data);
	snprintf(path, sizeof path, "%s/rearview.db", b->data);
	if (rvt_store_dsn(path, b->db, sizeof b->db)) {
		fprintf(stderr, "rvsb_init: %s\n", rvt_store_why());
		return -1;
	}
	snprintf(path, sizeof path, "%s/enrollment.secret", b->data);
	if (slurp(path, b->secret, sizeof b->secret) <= 0)
		return -1;
	snprintf(path, sizeof path, "%s/api.token", b->data);
	return slurp(path, b->api_token, sizeof b->api_token) > 0 ? 0 : -1;
}

int rvsb_start(struct rvsb *b, const char *extra_conf)
{
	char path[256], buf[32];
	FILE *f;

	snprintf(path, sizeof path, "%s/rearview-server.conf", b->data);
	if (!(f = fopen(path, "a")))
		return -1;
	/* Every simulated device connects and enrols from 127.0.0.1. */
	fputs("listen = 127.0.0.1:0\nupload_rate_per_min = 1000000\nupload_burst = 1000000\n"
	      "max_connections = 1024\nmax_conns_per_addr = 1024\n"
	      "enroll_burst = 1000000\nenroll_secret_burst = 1000000\n",
	      f);
	if (rvt_store_is_pg())
		fprintf(f, "database = %s\n", b->db);
	if (extra_conf)
		fputs(extra_conf, f);
	/* RVS_BENCH_CONF: more INI lines ("\n"-separated), e.g. decode_jobs = 1. */
	if (getenv("RVS_BENCH_CONF"))
		fprintf(f, "%s\n", getenv("RVS_BENCH_CONF"));
	fclose(f);
	/* On PostgreSQL init's admin is in the data directory's sqlite file,
	 * not in the database the server uses: give that one its password. */
	if (rvt_store_is_pg() &&
	    run_for_password(b, "new password", "passwd", "--config", path, "admin"))
		return -1;
	b->pid = fork();
	if (b->pid == 0) {
		const char *log = getenv("RVS_BENCH_LOG");
		int fd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1;
		if (fd < 0)
			fd = open("/dev/null", O_WRONLY);
		dup2(fd, 2);
		execl(server_bin(), server_bin(), "--config", path, (char *)NULL);
		_exit(127);
	}
	if (b->pid < 0)
		return -1;
	snprintf(path, sizeof path, "%s/server.port", b->data);
	for (int i = 0; i < 1200 && b->port <= 0; i++) {
		if (slurp(path, buf, sizeof buf) > 0)
			b->port = (int)strtol(buf, NULL, 10);
		else
			usleep(50000);
	}
	return b->port > 0 ? 0 : -1;
}

int rvsb_stop(struct rvsb *b)
{
	char cmd[128];
	int st = 0, ok = 1;
	if (b->pid > 0) {
		kill(b->pid, SIGTERM);
		waitpid(b->pid, &st, 0);
		ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", b->dir);
	return system(cmd) == 0 && ok ? 0 : -1;
}
