/* SPDX-License-Identifier: MIT */
/*
 * fl_stack_walk(start, fn, ctx): the entry, in assembly because the walk
 * may change its caller's registers (lib/deopt/entry.h has the layout).
 *
 * A frame keeps values in callee-saved registers across its calls.  When
 * no frame between it and fl_stack_walk saved one, the value is still in
 * the register when fl_stack_walk is called, and a collector that moves
 * the object it points at must change the register itself.  So the entry
 * saves the caller's registers as __llvm_deoptimize does (SAVE_GPRS), its
 * stack pointer and the return address with them, hands them to the walk
 * (fl_walk_enter) as the context it starts from, and loads the
 * callee-saved ones back from there when the walk returns, changed or
 * not.  The .cfi directives say where the caller's registers are, so that
 * an unwinder (a debugger, a walk from the callback) steps through this
 * frame.
 */
#include "save_gprs.inc"

	.text
	.globl	fl_stack_walk
	.type	fl_stack_walk, @function
	.p2align 4
fl_stack_walk:
	.cfi_startproc
	/*
	 * 280 bytes: struct fl_deopt_saved (272; its XMM part unused here)
	 * and 8 of padding, which keep the stack 16-byte aligned for the call
	 * below (the return address left it 8 off).  The CFA is rsp + 288
	 * from here.
	 */
	subq	$280, %rsp
	.cfi_adjust_cfa_offset 280
	SAVE_GPRS 288
	movq	%rdx, %rcx		/* ctx */
	movq	%rsi, %rdx		/* fn */
	movq	%rdi, %rsi		/* start */
	movq	%rsp, %rdi		/* the saved registers */
	call	fl_walk_enter
	/* eax: the walk's result.  The callee-saved registers as it left them. */
	movq	24(%rsp), %rbx
	.cfi_restore %rbx
	movq	48(%rsp), %rbp
	.cfi_restore %rbp
	movq	96(%rsp), %r12
	.cfi_restore %r12
	movq	104(%rsp), %r13
	.cfi_restore %r13
	movq	112(%rsp), %r14
	.cfi_restore %r14
	movq	120(%rsp), %r15
	.cfi_restore %r15
	addq	$280, %rsp
	.cfi_adjust_cfa_offset -280
	ret
	.cfi_endproc
	.size	fl_stack_walk, .-fl_stack_walk

	.section .note.GNU-stack, "", @progbits
