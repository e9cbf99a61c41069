/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ring.c — ring buffers and captures on the calling thread: the call
 * chain of a real instrumented program found by name, call and inline mode
 * writing identical buffers, wrap-around with one- and two-slot entries
 * straddling the wrap point, untraced threads writing nothing, and the
 * buffer limit's spare for captures (or the LOSS record when none is had).
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_util.h"
#include "fixture.h"
#include "rearview/trace.h"
#include "tracer-int.h"
#include "wrap_check.h"

static void capture_self(struct cu_capture *c)
{
	uint64_t size = 0;
	int fd = rvt_capture_to_memfd(0, &size);
	assert_true(fd >= 0);
	assert_true(size > 128);
	assert_int_equal(cu_parse_fd(fd, c), 0);
	close(fd);
}

static void test_ring_capture_finds_call_chain_by_name(void **state)
{
	(void)state;
	assert_int_equal(rvt_start(0), 0);
	assert_int_equal(rvt_is_tracing(0), 1);
	assert_int_equal(call_top(2), 4);
	assert_int_equal(rvt_stop(0, 0), 0);
	struct cu_capture c;
	capture_self(&c);
	long i = cu_find_entry(&c, "call_top", 0);
	assert_true(i >= 0);
	assert_int_equal(cu_find_entry(&c, "call_top", (size_t)i + 1), i + 1);
	assert_int_equal(cu_find_entry(&c, "call_top", (size_t)i + 2), i + 2);
	assert_int_equal(cu_find_entry(&c, "call_middle", (size_t)i), i + 3);
	assert_int_equal(cu_find_entry(&c, "call_leaf", (size_t)i), i + 4);
	/* Five entries, then five exits. */
	assert_true(c.nevents >= (size_t)i + 10);
	for (long k = i + 5; k < i + 10; k++)
		assert_int_equal(c.events[k].entry, 0);
	for (size_t k = 1; k < c.nevents; k++)
		assert_true(c.events[k].ts >= c.events[k - 1].ts);
	assert_true(c.nmodules >= 1);
	assert_true(c.has_cmdline);
	assert_true(strstr(c.exe, "test_ring") != NULL);
	assert_int_equal(c.tid, (uint32_t)rvt_gettid());
	/* FORMAT.md: the smallest shift for which 2^32 ticks span ≥ 180 s. */
	assert_true(c.counter_hz >= 1000000 && c.counter_hz <= 100000000000ull);
	assert_true((1ull << (32 + c.shift)) >= 180 * c.counter_hz);
	if (c.shift > 0)
		assert_true((1ull << (31 + c.shift)) < 180 * c.counter_hz);
	cu_release(&c);
	assert_int_equal(rvt_stop(0, 1), 0);
}

#if defined(__x86_64__)
static uint64_t raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The counter's rate as the test measures it itself over `span` ns: the
 * reads bracketed (retried while a preemption splits them). */
static double independent_hz(uint64_t span)
{
	uint64_t c0, t0, c1, t1;
	for (;;) {
		uint64_t a = rvt__counter();
		t0 = raw_ns();
		uint64_t b = rvt__counter();
		c0 = a + (b - a) / 2;
		if (b - a < 100000)
			break;
	}
	while (raw_ns() - t0 < span)
		;
	for (;;) {
		uint64_t a = rvt__counter();
		t1 = raw_ns();
		uint64_t b = rvt__counter();
		c1 = a + (b - a) / 2;
		if (b - a < 100000)
			break;
	}
	return (double)(c1 - c0) * 1e9 / (double)(t1 - t0);
}
#endif

/* The TSC's rate is not slept for at start (a 10 ms nap cost every traced
 * process 10 ms: all of a short zstd run's overhead, issue 14); a capture
 * taken after 20 ms carries the rate measured over the whole run, which
 * agrees with the test's own measurement to 0.1 %. */
static void test_ring_counter_hz_measured_over_the_run_agrees(void **state)
{
	(void)state;
#if defined(__x86_64__)
	assert_int_equal(rvt_start(0), 0);
	double hz = independent_hz(60 * 1000 * 1000);
	assert_int_equal(call_top(2), 4);
	assert_int_equal(rvt_stop(0, 0), 0);
	struct cu_capture c;
	capture_self(&c);
	double diff = ((double)c.counter_hz - hz) / hz;
	printf("# counter_hz %" PRIu64 ", measured here %.0f (%+.5f %%)\n", c.counter_hz, hz,
	       diff * 100);
	assert_true(diff < 1e-3 && diff > -1e-3);
	cu_release(&c);
	assert_int_equal(rvt_stop(0, 1), 0);
#else
	skip();
#endif
}

/* Maps each event to (entry, function index) so two copies compare. */
static int fn_index(const struct cu_capture *c, uint64_t value, const void *const fns[3])
{
	for (int k = 0; k < 3; k++)
		if (value + c->method_base == (uint64_t)(uintptr_t)fns[k])
			return k;
	return -1;
}

static void test_ring_call_and_inline_modes_write_identical_buffers(void **state)
{
	(void)state;
	assert_int_equal(rvt_start(0), 0);
	call_top(4);
	inl_top(4);
	assert_int_equal(rvt_stop(0, 0), 0);
	struct cu_capture c;
	capture_self(&c);
	long a = cu_find_entry(&c, "call_top", 0);
	long b = cu_find_entry(&c, "inl_top", 0);
	assert_true(a >= 0 && b > a);
	size_t n = 14; /* 5 top + middle + leaf = 7 entries, 7 exits */
	assert_true((size_t)b + n <= c.nevents);
	for (size_t k = 0; k < n; k++) {
		const struct cu_event *x = &c.events[(size_t)a + k], *y = &c.events[(size_t)b + k];
		assert_int_equal(x->entry, y->entry);
		if (x->entry) {
			int fx = fn_index(&c, x->value, call_functions);
			assert_true(fx >= 0);
			assert_int_equal(fx, fn_index(&c, y->value, inl_functions));
		}
	}
	cu_release(&c);
	assert_int_equal(rvt_stop(0, 1), 0);
}

/* Wrap-around with entries straddling the wrap point (wrap_check.c), through
 * the manual API and through the call-mode hooks (hand-written on x86-64). */
static void test_ring_wrap_straddling_two_slot_entries_decodes(void **state)
{
	(void)state;
	char why[128];
	if (wc_check_wrap(&wc_manual, why, sizeof(why)) != 0)
		fail_msg("manual: %s", why);
}

static void test_ring_hooks_wrap_straddling_two_slot_entries_decodes(void **state)
{
	(void)state;
	char why[128];
	if (wc_check_wrap(&wc_hooks, why, sizeof(why)) != 0)
		fail_msg("hooks: %s", why);
}

static void test_ring_untraced_thread_records_nothing(void **state)
{
	(void)state;
	call_top(2);
	uint64_t size;
	assert_int_equal(rvt_capture_to_memfd(0, &size), -ENODATA);
	assert_int_equal(rvt_stop(4 << 22, 0), -ESRCH);
}

static void test_ring_capture_resumes_tracing_in_fresh_buffer(void **state)
{
	(void)state;
	assert_int_equal(rvt_start(0), 0);
	call_top(1);
	struct cu_capture c;
	capture_self(&c); /* while tracing: freeze and swap */
	assert_true(cu_find_entry(&c, "call_top", 0) >= 0);
	cu_release(&c);
	assert_int_equal(rvt_is_tracing(0), 1);
	inl_top(1);
	assert_int_equal(rvt_stop(0, 0), 0);
	capture_self(&c);
	assert_int_equal(cu_find_entry(&c, "call_top", 0), -1);
	assert_true(cu_find_entry(&c, "inl_top", 0) >= 0);
	cu_release(&c);
	assert_int_equal(rvt_stop(0, 1), 0);
}

/* A registered thread blocked in read() on a pipe until released. */
struct idler {
	pthread_t th;
	_Atomic int tid;
	int pipe[2];
};

static void *idler_main(void *arg)
{
	struct idler *d = arg;
	d->tid = (int)syscall(SYS_gettid);
	char ch;
	while (read(d->pipe[0], &ch, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static void idler_start(struct idler *d)
{
	memset(d, 0, sizeof(*d));
	assert_int_equal(pipe(d->pipe), 0);
	assert_int_equal(pthread_create(&d->th, NULL, idler_main, d), 0);
	while (d->tid == 0)
		sched_yield();
}

static void idler_join(struct idler *d)
{
	assert_int_equal(write(d->pipe[1], "x", 1), 1);
	pthread_join(d->th, NULL);
	close(d->pipe[0]);
	close(d->pipe[1]);
}

static void test_ring_buffer_limit_allows_one_spare_for_a_capture(void **state)
{
	(void)state;
	struct idler d;
	idler_start(&d);
	assert_int_equal(rvt_set_config(0, 1), 0);
	assert_int_equal(rvt_start(0), 0);
	/* A second thread does not fit the limit... */
	assert_int_equal(rvt_start(d.tid), -ENOBUFS);
	call_top(1);
	uint64_t size;
	/* ...but a capture's spare does: tracing goes on through it. */
	int fd = rvt_capture_to_memfd(0, &size);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rvt_is_tracing(0), 1);
	assert_int_equal(rvt_start(d.tid), -ENOBUFS);
	assert_int_equal(rvt_stop(0, 1), 0);
	assert_int_equal(rvt_set_config(0, RVT_DEFAULT_MAX_BUFFERS), 0);
	idler_join(&d);
}

static void test_ring_capture_without_spare_marks_the_loss(void **state)
{
	(void)state;
	struct idler d;
	idler_start(&d);
	assert_int_equal(rvt_set_config(0, 2), 0);
	assert_int_equal(rvt_start(0), 0);
	assert_int_equal(rvt_start(d.tid), 0);
	/* Two rings live and the limit lowered to one: no spare to be had. */
	assert_int_equal(rvt_set_config(0, 1), 0);
	call_top(1);
	struct cu_capture c;
	capture_self(&c);
	assert_int_equal(c.nlosses, 0);
	uint64_t frozen = c.ref_counter >> c.shift;
	cu_release(&c);
	/* Stopped at the freeze, resumed once the capture was built... */
	assert_int_equal(rvt_is_tracing(0), 1);
	inl_top(1);
	assert_int_equal(rvt_stop(0, 0), 0);
	capture_self(&c);
	/* ...in a ring that says what it missed: from the freeze on. */
	assert_int_equal(c.nlosses, 1);
	assert_int_equal(c.loss_from, frozen);
	assert_true(cu_find_entry(&c, "inl_top", 0) >= 0);
	cu_release(&c);
	assert_int_equal(rvt_stop(0, 1), 0);
	assert_int_equal(rvt_stop(d.tid, 1), 0);
	assert_int_equal(rvt_set_config(0, RVT_DEFAULT_MAX_BUFFERS), 0);
	idler_join(&d);
}

int modfix_outer(int x);
int modinl_outer(int x);

/* Traces outer(1) of an instrumented shared library, then call_top(0) of the
 * executable; checks outer's chain by name, that the library's entries take
 * two slots (it is mapped far from the executable) and that both modules
 * are in the capture. */
static void check_library_chain(int (*outer)(int), const char *outer_name, const char *inner_name)
{
	assert_int_equal(rvt_start(0), 0);
	assert_int_equal(outer(1), 9);
	call_top(0);
	assert_int_equal(rvt_stop(0, 0), 0);
	struct cu_capture c;
	capture_self(&c);
	long a = cu_find_entry(&c, outer_name, 0);
	assert_true(a >= 0);
	assert_int_equal(cu_find_entry(&c, inner_name, (size_t)a), a + 1);
	assert_true((size_t)a + 4 <= c.nevents);
	assert_int_equal(c.events[a + 2].entry, 0);
	assert_int_equal(c.events[a + 3].entry, 0);
	assert_true(cu_find_entry(&c, "call_leaf", (size_t)a) > a);
	assert_true(c.events[a].value >> 32 != 0);
	assert_true(c.nmodules >= 2);
	cu_release(&c);
	assert_int_equal(rvt_stop(0, 1), 0);
}

static void test_ring_multi_module_chain_found_by_name(void **state)
{
	(void)state;
	check_library_chain(modfix_outer, "modfix_outer", "modfix_inner");
}

/* libmodinl.so is modfix.c in inline mode: trace points inlined in a shared
 * object reach the stubs through the PLT and rvt__tls through the GOT. */
static void test_ring_inline_mode_shared_object_chain_found_by_name(void **state)
{
	(void)state;
	check_library_chain(modinl_outer, "modinl_outer", "modinl_inner");
}

/* A library opened, called and closed before the capture (dlfix.c): its
 * functions keep their names, not bare addresses, and its MODULE record. */
static void test_ring_closed_library_keeps_its_names(void **state)
{
	(void)state;
	void *h = dlopen(RVT_DLFIX, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	int (*outer)(int) = (int (*)(int))dlsym(h, "dlfix_outer");
	assert_non_null(outer);
	assert_int_equal(rvt_start(0), 0);
	assert_int_equal(outer(4), 5);
	assert_int_equal(dlclose(h), 0);
	/* Gone from the process: a new dlopen without loading finds nothing. */
	assert_null(dlopen(RVT_DLFIX, RTLD_NOW | RTLD_NOLOAD));
	call_top(0);
	assert_int_equal(rvt_stop(0, 0), 0);
	struct cu_capture c;
	capture_self(&c);
	long a = cu_find_entry(&c, "dlfix_outer", 0);
	assert_true(a >= 0);
	assert_int_equal(cu_find_entry(&c, "dlfix_inner", (size_t)a), a + 1);
	assert_true(cu_find_entry(&c, "call_leaf", (size_t)a) > a);
	assert_true(c.nmodules >= 2);
	cu_release(&c);
	assert_int_equal(rvt_stop(0, 1), 0);
}

#ifdef RVT__INLINE_STUBS
/* The test program's own gate (trace-inline.h, "The gate"), which its
 * inline-mode fixtures define. */
extern unsigned char rvt__gate __attribute__((__visibility__("hidden")));
#endif

/* The gates are open while some thread traces and closed while none does;
 * a module opened meanwhile starts with its gate open (its functions are
 * recorded), and a module closed is forgotten: stopping after its dlclose
 * writes no byte of its unmapped gate. */
static void test_ring_gates_follow_tracing_across_dlopen_and_dlclose(void **state)
{
	(void)state;
#ifndef RVT__INLINE_STUBS
	skip(); /* no gate: the trace point is C (ThreadSanitizer, portable) */
#else
	assert_int_equal(rvt_stop(0, 1), 0);
	assert_int_equal(__atomic_load_n(&rvt__gate, __ATOMIC_RELAXED), 0);
	assert_int_equal(rvt_start(0), 0);
	assert_int_equal(__atomic_load_n(&rvt__gate, __ATOMIC_RELAXED), 1);
	void *h = dlopen(RVT_DLINL, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	int (*outer)(int) = (int (*)(int))dlsym(h, "dlinl_outer");
	assert_non_null(outer);
	assert_int_equal(outer(4), 5);
	assert_int_equal(dlclose(h), 0);
	assert_null(dlopen(RVT_DLINL, RTLD_NOW | RTLD_NOLOAD));
	assert_int_equal(rvt_stop(0, 0), 0);
	assert_int_equal(__atomic_load_n(&rvt__gate, __ATOMIC_RELAXED), 0);
	struct cu_capture c;
	capture_self(&c);
	long a = cu_find_entry(&c, "dlinl_outer", 0);
	assert_true(a >= 0);
	assert_int_equal(cu_find_entry(&c, "dlinl_inner", (size_t)a), a + 1);
	cu_release(&c);
	/* Open and closed again, with the closed module's gate gone. */
	assert_int_equal(rvt_start(0), 0);
	assert_int_equal(__atomic_load_n(&rvt__gate, __ATOMIC_RELAXED), 1);
	assert_int_equal(rvt_stop(0, 1), 0);
	assert_int_equal(__atomic_load_n(&rvt__gate, __ATOMIC_RELAXED), 0);
#endif
}

/* A frame begun before tracing started, in call and inline mode: its exit
 * comes with an EXIT_OF record naming it (FORMAT.md §1). */
static void check_named_exit(int (*start_inside)(void), const char *name, const char *leaf)
{
	assert_int_equal(rvt_stop(0, 1), 0);
	assert_int_equal(start_inside(), 0);
	assert_int_equal(rvt_stop(0, 0), 0);
	struct cu_capture c;
	capture_self(&c);
	assert_int_equal(c.nexit_of, 1);
	assert_int_equal(c.nevents, 3); /* leaf entry and exit, then its exit */
	assert_string_equal(cu_name(&c, c.events[0].value), leaf);
	assert_false(c.events[2].entry);
	assert_non_null(cu_name(&c, c.events[2].value));
	assert_string_equal(cu_name(&c, c.events[2].value), name);
	cu_release(&c);
	assert_int_equal(rvt_stop(0, 1), 0);
}

static void test_ring_frame_begun_before_tracing_named_at_its_exit(void **state)
{
	(void)state;
	check_named_exit(call_start_inside, "call_start_inside", "call_leaf");
	check_named_exit(inl_start_inside, "inl_start_inside", "inl_leaf");
}

int cxxfix_call(int x);

static void test_ring_cxx_method_name_is_demangled(void **state)
{
	(void)state;
	assert_int_equal(rvt_start(0), 0);
	assert_int_equal(cxxfix_call(1), 2);
	assert_int_equal(rvt_stop(0, 0), 0);
	struct cu_capture c;
	capture_self(&c);
	assert_true(cu_find_entry(&c, "cxxfix_call", 0) >= 0);
	assert_true(cu_find_entry(&c, "cxxfix::Widget::run(int)", 0) >= 0);
	cu_release(&c);
	assert_int_equal(rvt_stop(0, 1), 0);
}

/* An interpreter's functions: keys with names only the runtime knows. */
struct script_fn {
	const char *name;
};

static int resolve_script(const void *key, char *buf, size_t len, void *arg)
{
	const struct script_fn *fns = arg;
	for (int i = 0; i < 2; i++)
		if (key == &fns[i]) {
			snprintf(buf, len, "lua:%s", fns[i].name);
			return 0;
		}
	return -1;
}

static void test_ring_manual_trace_points_named_by_resolver(void **state)
{
	(void)state;
	struct script_fn *fns = malloc(2 * sizeof(*fns)); /* in no module */
	assert_non_null(fns);
	fns[0].name = "main_chunk";
	fns[1].name = "helper";
	rvt_set_resolver(resolve_script, fns);
	assert_int_equal(rvt_start(0), 0);
	rvt_enter(&fns[0]);
	rvt_enter(&fns[1]);
	call_top(0); /* native code called from the script */
	rvt_exit();
	rvt_exit();
	assert_int_equal(rvt_stop(0, 0), 0);
	struct cu_capture c;
	capture_self(&c);
	long a = cu_find_entry(&c, "lua:main_chunk", 0);
	assert_true(a >= 0);
	assert_int_equal(cu_find_entry(&c, "lua:helper", (size_t)a), a + 1);
	assert_int_equal(cu_find_entry(&c, "call_top", (size_t)a), a + 2);
	cu_release(&c);
	rvt_set_resolver(NULL, NULL);
	assert_int_equal(rvt_stop(0, 1), 0);
	free(fns);
}

static long rss_pages(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, rss = 0;
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss;
}

static void test_ring_untouched_pages_stay_out_of_memory(void **state)
{
	(void)state;
	long before = rss_pages();
	assert_int_equal(rvt_start(0), 0); /* a 32 MiB ring */
	call_top(3);
	long after = rss_pages();
	/* A few slots were written: nowhere near 32 MiB became resident. */
	assert_true(after - before < (4l << 20) / getpagesize());
	assert_int_equal(rvt_stop(0, 1), 0);
}

static void own_view(void *arg, const struct rvt_ring_view *v)
{
	if (v->tid == (pid_t)syscall(SYS_gettid))
		*(struct rvt_ring_view *)arg = *v;
}

/* Pages of [a, a + n) resident now (mincore). */
static size_t resident(uintptr_t a, size_t n)
{
	size_t pg = (size_t)getpagesize(), k = 0;
	static unsigned char vec[RVT_RING_CHUNK / 4096];
	assert_true(n / pg <= sizeof(vec));
	assert_int_equal(mincore((void *)a, n, vec), 0);
	for (size_t i = 0; i < n / pg; i++)
		k += vec[i] & 1;
	return k;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A thread half-way through a chunk of its ring gets the next one filled by
 * the budget thread (rvt_ring_fill_ahead) before it writes there, and not
 * the one after. */
static void test_ring_budget_fills_the_next_chunk_ahead_of_the_writer(void **state)
{
	(void)state;
	assert_int_equal(rvt_set_mute("100%"), 0); /* looks, never mutes */
	assert_int_equal(rvt_start(0), 0);	   /* a 32 MiB ring */
	struct rvt_ring_view v = {0};
	size_t half = RVT_RING_CHUNK / 2 / sizeof(uint64_t), three_q = half * 3 / 2;
	static const char key[] = "fill";
	do { /* manual trace points: no earlier case can have muted them */
		for (int i = 0; i < 1000; i++) {
			rvt_enter(key);
			rvt_exit();
		}
		rvt_rings_view(own_view, &v);
		assert_non_null(v.slots);
	} while (v.cur < half);
	/* Still inside the first chunk (the ring starts at a chunk's start). */
	assert_true(v.cur < three_q);
	assert_int_equal((uintptr_t)v.slots % RVT_RING_CHUNK, 0);
	uintptr_t next = (uintptr_t)v.slots + RVT_RING_CHUNK;
	size_t want = RVT_RING_CHUNK / (size_t)getpagesize();
	double deadline = now_s() + 60;
	while (resident(next, RVT_RING_CHUNK) < want && now_s() < deadline) {
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(resident(next, RVT_RING_CHUNK), want);
	assert_int_equal(resident(next + RVT_RING_CHUNK, RVT_RING_CHUNK), 0);
	assert_int_equal(rvt_stop(0, 1), 0);
	assert_int_equal(rvt_set_mute("on"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_capture_finds_call_chain_by_name),
		cmocka_unit_test(test_ring_counter_hz_measured_over_the_run_agrees),
		cmocka_unit_test(test_ring_call_and_inline_modes_write_identical_buffers),
		cmocka_unit_test(test_ring_wrap_straddling_two_slot_entries_decodes),
		cmocka_unit_test(test_ring_hooks_wrap_straddling_two_slot_entries_decodes),
		cmocka_unit_test(test_ring_untraced_thread_records_nothing),
		cmocka_unit_test(test_ring_capture_resumes_tracing_in_fresh_buffer),
		cmocka_unit_test(test_ring_buffer_limit_allows_one_spare_for_a_capture),
		cmocka_unit_test(test_ring_capture_without_spare_marks_the_loss),
		cmocka_unit_test(test_ring_multi_module_chain_found_by_name),
		cmocka_unit_test(test_ring_inline_mode_shared_object_chain_found_by_name),
		cmocka_unit_test(test_ring_closed_library_keeps_its_names),
		cmocka_unit_test(test_ring_gates_follow_tracing_across_dlopen_and_dlclose),
		cmocka_unit_test(test_ring_frame_begun_before_tracing_named_at_its_exit),
		cmocka_unit_test(test_ring_cxx_method_name_is_demangled),
		cmocka_unit_test(test_ring_manual_trace_points_named_by_resolver),
		cmocka_unit_test(test_ring_untouched_pages_stay_out_of_memory),
		cmocka_unit_test(test_ring_budget_fills_the_next_chunk_ahead_of_the_writer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
