/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stub_regs-x86_64.S — calls an inline-mode stub (rvt__inl_enter/exit) the
 * way trace-inline.h's inlined trace point does, with a distinct value in
 * every general-purpose register, %xmm0, %xmm15 and the 128-byte red zone,
 * and hands back what they hold afterwards (test_stubs.c checks them).
 *
 * void rvt_test_stub_regs(const void *fn, int entry, uint64_t out[18])
 *   out[0..14] = rax rbx rcx rdx rsi rdi rbp r8 .. r15 after the call,
 *   out[15] = xmm0, out[16] = xmm15, out[17] = number of red-zone words
 *   changed.  Before the call register k holds RVT_SENT(k) (k = 1..14; rax
 *   holds fn, which both stubs take), xmm0 RVT_SENT(200), xmm15
 *   RVT_SENT(215) and red-zone word i (i = 1..16 below %rsp) RVT_SENT(100 - i).
 */
#define SENT(n) (0x5a5a000000000000 + (n))
#define FRAME	(18 * 8 + 4 * 8)	/* results, fn, entry, out, pad */

	.text
	.globl	rvt_test_stub_regs
	.type	rvt_test_stub_regs, @function
	.p2align 4
rvt_test_stub_regs:
	.cfi_startproc
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	subq	$FRAME, %rsp			/* stub entered with %rsp ≡ 0 mod 16: it must realign */
	.cfi_adjust_cfa_offset FRAME
	movq	%rdi, 144(%rsp)
	movl	%esi, 152(%rsp)
	movq	%rdx, 160(%rsp)
	movq	$-16, %rcx
1:	movabsq	$SENT(100), %rax
	addq	%rcx, %rax
	movq	%rax, (%rsp,%rcx,8)
	incq	%rcx
	jnz	1b
	movabsq	$SENT(200), %rax
	movq	%rax, %xmm0
	movabsq	$SENT(215), %rax
	movq	%rax, %xmm15
	movabsq	$SENT(1), %rbx
	movabsq	$SENT(2), %rcx
	movabsq	$SENT(3), %rdx
	movabsq	$SENT(4), %rsi
	movabsq	$SENT(5), %rdi
	movabsq	$SENT(6), %rbp
	movabsq	$SENT(7), %r8
	movabsq	$SENT(8), %r9
	movabsq	$SENT(9), %r10
	movabsq	$SENT(10), %r11
	movabsq	$SENT(11), %r12
	movabsq	$SENT(12), %r13
	movabsq	$SENT(13), %r14
	movabsq	$SENT(14), %r15
	cmpl	$0, 152(%rsp)
	je	2f
	movq	144(%rsp), %rax
	leaq	-128(%rsp), %rsp
	call	rvt__inl_enter@PLT
	leaq	128(%rsp), %rsp
	jmp	3f
2:	movq	144(%rsp), %rax
	leaq	-128(%rsp), %rsp
	call	rvt__inl_exit@PLT
	leaq	128(%rsp), %rsp
3:	movq	%rax, 0(%rsp)
	movq	%rbx, 8(%rsp)
	movq	%rcx, 16(%rsp)
	movq	%rdx, 24(%rsp)
	movq	%rsi, 32(%rsp)
	movq	%rdi, 40(%rsp)
	movq	%rbp, 48(%rsp)
	movq	%r8, 56(%rsp)
	movq	%r9, 64(%rsp)
	movq	%r10, 72(%rsp)
	movq	%r11, 80(%rsp)
	movq	%r12, 88(%rsp)
	movq	%r13, 96(%rsp)
	movq	%r14, 104(%rsp)
	movq	%r15, 112(%rsp)
	movq	%xmm0, 120(%rsp)
	movq	%xmm15, 128(%rsp)
	xorl	%edx, %edx			/* red-zone words changed */
	movq	$-16, %rcx
4:	movabsq	$SENT(100), %rax
	addq	%rcx, %rax
	cmpq	%rax, (%rsp,%rcx,8)
	je	5f
	incq	%rdx
5:	incq	%rcx
	jnz	4b
	movq	%rdx, 136(%rsp)
	movq	160(%rsp), %rdi
	xorl	%ecx, %ecx
6:	movq	(%rsp,%rcx,8), %rax
	movq	%rax, (%rdi,%rcx,8)
	incq	%rcx
	cmpq	$18, %rcx
	jne	6b
	addq	$FRAME, %rsp
	.cfi_adjust_cfa_offset -FRAME
	popq	%r15
	.cfi_adjust_cfa_offset -8
	popq	%r14
	.cfi_adjust_cfa_offset -8
	popq	%r13
	.cfi_adjust_cfa_offset -8
	popq	%r12
	.cfi_adjust_cfa_offset -8
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	rvt_test_stub_regs, .-rvt_test_stub_regs

	.section .note.GNU-stack,"",@progbits
