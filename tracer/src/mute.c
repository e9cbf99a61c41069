/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mute.c — the budget the tracer enforces itself, and what a capture says was
 * left out (the UNTRACED and MUTED records, FORMAT.md §2).
 *
 * The budget (on by default; RV_TRACE_MUTE, rvt_set_mute(), trace.h).  While
 * some thread traces, the budget thread looks at every traced thread now and
 * then: how many slots it wrote since the last look (its ring's write
 * position) against the CPU time it ran meanwhile (its thread CPU clock).
 * Slots × the measured cost of one trace point, over that CPU time, is the
 * share of the thread's CPU its trace points took.  Above the budget (1 % by
 * default) it reads the newest window of the thread's ring, pairs entries
 * and exits, and mutes the functions that give the most events for the
 * least self time until the projected share is a quarter of the budget.
 * It spares a function whose self time is a large share of the window (what
 * an engineer looks for) unless its own trace points alone cost the thread
 * more than the whole budget: a function called so often that keeping it
 * breaks the promise is muted all the same (gzip's longest_match, sqlite's
 * record compares, a recursive Lua function called a million times a
 * second); its MUTED record still says how often it ran.
 * Each muted function gets a MUTED record in every later capture (with its
 * call rate and median duration when muted); its time folds into its
 * callers' self time, which every view says ("self time includes untraced
 * callees").  Its MUTED_CALLERS record says into which callers' and what
 * share of their self time it was in the window it was muted from
 * (victim_callers), so a reader can estimate its time after the mute; now
 * and then the budget reopens muted functions for a moment and measures
 * that share again, over the whole run ("rechecks", below).
 *
 * How soon.  Most of what a short program pays is the events written before
 * the budget catches up with each new phase of it, and a timed look costs
 * the process ~25 µs of CPU per wakeup on a virtual machine, so the traced
 * threads wake the budget themselves: at every bound (RVT_BOUND_SLOTS
 * slots) a thread times its last stretch, and one that wrote faster than
 * the budget allows of even its wall time wakes the budget thread
 * (rvt__wake in tracer-int.h), at most every 1 ms.  Besides, the budget
 * looks 1 ms after a thread starts tracing, every 1 ms while it mutes or
 * exits wait, every 16 ms while a thread stays over the budget with more
 * to mute, and less and less often while the threads run under it or with
 * nothing left to mute (up to every 128 ms: a thread kept off the CPU
 * writes slower by the wall clock than by its own, so the wake can miss it)
 * or sleep (up to 400 ms).  A thread whose window gave nothing to mute
 * is not read again, nor wakes the budget, until its share doubles.  All of
 * a look's patches — its victims' entry sites and the exit sites of those
 * muted before whose frames are gone — go in together behind one barrier
 * (mute_publish), and a victim whose entry sites the scan found needs no
 * learning.
 *
 * Muting without traps.  A function's trace points are found by reading the
 * code of its module once (module_of): a module whose gate is registered,
 * before a look (prescan) in one pass over its gate's jumps (scan_gated);
 * another when one of its functions is first chosen.  rvcc's inline mode
 * compiles each into the gate check `cmpb $0, rvt__gate(%rip); jne COLD`
 * with, at COLD, the thread's check, the function's address loaded into
 * %rax and `call rvt__inl_enter/exit` (trace-inline.h); call mode is `call
 * __cyg_profile_func_enter/exit` after the function's address is loaded
 * into %rdi.  Muting changes one byte of each such instruction: a `call
 * rel32` becomes `cmp $imm32, %eax`, a `call *GOT(%rip)` becomes `cmp
 * GOT(%rip), %edx`, and the gate's `jne` becomes `jb` (never taken after a
 * compare with 0), so a muted trace point costs what an untraced thread's
 * does (in inline mode: what a process that traces nothing pays).  Each new
 * instruction has the old one's length and only touches the flags (which
 * the trace point's asm and a call clobber anyway), so a processor that
 * fetches it while the byte changes executes either the old instruction or
 * the new one; membarrier(SYNC_CORE) afterwards makes every thread of the
 * process serialise before it runs user code again, after which all run the
 * new one (the reasoning of the int3 protocol, whose steps are such
 * single-byte changes too — without the int3, so no signal ever reaches the
 * program).
 *
 * Entries and exits stay paired.  A function's entry sites are muted first;
 * its exits keep running and the exit trace point itself (trace-inline.h,
 * "Exit check") writes nothing for a frame whose entry was not recorded.
 * Its exit sites are muted once no traced thread has a frame of it on its
 * shadow stack (read here; no new one can appear): from then on no frame of
 * it needs an exit.  An entry site the scan did not find keeps recording;
 * should its frame lose its exit to a muted exit site, the exit of the
 * caller closes it first (rvt__exit_repair).
 *
 * A runtime's key (rvt_key_new(), runtime.c) has no call sites: it is muted
 * by its flag, which the runtime reads at each call (rvt_key_muted()), and a
 * native function a runtime traces by address by the address list
 * (rvt_addr_muted()); its MUTED record has `sites` 0 and the time the flag
 * was set.
 *
 * Limits: x86-64 only (the hand-written exit check); a function whose trace
 * points have another shape (RVT_INLINE_PORTABLE, a compiler that builds
 * them differently) is never muted and keeps costing; a thread that keeps a
 * frame of a muted function open forever keeps its exit sites live (each
 * exit then costs a call of the exit check).
 *
 * The budget thread is bare (bare.c): made with clone() alone, so glibc
 * goes on treating a single-threaded program as one (malloc and stdio take
 * no locks; a pthread cost rvlua 3.4 % and cmark 4.2 % of their runs in
 * malloc's locks).  So it calls nothing of glibc's that relies on knowing
 * every thread: its tables are mappings of their own (vec_grow), sorted by
 * rvt_sort; a module is found with _dl_find_object and read from its
 * headers in memory, a symbol from its dynamic table (no dl_iterate_phdr,
 * dladdr or malloc); the locks it shares are rvt_mu (the registry's, the
 * runtime keys'); it sleeps on futex words.  It holds no privilege
 * (bare.c, Credentials): in a root process it runs as nobody, to whom
 * /proc/self/mem is refused, so it writes code through the descriptor it
 * opened before (rvt_bare_mem_fd).  Under a sanitizer, or where it cannot
 * drop its privileges, it is a pthread.
 *
 * Invariants: nothing here runs on the trace-point path or in a signal
 * handler; only the budget thread scans, patches, appends to the MUTED
 * list (published with a release store of its count) and rewrites a
 * record's callers (under muted_seq); a patched byte only ever holds its
 * original value or the muted one, and goes back to the original only in a
 * recheck, exits before entries.
 */
#include "tracer-int.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(RVT_MUTE_X86)
#define MUTE_CAN 1
#else
#define MUTE_CAN 0
#endif

#define UNTR_MODS 64u
#define SEEN_MODS 512u

/* ---- settings (trace.h, RV_TRACE_MUTE) ---- */

#define DEFAULT_BUDGET_PPM 10000u /* 1 % of a thread's CPU time */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static _Atomic int cfg_on = MUTE_CAN;
static _Atomic uint32_t cfg_budget_ppm = DEFAULT_BUDGET_PPM;

/* "off" | "on" | PERCENT[%] (0 < PERCENT <= 100); 0 or -EINVAL. */
static int parse_spec(const char *v, int *on, uint32_t *ppm)
{
	if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0) {
		*on = 0;
		return 0;
	}
	*on = 1;
	if (strcmp(v, "on") == 0 || strcmp(v, "1") == 0 || *v == '\0') {
		*ppm = DEFAULT_BUDGET_PPM;
		return 0;
	}
	char *e;
	errno = 0;
	double p = strtod(v, &e);
	if (errno || e == v || (*e && strcmp(e, "%") != 0) || !(p > 0) || p > 100)
		return -EINVAL;
	*ppm = (uint32_t)(p * 10000 + 0.5);
	if (*ppm == 0)
		*ppm = 1;
	return 0;
}

int rvt_set_mute(const char *spec)
{
	int on;
	uint32_t ppm = atomic_load(&cfg_budget_ppm);
	if (!spec || parse_spec(spec, &on, &ppm) != 0)
		return -EINVAL;
	if (on && !MUTE_CAN)
		return -ENOTSUP;
	atomic_store(&cfg_budget_ppm, ppm);
	atomic_store(&cfg_on, on);
	return 0;
}

static void read_env(void)
{
	const char *v = getenv("RV_TRACE_MUTE");
	if (!v)
		return;
	int rc = rvt_set_mute(v);
	if (rc == -EINVAL)
		rvt_say("rearview: RV_TRACE_MUTE=%s not understood (use off, on or a budget in "
			"per cent of each thread's CPU time, e.g. 1%%); the budget stays %s",
			v, atomic_load(&cfg_on) ? "on" : "off");
	else if (rc == -ENOTSUP)
		rvt_say("rearview: RV_TRACE_MUTE: muting needs the x86-64 hooks; it is off");
}

/* ---- the MUTED list ---- */

static struct rvt_muted muted[RVT_MUTED_MAX];
static _Atomic size_t nmuted;
/* Muted functions whose exit sites still run (the budget thread's count). */
static _Atomic size_t npending_exits;

size_t rvt_mute_pending(void)
{
	return atomic_load(&npending_exits);
}

static _Atomic uint64_t wakeups; /* the budget thread's looks (tests) */

uint64_t rvt_mute_wakeups(void)
{
	return atomic_load(&wakeups);
}

static _Atomic uint64_t rechecks, recheck_ns; /* done, and what they cost (tests) */

uint64_t rvt_mute_rechecks(uint64_t *cost_ns)
{
	if (cost_ns)
		*cost_ns = atomic_load(&recheck_ns);
	return atomic_load(&rechecks);
}

/* Odd while the budget thread rewrites the callers of published records
 * (recheck_publish); their other fields never change once published. */
static _Atomic uint32_t muted_seq;

/* What was measured of muted[i]'s callers: per caller, the self time
 * credited to it and the caller's own (with the functions muted by then
 * folded in), per tick of each sample's windows — at the mute (victim_callers), then summed over
 * the rechecks (mute.c, "rechecks"); the budget thread's alone. */
static struct recheck_acc {
	uint32_t n, seen; /* callers kept; seen: rechecked at least once */
	uint64_t caller[RVT_MUTED_CALLERS];
	double self[RVT_MUTED_CALLERS], all[RVT_MUTED_CALLERS];
} racc[RVT_MUTED_MAX];

static void muted_copy(struct rvt_muted *to, const struct rvt_muted *m)
{
	to->value = m->value;
	to->counter = m->counter;
	to->monotonic_ns = m->monotonic_ns;
	to->rate = m->rate;
	to->median_ns = m->median_ns;
	to->sites = m->sites;
	to->ncallers = __atomic_load_n(&m->ncallers, __ATOMIC_RELAXED);
	for (unsigned k = 0; k < RVT_MUTED_CALLERS; k++) {
		to->caller[k] = __atomic_load_n(&m->caller[k], __ATOMIC_RELAXED);
		to->share_ppm[k] = __atomic_load_n(&m->share_ppm[k], __ATOMIC_RELAXED);
	}
}

size_t rvt_mute_list(struct rvt_muted *out, size_t cap)
{
	size_t n = atomic_load_explicit(&nmuted, memory_order_acquire);
	if (n > cap)
		n = cap;
	/* A seqlock's read: again while a rewrite ran meanwhile — a bounded
	 * number of times (a budget thread preempted mid-rewrite must not
	 * hold a capture up; a torn share is an estimate off, no more). */
	for (int tries = 0; tries < 1000; tries++) {
		uint32_t s0 = atomic_load_explicit(&muted_seq, memory_order_acquire);
		for (size_t i = 0; i < n; i++)
			muted_copy(&out[i], &muted[i]);
		atomic_thread_fence(memory_order_acquire);
		if (!(s0 & 1) && atomic_load_explicit(&muted_seq, memory_order_relaxed) == s0)
			break;
	}
	return n;
}

static _Atomic int poke_protect; /* write code with mprotect (tests) */

void rvt__mute_poke_protect(int on)
{
	atomic_store(&poke_protect, on);
}

/* Tests: while set, a recheck's window does not end (rvt__mute_recheck_hold). */
static _Atomic int recheck_hold;

void rvt__mute_recheck_hold(int on)
{
	atomic_store(&recheck_hold, on);
}

#if MUTE_CAN
/* ---- trace points in the code ---- */

/* Which hook a call reaches. */
enum hook { H_NONE, H_INL_ENTER, H_INL_EXIT, H_CALL_ENTER, H_CALL_EXIT };

extern void __cyg_profile_func_enter(void *fn, void *site);
extern void __cyg_profile_func_exit(void *fn, void *site);
extern char rvt__inl_enter[], rvt__inl_exit[];

/*
 * One trace point of function `fn`: the call of the hook at `call` (5 or 6
 * bytes), and for inline mode the `jne` of the check that leads to it
 * (`jcc`, 0 when not found; 2 or 6 bytes).  Several checks may share one
 * cold block (a compiler's cross-jumping): each is a site, the call is
 * patched once.
 */
struct site {
	uintptr_t fn, call, jcc;
	uint8_t call_len, jcc_len, exit;
};

/* What the budget reads of a module's dynamic section: the dynamic
 * linker leaves its addresses as they are or relocates them by `base`
 * (either is taken). */
struct dyn_tables {
	uintptr_t symtab, strtab, hash, gnu_hash, rela[2];
	size_t strsz, relasz[2];
};

/* A module's executable code and the trace points found in it (sorted by
 * fn).  `lo`/`hi` bound its executable segments; seg_* are all its loaded
 * segments, the only memory the scan reads. */
#define SEGS_MAX 16u
struct module {
	uintptr_t base, lo, hi;
	uintptr_t map_lo, map_hi; /* the whole mapping (_dl_find_object's) */
	uintptr_t seg_lo[SEGS_MAX], seg_hi[SEGS_MAX];
	uintptr_t gate;	    /* its gate (trace-inline.h), 0 when none registered */
	int hooks_imported; /* its relocations name a call-mode hook */
	uint8_t seg_x[SEGS_MAX];
	unsigned nseg;
	struct site *sites; /* vec_grow'n; room for cap */
	size_t nsites, cap;
	struct dyn_tables dyn; /* read from its dynamic section (dyn_read) */
	uintptr_t *syms;       /* its dynamic symbols' addresses, sorted (scan_call) */
	size_t nsyms, syms_bytes;
};

#define MODS_MAX 64u
static struct module mods[MODS_MAX];
static size_t nmods;

static const uint8_t CHECK[5] = {0x64, 0x49, 0x83, 0x3b, 0x00};	  /* cmpq $0, %fs:(%r11) */
static const uint8_t RZ_DOWN[5] = {0x48, 0x8d, 0x64, 0x24, 0x80}; /* lea -128(%rsp), %rsp */

static int32_t rd32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uintptr_t rdptr(uintptr_t a)
{
	uintptr_t v;
	memcpy(&v, (const void *)a, sizeof(v));
	return v;
}

/* 1 when [a, a+n) lies in one of m's loaded segments. */
static int mapped(const struct module *m, uintptr_t a, size_t n)
{
	for (unsigned i = 0; i < m->nseg; i++)
		if (a >= m->seg_lo[i] && a + n <= m->seg_hi[i])
			return 1;
	return 0;
}

/* Where a PLT stub of m at t jumps (its GOT slot's value), or 0. */
static uintptr_t plt_target(const struct module *m, uintptr_t t)
{
	if (!mapped(m, t, 16))
		return 0;
	const uint8_t *p = (const uint8_t *)t;
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		p += 4; /* endbr64 */
	if (p[0] == 0xf2)
		p++; /* bnd */
	if (p[0] != 0xff || p[1] != 0x25)
		return 0;
	uintptr_t g = (uintptr_t)(p + 6 + rd32(p + 2));
	return mapped(m, g, sizeof(uintptr_t)) ? rdptr(g) : 0;
}

/* The hook a call of m's code to t reaches (through m's PLT or not). */
static enum hook hook_at(const struct module *m, uintptr_t t)
{
	for (int pass = 0; pass < 2 && t; pass++) {
		if (t == (uintptr_t)rvt__inl_enter)
			return H_INL_ENTER;
		if (t == (uintptr_t)rvt__inl_exit)
			return H_INL_EXIT;
		if (t == (uintptr_t)__cyg_profile_func_enter)
			return H_CALL_ENTER;
		if (t == (uintptr_t)__cyg_profile_func_exit)
			return H_CALL_EXIT;
		t = plt_target(m, t);
	}
	return H_NONE;
}

static int in_text(const struct module *m, uintptr_t a, size_t n)
{
	for (unsigned i = 0; i < m->nseg; i++)
		if (m->seg_x[i] && a >= m->seg_lo[i] && a + n <= m->seg_hi[i])
			return 1;
	return 0;
}

/* The call at p: its length and target, or 0. */
static unsigned call_at(const struct module *m, uintptr_t p, uintptr_t *target)
{
	const uint8_t *c = (const uint8_t *)p;
	if (!in_text(m, p, 6))
		return 0;
	if (c[0] == 0xe8) {
		*target = p + 5 + (intptr_t)rd32(c + 1);
		return 5;
	}
	if (c[0] == 0xff && c[1] == 0x15) {
		uintptr_t g = p + 6 + (intptr_t)rd32(c + 2);
		*target = mapped(m, g, sizeof(uintptr_t)) ? rdptr(g) : 0;
		return 6;
	}
	return 0;
}

/* The function address an instruction at p loads into %rax (reg 0) or
 * %rdi (reg 7): lea f(%rip), mov f@GOTPCREL(%rip), mov $f; its length in
 * *len; 0 when none. */
static uintptr_t fn_load(const struct module *m, uintptr_t p, unsigned reg, unsigned *len)
{
	const uint8_t *c = (const uint8_t *)p;
	if (!in_text(m, p, 7))
		return 0;
	uint8_t modrm = (uint8_t)(0x05 | reg << 3);
	if (c[0] == 0x48 && (c[1] == 0x8d || c[1] == 0x8b) && c[2] == modrm) {
		uintptr_t a = p + 7 + (intptr_t)rd32(c + 3);
		*len = 7;
		if (c[1] == 0x8d)
			return a;
		return mapped(m, a, sizeof(uintptr_t)) ? rdptr(a) : 0;
	}
	if (c[0] == 0xb8 + reg) {
		*len = 5;
		return (uint32_t)rd32(c + 1);
	}
	if (c[0] == 0x48 && c[1] == 0xc7 && c[2] == (0xc0 | reg)) {
		*len = 7;
		return (uintptr_t)(intptr_t)rd32(c + 3);
	}
	return 0;
}

/* A new mapping of `bytes` holding a copy of p's first n bytes (p may be
 * NULL); NULL when out of memory.  The caller unmaps p (vec_free).  The
 * budget thread may not call malloc (bare.c): its tables are mappings. */
static void *vec_grow(const void *p, size_t n, size_t bytes)
{
	void *q = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q == MAP_FAILED)
		return NULL;
	assert(n <= bytes);
	if (p)
		memcpy(q, p, n);
	return q;
}

static void vec_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}

/* A table v of n elements of `size` bytes with room for *cap, with room for
 * one more: v itself, or its copy in a mapping twice as large (`first`
 * elements when v is NULL; v is unmapped, *cap updated).  NULL when out of
 * memory (v is left as it was). */
static void *vec_room(void *v, size_t n, size_t *cap, size_t size, size_t first)
{
	if (n < *cap)
		return v;
	size_t c = *cap ? 2 * *cap : first;
	void *w = vec_grow(v, n * size, c * size);
	if (!w)
		return NULL;
	vec_free(v, *cap * size);
	*cap = c;
	return w;
}

struct site_vec {
	struct site *v;
	size_t n, cap;
};

static int site_add(struct site_vec *sv, const struct site *s)
{
	/* Room for 64 Ki sites at once (2 MiB of address space, pages used
	 * as they fill): growing by copies unmapped the old tables, each
	 * unmap a TLB shootdown on the program's CPU, while it starts. */
	struct site *v = vec_room(sv->v, sv->n, &sv->cap, sizeof(*v), 65536);
	if (!v)
		return -ENOMEM;
	sv->v = v;
	sv->v[sv->n++] = *s;
	return 0;
}

/* A gate's jump (trace-inline.h, "The gate"): `cmpb $0, gate(%rip)`
 * followed by the `jne` at `jcc` (jlen bytes) to `target`. */
struct gate_jump {
	uintptr_t target, jcc;
	uint8_t jlen;
};

static int cmp_gate_jump(const void *a, const void *b)
{
	uintptr_t x = ((const struct gate_jump *)a)->target,
		  y = ((const struct gate_jump *)b)->target;
	return (x > y) - (x < y);
}

/* The conditional jump at p: its length and target when it is `jne` (short
 * or near), else 0. */
static unsigned jne_at(const struct module *m, uintptr_t p, uintptr_t *target)
{
	const uint8_t *j = (const uint8_t *)p;
	if (!in_text(m, p, 6))
		return 0;
	if (j[0] == 0x0f && j[1] == 0x85) {
		*target = p + 6 + (intptr_t)rd32(j + 2);
		return 6;
	}
	if (j[0] == 0x75) {
		*target = p + 2 + (int8_t)j[1];
		return 2;
	}
	return 0;
}

/* Where the n bytes of `pat` first are in [p, end), or NULL: memchr for
 * pat[k], a byte chosen rare in x86-64 code, then the rest compared.  Ten
 * times glibc's memmem on code for the two bytes of a gate (memmem goes a
 * byte at a time): 0.06 ns a byte, so a module's first scan is ~0.1 ms a
 * MiB of code (tracer/BENCHMARKS.md). */
static const uint8_t *find_pat(const uint8_t *p, const uint8_t *end, const uint8_t *pat, size_t n,
			       size_t k)
{
	assert(k < n);
	for (const uint8_t *q = p + k; q < end; q++) {
		q = memchr(q, pat[k], (size_t)(end - q));
		if (!q)
			return NULL;
		const uint8_t *at = q - k;
		if ((size_t)(end - at) >= n && memcmp(at, pat, n) == 0)
			return at;
	}
	return NULL;
}

/* Every `cmpb $0, X(%rip); jne T` in [lo, hi), sorted by T, in a mapping
 * of *bytes bytes (the caller frees it with vec_free); *n of them.  Which
 * are gates' is told by what is at T (scan_inline).  -ENOMEM. */
static int gate_jumps(const struct module *m, uintptr_t lo, uintptr_t hi, struct gate_jump **out,
		      size_t *n, size_t *bytes)
{
	static const uint8_t CMPB[2] = {0x80, 0x3d};
	const uint8_t *p = (const uint8_t *)lo, *end = (const uint8_t *)hi;
	struct gate_jump *v = NULL;
	size_t k = 0, cap = 0;
	while ((p = find_pat(p, end, CMPB, sizeof(CMPB), 1)) != NULL) {
		uintptr_t c = (uintptr_t)p++, t;
		unsigned len;
		if (!in_text(m, c, 7) || ((const uint8_t *)c)[6] != 0 ||
		    (len = jne_at(m, c + 7, &t)) == 0)
			continue;
		struct gate_jump *w = vec_room(v, k, &cap, sizeof(*v), 1024);
		if (!w) {
			vec_free(v, cap * sizeof(*v));
			return -ENOMEM;
		}
		v = w;
		v[k++] = (struct gate_jump){t, c + 7, (uint8_t)len};
	}
	if (k)
		rvt_sort(v, k, sizeof(*v), cmp_gate_jump);
	*out = v;
	*n = k;
	*bytes = cap * sizeof(*v);
	return 0;
}

/* The first of the n sorted gate jumps g whose target is `t`, or n. */
static size_t gate_jump_to(const struct gate_jump *g, size_t n, uintptr_t t)
{
	size_t a = 0, b = n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (g[mid].target < t)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

/* The inline-mode trace point whose thread check `cmpq $0, %fs:(%r11);
 * jne T` is at h: the block at T loads the function into %rax (or the
 * check's block did, before the check) and calls an inline stub.  Fills s
 * (s->jcc: the check's own jne) and *first, where the check's block starts
 * when the load comes first (else h - 7, the check's movq); -1 when h is
 * not such a check. */
static int check_site(const struct module *m, uintptr_t h, struct site *s, uintptr_t *first)
{
	uintptr_t target;
	unsigned jlen = jne_at(m, h + 5, &target);
	if (!jlen)
		return -1;
	unsigned len = 0;
	uintptr_t fn = fn_load(m, target, 0, &len);
	uintptr_t q = target + len;
	*first = h - 7;
	if (!fn && h >= m->lo + 14) {
		fn = fn_load(m, h - 14, 0, &len); /* loaded before the check */
		*first = fn ? h - 14 : *first;
	}
	if (!fn || !in_text(m, q, 5) || memcmp((const void *)q, RZ_DOWN, 5) != 0)
		return -1;
	uintptr_t t = 0;
	unsigned clen = call_at(m, q + 5, &t);
	enum hook k = clen ? hook_at(m, t) : H_NONE;
	if (k != H_INL_ENTER && k != H_INL_EXIT)
		return -1;
	*s = (struct site){fn, q + 5, h + 5, (uint8_t)clen, (uint8_t)jlen, k == H_INL_EXIT};
	return 0;
}

/*
 * Inline mode: every check `movq rvt__tls@gottpoff(%rip), %r11; cmpq $0,
 * %fs:(%r11); jne T` whose block at T loads the function into %rax and
 * calls an inline stub.  The check is reached through the gates' jumps to
 * its first instruction (or to the function's load, when the compiler put
 * that first): each such jump is a site, and muting changes its `jne`, so
 * a muted trace point costs what a closed gate does.  A check no gate
 * leads to (a module built before the gates) is a site of its own `jne`.
 */
static int scan_inline(const struct module *m, uintptr_t lo, uintptr_t hi, struct site_vec *sv)
{
	struct gate_jump *g;
	size_t ng, gbytes;
	if (gate_jumps(m, lo, hi, &g, &ng, &gbytes))
		return -ENOMEM;
	int rc = 0;
	const uint8_t *p = (const uint8_t *)lo, *end = (const uint8_t *)hi;
	while (rc == 0 && (p = find_pat(p, end, CHECK, sizeof(CHECK), 0)) != NULL) {
		uintptr_t h = (uintptr_t)p, first;
		p++;
		struct site s;
		if (check_site(m, h, &s, &first) != 0)
			continue;
		size_t at = gate_jump_to(g, ng, first);
		if (at == ng || g[at].target != first) {
			rc = site_add(sv, &s);
			continue;
		}
		for (; rc == 0 && at < ng && g[at].target == first; at++) {
			s.jcc = g[at].jcc;
			s.jcc_len = g[at].jlen;
			rc = site_add(sv, &s);
		}
	}
	vec_free(g, gbytes);
	return rc ? -ENOMEM : 0;
}

/*
 * Inline mode in a module whose gate is known (m->gate, registered by its
 * constructor): one pass for the gates' jumps `cmpb $0, gate(%rip); jne T`
 * alone, each decoded to the check at T (after the check's movq, or after
 * the function's load and the movq); each is a site, found in the order of
 * the code, which is nearly the order of the functions (the sort after it
 * is then near linear).  -EAGAIN when a gate's jump leads to no check this
 * knows (the caller then scans for every check, scan_inline); -ENOMEM.
 */
static int scan_gated(const struct module *m, uintptr_t lo, uintptr_t hi, struct site_vec *sv)
{
	static const uint8_t CMPB[2] = {0x80, 0x3d};
	const uint8_t *p = (const uint8_t *)lo, *end = (const uint8_t *)hi;
	while ((p = find_pat(p, end, CMPB, sizeof(CMPB), 1)) != NULL) {
		uintptr_t c = (uintptr_t)p++, t, h = 0, first;
		unsigned len, flen = 0;
		if (!in_text(m, c, 7) || ((const uint8_t *)c)[6] != 0 ||
		    c + 7 + (intptr_t)rd32((const uint8_t *)c + 2) != m->gate ||
		    (len = jne_at(m, c + 7, &t)) == 0)
			continue;
		if (in_text(m, t + 7, 5) && memcmp((const void *)(t + 7), CHECK, 5) == 0)
			h = t + 7;
		else if (fn_load(m, t, 0, &flen) && in_text(m, t + flen + 7, 5) &&
			 memcmp((const void *)(t + flen + 7), CHECK, 5) == 0)
			h = t + flen + 7;
		struct site s;
		if (!h || check_site(m, h, &s, &first) != 0)
			return -EAGAIN;
		s.jcc = c + 7;
		s.jcc_len = (uint8_t)len;
		if (site_add(sv, &s))
			return -ENOMEM;
	}
	return 0;
}

static int starts_symbol(const struct module *m, uintptr_t f);

/* Call mode: every call of __cyg_profile_func_enter/exit whose function
 * argument was loaded into %rdi within the 24 bytes before (the address
 * must start a symbol). */
static int scan_call(const struct module *m, uintptr_t lo, uintptr_t hi, struct site_vec *sv)
{
	for (uintptr_t a = lo; a + 6 <= hi; a++) {
		const uint8_t *c = (const uint8_t *)a;
		if (c[0] != 0xe8 && !(c[0] == 0xff && c[1] == 0x15))
			continue;
		uintptr_t t = 0;
		unsigned clen = call_at(m, a, &t);
		if (!clen || t < 4096)
			continue;
		if (c[0] == 0xe8 && !(t >= m->lo && t < m->hi) &&
		    t != (uintptr_t)__cyg_profile_func_enter &&
		    t != (uintptr_t)__cyg_profile_func_exit)
			continue;
		enum hook k = hook_at(m, t);
		if (k != H_CALL_ENTER && k != H_CALL_EXIT)
			continue;
		uintptr_t fn = 0;
		for (uintptr_t b = a - 5; !fn && b + 24 >= a && b > lo; b--) {
			unsigned len = 0;
			uintptr_t f = fn_load(m, b, 7, &len);
			if (f && b + len <= a && starts_symbol(m, f))
				fn = f;
		}
		if (!fn)
			continue;
		struct site s = {fn, a, 0, (uint8_t)clen, 0, k == H_CALL_EXIT};
		if (site_add(sv, &s))
			return -ENOMEM;
	}
	return 0;
}

static void dyn_read(const ElfW(Dyn) * dyn, uintptr_t base, struct dyn_tables *t)
{
	memset(t, 0, sizeof(*t));
	for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++) {
		uintptr_t v = (uintptr_t)d->d_un.d_ptr;
		uintptr_t a = v && v < base ? v + base : v;
		switch (d->d_tag) {
		case DT_SYMTAB:
			t->symtab = a;
			break;
		case DT_STRTAB:
			t->strtab = a;
			break;
		case DT_HASH:
			t->hash = a;
			break;
		case DT_GNU_HASH:
			t->gnu_hash = a;
			break;
		case DT_STRSZ:
			t->strsz = (size_t)v;
			break;
		case DT_RELA:
			t->rela[0] = a;
			break;
		case DT_RELASZ:
			t->relasz[0] = (size_t)v;
			break;
		case DT_JMPREL:
			t->rela[1] = a;
			break;
		case DT_PLTRELSZ:
			t->relasz[1] = (size_t)v;
			break;
		default:
			break;
		}
	}
}

/* 1 when a relocation of module m names a call-mode hook (its GOT then
 * gets the hook's address). */
static int imports_hooks(const struct module *m)
{
	const struct dyn_tables *t = &m->dyn;
	if (!t->symtab || !t->strtab)
		return 0;
	const ElfW(Sym) *sym = (const ElfW(Sym) *)t->symtab;
	const char *str = (const char *)t->strtab;
	for (int k = 0; k < 2; k++) {
		if (!t->rela[k])
			continue;
		const ElfW(Rela) *r = (const ElfW(Rela) *)t->rela[k];
		for (size_t i = 0; i < t->relasz[k] / sizeof(*r); i++) {
			size_t si = ELF64_R_SYM(r[i].r_info);
			size_t at = si ? sym[si].st_name : t->strsz;
			if (at < t->strsz && (strcmp(str + at, "__cyg_profile_func_enter") == 0 ||
					      strcmp(str + at, "__cyg_profile_func_exit") == 0))
				return 1;
		}
	}
	return 0;
}

/* How many entries the dynamic symbol table has: DT_HASH's chain count,
 * or one past the end of DT_GNU_HASH's last chain. */
static size_t dynsym_count(const struct dyn_tables *t)
{
	if (t->hash)
		return ((const uint32_t *)t->hash)[1];
	if (!t->gnu_hash)
		return 0;
	const uint32_t *h = (const uint32_t *)t->gnu_hash;
	uint32_t nbuckets = h[0], symoffset = h[1], nbloom = h[2];
	const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(h + 4) + nbloom);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t last = 0;
	for (uint32_t i = 0; i < nbuckets; i++)
		last = buckets[i] > last ? buckets[i] : last;
	if (last < symoffset)
		return symoffset;
	while (!(chain[last - symoffset] & 1))
		last++;
	return (size_t)last + 1;
}

static int cmp_uptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return (x > y) - (x < y);
}

/* m->syms: the addresses of m's defined dynamic symbols, sorted (what
 * dladdr would tell; the budget thread may not call it, bare.c). */
static int load_syms(struct module *m)
{
	size_t n = m->dyn.symtab ? dynsym_count(&m->dyn) : 0;
	if (n == 0 || n > (1u << 24))
		return 0;
	uintptr_t *v = vec_grow(NULL, 0, n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	const ElfW(Sym) *sym = (const ElfW(Sym) *)m->dyn.symtab;
	size_t k = 0;
	for (size_t i = 1; i < n; i++)
		if (sym[i].st_shndx != SHN_UNDEF && sym[i].st_value &&
		    ELF64_ST_TYPE(sym[i].st_info) != STT_TLS &&
		    ELF64_ST_TYPE(sym[i].st_info) != STT_SECTION)
			v[k++] = m->base + sym[i].st_value;
	rvt_sort(v, k, sizeof(*v), cmp_uptr);
	m->syms = v;
	m->nsyms = k;
	m->syms_bytes = n * sizeof(*v);
	return 0;
}

/* 1 when a dynamic symbol of m starts at f. */
static int starts_symbol(const struct module *m, uintptr_t f)
{
	size_t lo = 0, hi = m->nsyms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->syms[mid] < f)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nsyms && m->syms[lo] == f;
}

/* 1 when m's code can call a call-mode hook: the hook is in m, or m imports
 * it.  Reading every byte of the code (scan_call) costs a millisecond or
 * more in a large module; an inline-mode build seldom needs it. */
static int calls_hooks(const struct module *m)
{
	const uintptr_t h[2] = {(uintptr_t)__cyg_profile_func_enter,
				(uintptr_t)__cyg_profile_func_exit};
	for (unsigned k = 0; k < 2; k++)
		if (h[k] >= m->lo && h[k] < m->hi)
			return 1;
	return m->hooks_imported;
}

/* By function alone: rvt_sort is stable, so a function's sites keep the
 * order the scan found them in (scan_gated: their gates' order in the
 * code, nearly the functions' order, so the sort is near linear; by call
 * too, the cold blocks' other order made it move most of them). */
static int cmp_site(const void *a, const void *b)
{
	uintptr_t x = ((const struct site *)a)->fn, y = ((const struct site *)b)->fn;
	return (x > y) - (x < y);
}

/* Fills m from the module mapped at [start, end) with load address `base`
 * (what _dl_find_object tells of it): its program headers are read where
 * its first segment maps the ELF header.  0, or -1 when the headers are not
 * there or, when `code`, address `a` is in none of its executable
 * segments. */
static int mod_init(struct module *m, uintptr_t start, uintptr_t end, uintptr_t base, uintptr_t a,
		    int code)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)start;
	if (end - start < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_phentsize != sizeof(ElfW(Phdr)) ||
	    eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr)) > end - start)
		return -1;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(start + eh->e_phoff);
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	int here = 0, header = 0;
	const ElfW(Dyn) *dyn = NULL;
	m->lo = UINTPTR_MAX;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + ph[i].p_vaddr);
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_R) || m->nseg == SEGS_MAX)
			continue;
		uintptr_t lo = base + ph[i].p_vaddr, hi = lo + ph[i].p_memsz;
		header |= ph[i].p_offset == 0 && (lo & ~(pg - 1)) == start;
		m->seg_lo[m->nseg] = lo;
		m->seg_hi[m->nseg] = hi;
		m->seg_x[m->nseg++] = (ph[i].p_flags & PF_X) != 0;
		if (!(ph[i].p_flags & PF_X))
			continue;
		here |= a >= lo && a < hi;
		m->lo = lo < m->lo ? lo : m->lo;
		m->hi = hi > m->hi ? hi : m->hi;
	}
	if ((code && !here) || !header)
		return -1;
	m->base = base;
	dyn_read(dyn, base, &m->dyn);
	m->hooks_imported = imports_hooks(m);
	return 0;
}

/* The registered gate (rvt_gates_list) in [lo, hi), or 0. */
static uintptr_t gate_in(uintptr_t lo, uintptr_t hi)
{
	uintptr_t g[MODS_MAX];
	unsigned gen;
	size_t n = rvt_gates_list(g, MODS_MAX, &gen);
	for (size_t i = 0; i < n; i++)
		if (g[i] >= lo && g[i] < hi)
			return g[i];
	return 0;
}

/* Frees what m holds and clears it: a free slot (lo == hi == 0), which
 * matches no address. */
static void mod_release(struct module *m)
{
	vec_free(m->sites, m->cap * sizeof(*m->sites));
	vec_free(m->syms, m->syms_bytes);
	memset(m, 0, sizeof(*m));
}

/* Under rvt_modules_mu, when a dlclose() ran since the last call: forgets
 * the modules that are no longer mapped where they were (their sites and
 * symbols with them), so that no code of theirs is read or patched and a
 * module mapped there later is scanned afresh. */
static void modules_forget_closed(void)
{
	static unsigned seen;
	unsigned gen = atomic_load(&rvt_modules_gen);
	if (gen == seen)
		return;
	seen = gen;
	for (size_t i = 0; i < nmods; i++) {
		struct module *m = &mods[i];
		struct dl_find_object o;
		if (m->lo < m->hi && _dl_find_object((void *)m->lo, &o) == 0 && o.dlfo_link_map &&
		    (uintptr_t)o.dlfo_link_map->l_addr == m->base)
			continue;
		mod_release(m);
	}
}

/* The module holding address `a` — code when `code`, else any of its
 * mapping (a gate, prescan) — scanned on first use; NULL when none or out
 * of room.  Found with _dl_find_object, which takes no lock
 * (dl_iterate_phdr's may not be taken by the budget thread, bare.c). */
static struct module *module_at(uintptr_t a, int code)
{
	/* Held here (by this thread, or a dlclose() that waits on it). */
	assert(atomic_load_explicit(&rvt_modules_mu.v, memory_order_relaxed) != 0);
	size_t slot = nmods; /* a forgotten module's slot, or the next one */
	for (size_t i = 0; i < nmods; i++) {
		if ((a >= mods[i].lo && a < mods[i].hi) ||
		    (!code && a >= mods[i].map_lo && a < mods[i].map_hi))
			return &mods[i];
		if (mods[i].lo == 0 && mods[i].hi == 0 && slot == nmods)
			slot = i;
	}
	if (slot == MODS_MAX)
		return NULL;
	struct module *m = &mods[slot];
	memset(m, 0, sizeof(*m));
	struct dl_find_object o;
	if (_dl_find_object((void *)a, &o) != 0 || !o.dlfo_link_map ||
	    mod_init(m, (uintptr_t)o.dlfo_map_start, (uintptr_t)o.dlfo_map_end,
		     (uintptr_t)o.dlfo_link_map->l_addr, a, code) != 0) {
		mod_release(m); /* the slot stays free */
		return NULL;
	}
	m->map_lo = (uintptr_t)o.dlfo_map_start;
	m->map_hi = (uintptr_t)o.dlfo_map_end;
	m->gate = gate_in(m->map_lo, m->map_hi);
	struct site_vec sv = {0};
	int rc = m->gate ? 0 : -EAGAIN;
	for (unsigned i = 0; i < m->nseg && rc == 0; i++)
		if (m->seg_x[i])
			rc = scan_gated(m, m->seg_lo[i], m->seg_hi[i], &sv);
	if (rc == -EAGAIN) { /* no gate, or a jump of it this does not know */
		sv.n = 0;
		rc = 0;
		for (unsigned i = 0; i < m->nseg && rc == 0; i++)
			if (m->seg_x[i])
				rc = scan_inline(m, m->seg_lo[i], m->seg_hi[i], &sv);
	}
	if (rc == 0 && calls_hooks(m)) /* call mode: only where the hooks can be reached */
		rc = load_syms(m);
	for (unsigned i = 0; i < m->nseg && rc == 0 && calls_hooks(m); i++)
		if (m->seg_x[i])
			rc = scan_call(m, m->seg_lo[i], m->seg_hi[i], &sv);
	if (rc) {
		vec_free(sv.v, sv.cap * sizeof(*sv.v));
		mod_release(m); /* the slot stays free */
		return NULL;
	}
	rvt_sort(sv.v, sv.n, sizeof(*sv.v), cmp_site);
	m->sites = sv.v;
	m->nsites = sv.n;
	m->cap = sv.cap;
	if (slot == nmods)
		nmods++;
	return m;
}

/* The module holding code address `a` (module_at). */
static struct module *module_of(uintptr_t a)
{
	return module_at(a, 1);
}

/* The sites of fn: *n of them from the returned pointer (NULL when none). */
static struct site *sites_of(uintptr_t fn, size_t *n)
{
	*n = 0;
	struct module *m = module_of(fn);
	if (!m || !m->nsites)
		return NULL;
	size_t lo = 0, hi = m->nsites;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->sites[mid].fn < fn)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t k = lo;
	while (k < m->nsites && m->sites[k].fn == fn)
		k++;
	*n = k - lo;
	return *n ? &m->sites[lo] : NULL;
}

/* ---- patching ---- */

static int sync_core(void)
{
	return (int)rvt_sys(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0, 0);
}

/*
 * One look's byte changes, applied together (patch_apply): each run of
 * pages they fall in is written through /proc/self/mem (see mem_refused) or,
 * where that is refused, made writable once, changed and made read-only
 * again; one barrier ends them all.  Every change of a look is safe in any
 * order (each leaves valid code, see the top), and a byte is only ever
 * queued from its original value to its muted one.  Changing protection
 * costs a TLB shootdown on every CPU the program runs on; none, or one per
 * run of pages instead of two per byte, is what lets a look mute a phase's
 * worth of functions at once.
 */
#define POKES_MAX 4096u
struct poke_req {
	uintptr_t a;
	uint8_t from, to;
};
static struct poke_req pokes[POKES_MAX];
static size_t npokes;

/* 1 when the byte at `a` is `from` or `to` already (queued when `from`);
 * 0 when it is neither (not the code we scanned) or the queue is full. */
static int poke_add(uintptr_t a, uint8_t from, uint8_t to)
{
	uint8_t now = *(volatile const uint8_t *)a;
	if (now == to)
		return 1;
	if (now != from || npokes == POKES_MAX)
		return 0;
	pokes[npokes++] = (struct poke_req){a, from, to};
	return 1;
}

static int cmp_poke(const void *x, const void *y)
{
	uintptr_t a = ((const struct poke_req *)x)->a, b = ((const struct poke_req *)y)->a;
	return (a > b) - (a < b);
}

/* This process's /proc/self/mem is how the budget writes code without
 * changing its protection (the kernel writes past it, as for a debugger):
 * an mprotect pair costs two TLB shootdowns on every CPU the program runs
 * on, a write through the file only the first one per page (the copy of a
 * page of the file).  The bare thread has it open in a file table of its
 * own (rvt_bare_mem_fd); elsewhere (a pthread budget, a fork's child) it
 * is opened for one patch_apply and closed after it, so the program never
 * sees a descriptor of ours that it could close (and then have its own
 * file written at our offsets).  mem_refused: it failed once (no /proc, or
 * a kernel that forbids such writes): mprotect from then on. */
static _Atomic int mem_refused;

int rvt__mute_by_mprotect(void)
{
	return atomic_load(&mem_refused);
}

/* Writes the queued changes [i, j) through `fd`; 0, or -1 when the file
 * refused one (the caller then does the run with mprotect). */
static int poke_file(int fd, size_t i, size_t j)
{
	for (size_t k = i; k < j; k++) {
		if (*(volatile const uint8_t *)pokes[k].a != pokes[k].from)
			continue;
		if (pwrite(fd, &pokes[k].to, 1, (off_t)pokes[k].a) != 1)
			return -1;
	}
	return 0;
}

/* Applies the queued changes and serialises every thread (membarrier
 * SYNC_CORE) once; a run whose pages cannot be written is left as it was. */
static void patch_apply(void)
{
	if (!npokes)
		return;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	rvt_sort(pokes, npokes, sizeof(*pokes), cmp_poke);
	int fd = -1, own = 0;
	if (!mem_refused && !atomic_load(&poke_protect)) {
		fd = rvt_bare_mem_fd();
		own = fd < 0;
		if (own)
			fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
		mem_refused = fd < 0;
	}
	for (size_t i = 0; i < npokes;) {
		/* A run: pages of one executable segment of one module. */
		struct module *m = module_of(pokes[i].a);
		uintptr_t lo = pokes[i].a & ~(pg - 1);
		size_t j = i + 1;
		while (j < npokes && m && in_text(m, lo, (pokes[j].a | (pg - 1)) + 1 - lo))
			j++;
		uintptr_t hi = (pokes[j - 1].a | (pg - 1)) + 1;
		if (fd >= 0 && poke_file(fd, i, j) != 0) {
			if (own)
				close(fd);
			fd = -1;
			mem_refused = 1;
		}
		if (fd < 0 &&
		    mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) == 0) {
			for (size_t k = i; k < j; k++) {
				volatile uint8_t *p = (volatile uint8_t *)pokes[k].a;
				if (*p == pokes[k].from)
					*p = pokes[k].to;
			}
			mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
		}
		i = j;
	}
	if (fd >= 0 && own)
		close(fd);
	npokes = 0;
	sync_core();
}

/* Queues the muting of the trace points of the `n` sites whose `exit` flag
 * is `exit`: each call and jne gets its one-byte change (see the top).
 * Returns the number of sites queued (or already muted). */
static unsigned mute_sites(struct site *s, size_t n, int exit)
{
	unsigned done = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i].exit != exit)
			continue;
		int ok = s[i].call_len == 5 ? poke_add(s[i].call, 0xe8, 0x3d)
					    : poke_add(s[i].call, 0xff, 0x3b);
		if (ok && s[i].jcc)
			/* jne → jb: the near form's second byte, the short form's first. */
			s[i].jcc_len == 6 ? poke_add(s[i].jcc + 1, 0x85, 0x82)
					  : poke_add(s[i].jcc, 0x75, 0x72);
		done += ok;
	}
	return done;
}

/* ---- the budget ---- */

#define WIN	    16384u     /* slots read from a thread over its budget */
#define HASH	    4096u      /* functions told apart in one window */
#define SAMPLES	    8u	       /* call durations kept per function */
#define ABSORB	    4096u      /* (victim, caller) pairs told apart in one window */
#define SHADOW_SNAP 256u       /* shadow frames victim_callers reads for the base */
#define SHARE_WINS  8u	       /* older windows a victim's callers are read from */
#define SHARE_WIN   2048u      /* ... of this many slots each */
#define SHARE_SPAN  (1u << 20) /* ... spread over this many slots before */
#define SHARE_PRE   8192u      /* slots before each read for the frames open at it */
#define SHARE_OPEN  32u	       /* ... of which this many, the innermost */
#define GAP_MAX_NS  1e6	       /* ... in which no gap between two events counts for more */
/* What the budget mutes (see the top): never a function with ≥ SPARE_PPM of
 * the self time whose own trace points fit in the budget, nor one whose
 * events cost < GAIN_PPM of the budget, nor one called < MIN_RATE times a
 * second of CPU (whatever the share's estimate says: a slow build's can be
 * far off); it mutes until the share is the budget / TARGET_DIV. */
#define SPARE_PPM     100000u /* 10 % */
#define GAIN_PPM      20000u  /* 2 % */
#define MIN_RATE      10000.0
#define TARGET_DIV    4u
#define MAX_VICTIMS   256u /* functions muted at one look */
#define THREADS_MAX   64u
#define PENDING_MAX   RVT_MUTED_MAX
#define TRIED_MAX     4096u
#define PERIOD_NEW_US 1000u /* a thread first seen: count its rate soon */
/* Something was muted, or exits wait; also the least time between two
 * wakes.  1 ms, not 2: a new phase's hot functions are caught in more
 * looks, sooner (cmark's trace points 5.8 -> 4.5 ms, sqlite3's 12.9 -> 8.9
 * ms, medians of perf samples; the budget thread's CPU unchanged).  0.5 ms
 * was far worse: sqlite3 then kept vdbeRecordCompareInt (800 k calls)
 * traced in most runs (98 functions muted, not 171; 1.15 s of CPU, not
 * 0.7) — a window of half a millisecond is too short to judge by. */
#define PERIOD_OVER_US 1000u
#define PERIOD_BUSY_US 16000u  /* a thread over the budget, more to mute maybe */
#define PERIOD_RUN_US  128000u /* under the budget: a hot phase wakes it sooner */
#define PERIOD_MAX_US  400000u /* idle: double up to this */
#define LEARN_MS       5u

struct fstat {
	uint64_t value;
	uint32_t calls, events, nsamples;
	/* victim_callers: gone (muted, or a victim of this round) once
	 * marked; victim, one of the look's; own, the self time of its calls
	 * in the windows it read, and in, its muted callees' */
	uint32_t gone, marked, victim;
	double own, in;
	double self;		  /* ticks of the shifted counter, less the trace
				   * points' cost (a sum that may dip below 0) */
	uint32_t sample[SAMPLES]; /* call durations, ticks */
};

struct victim {
	uint64_t value, rate;
	uint32_t median_ns;
	uint32_t ncallers; /* victim_callers: where its time goes when muted */
	uint32_t share_ppm[RVT_MUTED_CALLERS];
	uint64_t caller[RVT_MUTED_CALLERS];
	double self_t[RVT_MUTED_CALLERS], all_t[RVT_MUTED_CALLERS]; /* ... in ticks */
};

/* Self time of a muted function `x` in the windows victim_callers read
 * that its caller `a` would show (BASE: the base). */
struct absorb {
	uint64_t x, a;
	double self;
};

/* What the budget remembers of a traced thread between looks. */
struct tstate {
	pid_t tid;
	uint64_t cur, last_slot, cpu_ns, looks;
	uint64_t seen_cpu_ns; /* its CPU time at the last look */
	double futile;	      /* share (ppm) at which its window last gave no victim */
	unsigned futile_looks;
	uint64_t ring_seq;	  /* the ring counted in (rvt_ring.seq) */
	uint64_t rc_from, rc_seq; /* a recheck's mark: the ring's cur and seq */
};

struct budget {
	uint64_t *win;	  /* WIN slots, then SHARE_WINS older windows (callers_gather),
			   * then SHARE_PRE slots of scratch (open_before) */
	struct fstat *fs; /* HASH entries, zero but for those in used */
	uint16_t used[HASH];
	unsigned nused;
	struct {
		uint64_t value;
		uint32_t ts, child, calls; /* calls: its children's */
		struct fstat *f;	   /* choose, victim_callers: its fstat */
	} stack[256];
	struct tstate th[THREADS_MAX];
	struct victim vic[MAX_VICTIMS];
	size_t nvic;
	struct victim done[MAX_VICTIMS]; /* mute_victims: muted, for mute_publish */
	uint32_t done_sites[MAX_VICTIMS];
	size_t ndone;
	struct absorb ab[ABSORB]; /* zero but for those in ab_used */
	uint16_t ab_used[ABSORB];
	unsigned nab;
	double cost_ns;		       /* one trace point */
	unsigned views;		       /* traced threads at this look */
	unsigned over;		       /* threads over the budget at this look */
	unsigned futile;	       /* ... of which nothing more can be muted */
	uint64_t ran_ns;	       /* CPU the traced threads ran since the last look */
	unsigned fresh;		       /* threads first seen at this look */
	unsigned unsettled;	       /* tracing threads whose shadow could not be read */
	uint64_t pending[PENDING_MAX]; /* muted functions whose exits still run */
	uint8_t open[PENDING_MAX];     /* ... open on some shadow stack at this look */
	uint8_t quiet[PENDING_MAX];    /* ... looks in a row that found none */
	size_t npending;
	size_t nlooked; /* pending[0..nlooked) were looked for at this look */
	size_t nnew;	/* the last nnew of pending: muted at this round */
	/* victim_callers, split: what callers_gather copied (the older
	 * windows are in win after WIN), for callers_compute */
	uint64_t shv[SHADOW_SNAP];		  /* the shadow stack's methods, innermost first */
	unsigned nshv, nold;			  /* ... and older windows copied */
	uint64_t oldopen[SHARE_WINS][SHARE_OPEN]; /* frames open at each, outermost first */
	unsigned noldopen[SHARE_WINS];
	struct victim dvic[MAX_VICTIMS]; /* the round's victims then */
	size_t ndvic, dfirst;		 /* ... dvic[dfirst..) the look's */
	uint64_t dw;			 /* the newest window's slots (in win) */
	double dtp;			 /* a trace point's ticks */
	int deferred;			 /* callers_compute has work */
	/* rechecks: the traced threads' CPU since the last, and how much is
	 * due before the next (ns) */
	double rc_ran, rc_due;
};

/* Functions the budget will not try again (muted, or no way to mute): a
 * set of method values (never 0), open addressing with linear probing, at
 * most half full; asked for every function of every window it reads. */
#define TRIED_SLOTS (2 * TRIED_MAX)
static uint64_t tried[TRIED_SLOTS];
static size_t ntried;

static size_t tried_home(uint64_t v)
{
	return (size_t)((v * UINT64_C(0x9e3779b97f4a7c15)) >> 40) & (TRIED_SLOTS - 1);
}

static size_t tried_at(uint64_t v)
{
	size_t i = tried_home(v);
	while (tried[i] && tried[i] != v)
		i = (i + 1) & (TRIED_SLOTS - 1);
	return i;
}

static int was_tried(uint64_t v)
{
	return tried[tried_at(v)] == v || ntried == TRIED_MAX;
}

static void set_tried(uint64_t v)
{
	size_t i = tried_at(v);
	if (ntried < TRIED_MAX && !tried[i]) {
		tried[i] = v;
		ntried++;
	}
}

/* Takes v out of the set: the entries after it in its run move back so
 * that each stays reachable from its home slot. */
static void untry(uint64_t v)
{
	size_t i = tried_at(v);
	if (tried[i] != v)
		return;
	ntried--;
	for (size_t j = (i + 1) & (TRIED_SLOTS - 1); tried[j]; j = (j + 1) & (TRIED_SLOTS - 1)) {
		size_t h = tried_home(tried[j]);
		/* stays when its home is cyclically in (i, j] */
		int stays = i < j ? (h > i && h <= j) : (h > i || h <= j);
		if (!stays) {
			tried[i] = tried[j];
			i = j;
		}
	}
	tried[i] = 0;
}

/* A function none of whose sites could be had (call mode learns them while
 * the program runs, and a thread kept off the CPU for the whole learning
 * shows none) is tried again, up to RETRIES times in all. */
#define RETRIES	    3u
#define RETRY_SLOTS 64u
static struct {
	uint64_t value;
	unsigned n;
} retry[RETRY_SLOTS];

static void retry_later(uint64_t v)
{
	unsigned k = (unsigned)(v % RETRY_SLOTS);
	if (retry[k].value != v) {
		retry[k].value = v; /* a collision forgets the other's count */
		retry[k].n = 0;
	}
	if (++retry[k].n >= RETRIES)
		return;
	untry(v);
}

static uint64_t ticks_ns(uint64_t ticks)
{
	return (uint64_t)((double)(ticks << rvt_clock.shift) * 1e9 / (double)rvt_clock.hz);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(pid_t tid)
{
	/* The kernel's thread CPU clock id (glibc's pthread_getcpuclockid()). */
	clockid_t c = (clockid_t)((~(unsigned)tid << 3) | 6u);
	struct timespec ts;
	if (clock_gettime(c, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct tstate *tstate_of(struct budget *B, pid_t tid)
{
	struct tstate *free_one = NULL, *oldest = &B->th[0];
	for (unsigned i = 0; i < THREADS_MAX; i++) {
		if (B->th[i].tid == tid)
			return &B->th[i];
		if (!B->th[i].tid && !free_one)
			free_one = &B->th[i];
		if (B->th[i].looks < oldest->looks)
			oldest = &B->th[i];
	}
	struct tstate *s = free_one ? free_one : oldest;
	memset(s, 0, sizeof(*s));
	s->tid = tid;
	return s;
}

static struct fstat *fstat_of(struct budget *B, uint64_t v)
{
	unsigned h = (unsigned)((v * UINT64_C(0x9e3779b97f4a7c15)) >> 52) & (HASH - 1);
	for (unsigned k = 0; k < HASH; k++) {
		struct fstat *f = &B->fs[(h + k) & (HASH - 1)];
		if (f->value == v)
			return f;
		if (!f->value) {
			f->value = v;
			B->used[B->nused++] = (uint16_t)((h + k) & (HASH - 1));
			return f;
		}
	}
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

struct cand {
	struct fstat *f;
	double score;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return (x->score < y->score) - (x->score > y->score);
}

/* Copies the n slots of v's ring from slot `at` on (going round at its
 * end) into dst: slot by slot with relaxed loads (the writer goes on), in
 * at most two runs without a division per slot. */
static void ring_copy(uint64_t *dst, const struct rvt_ring_view *v, uint64_t at, uint64_t n)
{
	assert(at < v->nslots && n <= v->nslots);
	while (n) {
		uint64_t run = v->nslots - at < n ? v->nslots - at : n;
		const uint64_t *src = v->slots + at;
		for (uint64_t k = 0; k < run; k++)
			dst[k] = __atomic_load_n(&src[k], __ATOMIC_RELAXED);
		dst += run;
		n -= run;
		at = 0;
	}
}

/* The event at win[*k] of a window of w slots (FORMAT.md §1): 1 with
 * *value (0: an exit) and its *ts, *k moved past the second slot of a
 * two-slot entry; 0 for a marker (CLOCK, LOSS) or a marker whose value
 * slot is before the window. */
static int win_event(const uint64_t *win, uint64_t w, uint64_t *k, uint64_t *value, uint32_t *ts)
{
	uint64_t s = win[*k];
	uint32_t low = (uint32_t)s;
	uint32_t next = *k + 1 < w ? (uint32_t)win[*k + 1] : 0;
	*ts = (uint32_t)(s >> 32);
	if (next != 0 && next <= RVT_SLOT_MARKER_MAX) {
		/* s is the 64-bit value of the marker after it */
		*ts = (uint32_t)(win[++*k] >> 32);
		*value = s;
		return next == RVT_SLOT_PAIR;
	}
	if (low != 0 && low <= RVT_SLOT_MARKER_MAX)
		return 0;
	*value = low;
	return 1;
}

/* Follows the depth through win[0..w) from `depth` open frames: returns the
 * depth at its end; the values of the frames entered in it go to st[depth]
 * while depth < cap (st may be NULL with cap 0); *unmatched is the slot
 * after the last exit of a frame from before it (0: none). */
static unsigned win_depth(const uint64_t *win, uint64_t w, unsigned depth, uint64_t *st,
			  unsigned cap, uint64_t *unmatched)
{
	*unmatched = 0;
	for (uint64_t k = 0; k < w; k++) {
		uint64_t value;
		uint32_t ts;
		if (!win_event(win, w, &k, &value, &ts))
			continue;
		if (value) {
			if (depth < cap)
				st[depth] = value;
			depth++;
		} else if (depth) {
			depth--;
		} else {
			*unmatched = k + 1;
		}
	}
	return depth;
}

static struct absorb *absorb_of(struct budget *B, uint64_t x, uint64_t a)
{
	uint64_t key = (x ^ (a * UINT64_C(0x9e3779b97f4a7c15))) * UINT64_C(0xff51afd7ed558ccd);
	unsigned h = (unsigned)(key >> 40) & (ABSORB - 1);
	for (unsigned k = 0; k < ABSORB; k++) {
		unsigned i = (h + k) & (ABSORB - 1);
		struct absorb *p = &B->ab[i];
		if (p->a == a && p->x == x)
			return p;
		if (!p->a) {
			*p = (struct absorb){x, a, 0};
			B->ab_used[B->nab++] = (uint16_t)i;
			return p;
		}
	}
	return NULL;
}

/* victim_callers' name for the innermost frame open before its window. */
#define BASE UINT64_MAX

/* Opens frame `depth` of B->stack, when under its 256: `value` entered at
 * ts, its fstat f (NULL when the table is full). */
static void frame_open(struct budget *B, unsigned depth, uint64_t value, uint32_t ts,
		       struct fstat *f)
{
	if (depth >= sizeof(B->stack) / sizeof(B->stack[0]))
		return;
	B->stack[depth].value = value;
	B->stack[depth].ts = ts;
	B->stack[depth].child = 0;
	B->stack[depth].calls = 0;
	B->stack[depth].f = f;
}

/* Whether v is muted, or a victim of this round (victim_callers): its
 * fstat, marked the first time it is asked for. */
static struct fstat *gone_of(struct budget *B, uint64_t v)
{
	struct fstat *f = fstat_of(B, v);
	if (f && !f->marked) { /* (the victims were marked first) */
		f->marked = 1;
		f->gone = was_tried(v);
	}
	return f;
}

/* A victim's credits to one caller (victim_callers). */
struct credit {
	uint64_t a;
	double self;
};

/* What victim_callers gathers of the frames open before a window began:
 * the window's time outside its outermost calls, their count, and the
 * self time of muted functions among them. */
struct base_acc {
	double self, in;
	unsigned calls;
	double span; /* the windows' time, first event to last (gaps capped) */
};

/* absorb_window (below): credits `self`, the self time of the frame
 * B->stack[depth], closed or still open at the window's end, to its own
 * function, or — a muted function's — to its nearest caller that is not;
 * with `pre` the frames below the window's outermost calls are not yet the
 * base but frames from before the window that return in it (unknown: a
 * muted function's time with no caller in the window is then no one's). */
static void absorb_frame(struct budget *B, unsigned depth, double self, struct base_acc *ba,
			 int pre)
{
	assert(depth < 256);
	struct fstat *f = B->stack[depth].f;
	if (!f)
		return;
	if (!f->gone) {
		f->own += self;
		return;
	}
	unsigned d = depth;
	while (d > 0 && B->stack[d - 1].f && B->stack[d - 1].f->gone)
		d--;
	if (d == 0 && pre)
		return;
	if (d == 0)
		ba->in += self;
	else if (B->stack[d - 1].f)
		B->stack[d - 1].f->in += self;
	if (f->victim) {
		struct absorb *p = absorb_of(B, f->value, d > 0 ? B->stack[d - 1].value : BASE);
		if (p)
			p->self += self;
	}
}

/*
 * One window (win[0..w)) of victim_callers: credits the self time of each
 * call of a muted function to its nearest caller in the window that stays
 * traced (fstat.in; base_acc.in when none in the window, the base), and
 * every other call's self time to its own function (fstat.own); a call of
 * a victim of the look is also credited to the pair (victim, caller) in
 * B->ab (BASE: the base).  No gap between two events counts for more than
 * gap_max ticks (GAP_MAX_NS): in a window of dense events a longer one is
 * rather the thread off the CPU (a time slice is a few ms) than code between
 * two trace points, and would fall whole into whichever frame was open (a
 * dense function's share of its loop, 90 % on a quiet machine, was 6.5 %
 * under ASan in a loaded CI run).  50 us was too short: bc's untraced
 * stretches are longer, and its muted callees lost their time to `execute`.
 * A frame still open at the window's end counts with its time so far.
 * Returns the depth at its end, the frames still open in B->stack.  One
 * hash lookup per entry, and per exit of a victim.
 */
static unsigned absorb_window(struct budget *B, const uint64_t *win, uint64_t w,
			      const uint64_t *open, unsigned nopen, double tp_ticks,
			      uint32_t gap_max, struct base_acc *ba)
{
	unsigned depth = nopen;
	uint32_t t0 = 0, last = 0, prev = 0;
	int have_ts = 0;
	assert(nopen <= SHARE_OPEN);
	/* Until the last exit of a frame from before the window, what runs
	 * outside the window's calls is inside such frames, not the base's
	 * (the base is read at the window's end): a window that begins in one
	 * of S_parser_feed's calls gave its S_process_line calls to main. */
	uint64_t pre_end; /* the slot after that exit; 0: none */
	win_depth(win, w, nopen, NULL, 0, &pre_end);
	for (uint64_t k = 0; k < w; k++) {
		uint64_t value;
		uint32_t raw, ts;
		int pre = k < pre_end;
		if (!win_event(win, w, &k, &value, &raw))
			continue;
		/* ts: a clock on which no gap between two events exceeds
		 * gap_max (a spell off the CPU would land whole in one frame) */
		uint32_t gap = have_ts ? raw - prev : 0;
		prev = raw;
		ts = last + (gap < gap_max ? gap : gap_max);
		if (!have_ts) {
			t0 = ts;
			/* the frames open before the window, from its first event */
			for (unsigned d = 0; d < nopen; d++)
				frame_open(B, d, open[d], ts, gone_of(B, open[d]));
		}
		have_ts = 1;
		last = ts;
		if (value) {
			if (depth == 0 && !pre) {
				ba->self += (double)(uint32_t)(ts - t0);
				ba->calls++;
			}
			frame_open(B, depth, value, ts, depth < 256 ? gone_of(B, value) : NULL);
			depth++;
			continue;
		}
		if (depth == 0) {
			t0 = ts; /* a frame from before the window returned */
			continue;
		}
		if (--depth == 0)
			t0 = ts;
		if (depth >= 256)
			continue;
		uint32_t dur = ts - B->stack[depth].ts;
		double self = (double)dur - (double)B->stack[depth].child -
			      tp_ticks * (1 + B->stack[depth].calls);
		if (depth > 0) {
			B->stack[depth - 1].child += dur;
			B->stack[depth - 1].calls++;
		}
		absorb_frame(B, depth, self, ba, pre);
	}
	if (have_ts && depth == 0)
		ba->self += (double)(uint32_t)(last - t0);
	/* The frames still open at the end, innermost first, with their time
	 * so far: a caller whose frame outlives the window would otherwise
	 * have its muted callees' time counted and none of its own (a loop
	 * entered in the window and left after it came out as 100 % its
	 * callee's).  Past 256 frames the untracked ones' time is unknown. */
	if (have_ts && depth <= 256) {
		uint32_t inner = 0; /* the open child's time so far */
		for (unsigned d = depth; d-- > 0;) {
			uint32_t dur = last - B->stack[d].ts;
			/* trace points: half of its entry's, its closed
			 * children's, half of the open child's entry's */
			double self = (double)dur - (double)B->stack[d].child - (double)inner -
				      tp_ticks * (0.5 + B->stack[d].calls + 0.5 * (d + 1 < depth));
			absorb_frame(B, d, self, ba, 0);
			inner = dur;
		}
	}
	ba->span += (double)last;
	return depth;
}

/*
 * The frames open at slot `at` of v's ring that were entered in the
 * SHARE_PRE slots before it: their values into open, outermost first (the
 * innermost SHARE_OPEN); returns how many.  An older window read alone
 * would take the frame around it for the base (a loop of inner_loop()
 * calls, each longer than a window, gave their callee's time to the
 * loop's caller); a frame entered before these slots is still the base's
 * to stand for (a long-running loop's).
 */
static unsigned open_before(struct budget *B, const struct rvt_ring_view *v, uint64_t at,
			    uint64_t *open)
{
	uint64_t *scr = B->win + WIN + SHARE_WINS * SHARE_WIN;
	ring_copy(scr, v, (at + v->nslots - SHARE_PRE) % v->nslots, SHARE_PRE);
	uint64_t st[2 * SHARE_OPEN];
	uint64_t unmatched;
	unsigned depth = win_depth(scr, SHARE_PRE, 0, st, 2 * SHARE_OPEN, &unmatched);
	if (depth > 2 * SHARE_OPEN)
		return 0; /* deeper than kept: the innermost are unknown */
	unsigned n = depth < SHARE_OPEN ? depth : SHARE_OPEN;
	memcpy(open, st + depth - n, n * sizeof(*open));
	return n;
}

/*
 * victim_callers, in two steps: callers_gather (in the look, under the
 * registry lock: it copies the older windows and the shadow stack's
 * methods, and the round's victims) and callers_compute (after the look's
 * patches, mute_publish, or before the next look of the same round,
 * callers_settle).  Where the time of the victims B->vic[first..nvic) goes
 * once they are muted: into their nearest caller that stays traced, whose
 * self time then holds it.  Passes over the window choose() read
 * (B->win[0..w)) and over SHARE_WINS older windows of SHARE_WIN slots spread evenly over the
 * SHARE_SPAN slots before it (absorb_window) sum, per caller, its own self
 * time and each muted callee's credited to it; a victim keeps its
 * RVT_MUTED_CALLERS largest callers, each with the share of the caller's
 * self time so counted that was the victim's.  The older windows make the
 * share one of the last few tens of milliseconds, not of the last phase
 * alone (gzip's send_bits, muted in a burst of block output, took 65 % of
 * deflate's self time in its window; its share over the run is a few per
 * cent); as they are evenly spread in slots, a phase counts by the time it
 * took.  A reader splits the caller's measured self time by these shares
 * (FORMAT.md, MUTED_CALLERS).
 * The frames open before a window began are the base: for the newest one,
 * the innermost frame of v's shadow stack (read now, a little later than
 * the window) that is none of the window's open frames nor a victim of
 * this round (one muted before counts); an
 * older window starts with the frames entered in the SHARE_PRE slots before
 * it still open (open_before), and below them is taken to have the same
 * base (a long-running loop's frames); the time outside a window's
 * outermost calls is the base's self time, from the last return in it of
 * a frame from before it (before that return it is that frame's, unknown:
 * no one's).
 */
static void callers_gather(struct budget *B, const struct rvt_ring_view *v, uint64_t w,
			   size_t first, double tp_ticks)
{
	B->nshv = 0;
	if (v->sh_base) {
		uintptr_t top = v->sh_top < v->sh_end ? v->sh_top : v->sh_end;
		for (uintptr_t a = top; a > v->sh_base && B->nshv < SHADOW_SNAP;) {
			a -= RVT_SHADOW_FRAME;
			B->shv[B->nshv++] =
				__atomic_load_n((const uintptr_t *)a + 1, __ATOMIC_RELAXED);
		}
	}
	/* The older windows: written slots before the newest window, at most
	 * SHARE_SPAN and half the ring back (the writer is far from them),
	 * each with SHARE_PRE written slots before it (open_before). */
	uint64_t written = v->wrapped ? v->nslots : v->cur;
	uint64_t back = written > w + SHARE_PRE ? written - w - SHARE_PRE : 0;
	if (back > SHARE_SPAN)
		back = SHARE_SPAN;
	if (back + SHARE_PRE > v->nslots / 2)
		back = v->nslots / 2 > SHARE_PRE ? v->nslots / 2 - SHARE_PRE : 0;
	B->nold = 0;
	for (unsigned j = 1; back >= SHARE_WINS * SHARE_WIN && j <= SHARE_WINS; j++) {
		uint64_t at = (v->cur + v->nslots - w - j * (back / SHARE_WINS)) % v->nslots;
		ring_copy(B->win + WIN + (j - 1) * SHARE_WIN, v, at, SHARE_WIN);
		B->noldopen[j - 1] = open_before(B, v, at, B->oldopen[j - 1]);
		B->nold = j;
	}
	assert(B->nvic <= MAX_VICTIMS && first <= B->nvic);
	memcpy(B->dvic, B->vic, B->nvic * sizeof(*B->vic));
	B->ndvic = B->nvic;
	B->dfirst = first;
	B->dw = w;
	B->dtp = tp_ticks;
	B->deferred = 1;
}

/* The rest of victim_callers, from what callers_gather copied: fills in
 * the callers of B->dvic[dfirst..ndvic). */
static void callers_compute(struct budget *B)
{
	assert(B->deferred);
	B->deferred = 0;
	uint64_t w = B->dw;
	double tp_ticks = B->dtp;
	for (unsigned i = 0; i < B->nused; i++) {
		struct fstat *f = &B->fs[B->used[i]];
		f->marked = f->victim = 0;
		f->own = f->in = 0;
	}
	for (size_t i = 0; i < B->ndvic; i++) {
		struct fstat *f = fstat_of(B, B->dvic[i].value);
		if (f) {
			f->marked = 1;
			f->gone = 1;
			f->victim = i >= B->dfirst;
		}
	}
	for (unsigned i = 0; i < B->nab; i++)
		B->ab[B->ab_used[i]] = (struct absorb){0, 0, 0};
	B->nab = 0;
	struct base_acc ba = {0, 0, 0, 0};
	double gap_ticks =
		GAP_MAX_NS * (double)rvt_clock.hz / 1e9 / (double)(1u << rvt_clock.shift);
	uint32_t gap_max = gap_ticks < 1 ? 1 : (uint32_t)gap_ticks;
	unsigned depth = absorb_window(B, B->win, w, NULL, 0, tp_ticks, gap_max, &ba);
	/* The base: read before the older windows' passes reuse B->stack.  A
	 * function muted before counts: its frame on the shadow stack was
	 * entered before the mute and holds its callees' time in a capture
	 * (bc's interpreter loop `execute`, muted early, keeps its frames).
	 * A victim of this round does not: the frames above the window's end
	 * are read late and may be new ones, and a victim is the likeliest
	 * (bc's `_bc_shift_addsub` was taken for its own callers' caller). */
	uint64_t base = 0;
	unsigned open = depth < 256 ? depth : 256;
	for (unsigned k = 0; k < B->nshv && !base; k++) {
		uint64_t b = B->shv[k];
		int in_window = 0;
		for (unsigned d = 0; d < open && !in_window; d++)
			in_window = B->stack[d].value == b;
		int victim = 0;
		for (size_t i = 0; i < B->ndvic && !victim; i++)
			victim = B->dvic[i].value == b;
		if (b && !in_window && !victim)
			base = b;
	}
	for (unsigned j = 0; j < B->nold; j++)
		absorb_window(B, B->win + WIN + j * SHARE_WIN, SHARE_WIN, B->oldopen[j],
			      B->noldopen[j], tp_ticks, gap_max, &ba);
	double base_self = ba.self - tp_ticks * ba.calls;
	for (size_t i = B->dfirst; i < B->ndvic; i++) {
		struct victim *vi = &B->dvic[i];
		struct credit c[2 * RVT_MUTED_CALLERS];
		unsigned n = 0;
		for (unsigned j = 0; j < B->nab; j++) {
			const struct absorb *p = &B->ab[B->ab_used[j]];
			if (p->x != vi->value || (p->a == BASE && (!base || base == vi->value)))
				continue;
			/* the base's credits are those of the frame it is (which
			 * the newest window may have seen open too) */
			uint64_t a = p->a == BASE ? base : p->a;
			unsigned k = 0;
			while (k < n && c[k].a != a)
				k++;
			if (k == n) {
				if (n == 2 * RVT_MUTED_CALLERS)
					continue; /* more callers than kept: the rest */
				c[n++] = (struct credit){a, 0};
			}
			c[k].self += p->self;
		}
		/* The largest first (a few: insertion). */
		for (unsigned j = 1; j < n; j++)
			for (unsigned k = j; k > 0 && c[k - 1].self < c[k].self; k--) {
				struct credit t = c[k];
				c[k] = c[k - 1];
				c[k - 1] = t;
			}
		vi->ncallers = 0;
		for (unsigned j = 0; j < n && vi->ncallers < RVT_MUTED_CALLERS; j++) {
			if (c[j].self <= 0)
				break;
			/* The caller's self time as it will be: its own and
			 * every muted callee's credited to it. */
			const struct fstat *own = fstat_of(B, c[j].a);
			double all = own ? own->own + own->in : 0;
			if (c[j].a == base)
				all += ba.in + base_self;
			if (all <= 0)
				continue;
			double share = c[j].self / all;
			/* per tick of the windows: each sample counts alike (see
			 * "rechecks") */
			vi->self_t[vi->ncallers] = c[j].self / (ba.span + 1);
			vi->all_t[vi->ncallers] = all / (ba.span + 1);
			vi->caller[vi->ncallers] = c[j].a;
			vi->share_ppm[vi->ncallers++] =
				(uint32_t)(share >= 1 ? 1000000 : share * 1e6 + 0.5);
		}
	}
}

/* The time of the first event at or after slot k of win[0..w); *ok 0 (and
 * 0 returned) when there is none. */
static uint32_t win_ts_at(const uint64_t *win, uint64_t w, uint64_t k, int *ok)
{
	uint64_t value;
	uint32_t ts = 0;
	*ok = 0;
	for (; k < w; k++)
		if (win_event(win, w, &k, &value, &ts)) {
			*ok = 1;
			break;
		}
	return ts;
}

/*
 * Where choose() starts reading win[0..w): at its last half or last
 * quarter when that part came at over twice the rate of the whole (slots
 * per tick), else at 0.  A window that reaches back into a quiet stretch
 * before a new hot phase shows the phase at a fraction of its rate and
 * mixes the quiet stretch's functions into it: cmark's second phase was
 * judged under the budget in a window of 30 ms of quiet and 0.3 ms of
 * burst, and ran traced 1.6 ms more until the next look.
 */
static uint64_t hot_tail(const uint64_t *win, uint64_t w)
{
	if (w < 1024)
		return 0;
	int ok0, ok1, okl = 0;
	uint32_t t0 = win_ts_at(win, w, 0, &ok0), tl = 0;
	for (uint64_t k = w - 16; k < w; k++) { /* the last event's time */
		uint64_t value;
		uint32_t ts;
		if (win_event(win, w, &k, &value, &ts)) {
			tl = ts;
			okl = 1;
		}
	}
	if (!ok0 || !okl)
		return 0;
	uint64_t best = 0;
	double rate = (double)w / ((double)(uint32_t)(tl - t0) + 1);
	const uint64_t at[2] = {w / 2, w - w / 4};
	for (int j = 0; j < 2; j++) {
		uint32_t t = win_ts_at(win, w, at[j], &ok1);
		double r = (double)(w - at[j]) / ((double)(uint32_t)(tl - t) + 1);
		if (ok1 && r > 2 * rate) {
			best = at[j];
			rate = r;
		}
	}
	return best;
}

/* Copies the callers callers_compute found (B->dvic) into the n victims
 * at vic that have the same value. */
static void callers_to(const struct budget *B, struct victim *vic, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = B->dfirst; j < B->ndvic; j++)
			if (B->dvic[j].value == vic[i].value) {
				vic[i].ncallers = B->dvic[j].ncallers;
				memcpy(vic[i].caller, B->dvic[j].caller, sizeof(vic[i].caller));
				memcpy(vic[i].share_ppm, B->dvic[j].share_ppm,
				       sizeof(vic[i].share_ppm));
				memcpy(vic[i].self_t, B->dvic[j].self_t, sizeof(vic[i].self_t));
				memcpy(vic[i].all_t, B->dvic[j].all_t, sizeof(vic[i].all_t));
				break;
			}
}

/* The callers of a look's victims still to compute (callers_gather): done
 * now, into B->vic, before another look's window replaces its copy. */
static void callers_settle(struct budget *B)
{
	if (!B->deferred)
		return;
	callers_compute(B);
	callers_to(B, B->vic + B->dfirst, B->nvic - B->dfirst);
}

/*
 * Reads the newest `w` slots of v's ring and picks the functions to mute
 * so that its trace points' share of CPU falls to a quarter of the budget.
 * That share (ppm) is the larger of `share`, the thread's average since the
 * last look (per CPU second; 0 when unknown), and the window's own (per
 * second of its wall time, so never above the truth): a phase that turned
 * hot a moment ago shows in the window before it shows in the average.  A
 * function's share of the self time is taken over the window's wall time:
 * the thread's spells off the CPU land in whichever frame was running, in
 * proportion to its share of the CPU time, so the share is fair (if noisy
 * under load).  Returns the share it judged.
 */
static double choose(struct budget *B, const struct rvt_ring_view *v, uint64_t w, double share)
{
	if (w > WIN)
		w = WIN;
	if (w < 64 || !rvt_clock.hz || B->cost_ns <= 0)
		return share;
	double tp_ticks = B->cost_ns * (double)rvt_clock.hz / 1e9 / (double)(1u << rvt_clock.shift);
	callers_settle(B); /* another thread's look of this round */
	ring_copy(B->win, v, (v->cur + v->nslots - w) % v->nslots, w);
	for (unsigned i = 0; i < B->nused; i++) /* the last window's functions */
		memset(&B->fs[B->used[i]], 0, sizeof(*B->fs));
	B->nused = 0;
	uint64_t k0 = hot_tail(B->win, w);
	unsigned depth = 0;
	uint64_t events = 0;
	uint32_t first = 0, last = 0;
	int have_ts = 0;
	for (uint64_t k = k0; k < w; k++) {
		uint64_t value;
		uint32_t ts;
		if (!win_event(B->win, w, &k, &value, &ts))
			continue;
		if (!have_ts) {
			first = ts;
			have_ts = 1;
		}
		last = ts;
		events++;
		if (value) {
			struct fstat *f = fstat_of(B, value);
			if (f)
				f->events++;
			frame_open(B, depth++, value, ts, f); /* its exit needs no second lookup */
			continue;
		}
		if (depth == 0)
			continue; /* entered before the window */
		depth--;
		if (depth >= 256)
			continue;
		uint32_t dur = ts - B->stack[depth].ts;
		/* Half of each trace point's cost falls in each frame it touches:
		 * this call's entry and exit, and its children's.  Kept signed and
		 * fractional: a tiny function's calls last 0 or 1 tick of the
		 * shifted counter and a trace point can cost a fifth of one (10 ns
		 * against a 49 ns tick, seen), so only the sum over its calls tells
		 * its own time from the trace points' (rounding each call's share
		 * down to whole ticks left a function that does nothing with 29 %
		 * of the self time, and spared it). */
		double self = (double)dur - (double)B->stack[depth].child -
			      tp_ticks * (1 + B->stack[depth].calls);
		if (depth > 0 && depth - 1 < 256) {
			B->stack[depth - 1].child += dur;
			B->stack[depth - 1].calls++;
		}
		struct fstat *f = B->stack[depth].f;
		if (!f)
			continue;
		assert(f->value == B->stack[depth].value);
		f->events++;
		f->calls++;
		f->self += self;
		if (f->nsamples < SAMPLES)
			f->sample[f->nsamples++] = dur;
		else if (f->calls % 7 == 0)
			f->sample[f->calls % SAMPLES] = dur;
	}
	uint64_t span = (uint32_t)(last - first);
	if (events < 64 || span == 0)
		return share;
	double window = (double)events * 1e9 / (double)ticks_ns(span) * B->cost_ns / 1e3;
	if (window > share)
		share = window;
	double events_per_s = share * 1e3 / B->cost_ns;
	uint32_t budget = atomic_load(&cfg_budget_ppm);
	/* The share the functions not muted yet take: a window can still hold
	 * the last events of functions muted a moment ago, which say nothing
	 * about the others (with them, a few calls of a never-hot function in
	 * a small window looked worth muting). */
	uint64_t live = 0;
	for (unsigned i = 0; i < B->nused; i++) {
		const struct fstat *f = &B->fs[B->used[i]];
		if (!was_tried(f->value))
			live += f->events;
	}
	double left = share * (double)live / (double)events;
	if (left <= budget)
		return share;
	static struct cand c[HASH];
	size_t nc = 0;
	for (unsigned i = 0; i < B->nused; i++) {
		struct fstat *f = &B->fs[B->used[i]];
		if (!f->calls || was_tried(f->value))
			continue;
		double self = f->self > 0 ? f->self / (double)span : 0;
		double part = (double)f->events / (double)events;
		if (self * 1e6 >= SPARE_PPM && part * share <= budget)
			continue; /* a large share of the self time: spared */
		if (part * share < budget * (GAIN_PPM / 1e6))
			continue; /* muting it would hardly help */
		if (part * events_per_s / 2 < MIN_RATE)
			continue; /* nor muting a rarely called one */
		/* Share of the events per share of the self time: the functions
		 * that cost the most trace points for the least time first. */
		c[nc++] = (struct cand){f, part / (self + 0.001)};
	}
	rvt_sort(c, nc, sizeof(*c), cmp_cand);
	size_t first_victim = B->nvic;
	for (size_t i = 0; i < nc && left > budget / (double)TARGET_DIV && B->nvic < MAX_VICTIMS;
	     i++) {
		struct fstat *f = c[i].f;
		int dup = 0;
		for (size_t q = 0; q < B->nvic; q++)
			dup |= B->vic[q].value == f->value;
		if (dup)
			continue;
		rvt_sort(f->sample, f->nsamples, sizeof(f->sample[0]), cmp_u32);
		double part = (double)f->events / (double)events;
		B->vic[B->nvic++] =
			(struct victim){.value = f->value,
					.rate = (uint64_t)(part * events_per_s / 2),
					.median_ns = (uint32_t)ticks_ns(
						f->nsamples ? f->sample[f->nsamples / 2] : 0)};
		left -= share * part;
	}
	if (B->nvic > first_victim) /* computed after the patches (mute_publish) */
		callers_gather(B, v, w, first_victim, tp_ticks);
	return share;
}

/* rvt__wake's threshold for a share of `ppm`: ticks of the shifted counter
 * per slot, 16.16, at which a thread's trace points take that share of its
 * time. */
static uint64_t tps_at(const struct budget *B, double ppm)
{
	double tp_ticks = B->cost_ns * (double)rvt_clock.hz / 1e9 / (double)(1u << rvt_clock.shift);
	return (uint64_t)(tp_ticks * 1e6 / ppm * 65536.0);
}

/* Sets open[i] for the pending functions i in [from, to) of which v's
 * shadow stack holds a frame; -1 when it could not be read (mid-change). */
static int mark_open(struct budget *B, const struct rvt_ring_view *v, size_t from, size_t to)
{
	if (!v->sh_base || v->busy)
		return -1;
	uintptr_t top = v->sh_top < v->sh_end ? v->sh_top : v->sh_end;
	for (size_t i = from; i < to; i++)
		for (uintptr_t a = v->sh_base; a < top && !B->open[i]; a += RVT_SHADOW_FRAME)
			B->open[i] = __atomic_load_n((const uintptr_t *)a + 1, __ATOMIC_RELAXED) ==
				     (uintptr_t)B->pending[i];
	return 0;
}

/* rvt_rings_view's callback: one traced thread's look. */
static void look(void *arg, const struct rvt_ring_view *v)
{
	struct budget *B = arg;
	B->views++;
	if (mark_open(B, v, 0, B->npending) != 0)
		B->unsettled++; /* a shadow stack mid-change */
	struct tstate *st = tstate_of(B, v->tid);
	uint64_t cpu = thread_cpu_ns(v->tid);
	if (cpu > st->seen_cpu_ns && st->seen_cpu_ns)
		B->ran_ns += cpu - st->seen_cpu_ns;
	st->seen_cpu_ns = cpu;
	/* Whether it wrote faster than the budget allows between two bounds
	 * since the last look (rvt__wake): what woke this look, if anything. */
	uint64_t fast = atomic_exchange_explicit(&v->ring->wake_fast, 0, memory_order_relaxed);
	uint64_t li = v->cur ? v->cur - 1 : v->nslots - 1;
	uint64_t last = v->cur || v->wrapped ? __atomic_load_n(&v->slots[li], __ATOMIC_RELAXED) : 0;
	uint64_t d;
	double events_per_s = 0; /* since the last look, per CPU second */
	if (!st->looks || st->ring_seq != v->ring->seq || cpu < st->cpu_ns) {
		B->fresh++;
		st->ring_seq = v->ring->seq; /* a new ring: start counting again */
		st->cur = v->cur;
		st->last_slot = last;
		st->cpu_ns = cpu;
		st->looks++;
		if (!fast)
			return;
		d = v->wrapped ? v->nslots : v->cur; /* a hot start: read what it wrote */
	} else {
		st->looks++;
		uint64_t d_cpu = cpu - st->cpu_ns;
		if (d_cpu < 1000000 && !fast)
			return; /* under a millisecond of CPU: look again later */
		/* Slots since the last look: exact unless the ring went round
		 * more than once (the slot we saw last was overwritten). */
		d = (v->cur + v->nslots - st->cur) % v->nslots;
		uint64_t prev = st->cur ? st->cur - 1 : v->nslots - 1;
		if (__atomic_load_n(&v->slots[prev], __ATOMIC_RELAXED) != st->last_slot)
			d += v->nslots;
		st->cur = v->cur;
		st->last_slot = last;
		st->cpu_ns = cpu;
		events_per_s = d_cpu ? (double)d * 1e9 / (double)d_cpu : 0;
	}
	uint32_t budget = atomic_load(&cfg_budget_ppm);
	double share = events_per_s * B->cost_ns / 1e3; /* ppm */
	if (share <= budget && !fast) {
		st->futile = 0;
		atomic_store_explicit(&v->ring->wake_tps, 0, memory_order_relaxed);
		return;
	}
	/* A window that gave no victim is not read again until the share
	 * doubles (a new phase of the program: it then wakes the budget) or
	 * 32 looks went by. */
	if (st->futile > 0 && !fast && share < 2 * st->futile && ++st->futile_looks < 32) {
		B->over++;
		B->futile++;
		return;
	}
	size_t before = B->nvic;
	share = choose(B, v, d, share);
	if (share <= budget) { /* the window says it is under the budget */
		st->futile = 0;
		atomic_store_explicit(&v->ring->wake_tps, 0, memory_order_relaxed);
		return;
	}
	B->over++;
	st->futile = B->nvic == before ? share : 0;
	st->futile_looks = 0;
	B->futile += st->futile > 0;
	atomic_store_explicit(&v->ring->wake_tps, st->futile ? tps_at(B, 2 * st->futile) : 0,
			      memory_order_relaxed);
}

static void add_muted(const struct victim *vi, uint64_t when, uint32_t sites)
{
	size_t at = atomic_load_explicit(&nmuted, memory_order_relaxed);
	if (at == RVT_MUTED_MAX)
		return;
	struct rvt_muted *m = &muted[at];
	*m = (struct rvt_muted){.value = vi->value,
				.counter = when,
				.monotonic_ns = mono_ns(),
				.rate = vi->rate,
				.median_ns = vi->median_ns,
				.sites = sites};
	m->ncallers = vi->ncallers;
	racc[at] = (struct recheck_acc){.n = vi->ncallers};
	for (unsigned i = 0; i < vi->ncallers; i++) {
		m->caller[i] = racc[at].caller[i] = vi->caller[i];
		m->share_ppm[i] = vi->share_ppm[i];
		racc[at].self[i] = vi->self_t[i];
		racc[at].all[i] = vi->all_t[i];
	}
	atomic_store_explicit(&nmuted, at + 1, memory_order_release);
}

/* Adds the site of a learned hook call (returning to `ret`) of function
 * `fn` to fn's module, unless the scan found it. */
static void add_learned(uintptr_t fn, uintptr_t ret, int exit)
{
	struct module *m = module_of(fn), *c = module_of(ret - 5);
	if (!m || !c)
		return;
	uintptr_t t = 0, call = ret - 5;
	unsigned len = call_at(c, call, &t);
	enum hook k = len == 5 ? hook_at(c, t) : H_NONE;
	if (k == H_NONE) {
		call = ret - 6;
		len = call_at(c, call, &t);
		k = len == 6 ? hook_at(c, t) : H_NONE;
	}
	if (k == H_NONE || exit != (k == H_INL_EXIT || k == H_CALL_EXIT))
		return;
	for (size_t i = 0; i < m->nsites; i++)
		if (m->sites[i].call == call)
			return;
	struct site_vec sv = {m->sites, m->nsites, m->cap};
	if (site_add(&sv, &(struct site){fn, call, 0, (uint8_t)len, 0, (uint8_t)exit}))
		return;
	rvt_sort(sv.v, sv.n, sizeof(*sv.v), cmp_site);
	m->sites = sv.v;
	m->nsites = sv.n;
	m->cap = sv.cap;
}

/* Learns the call sites of the functions of vic[0..n) that run meanwhile
 * (call mode has no other way to tell them; inline mode's rare shapes the
 * scan missed): every traced thread's trace points report their call site
 * (RVT__START_LEARN) for LEARN_MS, up to 4 times as long until each function
 * has shown an entry. */
static void learn_sites(const struct victim *vic, size_t n)
{
	rvt_learning(1);
	for (unsigned ms = 0; ms < 4 * LEARN_MS; ms++) {
		struct timespec ts = {0, 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		if (ms + 1 < LEARN_MS)
			continue;
		unsigned seen = 0;
		for (size_t i = 0; i < n; i++) {
			uintptr_t want = (uintptr_t)(vic[i].value + rvt_method_base), fn, ret;
			int exit, found = 0;
			for (size_t at = 0;
			     !found && (at = rvt_learned(at, &fn, &ret, &exit)) != 0;)
				found = fn == want && !exit;
			seen += found;
		}
		if (seen == n)
			break;
	}
	rvt_learning(0);
	uintptr_t fn, ret;
	int exit;
	for (size_t at = 0; (at = rvt_learned(at, &fn, &ret, &exit)) != 0;)
		for (size_t i = 0; i < n; i++)
			if (fn == (uintptr_t)(vic[i].value + rvt_method_base))
				add_learned(fn, ret, exit);
}

/* 1 when the scan found an entry site of the function at `a`. */
static int has_entry_site(uintptr_t a)
{
	size_t n;
	struct site *s = sites_of(a, &n);
	for (size_t k = 0; k < n; k++)
		if (!s[k].exit)
			return 1;
	return 0;
}

/* 1 when the function at `a` has inline-mode entry sites only: the scan
 * finds each of them by its shape (the check and its cold block), so it
 * needs no learning.  A call-mode site is found only when the function's
 * address is loaded just before the call; others are learned. */
static int sites_known(uintptr_t a)
{
	size_t n;
	struct site *s = sites_of(a, &n);
	int entries = 0;
	for (size_t k = 0; k < n; k++) {
		if (s[k].exit)
			continue;
		if (!s[k].jcc)
			return 0;
		entries++;
	}
	return entries > 0;
}

/* Mutes B's victims: keys and addresses by flag, code by queueing its entry
 * sites (the exit sites wait in B->pending); mute_publish applies them all
 * behind one barrier and records them in B->done. */
static void mute_victims(struct budget *B)
{
	struct victim *done = B->done, learn[MAX_VICTIMS];
	uint32_t *sites = B->done_sites;
	size_t ndone = 0, nlearn = 0, code = 0;
	/* Every victim gets its MUTED record: no more than there is room for. */
	size_t room = RVT_MUTED_MAX - atomic_load(&nmuted);
	if (B->nvic > room)
		B->nvic = room;
	/* Keys first: they need no code. */
	for (size_t i = 0; i < B->nvic; i++) {
		const struct victim *vi = &B->vic[i];
		set_tried(vi->value);
		if (rvt_key_mute((const void *)(uintptr_t)(vi->value + rvt_method_base)) == 0) {
			sites[ndone] = 0;
			done[ndone++] = *vi;
		} else {
			B->vic[code++] = *vi;
		}
	}
	/* Call sites the scan could not tell are learned while the program
	 * runs (learn_sites); inline-mode sites need none (sites_known). */
	for (size_t i = 0; i < code; i++)
		if (!sites_known((uintptr_t)(B->vic[i].value + rvt_method_base)))
			learn[nlearn++] = B->vic[i];
	if (nlearn)
		learn_sites(learn, nlearn);
	for (size_t i = 0; i < code; i++) {
		const struct victim *vi = &B->vic[i];
		uintptr_t a = (uintptr_t)(vi->value + rvt_method_base);
		size_t n;
		struct site *s = sites_of(a, &n);
		if (has_entry_site(a)) {
			if (B->npending == PENDING_MAX)
				continue;
			mute_sites(s, n, 0);
			sites[ndone] = (uint32_t)n;
			done[ndone++] = *vi;
			B->quiet[B->npending] = 0;
			B->pending[B->npending++] = vi->value;
		} else if (rvt_addr_mute((const void *)a) == 0) {
			/* No trace point in the code: a runtime traces it by
			 * address and reads the list at each call. */
			sites[ndone] = 0;
			done[ndone++] = *vi;
		} else {
			retry_later(vi->value);
		}
	}
	B->ndone = ndone;
}

/* Applies what mute_victims and mute_exits queued, behind one barrier (one
 * round of TLB shootdowns and serialising IPIs instead of two, each round
 * an interrupt of every CPU running the program), and gives the victims
 * their MUTED records:
 * the runtimes read their flags at each call, the code is changed, and
 * after every thread passed the barrier no new frame of a victim starts. */
static void mute_publish(struct budget *B)
{
	if (npokes)
		patch_apply();
	else if (B->ndone)
		sync_core(); /* flags only */
	uint64_t when = rvt__counter();
	/* Where the last look's victims' time goes: computed only now, so
	 * that the patches come ~0.25 ms sooner (the program runs traced
	 * meanwhile); their MUTED records carry it. */
	if (B->deferred && B->ndone) {
		callers_compute(B);
		callers_to(B, B->done, B->ndone);
	}
	B->deferred = 0;
	for (size_t i = 0; i < B->ndone; i++)
		add_muted(&B->done[i], when, B->done_sites[i]);
	B->ndone = 0;
}

/*
 * Mutes the exit sites of the pending functions that two looks in a row
 * found on no thread's shadow stack: none can appear there any more (their
 * entry sites are muted), bar a trace point that had passed its call site
 * before the entry sites changed and was preempted there for a whole look
 * (then its exit is lost and its caller's exit closes it,
 * rvt__exit_repair).  Returns how many are on their way: muted now, or
 * found on no stack this time (0: every one still has a frame open, or the
 * stacks could not be read).
 */
static size_t mute_exits(struct budget *B)
{
	size_t keep = 0, moving = 0;
	for (size_t i = 0; i < B->npending; i++) {
		int settled = i < B->nlooked && !B->unsettled;
		B->quiet[i] = !settled || B->open[i] ? 0 : B->quiet[i] + 1;
		moving += B->quiet[i] > 0;
		if (B->quiet[i] < 2) {
			B->open[keep] = B->open[i];
			B->quiet[keep] = B->quiet[i];
			B->pending[keep++] = B->pending[i];
			continue;
		}
		size_t n;
		struct site *s = sites_of((uintptr_t)(B->pending[i] + rvt_method_base), &n);
		mute_sites(s, n, 1);
	}
	B->npending = keep;
	return moving;
}

/* ---- rechecks: a muted function's share measured again ---- */

/*
 * A share measured when its function was muted is that of the first
 * milliseconds of a phase, and stays so for the rest of the run (gzip's
 * longest_match: 69 % of deflate's self time at its mute 1.5 ms in, 31 %
 * after the first 100 ms; estimates 35-57 points of perf off on gzip and
 * bc, tracer/BENCHMARKS.md).  So now and then the budget reopens up to
 * RECHECK_FNS muted functions (round robin over those with sites) for a
 * moment — their exit sites first, then their entry sites, each behind a
 * barrier, as muting in reverse — lets the threads write RECHECK_SLOTS
 * slots or run RECHECK_US, mutes their entry sites again (their exits wait
 * in B->pending as after any mute) and reads what the threads wrote
 * meanwhile.  In that window each reopened function's self time is
 * credited to its nearest caller whose frame a capture shows (every other
 * muted function stays folded), and that caller's self time with every
 * muted function folded in is summed beside it, both per tick of the
 * window: over the windows read at the mute and the rechecks, the share is
 * Σ credit / Σ caller's time (racc), each sample weighing alike.  As the
 * rechecks come at even steps of the threads' CPU time, a phase counts by
 * the time the program spent in it (the mute's sample stands for the time
 * until the first recheck).  What a MUTED_CALLERS record says
 * is still what a reader expects (FORMAT.md): the share of the caller's self time with the
 * functions muted before it folded in, the later ones' taken out first
 * (recheck_publish converts).  A recheck is due once the traced threads ran
 * RECHECK_DIV / budget times what the last one cost (its slots' trace
 * points and the budget thread's CPU): it keeps within a quarter of the
 * budget however many functions are muted.  Only the budget thread
 * rechecks; the records change under muted_seq (rvt_mute_list).
 */
#define RECHECK_FNS   32u
#define RECHECK_SLOTS 8192u
#define RECHECK_US    2000u
#define RECHECK_DIV   4u

/* The inverse of mute_sites: queues each muted trace point of the `n` sites
 * whose `exit` flag is `exit` back to its original instruction. */
static void open_sites(struct site *s, size_t n, int exit)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i].exit != exit)
			continue;
		if (s[i].jcc)
			s[i].jcc_len == 6 ? poke_add(s[i].jcc + 1, 0x82, 0x85)
					  : poke_add(s[i].jcc, 0x72, 0x75);
		s[i].call_len == 5 ? poke_add(s[i].call, 0x3d, 0xe8)
				   : poke_add(s[i].call, 0x3b, 0xff);
	}
}

/* The functions whose entry sites a recheck has open now (muted[]
 * indexes): a fork's child, whose budget starts afresh and never mutes
 * again what was muted, mutes them at once (budget_atfork_child). */
static uint32_t rc_open[RECHECK_FNS];
static _Atomic unsigned rc_nopen;

unsigned rvt__mute_recheck_open(void)
{
	return atomic_load(&rc_nopen);
}

/* Queues the muting of the entry sites of muted[idx[0..n)]. */
static void remute_entries(const uint32_t *idx, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		size_t k;
		struct site *s = sites_of((uintptr_t)(muted[idx[i]].value + rvt_method_base), &k);
		mute_sites(s, k, 0);
	}
}

struct recheck {
	struct budget *B;
	uint32_t idx[RECHECK_FNS]; /* the reopened functions' muted[] indexes */
	unsigned n;
	uint64_t most;	/* slots a thread wrote since the mark (recheck_poll) */
	uint64_t slots; /* written by all threads in the window */
};

/* rvt_rings_view: where each thread's window starts. */
static void recheck_mark(void *arg, const struct rvt_ring_view *v)
{
	struct recheck *R = arg;
	struct tstate *st = tstate_of(R->B, v->tid);
	st->rc_from = v->cur;
	st->rc_seq = v->ring->seq;
}

static uint64_t recheck_written(struct budget *B, const struct rvt_ring_view *v)
{
	struct tstate *st = tstate_of(B, v->tid);
	if (st->rc_seq != v->ring->seq)
		return 0;
	return (v->cur + v->nslots - st->rc_from) % v->nslots;
}

/* rvt_rings_view: the most slots one thread wrote since the mark. */
static void recheck_poll(void *arg, const struct rvt_ring_view *v)
{
	struct recheck *R = arg;
	uint64_t d = recheck_written(R->B, v);
	if (d > R->most)
		R->most = d;
}

/* Adds `self` of a credited caller `a` whose time with every muted function
 * folded in is `all` to racc[i]. */
static void recheck_add(struct recheck_acc *r, uint64_t a, double self, double all)
{
	unsigned k = 0;
	while (k < r->n && r->caller[k] != a)
		k++;
	if (k == r->n) {
		if (self <= 0 || r->n == RVT_MUTED_CALLERS)
			return; /* more callers than kept: the rest */
		r->caller[r->n] = a;
		r->self[r->n] = r->all[r->n] = 0;
		r->n++;
	}
	r->self[k] += self;
	r->all[k] += all;
}

/*
 * rvt_rings_view, after the entry sites are muted again: reads the newest
 * slots a thread wrote since the mark (at most WIN) and credits the
 * reopened functions' self time as above; the thread's counts restart from
 * here (its burst is no phase of its own for the looks to judge).
 */
static void recheck_read(void *arg, const struct rvt_ring_view *v)
{
	struct recheck *R = arg;
	struct budget *B = R->B;
	uint64_t w = recheck_written(B, v);
	struct tstate *st = tstate_of(B, v->tid);
	st->cur = v->cur;
	uint64_t li = v->cur ? v->cur - 1 : v->nslots - 1;
	st->last_slot = v->cur || v->wrapped ? __atomic_load_n(&v->slots[li], __ATOMIC_RELAXED) : 0;
	st->cpu_ns = st->seen_cpu_ns = thread_cpu_ns(v->tid);
	atomic_store_explicit(&v->ring->wake_fast, 0, memory_order_relaxed);
	R->slots += w;
	if (w < 64)
		return;
	if (w > WIN)
		w = WIN;
	ring_copy(B->win, v, (v->cur + v->nslots - w) % v->nslots, w);
	for (unsigned i = 0; i < B->nused; i++) {
		struct fstat *f = &B->fs[B->used[i]];
		f->marked = f->victim = 0;
		f->own = f->in = 0;
	}
	for (unsigned i = 0; i < B->nab; i++)
		B->ab[B->ab_used[i]] = (struct absorb){0, 0, 0};
	B->nab = 0;
	for (unsigned i = 0; i < R->n; i++) {
		struct fstat *f = fstat_of(B, muted[R->idx[i]].value);
		if (f)
			f->marked = f->gone = f->victim = 1;
	}
	double tp_ticks = B->cost_ns * (double)rvt_clock.hz / 1e9 / (double)(1u << rvt_clock.shift);
	double gap_ticks =
		GAP_MAX_NS * (double)rvt_clock.hz / 1e9 / (double)(1u << rvt_clock.shift);
	struct base_acc ba = {0, 0, 0, 0};
	unsigned depth = absorb_window(B, B->win, w, NULL, 0, tp_ticks,
				       gap_ticks < 1 ? 1 : (uint32_t)gap_ticks, &ba);
	/* The base: the innermost frame of the shadow stack that none of the
	 * window's open frames is (read just after the window: a reopened
	 * function's frame there is one from before the mark, as no new one
	 * opens since its entries were muted again). */
	uint64_t base = 0;
	unsigned open = depth < 256 ? depth : 256;
	if (v->sh_base) {
		uintptr_t top = v->sh_top < v->sh_end ? v->sh_top : v->sh_end;
		for (uintptr_t a = top; a > v->sh_base && !base;) {
			a -= RVT_SHADOW_FRAME;
			uint64_t b = __atomic_load_n((const uintptr_t *)a + 1, __ATOMIC_RELAXED);
			int in_window = 0;
			for (unsigned d = 0; d < open && !in_window; d++)
				in_window = B->stack[d].value == b;
			if (b && !in_window)
				base = b;
		}
	}
	double base_all = ba.in + ba.self - tp_ticks * ba.calls;
	for (unsigned i = 0; i < R->n; i++) {
		struct recheck_acc *r = &racc[R->idx[i]];
		uint64_t x = muted[R->idx[i]].value;
		for (unsigned j = 0; j < B->nab; j++) {
			const struct absorb *p = &B->ab[B->ab_used[j]];
			if (p->x != x || (p->a == BASE && (!base || base == x)))
				continue;
			uint64_t a = p->a == BASE ? base : p->a;
			const struct fstat *fa = fstat_of(B, a);
			double all = (fa ? fa->own + fa->in : 0) + (a == base ? base_all : 0);
			if (all > 0)
				recheck_add(r, a, p->self / (ba.span + 1), all / (ba.span + 1));
		}
		/* A kept caller this window saw no call from: its time counts,
		 * the function's share of it was 0. */
		for (unsigned k = 0; k < r->n; k++) {
			int credited = 0;
			for (unsigned j = 0; j < B->nab && !credited; j++) {
				const struct absorb *p = &B->ab[B->ab_used[j]];
				credited =
					p->x == x && (p->a == BASE ? base : p->a) == r->caller[k];
			}
			if (credited)
				continue;
			const struct fstat *fa = fstat_of(B, r->caller[k]);
			double all =
				(fa ? fa->own + fa->in : 0) + (r->caller[k] == base ? base_all : 0);
			if (all > 0)
				r->all[k] += all / (ba.span + 1);
		}
		r->seen = 1;
	}
}

/* A caller's running sum of the shares taken from it (recheck_publish). */
struct taken {
	uint64_t a;
	double f;
};

static double *taken_of(struct taken *t, size_t *n, uint64_t a)
{
	for (size_t i = 0; i < *n; i++)
		if (t[i].a == a)
			return &t[i].f;
	t[*n] = (struct taken){a, 0};
	return &t[(*n)++].f;
}

/*
 * Rewrites the shares of the rechecked functions' records.  A reader takes
 * the newest records' estimates out of a caller's self time before it
 * applies an older record's share (rva_muted_self; one look's records
 * alike): so with f the measured fractions of the caller's all-folded self
 * time, a record's share is f / (1 − the fractions of the later looks'
 * records on that caller).  A record never rechecked keeps its share,
 * which takes s × (1 − those) of the caller.
 */
static void recheck_publish(void)
{
	size_t nm = atomic_load_explicit(&nmuted, memory_order_relaxed);
	static struct taken tk[RVT_MUTED_MAX * RVT_MUTED_CALLERS];
	static double f[RVT_MUTED_MAX][RVT_MUTED_CALLERS];
	size_t ntk = 0;
	atomic_fetch_add_explicit(&muted_seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (size_t g1 = nm; g1 > 0;) {
		size_t g0 = g1 - 1;
		while (g0 > 0 && muted[g0 - 1].counter == muted[g1 - 1].counter)
			g0--;
		for (size_t i = g0; i < g1; i++) {
			struct rvt_muted *m = &muted[i];
			const struct recheck_acc *r = &racc[i];
			unsigned n = r->seen ? r->n : m->ncallers;
			struct credit c[RVT_MUTED_CALLERS];
			for (unsigned k = 0; k < n; k++) {
				c[k].a = r->seen ? r->caller[k] : m->caller[k];
				double rest = 1 - *taken_of(tk, &ntk, c[k].a);
				if (rest < 1e-6)
					rest = 1e-6;
				double fk = r->seen ? (r->all[k] > 0 ? r->self[k] / r->all[k] : 0)
						    : m->share_ppm[k] / 1e6 * rest;
				f[i][k] = fk;
				c[k].self = fk / rest; /* the share a reader applies */
			}
			if (!r->seen)
				continue;
			for (unsigned j = 1; j < n; j++) /* the largest first */
				for (unsigned k = j; k > 0 && c[k - 1].self < c[k].self; k--) {
					struct credit t = c[k];
					c[k] = c[k - 1];
					c[k - 1] = t;
				}
			unsigned kept = 0;
			for (unsigned k = 0; k < n; k++) {
				if (c[k].self <= 0)
					continue;
				__atomic_store_n(&m->caller[kept], c[k].a, __ATOMIC_RELAXED);
				__atomic_store_n(&m->share_ppm[kept],
						 (uint32_t)(c[k].self >= 1 ? 1000000
									   : c[k].self * 1e6 + 0.5),
						 __ATOMIC_RELAXED);
				kept++;
			}
			__atomic_store_n(&m->ncallers, kept, __ATOMIC_RELAXED);
		}
		for (size_t i = g0; i < g1; i++) {
			unsigned n = racc[i].seen ? racc[i].n : muted[i].ncallers;
			for (unsigned k = 0; k < n; k++)
				*taken_of(tk, &ntk,
					  racc[i].seen ? racc[i].caller[k] : muted[i].caller[k]) +=
					f[i][k];
		}
		g1 = g0;
	}
	atomic_thread_fence(memory_order_release);
	atomic_fetch_add_explicit(&muted_seq, 1, memory_order_relaxed);
}

/* CPU the traced threads must run before the next recheck, after one that
 * cost `cost` ns (RECHECK_DIV). */
static double recheck_due(double cost)
{
	return cost * 1e6 * RECHECK_DIV / (double)atomic_load(&cfg_budget_ppm);
}

static uint64_t own_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * One recheck (see above), under rvt_modules_mu, when no exit site waits
 * (B->pending is empty): the reopened functions' exits go there after it.
 * Returns what it cost (ns: its slots' trace points and the budget
 * thread's CPU), 0 when there was nothing to reopen.
 */
static double recheck(struct budget *B)
{
	static size_t next; /* round robin over muted[] */
	struct recheck R = {.B = B};
	size_t nm = atomic_load_explicit(&nmuted, memory_order_relaxed);
	uint64_t cpu0 = own_cpu_ns();
	assert(B->npending == 0);
	for (size_t k = 0; k < nm && R.n < RECHECK_FNS; k++) {
		size_t i = (next + k) % nm, n;
		if (muted[i].sites && sites_of((uintptr_t)(muted[i].value + rvt_method_base), &n))
			R.idx[R.n++] = (uint32_t)i;
	}
	if (!R.n)
		return 0;
	next = (R.idx[R.n - 1] + 1) % nm;
	memcpy(rc_open, R.idx, R.n * sizeof(*R.idx));
	atomic_store(&rc_nopen, R.n);
	/* Exits first: a frame opened once the entries run has its exit. */
	for (int exit = 1; exit >= 0; exit--) {
		for (unsigned i = 0; i < R.n; i++) {
			size_t n;
			struct site *s =
				sites_of((uintptr_t)(muted[R.idx[i]].value + rvt_method_base), &n);
			open_sites(s, n, exit);
		}
		patch_apply();
	}
	rvt_rings_view(recheck_mark, &R);
	uint64_t t0 = mono_ns();
	do {
		struct timespec ts = {0, 200000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		R.most = 0;
		rvt_rings_view(recheck_poll, &R);
	} while ((R.most < RECHECK_SLOTS && mono_ns() - t0 < RECHECK_US * 1000u) ||
		 atomic_load(&recheck_hold));
	remute_entries(R.idx, R.n);
	for (unsigned i = 0; i < R.n; i++) {
		B->quiet[B->npending] = 0;
		B->pending[B->npending++] = muted[R.idx[i]].value;
	}
	patch_apply();
	atomic_store(&rc_nopen, 0);
	rvt_rings_view(recheck_read, &R);
	recheck_publish();
	double cost = (double)R.slots * B->cost_ns + (double)(own_cpu_ns() - cpu0);
	atomic_fetch_add_explicit(&recheck_ns, (uint64_t)cost, memory_order_relaxed);
	atomic_fetch_add_explicit(&rechecks, 1, memory_order_relaxed);
	return cost;
}

/*
 * ns per trace point on this machine now: the budget thread traces 512
 * calls of itself into a scratch ring of its own (never registered, so no
 * capture or view ever sees it) through the call-mode hooks, four times,
 * and keeps the quickest round.  What a trace point costs is mostly its
 * counter read, which a virtual machine may make slow.
 */
static double measure_cost(void)
{
	enum { SLOTS = 8192, ROUNDS = 4, CALLS = 512 };
	static uint64_t slots[SLOTS];
	static uintptr_t shadow[2 * RVT_SHADOW_FRAMES];
	/* Segments as a ring's (tracer.c): a STACK record every 512 slots. */
	struct rvt_ring r = {.slots = slots, .shadow = shadow, .nslots = SLOTS, .step = 512};
	struct rvt__thread *t = &rvt__tls;
	double best = 1e9;
	for (int round = 0; round < ROUNDS; round++) {
		RVT__ST_REL(t->start, (uintptr_t)&r);
		uint64_t t0 = mono_ns();
		for (int i = 0; i < CALLS; i++) {
			__cyg_profile_func_enter((void *)measure_cost, NULL);
			__cyg_profile_func_exit((void *)measure_cost, NULL);
		}
		uint64_t t1 = mono_ns();
		__atomic_store_n(&t->start, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&t->seen, 0, __ATOMIC_SEQ_CST);
		double c = (double)(t1 - t0) / (2 * CALLS);
		best = c < best ? c : best;
	}
	return best < 2 ? 2 : best > 200 ? 200 : best;
}

static int budget_up;		   /* under mu: the budget thread runs */
static _Atomic uint32_t budget_go; /* 1: tracing started (a futex word) */

/* Sleeps `us` microseconds, or less when a traced thread over its budget
 * wakes it (rvt__wake), though not sooner than `gap_us` from now. */
static void budget_sleep(unsigned us, unsigned gap_us)
{
	uint64_t gap = (uint64_t)((double)gap_us * 1e-6 * (double)rvt_clock.hz) >> rvt_clock.shift;
	atomic_store(&rvt__wake.not_before, (rvt__counter() >> rvt_clock.shift) + gap);
	atomic_store(&rvt__wake.word, 1);
	struct timespec ts = {us / 1000000u, (long)(us % 1000000u) * 1000L};
	rvt_sys(SYS_futex, (long)&rvt__wake.word, FUTEX_WAIT_PRIVATE, 1, (long)&ts);
	atomic_store(&rvt__wake.word, 0);
}

/* Scans every inline-mode module that registered a gate for its trace
 * points (module_at) before a look, not when its first function is to be
 * muted: at the start of a program that scan (~1 ms a MiB of code) stood
 * between the first look that chose victims and their patches while the
 * program ran its first hot phase traced.  (Tracing may start before the
 * program's constructors register its gates: RV_TRACE starts it in
 * librvtrace's.)  While no gate comes or goes this is a compare; a
 * module without a gate (call mode) is scanned when one of its functions
 * is first chosen. */
static void prescan(void)
{
	static unsigned seen_gen;
	static int seen;
	uintptr_t g[MODS_MAX];
	unsigned gen;
	rvt_mu_lock(&rvt_modules_mu); /* no module unmapped while it is read */
	size_t n = rvt_gates_list(g, MODS_MAX, &gen);
	if (!seen || gen != seen_gen) { /* a gate came or went since the last */
		seen = 1;
		seen_gen = gen;
		modules_forget_closed();
		for (size_t i = 0; i < n; i++)
			(void)module_at(g[i], 0);
	}
	rvt_mu_unlock(&rvt_modules_mu);
}

/* A round's second pass over the rings, after its patches: fills each ring
 * ahead of its writer (rvt_ring_fill_ahead) — a fill can take a millisecond
 * (a 2 MiB chunk of small pages), and a thread that writes fast enough to
 * need one is the thread whose look should patch soonest — and marks which
 * of the functions muted at this round (the last nnew of pending) the
 * thread has a frame of (budget_main). */
static void fill_look(void *arg, const struct rvt_ring_view *v)
{
	struct budget *B = arg;
	rvt_ring_fill_ahead(v->ring, v->cur, v->wrapped);
	if (mark_open(B, v, B->npending - B->nnew, B->npending) != 0)
		B->unsettled++;
}

/* The budget thread (see the top): a bare thread (bare.c), so it may call
 * nothing of glibc's that relies on knowing every thread. */
static void budget_main(void *arg)
{
	struct budget *B = arg;
	B->cost_ns = measure_cost();
	B->rc_due = recheck_due(RECHECK_SLOTS * B->cost_ns);
	unsigned period = PERIOD_NEW_US;
	int start = 1; /* tracing just started */
	for (;;) {
		atomic_store(&rvt__wake.tps,
			     atomic_load(&cfg_on) ? tps_at(B, atomic_load(&cfg_budget_ppm)) : 0);
		/* At a start (until a traced thread has written), the scan of
		 * the modules whose gates are there by now (a module that
		 * registers one later wakes the budget to scan it:
		 * rvt_mute_module_added) and a wake as soon as a thread writes
		 * fast: a program's first hot phase begins with it (cmark's
		 * first 1.75 ms: 24 k calls). */
		if (start && atomic_load(&cfg_on))
			prescan();
		budget_sleep(period, start ? 0 : PERIOD_OVER_US);
		atomic_fetch_add_explicit(&wakeups, 1, memory_order_relaxed);
		B->nvic = 0;
		B->views = 0;
		B->over = 0;
		B->futile = 0;
		B->ran_ns = 0;
		B->fresh = 0;
		B->unsettled = 0;
		memset(B->open, 0, sizeof(B->open));
		B->nlooked = B->npending;
		if (atomic_load(&cfg_on)) {
			prescan();
			rvt_rings_view(look, B);
		}
		if (B->views)
			start = 0; /* a thread wrote: its first phase is under way */
		/* Reading and patching modules' code: none may be unmapped
		 * meanwhile (rvt_modules_mu; the scan took it too). */
		rvt_mu_lock(&rvt_modules_mu);
		modules_forget_closed();
		if (B->nvic)
			mute_victims(B);
		B->nnew = B->npending - B->nlooked; /* muted this round */
		size_t moving = B->npending ? mute_exits(B) : 0;
		mute_publish(B);
		rvt_mu_unlock(&rvt_modules_mu);
		/* The second pass: besides the fills, the shadow stacks now that
		 * the round's entry sites are patched: a function muted this
		 * round that no thread has a frame of counts a first quiet look
		 * (mute_exits), so its exit sites go one look sooner — each
		 * exit of it costs a call of the exit check until then (zstd
		 * -d: 10-16 % of the program's CPU for the 2 ms after its first
		 * mute). */
		if (atomic_load(&cfg_on)) {
			size_t first_new = B->npending - B->nnew;
			memset(B->open + first_new, 0, B->nnew);
			B->unsettled = 0;
			rvt_rings_view(fill_look, B);
			for (size_t i = first_new; i < B->npending && !B->unsettled; i++)
				B->quiet[i] = !B->open[i];
		}
		/* A recheck (see there) when one is due and nothing waits. */
		B->rc_ran += (double)B->ran_ns;
		if (atomic_load(&cfg_on) && B->views && !B->nvic && !B->npending && !B->deferred &&
		    B->rc_ran >= B->rc_due && atomic_load(&nmuted)) {
			rvt_mu_lock(&rvt_modules_mu);
			modules_forget_closed();
			double cost = recheck(B);
			rvt_mu_unlock(&rvt_modules_mu);
			if (cost > 0) {
				B->rc_ran = 0;
				B->rc_due = recheck_due(cost);
			}
		}
		atomic_store(&npending_exits, B->npending);
		/* Look soon after a thread starts, often while muting or while
		 * exits wait (backing off to every 16 ms while each waits for a
		 * frame to close: a muted function whose frame stays open, an
		 * event loop's, would otherwise keep it looking every
		 * millisecond, ~25 us of CPU each), every 16 ms while a thread
		 * stays over the budget with more to mute, less and less often
		 * while the threads run under it or with nothing left to mute
		 * (up to PERIOD_RUN_US: a hot phase wakes the budget itself) or
		 * sleep (see the top). */
		unsigned most =
			B->ran_ns * 4 >= (uint64_t)period * 1000u ? PERIOD_RUN_US : PERIOD_MAX_US;
		if (B->fresh)
			period = PERIOD_NEW_US;
		else if ((B->over && B->nvic) || moving)
			period = PERIOD_OVER_US;
		else if (B->npending)
			period = period < PERIOD_OVER_US       ? PERIOD_OVER_US
				 : 2 * period < PERIOD_BUSY_US ? 2 * period
							       : PERIOD_BUSY_US;
		else if (B->over > B->futile)
			period = PERIOD_BUSY_US;
		else if (period < PERIOD_BUSY_US)
			period = PERIOD_BUSY_US;
		else
			period = 2 * period < most ? 2 * period : most;
		if (!atomic_load(&cfg_on) || (B->views == 0 && rvt_tracing_threads() == 0)) {
			/* Nothing traced: sleep until tracing starts again.  (A
			 * thread that started but wrote nothing yet is no view:
			 * the timed looks go on for it, backing off.) */
			atomic_store(&rvt__wake.tps, 0);
			while (atomic_exchange(&budget_go, 0) == 0)
				rvt_sys(SYS_futex, (long)&budget_go, FUTEX_WAIT_PRIVATE, 0, 0);
			period = PERIOD_NEW_US;
			start = 1;
		}
	}
}

/* Where the bare thread cannot be had: under a sanitizer (whose runtime
 * keeps per-thread state a bare thread lacks) or not on x86-64 glibc. */
static void *budget_pthread(void *arg)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	budget_main(arg);
	return NULL;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BUDGET_BARE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BUDGET_BARE 0
#endif
#endif
#ifndef BUDGET_BARE
#define BUDGET_BARE 1
#endif

static void budget_atfork_child(void)
{
	pthread_mutex_init(&mu, NULL);
	rvt_modules_mu = (struct rvt_mu)RVT_MU_INIT; /* its holder is not in the child */
	budget_up = 0; /* the child has no budget thread; the next start makes one */
	atomic_store(&budget_go, 0);
	atomic_store(&rvt__wake.word, 0);
	atomic_store(&rvt__wake.tps, 0);
	/* A recheck under way in the parent: the child mutes its entry
	 * sites now (alone in its process, no barrier needed; their exit
	 * sites stay live, writing nothing for frames never entered). */
	if (atomic_load(&rc_nopen)) {
		npokes = 0;		      /* the parent's queue, maybe mid-change */
		rvt_mu_lock(&rvt_modules_mu); /* as the budget thread reads modules */
		remute_entries(rc_open, atomic_load(&rc_nopen));
		patch_apply();
		rvt_mu_unlock(&rvt_modules_mu);
		atomic_store(&rc_nopen, 0);
	}
	if (atomic_load(&muted_seq) & 1)
		atomic_fetch_add(&muted_seq, 1); /* a rewrite the child will not end */
}

/* Makes the whole pages of [p, p + n) resident and writable now.  The
 * budget's hash tables are read before they are written: a page first read
 * maps the shared zero page, and the write after it replaces that mapping,
 * which flushes the TLB of every CPU running the program — an IPI per page
 * (cmark ran 1.5 % faster without them, tracer/BENCHMARKS.md).  Filled here, at the start, no page
 * has a mapping to replace.  Best effort (MADV_POPULATE_WRITE is Linux 5.14). */
static void prefault(void *p, size_t n)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)p + pg - 1) & ~(pg - 1), hi = ((uintptr_t)p + n) & ~(pg - 1);
	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
}

/* Under mu: membarrier and the thread.  0 or a negative errno (the budget
 * stays off). */
static int budget_setup(void)
{
	static struct budget B;
	static int once;
	if (!once) {
		B.win = malloc((WIN + SHARE_WINS * SHARE_WIN + SHARE_PRE) * sizeof(*B.win));
		B.fs = calloc(HASH, sizeof(*B.fs));
		if (!B.win || !B.fs)
			return -ENOMEM;
		prefault(&B, sizeof(B));
		prefault(B.fs, HASH * sizeof(*B.fs));
		prefault(tried, sizeof(tried));
		pthread_atfork(NULL, NULL, budget_atfork_child);
		once = 1;
	}
	/* Per process (a forked child registers again). */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) != 0)
		return -errno;
	int rc = BUDGET_BARE ? rvt_bare_start(budget_main, &B) : -ENOSYS;
	if (rc != 0) { /* no bare thread here, or it could not drop its privileges */
		pthread_t th;
		rc = -rvt_pthread_create_untraced(&th, NULL, budget_pthread, &B);
		if (rc == 0)
			pthread_detach(th);
	}
	return rc;
}
#endif

void rvt_mute_module_added(void)
{
#if MUTE_CAN
	if (atomic_load(&cfg_on) &&
	    atomic_load_explicit(&rvt__wake.word, memory_order_relaxed) == 1 &&
	    atomic_exchange(&rvt__wake.word, 0) == 1)
		rvt_sys(SYS_futex, (long)&rvt__wake.word, FUTEX_WAKE_PRIVATE, 1, 0);
#endif
}

void rvt_mute_tracing_started(void)
{
	pthread_once(&env_once, read_env);
#if MUTE_CAN
	if (!atomic_load(&cfg_on))
		return;
	pthread_mutex_lock(&mu);
	if (!budget_up) {
		int rc = budget_setup();
		if (rc) {
			atomic_store(&cfg_on, 0);
			rvt_say("rearview: the trace budget is off: %s", strerror(-rc));
		} else {
			budget_up = 1;
		}
	}
	if (budget_up && atomic_exchange(&budget_go, 1) == 0)
		rvt_sys(SYS_futex, (long)&budget_go, FUTEX_WAKE_PRIVATE, 1, 0);
	pthread_mutex_unlock(&mu);
#endif
}

/* ---- the UNTRACED sections ---- */

static struct rvt_untraced untr[UNTR_MODS];
static _Atomic size_t nuntr;
static uintptr_t seen_mod[SEEN_MODS];
static size_t nseen;
static pthread_mutex_t untr_mu = PTHREAD_MUTEX_INITIALIZER;

/* The section of the ELF file at `path` into *u; 0 or a negative errno. */
static int read_section(const char *path, struct rvt_untraced *u)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = -ENOENT;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstr;
	if (e && elf_getshdrstrndx(e, &shstr) == 0) {
		for (Elf_Scn *s = elf_nextscn(e, NULL); s; s = elf_nextscn(e, s)) {
			GElf_Shdr sh;
			if (!gelf_getshdr(s, &sh))
				continue;
			const char *nm = elf_strptr(e, shstr, sh.sh_name);
			if (!nm || strcmp(nm, ".rearview_untraced") != 0)
				continue;
			Elf_Data *d = elf_getdata(s, NULL);
			if (!d || !d->d_buf || d->d_size == 0)
				break;
			size_t n = d->d_size;
			u->truncated = n > RVT_UNTRACED_MAX;
			if (u->truncated) { /* whole lines only */
				n = RVT_UNTRACED_MAX;
				while (n > 0 && ((const char *)d->d_buf)[n - 1] != '\n')
					n--;
			}
			char *t = malloc(n ? n : 1);
			char *p = strdup(path);
			if (!t || !p) {
				free(t);
				free(p);
				rc = -ENOMEM;
				break;
			}
			memcpy(t, d->d_buf, n);
			u->text = t;
			u->text_len = n;
			u->path = p;
			rc = 0;
			break;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

static int untr_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (size_t i = 0; i < nseen; i++)
		if (seen_mod[i] == (uintptr_t)info->dlpi_addr + 1)
			return 0;
	if (nseen == SEEN_MODS)
		return 1;
	seen_mod[nseen++] = (uintptr_t)info->dlpi_addr + 1;
	const char *name = info->dlpi_name;
	char exe[4096];
	if (!name || !*name) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[n > 0 ? n : 0] = '\0';
		name = exe;
	}
	size_t at = atomic_load(&nuntr);
	if (*name != '/' || at == UNTR_MODS)
		return 0;
	if (read_section(name, &untr[at]) == 0)
		atomic_store_explicit(&nuntr, at + 1, memory_order_release);
	return 0;
}

size_t rvt_untraced_sections(const struct rvt_untraced **out)
{
	pthread_mutex_lock(&untr_mu);
	dl_iterate_phdr(untr_module, NULL);
	pthread_mutex_unlock(&untr_mu);
	*out = untr;
	return atomic_load_explicit(&nuntr, memory_order_acquire);
}

#if !MUTE_CAN
unsigned rvt__mute_recheck_open(void)
{
	return 0; /* no budget that patches code, so no recheck */
}

int rvt__mute_by_mprotect(void)
{
	return 0;
}
#endif
