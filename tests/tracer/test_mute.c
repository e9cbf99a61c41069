/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_mute.c — the tracer's own budget (mute.c; issue 14, lever 3).  A
 * program with a hot tiny function gets it muted, in call mode and in
 * inline mode: the capture carries its MUTED record, still decodes, and the
 * function's calls stop after the mute time while its callers go on being
 * traced; a thread that was inside the function when it was muted decodes
 * too; a never-hot function is not muted; `off` disables muting.  Muting
 * is process-wide and permanent, so each case has its own functions and
 * `off` runs first.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_util.h"
#include "mute_fix.h"
#include "rearview/trace.h"
#include "tracer-int.h"

struct fix {
	const char *mode;
	int (*tiny)(int);
	long (*hot_loop)(long);
	int (*rare)(int);
	int (*outer)(int);
	_Atomic int *hold, *inside;
};

static const struct fix call_fix = {"call",   mc_tiny,	mc_hot_loop, mc_rare,
				    mc_outer, &mc_hold, &mc_inside};
static const struct fix inl_fix = {"inline", mi_tiny,  mi_hot_loop, mi_rare,
				   mi_outer, &mi_hold, &mi_inside};

static uint64_t value_of(const void *fn)
{
	return (uint64_t)(uintptr_t)fn - rvt_method_base;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The MUTED entry of value v, or NULL. */
static const struct rvt_muted *find_muted(uint64_t v, struct rvt_muted *buf)
{
	size_t n = rvt_mute_list(buf, RVT_MUTED_MAX);
	for (size_t i = 0; i < n; i++)
		if (buf[i].value == v)
			return &buf[i];
	return NULL;
}

/* The MUTED records of a capture's bytes (FORMAT.md §2): their values. */
static size_t muted_records(const uint8_t *b, size_t len, uint64_t *vals, size_t cap)
{
	uint64_t off;
	memcpy(&off, b + 112, 8);
	size_t n = 0;
	while (off + 8 <= len) {
		uint16_t type;
		uint32_t l;
		memcpy(&type, b + off, 2);
		memcpy(&l, b + off + 4, 4);
		if (type == 0xffff)
			break;
		if (type == RVT_REC_MUTED && l == 40 && n < cap)
			memcpy(&vals[n++], b + off + 8, 8);
		off += 8 + ((l + 7u) & ~7u);
	}
	return n;
}

static uint8_t *capture(pid_t tid, size_t *len)
{
	uint64_t size = 0;
	int fd = rvt_capture_to_memfd(tid, &size);
	assert_true(fd >= 0);
	uint8_t *b = malloc(size);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, size, 0), (ssize_t)size);
	close(fd);
	*len = size;
	return b;
}

struct inside_arg {
	const struct fix *f;
	_Atomic pid_t tid;
	int rc;
};

/* Traced; enters tiny(-1) through outer() and waits inside until released. */
static void *inside_main(void *arg)
{
	struct inside_arg *a = arg;
	a->tid = rvt_thread_register();
	if (rvt_start(0) != 0)
		return NULL;
	a->rc = a->f->outer(-1);
	a->f->rare(1);
	rvt_stop(0, 0);
	return NULL;
}

static void mutes_hot_function(const struct fix *f)
{
	assert_int_equal(rvt_set_config(4u << 20, 8), 0);
	int rc = rvt_set_mute("1000000,200");
	if (rc == -ENOTSUP)
		skip(); /* no x86-64 hand-written hooks in this build */
	assert_int_equal(rc, 0);
	atomic_store(f->hold, 1);
	struct inside_arg ia = {f, 0, -1};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, inside_main, &ia), 0);
	double deadline = now_s() + 30;
	while (!atomic_load(f->inside) && now_s() < deadline)
		usleep(1000);
	assert_true(atomic_load(f->inside));

	assert_int_equal(rvt_start(0), 0);
	struct rvt_muted buf[RVT_MUTED_MAX];
	const struct rvt_muted *m = NULL;
	uint64_t tiny_v = value_of((const void *)f->tiny);
	while (!(m = find_muted(tiny_v, buf)) && now_s() < deadline) {
		f->hot_loop(20000);
		f->rare(1);
	}
	assert_non_null(m);
	print_message("%s mode: tiny muted at %.1f M calls/s, median %u ns, %u sites\n", f->mode,
		      (double)m->rate / 1e6, m->median_ns, m->sites);
	assert_true(m->sites >= 2);
	assert_true(m->median_ns < 200);
	assert_true(m->rate > 1000000);
	uint64_t mute_at = m->counter >> rvt_clock.shift;
	usleep(2000);
	/* Still traced: the callers; no longer: tiny. */
	for (int i = 0; i < 10; i++)
		assert_int_equal(f->hot_loop(1000), f->hot_loop(1000));
	assert_null(find_muted(value_of((const void *)f->rare), buf));
	rvt_stop(0, 0);

	size_t len;
	uint8_t *b = capture(0, &len);
	uint64_t vals[8];
	size_t nm = muted_records(b, len, vals, 8);
	int found = 0;
	for (size_t i = 0; i < nm; i++)
		found |= vals[i] == tiny_v;
	assert_true(found);
	struct cu_capture c;
	assert_int_equal(cu_parse(b, len, &c), 0);
	char tiny_name[256];
	assert_non_null(cu_name(&c, tiny_v));
	snprintf(tiny_name, sizeof(tiny_name), "%s", cu_name(&c, tiny_v));
	size_t tiny_after = 0, loops_after = 0;
	uint64_t loop_v = value_of((const void *)f->hot_loop);
	for (size_t i = 0; i < c.nevents; i++) {
		if (!c.events[i].entry || c.events[i].ts <= mute_at)
			continue;
		tiny_after += c.events[i].value == tiny_v;
		loops_after += c.events[i].value == loop_v;
	}
	/* This thread's trace point that was already running when the sites
	 * became nops (preempted inside the hook on a busy machine) may write
	 * after the mute time; no other call may. */
	assert_true(tiny_after <= 1);
	assert_true(loops_after >= 20);
	cu_release(&c);
	free(b);

	/* The thread inside tiny when it was muted: released, it leaves tiny
	 * without an exit slot; its capture still decodes. */
	atomic_store(f->hold, 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(ia.rc, 1);
	b = capture(ia.tid, &len);
	assert_int_equal(cu_parse(b, len, &c), 0);
	assert_true(cu_find_entry(&c, tiny_name, 0) >= 0);
	cu_release(&c);
	free(b);
	rvt_stop(0, 1);
	rvt_stop(ia.tid, 1);
}

static void test_mute_call_mode_hot_function_muted(void **state)
{
	(void)state;
	mutes_hot_function(&call_fix);
}

static void test_mute_inline_mode_hot_function_muted(void **state)
{
	(void)state;
	mutes_hot_function(&inl_fix);
}

static void test_mute_off_nothing_muted(void **state)
{
	(void)state;
	assert_int_equal(rvt_set_mute("off"), 0);
	assert_int_equal(rvt_start(0), 0);
	double end = now_s() + 0.5;
	while (now_s() < end)
		mc_hot_loop(20000);
	struct rvt_muted buf[RVT_MUTED_MAX];
	assert_int_equal(rvt_mute_list(buf, RVT_MUTED_MAX), 0);
	rvt_stop(0, 1);
}

static void test_mute_bad_spec_einval(void **state)
{
	(void)state;
	assert_int_equal(rvt_set_mute("fast"), -EINVAL);
	assert_int_equal(rvt_set_mute("1000,"), -EINVAL);
	assert_int_equal(rvt_set_mute("0,200"), -EINVAL);
	assert_int_equal(rvt_set_mute(NULL), -EINVAL);
	int rc = rvt_set_mute("on");
	if (rc == -ENOTSUP)
		skip(); /* no x86-64 hand-written hooks in this build */
	assert_int_equal(rc, 0);
	assert_int_equal(rvt_set_mute("5000000,100"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mute_bad_spec_einval),
		cmocka_unit_test(test_mute_off_nothing_muted),
		cmocka_unit_test(test_mute_call_mode_hot_function_muted),
		cmocka_unit_test(test_mute_inline_mode_hot_function_muted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
