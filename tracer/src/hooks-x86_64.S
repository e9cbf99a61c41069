/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hooks-x86_64.S — x86-64 trace points, by hand: the call-mode hooks
 * (__cyg_profile_func_enter/exit) and inline mode's out-of-line stubs
 * (rvt__inl_enter/exit).
 *
 * Both run one body (the TP macro), the same algorithm as rvt__trace_point()
 * in trace-inline.h, slot for slot (test_ring checks that call and inline
 * mode write identical buffers; an EXIT_OF's value differs: the function
 * in call mode, the stub's return address inside it in inline mode); the
 * offsets below are those of struct rvt__thread and must follow it.  The
 * body uses only %rax %rcx %rdx %r8 and %r11; the rare paths (adopting a
 * new ring, a CLOCK record with its STACK record) call C (tp-slow.c)
 * through RARE, which saves every other caller-saved general-purpose
 * register and realigns the stack; reaching a bound (BOUND) and an EXIT_OF
 * are done here.
 *
 * Call mode: the untraced case is one TLS compare, a branch and a return,
 * with no stack frame.
 *
 * Inline mode: the inlined check in trace-inline.h is one TLS compare and a
 * branch; only a traced thread calls a stub, with the function in %rax,
 * after moving %rsp below the caller's red zone (128 bytes).  A stub may
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
 * Calls fn(&rvt__tls) — fn(&rvt__tls, %rax) when \arg — (%r11 = rvt__tls's
 * TLS offset) preserving every caller-saved general-purpose register but
 * %rax and %r11 (%rax = result).
 */
.macro RARE fn, arg=0
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
.if \arg
	movq	%rax, %rsi
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
 * One trace point, entry (\entry = 1, function in %r8) or exit.  Falls
 * through to \name\()_done with the flags and %rax %rcx %rdx %r8 %r11
 * clobbered.  TP_COLD \name must follow in the same function.  \spoff(%rsp)
 * is the instrumented function's stack pointer, which an entry pushes on
 * the shadow stack with its method value (trace-inline.h, "Shadow stack");
 * an exit that finds the shadow empty names its frame by \site (TP_COLD).
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
.if \entry
	subq	%fs:T_MBASE(%r11), %r8		/* r8 = method value */
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
.else
	movq	%fs:T_SHTOP(%r11), %r8		/* r8 = shadow top */
	cmpq	%fs:T_SHBASE(%r11), %r8
	je	\name\()_outer			/* no traced frame open */
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
	subq	$16, %r8
	movq	%r8, %fs:T_SHTOP(%r11)
.endif
	movq	%rdx, %fs:T_CUR(%r11)
\name\()_unbusy:
	movl	$0, %fs:T_BUSY(%r11)		/* a release store on x86-64 */
\name\()_done:
.endm

/*
 * The rare paths of TP \name, placed after the caller's return so the common
 * path falls straight through; each jumps back into TP.  \site: an exit's
 * address inside the exited function (call mode: the function; inline
 * mode: the stub's return address), for its EXIT_OF pair.
 */
.macro TP_COLD name, entry, site
\name\()_bound:
	BOUND
	jmp	\name\()_commit
\name\()_adopt:
	RARE	rvt__adopt
	testl	%eax, %eax
	jne	\name\()_go
	jmp	\name\()_unbusy
\name\()_clock:
	RARE	rvt__clock, 1			/* returns now in %rax */
	jmp	\name\()_clocked
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
.else
\name\()_outer:				/* EXIT_OF: value, ts << 32 | 6, then the exit */
	movq	\site, %rcx
	subq	%fs:T_MBASE(%r11), %rcx
	movq	%rcx, (%rdx)
	addq	$8, %rdx
	cmpq	%fs:T_BOUND(%r11), %rdx
	jne	3f
	BOUND
3:	movq	%rax, %rcx
	orq	$6, %rcx
	movq	%rcx, (%rdx)
	addq	$8, %rdx
	cmpq	%fs:T_BOUND(%r11), %rdx
	jne	4f
	BOUND
4:	addq	$16, %r8			/* the commit's pop leaves the shadow empty */
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
.if \entry
	movq	%rdi, %r8
.endif
	TP	.L\sym, \entry, 8
	ret
	TP_COLD	.L\sym, \entry, %rdi
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
.if \entry
	movq	%rax, %r8
.endif
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
	TP_COLD	.L\sym, \entry, 32(%rsp)
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
/* rvt__inl_exit: preserves all but %r11 and the flags */
	STUB	rvt__inl_exit, 0

	.section .note.GNU-stack,"",@progbits
