/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hooks-x86_64.S — x86-64 trace points, by hand: the call-mode hooks
 * (__cyg_profile_func_enter/exit) and inline mode's out-of-line stubs
 * (rvt__inl_enter/exit).
 *
 * Both run one body (the TP macro), the same algorithm as rvt__trace_point()
 * in trace-inline.h, slot for slot (test_ring checks that call and inline
 * mode write identical buffers), plus trace-inline.h's exit check (an exit
 * whose function is not the innermost recorded frame's writes nothing); the
 * offsets below are those of struct rvt__thread and must follow it.  The
 * body uses only %rax %rcx %rdx %r8 and %r11; the rare paths (adopting a
 * new ring, a CLOCK record with its STACK record, an exit that finds
 * another frame or none innermost) call C (tp-slow.c) through RARE, which
 * saves every other caller-saved general-purpose register and realigns the
 * stack; reaching a bound (BOUND) is done here.
 *
 * Call mode: the untraced case is one TLS compare, a branch and a return,
 * with no stack frame.
 *
 * Inline mode: the inlined check in trace-inline.h is the module's gate (a
 * byte compare and a branch), then, while some thread traces, one TLS
 * compare and a branch; only a traced thread calls a stub, with the function
 * in %rax (the exit too), after moving %rsp below the caller's red zone (128
 * bytes).  A stub may
 * clobber %r11 and the flags (the inline asm declares them) and preserves
 * every other register: it saves the four the body uses, and the C slow
 * paths are compiled with -mgeneral-regs-only, so vector and x87 state is
 * never touched.  The stubs' CFI puts the caller's frame 128 bytes above the
 * return address, so unwinding from inside them recovers the caller's %rsp.
 */
#define T_START	  0
#define T_HI	  8
#define T_CUR	  16
#define T_SEEN	  24
#define T_BUSY	  32
#define T_WRAPPED 36
#define T_BASE	  40
#define T_LIMIT	  48
#define T_MBASE	  56
#define T_SHIFT	  64
#define T_SHTOP	  72
#define T_SHBASE  80
#define T_SHEND	  88
#define T_BOUND	  96
#define T_STEP	  104

/*
 * Calls fn(&rvt__tls) — fn(&rvt__tls, %rax) when \arg is 1, fn(&rvt__tls,
 * %r8, %rdx) when it is 2, fn(&rvt__tls, %r8, %rdx, \entry) when it is 3 —
 * (%r11 = rvt__tls's TLS offset) preserving every caller-saved
 * general-purpose register but %rax and %r11 (%rax = result).
 */
.macro RARE fn, arg=0, entry=0
	.cfi_remember_state
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp
	pushq	%rcx
	pushq	%rdx
	pushq	%rsi
	pushq	%rdi
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r10				/* keeps %rsp 16-aligned */
	movq	%fs:0, %rdi
	addq	%r11, %rdi
.if \arg == 1
	movq	%rax, %rsi
.endif
.if \arg >= 2
	movq	%r8, %rsi
.endif
.if \arg == 3
	movl	$\entry, %ecx
.endif
	call	\fn@PLT
	popq	%r10
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rdi
	popq	%rsi
	popq	%rdx
	popq	%rcx
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_restore_state
	movq	rvt__tls@gottpoff(%rip), %r11
.endm

/*
 * rdx reached bound (trace-inline.h, Segments): wrap at limit, ask the next
 * trace point for a CLOCK and STACK (hi = ~0), set the next bound.  Uses
 * %rcx; keeps the rest.
 */
.macro BOUND
	cmpq	%fs:T_LIMIT(%r11), %rdx
	jne	1f
	movq	%fs:T_BASE(%r11), %rdx
	movl	$1, %fs:T_WRAPPED(%r11)
1:	movq	$-1, %fs:T_HI(%r11)
	movq	%fs:T_STEP(%r11), %rcx
	addq	%rdx, %rcx
	cmpq	%fs:T_LIMIT(%r11), %rcx
	jbe	2f
	movq	%fs:T_LIMIT(%r11), %rcx
2:	movq	%rcx, %fs:T_BOUND(%r11)
.endm

/*
 * One trace point, entry (\entry = 1) or exit, of the function in %r8.
 * Falls through to \name\()_done with the flags and %rax %rcx %rdx %r8
 * %r11 clobbered.  TP_COLD \name must follow in the same function.
 * \spoff(%rsp) is the instrumented function's stack pointer, which an entry
 * pushes on the shadow stack with its method value (trace-inline.h,
 * "Shadow stack"), and an exit checks against the innermost frame ("Exit
 * check"): an exit writes its slot only when that frame is its function's,
 * and pops it at the commit (after any CLOCK, whose STACK record still
 * lists it).
 */
.macro TP name, entry, spoff
	movq	rvt__tls@gottpoff(%rip), %r11
	cmpl	$0, %fs:T_BUSY(%r11)
	jne	\name\()_done			/* nested in a signal handler: drop */
	movl	$1, %fs:T_BUSY(%r11)
	/* Partner: the control side's membarrier (trace-inline.h, DESIGN). */
	movq	%fs:T_START(%r11), %rcx
	testq	%rcx, %rcx
	je	\name\()_unbusy			/* stopped since the caller looked */
	cmpq	%fs:T_SEEN(%r11), %rcx
	jne	\name\()_adopt
\name\()_go:
	subq	%fs:T_MBASE(%r11), %r8		/* r8 = method value */
.if !\entry
\name\()_check:
	movq	%fs:T_SHTOP(%r11), %rcx
	cmpq	%fs:T_SHBASE(%r11), %rcx
	je	\name\()_outer			/* no recorded frame open */
	cmpq	%fs:T_SHEND(%r11), %rcx
	ja	\name\()_pop			/* past the kept frames: unchecked */
	cmpq	-8(%rcx), %r8			/* the innermost frame's method value */
	jne	\name\()_other
\name\()_pop:
	leaq	-16(%rcx), %r8			/* r8 = the shadow top after the pop */
.endif
	rdtsc
	shlq	$32, %rdx
	orq	%rdx, %rax
	movl	%fs:T_SHIFT(%r11), %ecx
	shrq	%cl, %rax			/* rax = now = counter >> shift */
	movq	%rax, %rcx
	shrq	$32, %rcx
	cmpq	%fs:T_HI(%r11), %rcx
	jne	\name\()_clock
\name\()_clocked:
	shlq	$32, %rax			/* rax = ts << 32 */
	movq	%fs:T_CUR(%r11), %rdx		/* rdx = cur */
.if \entry
	movq	%r8, %rcx
	shrq	$32, %rcx
	jne	\name\()_two
	orq	%r8, %rax
.endif
	movq	%rax, (%rdx)			/* entry: ts << 32 | value; exit: ts << 32 */
\name\()_next:
	addq	$8, %rdx
	cmpq	%fs:T_BOUND(%r11), %rdx
	je	\name\()_bound
\name\()_commit:
.if \entry
	movq	%fs:T_SHTOP(%r11), %rcx
	cmpq	%fs:T_SHEND(%r11), %rcx
	jae	2f
	leaq	\spoff(%rsp), %rax
	movq	%rax, (%rcx)			/* the frame: stack pointer, */
	movq	%r8, 8(%rcx)			/* method value */
2:	addq	$16, %rcx
	movq	%rcx, %fs:T_SHTOP(%r11)
.else
	movq	%r8, %fs:T_SHTOP(%r11)		/* the pop */
.endif
	movq	%rdx, %fs:T_CUR(%r11)
\name\()_unbusy:
	movl	$0, %fs:T_BUSY(%r11)		/* a release store on x86-64 */
\name\()_done:
.endm

/*
 * The rare paths of TP \name, placed after the caller's return so the common
 * path falls straight through; each jumps back into TP.  \spoff as for TP;
 * \retoff(%rsp) is the hook's return address (the site's next instruction),
 * which the adoption path hands on with the function (%r8): while the
 * budget learns call sites it marks `start` (mute.c, tp-slow.c).
 */
.macro TP_COLD name, entry, spoff, retoff
\name\()_bound:
	BOUND
	jmp	\name\()_commit
\name\()_adopt:
	movq	\retoff(%rsp), %rdx
	RARE	rvt__adopt_at, 3, \entry
	testl	%eax, %eax
	jne	\name\()_go
	jmp	\name\()_unbusy
\name\()_clock:
	RARE	rvt__clock, 1			/* returns now in %rax */
	jmp	\name\()_clocked
.if !\entry
\name\()_other:				/* the innermost frame is another function's */
	leaq	\spoff(%rsp), %rdx		/* the exiting function's stack pointer */
	cmpq	-16(%rcx), %rdx
	jbe	\name\()_unbusy		/* not above it: this entry was not recorded */
	RARE	rvt__exit_repair, 2		/* frames above it lost their exits */
	testl	%eax, %eax
	jne	\name\()_check		/* closed them: this one is innermost */
	jmp	\name\()_unbusy
\name\()_outer:				/* EXIT_OF, or nothing (trace-inline.h) */
	leaq	\spoff(%rsp), %rdx
	RARE	rvt__exit_outer, 2
	jmp	\name\()_unbusy
.endif
.if \entry
\name\()_two:					/* value ≥ 2^32: value, then ts << 32 | 1 */
	movq	%r8, (%rdx)
	addq	$8, %rdx
	cmpq	%fs:T_BOUND(%r11), %rdx
	jne	3f
	BOUND
3:	orq	$1, %rax
	movq	%rax, (%rdx)
	jmp	\name\()_next
.endif
.endm

/* A call-mode hook: \entry = 1 for __cyg_profile_func_enter (fn in %rdi). */
.macro HOOK sym, entry
	.globl	\sym
	.type	\sym, @function
	.p2align 4
\sym:
	.cfi_startproc
	movq	rvt__tls@gottpoff(%rip), %r11
	cmpq	$0, %fs:T_START(%r11)
	jne	.L\sym\()_on
	ret
.L\sym\()_on:
	movq	%rdi, %r8
	TP	.L\sym, \entry, 8
	ret
	TP_COLD	.L\sym, \entry, 8, 0
	.cfi_endproc
	.size	\sym, .-\sym
.endm

/*
 * An inline-mode stub (see the top).  Stack on entry (the caller did `lea
 * -128(%rsp), %rsp; call`): the return address at 0(%rsp), the caller's
 * %rsp at 136(%rsp).
 */
.macro STUB sym, entry
	.globl	\sym
	.type	\sym, @function
	.p2align 4
\sym:
	.cfi_startproc
	.cfi_def_cfa %rsp, 136
	.cfi_offset %rip, -136
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	pushq	%rcx
	.cfi_adjust_cfa_offset 8
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	pushq	%r8
	.cfi_adjust_cfa_offset 8
	movq	%rax, %r8
	TP	.L\sym, \entry, 168
	.cfi_remember_state
	popq	%r8
	.cfi_adjust_cfa_offset -8
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	popq	%rax
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_restore_state
	TP_COLD	.L\sym, \entry, 168, 32
	.cfi_endproc
	.size	\sym, .-\sym
.endm

	.text
/* void __cyg_profile_func_enter(void *fn, void *call_site) */
	HOOK	__cyg_profile_func_enter, 1
/* void __cyg_profile_func_exit(void *fn, void *call_site) */
	HOOK	__cyg_profile_func_exit, 0
/* rvt__inl_enter: fn in %rax; preserves all but %r11 and the flags */
	STUB	rvt__inl_enter, 1
/* rvt__inl_exit: fn in %rax; preserves all but %r11 and the flags */
	STUB	rvt__inl_exit, 0

	.section .note.GNU-stack,"",@progbits
