/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_stream.c — a capture stream loses no call (issue 21, item 2): a busy
 * thread calls an instrumented function exactly N × CHUNK times while
 * another thread takes N captures of it mid-run (each switching it to a spare ring
 * at the freeze); the entries of that function summed over the N captures
 * and the final one are exactly that, none is counted twice, and no capture
 * carries a LOSS record.  The rings are large enough never to wrap, so the
 * count is exact by construction, not by luck.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_util.h"
#include "fixture.h"
#include "rearview/trace.h"

#define N     20
#define CHUNK 100000ul /* calls granted before each capture */

struct busy {
	pthread_t th;
	_Atomic int tid;
	_Atomic unsigned long allowed; /* the thread makes this many calls */
	_Atomic unsigned long done;
	_Atomic int quit;
};

static void *busy_main(void *arg)
{
	struct busy *b = arg;
	b->tid = (int)syscall(SYS_gettid);
	unsigned long i = 0;
	while (!b->quit) {
		if (i == b->allowed) {
			sched_yield();
			continue;
		}
		call_top(0);
		b->done = ++i;
	}
	return NULL;
}

/* Entries of call_top in one capture of tid. */
static unsigned long count_capture(pid_t tid, size_t *losses)
{
	int fd = rvt_capture_to_memfd(tid, NULL);
	if (fd < 0)
		fail_msg("capture of %d: %s", (int)tid, strerror(-fd));
	struct cu_capture c;
	assert_int_equal(cu_parse_fd(fd, &c), 0);
	close(fd);
	assert_int_equal(c.flags & 1, 0); /* never wrapped: nothing overwritten */
	unsigned long n = 0;
	for (long i = cu_find_entry(&c, "call_top", 0); i >= 0;
	     i = cu_find_entry(&c, "call_top", (size_t)i + 1))
		n++;
	*losses += c.nlosses;
	cu_release(&c);
	return n;
}

static void test_stream_mid_run_captures_sum_to_exact_call_count(void **state)
{
	(void)state;
	/* call_top(0): 6 slots a call; two chunks fit a ring many times. */
	assert_int_equal(rvt_set_config(64u << 20, 2), 0);
	struct busy b;
	memset(&b, 0, sizeof(b));
	assert_int_equal(pthread_create(&b.th, NULL, busy_main, &b), 0);
	while (b.tid == 0)
		sched_yield();
	assert_int_equal(rvt_start(b.tid), 0);
	unsigned long total = 0;
	size_t losses = 0;
	int mid = 0;
	for (int i = 1; i <= N; i++) {
		/* Grant a chunk and capture once it has begun: the capture races
		 * the calls (a ring never holds more than two chunks: no wrap). */
		b.allowed = CHUNK * (unsigned long)i;
		while (b.done <= CHUNK * (unsigned long)(i - 1))
			sched_yield(); /* the chunk has begun */
		unsigned long n = count_capture(b.tid, &losses);
		mid += n % CHUNK != 0; /* frozen in the middle of a chunk */
		total += n;
	}
	while (b.done < b.allowed)
		sched_yield();
	assert_int_equal(rvt_stop(b.tid, 0), 0);
	total += count_capture(b.tid, &losses);
	b.quit = 1;
	pthread_join(b.th, NULL);
	assert_true(mid > 0); /* at least one capture was mid-run */
	assert_int_equal(losses, 0);
	assert_int_equal(total, CHUNK * N);
	assert_int_equal(rvt_set_config(RVT_DEFAULT_BUFFER_BYTES, RVT_DEFAULT_MAX_BUFFERS), 0);
}

int main(void)
{
	/* Exact counts: the budget would mute the hot function (mute.c). */
	rvt_set_mute("off");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_mid_run_captures_sum_to_exact_call_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
