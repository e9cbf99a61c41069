/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_offcpu.c — rearviewd's per-thread perf events (device/src/offcpu.c):
 * a thread blocked on a pipe gets a "blocked" off-CPU interval around the
 * block, page touches count as minor faults, and the records appended to a
 * capture keep it a valid, checksummed capture (capcheck) with the values
 * where tracer/FORMAT.md puts them.  When perf events cannot be opened
 * here the perf cases skip visibly.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capbuild_ck.h"
#include "capcheck.h"
#include "offcpu.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Opens `tid` or skips the test when perf events are not allowed here. */
static struct rvd_offcpu_thread *open_or_skip(pid_t tid)
{
	struct rvd_offcpu_thread *t = NULL;
	int rc = rvd_offcpu_open(tid, 8, &t);

	if (rc == -EACCES || rc == -EPERM || rc == -ENOENT || rc == -EOPNOTSUPP || rc == -ENOSYS) {
		print_message("perf events unavailable here: %s\n", strerror(-rc));
		skip();
	}
	assert_int_equal(rc, 0);
	return t;
}

struct blocker {
	int to_main[2], to_thread[2];
};

/* Reports its tid, waits for "go", then blocks on the pipe until woken. */
static void *blocker_main(void *arg)
{
	struct blocker *b = arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	char ch;

	if (write(b->to_main[1], &tid, sizeof(tid)) != sizeof(tid) ||
	    read(b->to_thread[0], &ch, 1) != 1 || write(b->to_main[1], "a", 1) != 1 ||
	    read(b->to_thread[0], &ch, 1) != 1 || write(b->to_main[1], "d", 1) != 1)
		return NULL;
	return NULL;
}

/* True once /proc says thread `tid` sleeps (state S), within 10 s. */
static int wait_sleeping(pid_t tid)
{
	char path[64], buf[512];
	uint64_t deadline = mono_ns() + 10000000000ull;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	while (mono_ns() < deadline) {
		FILE *f = fopen(path, "r");
		char *p;

		if (!f)
			return 0;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		p = p ? strrchr(buf, ')') : NULL;
		if (p && p[1] == ' ' && p[2] == 'S')
			return 1;
		sched_yield();
	}
	return 0;
}

static void test_offcpu_blocked_on_pipe_gets_blocked_interval(void **state)
{
	struct blocker b;
	struct rvd_offcpu_window w;
	struct rvd_offcpu_thread *t;
	pthread_t th;
	pid_t tid;
	char ch;
	uint64_t woke;
	int found = 0;

	(void)state;
	assert_int_equal(pipe(b.to_main), 0);
	assert_int_equal(pipe(b.to_thread), 0);
	assert_int_equal(pthread_create(&th, NULL, blocker_main, &b), 0);
	assert_int_equal(read(b.to_main[0], &tid, sizeof(tid)), sizeof(tid));
	t = open_or_skip(tid);
	assert_int_equal(rvd_offcpu_tid(t), tid);
	assert_int_equal(write(b.to_thread[1], "g", 1), 1);
	assert_int_equal(read(b.to_main[0], &ch, 1), 1); /* it is about to block */
	assert_true(wait_sleeping(tid));
	woke = mono_ns();
	assert_int_equal(write(b.to_thread[1], "w", 1), 1);
	assert_int_equal(read(b.to_main[0], &ch, 1), 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(rvd_offcpu_snapshot(t, &w), 0);
	assert_int_equal(w.tid, tid);
	assert_true(w.since_ns <= w.window_ns && w.window_ns <= w.at_ns);
	assert_true(w.n >= 1);
	assert_true(w.voluntary >= 1);
	for (size_t i = 0; i < w.n; i++) {
		assert_true(w.iv[i].out_ns <= w.iv[i].in_ns && w.iv[i].in_ns <= w.at_ns);
		if (i)
			assert_true(w.iv[i - 1].in_ns <= w.iv[i].out_ns);
		/* The block on the pipe: out before the wake-up, in after it. */
		if (w.iv[i].out_ns <= woke && w.iv[i].in_ns >= woke) {
			assert_int_equal(w.iv[i].reason, RVD_OFFCPU_BLOCKED);
			found = 1;
		}
	}
	assert_true(found);
	rvd_offcpu_window_release(&w);
	rvd_offcpu_close(t);
	for (int i = 0; i < 2; i++) {
		close(b.to_main[i]);
		close(b.to_thread[i]);
	}
}

static void test_offcpu_fresh_pages_count_minor_faults(void **state)
{
	struct rvd_offcpu_thread *t = open_or_skip((pid_t)syscall(SYS_gettid));
	struct rvd_offcpu_window w0, w1;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 256;
	volatile char *m;

	(void)state;
	assert_int_equal(rvd_offcpu_snapshot(t, &w0), 0);
	m = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	for (size_t i = 0; i < n; i++)
		m[i * page] = 1;
	assert_int_equal(rvd_offcpu_snapshot(t, &w1), 0);
	assert_true(w1.minor_faults >= w0.minor_faults + n / 2); /* fault-around may merge */
	assert_true(w1.task_clock_ns > w0.task_clock_ns);
	munmap((void *)m, n * page);
	rvd_offcpu_window_release(&w0);
	rvd_offcpu_window_release(&w1);
	rvd_offcpu_close(t);
}

static void test_offcpu_open_bad_arguments_fail(void **state)
{
	struct rvd_offcpu_thread *t = (void *)1;

	(void)state;
	assert_int_equal(rvd_offcpu_open((pid_t)syscall(SYS_gettid), 3, &t), -EINVAL);
	assert_null(t);
	rvd_offcpu_close(NULL);
}

/* A checksummed capture, as every writer makes it. */
static void build_capture(capbuf *c)
{
	cb_header(c, 100000, 1000000000, 0, 100000, 0x400000, 4);
	cb_entry(c, 0x1000, 1000);
	cb_exit(c, 9000);
	cb_end_slots(c);
	cb_symbol(c, 0x1000, 0x1000, 0, "main");
	cb_finish_checksummed(c);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void test_offcpu_append_keeps_capture_valid(void **state)
{
	struct rvd_offcpu_iv iv[2] = {
		{.out_ns = 2000, .in_ns = 5000, .reason = RVD_OFFCPU_BLOCKED},
		{.out_ns = 6000, .in_ns = 6500, .reason = RVD_OFFCPU_PREEMPTED}};
	struct rvd_offcpu_window w = {.tid = 43,
				      .since_ns = 500,
				      .at_ns = 10000,
				      .window_ns = 1500,
				      .task_clock_ns = 4500,
				      .minor_faults = 7,
				      .major_faults = 1,
				      .switches = 3,
				      .voluntary = 1,
				      .involuntary = 1,
				      .iv = iv,
				      .n = 2};
	capbuf c = {0};
	const char *why = NULL;
	uint8_t *out;
	size_t len, r;

	(void)state;
	build_capture(&c);
	assert_int_equal(rvd_capcheck_buf(c.b, c.len, &why), 0);
	assert_int_equal(rvd_offcpu_append(c.b, c.len, &w, 1, &out, &len), 0);
	assert_int_equal(len, c.len + 8 + 8 + 2 * 24 + 8 + 80);
	assert_int_equal(rvd_capcheck_buf(out, len, &why), 0);
	assert_int_equal(rd64(out + 120), len);
	r = c.len - 32; /* the new records start where CHECKSUM was */
	assert_memory_equal(out, c.b, 120);
	assert_memory_equal(out + 128, c.b + 128, r - 128);
	assert_int_equal(out[r], 12);
	assert_int_equal(rd64(out + r + 8), (uint64_t)2 << 32 | 43);
	assert_int_equal(rd64(out + r + 16), 2000);
	assert_int_equal(rd64(out + r + 24), 5000);
	assert_int_equal(rd64(out + r + 32), RVD_OFFCPU_BLOCKED);
	assert_int_equal(rd64(out + r + 56), RVD_OFFCPU_PREEMPTED);
	r += 16 + 48;
	assert_int_equal(out[r], 13);
	assert_int_equal(rd64(out + r + 8 + 24), 4500);
	assert_int_equal(rd64(out + r + 8 + 32), 7);
	assert_int_equal(rd64(out + r + 8 + 72), 1);
	out[r + 40] ^= 1; /* any flipped bit breaks the new checksum */
	assert_int_not_equal(rvd_capcheck_buf(out, len, &why), 0);
	free(out);
	c.b[c.len - 32] = 5; /* no CHECKSUM before END: refused */
	assert_int_equal(rvd_offcpu_append(c.b, c.len, &w, 1, &out, &len), -EINVAL);
	free(c.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offcpu_blocked_on_pipe_gets_blocked_interval),
		cmocka_unit_test(test_offcpu_fresh_pages_count_minor_faults),
		cmocka_unit_test(test_offcpu_open_bad_arguments_fail),
		cmocka_unit_test(test_offcpu_append_keeps_capture_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
