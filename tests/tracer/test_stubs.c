/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_stubs.c — x86-64 inline mode's out-of-line stubs (rvt__inl_enter and
 * rvt__inl_exit, hooks-x86_64.S): the inlined trace point calls them
 * promising the compiler that no register changes, so every general-purpose
 * register, the vector registers and the caller's red zone must survive the
 * untraced call, the traced call, the first traced call (which adopts the
 * ring in C), the first call after the counter's high word changed (which
 * writes a CLOCK record in C) and calls racing another thread's captures
 * (which switch the ring under them) and stop.
 * (%r11 is the one register the inline asm lets them clobber.)
 * The slots they write are checked through a capture.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_util.h"
#include "rearview/trace.h"
#include "tracer-int.h"

#ifdef RVT__INLINE_STUBS
void rvt_test_stub_regs(const void *fn, int entry, uint64_t out[18]);

#define SENT(n) (UINT64_C(0x5a5a000000000000) + (n))

static const char *const reg_names[17] = {"rax", "rbx", "rcx", "rdx",  "rsi",  "rdi",
					  "rbp", "r8",	"r9",  "r10",  "r11",  "r12",
					  "r13", "r14", "r15", "xmm0", "xmm15"};

/* Calls the stub once; returns the number of registers or red-zone words
 * that changed (printing which). */
static int stub_call_damage(const void *fn, int entry)
{
	uint64_t out[18];
	rvt_test_stub_regs(fn, entry, out);
	int bad = 0;
	for (int k = 0; k < 17; k++) {
		if (k == 10)
			continue; /* r11: declared clobbered */
		uint64_t want = k == 15 ? SENT(200) : k == 16 ? SENT(215) : SENT(k);
		if (k == 0)
			want = (uint64_t)(uintptr_t)fn;
		if (out[k] != want) {
			print_message("%s changed: %#llx\n", reg_names[k],
				      (unsigned long long)out[k]);
			bad++;
		}
	}
	return bad + (int)out[17];
}

static void stub_target(void)
{
}

static void test_stubs_untraced_preserve_every_register(void **state)
{
	(void)state;
	assert_int_equal(rvt_is_tracing(0), 0);
	assert_int_equal(stub_call_damage((const void *)stub_target, 1), 0);
	assert_int_equal(stub_call_damage((const void *)stub_target, 0), 0);
}

static void test_stubs_traced_preserve_registers_and_write_slots(void **state)
{
	(void)state;
	assert_int_equal(rvt_start(0), 0);
	/* The first call adopts the ring (the C slow path). */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(stub_call_damage((const void *)stub_target, 1), 0);
		assert_int_equal(stub_call_damage((const void *)stub_target, 0), 0);
	}
	assert_int_equal(rvt_stop(0, 0), 0);
	uint64_t size = 0;
	int fd = rvt_capture_to_memfd(0, &size);
	assert_true(fd >= 0);
	struct cu_capture c;
	assert_int_equal(cu_parse_fd(fd, &c), 0);
	close(fd);
	uint64_t want = (uint64_t)(uintptr_t)stub_target - c.method_base;
	assert_int_equal(c.nevents, 6);
	for (size_t i = 0; i < c.nevents; i++) {
		assert_int_equal(c.events[i].entry, i % 2 == 0);
		if (c.events[i].entry)
			assert_int_equal(c.events[i].value, want);
	}
	cu_release(&c);
	assert_int_equal(rvt_stop(0, 1), 0);
}

struct stopper {
	pid_t tid;
	int rc;
};

static void *stopper_main(void *arg)
{
	struct stopper *s = arg;
	for (int i = 0; i < 20; i++) {
		int fd = rvt_capture_to_memfd(s->tid, NULL);
		if (fd < 0) {
			s->rc = fd;
			return NULL;
		}
		close(fd);
	}
	s->rc = rvt_stop(s->tid, 0);
	return NULL;
}

static void test_stubs_captures_and_stop_from_another_thread_preserve_registers(void **state)
{
	(void)state;
	assert_int_equal(rvt_start(0), 0);
	assert_int_equal(stub_call_damage((const void *)stub_target, 1), 0);
	struct stopper s = {.tid = rvt_gettid(), .rc = 1};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, stopper_main, &s), 0);
	/* Each capture makes the next call adopt a ring and write a CLOCK
	 * record (the stub's C slow paths); the registers survive them. */
	unsigned long calls = 0;
	while (RVT__LD(rvt__tls.start) != 0) {
		assert_int_equal(stub_call_damage((const void *)stub_target, calls & 1), 0);
		calls++;
	}
	pthread_join(th, NULL);
	assert_int_equal(s.rc, 0);
	assert_int_equal(rvt_is_tracing(0), 0);
	assert_int_equal(stub_call_damage((const void *)stub_target, 1), 0);
	assert_int_equal(rvt_stop(0, 1), 0);
}
#else
static void test_stubs_untraced_preserve_every_register(void **state)
{
	(void)state;
	skip();
}
static void test_stubs_traced_preserve_registers_and_write_slots(void **state)
{
	(void)state;
	skip();
}
static void test_stubs_captures_and_stop_from_another_thread_preserve_registers(void **state)
{
	(void)state;
	skip();
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stubs_untraced_preserve_every_register),
		cmocka_unit_test(test_stubs_traced_preserve_registers_and_write_slots),
		cmocka_unit_test(
			test_stubs_captures_and_stop_from_another_thread_preserve_registers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
