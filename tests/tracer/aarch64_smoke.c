/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aarch64_smoke.c — librvtrace on aarch64, cross-built and run under
 * qemu-user by `make check` (no cmocka for arm64 here: it prints TAP
 * itself).  Checks the hand-written call-mode hooks (hooks-aarch64.S)
 * against inline mode, the cntvct_el0 clock fields, two-slot entries, a stop
 * (a handover, no signal) of a thread blocked in read(), wrap-around with
 * entries straddling the wrap point through the hooks and the manual API,
 * start/stop cycles against a thread running the hooks hot, and the call
 * tree across longjmp, siglongjmp and pthread_exit (unwind.c: the hooks'
 * shadow stack and the aarch64 jmp_buf), and the EXIT_OF record of a frame
 * begun before tracing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture_util.h"
#include "fixture.h"
#include "unwind_fix.h"
#include "rearview/trace.h"
#include "wrap_check.h"

static int failures, count;

static void check(int ok, const char *name)
{
	count++;
	printf("%s %d - %s\n", ok ? "ok" : "not ok", count, name);
	if (!ok)
		failures++;
}

static int capture(pid_t tid, struct cu_capture *c)
{
	uint64_t size;
	int fd = rvt_capture_to_memfd(tid, &size);
	if (fd < 0)
		return fd;
	int rc = cu_parse_fd(fd, c);
	close(fd);
	return rc;
}

static int index_of(const struct cu_capture *c, uint64_t v, const void *const fns[3])
{
	for (int k = 0; k < 3; k++)
		if (v + c->method_base == (uint64_t)(uintptr_t)fns[k])
			return k;
	return -1;
}

static int modes_identical(void)
{
	if (rvt_start(0) != 0)
		return 0;
	call_top(2);
	inl_top(2);
	rvt_enter((const void *)(uintptr_t)0x1000); /* below the base: two slots */
	rvt_exit();
	rvt_stop(0, 0);
	struct cu_capture c;
	if (capture(0, &c) != 0)
		return 0;
	int ok = c.arch == 2 && c.counter_hz > 0 && c.nevents >= 20;
	uint64_t f;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	ok = ok && c.counter_hz == f;
	/* Find the call-mode top, compare the 10 events after it to inline's. */
	long a = -1, b = -1;
	for (size_t i = 0; i < c.nevents; i++) {
		if (!c.events[i].entry)
			continue;
		if (a < 0 && index_of(&c, c.events[i].value, call_functions) == 0)
			a = (long)i;
		if (b < 0 && index_of(&c, c.events[i].value, inl_functions) == 0)
			b = (long)i;
	}
	ok = ok && a >= 0 && b > a && (size_t)b + 10 <= c.nevents;
	for (int k = 0; ok && k < 10; k++) {
		const struct cu_event *x = &c.events[a + k], *y = &c.events[b + k];
		ok = x->entry == y->entry &&
		     (!x->entry || (index_of(&c, x->value, call_functions) >= 0 &&
				    index_of(&c, x->value, call_functions) ==
					    index_of(&c, y->value, inl_functions)));
	}
	const struct cu_event *last = &c.events[c.nevents - 2];
	ok = ok && last->entry && last->value == 0x1000 - c.method_base;
	for (size_t i = 1; ok && i < c.nevents; i++)
		ok = c.events[i].ts >= c.events[i - 1].ts;
	cu_release(&c);
	rvt_stop(0, 1);
	return ok;
}

/* A frame begun before tracing started, in call mode (the hooks) and in
 * inline mode (the C trace point): its exit comes with an EXIT_OF naming
 * the function, and the ring with a STACK record (FORMAT.md §1). */
static int named_exit(int (*start_inside)(void))
{
	rvt_stop(0, 1);
	if (start_inside() != 0)
		return 0;
	rvt_stop(0, 0);
	struct cu_capture c;
	if (capture(0, &c) != 0)
		return 0;
	int ok = c.nexit_of == 1 && c.nstacks >= 1 && c.nevents == 3 && !c.events[2].entry &&
		 c.events[2].value + c.method_base == (uint64_t)(uintptr_t)start_inside;
	cu_release(&c);
	rvt_stop(0, 1);
	return ok;
}

static int pipefd[2];
static volatile int worker_tid;

static void *blocked(void *arg)
{
	(void)arg;
	rvt_thread_register();
	worker_tid = (int)syscall(SYS_gettid);
	char ch;
	while (read(pipefd[0], &ch, 1) < 0 && errno == EINTR)
		;
	call_top(1);
	return NULL;
}

static int stop_blocked_thread(void)
{
	pthread_t th;
	if (pipe(pipefd) != 0 || pthread_create(&th, NULL, blocked, NULL) != 0)
		return 0;
	while (!worker_tid)
		usleep(1000);
	int ok = 1;
	for (int i = 0; i < 20 && ok; i++)
		ok = rvt_start(worker_tid) == 0 && rvt_stop(worker_tid, 0) == 0 &&
		     !rvt_is_tracing(worker_tid);
	ok = ok && rvt_start(worker_tid) == 0;
	ok = ok && write(pipefd[1], "x", 1) == 1;
	pthread_join(th, NULL);
	struct cu_capture c;
	ok = ok && capture(worker_tid, &c) == 0;
	if (ok) {
		ok = c.nevents >= 6 && index_of(&c, c.events[0].value, call_functions) == 0;
		cu_release(&c);
	}
	return ok;
}

/* Start/stop cycles against a thread running the hooks hot: each stop is a
 * handover (membarrier, then waiting out a trace point in flight). */
static _Atomic int hot_tid, hot_stop;
static _Atomic unsigned long hot_calls;

static void *hot_main(void *arg)
{
	(void)arg;
	rvt_thread_register();
	hot_tid = (int)syscall(SYS_gettid);
	while (!hot_stop) {
		call_top(2);
		hot_calls++;
	}
	return NULL;
}

static int start_stop_while_hot(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, hot_main, NULL) != 0)
		return 0;
	while (hot_tid == 0)
		usleep(1000);
	int ok = rvt_set_config(8192, 0) == 0;
	for (int i = 0; ok && i < 200; i++) {
		ok = rvt_start(hot_tid) == 0;
		usleep(200);
		if (ok && i % 50 == 0) {
			struct cu_capture c;
			ok = capture(hot_tid, &c) == 0;
			for (size_t k = 1; ok && k < c.nevents; k++)
				ok = c.events[k].ts >= c.events[k - 1].ts;
			if (ok)
				cu_release(&c);
		}
		ok = ok && rvt_stop(hot_tid, i % 10 == 0) == 0 && !rvt_is_tracing(hot_tid);
	}
	hot_stop = 1;
	pthread_join(th, NULL);
	return ok && hot_calls > 0 && rvt_set_config(RVT_DEFAULT_BUFFER_BYTES, 0) == 0;
}

static int wrap(const struct wc_points *p, const char *name)
{
	char why[128];
	if (wc_check_wrap(p, why, sizeof(why)) == 0)
		return 1;
	printf("# %s: %s\n", name, why);
	return 0;
}

/* top(a(b(c(d(leaf()))))after(after_inner())); symbols are stubbed here
 * (every name is empty), so the shape is what is compared. */
#define JUMP_TREE "(((((()))))(()))"

/* Captures the calling thread (or the exited `tid`) and compares its tree
 * with `want`. */
static int tree_is(pid_t tid, const char *want)
{
	struct cu_capture c;
	if (capture(tid, &c) != 0)
		return 0;
	char *got = cu_render_tree(&c, "");
	int ok = got && strcmp(got, want) == 0;
	if (!ok)
		printf("# got %s\n# want %s\n", got ? got : "(null)", want);
	free(got);
	cu_release(&c);
	return ok;
}

static void *exiter(void *arg)
{
	*(_Atomic int *)arg = (int)syscall(SYS_gettid);
	if (rvt_start(0) == 0)
		uc_top(UF_PTHREAD_EXIT);
	return NULL;
}

static int unwind_trees(void)
{
	struct cu_capture c;
	if (rvt_start(0) != 0 || capture(0, &c) != 0)
		return 0;
	cu_release(&c);
	uc_top(UF_LONGJMP);
	uc_top(UF_SIGLONGJMP);
	int ok = tree_is(0, JUMP_TREE JUMP_TREE);
	ui_top(UF__LONGJMP);
	ok = tree_is(0, JUMP_TREE) && ok;
	_Atomic int tid = 0;
	pthread_t th;
	if (pthread_create(&th, NULL, exiter, &tid) != 0)
		return 0;
	pthread_join(th, NULL);
	return tree_is(tid, "(((((())))))") && ok;
}

int main(void)
{
	printf("1..7\n");
	check(modes_identical(), "aarch64_call_and_inline_modes_write_identical_buffers");
	check(stop_blocked_thread(), "aarch64_stop_thread_blocked_in_read_completes");
	check(wrap(&wc_hooks, "hooks"), "aarch64_hooks_wrap_straddling_two_slot_entries_decodes");
	check(wrap(&wc_manual, "manual"),
	      "aarch64_manual_wrap_straddling_two_slot_entries_decodes");
	check(start_stop_while_hot(), "aarch64_start_stop_cycles_while_hot_stay_consistent");
	check(unwind_trees(), "aarch64_longjmp_and_thread_exit_trees_exact");
	check(named_exit(call_start_inside) && named_exit(inl_start_inside),
	      "aarch64_frame_begun_before_tracing_named_at_its_exit");
	return failures ? 1 : 0;
}
