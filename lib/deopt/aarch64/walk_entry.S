/* SPDX-License-Identifier: MIT */
/*
 * fl_stack_walk(start, fn, ctx) on AArch64: the entry, in assembly because
 * the walk may change its caller's registers (lib/deopt/aarch64/
 * deopt_arch.h has the layout).
 *
 * A frame keeps values in callee-saved registers (x19..x28, x29, d8..d15)
 * across its calls.  When no frame between it and fl_stack_walk saved one,
 * the value is still in the register when fl_stack_walk is called, and a
 * collector that moves the object it points at must change the register
 * itself.  So the entry saves the caller's registers as __llvm_deoptimize
 * does (SAVE_REGS, and v8..v15), its stack pointer and the return address
 * (x30) with them, hands them to the walk (fl_walk_enter) as the context it
 * starts from, and loads the callee-saved ones back from there when the
 * walk returns, changed or not.  The .cfi directives say where the
 * caller's registers are, so that an unwinder (a debugger, a walk from the
 * callback) steps through this frame.
 */
#include "save_regs.inc"

	.text
	.globl	fl_stack_walk
	.type	fl_stack_walk, %function
	.p2align 4
fl_stack_walk:
	.cfi_startproc
	/* struct fl_deopt_saved (v0..v7, v16..v31 unused).  The CFA is sp + SAVED_SIZE. */
	sub	sp, sp, #SAVED_SIZE
	.cfi_def_cfa_offset SAVED_SIZE
	SAVE_REGS
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
	mov	x3, x2			/* ctx */
	mov	x2, x1			/* fn */
	mov	x1, x0			/* start */
	mov	x0, sp			/* the saved registers */
	bl	fl_walk_enter
	/* w0: the walk's result.  The callee-saved registers as it left them. */
	ldp	x19, x20, [sp, #152]
	ldp	x21, x22, [sp, #168]
	ldp	x23, x24, [sp, #184]
	ldp	x25, x26, [sp, #200]
	ldp	x27, x28, [sp, #216]
	ldr	x29, [sp, #232]
	.cfi_restore x19
	.cfi_restore x20
	.cfi_restore x21
	.cfi_restore x22
	.cfi_restore x23
	.cfi_restore x24
	.cfi_restore x25
	.cfi_restore x26
	.cfi_restore x27
	.cfi_restore x28
	.cfi_restore x29
	ldr	d8, [sp, #(SAVED_V + 16 * 8)]
	ldr	d9, [sp, #(SAVED_V + 16 * 9)]
	ldr	d10, [sp, #(SAVED_V + 16 * 10)]
	ldr	d11, [sp, #(SAVED_V + 16 * 11)]
	ldr	d12, [sp, #(SAVED_V + 16 * 12)]
	ldr	d13, [sp, #(SAVED_V + 16 * 13)]
	ldr	d14, [sp, #(SAVED_V + 16 * 14)]
	ldr	d15, [sp, #(SAVED_V + 16 * 15)]
	.cfi_restore 72
	.cfi_restore 73
	.cfi_restore 74
	.cfi_restore 75
	.cfi_restore 76
	.cfi_restore 77
	.cfi_restore 78
	.cfi_restore 79
	ldr	x30, [sp, #240]
	.cfi_restore x30
	add	sp, sp, #SAVED_SIZE
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	fl_stack_walk, .-fl_stack_walk

	.section .note.GNU-stack, "", %progbits
