/* SPDX-License-Identifier: MIT */
/*
 * fl_stack_walk(start, fn, ctx): the entry, in assembly because the walk
 * may change its caller's registers (lib/deopt/walk.h has the layout).
 *
 * A frame keeps values in callee-saved registers across its calls.  When
 * no frame between it and fl_stack_walk saved one, the value is still in
 * the register when fl_stack_walk is called, and a collector that moves
 * the object it points at must change the register itself.  So the entry
 * saves the caller's callee-saved registers, its stack pointer and the
 * return address, hands them to the walk (fl_walk_enter) as the context
 * it starts from, and loads the callee-saved registers back from there
 * when the walk returns, changed or not.  The .cfi directives say where
 * the caller's registers are, so that an unwinder (a debugger, a walk from
 * the callback) steps through this frame.
 */
	.text
	.globl	fl_stack_walk
	.type	fl_stack_walk, @function
	.p2align 4
fl_stack_walk:
	.cfi_startproc
	/*
	 * 72 bytes: struct fl_walk_saved (64) and 8 of padding, which keep
	 * the stack 16-byte aligned for the call below (the return address
	 * left it 8 off).  The CFA is rsp + 80 from here.
	 */
	subq	$72, %rsp
	.cfi_adjust_cfa_offset 72
	movq	%rbx, 0(%rsp)
	.cfi_rel_offset %rbx, 0
	movq	%rbp, 8(%rsp)
	.cfi_rel_offset %rbp, 8
	movq	%r12, 16(%rsp)
	.cfi_rel_offset %r12, 16
	movq	%r13, 24(%rsp)
	.cfi_rel_offset %r13, 24
	movq	%r14, 32(%rsp)
	.cfi_rel_offset %r14, 32
	movq	%r15, 40(%rsp)
	.cfi_rel_offset %r15, 40
	leaq	80(%rsp), %rax		/* the caller's rsp at the call */
	movq	%rax, 48(%rsp)
	movq	72(%rsp), %rax		/* the return address */
	movq	%rax, 56(%rsp)
	movq	%rdx, %rcx		/* ctx */
	movq	%rsi, %rdx		/* fn */
	movq	%rdi, %rsi		/* start */
	movq	%rsp, %rdi		/* the saved registers */
	call	fl_walk_enter
	/* eax: the walk's result.  The registers as the walk left them. */
	movq	0(%rsp), %rbx
	.cfi_restore %rbx
	movq	8(%rsp), %rbp
	.cfi_restore %rbp
	movq	16(%rsp), %r12
	.cfi_restore %r12
	movq	24(%rsp), %r13
	.cfi_restore %r13
	movq	32(%rsp), %r14
	.cfi_restore %r14
	movq	40(%rsp), %r15
	.cfi_restore %r15
	addq	$72, %rsp
	.cfi_adjust_cfa_offset -72
	ret
	.cfi_endproc
	.size	fl_stack_walk, .-fl_stack_walk

	.section .note.GNU-stack, "", @progbits
