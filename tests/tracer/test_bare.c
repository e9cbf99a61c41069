/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bare.c — the budget thread glibc does not know (bare.c).  A
 * single-threaded program that traces stays single-threaded to glibc
 * (__libc_single_threaded still 1, so malloc and stdio keep taking no
 * locks) while the budget thread runs beside it and mutes its hot function;
 * the program's errno is untouched meanwhile, and the budget thread holds
 * no privilege (in a root test process it runs as nobody) and none of the
 * program's files, only its own /proc/self/mem, through which it writes
 * code.  Then librvtrace's own sort
 * against qsort and its own lock under contention (those make the process
 * multi-threaded: they run last).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mute_fix.h"
#include "rearview/sanitizer.h"
#include "rearview/trace.h"
#include "tracer-int.h"

/* Under a sanitizer the budget thread is a pthread (mute.c, BUDGET_BARE). */
#define BARE (!RV_ASAN && !RV_TSAN)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Threads of this process (/proc/self/task), or -1. */
static int nthreads(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The tid of this process's thread other than the calling one, or 0. */
static pid_t other_thread(void)
{
	DIR *d = opendir("/proc/self/task");
	pid_t me = (pid_t)syscall(SYS_gettid), t = 0;
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		pid_t id = (pid_t)strtol(e->d_name, NULL, 10);
		if (e->d_name[0] != '.' && id != me)
			t = id;
	}
	if (d)
		closedir(d);
	return t;
}

/* The numbers after `key` in /proc/self/task/TID/status (base 10, or 16
 * for the Cap* lines) into v[0..4); how many were read. */
static int status_line(pid_t tid, const char *key, unsigned long long *v)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	FILE *f = fopen(path, "r");
	int n = 0;
	while (f && n == 0 && fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0) {
			const char *at = line + strlen(key);
			n = key[0] == 'C'
				    ? sscanf(at, "%llx %llx %llx %llx", &v[0], &v[1], &v[2], &v[3])
				    : sscanf(at, "%llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3]);
		}
	if (f)
		fclose(f);
	return n;
}

static int is_muted(const void *fn)
{
	static struct rvt_muted buf[RVT_MUTED_MAX];
	size_t n = rvt_mute_list(buf, RVT_MUTED_MAX);
	for (size_t i = 0; i < n; i++)
		if (buf[i].value == (uint64_t)(uintptr_t)fn - rvt_method_base)
			return 1;
	return 0;
}

/* The entries of /proc/self/task/TID/fd into `one` (the target of the
 * last); how many there are, or -1. */
static int thread_fds(pid_t tid, char *one, size_t len)
{
	char path[64], link[64 + sizeof(((struct dirent *)0)->d_name)];
	snprintf(path, sizeof(path), "/proc/self/task/%d/fd", (int)tid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		n++;
		snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
		ssize_t k = readlink(link, one, len - 1);
		one[k > 0 ? k : 0] = '\0';
	}
	closedir(d);
	return n;
}

/* Whether this kernel lets a process write its own code through
 * /proc/self/mem (a kernel built or booted to refuse it does not):
 * rewrites one byte of mc_tiny with the value it has. */
static int mem_writable(void)
{
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	uint8_t b = *(const volatile uint8_t *)(uintptr_t)mc_tiny;
	int ok = pwrite(fd, &b, 1, (off_t)(uintptr_t)mc_tiny) == 1;
	close(fd);
	return ok;
}

static void test_bare_budget_thread_leaves_glibc_single_threaded(void **state)
{
	(void)state;
	assert_int_equal(__libc_single_threaded, 1); /* nothing made a thread yet */
	assert_int_equal(nthreads(), 1);
	int pipefd[2]; /* open in the program when the budget thread is made */
	assert_int_equal(pipe2(pipefd, O_NONBLOCK | O_CLOEXEC), 0);
	/* ... and a POSIX record lock the program holds meanwhile */
	char lockpath[] = "/tmp/test_bare.XXXXXX";
	int lockfd = mkstemp(lockpath);
	assert_true(lockfd >= 0);
	unlink(lockpath);
	struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	assert_int_equal(fcntl(lockfd, F_SETLK, &lk), 0);
	assert_int_equal(rvt_set_mute("on"), 0);
	assert_int_equal(rvt_start(0), 0);
	/* No trace point for a while after the start: the budget must not
	 * take the thread for gone (it once slept for good after two looks
	 * that found no ring in use, 1 ms apart).  Not a wait for an event:
	 * the pause makes that state likely; a machine too slow to reach it
	 * only makes the case weaker, never fail. */
	struct timespec pause = {0, 50000000};
	nanosleep(&pause, NULL);
	double deadline = now_s() + 20;
	errno = 4242;
	/* mc_tiny is hot in call mode: the budget mutes it. */
	while (!is_muted((const void *)mc_tiny) && now_s() < deadline)
		mc_hot_loop(20000);
	assert_int_equal(errno, 4242); /* the budget thread's system calls fail
					* (timed-out futex waits): errno is its own */
	assert_true(is_muted((const void *)mc_tiny));
	/* The budget thread is there, and glibc does not count it. */
	assert_int_equal(nthreads(), 2);
	if (!BARE) {
		print_message("sanitizer build: the budget thread is a pthread, glibc counts it "
			      "(not checked)\n");
		close(pipefd[0]);
		close(pipefd[1]);
		close(lockfd);
		rvt_stop(0, 1);
		return;
	}
	assert_int_equal(__libc_single_threaded, 1);
	/* It holds no privilege: its ids are the real ones (nobody's for
	 * root), it has no capability. */
	pid_t b = other_thread();
	assert_true(b > 0);
	unsigned long long v[4];
	unsigned long long uid = getuid() == 0 ? 65534 : getuid();
	assert_int_equal(status_line(b, "Uid:", v), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(v[i], uid);
	assert_int_equal(status_line(b, "CapEff:", v), 1);
	assert_int_equal(v[0], 0);
	assert_int_equal(status_line(b, "CapPrm:", v), 1);
	assert_int_equal(v[0], 0);
	/* Its file table is its own: it holds none of the program's files
	 * (the pipe's reader sees the end of it once the program closes the
	 * writer), only the /proc/self/mem it opened before giving up its
	 * privileges, and it wrote mc_tiny's muting through that file (as
	 * nobody in a root process it could not open it now). */
	char target[128], want[64];
	assert_int_equal(thread_fds(b, target, sizeof(target)), 1);
	snprintf(want, sizeof(want), "/proc/%d/mem", (int)getpid());
	assert_string_equal(target, want);
	close(pipefd[1]);
	char c;
	assert_int_equal(read(pipefd[0], &c, 1), 0);
	close(pipefd[0]);
	/* Its closing its copy of lockfd released nothing: another process
	 * still finds the region locked (F_GETLK names the holder). */
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct flock q = lk; /* the region the program locked */
		_exit(fcntl(lockfd, F_GETLK, &q) == 0 && q.l_type == F_WRLCK && q.l_pid == getppid()
			      ? 0
			      : 1);
	}
	int status = 0;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(lockfd);
	if (mem_writable())
		assert_int_equal(rvt__mute_by_mprotect(), 0);
	else
		print_message("this kernel refuses writes to /proc/self/mem: the budget writes "
			      "code with mprotect (not checked)\n");
	char *p = malloc(100); /* still glibc's single-threaded path: works */
	assert_non_null(p);
	free(p);
	rvt_stop(0, 1);
}

struct rec {
	uint32_t key;
	uint32_t pad[5]; /* pad[0]: the element's place before the sort */
};

/* Over the merge sort's element limit: rvt_sort falls back to a heapsort. */
struct big {
	uint32_t key;
	uint32_t pad[17];
};

static int cmp_rec(const void *a, const void *b)
{
	uint32_t x = ((const struct rec *)a)->key, y = ((const struct rec *)b)->key;
	return (x > y) - (x < y);
}

static int cmp_big(const void *a, const void *b)
{
	uint32_t x = ((const struct big *)a)->key, y = ((const struct big *)b)->key;
	return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Input shapes: random, in order, reversed, in order but for a few swaps
 * (what the budget sorts: sites found in address order). */
enum shape { RANDOM, SORTED, REVERSED, NEARLY, SHAPES };

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

static uint32_t key_of(enum shape sh, size_t i, size_t n, uint64_t *x)
{
	switch (sh) {
	case SORTED:
		return (uint32_t)(i / 2); /* pairs of equal keys */
	case REVERSED:
		return (uint32_t)(n - i);
	case NEARLY:
		return xorshift(x) % 16 == 0 ? (uint32_t)(xorshift(x) % (n + 1)) : (uint32_t)i;
	default:
		return (uint32_t)(xorshift(x) % (n / 2 + 1));
	}
}

static void test_bare_sort_matches_qsort(void **state)
{
	(void)state;
	enum { N = 10000 }; /* up to 9720: past the static scratch, a mapping */
	static struct rec r[N], q[N];
	static struct big g[N];
	static uint64_t u[N], v[N];
	uint64_t x = 88172645463325252u;
	for (enum shape sh = 0; sh < SHAPES; sh++)
		for (size_t n = 0; n <= N; n = n < 40 ? n + 1 : n * 3) {
			for (size_t i = 0; i < n; i++) {
				r[i] = (struct rec){key_of(sh, i, n, &x), {(uint32_t)i}};
				g[i] = (struct big){r[i].key, {(uint32_t)i}};
				u[i] = sh == RANDOM ? xorshift(&x) : r[i].key;
			}
			memcpy(q, r, n * sizeof(*r));
			memcpy(v, u, n * sizeof(*u));
			rvt_sort(r, n, sizeof(*r), cmp_rec);
			qsort(q, n, sizeof(*q), cmp_rec);
			rvt_sort(u, n, sizeof(*u), cmp_u64);
			qsort(v, n, sizeof(*v), cmp_u64);
			rvt_sort(g, n, sizeof(*g), cmp_big);
			for (size_t i = 0; i < n; i++) {
				assert_int_equal(r[i].key, q[i].key);
				assert_int_equal(g[i].key, q[i].key);
				/* stable: equal keys keep their order */
				if (i > 0 && r[i].key == r[i - 1].key)
					assert_true(r[i].pad[0] > r[i - 1].pad[0]);
			}
			assert_memory_equal(u, v, n * sizeof(*u));
		}
}

static struct rvt_mu mu = RVT_MU_INIT;
static uint64_t counter; /* under mu, by plain increments */

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200000; i++) {
		rvt_mu_lock(&mu);
		counter = counter + 1;
		rvt_mu_unlock(&mu);
	}
	return NULL;
}

static void test_bare_lock_excludes(void **state)
{
	(void)state;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(counter, 4 * 200000);
	assert_int_equal(atomic_load(&mu.v), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: the process must not have made a thread yet. */
		cmocka_unit_test(test_bare_budget_thread_leaves_glibc_single_threaded),
		cmocka_unit_test(test_bare_sort_matches_qsort),
		cmocka_unit_test(test_bare_lock_excludes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
