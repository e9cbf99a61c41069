/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bare.c — a helper thread the C library does not know (rvt_bare_start),
 * and what such a thread may share with the program's threads: librvtrace's
 * own lock (struct rvt_mu) and sort (rvt_sort).
 *
 * Why.  glibc makes a process pay for its second thread: once
 * pthread_create() ran, __libc_single_threaded stays 0 for good and malloc,
 * free, stdio and the rest take their locks with atomic instructions on
 * every call.  The budget thread (mute.c) made every traced command-line
 * program pay that: rvlua +3.4 % of its run in malloc's locks, cmark +4.2 %
 * (tracer/BENCHMARKS.md).  A thread made by clone() alone leaves glibc as
 * single-threaded as the program is.
 *
 * What such a thread must not do: call into glibc where glibc relies on
 * knowing every thread — malloc, stdio, qsort (it mallocs above 1 KiB),
 * dl_iterate_phdr and dladdr (the loader's recursive lock compares its
 * owner with the TCB's tid), any pthread mutex it shares with the
 * program's threads (with one thread known, glibc takes a free mutex with
 * a plain store), locale and ctype functions (their per-thread pointers
 * are set up by pthread_create).  It may make system calls (errno is its
 * own), read the clocks, use memcpy/memcmp/memchr/memmem/mmap, take rvt_mu and
 * call _dl_find_object (lock-free by its contract).
 *
 * Its thread pointer is its own (CLONE_SETTLS): below it a zeroed block as
 * large as glibc's whole static TLS (so errno, rvt__tls and every
 * initial-exec variable, of modules loaded later too, are its own and
 * zero), above it a zeroed thread control block with the self pointers and
 * the stack and pointer guards copied from its creator.  It is made with
 * every signal blocked, so no handler of the program ever runs on it, and
 * gives up every privilege first (Credentials, below); it then runs until
 * the process ends (it is not there in a fork's child).
 *
 * Its file table is its own (no CLONE_FILES): clone copies the program's,
 * and the thread closes every descriptor of the copy before anything else
 * (close_range; a kernel without it, before 5.9, fails the start and the
 * caller makes a pthread).  So a file it opens never takes a number the
 * program would have had, the program can never close or reuse one of its
 * descriptors, and none of the program's files stays open because of it
 * (but for the microseconds between the clone and the close_range).
 * Closing those copies releases none of the program's POSIX record locks:
 * the kernel drops, on a close, only the locks of the file table that
 * closes, and the program's belong to its own table.  In
 * it, before the privileges go, the thread opens /proc/self/mem for writing
 * code (rvt_bare_mem_fd): a root process's thread runs as nobody, to whom
 * the file is refused, and mprotect, the other way to write code, costs a
 * TLB shootdown on every CPU the program runs on, twice a patch.
 *
 * x86-64 with glibc only; elsewhere rvt_bare_start() returns -ENOSYS and
 * the caller uses pthread_create().
 */
#include "tracer-int.h"
#include <assert.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the lock ------------------------------------------------------------ */

/* v: 0 free, 1 held, 2 held and maybe waited for (the classic three-state
 * futex mutex).  The acquire of a taker pairs with the release of the
 * unlock before it. */
void rvt_mu_lock(struct rvt_mu *m)
{
	uint32_t c = 0;
	if (atomic_compare_exchange_strong_explicit(&m->v, &c, 1, memory_order_acquire,
						    memory_order_relaxed))
		return;
	if (c != 2)
		c = atomic_exchange_explicit(&m->v, 2, memory_order_acquire);
	while (c != 0) {
		rvt_sys(SYS_futex, (long)&m->v, FUTEX_WAIT_PRIVATE, 2, 0);
		c = atomic_exchange_explicit(&m->v, 2, memory_order_acquire);
	}
}

void rvt_mu_unlock(struct rvt_mu *m)
{
	if (atomic_exchange_explicit(&m->v, 0, memory_order_release) == 2)
		rvt_sys(SYS_futex, (long)&m->v, FUTEX_WAKE_PRIVATE, 1, 0);
}

/* ---- the sort ------------------------------------------------------------ */

/* A merge sort: stable, and linear on input already in order, which is what
 * the budget mostly sorts (sites found in address order, sorted by their
 * function, whose inlined copies alone break the order).  Its scratch is
 * a static buffer or, for a larger array or while another sort has it, a
 * mapping of its own (the bare thread may not malloc); where none can be
 * had, a heapsort in place.  A heapsort of a module's sites was 1–3 ms of
 * a short program's CPU at its first mute (tracer/BENCHMARKS.md). */

#define SORT_SMALL    16  /* runs this short are sorted by insertion */
#define SORT_ELEM_MAX 64u /* bytes an element may have for the merge sort */
/* The scratch of every sort that fits, one caller at a time (another one
 * meanwhile maps its own): a scratch mapped and unmapped per sort costs a
 * TLB shootdown, an IPI to every CPU running the program, at each munmap,
 * and the budget sorts its candidates at every look. */
static _Alignas(16) unsigned char sort_scratch[64 << 10];
static atomic_int sort_scratch_busy;

static void swap_bytes(unsigned char *a, unsigned char *b, size_t size)
{
	while (size--) {
		unsigned char t = *a;
		*a++ = *b;
		*b++ = t;
	}
}

/* Sifts element i of the heap base[0..n) down to its place. */
static void sift(unsigned char *base, size_t i, size_t n, size_t size,
		 int (*cmp)(const void *, const void *))
{
	for (;;) {
		size_t big = i, l = 2 * i + 1, r = l + 1;
		if (l < n && cmp(base + l * size, base + big * size) > 0)
			big = l;
		if (r < n && cmp(base + r * size, base + big * size) > 0)
			big = r;
		if (big == i)
			return;
		swap_bytes(base + i * size, base + big * size, size);
		i = big;
	}
}

static void heap_sort(unsigned char *b, size_t n, size_t size,
		      int (*cmp)(const void *, const void *))
{
	for (size_t i = n / 2; i-- > 0;)
		sift(b, i, n, size, cmp);
	for (size_t end = n - 1; end > 0; end--) {
		swap_bytes(b, b + end * size, size);
		sift(b, 0, end, size, cmp);
	}
}

/* Insertion sort of b[0..n) (size ≤ SORT_ELEM_MAX). */
static void insertion_sort(unsigned char *b, size_t n, size_t size,
			   int (*cmp)(const void *, const void *))
{
	unsigned char t[SORT_ELEM_MAX];
	for (size_t i = 1; i < n; i++) {
		size_t j = i;
		while (j > 0 && cmp(b + (j - 1) * size, b + i * size) > 0)
			j--;
		if (j == i)
			continue;
		memcpy(t, b + i * size, size);
		memmove(b + (j + 1) * size, b + j * size, (i - j) * size);
		memcpy(b + j * size, t, size);
	}
}

/* Sorts b[0..n) with tmp (room for n / 2 + 1 elements): both halves, then
 * unless already in order, the left half copied out and merged back. */
static void merge_sort(unsigned char *b, unsigned char *tmp, size_t n, size_t size,
		       int (*cmp)(const void *, const void *))
{
	if (n <= SORT_SMALL) {
		insertion_sort(b, n, size, cmp);
		return;
	}
	size_t mid = n / 2;
	merge_sort(b, tmp, mid, size, cmp);
	merge_sort(b + mid * size, tmp, n - mid, size, cmp);
	if (cmp(b + (mid - 1) * size, b + mid * size) <= 0)
		return;
	memcpy(tmp, b, mid * size);
	unsigned char *l = tmp, *le = tmp + mid * size, *r = b + mid * size, *re = b + n * size,
		      *o = b;
	while (l < le && r < re) {
		if (cmp(r, l) < 0) { /* the left one first when equal: stable */
			memcpy(o, r, size);
			r += size;
		} else {
			memcpy(o, l, size);
			l += size;
		}
		o += size;
	}
	memcpy(o, l, (size_t)(le - l)); /* what is left of r is in place */
	assert(l == le || o + (le - l) == r);
}

void rvt_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	unsigned char *b = base;
	if (n < 2)
		return;
	if (size > SORT_ELEM_MAX) {
		heap_sort(b, n, size, cmp);
		return;
	}
	if (n <= SORT_SMALL) {
		insertion_sort(b, n, size, cmp);
		return;
	}
	size_t bytes = (n / 2 + 1) * size;
	if (bytes <= sizeof(sort_scratch) &&
	    !atomic_exchange_explicit(&sort_scratch_busy, 1, memory_order_acquire)) {
		merge_sort(b, sort_scratch, n, size, cmp);
		atomic_store_explicit(&sort_scratch_busy, 0, memory_order_release);
		return;
	}
	void *tmp = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tmp == MAP_FAILED) {
		heap_sort(b, n, size, cmp);
		return;
	}
	merge_sort(b, tmp, n, size, cmp);
	munmap(tmp, bytes);
}

/* ---- the thread ---------------------------------------------------------- */

#if defined(__x86_64__) && defined(__GLIBC__)
/*
 * long rvt__clone(unsigned long flags, void *stack_top, void *tls,
 *                 void (*fn)(void *), void *arg);
 * clone(2) onto stack_top with thread pointer `tls`: the child calls
 * fn(arg) on the new stack and, should fn return, exits the thread; the
 * parent gets the child's tid or a negative errno.
 */
RVT_HIDDEN long rvt__clone(unsigned long flags, void *stack_top, void *tls, void (*fn)(void *),
			   void *arg);
__asm__(".text\n"
	".globl rvt__clone\n"
	".hidden rvt__clone\n"
	".p2align 4\n"
	".type rvt__clone, @function\n"
	"rvt__clone:\n"
	"	.cfi_startproc\n"
	"	endbr64\n"
	"	and $-16, %rsi\n"
	"	sub $16, %rsi\n"
	"	mov %rcx, (%rsi)\n" /* fn, popped by the child */
	"	mov %r8, 8(%rsi)\n" /* arg */
	"	mov %rdx, %r8\n"    /* tls */
	"	xor %edx, %edx\n"   /* no parent tid */
	"	xor %r10d, %r10d\n" /* no child tid */
	"	mov $56, %eax\n"    /* SYS_clone */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jz 1f\n"
	"	ret\n"
	"1:\n"
	"	.cfi_undefined rip\n" /* the child's outermost frame */
	"	xor %ebp, %ebp\n"
	"	pop %rax\n"
	"	pop %rdi\n"
	"	call *%rax\n"
	"	mov $60, %eax\n" /* SYS_exit: this thread only */
	"	xor %edi, %edi\n"
	"	syscall\n"
	"	hlt\n"
	"	.cfi_endproc\n"
	".size rvt__clone, .-rvt__clone\n");

/*
 * Credentials.  Linux keeps them per thread, and glibc changes a process's
 * (setuid() and friends) by signalling every thread it knows: not this one.
 * A bare thread that kept the credentials it was made with would stay root
 * in a program that dropped root after tracing started, and anyone who took
 * over the program could take it over too.  So it gives up every privilege
 * before anything else: all its user ids become the real one (nobody's,
 * 65534, when that is root), all its group ids likewise, its supplementary
 * groups go (when it may), its capabilities are cleared.  It needs none:
 * futex, membarrier, madvise and mprotect on its own process ask for none,
 * and /proc/self/mem, which a thread of another user than the process's
 * owner may not open, has mprotect as its fallback (mute.c).  Should a step
 * fail, the thread exits and rvt_bare_start() says so.
 */
#define NOBODY 65534

/* Gives this thread no privilege (above): 0 or a negative errno. */
static long drop_privileges(void)
{
	uint32_t r, e, s, rg, eg, sg;
	long rc = rvt_sys(SYS_getresuid, (long)&r, (long)&e, (long)&s, 0);
	if (rc == 0)
		rc = rvt_sys(SYS_getresgid, (long)&rg, (long)&eg, (long)&sg, 0);
	if (rc)
		return rc;
	int root = r == 0 || e == 0 || s == 0;
	uint32_t uid = r == 0 ? NOBODY : r, gid = root || rg == 0 ? NOBODY : rg;
	if (root)
		rc = rvt_sys(SYS_setgroups, 0, 0, 0, 0);
	if (rc == 0)
		rc = rvt_sys(SYS_setresgid, gid, gid, gid, 0);
	if (rc == 0)
		rc = rvt_sys(SYS_setresuid, uid, uid, uid, 0);
	if (rc == 0) { /* none left (they may survive a uid change: securebits) */
		struct {
			uint32_t version;
			int pid;
		} hdr = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
		struct {
			uint32_t effective, permitted, inheritable;
		} data[2];
		memset(data, 0, sizeof(data));
		rc = rvt_sys(SYS_capset, (long)&hdr, (long)data, 0, 0);
	}
	return rc;
}

/* The start of a bare thread: what it runs, and how its start went (a
 * futex word: 0 starting, 1 running, 2 failed and gone, with `err`). */
static struct {
	void (*fn)(void *);
	void *arg;
	_Atomic uint32_t state;
	long err;
} start;

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* The bare thread's /proc/self/mem, plus one (0: none, and on every other
 * thread, whose TLS is not the bare thread's).  Initial-exec: the bare
 * thread's TLS is a zeroed block with no dtv, which __tls_get_addr (the
 * local-dynamic model a -fPIC library would use) needs. */
static __thread int mem_fd1 __attribute__((tls_model("initial-exec")));

int rvt_bare_mem_fd(void)
{
	return mem_fd1 - 1;
}

static void bare_entry(void *unused)
{
	(void)unused;
	void (*fn)(void *) = start.fn;
	void *arg = start.arg;
	/* The copy of the program's file table goes first (the top). */
	long rc = rvt_sys(SYS_close_range, 0, ~0u, 0, 0);
	if (rc == 0) {
		long fd = rvt_sys(SYS_openat, AT_FDCWD, (long)"/proc/self/mem", O_RDWR | O_CLOEXEC,
				  0);
		mem_fd1 = fd >= 0 ? (int)fd + 1 : 0; /* refused (not dumpable): mprotect */
		rc = drop_privileges();
	}
	start.err = rc;
	uint32_t st = rc == 0 ? 1 : 2;
	atomic_store(&start.state, st);
	rvt_sys(SYS_futex, (long)&start.state, FUTEX_WAKE_PRIVATE, 1, 0);
	if (st == 1)
		fn(arg);
	/* Returning exits the thread (rvt__clone); its mapping is left, its
	 * file table goes with it. */
}

#define BARE_STACK (256u << 10)
#define BARE_TCB   (16u << 10) /* above the thread pointer: struct pthread's room */

int rvt_bare_start(void (*fn)(void *), void *arg)
{
	/* The size and alignment of glibc's static TLS, surplus and TCB
	 * included (what the sanitizers read too). */
	void (*info)(size_t *, size_t *);
	*(void **)&info = dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
	if (!info)
		return -ENOSYS;
	size_t tls = 0, align = 0;
	info(&tls, &align);
	if (align < 64)
		align = 64;
	if (!tls || (align & (align - 1)) || tls > (64u << 20) || align > (1u << 20))
		return -ENOSYS;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t total = (pg + BARE_STACK + tls + align + BARE_TCB + pg - 1) & ~(pg - 1);
	unsigned char *blk = mmap(NULL, total, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (blk == MAP_FAILED)
		return -errno;
	(void)mprotect(blk, pg, PROT_NONE); /* a guard below the stack */
	unsigned char *stack_top = blk + pg + BARE_STACK;
	uintptr_t tp = ((uintptr_t)stack_top + tls + align - 1) & ~(uintptr_t)(align - 1);
	assert(tp + BARE_TCB <= (uintptr_t)blk + total && tp - (uintptr_t)stack_top >= tls);
	/* x86-64 glibc's TCB head (tcbhead_t, an ABI the compiler relies on
	 * for the stack guard): tcb and self at 0 and 0x10, the stack guard at
	 * 0x28, the pointer guard at 0x30; all else zero (dtv, one thread). */
	uintptr_t *tcb = (uintptr_t *)tp, guard, pguard;
	__asm__("mov %%fs:0x28, %0" : "=r"(guard));
	__asm__("mov %%fs:0x30, %0" : "=r"(pguard));
	tcb[0] = tp;
	tcb[2] = tp;
	tcb[5] = guard;
	tcb[6] = pguard;
	/* Every signal blocked, glibc's own too (pthread_sigmask would leave
	 * those): the child inherits the mask. */
	uint64_t all = ~UINT64_C(0), old = 0;
	start.fn = fn;
	start.arg = arg;
	atomic_store(&start.state, 0);
	long rc = rvt_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8);
	if (rc == 0) {
		rc = rvt__clone(CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
					CLONE_SETTLS,
				stack_top, (void *)tp, bare_entry, NULL);
		rvt_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8);
	}
	if (rc < 0) {
		munmap(blk, total);
		return (int)rc;
	}
	/* Wait until it gave up its privileges (or could not, and left). */
	uint32_t st;
	while ((st = atomic_load(&start.state)) == 0)
		rvt_sys(SYS_futex, (long)&start.state, FUTEX_WAIT_PRIVATE, 0, 0);
	return st == 1 ? 0 : (int)start.err;
}
#else
int rvt_bare_start(void (*fn)(void *), void *arg)
{
	(void)fn;
	(void)arg;
	return -ENOSYS;
}

int rvt_bare_mem_fd(void)
{
	return -1;
}
#endif
