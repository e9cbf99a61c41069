/*
 * hooks-x86_64.S — call-mode trace points for x86-64, by hand.
 *
 * The same algorithm as rvt__trace_point() in trace-inline.h, slot for slot
 * (test_ring checks that call and inline mode write identical buffers); the
 * offsets below are those of struct rvt__thread and must follow it.  The
 * untraced case is one TLS load, a test and a return, with no stack frame.
 * Only caller-saved registers are used; the rare paths (adopting a new ring,
 * a stop request) go to C.
 *
 * rvt__inl_enter/rvt__inl_exit are inline mode's out-of-line part: the
 * inlined check in trace-inline.h is one TLS compare and a branch, and only
 * when the thread is traced does it call here, with the function in %rax,
 * after moving %rsp below the caller's red zone (128 bytes).  They preserve
 * every register except the flags, so the inlined check costs the caller no
 * register: they save the general-purpose caller-saved registers and run the
 * call-mode hook; its C slow paths (tp-slow.c) are compiled with
 * -mgeneral-regs-only, so vector and x87 state is never touched.  Their CFI
 * puts the caller's frame 128 bytes above the return address, so unwinding
 * from inside them recovers the caller's %rsp.
 */
#define T_START	  0
#define T_STOP	  8
#define T_CUR	  16
#define T_SEEN	  24
#define T_BUSY	  32
#define T_WRAPPED 36
#define T_BASE	  40
#define T_LIMIT	  48
#define T_MBASE	  56
#define T_SHIFT	  64

	.text

/* void __cyg_profile_func_enter(void *fn, void *call_site) */
	.globl	__cyg_profile_func_enter
	.type	__cyg_profile_func_enter, @function
	.p2align 4
__cyg_profile_func_enter:
.Lcyg_enter:
	.cfi_startproc
	movq	rvt__tls@gottpoff(%rip), %rax
	movq	%fs:T_START(%rax), %rcx
	testq	%rcx, %rcx
	jne	.Lenter_on
	ret
.Lenter_on:
	cmpq	%fs:T_SEEN(%rax), %rcx
	jne	.Lenter_adopt
.Lenter_go:
	cmpl	$0, %fs:T_BUSY(%rax)
	jne	.Lenter_ret			/* nested in a signal handler: drop */
	movl	$1, %fs:T_BUSY(%rax)
	cmpq	%fs:T_START(%rax), %rcx		/* stopped before busy was set */
	jne	.Lenter_unbusy
	movq	%rdi, %r8
	subq	%fs:T_MBASE(%rax), %r8		/* r8 = method value */
	movq	%rax, %r9			/* r9 = TLS offset of rvt__tls */
	rdtsc
	shlq	$32, %rdx
	orq	%rdx, %rax
	movl	%fs:T_SHIFT(%r9), %ecx
	shrq	%cl, %rax
	shlq	$32, %rax			/* rax = ts << 32 */
	movq	%fs:T_CUR(%r9), %rdx		/* rdx = cur */
	movq	%r8, %rcx
	shrq	$32, %rcx
	jne	.Lenter_two
	orq	%r8, %rax
	movq	%rax, (%rdx)
.Lenter_next:
	addq	$8, %rdx
	cmpq	%fs:T_LIMIT(%r9), %rdx
	je	.Lenter_wrap
.Lenter_commit:
	movq	%rdx, %fs:T_CUR(%r9)
	movl	$0, %fs:T_BUSY(%r9)
	cmpq	$0, %fs:T_STOP(%r9)
	jne	.Lenter_stop
.Lenter_ret:
	ret
.Lenter_wrap:
	movq	%fs:T_BASE(%r9), %rdx
	movl	$1, %fs:T_WRAPPED(%r9)
	jmp	.Lenter_commit
.Lenter_two:					/* value ≥ 2^32: two slots */
	movq	%r8, (%rdx)
	addq	$8, %rdx
	cmpq	%fs:T_LIMIT(%r9), %rdx
	jne	1f
	movq	%fs:T_BASE(%r9), %rdx
	movl	$1, %fs:T_WRAPPED(%r9)
1:	orq	$1, %rax
	movq	%rax, (%rdx)
	jmp	.Lenter_next
.Lenter_stop:
	movq	%fs:0, %rdi
	addq	%r9, %rdi
	jmp	rvt__stop_slow@PLT
.Lenter_unbusy:
	movl	$0, %fs:T_BUSY(%rax)
	ret
.Lenter_adopt:
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	movq	%fs:0, %rdi
	addq	%rax, %rdi
	call	rvt__adopt@PLT
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	testl	%eax, %eax
	je	.Lenter_ret
	movq	rvt__tls@gottpoff(%rip), %rax
	movq	%fs:T_SEEN(%rax), %rcx
	jmp	.Lenter_go
	.cfi_endproc
	.size	__cyg_profile_func_enter, .-__cyg_profile_func_enter

/* void __cyg_profile_func_exit(void *fn, void *call_site) */
	.globl	__cyg_profile_func_exit
	.type	__cyg_profile_func_exit, @function
	.p2align 4
__cyg_profile_func_exit:
.Lcyg_exit:
	.cfi_startproc
	movq	rvt__tls@gottpoff(%rip), %rax
	movq	%fs:T_START(%rax), %rcx
	testq	%rcx, %rcx
	jne	.Lexit_on
	ret
.Lexit_on:
	cmpq	%fs:T_SEEN(%rax), %rcx
	jne	.Lexit_adopt
.Lexit_go:
	cmpl	$0, %fs:T_BUSY(%rax)
	jne	.Lexit_ret
	movl	$1, %fs:T_BUSY(%rax)
	cmpq	%fs:T_START(%rax), %rcx
	jne	.Lexit_unbusy
	movq	%rax, %r9
	rdtsc
	shlq	$32, %rdx
	orq	%rdx, %rax
	movl	%fs:T_SHIFT(%r9), %ecx
	shrq	%cl, %rax
	shlq	$32, %rax			/* exit slot: ts << 32 | 0 */
	movq	%fs:T_CUR(%r9), %rdx
	movq	%rax, (%rdx)
	addq	$8, %rdx
	cmpq	%fs:T_LIMIT(%r9), %rdx
	je	.Lexit_wrap
.Lexit_commit:
	movq	%rdx, %fs:T_CUR(%r9)
	movl	$0, %fs:T_BUSY(%r9)
	cmpq	$0, %fs:T_STOP(%r9)
	jne	.Lexit_stop
.Lexit_ret:
	ret
.Lexit_wrap:
	movq	%fs:T_BASE(%r9), %rdx
	movl	$1, %fs:T_WRAPPED(%r9)
	jmp	.Lexit_commit
.Lexit_stop:
	movq	%fs:0, %rdi
	addq	%r9, %rdi
	jmp	rvt__stop_slow@PLT
.Lexit_unbusy:
	movl	$0, %fs:T_BUSY(%rax)
	ret
.Lexit_adopt:
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	movq	%fs:0, %rdi
	addq	%rax, %rdi
	call	rvt__adopt@PLT
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	testl	%eax, %eax
	je	.Lexit_ret
	movq	rvt__tls@gottpoff(%rip), %rax
	movq	%fs:T_SEEN(%rax), %rcx
	jmp	.Lexit_go
	.cfi_endproc
	.size	__cyg_profile_func_exit, .-__cyg_profile_func_exit

/*
 * Inline-mode stubs: see the top of the file.  Stack on entry (caller did
 * `lea -128(%rsp), %rsp; call`): return address at 0(%rsp), the caller's
 * %rsp at 136(%rsp).  %rsp is realigned to 16 for the C slow paths.
 */
.macro RVT_INL_STUB name, hook
	.globl	\name
	.type	\name, @function
	.p2align 4
\name:
	.cfi_startproc
	.cfi_def_cfa %rsp, 136
	.cfi_offset %rip, -136
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -144
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp
	pushq	%rax
	pushq	%rcx
	pushq	%rdx
	pushq	%rsi
	pushq	%rdi
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11
	subq	$8, %rsp
	movq	%rax, %rdi
	call	\hook
	addq	$8, %rsp
	popq	%r11
	popq	%r10
	popq	%r9
	popq	%r8
	popq	%rdi
	popq	%rsi
	popq	%rdx
	popq	%rcx
	popq	%rax
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 136
	.cfi_restore %rbp
	ret
	.cfi_endproc
	.size	\name, .-\name
.endm

/* void rvt__inl_enter(void): fn in %rax, every register preserved */
	RVT_INL_STUB rvt__inl_enter, .Lcyg_enter
/* void rvt__inl_exit(void): every register preserved */
	RVT_INL_STUB rvt__inl_exit, .Lcyg_exit

	.section .note.GNU-stack,"",@progbits
