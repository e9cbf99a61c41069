/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_service.c — rearview-server as systemd runs it: the real binary,
 * started from a data directory `init` made, with its stderr in a file.
 * Each line carries its sd-daemon priority ("<3>" for an error) when
 * JOURNAL_STREAM names that file's device and inode, as journald's stream
 * does, and is plain logfmt otherwise.  With NOTIFY_SOCKET naming a real
 * AF_UNIX datagram socket it says READY=1 once it accepts connections and
 * STOPPING=1 when told to stop (sd_notify).  Waits are for the event, each
 * with a generous deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

struct svc {
	char dir[64];	/* mkdtemp() */
	char conf[192]; /* dir/data/rearview-server.conf */
	char log[128];	/* dir/server.log: the server's stderr */
	pid_t pid;
};

/* Runs `rearview-server init data` with stdout and stderr in
 * dir/init.out; returns its exit status or -1. */
static int run_init(const struct svc *s, const char *data)
{
	char out[128];
	pid_t pid;
	int st;

	snprintf(out, sizeof out, "%s/init.out", s->dir);
	pid = fork();
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(RVS_BIN, RVS_BIN, "init", data, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Appends lines to the server's configuration. */
static void svc_conf_add(const struct svc *s, const char *lines)
{
	FILE *f = fopen(s->conf, "a");

	assert_non_null(f);
	fputs(lines, f);
	assert_int_equal(fclose(f), 0);
}

/* A data directory from `rearview-server init`, its configuration
 * listening on a free port. */
static void svc_init(struct svc *s)
{
	char data[128];

	memset(s, 0, sizeof *s);
	snprintf(s->dir, sizeof s->dir, "/tmp/rvs-svc-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(data, sizeof data, "%s/data", s->dir);
	snprintf(s->conf, sizeof s->conf, "%s/rearview-server.conf", data);
	snprintf(s->log, sizeof s->log, "%s/server.log", s->dir);
	assert_int_equal(run_init(s, data), 0);
	svc_conf_add(s, "listen = 127.0.0.1:0\n");
}

/* Starts the server with stderr in s->log; JOURNAL_STREAM is that file's
 * "dev:ino" when journal is set, unset otherwise; NOTIFY_SOCKET is notify
 * or unset. */
static void svc_spawn(struct svc *s, int journal, const char *notify)
{
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0) {
		int fd = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		struct stat st;
		char js[64];

		if (fd < 0 || dup2(fd, 2) != 2 || fstat(2, &st) < 0)
			_exit(127);
		snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
		if (journal)
			setenv("JOURNAL_STREAM", js, 1);
		else
			unsetenv("JOURNAL_STREAM");
		if (notify)
			setenv("NOTIFY_SOCKET", notify, 1);
		else
			unsetenv("NOTIFY_SOCKET");
		execl(RVS_BIN, RVS_BIN, "--config", s->conf, (char *)NULL);
		_exit(127);
	}
}

/* Waits for the server to exit (it exits by itself); its exit status. */
static int svc_wait(struct svc *s)
{
	int st;

	assert_int_equal(waitpid(s->pid, &st, 0), s->pid);
	s->pid = 0;
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static char *slurp(const char *path)
{
	char *buf = calloc(1, 1 << 16);
	FILE *f = fopen(path, "r");

	assert_non_null(buf);
	assert_non_null(f);
	assert_true(fread(buf, 1, (1 << 16) - 1, f) < (1 << 16) - 1 && !ferror(f));
	fclose(f);
	return buf;
}

static void svc_clean(struct svc *s)
{
	char cmd[128];

	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
	assert_int_equal(system(cmd), 0);
}

/* The line of log holding needle, copied into out. */
static void line_with(const char *log, const char *needle, char *out, size_t cap)
{
	const char *p = strstr(log, needle), *b, *e;

	if (!p)
		fail_msg("no line with %s in:\n%s", needle, log);
	for (b = p; b > log && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	snprintf(out, cap, "%.*s", (int)(e ? e - b : (ptrdiff_t)strlen(b)), b);
}

/* A store that cannot be opened (its directory does not exist) is an
 * error: "<3>" before it on the journal, with info lines at "<6>"; the
 * same run on a plain file has no prefix on any line. */
static void test_service_error_line_gets_journal_priority(void **state)
{
	char extra[256], line[1024], *log;
	struct svc s;

	(void)state;
	svc_init(&s);
	snprintf(extra, sizeof extra, "database = %s/no/such/dir/rearview.db\n", s.dir);
	svc_conf_add(&s, extra);

	svc_spawn(&s, 1, NULL);
	assert_int_equal(svc_wait(&s), 1);
	log = slurp(s.log);
	line_with(log, "msg=\"cannot open store\"", line, sizeof line);
	if (strncmp(line, "<3>ts=", 6) || !strstr(line, " level=error "))
		fail_msg("error line without <3>: %s", line);
	line_with(log, "level=info", line, sizeof line);
	if (strncmp(line, "<6>ts=", 6))
		fail_msg("info line without <6>: %s", line);
	for (const char *p = log; *p; p = strchr(p, '\n') + 1) {
		if (*p != '<')
			fail_msg("a line without its priority on the journal: %s", p);
		if (!strchr(p, '\n'))
			break;
	}
	free(log);

	svc_spawn(&s, 0, NULL);
	assert_int_equal(svc_wait(&s), 1);
	log = slurp(s.log);
	line_with(log, "msg=\"cannot open store\"", line, sizeof line);
	if (strncmp(line, "ts=", 3))
		fail_msg("a prefix off the journal: %s", line);
	assert_null(strchr(log, '<'));
	free(log);
	svc_clean(&s);
}

/* A datagram socket at path, as systemd's notify socket is. */
static int notify_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0 && strlen(path) < sizeof sa.sun_path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	return fd;
}

/* Reads notifications until one holds `want` (a whole line of it);
 * all read are appended to seen.  Fails when the server exits first or
 * none comes within two minutes. */
static void wait_notify(struct svc *s, int fd, const char *want, char *seen, size_t cap)
{
	time_t until = time(NULL) + 120;
	char buf[1024];

	while (time(NULL) < until) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 500) == 1 && (n = recv(fd, buf, sizeof buf - 1, 0)) > 0) {
			buf[n] = '\0';
			snprintf(seen + strlen(seen), cap - strlen(seen), "%s\n", buf);
			for (char *save, *l = strtok_r(buf, "\n", &save); l;
			     l = strtok_r(NULL, "\n", &save))
				if (!strcmp(l, want))
					return;
			continue;
		}
		if (s->pid > 0 && waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = 0;
			fail_msg("the server exited before %s (seen: %s)", want, seen);
		}
	}
	fail_msg("no %s within two minutes (seen: %s)", want, seen);
}

/* READY=1 comes once the listener accepts: the port file is written and a
 * TCP connection to it succeeds, with no wait of its own; SIGTERM brings
 * STOPPING=1 and a clean exit. */
static void test_service_ready_and_stopping_notified(void **state)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char path[160], seen[4096] = "", *port;
	struct svc s;
	int fd, c;

	(void)state;
	svc_init(&s);
	snprintf(path, sizeof path, "%s/notify", s.dir);
	fd = notify_socket(path);
	svc_spawn(&s, 0, path);
	wait_notify(&s, fd, "READY=1", seen, sizeof seen);
	if (!strstr(seen, "STATUS=listening on https://127.0.0.1:"))
		fail_msg("no STATUS with READY=1: %s", seen);
	snprintf(path, sizeof path, "%s/data/server.port", s.dir);
	port = slurp(path);
	in.sin_port = htons((uint16_t)strtoul(port, NULL, 10));
	free(port);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&in, sizeof in), 0);
	close(c);

	kill(s.pid, SIGTERM);
	wait_notify(&s, fd, "STOPPING=1", seen, sizeof seen);
	assert_int_equal(svc_wait(&s), 0);
	close(fd);
	svc_clean(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_service_error_line_gets_journal_priority),
		cmocka_unit_test(test_service_ready_and_stopping_notified),
	};

	alarm(300); /* a hung server fails the test instead of the run */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
