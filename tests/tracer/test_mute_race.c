/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_mute_race.c — muting races captures, and no capture is ever damaged
 * (integration tier: a few seconds on four threads).
 *
 * Three traced workers run the mute fixture's phases (mute_fix.c: in each
 * phase one function of a family is hot, and one call in 8192 blocks inside
 * it for 3 ms, so frames are open while their function is muted; rec()
 * recurses around tiny() now and then), one in each mode — call, inline
 * and late (rvcc's GCC plugin; where the build has none, call again) —
 * while the budget mutes one hot function after another.  Meanwhile the
 * main thread captures each worker's ring twice per phase (then moves all
 * to the next phase; every fourth phase first waits for the budget to have
 * muted one function per four phases) and checks every capture's tree, and
 * goes on capturing in the last phase while the budget rechecks its muted
 * functions (their sites reopened for a moment) three times: no exit without an
 * entry beyond the few frames that were open when the ring's oldest slot
 * was written, never deeper than the fixture goes, phase_loop() always a
 * root and every other frame directly under the function that calls it (or,
 * once rec() is muted, tiny() right under phase_loop()).
 * And no signal reaches the program.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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

#define WORKERS 3
#define PHASES	MF_FAMILY
/* phase_loop > rec ×5 > tiny, and the frames open when tracing started. */
#define MAX_DEPTH 10

static _Atomic int traps;

static void on_trap(int sig)
{
	(void)sig;
	atomic_fetch_add(&traps, 1);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static _Atomic int phase; /* PHASES: stop */

struct worker {
	int mode; /* 0 call mode's functions, 1 inline mode's, 2 late mode's */
	_Atomic pid_t tid;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	pid_t tid = rvt_thread_register();
	if (rvt_start(0) != 0)
		return NULL;
	w->tid = tid;
	long sink = 0;
	for (int p; (p = atomic_load(&phase)) < PHASES;)
		sink += w->mode == 1 ? mi_phase_loop(p, 20000)
#ifdef MUTE_LATE
			: w->mode == 2 ? ml_phase_loop(p, 20000)
#endif
				       : mc_phase_loop(p, 20000);
	if (sink == 42)
		print_message("(unlikely)\n");
	rvt_stop(0, 0);
	return NULL;
}

struct names {
	uint64_t loop, rec, tiny, fam[MF_FAMILY];
};

static uint64_t value_of(const void *fn)
{
	return (uint64_t)(uintptr_t)fn - rvt_method_base;
}

static int is_fam(const struct names *n, uint64_t v)
{
	for (int i = 0; i < MF_FAMILY; i++)
		if (n->fam[i] == v)
			return 1;
	return 0;
}

/* Checks one capture's tree; the first fault into why[] and -1.  `rec_muted`:
 * rec() was muted by then (it is called often enough to be), so tiny() may
 * sit right under phase_loop(), its caller's frame no longer recorded. */
static int check_tree(const struct cu_capture *c, const struct names *n, int rec_muted, char *why,
		      size_t len)
{
	uint64_t stack[MAX_DEPTH + 1];
	long depth = 0, leading = 0;
	for (size_t i = 0; i < c->nevents; i++) {
		const struct cu_event *e = &c->events[i];
		if (!e->entry) {
			if (depth > 0) {
				depth--;
			} else if (++leading > MAX_DEPTH) {
				snprintf(why, len, "event %zu: %ld exits without an entry", i,
					 leading);
				return -1;
			}
			continue;
		}
		uint64_t parent = depth > 0 ? stack[depth - 1] : 0;
		/* The worker's loop is not traced: phase_loop is a root. */
		if ((e->value == n->loop && depth > 0) ||
		    (is_fam(n, e->value) && depth > 0 && parent != n->loop) ||
		    (e->value == n->rec && depth > 0 && parent != n->loop && parent != n->rec) ||
		    (e->value == n->tiny && depth > 0 && parent != n->rec &&
		     !(rec_muted && parent == n->loop))) {
			snprintf(why, len, "event %zu: %s inside %s", i, cu_name(c, e->value),
				 cu_name(c, parent));
			return -1;
		}
		if (depth == MAX_DEPTH) {
			snprintf(why, len, "event %zu: deeper than %d frames", i, MAX_DEPTH);
			return -1;
		}
		stack[depth++] = e->value;
	}
	return 0;
}

/* How many functions are muted; whether method `a` or `b` is one. */
static size_t muted_now(uint64_t a, uint64_t b, int *either)
{
	static struct rvt_muted buf[RVT_MUTED_MAX];
	size_t n = rvt_mute_list(buf, RVT_MUTED_MAX);
	*either = 0;
	for (size_t i = 0; i < n; i++)
		*either |= buf[i].value == a || buf[i].value == b;
	return n;
}

/* Captures worker x's ring and checks its tree (phase p, capture number
 * `n`); 1 when it is damaged (said why). */
static int capture_checked(const struct worker *x, const struct names *nm, int p, unsigned n,
			   unsigned *events)
{
	uint64_t size = 0;
	int fd = rvt_capture_to_memfd(x->tid, &size);
	assert_true(fd >= 0);
	struct cu_capture c;
	assert_int_equal(cu_parse_fd(fd, &c), 0);
	close(fd);
	char why[256];
	int rec_muted, failed = 0;
	static const char *const modes[] = {"call", "inline", "late"};
	muted_now(nm[x->mode].rec, nm[x->mode].rec, &rec_muted);
	if (check_tree(&c, &nm[x->mode], rec_muted, why, sizeof(why)) != 0) {
		print_message("phase %d, capture %u (%s mode, %zu events): %s\n", p, n,
			      modes[x->mode], c.nevents, why);
		failed = 1;
	}
	*events += (unsigned)c.nevents;
	cu_release(&c);
	usleep(5000);
	return failed;
}

static void test_mute_race_captures_stay_whole(void **state)
{
	(void)state;
	int rc = rvt_set_mute("on");
	if (rc == -ENOTSUP)
		skip(); /* no x86-64 hand-written hooks in this build */
	assert_int_equal(rc, 0);
	assert_int_equal(rvt_set_config(1u << 20, 2 * WORKERS + 2), 0);
	struct sigaction mine, now;
	memset(&mine, 0, sizeof(mine));
	mine.sa_handler = on_trap;
	sigemptyset(&mine.sa_mask);
	assert_int_equal(sigaction(SIGTRAP, &mine, NULL), 0);

	struct names nm[3];
	memset(nm, 0, sizeof(nm));
	nm[0].loop = value_of((const void *)mc_phase_loop);
	nm[0].rec = value_of((const void *)mc_rec);
	nm[0].tiny = value_of((const void *)mc_tiny);
	nm[1].loop = value_of((const void *)mi_phase_loop);
	nm[1].rec = value_of((const void *)mi_rec);
	nm[1].tiny = value_of((const void *)mi_tiny);
#ifdef MUTE_LATE
	nm[2].loop = value_of((const void *)ml_phase_loop);
	nm[2].rec = value_of((const void *)ml_rec);
	nm[2].tiny = value_of((const void *)ml_tiny);
	const int modes = 3;
#else
	const int modes = 2;
#endif
	for (int i = 0; i < MF_FAMILY; i++) {
		nm[0].fam[i] = value_of((const void *)mc_family[i]);
		nm[1].fam[i] = value_of((const void *)mi_family[i]);
#ifdef MUTE_LATE
		nm[2].fam[i] = value_of((const void *)ml_family[i]);
#endif
	}

	struct worker w[WORKERS];
	pthread_t th[WORKERS];
	atomic_store(&phase, 0);
	for (int i = 0; i < WORKERS; i++) {
		w[i] = (struct worker){i % modes, 0};
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	double deadline = now_s() + 300;
	for (int i = 0; i < WORKERS; i++)
		while (!atomic_load(&w[i].tid) && now_s() < deadline)
			usleep(1000);
	unsigned captures = 0, events = 0;
	int failed = 0;
	for (int p = 0; p < PHASES && !failed && now_s() < deadline; p++) {
		atomic_store(&phase, p);
		for (int k = 0; k < 2 * WORKERS && !failed; k++) {
			failed = capture_checked(&w[k % WORKERS], nm, p, captures, &events);
			captures++;
		}
		/* The budget thread mutes on its own schedule, which a loaded
		 * machine may starve: every fourth phase, while mutes lag behind
		 * one per four phases, the phase goes on (its workers run, its
		 * function hot) until the budget mutes the phase's function. */
		for (int its = 0, late = 0; p % 4 == 3 && now_s() < deadline; usleep(2000))
			if (muted_now(nm[0].fam[p], nm[1].fam[p], &its) >= (size_t)(p + 1) / 4 ||
			    its || (modes > 2 && (muted_now(nm[2].fam[p], 0, &late), late)))
				break;
	}
	/* The last phase goes on, captured, while the budget rechecks its
	 * muted functions three times (mute.c: their sites reopened for a
	 * moment, then muted again) — sooner with a larger budget: the workers
	 * mostly wait, and a recheck is due after the traced threads ran
	 * RECHECK_DIV / budget times its cost. */
	assert_int_equal(rvt_set_mute("10%"), 0);
	uint64_t cost0 = 0, r0 = rvt_mute_rechecks(&cost0);
	unsigned after = 0;
	while (!failed && rvt_mute_rechecks(NULL) < r0 + 3 && now_s() < deadline) {
		failed = capture_checked(&w[after % WORKERS], nm, PHASES - 1, captures + after,
					 &events);
		after++;
	}
	uint64_t cost1 = 0;
	uint64_t rechecked = rvt_mute_rechecks(&cost1) - r0;
	atomic_store(&phase, PHASES);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	struct rvt_muted buf[RVT_MUTED_MAX];
	size_t muted = rvt_mute_list(buf, RVT_MUTED_MAX);
	print_message("%u captures (%u events), %zu functions muted meanwhile; then %u captures "
		      "during %llu rechecks (%.2f ms each)\n",
		      captures, events, muted, after, (unsigned long long)rechecked,
		      rechecked ? (double)(cost1 - cost0) / 1e6 / (double)rechecked : 0.0);
	assert_false(failed);
	/* The race was run: captures, and mutes between them. */
	assert_int_equal(captures, 2 * WORKERS * PHASES);
	assert_true(muted >= PHASES / 4);
	assert_true(rechecked >= 3);
	assert_int_equal(atomic_load(&traps), 0);
	assert_int_equal(sigaction(SIGTRAP, NULL, &now), 0);
	assert_ptr_equal(now.sa_handler, on_trap);
	signal(SIGTRAP, SIG_DFL);
	for (int i = 0; i < WORKERS; i++)
		rvt_stop(w[i].tid, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mute_race_captures_stay_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
