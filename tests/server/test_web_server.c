/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_web_server.c — see test_web_server.h.  Waits are bounded polls.
 * The database follows the suite's store switch (store_env.h): on
 * PostgreSQL a fresh database is appended to the configuration (unless the
 * caller's lines name one) and `passwd` makes the admin there, since
 * `init` put it in the sqlite file.
 */
#include "test_web_server.h"

#include "store_env.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int web_slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;
	if (!f)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (int)n;
}

/* The first line of data/name into out. */
static int first_line(const struct web_server *s, const char *name, char *out, size_t cap)
{
	char path[256];
	snprintf(path, sizeof path, "%s/%s", s->data, name);
	if (web_slurp(path, out, cap) <= 0)
		return -1;
	out[strcspn(out, "\r\n")] = '\0';
	return 0;
}

/* Runs the server binary with args (NULL-terminated, at most 4) and keeps
 * the admin password it prints after key: `init` ("admin password:") or
 * `passwd` ("new password"). */
static int run_for_password(struct web_server *s, const char *key, const char *a1, const char *a2,
			    const char *a3, const char *a4)
{
	char out[8192], path[256], *p;
	pid_t pid;
	int st;

	snprintf(path, sizeof path, "%s/init.out", s->dir);
	pid = fork();
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(RVS_BIN, RVS_BIN, a1, a2, a3, a4, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	if (web_slurp(path, out, sizeof out) <= 0 || !(p = strstr(out, key)))
		return -1;
	p += strlen(key);
	p += strspn(p, " ");
	snprintf(s->password, sizeof s->password, "%.*s", (int)strcspn(p, " \n"), p);
	return s->password[0] ? 0 : -1;
}

int web_server_start(struct web_server *s, const char *conf_lines,
		     int (*before_start)(const char *data))
{
	char conf[256], path[256], buf[64];
	FILE *f;

	memset(s, 0, sizeof *s);
	snprintf(s->dir, sizeof s->dir, "/tmp/rvs-web-XXXXXX");
	if (!mkdtemp(s->dir))
		return -1;
	snprintf(s->data, sizeof s->data, "%s/data", s->dir);
	snprintf(s->ca, sizeof s->ca, "%s/ca.crt", s->data);
	if (run_for_password(s, "admin password:", "init", s->data, NULL, NULL) ||
	    first_line(s, "enrollment.secret", s->secret, sizeof s->secret) ||
	    first_line(s, "api.token", s->api, sizeof s->api))
		return -1;
	snprintf(conf, sizeof conf, "%s/rearview-server.conf", s->data);
	if (!(f = fopen(conf, "a")))
		return -1;
	fprintf(f, "listen = 127.0.0.1:0\n");
	/* The caller's lines may open another section: the database first. */
	snprintf(s->db, sizeof s->db, "%s/rearview.db", s->data);
	if (rvt_store_is_pg() && !(conf_lines && strstr(conf_lines, "database ="))) {
		if (rvt_store_dsn(NULL, s->db, sizeof s->db)) {
			fprintf(stderr, "web_server_start: %s\n", rvt_store_why());
			fclose(f);
			return -1;
		}
		fprintf(f, "database = %s\n", s->db);
	}
	fprintf(f, "%s", conf_lines ? conf_lines : "");
	if (fclose(f) != 0)
		return -1;
	if (rvt_store_is_pg() &&
	    run_for_password(s, "new password", "passwd", "--config", conf, "admin"))
		return -1;
	if (before_start && before_start(s->data))
		return -1;
	snprintf(path, sizeof path, "%s/server.log", s->dir);
	s->pid = fork();
	if (s->pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		execl(RVS_BIN, RVS_BIN, "--config", conf, (char *)NULL);
		_exit(127);
	}
	if (s->pid < 0)
		return -1;
	snprintf(path, sizeof path, "%s/server.port", s->data);
	for (int i = 0; i < 1200 && s->port <= 0; i++) {
		if (web_slurp(path, buf, sizeof buf) > 0)
			s->port = (int)strtol(buf, NULL, 10);
		else if (waitpid(s->pid, NULL, WNOHANG) == s->pid)
			return -1;
		else
			usleep(50000);
	}
	signal(SIGPIPE, SIG_IGN);
	return s->port > 0 ? 0 : -1;
}

int web_server_stop(struct web_server *s)
{
	static char log[1 << 16];
	char path[256];
	int bad = 0;

	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		for (int i = 0; i < 200 && waitpid(s->pid, NULL, WNOHANG) != s->pid; i++)
			usleep(50000);
		if (kill(s->pid, 0) == 0) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
		}
		s->pid = 0;
	}
	snprintf(path, sizeof path, "%s/server.log", s->dir);
	if (web_slurp(path, log, sizeof log) > 0 &&
	    (strstr(log, "Sanitizer") || strstr(log, "runtime error"))) {
		fprintf(stderr, "server log has a sanitizer report:\n%s\n", log);
		bad = 1;
	}
	snprintf(path, sizeof path, "rm -rf '%s'", s->dir);
	return system(path) == 0 && !bad ? 0 : -1;
}
