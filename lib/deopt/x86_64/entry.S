/* SPDX-License-Identifier: MIT */
/*
 * __llvm_deoptimize, the call llc-14 emits for llvm.experimental.deoptimize,
 * and fl_deopt_resume, which leaves it (lib/deopt/entry.h has the layouts).
 *
 * The entry must see the caller's registers exactly as they were at the
 * call: a deopt value may live in any callee-saved register, and the
 * intrinsic's own arguments are in the argument registers.  So it saves
 * every general register and xmm0..xmm7 before anything else runs, with
 * the caller's stack pointer and the return address, and hands them to C
 * (fl_deopt_enter), which never returns here.  The .cfi directives say
 * where the caller's callee-saved registers are, so that an unwinder (a
 * debugger, a profiler, a stack walk from the handler) steps through this
 * frame to the deoptimized one.
 */
#include "save_gprs.inc"

	.text
	.globl	__llvm_deoptimize
	.type	__llvm_deoptimize, @function
	.p2align 4
__llvm_deoptimize:
	.cfi_startproc
	/*
	 * 280 bytes: struct fl_deopt_saved (272) and 8 of padding, so that
	 * the struct is 16-byte aligned (the return address left rsp 8 off)
	 * for movaps and for the call below.  The CFA is rsp + 288 from here.
	 */
	subq	$280, %rsp
	.cfi_adjust_cfa_offset 280
	SAVE_GPRS 288
	movaps	%xmm0, 144(%rsp)
	movaps	%xmm1, 160(%rsp)
	movaps	%xmm2, 176(%rsp)
	movaps	%xmm3, 192(%rsp)
	movaps	%xmm4, 208(%rsp)
	movaps	%xmm5, 224(%rsp)
	movaps	%xmm6, 240(%rsp)
	movaps	%xmm7, 256(%rsp)
	movq	%rsp, %rdi
	call	fl_deopt_enter
	ud2				/* fl_deopt_enter does not return */
	.cfi_endproc
	.size	__llvm_deoptimize, .-__llvm_deoptimize

/*
 * fl_deopt_resume(const struct fl_deopt_resume *r): the deoptimized
 * function's return, done for it.  The return address is taken into rcx
 * (a scratch register at a return) before rsp moves: once rsp is above r,
 * a signal may write its frame over r.
 */
	.globl	fl_deopt_resume
	.hidden	fl_deopt_resume
	.type	fl_deopt_resume, @function
	.p2align 4
fl_deopt_resume:
	.cfi_startproc
	movq	80(%rdi), %xmm0
	movq	88(%rdi), %xmm1
	movq	0(%rdi), %rbx
	movq	8(%rdi), %rbp
	movq	16(%rdi), %r12
	movq	24(%rdi), %r13
	movq	32(%rdi), %r14
	movq	40(%rdi), %r15
	movq	64(%rdi), %rax
	movq	72(%rdi), %rdx
	movq	56(%rdi), %rcx
	movq	48(%rdi), %rsp
	jmp	*%rcx
	.cfi_endproc
	.size	fl_deopt_resume, .-fl_deopt_resume

	.section .note.GNU-stack, "", @progbits
