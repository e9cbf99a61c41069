/* SPDX-License-Identifier: Apache-2.0 */
/*
 * why_app.c — rv_why_app, the test program of issue 17's "done when": an
 * instrumented process whose UI (main) thread is slow for each reason in
 * turn, one traced method per reason, for test_daemon_why.c to capture
 * through the real rearviewd and check:
 *
 *   spin_cpu        CPU-bound: burns 40 ms of its own CPU time
 *   read_pipe       blocked on a pipe the worker writes (write_pipe)
 *   touch_pages     minor faults: writes every page of 32 MiB of fresh
 *                   anonymous memory (FRESH_PAGES faults, fault-around aside)
 *   read_cold_file  major faults: reads a 4 MiB file whose clean pages
 *                   were dropped with posix_fadvise(DONTNEED) — whether the
 *                   kernel really reads them back is the file system's call,
 *                   so the test only reports it
 *   wait_lock       waits for a mutex the traced worker holds in hold_lock
 *   wait_signal     waits on a condition variable the worker signals from
 *                   signal_ready
 *   chase_pointers  cache-missing: 2 M steps of a random cycle through
 *                   64 MiB
 *
 * Usage: rv_why_app CONTROL_SOCKET SCRATCH_FILE.  Registers on the control
 * socket (rvt_control_start), waits (90 s at most) until rearviewd traces
 * its UI thread, starts tracing its worker itself, runs the phases, prints
 * "worker TID" and "done" on stdout and waits for stdin to close (the test
 * captures meanwhile).  The worker takes commands over a pipe and waits for
 * the UI thread's kernel state 'S', then burns 20 ms of its own CPU time,
 * before it releases it: no fixed sleeps, and each wait lasts long enough
 * that the µs around its ends do not decide its split.
 * Exit 0, or 1 with a message on stderr.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rearview/trace.h"

#define NOTRACE __attribute__((no_instrument_function, noinline))

#define SPIN_NS	    40000000ull
#define HOLD_NS	    20000000ull
#define FRESH_BYTES (32u << 20)
#define COLD_BYTES  (4u << 20)
#define CHASE_BYTES (64u << 20)
#define CHASE_STEPS 2000000u
#define GUARD_NS    90000000000ull

static struct {
	int cmd[2], data[2];
	pid_t ui, worker;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int ready; /* under mu */
	_Atomic int trying, held;
	volatile uint64_t sink;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

NOTRACE static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NOTRACE static void die(const char *what)
{
	fprintf(stderr, "rv_why_app: %s\n", what);
	exit(1);
}

/* True once thread `tid` sleeps (state 'S'), within the guard. */
NOTRACE static int sleeping(pid_t tid)
{
	char path[64], buf[512];
	uint64_t until = clock_ns(CLOCK_MONOTONIC) + GUARD_NS;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	while (clock_ns(CLOCK_MONOTONIC) < until) {
		FILE *f = fopen(path, "r");
		if (!f)
			return 0;
		char *p = fgets(buf, sizeof(buf), f);
		fclose(f);
		p = p ? strrchr(buf, ')') : NULL;
		if (p && p[1] == ' ' && p[2] == 'S')
			return 1;
		sched_yield();
	}
	return 0;
}

/* Burns `ns` of the calling thread's CPU time: the worker's work while the
 * UI thread waits for it (CPU time, not a sleep: the wait lasts at least
 * that long however busy the machine is). */
NOTRACE static void busy(uint64_t ns)
{
	uint64_t until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns, x = 1;
	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
	g.sink = x;
}

/* The worker's traced methods: each works HOLD_NS once the UI thread
 * sleeps, then releases it. */
static void write_pipe(void)
{
	if (!sleeping(g.ui))
		die("write_pipe: the UI thread never slept");
	busy(HOLD_NS);
	if (write(g.data[1], "x", 1) != 1)
		die("write_pipe");
}

static void hold_lock(void)
{
	pthread_mutex_lock(&g.mu);
	g.held = 1;
	while (!g.trying)
		sched_yield();
	if (!sleeping(g.ui))
		die("hold_lock: the UI thread never slept");
	busy(HOLD_NS);
	pthread_mutex_unlock(&g.mu);
}

static void signal_ready(void)
{
	while (!g.trying)
		sched_yield();
	if (!sleeping(g.ui))
		die("signal_ready: the UI thread never slept");
	busy(HOLD_NS);
	pthread_mutex_lock(&g.mu);
	g.ready = 1;
	pthread_cond_signal(&g.cond);
	pthread_mutex_unlock(&g.mu);
}

NOTRACE static void *worker_main(void *arg)
{
	(void)arg;
	char c;
	g.worker = (pid_t)syscall(SYS_gettid);
	while (read(g.cmd[0], &c, 1) == 1) {
		if (c == 'p')
			write_pipe();
		else if (c == 'l')
			hold_lock();
		else if (c == 's')
			signal_ready();
		else
			break;
	}
	return NULL;
}

NOTRACE static void command(char c)
{
	if (write(g.cmd[1], &c, 1) != 1)
		die("command");
}

/* The UI thread's traced methods, one per reason. */
static void spin_cpu(void)
{
	uint64_t until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + SPIN_NS, x = 1;
	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005u + 1442695040888963407u;
	g.sink = x;
}

static void read_pipe(void)
{
	char c;
	command('p');
	if (read(g.data[0], &c, 1) != 1)
		die("read_pipe");
}

static void touch_pages(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	volatile char *m =
		mmap(NULL, FRESH_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		die("touch_pages: mmap");
	for (size_t i = 0; i < FRESH_BYTES; i += page)
		m[i] = 1;
	munmap((void *)m, FRESH_BYTES);
}

static void read_cold_file(int fd)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const volatile char *m = mmap(NULL, COLD_BYTES, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		die("read_cold_file: mmap");
	madvise((void *)m, COLD_BYTES, MADV_RANDOM); /* no read-ahead: one read per page */
	uint64_t sum = 0;
	for (size_t i = 0; i < COLD_BYTES; i += page)
		sum += (unsigned char)m[i];
	g.sink = sum;
	munmap((void *)m, COLD_BYTES);
}

static void wait_lock(void)
{
	command('l');
	while (!g.held)
		sched_yield();
	g.trying = 1;
	pthread_mutex_lock(&g.mu);
	pthread_mutex_unlock(&g.mu);
	g.trying = 0;
}

static void wait_signal(void)
{
	pthread_mutex_lock(&g.mu);
	command('s');
	g.trying = 1;
	while (!g.ready)
		pthread_cond_wait(&g.cond, &g.mu);
	pthread_mutex_unlock(&g.mu);
	g.trying = 0;
}

static void chase_pointers(size_t *next, size_t n)
{
	size_t i = 0;
	for (size_t k = 0; k < CHASE_STEPS; k++)
		i = next[i];
	g.sink = i;
}

/* A 4 MiB file of clean pages dropped from the page cache (4 MiB: its 1024
 * major faults are 2048 switches, which the daemon's ring of the newest
 * switches holds with those of every other phase). */
NOTRACE static int cold_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	char buf[65536];
	memset(buf, 0x5a, sizeof(buf));
	if (fd < 0)
		die("cold_file: open");
	for (size_t n = 0; n < COLD_BYTES; n += sizeof(buf))
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			die("cold_file: write");
	if (fsync(fd) != 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
		die("cold_file: fsync/fadvise");
	return fd;
}

/* A random single cycle through n slots (Sattolo), so every step misses. */
NOTRACE static size_t *cycle(size_t n)
{
	size_t *next = malloc(n * sizeof(*next));
	if (!next)
		die("cycle: malloc");
	for (size_t i = 0; i < n; i++)
		next[i] = i;
	uint64_t r = 88172645463325252u;
	for (size_t i = n - 1; i > 0; i--) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		size_t j = r % i, t = next[i];
		next[i] = next[j];
		next[j] = t;
	}
	return next;
}

NOTRACE int main(int argc, char **argv)
{
	if (argc != 3)
		die("usage: rv_why_app CONTROL_SOCKET SCRATCH_FILE");
	g.ui = (pid_t)syscall(SYS_gettid);
	if (pipe(g.cmd) || pipe(g.data))
		die("pipe");
	int fd = cold_file(argv[2]);
	size_t n = CHASE_BYTES / sizeof(size_t);
	size_t *next = cycle(n);
	pthread_t w;
	if (pthread_create(&w, NULL, worker_main, NULL))
		die("pthread_create");
	if (rvt_set_ui_thread(0) < 0 || rvt_control_start(argv[1]) < 0)
		die("rvt_control_start");
	uint64_t until = clock_ns(CLOCK_MONOTONIC) + GUARD_NS;
	while (!rvt_is_tracing(0) || !g.worker) {
		if (clock_ns(CLOCK_MONOTONIC) > until)
			die("never traced");
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	if (rvt_start(g.worker) < 0)
		die("rvt_start(worker)");

	spin_cpu();
	read_pipe();
	touch_pages();
	read_cold_file(fd);
	wait_lock();
	wait_signal();
	chase_pointers(next, n);

	printf("worker %d\ndone\n", (int)g.worker);
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0)
		;
	command('q');
	pthread_join(w, NULL);
	rvt_control_stop();
	close(fd);
	unlink(argv[2]);
	free(next);
	return 0;
}
