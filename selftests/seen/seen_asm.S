/* SPDX-License-Identifier: MIT */
/*
 * The original code and the hand-made new code of the seen tests
 * (seen_test.h says how they fit).
 *
 * orig_fn(struct seen_flags *f, void (*callee)(struct seen_flags *), void *newcode):
 * a function with CFI (two pushes and a frame of 8 bytes, the CFA
 * %rsp-based) that jumps to newcode at orig_body, with %rbp and %rbx
 * overwritten (no frame chain an unwinder could fall back on); the new
 * code comes back to orig_resume.
 */
	.text
	.globl orig_fn, orig_body, orig_resume
	.type orig_fn, @function
orig_fn:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	push %rbx
	.cfi_def_cfa_offset 24
	.cfi_offset %rbx, -24
	sub $8, %rsp
	.cfi_def_cfa_offset 32
	xor %ebp, %ebp
	mov $0x5eed, %ebx
orig_body:
	jmp *%rdx
orig_resume:
	add $8, %rsp
	.cfi_def_cfa_offset 24
	pop %rbx
	.cfi_def_cfa_offset 16
	pop %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size orig_fn, .-orig_fn

/* other_fn: another FDE (a row's orig there is refused). */
	.globl other_fn
	.type other_fn, @function
other_fn:
	.cfi_startproc
	ret
	.cfi_endproc
	.size other_fn, .-other_fn

/* expr_fn: its CFA is an expression (DW_OP_breg7 8: %rsp + 8). */
	.globl expr_fn
	.type expr_fn, @function
expr_fn:
	.cfi_startproc
	.cfi_escape 0x0f, 0x02, 0x77, 0x08
	nop
	ret
	.cfi_endproc
	.size expr_fn, .-expr_fn

/* nocfi_fn: no FDE at all. */
	.globl nocfi_fn
	.type nocfi_fn, @function
nocfi_fn:
	nop
	ret
	.size nocfi_fn, .-nocfi_fn

/*
 * The new code, copied to an mmap'd page (no CFI here: what describes the
 * copy is fl_seen_add's).  It stands for orig_body on: a null path's
 * pushes (lea -128(%rsp), pushfq, push %rax), where it says it is in
 * (f->stage = 1) and waits for f->go, then the pops, then a call out with
 * 16 more bytes on the stack, as a relocated copy's added instructions
 * might have; then back to orig_resume (the literal at nc_lit).
 */
	.globl nc_begin, nc_p128, nc_p136, nc_p144, nc_q136, nc_q128, nc_sub, nc_call
	.globl nc_jmp, nc_lit, nc_end
nc_begin:
	lea -128(%rsp), %rsp
nc_p128:
	pushfq
nc_p136:
	push %rax
nc_p144:
	movl $1, (%rdi)
1:	pause
	cmpl $0, 4(%rdi)
	je 1b
	pop %rax
nc_q136:
	popfq
nc_q128:
	lea 128(%rsp), %rsp
nc_sub:
	sub $16, %rsp
nc_call:
	call *%rsi
	add $16, %rsp
nc_jmp:
	jmp *nc_lit(%rip)
nc_lit:
	.quad 0
nc_end:

/* Hot new code: a million decrements, then back to orig_resume. */
	.globl hot_begin, hot_lit, hot_end
hot_begin:
	mov $1000000, %ecx
1:	dec %ecx
	jnz 1b
	jmp *hot_lit(%rip)
hot_lit:
	.quad 0
hot_end:

	.section .note.GNU-stack, "", @progbits
