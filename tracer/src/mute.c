/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mute.c — a budget the tracer enforces itself (issue 14, lever 3), and
 * what a capture says was left out (the UNTRACED and MUTED records,
 * FORMAT.md §2).
 *
 * Muting (off unless RV_TRACE_MUTE / rvt_set_mute turn it on).  While some
 * thread traces, the mute thread wakes every 100 ms, copies the newest
 * window of every traced thread's ring (rvt_rings_sample) and pairs its entries and exits: a
 * function that one thread called more than `rate` times a second with a median duration under
 * `median_ns` (RV_TRACE_MUTE, trace.h) is an offender.  Its trace-point call sites are then learned
 * and turned into nops, all of them (entries and exits) in one cross-modifying-code batch, off the
 * hot path:
 *
 * - learning: the first byte of each of the four hooks (__cyg_profile_func_
 *   enter/exit, rvt__inl_enter/exit) becomes an int3 for LEARN_MS (up to
 *   10× that until every offender showed an entry and an exit site).  The
 *   SIGTRAP handler reads the function (call mode: %rdi; inline entry: %rax;
 *   inline exit: the innermost open entry of the thread's own ring) and the
 *   return address; a `call rel32` (direct or through a PLT stub whose GOT
 *   slot holds the hook) or `call *GOT(%rip)` before it is a site of that
 *   function.  The handler then emulates the hook's first instruction
 *   (checked at start to be one it knows) and resumes after it.  A function
 *   whose hook call could not be recognised (a tail call) is never muted.
 * - patching: int3 on every site's first byte, membarrier(SYNC_CORE); the
 *   entry sites' nop tails, sync, first bytes, sync — from then on no call
 *   of the function opens a frame (the MUTED time); GRACE_MS later the exit
 *   sites' nops the same way.  The pages are RWX only meanwhile.  A thread
 *   trapping on an entry site's int3 resumes after it, as the nop would; on
 *   an exit site's, the handler makes the original call when the thread's
 *   innermost open frame (its own ring) is that function — a frame entered
 *   before the entries went quiet — and skips it otherwise, so ring and
 *   shadow stack stay balanced.
 *
 * A runtime's key (rvt_key_new(), runtime.c) has no call sites to patch:
 * an offending key is muted by setting its flag, which the runtime reads at
 * each call (rvt_key_muted(), trace-runtime.h) and then records neither the
 * entry nor the matching exit; its MUTED record has `sites` 0 and the time
 * the flag was set.
 *
 * Limits: a thread still inside the function GRACE_MS after its entries went
 * quiet never writes that exit (the decoder closes the frame at the
 * caller's exit, FORMAT.md §1's damage rules, and the thread's shadow stack
 * keeps one frame more than its ring until it exits); a call site not seen
 * in the learning window (a rare path) keeps tracing; a program that blocks
 * SIGTRAP, or replaces the handler while muting runs, cannot be muted
 * safely (RV_TRACE_MUTE=off then).
 *
 * Invariants: nothing here runs on the trace-point path; the SIGTRAP
 * handler takes no lock and allocates nothing; the site table it reads is
 * append-only, so a late trap on a site patched long ago still resolves;
 * only the mute thread writes code, learns and appends to the MUTED list
 * (published with a release store of its count).
 */
#include "tracer-int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
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
#include <ucontext.h>
#define MUTE_CAN 1
#else
#define MUTE_CAN 0
#endif

#define PERIOD_MS    100
#define LEARN_MS     5
#define GRACE_MS     2	    /* exit sites resolve in the trap before their nops */
#define WIN	     65536u /* slots copied per thread and sample */
#define MIN_CALLS    64u    /* completed calls in a window before judging */
#define WANT_MAX     16u    /* functions learned at once */
#define WANT_SITES   64u    /* call sites per function */
#define PSITES_MAX   4096u  /* call sites patched per process */
#define TRIED_MAX    1024u
#define MAX_ATTEMPTS 5u /* learnings that saw no entry or no exit site */
#define UNTR_MODS    64u
#define SEEN_MODS    512u

/* ---- settings (trace.h, RV_TRACE_MUTE) ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static _Atomic int cfg_on; /* off by default: muting changes what a capture holds */
static _Atomic uint64_t cfg_rate = 1000000, cfg_median_ns = 200;

/* "off" | "on" | RATE[,MEDIAN_NS]; 0 or -EINVAL. */
static int parse_spec(const char *v, int *on, uint64_t *rate, uint64_t *median)
{
	if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0) {
		*on = 0;
		return 0;
	}
	*on = 1;
	if (strcmp(v, "on") == 0 || strcmp(v, "1") == 0 || *v == '\0')
		return 0;
	char *e;
	errno = 0;
	unsigned long long r = strtoull(v, &e, 10);
	if (errno || e == v || r == 0)
		return -EINVAL;
	unsigned long long m = *median;
	if (*e == ',') {
		const char *s = e + 1;
		m = strtoull(s, &e, 10);
		if (errno || e == s || m == 0)
			return -EINVAL;
	}
	if (*e)
		return -EINVAL;
	*rate = r;
	*median = m;
	return 0;
}

int rvt_set_mute(const char *spec)
{
	int on;
	uint64_t rate = atomic_load(&cfg_rate), median = atomic_load(&cfg_median_ns);
	if (!spec || parse_spec(spec, &on, &rate, &median) != 0)
		return -EINVAL;
	if (on && !MUTE_CAN)
		return -ENOTSUP;
	atomic_store(&cfg_rate, rate);
	atomic_store(&cfg_median_ns, median);
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
		rvt_say("rearview: RV_TRACE_MUTE=%s not understood (use off, on or "
			"RATE[,MEDIAN_NS]); muting stays off",
			v);
	else if (rc == -ENOTSUP)
		rvt_say("rearview: RV_TRACE_MUTE: muting needs the x86-64 hooks; it is off");
}

/* ---- the MUTED list ---- */

static struct rvt_muted muted[RVT_MUTED_MAX];
static _Atomic size_t nmuted;

size_t rvt_mute_list(struct rvt_muted *out, size_t cap)
{
	size_t n = atomic_load_explicit(&nmuted, memory_order_acquire);
	if (n > cap)
		n = cap;
	memcpy(out, muted, n * sizeof(*out));
	return n;
}

#if MUTE_CAN
/* ---- code patching ---- */

/* A patched or learned call site: address | length << 56 | entry << 63. */
#define SITE_ADDR(c)  ((uintptr_t)((c) & ((1ull << 56) - 1)))
#define SITE_LEN(c)   ((unsigned)((c) >> 56) & 0x7fu)
#define SITE_ENTRY(c) ((unsigned)((c) >> 63))
#define SITE(a, l, e) ((uint64_t)(a) | (uint64_t)(l) << 56 | (uint64_t)(e) << 63)

static _Atomic uint64_t psites[PSITES_MAX];
/* Per patched site: its function, and where its call went. */
static uintptr_t psite_fn[PSITES_MAX], psite_target[PSITES_MAX];
static _Atomic size_t npsites;

/* The hooks whose first instruction the trap handler emulates. */
enum first_insn { FI_GOTLOAD, FI_IMM, FI_PUSH_RAX };
struct hook {
	uintptr_t addr;
	int entry, stub;
	enum first_insn fi;
	unsigned len;
	int64_t arg; /* GOT slot address or immediate */
	uint8_t orig;
};
extern void __cyg_profile_func_enter(void *fn, void *site);
extern void __cyg_profile_func_exit(void *fn, void *site);
extern char rvt__inl_enter[], rvt__inl_exit[];
static struct hook hooks[4];
static int hooks_ok;

struct want {
	_Atomic uintptr_t fn;
	_Atomic uint64_t site[WANT_SITES];
	_Atomic int bad;
};
static struct want wants[WANT_MAX];
static _Atomic int learning;
static struct sigaction old_trap;

static int read_hook(struct hook *h, uintptr_t addr, int entry, int stub)
{
	const uint8_t *c = (const uint8_t *)addr;
	int32_t d;
	h->addr = addr;
	h->entry = entry;
	h->stub = stub;
	h->orig = c[0];
	if (c[0] == 0x4c && c[1] == 0x8b && c[2] == 0x1d) { /* movq x(%rip), %r11 */
		memcpy(&d, c + 3, 4);
		h->fi = FI_GOTLOAD;
		h->len = 7;
		h->arg = (int64_t)(addr + 7 + (intptr_t)d);
	} else if (c[0] == 0x49 && c[1] == 0xc7 && c[2] == 0xc3) { /* movq $imm, %r11 */
		memcpy(&d, c + 3, 4);
		h->fi = FI_IMM;
		h->len = 7;
		h->arg = d;
	} else if (c[0] == 0x50) { /* pushq %rax */
		h->fi = FI_PUSH_RAX;
		h->len = 1;
	} else {
		return -ENOTSUP;
	}
	return 0;
}

/* Where a PLT stub at t jumps (its GOT slot's value), or 0. */
static uintptr_t plt_target(uintptr_t t)
{
	const uint8_t *p = (const uint8_t *)t;
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		p += 4; /* endbr64 */
	if (p[0] == 0xf2)
		p++; /* bnd */
	if (p[0] != 0xff || p[1] != 0x25)
		return 0;
	int32_t d;
	memcpy(&d, p + 2, 4);
	uintptr_t v;
	memcpy(&v, p + 6 + d, sizeof(v));
	return v;
}

/* The length of the call to `hook` that returns to ret (5 or 6), or 0. */
static unsigned site_len(uintptr_t ret, uintptr_t hook)
{
	const uint8_t *c = (const uint8_t *)(ret - 5);
	int32_t d;
	if (c[0] == 0xe8) {
		memcpy(&d, c + 1, 4);
		uintptr_t t = ret + (intptr_t)d;
		if (t == hook || plt_target(t) == hook)
			return 5;
	}
	c = (const uint8_t *)(ret - 6);
	if (c[0] == 0xff && c[1] == 0x15) {
		memcpy(&d, c + 2, 4);
		if (*(const uintptr_t *)(ret + (intptr_t)d) == hook)
			return 6;
	}
	return 0;
}

/* The function of the calling thread's innermost open entry in its ring
 * (FORMAT.md §1, decoding backwards), or 0.  Runs on a traced thread
 * outside any trace point (the trap handler at an exit stub). */
static uintptr_t open_frame_fn(void)
{
	struct rvt__thread *t = &rvt__tls;
	uintptr_t s = __atomic_load_n(&t->start, __ATOMIC_SEQ_CST);
	if (!s || __atomic_load_n(&t->seen, __ATOMIC_SEQ_CST) != s)
		return 0;
	uint64_t *p = __atomic_load_n(&t->cur, __ATOMIC_SEQ_CST), *base = t->base,
		 *limit = t->limit;
	int wrapped = __atomic_load_n(&t->wrapped, __ATOMIC_SEQ_CST);
	unsigned depth = 0;
	for (unsigned n = 0; n < 4096; n++) {
		if (p == base) {
			if (!wrapped)
				return 0;
			p = limit;
		}
		uint64_t v = *--p;
		uint32_t low = (uint32_t)v;
		if (low == 0) {
			depth++;
			continue;
		}
		if (low <= RVT_SLOT_MARKER_MAX) {
			if (p == base) {
				if (!wrapped)
					return 0;
				p = limit;
			}
			v = *--p;
			if (low != RVT_SLOT_PAIR)
				continue;
		} else {
			v = low;
		}
		if (depth == 0)
			return (uintptr_t)(v + t->method_base);
		depth--;
	}
	return 0;
}

static void learn_hit(const struct hook *h, const greg_t *g)
{
	uintptr_t ret = *(const uintptr_t *)g[REG_RSP];
	uintptr_t fn = !h->stub	  ? (uintptr_t)g[REG_RDI]
		       : h->entry ? (uintptr_t)g[REG_RAX]
				  : open_frame_fn();
	struct want *w = NULL;
	for (unsigned i = 0; i < WANT_MAX && !w; i++)
		if (fn && atomic_load(&wants[i].fn) == fn)
			w = &wants[i];
	if (!w)
		return;
	unsigned len = site_len(ret, h->addr);
	if (!len) {
		atomic_store(&w->bad, 1);
		return;
	}
	uint64_t code = SITE(ret - len, len, h->entry);
	for (unsigned k = 0; k < WANT_SITES; k++) {
		uint64_t v = atomic_load(&w->site[k]);
		if (v == code)
			return;
		if (v == 0 && atomic_compare_exchange_strong(&w->site[k], &v, code))
			return;
		if (v == code)
			return;
	}
	atomic_store(&w->bad, 1); /* more sites than we keep */
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t pc = (uintptr_t)g[REG_RIP] - 1;
	for (unsigned i = 0; hooks_ok && i < 4; i++) {
		const struct hook *h = &hooks[i];
		if (pc != h->addr)
			continue;
		if (atomic_load(&learning))
			learn_hit(h, g);
		switch (h->fi) {
		case FI_GOTLOAD:
			g[REG_R11] = *(const greg_t *)(uintptr_t)h->arg;
			break;
		case FI_IMM:
			g[REG_R11] = (greg_t)h->arg;
			break;
		case FI_PUSH_RAX:
			g[REG_RSP] -= 8;
			*(greg_t *)g[REG_RSP] = g[REG_RAX];
			break;
		}
		g[REG_RIP] = (greg_t)(h->addr + h->len);
		return;
	}
	size_t n = atomic_load_explicit(&npsites, memory_order_acquire);
	for (size_t i = 0; i < n; i++) {
		uint64_t c = atomic_load_explicit(&psites[i], memory_order_relaxed);
		if (SITE_ADDR(c) != pc)
			continue;
		if (!SITE_ENTRY(c) && open_frame_fn() == psite_fn[i]) {
			/* An exit of a frame entered before the entry sites went
			 * quiet: make the call, so the ring stays balanced. */
			g[REG_RSP] -= 8;
			*(greg_t *)g[REG_RSP] = (greg_t)(pc + SITE_LEN(c));
			g[REG_RIP] = (greg_t)psite_target[i];
		} else {
			g[REG_RIP] = (greg_t)(pc + SITE_LEN(c)); /* the nop's effect */
		}
		return;
	}
	/* Not ours: what the program had. */
	if (old_trap.sa_flags & SA_SIGINFO) {
		old_trap.sa_sigaction(sig, si, ucv);
	} else if (old_trap.sa_handler == SIG_DFL) {
		signal(SIGTRAP, SIG_DFL);
		raise(SIGTRAP);
	} else if (old_trap.sa_handler != SIG_IGN) {
		old_trap.sa_handler(sig);
	}
}

static int sync_core(void)
{
	return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0
		       ? 0
		       : -errno;
}

/* Makes the pages of [a, a+n) writable (and still executable) or back. */
static int text_prot(uintptr_t a, size_t n, int writable)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = a & ~(pg - 1), hi = (a + n + pg - 1) & ~(pg - 1);
	int prot = PROT_READ | PROT_EXEC | (writable ? PROT_WRITE : 0);
	return mprotect((void *)lo, hi - lo, prot) == 0 ? 0 : -errno;
}

static void poke(uintptr_t at, const uint8_t *b, size_t n)
{
	volatile uint8_t *p = (volatile uint8_t *)at;
	for (size_t i = 0; i < n; i++)
		p[i] = b[i];
}

/* Entry and exit sites of wants[i] seen so far (*entries, *exits). */
static void want_counts(const struct want *w, int *entries, int *exits)
{
	*entries = *exits = 0;
	for (unsigned k = 0; k < WANT_SITES; k++) {
		uint64_t c = atomic_load(&w->site[k]);
		*entries += c && SITE_ENTRY(c);
		*exits += c && !SITE_ENTRY(c);
	}
}

static int learned_all(size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int en, ex;
		want_counts(&wants[i], &en, &ex);
		if (!atomic_load(&wants[i].bad) && (!en || !ex))
			return 0;
	}
	return 1;
}

/* Learns the call sites of fns[0..n) into wants[] (int3 on the hooks). */
static int learn(const uintptr_t *fns, size_t n)
{
	assert(n > 0 && n <= WANT_MAX);
	for (unsigned i = 0; i < WANT_MAX; i++) {
		for (unsigned k = 0; k < WANT_SITES; k++)
			atomic_store(&wants[i].site[k], 0);
		atomic_store(&wants[i].bad, 0);
		atomic_store(&wants[i].fn, i < n ? fns[i] : 0);
	}
	static const uint8_t int3 = 0xcc;
	int rc = 0;
	unsigned armed = 0;
	atomic_store(&learning, 1);
	while (armed < 4 && rc == 0) {
		rc = text_prot(hooks[armed].addr, 1, 1);
		if (rc == 0)
			poke(hooks[armed++].addr, &int3, 1);
	}
	if (rc == 0)
		rc = sync_core();
	/* Every trace point traps meanwhile (microseconds each): LEARN_MS at
	 * least, longer (up to 10×) until every function has shown an entry
	 * and an exit site (a busy machine may not run it). */
	for (unsigned ms = 0; rc == 0 && ms < 10 * LEARN_MS; ms++) {
		if (ms >= LEARN_MS && learned_all(n))
			break;
		struct timespec ts = {0, 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	for (unsigned i = 0; i < armed; i++)
		poke(hooks[i].addr, &hooks[i].orig, 1);
	for (unsigned i = 0; i < armed; i++)
		text_prot(hooks[i].addr, 1, 0); /* after every poke: hooks share pages */
	int s = sync_core();
	atomic_store(&learning, 0);
	return rc ? rc : s;
}

/* Writes the nops of the sites whose entry flag is `entry`: tails, sync,
 * first bytes, sync (their int3 is already there).  0 or a negative errno. */
static int finish_sites(const uint64_t *sites, size_t n, unsigned entry)
{
	static const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	static const uint8_t nop6[6] = {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00};
	for (size_t i = 0; i < n; i++) {
		const uint8_t *nop = SITE_LEN(sites[i]) == 5 ? nop5 : nop6;
		if (SITE_ENTRY(sites[i]) == entry)
			poke(SITE_ADDR(sites[i]) + 1, nop + 1, SITE_LEN(sites[i]) - 1);
	}
	int rc = sync_core();
	for (size_t i = 0; i < n; i++)
		if (SITE_ENTRY(sites[i]) == entry)
			poke(SITE_ADDR(sites[i]), SITE_LEN(sites[i]) == 5 ? nop5 : nop6, 1);
	int s = sync_core();
	return rc ? rc : s;
}

/*
 * Turns the sites (of functions site_fn[i]) into nops in one batch: int3
 * on all, sync; the entries' nops (*when: the counter then: no call of
 * these functions starts a frame after it); GRACE_MS in which an exit
 * site's trap still makes the call for a thread whose innermost open frame
 * is the site's function (entered before), else skips it; then the exits'
 * nops.  Returns 0 or a negative errno (nothing patched
 * then, unless the error came after the int3s, when every site is completed
 * anyway).
 */
static int patch(const uintptr_t *site_fn, const uint64_t *sites, size_t n, uint64_t *when)
{
	static const uint8_t int3 = 0xcc;
	assert(n > 0);
	size_t base = atomic_load(&npsites);
	if (base + n > PSITES_MAX)
		return -ENOSPC;
	for (size_t i = 0; i < n; i++) {
		uintptr_t a = SITE_ADDR(sites[i]);
		const uint8_t *c = (const uint8_t *)a;
		int32_t d;
		if (SITE_LEN(sites[i]) == 5 && c[0] == 0xe8) {
			memcpy(&d, c + 1, 4);
			psite_target[base + i] = a + 5 + (intptr_t)d;
		} else if (SITE_LEN(sites[i]) == 6 && c[0] == 0xff && c[1] == 0x15) {
			memcpy(&d, c + 2, 4);
			psite_target[base + i] = *(const uintptr_t *)(a + 6 + (intptr_t)d);
		} else {
			return -EILSEQ; /* not the call we learned */
		}
		psite_fn[base + i] = site_fn[i];
		atomic_store_explicit(&psites[base + i], sites[i], memory_order_relaxed);
	}
	atomic_store_explicit(&npsites, base + n, memory_order_release);
	size_t done = 0;
	int rc = 0;
	for (; done < n && rc == 0; done++)
		rc = text_prot(SITE_ADDR(sites[done]), SITE_LEN(sites[done]), 1);
	if (rc) {
		for (size_t i = 0; i + 1 < done; i++)
			text_prot(SITE_ADDR(sites[i]), SITE_LEN(sites[i]), 0);
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		poke(SITE_ADDR(sites[i]), &int3, 1);
	rc = sync_core();
	int s = finish_sites(sites, n, 1);
	rc = rc ? rc : s;
	*when = rvt__counter();
	struct timespec ts = {0, GRACE_MS * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	s = finish_sites(sites, n, 0);
	rc = rc ? rc : s;
	for (size_t i = 0; i < n; i++)
		text_prot(SITE_ADDR(sites[i]), SITE_LEN(sites[i]), 0);
	return rc;
}

/* ---- sampling ---- */

struct event {
	uint64_t value; /* 0: exit */
	uint32_t ts;
};
struct pair {
	uint64_t value;
	uint32_t dur; /* ticks of the shifted counter */
};
struct offender {
	uint64_t value, rate;
	uint32_t median_ns;
};
struct sampler {
	uint64_t *win;
	struct event *ev;
	struct pair *pairs;
	struct event stack[512];
	struct offender off[WANT_MAX];
	size_t noff;
	size_t rings;
};

/* Functions given up on or muted: value and attempts (mute thread only). */
static struct {
	uint64_t value;
	unsigned attempts;
} tried[TRIED_MAX];
static size_t ntried;

static unsigned *attempts_of(uint64_t v)
{
	for (size_t i = 0; i < ntried; i++)
		if (tried[i].value == v)
			return &tried[i].attempts;
	if (ntried == TRIED_MAX)
		return NULL;
	tried[ntried].value = v;
	tried[ntried].attempts = 0;
	return &tried[ntried++].attempts;
}

/* No more attempts for v: muted, refused, or tried MAX_ATTEMPTS times. */
static int was_tried(uint64_t v)
{
	for (size_t i = 0; i < ntried; i++)
		if (tried[i].value == v)
			return tried[i].attempts >= MAX_ATTEMPTS;
	return ntried == TRIED_MAX;
}

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->dur < y->dur ? -1 : x->dur > y->dur;
}

static uint64_t ticks_ns(uint64_t ticks)
{
	return (uint64_t)((double)(ticks << rvt_clock.shift) * 1e9 / (double)rvt_clock.hz);
}

/* rvt_rings_sample's callback: judges one thread's newest window. */
static void analyse(void *arg, const uint64_t *slots, uint64_t n, uint64_t cur, int wrapped)
{
	struct sampler *S = arg;
	assert(cur <= n);
	S->rings++;
	uint64_t w = wrapped ? n / 2 : cur;
	if (w > WIN)
		w = WIN;
	if (w < 2 * MIN_CALLS || rvt_clock.hz == 0)
		return;
	for (uint64_t k = 0; k < w; k++)
		S->win[k] = __atomic_load_n(&slots[(cur + n - w + k) % n], __ATOMIC_RELAXED);
	/* Backwards into events, then forward (FORMAT.md §1). */
	size_t ne = 0;
	for (uint64_t i = w; i-- > 0;) {
		uint64_t s = S->win[i];
		uint32_t low = (uint32_t)s;
		struct event e = {0, (uint32_t)(s >> 32)};
		if (low > RVT_SLOT_MARKER_MAX) {
			e.value = low;
		} else if (low != 0) {
			if (i == 0)
				break;
			i--;
			if (low != RVT_SLOT_PAIR)
				continue;
			e.value = S->win[i];
		}
		S->ev[ne++] = e;
	}
	if (ne < 2)
		return;
	size_t np = 0, depth = 0;
	for (size_t i = ne; i-- > 0;) {
		const struct event *e = &S->ev[i];
		if (e->value) {
			if (depth < sizeof(S->stack) / sizeof(S->stack[0]))
				S->stack[depth] = *e;
			depth++;
		} else if (depth > 0) {
			depth--;
			if (depth < sizeof(S->stack) / sizeof(S->stack[0]))
				S->pairs[np++] = (struct pair){S->stack[depth].value,
							       e->ts - S->stack[depth].ts};
		}
	}
	uint64_t span_ns = ticks_ns((uint32_t)(S->ev[0].ts - S->ev[ne - 1].ts));
	if (span_ns == 0)
		return;
	qsort(S->pairs, np, sizeof(*S->pairs), cmp_pair);
	for (size_t i = 0; i < np;) {
		size_t j = i;
		while (j < np && S->pairs[j].value == S->pairs[i].value)
			j++;
		uint64_t calls = j - i;
		uint64_t rate = (uint64_t)((double)calls * 1e9 / (double)span_ns);
		uint64_t med = ticks_ns(S->pairs[i + calls / 2].dur);
		if (calls >= MIN_CALLS && rate > atomic_load(&cfg_rate) &&
		    med < atomic_load(&cfg_median_ns) && !was_tried(S->pairs[i].value) &&
		    S->noff < WANT_MAX) {
			int dup = 0;
			for (size_t k = 0; k < S->noff; k++)
				dup |= S->off[k].value == S->pairs[i].value;
			if (!dup)
				S->off[S->noff++] =
					(struct offender){S->pairs[i].value, rate, (uint32_t)med};
		}
		i = j;
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Mutes S's offenders that are runtime keys (flag, no code) and drops them
 * from S->off.  The counter is read after a membarrier, so a thread's call
 * that starts after it sees the flag: at most one frame per thread (its
 * trace point in flight) opens after the MUTED time. */
static void mute_keys(struct sampler *S)
{
	size_t keep = 0, at = atomic_load(&nmuted), n = 0;
	struct offender done[WANT_MAX];
	for (size_t i = 0; i < S->noff; i++) {
		const struct offender *o = &S->off[i];
		if (at + n == RVT_MUTED_MAX ||
		    rvt_key_mute((const void *)(uintptr_t)(o->value + rvt_method_base)) != 0) {
			S->off[keep++] = *o;
			continue;
		}
		unsigned *att = attempts_of(o->value);
		if (att)
			*att = MAX_ATTEMPTS;
		done[n++] = *o;
	}
	S->noff = keep;
	if (n == 0)
		return;
	sync_core(); /* registered at setup; on failure the flags still hold, a bit later */
	uint64_t when = rvt__counter(), mono = mono_ns();
	for (size_t k = 0; k < n; k++)
		muted[at + k] = (struct rvt_muted){done[k].value,     when, mono, done[k].rate,
						   done[k].median_ns, 0};
	atomic_store_explicit(&nmuted, at + n, memory_order_release);
}

/* Learns and mutes S's offenders. */
static void mute_offenders(struct sampler *S)
{
	mute_keys(S);
	if (S->noff == 0)
		return;
	uintptr_t fns[WANT_MAX];
	for (size_t i = 0; i < S->noff; i++)
		fns[i] = (uintptr_t)(S->off[i].value + rvt_method_base);
	if (learn(fns, S->noff) != 0)
		return;
	/* Every function whose entry and exit sites were seen, in one batch:
	 * one grace period for all. */
	static uint64_t sites[WANT_MAX * WANT_SITES];
	static uintptr_t site_fn[WANT_MAX * WANT_SITES];
	size_t ns = 0, ok[WANT_MAX], nok = 0, at = atomic_load(&nmuted);
	uint32_t nsites[WANT_MAX];
	for (size_t i = 0; i < S->noff; i++) {
		struct want *w = &wants[i];
		unsigned *att = attempts_of(S->off[i].value);
		int entries, exits;
		want_counts(w, &entries, &exits);
		int bad = atomic_load(&w->bad) || at + nok >= RVT_MUTED_MAX;
		if (att)
			*att = bad || (entries && exits) ? MAX_ATTEMPTS : *att + 1;
		if (bad || !entries || !exits)
			continue;
		nsites[nok] = 0;
		for (unsigned k = 0; k < WANT_SITES; k++) {
			uint64_t c = atomic_load(&w->site[k]);
			if (c) {
				site_fn[ns] = fns[i];
				sites[ns++] = c;
				nsites[nok]++;
			}
		}
		ok[nok++] = i;
	}
	uint64_t when;
	if (nok == 0 || patch(site_fn, sites, ns, &when) != 0)
		return;
	uint64_t mono = mono_ns();
	for (size_t k = 0; k < nok; k++) {
		const struct offender *o = &S->off[ok[k]];
		muted[at + k] =
			(struct rvt_muted){o->value, when, mono, o->rate, o->median_ns, nsites[k]};
	}
	atomic_store_explicit(&nmuted, at + nok, memory_order_release);
}

static pthread_t mute_th;
static int mute_up, mute_wake;
static pthread_cond_t mute_cv = PTHREAD_COND_INITIALIZER;

static void *mute_main(void *arg)
{
	struct sampler *S = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		struct timespec ts = {0, PERIOD_MS * 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		S->noff = 0;
		S->rings = 0;
		if (atomic_load(&cfg_on))
			rvt_rings_sample(analyse, S);
		if (S->noff)
			mute_offenders(S);
		if (S->rings == 0 || !atomic_load(&cfg_on)) {
			/* Nothing traced: sleep until tracing starts again. */
			pthread_mutex_lock(&mu);
			while (!mute_wake)
				pthread_cond_wait(&mute_cv, &mu);
			mute_wake = 0;
			pthread_mutex_unlock(&mu);
		}
	}
	return NULL;
}

static void mute_atfork_child(void)
{
	pthread_mutex_init(&mu, NULL);
	pthread_cond_init(&mute_cv, NULL);
	mute_up = 0; /* the child has no mute thread; the next start makes one */
}

/* Under mu: the handler, the hooks, membarrier and the thread.  0 or a
 * negative errno (muting stays off). */
static int mute_setup(void)
{
	static struct sampler S;
	static int once;
	if (!once) {
		int rc = read_hook(&hooks[0], (uintptr_t)__cyg_profile_func_enter, 1, 0);
		if (rc == 0)
			rc = read_hook(&hooks[1], (uintptr_t)__cyg_profile_func_exit, 0, 0);
		if (rc == 0)
			rc = read_hook(&hooks[2], (uintptr_t)rvt__inl_enter, 1, 1);
		if (rc == 0)
			rc = read_hook(&hooks[3], (uintptr_t)rvt__inl_exit, 0, 1);
		if (rc)
			return rc;
		S.win = malloc(WIN * sizeof(*S.win));
		S.ev = malloc(WIN * sizeof(*S.ev));
		S.pairs = malloc(WIN * sizeof(*S.pairs));
		if (!S.win || !S.ev || !S.pairs)
			return -ENOMEM;
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_trap;
		sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGTRAP, &sa, &old_trap) != 0)
			return -errno;
		hooks_ok = 1;
		pthread_atfork(NULL, NULL, mute_atfork_child);
		once = 1;
	}
	/* Per process (a forked child registers again). */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) != 0)
		return -errno;
	int rc = -rvt_pthread_create_untraced(&mute_th, NULL, mute_main, &S);
	if (rc == 0)
		pthread_detach(mute_th);
	return rc;
}
#endif

void rvt_mute_tracing_started(void)
{
	pthread_once(&env_once, read_env);
#if MUTE_CAN
	if (!atomic_load(&cfg_on))
		return;
	pthread_mutex_lock(&mu);
	if (!mute_up) {
		int rc = mute_setup();
		if (rc) {
			atomic_store(&cfg_on, 0);
			rvt_say("rearview: muting is off: %s", strerror(-rc));
		} else {
			mute_up = 1;
		}
	}
	mute_wake = 1;
	pthread_cond_signal(&mute_cv);
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
