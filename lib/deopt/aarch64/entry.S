/* SPDX-License-Identifier: MIT */
/*
 * __llvm_deoptimize, the call llc-14 emits for llvm.experimental.deoptimize
 * on AArch64 (bl __llvm_deoptimize), and fl_deopt_resume, which leaves it
 * (lib/deopt/aarch64/deopt_arch.h has the layouts).
 *
 * The entry must see the caller's registers exactly as they were at the
 * call: a deopt value may live in any callee-saved register (x19..x29,
 * d8..d15) or be spilled at [sp + off] of the caller, and the intrinsic's
 * own arguments are in x0..x7 and v0..v7.  So it saves x0..x30 (x30 is
 * the return address, the record's address), the caller's sp and all of
 * v0..v31 before anything else runs, and hands them to C (fl_deopt_enter),
 * which never returns here.  The .cfi directives say where the caller's
 * callee-saved registers and its return address are, so that an unwinder
 * (a debugger, a profiler, a stack walk from the handler) steps through
 * this frame to the deoptimized one.
 */
#include "save_regs.inc"

	.text
	.globl	__llvm_deoptimize
	.type	__llvm_deoptimize, %function
	.p2align 4
__llvm_deoptimize:
	.cfi_startproc
	/* SAVED_SIZE keeps sp 16-byte aligned.  The CFA is sp + SAVED_SIZE from here. */
	sub	sp, sp, #SAVED_SIZE
	.cfi_def_cfa_offset SAVED_SIZE
	SAVE_REGS
	SAVE_VPAIR 0, 1
	SAVE_VPAIR 2, 3
	SAVE_VPAIR 4, 5
	SAVE_VPAIR 6, 7
	SAVE_VPAIR 8, 9
	.cfi_rel_offset 72, SAVED_V + 16 * 8
	.cfi_rel_offset 73, SAVED_V + 16 * 9
	SAVE_VPAIR 10, 11
	.cfi_rel_offset 74, SAVED_V + 16 * 10
	.cfi_rel_offset 75, SAVED_V + 16 * 11
	SAVE_VPAIR 12, 13
	.cfi_rel_offset 76, SAVED_V + 16 * 12
	.cfi_rel_offset 77, SAVED_V + 16 * 13
	SAVE_VPAIR 14, 15
	.cfi_rel_offset 78, SAVED_V + 16 * 14
	.cfi_rel_offset 79, SAVED_V + 16 * 15
	SAVE_VPAIR 16, 17
	SAVE_VPAIR 18, 19
	SAVE_VPAIR 20, 21
	SAVE_VPAIR 22, 23
	SAVE_VPAIR 24, 25
	SAVE_VPAIR 26, 27
	SAVE_VPAIR 28, 29
	SAVE_VPAIR 30, 31
	mov	x0, sp
	bl	fl_deopt_enter
	brk	#0x3e8			/* fl_deopt_enter does not return */
	.cfi_endproc
	.size	__llvm_deoptimize, .-__llvm_deoptimize

/*
 * fl_deopt_resume(const struct fl_deopt_resume *r): the deoptimized
 * function's return, done for it.  Everything is loaded from r before sp
 * moves (once sp is above r, a signal may write its frame over r): the
 * return address into x16 (IP0, free at a return), the new sp into x17,
 * x0 last (it holds r).  ret x16, not br: a return is no indirect branch
 * for BTI, and the return address is no landing pad.
 */
	.globl	fl_deopt_resume
	.hidden	fl_deopt_resume
	.type	fl_deopt_resume, %function
	.p2align 4
fl_deopt_resume:
	.cfi_startproc
	ldp	d0, d1, [x0, #184]
	ldp	d2, d3, [x0, #200]
	ldp	d8, d9, [x0, #120]
	ldp	d10, d11, [x0, #136]
	ldp	d12, d13, [x0, #152]
	ldp	d14, d15, [x0, #168]
	ldp	x19, x20, [x0, #0]
	ldp	x21, x22, [x0, #16]
	ldp	x23, x24, [x0, #32]
	ldp	x25, x26, [x0, #48]
	ldp	x27, x28, [x0, #64]
	ldr	x29, [x0, #80]
	ldr	x17, [x0, #88]
	ldr	x16, [x0, #96]
	ldr	x1, [x0, #112]
	ldr	x0, [x0, #104]
	mov	sp, x17
	ret	x16
	.cfi_endproc
	.size	fl_deopt_resume, .-fl_deopt_resume

	.section .note.GNU-stack, "", %progbits
