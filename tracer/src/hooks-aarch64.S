/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hooks-aarch64.S — call-mode trace points for aarch64 (AAPCS64), by hand.
 *
 * The same algorithm as rvt__trace_point() in trace-inline.h, slot for slot
 * (aarch64_smoke checks that call and inline mode write identical buffers
 * and that the hooks' slots decode across wraps); the offsets below are
 * those of struct rvt__thread and must follow it.  The timestamp is
 * cntvct_el0.  The untraced case is: thread pointer, rvt__tls's offset (a
 * GOT load, or movz/movk once the linker relaxes it), one load, a branch and
 * a return, with no stack frame.  Only the
 * caller-saved scratch registers x9–x15 are used (x0 is read; the hooks are
 * called as ordinary functions, so callers already assume x0–x18 clobbered);
 * the rare paths (adopting a new ring, a CLOCK record with its STACK
 * record) go to C (tp-slow.c); reaching a bound (ADVANCE) and an EXIT_OF
 * are done here.
 * busy = 0 at the end is a release store (stlr): the control side's acquire
 * load of busy then sees the slots and cur (trace-inline.h, DESIGN).
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

/* x9 = thread pointer, x10 = rvt__tls's offset from it (initial-exec TLS) */
.macro TLS_OFF
	mrs	x9, tpidr_el0
	adrp	x10, :gottprel:rvt__tls
	ldr	x10, [x10, #:gottprel_lo12:rvt__tls]
.endm

/* x10 = &rvt__tls */
.macro TLS_ADDR
	TLS_OFF
	add	x10, x9, x10
.endm

/*
 * x14 = (uint32_t)(cntvct_el0 >> shift) << 32, after a CLOCK record (in C,
 * x0 and x13 kept across the call) when the high word is not hi.
 */
.macro TIMESTAMP
	mrs	x14, cntvct_el0
	ldr	w12, [x10, #T_SHIFT]
	lsr	x14, x14, x12
	ldr	x12, [x10, #T_HI]
	cmp	x12, x14, lsr #32
	b.eq	7f
	stp	x29, x30, [sp, #-32]!
	.cfi_adjust_cfa_offset 32
	.cfi_rel_offset x29, 0
	.cfi_rel_offset x30, 8
	mov	x29, sp
	stp	x0, x13, [sp, #16]
	mov	x1, x14
	mov	x0, x10
	bl	rvt__clock
	mov	x14, x0
	ldp	x0, x13, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_adjust_cfa_offset -32
	.cfi_restore x29
	.cfi_restore x30
	TLS_ADDR
7:	lsl	x14, x14, #32
.endm

/*
 * x15 += 8; at bound (trace-inline.h, Segments): wrap at limit, ask the next
 * trace point for a CLOCK and STACK (hi = ~0), set the next bound.  Uses
 * x11 and x12.
 */
.macro ADVANCE
	add	x15, x15, #8
	ldr	x12, [x10, #T_BOUND]
	cmp	x15, x12
	b.ne	9f
	ldr	x12, [x10, #T_LIMIT]
	cmp	x15, x12
	b.ne	8f
	ldr	x15, [x10, #T_BASE]
	mov	w11, #1
	str	w11, [x10, #T_WRAPPED]
8:	mov	x11, #-1
	str	x11, [x10, #T_HI]		/* the next trace point writes CLOCK, STACK */
	ldr	x11, [x10, #T_STEP]
	add	x11, x15, x11
	cmp	x11, x12
	csel	x11, x11, x12, ls
	str	x11, [x10, #T_BOUND]
9:
.endm

/*
 * The common head: x11 = start; off → return; a trace point already busy (a
 * signal handler interrupting one) → return; else busy = 1, then start is
 * loaded again (partner: the control side's membarrier, trace-inline.h
 * DESIGN): 0 → busy = 0 and return; not the ring adopted → adopt it (in C,
 * x0 kept across the call).
 */
.macro HEAD name
	TLS_OFF
	ldr	x11, [x9, x10]			/* start (T_START is 0) */
	cbnz	x11, .L\name\()_on
	ret
.L\name\()_on:
	add	x10, x9, x10
	ldr	w12, [x10, #T_BUSY]
	cbnz	w12, .L\name\()_ret
	mov	w12, #1
	str	w12, [x10, #T_BUSY]
	ldr	x11, [x10, #T_START]
	cbz	x11, .L\name\()_unbusy
	ldr	x12, [x10, #T_SEEN]
	cmp	x11, x12
	b.eq	.L\name\()_write
	stp	x29, x30, [sp, #-32]!
	.cfi_adjust_cfa_offset 32
	.cfi_rel_offset x29, 0
	.cfi_rel_offset x30, 8
	mov	x29, sp
	str	x0, [sp, #16]
	mov	x0, x10
	bl	rvt__adopt
	mov	w12, w0
	ldr	x0, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_adjust_cfa_offset -32
	.cfi_restore x29
	.cfi_restore x30
	TLS_ADDR
	cbnz	w12, .L\name\()_write
.L\name\()_unbusy:
	str	wzr, [x10, #T_BUSY]
.L\name\()_ret:
	ret
.L\name\()_write:
.endm

/* The common tail: publish cur, then busy = 0 with release order. */
.macro TAIL
	str	x15, [x10, #T_CUR]
	add	x12, x10, #T_BUSY
	stlr	wzr, [x12]
	ret
.endm

/* Shadow stack (trace-inline.h): push the frame {caller's sp, method value
 * x13}, or pop one. */
.macro SHADOW_PUSH
	ldr	x12, [x10, #T_SHTOP]
	ldr	x11, [x10, #T_SHEND]
	cmp	x12, x11
	b.hs	3f
	mov	x11, sp
	stp	x11, x13, [x12]
3:	add	x12, x12, #16
	str	x12, [x10, #T_SHTOP]
.endm

	.text

/* void __cyg_profile_func_enter(void *fn, void *call_site) */
	.globl	__cyg_profile_func_enter
	.type	__cyg_profile_func_enter, %function
	.p2align 4
__cyg_profile_func_enter:
	.cfi_startproc
	HEAD	enter
	ldr	x12, [x10, #T_MBASE]
	sub	x13, x0, x12			/* x13 = method value */
	TIMESTAMP
	ldr	x15, [x10, #T_CUR]
	lsr	x12, x13, #32
	cbnz	x12, 1f
	orr	x12, x14, x13			/* one slot: ts << 32 | value */
	str	x12, [x15]
	b	2f
1:	str	x13, [x15]			/* value ≥ 2^32: value, then ts << 32 | 1 */
	ADVANCE
	orr	x12, x14, #1
	str	x12, [x15]
2:	ADVANCE
	SHADOW_PUSH
	TAIL
	.cfi_endproc
	.size	__cyg_profile_func_enter, .-__cyg_profile_func_enter

/* void __cyg_profile_func_exit(void *fn, void *call_site) */
	.globl	__cyg_profile_func_exit
	.type	__cyg_profile_func_exit, %function
	.p2align 4
__cyg_profile_func_exit:
	.cfi_startproc
	HEAD	exit
	TIMESTAMP
	ldr	x15, [x10, #T_CUR]
	ldr	x13, [x10, #T_SHTOP]
	ldr	x12, [x10, #T_SHBASE]
	cmp	x13, x12
	b.eq	1f				/* no traced frame open: EXIT_OF */
	sub	x13, x13, #16
	str	x13, [x10, #T_SHTOP]
	b	2f
1:	ldr	x12, [x10, #T_MBASE]
	sub	x12, x0, x12			/* value, then ts << 32 | 6 */
	str	x12, [x15]
	ADVANCE
	orr	x12, x14, #6
	str	x12, [x15]
	ADVANCE
2:	str	x14, [x15]			/* exit slot: ts << 32 | 0 */
	ADVANCE
	TAIL
	.cfi_endproc
	.size	__cyg_profile_func_exit, .-__cyg_profile_func_exit

	.section .note.GNU-stack,"",%progbits
