/* SPDX-License-Identifier: Apache-2.0 */
/*
 * upload_harness.h — a real rearview-server for rearviewd's uploader tests
 * and benchmark: `rearview-server init` into a directory, started on a
 * port it picks (listen = 127.0.0.1:0, port_file) or a given one, queried
 * through its JSON API (api.token) and /metrics; plus the daemon-side
 * views (the spool index read-only, capture states over admin.sock).
 * Builds on daemon_harness.h.
 */
#ifndef RV_UPLOAD_HARNESS_H
#define RV_UPLOAD_HARNESS_H

#include <curl/curl.h>
#include <sqlite3.h>

#include "daemon_harness.h"

struct server {
	const char *bin; /* the server binary; NULL: RV_BIN_DIR's rearview-server */
	char dir[128];	 /* the data directory */
	char conf[160];
	char token[64]; /* api.token */
	int port;
	pid_t pid;
};

struct row {
	long long id;
	int state;
	char trace_id[40];
};

/* ---- the server ------------------------------------------------------------ */

static inline int run_quiet(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline void read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (!f)
		return;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
}

/* Starts the server (listen = 127.0.0.1:port; 0 = any) and waits for its port file. */
static inline int server_start(struct server *s, int port)
{
	char path[200], buf[32], *end;
	double until = rvh_now() + RVH_GUARD_S;
	FILE *f = fopen(s->conf, "a");

	if (!f)
		return -1;
	/* Later keys win in the server's INI reader: the last listen line applies. */
	fprintf(f, "listen = 127.0.0.1:%d\n", port);
	fclose(f);
	snprintf(path, sizeof(path), "%s/server.port", s->dir);
	unlink(path);
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		char log[200];
		int fd;

		snprintf(log, sizeof(log), "%s/../server.log", s->dir);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execl(s->bin ? s->bin : RV_BIN_DIR "/rearview-server", "rearview-server",
		      "--config", s->conf, (char *)NULL);
		_exit(127);
	}
	while (rvh_now() < until) {
		read_file(path, buf, sizeof(buf));
		if (buf[0]) {
			long p = strtol(buf, &end, 10);

			if (*end == '\0' && p > 0 && p < 65536) {
				s->port = (int)p;
				return 0;
			}
		}
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = 0;
			return -1;
		}
		rvh_sleep_ms(10);
	}
	return -1;
}

static inline void server_stop(struct server *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

/* init into <parent>/<name>, rate limits out of the way, then start. */
static inline int server_setup(struct server *s, const char *parent, const char *name)
{
	char cmd[512], path[200];
	FILE *f;

	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "%s/%s", parent, name);
	snprintf(cmd, sizeof(cmd), "'%s/rearview-server' init '%s' >'%s/%s.init' 2>&1", RV_BIN_DIR,
		 s->dir, parent, name);
	if (run_quiet(cmd) != 0)
		return -1;
	snprintf(s->conf, sizeof(s->conf), "%s/rearview-server.conf", s->dir);
	f = fopen(s->conf, "a");
	if (!f)
		return -1;
	fputs("upload_rate_per_min = 1000000\nupload_burst = 1000000\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/api.token", s->dir);
	read_file(path, s->token, sizeof(s->token));
	return s->token[0] ? 0 : -1;
}

struct body {
	char buf[16384];
	size_t n;
};

static inline size_t body_cb(char *p, size_t sz, size_t n, void *u)
{
	struct body *b = u;
	size_t len = sz * n, room = sizeof(b->buf) - 1 - b->n;

	memcpy(b->buf + b->n, p, len < room ? len : room);
	b->n += len < room ? len : room;
	b->buf[b->n] = '\0';
	return len;
}

/* GET path from the server; returns the HTTP status (0 on transport error). */
static inline long server_get(const struct server *s, const char *path, bool auth, struct body *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char url[256], hdr[128], ca[200];
	long code = 0;

	memset(out, 0, sizeof(*out));
	snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", s->port, path);
	snprintf(ca, sizeof(ca), "%s/ca.crt", s->dir);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (auth) {
		snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", s->token);
		h = curl_slist_append(h, hdr);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	}
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return code;
}

/* One counter from /metrics, or -1. */
static inline long metric(const struct server *s, const char *name)
{
	struct body b;
	char key[96];
	const char *p;

	if (server_get(s, "/metrics", false, &b) != 200)
		return -1;
	snprintf(key, sizeof(key), "\n%s ", name);
	p = strstr(b.buf, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

/* ---- the daemon's side -------------------------------------------------------- */

static inline size_t spool_rows(const struct rvh *h, struct row *rows, size_t cap)
{
	char path[200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/spool.db", h->state);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto close_db;
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_prepare_v2(db, "SELECT id,state,trace_id FROM captures ORDER BY id", -1, &st,
			       NULL) != SQLITE_OK)
		goto close_db;
	while (n < cap && sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 2);

		rows[n].id = sqlite3_column_int64(st, 0);
		rows[n].state = sqlite3_column_int(st, 1);
		snprintf(rows[n].trace_id, sizeof(rows[n].trace_id), "%s",
			 t ? (const char *)t : "");
		n++;
	}
close_db:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

static inline void capture_now(struct rvh *h, pid_t pid)
{
	Rearview__AdminRequest q = REARVIEW__ADMIN_REQUEST__INIT;
	Rearview__AdminResponse *r = NULL;

	q.req_case = REARVIEW__ADMIN_REQUEST__REQ_CAPTURE_PID;
	q.capture_pid = pid;
	/* The daemon may be killed under us: failures are expected there. */
	if (rvh_admin(h, &q, &r) == 0)
		rearview__admin_response__free_unpacked(r, NULL);
}

/* Counts captures in `state` ("uploaded", …) as admin.sock lists them. */
static inline size_t count_state(struct rvh *h, const char *state)
{
	Rearview__AdminResponse *r = rvh_captures(h);
	size_t n = 0;

	if (!r)
		return 0;
	if (r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_CAPTURES)
		for (size_t i = 0; i < r->captures->n_captures; i++)
			n += !strcmp(r->captures->captures[i]->state, state);
	rearview__admin_response__free_unpacked(r, NULL);
	return n;
}

/* Waits until at least n captures are in `state`, polling every poll_ms. */
static inline bool wait_state_poll(struct rvh *h, const char *state, size_t n, unsigned poll_ms)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (count_state(h, state) < n) {
		if (rvh_now() > until)
			return false;
		rvh_sleep_ms(poll_ms);
	}
	return true;
}

static inline bool wait_uploaded(struct rvh *h, size_t n)
{
	return wait_state_poll(h, "uploaded", n, 20);
}

/* Whether any of the daemon's last errors contains `needle`. */
static inline bool status_error(struct rvh *h, const char *needle)
{
	Rearview__AdminResponse *r = rvh_status(h);
	bool found = false;

	if (r && r->resp_case == REARVIEW__ADMIN_RESPONSE__RESP_STATUS)
		for (size_t i = 0; i < r->status->n_last_errors && !found; i++)
			found = strstr(r->status->last_errors[i], needle) != NULL;
	if (r)
		rearview__admin_response__free_unpacked(r, NULL);
	return found;
}

/* Waits until a last error contains `needle`. */
static inline bool wait_status_error(struct rvh *h, const char *needle)
{
	double until = rvh_now() + RVH_GUARD_S;

	while (!status_error(h, needle)) {
		if (rvh_now() > until)
			return false;
		rvh_sleep_ms(20);
	}
	return true;
}

static inline void upload_conf(char *buf, size_t cap, const struct server *s, const char *ca_file)
{
	snprintf(buf, cap,
		 "[capture]\nconsent_default = full\n"
		 "[policy]\npublic_key = %s/policy-signing.pub\n"
		 "[upload]\nserver_url = https://127.0.0.1:%d\nca_file = %s\n"
		 "enrollment_secret_file = %s/enrollment.secret\n"
		 "backoff_initial_ms = 50\nbackoff_max_ms = 400\n",
		 s->dir, s->port, ca_file, s->dir);
}

#endif
