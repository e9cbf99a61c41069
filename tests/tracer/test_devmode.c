/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_devmode.c — developer mode on real processes: this binary re-executes
 * itself with RV_TRACE* set and checks what lands on disk and on stderr.
 * Every thread of a forking program gets its own %p.%t capture; a FIFO is
 * written through and stays a FIFO; a character device, a directory and a
 * symlink are never replaced; every bad setting, and a missing daemon
 * socket, is said on stderr once.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_util.h"
#include "fixture.h"
#include "rearview/trace.h"

#define WORKERS 2

static const char *self_path;

/* ---- the traced program ------------------------------------------------- */

static void *worker(void *arg)
{
	(void)arg;
	call_top(2);
	return NULL;
}

static int run_threads(void)
{
	pthread_t th[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		if (pthread_create(&th[i], NULL, worker, NULL) != 0)
			return 20;
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	call_top(2);
	return 0;
}

/* Main plus WORKERS threads, then a child doing the same (exit(), so its
 * at-exit capture runs). */
static int traced_program(const char *what)
{
	if (strcmp(what, "plain") == 0) {
		call_top(2);
		return 0;
	}
	int rc = run_threads();
	if (rc || strcmp(what, "fork") != 0)
		return rc;
	pid_t pid = fork();
	if (pid < 0)
		return 21;
	if (pid == 0)
		exit(run_threads());
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 22;
	return 0;
}

/* ---- the harness ---------------------------------------------------------- */

struct run {
	pid_t pid;
	int status;
	char err[4096]; /* the child's stderr */
};

/* Starts this binary as the traced program with `env` (NULL-terminated
 * name=value list) and its stderr in a file; as_nobody drops root first. */
static pid_t spawn(const char *const *env, const char *what, const char *err_path, int as_nobody)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	if (fd < 0 || dup2(fd, 2) < 0)
		_exit(126);
	unsetenv("RV_TRACE");
	unsetenv("RV_TRACE_FILE");
	unsetenv("RV_TRACE_FORK");
	unsetenv("RV_TRACE_BUFFER");
	unsetenv("RV_TRACE_MAX_BUFFERS");
	for (size_t i = 0; env[i]; i++)
		putenv((char *)env[i]);
	if (as_nobody && geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
		_exit(125);
	execl(self_path, self_path, "--traced", what, (char *)NULL);
	_exit(127);
}

static void finish(struct run *r, const char *err_path)
{
	assert_int_equal(waitpid(r->pid, &r->status, 0), r->pid);
	r->err[0] = '\0';
	FILE *f = fopen(err_path, "r");
	if (f) {
		size_t n = fread(r->err, 1, sizeof(r->err) - 1, f);
		r->err[n] = '\0';
		fclose(f);
	}
	unlink(err_path);
}

static void run(struct run *r, const char *const *env, const char *what, const char *dir)
{
	char err_path[256];
	snprintf(err_path, sizeof(err_path), "%s.stderr", dir);
	r->pid = spawn(env, what, err_path, 0);
	assert_true(r->pid > 0);
	finish(r, err_path);
}

static void rm_rf(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char p[512];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static void mk_dir(char *tmpl)
{
	assert_non_null(mkdtemp(tmpl));
}

/* ---- tests -------------------------------------------------------------- */

static void test_devmode_fork_all_threads_one_capture_per_thread(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-dev-fork-XXXXXX";
	mk_dir(dir);
	char file[300], fork_env[] = "RV_TRACE_FORK=1", all_env[] = "RV_TRACE=all",
			buf_env[] = "RV_TRACE_BUFFER=64k";
	snprintf(file, sizeof(file), "RV_TRACE_FILE=%s/%%p.%%t.rvt", dir);
	const char *env[] = {all_env, fork_env, buf_env, file, NULL};
	struct run r;
	run(&r, env, "fork", dir);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_null(strstr(r.err, "rearview:"));

	/* One file per thread: 1 + WORKERS in the parent, as many in the child. */
	unsigned parent = 0, child = 0, child_pid = 0;
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		unsigned pid, tid;
		char tail[16];
		if (e->d_name[0] == '.')
			continue;
		assert_int_equal(sscanf(e->d_name, "%u.%u.%15s", &pid, &tid, tail), 3);
		assert_string_equal(tail, "rvt");
		char p[512];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		struct cu_capture c;
		assert_int_equal(cu_parse_file(p, &c), 0);
		assert_int_equal(c.pid, pid);
		assert_int_equal(c.tid, tid);
		assert_int_equal(c.ring_slots, 64 * 1024 / 8);
		assert_true(cu_find_entry(&c, "call_leaf", 0) >= 0);
		cu_release(&c);
		if (pid == (unsigned)r.pid) {
			parent++;
		} else {
			assert_true(child_pid == 0 || child_pid == pid);
			child_pid = pid;
			child++;
		}
	}
	closedir(d);
	assert_int_equal(parent, 1 + WORKERS);
	assert_int_equal(child, 1 + WORKERS);
	rm_rf(dir);
}

static void test_devmode_no_fork_optin_child_writes_nothing(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-dev-nofork-XXXXXX";
	mk_dir(dir);
	char file[300], all_env[] = "RV_TRACE=all", buf_env[] = "RV_TRACE_BUFFER=64k";
	snprintf(file, sizeof(file), "RV_TRACE_FILE=%s/%%p.%%t.rvt", dir);
	const char *env[] = {all_env, buf_env, file, NULL};
	struct run r;
	run(&r, env, "fork", dir);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	unsigned n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		unsigned pid;
		if (e->d_name[0] == '.')
			continue;
		assert_int_equal(sscanf(e->d_name, "%u.", &pid), 1);
		assert_int_equal(pid, (unsigned)r.pid);
		n++;
	}
	closedir(d);
	assert_int_equal(n, 1 + WORKERS);
	rm_rf(dir);
}

static void test_devmode_fifo_written_through_stays_fifo(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-dev-fifo-XXXXXX";
	mk_dir(dir);
	char fifo[300];
	snprintf(fifo, sizeof(fifo), "%s/out", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	int rd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(rd >= 0);
	char file[320], on_env[] = "RV_TRACE=1", buf_env[] = "RV_TRACE_BUFFER=64k";
	snprintf(file, sizeof(file), "RV_TRACE_FILE=%s", fifo);
	const char *env[] = {on_env, buf_env, file, NULL};
	char err_path[320];
	snprintf(err_path, sizeof(err_path), "%s.stderr", dir);
	struct run r;
	r.pid = spawn(env, "plain", err_path, 0);
	assert_true(r.pid > 0);
	/* Read until the writer has exited and the FIFO is drained. */
	size_t cap = 1 << 20, len = 0;
	uint8_t *buf = malloc(cap);
	assert_non_null(buf);
	int exited = 0;
	time_t deadline = time(NULL) + 60;
	while (time(NULL) < deadline) {
		struct pollfd p = {rd, POLLIN, 0};
		poll(&p, 1, 100);
		ssize_t n = read(rd, buf + len, cap - len);
		if (n > 0) {
			len += (size_t)n;
			assert_true(len < cap);
			continue;
		}
		if (exited)
			break;
		int st;
		if (waitpid(r.pid, &st, WNOHANG) == r.pid) {
			exited = 1;
			r.status = st;
		}
	}
	close(rd);
	assert_true(exited);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	struct cu_capture c;
	assert_int_equal(cu_parse(buf, len, &c), 0);
	assert_int_equal(c.pid, (uint32_t)r.pid);
	assert_true(cu_find_entry(&c, "call_leaf", 0) >= 0);
	cu_release(&c);
	free(buf);
	struct stat st;
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	unlink(err_path);
	rm_rf(dir);
}

static void test_devmode_char_device_never_replaced(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-dev-chr-XXXXXX";
	mk_dir(dir);
	char dev[300];
	snprintf(dev, sizeof(dev), "%s/null", dir);
	/* A private node for the null device: the system's /dev/null is not
	 * put at risk. */
	if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) != 0) {
		rm_rf(dir);
		skip(); /* no CAP_MKNOD here */
	}
	char file[320], on_env[] = "RV_TRACE=1", buf_env[] = "RV_TRACE_BUFFER=64k";
	snprintf(file, sizeof(file), "RV_TRACE_FILE=%s", dev);
	const char *env[] = {on_env, buf_env, file, NULL};
	struct run r;
	run(&r, env, "plain", dir);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_null(strstr(r.err, "rearview:"));
	struct stat st;
	assert_int_equal(lstat(dev, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, makedev(1, 3));
	rm_rf(dir);
}

static void test_devmode_directory_refused_with_message(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-dev-dir-XXXXXX";
	mk_dir(dir);
	char sub[300];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	char file[320], on_env[] = "RV_TRACE=1", buf_env[] = "RV_TRACE_BUFFER=64k";
	snprintf(file, sizeof(file), "RV_TRACE_FILE=%s", sub);
	const char *env[] = {on_env, buf_env, file, NULL};
	struct run r;
	run(&r, env, "plain", dir);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_non_null(strstr(r.err, "rearview: capture of thread"));
	assert_non_null(strstr(r.err, "Is a directory"));
	struct stat st;
	assert_int_equal(lstat(sub, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	rmdir(sub);
	rm_rf(dir);
}

static void test_devmode_symlink_resolved_link_kept(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-dev-link-XXXXXX";
	mk_dir(dir);
	char target[300], link[300];
	snprintf(target, sizeof(target), "%s/target.rvt", dir);
	snprintf(link, sizeof(link), "%s/link.rvt", dir);
	int fd = open(target, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink("target.rvt", link), 0);
	char file[320], on_env[] = "RV_TRACE=1", buf_env[] = "RV_TRACE_BUFFER=64k";
	snprintf(file, sizeof(file), "RV_TRACE_FILE=%s", link);
	const char *env[] = {on_env, buf_env, file, NULL};
	struct run r;
	run(&r, env, "plain", dir);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	struct stat st;
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	struct cu_capture c;
	assert_int_equal(cu_parse_file(target, &c), 0);
	assert_true(cu_find_entry(&c, "call_leaf", 0) >= 0);
	cu_release(&c);
	rm_rf(dir);
}

static void test_devmode_readonly_dir_says_so(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-dev-ro-XXXXXX";
	mk_dir(dir);
	assert_int_equal(chmod(dir, 0555), 0);
	char file[320], on_env[] = "RV_TRACE=1", buf_env[] = "RV_TRACE_BUFFER=64k";
	snprintf(file, sizeof(file), "RV_TRACE_FILE=%s/out.rvt", dir);
	const char *env[] = {on_env, buf_env, file, NULL};
	/* Root writes anywhere: the traced program runs as nobody then. */
	char err_path[] = "/tmp/rvt-dev-ro-stderr-XXXXXX";
	int efd = mkstemp(err_path);
	assert_true(efd >= 0);
	close(efd);
	chmod(err_path, 0666);
	struct run r;
	r.pid = spawn(env, "plain", err_path, 1);
	assert_true(r.pid > 0);
	finish(&r, err_path);
	if (WEXITSTATUS(r.status) >= 125) {
		rm_rf(dir);
		skip(); /* this binary cannot be run as nobody here */
	}
	assert_int_equal(WEXITSTATUS(r.status), 0);
	char want[400];
	snprintf(want, sizeof(want),
		 "rearview: RV_TRACE_FILE=%s/out.rvt: cannot create files in %s", dir, dir);
	assert_non_null(strstr(r.err, want));
	assert_non_null(strstr(r.err, "rearview: capture of thread"));
	rm_rf(dir);
}

static void test_devmode_bad_settings_each_said(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-dev-bad-XXXXXX";
	mk_dir(dir);
	char file[320], on_env[] = "RV_TRACE=1", buf_env[] = "RV_TRACE_BUFFER=garbage",
			max_env[] = "RV_TRACE_MAX_BUFFERS=lots", fork_env[] = "RV_TRACE_FORK=maybe";
	snprintf(file, sizeof(file), "RV_TRACE_FILE=%s/out.%%q.rvt", dir);
	const char *env[] = {on_env, buf_env, max_env, fork_env, file, NULL};
	struct run r;
	run(&r, env, "plain", dir);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_non_null(strstr(r.err, "rearview: RV_TRACE_BUFFER=garbage not understood"));
	assert_non_null(strstr(r.err, "rearview: RV_TRACE_MAX_BUFFERS=lots not understood"));
	assert_non_null(strstr(r.err, "rearview: RV_TRACE_FORK=maybe not understood"));
	assert_non_null(strstr(r.err, "unknown %q"));
	/* The defaults were kept: traced with the library's ring size. */
	char out[400];
	snprintf(out, sizeof(out), "%s/out.%%q.rvt", dir);
	struct cu_capture c;
	assert_int_equal(cu_parse_file(out, &c), 0);
	assert_int_equal(c.ring_slots, RVT_DEFAULT_BUFFER_BYTES / 8);
	cu_release(&c);

	char trace_env[] = "RV_TRACE=yes";
	const char *env2[] = {trace_env, file, NULL};
	run(&r, env2, "plain", dir);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_non_null(strstr(r.err, "rearview: RV_TRACE=yes not understood"));
	rm_rf(dir);
}

static void test_devmode_names_trace_only_named_threads(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-dev-names-XXXXXX";
	mk_dir(dir);
	char file[320], names_env[] = "RV_TRACE=rv-named,other", buf_env[] = "RV_TRACE_BUFFER=64k";
	snprintf(file, sizeof(file), "RV_TRACE_FILE=%s/%%e-%%%%-%%t.rvt", dir);
	const char *env[] = {names_env, buf_env, file, NULL};
	struct run r;
	run(&r, env, "named", dir);
	assert_int_equal(WEXITSTATUS(r.status), 0);
	assert_null(strstr(r.err, "rearview:"));
	unsigned n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char p[512], want[64];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		struct cu_capture c;
		assert_int_equal(cu_parse_file(p, &c), 0);
		assert_true(strcmp(c.thread_name, "rv-named") == 0 ||
			    strcmp(c.thread_name, "other") == 0);
		snprintf(want, sizeof(want), "test_devmode-%%-%u.rvt", c.tid);
		assert_string_equal(e->d_name, want);
		assert_true(cu_find_entry(&c, "call_leaf", 0) >= 0);
		cu_release(&c);
		n++;
	}
	closedir(d);
	assert_int_equal(n, 2); /* named itself, named by its creator */
	rm_rf(dir);
}

static void test_devmode_missing_socket_said_once(void **state)
{
	(void)state;
	char dir[] = "/tmp/rvt-dev-sock-XXXXXX";
	mk_dir(dir);
	char sock[320], err_path[320];
	snprintf(sock, sizeof(sock), "RV_SOCKET=%s/none.sock", dir);
	snprintf(err_path, sizeof(err_path), "%s.stderr", dir);
	const char *env[] = {sock, NULL};
	struct run r;
	r.pid = spawn(env, "control", err_path, 0);
	assert_true(r.pid > 0);
	/* The control thread retries with backoff; the first failure is said. */
	int seen = 0;
	time_t deadline = time(NULL) + 30;
	while (!seen && time(NULL) < deadline) {
		FILE *f = fopen(err_path, "r");
		if (f) {
			char line[512];
			while (fgets(line, sizeof(line), f))
				seen += strstr(line, "rearview: cannot reach the daemon at") !=
					NULL;
			fclose(f);
		}
		if (!seen) {
			struct pollfd none;
			poll(&none, 0, 20);
		}
	}
	kill(r.pid, SIGKILL);
	finish(&r, err_path);
	assert_int_equal(seen, 1);
	assert_non_null(strstr(r.err, "none.sock (No such file or directory); retrying quietly"));
	assert_null(strstr(strstr(r.err, "retrying quietly") + 1, "rearview:"));
	rm_rf(dir);
}

static void *named_worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "rv-named");
	call_top(2);
	return NULL;
}

static pthread_barrier_t named_by_creator;

/* Named by its creator; works only once that is done. */
static void *other_worker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&named_by_creator);
	call_top(2);
	return NULL;
}

static int run_named(void)
{
	pthread_t a, b, c;
	pthread_barrier_init(&named_by_creator, NULL, 2);
	if (pthread_create(&a, NULL, named_worker, NULL) != 0 ||
	    pthread_create(&b, NULL, worker, NULL) != 0 ||
	    pthread_create(&c, NULL, other_worker, NULL) != 0)
		return 30;
	if (pthread_setname_np(c, "other") != 0)
		return 31;
	pthread_barrier_wait(&named_by_creator);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_join(c, NULL);
	call_top(2);
	return 0;
}

int main(int argc, char **argv)
{
	self_path = argv[0];
	if (argc > 2 && strcmp(argv[1], "--traced") == 0) {
		if (strcmp(argv[2], "control") == 0) {
			if (rvt_control_start(NULL) != 0)
				return 40;
			for (;;)
				pause(); /* killed by the test */
		}
		return strcmp(argv[2], "named") == 0 ? run_named() : traced_program(argv[2]);
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devmode_fork_all_threads_one_capture_per_thread),
		cmocka_unit_test(test_devmode_no_fork_optin_child_writes_nothing),
		cmocka_unit_test(test_devmode_fifo_written_through_stays_fifo),
		cmocka_unit_test(test_devmode_char_device_never_replaced),
		cmocka_unit_test(test_devmode_directory_refused_with_message),
		cmocka_unit_test(test_devmode_symlink_resolved_link_kept),
		cmocka_unit_test(test_devmode_readonly_dir_says_so),
		cmocka_unit_test(test_devmode_bad_settings_each_said),
		cmocka_unit_test(test_devmode_names_trace_only_named_threads),
		cmocka_unit_test(test_devmode_missing_socket_said_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
